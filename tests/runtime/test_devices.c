/*
 * test_devices.c - the session's device placement, without a GPU: a fake device (host memory
 * behind the bf_device_ops vtable) is put in the context, and pages ask for "auto", "cpu",
 * "gpu" and "gpu:N". Blocks without a GPU kernel, and kernels that decline the shapes, fall
 * back to the CPU with the reason in the run report; asking for a GPU that does not exist is
 * an error naming the block; "cpu" never touches the device. The device's set-up and memory
 * are balanced (every alloc freed, session state released).
 */
#include "bf_test.h"
#include "context.h"

#include <stdlib.h>
#include <string.h>

typedef struct fake {
    int allocs, frees, inits, session_frees;
} fake;

static void *fake_alloc(bf_device *dev, size_t bytes, bf_error *err) {
    (void)err;
    ((fake *)dev->impl)->allocs++;
    return malloc(bytes);
}
static void fake_free(bf_device *dev, void *p) {
    ((fake *)dev->impl)->frees++;
    free(p);
}
static bf_status fake_memset0(bf_device *dev, void *p, size_t n, void *stream, bf_error *err) {
    (void)dev, (void)stream, (void)err;
    memset(p, 0, n);
    return BF_OK;
}
static bf_status fake_copy(bf_device *dev, void *dst, const void *src, size_t n, void *stream,
                           bf_error *err) {
    (void)dev, (void)stream, (void)err;
    memcpy(dst, src, n);
    return BF_OK;
}
static bf_status fake_sync(bf_device *dev, void *stream, bf_error *err) {
    (void)dev, (void)stream, (void)err;
    return BF_OK;
}
static bf_status fake_session_init(bf_device *dev, const bf_config *cfg, void **stream,
                                   void **ctx, bf_error *err) {
    (void)cfg;
    (void)err;
    ((fake *)dev->impl)->inits++;
    *stream = *ctx = NULL;
    return BF_OK;
}
static void fake_session_free(bf_device *dev, void *stream, void *ctx) {
    (void)stream, (void)ctx;
    ((fake *)dev->impl)->session_frees++;
}

static const bf_device_ops fake_ops = {
    .name = "fake", .alloc = fake_alloc, .free = fake_free, .memset0 = fake_memset0,
    .upload = fake_copy, .download = fake_copy, .sync = fake_sync,
    .session_init = fake_session_init, .session_free = fake_session_free,
};

/* A context whose device list is one fake GPU (the real probe is never run). */
static bf_context *ctx_with_fake_gpu(fake *f) {
    bf_context *ctx = NULL;
    ck_assert_int_eq(bf_context_new(NULL, &ctx, NULL), BF_OK);
    ctx->gpu_probed = 1;
    ctx->n_gpus = 1;
    ctx->gpus[0] = (bf_device){.ops = &fake_ops, .ordinal = 0, .label = "gpu:0", .impl = f};
    bf_strlcpy(ctx->gpus[0].description, "fake device for tests", sizeof(ctx->gpus[0].description));
    return ctx;
}

static bf_session *session(bf_context *ctx, const char *json) {
    bf_page *page = NULL;
    bf_error e = {0};
    if (bf_page_load_string(ctx, json, strlen(json), "d.json", NULL, &page, NULL, &e))
        ck_abort_msg("page does not load: %s", e.message);
    bf_session *s = NULL;
    ck_assert_int_eq(bf_session_new(ctx, page, &s, NULL), BF_OK);
    return s;
}

static const bf_block_stats *stats(bf_session *s, int i) { return bf_session_block_stats(s, i); }

#define HEAD "{\"format\":\"blockflow.page\",\"version\":1,"

/* x (RandomNormal) -> conv (Conv2D) with a Const filter, the conv's device given by `dev`. */
static void conv_page(char *buf, size_t size, const char *dev) {
    snprintf(buf, size,
             HEAD "\"blocks\":["
                  "{\"id\":\"x\",\"type\":\"RandomNormal\",\"attrs\":{\"shape\":[1,5,5,1]}},"
                  "{\"id\":\"w\",\"type\":\"Const\",\"attrs\":{\"shape\":[3,3,1,1],\"value\":1}},"
                  "{\"id\":\"y\",\"type\":\"Conv2D\",\"inputs\":{\"input\":\"x\",\"filter\":\"w\"},"
                  "\"attrs\":{\"strides\":[1,1,1,1],\"padding\":\"VALID\"},\"device\":\"%s\"}],"
                  "\"outputs\":[\"y\"]}",
             dev);
}

START_TEST(blocks_without_gpu_kernel_fall_back_with_a_note) {
    fake f = {0};
    bf_context *ctx = ctx_with_fake_gpu(&f);
    ck_assert(bf_context_has_gpu(ctx));
    bf_session *s = session(ctx, HEAD "\"blocks\":[{\"id\":\"r\",\"type\":\"RandomNormal\","
                                      "\"attrs\":{\"shape\":[4]},\"device\":\"gpu\"}],"
                                      "\"outputs\":[\"r\"]}");
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_OK);
    ck_assert_str_eq(stats(s, 0)->device, "cpu");
    ck_assert_ptr_nonnull(strstr(stats(s, 0)->note, "no GPU kernel"));
    ck_assert_int_eq(f.allocs, 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(missing_gpu_ordinal_is_an_error_naming_the_block) {
    fake f = {0};
    bf_context *ctx = ctx_with_fake_gpu(&f);
    char page[1024];
    conv_page(page, sizeof(page), "gpu:3");
    bf_session *s = session(ctx, page);
    bf_error e = {0};
    ck_assert_int_eq(bf_session_run(s, NULL, NULL, &e), BF_EDEVICE);
    ck_assert_str_eq(e.code, "no_gpu");
    ck_assert_str_eq(e.block_id, "y");
    ck_assert_int_eq(stats(s, 2)->ran, 0);
    bf_session_free(s);
    bf_context_free(ctx);
}
END_TEST

START_TEST(cpu_never_touches_the_device) {
    fake f = {0};
    bf_context *ctx = ctx_with_fake_gpu(&f);
    char page[1024];
    conv_page(page, sizeof(page), "gpu");
    bf_session *s = session(ctx, page);
    bf_run_options o;
    bf_run_options_init(&o);
    o.device = BF_DEVICE_CPU; /* the run's override wins over the block's "gpu" */
    ck_assert_int_eq(bf_session_run(s, &o, NULL, NULL), BF_OK);
    ck_assert_str_eq(stats(s, 2)->device, "cpu");
    ck_assert_int_eq(f.allocs + f.inits, 0);
    bf_session_free(s);
    bf_context_free(ctx);
    ck_assert_int_eq(f.session_frees, 0);
}
END_TEST

#ifndef BF_HAVE_CUDA
/* Without the CUDA backend the convolution's GPU entry declines every shape: "auto" and even
 * "gpu" run it on the CPU and say why (a real CUDA build would run it on the device). */
START_TEST(declined_kernels_fall_back_with_the_reason) {
    static const char *const devs[] = {"auto", "gpu", "gpu:0"};
    for (int i = 0; i < 3; i++) {
        fake f = {0};
        bf_context *ctx = ctx_with_fake_gpu(&f);
        char page[1024];
        conv_page(page, sizeof(page), devs[i]);
        bf_session *s = session(ctx, page);
        ck_assert_int_eq(bf_session_run(s, NULL, NULL, NULL), BF_OK);
        ck_assert_str_eq(stats(s, 2)->device, "cpu");
        ck_assert_ptr_nonnull(strstr(stats(s, 2)->note, "CPU fallback: built without CUDA"));
        const bf_tensor *y = bf_session_output(s, "y", NULL);
        ck_assert_ptr_nonnull(y);
        ck_assert_int_eq(bf_tensor_numel(y), 9);
        bf_session_free(s);
        bf_context_free(ctx);
        ck_assert_int_eq(f.allocs, f.frees);
    }
}
END_TEST
#endif

static Suite *suite(void) {
    Suite *s = suite_create("devices");
    TCase *tc = tcase_create("placement");
    tcase_add_test(tc, blocks_without_gpu_kernel_fall_back_with_a_note);
    tcase_add_test(tc, missing_gpu_ordinal_is_an_error_naming_the_block);
    tcase_add_test(tc, cpu_never_touches_the_device);
#ifndef BF_HAVE_CUDA
    tcase_add_test(tc, declined_kernels_fall_back_with_the_reason);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bf_test_main(suite()); }
