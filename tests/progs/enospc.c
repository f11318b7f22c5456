/* Writes DIR/fill.bin in 48 KiB pieces (the last one fits only in part), each followed by fsync, until a
 * write fails; prints how many bytes went in and the errno, then that the
 * file still syncs and closes. Byte i of the file is (i / 4096 * 7 + i) %
 * 251, so the test can check from the host what reached the disk. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errname.h"

#define CHUNK 49152

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: enospc DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/fill.bin", argv[1]);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    static unsigned char buf[CHUNK];
    long long total = 0, synced = 0;
    int err = 0, short_writes = 0;
    for (;;) {
        for (int i = 0; i < CHUNK; i++) {
            long long off = total + i;
            buf[i] = (unsigned char)((off / 4096 * 7 + off) % 251);
        }
        ssize_t n = write(fd, buf, CHUNK);
        if (n < 0) {
            err = errno;
            break;
        }
        if (n < CHUNK)
            short_writes++;
        total += n;
        if (fsync(fd) != 0) {
            printf("fsync after %lld bytes failed: %s\n", total, errname(errno));
            return 1;
        }
        synced = total;
    }
    printf("wrote and synced %lld bytes (%s short write%s)\n", synced,
           short_writes ? "with a" : "without a", "");
    printf("then write failed: %s\n", errname(err));
    printf("fsync: %s\n", fsync(fd) == 0 ? "ok" : errname(errno));
    printf("close: %s\n", close(fd) == 0 ? "ok" : errname(errno));
    return 0;
}
