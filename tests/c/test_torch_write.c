/* TorchLean to PyTorch (src/torch_write.c): TLADAMF files written by the reference writer,
 * converted to torch.save zips into DIR (tests/c/torch_write_check.py then loads them with torch
 * and takes a step), and read back by ckptscope's own reader: the torch.save layout (members,
 * 64-byte aligned data), weights_only's allowlist, the state and group as written; the refusals
 * (no --lr, an invalid file, a state file that does not pair).
 * Usage: test_torch_write DIR */
#include "testutil.h"
#include "containers/zip.h"

#include <math.h>

static const char *dir;

typedef struct built {
    ckpt_buffer buf;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f;
} built;

static void open_built(built *x)
{
    ckpt_source_memory(&x->src, &x->mem, x->buf.data, x->buf.len);
    x->f = ckpt_open(&x->src, NULL);
}

static void close_built(built *x)
{
    ckpt_close(x->f);
    ckpt_buffer_free(&x->buf);
}

/* Slot k of a test file: moments that differ per element and per slot (exact in float32). */
static double m_at(size_t slot, size_t k) { return 0.125 * (double)(k + 1) - 0.5 * (double)slot - 0.3; }
static double v_at(size_t slot, size_t k) { return 0.0625 * (double)(k + 1) + 0.01 * (double)slot; }

typedef struct layout {
    size_t n;
    const uint64_t *shapes; /* rank, dims... per slot */
    const uint8_t *flags;
    const uint64_t *map;
    const uint64_t *steps; /* per slot (owners only read) */
} layout;

/* The reference writer's file of that layout; facts (for the python check) list per owner its
 * index, slot, step and the moments' bits. */
static void make(built *x, const layout *l, int dtype, ckpt_config c, FILE *facts)
{
    ckpt_schema *s = schema_of(l->n, l->shapes, l->flags, l->map);
    CHECK(s != NULL);
    ckpt_entry_in e[8];
    void *payloads[16];
    size_t ne = 0, np = 0;
    unsigned w = dtype == CKPT_FLOAT64 ? 8 : 4;
    for (size_t i = 0; i < l->n; i++) {
        if (!ckpt_schema_is_representative(s, i)) continue;
        bool big = false;
        uint64_t count = ckpt_schema_size(s, i, &big);
        uint8_t *m = malloc(count * w + 1), *v = malloc(count * w + 1);
        if (facts) fprintf(facts, "entry %zu %zu %llu\n", ne, i, (unsigned long long)l->steps[i]);
        for (size_t k = 0; k < count; k++) {
            if (dtype == CKPT_FLOAT64) {
                double a = m_at(i, k) / 3.0, b = v_at(i, k) / 7.0; /* not exact in float32 */
                memcpy(m + 8 * k, &a, 8), memcpy(v + 8 * k, &b, 8);
            } else {
                float a = (float)m_at(i, k), b = (float)v_at(i, k);
                memcpy(m + 4 * k, &a, 4), memcpy(v + 4 * k, &b, 4);
            }
        }
        if (facts) {
            fprintf(facts, "shape %zu", ne);
            for (uint64_t d = 0; d < ckpt_schema_rank(s, i); d++)
                fprintf(facts, " %llu", (unsigned long long)ckpt_schema_dims(s, i)[d]);
            fprintf(facts, "\nm %zu ", ne);
            for (size_t k = 0; k < count * w; k++) fprintf(facts, "%02x", m[k]);
            fprintf(facts, "\nv %zu ", ne);
            for (size_t k = 0; k < count * w; k++) fprintf(facts, "%02x", v[k]);
            fprintf(facts, "\n");
        }
        e[ne] = (ckpt_entry_in){i, l->steps[i], count, m, v, count * w, count * w};
        payloads[np++] = m, payloads[np++] = v;
        ne++;
    }
    if (facts) {
        fprintf(facts, "layout");
        for (size_t i = 0; i < l->n; i++) {
            uint64_t rep = ckpt_schema_representative(s, i);
            if (!ckpt_schema_requires_grad(s, i)) fprintf(facts, " frozen");
            else if (rep != i) fprintf(facts, " alias%llu", (unsigned long long)rep);
            else fprintf(facts, " owner");
        }
        fprintf(facts, "\nconfig %s %s %.17g %.17g %.17g %.17g\n", c.kind == CKPT_ADAMW ? "adamw" : "adam",
                dtype == CKPT_FLOAT64 ? "float64" : "float32", ckpt_double_from_bits(c.beta1),
                ckpt_double_from_bits(c.beta2), ckpt_double_from_bits(c.epsilon),
                ckpt_double_from_bits(c.weight_decay));
    }
    ckpt_write_desc d = {s, dtype, c, false, 0, e, ne, 0};
    ckpt_sink sink;
    memset(&x->buf, 0, sizeof x->buf);
    ckpt_sink_buffer(&sink, &x->buf);
    ckpt_error err = {0};
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    if (err.code) fprintf(stderr, "write: %s\n", err.message);
    ckpt_error_clear(&err);
    for (size_t k = 0; k < np; k++) free(payloads[k]);
    ckpt_schema_free(s);
    open_built(x);
}

static int to_torch(built *in, ckpt_file *state, const ckpt_torch_options *o, built *out, ckpt_error *err)
{
    ckpt_sink sink;
    memset(&out->buf, 0, sizeof out->buf);
    ckpt_sink_buffer(&sink, &out->buf);
    int rc = ckpt_convert_to_torch(in->f, state, o, &sink, err);
    if (!rc) open_built(out);
    return rc;
}

static void save(const built *x, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(x->buf.data, 1, x->buf.len, f) == x->buf.len);
    fclose(f);
}

static FILE *facts_file(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    return f;
}

/* [p (2,3), frozen (5), q (4), p again (tied to slot 0)]: owners 0 and 2, indices 0 and 1. */
static const uint64_t tied_shapes[] = {2, 2, 3, 1, 5, 1, 4, 2, 2, 3};
static const uint8_t tied_flags[] = {1, 0, 1, 1};
static const uint64_t tied_map[] = {0, CKPT_NONE, 2, 0};
static const uint64_t tied_steps[] = {3, 0, 7, 0};
static const layout tied = {4, tied_shapes, tied_flags, tied_map, tied_steps};

static ckpt_config adamw(void)
{
    return (ckpt_config){CKPT_ADAMW, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.95),
                         ckpt_bits_from_double(1e-8), ckpt_bits_from_double(0.01)};
}

static const ckpt_torch_options lr_1e3 = {true, 1e-3, "tied", NULL, NULL};

static char *report_of(const built *x) { return ckpt_report_json(ckpt_file_report(x->f)); }

/* The writer's pickle has floats (lr, betas, eps, weight_decay) and only BINFLOAT keeps them
 * floats: torch 1.13's weights-only unpickler stops at the first (NAME.wo holds its byte, for
 * torch_write_check.py to compare with torch.load's refusal); 2.6 and 2.14 take the file. */
static void weights_only_by(const char *json, const char *prefix, const char *name)
{
    char want[256];
    snprintf(want, sizeof want,
             "\"weightsOnlyBy\":[{\"torch\":\"1.13\",\"source\":\"1.13.1\",\"loads\":false,\"opcode\":\"BINFLOAT\","
             "\"check\":\"opcode\",\"member\":\"%s/data.pkl\",\"byte\":",
             prefix);
    const char *at = json ? strstr(json, want) : NULL;
    CHECK(at != NULL);
    if (!at) return;
    unsigned long long byte = 0;
    CHECK(sscanf(at + strlen(want), "%llu", &byte) == 1);
    snprintf(want, sizeof want, "\"reason\":\"Unsupported operand 71\"},{\"torch\":\"2.0 to 2.5\"");
    CHECK(strstr(at, want) != NULL);
    /* every release from 2.0 on takes it: both bounds of each range between do */
    CHECK(strstr(at, "{\"torch\":\"2.0 to 2.5\",\"source\":null,\"loads\":true,") != NULL);
    CHECK(strstr(at, "{\"torch\":\"2.7 to 2.13\",\"source\":null,\"loads\":true,") != NULL);
    CHECK(strstr(at, "{\"torch\":\"2.6\",\"source\":\"2.6.0\",\"loads\":true,") != NULL);
    CHECK(strstr(at, "{\"torch\":\"2.14 and later\",\"source\":\"2.14.1\",\"loads\":true,") != NULL);
    FILE *f = facts_file(name);
    if (f) fprintf(f, "BINFLOAT %llu\n", byte), fclose(f);
}

static void has(const char *json, const char *part)
{
    t_checks++;
    if (!json || !strstr(json, part)) {
        t_failures++;
        fprintf(stderr, "[%s] the report lacks %s\n", t_current, part);
    }
}

static void test_tied_adamw_f32(void)
{
    built in, out;
    FILE *facts = facts_file("tied.facts");
    make(&in, &tied, CKPT_FLOAT32, adamw(), facts);
    if (facts) fprintf(facts, "lr %.17g\n", lr_1e3.lr), fclose(facts);
    ckpt_error err = {0};
    CHECK(to_torch(&in, NULL, &lr_1e3, &out, &err) == 0);
    if (err.code) fprintf(stderr, "convert: %s\n", err.message);
    save(&out, "tied.pt");
    char *j = report_of(&out);
    has(j, "\"weightsOnly\":true");
    weights_only_by(j, "tied", "tied.wo");
    has(j, "\"globals\":[\"torch._utils._rebuild_tensor_v2\",\"torch.FloatStorage\",\"collections.OrderedDict\"]");
    has(j, "\"refused\":[]");
    has(j, "\"entryCount\":2");
    has(j, "\"kind\":\"adamw\"");
    free(j);
    /* the torch.save layout: the members in torch's order, every member's data at a multiple of 64 */
    ckpt_zip *z = NULL;
    CHECK(ckpt_zip_open(&out.src, &z, &err) == 0);
    const char *names[] = {"tied/data.pkl", "tied/byteorder", "tied/data/0", "tied/data/1", "tied/data/2",
                           "tied/data/3",   "tied/data/4",    "tied/data/5", "tied/version"};
    CHECK(z && z->count == 9);
    for (size_t k = 0; z && k < z->count && k < 9; k++) {
        CHECK_STR(z->members[k].name, names[k]);
        CHECK(ckpt_zip_resolve(z, k, &err) == 0);
        CHECK(z->members[k].data_offset % 64 == 0);
        CHECK(z->members[k].method == 0);
    }
    const ckpt_zip_member *bo = z ? ckpt_zip_find(z, "tied/byteorder") : NULL;
    CHECK(bo && bo->uncompressed == 6 && memcmp(out.buf.data + bo->data_offset, "little", 6) == 0);
    const ckpt_zip_member *m1 = z ? ckpt_zip_find(z, "tied/data/1") : NULL; /* index 0's exp_avg */
    float first;
    if (m1) memcpy(&first, out.buf.data + m1->data_offset, 4);
    CHECK(m1 && m1->uncompressed == 24 && first == (float)m_at(0, 0));
    const ckpt_zip_member *s3 = z ? ckpt_zip_find(z, "tied/data/3") : NULL; /* index 1's step */
    float step;
    if (s3) memcpy(&step, out.buf.data + s3->data_offset, 4);
    CHECK(s3 && s3->uncompressed == 4 && step == 7.0f);
    ckpt_zip_free(z);
    ckpt_error_clear(&err);
    close_built(&out);
    close_built(&in);
}

/* float64 moments, Adam, a step from 2^24 on (a float64 step tensor) and one below. */
static void test_adam_f64(void)
{
    const uint64_t shapes[] = {1, 3, 2, 2, 2};
    const uint8_t flags[] = {1, 1};
    const uint64_t steps[] = {(UINT64_C(1) << 24) + 5, 2};
    const layout l = {2, shapes, flags, NULL, steps};
    ckpt_config c = {CKPT_ADAM, ckpt_bits_from_double(0.8), ckpt_bits_from_double(0.99), ckpt_bits_from_double(1e-6),
                     0};
    built in, out;
    FILE *facts = facts_file("f64.facts");
    ckpt_torch_options o = {true, 0.05, "f64", NULL, NULL};
    make(&in, &l, CKPT_FLOAT64, c, facts);
    if (facts) fprintf(facts, "lr %.17g\n", o.lr), fclose(facts);
    ckpt_error err = {0};
    CHECK(to_torch(&in, NULL, &o, &out, &err) == 0);
    if (err.code) fprintf(stderr, "convert: %s\n", err.message);
    save(&out, "f64.pt");
    char *j = report_of(&out);
    has(j, "\"weightsOnly\":true");
    weights_only_by(j, "f64", "f64.wo");
    has(j, "\"globals\":[\"torch._utils._rebuild_tensor_v2\",\"torch.DoubleStorage\",\"collections.OrderedDict\","
           "\"torch.FloatStorage\"]");
    has(j, "\"kind\":\"adam\"");
    free(j);
    ckpt_error_clear(&err);
    close_built(&out);
    close_built(&in);
}

static void test_refused_without_lr(void)
{
    built in, out;
    make(&in, &tied, CKPT_FLOAT32, adamw(), NULL);
    ckpt_error err = {0};
    ckpt_torch_options o = {false, 0, NULL, NULL, NULL};
    CHECK(to_torch(&in, NULL, &o, &out, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "a PyTorch optimizer file holds the learning rate and TorchLean does not store it: give it "
                           "with --lr X");
    ckpt_error_clear(&err);
    ckpt_torch_options nan = {true, NAN, NULL, NULL, NULL};
    CHECK(to_torch(&in, NULL, &nan, &out, &err) == CKPT_E_INVALID_ARGUMENT);
    CHECK_STR(err.message, "--lr must be finite and nonnegative (torch refuses a negative learning rate)");
    ckpt_error_clear(&err);
    close_built(&in);
}

static void test_refused_invalid(void)
{
    built in, out;
    make(&in, &tied, CKPT_FLOAT32, adamw(), NULL);
    ckpt_close(in.f);
    in.buf.len -= 3; /* the last moment cut short */
    open_built(&in);
    ckpt_error err = {0};
    CHECK(to_torch(&in, NULL, &lr_1e3, &out, &err) == CKPT_E_NOT_READABLE);
    CHECK_STR(err.message, "cannot convert: the file is invalid");
    ckpt_error_clear(&err);
    close_built(&in);
}

/* A model-state file of the layout pairs; one with another shape is refused with the pairing's
 * first failure. */
static void state_of(built *x, const uint64_t *shapes, size_t n)
{
    ckpt_schema *s = schema_of(n, shapes, NULL, NULL);
    const void *values[4];
    uint64_t bytes[4];
    float zeros[8] = {0};
    for (size_t i = 0; i < n; i++) {
        bool big;
        bytes[i] = 4 * ckpt_schema_size(s, i, &big);
        values[i] = zeros;
    }
    ckpt_sink sink;
    memset(&x->buf, 0, sizeof x->buf);
    ckpt_sink_buffer(&sink, &x->buf);
    ckpt_error err = {0};
    CHECK(ckpt_state_write(CKPT_FAMILY_TLSF32B, s, values, bytes, &sink, &err) == 0);
    ckpt_error_clear(&err);
    ckpt_schema_free(s);
    open_built(x);
}

static void test_state_pairs_or_refused(void)
{
    built in, good, bad, out;
    make(&in, &tied, CKPT_FLOAT32, adamw(), NULL);
    state_of(&good, tied_shapes, 4);
    const uint64_t other[] = {2, 2, 3, 1, 5, 1, 6, 2, 2, 3};
    state_of(&bad, other, 4);
    ckpt_error err = {0};
    CHECK(to_torch(&in, good.f, &lr_1e3, &out, &err) == 0);
    if (!err.code) close_built(&out);
    ckpt_error_clear(&err);
    CHECK(to_torch(&in, bad.f, &lr_1e3, &out, &err) != 0);
    CHECK(err.code == CKPT_E_PAIR_SHAPE);
    CHECK_STR(err.message, "parameter 2: state shape [6] differs from the optimizer's #[4]");
    CHECK_STR(err.hint, "convert checks the pair as `check --state` does: give the model-state file of this "
                        "checkpoint, or leave --state out");
    ckpt_error_clear(&err);
    close_built(&bad);
    close_built(&good);
    close_built(&in);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_torch_write DIR\n");
        return 2;
    }
    dir = argv[1];
    const test_case cases[] = {
        {"tied AdamW float32 to torch.save", test_tied_adamw_f32},
        {"float64 Adam with a float64 step to torch.save", test_adam_f64},
        {"refused without a learning rate", test_refused_without_lr},
        {"an invalid file is refused", test_refused_invalid},
        {"a state file that does not pair is refused", test_state_pairs_or_refused},
    };
    return RUN_ALL(cases);
}
