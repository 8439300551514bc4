/*
 * fuzz_page.c - libFuzzer target for the page loader and the validator (STYLE R14f).
 *
 * The input is a page as JSON text. It is loaded with bf_page_load_string, turned into a
 * session and checked; a page that checks cleanly is also run, under a context whose limits
 * are tiny (64 Ki elements per tensor, 4 MiB per session) and a 2 s timeout, so that every
 * run is cheap and a hostile page can only make us fail with a status, never crash, hang or
 * leak. File attributes resolve against a scratch folder holding a small a.npy.
 */
#include "blockflow.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bf_context *ctx;
static char dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 1 << 16;
    cfg.max_session_bytes = 4 << 20;
    cfg.max_blocks = 256;
    cfg.threads = 2;
    cfg.disable_gpu = 1;
    if (bf_context_new(&cfg, &ctx, NULL)) abort();
    strcpy(dir, "/tmp/bf_fuzz_page.XXXXXX");
    if (!mkdtemp(dir)) abort();
    int64_t dims[2] = {2, 3};
    bf_tensor *t = NULL;
    if (bf_tensor_new(ctx, BF_DTYPE_F32, 2, dims, &t, NULL)) abort();
    char path[128];
    snprintf(path, sizeof(path), "%s/a.npy", dir);
    if (bf_tensor_save_npy(t, path, NULL)) abort();
    bf_tensor_free(t);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_diags *diags = bf_diags_new();
    bf_error err;
    if (bf_page_load_string(ctx, (const char *)data, size, "fuzz.json", dir, &page, diags,
                            &err) == BF_OK &&
        bf_session_new(ctx, page, &s, &err) == BF_OK &&
        bf_session_check(s, diags, &err) == BF_OK) {
        bf_run_options o;
        bf_run_options_init(&o);
        o.timeout_s = 2;
        o.device = BF_DEVICE_CPU;
        (void)bf_session_run(s, &o, diags, &err);
        /* A second run exercises the result cache. */
        (void)bf_session_run(s, &o, diags, &err);
        /* Two training steps (update blocks and their commit, datasets advancing), then a
         * run that sees the committed state. */
        bf_step_options so;
        bf_step_options_init(&so);
        so.timeout_s = 2;
        so.device = BF_DEVICE_CPU;
        if (bf_session_state_count(s) > 0 && bf_session_step(s, 2, &so, diags, &err) == BF_OK)
            (void)bf_session_run(s, &o, diags, &err);
    }
    char line[1200];
    for (size_t i = 0; i < bf_diags_count(diags); i++)
        bf_error_format(bf_diags_at(diags, i), line, sizeof(line));
    bf_session_free(s);
    bf_diags_free(diags);
    return 0;
}
