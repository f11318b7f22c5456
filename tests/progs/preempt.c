/* A thread that never makes a system call must still lose the CPU: the
 * main thread sleeps 1 ms while a second thread spins until the main
 * thread sets a flag (or a count far beyond any time slice runs out).
 * Prints the flag the spinner saw: 1 when the main thread got the CPU back
 * while it spun. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile int flag;
static volatile unsigned long spins;

static void *spin(void *arg) {
    (void)arg;
    unsigned long n = 0;
    while (!flag && n < 40000000000UL)
        n++;
    spins = n;
    return 0;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, spin, 0);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, 0);
    flag = 1;
    pthread_join(t, 0);
    printf("spinner saw the flag: %d\n", spins < 40000000000UL);
    return 0;
}
