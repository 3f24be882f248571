/* The report's JSON shape (report_json.c). Private to src/. */
#ifndef CKPT_CORE_REPORT_JSON_H
#define CKPT_CORE_REPORT_JSON_H

#include "core/impl.h"

/* ---- report_json.c: the report's JSON shape (docs/report.md) ---- */
/* The members of an optimizer report and of a model-state report after the common ones: a
 * family's json_body, or the first part of one that adds members of its own. */
void ckpt_report_json_optimizer(ckpt_jw *w, const ckpt_report *rep, bool bulk);
void ckpt_report_json_model(ckpt_jw *w, const ckpt_report *rep, bool bulk);
/* An optimizer report whose family adds members to each entry: more(sb, rep, k) writes entry
 * k's own (",\"index\":…"). The entries are then listed without the bulk arrays too: the
 * columns hold only an entry's id, step, count and offset. */
typedef void (*ckpt_entry_json_fn)(strbuf *sb, const ckpt_report *rep, size_t k);
void ckpt_report_json_optimizer_more(ckpt_jw *w, const ckpt_report *rep, bool bulk, ckpt_entry_json_fn more);
/* The writer's text, for a family's json_body that adds members of its own. */
strbuf *ckpt_jw_text(ckpt_jw *w);

#endif
