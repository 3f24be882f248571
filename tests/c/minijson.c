#include "minijson.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p;
    bool failed;
} parser;

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) abort();
    return p;
}

static void ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r') ps->p++;
}

static jvalue *value(parser *ps);

static char *string(parser *ps)
{
    ps->p++; /* the opening quote */
    size_t cap = 16, len = 0;
    char *out = xalloc(cap);
    while (*ps->p && *ps->p != '"') {
        char c = *ps->p++;
        if (c == '\\') {
            char e = *ps->p++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
            if (e == 'u') { /* the table only escapes ASCII */
                char hex[5] = {0};
                memcpy(hex, ps->p, 4);
                ps->p += 4;
                c = (char)strtol(hex, NULL, 16);
            }
        }
        if (len + 2 > cap) {
            cap *= 2;
            out = realloc(out, cap);
            if (!out) abort();
        }
        out[len++] = c;
    }
    if (*ps->p != '"') ps->failed = true;
    else ps->p++;
    out[len] = '\0';
    return out;
}

static void push(jvalue *v, jvalue *item, char *key)
{
    v->items = realloc(v->items, (v->len + 1) * sizeof *v->items);
    if (!v->items) abort();
    v->items[v->len] = item;
    if (v->type == JOBJ) {
        v->keys = realloc(v->keys, (v->len + 1) * sizeof *v->keys);
        if (!v->keys) abort();
        v->keys[v->len] = key;
    }
    v->len++;
}

static jvalue *value(parser *ps)
{
    ws(ps);
    jvalue *v = xalloc(sizeof *v);
    char c = *ps->p;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? JOBJ : JARR;
        char close = c == '{' ? '}' : ']';
        ps->p++;
        ws(ps);
        if (*ps->p == close) {
            ps->p++;
            return v;
        }
        for (;;) {
            char *key = NULL;
            if (v->type == JOBJ) {
                ws(ps);
                if (*ps->p != '"') {
                    ps->failed = true;
                    return v;
                }
                key = string(ps);
                ws(ps);
                if (*ps->p++ != ':') ps->failed = true;
            }
            push(v, value(ps), key);
            ws(ps);
            if (*ps->p == ',') {
                ps->p++;
                continue;
            }
            if (*ps->p == close) {
                ps->p++;
                return v;
            }
            ps->failed = true;
            return v;
        }
    }
    if (c == '"') {
        v->type = JSTR;
        v->text = string(ps);
        return v;
    }
    if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
        v->type = JBOOL;
        v->b = c == 't';
        ps->p += v->b ? 4 : 5;
        return v;
    }
    if (!strncmp(ps->p, "null", 4)) {
        ps->p += 4;
        return v;
    }
    const char *start = ps->p;
    while (*ps->p && strchr("+-0123456789.eE", *ps->p)) ps->p++;
    if (ps->p == start) ps->failed = true;
    v->type = JNUM;
    v->text = xalloc((size_t)(ps->p - start) + 1);
    memcpy(v->text, start, (size_t)(ps->p - start));
    return v;
}

jvalue *json_parse(const char *text)
{
    parser ps = {text, false};
    jvalue *v = value(&ps);
    if (ps.failed) {
        json_free(v);
        return NULL;
    }
    return v;
}

void json_free(jvalue *v)
{
    if (!v) return;
    for (size_t k = 0; k < v->len; k++) {
        json_free(v->items[k]);
        if (v->keys) free(v->keys[k]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    free(v);
}

const jvalue *json_get(const jvalue *obj, const char *key)
{
    if (!obj || obj->type != JOBJ) return NULL;
    for (size_t k = 0; k < obj->len; k++)
        if (!strcmp(obj->keys[k], key)) return obj->items[k];
    return NULL;
}

bool json_is_null(const jvalue *v) { return !v || v->type == JNULL; }

uint64_t json_u64(const jvalue *v)
{
    if (!v || (v->type != JNUM && v->type != JSTR)) return 0;
    return strtoull(v->text, NULL, 10);
}

double json_double(const jvalue *v)
{
    if (!v) return 0;
    if (v->type == JSTR) {
        if (!strcmp(v->text, "NaN")) return NAN;
        if (!strcmp(v->text, "Infinity")) return INFINITY;
        if (!strcmp(v->text, "-Infinity")) return -INFINITY;
    }
    return v->text ? strtod(v->text, NULL) : 0;
}

char *json_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = xalloc((size_t)n + 1);
    if (fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    fclose(f);
    return text;
}
