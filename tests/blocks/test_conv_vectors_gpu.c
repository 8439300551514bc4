/*
 * test_conv_vectors_gpu.c - TensorFlow's conformance vectors (tf_vectors.json, 81 literal + 71
 * derived) on the GPU, through the block descriptors' run_cuda, judged exactly as the CPU test
 * test_conv_vectors judges them (tests/support/tf_vectors.c: same inputs, same tolerances).
 *
 * Eight tests, one per (dtype, layout, path): float32 and float64; NHWC for every vector, NCHW
 * for the 76 that TF also ran in NCHW; cuDNN (use_cudnn_on_gpu true) for the vectors with a
 * Conv2D op, our own CUDA kernels (use_cudnn_on_gpu false) for all of them. The depthwise ops
 * have no cuDNN path (they always run our own kernels), so their 38 vectors run in the
 * own-kernel tests only. Each test opens the GPU once (opening CUDA and cuDNN costs about
 * 0.3 s), runs all its vectors, prints a one-line count, writes every failure to stderr and
 * fails with the list of failing ids and kernel notes.
 *
 * Without a GPU, or in a build without CUDA, the program exits 77 at once and ctest reports it
 * as Not Run, never passed. main() probes in a child process, so that CUDA is never initialised
 * before Check forks. From the build directory: ctest -L gpu --output-on-failure
 */
#include "tf_vectors.h"

#include <string.h>

static const struct {
    bf_dtype dtype;
    int nchw;
    tv_path path;
} targets[] = {
    {BF_DTYPE_F32, 0, TV_GPU_CUDNN}, {BF_DTYPE_F32, 0, TV_GPU_OWN},
    {BF_DTYPE_F64, 0, TV_GPU_CUDNN}, {BF_DTYPE_F64, 0, TV_GPU_OWN},
    {BF_DTYPE_F32, 1, TV_GPU_CUDNN}, {BF_DTYPE_F32, 1, TV_GPU_OWN},
    {BF_DTYPE_F64, 1, TV_GPU_CUDNN}, {BF_DTYPE_F64, 1, TV_GPU_OWN},
};

/* Every vector that applies to target _i; one failure listing all the failing ones. */
START_TEST(vectors_on_gpu) {
    ct_gpu gpu;
    bf_error err = {0};
    ck_assert_msg(ct_gpu_open(&gpu, &err) == BF_OK, "opening the GPU: %s", err.message);
    tv_target t = {targets[_i].dtype, targets[_i].nchw, targets[_i].path, &gpu};
    char where[64], list[2048] = "";
    tv_target_str(&t, where, sizeof(where));
    size_t len = 0;
    int n_run = 0, n_failed = 0, n_unlisted = 0;
    for (int i = 0; i < tv_count(); i++) {
        if ((t.nchw && !tv_nchw_tested(i)) || (t.path == TV_GPU_CUDNN && !tv_has_conv2d(i)))
            continue;
        char msg[512], note[512];
        n_run++;
        if (tv_check(i, &t, msg, sizeof(msg), note, sizeof(note))) continue;
        n_failed++;
        fprintf(stderr, "%s; kernel note: %s\n", msg, note[0] ? note : "(none)");
        /* the id, what failed (after the target, which the message names once) and the note,
         * in order until the list is full */
        const char *what = strstr(msg, "): ");
        int w = n_unlisted ? -1
                           : snprintf(list + len, sizeof(list) - len, "%s%s [%s; %s]",
                                      len ? ", " : "", tv_id(i), what ? what + 3 : msg,
                                      note[0] ? note : "no note");
        if (w > 0 && (size_t)w < sizeof(list) - len)
            len += (size_t)w;
        else
            list[len] = '\0', n_unlisted++;
    }
    ct_gpu_close(&gpu);
    printf("%s: %d vectors, %d failed\n", where, n_run, n_failed);
    ck_assert_msg(n_run > 0, "%s: no vectors ran (were they loaded?)", where);
    char more[32] = "";
    if (n_unlisted) snprintf(more, sizeof(more), ", and %d more", n_unlisted);
    ck_assert_msg(n_failed == 0, "%s: %d of %d vectors fail: %s%s (all on stderr)", where,
                  n_failed, n_run, list, more);
}
END_TEST

START_TEST(all_vectors_loaded) {
    char msg[256];
    ck_assert_msg(tv_all_loaded(msg, sizeof(msg)), "%s", msg);
}
END_TEST

static Suite *suite(void) {
    tv_load();
    Suite *s = suite_create("conv_vectors_gpu");
    TCase *tc = tcase_create("tf");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, all_vectors_loaded);
    tcase_add_loop_test(tc, vectors_on_gpu, 0, BF_COUNT(targets));
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    char why[256];
    if (!ct_gpu_present(why, sizeof why)) {
        printf("test_conv_vectors_gpu: skipped, no GPU (%s)\n", why);
        return BF_TEST_SKIP;
    }
    printf("test_conv_vectors_gpu: running on %s\n", why);
    return bf_test_main(suite());
}
