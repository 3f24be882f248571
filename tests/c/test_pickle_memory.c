/* The pickle reader's memory per input byte (src/containers/pickle.h): every allocation is
 * counted (alloc_count.h), and the most alive at once while a hostile pickle is read
 * is at most 80 bytes per pickle byte plus a constant. Each array is allocated once: a read makes
 * a handful of allocations however long the pickle is. */
#include "testutil.h"
#include "alloc_count.h"
#include "containers/pickle.h"

enum { K = 1000000, BOUND = 80, SLACK = 8192 };

/* Read a pickle while counting: the peak of live bytes and the allocations made. */
static void measure_read(const uint8_t *d, size_t n, const char *what)
{
    ckpt_error err = {0};
    ckpt_pickle *p = NULL;
    alloc_count_start();
    int rc = ckpt_pickle_read(d, n, "PyTorch", "archive/data.pkl", 0, CKPT_NONE, &p, &err);
    ckpt_pickle_free(p);
    alloc_count c = alloc_count_stop();
    size_t top = c.peak, made = c.calls;
    t_current = what;
    CHECK(rc == 0);
    CHECK(top <= (size_t)BOUND * n + SLACK);
    CHECK(made <= 6);
    if (top > (size_t)BOUND * n + SLACK || made > 6)
        fprintf(stderr, "  %s: %zu bytes for %zu pickle bytes (%.1f per byte), %zu allocations\n", what, top, n,
                (double)top / (double)n, made);
    ckpt_error_clear(&err);
}

static uint8_t *run(const char *head, char fill, size_t k, const char *tail, size_t *n)
{
    size_t h = strlen(head), t = strlen(tail);
    uint8_t *d = malloc(h + k + t);
    memcpy(d, head, h);
    memset(d + h, fill, k);
    memcpy(d + h + k, tail, t);
    *n = h + k + t;
    return d;
}

static void test_shapes(void)
{
    size_t n;
    uint8_t *d = run("", 'N', K, "N.", &n); /* NONE after NONE: a node and a stack entry a byte */
    measure_read(d, n, "a run of NONE");
    free(d);
    d = run("](", 'N', K, "e.", &n); /* and each an item of a list: a cell too */
    measure_read(d, n, "NONE between MARK and APPENDS");
    free(d);
    d = run("", ']', K, ".", &n); /* empty lists, each its own value */
    measure_read(d, n, "a run of EMPTY_LIST");
    free(d);
    d = run("(", 'N', K, "t.", &n); /* one tuple of them */
    measure_read(d, n, "a tuple of NONE");
    free(d);
    d = run("](N", '2', K, "e.", &n); /* DUP: values pushed without a node */
    measure_read(d, n, "DUP between MARK and APPENDS");
    free(d);
    /* the highest memo index a pickle can name: one below its length */
    d = run("Nr", 'N', K, ".", &n);
    uint32_t idx = (uint32_t)(n - 1);
    memcpy(d + 2, &idx, 4); /* little-endian on the machines this runs on */
    d[6] = 'N';
    measure_read(d, n, "a memo index as high as the pickle");
    free(d);
}

int main(void)
{
    static const test_case cases[] = {{"memory per byte", test_shapes}};
    return RUN_ALL(cases);
}
