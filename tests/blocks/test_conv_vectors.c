/*
 * test_conv_vectors.c - every TensorFlow vector of shared/conformance/tf_vectors.json (81
 * literal + 71 derived) through the six convolution blocks on the CPU, in float32 and float64,
 * and also in NCHW (inputs transposed, results transposed back) for the cases TF ran in NCHW.
 * SeparableConv2D_composite runs DepthwiseConv2dNative, then a 1x1 Conv2D with VALID.
 *
 * Building, running and judging a vector is tests/support/tf_vectors.c, which the GPU test
 * (test_conv_vectors_gpu) shares. The file is read at test time from $BF_SHARED_DIR/conformance,
 * falling back to the copy in tests/data. One loop-test iteration per case
 * (tcase_add_loop_test).
 */
#include "tf_vectors.h"

/* Check vector i on the CPU in (dt, layout). */
static void check(int i, bf_dtype dt, int nchw) {
    tv_target t = {.dtype = dt, .nchw = nchw, .path = TV_CPU};
    char msg[1024];
    ck_assert_msg(tv_check(i, &t, msg, sizeof(msg), NULL, 0), "%s", msg);
}

START_TEST(vector_nhwc_f32) { check(_i, BF_DTYPE_F32, 0); }
END_TEST
START_TEST(vector_nhwc_f64) { check(_i, BF_DTYPE_F64, 0); }
END_TEST
START_TEST(vector_nchw) {
    if (!tv_nchw_tested(_i)) return;
    check(_i, BF_DTYPE_F32, 1);
    check(_i, BF_DTYPE_F64, 1);
}
END_TEST

START_TEST(all_vectors_loaded) {
    char msg[256];
    ck_assert_msg(tv_all_loaded(msg, sizeof(msg)), "%s", msg);
}
END_TEST

static Suite *suite(void) {
    tv_load();
    Suite *s = suite_create("conv_vectors");
    TCase *tc = tcase_create("tf");
    tcase_add_test(tc, all_vectors_loaded);
    tcase_add_loop_test(tc, vector_nhwc_f32, 0, tv_count());
    tcase_add_loop_test(tc, vector_nhwc_f64, 0, tv_count());
    tcase_add_loop_test(tc, vector_nchw, 0, tv_count());
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
