/* A pairing's result (ckptscope.h ckpt_pair_result) grown one failure or warning at a time, for
 * the families' pairings by name. Private to src/. */
#ifndef CKPT_PAIR_RESULT_H
#define CKPT_PAIR_RESULT_H

#include "core/core.h"

/* Append a failure with text's words (text is freed): `prefix` as ckpt_fail_at takes it, about
 * `slot` and, unless CKPT_NONE, `index`. false when out of memory (or text failed). */
bool ckpt_pair_add_failure(ckpt_pair_result *res, const char *prefix, int code, uint64_t slot, uint64_t index,
                           strbuf *text);
/* Append a warning, text's words taken. false when out of memory (or text failed). */
bool ckpt_pair_add_warning(ckpt_pair_result *res, strbuf *text);

#endif
