/* What the folder targets (fuzz_deepspeed, fuzz_dcp) share: their input read as a folder's files,
 * the listing the JS package sends, and the bundle laid out as js/folder-bundle.js lays it out from
 * the core's plan, then opened with and without statistics. */
#ifndef CKPT_FUZZ_FOLDER_H
#define CKPT_FUZZ_FOLDER_H

#include "ckptscope.h"
#include "base/strbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fuzz_file {
    char name[256];
    const uint8_t *data;
    uint64_t size;
} fuzz_file;

/* The input's records [name length: 1 byte][name][size: 4 bytes LE][bytes] as up to `max` files (a
 * size past the input's end takes what is left). A name is made printable as a listing gives it:
 * at the folder's top ('/' replaced), or with `subfolders` "name" or "sub/name" (the package lists
 * two levels); a second record of a name is skipped. Returns the number of files. */
size_t fuzz_folder_files(const uint8_t *data, size_t size, fuzz_file *fs, size_t max, bool subfolders);

/* A JSON string of s (bytes as they are, quotes, backslashes and control bytes escaped). */
void fuzz_json_string(strbuf *sb, const char *s);

/* The listing's opening as the package sends it, {"root":"fuzz","entries":[…]: each file once, a
 * subfolder ("sub/") before its first file; the caller closes the object. */
void fuzz_listing_entries(strbuf *sb, const fuzz_file *fs, size_t n);

/* The core's plan `answer` (its members, header and size) laid out as the package lays it out, the
 * plan's promises checked (members back to back after the header, each a listed file at its size),
 * then opened with each inspect flag setting: the report's error is one of its code's templates,
 * `check(report, size)` holds, and the report serialises. A plan without members is no folder. */
void fuzz_open_bundle(const fuzz_file *fs, size_t n, const char *answer,
                      void (*check)(const ckpt_report *rep, uint64_t size));

#endif
