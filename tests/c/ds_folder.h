/* A DeepSpeed folder laid out as one source for the native tests (ds_folder.c). */
#ifndef CKPT_DS_FOLDER_H
#define CKPT_DS_FOLDER_H

#include "ckptscope.h"

/* The folder `dir` (named `root` in texts) as the bytes of its source (caller frees), NULL when
 * the core says it is no DeepSpeed folder; *plan (may be NULL) gets the core's last answer. */
unsigned char *ds_folder_bytes(const char *dir, const char *root, size_t *len, char **plan);
/* The same for a DCP folder (ckpt_dcp_folder_json). */
unsigned char *dcp_folder_bytes(const char *dir, const char *root, size_t *len, char **plan);
/* A whole file's bytes (caller frees). */
unsigned char *ds_file_bytes(const char *path, size_t *len);
/* The second step of a consolidation's two-step path: a written optimizer file and its model
 * (bytes in memory) opened, paired as ckpt_pair_with pairs them (no names given) and converted
 * by ckpt_convert with o into out. 0, or the first failure's, the pair's or the conversion's code
 * with err set; -1 when a file does not open without error. */
int pair_convert_bytes(const unsigned char *opt, size_t opt_len, const unsigned char *model, size_t model_len,
                       const ckpt_convert_options *o, ckpt_buffer *out, ckpt_error *err);

#endif
