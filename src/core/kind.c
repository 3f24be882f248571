/* The optimizer's kind (Adam or AdamW) given by the caller (--kind), one entry point for every
 * family: a family whose files may not say it checks and takes it (its set_kind); the others
 * always say it, in the report's config. */
#include "core/file.h"
#include "core/family.h"

int ckpt_set_kind(ckpt_file *f, ckpt_kind kind, ckpt_error *err)
{
    static const char *const said[] = {"Adam", "AdamW"};
    ckpt_report *rep = f ? ckpt_file_report_mut(f) : NULL;
    if (!rep || (kind != CKPT_ADAM && kind != CKPT_ADAMW))
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "the kind is adam or adamw");
    if (rep->family && rep->family->impl->set_kind) return rep->family->impl->set_kind(rep, kind, err);
    if (!rep->has_config)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "%s", CKPT_KIND_NO_OPTIMIZER);
    if (rep->config.kind != kind)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "--kind %s contradicts the file: its optimizer is %s", ckpt_kind_name(kind),
                         said[rep->config.kind == CKPT_ADAMW]);
    return 0;
}
