/* A small test harness and a byte-level checkpoint builder for the native tests. The builder
 * writes fields literally (no validation), so tests can make every kind of broken file, and
 * records where each field starts for the truncation sweeps. */
#ifndef CKPT_TESTUTIL_H
#define CKPT_TESTUTIL_H

#include "ckptscope.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int t_failures, t_checks;
extern const char *t_current;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        t_checks++;                                                                                                    \
        if (!(cond)) {                                                                                                 \
            t_failures++;                                                                                              \
            fprintf(stderr, "%s:%d: [%s] check failed: %s\n", __FILE__, __LINE__, t_current, #cond);                   \
        }                                                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        const char *a_ = (a), *b_ = (b);                                                                               \
        t_checks++;                                                                                                    \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                                       \
            t_failures++;                                                                                              \
            fprintf(stderr, "%s:%d: [%s] got  \"%s\"\n%*s want \"%s\"\n", __FILE__, __LINE__, t_current,               \
                    a_ ? a_ : "(null)", (int)strlen(__FILE__) + 8, "", b_ ? b_ : "(null)");                            \
        }                                                                                                              \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

/* Runs every case and prints the closing line "N passed, N failed". */
int run_tests(const test_case *cases, size_t n);
#define RUN_ALL(cases) run_tests(cases, sizeof cases / sizeof cases[0])

/* ---- building files ---- */

#define MAX_FIELDS 4096
typedef struct field {
    size_t offset, len;
} field;

typedef struct bytes {
    unsigned char *data;
    size_t len, cap;
    field fields[MAX_FIELDS];
    size_t nfields;
} bytes;

bytes *b_new(void);
void b_free(bytes *b);
void b_raw(bytes *b, const void *p, size_t n); /* one field */
void b_u64(bytes *b, uint64_t v);
void b_f64(bytes *b, double x); /* its bit pattern as a u64 field */
/* A payload of count elements of the width, each `value`, as one field. */
void b_payload(bytes *b, uint64_t count, unsigned width, double value);

/* magic, version, (v5) dtype, config (kind, betas 0.9/0.999, eps 1e-8, wd), (v5) counter flag,
 * (v4, or v5 with counter >= 0) counter. counter < 0 means none. */
void b_header(bytes *b, uint64_t version, int dtype, uint64_t kind, double wd, long long counter);
/* One schema slot: rank, dims, size (the product unless given), flag. */
void b_slot(bytes *b, uint64_t rank, const uint64_t *dims, uint64_t size, uint64_t flag);
/* An entry header and its two payloads filled with m_value and v_value. */
void b_entry(bytes *b, uint64_t id, uint64_t step, uint64_t count, unsigned width, double m_value, double v_value);

/* ---- running the library on bytes ---- */

/* A source that counts the bytes read through it: {inner, 0} with byte_counter_read as its read. */
typedef struct byte_counter {
    ckpt_source inner;
    uint64_t bytes;
} byte_counter;
size_t byte_counter_read(void *ctx, uint64_t offset, void *buf, size_t n);

/* Inspect an exact-size heap copy, so ASan sees any read past the data. */
ckpt_report *inspect_bytes(const void *data, size_t len, unsigned flags);
ckpt_report *load_bytes(const void *data, size_t len, const ckpt_expected *exp);
/* A schema from a compact description: n slots, each "rank dims..." in `shapes`; flags and an
 * optional map (NULL: none; CKPT_NONE entries for none). Flags NULL: a list of shapes. */
ckpt_schema *schema_of(size_t n, const uint64_t *shape_words, const uint8_t *flags, const uint64_t *map);

/* Check the report's error: its exact text and its offset (CKPT_NONE: none). */
void check_error(const ckpt_report *rep, const char *message, uint64_t offset);
/* The bytes of dir/name, NUL-terminated (not counted in *len); NULL when it cannot be opened.
 * The caller frees them. */
uint8_t *read_file_in(const char *dir, const char *name, size_t *len);
#define CHECK_ERROR(rep, msg, off)                                                                                     \
    do {                                                                                                               \
        const char *saved_ = t_current;                                                                                \
        char where_[256];                                                                                              \
        snprintf(where_, sizeof where_, "%s @%s:%d", saved_, __FILE__, __LINE__);                                      \
        t_current = where_;                                                                                            \
        check_error((rep), (msg), (off));                                                                              \
        t_current = saved_;                                                                                            \
    } while (0)

#define F "CUDA Adam checkpoint: "

#endif
