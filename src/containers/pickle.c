/* The pickle layer (src/pickle.h): FORMAT.md 10.2's reader. A pickle machine runs what a file
 * names; this reader only records it. Every opcode below is read for its arguments and the
 * value it would build; nothing is imported, looked up or called. */
#include "containers/pickle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- opcodes (Python's Lib/pickle.py names) ---- */
enum {
    OP_MARK = 0x28,
    OP_STOP = 0x2e,
    OP_POP = 0x30,
    OP_POP_MARK = 0x31,
    OP_DUP = 0x32,
    OP_FLOAT = 0x46,
    OP_INT = 0x49,
    OP_BININT = 0x4a,
    OP_BININT1 = 0x4b,
    OP_LONG = 0x4c,
    OP_BININT2 = 0x4d,
    OP_NONE = 0x4e,
    OP_PERSID = 0x50,
    OP_BINPERSID = 0x51,
    OP_REDUCE = 0x52,
    OP_STRING = 0x53,
    OP_BINSTRING = 0x54,
    OP_SHORT_BINSTRING = 0x55,
    OP_UNICODE = 0x56,
    OP_BINUNICODE = 0x58,
    OP_APPEND = 0x61,
    OP_BUILD = 0x62,
    OP_GLOBAL = 0x63,
    OP_DICT = 0x64,
    OP_EMPTY_DICT = 0x7d,
    OP_APPENDS = 0x65,
    OP_GET = 0x67,
    OP_BINGET = 0x68,
    OP_LONG_BINGET = 0x6a,
    OP_LIST = 0x6c,
    OP_EMPTY_LIST = 0x5d,
    OP_PUT = 0x70,
    OP_BINPUT = 0x71,
    OP_LONG_BINPUT = 0x72,
    OP_SETITEM = 0x73,
    OP_TUPLE = 0x74,
    OP_EMPTY_TUPLE = 0x29,
    OP_SETITEMS = 0x75,
    OP_BINFLOAT = 0x47,
    OP_PROTO = 0x80,
    OP_NEWOBJ = 0x81,
    OP_TUPLE1 = 0x85,
    OP_TUPLE2 = 0x86,
    OP_TUPLE3 = 0x87,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_LONG4 = 0x8b,
    OP_BINBYTES = 0x42,
    OP_SHORT_BINBYTES = 0x43,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_BINUNICODE8 = 0x8d,
    OP_BINBYTES8 = 0x8e,
    OP_EMPTY_SET = 0x8f,
    OP_ADDITEMS = 0x90,
    OP_FROZENSET = 0x91,
    OP_NEWOBJ_EX = 0x92,
    OP_STACK_GLOBAL = 0x93,
    OP_MEMOIZE = 0x94,
    OP_FRAME = 0x95,
    OP_BYTEARRAY8 = 0x96,
};

/* torch.load(weights_only=True)'s opcodes (torch/_weights_only_unpickler.py, Unpickler.load). */
static const uint8_t weights_only_opcodes[] = {
    OP_APPEND,          OP_APPENDS, OP_BINFLOAT,   OP_BINGET,      OP_BININT,      OP_BININT1,    OP_BININT2,
    OP_BINPERSID,       OP_BINPUT,  OP_BINUNICODE, OP_BUILD,       OP_EMPTY_DICT,  OP_EMPTY_LIST, OP_EMPTY_SET,
    OP_EMPTY_TUPLE,     OP_GLOBAL,  OP_LONG1,      OP_LONG_BINGET, OP_LONG_BINPUT, OP_MARK,       OP_NEWFALSE,
    OP_NEWOBJ,          OP_NEWTRUE, OP_NONE,       OP_PROTO,       OP_REDUCE,      OP_SETITEM,    OP_SETITEMS,
    OP_SHORT_BINSTRING, OP_STOP,    OP_TUPLE,      OP_TUPLE1,      OP_TUPLE2,      OP_TUPLE3,
};

bool ckpt_pickle_weights_only_opcode(unsigned op)
{
    for (size_t k = 0; k < sizeof weights_only_opcodes; k++)
        if (weights_only_opcodes[k] == op) return true;
    return false;
}

/* ---- the reader's state ---- */

typedef struct rd {
    ckpt_pickle *p;
    const uint8_t *d;
    size_t len, pos;
    size_t op_at; /* the current opcode's position */
    uint64_t origin, file_at;
    const char *member;
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
        r->err, "PyTorch", CKPT_E_PICKLE_MALFORMED, r->file_at == CKPT_NONE ? CKPT_NONE : r->file_at + r->op_at, 1,
        "malformed pickle at byte %llu of %s: %s", (unsigned long long)at, name.failed ? "\"\"" : name.data, reason);
    sb_free(&name);
    return rc;
}

static int fail_opcode(rd *r, unsigned op)
{
    strbuf name = {0};
    j_string(&name, r->member);
    int rc =
        ckpt_fail(r->err, "PyTorch", CKPT_E_PICKLE_OPCODE, r->file_at == CKPT_NONE ? CKPT_NONE : r->file_at + r->op_at,
                  1, "unsupported pickle opcode 0x%02x at byte %llu of %s", op,
                  (unsigned long long)(r->origin + r->op_at), name.failed ? "\"\"" : name.data);
    sb_free(&name);
    return rc;
}

static bool grow(void **arr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size) return false;
        n *= 2;
    }
    void *q = realloc(*arr, n * size);
    if (!q) return false;
    *arr = q;
    *cap = n;
    return true;
}

static int new_node(rd *r, int kind, size_t *out)
{
    ckpt_pickle *p = r->p;
    if (!grow((void **)&p->nodes, &p->nodes_cap, p->nodes_len + 1, sizeof *p->nodes)) return ckpt_fail_oom(r->err);
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
    if (!grow((void **)&r->stack, &r->stack_cap, r->stack_len + 1, sizeof *r->stack)) return ckpt_fail_oom(r->err);
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
    if (!grow((void **)&p->cells, &p->cells_cap, p->cells_len + 1, sizeof *p->cells)) return ckpt_fail_oom(r->err);
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
    if (!grow((void **)&r->memo, &r->memo_cap, (size_t)index + 1, sizeof *r->memo)) return ckpt_fail_oom(r->err);
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
        case OP_PROTO:
            TRY(arg_le(r, 1, &v));
            if (v > 5) return fail_malformed(r, "protocol %llu (at most 5 exists)", (unsigned long long)v);
            r->p->protocol = (int)v;
            return 0;
        case OP_FRAME: TRY(arg_le(r, 8, &v)); return length_ok(r, v);
        case OP_MARK:
            if (r->marks_len == CKPT_PICKLE_MAX_DEPTH)
                return fail_malformed(r, "nesting deeper than %d", CKPT_PICKLE_MAX_DEPTH);
            r->marks[r->marks_len++] = r->stack_len;
            return 0;
        case OP_POP:
            if (!avail(r) && r->marks_len) return pop_mark_into(r, 0, false);
            return pop(r, &a);
        case OP_POP_MARK: return pop_mark_into(r, 0, false);
        case OP_DUP: TRY(top(r, &a)); return push(r, a);
        case OP_NONE: return push_new(r, CKPT_PK_NONE, NULL);
        case OP_NEWTRUE:
        case OP_NEWFALSE:
            TRY(push_new(r, CKPT_PK_BOOL, &k));
            r->p->nodes[k].truth = op == OP_NEWTRUE;
            return 0;
        case OP_INT: return text_int(r, false);
        case OP_LONG: return text_int(r, true);
        case OP_BININT: TRY(arg_le(r, 4, &v)); return int_node(r, (int32_t)(uint32_t)v);
        case OP_BININT1: TRY(arg_le(r, 1, &v)); return int_node(r, (int64_t)v);
        case OP_BININT2: TRY(arg_le(r, 2, &v)); return int_node(r, (int64_t)v);
        case OP_LONG1: TRY(arg_le(r, 1, &v)); return long_node(r, v);
        case OP_LONG4:
            TRY(arg_le(r, 4, &v));
            if ((int32_t)(uint32_t)v < 0) return fail_malformed(r, "a negative length");
            return long_node(r, v);
        case OP_FLOAT: return text_float(r);
        case OP_BINFLOAT: {
            TRY(need(r, 8));
            uint64_t bits = 0;
            for (int j = 0; j < 8; j++) bits = bits << 8 | r->d[r->pos + j]; /* big-endian */
            r->pos += 8;
            TRY(push_new(r, CKPT_PK_FLOAT, &k));
            memcpy(&r->p->nodes[k].f, &bits, 8);
            return 0;
        }
        case OP_STRING: {
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
        case OP_BINSTRING:
            TRY(arg_le(r, 4, &v));
            if ((int32_t)(uint32_t)v < 0) return fail_malformed(r, "a negative length");
            return span_node(r, CKPT_PK_BYTES, v, 0);
        case OP_SHORT_BINSTRING:
        case OP_SHORT_BINBYTES: TRY(arg_le(r, 1, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case OP_BINBYTES: TRY(arg_le(r, 4, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case OP_BINBYTES8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_BYTES, v, 0);
        case OP_BYTEARRAY8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_BYTES, v, CKPT_PF_BYTEARRAY);
        case OP_UNICODE: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            TRY(push_new(r, CKPT_PK_STR, &k));
            r->p->nodes[k].at = at;
            r->p->nodes[k].len = n;
            r->p->nodes[k].flags = CKPT_PF_TEXT;
            return 0;
        }
        case OP_SHORT_BINUNICODE: TRY(arg_le(r, 1, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case OP_BINUNICODE: TRY(arg_le(r, 4, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case OP_BINUNICODE8: TRY(arg_le(r, 8, &v)); return span_node(r, CKPT_PK_STR, v, 0);
        case OP_EMPTY_TUPLE: return push_new(r, CKPT_PK_TUPLE, NULL);
        case OP_EMPTY_LIST: return push_new(r, CKPT_PK_LIST, NULL);
        case OP_EMPTY_DICT: return push_new(r, CKPT_PK_DICT, NULL);
        case OP_EMPTY_SET: return push_new(r, CKPT_PK_SET, NULL);
        case OP_TUPLE:
        case OP_LIST:
        case OP_DICT:
        case OP_FROZENSET: {
            if (!r->marks_len) return fail_malformed(r, "no MARK to pop to");
            if (op == OP_DICT && marked(r) % 2)
                return fail_malformed(r, "a DICT or SETITEMS of an odd number of values");
            int kind = op == OP_TUPLE  ? CKPT_PK_TUPLE
                       : op == OP_LIST ? CKPT_PK_LIST
                       : op == OP_DICT ? CKPT_PK_DICT
                                       : CKPT_PK_SET;
            TRY(new_node(r, kind, &k));
            if (op == OP_FROZENSET) r->p->nodes[k].flags = CKPT_PF_FROZEN;
            TRY(pop_mark_into(r, k, true));
            return push(r, k);
        }
        case OP_TUPLE1:
        case OP_TUPLE2:
        case OP_TUPLE3: {
            size_t n = op - OP_TUPLE1 + 1;
            if (avail(r) < n) return fail_malformed(r, "the stack is empty");
            TRY(new_node(r, CKPT_PK_TUPLE, &k));
            for (size_t j = r->stack_len - n; j < r->stack_len; j++) TRY(add_item(r, k, r->stack[j]));
            r->stack_len -= n;
            return push(r, k);
        }
        case OP_APPEND:
            TRY(pop(r, &b));
            TRY(top(r, &a));
            TRY(container(r, a, CKPT_PK_LIST));
            return add_item(r, a, b);
        case OP_SETITEM:
            TRY(pop(r, &c));
            TRY(pop(r, &b));
            TRY(top(r, &a));
            TRY(container(r, a, CKPT_PK_DICT));
            TRY(add_item(r, a, b));
            return add_item(r, a, c);
        case OP_APPENDS:
        case OP_SETITEMS:
        case OP_ADDITEMS: {
            if (!r->marks_len) return fail_malformed(r, "no MARK to pop to");
            if (op == OP_SETITEMS && marked(r) % 2)
                return fail_malformed(r, "a DICT or SETITEMS of an odd number of values");
            size_t from = r->marks[r->marks_len - 1];
            if (from == 0 || (r->marks_len > 1 && r->marks[r->marks_len - 2] == from))
                return fail_malformed(r, "the stack is empty");
            a = r->stack[from - 1];
            TRY(container(r, a, op == OP_APPENDS ? CKPT_PK_LIST : op == OP_SETITEMS ? CKPT_PK_DICT : CKPT_PK_SET));
            return pop_mark_into(r, a, true);
        }
        case OP_GLOBAL: {
            size_t ma = 0, mn = 0, na = 0, nn = 0;
            TRY(line(r, &ma, &mn));
            TRY(line(r, &na, &nn));
            TRY(push_new(r, CKPT_PK_GLOBAL, &k));
            ckpt_pnode *n = &r->p->nodes[k];
            n->at = ma, n->len = mn, n->at2 = na, n->len2 = nn;
            return 0;
        }
        case OP_STACK_GLOBAL: {
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
        case OP_REDUCE:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_REDUCE, a, b, CKPT_PNIL);
        case OP_BUILD:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_BUILD, a, b, CKPT_PNIL);
        case OP_NEWOBJ:
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_NEWOBJ, a, b, CKPT_PNIL);
        case OP_NEWOBJ_EX:
            TRY(pop(r, &c));
            TRY(pop(r, &b));
            TRY(pop(r, &a));
            return replace_top(r, CKPT_PK_NEWOBJ, a, b, c);
        case OP_PERSID: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            TRY(push_new(r, CKPT_PK_PERSID, &k));
            r->p->nodes[k].at = at;
            r->p->nodes[k].len = n;
            r->p->nodes[k].flags = CKPT_PF_TEXT;
            return 0;
        }
        case OP_BINPERSID:
            TRY(pop(r, &a));
            TRY(new_node(r, CKPT_PK_PERSID, &k));
            TRY(set_ref(r, k, &r->p->nodes[k].a, a));
            return push(r, k);
        case OP_GET:
        case OP_PUT: {
            size_t at = 0, n = 0;
            TRY(line(r, &at, &n));
            int64_t i;
            if (!decimal(r->d + at, n, &i) || i < 0)
                return fail_malformed(r, "a GET or PUT whose index is not a number");
            if (op == OP_GET) return memo_get(r, (uint64_t)i);
            TRY(top(r, &a));
            return memo_put(r, (uint64_t)i, a);
        }
        case OP_BINGET:
        case OP_LONG_BINGET: TRY(arg_le(r, op == OP_BINGET ? 1 : 4, &v)); return memo_get(r, v);
        case OP_BINPUT:
        case OP_LONG_BINPUT:
            TRY(arg_le(r, op == OP_BINPUT ? 1 : 4, &v));
            TRY(top(r, &a));
            return memo_put(r, v, a);
        case OP_MEMOIZE: TRY(top(r, &a)); return memo_put(r, r->memo_count, a);
        default: return fail_opcode(r, op);
    }
}

int ckpt_pickle_read(const uint8_t *data, size_t len, const char *member, uint64_t origin, uint64_t file_at,
                     ckpt_pickle **out, ckpt_error *err)
{
    *out = NULL;
    ckpt_pickle *p = calloc(1, sizeof *p);
    if (!p) return ckpt_fail_oom(err);
    p->data = data;
    p->len = len;
    p->protocol = -1;
    p->root = CKPT_PNIL;
    p->weights_only_opcodes = true;
    p->refused_opcode_at = CKPT_NONE;
    rd r = {.p = p, .d = data, .len = len, .origin = origin, .file_at = file_at, .member = member, .err = err};
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
        if (op == OP_STOP) {
            size_t root = 0;
            if ((rc = pop(&r, &root))) break;
            p->root = root;
            p->end = r.pos;
            break;
        }
        if ((rc = step(&r, op))) break;
        if (p->weights_only_opcodes && !ckpt_pickle_weights_only_opcode(op)) {
            p->weights_only_opcodes = false;
            p->refused_opcode_at = origin + r.op_at;
            p->refused_opcode = op;
        }
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

/* ---- names as data ---- */

static bool eq(const char *s, size_t n, const char *lit) { return strlen(lit) == n && !memcmp(s, lit, n); }

/* Python 2's module names, as torch's unpickler maps them (torch._utils IMPORT_MAPPING). */
static void map_module(const char **module, size_t *mlen)
{
    if (eq(*module, *mlen, "__builtin__")) *module = "builtins", *mlen = 8;
    else if (eq(*module, *mlen, "copy_reg")) *module = "copyreg", *mlen = 7;
}

/* The element types of torch's storage classes: {Name}Storage, and the dtype torch spells. */
static const struct {
    const char *storage, *dtype;
} storage_types[] = {
    {"DoubleStorage", "float64"},    {"FloatStorage", "float32"}, {"HalfStorage", "float16"},
    {"BFloat16Storage", "bfloat16"}, {"LongStorage", "int64"},    {"IntStorage", "int32"},
    {"ShortStorage", "int16"},       {"CharStorage", "int8"},     {"ByteStorage", "uint8"},
    {"BoolStorage", "bool"},
};

/* torch's dtypes by their str(): torch.storage._dtype_to_storage_type_map and _new_dtypes, and
 * torch.uint1-7, torch.int1-7 (the weights_only allowlist names them all). */
static const char *const dtypes[] = {
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
    "complex64",
    "complex128",
    "qint8",
    "quint8",
    "qint32",
    "quint4x2",
    "quint2x4",
    "float8_e5m2",
    "float8_e4m3fn",
    "float8_e5m2fnuz",
    "float8_e4m3fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "bits8",
    "bits16",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "complex32",
    "uint16",
    "uint32",
    "uint64",
    "uint1",
    "uint2",
    "uint3",
    "uint4",
    "uint5",
    "uint6",
    "uint7",
    "int1",
    "int2",
    "int3",
    "int4",
    "int5",
    "int6",
    "int7",
};

static const char *dtype_name(const char *name, size_t nlen)
{
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (eq(name, nlen, dtypes[k])) return dtypes[k];
    return NULL;
}

ckpt_pname ckpt_pickle_known(const char *module, size_t mlen, const char *name, size_t nlen, const char **dtype)
{
    if (dtype) *dtype = NULL;
    map_module(&module, &mlen);
    static const struct {
        const char *module, *name;
        ckpt_pname id;
    } names[] = {
        {"collections", "OrderedDict", CKPT_PN_ORDERED_DICT},
        {"torch._utils", "_rebuild_tensor", CKPT_PN_REBUILD_TENSOR},
        {"torch._utils", "_rebuild_tensor_v2", CKPT_PN_REBUILD_TENSOR_V2},
        {"torch._utils", "_rebuild_tensor_v3", CKPT_PN_REBUILD_TENSOR_V3},
        {"torch._utils", "_rebuild_parameter", CKPT_PN_REBUILD_PARAMETER},
        {"torch._utils", "_rebuild_parameter_with_state", CKPT_PN_REBUILD_PARAMETER_WITH_STATE},
        {"torch._tensor", "_rebuild_from_type_v2", CKPT_PN_REBUILD_FROM_TYPE_V2},
        {"torch", "UntypedStorage", CKPT_PN_UNTYPED_STORAGE},
        {"torch.storage", "UntypedStorage", CKPT_PN_UNTYPED_STORAGE},
        {"torch", "Size", CKPT_PN_SIZE},
        {"torch", "device", CKPT_PN_DEVICE},
        {"_codecs", "encode", CKPT_PN_CODECS_ENCODE},
        {"builtins", "set", CKPT_PN_SET},
        {"builtins", "frozenset", CKPT_PN_FROZENSET},
        {"builtins", "bytearray", CKPT_PN_BYTEARRAY},
        {"builtins", "complex", CKPT_PN_COMPLEX},
        {"collections", "Counter", CKPT_PN_COUNTER},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (eq(module, mlen, names[k].module) && eq(name, nlen, names[k].name)) return names[k].id;
    if (eq(module, mlen, "torch")) {
        for (size_t k = 0; k < sizeof storage_types / sizeof storage_types[0]; k++)
            if (eq(name, nlen, storage_types[k].storage)) {
                if (dtype) *dtype = storage_types[k].dtype;
                return CKPT_PN_STORAGE;
            }
        const char *d = dtype_name(name, nlen);
        if (d) {
            if (dtype) *dtype = d;
            return CKPT_PN_DTYPE;
        }
    }
    return CKPT_PN_OPAQUE;
}

/* ---- torch.load(weights_only=True)'s allowlist (torch/_weights_only_unpickler.py) ---- */

/* {prefix}{kind}{suffix} with kind one of the list */
static bool one_of(const char *name, size_t nlen, const char *suffix, const char *const *kinds, size_t n)
{
    size_t sl = strlen(suffix);
    if (nlen <= sl || memcmp(name + nlen - sl, suffix, sl)) return false;
    for (size_t k = 0; k < n; k++)
        if (eq(name, nlen - sl, kinds[k])) return true;
    return false;
}

bool ckpt_pickle_weights_only_global(const char *module, size_t mlen, const char *name, size_t nlen)
{
    map_module(&module, &mlen);
    /* modules it never allows */
    static const char *const blocked[] = {"sys", "os", "posix", "nt"};
    for (size_t k = 0; k < 4; k++)
        if (eq(module, mlen, blocked[k])) return false;
    static const struct {
        const char *module, *name;
    } fixed[] = {
        {"collections", "OrderedDict"},
        {"collections", "Counter"},
        {"torch.nn.parameter", "Parameter"},
        {"torch.serialization", "_get_layout"},
        {"torch", "Size"},
        {"torch", "Tensor"},
        {"torch", "device"},
        {"_codecs", "encode"},
        {"builtins", "bytearray"},
        {"builtins", "set"},
        {"builtins", "complex"},
        {"torch.storage", "UntypedStorage"},
        {"torch.storage", "TypedStorage"},
        {"torch", "per_tensor_affine"},
        {"torch", "per_tensor_symmetric"},
        {"torch", "per_channel_affine"},
        {"torch", "per_channel_symmetric"},
        {"torch", "per_channel_affine_float_qparams"},
        {"torch._utils", "_rebuild_parameter"},
        {"torch._utils", "_rebuild_parameter_with_state"},
        {"torch._utils", "_rebuild_qtensor"},
        {"torch._utils", "_rebuild_tensor"},
        {"torch._utils", "_rebuild_tensor_v2"},
        {"torch._utils", "_rebuild_tensor_v3"},
        {"torch._utils", "_rebuild_sparse_tensor"},
        {"torch._utils", "_rebuild_meta_tensor_no_storage"},
        {"torch._utils", "_rebuild_wrapper_subclass"},
        {"torch._utils", "_rebuild_device_tensor_from_numpy"},
        {"torch._utils", "_rebuild_device_tensor_from_cpu_tensor"},
        {"torch._tensor", "_rebuild_from_type_v2"},
    };
    for (size_t k = 0; k < sizeof fixed / sizeof fixed[0]; k++)
        if (eq(module, mlen, fixed[k].module) && eq(name, nlen, fixed[k].name)) return true;
    /* torch._tensor_classes: torch{,.cuda}.{Double,...,Bool}Tensor, torch{,.cuda}.sparse.{...}Tensor (no Bool) */
    static const char *const tensor_kinds[] = {"Double", "Float", "Half", "BFloat16", "Long",
                                               "Int",    "Short", "Char", "Byte",     "Bool"};
    bool dense = eq(module, mlen, "torch") || eq(module, mlen, "torch.cuda");
    bool sparse = eq(module, mlen, "torch.sparse") || eq(module, mlen, "torch.cuda.sparse");
    if ((dense && one_of(name, nlen, "Tensor", tensor_kinds, 10)) ||
        (sparse && one_of(name, nlen, "Tensor", tensor_kinds, 9)))
        return true;
    /* torch._storage_classes */
    static const char *const storage_kinds[] = {
        "Double", "Float",        "Half",          "BFloat16", "Long",  "Int",    "Short",    "Char",    "Byte",
        "Bool",   "ComplexFloat", "ComplexDouble", "QUInt8",   "QInt8", "QInt32", "QUInt4x2", "QUInt2x4"};
    if (eq(module, mlen, "torch") && one_of(name, nlen, "Storage", storage_kinds, 17)) return true;
    if (eq(module, mlen, "torch.cuda") && one_of(name, nlen, "Storage", storage_kinds, 12)) return true;
    /* dtypes: str(torch.float32) is "torch.float32" */
    return eq(module, mlen, "torch") && dtype_name(name, nlen);
}

/* "module.name" of a GLOBAL node */
static void put_global(strbuf *sb, const ckpt_pickle *p, const ckpt_pnode *n)
{
    strbuf s = {0};
    sb_put(&s, (const char *)p->data + n->at, (size_t)n->len);
    sb_putc(&s, '.');
    sb_put(&s, (const char *)p->data + n->at2, (size_t)n->len2);
    /* a NUL inside a name would end the C string: escaped as \u0000 by hand */
    strbuf e = {0};
    sb_putc(&e, '"');
    for (size_t k = 0; k < s.len && !s.failed; k++) {
        unsigned char ch = (unsigned char)s.data[k];
        if (ch == '"' || ch == '\\') sb_printf(&e, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f) sb_printf(&e, "\\u%04x", ch);
        else sb_putc(&e, (char)ch);
    }
    sb_putc(&e, '"');
    if (!e.failed && !s.failed) sb_put(sb, e.data, e.len);
    else sb->failed = true;
    sb_free(&s);
    sb_free(&e);
}

static bool global_refused(const ckpt_pickle *p, const ckpt_pnode *n)
{
    return !ckpt_pickle_weights_only_global((const char *)p->data + n->at, (size_t)n->len,
                                            (const char *)p->data + n->at2, (size_t)n->len2);
}

static bool same_global(const ckpt_pickle *p, const ckpt_pnode *x, const ckpt_pnode *y)
{
    return x->len == y->len && x->len2 == y->len2 && !memcmp(p->data + x->at, p->data + y->at, (size_t)x->len) &&
           !memcmp(p->data + x->at2, p->data + y->at2, (size_t)x->len2);
}

/* Each distinct GLOBAL once. A pickle names few; a hostile one naming many distinct globals is
 * quadratic in them, so only the first 4096 distinct names are compared and listed. */
#define MAX_GLOBALS 4096
static void globals_list(strbuf *sb, const ckpt_pickle *p, bool refused, const char *sep)
{
    size_t seen[MAX_GLOBALS], n_seen = 0, listed = 0;
    for (size_t k = 0; k < p->nodes_len && n_seen < MAX_GLOBALS; k++) {
        const ckpt_pnode *n = &p->nodes[k];
        if (n->kind != CKPT_PK_GLOBAL) continue;
        bool dup = false;
        for (size_t j = 0; j < n_seen && !dup; j++) dup = same_global(p, &p->nodes[seen[j]], n);
        if (dup) continue;
        seen[n_seen++] = k;
        if (refused && !global_refused(p, n)) continue;
        if (listed++) sb_puts(sb, sep);
        put_global(sb, p, n);
    }
}

void ckpt_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, bool refused)
{
    sb_putc(sb, '[');
    globals_list(sb, p, refused, ",");
    sb_putc(sb, ']');
}

bool ckpt_pickle_weights_only(const ckpt_pickle *p)
{
    if (!p->weights_only_opcodes) return false;
    for (size_t k = 0; k < p->nodes_len; k++)
        if (p->nodes[k].kind == CKPT_PK_GLOBAL && global_refused(p, &p->nodes[k])) return false;
    return true;
}

void ckpt_pickle_weights_only_warning(strbuf *sb, const ckpt_pickle *p)
{
    strbuf names = {0};
    globals_list(&names, p, true, ", ");
    if (names.len) {
        sb_puts(sb, "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: ");
        sb_put(sb, names.data, names.len);
    }
    if (names.failed) sb->failed = true;
    sb_free(&names);
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
