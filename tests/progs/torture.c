// Register torture: worker threads load every general-purpose register,
// every vector register (XMM, YMM or ZMM0-31 with the AVX-512 mask
// registers, as the CPU has them) and MXCSR with known values, spin with
// them live — making system calls, faulting pages in and yielding on the
// way, while being preempted and interrupted by signals whose handler
// scrambles every register — and check that every bit survived. A churn
// thread creates short-lived threads (which scramble their own registers)
// while running the same check itself. Any difference is printed with the
// register's name and the program exits 1.
//
// usage: torture [THREADS [ROUNDS [SPIN]]]
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct ctl {
    uint64_t g_in[14];  // rax rbx rcx rdx rsi rdi rbp r8 r9 r10 r11 r12 r13 r14
    uint64_t g_out[14];
    uint64_t count;     // 224
    uint64_t mode;      // 232: 1 syscall, 2 touch pages, 4 yield
    uint64_t page;      // 240
    uint64_t page_end;  // 248
    uint64_t page_start;// 256
    uint32_t mxcsr_in;  // 264
    uint32_t mxcsr_out; // 268
    uint32_t mxcsr_save;// 272
    uint32_t pad0;
    uint64_t vlevel;    // 280: 0 SSE, 1 AVX, 2 AVX-512
    uint64_t k_in[8];   // 288
    uint64_t k_out[8];  // 352
    uint8_t pad1[416 % 64 ? 64 - 416 % 64 : 0];
    uint8_t v_in[32 * 64] __attribute__((aligned(64)));  // 448
    uint8_t v_out[32 * 64] __attribute__((aligned(64))); // 2496
};
_Static_assert(offsetof(struct ctl, count) == 224, "layout");
_Static_assert(offsetof(struct ctl, mxcsr_in) == 264, "layout");
_Static_assert(offsetof(struct ctl, vlevel) == 280, "layout");
_Static_assert(offsetof(struct ctl, k_in) == 288, "layout");
_Static_assert(offsetof(struct ctl, k_out) == 352, "layout");
_Static_assert(offsetof(struct ctl, v_in) == 448, "layout");
_Static_assert(offsetof(struct ctl, v_out) == 2496, "layout");

void regloop(struct ctl *c);
void scramble(void);

#define VLD(n) "movdqu xmm" #n ", [r15 + 448 + " #n " * 64]\n"
#define VST(n) "movdqu [r15 + 2496 + " #n " * 64], xmm" #n "\n"
#define YLD(n) "vmovdqu ymm" #n ", [r15 + 448 + " #n " * 64]\n"
#define YST(n) "vmovdqu [r15 + 2496 + " #n " * 64], ymm" #n "\n"
#define ZLD(n) "vmovdqu64 zmm" #n ", [r15 + 448 + " #n " * 64]\n"
#define ZST(n) "vmovdqu64 [r15 + 2496 + " #n " * 64], zmm" #n "\n"
#define X16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define X32(M) X16(M) M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define KLD(n) "kmovq k" #n ", [r15 + 288 + " #n " * 8]\n"
#define KST(n) "kmovq [r15 + 352 + " #n " * 8], k" #n "\n"
#define K7(M) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define RELOAD_SYSCALL_CLOBBERS \
    "mov rax, [r15 + 0]\n" \
    "mov rcx, [r15 + 16]\n" \
    "mov r11, [r15 + 80]\n"

__asm__(
    ".intel_syntax noprefix\n"
    ".text\n"
    ".globl regloop\n"
    "regloop:\n"
    "push rbx\n push rbp\n push r12\n push r13\n push r14\n push r15\n"
    "mov r15, rdi\n"
    "stmxcsr [r15 + 272]\n"
    "mov rax, [r15 + 280]\n"
    "cmp rax, 2\n je 20f\n"
    "cmp rax, 1\n je 21f\n"
    X16(VLD) "jmp 22f\n"
    "21:\n" X16(YLD) "jmp 22f\n"
    "20:\n" X32(ZLD) K7(KLD)
    "22:\n"
    "ldmxcsr [r15 + 264]\n"
    "mov rax, [r15 + 0]\n mov rbx, [r15 + 8]\n mov rcx, [r15 + 16]\n mov rdx, [r15 + 24]\n"
    "mov rsi, [r15 + 32]\n mov rdi, [r15 + 40]\n mov rbp, [r15 + 48]\n mov r8, [r15 + 56]\n"
    "mov r9, [r15 + 64]\n mov r10, [r15 + 72]\n mov r11, [r15 + 80]\n mov r12, [r15 + 88]\n"
    "mov r13, [r15 + 96]\n mov r14, [r15 + 104]\n"
    "1:\n"
    "test qword ptr [r15 + 232], 1\n jz 2f\n"
    "mov eax, 39\n syscall\n" RELOAD_SYSCALL_CLOBBERS
    "2:\n"
    "test qword ptr [r15 + 232], 2\n jz 3f\n"
    "mov rax, [r15 + 240]\n"
    "cmp rax, [r15 + 248]\n jb 4f\n"
    "mov rax, [r15 + 256]\n"
    "4:\n"
    "mov byte ptr [rax], 0x5a\n"
    "add rax, 4096\n"
    "mov [r15 + 240], rax\n"
    "mov rax, [r15 + 0]\n"
    "3:\n"
    "test qword ptr [r15 + 232], 4\n jz 5f\n"
    "mov eax, 24\n syscall\n" RELOAD_SYSCALL_CLOBBERS
    "5:\n"
    "dec qword ptr [r15 + 224]\n"
    "jnz 1b\n"
    "mov [r15 + 112], rax\n mov [r15 + 120], rbx\n mov [r15 + 128], rcx\n mov [r15 + 136], rdx\n"
    "mov [r15 + 144], rsi\n mov [r15 + 152], rdi\n mov [r15 + 160], rbp\n mov [r15 + 168], r8\n"
    "mov [r15 + 176], r9\n mov [r15 + 184], r10\n mov [r15 + 192], r11\n mov [r15 + 200], r12\n"
    "mov [r15 + 208], r13\n mov [r15 + 216], r14\n"
    "stmxcsr [r15 + 268]\n"
    "ldmxcsr [r15 + 272]\n"
    "mov rax, [r15 + 280]\n"
    "cmp rax, 2\n je 30f\n"
    "cmp rax, 1\n je 31f\n"
    X16(VST) "jmp 32f\n"
    "31:\n" X16(YST) "vzeroupper\n jmp 32f\n"
    "30:\n" X32(ZST) K7(KST) "vzeroupper\n"
    "32:\n"
    "pop r15\n pop r14\n pop r13\n pop r12\n pop rbp\n pop rbx\n"
    "ret\n"
    // Scrambles every register a signal handler can reach (the caller's
    // callee-saved ones are put back; MXCSR is left changed, for sigreturn
    // to undo).
    ".globl scramble\n"
    "scramble:\n"
    "push rbx\n push rbp\n push r12\n push r13\n push r14\n push r15\n"
    "mov rax, 0x0bad0bad0bad0bad\n"
    "mov rbx, rax\n mov rcx, rax\n mov rdx, rax\n mov rsi, rax\n mov rdi, rax\n mov rbp, rax\n"
    "mov r8, rax\n mov r9, rax\n mov r10, rax\n mov r11, rax\n mov r12, rax\n mov r13, rax\n"
    "mov r14, rax\n mov r15, rax\n"
    "movq xmm0, rax\n"
    "pshufd xmm0, xmm0, 0\n"
    ".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n movdqa xmm\\n, xmm0\n .endr\n"
    "mov eax, 0x7fc0\n"
    "push rax\n ldmxcsr [rsp]\n pop rax\n"
    "pop r15\n pop r14\n pop r13\n pop r12\n pop rbp\n pop rbx\n"
    "ret\n"
    ".globl scramble_avx\n"
    "scramble_avx:\n"
    "call scramble\n"
    "vinserti128 ymm0, ymm0, xmm0, 1\n"
    ".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n vmovdqa ymm\\n, ymm0\n .endr\n"
    "ret\n"
    ".globl scramble_avx512\n"
    "scramble_avx512:\n"
    "call scramble_avx\n"
    "vinserti64x4 zmm0, zmm0, ymm0, 1\n"
    ".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
    " vmovdqa64 zmm\\n, zmm0\n .endr\n"
    "mov rax, -1\n kmovq k1, rax\n kmovq k2, rax\n kmovq k3, rax\n kmovq k4, rax\n"
    "kmovq k5, rax\n kmovq k6, rax\n kmovq k7, rax\n"
    "ret\n"
    ".att_syntax prefix\n");

void scramble_avx(void);
void scramble_avx512(void);

static int vlevel;
static atomic_long signals_taken;
static atomic_int failed;
static atomic_int stop_signaller;
static long spin = 4000000;
static int rounds = 30;

static void scramble_level(void) {
    if (vlevel == 2)
        scramble_avx512();
    else if (vlevel == 1)
        scramble_avx();
    else
        scramble();
}

static void on_signal(int sig) {
    (void)sig;
    scramble_level();
    atomic_fetch_add(&signals_taken, 1);
}

static uint64_t next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static const char *gname[14] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp",
                                "r8",  "r9",  "r10", "r11", "r12", "r13", "r14"};

// One check: fresh values, one loop, compare. Returns 0 when all survived.
static int check_once(struct ctl *c, uint64_t *seed, int who, int round, uint64_t mode, long count) {
    for (int i = 0; i < 14; i++)
        c->g_in[i] = next(seed);
    for (size_t i = 0; i < sizeof c->v_in; i += 8) {
        uint64_t v = next(seed);
        memcpy(&c->v_in[i], &v, 8);
    }
    for (int i = 0; i < 8; i++)
        c->k_in[i] = next(seed);
    // Exceptions stay masked; rounding, DAZ, FTZ and the sticky flags vary.
    c->mxcsr_in = 0x1f80 | (uint32_t)(next(seed) & 0xe07f);
    c->mode = mode;
    c->count = (uint64_t)count;
    c->vlevel = (uint64_t)vlevel;
    memset(c->g_out, 0, sizeof c->g_out);
    memset(c->v_out, 0, sizeof c->v_out);
    memset(c->k_out, 0, sizeof c->k_out);
    c->mxcsr_out = 0;
    regloop(c);
    int bad = 0;
    for (int i = 0; i < 14; i++)
        if (c->g_out[i] != c->g_in[i]) {
            fprintf(stderr, "thread %d round %d mode %lu: %s = %#lx, want %#lx\n", who, round,
                    (unsigned long)mode, gname[i], (unsigned long)c->g_out[i],
                    (unsigned long)c->g_in[i]);
            bad = 1;
        }
    int nregs = vlevel == 2 ? 32 : 16;
    int width = vlevel == 2 ? 64 : vlevel == 1 ? 32 : 16;
    for (int r = 0; r < nregs; r++)
        if (memcmp(&c->v_out[r * 64], &c->v_in[r * 64], (size_t)width) != 0) {
            fprintf(stderr, "thread %d round %d mode %lu: %cmm%d differs\n", who, round,
                    (unsigned long)mode, vlevel == 2 ? 'z' : vlevel == 1 ? 'y' : 'x', r);
            bad = 1;
        }
    if (vlevel == 2)
        for (int k = 1; k < 8; k++)
            if (c->k_out[k] != c->k_in[k]) {
                fprintf(stderr, "thread %d round %d: k%d = %#lx, want %#lx\n", who, round, k,
                        (unsigned long)c->k_out[k], (unsigned long)c->k_in[k]);
                bad = 1;
            }
    if (c->mxcsr_out != c->mxcsr_in) {
        fprintf(stderr, "thread %d round %d: mxcsr = %#x, want %#x\n", who, round, c->mxcsr_out,
                c->mxcsr_in);
        bad = 1;
    }
    return bad;
}

#define REGION (256 * 4096)

static struct ctl *new_ctl(void) {
    struct ctl *c = aligned_alloc(64, sizeof(struct ctl));
    memset(c, 0, sizeof *c);
    char *pages = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pages == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    c->page = c->page_start = (uint64_t)pages;
    c->page_end = (uint64_t)pages + REGION;
    return c;
}

static void free_ctl(struct ctl *c) {
    munmap((void *)c->page_start, REGION);
    free(c);
}

static long count_for(uint64_t mode) {
    // System calls and faults cost microseconds in a partition: fewer rounds.
    return mode & 7 ? spin / 400 + 1 : spin;
}

static atomic_int tids[64];

static void *worker(void *arg) {
    int who = (int)(long)arg;
    tids[who] = (int)syscall(SYS_gettid);
    struct ctl *c = new_ctl();
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(who + 1);
    for (int r = 0; r < rounds && !failed; r++) {
        uint64_t mode = (uint64_t)((r + who) % 8);
        if (mode & 2)
            madvise((void *)c->page_start, REGION, MADV_DONTNEED);
        if (check_once(c, &seed, who, r, mode, count_for(mode)))
            failed = 1;
    }
    free_ctl(c);
    return NULL;
}

static void *short_lived(void *arg) {
    struct ctl *c = new_ctl();
    uint64_t seed = (uint64_t)(long)arg * 0x2545f4914f6cdd1dull + 1;
    if (check_once(c, &seed, 1000, 0, 0, 10000))
        failed = 1;
    scramble_level();
    free_ctl(c);
    return NULL;
}

// Creates short-lived threads and, between creations, runs the check
// itself: a new thread must not take or leave its creator's registers.
static void *churn(void *arg) {
    int who = (int)(long)arg;
    struct ctl *c = new_ctl();
    uint64_t seed = 77;
    for (int r = 0; r < rounds * 2 && !failed; r++) {
        pthread_t t;
        if (pthread_create(&t, NULL, short_lived, (void *)(long)r) != 0) {
            perror("pthread_create");
            exit(2);
        }
        if (check_once(c, &seed, who, r, 0, spin / 4))
            failed = 1;
        pthread_join(t, NULL);
    }
    free_ctl(c);
    return NULL;
}

static void *signaller(void *arg) {
    int n = (int)(long)arg;
    uint64_t seed = 12345;
    struct timespec ts = {0, 300000};
    while (!stop_signaller) {
        int tid = tids[next(&seed) % (uint64_t)n];
        if (tid > 0)
            syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2)
        rounds = atoi(argv[2]);
    if (argc > 3)
        spin = atol(argv[3]);
    if (threads < 1 || threads > 60)
        threads = 4;
    __builtin_cpu_init();
    vlevel = __builtin_cpu_supports("avx512bw") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t w[64], ch, sg;
    for (int i = 0; i < threads; i++)
        pthread_create(&w[i], NULL, worker, (void *)(long)i);
    pthread_create(&ch, NULL, churn, (void *)(long)threads);
    pthread_create(&sg, NULL, signaller, (void *)(long)threads);
    for (int i = 0; i < threads; i++)
        pthread_join(w[i], NULL);
    pthread_join(ch, NULL);
    stop_signaller = 1;
    pthread_join(sg, NULL);
    fprintf(stderr, "torture: %ld signals taken, vector level %d\n", (long)signals_taken, vlevel);
    if (failed) {
        printf("torture: registers corrupted\n");
        return 1;
    }
    printf("torture: %d threads, %d rounds: every register intact\n", threads, rounds);
    return 0;
}
