/* Names that end in a number, and numbered folders in the order of their numbers (numbered.h). */
#include "core/numbered.h"

#include <stdlib.h>

bool ckpt_numbered_name(const char *name, const char *prefix, const char *suffix, uint64_t *n)
{
    size_t p = strlen(prefix), s = suffix ? strlen(suffix) : 0, len = strlen(name);
    if (len <= p + s || strncmp(name, prefix, p) || (s && strcmp(name + len - s, suffix))) return false;
    uint64_t v = 0;
    for (const char *c = name + p; c < name + len - s; c++) {
        if (*c < '0' || *c > '9') return false;
        if (ckpt_mul_overflows(v, 10, &v) || ckpt_add_overflows(v, (uint64_t)(*c - '0'), &v)) return false;
    }
    *n = v;
    return true;
}

typedef struct numbered {
    const char *name;
    uint64_t n;
} numbered;

static int cmp_numbered(const void *a, const void *b)
{
    const numbered *x = a, *y = b;
    if (x->n != y->n) return x->n < y->n ? -1 : 1;
    return strcmp(x->name, y->name);
}

char *ckpt_numbered_names_json(const char *const *names, size_t n, const char *prefix, const char *key)
{
    numbered *cs = malloc((n ? n : 1) * sizeof *cs);
    if (!cs) return NULL;
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (names[k] && ckpt_numbered_name(names[k], prefix, NULL, &cs[m].n)) cs[m++].name = names[k];
    qsort(cs, m, sizeof *cs, cmp_numbered);
    strbuf sb = {0};
    sb_putc(&sb, '[');
    for (size_t k = 0; k < m; k++) {
        sb_puts(&sb, k ? ",{\"name\":" : "{\"name\":");
        j_string(&sb, cs[k].name);
        sb_printf(&sb, ",\"%s\":", key);
        j_u64(&sb, cs[k].n);
        sb_putc(&sb, '}');
    }
    sb_putc(&sb, ']');
    free(cs);
    return sb_take(&sb);
}

bool ckpt_last_number(const char *s, size_t n, uint64_t *v)
{
    size_t end = n;
    while (end && !(s[end - 1] >= '0' && s[end - 1] <= '9')) end--;
    if (!end) return false;
    size_t start = end;
    while (start && s[start - 1] >= '0' && s[start - 1] <= '9') start--;
    uint64_t x = 0;
    for (size_t k = start; k < end; k++) x = x > (UINT64_MAX - 9) / 10 ? UINT64_MAX : x * 10 + (uint64_t)(s[k] - '0');
    *v = x;
    return true;
}

static int cmp_run_name(const void *x, const void *y)
{
    const ckpt_run_name *a = x, *b = y;
    if (a->has != b->has) return a->has ? -1 : 1;
    if (a->has && a->n != b->n) return a->n < b->n ? -1 : 1;
    size_t m = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->name, b->name, m);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

void ckpt_run_order(ckpt_run_name *names, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        names[k].n = 0;
        names[k].has = ckpt_last_number(names[k].name, names[k].len, &names[k].n);
    }
    if (count) qsort(names, count, sizeof *names, cmp_run_name);
}
