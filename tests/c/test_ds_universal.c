/* Writing a universal checkpoint (format.md 11.7): for every case of
 * OUT/universal-write/manifest.json (tests/c/deepspeed_seeds.py: DeepSpeed's own
 * zero2-w3-for-universal and folders of the seeds' ZeRO writer, with universal_checkpoint_info's
 * patterns and refusals), the plan's refusal or warnings exactly; then every file written as the
 * CLI writes them (a sibling folder renamed, latest_universal last), read back as a DeepSpeed
 * checkpoint (valid, universal, each tensor equal bit for bit to the source's fragments where no
 * pattern changes it). universal_check.py then compares the files with what ds_to_universal writes.
 * Usage: test_ds_universal OUT */
#include "ds_folder.h"
#include "families/deepspeed/deepspeed.h"
#include "minijson.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

static const char *out_dir;

static ckpt_file *open_bytes(const unsigned char *b, size_t len, ckpt_memory *mem)
{
    ckpt_source src;
    ckpt_source_memory(&src, mem, b, len);
    ckpt_inspect_options o = {0, NULL, NULL};
    return ckpt_open(&src, &o);
}

static void mkdirs(const char *path)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static int file_write(void *ctx, const void *data, size_t n) { return fwrite(data, 1, n, ctx) == n ? 0 : -1; }

/* A parameter's key from its fragments, as bytes. */
static unsigned char *key_bytes(const ckpt_ds *ds, const unsigned char *b, size_t p, int key, size_t *len)
{
    ds_frag_at frags[64];
    size_t n = ckpt_ds_fragments(ds, p, key, frags), total = 0;
    for (size_t j = 0; j < n; j++) total += frags[j].count * 4;
    unsigned char *out = malloc(total ? total : 1);
    size_t at = 0;
    for (size_t j = 0; j < n; j++) {
        memcpy(out + at, b + frags[j].at, frags[j].count * 4);
        at += frags[j].count * 4;
    }
    *len = total;
    return out;
}

static void test_writes(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/universal-write/manifest.json", out_dir);
    char *text = json_read_file(path);
    jvalue *man = text ? json_parse(text) : NULL;
    free(text);
    const jvalue *writes = json_get(man, "writes");
    CHECK(writes && writes->len >= 10);
    for (size_t c = 0; writes && c < writes->len; c++) {
        const jvalue *w = writes->items[c];
        const char *name = json_get(w, "name")->text, *src = json_get(w, "src")->text, *out = json_get(w, "out")->text;
        t_current = name;
        size_t len;
        unsigned char *b = ds_folder_bytes(src, src, &len, NULL);
        CHECK(b != NULL);
        if (!b) continue;
        static ckpt_memory mem;
        ckpt_file *f = open_bytes(b, len, &mem);
        const ckpt_report *rep = ckpt_file_report(f);
        CHECK(rep->error.code == 0);
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_universal *u = ckpt_universal_plan(f, &err);
        char *plan = u ? ckpt_universal_plan_json(u) : NULL;
        const jvalue *want_err = json_get(w, "error");
        if (!json_is_null(want_err)) {
            CHECK(u == NULL);
            CHECK(err.code == (int)json_u64(json_get(want_err, "code")));
            CHECK_STR(err.message, json_get(want_err, "message")->text);
            ckpt_error_clear(&err);
            free(plan);
            ckpt_close(f);
            free(b);
            continue;
        }
        CHECK(plan != NULL);
        if (!plan) {
            fprintf(stderr, "  %s\n", err.message);
            ckpt_error_clear(&err);
            ckpt_universal_free(u);
            ckpt_close(f);
            free(b);
            continue;
        }
        jvalue *pj = json_parse(plan);
        const jvalue *warns = json_get(pj, "warnings"), *want_w = json_get(w, "warnings");
        CHECK(warns->len == want_w->len);
        for (size_t k = 0; k < warns->len && k < want_w->len; k++)
            CHECK_STR(warns->items[k]->text, want_w->items[k]->text);
        /* the folder written as the CLI writes it: {UTAG}.tmp-{nanos}, renamed, latest_universal last */
        const jvalue *files = json_get(pj, "files");
        char rm[8300];
        snprintf(rm, sizeof rm, "rm -rf '%s'", out); /* a run before this one */
        CHECK(system(rm) == 0);
        char tmp[4096];
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        snprintf(tmp, sizeof tmp, "%s.tmp-%lld%09ld", out, (long long)ts.tv_sec, ts.tv_nsec);
        mkdirs(tmp);
        for (size_t k = 0; k < files->len; k++) {
            char fp[8300];
            snprintf(fp, sizeof fp, "%s/%s", tmp, files->items[k]->text);
            char *slash = strrchr(fp, '/');
            *slash = 0;
            mkdirs(fp);
            *slash = '/';
            FILE *o = fopen(fp, "wb");
            CHECK(o != NULL);
            if (!o) continue;
            ckpt_sink sink = {o, file_write};
            int rc = ckpt_universal_write(u, k, &sink, &err);
            CHECK(rc == 0);
            if (rc) fprintf(stderr, "  %s: %s\n", files->items[k]->text, err.message);
            ckpt_error_clear(&err);
            fclose(o);
        }
        /* a file past the plan's */
        ckpt_sink none = {NULL, file_write};
        CHECK(ckpt_universal_write(u, files->len, &none, &err) == CKPT_E_INVALID_ARGUMENT);
        ckpt_error_clear(&err);
        CHECK(rename(tmp, out) == 0);
        char latest[4200], parent[4096];
        snprintf(parent, sizeof parent, "%s", out);
        *strrchr(parent, '/') = 0;
        snprintf(latest, sizeof latest, "%s/latest_universal", parent);
        FILE *l = fopen(latest, "wb");
        fputs(strrchr(out, '/') + 1, l);
        fclose(l);
        /* read back: a valid universal checkpoint, each plain tensor equal to the source's fragments */
        size_t ulen;
        unsigned char *ub = ds_folder_bytes(parent, parent, &ulen, NULL);
        CHECK(ub != NULL);
        static ckpt_memory umem;
        ckpt_file *uf = ub ? open_bytes(ub, ulen, &umem) : NULL;
        const ckpt_report *urep = uf ? ckpt_file_report(uf) : NULL;
        const ckpt_ds *uds = ckpt_ds_of(urep), *ds = ckpt_ds_of(rep);
        CHECK(urep && urep->error.code == 0 && uds && uds->universal);
        if (urep && urep->error.code) fprintf(stderr, "  read back: %s\n", urep->error.message);
        bool patterns = strstr(name, "patterns") != NULL;
        for (size_t p = 0; uds && !patterns && p < uds->params_len && p < ds->params_len; p++) {
            CHECK_STR(uds->params[p].name, ds->params[p].name);
            CHECK(uds->groups[p < uds->params_len ? uds->params[p].flat : 0].step ==
                  ds->groups[ds->params[p].flat].step);
            static const int keys[3] = {DS_EXP_AVG, DS_EXP_AVG_SQ, DS_FP32};
            for (int k = 0; k < 3; k++) {
                size_t la, lb;
                unsigned char *a = key_bytes(uds, ub, p, keys[k], &la), *e = key_bytes(ds, b, p, keys[k], &lb);
                CHECK(la == lb && la == ds->params[p].count * 4 && !memcmp(a, e, la));
                free(a);
                free(e);
            }
        }
        ckpt_close(uf);
        free(ub);
        json_free(pj);
        free(plan);
        ckpt_universal_free(u);
        ckpt_close(f);
        free(b);
    }
    json_free(man);
}

/* The refusals of a checkpoint that is no ZeRO-1/2 folder. */
static void test_refusals(void)
{
    t_current = "refusals";
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_universal_plan(NULL, &err) == NULL && err.code == CKPT_E_INVALID_ARGUMENT);
    ckpt_error_clear(&err);
    CHECK(ckpt_universal_write(NULL, 0, NULL, &err) == CKPT_E_INVALID_ARGUMENT);
    ckpt_error_clear(&err);
    /* a universal checkpoint is one already */
    char path[4096];
    snprintf(path, sizeof path, "%s/folders/u-zero2-w2", out_dir);
    size_t len;
    unsigned char *b = ds_folder_bytes(path, path, &len, NULL);
    static ckpt_memory mem;
    ckpt_file *f = open_bytes(b, len, &mem);
    CHECK(ckpt_universal_plan(f, &err) == NULL && err.code == CKPT_E_DS_UNSUPPORTED);
    char want[4200];
    snprintf(want, sizeof want, "DeepSpeed: %s/global_step2 is a universal checkpoint already", path);
    CHECK_STR(err.message, want);
    ckpt_error_clear(&err);
    ckpt_close(f);
    free(b);
}

/* The folder plan of a universal save_dir: the model states and every file of zero/ and
 * zero/{name}/, nothing deeper, after latest_universal. */
static void test_plan(void)
{
    t_current = "plan";
    const char *listing =
        "{\"root\":\"d\",\"entries\":[{\"name\":\"latest_universal\",\"size\":12},{\"name\":\"global_step2/\"},"
        "{\"name\":\"global_step2/mp_rank_00_model_states.pt\",\"size\":10},{\"name\":\"global_step2/zero/\"},"
        "{\"name\":\"global_step2/zero/optimizer_state.pt\",\"size\":5},{\"name\":\"global_step2/zero/w/\"},"
        "{\"name\":\"global_step2/zero/w/fp32.pt\",\"size\":7},{\"name\":\"global_step2/zero/w/deep/\"},"
        "{\"name\":\"global_step2/zero/w/deep/x.pt\",\"size\":3}],\"texts\":{\"latest_universal\":\"global_step2\"}}";
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *p = ckpt_deepspeed_folder_json(listing, strlen(listing), &err);
    jvalue *j = p ? json_parse(p) : NULL;
    const jvalue *m = json_get(j, "members");
    static const char *const want[] = {"latest_universal", "global_step2/mp_rank_00_model_states.pt",
                                       "global_step2/zero/optimizer_state.pt", "global_step2/zero/w/fp32.pt"};
    CHECK(m && m->len == 4);
    for (size_t k = 0; m && k < m->len && k < 4; k++) CHECK_STR(json_get(m->items[k], "name")->text, want[k]);
    CHECK_STR(json_get(j, "tag")->text, "global_step2");
    json_free(j);
    free(p);
    ckpt_error_clear(&err);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_ds_universal OUT\n");
        return 2;
    }
    out_dir = argv[1];
    static const test_case cases[] = {
        {"every write of the manifest", test_writes},
        {"refusals", test_refusals},
        {"the folder plan of a universal save_dir", test_plan},
    };
    return RUN_ALL(cases);
}
