/* Shapes (format.md 2): sizes and their texts (shape.c). Private to src/. */
#ifndef CKPT_SHAPE_H
#define CKPT_SHAPE_H

#include "base/strbuf.h"

/* ---- shape.c (format.md 2) ---- */
/* Product of dims; returns false (and *out unspecified) when it is >= 2^64. Any 0 gives 0. */
bool ckpt_shape_size(const uint64_t *dims, uint64_t rank, uint64_t *out);
/* "#[2, 3]" (ParameterSchema texts) and "[2, 3]" (Lean lists, the state families' texts) */
void ckpt_shape_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
void ckpt_shape_print_list(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* TLPF32B's nested form: "dim 2 (dim 3 (scalar))"; a scalar is "scalar". */
void ckpt_shape_print_nested(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* The product of dims in full decimal, however large. */
void ckpt_shape_size_print(strbuf *sb, const uint64_t *dims, uint64_t rank);
/* a * b in full decimal (a payload's byte length: count * width). */
void ckpt_u64_product_print(strbuf *sb, uint64_t a, uint64_t b);
bool ckpt_shape_equal(const uint64_t *a, uint64_t ra, const uint64_t *b, uint64_t rb);

#endif
