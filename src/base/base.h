/* The base layer, private to src/: errors, growable text and arrays, checked arithmetic, the
 * buffered reader and sinks (format.md 1), shapes (format.md 2), the optimizer configuration as
 * values and the JSON writer and reader. It knows no file family: every text prefix is passed
 * in. The layers above include this header; base's own modules include each other's headers. */
#ifndef CKPT_BASE_H
#define CKPT_BASE_H

#include "base/common.h"
#include "base/config.h"
#include "base/error.h"
#include "base/grow.h"
#include "base/io.h"
#include "base/json_read.h"
#include "base/json_write.h"
#include "base/shape.h"
#include "base/strbuf.h"

#endif
