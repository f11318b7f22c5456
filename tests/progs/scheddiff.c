/* Differential exerciser for scheduling attributes: the same random
 * sequence of calls on the host (without capabilities, as a partition's
 * program) and in a partition must print the same lines.
 *
 *   scheddiff run SEED NSEEDS COUNT   seeds SEED..SEED+NSEEDS-1, COUNT calls
 *
 * sched_setscheduler/getscheduler/setparam/getparam with every policy,
 * priorities in and out of range and the reset-on-fork flag,
 * sched_get_priority_min/max, sched_rr_get_interval's errors,
 * sched_setattr/getattr with structure sizes that are short, exact and long,
 * getpriority/setpriority (raising a nice value is allowed, lowering it
 * again is not, without CAP_SYS_NICE and with RLIMIT_NICE at 0),
 * ioprio_get/ioprio_set, on a fresh thread per sequence (and reads of the
 * caller, 0), a thread ID nobody has and bad pointers. The CPU affinity mask is left out: a
 * partition has its own CPUs. Each line is "INDEX CALL ARGS = RESULT". */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define SLOTS 1
#include "differ.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

/* Each sequence changes a fresh thread of its own (what a program without
 * capabilities sets it cannot always take back); reads look at it and at
 * the main thread (0), which keeps its defaults. */
static pid_t helper_tid;
static pthread_t helper;
static int helper_pipe[2] = {-1, -1};

static void *helper_main(void *arg) {
    (void)arg;
    __atomic_store_n(&helper_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
    char c;
    while (read(helper_pipe[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

static pid_t who_for(int set, const char **name) {
    switch (pick(6)) {
    case 0: *name = "nobody"; return 0x3ffffff0;
    case 1: *name = "-1"; return -1;
    case 2:
        if (!set) {
            *name = "0";
            return 0;
        }
        /* fall through */
    default: *name = "thread"; return helper_tid;
    }
}
#define who(n) who_for(0, n)
#define who_set(n) who_for(1, n)

static int policy_pick(void) {
    static const int p[] = {SCHED_OTHER, SCHED_FIFO, SCHED_RR, SCHED_BATCH, SCHED_IDLE, 6, 7, -1};
    int v = p[pick(8)];
    if (pick(5) == 0)
        v |= SCHED_RESET_ON_FORK;
    return v;
}

static int prio_pick(void) {
    static const int p[] = {0, 1, 50, 99, 100, -1};
    return p[pick(6)];
}

static void call(unsigned idx) {
    const char *wn;
    long r;
    switch (pick(14)) {
    case 0:
    case 1: {
        pid_t w = who_set(&wn);
        int pol = policy_pick();
        struct sched_param sp = {prio_pick()};
        r = syscall(SYS_sched_setscheduler, w, pol, pick(8) ? (void *)&sp : NULL);
        printf("%u setscheduler %s %#x %d = %s\n", idx, wn, pol, sp.sched_priority, res(r));
        break;
    }
    case 2: {
        pid_t w = who(&wn);
        r = syscall(SYS_sched_getscheduler, w);
        printf("%u getscheduler %s = %s\n", idx, wn, res(r));
        break;
    }
    case 3: {
        pid_t w = who_set(&wn);
        struct sched_param sp = {prio_pick()};
        r = syscall(SYS_sched_setparam, w, pick(8) ? (void *)&sp : NULL);
        printf("%u setparam %s %d = %s\n", idx, wn, sp.sched_priority, res(r));
        break;
    }
    case 4: {
        pid_t w = who(&wn);
        struct sched_param sp = {-77};
        r = syscall(SYS_sched_getparam, w, pick(8) ? (void *)&sp : NULL);
        printf("%u getparam %s = %s %d\n", idx, wn, res(r), sp.sched_priority);
        break;
    }
    case 5: {
        int pol = policy_pick();
        long a = syscall(SYS_sched_get_priority_min, pol);
        const char *ra = res(a);
        long b = syscall(SYS_sched_get_priority_max, pol);
        printf("%u priority_min/max %#x = %s %s\n", idx, pol, ra, res(b));
        break;
    }
    case 6: {
        pid_t w = who(&wn);
        struct timespec ts = {-1, -1};
        r = syscall(SYS_sched_rr_get_interval, w, pick(8) ? (void *)&ts : NULL);
        /* The interval itself is the host scheduler's business. */
        printf("%u rr_get_interval %s = %s\n", idx, wn, res(r));
        break;
    }
    case 7:
    case 8: {
        pid_t w = who_set(&wn);
        static const unsigned sizes[] = {0, 47, 48, 56, 64, 100, 4096};
        unsigned char buf[128];
        memset(buf, 0, sizeof buf);
        unsigned size = sizes[pick(7)];
        uint32_t pol = (uint32_t)policy_pick() & 0xff;
        uint64_t flags = pick(4) == 0 ? (pick(2) ? 1 /* RESET_ON_FORK */ : 0x100) : 0;
        int32_t nice = (int32_t)pick(41) - 20;
        uint32_t prio = (uint32_t)prio_pick();
        memcpy(buf, &size, 4);
        memcpy(buf + 4, &pol, 4);
        memcpy(buf + 8, &flags, 8);
        memcpy(buf + 16, &nice, 4);
        memcpy(buf + 20, &prio, 4);
        if (size > 64 && pick(2))
            buf[70] = 1; /* a nonzero byte past what the kernel knows */
        r = syscall(SYS_sched_setattr, w, size <= sizeof buf ? (void *)buf : NULL, 0);
        printf("%u setattr %s size %u policy %u flags %#llx nice %d prio %u = %s\n", idx, wn, size,
               pol, (unsigned long long)flags, nice, prio, res(r));
        break;
    }
    case 9: {
        pid_t w = who(&wn);
        static const unsigned sizes[] = {0, 47, 48, 56, 64, 100};
        unsigned size = sizes[pick(6)];
        unsigned char buf[128];
        memset(buf, 0xaa, sizeof buf);
        unsigned flags = pick(5) == 0 ? 1 : 0;
        r = syscall(SYS_sched_getattr, w, buf, size, flags);
        printf("%u getattr %s size %u flags %u = %s", idx, wn, size, flags, res(r));
        if (r == 0) {
            uint32_t got, pol;
            uint64_t fl;
            int32_t nice;
            uint32_t prio;
            memcpy(&got, buf, 4);
            memcpy(&pol, buf + 4, 4);
            memcpy(&fl, buf + 8, 8);
            memcpy(&nice, buf + 16, 4);
            memcpy(&prio, buf + 20, 4);
            printf(" size %u policy %u flags %#llx nice %d prio %u", got, pol, (unsigned long long)fl,
                   nice, prio);
        }
        printf("\n");
        break;
    }
    case 10:
    case 11: {
        /* Never a group or a user: those are other processes on the host. */
        int which = pick(5) ? PRIO_PROCESS : 7;
        int set = pick(2);
        pid_t w = who_for(set, &wn);
        if (set) {
            int nice = (int)pick(45) - 22;
            r = setpriority(which, w, nice);
            printf("%u setpriority %d %s %d = %s\n", idx, which, wn, nice, res(r));
        } else {
            errno = 0;
            r = syscall(SYS_getpriority, which, w);
            printf("%u getpriority %d %s = %s\n", idx, which, wn, res(r));
        }
        break;
    }
    default: {
        /* ioprio: class in the top 3 bits of 16, data below. */
        static const int classes[] = {0, 1, 2, 3, 4};
        /* IOPRIO_WHO_PROCESS, or a kind that does not exist. */
        int which = pick(4) ? 1 : pick(2) ? 0 : 4;
        int set = pick(2);
        pid_t w = who_for(set, &wn);
        if (set) {
            int prio = classes[pick(5)] << 13 | (int)pick(9);
            r = syscall(SYS_ioprio_set, which, w, prio);
            printf("%u ioprio_set %d %s %#x = %s\n", idx, which, wn, prio, res(r));
        } else {
            r = syscall(SYS_ioprio_get, which, w);
            printf("%u ioprio_get %d %s = %s\n", idx, which, wn, r < 0 ? res(r) : "");
            if (r >= 0)
                printf("%u   %#lx\n", idx, r);
        }
        break;
    }
    }
}

static void begin(void) {
    if (helper_tid) {
        write(helper_pipe[1], "x", 1);
        pthread_join(helper, NULL);
        close(helper_pipe[0]);
        close(helper_pipe[1]);
    }
    helper_tid = 0;
    if (pipe(helper_pipe) || pthread_create(&helper, NULL, helper_main, NULL)) {
        perror("scheddiff: thread");
        exit(2);
    }
    while (!__atomic_load_n(&helper_tid, __ATOMIC_ACQUIRE))
        usleep(100);
}

int main(int argc, char **argv) {
    /* A partition's program has no capabilities: neither has this one; and
       no room to lower a nice value (RLIMIT_NICE 0), as the partition's. */
    drop_capabilities();
    struct rlimit nolimit = {0, 0};
    setrlimit(RLIMIT_NICE, &nolimit);
    return differ_main(argc, argv, "scheddiff", begin, call);
}
