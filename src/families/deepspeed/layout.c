/* The layout of the flat partitions (format.md 11.3): each trainable parameter's fragments, by
 * the param_shapes walk (as zero_to_fp32 and DeepSpeed's own load read them), the lengths and
 * paddings every partition must have (11.5.13, 15-17), param_slice_mappings against the walk
 * (11.5.19), and the steps (11.5.20-22, 33). */
#include "families/deepspeed/deepspeed.h"

#include <stdio.h>
#include <stdlib.h>

static bool zero3(const ckpt_ds *ds) { return ds->kind == DS_ZERO3; }

/* ---- the walk: params and fragments ---- */

static int push_frag(ckpt_ds *ds, ds_frag f, ckpt_error *err)
{
    if (!ckpt_grow((void **)&ds->frags, &ds->frags_cap, ds->frags_len + 1, sizeof *ds->frags))
        return ckpt_fail_oom(err);
    ds->frags[ds->frags_len++] = f;
    return 0;
}

/* The params of param_shapes (rank 0's model states), group by group (ZeRO-3: sub-group by
 * sub-group), with their fragments. */
static int walk(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *m = &ds->files[ds->model];
    ds_tree c = ds_tree_of(m);
    size_t G = ds_len(c, m->param_shapes);
    if (!(ds->groups = calloc(G ? G : 1, sizeof *ds->groups))) return ckpt_fail_oom(&rep->error);
    ds->groups_len = G;
    size_t total = 0;
    for (size_t g = 0; g < G; g++) total += ds_len(c, ds_item(c, m->param_shapes, g));
    if (!(ds->params = calloc(total ? total : 1, sizeof *ds->params))) return ckpt_fail_oom(&rep->error);
    const ds_file *f0 = ds_rank_file(ds, 0);
    const uint64_t W = ds->W;
    for (size_t g = 0; g < G; g++) {
        ds_group *gr = &ds->groups[g];
        gr->group = zero3(ds) && f0 && g < f0->groups_len ? f0->groups[g].group : g;
        gr->first = ds->params_len;
        ds_dict_it it;
        size_t key, value;
        ds_dict_begin(c, ds_item(c, m->param_shapes, g), &it);
        uint64_t offset = 0;
        while (ds_dict_next(c, &it, &key, &value)) {
            ds_param *p = &ds->params[ds->params_len++];
            const char *s;
            size_t n;
            ds_str(c, key, &s, &n);
            if (!(p->name = malloc(n + 1))) return ckpt_fail_oom(&rep->error);
            memcpy(p->name, s, n);
            p->name[n] = 0;
            p->slot = DS_NONE;
            p->group = gr->group;
            p->flat = g;
            ds_shape(c, value, p->dims, 8, &p->rank_dims, &p->too_deep);
            uint64_t count = 1;
            bool over = p->too_deep;
            for (uint32_t j = 0; j < p->rank_dims && j < 8; j++) over |= ckpt_mul_overflows(count, p->dims[j], &count);
            if (over)
                return ds_fail(ds, rep, CKPT_E_DS_NAMES, "%s: param_shapes gives it more than 2^64 elements", p->name);
            p->count = count;
            p->offset = offset;
            uint64_t step = zero3(ds) ? count / W + (count % W != 0) : count;
            if (ckpt_add_overflows(offset, step, &offset))
                return ds_fail(ds, rep, CKPT_E_DS_NAMES, "%s: param_shapes gives it more than 2^64 elements", p->name);
        }
        gr->count = ds->params_len - gr->first;
        gr->numel = offset;
        if (!zero3(ds)) {
            /* align_dense_tensors: a multiple of 2W (nccl_start_alignment_factor 2 x W) */
            uint64_t A = 2 * W;
            gr->padding = (A - gr->numel % A) % A;
            gr->per_rank = (gr->numel + gr->padding) / W;
        }
    }
    /* fragments (11.3), in rank order: when every rank's partition is there (W is then at most
     * the files read, which bounds them) */
    bool all = ds->optim != NULL;
    for (uint64_t r = 0; all && r < W; r++) all = ds->optim[r] != DS_NONE;
    for (size_t k = 0; all && k < ds->params_len; k++) {
        ds_param *p = &ds->params[k];
        p->frags = ds->frags_len;
        if (!zero3(ds)) {
            uint64_t P = ds->groups[p->flat].per_rank;
            /* the ranks it overlaps: from o / P to (o + n - 1) / P */
            uint64_t r0 = P ? p->offset / P : W, r1 = P && p->count ? (p->offset + p->count - 1) / P + 1 : 0;
            for (uint64_t r = r0; r < r1 && r < W; r++) {
                uint64_t lo = p->offset > r * P ? p->offset : r * P;
                uint64_t hi = p->offset + p->count < (r + 1) * P ? p->offset + p->count : (r + 1) * P;
                if (lo < hi) TRY(push_frag(ds, (ds_frag){DS_NONE, r, lo - r * P, hi - lo}, &rep->error));
            }
        } else {
            uint64_t q = p->count / W + (p->count % W != 0);
            for (uint64_t r = 0; r < W && r * q < p->count; r++) {
                uint64_t c2 = p->count - r * q < q ? p->count - r * q : q;
                TRY(push_frag(ds, (ds_frag){DS_NONE, r, p->offset, c2}, &rep->error));
            }
        }
        p->frags_len = ds->frags_len - p->frags;
    }
    for (size_t j = 0; j < ds->frags_len; j++) ds->frags[j].file = ds->optim[ds->frags[j].rank];
    return 0;
}

/* ---- 11.5.13: groups against param_shapes ---- */

static int group_counts(ckpt_ds *ds, ckpt_report *rep)
{
    for (uint64_t r = 0; r < ds->W; r++) {
        ds_file *f = ds->optim[r] == DS_NONE ? NULL : &ds->files[ds->optim[r]];
        if (!f || !f->read) continue;
        size_t m = ds->groups_len;
        size_t n = zero3(ds) ? f->groups_len : f->param_groups;
        if (n == m) n = f->flat_count;
        if (n != m)
            TRY(ds_fail(ds, rep, CKPT_E_DS_SAVES, "%s has %zu parameter groups, param_shapes has %zu", f->name, n, m));
        else f->layout_ok = true;
    }
    return 0;
}

/* ---- 11.5.15-17 ---- */

static const char *flat_key(const ckpt_ds *ds, int k)
{
    if (k != DS_FP32) return ds_key_names[k];
    return zero3(ds) ? "fp32_flat_groups" : "single_partition_of_fp32_groups";
}

static int lengths(ckpt_ds *ds, ckpt_report *rep)
{
    const uint64_t W = ds->W;
    bool ok = true;
    for (size_t g = 0; g < ds->groups_len; g++) {
        const ds_group *gr = &ds->groups[g];
        for (uint64_t r = 0; r < W; r++) {
            const ds_file *f = ds_rank_file(ds, r);
            if (!f || !f->layout_ok) {
                ok = false;
                continue;
            }
            const ds_fgroup *fg = &f->groups[g];
            for (int k = 0; k < DS_KEYS; k++) {
                const ds_flat *fl = &fg->flat[k];
                if (fl->tensor == DS_NONE) {
                    if (k == DS_FP32) ok = false;
                    continue;
                }
                uint64_t want;
                if (zero3(ds)) want = gr->numel;
                else {
                    uint64_t P = gr->per_rank, pad = gr->padding;
                    bool cut = (k == DS_FP32 || f->elastic) && ds->kind != DS_BF16_OPTIMIZER && r == W - 1;
                    want = !cut ? P : pad <= P ? P - pad : 2 * P > pad ? 2 * P - pad : 0;
                }
                if (fl->count == want) continue;
                ok = false;
                if (zero3(ds))
                    TRY(ds_fail(
                        ds, rep, CKPT_E_DS_LAYOUT,
                        "sub-group %zu: rank %llu's %s holds %llu elements; its parameters' partitions need %llu", g,
                        (unsigned long long)r, flat_key(ds, k), (unsigned long long)fl->count,
                        (unsigned long long)want));
                else
                    TRY(ds_fail(ds, rep, CKPT_E_DS_LAYOUT,
                                "group %zu: rank %llu's %s holds %llu elements; its parameters need %llu, padded to "
                                "%llu \xc3\x97 %llu",
                                g, (unsigned long long)r, flat_key(ds, k), (unsigned long long)fl->count,
                                (unsigned long long)gr->numel, (unsigned long long)W,
                                (unsigned long long)gr->per_rank));
            }
        }
        if (zero3(ds)) continue;
        /* 11.5.16: group_paddings is pad_g on the last rank, 0 on the others */
        for (uint64_t r = 0; r < W; r++) {
            const ds_file *f = ds_rank_file(ds, r);
            if (!f || !f->layout_ok || !f->groups[g].has_padding) continue;
            uint64_t want = r == W - 1 ? gr->padding : 0;
            if (f->groups[g].padding != want) {
                ok = false;
                TRY(ds_fail(ds, rep, CKPT_E_DS_LAYOUT, "group %zu: rank %llu records padding %llu, expected %llu", g,
                            (unsigned long long)r, (unsigned long long)f->groups[g].padding, (unsigned long long)want));
            }
        }
    }
    ds->layout_ok = ok;
    return 0;
}

/* ---- 11.5.19: param_slice_mappings against the walk (a warning) ---- */

static void where_text(strbuf *sb, bool has, uint64_t start, uint64_t count)
{
    if (has) sb_printf(sb, "start %llu numel %llu", (unsigned long long)start, (unsigned long long)count);
    else sb_puts(sb, "nothing");
}

static int mapping_warning(ckpt_report *rep, uint64_t r, size_t g, const char *name, bool ha, uint64_t sa, uint64_t ca,
                           bool hb, uint64_t sb_, uint64_t cb)
{
    strbuf a = {0}, b = {0};
    where_text(&a, ha, sa, ca);
    where_text(&b, hb, sb_, cb);
    int rc = a.failed || b.failed
                 ? ckpt_fail_oom(&rep->error)
                 : ds_warn(rep, "rank %llu group %zu: param_slice_mappings give %s %s, the param_shapes walk %s",
                           (unsigned long long)r, g, name, a.data, b.data);
    sb_free(&a);
    sb_free(&b);
    return rc;
}

static int mappings(ckpt_ds *ds, ckpt_report *rep)
{
    if (zero3(ds)) return 0;
    for (uint64_t r = 0; r < ds->W; r++) {
        const ds_file *f = ds_rank_file(ds, r);
        if (!f || !f->layout_ok) continue;
        ds_tree c = ds_tree_of(f);
        for (size_t g = 0; g < ds->groups_len; g++) {
            size_t d = f->groups[g].mappings;
            if (d == DS_NONE) continue;
            const ds_group *gr = &ds->groups[g];
            for (size_t k = gr->first; k < gr->first + gr->count; k++) {
                const ds_param *p = &ds->params[k];
                bool hw = false;
                uint64_t sw = 0, cw = 0;
                for (size_t j = p->frags; j < p->frags + p->frags_len; j++)
                    if (ds->frags[j].rank == r) hw = true, sw = ds->frags[j].start, cw = ds->frags[j].count;
                uint64_t sm = 0, cm = 0;
                size_t v = ds_get(c, d, p->name);
                bool hm = v != CKPT_PNIL && ds_fragment_address(c, v, &sm, &cm);
                if (hm != hw || (hm && (sm != sw || cm != cw)))
                    TRY(mapping_warning(rep, r, g, p->name, hm, sm, cm, hw, sw, cw));
            }
            /* names the walk does not put in this group */
            ds_dict_it it;
            size_t key, value;
            ds_dict_begin(c, d, &it);
            while (ds_dict_next(c, &it, &key, &value)) {
                bool known = false;
                for (size_t k = gr->first; k < gr->first + gr->count && !known; k++)
                    known = ds_str_is(c, key, ds->params[k].name);
                if (known) continue;
                const char *s;
                size_t n;
                uint64_t sm = 0, cm = 0;
                if (!ds_str(c, key, &s, &n) || !ds_fragment_address(c, value, &sm, &cm)) continue;
                char *name = malloc(n + 1);
                if (!name) return ckpt_fail_oom(&rep->error);
                memcpy(name, s, n);
                name[n] = 0;
                int rc = mapping_warning(rep, r, g, name, true, sm, cm, false, 0, 0);
                free(name);
                TRY(rc);
            }
        }
    }
    return 0;
}

int ds_walk(ckpt_ds *ds, ckpt_report *rep)
{
    if (ds->model == DS_NONE || ds->files[ds->model].param_shapes == CKPT_PNIL || !ds->W) return 0;
    TRY(walk(ds, rep));
    return group_counts(ds, rep);
}

int ds_lengths(ckpt_ds *ds, ckpt_report *rep)
{
    if (!ds->params) return 0;
    TRY(lengths(ds, rep));
    /* two descriptions of one layout: compared when the layout's lengths are its own */
    return ds->layout_ok ? mappings(ds, rep) : 0;
}

/* ---- steps (11.5.20-22, 33) ---- */

static int step_text(strbuf *sb, double x)
{
    ds_num_text(sb, x);
    return sb->failed ? -1 : 0;
}

int ds_steps(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = ds_rank_file(ds, 0);
    if (!f0 || !f0->layout_ok) return 0;
    const char *what = zero3(ds) ? "sub-group" : "group";
    for (size_t g = 0; g < ds->groups_len; g++) {
        ds_group *gr = &ds->groups[g];
        gr->has_step = f0->groups[g].has_step;
        gr->step = f0->groups[g].step;
        for (uint64_t r = 1; r < ds->W; r++) {
            const ds_file *f = ds_rank_file(ds, r);
            if (!f || !f->layout_ok) continue;
            const ds_fgroup *fg = &f->groups[g];
            if (fg->has_step == gr->has_step && (!fg->has_step || fg->step == gr->step)) continue;
            strbuf a = {0}, b = {0};
            if (fg->has_step) step_text(&a, fg->step);
            else sb_puts(&a, "none");
            if (gr->has_step) step_text(&b, gr->step);
            else sb_puts(&b, "none");
            int rc = a.failed || b.failed
                         ? ckpt_fail_oom(&rep->error)
                         : ds_fail(ds, rep, CKPT_E_DS_STEP, "%s %zu: step %s on rank %llu, %s on rank 0", what, g,
                                   a.data, (unsigned long long)r, b.data);
            sb_free(&a);
            sb_free(&b);
            TRY(rc);
        }
    }
    return 0;
}

/* 11.5.21, 22, 33: warnings, after every error's check */
int ds_step_warnings(ckpt_ds *ds, ckpt_report *rep)
{
    const ds_file *f0 = ds_rank_file(ds, 0);
    if (!f0 || !f0->layout_ok || !ds->groups_len) return 0;
    const char *what = zero3(ds) ? "sub-group" : "group";
    const ds_group *g0 = &ds->groups[0];
    for (size_t g = 1; g < ds->groups_len; g++) {
        const ds_group *gr = &ds->groups[g];
        if (!gr->has_step || !g0->has_step || gr->step == g0->step) continue;
        strbuf a = {0}, b = {0};
        step_text(&a, gr->step);
        step_text(&b, g0->step);
        int rc = a.failed || b.failed
                     ? ckpt_fail_oom(&rep->error)
                     : ds_warn(rep, "%s %zu is at step %s, %s 0 at step %s", what, g, a.data, what, b.data);
        sb_free(&a);
        sb_free(&b);
        TRY(rc);
    }
    const ds_file *m = ds->model == DS_NONE ? NULL : &ds->files[ds->model];
    if (m && m->has_global && m->has_skipped && g0->has_step && m->skipped_steps <= m->global_steps &&
        g0->step != (double)(m->global_steps - m->skipped_steps)) {
        strbuf t = {0};
        step_text(&t, g0->step);
        int rc = t.failed ? ckpt_fail_oom(&rep->error)
                          : ds_warn(rep,
                                    "the optimizer is at step %s, the engine at %llu (global_steps %llu \xe2\x88\x92 "
                                    "skipped_steps %llu): the optimizer was restarted, or the files come from "
                                    "different saves",
                                    t.data, (unsigned long long)(m->global_steps - m->skipped_steps),
                                    (unsigned long long)m->global_steps, (unsigned long long)m->skipped_steps);
        sb_free(&t);
        TRY(rc);
    }
    size_t last = DS_NONE;
    for (size_t g = 0; g < ds->groups_len; g++) {
        if (f0->groups[g].has_state || ds->groups[g].group == last) continue;
        last = ds->groups[g].group;
        TRY(ds_warn(rep, "group %zu has no optimizer state: saved before the first step", ds->groups[g].group));
    }
    return 0;
}

/* ---- fragments ---- */

size_t ckpt_ds_fragments(const ckpt_ds *ds, size_t param, int key, ds_frag_at *out)
{
    if (ds->universal) return ds_universal_fragments(ds, param, key, out);
    const ds_param *p = &ds->params[param];
    size_t n = 0;
    for (size_t j = p->frags; j < p->frags + p->frags_len; j++) {
        const ds_frag *fr = &ds->frags[j];
        if (fr->file == DS_NONE) continue;
        const ds_file *f = &ds->files[fr->file];
        if (p->flat >= f->groups_len) continue;
        const ds_flat *fl = &f->groups[p->flat].flat[key];
        if (fl->tensor == DS_NONE) continue;
        unsigned w = ckpt_dtype_width(fl->dtype);
        if (out)
            out[n] = (ds_frag_at){
                fr->file, fr->rank, fr->start, fr->count, fl->at + fr->start * w, fl->at - f->base + fr->start * w,
                fl->dtype};
        n++;
    }
    return n;
}

bool ckpt_ds_has_key(const ckpt_ds *ds, size_t param, int key)
{
    const ds_param *p = &ds->params[param];
    return p->frags_len && ckpt_ds_fragments(ds, param, key, NULL) == p->frags_len;
}
