/* System calls given buffers with holes: the program's memory that ends
 * (unmapped or PROT_NONE) part-way through a write's or a read's buffer,
 * and buffers another thread unmaps while a long write copies them.
 *
 * Linux copies up to the hole and returns the count so far (EFAULT when
 * the hole is at the start); a partition must do the same and never fault
 * in its kernel. Prints one line per case, the same on every run; exits 0.
 *
 * Usage: holes [DIR]   (DIR for its scratch files, default ".") */
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
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

#define PAGE 4096
static int failures;
static const char *dir = ".";

static void check(const char *what, int ok) {
    if (!ok) {
        fprintf(stderr, "holes: %s failed\n", what);
        failures++;
    }
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s = -1 errno=%s\n", what, errname(errno));
    else
        printf("%s = %ld\n", what, r);
}

/* Three pages of a pattern whose third page is made a hole by `how`
 * ('u' unmapped, 'n' PROT_NONE, 'r' read-only). */
static unsigned char *holed(char how) {
    unsigned char *b = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    for (int i = 0; i < 3 * PAGE; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    if (how == 'u')
        munmap(b + 2 * PAGE, PAGE);
    else
        mprotect(b + 2 * PAGE, PAGE, how == 'n' ? PROT_NONE : PROT_READ);
    return b;
}

static void unholed(unsigned char *b) {
    munmap(b, 3 * PAGE);
}

/* Whether `got` holds the pattern from offset `from` for `n` bytes. */
static int pattern(const unsigned char *got, int from, long n) {
    for (long i = 0; i < n; i++)
        if (got[i] != (unsigned char)((from + i) * 7 + 3))
            return 0;
    return 1;
}

static void drain_check(int fd, long n, int from, const char *what) {
    static unsigned char got[4 * PAGE];
    long have = 0;
    while (have < n) {
        long r = read(fd, got + have, n - have);
        if (r <= 0)
            break;
        have += r;
    }
    check(what, have == n && pattern(got, from, n));
}

static void pipe_cases(char how) {
    char name[64];
    unsigned char *b = holed(how);
    int p[2];
    if (pipe(p) != 0)
        exit(2);
    snprintf(name, sizeof name, "pipe write across hole(%c)", how);
    long r = write(p[1], b + 100, 3 * PAGE - 100);
    show(name, r);
    if (r > 0)
        drain_check(p[0], r, 100, name);
    snprintf(name, sizeof name, "pipe write at hole(%c)", how);
    show(name, write(p[1], b + 2 * PAGE, 10));
    struct iovec iov[3] = {{b, 50}, {b + 2 * PAGE - 30, 60}, {b, 10}};
    snprintf(name, sizeof name, "pipe writev across hole(%c)", how);
    r = writev(p[1], iov, 3);
    show(name, r);
    if (r >= 50) {
        drain_check(p[0], 50, 0, name);
        drain_check(p[0], r - 50, 2 * PAGE - 30, name);
    }
    /* Reads into a buffer whose third page may not be written. */
    unsigned char *src = holed('r');
    write(p[1], src, 3 * PAGE - 100);
    unholed(src);
    b = holed(how);
    snprintf(name, sizeof name, "pipe read across hole(%c)", how);
    r = read(p[0], b + 100, 3 * PAGE - 100);
    show(name, r);
    if (r > 0)
        check(name, pattern(b + 100, 0, r));
    snprintf(name, sizeof name, "  then the rest");
    show(name, read(p[0], b, 2 * PAGE));
    close(p[0]);
    close(p[1]);
    unholed(b);
}

static void file_cases(char how) {
    char path[512], name[64];
    snprintf(path, sizeof path, "%s/holes.scratch", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        exit(2);
    }
    unsigned char *b = holed(how);
    snprintf(name, sizeof name, "file write across hole(%c)", how);
    long r = write(fd, b + 100, 3 * PAGE - 100);
    show(name, r);
    show("  position", lseek(fd, 0, SEEK_CUR));
    snprintf(name, sizeof name, "file pwrite at hole(%c)", how);
    show(name, pwrite(fd, b + 2 * PAGE + 5, 100, 0));
    snprintf(name, sizeof name, "file pwrite across hole(%c)", how);
    show(name, pwrite(fd, b + 2 * PAGE - 1000, 2000, 20000));
    struct stat st;
    fstat(fd, &st);
    show("  size", st.st_size);
    if (r > 0) {
        lseek(fd, 0, SEEK_SET);
        drain_check(fd, r, 100, name);
    }
    unholed(b);

    /* Reads into a buffer whose third page may not be written. */
    unsigned char *src = holed('r');
    ftruncate(fd, 0);
    pwrite(fd, src, 2 * PAGE, 0);
    pwrite(fd, src + 2 * PAGE, PAGE, 2 * PAGE);
    unholed(src);
    b = holed(how);
    lseek(fd, 0, SEEK_SET);
    snprintf(name, sizeof name, "file read across hole(%c)", how);
    r = read(fd, b + 100, 3 * PAGE - 100);
    show(name, r);
    show("  position", lseek(fd, 0, SEEK_CUR));
    if (r > 0)
        check(name, pattern(b + 100, 0, r));
    snprintf(name, sizeof name, "file pread at hole(%c)", how);
    show(name, pread(fd, b + 2 * PAGE, 10, 0));
    unholed(b);
    close(fd);
    unlink(path);
}

static void socket_cases(char how, int tcp) {
    char name[80];
    int s[2];
    if (tcp) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof a;
        if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
            getsockname(l, (struct sockaddr *)&a, &al) != 0) {
            perror("listen");
            exit(2);
        }
        s[0] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(s[0], (struct sockaddr *)&a, sizeof a) != 0) {
            perror("connect");
            exit(2);
        }
        s[1] = accept(l, NULL, NULL);
        close(l);
    } else if (socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0) {
        exit(2);
    }
    const char *kind = tcp ? "tcp" : "unix";
    unsigned char *b = holed(how);
    snprintf(name, sizeof name, "%s send across hole(%c)", kind, how);
    long r = send(s[0], b + 100, 3 * PAGE - 100, 0);
    show(name, r);
    if (r > 0)
        drain_check(s[1], r, 100, name);
    snprintf(name, sizeof name, "%s send at hole(%c)", kind, how);
    show(name, send(s[0], b + 2 * PAGE, 10, 0));
    struct iovec iov[2] = {{b + 10, 20}, {b + 2 * PAGE - 8, 100}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    snprintf(name, sizeof name, "%s sendmsg across hole(%c)", kind, how);
    r = sendmsg(s[0], &m, 0);
    show(name, r);
    if (r >= 20) {
        drain_check(s[1], 20, 10, name);
        drain_check(s[1], r - 20, 2 * PAGE - 8, name);
    }
    unsigned char *src = holed('r');
    send(s[0], src, 3 * PAGE - 100, 0);
    unholed(src);
    b = holed(how);
    /* Let all of it arrive first. */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    snprintf(name, sizeof name, "%s recv across hole(%c)", kind, how);
    r = recv(s[1], b + 100, 3 * PAGE - 100, 0);
    show(name, r);
    if (r > 0)
        check(name, pattern(b + 100, 0, r));
    snprintf(name, sizeof name, "%s recv at hole(%c)", kind, how);
    show(name, recv(s[1], b + 2 * PAGE, 100, MSG_DONTWAIT));
    long rest = 0;
    while ((r = recv(s[1], b, 2 * PAGE, MSG_DONTWAIT)) > 0)
        rest += r;
    printf("  then the rest: %ld\n", rest);
    close(s[0]);
    close(s[1]);
    unholed(b);
}

/* epoll_wait into a buffer with room for two events before a hole: the
 * third stays ready (edge-triggered ones too), none is lost. */
static void epoll_cases(char how) {
    char name[64];
    int ep = epoll_create1(0), p[3][2];
    for (int i = 0; i < 3; i++) {
        pipe(p[i]);
        write(p[i][1], "x", 1);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u32 = i};
        epoll_ctl(ep, EPOLL_CTL_ADD, p[i][0], &ev);
    }
    unsigned char *b = holed(how);
    struct epoll_event good[4];
    snprintf(name, sizeof name, "epoll_wait across hole(%c)", how);
    show(name, epoll_wait(ep, (struct epoll_event *)(b + 2 * PAGE - 30), 3, 1000));
    show("  then", epoll_wait(ep, good, 4, 0));
    show("  then", epoll_wait(ep, good, 4, 0));
    snprintf(name, sizeof name, "epoll_wait at hole, none ready(%c)", how);
    show(name, epoll_wait(ep, (struct epoll_event *)(b + 2 * PAGE), 3, 0));
    write(p[1][1], "y", 1);
    snprintf(name, sizeof name, "epoll_wait at hole, one ready(%c)", how);
    show(name, epoll_wait(ep, (struct epoll_event *)(b + 2 * PAGE), 3, 1000));
    long r = epoll_wait(ep, good, 4, 0);
    show("  then", r);
    if (r == 1)
        printf("  which is pipe %u\n", good[0].data.u32);
    for (int i = 0; i < 3; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
    close(ep);
    unholed(b);
}

/* Strings the program passes (paths, names) that end right before a hole,
 * run into it, or have no NUL within the limit: read up to their NUL a
 * page at a time, EFAULT only for a byte before the NUL. */
static void string_cases(char how) {
    char name[64];
    unsigned char *b = holed(how);
    char *end = (char *)b + 2 * PAGE;
    memcpy(end - 5, "/tmp", 5);
    snprintf(name, sizeof name, "access, NUL right before hole(%c)", how);
    show(name, access(end - 5, F_OK));
    memcpy(end - 4, "/tmp", 4);
    snprintf(name, sizeof name, "access, running into hole(%c)", how);
    show(name, access(end - 4, F_OK));
    memset(b, 'a', 2 * PAGE);
    b[0] = '/';
    snprintf(name, sizeof name, "access, no NUL in 4096 bytes(%c)", how);
    show(name, access((char *)b, F_OK));
    memcpy(end - 15, "fifteen-chars!!", 15);
    snprintf(name, sizeof name, "PR_SET_NAME, 15 bytes then hole(%c)", how);
    show(name, prctl(PR_SET_NAME, end - 15));
    char got[17] = {0};
    prctl(PR_GET_NAME, got);
    printf("  name now %s\n", got);
    snprintf(name, sizeof name, "PR_SET_NAME, 3 bytes then hole(%c)", how);
    show(name, prctl(PR_SET_NAME, end - 3));
    snprintf(name, sizeof name, "memfd_create, name into hole(%c)", how);
    show(name, syscall(SYS_memfd_create, end - 3, 0));
    unholed(b);
}

/* Reads that take what they read before copying it out lose it to a hole
 * (EFAULT, then nothing left): an eventfd's counter, a timerfd's
 * expirations, a UDP datagram (but not when only peeked at). */
static void taken_cases(char how) {
    char name[64];
    unsigned char *b = holed(how);
    unsigned char *hole = b + 2 * PAGE;
    unsigned char good[64];

    int e = eventfd(0, EFD_NONBLOCK);
    uint64_t five = 5;
    write(e, &five, 8);
    snprintf(name, sizeof name, "eventfd read at hole(%c)", how);
    show(name, read(e, hole, 8));
    show("  then", read(e, good, 8));
    close(e);

    int t = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec its = {.it_value = {0, 1000 * 1000}};
    timerfd_settime(t, 0, &its, NULL);
    struct pollfd pfd = {.fd = t, .events = POLLIN};
    poll(&pfd, 1, 1000);
    snprintf(name, sizeof name, "timerfd read at hole(%c)", how);
    show(name, read(t, hole, 8));
    show("  then", read(t, good, 8));
    close(t);

    int u = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(u, (struct sockaddr *)&a, sizeof a);
    getsockname(u, (struct sockaddr *)&a, &al);
    sendto(u, "one", 3, 0, (struct sockaddr *)&a, sizeof a);
    sendto(u, "two", 3, 0, (struct sockaddr *)&a, sizeof a);
    pfd = (struct pollfd){.fd = u, .events = POLLIN};
    poll(&pfd, 1, 1000);
    snprintf(name, sizeof name, "udp recv peek at hole(%c)", how);
    show(name, recv(u, hole, 3, MSG_PEEK));
    snprintf(name, sizeof name, "udp recv at hole(%c)", how);
    show(name, recv(u, hole, 3, 0));
    /* The second datagram may still be on its way (through the host). */
    poll(&pfd, 1, 1000);
    long r = recv(u, good, sizeof good, 0);
    show("  then", r);
    if (r == 3)
        printf("  which is %.3s\n", good);
    show("  then", recv(u, good, sizeof good, 0));
    close(u);
    unholed(b);
}

/* --- a buffer unmapped by another thread while a long write copies it -- */

#define BIG (32L << 20)
static unsigned char *big;

static void *unmapper(void *arg) {
    (void)arg;
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    munmap(big + BIG / 2, BIG / 2);
    return NULL;
}

static void unmapped_meanwhile(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/holes.big", dir);
    int ok = 1;
    for (int round = 0; round < 3; round++) {
        big = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        for (long i = 0; i < BIG; i += PAGE)
            big[i] = (unsigned char)(i / PAGE);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        int p[2];
        if (fd < 0 || pipe(p) != 0)
            exit(2);
        pthread_t t;
        pthread_create(&t, NULL, unmapper, NULL);
        long r = write(fd, big, BIG);
        pthread_join(t, NULL);
        /* All of it, or a prefix (up to where the hole began), or EFAULT. */
        if (r < 0) {
            ok &= errno == EFAULT;
        } else {
            ok &= r <= BIG;
            unsigned char c;
            for (long i = 0; i < r && ok; i += PAGE)
                ok &= pread(fd, &c, 1, i) == 1 && c == (unsigned char)(i / PAGE);
        }
        close(fd);
        close(p[0]);
        close(p[1]);
        munmap(big, BIG / 2);
    }
    unlink(path);
    printf("write while another thread unmaps the buffer: %s\n", ok ? "prefix written" : "WRONG");
    check("unmapped meanwhile", ok);
}

int main(int argc, char **argv) {
    if (argc > 1)
        dir = argv[1];
    setvbuf(stdout, NULL, _IONBF, 0);
    const char hows[] = {'u', 'n'};
    for (int i = 0; i < 2; i++) {
        pipe_cases(hows[i]);
        file_cases(hows[i]);
        socket_cases(hows[i], 0);
        socket_cases(hows[i], 1);
        epoll_cases(hows[i]);
        taken_cases(hows[i]);
        string_cases(hows[i]);
    }
    unmapped_meanwhile();
    printf("holes: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
