/* An Accelerate random_states_{p}.pkl read as data (docs/distributed.md, "Accelerate folders"): torch.save of a dict
 * {'step': Accelerate's step counter, 'random_state': Python's, 'numpy_random_seed': NumPy's,
 * 'torch_manual_seed': torch's, ...}. Nothing it names is run; only its keys and `step` are
 * taken (older releases save no `step`). */
#include "families/accelerate/accelerate.h"
#include "families/pytorch/objects.h"

#include <stdlib.h>

#define KEYS_MAX 64

static const ckpt_pnode *node(const ckpt_pickle *p, size_t k) { return ckpt_pickle_node(p, k); }

static bool is_key(const ckpt_pickle *p, size_t k)
{
    return k != CKPT_PNIL && node(p, k)->kind == CKPT_PK_STR && !(node(p, k)->flags & CKPT_PF_TEXT);
}

static int read_states(const ckpt_torch *t, const char *name, ckpt_accelerate_random_states *out, ckpt_error *err)
{
    const ckpt_pickle *p = t->pickle;
    const ckpt_pnode *root = node(p, p->root);
    if (root->kind != CKPT_PK_DICT)
        return ckpt_fail(err, name, CKPT_E_TRAINER_FILE, t->pickle_at + root->offset, 1,
                         "the object at byte %llu of %s is not a dict: not Accelerate's random states",
                         (unsigned long long)root->offset, t->member);
    strbuf keys = {0};
    sb_putc(&keys, '[');
    size_t count = 0;
    for (uint32_t kc = root->first; kc != CKPT_PNIL;) {
        uint32_t vc = p->cells[kc].next;
        if (vc == CKPT_PNIL) break;
        size_t key = p->cells[kc].node, value = p->cells[vc].node;
        if (is_key(p, key)) {
            const char *s = (const char *)p->data + node(p, key)->at;
            size_t len = node(p, key)->len;
            if (count++ < KEYS_MAX) {
                if (count > 1) sb_putc(&keys, ',');
                j_string_n(&keys, s, len);
            }
            if (len == 4 && !memcmp(s, "step", 4)) {
                const ckpt_pnode *v = node(p, value);
                if (v->kind != CKPT_PK_INT || v->i < 0) {
                    sb_free(&keys);
                    return ckpt_fail(err, name, CKPT_E_TRAINER_FILE, t->pickle_at + v->offset, 1,
                                     "step at byte %llu of %s is not a count (an int of at least 0)",
                                     (unsigned long long)v->offset, t->member);
                }
                out->has_step = true;
                out->step = (uint64_t)v->i;
            }
        }
        kc = p->cells[vc].next;
    }
    sb_putc(&keys, ']');
    if (keys.failed) return ckpt_fail_oom(err);
    out->keys_json = sb_take(&keys);
    out->key_count = count;
    return 0;
}

int ckpt_accelerate_random_states_read(const ckpt_source *src, const char *name, ckpt_accelerate_random_states *out,
                                       ckpt_error *err)
{
    memset(out, 0, sizeof *out);
    ckpt_torch *t;
    TRY(ckpt_torch_open(src, name, &t, err));
    int rc = read_states(t, name, out, err);
    ckpt_torch_free(t);
    if (rc) ckpt_accelerate_random_states_free(out);
    return rc;
}

void ckpt_accelerate_random_states_free(ckpt_accelerate_random_states *s)
{
    if (!s) return;
    free(s->keys_json);
    memset(s, 0, sizeof *s);
}

char *ckpt_accelerate_random_states_json(const ckpt_accelerate_random_states *s)
{
    strbuf sb = {0};
    sb_lit(&sb, "{\"step\":");
    if (s->has_step) j_u64(&sb, s->step);
    else sb_lit(&sb, "null");
    sb_lit(&sb, ",\"keys\":");
    sb_puts(&sb, s->keys_json ? s->keys_json : "[]");
    sb_lit(&sb, ",\"keyCount\":");
    j_u64(&sb, s->key_count);
    sb_putc(&sb, '}');
    return sb_take(&sb);
}
