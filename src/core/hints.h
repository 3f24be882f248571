/* What a file that is not the family expected looks like (hints.c). Private to src/. */
#ifndef CKPT_CORE_HINTS_H
#define CKPT_CORE_HINTS_H

#include "core/impl.h"

/* ---- hints.c: what a file that is not the expected family looks like ---- */
/* The hint of err for the file r began to read (its head), from the families given (the
 * registry's table) and the formats people drop by mistake. */
void ckpt_hint_foreign(const ckpt_reader *r, const ckpt_family *const *families, size_t count, ckpt_error *err);

#endif
