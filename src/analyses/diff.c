/* Every difference between two layouts (a checkpoint's, a state file's shapes, or a layout
 * JSON): slot count, ranks, shapes, sizes, trainability, sharing, dtype, configuration and
 * random-counter status. What one side does not state is not compared. Two checkpoints whose
 * families name their slots (DeepSpeed, DCP) and whose names differ are compared by name. */
#include "analyses/analyses.h"
#include "core/new_model.h"

#include <stdlib.h>

typedef struct differ {
    strbuf *sb;
    size_t count;
    char *first; /* the first difference's message (ckpt_diff_first_message) */
} differ;

/* Opens {"field","slot","a": ... the caller writes a, then b via mid(), then ends with text. */
static void open_diff(differ *d, const char *field, uint64_t slot)
{
    sb_printf(d->sb, "%s{\"field\":\"%s\",\"slot\":", d->count++ ? "," : "", field);
    j_slot(d->sb, slot);
    sb_puts(d->sb, ",\"a\":");
}

/* The closing "text" (the difference in words) and "message" (with the slot named). */
static void close_diff(differ *d, uint64_t slot, strbuf *text)
{
    sb_puts(d->sb, ",\"text\":");
    j_string(d->sb, text->failed || !text->data ? "" : text->data);
    sb_puts(d->sb, ",\"message\":");
    strbuf m = {0};
    if (slot != CKPT_NONE) sb_printf(&m, "parameter %llu: ", (unsigned long long)slot);
    sb_puts(&m, text->failed || !text->data ? "" : text->data);
    j_string(d->sb, m.failed ? "" : m.data);
    if (!d->first && !m.failed) d->first = sb_take(&m);
    sb_free(&m);
    sb_puts(d->sb, "}");
    text->len = 0;
    if (text->data) text->data[0] = '\0';
}

static bool has_flags(const ckpt_schema *s)
{
    return ckpt_schema_flag_count(s) == ckpt_schema_count(s) && ckpt_schema_count(s) > 0;
}

static void size_value(strbuf *sb, const ckpt_schema *s, size_t i)
{
    bool too_big;
    uint64_t v = ckpt_schema_size(s, i, &too_big);
    if (!too_big) {
        j_u64(sb, v);
        return;
    }
    sb_puts(sb, "\"");
    ckpt_shape_size_print(sb, ckpt_schema_dims(s, i), ckpt_schema_rank(s, i));
    sb_puts(sb, "\"");
}

static void rep_text(strbuf *sb, uint64_t r)
{
    if (r == CKPT_NONE) sb_puts(sb, "none");
    else sb_printf(sb, "%llu", (unsigned long long)r);
}

/* Slot i of a against slot j of b, the difference about slot i: rank, shape and size, and with
 * flags trainability and sharing. Named sides (na, nb) compare sharing by the owners' names. */
static void compare_slot(differ *d, const ckpt_schema *a, size_t i, const ckpt_schema *b, size_t j, bool flags,
                         const char *const *na, const char *const *nb, strbuf *t)
{
    uint64_t ra = ckpt_schema_rank(a, i), rb = ckpt_schema_rank(b, j);
    if (ra != rb) {
        open_diff(d, "rank", i);
        j_u64(d->sb, ra);
        sb_puts(d->sb, ",\"b\":");
        j_u64(d->sb, rb);
        sb_printf(t, "rank %llu vs %llu", (unsigned long long)ra, (unsigned long long)rb);
        close_diff(d, i, t);
    }
    if (!ckpt_schema_same_shape(a, i, b, j)) {
        open_diff(d, "shape", i);
        j_shape(d->sb, a, i);
        sb_puts(d->sb, ",\"b\":");
        j_shape(d->sb, b, j);
        sb_puts(t, "shape ");
        ckpt_schema_print_shape(t, a, i);
        sb_puts(t, " vs ");
        ckpt_schema_print_shape(t, b, j);
        close_diff(d, i, t);
        bool big_a, big_b;
        uint64_t sa = ckpt_schema_size(a, i, &big_a), sbz = ckpt_schema_size(b, j, &big_b);
        if (big_a != big_b || sa != sbz || big_a) {
            open_diff(d, "size", i);
            size_value(d->sb, a, i);
            sb_puts(d->sb, ",\"b\":");
            size_value(d->sb, b, j);
            sb_puts(t, "size ");
            ckpt_shape_size_print(t, ckpt_schema_dims(a, i), ra);
            sb_puts(t, " vs ");
            ckpt_shape_size_print(t, ckpt_schema_dims(b, j), rb);
            close_diff(d, i, t);
        }
    }
    if (!flags) return;
    bool ga = ckpt_schema_requires_grad(a, i), gb = ckpt_schema_requires_grad(b, j);
    if (ga != gb) {
        open_diff(d, "requiresGrad", i);
        sb_puts(d->sb, ga ? "true,\"b\":" : "false,\"b\":");
        sb_puts(d->sb, gb ? "true" : "false");
        sb_printf(t, "%s vs %s", ga ? "trainable" : "frozen", gb ? "trainable" : "frozen");
        close_diff(d, i, t);
    }
    uint64_t pa = ckpt_schema_representative(a, i), pb = ckpt_schema_representative(b, j);
    const char *oa = na && pa != CKPT_NONE ? na[pa] : NULL, *ob = nb && pb != CKPT_NONE ? nb[pb] : NULL;
    if (na && nb ? (!oa != !ob || (oa && strcmp(oa, ob))) : pa != pb) {
        open_diff(d, "representative", i);
        j_slot(d->sb, pa);
        sb_puts(d->sb, ",\"b\":");
        j_slot(d->sb, pb);
        sb_puts(t, "representative ");
        if (na && nb) sb_printf(t, "%s vs %s", oa ? oa : "none", ob ? ob : "none");
        else {
            rep_text(t, pa);
            sb_puts(t, " vs ");
            rep_text(t, pb);
        }
        close_diff(d, i, t);
    }
}

static void count_diff(differ *d, size_t na, size_t nb, strbuf *t)
{
    if (na == nb) return;
    open_diff(d, "count", CKPT_NONE);
    j_u64(d->sb, na);
    sb_puts(d->sb, ",\"b\":");
    j_u64(d->sb, nb);
    sb_printf(t, "parameter count: %zu vs %zu", na, nb);
    close_diff(d, CKPT_NONE, t);
}

static void slots(differ *d, const ckpt_schema *a, const ckpt_schema *b, strbuf *t)
{
    size_t na = ckpt_schema_count(a), nb = ckpt_schema_count(b), both = na < nb ? na : nb;
    bool flags = has_flags(a) && has_flags(b);
    count_diff(d, na, nb, t);
    for (size_t i = 0; i < both; i++) compare_slot(d, a, i, b, i, flags, NULL, NULL, t);
    for (size_t i = both; i < na || i < nb; i++) {
        bool first = i < na;
        const ckpt_schema *s = first ? a : b;
        open_diff(d, "slot", i);
        if (first) j_shape(d->sb, a, i);
        else sb_puts(d->sb, "null");
        sb_puts(d->sb, ",\"b\":");
        if (!first) j_shape(d->sb, b, i);
        else sb_puts(d->sb, "null");
        ckpt_schema_print_shape(t, s, i);
        sb_printf(t, " only in the %s", first ? "first" : "second");
        close_diff(d, i, t);
    }
}

/* A difference about names, not about one side's slot: {"field","slot":null,"a","b","aSlot",
 * "bSlot"} (a name or null; its slot in either side or null). */
static void name_diff(differ *d, const char *field, const char *a, size_t ia, const char *b, size_t ib, strbuf *t)
{
    open_diff(d, field, CKPT_NONE);
    if (a) j_string(d->sb, a);
    else sb_puts(d->sb, "null");
    sb_puts(d->sb, ",\"b\":");
    if (b) j_string(d->sb, b);
    else sb_puts(d->sb, "null");
    sb_puts(d->sb, ",\"aSlot\":");
    j_slot(d->sb, a ? ia : CKPT_NONE);
    sb_puts(d->sb, ",\"bSlot\":");
    j_slot(d->sb, b ? ib : CKPT_NONE);
    close_diff(d, CKPT_NONE, t);
}

/* Two layouts of named slots whose names differ (DeepSpeed's module names, DCP's FQNs): the slots
 * compared by name. Each name one side holds alone; the first place where the names both hold
 * come in another order; each name both hold compared as compare_slot does, about A's slot. */
static bool named_slots(differ *d, const ckpt_schema *a, const char *const *na, const ckpt_schema *b,
                        const char *const *nb, strbuf *t)
{
    size_t ca = ckpt_schema_count(a), cb = ckpt_schema_count(b);
    bool flags = has_flags(a) && has_flags(b);
    ckpt_name_index ia = {0}, ib = {0};
    if (!ckpt_name_index_make(&ia, na, ca) || !ckpt_name_index_make(&ib, nb, cb)) {
        free(ia.v);
        free(ib.v);
        return false;
    }
    count_diff(d, ca, cb, t);
    for (size_t i = 0; i < ca; i++)
        if (ckpt_name_index_find(&ib, na[i]) == CKPT_NAME_NONE) {
            sb_printf(t, "%s only in the first", na[i]);
            name_diff(d, "name", na[i], i, NULL, 0, t);
        }
    for (size_t j = 0; j < cb; j++)
        if (ckpt_name_index_find(&ia, nb[j]) == CKPT_NAME_NONE) {
            sb_printf(t, "%s only in the second", nb[j]);
            name_diff(d, "name", NULL, 0, nb[j], j, t);
        }
    /* the names both hold, each side in its own order: the first place they part */
    for (size_t i = 0, j = 0;; i++, j++) {
        while (i < ca && ckpt_name_index_find(&ib, na[i]) == CKPT_NAME_NONE) i++;
        while (j < cb && ckpt_name_index_find(&ia, nb[j]) == CKPT_NAME_NONE) j++;
        if (i == ca || j == cb) break;
        if (strcmp(na[i], nb[j])) {
            sb_printf(t, "another order: slot %zu is %s in the first, slot %zu is %s in the second", i, na[i], j,
                      nb[j]);
            name_diff(d, "order", na[i], i, nb[j], j, t);
            break;
        }
    }
    for (size_t i = 0; i < ca; i++) {
        size_t j = ckpt_name_index_find(&ib, na[i]);
        if (j != CKPT_NAME_NONE) compare_slot(d, a, i, b, j, flags, na, nb, t);
    }
    free(ia.v);
    free(ib.v);
    return true;
}

/* The names of a file's slots when its family names every one (a DeepSpeed module's, DCP's
 * FQNs): an array the caller frees, NULL when it names none (or out of memory: *oom). */
static const char **slot_names(const ckpt_file *f, const ckpt_schema *s, bool *oom)
{
    const ckpt_report *rep = f ? ckpt_file_report(f) : NULL;
    size_t n = ckpt_schema_count(s);
    if (!rep || !ckpt_slot_name(rep, 0)) return NULL;
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names) {
        *oom = true;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(names[i] = ckpt_slot_name(rep, i))) {
            free(names);
            return NULL;
        }
    return names;
}

static bool same_names(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i])) return false;
    return true;
}

static const char *dtype_text(int dtype) { return dtype == CKPT_FLOAT64 ? "float64" : "float32"; }

/* `kinds`: both sides say Adam or AdamW (a file whose kind is unknown guesses it: not compared) */
static void config(differ *d, const ckpt_config *a, const ckpt_config *b, bool kinds, strbuf *t)
{
    if (kinds && a->kind != b->kind) {
        const char *ka = ckpt_kind_name(a->kind == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM),
                   *kb = ckpt_kind_name(b->kind == CKPT_ADAMW ? CKPT_ADAMW : CKPT_ADAM);
        open_diff(d, "config.kind", CKPT_NONE);
        sb_printf(d->sb, "\"%s\",\"b\":\"%s\"", ka, kb);
        sb_printf(t, "optimizer: %s vs %s", ka, kb);
        close_diff(d, CKPT_NONE, t);
    }
    static const char *const names[4] = {"beta1", "beta2", "epsilon", "weightDecay"};
    const uint64_t wa[4] = {a->beta1, a->beta2, a->epsilon, a->weight_decay};
    const uint64_t wb[4] = {b->beta1, b->beta2, b->epsilon, b->weight_decay};
    for (int k = 0; k < 4; k++) {
        if (wa[k] == wb[k]) continue;
        strbuf va = {0}, vb = {0};
        j_double(&va, ckpt_double_from_bits(wa[k]));
        j_double(&vb, ckpt_double_from_bits(wb[k]));
        sb_printf(d->sb, "%s{\"field\":\"config.%s\",\"slot\":null,\"a\":%s,\"b\":%s,\"aBits\":", d->count++ ? "," : "",
                  names[k], va.failed ? "null" : va.data, vb.failed ? "null" : vb.data);
        j_bits(d->sb, wa[k]);
        sb_puts(d->sb, ",\"bBits\":");
        j_bits(d->sb, wb[k]);
        /* decoded values first; the bit patterns tell apart what prints alike (-0 and 0) */
        sb_printf(t, "%s: %s vs %s (bits 0x%016llx vs 0x%016llx)", names[k], va.failed ? "?" : va.data,
                  vb.failed ? "?" : vb.data, (unsigned long long)wa[k], (unsigned long long)wb[k]);
        sb_free(&va);
        sb_free(&vb);
        close_diff(d, CKPT_NONE, t);
    }
}

static char *diff_json(const ckpt_expected *a, const ckpt_file *fa, const ckpt_expected *b, const ckpt_file *fb,
                       char **first);

char *ckpt_diff_json(const ckpt_expected *a, const ckpt_expected *b) { return diff_json(a, NULL, b, NULL, NULL); }

char *ckpt_diff_files_json(const ckpt_expected *a, const ckpt_file *fa, const ckpt_expected *b, const ckpt_file *fb)
{
    return diff_json(a, fa, b, fb, NULL);
}

int ckpt_diff_first(const ckpt_expected *a, const ckpt_expected *b, char **json, char **first)
{
    *first = NULL;
    *json = diff_json(a, NULL, b, NULL, first);
    if (*json) return 0;
    free(*first);
    *first = NULL;
    return CKPT_E_NO_MEMORY;
}

static char *diff_json(const ckpt_expected *a, const ckpt_file *fa, const ckpt_expected *b, const ckpt_file *fb,
                       char **first)
{
    strbuf sb = {0}, t = {0};
    differ d = {&sb, 0, NULL};
    sb_puts(&sb, "[");
    if (a->schema && b->schema) {
        /* slots named on both sides (each side's own names) are compared by name when the names
         * differ; else by position */
        bool oom = false;
        const char **na = slot_names(fa, a->schema, &oom), **nb = slot_names(fb, b->schema, &oom);
        bool named = na && nb && !same_names(na, ckpt_schema_count(a->schema), nb, ckpt_schema_count(b->schema));
        if (named && !named_slots(&d, a->schema, na, b->schema, nb, &t)) oom = true;
        else if (!named) slots(&d, a->schema, b->schema, &t);
        free(na);
        free(nb);
        if (oom) sb.failed = true;
    }
    if (a->dtype != CKPT_DTYPE_ANY && b->dtype != CKPT_DTYPE_ANY && a->dtype != b->dtype) {
        open_diff(&d, "dtype", CKPT_NONE);
        sb_printf(&sb, "\"%s\",\"b\":\"%s\"", dtype_text(a->dtype), dtype_text(b->dtype));
        sb_printf(&t, "moment dtype: %s vs %s", dtype_text(a->dtype), dtype_text(b->dtype));
        close_diff(&d, CKPT_NONE, &t);
    }
    bool kinds = !(fa && ckpt_kind_unknown(ckpt_file_report(fa))) && !(fb && ckpt_kind_unknown(ckpt_file_report(fb)));
    if (a->config && b->config) config(&d, a->config, b->config, kinds, &t);
    int ca = a->keeps_random_counter, cb = b->keeps_random_counter;
    if (ca >= 0 && cb >= 0 && ca != cb) {
        open_diff(&d, "randomCounter", CKPT_NONE);
        sb_printf(&sb, "%s,\"b\":%s", ca ? "true" : "false", cb ? "true" : "false");
        sb_printf(&t, "random counter: %s vs %s", ca ? "kept" : "none", cb ? "kept" : "none");
        close_diff(&d, CKPT_NONE, &t);
    }
    sb_puts(&sb, "]");
    bool failed = t.failed;
    sb_free(&t);
    if (failed) sb.failed = true;
    if (first) *first = d.first;
    else free(d.first);
    return sb_take(&sb);
}
