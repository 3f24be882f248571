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

/* Would torch.load(weights_only=True) of the newest torch read (2.14) resolve this GLOBAL? Its
 * allowlist (torch's _weights_only_unpickler.py _get_allowed_globals, with the modules it
 * blocks). */
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

/* ---- torch.load(weights_only=True) per torch version (format.md 10.2) ----
 *
 * The versions whose torch/_weights_only_unpickler.py ckptscope has read and models: each one's
 * opcodes, allowlist and checks of what REDUCE, NEWOBJ, BUILD, APPEND(S) and SETITEM(S) act on,
 * judged in the pickle's order, so the first refusal is where that torch stops.
 *
 * Two more bound the releases 2.0 to 2.5, whose files ckptscope has not read: from 1.13 to 2.6
 * the opcode list gained only BINFLOAT (in 2.0) and the allowlists only grew, but for
 * _rebuild_sparse_csr_tensor, which 2.6 no longer lists. So CKPT_TV_2_0_LEAST (1.13's rules with
 * BINFLOAT, without that name) refuses whatever some release of the range may refuse, and
 * CKPT_TV_2_5_MOST (2.6's rules with that name) takes whatever some release may take. */
enum { CKPT_TV_1_13 = 0, CKPT_TV_2_6, CKPT_TV_2_14, CKPT_TV_2_0_LEAST, CKPT_TV_2_5_MOST, CKPT_TV_COUNT };

typedef enum ckpt_wo_check {
    CKPT_WO_TAKES = 0,
    CKPT_WO_OPCODE,  /* an opcode not on its list */
    CKPT_WO_GLOBAL,  /* a name not on its allowlist */
    CKPT_WO_BLOCKED, /* a name of sys, os, posix or nt */
    CKPT_WO_NJT,     /* a nested jagged tensor's name (torch.nested not imported) */
    CKPT_WO_DTENSOR, /* a DTensor's name (torch.distributed.tensor not imported) */
    CKPT_WO_REDUCE,  /* REDUCE of a value that is no allowed callable */
    CKPT_WO_NEWOBJ,  /* NEWOBJ of a class it does not make */
    CKPT_WO_NO_NEW,  /* NEWOBJ of an allowed name that is not a class: Python has no __new__ for it */
    CKPT_WO_BUILD,   /* BUILD on a value of a type it does not build */
    CKPT_WO_APPEND,  /* APPEND(S) onto a value that is not a list */
    CKPT_WO_SETITEM, /* SETITEM(S) onto a value that is not a dict, OrderedDict or Counter (2.14) */
    CKPT_WO_ASSIGN,  /* SETITEM(S) onto a value Python cannot assign into (before 2.14) */
} ckpt_wo_check;

typedef struct ckpt_wo_refusal {
    uint8_t check; /* ckpt_wo_check; CKPT_WO_TAKES when that torch reads the whole pickle */
    uint8_t op;    /* the opcode it stops at */
    uint64_t at;   /* its byte in the pickle (plus the pickle's origin) */
    uint32_t node; /* the GLOBAL, the callable, or the value acted on */
} ckpt_wo_refusal;

/* One pickle judged for each version, and the first opcode that changes a tensor torch has
 * rebuilt (SETITEM or SETITEMS into it, BUILD on it): torch.load then holds other values than the
 * storage record, in every version that runs that opcode. */
typedef struct ckpt_wo {
    ckpt_wo_refusal by[CKPT_TV_COUNT];
    uint8_t changes_op; /* 0: none */
    uint64_t changes_at;
} ckpt_wo;

/* The observer (pickle.h) that fills a ckpt_wo (ctx), zeroed before the read. */
void ckpt_torch_wo_observe(void *ctx, const ckpt_pickle *p, const ckpt_pickle_event *e);
/* The reason that version gives (the text after torch.load's "WeightsUnpickler error: "): a
 * value torch prints by its repr is named by its type, as "(a dict)". */
void ckpt_torch_wo_reason(strbuf *sb, const ckpt_pickle *p, const ckpt_wo_refusal *r, int version);
/* What a refusal stops at, in ckptscope's words: "GLOBAL posix.system" (as the pickle spells it),
 * "the opcode BINFLOAT", "BUILD on <class 'dict'>", "NEWOBJ of <class '...'>". */
void ckpt_torch_wo_subject(strbuf *sb, const ckpt_pickle *p, const ckpt_wo_refusal *r);
/* The opcode's name as Python's pickle module spells it ("BINFLOAT"). */
const char *ckpt_pickle_op_name(unsigned op);

#endif
