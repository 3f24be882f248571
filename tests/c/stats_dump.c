/* The native side of tests/js/stats.test.mjs: inspect FILE with statistics and print the JSON
 * report, so that the native, wasm SIMD and wasm scalar builds can be compared bit for bit on
 * the same bytes. Usage: stats_dump FILE */
#define _POSIX_C_SOURCE 200809L
#include "ckptscope.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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
    if (argc != 2) return fprintf(stderr, "usage: stats_dump FILE\n"), 2;
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) return perror(argv[1]), 2;
    struct stat st;
    if (fstat(fd, &st)) return perror(argv[1]), 2;
    ckpt_source src = {&fd, pread_source, (uint64_t)st.st_size};
    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_report *rep = ckpt_inspect(&src, &opt);
    char *json = rep ? ckpt_report_json(rep) : NULL;
    if (!json) return fprintf(stderr, "out of memory\n"), 1;
    puts(json);
    free(json);
    ckpt_report_free(rep);
    close(fd);
    return 0;
}
