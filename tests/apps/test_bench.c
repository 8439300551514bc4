/*
 * test_bench.c - `blockflow bench` (bench/bench.c) end to end, without peers: a one-case file
 * timed for a fraction of a second with --dtype f64 and an explicit --isa, its JSON rows read
 * back (dtype, isa, a finite positive median, no oneDNN figure or mode), the text header naming
 * the dtype and ISA, the defaults (f32, the best ISA this CPU runs), and the usage errors of
 * the new flags (an unknown or unsupported --isa, an unknown --dtype: exit 2 with a message),
 * and --clock cpu (process CPU time per call, named in the rows and the header).
 * The run with peers is test_bench_peer.c (skipped where the oneDNN peer is not built).
 */
#include "cli_harness.h"
#include "nn_ops/cpu/conv_cpu_internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char tiny_case[] =
    "{\"cases\":[{\"name\":\"tiny_5x5_k3_valid\",\"input\":[1,5,5,1],\"filter\":[3,3,1,1],"
    "\"depthwise\":false,\"strides\":[1,1,1,1],\"padding\":\"VALID\",\"dilations\":[1,1,1,1]}]}";

#define RUN(...) bf_run(&(bf_run_opts){.timeout_s = 60}, (const char *const[]){__VA_ARGS__, NULL})

/* An ISA this CPU runs other than (where there is one) the default, to show --isa is obeyed. */
static bf_conv_isa other_isa(void) {
    return bf_conv_cpu_isa_supported(BF_CONV_ISA_AVX2) ? BF_CONV_ISA_AVX2 : BF_CONV_ISA_GENERIC;
}

/* Check every line of `out` is a JSON row of `dtype` and `isa` with a finite positive median
 * and no oneDNN figure; returns the number of rows. */
static int check_rows(const char *out, const char *dtype, const char *isa) {
    int rows = 0;
    const char *p = out;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        ck_assert_ptr_nonnull(line);
        cJSON *j = cJSON_Parse(line);
        ck_assert_msg(j != NULL, "not JSON: %s", line);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "case")),
                         "tiny_5x5_k3_valid");
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dtype")), dtype);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "isa")), isa);
        const cJSON *med = cJSON_GetObjectItem(j, "median_ms");
        ck_assert_msg(cJSON_IsNumber(med) && isfinite(med->valuedouble) && med->valuedouble > 0,
                      "median: %s", line);
        const cJSON *gf = cJSON_GetObjectItem(j, "gflops");
        ck_assert(cJSON_IsNumber(gf) && gf->valuedouble > 0);
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "onednn_median_ms")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "onednn_mode")));
        ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "ratio_best_peer")));
        cJSON_Delete(j);
        free(line);
        rows++;
        p += len + (nl != NULL);
    }
    return rows;
}

START_TEST(f64_and_isa_in_json_rows) {
    bf_write_file(bf_sp("cases.json"), tiny_case);
    const char *isa = bf_conv_cpu_isa_name(other_isa());
    bf_result r = RUN("bench", "--dtype", "f64", "--isa", isa, "--no-peers", "--json",
                      "--threads", "1", "--rounds", "1", "--time", "0.03", "--cases",
                      bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_int_eq(check_rows(r.out, "f64", isa), 3);
    bf_result_free(&r);

    /* the text table's header names the dtype and the ISA used */
    r = RUN("bench", "--dtype", "f64", "--isa", isa, "--no-peers", "--threads", "1", "--rounds",
            "1", "--time", "0.03", "--ops", "fwd", "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    char want[64];
    snprintf(want, sizeof want, "f64, 1 thread, CPU kernels %s,", isa);
    ck_assert_msg(strstr(r.out, want) != NULL, "no \"%s\" in: %s", want, r.out);
    bf_result_free(&r);
}
END_TEST

START_TEST(defaults_are_f32_and_best_isa) {
    bf_write_file(bf_sp("cases.json"), tiny_case);
    bf_result r = RUN("bench", "--no-peers", "--json", "--threads", "1", "--rounds", "1",
                      "--time", "0.03", "--ops", "Conv2D", "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_int_eq(check_rows(r.out, "f32", bf_conv_cpu_isa_name(bf_conv_cpu_best_isa())), 1);
    bf_result_free(&r);
}
END_TEST

START_TEST(bad_isa_and_dtype_exit_2) {
    bf_write_file(bf_sp("cases.json"), tiny_case);
    /* an ISA this CPU does not run, where there is one */
    for (int i = 0; i < BF_CONV_ISA_COUNT; i++) {
        if (bf_conv_cpu_isa_supported((bf_conv_isa)i)) continue;
        const char *name = bf_conv_cpu_isa_name((bf_conv_isa)i);
        bf_result r = RUN("bench", "--isa", name, "--no-peers", "--cases", bf_sp("cases.json"));
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.out, "");
        ck_assert_msg(strstr(r.err, "does not support") && strstr(r.err, name), "%s", r.err);
        bf_result_free(&r);
    }
    static const char *const bad[][2] = {{"--isa", "neon"}, {"--dtype", "f16"}};
    for (int i = 0; i < 2; i++) {
        bf_result r = RUN("bench", bad[i][0], bad[i][1], "--no-peers", "--cases",
                          bf_sp("cases.json"));
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.out, "");
        char want[64];
        snprintf(want, sizeof want, "blockflow bench: %s %s: not ", bad[i][0], bad[i][1]);
        ck_assert_msg(strstr(r.err, want) != NULL, "no \"%s\" in: %s", want, r.err);
        bf_result_free(&r);
    }
    bf_result r = RUN("bench", "--isa");
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "usage: blockflow bench"));
    bf_result_free(&r);
}
END_TEST

/* --clock cpu times calls in process CPU time and says so in every JSON row and the header;
   the default is wall time; another clock name is a usage error. */
START_TEST(clock_cpu_in_rows_and_header) {
    bf_write_file(bf_sp("cases.json"), tiny_case);
    static const char *const clocks[] = {"cpu", "wall"};
    for (int i = 0; i < 2; i++) {
        bf_result r = RUN("bench", "--clock", clocks[i], "--no-peers", "--json", "--threads",
                          "1", "--rounds", "2", "--time", "0.03", "--ops", "fwd", "--cases",
                          bf_sp("cases.json"));
        ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
        cJSON *j = cJSON_Parse(r.out);
        ck_assert_msg(j != NULL, "not JSON: %s", r.out);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "clock")), clocks[i]);
        const cJSON *lo = cJSON_GetObjectItem(j, "min_ms"), *med = cJSON_GetObjectItem(j, "median_ms");
        ck_assert(cJSON_IsNumber(lo) && cJSON_IsNumber(med) && lo->valuedouble > 0 &&
                  lo->valuedouble <= med->valuedouble);
        cJSON_Delete(j);
        bf_result_free(&r);
    }
    bf_result r = RUN("bench", "--clock", "cpu", "--no-peers", "--threads", "1", "--rounds", "1",
                      "--time", "0.02", "--ops", "fwd", "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0 && strstr(r.out, ", CPU time, peers:"), "%s", r.out);
    bf_result_free(&r);
    r = RUN("bench", "--json", "--no-peers", "--threads", "1", "--rounds", "1", "--time", "0.02",
            "--ops", "fwd", "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0 && strstr(r.out, "\"clock\":\"wall\""), "%s", r.out);
    bf_result_free(&r);
    r = RUN("bench", "--clock", "tsc", "--no-peers", "--cases", bf_sp("cases.json"));
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "usage: blockflow bench"));
    bf_result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, clock_cpu_in_rows_and_header);
    tcase_add_test(tc, f64_and_isa_in_json_rows);
    tcase_add_test(tc, defaults_are_f32_and_best_isa);
    tcase_add_test(tc, bad_isa_and_dtype_exit_2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
