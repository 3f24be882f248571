/* Arrays that grow as records are read (grow.c). Private to src/. */
#ifndef CKPT_GROW_H
#define CKPT_GROW_H

#include "base/common.h"

/* ---- grow.c: arrays that grow as records are read ---- */
/* Capacity *cap for at least `need` elements of elem bytes in *arr: doubled from 16, false (and
 * *arr untouched) when out of memory or past SIZE_MAX / 2 bytes. A large array gets the huge-page
 * advice of ckpt_advise_large. */
bool ckpt_grow(void **arr, size_t *cap, size_t need, size_t elem);
/* Advise the system that the array at p (bytes long, just allocated, not yet written) is large
 * and filled whole: huge pages where the platform has them. */
void ckpt_advise_large(void *p, size_t bytes);

#endif
