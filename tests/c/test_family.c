/* The fourth-family proof: a library built with the test-only family TLSF64B
 * (family_tlsf64b.c, added by the build alone) lists it, reads it, reports it (the C report and
 * its JSON, dtype float64), reads its tensors at 8 bytes, pairs it with an optimizer checkpoint,
 * computes health with it, exports it, and names it in the texts that list families. */
#include "family_tlsf64b.h"
#include "testutil.h"

#include <math.h>

static bool contains(const uint8_t *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, s, k)) return true;
    return false;
}

static ckpt_buffer state64(const double *a, const double *b)
{
    ckpt_schema *s = schema_of(2, (uint64_t[]){1, 2, 1, 3}, NULL, NULL);
    const void *values[2] = {a, b};
    uint64_t lens[2] = {16, 24};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_state_write(CKPT_FAMILY_TLSF64B, s, values, lens, &sink, &err) == 0);
    ckpt_schema_free(s);
    return buf;
}

static ckpt_buffer optimizer(void)
{
    ckpt_schema *s = schema_of(2, (uint64_t[]){1, 2, 1, 3}, (uint8_t[]){1, 1}, (uint64_t[]){0, 1});
    float m0[2] = {0.5f, 0.5f}, v0[2] = {0.25f, 0.25f}, m1[3] = {0.5f, 0.5f, 0.5f}, v1[3] = {0.25f, 0.25f, 0.25f};
    ckpt_entry_in e[2] = {{0, 3, 2, m0, v0, 8, 8}, {1, 3, 3, m1, v1, 12, 12}};
    ckpt_config c = {CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8),
                     0};
    ckpt_write_desc d = {s, CKPT_FLOAT32, c, false, 0, e, 2, 0};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    ckpt_schema_free(s);
    return buf;
}

static void the_table_lists_it(void)
{
    CHECK(ckpt_family_count() == 8); /* the built-in seven, then the build's extra family */
    const ckpt_family *f = ckpt_family_at(7);
    CHECK(f && f == ckpt_family_get(CKPT_FAMILY_TLSF64B) && f == ckpt_family_of_magic((const uint8_t *)"TLSF64B"));
    CHECK(f && f->element_dtype == CKPT_FLOAT64 && f->role == CKPT_ROLE_MODEL);
    CHECK(ckpt_family_at(8) == NULL);
    CHECK(ckpt_dtype_width(CKPT_FLOAT64) == 8 && !strcmp(ckpt_dtype_name(CKPT_FLOAT64), "float64"));
}

static void it_is_read_and_reported(void)
{
    /* 0.1 is not a float32: the statistics see the float64 values */
    double a[2] = {0.1, -2.0}, b[3] = {1e300, NAN, 3.0};
    ckpt_buffer buf = state64(a, b);
    CHECK(buf.len == 7 + 16 + (8 + 8 + 8 + 16) + (8 + 8 + 8 + 24));
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, buf.data, buf.len);
    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_file *f = ckpt_open(&src, &opt);
    const ckpt_report *rep = ckpt_file_report(f);
    CHECK(rep->error.code == 0 && rep->family->id == CKPT_FAMILY_TLSF64B && rep->dtype == CKPT_FLOAT64 &&
          rep->tensors_len == 2);
    CHECK(rep->tensors_len == 2 && rep->tensors[0].values->min == -2.0 && rep->tensors[0].values->max == 0.1);
    CHECK(rep->tensors_len == 2 && rep->tensors[1].values->max == 1e300 && rep->tensors[1].values->nan == 1);
    char *json = ckpt_report_json(rep);
    CHECK(json && strstr(json, "{\"ok\":true,\"family\":\"TLSF64B\",\"name\":\"TorchLean float64 state "
                               "checkpoint\",\"kind\":\"state\",\"version\":1,"));
    CHECK(json &&
          strstr(json, "\"statistics\":true,\"dtype\":\"float64\",\"tensorCount\":2,\"offsets\":{\"tensors\":15},"
                       "\"tensors\":[{\"shape\":[2],\"count\":2,\"offset\":23,\"dataOffset\":47,"));
    CHECK(json && strstr(json, "\"warnings\":[\"StateIO: tensor 1 holds 1 NaN and 0 infinite values\"]"));
    free(json);
    double out[3];
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_file_read_tensor(f, 1, out, &err) == 0 && out[0] == 1e300 && isnan(out[1]) && out[2] == 3.0);
    /* an element count that does not match: the family's texts, its prefix */
    buf.data[7 + 16 + 16] = 3;
    ckpt_report *bad = inspect_bytes(buf.data, buf.len, 0);
    CHECK_STR(bad->error.message, "StateIO: checkpoint element count mismatch for [2] (file=3, expected=2)");
    ckpt_report_free(bad);
    /* an export: 8-byte elements */
    ckpt_buffer npy;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &npy);
    CHECK(ckpt_export_npy(f, 0, CKPT_NPY_VALUES, &sink, &err) == 0);
    CHECK(npy.len > 16 && contains(npy.data, npy.len, "'<f8'") && !memcmp(npy.data + npy.len - 16, a, 16));
    ckpt_buffer_free(&npy);
    ckpt_close(f);
    ckpt_buffer_free(&buf);
}

static void it_pairs_and_gives_health(void)
{
    double a[2] = {0.5, 0.25}, b[3] = {1, 2, INFINITY};
    ckpt_buffer sb = state64(a, b), ob = optimizer();
    ckpt_memory sm, om;
    ckpt_source ss, os;
    ckpt_source_memory(&ss, &sm, sb.data, sb.len);
    ckpt_source_memory(&os, &om, ob.data, ob.len);
    ckpt_inspect_options opt = {CKPT_INSPECT_STATS, NULL, NULL};
    ckpt_file *state = ckpt_open(&ss, &opt), *o = ckpt_open(&os, NULL);
    ckpt_pair_result *r = ckpt_pair(o, state, NULL, NULL);
    CHECK(r->pairs && r->warnings_len == 1);
    if (r->warnings_len == 1)
        CHECK_STR(r->warnings[0], "parameter 1: its saved values hold 0 NaN and 1 infinite values; the next optimizer "
                                  "step carries them into its moments");
    ckpt_pair_result_free(r);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *health = ckpt_health_json(o, state, NULL, &err);
    /* slot 0's parameters read as float64: rms of 0.5 and 0.25 */
    CHECK(health && strstr(health, "\"pairs\":true") &&
          strstr(health, "\"param\":{\"rms\":0.39528470752104744,\"maxAbs\":0.5,\"nan\":0,\"inf\":0}"));
    free(health);
    /* the texts that list the families of a role list it */
    r = ckpt_pair(o, o, NULL, NULL);
    CHECK_STR(r->error.message,
              "the second file is not a model-state file (TLSF32B, TLPF32B, safetensors, PyTorch or TLSF64B)");
    ckpt_pair_result_free(r);
    ckpt_close(state);
    ckpt_close(o);
    ckpt_buffer_free(&sb);
    ckpt_buffer_free(&ob);
}

static void a_foreign_file_names_it(void)
{
    double a[2] = {0, 0}, b[3] = {0, 0, 0};
    ckpt_buffer buf = state64(a, b);
    ckpt_schema *s = schema_of(2, (uint64_t[]){1, 2, 1, 3}, (uint8_t[]){1, 1}, (uint64_t[]){0, 1});
    ckpt_expected exp = {s, CKPT_DTYPE_ANY, NULL, -1, CKPT_FAMILY_TLADAMF, CKPT_READER_DEFAULT};
    ckpt_report *rep = load_bytes(buf.data, buf.len, &exp);
    CHECK(rep->error.code == CKPT_E_UNSUPPORTED_FAMILY);
    CHECK_STR(rep->error.hint,
              "this is a TorchLean float64 state checkpoint (TLSF64B, version 1, 2 tensors), not optimizer state");
    ckpt_report_free(rep);
    ckpt_schema_free(s);
    ckpt_buffer_free(&buf);
}

int main(void)
{
    static const test_case cases[] = {
        {"the table lists it", the_table_lists_it},
        {"it is read and reported", it_is_read_and_reported},
        {"it pairs and gives health", it_pairs_and_gives_health},
        {"a foreign file names it", a_foreign_file_names_it},
    };
    return RUN_ALL(cases);
}
