/* A consolidated torch.save file as a source read on demand (torch_zip_virtual.c): the zip
 * tz_write_zip writes from a plan, its pickle and zip records kept, each storage's data read from
 * its runs when asked (nothing gathered); and a consolidated pair of such files converted to
 * TorchLean through the PyTorch pair route (torch_zip_pair.c), as the two-step path converts
 * the files it wrote. Shared by the consolidations (ds_consolidate.c, dcp_consolidate.c).
 * Private to src/. */
#ifndef CKPT_TORCH_ZIP_VIRTUAL_H
#define CKPT_TORCH_ZIP_VIRTUAL_H

#include "writers/torch_zip.h"

typedef struct tz_virtual tz_virtual;
/* The file of plan *p (taken: *p is emptied) whose runs are bytes of src (read through
 * p->prefix's reader; src outlives the file), its zip folder zip_prefix. NULL with err set. */
tz_virtual *tz_virtual_new(tz_plan *p, const ckpt_source *src, const char *zip_prefix, ckpt_error *err);
/* Valid while v lives. */
const ckpt_source *tz_virtual_source(const tz_virtual *v);
void tz_virtual_free(tz_virtual *v);

/* The optimizer and model plans (taken) as the files "optimizer" and "model", opened, paired as
 * ckpt_pair_with pairs them (frozen: the names the training code does not train) and converted
 * by ckpt_convert with o: the bytes of the two-step path. A pair that fails is refused with its
 * first failure; one that holds only if the slots without state are not trained puts that text
 * in *note (malloc'ed; note may be NULL). 0 or the error code. */
int tz_convert_pair(tz_plan *opt, tz_plan *model, const ckpt_source *src, const char *const *frozen,
                    size_t frozen_count, const ckpt_convert_options *o, const ckpt_sink *out, ckpt_convert_result *res,
                    char **note, ckpt_error *err);

#endif
