/* The file families (format.md 4 and 6) and the one front door: read the magic, find the
 * family, hand the rest of the source to that family's reader. A family is data: its public
 * descriptor (magic, names, versions, element dtype) and its impl (reader, items, texts). A new
 * family is a descriptor and a reader module; nothing else changes shape (see "Extra families"
 * below). */
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- TLADAMF's items: its moment entries, m and v each ---- */

static size_t adam_item_count(const ckpt_report *rep) { return rep->entries_len; }

static ckpt_item adam_item(ckpt_report *rep, size_t k)
{
    ckpt_entry_info *e = &rep->entries[k];
    return (ckpt_item){e->id,
                       e->count,
                       2,
                       {{"exp_avg", rep->dtype, e->m_offset, e->count, NULL, &e->m},
                        {"exp_avg_sq", rep->dtype, e->v_offset, e->count, NULL, &e->v}},
                       &e->unhealthy};
}

/* ---- the families ---- */

static const struct ckpt_family_impl adam_impl = {
    .parse = ckpt_adam_parse,
    .payloads = 2,
    .item_count = adam_item_count,
    .item = adam_item,
    .unhealthy = ckpt_entry_unhealthy,
    .json_body = ckpt_report_json_adam,
    .judge = ckpt_readers_judge,
    .holds = "optimizer state",
    .hint_not = "a model-state file",
};

static const struct ckpt_family_impl tlsf32b_impl = {
    CKPT_STATE_IMPL,
    .count_mismatch = "checkpoint state-tensor count mismatch",
    .trailing = "trailing bytes after final state tensor",
    .pretty = ckpt_shape_print_list,
};

static const struct ckpt_family_impl tlpf32b_impl = {
    CKPT_STATE_IMPL,
    .count_mismatch = "checkpoint parameter count mismatch",
    .trailing = "trailing bytes after final parameter",
    .pretty = ckpt_shape_print_nested,
};

static const ckpt_family tladamf = {
    CKPT_FAMILY_TLADAMF, "TLADAMF", "CUDA Adam checkpoint", "CUDA Adam checkpoint", 2, 5, CKPT_ROLE_OPTIMIZER,
    CKPT_DTYPE_ANY,      &adam_impl};
static const ckpt_family tlsf32b = {
    CKPT_FAMILY_TLSF32B, "TLSF32B",    "TorchLean float32 state checkpoint", "StateIO", 1, 1, CKPT_ROLE_MODEL,
    CKPT_FLOAT32,        &tlsf32b_impl};
static const ckpt_family tlpf32b = {
    CKPT_FAMILY_TLPF32B, "TLPF32B",    "TorchLean float32 parameter checkpoint", "ParamIO", 2, 2, CKPT_ROLE_MODEL,
    CKPT_FLOAT32,        &tlpf32b_impl};

/* Extra families: a build adds a family without editing this file. Each is a descriptor with
 * its impl, defined in a module of its own (a test's, or a new reader's), named by the build:
 * CMake's CKPT_EXTRA_FAMILY_SOURCES (the modules) and CKPT_EXTRA_FAMILIES (their descriptors'
 * symbols) become -DCKPT_EXTRA_FAMILIES="CKPT_FAMILY(sym) ...", for the native and the wasm
 * build alike (docs/architecture.md, "Adding a family"). */
#ifdef CKPT_EXTRA_FAMILIES
#define CKPT_FAMILY(sym) extern const ckpt_family sym;
CKPT_EXTRA_FAMILIES
#undef CKPT_FAMILY
#define CKPT_FAMILY(sym) &sym,
#else
#define CKPT_EXTRA_FAMILIES
#endif

static const ckpt_family *const families[] = {
    &tladamf, &tlsf32b, &tlpf32b, &ckpt_family_safetensors, &ckpt_family_pytorch, CKPT_EXTRA_FAMILIES};
#define FAMILY_COUNT (sizeof families / sizeof families[0])

size_t ckpt_family_count(void) { return FAMILY_COUNT; }

const ckpt_family *ckpt_family_at(size_t k) { return k < FAMILY_COUNT ? families[k] : NULL; }

const ckpt_family *ckpt_family_get(int id)
{
    for (size_t k = 0; k < FAMILY_COUNT; k++)
        if (families[k]->id == id) return families[k];
    return NULL;
}

bool ckpt_probe_magic(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)size;
    return n >= CKPT_MAGIC_LEN && memcmp(head, f->magic, CKPT_MAGIC_LEN) == 0;
}

/* A family's probe: its own, or the magic comparison (fixed magics are data). */
static bool probe(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    return (f->impl->probe ? f->impl->probe : ckpt_probe_magic)(f, head, n, size);
}

const ckpt_family *ckpt_family_of_magic(const uint8_t magic[7])
{
    for (size_t k = 0; k < FAMILY_COUNT; k++)
        if (!families[k]->impl->probe && ckpt_probe_magic(families[k], magic, CKPT_MAGIC_LEN, CKPT_NONE))
            return families[k];
    return NULL;
}

/* The family whose probe recognises the head, in table order (fixed magics first). */
static const ckpt_family *family_of_head(const uint8_t *head, size_t n, uint64_t size)
{
    for (size_t k = 0; k < FAMILY_COUNT; k++)
        if (probe(families[k], head, n, size)) return families[k];
    return NULL;
}

bool ckpt_family_has_role(const ckpt_family *f, unsigned role) { return f && (f->role & role) != 0; }

/* "TLSF32B or TLPF32B": the magics of the families of one role, from the table. */
static void role_magics(strbuf *sb, unsigned role)
{
    size_t n = 0, k = 0;
    for (size_t j = 0; j < FAMILY_COUNT; j++) n += ckpt_family_has_role(families[j], role);
    for (size_t j = 0; j < FAMILY_COUNT; j++) {
        if (!ckpt_family_has_role(families[j], role)) continue;
        if (k) sb_puts(sb, k + 1 == n ? " or " : ", ");
        sb_puts(sb, families[j]->magic);
        k++;
    }
}

int ckpt_require_schema(const ckpt_report *rep, ckpt_error *err)
{
    if (!rep->family || !rep->family->impl->slots_from_model || rep->slots_bound) return 0;
    return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                     "a %s has no slots of its own: they come from the model it belongs to; give the model "
                     "(--state MODEL)",
                     rep->family->name);
}

int ckpt_require_role(const ckpt_report *rep, unsigned role, ckpt_error *err)
{
    if (ckpt_family_has_role(rep->family, role)) return ckpt_require_schema(rep, err);
    strbuf sb = {0};
    role_magics(&sb, role);
    if (sb.failed) ckpt_fail_oom(err);
    else if (role == CKPT_ROLE_OPTIMIZER)
        ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the first file is not an optimizer checkpoint (%s)",
                  sb.data);
    else
        ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "the second file is not a model-state file (%s)",
                  sb.data);
    sb_free(&sb);
    return err->code;
}

/* Texts before the family is known speak for the destination's family, or for a family whose
 * magic the few bytes there (head, n < 7) begin, or for TLADAMF (what ckptscope is mostly asked
 * about). */
static const ckpt_family *presumed_family(const uint8_t *head, size_t n, int wanted)
{
    if (wanted != CKPT_FAMILY_ANY) return ckpt_family_get(wanted);
    for (size_t k = 0; n > 0 && k < FAMILY_COUNT; k++)
        if (!families[k]->impl->probe && memcmp(head, families[k]->magic, n) == 0) return families[k];
    return families[0];
}

static void report_init(ckpt_report *rep, const ckpt_source *src)
{
    rep->size = src->size;
    rep->dtype = -1;
    rep->tladamf.counter_state = -1;
    rep->schema_offset = rep->tladamf.tags_offset = rep->entries_offset = CKPT_NONE;
    ckpt_error_clear(&rep->error);
}

static void read_magic(ckpt_parse *p, int wanted)
{
    ckpt_reader *r = p->r;
    ckpt_error *err = p->err;
    uint8_t magic[CKPT_MAGIC_LEN];
    if (ckpt_read_exact(r, magic, sizeof magic, err)) {
        if (err->code != CKPT_E_TRUNCATED) return;
        uint64_t got = err->length; /* read_exact copied those bytes into magic */
        const ckpt_family *f = presumed_family(magic, (size_t)got, wanted);
        if (f->name != r->prefix) {
            ckpt_fail(err, f->name, CKPT_E_TRUNCATED, 0, got, "truncated checkpoint (wanted 7 bytes, got %llu)",
                      (unsigned long long)got);
        }
        ckpt_hint_foreign(r, err);
        return;
    }
    /* the reader's first refill holds the head (the magic was read from it) */
    const uint8_t *head = magic;
    size_t n = ckpt_reader_head(r, &head);
    if (n < CKPT_MAGIC_LEN) head = magic, n = CKPT_MAGIC_LEN;
    if (n > CKPT_PROBE_HEAD) n = CKPT_PROBE_HEAD;
    const ckpt_family *f = family_of_head(head, n, r->src->size);
    const ckpt_family *expected = wanted == CKPT_FAMILY_ANY ? f : ckpt_family_get(wanted);
    if (!f || f != expected) {
        ckpt_fail(err, (expected ? expected : families[0])->name, CKPT_E_UNSUPPORTED_FAMILY, 0, CKPT_MAGIC_LEN,
                  "unsupported checkpoint family");
        ckpt_hint_foreign(r, err);
        return;
    }
    p->family = p->rep->family = f;
    p->rep->dtype = f->element_dtype; /* CKPT_DTYPE_ANY (-1, not read) until a header says */
    r->prefix = f->name;
    f->impl->parse(p);
}

ckpt_report *ckpt_parse_file(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt)
{
    return ckpt_parse_file_reader(src, exp, opt, exp ? exp->reader : CKPT_READER_DEFAULT);
}

ckpt_report *ckpt_parse_file_reader(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt,
                                    int reader)
{
    ckpt_report *rep = calloc(1, sizeof *rep);
    if (!rep) return NULL;
    report_init(rep, src);
    ckpt_parse p = {0};
    p.exp = exp;
    p.rep = rep;
    p.err = &rep->error;
    p.rule = ckpt_reader_rule_get(reader);
    if (!p.rule) {
        ckpt_fail(p.err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "unknown TorchLean reader %d", reader);
        return rep;
    }
    if (opt) {
        p.flags = opt->flags;
        p.scan.progress = opt->progress;
        p.scan.progress_ctx = opt->progress_ctx;
    }
    p.scan.start = 0;
    p.scan.total = src->size;
    rep->statistics = (p.flags & CKPT_INSPECT_STATS) != 0;
    int wanted = exp ? exp->family : CKPT_FAMILY_ANY;
    /* format.md 4 step 1: a TLADAMF destination is checked before a byte is read. */
    if (exp && wanted == CKPT_FAMILY_TLADAMF && !ckpt_schema_is_well_formed(exp->schema)) {
        ckpt_fail_malformed_destination(p.err, exp->schema);
        return rep;
    }
    const ckpt_family *first = wanted == CKPT_FAMILY_ANY ? families[0] : ckpt_family_get(wanted);
    if (!first) {
        ckpt_fail(p.err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "unknown file family %d", wanted);
        return rep;
    }
    if (!(p.r = ckpt_reader_with_prefix(src, first->name))) {
        ckpt_fail_oom(p.err);
        return rep;
    }
    read_magic(&p, wanted);
    if (!exp && rep->statistics) ckpt_report_warn_payloads(rep);
    /* format.md 8: TLADAMF's readers, its extension of the report */
    if (!exp && reader == CKPT_READER_DEFAULT && rep->family && rep->family->impl->judge)
        rep->family->impl->judge(src, rep);
    ckpt_reader_free(p.r);
    return rep;
}

ckpt_report *ckpt_inspect(const ckpt_source *src, const ckpt_inspect_options *opt)
{
    return ckpt_parse_file(src, NULL, opt);
}

ckpt_report *ckpt_load(const ckpt_source *src, const ckpt_expected *exp)
{
    if (!exp || !exp->schema) {
        ckpt_report *rep = calloc(1, sizeof *rep);
        if (!rep) return NULL;
        report_init(rep, src);
        ckpt_fail(&rep->error, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a destination needs a parameter schema");
        return rep;
    }
    return ckpt_parse_file(src, exp, NULL);
}
