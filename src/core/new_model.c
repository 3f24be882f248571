/* The model the user will load into, as a pairing by name sees it (new_model.h). */
#include "core/new_model.h"
#include "core/impl.h"

#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ckpt_named_at *)a)->name, ((const ckpt_named_at *)b)->name);
}

bool ckpt_name_index_make(ckpt_name_index *x, const char *const *names, size_t n)
{
    x->n = 0;
    if (!(x->v = malloc((n ? n : 1) * sizeof *x->v))) return false;
    for (size_t k = 0; k < n; k++)
        if (names[k]) x->v[x->n++] = (ckpt_named_at){names[k], k};
    qsort(x->v, x->n, sizeof *x->v, by_name);
    return true;
}

/* Where name is (its first entry), CKPT_NAME_NONE. */
size_t ckpt_name_index_find(const ckpt_name_index *x, const char *name)
{
    ckpt_named_at key = {name, 0};
    const ckpt_named_at *hit = x->n ? bsearch(&key, x->v, x->n, sizeof *x->v, by_name) : NULL;
    if (!hit) return CKPT_NAME_NONE;
    while (hit > x->v && !strcmp(hit[-1].name, name)) hit--;
    return hit->at;
}

void ckpt_new_model_free(ckpt_new_model *m)
{
    free(m->names);
    free(m->tensor_of);
    free(m->owner);
    free(m->by.v);
}

/* The new model from its file (names in file order; ties from a torch.save layout's storages),
 * or from the names given; names given order a file that keeps no module order. */
int ckpt_new_model_make(const ckpt_report *rm, const ckpt_pair_options *o, ckpt_new_model *m, ckpt_error *err)
{
    memset(m, 0, sizeof *m);
    if (!rm) {
        m->n = o->name_count;
        m->ordered = true;
        if (!(m->names = malloc((m->n ? m->n : 1) * sizeof *m->names))) return ckpt_fail_oom(err);
        for (size_t k = 0; k < m->n; k++) m->names[k] = o->names[k] ? o->names[k] : "";
        return ckpt_name_index_make(&m->by, m->names, m->n) ? 0 : ckpt_fail_oom(err);
    }
    m->rm = rm;
    m->n = rm->tensors_len;
    m->names = malloc((m->n ? m->n : 1) * sizeof *m->names);
    m->tensor_of = malloc((m->n ? m->n : 1) * sizeof *m->tensor_of);
    m->owner = malloc((m->n ? m->n : 1) * sizeof *m->owner);
    if (!m->names || !m->tensor_of || !m->owner) return ckpt_fail_oom(err);
    for (size_t k = 0; k < m->n; k++) {
        m->names[k] = rm->tensors[k].name ? rm->tensors[k].name : "";
        m->tensor_of[k] = k;
        m->owner[k] = CKPT_NAME_NONE;
    }
    const struct ckpt_family_impl *impl = rm->family ? rm->family->impl : NULL;
    m->ordered = !(impl && impl->unordered);
    if (!ckpt_name_index_make(&m->by, m->names, m->n)) return ckpt_fail_oom(err);
    if (impl && impl->model_slots && !rm->slots_bound) {
        size_t *view = NULL, len = 0;
        uint64_t *ties = NULL;
        TRY(impl->model_slots(rm, &view, &ties, &len, err));
        for (size_t k = 0; k < len; k++)
            if (ties[k] != CKPT_NONE && ties[k] < len) m->owner[view[k]] = view[ties[k]];
        m->has_ties = true;
        free(view);
        free(ties);
    }
    if (o->names && !m->ordered) { /* the names given order the file's tensors */
        size_t *order = malloc((m->n ? m->n : 1) * sizeof *order);
        uint8_t *taken = calloc(m->n ? m->n : 1, 1);
        const char **names = malloc((m->n ? m->n : 1) * sizeof *names);
        if (!order || !taken || !names) {
            free(order);
            free(taken);
            free(names);
            return ckpt_fail_oom(err);
        }
        size_t k = 0;
        for (size_t j = 0; j < o->name_count; j++) {
            size_t at = o->names[j] ? ckpt_name_index_find(&m->by, o->names[j]) : CKPT_NAME_NONE;
            if (at == CKPT_NAME_NONE || taken[at]) continue;
            taken[at] = 1;
            order[k++] = at;
        }
        for (size_t j = 0; j < m->n; j++)
            if (!taken[j]) order[k++] = j;
        for (size_t j = 0; j < m->n; j++) names[j] = m->names[order[j]];
        free(m->names);
        m->names = names;
        free(m->tensor_of);
        m->tensor_of = order;
        free(taken);
        free(m->by.v);
        if (!ckpt_name_index_make(&m->by, m->names, m->n)) return ckpt_fail_oom(err);
        m->ordered = true;
    }
    return 0;
}
