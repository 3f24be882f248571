/* The core's DCP conversion (src/writers/dcp_consolidate.c) as a command for
 * tests/c/dcp_consolidate_check.py: `dcp_consolidate_tool DIR OPTIMIZER.pt MODEL.pt` writes the
 * folder's consolidated torch.optim state dict and its model, prints the warnings (a JSON array)
 * and exits 0; on a refusal prints the core's code and text and exits 2. */
#include "ckptscope.h"
#include "ds_folder.h"
#include "base/base.h"

#include <stdio.h>
#include <stdlib.h>

static int to_file(void *ctx, const void *buf, size_t n) { return fwrite(buf, 1, n, ctx) == n ? 0 : CKPT_E_IO; }

static int write_one(const ckpt_file *f, int which, const char *path, ckpt_error *err)
{
    FILE *fp = fopen(path, "wb");
    if (!fp) return ckpt_fail(err, NULL, CKPT_E_IO, CKPT_NONE, 0, "cannot write %s", path);
    ckpt_ds_consolidate_options o = {which, NULL, NULL, NULL};
    ckpt_sink out = {fp, to_file};
    int rc = ckpt_dcp_consolidate(f, &o, &out, err);
    if (fclose(fp) && !rc) rc = ckpt_fail(err, NULL, CKPT_E_IO, CKPT_NONE, 0, "cannot write %s", path);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: dcp_consolidate_tool DIR OPTIMIZER.pt MODEL.pt\n");
        return 1;
    }
    size_t len = 0;
    unsigned char *b = dcp_folder_bytes(argv[1], "ckpt", &len, NULL);
    if (!b) {
        fprintf(stderr, "%s: not a DCP folder\n", argv[1]);
        return 1;
    }
    ckpt_source src;
    ckpt_memory mem;
    ckpt_source_memory(&src, &mem, b, len);
    ckpt_file *f = ckpt_open(&src, NULL);
    ckpt_error err = {0};
    int rc = f ? write_one(f, CKPT_DS_OPTIMIZER, argv[2], &err) : CKPT_E_NO_MEMORY;
    if (!rc) rc = write_one(f, CKPT_DS_MODEL, argv[3], &err);
    if (rc) printf("%d %s\n", rc, err.message ? err.message : "(no text)");
    else {
        char *w = ckpt_dcp_consolidate_warnings(f);
        printf("%s\n", w ? w : "null");
        free(w);
    }
    ckpt_error_clear(&err);
    ckpt_close(f);
    free(b);
    return rc ? 2 : 0;
}
