/* A PyTorch optimizer.pt and its model written as a DCP folder (writers/dcp_write.c): its parts
 * that tests reach. Private to src/ and the tests. */
#ifndef CKPT_DCP_WRITE_H
#define CKPT_DCP_WRITE_H

#include "base/base.h"

/* One element of a planner_data path: a str, or an int (a list index). */
typedef struct ckpt_dcp_part {
    const char *s; /* NULL: the int i */
    int64_t i;
} ckpt_dcp_part;

/* One key of the saved state dict: a whole tensor (one chunk at offset 0) or a bytes item, and
 * its record: bytes [offset, offset + length) of `file`. */
typedef struct ckpt_dcp_item {
    const char *fqn;
    bool tensor;
    int dtype; /* a tensor's (CKPT_FLOAT32, ...) */
    uint32_t rank;
    const uint64_t *dims;
    ckpt_dcp_part path[4]; /* where the key lies in the saved nested dict */
    unsigned path_len;
    const char *file;
    uint64_t offset, length;
} ckpt_dcp_item;

typedef struct ckpt_dcp_meta_options {
    bool torch113;             /* torch 1.13's _shard classes, no planner_data, storage_meta, version */
    const char *checkpoint_id; /* StorageMeta.checkpoint_id: an absolute POSIX path, or NULL (None) */
    const char *save_id;       /* StorageMeta.save_id, or NULL (None) */
} ckpt_dcp_meta_options;

/* The .metadata pickle (protocol 4) of these items, in this order (state_dict_metadata's and
 * planner_data's); storage_data lists them in record order (file, then offset). Appended to sb:
 * false when out of memory or a dtype torch does not name. */
bool ckpt_dcp_metadata(const ckpt_dcp_item *items, size_t n, const ckpt_dcp_meta_options *o, strbuf *sb);

#endif
