/* The pickle writer (src/containers/pickle_write.c): each value in the bytes Python's pickler
 * writes (the expected bytes are pickle.dumps's, protocol 3, through pickletools.optimize, which
 * drops the memo), and a value read by the pickle reader written again byte for byte. */
#include "testutil.h"
#include "base/base.h"
#include "containers/pickle_write.h"

static bool same(const strbuf *sb, const char *want, size_t n)
{
    if (sb->failed || sb->len != n || memcmp(sb->data, want, n)) {
        fprintf(stderr, "  got %zu bytes:", sb->len);
        for (size_t k = 0; k < sb->len; k++) fprintf(stderr, " %02x", (unsigned char)sb->data[k]);
        fprintf(stderr, "\n");
        return false;
    }
    return true;
}
#define SAME(sb, lit) same(sb, lit, sizeof lit - 1)

static void int_of(int64_t v, const char *want, size_t n)
{
    strbuf sb = {0};
    ckpt_pw_int(&sb, v);
    CHECK(same(&sb, want, n));
    sb_free(&sb);
}
#define INT_IS(v, lit) int_of(v, lit, sizeof lit - 1)

static void ints_shortest(void)
{
    INT_IS(0, "\x4b\x00");
    INT_IS(255, "\x4b\xff");
    INT_IS(256, "\x4d\x00\x01");
    INT_IS(65535, "\x4d\xff\xff");
    INT_IS(65536, "\x4a\x00\x00\x01\x00");
    INT_IS(-1, "\x4a\xff\xff\xff\xff");
    INT_IS(INT32_MAX, "\x4a\xff\xff\xff\x7f");
    INT_IS(INT64_C(2147483648), "\x8a\x05\x00\x00\x00\x80\x00");
    INT_IS(INT32_MIN, "\x4a\x00\x00\x00\x80");
    INT_IS(INT64_C(-2147483649), "\x8a\x05\xff\xff\xff\x7f\xff");
    INT_IS(INT64_C(1099511627776), "\x8a\x06\x00\x00\x00\x00\x00\x01");
    INT_IS(INT64_MAX, "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f");
    INT_IS(INT64_MIN, "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80");
    strbuf sb = {0};
    ckpt_pw_uint(&sb, UINT64_MAX);
    CHECK(SAME(&sb, "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"));
    sb_free(&sb);
    ckpt_pw_uint(&sb, 7);
    CHECK(SAME(&sb, "\x4b\x07"));
    sb_free(&sb);
}

static void floats_strings_globals(void)
{
    strbuf sb = {0};
    ckpt_pw_float(&sb, 0.001);
    CHECK(SAME(&sb, "\x47\x3f\x50\x62\x4d\xd2\xf1\xa9\xfc"));
    sb_free(&sb);
    ckpt_pw_str(&sb, "lr");
    CHECK(SAME(&sb, "\x58\x02\x00\x00\x00lr"));
    sb_free(&sb);
    /* protocol 4: SHORT_BINUNICODE, and STACK_GLOBAL over two of them */
    ckpt_pw_proto(&sb, 4);
    ckpt_pw_stack_global(&sb, "torch", "Size");
    CHECK(SAME(&sb, "\x80\x04\x8c\x05torch\x8c\x04Size\x93"));
    sb_free(&sb);
    ckpt_pw_global(&sb, "collections", "OrderedDict");
    CHECK(SAME(&sb, "ccollections\nOrderedDict\n"));
    sb_free(&sb);
    ckpt_pw_bytes(&sb, "xy", 2);
    CHECK(SAME(&sb, "\x43\x02xy"));
    sb_free(&sb);
    uint64_t dims[4] = {1, 2, 3, 4};
    for (size_t n = 0; n <= 4; n++) {
        ckpt_pw_uint_tuple(&sb, dims, n);
        static const char *want[5] = {")", "K\x01\x85", "K\x01K\x02\x86", "K\x01K\x02K\x03\x87",
                                      "(K\x01K\x02K\x03K\x04t"};
        CHECK(same(&sb, want[n], strlen(want[n])));
        sb_free(&sb);
    }
}

/* pickle.dumps({...}, 3) through pickletools.optimize: every plain kind, one-item containers
 * (APPEND, SETITEM) and longer ones (MARK ... APPENDS, SETITEMS) */
static const char PY[] =
    "\x80\x03\x7d\x28\x58\x02\x00\x00\x00\x6c\x72\x47\x3f\x50\x62\x4d\xd2\xf1\xa9\xfc\x58\x05\x00\x00"
    "\x00\x62\x65\x74\x61\x73\x47\x3f\xec\xcc\xcc\xcc\xcc\xcc\xcd\x47\x3f\xef\xf7\xce\xd9\x16\x87\x2b"
    "\x86\x58\x03\x00\x00\x00\x65\x70\x73\x47\x3e\x45\x79\x8e\xe2\x30\x8c\x3a\x58\x07\x00\x00\x00\x61"
    "\x6d\x73\x67\x72\x61\x64\x89\x58\x07\x00\x00\x00\x66\x6f\x72\x65\x61\x63\x68\x4e\x58\x06\x00\x00"
    "\x00\x70\x61\x72\x61\x6d\x73\x5d\x4b\x00\x61\x58\x05\x00\x00\x00\x6e\x61\x6d\x65\x73\x5d\x28\x58"
    "\x01\x00\x00\x00\x70\x58\x01\x00\x00\x00\x71\x65\x58\x02\x00\x00\x00\x62\x62\x43\x02\x78\x79\x58"
    "\x03\x00\x00\x00\x62\x69\x67\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40\x58\x03\x00\x00\x00\x6e"
    "\x65\x67\x4a\xfb\xff\xff\xff\x58\x01\x00\x00\x00\x65\x5d\x58\x01\x00\x00\x00\x64\x7d\x58\x01\x00"
    "\x00\x00\x74\x29\x58\x02\x00\x00\x00\x74\x34\x28\x4b\x01\x4b\x02\x4b\x03\x4b\x04\x74\x58\x03\x00"
    "\x00\x00\x6f\x6e\x65\x7d\x58\x01\x00\x00\x00\x6b\x4b\x01\x73\x75\x2e";

static void values_written_again(void)
{
    ckpt_pickle *p = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_pickle_read((const uint8_t *)PY, sizeof PY - 1, "test", "value.pkl", 0, CKPT_NONE, &p, &err) == 0);
    if (!p) return;
    strbuf sb = {0};
    ckpt_pw_proto(&sb, 3);
    CHECK(ckpt_pw_value(&sb, p, p->root, 0));
    ckpt_pw_op(&sb, CKPT_OP_STOP);
    CHECK(same(&sb, PY, sizeof PY - 1));
    sb_free(&sb);
    ckpt_pickle_free(p);
    ckpt_error_clear(&err);
}

/* what is not a plain value is refused, nothing usable written */
static void objects_refused(void)
{
    static const char OBJ[] = "\x80\x02\x63torch\nSize\n\x29\x85\x52\x2e"; /* torch.Size(()) */
    ckpt_pickle *p = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_pickle_read((const uint8_t *)OBJ, sizeof OBJ - 1, "test", "obj.pkl", 0, CKPT_NONE, &p, &err) == 0);
    if (!p) return;
    strbuf sb = {0};
    CHECK(!ckpt_pw_value(&sb, p, p->root, 0));
    sb_free(&sb);
    ckpt_pickle_free(p);
    ckpt_error_clear(&err);
}

int main(void)
{
    static const test_case cases[] = {
        {"ints in their shortest form", ints_shortest},
        {"floats, strings, globals, tuples", floats_strings_globals},
        {"a value read is written again byte for byte", values_written_again},
        {"an object is not a plain value", objects_refused},
    };
    return RUN_ALL(cases);
}
