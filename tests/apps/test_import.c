/*
 * test_import.c - the enuSpace importer (apps/enuspace) on pages the tests write themselves,
 * in both formats: the SVG picture page (UTF-16LE with a BOM, 3.x `var-type` and 4.x `type`
 * spellings, values in the .dat) and the Task JSON export. What each checks:
 *   - every value syntax of FORMAT.md 3.6 / 7.3 becomes the dtype, shape and numbers the plugin
 *     would make (typed arrays "1;2;3;4" and "{1,2,3,4}", literals "1", "0.1", "255.0f",
 *     "{{3,1},{4,1},{5,9}}", "{-1,28,28,1}", booleans), a Variable's rules 1-3;
 *   - attribute text in typed form (first duplicate wins, unknown names noted, dilations_
 *     ignored by 2.0 pages), const pins (strides, padding);
 *   - binary values read from the .dat at their offsets (float, int, double);
 *   - the SVG page and the Task JSON export of one graph give the same numbers, and an
 *     imported page is canonical (fmt leaves it unchanged) and runs;
 *   - a wire from an indexed output (grad_outputs[3]) of an unsupported block: the import
 *     fails naming the block, what it is and what it feeds; --partial puts a Placeholder there;
 *   - hostile input: malformed UTF-16, a DOCTYPE with an entity bomb, undefined entities,
 *     deep nesting, .dat offsets past the end, lying and enormous shapes, ragged literals,
 *     duplicate ids, wires to nothing: each a clean error naming the block and pin;
 *   - the `blockflow import` command: files written atomically beside -o, the report, exit
 *     codes, nothing written on failure.
 */
#include "bf_test.h"
#include "cli_harness.h"
#include "graph.h"
#include "symgrad.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* UTF-8 -> UTF-16LE with a BOM, as enuSpace writes its files. */
static unsigned char *utf16(const char *s, size_t *len) {
    size_t n = strlen(s);
    unsigned char *b = malloc(2 + 4 * n), *o = b;
    *o++ = 0xff;
    *o++ = 0xfe;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        unsigned long c;
        if (*p < 0x80) c = *p++;
        else if (*p < 0xe0) c = (unsigned long)(p[0] & 0x1f) << 6 | (p[1] & 0x3f), p += 2;
        else if (*p < 0xf0)
            c = (unsigned long)(p[0] & 0x0f) << 12 | (unsigned long)(p[1] & 0x3f) << 6 | (p[2] & 0x3f), p += 3;
        else
            c = (unsigned long)(p[0] & 0x07) << 18 | (unsigned long)(p[1] & 0x3f) << 12 |
                (unsigned long)(p[2] & 0x3f) << 6 | (p[3] & 0x3f), p += 4;
        if (c >= 0x10000) {
            c -= 0x10000;
            unsigned long hi = 0xd800 + (c >> 10), lo = 0xdc00 + (c & 0x3ff);
            *o++ = (unsigned char)hi, *o++ = (unsigned char)(hi >> 8);
            *o++ = (unsigned char)lo, *o++ = (unsigned char)(lo >> 8);
        } else {
            *o++ = (unsigned char)c, *o++ = (unsigned char)(c >> 8);
        }
    }
    *len = (size_t)(o - b);
    return b;
}

/* Import UTF-8 `text` (encoded as UTF-16 when `wide`) with `dat`; returns the status. */
static int import(const char *text, bool wide, const void *dat, size_t dat_len, bool partial,
                  enu_result *r) {
    enu_options o;
    enu_options_init(&o);
    o.partial = partial;
    o.page_name = "t";
    size_t n = strlen(text);
    unsigned char *b = wide ? utf16(text, &n) : (unsigned char *)strdup(text);
    int st = enu_import(b, n, dat, dat_len, &o, r);
    free(b);
    return st;
}

static void expect_error(const char *text, const void *dat, size_t dat_len, const char *a,
                         const char *b) {
    enu_result r;
    int st = import(text, true, dat, dat_len, false, &r);
    ck_assert_msg(st != 0, "imported, expected an error with \"%s\"", a);
    ck_assert_msg(strstr(r.error, a) && (!b || strstr(r.error, b)),
                  "error \"%s\" does not name \"%s\" and \"%s\"", r.error, a, b ? b : "");
    enu_result_free(&r);
}

/* The block `id` of the page JSON (a cJSON the caller frees with the page). */
static cJSON *block(cJSON *page, const char *id) {
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(page, "blocks")) {
        if (!strcmp(cJSON_GetObjectItem(b, "id")->valuestring, id)) return b;
    }
    ck_abort_msg("no block %s", id);
    return NULL;
}

static const char *attr_str(cJSON *b, const char *name) {
    cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "attrs"), name);
    return cJSON_IsString(a) ? a->valuestring : "";
}

/* The attribute as compact JSON text, in a static buffer. */
static const char *attr_json(cJSON *b, const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "attrs"), name);
    char *t = a ? cJSON_PrintUnformatted(a) : strdup("(none)");
    snprintf(buf[k], sizeof buf[k], "%s", t);
    free(t);
    return buf[k];
}

static const char *input(cJSON *b, const char *port) {
    cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(b, "inputs"), port);
    return cJSON_IsString(a) ? a->valuestring : "(none)";
}

#define SVG_HEAD "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<svg id=\"ID_r\" enuspace-version=\"3.0.3.0\" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"1920\" height=\"1080\">\n"
#define SVG_HEAD4 "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n<svg id=\"ID_r\" enuspace-version=\"4.0.3.0\" xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
#define USE(id, sym) "<use id=\"" id "\" type=\"tensorflow\" transform=\"translate(100.50,200.25) rotate(0.00) scale(1.0000, 1.0000)\" xlink:href=\"#" sym "\">\n"
#define PIN(name, shape, type, value) "<pg-set-pin variable=\"#" name shape "\" auto=\"true\" shape=\"" shape "\" var-type=\"" type "\" value=\"" value "\"/>\n"
#define PIN4(name, shape, type, value) "<pg-set-pin variable=\"#" name shape "\" auto=\"true\" shape=\"" shape "\" type=\"" type "\" value=\"" value "\"/>\n"
#define BIN(name, shape, type, pos) "<pg-set-pin variable=\"#" name shape "\" save-type=\"binary\" auto=\"true\" shape=\"" shape "\" var-type=\"" type "\" binary-pos=\"" pos "\"/>\n"
#define LINK(f, fp, t, tp) "<polyline id=\"ID_l\" points=\"0,0 1,1\"><pg-link id=\"ID_k\" from-id=\"" f "\" param-from=\"" fp "\" to-id=\"" t "\" param-to=\"" tp "\"></pg-link></polyline>\n"
#define SESSION(fetch) USE("ID_S", "ClientSession") PIN("device", "", "string", "/cpu:0") "<pg-set-pin variable=\"#INFINITE_LOOP\" shape=\"\" var-type=\"bool\" value=\"TRUE\"/>\n</use>\n" LINK(fetch, "z", "ID_S", "fetch_outputs")

/* Every value syntax, in one page. */
static const char *values_page =
    SVG_HEAD
    USE("c_semi", "Const") PIN("val", "[2][2]", "float", "0.500000;1.500000;-2.000000;4.250000") "</use>\n"
    USE("c_int", "Const") PIN("val", "[3]", "int", "3;-1;7") "</use>\n"
    USE("c_ex", "Const_ex") PIN("val", "[4]", "float", "1;2;3;4") PIN("dtype", "", "string", "DT_INT32") "</use>\n"
    USE("c_ex_lit", "Const_ex") PIN("val", "", "string", "0.100000") PIN("dtype", "", "string", "DT_FLOAT") "</use>\n"
    USE("c_ex_empty", "Const_ex") PIN("val", "", "string", "2.5") PIN("dtype", "", "string", "") "</use>\n"
    USE("v_lit", "Variable") PIN("shape", "", "string", "{3,2}") PIN("dtype", "", "string", "DT_DOUBLE")
        PIN("initvalues", "", "string", "{{3,1},{4,1},{5,9}}") PIN("attrs", "", "string", "container_ =;shared_name_ =;") "</use>\n"
    USE("v_f", "Variable") PIN("shape", "", "string", "{1,1}") PIN("dtype", "", "string", "DT_DOUBLE")
        PIN("initvalues", "", "string", "{{0.5f}}") "</use>\n"
    USE("v_typed", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "")
        PIN("initvalues", "[3]", "double", "1.000000;2.000000;3.000000") "</use>\n"
    USE("v_wired", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "")
        PIN("initvalues", "", "string", "") "</use>\n"
    LINK("c_semi", "output", "v_wired", "initvalues")
    USE("add_i", "Add") PIN("x", "", "string", "") PIN("y", "", "string", "1") "</use>\n"
    LINK("c_int", "output", "add_i", "x")
    USE("mul_f", "Multiply") PIN("x", "", "string", "255.0f") PIN("y", "", "string", "") "</use>\n"
    LINK("c_semi", "output", "mul_f", "y")
    USE("sub_d", "Subtract") PIN("x", "", "string", "0.1") PIN("y", "", "string", "") "</use>\n"
    LINK("v_lit", "ref", "sub_d", "y")
    USE("rs", "Reshape") PIN("tensor", "", "string", "") PIN("shape", "", "string", "{-1,4}") "</use>\n"
    LINK("c_semi", "output", "rs", "tensor")
    USE("mm", "MatMul") PIN("a", "", "string", "") PIN("b", "", "string", "")
        PIN("attrs", "", "string", "transpose_a_ = false;transpose_b_ = true;transpose_b_ = false;bogus_ = 3;") "</use>\n"
    LINK("c_semi", "output", "mm", "a")
    LINK("c_semi", "output", "mm", "b")
    USE("mean", "Mean") PIN("input", "", "string", "") PIN("axis", "", "string", "0") PIN("attrs", "", "string", "keep_dims_ =true;") "</use>\n"
    LINK("mm", "product", "mean", "input")
    USE("cast", "Cast") PIN("x", "", "string", "") PIN("DstT", "", "string", "DT_FLOAT") "</use>\n"
    LINK("add_i", "z", "cast", "x")
    "<use id=\"ID_D\" type=\"logic\" xlink:href=\"#SENSOR_TREND\"><pg-set-pin variable=\"#v\" shape=\"\" var-type=\"double\" value=\"0\"/></use>\n"
    LINK("mean", "result_output", "ID_D", "v")
    USE("ID_S", "ClientSession") PIN("device", "", "string", "/cpu:0") "<pg-set-pin variable=\"#INFINITE_LOOP\" shape=\"\" var-type=\"bool\" value=\"FALSE\"/>\n</use>\n"
    LINK("mean", "output", "ID_S", "fetch_outputs")
    LINK("cast", "y", "ID_S", "fetch_outputs")
    LINK("mul_f", "z", "ID_S", "fetch_outputs")
    LINK("sub_d", "z", "ID_S", "fetch_outputs")
    LINK("rs", "output", "ID_S", "fetch_outputs")
    LINK("v_f", "ref", "ID_S", "fetch_outputs")
    LINK("v_typed", "ref", "ID_S", "fetch_outputs")
    LINK("v_wired", "ref", "ID_S", "fetch_outputs")
    LINK("c_ex", "output", "ID_S", "fetch_outputs")
    LINK("c_ex_lit", "output", "ID_S", "fetch_outputs")
    LINK("c_ex_empty", "output", "ID_S", "fetch_outputs")
    "</svg>\n";

START_TEST(value_syntax) {
    enu_result r;
    ck_assert_msg(!import(values_page, true, NULL, 0, false, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json);
    /* typed arrays: dtype from var-type, shape from the pin */
    cJSON *b = block(p, "c_semi");
    ck_assert_str_eq(attr_str(b, "dtype"), "float32");
    ck_assert_str_eq(attr_json(b, "value"), "[[0.5,1.5],[-2,4.25]]");
    ck_assert_str_eq(attr_json(block(p, "c_int"), "value"), "[3,-1,7]");
    ck_assert_str_eq(attr_str(block(p, "c_int"), "dtype"), "int32");
    /* Const_ex: a text val takes the dtype pin, an empty one float64 */
    ck_assert_str_eq(attr_str(block(p, "c_ex"), "dtype"), "int32");
    ck_assert_str_eq(attr_json(block(p, "c_ex"), "value"), "[1,2,3,4]");
    ck_assert_str_eq(attr_str(block(p, "c_ex_lit"), "dtype"), "float32");
    ck_assert_str_eq(attr_json(block(p, "c_ex_lit"), "value"), "0.10000000149011612");
    ck_assert_str_eq(attr_str(block(p, "c_ex_empty"), "dtype"), "float64");
    /* Variables: rule 2 (literal + dtype, braces give the shape), rule 3 (typed), rule 1 */
    ck_assert_str_eq(attr_str(block(p, "v_lit"), "dtype"), "float64");
    ck_assert_str_eq(attr_json(block(p, "v_lit"), "value"), "[[3,1],[4,1],[5,9]]");
    ck_assert_str_eq(attr_str(block(p, "v_f"), "dtype"), "float64");
    ck_assert_str_eq(attr_json(block(p, "v_f"), "value"), "[[0.5]]");
    ck_assert_str_eq(attr_json(block(p, "v_typed"), "value"), "[1,2,3]");
    ck_assert_str_eq(attr_json(block(p, "v_wired"), "value"), "[[0.5,1.5],[-2,4.25]]");
    ck_assert_str_eq(attr_str(block(p, "v_wired"), "dtype"), "float32");
    /* literals on unwired pins: int32 "1", float32 "255.0f", float64 "0.1", int32 list */
    ck_assert_str_eq(input(block(p, "add_i"), "y"), "add_i_y");
    ck_assert_str_eq(attr_str(block(p, "add_i_y"), "dtype"), "int32");
    ck_assert_str_eq(attr_json(block(p, "add_i_y"), "value"), "1");
    ck_assert_str_eq(attr_str(block(p, "mul_f_x"), "dtype"), "float32");
    ck_assert_str_eq(attr_json(block(p, "mul_f_x"), "value"), "255");
    ck_assert_str_eq(attr_str(block(p, "sub_d_x"), "dtype"), "float64");
    ck_assert_str_eq(attr_str(block(p, "rs_shape"), "dtype"), "int32");
    ck_assert_str_eq(attr_json(block(p, "rs_shape"), "value"), "[-1,4]");
    ck_assert_str_eq(attr_str(block(p, "mean_axis"), "dtype"), "int32");
    ck_assert_str_eq(input(block(p, "mean"), "reduction_indices"), "mean_axis");
    /* names: Subtract -> Sub, Multiply -> Mul */
    ck_assert_str_eq(cJSON_GetObjectItem(block(p, "sub_d"), "type")->valuestring, "Sub");
    ck_assert_str_eq(cJSON_GetObjectItem(block(p, "mul_f"), "type")->valuestring, "Mul");
    /* attribute text: typed, the first of a duplicate kept */
    ck_assert_str_eq(attr_json(block(p, "mm"), "transpose_b"), "true");
    ck_assert_str_eq(attr_json(block(p, "mm"), "transpose_a"), "false");
    ck_assert_str_eq(attr_json(block(p, "mean"), "keep_dims"), "true");
    ck_assert_str_eq(attr_str(block(p, "cast"), "DstT"), "float32");
    /* ui from translate(); display blocks and the session dropped; outputs from the fetches */
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(block(p, "mm"), "ui"), "x")->valueint, 101);
    cJSON *o = cJSON_GetObjectItem(p, "outputs");
    ck_assert_int_eq(cJSON_GetArraySize(o), 11);
    ck_assert_str_eq(cJSON_GetArrayItem(o, 0)->valuestring, "mean");
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(p, "blocks")) {
        ck_assert_str_ne(cJSON_GetObjectItem(b, "id")->valuestring, "ID_D");
        ck_assert_str_ne(cJSON_GetObjectItem(b, "id")->valuestring, "ID_S");
    }
    /* the report: notes for the duplicate and the unknown name */
    ck_assert_ptr_nonnull(strstr(r.report_json, "given twice"));
    ck_assert_ptr_nonnull(strstr(r.report_json, "bogus_"));
    cJSON_Delete(p);

    /* the page loads, is canonical after one fmt, and runs */
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_page *pg = NULL;
    bf_error e = {0};
    ck_assert_msg(!bf_page_load_string(ctx, r.page_json, strlen(r.page_json), "t", NULL, &pg,
                                       NULL, &e), "%s", e.message);
    char *canon = NULL, *again = NULL;
    ck_assert_int_eq(bf_page_to_json(pg, &canon, &e), BF_OK);
    bf_page *pg2 = NULL;
    ck_assert_int_eq(bf_page_load_string(ctx, canon, strlen(canon), "t", NULL, &pg2, NULL, &e), BF_OK);
    ck_assert_int_eq(bf_page_to_json(pg2, &again, &e), BF_OK);
    ck_assert_str_eq(canon, again);
    bf_page_free(pg2);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, pg, &s, &e), BF_OK);
    bf_run_options ro;
    bf_run_options_init(&ro);
    ck_assert_msg(bf_session_run(s, &ro, NULL, &e) == BF_OK, "%s: %s", e.block_id, e.message);
    const bf_tensor *t = bf_session_output(s, "cast", NULL);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F32);
    ck_assert(bf_tensor_get_f64(t, 0) == 4 && bf_tensor_get_f64(t, 1) == 0 && bf_tensor_get_f64(t, 2) == 8);
    t = bf_session_output(s, "sub_d", NULL); /* 0.1 - [[3,1],[4,1],[5,9]] in float64 */
    ck_assert(bf_tensor_get_f64(t, 5) == 0.1 - 9);
    t = bf_session_output(s, "mul_f", NULL);
    ck_assert(bf_tensor_get_f64(t, 3) == 255.0 * 4.25);
    t = bf_session_output(s, "mean", NULL); /* mean over axis 0 of A A^T, keep_dims */
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    double a[4] = {0.5, 1.5, -2, 4.25};
    double m0 = (a[0] * a[0] + a[1] * a[1] + a[2] * a[0] + a[3] * a[1]) / 2;
    ck_assert_double_eq_tol(bf_tensor_get_f64(t, 0), m0, 1e-6);
    bf_string_free(canon);
    bf_string_free(again);
    bf_session_free(s);
    bf_context_free(ctx);
    enu_result_free(&r);
}
END_TEST

/* 4.x spelling (`type=`, braces kept as typed), dilations_ not read by 2.0, const pins. */
START_TEST(version_4_spelling_and_const_pins) {
    const char *page =
        SVG_HEAD4
        "<use id=\"x\" type=\"enu_tensorflow2_0\" transform=\"translate(1042,351) rotate(0) scale(1, 1)\" xlink:href=\"#Const\">"
        PIN4("val", "[1][4][4][1]", "double", "{1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}") "</use>\n"
        "<use id=\"f\" type=\"enu_tensorflow2_0\" xlink:href=\"#Const\">" PIN4("val", "[2][2][1][1]", "double", "{1,0,0,1}") "</use>\n"
        "<use id=\"conv\" type=\"enu_tensorflow2_0\" xlink:href=\"#Conv2D\">"
        PIN4("strides", "", "string", "{1,2,2,1}") PIN4("padding", "", "string", "VALID")
        PIN4("attrs", "", "string", "data_format_ = NHWC;dilations_ = {1,2,2,1};use_cudnn_on_gpu_ = true;") "</use>\n"
        LINK("x", "output", "conv", "input") LINK("f", "output", "conv", "filter")
        "<use id=\"pool\" type=\"enu_tensorflow2_0\" xlink:href=\"#MaxPool\">"
        PIN4("ksize", "", "string", "{1,2,2,1}") PIN4("strides", "", "string", "{1,1,1,1}") PIN4("padding", "", "string", "SAME")
        PIN4("attrs", "", "string", "data_format_ = NHWC;") "</use>\n"
        LINK("conv", "output", "pool", "input")
        "</svg>\n";
    enu_result r;
    ck_assert_msg(!import(page, true, NULL, 0, false, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json);
    ck_assert_str_eq(attr_json(block(p, "conv"), "strides"), "[1,2,2,1]");
    ck_assert_str_eq(attr_str(block(p, "conv"), "padding"), "VALID");
    ck_assert_str_eq(attr_json(block(p, "conv"), "dilations"), "(none)");
    ck_assert_str_eq(attr_json(block(p, "conv"), "use_cudnn_on_gpu"), "true");
    ck_assert_str_eq(attr_json(block(p, "pool"), "ksize"), "[1,2,2,1]");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(block(p, "x"), "ui"), "x")->valueint, 1042);
    /* no ClientSession: what nothing reads is the output */
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(p, "outputs"), 0)->valuestring, "pool");
    ck_assert_ptr_nonnull(strstr(r.report_json, "not read by the 2.0 plugin"));
    cJSON_Delete(p);
    enu_result_free(&r);
}
END_TEST

/* Binary values at their offsets: float, int and double arrays, and a Variable's. */
START_TEST(binary_values_from_the_dat) {
    unsigned char dat[4 * 6 + 4 * 3 + 8 * 2 + 4 * 200];
    float f[6] = {1.5f, -2.25f, 3.0f, 0.125f, 7.0f, -1.0f};
    int32_t iv[3] = {-7, 0, 123456};
    double dv[2] = {0.1, -1e300};
    memcpy(dat, f, sizeof f);
    memcpy(dat + 24, iv, sizeof iv);
    memcpy(dat + 36, dv, sizeof dv);
    for (int k = 0; k < 200; k++) {
        float x = (float)k / 8;
        memcpy(dat + 52 + 4 * k, &x, 4);
    }
    const char *page = SVG_HEAD
        USE("cf", "Const") BIN("val", "[2][3]", "float", "0") "</use>\n"
        USE("ci", "Const_ex") BIN("val", "[3]", "int", "24") PIN("dtype", "", "string", "DT_FLOAT") "</use>\n"
        USE("cd", "Const") BIN("val", "[2]", "double", "36") "</use>\n"
        USE("w", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "")
            BIN("initvalues", "[10][20]", "float", "52") BIN("result_ref", "[10][20]", "float", "52") "</use>\n"
        "</svg>\n";
    enu_result r;
    ck_assert_msg(!import(page, true, dat, sizeof dat, false, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json);
    ck_assert_str_eq(attr_json(block(p, "cf"), "value"), "[[1.5,-2.25,3],[0.125,7,-1]]");
    ck_assert_str_eq(attr_str(block(p, "ci"), "dtype"), "int32"); /* binary: its own type */
    ck_assert_str_eq(attr_json(block(p, "ci"), "value"), "[-7,0,123456]");
    ck_assert_str_eq(attr_json(block(p, "cd"), "value"), "[0.1,-1e+300]");
    /* 200 elements: a .npy file beside the page */
    ck_assert_str_eq(attr_str(block(p, "w"), "file"), "w.npy");
    ck_assert_int_eq(r.n_files, 1);
    ck_assert_str_eq(r.files[0].name, "w.npy");
    bf_write_bytes(bf_sp("w.npy"), r.files[0].data, r.files[0].size);
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_tensor *t = NULL;
    bf_error e = {0};
    ck_assert_msg(!bf_tensor_load_npy(ctx, bf_sp("w.npy"), &t, &e), "%s", e.message);
    ck_assert_int_eq(bf_tensor_rank(t), 2);
    ck_assert_int_eq(bf_tensor_dims(t)[0], 10);
    ck_assert_int_eq(bf_tensor_dtype(t), BF_DTYPE_F32);
    for (int k = 0; k < 200; k++) ck_assert(bf_tensor_get_f64(t, k) == k / 8.0);
    bf_tensor_free(t);
    bf_context_free(ctx);
    /* the report lists the four values read (caches are not read) */
    cJSON *rep = cJSON_Parse(r.report_json);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(rep, "dat_values")), 4);
    cJSON_Delete(rep);
    cJSON_Delete(p);
    enu_result_free(&r);
    /* without the .dat: an error naming the block and pin */
    expect_error(page, NULL, 0, "\"cf\"", "\"val\"");
    /* a .dat one byte short */
    expect_error(page, dat, sizeof dat - 1, "\"w\"", "past the end");
}
END_TEST

/* The Task JSON export of a graph and its SVG page give the same page and numbers. */
static const char *task_json =
    "{\n\"object\":\n[\n"
    "\t{\"symbol-name\":\"#Const\", \"id\":\"A\", \"input\":[{\"pin-name\":\"val\", \"pin-type\":\"double\", \"pin-save\":\"text\", \"pin-shape\":\"[2][2]\", \"pin-interface\":\"Input::Initializer\", \"pin-datatype\":\"\", \"pin-initial\":\"3;2;-1;0\", \"in-symbol-name\":\"\", \"in-symbol-id\":\"\", \"in-symbol-pin-name\":\"\", \"in-symbol-pin-type\":\"\"}], \"output\":[]},\n"
    "\t{\"symbol-name\":\"#Variable\", \"id\":\"W\", \"input\":[{\"pin-name\":\"shape\", \"pin-type\":\"string\", \"pin-save\":\"text\", \"pin-shape\":\"\", \"pin-initial\":\"{1,2}\", \"in-symbol-id\":\"\"}, {\"pin-name\":\"dtype\", \"pin-type\":\"string\", \"pin-save\":\"text\", \"pin-shape\":\"\", \"pin-initial\":\"DT_DOUBLE\", \"in-symbol-id\":\"\"}, {\"pin-name\":\"initvalues\", \"pin-type\":\"string\", \"pin-save\":\"text\", \"pin-shape\":\"\", \"pin-initial\":\"{{3.0f,5}}\", \"in-symbol-id\":\"\"}], \"output\":[]},\n"
    "\t{\"symbol-name\":\"#MatMul\", \"id\":\"M\", \"input\":[{\"pin-name\":\"a\", \"pin-type\":\"string\", \"pin-initial\":\"\", \"in-symbol-name\":\"#Const\", \"in-symbol-id\":\"A\", \"in-symbol-pin-name\":\"output\", \"in-symbol-pin-interface\":\"Output\"}, {\"pin-name\":\"attrs\", \"pin-type\":\"string\", \"pin-initial\":\"transpose_a_ = false;transpose_b_ = true;\", \"in-symbol-id\":\"\"}, {\"pin-name\":\"b\", \"pin-type\":\"string\", \"pin-initial\":\"\", \"in-symbol-id\":\"W\", \"in-symbol-pin-name\":\"ref\"}], \"output\":[{\"pin-name\":\"result_product\", \"pin-type\":\"double\", \"pin-shape\":\"[2][1]\", \"pin-initial\":\"\"}]},\n"
    "\t{\"symbol-name\":\"#AddN\", \"id\":\"N\", \"input\":[{\"pin-name\":\"inputs\", \"pin-initial\":\"\", \"in-symbol-id\":\"M\", \"in-symbol-pin-name\":\"product\"}, {\"pin-name\":\"inputs\", \"pin-initial\":\"\", \"in-symbol-id\":\"M\", \"in-symbol-pin-name\":\"product\"}, {\"pin-name\":\"inputs\", \"pin-initial\":\"\", \"in-symbol-id\":\"A2\", \"in-symbol-pin-name\":\"output\"}], \"output\":[]},\n"
    "\t{\"symbol-name\":\"#ClientSession\", \"id\":\"S\", \"input\":[{\"pin-name\":\"fetch_outputs\", \"in-symbol-id\":\"N\", \"in-symbol-pin-name\":\"sum\"}, {\"pin-name\":\"INFINITE_LOOP\", \"pin-type\":\"bool\", \"pin-initial\":\"FALSE\", \"in-symbol-id\":\"\"}], \"output\":[]},\n"
    "\t{\"symbol-name\":\"#Const\", \"id\":\"A2\", \"input\":[{\"pin-name\":\"val\", \"pin-type\":\"double\", \"pin-shape\":\"[2][1]\", \"pin-initial\":\"1,1\", \"in-symbol-id\":\"\"}], \"output\":[]}\n"
    "]\n}\n";

static const char *task_svg =
    SVG_HEAD
    USE("A", "Const") PIN("val", "[2][2]", "double", "3.000000;2.000000;-1.000000;0.000000") "</use>\n"
    USE("W", "Variable") PIN("shape", "", "string", "{1,2}") PIN("dtype", "", "string", "DT_DOUBLE") PIN("initvalues", "", "string", "{{3.0f,5}}") "</use>\n"
    USE("M", "MatMul") PIN("a", "", "string", "") PIN("attrs", "", "string", "transpose_a_ = false;transpose_b_ = true;") PIN("b", "", "string", "") "</use>\n"
    LINK("A", "output", "M", "a") LINK("W", "ref", "M", "b")
    USE("N", "AddN") PIN("inputs", "", "string", "") "</use>\n"
    LINK("M", "product", "N", "inputs") LINK("M", "product", "N", "inputs")
    USE("A2", "Const") PIN("val", "[2][1]", "double", "{1,1}") "</use>\n"
    LINK("A2", "output", "N", "inputs")
    USE("S", "ClientSession") "</use>\n" LINK("N", "sum", "S", "fetch_outputs")
    "</svg>\n";

static double run_first(const char *json, const char *id, int k) {
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_page *pg = NULL;
    bf_error e = {0};
    ck_assert_msg(!bf_page_load_string(ctx, json, strlen(json), "t", NULL, &pg, NULL, &e), "%s",
                  e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, pg, &s, &e), BF_OK);
    bf_run_options ro;
    bf_run_options_init(&ro);
    ck_assert_msg(bf_session_run(s, &ro, NULL, &e) == BF_OK, "%s", e.message);
    double v = bf_tensor_get_f64(bf_session_output(s, id, NULL), k);
    bf_session_free(s);
    bf_context_free(ctx);
    return v;
}

START_TEST(task_json_and_svg_agree) {
    enu_result a, b;
    ck_assert_msg(!import(task_json, true, NULL, 0, false, &a), "%s", a.error);
    ck_assert_msg(!import(task_svg, true, NULL, 0, false, &b), "%s", b.error);
    cJSON *pa = cJSON_Parse(a.page_json), *pb = cJSON_Parse(b.page_json);
    ck_assert_str_eq(input(block(pa, "N"), "inputs_2"), "A2");
    ck_assert_str_eq(input(block(pb, "N"), "inputs_2"), "A2");
    ck_assert_str_eq(input(block(pa, "N"), "inputs_0"), "M");
    ck_assert_str_eq(attr_json(block(pa, "W"), "value"), attr_json(block(pb, "W"), "value"));
    ck_assert_str_eq(attr_json(block(pa, "W"), "value"), "[[3,5]]");
    /* [[3,2],[-1,0]] . [3,5]^T = [[19],[-3]], twice, + 1 */
    for (int k = 0; k < 2; k++) {
        double want = k ? -5 : 39;
        ck_assert(run_first(a.page_json, "N", k) == want);
        ck_assert(run_first(b.page_json, "N", k) == want);
    }
    /* the JSON export is also read as UTF-8 */
    enu_result c;
    ck_assert_msg(!import(task_json, false, NULL, 0, false, &c), "%s", c.error);
    ck_assert_str_eq(c.page_json, a.page_json);
    enu_result_free(&c);
    cJSON_Delete(pa);
    cJSON_Delete(pb);
    enu_result_free(&a);
    enu_result_free(&b);
}
END_TEST

/* An unsupported block (Unstack) and a wire from its indexed output. */
static const char *unstack_page =
    SVG_HEAD
    USE("x", "Const") PIN("val", "[4][2]", "float", "1;2;3;4;5;6;7;8") "</use>\n"
    USE("u", "Unstack") PIN("num", "", "string", "4") "</use>\n"
    LINK("x", "output", "u", "value")
    USE("n", "Negate") PIN("x", "", "string", "") "</use>\n"
    LINK("u", "output[3]", "n", "x")
    USE("S", "ClientSession") "</use>\n" LINK("n", "y", "S", "fetch_outputs")
    "</svg>\n";

START_TEST(unsupported_blocks_listed_or_placeholders) {
    enu_result r;
    ck_assert(import(unstack_page, true, NULL, 0, false, &r) != 0);
    ck_assert_msg(strstr(r.error, "\"u\" (Unstack)") && strstr(r.error, "partial import"), "%s", r.error);
    cJSON *rep = cJSON_Parse(r.report_json);
    cJSON *u = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "unsupported"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(u, "id")->valuestring, "u");
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(u, "feeds"), 0)->valuestring,
                     "n:x <- output[3]");
    cJSON_Delete(rep);
    enu_result_free(&r);

    ck_assert_msg(!import(unstack_page, true, NULL, 0, true, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json);
    ck_assert_str_eq(cJSON_GetObjectItem(block(p, "u"), "type")->valuestring, "Placeholder");
    ck_assert_str_eq(input(block(p, "n"), "x"), "u");
    ck_assert_ptr_nonnull(strstr(r.report_json, "\"placeholder\":\"u\""));
    cJSON_Delete(p);
    enu_result_free(&r);
}
END_TEST

/* AddSymbolicGradients: grad_outputs[k] is the gradient of its output with respect to its
 * k-th input, built by blockflow's gradient builder; here d(sum(w^2))/dw = 2w, negated. */
static const char *symgrad_page =
    SVG_HEAD
    USE("w", "Variable") PIN("dtype", "", "string", "") PIN("initvalues", "[3]", "double", "1;-2;0.5") "</use>\n"
    USE("v", "Variable") PIN("dtype", "", "string", "") PIN("initvalues", "[3]", "double", "3;3;3") "</use>\n"
    USE("sq", "Square") "</use>\n" LINK("w", "ref", "sq", "x")
    USE("m", "Multiply") "</use>\n" LINK("sq", "y", "m", "x") LINK("v", "ref", "m", "y")
    USE("loss", "Sum") PIN("axis", "", "string", "0") "</use>\n" LINK("m", "z", "loss", "input")
    USE("g", "AddSymbolicGradients") "</use>\n"
    LINK("loss", "output", "g", "outputs") LINK("v", "ref", "g", "inputs") LINK("w", "ref", "g", "inputs")
    USE("n", "Negate") "</use>\n" LINK("g", "grad_outputs[1]", "n", "x")
    USE("n0", "Negate") "</use>\n" LINK("g", "grad_outputs[0]", "n0", "x")
    USE("S", "ClientSession") "</use>\n" LINK("n", "y", "S", "fetch_outputs") LINK("n0", "y", "S", "fetch_outputs")
    "</svg>\n";

START_TEST(add_symbolic_gradients_built) {
    enu_result r;
    ck_assert_msg(!import(symgrad_page, true, NULL, 0, false, &r), "%s", r.error);
    ck_assert_ptr_nonnull(strstr(r.page_json, "symbolic_gradients"));
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    char *built = NULL, why[600];
    ck_assert_msg(!enu_build_symbolic_gradients(ctx, r.page_json, "t", NULL, &built, why,
                                                sizeof why), "%s", why);
    ck_assert_ptr_nonnull(built);
    ck_assert_ptr_null(strstr(built, "Placeholder"));
    /* -d/dw sum(v w^2) = -2 v w; -d/dv = -w^2 */
    double w[3] = {1, -2, 0.5};
    for (int k = 0; k < 3; k++) {
        ck_assert_double_eq_tol(run_first(built, "n", k), -2 * 3 * w[k], 1e-12);
        ck_assert_double_eq_tol(run_first(built, "n0", k), -w[k] * w[k], 1e-12);
    }
    bf_string_free(built);
    /* one output is needed: an AddSymbolicGradients without any is a clean error */
    enu_result_free(&r);
    const char *bad = SVG_HEAD USE("g", "AddSymbolicGradients") "</use>\n"
        USE("n", "Negate") "</use>\n" LINK("g", "grad_outputs[0]", "n", "x") "</svg>\n";
    ck_assert_msg(!import(bad, true, NULL, 0, false, &r), "%s", r.error);
    ck_assert(enu_build_symbolic_gradients(ctx, r.page_json, "t", NULL, &built, why, sizeof why));
    ck_assert_msg(strstr(why, "\"g\"") && strstr(why, "0 outputs"), "%s", why);
    enu_result_free(&r);
    bf_context_free(ctx);
}
END_TEST

START_TEST(hostile_input) {
    enu_result r;
    /* malformed UTF-16: a lone high surrogate, an odd byte count */
    unsigned char lone[] = {0xff, 0xfe, '<', 0, 0x00, 0xd8, 'a', 0};
    ck_assert(enu_import(lone, sizeof lone, NULL, 0, NULL, &r) != 0);
    ck_assert_ptr_nonnull(strstr(r.error, "surrogate"));
    enu_result_free(&r);
    unsigned char odd[] = {0xff, 0xfe, '<', 0, 's'};
    ck_assert(enu_import(odd, sizeof odd, NULL, 0, NULL, &r) != 0);
    ck_assert_ptr_nonnull(strstr(r.error, "odd number"));
    enu_result_free(&r);
    unsigned char nul[] = {'<', 's', 0, '>'};
    ck_assert(enu_import(nul, sizeof nul, NULL, 0, NULL, &r) != 0);
    enu_result_free(&r);
    /* XML bombs: a DOCTYPE with entities, an undefined entity, deep nesting */
    expect_error("<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 "
                 "\"&lol;&lol;&lol;&lol;\">]><svg a=\"&lol2;\"></svg>", NULL, 0, "DOCTYPE", NULL);
    expect_error(SVG_HEAD "<use id=\"a&lol;\" xlink:href=\"#Const\"/></svg>", NULL, 0,
                 "undefined entity", NULL);
    {
        char deep[70000] = SVG_HEAD;
        for (int i = 0; i < 5000; i++) strcat(deep, "<g>");
        expect_error(deep, NULL, 0, "nested too deeply", NULL);
    }
    expect_error(SVG_HEAD "<use id=\"a\"></g></svg>", NULL, 0, "does not match", NULL);
    expect_error(SVG_HEAD "<use id=\"a\" id=\"b\"/></svg>", NULL, 0, "twice", NULL);
    /* lying and enormous shapes, ragged literals */
    expect_error(SVG_HEAD USE("c", "Const") PIN("val", "[2][2]", "float", "1;2;3") "</use></svg>",
                 NULL, 0, "\"c\"", "\"val\"");
    expect_error(SVG_HEAD USE("c", "Const") PIN("val", "[2][2]", "float", "1;2;3;4;5") "</use></svg>",
                 NULL, 0, "\"c\"", "more values");
    expect_error(SVG_HEAD USE("c", "Const") BIN("val", "[100000][100000][100000]", "float", "0") "</use></svg>",
                 "x", 1, "\"c\"", "more than");
    expect_error(SVG_HEAD USE("c", "Const") BIN("val", "[99999999999999999999]", "float", "0") "</use></svg>",
                 "x", 1, "\"c\"", "too large");
    expect_error(SVG_HEAD USE("c", "Const") BIN("val", "[4]", "float", "18446744073709551615") "</use></svg>",
                 "x", 1, "\"c\"", "binary-pos");
    expect_error(SVG_HEAD USE("c", "Const") BIN("val", "[4]", "float", "9223372036854775800") "</use></svg>",
                 "x", 1, "\"c\"", "past the end");
    expect_error(SVG_HEAD USE("v", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "DT_FLOAT")
                 PIN("initvalues", "", "string", "{{1,2},{3}}") "</use></svg>", NULL, 0, "\"v\"", "\"initvalues\"");
    expect_error(SVG_HEAD USE("v", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "DT_FLOAT")
                 PIN("initvalues", "", "string", "{{1,2},{3,4},{5,6}}") "</use></svg>", NULL, 0, "\"v\"", "differs");
    expect_error(SVG_HEAD USE("v", "Variable") PIN("shape", "", "string", "{2}") PIN("dtype", "", "string", "DT_FLOAT")
                 PIN("initvalues", "", "string", "{1,{2}}") "</use></svg>", NULL, 0, "\"v\"", "differ");
    /* duplicate ids, wires to nothing, a pin with neither wire nor value */
    expect_error(SVG_HEAD USE("c", "Const") "</use>" USE("c", "Const") "</use></svg>", NULL, 0,
                 "\"c\"", "twice");
    expect_error(SVG_HEAD USE("n", "Negate") PIN("x", "", "string", "") "</use>" LINK("nope", "output", "n", "x") "</svg>",
                 NULL, 0, "\"nope\"", NULL);
    expect_error(SVG_HEAD USE("n", "Negate") PIN("x", "", "string", "") "</use>" SESSION("n") "</svg>",
                 NULL, 0, "\"n\"", "\"x\"");
    /* not a page at all */
    expect_error("hello", NULL, 0, "neither", NULL);
    expect_error("{\"objects\": []}", NULL, 0, "\"object\"", NULL);
}
END_TEST

/* Ids that blockflow refuses are made valid and mapped. */
START_TEST(ids_made_valid) {
    const char *page = SVG_HEAD
        USE("a/b:c", "Const") PIN("val", "[1]", "float", "1") "</use>\n"
        USE(".hidden", "Negate") PIN("x", "", "string", "") "</use>\n"
        LINK("a/b:c", "output", ".hidden", "x")
        "</svg>\n";
    enu_result r;
    ck_assert_msg(!import(page, true, NULL, 0, false, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json);
    cJSON *n = block(p, "b.hidden");
    ck_assert_str_eq(input(n, "x"), "a_b_c");
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(n, "x-enuspace"), "id")->valuestring,
                     ".hidden");
    cJSON *ids = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "x-enuspace"), "ids");
    ck_assert_str_eq(cJSON_GetObjectItem(ids, "a/b:c")->valuestring, "a_b_c");
    ck_assert_str_eq(cJSON_GetObjectItem(ids, ".hidden")->valuestring, "b.hidden");
    cJSON_Delete(p);
    enu_result_free(&r);
}
END_TEST

START_TEST(cli_import) {
    char src[4096];
    snprintf(src, sizeof src, "%s/tests/data/enuspace/1.5/gradient_descent_xw_apply.svg",
             bf_test_source_dir());
    char out[4096];
    snprintf(out, sizeof out, "%s", bf_sp("gd.json"));
    bf_result r = bf_run(NULL, (const char *[]){"import", src, "-o", out, NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.err, "outputs: ID_COST ID_1eRwic0"));
    bf_result_free(&r);
    r = bf_run(NULL, (const char *[]){"fmt", "--check", out, NULL});
    ck_assert_msg(r.status == 0, "%s%s", r.out, r.err);
    bf_result_free(&r);
    r = bf_run(NULL, (const char *[]){"train", out, "--steps", "3", "--quiet", NULL});
    ck_assert_msg(r.status == 0, "%s", r.err);
    bf_result_free(&r);
    /* --json: the report on stdout */
    r = bf_run(NULL, (const char *[]){"import", src, "-o", out, "--json", NULL});
    ck_assert_int_eq(r.status, 0);
    cJSON *j = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(cJSON_GetObjectItem(j, "blocks_read")->valueint, 12);
    cJSON_Delete(j);
    bf_result_free(&r);
    /* a failed import writes nothing */
    char bad[4096], bad_out[4096];
    snprintf(bad, sizeof bad, "%s", bf_sp("bad.svg"));
    snprintf(bad_out, sizeof bad_out, "%s", bf_sp("bad.json"));
    bf_write_file(bad, SVG_HEAD USE("g", "Unstack") "</use>" USE("n", "Negate") "</use>" LINK("g", "output[1]", "n", "x") SESSION("n") "</svg>");
    r = bf_run(NULL, (const char *[]){"import", bad, "-o", bad_out, NULL});
    ck_assert_int_eq(r.status, 3);
    ck_assert_ptr_nonnull(strstr(r.err, "Unstack"));
    ck_assert(!bf_exists(bad_out));
    bf_result_free(&r);
    r = bf_run(NULL, (const char *[]){"import", NULL});
    ck_assert_int_eq(r.status, 2);
    bf_result_free(&r);
}
END_TEST


/* The MNIST reader pipeline, the one-hot chain, a Switch-gated Assign, a Save chain and the
 * counters that only schedule them (FORMAT.md 7.9), on IDX files of 4 "images" of 2x2. */
#define CONSTEX(id, val, shape, type, dt) USE(id, "Const_ex") PIN("val", shape, type, val) PIN("dtype", "", "string", dt) "</use>\n"
static const char *pipeline_page =
    SVG_HEAD
    /* images */
    USE("q1", "FIFOQueue") PIN("component_types", "", "string", "DT_STRING") "</use>\n"
    USE("rd1", "FixedLengthRecordReader") PIN("record_bytes", "", "string", "4") PIN("attrs", "", "string", "header_bytes_ = 16;footer_bytes_ = 0;") "</use>\n"
    USE("rr1", "ReaderReadUpTo") PIN("num_records", "", "string", "2") "</use>\n"
    LINK("rd1", "reader_handle", "rr1", "reader_handle") LINK("q1", "handle", "rr1", "queue_handle")
    USE("qs", "QueueSize") "</use>\n" LINK("q1", "handle", "qs", "handle")
    USE("empty", "Equal") PIN("y", "", "string", "0") "</use>\n" LINK("qs", "size", "empty", "x")
    CONSTEX("path1", "C:\\\\data\\\\dataset\\\\imgs.idx", "", "string", "DT_STRING")
    USE("sw1", "Switch") "</use>\n" LINK("path1", "output", "sw1", "data") LINK("empty", "z", "sw1", "pred")
    USE("il1", "InputList") "</use>\n" LINK("sw1", "output_true", "il1", "outputlist")
    USE("enq1", "QueueEnqueue") "</use>\n" LINK("q1", "handle", "enq1", "handle") LINK("il1", "output", "enq1", "components")
    USE("dec1", "DecodeRaw") PIN("out_type", "", "string", "DT_UINT8") "</use>\n" LINK("rr1", "values", "dec1", "bytes")
    USE("castx", "Cast") PIN("DstT", "", "string", "DT_FLOAT") "</use>\n" LINK("dec1", "output", "castx", "x")
    USE("div", "Div") PIN("y", "", "string", "255.0f") "</use>\n" LINK("castx", "y", "div", "x")
    /* labels */
    USE("q2", "FIFOQueue") PIN("component_types", "", "string", "DT_STRING") "</use>\n"
    USE("rd2", "FixedLengthRecordReader") PIN("record_bytes", "", "string", "1") PIN("attrs", "", "string", "header_bytes_ = 8;") "</use>\n"
    USE("rr2", "ReaderReadUpTo") PIN("num_records", "", "string", "2") "</use>\n"
    LINK("rd2", "reader_handle", "rr2", "reader_handle") LINK("q2", "handle", "rr2", "queue_handle")
    CONSTEX("path2", "C:\\\\data\\\\dataset\\\\labels.idx", "", "string", "DT_STRING")
    USE("sw2", "Switch") "</use>\n" LINK("path2", "output", "sw2", "data") LINK("empty", "z", "sw2", "pred")
    USE("il2", "InputList") "</use>\n" LINK("sw2", "output_true", "il2", "outputlist")
    USE("enq2", "QueueEnqueue") "</use>\n" LINK("q2", "handle", "enq2", "handle") LINK("il2", "output", "enq2", "components")
    USE("dec2", "DecodeRaw") PIN("out_type", "", "string", "DT_UINT8") "</use>\n" LINK("rr2", "values", "dec2", "bytes")
    USE("lab", "Cast") PIN("DstT", "", "string", "DT_INT32") "</use>\n" LINK("dec2", "output", "lab", "x")
    /* the one-hot chain */
    USE("ta", "TensorArray") PIN("size", "", "string", "2") PIN("dtype", "", "string", "DT_INT32") "</use>\n"
    CONSTEX("rows", "0;1", "[2][1]", "float", "DT_INT32")
    USE("tw1", "TensorArrayWrite") PIN("index", "", "string", "1") PIN("flow_in", "", "string", "0.5") "</use>\n"
    LINK("ta", "handle", "tw1", "handle") LINK("lab", "y", "tw1", "value")
    USE("tw0", "TensorArrayWrite") PIN("index", "", "string", "0") "</use>\n"
    LINK("ta", "handle", "tw0", "handle") LINK("rows", "output", "tw0", "value") LINK("tw1", "flow_out", "tw0", "flow_in")
    USE("tg", "TensorArrayGather") PIN("indices", "", "string", "{0,1}") PIN("dtype", "", "string", "DT_INT32") "</use>\n"
    LINK("ta", "handle", "tg", "handle") LINK("tw0", "flow_out", "tg", "flow_in")
    USE("trs", "Reshape") PIN("shape", "", "string", "{2,2}") "</use>\n" LINK("tg", "value", "trs", "tensor")
    USE("c64", "Cast") PIN("DstT", "", "string", "DT_INT64") "</use>\n" LINK("trs", "output", "c64", "x")
    CONSTEX("perm", "1;0", "[2]", "float", "DT_INT32")
    USE("tp", "Transpose") "</use>\n" LINK("c64", "y", "tp", "x") LINK("perm", "output", "tp", "perm")
    CONSTEX("oshape", "2;3", "[2]", "float", "DT_INT64")
    CONSTEX("ones", "1;1", "[2]", "float", "DT_INT32")
    CONSTEX("zero", "0", "", "string", "DT_INT32")
    USE("std", "SparseToDense") "</use>\n"
    LINK("tp", "y", "std", "sparse_indices") LINK("oshape", "output", "std", "output_shape")
    LINK("ones", "output", "std", "sparse_values") LINK("zero", "output", "std", "default_value")
    USE("yf", "Cast") PIN("DstT", "", "string", "DT_FLOAT") "</use>\n" LINK("std", "dense", "yf", "x")
    /* the load schedule: counter, Mod 2, Equal 0, Switches gating the Assigns */
    USE("cnt", "Variable") PIN("shape", "", "string", "{}") PIN("dtype", "", "string", "DT_INT32") PIN("initvalues", "", "string", "1") "</use>\n"
    USE("inc", "Add") PIN("y", "", "string", "1") "</use>\n" LINK("cnt", "ref", "inc", "x")
    USE("acnt", "Assign") "</use>\n" LINK("cnt", "ref", "acnt", "ref") LINK("inc", "z", "acnt", "value")
    USE("mod", "Mod") PIN("y", "", "string", "2") "</use>\n" LINK("acnt", "output_ref", "mod", "x")
    USE("load", "Equal") PIN("y", "", "string", "0") "</use>\n" LINK("mod", "z", "load", "x")
    USE("X", "Variable") PIN("shape", "", "string", "{2,2}") PIN("dtype", "", "string", "") PIN("initvalues", "[2][4]", "float", "0;0;0;0;0;0;0;0") "</use>\n"
    USE("Y", "Variable") PIN("dtype", "", "string", "") PIN("initvalues", "[2][3]", "float", "0;0;0;0;0;0") "</use>\n"
    USE("gx", "Switch") "</use>\n" LINK("div", "z", "gx", "data") LINK("load", "z", "gx", "pred")
    USE("gy", "Switch") "</use>\n" LINK("yf", "y", "gy", "data") LINK("load", "z", "gy", "pred")
    USE("ax", "Assign") "</use>\n" LINK("X", "ref", "ax", "ref") LINK("gx", "output_true", "ax", "value")
    USE("ay", "Assign") "</use>\n" LINK("Y", "ref", "ay", "ref") LINK("gy", "output_true", "ay", "value")
    USE("opx", "Operation") "</use>\n" LINK("ax", "output_ref", "opx", "operation")
    USE("opy", "Operation") "</use>\n" LINK("ay", "output_ref", "opy", "operation")
    /* a Save of X, and an OneHot nothing feeds */
    USE("gs", "Switch") "</use>\n" LINK("X", "ref", "gs", "data") LINK("load", "z", "gs", "pred")
    USE("ils", "InputList") "</use>\n" LINK("gs", "output_true", "ils", "outputlist")
    USE("save", "Save") PIN("filename", "", "string", "C:\\\\out\\\\trainX.t") PIN("tensor_names", "", "string", "{X}") "</use>\n"
    LINK("ils", "output", "save", "data")
    USE("stray", "OneHot") PIN("depth", "", "string", "10") PIN("on_value", "", "string", "1") PIN("off_value", "", "string", "0") "</use>\n"
    USE("S", "ClientSession") "</use>\n"
    LINK("X", "ref", "S", "fetch_outputs") LINK("Y", "ref", "S", "fetch_outputs") LINK("cnt", "ref", "S", "fetch_outputs")
    LINK("enq1", "operation", "S", "run_outputs") LINK("enq2", "operation", "S", "run_outputs")
    LINK("opx", "output", "S", "run_outputs") LINK("opy", "output", "S", "run_outputs") LINK("save", "operation", "S", "run_outputs")
    "</svg>\n";

START_TEST(mnist_pipeline_and_one_hot) {
    /* 4 images of 2x2 and their labels, as IDX */
    unsigned char imgs[16 + 16] = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 2, 0, 0, 0, 2};
    for (int k = 0; k < 16; k++) imgs[16 + k] = (unsigned char)(10 * k + 5);
    unsigned char labels[8 + 4] = {0, 0, 8, 1, 0, 0, 0, 4, 2, 0, 1, 2};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/dataset", bf_scratch());
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    bf_write_bytes(bf_sp("dataset/imgs.idx"), imgs, sizeof imgs);
    bf_write_bytes(bf_sp("dataset/labels.idx"), labels, sizeof labels);
    enu_result r;
    ck_assert_msg(!import(pipeline_page, true, NULL, 0, false, &r), "%s", r.error);
    cJSON *p = cJSON_Parse(r.page_json), *rep = cJSON_Parse(r.report_json);
    /* every mapping is in the report */
    char *maps = cJSON_PrintUnformatted(cJSON_GetObjectItem(rep, "mappings"));
    ck_assert_msg(strstr(maps, "reader pipeline dec1") && strstr(maps, "reader pipeline dec2") &&
                  strstr(maps, "one-hot chain") && strstr(maps, "Assign ax of X through Switch gx") &&
                  strstr(maps, "Save save of {X}"), "%s", maps);
    free(maps);
    ck_assert_str_eq(cJSON_GetObjectItem(block(p, "dec1_data"), "type")->valuestring, "Dataset");
    ck_assert_str_eq(attr_str(block(p, "dec1_data"), "file"), "dataset/imgs.idx");
    ck_assert_str_eq(cJSON_GetObjectItem(block(p, "std"), "type")->valuestring, "OneHot");
    cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(p, "blocks")) {
        const char *id = cJSON_GetObjectItem(b, "id")->valuestring;
        ck_assert_msg(strcmp(id, "cnt") && strcmp(id, "mod") && strcmp(id, "save") &&
                      strcmp(id, "stray") && strcmp(id, "ta") && strcmp(id, "q1"),
                      "%s should be dropped", id);
    }
    ck_assert_ptr_nonnull(strstr(r.report_json, "fetch of \\\"cnt\\\" (Variable) dropped"));
    cJSON_Delete(p);
    cJSON_Delete(rep);
    /* step k assigns batch k-1 (read at step k+1): images / 255 and the labels one-hot */
    bf_write_file(bf_sp("p.json"), r.page_json);
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    bf_page *pg = NULL;
    bf_error e = {0};
    ck_assert_msg(!bf_page_load_file(ctx, bf_sp("p.json"), &pg, NULL, &e), "%s", e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, pg, &s, &e), BF_OK);
    for (int step = 1; step <= 3; step++) {
        ck_assert_msg(bf_session_step(s, 1, NULL, NULL, &e) == BF_OK, "%s", e.message);
        bf_tensor *x = NULL, *y = NULL;
        ck_assert_int_eq(bf_session_read_state(s, "X", &x, &e), BF_OK);
        ck_assert_int_eq(bf_session_read_state(s, "Y", &y, &e), BF_OK);
        int batch = (step - 1) % 2; /* 4 records, batches of 2 */
        for (int k = 0; k < 8; k++)
            ck_assert_double_eq_tol(bf_tensor_get_f64(x, k), (10.0 * (8 * batch + k) + 5) / 255, 1e-6);
        for (int row = 0; row < 2; row++)
            for (int c = 0; c < 3; c++)
                ck_assert(bf_tensor_get_f64(y, row * 3 + c) == (labels[8 + 2 * batch + row] == c));
        bf_tensor_free(x);
        bf_tensor_free(y);
    }
    bf_session_free(s);
    bf_context_free(ctx);
    enu_result_free(&r);
}
END_TEST

Suite *suite(void);
Suite *suite(void) {
    Suite *s = suite_create("import");
    TCase *tc = tcase_create("import");
    tcase_add_checked_fixture(tc, bf_scratch_setup, bf_scratch_teardown);
    tcase_add_test(tc, value_syntax);
    tcase_add_test(tc, version_4_spelling_and_const_pins);
    tcase_add_test(tc, binary_values_from_the_dat);
    tcase_add_test(tc, task_json_and_svg_agree);
    tcase_add_test(tc, unsupported_blocks_listed_or_placeholders);
    tcase_add_test(tc, add_symbolic_gradients_built);
    tcase_add_test(tc, hostile_input);
    tcase_add_test(tc, ids_made_valid);
    tcase_add_test(tc, cli_import);
    tcase_add_test(tc, mnist_pipeline_and_one_hot);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
