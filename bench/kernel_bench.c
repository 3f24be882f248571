/* The statistics kernel alone, no I/O: ckpt_stats_f32 over 64 MiB of float32 in memory, values
 * made as the benchmark's statistics file makes them (m: (u - 0.5) 1e-2 (slot + 1), v: u^2 1e-6,
 * 4 slots of 2^21 values each). One source, built natively (bench/CMakeLists.txt) and as a
 * standalone wasm module with and without SIMD (wasm/CMakeLists.txt); bench/kernel.mjs runs
 * them in turn. Timed in CPU time of the calling thread: a shared machine inflates wall time,
 * and V8 compiles on other threads.
 * Prints one JSON line: {"nsPerValue": [one per repeat], "digest": "..."}; the digest (the
 * results' bits) must be the same for every build.
 * Usage: kernel_bench [--repeat N] */
#define _POSIX_C_SOURCE 200809L
#include "numeric/numeric.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 4
#define PER ((size_t)1 << 21)

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* FNV-1a over the results' bytes. */
static uint64_t digest(uint64_t h, const void *p, size_t n)
{
    for (size_t k = 0; k < n; k++) h = (h ^ ((const uint8_t *)p)[k]) * 0x100000001b3ull;
    return h;
}

int main(int argc, char **argv)
{
    int repeat = 5;
    for (int a = 1; a < argc; a++)
        if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
    size_t n = 2 * SLOTS * PER;
    float *x = malloc(n * sizeof *x);
    if (!x) return 2;
    uint32_t seed = 12345;
    for (size_t s = 0; s < SLOTS; s++)
        for (size_t k = 0; k < 2 * PER; k++) {
            seed = seed * 1664525u + 1013904223u;
            double u = (double)(seed >> 8) / 16777216;
            x[2 * PER * s + k] = (float)(k < PER ? (u - 0.5) * 1e-2 * (double)(s + 1) : u * u * 1e-6);
        }
    uint64_t h = 0xcbf29ce484222325ull;
    printf("{\"nsPerValue\":[");
    for (int r = 0; r < repeat; r++) {
        ckpt_stats_acc acc[2 * SLOTS];
        double t0 = cpu_seconds();
        for (size_t m = 0; m < 2 * SLOTS; m++) {
            ckpt_stats_begin(&acc[m]);
            ckpt_stats_f32(&acc[m], x + PER * m, PER);
        }
        double t = cpu_seconds() - t0;
        printf("%s%.4f", r ? "," : "", t / (double)n * 1e9);
        if (r == 0)
            for (size_t m = 0; m < 2 * SLOTS; m++) {
                ckpt_stats *st = ckpt_stats_finish(&acc[m]);
                if (!st) return 2;
                h = digest(h, st, offsetof(ckpt_stats, hist));
                h = digest(h, st->hist, st->hist_len * sizeof *st->hist);
                ckpt_stats_free(st);
            }
    }
    printf("],\"digest\":\"%016llx\"}\n", (unsigned long long)h);
    free(x);
    return 0;
}
