/* Templates to POSIX extended regular expressions, compiled once; a message is checked against
 * the templates of its code. */
#include "oracle.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CKPT_TEMPLATES
#error "CKPT_TEMPLATES: the path of tests/cases/templates.txt"
#endif

#define MAX_TEMPLATES 512

static struct {
    int code;
    regex_t re;
} templates[MAX_TEMPLATES];
static int count = -1;

static const struct {
    const char *name, *ere;
} placeholders[] = {
    {"{n}", "([0-9]+|\\(a number of more than 10000 digits\\))"},
    {"{#}", "#\\[([0-9]+(, [0-9]+)*(, \\.\\.\\. \\([0-9]+ dims in all\\))?)?\\]"},
    {"{[]}", "\\[([0-9]+(, [0-9]+)*(, \\.\\.\\. \\([0-9]+ dims in all\\))?)?\\]"},
    {"{dim}", "(dim [0-9]+ \\()*(scalar|\\.\\.\\. \\([0-9]+ dims in all\\))\\)*"},
    {"{NAME}", "(CUDA Adam checkpoint|TorchLean float32 state checkpoint|TorchLean float32 parameter "
               "checkpoint|safetensors file)"},
    {"{P}", "(CUDA Adam checkpoint|TorchLean float32 state checkpoint|TorchLean float32 parameter "
            "checkpoint|StateIO|ParamIO|safetensors)"},
    {"{MAGIC}", "(TLADAMF|TLSF32B|TLPF32B|safetensors)"},
    {"{str}", "\"([^\"\\\\]|\\\\.)*\""},
    {"{dtype}", "(F64|F32|F16|BF16|I64|I32|I16|I8|U8|BOOL|F8_E4M3|F8_E5M2)"},
    {"{why}", "[^()]+"},
    {"{s}", "s?"},
    {"{x}", "[0-9a-f][0-9a-f]"},
    {"{i}", "-?[0-9]+"},
    {"{f}", "(-?[0-9]+(\\.[0-9]+)?(e[-+][0-9]+)?|nan|-?inf)"},
    {"{name}", ".+"},
};

static void compile(int code, const char *t)
{
    char ere[4096];
    size_t n = 0;
    ere[n++] = '^';
    while (*t && n < sizeof ere - 256) {
        bool matched = false;
        for (size_t k = 0; k < sizeof placeholders / sizeof placeholders[0]; k++) {
            size_t len = strlen(placeholders[k].name);
            if (strncmp(t, placeholders[k].name, len) == 0) {
                n += (size_t)snprintf(ere + n, sizeof ere - n, "%s", placeholders[k].ere);
                t += len;
                matched = true;
                break;
            }
        }
        if (matched) continue;
        if (strchr(".[](){}*+?|^$\\", *t)) ere[n++] = '\\';
        ere[n++] = *t++;
    }
    ere[n++] = '$';
    ere[n] = '\0';
    if (count >= MAX_TEMPLATES || regcomp(&templates[count].re, ere, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "oracle: cannot compile template %s\n", ere);
        abort();
    }
    templates[count++].code = code;
}

static void load(void)
{
    count = 0;
    FILE *f = fopen(CKPT_TEMPLATES, "r");
    if (!f) {
        perror(CKPT_TEMPLATES);
        abort();
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        char *bar = strchr(line, '|');
        if (!bar) continue;
        *bar = '\0';
        compile(atoi(line), bar + 1);
    }
    fclose(f);
}

void oracle_check(const ckpt_error *err)
{
    if (!err || !err->code) return;
    if (count < 0) load();
    for (int k = 0; k < count; k++)
        if (templates[k].code == err->code && err->message && regexec(&templates[k].re, err->message, 0, NULL, 0) == 0)
            return;
    fprintf(stderr, "oracle: code %d with a text that is none of its templates: %s\n", err->code,
            err->message ? err->message : "(null)");
    abort();
}
