/* Setting an error: its code, where, its text (error.c). Private to src/. */
#ifndef CKPT_ERROR_H
#define CKPT_ERROR_H

#include "base/strbuf.h"

/* ---- error.c ---- */
/* Set err: code, where (offset and length of the offending field, the slot it is about), and
 * the text "prefix: " + printf(fmt) (no prefix when prefix is NULL: the library's own texts).
 * Returns code. */
int ckpt_fail_at(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, uint64_t slot,
                 const char *fmt, ...) CKPT_PRINTF(7, 8);
/* The common case: a field of `length` bytes, no slot. */
int ckpt_fail(ckpt_error *err, const char *prefix, int code, uint64_t offset, uint64_t length, const char *fmt, ...)
    CKPT_PRINTF(6, 7);
int ckpt_fail_oom(ckpt_error *err);
void ckpt_set_hint(ckpt_error *err, const char *hint);
void ckpt_error_move(ckpt_error *dst, ckpt_error *src); /* dst takes src's strings; src is cleared */
/* dst becomes a copy of src (its text, hint, fields); returns dst's code. */
int ckpt_error_copy(ckpt_error *dst, const ckpt_error *src);

/* ---- error.c: the error's JSON (its configDiff through config.c) ---- */
void j_error(strbuf *sb, const ckpt_error *err);

#endif
