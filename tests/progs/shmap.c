/* Shared writable file mappings reach their file: after msync, after
 * munmap, and when the program exits without either (as the page cache
 * would write them back). Works in the directory given as argv[1]; leaves
 * shared.bin there for the test to check from the host. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int check(int fd, off_t off, const char *want, const char *what) {
    char buf[32] = {0};
    size_t n = strlen(want);
    if (pread(fd, buf, n, off) != (ssize_t)n || memcmp(buf, want, n) != 0) {
        printf("%s: file has \"%.*s\", expected \"%s\"\n", what, (int)n, buf, want);
        return 1;
    }
    printf("%s: ok\n", what);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || chdir(argv[1]) != 0) {
        perror("chdir");
        return 2;
    }
    int fd = open("shared.bin", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 3 * 4096 + 100) != 0) {
        perror("shared.bin");
        return 2;
    }
    int bad = 0;
    char *p = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    memcpy(p + 10, "synced", 6);
    bad |= msync(p, 4096, MS_SYNC) != 0;
    bad |= check(fd, 10, "synced", "after msync");
    memcpy(p + 4096 + 20, "unmapped", 8);
    bad |= munmap(p + 4096, 4096) != 0;
    bad |= check(fd, 4096 + 20, "unmapped", "after munmap");
    /* The last page is partly past the end: the file must not grow. */
    memcpy(p + 3 * 4096 + 90, "end", 3);
    memcpy(p + 2 * 4096 + 5, "at exit", 7);
    bad |= msync(p + 3 * 4096, 4096, MS_SYNC) != 0;
    struct stat st;
    fstat(fd, &st);
    printf("size after msync of the last page: %ld\n", (long)st.st_size);
    /* "at exit" is never synced: exit writes it back. */
    printf("%s\n", bad ? "shmap: FAILED" : "shmap: ok");
    return bad;
}
