/* A bounded JSON reader for headers stored in files (a safetensors header): RFC 8259 text into a
 * flat tree of nodes. Memory is bounded by the text (at most one node per byte and the decoded
 * strings, never longer than their escaped form), nesting by max_depth; strings are checked to
 * be UTF-8 and decoded (escapes, surrogate pairs); a number keeps its exact value only when it
 * is an integer in [0, 2^64), which is all a header's shapes and offsets may be. */
#include "base/json_read.h"

#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const uint8_t *s;
    size_t len, pos;
    size_t max_depth;
    bool nonfinite; /* NaN, Infinity, -Infinity as numbers (Python's json.dumps writes them) */
    ckpt_jdoc *doc;
    const char *reason;
    bool oom;
} parser;

static int fail(parser *p, const char *reason)
{
    if (!p->reason) p->reason = reason;
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        uint8_t c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static size_t new_node(parser *p, int kind)
{
    ckpt_jdoc *d = p->doc;
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 64;
        ckpt_jv *v = realloc(d->v, cap * sizeof *v);
        if (!v) {
            p->oom = true;
            return SIZE_MAX;
        }
        d->v = v;
        d->cap = cap;
    }
    ckpt_jv *v = &d->v[d->n];
    memset(v, 0, sizeof *v);
    v->kind = (uint8_t)kind;
    v->at = p->pos;
    v->first = v->next = SIZE_MAX;
    return d->n++;
}

static bool pool_put(parser *p, const void *bytes, size_t n)
{
    ckpt_jdoc *d = p->doc;
    if (d->pool_len + n + 1 > d->pool_cap) {
        size_t cap = d->pool_cap ? d->pool_cap : 256;
        while (cap < d->pool_len + n + 1) cap *= 2;
        char *q = realloc(d->pool, cap);
        if (!q) {
            p->oom = true;
            return false;
        }
        d->pool = q;
        d->pool_cap = cap;
    }
    memcpy(d->pool + d->pool_len, bytes, n);
    d->pool_len += n;
    return true;
}

static int hex4(parser *p, unsigned *out)
{
    if (p->len - p->pos < 4) return fail(p, "a \\u escape is cut short");
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t c = p->s[p->pos++];
        unsigned h = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 16;
        if (h == 16) return fail(p, "a \\u escape has a character that is not hex");
        v = v * 16 + h;
    }
    *out = v;
    return 0;
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 when it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are not). */
static size_t utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t k;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) k = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) k = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) k = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (n < k) return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[j] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return k;
}

static void put_utf8(uint8_t *b, size_t *n, uint32_t cp)
{
    if (cp < 0x80) b[(*n)++] = (uint8_t)cp;
    else if (cp < 0x800) b[(*n)++] = (uint8_t)(0xc0 | cp >> 6), b[(*n)++] = (uint8_t)(0x80 | (cp & 0x3f));
    else if (cp < 0x10000)
        b[(*n)++] = (uint8_t)(0xe0 | cp >> 12), b[(*n)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)),
        b[(*n)++] = (uint8_t)(0x80 | (cp & 0x3f));
    else
        b[(*n)++] = (uint8_t)(0xf0 | cp >> 18), b[(*n)++] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f)),
        b[(*n)++] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)), b[(*n)++] = (uint8_t)(0x80 | (cp & 0x3f));
}

static int parse_string(parser *p, size_t node)
{
    p->pos++; /* the opening quote */
    size_t start = p->doc->pool_len;
    for (;;) {
        if (p->pos >= p->len) return fail(p, "a string is not closed");
        uint8_t c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return fail(p, "a control character in a string");
        if (c == '\\') {
            if (p->pos + 1 >= p->len) return fail(p, "an escape is cut short");
            uint8_t e = p->s[p->pos + 1], out[4];
            size_t n = 0;
            p->pos += 2;
            switch (e) {
                case '"': out[n++] = '"'; break;
                case '\\': out[n++] = '\\'; break;
                case '/': out[n++] = '/'; break;
                case 'b': out[n++] = '\b'; break;
                case 'f': out[n++] = '\f'; break;
                case 'n': out[n++] = '\n'; break;
                case 'r': out[n++] = '\r'; break;
                case 't': out[n++] = '\t'; break;
                case 'u': {
                    unsigned u, lo;
                    if (hex4(p, &u)) return -1;
                    if (u >= 0xdc00 && u <= 0xdfff) return fail(p, "a lone low surrogate");
                    if (u >= 0xd800 && u <= 0xdbff) {
                        if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                            return fail(p, "a lone high surrogate");
                        p->pos += 2;
                        if (hex4(p, &lo)) return -1;
                        if (lo < 0xdc00 || lo > 0xdfff) return fail(p, "a lone high surrogate");
                        u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                    }
                    put_utf8(out, &n, u);
                    break;
                }
                default: return fail(p, "an unknown escape");
            }
            if (!pool_put(p, out, n)) return -1;
            continue;
        }
        size_t k = utf8_len(p->s + p->pos, p->len - p->pos);
        if (!k) return fail(p, "not UTF-8");
        if (!pool_put(p, p->s + p->pos, k)) return -1;
        p->pos += k;
    }
    size_t n = p->doc->pool_len - start;
    if (!pool_put(p, "", 0)) return -1;
    p->doc->pool[p->doc->pool_len++] = '\0';
    ckpt_jv *v = &p->doc->v[node];
    v->str = start;
    v->len = n;
    return 0;
}

static int parse_number(parser *p, size_t node)
{
    const uint8_t *s = p->s;
    bool neg = false, integer = true, fits = true;
    uint64_t u = 0;
    if (s[p->pos] == '-') neg = true, p->pos++;
    if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "a number has no digits");
    if (s[p->pos] == '0' && p->pos + 1 < p->len && s[p->pos + 1] >= '0' && s[p->pos + 1] <= '9')
        return fail(p, "a number has a leading zero");
    while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') {
        unsigned d = s[p->pos++] - '0';
        if (u > (UINT64_MAX - d) / 10) fits = false;
        else u = u * 10 + d;
    }
    if (p->pos < p->len && s[p->pos] == '.') {
        integer = false;
        p->pos++;
        if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "a number has no digits after .");
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    if (p->pos < p->len && (s[p->pos] == 'e' || s[p->pos] == 'E')) {
        integer = false;
        p->pos++;
        if (p->pos < p->len && (s[p->pos] == '+' || s[p->pos] == '-')) p->pos++;
        if (p->pos >= p->len || s[p->pos] < '0' || s[p->pos] > '9') return fail(p, "a number has no exponent digits");
        while (p->pos < p->len && s[p->pos] >= '0' && s[p->pos] <= '9') p->pos++;
    }
    ckpt_jv *v = &p->doc->v[node];
    v->is_u64 = integer && fits && (!neg || u == 0);
    v->u = v->is_u64 ? u : 0;
    return 0;
}

static int parse_literal(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0) return fail(p, "an unexpected character");
    p->pos += n;
    return 0;
}

static int parse_value(parser *p, size_t depth, size_t *out);

/* An array's or object's members, linked through next; an object's alternate key, value. */
static int parse_container(parser *p, size_t node, size_t depth, bool object)
{
    uint8_t close = object ? '}' : ']';
    p->pos++;
    skip_ws(p);
    size_t last = SIZE_MAX, count = 0;
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        size_t key = SIZE_MAX, val;
        if (object) {
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"') return fail(p, "an object key is not a string");
            if ((key = new_node(p, CKPT_JV_STRING)) == SIZE_MAX) return -1;
            if (parse_string(p, key)) return -1;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':') return fail(p, "a key is not followed by :");
            p->pos++;
        }
        if (parse_value(p, depth + 1, &val)) return -1;
        ckpt_jv *v = p->doc->v;
        size_t head = object ? key : val;
        if (object) v[key].next = val;
        if (last == SIZE_MAX) v[node].first = head;
        else v[last].next = head;
        last = val;
        count++;
        skip_ws(p);
        if (p->pos >= p->len) return fail(p, object ? "an object is not closed" : "an array is not closed");
        uint8_t c = p->s[p->pos++];
        if (c == close) break;
        if (c != ',') return fail(p, "an unexpected character");
    }
    p->doc->v[node].len = count;
    return 0;
}

static int parse_value(parser *p, size_t depth, size_t *out)
{
    if (depth > p->max_depth) return fail(p, "nested too deeply");
    skip_ws(p);
    if (p->pos >= p->len) return fail(p, "a value is missing");
    uint8_t c = p->s[p->pos];
    int kind = c == '{'               ? CKPT_JV_OBJECT
               : c == '['             ? CKPT_JV_ARRAY
               : c == '"'             ? CKPT_JV_STRING
               : c == 't' || c == 'f' ? CKPT_JV_BOOL
               : c == 'n'             ? CKPT_JV_NULL
                                      : CKPT_JV_NUMBER;
    size_t node = new_node(p, kind);
    if (node == SIZE_MAX) return -1;
    *out = node;
    switch (kind) {
        case CKPT_JV_OBJECT: return parse_container(p, node, depth, true);
        case CKPT_JV_ARRAY: return parse_container(p, node, depth, false);
        case CKPT_JV_STRING: return parse_string(p, node);
        case CKPT_JV_NULL: return parse_literal(p, "null");
        case CKPT_JV_BOOL: p->doc->v[node].boolean = c == 't'; return parse_literal(p, c == 't' ? "true" : "false");
        default:
            if (p->nonfinite && (c == 'N' || c == 'I' || (c == '-' && p->pos + 1 < p->len && p->s[p->pos + 1] == 'I')))
                return parse_literal(p, c == 'N' ? "NaN" : c == 'I' ? "Infinity" : "-Infinity");
            if (c != '-' && (c < '0' || c > '9')) return fail(p, "an unexpected character");
            return parse_number(p, node);
    }
}

static int parse_text(const void *text, size_t len, size_t max_depth, bool nonfinite, ckpt_jdoc *doc, size_t *err_at,
                      const char **reason)
{
    memset(doc, 0, sizeof *doc);
    parser p = {text, len, 0, max_depth, nonfinite, doc, NULL, false};
    size_t root;
    int rc = parse_value(&p, 0, &root);
    if (!rc) {
        skip_ws(&p);
        if (p.pos < p.len) rc = fail(&p, "characters after the value");
    }
    if (p.oom) return -2;
    if (rc) {
        *err_at = p.pos;
        *reason = p.reason;
        return -1;
    }
    return 0;
}

int ckpt_json_parse(const void *text, size_t len, size_t max_depth, ckpt_jdoc *doc, size_t *err_at, const char **reason)
{
    return parse_text(text, len, max_depth, false, doc, err_at, reason);
}

int ckpt_json_parse_nonfinite(const void *text, size_t len, size_t max_depth, ckpt_jdoc *doc, size_t *err_at,
                              const char **reason)
{
    return parse_text(text, len, max_depth, true, doc, err_at, reason);
}

size_t ckpt_json_nodes_bound(const void *text, size_t len)
{
    const uint8_t *s = text;
    size_t n = 1;
    for (size_t k = 0; k < len; k++) n += s[k] == ',' || s[k] == ':' || s[k] == '[' || s[k] == '{';
    return n;
}

void ckpt_jdoc_free(ckpt_jdoc *doc)
{
    free(doc->v);
    free(doc->pool);
    memset(doc, 0, sizeof *doc);
}

const ckpt_jv *ckpt_jv_first(const ckpt_jdoc *doc, const ckpt_jv *v)
{
    return v->first == SIZE_MAX ? NULL : &doc->v[v->first];
}

const ckpt_jv *ckpt_jv_next(const ckpt_jdoc *doc, const ckpt_jv *v)
{
    return v->next == SIZE_MAX ? NULL : &doc->v[v->next];
}

const ckpt_jv *ckpt_jv_get(const ckpt_jdoc *doc, const ckpt_jv *obj, const char *key)
{
    if (obj->kind != CKPT_JV_OBJECT) return NULL;
    for (const ckpt_jv *k = ckpt_jv_first(doc, obj); k; k = ckpt_jv_next(doc, ckpt_jv_next(doc, k)))
        if (strcmp(ckpt_jv_str(doc, k), key) == 0) return ckpt_jv_next(doc, k);
    return NULL;
}
