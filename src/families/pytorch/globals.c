/* The names torch's pickles use (globals.h): what a GLOBAL means to torch.load, torch's dtypes,
 * and torch.load(weights_only=True)'s allowlist and opcodes, per pickle and per file. */
#include "families/pytorch/globals.h"

#include <stdlib.h>
#include <string.h>

/* torch.load(weights_only=True)'s opcodes (torch/_weights_only_unpickler.py, Unpickler.load). */
static const uint8_t weights_only_opcodes[] = {
    CKPT_OP_APPEND,          CKPT_OP_APPENDS,     CKPT_OP_BINFLOAT,    CKPT_OP_BINGET,
    CKPT_OP_BININT,          CKPT_OP_BININT1,     CKPT_OP_BININT2,     CKPT_OP_BINPERSID,
    CKPT_OP_BINPUT,          CKPT_OP_BINUNICODE,  CKPT_OP_BUILD,       CKPT_OP_EMPTY_DICT,
    CKPT_OP_EMPTY_LIST,      CKPT_OP_EMPTY_SET,   CKPT_OP_EMPTY_TUPLE, CKPT_OP_GLOBAL,
    CKPT_OP_LONG1,           CKPT_OP_LONG_BINGET, CKPT_OP_LONG_BINPUT, CKPT_OP_MARK,
    CKPT_OP_NEWFALSE,        CKPT_OP_NEWOBJ,      CKPT_OP_NEWTRUE,     CKPT_OP_NONE,
    CKPT_OP_PROTO,           CKPT_OP_REDUCE,      CKPT_OP_SETITEM,     CKPT_OP_SETITEMS,
    CKPT_OP_SHORT_BINSTRING, CKPT_OP_STOP,        CKPT_OP_TUPLE,       CKPT_OP_TUPLE1,
    CKPT_OP_TUPLE2,          CKPT_OP_TUPLE3,
};

bool ckpt_torch_weights_only_opcode(unsigned op)
{
    for (size_t k = 0; k < sizeof weights_only_opcodes; k++)
        if (weights_only_opcodes[k] == op) return true;
    return false;
}

/* ---- the names torch's pickles use, as data (format.md 10.2) ---- */

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

ckpt_pname ckpt_torch_known(const char *module, size_t mlen, const char *name, size_t nlen, const char **dtype)
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

bool ckpt_torch_weights_only_global(const char *module, size_t mlen, const char *name, size_t nlen)
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

int ckpt_torch_dtype(const char *torch_name)
{
    if (!torch_name) return -1; /* a storage type that is none of torch's */
    for (int d = 0; d < CKPT_DTYPE_COUNT; d++)
        if (ckpt_dtype_name(d) && !strcmp(ckpt_dtype_name(d), torch_name)) return d;
    return -1;
}

static bool global_refused(const ckpt_pickle *p, const ckpt_pnode *n)
{
    return !ckpt_torch_weights_only_global((const char *)p->data + n->at, (size_t)n->len,
                                           (const char *)p->data + n->at2, (size_t)n->len2);
}

static bool refused_name(const char *module, size_t mlen, const char *name, size_t nlen)
{
    return !ckpt_torch_weights_only_global(module, mlen, name, nlen);
}

void ckpt_torch_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, bool refused)
{
    ckpt_pickle_globals_json(sb, p, refused ? refused_name : NULL);
}

bool ckpt_torch_pickle_refused_opcode(const ckpt_pickle *p, unsigned *op, uint64_t *at)
{
    *op = 0;
    *at = CKPT_NONE;
    for (unsigned k = 0; k < 256; k++)
        if (p->opcode_at[k] != CKPT_NONE && !ckpt_torch_weights_only_opcode(k) && p->opcode_at[k] < *at) {
            *op = k;
            *at = p->opcode_at[k];
        }
    return *at != CKPT_NONE;
}

bool ckpt_torch_pickle_weights_only(const ckpt_pickle *p)
{
    unsigned op;
    uint64_t at;
    if (ckpt_torch_pickle_refused_opcode(p, &op, &at)) return false;
    for (size_t k = 0; k < p->nodes_len; k++)
        if (p->nodes[k].kind == CKPT_PK_GLOBAL && global_refused(p, &p->nodes[k])) return false;
    return true;
}

void ckpt_torch_pickle_weights_only_warning(strbuf *sb, const ckpt_pickle *p)
{
    strbuf names = {0};
    ckpt_pickle_globals(&names, p, refused_name, ", ");
    if (names.len) {
        sb_puts(sb, "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: ");
        sb_put(sb, names.data, names.len);
    }
    if (names.failed) sb->failed = true;
    sb_free(&names);
}
