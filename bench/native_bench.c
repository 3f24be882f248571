/* The native core on a file, for the benchmark, through a pread source, timed, with peak memory:
 * inspect (with --stats, statistics of every payload), or the health pass with a state file
 * (--health STATE), or pairing (--pair STATE). Prints one JSON line:
 * {"seconds": s, "cpuSeconds": c, "bytes": n, "peakRssKiB": k, "ok": bool} (seconds: the best wall
 * time of the repeats; cpuSeconds: the best CPU time, which a loaded machine inflates less).
 * Usage: native_bench FILE [--stats | --health STATE | --pair STATE] [--repeat N] */
#define _POSIX_C_SOURCE 200809L
#include "ckptscope.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static size_t pread_source(void *ctx, uint64_t offset, void *buf, size_t n)
{
    int fd = *(int *)ctx;
    size_t done = 0;
    while (done < n) {
        ssize_t got = pread(fd, (char *)buf + done, n - done, (off_t)(offset + done));
        if (got < 0) return CKPT_READ_ERROR;
        if (got == 0) break;
        done += (size_t)got;
    }
    return done;
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The health pass (lr 1e-3) or pairing of an optimizer file with its state file, each opened. */
static int two_files(const char *opt_path, const char *state_path, bool health, int repeat)
{
    int fo = open(opt_path, O_RDONLY), fs = open(state_path, O_RDONLY);
    if (fo < 0 || fs < 0) return perror("open"), 2;
    struct stat so, ss;
    fstat(fo, &so);
    fstat(fs, &ss);
    ckpt_source a = {&fo, pread_source, (uint64_t)so.st_size}, b = {&fs, pread_source, (uint64_t)ss.st_size};
    double best = 1e30, best_cpu = 1e30;
    bool ok = true;
    for (int r = 0; r < repeat; r++) {
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double c0 = cpu_now();
        ckpt_file *opt = ckpt_open(&a, NULL), *state = ckpt_open(&b, NULL);
        if (health) {
            ckpt_error err = {0};
            ckpt_health_options o = {1e-3, 0, CKPT_NONE, NULL, NULL, false, 0, 0};
            char *json = ckpt_health_json(opt, state, &o, &err);
            ok = json != NULL;
            free(json);
            ckpt_error_clear(&err);
        } else {
            ckpt_pair_result *pr = ckpt_pair(opt, state, NULL, NULL);
            ok = pr && pr->pairs;
            ckpt_pair_result_free(pr);
        }
        ckpt_close(opt);
        ckpt_close(state);
        double s = seconds_since(&t0), c = cpu_now() - c0;
        if (s < best) best = s;
        if (c < best_cpu) best_cpu = c;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"seconds\":%.6f,\"cpuSeconds\":%.6f,\"bytes\":%lld,\"peakRssKiB\":%ld,\"ok\":%s}\n", best, best_cpu,
           (long long)(so.st_size + ss.st_size), ru.ru_maxrss, ok ? "true" : "false");
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: native_bench FILE [--stats] [--repeat N]\n"), 2;
    unsigned flags = 0;
    int repeat = 1;
    const char *health = NULL, *pair = NULL;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--stats")) flags |= CKPT_INSPECT_STATS;
        else if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--health") && a + 1 < argc) health = argv[++a];
        else if (!strcmp(argv[a], "--pair") && a + 1 < argc) pair = argv[++a];
    }
    if (health || pair) return two_files(argv[1], health ? health : pair, health != NULL, repeat);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return perror(argv[1]), 2;
    struct stat st;
    fstat(fd, &st);
    ckpt_source src = {&fd, pread_source, (uint64_t)st.st_size};
    double best = 1e30, best_cpu = 1e30;
    bool ok = true;
    for (int r = 0; r < repeat; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        double c0 = cpu_now();
        ckpt_inspect_options opt = {flags, NULL, NULL};
        ckpt_report *rep = ckpt_inspect(&src, &opt);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, c = cpu_now() - c0;
        if (s < best) best = s;
        if (c < best_cpu) best_cpu = c;
        ok = rep && rep->error.code == 0;
        if (!ok && rep) fprintf(stderr, "%s\n", rep->error.message);
        ckpt_report_free(rep);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"seconds\":%.6f,\"cpuSeconds\":%.6f,\"bytes\":%lld,\"peakRssKiB\":%ld,\"ok\":%s}\n", best, best_cpu,
           (long long)st.st_size, ru.ru_maxrss, ok ? "true" : "false");
    close(fd);
    return ok ? 0 : 1;
}
