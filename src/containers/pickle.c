/* The pickle reader (pickle.h; format.md 10.2). A pickle machine runs what a file
 * names; this reader only records it. Every opcode below is read for its arguments and the
 * value it would build; nothing is imported, looked up or called. */
#include "containers/pickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reader's state ---- */

typedef struct rd {
    ckpt_pickle *p;
    const uint8_t *d;
    size_t len, pos;
    size_t op_at; /* the current opcode's position */
    uint64_t origin, file_at;
    const char *prefix, *member;
    ckpt_error *err;
    size_t *stack;
    size_t stack_len, stack_cap;
    size_t marks[CKPT_PICKLE_MAX_DEPTH];
    size_t marks_len;
    size_t *memo; /* node + 1, 0 for none */
    size_t memo_cap, memo_count;
} rd;

static int fail_malformed(rd *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int fail_malformed(rd *r, const char *fmt, ...)
{
    char reason[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    strbuf name = {0};
    j_string(&name, r->member);
    uint64_t at = r->origin + r->op_at;
    int rc = ckpt_fail(
        r->err, r->prefix, CKPT_E_PICKLE_MALFORMED, r->file_at == CKPT_NONE ? CKPT_NONE : r->file_at + r->op_at, 1,
        "malformed pickle at byte %llu of %s: %s", (unsigned long long)at, name.failed ? "\"\"" : name.data, reason);
    sb_free(&name);
    return rc;
}

static int fail_opcode(rd *r, unsigned op)
{
    strbuf name = {0};
    j_string(&name, r->member);
    int rc =
        ckpt_fail(r->err, r->prefix, CKPT_E_PICKLE_OPCODE, r->file_at == CKPT_NONE ? CKPT_NONE : r->file_at + r->op_at,
                  1, "unsupported pickle opcode 0x%02x at byte %llu of %s", op,
                  (unsigned long long)(r->origin + r->op_at), name.failed ? "\"\"" : name.data);
    sb_free(&name);
    return rc;
}

static int new_node(rd *r, int kind, size_t *out)
{
    ckpt_pickle *p = r->p;
    if (!ckpt_grow((void **)&p->nodes, &p->nodes_cap, p->nodes_len + 1, sizeof *p->nodes)) return ckpt_fail_oom(r->err);
    ckpt_pnode *n = &p->nodes[p->nodes_len];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->height = 1;
    n->offset = r->origin + r->op_at;
    n->a = n->b = n->c = CKPT_PNIL;
    n->first = n->last = CKPT_PNIL;
    *out = p->nodes_len++;
    return 0;
}

static int push(rd *r, size_t node)
{
    if (!ckpt_grow((void **)&r->stack, &r->stack_cap, r->stack_len + 1, sizeof *r->stack)) return ckpt_fail_oom(r->err);
    r->stack[r->stack_len++] = node;
    return 0;
}

static int push_new(rd *r, int kind, size_t *out)
{
    size_t k = 0;
    TRY(new_node(r, kind, &k));
    if (out) *out = k;
    return push(r, k);
}

/* Values above the innermost mark. */
static size_t avail(const rd *r) { return r->stack_len - (r->marks_len ? r->marks[r->marks_len - 1] : 0); }

static int pop(rd *r, size_t *out)
{
    if (!avail(r)) return fail_malformed(r, "the stack is empty");
    *out = r->stack[--r->stack_len];
    return 0;
}

static int top(rd *r, size_t *out)
{
    if (!avail(r)) return fail_malformed(r, "the stack is empty");
    *out = r->stack[r->stack_len - 1];
    return 0;
}

/* A node's height after holding `child`: deeper than the limit fails. */
static int lift(rd *r, size_t parent, size_t child)
{
    ckpt_pnode *n = &r->p->nodes[parent];
    unsigned h = (unsigned)r->p->nodes[child].height + 1;
    if (h > CKPT_PICKLE_MAX_DEPTH) return fail_malformed(r, "nesting deeper than %d", CKPT_PICKLE_MAX_DEPTH);
    if (h > n->height) n->height = (uint16_t)h;
    return 0;
}

static int add_item(rd *r, size_t parent, size_t child)
{
    ckpt_pickle *p = r->p;
    TRY(lift(r, parent, child));
    if (!ckpt_grow((void **)&p->cells, &p->cells_cap, p->cells_len + 1, sizeof *p->cells)) return ckpt_fail_oom(r->err);
    size_t c = p->cells_len++;
    p->cells[c] = (ckpt_pcell){(uint32_t)child, CKPT_PNIL};
    ckpt_pnode *n = &p->nodes[parent];
    if (n->last == CKPT_PNIL) n->first = (uint32_t)c;
    else p->cells[n->last].next = (uint32_t)c;
    n->last = (uint32_t)c;
    n->count++;
    return 0;
}

static int set_ref(rd *r, size_t parent, uint32_t *field, size_t child)
{
    TRY(lift(r, parent, child));
    *field = (uint32_t)child;
    return 0;
}

/* The values above the innermost mark become items of `parent` (a new node, or the container
 * under the mark); the mark is popped. */
static int pop_mark_into(rd *r, size_t parent, bool has_parent)
{
    if (!r->marks_len) return fail_malformed(r, "no MARK to pop to");
    size_t from = r->marks[--r->marks_len];
    for (size_t k = from; k < r->stack_len && has_parent; k++) TRY(add_item(r, parent, r->stack[k]));
    r->stack_len = from;
    return 0;
}

static size_t marked(const rd *r) { return r->marks_len ? r->stack_len - r->marks[r->marks_len - 1] : 0; }

/* ---- arguments ---- */

static int need(rd *r, size_t n)
{
    if (r->len - r->pos < n) return fail_malformed(r, "the pickle ends inside an opcode's argument");
    return 0;
}

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int k = n; k-- > 0;) v = v << 8 | p[k];
    return v;
}

static int arg_le(rd *r, int n, uint64_t *v)
{
    TRY(need(r, (size_t)n));
    *v = le(r->d + r->pos, n);
    r->pos += (size_t)n;
    return 0;
}

/* A length read from the pickle: no more than the bytes left. */
static int length_ok(rd *r, uint64_t n)
{
    if (n > r->len - r->pos)
        return fail_malformed(r, "a length of %llu bytes, more than the %zu left", (unsigned long long)n,
                              r->len - r->pos);
    return 0;
}

/* A text argument up to a newline: [*at, *at + *n), the newline skipped. */
static int line(rd *r, size_t *at, size_t *n)
{
    const uint8_t *nl = memchr(r->d + r->pos, '\n', r->len - r->pos);
    if (!nl) return fail_malformed(r, "the pickle ends inside an opcode's argument");
    *at = r->pos;
    *n = (size_t)(nl - (r->d + r->pos));
    r->pos += *n + 1;
    return 0;
}

/* A decimal integer (optional sign), false when it is none or does not fit an int64. */
static bool decimal(const uint8_t *s, size_t n, int64_t *out)
{
    size_t k = 0;
    bool neg = false;
    if (k < n && (s[k] == '-' || s[k] == '+')) neg = s[k++] == '-';
    if (k == n) return false;
    uint64_t v = 0;
    for (; k < n; k++) {
        if (s[k] < '0' || s[k] > '9') return false;
        if (v > (UINT64_C(1) << 63) / 10) return false;
        v = v * 10 + (uint64_t)(s[k] - '0');
        if (v > (UINT64_C(1) << 63)) return false;
    }
    if (!neg && v == (UINT64_C(1) << 63)) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static bool all_digits(const uint8_t *s, size_t n)
{
    size_t k = n && (s[0] == '-' || s[0] == '+');
    if (k == n) return false;
    for (; k < n; k++)
        if (s[k] < '0' || s[k] > '9') return false;
    return true;
}

static int memo_put(rd *r, uint64_t index, size_t node)
{
    if (index >= r->len)
        return fail_malformed(r, "memo index %llu is larger than the pickle's %zu bytes", (unsigned long long)index,
                              r->len);
    size_t old = r->memo_cap;
    if (!ckpt_grow((void **)&r->memo, &r->memo_cap, (size_t)index + 1, sizeof *r->memo)) return ckpt_fail_oom(r->err);
    if (r->memo_cap > old) memset(r->memo + old, 0, (r->memo_cap - old) * sizeof *r->memo);
    if (!r->memo[index]) r->memo_count++;
    r->memo[index] = node + 1;
    return 0;
}

static int memo_get(rd *r, uint64_t index)
{
    if (index >= r->memo_cap || !r->memo[index])
        return fail_malformed(r, "memo %llu was never set", (unsigned long long)index);
    return push(r, r->memo[index] - 1);
}

/* A span node (STR, BYTES, BIGINT) of the next n bytes. */
static int span_node(rd *r, int kind, uint64_t n, unsigned flags)
{
    TRY(length_ok(r, n));
    size_t k = 0;
    TRY(push_new(r, kind, &k));
    r->p->nodes[k].at = r->pos;
    r->p->nodes[k].len = n;
    r->p->nodes[k].flags = (uint8_t)flags;
    r->pos += (size_t)n;
    return 0;
}

static int int_node(rd *r, int64_t v)
{
    size_t k = 0;
    TRY(push_new(r, CKPT_PK_INT, &k));
    r->p->nodes[k].i = v;
    return 0;
}

/* LONG1, LONG4: little-endian two's complement; up to 8 bytes is an INT. */
static int long_node(rd *r, uint64_t n)
{
    TRY(length_ok(r, n));
    if (n <= 8) {
        uint64_t v = n ? le(r->d + r->pos, (int)n) : 0;
        if (n && n < 8 && (r->d[r->pos + n - 1] & 0x80)) v |= ~UINT64_C(0) << (8 * n);
        r->pos += (size_t)n;
        int64_t s;
        memcpy(&s, &v, sizeof s);
        return int_node(r, s);
    }
    return span_node(r, CKPT_PK_BIGINT, n, 0);
}

/* INT and LONG of protocol 0: a decimal text ("01"/"00": True/False for INT). */
static int text_int(rd *r, bool is_long)
{
    size_t at = 0, n = 0;
    TRY(line(r, &at, &n));
    const uint8_t *s = r->d + at;
    if (is_long && n && s[n - 1] == 'L') n--;
    if (!is_long && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) {
        size_t k = 0;
        TRY(push_new(r, CKPT_PK_BOOL, &k));
        r->p->nodes[k].truth = s[1] == '1';
        return 0;
    }
    int64_t v;
    if (decimal(s, n, &v)) return int_node(r, v);
    if (!all_digits(s, n)) return fail_malformed(r, "an INT, LONG or FLOAT whose text is not a number");
    size_t k = 0;
    TRY(push_new(r, CKPT_PK_BIGINT, &k));
    r->p->nodes[k].at = at;
    r->p->nodes[k].len = n;
    r->p->nodes[k].flags = CKPT_PF_TEXT;
    return 0;
}

static int text_float(rd *r)
{
    size_t at = 0, n = 0;
    TRY(line(r, &at, &n));
    char buf[64];
    if (n == 0 || n >= sizeof buf) return fail_malformed(r, "an INT, LONG or FLOAT whose text is not a number");
    memcpy(buf, r->d + at, n);
    buf[n] = '\0';
    char *end;
    double x = strtod(buf, &end);
    if (end != buf + n) return fail_malformed(r, "an INT, LONG or FLOAT whose text is not a number");
    size_t k = 0;
    TRY(push_new(r, CKPT_PK_FLOAT, &k));
    r->p->nodes[k].f = x;
    return 0;
}

/* REDUCE, BUILD, NEWOBJ: the node replaces its operands. */
static int replace_top(rd *r, int kind, size_t a, size_t b, size_t c)
{
    size_t k = 0;
    TRY(new_node(r, kind, &k));
    ckpt_pnode *n = &r->p->nodes[k];
    TRY(set_ref(r, k, &n->a, a));
    TRY(set_ref(r, k, &n->b, b));
    if (c != CKPT_PNIL) TRY(set_ref(r, k, &n->c, c));
    return push(r, k);
}

/* APPEND, SETITEM, ADDITEMS and their plural forms add to a container, or to an object built by
 * REDUCE, NEWOBJ or BUILD (a list or dict subclass: OrderedDict is REDUCE then SETITEMS). */
static int container(rd *r, size_t k, int want)
{
    int kind = r->p->nodes[k].kind;
    if (kind == want || kind == CKPT_PK_REDUCE || kind == CKPT_PK_NEWOBJ || kind == CKPT_PK_BUILD) return 0;
    return fail_malformed(r, "APPEND, SETITEM or ADDITEMS onto a value that is not a container");
}

static int step(rd *r, unsigned op)
{
    uint64_t v;
    size_t a = 0, b = 0, c = 0, k = 0;
    switch (op) {
        case CKPT_OP_PROTO:
            TRY(arg_le(r, 1, &v));
            if (v > 5) return fail_malformed(r, "protocol %llu (at most 5 exists)", (unsigned long long)v);
            r->p->protocol = (int)v;
            return 0;
        case CKPT_OP_FRAME: TRY(arg_le(r, 8, &v)); return length_ok(r, v);
        case CKPT_OP_MARK:
            if (r->marks_len == CKPT_PICKLE_MAX_DEPTH)
                return fail_malformed(r, "nesting deeper than %d", CKPT_PICKLE_MAX_DEPTH);
            r->marks[r->marks_len++] = r->stack_len;
            return 0;
        case CKPT_OP_POP:
            if (!avail(r) && r->marks_len) return pop_mark_into(r, 0, false);
            return pop(r, &a);
        case CKPT_OP_POP_MARK: return pop_mark_into(r, 0, false);
        case CKPT_OP_DUP: TRY(top(r, &a)); return push(r, a);
        case CKPT_OP_NONE: return push_new(r, CKPT_PK_NONE, NULL);
        case CKPT_OP_NEWTRUE:
        case CKPT_OP_NEWFALSE:
            TRY(push_new(r, CKPT_PK_BOOL, &k));
            r->p->nodes[k].truth = op == CKPT_OP_NEWTRUE;
            return 0;
        case CKPT_OP_INT: return text_int(r, false);
        case CKPT_OP_LONG: return text_int(r, true);
        case CKPT_OP_BININT: TRY(arg_le(r, 4, &v)); return int_node(r, (int32_t)(uint32_t)v);
        case CKPT_OP_BININT1: TRY(arg_le(r, 1, &v)); return int_node(r, (int64_t)v);
        case CKPT_OP_BININT2: TRY(arg_le(r, 2, &v)); return int_node(r, (int64_t)v);
        case CKPT_OP_LONG1: TRY(arg_le(r, 1, &v)); return long_node(r, v);
        case CKPT_OP_LONG4:
            TRY(arg_le(r, 4, &v));
            if ((int32_t)(uint32_t)v < 0) return fail_malformed(r, "a negative length");
            return long_node(r, v);
        case CKPT_OP_FLOAT: return text_float(r);
        case CKPT_OP_BINFLOAT: {
            TRY(need(r, 8));
            uint64_t bits = 0;
            for (int j = 0; j < 8; j++) bits = bits << 8 | r->d[r->pos + j]; /* big-endian */
            r->pos += 8;
            TRY(push_new(r, CKPT_PK_FLOAT, &k));
            memcpy(&r->p->nodes[k].f, &bits, 8);
            return 0;
        }
        case CKPT_OP_STRING: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            const uint8_t *s = r->d + at;
            if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
                return fail_malformed(r, "a STRING that is not quoted");
            TRY(push_new(r, CKPT_PK_BYTES, &k));
            r->p->nodes[k].at = at + 1;
            r->p->nodes[k].len = n - 2;
            r->p->nodes[k].flags = CKPT_PF_TEXT;
            return 0;
        }
        case CKPT_OP_BINSTRING:
            TRY(arg_le(r, 4, &v));
            if ((int32_t)(uint32_t)v < 0) return fail_malformed(r, "a negative length");
            return span_node(r, CKPT_PK_BYTES, v, 0);
        case CKPT_OP_SHORT_BINSTRING:
        case CKPT_OP_SHORT_BINBYTES: TRY(arg_le(r, 1, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case CKPT_OP_BINBYTES: TRY(arg_le(r, 4, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case CKPT_OP_BINBYTES8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case CKPT_OP_BYTEARRAY8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_BYTES, v, CKPT_PF_BYTEARRAY);
        case CKPT_OP_UNICODE: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            TRY(push_new(r, CKPT_PK_STR, &k));
            r->p->nodes[k].at = at;
            r->p->nodes[k].len = n;
            r->p->nodes[k].flags = CKPT_PF_TEXT;
            return 0;
        }
        case CKPT_OP_SHORT_BINUNICODE: TRY(arg_le(r, 1, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case CKPT_OP_BINUNICODE: TRY(arg_le(r, 4, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case CKPT_OP_BINUNICODE8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case CKPT_OP_EMPTY_TUPLE: return push_new(r, CKPT_PK_TUPLE, NULL);
        case CKPT_OP_EMPTY_LIST: return push_new(r, CKPT_PK_LIST, NULL);
        case CKPT_OP_EMPTY_DICT: return push_new(r, CKPT_PK_DICT, NULL);
        case CKPT_OP_EMPTY_SET: return push_new(r, CKPT_PK_SET, NULL);
        case CKPT_OP_TUPLE:
        case CKPT_OP_LIST:
        case CKPT_OP_DICT:
        case CKPT_OP_FROZENSET: {
            if (!r->marks_len) return fail_malformed(r, "no MARK to pop to");
            if (op == CKPT_OP_DICT && marked(r) % 2)
                return fail_malformed(r, "a DICT or SETITEMS of an odd number of values");
            int kind = op == CKPT_OP_TUPLE  ? CKPT_PK_TUPLE
                       : op == CKPT_OP_LIST ? CKPT_PK_LIST
                       : op == CKPT_OP_DICT ? CKPT_PK_DICT
                                            : CKPT_PK_SET;
            TRY(new_node(r, kind, &k));
            if (op == CKPT_OP_FROZENSET) r->p->nodes[k].flags = CKPT_PF_FROZEN;
            TRY(pop_mark_into(r, k, true));
            return push(r, k);
        }
        case CKPT_OP_TUPLE1:
        case CKPT_OP_TUPLE2:
        case CKPT_OP_TUPLE3: {
            size_t n = op - CKPT_OP_TUPLE1 + 1;
            if (avail(r) < n) return fail_malformed(r, "the stack is empty");
            TRY(new_node(r, CKPT_PK_TUPLE, &k));
            for (size_t j = r->stack_len - n; j < r->stack_len; j++) TRY(add_item(r, k, r->stack[j]));
            r->stack_len -= n;
            return push(r, k);
        }
        case CKPT_OP_APPEND:
            TRY(pop(r, &b));
            TRY(top(r, &a));
            TRY(container(r, a, CKPT_PK_LIST));
            return add_item(r, a, b);
        case CKPT_OP_SETITEM:
            TRY(pop(r, &c));
            TRY(pop(r, &b));
            TRY(top(r, &a));
            TRY(container(r, a, CKPT_PK_DICT));
            TRY(add_item(r, a, b));
            return add_item(r, a, c);
        case CKPT_OP_APPENDS:
        case CKPT_OP_SETITEMS:
        case CKPT_OP_ADDITEMS: {
            if (!r->marks_len) return fail_malformed(r, "no MARK to pop to");
            if (op == CKPT_OP_SETITEMS && marked(r) % 2)
                return fail_malformed(r, "a DICT or SETITEMS of an odd number of values");
            size_t from = r->marks[r->marks_len - 1];
            if (from == 0 || (r->marks_len > 1 && r->marks[r->marks_len - 2] == from))
                return fail_malformed(r, "the stack is empty");
            a = r->stack[from - 1];
            TRY(container(r, a,
                          op == CKPT_OP_APPENDS    ? CKPT_PK_LIST
                          : op == CKPT_OP_SETITEMS ? CKPT_PK_DICT
                                                   : CKPT_PK_SET));
            return pop_mark_into(r, a, true);
        }
        case CKPT_OP_GLOBAL: {
            size_t ma = 0, mn = 0, na = 0, nn = 0;
            TRY(line(r, &ma, &mn));
            TRY(line(r, &na, &nn));
            TRY(push_new(r, CKPT_PK_GLOBAL, &k));
            ckpt_pnode *n = &r->p->nodes[k];
            n->at = ma, n->len = mn, n->at2 = na, n->len2 = nn;
            return 0;
        }
        case CKPT_OP_STACK_GLOBAL: {
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            const ckpt_pnode *m = &r->p->nodes[a], *nm = &r->p->nodes[b];
            if (m->kind != CKPT_PK_STR || nm->kind != CKPT_PK_STR)
                return fail_malformed(r, "a STACK_GLOBAL whose module and name are not strings");
            uint64_t ma = m->at, ml = m->len, na = nm->at, nl = nm->len;
            TRY(push_new(r, CKPT_PK_GLOBAL, &k));
            ckpt_pnode *n = &r->p->nodes[k];
            n->at = ma, n->len = ml, n->at2 = na, n->len2 = nl;
            return 0;
        }
        case CKPT_OP_REDUCE:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_REDUCE, a, b, CKPT_PNIL);
        case CKPT_OP_BUILD:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_BUILD, a, b, CKPT_PNIL);
        case CKPT_OP_NEWOBJ:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_NEWOBJ, a, b, CKPT_PNIL);
        case CKPT_OP_NEWOBJ_EX:
            TRY(pop(r, &c));
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_NEWOBJ, a, b, c);
        case CKPT_OP_PERSID: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            TRY(push_new(r, CKPT_PK_PERSID, &k));
            r->p->nodes[k].at = at;
            r->p->nodes[k].len = n;
            r->p->nodes[k].flags = CKPT_PF_TEXT;
            return 0;
        }
        case CKPT_OP_BINPERSID:
            TRY(pop(r, &a));
            TRY(new_node(r, CKPT_PK_PERSID, &k));
            TRY(set_ref(r, k, &r->p->nodes[k].a, a));
            return push(r, k);
        case CKPT_OP_GET:
        case CKPT_OP_PUT: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            int64_t i;
            if (!decimal(r->d + at, n, &i) || i < 0)
                return fail_malformed(r, "a GET or PUT whose index is not a number");
            if (op == CKPT_OP_GET) return memo_get(r, (uint64_t)i);
            TRY(top(r, &a));
            return memo_put(r, (uint64_t)i, a);
        }
        case CKPT_OP_BINGET:
        case CKPT_OP_LONG_BINGET: TRY(arg_le(r, op == CKPT_OP_BINGET ? 1 : 4, &v)); return memo_get(r, v);
        case CKPT_OP_BINPUT:
        case CKPT_OP_LONG_BINPUT:
            TRY(arg_le(r, op == CKPT_OP_BINPUT ? 1 : 4, &v));
            TRY(top(r, &a));
            return memo_put(r, v, a);
        case CKPT_OP_MEMOIZE: TRY(top(r, &a)); return memo_put(r, r->memo_count, a);
        default: return fail_opcode(r, op);
    }
}

int ckpt_pickle_read(const uint8_t *data, size_t len, const char *prefix, const char *member, uint64_t origin,
                     uint64_t file_at, ckpt_pickle **out, ckpt_error *err)
{
    *out = NULL;
    ckpt_pickle *p = calloc(1, sizeof *p);
    if (!p) return ckpt_fail_oom(err);
    p->data = data;
    p->len = len;
    p->protocol = -1;
    p->root = CKPT_PNIL;
    for (int k = 0; k < 256; k++) p->opcode_at[k] = CKPT_NONE;
    rd r = {.p = p,
            .d = data,
            .len = len,
            .origin = origin,
            .file_at = file_at,
            .prefix = prefix,
            .member = member,
            .err = err};
    int rc = 0;
    if (len > CKPT_PICKLE_MAX_LEN) { /* 32-bit indices and spans */
        rc = fail_malformed(&r, "a pickle of %zu bytes, more than the %u read", len, (unsigned)CKPT_PICKLE_MAX_LEN);
        ckpt_pickle_free(p);
        return rc;
    }
    for (;;) {
        r.op_at = r.pos;
        if (r.pos == len) {
            rc = fail_malformed(&r, "no STOP opcode");
            break;
        }
        unsigned op = data[r.pos++];
        if (op == CKPT_OP_STOP) {
            size_t root = 0;
            if ((rc = pop(&r, &root))) break;
            p->root = root;
            p->end = r.pos;
            break;
        }
        if ((rc = step(&r, op))) break;
        if (p->opcode_at[op] == CKPT_NONE) p->opcode_at[op] = origin + r.op_at;
    }
    free(r.stack);
    free(r.memo);
    if (rc) {
        ckpt_pickle_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void ckpt_pickle_free(ckpt_pickle *p)
{
    if (!p) return;
    free(p->nodes);
    free(p->cells);
    free(p);
}

size_t ckpt_pickle_item(const ckpt_pickle *p, size_t k, size_t j)
{
    size_t c = p->nodes[k].first;
    while (c != CKPT_PNIL && j--) c = p->cells[c].next;
    return c == CKPT_PNIL ? CKPT_PNIL : p->cells[c].node;
}

/* ---- the names a pickle uses ---- */

/* "module.name" of a GLOBAL node */
static void put_global(strbuf *sb, const ckpt_pickle *p, const ckpt_pnode *n)
{
    strbuf s = {0};
    sb_put(&s, (const char *)p->data + n->at, (size_t)n->len);
    sb_putc(&s, '.');
    sb_put(&s, (const char *)p->data + n->at2, (size_t)n->len2);
    /* a NUL inside a name would end a C string: j_string_n escapes it */
    if (!s.failed) j_string_n(sb, s.data, s.len);
    else sb->failed = true;
    sb_free(&s);
}

static bool same_global(const ckpt_pickle *p, const ckpt_pnode *x, const ckpt_pnode *y)
{
    return x->len == y->len && x->len2 == y->len2 && !memcmp(p->data + x->at, p->data + y->at, (size_t)x->len) &&
           !memcmp(p->data + x->at2, p->data + y->at2, (size_t)x->len2);
}

/* Each distinct GLOBAL once. A pickle names few; a hostile one naming many distinct globals is
 * quadratic in them, so only the first 4096 distinct names are compared and listed. */
#define MAX_GLOBALS 4096
void ckpt_pickle_globals(strbuf *sb, const ckpt_pickle *p, ckpt_pickle_name_filter keep, const char *sep)
{
    size_t seen[MAX_GLOBALS], n_seen = 0, listed = 0;
    for (size_t k = 0; k < p->nodes_len && n_seen < MAX_GLOBALS; k++) {
        const ckpt_pnode *n = &p->nodes[k];
        if (n->kind != CKPT_PK_GLOBAL) continue;
        bool dup = false;
        for (size_t j = 0; j < n_seen && !dup; j++) dup = same_global(p, &p->nodes[seen[j]], n);
        if (dup) continue;
        seen[n_seen++] = k;
        if (keep &&
            !keep((const char *)p->data + n->at, (size_t)n->len, (const char *)p->data + n->at2, (size_t)n->len2))
            continue;
        if (listed++) sb_puts(sb, sep);
        put_global(sb, p, n);
    }
}

void ckpt_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, ckpt_pickle_name_filter keep)
{
    sb_putc(sb, '[');
    ckpt_pickle_globals(sb, p, keep, ",");
    sb_putc(sb, ']');
}

/* ---- the tree as JSON (tests, fuzzing, a later reader's debugging) ---- */

static const char *const kind_names[] = {"none", "bool", "int", "bigint", "float",  "str",   "bytes",  "tuple",
                                         "list", "dict", "set", "global", "reduce", "build", "newobj", "persid"};

static void span_hex(strbuf *sb, const ckpt_pickle *p, uint64_t at, uint64_t len)
{
    sb_putc(sb, '"');
    for (uint64_t k = 0; k < len && k < 256; k++) sb_printf(sb, "%02x", p->data[at + k]);
    if (len > 256) sb_puts(sb, "...");
    sb_putc(sb, '"');
}

typedef struct walk {
    strbuf *sb;
    const ckpt_pickle *p;
    uint8_t *seen;
} walk;

static void node_json(walk *w, size_t k, unsigned depth)
{
    strbuf *sb = w->sb;
    const ckpt_pickle *p = w->p;
    if (k == CKPT_PNIL) {
        sb_puts(sb, "null");
        return;
    }
    const ckpt_pnode *n = &p->nodes[k];
    if (w->seen[k] || depth >= CKPT_PICKLE_MAX_DEPTH) {
        sb_printf(sb, "{\"ref\":%llu}", (unsigned long long)n->offset);
        return;
    }
    w->seen[k] = 1;
    sb_printf(sb, "{\"kind\":\"%s\",\"at\":%llu", kind_names[n->kind], (unsigned long long)n->offset);
    switch (n->kind) {
        case CKPT_PK_BOOL: sb_puts(sb, n->truth ? ",\"value\":true" : ",\"value\":false"); break;
        case CKPT_PK_INT: sb_printf(sb, ",\"value\":%lld", (long long)n->i); break;
        case CKPT_PK_FLOAT:
            sb_puts(sb, ",\"value\":");
            j_double(sb, n->f);
            break;
        case CKPT_PK_BIGINT:
        case CKPT_PK_STR:
        case CKPT_PK_BYTES:
        case CKPT_PK_PERSID:
            if (n->kind != CKPT_PK_PERSID || (n->flags & CKPT_PF_TEXT)) {
                sb_puts(sb, ",\"hex\":");
                span_hex(sb, p, n->at, n->len);
            }
            break;
        case CKPT_PK_GLOBAL:
            sb_puts(sb, ",\"name\":");
            put_global(sb, p, n);
            break;
        default: break;
    }
    if (n->flags) sb_printf(sb, ",\"flags\":%u", n->flags);
    const char *refs[3] = {"a", "b", "c"};
    size_t vals[3] = {n->a, n->b, n->c};
    for (int j = 0; j < 3; j++)
        if (vals[j] != CKPT_PNIL) {
            sb_printf(sb, ",\"%s\":", refs[j]);
            node_json(w, vals[j], depth + 1);
        }
    if (n->first != CKPT_PNIL) {
        sb_puts(sb, ",\"items\":[");
        for (size_t c = n->first, j = 0; c != CKPT_PNIL; c = p->cells[c].next, j++) {
            if (j) sb_putc(sb, ',');
            node_json(w, p->cells[c].node, depth + 1);
        }
        sb_putc(sb, ']');
    }
    sb_putc(sb, '}');
}

void ckpt_pickle_json(strbuf *sb, const ckpt_pickle *p, size_t k)
{
    walk w = {sb, p, calloc(p->nodes_len ? p->nodes_len : 1, 1)};
    if (!w.seen) {
        sb->failed = true;
        return;
    }
    node_json(&w, k, 0);
    free(w.seen);
}
