/* DeepSpeed ZeRO checkpoints (format.md 11): DeepSpeed's own files (tests/fixtures/deepspeed) and
 * folders written by tests/c/deepspeed_seeds.py's ZeRO writer, each laid out as one source as the
 * JS package lays a folder out (ds_folder.c). For every case of OUT/manifest.json: the verdict,
 * the first error's code and text, every failure and every warning, exactly; every trainable
 * parameter's exp_avg, exp_avg_sq and fp32 masters read from its fragments equal bit for bit to
 * the values the writer wrote or the seed script's independent reconstruction; and the real
 * fixtures against truth.pt (a single-process AdamW run), read with the torch.save reader. Then
 * each file alone, the folder plan's answers, a malformed folder source, and every pairing of the
 * manifest with the model it will be loaded into (format.md 11.6): verdict, failures, warnings, note.
 * Usage: test_deepspeed OUT FIXTURES */
#include "ds_folder.h"
#include "families/deepspeed/deepspeed.h"
#include "minijson.h"
#include "testutil.h"

#include <math.h>

static const char *out_dir, *fixtures;
static jvalue *manifest;

static ckpt_report *ds_inspect_bytes(const unsigned char *b, size_t len, bool stats)
{
    ckpt_source src;
    static ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_inspect_options o = {stats ? CKPT_INSPECT_STATS : 0, NULL, NULL};
    return ckpt_inspect(&src, &o);
}

static const jvalue *at(const jvalue *v, size_t k) { return v && k < v->len ? v->items[k] : NULL; }

static void ds_check_error(const ckpt_error *e, const jvalue *want)
{
    if (json_is_null(want)) {
        CHECK(e->code == 0);
        if (e->code) fprintf(stderr, "  unexpected: %s\n", e->message);
        return;
    }
    CHECK(e->code == (int)json_u64(json_get(want, "code")));
    CHECK_STR(e->message, json_get(want, "message")->text);
}

static size_t param_named(const ckpt_ds *ds, const char *name)
{
    for (size_t k = 0; k < ds->params_len; k++)
        if (!strcmp(ds->params[k].name, name)) return k;
    return DS_NONE;
}

/* A parameter's key read from its fragments (in rank order), as float32 bytes. */
static unsigned char *read_key(const ckpt_ds *ds, const unsigned char *bundle, size_t p, int key, size_t *len)
{
    ds_frag_at frags[64];
    size_t n = ckpt_ds_fragments(ds, p, key, frags), total = 0;
    CHECK(n <= ds->W && n == ds->params[p].frags_len);
    for (size_t j = 0; j < n; j++) total += frags[j].count * 4;
    unsigned char *b = malloc(total ? total : 1);
    size_t at = 0;
    for (size_t j = 0; j < n; j++) {
        CHECK(frags[j].dtype == CKPT_FLOAT32);
        CHECK(frags[j].at == ds->files[frags[j].file].base + frags[j].file_at);
        memcpy(b + at, bundle + frags[j].at, frags[j].count * 4);
        at += frags[j].count * 4;
    }
    *len = total;
    return b;
}

static const char *const keys[3] = {"exp_avg", "exp_avg_sq", "fp32"};
static const int key_ids[3] = {DS_EXP_AVG, DS_EXP_AVG_SQ, DS_FP32};

static void check_values(const ckpt_report *rep, const unsigned char *bundle, const jvalue *values)
{
    const ckpt_ds *ds = ckpt_ds_of(rep);
    CHECK(ds != NULL);
    if (!ds) return;
    size_t with_slot = 0;
    for (size_t k = 0; k < ds->params_len; k++) with_slot += ds->params[k].slot != DS_NONE;
    CHECK(values->len == with_slot);
    for (size_t v = 0; v < values->len; v++) {
        const char *name = values->keys[v];
        const jvalue *e = values->items[v];
        size_t p = param_named(ds, name);
        CHECK(p != DS_NONE);
        if (p == DS_NONE) continue;
        CHECK(ds->params[p].frags_len >= 1 && ds->params[p].frags_len <= ds->W);
        CHECK(ds->groups[ds->params[p].flat].step == json_double(json_get(e, "step")));
        const jvalue *shape = json_get(e, "shape");
        CHECK(ds->params[p].rank_dims == shape->len);
        for (size_t d = 0; d < shape->len && d < 8; d++) CHECK(ds->params[p].dims[d] == json_u64(shape->items[d]));
        for (int k = 0; k < 3; k++) {
            const jvalue *path = json_get(json_get(e, "keys"), keys[k]);
            if (json_is_null(path)) continue;
            size_t want_len, got_len;
            unsigned char *want = ds_file_bytes(path->text, &want_len);
            unsigned char *got = read_key(ds, bundle, p, key_ids[k], &got_len);
            CHECK(want && got_len == want_len && !memcmp(want, got, want_len));
            if (!want || got_len != want_len || memcmp(want, got, want_len))
                fprintf(stderr, "  %s %s differs\n", name, keys[k]);
            free(want);
            free(got);
        }
        /* the statistics of the masters count every element once */
        const ckpt_stats *ms = ds->params[p].stats[DS_FP32];
        CHECK(ms && ms->count == ds->params[p].count);
    }
    /* the report's entries: one per trainable owner with a slot, m and v of its count */
    CHECK(rep->entries_len == with_slot);
    for (size_t k = 0; k < rep->entries_len; k++)
        CHECK(rep->entries[k].m && rep->entries[k].m->count == rep->entries[k].count && rep->entries[k].v);
}

static void check_schema(const ckpt_report *rep, const ckpt_ds *ds, const jvalue *want)
{
    const ckpt_schema *s = rep->schema;
    const jvalue *names = json_get(want, "names"), *shapes = json_get(want, "shapes"),
                 *flags = json_get(want, "requiresGrad"), *reps = json_get(want, "representatives");
    CHECK(s && ckpt_schema_count(s) == names->len && ds->slot_count == names->len);
    CHECK(ckpt_schema_is_well_formed(s));
    for (size_t i = 0; s && i < names->len && i < ckpt_schema_count(s); i++) {
        CHECK_STR(ds->slot_names[i], names->items[i]->text);
        const jvalue *shape = shapes->items[i];
        CHECK(ckpt_schema_rank(s, i) == shape->len);
        for (size_t d = 0; d < shape->len && d < ckpt_schema_rank(s, i); d++)
            CHECK(ckpt_schema_dims(s, i)[d] == json_u64(shape->items[d]));
        CHECK(ckpt_schema_requires_grad(s, i) == flags->items[i]->b);
        uint64_t r = ckpt_schema_representative(s, i);
        CHECK(json_is_null(reps->items[i]) ? r == CKPT_NONE : r == json_u64(reps->items[i]));
    }
}

static void test_manifest(void)
{
    const jvalue *cases = json_get(manifest, "cases");
    CHECK(cases && cases->len > 50);
    for (size_t c = 0; cases && c < cases->len; c++) {
        const jvalue *cs = cases->items[c];
        const char *name = json_get(cs, "name")->text, *dir = json_get(cs, "dir")->text;
        t_current = name;
        size_t len = 0;
        unsigned char *b = ds_folder_bytes(dir, dir, &len, NULL);
        CHECK(b != NULL);
        if (!b) continue;
        ckpt_report *rep = ds_inspect_bytes(b, len, true);
        CHECK(rep->family && !strcmp(rep->family->magic, "DeepSpeed"));
        CHECK((rep->error.code == 0) == json_get(cs, "ok")->b);
        ds_check_error(&rep->error, json_get(cs, "error"));
        const ckpt_ds *ds = ckpt_ds_of(rep);
        const jvalue *fails = json_get(cs, "failures");
        CHECK(ds && ds->failures_len == fails->len);
        for (size_t k = 0; ds && k < ds->failures_len && k < fails->len; k++)
            ds_check_error(&ds->failures[k], at(fails, k));
        const jvalue *hint = json_get(cs, "hint");
        if (hint) CHECK_STR(rep->error.hint, hint->text);
        const jvalue *warns = json_get(cs, "warnings");
        CHECK(rep->warnings_len == warns->len);
        for (size_t k = 0; k < rep->warnings_len && k < warns->len; k++)
            CHECK_STR(rep->warnings[k], warns->items[k]->text);
        const jvalue *kind = json_get(cs, "kind");
        if (!json_is_null(kind)) CHECK_STR(ds ? ds_kind_name(ds->kind) : NULL, kind->text);
        if (!json_is_null(json_get(cs, "worldSize"))) CHECK(ds && ds->W == json_u64(json_get(cs, "worldSize")));
        const jvalue *values = json_get(cs, "values");
        if (values && values->len) check_values(rep, b, values);
        /* the report's JSON is whole JSON, with the deepspeed member */
        char *json = ckpt_report_json(rep);
        jvalue *parsed = json ? json_parse(json) : NULL;
        CHECK(parsed && json_get(parsed, "deepspeed"));
        /* 11.4: the schema from the model states, the kind from ds_config */
        const jvalue *schema = json_get(cs, "schema");
        if (!json_is_null(schema)) check_schema(rep, ds, schema);
        const jvalue *said = json_get(cs, "optimizerKind");
        if (json_get(cs, "ok")->b && !json_get(cs, "real")->b && json_get(cs, "noConfig")) {
            /* an elastic checkpoint keeps no param_groups */
            CHECK(ckpt_config_of_slot(rep, 0) == NULL);
            CHECK(isnan(ckpt_lr_of_slot(rep, 0)));
        } else if (json_get(cs, "ok")->b && !json_get(cs, "real")->b) {
            const jvalue *got = json_get(json_get(parsed, "deepspeed"), "optimizerKind");
            CHECK(json_is_null(said) ? json_is_null(got) : got && !strcmp(got->text, said->text));
            CHECK(ckpt_config_of_slot(rep, 0) != NULL);
            /* unsaid: Adam's configuration, no decoupled decay until the kind is known (10.3) */
            CHECK(ckpt_config_of_slot(rep, 0)->kind ==
                  (!json_is_null(said) && !strcmp(said->text, "adamw") ? CKPT_ADAMW : CKPT_ADAM));
            const jvalue *by = json_get(cs, "kindSaidBy"),
                         *got_by = json_get(json_get(parsed, "deepspeed"), "kindSaidBy");
            CHECK(json_is_null(by) ? json_is_null(got_by) : got_by && !strcmp(got_by->text, by->text));
            CHECK(ckpt_kind_unknown(rep) == json_is_null(said));
            CHECK(ckpt_lr_of_slot(rep, 0) == 0.01);
        }
        json_free(parsed);
        free(json);
        ckpt_report_free(rep);
        free(b);
    }
}

/* A manifest case's folder opened (its bytes in *b, freed by the caller after ckpt_close), named
 * in the checks' messages */
static ckpt_file *open_case(const jvalue *cs, unsigned char **b)
{
    const char *dir = json_get(cs, "dir")->text;
    t_current = json_get(cs, "name")->text;
    size_t len = 0;
    *b = ds_folder_bytes(dir, dir, &len, NULL);
    ckpt_source src;
    static ckpt_memory mem;
    ckpt_source_memory(&src, &mem, *b, len);
    return *b ? ckpt_open(&src, NULL) : NULL;
}

/* The deepspeed member `key` of f's report JSON: its text, or "null" */
static void check_ds_member(ckpt_file *f, const char *key, const char *want)
{
    char *json = ckpt_report_json(ckpt_file_report(f));
    jvalue *j = json ? json_parse(json) : NULL;
    const jvalue *v = json_get(json_get(j, "deepspeed"), key);
    CHECK(v != NULL);
    CHECK_STR(!v ? NULL : json_is_null(v) ? "null" : v->text, want);
    json_free(j);
    free(json);
}

/* --kind on a folder (ckpt_set_kind, the family's set_kind): where ds_config names no optimizer
 * the groups' configurations take the given kind and the JSON says it was given; where it names
 * one, that kind is kept and another refused naming --kind; a file without an optimizer refuses
 * any */
static void test_given_kind(void)
{
    const jvalue *cases = json_get(manifest, "cases");
    size_t unsaid = 0, said = 0;
    for (size_t c = 0; cases && c < cases->len; c++) {
        const jvalue *cs = cases->items[c];
        if (!json_get(cs, "ok")->b || json_get(cs, "real")->b || json_get(cs, "noConfig")) continue;
        unsigned char *b;
        ckpt_file *f = open_case(cs, &b);
        CHECK(f != NULL);
        if (!f) {
            free(b);
            continue;
        }
        const ckpt_report *rep = ckpt_file_report(f);
        const jvalue *kind = json_get(cs, "optimizerKind");
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        if (json_is_null(kind)) {
            unsaid++;
            CHECK(ckpt_kind_unknown(rep));
            check_ds_member(f, "kindGiven", "null");
            /* AdamW first: Adam is the unknown kind's reading, so only a change shows the kind taken */
            CHECK(ckpt_set_kind(f, CKPT_ADAMW, &err) == 0);
            CHECK(!ckpt_kind_unknown(rep));
            CHECK(ckpt_config_of_slot(rep, 0)->kind == CKPT_ADAMW);
            check_ds_member(f, "kindGiven", "adamw");
            CHECK(ckpt_set_kind(f, CKPT_ADAM, &err) == 0);
            CHECK(ckpt_config_of_slot(rep, 0)->kind == CKPT_ADAM);
            check_ds_member(f, "kindGiven", "adam");
            check_ds_member(f, "optimizerKind", "null");
        } else {
            said++;
            const bool adamw = !strcmp(kind->text, "adamw");
            CHECK(ckpt_set_kind(f, adamw ? CKPT_ADAMW : CKPT_ADAM, &err) == 0);
            CHECK(ckpt_set_kind(f, adamw ? CKPT_ADAM : CKPT_ADAMW, &err) == CKPT_E_INVALID_ARGUMENT);
            if (!strcmp(json_get(cs, "kindSaidBy")->text, "param_groups"))
                CHECK_STR(err.message, adamw ? "--kind adam contradicts the checkpoint: its param_groups say "
                                               "decoupled_weight_decay True (AdamW)"
                                             : "--kind adamw contradicts the checkpoint: its param_groups say "
                                               "decoupled_weight_decay False (Adam)");
            else
                CHECK_STR(err.message,
                          adamw ? "--kind adam contradicts the checkpoint: its ds_config.optimizer is AdamW"
                                : "--kind adamw contradicts the checkpoint: its ds_config.optimizer is Adam");
            CHECK(ckpt_config_of_slot(rep, 0)->kind == (adamw ? CKPT_ADAMW : CKPT_ADAM));
            check_ds_member(f, "kindGiven", "null");
        }
        ckpt_error_clear(&err);
        ckpt_close(f);
        free(b);
    }
    CHECK(unsaid > 0 && said > 0);
    /* a model-states file alone holds no optimizer */
    t_current = "mp_rank_00_model_states.pt alone";
    char path[4096];
    snprintf(path, sizeof path, "%s/zero2-w2/global_step2/mp_rank_00_model_states.pt", fixtures);
    size_t len = 0;
    unsigned char *b = ds_file_bytes(path, &len);
    ckpt_source src;
    static ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = b ? ckpt_open(&src, NULL) : NULL;
    CHECK(f != NULL);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(f && ckpt_set_kind(f, CKPT_ADAMW, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "--kind is an optimizer's: this file holds none");
    ckpt_error_clear(&err);
    ckpt_close(f);
    free(b);
}

/* ---- the real fixtures against truth.pt ---- */

static const ckpt_torch_model *model_at(const ckpt_torch *t, const char *path)
{
    for (size_t k = 0; k < t->models_len; k++)
        if (!strcmp(t->models[k].path, path)) return &t->models[k];
    return NULL;
}

static const ckpt_torch_tensor *named_tensor(const ckpt_torch *t, const ckpt_torch_model *m, const char *name)
{
    for (size_t k = 0; m && k < m->count; k++)
        if (!strcmp(t->named[m->first + k].name, name) && t->named[m->first + k].tensor != CKPT_TORCH_NONE)
            return &t->tensors[t->named[m->first + k].tensor];
    return NULL;
}

static void test_truth(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/truth.pt", fixtures);
    size_t tlen;
    unsigned char *tb = ds_file_bytes(path, &tlen);
    CHECK(tb != NULL);
    ckpt_source ts;
    ckpt_memory tm;
    ckpt_source_memory(&ts, &tm, tb, tlen);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_torch *truth = NULL;
    CHECK(ckpt_torch_open(&ts, "truth.pt", &truth, &err) == 0);
    if (!truth) return;
    const ckpt_torch_model *weights = model_at(truth, "weights");
    CHECK(weights != NULL);
    const jvalue *cases = json_get(manifest, "cases");
    size_t compared = 0;
    for (size_t c = 0; c < cases->len; c++) {
        const jvalue *cs = cases->items[c];
        if (!json_get(cs, "real")->b || !json_get(cs, "ok")->b) continue;
        const char *name = json_get(cs, "name")->text, *dir = json_get(cs, "dir")->text;
        t_current = name;
        /* truth.pt is a float32 run; a bf16 run computes in bfloat16 and differs by its rounding */
        const double tol = json_get(cs, "bf16")->b ? 1e-2 : 5e-8;
        size_t len;
        unsigned char *b = ds_folder_bytes(dir, dir, &len, NULL);
        ckpt_report *rep = ds_inspect_bytes(b, len, false);
        const ckpt_ds *ds = ckpt_ds_of(rep);
        CHECK(ds && ds->params_len == 7);
        for (size_t p = 0; ds && p < ds->params_len; p++) {
            char sp[256];
            snprintf(sp, sizeof sp, "state.%s", ds->params[p].name);
            const ckpt_torch_model *st = model_at(truth, sp);
            for (int k = 0; k < 3; k++) {
                const ckpt_torch_tensor *x =
                    k == 2 ? named_tensor(truth, weights, ds->params[p].name) : named_tensor(truth, st, keys[k]);
                CHECK(x && x->count == ds->params[p].count && !strcmp(x->dtype, "float32"));
                if (!x) continue;
                size_t gl;
                unsigned char *got = read_key(ds, b, p, key_ids[k], &gl);
                double worst = 0;
                for (uint64_t i = 0; i < x->count && gl == 4 * x->count; i++) {
                    float a, w;
                    memcpy(&a, got + 4 * i, 4);
                    memcpy(&w, tb + x->at + 4 * i, 4);
                    if (fabs((double)a - (double)w) > worst) worst = fabs((double)a - (double)w);
                }
                CHECK(gl == 4 * x->count && worst <= tol);
                if (worst > tol) fprintf(stderr, "  %s %s: off by %g\n", ds->params[p].name, keys[k], worst);
                compared++;
                free(got);
            }
        }
        ckpt_report_free(rep);
        free(b);
    }
    CHECK(compared == 8 * 7 * 3); /* eight fixtures (the universal one too), seven parameters, three keys */
    ckpt_torch_free(truth);
    free(tb);
}

/* ---- each file alone (format.md 11.1) ---- */

/* torch.load(weights_only=True)'s verdict on a partition (format.md 11.1): DeepSpeed's classes */
static const char *const refused3 =
    "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: \"__builtin__.getattr\", "
    "\"deepspeed.runtime.zero.config.ZeroStageEnum\", \"deepspeed.runtime.fp16.loss_scaler.LossScaler\"";
static const char *const refused12 =
    "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: "
    "\"deepspeed.runtime.fp16.loss_scaler.LossScaler\", \"__builtin__.getattr\", "
    "\"deepspeed.runtime.zero.config.ZeroStageEnum\", \"deepspeed.utils.tensor_fragment.fragment_address\"";

static void lone(const char *rel, const char *family, const char *role, const char *note, const char *kind,
                 uint64_t rank, uint64_t W, const char *warning)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", fixtures, rel);
    t_current = rel;
    size_t len;
    unsigned char *b = ds_file_bytes(path, &len);
    ckpt_report *rep = ds_inspect_bytes(b, len, true);
    CHECK(rep->error.code == 0);
    CHECK_STR(rep->family ? rep->family->magic : NULL, family);
    char *json = ckpt_report_json(rep);
    jvalue *j = json ? json_parse(json) : NULL;
    CHECK_STR(json_get(j, "kind") ? json_get(j, "kind")->text : NULL, role);
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (note) {
        CHECK(ds && ds->lone);
        CHECK_STR(ds ? ds->note : NULL, note);
        CHECK_STR(json_get(json_get(j, "deepspeed"), "note")->text, note);
    }
    if (kind) {
        CHECK_STR(ds_kind_name(ds->kind), kind);
        CHECK(ds->lone_rank == rank && ds->W == W);
    }
    CHECK(rep->warnings_len == (warning != NULL));
    if (warning && rep->warnings_len) CHECK_STR(rep->warnings[0], warning);
    json_free(j);
    free(json);
    ckpt_report_free(rep);
    free(b);
}

static void test_lone_files(void)
{
    const char *part = "DeepSpeed: this file is partition %s of %s of a DeepSpeed %s optimizer: each parameter's state "
                       "is split across the %s files of its folder; open its folder";
    char want[512];
    snprintf(want, sizeof want, part, "1", "2", "ZeRO-2", "2");
    lone("zero2-w2/global_step2/zero_pp_rank_1_mp_rank_00_optim_states.pt", "DeepSpeed", "optimizer", want, "ZeRO-2", 1,
         2, refused12);
    snprintf(want, sizeof want, part, "0", "2", "ZeRO-1", "2");
    lone("zero1-w2/global_step2/zero_pp_rank_0_mp_rank_00_optim_states.pt", "DeepSpeed", "optimizer", want, "ZeRO-1", 0,
         2, refused12);
    snprintf(want, sizeof want, part, "2", "3", "ZeRO-3", "3");
    lone("zero3-w3/global_step2/zero_pp_rank_2_mp_rank_00_optim_states.pt", "DeepSpeed", "optimizer", want, "ZeRO-3", 2,
         3, refused3);
    snprintf(want, sizeof want, part, "1", "2", "ZeRO-2", "2");
    lone("zero2-w2-bf16/global_step2/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt", "DeepSpeed", "optimizer", want,
         "ZeRO-2", 1, 2, refused12);
    lone("zero2-w2/global_step2/mp_rank_00_model_states.pt", "DeepSpeed", "state",
         "DeepSpeed: mp_rank_00_model_states.pt is the model states of a DeepSpeed checkpoint (the module, the "
         "parameters' names and shapes): the optimizer state is in the partition files of its folder; open its folder",
         NULL, 0, 0, NULL);
    lone("zero3-w2/global_step2/zero_pp_rank_1_mp_rank_00_model_states.pt", "DeepSpeed", "state",
         "DeepSpeed: zero_pp_rank_1_mp_rank_00_model_states.pt holds ZeRO-3 placeholders (0 elements per parameter): "
         "the weights are in the optimizer partitions; open its folder",
         NULL, 0, 0, NULL);
    /* a universal checkpoint's file is a torch.save file of another name: PyTorch's */
    lone("zero2-w3-universal/global_step2/zero/l1.bias/exp_avg.pt", "PyTorch", "state", NULL, NULL, 0, 0, NULL);
    /* a lone model states file's module: its tensors, with their names */
    char path[4096];
    snprintf(path, sizeof path, "%s/zero2-w2/global_step2/mp_rank_00_model_states.pt", fixtures);
    size_t len;
    unsigned char *b = ds_file_bytes(path, &len);
    ckpt_report *rep = ds_inspect_bytes(b, len, false);
    t_current = "model states' tensors";
    CHECK(rep->tensors_len == 11 && !strcmp(rep->tensors[1].name, "emb.weight"));
    ckpt_report_free(rep);
    free(b);
}

/* ---- the folder plan (ckpt_deepspeed_folder_json) ---- */

static char *plan_of(const char *listing)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *p = ckpt_deepspeed_folder_json(listing, strlen(listing), &err);
    if (!p) {
        size_t n = strlen(err.message) + 1;
        p = malloc(n);
        memcpy(p, err.message, n);
    }
    ckpt_error_clear(&err);
    return p;
}

static void test_plan(void)
{
    t_current = "plan";
    char *p = plan_of("{\"root\":\"d\",\"entries\":[{\"name\":\"x.txt\",\"size\":3},{\"name\":\"sub/\"}]}");
    CHECK_STR(p, "{\"family\":null,\"read\":[]}");
    free(p);
    p = plan_of("{\"root\":\"d\",\"entries\":[{\"name\":\"latest\",\"size\":12},{\"name\":\"global_step2/\"},"
                "{\"name\":\"global_step2/mp_rank_00_model_states.pt\",\"size\":10}]}");
    CHECK_STR(p, "{\"family\":\"DeepSpeed\",\"read\":[\"latest\"],\"readLimit\":1024}");
    free(p);
    /* the text read: the tag, stripped as Python strips it */
    p = plan_of("{\"root\":\"d\",\"entries\":[{\"name\":\"latest\",\"size\":14},{\"name\":\"global_step2/\"},"
                "{\"name\":\"global_step2/mp_rank_00_model_states.pt\",\"size\":10},"
                "{\"name\":\"global_step2/zero_to_fp32.py\",\"size\":5}],\"texts\":{\"latest\":\" global_step2\\n\"}}");
    jvalue *j = json_parse(p);
    CHECK_STR(json_get(j, "tag")->text, "global_step2");
    const jvalue *m = json_get(j, "members");
    CHECK(m && m->len == 2);
    /* in the listing's order, back to back after the header */
    CHECK_STR(json_get(at(m, 0), "name")->text, "latest");
    CHECK_STR(json_get(at(m, 1), "name")->text, "global_step2/mp_rank_00_model_states.pt");
    CHECK(json_u64(json_get(at(m, 1), "offset")) == json_u64(json_get(at(m, 0), "offset")) + 14);
    CHECK(json_u64(json_get(j, "size")) == json_u64(json_get(at(m, 1), "offset")) + 10);
    CHECK(json_get(j, "header")->len == json_u64(json_get(at(m, 0), "offset")));
    json_free(j);
    free(p);
    /* a save_dir's tag folders in run order: by the last number of the name, those without one
     * after them by name; a folder holding no DeepSpeed file is none */
    p = plan_of("{\"root\":\"d\",\"entries\":[{\"name\":\"latest\",\"size\":13},{\"name\":\"best/\"},"
                "{\"name\":\"best/mp_rank_00_model_states.pt\",\"size\":10},{\"name\":\"global_step10/\"},"
                "{\"name\":\"global_step10/mp_rank_00_model_states.pt\",\"size\":10},{\"name\":\"global_step9/\"},"
                "{\"name\":\"global_step9/mp_rank_00_model_states.pt\",\"size\":10},{\"name\":\"logs/\"},"
                "{\"name\":\"logs/x.txt\",\"size\":1}],\"texts\":{\"latest\":\"global_step10\"}}");
    j = json_parse(p);
    const jvalue *tags = json_get(j, "tags");
    CHECK(tags && tags->len == 3);
    if (tags && tags->len == 3) {
        CHECK_STR(tags->items[0]->text, "global_step9");
        CHECK_STR(tags->items[1]->text, "global_step10");
        CHECK_STR(tags->items[2]->text, "best");
    }
    json_free(j);
    free(p);
    /* not a listing */
    p = plan_of("[1]");
    CHECK_STR(p, "a folder's listing is {\"root\", \"entries\": [{\"name\", \"size\"}], \"texts\"}");
    free(p);
    p = plan_of("{\"root\":\"d\",\"entries\":[{\"name\":\"/etc/x\",\"size\":1}]}");
    CHECK_STR(p, "entry 0 of a folder's listing is not {\"name\": a relative path, \"size\": bytes or null}");
    free(p);
}

/* ---- a folder source that is not one ---- */

static void test_malformed_bundle(void)
{
    t_current = "malformed bundle";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/zero2-w2", fixtures);
    size_t len;
    unsigned char *b = ds_folder_bytes(dir, "d", &len, NULL);
    /* the header's entry count past what the header holds */
    ckpt_put_u64le(b + 32, (uint64_t)1 << 40);
    ckpt_report *rep = ds_inspect_bytes(b, len, false);
    CHECK(rep->error.code == CKPT_E_FOLDER_BUNDLE);
    CHECK_STR(rep->error.message, "folder: malformed folder listing at byte 32: more entries than the header holds");
    ckpt_report_free(rep);
    /* a member past the source's end */
    ckpt_report *ok = ds_inspect_bytes(b, len, false);
    ckpt_report_free(ok);
    free(b);
    b = ds_folder_bytes(dir, "d", &len, NULL);
    rep = ds_inspect_bytes(b, len - 1, false);
    CHECK(rep->error.code == CKPT_E_FOLDER_BUNDLE);
    ckpt_report_free(rep);
    free(b);
}

/* ---- export: every parameter's exp_avg, exp_avg_sq and fp32 masters, bit for bit ---- */

/* The safetensors header's tensor `name`: its bytes (into data) and its entry. */
static const unsigned char *st_tensor(const jvalue *header, const unsigned char *data, const char *name, size_t *len,
                                      const jvalue **entry)
{
    const jvalue *t = json_get(header, name);
    *entry = t;
    if (!t) return NULL;
    const jvalue *off = json_get(t, "data_offsets");
    uint64_t a = json_u64(off->items[0]), b = json_u64(off->items[1]);
    *len = (size_t)(b - a);
    return data + a;
}

/* every key an export holds, amsgrad's too */
static const char *const all_keys[4] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "fp32"};

static void check_export(const char *name, const unsigned char *b, size_t len, const jvalue *values)
{
    ckpt_source src;
    static ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(f != NULL);
    if (!f) return;
    ckpt_buffer buf = {0};
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_export_options o = {CKPT_EXPORT_SAFETENSORS, NULL, 0, NULL, 0, NULL, NULL};
    ckpt_error err = {0};
    int rc = ckpt_export(f, &o, &sink, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  %s: export: %s\n", name, err.message);
    uint64_t n = 0;
    for (int k = 0; !rc && k < 8; k++) n |= (uint64_t)buf.data[k] << (8 * k);
    char *text = rc ? NULL : malloc((size_t)n + 1);
    if (text) {
        memcpy(text, buf.data + 8, (size_t)n);
        text[n] = 0;
    }
    jvalue *header = text ? json_parse(text) : NULL;
    CHECK(rc || header);
    const unsigned char *data = buf.data + 8 + n;
    const jvalue *meta = json_get(header, "__metadata__");
    jvalue *what = meta ? json_parse(json_get(meta, "tensors")->text) : NULL;
    jvalue *steps = meta ? json_parse(json_get(meta, "steps")->text) : NULL;
    CHECK(!header || (meta && what && steps && !strcmp(json_get(meta, "family")->text, "DeepSpeed")));
    /* the tensors: three per parameter with state, and the metadata */
    size_t tensors = 0;
    for (size_t v = 0; header && v < values->len; v++) tensors += json_get(values->items[v], "keys")->len;
    CHECK(!header || header->len == tensors + 1);
    for (size_t v = 0; header && what && steps && v < values->len; v++) {
        const char *param = values->keys[v];
        const jvalue *e = values->items[v];
        CHECK(json_double(json_get(steps, param)) == json_double(json_get(e, "step")));
        for (int k = 0; k < 4; k++) {
            const jvalue *path = json_get(json_get(e, "keys"), all_keys[k]);
            if (json_is_null(path)) continue;
            char tname[512];
            snprintf(tname, sizeof tname, k == 3 ? "%s" : "%s.%s", param, all_keys[k]);
            size_t got_len = 0, want_len = 0;
            const jvalue *entry;
            const unsigned char *got = st_tensor(header, data, tname, &got_len, &entry);
            unsigned char *want = ds_file_bytes(path->text, &want_len);
            CHECK(got && want && got_len == want_len && !memcmp(got, want, want_len));
            if (!got || !want || got_len != want_len || memcmp(got, want, want_len))
                fprintf(stderr, "  %s: %s differs\n", name, tname);
            CHECK(entry && !strcmp(json_get(entry, "dtype")->text, "F32"));
            const jvalue *shape = json_get(entry, "shape"), *ws = json_get(e, "shape");
            CHECK(shape && shape->len == ws->len);
            for (size_t d = 0; shape && d < shape->len && d < ws->len; d++)
                CHECK(json_u64(shape->items[d]) == json_u64(ws->items[d]));
            const jvalue *said = json_get(what, tname);
            CHECK_STR(said ? said->text : NULL, k == 3 ? "fp32 master weights" : all_keys[k]);
            free(want);
        }
    }
    /* statistics of an item read from its spans: those of the open's, from the fragments */
    ckpt_inspect_options so = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_report *with = ckpt_inspect(&src, &so);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(with && with->entries_len == rep->entries_len);
    for (size_t k = 0; with && k < rep->entries_len && k < with->entries_len; k++) {
        ckpt_stats *a = NULL, *b2 = NULL;
        ckpt_error e2 = {0};
        CHECK(ckpt_file_item_stats(f, k, NULL, NULL, &a, &b2, &e2) == 0);
        const ckpt_stats *m = with->entries[k].m, *v = with->entries[k].v;
        CHECK(a && b2 && m && v);
        if (a && b2 && m && v)
            CHECK(a->count == m->count && a->min == m->min && a->max == m->max && a->sum == m->sum &&
                  b2->count == v->count && b2->min == v->min && b2->max == v->max && b2->sum == v->sum &&
                  a->count == rep->entries[k].count);
        ckpt_stats_free(a);
        ckpt_stats_free(b2);
        ckpt_error_clear(&e2);
    }
    ckpt_report_free(with);
    json_free(what);
    json_free(steps);
    json_free(header);
    free(text);
    ckpt_buffer_free(&buf);
    ckpt_error_clear(&err);
    ckpt_close(f);
}

static void test_export(void)
{
    const jvalue *cases = json_get(manifest, "cases");
    size_t exported = 0;
    for (size_t c = 0; cases && c < cases->len; c++) {
        const jvalue *cs = cases->items[c];
        const jvalue *values = json_get(cs, "values");
        if (!json_get(cs, "ok")->b || !values || !values->len) continue;
        const char *name = json_get(cs, "name")->text, *dir = json_get(cs, "dir")->text;
        t_current = name;
        size_t len = 0;
        unsigned char *b = ds_folder_bytes(dir, dir, &len, NULL);
        CHECK(b != NULL);
        if (b) check_export(name, b, len, values);
        free(b);
        exported++;
    }
    CHECK(exported > 20);
}

/* ---- health: each parameter's next step from its fragments, its masters as the parameters ----
 * against the step computed here from the values written or reconstructed independently */

static const float *raw_floats(const char *path, size_t *n, unsigned char **hold)
{
    size_t len = 0;
    *hold = ds_file_bytes(path, &len);
    *n = len / 4;
    return (const float *)*hold;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-9 * fabs(b) + 1e-300; }

static void test_health(void)
{
    const jvalue *cases = json_get(manifest, "cases");
    size_t checked = 0;
    for (size_t c = 0; cases && c < cases->len; c++) {
        const jvalue *cs = cases->items[c];
        const jvalue *values = json_get(cs, "values");
        /* an elastic checkpoint keeps no betas: health takes the file's default configuration */
        /* (and NaN values are left out of the rms: the cases of 11.5.29's warnings are read above) */
        if (!json_get(cs, "ok")->b || !values || !values->len || json_get(cs, "noConfig") ||
            json_get(cs, "statsWarnings"))
            continue;
        const char *name = json_get(cs, "name")->text;
        unsigned char *b;
        ckpt_file *f = open_case(cs, &b);
        ckpt_health_options o = {0.01, 0, CKPT_NONE, NULL, NULL, false, 0, 0};
        ckpt_error err = {0};
        char *json = f ? ckpt_health_json(f, NULL, &o, &err) : NULL;
        CHECK(json != NULL);
        if (!json) fprintf(stderr, "  %s: health: %s\n", name, err.message);
        jvalue *h = json ? json_parse(json) : NULL;
        const jvalue *slots = json_get(h, "slots");
        const ckpt_ds *ds = f ? ckpt_ds_of(ckpt_file_report(f)) : NULL;
        CHECK(!h || (json_get(h, "ok")->b && slots && ds && slots->len == ds->slot_count));
        for (size_t i = 0; ds && slots && i < slots->len; i++) {
            const jvalue *sl = slots->items[i];
            const char *slot_name = ds->slot_names[i];
            const jvalue *v = json_get(values, slot_name);
            if (!v) { /* frozen (no state), or tied (its owner's) */
                CHECK(json_is_null(json_get(sl, "update")) == json_is_null(json_get(sl, "owner")));
                continue;
            }
            size_t n = 0, nm = 0, nv = 0;
            unsigned char *hp, *hm, *hv;
            const jvalue *keys = json_get(v, "keys");
            const float *p = raw_floats(json_get(keys, "fp32")->text, &n, &hp);
            const float *m = raw_floats(json_get(keys, "exp_avg")->text, &nm, &hm);
            /* amsgrad's next step divides by max_exp_avg_sq's root */
            const jvalue *vmax = json_get(keys, "max_exp_avg_sq");
            const float *vv = raw_floats((vmax ? vmax : json_get(keys, "exp_avg_sq"))->text, &nv, &hv);
            CHECK(n == nm && n == nv && n == json_u64(json_get(sl, "count")));
            /* the parameters: the fp32 masters; the update at step 3 with betas 0.9, 0.999, eps 1e-8 */
            double ss = 0, mx = 0, us = 0, umax = 0;
            const double t1 = json_double(json_get(v, "step")) + 1, eps = (float)1e-8;
            const double i1 = 1 / (1 - pow(0.9, t1)), i2 = 1 / (1 - pow(0.999, t1));
            for (size_t k = 0; k < n; k++) {
                ss += (double)p[k] * p[k];
                if (fabs(p[k]) > mx) mx = fabs(p[k]);
                double u = (m[k] * i1) / (sqrt(vv[k] * i2) + eps);
                us += u * u;
                if (fabs(u) > umax) umax = fabs(u);
            }
            const jvalue *param = json_get(sl, "param"), *upd = json_get(sl, "update");
            CHECK(param && upd);
            if (param && upd) {
                CHECK(near(json_double(json_get(param, "rms")), sqrt(ss / n)));
                CHECK(json_double(json_get(param, "maxAbs")) == mx);
                CHECK(near(json_double(json_get(upd, "rms")), sqrt(us / n)));
                CHECK(near(json_double(json_get(upd, "maxAbs")), umax));
                CHECK(near(json_double(json_get(sl, "ratio")), 0.01 * sqrt(us / n) / sqrt(ss / n)));
            }
            free(hp);
            free(hm);
            free(hv);
            checked++;
        }
        json_free(h);
        free(json);
        ckpt_error_clear(&err);
        ckpt_close(f);
        free(b);
    }
    CHECK(checked > 7 * 7);
}

/* ---- pairing with the model it will be loaded into (format.md 11.6) ---- */

static ckpt_file *open_bytes(const unsigned char *b, size_t len, ckpt_memory *mem)
{
    ckpt_source src;
    ckpt_source_memory(&src, mem, b, len);
    ckpt_inspect_options o = {0, NULL, NULL};
    return ckpt_open(&src, &o);
}

static void test_pairings(void)
{
    const jvalue *pairings = json_get(manifest, "pairings");
    CHECK(pairings && pairings->len >= 30);
    for (size_t c = 0; pairings && c < pairings->len; c++) {
        const jvalue *cs = pairings->items[c];
        t_current = json_get(cs, "name")->text;
        const char *dir = json_get(cs, "dir")->text;
        size_t dlen = 0, mlen = 0;
        unsigned char *db = ds_folder_bytes(dir, dir, &dlen, NULL), *mb = NULL;
        CHECK(db != NULL);
        if (!db) continue;
        static ckpt_memory dmem, mmem;
        ckpt_file *opt = open_bytes(db, dlen, &dmem), *model = NULL;
        const jvalue *mpath = json_get(cs, "model"), *npath = json_get(cs, "names");
        if (!json_is_null(mpath)) {
            mb = ds_file_bytes(mpath->text, &mlen);
            CHECK(mb != NULL);
            if (mb) model = open_bytes(mb, mlen, &mmem);
        }
        jvalue *names = NULL;
        const char **list = NULL;
        ckpt_pair_options o = {0};
        if (!json_is_null(npath)) {
            char *text = json_read_file(npath->text);
            names = text ? json_parse(text) : NULL;
            free(text);
            CHECK(names != NULL);
            list = calloc(names ? names->len + 1 : 1, sizeof *list);
            for (size_t k = 0; names && k < names->len; k++) list[k] = names->items[k]->text;
            o.names = list;
            o.name_count = names ? names->len : 0;
        }
        const jvalue *ws = json_get(cs, "worldSize");
        o.world_size = json_is_null(ws) ? 0 : json_u64(ws);
        ckpt_pair_result *r = ckpt_pair_with(opt, model, &o, NULL, NULL);
        CHECK(r != NULL);
        if (r) {
            CHECK(r->error.code == 0);
            CHECK(r->pairs == json_get(cs, "pairs")->b);
            const jvalue *fails = json_get(cs, "failures"), *warns = json_get(cs, "warnings");
            CHECK(r->failures_len == fails->len);
            for (size_t k = 0; k < r->failures_len && k < fails->len; k++)
                ds_check_error(&r->failures[k], at(fails, k));
            CHECK(r->warnings_len == warns->len);
            for (size_t k = 0; k < r->warnings_len && k < warns->len; k++)
                CHECK_STR(r->warnings[k], warns->items[k]->text);
            CHECK_STR(r->note, json_get(cs, "note")->text);
            char *json = ckpt_pair_json(r);
            jvalue *parsed = json ? json_parse(json) : NULL;
            CHECK(parsed != NULL);
            json_free(parsed);
            free(json);
            ckpt_pair_result_free(r);
        }
        free(list);
        json_free(names);
        if (model) ckpt_close(model);
        ckpt_close(opt);
        free(mb);
        free(db);
    }
}

/* ---- runs over tag folders (format.md 9, 11.1's run SAVE_DIR) ---- */

/* The run JSON of the manifest's run `name` over its tag folders, in order (NULL on error). */
static jvalue *run_of(const char *name)
{
    const jvalue *runs = json_get(manifest, "runs");
    const jvalue *r = NULL;
    for (size_t k = 0; runs && k < runs->len && !r; k++)
        if (!strcmp(json_get(runs->items[k], "name")->text, name)) r = runs->items[k];
    if (!r) return NULL;
    const jvalue *tags = json_get(r, "tags");
    size_t n = tags->len;
    ckpt_file *files[4] = {0};
    ckpt_source src[4];
    static ckpt_memory mem[4];
    unsigned char *bytes[4] = {0};
    for (size_t k = 0; k < n && k < 4; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", json_get(r, "dir")->text, tags->items[k]->text);
        size_t len = 0;
        bytes[k] = ds_folder_bytes(dir, tags->items[k]->text, &len, NULL);
        ckpt_source_memory(&src[k], &mem[k], bytes[k], len);
        files[k] = ckpt_open(&src[k], NULL);
    }
    ckpt_error err = {0};
    char *json = ckpt_run_json((const ckpt_file *const *)files, NULL, n, NULL, &err);
    if (!json) fprintf(stderr, "  %s: run: %s\n", name, err.message);
    ckpt_error_clear(&err);
    jvalue *j = json ? json_parse(json) : NULL;
    free(json);
    for (size_t k = 0; k < n && k < 4; k++) {
        ckpt_close(files[k]);
        free(bytes[k]);
    }
    return j;
}

static void test_runs(void)
{
    t_current = "run zero2";
    jvalue *j = run_of("zero2");
    CHECK(j && json_get(j, "ok")->b);
    const jvalue *pairs = json_get(j, "pairs");
    CHECK(pairs && pairs->len == 2);
    for (size_t p = 0; pairs && p < pairs->len; p++) {
        const jvalue *slots = json_get(pairs->items[p], "slots");
        CHECK(json_get(pairs->items[p], "continuous")->b && slots && slots->len == 5);
        for (size_t i = 0; slots && i < slots->len; i++) {
            /* the masters moved as one AdamW step at lr 0.01 */
            double lr = json_double(json_get(slots->items[i], "lr"));
            CHECK(fabs(lr / 0.01 - 1) < 1e-4);
            CHECK(json_u64(json_get(slots->items[i], "broken")) == 0);
        }
    }
    json_free(j);
    t_current = "run other";
    j = run_of("other");
    CHECK(j && !json_get(j, "ok")->b);
    CHECK_STR(json_get(json_get(j, "pairs")->items[0], "verdict")->text,
              "slot 0: 45 elements cannot come from Adam steps 2\u2192"
              "3 (first at element 0)");
    json_free(j);
    t_current = "run few";
    j = run_of("few");
    CHECK(j && json_is_null(json_get(json_get(j, "pairs")->items[0], "continuous")));
    json_free(j);
    t_current = "run layouts";
    j = run_of("layouts");
    CHECK_STR(json_get(json_get(j, "pairs")->items[0], "verdict")->text, "emb.weight is in file 0, not in file 1");
    json_free(j);
    t_current = "run shapes";
    j = run_of("shapes");
    CHECK_STR(json_get(json_get(j, "pairs")->items[0], "verdict")->text,
              "emb.weight is #[11, 6] in file 0, #[12, 6] in file 1");
    json_free(j);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_deepspeed OUT FIXTURES\n");
        return 2;
    }
    out_dir = argv[1];
    fixtures = argv[2];
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", out_dir);
    char *text = json_read_file(path);
    if (!text || !(manifest = json_parse(text))) {
        fprintf(stderr, "test_deepspeed: cannot read %s\n", path);
        return 2;
    }
    free(text);
    static const test_case cases[] = {
        {"every case of the manifest", test_manifest},
        {"--kind on a folder", test_given_kind},
        {"the real fixtures against truth.pt", test_truth},
        {"each file alone", test_lone_files},
        {"the folder plan", test_plan},
        {"a malformed folder source", test_malformed_bundle},
        {"export of every valid case with values", test_export},
        {"health of every valid case with values", test_health},
        {"pairing with the model it will be loaded into", test_pairings},
        {"runs over tag folders", test_runs},
    };
    int rc = RUN_ALL(cases);
    json_free(manifest);
    return rc;
}
