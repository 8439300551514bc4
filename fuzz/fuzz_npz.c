/*
 * fuzz_npz.c - libFuzzer target for .npz archives: checkpoints (bf_session_load_state) and
 * single arrays (bf_tensor_load_npz).
 *
 * The input is written to a scratch file and restored into a session of a small training page
 * (a Variable "w" [2,2] float32, a Variable "v" [3] float64 and a Dataset-free page), under a
 * context with small limits. A refused archive must leave every state as it was (all or
 * nothing); an accepted one is saved again and must load again.
 */
#include "blockflow.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bf_context *ctx;
static bf_session *s;
static char path[64], path2[80];

static const char page[] =
    "{\"format\":\"blockflow.page\",\"version\":1,\"blocks\":["
    "{\"id\":\"w\",\"type\":\"Variable\",\"attrs\":{\"value\":[[1,2],[3,4]]}},"
    "{\"id\":\"v\",\"type\":\"Variable\",\"attrs\":{\"dtype\":\"float64\",\"value\":[5,6,7]}}]}";

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 1 << 16;
    cfg.threads = 1;
    cfg.disable_gpu = 1;
    bf_page *p = NULL;
    if (bf_context_new(&cfg, &ctx, NULL) ||
        bf_page_load_string(ctx, page, strlen(page), "f.json", NULL, &p, NULL, NULL) ||
        bf_session_new(ctx, p, &s, NULL))
        abort();
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/bf_fuzz_npz.%ld.npz", tmp ? tmp : "/tmp", (long)getpid());
    snprintf(path2, sizeof(path2), "%s.2.npz", path);
    return 0;
}

static double sum_state(void) {
    double t = 0;
    for (int i = 0; i < 2; i++) {
        bf_tensor *x = NULL;
        if (bf_session_read_state(s, i ? "v" : "w", &x, NULL)) abort();
        for (int64_t k = 0; k < bf_tensor_numel(x); k++) t += bf_tensor_get_f64(x, k) * (k + 1);
        bf_tensor_free(x);
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    close(fd);
    bf_error err;
    if (bf_session_reset(s, &err)) abort();
    double before = sum_state();
    if (bf_session_load_state(s, path, &err) == BF_OK) {
        if (bf_session_save_state(s, path2, &err)) abort();
        double after = sum_state();
        if (bf_session_reset(s, &err) || bf_session_load_state(s, path2, &err)) abort();
        if (sum_state() != after && after == after) abort();
    } else if (sum_state() != before) {
        abort(); /* a refused checkpoint changed a state */
    }
    bf_tensor *t = NULL;
    (void)bf_tensor_load_npz(ctx, path, "w", &t, &err);
    bf_tensor_free(t);
    return 0;
}
