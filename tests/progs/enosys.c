/* A system call nobody implements (999) fails with ENOSYS, and so does fork()
 * in a partition (on a Linux host it succeeds; the child exits 7). Exits 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *errname(int e) {
    switch (e) {
    case 0:
        return "0";
    case ENOSYS:
        return "ENOSYS";
    case EAGAIN:
        return "EAGAIN";
    case ENOMEM:
        return "ENOMEM";
    case EINVAL:
        return "EINVAL";
    case EPERM:
        return "EPERM";
    default:
        return "other";
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    errno = 0;
    long r = syscall(999, 1, 2, 3);
    printf("syscall(999) = %ld errno=%s\n", r, errname(errno));
    int bad = r != -1 || errno != ENOSYS;

    errno = 0;
    pid_t pid = fork();
    if (pid == 0)
        _exit(7);
    if (pid < 0) {
        printf("fork() = %d errno=%s\n", (int)pid, errname(errno));
    } else {
        int status = 0;
        pid_t w = waitpid(pid, &status, 0);
        printf("fork() = child, exit status %d\n",
               w == pid && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    printf("still running after fork\n");
    if (bad) {
        fprintf(stderr, "enosys: FAILED\n");
        return 1;
    }
    return 0;
}
