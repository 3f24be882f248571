/* Out of memory while a model-state file is read: the error names the tensor being read (its
 * index, offset and slot), as the optimizer reader's does for its parameters. The allocator
 * fails on purpose: this test links with -Wl,--wrap=realloc, and every realloc of at least
 * `limit` bytes fails while a limit is set. The report's array of tensors is the one that grows
 * past it first (40 bytes a tensor, against the schema's 8). */
#include "testutil.h"

static size_t limit; /* 0: no limit */

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n) { return limit && n >= limit ? NULL : __real_realloc(p, n); }

enum { TENSORS = 4000, HEAD = 7 + 8 + 8, TENSOR = 8 + 8 + 4 };

static void state_oom_names_the_tensor(void)
{
    /* TLSF32B, version, count, then TENSORS scalar tensors: rank 0, count 1, one float */
    bytes *b = b_new();
    b_raw(b, "TLSF32B", 7);
    b_u64(b, 1);
    b_u64(b, TENSORS);
    unsigned char *tensors = calloc(TENSORS, TENSOR);
    for (size_t i = 0; i < TENSORS; i++) tensors[i * TENSOR + 8] = 1; /* count 1 (little-endian) */
    b_raw(b, tensors, (size_t)TENSORS * TENSOR);
    free(tensors);

    ckpt_report *whole = inspect_bytes(b->data, b->len, 0);
    CHECK(whole->error.code == 0);
    ckpt_report_free(whole);

    limit = 64 * 1024;
    ckpt_report *rep = inspect_bytes(b->data, b->len, 0);
    limit = 0;
    CHECK(rep->error.code == CKPT_E_NO_MEMORY);
    uint64_t slot = rep->error.slot;
    CHECK(slot < TENSORS);
    char want[128];
    snprintf(want, sizeof want, "out of memory at tensor %llu of the %d the file declares", (unsigned long long)slot,
             TENSORS);
    CHECK_STR(rep->error.message, want);
    CHECK(rep->error.offset == HEAD + TENSOR * slot); /* the tensor's first field, its rank */
    ckpt_report_free(rep);
    b_free(b);
}

int main(void)
{
    static const test_case cases[] = {
        {"a state file's out-of-memory names its tensor", state_oom_names_the_tensor},
    };
    return RUN_ALL(cases);
}
