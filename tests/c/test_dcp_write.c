/* DCP folders written from an optimizer.pt and its model (src/writers/dcp_write.c). The
 * .metadata writer alone: what it names and how its pickle reads back. Then the files of
 * tests/c/dcp_write_check.py's seed written as DIR/dcp113/ and DIR/dcp2/ (the data file, then
 * .metadata through .metadata.tmp renamed), which that script loads with torch; and the refusals. */
#define _DEFAULT_SOURCE /* realpath */
#include "testutil.h"
#include "base/base.h"
#include "containers/pickle.h"
#include "writers/dcp_write.h"

#include <stdlib.h>
#include <sys/stat.h>

static const char *seed_dir, *fixture_dir;

/* ---- .metadata alone ---- */

static const uint64_t DIMS[2] = {2, 3};

/* where the bytes lie in the pickle, NULL when nowhere */
static const char *find(const strbuf *sb, const char *lit, size_t n)
{
    for (size_t k = 0; n <= sb->len && k <= sb->len - n; k++)
        if (!memcmp(sb->data + k, lit, n)) return sb->data + k;
    return NULL;
}
#define HAS(sb, lit) find(sb, lit, sizeof lit - 1)

static char *globals_of(const strbuf *sb, int *protocol)
{
    ckpt_pickle *p = NULL;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    int rc = ckpt_pickle_read((const uint8_t *)sb->data, sb->len, "DCP", ".metadata", 0, CKPT_NONE, &p, &err);
    CHECK(rc == 0);
    ckpt_error_clear(&err);
    if (rc) return NULL;
    CHECK(p->end == sb->len); /* one pickle, STOP last */
    *protocol = p->protocol;
    strbuf names = {0};
    ckpt_pickle_globals(&names, p, NULL, " ");
    ckpt_pickle_free(p);
    return sb_take(&names);
}

static void metadata_of(bool torch113, strbuf *sb)
{
    ckpt_dcp_item items[2] = {
        {.fqn = "model.w",
         .tensor = true,
         .dtype = CKPT_FLOAT32,
         .rank = 2,
         .dims = DIMS,
         .path = {{"model", 0}, {"w", 0}},
         .path_len = 2,
         .file = "__0_0.distcp",
         .offset = 431,
         .length = 811},
        {.fqn = "optim.param_groups.0.lr",
         .path = {{"optim", 0}, {"param_groups", 0}, {NULL, 0}, {"lr", 0}},
         .path_len = 4,
         .file = "__0_0.distcp",
         .offset = 0,
         .length = 431},
    };
    ckpt_dcp_meta_options o = {torch113, "/tmp/out", "u-1"};
    CHECK(ckpt_dcp_metadata(items, 2, &o, sb));
}

static void metadata_torch2(void)
{
    strbuf sb = {0};
    metadata_of(false, &sb);
    int protocol = 0;
    char *names = globals_of(&sb, &protocol);
    CHECK(protocol == 4);
    CHECK_STR(names, "\"torch.distributed.checkpoint.metadata.Metadata\" "
                     "\"torch.distributed.checkpoint.metadata.TensorStorageMetadata\" "
                     "\"torch.distributed.checkpoint.metadata.TensorProperties\" \"torch.float32\" "
                     "\"torch.serialization._get_layout\" \"builtins.getattr\" "
                     "\"torch.distributed.checkpoint.metadata._MEM_FORMAT_ENCODING\" \"torch.Size\" "
                     "\"torch.distributed.checkpoint.metadata.ChunkStorageMetadata\" "
                     "\"torch.distributed.checkpoint.metadata.BytesStorageMetadata\" "
                     "\"torch.distributed.checkpoint.metadata.MetadataIndex\" "
                     "\"torch.distributed.checkpoint.filesystem._StorageInfo\" "
                     "\"torch.distributed.checkpoint.metadata.StorageMeta\" \"pathlib.PosixPath\"");
    /* planner_data's paths: (model, w) and (optim, param_groups, 0, lr) */
    CHECK(HAS(&sb, "\x8c\x05model\x8c\x01w\x86") != NULL);
    CHECK(HAS(&sb, "(\x8c\x05optim\x8c\x0cparam_groups\x4b\x00\x8c\x02lrt") != NULL);
    /* storage_data in record order: the bytes item (offset 0) before the tensor (offset 431) */
    const char *lr = HAS(&sb, "\x8c\x03\x66qn\x8c\x17optim.param_groups.0.lr");
    const char *w = HAS(&sb, "\x8c\x03\x66qn\x8c\x07model.w");
    CHECK(lr && w && lr < w);
    CHECK(HAS(&sb, "\x8c\x07version\x8c\x05\x31.0.0") != NULL);
    CHECK(HAS(&sb, "\x8c\x01/\x8c\x03tmp\x8c\x03out\x87R") != NULL);
    free(names);
    sb_free(&sb);
}

static void metadata_torch113(void)
{
    strbuf sb = {0};
    metadata_of(true, &sb);
    int protocol = 0;
    char *names = globals_of(&sb, &protocol);
    CHECK(protocol == 4);
    /* the classes of the fixture tests/fixtures/dcp-torch113 (written by torch 1.13), no StorageMeta */
    CHECK_STR(names, "\"torch.distributed._shard.checkpoint.metadata.Metadata\" "
                     "\"torch.distributed._shard.checkpoint.metadata.TensorStorageMetadata\" "
                     "\"torch.distributed._shard.sharded_tensor.metadata.TensorProperties\" \"torch.float32\" "
                     "\"torch.serialization._get_layout\" \"builtins.getattr\" "
                     "\"torch.distributed._shard.sharded_tensor.metadata.MEM_FORMAT_ENCODING\" \"torch.Size\" "
                     "\"torch.distributed._shard.checkpoint.metadata.ChunkStorageMetadata\" "
                     "\"torch.distributed._shard.checkpoint.metadata.BytesStorageMetadata\" "
                     "\"torch.distributed._shard.checkpoint.metadata.MetadataIndex\" "
                     "\"torch.distributed._shard.checkpoint.filesystem._StorageInfo\"");
    /* the same names, in the same order, as the .metadata torch 1.13 wrote */
    size_t len = 0;
    uint8_t *fixture = read_file_in(fixture_dir, ".metadata", &len);
    CHECK(fixture != NULL);
    if (fixture) {
        strbuf theirs = {0};
        sb_put(&theirs, (const char *)fixture, len);
        int p = 0;
        char *names113 = globals_of(&theirs, &p);
        CHECK_STR(names, names113);
        free(names113);
        sb_free(&theirs);
        free(fixture);
    }
    CHECK(HAS(&sb, "\x8c\x0cplanner_data\x4e") != NULL); /* None */
    CHECK(HAS(&sb, "version") == NULL);
    free(names);
    sb_free(&sb);
}

/* ---- the seed's files ---- */

typedef struct opened {
    uint8_t *bytes;
    size_t len;
    ckpt_memory mem;
    ckpt_source src;
    ckpt_file *f;
} opened;

static bool open_seed(opened *o, const char *name)
{
    memset(o, 0, sizeof *o);
    o->bytes = read_file_in(seed_dir, name, &o->len);
    CHECK(o->bytes != NULL);
    if (!o->bytes) return false;
    ckpt_source_memory(&o->src, &o->mem, o->bytes, o->len);
    o->f = ckpt_open(&o->src, NULL);
    CHECK(o->f != NULL);
    return o->f != NULL;
}

static void close_seed(opened *o)
{
    ckpt_close(o->f);
    free(o->bytes);
}

typedef struct file_sink {
    FILE *f;
} file_sink;

static int file_write(void *ctx, const void *buf, size_t n)
{
    file_sink *s = ctx;
    return fwrite(buf, 1, n, s->f) == n ? 0 : CKPT_E_IO;
}

/* dir/name written through sinks, as the CLI writes a folder: the data file, then .metadata
 * through .metadata.tmp renamed. */
static int write_folder(const char *name, const char *optimizer, const char *model, bool torch113, ckpt_error *err)
{
    opened opt, mod;
    if (!open_seed(&opt, optimizer)) return -1;
    if (!open_seed(&mod, model)) {
        close_seed(&opt);
        return -1;
    }
    char dir[4096], path[4200], tmp[4200], real[4096 * 2];
    snprintf(dir, sizeof dir, "%s/%s", seed_dir, name);
    mkdir(dir, 0777);
    CHECK(realpath(dir, real) != NULL);
    snprintf(path, sizeof path, "%s/__0_0.distcp", dir);
    snprintf(tmp, sizeof tmp, "%s/.metadata.tmp", dir);
    file_sink d = {fopen(path, "wb")}, m = {fopen(tmp, "wb")};
    CHECK(d.f && m.f);
    ckpt_sink data = {&d, file_write}, meta = {&m, file_write};
    ckpt_dcp_write_options o = {torch113, real, "00000000-0000-4000-8000-000000000000", NULL, NULL};
    ckpt_dcp_write_result res;
    int rc = ckpt_dcp_write(opt.f, mod.f, &o, &data, &meta, &res, err);
    if (!rc) {
        /* the seed: 13 model tensors (a tie under both names, the buffers); 7 trainable parameters'
         * step, exp_avg, exp_avg_sq; AdamW's 9 group values (torch 1.13) */
        CHECK(res.keys == 13 + 21 + 9 && res.model_keys == 13 && res.tensors == 13 + 21 && res.bytes_items == 9);
        char *json = ckpt_dcp_write_result_json(&res);
        char want[200];
        snprintf(want, sizeof want,
                 "{\"keys\":43,\"modelKeys\":13,\"tensors\":34,\"bytesItems\":9,\"dataBytes\":%llu,"
                 "\"dataFile\":\"__0_0.distcp\"}",
                 (unsigned long long)res.data_bytes);
        CHECK_STR(json, want);
        free(json);
    }
    fclose(d.f);
    fclose(m.f);
    snprintf(path, sizeof path, "%s/.metadata", dir);
    if (!rc) CHECK(rename(tmp, path) == 0);
    else remove(tmp);
    close_seed(&opt);
    close_seed(&mod);
    return rc;
}

static void folders_written(void)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(write_folder("dcp113", "optimizer.pt", "model.pt", true, &err) == 0);
    CHECK(err.code == 0);
    ckpt_error_clear(&err);
    CHECK(write_folder("dcp2", "optimizer.pt", "model.pt", false, &err) == 0);
    CHECK(err.code == 0);
    ckpt_error_clear(&err);
    /* the data file is records back to back: its first is a zip's local header */
    size_t len = 0;
    uint8_t *data = read_file_in(seed_dir, "dcp2/__0_0.distcp", &len);
    CHECK(data && len > 4 && !memcmp(data, "PK\x03\x04", 4));
    /* the optimizer under a top-level key beside other values: the same records */
    CHECK(write_folder("nested", "nested.pt", "model.pt", false, &err) == 0);
    ckpt_error_clear(&err);
    size_t len2 = 0;
    uint8_t *nested = read_file_in(seed_dir, "nested/__0_0.distcp", &len2);
    CHECK(data && nested && len == len2 && !memcmp(data, nested, len));
    free(nested);
    free(data);
}

static void refusals(void)
{
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    /* the optimizer given as the model: pairing finds no model state dict in it */
    CHECK(write_folder("refused", "optimizer.pt", "optimizer.pt", false, &err) != 0);
    CHECK_STR(err.message, "PyTorch: the model file holds no model state dict (a dict of names to tensors)");
    ckpt_error_clear(&err);
    /* a model the optimizer's ids do not fit: the pairing's first failure */
    CHECK(write_folder("refused", "optimizer.pt", "other.pt", false, &err) != 0);
    CHECK_STR(err.message, "PyTorch: l1.weight is [8, 6] in the model, [7, 6] in the optimizer's state (index 1)");
    ckpt_error_clear(&err);
    /* an optimizer deeper inside the file */
    CHECK(write_folder("refused", "deep.pt", "model.pt", false, &err) != 0);
    CHECK_STR(err.message, "DCP: the optimizer state dict lies at a.optimizer, inside another value: ckptscope writes "
                           "one at the top of the file or under a top-level key");
    ckpt_error_clear(&err);
}

/* a safetensors model: its names would pair, but ckptscope writes model tensors from a torch.save
 * state dict only */
static void safetensors_model_refused(void)
{
    static const char HEADER[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint8_t st[8 + sizeof HEADER - 1 + 4] = {0};
    st[0] = (uint8_t)(sizeof HEADER - 1);
    memcpy(st + 8, HEADER, sizeof HEADER - 1);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, st, sizeof st);
    ckpt_file *model = ckpt_open(&src, NULL);
    opened opt;
    if (!open_seed(&opt, "optimizer.pt")) return;
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    ckpt_sink none = {NULL, NULL};
    ckpt_dcp_write_options o = {0};
    CHECK(ckpt_dcp_write(opt.f, model, &o, &none, &none, NULL, &err) != 0);
    CHECK_STR(err.message, "DCP: --state must be the model's torch.save state dict (pytorch_model.bin, model.pt): its "
                           "names key the DCP folder");
    ckpt_error_clear(&err);
    ckpt_close(model);
    close_seed(&opt);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_dcp_write SEED_DIR FIXTURE_DIR (tests/fixtures/dcp-torch113)\n");
        return 2;
    }
    seed_dir = argv[1];
    fixture_dir = argv[2];
    static const test_case cases[] = {
        {".metadata of torch >= 2.4", metadata_torch2},
        {".metadata of torch 1.13", metadata_torch113},
        {"the seed written as both folders", folders_written},
        {"what is refused", refusals},
        {"a safetensors model is refused", safetensors_model_refused},
    };
    return RUN_ALL(cases);
}
