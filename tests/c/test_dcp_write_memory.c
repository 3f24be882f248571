/* The DCP writer's memory (docs/distributed.md: payloads streamed): every allocation is counted
 * (alloc_count.h), and while the seed's large/ pair (one parameter of 16 MB: model, exp_avg and
 * exp_avg_sq each 16 MB) is written as a DCP folder, the most alive at once stays under 8 MB: no
 * tensor is ever held whole (the readers' chunks are 1 MB). Usage: test_dcp_write_memory SEED_DIR */
#include "alloc_count.h"
#include "testutil.h"

enum { BOUND = 8 << 20 };

static uint64_t written;
static int count_sink(void *ctx, const void *buf, size_t n)
{
    (void)ctx, (void)buf;
    written += n;
    return 0;
}

static const char *seed_dir;

typedef struct opened {
    uint8_t *bytes;
    size_t len;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f;
} opened;

static void open_in(opened *o, const char *name)
{
    o->bytes = read_file_in(seed_dir, name, &o->len);
    CHECK(o->bytes != NULL);
    ckpt_source_memory(&o->src, &o->mem, o->bytes ? o->bytes : (uint8_t *)"", o->bytes ? o->len : 0);
    o->f = ckpt_open(&o->src, NULL);
}

static void test_bounded(void)
{
    opened opt, model;
    open_in(&opt, "large/optimizer.pt");
    open_in(&model, "large/model.pt");
    CHECK(opt.len > 4 * BOUND && model.len > 2 * BOUND);
    for (int form = 0; form < 2; form++) {
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_sink data = {NULL, count_sink}, meta = {NULL, count_sink};
        ckpt_dcp_write_options o = {form == 1, "/tmp/large", NULL, NULL, NULL};
        ckpt_dcp_write_result res;
        written = 0;
        alloc_count_start();
        int rc = ckpt_dcp_write(opt.f, model.f, &o, &data, &meta, &res, &err);
        size_t peak = alloc_count_stop().peak;
        CHECK(rc == 0);
        CHECK(res.tensors == 4 && written > res.data_bytes && res.data_bytes > 6 * (uint64_t)BOUND);
        CHECK(peak < BOUND);
        fprintf(stderr, "torch %s: %llu bytes written, %zu bytes alive at most\n", form ? "1.13" : ">= 2.4",
                (unsigned long long)written, peak);
        ckpt_error_clear(&err);
        /* a file pairs once: open the pair again for the other form */
        ckpt_close(opt.f);
        ckpt_close(model.f);
        opt.f = ckpt_open(&opt.src, NULL);
        model.f = ckpt_open(&model.src, NULL);
    }
    ckpt_close(opt.f);
    ckpt_close(model.f);
    free(opt.bytes);
    free(model.bytes);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_dcp_write_memory SEED_DIR\n");
        return 2;
    }
    seed_dir = argv[1];
    static const test_case cases[] = {{"a 16 MB parameter written in bounded memory", test_bounded}};
    return RUN_ALL(cases);
}
