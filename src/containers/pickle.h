/* The pickle reader (pickle.c; format.md 10.2): a pickle READ AS DATA, never run. It knows
 * opcodes and values only; what the names mean is a family's business.
 *
 * The reader accepts the opcodes of protocols 0-5 that build values (format.md 10.2's list) and makes
 * a tree of nodes with the byte offset of the opcode that made each; nothing a pickle names is
 * looked up or called: GLOBAL and STACK_GLOBAL give names, REDUCE, NEWOBJ and BUILD give nodes
 * that keep the callable and its arguments as data. The memo shares nodes (the tree is a DAG;
 * APPEND or BUILD onto a memoised container can even make a cycle): walk it with
 * ckpt_pickle_walk, which expands each node once.
 *
 * Memory: each opcode makes at most one node (64 bytes), each pushed value lands in at most one
 * item cell (8 bytes), the stack holds at most one 4-byte entry per pushed value and the memo one
 * 4-byte entry per index below the pickle's length. A first walk over the opcodes (pickle.c,
 * measure) counts them, and each array is allocated once at that size: no array grows by
 * doubling or is copied while the pickle is read. A pickle of n bytes takes at most 80n bytes
 * (plus a constant): 76 for a run of NONE between a MARK and an APPENDS (a node, a cell and a
 * stack entry per byte), and 4 for a memo index as high as the pickle is long. A length or
 * count the pickle claims is checked against the bytes left before anything is allocated. */
#ifndef CKPT_PICKLE_H
#define CKPT_PICKLE_H

#include "base/base.h"

#define CKPT_PICKLE_MAX_DEPTH 1000
#define CKPT_PNIL UINT32_MAX /* no node, no cell */
#define CKPT_PICKLE_MAX_LEN (UINT32_MAX - 1)

/* The opcodes, by Python's Lib/pickle.py names. */
enum {
    CKPT_OP_MARK = 0x28,
    CKPT_OP_STOP = 0x2e,
    CKPT_OP_POP = 0x30,
    CKPT_OP_POP_MARK = 0x31,
    CKPT_OP_DUP = 0x32,
    CKPT_OP_FLOAT = 0x46,
    CKPT_OP_INT = 0x49,
    CKPT_OP_BININT = 0x4a,
    CKPT_OP_BININT1 = 0x4b,
    CKPT_OP_LONG = 0x4c,
    CKPT_OP_BININT2 = 0x4d,
    CKPT_OP_NONE = 0x4e,
    CKPT_OP_PERSID = 0x50,
    CKPT_OP_BINPERSID = 0x51,
    CKPT_OP_REDUCE = 0x52,
    CKPT_OP_STRING = 0x53,
    CKPT_OP_BINSTRING = 0x54,
    CKPT_OP_SHORT_BINSTRING = 0x55,
    CKPT_OP_UNICODE = 0x56,
    CKPT_OP_BINUNICODE = 0x58,
    CKPT_OP_APPEND = 0x61,
    CKPT_OP_BUILD = 0x62,
    CKPT_OP_GLOBAL = 0x63,
    CKPT_OP_DICT = 0x64,
    CKPT_OP_EMPTY_DICT = 0x7d,
    CKPT_OP_APPENDS = 0x65,
    CKPT_OP_GET = 0x67,
    CKPT_OP_BINGET = 0x68,
    CKPT_OP_LONG_BINGET = 0x6a,
    CKPT_OP_LIST = 0x6c,
    CKPT_OP_EMPTY_LIST = 0x5d,
    CKPT_OP_PUT = 0x70,
    CKPT_OP_BINPUT = 0x71,
    CKPT_OP_LONG_BINPUT = 0x72,
    CKPT_OP_SETITEM = 0x73,
    CKPT_OP_TUPLE = 0x74,
    CKPT_OP_EMPTY_TUPLE = 0x29,
    CKPT_OP_SETITEMS = 0x75,
    CKPT_OP_BINFLOAT = 0x47,
    CKPT_OP_PROTO = 0x80,
    CKPT_OP_NEWOBJ = 0x81,
    CKPT_OP_TUPLE1 = 0x85,
    CKPT_OP_TUPLE2 = 0x86,
    CKPT_OP_TUPLE3 = 0x87,
    CKPT_OP_NEWTRUE = 0x88,
    CKPT_OP_NEWFALSE = 0x89,
    CKPT_OP_LONG1 = 0x8a,
    CKPT_OP_LONG4 = 0x8b,
    CKPT_OP_BINBYTES = 0x42,
    CKPT_OP_SHORT_BINBYTES = 0x43,
    CKPT_OP_SHORT_BINUNICODE = 0x8c,
    CKPT_OP_BINUNICODE8 = 0x8d,
    CKPT_OP_BINBYTES8 = 0x8e,
    CKPT_OP_EMPTY_SET = 0x8f,
    CKPT_OP_ADDITEMS = 0x90,
    CKPT_OP_FROZENSET = 0x91,
    CKPT_OP_NEWOBJ_EX = 0x92,
    CKPT_OP_STACK_GLOBAL = 0x93,
    CKPT_OP_MEMOIZE = 0x94,
    CKPT_OP_FRAME = 0x95,
    CKPT_OP_BYTEARRAY8 = 0x96,
};

typedef enum ckpt_pkind {
    CKPT_PK_NONE = 0,
    CKPT_PK_BOOL,
    CKPT_PK_INT,    /* .i */
    CKPT_PK_BIGINT, /* .at/.len: the little-endian two's complement bytes (LONG1, LONG4), or the
                       decimal text (INT, LONG of protocol 0) when flags has CKPT_PF_TEXT */
    CKPT_PK_FLOAT,  /* .f */
    CKPT_PK_STR,    /* .at/.len: UTF-8 bytes (CKPT_PF_TEXT: protocol 0's raw-unicode-escape text) */
    CKPT_PK_BYTES,  /* .at/.len (CKPT_PF_TEXT: STRING's quoted text, inside the quotes, escapes kept;
                       CKPT_PF_BYTEARRAY: BYTEARRAY8) */
    CKPT_PK_TUPLE,  /* items */
    CKPT_PK_LIST,   /* items */
    CKPT_PK_DICT,   /* items: key, value, key, value... */
    CKPT_PK_SET,    /* items (CKPT_PF_FROZEN: FROZENSET) */
    CKPT_PK_GLOBAL, /* .at/.len the module, .at2/.len2 the name */
    CKPT_PK_REDUCE, /* .a the callable, .b its arguments; items: what APPEND/SETITEM(S)/ADDITEMS added */
    CKPT_PK_BUILD,  /* .a the object, .b the state; items as for REDUCE */
    CKPT_PK_NEWOBJ, /* .a the class, .b its arguments, .c the keyword arguments (NEWOBJ_EX); items */
    CKPT_PK_PERSID, /* .a the id (BINPERSID), or .at/.len its text (PERSID, CKPT_PF_TEXT) */
} ckpt_pkind;

enum { CKPT_PF_TEXT = 1, CKPT_PF_BYTEARRAY = 2, CKPT_PF_FROZEN = 4 };

/* 64 bytes; a pickle of n bytes makes at most n of them (see the memory note above). Indices and
 * spans are 32-bit: a pickle is at most CKPT_PICKLE_MAX_LEN bytes. */
typedef struct ckpt_pnode {
    uint64_t offset; /* the opcode's byte offset in the pickle (plus the origin given) */
    union {
        int64_t i; /* INT */
        double f;  /* FLOAT */
    };
    uint32_t at, len; /* spans into the pickle's bytes (relative to its first byte) */
    uint32_t at2, len2;
    uint32_t a, b, c;            /* nodes (CKPT_PNIL when none) */
    uint32_t first, last, count; /* item cells, and how many */
    uint16_t height;             /* 1 + its deepest item's, as far as the reader saw (at most 1000) */
    uint8_t kind, flags;
    bool truth; /* BOOL */
} ckpt_pnode;

typedef struct ckpt_pcell {
    uint32_t node, next;
} ckpt_pcell;

typedef struct ckpt_pickle {
    const uint8_t *data; /* the caller's bytes (not copied; they must outlive the tree) */
    size_t len;
    size_t end;   /* the byte after STOP: a legacy torch.save file has pickles in a row */
    size_t root;  /* the node STOP popped */
    int protocol; /* the last PROTO's, -1 when none */
    ckpt_pnode *nodes;
    size_t nodes_len, nodes_cap;
    ckpt_pcell *cells;
    size_t cells_len, cells_cap;
    uint64_t opcode_at[256]; /* each opcode's first offset (plus the origin), CKPT_NONE if unused */
} ckpt_pickle;

/* Read one pickle from data[0, len) (up to and including its STOP). `member` names it in texts
 * ("{prefix}: malformed pickle at byte {o} of {member}: {reason}", the name a JSON string);
 * `origin` is added to every offset in texts and nodes (where the pickle starts within the
 * member); `file_at` is where data[0] lies in the file (err->offset), or CKPT_NONE. 0 with *out
 * set (ckpt_pickle_free), or CKPT_E_PICKLE_MALFORMED, CKPT_E_PICKLE_OPCODE, CKPT_E_NO_MEMORY. */
int ckpt_pickle_read(const uint8_t *data, size_t len, const char *prefix, const char *member, uint64_t origin,
                     uint64_t file_at, ckpt_pickle **out, ckpt_error *err);
void ckpt_pickle_free(ckpt_pickle *p);

/* Each opcode as it was read, in order (STOP last): its byte (plus the origin), the node it made
 * (GLOBAL, REDUCE, BUILD, NEWOBJ, a value; CKPT_PNIL when none) and, for APPEND, SETITEM,
 * ADDITEMS and their plural forms, the value they added to (STOP: the value it returned).
 * A family that judges a pickle as another machine would run it (which opcodes, onto what)
 * reads the pickle through this; the reader itself judges nothing. */
typedef struct ckpt_pickle_event {
    unsigned op;
    uint64_t at;
    size_t node, target;
} ckpt_pickle_event;
typedef void (*ckpt_pickle_observer)(void *ctx, const ckpt_pickle *p, const ckpt_pickle_event *e);
/* ckpt_pickle_read, calling observe(ctx, ...) after each opcode it read (none after a failure). */
int ckpt_pickle_read_observed(const uint8_t *data, size_t len, const char *prefix, const char *member, uint64_t origin,
                              uint64_t file_at, ckpt_pickle_observer observe, void *ctx, ckpt_pickle **out,
                              ckpt_error *err);

static inline const ckpt_pnode *ckpt_pickle_node(const ckpt_pickle *p, size_t k) { return &p->nodes[k]; }
/* Item j (0-based) of node k, CKPT_PNIL past the end: walks the cells, O(j). */
size_t ckpt_pickle_item(const ckpt_pickle *p, size_t k, size_t j);

/* Which GLOBALs a list keeps: module and name as the pickle spells them. */
typedef bool (*ckpt_pickle_name_filter)(const char *module, size_t mlen, const char *name, size_t nlen);
/* The GLOBALs named, "module.name" each once, in order of first appearance, as JSON strings
 * joined by sep (those `keep` keeps; all when it is NULL); the first 4096 distinct names. */
void ckpt_pickle_globals(strbuf *sb, const ckpt_pickle *p, ckpt_pickle_name_filter keep, const char *sep);
/* The same as a JSON array. */
void ckpt_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, ckpt_pickle_name_filter keep);

/* The tree as JSON text from node k, each node expanded once (a node met again, through the
 * memo or a cycle, is {"ref": its offset}), at most CKPT_PICKLE_MAX_DEPTH deep. */
void ckpt_pickle_json(strbuf *sb, const ckpt_pickle *p, size_t k);

#endif
