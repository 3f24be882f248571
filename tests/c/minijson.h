/* A minimal JSON reader for the tests (the shared case table): objects, arrays, strings,
 * numbers kept as their text (so u64 values stay exact), true/false/null. Not for untrusted
 * input: the case table is ours. */
#ifndef CKPT_MINIJSON_H
#define CKPT_MINIJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { JNULL, JBOOL, JNUM, JSTR, JARR, JOBJ } jtype;

typedef struct jvalue {
    jtype type;
    bool b;
    char *text;            /* JNUM: the number's text; JSTR: the string */
    struct jvalue **items; /* JARR, JOBJ */
    char **keys;           /* JOBJ */
    size_t len;
} jvalue;

jvalue *json_parse(const char *text); /* NULL on a syntax error */
void json_free(jvalue *v);
const jvalue *json_get(const jvalue *obj, const char *key); /* NULL when absent or not an object */
bool json_is_null(const jvalue *v);                         /* absent or null */
uint64_t json_u64(const jvalue *v);
double json_double(const jvalue *v); /* numbers, and "NaN", "Infinity", "-Infinity" */
char *json_read_file(const char *path);

#endif
