/*
 * enuspace.h - the enuSpace-Tensorflow importer (libblockflow_enuspace): reads the pages that
 * enuSpace-Tensorflow saved (the SVG picture page with its .dat side file, or the Task JSON
 * logic export) and writes a canonical blockflow page. It needs neither the runtime nor a
 * file system: bytes in, a page (JSON text), the .npy files to put beside it and a report out,
 * so the CLI (`blockflow import`), the server and the fuzzer all call the same code.
 *
 * Everything it reads is hostile: UTF-16 is decoded strictly, the XML reader expands no
 * entities and has no DTD, every size is checked against the limits below before it is
 * allocated, and each error names the block and pin it is about.
 */
#ifndef BF_ENUSPACE_H
#define BF_ENUSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct enu_options {
    const char *page_name;    /* the page's name (the file's base name); "page" when NULL */
    const char *data_dir;     /* where the data files the page names are (IDX files); may be
                                 NULL: then the file's base name, relative to the page */
    bool partial;             /* write the page with a Placeholder for each unsupported block
                                 instead of failing */
    int64_t max_elements;     /* largest array a pin may declare (default 1 << 26) */
    size_t max_input_bytes;   /* largest page or .dat accepted (default 256 MiB) */
    int max_depth;            /* deepest XML/brace nesting (default 64) */
    int inline_limit;         /* arrays up to this many elements are written inline, larger
                                 ones as .npy files beside the page (default 100) */
    const char *file_prefix;  /* put before the .npy files' names ("page."): pages that share
                                 a folder keep their files apart; NULL for none */
} enu_options;

/* Fill `o` with the defaults. */
void enu_options_init(enu_options *o);

typedef struct enu_file {
    char *name;               /* file name beside the page: [A-Za-z0-9._-], no leading '.' */
    unsigned char *data;      /* the .npy bytes */
    size_t size;
} enu_file;

typedef struct enu_result {
    char *page_json;          /* the blockflow page (UTF-8 JSON); NULL on failure */
    char *report_json;        /* the import report (also on failure, when there is one) */
    enu_file *files;          /* the .npy files the page names */
    int n_files;
    char error[512];          /* why it failed, naming the block and pin */
} enu_result;

/*
 * Import one page. `page` is the SVG or Task JSON file (UTF-16 with a BOM, or UTF-8), `dat`
 * its .dat side file (NULL when absent; then binary values are an error naming them).
 * Returns 0 on success; -1 with `error` set (and report_json when the page was read but some
 * blocks could not be mapped). Free the result with enu_result_free either way.
 */
int enu_import(const unsigned char *page, size_t page_len, const unsigned char *dat,
               size_t dat_len, const enu_options *o, enu_result *out);
void enu_result_free(enu_result *r);

/* The report as text lines (for a terminal); a new string the caller frees, NULL on OOM. */
char *enu_report_text(const char *report_json);

#endif /* BF_ENUSPACE_H */
