/* A folder as one source (bundle.c): a container under the families. Nothing here is public API
 * but what ckptscope.h declares (ckpt_bundle_header).
 *
 * A checkpoint that is a folder (DeepSpeed's save_dir and tag folders) is read through one
 * source, like a file: a header naming the folder's entries (its listing, names relative to the
 * folder, a subfolder's files as "sub/name", a folder itself as "sub/"), then the bytes of the
 * files a family asked for, back to back. The caller (the JS package, a test) lays the bytes out
 * where the header says; everything that reads a source (the front door, statistics, a worker,
 * the viewer) then reads the folder as it reads a file. The layout, all integers little-endian:
 *
 *     0   "CKPTDIR"                the magic
 *     7   u8 1                     the version
 *     8   16 bytes                 the family the bundle is for ("DeepSpeed"), NUL-padded
 *     24  u64 H                    the header's length: the first member's bytes start here
 *     32  u64 n                    entries
 *     40  u32 len, bytes           the folder's name as the user gave it (for texts)
 *         n times: u64 offset, u64 size, u32 len, bytes
 *                                  an entry: where its bytes start (CKPT_NONE: listed, not
 *                                  included; a folder), its size (CKPT_NONE for a folder), its name
 *
 * The reader checks every length against the bytes left and every member against the source's
 * size; memory is bounded by the header's bytes. */
#ifndef CKPT_BUNDLE_H
#define CKPT_BUNDLE_H

#include "containers/zip.h"

#define CKPT_BUNDLE_MAGIC "CKPTDIR"
#define CKPT_BUNDLE_FAMILY_LEN 16
/* A header is at most this long (a listing of about a million names). */
#define CKPT_BUNDLE_MAX_HEADER ((uint64_t)64 << 20)

typedef struct ckpt_bundle_entry {
    const char *name; /* NUL-terminated; a folder's ends with '/' */
    uint64_t offset;  /* absolute, CKPT_NONE when not included */
    uint64_t size;    /* CKPT_NONE for a folder */
} ckpt_bundle_entry;

typedef struct ckpt_bundle {
    const ckpt_source *src;
    char family[CKPT_BUNDLE_FAMILY_LEN + 1];
    char *root; /* the folder's name as given */
    ckpt_bundle_entry *entries;
    size_t count;
    uint64_t header_len;
    char *names; /* the names' bytes, each NUL-terminated */
} ckpt_bundle;

/* Is head (n bytes) a bundle's start for `family`? */
bool ckpt_bundle_probe(const uint8_t *head, size_t n, const char *family);
/* Read the header of src. 0 with *out set (ckpt_bundle_free), or CKPT_E_FOLDER_BUNDLE (err set,
 * prefix "folder") for a header that is not one, CKPT_E_IO, CKPT_E_NO_MEMORY. */
int ckpt_bundle_open(const ckpt_source *src, ckpt_bundle **out, ckpt_error *err);
void ckpt_bundle_free(ckpt_bundle *b);
/* The entry of that exact name, or NULL. */
const ckpt_bundle_entry *ckpt_bundle_find(const ckpt_bundle *b, const char *name);
/* An included entry's bytes as a source of their own. `w` must outlive `out`. */
void ckpt_bundle_member_source(const ckpt_bundle *b, size_t k, ckpt_source *out, ckpt_window *w);

/* A folder's listing as the JS package gives it to a family's folder question (ckptscope.h,
 * ckpt_deepspeed_folder_json, ckpt_dcp_folder_json): {"root": the folder's name, "entries":
 * [{"name": a relative path, "size": bytes or null}], ...}, every entry checked. */
typedef struct ckpt_listing {
    ckpt_jdoc doc;
    const ckpt_jv *top; /* the listing's object, for a family's own members */
    const char *root;
    const char **names;
    uint64_t *sizes; /* CKPT_NONE: a folder, or no size given */
    size_t count;
} ckpt_listing;

/* 0 with *out set (ckpt_listing_free, also after a failure), or CKPT_E_INVALID_ARGUMENT (`form`,
 * the listing's expected form, in the text) or CKPT_E_NO_MEMORY, err set. */
int ckpt_listing_read(const char *listing, size_t len, const char *form, ckpt_listing *out, ckpt_error *err);
void ckpt_listing_free(ckpt_listing *l);
/* The answer's source: the entries with include[k] laid out after a bundle header for `family`,
 * appended to sb as ,"members":[{"name","offset","size"}],"size":n,"header":[bytes]. 0, or the
 * header writer's code with err set. */
int ckpt_listing_members_json(const ckpt_listing *l, const char *family, const uint8_t *include, strbuf *sb,
                              ckpt_error *err);

#endif
