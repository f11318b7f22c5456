/* memfd_create: a memory-only file, mapped shared at several addresses (as
 * ZGC maps its heap), read and written through the descriptor, grown by
 * ftruncate and fallocate, holes punched, shrunk (SIGBUS past the end),
 * privately mapped, fstat/fstatfs/lseek/pread/pwrite, and its
 * /proc/self/fd link, seals, mprotect of shared mappings, reopening
 * through /proc/self/fd. Output compared with the host's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errname.h"

#define PG 4096
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

static sigjmp_buf jb;
static void on_bus(int sig)
{
    siglongjmp(jb, sig);
}

/* 1 if reading the byte at p raises SIGBUS, else 0 (and the byte in *v). */
static int bus_at(volatile char *p, int *v)
{
    int sig = sigsetjmp(jb, 1);
    if (sig)
        return sig == SIGBUS ? 1 : 2;
    *v = *p;
    return 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_bus;
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);

    int fd = (int)syscall(SYS_memfd_create, "astraea-test", MFD_CLOEXEC);
    printf("memfd_create: %s, cloexec %d\n", fd >= 0 ? "ok" : errname(errno),
           (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    struct stat st;
    fstat(fd, &st);
    printf("fstat: regular %d, mode %o, size %lld, nlink %ld\n", S_ISREG(st.st_mode),
           st.st_mode & 0777, (long long)st.st_size, (long)st.st_nlink);
    struct statfs sf;
    fstatfs(fd, &sf);
    printf("fstatfs: tmpfs %d, bsize %ld\n", sf.f_type == 0x01021994, (long)sf.f_bsize);
    char link[256] = {0}, path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t ln = readlink(path, link, sizeof link - 1);
    printf("link: %zd %s\n", ln, link);
    int r = (int)syscall(SYS_memfd_create, "x", 0x1000);
    printf("bad flags: %d %s\n", r, errname(errno));

    /* Writes and reads through the descriptor. */
    char buf[100];
    memset(buf, 'a', sizeof buf);
    printf("write: %zd\n", write(fd, buf, sizeof buf));
    printf("lseek end: %lld\n", (long long)lseek(fd, 0, SEEK_END));
    printf("pwrite at 5000: %zd\n", pwrite(fd, "hello", 5, 5000));
    fstat(fd, &st);
    printf("size after pwrite: %lld\n", (long long)st.st_size);
    memset(buf, 'x', sizeof buf);
    ssize_t n = pread(fd, buf, 10, 4995);
    printf("pread 10 at 4995: %zd [%.5s] (zeros before: %d)\n", n, buf + 5, buf[0] == 0 && buf[4] == 0);
    lseek(fd, 98, SEEK_SET);
    n = read(fd, buf, 3);
    printf("read at 98: %zd [%c%c%c]\n", n, buf[0], buf[1], buf[2] == 0 ? '0' : buf[2]);

    /* Size by ftruncate, then two shared mappings of the same pages. */
    printf("ftruncate 3 pages + 100: %d\n", ftruncate(fd, 3 * PG + 100));
    char *p1 = mmap(NULL, 5 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *p2 = mmap(NULL, 5 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("two mappings: %d\n", p1 != MAP_FAILED && p2 != MAP_FAILED && p1 != p2);
    printf("p2 sees the file: [%.5s] %c\n", p2 + 5000, p2[0]);
    strcpy(p1 + 2 * PG, "through p1");
    printf("p2 sees p1's store: [%s]\n", p2 + 2 * PG);
    pread(fd, buf, 10, 2 * PG);
    printf("pread sees it: [%.10s]\n", buf);
    pwrite(fd, "PW", 2, 3 * PG);
    printf("mappings see pwrite: %c%c %c%c\n", p1[3 * PG], p1[3 * PG + 1], p2[3 * PG], p2[3 * PG + 1]);
    int v = 0;
    printf("last page, in the file: bus %d\n", bus_at(p1 + 3 * PG + 50, &v));
    printf("page past the end: bus %d\n", bus_at(p1 + 4 * PG, &v));

    /* A third mapping of one page at a fixed place, offset 2 pages (ZGC's
     * views of one heap). */
    char *area = mmap(NULL, 8 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    char *p3 = mmap(area + 4 * PG, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 2 * PG);
    printf("fixed view: %d [%s]\n", p3 == area + 4 * PG, p3);
    p3[0] = 'T';
    printf("p1 sees the view's store: %c\n", p1[2 * PG]);
    /* Unmapped back to a reservation, as ZGC does. */
    mmap(area + 4 * PG, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    printf("the store stays: %c\n", p2[2 * PG]);

    /* A private mapping copies on write. */
    char *pp = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 2 * PG);
    printf("private sees: %c\n", pp[0]);
    pp[1] = 'P';
    printf("after a private store: private %c, shared %c\n", pp[1], p1[2 * PG + 1]);
    p1[2 * PG + 2] = 'S';
    printf("shared store on a page the private one copied: private sees %c\n", pp[2]);

    /* fallocate: room, a hole, refused modes. */
    printf("fallocate 16 pages: %d\n", fallocate(fd, 0, 0, 16 * PG));
    fstat(fd, &st);
    printf("size: %lld\n", (long long)st.st_size);
    printf("now inside: bus %d\n", bus_at(p1 + 4 * PG, &v));
    printf("punch hole page 2: %d\n", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * PG, PG));
    printf("hole reads zeros: %d %d, page 3 kept: %c\n", p1[2 * PG], p2[2 * PG + 5], p1[3 * PG]);
    fstat(fd, &st);
    printf("size kept: %lld\n", (long long)st.st_size);
    r = fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, PG);
    printf("punch without keep size: %d %s\n", r, errname(errno));

    /* Shrinking: pages past the end are SIGBUS in the mappings. */
    printf("ftruncate 1 page: %d\n", ftruncate(fd, PG));
    int b0 = bus_at(p1, &v);
    int v0 = v;
    int b1 = bus_at(p2 + PG, &v);
    int b3 = bus_at(p1 + 3 * PG, &v);
    printf("page 0: bus %d (%c), page 1: bus %d, page 3: bus %d\n", b0, v0, b1, b3);
    r = ftruncate(fd, 4 * PG);
    v = -1;
    b3 = bus_at(p1 + 3 * PG, &v);
    printf("grow again: %d, page 3 reads zero: bus %d value %d\n", r, b3, v);

    /* The mappings outlive the descriptor. */
    close(fd);
    p1[10] = 'Z';
    printf("after close: %c %c\n", p2[10], p2[0]);
    munmap(p1, 5 * PG);
    munmap(p2, 5 * PG);
    munmap(pp, 2 * PG);
    munmap(area, 8 * PG);

    /* Many files, each its own. */
    int ok = 0;
    for (int i = 0; i < 50; i++) {
        int f = (int)syscall(SYS_memfd_create, "many", 0);
        ftruncate(f, PG);
        char *m = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        m[0] = (char)i;
        char c = 0;
        pread(f, &c, 1, 0);
        ok += c == (char)i;
        munmap(m, PG);
        close(f);
    }
    printf("50 files: %d right\n", ok);

    /* Seals (fcntl F_ADD_SEALS / F_GET_SEALS), each result then its errno. */
#define SHOW(what, expr) do { errno = 0; long r_ = (long)(expr); \
        printf("%s: %ld %s\n", what, r_, r_ < 0 ? errname(errno) : ""); } while (0)
    int unsealable = (int)syscall(SYS_memfd_create, "plain", 0);
    int s = (int)syscall(SYS_memfd_create, "sealed", 2 /* MFD_ALLOW_SEALING */);
    SHOW("seals without MFD_ALLOW_SEALING", fcntl(unsealable, F_GET_SEALS));
    SHOW("seals with it", fcntl(s, F_GET_SEALS));
    SHOW("add to the unsealable one", fcntl(unsealable, F_ADD_SEALS, F_SEAL_SHRINK));
    int pp2[2];
    pipe(pp2);
    SHOW("seals of a pipe", fcntl(pp2[0], F_GET_SEALS));
    SHOW("unknown seal", fcntl(s, F_ADD_SEALS, 0x4000));
    ftruncate(s, 2 * PG);
    SHOW("add shrink+grow", fcntl(s, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW));
    SHOW("shrink", ftruncate(s, PG));
    SHOW("grow", ftruncate(s, 3 * PG));
    SHOW("same size", ftruncate(s, 2 * PG));
    SHOW("write past the end", pwrite(s, "x", 1, 2 * PG));
    SHOW("write inside", pwrite(s, "x", 1, 10));
    SHOW("fallocate past the end", fallocate(s, 0, 0, 3 * PG));
    char *w = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
    SHOW("add write with a writable shared mapping", fcntl(s, F_ADD_SEALS, F_SEAL_WRITE));
    munmap(w, PG);
    SHOW("add write", fcntl(s, F_ADD_SEALS, F_SEAL_WRITE));
    SHOW("write sealed", pwrite(s, "y", 1, 10));
    SHOW("punch a hole", fallocate(s, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG));
    errno = 0;
    w = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
    printf("shared writable mapping: %s\n", w == MAP_FAILED ? errname(errno) : "mapped");
    w = mmap(NULL, PG, PROT_READ, MAP_SHARED, s, 0);
    SHOW("shared read-only mapping", w == MAP_FAILED ? -1 : (long)w[10]);
    char c2 = 0;
    pread(s, &c2, 1, 10);
    printf("byte 10: %c\n", c2);
    SHOW("add seal", fcntl(s, F_ADD_SEALS, F_SEAL_SEAL));
    SHOW("add after it", fcntl(s, F_ADD_SEALS, F_SEAL_GROW));
    SHOW("seals now", fcntl(s, F_GET_SEALS));

    /* mprotect adds write access to a shared mapping only where the file
     * could have been mapped writable (Linux's VM_MAYWRITE): not through a
     * read-only descriptor, not once sealed against writes; and a shared
     * mapping that may become writable blocks F_SEAL_WRITE. */
    SHOW("mprotect rw, sealed before the mapping",
         w == MAP_FAILED ? -1 : mprotect(w, PG, PROT_READ | PROT_WRITE));
    int u = (int)syscall(SYS_memfd_create, "mayw", 2 /* MFD_ALLOW_SEALING */);
    SHOW("size", ftruncate(u, PG));
    char *mr = mmap(NULL, PG, PROT_READ, MAP_SHARED, u, 0);
    SHOW("add write with a read-only shared mapping", fcntl(u, F_ADD_SEALS, F_SEAL_WRITE));
    SHOW("add future write", fcntl(u, F_ADD_SEALS, F_SEAL_FUTURE_WRITE));
    SHOW("mprotect rw, mapped before the seal", mprotect(mr, PG, PROT_READ | PROT_WRITE));
    char *mr2 = mmap(NULL, PG, PROT_READ, MAP_SHARED, u, 0);
    SHOW("mprotect rw, mapped after the seal",
         mr2 == MAP_FAILED ? -1 : mprotect(mr2, PG, PROT_READ | PROT_WRITE));
    char *mp2 = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, u, 0);
    SHOW("mprotect rw, private", mp2 == MAP_FAILED ? -1 : mprotect(mp2, PG, PROT_READ | PROT_WRITE));
    /* Opening /proc/self/fd/N makes a new open file description: its own
     * access mode and position. */
    int rv = (int)syscall(SYS_memfd_create, "reopen", 0);
    SHOW("write 6", write(rv, "abcdef", 6));
    snprintf(path, sizeof path, "/proc/self/fd/%d", rv);
    int ro = open(path, O_RDONLY);
    SHOW("reopen read-only", ro < 0 ? -1 : 0);
    char two[3] = {0};
    SHOW("read 2 from the new description", read(ro, two, 2));
    printf("read: %s, old position %ld\n", two, (long)lseek(rv, 0, SEEK_CUR));
    SHOW("write through it", write(ro, "x", 1));
    char *q = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
    SHOW("mprotect rw of its shared mapping",
         q == MAP_FAILED ? -1 : mprotect(q, PG, PROT_READ | PROT_WRITE));
    SHOW("shared writable mapping of it",
         mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0) == MAP_FAILED ? -1 : 0);
    int tr = open(path, O_RDWR | O_TRUNC);
    SHOW("reopen with O_TRUNC", tr < 0 ? -1 : 0);
    fstat(rv, &st);
    printf("size after: %ld\n", (long)st.st_size);

    /* sendfile and copy_file_range with memfds (Java's transferTo of a
     * memory-only file): sendfile copies between any of them and a file;
     * copy_file_range within tmpfs, but EXDEV to another file system. */
    int ma = (int)syscall(SYS_memfd_create, "xa", 0), mb = (int)syscall(SYS_memfd_create, "xb", 0);
    SHOW("write 11", write(ma, "hello world", 11));
    int hf = open("memfd-copy.out", O_RDWR | O_CREAT | O_TRUNC, 0644);
    SHOW("write 3 to a file", write(hf, "abc", 3));
    off_t so = 0;
    SHOW("sendfile memfd to file", sendfile(hf, ma, &so, 11));
    so = 0;
    SHOW("sendfile memfd to memfd", sendfile(mb, ma, &so, 11));
    SHOW("sendfile file to memfd, its position", sendfile(mb, hf, NULL, 100));
    lseek(hf, 0, SEEK_SET);
    SHOW("sendfile file from its start", sendfile(mb, hf, NULL, 100));
    SHOW("sendfile memfd at its position", sendfile(hf, ma, NULL, 4));
    printf("positions: %ld %ld %ld\n", (long)lseek(ma, 0, SEEK_CUR), (long)lseek(mb, 0, SEEK_CUR),
           (long)lseek(hf, 0, SEEK_CUR));
    loff_t ca = 6, cb = 0;
    SHOW("copy_file_range memfd to memfd", syscall(SYS_copy_file_range, ma, &ca, mb, &cb, 5, 0));
    printf("offsets: %ld %ld\n", (long)ca, (long)cb);
    ca = 0, cb = 0;
    SHOW("copy_file_range memfd to file", syscall(SYS_copy_file_range, ma, &ca, hf, &cb, 5, 0));
    SHOW("copy_file_range file to memfd", syscall(SYS_copy_file_range, hf, &ca, ma, &cb, 5, 0));
    ca = 0, cb = 2;
    SHOW("copy_file_range memfd overlapping itself", syscall(SYS_copy_file_range, ma, &ca, ma, &cb, 5, 0));
    int px[2];
    pipe(px);
    fcntl(px[1], F_SETFL, O_APPEND);
    so = 0;
    SHOW("sendfile memfd into an O_APPEND pipe", sendfile(px[1], ma, &so, 5));
    SHOW("sendfile memfd into an O_APPEND memfd",
         (fcntl(mb, F_SETFL, O_APPEND), sendfile(mb, ma, &so, 5)));
    fcntl(mb, F_SETFL, 0);
    char all[64] = {0};
    pread(mb, all, sizeof all - 1, 0);
    printf("memfd: %s\n", all);
    memset(all, 0, sizeof all);
    pread(hf, all, sizeof all - 1, 0);
    printf("file: %s\n", all);
    close(hf);
    unlink("memfd-copy.out");
    return 0;
}
