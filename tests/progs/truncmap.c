/* A file shrinks under its mapping: touching a page wholly past the new
 * end raises SIGBUS (BUS_ADRERR at the touched address), the partial last
 * page reads zeros past the end, and pages inside the file read its bytes;
 * after the file grows again, the new pages read zeros. Only pages that
 * were not mapped before the size changed are checked: a partition keeps
 * the pages it already mapped, and a fault maps the aligned 64 KiB around
 * the touched page (see docs/linux.md), so page 0 is touched before the
 * change and pages from 16 on after it.
 *
 *   truncmap DIR shared|private self|host
 *
 * With "self" the program changes the size itself through a second path
 * (truncate(2) by name, ftruncate(2) on another descriptor); with "host"
 * it creates DIR/ready.N and waits for DIR/go.N, and the test changes the
 * size from the host meanwhile (N = 1: to 20 pages + 100 bytes, N = 2:
 * to 30 pages). */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PG 4096
#define PAGES 40

static sigjmp_buf env;
static volatile void *fault_addr;
static volatile int fault_sig, fault_code;
static volatile unsigned char *map;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    fault_sig = sig;
    fault_code = si->si_code;
    fault_addr = si->si_addr;
    siglongjmp(env, 1);
}

static void touch(const char *what, size_t off)
{
    volatile unsigned char *p = map + off;
    fault_sig = 0;
    if (sigsetjmp(env, 1) == 0) {
        unsigned char c = *p;
        if (c >= 'a' && c <= 'z')
            printf("%-28s offset %6zu: '%c'\n", what, off, c);
        else
            printf("%-28s offset %6zu: %d\n", what, off, c);
    } else {
        printf("%-28s offset %6zu: %s code=%s addr=%s\n", what, off,
               fault_sig == SIGBUS ? "SIGBUS" : fault_sig == SIGSEGV ? "SIGSEGV" : "signal",
               fault_code == BUS_ADRERR ? "BUS_ADRERR" : "other",
               fault_addr == (void *)p ? "exact" : "other");
    }
}

static void wait_host(const char *dir, int n)
{
    char ready[4096], go[4096];
    snprintf(ready, sizeof ready, "%s/ready.%d", dir, n);
    snprintf(go, sizeof go, "%s/go.%d", dir, n);
    int fd = open(ready, O_WRONLY | O_CREAT, 0644);
    if (fd < 0) {
        perror(ready);
        exit(1);
    }
    close(fd);
    struct stat st;
    for (int i = 0; stat(go, &st) != 0; i++) {
        if (i > 3000) {
            fprintf(stderr, "no %s after 30 s\n", go);
            exit(1);
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: truncmap DIR shared|private self|host\n");
        return 2;
    }
    const char *dir = argv[1];
    int shared = strcmp(argv[2], "shared") == 0;
    int self = strcmp(argv[3], "self") == 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/t.bin", dir);

    static char page[PG];
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    for (int i = 0; i < PAGES; i++) {
        memset(page, 'a' + i % 26, PG);
        if (write(fd, page, PG) != PG) {
            perror("write");
            return 1;
        }
    }
    close(fd);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);

    fd = open(path, O_RDONLY);
    map = mmap(NULL, PAGES * PG, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    printf("%s mapping of %d pages, size changed by %s\n", shared ? "shared" : "private",
           PAGES, self ? "the program" : "the host");
    touch("before: page 0", 0);

    /* Shrink to 20 pages and 100 bytes. */
    if (self) {
        if (truncate(path, 20 * PG + 100) != 0) {
            perror("truncate");
            return 1;
        }
    } else {
        wait_host(dir, 1);
    }
    touch("shrunk: page 17", 17 * PG + 7);
    touch("shrunk: last page, in file", 20 * PG + 50);
    touch("shrunk: last page, past end", 20 * PG + 200);
    touch("shrunk: page 21", 21 * PG);
    touch("shrunk: page 39", 39 * PG + 4095);

    /* Grow to 30 pages: the new part is a hole. */
    if (self) {
        int fd2 = open(path, O_WRONLY);
        if (fd2 < 0 || ftruncate(fd2, 30 * PG) != 0) {
            perror("ftruncate");
            return 1;
        }
        close(fd2);
    } else {
        wait_host(dir, 2);
    }
    touch("grown: page 25", 25 * PG + 1);
    touch("grown: page 30", 30 * PG);
    munmap((void *)map, PAGES * PG);
    close(fd);
    unlink(path);
    return 0;
}
