/* What a folder is to DCP (format.md 12.1, 12.7), from its listing: a DCP folder holds `.metadata`
 * (or, unfinished, `.metadata.tmp`) or `.distcp` data files at its top. Its source is every file
 * at its top (the data files .metadata names are among them; the others are strays), laid out
 * after a bundle header for the family "DCP" (containers/bundle.h).
 *
 * Accelerate's FSDP SHARDED_STATE_DICT save is two DCP folders of one checkpoint (12.7), read
 * together: an Accelerate checkpoint_{k}/ whose top holds none of those files but whose
 * optimizer_{i}/ and pytorch_model_fsdp_{i}/ do (i the listing's "pair", else 0) is laid out as
 * those two folders' files; optimizer_{i}/ opened itself takes ../pytorch_model_fsdp_{i}/ beside
 * it without asking (12.8). When the listing lacks that folder, the answer asks for it: "list"
 * names it, and the caller that can list it asks again with its entries ("../…/.metadata", …);
 * one that cannot (the viewer's dropped folder) opens the answer's source, the optimizer part
 * alone. A folder of DCP folders (torchtitan's checkpoint/ of step-{N}/) is a run: its DCP folders
 * in run order. */
#include "families/dcp/dcp.h"
#include "families/accelerate/accelerate.h"
#include "core/numbered.h"

#include <stdio.h>
#include <stdlib.h>

bool dcp_folder_file(const char *n)
{
    size_t l = strlen(n);
    return !strcmp(n, ".metadata") || !strcmp(n, ".metadata.tmp") || (l > 7 && !strcmp(n + l - 7, ".distcp"));
}

/* entry k's name inside folder `dir` ("" the top, "optimizer_0/"): its own name when it is a
 * file at that folder's top, else NULL */
static const char *in_dir(const ckpt_listing *l, size_t k, const char *dir)
{
    size_t n = strlen(dir);
    const char *name = l->names[k];
    if (l->sizes[k] == CKPT_NONE || strncmp(name, dir, n) || strchr(name + n, '/')) return NULL;
    return name + n;
}

/* Does `dir` hold one of a DCP folder's files at its top? With include: lay out every file there. */
static bool take_dir(const ckpt_listing *l, const char *dir, uint8_t *include)
{
    bool dcp = false;
    for (size_t k = 0; k < l->count; k++) {
        const char *own = in_dir(l, k, dir);
        dcp |= own && dcp_folder_file(own);
    }
    for (size_t k = 0; dcp && include && k < l->count; k++)
        if (in_dir(l, k, dir)) include[k] = 1;
    return dcp;
}

/* whether the listing names the folder itself ("../pytorch_model_fsdp_0/"): it was listed */
static bool listed(const ckpt_listing *l, const char *dir)
{
    for (size_t k = 0; k < l->count; k++)
        if (!strcmp(l->names[k], dir)) return true;
    return false;
}

/* The folder's own name: the listing's "folder" when given (a caller's for a root such as "."),
 * else the root's last name */
static void own_name(const ckpt_listing *l, char *buf, size_t n)
{
    const ckpt_jv *f = ckpt_jv_get(&l->doc, l->top, "folder");
    const char *s = f && f->kind == CKPT_JV_STRING ? ckpt_jv_str(&l->doc, f) : NULL;
    size_t len = strlen(s ? s : l->root);
    const char *r = s ? s : l->root;
    while (len > 1 && r[len - 1] == '/') len--;
    size_t b = len;
    while (b > 0 && r[b - 1] != '/') b--;
    snprintf(buf, n, "%.*s", (int)(len - b), r + b);
}

char *ckpt_dcp_folder_json(const char *listing, size_t len, ckpt_error *err)
{
    ckpt_listing l;
    char *out = NULL;
    uint8_t *include = NULL;
    strbuf sb = {0};
    if (ckpt_listing_read(listing, len, "{\"root\", \"entries\": [{\"name\", \"size\"}]}", &l, err)) goto done;
    if (!(include = calloc(l.count ? l.count : 1, 1))) {
        ckpt_fail_oom(err);
        goto done;
    }
    char want[96] = ""; /* a folder to list: the model part beside optimizer_{i}/ */
    bool dcp = take_dir(&l, "", include);
    uint64_t i;
    bool model;
    char name[64], dir[96];
    if (dcp) {
        /* optimizer_{i} itself: Accelerate's model part beside it */
        char own[256];
        own_name(&l, own, sizeof own);
        if (ckpt_accelerate_dcp_folder(own, &i, &model) && !model) {
            ckpt_accelerate_dcp_name(name, sizeof name, i, true);
            snprintf(dir, sizeof dir, "../%s/", name);
            if (!take_dir(&l, dir, include) && !listed(&l, dir)) snprintf(want, sizeof want, "%s", dir);
        }
    } else {
        /* checkpoint_{k}: pair i's optimizer_{i}/ and pytorch_model_fsdp_{i}/, both DCP folders (an
         * optimizer_{i}/ beside rank files or no model is Accelerate's folder's to say) */
        const ckpt_jv *pair = ckpt_jv_get(&l.doc, l.top, "pair");
        i = pair && pair->kind == CKPT_JV_NUMBER && pair->is_u64 ? pair->u : 0;
        char opt[96];
        ckpt_accelerate_dcp_name(name, sizeof name, i, false);
        snprintf(opt, sizeof opt, "%s/", name);
        ckpt_accelerate_dcp_name(name, sizeof name, i, true);
        snprintf(dir, sizeof dir, "%s/", name);
        if ((dcp = take_dir(&l, opt, NULL) && take_dir(&l, dir, NULL))) {
            take_dir(&l, opt, include);
            take_dir(&l, dir, include);
        }
    }
    if (!dcp) {
        sb_puts(&sb, "{\"family\":null,\"read\":[]}");
    } else {
        sb_printf(&sb, "{\"family\":\"%s\",\"read\":[],\"list\":[", DCP_PREFIX);
        if (*want) j_string(&sb, want);
        sb_puts(&sb, "],\"tag\":null");
        if (ckpt_listing_members_json(&l, DCP_PREFIX, include, &sb, err)) goto done;
        sb_putc(&sb, '}');
    }
    if (!(out = sb_take(&sb))) ckpt_fail_oom(err);
done:
    sb_free(&sb);
    free(include);
    ckpt_listing_free(&l);
    return out;
}

char *ckpt_dcp_run_json(const char *listing, size_t len, ckpt_error *err)
{
    ckpt_listing l;
    char *out = NULL;
    ckpt_run_name *folders = NULL;
    strbuf sb = {0};
    if (ckpt_listing_read(listing, len, "{\"root\", \"entries\": [{\"name\", \"size\"}]}", &l, err)) goto done;
    if (!(folders = calloc(l.count ? l.count : 1, sizeof *folders))) {
        ckpt_fail_oom(err);
        goto done;
    }
    /* a DCP folder's file one level down ("step-10/.metadata") makes its folder one of the run */
    size_t m = 0;
    for (size_t k = 0; k < l.count; k++) {
        const char *n = l.names[k], *slash = strchr(n, '/');
        if (l.sizes[k] == CKPT_NONE || !slash || slash == n || strchr(slash + 1, '/') || !dcp_folder_file(slash + 1))
            continue;
        folders[m++] = (ckpt_run_name){n, (size_t)(slash - n), false, 0};
    }
    ckpt_run_order(folders, m);
    sb_putc(&sb, '[');
    for (size_t k = 0, shown = 0; k < m; k++) {
        /* a folder's files are equal names, next to one another once sorted */
        if (k && folders[k].len == folders[k - 1].len && !memcmp(folders[k].name, folders[k - 1].name, folders[k].len))
            continue;
        if (shown++) sb_putc(&sb, ',');
        j_string_n(&sb, folders[k].name, folders[k].len);
    }
    sb_putc(&sb, ']');
    if (!(out = sb_take(&sb))) ckpt_fail_oom(err);
done:
    sb_free(&sb);
    free(folders);
    ckpt_listing_free(&l);
    return out;
}
