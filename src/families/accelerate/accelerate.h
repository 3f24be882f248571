/* Accelerate's save_state folders (docs/distributed.md, "Accelerate folders"): the family folder's shared header. Its
 * public functions are declared in ckptscope.h ("Accelerate folders"). */
#ifndef CKPT_FAMILIES_ACCELERATE_H
#define CKPT_FAMILIES_ACCELERATE_H

#include "core/core.h"

#endif
