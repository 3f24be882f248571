/* The pickle layer (src/pickle.c): a pickle READ AS DATA, never run. Nothing here is public API.
 *
 * The reader accepts the opcodes of protocols 0-5 that build values (FORMAT.md's list) and makes
 * a tree of nodes with the byte offset of the opcode that made each; nothing a pickle names is
 * looked up or called: GLOBAL and STACK_GLOBAL give names, REDUCE, NEWOBJ and BUILD give nodes
 * that keep the callable and its arguments as data. The memo shares nodes (the tree is a DAG;
 * APPEND or BUILD onto a memoised container can even make a cycle): walk it with
 * ckpt_pickle_walk, which expands each node once.
 *
 * Memory: each opcode makes at most one node and each pushed value lands in at most one item
 * cell, so the tree is bounded by the pickle's byte length (see ckpt_pnode); the arrays grow as opcodes are read,
 * never by a length or count the pickle claims (those are checked against the bytes left). */
#ifndef CKPT_PICKLE_H
#define CKPT_PICKLE_H

#include "base/base.h"

#define CKPT_PICKLE_MAX_DEPTH 1000
#define CKPT_PNIL UINT32_MAX /* no node, no cell */
#define CKPT_PICKLE_MAX_LEN (UINT32_MAX - 1)

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

/* 64 bytes: a hostile pickle of n bytes makes at most n/2 nodes with items (one opcode each, and
 * one to add it), so the tree takes at most about 36 times the pickle's bytes. Indices and spans
 * are 32-bit: a pickle is at most CKPT_PICKLE_MAX_LEN bytes. */
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
    /* torch.load(weights_only=True): every opcode on its list (the first other one's offset and
     * opcode otherwise) */
    bool weights_only_opcodes;
    uint64_t refused_opcode_at;
    unsigned refused_opcode;
} ckpt_pickle;

/* Read one pickle from data[0, len) (up to and including its STOP). `member` names it in texts
 * ("PyTorch: malformed pickle at byte {o} of {member}: {reason}", the name a JSON string);
 * `origin` is added to every offset in texts and nodes (where the pickle starts within the
 * member); `file_at` is where data[0] lies in the file (err->offset), or CKPT_NONE. 0 with *out
 * set (ckpt_pickle_free), or CKPT_E_PICKLE_MALFORMED, CKPT_E_PICKLE_OPCODE, CKPT_E_NO_MEMORY. */
int ckpt_pickle_read(const uint8_t *data, size_t len, const char *member, uint64_t origin, uint64_t file_at,
                     ckpt_pickle **out, ckpt_error *err);
void ckpt_pickle_free(ckpt_pickle *p);

static inline const ckpt_pnode *ckpt_pickle_node(const ckpt_pickle *p, size_t k) { return &p->nodes[k]; }
/* Item j (0-based) of node k, CKPT_PNIL past the end: walks the cells, O(j). */
size_t ckpt_pickle_item(const ckpt_pickle *p, size_t k, size_t j);

/* The names FORMAT.md 10.2 interprets (a GLOBAL's module.name), as data: what a later reader of
 * torch's objects makes of a REDUCE, NEWOBJ or BUILD on them. Anything else is opaque. */
typedef enum ckpt_pname {
    CKPT_PN_OPAQUE = 0,
    CKPT_PN_ORDERED_DICT,      /* collections.OrderedDict */
    CKPT_PN_REBUILD_TENSOR,    /* torch._utils._rebuild_tensor */
    CKPT_PN_REBUILD_TENSOR_V2, /* torch._utils._rebuild_tensor_v2 */
    CKPT_PN_REBUILD_TENSOR_V3, /* torch._utils._rebuild_tensor_v3 */
    CKPT_PN_REBUILD_PARAMETER, /* torch._utils._rebuild_parameter */
    CKPT_PN_REBUILD_PARAMETER_WITH_STATE,
    CKPT_PN_REBUILD_FROM_TYPE_V2, /* torch._tensor._rebuild_from_type_v2 */
    CKPT_PN_STORAGE,              /* torch.{Double,Float,Half,BFloat16,Long,Int,Short,Char,Byte,Bool}Storage */
    CKPT_PN_UNTYPED_STORAGE,      /* torch.UntypedStorage, torch.storage.UntypedStorage */
    CKPT_PN_DTYPE,                /* torch.float32 and the other dtypes */
    CKPT_PN_SIZE,                 /* torch.Size */
    CKPT_PN_DEVICE,               /* torch.device */
    CKPT_PN_CODECS_ENCODE,        /* _codecs.encode (bytes) */
    CKPT_PN_SET,                  /* builtins.set */
    CKPT_PN_FROZENSET,            /* builtins.frozenset */
    CKPT_PN_BYTEARRAY,            /* builtins.bytearray */
    CKPT_PN_COMPLEX,              /* builtins.complex */
    CKPT_PN_COUNTER,              /* collections.Counter */
} ckpt_pname;

/* The known name, and for a storage type or a dtype its element type's name as torch spells the
 * dtype ("float32", "bfloat16"; NULL for others). Python 2 names (__builtin__) are mapped as
 * torch's unpickler maps them. */
ckpt_pname ckpt_pickle_known(const char *module, size_t mlen, const char *name, size_t nlen, const char **dtype);

/* Would torch.load(weights_only=True) resolve this GLOBAL? Its allowlist (torch's
 * _weights_only_unpickler.py _get_allowed_globals, with the modules it blocks). */
bool ckpt_pickle_weights_only_global(const char *module, size_t mlen, const char *name, size_t nlen);
/* Is the opcode on that unpickler's list? */
bool ckpt_pickle_weights_only_opcode(unsigned op);

/* The GLOBALs named, "module.name" each once, in order of first appearance, as a JSON array of
 * strings; only those weights_only refuses when `refused`. */
void ckpt_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, bool refused);
/* Would weights_only accept the whole pickle: its opcodes and its names? */
bool ckpt_pickle_weights_only(const ckpt_pickle *p);
/* The warning "PyTorch: the file names Python callables that torch.load(weights_only=True)
 * refuses: {names}" (the names JSON strings, comma-separated), or nothing when none is refused. */
void ckpt_pickle_weights_only_warning(strbuf *sb, const ckpt_pickle *p);

/* The tree as JSON text from node k, each node expanded once (a node met again, through the
 * memo or a cycle, is {"ref": its offset}), at most CKPT_PICKLE_MAX_DEPTH deep. */
void ckpt_pickle_json(strbuf *sb, const ckpt_pickle *p, size_t k);

#endif
