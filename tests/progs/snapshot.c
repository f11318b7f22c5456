/* A program that snapshots its partition (by reading /dev/astraea-snapshot)
 * with state of every kind held across the snapshot, then checks each piece
 * of it afterwards: in the partition it ran in ("taken") and in every
 * partition restored from the snapshot ("restored").
 *
 *   snapshot DIR      files under DIR (DIR/ro must exist and hold 16 bytes)
 *   snapshot busy     a connection's write waits at the gateway (its peer
 *                     reads nothing): refused
 *   snapshot net PORT a listener on 127.0.0.1:PORT and a connection to it
 *                     across the snapshot: the connection goes on where the
 *                     snapshot was taken and has ended in a restored
 *                     partition; the listener takes new connections in both
 *   snapshot plain    just the snapshot, and its errno if refused
 *   snapshot wait DIR says "ready", then polls for DIR/go (astraea snapshot
 *                     is to snapshot it meanwhile, from outside)
 *
 * tests/tests/snapshot.rs runs it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xmmintrin.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, woke;

static void *waiter(void *arg) {
    pthread_mutex_lock(&mu);
    while (!go) pthread_cond_wait(&cv, &mu);
    woke = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return arg;
}

/* Reads the snapshot device: "taken", "restored", or the errno's name. */
static const char *snapshot(void) {
    static char said[32];
    int fd = open("/dev/astraea-snapshot", O_RDONLY);
    if (fd < 0) return strerrorname_np(errno);
    ssize_t n = read(fd, said, sizeof said - 1);
    int e = errno;
    close(fd);
    if (n < 0) return strerrorname_np(e);
    said[n] = 0;
    said[strcspn(said, "\n")] = 0;
    return said;
}

static int64_t ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A TCP listener on 127.0.0.1:port (0: any port). */
static int listen_on(int port) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1;
    if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 4)) {
        perror("listen");
        return -1;
    }
    return l;
}

/* A connection to listener l's address. */
static int dial(int l) {
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || c < 0 || getsockname(l, (struct sockaddr *)&a, &len) ||
        connect(c, (struct sockaddr *)&a, sizeof a)) {
        perror("connect");
        return -1;
    }
    return c;
}

/* Reads exactly n bytes; false on an error or an early end. */
static int read_all(int fd, char *b, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r <= 0) return 0;
        got += r;
    }
    return 1;
}

static void path(char *out, const char *dir, const char *name) {
    snprintf(out, 4096, "%s/%s", dir, name);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "plain") == 0) {
        printf("snapshot: %s\n", snapshot());
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "busy") == 0) {
        int l = listen_on(0);
        int c = dial(l);
        if (l < 0 || c < 0) return 1;
        /* Fill every buffer on the way, in writes small enough to be
         * buffered in the partition: the last write from there waits at
         * the gateway. */
        static char junk[4096];
        /* Full for 200 ms on end: the partition's writer waits at the
         * gateway (the host's buffers are full too). */
        for (int full = 0; full < 4;) {
            if (send(c, junk, sizeof junk, MSG_DONTWAIT | MSG_NOSIGNAL) > 0) {
                full = 0;
            } else if (errno == EAGAIN) {
                full++;
                usleep(50000);
            } else {
                perror("send");
                return 1;
            }
        }
        printf("snapshot: %s\n", snapshot());
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "net") == 0) {
        int l = listen_on(atoi(argv[2]));
        int c = dial(l);
        int s = l < 0 ? -1 : accept(l, NULL, NULL);
        char b[16] = {0};
        if (c < 0 || s < 0 || send(c, "before", 6, 0) != 6 || !read_all(s, b, 6)) {
            perror("net: setup");
            return 1;
        }
        const char *said = snapshot();
        printf("net: %s\n", said);
        if (strcmp(said, "restored") == 0) {
            /* Its host sockets stayed with the partition snapshotted. */
            ssize_t n1 = read(s, b, sizeof b), n2 = read(c, b, sizeof b);
            printf("net: old connection %s\n", n1 == 0 && n2 == 0 ? "ended" : "still open?");
        } else {
            memset(b, 0, sizeof b);
            int ok = send(c, "after", 5, 0) == 5 && read_all(s, b, 5) && memcmp(b, "after", 5) == 0 &&
                     send(s, "back", 4, 0) == 4 && read_all(c, b, 4) && memcmp(b, "back", 4) == 0;
            printf("net: old connection %s\n", ok ? "carries bytes both ways" : "broken");
        }
        /* A new connection to the listener (in a partition restored with
         * --publish, its loopback port is this partition's own). */
        int c2 = dial(l);
        int s2 = c2 < 0 ? -1 : accept(l, NULL, NULL);
        memset(b, 0, sizeof b);
        int ok = s2 >= 0 && send(c2, "new", 3, 0) == 3 && read_all(s2, b, 3) && memcmp(b, "new", 3) == 0;
        printf("net: new connection %s\n", ok ? "works" : "failed");
        return 0;
    }
    if (argc > 2 && strcmp(argv[1], "wait") == 0) {
        char go[4096];
        path(go, argv[2], "go");
        long polls = 0;
        printf("ready\n");
        while (access(go, F_OK) != 0) {
            polls++;
            usleep(5000);
        }
        printf("go: polled %s\n", polls > 0 ? "a while" : "never");
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: snapshot DIR | busy | net PORT | plain | wait DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    char p[4096];
    /* A read-only file read in two halves, a file written before, one the
     * partition goes on writing after (changed: a restore must not use it). */
    path(p, dir, "ro");
    int ro = open(p, O_RDONLY);
    path(p, dir, "written");
    int wr = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    path(p, dir, "changed");
    int ch = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (ro < 0 || wr < 0 || ch < 0) {
        perror("open");
        return 1;
    }
    char first[8];
    if (read(ro, first, 8) != 8 || write(wr, "before\n", 7) != 7 || write(ch, "x", 1) != 1) {
        perror("io");
        return 1;
    }
    /* A thread asleep on a condition variable (a futex). */
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    usleep(2000);
    /* Bytes waiting in a pipe. */
    int pp[2];
    if (pipe(pp) || write(pp[1], "pipe-data", 9) != 9) {
        perror("pipe");
        return 1;
    }
    /* Memory: 8 MiB, every 7th page written, the rest left zero. */
    size_t len = 8 << 20;
    unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < len; i += 4096 * 7) memset(m + i, ((int)(i / 4096) & 0xff) | 1, 4096);
    /* The SSE control register (callee-saved): round toward zero. */
    _MM_SET_ROUNDING_MODE(_MM_ROUND_TOWARD_ZERO);
    pid_t pid = getpid();
    int64_t mono0 = ns(CLOCK_MONOTONIC), real0 = ns(CLOCK_REALTIME);

    const char *said = snapshot();
    int restored = strcmp(said, "restored") == 0;
    printf("snapshot: %s\n", said);
    if (!restored && strcmp(said, "taken") != 0) return 3;
    if (!restored && pwrite(ch, "changed\n", 8, 0) != 8) perror("pwrite changed");

    char rest[9] = {0};
    ssize_t n = read(ro, rest, 8);
    printf("read-only file: %zd bytes after the first 8: %.8s\n", n, rest);
    char back[16] = {0};
    n = pread(wr, back, sizeof back - 1, 0);
    printf("written file: %s", n >= 0 ? back : "error\n");
    char c[16] = {0};
    n = pread(ch, c, sizeof c - 1, 0);
    if (n < 0)
        printf("changed file: %s\n", strerrorname_np(errno));
    else
        printf("changed file: %s", c);
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    while (!woke) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    printf("thread: woke\n");
    char pd[16] = {0};
    n = read(pp[0], pd, sizeof pd - 1);
    printf("pipe: %s\n", n > 0 ? pd : "empty");
    int mem_ok = 1;
    for (size_t i = 0; i < len; i += 4096) {
        unsigned char want = (i / 4096) % 7 == 0 ? (((int)(i / 4096) & 0xff) | 1) : 0;
        if (m[i] != want || m[i + 4095] != want) mem_ok = 0;
    }
    printf("memory: %s\n", mem_ok ? "kept" : "LOST");
    printf("rounding: %s\n", _MM_GET_ROUNDING_MODE() == _MM_ROUND_TOWARD_ZERO ? "kept" : "LOST");
    printf("pid: %s\n", getpid() == pid ? "kept" : "changed");
    usleep(1000);
    int64_t mono1 = ns(CLOCK_MONOTONIC), real1 = ns(CLOCK_REALTIME);
    printf("clocks: monotonic %s, realtime %s\n", mono1 > mono0 ? "forward" : "BACK",
           real1 > real0 ? "forward" : "BACK");
    return restored ? 42 : 0;
}
