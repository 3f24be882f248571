/* Reading the TLADAMF family (format.md 4 and 5), the header and the schema: version, dtype,
 * configuration, random counter, ParameterSchema and sharing tags, then the entries
 * (entries.c) and the destination's counter rule. One straight line for both entry
 * points: with a destination (ckpt_load) the trainer's checks in the reference order; without
 * one (ckpt_inspect) the file's own schema is "expected" and the inspection rules of format.md 5
 * are added. Either way the report keeps everything read before an error. */
#include "families/tladamf/tladamf.h"

static const char legacy_warning[] =
    "legacy checkpoint has no random counter; stochastic training cannot be resumed exactly";

/* 7. the destination's own configuration, bit for bit */
static int compare_config(ckpt_parse *p, const ckpt_config *c, int dtype, uint64_t kind_at)
{
    const ckpt_expected *exp = p->exp;
    if (!exp || !exp->config) return 0;
    int exp_dtype = exp->dtype == CKPT_DTYPE_ANY ? dtype : exp->dtype;
    if (ckpt_config_same(exp->config, exp_dtype, c, dtype)) return 0;
    ckpt_fail(p->err, p->family->prefix, CKPT_E_CONFIG_DIFFERS, kind_at, 40,
              "checkpoint belongs to a different optimizer configuration");
    p->err->config_diff = (ckpt_config_diff){true, dtype, exp_dtype, *c, *exp->config};
    return p->err->code;
}

/* `expected`: the destination's schema as this reader sees it (NULL when inspecting). */
static int parse(ckpt_parse *p, const ckpt_schema *expected, const ckpt_reader_rule *rule)
{
    ckpt_reader *r = p->r;
    ckpt_report *rep = p->rep;
    ckpt_error *err = p->err;
    const ckpt_expected *exp = p->exp;
    const char *F = p->family->prefix;
    uint64_t v;

    /* 1. the destination itself (a destination of any family is checked here, after the magic) */
    if (expected && !ckpt_schema_is_well_formed(expected)) return ckpt_fail_malformed_destination(err, expected);

    /* 3. version: the reader's set (format.md 8); a reader with ties refuses v2 for a tied destination first */
    uint64_t version_at = r->pos, version;
    TRY(ckpt_read_u64(r, &version, err));
    rep->has_version = true;
    rep->version = version;
    if (expected && rule->ties && version == 2 && ckpt_schema_has_aliases(expected))
        return ckpt_fail(err, F, CKPT_E_VERSION2_CANNOT_SHARE, version_at, 8,
                         "version 2 cannot restore shared parameter histories");
    if (version < 2 || version > rule->version_max) return ckpt_reader_fail_version(err, rule, version_at, version);

    /* 4. moment dtype: stored in v5, float32 before; the destination's is checked for every
     *    version by the readers that know float64 destinations (a v2-v4 file's dtype is its
     *    version field's doing) */
    int dtype = CKPT_FLOAT32;
    uint64_t dtype_at = version_at;
    if (version == 5) {
        dtype_at = r->pos;
        TRY(ckpt_read_u64(r, &v, err));
        if (v > 1) return ckpt_fail(err, F, CKPT_E_UNSUPPORTED_DTYPE, dtype_at, 8, "unsupported moment dtype");
        dtype = (int)v;
    }
    rep->dtype = dtype;
    if (rule->float64 && exp && exp->dtype != CKPT_DTYPE_ANY && exp->dtype != dtype)
        return ckpt_fail(err, F, CKPT_E_DTYPE_DIFFERS, dtype_at, 8, "moment dtype differs from the destination");

    /* 5. configuration: the tag, then all four floats, then validation by the reader's epsilon rule */
    uint64_t kind_at = r->pos;
    ckpt_config c;
    TRY(ckpt_read_u64(r, &c.kind, err));
    if (c.kind > 1)
        return ckpt_fail(err, F, CKPT_E_INVALID_OPTIMIZER_TAG, kind_at, 8, "invalid optimizer tag %llu",
                         (unsigned long long)c.kind);
    TRY(ckpt_read_u64(r, &c.beta1, err));
    TRY(ckpt_read_u64(r, &c.beta2, err));
    TRY(ckpt_read_u64(r, &c.epsilon, err));
    TRY(ckpt_read_u64(r, &c.weight_decay, err));
    rep->has_config = true;
    rep->config = c;
    TRY(ckpt_config_validate_rule(&c, dtype, rule->epsilon, kind_at, err));

    /* 6. random counter: always in v4, behind a flag in v5, never in v2/v3 */
    bool has_counter = version == 4;
    uint64_t counter_at = r->pos;
    if (version == 5) {
        TRY(ckpt_read_u64(r, &v, err));
        if (v > 1) return ckpt_fail(err, F, CKPT_E_INVALID_COUNTER_FLAG, counter_at, 8, "invalid random-counter flag");
        has_counter = v == 1;
    }
    if (has_counter) TRY(ckpt_read_u64(r, &rep->tladamf.random_counter, err));
    rep->tladamf.counter_state = has_counter;
    if (!exp && !has_counter) ckpt_report_warn(rep, "%s: %s", F, legacy_warning);

    /* 7. the destination's configuration, before the schema (the oldest readers: after the file) */
    if (!rule->config_after_file) TRY(compare_config(p, &c, dtype, kind_at));

    /* 8. the parameter schema, then (v >= 3) the sharing tags */
    if (!(rep->schema = ckpt_schema_empty())) return ckpt_fail_oom(err);
    rep->schema_offset = r->pos;
    if (ckpt_schema_read(r, expected, rep->schema, &rep->schema_declared_count, err)) {
        if (rule->list_shapes) ckpt_reader_list_shapes(err, rep->schema, expected);
        ckpt_drop_layout_if_oom(rep);
        return err->code;
    }
    if (version >= 3) {
        rep->tladamf.tags_offset = r->pos;
        TRY(ckpt_schema_read_tags(r, expected, rep->schema, err));
        rep->schema_complete = true;
        if (!exp) TRY(ckpt_schema_check_sharing(rep->schema, F, rep->tladamf.tags_offset, err));
    } else {
        rep->schema_complete = true; /* v2: the implied map, always well formed */
    }

    /* 9.-11. entries and the end of the file */
    TRY(ckpt_adam_parse_entries(p, expected ? expected : rep->schema, dtype, rule));

    /* 12. the random counter against the destination, for the readers that know one */
    if (exp && rule->counter && has_counter && exp->keeps_random_counter == 0)
        return ckpt_fail(err, F, CKPT_E_NO_COUNTER_REFERENCE, counter_at, 8,
                         "destination has no random-counter reference");
    if (rule->config_after_file) TRY(compare_config(p, &c, dtype, kind_at));
    if (exp && rule->counter && !has_counter && exp->keeps_random_counter == 1)
        ckpt_report_warn(rep, "%s: %s", F, legacy_warning);
    return 0;
}

int ckpt_adam_parse(ckpt_parse *p)
{
    const ckpt_schema *expected = p->exp ? p->exp->schema : NULL;
    const ckpt_reader_rule *rule = ckpt_reader_rule_get(p->reader); /* the front door checked the id */
    if (!expected || rule->ties || !ckpt_schema_has_map(expected)) return parse(p, expected, rule);
    /* A reader without storage sharing has no tied destination: it sees every trainable slot as
     * its own owner (format.md 8, readers v2 and v2-lists). */
    ckpt_schema *untied = ckpt_schema_untied(expected);
    if (!untied) return ckpt_fail_oom(p->err);
    if (ckpt_schema_has_aliases(expected))
        ckpt_report_warn(p->rep, "this TorchLean reader has no storage sharing: the layout's ties are ignored");
    int rc = parse(p, untied, rule);
    ckpt_schema_free(untied);
    return rc;
}
