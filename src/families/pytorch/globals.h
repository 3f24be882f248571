/* The names torch's pickles use (globals.c). Private to the PyTorch family. */
#ifndef CKPT_TORCH_GLOBALS_H
#define CKPT_TORCH_GLOBALS_H

#include "containers/pickle.h"

/* The names format.md 10.2 interprets (a GLOBAL's module.name), as data: what a later reader of
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
ckpt_pname ckpt_torch_known(const char *module, size_t mlen, const char *name, size_t nlen, const char **dtype);

/* Would torch.load(weights_only=True) resolve this GLOBAL? Its allowlist (torch's
 * _weights_only_unpickler.py _get_allowed_globals, with the modules it blocks). */
bool ckpt_torch_weights_only_global(const char *module, size_t mlen, const char *name, size_t nlen);
/* Is the opcode on that unpickler's list? */
bool ckpt_torch_weights_only_opcode(unsigned op);

/* ckptscope's dtype of a torch dtype name ("float32"), -1 for one it does not hold. */
int ckpt_torch_dtype(const char *torch_name);

/* weights_only over one pickle: the first opcode its unpickler refuses (false when none), the
 * whole verdict (opcodes and names), the names (only those it refuses when `refused`) as a JSON
 * array, and the warning "PyTorch: the file names Python callables that
 * torch.load(weights_only=True) refuses: {names}" (nothing when none is refused). */
bool ckpt_torch_pickle_refused_opcode(const ckpt_pickle *p, unsigned *op, uint64_t *at);
bool ckpt_torch_pickle_weights_only(const ckpt_pickle *p);
void ckpt_torch_pickle_globals_json(strbuf *sb, const ckpt_pickle *p, bool refused);
void ckpt_torch_pickle_weights_only_warning(strbuf *sb, const ckpt_pickle *p);

#endif
