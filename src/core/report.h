/* The report: what a file's records add to it, its warnings (report.c). Private to src/. */
#ifndef CKPT_CORE_REPORT_H
#define CKPT_CORE_REPORT_H

#include "core/impl.h"

/* ---- report.c ---- */
bool ckpt_report_warn(ckpt_report *rep, const char *fmt, ...) CKPT_PRINTF(2, 3);
bool ckpt_report_push_entry(ckpt_report *rep, const ckpt_entry_info *e);
bool ckpt_report_push_tensor(ckpt_report *rep, const ckpt_tensor_info *t);
/* Capacity for this many entries (callers bound it by the bytes left: 24 at least each). */
bool ckpt_report_reserve_entries(ckpt_report *rep, size_t count);
/* Out of memory while a file's counts grew its layout: the partial layout is dropped, so that
 * memory is left to report the error (a layout of 100 million slots read so far is no use to
 * anyone, and its JSON could not be built). */
void ckpt_drop_layout_if_oom(ckpt_report *rep);
/* The warnings of the payloads scanned (NaN, infinities, negative second moments), in file order. */
void ckpt_report_warn_payloads(ckpt_report *rep);
/* A model tensor's unhealthy values (NaN, infinities) from its statistics (b unused: an item's
 * second payload's, NULL here); ckpt_entry_unhealthy is an optimizer entry's. */
uint64_t ckpt_tensor_unhealthy(const ckpt_stats *a, const ckpt_stats *b);

#endif
