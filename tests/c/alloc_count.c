/* The counting allocator of alloc_count.h. */
#include "alloc_count.h"

#include <malloc.h>
#include <stdbool.h>

static size_t live, peak, calls;
static bool counting;

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static void *took(void *p)
{
    if (p && counting) {
        live += malloc_usable_size(p);
        calls++;
        if (live > peak) peak = live;
    }
    return p;
}
void *__wrap_malloc(size_t n) { return took(__real_malloc(n)); }
void *__wrap_calloc(size_t k, size_t n) { return took(__real_calloc(k, n)); }
void *__wrap_realloc(void *p, size_t n)
{
    size_t old = p && counting ? malloc_usable_size(p) : 0;
    void *q = took(__real_realloc(p, n));
    if (q && counting) live -= old;
    return q;
}
void __wrap_free(void *p)
{
    if (p && counting) live -= malloc_usable_size(p);
    __real_free(p);
}

void alloc_count_start(void)
{
    live = peak = calls = 0;
    counting = true;
}

alloc_count alloc_count_stop(void)
{
    counting = false;
    return (alloc_count){peak, calls};
}
