/* The core's self-description (abi.c): the JSON a binding reads is valid and says what the
 * structs and tables hold; the flattened views of a file (columns, entry and tensor references,
 * packed statistics) agree with the report they come from. */
#include "minijson.h"
#include "testutil.h"

#include <stddef.h>
#include <stdlib.h>

static ckpt_config adam(void)
{
    return (ckpt_config){CKPT_ADAM, ckpt_bits_from_double(0.9), ckpt_bits_from_double(0.999),
                         ckpt_bits_from_double(1e-8), 0};
}

/* [frozen p, p, q, p] tied as [none, 1, 2, 1]: entries 1 and 2. */
static ckpt_buffer tied_file(int dtype)
{
    ckpt_schema *s =
        schema_of(4, (uint64_t[]){1, 2, 1, 2, 1, 3, 1, 2}, (uint8_t[]){0, 1, 1, 1}, (uint64_t[]){CKPT_NONE, 1, 2, 1});
    double m1[2] = {1.5, -2.5}, v1[2] = {0.25, 4.0}, m2[3] = {0.5, 0.0, -0.0}, v2[3] = {1.0, 3.0, 2.0};
    unsigned w = ckpt_dtype_width(dtype);
    float f1[2] = {1.5f, -2.5f}, g1[2] = {0.25f, 4.0f}, f2[3] = {0.5f, 0, 0}, g2[3] = {1, 3, 2};
    ckpt_entry_in e[2] = {{2, 7, 3, dtype == CKPT_FLOAT64 ? (void *)m2 : (void *)f2,
                           dtype == CKPT_FLOAT64 ? (void *)v2 : (void *)g2, 3 * w, 3 * w},
                          {1, 9, 2, dtype == CKPT_FLOAT64 ? (void *)m1 : (void *)f1,
                           dtype == CKPT_FLOAT64 ? (void *)v1 : (void *)g1, 2 * w, 2 * w}};
    ckpt_write_desc d = {s, dtype, adam(), false, 0, e, 2, 0};
    ckpt_buffer buf;
    ckpt_sink sink;
    ckpt_sink_buffer(&sink, &buf);
    ckpt_error err = {0};
    ckpt_error_clear(&err);
    CHECK(ckpt_write(&d, &sink, &err) == 0);
    ckpt_error_clear(&err);
    ckpt_schema_free(s);
    return buf;
}

static void description_is_valid_json(void)
{
    char *text = ckpt_abi_json();
    CHECK(text != NULL);
    jvalue *j = json_parse(text);
    CHECK(j != NULL);
    const jvalue *families = json_get(j, "families");
    CHECK(families && families->len == ckpt_family_count());
    for (size_t k = 0; k < ckpt_family_count(); k++) {
        const ckpt_family *f = ckpt_family_at(k);
        CHECK(json_u64(json_get(families->items[k], "id")) == (uint64_t)f->id);
        CHECK_STR(json_get(families->items[k], "magic")->text, f->magic);
        CHECK(f == ckpt_family_get(f->id));
    }
    CHECK(ckpt_family_at(ckpt_family_count()) == NULL);
    const jvalue *dtypes = json_get(j, "dtypes");
    CHECK(dtypes && dtypes->len == 2);
    CHECK(json_u64(json_get(dtypes->items[1], "width")) == 8 && ckpt_dtype_width(CKPT_FLOAT32) == 4);
    CHECK(ckpt_dtype_name(CKPT_DTYPE_COUNT) == NULL && ckpt_dtype_width(-1) == 0);
    /* the whole table: every dtype with its names (bfloat16 has no NumPy name) */
    const jvalue *all = json_get(j, "tensorDtypes");
    CHECK(all && all->len == CKPT_DTYPE_COUNT);
    CHECK_STR(json_get(all->items[CKPT_BFLOAT16], "safetensors")->text, "BF16");
    CHECK(json_is_null(json_get(all->items[CKPT_BFLOAT16], "numpy")));
    CHECK_STR(json_get(all->items[CKPT_FLOAT16], "numpy")->text, "<f2");
    const jvalue *codes = json_get(j, "codes");
    CHECK(json_u64(json_get(codes, "WRONG_FAMILY")) == CKPT_E_WRONG_FAMILY && json_u64(json_get(codes, "OK")) == 0);
    const jvalue *structs = json_get(j, "structs");
    const jvalue *row = json_get(structs, "entryRow");
    CHECK(json_u64(json_get(row, "size")) == sizeof(ckpt_entry_row));
    CHECK(json_u64(json_get(json_get(json_get(row, "fields"), "vOffset"), "offset")) ==
          offsetof(ckpt_entry_row, v_offset));
    const jvalue *cols = json_get(structs, "columns");
    CHECK(json_u64(json_get(json_get(json_get(cols, "fields"), "tensors"), "offset")) ==
          offsetof(ckpt_columns, tensors));
    CHECK(json_u64(json_get(json_get(json_get(cols, "fields"), "tensors"), "size")) == sizeof(void *));
    CHECK_STR(json_get(json_get(j, "constants"), "NONE")->text, "18446744073709551615");
    json_free(j);
    free(text);
}

static void views_agree_with_the_report(void)
{
    for (int dtype = CKPT_FLOAT32; dtype <= CKPT_FLOAT64; dtype++) {
        ckpt_buffer buf = tied_file(dtype);
        ckpt_memory mem;
        ckpt_source src;
        ckpt_source_memory(&src, &mem, buf.data, buf.len);
        ckpt_file *f = ckpt_open(&src, NULL);
        const ckpt_report *rep = ckpt_file_report(f);
        CHECK(rep->error.code == 0);
        ckpt_columns *c = ckpt_columns_new(f);
        CHECK(c && c->n == 4 && c->complete && c->entries_len == 2 && c->tensors_len == 0);
        CHECK(c->reps[0] == CKPT_NONE && c->reps[3] == 1 && c->flags[0] == 0 && c->sizes[2] == 3);
        CHECK(c->entries[0].id == rep->entries[0].id && c->entries[1].v_offset == rep->entries[1].v_offset);
        ckpt_columns_free(c);

        ckpt_error err = {0};
        ckpt_error_clear(&err);
        ckpt_entry_ref ref;
        CHECK(ckpt_file_entry_ref(f, 3, &ref, &err) == 0 && ref.owner == 1 && ref.count == 2);
        CHECK(ref.m_bytes == 2 * ckpt_dtype_width(dtype));
        CHECK(ckpt_file_entry_ref(f, 0, &ref, &err) == CKPT_E_FROZEN_SLOT);
        ckpt_error_clear(&err);
        ckpt_tensor_ref tref;
        CHECK(ckpt_file_tensor_ref(f, 0, &tref, &err) == CKPT_E_WRONG_FAMILY);
        ckpt_error_clear(&err);

        /* the bytes an item's statistics read: both payloads of the entry, as laid out */
        const ckpt_entry_info *e1 = &rep->entries[1];
        CHECK(ckpt_file_item_bytes(f, 1) == 2 * e1->count * ckpt_dtype_width(dtype));
        CHECK(ckpt_file_item_bytes(f, 1) == e1->v_offset + (e1->v_offset - e1->m_offset) - e1->m_offset);
        CHECK(ckpt_file_item_bytes(f, 2) == CKPT_NONE);

        /* packed statistics of item 1 attach to another handle of the same file */
        uint64_t *words = ckpt_file_item_stats_packed(f, 1, NULL, NULL, &err);
        CHECK(words != NULL);
        ckpt_packed_stats head;
        memcpy(&head, words, sizeof head);
        size_t n = sizeof head / sizeof(uint64_t) + (size_t)head.a_words + (size_t)head.b_words;
        byte_counter through = {src, 0};
        ckpt_source counted = {&through, byte_counter_read, src.size};
        ckpt_file *g = ckpt_open(&counted, NULL);
        CHECK(ckpt_file_attach_packed(g, 1, words, n, &err) == 0);
        CHECK(ckpt_file_attach_packed(g, 1, words, 1, &err) == CKPT_E_INVALID_ARGUMENT);
        CHECK_STR(err.message, "invalid packed statistics");
        ckpt_error_clear(&err);
        /* statistics of another item (of another count: a file changed under a pass run
         * elsewhere) are refused */
        CHECK(ckpt_file_attach_packed(g, 0, words, n, &err) == CKPT_E_INVALID_ARGUMENT);
        ckpt_error_clear(&err);
        /* asked again, attached statistics are copies: the same, and not one byte read */
        uint64_t before = through.bytes;
        uint64_t slot = rep->entries[1].id;
        ckpt_stats *am, *av, *fm, *fv, *ia, *ib;
        CHECK(ckpt_file_moment_stats(g, slot, NULL, NULL, &am, &av, &err) == 0);
        CHECK(ckpt_file_item_stats(g, 1, NULL, NULL, &ia, &ib, &err) == 0);
        CHECK(through.bytes == before);
        CHECK(ckpt_file_moment_stats(f, slot, NULL, NULL, &fm, &fv, &err) == 0);
        CHECK(am->count == fm->count && am->nan == fm->nan && am->negative == fm->negative);
        CHECK(memcmp(&am->sum, &fm->sum, sizeof am->sum) == 0 && memcmp(&av->max, &fv->max, sizeof av->max) == 0);
        CHECK(am->hist_len == fm->hist_len && !memcmp(am->hist, fm->hist, am->hist_len * sizeof *am->hist));
        CHECK(ia->count == am->count && ib->negative == av->negative);
        for (ckpt_stats **s = (ckpt_stats *[]){am, av, fm, fv, ia, ib, NULL}; *s; s++) ckpt_stats_free(*s);
        /* item 0 has none attached: it is read */
        CHECK(ckpt_file_item_stats(g, 0, NULL, NULL, &ia, &ib, &err) == 0);
        CHECK(through.bytes == before + ckpt_file_item_bytes(g, 0));
        ckpt_stats_free(ia);
        ckpt_stats_free(ib);
        free(words);
        ckpt_close(g);
        ckpt_close(f);
        ckpt_buffer_free(&buf);
    }
}

static const test_case cases[] = {
    {"the description is valid JSON and says what the structs hold", description_is_valid_json},
    {"columns, references and packed statistics agree with the report", views_agree_with_the_report},
};

int main(void) { return RUN_ALL(cases); }
