/* DCP to TorchLean in one step (format.md 12.8, ckpt_dcp_convert) against the two-step path: every
 * folder of tests/cases/dcp.json (dcp_seeds.py's; Accelerate's optimizer_0/ with the model part beside it, and its
 * model part alone) and torch 1.13's folder (tests/fixtures/dcp-torch113), as the file says and with the options a
 * PyTorch pair may need. The two-step path writes the consolidated pair (ckpt_dcp_consolidate), opens it, pairs it
 * (ckpt_pair_with) and converts it (ckpt_convert): the one step gives the same bytes, or the same refusal (code and
 * text). And the refusals 12.8 names, exactly. Usage: test_dcp_convert FIXTURE CASES */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "ds_folder.h"
#include "base/error.h"
#include "minijson.h"
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *fixture, *cases;
static size_t compared; /* folders whose bytes were compared */

/* the folder named "ckpt" in texts, opened whole; NULL when it is no DCP folder */
static ckpt_file *open_folder(const char *dir, unsigned char **bytes, ckpt_source *src, ckpt_memory *mem)
{
    size_t len = 0;
    *bytes = dcp_folder_bytes(dir, "ckpt", &len, NULL);
    if (!*bytes) return NULL;
    ckpt_source_memory(src, mem, *bytes, len);
    return ckpt_open(src, NULL);
}

/* The two-step path: the consolidated pair written (zip folders named as the CLI names them after
 * the files' stems), opened, paired and converted. */
static int two_step(const ckpt_file *f, const ckpt_convert_options *o, ckpt_buffer *out, ckpt_error *err)
{
    ckpt_buffer ob = {0}, mb = {0};
    ckpt_sink os, ms;
    ckpt_sink_buffer(&os, &ob);
    ckpt_sink_buffer(&ms, &mb);
    ckpt_ds_consolidate_options oo = {CKPT_DS_OPTIMIZER, "opt", NULL, NULL}, mo = {CKPT_DS_MODEL, "m", NULL, NULL};
    int rc = ckpt_dcp_consolidate(f, &oo, &os, err);
    if (!rc) rc = ckpt_dcp_consolidate(f, &mo, &ms, err);
    if (rc) {
        ckpt_buffer_free(&ob);
        ckpt_buffer_free(&mb);
        return rc;
    }
    rc = pair_convert_bytes(ob.data, ob.len, mb.data, mb.len, o, out, err);
    CHECK(rc != -1);
    ckpt_buffer_free(&ob);
    ckpt_buffer_free(&mb);
    return rc;
}

/* The pair's note where the consolidated optimizer gives a slot with state no id (a name in no
 * group, 12.8), so the pair cannot tell it is untrained; every other folder leaves nothing untold
 * (12.4 knows its frozen slots). */
static const char *note_of(const char *name)
{
    if (strcmp(name, "state-without-group")) return NULL;
    return "PyTorch: l2.bias has no optimizer state: the pair holds only if the training code does not train it (a "
           "frozen parameter, or a buffer: --frozen l2.bias says so); if it trains it, torch's load_state_dict "
           "refuses this state (loaded state dict contains a parameter group that doesn't match the size of "
           "optimizer's group)";
}

/* One folder with options o: the one step and the two-step path agree. Returns the one step's
 * code; its text into *text (malloc'ed) when it refuses. */
static int one_variant(const ckpt_file *f, const ckpt_convert_options *o, char **text)
{
    ckpt_buffer direct = {0}, two = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &direct);
    ckpt_error ed = {0}, et = {0};
    ckpt_error_clear(&ed);
    ckpt_error_clear(&et);
    char *note = NULL;
    int rd = ckpt_dcp_convert(f, o, NULL, 0, &sink, NULL, &note, &ed);
    int rt = two_step(f, o, &two, &et);
    CHECK(rd == rt);
    CHECK_STR(ed.message ? ed.message : "", et.message ? et.message : "");
    if (!rd) {
        CHECK(direct.len == two.len && direct.len > 0 && !memcmp(direct.data, two.data, direct.len));
        const char *want = note_of(t_current);
        CHECK(want ? note && !strcmp(note, want) : note == NULL);
    }
    if (text && rd && ed.message) { /* the refusal's text, kept */
        size_t n = strlen(ed.message) + 1;
        if ((*text = malloc(n))) memcpy(*text, ed.message, n);
    }
    free(note);
    ckpt_error_clear(&ed);
    ckpt_error_clear(&et);
    ckpt_buffer_free(&direct);
    ckpt_buffer_free(&two);
    return rd;
}

/* The options a PyTorch pair may need, added one after the other: as the file says; the kind,
 * weight decay and amsgrad's moment left out; and eps. */
static ckpt_convert_options variant(int v)
{
    ckpt_convert_options o = {0};
    o.oldest = true;
    if (v >= 1) {
        o.kind = 1 + CKPT_ADAMW;
        o.has_weight_decay = true;
        o.weight_decay = 0.01;
        o.drop_amsgrad = true;
    }
    if (v >= 2) o.has_eps = true, o.eps = 1e-8;
    return o;
}

/* One folder in every variant. */
static void same_as_two_step(const char *dir)
{
    unsigned char *b;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_file *f = open_folder(dir, &b, &src, &mem);
    CHECK(f != NULL);
    bool converted = false;
    for (int v = 0; f && v < 3; v++) {
        ckpt_convert_options o = variant(v);
        converted |= one_variant(f, &o, NULL) == 0;
    }
    compared += converted;
    ckpt_close(f);
    free(b);
}

static void test_cases(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/cases.json", cases);
    char *text = json_read_file(path);
    jvalue *table = text ? json_parse(text) : NULL;
    free(text);
    const jvalue *cs = json_get(table, "cases");
    CHECK(cs && cs->len >= 40);
    for (size_t k = 0; cs && k < cs->len; k++) {
        const char *name = json_get(cs->items[k], "name")->text;
        t_current = name;
        static const char *const accelerate[] = {"pytorch_model_fsdp_0", "optimizer_0"};
        bool acc = !strcmp(name, "accelerate");
        for (size_t part = 0; part < (acc ? 2u : 1u); part++) {
            if (acc) snprintf(path, sizeof path, "%s/%s/%s", cases, name, accelerate[part]);
            else snprintf(path, sizeof path, "%s/%s", cases, name);
            same_as_two_step(path);
        }
    }
    t_current = "torch 1.13's folder";
    same_as_two_step(fixture);
    CHECK(compared >= 12); /* form N, N23, F, the dtypes, 1.13's classes, ...: converted and compared */
    json_free(table);
}

/* The files of folder `from` (no subfolders) copied into `to`, and a folder of files removed. */
static void copy_folder(const char *from, const char *to)
{
    DIR *d = opendir(from);
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char a[4096], b[4096];
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        size_t n = 0;
        unsigned char *bytes = ds_file_bytes(a, &n);
        FILE *f = fopen(b, "wb");
        CHECK(bytes && f && fwrite(bytes, 1, n, f) == n);
        if (f) fclose(f);
        free(bytes);
    }
    if (d) closedir(d);
}

static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) remove(p);
    }
    if (d) closedir(d);
    rmdir(dir);
}

/* 12.8's refusals come first, in the core's words and code */
static void refused(const char *dir, int code, const char *message)
{
    unsigned char *b;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_file *f = open_folder(dir, &b, &src, &mem);
    CHECK(f != NULL);
    ckpt_convert_options o = {0};
    o.oldest = true;
    ckpt_buffer buf = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    CHECK(ckpt_dcp_convert(f, &o, NULL, 0, &sink, NULL, NULL, &e) == code);
    CHECK(e.code == code);
    CHECK_STR(e.message, message);
    ckpt_error_clear(&e);
    ckpt_buffer_free(&buf);
    ckpt_close(f);
    free(b);
}

/* torch 1.13's folder: its groups say neither the kind nor eps; each refusal in turn, the pair
 * route's, then TorchLean's file with both given */
static void test_torch113(void)
{
    t_current = "torch 1.13's folder";
    unsigned char *b;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_file *f = open_folder(fixture, &b, &src, &mem);
    CHECK(f != NULL);
    static const struct {
        int code;
        const char *text;
    } want[] = {
        {CKPT_E_CONVERSION_LOSES, "the file does not say whether its optimizer is Adam or AdamW (its groups have no "
                                  "decoupled_weight_decay): --kind adam|adamw says it"},
        {CKPT_E_INVALID_EPSILON,
         "CUDA Adam checkpoint: `epsilon` must remain finite and positive in Runtime.Autograd.LibTorch.Dtype.float32"},
        {0, NULL},
    };
    for (int v = 0; f && v < 3; v++) {
        ckpt_convert_options o = variant(v);
        char *text = NULL;
        CHECK(one_variant(f, &o, &text) == want[v].code);
        CHECK(want[v].text ? text && !strcmp(text, want[v].text) : text == NULL);
        free(text);
    }
    ckpt_close(f);
    free(b);
}

static void test_refusals(void)
{
    char path[4096];
    t_current = "no-planner-data";
    snprintf(path, sizeof path, "%s/no-planner-data", cases);
    refused(path, CKPT_E_CONVERSION_LOSES,
            "DCP: ckpt keeps no module order (no planner_data): give --names NAMES.json to number the parameters");
    /* optimizer_0/ copied alone: beside pytorch_model_fsdp_0/ it takes that model part (12.7) */
    t_current = "accelerate/optimizer_0 alone";
    char alone[] = "/tmp/ckpt-optimizer_0-XXXXXX";
    CHECK(mkdtemp(alone) != NULL);
    snprintf(path, sizeof path, "%s/accelerate/optimizer_0", cases);
    copy_folder(path, alone);
    refused(alone, CKPT_E_CONVERSION_LOSES,
            "DCP: ckpt holds optimizer state but no model part: give --state MODEL (a torch.save state dict, a "
            "safetensors file or the model's DCP folder)");
    remove_folder(alone);
    t_current = "accelerate/pytorch_model_fsdp_0";
    snprintf(path, sizeof path, "%s/accelerate/pytorch_model_fsdp_0", cases);
    refused(path, CKPT_E_CONVERSION_LOSES, /* a model part alone: the pair route finds no group */
            "the optimizer has no parameter groups: TorchLean's file has no configuration to take");
    t_current = "not a DCP folder";
    static const unsigned char junk[16] = "not a checkpoint";
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, junk, sizeof junk);
    ckpt_file *f = ckpt_open(&src, NULL);
    ckpt_convert_options o = {0};
    ckpt_buffer buf = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error e = {0};
    ckpt_error_clear(&e);
    CHECK(ckpt_dcp_convert(f, &o, NULL, 0, &sink, NULL, NULL, &e) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(e.message, "convert: not a DCP folder");
    ckpt_error_clear(&e);
    ckpt_buffer_free(&buf);
    ckpt_close(f);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_dcp_convert FIXTURE CASES\n");
        return 2;
    }
    fixture = argv[1], cases = argv[2];
    static const test_case table[] = {
        {"every folder of the table and torch 1.13's: the one step as the two-step path", test_cases},
        {"torch 1.13's folder: the pair route's refusals, then converted", test_torch113},
        {"12.8's refusals first, exactly", test_refusals},
    };
    return RUN_ALL(table);
}
