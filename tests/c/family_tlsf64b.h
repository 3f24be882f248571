/* The test-only family TLSF64B's id: an extra family's id lies outside ckpt_family_id's range,
 * named here once for its module (family_tlsf64b.c) and the test that builds it. */
#ifndef FAMILY_TLSF64B_H
#define FAMILY_TLSF64B_H

enum { CKPT_FAMILY_TLSF64B = 100 };

#endif
