/* What a family provides the core and the layers above: its impl, the parse run it is handed and
 * the items its files hold. Private to src/. */
#ifndef CKPT_CORE_IMPL_H
#define CKPT_CORE_IMPL_H

#include "core/schema.h"
#include "numeric/numeric.h"

#define CKPT_MAGIC_LEN 7
/* The bytes the front door hands each family's probe (at most). */
#define CKPT_PROBE_HEAD 64

/* ---- a family, as the front door and the layers above see it ---- */
/* One parse run, as the family readers see it. */
typedef struct ckpt_parse {
    ckpt_reader *r;
    const ckpt_family *family;
    const ckpt_expected *exp; /* NULL when inspecting */
    unsigned flags;           /* CKPT_INSPECT_* */
    ckpt_scan scan;
    ckpt_report *rep;
    ckpt_error *err;
    int reader;       /* the TorchLean reader whose checks apply (ckpt_reader_id, format.md 8) */
    const char *name; /* the file's name as the caller gave it (ckpt_open_named), or NULL */
} ckpt_parse;
/* One typed payload of an item: exp_avg, exp_avg_sq, max_exp_avg_sq, or a tensor's values (a
 * DeepSpeed parameter's: its fp32 master weights). */
#define CKPT_MAX_PAYLOADS 4
typedef struct ckpt_payload {
    const char *name;       /* "exp_avg", "exp_avg_sq", "max_exp_avg_sq"; "" for a tensor's values */
    int dtype;              /* its ckpt_dtype (the dtype table gives its width) */
    uint64_t offset, count; /* where its elements start, how many */
    const int64_t *strides; /* per dim of the slot's shape, in elements; NULL: contiguous, outermost first */
    ckpt_stats **stats;     /* where its statistics are kept (NULL until computed) */
    /* its elements lie in these runs of the source, in element order (a DeepSpeed parameter's
     * fragments, one per rank; offset is the first's, strides NULL); NULL: one run from offset */
    const ckpt_span *spans;
    size_t spans_len;
} ckpt_payload;
/* An item: one unit of a file's payloads (TLADAMF: a moment entry, its m and v; the state
 * families: a tensor, its values), as the layers above see it whatever the family. */
typedef struct ckpt_item {
    uint64_t slot;   /* the slot whose shape its payloads have */
    uint64_t count;  /* elements per payload */
    size_t payloads; /* payload[0 .. payloads) */
    ckpt_payload payload[CKPT_MAX_PAYLOADS];
    uint64_t *unhealthy; /* the record's count of unhealthy elements */
} ckpt_item;

typedef struct ckpt_jw ckpt_jw; /* report_json.c's JSON writer */

/* Everything that makes a family read the way it does, beside its public descriptor. A family
 * is a descriptor with one of these, in a folder of families/ (or a module of a build's extra
 * families), listed by the build. */
struct ckpt_family_impl {
    /* Is this a file of family f? head: its first n bytes (n <= CKPT_PROBE_HEAD, fewer when the
     * file is shorter), size: its size or CKPT_NONE. NULL: the descriptor's fixed 7-byte magic
     * (ckpt_probe_magic). */
    bool (*probe)(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size);
    int (*parse)(ckpt_parse *p); /* called once the probe said yes (the reader is past the first 7 bytes) */
    /* a destination of this family checked before a byte is read (format.md 4 step 1); NULL:
     * nothing to check */
    int (*check_expected)(const ckpt_expected *exp, ckpt_error *err);
    /* the items: each a list of typed payloads */
    unsigned payloads; /* per item, at most: 2 (m, v) or 1 (values) */
    size_t (*item_count)(const ckpt_report *rep);
    ckpt_item (*item)(ckpt_report *rep, size_t k);
    /* slot i's optimizer configuration (optimizer families; NULL: the report's one config) */
    const ckpt_config *(*config_of_slot)(const ckpt_report *rep, uint64_t slot);
    uint64_t (*unhealthy)(const ckpt_stats *a, const ckpt_stats *b);
    /* the report JSON's family-specific members (ckpt_report_json_optimizer, _model, or its own) */
    void (*json_body)(ckpt_jw *w, const ckpt_report *rep, bool bulk);
    /* the report's last member, "readers": TorchLean's readers' verdicts (format.md 8); NULL:
     * null (files TorchLean's readers do not read) */
    void (*json_readers)(strbuf *sb, const ckpt_report *rep);
    /* frees what the family keeps in the report (its family_data, its extension); NULL: nothing */
    void (*release)(ckpt_report *rep);
    /* after an inspection by the default reader: the family's own verdicts (TLADAMF: every
     * TorchLean reader's, format.md 8); NULL: none */
    void (*judge)(const ckpt_source *src, ckpt_report *rep);
    /* a family whose files keep no module order (pairing then orders them): the warning
     * of a pair ordered by shape alone, after the prefix; NULL: its files keep the model's order */
    const char *unordered;
    /* slot i's learning rate when the file stores one (a PyTorch group's lr: the next step's),
     * NAN otherwise; NULL: the family stores none (TorchLean's) */
    double (*lr_of_slot)(const ckpt_report *rep, uint64_t slot);
    /* convert: the one configuration a TLADAMF file of this file's state holds, or the loss it
     * would make (CKPT_E_CONVERSION_LOSES naming the option); NULL: the report's config */
    int (*convert_config)(const ckpt_report *rep, const ckpt_convert_options *o, ckpt_config *out, ckpt_error *err);
    /* the file does not say whether its optimizer is Adam or AdamW (format.md 10.3: a PyTorch
     * optimizer without decoupled_weight_decay, until given one): its config's kind is a guess;
     * NULL: the family always says */
    bool (*kind_unknown)(const ckpt_report *rep);
    /* the kind the caller gives (--kind, ckpt_set_kind), checked against what the files say: the
     * groups' configurations take it where they do not say it, and the report's JSON says it was
     * given. 0, or CKPT_E_INVALID_ARGUMENT naming --kind (a contradiction, no optimizer held).
     * NULL: the family always says its kind (the report's config) */
    int (*set_kind)(ckpt_report *rep, ckpt_kind kind, ckpt_error *err);
    /* what this file holds when its family holds either (CKPT_ROLE_*: a torch.save file may hold
     * an optimizer, a model, or both); NULL: the descriptor's role */
    unsigned (*role_of)(const ckpt_report *rep);
    /* a family whose slots come from the model its file belongs to (PyTorch, format.md 10.4): no
     * parameter schema of its own, so nothing that needs one (layouts, health, runs, export)
     * reads it until pairing (analyses/pair.c) binds them to its model's: on a
     * placement that fits, ro becomes the pair's optimizer (slots, entries by slot, per-slot
     * configs) and *view lists the model's tensors that are the slots, in slot order (the caller
     * makes them the model report's tensors); failures and warnings go to res. 0, or the error
     * in res->error (or, with res->cannot_tell, the condition the pair holds on). o: the
     * pairing's options (never NULL); trained: the model the optimizer was saved with, compared
     * first, or NULL. NULL: the family's slots are its own */
    int (*bind)(ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o, const ckpt_report *trained,
                size_t **view, size_t *view_len, ckpt_pair_result *res);
    /* the parameters the optimizer's own files list as frozen (DeepSpeed's frozen_param_shapes),
     * a complete list: a slot without optimizer state not on it is trained (format.md 10.4).
     * NULL: the files list none */
    const char *const *(*frozen_names)(const ckpt_report *ro, size_t *n);
    /* a model file of this family (a torch.save state dict) met as a TorchLean optimizer's
     * model: its slots (format.md 10.4) in order as indices of its report's tensors, and each
     * slot's tie (the earlier slot of its storage, CKPT_NONE). NULL: its tensors are its slots */
    int (*model_slots)(const ckpt_report *rm, size_t **view, uint64_t **ties, size_t *len, ckpt_error *err);
    /* pairing with the model the user will load into, by the family's own rule (DeepSpeed,
     * format.md 11.6): rm the new model's file (NULL: o->names alone); failures, warnings and
     * the note go to res. 0, or an error that stops the pairing (res->error). NULL: the
     * family pairs as the others do */
    int (*pair_new_model)(const ckpt_report *ro, const ckpt_report *rm, const ckpt_pair_options *o,
                          ckpt_pair_result *res);
    /* why pairing, runs, diff and conversion (and health and export, unless `items_whole`) do not
     * read this family's files (a DeepSpeed parameter's state lies in fragments across files):
     * ckpt_require_schema refuses with it (CKPT_E_WRONG_FAMILY); NULL: they read them */
    const char *unread;
    /* the file's items hold all of its state (in spans where it lies in fragments): export and
     * health read them even though `unread` refuses the rest; NULL: never */
    bool (*items_whole)(const ckpt_report *rep);
    /* why a file whose items are read is not whole all the same (a DCP group that keeps no eps):
     * fails err with the fact and returns -1; 0 when it cannot say (then `unread` says it);
     * NULL: never */
    int (*why_not_whole)(const ckpt_report *rep, ckpt_error *err);
    /* slot i's name as the file saves it, NULL when it saves none (export's default names, else
     * slot{i}); NULL: the file names no slot */
    const char *(*slot_name)(const ckpt_report *rep, uint64_t slot);
    /* words for a file of this family met where another was expected (head: its first n bytes),
     * NULL when the head is not one of its own; NULL: none beyond hint_not (hints.c) */
    const char *(*hint)(const uint8_t *head, size_t n);
    /* texts */
    const char *holds;          /* "optimizer state", "model tensors" */
    const char *hint_not;       /* a hint's "this is a ..., not {hint_not}" (families with a magic) */
    const char *count_mismatch; /* a state family's tensor-count text: ... (file={c}, expected={n}) */
    const char *trailing;       /* a state family's trailing-bytes text */
    void (*pretty)(strbuf *sb, const uint64_t *dims, uint64_t rank); /* the element-count text's shape */
    /* the header: where its item count field is, when at a fixed offset (else 0; hints.c) */
    uint64_t count_at;
};
/* set_kind's refusal of a file without an optimizer, whatever its family */
#define CKPT_KIND_NO_OPTIMIZER "--kind is an optimizer's: this file holds none"
/* The default probe: head begins with the descriptor's magic. */
static inline bool ckpt_probe_magic(const ckpt_family *f, const uint8_t *head, size_t n, uint64_t size)
{
    (void)size;
    return n >= CKPT_MAGIC_LEN && memcmp(head, f->magic, CKPT_MAGIC_LEN) == 0;
}
/* A family's item k of a report (k < its item count) */
static inline ckpt_item ckpt_report_item(const ckpt_report *rep, size_t k)
{
    return rep->family->impl->item((ckpt_report *)rep, k);
}
/* Slot i's stored learning rate, NAN when the file stores none. */
static inline double ckpt_lr_of_slot(const ckpt_report *rep, uint64_t slot)
{
    return rep->family && rep->family->impl->lr_of_slot ? rep->family->impl->lr_of_slot(rep, slot) : (double)NAN;
}
/* Slot s's name in a family that names its slots (a DeepSpeed module's, DCP's FQNs), NULL
 * otherwise. */
static inline const char *ckpt_slot_name(const ckpt_report *rep, uint64_t slot)
{
    return rep->family && rep->family->impl->slot_name ? rep->family->impl->slot_name(rep, slot) : NULL;
}
/* Is the file's optimizer kind (Adam or AdamW) unknown? */
static inline bool ckpt_kind_unknown(const ckpt_report *rep)
{
    return rep->family && rep->family->impl->kind_unknown && rep->family->impl->kind_unknown(rep);
}
static inline size_t ckpt_report_item_count(const ckpt_report *rep)
{
    return rep->family ? rep->family->impl->item_count(rep) : 0;
}

#endif
