/* Names that end in a number ("checkpoint-20", "checkpoint_3", "random_states_1.pkl"): the
 * number read, and a listing's numbered folders in the order of their numbers. Shared by the
 * families that read a training run's folders (a Hugging Face Trainer's checkpoint-{N}, an
 * Accelerate project's checkpoint_{k}). */
#ifndef CKPT_CORE_NUMBERED_H
#define CKPT_CORE_NUMBERED_H

#include "base/base.h"

/* Is `name` prefix, then decimal digits that fit in 64 bits, then suffix (suffix may be ""
 * or NULL)? *n set when it is. */
bool ckpt_numbered_name(const char *name, const char *prefix, const char *suffix, uint64_t *n);

/* The names among names[0..n) that are prefix{N}, by N (numeric; equal N by name), as JSON
 * [{"name", key: N}]; other names are left out. NULL when out of memory. */
char *ckpt_numbered_names_json(const char *const *names, size_t n, const char *prefix, const char *key);

/* The last run of digits of s[0..n), as format.md 9 orders files (global_step300 -> 300, step-10
 * -> 10; saturating at UINT64_MAX): false when s has none. */
bool ckpt_last_number(const char *s, size_t n, uint64_t *v);

/* A name in run order: the name (not NUL-terminated) and its last number (ckpt_last_number). */
typedef struct ckpt_run_name {
    const char *name;
    size_t len;
    bool has;
    uint64_t n;
} ckpt_run_name;

/* Sort names in format.md 9's run order: by their last number, those without one after them; ties
 * and those by name (bytes). `has` and `n` are filled here. */
void ckpt_run_order(ckpt_run_name *names, size_t count);

#endif
