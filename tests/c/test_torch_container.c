/* torch.save files that two readers read differently (format.md 10.1), made at test time by
 * tests/c/torch_container_seeds.py: for each, what torch.load returned and what Python's zipfile
 * (another zip reader) found are in DIR/facts.txt; they differ, so ckptscope refuses the file with
 * its text, code and offset, and never says what torch.load(weights_only=True) would do with a
 * pickle it does not run. A zip after another archive, offsets from byte 0, is read as torch
 * reads it, with a warning. torch.save records back to back from byte 0 are a DCP data file
 * (format.md 12.1), not refused: its note and last record. Usage: test_torch_container DIR */
#include "testutil.h"

static const char *dir;

/* The value of `key=` on the facts line of `file` ("0.5", "KeyError", a number), or NULL. */
static char *fact(const char *file, const char *key)
{
    size_t n;
    char *all = (char *)read_file_in(dir, "facts.txt", &n);
    if (!all) return NULL;
    char *out = NULL;
    size_t fl = strlen(file), kl = strlen(key);
    for (char *line = all; line && *line && !out;) {
        char *end = strchr(line, '\n');
        if (end) *end = '\0';
        if (!strncmp(line, file, fl) && line[fl] == ' ')
            for (char *w = line + fl; w && !out; w = strchr(w + 1, ' '))
                if (!strncmp(w + 1, key, kl) && w[1 + kl] == '=') {
                    size_t vl = strcspn(w + 2 + kl, " ");
                    out = calloc(vl + 1, 1);
                    memcpy(out, w + 2 + kl, vl);
                }
        line = end ? end + 1 : NULL;
    }
    free(all);
    return out;
}

static unsigned long long number(const char *file, const char *key)
{
    char *v = fact(file, key);
    CHECK(v != NULL);
    unsigned long long n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    return n;
}

/* torch.load read `torch`, the other reader `other` */
static void readers_differ(const char *file, const char *torch, const char *other)
{
    char *t = fact(file, "torch"), *o = fact(file, "other");
    CHECK_STR(t, torch);
    CHECK_STR(o, other);
    free(t);
    free(o);
}

static ckpt_report *inspect_file(const char *file, uint8_t **data)
{
    size_t len;
    *data = read_file_in(dir, file, &len);
    CHECK(*data != NULL);
    static ckpt_memory mem;
    static ckpt_source src;
    ckpt_source_memory(&src, &mem, *data ? *data : (const uint8_t *)"", *data ? len : 0);
    return ckpt_inspect(&src, NULL);
}

static void refused(const char *file, int code, const char *text, uint64_t offset)
{
    uint8_t *d;
    ckpt_report *rep = inspect_file(file, &d);
    CHECK(rep != NULL);
    if (rep) {
        CHECK(rep->error.code == code);
        CHECK_STR(rep->error.message, text);
        CHECK(rep->error.offset == offset);
        CHECK(rep->family && !strcmp(rep->family->magic, "PyTorch"));
        /* no verdict about a pickle that is not the one torch.load runs */
        char *js = ckpt_report_json(rep);
        CHECK(js && strstr(js, "\"weightsOnly\":null"));
        free(js);
    }
    ckpt_report_free(rep);
    free(d);
}

/* two members named archive/data.pkl: the first holds A (lr 0.001), torch.load reads the second */
static void test_same_name(void)
{
    readers_differ("same-name.pt", "0.5", "0.5");
    refused("same-name.pt", CKPT_E_TORCH_UNSUPPORTED,
            "PyTorch: two members are named \"archive/data.pkl\": which one torch.load reads is not defined; "
            "ckptscope does not read such a file",
            number("same-name.pt", "entry"));
}

/* archive/data.pkl and archive/DATA.pkl: torch.load finds the second, zipfile the first */
static void test_same_name_case(void)
{
    readers_differ("same-name-case.pt", "0.5", "0.001");
    refused("same-name-case.pt", CKPT_E_TORCH_UNSUPPORTED,
            "PyTorch: members \"archive/data.pkl\" and \"archive/DATA.pkl\" have one name to torch.load (it looks "
            "names up without regard to case): which one it reads is not defined; ckptscope does not read such a "
            "file",
            number("same-name-case.pt", "entry"));
}

/* a directory where the end record says, another one ending at the end record */
static void test_two_directories(void)
{
    const char *f = "two-directories.pt";
    readers_differ(f, "0.001", "0.5");
    unsigned long long stated = number(f, "stated"), before = number(f, "before");
    char want[1024];
    snprintf(want, sizeof want,
             "PyTorch: the zip's end record places its central directory at byte %llu, %llu bytes before the "
             "directory that ends at the record (bytes before the zip: several archives back to back, as in a DCP "
             ".distcp file, or a prefix): torch.load reads a directory at byte %llu, other zip readers at byte %llu; "
             "ckptscope does not read such a file",
             stated, before, stated, stated + before);
    refused(f, CKPT_E_TORCH_UNSUPPORTED, want, number(f, "field"));
}

/* `file` opened as the caller names it (`name`, NULL: no name): its report's JSON */
static char *open_named(const char *file, const char *name)
{
    size_t len;
    uint8_t *data = read_file_in(dir, file, &len);
    CHECK(data != NULL);
    ckpt_memory mem;
    ckpt_source src;
    ckpt_source_memory(&src, &mem, data ? data : (const uint8_t *)"", data ? len : 0);
    ckpt_file *f = ckpt_open_named(&src, NULL, name);
    char *js = f ? ckpt_report_json(ckpt_file_report(f)) : NULL;
    ckpt_close(f);
    free(data);
    return js;
}

/* torch.save records back to back: torch.load reads the first one's directory, zipfile the last.
 * Each record's end record ends where the next begins and the first starts at byte 0: a DCP data
 * file (format.md 12.1), its note and its last record, not section 10's refusal */
static void test_records(void)
{
    const char *f = "records.distcp";
    readers_differ(f, "0.001", "0.5");
    unsigned long long before = number(f, "before");
    uint8_t *d;
    ckpt_report *rep = inspect_file(f, &d);
    CHECK(rep && rep->error.code == 0 && rep->family && !strcmp(rep->family->magic, "DCP"));
    char *js = rep ? ckpt_report_json(rep) : NULL;
    char want[512];
    snprintf(want, sizeof want, "\"record\":{\"offset\":%llu,", before);
    CHECK(js && strstr(js, "\"opened\":\"distcp\"") && strstr(js, want));
    CHECK(js && strstr(js, "\"note\":\"DCP: this file is a data file of a distributed checkpoint: torch.save records "
                           "back to back, found only through the folder's .metadata; open its folder\""));
    free(js);
    ckpt_report_free(rep);
    free(d);
    /* the name given: the note names the file and its folder */
    js = open_named(f, "run/step-3/records.distcp");
    CHECK(js && strstr(js, "\"note\":\"DCP: records.distcp is a data file of a distributed checkpoint: torch.save "
                           "records back to back, found only through the folder's .metadata; open run/step-3\""));
    free(js);
    js = open_named(f, "records.distcp");
    CHECK(js && strstr(js, "\"note\":\"DCP: records.distcp is a data file of a distributed checkpoint: torch.save "
                           "records back to back, found only through the folder's .metadata; open its folder\""));
    free(js);
}

/* one record: a torch.save file (section 10); named __{r}_{n}.distcp, with 12.1's note */
static void test_one_record(void)
{
    const char *f = "__0_3.distcp";
    readers_differ(f, "0.25", "0.25");
    char *js = open_named(f, "ckpt/__0_3.distcp");
    CHECK(js && strstr(js, "\"ok\":true,\"family\":\"PyTorch\"") && strstr(js, "\"lr\":0.25"));
    CHECK(js && strstr(js, "\"warnings\":[\"DCP: __0_3.distcp is a data file of a distributed checkpoint: torch.save "
                           "records back to back, found only through the folder's .metadata; open ckpt\"]"));
    free(js);
    /* without the name, or under another name: the torch.save file, no note */
    js = open_named(f, NULL);
    CHECK(js && strstr(js, "\"family\":\"PyTorch\"") && strstr(js, "\"warnings\":[]"));
    free(js);
    js = open_named(f, "ckpt/optimizer.pt");
    CHECK(js && strstr(js, "\"family\":\"PyTorch\"") && strstr(js, "\"warnings\":[]"));
    free(js);
}

static void test_two_zip64_records(void)
{
    const char *f = "two-zip64-records.pt";
    readers_differ(f, "0.001", "0.5");
    unsigned long long target = number(f, "target"), record = number(f, "record");
    char want[1024];
    snprintf(want, sizeof want,
             "PyTorch: the ZIP64 locator points at byte %llu, but the ZIP64 end record before it is at byte %llu: "
             "torch.load reads the one at byte %llu, other zip readers the one at byte %llu; ckptscope does not read "
             "such a file",
             target, record, target, record);
    refused(f, CKPT_E_TORCH_UNSUPPORTED, want, number(f, "field"));
}

/* the end record's comment holds another end record: torch.load takes the last signature */
static void test_end_record_in_comment(void)
{
    const char *f = "end-record-in-comment.pt";
    readers_differ(f, "0.5", "BadZipFile");
    unsigned long long at = number(f, "end"), last = number(f, "last");
    char want[1024];
    snprintf(want, sizeof want,
             "PyTorch: two end-of-central-directory records (at bytes %llu and %llu): torch.load reads the one at "
             "byte %llu, other zip readers the one at byte %llu; ckptscope does not read such a file",
             at, last, last, at);
    refused(f, CKPT_E_TORCH_UNSUPPORTED, want, last);
}

/* a member outside the first member's folder: torch.load refuses the zip */
static void test_other_folder(void)
{
    readers_differ("other-folder.pt", "RuntimeError", "0.001");
    refused("other-folder.pt", CKPT_E_TORCH_NOT_CHECKPOINT,
            "PyTorch: member \"other/data.pkl\" is not in the folder \"archive\" of the zip's first member: "
            "torch.load refuses such a zip",
            number("other-folder.pt", "entry"));
}

/* the first member's folder named with '%' (a format's directives): its name is said as it is */
static void test_percent_folder(void)
{
    readers_differ("percent-folder.pt", "RuntimeError", "0.001");
    refused("percent-folder.pt", CKPT_E_TORCH_NOT_CHECKPOINT,
            "PyTorch: member \"other/data.pkl\" is not in the folder \"%p%s%n\" of the zip's first member: "
            "torch.load refuses such a zip",
            number("percent-folder.pt", "entry"));
}

/* a legacy file whose first 512 bytes are a tar header: torch.load reads a tar archive */
static void test_tar_header(void)
{
    readers_differ("tar-header.pt", "KeyError", "0.001");
    refused("tar-header.pt", CKPT_E_TORCH_UNSUPPORTED,
            "PyTorch: the first 512 bytes are also a tar header (its checksum holds): torch.load reads such a file "
            "as the tar archive of the oldest torch.save format, not as the pickles ckptscope reads; ckptscope "
            "does not read such a file",
            0);
}

/* A after B, offsets from byte 0: every reader reads A; B is said, not read */
static void test_after_another(void)
{
    const char *f = "after-another.pt";
    readers_differ(f, "0.001", "0.001");
    uint8_t *d;
    ckpt_report *rep = inspect_file(f, &d);
    CHECK(rep && rep->error.code == 0);
    if (rep && rep->error.code == 0) {
        char want[512];
        snprintf(want, sizeof want,
                 "PyTorch: bytes 0 to %llu come before the zip's first member and its central directory does not "
                 "describe them; an end-of-central-directory record at byte %llu among them: several archives back "
                 "to back; only the last is read",
                 number(f, "first"), number(f, "end"));
        CHECK(rep->warnings_len == 1);
        if (rep->warnings_len) CHECK_STR(rep->warnings[0], want);
        char *js = ckpt_report_json(rep);
        CHECK(js && strstr(js, "\"weightsOnly\":true") && strstr(js, "\"lr\":0.001"));
        free(js);
    }
    ckpt_report_free(rep);
    free(d);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_torch_container DIR\n");
        return 2;
    }
    dir = argv[1];
    static const test_case cases[] = {
        {"two members of one name", test_same_name},
        {"two names equal but for case", test_same_name_case},
        {"a second directory after the stated one", test_two_directories},
        {"torch.save records back to back", test_records},
        {"one record named as a DCP data file", test_one_record},
        {"two ZIP64 end records", test_two_zip64_records},
        {"an end record in the end record's comment", test_end_record_in_comment},
        {"a member outside the folder", test_other_folder},
        {"the first member's folder named with %", test_percent_folder},
        {"a legacy file that is also a tar", test_tar_header},
        {"a zip after another archive", test_after_another},
    };
    return RUN_ALL(cases);
}
