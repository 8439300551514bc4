/*
 * test_train_ops_gpu_hooks.c - where the training blocks may run, without a GPU (label cpu):
 * MatMul, the four pooling blocks and the six activation blocks offer a GPU kernel
 * (run_cuda), and their gpu_unsupported says NULL (the GPU takes it) for every float dtype and
 * gives the reason the run report shows after "CPU fallback: " for the integers:
 *     MatMul    int32 / int64  "integer MatMul on the CPU (exact, overflow-checked)"
 *     MaxPool   int32 / int64  "integer MaxPool on the CPU"
 *     Relu      int32 / int64  "integer Relu on the CPU"
 * and for a MatMul dimension of 2^31 or more "a dimension of 2^31 or more (cuBLAS takes int)".
 * Placement does not depend on the pooling geometry: asymmetric SAME pads run on the GPU too
 * (our own kernels), so gpu_unsupported is NULL for them. Called directly without a CUDA
 * device behind it, run_cuda refuses cleanly (BF_EUNSUPPORTED "no_gpu"), in every build.
 * test_train_ops_gpu checks the same reasons end to end, and the results, on a GPU.
 */
#include "bf_test.h"

#include "block.h"

#include <string.h>

static bf_node *node_of(const char *type, const char *attrs) {
    const bf_block_desc *d = bf_registry_find(type);
    ck_assert_msg(d != NULL, "no block type %s", type);
    ck_assert_msg(d->run_cuda != NULL && d->gpu_unsupported != NULL, "%s has no GPU hooks",
                  type);
    bf_node *n = NULL;
    bf_error e = {0};
    if (bf_node_make(d, attrs, &n, &e)) ck_abort_msg("%s: %s", type, e.message);
    return n;
}

static const char *why(bf_node *n, bf_dtype dt, int n_in, int rank, const int64_t *dims) {
    bf_port_info in[3];
    for (int k = 0; k < n_in; k++) bf_port_set(&in[k], dt, rank, dims);
    return n->desc->gpu_unsupported(n, in);
}

static const bf_dtype floats[] = {BF_DTYPE_F32, BF_DTYPE_F64, BF_DTYPE_F16, BF_DTYPE_BF16};
static const bf_dtype ints[] = {BF_DTYPE_I32, BF_DTYPE_I64};

START_TEST(matmul_reasons) {
    bf_node *n = node_of("MatMul", "{\"transpose_b\":true}");
    int64_t d[2] = {37, 53};
    for (int i = 0; i < 4; i++) ck_assert_ptr_null(why(n, floats[i], 2, 2, d));
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(why(n, ints[i], 2, 2, d),
                         "integer MatMul on the CPU (exact, overflow-checked)");
    int64_t unknown[2] = {-1, -1}, huge[2] = {2, (int64_t)1 << 31};
    ck_assert_ptr_null(why(n, BF_DTYPE_F32, 2, 2, unknown));
    ck_assert_ptr_null(why(n, BF_DTYPE_F32, 2, -1, NULL));
    ck_assert_str_eq(why(n, BF_DTYPE_F32, 2, 2, huge),
                     "a dimension of 2^31 or more (cuBLAS takes int)");
    bf_node_destroy(n);
}
END_TEST

START_TEST(pool_reasons) {
    static const char *const types[] = {"MaxPool", "MaxPoolGrad", "AvgPool", "AvgPoolGrad"};
    /* 7x6 with a 2x2 window, stride 2, SAME: the rows' pads are 0 and 1 (asymmetric) */
    const char *attrs = "{\"ksize\":[1,2,2,1],\"strides\":[1,2,2,1],\"padding\":\"SAME\"}";
    int64_t d[4] = {2, 7, 6, 3};
    for (int t = 0; t < 4; t++) {
        bf_node *n = node_of(types[t], attrs);
        int n_in = n->desc->n_inputs;
        for (int i = 0; i < 4; i++) {
            bf_port_info in[3];
            for (int k = 0; k < n_in; k++) bf_port_set(&in[k], floats[i], 4, d);
            if (t == 3) { /* AvgPoolGrad: orig_input_shape is an int32 vector */
                int64_t four = 4;
                bf_port_set(&in[0], BF_DTYPE_I32, 1, &four);
            }
            ck_assert_msg(n->desc->gpu_unsupported(n, in) == NULL, "%s %s: %s", types[t],
                          bf_dtype_name(floats[i]), n->desc->gpu_unsupported(n, in));
        }
        if (t == 0)
            for (int i = 0; i < 2; i++)
                ck_assert_str_eq(why(n, ints[i], 1, 4, d), "integer MaxPool on the CPU");
        bf_node_destroy(n);
    }
}
END_TEST

START_TEST(activation_reasons) {
    static const char *const types[] = {"Relu",     "Sigmoid",     "Tanh",
                                        "ReluGrad", "SigmoidGrad", "TanhGrad"};
    int64_t d[2] = {3, 5};
    for (int t = 0; t < 6; t++) {
        bf_node *n = node_of(types[t], NULL);
        for (int i = 0; i < 4; i++)
            ck_assert_ptr_null(why(n, floats[i], n->desc->n_inputs, 2, d));
        bf_node_destroy(n);
    }
    bf_node *relu = node_of("Relu", NULL);
    for (int i = 0; i < 2; i++)
        ck_assert_str_eq(why(relu, ints[i], 1, 2, d), "integer Relu on the CPU");
    bf_node_destroy(relu);
}
END_TEST

/* Without a CUDA device behind the exec (a build without CUDA, or no backend loaded), the GPU
 * entry points refuse when called directly, in every build: the core's glue forwards only to
 * a device's backend. */
START_TEST(no_cuda_device_refuses) {
    bf_node *n = node_of("Relu", NULL);
    int64_t d[1] = {4};
    bf_tensor *x = NULL, *y = NULL;
    bf_error e = {0};
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &x, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_new(NULL, BF_DTYPE_F32, 1, d, &y, &e), BF_OK);
    bf_exec ex = {.n_threads = 1};
    const bf_tensor *in[1] = {x};
    bf_tensor *out[1] = {y};
    ck_assert_int_eq(n->desc->run_cuda(n, in, out, &ex, &e), BF_EUNSUPPORTED);
    ck_assert_str_eq(e.code, "no_gpu");
    bf_tensor_free(x), bf_tensor_free(y);
    bf_node_destroy(n);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("train_ops_gpu_hooks");
    TCase *tc = tcase_create("hooks");
    tcase_add_test(tc, matmul_reasons);
    tcase_add_test(tc, pool_reasons);
    tcase_add_test(tc, activation_reasons);
    tcase_add_test(tc, no_cuda_device_refuses);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
