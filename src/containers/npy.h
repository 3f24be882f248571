/* NumPy's .npy 1.0 format (containers/npy.c), for export. Nothing here is public API.
 * "\x93NUMPY" 1 0, u16 header length, the header dict padded to 64 bytes, the data. */
#ifndef CKPT_NPY_H
#define CKPT_NPY_H

#include "base/base.h"

/* Append the .npy 1.0 header for an array of descr ('<f4', '<f8', '<U5') of these dims (rank 0:
 * a 0-d array). false when out of memory or the header passes 65535 bytes. */
bool ckpt_npy_header(strbuf *sb, const char *descr, const uint64_t *dims, uint64_t rank);
/* UTF-8 to UTF-32LE code units (NumPy's '<U' strings); invalid bytes become U+FFFD. The caller
 * frees the result; NULL when out of memory. */
uint32_t *ckpt_utf32(const char *s, size_t *count);

#endif
