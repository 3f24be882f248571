/* PyTorch Distributed Checkpoint folders (format.md 12): torch 1.13's own folder
 * (tests/fixtures/dcp-torch113: 2 ranks, row chunks) read through the bundle the JS package lays
 * out, its .metadata alone and a .distcp alone, and each check of 12.5 on a copy of the folder
 * changed here or on a folder of torch >= 2.0's classes written by dcp_core_seeds.py. Keys, shapes,
 * chunks and byte ranges are compared exactly with what the files hold (the record offsets below
 * were read from the fixture with Python's pickle). Two more modes: WRITTEN, the folders the core's
 * own writer wrote (c_dcp_written); --cases CASES, every folder of tests/cases/dcp.json
 * (dcp_seeds.py's), each valid one exported into WORKDIR for dcp_core_truth.py (c_dcp_table). */
#define _DEFAULT_SOURCE /* symlink */
#include "core/family.h"
#include "ds_folder.h"
#include "minijson.h"
#include "testutil.h"

#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *fixture; /* tests/fixtures/dcp-torch113 */
static const char *work;    /* a scratch folder */
static const char *seeds;   /* the folders tests/c/dcp_core_seeds.py wrote, and its manifest */
static const char *written; /* the folders src/writers/dcp_write.c wrote (test_dcp_write), or NULL */
static const char *cases;   /* the folders tests/c/dcp_seeds.py wrote, with its cases.json, or NULL */

static jvalue *inspect_memory(const unsigned char *data, size_t len, char **text_out)
{
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, data, len);
    ckpt_report *rep = ckpt_inspect(&src, NULL);
    char *text = ckpt_report_json(rep);
    jvalue *v = text ? json_parse(text) : NULL;
    if (text_out) *text_out = text;
    else free(text);
    ckpt_report_free(rep);
    return v;
}

/* the folder `dir`, named `root` in texts, inspected with `flags`: its report, parsed */
static jvalue *inspect_folder_as(const char *dir, const char *root, unsigned flags)
{
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(dir, root, &len, NULL);
    CHECK(b != NULL);
    if (!b) return NULL;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_inspect_options o = {flags, NULL, NULL};
    ckpt_report *rep = ckpt_inspect(&src, &o);
    char *text = ckpt_report_json(rep);
    jvalue *v = text ? json_parse(text) : NULL;
    free(text);
    ckpt_report_free(rep);
    free(b);
    return v;
}

static jvalue *inspect_folder_opts(const char *dir, unsigned flags) { return inspect_folder_as(dir, "ckpt", flags); }

static jvalue *inspect_folder(const char *dir) { return inspect_folder_opts(dir, 0); }

static const char *str(const jvalue *v) { return v && v->type == JSTR ? v->text : NULL; }

static bool dims_are(const jvalue *v, size_t n, const uint64_t *want)
{
    if (!v || v->type != JARR || v->len != n) return false;
    for (size_t k = 0; k < n; k++)
        if (json_u64(v->items[k]) != want[k]) return false;
    return true;
}

static void test_folder_index(void)
{
    jvalue *r = inspect_folder(fixture);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_STR(str(json_get(r, "family")), "DCP");
    CHECK(json_get(r, "ok")->b == true);
    const jvalue *d = json_get(r, "dcp");
    CHECK_STR(str(json_get(d, "opened")), "folder");
    CHECK_STR(str(json_get(d, "root")), "ckpt");
    CHECK(json_is_null(json_get(d, "version")));
    CHECK_STR(str(json_get(d, "classes")), "torch 1.13");
    CHECK(json_get(d, "plannerData")->b == false);
    CHECK_STR(str(json_get(d, "form")), "N");
    const jvalue *keys = json_get(d, "keys");
    CHECK(json_u64(json_get(keys, "model")) == 9);
    CHECK(json_u64(json_get(keys, "optimizer")) == 24);
    CHECK(json_u64(json_get(keys, "other")) == 0);
    const jvalue *files = json_get(d, "files");
    CHECK(files->len == 2);
    CHECK_STR(str(json_get(files->items[0], "name")), "__0_0.distcp");
    CHECK(json_u64(json_get(files->items[0], "size")) == 24599);
    CHECK(json_u64(json_get(files->items[0], "items")) == 33);
    CHECK(json_u64(json_get(files->items[0], "rank")) == 0);
    CHECK_STR(str(json_get(files->items[1], "name")), "__1_0.distcp");
    CHECK(json_u64(json_get(files->items[1], "size")) == 17821);
    CHECK(json_u64(json_get(files->items[1], "items")) == 23);
    CHECK(json_u64(json_get(files->items[1], "rank")) == 1);
    CHECK(json_get(d, "strays")->len == 0);
    /* the group: its values read from the bytes items' records */
    const jvalue *groups = json_get(d, "groups");
    CHECK(groups->len == 1);
    CHECK(json_double(json_get(groups->items[0], "lr")) == 0.01);
    CHECK(json_double(json_get(groups->items[0], "betas")->items[0]) == 0.9);
    CHECK(json_double(json_get(groups->items[0], "betas")->items[1]) == 0.999);
    CHECK(json_is_null(json_get(groups->items[0], "eps")));
    const jvalue *params = json_get(groups->items[0], "params");
    static const char *const trained[] = {"emb.weight", "l1.weight", "l1.bias", "ln.weight",
                                          "ln.bias",    "l2.weight", "l2.bias"};
    CHECK(params->len == 7);
    for (size_t k = 0; k < 7 && k < params->len; k++) CHECK_STR(str(params->items[k]), trained[k]);
    const jvalue *bi = json_get(d, "bytesItems");
    CHECK(bi->len == 3);
    CHECK_STR(str(json_get(bi->items[0], "key")), "optim.param_groups.0.lr");
    CHECK_STR(str(json_get(bi->items[0], "file")), "__0_0.distcp");
    CHECK(json_u64(json_get(bi->items[0], "offset")) == 0 && json_u64(json_get(bi->items[0], "length")) == 431);
    CHECK(json_u64(json_get(bi->items[2], "offset")) == 862 && json_u64(json_get(bi->items[2], "length")) == 495);
    /* the slots: the model's 9 tensors in module order, 7 with state */
    static const char *const slots[] = {"emb.weight", "l1.weight", "l1.bias",       "ln.weight",  "ln.bias",
                                        "l2.weight",  "l2.bias",   "frozen.weight", "frozen.bias"};
    const jvalue *es = json_get(d, "entries");
    CHECK(es->len == 9);
    for (size_t k = 0; k < 9 && k < es->len; k++) {
        const jvalue *e = es->items[k];
        CHECK_STR(str(json_get(e, "name")), slots[k]);
        CHECK_STR(str(json_get(e, "dtype")), "F32");
        CHECK((json_get(e, "trainable")->b == true) == (k < 7));
        if (k < 7) {
            CHECK(json_u64(json_get(e, "group")) == 0);
            CHECK(json_double(json_get(e, "step")) == 2.0);
        } else CHECK(json_is_null(json_get(e, "group")) && json_is_null(json_get(e, "step")));
        CHECK(json_get(e, "chunks")->len == 2);
    }
    /* model.emb.weight: [11, 6] as torch.chunk's 6 + 5 rows, one record in each rank's file */
    const jvalue *emb = es->items[0];
    CHECK(dims_are(json_get(emb, "shape"), 2, (uint64_t[]){11, 6}));
    const jvalue *c0 = json_get(emb, "chunks")->items[0], *c1 = json_get(emb, "chunks")->items[1];
    CHECK(dims_are(json_get(c0, "offsets"), 2, (uint64_t[]){0, 0}));
    CHECK(dims_are(json_get(c0, "sizes"), 2, (uint64_t[]){6, 6}));
    CHECK_STR(str(json_get(c0, "file")), "__0_0.distcp");
    CHECK(json_u64(json_get(c0, "offset")) == 1357 && json_u64(json_get(c0, "length")) == 875);
    CHECK(json_u64(json_get(c0, "rank")) == 0);
    CHECK(dims_are(json_get(c1, "offsets"), 2, (uint64_t[]){6, 0}));
    CHECK(dims_are(json_get(c1, "sizes"), 2, (uint64_t[]){5, 6}));
    CHECK_STR(str(json_get(c1, "file")), "__1_0.distcp");
    CHECK(json_u64(json_get(c1, "offset")) == 0 && json_u64(json_get(c1, "length")) == 811);
    CHECK(json_u64(json_get(c1, "rank")) == 1);
    /* its state: exp_avg_sq's second chunk at byte 7790 of rank 1's file */
    const jvalue *v = json_get(json_get(emb, "state"), "exp_avg_sq");
    CHECK_STR(str(json_get(v, "dtype")), "F32");
    const jvalue *v1 = json_get(v, "chunks")->items[1];
    CHECK(json_u64(json_get(v1, "offset")) == 7790 && json_u64(json_get(v1, "length")) == 811);
    const jvalue *step = json_get(json_get(emb, "state"), "step");
    CHECK(dims_are(json_get(step, "shape"), 0, NULL));
    CHECK(json_u64(json_get(json_get(step, "chunks")->items[0], "offset")) == 8400);
    /* the generic report: 9 slots, 7 entries, no diagnostics */
    CHECK(json_u64(json_get(r, "slotCount")) == 9);
    CHECK(json_u64(json_get(r, "entryCount")) == 7);
    /* its group stores lr and betas only: no configuration (eps unknown), so health cannot tell */
    CHECK(json_is_null(json_get(r, "config")));
    CHECK(json_get(r, "warnings")->len == 0);
    CHECK(json_get(d, "diagnostics")->len == 0);
    json_free(r);
}

/* with statistics: each moment streamed run by run from both ranks' records; the values below are
 * torch's of the two records of optim.state.emb.weight.exp_avg concatenated (torch.load of bytes
 * 9147..10022 of __0_0.distcp and 6979..7790 of __1_0.distcp, in float64) */
/* The statistics an open with CKPT_INSPECT_STATS keeps are, word for word, what each item's own
 * pass reads (ckpt_file_item_stats of the folder opened without them, as the workers read it) */
static void stats_as_items(const unsigned char *b, size_t blen)
{
    ckpt_source s1, s2;
    ckpt_memory m1, m2;
    ckpt_source_memory(&s1, &m1, b, blen);
    ckpt_source_memory(&s2, &m2, b, blen);
    ckpt_inspect_options o = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_file *with = ckpt_open(&s1, &o), *without = ckpt_open(&s2, NULL);
    CHECK(with && without);
    const ckpt_report *rep = with ? ckpt_file_report(with) : NULL;
    for (size_t k = 0; rep && without && k < rep->entries_len; k++) {
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        uint64_t *x = ckpt_file_item_stats_packed(with, k, NULL, NULL, &err);
        ckpt_error_clear(&err);
        uint64_t *y = ckpt_file_item_stats_packed(without, k, NULL, NULL, &err);
        ckpt_error_clear(&err);
        CHECK((x == NULL) == (y == NULL));
        if (x && y) {
            const ckpt_packed_stats *h = (const ckpt_packed_stats *)x;
            size_t words = sizeof *h / sizeof *x + h->a_words + h->b_words;
            CHECK(!memcmp(x, y, words * sizeof *x));
        }
        free(x);
        free(y);
    }
    ckpt_close(with);
    ckpt_close(without);
}

static void test_folder_stats(void)
{
    jvalue *r = inspect_folder_opts(fixture, CKPT_INSPECT_STATS);
    CHECK(r && json_get(r, "statistics")->b == true);
    if (!r) return;
    const jvalue *e = json_get(r, "entries")->items[0], *m = json_get(e, "m");
    CHECK(json_u64(json_get(m, "count")) == 66);
    CHECK(json_double(json_get(m, "min")) == -0.12261361628770828);
    CHECK(json_double(json_get(m, "max")) == 0.15952140092849731);
    CHECK(json_double(json_get(m, "mean")) == 0.00793354705820093);
    CHECK(json_double(json_get(m, "rms")) == 0.05539534102804231);
    CHECK(json_u64(json_get(m, "negative")) == 30);
    /* its exp_avg's first run: the data of the record at 9147 of rank 0's file */
    CHECK(json_u64(json_get(e, "offset")) > 9147);
    /* frozen.weight has no owner of its shape: frozen; frozen.bias's values differ from l2.bias's */
    const jvalue *es = json_get(json_get(r, "dcp"), "entries");
    CHECK_STR(str(json_get(es->items[7], "role")), "frozen");
    CHECK_STR(str(json_get(es->items[8], "role")), "frozen");
    CHECK_STR(str(json_get(es->items[0], "role")), "owner");
    json_free(r);
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(fixture, "ckpt", &len, NULL);
    CHECK(b != NULL);
    if (b) stats_as_items(b, len);
    free(b);
}

static int discard_write(void *ctx, const void *buf, size_t n)
{
    (void)ctx, (void)buf, (void)n;
    return 0;
}

/* torch 1.13's folder keeps its group's lr and betas, no eps: health, export and diff name the
 * group and what it keeps */
static void test_no_eps(void)
{
    static const char *const want = "DCP: parameter group 0 keeps no eps (it keeps lr, betas): health, export, run "
                                    "and diff read each trained tensor with its group's betas and eps";
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(fixture, "ckpt", &len, NULL);
    CHECK(b != NULL);
    if (!b) return;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(f != NULL);
    if (f) {
        ckpt_error err = {0};
        char *h = ckpt_health_json(f, NULL, NULL, &err);
        CHECK(h == NULL);
        CHECK(err.code == CKPT_E_WRONG_FAMILY);
        CHECK_STR(err.message, want);
        free(h);
        ckpt_error_clear(&err);
        ckpt_sink sink = {NULL, discard_write};
        ckpt_export_options o = {CKPT_EXPORT_SAFETENSORS, NULL, 0, NULL, 0, NULL, NULL};
        CHECK(ckpt_export(f, &o, &sink, &err) != 0);
        CHECK(err.code == CKPT_E_WRONG_FAMILY);
        CHECK_STR(err.message, want);
        ckpt_error_clear(&err);
        ckpt_close(f);
    }
    free(b);
}

typedef struct progress_seen {
    uint64_t calls, done, total;
    bool backwards;
} progress_seen;

static int on_progress(void *ctx, uint64_t done, uint64_t total)
{
    progress_seen *p = ctx;
    if (p->calls && (done < p->done || total != p->total)) p->backwards = true;
    p->calls++;
    p->done = done;
    p->total = total;
    return 0;
}

/* The statistics pass's progress runs over the moments it reads, ending at its total: two float32
 * moments of every entry's elements, counted from the report */
static void test_folder_progress(void)
{
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(fixture, "ckpt", &len, NULL);
    CHECK(b != NULL);
    if (!b) return;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    progress_seen seen = {0};
    ckpt_inspect_options o = {CKPT_INSPECT_STATS, on_progress, &seen};
    ckpt_report *rep = ckpt_inspect(&src, &o);
    CHECK(rep && !rep->error.code);
    uint64_t want = 0;
    for (size_t k = 0; rep && k < rep->entries_len; k++) want += 2 * rep->entries[k].count * 4;
    CHECK(want == 2 * 4 * (66 + 42 + 7 + 7 + 7 + 42 + 6)); /* the fixture's 7 trainable parameters (dcp_truth.py) */
    CHECK(seen.calls > 1 && !seen.backwards);
    CHECK(seen.total == want);
    CHECK(seen.done == want);
    ckpt_report_free(rep);
    free(b);
}

/* .metadata alone: the index, and the note naming the data files that are not here */
static void test_lone_metadata(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.metadata", fixture);
    size_t len;
    unsigned char *b = ds_file_bytes(path, &len);
    CHECK(b != NULL);
    jvalue *r = inspect_memory(b, len, NULL);
    free(b);
    CHECK_STR(str(json_get(r, "family")), "DCP");
    CHECK(json_get(r, "ok")->b == true);
    const jvalue *d = json_get(r, "dcp");
    CHECK_STR(str(json_get(d, "opened")), "metadata");
    CHECK_STR(str(json_get(d, "note")),
              "DCP: this is the index of a distributed checkpoint; its data is in 2 files (__0_0.distcp, …) that are "
              "not here");
    CHECK(json_is_null(json_get(json_get(d, "files")->items[0], "size")));
    CHECK(json_get(d, "entries")->len == 9);
    /* no values here: a slot without state may be frozen or tied */
    CHECK_STR(str(json_get(json_get(d, "entries")->items[8], "role")), "frozen or tied");
    CHECK(json_get(d, "groups")->len == 1);
    CHECK(json_get(json_get(d, "groups")->items[0], "params")->len == 0); /* in a record not here */
    CHECK(json_get(r, "warnings")->len == 0);
    CHECK(json_get(d, "diagnostics")->len == 0);
    json_free(r);
}

/* a .distcp alone: the note, its last record, nothing else */
static void test_lone_distcp(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/__1_0.distcp", fixture);
    size_t len;
    unsigned char *b = ds_file_bytes(path, &len);
    jvalue *r = inspect_memory(b, len, NULL);
    free(b);
    CHECK_STR(str(json_get(r, "family")), "DCP");
    const jvalue *d = json_get(r, "dcp");
    CHECK_STR(str(json_get(d, "opened")), "distcp");
    CHECK_STR(str(json_get(d, "note")),
              "DCP: this file is a data file of a distributed checkpoint: torch.save records back to back, found only "
              "through the folder's .metadata; open its folder");
    const jvalue *rec = json_get(d, "record");
    /* the last record: model... optim.state.l2.bias.exp_avg_sq at 17074, 747 bytes */
    CHECK(json_u64(json_get(rec, "offset")) == 17074);
    CHECK(json_u64(json_get(rec, "length")) == 747);
    CHECK_STR(str(json_get(rec, "dtype")), "float32");
    CHECK(dims_are(json_get(rec, "shape"), 1, (uint64_t[]){3}));
    json_free(r);
}

/* ---- broken folders: the fixture copied, one thing changed ---- */

static void copy_file(const char *from, const char *to)
{
    size_t len;
    unsigned char *b = ds_file_bytes(from, &len);
    FILE *f = fopen(to, "wb");
    if (f && b) fwrite(b, 1, len, f);
    if (f) fclose(f);
    free(b);
}

/* a copy of the fixture in work/name; skip: a file not copied */
static const char *copy_fixture(const char *name, const char *skip)
{
    static char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", work, name);
    mkdir(work, 0777);
    mkdir(dir, 0777);
    static const char *const files[] = {".metadata", "__0_0.distcp", "__1_0.distcp"};
    for (size_t k = 0; k < 3; k++) {
        char from[4096], to[8300];
        snprintf(from, sizeof from, "%s/%s", fixture, files[k]);
        snprintf(to, sizeof to, "%s/%s", dir, files[k]);
        if (skip && !strcmp(skip, files[k])) {
            unlink(to);
            continue;
        }
        copy_file(from, to);
    }
    return dir;
}

static void patch(const char *dir, const char *file, long at, const void *bytes, size_t n)
{
    char p[8300];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    FILE *f = fopen(p, "r+b");
    if (!f) return;
    fseek(f, at, SEEK_SET);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static void truncate_to(const char *dir, const char *file, long len)
{
    char p[8300];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    size_t n;
    unsigned char *b = ds_file_bytes(p, &n);
    FILE *f = fopen(p, "wb");
    CHECK(b && f && (size_t)len <= n);
    if (f && b) fwrite(b, 1, (size_t)len, f);
    if (f) fclose(f);
    free(b);
}

/* the first diagnostic: its check, code and text */
static void first_diag(const jvalue *r, int check, int code, const char *text)
{
    const jvalue *ds = json_get(json_get(r, "dcp"), "diagnostics");
    CHECK(ds && ds->len >= 1);
    if (!ds || !ds->len) return;
    const jvalue *g = ds->items[0];
    CHECK(json_u64(json_get(g, "check")) == (uint64_t)check);
    if (code) CHECK(json_u64(json_get(g, "code")) == (uint64_t)code);
    else CHECK(json_is_null(json_get(g, "code")));
    CHECK_STR(str(json_get(g, "text")), text);
    if (code) {
        CHECK(json_get(r, "ok")->b == false);
        CHECK(json_u64(json_get(json_get(r, "error"), "code")) == (uint64_t)code);
        CHECK_STR(str(json_get(json_get(r, "error"), "message")), text);
    }
}

static void test_no_metadata(void)
{
    const char *dir = copy_fixture("no-metadata", ".metadata");
    jvalue *r = inspect_folder(dir);
    CHECK_STR(str(json_get(r, "family")), "DCP");
    first_diag(r, 1, CKPT_E_DCP_FOLDER,
               "DCP: ckpt has 2 data files but no .metadata: the save did not finish (DCP writes .metadata last)");
    json_free(r);
}

static void test_missing_file(void)
{
    const char *dir = copy_fixture("missing", "__1_0.distcp");
    jvalue *r = inspect_folder(dir);
    first_diag(r, 10, CKPT_E_DCP_FOLDER,
               "DCP: __1_0.distcp is missing: it holds 23 records (the first: model.emb.weight)");
    json_free(r);
}

static void test_past_end(void)
{
    const char *dir = copy_fixture("short", NULL);
    truncate_to(dir, "__1_0.distcp", 17821 - 10);
    jvalue *r = inspect_folder(dir);
    first_diag(
        r, 11, CKPT_E_DCP_STORAGE,
        "DCP: optim.state.l2.bias.exp_avg_sq: bytes 17074..17821 of __1_0.distcp lie past its end (17811 bytes)");
    json_free(r);
}

static void test_not_a_record(void)
{
    const char *dir = copy_fixture("not-a-record", NULL);
    /* the record of model.l1.bias's second chunk (bytes 1622..2369 of rank 1's file): its first
     * local header's signature broken, and its end record's: no zip in the window */
    patch(dir, "__1_0.distcp", 2369 - 22, "XXXX", 4);
    jvalue *r = inspect_folder(dir);
    const jvalue *g = json_get(json_get(r, "dcp"), "diagnostics")->items[0];
    CHECK(json_u64(json_get(g, "check")) == 14);
    CHECK(json_u64(json_get(g, "code")) == CKPT_E_DCP_RECORD);
    /* section 10's text for that window: the zip layer's */
    CHECK_STR(str(json_get(g, "text")), "DCP: model.l1.bias: bytes 1622..2369 of __1_0.distcp are not a torch.save "
                                        "record: zip: no end-of-central-directory record in the last 747 bytes of "
                                        "the file");
    CHECK_STR(str(json_get(g, "fqn")), "model.l1.bias");
    CHECK_STR(str(json_get(g, "file")), "__1_0.distcp");
    CHECK(json_u64(json_get(g, "offset")) == 1622);
    json_free(r);
}

/* ---- torch >= 2.0's classes: the folders of dcp_core_seeds.py, each with what the core says ---- */

static bool has_text(const jvalue *diags, const char *text)
{
    for (size_t k = 0; diags && k < diags->len; k++)
        if (str(json_get(diags->items[k], "text")) && !strcmp(str(json_get(diags->items[k], "text")), text))
            return true;
    return false;
}

static void test_seeds(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", seeds);
    size_t len;
    unsigned char *text = ds_file_bytes(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    char *t = malloc(len + 1);
    memcpy(t, text, len);
    t[len] = 0;
    free(text);
    jvalue *m = json_parse(t);
    free(t);
    CHECK(m && m->type == JOBJ && m->len >= 20);
    for (size_t k = 0; m && k < m->len; k++) {
        const char *name = m->keys[k];
        const jvalue *want = m->items[k];
        t_current = name;
        snprintf(path, sizeof path, "%s/%s", seeds, name);
        const bool valid = !json_get(want, "check");
        const bool stats = valid || json_get(want, "stats");
        jvalue *r = inspect_folder_opts(path, stats ? CKPT_INSPECT_STATS : 0);
        CHECK(r != NULL);
        if (!r) continue;
        CHECK_STR(str(json_get(r, "family")), "DCP");
        const jvalue *d = json_get(r, "dcp");
        if (!valid) {
            const jvalue *code = json_get(want, "code");
            first_diag(r, (int)json_u64(json_get(want, "check")), (int)json_u64(code), str(json_get(want, "text")));
            const jvalue *also = json_get(want, "also");
            for (size_t j = 0; also && j < also->len; j++) {
                CHECK(has_text(json_get(d, "diagnostics"), str(also->items[j])));
                if (!has_text(json_get(d, "diagnostics"), str(also->items[j])))
                    fprintf(stderr, "  missing: %s\n", str(also->items[j]));
            }
            json_free(r);
            continue;
        }
        /* a valid folder: its facts */
        CHECK(json_get(r, "ok")->b == true);
        CHECK_STR(str(json_get(d, "classes")), str(json_get(want, "classes")));
        if (json_is_null(json_get(want, "version"))) CHECK(json_is_null(json_get(d, "version")));
        else CHECK_STR(str(json_get(d, "version")), str(json_get(want, "version")));
        CHECK(json_get(d, "plannerData")->b == json_get(want, "plannerData")->b);
        CHECK_STR(str(json_get(d, "form")), str(json_get(want, "form")));
        const jvalue *es = json_get(d, "entries"), *slots = json_get(want, "slots");
        CHECK(es->len == slots->len);
        for (size_t j = 0; j < es->len && j < slots->len; j++) {
            CHECK_STR(str(json_get(es->items[j], "name")), str(slots->items[j]));
            CHECK(json_get(es->items[j], "trainable")->b == json_get(want, "trainable")->items[j]->b);
        }
        CHECK(json_get(d, "groups")->len == json_u64(json_get(want, "groups")));
        if (json_get(want, "note")) CHECK_STR(str(json_get(d, "note")), str(json_get(want, "note")));
        const jvalue *w = json_get(want, "warnings"), *got = json_get(r, "warnings");
        CHECK(got->len == w->len);
        for (size_t j = 0; j < w->len && j < got->len; j++) CHECK_STR(str(got->items[j]), str(w->items[j]));
        /* the configuration: the first group's betas, eps and weight decay, as stored */
        const jvalue *cfg = json_get(want, "config");
        if (cfg) {
            const jvalue *got_cfg = json_get(r, "config");
            CHECK(got_cfg && !json_is_null(got_cfg));
            static const char *const fields[] = {"beta1", "beta2", "epsilon", "weightDecay"};
            for (size_t j = 0; got_cfg && j < 4; j++)
                CHECK(json_double(json_get(got_cfg, fields[j])) == json_double(json_get(cfg, fields[j])));
        }
        /* the groups' learning rates, read from their records, and each slot's group */
        const jvalue *lrs = json_get(want, "groupLr"), *gof = json_get(want, "groupOf");
        for (size_t j = 0; lrs && j < lrs->len && j < json_get(d, "groups")->len; j++)
            CHECK(json_double(json_get(json_get(d, "groups")->items[j], "lr")) == json_double(lrs->items[j]));
        for (size_t j = 0; gof && j < gof->len && j < es->len; j++) {
            if (json_is_null(gof->items[j])) CHECK(json_is_null(json_get(es->items[j], "group")));
            else CHECK(json_u64(json_get(es->items[j], "group")) == json_u64(gof->items[j]));
        }
        /* the ties by equal values, once values are read */
        const jvalue *roles = json_get(want, "roles"), *reps = json_get(want, "representatives");
        for (size_t j = 0; roles && j < roles->len && j < es->len; j++) {
            CHECK_STR(str(json_get(es->items[j], "role")), str(roles->items[j]));
            if (json_is_null(reps->items[j])) CHECK(json_is_null(json_get(es->items[j], "representative")));
            else CHECK(json_u64(json_get(es->items[j], "representative")) == json_u64(reps->items[j]));
        }
        /* the first entry's moments streamed run by run, against Python's values of the whole tensor */
        static const char *const moments[] = {"m", "v"};
        for (size_t q = 0; q < 2 && json_get(want, moments[q]); q++) {
            const jvalue *f = json_get(want, moments[q]);
            const jvalue *st = json_get(json_get(r, "entries")->items[0], moments[q]);
            CHECK(st != NULL);
            if (!st) continue;
            CHECK(json_double(json_get(st, "min")) == json_double(json_get(f, "min")));
            CHECK(json_double(json_get(st, "max")) == json_double(json_get(f, "max")));
            CHECK(json_u64(json_get(st, "negative")) == json_u64(json_get(f, "negative")));
            double mean = json_double(json_get(st, "mean")), rms = json_double(json_get(st, "rms"));
            double wm = json_double(json_get(f, "mean")), wr = json_double(json_get(f, "rms"));
            CHECK(mean - wm < 1e-12 && wm - mean < 1e-12 && rms - wr < 1e-12 && wr - rms < 1e-12);
        }
        json_free(r);
    }
    json_free(m);
}

/* the folders the core's own writer wrote (torch 1.13's classes and torch >= 2.4's), read back:
 * valid, every key placed, head.weight (tied to emb.weight in the model written) its alias */
static void test_written(void)
{
    static const char *const forms[] = {"dcp113", "dcp2"};
    for (size_t k = 0; written && k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", written, forms[k]);
        t_current = forms[k];
        jvalue *r = inspect_folder_opts(path, CKPT_INSPECT_STATS);
        CHECK(r != NULL);
        if (!r) continue;
        const jvalue *d = json_get(r, "dcp");
        CHECK(json_get(r, "ok")->b == true);
        CHECK(json_get(d, "diagnostics")->len == 0);
        CHECK(json_u64(json_get(json_get(d, "keys"), "other")) == 0);
        CHECK_STR(str(json_get(d, "form")), "N");
        const jvalue *es = json_get(d, "entries");
        CHECK(es->len >= 2);
        size_t head = SIZE_MAX;
        for (size_t j = 0; j < es->len; j++)
            if (!strcmp(str(json_get(es->items[j], "name")), "head.weight")) head = j;
        CHECK(head != SIZE_MAX);
        if (head != SIZE_MAX) {
            CHECK_STR(str(json_get(es->items[head], "role")), "tied");
            CHECK(json_u64(json_get(es->items[head], "representative")) == 0);
            CHECK_STR(str(json_get(es->items[0], "name")), "emb.weight");
        }
        json_free(r);
    }
}

/* ---- the case table of tests/cases/dcp.json (tests/c/dcp_seeds.py's folders) ---- */

static char *replace_dir(const char *text, const char *dir)
{
    if (!text) return NULL;
    size_t n = strlen(text) + 1, dl = strlen(dir);
    for (const char *p = strstr(text, "{dir}"); p; p = strstr(p + 5, "{dir}")) n += dl;
    char *out = malloc(n), *o = out;
    for (const char *p = text; *p;) {
        if (!strncmp(p, "{dir}", 5)) {
            memcpy(o, dir, dl);
            o += dl;
            p += 5;
        } else *o++ = *p++;
    }
    *o = 0;
    return out;
}

static bool has_warning(const jvalue *r, const char *text)
{
    const jvalue *w = json_get(r, "warnings");
    for (size_t k = 0; w && k < w->len; k++)
        if (!strcmp(str(w->items[k]), text)) return true;
    return false;
}

static int file_write(void *ctx, const void *buf, size_t n) { return fwrite(buf, 1, n, ctx) != n; }

/* a valid folder's export (every slot's moments and values, read run by run) for dcp_core_truth.py
 * to compare with dcp_truth's reassembled tensors: work/{name}.safetensors */
static void export_folder(const unsigned char *b, size_t blen, const char *name)
{
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, blen);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(f != NULL);
    if (!f) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.safetensors", work, name);
    mkdir(work, 0777);
    FILE *out = fopen(path, "wb");
    CHECK(out != NULL);
    ckpt_sink sink = {out, file_write};
    ckpt_export_options o = {CKPT_EXPORT_SAFETENSORS, NULL, 0, NULL, 0, NULL, NULL};
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = out ? ckpt_export(f, &o, &sink, &err) : 1;
    if (out) fclose(out);
    if (rc) unlink(path); /* a folder health and export do not read (no eps stored) */
    ckpt_error_clear(&err);
    ckpt_close(f);
}

/* every folder: a broken one's verdict (its code and exact text), every error when the table
 * lists them, the warnings it must give; a valid one no error and none of the broken folders'
 * warnings. Accelerate's folder holds two DCP folders: read as one checkpoint, from optimizer_0/
 * (which takes its model part beside it), and the model part alone. */
static void test_cases(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.json", cases);
    size_t len;
    unsigned char *text = ds_file_bytes(path, &len);
    CHECK(text != NULL);
    if (!text) return;
    char *t = malloc(len + 1);
    memcpy(t, text, len);
    t[len] = 0;
    free(text);
    jvalue *table = json_parse(t);
    free(t);
    const jvalue *cs = json_get(table, "cases");
    CHECK(cs && cs->len >= 40);
    for (size_t k = 0; cs && k < cs->len; k++) {
        const jvalue *c = cs->items[k];
        const char *name = str(json_get(c, "name"));
        t_current = name;
        static const char *const accelerate[] = {"", "optimizer_0", "pytorch_model_fsdp_0"};
        bool acc = !strcmp(name, "accelerate");
        for (size_t part = 0; part < (acc ? 3u : 1u); part++) {
            snprintf(path, sizeof path, "%s/%s%s%s", cases, name, acc && part ? "/" : "", acc ? accelerate[part] : "");
            size_t blen = 0;
            unsigned char *b = dcp_folder_bytes(path, path, &blen, NULL);
            CHECK(b != NULL);
            if (!b) continue;
            ckpt_source src;
            ckpt_memory mem;
            ckpt_source_memory(&src, &mem, b, blen);
            ckpt_inspect_options o = {CKPT_INSPECT_STATS, NULL, NULL};
            ckpt_report *rep = ckpt_inspect(&src, &o);
            char *json = ckpt_report_json(rep);
            jvalue *r = json ? json_parse(json) : NULL;
            free(json);
            ckpt_report_free(rep);
            const jvalue *check = json_get(c, "check");
            if (!check) {
                char en[300];
                snprintf(en, sizeof en, "%s%s%s", name, acc && part ? "-" : "", acc ? accelerate[part] : "");
                export_folder(b, blen, en);
                stats_as_items(b, blen);
            }
            free(b);
            CHECK(r != NULL);
            if (!r) continue;
            CHECK_STR(str(json_get(r, "family")), "DCP");
            if (!check) {
                CHECK(json_is_null(json_get(r, "error")));
                if (!json_is_null(json_get(r, "error")))
                    fprintf(stderr, "  error: %s\n", str(json_get(json_get(r, "error"), "message")));
                /* none of the broken folders' warnings */
                for (size_t j = 0; j < cs->len; j++) {
                    const jvalue *w = json_get(cs->items[j], "warnings");
                    for (size_t q = 0; w && q < w->len; q++) {
                        char *x = replace_dir(str(w->items[q]), path);
                        CHECK(!has_warning(r, x));
                        free(x);
                    }
                }
                json_free(r);
                continue;
            }
            const jvalue *msg = json_get(c, "message"), *code = json_get(c, "code");
            if (json_is_null(msg)) CHECK(json_is_null(json_get(r, "error")));
            else {
                char *x = replace_dir(str(msg), path);
                CHECK_STR(str(json_get(json_get(r, "error"), "message")), x);
                CHECK(json_u64(json_get(json_get(r, "error"), "code")) == json_u64(code));
                free(x);
            }
            const jvalue *diags = json_get(json_get(r, "dcp"), "diagnostics");
            const jvalue *failures = json_get(c, "failures");
            if (failures) {
                size_t errors = 0;
                for (size_t j = 0; diags && j < diags->len; j++) {
                    const jvalue *g = diags->items[j];
                    if (strcmp(str(json_get(g, "severity")), "error")) continue;
                    if (errors < failures->len) {
                        char *x = replace_dir(str(failures->items[errors]), path);
                        CHECK_STR(str(json_get(g, "text")), x);
                        free(x);
                    }
                    errors++;
                }
                CHECK(errors == failures->len);
            }
            const jvalue *w = json_get(c, "warnings");
            for (size_t q = 0; w && q < w->len; q++) {
                char *x = replace_dir(str(w->items[q]), path);
                CHECK(has_warning(r, x));
                if (!has_warning(r, x)) fprintf(stderr, "  missing warning: %s\n", x);
                free(x);
            }
            /* the check's number is a diagnostic's, unless its warnings are the report's own */
            const jvalue *diagnostic = json_get(c, "diagnostic");
            bool found = false;
            for (size_t j = 0; diags && j < diags->len && !found; j++)
                found = json_u64(json_get(diags->items[j], "check")) == json_u64(check);
            CHECK(found == !(diagnostic && diagnostic->type == JBOOL && !diagnostic->b));
            json_free(r);
        }
    }
    json_free(table);
}

/* a case folder's report (with statistics), parsed */
static jvalue *case_report(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cases, name);
    jvalue *r = inspect_folder_as(path, path, CKPT_INSPECT_STATS);
    CHECK(r != NULL);
    return r;
}

/* form I (ids: a plain optimizer.state_dict() saved by DCP) is placed by position as 10.4 places
 * an optimizer: the same folder in form N (keyed by names) gives the same slots, roles, entries
 * (their steps, sizes and moments' statistics) and group */
static void test_form_i(void)
{
    jvalue *i = case_report("i"), *n = case_report("n");
    if (!i || !n) {
        json_free(i);
        json_free(n);
        return;
    }
    CHECK_STR(str(json_get(json_get(i, "dcp"), "form")), "I");
    CHECK(json_is_null(json_get(i, "error")));
    CHECK(json_get(i, "warnings")->len == 0);
    CHECK(json_get(json_get(i, "dcp"), "diagnostics")->len == 0);
    const jvalue *ei = json_get(json_get(i, "dcp"), "entries"), *en = json_get(json_get(n, "dcp"), "entries");
    CHECK(ei && en && ei->len == en->len && ei->len == 10);
    for (size_t k = 0; ei && en && k < ei->len && k < en->len; k++) {
        CHECK_STR(str(json_get(ei->items[k], "role")), str(json_get(en->items[k], "role")));
        CHECK(json_u64(json_get(ei->items[k], "group")) == json_u64(json_get(en->items[k], "group")));
    }
    const jvalue *oi = json_get(i, "entries"), *on = json_get(n, "entries");
    CHECK(oi && on && oi->len == 7 && on->len == 7);
    for (size_t k = 0; oi && on && k < oi->len && k < on->len; k++) {
        static const char *const fields[] = {"id", "step", "count"};
        for (size_t q = 0; q < 3; q++)
            CHECK(json_u64(json_get(oi->items[k], fields[q])) == json_u64(json_get(on->items[k], fields[q])));
        /* the moments read through the placed ids' records equal the named ones' */
        for (size_t q = 0; q < 2; q++) {
            const char *m = q ? "v" : "m";
            const jvalue *a = json_get(oi->items[k], m), *b = json_get(on->items[k], m);
            CHECK(a && b && json_double(json_get(a, "rms")) > 0);
            CHECK(a && b && json_double(json_get(a, "rms")) == json_double(json_get(b, "rms")));
            CHECK(a && b && json_double(json_get(a, "mean")) == json_double(json_get(b, "mean")));
        }
    }
    const jvalue *gi = json_get(json_get(i, "dcp"), "groups"), *gn = json_get(json_get(n, "dcp"), "groups");
    CHECK(gi && gn && gi->len == 1 && gn->len == 1);
    if (gi && gn && gi->len == 1 && gn->len == 1) {
        CHECK(json_double(json_get(gi->items[0], "lr")) == json_double(json_get(gn->items[0], "lr")));
        CHECK(json_double(json_get(gi->items[0], "weightDecay")) == 0.01);
        CHECK(json_get(gi->items[0], "params")->len == 7);
    }
    json_free(i);
    json_free(n);
}

/* Accelerate's FSDP SHARDED_STATE_DICT save (format.md 12.7): checkpoint_{k}/ read as one
 * checkpoint, its model part from pytorch_model_fsdp_0/ and its optimizer part from optimizer_0/,
 * gives what the one folder of the same state dict ("n": model.{fqn} and optim.*) gives: the
 * slots in module order, trainable = having state, the tie, shapes, steps, groups and the
 * moments' statistics. optimizer_0/ opened itself takes ../pytorch_model_fsdp_0/ without asking;
 * alone (no model part beside it) it is an optimizer part without a model part. */
static void same_entries(const jvalue *a, const jvalue *n)
{
    const jvalue *ea = json_get(json_get(a, "dcp"), "entries"), *en = json_get(json_get(n, "dcp"), "entries");
    CHECK(ea && en && ea->len == en->len && ea->len == 10);
    static const char *const slots[] = {"emb.weight", "l1.weight", "l1.bias",       "ln.weight",   "ln.bias",
                                        "l2.weight",  "l2.bias",   "frozen.weight", "frozen.bias", "head.weight"};
    for (size_t k = 0; ea && en && k < ea->len && k < en->len && k < 10; k++) {
        const jvalue *x = ea->items[k], *y = en->items[k];
        CHECK_STR(str(json_get(x, "name")), slots[k]);
        CHECK_STR(str(json_get(x, "name")), str(json_get(y, "name")));
        CHECK_STR(str(json_get(x, "role")), str(json_get(y, "role")));
        CHECK(json_get(x, "trainable")->b == json_get(y, "trainable")->b);
        CHECK((json_get(x, "trainable")->b == true) == (k < 7));
        const jvalue *sa = json_get(x, "shape"), *sn = json_get(y, "shape");
        CHECK(sa && sn && sa->len == sn->len);
        for (size_t q = 0; sa && sn && q < sa->len && q < sn->len; q++)
            CHECK(json_u64(sa->items[q]) == json_u64(sn->items[q]));
        CHECK(json_u64(json_get(x, "group")) == json_u64(json_get(y, "group")));
    }
    CHECK_STR(str(json_get(ea->items[9], "role")), "tied");
    CHECK_STR(str(json_get(ea->items[7], "role")), "frozen");
    const jvalue *oa = json_get(a, "entries"), *on = json_get(n, "entries");
    CHECK(oa && on && oa->len == 7 && on->len == 7);
    for (size_t k = 0; oa && on && k < oa->len && k < on->len; k++) {
        CHECK(json_u64(json_get(oa->items[k], "id")) == json_u64(json_get(on->items[k], "id")));
        CHECK(json_u64(json_get(oa->items[k], "step")) == json_u64(json_get(on->items[k], "step")));
        for (size_t q = 0; q < 2; q++) {
            const jvalue *x = json_get(oa->items[k], q ? "v" : "m"), *y = json_get(on->items[k], q ? "v" : "m");
            CHECK(x && y && json_double(json_get(x, "rms")) > 0);
            CHECK(x && y && json_double(json_get(x, "rms")) == json_double(json_get(y, "rms")));
        }
    }
    const jvalue *ga = json_get(json_get(a, "dcp"), "groups");
    CHECK(ga && ga->len == 1);
    if (ga && ga->len == 1) CHECK(json_get(ga->items[0], "params")->len == 7);
}

static void check_index(const jvalue *ix, const char *dir, uint64_t model, uint64_t optimizer)
{
    CHECK_STR(str(json_get(ix, "dir")), dir);
    CHECK(json_u64(json_get(json_get(ix, "keys"), "model")) == model);
    CHECK(json_u64(json_get(json_get(ix, "keys"), "optimizer")) == optimizer);
    CHECK(json_u64(json_get(json_get(ix, "keys"), "other")) == 0);
}

static void test_accelerate(void)
{
    jvalue *n = case_report("n"), *acc = case_report("accelerate"), *opt = case_report("accelerate/optimizer_0");
    if (!n || !acc || !opt) goto done;
    uint64_t model = json_u64(json_get(json_get(json_get(n, "dcp"), "keys"), "model"));
    uint64_t optimizer = json_u64(json_get(json_get(json_get(n, "dcp"), "keys"), "optimizer"));
    CHECK(model == 10 && optimizer > 20);
    for (int w = 0; w < 2; w++) {
        const jvalue *r = w ? opt : acc, *d = json_get(r, "dcp");
        CHECK_STR(str(json_get(r, "family")), "DCP");
        CHECK(json_is_null(json_get(r, "error")));
        CHECK(json_get(r, "warnings")->len == 0);
        CHECK(json_get(d, "diagnostics")->len == 0);
        CHECK_STR(str(json_get(d, "form")), "N");
        CHECK(json_get(d, "plannerData")->b == true);
        CHECK(json_u64(json_get(json_get(d, "keys"), "model")) == model);
        CHECK(json_u64(json_get(json_get(d, "keys"), "optimizer")) == optimizer);
        CHECK(json_get(d, "strays")->len == 0);
        CHECK_STR(str(json_get(d, "note")),
                  w ? "DCP: one checkpoint of two DCP folders: the model part from ../pytorch_model_fsdp_0, the "
                      "optimizer part from optimizer_0"
                    : "DCP: one checkpoint of two DCP folders: the model part from pytorch_model_fsdp_0, the "
                      "optimizer part from optimizer_0");
        const jvalue *ix = json_get(d, "indices");
        CHECK(ix && ix->len == 2);
        if (ix && ix->len == 2) {
            /* in the listing's order */
            if (w) {
                check_index(ix->items[0], "", 0, optimizer);
                check_index(ix->items[1], "../pytorch_model_fsdp_0/", model, 0);
            } else {
                check_index(ix->items[0], "optimizer_0/", 0, optimizer);
                check_index(ix->items[1], "pytorch_model_fsdp_0/", model, 0);
            }
        }
        /* each data file named by its folder inside the source */
        const jvalue *files = json_get(d, "files");
        CHECK(files && files->len == 4);
        static const char *const names[2][4] = {
            {"optimizer_0/__0_0.distcp", "optimizer_0/__1_0.distcp", "pytorch_model_fsdp_0/__0_0.distcp",
             "pytorch_model_fsdp_0/__1_0.distcp"},
            {"../pytorch_model_fsdp_0/__0_0.distcp", "../pytorch_model_fsdp_0/__1_0.distcp", "__0_0.distcp",
             "__1_0.distcp"}};
        for (size_t k = 0; files && k < files->len && k < 4; k++)
            CHECK_STR(str(json_get(files->items[k], "name")), names[w][k]);
        same_entries(r, n);
    }
    /* optimizer_0/ with no model part beside it: the optimizer part alone, as before */
    char alone[4096], from[4096], to[8300];
    snprintf(alone, sizeof alone, "%s/alone", work);
    mkdir(work, 0777);
    mkdir(alone, 0777);
    snprintf(alone, sizeof alone, "%s/alone/optimizer_0", work);
    mkdir(alone, 0777);
    static const char *const own[] = {".metadata", "__0_0.distcp", "__1_0.distcp"};
    for (size_t k = 0; k < 3; k++) {
        snprintf(from, sizeof from, "%s/accelerate/optimizer_0/%s", cases, own[k]);
        snprintf(to, sizeof to, "%s/%s", alone, own[k]);
        unlink(to);
        CHECK(symlink(from, to) == 0);
    }
    size_t blen = 0;
    char *plan = NULL;
    unsigned char *b = dcp_folder_bytes(alone, alone, &blen, &plan);
    CHECK(b != NULL);
    /* asked for the model part's folder (test_accelerate_plans), listed: nothing there, nothing more asked */
    jvalue *pl = plan ? json_parse(plan) : NULL;
    CHECK(pl && json_get(pl, "list")->len == 0 && json_get(pl, "members")->len == 3);
    json_free(pl);
    free(plan);
    jvalue *r = b ? inspect_memory(b, blen, NULL) : NULL;
    free(b);
    CHECK(r && json_is_null(json_get(r, "error")));
    const jvalue *d = json_get(r, "dcp");
    CHECK(json_u64(json_get(json_get(d, "keys"), "model")) == 0);
    CHECK(json_u64(json_get(json_get(d, "keys"), "optimizer")) == optimizer);
    CHECK(json_is_null(json_get(d, "note")));
    CHECK(json_get(d, "indices")->len == 1);
    CHECK(json_get(d, "entries")->len == 0);
    json_free(r);
    /* both folders holding the same keys (each a copy of "n"): refused, naming the first key */
    static const char *const sub[] = {"optimizer_0", "pytorch_model_fsdp_0"};
    snprintf(alone, sizeof alone, "%s/both", work);
    mkdir(alone, 0777);
    for (size_t f = 0; f < 2; f++) {
        snprintf(to, sizeof to, "%s/both/%s", work, sub[f]);
        mkdir(to, 0777);
        for (size_t k = 0; k < 3; k++) {
            snprintf(from, sizeof from, "%s/n/%s", cases, own[k]);
            snprintf(to, sizeof to, "%s/both/%s/%s", work, sub[f], own[k]);
            unlink(to);
            CHECK(symlink(from, to) == 0);
        }
    }
    b = dcp_folder_bytes(alone, "ckpt", &blen, NULL);
    CHECK(b != NULL);
    r = b ? inspect_memory(b, blen, NULL) : NULL;
    free(b);
    CHECK_STR(str(json_get(json_get(r, "error"), "message")),
              "DCP: model.emb.weight is a key of both ckpt/optimizer_0 and ckpt/pytorch_model_fsdp_0: read as one "
              "checkpoint, each key is in one of them");
    CHECK(json_u64(json_get(json_get(r, "error"), "code")) == CKPT_E_DCP_METADATA);
    json_free(r);
done:
    json_free(n);
    json_free(acc);
    json_free(opt);
}

/* The folder question's answers for Accelerate's names (format.md 12.7, 12.8): checkpoint_{k}/
 * lays out pair i's two folders ("pair", else 0), and nothing without both; optimizer_{i}/ asks for its model part's
 * folder beside it, and takes it once listed; a root that names no optimizer_{i} asks for nothing */
static void test_accelerate_plans(void)
{
    static const struct {
        const char *listing, *want;
    } cases_[] = {
        {"{\"root\":\"run/checkpoint_2\",\"entries\":[{\"name\":\"optimizer_0/\",\"size\":null},{\"name\":"
         "\"optimizer_0/.metadata\",\"size\":3},{\"name\":\"optimizer_1/\",\"size\":null},{\"name\":\"optimizer_1/"
         ".metadata\",\"size\":5},{\"name\":\"pytorch_model_fsdp_1/\",\"size\":null},{\"name\":\"pytorch_model_fsdp_"
         "1/.metadata\",\"size\":7},{\"name\":\"random_states_0.pkl\",\"size\":11}],\"pair\":1}",
         "\"members\":[{\"name\":\"optimizer_1/.metadata\",\"offset\":"},
        {"{\"root\":\"run/checkpoint_2\",\"entries\":[{\"name\":\"random_states_0.pkl\",\"size\":11}]}",
         "{\"family\":null,\"read\":[]}"},
        {"{\"root\":\"run/checkpoint_2\",\"entries\":[{\"name\":\"optimizer_0/\",\"size\":null},{\"name\":"
         "\"optimizer_0/.metadata\",\"size\":3},{\"name\":\"pytorch_model_fsdp_rank0.bin\",\"size\":11}]}",
         "{\"family\":null,\"read\":[]}"},
        {"{\"root\":\"run/optimizer_3/\",\"entries\":[{\"name\":\".metadata\",\"size\":3}]}",
         "{\"family\":\"DCP\",\"read\":[],\"list\":[\"../pytorch_model_fsdp_3/\"],\"tag\":null,"},
        {"{\"root\":\".\",\"folder\":\"optimizer_3\",\"entries\":[{\"name\":\".metadata\",\"size\":3},{\"name\":"
         "\"../pytorch_model_fsdp_3/\",\"size\":null},{\"name\":\"../pytorch_model_fsdp_3/.metadata\",\"size\":4}]}",
         "{\"family\":\"DCP\",\"read\":[],\"list\":[],\"tag\":null,\"members\":[{\"name\":\".metadata\",\"offset\":"},
        {"{\"root\":\"run/step_3\",\"entries\":[{\"name\":\".metadata\",\"size\":3}]}",
         "{\"family\":\"DCP\",\"read\":[],\"list\":[],\"tag\":null,"},
    };
    for (size_t k = 0; k < sizeof cases_ / sizeof cases_[0]; k++) {
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        char *j = ckpt_dcp_folder_json(cases_[k].listing, strlen(cases_[k].listing), &err);
        CHECK(j != NULL);
        if (!j) continue;
        if (!strstr(j, cases_[k].want)) fprintf(stderr, "  case %zu: %s\n", k, j);
        CHECK(strstr(j, cases_[k].want) != NULL);
        /* pair 1's two folders, nothing else */
        if (k == 0)
            CHECK(strstr(j, "pytorch_model_fsdp_1/.metadata") && !strstr(j, "optimizer_0/") &&
                  !strstr(j, "random_states"));
        if (k == 4) CHECK(strstr(j, "\"name\":\"../pytorch_model_fsdp_3/.metadata\"") != NULL);
        free(j);
        ckpt_error_clear(&err);
    }
}

/* torchtitan's checkpoint/: the folders holding a DCP folder's file at their own top, in run
 * order by the last number of the name (step-10 after step-9; an unfinished save's .metadata.tmp
 * counts; names without a number after, by name); a file at the top, a folder whose DCP files lie
 * deeper, and other folders are none. */
static void test_run_folders(void)
{
    static const char listing[] =
        "{\"root\": \"checkpoint\", \"entries\": [{\"name\": \".metadata\", \"size\": 9}, "
        "{\"name\": \"notes/\", \"size\": null}, {\"name\": \"notes/a.txt\", \"size\": 1}, "
        "{\"name\": \"step-10/\", \"size\": null}, {\"name\": \"step-10/.metadata\", \"size\": 9}, "
        "{\"name\": \"step-10/__0_0.distcp\", \"size\": 9}, {\"name\": \"step-2/\", \"size\": null}, "
        "{\"name\": \"step-2/sub/\", \"size\": null}, {\"name\": \"step-2/sub/.metadata\", \"size\": 9}, "
        "{\"name\": \"step-3/\", \"size\": null}, {\"name\": \"step-3/.metadata.tmp\", \"size\": 9}, "
        "{\"name\": \"step-9/\", \"size\": null}, {\"name\": \"step-9/.metadata\", \"size\": 9}, "
        "{\"name\": \"step-x/\", \"size\": null}, {\"name\": \"step-x/__1_0.distcp\", \"size\": 9}, "
        "{\"name\": \"best/\", \"size\": null}, {\"name\": \"best/.metadata\", \"size\": 9}]}";
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *j = ckpt_dcp_run_json(listing, sizeof listing - 1, &err);
    CHECK_STR(j, "[\"step-3\",\"step-9\",\"step-10\",\"best\",\"step-x\"]");
    free(j);
    static const char none[] = "{\"root\": \"x\", \"entries\": [{\"name\": \"a.ckpt\", \"size\": 4}]}";
    j = ckpt_dcp_run_json(none, sizeof none - 1, &err);
    CHECK_STR(j, "[]");
    free(j);
    static const char bad[] = "{\"root\": \"x\"}";
    CHECK(ckpt_dcp_run_json(bad, sizeof bad - 1, &err) == NULL);
    CHECK(err.code == CKPT_E_INVALID_ARGUMENT);
    ckpt_error_clear(&err);
}

/* Seed folder `name` opened (its bytes in *mem, freed by the caller after ckpt_close). */
static ckpt_file *open_seed(const char *name, unsigned char **mem, ckpt_memory *m, ckpt_source *src)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", seeds, name);
    size_t len = 0;
    *mem = dcp_folder_bytes(path, name, &len, NULL);
    CHECK(*mem != NULL);
    ckpt_source_memory(src, m, *mem, len);
    ckpt_inspect_options o = {0, NULL, NULL};
    return ckpt_open(src, &o);
}

/* The differences of seed folders a and b as the diff by name gives them: "field: message" lines. */
static char *named_diff(const char *a, const char *b)
{
    unsigned char *ma = NULL, *mb = NULL;
    ckpt_memory xa, xb;
    ckpt_source sa, sb;
    ckpt_file *fa = open_seed(a, &ma, &xa, &sa), *fb = open_seed(b, &mb, &xb, &sb);
    ckpt_expected la, lb;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *out = NULL;
    if (fa && fb && !ckpt_file_layout(fa, &la, &err) && !ckpt_file_layout(fb, &lb, &err)) {
        char *j = ckpt_diff_files_json(&la, fa, &lb, fb);
        jvalue *v = j ? json_parse(j) : NULL;
        size_t cap = 4096, n = 0;
        out = calloc(cap, 1);
        for (size_t k = 0; v && k < v->len; k++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s: %s", k ? "\n" : "", str(json_get(v->items[k], "field")),
                                  str(json_get(v->items[k], "message")));
        json_free(v);
        free(j);
    }
    CHECK(err.code == 0);
    ckpt_error_clear(&err);
    ckpt_close(fa);
    ckpt_close(fb);
    free(ma);
    free(mb);
    return out;
}

/* Two folders whose FQNs differ are compared by name: what one holds alone, the first place the
 * names both hold part, and each name both hold (here equal); by position they would differ in
 * every slot. Equal names compare by position, as before. */
static void test_diff_by_name(void)
{
    char *d = named_diff("v23", "columns");
    CHECK_STR(d, "count: parameter count: 2 vs 3\nname: c.weight only in the second");
    free(d);
    d = named_diff("columns", "v23");
    CHECK_STR(d, "count: parameter count: 3 vs 2\nname: c.weight only in the first");
    free(d);
    d = named_diff("v23", "v20");
    CHECK_STR(d, "order: another order: slot 0 is b.weight in the first, slot 0 is a.weight in the second");
    free(d);
    d = named_diff("v23", "v23");
    CHECK_STR(d, "");
    free(d);
}

/* f's report JSON and its health's (the groups' lr, no band) */
static jvalue *report_of(ckpt_file *f)
{
    char *text = ckpt_report_json(ckpt_file_report(f));
    jvalue *v = text ? json_parse(text) : NULL;
    free(text);
    return v;
}

static double slot0_decay(ckpt_file *f)
{
    ckpt_health_options o = {NAN, 0, CKPT_NONE, NULL, NULL, false, 0, 0};
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *text = ckpt_health_json(f, NULL, &o, &err);
    CHECK(text != NULL);
    jvalue *h = text ? json_parse(text) : NULL;
    const jvalue *d = json_get(json_get(h, "slots") ? json_get(h, "slots")->items[0] : NULL, "decay");
    double x = d && !json_is_null(d) ? json_double(d) : NAN;
    json_free(h);
    free(text);
    ckpt_error_clear(&err);
    return x;
}

/* --kind on a folder (v23: one group, weight_decay 0.1; ckpt_set_kind, the family's set_kind): its groups save no
 * decoupled_weight_decay, so any given kind is taken (never a contradiction), the groups take it
 * (health's decay term: AdamW's lr · weight_decay, Adam's none) and the JSON says it was given;
 * a .distcp alone holds no groups: refused */
static void test_given_kind(void)
{
    unsigned char *b;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_file *f = open_seed("v23", &b, &mem, &src);
    CHECK(f != NULL);
    const ckpt_report *rep = f ? ckpt_file_report(f) : NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (f) {
        jvalue *r = report_of(f);
        const jvalue *g = json_get(json_get(r, "dcp"), "groups")->items[0];
        const double decay = json_double(json_get(g, "lr")) * json_double(json_get(g, "weightDecay"));
        CHECK(decay > 0);
        CHECK(json_is_null(json_get(json_get(r, "dcp"), "kindGiven")));
        json_free(r);
        CHECK(ckpt_kind_unknown(rep));
        CHECK(slot0_decay(f) == 0);
        CHECK(ckpt_set_kind(f, CKPT_ADAMW, &err) == 0);
        CHECK(!ckpt_kind_unknown(rep));
        CHECK(ckpt_config_of_slot(rep, 0)->kind == CKPT_ADAMW);
        CHECK(fabs(slot0_decay(f) - decay) <= 1e-12 * decay);
        r = report_of(f);
        CHECK_STR(str(json_get(json_get(r, "dcp"), "kindGiven")), "adamw");
        CHECK_STR(str(json_get(json_get(r, "config"), "kind")), "adamw");
        json_free(r);
        CHECK(ckpt_set_kind(f, CKPT_ADAM, &err) == 0);
        CHECK(ckpt_config_of_slot(rep, 0)->kind == CKPT_ADAM);
        CHECK(slot0_decay(f) == 0);
        r = report_of(f);
        CHECK_STR(str(json_get(json_get(r, "dcp"), "kindGiven")), "adam");
        json_free(r);
        ckpt_close(f);
    }
    free(b);
    char path[4096];
    snprintf(path, sizeof path, "%s/__0_0.distcp", fixture);
    size_t len = 0;
    b = ds_file_bytes(path, &len);
    CHECK(b != NULL);
    ckpt_source_memory(&src, &mem, b, len);
    f = b ? ckpt_open(&src, NULL) : NULL;
    CHECK(f != NULL);
    CHECK(f && ckpt_set_kind(f, CKPT_ADAMW, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "--kind is an optimizer's: this file holds none");
    ckpt_error_clear(&err);
    ckpt_close(f);
    free(b);
}

/* A folder of dcp_seeds.py's table, opened */
static ckpt_file *open_case(const char *name, unsigned char **mem, ckpt_memory *m, ckpt_source *src)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", cases, name);
    size_t len = 0;
    *mem = dcp_folder_bytes(path, name, &len, NULL);
    CHECK(*mem != NULL);
    ckpt_source_memory(src, m, *mem, len);
    return *mem ? ckpt_open(src, NULL) : NULL;
}

/* Groups that save decoupled_weight_decay say Adam or AdamW (12.4 by 10.3's rule): the kind is
 * known, health's decay term follows it, and --kind that contradicts it is refused */
static void test_kind_said(void)
{
    static const struct {
        const char *name;
        ckpt_kind said, other;
        const char *kind, *refusal;
    } rows[] = {
        {"n-says-adamw", CKPT_ADAMW, CKPT_ADAM, "adamw",
         "--kind adam contradicts the folder: its param_groups say decoupled_weight_decay True (AdamW)"},
        {"f-says-adam", CKPT_ADAM, CKPT_ADAMW, "adam",
         "--kind adamw contradicts the folder: its param_groups say decoupled_weight_decay False (Adam)"},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        unsigned char *b = NULL;
        ckpt_memory mem;
        ckpt_source src;
        ckpt_file *f = open_case(rows[k].name, &b, &mem, &src);
        CHECK(f != NULL);
        if (f) {
            const ckpt_report *rep = ckpt_file_report(f);
            CHECK(rep->error.code == 0);
            CHECK(!ckpt_kind_unknown(rep));
            CHECK(ckpt_config_of_slot(rep, 0)->kind == rows[k].said);
            jvalue *r = report_of(f);
            const jvalue *d = json_get(r, "dcp");
            CHECK_STR(str(json_get(d, "kindSaid")), rows[k].kind);
            CHECK(json_is_null(json_get(d, "kindGiven")));
            CHECK(json_get(json_get(d, "groups")->items[0], "decoupledWeightDecay")->b == (rows[k].said == CKPT_ADAMW));
            CHECK_STR(str(json_get(json_get(r, "config"), "kind")), rows[k].kind);
            const jvalue *g = json_get(d, "groups")->items[0];
            const double decay = json_double(json_get(g, "lr")) * json_double(json_get(g, "weightDecay"));
            json_free(r);
            /* AdamW's decoupled decay lr * wd; Adam's none */
            if (rows[k].said == CKPT_ADAMW) CHECK(decay > 0 && fabs(slot0_decay(f) - decay) <= 1e-12 * decay);
            else CHECK(slot0_decay(f) == 0);
            ckpt_error err = {0};
            ckpt_error_clear(&err);
            CHECK(ckpt_set_kind(f, rows[k].other, &err) == CKPT_E_INVALID_ARGUMENT);
            CHECK_STR(err.message, rows[k].refusal);
            ckpt_error_clear(&err);
            CHECK(ckpt_set_kind(f, rows[k].said, &err) == 0);
            CHECK(ckpt_config_of_slot(rep, 0)->kind == rows[k].said);
            r = report_of(f); /* the folder's own kind, not a given one */
            CHECK(r && json_is_null(json_get(json_get(r, "dcp"), "kindGiven")));
            json_free(r);
            ckpt_error_clear(&err);
            ckpt_close(f);
        }
        free(b);
    }
    /* a folder whose groups save none: unknown until given */
    unsigned char *b = NULL;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f = open_case("n", &b, &mem, &src);
    CHECK(f && ckpt_kind_unknown(ckpt_file_report(f)));
    jvalue *r = f ? report_of(f) : NULL;
    CHECK(r && json_is_null(json_get(json_get(r, "dcp"), "kindSaid")));
    CHECK(r && json_is_null(json_get(json_get(json_get(r, "dcp"), "groups")->items[0], "decoupledWeightDecay")));
    json_free(r);
    ckpt_close(f);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: test_dcp FIXTURE WORKDIR SEEDS [WRITTEN | --cases CASES]\n");
        return 2;
    }
    fixture = argv[1];
    work = argv[2];
    seeds = argv[3];
    if (argc > 5 && !strcmp(argv[4], "--cases")) {
        cases = argv[5];
        static const test_case table[] = {{"tests/cases/dcp.json: every folder of dcp_seeds.py", test_cases},
                                          {"form I placed by position, as form N by name", test_form_i},
                                          {"Accelerate's two folders read as one checkpoint", test_accelerate},
                                          {"groups that save decoupled_weight_decay say the kind", test_kind_said}};
        return RUN_ALL(table);
    }
    written = argc > 4 ? argv[4] : NULL;
    if (written) {
        static const test_case cases[] = {{"the core's own writer's folders, read back", test_written}};
        return RUN_ALL(cases);
    }
    static const test_case cases[] = {
        {"the 1.13 folder's index, chunks and byte ranges", test_folder_index},
        {"the 1.13 folder's statistics and roles", test_folder_stats},
        {"the statistics pass's progress ends at its total", test_folder_progress},
        {"a group without eps: health and export say which", test_no_eps},
        {"--kind on a folder", test_given_kind},
        {"a lone .metadata", test_lone_metadata},
        {"a lone .distcp", test_lone_distcp},
        {"1: no .metadata", test_no_metadata},
        {"10: a missing data file", test_missing_file},
        {"11: a record past its file's end", test_past_end},
        {"14: a window that is no torch.save record", test_not_a_record},
        {"torch >= 2.0's classes, and the checks on folders of them", test_seeds},
        {"the folder question on Accelerate's names", test_accelerate_plans},
        {"a folder of DCP folders in run order", test_run_folders},
        {"two folders compared by their FQNs", test_diff_by_name},
    };
    return RUN_ALL(cases);
}
