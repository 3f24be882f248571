/* A DeepSpeed checkpoint's consolidated torch.save files read on demand (ds_consolidate.c,
 * format.md 11.8): the bytes ckpt_ds_consolidate writes, the storages' data read from the
 * folder's fragments when asked for (nothing gathered). Private to src/. */
#ifndef CKPT_DS_CONSOLIDATE_H
#define CKPT_DS_CONSOLIDATE_H

#include "ckptscope.h"

typedef struct ckpt_ds_virtual ckpt_ds_virtual;
/* which: CKPT_DS_OPTIMIZER or CKPT_DS_MODEL. NULL with err set on a refusal or out of memory. */
ckpt_ds_virtual *ckpt_ds_virtual_new(const ckpt_file *in, int which, const char *prefix, ckpt_error *err);
/* Valid while v lives. */
const ckpt_source *ckpt_ds_virtual_source(const ckpt_ds_virtual *v);
void ckpt_ds_virtual_free(ckpt_ds_virtual *v);

#endif
