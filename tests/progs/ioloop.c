/* Reads and writes files in a loop until an operation fails, then says
 * which and with what errno and exits 3: run while its file server goes
 * away (tests/tests/faults.rs kills the gateway). It creates DIR/started
 * after its first round. Exits 0 if nothing failed within 60 s. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "errname.h"

static char path[4096], started[4096];

static void fail(const char *what, long round)
{
    int e = errno;
    printf("round %ld: %s failed: %s\n", round, what, errname(e));
    fflush(stdout);
    exit(3);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ioloop DIR\n");
        return 2;
    }
    snprintf(path, sizeof path, "%s/loop.bin", argv[1]);
    snprintf(started, sizeof started, "%s/started", argv[1]);
    static char out[8192], in[8192];
    time_t t0 = time(NULL);
    for (long round = 0; time(NULL) - t0 < 60; round++) {
        memset(out, 'a' + round % 26, sizeof out);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            fail("open for writing", round);
        if (write(fd, out, sizeof out) != (ssize_t)sizeof out)
            fail("write", round);
        if (close(fd) != 0)
            fail("close", round);
        fd = open(path, O_RDONLY);
        if (fd < 0)
            fail("open for reading", round);
        ssize_t n = read(fd, in, sizeof in);
        if (n < 0)
            fail("read", round);
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
    printf("no error in 60 s\n");
    return 0;
}
