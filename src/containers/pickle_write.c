/* The pickle writer: see pickle_write.h. */
#include "containers/pickle_write.h"

#include <string.h>

void ckpt_pw_proto(strbuf *sb, int protocol)
{
    ckpt_pw_op(sb, CKPT_OP_PROTO);
    sb_putc(sb, (char)protocol);
}

void ckpt_pw_int(strbuf *sb, int64_t v)
{
    uint8_t b[10];
    if (v >= 0 && v < 256) {
        b[0] = CKPT_OP_BININT1, b[1] = (uint8_t)v;
        sb_put(sb, (const char *)b, 2);
    } else if (v >= 0 && v < 65536) {
        b[0] = CKPT_OP_BININT2, b[1] = (uint8_t)v, b[2] = (uint8_t)(v >> 8);
        sb_put(sb, (const char *)b, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        b[0] = CKPT_OP_BININT;
        for (int k = 0; k < 4; k++) b[1 + k] = (uint8_t)((uint64_t)v >> (8 * k));
        sb_put(sb, (const char *)b, 5);
    } else { /* LONG1: little-endian two's complement, as few bytes as hold the sign */
        uint64_t u = (uint64_t)v;
        unsigned n = 8;
        while (n > 1) {
            uint8_t top = (uint8_t)(u >> (8 * (n - 1))), next = (uint8_t)(u >> (8 * (n - 2)));
            if ((top == 0 && !(next & 0x80)) || (top == 0xff && (next & 0x80))) n--;
            else break;
        }
        b[0] = CKPT_OP_LONG1, b[1] = (uint8_t)n;
        for (unsigned k = 0; k < n; k++) b[2 + k] = (uint8_t)(u >> (8 * k));
        sb_put(sb, (const char *)b, 2 + n);
    }
}

void ckpt_pw_uint(strbuf *sb, uint64_t v)
{
    if (v <= (uint64_t)INT64_MAX) return ckpt_pw_int(sb, (int64_t)v);
    /* 2^63 and up: 8 bytes and a zero byte on top keep it positive */
    uint8_t b[11];
    b[0] = CKPT_OP_LONG1, b[1] = 9;
    for (int k = 0; k < 8; k++) b[2 + k] = (uint8_t)(v >> (8 * k));
    b[10] = 0;
    sb_put(sb, (const char *)b, 11);
}

void ckpt_pw_float_bits(strbuf *sb, uint64_t bits)
{
    uint8_t b[9];
    b[0] = CKPT_OP_BINFLOAT;
    for (int k = 0; k < 8; k++) b[1 + k] = (uint8_t)(bits >> (56 - 8 * k));
    sb_put(sb, (const char *)b, 9);
}

void ckpt_pw_float(strbuf *sb, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, 8);
    ckpt_pw_float_bits(sb, bits);
}

static void len4(strbuf *sb, int code, size_t n)
{
    uint8_t b[5] = {(uint8_t)code, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
    sb_put(sb, (const char *)b, 5);
}

void ckpt_pw_strn(strbuf *sb, const char *s, size_t n)
{
    len4(sb, CKPT_OP_BINUNICODE, n);
    sb_put(sb, s, n);
}

void ckpt_pw_str(strbuf *sb, const char *s) { ckpt_pw_strn(sb, s, strlen(s)); }

void ckpt_pw_str4(strbuf *sb, const char *s, size_t n)
{
    if (n >= 256) return ckpt_pw_strn(sb, s, n);
    uint8_t b[2] = {CKPT_OP_SHORT_BINUNICODE, (uint8_t)n};
    sb_put(sb, (const char *)b, 2);
    sb_put(sb, s, n);
}

void ckpt_pw_bytes(strbuf *sb, const void *p, size_t n)
{
    if (n < 256) {
        uint8_t b[2] = {CKPT_OP_SHORT_BINBYTES, (uint8_t)n};
        sb_put(sb, (const char *)b, 2);
    } else len4(sb, CKPT_OP_BINBYTES, n);
    sb_put(sb, p, n);
}

void ckpt_pw_global_n(strbuf *sb, const char *module, size_t ml, const char *name, size_t nl)
{
    ckpt_pw_op(sb, CKPT_OP_GLOBAL);
    sb_put(sb, module, ml);
    sb_putc(sb, '\n');
    sb_put(sb, name, nl);
    sb_putc(sb, '\n');
}

void ckpt_pw_global(strbuf *sb, const char *module, const char *name)
{
    ckpt_pw_global_n(sb, module, strlen(module), name, strlen(name));
}

void ckpt_pw_stack_global(strbuf *sb, const char *module, const char *name)
{
    ckpt_pw_str4(sb, module, strlen(module));
    ckpt_pw_str4(sb, name, strlen(name));
    ckpt_pw_op(sb, CKPT_OP_STACK_GLOBAL);
}

void ckpt_pw_tuple_end(strbuf *sb, size_t n)
{
    ckpt_pw_op(sb, n == 0   ? CKPT_OP_EMPTY_TUPLE
                   : n == 1 ? CKPT_OP_TUPLE1
                   : n == 2 ? CKPT_OP_TUPLE2
                   : n == 3 ? CKPT_OP_TUPLE3
                            : CKPT_OP_TUPLE);
}

void ckpt_pw_uint_tuple(strbuf *sb, const uint64_t *v, size_t n)
{
    ckpt_pw_tuple_begin(sb, n);
    for (size_t k = 0; k < n; k++) ckpt_pw_uint(sb, v[k]);
    ckpt_pw_tuple_end(sb, n);
}

bool ckpt_pw_value(strbuf *sb, const ckpt_pickle *p, size_t k, int depth)
{
    if (k == CKPT_PNIL || k >= p->nodes_len || depth > CKPT_PICKLE_MAX_DEPTH) return false;
    const ckpt_pnode *n = ckpt_pickle_node(p, k);
    const char *d = (const char *)p->data;
    switch (n->kind) {
        case CKPT_PK_NONE: ckpt_pw_none(sb); return true;
        case CKPT_PK_BOOL: ckpt_pw_bool(sb, n->truth); return true;
        case CKPT_PK_INT: ckpt_pw_int(sb, n->i); return true;
        case CKPT_PK_FLOAT: ckpt_pw_float(sb, n->f); return true;
        case CKPT_PK_BIGINT: {
            if ((n->flags & CKPT_PF_TEXT) || n->len > 255) return false;
            uint8_t b[2] = {CKPT_OP_LONG1, (uint8_t)n->len};
            sb_put(sb, (const char *)b, 2);
            sb_put(sb, d + n->at, n->len);
            return true;
        }
        case CKPT_PK_STR:
            if (n->flags & CKPT_PF_TEXT) return false;
            ckpt_pw_strn(sb, d + n->at, n->len);
            return true;
        case CKPT_PK_BYTES:
            if (n->flags & (CKPT_PF_TEXT | CKPT_PF_BYTEARRAY)) return false;
            ckpt_pw_bytes(sb, d + n->at, n->len);
            return true;
        case CKPT_PK_TUPLE:
        case CKPT_PK_LIST:
        case CKPT_PK_DICT: {
            /* Python's batches: one item APPEND (SETITEM), more MARK ... APPENDS (SETITEMS) */
            bool tuple = n->kind == CKPT_PK_TUPLE, list = n->kind == CKPT_PK_LIST;
            bool one = n->count == (list ? 1u : 2u);
            if (tuple) ckpt_pw_tuple_begin(sb, n->count);
            else ckpt_pw_op(sb, list ? CKPT_OP_EMPTY_LIST : CKPT_OP_EMPTY_DICT);
            if (!tuple && n->count && !one) ckpt_pw_op(sb, CKPT_OP_MARK);
            for (uint32_t cell = n->first; cell != CKPT_PNIL; cell = p->cells[cell].next)
                if (!ckpt_pw_value(sb, p, p->cells[cell].node, depth + 1)) return false;
            if (tuple) ckpt_pw_tuple_end(sb, n->count);
            else if (one) ckpt_pw_op(sb, list ? CKPT_OP_APPEND : CKPT_OP_SETITEM);
            else if (n->count) ckpt_pw_op(sb, list ? CKPT_OP_APPENDS : CKPT_OP_SETITEMS);
            return true;
        }
        default: return false;
    }
}

const char *ckpt_pw_archive_prefix(const char *wanted)
{
    size_t n = wanted ? strlen(wanted) : 0;
    if (n == 0 || n > 64) return "archive";
    for (size_t k = 0; k < n; k++) {
        char ch = wanted[k];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
              ch == '-'))
            return "archive";
    }
    return wanted;
}
