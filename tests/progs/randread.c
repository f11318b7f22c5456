/* Reads a file with pread and prints a checksum per read, so that the same
 * run on the host, in a partition without the file cache and in one with it
 * can be compared line by line (tests/tests/cache.rs).
 *
 *   randread rand FILE SEED COUNT MAXLEN
 *       COUNT preads at pseudo-random offsets (a fixed xorshift generator
 *       seeded with SEED) of 1..MAXLEN bytes; some offsets are chosen near
 *       64 KiB block boundaries and near the end of the file, some past it.
 *   randread seq FILE BUFSIZE PASSES
 *       reads the whole file PASSES times front to back with pread in
 *       BUFSIZE pieces; one checksum per pass.
 *
 * Every output line is "... got=N fnv=HEX" (FNV-1a 64 of the bytes read).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t state;

static uint64_t next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV0 0xcbf29ce484222325ULL

/* pread until `len` bytes or the end of the file, as a checksum reader
 * would; returns the bytes read or -1. */
static long full_pread(int fd, unsigned char *buf, size_t len, off_t off) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, off + done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        done += n;
    }
    return done;
}

static int do_rand(int fd, off_t size, uint64_t seed, long count, long maxlen) {
    unsigned char *buf = malloc(maxlen);
    if (!buf) {
        perror("malloc");
        return 1;
    }
    state = seed ? seed : 1;
    for (long i = 0; i < count; i++) {
        uint64_t r = next();
        off_t off;
        switch (r % 8) {
        case 0: /* straddling a 64 KiB block boundary */
            off = (off_t)((next() % (size / 65536 + 1)) * 65536) - (off_t)(next() % 300);
            if (off < 0)
                off = 0;
            break;
        case 1: /* near (or past) the end */
            off = size - (off_t)(next() % 5000) + 100;
            if (off < 0)
                off = 0;
            break;
        default:
            off = size ? (off_t)(next() % (uint64_t)size) : 0;
        }
        long len = 1 + (long)(next() % (uint64_t)maxlen);
        if (r % 16 == 3)
            len = 1 + (long)(next() % 64); /* many small reads */
        long got = full_pread(fd, buf, len, off);
        if (got < 0) {
            printf("read %ld off=%lld len=%ld error=%d\n", i, (long long)off, len, errno);
            continue;
        }
        printf("read %ld off=%lld len=%ld got=%ld fnv=%016llx\n", i, (long long)off, len,
               got, (unsigned long long)fnv(FNV0, buf, got));
    }
    free(buf);
    return 0;
}

static int do_seq(int fd, off_t size, long bufsize, long passes) {
    unsigned char *buf = malloc(bufsize);
    if (!buf) {
        perror("malloc");
        return 1;
    }
    for (long p = 0; p < passes; p++) {
        uint64_t h = FNV0;
        off_t off = 0;
        for (;;) {
            ssize_t n = pread(fd, buf, bufsize, off);
            if (n < 0) {
                printf("pass %ld error=%d at %lld\n", p, errno, (long long)off);
                return 1;
            }
            if (n == 0)
                break;
            h = fnv(h, buf, n);
            off += n;
        }
        printf("pass %ld size=%lld got=%lld fnv=%016llx\n", p, (long long)size, (long long)off,
               (unsigned long long)h);
    }
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: randread rand FILE SEED COUNT MAXLEN | seq FILE BUFSIZE PASSES\n");
        return 2;
    }
    int fd = open(argv[2], O_RDONLY);
    if (fd < 0) {
        perror(argv[2]);
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        perror("fstat");
        return 1;
    }
    int rc;
    if (strcmp(argv[1], "rand") == 0 && argc == 6)
        rc = do_rand(fd, st.st_size, strtoull(argv[3], 0, 0), atol(argv[4]), atol(argv[5]));
    else if (strcmp(argv[1], "seq") == 0 && argc == 5)
        rc = do_seq(fd, st.st_size, atol(argv[3]), atol(argv[4]));
    else {
        fprintf(stderr, "randread: bad arguments\n");
        return 2;
    }
    fflush(stdout);
    return rc;
}
