/* Differential exerciser for pipes: the same random sequence of calls on
 * the host and in a partition must print the same lines.
 *
 *   pipediff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * A table of slots holds pipe ends (non-blocking, so no call waits; dups
 * share an end). The calls are pipe2, close, write/writev of sizes around
 * a page and PIPE_BUF (Linux keeps a pipe as a ring of page buffers and
 * merges a write's odd part into the last one), bursts until EAGAIN,
 * reads of several sizes, FIONREAD, poll, F_GETPIPE_SZ/F_SETPIPE_SZ,
 * F_GETFL, dup and writes on read ends (and the other way round). Each
 * write's bytes follow from a counter, so what is read is checked by a
 * sum. Each line is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#define SLOTS 6
#include "differ.h"

static unsigned char buf[2200000];
static unsigned long written;

static size_t size_pick(void) {
    static const size_t sizes[] = {0,    1,    7,     100,   904,   3000,  4095,  4096,
                                   4097, 5000, 8192,  10000, 32768, 65535, 65536, 65537,
                                   70000, 200000, 1048576, 1048577, 1100000, 2100000};
    return sizes[pick(sizeof sizes / sizeof *sizes)];
}

/* The bytes of a write: they follow from how much was written before. */
static void fill(size_t n) {
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)((written + i) * 7 + 3);
}

static void call(unsigned idx) {
    int s = used_slot();
    unsigned op = pick(15);
    if (s < 0 || op == 0) {
        int a = free_slot();
        if (a < 0)
            return;
        fd[a] = -2; /* reserve */
        int b = free_slot();
        fd[a] = -1;
        if (b < 0)
            return;
        int p[2];
        long r = pipe2(p, O_NONBLOCK);
        printf("%u pipe2 S%d S%d = %s\n", idx, a, b, res(r));
        if (r == 0) {
            fd[a] = p[0];
            fd[b] = p[1];
        }
        return;
    }
    int f = fd[s];
    switch (op) {
    case 1: {
        printf("%u close S%d = %s\n", idx, s, res(close(f)));
        fd[s] = -1;
        break;
    }
    case 2:
    case 3: {
        size_t n = size_pick();
        fill(n);
        long r;
        int how = pick(2);
        if (how == 0)
            r = write(f, buf, n);
        else {
            size_t a = n / 3, b = n / 3;
            struct iovec v[3] = {{buf, a}, {buf + a, b}, {buf + a + b, n - a - b}};
            r = writev(f, v, 3);
        }
        if (r > 0)
            written += (unsigned long)r;
        printf("%u %s S%d %zu = %s\n", idx, how == 0 ? "write" : "writev", s, n, res(r));
        break;
    }
    case 4: {
        size_t n = size_pick();
        unsigned limit = 1 + pick(100);
        unsigned k = 0;
        long r = 0, total = 0;
        while (k < limit) {
            fill(n);
            r = write(f, buf, n);
            if (r < 0)
                break;
            written += (unsigned long)r;
            total += r;
            k++;
            if (r == 0)
                break;
        }
        printf("%u burst S%d %zu x%u = %u writes, %ld bytes, last %s\n", idx, s, n, limit, k, total,
               res(r));
        break;
    }
    case 5:
    case 6: {
        static const size_t rooms[] = {0, 1, 3, 100, 4095, 4096, 5000, 65536, 1100000, 2200000};
        size_t room = rooms[pick(sizeof rooms / sizeof *rooms)];
        memset(buf, 0, room);
        long r = read(f, buf, room);
        printf("%u read S%d %zu = %s sum %lx\n", idx, s, room, res(r), r > 0 ? sum(buf, r) : 0);
        break;
    }
    case 7: {
        int in = -1;
        long a = ioctl(f, FIONREAD, &in);
        printf("%u fionread S%d = %s %d\n", idx, s, res(a), a == 0 ? in : -1);
        break;
    }
    case 8:
    case 9: {
        struct pollfd p = {f, POLLIN | POLLOUT | POLLRDHUP, 0};
        long r = poll(&p, 1, 0);
        printf("%u poll S%d = %s %#x\n", idx, s, res(r), p.revents);
        break;
    }
    case 10: {
        static const int sizes[] = {0, 1, 4096, 5000, 8192, 16384, 65536, 131072, 1048576, 4194304};
        int v = sizes[pick(sizeof sizes / sizeof *sizes)];
        long r = fcntl(f, F_SETPIPE_SZ, v);
        const char *rr = res(r);
        long g = fcntl(f, F_GETPIPE_SZ);
        printf("%u setpipe_sz S%d %d = %s now %s\n", idx, s, v, rr, res(g));
        break;
    }
    case 11: {
        long r = fcntl(f, F_GETFL);
        printf("%u getfl S%d = %s\n", idx, s, r < 0 ? res(r) : "ok");
        if (r >= 0)
            printf("%u   flags %#lx\n", idx, r & (O_ACCMODE | O_NONBLOCK | O_APPEND));
        break;
    }
    case 12: {
        int b = free_slot();
        if (b < 0)
            break;
        int d = dup(f);
        printf("%u dup S%d S%d = %s\n", idx, s, b, d < 0 ? res(d) : "ok");
        if (d >= 0)
            fd[b] = d;
        break;
    }
    case 13: {
        /* Both directions at once: read what is there, then write it back. */
        long r = read(f, buf, 1000);
        const char *rr = res(r);
        unsigned long got = r > 0 ? sum(buf, r) : 0;
        fill(10);
        long w = write(f, buf, 10);
        if (w > 0)
            written += (unsigned long)w;
        printf("%u read+write S%d = %s sum %lx, %s\n", idx, s, rr, got, res(w));
        break;
    }
    case 14: {
        /* A write that meets a hole in the program's memory. */
        size_t n = 1 + size_pick();
        size_t h = hole_pick(n);
        fill(n);
        int how = pick(2);
        long r = write_holed(f, buf, n, h, how);
        if (r > 0)
            written += (unsigned long)r;
        printf("%u %s S%d %zu hole %zu = %s\n", idx, how == 0 ? "write" : "writev", s, n, h,
               res(r));
        break;
    }
    }
}

static void begin(void) { written = 0; }

int main(int argc, char **argv) { return differ_main(argc, argv, "pipediff", begin, call); }
