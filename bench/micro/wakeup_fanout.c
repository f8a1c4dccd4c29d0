// Interrupt-time work a process can make the kernel do for it, charged to no process: one 1 ms
// timerfd watched E x D times (E epoll instances, each watching D duplicates), polled by T
// threads over D duplicates, or (poll0) listed D times with no events by T threads blocked in
// poll, which it never wakes, beside a loop on the same core. Prints the loop's speed and the
// CPU time charged to the timer's process.
//
//   gcc -O2 -pthread -o /tmp/wakeup_fanout bench/micro/wakeup_fanout.c
//   /tmp/wakeup_fanout CORE SECONDS          (runs every configuration below)
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double own_cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void pin(int core) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static int timer_fd, dup_count;
static int* dups;
static volatile int stop;

static void* poller(void* arg) {
    (void)arg;
    struct pollfd* p = calloc(dup_count, sizeof *p);
    for (int i = 0; i < dup_count; ++i) p[i] = (struct pollfd){dups[i], POLLIN, 0};
    while (!stop) {
        unsigned long long ticks;
        poll(p, dup_count, 100);
        (void)!read(timer_fd, &ticks, 8);
    }
    return NULL;
}

// Blocked in poll on one descriptor listed dup_count times with no events: woken by nothing,
// its registrations stay as long as the process.
static void* sleeper(void* arg) {
    (void)arg;
    struct pollfd* p = calloc(dup_count, sizeof *p);
    for (int i = 0; i < dup_count; ++i) p[i] = (struct pollfd){timer_fd, 0, 0};
    poll(p, dup_count, -1);
    return NULL;
}

// The timer's process: mode 'e' (epoll) or 'p' (poll); writes its own CPU seconds to out.
static void timer_process(char mode, int count, int d, double seconds, int out) {
    timer_fd = timerfd_create(CLOCK_MONOTONIC, mode == 'p' ? TFD_NONBLOCK : 0);
    dup_count = d;
    dups = calloc(d, sizeof(int));
    dups[0] = timer_fd;
    for (int i = 1; i < d; ++i) dups[i] = dup(timer_fd);
    long registrations = 0;
    pthread_t threads[1024];
    struct itimerspec period = {{0, 1000000}, {0, 1000000}};
    if (mode == 'e') {
        for (int e = 0; e < count; ++e) {
            int ep = epoll_create1(0);
            for (int i = 0; i < d && ep >= 0; ++i) {
                struct epoll_event ev = {.events = EPOLLIN};
                registrations += epoll_ctl(ep, EPOLL_CTL_ADD, dups[i], &ev) == 0;
            }
        }
        timerfd_settime(timer_fd, 0, &period, NULL);
        for (double end = now() + seconds; now() < end;) {
            unsigned long long ticks;
            (void)!read(timer_fd, &ticks, 8);
        }
    } else if (mode == 'n') {
        for (int t = 0; t < count; ++t) pthread_create(&threads[t], NULL, sleeper, NULL);
        usleep(300000);
        timerfd_settime(timer_fd, 0, &period, NULL);
        for (double end = now() + seconds; now() < end;) {
            unsigned long long ticks;
            (void)!read(timer_fd, &ticks, 8);
        }
        registrations = (long)count * d;  // the sleepers end with the process
    } else {
        timerfd_settime(timer_fd, 0, &period, NULL);
        for (int t = 0; t < count; ++t) pthread_create(&threads[t], NULL, poller, NULL);
        usleep((useconds_t)(seconds * 1e6));
        stop = 1;
        for (int t = 0; t < count; ++t) pthread_join(threads[t], NULL);
        registrations = (long)count * d;
    }
    double cpu = own_cpu();
    (void)!write(out, &cpu, sizeof cpu);
    (void)!write(out, &registrations, sizeof registrations);
}

// Iterations a second of a loop on this core over seconds.
static double spin(double seconds) {
    volatile unsigned long n = 0;
    double start = now(), end = start + seconds;
    while (now() < end)
        for (int i = 0; i < 100000; ++i) n++;
    return n / (now() - start);
}

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s CORE SECONDS\n", argv[0]);
        return 2;
    }
    int core = atoi(argv[1]);
    double seconds = atof(argv[2]);
    struct {
        char mode;
        int count, dups;
    } configs[] = {
        {'-', 0, 0},    {'e', 1, 8000},   {'e', 150, 130}, {'p', 150, 130},
        {'p', 20, 1000}, {'n', 20, 1024}, {'n', 200, 1024}};
    struct rlimit files = {20000, 20000};
    setrlimit(RLIMIT_NOFILE, &files);
    pin(core);
    double alone = spin(seconds);
    printf("%-6s %8s %6s %14s %10s %12s\n", "mode", "watchers", "dups", "registrations",
           "loop", "timer_cpu_s");
    for (unsigned c = 0; c < sizeof configs / sizeof *configs; ++c) {
        if (configs[c].mode == '-') {
            printf("%-6s %8d %6d %14d %9.0f%% %12s\n", "none", 0, 0, 0, 100.0, "-");
            continue;
        }
        int pipe_fds[2];
        (void)!pipe(pipe_fds);
        pid_t child = fork();
        if (child == 0) {
            timer_process(configs[c].mode, configs[c].count, configs[c].dups, seconds + 1.0,
                          pipe_fds[1]);
            _exit(0);
        }
        usleep(500000);
        double speed = spin(seconds);
        double cpu = 0;
        long registrations = 0;
        (void)!read(pipe_fds[0], &cpu, sizeof cpu);
        (void)!read(pipe_fds[0], &registrations, sizeof registrations);
        waitpid(child, NULL, 0);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        const char* name = configs[c].mode == 'e' ? "epoll" : configs[c].mode == 'p' ? "poll" : "poll0";
        printf("%-6s %8d %6d %14ld %9.0f%% %12.3f\n", name,
               configs[c].count, configs[c].dups, registrations, 100.0 * speed / alone, cpu);
    }
    return 0;
}
