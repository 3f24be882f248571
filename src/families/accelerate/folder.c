/* An Accelerate save_state folder by its names (docs/distributed.md, "Accelerate folders"): what each file and
 * subfolder is (Accelerate's checkpointing.py, accelerator.py save_state and utils/fsdp_utils.py name them), which
 * optimizer pairs with which model (optimizer i with model i), what reads each pair, and a project's
 * checkpoints/checkpoint_{k} folders in the order of k. Nothing is read but names. */
#include "families/accelerate/accelerate.h"
#include "core/numbered.h"

#include <stdio.h>
#include <stdlib.h>

enum {
    R_OTHER,
    R_MODEL,            /* model[_{i}].safetensors, pytorch_model[_{i}].bin */
    R_OPTIMIZER,        /* optimizer[_{i}].bin */
    R_SCHEDULER,        /* scheduler[_{i}].bin */
    R_SAMPLER,          /* sampler[_{i}].bin */
    R_DATALOADER,       /* dl_state_dict[_{i}].bin */
    R_SCALER,           /* scaler.pt */
    R_RANDOM_STATES,    /* random_states_{p}.pkl */
    R_CUSTOM,           /* custom_checkpoint_{i}.pkl */
    R_FSDP_MODEL,       /* pytorch_model_fsdp[_{i}].bin: FULL_STATE_DICT */
    R_FSDP_MODEL_RANK,  /* pytorch_model_fsdp[_{i}]_rank{r}.bin */
    R_OPTIMIZER_RANK,   /* optimizer_{i}_rank{r}.bin */
    R_DCP_MODEL,        /* pytorch_model_fsdp_{i}/: SHARDED_STATE_DICT */
    R_DCP_OPTIMIZER,    /* optimizer_{i}/ */
    R_DEEPSPEED_TAG,    /* pytorch_model[_{i}]/ */
    R_DEEPSPEED_LATEST, /* latest */
    R_COUNT
};

static const char *const role_names[R_COUNT] = {
    NULL,       "model",        "optimizer",        "scheduler",      "sampler",       "dataloaderState",
    "scaler",   "randomStates", "customCheckpoint", "fsdpModel",      "fsdpModelRank", "optimizerRank",
    "dcpModel", "dcpOptimizer", "deepspeedTag",     "deepspeedLatest"};

#define NO_NUMBER UINT64_MAX

typedef struct named {
    int role;
    uint64_t index, process, rank; /* NO_NUMBER when the name has none */
    bool safetensors;              /* a model in safetensors */
    bool folder;
} named;

/* "{stem}.{ext}" (index 0) or "{stem}_{i}.{ext}": *i set. */
static bool indexed_file(const char *name, const char *stem, const char *ext, uint64_t *i)
{
    size_t s = strlen(stem), e = strlen(ext), len = strlen(name);
    if (len == s + 1 + e && !strncmp(name, stem, s) && name[s] == '.' && !strcmp(name + s + 1, ext)) {
        *i = 0;
        return true;
    }
    char prefix[64], suffix[16];
    snprintf(prefix, sizeof prefix, "%s_", stem);
    snprintf(suffix, sizeof suffix, ".%s", ext);
    return ckpt_numbered_name(name, prefix, suffix, i);
}

/* "{stem}_rank{r}.bin" (index 0) or "{stem}_{i}_rank{r}.bin". */
static bool rank_file(const char *name, const char *stem, bool index_optional, uint64_t *i, uint64_t *r)
{
    size_t s = strlen(stem), len = strlen(name);
    if (len <= s + 1 || strncmp(name, stem, s) || name[s] != '_') return false;
    const char *rest = name + s + 1;
    if (index_optional && ckpt_numbered_name(rest, "rank", ".bin", r)) {
        *i = 0;
        return true;
    }
    const char *cut = strstr(rest, "_rank");
    if (!cut || (size_t)(cut - rest) >= 24) return false;
    char digits[32];
    memcpy(digits, rest, (size_t)(cut - rest));
    digits[cut - rest] = 0;
    return ckpt_numbered_name(digits, "", NULL, i) && ckpt_numbered_name(cut + 1, "rank", ".bin", r);
}

#define DCP_MODEL_STEM "pytorch_model_fsdp_"
#define DCP_OPTIMIZER_STEM "optimizer_"

bool ckpt_accelerate_dcp_folder(const char *name, uint64_t *i, bool *model)
{
    if (ckpt_numbered_name(name, DCP_MODEL_STEM, NULL, i)) return *model = true;
    if (ckpt_numbered_name(name, DCP_OPTIMIZER_STEM, NULL, i)) return !(*model = false);
    return false;
}

void ckpt_accelerate_dcp_name(char *buf, size_t n, uint64_t i, bool model)
{
    snprintf(buf, n, "%s%llu", model ? DCP_MODEL_STEM : DCP_OPTIMIZER_STEM, (unsigned long long)i);
}

/* What a name of the listing is; folders end in '/'. */
static named classify(const char *name)
{
    named n = {R_OTHER, NO_NUMBER, NO_NUMBER, NO_NUMBER, false, false};
    size_t len = strlen(name);
    if (len && name[len - 1] == '/') {
        char folder[256];
        if (len - 1 >= sizeof folder) return n;
        memcpy(folder, name, len - 1);
        folder[len - 1] = 0;
        n.folder = true;
        bool model;
        if (ckpt_accelerate_dcp_folder(folder, &n.index, &model)) n.role = model ? R_DCP_MODEL : R_DCP_OPTIMIZER;
        else if (!strcmp(folder, "pytorch_model")) n.role = R_DEEPSPEED_TAG, n.index = 0;
        else if (ckpt_numbered_name(folder, "pytorch_model_", NULL, &n.index)) n.role = R_DEEPSPEED_TAG;
        return n;
    }
    if (indexed_file(name, "model", "safetensors", &n.index)) n.role = R_MODEL, n.safetensors = true;
    else if (indexed_file(name, "pytorch_model", "bin", &n.index)) n.role = R_MODEL;
    else if (indexed_file(name, "optimizer", "bin", &n.index)) n.role = R_OPTIMIZER;
    else if (indexed_file(name, "scheduler", "bin", &n.index)) n.role = R_SCHEDULER;
    else if (indexed_file(name, "sampler", "bin", &n.index)) n.role = R_SAMPLER;
    else if (indexed_file(name, "dl_state_dict", "bin", &n.index)) n.role = R_DATALOADER;
    else if (!strcmp(name, "scaler.pt")) n.role = R_SCALER;
    else if (ckpt_numbered_name(name, "random_states_", ".pkl", &n.process)) n.role = R_RANDOM_STATES;
    else if (ckpt_numbered_name(name, "custom_checkpoint_", ".pkl", &n.index)) n.role = R_CUSTOM;
    else if (indexed_file(name, "pytorch_model_fsdp", "bin", &n.index)) n.role = R_FSDP_MODEL;
    else if (rank_file(name, "pytorch_model_fsdp", true, &n.index, &n.rank)) n.role = R_FSDP_MODEL_RANK;
    else if (rank_file(name, "optimizer", false, &n.index, &n.rank)) n.role = R_OPTIMIZER_RANK;
    else if (!strcmp(name, "latest")) n.role = R_DEEPSPEED_LATEST;
    return n;
}

/* Roles only Accelerate writes: a folder holding one of them is an Accelerate folder (a
 * Trainer's is optimizer.pt and rng_state.pth; DeepSpeed's own save_dir has no pytorch_model tag
 * unless Accelerate named it). */
static bool accelerate_only(int role)
{
    return role == R_OPTIMIZER || role == R_RANDOM_STATES || role == R_CUSTOM || role == R_FSDP_MODEL ||
           role == R_FSDP_MODEL_RANK || role == R_OPTIMIZER_RANK || role == R_DCP_MODEL || role == R_DCP_OPTIMIZER ||
           role == R_DEEPSPEED_TAG;
}

static void j_number_or_null(strbuf *sb, uint64_t v)
{
    if (v == NO_NUMBER) sb_lit(sb, "null");
    else j_u64(sb, v);
}

static void j_name_or_null(strbuf *sb, const char *s)
{
    if (s) j_string(sb, s);
    else sb_lit(sb, "null");
}

/* Pair i's files: the first of each role found (torch's model before safetensors': it keeps
 * module order and ties, 10.4). */
typedef struct pair_files {
    const char *model, *model_form;
    const char *optimizer, *optimizer_form;
    const char *rank_model, *rank_optimizer; /* one rank file of each, for the note */
} pair_files;

static void find_pair(const char *const *names, const named *c, size_t n, uint64_t i, pair_files *p)
{
    memset(p, 0, sizeof *p);
    bool full = false; /* FSDP FULL_STATE_DICT: the optimizer file is name-keyed (12.6) */
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < n; k++) {
            if (c[k].index != i) continue;
            int r = c[k].role;
            if (r == R_MODEL && !p->model && (pass == 0) == !c[k].safetensors)
                p->model = names[k], p->model_form = c[k].safetensors ? "safetensors" : "torch";
            if (pass) continue;
            if (r == R_FSDP_MODEL) p->model = names[k], p->model_form = "fsdpFull", full = true;
            if (r == R_DCP_MODEL && !p->model) p->model = names[k], p->model_form = "dcp";
            if (r == R_DEEPSPEED_TAG)
                p->model = p->optimizer = names[k], p->model_form = p->optimizer_form = "deepspeed";
            if (r == R_OPTIMIZER && !p->optimizer) p->optimizer = names[k], p->optimizer_form = "torch";
            if (r == R_DCP_OPTIMIZER && !p->optimizer) p->optimizer = names[k], p->optimizer_form = "dcp";
            if (r == R_FSDP_MODEL_RANK && !p->rank_model) p->rank_model = names[k];
            if (r == R_OPTIMIZER_RANK && !p->rank_optimizer) p->rank_optimizer = names[k];
        }
    if (full && p->optimizer_form && !strcmp(p->optimizer_form, "torch")) p->optimizer_form = "nameKeyed";
    if (!p->model && p->rank_model) p->model = p->rank_model, p->model_form = "rankFiles";
    if (!p->optimizer && p->rank_optimizer) p->optimizer = p->rank_optimizer, p->optimizer_form = "rankFiles";
}

static bool form_is(const char *form, const char *s) { return form && !strcmp(form, s); }

/* What reads pair i, and in words why not when nothing in this folder does. */
static void pair_json(strbuf *sb, uint64_t i, const pair_files *p)
{
    const char *reader = NULL;
    bool model_file =
        form_is(p->model_form, "torch") || form_is(p->model_form, "safetensors") || form_is(p->model_form, "fsdpFull");
    bool optimizer_file = form_is(p->optimizer_form, "torch") || form_is(p->optimizer_form, "nameKeyed");
    if (model_file && optimizer_file) reader = "pytorch";
    else if (form_is(p->model_form, "deepspeed")) reader = "deepspeed";
    else if (form_is(p->model_form, "dcp") || form_is(p->optimizer_form, "dcp")) reader = "dcp";
    sb_lit(sb, "{\"index\":");
    j_u64(sb, i);
    sb_lit(sb, ",\"model\":");
    j_name_or_null(sb, p->model);
    sb_lit(sb, ",\"modelForm\":");
    j_name_or_null(sb, p->model_form);
    sb_lit(sb, ",\"optimizer\":");
    j_name_or_null(sb, p->optimizer);
    sb_lit(sb, ",\"optimizerForm\":");
    j_name_or_null(sb, p->optimizer_form);
    sb_lit(sb, ",\"reader\":");
    j_name_or_null(sb, reader);
    sb_lit(sb, ",\"note\":");
    strbuf note = {0};
    if (form_is(p->optimizer_form, "rankFiles") || form_is(p->model_form, "rankFiles"))
        sb_printf(&note,
                  "%s is one rank's FSDP file (LOCAL_STATE_DICT, or SHARDED_STATE_DICT saved without DCP): it holds "
                  "that rank's flat shards, listed without per-parameter values",
                  form_is(p->optimizer_form, "rankFiles") ? p->optimizer : p->model);
    else if (reader && !strcmp(reader, "dcp") && p->optimizer && p->model)
        sb_printf(&note,
                  "%s and %s are DCP folders (FSDP SHARDED_STATE_DICT), read together as one checkpoint: its optimizer "
                  "part and its model part",
                  p->optimizer, p->model);
    else if (reader && !strcmp(reader, "dcp"))
        sb_printf(&note, "%s is a DCP folder (FSDP SHARDED_STATE_DICT) with no %s%llu/ beside it: %s",
                  p->optimizer ? p->optimizer : p->model, p->optimizer ? DCP_MODEL_STEM : DCP_OPTIMIZER_STEM,
                  (unsigned long long)i,
                  p->optimizer ? "an optimizer part without a model part" : "a model part without an optimizer part");
    else if (!p->model && p->optimizer)
        sb_printf(&note, "%s has no model %llu beside it: its slots cannot be placed (format.md 10.4)", p->optimizer,
                  (unsigned long long)i);
    else if (p->model && !p->optimizer)
        sb_printf(&note, "%s has no optimizer %llu beside it", p->model, (unsigned long long)i);
    if (note.len) j_string(sb, note.data);
    else sb_lit(sb, "null");
    sb_free(&note);
    sb_putc(sb, '}');
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

char *ckpt_accelerate_folder_json(const char *const *names, size_t n)
{
    named *c = malloc((n ? n : 1) * sizeof *c);
    uint64_t *indices = malloc((n ? n : 1) * sizeof *indices);
    if (!c || !indices) {
        free(c);
        free(indices);
        return NULL;
    }
    bool accelerate = false, fsdp = false, deepspeed = false;
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        c[k] = names[k] ? classify(names[k]) : (named){R_OTHER, NO_NUMBER, NO_NUMBER, NO_NUMBER, false, false};
        accelerate |= accelerate_only(c[k].role);
        fsdp |= c[k].role >= R_FSDP_MODEL && c[k].role <= R_DCP_OPTIMIZER;
        deepspeed |= c[k].role == R_DEEPSPEED_TAG;
        int r = c[k].role;
        if (r == R_MODEL || r == R_OPTIMIZER || r == R_FSDP_MODEL || r == R_FSDP_MODEL_RANK || r == R_OPTIMIZER_RANK ||
            r == R_DCP_MODEL || r == R_DCP_OPTIMIZER || r == R_DEEPSPEED_TAG)
            indices[m++] = c[k].index;
    }
    qsort(indices, m, sizeof *indices, cmp_u64);
    strbuf sb = {0};
    sb_lit(&sb, "{\"accelerate\":");
    sb_puts(&sb, accelerate ? "true" : "false");
    sb_lit(&sb, ",\"distributed\":");
    sb_puts(&sb, deepspeed ? "\"deepspeed\"" : fsdp ? "\"fsdp\"" : "null");
    sb_lit(&sb, ",\"files\":[");
    for (size_t k = 0, out = 0; k < n; k++) {
        if (!names[k]) continue;
        sb_puts(&sb, out++ ? ",{\"name\":" : "{\"name\":");
        j_string(&sb, names[k]);
        sb_lit(&sb, ",\"role\":");
        j_name_or_null(&sb, role_names[c[k].role]);
        sb_lit(&sb, ",\"index\":");
        j_number_or_null(&sb, c[k].index);
        sb_lit(&sb, ",\"process\":");
        j_number_or_null(&sb, c[k].process);
        sb_lit(&sb, ",\"rank\":");
        j_number_or_null(&sb, c[k].rank);
        sb_putc(&sb, '}');
    }
    sb_lit(&sb, "],\"pairs\":[");
    for (size_t j = 0; j < m; j++) {
        if (j && indices[j] == indices[j - 1]) continue;
        pair_files p;
        find_pair(names, c, n, indices[j], &p);
        if (j) sb_putc(&sb, ',');
        pair_json(&sb, indices[j], &p);
    }
    sb_lit(&sb, "]}");
    free(c);
    free(indices);
    return sb_take(&sb);
}

char *ckpt_accelerate_checkpoints_json(const char *const *names, size_t n)
{
    return ckpt_numbered_names_json(names, n, "checkpoint_", "iteration");
}
