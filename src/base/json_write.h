/* The JSON writer every report, pair, diff and run uses (json_write.c). Private to src/. */
#ifndef CKPT_JSON_WRITE_H
#define CKPT_JSON_WRITE_H

#include "base/strbuf.h"

/* ---- json_write.c: the JSON writer every report, pair, diff and run uses ---- */
void j_u64(strbuf *sb, uint64_t v);  /* a number up to 2^53 - 1, a decimal string beyond */
void j_double(strbuf *sb, double x); /* shortest exact form; "NaN", "Infinity" as strings */
void j_string(strbuf *sb, const char *s);
void j_string_n(strbuf *sb, const char *s, size_t n);         /* n bytes, a NUL byte escaped too */
void j_bits(strbuf *sb, uint64_t b);                          /* "0x3feccccccccccccd" */
void j_slot(strbuf *sb, uint64_t slot);                       /* a u64, or null for CKPT_NONE */
void j_num_or_null(strbuf *sb, bool present, double x);       /* j_double(x), or null when not present */
void j_dims(strbuf *sb, const uint64_t *dims, uint64_t rank); /* [2,3] */
void j_stats(strbuf *sb, const ckpt_stats *s);

#endif
