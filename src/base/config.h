/* The optimizer configuration's JSON (config.c). Private to src/. */
#ifndef CKPT_CONFIG_H
#define CKPT_CONFIG_H

#include "base/strbuf.h"

/* ---- config.c: the optimizer configuration as values, and its JSON ---- */
void j_config(strbuf *sb, const ckpt_config *c);
/* The same, with "kind": null when the file does not say it (a PyTorch optimizer's, format.md 10.3) */
void j_config_as(strbuf *sb, const ckpt_config *c, bool kind_known);
/* [{"field","file","expected","fileBits"?,"expectedBits"?}] for the fields that differ. */
void j_config_diff(strbuf *sb, const ckpt_config_diff *d);

#endif
