/* Advice for the large arrays a file's records fill (a million slots: tens of megabytes, each
 * byte written once). Measured on Linux: first touches of fresh 4 KiB pages were most of a
 * million-slot parse; with transparent huge pages a fault maps 2 MiB. Advice only: elsewhere,
 * or when the kernel declines, nothing changes. */
#define _DEFAULT_SOURCE
#include "core/internal.h"

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
