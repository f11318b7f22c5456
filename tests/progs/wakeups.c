// Threads that run the moment they are made ready, on one CPU: the
// scheduler's wake-up preemption gives the CPU at once to a woken or new
// thread when the running one has computed for a while.
//
// (1) A creator that has spun for 2 ms creates a thread that returns at
//     once and joins it, 300 times. The child may run, and exit, before
//     `clone` returns to its creator; its cleared thread-id word (which
//     `pthread_join` waits on) must stay cleared.
// (2) A thread sleeps 100 times for 200 us while another spins on the
//     same CPU; every sleep ends (no time is checked: the benchmark
//     `astraea-bench linux` measures how late).
// (3) Ping-pong through a pipe between two threads while a third spins.
//
// Everything runs on CPU 0 (the host is pinned to match a partition).
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static atomic_long spins;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void spin_for(double ns)
{
    double end = now_ns() + ns;
    while (now_ns() < end)
        atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
}

static void *nothing(void *arg)
{
    return arg;
}

static void *hog(void *arg)
{
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
    return arg;
}

static int pipes[2][2];

static void *ponger(void *arg)
{
    char c;
    for (long i = 0; i < (long)arg; i++) {
        if (read(pipes[0][0], &c, 1) != 1 || write(pipes[1][1], &c, 1) != 1) {
            perror("ponger");
            exit(1);
        }
    }
    return NULL;
}

int main(void)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        perror("sched_setaffinity");
        return 1;
    }

    int joined = 0;
    for (int i = 0; i < 300; i++) {
        spin_for(2e6);
        pthread_t t;
        void *ret;
        if (pthread_create(&t, NULL, nothing, (void *)(long)(i + 1)) != 0) {
            perror("pthread_create");
            return 1;
        }
        if (pthread_join(t, &ret) == 0 && ret == (void *)(long)(i + 1))
            joined++;
    }
    printf("created after spinning and joined: %d of 300\n", joined);

    pthread_t h;
    atomic_store(&stop, 0);
    pthread_create(&h, NULL, hog, NULL);
    int slept = 0;
    const struct timespec d = {0, 200000};
    for (int i = 0; i < 100; i++)
        if (nanosleep(&d, NULL) == 0)
            slept++;
    printf("sleeps beside a spinning thread: %d of 100\n", slept);

    if (pipe(pipes[0]) != 0 || pipe(pipes[1]) != 0) {
        perror("pipe");
        return 1;
    }
    const long rounds = 2000;
    pthread_t p;
    pthread_create(&p, NULL, ponger, (void *)rounds);
    long ok = 0;
    for (long i = 0; i < rounds; i++) {
        char c = (char)i, back = 0;
        if (write(pipes[0][1], &c, 1) == 1 && read(pipes[1][0], &back, 1) == 1 && back == c)
            ok++;
    }
    pthread_join(p, NULL);
    atomic_store(&stop, 1);
    pthread_join(h, NULL);
    printf("pipe round trips beside a spinning thread: %ld of %ld\n", ok, rounds);
    return 0;
}
