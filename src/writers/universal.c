/* A DeepSpeed ZeRO-1/2 or BF16_Optimizer checkpoint written as a universal checkpoint (format.md
 * 11.7, as DeepSpeed v0.14.4's ds_to_universal.py writes one with tp = pp = 1): the folder's files
 * are named by ckpt_universal_plan (once) and each is written by ckpt_universal_write into a sink;
 * the caller lays them out (docs/deepspeed.md: a temporary sibling folder renamed when complete,
 * latest_universal last).
 *
 * zero/{name}/{fp32,exp_avg,exp_avg_sq}.pt: a dict, its param the parameter's tensor streamed from
 * its fragments (11.3), with a storage of exactly its elements; the patterns of the model states'
 * universal_checkpoint_info decide the dict's keys as ds_to_universal's merge_tp_slices does (its
 * `elif` chain, re.match on the name). zero/{name}/step.pt: the lowest rank's step object as
 * stored. zero/optimizer_state.pt: rank 0's optimizer_state_dict less the sharded keys, its
 * paddings cleared and partition counts set, param_groups last; every value written back as read
 * (DeepSpeed's objects as the same GLOBAL, NEWOBJ or REDUCE arguments and BUILD state). The model
 * states are copied byte for byte. */
#include "core/core.h"
#include "containers/zip.h"
#include "containers/pickle_write.h"
#include "families/deepspeed/deepspeed.h"

#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pickle (protocol 2, containers/pickle_write.h) ---- */

static const char *storage_of(int dtype)
{
    switch (dtype) {
        case CKPT_FLOAT32: return "FloatStorage";
        case CKPT_FLOAT64: return "DoubleStorage";
        case CKPT_FLOAT16: return "HalfStorage";
        case CKPT_BFLOAT16: return "BFloat16Storage";
        default: return NULL;
    }
}

/* _rebuild_tensor_v2(('storage', torch.{X}Storage, '0', 'cpu', numel), 0, size, stride, False,
 * OrderedDict()): a contiguous tensor filling storage 0 */
static void u_tensor(strbuf *sb, const char *storage, uint64_t numel, const uint64_t *dims, uint32_t rank)
{
    uint64_t stride[8];
    uint64_t s = 1;
    for (uint32_t j = rank; j-- > 0;) {
        stride[j] = s;
        s *= dims[j] ? dims[j] : 1;
    }
    ckpt_pw_global_n(sb, "torch._utils", 12, "_rebuild_tensor_v2", 18);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_op(sb, CKPT_OP_MARK);
    ckpt_pw_str(sb, "storage");
    ckpt_pw_global_n(sb, "torch", 5, storage, strlen(storage));
    ckpt_pw_str(sb, "0");
    ckpt_pw_str(sb, "cpu");
    ckpt_pw_int(sb, (int64_t)numel);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_BINPERSID);
    ckpt_pw_int(sb, 0);
    ckpt_pw_uint_tuple(sb, dims, rank);
    ckpt_pw_uint_tuple(sb, stride, rank);
    ckpt_pw_op(sb, CKPT_OP_NEWFALSE);
    ckpt_pw_global_n(sb, "collections", 11, "OrderedDict", 11);
    ckpt_pw_op(sb, CKPT_OP_EMPTY_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
    ckpt_pw_op(sb, CKPT_OP_TUPLE);
    ckpt_pw_op(sb, CKPT_OP_REDUCE);
}

/* ---- the plan ---- */

enum { U_PLAIN = 0, U_REPLICATED, U_AVERAGE, U_SUB2, U_ROW };
enum { F_TENSOR = 0, F_STEP, F_OPTIMIZER, F_COPY };

typedef struct ufile {
    int what;
    size_t param; /* F_TENSOR, F_STEP; the file (F_COPY) */
    int key;      /* F_TENSOR */
    char *path;
} ufile;

typedef struct uparam {
    int mode;
    bool vocab;
    uint64_t rows; /* vocab: the rows kept */
} uparam;

typedef struct uplan {
    const ckpt_report *rep;
    const ckpt_ds *ds;
    const ds_file *m, *f0; /* the model states, rank 0's partition */
    uparam *params;
    ufile *files;
    size_t len, cap;
    char **warnings;
    size_t warnings_len;
} uplan;

static void plan_free(uplan *p)
{
    for (size_t k = 0; k < p->len; k++) free(p->files[k].path);
    free(p->files);
    free(p->params);
    for (size_t k = 0; k < p->warnings_len; k++) free(p->warnings[k]);
    free(p->warnings);
}

static int push_file(uplan *p, int what, size_t param, int key, const char *fmt, const char *a, const char *b,
                     ckpt_error *err)
{
    if (!ckpt_grow((void **)&p->files, &p->cap, p->len + 1, sizeof *p->files)) return ckpt_fail_oom(err);
    strbuf sb = {0};
    sb_printf(&sb, fmt, a, b);
    char *path = sb_take(&sb);
    if (!path) return ckpt_fail_oom(err);
    p->files[p->len++] = (ufile){what, param, key, path};
    return 0;
}

static int warn(uplan *p, ckpt_error *err, const char *fmt, ...) CKPT_PRINTF(3, 4);
static int warn(uplan *p, ckpt_error *err, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    strbuf sb = {0};
    sb_printf(&sb, DS_PREFIX ": %s", text);
    char *w = sb_take(&sb);
    char **l = w ? realloc(p->warnings, (p->warnings_len + 1) * sizeof *l) : NULL;
    if (!l) {
        free(w);
        return ckpt_fail_oom(err);
    }
    p->warnings = l;
    p->warnings[p->warnings_len++] = w;
    return 0;
}

/* ---- patterns: Python's re.match on a parameter's name, through POSIX extended expressions ---- */

/* Python's pattern as an extended expression anchored at the start (re.match), or false when it
 * uses what that cannot say. Non-greedy quantifiers change what a match spans, not whether there
 * is one: they become greedy. */
static bool ere_of(const char *py, size_t n, strbuf *out)
{
    sb_puts(out, "^(");
    bool in_class = false;
    for (size_t i = 0; i < n; i++) {
        char c = py[i];
        if (c == '\\') {
            if (i + 1 >= n) return false;
            char e = py[++i];
            const char *cls = e == 'd' ? "0-9" : e == 'w' ? "A-Za-z0-9_" : e == 's' ? "[:space:]" : NULL;
            if (cls) {
                sb_printf(out, in_class ? "%s" : "[%s]", cls);
            } else if (!in_class && (e == 'D' || e == 'W' || e == 'S')) {
                sb_printf(out, "[^%s]", e == 'D' ? "0-9" : e == 'W' ? "A-Za-z0-9_" : "[:space:]");
            } else if (strchr(".^$*+?()[]{}|\\/-_", e)) {
                if (in_class) {
                    if (e == ']' || e == '^' || e == '-' || e == '\\') return false;
                    sb_putc(out, e);
                } else if (e == '/' || e == '-' || e == '_') sb_putc(out, e);
                else {
                    sb_putc(out, '\\');
                    sb_putc(out, e);
                }
            } else return false;
            continue;
        }
        if (in_class) {
            if (c == ']') in_class = false;
            sb_putc(out, c);
            continue;
        }
        if (c == '[') {
            in_class = true;
            sb_putc(out, c);
            if (i + 1 < n && py[i + 1] == '^') sb_putc(out, py[++i]);
            if (i + 1 < n && py[i + 1] == ']') sb_putc(out, py[++i]);
            continue;
        }
        if (c == '(' && i + 1 < n && py[i + 1] == '?') {
            if (i + 2 < n && py[i + 2] == ':') { /* a group that captures nothing: a group */
                sb_putc(out, '(');
                i += 2;
                continue;
            }
            return false;
        }
        if (c == '?' && i > 0 && strchr("*+?}", py[i - 1]) && !(i > 1 && py[i - 2] == '\\')) continue;
        sb_putc(out, c);
    }
    sb_putc(out, ')');
    return !in_class && !out->failed;
}

typedef struct upattern {
    const char *text;
    size_t len;
    int list;
    bool used;
    regex_t re;
    bool compiled;
} upattern;

enum { L_REPLICATED = 0, L_AVERAGE, L_ROW, L_VOCAB, L_SUB2, L_SUB, L_COUNT };
static const char *const list_names[L_COUNT] = {
    "tp_replicated_parameter_patterns",        "parameter_to_average_patterns",
    "parameter_with_row_parallelism_patterns", "vocabulary_parameter_patterns",
    "parameter_with_2_sub_params_cat_dim_0",   "parameter_with_sub_params"};

typedef struct upatterns {
    upattern *v;
    size_t len;
} upatterns;

static void patterns_free(upatterns *ps)
{
    for (size_t k = 0; k < ps->len; k++)
        if (ps->v[k].compiled) regfree(&ps->v[k].re);
    free(ps->v);
}

static int add_pattern(upatterns *ps, ds_tree c, size_t node, int list, ckpt_error *err)
{
    const char *s;
    size_t n;
    if (!ds_str(c, node, &s, &n)) {
        strbuf t = {0};
        ds_type_text(&t, c, node);
        int rc = t.failed
                     ? ckpt_fail_oom(err)
                     : ckpt_fail(err, DS_PREFIX, CKPT_E_DS_KEY, CKPT_NONE, 0,
                                 "universal_checkpoint_info.%s holds %s, expected a str", list_names[list], t.data);
        sb_free(&t);
        return rc;
    }
    upattern *v = realloc(ps->v, (ps->len + 1) * sizeof *v);
    if (!v) return ckpt_fail_oom(err);
    ps->v = v;
    upattern *u = &ps->v[ps->len++];
    *u = (upattern){s, n, list, false, {0}, false};
    strbuf e = {0};
    bool ok = ere_of(s, n, &e) && memchr(s, 0, n) == NULL;
    if (e.failed) return ckpt_fail_oom(err);
    if (ok && regcomp(&u->re, e.data, REG_EXTENDED | REG_NOSUB) == 0) u->compiled = true;
    sb_free(&e);
    if (!u->compiled)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                         "universal: pattern %.*s of %s uses Python regular-expression syntax that ckptscope does not "
                         "read",
                         (int)n, s, list_names[list]);
    return 0;
}

static bool matches(const upattern *u, const char *name) { return regexec(&u->re, name, 0, NULL, 0) == 0; }

/* get_matched_pattern: at most one pattern of the list matches (else refused); it is used */
static int match_list(upatterns *ps, int list, const char *name, bool *hit, ckpt_error *err)
{
    size_t n = 0, first = 0;
    for (size_t k = 0; k < ps->len; k++)
        if (ps->v[k].list == list && matches(&ps->v[k], name)) {
            if (!n) first = k;
            n++;
        }
    if (n > 1)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                         "universal: %s matches %zu patterns of %s", name, n, list_names[list]);
    *hit = n == 1;
    if (n == 1) {
        /* ds_to_universal discards the pattern's text from one set of every list's patterns */
        for (size_t k = 0; k < ps->len; k++)
            if (ps->v[k].len == ps->v[first].len && !memcmp(ps->v[k].text, ps->v[first].text, ps->v[k].len))
                ps->v[k].used = true;
    }
    return 0;
}

static int read_patterns(uplan *p, upatterns *ps, size_t info, int64_t *vocab_size, bool *has_vocab, ckpt_error *err)
{
    ds_tree c = ds_tree_of(p->m);
    for (int list = 0; list < L_COUNT; list++) {
        size_t l = ds_get(c, info, list_names[list]);
        if (l == CKPT_PNIL) continue;
        if (!ds_is_seq(c, l)) {
            strbuf t = {0};
            ds_type_text(&t, c, l);
            int rc = t.failed
                         ? ckpt_fail_oom(err)
                         : ckpt_fail(err, DS_PREFIX, CKPT_E_DS_KEY, CKPT_NONE, 0,
                                     "universal_checkpoint_info.%s is %s, expected a list", list_names[list], t.data);
            sb_free(&t);
            return rc;
        }
        for (size_t j = 0; j < ds_len(c, l); j++) {
            size_t item = ds_item(c, l, j);
            if (list == L_SUB) {
                /* a SubparamShape's fields: its patterns */
                size_t pats = ds_get(c, item, "patterns");
                for (size_t k = 0; ds_is_seq(c, pats) && k < ds_len(c, pats); k++)
                    TRY(add_pattern(ps, c, ds_item(c, pats, k), list, err));
            } else TRY(add_pattern(ps, c, item, list, err));
        }
    }
    *has_vocab = ds_int(c, ds_get(c, info, "original_vocab_size"), vocab_size);
    return 0;
}

/* merge_tp_slices' choice for each parameter, and the patterns no parameter used */
static int choose(uplan *p, size_t info, ckpt_error *err)
{
    upatterns ps = {0};
    int64_t vocab_size = 0;
    bool has_vocab = false;
    int rc = info == CKPT_PNIL ? 0 : read_patterns(p, &ps, info, &vocab_size, &has_vocab, err);
    const ckpt_ds *ds = p->ds;
    for (size_t k = 0; !rc && k < ds->params_len; k++) {
        const ds_param *pr = &ds->params[k];
        uparam *u = &p->params[k];
        /* get_matched_sub_params_pattern runs first, on every name */
        bool sub = false;
        for (size_t j = 0; j < ps.len && !sub; j++)
            if (ps.v[j].list == L_SUB && matches(&ps.v[j], pr->name)) {
                sub = true;
                for (size_t i = 0; i < ps.len; i++)
                    if (ps.v[i].len == ps.v[j].len && !memcmp(ps.v[i].text, ps.v[j].text, ps.v[i].len))
                        ps.v[i].used = true;
            }
        bool hit = false;
        if ((rc = match_list(&ps, L_REPLICATED, pr->name, &hit, err))) break;
        if (hit) u->mode = U_REPLICATED;
        else {
            if ((rc = match_list(&ps, L_AVERAGE, pr->name, &hit, err))) break;
            if (hit) u->mode = U_AVERAGE;
            else {
                if ((rc = match_list(&ps, L_SUB2, pr->name, &hit, err))) break;
                if (hit) u->mode = U_SUB2;
                else if (sub) {
                    rc = ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                                   "universal: %s matches a parameter_with_sub_params pattern: not written", pr->name);
                    break;
                } else {
                    if ((rc = match_list(&ps, L_ROW, pr->name, &hit, err))) break;
                    u->mode = hit ? U_ROW : U_PLAIN;
                }
            }
        }
        if ((rc = match_list(&ps, L_VOCAB, pr->name, &hit, err))) break;
        if (hit) {
            if (!has_vocab || vocab_size < 0) {
                rc = ckpt_fail(err, DS_PREFIX, CKPT_E_DS_KEY, CKPT_NONE, 0,
                               "universal: %s matches a vocabulary pattern, and universal_checkpoint_info has no "
                               "original_vocab_size",
                               pr->name);
                break;
            }
            if (pr->rank_dims != 2) {
                rc = ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                               "universal: %s matches a vocabulary pattern but has %u dimensions, not 2", pr->name,
                               pr->rank_dims);
                break;
            }
            u->vocab = true;
            u->rows = (uint64_t)vocab_size < pr->dims[0] ? (uint64_t)vocab_size : pr->dims[0];
        }
    }
    /* a pattern no parameter used (ds_to_universal refuses unless --no_strict), once per text */
    for (size_t k = 0; !rc && k < ps.len; k++) {
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = ps.v[j].len == ps.v[k].len && !memcmp(ps.v[j].text, ps.v[k].text, ps.v[k].len);
        if (!ps.v[k].used && !seen)
            rc = warn(p, err,
                      "universal: pattern %.*s matches no parameter (ds_to_universal refuses that unless --no_strict)",
                      (int)ps.v[k].len, ps.v[k].text);
    }
    patterns_free(&ps);
    return rc;
}

/* the flat state node of group g in rank file f (rigid: base_optimizer_state.state[params[0]]) */
static size_t flat_state(const ds_file *f, size_t g)
{
    ds_tree c = ds_tree_of(f);
    size_t base = ds_get(c, ds_get(c, f->root, "optimizer_state_dict"), "base_optimizer_state");
    size_t groups = ds_get(c, base, "param_groups"), state = ds_get(c, base, "state");
    int64_t id;
    if (!ds_int(c, ds_item(c, ds_get(c, ds_item(c, groups, g), "params"), 0), &id)) return CKPT_PNIL;
    ds_dict_it it;
    size_t key, value;
    if (!ds_dict_begin(c, state, &it)) return CKPT_PNIL;
    while (ds_dict_next(c, &it, &key, &value)) {
        int64_t v;
        if (ds_int(c, key, &v) && v == id) return value;
    }
    return CKPT_PNIL;
}

static int make_plan(uplan *p, const ckpt_file *in, ckpt_error *err)
{
    const ckpt_report *rep = in ? ckpt_file_report(in) : NULL;
    const ckpt_ds *ds = ckpt_ds_of(rep);
    if (!rep) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    if (!ds)
        return ckpt_fail(err, NULL, CKPT_E_WRONG_FAMILY, CKPT_NONE, 0,
                         "this is a %s: only a DeepSpeed checkpoint is written as a universal checkpoint",
                         rep->family ? rep->family->name : "file ckptscope does not read");
    if (rep->error.code)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot convert: the checkpoint is invalid");
    if (ds->lone)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_FOLDER, CKPT_NONE, 0,
                         "a file alone holds one partition: convert --to universal reads its folder");
    if (ds->universal)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0, "%s is a universal checkpoint already",
                         ds->dir);
    if (ds->kind == DS_ZERO3)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                         "DeepSpeed v0.14.4 has no universal checkpoint for ZeRO-3 (ds_to_universal reads ZeRO-1/2 "
                         "and BF16_Optimizer files)");
    if (!ds->layout_ok || ds->model == DS_NONE || !ds->optim || ds->optim[0] == DS_NONE)
        return ckpt_fail(err, NULL, CKPT_E_NOT_READABLE, CKPT_NONE, 0, "cannot convert: the checkpoint is invalid");
    p->rep = rep;
    p->ds = ds;
    p->m = &ds->files[ds->model];
    p->f0 = &ds->files[ds->optim[0]];
    if (p->f0->elastic)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                         "an elastic checkpoint keeps no base_optimizer_state['state'], which ds_to_universal reads");
    for (size_t g = 0; g < ds->groups_len; g++)
        if (flat_state(p->f0, g) == CKPT_PNIL)
            return ckpt_fail(
                err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                "group %zu has no optimizer state: saved before the first step, it has no moments to write", g);
    if (!(p->params = calloc(ds->params_len ? ds->params_len : 1, sizeof *p->params))) return ckpt_fail_oom(err);
    ds_tree c = ds_tree_of(p->m);
    size_t info = ds_get(c, p->m->root, "universal_checkpoint_info");
    if (info == CKPT_PNIL)
        TRY(warn(p, err,
                 "the model states have no universal_checkpoint_info (ds_to_universal refuses them); written as for an "
                 "empty one"));
    else if (!ds_is_dict(c, info)) {
        strbuf t = {0};
        ds_type_text(&t, c, info);
        int rc = t.failed ? ckpt_fail_oom(err)
                          : ckpt_fail(err, DS_PREFIX, CKPT_E_DS_KEY, CKPT_NONE, 0,
                                      "%s: universal_checkpoint_info is %s, expected a dict", p->m->name, t.data);
        sb_free(&t);
        return rc;
    }
    TRY(choose(p, info == CKPT_PNIL || !ds_is_dict(c, info) ? CKPT_PNIL : info, err));
    /* the files: the model states, optimizer_state.pt, each owner's four */
    for (size_t k = 0; k < ds->files_len; k++)
        if (ds->files[k].is.role == DS_ROLE_MODEL) TRY(push_file(p, F_COPY, k, 0, "%s%s", ds->files[k].name, "", err));
    TRY(push_file(p, F_OPTIMIZER, 0, 0, "%s%s", "zero/optimizer_state.pt", "", err));
    static const int keys[3] = {DS_FP32, DS_EXP_AVG, DS_EXP_AVG_SQ};
    for (size_t k = 0; k < ds->params_len; k++) {
        const ds_param *pr = &ds->params[k];
        if (strchr(pr->name, '/') || !strcmp(pr->name, ".") || !strcmp(pr->name, ".."))
            return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_NAMES, CKPT_NONE, 0,
                             "universal: %s is no folder name (zero/{name}/ holds its state)", pr->name);
        for (int j = 0; j < 3; j++)
            TRY(push_file(p, F_TENSOR, k, keys[j], "zero/%s/%s.pt", pr->name, ds_key_names[keys[j]], err));
        /* step.pt when the group's flat state holds a step */
        const ds_file *rf = pr->frags_len ? &ds->files[ds->frags[pr->frags].file] : p->f0;
        if (ds_get(ds_tree_of(rf), flat_state(rf, pr->flat), "step") != CKPT_PNIL)
            TRY(push_file(p, F_STEP, k, 0, "zero/%s/%s", pr->name, "step.pt", err));
    }
    return 0;
}

/* ---- writing ---- */

typedef struct writer {
    ckpt_zip_writer zw;
    ckpt_error *err;
    bool average; /* 0 + T: a negative zero becomes a positive one */
    int dtype;
} writer;

static int member(ckpt_zip_writer *zw, const char *prefix, const char *name, const void *data, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", prefix, name);
    TRY(ckpt_zip_begin(zw, path));
    TRY(ckpt_zip_write(zw, data, n));
    return ckpt_zip_end(zw);
}

static int copy_chunk(void *ctx, const void *data, size_t elements)
{
    writer *w = ctx;
    unsigned width = ckpt_dtype_width(w->dtype);
    if (!w->average) return ckpt_zip_write(&w->zw, data, elements * width);
    uint8_t buf[4096];
    const uint8_t *d = data;
    size_t per = sizeof buf / width;
    for (size_t at = 0; at < elements; at += per) {
        size_t n = elements - at < per ? elements - at : per;
        memcpy(buf, d + at * width, n * width);
        for (size_t i = 0; i < n; i++) {
            uint8_t *e = buf + i * width;
            bool negzero = e[width - 1] == 0x80;
            for (unsigned b = 0; b + 1 < width && negzero; b++) negzero = e[b] == 0;
            if (negzero) e[width - 1] = 0;
        }
        TRY(ckpt_zip_write(&w->zw, buf, n * width));
    }
    return 0;
}

/* the dict of a tensor file, then the tensor's bytes from the fragments */
static int tensor_file(const uplan *p, const ckpt_file *in, const ufile *uf, const char *prefix, writer *w,
                       ckpt_error *err)
{
    const ckpt_ds *ds = p->ds;
    const ds_param *pr = &ds->params[uf->param];
    const uparam *u = &p->params[uf->param];
    ds_frag_at *frags = malloc((size_t)(ds->W ? ds->W : 1) * sizeof *frags);
    if (!frags) return ckpt_fail_oom(err);
    size_t n = ckpt_ds_fragments(ds, uf->param, uf->key, frags);
    int dtype = n ? frags[0].dtype : CKPT_FLOAT32;
    for (size_t j = 1; j < n; j++)
        if (frags[j].dtype != dtype) dtype = CKPT_DTYPE_ANY;
    const char *storage = storage_of(dtype);
    if (n != pr->frags_len || !storage) {
        free(frags);
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_LAYOUT, CKPT_NONE, 0, "universal: %s has no %s of one float dtype",
                         pr->name, ds_key_names[uf->key]);
    }
    uint64_t dims[8];
    for (uint32_t j = 0; j < pr->rank_dims && j < 8; j++) dims[j] = pr->dims[j];
    uint64_t numel = pr->count;
    if (u->vocab) {
        uint64_t per_row = pr->dims[0] ? pr->count / pr->dims[0] : 0;
        dims[0] = u->rows;
        numel = u->rows * per_row;
    }
    strbuf sb = {0};
    ckpt_pw_proto(&sb, 2);
    ckpt_pw_op(&sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(&sb, CKPT_OP_MARK);
    if (u->mode != U_REPLICATED && u->mode != U_AVERAGE) {
        ckpt_pw_str(&sb, "cat_dim");
        ckpt_pw_int(&sb, u->mode == U_ROW ? 1 : 0);
    }
    if (u->mode == U_SUB2) {
        ckpt_pw_str(&sb, "param_n_sub_params");
        ckpt_pw_int(&sb, 2);
    }
    if (u->vocab) {
        ckpt_pw_str(&sb, "vocab_tensor");
        ckpt_pw_op(&sb, CKPT_OP_NEWTRUE);
    }
    ckpt_pw_str(&sb, "param");
    u_tensor(&sb, storage, numel, dims, pr->rank_dims);
    ckpt_pw_op(&sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(&sb, CKPT_OP_STOP);
    int rc = sb.failed ? ckpt_fail_oom(err) : member(&w->zw, prefix, "data.pkl", sb.data, sb.len);
    sb_free(&sb);
    ckpt_reader *r = rc ? NULL : ckpt_reader_with_prefix(ckpt_file_source(in), DS_PREFIX);
    if (!rc && !r) rc = ckpt_fail_oom(err);
    char data[96];
    snprintf(data, sizeof data, "%s/data/0", prefix);
    if (!rc) rc = ckpt_zip_begin(&w->zw, data);
    if (!rc) {
        w->dtype = dtype;
        w->average = u->mode == U_AVERAGE;
        uint64_t left = numel;
        for (size_t j = 0; j < n && left && !rc; j++) {
            uint64_t c = frags[j].count < left ? frags[j].count : left;
            r->pos = frags[j].at;
            rc = ckpt_stream_payload(r, c, ckpt_dtype_width(dtype), copy_chunk, w, err);
            left -= c;
        }
        if (!rc) rc = ckpt_zip_end(&w->zw);
    }
    ckpt_reader_free(r);
    free(frags);
    return rc;
}

/* ---- a value read, written back as read ---- */

static bool is_global(ds_tree c, size_t k, const char *module, const char *name)
{
    if (k == CKPT_PNIL) return false;
    const ckpt_pnode *g = ds_node(c, k);
    if (g->kind != CKPT_PK_GLOBAL) return false;
    const char *d = (const char *)c.p->data;
    return g->len == strlen(module) && !memcmp(d + g->at, module, g->len) && g->len2 == strlen(name) &&
           !memcmp(d + g->at2, name, g->len2);
}

static int value(strbuf *sb, ds_tree c, size_t k, int depth, const char *file, ckpt_error *err);

static int items(strbuf *sb, ds_tree c, const ckpt_pnode *n, int depth, const char *file, ckpt_error *err)
{
    for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = c.p->cells[cell].next)
        TRY(value(sb, c, c.p->cells[cell].node, depth + 1, file, err));
    return 0;
}

static int value(strbuf *sb, ds_tree c, size_t k, int depth, const char *file, ckpt_error *err)
{
    if (depth > CKPT_PICKLE_MAX_DEPTH)
        return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                         "universal: %s holds a value nested deeper than %d (or a cycle): not written", file,
                         CKPT_PICKLE_MAX_DEPTH);
    const ckpt_pnode *n = ds_node(c, k);
    const char *d = (const char *)c.p->data;
    switch (n->kind) {
        case CKPT_PK_NONE: ckpt_pw_op(sb, CKPT_OP_NONE); return 0;
        case CKPT_PK_BOOL: ckpt_pw_op(sb, n->truth ? CKPT_OP_NEWTRUE : CKPT_OP_NEWFALSE); return 0;
        case CKPT_PK_INT: ckpt_pw_int(sb, n->i); return 0;
        case CKPT_PK_FLOAT: ckpt_pw_float(sb, n->f); return 0;
        case CKPT_PK_BIGINT:
            if (n->flags & CKPT_PF_TEXT) {
                ckpt_pw_op(sb, CKPT_OP_INT);
                sb_put(sb, d + n->at, n->len);
                sb_putc(sb, '\n');
            } else {
                uint8_t b[5] = {CKPT_OP_LONG4, (uint8_t)n->len, (uint8_t)(n->len >> 8), (uint8_t)(n->len >> 16),
                                (uint8_t)(n->len >> 24)};
                sb_put(sb, (const char *)b, 5);
                sb_put(sb, d + n->at, n->len);
            }
            return 0;
        case CKPT_PK_STR:
            if (n->flags & CKPT_PF_TEXT) {
                ckpt_pw_op(sb, CKPT_OP_UNICODE);
                sb_put(sb, d + n->at, n->len);
                sb_putc(sb, '\n');
            } else ckpt_pw_strn(sb, d + n->at, n->len);
            return 0;
        case CKPT_PK_BYTES: {
            if (n->flags & CKPT_PF_TEXT) break;
            uint8_t b[5] = {CKPT_OP_BINBYTES, (uint8_t)n->len, (uint8_t)(n->len >> 8), (uint8_t)(n->len >> 16),
                            (uint8_t)(n->len >> 24)};
            if (n->flags & CKPT_PF_BYTEARRAY) break;
            sb_put(sb, (const char *)b, 5);
            sb_put(sb, d + n->at, n->len);
            return 0;
        }
        case CKPT_PK_TUPLE:
            ckpt_pw_op(sb, CKPT_OP_MARK);
            TRY(items(sb, c, n, depth, file, err));
            ckpt_pw_op(sb, CKPT_OP_TUPLE);
            return 0;
        case CKPT_PK_LIST:
            ckpt_pw_op(sb, CKPT_OP_EMPTY_LIST);
            if (n->count) {
                ckpt_pw_op(sb, CKPT_OP_MARK);
                TRY(items(sb, c, n, depth, file, err));
                ckpt_pw_op(sb, CKPT_OP_APPENDS);
            }
            return 0;
        case CKPT_PK_DICT:
            ckpt_pw_op(sb, CKPT_OP_EMPTY_DICT);
            if (n->count) {
                ckpt_pw_op(sb, CKPT_OP_MARK);
                TRY(items(sb, c, n, depth, file, err));
                ckpt_pw_op(sb, CKPT_OP_SETITEMS);
            }
            return 0;
        case CKPT_PK_SET:
            if (n->flags & CKPT_PF_FROZEN) {
                ckpt_pw_op(sb, CKPT_OP_MARK);
                TRY(items(sb, c, n, depth, file, err));
                ckpt_pw_op(sb, CKPT_OP_FROZENSET);
                return 0;
            }
            ckpt_pw_op(sb, CKPT_OP_EMPTY_SET);
            if (n->count) {
                ckpt_pw_op(sb, CKPT_OP_MARK);
                TRY(items(sb, c, n, depth, file, err));
                ckpt_pw_op(sb, CKPT_OP_ADDITEMS);
            }
            return 0;
        case CKPT_PK_GLOBAL: ckpt_pw_global_n(sb, d + n->at, n->len, d + n->at2, n->len2); return 0;
        case CKPT_PK_REDUCE:
        case CKPT_PK_BUILD:
        case CKPT_PK_NEWOBJ:
            if (n->kind == CKPT_PK_NEWOBJ && n->c != CKPT_PNIL) break;
            TRY(value(sb, c, n->a, depth + 1, file, err));
            TRY(value(sb, c, n->b, depth + 1, file, err));
            ckpt_pw_op(sb, n->kind == CKPT_PK_REDUCE  ? CKPT_OP_REDUCE
                           : n->kind == CKPT_PK_BUILD ? CKPT_OP_BUILD
                                                      : CKPT_OP_NEWOBJ);
            if (n->count) {
                /* what SETITEMS (an OrderedDict's) or APPENDS added */
                bool pairs = is_global(c, n->a, "collections", "OrderedDict");
                ckpt_pw_op(sb, CKPT_OP_MARK);
                TRY(items(sb, c, n, depth, file, err));
                ckpt_pw_op(sb, pairs ? CKPT_OP_SETITEMS : CKPT_OP_APPENDS);
            }
            return 0;
        default: break;
    }
    return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                     "universal: %s holds a value ckptscope does not write back (a tensor or bytes): not written",
                     file);
}

static int optimizer_file(const uplan *p, writer *w, ckpt_error *err)
{
    const ds_file *f = p->f0;
    ds_tree c = ds_tree_of(f);
    size_t osd = ds_get(c, f->root, "optimizer_state_dict");
    const char *file = "zero/optimizer_state.pt";
    strbuf sb = {0};
    ckpt_pw_proto(&sb, 2);
    ckpt_pw_op(&sb, CKPT_OP_EMPTY_DICT);
    ckpt_pw_op(&sb, CKPT_OP_MARK);
    ds_dict_it it;
    size_t key, val;
    int rc = 0;
    ds_dict_begin(c, osd, &it);
    while (!rc && ds_dict_next(c, &it, &key, &val)) {
        if (ds_str_is(c, key, "base_optimizer_state") || ds_str_is(c, key, "param_slice_mappings") ||
            ds_str_is(c, key, "single_partition_of_fp32_groups"))
            continue;
        /* _clear_group_paddings, _update_partition_count: a list that is not empty */
        bool paddings = ds_str_is(c, key, "group_paddings"), counts = ds_str_is(c, key, "partition_count");
        if ((paddings || counts) && ds_is_seq(c, val) && ds_len(c, val)) {
            rc = value(&sb, c, key, 0, file, err);
            ckpt_pw_op(&sb, CKPT_OP_EMPTY_LIST);
            ckpt_pw_op(&sb, CKPT_OP_MARK);
            for (size_t g = 0; g < ds_len(c, val); g++) ckpt_pw_int(&sb, paddings ? 0 : (int64_t)p->ds->W);
            ckpt_pw_op(&sb, CKPT_OP_APPENDS);
            continue;
        }
        rc = value(&sb, c, key, 0, file, err);
        if (!rc) rc = value(&sb, c, val, 0, file, err);
    }
    if (!rc) {
        ckpt_pw_str(&sb, "param_groups");
        rc = value(&sb, c, ds_get(c, ds_get(c, osd, "base_optimizer_state"), "param_groups"), 0, file, err);
    }
    ckpt_pw_op(&sb, CKPT_OP_SETITEMS);
    ckpt_pw_op(&sb, CKPT_OP_STOP);
    if (!rc) rc = sb.failed ? ckpt_fail_oom(err) : member(&w->zw, "optimizer_state", "data.pkl", sb.data, sb.len);
    sb_free(&sb);
    return rc;
}

/* step.pt: the step of the lowest rank holding a fragment of the parameter, as stored */
static int step_file(const uplan *p, const ckpt_file *in, const ufile *uf, writer *w, ckpt_error *err)
{
    const ckpt_ds *ds = p->ds;
    const ds_param *pr = &ds->params[uf->param];
    /* the lowest rank holding a fragment (a parameter of no element: rank 0's) */
    const ds_file *f = pr->frags_len ? &ds->files[ds->frags[pr->frags].file] : p->f0;
    ds_tree c = ds_tree_of(f);
    size_t node = ds_get(c, flat_state(f, pr->flat), "step");
    strbuf sb = {0};
    ckpt_pw_proto(&sb, 2);
    size_t x = ds_tensor(c, node);
    const ckpt_torch_tensor *tx = x == DS_NONE ? NULL : &f->t->tensors[x];
    int rc = 0;
    if (tx) {
        const char *storage = storage_of(ckpt_torch_dtype(tx->dtype));
        if (!storage || !tx->contiguous || tx->rank > 8) {
            sb_free(&sb);
            return ckpt_fail(err, DS_PREFIX, CKPT_E_DS_UNSUPPORTED, CKPT_NONE, 0,
                             "universal: %s's step is a %s tensor ckptscope does not write", pr->name, tx->dtype);
        }
        const uint64_t *dims = ckpt_torch_size(f->t, x);
        uint64_t dd[8];
        for (uint32_t j = 0; j < tx->rank; j++) dd[j] = dims[j];
        u_tensor(&sb, storage, tx->count, dd, tx->rank);
    } else rc = value(&sb, c, node, 0, "step.pt", err);
    ckpt_pw_op(&sb, CKPT_OP_STOP);
    if (!rc) rc = sb.failed ? ckpt_fail_oom(err) : member(&w->zw, "step", "data.pkl", sb.data, sb.len);
    sb_free(&sb);
    if (!rc && tx) {
        uint64_t bytes = tx->count * tx->width;
        uint8_t *b = malloc(bytes ? bytes : 1);
        if (!b) return ckpt_fail_oom(err);
        rc = ckpt_read_at(ckpt_file_source(in), f->base + tx->at, b, bytes, "a step", err);
        if (!rc) rc = member(&w->zw, "step", "data/0", b, bytes);
        free(b);
    }
    return rc;
}

typedef struct copy_ctx {
    const ckpt_sink *out;
    ckpt_error *err;
} copy_ctx;

static int raw_chunk(void *ctx, const void *data, size_t elements)
{
    copy_ctx *c = ctx;
    if (c->out->write(c->out->ctx, data, elements))
        return ckpt_fail(c->err, NULL, CKPT_E_IO, CKPT_NONE, 0, "the output could not be written");
    return 0;
}

/* ---- the API ---- */

struct ckpt_universal {
    uplan p;
    const ckpt_file *in;
};

ckpt_universal *ckpt_universal_plan(const ckpt_file *in, ckpt_error *err)
{
    ckpt_universal *u = calloc(1, sizeof *u);
    if (!u) {
        ckpt_fail_oom(err);
        return NULL;
    }
    u->in = in;
    if (make_plan(&u->p, in, err)) {
        ckpt_universal_free(u);
        return NULL;
    }
    return u;
}

void ckpt_universal_free(ckpt_universal *u)
{
    if (!u) return;
    plan_free(&u->p);
    free(u);
}

char *ckpt_universal_plan_json(const ckpt_universal *u)
{
    const uplan *p = &u->p;
    strbuf sb = {0};
    sb_puts(&sb, "{\"files\":[");
    for (size_t k = 0; k < p->len; k++) {
        if (k) sb_putc(&sb, ',');
        j_string(&sb, p->files[k].path);
    }
    sb_puts(&sb, "],\"warnings\":[");
    for (size_t k = 0; k < p->warnings_len; k++) {
        if (k) sb_putc(&sb, ',');
        j_string(&sb, p->warnings[k]);
    }
    sb_puts(&sb, "],\"tag\":");
    if (p->ds->tag) j_string(&sb, p->ds->tag);
    else sb_puts(&sb, "null");
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

int ckpt_universal_write(const ckpt_universal *u, uint64_t index, const ckpt_sink *out, ckpt_error *err)
{
    if (!u || !out) return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to convert");
    const uplan *p = &u->p;
    const ckpt_file *in = u->in;
    if (index >= p->len)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                         "the universal checkpoint has %zu files, not %llu", p->len, (unsigned long long)index + 1);
    int rc = 0;
    const ufile *uf = &p->files[index];
    if (uf->what == F_COPY) {
        const ds_file *f = &p->ds->files[uf->param];
        ckpt_reader *r = ckpt_reader_with_prefix(ckpt_file_source(in), DS_PREFIX);
        copy_ctx cc = {out, err};
        if (!r) return ckpt_fail_oom(err);
        r->pos = f->base;
        rc = ckpt_stream_payload(r, f->size, 1, raw_chunk, &cc, err);
        ckpt_reader_free(r);
        return rc;
    }
    writer w = {.err = err};
    ckpt_zip_writer_init(&w.zw, out, err);
    w.zw.align = 64;
    /* torch.save's record prefix: the file's stem */
    const char *prefix = uf->what == F_TENSOR ? ds_key_names[uf->key] : uf->what == F_STEP ? "step" : "optimizer_state";
    if (uf->what == F_TENSOR) rc = tensor_file(p, in, uf, prefix, &w, err);
    else if (uf->what == F_STEP) rc = step_file(p, in, uf, &w, err);
    else rc = optimizer_file(p, &w, err);
    if (!rc) rc = member(&w.zw, prefix, "version", "3\n", 2);
    if (!rc) rc = ckpt_zip_finish(&w.zw);
    ckpt_zip_writer_free(&w.zw);
    return rc;
}
