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

#endif
