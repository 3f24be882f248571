/* A Hugging Face Trainer's folders by their names (format.md 10.5): which file of a checkpoint-N/
 * folder is which (a table), the shards a sharded model's index names, and an output folder's
 * checkpoint-{N} folders in the order of N. */
#include "core/core.h"
#include "base/json_read.h"
#include "core/numbered.h"

#include <stdlib.h>

#define INDEX_DEPTH 64
#define CHECKPOINT_PREFIX "checkpoint-"

enum { R_OPTIMIZER, R_MODEL, R_MODEL_INDEX, R_TRAINER_STATE, R_TRAINING_ARGS, R_SCHEDULER, R_CONFIG, R_COUNT };

static const char *const role_keys[R_COUNT] = {"optimizer",    "model",     "modelIndex", "trainerState",
                                               "trainingArgs", "scheduler", "config"};

/* The names the Trainer writes; of a role's names the first present is taken. pytorch_model.bin
 * comes before model.safetensors: it keeps module order and ties (10.4). */
static const struct {
    const char *name;
    int role;
} members[] = {
    {"optimizer.pt", R_OPTIMIZER},
    {"pytorch_model.bin", R_MODEL},
    {"model.safetensors", R_MODEL},
    {"pytorch_model.bin.index.json", R_MODEL_INDEX},
    {"model.safetensors.index.json", R_MODEL_INDEX},
    {"trainer_state.json", R_TRAINER_STATE},
    {"training_args.bin", R_TRAINING_ARGS},
    {"scheduler.pt", R_SCHEDULER},
    {"config.json", R_CONFIG},
};

static bool has_name(const char *const *names, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (names[k] && !strcmp(names[k], name)) return true;
    return false;
}

char *ckpt_trainer_folder_json(const char *const *names, size_t n)
{
    const char *found[R_COUNT] = {0};
    for (size_t m = 0; m < sizeof members / sizeof members[0]; m++)
        if (!found[members[m].role] && has_name(names, n, members[m].name)) found[members[m].role] = members[m].name;
    if (found[R_MODEL]) found[R_MODEL_INDEX] = NULL; /* a whole model file is the model */
    strbuf sb = {0};
    for (int r = 0; r < R_COUNT; r++) {
        sb_printf(&sb, "%s\"%s\":", r ? "," : "{", role_keys[r]);
        if (found[r]) j_string(&sb, found[r]);
        else sb_lit(&sb, "null");
    }
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

/* ---- a sharded model's index ---- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A shard is a file beside the index: a name without a folder (no "/", "\", ".", ".."). */
static bool plain_file_name(const char *s, size_t len)
{
    return len && strlen(s) == len && !strchr(s, '/') && !strchr(s, '\\') && strcmp(s, ".") && strcmp(s, "..");
}

char *ckpt_model_index_shards_json(const void *text, size_t len, const char *name, ckpt_error *err)
{
    if (len > CKPT_TRAINER_STATE_MAX) {
        ckpt_fail(err, name, CKPT_E_TRAINER_FILE, CKPT_NONE, 0, "%zu bytes; at most %llu are read", len,
                  (unsigned long long)CKPT_TRAINER_STATE_MAX);
        return NULL;
    }
    size_t values = ckpt_json_nodes_bound(text, len);
    if (values > CKPT_TRAINER_JSON_VALUES) {
        ckpt_fail(err, name, CKPT_E_TRAINER_FILE, CKPT_NONE, 0, "%zu values; at most %llu are read", values,
                  (unsigned long long)CKPT_TRAINER_JSON_VALUES);
        return NULL;
    }
    ckpt_jdoc doc;
    size_t at = 0;
    const char *why = NULL;
    int jr = ckpt_json_parse(text, len, INDEX_DEPTH, &doc, &at, &why);
    const ckpt_jv *map = jr || doc.v[0].kind != CKPT_JV_OBJECT ? NULL : ckpt_jv_get(&doc, &doc.v[0], "weight_map");
    const char **shards = NULL;
    size_t n = 0;
    int rc = 0;
    if (jr == -2) rc = ckpt_fail_oom(err);
    else if (jr) rc = ckpt_fail(err, name, CKPT_E_TRAINER_FILE, at, 1, "not JSON at byte %zu: %s", at, why);
    else if (!map || map->kind != CKPT_JV_OBJECT)
        rc = ckpt_fail(err, name, CKPT_E_TRAINER_FILE, CKPT_NONE, 0,
                       "no weight_map object: not a sharded model's index");
    else if (!(shards = malloc((map->len ? map->len : 1) * sizeof *shards))) rc = ckpt_fail_oom(err);
    for (const ckpt_jv *k = map && shards ? ckpt_jv_first(&doc, map) : NULL; k && !rc;
         k = ckpt_jv_next(&doc, ckpt_jv_next(&doc, k))) {
        const ckpt_jv *v = ckpt_jv_next(&doc, k);
        if (v->kind != CKPT_JV_STRING || !plain_file_name(ckpt_jv_str(&doc, v), v->len)) {
            strbuf tn = {0};
            j_string(&tn, ckpt_jv_str(&doc, k));
            rc = ckpt_fail(err, name, CKPT_E_TRAINER_FILE, v->at, 1,
                           "weight_map's %s at byte %zu is not the name of a file beside the index",
                           tn.data ? tn.data : "\"\"", v->at);
            sb_free(&tn);
        } else shards[n++] = ckpt_jv_str(&doc, v);
    }
    strbuf sb = {0};
    if (!rc) {
        qsort(shards, n, sizeof *shards, cmp_str);
        sb_putc(&sb, '[');
        for (size_t j = 0, out = 0; j < n; j++) {
            if (j && !strcmp(shards[j], shards[j - 1])) continue;
            if (out++) sb_putc(&sb, ',');
            j_string(&sb, shards[j]);
        }
        sb_putc(&sb, ']');
        if (sb.failed) rc = ckpt_fail_oom(err);
    }
    free(shards);
    ckpt_jdoc_free(&doc);
    if (rc) {
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

/* ---- an output folder's checkpoints ---- */

char *ckpt_trainer_checkpoints_json(const char *const *names, size_t n)
{
    return ckpt_numbered_names_json(names, n, CHECKPOINT_PREFIX, "step");
}
