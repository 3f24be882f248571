/* A torch.save zip built from a plan (torch_zip.c): the pickle built in memory, then one storage
 * per tensor whose bytes are runs of a source, copied (or 16-bit floats widened exactly to
 * float32) chunk by chunk as they are written, never gathered. Shared by the conversions that
 * consolidate a checkpoint kept in pieces (ds_consolidate.c, dcp_consolidate.c). Private to src/. */
#ifndef CKPT_TORCH_ZIP_H
#define CKPT_TORCH_ZIP_H

#include "base/base.h"
#include "containers/pickle.h"

typedef struct tz_run {
    uint64_t at;    /* absolute, in the source */
    uint64_t count; /* elements */
    int dtype;      /* the source's */
} tz_run;

typedef struct tz_storage {
    const char *cls;  /* torch's storage class: FloatStorage, ... */
    int dtype;        /* written */
    uint64_t numel;   /* elements written */
    size_t runs, len; /* into the plan's runs */
    bool literal;     /* lit holds the bytes (a step) */
    uint8_t lit[8];
    uint64_t bytes; /* numel * width */
} tz_storage;

typedef struct tz_plan {
    tz_storage *st;
    size_t st_len, st_cap;
    tz_run *runs;
    size_t runs_len, runs_cap;
    strbuf pickle;
    const char *prefix; /* of its texts */
    ckpt_error *err;
} tz_plan;

void tz_plan_free(tz_plan *p);
/* torch's storage class of a ckpt_dtype, NULL when none */
const char *tz_class_of(int dtype);
/* the dtype a run of dtype is written as when widened: float32 for 16-bit floats */
int tz_widened(int dtype);
/* A new storage written as dtype; its index, or SIZE_MAX out of memory. */
size_t tz_new_storage(tz_plan *p, int dtype, uint64_t numel);
/* count elements of dtype at byte `at` of the source, appended to storage s (the last made) */
int tz_add_run(tz_plan *p, size_t s, uint64_t at, uint64_t count, int dtype);
/* _rebuild_tensor_v2(('storage', torch.{cls}, key, 'cpu', numel), 0, size, stride, False,
 * OrderedDict()) into the pickle: a contiguous tensor filling storage `key`. */
int tz_tensor(tz_plan *p, size_t key, const uint64_t *dims, size_t rank);
/* A stored value again, as Python's pickler writes it: None, bools, ints, floats (their exact
 * bits), str, tuples and lists of them. false for anything else (a tensor, an object). */
bool tz_value(strbuf *sb, const ckpt_pickle *pk, size_t node, int depth);

/* Where a storage's bytes go. */
typedef struct tz_emit {
    int (*bytes)(void *ctx, const void *data, size_t n);
    void *ctx;
    int widen; /* private: the run's dtype when it widens, else -1 */
    ckpt_error *err;
} tz_emit;
/* The bytes of storage s from element `from` on, `count` elements, read from r, through e. */
int tz_storage_bytes(const tz_plan *p, ckpt_reader *r, size_t s, uint64_t from, uint64_t count, tz_emit *e);

/* The zip ({zip_prefix or "archive"}/data.pkl, byteorder, data/{k} per storage, version; data
 * 64-byte aligned) into out, the storages read from src; `mark`, when given, is told which
 * storage's data the next bytes are (SIZE_MAX: none), for a source read on demand. */
typedef void (*tz_mark_fn)(void *ctx, size_t storage);
int tz_write_zip(const tz_plan *p, const ckpt_source *src, const char *zip_prefix, ckpt_progress_fn progress,
                 void *progress_ctx, const ckpt_sink *out, tz_mark_fn mark, void *mark_ctx, ckpt_error *err);

#endif
