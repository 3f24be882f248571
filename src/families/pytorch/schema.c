/* Which model slot each optimizer index is (format.md 10.4). PyTorch numbers a group's parameters
 * in the order it was given them (`model.parameters()`, or Hugging Face's decay / no-decay groups,
 * each in model order), and saves only those numbers: so an index is placed by its group's order
 * and its moments' shape, or by its name when the groups saved `param_names`. Where several
 * placements fit, the one that splits the fewest modules between trainable and frozen wins (a
 * frozen backbone stays whole), then the earliest; a tie left is said, never guessed silently.
 * Where none fits, the placement of the most indices names the first index it leaves out. */
#include "families/pytorch/schema.h"

#include <stdlib.h>
#include <string.h>

#define INF 0x3fffffff
/* Tables past this many cells (slots x indices) are not built: the earliest placement is taken
 * and an ambiguity is said at the first index where the latest differs. */
#define DP_CELLS_MAX ((size_t)1 << 24)

typedef struct ctx {
    const ckpt_bind_slot *slots;
    const ckpt_bind_index *idx;
    size_t n, k;
    size_t *owner; /* owner slots (no tie) in model order */
    size_t m;
    bool *modstart; /* per owner position: a module begins here */
    bool *taken;    /* per owner position */
    ckpt_binding *out;
} ctx;

static bool fits(const ctx *c, size_t j, size_t q)
{
    const ckpt_bind_index *x = &c->idx[j];
    const ckpt_bind_slot *s = &c->slots[c->owner[q]];
    if (s->frozen) return false; /* the training code does not give it to the optimizer */
    return !x->dims || (x->rank == s->rank && !memcmp(x->dims, s->dims, x->rank * sizeof *x->dims));
}

static bool add_failure(ckpt_binding *b, int code, int64_t index, strbuf *text)
{
    if (text->failed) return false;
    ckpt_error *f = realloc(b->failures, (b->failures_len + 1) * sizeof *f);
    if (!f) return false;
    b->failures = f;
    ckpt_error *e = &f[b->failures_len++];
    memset(e, 0, sizeof *e);
    ckpt_fail(e, "PyTorch", code, CKPT_NONE, 0, "%s", text->data);
    e->index = index < 0 ? CKPT_NONE : (uint64_t)index;
    sb_free(text);
    return e->message != NULL;
}

static bool add_warning(ckpt_binding *b, strbuf *text)
{
    if (text->failed) return false;
    char **w = realloc(b->warnings, (b->warnings_len + 1) * sizeof *w);
    if (!w) return false;
    b->warnings = w;
    w[b->warnings_len++] = sb_take(text);
    return w[b->warnings_len - 1] != NULL;
}

static void put_shape(strbuf *sb, const ckpt_bind_index *x)
{
    if (x->dims) ckpt_shape_print(sb, x->dims, x->rank);
    else sb_puts(sb, "no tensor");
}

static size_t prefix_len(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? (size_t)(dot - name) : 0;
}

/* ---- names (param_names) ---- */

static int by_names(ctx *c)
{
    for (size_t j = 0; j < c->k; j++) {
        const ckpt_bind_index *x = &c->idx[j];
        size_t hit = SIZE_MAX;
        for (size_t i = 0; i < c->n && hit == SIZE_MAX; i++)
            if (!strcmp(c->slots[i].name, x->name)) hit = c->slots[i].tie == CKPT_NONE ? i : c->slots[i].tie;
        strbuf t = {0};
        if (hit == SIZE_MAX) {
            sb_printf(&t, "optimizer index %lld is %s in its group's param_names, which the model does not have",
                      (long long)x->index, x->name);
            return add_failure(c->out, CKPT_E_TORCH_NAMED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
        }
        const ckpt_bind_slot *s = &c->slots[hit];
        if (s->frozen) {
            sb_printf(&t, "optimizer index %lld is %s in its group's param_names, which is given as frozen",
                      (long long)x->index, x->name);
            return add_failure(c->out, CKPT_E_TORCH_NAMED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
        }
        if (x->dims && !(x->rank == s->rank && !memcmp(x->dims, s->dims, x->rank * sizeof *x->dims))) {
            sb_printf(&t, "optimizer index %lld holds exp_avg ", (long long)x->index);
            put_shape(&t, x);
            sb_printf(&t, ", but %s is ", x->name);
            ckpt_shape_print(&t, s->dims, s->rank);
            sb_puts(&t, " in the model");
            return add_failure(c->out, CKPT_E_TORCH_NAMED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
        }
        c->out->slot_of[j] = hit;
    }
    return 0;
}

/* ---- shapes alone (a file that keeps no module order) ---- */

static int by_shape(ctx *c, uint8_t *undecided)
{
    for (size_t j = 0; j < c->k; j++) {
        size_t hit = SIZE_MAX, alike = 0;
        for (size_t q = 0; q < c->m; q++) {
            if (!fits(c, j, q)) continue;
            alike++;
            if (hit == SIZE_MAX && !c->taken[q]) hit = q;
        }
        if (hit == SIZE_MAX) {
            const ckpt_bind_index *x = &c->idx[j];
            strbuf t = {0};
            if (!x->dims)
                sb_printf(&t, "optimizer index %lld holds no moments yet, and the model has no parameter left for it",
                          (long long)x->index);
            else {
                sb_printf(&t, "optimizer index %lld holds exp_avg ", (long long)x->index);
                put_shape(&t, x);
                sb_printf(&t, ", but the model has %zu parameters of that shape and the optimizer more", alike);
            }
            return add_failure(c->out, CKPT_E_TORCH_UNPLACED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
        }
        c->taken[hit] = true;
        c->out->slot_of[j] = c->owner[hit];
        if (undecided && (alike > 1 || !c->idx[j].dims))
            for (size_t q = 0; q < c->m; q++)
                if (fits(c, j, q)) undecided[c->owner[q]] = 1;
    }
    return 0;
}

/* ---- group by group, in model order ---- */

/* The earliest (or, from the end, the latest) placement of the group's indices first..last-1
 * onto free owner positions, in order; false when none. */
static bool greedy(const ctx *c, size_t first, size_t last, bool latest, size_t *pos)
{
    if (!latest) {
        size_t q = 0;
        for (size_t j = first; j < last; j++, q++) {
            while (q < c->m && (c->taken[q] || !fits(c, j, q))) q++;
            if (q == c->m) return false;
            pos[j - first] = q;
        }
        return true;
    }
    size_t q = c->m;
    for (size_t j = last; j-- > first;) {
        do {
            if (q == 0) return false;
            q--;
        } while (c->taken[q] || !fits(c, j, q));
        pos[j - first] = q;
    }
    return true;
}

/* cost[(q * (len + 1) + j) * 4 + f]: the fewest modules split from owner position q on, with j
 * of the group's indices placed and f the flags of the module open before q (1 trainable, 2
 * frozen). */
typedef struct table {
    const ctx *c;
    size_t first, len;
    int *cost;
} table;

static int *cell(const table *t, size_t q, size_t j, unsigned f) { return &t->cost[(q * (t->len + 1) + j) * 4 + f]; }

/* The state after position q is decided: placed (index j there) or not. */
static unsigned step_flags(const table *t, size_t q, unsigned f, bool trainable, int *closed)
{
    *closed = 0;
    if (t->c->modstart[q]) {
        *closed = f == 3;
        f = 0;
    }
    return f | (trainable ? 1u : 2u);
}

static void fill(table *t)
{
    const ctx *c = t->c;
    for (size_t q = c->m + 1; q-- > 0;)
        for (size_t j = 0; j <= t->len; j++)
            for (unsigned f = 0; f < 4; f++) {
                int best = INF, closed;
                if (q == c->m) {
                    best = j == t->len ? (f == 3) : INF;
                } else if (c->taken[q]) {
                    unsigned g = step_flags(t, q, f, true, &closed);
                    int r = *cell(t, q + 1, j, g);
                    if (r < INF) best = r + closed;
                } else {
                    unsigned g = step_flags(t, q, f, false, &closed);
                    int r = *cell(t, q + 1, j, g);
                    if (r < INF) best = r + closed;
                    if (j < t->len && fits(c, t->first + j, q)) {
                        g = step_flags(t, q, f, true, &closed);
                        r = *cell(t, q + 1, j + 1, g);
                        if (r < INF && r + closed < best) best = r + closed;
                    }
                }
                *cell(t, q, j, f) = best;
            }
}

/* Placing index j at q from state (q, j, f) stays optimal? */
static bool place_optimal(const table *t, size_t q, size_t j, unsigned f)
{
    if (j >= t->len || t->c->taken[q] || !fits(t->c, t->first + j, q)) return false;
    int closed;
    unsigned g = step_flags(t, q, f, true, &closed);
    int r = *cell(t, q + 1, j + 1, g);
    return r < INF && r + closed == *cell(t, q, j, f);
}

/* The walk of the earliest optimal placement; alt_j and alt_q: the first index that an optimal
 * placement can put elsewhere, and where (SIZE_MAX when the best is unique). */
static void walk(const table *t, size_t *pos, size_t *alt_j, size_t *alt_q)
{
    const ctx *c = t->c;
    size_t j = 0;
    unsigned f = 0;
    *alt_j = *alt_q = SIZE_MAX;
    for (size_t q = 0; q < c->m; q++) {
        int closed;
        if (place_optimal(t, q, j, f)) {
            /* is leaving q unplaced optimal too? then index j has another place */
            const int best = *cell(t, q, j, f);
            unsigned h = step_flags(t, q, f, false, &closed);
            int acc = closed;
            for (size_t p = q + 1; *alt_j == SIZE_MAX && p < c->m && acc + *cell(t, p, j, h) == best; p++) {
                if (!c->taken[p] && fits(c, t->first + j, p)) {
                    unsigned g = step_flags(t, p, h, true, &closed);
                    int r = *cell(t, p + 1, j + 1, g);
                    if (r < INF && acc + closed + r == best) {
                        *alt_j = j;
                        *alt_q = p;
                    }
                }
                h = step_flags(t, p, h, c->taken[p], &closed);
                acc += closed;
            }
            pos[j++] = q;
            f = step_flags(t, q, f, true, &closed);
        } else {
            f = step_flags(t, q, f, c->taken[q], &closed);
        }
    }
}

/* The most indices placed (order kept, shapes equal), earliest first: lcs[(j * (m + 1)) + q] is
 * the most of indices j.. placed on positions q.. */
static int most_placed(const ctx *c, size_t first, size_t len, size_t *pos)
{
    size_t m = c->m;
    if ((len + 1) > DP_CELLS_MAX / (m + 1)) {
        /* too large to align: place greedily, earliest first, skipping what does not fit */
        size_t q = 0;
        for (size_t j = 0; j < len; j++) {
            size_t p = q;
            while (p < m && (c->taken[p] || !fits(c, first + j, p))) p++;
            pos[j] = p < m ? p : SIZE_MAX;
            if (p < m) q = p + 1;
        }
        return 0;
    }
    uint32_t *l = calloc((len + 1) * (m + 1), sizeof *l);
    if (!l) return CKPT_E_NO_MEMORY;
#define L(j, q) l[(size_t)(j) * (m + 1) + (q)]
    for (size_t j = len; j-- > 0;)
        for (size_t q = m; q-- > 0;) {
            uint32_t best = L(j, q + 1) > L(j + 1, q) ? L(j, q + 1) : L(j + 1, q);
            if (!c->taken[q] && fits(c, first + j, q) && L(j + 1, q + 1) + 1 > best) best = L(j + 1, q + 1) + 1;
            L(j, q) = best;
        }
    size_t j = 0, q = 0;
    for (size_t x = 0; x < len; x++) pos[x] = SIZE_MAX;
    while (j < len && q < m) {
        if (!c->taken[q] && fits(c, first + j, q) && L(j, q) == L(j + 1, q + 1) + 1) pos[j++] = q++;
        else if (L(j, q) == L(j, q + 1)) q++;
        else j++;
    }
#undef L
    free(l);
    return 0;
}

/* The one free owner position between positions lo and hi (exclusive; lo SIZE_MAX: the start)
 * whose rank is the index's: the parameter resized since the save, or SIZE_MAX (none, or more). */
static size_t resized(const ctx *c, const ckpt_bind_index *x, size_t lo, size_t hi)
{
    size_t hit = SIZE_MAX;
    for (size_t q = lo == SIZE_MAX ? 0 : lo + 1; x->dims && q < hi; q++) {
        const ckpt_bind_slot *s = &c->slots[c->owner[q]];
        if (c->taken[q] || s->frozen || s->rank != x->rank) continue;
        if (hit != SIZE_MAX) return SIZE_MAX;
        hit = q;
    }
    return hit;
}

static int unplaced(ctx *c, size_t first, size_t len, const size_t *pos)
{
    size_t j = 0;
    while (j < len && pos[j] != SIZE_MAX) j++;
    const ckpt_bind_index *x = &c->idx[first + j];
    const char *a = "the start", *b = "the end";
    size_t lo = SIZE_MAX, hi = c->m, left = 1; /* the neighbours' positions; the indices left out between */
    for (size_t p = j; p-- > 0;)
        if (pos[p] != SIZE_MAX) {
            a = c->slots[c->owner[lo = pos[p]]].name;
            break;
        }
    for (size_t p = j + 1; p < len; p++) {
        if (pos[p] == SIZE_MAX) {
            left++;
            continue;
        }
        b = c->slots[c->owner[hi = pos[p]]].name;
        break;
    }
    strbuf t = {0};
    /* one index left out where one parameter of its rank is free: that parameter, resized */
    size_t q = left == 1 ? resized(c, x, lo, hi) : SIZE_MAX;
    if (q != SIZE_MAX) {
        const ckpt_bind_slot *s = &c->slots[c->owner[q]];
        sb_printf(&t, "%s is ", s->name);
        ckpt_shape_print_list(&t, s->dims, s->rank);
        sb_puts(&t, " in the model, ");
        ckpt_shape_print_list(&t, x->dims, x->rank);
        sb_printf(&t, " in the optimizer's state (index %lld)", (long long)x->index);
        return add_failure(c->out, CKPT_E_TORCH_UNPLACED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
    }
    if (!x->dims) { /* no moments yet: any parameter fits, and none is left */
        sb_printf(
            &t,
            "optimizer index %lld holds no moments yet, and no parameter is left for it between %s and %s in the model",
            (long long)x->index, a, b);
        return add_failure(c->out, CKPT_E_TORCH_UNPLACED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
    }
    sb_printf(&t, "optimizer index %lld holds exp_avg ", (long long)x->index);
    put_shape(&t, x);
    sb_printf(&t, ", but no parameter of that shape lies between %s and %s in the model", a, b);
    return add_failure(c->out, CKPT_E_TORCH_UNPLACED, x->index, &t) ? 0 : CKPT_E_NO_MEMORY;
}

static int ambiguous(ctx *c, size_t j, size_t q1, size_t q2)
{
    strbuf t = {0};
    sb_printf(&t, "PyTorch: index %lld could be %s or %s: give the names (--names) or save param_names",
              (long long)c->idx[j].index, c->slots[c->owner[q1]].name, c->slots[c->owner[q2]].name);
    return add_warning(c->out, &t) ? 0 : CKPT_E_NO_MEMORY;
}

/* One group's indices first..first+len-1: placed, or the failure said (what fits is placed
 * still, for the report and the groups after). 1 when it failed. */
static int place_group(ctx *c, size_t first, size_t len, size_t *pos, size_t *late)
{
    int rc = 0;
    if (!greedy(c, first, first + len, false, pos)) {
        if ((rc = most_placed(c, first, len, pos))) return rc;
        if (unplaced(c, first, len, pos)) return CKPT_E_NO_MEMORY;
        for (size_t j = 0; j < len; j++) /* what the best alignment placed */
            if (pos[j] != SIZE_MAX) {
                c->taken[pos[j]] = true;
                c->out->slot_of[first + j] = c->owner[pos[j]];
            }
        return 1;
    }
    greedy(c, first, first + len, true, late);
    if (memcmp(pos, late, len * sizeof *pos)) {
        if ((len + 1) * 4 > DP_CELLS_MAX / (c->m + 1)) {
            size_t j = 0;
            while (pos[j] == late[j]) j++;
            rc = ambiguous(c, first + j, pos[j], late[j]);
        } else {
            table t = {c, first, len, malloc((c->m + 1) * (len + 1) * 4 * sizeof(int))};
            if (!t.cost) return CKPT_E_NO_MEMORY;
            fill(&t);
            size_t aj, aq;
            walk(&t, pos, &aj, &aq);
            free(t.cost);
            if (aj != SIZE_MAX) rc = ambiguous(c, first + aj, pos[aj], aq);
        }
    }
    for (size_t j = 0; j < len; j++) {
        c->taken[pos[j]] = true;
        c->out->slot_of[first + j] = c->owner[pos[j]];
    }
    return rc;
}

/* Every group in turn; a group that does not fit says so and the next ones are placed still. */
static int by_groups(ctx *c)
{
    size_t *pos = malloc((c->k ? c->k : 1) * sizeof *pos), *late = malloc((c->k ? c->k : 1) * sizeof *late);
    int rc = pos && late ? 0 : CKPT_E_NO_MEMORY;
    for (size_t first = 0; (!rc || rc == 1) && first < c->k;) {
        size_t len = 1;
        while (first + len < c->k && c->idx[first + len].group == c->idx[first].group) len++;
        rc = place_group(c, first, len, pos, late);
        first += len;
    }
    free(pos);
    free(late);
    return rc == 1 ? 0 : rc;
}

int ckpt_bind_map(const ckpt_bind_slot *slots, size_t n, const ckpt_bind_index *idx, size_t k, bool shape_only,
                  ckpt_binding *out, uint8_t *undecided)
{
    memset(out, 0, sizeof *out);
    ctx c = {slots, idx, n, k, malloc((n ? n : 1) * sizeof(size_t)), 0, calloc(n ? n : 1, 1), calloc(n ? n : 1, 1),
             out};
    out->slot_of = malloc((k ? k : 1) * sizeof *out->slot_of);
    int rc = 0;
    if (!c.owner || !c.modstart || !c.taken || !out->slot_of) {
        rc = CKPT_E_NO_MEMORY;
        goto done;
    }
    for (size_t j = 0; j < k; j++) out->slot_of[j] = CKPT_NONE;
    for (size_t i = 0; i < n; i++)
        if (slots[i].tie == CKPT_NONE) c.owner[c.m++] = i;
    for (size_t q = 0; q < c.m; q++) {
        const char *a = slots[c.owner[q]].name, *b = q ? slots[c.owner[q - 1]].name : NULL;
        size_t la = prefix_len(a);
        c.modstart[q] = !b || la != prefix_len(b) || memcmp(a, b, la) != 0;
    }
    size_t frozen = 0;
    for (size_t q = 0; q < c.m; q++) frozen += slots[c.owner[q]].frozen;
    bool named = k > 0;
    for (size_t j = 0; j < k; j++) named = named && idx[j].name;
    if (k > c.m - frozen) {
        /* the training code gives the optimizer at most the model's parameters: torch's own
         * check (torch/optim/optimizer.py, load_state_dict) finds a group of another size */
        strbuf t = {0};
        sb_printf(&t, "the optimizer's groups hold %zu parameters, the model %zu", k, c.m - frozen);
        if (frozen) sb_printf(&t, " besides the %zu given as frozen", frozen);
        sb_puts(&t, ": torch's load_state_dict refuses this state (" CKPT_TORCH_GROUP_SIZE ")");
        rc = add_failure(out, CKPT_E_TORCH_COUNT, -1, &t) ? 0 : CKPT_E_NO_MEMORY;
    } else if (named) {
        rc = by_names(&c);
    } else if (shape_only) {
        rc = by_shape(&c, undecided);
    } else {
        rc = by_groups(&c);
    }
done:
    free(c.owner);
    free(c.modstart);
    free(c.taken);
    if (rc) ckpt_binding_free(out);
    return rc;
}

void ckpt_binding_free(ckpt_binding *b)
{
    if (!b) return;
    free(b->slot_of);
    for (size_t k = 0; k < b->failures_len; k++) ckpt_error_clear(&b->failures[k]);
    free(b->failures);
    for (size_t k = 0; k < b->warnings_len; k++) free(b->warnings[k]);
    free(b->warnings);
    memset(b, 0, sizeof *b);
}
