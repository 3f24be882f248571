/* A DeepSpeed folder laid out as one source for the native tests, as js/folder-source.js lays it
 * out: the folder listed two levels deep, the core asked which files (and which texts first),
 * then the header the core gives and each member's bytes at its offset, in memory. */
#include "ds_folder.h"
#include "base/error.h"
#include "minijson.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static unsigned char *slurp(const char *path, size_t *len, size_t limit)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *d = malloc(cap);
    for (size_t got; d && (got = fread(d + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n >= limit) {
            n = limit;
            break;
        }
        if (n == cap) d = realloc(d, cap *= 2);
    }
    fclose(f);
    *len = n;
    return d;
}

static void json_str(char **out, size_t *len, size_t *cap, const char *s)
{
    for (const char *p = "\""; *p; p++) {
        if (*len + 8 >= *cap) *out = realloc(*out, *cap *= 2);
        (*out)[(*len)++] = *p;
    }
    for (; *s; s++) {
        if (*len + 8 >= *cap) *out = realloc(*out, *cap *= 2);
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') (*out)[(*len)++] = '\\', (*out)[(*len)++] = (char)c;
        else if (c < 0x20) *len += (size_t)sprintf(*out + *len, "\\u%04x", c);
        else (*out)[(*len)++] = (char)c;
    }
    if (*len + 8 >= *cap) *out = realloc(*out, *cap *= 2);
    (*out)[(*len)++] = '"';
    (*out)[*len] = 0;
}

static void append(char **out, size_t *len, size_t *cap, const char *s)
{
    size_t l = strlen(s);
    while (*len + l + 1 >= *cap) *out = realloc(*out, *cap *= 2);
    memcpy(*out + *len, s, l + 1);
    *len += l;
}

typedef struct listing {
    char **names;
    uint64_t *sizes;
    size_t n;
} listing;

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void list(const char *dir, const char *rel, listing *l, int depth)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return;
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        names = realloc(names, (n + 1) * sizeof *names);
        size_t l = strlen(e->d_name) + 1;
        names[n] = malloc(l);
        memcpy(names[n++], e->d_name, l);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    for (size_t k = 0; k < n; k++) {
        char full[8300], name[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[k]);
        snprintf(name, sizeof name, "%s%s%s", rel, *rel ? "/" : "", names[k]);
        struct stat st;
        if (stat(full, &st) == 0) {
            bool folder = S_ISDIR(st.st_mode);
            l->names = realloc(l->names, (l->n + 1) * sizeof *l->names);
            l->sizes = realloc(l->sizes, (l->n + 1) * sizeof *l->sizes);
            size_t nl = strlen(name);
            l->names[l->n] = malloc(nl + 2);
            memcpy(l->names[l->n], name, nl + 1);
            if (folder) strcat(l->names[l->n], "/");
            l->sizes[l->n++] = folder ? CKPT_NONE : (uint64_t)st.st_size;
            if (folder && depth < 3) list(dir, name, l, depth + 1);
        }
        free(names[k]);
    }
    free(names);
}

static char *listing_json(const char *dir, const char *root, const listing *l, const char *const *text_names,
                          char *const *texts, size_t ntexts)
{
    size_t len = 0, cap = 256;
    char *out = malloc(cap);
    out[0] = 0;
    append(&out, &len, &cap, "{\"root\":");
    json_str(&out, &len, &cap, root);
    /* the folder's own name, as the package gives it: the last name of its path */
    const char *slash = strrchr(dir, '/');
    append(&out, &len, &cap, ",\"folder\":");
    json_str(&out, &len, &cap, slash && slash[1] ? slash + 1 : dir);
    append(&out, &len, &cap, ",\"entries\":[");
    for (size_t k = 0; k < l->n; k++) {
        append(&out, &len, &cap, k ? ",{\"name\":" : "{\"name\":");
        json_str(&out, &len, &cap, l->names[k]);
        char num[40];
        if (l->sizes[k] == CKPT_NONE) snprintf(num, sizeof num, ",\"size\":null}");
        else snprintf(num, sizeof num, ",\"size\":%llu}", (unsigned long long)l->sizes[k]);
        append(&out, &len, &cap, num);
    }
    append(&out, &len, &cap, "],\"texts\":{");
    for (size_t k = 0; k < ntexts; k++) {
        if (k) append(&out, &len, &cap, ",");
        json_str(&out, &len, &cap, text_names[k]);
        append(&out, &len, &cap, ":");
        json_str(&out, &len, &cap, texts[k]);
    }
    append(&out, &len, &cap, "}}");
    return out;
}

typedef char *(*ask_fn)(const char *listing, size_t len, ckpt_error *err);

static unsigned char *folder_bytes(const char *dir, const char *root, size_t *len, char **plan_out, ask_fn ask)
{
    listing l = {0};
    list(dir, "", &l, 0);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *text = listing_json(dir, root, &l, NULL, NULL, 0);
    char *plan = ask(text, strlen(text), &err);
    free(text);
    unsigned char *out = NULL;
    jvalue *p = plan ? json_parse(plan) : NULL;
    /* a folder the answer asks for (the model part beside optimizer_{i}/): listed, asked again */
    const jvalue *more = p ? json_get(p, "list") : NULL;
    if (more && more->len) {
        for (size_t k = 0; k < more->len; k++) {
            const char *f = more->items[k]->text;
            size_t fl = strlen(f);
            l.names = realloc(l.names, (l.n + 1) * sizeof *l.names);
            l.sizes = realloc(l.sizes, (l.n + 1) * sizeof *l.sizes);
            l.names[l.n] = malloc(fl + 1);
            memcpy(l.names[l.n], f, fl + 1);
            l.sizes[l.n++] = CKPT_NONE;
            char rel[4096];
            snprintf(rel, sizeof rel, "%.*s", (int)(fl && f[fl - 1] == '/' ? fl - 1 : fl), f);
            list(dir, rel, &l, 3);
        }
        text = listing_json(dir, root, &l, NULL, NULL, 0);
        free(plan);
        plan = ask(text, strlen(text), &err);
        free(text);
        json_free(p);
        p = plan ? json_parse(plan) : NULL;
    }
    const jvalue *read = p ? json_get(p, "read") : NULL;
    if (read && read->len) {
        const char *names[2];
        char *texts[2];
        size_t nt = 0;
        for (size_t k = 0; k < read->len && k < 2; k++) {
            names[nt] = read->items[k]->text;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, names[nt]);
            size_t tl = 0;
            unsigned char *t = slurp(path, &tl, (size_t)json_u64(json_get(p, "readLimit")));
            texts[nt] = malloc(tl + 1);
            memcpy(texts[nt], t ? t : (unsigned char *)"", tl);
            texts[nt][tl] = 0;
            free(t);
            nt++;
        }
        text = listing_json(dir, root, &l, names, texts, nt);
        for (size_t k = 0; k < nt; k++) free(texts[k]);
        free(plan);
        plan = ask(text, strlen(text), &err);
        free(text);
        jvalue *q = plan ? json_parse(plan) : NULL;
        json_free(p);
        p = q;
    }
    const jvalue *members = p ? json_get(p, "members") : NULL;
    if (members) {
        size_t total = (size_t)json_u64(json_get(p, "size"));
        out = calloc(total ? total : 1, 1);
        const jvalue *h = json_get(p, "header");
        for (size_t k = 0; k < h->len; k++) out[k] = (unsigned char)json_u64(h->items[k]);
        for (size_t k = 0; k < members->len; k++) {
            const jvalue *m = members->items[k];
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, json_get(m, "name")->text);
            size_t fl = 0;
            unsigned char *d = slurp(path, &fl, SIZE_MAX);
            memcpy(out + (size_t)json_u64(json_get(m, "offset")), d, fl);
            free(d);
        }
        *len = total;
    }
    json_free(p);
    for (size_t k = 0; k < l.n; k++) free(l.names[k]);
    free(l.names);
    free(l.sizes);
    if (plan_out) *plan_out = plan;
    else free(plan);
    ckpt_error_clear(&err);
    return out;
}

unsigned char *ds_folder_bytes(const char *dir, const char *root, size_t *len, char **plan_out)
{
    return folder_bytes(dir, root, len, plan_out, ckpt_deepspeed_folder_json);
}

unsigned char *dcp_folder_bytes(const char *dir, const char *root, size_t *len, char **plan_out)
{
    return folder_bytes(dir, root, len, plan_out, ckpt_dcp_folder_json);
}

unsigned char *ds_file_bytes(const char *path, size_t *len) { return slurp(path, len, SIZE_MAX); }

int pair_convert_bytes(const unsigned char *opt, size_t opt_len, const unsigned char *model, size_t model_len,
                       const ckpt_convert_options *o, ckpt_buffer *out, ckpt_error *err)
{
    ckpt_source os, ms;
    ckpt_memory om, mm;
    ckpt_source_memory(&os, &om, opt, opt_len);
    ckpt_source_memory(&ms, &mm, model, model_len);
    ckpt_file *fo = ckpt_open(&os, NULL), *fm = ckpt_open(&ms, NULL);
    int rc = fo && fm && !ckpt_file_report(fo)->error.code && !ckpt_file_report(fm)->error.code ? 0 : -1;
    ckpt_pair_result *r = rc ? NULL : ckpt_pair_with(fo, fm, NULL, NULL, NULL);
    if (r && r->failures_len) {
        rc = r->failures[0].code;
        ckpt_error_copy(err, &r->failures[0]);
    } else if (r && r->error.code && !r->cannot_tell) {
        rc = r->error.code;
        ckpt_error_copy(err, &r->error);
    }
    ckpt_pair_result_free(r);
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, out);
    if (!rc) rc = ckpt_convert(fo, o, &sink, NULL, err);
    ckpt_close(fm);
    ckpt_close(fo);
    return rc;
}
