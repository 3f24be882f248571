/* The family registry and the one front door: read the head, find the family whose probe knows
 * it, hand the rest of the source to that family's reader. A family is data: its public
 * descriptor (magic, names, versions, element dtype) and its impl (reader, items, texts), in a
 * folder of families/. The build lists the families (CMakeLists.txt: CKPT_FAMILIES, in the front
 * door's order, and a build's extra families after them): nothing here names one. */
#include "core/family.h"
#include "core/hints.h"
#include "core/report.h"

#include <stdlib.h>
#include <string.h>

/* The families, as the build names them: each a descriptor with its impl, defined in a folder of
 * families/ (or a module of a build's extra families: a test's, or a new reader's). CMake's
 * CKPT_FAMILIES and CKPT_EXTRA_FAMILIES (their descriptors' symbols) become
 * -DCKPT_FAMILIES="CKPT_FAMILY(sym) ..." for this file, in the native and the wasm build alike
 * (docs/architecture.md, "Adding a family"). The first is the family texts speak for before one
 * is known. */
#ifndef CKPT_FAMILIES
#error "the build names the families: -DCKPT_FAMILIES=\"CKPT_FAMILY(sym) ...\" (CMakeLists.txt)"
#endif
#define CKPT_FAMILY(sym) extern const ckpt_family sym;
CKPT_FAMILIES
#undef CKPT_FAMILY
#define CKPT_FAMILY(sym) &sym,
static const ckpt_family *const families[] = {CKPT_FAMILIES};
#undef CKPT_FAMILY
#define FAMILY_COUNT (sizeof families / sizeof families[0])

size_t ckpt_family_count(void) { return FAMILY_COUNT; }

const ckpt_family *ckpt_family_at(size_t k) { return k < FAMILY_COUNT ? families[k] : NULL; }

const ckpt_family *ckpt_family_get(int id)
{
    for (size_t k = 0; k < FAMILY_COUNT; k++)
        if (families[k]->id == id) return families[k];
    return NULL;
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
    if (rep->family && rep->family->impl->unread)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0, "%s", rep->family->impl->unread);
    if (!rep->family || !rep->family->impl->bind || rep->slots_bound) return 0;
    return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                     "a %s has no slots of its own: they come from the model it belongs to; give the model "
                     "(--state MODEL)",
                     rep->family->name);
}

int ckpt_require_items(const ckpt_report *rep, ckpt_error *err)
{
    if (rep->family && rep->family->impl->unread && rep->family->impl->items_whole &&
        rep->family->impl->items_whole(rep))
        return 0;
    if (rep->family && rep->family->impl->why_not_whole && rep->family->impl->why_not_whole(rep, err)) return -1;
    return ckpt_require_schema(rep, err);
}

int ckpt_require_role(const ckpt_report *rep, unsigned role, ckpt_error *err)
{
    /* a model whose slots its pairing picks (a torch.save state dict: floating tensors less
     * BatchNorm's buffers, format.md 10.4) is read as slots once paired */
    if (ckpt_family_has_role(rep->family, role) && role == CKPT_ROLE_MODEL && rep->family->impl->bind &&
        !rep->slots_bound)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "a %s model's slots are the tensors its pairing with the optimizer picks: pair the two first "
                         "(check OPT --state MODEL, or pair(optimizer, model))",
                         rep->family->name);
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

/* A file no family reads, inspected (no destination whose family's words would apply): said in
 * words naming what ckptscope reads, from the table ("not a TLADAMF, TLSF32B, ... or safetensors
 * file"), not in one family's text. */
static void fail_unknown(ckpt_error *err, uint64_t length)
{
    strbuf sb = {0};
    sb_puts(&sb, "unsupported checkpoint family: not a ");
    for (size_t k = 0; k < FAMILY_COUNT; k++) {
        if (k) sb_puts(&sb, k + 1 == FAMILY_COUNT ? " or " : ", ");
        sb_puts(&sb, families[k]->magic);
    }
    sb_puts(&sb, " file");
    if (sb.failed) ckpt_fail_oom(err);
    else ckpt_fail(err, NULL, CKPT_E_UNSUPPORTED_FAMILY, 0, length, "%s", sb.data);
    sb_free(&sb);
}

/* Do the n bytes begin a fixed magic (a file cut in its magic)? */
static bool begins_a_magic(const uint8_t *head, size_t n)
{
    for (size_t k = 0; k < FAMILY_COUNT; k++)
        if (!families[k]->impl->probe && memcmp(head, families[k]->magic, n) == 0) return true;
    return false;
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
        if (!p->exp && got > 0 && !begins_a_magic(magic, (size_t)got)) {
            fail_unknown(err, got);
            ckpt_hint_foreign(r, families, FAMILY_COUNT, err);
            return;
        }
        const ckpt_family *f = presumed_family(magic, (size_t)got, wanted);
        if (f->name != r->prefix) {
            ckpt_fail(err, f->name, CKPT_E_TRUNCATED, 0, got, "truncated checkpoint (wanted 7 bytes, got %llu)",
                      (unsigned long long)got);
        }
        ckpt_hint_foreign(r, families, FAMILY_COUNT, err);
        return;
    }
    /* the reader's first refill holds the head (the magic was read from it) */
    const uint8_t *head = magic;
    size_t n = ckpt_reader_head(r, &head);
    if (n < CKPT_MAGIC_LEN) head = magic, n = CKPT_MAGIC_LEN;
    if (n > CKPT_PROBE_HEAD) n = CKPT_PROBE_HEAD;
    const ckpt_family *f = family_of_head(head, n, r->src->size);
    const ckpt_family *expected = wanted == CKPT_FAMILY_ANY ? f : ckpt_family_get(wanted);
    if (!f && !p->exp) {
        fail_unknown(err, CKPT_MAGIC_LEN);
        ckpt_hint_foreign(r, families, FAMILY_COUNT, err);
        return;
    }
    if (!f || f != expected) {
        ckpt_fail(err, (expected ? expected : families[0])->name, CKPT_E_UNSUPPORTED_FAMILY, 0, CKPT_MAGIC_LEN,
                  "unsupported checkpoint family");
        ckpt_hint_foreign(r, families, FAMILY_COUNT, err);
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
    return ckpt_parse_file_named(src, exp, opt, reader, NULL);
}

ckpt_report *ckpt_parse_file_named(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt,
                                   int reader, const char *name)
{
    ckpt_report *rep = calloc(1, sizeof *rep);
    if (!rep) return NULL;
    report_init(rep, src);
    ckpt_parse p = {0};
    p.exp = exp;
    p.rep = rep;
    p.err = &rep->error;
    p.reader = reader;
    p.name = name;
    if (reader < CKPT_READER_DEFAULT || reader > CKPT_READER_COUNT) {
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
    const ckpt_family *first = wanted == CKPT_FAMILY_ANY ? families[0] : ckpt_family_get(wanted);
    /* a destination its family checks before a byte is read (format.md 4 step 1) */
    if (exp && wanted != CKPT_FAMILY_ANY && first && first->impl->check_expected &&
        first->impl->check_expected(exp, p.err))
        return rep;
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
    /* the family's own verdicts (TLADAMF: its readers', format.md 8) */
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
