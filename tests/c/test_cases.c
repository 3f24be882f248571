/* The shared case table (tests/cases/cases.json) run against the C library: each case's file is
 * built from its base description by the library's writers, patched as the recipe says, then
 * inspected, loaded into the case's layout, or paired with its state file; the outcome must be
 * exactly the table's: code, text, offset, field length, slot, hint, warnings. The JS API and
 * the CLI suites read the same table (tests/js/cases.test.mjs). */
#include "minijson.h"
#include "testutil.h"

#include <math.h>

static const jvalue *bases;

/* ---- files from the table's descriptions ---- */

static double fill_value(const jvalue *v) { return json_double(v); }

static ckpt_config config_of(const jvalue *c)
{
    const char *kind = json_get(c, "kind")->text;
    ckpt_config out = {strcmp(kind, "adamw") == 0 ? CKPT_ADAMW : CKPT_ADAM, 0, 0, 0, 0};
    out.beta1 = ckpt_bits_from_double(json_double(json_get(c, "beta1")));
    out.beta2 = ckpt_bits_from_double(json_double(json_get(c, "beta2")));
    out.epsilon = ckpt_bits_from_double(json_double(json_get(c, "epsilon")));
    out.weight_decay =
        json_is_null(json_get(c, "weightDecay")) ? 0 : ckpt_bits_from_double(json_double(json_get(c, "weightDecay")));
    return out;
}

/* A schema from "shapes", "requiresGrad" (absent: shapes only) and "representatives". */
static ckpt_schema *schema_from(const jvalue *shapes, const jvalue *flags, const jvalue *reps)
{
    size_t n = shapes->len, nd = 0;
    uint64_t *ranks = calloc(n + 1, sizeof *ranks);
    for (size_t i = 0; i < n; i++) nd += shapes->items[i]->len;
    uint64_t *dims = calloc(nd + 1, sizeof *dims);
    nd = 0;
    for (size_t i = 0; i < n; i++) {
        ranks[i] = shapes->items[i]->len;
        for (size_t k = 0; k < shapes->items[i]->len; k++) dims[nd++] = json_u64(shapes->items[i]->items[k]);
    }
    size_t nf = json_is_null(flags) ? 0 : flags->len;
    uint8_t *f = calloc(nf + 1, 1);
    for (size_t i = 0; i < nf; i++) f[i] = flags->items[i]->b;
    uint64_t *map = NULL;
    size_t nm = 0;
    if (!json_is_null(reps)) {
        nm = reps->len;
        map = calloc(nm + 1, sizeof *map);
        for (size_t i = 0; i < nm; i++) map[i] = json_is_null(reps->items[i]) ? CKPT_NONE : json_u64(reps->items[i]);
    }
    ckpt_schema *s = ckpt_schema_new(n, ranks, dims, nf, f, map, nm);
    free(ranks);
    free(dims);
    free(f);
    free(map);
    if (!s) abort();
    return s;
}

static ckpt_buffer write_optimizer(const jvalue *d)
{
    ckpt_schema *s = schema_from(json_get(d, "shapes"), json_get(d, "requiresGrad"), json_get(d, "representatives"));
    const jvalue *dt = json_get(d, "dtype");
    int dtype = !json_is_null(dt) && !strcmp(dt->text, "float64") ? CKPT_FLOAT64 : CKPT_FLOAT32;
    unsigned width = dtype == CKPT_FLOAT64 ? 8 : 4;
    const jvalue *entries = json_get(d, "entries");
    size_t ne = entries->len;
    ckpt_entry_in *in = calloc(ne + 1, sizeof *in);
    void **payloads = calloc(2 * ne + 1, sizeof *payloads);
    for (size_t k = 0; k < ne; k++) {
        const jvalue *e = entries->items[k];
        uint64_t id = json_u64(json_get(e, "id")), count = ckpt_schema_size(s, (size_t)id, NULL);
        for (int j = 0; j < 2; j++) {
            double x = fill_value(json_get(e, j ? "v" : "m"));
            uint8_t *p = calloc((size_t)count * width + 1, 1);
            for (uint64_t i = 0; i < count; i++) {
                if (width == 8) memcpy(p + 8 * i, &x, 8);
                else {
                    float f = (float)x;
                    memcpy(p + 4 * i, &f, 4);
                }
            }
            payloads[2 * k + j] = p;
        }
        in[k] = (ckpt_entry_in){
            id,           json_u64(json_get(e, "step")), count, payloads[2 * k], payloads[2 * k + 1], count * width,
            count * width};
    }
    const jvalue *counter = json_get(d, "randomCounter");
    ckpt_write_desc desc = {s,  dtype, config_of(json_get(d, "config")), !json_is_null(counter), json_u64(counter),
                            in, ne,    json_u64(json_get(d, "version"))};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (ckpt_write(&desc, &sink, &err)) {
        fprintf(stderr, "base does not write: %s\n", err.message);
        abort();
    }
    for (size_t k = 0; k < 2 * ne; k++) free(payloads[k]);
    free(payloads);
    free(in);
    ckpt_schema_free(s);
    return buf;
}

static ckpt_buffer write_state(const jvalue *d)
{
    ckpt_schema *s = schema_from(json_get(d, "shapes"), NULL, NULL);
    size_t n = ckpt_schema_count(s);
    const jvalue *values = json_get(d, "values");
    void **data = calloc(n + 1, sizeof *data);
    uint64_t *bytes = calloc(n + 1, sizeof *bytes);
    for (size_t i = 0; i < n; i++) {
        uint64_t count = ckpt_schema_size(s, i, NULL);
        float *p = calloc((size_t)count + 1, sizeof *p);
        const jvalue *v = values->items[i];
        for (uint64_t k = 0; k < count; k++) p[k] = (float)fill_value(v->type == JARR ? v->items[k] : v);
        data[i] = p;
        bytes[i] = 4 * count;
    }
    int family = !strcmp(json_get(d, "family")->text, "TLPF32B") ? CKPT_FAMILY_TLPF32B : CKPT_FAMILY_TLSF32B;
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    if (ckpt_state_write(family, s, (const void *const *)data, bytes, &sink, &err)) {
        fprintf(stderr, "state base does not write: %s\n", err.message);
        abort();
    }
    for (size_t i = 0; i < n; i++) free(data[i]);
    free(data);
    free(bytes);
    ckpt_schema_free(s);
    return buf;
}

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t k = 0; k < n; k++) {
        char b[3] = {hex[2 * k], hex[2 * k + 1], 0};
        out[k] = (uint8_t)strtoul(b, NULL, 16);
    }
    return n;
}

/* The recipe: base bytes (or "hex"/"text"), then ranges, patch, bytes, truncate, append. */
static bytes *make_file(const jvalue *recipe)
{
    bytes *b = b_new();
    const jvalue *hex = json_get(recipe, "hex"), *text = json_get(recipe, "text");
    if (hex) {
        uint8_t tmp[4096];
        b_raw(b, tmp, unhex(hex->text, tmp));
        return b;
    }
    if (text) {
        b_raw(b, text->text, strlen(text->text));
        return b;
    }
    const jvalue *base = json_get(bases, json_get(recipe, "base")->text);
    ckpt_buffer buf = strcmp(json_get(base, "kind")->text, "state") ? write_optimizer(base) : write_state(base);
    const jvalue *ranges = json_get(recipe, "ranges");
    if (ranges) {
        for (size_t k = 0; k < ranges->len; k++) {
            uint64_t from = json_u64(ranges->items[k]->items[0]), to = json_u64(ranges->items[k]->items[1]);
            b_raw(b, buf.data + from, (size_t)(to - from));
        }
    } else {
        b_raw(b, buf.data, buf.len);
    }
    ckpt_buffer_free(&buf);
    const jvalue *patch = json_get(recipe, "patch");
    for (size_t k = 0; patch && k < patch->len; k++) {
        uint64_t at = json_u64(patch->items[k]->items[0]), v = json_u64(patch->items[k]->items[1]);
        for (int j = 0; j < 8; j++) b->data[at + j] = (uint8_t)(v >> (8 * j));
    }
    const jvalue *raw = json_get(recipe, "bytes");
    for (size_t k = 0; raw && k < raw->len; k++)
        unhex(raw->items[k]->items[1]->text, b->data + json_u64(raw->items[k]->items[0]));
    const jvalue *truncate = json_get(recipe, "truncate");
    if (truncate) b->len = (size_t)json_u64(truncate);
    const jvalue *append = json_get(recipe, "append");
    if (append) {
        uint8_t tmp[256];
        b_raw(b, tmp, unhex(append->text, tmp));
    }
    return b;
}

/* ---- layouts ---- */

typedef struct layout {
    ckpt_schema *schema;
    ckpt_config config;
    ckpt_expected exp;
} layout;

static const jvalue *spec_field(const jvalue *spec, const jvalue *like, const char *key)
{
    const jvalue *v = json_get(spec, key);
    return v ? v : json_get(like, key);
}

static void make_layout(const jvalue *spec, layout *l)
{
    const jvalue *like = json_get(spec, "like") ? json_get(bases, json_get(spec, "like")->text) : NULL;
    bool state = like && !strcmp(json_get(like, "kind")->text, "state");
    l->schema = schema_from(spec_field(spec, like, "shapes"),
                            state && !json_get(spec, "requiresGrad") ? NULL : spec_field(spec, like, "requiresGrad"),
                            state ? json_get(spec, "representatives") : spec_field(spec, like, "representatives"));
    const jvalue *dtype = json_get(spec, "dtype"), *config = json_get(spec, "config"),
                 *keeps = json_get(spec, "keepsRandomCounter");
    const jvalue *family = json_get(spec, "family");
    if (config) l->config = config_of(config);
    l->exp = (ckpt_expected){l->schema,
                             json_is_null(dtype)               ? CKPT_DTYPE_ANY
                             : !strcmp(dtype->text, "float64") ? CKPT_FLOAT64
                                                               : CKPT_FLOAT32,
                             config ? &l->config : NULL,
                             json_is_null(keeps) ? -1 : keeps->b,
                             !family                            ? CKPT_FAMILY_ANY
                             : !strcmp(family->text, "TLADAMF") ? CKPT_FAMILY_TLADAMF
                             : !strcmp(family->text, "TLSF32B") ? CKPT_FAMILY_TLSF32B
                                                                : CKPT_FAMILY_TLPF32B,
                             CKPT_READER_DEFAULT};
}

/* ---- outcomes ---- */

static void check_u64(const char *what, uint64_t got, const jvalue *want)
{
    uint64_t w = json_is_null(want) ? CKPT_NONE : json_u64(want);
    t_checks++;
    if (got != w) {
        t_failures++;
        fprintf(stderr, "[%s] %s %llu, want %llu\n", t_current, what, (unsigned long long)got, (unsigned long long)w);
    }
}

static void check_outcome(const ckpt_error *err, const jvalue *want)
{
    int code = (int)json_u64(json_get(want, "code"));
    t_checks++;
    if (err->code != code) {
        t_failures++;
        fprintf(stderr, "[%s] code %d (%s), want %d\n", t_current, err->code, err->message ? err->message : "", code);
        return;
    }
    if (!code) return;
    CHECK_STR(err->message, json_get(want, "message")->text);
    check_u64("offset", err->offset, json_get(want, "offset"));
    check_u64("slot", err->slot, json_get(want, "slot"));
    if (json_get(want, "length")) check_u64("length", err->length, json_get(want, "length"));
    const jvalue *hint = json_get(want, "hint");
    if (hint) CHECK_STR(err->hint ? err->hint : "(no hint)", json_is_null(hint) ? "(no hint)" : hint->text);
    const jvalue *subject = json_get(want, "subject");
    CHECK_STR(err->subject == CKPT_SUBJECT_EXPECTED ? "expected" : "file", subject ? subject->text : "file");
    if (json_get(want, "configDiff")) CHECK(err->config_diff.present);
}

/* The text after the last "error": of a JSON object (its error member and the closing brace). */
static const char *error_member(const char *json)
{
    const char *last = NULL;
    for (const char *p = json; (p = strstr(p, "\"error\":")); p++) last = p;
    return last ? last : "(no error member)";
}

/* Health asks pairing (format.md 6): its "pairs" and "error" are ckpt_pair's verdict and first
 * failure, or, when the files cannot be paired at all, the same refusal. */
static void check_health_agrees(const ckpt_file *opt, const ckpt_file *state, const ckpt_pair_result *r)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    char *health = ckpt_health_json(opt, state, NULL, &err);
    char *pair = ckpt_pair_json(r);
    if (!r->error.code) {
        CHECK(health != NULL);
        if (health) {
            CHECK(strstr(health, r->pairs ? "\"pairs\":true" : "\"pairs\":false") != NULL);
            CHECK_STR(error_member(health), error_member(pair));
        }
    } else if (r->invalid) {
        /* an invalid file: it never pairs, and health reads nothing of it */
        CHECK(health == NULL && err.code == CKPT_E_NOT_READABLE);
    } else {
        /* no verdict: health refuses too, for the same reason (a wrong family in the same words) */
        CHECK(health == NULL && err.code == r->error.code);
        if (err.code == CKPT_E_WRONG_FAMILY) CHECK_STR(err.message, r->error.message);
    }
    free(health);
    free(pair);
    ckpt_error_clear(&err);
}

static void check_warnings(char *const *got, size_t n, const jvalue *want)
{
    if (!want) return;
    t_checks++;
    if (n != want->len) {
        t_failures++;
        fprintf(stderr, "[%s] %zu warnings, want %zu\n", t_current, n, want->len);
        for (size_t k = 0; k < n; k++) fprintf(stderr, "  got %s\n", got[k]);
        return;
    }
    for (size_t k = 0; k < n; k++) CHECK_STR(got[k], want->items[k]->text);
}

static const jvalue *current;

static ckpt_source source_of(bytes *b, ckpt_memory *mem, uint8_t **copy)
{
    /* an exact-size heap copy, so ASan sees any read past the data */
    *copy = malloc(b->len ? b->len : 1);
    if (!*copy) abort();
    if (b->len) memcpy(*copy, b->data, b->len);
    ckpt_source src;
    ckpt_source_memory(&src, mem, *copy, b->len);
    return src;
}

static void run_case(void)
{
    const jvalue *c = current;
    bytes *b = make_file(json_get(c, "file"));
    ckpt_memory mem;
    uint8_t *copy;
    ckpt_source src = source_of(b, &mem, &copy);
    const jvalue *want;
    if ((want = json_get(c, "inspect"))) {
        const jvalue *stats = json_get(json_get(c, "file"), "stats");
        ckpt_inspect_options opt = {stats && stats->b ? CKPT_INSPECT_STATS : 0, NULL, NULL};
        ckpt_report *rep = ckpt_inspect(&src, &opt);
        check_outcome(&rep->error, want);
        check_warnings(rep->warnings, rep->warnings_len, json_get(want, "warnings"));
        /* which readers can read it at all (format.md 8): each reader's own verdict */
        const jvalue *readers = json_get(want, "readers");
        CHECK(!readers || rep->tladamf.readers);
        for (size_t k = 0; readers && rep->tladamf.readers && k < readers->len; k++) {
            int id = ckpt_reader_by_name(readers->keys[k]);
            CHECK(id > 0);
            if (id <= 0) continue;
            check_outcome(&rep->tladamf.readers[id - 1].error, readers->items[k]);
            CHECK(rep->tladamf.readers[id - 1].reads == (rep->tladamf.readers[id - 1].error.code == 0));
        }
        ckpt_report_free(rep);
    } else if ((want = json_get(c, "load"))) {
        layout l = {0};
        make_layout(json_get(c, "expect"), &l);
        ckpt_report *rep = ckpt_load(&src, &l.exp);
        check_outcome(&rep->error, want);
        check_warnings(rep->warnings, rep->warnings_len, json_get(want, "warnings"));
        ckpt_report_free(rep);
        ckpt_schema_free(l.schema);
    } else if ((want = json_get(c, "readers"))) {
        /* the same file and destination through each TorchLean reader (format.md 8) */
        layout l = {0};
        make_layout(json_get(c, "expect"), &l);
        CHECK(want->len == CKPT_READER_COUNT);
        for (size_t k = 0; k < want->len; k++) {
            l.exp.reader = ckpt_reader_by_name(want->keys[k]);
            CHECK(l.exp.reader > 0);
            ckpt_report *rep = ckpt_load(&src, &l.exp);
            check_outcome(&rep->error, want->items[k]);
            check_warnings(rep->warnings, rep->warnings_len, json_get(want->items[k], "warnings"));
            ckpt_report_free(rep);
        }
        ckpt_schema_free(l.schema);
    } else if ((want = json_get(c, "pair"))) {
        bytes *sb = make_file(json_get(c, "state"));
        ckpt_memory smem;
        uint8_t *scopy;
        ckpt_source ssrc = source_of(sb, &smem, &scopy);
        /* a state file whose statistics were computed when opened ("stats": the values read anyway) */
        const jvalue *sstats = json_get(json_get(c, "state"), "stats");
        ckpt_inspect_options sopt = {sstats && sstats->b ? CKPT_INSPECT_STATS : 0, NULL, NULL};
        ckpt_file *opt = ckpt_open(&src, NULL), *state = ckpt_open(&ssrc, &sopt);
        ckpt_pair_result *r = ckpt_pair(opt, state, NULL, NULL);
        const ckpt_error *verdict = r->error.code || !r->failures_len ? &r->error : &r->failures[0];
        check_outcome(verdict, want);
        CHECK(r->pairs == (json_u64(json_get(want, "code")) == 0));
        const jvalue *failures = json_get(want, "failures");
        if (failures) {
            CHECK(r->failures_len == failures->len);
            for (size_t k = 0; k < r->failures_len && k < failures->len; k++)
                check_outcome(&r->failures[k], failures->items[k]);
        }
        check_warnings(r->warnings, r->warnings_len, json_get(want, "warnings"));
        check_health_agrees(opt, state, r);
        ckpt_pair_result_free(r);
        ckpt_close(opt);
        ckpt_close(state);
        free(scopy);
        b_free(sb);
    }
    free(copy);
    b_free(b);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "tests/cases/cases.json";
    char *text = json_read_file(path);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    jvalue *table = json_parse(text);
    free(text);
    if (!table) {
        fprintf(stderr, "%s is not valid JSON\n", path);
        return 2;
    }
    bases = json_get(table, "bases");
    const jvalue *cases = json_get(table, "cases");
    test_case *run = calloc(cases->len, sizeof *run);
    /* run_tests takes plain function pointers: one trampoline, the case in `current` */
    int failed = 0;
    for (size_t k = 0; k < cases->len; k++) {
        current = cases->items[k];
        run[0] = (test_case){json_get(current, "name")->text, run_case};
        int before = t_failures;
        t_current = run[0].name;
        run_case();
        if (t_failures != before) {
            failed++;
            fprintf(stderr, "FAIL %s\n", run[0].name);
        }
    }
    printf("%d checks\n%zu cases, %d failed\n", t_checks, cases->len, failed);
    free(run);
    json_free(table);
    return failed ? 1 : 0;
}
