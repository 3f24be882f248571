/* Arrays that grow as a file's records are read, and advice for the large ones (a million
 * slots: tens of megabytes, each byte written once). Measured on Linux: first touches of fresh 4 KiB pages were most of
 * a million-slot parse; with transparent huge pages a fault maps 2 MiB. Advice only: elsewhere, or when the kernel
 * declines, nothing changes. */
#define _DEFAULT_SOURCE
#include "base/grow.h"

#include <stdlib.h>

#if defined(__linux__) && !defined(__EMSCRIPTEN__)
#include <stdint.h>
#include <sys/mman.h>
#endif

#define LARGE_ARRAY (4u << 20) /* two huge pages: below this the advice cannot pay */

void ckpt_advise_large(void *p, size_t bytes)
{
#if defined(__linux__) && !defined(__EMSCRIPTEN__) && defined(MADV_HUGEPAGE)
    if (!p || bytes < LARGE_ARRAY) return;
    const uintptr_t page = 4096;
    uintptr_t start = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + bytes) & ~(page - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

bool ckpt_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / elem) return false;
        n *= 2;
    }
    void *p = realloc(*arr, n * elem);
    if (!p) return false;
    ckpt_advise_large(p, n * elem);
    *arr = p;
    *cap = n;
    return true;
}
