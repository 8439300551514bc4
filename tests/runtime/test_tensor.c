/*
 * test_tensor.c - dtypes, shape arithmetic and its overflow checks, host tensors, and the
 * half/bfloat16 conversions.
 */
#include "bf_test.h"
#include "half.h"
#include "tensor.h"

#include <math.h>

START_TEST(dtype_names_round_trip) {
    for (int d = 1; d < BF_DTYPE_COUNT; d++)
        ck_assert_int_eq(bf_dtype_from_name(bf_dtype_name((bf_dtype)d)), d);
    ck_assert_int_eq(bf_dtype_from_name("half"), BF_DTYPE_F16);
    ck_assert_int_eq(bf_dtype_from_name("nope"), BF_DTYPE_INVALID);
    ck_assert_uint_eq(bf_dtype_size(BF_DTYPE_BF16), 2);
}
END_TEST

START_TEST(shape_overflow_is_an_error) {
    int64_t dims[4] = {INT64_C(1) << 40, INT64_C(1) << 30, 4, 1};
    int64_t numel;
    size_t bytes;
    bf_error e = {0};
    ck_assert_int_eq(bf_shape_size(BF_DTYPE_F32, 4, dims, 0, &numel, &bytes, &e), BF_ELIMIT);
    ck_assert_str_eq(e.code, "too_large");
    int64_t neg[2] = {3, -1};
    ck_assert_int_eq(bf_shape_size(BF_DTYPE_F32, 2, neg, 0, &numel, &bytes, &e), BF_EINVAL);
    int64_t big[1] = {1000};
    ck_assert_int_eq(bf_shape_size(BF_DTYPE_F32, 1, big, 999, &numel, &bytes, &e), BF_ELIMIT);
    ck_assert_int_eq(bf_shape_size(BF_DTYPE_F64, 1, big, 1000, &numel, &bytes, &e), BF_OK);
    ck_assert_int_eq(numel, 1000);
    ck_assert_uint_eq(bytes, 8000);
}
END_TEST

START_TEST(budget_refuses_past_limit) {
    bf_budget b = {.limit = 1000};
    bf_tensor *t = NULL, *u = NULL;
    bf_error e = {0};
    int64_t d[1] = {200};
    ck_assert_int_eq(bf_tensor_alloc(&b, 0, BF_DTYPE_F32, 1, d, true, &t, &e), BF_OK);
    ck_assert_int_eq(bf_tensor_alloc(&b, 0, BF_DTYPE_F32, 1, d, true, &u, &e), BF_ELIMIT);
    ck_assert_ptr_null(u);
    ck_assert_uint_eq(atomic_load(&b.used), 800);
    bf_tensor_free(t);
    ck_assert_uint_eq(atomic_load(&b.used), 0);
}
END_TEST

START_TEST(half_conversions) {
    ck_assert_uint_eq(bf_f32_to_f16(1.0f), 0x3c00);
    ck_assert_uint_eq(bf_f32_to_f16(65504.0f), 0x7bff);
    ck_assert_uint_eq(bf_f32_to_f16(65520.0f), 0x7c00); /* overflow to Inf */
    ck_assert_uint_eq(bf_f32_to_f16(-2.0f), 0xc000);
    ck_assert_uint_eq(bf_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
    ck_assert(isnan(bf_f16_to_f32(bf_f32_to_f16(NAN))));
    /* every half round-trips exactly through float */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaNs */
        ck_assert_uint_eq(bf_f32_to_f16(bf_f16_to_f32((uint16_t)h)), h);
    }
    ck_assert_uint_eq(bf_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(bf_f32_to_bf16(1.00390625f), 0x3f80); /* tie rounds to even */
    ck_assert_uint_eq(bf_f32_to_bf16(3.4e38f), 0x7f80);     /* rounds up to Inf */
    ck_assert(isnan(bf_bf16_to_f32(bf_f32_to_bf16(NAN))));
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("tensor");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, dtype_names_round_trip);
    tcase_add_test(tc, shape_overflow_is_an_error);
    tcase_add_test(tc, budget_refuses_past_limit);
    tcase_add_test(tc, half_conversions);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
