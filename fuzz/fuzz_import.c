/*
 * fuzz_import.c - libFuzzer target for the enuSpace importer (apps/enuspace): UTF-16
 * decoding, the XML reader, the Task JSON reader, the .dat reader, the literal rules and the
 * mapping, on hostile bytes.
 *
 * Input: byte 0 options (bit 0: --partial; bit 1: a tiny inline limit, so arrays go to .npy
 * files), bytes 1-2 the .dat's length n (little-endian; 0xffff: no .dat), then the page, the
 * last n bytes being the .dat. Limits are small (2^16 elements, 1 MiB) so that a declared
 * size is a clean error, not a huge allocation. A page the importer writes must be JSON that
 * blockflow parses (a syntax error there is a crash here); blockflow may still refuse it for
 * its content (an attribute out of range), which the CLI reports. AddSymbolicGradients
 * blocks are then built (symgrad.c) as the CLI and the server build them.
 */
#include "blockflow.h"
#include "enuspace.h"
#include "symgrad.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bf_context *ctx;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 1 << 16;
    cfg.threads = 1;
    cfg.disable_gpu = 1;
    if (bf_context_new(&cfg, &ctx, NULL)) abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    enu_options o;
    enu_options_init(&o);
    o.partial = data[0] & 1;
    if (data[0] & 2) o.inline_limit = 2;
    o.max_elements = 1 << 16;
    o.max_input_bytes = 1 << 20;
    o.page_name = "fuzz";
    size_t n = (size_t)data[1] | (size_t)data[2] << 8, rest = size - 3;
    const uint8_t *dat = NULL;
    if (n != 0xffff) {
        if (n > rest) n = rest;
        dat = data + 3 + rest - n;
        rest -= n;
    } else {
        n = 0;
    }
    enu_result r;
    int st = enu_import(data + 3, rest, dat, n, &o, &r);
    if (r.report_json) free(enu_report_text(r.report_json));
    if (st == 0) {
        bf_page *page = NULL;
        bf_error e = {0};
        bf_status ps = bf_page_parse(ctx, r.page_json, strlen(r.page_json), "fuzz", NULL,
                                     BF_LOAD_INCOMPLETE | BF_LOAD_SKIP_FILES, &page, NULL, &e);
        if (ps == BF_EPARSE) {
            fprintf(stderr, "the importer wrote a page that is not JSON: %s\n%s\n", e.message,
                    r.page_json);
            abort();
        }
        bf_page_free(page);
        /* AddSymbolicGradients: built as the CLI and the server build them (no files here:
           a page that names .npy files is refused by the loader, cleanly) */
        if (ps == BF_OK && !r.n_files) {
            char *built = NULL, why[600];
            enu_build_symbolic_gradients(ctx, r.page_json, "fuzz", NULL, &built, why, sizeof why);
            bf_string_free(built);
        }
    }
    enu_result_free(&r);
    return 0;
}
