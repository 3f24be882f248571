/* libFuzzer target: a Hugging Face Trainer's files (src/families/hf_trainer/). The
 * first byte says which reader takes the rest: training_args.bin (a torch.save file), or
 * trainer_state.json (a source of known or unknown size), or a sharded model's index. A result
 * keeps the readers' promises: the learning rates by step, strictly increasing, each found at its
 * step; every shard a plain file name, sorted, once. Every diagnostic must be one of its code's
 * templates. */
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

static void training_args(const uint8_t *data, size_t size)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    ckpt_training_args a;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_training_args_read(&src, "training_args.bin", &a, &err);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (rc) {
        if (a.optim || a.class_name) abort();
        return;
    }
    if ((a.kind == CKPT_TRAINING_KIND_ADAMW) != (a.optim && !strncmp(a.optim, "adamw", 5))) abort();
    char *json = ckpt_training_args_json(&a);
    if (!json) abort();
    free(json);
    ckpt_training_args_free(&a);
}

static void trainer_state(const uint8_t *data, size_t size, bool known)
{
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data, size);
    if (!known) src.size = CKPT_NONE;
    ckpt_trainer_state s;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_trainer_state_read(&src, &s, &err);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (rc) {
        if (s.lrs || s.lrs_len) abort();
        return;
    }
    for (size_t k = 0; k < s.lrs_len; k++) {
        double lr;
        if (k && s.lrs[k].step <= s.lrs[k - 1].step) abort();
        if (!ckpt_trainer_state_lr_at(&s, s.lrs[k].step, &lr) || memcmp(&lr, &s.lrs[k].learning_rate, 8)) abort();
    }
    char *json = ckpt_trainer_state_json(&s);
    if (!json) abort();
    free(json);
    ckpt_trainer_state_free(&s);
}

static void model_index(const uint8_t *data, size_t size)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *json = ckpt_model_index_shards_json(data, size, "model.safetensors.index.json", &err);
    oracle_check(&err);
    ckpt_error_clear(&err);
    if (json && (json[0] != '[' || strstr(json, "/") || strstr(json, "\\\\"))) abort();
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    /* the readers must not rely on bytes past the end: an exact-size copy for ASan */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) abort();
    memcpy(copy, rest, n);
    switch (data[0] % 4) {
        case 0: training_args(copy, n); break;
        case 1: trainer_state(copy, n, true); break;
        case 2: trainer_state(copy, n, false); break;
        default: model_index(copy, n); break;
    }
    free(copy);
    return 0;
}
