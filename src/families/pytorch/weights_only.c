/* torch.load(weights_only=True)'s verdict over a whole file (objects.h): all its pickles, a legacy
 * file's five, with the names they use each listed once in file order. */
#include "families/pytorch/values.h"

/* ---- weights_only over all the file's pickles (a legacy file has five) ---- */

static size_t pickles_of(const ckpt_torch *t, const ckpt_pickle *out[5])
{
    size_t n = 0;
    if (t->legacy)
        for (int k = 0; k < 3; k++) out[n++] = t->legacy_pickles[k];
    out[n++] = t->pickle;
    if (t->legacy) out[n++] = t->legacy_pickles[3];
    return n;
}

bool ckpt_torch_weights_only(const ckpt_torch *t)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    for (size_t k = 0; k < n; k++)
        if (!ckpt_torch_pickle_weights_only(ps[k])) return false;
    return true;
}

/* The pickles' names as JSON strings, each once, in file order, joined by sep. */
static void globals_merged(strbuf *sb, const ckpt_torch *t, bool refused, const char *sep)
{
    const ckpt_pickle *ps[5];
    size_t n = pickles_of(t, ps);
    strbuf all = {0};
    size_t *spans = NULL, count = 0, cap = 0; /* start, length pairs of the names kept */
    size_t *table = NULL, tcap = 0;
    bool first = true;
    for (size_t k = 0; k < n; k++) {
        strbuf one = {0};
        ckpt_torch_pickle_globals_json(&one, ps[k], refused);
        if (one.failed) sb->failed = true;
        /* ["a","b"]: the strings, escapes kept */
        for (size_t i = 0; one.data && i < one.len; i++) {
            if (one.data[i] != '"') continue;
            size_t j = i + 1;
            while (j < one.len && one.data[j] != '"') j += one.data[j] == '\\' ? 2 : 1;
            if (j >= one.len) break;
            const char *e = one.data + i;
            size_t elen = j + 1 - i;
            i = j;
            if (2 * (count + 1) > tcap) {
                size_t nc = tcap ? 2 * tcap : 64;
                size_t *nt = malloc(nc * sizeof *nt);
                if (!nt) {
                    sb->failed = true;
                    break;
                }
                for (size_t x = 0; x < nc; x++) nt[x] = SIZE_MAX;
                for (size_t q = 0; q < count; q++) {
                    size_t h = (size_t)torch_hash_bytes(all.data + spans[2 * q], spans[2 * q + 1]) & (nc - 1);
                    while (nt[h] != SIZE_MAX) h = (h + 1) & (nc - 1);
                    nt[h] = q;
                }
                free(table);
                table = nt;
                tcap = nc;
            }
            size_t h = (size_t)torch_hash_bytes(e, elen) & (tcap - 1);
            bool dup = false;
            for (; table[h] != SIZE_MAX; h = (h + 1) & (tcap - 1))
                if (spans[2 * table[h] + 1] == elen && !memcmp(all.data + spans[2 * table[h]], e, elen)) {
                    dup = true;
                    break;
                }
            if (dup) continue;
            if (!ckpt_grow((void **)&spans, &cap, 2 * (count + 1), sizeof *spans)) {
                sb->failed = true;
                break;
            }
            spans[2 * count] = all.len;
            spans[2 * count + 1] = elen;
            sb_put(&all, e, elen);
            table[h] = count++;
            if (!first) sb_puts(sb, sep);
            sb_put(sb, e, elen);
            first = false;
        }
        sb_free(&one);
    }
    if (all.failed) sb->failed = true;
    sb_free(&all);
    free(spans);
    free(table);
}

void ckpt_torch_globals_json(strbuf *sb, const ckpt_torch *t, bool refused)
{
    sb_putc(sb, '[');
    globals_merged(sb, t, refused, ",");
    sb_putc(sb, ']');
}

void ckpt_torch_weights_only_warning(strbuf *sb, const ckpt_torch *t)
{
    strbuf names = {0};
    globals_merged(&names, t, true, ", ");
    if (names.len) {
        sb_puts(sb, "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: ");
        sb_put(sb, names.data, names.len);
    }
    if (names.failed) sb->failed = true;
    sb_free(&names);
}
