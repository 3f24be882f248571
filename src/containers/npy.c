/* NumPy's .npy 1.0 format (containers/npy.h): the header of an array, and the UTF-32 text of a 0-d
 * string array (the .npz export's metadata). */
#include "containers/npy.h"

#include <stdlib.h>
#include <string.h>

/* The .npy 1.0 header for an array of these dims (0-d: rank 0, a string of n code points too). */
bool ckpt_npy_header(strbuf *sb, const char *descr, const uint64_t *dims, uint64_t rank)
{
    strbuf d = {0};
    sb_printf(&d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (uint64_t k = 0; k < rank; k++) sb_printf(&d, k ? " %llu," : "%llu,", (unsigned long long)dims[k]);
    if (rank > 1) d.len--, d.data[d.len] = '\0'; /* (2, 3) has no trailing comma; (2,) does */
    sb_puts(&d, "), }");
    while (!d.failed && (10 + d.len + 1) % 64) sb_puts(&d, " ");
    sb_puts(&d, "\n");
    bool ok = !d.failed && d.len <= 65535;
    if (ok) {
        sb_put(sb, "\x93NUMPY\x01\x00", 8);
        uint8_t len[2] = {(uint8_t)(d.len & 0xff), (uint8_t)(d.len >> 8)};
        sb_put(sb, (const char *)len, 2);
        sb_put(sb, d.data, d.len);
    }
    sb_free(&d);
    return ok && !sb->failed;
}

/* UTF-8 to UTF-32LE code units (NumPy's '<U' strings); invalid bytes become U+FFFD. */
uint32_t *ckpt_utf32(const char *s, size_t *count)
{
    size_t n = strlen(s);
    uint32_t *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) return NULL;
    size_t k = 0;
    const uint8_t *p = (const uint8_t *)s, *end = p + n;
    while (p < end) {
        uint32_t c = *p;
        int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (more < 0 || (more > 0 && p + more >= end)) {
            out[k++] = 0xfffd;
            p++;
            continue;
        }
        c = more ? c & (0x3f >> more) : c;
        bool bad = false;
        for (int j = 1; j <= more; j++) {
            if ((p[j] & 0xc0) != 0x80) bad = true;
            c = (c << 6) | (p[j] & 0x3f);
        }
        if (bad) {
            out[k++] = 0xfffd;
            p++;
            continue;
        }
        out[k++] = c;
        p += more + 1;
    }
    *count = k;
    return out;
}
