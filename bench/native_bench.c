/* The native core on a file, for the benchmark: inspect (with --stats, statistics of every
 * payload) through a pread source, timed, with peak memory. Prints one JSON line:
 * {"seconds": s, "bytes": n, "peakRssKiB": k, "ok": bool}. Usage: native_bench FILE [--stats] [--repeat N] */
#define _POSIX_C_SOURCE 200809L
#include "ckptscope.h"

#include <fcntl.h>
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

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: native_bench FILE [--stats] [--repeat N]\n"), 2;
    unsigned flags = 0;
    int repeat = 1;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--stats")) flags |= CKPT_INSPECT_STATS;
        else if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return perror(argv[1]), 2;
    struct stat st;
    fstat(fd, &st);
    ckpt_source src = {&fd, pread_source, (uint64_t)st.st_size};
    double best = 1e30;
    bool ok = true;
    for (int r = 0; r < repeat; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ckpt_inspect_options opt = {flags, NULL, NULL};
        ckpt_report *rep = ckpt_inspect(&src, &opt);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (s < best) best = s;
        ok = rep && rep->error.code == 0;
        if (!ok && rep) fprintf(stderr, "%s\n", rep->error.message);
        ckpt_report_free(rep);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"seconds\":%.6f,\"bytes\":%lld,\"peakRssKiB\":%ld,\"ok\":%s}\n", best, (long long)st.st_size, ru.ru_maxrss,
           ok ? "true" : "false");
    close(fd);
    return ok ? 0 : 1;
}
