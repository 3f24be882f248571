/* The fuzz targets' oracle: every diagnostic must be one of the templates of its code in
 * tests/cases/templates.txt (compiled in as CKPT_TEMPLATES), not just carry the right prefix. */
#ifndef CKPT_ORACLE_H
#define CKPT_ORACLE_H

#include "ckptscope.h"

/* Abort (a finding) unless err is empty or its message matches a template of its code. */
void oracle_check(const ckpt_error *err);

#endif
