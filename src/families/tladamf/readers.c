/* TorchLean's public readers of TLADAMF (format.md 8) as a table: each row says which versions
 * the reader reads and how its checks and texts differ from the newest reader's (format.md 4).
 * The load path (header.c, entries.c) consults the row; nothing else names a reader.
 * Verified against the public sources named in the `source` column (see docs/format.md 8). */
#include "families/tladamf/tladamf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const ckpt_reader_rule rules[CKPT_READER_COUNT] = {
    /* id, name, version_max, versions, epsilon, config_after_file, trainable_count, counter,
     * list_shapes, ties, float64, source */
    {CKPT_READER_V2, "v2", 2, "2", CKPT_EPSILON_E64, true, true, false, false, false, false,
     "lean-dojo/TorchLean 4ec1f62"},
    {CKPT_READER_V2_LISTS, "v2-lists", 2, "2", CKPT_EPSILON_E64, true, true, false, true, false, false,
     "NicolasRouquette/TorchLean b2a2184"},
    {CKPT_READER_V2_V3, "v2-v3", 3, "2 or 3", CKPT_EPSILON_E64, false, false, false, false, true, false,
     "srirampc/TorchLean a351909"},
    {CKPT_READER_V2_V4, "v2-v4", 4, "2, 3, or 4", CKPT_EPSILON_E64, false, false, true, false, true, false,
     "srirampc/TorchLean 3826ddc"},
    {CKPT_READER_V2_V4_F32, "v2-v4-f32", 4, "2, 3, or 4", CKPT_EPSILON_E32, false, false, true, false, true, false,
     "lean-dojo/TorchLean 25576b9, srirampc/TorchLean 3447b74"},
    {CKPT_READER_V2_V5, "v2-v5", 5, "2 through 5", CKPT_EPSILON_ED, false, false, true, false, true, true,
     "the newest CudaAdam.lean (readAdamFormat)"},
};

const ckpt_reader_rule *ckpt_reader_rule_get(int id)
{
    if (id == CKPT_READER_DEFAULT) id = CKPT_READER_V2_V5;
    return id >= 1 && id <= CKPT_READER_COUNT ? &rules[id - 1] : NULL;
}

int ckpt_reader_by_name(const char *name)
{
    for (int k = 0; name && k < CKPT_READER_COUNT; k++)
        if (!strcmp(rules[k].name, name)) return rules[k].id;
    return -1;
}

char *ckpt_reader_names_json(void)
{
    strbuf sb = {0};
    for (int k = 0; k < CKPT_READER_COUNT; k++) {
        sb_puts(&sb, k ? "," : "[");
        j_string(&sb, rules[k].name);
    }
    sb_putc(&sb, ']');
    return sb_take(&sb);
}

int ckpt_reader_fail_version(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t version)
{
    ckpt_fail(err, CKPT_TLADAMF_PREFIX, CKPT_E_UNSUPPORTED_VERSION, offset, 8,
              "unsupported format version %llu; expected %s", (unsigned long long)version, rule->versions);
    if (version >= 2 && version <= 5) {
        char hint[160];
        snprintf(hint, sizeof hint,
                 "TorchLean reader %s reads versions %s: `ckptscope convert --for %s` rewrites the file for it "
                 "when nothing is lost",
                 rule->name, rule->versions, rule->name);
        ckpt_set_hint(err, hint);
    } else if (version > 5 && version < 1000)
        ckpt_set_hint(err, "this file may come from a newer TorchLean; ckptscope reads versions 2 through 5");
    else
        ckpt_set_hint(
            err, "the version field holds an implausible value: the file is corrupted or not a TLADAMF checkpoint");
    return err->code;
}

int ckpt_reader_fail_not_owner(ckpt_error *err, const ckpt_reader_rule *rule, uint64_t offset, uint64_t length,
                               uint64_t id)
{
    unsigned long long uid = id;
    if (rule->trainable_count)
        return ckpt_fail_at(err, CKPT_TLADAMF_PREFIX, CKPT_E_NOT_OWNER, offset, length, id,
                            "state exists for frozen parameter %llu", uid);
    return ckpt_fail_at(err, CKPT_TLADAMF_PREFIX, CKPT_E_NOT_OWNER, offset, length, id,
                        "parameter %llu does not own optimizer state", uid);
}

bool ckpt_reader_owns(const ckpt_reader_rule *rule, const ckpt_schema *layout, uint64_t id)
{
    /* the oldest readers ask requiresGrad[id]; the others whether id is a representative */
    return rule->trainable_count ? ckpt_schema_requires_grad(layout, (size_t)id)
                                 : ckpt_schema_is_representative(layout, id);
}

uint64_t ckpt_reader_entry_count(const ckpt_reader_rule *rule, const ckpt_schema *layout)
{
    return rule->trainable_count ? ckpt_schema_trainable_count(layout) : ckpt_schema_optimizer_state_count(layout);
}

ckpt_schema *ckpt_schema_untied(const ckpt_schema *s)
{
    size_t n = s->n;
    uint64_t *ranks = malloc((n ? n : 1) * sizeof *ranks);
    if (!ranks) return NULL;
    for (size_t i = 0; i < n; i++) ranks[i] = ckpt_schema_rank(s, i);
    ckpt_schema *u = ckpt_schema_new(n, ranks, s->dims, s->flag_count, s->requires_grad, NULL, 0);
    free(ranks);
    return u;
}

void ckpt_reader_list_shapes(ckpt_error *err, const ckpt_schema *file, const ckpt_schema *expected)
{
    size_t i = (size_t)err->slot;
    if (err->code != CKPT_E_SHAPE_MISMATCH || i >= ckpt_schema_count(file) || i >= ckpt_schema_count(expected)) return;
    strbuf a = {0}, b = {0};
    ckpt_shape_print_list(&a, ckpt_schema_dims(file, i), ckpt_schema_rank(file, i));
    ckpt_shape_print_list(&b, ckpt_schema_dims(expected, i), ckpt_schema_rank(expected, i));
    if (!a.failed && !b.failed) {
        ckpt_error e = *err; /* keep offset, length, slot */
        ckpt_fail_at(err, CKPT_TLADAMF_PREFIX, CKPT_E_SHAPE_MISMATCH, e.offset, e.length, e.slot,
                     "shape mismatch for parameter %zu (file=%s, expected=%s)", i, a.data, b.data);
    }
    sb_free(&a);
    sb_free(&b);
}

/* ---- without a destination: which readers can read the file at all ---- */

static void copy_error(ckpt_error *dst, const ckpt_error *src)
{
    ckpt_error_clear(dst);
    if (!src->code) return;
    ckpt_fail_at(dst, NULL, src->code, src->offset, src->length, src->slot, "%s", src->message ? src->message : "");
    dst->length = src->length;
    dst->subject = src->subject;
    dst->config_diff = src->config_diff;
    if (src->hint) ckpt_set_hint(dst, src->hint);
}

/* The readers differ in checks, not in reading: one parse says where the file breaks, and each
 * reader's verdict is its own version set and epsilon rule over the header read, then the rest
 * of the file's verdict in its words. Only when the parse stopped at the newest reader's epsilon
 * (which the E64 readers may accept) is the rest read again, once, under E64. */
void ckpt_readers_judge(const ckpt_source *src, ckpt_report *rep)
{
    if (!rep->family || rep->family->id != CKPT_FAMILY_TLADAMF || rep->tladamf.readers) return;
    if (!(rep->tladamf.readers = calloc(CKPT_READER_COUNT, sizeof *rep->tladamf.readers))) return;
    ckpt_report *lenient = NULL;
    const ckpt_error *rest = &rep->error;
    if (rep->error.code == CKPT_E_INVALID_EPSILON && rep->version <= 4) {
        lenient = ckpt_parse_file_reader(src, NULL, NULL, CKPT_READER_V2_V4); /* E64, versions 2 to 4 */
        if (lenient) rest = &lenient->error;
    }
    uint64_t kind_at = rep->version == 5 ? 23 : 15;
    for (int id = 1; id <= CKPT_READER_COUNT; id++) {
        const ckpt_reader_rule *rule = ckpt_reader_rule_get(id);
        ckpt_reader_verdict *v = &rep->tladamf.readers[id - 1];
        ckpt_error_clear(&v->error);
        if (!rep->has_version) copy_error(&v->error, &rep->error);
        else if (rep->version < 2 || rep->version > rule->version_max)
            ckpt_reader_fail_version(&v->error, rule, 7, rep->version);
        else if (rep->has_config &&
                 ckpt_config_validate_rule(&rep->config, rep->dtype, rule->epsilon, kind_at, &v->error)) {
        } else if (rest->code == CKPT_E_NOT_OWNER)
            ckpt_reader_fail_not_owner(&v->error, rule, rest->offset, rest->length, rest->slot);
        else copy_error(&v->error, rest);
        v->reads = v->error.code == 0;
    }
    ckpt_report_free(lenient);
}

void ckpt_readers_free(ckpt_report *rep)
{
    if (!rep->tladamf.readers) return;
    for (int k = 0; k < CKPT_READER_COUNT; k++) ckpt_error_clear(&rep->tladamf.readers[k].error);
    free(rep->tladamf.readers);
    rep->tladamf.readers = NULL;
}

void j_readers(strbuf *sb, const ckpt_report *rep)
{
    if (!rep->tladamf.readers) {
        sb_puts(sb, "null");
        return;
    }
    for (int k = 0; k < CKPT_READER_COUNT; k++) {
        sb_puts(sb, k ? ",\"" : "{\"");
        sb_puts(sb, rules[k].name);
        sb_puts(sb, rep->tladamf.readers[k].reads ? "\":{\"reads\":true,\"error\":" : "\":{\"reads\":false,\"error\":");
        j_error(sb, &rep->tladamf.readers[k].error);
        sb_putc(sb, '}');
    }
    sb_putc(sb, '}');
}

char *ckpt_readers_json(const ckpt_report *rep)
{
    strbuf sb = {0};
    j_readers(&sb, rep);
    return sb_take(&sb);
}
