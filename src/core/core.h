/* The core layer, private to src/: the parameter schema (format.md 3), the family registry and
 * the one front door, the report and its JSON, the open file and the payloads it reads. It names
 * no family: a family is a descriptor with an impl (impl.h) in a folder of families/, registered
 * by the build (CMakeLists.txt: CKPT_FAMILIES). The layers above include this header; the core's
 * own modules include each other's. Nothing here is public API. */
#ifndef CKPT_CORE_H
#define CKPT_CORE_H

#include "base/base.h"
#include "core/family.h"
#include "core/file.h"
#include "core/hints.h"
#include "core/impl.h"
#include "core/report.h"
#include "core/report_json.h"
#include "core/schema.h"
#include "numeric/numeric.h"

#endif
