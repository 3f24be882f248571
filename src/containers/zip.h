/* The zip layer (zip.c): a container under the families. Nothing here is public API.
 *
 * Reading: the central directory, found from the end-of-central-directory record at the end of
 * the file (and the ZIP64 end record through its locator when present), ZIP64 extras in its
 * entries; stored members only, each a windowed source over the file (a reader of a member reads
 * the file directly). Bytes before the zip (a prefix) are accepted: the zip's start is computed
 * from the end record as Python's zipfile does (a reader that takes offsets as they are, such as
 * torch's miniz, reads elsewhere: `start` says by how much). Memory is bounded by what the file
 * can hold: the entries grow as they are read, never by a count the file claims.
 *
 * Writing: stored members with data descriptors (the CRC-32 is known only after the data went
 * by) and ZIP64 records where sizes or offsets pass 4 GiB (.npz export). */
#ifndef CKPT_ZIP_H
#define CKPT_ZIP_H

#include "base/base.h"

/* ---- reading ---- */

typedef struct ckpt_zip_member {
    const char *name; /* NUL-terminated (a name holding a NUL byte is refused) */
    size_t name_len;
    unsigned method, flags;
    uint32_t crc; /* as the central directory states it; not checked */
    uint64_t compressed, uncompressed;
    uint64_t local_offset; /* absolute: where its local header starts in the file */
    uint64_t data_offset;  /* absolute: where its data starts (CKPT_NONE until ckpt_zip_resolve) */
    uint64_t entry_offset; /* absolute: where its central directory entry starts */
    uint64_t limit;        /* its data must end by here: the next member's local header, or the directory */
} ckpt_zip_member;

typedef struct ckpt_zip {
    const ckpt_source *src;
    uint64_t start;      /* the zip's first byte in the file (the length of a prefix) */
    uint64_t cd_offset;  /* absolute */
    uint64_t cd_size;    /* bytes */
    uint64_t end_offset; /* the end-of-central-directory record */
    bool zip64;          /* a ZIP64 end record was read */
    /* Where other readers may look instead (none of it changes what is read here; a family that
     * must read as one particular reader does compares): */
    uint64_t record64_at;        /* the ZIP64 end record read: the one just before the locator, else
                                  * where the locator says (CKPT_NONE without ZIP64) */
    uint64_t locator_target;     /* the offset the ZIP64 locator states (CKPT_NONE without one) */
    uint64_t last_end_signature; /* the last PK\5\6 with 22 bytes after it (a reader that ignores the
                                  * comment's length takes that one) */
    uint64_t first_local;        /* the lowest local header offset (CKPT_NONE without members) */
    uint64_t other_end;          /* an end-record signature before the first member (another
                                  * archive's), as far as the tail read shows; CKPT_NONE */
    ckpt_zip_member *members;
    size_t count;
    char *names; /* the members' names, NUL-terminated, one after another */
} ckpt_zip;

/* Read the central directory of src. 0 with *out set (free it with ckpt_zip_free), or a code with
 * err set (CKPT_E_ZIP_NOT_FOUND, CKPT_E_ZIP_MALFORMED, CKPT_E_ZIP_UNSUPPORTED, CKPT_E_IO,
 * CKPT_E_NO_MEMORY) and *out NULL. Local headers are not read here (one read per member). */
int ckpt_zip_open(const ckpt_source *src, ckpt_zip **out, ckpt_error *err);
void ckpt_zip_free(ckpt_zip *z);
/* The member of that exact name, or NULL. */
const ckpt_zip_member *ckpt_zip_find(const ckpt_zip *z, const char *name);
/* The first member whose name equals name in ASCII letters of either case (as torch's miniz looks
 * names up), or NULL. */
const ckpt_zip_member *ckpt_zip_find_nocase(const ckpt_zip *z, const char *name);
/* Two members whose names are equal (in ASCII letters of either case when nocase): 0 with *a < *b
 * their indices (the pair whose later member comes first in the directory), or *a = *b = SIZE_MAX
 * when every name is unique; CKPT_E_NO_MEMORY with err set. O(n log n). */
int ckpt_zip_duplicate(const ckpt_zip *z, bool nocase, size_t *a, size_t *b, ckpt_error *err);
/* Read member k's local header: where its data starts (30 + the local name and extra lengths
 * past its local offset), checked against its central entry and its neighbours; refuses a member
 * that is not stored (CKPT_E_ZIP_UNSUPPORTED). Idempotent. */
int ckpt_zip_resolve(ckpt_zip *z, size_t k, ckpt_error *err);

/* A window [offset, offset + length) of a source, as a source of its own. */
typedef struct ckpt_window {
    const ckpt_source *src;
    uint64_t offset, length;
} ckpt_window;
void ckpt_source_window(ckpt_source *out, ckpt_window *w, const ckpt_source *src, uint64_t offset, uint64_t length);
/* Member k's data as a source (resolving it first). `w` must outlive `out`. */
int ckpt_zip_member_source(ckpt_zip *z, size_t k, ckpt_source *out, ckpt_window *w, ckpt_error *err);

/* ---- writing ---- */

/* CRC-32 (zip's polynomial), continued from crc (0 to start). */
uint32_t ckpt_crc32(uint32_t crc, const void *p, size_t n);

typedef struct ckpt_zip_written {
    char *name;
    uint32_t crc;
    uint64_t size; /* stored: compressed = uncompressed */
    uint64_t local_offset;
} ckpt_zip_written;

typedef struct ckpt_zip_writer {
    const ckpt_sink *out;
    ckpt_error *err;
    uint64_t at; /* bytes written */
    ckpt_zip_written *members;
    size_t len, cap;
    bool open;      /* a member's data is being written */
    uint32_t crc;   /* of the open member's data so far */
    uint64_t size;  /* of the open member's data so far */
    unsigned align; /* nonzero: each member's data starts at a multiple of it (torch.save pads the
                     * local header with an extra field "FB" of 'Z' bytes to 64) */
} ckpt_zip_writer;

void ckpt_zip_writer_init(ckpt_zip_writer *w, const ckpt_sink *out, ckpt_error *err);
/* A member: its local header, then its data (ckpt_zip_write, any number of times), then its end
 * (the data descriptor). A name is at most 65535 bytes. */
int ckpt_zip_begin(ckpt_zip_writer *w, const char *name);
int ckpt_zip_write(ckpt_zip_writer *w, const void *p, size_t n);
int ckpt_zip_end(ckpt_zip_writer *w);
/* The central directory and the end records. */
int ckpt_zip_finish(ckpt_zip_writer *w);
void ckpt_zip_writer_free(ckpt_zip_writer *w);

/* Does the first member's name of a zip whose first bytes are head (its local header: the name's
 * length at 26, the name at 30) end with suffix? For recognising a file from its head alone. */
bool ckpt_zip_first_member_ends(const uint8_t *head, size_t n, const char *suffix);

#endif
