/* Friendly words for a file that is not the family expected: an empty file, a Git LFS pointer,
 * an HTML page, JSON, text, or a TorchLean file of another family. The reference text stays
 * first; the hint is a second sentence. */
#include "containers/zip.h"
#include "core/hints.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static bool starts_with(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    return n >= k && memcmp(p, s, k) == 0;
}

/* Files people drop on a checkpoint tool by mistake: what each is and what to do with it. */
static bool foreign_format(const uint8_t *head, size_t n, const ckpt_family *const *families, size_t count,
                           ckpt_error *err)
{
    const char *hint = NULL;
    if (starts_with(head, n, "\x89PNG\r\n\x1a\n")) hint = "this is a PNG image, not a checkpoint";
    else if (starts_with(head, n, "GGUF")) hint = "this is a GGUF model file (llama.cpp), not a checkpoint";
    /* a family whose probe knows the file says what it is, in words that fit whatever family
     * was expected (the registry's order) */
    for (size_t k = 0; !hint && k < count; k++)
        if (families[k]->impl->hint) hint = families[k]->impl->hint(head, n);
    if (hint) {
        ckpt_set_hint(err, hint);
        return true;
    }
    if (starts_with(head, n, "PK\x03\x04"))
        hint = ckpt_zip_first_member_ends(head, n, ".npy")
                   ? "this is a NumPy .npz archive (ckptscope export writes these), not a checkpoint: read it with "
                     "numpy.load"
                   : "this is a zip archive, not a checkpoint";
    else if (n >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5)
        hint = "this looks like a Python pickle (a legacy torch.save file?), not a TorchLean checkpoint: read it with "
               "torch.load";
    if (hint) ckpt_set_hint(err, hint);
    return hint != NULL;
}

void ckpt_hint_foreign(const ckpt_reader *r, const ckpt_family *const *families, size_t count, ckpt_error *err)
{
    const uint8_t *head;
    size_t n = ckpt_reader_head(r, &head);
    if (n == 0) {
        if (r->buf_pos == 0) ckpt_set_hint(err, "the file is empty");
        return;
    }
    if (n >= CKPT_MAGIC_LEN) {
        const ckpt_family *f = NULL;
        for (size_t k = 0; !f && k < count; k++)
            if (!families[k]->impl->probe && ckpt_probe_magic(families[k], head, n, CKPT_NONE)) f = families[k];
        if (f) {
            /* every family's version follows its magic; the item count, where its header has one
             * at a fixed place (the descriptor's count_at) */
            char text[256], detail[96] = "";
            const uint64_t count_at = f->impl->count_at;
            if (count_at && n >= count_at + 8)
                snprintf(detail, sizeof detail, ", version %llu, %llu tensors",
                         (unsigned long long)ckpt_get_u64le(head + CKPT_MAGIC_LEN),
                         (unsigned long long)ckpt_get_u64le(head + count_at));
            else if (!count_at && n >= CKPT_MAGIC_LEN + 16)
                snprintf(detail, sizeof detail, ", version %llu",
                         (unsigned long long)ckpt_get_u64le(head + CKPT_MAGIC_LEN));
            snprintf(text, sizeof text, "this is a %s (%s%s), not %s", f->name, f->magic, detail, f->impl->hint_not);
            ckpt_set_hint(err, text);
            return;
        }
    }
    if (foreign_format(head, n, families, count, err)) return;
    if (starts_with(head, n, "version https://git-lfs")) {
        ckpt_set_hint(err,
                      "this is a Git LFS pointer file, not the checkpoint itself: fetch the real file (git lfs pull)");
        return;
    }
    size_t k = 0;
    while (k < n && (head[k] == ' ' || head[k] == '\t' || head[k] == '\r' || head[k] == '\n')) k++;
    if (k < n && head[k] == '<') {
        ckpt_set_hint(err, "this looks like an HTML or XML page (a failed download?), not a checkpoint");
        return;
    }
    if (k < n && (head[k] == '{' || head[k] == '[')) {
        ckpt_set_hint(err, "this looks like JSON text (a layout description?), not a checkpoint");
        return;
    }
    size_t text = 0;
    for (size_t i = 0; i < n; i++) text += isprint(head[i]) || isspace(head[i]);
    if (text == n) ckpt_set_hint(err, "this looks like a text file, not a checkpoint");
}
