/* File and directory system calls in the directory argv[1]: create, write,
 * pwrite, pread, lseek, ftruncate, fsync, rename, unlink, mkdir, rmdir,
 * getdents64 (listed sorted), stat sizes, dup2 redirection and O_APPEND.
 * Leaves DIR/result/summary.txt (checked from the host) and exits 0 on
 * success. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failures;
static char base[2048];

static const char *at(const char *rel) {
    static char bufs[4][4096];
    static int n;
    char *b = bufs[n++ % 4];
    snprintf(b, 4096, "%s/%s", base, rel);
    return b;
}

static void expect(const char *what, int cond) {
    printf("%-28s %s\n", what, cond ? "ok" : "FAILED");
    if (!cond) {
        fprintf(stderr, "%s: FAILED (errno %d: %s)\n", what, errno, strerror(errno));
        failures++;
    }
}

static long size_of(const char *rel) {
    struct stat st;
    if (stat(at(rel), &st) != 0)
        return -1;
    return (long)st.st_size;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists a directory with raw getdents64, sorted, "." and ".." included;
 * names of directories get a trailing '/'. */
static void list(const char *rel, char *out, size_t outlen) {
    int fd = open(at(rel), O_RDONLY | O_DIRECTORY);
    char *names[64];
    int n = 0;
    char buf[512]; /* small, so that several calls are needed */
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (got < 0) {
            perror("getdents64");
            exit(1);
        }
        if (got == 0)
            break;
        for (long off = 0; off < got;) {
            struct {
                unsigned long long ino;
                long long off;
                unsigned short reclen;
                unsigned char type;
                char name[];
            } *d = (void *)(buf + off);
            if (n < 64) {
                names[n] = malloc(strlen(d->name) + 2);
                strcpy(names[n], d->name);
                if (d->type == DT_DIR)
                    strcat(names[n], "/");
                n++;
            }
            off += d->reclen;
        }
    }
    close(fd);
    qsort(names, n, sizeof names[0], cmp);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        strncat(out, i ? " " : "", outlen - strlen(out) - 1);
        strncat(out, names[i], outlen - strlen(out) - 1);
        free(names[i]);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: files DIR\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    snprintf(base, sizeof base, "%s", argv[1]);

    expect("mkdir work", mkdir(at("work"), 0755) == 0);
    errno = 0;
    expect("mkdir again: EEXIST", mkdir(at("work"), 0755) == -1 && errno == EEXIST);
    expect("mkdir result", mkdir(at("result"), 0755) == 0);

    /* create + write + stat */
    int fd = open(at("work/a.txt"), O_RDWR | O_CREAT | O_EXCL, 0644);
    expect("create a.txt", fd >= 0);
    expect("write", write(fd, "hello, world\n", 13) == 13);
    expect("size after write", size_of("work/a.txt") == 13);

    /* pwrite past the end leaves a hole of zeros; the offset is unchanged */
    expect("pwrite at 20", pwrite(fd, "XY", 2, 20) == 2);
    expect("offset still 13", lseek(fd, 0, SEEK_CUR) == 13);
    expect("size after pwrite", size_of("work/a.txt") == 22);
    char buf[64] = {0};
    expect("pread hole", pread(fd, buf, 9, 13) == 9 &&
                             memcmp(buf, "\0\0\0\0\0\0\0XY", 9) == 0);

    /* lseek */
    expect("lseek SEEK_END", lseek(fd, 0, SEEK_END) == 22);
    expect("lseek SEEK_SET", lseek(fd, 7, SEEK_SET) == 7);
    memset(buf, 0, sizeof buf);
    expect("read after lseek", read(fd, buf, 5) == 5 && strcmp(buf, "world") == 0);
    expect("lseek SEEK_CUR", lseek(fd, -5, SEEK_CUR) == 7);
    errno = 0;
    expect("lseek negative: EINVAL", lseek(fd, -100, SEEK_SET) == -1 && errno == EINVAL);

    /* ftruncate shrinks and grows; fsync */
    expect("ftruncate 5", ftruncate(fd, 5) == 0 && size_of("work/a.txt") == 5);
    expect("ftruncate 4096", ftruncate(fd, 4096) == 0 && size_of("work/a.txt") == 4096);
    memset(buf, 1, sizeof buf);
    expect("grown part reads 0", pread(fd, buf, 8, 100) == 8 &&
                                     memcmp(buf, "\0\0\0\0\0\0\0\0", 8) == 0);
    expect("ftruncate 5 again", ftruncate(fd, 5) == 0);
    expect("fsync", fsync(fd) == 0);
    expect("fdatasync", fdatasync(fd) == 0);
    close(fd);

    /* O_APPEND: every write goes to the end, whatever the offset */
    fd = open(at("work/a.txt"), O_WRONLY | O_APPEND);
    expect("open O_APPEND", fd >= 0);
    lseek(fd, 0, SEEK_SET);
    expect("append 1", write(fd, "+one", 4) == 4);
    lseek(fd, 1, SEEK_SET);
    expect("append 2", write(fd, "+two\n", 5) == 5);
    close(fd);
    fd = open(at("work/a.txt"), O_RDONLY);
    memset(buf, 0, sizeof buf);
    expect("appended content", read(fd, buf, sizeof buf) == 14 &&
                                   strcmp(buf, "hello+one+two\n") == 0);
    close(fd);

    /* rename, over an existing file too */
    fd = open(at("work/b.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    expect("write b.txt", write(fd, "bbbbbbbbbb", 10) == 10);
    close(fd);
    expect("rename a -> c", rename(at("work/a.txt"), at("work/c.txt")) == 0);
    errno = 0;
    expect("a.txt gone: ENOENT", size_of("work/a.txt") == -1 && errno == ENOENT);
    expect("rename c over b", rename(at("work/c.txt"), at("work/b.txt")) == 0);
    expect("b has c's size", size_of("work/b.txt") == 14);

    /* mkdir / rmdir; rmdir of a non-empty directory fails */
    expect("mkdir sub", mkdir(at("work/sub"), 0755) == 0);
    expect("mkdir sub/deeper", mkdir(at("work/sub/deeper"), 0700) == 0);
    errno = 0;
    expect("rmdir non-empty: ENOTEMPTY", rmdir(at("work/sub")) == -1 &&
                                              (errno == ENOTEMPTY || errno == EEXIST));
    expect("rmdir deeper", rmdir(at("work/sub/deeper")) == 0);
    struct stat st;
    expect("stat sub is a dir", stat(at("work/sub"), &st) == 0 && S_ISDIR(st.st_mode));

    /* several files for the listing */
    const char *names[] = {"zeta", "alpha", "Mid", "num10", "num2", "long-name-of-a-file.txt"};
    for (int i = 0; i < 6; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "work/%s", names[i]);
        int f = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        for (int k = 0; k <= i; k++)
            if (write(f, names[i], strlen(names[i])) < 0)
                failures++;
        close(f);
    }
    char listing[2048];
    list("work", listing, sizeof listing);
    printf("listing: %s\n", listing);
    expect("unlink zeta", unlink(at("work/zeta")) == 0);
    errno = 0;
    expect("unlink again: ENOENT", unlink(at("work/zeta")) == -1 && errno == ENOENT);
    errno = 0;
    expect("unlink a dir: EISDIR", unlink(at("work/sub")) == -1 &&
                                        (errno == EISDIR || errno == EPERM));
    expect("rmdir sub", rmdir(at("work/sub")) == 0);
    list("work", listing, sizeof listing);
    printf("listing: %s\n", listing);
    long sizes = 0;
    for (int i = 1; i < 6; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "work/%s", names[i]);
        sizes += size_of(rel);
    }
    printf("sizes: b.txt=%ld others=%ld\n", size_of("work/b.txt"), sizes);

    /* dup2: stdout into a file, then back */
    fflush(stdout);
    int saved = dup(1);
    fd = open(at("result/summary.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int dup2_result = dup2(fd, 1);
    close(fd);
    printf("summary: files ok\n");
    printf("listing: %s\n", listing);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    printf("stdout is back\n");
    expect("dup2 onto stdout", dup2_result == 1);
    expect("summary size", size_of("result/summary.txt") ==
                               (long)(strlen("summary: files ok\n") + strlen("listing: ") +
                                      strlen(listing) + 1));

    if (failures) {
        fprintf(stderr, "files: %d FAILED\n", failures);
        return 1;
    }
    printf("files: ok\n");
    return 0;
}
