/* Writes the seed corpus: valid files of every version and dtype, each a different layout,
 * plus inputs for the load and round-trip targets. Usage: make_corpus DIR */
#include "ckptscope.h"
#include "containers/zip.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int save(const char *dir, const char *target, const char *name, const void *prefix, size_t prefix_len,
                const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", dir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f) return perror(path), 1;
    fwrite(prefix, 1, prefix_len, f);
    fwrite(data, 1, len, f);
    return fclose(f) != 0;
}

/* ---- fuzz_deepspeed's seeds: the fixture folders (tests/fixtures/deepspeed, CKPT_DS_FIXTURES)
 * as its input, records [name length][name][size, 4 bytes LE][bytes] of each file two levels
 * deep by its path in the folder; each tag folder alone too, and a model states file with one
 * partition. ---- */
typedef struct ds_buf {
    unsigned char *data;
    size_t len, cap;
} ds_buf;

static void ds_put(ds_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) abort();
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void ds_record(ds_buf *b, const char *path, const char *name)
{
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode) || strlen(name) > 255) return;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *d = malloc(n > 0 ? (size_t)n : 1);
    size_t got = d ? fread(d, 1, (size_t)n, f) : 0;
    fclose(f);
    unsigned char nl = (unsigned char)strlen(name), size[4];
    for (int k = 0; k < 4; k++) size[k] = (unsigned char)(got >> (8 * k));
    ds_put(b, &nl, 1);
    ds_put(b, name, nl);
    ds_put(b, size, 4);
    ds_put(b, d, got);
    free(d);
}

static int ds_names(const char *dir, char names[][256], int cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < cap;)
        if (e->d_name[0] != '.') snprintf(names[n++], 256, "%s", e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)n, 256, (int (*)(const void *, const void *))strcmp);
    return n;
}

static int deepspeed_seeds(const char *out)
{
    int failed = 0;
    char folders[32][256];
    int nf = ds_names(CKPT_DS_FIXTURES, folders, 32);
    for (int k = 0; k < nf; k++) {
        char dir[1536];
        snprintf(dir, sizeof dir, "%s/%s", CKPT_DS_FIXTURES, folders[k]);
        struct stat st;
        if (stat(dir, &st) || !S_ISDIR(st.st_mode)) continue;
        ds_buf all = {0};
        char top[32][256];
        int nt = ds_names(dir, top, 32);
        for (int t = 0; t < nt; t++) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, top[t]);
            if (stat(path, &st)) continue;
            if (!S_ISDIR(st.st_mode)) {
                ds_record(&all, path, top[t]);
                continue;
            }
            ds_buf tag = {0}, pair = {0};
            bool took = false;
            char files[64][256];
            int nfiles = ds_names(path, files, 64);
            for (int j = 0; j < nfiles; j++) {
                char fp[2560], rel[600];
                snprintf(fp, sizeof fp, "%s/%s", path, files[j]);
                snprintf(rel, sizeof rel, "%s/%s", top[t], files[j]);
                ds_record(&all, fp, rel);
                ds_record(&tag, fp, files[j]);
                /* the model states with the first partition (a rank missing) */
                bool optim = strstr(files[j], "optim_states") != NULL;
                if (strstr(files[j], "model_states") || (optim && !took)) ds_record(&pair, fp, files[j]);
                took |= optim;
            }
            char name[1400];
            snprintf(name, sizeof name, "%s-%s", folders[k], top[t]);
            failed |= save(out, "deepspeed", name, "", 0, tag.data, tag.len);
            snprintf(name, sizeof name, "%s-%s-pair", folders[k], top[t]);
            failed |= save(out, "deepspeed", name, "", 0, pair.data, pair.len);
            free(tag.data);
            free(pair.data);
        }
        failed |= save(out, "deepspeed", folders[k], "", 0, all.data, all.len);
        free(all.data);
    }
    return failed;
}

/* ---- fuzz_dcp's seeds: torch 1.13's DCP folder (tests/fixtures/dcp-torch113, CKPT_DCP_FIXTURE)
 * as its input, records of each file at the folder's top; and .metadata alone ---- */
static int dcp_seeds(const char *out)
{
    static const char *const names[] = {".metadata", "__0_0.distcp", "__1_0.distcp"};
    ds_buf all = {0}, meta = {0};
    for (size_t k = 0; k < 3; k++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CKPT_DCP_FIXTURE, names[k]);
        ds_record(&all, path, names[k]);
        if (!k) ds_record(&meta, path, names[k]);
    }
    int failed = save(out, "dcp", "dcp-torch113", "", 0, all.data, all.len);
    failed |= save(out, "dcp", "metadata-only", "", 0, meta.data, meta.len);
    free(all.data);
    free(meta.data);
    return failed;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fprintf(stderr, "usage: make_corpus DIR\n"), 2;
    /* [p=2x2 trainable, frozen [3], p tied to 0, scalar] */
    uint64_t ranks[] = {2, 1, 2, 0}, dims[] = {2, 2, 3, 2, 2};
    uint8_t flags[] = {1, 0, 1, 1};
    uint64_t tied[] = {0, CKPT_NONE, 0, 3}, untied[] = {0, CKPT_NONE, 2, 3};
    float m32[4] = {0.5f, -0.25f, 1e-30f, 0}, v32[4] = {0.25f, 0.125f, 1e-38f, 0};
    double m64[4] = {0.5, -0.25, 1e-300, 0}, v64[4] = {0.25, 0.125, 5e-324, 0};
    struct {
        const char *name;
        uint64_t *map;
        int dtype;
        bool counter;
        uint64_t version;
    } files[] = {
        {"v2.ckpt", untied, CKPT_FLOAT32, false, 0},
        {"v3.ckpt", tied, CKPT_FLOAT32, false, 0},
        {"v4.ckpt", tied, CKPT_FLOAT32, true, 0},
        {"v5-f64.ckpt", tied, CKPT_FLOAT64, true, 0},
        {"v5-f64-nocounter.ckpt", untied, CKPT_FLOAT64, false, 0},
        {"v5-f32.ckpt", tied, CKPT_FLOAT32, false, 5},
    };
    int failed = 0;
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        ckpt_schema *s = ckpt_schema_new(4, ranks, dims, 4, flags, files[k].map, 4);
        bool f64 = files[k].dtype == CKPT_FLOAT64;
        const void *m = f64 ? (const void *)m64 : (const void *)m32, *v = f64 ? (const void *)v64 : (const void *)v32;
        unsigned w = f64 ? 8 : 4;
        ckpt_entry_in e[3];
        size_t ne = 0;
        e[ne++] = (ckpt_entry_in){0, 3, 4, m, v, 4 * w, 4 * w};
        if (files[k].map == untied) e[ne++] = (ckpt_entry_in){2, 3, 4, m, v, 4 * w, 4 * w};
        e[ne++] = (ckpt_entry_in){3, 7, 1, m, v, w, w};
        ckpt_config c = {k % 2, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999), ckpt_bits_from_double(1e-8),
                         ckpt_bits_from_double(k % 2 ? 0.01 : 0.0)};
        ckpt_write_desc d = {s, files[k].dtype, c, files[k].counter, 31337, e, ne, files[k].version};
        ckpt_buffer buf;
        ckpt_sink sink;
        ckpt_sink_buffer(&sink, &buf);
        ckpt_error err = {0};
        if (ckpt_write(&d, &sink, &err)) {
            fprintf(stderr, "%s: %s\n", files[k].name, err.message);
            return 1;
        }
        failed |= save(argv[1], "inspect", files[k].name, "", 0, buf.data, buf.len);
        /* load: the layout prefix (4 slots as fuzz_load decodes them) then the file */
        uint8_t prefix[16];
        size_t p = 0;
        prefix[p++] = 4;
        prefix[p++] = 2 | 4 | 8; /* rank 2, trainable, map */
        prefix[p++] = 2;
        prefix[p++] = 2;
        prefix[p++] = 1; /* rank 1, frozen */
        prefix[p++] = 3;
        prefix[p++] = files[k].map == tied ? (2 | 4 | 8) : (2 | 4); /* tied to slot 0 */
        prefix[p++] = 2;
        prefix[p++] = 2;
        prefix[p++] = 4; /* scalar, trainable */
        prefix[p++] = 0; /* destination: any dtype, no config, counter unknown */
        failed |= save(argv[1], "load", files[k].name, prefix, p, buf.data, buf.len);
        uint8_t rt[64] = {4, 2 | 4, 2, 2, 1, 3, 2 | 4 | 8, 2, 2, 4, (uint8_t)(k * 0x13)};
        for (size_t j = 11; j < sizeof rt; j++) rt[j] = (uint8_t)(j * 37 + k);
        failed |= save(argv[1], "roundtrip", files[k].name, "", 0, rt, sizeof rt);
        ckpt_buffer_free(&buf);
        ckpt_schema_free(s);
    }
    /* state files: the shapes of fuzz_state's optimizer (2x3, 2x3 tied, 3), both families, each
     * destination family byte; a mismatched one; and the inspect target gets them too */
    uint64_t sranks[] = {2, 2, 1}, sdims[] = {2, 3, 2, 3, 3}, bad_dims[] = {2, 3, 3, 2, 3};
    float a[6] = {0.5f, -1, 2, 0, 1e-30f, 3}, b[6] = {0.5f, -1, 2, 0, 1e-30f, 3}, c3[3] = {1, -2, 3};
    const void *values[] = {a, b, c3};
    uint64_t lens[] = {24, 24, 12};
    for (int family = CKPT_FAMILY_TLSF32B; family <= CKPT_FAMILY_TLPF32B; family++) {
        for (int shapes = 0; shapes < 2; shapes++) {
            ckpt_schema *s = ckpt_schema_new(3, sranks, shapes ? bad_dims : sdims, 0, NULL, NULL, 0);
            ckpt_buffer buf;
            ckpt_sink sink;
            ckpt_sink_buffer(&sink, &buf);
            ckpt_error err = {0};
            if (ckpt_state_write(family, s, values, lens, &sink, &err)) {
                fprintf(stderr, "state: %s\n", err.message);
                return 1;
            }
            char name[64];
            snprintf(name, sizeof name, "%s%s.state", family == CKPT_FAMILY_TLSF32B ? "tlsf32b" : "tlpf32b",
                     shapes ? "-mismatched" : "");
            failed |= save(argv[1], "inspect", name, "", 0, buf.data, buf.len);
            for (uint8_t dest = 0; dest < 4; dest++) {
                char n2[80];
                snprintf(n2, sizeof n2, "%s-dest%d", name, dest);
                failed |= save(argv[1], "state", n2, &dest, 1, buf.data, buf.len);
            }
            ckpt_buffer_free(&buf);
            ckpt_schema_free(s);
        }
    }
    /* the container layers: a zip as the writer makes it, holding a pickle as torch.save writes
     * one (an OrderedDict of one tensor, rebuilt from storage 0), and pickles of every protocol */
    static const char torch_pickle[] =
        "\x80\x02\x63\x63ollections\nOrderedDict\nq\x00)Rq\x01X\x01\x00\x00\x00wq\x02\x63torch._utils\n"
        "_rebuild_tensor_v2\nq\x03((X\x07\x00\x00\x00storageq\x04\x63torch\nFloatStorage\nq\x05X\x01\x00\x00\x00"
        "0q\x06X\x03\x00\x00\x00"
        "cpuq\x07K\x04tq\x08QK\x00K\x02K\x02\x86q\tK\x02K\x01\x86q\n\x89h\x00)Rq\x0btq\x0cRq\rs.";
    static const char proto0[] = "(lp0\nI1\naF2.5\naS'x'\naVy\nacos\nsystem\np1\na(dp2\nI3\nI4\nsa.";
    static const char proto4[] = "\x80\x04\x95\x24\x00\x00\x00\x00\x00\x00\x00]\x94(\x8c\x01"
                                 "a\x94\x8c\x02os\x8c\x06system\x93\x8f(K\x01\x90\x8e\x01\x00\x00\x00\x00\x00\x00\x00"
                                 "ze.";
    static const char row[] = "\x80\x02\x8a\x0al\xfc\x9c"
                              "F\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.\x80\x02}q\x00.\x80\x02]q\x00.";
    const struct {
        const char *name, *data;
        size_t len;
    } pickles[] = {
        {"torch.pkl", torch_pickle, sizeof torch_pickle - 1},
        {"proto0.pkl", proto0, sizeof proto0 - 1},
        {"proto4.pkl", proto4, sizeof proto4 - 1},
        {"legacy-row.pkl", row, sizeof row - 1},
    };
    for (size_t k = 0; k < sizeof pickles / sizeof pickles[0]; k++)
        failed |= save(argv[1], "pickle", pickles[k].name, "", 0, pickles[k].data, pickles[k].len);
    /* a legacy torch.save file is pickles in a row, then the storages */
    for (size_t k = 0; k < sizeof pickles / sizeof pickles[0]; k++)
        failed |= save(argv[1], "torch", pickles[k].name, "", 0, pickles[k].data, pickles[k].len);
    {
        ckpt_buffer buf;
        ckpt_sink sink;
        ckpt_sink_buffer(&sink, &buf);
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_zip_writer w;
        ckpt_zip_writer_init(&w, &sink, &err);
        const char *members[][2] = {{"archive/data.pkl", torch_pickle},
                                    {"archive/data/0", "0123456789abcdef"},
                                    {"archive/version", "3\n"},
                                    {"archive/byteorder", "little"}};
        size_t lens[] = {sizeof torch_pickle - 1, 16, 2, 6};
        int rc = 0;
        for (size_t k = 0; k < 4 && !rc; k++) {
            rc = ckpt_zip_begin(&w, members[k][0]);
            if (!rc) rc = ckpt_zip_write(&w, members[k][1], lens[k]);
            if (!rc) rc = ckpt_zip_end(&w);
        }
        if (!rc) rc = ckpt_zip_finish(&w);
        ckpt_zip_writer_free(&w);
        if (rc) return fprintf(stderr, "zip: %s\n", err.message), 1;
        failed |= save(argv[1], "zip", "writer.zip", "", 0, buf.data, buf.len);
        failed |= save(argv[1], "zip", "prefixed.zip", "#!prefix\n", 9, buf.data, buf.len);
        failed |= save(argv[1], "torch", "writer.pt", "", 0, buf.data, buf.len);
        failed |= save(argv[1], "trainer", "torch.pt", "\0", 1, buf.data, buf.len);
        ckpt_buffer_free(&buf);
    }
    /* a Trainer's files: a TrainingArguments dataclass (NEWOBJ, BUILD of its fields, an enum
     * member by value and by name) in a torch.save zip; trainer_state.json; a model's index */
    {
        static const char args_pickle[] =
            "\x80\x02\x63transformers.training_args\nTrainingArguments\nq\x00)\x81q\x01}q\x02(X\x05\x00\x00\x00optimq"
            "\x03\x63transformers.training_args\nOptimizerNames\nq\x04X\x0b\x00\x00\x00"
            "adamw_torchq\x05\x85Rq\x06"
            "X\x0d\x00\x00\x00learning_rateq\x07G?\x33\xa9*0U2aX\x0c\x00\x00\x00weight_decayK\x00X\x11\x00\x00\x00"
            "lr_scheduler_type\x63__builtin__\ngetattr\nq\x08\x63transformers.training_args\nOptimizerNames\nX\x0b\x00"
            "\x00\x00PAGED_ADAMW\x86RX\x0a\x00\x00\x00"
            "adam_beta1Nub.";
        ckpt_buffer buf;
        ckpt_sink sink;
        ckpt_sink_buffer(&sink, &buf);
        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_zip_writer w;
        ckpt_zip_writer_init(&w, &sink, &err);
        int rc = ckpt_zip_begin(&w, "training_args/data.pkl");
        if (!rc) rc = ckpt_zip_write(&w, args_pickle, sizeof args_pickle - 1);
        if (!rc) rc = ckpt_zip_end(&w);
        if (!rc) rc = ckpt_zip_finish(&w);
        ckpt_zip_writer_free(&w);
        if (rc) return fprintf(stderr, "zip: %s\n", err.message), 1;
        failed |= save(argv[1], "trainer", "training_args.bin", "\0", 1, buf.data, buf.len);
        ckpt_buffer_free(&buf);
        static const char state[] =
            "{\"global_step\": 20, \"log_history\": [{\"learning_rate\": 0.00023999999999999998, \"loss\": NaN, "
            "\"step\": 10}, {\"eval_loss\": Infinity, \"step\": 10}, {\"learning_rate\": -Infinity, \"step\": 20}]}";
        failed |= save(argv[1], "trainer", "trainer_state.json", "\1", 1, state, sizeof state - 1);
        failed |= save(argv[1], "trainer", "trainer_state-unsized.json", "\2", 1, state, sizeof state - 1);
        static const char index[] = "{\"metadata\": {\"total_size\": 8}, \"weight_map\": {\"b\": \"m-2.safetensors\", "
                                    "\"a\": \"m-1.safetensors\", \"c\": \"m-2.safetensors\"}}";
        failed |= save(argv[1], "trainer", "index.json", "\3", 1, index, sizeof index - 1);
    }
    /* safetensors files: every dtype, metadata, and names the pair target can find */
    static const char *headers[] = {
        "{\"__metadata__\":{\"format\":\"pt\"},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
        "\"data_offsets\":[0,24]},\"a.bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}",
        "{\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[0,6]},\"h\":{\"dtype\":\"F16\",\"shape\":[2,3],"
        "\"data_offsets\":[6,18]},\"i\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[18,26]},\"u\":{\"dtype\":"
        "\"U8\",\"shape\":[2],\"data_offsets\":[26,28]},\"e\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":"
        "[28,30]},\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[30,38]}}",
        "{\"\\u00e9t\\ud83d\\ude00\":{\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[0,0]}}  ",
    };
    static const size_t data_len[] = {36, 38, 0};
    for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++) {
        uint8_t file[1024] = {0};
        size_t n = strlen(headers[k]);
        for (int j = 0; j < 8; j++) file[j] = (uint8_t)((uint64_t)n >> (8 * j));
        memcpy(file + 8, headers[k], n);
        for (size_t j = 0; j < data_len[k]; j++) file[8 + n + j] = (uint8_t)(j * 37);
        char name[64];
        snprintf(name, sizeof name, "seed%zu.safetensors", k);
        failed |= save(argv[1], "safetensors", name, "", 0, file, 8 + n + data_len[k]);
        failed |= save(argv[1], "inspect", name, "", 0, file, 8 + n + data_len[k]);
    }
    failed |= deepspeed_seeds(argv[1]);
    failed |= dcp_seeds(argv[1]);
    return failed;
}
