/* A bounded JSON reader (json_read.c): a text into a flat tree of nodes, for headers stored in
 * files. Private to src/. */
#ifndef CKPT_JSONPARSE_H
#define CKPT_JSONPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { CKPT_JV_NULL, CKPT_JV_BOOL, CKPT_JV_NUMBER, CKPT_JV_STRING, CKPT_JV_ARRAY, CKPT_JV_OBJECT };

typedef struct ckpt_jv {
    uint8_t kind; /* CKPT_JV_* */
    bool boolean; /* a bool's value */
    bool is_u64;  /* a number that is an integer in [0, 2^64): its value is u */
    uint64_t u;
    size_t len;   /* a string's bytes (decoded), an array's elements, an object's members */
    size_t at;    /* where the value starts in the text */
    size_t str;   /* a string's decoded bytes (NUL-terminated) in the pool */
    size_t first; /* the first member (an object's: its first key, whose next is its value) */
    size_t next;  /* the next member of the enclosing container (SIZE_MAX: none) */
} ckpt_jv;

typedef struct ckpt_jdoc {
    ckpt_jv *v; /* v[0] is the root */
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
} ckpt_jdoc;

/* Parse len bytes of text, nesting at most max_depth: 0; -1 with the byte where it stopped in
 * *err_at and why in *reason (a static text); -2 out of memory. Free doc with ckpt_jdoc_free in
 * every case. */
int ckpt_json_parse(const void *text, size_t len, size_t max_depth, ckpt_jdoc *doc, size_t *err_at,
                    const char **reason);
/* The same, NaN, Infinity and -Infinity read as numbers: what Python's json.dumps writes for
 * floats that are not finite (a Trainer's trainer_state.json). */
int ckpt_json_parse_nonfinite(const void *text, size_t len, size_t max_depth, ckpt_jdoc *doc, size_t *err_at,
                              const char **reason);
void ckpt_jdoc_free(ckpt_jdoc *doc);
/* At least the number of nodes a parse of the text makes (one more than its ',', ':', '[' and
 * '{', strings' included): a parse's memory, known before it runs. */
size_t ckpt_json_nodes_bound(const void *text, size_t len);
const ckpt_jv *ckpt_jv_first(const ckpt_jdoc *doc, const ckpt_jv *v);
const ckpt_jv *ckpt_jv_next(const ckpt_jdoc *doc, const ckpt_jv *v);
static inline const char *ckpt_jv_str(const ckpt_jdoc *doc, const ckpt_jv *v) { return doc->pool + v->str; }
/* An object's member named key (the first of that name), or NULL. */
const ckpt_jv *ckpt_jv_get(const ckpt_jdoc *doc, const ckpt_jv *obj, const char *key);

#endif
