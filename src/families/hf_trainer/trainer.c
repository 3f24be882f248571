/* A Hugging Face Trainer's own files, read as data (format.md 10.3, 10.5): training_args.bin, a
 * torch.save of its TrainingArguments dataclass (an object whose BUILD state is the dict of its
 * fields; optim an OptimizerNames enum member), and
 * trainer_state.json (global_step, and log_history's learning rates by step). */
#include "core/core.h"
#include "base/json_read.h"
#include "families/pytorch/objects.h"

#include <math.h>
#include <stdlib.h>

#define ARGS_FILE "training_args.bin"
#define STATE_FILE "trainer_state.json"
#define STATE_DEPTH 64

/* ---- training_args.bin ---- */

typedef struct actx {
    const ckpt_torch *t;
    const ckpt_pickle *p;
    char *member; /* the object pickle's name in texts, as a JSON string */
    ckpt_error *err;
} actx;

static const ckpt_pnode *node(const actx *c, size_t k) { return ckpt_pickle_node(c->p, k); }
static const char *text_of(const actx *c, const ckpt_pnode *n) { return (const char *)c->p->data + n->at; }

static int fail_node(const actx *c, size_t k, const char *what, const char *why)
{
    const ckpt_pnode *n = node(c, k);
    return ckpt_fail(c->err, ARGS_FILE, CKPT_E_TRAINER_FILE, c->t->pickle_at + n->offset, 1, "%s at byte %llu of %s %s",
                     what, (unsigned long long)n->offset, c->member, why);
}

static bool is_str(const actx *c, size_t k)
{
    return k != CKPT_PNIL && node(c, k)->kind == CKPT_PK_STR && !(node(c, k)->flags & CKPT_PF_TEXT);
}

static bool str_is(const actx *c, size_t k, const char *s)
{
    size_t l = strlen(s);
    return is_str(c, k) && node(c, k)->len == l && !memcmp(text_of(c, node(c, k)), s, l);
}

/* A C string of a span, or of "module.name" (sep '.'); a NUL byte makes it NULL (*nul set). */
static char *dup_text(const char *a, size_t an, const char *b, size_t bn, bool *nul)
{
    *nul = memchr(a, 0, an) || (b && memchr(b, 0, bn));
    if (*nul) return NULL;
    char *d = malloc(an + (b ? bn + 1 : 0) + 1);
    if (!d) return NULL;
    memcpy(d, a, an);
    if (b) {
        d[an] = '.';
        memcpy(d + an + 1, b, bn);
    }
    d[an + (b ? bn + 1 : 0)] = 0;
    return d;
}

/* OptimizerNames' members whose value is not their name in lower case (transformers'
 * training_args.py); a member pickled by name is read through this table. */
static const struct {
    const char *name, *value;
} optimizer_names[] = {
    {"ADAMW_BNB", "adamw_bnb_8bit"},        {"LION", "lion_32bit"},
    {"PAGED_ADAMW", "paged_adamw_32bit"},   {"PAGED_ADEMAMIX", "paged_ademamix_32bit"},
    {"PAGED_LION", "paged_lion_32bit"},     {"RMSPROP_8BIT", "rmsprop_bnb_8bit"},
    {"RMSPROP_32BIT", "rmsprop_bnb_32bit"},
};

static bool global_is(const actx *c, size_t k, const char *const *modules, const char *name)
{
    if (k == CKPT_PNIL || node(c, k)->kind != CKPT_PK_GLOBAL) return false;
    const ckpt_pnode *g = node(c, k);
    const char *d = (const char *)c->p->data;
    if (name && (g->len2 != strlen(name) || memcmp(d + g->at2, name, g->len2))) return false;
    for (; modules && *modules; modules++)
        if (g->len == strlen(*modules) && !memcmp(d + g->at, *modules, g->len)) return true;
    return !modules;
}

/* An enum member of a str-valued Enum: REDUCE of its class with (value,) (Python before 3.11),
 * or REDUCE of getattr with (class, member name) (3.11 on). The value's node, or for a member
 * of OptimizerNames pickled by name that name's node with *by_name set; CKPT_PNIL otherwise. */
static size_t enum_value(const actx *c, size_t k, bool *by_name)
{
    static const char *const builtins[] = {"builtins", "__builtin__", NULL};
    const ckpt_pnode *n = node(c, k);
    *by_name = false;
    if ((n->kind != CKPT_PK_REDUCE && n->kind != CKPT_PK_NEWOBJ) || n->a == CKPT_PNIL || n->b == CKPT_PNIL)
        return CKPT_PNIL;
    const ckpt_pnode *args = node(c, n->b);
    if (args->kind != CKPT_PK_TUPLE) return CKPT_PNIL;
    if (global_is(c, n->a, builtins, "getattr")) {
        size_t cls = ckpt_pickle_item(c->p, n->b, 0), member = ckpt_pickle_item(c->p, n->b, 1);
        if (args->count != 2 || !global_is(c, cls, NULL, "OptimizerNames") || !is_str(c, member)) return CKPT_PNIL;
        *by_name = true;
        return member;
    }
    if (node(c, n->a)->kind != CKPT_PK_GLOBAL || args->count != 1) return CKPT_PNIL;
    size_t v = ckpt_pickle_item(c->p, n->b, 0);
    return is_str(c, v) ? v : CKPT_PNIL;
}

/* OptimizerNames' value of a member name. */
static char *optimizer_value(const char *name, size_t len)
{
    for (size_t k = 0; k < sizeof optimizer_names / sizeof optimizer_names[0]; k++)
        if (strlen(optimizer_names[k].name) == len && !memcmp(optimizer_names[k].name, name, len)) {
            bool nul;
            return dup_text(optimizer_names[k].value, strlen(optimizer_names[k].value), NULL, 0, &nul);
        }
    char *v = malloc(len + 1);
    if (!v) return NULL;
    for (size_t j = 0; j < len; j++) v[j] = name[j] >= 'A' && name[j] <= 'Z' ? (char)(name[j] - 'A' + 'a') : name[j];
    v[len] = 0;
    return v;
}

static int read_optim(const actx *c, size_t k, ckpt_training_args *out)
{
    if (node(c, k)->kind == CKPT_PK_NONE) return 0;
    bool by_name = false, nul = false;
    size_t v = is_str(c, k) ? k : enum_value(c, k, &by_name);
    const char *s = v == CKPT_PNIL ? NULL : text_of(c, node(c, v));
    size_t len = v == CKPT_PNIL ? 0 : node(c, v)->len;
    if (s && memchr(s, 0, len)) nul = true;
    if (v == CKPT_PNIL || nul) return fail_node(c, k, "optim", "is neither a str nor an enum whose value is a str");
    out->optim = by_name ? optimizer_value(s, len) : dup_text(s, len, NULL, 0, &nul);
    if (!out->optim) return ckpt_fail_oom(c->err);
    out->kind = !strncmp(out->optim, "adamw", 5) ? CKPT_TRAINING_KIND_ADAMW : CKPT_TRAINING_KIND_UNKNOWN;
    return 0;
}

static int read_number(const actx *c, size_t k, const char *field, unsigned bit, double *x, unsigned *has)
{
    const ckpt_pnode *n = node(c, k);
    if (n->kind == CKPT_PK_NONE) return 0;
    if (n->kind == CKPT_PK_FLOAT) *x = n->f;
    else if (n->kind == CKPT_PK_INT) *x = (double)n->i;
    else return fail_node(c, k, field, "is not a number");
    *has |= bit;
    return 0;
}

/* The fields' dict: the BUILD state of an object (a dataclass's __dict__, or (__dict__, slots)),
 * or a dict at the root (TrainingArguments.to_dict() saved). */
static int fields_of(const actx *c, size_t root, size_t *dict, ckpt_training_args *out)
{
    const ckpt_pnode *r = node(c, root);
    size_t state = CKPT_PNIL;
    if (r->kind == CKPT_PK_DICT) state = root;
    else if (r->kind == CKPT_PK_BUILD && r->b != CKPT_PNIL) {
        state = r->b;
        const ckpt_pnode *s = node(c, state);
        if (s->kind == CKPT_PK_TUPLE && s->count == 2) state = ckpt_pickle_item(c->p, state, 0);
        const ckpt_pnode *o = r->a == CKPT_PNIL ? NULL : node(c, r->a);
        if (o && (o->kind == CKPT_PK_NEWOBJ || o->kind == CKPT_PK_REDUCE) && o->a != CKPT_PNIL &&
            node(c, o->a)->kind == CKPT_PK_GLOBAL) {
            const ckpt_pnode *g = node(c, o->a);
            const char *d = (const char *)c->p->data;
            bool nul;
            out->class_name = dup_text(d + g->at, g->len, d + g->at2, g->len2, &nul);
            if (!out->class_name && !nul) return ckpt_fail_oom(c->err);
        }
    }
    if (state == CKPT_PNIL || node(c, state)->kind != CKPT_PK_DICT)
        return fail_node(c, root, "the object", "is not a dataclass with its fields as state (a TrainingArguments)");
    *dict = state;
    return 0;
}

static int read_args(const actx *c, ckpt_training_args *out)
{
    size_t dict = 0;
    TRY(fields_of(c, c->p->root, &dict, out));
    /* the fields read, each its last value (a dict keeps a key once) */
    static const char *const names[] = {"optim",      "learning_rate", "weight_decay",
                                        "adam_beta1", "adam_beta2",    "adam_epsilon"};
    size_t at[6];
    for (int f = 0; f < 6; f++) at[f] = CKPT_PNIL;
    const ckpt_pnode *d = node(c, dict);
    for (uint32_t kc = d->first; kc != CKPT_PNIL;) {
        uint32_t vc = c->p->cells[kc].next;
        if (vc == CKPT_PNIL) break;
        for (int f = 0; f < 6; f++)
            if (str_is(c, c->p->cells[kc].node, names[f])) at[f] = c->p->cells[vc].node;
        kc = c->p->cells[vc].next;
    }
    if (at[0] != CKPT_PNIL) TRY(read_optim(c, at[0], out));
    double *x[5] = {&out->learning_rate, &out->weight_decay, &out->adam_beta1, &out->adam_beta2, &out->adam_epsilon};
    for (int f = 1; f < 6; f++)
        if (at[f] != CKPT_PNIL) TRY(read_number(c, at[f], names[f], 1u << (f - 1), x[f - 1], &out->has));
    return 0;
}

int ckpt_training_args_read(const ckpt_source *src, const char *name, ckpt_training_args *out, ckpt_error *err)
{
    memset(out, 0, sizeof *out);
    ckpt_torch *t;
    TRY(ckpt_torch_open(src, name, &t, err));
    strbuf member = {0}, quoted = {0};
    if (t->legacy) sb_puts(&member, name);
    else sb_printf(&member, "%s/data.pkl", t->prefix);
    j_string(&quoted, member.data ? member.data : "");
    sb_free(&member);
    actx c = {t, t->pickle, quoted.data, err};
    int rc = quoted.failed ? ckpt_fail_oom(err) : read_args(&c, out);
    sb_free(&quoted);
    ckpt_torch_free(t);
    if (rc) ckpt_training_args_free(out);
    return rc;
}

void ckpt_training_args_free(ckpt_training_args *a)
{
    if (!a) return;
    free(a->class_name);
    free(a->optim);
    memset(a, 0, sizeof *a);
}

static void j_str_or_null(strbuf *sb, const char *s)
{
    if (s) j_string(sb, s);
    else sb_lit(sb, "null");
}

char *ckpt_training_args_json(const ckpt_training_args *a)
{
    strbuf sb = {0};
    sb_lit(&sb, "{\"class\":");
    j_str_or_null(&sb, a->class_name);
    sb_lit(&sb, ",\"optim\":");
    j_str_or_null(&sb, a->optim);
    sb_lit(&sb, ",\"kind\":");
    sb_puts(&sb, a->kind == CKPT_TRAINING_KIND_ADAMW ? "\"adamw\"" : "null");
    static const char *const keys[] = {"learningRate", "weightDecay", "adamBeta1", "adamBeta2", "adamEpsilon"};
    const double x[5] = {a->learning_rate, a->weight_decay, a->adam_beta1, a->adam_beta2, a->adam_epsilon};
    for (int f = 0; f < 5; f++) {
        sb_printf(&sb, ",\"%s\":", keys[f]);
        j_num_or_null(&sb, a->has & (1u << f), x[f]);
    }
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

/* ---- trainer_state.json ---- */

/* The whole text, at most CKPT_TRAINER_STATE_MAX bytes (a source of unknown size read until it ends). */
static int read_text(const ckpt_source *src, const char *what, uint8_t **out, size_t *len, ckpt_error *err)
{
    uint64_t size = src->size;
    if (size != CKPT_NONE && size > CKPT_TRAINER_STATE_MAX)
        return ckpt_fail(err, what, CKPT_E_TRAINER_FILE, CKPT_NONE, 0, "%llu bytes; at most %llu are read",
                         (unsigned long long)size, (unsigned long long)CKPT_TRAINER_STATE_MAX);
    size_t cap = size != CKPT_NONE ? (size_t)size : 1u << 16, n = 0;
    uint8_t *d = NULL;
    for (;;) {
        uint8_t *g = realloc(d, cap + 1);
        if (!g) {
            free(d);
            return ckpt_fail_oom(err);
        }
        d = g;
        size_t got = src->read(src->ctx, n, d + n, cap - n);
        if (got == CKPT_READ_ERROR || (size != CKPT_NONE && got != cap - n)) {
            free(d);
            return ckpt_fail(err, NULL, CKPT_E_IO, n, 0, "could not read %s at byte %zu", what, n);
        }
        n += got;
        if (n > CKPT_TRAINER_STATE_MAX) {
            free(d);
            return ckpt_fail(err, what, CKPT_E_TRAINER_FILE, CKPT_NONE, 0,
                             "more than %llu bytes; at most %llu are read", (unsigned long long)CKPT_TRAINER_STATE_MAX,
                             (unsigned long long)CKPT_TRAINER_STATE_MAX);
        }
        if (n < cap || size != CKPT_NONE) break;
        cap = cap > CKPT_TRAINER_STATE_MAX / 2 ? (size_t)CKPT_TRAINER_STATE_MAX + 1 : 2 * cap;
    }
    d[n] = 0;
    *out = d;
    *len = n;
    return 0;
}

/* A number's value exactly as written: its text (up to a delimiter) read by strtod, which rounds
 * correctly; NaN and Infinity as Python writes them. */
static bool number_value(const uint8_t *text, size_t len, const ckpt_jv *v, double *x)
{
    size_t e = v->at;
    while (e < len && !strchr(",]} \t\r\n", text[e])) e++;
    size_t n = e - v->at;
    char small[64], *buf = n < sizeof small ? small : malloc(n + 1);
    if (!buf) return false;
    memcpy(buf, text + v->at, n);
    buf[n] = 0;
    *x = strtod(buf, NULL);
    if (buf != small) free(buf);
    return true;
}

typedef struct lr_at {
    ckpt_trainer_lr lr;
    size_t order; /* the log's position: of equal steps the later wins */
} lr_at;

static int cmp_lr(const void *a, const void *b)
{
    const lr_at *x = a, *y = b;
    if (x->lr.step != y->lr.step) return x->lr.step < y->lr.step ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int fail_value(ckpt_error *err, const ckpt_jv *v, const char *what, size_t k, const char *why)
{
    if (k == SIZE_MAX)
        return ckpt_fail(err, STATE_FILE, CKPT_E_TRAINER_FILE, v->at, 1, "%s at byte %zu %s", what, v->at, why);
    return ckpt_fail(err, STATE_FILE, CKPT_E_TRAINER_FILE, v->at, 1, "log_history[%zu]%s at byte %zu %s", k, what,
                     v->at, why);
}

static int read_logs(const ckpt_jdoc *doc, const uint8_t *text, size_t len, const ckpt_jv *logs,
                     ckpt_trainer_state *out, ckpt_error *err)
{
    if (logs->kind != CKPT_JV_ARRAY) return fail_value(err, logs, "log_history", SIZE_MAX, "is not a list");
    lr_at *all = malloc((logs->len ? logs->len : 1) * sizeof *all);
    if (!all) return ckpt_fail_oom(err);
    size_t n = 0, k = 0;
    int rc = 0;
    for (const ckpt_jv *e = ckpt_jv_first(doc, logs); e && !rc; e = ckpt_jv_next(doc, e), k++) {
        if (e->kind != CKPT_JV_OBJECT) {
            rc = fail_value(err, e, "", k, "is not an object");
            break;
        }
        const ckpt_jv *step = ckpt_jv_get(doc, e, "step"), *lr = ckpt_jv_get(doc, e, "learning_rate");
        if (step && step->kind != CKPT_JV_NULL && (step->kind != CKPT_JV_NUMBER || !step->is_u64))
            rc = fail_value(err, step, ".step", k, "is not a step count");
        else if (lr && lr->kind != CKPT_JV_NULL && lr->kind != CKPT_JV_NUMBER)
            rc = fail_value(err, lr, ".learning_rate", k, "is not a number");
        else if (step && lr && step->kind != CKPT_JV_NULL && lr->kind != CKPT_JV_NULL) {
            all[n].lr.step = step->u;
            all[n].order = k;
            if (!number_value(text, len, lr, &all[n].lr.learning_rate)) rc = ckpt_fail_oom(err);
            n++;
        }
    }
    if (rc) {
        free(all);
        return rc;
    }
    qsort(all, n, sizeof *all, cmp_lr);
    out->lrs = malloc((n ? n : 1) * sizeof *out->lrs);
    if (!out->lrs) {
        free(all);
        return ckpt_fail_oom(err);
    }
    for (size_t j = 0; j < n; j++)
        if (j + 1 == n || all[j + 1].lr.step != all[j].lr.step) out->lrs[out->lrs_len++] = all[j].lr;
    free(all);
    return 0;
}

int ckpt_trainer_state_read(const ckpt_source *src, ckpt_trainer_state *out, ckpt_error *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *text = NULL;
    size_t len = 0, at = 0;
    TRY(read_text(src, STATE_FILE, &text, &len, err));
    ckpt_jdoc doc;
    const char *why = NULL;
    size_t values = ckpt_json_nodes_bound(text, len);
    if (values > CKPT_TRAINER_JSON_VALUES) {
        free(text);
        return ckpt_fail(err, STATE_FILE, CKPT_E_TRAINER_FILE, CKPT_NONE, 0, "%zu values; at most %llu are read",
                         values, (unsigned long long)CKPT_TRAINER_JSON_VALUES);
    }
    int jr = ckpt_json_parse_nonfinite(text, len, STATE_DEPTH, &doc, &at, &why);
    int rc = 0;
    if (jr == -2) rc = ckpt_fail_oom(err);
    else if (jr) rc = ckpt_fail(err, STATE_FILE, CKPT_E_TRAINER_FILE, at, 1, "not JSON at byte %zu: %s", at, why);
    else if (doc.v[0].kind != CKPT_JV_OBJECT) rc = fail_value(err, &doc.v[0], "the text", SIZE_MAX, "is not an object");
    if (!rc) {
        const ckpt_jv *gs = ckpt_jv_get(&doc, &doc.v[0], "global_step");
        const ckpt_jv *logs = ckpt_jv_get(&doc, &doc.v[0], "log_history");
        if (gs && gs->kind != CKPT_JV_NULL) {
            if (gs->kind != CKPT_JV_NUMBER || !gs->is_u64)
                rc = fail_value(err, gs, "global_step", SIZE_MAX, "is not a step count");
            out->has_global_step = !rc;
            out->global_step = gs->u;
        }
        if (!rc && logs && logs->kind != CKPT_JV_NULL) rc = read_logs(&doc, text, len, logs, out, err);
    }
    ckpt_jdoc_free(&doc);
    free(text);
    if (rc) ckpt_trainer_state_free(out);
    return rc;
}

void ckpt_trainer_state_free(ckpt_trainer_state *s)
{
    if (!s) return;
    free(s->lrs);
    memset(s, 0, sizeof *s);
}

bool ckpt_trainer_state_lr_at(const ckpt_trainer_state *s, uint64_t step, double *lr)
{
    size_t lo = 0, hi = s->lrs_len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->lrs[mid].step < step) lo = mid + 1;
        else hi = mid;
    }
    if (lo == s->lrs_len || s->lrs[lo].step != step) return false;
    *lr = s->lrs[lo].learning_rate;
    return true;
}

char *ckpt_trainer_state_json(const ckpt_trainer_state *s)
{
    strbuf sb = {0};
    sb_lit(&sb, "{\"globalStep\":");
    if (s->has_global_step) j_u64(&sb, s->global_step);
    else sb_lit(&sb, "null");
    sb_lit(&sb, ",\"learningRates\":[");
    for (size_t k = 0; k < s->lrs_len; k++) {
        sb_puts(&sb, k ? ",{\"step\":" : "{\"step\":");
        j_u64(&sb, s->lrs[k].step);
        sb_lit(&sb, ",\"learningRate\":");
        j_double(&sb, s->lrs[k].learning_rate);
        sb_putc(&sb, '}');
    }
    sb_lit(&sb, "]}");
    return sb_take(&sb);
}

/* ---- which entry logs an update's rate ---- */

/* The transformers release whose Trainer first logs the rate an update used (before the
 * scheduler's step): 4.51. */
#define LOGS_USED_RATE_MAJOR 4
#define LOGS_USED_RATE_MINOR 51

/* The leading decimal digits of s at *i (at most 9), or -1 when there are none. */
static long version_part(const char *s, size_t *i)
{
    long x = 0;
    size_t start = *i;
    while (s[*i] >= '0' && s[*i] <= '9' && *i - start < 9) x = x * 10 + (s[(*i)++] - '0');
    return *i == start ? -1 : x;
}

int ckpt_trainer_lr_logged_at(const void *config_json, size_t len)
{
    if (len > CKPT_TRAINER_STATE_MAX || ckpt_json_nodes_bound(config_json, len) > CKPT_TRAINER_JSON_VALUES)
        return CKPT_LR_LOGGED_UNKNOWN;
    ckpt_jdoc doc;
    size_t at = 0;
    const char *reason = NULL;
    if (ckpt_json_parse(config_json, len, 64, &doc, &at, &reason)) {
        ckpt_jdoc_free(&doc); /* a failed parse leaves what it built */
        return CKPT_LR_LOGGED_UNKNOWN;
    }
    int out = CKPT_LR_LOGGED_UNKNOWN;
    const ckpt_jv *v = doc.v[0].kind == CKPT_JV_OBJECT ? ckpt_jv_get(&doc, &doc.v[0], "transformers_version") : NULL;
    if (v && v->kind == CKPT_JV_STRING) {
        const char *s = ckpt_jv_str(&doc, v);
        size_t i = 0;
        long major = version_part(s, &i), minor = -1;
        if (major >= 0 && s[i] == '.') {
            i++;
            minor = version_part(s, &i);
        }
        if (minor >= 0)
            out = major > LOGS_USED_RATE_MAJOR || (major == LOGS_USED_RATE_MAJOR && minor >= LOGS_USED_RATE_MINOR)
                      ? CKPT_LR_LOGGED_AT_B
                      : CKPT_LR_LOGGED_AT_A;
    }
    ckpt_jdoc_free(&doc);
    return out;
}
