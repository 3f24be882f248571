/* DeepSpeed conversions (format.md 11.8). For every entry of the manifest's "converts" (DeepSpeed's
 * own fixtures and folders written by tests/c/deepspeed_seeds.py): the consolidated optimizer and
 * fp32 model written to OUT/{name}/ (tests/c/ds_convert_check.py loads them in torch and compares
 * them with the writer's values, the independent reconstruction and truth.pt), or the refusal's
 * exact code and text; and the TorchLean route (ckpt_ds_convert), with and without options, against
 * the two-step path (the written pair opened, paired and converted): the same bytes, or the same
 * refusal. Usage: test_ds_convert SEEDS_OUT OUT */
#include "ds_folder.h"
#include "base/error.h"
#include "minijson.h"
#include "testutil.h"

#include <sys/stat.h>

static const char *out_dir;
static jvalue *manifest;

static int file_sink(void *ctx, const void *buf, size_t n) { return fwrite(buf, 1, n, ctx) == n ? 0 : -1; }

static int write_file(const ckpt_file *f, int which, const char *prefix, const char *path, ckpt_error *err)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return -1;
    ckpt_sink out = {fp, file_sink};
    ckpt_ds_consolidate_options o = {which, prefix, NULL, NULL};
    int rc = ckpt_ds_consolidate(f, &o, &out, err);
    fclose(fp);
    return rc;
}

static void want_error(const ckpt_error *e, const jvalue *want)
{
    CHECK(e->code == (int)json_u64(json_get(want, "code")));
    CHECK_STR(e->message, json_get(want, "message")->text);
}

/* The two-step path: the files written, opened, paired and converted. */
static int two_step(const char *opt_path, const char *model_path, const ckpt_convert_options *o, ckpt_buffer *out,
                    ckpt_error *err)
{
    size_t ol, ml;
    unsigned char *ob = ds_file_bytes(opt_path, &ol), *mb = ds_file_bytes(model_path, &ml);
    int rc = pair_convert_bytes(ob, ol, mb, ml, o, out, err);
    CHECK(rc != -1);
    free(ob);
    free(mb);
    return rc;
}

static void test_converts(void)
{
    const jvalue *list = json_get(manifest, "converts");
    CHECK(list && list->len >= 10);
    for (size_t c = 0; list && c < list->len; c++) {
        const jvalue *cs = list->items[c];
        const char *name = json_get(cs, "name")->text, *dir = json_get(cs, "dir")->text;
        t_current = name;
        size_t len = 0;
        unsigned char *b = ds_folder_bytes(dir, dir, &len, NULL);
        CHECK(b != NULL);
        if (!b) continue;
        ckpt_source src;
        ckpt_memory mem;
        ckpt_source_memory(&src, &mem, b, len);
        ckpt_file *f = ckpt_open(&src, NULL);
        char sub[4096], opt_path[4200], model_path[4200];
        snprintf(sub, sizeof sub, "%s/%s", out_dir, name);
        mkdir(sub, 0777);
        snprintf(opt_path, sizeof opt_path, "%s/optimizer.pt", sub);
        snprintf(model_path, sizeof model_path, "%s/model.pt", sub);
        ckpt_error e1 = {0}, e2 = {0};
        ckpt_error_clear(&e1);
        ckpt_error_clear(&e2);
        int r1 = write_file(f, CKPT_DS_OPTIMIZER, "optimizer", opt_path, &e1);
        int r2 = write_file(f, CKPT_DS_MODEL, "model", model_path, &e2);
        if (!r2) { /* the same model as safetensors: the core reads it back without a word */
            char st_path[4300];
            snprintf(st_path, sizeof st_path, "%s/model.safetensors", sub);
            ckpt_error e4 = {0};
            ckpt_error_clear(&e4);
            CHECK(write_file(f, CKPT_DS_MODEL_SAFETENSORS, NULL, st_path, &e4) == 0);
            ckpt_error_clear(&e4);
            size_t sl;
            unsigned char *sb = ds_file_bytes(st_path, &sl);
            ckpt_source ss;
            ckpt_memory sm;
            ckpt_source_memory(&ss, &sm, sb, sl);
            ckpt_report *sr = ckpt_inspect(&ss, NULL);
            CHECK(sr && sr->error.code == 0 && sr->family && !strcmp(sr->family->magic, "safetensors"));
            if (sr && sr->error.code) fprintf(stderr, "  %s\n", sr->error.message);
            ckpt_report_free(sr);
            free(sb);
        }
        /* the warnings (a group stored in round-robin order), exactly */
        char *warnings = ckpt_ds_consolidate_warnings(f);
        jvalue *got = warnings ? json_parse(warnings) : NULL;
        const jvalue *expect = json_get(cs, "warnings");
        CHECK(got && got->type == JARR && got->len == (expect ? expect->len : 0));
        for (size_t k = 0; got && expect && k < got->len && k < expect->len; k++)
            CHECK_STR(got->items[k]->text, expect->items[k]->text);
        json_free(got);
        free(warnings);
        const jvalue *want = json_get(cs, "error");
        if (!json_is_null(want)) {
            want_error(&e1, want);
            want_error(&e2, want);
            ckpt_convert_options o = {0};
            o.oldest = true;
            ckpt_buffer buf = {0};
            ckpt_sink sink;
            ckpt_sink_buffer(&sink, &buf);
            ckpt_error e3 = {0};
            ckpt_error_clear(&e3);
            CHECK(ckpt_ds_convert(f, &o, NULL, 0, &sink, NULL, NULL, &e3) != 0);
            want_error(&e3, want);
            ckpt_error_clear(&e3);
            ckpt_buffer_free(&buf);
        } else {
            CHECK(r1 == 0 && r2 == 0);
            if (r1 || r2) fprintf(stderr, "  %s / %s\n", e1.message, e2.message);
            /* TorchLean: as the file says, then with the options a PyTorch pair may need */
            for (int variant = 0; !r1 && !r2 && variant < 2; variant++) {
                ckpt_convert_options o = {0};
                o.oldest = true;
                if (variant) {
                    o.kind = 1 + CKPT_ADAMW;
                    o.has_weight_decay = true;
                    o.weight_decay = 0.01;
                    o.drop_amsgrad = true;
                }
                ckpt_buffer direct = {0}, two = {0};
                ckpt_sink sink;
                ckpt_sink_buffer(&sink, &direct);
                ckpt_error ed = {0}, et = {0};
                ckpt_error_clear(&ed);
                ckpt_error_clear(&et);
                char *note = NULL;
                int rd = ckpt_ds_convert(f, &o, NULL, 0, &sink, NULL, &note, &ed);
                int rt = two_step(opt_path, model_path, &o, &two, &et);
                CHECK(rd == rt);
                CHECK_STR(ed.message ? ed.message : "", et.message ? et.message : "");
                if (!rd && !rt) {
                    CHECK(direct.len == two.len && direct.len > 0 && !memcmp(direct.data, two.data, direct.len));
                    const jvalue *conv = json_get(cs, "tladamf");
                    CHECK(!variant || conv == NULL || json_get(conv, "ok")->b);
                    if (variant) { /* the file written, for the check script */
                        char path[4300];
                        snprintf(path, sizeof path, "%s/direct.ckpt", sub);
                        FILE *fp = fopen(path, "wb");
                        if (fp) {
                            fwrite(direct.data, 1, direct.len, fp);
                            fclose(fp);
                        }
                    }
                } else if (variant) {
                    fprintf(stderr, "  [%s] TorchLean with options refused: %s\n", name, ed.message);
                    CHECK(json_get(cs, "tladamf") != NULL && !json_get(json_get(cs, "tladamf"), "ok")->b);
                }
                if (!variant && json_get(cs, "refused") && !json_is_null(json_get(cs, "refused")))
                    CHECK_STR(ed.message ? ed.message : "", json_get(cs, "refused")->text);
                free(note);
                ckpt_error_clear(&ed);
                ckpt_error_clear(&et);
                ckpt_buffer_free(&direct);
                ckpt_buffer_free(&two);
            }
        }
        ckpt_error_clear(&e1);
        ckpt_error_clear(&e2);
        ckpt_close(f);
        free(b);
    }
}

/* Not a DeepSpeed folder: refused as such. */
static void test_wrong_family(void)
{
    static const unsigned char junk[16] = "not a checkpoint";
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, junk, sizeof junk);
    ckpt_file *f = ckpt_open(&src, NULL);
    ckpt_buffer buf = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    ckpt_ds_consolidate_options o = {CKPT_DS_OPTIMIZER, NULL, NULL, NULL};
    CHECK(ckpt_ds_consolidate(f, &o, &sink, &e) == CKPT_E_WRONG_FAMILY);
    CHECK_STR(e.message, "this is not a DeepSpeed checkpoint folder");
    ckpt_error_clear(&e);
    ckpt_buffer_free(&buf);
    ckpt_close(f);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_ds_convert SEEDS_OUT OUT\n");
        return 2;
    }
    out_dir = argv[2];
    mkdir(out_dir, 0777);
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
    char *text = json_read_file(path);
    if (!text || !(manifest = json_parse(text))) {
        fprintf(stderr, "test_ds_convert: cannot read %s\n", path);
        return 2;
    }
    free(text);
    static const test_case cases[] = {
        {"every conversion of the manifest, and TorchLean against the two-step path", test_converts},
        {"a file that is no DeepSpeed folder", test_wrong_family},
    };
    int rc = RUN_ALL(cases);
    json_free(manifest);
    return rc;
}
