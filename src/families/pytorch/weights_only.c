/* torch.load(weights_only=True)'s verdict over a whole file (objects.h): all its pickles, a legacy
 * file's five, with the names they use each listed once in file order. */
#include "families/pytorch/values.h"

/* ---- weights_only over all the file's pickles (a legacy file has five) ---- */

static size_t pickles_of(const ckpt_torch *t, const ckpt_pickle *out[5])
{
    size_t n = 0;
    if (t->legacy)
        for (int k = 0; k < 3; k++) out[n++] = t->legacy_pickles[k];
    out[n++] = t->pickle;
    if (t->legacy) out[n++] = t->legacy_pickles[3];
    return n;
}

const ckpt_wo_refusal *ckpt_torch_wo_refusal(const ckpt_torch *t, int v, const ckpt_pickle **in)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    for (size_t k = 0; k < n && k < t->wo_len; k++)
        if (t->wo[k].by[v].check) {
            if (in) *in = ps[k];
            return &t->wo[k].by[v];
        }
    return NULL;
}

bool ckpt_torch_weights_only(const ckpt_torch *t) { return !ckpt_torch_wo_refusal(t, CKPT_TV_2_14, NULL); }

/* The ranges of torch versions, in order: a release read (`source`), or the releases between two,
 * judged by the models that bound them (globals.h): `least` refuses whatever any release of the
 * range may refuse, `most` takes whatever any may take. Where the two agree, every release of
 * the range does too; where they differ, ckptscope cannot tell which release does what. */
static const struct {
    const char *torch, *source;
    int version;               /* a release read; -1 for a range between */
    int least, most;           /* the bounds of a range between */
    const char *older, *newer; /* the bounds, as the reason names them */
} ranges[] = {
    {"1.13", "1.13.1", CKPT_TV_1_13, 0, 0, NULL, NULL},
    {"2.0 to 2.5", NULL, -1, CKPT_TV_2_0_LEAST, CKPT_TV_2_5_MOST, "1.13 with BINFLOAT", "2.6"},
    {"2.6", "2.6.0", CKPT_TV_2_6, 0, 0, NULL, NULL},
    {"2.7 to 2.13", NULL, -1, CKPT_TV_2_6, CKPT_TV_2_14, "2.6", "2.14"},
    {"2.14 and later", "2.14.1", CKPT_TV_2_14, 0, 0, NULL, NULL},
};

static const char *const check_names[] = {
    [CKPT_WO_TAKES] = "takes",     [CKPT_WO_OPCODE] = "opcode", [CKPT_WO_GLOBAL] = "global",
    [CKPT_WO_BLOCKED] = "blocked", [CKPT_WO_NJT] = "global",    [CKPT_WO_DTENSOR] = "global",
    [CKPT_WO_REDUCE] = "reduce",   [CKPT_WO_NEWOBJ] = "newobj", [CKPT_WO_NO_NEW] = "newobj",
    [CKPT_WO_BUILD] = "build",     [CKPT_WO_APPEND] = "append", [CKPT_WO_SETITEM] = "setitem",
    [CKPT_WO_ASSIGN] = "setitem",
};

/* A range's reason, in ckptscope's words (the releases between word theirs differently): both
 * bounds refuse the file, or one does (`split`) and ckptscope cannot tell which releases do. */
static void range_reason(strbuf *sb, size_t k, const ckpt_pickle *p, const ckpt_wo_refusal *least,
                         const ckpt_wo_refusal *most, bool split)
{
    ckpt_torch_wo_subject(sb, p, most ? most : least);
    if (split) {
        sb_printf(sb, ": %s refuses it, %s takes the file: which releases between take it is not known",
                  least ? ranges[k].older : ranges[k].newer, least ? ranges[k].newer : ranges[k].older);
        return;
    }
    sb_printf(sb, ": refused by both %s and %s, the bounds of this range", ranges[k].older, ranges[k].newer);
    if (least->at != most->at)
        sb_printf(sb, "; %s stops earlier, at %s at byte %llu", ranges[k].older, ckpt_pickle_op_name(least->op),
                  (unsigned long long)least->at);
}

void ckpt_torch_weights_only_json(strbuf *sb, const ckpt_torch *t)
{
    sb_putc(sb, '[');
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        if (k) sb_putc(sb, ',');
        sb_puts(sb, "{\"torch\":");
        j_string(sb, ranges[k].torch);
        sb_puts(sb, ",\"source\":");
        if (ranges[k].source) j_string(sb, ranges[k].source);
        else sb_puts(sb, "null");
        const ckpt_pickle *in = NULL;
        const ckpt_wo_refusal *r;
        bool split = false;
        strbuf why = {0};
        if (ranges[k].version >= 0) {
            r = ckpt_torch_wo_refusal(t, ranges[k].version, &in);
            sb_printf(sb, ",\"loads\":%s", r ? "false" : "true");
            if (r) ckpt_torch_wo_reason(&why, in, r, ranges[k].version);
        } else {
            const ckpt_pickle *in_least = NULL, *in_most = NULL;
            const ckpt_wo_refusal *least = ckpt_torch_wo_refusal(t, ranges[k].least, &in_least);
            const ckpt_wo_refusal *most = ckpt_torch_wo_refusal(t, ranges[k].most, &in_most);
            split = !least != !most;
            /* both refuse: where every release of the range has stopped (the newer bound's stop);
             * split: where the refusing bound stops */
            r = most ? most : least;
            in = most ? in_most : in_least;
            sb_printf(sb, ",\"loads\":%s", split ? "null" : r ? "false" : "true");
            if (r) range_reason(&why, k, in, least, most, split);
        }
        if (!r) {
            sb_puts(sb,
                    ",\"opcode\":null,\"check\":null,\"member\":null,\"byte\":null,\"offset\":null,\"reason\":null}");
            sb_free(&why);
            continue;
        }
        sb_printf(sb, ",\"opcode\":\"%s\",\"check\":\"%s\",\"member\":", ckpt_pickle_op_name(r->op),
                  check_names[r->check]);
        j_string(sb, t->member ? t->member : "");
        /* a zip's pickle counts from its own first byte; a legacy file's from the file's */
        sb_printf(sb, ",\"byte\":%llu,\"offset\":%llu,\"reason\":", (unsigned long long)r->at,
                  (unsigned long long)(t->legacy ? r->at : t->pickle_at + r->at));
        if (why.failed) sb->failed = true;
        j_string(sb, why.data ? why.data : "");
        sb_free(&why);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

/* The pickles' names as JSON strings, each once, in file order, joined by sep. */
static void globals_merged(strbuf *sb, const ckpt_torch *t, bool refused, const char *sep)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    strbuf all = {0};
    size_t *spans = NULL, count = 0, cap = 0; /* start, length pairs of the names kept */
    size_t *table = NULL, tcap = 0;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        strbuf one = {0};
        ckpt_torch_pickle_globals_json(&one, ps[k], refused);
        if (one.failed) sb->failed = true;
        /* ["a","b"]: the strings, escapes kept */
        for (size_t i = 0; one.data && i < one.len; i++) {
            if (one.data[i] != '"') continue;
            size_t j = i + 1;
            while (j < one.len && one.data[j] != '"') j += one.data[j] == '\\' ? 2 : 1;
            if (j >= one.len) break;
            const char *e = one.data + i;
            size_t elen = j + 1 - i;
            i = j;
            if (2 * (count + 1) > tcap) {
                size_t nc = tcap ? 2 * tcap : 64;
                size_t *nt = malloc(nc * sizeof *nt);
                if (!nt) {
                    sb->failed = true;
                    break;
                }
                for (size_t x = 0; x < nc; x++) nt[x] = SIZE_MAX;
                for (size_t q = 0; q < count; q++) {
                    size_t h = (size_t)torch_hash_bytes(all.data + spans[2 * q], spans[2 * q + 1]) & (nc - 1);
                    while (nt[h] != SIZE_MAX) h = (h + 1) & (nc - 1);
                    nt[h] = q;
                }
                free(table);
                table = nt;
                tcap = nc;
            }
            size_t h = (size_t)torch_hash_bytes(e, elen) & (tcap - 1);
            bool dup = false;
            for (; table[h] != SIZE_MAX; h = (h + 1) & (tcap - 1))
                if (spans[2 * table[h] + 1] == elen && !memcmp(all.data + spans[2 * table[h]], e, elen)) {
                    dup = true;
                    break;
                }
            if (dup) continue;
            if (!ckpt_grow((void **)&spans, &cap, 2 * (count + 1), sizeof *spans)) {
                sb->failed = true;
                break;
            }
            spans[2 * count] = all.len;
            spans[2 * count + 1] = elen;
            sb_put(&all, e, elen);
            table[h] = count++;
            if (!first) sb_puts(sb, sep);
            sb_put(sb, e, elen);
            first = false;
        }
        sb_free(&one);
    }
    if (all.failed) sb->failed = true;
    sb_free(&all);
    free(spans);
    free(table);
}

void ckpt_torch_globals_json(strbuf *sb, const ckpt_torch *t, bool refused)
{
    sb_putc(sb, '[');
    globals_merged(sb, t, refused, ",");
    sb_putc(sb, ']');
}

void ckpt_torch_weights_only_warning(strbuf *sb, const ckpt_torch *t)
{
    strbuf names = {0};
    globals_merged(&names, t, true, ", ");
    if (names.len) {
        sb_puts(sb, "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: ");
        sb_put(sb, names.data, names.len);
    }
    if (names.failed) sb->failed = true;
    sb_free(&names);
}
