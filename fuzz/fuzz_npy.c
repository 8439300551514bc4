/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (bf_tensor_load_npy).
 *
 * The input is written to a scratch file (the reader works on files: it checks the header's
 * claims against the file size) and read back under a context with small limits. A file that
 * loads is written again and re-read, which must give the same bytes (bfloat16 excepted: it
 * is saved widened to float32).
 */
#include "blockflow.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bf_context *ctx;
static char path[64], path2[80];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    bf_config cfg;
    bf_config_init(&cfg);
    cfg.max_tensor_elements = 1 << 20;
    cfg.threads = 1;
    cfg.disable_gpu = 1;
    if (bf_context_new(&cfg, &ctx, NULL)) abort();
    /* tmpfs when there is one: the round trip fsyncs, which is slow on a disk */
    const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/bf_fuzz_npy.%ld.npy", tmp ? tmp : "/tmp", (long)getpid());
    snprintf(path2, sizeof(path2), "%s.2.npy", path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) abort();
    if (size && write(fd, data, size) != (ssize_t)size) abort();
    close(fd);
    bf_tensor *t = NULL, *u = NULL;
    bf_error err;
    if (bf_tensor_load_npy(ctx, path, &t, &err) == BF_OK) {
        if (bf_tensor_save_npy(t, path2, &err)) abort();
        if (bf_tensor_load_npy(ctx, path2, &u, &err)) abort();
        if (bf_tensor_dtype(t) != BF_DTYPE_BF16 &&
            (bf_tensor_nbytes(t) != bf_tensor_nbytes(u) ||
             memcmp(bf_tensor_cdata(t), bf_tensor_cdata(u), bf_tensor_nbytes(t))))
            abort();
        for (int64_t i = 0; i < bf_tensor_numel(t) && i < 16; i++) (void)bf_tensor_get_f64(t, i);
    }
    bf_tensor_free(t);
    bf_tensor_free(u);
    return 0;
}
