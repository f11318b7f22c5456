/* Process and thread ids as a program sees them, checked against each
 * other the way Linux relates them (the main thread's tid is the pid;
 * /proc/self, /proc/self/stat, /proc/self/status and /proc/self/task agree;
 * a signal's si_pid is the sender's pid; a thread's tid differs), then a
 * file named after the pid made with O_EXCL in the directory given, as
 * pid, lock and crash-report files are. Prints only relations, so the host's
 * output is the partition's; the pid itself goes into DIR/pid-of-ids. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t thread_tid;
static volatile pid_t si_pid_seen;
static pthread_barrier_t named, checked;
static char self_comm[64], self_link[64];

static void first_line(const char *path, char *out, size_t len);

static void *thread_main(void *arg) {
    (void)arg;
    thread_tid = (pid_t)syscall(SYS_gettid);
    pthread_setname_np(pthread_self(), "ids-worker");
    first_line("/proc/thread-self/comm", self_comm, sizeof self_comm);
    ssize_t n = readlink("/proc/thread-self", self_link, sizeof self_link - 1);
    if (n < 0) n = 0;
    self_link[n] = 0;
    pthread_barrier_wait(&named);
    pthread_barrier_wait(&checked);
    return NULL;
}

/* The first line of a file, without its newline ("" if unreadable). */
static void first_line(const char *path, char *out, size_t len) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (fgets(out, (int)len, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

static int task_listed(pid_t tid) {
    int found = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (atoi(e->d_name) == tid) found = 1;
    closedir(d);
    return found;
}

static void on_usr1(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    si_pid_seen = si->si_pid;
}

static long status_field(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0) v = atol(line + n);
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ids DIR\n");
        return 2;
    }
    pid_t pid = getpid();
    printf("pid > 0: %d\n", pid > 0);
    printf("main tid = pid: %d\n", (pid_t)syscall(SYS_gettid) == pid);

    char link[64] = {0};
    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    printf("/proc/self -> pid: %d\n", n > 0 && atoi(link) == pid);

    FILE *f = fopen("/proc/self/stat", "r");
    int stat_pid = -1;
    if (f) {
        if (fscanf(f, "%d", &stat_pid) != 1) stat_pid = -1;
        fclose(f);
    }
    printf("/proc/self/stat pid: %d\n", stat_pid == pid);
    printf("status Pid: %d\n", status_field("Pid:") == pid);
    printf("status Tgid: %d\n", status_field("Tgid:") == pid);

    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    printf("/proc/PID/stat opens: %d\n", access(path, R_OK) == 0);

    pthread_barrier_init(&named, NULL, 2);
    pthread_barrier_init(&checked, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_barrier_wait(&named);
    printf("thread tid differs: %d\n", thread_tid > 0 && thread_tid != pid);
    printf("/proc/self/task has the thread: %d\n", task_listed(thread_tid));
    printf("its /proc/thread-self/comm: %s\n", self_comm);
    char want_link[64];
    snprintf(want_link, sizeof want_link, "%d/task/%d", pid, thread_tid);
    printf("its /proc/thread-self -> PID/task/TID: %d\n", strcmp(self_link, want_link) == 0);
    char path2[128], line[256];
    snprintf(path2, sizeof path2, "/proc/self/task/%d/comm", thread_tid);
    first_line(path2, line, sizeof line);
    printf("thread comm: %s\n", line);
    char mine[32];
    pthread_getname_np(t, mine, sizeof mine);
    printf("pthread_getname_np: %s\n", mine);
    snprintf(path2, sizeof path2, "/proc/self/task/%d/stat", thread_tid);
    first_line(path2, line, sizeof line);
    char want[64];
    snprintf(want, sizeof want, "%d (ids-worker) ", thread_tid);
    printf("thread stat starts with tid and name: %d\n", strncmp(line, want, strlen(want)) == 0);
    snprintf(path2, sizeof path2, "/proc/self/task/%d/status", thread_tid);
    FILE *st = fopen(path2, "r");
    long spid = -1, stgid = -1;
    if (st) {
        while (fgets(line, sizeof line, st)) {
            if (strncmp(line, "Pid:", 4) == 0) spid = atol(line + 4);
            if (strncmp(line, "Tgid:", 5) == 0) stgid = atol(line + 5);
        }
        fclose(st);
    }
    printf("thread status Pid/Tgid: %d %d\n", spid == thread_tid, stgid == pid);
    pthread_barrier_wait(&checked);
    pthread_join(t, NULL);
    /* pthread_join returns when the kernel clears the thread's tid word,
     * which on Linux comes before the thread leaves /proc: wait (1 s at
     * most) for its entry to go. */
    snprintf(path2, sizeof path2, "/proc/self/task/%d", thread_tid);
    int gone = 0;
    for (int i = 0; i < 1000 && !gone; i++) {
        gone = access(path2, F_OK) != 0 && !task_listed(thread_tid);
        if (!gone) usleep(1000);
    }
    printf("exited thread's task gone: %d\n", gone);

    struct sigaction sa = {0};
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    kill(pid, SIGUSR1);
    printf("si_pid = pid: %d\n", si_pid_seen == pid);
    printf("kill(pid, 0): %d\n", kill(pid, 0));

    printf("/proc/self/task has pid: %d\n", task_listed(pid));

    /* A file named after the pid, created exclusively: two processes (or
     * partitions) at once in one directory must not collide. */
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/lock-%d", argv[1], pid);
    int fd = open(lock, O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("pid-named file created: %d\n", fd >= 0);
    if (fd >= 0) close(fd);

    char out[4096];
    snprintf(out, sizeof out, "%s/pid-of-ids.%d", argv[1], pid);
    FILE *o = fopen(out, "w");
    if (o) {
        fprintf(o, "%d\n", pid);
        fclose(o);
    }
    return 0;
}
