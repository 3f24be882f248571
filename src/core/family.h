/* The family registry and the one front door (family.c). Private to src/. */
#ifndef CKPT_CORE_FAMILY_H
#define CKPT_CORE_FAMILY_H

#include "core/impl.h"

/* Slot i's optimizer configuration (NULL: a file without one), whatever the family keeps. */
static inline const ckpt_config *ckpt_config_of_slot(const ckpt_report *rep, uint64_t slot)
{
    if (!rep->family || !ckpt_family_has_role(rep->family, CKPT_ROLE_OPTIMIZER)) return NULL;
    if (rep->family->impl->config_of_slot) return rep->family->impl->config_of_slot(rep, slot);
    return rep->has_config ? &rep->config : NULL;
}
/* ---- family.c: the registry and the front door ---- */
/* The role checks of pairing and health: the first file holds optimizer state
 * (CKPT_ROLE_OPTIMIZER), the second model tensors (CKPT_ROLE_MODEL); else CKPT_E_WRONG_FAMILY.
 * One place for those texts; the families they name come from the table. */
int ckpt_require_role(const ckpt_report *rep, unsigned role, ckpt_error *err);
/* CKPT_E_WRONG_FAMILY when rep's family has no parameter schema of its own (its slots not bound). */
int ckpt_require_schema(const ckpt_report *rep, ckpt_error *err);
/* The same for what reads a file's items only (export, health): a family whose items hold all of
 * its state (its `items_whole`) passes though other analyses do not read it yet. */
int ckpt_require_items(const ckpt_report *rep, ckpt_error *err);
/* The front door of ckpt_inspect/ckpt_load/ckpt_open: a fresh report. */
ckpt_report *ckpt_parse_file(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt);
/* The same with a TorchLean reader's checks (format.md 8); an inspection by the default reader
 * also gives the family's own verdicts (its judge). */
ckpt_report *ckpt_parse_file_reader(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt,
                                    int reader);
/* The same with the file's name as the caller gave it (ckpt_open_named), or NULL. */
ckpt_report *ckpt_parse_file_named(const ckpt_source *src, const ckpt_expected *exp, const ckpt_inspect_options *opt,
                                   int reader, const char *name);

#endif
