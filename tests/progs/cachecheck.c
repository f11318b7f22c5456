/* The file cache's semantics seen by a program (tests/tests/cache.rs).
 *
 *   cachecheck mmap FILE
 *       private and shared mappings of a file against pread of the same
 *       bytes: a write to a private mapping stays private.
 *   cachecheck erofs FILE DIR
 *       every way of writing to a file (and directory) on a read-only mount
 *       is refused; the file reads the same before and after.
 *   cachecheck stale FILE REPLACED RWDIR
 *       reads FILE's first page and REPLACED's, creates RWDIR/ready, waits
 *       (nanosleep) for RWDIR/go while the host changes FILE in place and
 *       replaces REPLACED with a new file, then reads again. FILE's pages
 *       are filled with one letter each; what is printed is that letter
 *       ('?' if a page is not uniform).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096L

static uint64_t fnv(const unsigned char *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static const char *err(int e) {
    switch (e) {
    case 0: return "ok";
    case EROFS: return "EROFS";
    case EACCES: return "EACCES";
    case EBADF: return "EBADF";
    case EPERM: return "EPERM";
    case EEXIST: return "EEXIST";
    case ENOENT: return "ENOENT";
    case EINVAL: return "EINVAL";
    case ENODEV: return "ENODEV";
    default: {
        static char b[32];
        snprintf(b, sizeof b, "errno%d", e);
        return b;
    }
    }
}

static unsigned char *slurp(int fd, size_t size) {
    unsigned char *b = malloc(size + 1);
    size_t done = 0;
    while (done < size) {
        ssize_t n = pread(fd, b + done, size - done, done);
        if (n <= 0)
            break;
        done += n;
    }
    if (done != size) {
        printf("short read %zu of %zu\n", done, size);
        exit(1);
    }
    return b;
}

static int do_mmap(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    struct stat st;
    fstat(fd, &st);
    size_t size = st.st_size;
    unsigned char *want = slurp(fd, size);
    printf("size=%zu pread_fnv=%016llx\n", size, (unsigned long long)fnv(want, size));

    /* A private, writable mapping: reads what pread reads. */
    unsigned char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        printf("mmap private: %s\n", err(errno));
        return 1;
    }
    /* The first touch of this page is a write (copy on write before any
     * read of it through the mapping). */
    size_t w1 = 3 * 65536 + 5 * PAGE + 17;
    p[w1] ^= 0xff;
    printf("private_read_same=%d\n", memcmp(p, want, w1) == 0 &&
                                       memcmp(p + w1 + 1, want + w1 + 1, size - w1 - 1) == 0);
    /* A write after reading: the page was mapped from the cache first. */
    size_t w2 = 65536 + 2 * PAGE;
    memset(p + w2, 0xab, PAGE);
    int mine = p[w1] == (unsigned char)(want[w1] ^ 0xff);
    for (long i = 0; i < PAGE; i++)
        mine &= p[w2 + i] == 0xab;
    printf("private_write_visible=%d\n", mine);
    unsigned char *again = slurp(fd, size);
    printf("pread_after_write_same=%d\n", memcmp(again, want, size) == 0);
    free(again);

    /* Another private mapping and a shared read-only one see the file. */
    unsigned char *q = mmap(0, size, PROT_READ, MAP_PRIVATE, fd, 0);
    unsigned char *s = mmap(0, size, PROT_READ, MAP_SHARED, fd, 0);
    if (q == MAP_FAILED || s == MAP_FAILED) {
        printf("mmap second/shared: %s\n", err(errno));
        return 1;
    }
    printf("second_private_same=%d\n", memcmp(q, want, size) == 0);
    printf("shared_same=%d\n", memcmp(s, want, size) == 0);
    /* The tail of the last page, past the end of the file, reads as zeros. */
    size_t end = (size + PAGE - 1) / PAGE * PAGE;
    int zero = 1;
    for (size_t i = size; i < end; i++)
        zero &= s[i] == 0;
    printf("tail_zero=%d\n", zero);

    /* A mapping at a page offset inside a 64 KiB block. */
    off_t off = 5 * PAGE;
    unsigned char *o = mmap(0, 8 * PAGE, PROT_READ, MAP_SHARED, fd, off);
    printf("offset_same=%d\n", o != MAP_FAILED && memcmp(o, want + off, 8 * PAGE) == 0);

    /* A shared writable mapping of a read-only descriptor is refused. */
    unsigned char *sw = mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("shared_writable=%s\n", sw == MAP_FAILED ? err(errno) : "mapped");
    if (sw != MAP_FAILED) {
        /* Linux refuses the mapping; if it is granted anyway, a write to it
         * must at least not reach the file or the cache. */
        sw[0] ^= 0xff;
        unsigned char b;
        pread(fd, &b, 1, 0);
        printf("shared_writable_write_reaches_file=%d\n", b != want[0]);
        munmap(sw, PAGE);
    }

    /* Unmap everything, map again: the same bytes. */
    munmap(p, size);
    munmap(q, size);
    munmap(s, size);
    munmap(o, 8 * PAGE);
    unsigned char *r = mmap(0, size, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("remap_same=%d\n", r != MAP_FAILED && memcmp(r, want, size) == 0);
    munmap(r, size);
    free(want);
    return 0;
}

static int do_erofs(const char *path, const char *dir) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    struct stat st;
    fstat(fd, &st);
    unsigned char *before = slurp(fd, st.st_size);
    int r;

    errno = 0;
    r = open(path, O_WRONLY);
    printf("open_wronly=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = open(path, O_RDWR);
    printf("open_rdwr=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = open(path, O_WRONLY | O_TRUNC);
    printf("open_trunc=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = write(fd, "x", 1);
    printf("write_rdonly_fd=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = pwrite(fd, "x", 1, 0);
    printf("pwrite_rdonly_fd=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = truncate(path, 0);
    printf("truncate=%s\n", r == 0 ? "ok" : err(errno));
    char name[4096];
    snprintf(name, sizeof name, "%s/new-file", dir);
    errno = 0;
    r = open(name, O_WRONLY | O_CREAT, 0644);
    printf("create=%s\n", r >= 0 ? "ok" : err(errno));
    errno = 0;
    r = unlink(path);
    printf("unlink=%s\n", r == 0 ? "ok" : err(errno));

    unsigned char *after = slurp(fd, st.st_size);
    printf("unchanged=%d\n", memcmp(before, after, st.st_size) == 0);
    return 0;
}

/* The letter a page of `fd` at `off` is filled with, '?' if mixed. */
static char page_letter(int fd, off_t off) {
    unsigned char b[PAGE];
    ssize_t n = pread(fd, b, PAGE, off);
    if (n != PAGE)
        return '!';
    for (long i = 1; i < PAGE; i++)
        if (b[i] != b[0])
            return '?';
    return b[0];
}

static char first_letter(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return '-';
    char c = page_letter(fd, 0);
    close(fd);
    return c;
}

static int do_stale(const char *path, const char *replaced, const char *rw) {
    int fd = open(path, O_RDONLY);
    int rfd = open(replaced, O_RDONLY);
    if (fd < 0 || rfd < 0) {
        perror("open");
        return 1;
    }
    printf("before page0=%c replaced=%c\n", page_letter(fd, 0), page_letter(rfd, 0));
    fflush(stdout);
    char ready[4096], go[4096];
    snprintf(ready, sizeof ready, "%s/ready", rw);
    snprintf(go, sizeof go, "%s/go", rw);
    int m = open(ready, O_WRONLY | O_CREAT, 0644);
    if (m < 0) {
        perror(ready);
        return 1;
    }
    close(m);
    struct timespec ts = {0, 10 * 1000 * 1000};
    int waited = 0;
    while (access(go, F_OK) != 0) {
        nanosleep(&ts, 0);
        if (++waited > 6000) {
            printf("no %s after 60 s\n", go);
            return 1;
        }
    }
    /* Block 0 again (its first page was read; its 8th was not), a block
     * never read before, the same file opened anew, the replaced file
     * through the old descriptor and opened anew. */
    printf("after page0=%c", page_letter(fd, 0));
    printf(" page8=%c", page_letter(fd, 8 * PAGE));
    printf(" block10=%c", page_letter(fd, 10 * 65536));
    printf(" reopened=%c", first_letter(path));
    printf(" replaced_old_fd=%c", page_letter(rfd, 0));
    printf(" replaced_reopened=%c\n", first_letter(replaced));
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "mmap") == 0)
        return do_mmap(argv[2]);
    if (argc == 4 && strcmp(argv[1], "erofs") == 0)
        return do_erofs(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "stale") == 0)
        return do_stale(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: cachecheck mmap FILE | erofs FILE DIR | stale FILE REPLACED RWDIR\n");
    return 2;
}
