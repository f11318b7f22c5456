/* Reads and writes files in a loop until an operation fails, then says
 * which and with what errno and exits 3: run while its file server goes
 * away (tests/tests/faults.rs kills the gateway). It creates DIR/started
 * after its first round. Exits 0 if nothing failed within 60 s.
 *
 *   ioloop DIR [keep-going]
 *
 * With keep-going it reports the first failure and goes on trying (a
 * program that ignores errors) until the 60 s are up. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

static char path[4096], started[4096];
static int keep_going, failures;

/* Returns (to try again) only with keep-going. */
static void fail(const char *what, long round)
{
    int e = errno;
    if (failures++ == 0 || !keep_going) {
        printf("round %ld: %s failed: %s\n", round, what, errname(e));
        fflush(stdout);
    }
    if (!keep_going)
        exit(3);
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: ioloop DIR [keep-going]\n");
        return 2;
    }
    keep_going = argc == 3 && strcmp(argv[2], "keep-going") == 0;
    snprintf(path, sizeof path, "%s/loop.bin", argv[1]);
    snprintf(started, sizeof started, "%s/started", argv[1]);
    static char out[8192], in[8192];
    time_t t0 = time(NULL);
    for (long round = 0; time(NULL) - t0 < 60; round++) {
        memset(out, 'a' + round % 26, sizeof out);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) {
            fail("open for writing", round);
            continue;
        }
        if (write(fd, out, sizeof out) != (ssize_t)sizeof out) {
            fail("write", round);
            close(fd);
            continue;
        }
        if (close(fd) != 0) {
            fail("close", round);
            continue;
        }
        fd = open(path, O_RDONLY);
        if (fd < 0) {
            fail("open for reading", round);
            continue;
        }
        ssize_t n = read(fd, in, sizeof in);
        if (n < 0) {
            fail("read", round);
            close(fd);
            continue;
        }
        if (n != (ssize_t)sizeof in || memcmp(in, out, sizeof in) != 0) {
            printf("round %ld: read back %zd bytes that differ\n", round, n);
            return 4;
        }
        close(fd);
        if (round == 0) {
            fd = open(started, O_WRONLY | O_CREAT, 0644);
            if (fd < 0)
                fail("create started", round);
            close(fd);
        }
    }
    if (failures) {
        printf("%d failures in 60 s\n", failures);
        return 3;
    }
    printf("no error in 60 s\n");
    return 0;
}
