/* libFuzzer target: the pickle layer (src/pickle.c). The input is read as pickles in a row (a
 * legacy torch.save file holds five): each from where the last ended, until the bytes end or one
 * fails. A tree that reads is rendered whole (each node once), its globals listed and judged as
 * torch.load(weights_only=True) would, and judged by each torch version read (opcode by opcode, as
 * it is read: each refusal inside the pickle, its reason rendered); its nodes must be no more than
 * its bytes. Every diagnostic must be one of its code's templates. */
#include "oracle.h"
#include "containers/pickle.h"
#include "families/pytorch/globals.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t at = 0;
    for (int n = 0; n < 8 && at < size; n++) {
        ckpt_pickle *p = NULL;
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_wo wo = {0};
        int rc = ckpt_pickle_read_observed(data + at, size - at, "PyTorch", "archive/data.pkl", at, at,
                                           ckpt_torch_wo_observe, &wo, &p, &err);
        oracle_check(&err);
        ckpt_error_clear(&err);
        if (rc) {
            if (p) abort();
            return 0;
        }
        if (p->end == 0 || p->end > size - at || p->nodes_len > p->end || p->cells_len > p->end) abort();
        strbuf sb = {0};
        ckpt_pickle_json(&sb, p, p->root);
        ckpt_pickle_globals_json(&sb, p, NULL);
        ckpt_torch_pickle_globals_json(&sb, p, true);
        ckpt_torch_pickle_weights_only_warning(&sb, p);
        bool ok = ckpt_torch_pickle_weights_only(p);
        unsigned op;
        uint64_t op_at;
        bool refused = ckpt_torch_pickle_refused_opcode(p, &op, &op_at);
        if (ok && refused) abort();
        if (refused && (op_at < at || op_at >= at + p->end || p->opcode_at[op] != op_at)) abort();
        for (int v = 0; v < CKPT_TV_COUNT; v++) {
            const ckpt_wo_refusal *r = &wo.by[v];
            if (!r->check) continue;
            if (r->at < at || r->at >= at + p->end) abort();
            ckpt_torch_wo_reason(&sb, p, r, v);
        }
        if (wo.changes_op && (wo.changes_at < at || wo.changes_at >= at + p->end)) abort();
        sb_free(&sb);
        at += p->end;
        ckpt_pickle_free(p);
    }
    return 0;
}
