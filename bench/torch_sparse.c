/* The benchmark's sparse torch.save files (bench/pytorch.mjs): the Llama-7B-like pair as PyTorch
 * writes it, ~54 GB and ~27 GB apparent, a few MB on disk.
 *
 *   torch_sparse optimizer IN.ckpt OUT.pt   the TLADAMF file converted by the core's own
 *                                           ckpt_convert_to_torch (src/torch_write.c)
 *   torch_sparse model OUT.bin < SPEC       a model state dict (an OrderedDict of float32
 *                                           tensors) through the core's zip writer (src/zip.c);
 *                                           SPEC: one line per tensor, "name rank d0 d1 ..."
 *
 * Both write through a sink that seeks over every all-zero block instead of writing it, so the
 * payloads (zeros: the TLADAMF file's holes) stay holes; the zip's CRC-32s are still those of the
 * zeros, computed as the bytes go by. */
#define _POSIX_C_SOURCE 200809L
#include "core/core.h"
#include "containers/zip.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 4096
#define ZEROS (1 << 20)

typedef struct sparse_out {
    int fd;
    uint64_t at;
} sparse_out;

static bool all_zero(const uint8_t *p, size_t n)
{
    static const uint8_t zero[BLOCK];
    for (size_t k = 0; k < n; k += BLOCK)
        if (memcmp(p + k, zero, n - k < BLOCK ? n - k : BLOCK)) return false;
    return true;
}

static int sparse_write(void *ctx, const void *buf, size_t n)
{
    sparse_out *o = ctx;
    const uint8_t *p = buf;
    size_t done = 0;
    while (done < n) {
        size_t len = n - done < BLOCK ? n - done : BLOCK;
        if (len == BLOCK && all_zero(p + done, len)) {
            if (lseek(o->fd, (off_t)len, SEEK_CUR) < 0) return -1;
        } else {
            for (size_t w = 0; w < len;) {
                ssize_t got = write(o->fd, p + done + w, len - w);
                if (got <= 0) return -1;
                w += (size_t)got;
            }
        }
        done += len;
    }
    o->at += n;
    return 0;
}

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

/* ---- the model's pickle (protocol 2, as torch.save writes a state dict) ---- */

static void p_int(strbuf *sb, uint64_t v)
{
    uint8_t b[5] = {'J', (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    if (v < 256) b[0] = 'K', sb_put(sb, (const char *)b, 2);
    else if (v < 65536) b[0] = 'M', sb_put(sb, (const char *)b, 3);
    else sb_put(sb, (const char *)b, 5); /* every dim and numel here is below 2^31 */
}

static void p_str(strbuf *sb, const char *s)
{
    size_t n = strlen(s);
    uint8_t b[5] = {'X', (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    sb_put(sb, (const char *)b, 5);
    sb_put(sb, s, n);
}

static void p_global(strbuf *sb, const char *module, const char *name)
{
    sb_putc(sb, 'c');
    sb_puts(sb, module);
    sb_putc(sb, '\n');
    sb_puts(sb, name);
    sb_putc(sb, '\n');
}

static void p_tuple(strbuf *sb, const uint64_t *v, size_t n)
{
    if (n == 0) return sb_putc(sb, ')');
    if (n > 3) sb_putc(sb, '(');
    for (size_t k = 0; k < n; k++) p_int(sb, v[k]);
    sb_putc(sb, n == 1 ? (char)0x85 : n == 2 ? (char)0x86 : n == 3 ? (char)0x87 : 't');
}

typedef struct tensor {
    char name[128];
    size_t rank;
    uint64_t dims[8], numel;
} tensor;

static void p_tensor(strbuf *sb, const tensor *t, uint64_t key)
{
    uint64_t stride[8], acc = 1;
    for (size_t d = t->rank; d-- > 0;) stride[d] = acc, acc *= t->dims[d] ? t->dims[d] : 1;
    char k[24];
    snprintf(k, sizeof k, "%llu", (unsigned long long)key);
    p_global(sb, "torch._utils", "_rebuild_tensor_v2");
    sb_put(sb, "((", 2);
    p_str(sb, "storage");
    p_global(sb, "torch", "FloatStorage");
    p_str(sb, k);
    p_str(sb, "cpu");
    p_int(sb, t->numel);
    sb_put(sb, "tQ", 2);
    p_int(sb, 0);
    p_tuple(sb, t->dims, t->rank);
    p_tuple(sb, stride, t->rank);
    sb_putc(sb, (char)0x89); /* requires_grad False */
    p_global(sb, "collections", "OrderedDict");
    sb_put(sb, ")RtR", 4);
}

static int member(ckpt_zip_writer *zw, const char *prefix, const char *name, const void *data, size_t n)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    if (ckpt_zip_begin(zw, path) || ckpt_zip_write(zw, data, n)) return 1;
    return ckpt_zip_end(zw);
}

static int write_model(const ckpt_sink *sink, ckpt_error *err)
{
    tensor *t = NULL;
    size_t n = 0, cap = 0;
    char line[512];
    while (fgets(line, sizeof line, stdin)) {
        if (n == cap) t = realloc(t, (cap = cap ? 2 * cap : 512) * sizeof *t);
        tensor *x = &t[n];
        int used = 0;
        unsigned rank;
        if (sscanf(line, "%127s %u%n", x->name, &rank, &used) != 2 || rank > 8) continue;
        x->rank = rank;
        x->numel = 1;
        char *at = line + used;
        for (size_t d = 0; d < rank; d++) {
            x->dims[d] = strtoull(at, &at, 10);
            x->numel *= x->dims[d];
        }
        n++;
    }
    strbuf sb = {0};
    sb_put(&sb, "\x80\x02", 2);
    p_global(&sb, "collections", "OrderedDict");
    sb_put(&sb, ")R", 2);
    if (n) sb_putc(&sb, '(');
    for (size_t k = 0; k < n; k++) p_str(&sb, t[k].name), p_tensor(&sb, &t[k], k);
    if (n) sb_putc(&sb, 'u');
    sb_putc(&sb, '.');
    const char *prefix = "pytorch_model";
    ckpt_zip_writer zw;
    ckpt_zip_writer_init(&zw, sink, err);
    zw.align = 64;
    uint8_t *zeros = calloc(1, ZEROS);
    int rc = sb.failed || !zeros || member(&zw, prefix, "data.pkl", sb.data, sb.len) ||
             member(&zw, prefix, "byteorder", "little", 6);
    for (size_t k = 0; k < n && !rc; k++) {
        char path[160];
        snprintf(path, sizeof path, "%s/data/%zu", prefix, k);
        rc = ckpt_zip_begin(&zw, path);
        for (uint64_t left = 4 * t[k].numel; left && !rc; left -= left < ZEROS ? left : ZEROS)
            rc = ckpt_zip_write(&zw, zeros, left < ZEROS ? (size_t)left : ZEROS);
        if (!rc) rc = ckpt_zip_end(&zw);
    }
    if (!rc) rc = member(&zw, prefix, "version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&zw);
    ckpt_zip_writer_free(&zw);
    sb_free(&sb);
    free(zeros);
    free(t);
    return rc;
}

int main(int argc, char **argv)
{
    bool opt = argc == 4 && !strcmp(argv[1], "optimizer"), model = argc == 3 && !strcmp(argv[1], "model");
    if (!opt && !model)
        return fprintf(stderr, "usage: torch_sparse optimizer IN.ckpt OUT.pt | model OUT.bin < SPEC\n"), 2;
    const char *dest = argv[argc - 1];
    sparse_out out = {open(dest, O_WRONLY | O_CREAT | O_TRUNC, 0644), 0};
    if (out.fd < 0) return perror(dest), 2;
    ckpt_sink sink = {&out, sparse_write};
    ckpt_error err = {0};
    int rc;
    if (opt) {
        int fd = open(argv[2], O_RDONLY);
        if (fd < 0) return perror(argv[2]), 2;
        struct stat st;
        fstat(fd, &st);
        ckpt_source src = {&fd, pread_source, (uint64_t)st.st_size};
        ckpt_file *in = ckpt_open(&src, NULL);
        ckpt_torch_options o = {true, 1e-4, "optimizer", NULL, NULL};
        rc = ckpt_convert_to_torch(in, NULL, &o, &sink, &err);
        ckpt_close(in);
        close(fd);
    } else {
        rc = write_model(&sink, &err);
    }
    /* a file that ends in a hole: its size set past the last block written */
    if (!rc && ftruncate(out.fd, (off_t)out.at)) rc = 1;
    close(out.fd);
    if (rc) fprintf(stderr, "torch_sparse: %s\n", err.message ? err.message : "failed");
    ckpt_error_clear(&err);
    return rc ? 1 : 0;
}
