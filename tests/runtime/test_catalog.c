/*
 * test_catalog.c - the registry and the catalogue printed from it: every descriptor is sane
 * (names, defaults that parse, enum defaults among the values, kernels present), types are
 * unique and listed in order, and the committed graph_schemas/block_catalog.json is exactly
 * what `blockflow blocks --json` prints (STYLE R17: regenerate it with that command).
 */
#include "attr.h"
#include "bf_test.h"
#include "block.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

START_TEST(registry_is_sorted_and_unique) {
    int n = bf_block_type_count();
    ck_assert_int_ge(n, 5);
    for (int i = 1; i < n; i++)
        ck_assert_int_lt(strcmp(bf_block_type_name(i - 1), bf_block_type_name(i)), 0);
    for (int i = 0; i < n; i++)
        ck_assert_ptr_eq(bf_registry_find(bf_block_type_name(i)), bf_registry_at(i));
    ck_assert_ptr_null(bf_registry_find("NoSuchBlock"));
}
END_TEST

START_TEST(descriptors_are_sane) {
    const bf_block_desc *d = bf_registry_at(_i);
    ck_assert_ptr_nonnull(d->infer);
    ck_assert_ptr_nonnull(d->run_cpu);
    ck_assert_msg(d->synopsis && d->synopsis[0], "%s has no synopsis", d->type);
    for (int k = 0; k < d->n_inputs; k++) ck_assert_uint_ne(d->inputs[k].dtypes, 0);
    for (int k = 0; k < d->n_outputs; k++) ck_assert_uint_ne(d->outputs[k].dtypes, 0);
    ck_assert(!d->run_cuda == !d->workspace_cuda || d->workspace_cuda == NULL);
    /* every default parses as its kind (bf_node_make applies them all) */
    for (int k = 0; k < d->n_attrs; k++) {
        const bf_attr_desc *a = &d->attrs[k];
        ck_assert_msg(a->kind != BF_ATTR_ENUM || a->values, "%s.%s: enum without values",
                      d->type, a->name);
        if (!a->def) continue;
        cJSON *j = cJSON_Parse(a->def);
        ck_assert_msg(j != NULL, "%s.%s: default is not JSON", d->type, a->name);
        bf_attr_value v = {0};
        bf_error e = {0};
        ck_assert_msg(bf_attr_parse_one(a, j, &v, NULL, &e) == BF_OK,
                      "%s.%s: default does not parse: %s", d->type, a->name, e.message);
        bf_attr_value_free(&v);
        cJSON_Delete(j);
    }
}
END_TEST

START_TEST(committed_catalog_is_current) {
    char path[4096], *printed = NULL;
    snprintf(path, sizeof(path), "%s/graph_schemas/block_catalog.json", bf_test_source_dir());
    char *committed = bf_read_file(path, NULL);
    ck_assert_msg(committed != NULL, "cannot read %s", path);
    ck_assert_int_eq(bf_block_catalog_json(NULL, &printed, NULL), BF_OK);
    size_t n = strlen(committed);
    while (n && committed[n - 1] == '\n') committed[--n] = '\0';
    ck_assert_msg(!strcmp(committed, printed),
                  "graph_schemas/block_catalog.json is stale: regenerate it with "
                  "`blockflow blocks --json > graph_schemas/block_catalog.json`");
    /* and it has the shape the schema requires */
    cJSON *root = cJSON_Parse(printed);
    ck_assert_ptr_nonnull(root);
    const cJSON *blocks = cJSON_GetObjectItem(root, "blocks");
    ck_assert_int_eq(cJSON_GetArraySize(blocks), bf_block_type_count());
    static const char *const keys[] = {"type", "category", "synopsis", "doc", "inputs",
                                       "outputs", "attrs", "devices", "feedable"};
    for (const cJSON *b = blocks->child; b; b = b->next)
        for (int k = 0; k < (int)(sizeof(keys) / sizeof(keys[0])); k++)
            ck_assert_ptr_nonnull(cJSON_GetObjectItem(b, keys[k]));
    cJSON_Delete(root);
    bf_string_free(printed);
    free(committed);
}
END_TEST

START_TEST(catalog_lookup_errors) {
    char *s = (char *)1;
    bf_error e = {0};
    ck_assert_int_eq(bf_block_catalog_json("Nope", &s, &e), BF_ENOTFOUND);
    ck_assert_ptr_null(s);
    ck_assert_str_eq(e.code, "unknown_block_type");
    ck_assert_int_eq(bf_block_catalog_text("Const", &s, &e), BF_OK);
    ck_assert_ptr_nonnull(strstr(s, "attributes:"));
    bf_string_free(s);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("catalog");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, registry_is_sorted_and_unique);
    tcase_add_loop_test(tc, descriptors_are_sane, 0, bf_block_type_count());
    tcase_add_test(tc, committed_catalog_is_current);
    tcase_add_test(tc, catalog_lookup_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
