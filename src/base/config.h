/* The optimizer configuration's JSON (config.c). Private to src/. */
#ifndef CKPT_CONFIG_H
#define CKPT_CONFIG_H

#include "base/strbuf.h"

/* ---- config.c: the optimizer configuration as values, and its JSON ---- */
void j_config(strbuf *sb, const ckpt_config *c);
/* [{"field","file","expected","fileBits"?,"expectedBits"?}] for the fields that differ. */
void j_config_diff(strbuf *sb, const ckpt_config_diff *d);

#endif
