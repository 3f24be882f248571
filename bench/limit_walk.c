/* The benchmark's limit for a million slots: read() a TLADAMF file in 1 MiB chunks and walk its
 * records (header, every slot's rank, dims, size and flag, the tags, every entry's id, step and
 * count, skipping its payloads), checking nothing. No inspection can index a page-cached file
 * faster than this. Prints one JSON line: {"seconds": best, "slots": n, "entries": e}.
 * Usage: limit_walk FILE [--repeat N] */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20)

typedef struct stream {
    int fd;
    uint8_t *buf;
    size_t len, at;
    uint64_t pos; /* file offset of buf[at] */
} stream;

/* The next u64 at the stream's position (0 at the end: this is a limit, not a reader). */
static uint64_t next(stream *s)
{
    if (s->at + 8 > s->len) {
        size_t keep = s->len - s->at;
        memmove(s->buf, s->buf + s->at, keep);
        ssize_t got = read(s->fd, s->buf + keep, CHUNK - keep);
        s->len = keep + (got > 0 ? (size_t)got : 0);
        s->at = 0;
        if (s->len < 8) return 0;
    }
    uint64_t v;
    memcpy(&v, s->buf + s->at, 8);
    s->at += 8;
    s->pos += 8;
    return v;
}

static void skip(stream *s, uint64_t bytes)
{
    s->pos += bytes;
    if (bytes <= s->len - s->at) {
        s->at += (size_t)bytes;
        return;
    }
    lseek(s->fd, (off_t)s->pos, SEEK_SET); /* past the buffer: read on from there */
    s->len = s->at = 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: limit_walk FILE [--repeat N]\n"), 2;
    int repeat = 1;
    for (int a = 2; a < argc; a++)
        if (!strcmp(argv[a], "--repeat") && a + 1 < argc) repeat = atoi(argv[++a]);
    uint8_t *buf = malloc(CHUNK);
    double best = 1e30;
    uint64_t n = 0, entries = 0, sum = 0;
    for (int r = 0; r < repeat; r++) {
        stream s = {open(argv[1], O_RDONLY), buf, 0, 0, 0};
        if (s.fd < 0) return perror(argv[1]), 2;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint8_t magic[7];
        if (read(s.fd, magic, 7) != 7) return 2;
        s.pos = 7;
        uint64_t version = next(&s), dtype = version == 5 ? next(&s) : 0;
        for (int k = 0; k < 5; k++) sum += next(&s);
        bool counter = version == 4 || (version == 5 && next(&s) == 1);
        if (counter) next(&s);
        n = next(&s);
        for (uint64_t i = 0; i < n; i++) {
            uint64_t rank = next(&s);
            for (uint64_t k = 0; k < rank; k++) sum += next(&s);
            sum += next(&s) + next(&s);
        }
        if (version >= 3)
            for (uint64_t i = 0; i < n; i++) sum += next(&s);
        entries = next(&s);
        for (uint64_t e = 0; e < entries; e++) {
            sum += next(&s) + next(&s);
            uint64_t count = next(&s);
            skip(&s, 2 * count * (dtype ? 8 : 4));
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        close(s.fd);
        double sec = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (sec < best) best = sec;
    }
    printf("{\"seconds\":%.6f,\"slots\":%llu,\"entries\":%llu,\"sum\":\"%llu\"}\n", best, (unsigned long long)n,
           (unsigned long long)entries, (unsigned long long)sum);
    free(buf);
    return 0;
}
