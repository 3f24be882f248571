/* The gradient of a one-step pair (docs/runs.md), exported as {name}.grad tensors: g = dm / (1 - b1)
 * per element, streamed from A's and B's first moments through the exporter's writers. */
#include "analyses/analyses.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_FEW (4 * CKPT_HEALTH_CHUNK) /* elements per read of each file */

/* A source whose bytes at B's m offsets are the gradients of those entries' elements: the
 * exporter's writers stream it as they stream a payload. */
typedef struct grad_source {
    const ckpt_file *a, *b;
    const ckpt_report *rb;
    double b1, omb1;
    int dtype;
    unsigned width;
    uint8_t *raw_a, *raw_b; /* CHUNK_FEW * width */
    double *ma, *mb;
} grad_source;

static size_t grad_read(void *ctx, uint64_t offset, void *buf, size_t n)
{
    grad_source *g = ctx;
    const unsigned w = g->width;
    /* the entry of B whose m holds offset (entries are in file order: ascending offsets) */
    size_t lo = 0, hi = g->rb->entries_len;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->rb->entries[mid].m_offset <= offset) lo = mid;
        else hi = mid;
    }
    const ckpt_entry_info *eb = hi ? &g->rb->entries[lo] : NULL, *ea;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (!eb || offset < eb->m_offset || (offset - eb->m_offset) % w || n % w ||
        (offset - eb->m_offset) / w + n / w > eb->count || ckpt_file_entry(g->a, eb->id, &ea, NULL, &err)) {
        ckpt_error_clear(&err);
        return CKPT_READ_ERROR;
    }
    uint64_t first = (offset - eb->m_offset) / w;
    size_t total = n / w;
    for (size_t done = 0; done < total;) {
        size_t k = total - done < CHUNK_FEW ? total - done : CHUNK_FEW;
        uint64_t at = (first + done) * w;
        if (ckpt_read_at(ckpt_file_source(g->a), ea->m_offset + at, g->raw_a, k * w, "the source", &err) ||
            ckpt_read_at(ckpt_file_source(g->b), eb->m_offset + at, g->raw_b, k * w, "the source", &err)) {
            ckpt_error_clear(&err);
            return CKPT_READ_ERROR;
        }
        ckpt_dtype_widen(g->dtype, g->raw_a, k, g->ma);
        ckpt_dtype_widen(g->dtype, g->raw_b, k, g->mb);
        uint8_t *dst = (uint8_t *)buf + done * w;
        for (size_t j = 0; j < k; j++) {
            double x = gradient_of(g->mb[j] - g->b1 * g->ma[j], g->omb1);
            if (w == 8) memcpy(dst + 8 * j, &x, 8);
            else {
                float f = (float)x;
                memcpy(dst + 4 * j, &f, 4);
            }
        }
        done += k;
    }
    return n;
}

int ckpt_run_export_gradient(const ckpt_file *a, const ckpt_file *b, const ckpt_export_options *o, const ckpt_sink *out,
                             ckpt_error *err)
{
    if (!a || !b || !o || !out)
        return ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0, "invalid arguments to the exporter");
    double b1 = 0, omb1 = 1;
    int rc = ckpt_run_one_pair(a, b, &b1, &omb1, err);
    /* the owner slots one Adam step apart, of those asked for */
    const ckpt_report *ra = rc ? NULL : ckpt_file_report(a), *rb = rc ? NULL : ckpt_file_report(b);
    uint64_t *slots = rc ? NULL : malloc((rb->entries_len ? rb->entries_len : 1) * sizeof *slots);
    size_t count = 0;
    if (!rc && !slots) rc = ckpt_fail_oom(err);
    for (size_t k = 0; !rc && k < rb->entries_len; k++) {
        const ckpt_entry_info *eb = &rb->entries[k], *ea;
        if (ckpt_file_entry(a, eb->id, &ea, NULL, err)) {
            rc = err->code;
            break;
        }
        bool wanted = !o->slots;
        for (size_t q = 0; o->slots && q < o->slot_count; q++) wanted |= o->slots[q] == eb->id;
        if (wanted && eb->step > ea->step && eb->step - ea->step == 1) slots[count++] = eb->id;
    }
    if (!rc && !count)
        rc = ckpt_fail(err, NULL, CKPT_E_INVALID_ARGUMENT, CKPT_NONE, 0,
                       "no slot is one Adam step from A to B: the gradient comes back from a one-step pair only");
    if (!rc) {
        grad_source g = {a, b, rb, b1, omb1, ra->dtype, ckpt_dtype_width(ra->dtype), NULL, NULL, NULL, NULL};
        g.raw_a = malloc(CHUNK_FEW * 8), g.raw_b = malloc(CHUNK_FEW * 8);
        g.ma = malloc(CHUNK_FEW * sizeof(double)), g.mb = malloc(CHUNK_FEW * sizeof(double));
        ckpt_source src = {&g, grad_read, CKPT_NONE};
        ckpt_export_options with = *o;
        with.slots = slots, with.slot_count = count;
        rc = g.raw_a && g.raw_b && g.ma && g.mb ? ckpt_export_computed(b, &src, ".grad", &with, out, err)
                                                : ckpt_fail_oom(err);
        free(g.raw_a), free(g.raw_b), free(g.ma), free(g.mb);
    }
    free(slots);
    return rc;
}
