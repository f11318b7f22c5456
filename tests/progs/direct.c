/* System calls through direct entry (`astraea run --syscall-entry direct`),
 * compared with the host line by line:
 *  - a leaf function keeps live data in the red zone below its stack
 *    pointer, patterns in every general register, two vector registers and
 *    the flags (CF, DF...) across `mov eax, 39; syscall`; all but rax, rcx
 *    and r11 must survive, 1000 times over (the first call traps and
 *    rewrites the site, the rest go direct);
 *  - identity calls answer as getpid() does;
 *  - reads of a cached file (pread, read, lseek between) at many offsets
 *    and sizes give the same bytes (checksums), EOF and errors (EFAULT into
 *    an unmapped buffer, EBADF, EISDIR) as on the host;
 *  - 2000 real-time signals (which queue) sent to a thread that loops on
 *    direct calls are all delivered.
 * Usage: direct FILE (a file both see, e.g. libc). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t rz_out[40];
void rz_call(void);
__asm__(
    ".text\n"
    ".globl rz_call\n"
    ".type rz_call,@function\n"
    "rz_call:\n"
    ".cfi_startproc\n"
    "push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
    "movabs $0x1111111111111111, %rbx\n"
    "movabs $0x2222222222222222, %rbp\n"
    "movabs $0x3333333333333333, %r8\n"
    "movabs $0x4444444444444444, %r9\n"
    "movabs $0x5555555555555555, %r10\n"
    "movabs $0x6666666666666666, %r12\n"
    "movabs $0x7777777777777777, %r13\n"
    "movabs $0x8888888888888888, %r14\n"
    "movabs $0x9999999999999999, %r15\n"
    "movabs $0xaaaaaaaaaaaaaaaa, %rdi\n"
    "movabs $0xbbbbbbbbbbbbbbbb, %rsi\n"
    "movabs $0xcccccccccccccccc, %rdx\n"
    "movq %rbx, %xmm3\n"
    "movq %r15, %xmm15\n"
    "movq $-1, -8(%rsp)\n movq $-2, -16(%rsp)\n movq $-3, -24(%rsp)\n movq $-4, -32(%rsp)\n"
    "movq $-5, -40(%rsp)\n movq $-6, -48(%rsp)\n movq $-7, -56(%rsp)\n movq $-8, -64(%rsp)\n"
    "movq $-9, -72(%rsp)\n movq $-10, -80(%rsp)\n movq $-11, -88(%rsp)\n movq $-12, -96(%rsp)\n"
    "movq $-13, -104(%rsp)\n movq $-14, -112(%rsp)\n movq $-15, -120(%rsp)\n movq $-16, -128(%rsp)\n"
    "stc\n"
    "std\n"
    "mov $39, %eax\n"
    "syscall\n"
    "lea rz_out(%rip), %r11\n"
    "mov %rax, 0(%r11)\n"
    "mov %rbx, 8(%r11)\n mov %rbp, 16(%r11)\n mov %r8, 24(%r11)\n mov %r9, 32(%r11)\n"
    "mov %r10, 40(%r11)\n mov %r12, 48(%r11)\n mov %r13, 56(%r11)\n mov %r14, 64(%r11)\n"
    "mov %r15, 72(%r11)\n mov %rdi, 80(%r11)\n mov %rsi, 88(%r11)\n mov %rdx, 96(%r11)\n"
    "movq %xmm3, %rcx\n mov %rcx, 104(%r11)\n movq %xmm15, %rcx\n mov %rcx, 112(%r11)\n"
    "mov -8(%rsp), %rcx\n mov %rcx, 120(%r11)\n mov -16(%rsp), %rcx\n mov %rcx, 128(%r11)\n"
    "mov -24(%rsp), %rcx\n mov %rcx, 136(%r11)\n mov -32(%rsp), %rcx\n mov %rcx, 144(%r11)\n"
    "mov -40(%rsp), %rcx\n mov %rcx, 152(%r11)\n mov -48(%rsp), %rcx\n mov %rcx, 160(%r11)\n"
    "mov -56(%rsp), %rcx\n mov %rcx, 168(%r11)\n mov -64(%rsp), %rcx\n mov %rcx, 176(%r11)\n"
    "mov -72(%rsp), %rcx\n mov %rcx, 184(%r11)\n mov -80(%rsp), %rcx\n mov %rcx, 192(%r11)\n"
    "mov -88(%rsp), %rcx\n mov %rcx, 200(%r11)\n mov -96(%rsp), %rcx\n mov %rcx, 208(%r11)\n"
    "mov -104(%rsp), %rcx\n mov %rcx, 216(%r11)\n mov -112(%rsp), %rcx\n mov %rcx, 224(%r11)\n"
    "mov -120(%rsp), %rcx\n mov %rcx, 232(%r11)\n mov -128(%rsp), %rcx\n mov %rcx, 240(%r11)\n"
    "pushfq\n pop %rcx\n cld\n mov %rcx, 248(%r11)\n"
    "pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
    "ret\n"
    ".cfi_endproc\n"
    ".size rz_call, .-rz_call\n");

static uint64_t fnv(const unsigned char *p, size_t n, uint64_t h) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* Prints a call's result and, when it failed, its errno's name. */
static void show(const char *what, ssize_t r) {
    int e = errno;
    printf("%s: %zd %s\n", what, r, r < 0 ? strerrorname_np(e) : "");
}

static void registers(void) {
    uint64_t first[40];
    int same = 1;
    for (int i = 0; i < 1000; i++) {
        rz_call();
        if (i == 0) memcpy(first, rz_out, sizeof first);
        else if (memcmp(first, rz_out, 31 * 8) != 0 || ((first[31] ^ rz_out[31]) & 0x401)) same = 0;
    }
    printf("getpid in asm = getpid(): %d\n", (pid_t)first[0] == getpid());
    printf("registers:");
    for (int i = 1; i <= 14; i++) printf(" %016llx", (unsigned long long)first[i]);
    printf("\nred zone:");
    for (int i = 15; i <= 30; i++) printf(" %lld", (long long)first[i]);
    printf("\nflags CF=%llu DF=%llu\n", (unsigned long long)(first[31] & 1),
           (unsigned long long)((first[31] >> 10) & 1));
    printf("1000 calls alike: %d\n", same);
}

static void identity(void) {
    int ok = 1;
    for (int i = 0; i < 100000; i++) {
        ok &= getpid() == syscall(SYS_getpid);
        ok &= gettid() == syscall(SYS_gettid);
        ok &= getuid() == (uid_t)syscall(SYS_getuid);
        ok &= getgid() == (gid_t)syscall(SYS_getgid);
        ok &= geteuid() == getuid() && getegid() == getgid();
        ok &= getppid() == syscall(SYS_getppid);
    }
    printf("identity calls agree: %d\n", ok);
}

static void reads(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { printf("open %s: %s\n", path, strerror(errno)); return; }
    off_t size = lseek(fd, 0, SEEK_END);
    static unsigned char buf[70000];
    static const size_t sizes[] = {1, 7, 512, 1024, 4095, 4096, 4097, 16384, 65535, 65536, 65537};
    uint64_t h = 0xcbf29ce484222325ull;
    long total = 0;
    for (int round = 0; round < 3; round++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            for (off_t at = 0; at < size + 8192; at += size / 7 + 4093) {
                ssize_t n = pread(fd, buf, sizes[s], at);
                if (n < 0) { printf("pread: %s\n", strerror(errno)); return; }
                h = fnv(buf, (size_t)n, h);
                total += n;
            }
        }
    }
    printf("pread: %ld bytes, checksum %016llx\n", total, (unsigned long long)h);
    /* read() advances the position; lseek between. */
    lseek(fd, 12345, SEEK_SET);
    h = 0xcbf29ce484222325ull;
    total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, 3000);
        if (n <= 0) break;
        h = fnv(buf, (size_t)n, h);
        total += n;
        if (total % 9 == 0) lseek(fd, 1, SEEK_CUR);
    }
    printf("read: %ld bytes, checksum %016llx, position %lld\n", total,
           (unsigned long long)h, (long long)lseek(fd, 0, SEEK_CUR));
    /* Beyond the end, into no memory, on a bad descriptor, on a directory. */
    show("pread past the end", pread(fd, buf, 100, size + 100));
    void *none = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("pread into PROT_NONE", pread(fd, none, 1024, 0));
    char *ro = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("pread into read-only memory", pread(fd, ro, 1024, 0));
    /* A fresh anonymous page is fine: the call populates it. */
    char *fresh = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ssize_t n = pread(fd, fresh, 1024, 0);
    printf("pread into a fresh page: %zd, checksum %016llx\n", n,
           (unsigned long long)fnv((unsigned char *)fresh, 1024, 0xcbf29ce484222325ull));
    show("pread negative offset", pread(fd, buf, 10, -1));
    close(fd);
    show("pread closed fd", pread(fd, buf, 10, 0));
    int d = open("/", O_RDONLY | O_DIRECTORY);
    show("read directory", read(d, buf, 10));
    show("pread directory", pread(d, buf, 10, 0));
    close(d);
}

static volatile int stop;
static volatile long got;
static void on_rt(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)si; (void)uc;
    got++;
}
static volatile pid_t spinner_tid;
static void *spinner(void *arg) {
    (void)arg;
    spinner_tid = gettid();
    long sum = 0;
    while (!stop) sum += getpid();
    sched_yield();
    return (void *)sum;
}

static void signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMIN, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, spinner, NULL);
    int sent = 0;
    while (!spinner_tid) usleep(100);
    for (int i = 0; i < 2000; i++) {
        if (syscall(SYS_tgkill, getpid(), spinner_tid, SIGRTMIN) == 0) sent++;
        if (i % 50 == 0) usleep(100);
    }
    while (got < sent) usleep(1000);
    stop = 1;
    pthread_join(t, NULL);
    printf("signals: sent %d, delivered %ld\n", sent, got);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: direct FILE\n"); return 2; }
    registers();
    identity();
    reads(argv[1]);
    signals();
    return 0;
}
