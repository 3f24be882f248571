/* Private declarations shared by the modules of src/. Nothing here is public API. */
#ifndef CKPT_INTERNAL_H
#define CKPT_INTERNAL_H

#include "ckptscope.h"

#include <stdarg.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ckptscope reads payloads in place and needs a little-endian host"
#endif

#define CKPT_FAMILY "CUDA Adam checkpoint: "
#define CKPT_MAGIC "TLADAMF"
#define CKPT_MAGIC_LEN 7

/* ---- error.c ---- */
/* Set err to code at offset with the family prefix and a printf-style text; returns code. */
int ckpt_fail(ckpt_error *err, int code, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int ckpt_fail_oom(ckpt_error *err);
void ckpt_set_hint(ckpt_error *err, const char *hint);

/* ---- strbuf.c: growable NUL-terminated text ---- */
typedef struct strbuf {
    char *data;
    size_t len, cap;
    bool failed;               /* an allocation failed; the content is incomplete */
} strbuf;
void sb_put(strbuf *sb, const char *s, size_t n);
void sb_puts(strbuf *sb, const char *s);
void sb_printf(strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sb_free(strbuf *sb);

/* ---- checked arithmetic ---- */
static inline bool ckpt_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline bool ckpt_add_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

/* ---- shape.c (FORMAT.md 2) ---- */
/* Product of dims; returns false (and *out unspecified) when it is >= 2^64. Any 0 gives 0. */
bool ckpt_shape_size(const uint64_t *dims, uint64_t rank, uint64_t *out);
/* "#[2, 3]" */
void ckpt_shape_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* The product of dims in full decimal, however large. */
void ckpt_shape_size_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* a * b in full decimal (a payload's byte length: count * width). */
void ckpt_u64_product_print(strbuf *sb, uint64_t a, uint64_t b);
bool ckpt_shape_equal(const uint64_t *a, uint64_t ra, const uint64_t *b, uint64_t rb);

/* ---- io.c: the buffered reader and u64 framing (FORMAT.md 1) ---- */
struct ckpt_reader {
    const ckpt_source *src;
    uint64_t pos;              /* absolute offset of the next byte */
    uint8_t *buf;              /* holds [buf_pos, buf_pos + buf_len) of the source */
    size_t buf_len, buf_cap;
    uint64_t buf_pos;
    size_t readahead;          /* next refill size: small after a skip, doubling when sequential */
    bool at_end;               /* the source returned short: no bytes past buf_pos + buf_len */
};
int ckpt_read_exact(ckpt_reader *r, void *dst, size_t n, ckpt_error *err);
uint64_t ckpt_get_u64le(const uint8_t *p);
/* A u64 field: inline when the buffer holds it (a million-slot schema reads millions). */
static inline int ckpt_read_u64(ckpt_reader *r, uint64_t *out, ckpt_error *err)
{
    if (r->pos >= r->buf_pos && r->pos - r->buf_pos + 8 <= r->buf_len) {
        *out = ckpt_get_u64le(r->buf + (r->pos - r->buf_pos));
        r->pos += 8;
        return 0;
    }
    uint8_t b[8];
    int rc = ckpt_read_exact(r, b, 8, err);
    if (!rc) *out = ckpt_get_u64le(b);
    return rc;
}
/* Skip a payload of count * width bytes (truncation reported as for a read of that size). */
int ckpt_skip_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_error *err);
/* Stream a payload of count * width bytes through fn in whole elements. */
typedef int (*ckpt_chunk_fn)(void *ctx, const void *data, size_t elements);
int ckpt_stream_payload(ckpt_reader *r, uint64_t count, unsigned width, ckpt_chunk_fn fn,
                        void *ctx, ckpt_error *err);
/* After the last record: is there at least one more byte? (-1 on I/O error) */
int ckpt_reader_has_more(ckpt_reader *r, ckpt_error *err);
int ckpt_sink_u64(const ckpt_sink *out, uint64_t v, ckpt_error *err);
int ckpt_sink_bytes(const ckpt_sink *out, const void *p, size_t n, ckpt_error *err);
void ckpt_put_u64le(uint8_t *p, uint64_t v);

/* ---- schema.c (FORMAT.md 3) ---- */
struct ckpt_schema {
    size_t n;                  /* shapes */
    size_t flag_count;
    size_t map_count;
    bool has_map;
    uint64_t *dim_start;       /* n + 1 offsets into dims */
    uint64_t *dims;
    uint64_t *sizes;
    uint8_t *size_too_big;     /* 1 where the product is >= 2^64 */
    uint8_t *requires_grad;
    uint64_t *map;             /* has_map: map_count representatives */
    size_t cap, dims_cap;      /* capacities while a reader appends */
    /* derived, computed once (schema_derive) */
    bool derived;
    bool well_formed, has_aliases;
    uint64_t state_count, trainable_count;
};
ckpt_schema *ckpt_schema_empty(void);
/* Append a slot with its dims; the size is computed. Returns false when out of memory. */
bool ckpt_schema_push_slot(ckpt_schema *s, uint64_t rank);
bool ckpt_schema_push_dim(ckpt_schema *s, uint64_t dim);
void ckpt_schema_end_slot(ckpt_schema *s);
bool ckpt_schema_push_flag(ckpt_schema *s, bool trainable);
bool ckpt_schema_set_map(ckpt_schema *s, const uint64_t *map, size_t count);
/* Read the schema into `file` (a fresh empty schema), comparing with `expected` when it is
 * not NULL (readAndCheck), else checking sizes against products (FORMAT.md 5). */
int ckpt_schema_read(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file,
                     uint64_t *declared_count, ckpt_error *err);
/* Read the n tags; compare with expected's tags when given; set file's map from them. */
int ckpt_schema_read_tags(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file,
                          ckpt_error *err);
/* The FORMAT.md 5 sharing-map diagnostic for the first broken slot; 0 when well formed.
 * tag_offset: where the tags start (each slot's offset is tag_offset + 8 i), or CKPT_NONE. */
int ckpt_schema_check_sharing(const ckpt_schema *s, uint64_t tag_offset, ckpt_error *err);

/* ---- config.c ---- */
int ckpt_config_validate_at(const ckpt_config *c, ckpt_dtype dtype, uint64_t kind_offset, ckpt_error *err);

/* ---- stats.c ---- */
typedef struct ckpt_stats_acc {
    uint64_t count, nan, inf, zero, negative;
    double min, max, sum, sum_squares;
    uint64_t hist[2100];       /* by floor(log2|x|) + 1074, covers float64 subnormals */
} ckpt_stats_acc;
void ckpt_stats_begin(ckpt_stats_acc *a);
void ckpt_stats_f32(ckpt_stats_acc *a, const float *x, size_t n);
void ckpt_stats_f64(ckpt_stats_acc *a, const double *x, size_t n);
ckpt_stats *ckpt_stats_finish(const ckpt_stats_acc *a);    /* NULL when out of memory */
void ckpt_stats_free(ckpt_stats *s);

/* ---- report.c ---- */
char *ckpt_entry_json(const ckpt_entry_info *e);   /* one entry with its stats */
bool ckpt_report_warn(ckpt_report *rep, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
