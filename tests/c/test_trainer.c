/* A Hugging Face Trainer's files (src/trainer.c, src/trainer_folder.c): training_args.bin files
 * made at test time by tests/c/trainer_seeds.py (transformers' classes stood in for, pickled as
 * transformers pickles them) read as data, equal to what pickle.load reads back in FILE.expected;
 * refused ones give their exact texts and offsets (FILE.error); trainer_state.json's learning
 * rates by step, exact to the bit; a folder's names, a sharded model's index, an output folder's
 * checkpoints in the order of N; hostile texts with their exact errors. Usage: test_trainer DIR */
#include "core/core.h"
#include "testutil.h"

#include <math.h>

static const char *dir;

static ckpt_source source_of(ckpt_memory *mem, const void *d, size_t len)
{
    ckpt_source src;
    ckpt_source_memory(&src, mem, d, len);
    return src;
}

static uint64_t bits(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
}

/* "-" or a float.hex text, against a field (has: present) */
static void check_number(const char *want, bool has, double x, const char *field)
{
    const char *saved = t_current;
    t_current = field;
    if (!strcmp(want, "-")) CHECK(!has);
    else {
        CHECK(has);
        CHECK(bits(strtod(want, NULL)) == bits(x));
    }
    t_current = saved;
}

static void compare_args(const char *name)
{
    t_current = name;
    size_t len, wl;
    uint8_t *d = read_file_in(dir, name, &len);
    char want_name[256];
    snprintf(want_name, sizeof want_name, "%s.expected", name);
    char *want = (char *)read_file_in(dir, want_name, &wl);
    CHECK(d && want);
    if (!d || !want) return;
    ckpt_memory mem;
    ckpt_source src = source_of(&mem, d, len);
    ckpt_training_args a;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_training_args_read(&src, name, &a, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  %s: %s\n", name, err.message);
    else {
        char key[64], value[256];
        const double x[5] = {a.learning_rate, a.weight_decay, a.adam_beta1, a.adam_beta2, a.adam_epsilon};
        static const char *const fields[5] = {"learning_rate", "weight_decay", "adam_beta1", "adam_beta2",
                                              "adam_epsilon"};
        int lines = 0;
        for (char *line = strtok(want, "\n"); line; line = strtok(NULL, "\n"), lines++) {
            CHECK(sscanf(line, "%63s %255s", key, value) == 2);
            if (!strcmp(key, "class")) CHECK_STR(a.class_name ? a.class_name : "-", value);
            else if (!strcmp(key, "optim")) CHECK_STR(a.optim ? a.optim : "-", value);
            else if (!strcmp(key, "kind")) CHECK_STR(a.kind == CKPT_TRAINING_KIND_ADAMW ? "adamw" : "unknown", value);
            else
                for (int f = 0; f < 5; f++)
                    if (!strcmp(key, fields[f])) check_number(value, a.has & (1u << f), x[f], fields[f]);
        }
        CHECK(lines == 8);
        ckpt_training_args_free(&a);
    }
    ckpt_error_clear(&err);
    free(want);
    free(d);
}

static void test_args(void)
{
    compare_args("adamw.bin");
    compare_args("adamw-legacy.bin");
    compare_args("adafactor.bin");
    compare_args("paged.bin");
    compare_args("by-value.bin");
    compare_args("by-value-legacy.bin");
    compare_args("str-optim.bin");
    compare_args("dict.bin");
}

static void test_args_json(void)
{
    size_t len;
    uint8_t *d = read_file_in(dir, "adamw.bin", &len);
    CHECK(d != NULL);
    if (!d) return;
    ckpt_memory mem;
    ckpt_source src = source_of(&mem, d, len);
    ckpt_training_args a;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_training_args_read(&src, "adamw.bin", &a, &err) == 0);
    char *js = ckpt_training_args_json(&a);
    CHECK_STR(js, "{\"class\":\"transformers.training_args.TrainingArguments\",\"optim\":\"adamw_torch\",\"kind\":"
                  "\"adamw\",\"learningRate\":0.0003,\"weightDecay\":0.01,\"adamBeta1\":0.9,\"adamBeta2\":0.95,"
                  "\"adamEpsilon\":1e-06}");
    free(js);
    ckpt_training_args_free(&a);
    ckpt_error_clear(&err);
    free(d);
    /* an empty struct's JSON: every field null */
    ckpt_training_args none = {0};
    js = ckpt_training_args_json(&none);
    CHECK_STR(js, "{\"class\":null,\"optim\":null,\"kind\":null,\"learningRate\":null,\"weightDecay\":null,"
                  "\"adamBeta1\":null,\"adamBeta2\":null,\"adamEpsilon\":null}");
    free(js);
}

static void expect_args_error(const char *name)
{
    t_current = name;
    size_t len, wl;
    uint8_t *d = read_file_in(dir, name, &len);
    char want_name[256];
    snprintf(want_name, sizeof want_name, "%s.error", name);
    char *want = (char *)read_file_in(dir, want_name, &wl);
    CHECK(d && want);
    if (!d || !want) return;
    char *nl = strchr(want, '\n');
    CHECK(nl != NULL);
    if (nl) {
        *nl = 0;
        ckpt_memory mem;
        ckpt_source src = source_of(&mem, d, len);
        ckpt_training_args a;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        CHECK(ckpt_training_args_read(&src, name, &a, &err) == CKPT_E_TRAINER_FILE);
        CHECK_STR(err.message, want);
        CHECK(err.offset == strtoull(nl + 1, NULL, 10));
        CHECK(err.offset < len && err.length == 1);
        CHECK(a.optim == NULL && a.class_name == NULL);
        ckpt_error_clear(&err);
    }
    free(want);
    free(d);
}

static void test_args_refused(void)
{
    expect_args_error("bad-lr.bin");
    expect_args_error("bad-optim.bin");
    expect_args_error("list.bin");
    /* the torch.save reader's own refusal comes through unchanged */
    static const char junk[] = "{\"optim\": \"adamw_torch\"}";
    ckpt_memory mem;
    ckpt_source src = source_of(&mem, junk, sizeof junk - 1);
    ckpt_training_args a;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_training_args_read(&src, "training_args.bin", &a, &err) == CKPT_E_TORCH_NOT_CHECKPOINT);
    CHECK_STR(err.message, "PyTorch: neither a zip nor a pickle: not a torch.save file");
    ckpt_error_clear(&err);
}

/* Every prefix of a real file: an error or a result, never a crash or a leak (ASan). */
static void test_args_truncated(void)
{
    static const char *const names[] = {"adamw.bin", "adamw-legacy.bin"};
    for (int f = 0; f < 2; f++) {
        size_t len;
        uint8_t *d = read_file_in(dir, names[f], &len);
        CHECK(d != NULL);
        if (!d) continue;
        int refused = 0;
        for (size_t n = 0; n < len; n += n < 2048 ? 1 : 97) {
            uint8_t *cut = malloc(n ? n : 1);
            memcpy(cut, d, n);
            ckpt_memory mem;
            ckpt_source src = source_of(&mem, cut, n);
            ckpt_training_args a;
            ckpt_error err = {0};
            ckpt_error_clear(&err);
            int rc = ckpt_training_args_read(&src, names[f], &a, &err);
            if (rc) {
                refused++;
                CHECK(err.message != NULL && a.optim == NULL);
            } else ckpt_training_args_free(&a);
            ckpt_error_clear(&err);
            free(cut);
        }
        CHECK(refused > 100);
        free(d);
    }
}

/* ---- trainer_state.json ---- */

static int read_state(const char *text, size_t len, ckpt_trainer_state *s, ckpt_error *err)
{
    ckpt_memory mem;
    ckpt_source src = source_of(&mem, text, len);
    ckpt_error_clear(err);
    return ckpt_trainer_state_read(&src, s, err);
}

static void compare_state(const char *name)
{
    t_current = name;
    size_t len, wl;
    char *text = (char *)read_file_in(dir, name, &len);
    char want_name[256];
    snprintf(want_name, sizeof want_name, "%s.expected", name);
    char *want = (char *)read_file_in(dir, want_name, &wl);
    CHECK(text && want);
    if (!text || !want) return;
    ckpt_trainer_state s;
    ckpt_error err = {0};
    int rc = read_state(text, len, &s, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  %s: %s\n", name, err.message);
    else {
        size_t k = 0;
        for (char *line = strtok(want, "\n"); line; line = strtok(NULL, "\n")) {
            unsigned long long step;
            char hex[64];
            if (sscanf(line, "global_step %llu", &step) == 1) CHECK(s.has_global_step && s.global_step == step);
            else if (sscanf(line, "lr %llu %63s", &step, hex) == 2) {
                double lr = -1;
                CHECK(ckpt_trainer_state_lr_at(&s, step, &lr));
                CHECK(bits(lr) == bits(strtod(hex, NULL)));
                CHECK(k < s.lrs_len && s.lrs[k].step == step);
                k++;
            } else CHECK(false);
        }
        CHECK(k == s.lrs_len);
        ckpt_trainer_state_free(&s);
    }
    ckpt_error_clear(&err);
    free(want);
    free(text);
}

static void test_state(void)
{
    compare_state("trainer_state.json");
    compare_state("resumed.json");
    size_t len;
    char *text = (char *)read_file_in(dir, "resumed.json", &len);
    CHECK(text != NULL);
    if (!text) return;
    ckpt_trainer_state s;
    ckpt_error err = {0};
    CHECK(read_state(text, len, &s, &err) == 0);
    double lr = 7;
    CHECK(!ckpt_trainer_state_lr_at(&s, 15, &lr) && lr == 7); /* nothing logged at 15 */
    CHECK(!ckpt_trainer_state_lr_at(&s, 40, &lr) && !ckpt_trainer_state_lr_at(&s, 0, &lr));
    char *js = ckpt_trainer_state_json(&s);
    CHECK_STR(js, "{\"globalStep\":30,\"learningRates\":[{\"step\":10,\"learningRate\":0.0001},{\"step\":20,"
                  "\"learningRate\":8.5e-05},{\"step\":30,\"learningRate\":0.30000000000000004}]}");
    free(js);
    ckpt_trainer_state_free(&s);
    free(text);
}

static void expect_state(const char *text, int code, const char *message, uint64_t offset)
{
    t_current = text;
    ckpt_trainer_state s;
    ckpt_error err = {0};
    int rc = read_state(text, strlen(text), &s, &err);
    CHECK(rc == code);
    CHECK_STR(err.message, message);
    CHECK(err.offset == offset);
    CHECK(s.lrs == NULL && !s.has_global_step);
    ckpt_error_clear(&err);
}

static void test_state_values(void)
{
    /* Python's non-finite floats, no log_history, a null step or rate (skipped) */
    static const char text[] = "{\"global_step\": 3, \"log_history\": [{\"learning_rate\": NaN, \"step\": 1}, "
                               "{\"learning_rate\": -Infinity, \"step\": 2}, {\"learning_rate\": 1e-3, \"step\": null},"
                               " {\"learning_rate\": null, \"step\": 3}, {\"loss\": Infinity, \"step\": 3}]}";
    ckpt_trainer_state s;
    ckpt_error err = {0};
    CHECK(read_state(text, sizeof text - 1, &s, &err) == 0);
    CHECK(s.lrs_len == 2 && s.global_step == 3);
    double lr;
    CHECK(ckpt_trainer_state_lr_at(&s, 1, &lr) && isnan(lr));
    CHECK(ckpt_trainer_state_lr_at(&s, 2, &lr) && isinf(lr) && lr < 0);
    CHECK(!ckpt_trainer_state_lr_at(&s, 3, &lr));
    char *js = ckpt_trainer_state_json(&s);
    CHECK_STR(js, "{\"globalStep\":3,\"learningRates\":[{\"step\":1,\"learningRate\":\"NaN\"},{\"step\":2,"
                  "\"learningRate\":\"-Infinity\"}]}");
    free(js);
    ckpt_trainer_state_free(&s);
    CHECK(read_state("{}", 2, &s, &err) == 0);
    js = ckpt_trainer_state_json(&s);
    CHECK_STR(js, "{\"globalStep\":null,\"learningRates\":[]}");
    free(js);
    ckpt_trainer_state_free(&s);
    /* a number longer than any double's text, read exactly */
    strbuf long_text = {0};
    sb_puts(&long_text, "{\"log_history\": [{\"step\": 18446744073709551615, \"learning_rate\": 0.");
    for (int k = 0; k < 300; k++) sb_putc(&long_text, '0');
    sb_puts(&long_text, "25e300}]}");
    CHECK(read_state(long_text.data, long_text.len, &s, &err) == 0);
    CHECK(ckpt_trainer_state_lr_at(&s, UINT64_MAX, &lr) && lr == 0.25);
    ckpt_trainer_state_free(&s);
    sb_free(&long_text);
}

static void test_state_refused(void)
{
    const int E = CKPT_E_TRAINER_FILE;
    expect_state("{\"global_step\": 1,}", E, "trainer_state.json: not JSON at byte 18: an object key is not a string",
                 18);
    expect_state("[1, 2]", E, "trainer_state.json: the text at byte 0 is not an object", 0);
    expect_state("{\"global_step\": -4}", E, "trainer_state.json: global_step at byte 16 is not a step count", 16);
    expect_state("{\"global_step\": 2.5}", E, "trainer_state.json: global_step at byte 16 is not a step count", 16);
    expect_state("{\"log_history\": {}}", E, "trainer_state.json: log_history at byte 16 is not a list", 16);
    expect_state("{\"log_history\": [{}, 7]}", E, "trainer_state.json: log_history[1] at byte 21 is not an object", 21);
    expect_state("{\"log_history\": [{\"step\": \"10\", \"learning_rate\": 1}]}", E,
                 "trainer_state.json: log_history[0].step at byte 26 is not a step count", 26);
    expect_state("{\"log_history\": [{\"step\": 10, \"learning_rate\": [1]}]}", E,
                 "trainer_state.json: log_history[0].learning_rate at byte 47 is not a number", 47);
    /* the strict reader's NaN is Python's only: nan is no JSON */
    expect_state("{\"global_step\": nan}", E, "trainer_state.json: not JSON at byte 16: an unexpected character", 16);
    /* too many values for its bytes: refused before the parse */
    size_t many = CKPT_TRAINER_JSON_VALUES;
    char *commas = malloc(many);
    memset(commas, ',', many);
    ckpt_trainer_state st;
    ckpt_error e2 = {0};
    CHECK(read_state(commas, many, &st, &e2) == E);
    CHECK_STR(e2.message, "trainer_state.json: 4194305 values; at most 4194304 are read");
    ckpt_error_clear(&e2);
    char *js = ckpt_model_index_shards_json(commas, many, "pytorch_model.bin.index.json", &e2);
    CHECK(js == NULL);
    CHECK_STR(e2.message, "pytorch_model.bin.index.json: 4194305 values; at most 4194304 are read");
    ckpt_error_clear(&e2);
    free(commas);
    /* too large a text, by its size: nothing read */
    ckpt_source big = {NULL, NULL, CKPT_TRAINER_STATE_MAX + 1};
    ckpt_trainer_state s;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_trainer_state_read(&big, &s, &err) == E);
    CHECK_STR(err.message, "trainer_state.json: 33554433 bytes; at most 33554432 are read");
    ckpt_error_clear(&err);
}

/* ---- folders ---- */

static void test_folder(void)
{
    static const char *const full[] = {
        "rng_state.pth",      "scheduler.pt",      "model.safetensors", "optimizer.pt",
        "trainer_state.json", "training_args.bin", "config.json",       "pytorch_model.bin.index.json"};
    char *js = ckpt_trainer_folder_json(full, 8);
    CHECK_STR(js,
              "{\"optimizer\":\"optimizer.pt\",\"model\":\"model.safetensors\",\"modelIndex\":null,\"trainerState\":"
              "\"trainer_state.json\",\"trainingArgs\":\"training_args.bin\",\"scheduler\":\"scheduler.pt\",\"config\":"
              "\"config.json\"}");
    free(js);
    /* a .bin keeps module order and ties: taken before a .safetensors */
    static const char *const both[] = {"model.safetensors", "pytorch_model.bin"};
    js = ckpt_trainer_folder_json(both, 2);
    CHECK_STR(js, "{\"optimizer\":null,\"model\":\"pytorch_model.bin\",\"modelIndex\":null,\"trainerState\":null,"
                  "\"trainingArgs\":null,\"scheduler\":null,\"config\":null}");
    free(js);
    static const char *const sharded[] = {"model-00002-of-00002.safetensors", "model.safetensors.index.json",
                                          "model-00001-of-00002.safetensors", "optimizer.pt", "Optimizer.PT"};
    js = ckpt_trainer_folder_json(sharded, 5);
    CHECK_STR(js, "{\"optimizer\":\"optimizer.pt\",\"model\":null,\"modelIndex\":\"model.safetensors.index.json\","
                  "\"trainerState\":null,\"trainingArgs\":null,\"scheduler\":null,\"config\":null}");
    free(js);
    js = ckpt_trainer_folder_json(NULL, 0);
    CHECK_STR(js, "{\"optimizer\":null,\"model\":null,\"modelIndex\":null,\"trainerState\":null,\"trainingArgs\":null,"
                  "\"scheduler\":null,\"config\":null}");
    free(js);
}

/* config.json's transformers_version: 4.51 and later log the rate an update used, at B's step */
static void test_lr_logged_at(void)
{
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"{\"transformers_version\": \"4.46.0\"}", CKPT_LR_LOGGED_AT_A},
        {"{\"transformers_version\": \"4.50.3\"}", CKPT_LR_LOGGED_AT_A},
        {"{\"transformers_version\": \"4.51.0\"}", CKPT_LR_LOGGED_AT_B},
        {"{\"transformers_version\": \"4.51.0.dev0\"}", CKPT_LR_LOGGED_AT_B},
        {"{\"transformers_version\": \"4.100\"}", CKPT_LR_LOGGED_AT_B},
        {"{\"transformers_version\": \"5.0\"}", CKPT_LR_LOGGED_AT_B},
        {"{\"transformers_version\": \"3.5.1\"}", CKPT_LR_LOGGED_AT_A},
        {"{\"transformers_version\": \"4\"}", CKPT_LR_LOGGED_UNKNOWN},
        {"{\"transformers_version\": \"v4.51\"}", CKPT_LR_LOGGED_UNKNOWN},
        {"{\"transformers_version\": 4.51}", CKPT_LR_LOGGED_UNKNOWN},
        {"{\"model_type\": \"gpt2\"}", CKPT_LR_LOGGED_UNKNOWN},
        {"[\"4.51.0\"]", CKPT_LR_LOGGED_UNKNOWN},
        {"{\"transformers_version\": \"4.51.0\"", CKPT_LR_LOGGED_UNKNOWN},
        {"", CKPT_LR_LOGGED_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t_current = cases[i].text;
        CHECK(ckpt_trainer_lr_logged_at(cases[i].text, strlen(cases[i].text)) == cases[i].want);
    }
}

static void expect_shards(const char *text, const char *json, const char *message, uint64_t offset)
{
    t_current = text;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *got = ckpt_model_index_shards_json(text, strlen(text), "model.safetensors.index.json", &err);
    if (json) CHECK_STR(got, json);
    else {
        CHECK(got == NULL && err.code == CKPT_E_TRAINER_FILE);
        CHECK_STR(err.message, message);
        CHECK(err.offset == offset);
    }
    free(got);
    ckpt_error_clear(&err);
}

static void test_index(void)
{
    expect_shards(
        "{\"metadata\": {\"total_size\": 96}, \"weight_map\": {\"b.weight\": \"model-00002-of-00002.safetensors\","
        " \"a.weight\": \"model-00001-of-00002.safetensors\", \"a.bias\": \"model-00002-of-00002.safetensors\"}}",
        "[\"model-00001-of-00002.safetensors\",\"model-00002-of-00002.safetensors\"]", NULL, 0);
    expect_shards("{\"weight_map\": {}}", "[]", NULL, 0);
    expect_shards("{\"weight_map\": {\"w\": \"../../secret.safetensors\"}}", NULL,
                  "model.safetensors.index.json: weight_map's \"w\" at byte 21 is not the name of a file beside the "
                  "index",
                  21);
    expect_shards("{\"weight_map\": {\"w\": \"a\\\\b\"}}", NULL,
                  "model.safetensors.index.json: weight_map's \"w\" at byte 21 is not the name of a file beside the "
                  "index",
                  21);
    expect_shards("{\"weight_map\": {\"w\": \"x\\u0000.bin\"}}", NULL,
                  "model.safetensors.index.json: weight_map's \"w\" at byte 21 is not the name of a file beside the "
                  "index",
                  21);
    expect_shards("{\"weight_map\": {\"w\": 1}}", NULL,
                  "model.safetensors.index.json: weight_map's \"w\" at byte 21 is not the name of a file beside the "
                  "index",
                  21);
    expect_shards("{\"weight_map\": {\"w\": \"..\"}}", NULL,
                  "model.safetensors.index.json: weight_map's \"w\" at byte 21 is not the name of a file beside the "
                  "index",
                  21);
    expect_shards("{\"weight_map\": [\"a\"]}", NULL,
                  "model.safetensors.index.json: no weight_map object: not a sharded model's index", CKPT_NONE);
    expect_shards("{\"weight_map\": {\"w\": \"a\"}", NULL,
                  "model.safetensors.index.json: not JSON at byte 25: an object is not closed", 25);
}

static void test_checkpoints(void)
{
    static const char *const names[] = {"checkpoint-1000",
                                        "runs",
                                        "checkpoint-500",
                                        "checkpoint-50",
                                        "checkpoint-x",
                                        "checkpoint-",
                                        "checkpoint-18446744073709551616",
                                        "checkpoint-18446744073709551615",
                                        "checkpoint-050",
                                        "checkpoint--5",
                                        "xcheckpoint-7"};
    char *js = ckpt_trainer_checkpoints_json(names, sizeof names / sizeof names[0]);
    CHECK_STR(js, "[{\"name\":\"checkpoint-050\",\"step\":50},{\"name\":\"checkpoint-50\",\"step\":50},{\"name\":"
                  "\"checkpoint-500\",\"step\":500},{\"name\":\"checkpoint-1000\",\"step\":1000},{\"name\":"
                  "\"checkpoint-18446744073709551615\",\"step\":\"18446744073709551615\"}]");
    free(js);
    js = ckpt_trainer_checkpoints_json(NULL, 0);
    CHECK_STR(js, "[]");
    free(js);
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: test_trainer DIR\n"), 2;
    dir = argv[1];
    static const test_case cases[] = {
        {"training_args.bin read as data: zip, legacy, enum and str optim, a dict", test_args},
        {"training_args.bin as JSON", test_args_json},
        {"training_args.bin refused: a field's type, the object's", test_args_refused},
        {"training_args.bin cut at every length", test_args_truncated},
        {"trainer_state.json's learning rates by step, exact", test_state},
        {"trainer_state.json: Python's NaN and Infinity, nulls, long numbers", test_state_values},
        {"trainer_state.json refused", test_state_refused},
        {"a checkpoint folder's files by name", test_folder},
        {"config.json's transformers version: which entry logs an update's rate", test_lr_logged_at},
        {"a sharded model's index: its shards", test_index},
        {"an output folder's checkpoints by N", test_checkpoints},
    };
    return RUN_ALL(cases);
}
