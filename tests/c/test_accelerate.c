/* Accelerate save_state folders (src/families/accelerate/): folders laid out as Accelerate's
 * source writes them, made at test time by tests/c/accelerate_seeds.py. Each folder's names read
 * as roles and pairs (optimizer i with model i; what reads each pair, and the words for what
 * this folder's names cannot read), a project's checkpoint_{k} folders by k, and each
 * random_states_{p}.pkl's step and keys equal to what torch.load reads back (expected.json);
 * files that are not Accelerate's random states with their exact texts. Usage: test_accelerate DIR */
#include "core/core.h"
#include "ds_folder.h"
#include "minijson.h"
#include "testutil.h"

#include <dirent.h>

static const char *dir;

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The folder's entries, sorted, subfolders ending in '/' (what the JS package lists). */
static char *listing_json(const char *folder)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, folder);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    if (!d) return NULL;
    char *names[64];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 64;) {
        if (e->d_name[0] == '.') continue;
        char sub[1400];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        DIR *is_dir = opendir(sub);
        size_t len = strlen(e->d_name);
        names[n] = malloc(len + 2);
        memcpy(names[n], e->d_name, len + 1);
        if (is_dir) {
            closedir(is_dir);
            strcat(names[n], "/");
        }
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    char *json = ckpt_accelerate_folder_json((const char *const *)names, n);
    for (size_t k = 0; k < n; k++) free(names[k]);
    return json;
}

/* The text between "key": and the end of the JSON (pairs come last, then "]}"). */
static void check_member(const char *json, const char *key, const char *want)
{
    const char *at = json ? strstr(json, key) : NULL;
    CHECK(at != NULL);
    if (at) CHECK_STR(at, want);
}

static void check_has(const char *json, const char *text)
{
    bool found = json && strstr(json, text);
    CHECK(found);
    if (!found) fprintf(stderr, "  missing %s\n  in %s\n", text, json ? json : "(null)");
}

static void test_plain(void)
{
    char *j = listing_json("plain");
    check_has(j, "{\"accelerate\":true,\"distributed\":null,\"files\":[");
    check_has(j, "{\"name\":\"custom_checkpoint_0.pkl\",\"role\":\"customCheckpoint\",\"index\":0,\"process\":null,"
                 "\"rank\":null}");
    check_has(j, "{\"name\":\"model.safetensors\",\"role\":\"model\",\"index\":0,\"process\":null,\"rank\":null}");
    check_has(j, "{\"name\":\"optimizer.bin\",\"role\":\"optimizer\",\"index\":0,\"process\":null,\"rank\":null}");
    check_has(
        j, "{\"name\":\"random_states_1.pkl\",\"role\":\"randomStates\",\"index\":null,\"process\":1,\"rank\":null}");
    check_has(j, "{\"name\":\"scaler.pt\",\"role\":\"scaler\",\"index\":null,\"process\":null,\"rank\":null}");
    check_has(j, "{\"name\":\"scheduler.bin\",\"role\":\"scheduler\",\"index\":0,\"process\":null,\"rank\":null}");
    check_member(j, "\"pairs\"",
                 "\"pairs\":[{\"index\":0,\"model\":\"model.safetensors\",\"modelForm\":\"safetensors\","
                 "\"optimizer\":\"optimizer.bin\",\"optimizerForm\":\"torch\",\"reader\":\"pytorch\",\"note\":null}]}");
    free(j);
}

static void test_two(void)
{
    char *j = listing_json("two");
    check_has(j, "{\"name\":\"pytorch_model_1.bin\",\"role\":\"model\",\"index\":1,\"process\":null,\"rank\":null}");
    check_member(
        j, "\"pairs\"",
        "\"pairs\":[{\"index\":0,\"model\":\"pytorch_model.bin\",\"modelForm\":\"torch\","
        "\"optimizer\":\"optimizer.bin\",\"optimizerForm\":\"torch\",\"reader\":\"pytorch\",\"note\":null},"
        "{\"index\":1,\"model\":\"pytorch_model_1.bin\",\"modelForm\":\"torch\","
        "\"optimizer\":\"optimizer_1.bin\",\"optimizerForm\":\"torch\",\"reader\":\"pytorch\",\"note\":null}]}");
    free(j);
}

static void test_fsdp(void)
{
    char *j = listing_json("fsdp-full");
    check_has(j, "\"distributed\":\"fsdp\"");
    check_has(
        j, "{\"name\":\"pytorch_model_fsdp.bin\",\"role\":\"fsdpModel\",\"index\":0,\"process\":null,\"rank\":null}");
    check_member(
        j, "\"pairs\"",
        "\"pairs\":[{\"index\":0,\"model\":\"pytorch_model_fsdp.bin\",\"modelForm\":\"fsdpFull\","
        "\"optimizer\":\"optimizer.bin\",\"optimizerForm\":\"nameKeyed\",\"reader\":\"pytorch\",\"note\":null}]}");
    free(j);

    j = listing_json("fsdp-sharded");
    check_has(j, "{\"name\":\"optimizer_0/\",\"role\":\"dcpOptimizer\",\"index\":0,\"process\":null,\"rank\":null}");
    check_has(j,
              "{\"name\":\"pytorch_model_fsdp_0/\",\"role\":\"dcpModel\",\"index\":0,\"process\":null,\"rank\":null}");
    check_member(j, "\"pairs\"",
                 "\"pairs\":[{\"index\":0,\"model\":\"pytorch_model_fsdp_0/\",\"modelForm\":\"dcp\","
                 "\"optimizer\":\"optimizer_0/\",\"optimizerForm\":\"dcp\",\"reader\":\"dcp\",\"note\":"
                 "\"optimizer_0/ and pytorch_model_fsdp_0/ are DCP folders (FSDP SHARDED_STATE_DICT), read together "
                 "as one checkpoint: its optimizer part and its model part\"}]}");
    free(j);

    j = listing_json("fsdp-local");
    check_has(j, "{\"name\":\"pytorch_model_fsdp_rank1.bin\",\"role\":\"fsdpModelRank\",\"index\":0,\"process\":null,"
                 "\"rank\":1}");
    check_member(
        j, "\"pairs\"",
        "\"pairs\":[{\"index\":0,\"model\":\"pytorch_model_fsdp_rank0.bin\",\"modelForm\":\"rankFiles\","
        "\"optimizer\":\"optimizer_0/\",\"optimizerForm\":\"dcp\",\"reader\":\"dcp\",\"note\":"
        "\"pytorch_model_fsdp_rank0.bin is one rank's FSDP file (LOCAL_STATE_DICT, or SHARDED_STATE_DICT saved "
        "without DCP): it holds that rank's flat shards, listed without per-parameter values\"}]}");
    free(j);

    /* one of the two DCP folders without the other */
    const char *opt_only[] = {"optimizer_2/", "random_states_0.pkl"};
    j = ckpt_accelerate_folder_json(opt_only, 2);
    check_has(j, "\"reader\":\"dcp\",\"note\":\"optimizer_2/ is a DCP folder (FSDP SHARDED_STATE_DICT) with no "
                 "pytorch_model_fsdp_2/ beside it: an optimizer part without a model part\"}]}");
    free(j);
    const char *model_only[] = {"pytorch_model_fsdp_0/", "random_states_0.pkl"};
    j = ckpt_accelerate_folder_json(model_only, 2);
    check_has(j, "\"reader\":\"dcp\",\"note\":\"pytorch_model_fsdp_0/ is a DCP folder (FSDP SHARDED_STATE_DICT) "
                 "with no optimizer_0/ beside it: a model part without an optimizer part\"}]}");
    free(j);

    /* names only seen in Accelerate's source: an i > 0 rank file and an optimizer rank file */
    const char *names[] = {"pytorch_model_fsdp_1_rank3.bin", "optimizer_1_rank3.bin"};
    j = ckpt_accelerate_folder_json(names, 2);
    check_has(j, "{\"name\":\"pytorch_model_fsdp_1_rank3.bin\",\"role\":\"fsdpModelRank\",\"index\":1,\"process\":null,"
                 "\"rank\":3}");
    check_has(
        j, "{\"name\":\"optimizer_1_rank3.bin\",\"role\":\"optimizerRank\",\"index\":1,\"process\":null,\"rank\":3}");
    check_has(
        j, "\"optimizerForm\":\"rankFiles\",\"reader\":null,\"note\":\"optimizer_1_rank3.bin is one rank's FSDP file");
    free(j);
}

static void test_deepspeed(void)
{
    char *j = listing_json("deepspeed");
    check_has(j, "\"distributed\":\"deepspeed\"");
    check_has(j, "{\"name\":\"latest\",\"role\":\"deepspeedLatest\",\"index\":null,\"process\":null,\"rank\":null}");
    check_member(
        j, "\"pairs\"",
        "\"pairs\":[{\"index\":0,\"model\":\"pytorch_model/\",\"modelForm\":\"deepspeed\","
        "\"optimizer\":\"pytorch_model/\",\"optimizerForm\":\"deepspeed\",\"reader\":\"deepspeed\",\"note\":null}]}");
    free(j);
}

static void test_not_accelerate(void)
{
    /* a Trainer's checkpoint-N/ folder: optimizer.pt, rng_state.pth; its model alone says nothing */
    const char *trainer[] = {"optimizer.pt", "model.safetensors", "trainer_state.json", "rng_state.pth"};
    char *j = ckpt_accelerate_folder_json(trainer, 4);
    check_has(j, "{\"accelerate\":false,");
    check_has(j, "{\"name\":\"optimizer.pt\",\"role\":null,\"index\":null,\"process\":null,\"rank\":null}");
    check_member(j, "\"pairs\"",
                 "\"pairs\":[{\"index\":0,\"model\":\"model.safetensors\",\"modelForm\":\"safetensors\","
                 "\"optimizer\":null,\"optimizerForm\":null,\"reader\":null,\"note\":\"model.safetensors has no "
                 "optimizer 0 beside it\"}]}");
    free(j);
    /* an optimizer alone; names that only look numbered */
    const char *alone[] = {"optimizer_2.bin", "model_x.safetensors", "optimizer_.bin", "random_states_.pkl",
                           "checkpoint_3"};
    j = ckpt_accelerate_folder_json(alone, 5);
    check_has(j, "{\"name\":\"model_x.safetensors\",\"role\":null,");
    check_has(j, "{\"name\":\"optimizer_.bin\",\"role\":null,");
    check_has(j, "{\"name\":\"random_states_.pkl\",\"role\":null,");
    check_member(j, "\"pairs\"",
                 "\"pairs\":[{\"index\":2,\"model\":null,\"modelForm\":null,\"optimizer\":\"optimizer_2.bin\","
                 "\"optimizerForm\":\"torch\",\"reader\":null,\"note\":\"optimizer_2.bin has no model 2 beside it: its "
                 "slots cannot be placed (format.md 10.4)\"}]}");
    free(j);
}

static void test_checkpoints(void)
{
    const char *names[] = {"checkpoint_10", "checkpoint_2", "checkpoint-3", "checkpoint_0",
                           "checkpoint_1",  "logs",         "checkpoint_x", "checkpoint_99999999999999999999"};
    char *j = ckpt_accelerate_checkpoints_json(names, 8);
    CHECK_STR(j, "[{\"name\":\"checkpoint_0\",\"iteration\":0},{\"name\":\"checkpoint_1\",\"iteration\":1},"
                 "{\"name\":\"checkpoint_2\",\"iteration\":2},{\"name\":\"checkpoint_10\",\"iteration\":10}]");
    free(j);
    /* the Trainer's checkpoint-{N} ordering is the same module's */
    j = ckpt_trainer_checkpoints_json(names, 8);
    CHECK_STR(j, "[{\"name\":\"checkpoint-3\",\"step\":3}]");
    free(j);
}

static char *states_json(const char *folder, const char *name, ckpt_error *err, int *rc)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", folder, name);
    size_t len;
    uint8_t *d = read_file_in(dir, path, &len);
    CHECK(d != NULL);
    if (!d) return NULL;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, d, len);
    ckpt_accelerate_random_states s;
    ckpt_error_clear(err);
    *rc = ckpt_accelerate_random_states_read(&src, name, &s, err);
    char *json = *rc ? NULL : ckpt_accelerate_random_states_json(&s);
    ckpt_accelerate_random_states_free(&s);
    free(d);
    return json;
}

static void test_random_states(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    char *text = json_read_file(path);
    jvalue *want = text ? json_parse(text) : NULL;
    CHECK(want && want->type == JOBJ);
    size_t files = 0;
    for (size_t f = 0; want && f < want->len; f++) {
        const jvalue *folder = want->items[f];
        for (size_t k = 0; k < folder->len; k++) {
            t_current = folder->keys[k];
            const jvalue *w = folder->items[k], *keys = json_get(w, "keys");
            strbuf sb = {0};
            sb_printf(&sb, "{\"step\":%s,\"keys\":[", json_get(w, "step")->text);
            for (size_t j = 0; j < keys->len; j++) sb_printf(&sb, "%s\"%s\"", j ? "," : "", keys->items[j]->text);
            sb_printf(&sb, "],\"keyCount\":%zu}", keys->len);
            ckpt_error err = {0};
            int rc;
            char *got = states_json(want->keys[f], folder->keys[k], &err, &rc);
            CHECK(rc == 0);
            if (rc) fprintf(stderr, "  %s\n", err.message);
            CHECK_STR(got, sb.data);
            free(got);
            sb_free(&sb);
            ckpt_error_clear(&err);
            files++;
        }
    }
    CHECK(files == 15);
    json_free(want);
    free(text);

    t_current = "old";
    ckpt_error err = {0};
    int rc;
    char *got = states_json("old", "random_states_0.pkl", &err, &rc);
    CHECK_STR(got,
              "{\"step\":null,\"keys\":[\"random_state\",\"numpy_random_seed\",\"torch_manual_seed\"],\"keyCount\":3}");
    free(got);

    t_current = "bad";
    got = states_json("bad", "random_states_0.pkl", &err, &rc);
    CHECK(got == NULL && rc == CKPT_E_TRAINER_FILE && err.code == CKPT_E_TRAINER_FILE);
    CHECK_STR(err.message, "random_states_0.pkl: the object at byte 2 of random_states_0/data.pkl is not a dict: not "
                           "Accelerate's random states");
    got = states_json("bad", "random_states_1.pkl", &err, &rc);
    CHECK(got == NULL && rc == CKPT_E_TRAINER_FILE);
    CHECK_STR(err.message,
              "random_states_1.pkl: step at byte 16 of random_states_1/data.pkl is not a count (an int of at least 0)");
    ckpt_error_clear(&err);
}

/* FSDP SHARDED_STATE_DICT (format.md 12.7): the folder is read as one checkpoint, laid out by the
 * DCP folder question (the JS package's route): the optimizer part from optimizer_0/, the model
 * part from pytorch_model_fsdp_0/, the checks across both, the schema from the two */
static void test_fsdp_sharded(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/fsdp-sharded", dir);
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(path, "fsdp-sharded", &len, NULL);
    CHECK(b != NULL);
    if (!b) return;
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_report *rep = ckpt_inspect(&src, NULL);
    char *text = ckpt_report_json(rep);
    jvalue *r = text ? json_parse(text) : NULL;
    ckpt_report_free(rep);
    free(text);
    free(b);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_STR(json_get(r, "family")->text, "DCP");
    CHECK(json_get(r, "ok")->b == true);
    CHECK(json_get(r, "warnings")->len == 0);
    const jvalue *d = json_get(r, "dcp");
    CHECK_STR(json_get(d, "root")->text, "fsdp-sharded");
    CHECK_STR(json_get(d, "note")->text, "DCP: one checkpoint of two DCP folders: the model part from "
                                         "pytorch_model_fsdp_0, the optimizer part from optimizer_0");
    CHECK_STR(json_get(d, "form")->text, "N");
    /* the other files of the folder are not the checkpoint's: not laid out, no strays */
    CHECK(json_get(d, "strays")->len == 0);
    static const char *const names[] = {"emb.weight", "l1.weight", "l1.bias",       "ln.weight",   "ln.bias",
                                        "l2.weight",  "l2.bias",   "frozen.weight", "frozen.bias", "head.weight"};
    static const char *const roles[] = {"owner", "owner", "owner",  "owner",  "owner",
                                        "owner", "owner", "frozen", "frozen", "tied"};
    const jvalue *es = json_get(d, "entries");
    CHECK(es->len == 10);
    for (size_t k = 0; k < es->len && k < 10; k++) {
        CHECK_STR(json_get(es->items[k], "name")->text, names[k]);
        CHECK_STR(json_get(es->items[k], "role")->text, roles[k]);
        CHECK(json_get(es->items[k], "trainable")->b == (k < 7)); /* has state */
    }
    /* the schema: 10 slots, an entry per slot with state */
    CHECK(json_u64(json_get(r, "slotCount")) == 10);
    CHECK(json_u64(json_get(r, "entryCount")) == 7);
    json_free(r);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_accelerate DIR\n");
        return 2;
    }
    dir = argv[1];
    static const test_case cases[] = {
        {"plain", test_plain},
        {"two", test_two},
        {"fsdp", test_fsdp},
        {"fsdp sharded: one checkpoint", test_fsdp_sharded},
        {"deepspeed", test_deepspeed},
        {"not accelerate", test_not_accelerate},
        {"checkpoints", test_checkpoints},
        {"random states", test_random_states},
    };
    return RUN_ALL(cases);
}
