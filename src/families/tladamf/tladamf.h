/* The TLADAMF family (format.md 3, 4, 5, 8), private to its folder and to the writers that
 * convert into it: TorchLean's CUDA Adam checkpoint, its schema bytes, its configuration rules,
 * its entries, its readers and its writer. */
#ifndef CKPT_TLADAMF_H
#define CKPT_TLADAMF_H

#include "core/core.h"

/* The family's text prefix: its descriptor's and every text of its reader and writer. */
#define CKPT_TLADAMF_PREFIX "CUDA Adam checkpoint"
extern const ckpt_family ckpt_family_tladamf; /* family.c */

/* ---- schema_io.c: the seed's schema through a handle ---- */
/* Read the schema into `file` (a fresh empty schema), comparing with `expected` when it is
 * not NULL (readAndCheck), else checking sizes against products (format.md 5). */
int ckpt_schema_read(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, uint64_t *declared_count,
                     ckpt_error *err);
/* Read the n tags; compare with expected's tags when given; set file's map from them. */
int ckpt_schema_read_tags(ckpt_reader *r, const ckpt_schema *expected, ckpt_schema *file, ckpt_error *err);
/* format.md 1: every size must fit in a u64 field to be written (CKPT_E_VALUE_TOO_LARGE). */
int ckpt_schema_check_sizes_fit(const ckpt_schema *s, ckpt_error *err);
/* The malformed-destination error (format.md 4 step 1), with the slot and reason as its hint. */
int ckpt_fail_malformed_destination(ckpt_error *err, const ckpt_schema *s);

/* ---- validate.c: the reference's configuration checks (format.md 4, 8) ---- */
int ckpt_config_validate_at(const ckpt_config *c, ckpt_dtype dtype, uint64_t kind_offset, ckpt_error *err);
/* Validation with a reader's epsilon rule (format.md 8: E64, E32, ED). */
int ckpt_config_validate_rule(const ckpt_config *c, ckpt_dtype dtype, int epsilon_rule, uint64_t kind_offset,
                              ckpt_error *err);

/* ---- readers.c: TorchLean's readers (format.md 8) ---- */
/* The texts that differ by reader, each written once. */
int ckpt_reader_fail_version(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t version);
int ckpt_reader_fail_not_owner(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t length,
                               uint64_t id);
/* Does the entry's slot own optimizer state, as this reader decides it? */
bool ckpt_reader_owns(const ckpt_reader_rule *rule, const ckpt_schema *layout, uint64_t id);
uint64_t ckpt_reader_entry_count(const ckpt_reader_rule *rule, const ckpt_schema *layout);
/* A reader without storage sharing sees a tied destination untied: every trainable slot its
 * own owner. NULL when out of memory. */
ckpt_schema *ckpt_schema_untied(const ckpt_schema *s);
/* A shape-mismatch error reworded with Lean lists (the v2-lists reader's schema holds lists). */
void ckpt_reader_list_shapes(ckpt_error *err, const ckpt_schema *file, const ckpt_schema *expected);
/* After an inspection: every reader's verdict, into rep->tladamf.readers (one parse, and a second only
 * when the first stopped at an epsilon that an older reader accepts). */
void ckpt_readers_judge(const ckpt_source *src, ckpt_report *rep);
void ckpt_readers_free(ckpt_report *rep);
void j_readers(strbuf *sb, const ckpt_report *rep);

/* ---- entries.c: the entry checks of reading and writing, in one place ---- */
typedef struct ckpt_entry_check {
    uint64_t id, step, count;
    bool duplicate;                    /* the id was seen before */
    uint64_t id_at, step_at, count_at; /* field offsets, CKPT_NONE for in-memory input */
    bool on_read;                      /* the reader's texts: the size mismatch says both sizes */
} ckpt_entry_check;
/* write.c: the header fields 1-6 of format.md 4, for the writer and convert. */
int ckpt_adam_write_header(uint64_t version, int dtype, const ckpt_config *c, bool has_counter, uint64_t counter,
                           const ckpt_sink *out, ckpt_error *err);
int ckpt_adam_check_entry(const ckpt_schema *layout, const ckpt_reader_rule *rule, const ckpt_entry_check *e,
                          ckpt_error *err);

/* ---- header.c, entries.c: the reader, called after the magic matched ---- */
int ckpt_adam_parse(ckpt_parse *p);
int ckpt_adam_parse_entries(ckpt_parse *p, const ckpt_schema *layout, int dtype, const ckpt_reader_rule *rule);

#endif
