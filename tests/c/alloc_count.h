/* Every allocation of a test counted (alloc_count.c): a test linked with -Wl,--wrap for malloc,
 * calloc, realloc and free (ckpt_counted_test in tests/c/CMakeLists.txt) adds up the usable sizes
 * of the blocks alive between alloc_count_start and alloc_count_stop, and the most alive at once.
 * A realloc counts as the new block alive beside the old one until the old is released: a copy. */
#ifndef CKPT_TEST_ALLOC_COUNT_H
#define CKPT_TEST_ALLOC_COUNT_H

#include <stddef.h>

typedef struct alloc_count {
    size_t peak;  /* the most bytes alive at once since alloc_count_start */
    size_t calls; /* the allocations made (malloc, calloc, realloc) */
} alloc_count;

/* Count from zero. */
void alloc_count_start(void);
/* Stop counting; what was counted. */
alloc_count alloc_count_stop(void);

#endif
