/* A consolidated pair to TorchLean (torch_zip_virtual.h): the optimizer and model files a
 * consolidation would write, read on demand (never written), through the route
 * `convert optimizer.pt OUT --state model.pt` takes: paired, then converted. */
#include "writers/torch_zip_virtual.h"

#include <stdlib.h>
#include <string.h>

/* The pair's verdict as the conversion takes it: its first failure refuses; a pair that holds
 * only if the slots without state are not trained is converted, its text in *note. */
static int pair_verdict(ckpt_file *fo, ckpt_file *fm, const char *const *frozen, size_t frozen_count,
                        const ckpt_convert_options *o, char **note, ckpt_error *err)
{
    ckpt_pair_options po = {0};
    po.frozen = frozen, po.frozen_count = frozen_count;
    ckpt_pair_result *r = ckpt_pair_with(fo, fm, &po, o->progress, o->progress_ctx);
    int rc = 0;
    if (!r) rc = ckpt_fail_oom(err);
    else if (r->failures_len) {
        rc = r->failures[0].code;
        ckpt_error_move(err, &r->failures[0]);
    } else if (r->error.code && !r->cannot_tell) {
        rc = r->error.code;
        ckpt_error_move(err, &r->error);
    } else if (r->cannot_tell && note && r->error.message) {
        size_t n = strlen(r->error.message) + 1;
        if (!(*note = malloc(n))) rc = ckpt_fail_oom(err);
        else memcpy(*note, r->error.message, n);
    }
    ckpt_pair_result_free(r);
    return rc;
}

int tz_convert_pair(tz_plan *opt, tz_plan *model, const ckpt_source *src, const char *const *frozen,
                    size_t frozen_count, const ckpt_convert_options *o, const ckpt_sink *out, ckpt_convert_result *res,
                    char **note, ckpt_error *err)
{
    if (note) *note = NULL;
    tz_virtual *vo = tz_virtual_new(opt, src, "optimizer", err);
    tz_virtual *vm = vo ? tz_virtual_new(model, src, "model", err) : NULL;
    if (!vo) {
        tz_plan_free(model);
        *model = (tz_plan){0};
    }
    if (!vm) {
        tz_virtual_free(vo);
        return err->code;
    }
    ckpt_file *fo = ckpt_open(tz_virtual_source(vo), NULL);
    ckpt_file *fm = fo ? ckpt_open(tz_virtual_source(vm), NULL) : NULL;
    int rc = fo && fm ? 0 : ckpt_fail_oom(err);
    for (ckpt_file *f = fo; !rc && f; f = f == fo ? fm : NULL) {
        const ckpt_report *rep = ckpt_file_report(f);
        if (rep->error.code) rc = ckpt_error_copy(err, &rep->error); /* never: the writer's own files */
    }
    if (!rc) rc = pair_verdict(fo, fm, frozen, frozen_count, o, note, err);
    if (!rc) rc = ckpt_convert(fo, o, out, res, err);
    ckpt_close(fm);
    ckpt_close(fo);
    tz_virtual_free(vm);
    tz_virtual_free(vo);
    return rc;
}
