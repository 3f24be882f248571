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
    "bcomplex32",
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

int ckpt_torch_dtype(const char *torch_name)
{
    if (!torch_name) return -1; /* a tensor whose dtype global was never named */
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

/* ---- torch.load(weights_only=True) per torch version (globals.h; format.md 10.2) ----
 *
 * Read from torch/_weights_only_unpickler.py of torch 1.13.1, 2.6.0 and 2.14.1 (with
 * torch/_utils.py's IMPORT_MAPPING and NAME_MAPPING, torch/storage.py's dtype maps and
 * torch/__init__.py's storage classes of the same releases). */

static const char *const op_names[256] = {
    [CKPT_OP_MARK] = "MARK",
    [CKPT_OP_STOP] = "STOP",
    [CKPT_OP_POP] = "POP",
    [CKPT_OP_POP_MARK] = "POP_MARK",
    [CKPT_OP_DUP] = "DUP",
    [CKPT_OP_FLOAT] = "FLOAT",
    [CKPT_OP_INT] = "INT",
    [CKPT_OP_BININT] = "BININT",
    [CKPT_OP_BININT1] = "BININT1",
    [CKPT_OP_LONG] = "LONG",
    [CKPT_OP_BININT2] = "BININT2",
    [CKPT_OP_NONE] = "NONE",
    [CKPT_OP_PERSID] = "PERSID",
    [CKPT_OP_BINPERSID] = "BINPERSID",
    [CKPT_OP_REDUCE] = "REDUCE",
    [CKPT_OP_STRING] = "STRING",
    [CKPT_OP_BINSTRING] = "BINSTRING",
    [CKPT_OP_SHORT_BINSTRING] = "SHORT_BINSTRING",
    [CKPT_OP_UNICODE] = "UNICODE",
    [CKPT_OP_BINUNICODE] = "BINUNICODE",
    [CKPT_OP_APPEND] = "APPEND",
    [CKPT_OP_BUILD] = "BUILD",
    [CKPT_OP_GLOBAL] = "GLOBAL",
    [CKPT_OP_DICT] = "DICT",
    [CKPT_OP_EMPTY_DICT] = "EMPTY_DICT",
    [CKPT_OP_APPENDS] = "APPENDS",
    [CKPT_OP_GET] = "GET",
    [CKPT_OP_BINGET] = "BINGET",
    [CKPT_OP_LONG_BINGET] = "LONG_BINGET",
    [CKPT_OP_LIST] = "LIST",
    [CKPT_OP_EMPTY_LIST] = "EMPTY_LIST",
    [CKPT_OP_PUT] = "PUT",
    [CKPT_OP_BINPUT] = "BINPUT",
    [CKPT_OP_LONG_BINPUT] = "LONG_BINPUT",
    [CKPT_OP_SETITEM] = "SETITEM",
    [CKPT_OP_TUPLE] = "TUPLE",
    [CKPT_OP_EMPTY_TUPLE] = "EMPTY_TUPLE",
    [CKPT_OP_SETITEMS] = "SETITEMS",
    [CKPT_OP_BINFLOAT] = "BINFLOAT",
    [CKPT_OP_PROTO] = "PROTO",
    [CKPT_OP_NEWOBJ] = "NEWOBJ",
    [CKPT_OP_TUPLE1] = "TUPLE1",
    [CKPT_OP_TUPLE2] = "TUPLE2",
    [CKPT_OP_TUPLE3] = "TUPLE3",
    [CKPT_OP_NEWTRUE] = "NEWTRUE",
    [CKPT_OP_NEWFALSE] = "NEWFALSE",
    [CKPT_OP_LONG1] = "LONG1",
    [CKPT_OP_LONG4] = "LONG4",
    [CKPT_OP_BINBYTES] = "BINBYTES",
    [CKPT_OP_SHORT_BINBYTES] = "SHORT_BINBYTES",
    [CKPT_OP_SHORT_BINUNICODE] = "SHORT_BINUNICODE",
    [CKPT_OP_BINUNICODE8] = "BINUNICODE8",
    [CKPT_OP_BINBYTES8] = "BINBYTES8",
    [CKPT_OP_EMPTY_SET] = "EMPTY_SET",
    [CKPT_OP_ADDITEMS] = "ADDITEMS",
    [CKPT_OP_FROZENSET] = "FROZENSET",
    [CKPT_OP_NEWOBJ_EX] = "NEWOBJ_EX",
    [CKPT_OP_STACK_GLOBAL] = "STACK_GLOBAL",
    [CKPT_OP_MEMOIZE] = "MEMOIZE",
    [CKPT_OP_FRAME] = "FRAME",
    [CKPT_OP_BYTEARRAY8] = "BYTEARRAY8",
};

const char *ckpt_pickle_op_name(unsigned op) { return op < 256 && op_names[op] ? op_names[op] : "(no opcode)"; }

/* 1.13's rules: its allowlist, no name mapping, NEWOBJ of Parameter alone, BUILD on a tensor, a
 * parameter or an OrderedDict alone; the least of 2.0 to 2.5 keeps them (with BINFLOAT). */
static bool rules_113(int v) { return v == CKPT_TV_1_13 || v == CKPT_TV_2_0_LEAST; }

static bool op_taken(int v, unsigned op)
{
    if (op == CKPT_OP_BINFLOAT) return v != CKPT_TV_1_13; /* 1.13: "Unsupported operand 71" */
    return ckpt_torch_weights_only_opcode(op);
}

/* A name as the pickle spells it, and as 2.x reads it (torch._utils NAME_MAPPING, then
 * IMPORT_MAPPING; 1.13 maps nothing). */
typedef struct pyname {
    const char *m, *n;
    size_t ml, nl;
} pyname;

static pyname map_name(pyname x)
{
    static const char *const pairs[][4] = {
        {"__builtin__", "xrange", "builtins", "range"},
        {"__builtin__", "reduce", "functools", "reduce"},
        {"__builtin__", "intern", "sys", "intern"},
        {"__builtin__", "unichr", "builtins", "chr"},
        {"__builtin__", "unicode", "builtins", "str"},
        {"__builtin__", "long", "builtins", "int"},
        {"itertools", "izip", "builtins", "zip"},
        {"itertools", "imap", "builtins", "map"},
        {"itertools", "ifilter", "builtins", "filter"},
        {"itertools", "ifilterfalse", "itertools", "filterfalse"},
        {"itertools", "izip_longest", "itertools", "zip_longest"},
        {"UserDict", "IterableUserDict", "collections", "UserDict"},
        {"UserList", "UserList", "collections", "UserList"},
        {"UserString", "UserString", "collections", "UserString"},
        {"__builtin__", "basestring", "builtins", "str"},
        {"exceptions", "StandardError", "builtins", "Exception"},
        {"UserDict", "UserDict", "collections", "UserDict"},
    };
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        if (eq(x.m, x.ml, pairs[k][0]) && eq(x.n, x.nl, pairs[k][1]))
            return (pyname){pairs[k][2], pairs[k][3], strlen(pairs[k][2]), strlen(pairs[k][3])};
    static const char *const modules[][2] = {
        {"__builtin__", "builtins"},
        {"copy_reg", "copyreg"},
        {"Queue", "queue"},
        {"repr", "reprlib"},
        {"_abcoll", "collections.abc"},
        {"UserDict", "collections"},
        {"UserList", "collections"},
        {"UserString", "collections"},
        {"whichdb", "dbm"},
        {"StringIO", "io"},
        {"cStringIO", "io"},
    };
    for (size_t k = 0; k < sizeof modules / sizeof modules[0]; k++)
        if (eq(x.m, x.ml, modules[k][0])) {
            x.m = modules[k][1];
            x.ml = strlen(x.m);
            break;
        }
    return x;
}

static bool name_is(pyname x, const char *m, const char *n) { return eq(x.m, x.ml, m) && eq(x.n, x.nl, n); }

static bool name_in(pyname x, const char *m, const char *const *names, size_t count)
{
    if (!eq(x.m, x.ml, m)) return false;
    for (size_t k = 0; k < count; k++)
        if (eq(x.n, x.nl, names[k])) return true;
    return false;
}
#define IN(x, m, list) name_in(x, m, list, sizeof list / sizeof list[0])

/* The rebuild functions each version allows (torch._utils.{name}). */
static const char *const rebuild_all[] = {"_rebuild_parameter", "_rebuild_tensor", "_rebuild_tensor_v2",
                                          "_rebuild_sparse_tensor", "_rebuild_meta_tensor_no_storage"};
static const char *const rebuild_113[] = {"_rebuild_sparse_csr_tensor"};
static const char *const rebuild_2x[] = {
    "_rebuild_parameter_with_state",
    "_rebuild_qtensor",
    "_rebuild_tensor_v3",
    "_rebuild_nested_tensor",
    "_rebuild_wrapper_subclass",
    "_rebuild_device_tensor_from_numpy",
    "_rebuild_device_tensor_from_cpu_tensor",
};
/* dtypes by str(dtype): 1.13 lists ten; 2.x takes torch.storage's maps */
static const char *const dtypes_113[] = {"complex32", "complex64", "complex128", "float16", "float32",
                                         "float64",   "int8",      "int16",      "int32",   "int64"};
static const char *const dtypes_26[] = {
    "float64",  "float32",     "float16",       "int64",           "int32",           "int16",  "int8",   "uint8",
    "bool",     "bfloat16",    "complex128",    "complex64",       "qint8",           "qint32", "quint8", "quint4x2",
    "quint2x4", "float8_e5m2", "float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3fnuz", "bits8",  "bits16", "bits1x8",
    "bits2x4",  "bits4x2",     "complex32",     "uint16",          "uint32",          "uint64",
};
static const char *const dtypes_214[] = {"float8_e8m0fnu",
                                         "float4_e2m1fn_x2",
                                         "bcomplex32",
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
                                         "int7"};
static const char *const qschemes[] = {"per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
                                       "per_channel_symmetric", "per_channel_affine_float_qparams"};
static const char *const tensor_kinds[] = {"Double", "Float", "Half", "BFloat16", "Long",
                                           "Int",    "Short", "Char", "Byte",     "Bool"};
static const char *const storage_kinds[] = {"Double", "Float", "Half",   "BFloat16", "Long",         "Int",
                                            "Short",  "Char",  "Byte",   "Bool",     "ComplexFloat", "ComplexDouble",
                                            "QUInt8", "QInt8", "QInt32", "QUInt4x2", "QUInt2x4"};

static bool is_tensor_class(pyname x)
{
    bool dense = eq(x.m, x.ml, "torch") || eq(x.m, x.ml, "torch.cuda");
    bool sparse = eq(x.m, x.ml, "torch.sparse") || eq(x.m, x.ml, "torch.cuda.sparse");
    return (dense && one_of(x.n, x.nl, "Tensor", tensor_kinds, 10)) ||
           (sparse && one_of(x.n, x.nl, "Tensor", tensor_kinds, 9));
}

static bool is_storage_class(pyname x)
{
    return (eq(x.m, x.ml, "torch") && one_of(x.n, x.nl, "Storage", storage_kinds, 17)) ||
           (eq(x.m, x.ml, "torch.cuda") && one_of(x.n, x.nl, "Storage", storage_kinds, 12)) ||
           name_is(x, "torch.storage", "TypedStorage") || name_is(x, "torch.storage", "UntypedStorage");
}

/* On version v's allowlist (x as that version reads it). */
static bool allowed(int v, pyname x)
{
    if (name_is(x, "collections", "OrderedDict") || name_is(x, "torch.nn.parameter", "Parameter") ||
        name_is(x, "torch.serialization", "_get_layout") || name_is(x, "torch", "Size") ||
        name_is(x, "torch", "Tensor") || IN(x, "torch._utils", rebuild_all) || is_tensor_class(x) ||
        is_storage_class(x))
        return true;
    if (v == CKPT_TV_1_13) return IN(x, "torch._utils", rebuild_113) || IN(x, "torch", dtypes_113);
    if (v == CKPT_TV_2_0_LEAST) return IN(x, "torch", dtypes_113);
    if (v == CKPT_TV_2_5_MOST && IN(x, "torch._utils", rebuild_113)) return true;
    if (name_is(x, "collections", "Counter") || name_is(x, "torch", "device") || name_is(x, "_codecs", "encode") ||
        name_is(x, "builtins", "bytearray") || name_is(x, "builtins", "set") || name_is(x, "builtins", "complex") ||
        name_is(x, "torch._tensor", "_rebuild_from_type_v2") || IN(x, "torch._utils", rebuild_2x) ||
        IN(x, "torch", qschemes) || IN(x, "torch", dtypes_26))
        return true;
    return v == CKPT_TV_2_14 && IN(x, "torch", dtypes_214);
}

static const char *const blocked_modules[] = {"sys", "os", "posix", "nt"};
static const char *const njt_names[] = {"torch.nested._internal.nested_tensor.NestedTensor",
                                        "torch.nested._internal.nested_tensor._rebuild_njt",
                                        "torch._dynamo.decorators._DimRange"};
static const char *const dtensor_names[] = {
    "torch.distributed.device_mesh.DeviceMesh",          "torch.distributed.tensor._dtensor_spec.DTensorSpec",
    "torch.distributed.tensor._dtensor_spec.TensorMeta", "torch.distributed.tensor.DTensor",
    "torch.distributed.tensor.placement_types.Partial",  "torch.distributed.tensor.placement_types.Replicate",
    "torch.distributed.tensor.placement_types.Shard"};

static bool full_in(pyname x, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        size_t l = strlen(list[k]);
        if (l == x.ml + 1 + x.nl && !memcmp(list[k], x.m, x.ml) && list[k][x.ml] == '.' &&
            !memcmp(list[k] + x.ml + 1, x.n, x.nl))
            return true;
    }
    return false;
}

static pyname name_of(const ckpt_pickle *p, const ckpt_pnode *g)
{
    return (pyname){(const char *)p->data + g->at, (const char *)p->data + g->at2, g->len, g->len2};
}

static ckpt_wo_check global_check(int v, pyname raw)
{
    if (rules_113(v)) return allowed(v, raw) ? CKPT_WO_TAKES : CKPT_WO_GLOBAL;
    pyname x = map_name(raw);
    for (size_t k = 0; k < 4; k++)
        if (eq(x.m, x.ml, blocked_modules[k])) return CKPT_WO_BLOCKED;
    if (allowed(v, x)) return CKPT_WO_TAKES;
    if (full_in(x, njt_names, 3)) return CKPT_WO_NJT;
    if (full_in(x, dtensor_names, 7)) return CKPT_WO_DTENSOR;
    return CKPT_WO_GLOBAL;
}

bool ckpt_torch_weights_only_global(const char *module, size_t mlen, const char *name, size_t nlen)
{
    return global_check(CKPT_TV_2_14, (pyname){module, name, mlen, nlen}) == CKPT_WO_TAKES;
}

/* ---- the Python type of a value, as torch holds it when an opcode acts on it ---- */

typedef enum pytype {
    PT_UNKNOWN = 0,
    PT_NONE,
    PT_BOOL,
    PT_INT,
    PT_FLOAT,
    PT_STR,
    PT_BYTES,
    PT_BYTEARRAY,
    PT_TUPLE,
    PT_LIST,
    PT_DICT,
    PT_SET,
    PT_FROZENSET,
    PT_ORDERED_DICT,
    PT_COUNTER,
    PT_TENSOR,
    PT_PARAMETER,
    PT_SIZE,
    PT_DEVICE,
    PT_COMPLEX,
    PT_STORAGE,
    PT_LAYOUT,
    PT_CLASS,    /* a GLOBAL naming a Python class */
    PT_FUNCTION, /* a GLOBAL naming a Python function */
    PT_BUILTIN,  /* a GLOBAL naming a built-in function (_codecs.encode) */
    PT_DTYPE,
    PT_QSCHEME,
    PT_COUNT
} pytype;

/* type(x).__module__ + "." + __qualname__ as Python prints it in <class '...'>, and __name__ */
static const char *const pt_qual[PT_COUNT][2] = {
    [PT_NONE] = {"NoneType", "NoneType"},
    [PT_BOOL] = {"bool", "bool"},
    [PT_INT] = {"int", "int"},
    [PT_FLOAT] = {"float", "float"},
    [PT_STR] = {"str", "str"},
    [PT_BYTES] = {"bytes", "bytes"},
    [PT_BYTEARRAY] = {"bytearray", "bytearray"},
    [PT_TUPLE] = {"tuple", "tuple"},
    [PT_LIST] = {"list", "list"},
    [PT_DICT] = {"dict", "dict"},
    [PT_SET] = {"set", "set"},
    [PT_FROZENSET] = {"frozenset", "frozenset"},
    [PT_ORDERED_DICT] = {"collections.OrderedDict", "OrderedDict"},
    [PT_COUNTER] = {"collections.Counter", "Counter"},
    [PT_TENSOR] = {"torch.Tensor", "Tensor"},
    [PT_PARAMETER] = {"torch.nn.parameter.Parameter", "Parameter"},
    [PT_SIZE] = {"torch.Size", "Size"},
    [PT_DEVICE] = {"torch.device", "device"},
    [PT_COMPLEX] = {"complex", "complex"},
    [PT_STORAGE] = {"torch.storage.TypedStorage", "TypedStorage"},
    [PT_LAYOUT] = {"torch.layout", "layout"},
    [PT_CLASS] = {"type", "type"},
    [PT_FUNCTION] = {"function", "function"},
    [PT_BUILTIN] = {"builtin_function_or_method", "builtin_function_or_method"},
    [PT_DTYPE] = {"torch.dtype", "dtype"},
    [PT_QSCHEME] = {"torch.qscheme", "qscheme"},
};

/* What an instance of the class GLOBAL x is (PT_UNKNOWN: none ckptscope names). */
static pytype instance_of(pyname x)
{
    if (name_is(x, "collections", "OrderedDict")) return PT_ORDERED_DICT;
    if (name_is(x, "collections", "Counter")) return PT_COUNTER;
    if (name_is(x, "torch", "Tensor") || is_tensor_class(x)) return PT_TENSOR;
    if (name_is(x, "torch.nn.parameter", "Parameter")) return PT_PARAMETER;
    if (name_is(x, "torch", "Size")) return PT_SIZE;
    if (name_is(x, "torch", "device")) return PT_DEVICE;
    if (name_is(x, "builtins", "set")) return PT_SET;
    if (name_is(x, "builtins", "bytearray")) return PT_BYTEARRAY;
    if (name_is(x, "builtins", "complex")) return PT_COMPLEX;
    return PT_UNKNOWN;
}

/* What the GLOBAL itself is. */
static pytype global_type(pyname x)
{
    if (instance_of(x) != PT_UNKNOWN && !is_tensor_class(x) && !name_is(x, "torch", "Tensor") &&
        !name_is(x, "torch.nn.parameter", "Parameter"))
        return PT_CLASS;
    if (name_is(x, "_codecs", "encode")) return PT_BUILTIN;
    if (eq(x.m, x.ml, "torch._utils") || name_is(x, "torch._tensor", "_rebuild_from_type_v2") ||
        name_is(x, "torch.serialization", "_get_layout"))
        return PT_FUNCTION;
    if (IN(x, "torch", qschemes)) return PT_QSCHEME;
    if (eq(x.m, x.ml, "torch") && dtype_name(x.n, x.nl)) return PT_DTYPE;
    return PT_UNKNOWN;
}

static pytype type_of(const ckpt_pickle *p, size_t k, unsigned depth)
{
    if (k == CKPT_PNIL || depth > CKPT_PICKLE_MAX_DEPTH) return PT_UNKNOWN;
    const ckpt_pnode *n = &p->nodes[k];
    switch (n->kind) {
        case CKPT_PK_NONE: return PT_NONE;
        case CKPT_PK_BOOL: return PT_BOOL;
        case CKPT_PK_INT:
        case CKPT_PK_BIGINT: return PT_INT;
        case CKPT_PK_FLOAT: return PT_FLOAT;
        case CKPT_PK_STR: return PT_STR;
        case CKPT_PK_BYTES: return n->flags & CKPT_PF_BYTEARRAY ? PT_BYTEARRAY : PT_STR; /* torch.load decodes */
        case CKPT_PK_TUPLE: return PT_TUPLE;
        case CKPT_PK_LIST: return PT_LIST;
        case CKPT_PK_DICT: return PT_DICT;
        case CKPT_PK_SET: return n->flags & CKPT_PF_FROZEN ? PT_FROZENSET : PT_SET;
        case CKPT_PK_GLOBAL: return global_type(map_name(name_of(p, n)));
        case CKPT_PK_PERSID: return PT_STORAGE;
        case CKPT_PK_BUILD: return type_of(p, n->a, depth + 1);
        case CKPT_PK_NEWOBJ:
            if (n->a == CKPT_PNIL || p->nodes[n->a].kind != CKPT_PK_GLOBAL) return PT_UNKNOWN;
            return instance_of(map_name(name_of(p, &p->nodes[n->a])));
        case CKPT_PK_REDUCE: {
            if (n->a == CKPT_PNIL || p->nodes[n->a].kind != CKPT_PK_GLOBAL) return PT_UNKNOWN;
            pyname f = map_name(name_of(p, &p->nodes[n->a]));
            if (name_is(f, "torch._utils", "_rebuild_parameter") ||
                name_is(f, "torch._utils", "_rebuild_parameter_with_state"))
                return PT_PARAMETER;
            if (eq(f.m, f.ml, "torch._utils") && f.nl > 9 && !memcmp(f.n, "_rebuild_", 9) &&
                !name_is(f, "torch._utils", "_rebuild_wrapper_subclass"))
                return PT_TENSOR;
            if (name_is(f, "torch._tensor", "_rebuild_from_type_v2")) {
                /* (func, new_type, args, state): an instance of new_type */
                size_t t = n->b != CKPT_PNIL && p->nodes[n->b].kind == CKPT_PK_TUPLE ? ckpt_pickle_item(p, n->b, 1)
                                                                                     : CKPT_PNIL;
                if (t == CKPT_PNIL || p->nodes[t].kind != CKPT_PK_GLOBAL) return PT_UNKNOWN;
                pytype it = instance_of(map_name(name_of(p, &p->nodes[t])));
                return it == PT_TENSOR || it == PT_PARAMETER ? it : PT_UNKNOWN;
            }
            if (name_is(f, "_codecs", "encode")) return PT_BYTES;
            if (name_is(f, "torch.serialization", "_get_layout")) return PT_LAYOUT;
            return instance_of(f);
        }
        default: return PT_UNKNOWN;
    }
}

static bool tensorish(pytype t) { return t == PT_TENSOR || t == PT_PARAMETER; }

/* ---- the checks, opcode by opcode ---- */

static ckpt_wo_check check(int v, const ckpt_pickle *p, const ckpt_pickle_event *e, size_t *about)
{
    *about = CKPT_PNIL;
    if (!op_taken(v, e->op)) return CKPT_WO_OPCODE;
    const ckpt_pnode *n = e->node != CKPT_PNIL ? &p->nodes[e->node] : NULL;
    switch (e->op) {
        case CKPT_OP_GLOBAL: *about = e->node; return global_check(v, name_of(p, n));
        case CKPT_OP_REDUCE:
            *about = n->a;
            return p->nodes[n->a].kind == CKPT_PK_GLOBAL ? CKPT_WO_TAKES : CKPT_WO_REDUCE;
        case CKPT_OP_NEWOBJ: {
            *about = n->a;
            const ckpt_pnode *c = &p->nodes[n->a];
            if (c->kind != CKPT_PK_GLOBAL) return CKPT_WO_NEWOBJ;
            pyname x = name_of(p, c);
            if (rules_113(v)) return name_is(x, "torch.nn.parameter", "Parameter") ? CKPT_WO_TAKES : CKPT_WO_NEWOBJ;
            pytype g = global_type(map_name(x));
            return g == PT_FUNCTION || g == PT_BUILTIN || g == PT_DTYPE || g == PT_QSCHEME ? CKPT_WO_NO_NEW
                                                                                           : CKPT_WO_TAKES;
        }
        case CKPT_OP_BUILD: {
            *about = n->a;
            pytype t = type_of(p, n->a, 0);
            if (t == PT_TENSOR || t == PT_PARAMETER || t == PT_ORDERED_DICT) return CKPT_WO_TAKES;
            if (!rules_113(v) && (t == PT_COUNTER || t == PT_SIZE || t == PT_DEVICE || t == PT_BYTEARRAY ||
                                  t == PT_SET || t == PT_COMPLEX || t == PT_STORAGE))
                return CKPT_WO_TAKES;
            return CKPT_WO_BUILD;
        }
        case CKPT_OP_APPEND:
        case CKPT_OP_APPENDS:
            *about = e->target;
            return type_of(p, e->target, 0) == PT_LIST ? CKPT_WO_TAKES : CKPT_WO_APPEND;
        case CKPT_OP_SETITEM:
        case CKPT_OP_SETITEMS: {
            *about = e->target;
            pytype t = type_of(p, e->target, 0);
            if (t == PT_DICT || t == PT_ORDERED_DICT || t == PT_COUNTER) return CKPT_WO_TAKES;
            if (v == CKPT_TV_2_14) return CKPT_WO_SETITEM;
            /* before 2.14 torch assigns into whatever it holds there (a tensor: see changes_op) */
            if (t == PT_TUPLE || t == PT_SIZE || t == PT_DEVICE || t == PT_SET || t == PT_FROZENSET ||
                t == PT_COMPLEX || t == PT_STR || t == PT_BYTES || t == PT_LAYOUT)
                return CKPT_WO_ASSIGN;
            return CKPT_WO_TAKES;
        }
        default: return CKPT_WO_TAKES;
    }
}

void ckpt_torch_wo_observe(void *ctx, const ckpt_pickle *p, const ckpt_pickle_event *e)
{
    ckpt_wo *w = ctx;
    for (int v = 0; v < CKPT_TV_COUNT; v++) {
        ckpt_wo_refusal *r = &w->by[v];
        if (r->check) continue;
        size_t about;
        ckpt_wo_check c = check(v, p, e, &about);
        if (c) *r = (ckpt_wo_refusal){(uint8_t)c, (uint8_t)e->op, e->at, (uint32_t)about};
    }
    if (w->changes_op) return;
    bool into = (e->op == CKPT_OP_SETITEM || e->op == CKPT_OP_SETITEMS) && tensorish(type_of(p, e->target, 0));
    bool build = e->op == CKPT_OP_BUILD && tensorish(type_of(p, p->nodes[e->node].a, 0));
    if (into || build) {
        w->changes_op = (uint8_t)e->op;
        w->changes_at = e->at;
    }
}

/* ---- the reasons, as each version words them ---- */

static void put_full(strbuf *sb, pyname x)
{
    sb_put(sb, x.m, x.ml);
    sb_putc(sb, '.');
    sb_put(sb, x.n, x.nl);
}

static void put_type(strbuf *sb, pytype t)
{
    if (t == PT_UNKNOWN) sb_puts(sb, "(a type ckptscope does not name)");
    else sb_printf(sb, "<class '%s'>", pt_qual[t][0]);
}

static const char *article(const char *s) { return strchr("aeiou", s[0]) ? "an" : "a"; }

/* A value as torch prints it: None, True, False and integers as Python writes them; a class
 * ckptscope names as <class '...'>; anything else by its type. */
static void put_value(strbuf *sb, const ckpt_pickle *p, size_t k)
{
    const ckpt_pnode *n = &p->nodes[k];
    if (n->kind == CKPT_PK_NONE) return sb_puts(sb, "None");
    if (n->kind == CKPT_PK_BOOL) return sb_puts(sb, n->truth ? "True" : "False");
    if (n->kind == CKPT_PK_INT) return (void)sb_printf(sb, "%lld", (long long)n->i);
    if (n->kind == CKPT_PK_GLOBAL) {
        pyname x = map_name(name_of(p, n));
        pytype it = instance_of(x);
        if (it != PT_UNKNOWN) return (void)sb_printf(sb, "<class '%s'>", pt_qual[it][0]);
        sb_printf(sb, "(the %s ",
                  global_type(x) == PT_FUNCTION || global_type(x) == PT_BUILTIN ? "function" : "object");
        put_full(sb, x);
        sb_putc(sb, ')');
        return;
    }
    pytype t = type_of(p, k, 0);
    if (t == PT_UNKNOWN) return sb_puts(sb, "(an object ckptscope does not name)");
    sb_printf(sb, "(%s %s)", article(pt_qual[t][1]), pt_qual[t][1]);
}

void ckpt_torch_wo_subject(strbuf *sb, const ckpt_pickle *p, const ckpt_wo_refusal *r)
{
    const char *op = ckpt_pickle_op_name(r->op);
    switch ((ckpt_wo_check)r->check) {
        case CKPT_WO_TAKES: return;
        case CKPT_WO_OPCODE: sb_printf(sb, "the opcode %s", op); return;
        case CKPT_WO_GLOBAL:
        case CKPT_WO_BLOCKED:
        case CKPT_WO_NJT:
        case CKPT_WO_DTENSOR:
            sb_puts(sb, "GLOBAL ");
            put_full(sb, name_of(p, &p->nodes[r->node]));
            return;
        case CKPT_WO_REDUCE:
        case CKPT_WO_NEWOBJ:
        case CKPT_WO_NO_NEW:
            sb_printf(sb, "%s of ", op);
            put_value(sb, p, r->node);
            return;
        default:
            sb_printf(sb, "%s on ", op);
            put_type(sb, type_of(p, r->node, 0));
            return;
    }
}

void ckpt_torch_wo_reason(strbuf *sb, const ckpt_pickle *p, const ckpt_wo_refusal *r, int v)
{
    const char *op = ckpt_pickle_op_name(r->op);
    switch ((ckpt_wo_check)r->check) {
        case CKPT_WO_TAKES: return;
        case CKPT_WO_OPCODE: sb_printf(sb, "Unsupported operand %u", (unsigned)r->op); return;
        case CKPT_WO_GLOBAL: {
            pyname raw = name_of(p, &p->nodes[r->node]);
            if (v == CKPT_TV_1_13) {
                sb_puts(sb, "Unsupported class ");
                put_full(sb, raw);
                return;
            }
            pyname x = map_name(raw);
            strbuf full = {0}, shown = {0};
            put_full(&full, x);
            const char *f = full.data ? full.data : "";
            if (v == CKPT_TV_2_14 && !strncmp(f, "builtins", 8)) /* 2.14 drops "builtins." */
                sb_puts(&shown, f[8] == '.' ? f + 9 : f);
            else sb_puts(&shown, f);
            const char *s = v == CKPT_TV_2_14 ? (shown.data ? shown.data : "") : f;
            sb_printf(sb, "Unsupported global: GLOBAL %s was not an allowed global by default. ", s);
            if (v == CKPT_TV_2_6) { /* 2.6 names the bare name in its advice */
                strbuf nm = {0};
                sb_put(&nm, x.n, x.nl);
                s = nm.data ? nm.data : "";
                sb_printf(sb,
                          "Please use `torch.serialization.add_safe_globals([%s])` or the "
                          "`torch.serialization.safe_globals([%s])` context manager to allowlist this global "
                          "if you trust this class/function.",
                          s, s);
                sb_free(&nm);
            } else
                sb_printf(sb,
                          "Please use `torch.serialization.add_safe_globals([%s])` or the "
                          "`torch.serialization.safe_globals([%s])` context manager to allowlist this global "
                          "if you trust this class/function.",
                          s, s);
            if (full.failed || shown.failed) sb->failed = true;
            sb_free(&full);
            sb_free(&shown);
            return;
        }
        case CKPT_WO_BLOCKED: {
            pyname x = map_name(name_of(p, &p->nodes[r->node]));
            sb_puts(sb, "Trying to load unsupported GLOBAL ");
            put_full(sb, x);
            sb_puts(sb, " whose module ");
            sb_put(sb, x.m, x.ml);
            sb_puts(sb, " is blocked.");
            return;
        }
        case CKPT_WO_NJT:
            sb_puts(sb, "``torch.nested`` and ``torch._dynamo`` must be imported to load nested jagged tensors (NJTs)");
            return;
        case CKPT_WO_DTENSOR: sb_puts(sb, "``torch.distributed.tensor`` must be imported to load DTensors"); return;
        case CKPT_WO_REDUCE:
            sb_puts(sb, "Trying to call reduce for unrecognized function ");
            put_value(sb, p, r->node);
            return;
        case CKPT_WO_NEWOBJ:
            sb_puts(sb, v == CKPT_TV_1_13 ? "Trying to instantiate unsupported class "
                                          : "Can only create new object for nn.Parameter or classes allowlisted via "
                                            "`add_safe_globals` but got ");
            put_value(sb, p, r->node);
            return;
        case CKPT_WO_NO_NEW:
            sb_printf(sb, "'%s' object has no attribute '__new__'", pt_qual[type_of(p, r->node, 0)][0]);
            return;
        case CKPT_WO_BUILD:
            sb_puts(sb, v == CKPT_TV_1_13 ? "Can only build Tensor, parameter or dict objects, but got "
                                          : "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                                            "`add_safe_globals`, but got ");
            put_type(sb, type_of(p, r->node, 0));
            return;
        case CKPT_WO_APPEND:
            sb_puts(sb, r->op == CKPT_OP_APPENDS && v != CKPT_TV_2_14 ? "Can only extend lists, but got "
                                                                      : "Can only append to lists, but got ");
            put_type(sb, type_of(p, r->node, 0));
            return;
        case CKPT_WO_SETITEM:
            sb_printf(sb, "Can only %s for dict, collections.OrderedDict, collections.Counter, but got ", op);
            put_type(sb, type_of(p, r->node, 0));
            return;
        case CKPT_WO_ASSIGN:
            sb_printf(sb, "'%s' object does not support item assignment", pt_qual[type_of(p, r->node, 0)][0]);
            return;
    }
}
