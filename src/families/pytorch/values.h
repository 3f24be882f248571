/* Reading torch's objects out of a pickle's tree (values.c): the reader's context, and the
 * values every step reads (strings, numbers, dicts, the path of a value). Private to the PyTorch
 * family's readers: tensors.c, search.c, open.c. */
#ifndef CKPT_TORCH_VALUES_H
#define CKPT_TORCH_VALUES_H

#include "families/pytorch/objects.h"

#include <stdlib.h>
#include <string.h>

enum { CAP_ST, CAP_TE, CAP_DI, CAP_NA, CAP_MO, CAP_OP, CAP_GR, CAP_EN, CAP_IN, CAP_SR, CAP_LO, CAP_KV };

typedef struct tctx {
    ckpt_torch *t;
    const ckpt_source *src;
    ckpt_error *err;
    const char *member; /* the object pickle's name in texts */
    ckpt_zip *zip;
    size_t *hash; /* storages by key: open addressing, CKPT_TORCH_NONE empty */
    size_t hash_cap;
    uint8_t *seen; /* containers expanded by the search */
    strbuf path;
    uint64_t base;  /* the object pickle's node offsets + base: bytes of the file */
    uint64_t spent; /* values copied out of the tree (and string bytes / 8): see charge */
} tctx;
#define PUSH(t, arr, len, capk) ckpt_grow((void **)&(t)->arr, &(t)->caps[capk], (t)->len + 1, sizeof *(t)->arr)

static inline const ckpt_pnode *N(const tctx *c, size_t k) { return ckpt_pickle_node(c->t->pickle, k); }
static inline const char *span(const tctx *c, const ckpt_pnode *n) { return (const char *)c->t->pickle->data + n->at; }

typedef struct dict_it {
    const tctx *c;
    uint32_t lists[2];
    int list;
    uint32_t cell;
} dict_it;

bool torch_str_is(const tctx *c, size_t k, const char *s);
/* A copy of bytes as a C string, a NUL byte replaced by U+FFFD. */
char *torch_dup_span(const char *s, size_t n);
char *torch_path_dup(tctx *c);
/* "PyTorch: malformed checkpoint at byte {o} of {member}: {reason}" at node n. */
int torch_fail_malformed(tctx *c, const ckpt_pnode *n, const char *reason);
/* What is copied out of the tree, charged against the pickle's length (values.c says why). */
int torch_charge(tctx *c, const ckpt_pnode *at, uint64_t units);
/* The path of a value ("model.layer[0]"), cut at CKPT_TORCH_MAX_PATH bytes: push returns the
 * mark to pop back to. */
size_t torch_path_push_key(tctx *c, size_t key);
size_t torch_path_push_index(tctx *c, size_t j);
void torch_path_pop(tctx *c, size_t mark);
/* The GLOBAL that node k is (CKPT_PN_OPAQUE when it is not one). */
ckpt_pname torch_global_of(const tctx *c, size_t k, const char **dtype);
/* Dicts: DICT, and REDUCE of collections.OrderedDict (BUILD over it). */
bool torch_dict_cells(const tctx *c, size_t k, uint32_t first[2]);
bool torch_dict_begin(dict_it *it, const tctx *c, size_t k);
bool torch_dict_next(dict_it *it, size_t *key, size_t *value);
size_t torch_dict_get(const tctx *c, size_t k, const char *name);
bool torch_is_dict(const tctx *c, size_t k);
bool torch_is_seq(const tctx *c, size_t k);
bool torch_number_of(const tctx *c, size_t k, double *x);
uint64_t torch_hash_bytes(const char *s, size_t n); /* FNV-1a */

/* tensors.c: storages and tensors (format.md 10.2) */
int torch_storages_zip(tctx *c);
int torch_storages_legacy(tctx *c, const ckpt_pickle *keys, uint64_t at);
int torch_tensor_of(tctx *c, size_t k, size_t *out);
/* search.c: the search for state dicts (format.md 10.3) */
int torch_search(tctx *c, size_t k, unsigned depth);

#endif
