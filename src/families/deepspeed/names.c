/* DeepSpeed's names (format.md 11.1): what a file of a tag folder is by its name (engine.py
 * _get_ckpt_name, _get_rank_zero_ckpt_name, _get_zero_ckpt_prefix; the loader's older
 * "...optim_states.pt" without its underscore), and which tag folder of a folder is read:
 * a tag folder itself, or a save_dir's `latest` (read with Python's strip(), as DeepSpeed reads
 * it), else its tag folder with the largest number. The JS package lists a folder and asks
 * ckpt_deepspeed_folder_json which files to lay out as one source (containers/bundle.h). */
#include "families/deepspeed/deepspeed.h"

#include "core/numbered.h"

#include <stdio.h>
#include <stdlib.h>

/* digits at s[*i..n): their value (saturating), false when there are none */
static bool digits(const char *s, size_t n, size_t *i, uint64_t *v)
{
    size_t k = *i;
    uint64_t x = 0;
    while (k < n && s[k] >= '0' && s[k] <= '9') {
        x = x > (UINT64_MAX - 9) / 10 ? UINT64_MAX : x * 10 + (uint64_t)(s[k] - '0');
        k++;
    }
    if (k == *i) return false;
    *i = k;
    *v = x;
    return true;
}

static bool lit(const char *s, size_t n, size_t *i, const char *w)
{
    size_t l = strlen(w);
    if (n - *i < l || memcmp(s + *i, w, l)) return false;
    *i += l;
    return true;
}

static bool contains(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    for (size_t k = 0; k + l <= n; k++)
        if (!memcmp(s + k, w, l)) return true;
    return false;
}

ds_name ds_name_of(const char *s, size_t n)
{
    ds_name out = {DS_ROLE_NONE, CKPT_NONE, DS_PLAIN};
    size_t i = 0;
    uint64_t mp, r;
    if (n >= 6 && !memcmp(s, "layer_", 6)) out.role = DS_ROLE_REFUSED;
    if (n >= 10 && !memcmp(s, "expp_rank_", 10)) out.role = DS_ROLE_REFUSED;
    if (contains(s, n, "expert_")) out.role = DS_ROLE_REFUSED;
    if (out.role) return out;
    /* mp_rank_{mp:02d}_model_states.pt */
    if (lit(s, n, &i, "mp_rank_")) {
        size_t d = i;
        if (digits(s, n, &i, &mp) && i - d >= 2 && lit(s, n, &i, "_model_states.pt") && i == n)
            out.role = mp ? DS_ROLE_REFUSED : DS_ROLE_MODEL;
        return out;
    }
    i = 0;
    if (lit(s, n, &i, "bf16_")) out.prefix = DS_BF16;
    else if (lit(s, n, &i, "fp16_")) out.prefix = DS_FP16;
    if (!lit(s, n, &i, "zero_pp_rank_") || !digits(s, n, &i, &r) || !lit(s, n, &i, "_mp_rank_")) return out;
    size_t d = i;
    if (!digits(s, n, &i, &mp) || i - d < 2) return out;
    bool model = false;
    if (lit(s, n, &i, "_model_states.pt")) model = true;
    else if (!lit(s, n, &i, "_optim_states.pt") && !lit(s, n, &i, "optim_states.pt")) return out;
    if (i != n || (model && out.prefix != DS_PLAIN)) return out;
    out.role = mp ? DS_ROLE_REFUSED : model ? DS_ROLE_ZMODEL : DS_ROLE_OPTIM;
    out.rank = r;
    return out;
}

uint64_t ds_rank_in(const char *name)
{
    const char *z = strstr(name, "zero_pp_rank_");
    if (!z) return CKPT_NONE;
    size_t i = 13, n = strlen(z);
    uint64_t r;
    return digits(z, n, &i, &r) && i < n && z[i] == '_' ? r : CKPT_NONE;
}

/* ---- the folder ---- */

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Python's str.strip() of the text (ASCII whitespace: a tag is a folder's name) */
static char *stripped(const char *s, size_t n)
{
    while (n && is_space(*s)) s++, n--;
    while (n && is_space(s[n - 1])) n--;
    char *t = malloc(n + 1);
    if (!t) return NULL;
    memcpy(t, s, n);
    t[n] = 0;
    return t;
}

/* The entry "{folder}/" of the listing, or SIZE_MAX. */
static size_t find(const ds_listing *l, const char *name, size_t len)
{
    for (size_t k = 0; k < l->n; k++)
        if (strlen(l->names[k]) == len && !memcmp(l->names[k], name, len)) return k;
    return SIZE_MAX;
}

/* The DeepSpeed files of folder `tag` ("" for the folder itself), in listing order. */
static int tag_files(const ds_listing *l, const char *tag, ds_plan *p, ckpt_error *err)
{
    size_t tl = strlen(tag);
    free(p->files);
    p->files = NULL;
    p->files_len = 0;
    for (size_t k = 0; k < l->n; k++) {
        const char *nm = l->names[k];
        size_t len = strlen(nm);
        if (l->sizes[k] == CKPT_NONE || len <= tl + (tl > 0)) continue;
        if (tl && (memcmp(nm, tag, tl) || nm[tl] != '/')) continue;
        const char *base = nm + tl + (tl > 0);
        if (strchr(base, '/')) continue;
        if (ds_name_of(base, strlen(base)).role == DS_ROLE_NONE) continue;
        size_t *q = realloc(p->files, (p->files_len + 1) * sizeof *q);
        if (!q) return ckpt_fail_oom(err);
        p->files = q;
        p->files[p->files_len++] = k;
    }
    return 0;
}

/* A universal checkpoint's tag folder (11.7): it lists zero/ and holds no optimizer partition.
 * Its files are then the model states and every file of zero/ and of zero/{name}/, in listing
 * order (what is not DeepSpeed's is told by universal.c). */
static int universal_files(const ds_listing *l, const char *tag, ds_plan *p, ckpt_error *err)
{
    size_t tl = strlen(tag);
    for (size_t j = 0; j < p->files_len; j++) {
        const char *nm = l->names[p->files[j]] + tl + (tl > 0);
        if (ds_name_of(nm, strlen(nm)).role != DS_ROLE_MODEL) return 0;
    }
    char *zero = malloc(tl + 7);
    if (!zero) return ckpt_fail_oom(err);
    memcpy(zero, tag, tl);
    memcpy(zero + tl, tl ? "/zero/" : "zero/", tl ? 7 : 6);
    size_t zl = strlen(zero);
    bool listed = find(l, zero, zl) != SIZE_MAX;
    for (size_t k = 0; listed && k < l->n; k++) {
        const char *nm = l->names[k];
        size_t len = strlen(nm);
        if (l->sizes[k] == CKPT_NONE || len <= zl || memcmp(nm, zero, zl)) continue;
        const char *rest = nm + zl, *slash = strchr(rest, '/');
        if (slash && (slash == rest || strchr(slash + 1, '/'))) continue;
        size_t *q = realloc(p->files, (p->files_len + 1) * sizeof *q);
        if (!q) {
            free(zero);
            return ckpt_fail_oom(err);
        }
        p->files = q;
        p->files[p->files_len++] = k;
    }
    free(zero);
    p->universal = listed;
    return 0;
}

int ds_plan_make(const ds_listing *l, ds_plan *p, ckpt_error *err)
{
    memset(p, 0, sizeof *p);
    /* a tag folder: it holds a file named as in 11.1's table */
    TRY(tag_files(l, "", p, err));
    if (p->files_len) {
        p->kind = DS_FOLDER_TAG;
        return universal_files(l, "", p, err);
    }
    size_t lt = find(l, "latest", 6), lu = find(l, "latest_universal", 16);
    p->has_latest = lt != SIZE_MAX && l->sizes[lt] != CKPT_NONE;
    p->has_universal = lu != SIZE_MAX && l->sizes[lu] != CKPT_NONE;
    if (p->has_latest || p->has_universal) {
        p->kind = DS_FOLDER_SAVE_DIR;
        const char *text = p->has_latest ? l->latest : l->latest_universal;
        size_t len = p->has_latest ? l->latest_len : l->latest_universal_len;
        if (!text) {
            p->need_latest = p->has_latest;
            p->need_universal = !p->has_latest;
            return 0;
        }
        if (!(p->tag = stripped(text, len))) return ckpt_fail_oom(err);
        size_t tl = strlen(p->tag);
        char *folder = malloc(tl + 2);
        if (!folder) return ckpt_fail_oom(err);
        memcpy(folder, p->tag, tl);
        folder[tl] = '/';
        folder[tl + 1] = 0;
        bool plain = tl && !strchr(p->tag, '/') && strcmp(p->tag, ".") && strcmp(p->tag, "..");
        p->missing = !plain || find(l, folder, tl + 1) == SIZE_MAX;
        free(folder);
        if (p->missing) return 0;
        TRY(tag_files(l, p->tag, p, err));
        return universal_files(l, p->tag, p, err);
    }
    /* no latest: the tag folder with the largest number (11.5.2) */
    size_t best = SIZE_MAX;
    uint64_t best_n = 0;
    ds_plan q = {0};
    for (size_t k = 0; k < l->n; k++) {
        const char *nm = l->names[k];
        size_t len = strlen(nm);
        if (l->sizes[k] != CKPT_NONE || len < 2 || nm[len - 1] != '/' || memchr(nm, '/', len - 1)) continue;
        char *tag = stripped(nm, len - 1);
        if (!tag) return ckpt_fail_oom(err);
        int rc = tag_files(l, tag, &q, err);
        free(tag);
        if (rc) {
            ds_plan_free(&q);
            return rc;
        }
        if (!q.files_len) continue;
        uint64_t v = 0;
        bool has = ckpt_last_number(nm, len - 1, &v);
        if (best == SIZE_MAX || (has && v >= best_n)) {
            best = k;
            best_n = has ? v : 0;
        }
    }
    ds_plan_free(&q);
    if (best == SIZE_MAX) return 0;
    p->kind = DS_FOLDER_SAVE_DIR;
    p->guessed = true;
    if (!(p->tag = stripped(l->names[best], strlen(l->names[best]) - 1))) return ckpt_fail_oom(err);
    TRY(tag_files(l, p->tag, p, err));
    return universal_files(l, p->tag, p, err);
}

/* A save_dir's tag folders (each holding a file named as in 11.1's table) in run order, as
 * section 9 orders files (ckpt_run_order: global_step300 -> 300, those without a number after
 * them by name); as a JSON array of their names (`run SAVE_DIR`). */
static int run_tags_json(const ds_listing *l, strbuf *sb, ckpt_error *err)
{
    ckpt_run_name *tags = calloc(l->n ? l->n : 1, sizeof *tags);
    if (!tags) return ckpt_fail_oom(err);
    size_t k = 0;
    ds_plan q = {0};
    for (size_t j = 0; j < l->n; j++) {
        const char *nm = l->names[j];
        size_t len = strlen(nm);
        if (l->sizes[j] != CKPT_NONE || len < 2 || nm[len - 1] != '/' || memchr(nm, '/', len - 1)) continue;
        char *tag = malloc(len);
        if (!tag) {
            ds_plan_free(&q);
            free(tags);
            return ckpt_fail_oom(err);
        }
        memcpy(tag, nm, len - 1);
        tag[len - 1] = 0;
        int rc = tag_files(l, tag, &q, err);
        free(tag);
        if (rc) {
            ds_plan_free(&q);
            free(tags);
            return rc;
        }
        if (!q.files_len) continue;
        tags[k++] = (ckpt_run_name){nm, len - 1, false, 0};
    }
    ds_plan_free(&q);
    ckpt_run_order(tags, k);
    sb_putc(sb, '[');
    for (size_t j = 0; j < k; j++) {
        if (j) sb_putc(sb, ',');
        j_string_n(sb, tags[j].name, tags[j].len);
    }
    sb_putc(sb, ']');
    free(tags);
    return 0;
}

void ds_plan_free(ds_plan *p)
{
    free(p->tag);
    free(p->files);
    memset(p, 0, sizeof *p);
}

/* ---- the JS package's question (ckptscope.h) ---- */

char *ckpt_deepspeed_folder_json(const char *listing, size_t len, ckpt_error *err)
{
    ckpt_listing l;
    char *out = NULL;
    uint8_t *include = NULL;
    ds_plan plan = {0};
    strbuf sb = {0};
    static const char form[] = "{\"root\", \"entries\": [{\"name\", \"size\"}], \"texts\"}";
    if (ckpt_listing_read(listing, len, form, &l, err)) goto done;
    const ckpt_jv *texts = ckpt_jv_get(&l.doc, l.top, "texts");
    if (texts && texts->kind != CKPT_JV_OBJECT && texts->kind != CKPT_JV_NULL) {
        ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "a folder's listing is %s", form);
        goto done;
    }
    size_t n = l.count;
    if (!(include = calloc(n ? n : 1, 1))) {
        ckpt_fail_oom(err);
        goto done;
    }
    const ckpt_jv *lt = texts && texts->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&l.doc, texts, "latest") : NULL;
    const ckpt_jv *lu = texts && texts->kind == CKPT_JV_OBJECT ? ckpt_jv_get(&l.doc, texts, "latest_universal") : NULL;
    lt = lt && lt->kind == CKPT_JV_STRING ? lt : NULL;
    lu = lu && lu->kind == CKPT_JV_STRING ? lu : NULL;
    ds_listing dl = {
        l.names,          l.sizes,         n, lt ? ckpt_jv_str(&l.doc, lt) : NULL, lu ? ckpt_jv_str(&l.doc, lu) : NULL,
        lt ? lt->len : 0, lu ? lu->len : 0};
    if (ds_plan_make(&dl, &plan, err)) goto done;
    if (plan.kind == DS_FOLDER_NONE) {
        sb_puts(&sb, "{\"family\":null,\"read\":[]}");
        goto take;
    }
    sb_printf(&sb, "{\"family\":\"%s\",\"read\":[", DS_PREFIX);
    if (plan.need_latest || plan.need_universal) {
        j_string(&sb, plan.need_latest ? "latest" : "latest_universal");
        sb_printf(&sb, "],\"readLimit\":%d}", DS_LATEST_MAX);
        goto take;
    }
    sb_puts(&sb, "],\"tag\":");
    if (plan.tag) j_string(&sb, plan.tag);
    else sb_puts(&sb, "null");
    /* a save_dir's tag folders, in run order */
    if (plan.kind == DS_FOLDER_SAVE_DIR) {
        sb_puts(&sb, ",\"tags\":");
        if (run_tags_json(&dl, &sb, err)) goto done;
    }
    /* the members: latest and latest_universal, the tag folder's DeepSpeed files */
    for (size_t j = 0; j < n; j++)
        include[j] =
            l.sizes[j] != CKPT_NONE && (!strcmp(l.names[j], "latest") || !strcmp(l.names[j], "latest_universal"));
    for (size_t j = 0; j < plan.files_len; j++) include[plan.files[j]] = 1;
    if (ckpt_listing_members_json(&l, DS_PREFIX, include, &sb, err)) goto done;
    sb_putc(&sb, '}');
take:
    if (!(out = sb_take(&sb))) ckpt_fail_oom(err);
done:
    sb_free(&sb);
    ds_plan_free(&plan);
    free(include);
    ckpt_listing_free(&l);
    return out;
}
