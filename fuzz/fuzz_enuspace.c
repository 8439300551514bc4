/*
 * fuzz_enuspace.c - libFuzzer target for block attributes, above all the enuSpace attribute
 * text ("use_cudnn_on_gpu_ = true;dilations_ = {1,1,1,1};").
 *
 * The first byte picks a block type from the registry (low 7 bits) and the form (high bit):
 * clear, the rest of the input is the attribute text, made into a JSON string as a page would
 * hold it; set, the rest is used verbatim as the attrs JSON. This is what bf_node_make does
 * (parse by the block's attribute table, then the block's init: Const builds its tensor
 * there), done here with a 64 Ki-element limit instead of bf_node_make's default of 2^40,
 * so that a Const filling a huge shape is a clean BF_ELIMIT rather than a 4 TiB malloc.
 */
#include "attr.h"
#include "page.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Quote `src` (n bytes, stops at NUL) as a JSON string into a new buffer. */
static char *json_quote(const uint8_t *src, size_t n) {
    char *out = malloc(n * 6 + 3), *p = out;
    if (!out) abort();
    *p++ = '"';
    for (size_t i = 0; i < n && src[i]; i++) {
        unsigned c = src[i];
        if (c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = (char)c;
        } else if (c < 0x20 || c >= 0x7f) {
            p += sprintf(p, "\\u%04x", c);
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = '"';
    *p = '\0';
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const bf_block_desc *desc = bf_registry_at(data[0] % bf_registry_count());
    char *text;
    if (data[0] & 0x80) {
        text = malloc(size);
        if (!text) abort();
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
    } else {
        text = json_quote(data + 1, size - 1);
    }
    cJSON *j = cJSON_Parse(text);
    bf_attr_value *vals = bf_calloc((size_t)(desc->n_attrs ? desc->n_attrs : 1), sizeof(*vals));
    if (!vals) abort();
    bf_node node = {.id = "fuzz", .desc = desc, .attrs = vals, .max_elements = 1 << 16};
    bf_error tmpl = {0};
    bf_diags *diags = bf_diags_new();
    bf_attr_report rep = {.tmpl = &tmpl, .diags = diags};
    bf_file_scope files = {.dir = NULL, .confine = true, .max_elements = node.max_elements};
    if (j && bf_attrs_parse(desc, j, vals, &rep) == BF_OK &&
        bf_attrs_load_files(desc, vals, &files, &rep.first) == BF_OK &&
        (!desc->init || desc->init(&node, &rep.first) == BF_OK)) {
        bf_port_info out[8];
        bf_error e2;
        if (desc->n_inputs == 0 && desc->n_outputs <= 8) (void)desc->infer(&node, NULL, out, &e2);
    }
    if (desc->fini) desc->fini(&node);
    bf_attrs_free(vals, desc->n_attrs);
    bf_free(vals);
    bf_diags_free(diags);
    cJSON_Delete(j);
    free(text);
    return 0;
}
