/* The open file: its report, its slots, its payloads (file.c). Private to src/. */
#ifndef CKPT_CORE_FILE_H
#define CKPT_CORE_FILE_H

#include "core/impl.h"

/* ---- file.c: the open file ---- */
/* A progress callback held at nothing done while a first stage (the state files' pairing) runs:
 * it reports (0, total) to the held callback, so a cancel is honoured. */
typedef struct ckpt_progress_hold {
    ckpt_progress_fn fn; /* may be NULL */
    void *ctx;
    uint64_t total;
} ckpt_progress_hold;
int ckpt_progress_held(void *hold, uint64_t done, uint64_t total);
/* The slot -> item map of a report whose layout is complete: map[i] is the item whose slot is i
 * (a tied slot's data is its representative's item), SIZE_MAX when none was read. NULL when out
 * of memory. The caller frees it. */
size_t *ckpt_item_of_slot(const ckpt_report *rep);

/* The report of an open file, for the analyses that bind its slots (pairing). */
ckpt_report *ckpt_file_report_mut(ckpt_file *f);
/* After a bind changed f's report (its slots, its items): the slot -> item map again. */
int ckpt_file_refresh_items(ckpt_file *f, ckpt_error *err);
/* Elements [first, first + n) of a payload (in element order: its one run, or across its spans)
 * into out, as stored. */
int ckpt_payload_read(const ckpt_source *src, const ckpt_payload *x, uint64_t first, size_t n, void *out,
                      ckpt_error *err);
/* f's tensors become order[0..k) of them (a permutation, or the slots of a pairing: the others
 * are dropped), with its schema's slots. */
int ckpt_file_view_tensors(ckpt_file *f, const size_t *order, size_t k, ckpt_error *err);

#endif
