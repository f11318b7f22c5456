/* The mmap rules a Linux program relies on, one check per line of output.
 * argv[1] is a writable directory for the file-backed cases. Exits 0 when
 * every check passed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define FILE_SIZE 10000 /* two full pages and a partial third */

static long page;
static int failures;
static sigjmp_buf env;
static volatile int last_sig, last_code;
static void *volatile last_addr;

static void on_fault(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    last_sig = sig;
    last_code = si->si_code;
    last_addr = si->si_addr;
    siglongjmp(env, 1);
}

/* Reads one byte; returns -1 (with last_sig etc. set) if that faulted. */
static int probe_read(volatile char *p) {
    last_sig = 0;
    if (sigsetjmp(env, 1) == 0)
        return (unsigned char)*p;
    return -1;
}

static int probe_write(volatile char *p, char v) {
    last_sig = 0;
    if (sigsetjmp(env, 1) == 0) {
        *p = v;
        return 0;
    }
    return -1;
}

static void result(const char *what, int ok) {
    printf("%-34s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok)
        failures++;
}

static char *anon(size_t len, int prot) {
    char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static char file_byte(size_t i) { return (char)('a' + (i * 7 + i / 4096) % 26); }

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: mmap DIR\n");
        return 2;
    }
    page = sysconf(_SC_PAGESIZE);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);

    char path[4096];
    snprintf(path, sizeof path, "%s/mmap-data.bin", argv[1]);
    static char data[FILE_SIZE];
    for (size_t i = 0; i < FILE_SIZE; i++)
        data[i] = file_byte(i);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, FILE_SIZE) != FILE_SIZE) {
        perror(path);
        return 1;
    }

    /* 1. Anonymous private memory starts zeroed and keeps what is written. */
    {
        size_t len = 1 << 20;
        char *p = anon(len, PROT_READ | PROT_WRITE);
        int zero = 1;
        for (size_t i = 0; i < len; i += 512)
            zero &= p[i] == 0;
        for (size_t i = 0; i < len; i++)
            p[i] = (char)(i * 13);
        int same = 1;
        for (size_t i = 0; i < len; i++)
            same &= p[i] == (char)(i * 13);
        result("anonymous private", zero && same && munmap(p, len) == 0);
    }

    /* 2. A private file mapping: the file's bytes, writes stay private. */
    {
        char *p = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        int ok = p != MAP_FAILED && memcmp(p, data, FILE_SIZE) == 0;
        if (ok) {
            p[0] = 'Z';
            p[5000] = 'Z';
            char b[2];
            ok = pread(fd, b, 1, 0) == 1 && b[0] == data[0] && pread(fd, b, 1, 5000) == 1 &&
                 b[0] == data[5000] && p[0] == 'Z';
            /* The tail of the last page, past the end of the file, reads 0. */
            for (long i = FILE_SIZE; i < 3 * page; i++)
                ok &= p[i] == 0;
            munmap(p, FILE_SIZE);
        }
        result("file private (copy on write)", ok);
    }

    /* 3. A shared read-only file mapping at an offset. */
    {
        char *p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, fd, page);
        int ok = p != MAP_FAILED && memcmp(p, data + page, FILE_SIZE - page) == 0;
        /* Writing to it faults with SEGV_ACCERR. */
        ok = ok && probe_write(p + 100, 'x') == -1 && last_sig == SIGSEGV &&
             last_code == SEGV_ACCERR && last_addr == p + 100;
        if (p != MAP_FAILED)
            munmap(p, 2 * page);
        result("file shared read-only", ok);
    }

    /* 4. MAP_FIXED replaces part of an existing mapping. */
    {
        char *p = anon(4 * page, PROT_READ | PROT_WRITE);
        memset(p, 'A', 4 * page);
        char *q = mmap(p + page, 2 * page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        int ok = q == p + page && p[0] == 'A' && p[page - 1] == 'A' && p[page] == 0 &&
                 p[3 * page - 1] == 0 && p[3 * page] == 'A' && p[4 * page - 1] == 'A';
        munmap(p, 4 * page);
        result("MAP_FIXED over a mapping", ok);
    }

    /* 5. MAP_FIXED_NOREPLACE: EEXIST on overlap, the exact address when free. */
    {
        char *p = anon(4 * page, PROT_READ | PROT_WRITE);
        p[page] = 'k';
        errno = 0;
        char *q = mmap(p + page, page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        int overlap_ok = q == MAP_FAILED && errno == EEXIST && p[page] == 'k';
        munmap(p + 2 * page, 2 * page);
        char *r = mmap(p + 2 * page, 2 * page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        int free_ok = r == p + 2 * page && r[0] == 0;
        munmap(p, 4 * page);
        result("MAP_FIXED_NOREPLACE", overlap_ok && free_ok);
    }

    /* 6. A 16 GiB MAP_NORESERVE reservation, a few pages of it touched. */
    {
        size_t len = (size_t)16 << 30;
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        int ok = p != MAP_FAILED;
        if (ok) {
            size_t offs[] = {0, page, len / 3, len / 2 + 17, len - page, len - 1};
            for (int i = 0; i < 6; i++)
                p[offs[i]] = (char)(i + 1);
            for (int i = 0; i < 6; i++)
                ok &= p[offs[i]] == (char)(i + 1);
            ok &= p[2 * page] == 0 && p[len / 4] == 0;
            ok &= munmap(p, len) == 0;
        }
        result("MAP_NORESERVE 16 GiB", ok);
    }

    /* 7. A hint is honoured when the range is free. */
    {
        char *probe = anon(16 * page, PROT_READ);
        munmap(probe, 16 * page);
        char *want = probe + 4 * page;
        char *p = mmap(want, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int ok = p == want;
        if (p != MAP_FAILED)
            munmap(p, 2 * page);
        /* A far hint in the middle of the address space, too. */
        char *far = (char *)(uintptr_t)0x200000000000ULL;
        p = mmap(far, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ok &= p == far;
        if (p != MAP_FAILED) {
            p[0] = 1;
            munmap(p, page);
        }
        result("hint honoured when free", ok);
    }

    /* 8. munmap of a range in the middle: the rest stays, the hole faults. */
    {
        char *p = anon(8 * page, PROT_READ | PROT_WRITE);
        for (int i = 0; i < 8; i++)
            p[i * page] = (char)('0' + i);
        int ok = munmap(p + 3 * page, 2 * page) == 0;
        for (int i = 0; i < 8; i++) {
            if (i == 3 || i == 4)
                continue;
            ok &= p[i * page] == (char)('0' + i);
            p[i * page + 1] = 'w';
        }
        ok &= probe_read(p + 3 * page + 5) == -1 && last_sig == SIGSEGV &&
              last_code == SEGV_MAPERR && last_addr == p + 3 * page + 5;
        ok &= probe_read(p + 5 * page - 1) == -1 && last_sig == SIGSEGV;
        ok &= probe_read(p + 5 * page) == '5';
        munmap(p, 8 * page);
        result("munmap in the middle", ok);
    }

    /* 9. mprotect to PROT_NONE faults (SEGV_ACCERR); back to RW keeps data. */
    {
        char *p = anon(3 * page, PROT_READ | PROT_WRITE);
        memset(p, 'm', 3 * page);
        int ok = mprotect(p + page, page, PROT_NONE) == 0;
        ok &= probe_read(p + page + 9) == -1 && last_sig == SIGSEGV &&
              last_code == SEGV_ACCERR && last_addr == p + page + 9;
        ok &= probe_write(p + page, 'x') == -1 && last_sig == SIGSEGV;
        ok &= p[0] == 'm' && p[2 * page] == 'm';
        ok &= mprotect(p + page, page, PROT_READ | PROT_WRITE) == 0;
        ok &= probe_read(p + page + 9) == 'm';
        ok &= probe_write(p + page, 'y') == 0 && p[page] == 'y';
        /* Read-only: reads work, writes fault. */
        ok &= mprotect(p, page, PROT_READ) == 0 && probe_read(p) == 'm' &&
              probe_write(p, 'z') == -1 && last_code == SEGV_ACCERR && p[0] == 'm';
        /* Writable again after a read cached the read-only translation:
         * the write succeeds (no stale-TLB signal). */
        ok &= probe_read(p + 1) == 'm' && mprotect(p, page, PROT_READ | PROT_WRITE) == 0 &&
              probe_write(p, 'w') == 0 && p[0] == 'w';
        munmap(p, 3 * page);
        result("mprotect NONE then RW", ok);
    }

    /* 10. madvise(MADV_DONTNEED) zeroes anonymous private pages. */
    {
        char *p = anon(4 * page, PROT_READ | PROT_WRITE);
        memset(p, 'd', 4 * page);
        int ok = madvise(p + page, 2 * page, MADV_DONTNEED) == 0;
        ok &= p[0] == 'd' && p[page] == 0 && p[2 * page + 100] == 0 && p[3 * page - 1] == 0 &&
              p[3 * page] == 'd';
        p[page] = 'n';
        ok &= p[page] == 'n';
        munmap(p, 4 * page);
        result("MADV_DONTNEED zeroes", ok);
    }

    /* 10b. The same over more used pages than the library OS zeroes in
     * place (32), with unused pages between: every page reads zero, then
     * keeps what is written. */
    {
        size_t n = 96;
        char *p = anon(n * page, PROT_READ | PROT_WRITE);
        for (size_t i = 0; i < n; i++)
            if (i % 3 != 1)
                p[i * page + i] = 'u';
        int ok = madvise(p, n * page, MADV_DONTNEED) == 0;
        for (size_t i = 0; i < n; i++)
            ok &= p[i * page + i] == 0 && p[i * page + page - 1] == 0;
        for (size_t i = 0; i < n; i++)
            p[i * page + 7] = (char)('a' + i % 26);
        for (size_t i = 0; i < n; i++)
            ok &= p[i * page + 7] == (char)('a' + i % 26);
        munmap(p, n * page);
        result("MADV_DONTNEED of many used pages", ok);
    }

    /* 11. brk grows the heap (raw syscall: musl's brk/sbrk refuse to). */
    {
        char *cur = (char *)syscall(SYS_brk, 0);
        size_t grow = 1 << 20;
        char *top = (char *)syscall(SYS_brk, cur + grow);
        int ok = top == cur + grow;
        if (ok) {
            for (size_t i = 0; i < grow; i += 64)
                ok &= cur[i] == 0;
            memset(cur, 'b', grow);
            ok &= cur[grow - 1] == 'b';
            ok &= (char *)syscall(SYS_brk, 0) == cur + grow;
            ok &= (char *)syscall(SYS_brk, cur) == cur;
        }
        result("brk growth", ok);
    }

    /* 12. A file mapping outlives close() of its descriptor. */
    {
        int fd2 = open(path, O_RDONLY);
        char *p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd2, 0);
        close(fd2);
        int ok = p != MAP_FAILED && memcmp(p, data, FILE_SIZE) == 0;
        if (p != MAP_FAILED)
            munmap(p, FILE_SIZE);
        result("file mapping outlives close()", ok);
    }

    /* 13. SIGBUS (BUS_ADRERR) for a page wholly past the end of the file;
     * the rest of the last partial page reads as zeros. */
    {
        char *p = mmap(NULL, 4 * page, PROT_READ, MAP_SHARED, fd, 0);
        int ok = p != MAP_FAILED;
        if (ok) {
            ok &= probe_read(p + FILE_SIZE - 1) == (unsigned char)data[FILE_SIZE - 1];
            ok &= probe_read(p + FILE_SIZE + 1) == 0;
            ok &= probe_read(p + 3 * page + 12) == -1 && last_sig == SIGBUS &&
                  last_code == BUS_ADRERR && last_addr == p + 3 * page + 12;
            munmap(p, 4 * page);
        }
        result("SIGBUS past end of file", ok);
    }

    /* A shared mapping through a read-only descriptor cannot be made
     * writable (EACCES, Linux's VM_MAYWRITE); a private one can. */
    {
        int ro = open(path, O_RDONLY);
        char *s = mmap(NULL, page, PROT_READ, MAP_SHARED, ro, 0);
        char *q = mmap(NULL, page, PROT_READ, MAP_PRIVATE, ro, 0);
        errno = 0;
        int rs = s == MAP_FAILED ? -2 : mprotect(s, page, PROT_READ | PROT_WRITE);
        int es = errno;
        int rq = q == MAP_FAILED ? -2 : mprotect(q, page, PROT_READ | PROT_WRITE);
        result("mprotect rw: read-only fd, shared", rs == -1 && es == EACCES);
        result("mprotect rw: read-only fd, private", rq == 0);
        if (s != MAP_FAILED)
            munmap(s, page);
        if (q != MAP_FAILED)
            munmap(q, page);
        close(ro);
    }

    close(fd);
    unlink(path);
    if (failures) {
        fprintf(stderr, "mmap: %d FAILED\n", failures);
        return 1;
    }
    printf("mmap: ok\n");
    return 0;
}
