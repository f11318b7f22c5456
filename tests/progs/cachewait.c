/* A program that keeps running while the host looks at its partition
 * (tests/tests/cache.rs: live cache dumps, the attribute cache).
 *
 *   cachewait read RWDIR FILE...
 *       reads each FILE to its end and prints its size and FNV-1a hash,
 *       creates RWDIR/ready, waits (nanosleep) until RWDIR/go exists,
 *       then exits 0.
 *   cachewait stat PATH RWDIR
 *       stats and opens PATH, creates RWDIR/ready, waits for RWDIR/go,
 *       then stats and opens PATH again; prints what each returned
 *       (ok or the errno's name).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *err(int e) {
    static char b[32];
    if (e == 0)
        return "ok";
    if (e == ENOENT)
        return "ENOENT";
    snprintf(b, sizeof b, "errno%d", e);
    return b;
}

static void touch(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) {
        perror(p);
        exit(1);
    }
    close(fd);
}

static void wait_for(const char *dir, const char *name) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct timespec ts = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 60 * 100; i++) {
        if (access(p, F_OK) == 0)
            return;
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "%s never appeared\n", p);
    exit(1);
}

static int do_read(int argc, char **argv) {
    const char *rw = argv[2];
    static unsigned char buf[1 << 16];
    for (int i = 3; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        if (fd < 0) {
            perror(argv[i]);
            return 1;
        }
        uint64_t h = 0xcbf29ce484222325ULL, size = 0;
        ssize_t n;
        /* Odd-sized reads: many reads per 64 KiB block. */
        while ((n = read(fd, buf, 3000)) > 0) {
            for (ssize_t j = 0; j < n; j++) {
                h ^= buf[j];
                h *= 0x100000001b3ULL;
            }
            size += n;
        }
        close(fd);
        printf("%s %llu %016llx\n", argv[i], (unsigned long long)size, (unsigned long long)h);
    }
    fflush(stdout);
    touch(rw, "ready");
    wait_for(rw, "go");
    return 0;
}

static void probe(const char *when, const char *path) {
    struct stat st;
    int s = stat(path, &st) == 0 ? 0 : errno;
    int fd = open(path, O_RDONLY);
    int o = fd >= 0 ? 0 : errno;
    if (fd >= 0)
        close(fd);
    printf("%s stat=%s open=%s\n", when, err(s), err(o));
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "read") == 0)
        return do_read(argc, argv);
    if (argc == 4 && strcmp(argv[1], "stat") == 0) {
        probe("before", argv[2]);
        touch(argv[3], "ready");
        wait_for(argv[3], "go");
        probe("after", argv[2]);
        return 0;
    }
    fprintf(stderr, "usage: cachewait read RWDIR FILE... | cachewait stat PATH RWDIR\n");
    return 2;
}
