/* The open file (ckpt_open and friends): a slot resolved to what holds its data, moments and
 * tensors read bit for bit, statistics streamed with progress relative to the scan, cancel, the
 * errors of a frozen, tied, missing or unreadable slot; diff and the schema's explanations. */
#include "testutil.h"

#include <math.h>

#define N CKPT_NONE

static ckpt_config adam(void)
{
    return (ckpt_config){CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999),
                         ckpt_bits_from_double(1e-8), 0};
}

/* [frozen p, p, q, p]: representatives [none, 1, 2, 1]; entries 1 and 2. */
static ckpt_buffer tied_file(void)
{
    ckpt_schema *s =
        schema_of(4, (uint64_t[]){1, 2, 1, 2, 1, 3, 1, 2}, (uint8_t[]){0, 1, 1, 1}, (uint64_t[]){N, 1, 2, 1});
    float m1[2] = {1.5f, -2.5f}, v1[2] = {0.25f, 4.0f}, m2[3] = {NAN, 0.0f, -0.0f}, v2[3] = {1e-45f, 3.0f, -1.0f};
    ckpt_entry_in e[2] = {{2, 7, 3, m2, v2, 12, 12}, {1, 9, 2, m1, v1, 8, 8}};
    ckpt_write_desc d = {s, CKPT_FLOAT32, adam(), false, 0, e, 2, 0};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    ckpt_schema_free(s);
    return buf;
}

typedef struct progress_log {
    uint64_t last_done, total, calls;
    uint64_t stop_after; /* cancel on this call (0: never) */
} progress_log;

static int on_progress(void *ctx, uint64_t done, uint64_t total)
{
    progress_log *p = ctx;
    CHECK(done >= p->last_done);
    p->last_done = done;
    p->total = total;
    return ++p->calls == p->stop_after;
}

static void slots_resolve_to_entries(void)
{
    ckpt_buffer buf = tied_file();
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, buf.data, buf.len);
    ckpt_file *f = ckpt_open(&src, NULL);
    CHECK(ckpt_file_report(f)->error.code == 0);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    const ckpt_entry_info *e;
    uint64_t owner;
    /* a tied slot gives its representative's entry, and says so */
    CHECK(ckpt_file_entry(f, 3, &e, &owner, &err) == 0 && owner == 1 && e->id == 1 && e->step == 9);
    float m[2], v[2];
    CHECK(ckpt_file_read_moments(f, 3, m, v, &err) == 0 && m[0] == 1.5f && m[1] == -2.5f && v[1] == 4.0f);
    /* a frozen slot has no optimizer state; past the slots there is no slot */
    CHECK(ckpt_file_entry(f, 0, &e, &owner, &err) == CKPT_E_FROZEN_SLOT && e == NULL && owner == N);
    CHECK_STR(err.message, "parameter 0 is frozen: it has no optimizer state");
    CHECK(err.slot == 0);
    CHECK(ckpt_file_entry(f, 4, &e, &owner, &err) == CKPT_E_NO_SUCH_SLOT);
    CHECK_STR(err.message, "no parameter 4: the file has 4 slots");
    CHECK(ckpt_file_entry(f, UINT64_MAX, &e, &owner, &err) == CKPT_E_NO_SUCH_SLOT);
    CHECK_STR(err.message, "no parameter 18446744073709551615: the file has 4 slots");
    /* a state-file request on an optimizer file */
    const ckpt_tensor_info *t;
    CHECK(ckpt_file_tensor(f, 0, &t, &err) == CKPT_E_WRONG_FAMILY);
    CHECK_STR(err.message, "this is a CUDA Adam checkpoint (TLADAMF): it holds optimizer state, not model tensors");
    /* statistics stream with progress relative to the two payloads */
    progress_log log = {0};
    ckpt_stats *sm, *sv;
    CHECK(ckpt_file_moment_stats(f, 2, on_progress, &log, &sm, &sv, &err) == 0);
    CHECK(log.total == 24 && log.last_done == 24);
    CHECK(sm->nan == 1 && sm->zero == 2 && sv->negative == 1 && sv->finite == 3);
    CHECK(ckpt_entry_unhealthy(sm, sv) == 2);
    ckpt_stats_free(sm);
    ckpt_stats_free(sv);
    log = (progress_log){0, 0, 0, 1};
    CHECK(ckpt_file_moment_stats(f, 2, on_progress, &log, &sm, &sv, &err) == CKPT_E_CANCELLED && !sm && !sv);
    CHECK_STR(err.message, "statistics scan cancelled");
    ckpt_error_clear(&err);
    ckpt_close(f);
    ckpt_close(NULL);
    ckpt_buffer_free(&buf);
}

static void entries_read_before_an_error(void)
{
    ckpt_buffer buf = tied_file();
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, buf.data, buf.len - 3); /* the last entry's v is cut */
    ckpt_file *f = ckpt_open(&src, NULL);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(rep->error.code == CKPT_E_TRUNCATED && rep->error.slot == 2 && rep->entries_len == 1);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    const ckpt_entry_info *e;
    CHECK(ckpt_file_entry(f, 1, &e, NULL, &err) == 0); /* read before the error: available */
    CHECK(ckpt_file_entry(f, 2, &e, NULL, &err) == CKPT_E_NOT_READABLE);
    CHECK_STR(err.message, "parameter 2's optimizer entry was not read: the file is invalid before it");
    ckpt_expected layout;
    CHECK(ckpt_file_layout(f, &layout, &err) == 0); /* the schema was complete */
    ckpt_source_memory(&src, &mem, buf.data, 100);
    ckpt_file *g = ckpt_open(&src, NULL);
    CHECK(ckpt_file_entry(g, 1, &e, NULL, &err) == CKPT_E_NOT_READABLE);
    CHECK(ckpt_file_layout(g, &layout, &err) == CKPT_E_NOT_READABLE);
    ckpt_error_clear(&err);
    ckpt_close(f);
    ckpt_close(g);
    ckpt_buffer_free(&buf);
}

static void state_tensors(void)
{
    ckpt_schema *s = schema_of(2, (uint64_t[]){0, 2, 2, 3}, NULL, NULL);
    float a = 3.5f, b[6] = {1, 2, 3, INFINITY, 5, 6};
    const void *values[2] = {&a, b};
    uint64_t lens[2] = {4, 24};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_state_write(CKPT_FAMILY_TLPF32B, s, values, lens, &sink, &err) == 0);
    CHECK(buf.len == 7 + 16 + 16 + 4 + 32 + 24);
    /* a wrong length is the writer's own check, before any byte */
    ckpt_buffer bad;
    ckpt_sink bad_sink;
    ckpt_sink_buffer(&bad_sink, &bad);
    lens[1] = 20;
    CHECK(ckpt_state_write(CKPT_FAMILY_TLSF32B, s, values, lens, &bad_sink, &err) == CKPT_E_INVALID_PAYLOAD &&
          bad.len == 0);
    CHECK_STR(err.message, "StateIO: invalid values for tensor 1 (20 bytes for a shape of 6 elements)");
    CHECK(ckpt_state_write(CKPT_FAMILY_TLADAMF, s, values, lens, &bad_sink, &err) == CKPT_E_INVALID_ARGUMENT);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, buf.data, buf.len);
    ckpt_file *f = ckpt_open(&src, NULL);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(rep->error.code == 0 && rep->family->id == CKPT_FAMILY_TLPF32B && rep->tensors_len == 2);
    float out[6];
    CHECK(ckpt_file_read_tensor(f, 1, out, &err) == 0 && memcmp(out, b, 24) == 0);
    ckpt_stats *st;
    CHECK(ckpt_file_tensor_stats(f, 1, NULL, NULL, &st, &err) == 0 && st->inf == 1 && st->finite == 5);
    ckpt_stats_free(st);
    CHECK(ckpt_file_tensor_stats(f, 2, NULL, NULL, &st, &err) == CKPT_E_NO_SUCH_SLOT && !st);
    CHECK_STR(err.message, "no tensor 2: the file has 2 tensors");
    const ckpt_entry_info *e;
    CHECK(ckpt_file_entry(f, 0, &e, NULL, &err) == CKPT_E_WRONG_FAMILY);
    char *json = ckpt_report_json(rep);
    CHECK(json && strstr(json, "{\"ok\":true,\"family\":\"TLPF32B\",\"name\":\"TorchLean float32 parameter "
                               "checkpoint\",\"kind\":\"state\",\"version\":2,"));
    CHECK(json && strstr(json, "\"tensorCount\":2,\"offsets\":{\"tensors\":15},\"tensors\":[{\"shape\":[],\"count\":1,"
                               "\"offset\":23,\"dataOffset\":39},"
                               "{\"shape\":[2,3],\"count\":6,\"offset\":43,\"dataOffset\":75}]"));
    free(json);
    ckpt_error_clear(&err);
    ckpt_close(f);
    ckpt_buffer_free(&buf);
    ckpt_buffer_free(&bad);
    ckpt_schema_free(s);
}

static void diff_layouts(void)
{
    ckpt_schema *a = schema_of(3, (uint64_t[]){1, 2, 1, 2, 1, 3}, (uint8_t[]){1, 1, 1}, (uint64_t[]){0, 0, 2});
    ckpt_schema *b = schema_of(2, (uint64_t[]){1, 2, 2, 2, 1}, (uint8_t[]){1, 0}, NULL);
    ckpt_config ca = adam(), cb = adam();
    cb.beta2 = ckpt_bits_from_double(0.95);
    cb.weight_decay = ckpt_bits_from_double(-0.0);
    ckpt_expected la = {a, CKPT_FLOAT32, &ca, 1, 0, 0}, lb = {b, CKPT_FLOAT64, &cb, 0, 0, 0};
    char *json = ckpt_diff_json(&la, &lb);
    const char *fragments[] = {
        "{\"field\":\"count\",\"slot\":null,\"a\":3,\"b\":2,\"text\":\"parameter count: 3 vs "
        "2\",\"message\":\"parameter count: 3 vs 2\"}",
        "{\"field\":\"rank\",\"slot\":1,\"a\":1,\"b\":2,\"text\":\"rank 1 vs 2\",\"message\":\"parameter 1: rank 1 vs "
        "2\"}",
        "{\"field\":\"shape\",\"slot\":1,\"a\":[2],\"b\":[2,1],\"text\":\"shape #[2] vs #[2, "
        "1]\",\"message\":\"parameter 1: shape #[2] vs #[2, 1]\"}",
        "\"field\":\"requiresGrad\",\"slot\":1,\"a\":true,\"b\":false,\"text\":\"trainable vs frozen\"",
        "\"field\":\"representative\",\"slot\":1,\"a\":0,\"b\":null,\"text\":\"representative 0 vs none\"",
        "\"field\":\"slot\",\"slot\":2,\"a\":[3],\"b\":null,\"text\":\"#[3] only in the first\"",
        "\"field\":\"dtype\",\"slot\":null,\"a\":\"float32\",\"b\":\"float64\"",
        ("\"field\":\"config.beta2\",\"slot\":null,\"a\":0.999,\"b\":0.95,\"aBits\":\"0x3feff7ced916872b\",\"bBits\":"
         "\"0x3fee666666666666\","
         "\"text\":\"beta2: 0.999 vs 0.95 (bits 0x3feff7ced916872b vs 0x3fee666666666666)\""),
        "\"text\":\"weightDecay: 0 vs -0 (bits 0x0000000000000000 vs 0x8000000000000000)\"",
        "\"field\":\"randomCounter\",\"slot\":null,\"a\":true,\"b\":false,\"text\":\"random counter: kept vs none\"",
    };
    for (size_t k = 0; k < sizeof fragments / sizeof fragments[0]; k++) {
        bool found = json && strstr(json, fragments[k]);
        CHECK(found);
        if (!found) fprintf(stderr, "missing %s\nin %s\n", fragments[k], json);
    }
    free(json);
    json = ckpt_diff_json(&la, &la);
    CHECK_STR(json, "[]");
    free(json);
    /* a list of shapes (a state file) compares shapes only */
    ckpt_schema *shapes = schema_of(3, (uint64_t[]){1, 2, 1, 2, 1, 3}, NULL, NULL);
    ckpt_expected ls = {shapes, CKPT_DTYPE_ANY, NULL, -1, 0, 0};
    json = ckpt_diff_json(&la, &ls);
    CHECK_STR(json, "[]");
    free(json);
    ckpt_schema_free(a);
    ckpt_schema_free(b);
    ckpt_schema_free(shapes);
}

static void schema_explanations(void)
{
    uint64_t slot;
    ckpt_schema *s = schema_of(3, (uint64_t[]){1, 2, 1, 2, 1, 2}, (uint8_t[]){1, 1, 0}, (uint64_t[]){0, 2, 1});
    char *why = ckpt_schema_explain(s, &slot);
    CHECK_STR(why, "parameter 1: representative 2 follows it");
    CHECK(slot == 1);
    free(why);
    uint8_t marks[3];
    CHECK(ckpt_schema_mark_sharing_faults(s, marks) == 2 && !marks[0] && marks[1] && marks[2]);
    ckpt_schema_free(s);
    s = ckpt_schema_new(2, (uint64_t[]){0, 0}, NULL, 1, (uint8_t[]){1}, NULL, 0);
    why = ckpt_schema_explain(s, &slot);
    CHECK_STR(why, "2 shapes but 1 requiresGrad flag");
    CHECK(slot == N);
    free(why);
    ckpt_schema_free(s);
    s = schema_of(1, (uint64_t[]){0}, (uint8_t[]){1}, NULL);
    CHECK(ckpt_schema_explain(s, &slot) == NULL && slot == N);
    ckpt_schema_free(s);
}

static const test_case cases[] = {
    {"slots resolve to entries", slots_resolve_to_entries},
    {"entries read before an error", entries_read_before_an_error},
    {"state tensors", state_tensors},
    {"diff", diff_layouts},
    {"schema explanations", schema_explanations},
};

int main(void) { return RUN_ALL(cases); }
