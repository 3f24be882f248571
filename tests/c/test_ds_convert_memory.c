/* The DeepSpeed conversions' memory (format.md 11.8: payloads streamed from the fragments, never
 * a flat buffer): every allocation is counted (alloc_count.h), and while the folder conv-zero2-w2-large of the
 * DeepSpeed manifest (a parameter of 16 MB per tensor, 8 MB on each of two ranks) is written as the consolidated
 * optimizer, the fp32 model (torch.save and safetensors) and a TLADAMF file, the most alive at once stays under 8 MB:
 * no tensor, nor one rank's fragment of it, is ever gathered (the readers' chunks are 1 MB). Usage:
 * test_ds_convert_memory SEEDS_OUT */
#include "alloc_count.h"
#include "ds_folder.h"
#include "minijson.h"
#include "testutil.h"

enum { BOUND = 8 << 20 };

static uint64_t written;
static int count_sink(void *ctx, const void *buf, size_t n)
{
    (void)ctx, (void)buf;
    written += n;
    return 0;
}

static const char *seeds;

static void test_bounded(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", seeds);
    char *text = json_read_file(path);
    jvalue *manifest = text ? json_parse(text) : NULL;
    free(text);
    const jvalue *cs = json_get(manifest, "large");
    CHECK(cs != NULL);
    if (!cs) return json_free(manifest);
    const char *dir = json_get(cs, "dir")->text;
    size_t len = 0;
    unsigned char *b = ds_folder_bytes(dir, dir, &len, NULL);
    CHECK(b && len > 6 * BOUND);
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = ckpt_open(&src, NULL);
    ckpt_sink out = {NULL, count_sink};
    static const char *const what[] = {"optimizer", "model", "model.safetensors", "TLADAMF"};
    for (int k = 0; k < 4; k++) {
        t_current = what[k];
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        written = 0;
        alloc_count_start();
        int rc;
        if (k < 3) {
            ckpt_ds_consolidate_options o = {k + 1, NULL, NULL, NULL};
            rc = ckpt_ds_consolidate(f, &o, &out, &err);
        } else {
            ckpt_convert_options o = {0};
            o.oldest = true;
            o.kind = 1 + CKPT_ADAMW;
            rc = ckpt_ds_convert(f, &o, NULL, 0, &out, NULL, NULL, &err);
        }
        size_t peak = alloc_count_stop().peak;
        CHECK(rc == 0);
        CHECK(written > 2 * BOUND); /* at least one whole tensor went through */
        CHECK(peak < BOUND);
        fprintf(stderr, "  %s: %llu bytes written, at most %zu bytes allocated at once\n", what[k],
                (unsigned long long)written, peak);
        if (rc) fprintf(stderr, "  %s\n", err.message);
        ckpt_error_clear(&err);
    }
    ckpt_close(f);
    free(b);
    json_free(manifest);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_ds_convert_memory SEEDS_OUT\n");
        return 2;
    }
    seeds = argv[1];
    static const test_case cases[] = {
        {"the conversions of a 16 MB parameter allocate under 8 MB at once", test_bounded},
    };
    return RUN_ALL(cases);
}
