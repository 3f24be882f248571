/* The pickle writer (containers/pickle_write.c): the opcodes torch.save's data.pkl and DCP's
 * .metadata need, each value in the form Python's pickler gives it, appended to a strbuf. Private
 * to src/. An allocation failure sets the strbuf's `failed`: check it once at the end.
 *
 * Protocol 2 (what torch.save writes): GLOBAL, BINUNICODE. Protocol 4 (what DCP's pickle.dump
 * writes): STACK_GLOBAL, SHORT_BINUNICODE; without FRAME or MEMOIZE, which no reader needs. */
#ifndef CKPT_PICKLE_WRITE_H
#define CKPT_PICKLE_WRITE_H

#include "base/base.h"
#include "containers/pickle.h"

/* One opcode byte (CKPT_OP_*). */
static inline void ckpt_pw_op(strbuf *sb, int code) { sb_putc(sb, (char)code); }
/* PROTO v. */
void ckpt_pw_proto(strbuf *sb, int protocol);
/* An int in its shortest form: BININT1, BININT2, BININT, else LONG1 with as few bytes of two's
 * complement as hold its sign (Python's encode_long). */
void ckpt_pw_int(strbuf *sb, int64_t v);
void ckpt_pw_uint(strbuf *sb, uint64_t v);
/* BINFLOAT: the binary64 bits, big-endian (a float's exact bits). */
void ckpt_pw_float(strbuf *sb, double x);
void ckpt_pw_float_bits(strbuf *sb, uint64_t bits);
static inline void ckpt_pw_bool(strbuf *sb, bool v) { ckpt_pw_op(sb, v ? CKPT_OP_NEWTRUE : CKPT_OP_NEWFALSE); }
static inline void ckpt_pw_none(strbuf *sb) { ckpt_pw_op(sb, CKPT_OP_NONE); }
/* A str: BINUNICODE (protocol 2's form). */
void ckpt_pw_strn(strbuf *sb, const char *s, size_t n);
void ckpt_pw_str(strbuf *sb, const char *s);
/* A str as protocol 4 writes it: SHORT_BINUNICODE below 256 bytes, else BINUNICODE. */
void ckpt_pw_str4(strbuf *sb, const char *s, size_t n);
/* bytes: SHORT_BINBYTES below 256 bytes, else BINBYTES. */
void ckpt_pw_bytes(strbuf *sb, const void *p, size_t n);
/* GLOBAL module\nname\n (protocol 2). */
void ckpt_pw_global_n(strbuf *sb, const char *module, size_t ml, const char *name, size_t nl);
void ckpt_pw_global(strbuf *sb, const char *module, const char *name);
/* module and name as two strs, then STACK_GLOBAL (protocol 4). */
void ckpt_pw_stack_global(strbuf *sb, const char *module, const char *name);
/* The closing opcode of a tuple of n items pushed after a MARK (n > 3) or not (n <= 3):
 * EMPTY_TUPLE, TUPLE1..3 or TUPLE, as Python's pickler chooses. Call ckpt_pw_tuple_begin first. */
static inline void ckpt_pw_tuple_begin(strbuf *sb, size_t n)
{
    if (n > 3) ckpt_pw_op(sb, CKPT_OP_MARK);
}
void ckpt_pw_tuple_end(strbuf *sb, size_t n);
/* A tuple of ints (a shape, a stride). */
void ckpt_pw_uint_tuple(strbuf *sb, const uint64_t *v, size_t n);

/* A plain value read by the pickle reader written again as Python's pickler writes it: None,
 * bools, ints, floats (their exact bits), str, bytes, tuples, lists and dicts of them. false
 * (nothing usable written) for anything else: a GLOBAL, an object, a text-protocol value. */
bool ckpt_pw_value(strbuf *sb, const ckpt_pickle *p, size_t k, int depth);

/* The folder a torch.save zip's members are written under: `wanted` when it is a plain name
 * (1 to 64 letters, digits, '_' or '-'), else torch's own "archive". */
const char *ckpt_pw_archive_prefix(const char *wanted);

#endif
