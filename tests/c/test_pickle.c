/* The pickle layer (src/pickle.c): every accepted opcode, the tree it builds (checked against
 * what Python's own unpickler makes of the same bytes), the memo's sharing, hostile nesting,
 * memo indices and lengths, unsupported opcodes, and names read as data (os.system is a name,
 * never a call), with torch.load(weights_only=True)'s verdict. */
#include "containers/pickle.h"
#include "families/pytorch/globals.h"
#include "testutil.h"

/* Every opcode format.md 10.2 accepts, once at least (61 of them), made by tests/c/pickle_seed.py's
 * sibling in this test: protocol 5 with a FRAME around everything. Python's unpickler (with a
 * persistent_load) gives:
 * [None, True, False, 42, True, -7, 255, 256, 123456789012345678901234567890, 255,
 *  -2361183241434822606847, 1.5, -0.25, 'hi', 'ab', 'c', 'uni', 'x', 'y', 'z', b'\x01', b'\x02',
 *  b'\x03', bytearray(b'\x04'), (), (1, 2), (3,), (4, 5), (6, 7, 8), [9], {}, {10: 11}, set(),
 *  frozenset({12}), [13], {14: 15}, {16}, {19: 20}, OrderedDict(), OrderedDict(), OrderedDict(),
 *  ('PID', 'key0'), ('PID', ('storage', 0))] */
static const uint8_t all_opcodes[] = {
    0x80, 0x05, 0x95, 0x71, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x5d, 0x94, 0x28, 0x4e, 0x88, 0x89, 0x49, 0x34,
    0x32, 0x0a, 0x49, 0x30, 0x31, 0x0a, 0x4a, 0xf9, 0xff, 0xff, 0xff, 0x4b, 0xff, 0x4d, 0x00, 0x01, 0x4c, 0x31, 0x32,
    0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x30, 0x31,
    0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x30, 0x4c, 0x0a, 0x8a, 0x02, 0xff, 0x00, 0x8b, 0x09, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x46, 0x31, 0x2e, 0x35, 0x0a, 0x47, 0xbf, 0xd0, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x53, 0x27, 0x68, 0x69, 0x27, 0x0a, 0x54, 0x02, 0x00, 0x00, 0x00, 0x61, 0x62, 0x55,
    0x01, 0x63, 0x56, 0x75, 0x6e, 0x69, 0x0a, 0x58, 0x01, 0x00, 0x00, 0x00, 0x78, 0x8c, 0x01, 0x79, 0x8d, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7a, 0x42, 0x01, 0x00, 0x00, 0x00, 0x01, 0x43, 0x01, 0x02, 0x8e, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x96, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x29, 0x28,
    0x4b, 0x01, 0x4b, 0x02, 0x74, 0x4b, 0x03, 0x85, 0x4b, 0x04, 0x4b, 0x05, 0x86, 0x4b, 0x06, 0x4b, 0x07, 0x4b, 0x08,
    0x87, 0x28, 0x4b, 0x09, 0x6c, 0x7d, 0x28, 0x4b, 0x0a, 0x4b, 0x0b, 0x64, 0x8f, 0x28, 0x4b, 0x0c, 0x91, 0x65, 0x5d,
    0x4b, 0x0d, 0x61, 0x61, 0x7d, 0x4b, 0x0e, 0x4b, 0x0f, 0x73, 0x61, 0x8f, 0x28, 0x4b, 0x10, 0x90, 0x61, 0x7d, 0x28,
    0x4b, 0x13, 0x4b, 0x14, 0x75, 0x61, 0x70, 0x31, 0x0a, 0x30, 0x67, 0x31, 0x0a, 0x71, 0x02, 0x68, 0x02, 0x72, 0x03,
    0x00, 0x00, 0x00, 0x6a, 0x03, 0x00, 0x00, 0x00, 0x30, 0x30, 0x32, 0x30, 0x28, 0x4b, 0x11, 0x4b, 0x12, 0x31, 0x63,
    0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x0a, 0x4f, 0x72, 0x64, 0x65, 0x72, 0x65, 0x64,
    0x44, 0x69, 0x63, 0x74, 0x0a, 0x29, 0x52, 0x7d, 0x62, 0x61, 0x8c, 0x0b, 0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74,
    0x69, 0x6f, 0x6e, 0x73, 0x8c, 0x0b, 0x4f, 0x72, 0x64, 0x65, 0x72, 0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x93, 0x29,
    0x81, 0x61, 0x63, 0x63, 0x6f, 0x6c, 0x6c, 0x65, 0x63, 0x74, 0x69, 0x6f, 0x6e, 0x73, 0x0a, 0x4f, 0x72, 0x64, 0x65,
    0x72, 0x65, 0x64, 0x44, 0x69, 0x63, 0x74, 0x0a, 0x29, 0x7d, 0x92, 0x61, 0x50, 0x6b, 0x65, 0x79, 0x30, 0x0a, 0x61,
    0x28, 0x58, 0x07, 0x00, 0x00, 0x00, 0x73, 0x74, 0x6f, 0x72, 0x61, 0x67, 0x65, 0x4b, 0x00, 0x74, 0x51, 0x61, 0x2e,
};

/* A compact rendering of node k: N T F 42 big:hex 1.5 s:"x" b:hex (..) [..] {k:v} set{..}
 * frozenset{..} g:mod.name R(callable,args)[items] B(obj,state) O(cls,args[,kwargs]) P(pid) P:text */
static void summ(strbuf *sb, const ckpt_pickle *p, size_t k, int depth)
{
    if (depth > 50) {
        sb_puts(sb, "...");
        return;
    }
    const ckpt_pnode *n = ckpt_pickle_node(p, k);
    const char *d = (const char *)p->data;
    switch (n->kind) {
        case CKPT_PK_NONE: sb_puts(sb, "N"); return;
        case CKPT_PK_BOOL: sb_puts(sb, n->truth ? "T" : "F"); return;
        case CKPT_PK_INT: sb_printf(sb, "%lld", (long long)n->i); return;
        case CKPT_PK_FLOAT: sb_printf(sb, "%g", n->f); return;
        case CKPT_PK_BIGINT:
        case CKPT_PK_BYTES:
            if (n->flags & CKPT_PF_TEXT) {
                sb_puts(sb, n->kind == CKPT_PK_BIGINT ? "big:" : "b:");
                sb_put(sb, d + n->at, (size_t)n->len);
            } else {
                sb_puts(sb, n->kind == CKPT_PK_BIGINT ? "big:" : n->flags & CKPT_PF_BYTEARRAY ? "ba:" : "b:");
                for (uint64_t j = 0; j < n->len; j++) sb_printf(sb, "%02x", (unsigned char)d[n->at + j]);
            }
            return;
        case CKPT_PK_STR:
            sb_puts(sb, "s:\"");
            sb_put(sb, d + n->at, (size_t)n->len);
            sb_puts(sb, "\"");
            return;
        case CKPT_PK_GLOBAL:
            sb_puts(sb, "g:");
            sb_put(sb, d + n->at, (size_t)n->len);
            sb_puts(sb, ".");
            sb_put(sb, d + n->at2, (size_t)n->len2);
            return;
        case CKPT_PK_PERSID:
            if (n->flags & CKPT_PF_TEXT) {
                sb_puts(sb, "P:");
                sb_put(sb, d + n->at, (size_t)n->len);
                return;
            }
            break;
        default: break;
    }
    static const char *open[] = {
        [CKPT_PK_TUPLE] = "(",   [CKPT_PK_LIST] = "[",   [CKPT_PK_DICT] = "{",    [CKPT_PK_SET] = "set{",
        [CKPT_PK_REDUCE] = "R(", [CKPT_PK_BUILD] = "B(", [CKPT_PK_NEWOBJ] = "O(", [CKPT_PK_PERSID] = "P("};
    static const char *close[] = {
        [CKPT_PK_TUPLE] = ")", [CKPT_PK_LIST] = "]", [CKPT_PK_DICT] = "}", [CKPT_PK_SET] = "}"};
    if (n->kind == CKPT_PK_SET && (n->flags & CKPT_PF_FROZEN)) sb_puts(sb, "frozen");
    sb_puts(sb, open[n->kind]);
    if (n->a != CKPT_PNIL) {
        size_t refs[3] = {n->a, n->b, n->c};
        for (int j = 0; j < 3 && refs[j] != CKPT_PNIL; j++) {
            if (j) sb_puts(sb, ",");
            summ(sb, p, refs[j], depth + 1);
        }
        sb_puts(sb, ")");
        if (n->first == CKPT_PNIL) return;
        sb_puts(sb, "[");
    }
    size_t j = 0;
    for (size_t c = n->first; c != CKPT_PNIL; c = p->cells[c].next, j++) {
        if (j) sb_puts(sb, n->kind == CKPT_PK_DICT && j % 2 ? ":" : ",");
        summ(sb, p, p->cells[c].node, depth + 1);
    }
    sb_puts(sb, n->a != CKPT_PNIL ? "]" : close[n->kind]);
}

static ckpt_pickle *read_ok(const void *data, size_t len)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_pickle *p = NULL;
    int rc = ckpt_pickle_read(data, len, "PyTorch", "archive/data.pkl", 0, CKPT_NONE, &p, &err);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "  %s\n", err.message);
    ckpt_error_clear(&err);
    return p;
}

static char *summary(const ckpt_pickle *p)
{
    strbuf sb = {0};
    summ(&sb, p, p->root, 0);
    return sb_take(&sb);
}

/* The error of reading these bytes: its code, text and offset. */
static void check_fails(const void *data, size_t len, int code, const char *text, uint64_t file_offset)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_pickle *p = NULL;
    int rc = ckpt_pickle_read(data, len, "PyTorch", "archive/data.pkl", 0, 1000, &p, &err);
    CHECK(rc == code);
    CHECK(err.code == code);
    CHECK(p == NULL);
    ckpt_pickle_free(p);
    CHECK_STR(err.message, text);
    CHECK(err.offset == file_offset);
    ckpt_error_clear(&err);
}
#define FAILS(lit, code, text, at) check_fails(lit, sizeof lit - 1, code, text, at)

static void test_every_opcode(void)
{
    ckpt_pickle *p = read_ok(all_opcodes, sizeof all_opcodes);
    if (!p) return;
    CHECK(p->protocol == 5);
    CHECK(p->end == sizeof all_opcodes);
    char *s = summary(p);
    CHECK_STR(s, "[N,T,F,42,T,-7,255,256,big:123456789012345678901234567890,255,big:010000000000000080,1.5,-0.25,"
                 "b:hi,b:6162,b:63,s:\"uni\",s:\"x\",s:\"y\",s:\"z\",b:01,b:02,b:03,ba:04,(),(1,2),(3),(4,5),(6,7,8),"
                 "[9],{},{10:11},set{},frozenset{12},[13],{14:15},set{16},{19:20},"
                 "B(R(g:collections.OrderedDict,()),{}),"
                 "O(g:collections.OrderedDict,()),O(g:collections.OrderedDict,(),{}),P:key0,P((s:\"storage\",0))]");
    free(s);
    /* offsets: the root list is the EMPTY_LIST after PROTO (2 bytes) and FRAME (9) */
    const ckpt_pnode *root = ckpt_pickle_node(p, p->root);
    CHECK(root->kind == CKPT_PK_LIST && root->offset == 11 && root->count == 43);
    CHECK(ckpt_pickle_node(p, ckpt_pickle_item(p, p->root, 0))->offset == 14); /* NONE after MEMOIZE, MARK */
    CHECK(ckpt_pickle_item(p, p->root, 43) == CKPT_PNIL);
    /* the tree as JSON, each node once */
    strbuf j = {0};
    ckpt_pickle_json(&j, p, ckpt_pickle_item(p, p->root, 3));
    CHECK_STR(j.data, "{\"kind\":\"int\",\"at\":17,\"value\":42}");
    sb_free(&j);
    /* protocol 5 opcodes (FRAME, MEMOIZE, BINBYTES...) are not on weights_only's list */
    unsigned op;
    uint64_t op_at;
    CHECK(ckpt_torch_pickle_refused_opcode(p, &op, &op_at));
    CHECK(op == 0x95 && op_at == 2);
    CHECK(!ckpt_torch_pickle_weights_only(p));
    strbuf g = {0};
    ckpt_pickle_globals_json(&g, p, NULL);
    CHECK_STR(g.data, "[\"collections.OrderedDict\"]");
    sb_free(&g);
    ckpt_pickle_free(p);
}

/* The memo shares a node: a list put once and got twice is one node, appended to after. */
static void test_memo_shares(void)
{
    static const char pk[] = "\x80\x02]q\x00(h\x00h\x00"
                             "e.";
    ckpt_pickle *p = read_ok(pk, sizeof pk - 1);
    if (!p) return;
    /* the list holds itself twice (a cycle): JSON expands it once */
    CHECK(ckpt_pickle_item(p, p->root, 0) == p->root);
    strbuf j = {0};
    ckpt_pickle_json(&j, p, p->root);
    CHECK_STR(j.data, "{\"kind\":\"list\",\"at\":2,\"items\":[{\"ref\":2},{\"ref\":2}]}");
    sb_free(&j);
    CHECK(p->nodes_len == 1);
    ckpt_pickle_free(p);
    /* two references to one dict */
    static const char pk2[] = "\x80\x02}q\x01h\x01\x86.";
    p = read_ok(pk2, sizeof pk2 - 1);
    if (!p) return;
    CHECK(ckpt_pickle_item(p, p->root, 0) == ckpt_pickle_item(p, p->root, 1));
    char *s = summary(p);
    CHECK_STR(s, "({},{})");
    free(s);
    ckpt_pickle_free(p);
}

/* Every limit and malformation, with its text and its byte offset (the file offset is 1000 +
 * the opcode's). */
static void test_hostile(void)
{
    const int M = CKPT_E_PICKLE_MALFORMED;
    const char *pre = "PyTorch: malformed pickle at byte ";
    char want[256];
    /* nesting: 1001 MARKs */
    {
        char deep[1003];
        memset(deep, '(', 1001);
        deep[1001] = '.';
        snprintf(want, sizeof want, "%s1000 of \"archive/data.pkl\": nesting deeper than 1000", pre);
        check_fails(deep, 1002, M, want, 2000);
    }
    /* nesting: a tuple in a tuple 1001 deep, without marks */
    {
        size_t n = 1 + 1001 + 1;
        char *deep = malloc(n);
        deep[0] = ')';
        memset(deep + 1, '\x85', 1001);
        deep[n - 1] = '.';
        snprintf(want, sizeof want, "%s1000 of \"archive/data.pkl\": nesting deeper than 1000", pre);
        check_fails(deep, n, M, want, 2000);
        free(deep);
    }
    /* lengths beyond the bytes left: nothing is allocated for them */
    FAILS("X\xff\xff\xff\xff"
          "abc.",
          M,
          "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a length of 4294967295 bytes, more than the 4 "
          "left",
          1000);
    FAILS(
        "\x8e\xff\xff\xff\xff\xff\xff\xff\x7f.", M,
        "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a length of 9223372036854775807 bytes, more than "
        "the 1 left",
        1000);
    FAILS("\x95\x00\x00\x00\x00\x01\x00\x00\x00N.", M,
          "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a length of 4294967296 bytes, more than the 2 "
          "left",
          1000);
    FAILS("\x8b\xff\xff\xff\xff.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a negative length",
          1000);
    FAILS("T\x00\x00\x00\x80.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a negative length",
          1000);
    /* memo: an index past anything the pickle could fill, one never set */
    FAILS("Nr\xff\xff\xff\x7f.", M,
          "PyTorch: malformed pickle at byte 1 of \"archive/data.pkl\": memo index 2147483647 is larger than the "
          "pickle's 7 bytes",
          1001);
    FAILS("Nq\x00h\x01.", M, "PyTorch: malformed pickle at byte 3 of \"archive/data.pkl\": memo 1 was never set", 1003);
    FAILS("g9\n.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": memo 9 was never set", 1000);
    FAILS("gx\n.", M,
          "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a GET or PUT whose index is not a number",
          1000);
    /* the stack, marks, truncation */
    FAILS("0.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": the stack is empty", 1000);
    FAILS(".", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": the stack is empty", 1000);
    FAILS("Nt.", M, "PyTorch: malformed pickle at byte 1 of \"archive/data.pkl\": no MARK to pop to", 1001);
    FAILS("(NNNd.", M,
          "PyTorch: malformed pickle at byte 4 of \"archive/data.pkl\": a DICT or SETITEMS of an odd number of values",
          1004);
    FAILS("K", M,
          "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": the pickle ends inside an opcode's argument",
          1000);
    FAILS("N", M, "PyTorch: malformed pickle at byte 1 of \"archive/data.pkl\": no STOP opcode", 1001);
    FAILS("ccollections", M,
          "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": the pickle ends inside an opcode's argument",
          1000);
    FAILS("NNa.", M,
          "PyTorch: malformed pickle at byte 2 of \"archive/data.pkl\": APPEND, SETITEM or ADDITEMS onto a value that "
          "is not a container",
          1002);
    FAILS("K\x01K\x02\x93.", M,
          "PyTorch: malformed pickle at byte 4 of \"archive/data.pkl\": a STACK_GLOBAL whose module and name are not "
          "strings",
          1004);
    FAILS("\x80\x09N.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": protocol 9 (at most 5 exists)",
          1000);
    FAILS(
        "I12x\n.", M,
        "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": an INT, LONG or FLOAT whose text is not a number",
        1000);
    FAILS(
        "Fnope\n.", M,
        "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": an INT, LONG or FLOAT whose text is not a number",
        1000);
    FAILS("Sabc\n.", M, "PyTorch: malformed pickle at byte 0 of \"archive/data.pkl\": a STRING that is not quoted",
          1000);
    /* APPENDS with nothing under its mark */
    FAILS("(e.", M, "PyTorch: malformed pickle at byte 1 of \"archive/data.pkl\": the stack is empty", 1001);
}

/* Opcodes outside the list: INST, OBJ, EXT1, NEXT_BUFFER, and a byte that is no opcode. */
static void test_unsupported(void)
{
    const int U = CKPT_E_PICKLE_OPCODE;
    FAILS("\x80\x02ios\nsystem\n.", U, "PyTorch: unsupported pickle opcode 0x69 at byte 2 of \"archive/data.pkl\"",
          1002);
    FAILS("(o.", U, "PyTorch: unsupported pickle opcode 0x6f at byte 1 of \"archive/data.pkl\"", 1001);
    FAILS("\x82\x01.", U, "PyTorch: unsupported pickle opcode 0x82 at byte 0 of \"archive/data.pkl\"", 1000);
    FAILS("\x97.", U, "PyTorch: unsupported pickle opcode 0x97 at byte 0 of \"archive/data.pkl\"", 1000);
    FAILS("N\xff.", U, "PyTorch: unsupported pickle opcode 0xff at byte 1 of \"archive/data.pkl\"", 1001);
    /* the member's name is escaped in the text */
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_pickle *p;
    CHECK(ckpt_pickle_read((const uint8_t *)"\x97", 1, "PyTorch", "a\"b\n", 10, CKPT_NONE, &p, &err) == U);
    CHECK_STR(err.message, "PyTorch: unsupported pickle opcode 0x97 at byte 10 of \"a\\\"b\\u000a\"");
    CHECK(err.offset == CKPT_NONE);
    ckpt_error_clear(&err);
}

/* os.system and posix.system named by a pickle: read as names, never called; weights_only would
 * refuse them, and the warning names them escaped. */
static void test_names_as_data(void)
{
    /* what pickle.dumps of a class whose __reduce__ returns (os.system, ('echo pwned',)) writes */
    static const char evil[] = "\x80\x02"
                               "cposix\nsystem\nq\x00X\n\x00\x00\x00"
                               "echo pwnedq\x01\x85q\x02Rq\x03.";
    ckpt_pickle *p = read_ok(evil, sizeof evil - 1);
    if (!p) return;
    char *s = summary(p);
    CHECK_STR(s, "R(g:posix.system,(s:\"echo pwned\"))");
    free(s);
    unsigned op;
    uint64_t op_at;
    CHECK(!ckpt_torch_pickle_refused_opcode(p, &op, &op_at) && op_at == CKPT_NONE);
    CHECK(!ckpt_torch_pickle_weights_only(p));
    strbuf w = {0};
    ckpt_torch_pickle_weights_only_warning(&w, p);
    CHECK_STR(w.data,
              "PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: \"posix.system\"");
    sb_free(&w);
    ckpt_pickle_free(p);
    /* protocol 4 names it by STACK_GLOBAL; a name with a quote and a newline is escaped */
    static const char evil4[] = "\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x03x\"\n\x8c\x01y\x93\x86.";
    p = read_ok(evil4, sizeof evil4 - 1);
    if (!p) return;
    strbuf g = {0};
    ckpt_torch_pickle_globals_json(&g, p, true);
    CHECK_STR(g.data, "[\"os.system\",\"x\\\"\\u000a.y\"]");
    sb_free(&g);
    ckpt_pickle_free(p);
    /* the names torch.save writes are accepted by weights_only, and known */
    static const char ok[] = "\x80\x02\x63torch._utils\n_rebuild_tensor_v2\nq\x00\x63\x63ollections\nOrderedDict\n"
                             "q\x01\x63torch\nFloatStorage\nq\x02\x87.";
    p = read_ok(ok, sizeof ok - 1);
    if (!p) return;
    CHECK(ckpt_torch_pickle_weights_only(p));
    strbuf none = {0};
    ckpt_torch_pickle_weights_only_warning(&none, p);
    CHECK(none.len == 0);
    sb_free(&none);
    ckpt_pickle_free(p);
    const char *dt;
    CHECK(ckpt_torch_known("torch._utils", 12, "_rebuild_tensor_v2", 18, &dt) == CKPT_PN_REBUILD_TENSOR_V2 && !dt);
    CHECK(ckpt_torch_known("torch", 5, "BFloat16Storage", 15, &dt) == CKPT_PN_STORAGE && !strcmp(dt, "bfloat16"));
    CHECK(ckpt_torch_known("torch", 5, "float16", 7, &dt) == CKPT_PN_DTYPE && !strcmp(dt, "float16"));
    CHECK(ckpt_torch_known("__builtin__", 11, "set", 3, NULL) == CKPT_PN_SET);
    CHECK(ckpt_torch_known("posix", 5, "system", 6, NULL) == CKPT_PN_OPAQUE);
    CHECK(ckpt_torch_known("lightning.fabric", 16, "AttributeDict", 13, NULL) == CKPT_PN_OPAQUE);
    CHECK(ckpt_torch_weights_only_global("torch", 5, "BFloat16Storage", 15));
    CHECK(ckpt_torch_weights_only_global("torch.cuda", 10, "FloatTensor", 11));
    CHECK(!ckpt_torch_weights_only_global("torch.sparse", 12, "BoolTensor", 10));
    CHECK(!ckpt_torch_weights_only_global("builtins", 8, "eval", 4));
    CHECK(!ckpt_torch_weights_only_global("nt", 2, "system", 6));
    CHECK(ckpt_torch_weights_only_opcode(0x52) && !ckpt_torch_weights_only_opcode(0x93));
}

/* Pickles in a row (a legacy torch.save file): each read from where the last one ended, with the
 * offsets of the file. */
static void test_in_a_row(void)
{
    static const char two[] = "\x80\x02K\x01.\x80\x02K\x02.";
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_pickle *a, *b;
    CHECK(ckpt_pickle_read((const uint8_t *)two, sizeof two - 1, "PyTorch", "f.pt", 0, 0, &a, &err) == 0);
    CHECK(a->end == 5);
    CHECK(ckpt_pickle_read((const uint8_t *)two + a->end, sizeof two - 1 - a->end, "PyTorch", "f.pt", a->end, a->end,
                           &b, &err) == 0);
    CHECK(ckpt_pickle_node(b, b->root)->i == 2 && ckpt_pickle_node(b, b->root)->offset == 7);
    ckpt_pickle_free(a);
    ckpt_pickle_free(b);
}

/* Bounded memory: a pickle of n bytes makes at most n nodes and n item cells, however it is
 * shaped; a list appended to itself again and again is a cycle, as deep as its appends: past
 * 1000 it is refused, like any nesting that deep. */
static void test_bounded(void)
{
    size_t pairs = 100000, n = 2 + 2 * pairs;
    uint8_t *d = malloc(n);
    d[0] = ']';
    for (size_t k = 0; k < pairs; k++) d[1 + 2 * k] = 'N', d[2 + 2 * k] = 'a';
    d[n - 1] = '.';
    ckpt_pickle *p = read_ok(d, n);
    if (p) {
        CHECK(p->nodes_len == 1 + pairs && p->cells_len == pairs);
        CHECK(ckpt_pickle_node(p, p->root)->count == pairs);
        ckpt_pickle_free(p);
    }
    for (size_t k = 0; k < pairs; k++) d[1 + 2 * k] = '2'; /* DUP APPEND: the list in itself */
    check_fails(d, n, CKPT_E_PICKLE_MALFORMED,
                "PyTorch: malformed pickle at byte 2000 of \"archive/data.pkl\": nesting deeper than 1000", 3000);
    free(d);
}

int main(void)
{
    static const test_case cases[] = {
        {"every opcode", test_every_opcode}, {"memo shares", test_memo_shares},     {"hostile", test_hostile},
        {"unsupported", test_unsupported},   {"names as data", test_names_as_data}, {"in a row", test_in_a_row},
        {"bounded", test_bounded},
    };
    return RUN_ALL(cases);
}
