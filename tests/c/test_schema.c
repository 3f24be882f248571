/* The ParameterSchema of the seed (docs/format.md 3): queries, the worked examples, write and the
 * direct readAndCheck / readAndCheckRepresentatives entry points. */
#include "testutil.h"

#define N CKPT_NONE

/* [p, p, q] with p = 2x3, q = 3, and the other worked examples. */
static const uint64_t P = 2, Q = 1; /* ranks used below */

static void worked_ppq(void)
{
    uint64_t shapes[] = {2, 2, 3, 2, 2, 3, 1, 3};
    uint8_t flags[] = {1, 1, 1};
    uint64_t map[] = {0, 0, 2};
    ckpt_schema *s = schema_of(3, shapes, flags, map);
    CHECK(ckpt_schema_is_well_formed(s));
    CHECK(ckpt_schema_representative(s, 0) == 0 && ckpt_schema_representative(s, 1) == 0 &&
          ckpt_schema_representative(s, 2) == 2);
    CHECK(ckpt_schema_tag(s, 0) == 1 && ckpt_schema_tag(s, 1) == 1 && ckpt_schema_tag(s, 2) == 3);
    CHECK(ckpt_schema_optimizer_state_count(s) == 2);
    CHECK(ckpt_schema_is_representative(s, 0) && !ckpt_schema_is_representative(s, 1) &&
          ckpt_schema_is_representative(s, 2));
    CHECK(ckpt_schema_has_aliases(s));
    CHECK(ckpt_schema_trainable_count(s) == 3);
    ckpt_schema_free(s);
    (void)P;
    (void)Q;
}

static void worked_pqp_vs_pqq(void)
{
    uint64_t shapes[] = {1, 4, 1, 4, 1, 4};
    uint8_t flags[] = {1, 1, 1};
    uint64_t pqp[] = {0, 1, 0}, pqq[] = {0, 1, 1};
    ckpt_schema *a = schema_of(3, shapes, flags, pqp), *b = schema_of(3, shapes, flags, pqq);
    CHECK(ckpt_schema_is_well_formed(a) && ckpt_schema_is_well_formed(b));
    CHECK(ckpt_schema_optimizer_state_count(a) == 2 && ckpt_schema_optimizer_state_count(b) == 2);
    CHECK(ckpt_schema_is_representative(a, 0) && ckpt_schema_is_representative(a, 1));
    CHECK(ckpt_schema_is_representative(b, 0) && ckpt_schema_is_representative(b, 1));
    CHECK(ckpt_schema_tag(a, 2) == 1 && ckpt_schema_tag(b, 2) == 2); /* only the tags differ */
    /* Written with a's tags, read against b: the alias mismatch at slot 2. */
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_schema_write_representatives(a, &sink, &err) == 0);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, buf.data, buf.len);
    ckpt_reader *r = ckpt_reader_new(&src);
    CHECK(ckpt_schema_read_and_check_representatives(r, b, &err) == CKPT_E_STORAGE_ALIAS_MISMATCH);
    CHECK_STR(err.message, F "storage alias mismatch for parameter 2");
    CHECK(err.offset == 16);
    ckpt_reader_free(r);
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(a);
    ckpt_schema_free(b);
}

static void worked_frozen_first(void)
{
    uint64_t shapes[] = {1, 5, 1, 5, 1, 2, 1, 5};
    uint8_t flags[] = {0, 1, 1, 1};
    uint64_t map[] = {N, 1, 2, 1};
    ckpt_schema *s = schema_of(4, shapes, flags, map);
    CHECK(ckpt_schema_is_well_formed(s));
    uint64_t tags[4];
    for (size_t i = 0; i < 4; i++) tags[i] = ckpt_schema_tag(s, i);
    CHECK(tags[0] == 0 && tags[1] == 2 && tags[2] == 3 && tags[3] == 2);
    CHECK(ckpt_schema_optimizer_state_count(s) == 2 && ckpt_schema_trainable_count(s) == 3);
    CHECK(ckpt_schema_representative(s, 0) == N);
    ckpt_schema_free(s);
}

static void implied_map(void)
{
    uint64_t shapes[] = {0, 1, 3, 0};
    uint8_t flags[] = {1, 0, 1};
    ckpt_schema *s = schema_of(3, shapes, flags, NULL);
    CHECK(ckpt_schema_is_well_formed(s));
    CHECK(!ckpt_schema_has_map(s));
    CHECK(ckpt_schema_representative(s, 0) == 0 && ckpt_schema_representative(s, 1) == N &&
          ckpt_schema_representative(s, 2) == 2);
    CHECK(ckpt_schema_representative(s, 3) == N); /* out of range */
    CHECK(ckpt_schema_optimizer_state_count(s) == 2 && !ckpt_schema_has_aliases(s));
    bool big;
    CHECK(ckpt_schema_size(s, 0, &big) == 1 && !big); /* a scalar has one element */
    CHECK(ckpt_schema_size(s, 2, &big) == 1 && !big);
    ckpt_schema_free(s);
}

static void map_out_of_range_index(void)
{
    uint64_t shapes[] = {0, 0};
    uint8_t flags[] = {1, 1};
    uint64_t map[] = {0};
    ckpt_schema *s = ckpt_schema_new(2, (uint64_t[]){0, 0}, NULL, 2, flags, map, 1);
    CHECK(ckpt_schema_representative(s, 1) == N);
    CHECK(!ckpt_schema_is_well_formed(s)); /* the map's length differs */
    ckpt_schema_free(s);
    (void)shapes;
}

static void well_formedness_rules(void)
{
    uint64_t shapes[] = {1, 4, 1, 4, 1, 3};
    struct {
        uint8_t flags[3];
        uint64_t map[3];
        bool ok;
        uint64_t slot;
        ckpt_sharing_fault fault;
    } cases[] = {
        {{1, 1, 1}, {0, 0, 2}, true, N, CKPT_SHARING_OK},
        {{0, 1, 1}, {0, 1, 2}, false, 0, CKPT_SHARING_FROZEN_HAS_REPRESENTATIVE},
        {{1, 1, 1}, {0, N, 2}, false, 1, CKPT_SHARING_TRAINABLE_HAS_NONE},
        {{1, 1, 1}, {0, 7, 2}, false, 1, CKPT_SHARING_OUT_OF_RANGE},
        {{1, 1, 1}, {1, 1, 2}, false, 0, CKPT_SHARING_FOLLOWS},
        {{0, 1, 1}, {N, 0, 2}, false, 1, CKPT_SHARING_FROZEN_REPRESENTATIVE},
        {{1, 1, 1}, {0, 1, 0}, false, 2, CKPT_SHARING_DIFFERENT_SHAPE},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ckpt_schema *s = schema_of(3, shapes, cases[k].flags, cases[k].map);
        ckpt_sharing_fault f;
        CHECK(ckpt_schema_is_well_formed(s) == cases[k].ok);
        CHECK(ckpt_schema_find_sharing_fault(s, &f) == cases[k].slot);
        CHECK(f == cases[k].fault);
        ckpt_schema_free(s);
    }
    /* A chain: 2 -> 1 -> 0. */
    uint64_t same[] = {1, 4, 1, 4, 1, 4};
    ckpt_schema *s = schema_of(3, same, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 1});
    ckpt_sharing_fault f;
    CHECK(ckpt_schema_find_sharing_fault(s, &f) == 2 && f == CKPT_SHARING_ALIAS_OF_ALIAS);
    CHECK(!ckpt_schema_is_well_formed(s));
    ckpt_schema_free(s);
    /* Flag count differing from the shapes. */
    s = ckpt_schema_new(2, (uint64_t[]){0, 0}, NULL, 1, (uint8_t[]){1}, NULL, 0);
    CHECK(!ckpt_schema_is_well_formed(s));
    ckpt_schema_free(s);
}

static void write_bytes_exact(void)
{
    uint64_t shapes[] = {2, 2, 3, 0};
    uint8_t flags[] = {1, 0};
    ckpt_schema *s = schema_of(2, shapes, flags, NULL);
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_schema_write(s, &sink, &err) == 0);
    uint64_t want[] = {2, 2, 2, 3, 6, 1, 0, 1, 0};
    CHECK(buf.len == sizeof want);
    for (size_t k = 0; k < 9 && buf.len == sizeof want; k++) {
        uint64_t v = 0;
        for (int j = 7; j >= 0; j--) v = (v << 8) | buf.data[8 * k + j];
        CHECK(v == want[k]);
    }
    ckpt_buffer_free(&buf);
    ckpt_sink_buffer(&sink, &buf);
    CHECK(ckpt_schema_write_representatives(s, &sink, &err) == 0);
    CHECK(buf.len == 16 && buf.data[0] == 1 && buf.data[8] == 0);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

static void write_malformed(void)
{
    ckpt_schema *s = schema_of(2, (uint64_t[]){0, 0}, (uint8_t[]){1, 1}, (uint64_t[]){1, 1});
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_schema_write(s, &sink, &err) == CKPT_E_MALFORMED_IN_MEMORY_SCHEMA);
    CHECK_STR(err.message, F "malformed in-memory parameter schema");
    CHECK(ckpt_schema_write_representatives(s, &sink, &err) == CKPT_E_MALFORMED_IN_MEMORY_SCHEMA);
    CHECK(buf.len == 0);
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

static void read_and_check_direct(void)
{
    ckpt_schema *good = schema_of(1, (uint64_t[]){1, 3}, (uint8_t[]){1}, NULL);
    ckpt_schema *bad = schema_of(1, (uint64_t[]){1, 3}, (uint8_t[]){0}, (uint64_t[]){0});
    bytes *b = b_new();
    b_u64(b, 1);
    b_slot(b, 1, (uint64_t[]){3}, 3, 1);
    b_u64(b, 1); /* tag */
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, b->data, b->len);
    ckpt_error err = {0};
    ckpt_reader *r = ckpt_reader_new(&src);
    CHECK(ckpt_schema_read_and_check(r, bad, &err) == CKPT_E_MALFORMED_EXPECTED_SCHEMA);
    CHECK_STR(err.message, F "malformed expected parameter schema");
    CHECK(ckpt_schema_read_and_check_representatives(r, bad, &err) == CKPT_E_MALFORMED_EXPECTED_SCHEMA);
    CHECK_STR(err.message, F "malformed expected parameter schema");
    CHECK(ckpt_reader_offset(r) == 0); /* nothing read */
    CHECK(ckpt_schema_read_and_check(r, good, &err) == 0);
    CHECK(ckpt_schema_read_and_check_representatives(r, good, &err) == 0);
    CHECK(ckpt_reader_offset(r) == b->len);
    ckpt_reader_free(r);
    ckpt_error_clear(&err);
    b_free(b);
    ckpt_schema_free(good);
    ckpt_schema_free(bad);
}

static void sizes_checked(void)
{
    uint64_t big = UINT64_MAX;
    ckpt_schema *s = ckpt_schema_new(3, (uint64_t[]){2, 2, 3}, (uint64_t[]){big, 2, 1u << 31, 1u << 31, big, 0, 5}, 3,
                                     (uint8_t[]){0, 0, 0}, NULL, 0);
    bool too_big;
    char text[128];
    ckpt_schema_size(s, 0, &too_big);
    CHECK(too_big);
    ckpt_schema_size_decimal(s, 0, text, sizeof text);
    CHECK_STR(text, "36893488147419103230");
    CHECK(ckpt_schema_size(s, 1, &too_big) == (1ull << 62) && !too_big);
    CHECK(ckpt_schema_size(s, 2, &too_big) == 0 && !too_big); /* a zero dim wins */
    /* The writer refuses a size of 2^64 or more. */
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    CHECK(ckpt_schema_write(s, &sink, &err) == CKPT_E_VALUE_TOO_LARGE);
    CHECK_STR(err.message, F "metadata value does not fit in 64 bits: 36893488147419103230");
    ckpt_error_clear(&err);
    ckpt_buffer_free(&buf);
    ckpt_schema_free(s);
}

/* The elements by what they are (the report's elementCounts): [frozen 3, p 2x2, q 5, p tied to 1];
 * none for a schema that is not well formed, nor for one whose frozen slot has 2^64 elements. */
static void element_counts(void)
{
    uint64_t shapes[] = {1, 3, 2, 2, 2, 1, 5, 2, 2, 2};
    ckpt_schema *s = schema_of(4, shapes, (uint8_t[]){0, 1, 1, 1}, (uint64_t[]){N, 1, 2, 1});
    char *json = ckpt_schema_json(s);
    CHECK(strstr(json, "\"hasAliases\":true,\"elementCounts\":{\"owned\":9,\"tied\":4,\"frozen\":3}}") != NULL);
    free(json);
    ckpt_schema_free(s);
    s = schema_of(2, (uint64_t[]){1, 3, 1, 3}, (uint8_t[]){1, 1}, (uint64_t[]){0, N});
    json = ckpt_schema_json(s);
    CHECK(strstr(json, "\"elementCounts\":null") != NULL);
    free(json);
    ckpt_schema_free(s);
    uint64_t big = UINT64_MAX;
    s = ckpt_schema_new(2, (uint64_t[]){1, 1}, (uint64_t[]){big, 1}, 2, (uint8_t[]){0, 1}, NULL, 0);
    json = ckpt_schema_json(s);
    CHECK(strstr(json, "\"elementCounts\":{\"owned\":1,\"tied\":0,\"frozen\":\"18446744073709551615\"}") != NULL);
    free(json);
    ckpt_schema_free(s);
    s = ckpt_schema_new(2, (uint64_t[]){1, 1}, (uint64_t[]){big, 1}, 2, (uint8_t[]){0, 0}, NULL, 0);
    json = ckpt_schema_json(s);
    CHECK(strstr(json, "\"elementCounts\":null") != NULL); /* 2^64 - 1 + 1 */
    free(json);
    ckpt_schema_free(s);
}

static const test_case cases[] = {
    {"worked [p,p,q]", worked_ppq},
    {"worked [p,q,p] vs [p,q,q]", worked_pqp_vs_pqq},
    {"worked [frozen p,p,q,p]", worked_frozen_first},
    {"implied map, scalars", implied_map},
    {"map index out of range", map_out_of_range_index},
    {"well-formedness rules", well_formedness_rules},
    {"write bytes", write_bytes_exact},
    {"write malformed", write_malformed},
    {"readAndCheck direct", read_and_check_direct},
    {"sizes checked", sizes_checked},
    {"element counts", element_counts},
};

int main(void) { return RUN_ALL(cases); }
