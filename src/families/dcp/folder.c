/* What a folder is to DCP (format.md 12.1), from its listing: a DCP folder holds `.metadata`
 * (or, unfinished, `.metadata.tmp`) or `.distcp` data files at its top. Its source is every file
 * at its top (the data files .metadata names are among them; the others are strays), laid out
 * after a bundle header for the family "DCP" (containers/bundle.h). A folder of DCP folders
 * (torchtitan's checkpoint/ of step-{N}/) is a run: its DCP folders in run order. */
#include "families/dcp/dcp.h"

#include "core/numbered.h"

#include <stdlib.h>

static bool dcp_name(const char *n)
{
    size_t l = strlen(n);
    return !strcmp(n, ".metadata") || !strcmp(n, ".metadata.tmp") || (l > 7 && !strcmp(n + l - 7, ".distcp"));
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
    bool dcp = false;
    for (size_t k = 0; k < l.count; k++) {
        /* the folder's own files: every one at its top */
        include[k] = l.sizes[k] != CKPT_NONE && !strchr(l.names[k], '/');
        if (include[k] && dcp_name(l.names[k])) dcp = true;
    }
    if (!dcp) {
        sb_puts(&sb, "{\"family\":null,\"read\":[]}");
    } else {
        sb_printf(&sb, "{\"family\":\"%s\",\"read\":[],\"tag\":null", DCP_PREFIX);
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
        if (l.sizes[k] == CKPT_NONE || !slash || slash == n || strchr(slash + 1, '/') || !dcp_name(slash + 1)) continue;
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
