/* The DCP family's report members (docs/distributed.md): an optimizer report's (the schema of
 * 12.4, an entry per slot with optimizer state), then "dcp": the index's version and class
 * paths, the optimizer's form, the data files and strays, the key counts, the groups, the bytes
 * items, per slot its chunks and its state's chunks with their byte ranges, and the diagnostics
 * of 12.5 with their facts. */
#include "families/dcp/dcp.h"

static void j_str_or_null(strbuf *sb, const char *s)
{
    if (s) j_string(sb, s);
    else sb_puts(sb, "null");
}

static void j_chunks(strbuf *sb, const ckpt_dcp *d, const dcp_key *key)
{
    sb_putc(sb, '[');
    for (size_t j = key->chunks; j < key->chunks + key->chunks_len; j++) {
        const dcp_chunk *ch = &d->chunks[j];
        sb_puts(sb, j > key->chunks ? ",{\"offsets\":" : "{\"offsets\":");
        j_dims(sb, d->pool + ch->offsets, ch->orank);
        sb_puts(sb, ",\"sizes\":");
        j_dims(sb, d->pool + ch->sizes, ch->srank);
        const dcp_storage *st = ch->storage == DCP_NONE ? NULL : &d->storages[ch->storage];
        const dcp_file *f = st && st->file != DCP_NONE ? &d->files[st->file] : NULL;
        sb_puts(sb, ",\"file\":");
        j_str_or_null(sb, st ? dcp_storage_file(st) : NULL);
        sb_puts(sb, ",\"offset\":");
        j_slot(sb, st ? st->offset : CKPT_NONE);
        sb_puts(sb, ",\"length\":");
        j_slot(sb, st ? st->length : CKPT_NONE);
        sb_puts(sb, ",\"rank\":");
        j_slot(sb, f ? f->rank : CKPT_NONE);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

static void j_dtype(strbuf *sb, const dcp_key *key)
{
    const char *n = ckpt_dtype_safetensors_name(key->dtype);
    j_str_or_null(sb, n ? n : key->dtype_name);
}

static void j_entries(strbuf *sb, const ckpt_dcp *d, const ckpt_report *rep)
{
    static const char *const names[DCP_STATE_KEYS] = {"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"};
    sb_puts(sb, ",\"entries\":[");
    for (size_t s = 0; s < d->slots_len; s++) {
        const dcp_slot *sl = &d->slots[s];
        const dcp_key *key = &d->keys[sl->key];
        sb_puts(sb, s ? ",{\"name\":" : "{\"name\":");
        j_string(sb, key->fqn);
        sb_puts(sb, ",\"key\":");
        j_string(sb, key->name);
        sb_puts(sb, ",\"group\":");
        j_slot(sb, sl->group == DCP_NONE ? CKPT_NONE : sl->group);
        sb_puts(sb, ",\"shape\":");
        j_dims(sb, d->pool + key->dims, key->rank);
        sb_puts(sb, ",\"dtype\":");
        j_dtype(sb, key);
        sb_puts(sb, ",\"step\":");
        j_num_or_null(sb, sl->has_step, sl->step);
        sb_printf(sb, ",\"trainable\":%s,\"representative\":", sl->trainable ? "true" : "false");
        uint64_t r = rep->schema && s < ckpt_schema_count(rep->schema) && ckpt_schema_has_map(rep->schema)
                         ? ckpt_schema_representative(rep->schema, s)
                         : CKPT_NONE;
        j_slot(sb, r);
        /* 12.4: a slot without state is frozen or tied until its values are compared */
        sb_printf(sb, ",\"role\":\"%s\"",
                  sl->trainable                    ? "owner"
                  : sl->representative != DCP_NONE ? "tied"
                  : sl->values_read                ? "frozen"
                                                   : "frozen or tied");
        sb_puts(sb, ",\"chunks\":");
        j_chunks(sb, d, key);
        sb_puts(sb, ",\"state\":{");
        bool first = true;
        for (int q = 0; q < DCP_STATE_KEYS; q++) {
            if (sl->state[q] == DCP_NONE || d->keys[sl->state[q]].kind != DCP_TENSOR) continue;
            const dcp_key *m = &d->keys[sl->state[q]];
            sb_printf(sb, "%s\"%s\":{\"key\":", first ? "" : ",", names[q]);
            first = false;
            j_string(sb, m->name);
            sb_puts(sb, ",\"dtype\":");
            j_dtype(sb, m);
            sb_puts(sb, ",\"shape\":");
            j_dims(sb, d->pool + m->dims, m->rank);
            sb_puts(sb, ",\"chunks\":");
            j_chunks(sb, d, m);
            sb_putc(sb, '}');
        }
        sb_puts(sb, "}}");
    }
    sb_putc(sb, ']');
}

static void j_groups(strbuf *sb, const ckpt_dcp *d)
{
    sb_puts(sb, ",\"groups\":[");
    for (size_t g = 0; g < d->groups_len; g++) {
        const dcp_group *gr = &d->groups[g];
        sb_puts(sb, g ? ",{\"lr\":" : "{\"lr\":");
        j_num_or_null(sb, gr->has_lr, gr->lr);
        sb_puts(sb, ",\"betas\":");
        if (gr->has_betas) {
            sb_putc(sb, '[');
            j_double(sb, gr->beta1);
            sb_putc(sb, ',');
            j_double(sb, gr->beta2);
            sb_putc(sb, ']');
        } else sb_puts(sb, "null");
        sb_puts(sb, ",\"eps\":");
        j_num_or_null(sb, gr->has_eps, gr->eps);
        sb_puts(sb, ",\"weightDecay\":");
        j_num_or_null(sb, gr->has_wd, gr->wd);
        sb_puts(sb, ",\"decoupledWeightDecay\":");
        sb_puts(sb, !gr->has_dwd ? "null" : gr->dwd ? "true" : "false");
        sb_puts(sb, ",\"params\":[");
        for (size_t j = 0; j < gr->names_len; j++) {
            if (j) sb_putc(sb, ',');
            j_string(sb, d->names[gr->first_name + j]);
        }
        sb_puts(sb, "]}");
    }
    sb_putc(sb, ']');
}

static void j_diags(strbuf *sb, const ckpt_dcp *d)
{
    sb_puts(sb, ",\"diagnostics\":[");
    for (size_t k = 0; k < d->diags_len; k++) {
        const dcp_diag *g = &d->diags[k];
        sb_printf(sb, "%s{\"check\":%d,\"code\":", k ? "," : "", g->check);
        if (g->code) sb_printf(sb, "%d", g->code);
        else sb_puts(sb, "null");
        sb_printf(sb, ",\"severity\":\"%s\",\"text\":", g->code ? "error" : "warning");
        j_string(sb, g->text);
        sb_puts(sb, ",\"fqn\":");
        j_str_or_null(sb, g->fqn);
        sb_puts(sb, ",\"file\":");
        j_str_or_null(sb, g->file);
        sb_puts(sb, ",\"offset\":");
        j_slot(sb, g->offset);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
}

void dcp_report_json(ckpt_jw *w, const ckpt_report *rep, bool bulk)
{
    const ckpt_dcp *d = ckpt_dcp_of(rep);
    ckpt_report_json_optimizer(w, rep, bulk);
    strbuf *sb = ckpt_jw_text(w);
    if (!d) {
        sb_puts(sb, ",\"dcp\":null");
        return;
    }
    static const char *const classes[] = {"torch 1.13", "torch 2.0-2.2", "torch>=2.3"};
    static const char *const forms[] = {NULL, "N", "N23", "F", "I"};
    sb_puts(sb, ",\"dcp\":{\"opened\":");
    sb_puts(sb, d->lone_metadata ? "\"metadata\"" : d->lone_distcp ? "\"distcp\"" : "\"folder\"");
    sb_puts(sb, ",\"root\":");
    j_str_or_null(sb, d->root);
    sb_puts(sb, ",\"version\":");
    j_str_or_null(sb, d->version);
    sb_puts(sb, ",\"classes\":");
    j_str_or_null(sb, d->meta_ok ? classes[d->classes] : NULL);
    sb_printf(sb, ",\"plannerData\":%s,\"storageMeta\":%s", d->planner_data ? "true" : "false",
              d->storage_meta ? "true" : "false");
    sb_puts(sb, ",\"form\":");
    j_str_or_null(sb, forms[d->form]);
    sb_puts(sb, ",\"note\":");
    j_str_or_null(sb, d->note);
    /* the folder keeps no optimizer class: its groups' decoupled_weight_decay says Adam or AdamW
     * where torch saves it (all groups saying one kind); a kind given is the caller's */
    int said = dcp_kind_said(d);
    sb_puts(sb, ",\"kindSaid\":");
    j_str_or_null(sb, said < 0 ? NULL : ckpt_kind_name((uint64_t)said));
    sb_puts(sb, ",\"kindGiven\":");
    j_str_or_null(sb, d->kind_given < 0 ? NULL : ckpt_kind_name((uint64_t)d->kind_given));
    /* the indices read: one, or Accelerate's two folders of one checkpoint (format.md 12.7) */
    sb_puts(sb, ",\"indices\":[");
    for (size_t m = 0; m < d->metas_len; m++) {
        size_t counts[3];
        dcp_meta_counts(d, m, counts);
        sb_puts(sb, m ? ",{\"dir\":" : "{\"dir\":");
        j_string(sb, d->metas[m].dir ? d->metas[m].dir : "");
        sb_printf(sb, ",\"keys\":{\"model\":%zu,\"optimizer\":%zu,\"other\":%zu}}", counts[DCP_PART_MODEL],
                  counts[DCP_PART_OPTIM], counts[DCP_PART_OTHER]);
    }
    sb_putc(sb, ']');
    sb_puts(sb, ",\"files\":[");
    for (size_t k = 0; k < d->files_len; k++) {
        const dcp_file *f = &d->files[k];
        sb_puts(sb, k ? ",{\"name\":" : "{\"name\":");
        j_string(sb, f->name);
        sb_puts(sb, ",\"size\":");
        j_slot(sb, f->size);
        sb_puts(sb, ",\"items\":");
        j_u64(sb, f->items);
        sb_puts(sb, ",\"rank\":");
        j_slot(sb, f->rank);
        sb_putc(sb, '}');
    }
    sb_puts(sb, "],\"strays\":[");
    for (size_t k = 0; k < d->strays_len; k++) {
        if (k) sb_putc(sb, ',');
        j_string(sb, d->strays[k]);
    }
    sb_printf(sb, "],\"keys\":{\"model\":%zu,\"optimizer\":%zu,\"other\":%zu}", d->counts[DCP_PART_MODEL],
              d->counts[DCP_PART_OPTIM], d->counts[DCP_PART_OTHER]);
    j_groups(sb, d);
    sb_puts(sb, ",\"bytesItems\":[");
    bool first = true;
    for (size_t k = 0; k < d->keys_len; k++) {
        const dcp_key *key = &d->keys[k];
        if (key->kind != DCP_BYTES) continue;
        const dcp_storage *st = key->storage == DCP_NONE ? NULL : &d->storages[key->storage];
        sb_puts(sb, first ? "{\"key\":" : ",{\"key\":");
        first = false;
        j_string(sb, key->name);
        sb_puts(sb, ",\"file\":");
        j_str_or_null(sb, st ? dcp_storage_file(st) : NULL);
        sb_puts(sb, ",\"offset\":");
        j_slot(sb, st ? st->offset : CKPT_NONE);
        sb_puts(sb, ",\"length\":");
        j_slot(sb, st ? st->length : CKPT_NONE);
        sb_putc(sb, '}');
    }
    sb_putc(sb, ']');
    j_entries(sb, d, rep);
    sb_puts(sb, ",\"record\":");
    if (d->lone_distcp) {
        sb_puts(sb, "{\"offset\":");
        j_u64(sb, d->record_at);
        sb_puts(sb, ",\"length\":");
        j_u64(sb, d->record_len);
        sb_puts(sb, ",\"dtype\":");
        const ckpt_torch *t = d->record;
        size_t x =
            t && t->loose_len == 1 && !t->named[t->loose[0]].name[0] ? t->named[t->loose[0]].tensor : CKPT_TORCH_NONE;
        if (x != CKPT_TORCH_NONE) {
            j_string(sb, t->tensors[x].dtype);
            sb_puts(sb, ",\"shape\":");
            j_dims(sb, ckpt_torch_size(t, x), t->tensors[x].rank);
        } else sb_puts(sb, "null,\"shape\":null");
        sb_putc(sb, '}');
    } else sb_puts(sb, "null");
    j_diags(sb, d);
    sb_putc(sb, '}');
}
