/* The benchmark's limit: read() a file in 1 MiB chunks and sum its bytes as float32 with 16
 * accumulators (built -O3 -march=native). No statistics kernel can scan a page-cached file
 * faster than this on one core. Prints one JSON line: {"seconds": best, "bytes": n, "sum": "s"}
 * (the sum as a string: the file holds a NaN).
 * Usage: limit_sum FILE [--repeat N] */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: limit_sum FILE [--repeat N]\n"), 2;
    int repeat = 1;
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
    float *buf = aligned_alloc(64, CHUNK);
    if (!buf) return 2;
    double best = 1e30, total = 0;
    long long bytes = 0;
    for (int r = 0; r < repeat; r++) {
        int fd = open(argv[1], O_RDONLY);
        if (fd < 0) return perror(argv[1]), 2;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        float acc[16] = {0};
        bytes = 0;
        for (;;) {
            ssize_t got = read(fd, buf, CHUNK);
            if (got < 0) return perror("read"), 2;
            if (got == 0) break;
            bytes += got;
            size_t n = (size_t)got / 4, k = 0;
            for (; k + 16 <= n; k += 16)
                for (int j = 0; j < 16; j++) acc[j] += buf[k + j];
            for (; k < n; k++) acc[k % 16] += buf[k];
        }
        float s = 0;
        for (int j = 0; j < 16; j++) s += acc[j];
        clock_gettime(CLOCK_MONOTONIC, &t1);
        close(fd);
        double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (sec < best) best = sec;
        total += s; /* printed, so the sums are not optimised away */
    }
    printf("{\"seconds\":%.6f,\"bytes\":%lld,\"sum\":\"%g\"}\n", best, bytes, total);
    free(buf);
    return 0;
}
