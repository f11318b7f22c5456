/* Differential exerciser for the descriptor table and eventfd: the same
 * random sequence of calls on the host and in a partition must print the
 * same lines.
 *
 *   fddiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * Descriptors come from eventfd2 (with EFD_SEMAPHORE, EFD_NONBLOCK,
 * EFD_CLOEXEC and flags that do not exist), pipe2 and memfd_create; the
 * calls are dup, dup2, dup3 (flags, the same descriptor twice), fcntl's
 * F_DUPFD and F_DUPFD_CLOEXEC (at limits and past them), F_GETFD/F_SETFD,
 * F_GETFL/F_SETFL, close, close_range (flags, empty and reversed ranges),
 * setrlimit(RLIMIT_NOFILE) down and up again, and eventfd reads and writes
 * (counts near the maximum, short buffers, semaphore mode) with poll.
 * Descriptor numbers are printed as they are: a program sees the lowest
 * free one, on the host and in a partition alike. Each line is
 * "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define SLOTS 1
#include "differ.h"

/* Descriptors this program opened (the rest of the table is 0, 1, 2). */
#define MAXFD 64
static int open_fd[MAXFD];
static struct rlimit first_limit;

static void note(long fd) {
    if (fd >= 0 && fd < MAXFD)
        open_fd[fd] = 1;
}

static int any_fd(void) {
    int k = (int)pick(MAXFD);
    for (int i = 0; i < MAXFD; i++, k = (k + 1) % MAXFD)
        if (open_fd[k])
            return k;
    return 77; /* one that is not open */
}

static int target_fd(void) {
    static const int t[] = {3, 4, 5, 9, 17, 31, 40, 63, 64, 100, -1, 1024, 1 << 20};
    return t[pick(sizeof t / sizeof *t)];
}

static void table(unsigned idx) {
    printf("%u   open", idx);
    for (int i = 3; i < MAXFD; i++)
        if (open_fd[i]) {
            long fl = fcntl(i, F_GETFD);
            printf(" %d%s", i, fl > 0 ? "c" : fl < 0 ? "?" : "");
        }
    printf("\n");
}

/* Whether `f` is blocking and `events` not ready: the call would wait. */
static int would_block(int f, short events) {
    long fl = fcntl(f, F_GETFL);
    if (fl < 0 || (fl & O_NONBLOCK))
        return 0;
    struct pollfd p = {f, events, 0};
    return poll(&p, 1, 0) != 1 || !(p.revents & (events | POLLERR | POLLHUP | POLLNVAL));
}

static void call(unsigned idx) {
    long r;
    switch (pick(20)) {
    case 0:
    case 1: {
        static const unsigned inits[] = {0, 1, 2, 100, 0xfffffffeU};
        unsigned init = inits[pick(5)];
        int flags = 0;
        if (pick(2))
            flags |= EFD_NONBLOCK;
        if (pick(3) == 0)
            flags |= EFD_SEMAPHORE;
        if (pick(3) == 0)
            flags |= EFD_CLOEXEC;
        if (pick(10) == 0)
            flags |= 0x4; /* not a flag */
        r = syscall(SYS_eventfd2, init, flags);
        printf("%u eventfd2 %u %#x = %s\n", idx, init, flags, res(r));
        note(r);
        break;
    }
    case 2: {
        int p[2];
        int flags = pick(2) ? O_CLOEXEC : 0;
        r = pipe2(p, flags | O_NONBLOCK);
        printf("%u pipe2 %#x = %s", idx, flags, res(r));
        if (r == 0) {
            printf(" %d %d", p[0], p[1]);
            note(p[0]), note(p[1]);
        }
        printf("\n");
        break;
    }
    case 3: {
        r = syscall(SYS_memfd_create, "fddiff", pick(2) ? MFD_CLOEXEC : 0);
        printf("%u memfd_create = %s\n", idx, res(r));
        note(r);
        break;
    }
    case 4: {
        int f = any_fd();
        r = dup(f);
        printf("%u dup %d = %s\n", idx, f, res(r));
        note(r);
        break;
    }
    case 5: {
        int f = any_fd(), t = pick(4) ? target_fd() : f;
        r = dup2(f, t);
        printf("%u dup2 %d %d = %s\n", idx, f, t, res(r));
        note(r);
        break;
    }
    case 6: {
        int f = any_fd(), t = pick(4) ? target_fd() : f;
        int flags = pick(3) == 0 ? O_CLOEXEC : pick(6) == 0 ? O_NONBLOCK : 0;
        r = syscall(SYS_dup3, f, t, flags);
        printf("%u dup3 %d %d %#x = %s\n", idx, f, t, flags, res(r));
        note(r);
        break;
    }
    case 7: {
        int f = any_fd(), from = target_fd();
        int cmd = pick(2) ? F_DUPFD : F_DUPFD_CLOEXEC;
        r = fcntl(f, cmd, from);
        printf("%u fcntl %d %s %d = %s\n", idx, f, cmd == F_DUPFD ? "F_DUPFD" : "F_DUPFD_CLOEXEC",
               from, res(r));
        note(r);
        break;
    }
    case 8: {
        int f = any_fd();
        long v = pick(3) ? FD_CLOEXEC : pick(2) ? 0 : 0xff;
        r = fcntl(f, F_SETFD, v);
        printf("%u fcntl %d F_SETFD %#lx = %s\n", idx, f, v, res(r));
        break;
    }
    case 9: {
        int f = any_fd();
        r = fcntl(f, F_GETFL);
        printf("%u fcntl %d F_GETFL = %s\n", idx, f, r < 0 ? res(r) : "ok");
        if (r >= 0)
            printf("%u   flags %#lx\n", idx, r & (O_ACCMODE | O_NONBLOCK | O_APPEND));
        long v = (pick(2) ? O_NONBLOCK : 0) | (pick(3) == 0 ? O_APPEND : 0) |
                 (pick(4) == 0 ? O_RDWR : 0);
        r = fcntl(f, F_SETFL, v);
        printf("%u fcntl %d F_SETFL %#lx = %s\n", idx, f, v, res(r));
        break;
    }
    case 10:
    case 11: {
        int f = pick(8) ? any_fd() : target_fd();
        if (f >= 0 && f <= 2)
            f = 77; /* stdin, stdout and stderr stay */
        r = close(f);
        printf("%u close %d = %s\n", idx, f, res(r));
        if (r == 0 && f < MAXFD)
            open_fd[f] = 0;
        break;
    }
    case 12: {
        /* close_range never touches 0-2 here: its first is at least 3. */
        unsigned first = 3 + pick(40), last = pick(5) == 0 ? ~0U : first + pick(20);
        if (pick(8) == 0)
            last = first - 1; /* reversed: EINVAL */
        unsigned flags = pick(3) == 0 ? 4 /* CLOSE_RANGE_CLOEXEC */ : pick(10) == 0 ? 8 : 0;
        r = syscall(SYS_close_range, first, last, flags);
        printf("%u close_range %u %d %#x = %s\n", idx, first, last == ~0U ? -1 : (int)last, flags,
               res(r));
        if (r == 0 && flags == 0)
            for (unsigned i = first; i < MAXFD && i <= last; i++)
                open_fd[i] = 0;
        break;
    }
    case 13: {
        static const rlim_t lims[] = {0, 3, 8, 20, 40};
        struct rlimit l = {lims[pick(5)], first_limit.rlim_max};
        if (pick(3) == 0)
            l = first_limit;
        r = setrlimit(RLIMIT_NOFILE, &l);
        printf("%u setrlimit NOFILE %ld = %s\n", idx,
               l.rlim_cur == first_limit.rlim_cur ? -1 : (long)l.rlim_cur, res(r));
        break;
    }
    case 14:
    case 15:
    case 16: {
        int f = any_fd();
        static const uint64_t vals[] = {0, 1, 2, 5, 0xfffffffffffffffeULL, 0xffffffffffffffffULL,
                                        0x7fffffffffffffffULL};
        uint64_t v = vals[pick(7)];
        size_t len = pick(6) == 0 ? 4 : pick(6) == 0 ? 16 : 8;
        unsigned char b[16];
        memcpy(b, &v, 8);
        memset(b + 8, 0, 8);
        /* A blocking eventfd takes 0 or 1 at once when writable. */
        if (v != 0xffffffffffffffffULL &&
            (would_block(f, POLLOUT) || (v > 1 && !(fcntl(f, F_GETFL) & O_NONBLOCK)))) {
            printf("%u write %d %#llx: would wait, left out\n", idx, f, (unsigned long long)v);
            return;
        }
        r = write(f, b, len);
        printf("%u write %d %#llx len %zu = %s\n", idx, f, (unsigned long long)v, len, res(r));
        break;
    }
    case 17:
    case 18: {
        int f = any_fd();
        size_t len = pick(6) == 0 ? 4 : pick(6) == 0 ? 16 : 8;
        unsigned char b[16] = {0};
        if (would_block(f, POLLIN)) {
            printf("%u read %d: would wait, left out\n", idx, f);
            return;
        }
        r = read(f, b, len);
        uint64_t v;
        memcpy(&v, b, 8);
        printf("%u read %d len %zu = %s %#llx\n", idx, f, len, res(r),
               r >= 8 ? (unsigned long long)v : 0ULL);
        break;
    }
    default: {
        int f = any_fd();
        struct pollfd p = {f, POLLIN | POLLOUT, 0};
        r = poll(&p, 1, 0);
        printf("%u poll %d = %s %#x\n", idx, f, res(r), p.revents);
        break;
    }
    }
    table(idx);
}

/* Each sequence starts from 0, 1, 2 and the first limit. */
static void begin(void) {
    setrlimit(RLIMIT_NOFILE, &first_limit);
    syscall(SYS_close_range, 3, ~0U, 0);
    memset(open_fd, 0, sizeof open_fd);
}

int main(int argc, char **argv) {
    getrlimit(RLIMIT_NOFILE, &first_limit);
    if (first_limit.rlim_cur > 4096) {
        /* The same limit on both sides, whatever the shells had. */
        first_limit.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &first_limit);
    }
    return differ_main(argc, argv, "fddiff", begin, call);
}
