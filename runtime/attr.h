/*
 * attr.h - parsing block attributes from a page, driven by the block's attribute table.
 *
 * Canonical forms are JSON values of the attribute's kind. Pages written for enuSpace are
 * accepted too, each with a warning that names the canonical form: int lists as the text
 * "1,2,2,1" or "{1,2,2,1}", and a whole attribute object given as the text
 * "use_cudnn_on_gpu_ = true;data_format_ = NHWC;dilations_ = {1,1,1,1};" (trailing
 * underscores and spaces anywhere). Unknown keys are errors in either form.
 */
#ifndef BF_ATTR_H
#define BF_ATTR_H

#include "block.h"

#include <cjson/cJSON.h>

/* Where FILE attributes may be read from, and how much they may hold. */
typedef struct bf_file_scope {
    const char *dir;       /* the page's folder: relative names resolve here (NULL/"": cwd) */
    bool confine;          /* only files inside dir: no absolute path, no "..", no symlink out */
    uint64_t max_elements; /* element limit of a loaded file (0: none) */
} bf_file_scope;

/*
 * Where attribute problems go: every problem is copied from `tmpl` (page, block id and the
 * block's JSON pointer, e.g. "/blocks/3"), completed (attr, pointer suffix, message) and
 * appended to `diags`; the first error is kept in `first`.
 */
typedef struct bf_attr_report {
    const bf_error *tmpl;
    bf_diags *diags;
    bf_error first;
    int n_errors;
    bool oom;
} bf_attr_report;

/*
 * Parse `attrs` (a JSON object, an enuSpace text string, or NULL) into vals[desc->n_attrs]
 * (zeroed by the caller), apply defaults, and report unknown, missing and malformed
 * attributes. FILE attributes keep their name only: reading the file is the loader's and the
 * session's job (bf_attrs_load_files, files.c), so parsing never touches the file system.
 * Returns BF_OK or the status of the first error; vals is always left freeable.
 */
bf_status bf_attrs_parse(const bf_block_desc *desc, const cJSON *attrs, bf_attr_value *vals,
                         bf_attr_report *rep);

/* Parse one attribute's JSON value into *v (freed first). Errors name the attribute. */
bf_status bf_attr_parse_one(const bf_attr_desc *d, const cJSON *j, bf_attr_value *v,
                            bool *legacy, bf_error *err);

/* Set *v to d's default (NULL default: unset). False when out of memory. */
bool bf_attr_set_default(const bf_attr_desc *d, bf_attr_value *v);

/* The attribute's value as canonical JSON (NULL when not set, or out of memory). */
cJSON *bf_attr_to_json(const bf_attr_desc *d, const bf_attr_value *v);

/* Free what a value owns and zero it. */
void bf_attr_value_free(bf_attr_value *v);
/* Free vals[0..n) (not the array). */
void bf_attrs_free(bf_attr_value *vals, int n);

#endif /* BF_ATTR_H */
