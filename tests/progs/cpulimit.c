/* RLIMIT_CPU: at the soft limit SIGXCPU, and the soft limit moves a second
 * on (another SIGXCPU each CPU second); at the hard limit SIGKILL; the
 * default action of SIGXCPU ends the process.
 *
 *   cpulimit          soft 1 s, hard 3 s, SIGXCPU counted: spins to 2.5 s
 *                     of CPU time, prints the signals taken, their si_code,
 *                     and the limit as getrlimit reads it then; exits 0
 *   cpulimit default  soft 1 s, no hard limit, SIGXCPU's default action
 *   cpulimit hard     soft 1 s, hard 1 s, SIGXCPU ignored: SIGKILL */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static volatile int taken, code;

static void on_xcpu(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    taken++;
    code = si->si_code;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void spin(double until) {
    volatile unsigned long n = 0;
    while (cpu_seconds() < until)
        for (int i = 0; i < 100000; i++)
            n++;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "count";
    struct rlimit rl = {1, 3};
    if (!strcmp(mode, "default")) {
        rl.rlim_max = RLIM_INFINITY;
    } else if (!strcmp(mode, "hard")) {
        rl.rlim_max = 1;
        signal(SIGXCPU, SIG_IGN);
    } else {
        struct sigaction sa = {.sa_sigaction = on_xcpu, .sa_flags = SA_SIGINFO};
        sigaction(SIGXCPU, &sa, NULL);
    }
    if (setrlimit(RLIMIT_CPU, &rl) != 0) {
        perror("setrlimit");
        return 2;
    }
    printf("%s: limits set\n", mode);
    fflush(stdout);
    spin(2.5);
    getrlimit(RLIMIT_CPU, &rl);
    printf("SIGXCPU taken %d, si_code %#x, soft %lu, hard %lu\n", taken, code,
           (unsigned long)rl.rlim_cur, (unsigned long)rl.rlim_max);
    return 0;
}
