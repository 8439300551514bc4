/*
 * test_bench_peer.c - `blockflow bench` with the oneDNN peer (bench/peers/onednn_peer.c): on a
 * tiny dense and a tiny depthwise case (grouped, 5-D weights), every op's JSON row has a
 * oneDNN median and the layout mode the peer's probe kept (plain, wany or any); with
 * --dtype f64 the peer declines (oneDNN has no f64 convolution), the row shows null for both
 * and the run still succeeds. Skipped (exit 77, "Not Run") when blockflow-onednn-peer is not
 * built next to the blockflow program (libdnnl-dev missing). The PyTorch peer is left out
 * (BF_TORCH_PEER points nowhere) to keep the test short.
 */
#include "cli_harness.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char peer_path[PATH_MAX];

static const char cases[] =
    "{\"cases\":[{\"name\":\"tiny_5x5_k3_valid\",\"input\":[1,5,5,1],\"filter\":[3,3,1,1],"
    "\"depthwise\":false,\"strides\":[1,1,1,1],\"padding\":\"VALID\",\"dilations\":[1,1,1,1]},"
    "{\"name\":\"tiny_dw_6x6_c4_m2\",\"input\":[1,6,6,4],\"filter\":[3,3,4,2],"
    "\"depthwise\":true,\"strides\":[1,1,1,1],\"padding\":\"SAME\",\"dilations\":[1,1,1,1]}]}";

#define RUN(...) bf_run(&(bf_run_opts){.timeout_s = 120}, (const char *const[]){__VA_ARGS__, NULL})

/* The JSON rows of `out`, checked by `check`; returns their number. */
static int for_rows(const char *out, void (*check)(const cJSON *row, const char *line)) {
    int rows = 0;
    const char *p = out;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char *line = strndup(p, len);
        ck_assert_ptr_nonnull(line);
        cJSON *j = cJSON_Parse(line);
        ck_assert_msg(j != NULL, "not JSON: %s", line);
        check(j, line);
        cJSON_Delete(j);
        free(line);
        rows++;
        p += len + (nl != NULL);
    }
    return rows;
}

static void check_f32_row(const cJSON *j, const char *line) {
    const cJSON *med = cJSON_GetObjectItem(j, "onednn_median_ms");
    ck_assert_msg(cJSON_IsNumber(med) && isfinite(med->valuedouble) && med->valuedouble > 0,
                  "oneDNN median: %s", line);
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItem(j, "onednn_mode"));
    ck_assert_msg(mode && (!strcmp(mode, "plain") || !strcmp(mode, "wany") ||
                           !strcmp(mode, "any")),
                  "onednn_mode: %s", line);
    const cJSON *ratio = cJSON_GetObjectItem(j, "ratio_best_peer");
    ck_assert_msg(cJSON_IsNumber(ratio) && ratio->valuedouble > 0, "ratio: %s", line);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dtype")), "f32");
}

static void check_f64_row(const cJSON *j, const char *line) {
    ck_assert_msg(cJSON_IsNull(cJSON_GetObjectItem(j, "onednn_median_ms")), "%s", line);
    ck_assert_msg(cJSON_IsNull(cJSON_GetObjectItem(j, "onednn_mode")), "%s", line);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "dtype")), "f64");
    const cJSON *med = cJSON_GetObjectItem(j, "median_ms");
    ck_assert(cJSON_IsNumber(med) && isfinite(med->valuedouble) && med->valuedouble > 0);
}

static void peer_env(void) {
    bf_scratch_setup();
    ck_assert_int_eq(setenv("BF_ONEDNN_PEER", peer_path, 1), 0);
    ck_assert_int_eq(setenv("BF_TORCH_PEER", "/nonexistent/torch_peer.py", 1), 0);
}

START_TEST(onednn_rows_name_the_mode) {
    bf_write_file(bf_sp("cases.json"), cases);
    bf_result r = RUN("bench", "--json", "--threads", "1", "--rounds", "2", "--time", "0.04",
                      "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_str_eq(r.err, "");
    ck_assert_int_eq(for_rows(r.out, check_f32_row), 6);
    bf_result_free(&r);

    /* the table shows the mode after oneDNN's median */
    r = RUN("bench", "--threads", "1", "--rounds", "1", "--time", "0.02", "--ops", "fwd",
            "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "oneDNN/mode"));
    ck_assert_msg(strstr(r.out, "/plain ") || strstr(r.out, "/wany ") || strstr(r.out, "/any "),
                  "%s", r.out);
    bf_result_free(&r);
}
END_TEST

START_TEST(onednn_declines_f64) {
    bf_write_file(bf_sp("cases.json"), cases);
    bf_result r = RUN("bench", "--json", "--dtype", "f64", "--threads", "1", "--rounds", "1",
                      "--time", "0.02", "--cases", bf_sp("cases.json"));
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_int_eq(for_rows(r.out, check_f64_row), 6);
    /* said once, not once per row */
    ck_assert_int_eq(bf_count_lines(r.err), 1);
    ck_assert_ptr_nonnull(strstr(r.err, "oneDNN has no f64 convolution"));
    bf_result_free(&r);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("bench_peer");
    TCase *tc = tcase_create("onednn");
    tcase_set_timeout(tc, 180);
    tcase_add_checked_fixture(tc, peer_env, bf_scratch_teardown);
    tcase_add_test(tc, onednn_rows_name_the_mode);
    tcase_add_test(tc, onednn_declines_f64);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    const char *bin = bf_test_binary();
    const char *slash = strrchr(bin, '/');
    snprintf(peer_path, sizeof peer_path, "%.*s/blockflow-onednn-peer",
             slash ? (int)(slash - bin) : 1, slash ? bin : ".");
    if (access(peer_path, X_OK) != 0) {
        printf("skipped: %s is not built (needs libdnnl-dev)\n", peer_path);
        return BF_TEST_SKIP;
    }
    return bf_test_main(suite());
}
