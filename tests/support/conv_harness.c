/*
 * conv_harness.c - see conv_harness.h.
 */
#include "conv_harness.h"
#include "half.h"
#include "tensor.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const bf_block_desc *ct_desc(const char *op) {
    const bf_block_desc *all[] = {&bf_block_conv2d,
                                  &bf_block_conv2d_backprop_filter,
                                  &bf_block_conv2d_backprop_input,
                                  &bf_block_depthwise_conv2d_native,
                                  &bf_block_depthwise_conv2d_native_backprop_filter,
                                  &bf_block_depthwise_conv2d_native_backprop_input};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (!strcmp(all[i]->type, op)) return all[i];
    return NULL;
}

bf_tensor *ct_tensor(bf_dtype dt, int rank, const int64_t *dims, const double *v) {
    bf_tensor *t = NULL;
    bf_error e = {0};
    if (bf_tensor_new(NULL, dt, rank, dims, &t, &e) != BF_OK) return NULL;
    for (int64_t i = 0; v && i < t->numel; i++) {
        switch (dt) {
        case BF_DTYPE_F16: ((uint16_t *)t->data)[i] = bf_f32_to_f16((float)v[i]); break;
        case BF_DTYPE_BF16: ((uint16_t *)t->data)[i] = bf_f32_to_bf16((float)v[i]); break;
        case BF_DTYPE_F32: ((float *)t->data)[i] = (float)v[i]; break;
        case BF_DTYPE_F64: ((double *)t->data)[i] = v[i]; break;
        case BF_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v[i]; break;
        case BF_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)v[i]; break;
        default: break;
        }
    }
    return t;
}

bf_tensor *ct_i32(int n, const int64_t *v) {
    double d[16];
    for (int i = 0; i < n && i < 16; i++) d[i] = (double)v[i];
    int64_t dims[1] = {n};
    return ct_tensor(BF_DTYPE_I32, 1, dims, d);
}

double *ct_values(const bf_tensor *t) {
    double *v = malloc(sizeof(double) * (size_t)(t->numel ? t->numel : 1));
    for (int64_t i = 0; v && i < t->numel; i++) v[i] = bf_tensor_get_f64(t, i);
    return v;
}

bf_status ct_infer(const bf_block_desc *d, const char *attrs_json, const bf_port_info *in,
                   bf_port_info *out, bf_error *err) {
    bf_node *node = NULL;
    bf_status st = bf_node_make(d, attrs_json, &node, err);
    if (st) return st;
    st = d->infer(node, in, out, err);
    bf_node_destroy(node);
    return st;
}

bf_status ct_run(const bf_block_desc *d, const char *attrs_json, bf_tensor *const *in,
                 int threads, bf_tensor **out, bf_error *err) {
    *out = NULL;
    bf_node *node = NULL;
    bf_status st = bf_node_make(d, attrs_json, &node, err);
    if (st) return st;
    bf_port_info info[4], oinfo[1];
    for (int i = 0; i < d->n_inputs; i++) {
        bf_port_set(&info[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        if (d->inputs[i].flags & BF_PORT_HOST) info[i].value = in[i];
    }
    memset(oinfo, 0, sizeof(oinfo));
    bf_pool *pool = NULL;
    void *ws = NULL;
    bf_tensor *o = NULL;
    if ((st = d->infer(node, info, oinfo, err))) goto done;
    if (!bf_port_known(&oinfo[0])) {
        st = bf_err(err, BF_EINTERNAL, "internal", "output not known after infer");
        goto done;
    }
    if ((st = bf_tensor_new(NULL, oinfo[0].dtype, oinfo[0].rank, oinfo[0].dims, &o, err)))
        goto done;
    /* Poison the output so that an element the kernel forgets to write is noticed. */
    memset(o->data, 0x7f, o->nbytes);
    if ((st = bf_pool_new(threads, &pool, err))) goto done;
    bf_exec ex = {.pool = pool, .n_threads = threads};
    size_t wsz = d->workspace_cpu ? d->workspace_cpu(node, info, oinfo, &ex) : 0;
    if (wsz && !(ws = bf_aligned_alloc(wsz, false))) {
        st = bf_err(err, BF_ENOMEM, "out_of_memory", "workspace");
        goto done;
    }
    ex.workspace = ws;
    ex.workspace_size = wsz;
    const bf_tensor *cin[4];
    for (int i = 0; i < d->n_inputs; i++) cin[i] = in[i];
    bf_tensor *outs[1] = {o};
    if ((st = d->run_cpu(node, cin, outs, &ex, err))) goto done;
    *out = o;
    o = NULL;
done:
    bf_tensor_free(o);
    bf_pool_free(pool);
    bf_aligned_free(ws);
    bf_node_destroy(node);
    return st;
}

/* ---- the GPU --------------------------------------------------------------------------- */

bool ct_gpu_present(char *why, size_t why_size) {
#ifdef BF_TEST_CUDA_BACKEND
    /* The test programs live in tests/, away from the CUDA backend in the build folder: point
     * the core at it, unless the environment names one (ctest does too), so that a test run
     * by hand (CK_FORK=no, compute-sanitizer) finds it. Before any thread exists. */
    setenv("BLOCKFLOW_CUDA_BACKEND", BF_TEST_CUDA_BACKEND, 0);
#endif
    int fd[2];
    snprintf(why, why_size, "cannot probe: pipe or fork failed");
    if (pipe(fd) != 0) return false;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return false;
    }
    if (pid == 0) { /* the child: the only process that touches CUDA here */
        bf_device devs[4];
        char msg[256] = "";
        int n = bf_cuda_probe(devs, 4, msg, sizeof msg);
        if (n > 0) snprintf(msg, sizeof msg, "%s", devs[0].description);
        ssize_t w = write(fd[1], msg, strlen(msg));
        (void)w;
        _exit(n > 0 ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], why, why_size - 1);
    why[got > 0 ? got : 0] = '\0';
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bf_status ct_gpu_open(ct_gpu *g, bf_error *err) {
    memset(g, 0, sizeof *g);
    char why[256] = "";
    bf_device devs[4];
    if (bf_cuda_probe(devs, 4, why, sizeof why) < 1)
        return bf_err(err, BF_EDEVICE, "no_gpu", "no GPU can be used (%s)", why);
    g->dev = devs[0];
    /* The cuDNN choices from the environment, as the CLI maps them (tests set them). */
    bf_config cfg;
    bf_config_init(&cfg);
    const char *at = getenv("BF_CUDNN_AUTOTUNE"), *det = getenv("BF_CUDNN_DETERMINISTIC");
    cfg.cudnn_autotune = at && at[0] == '1';
    cfg.cudnn_nondeterministic = det && det[0] == '0';
    bf_status st = g->dev.ops->session_init(&g->dev, &cfg, &g->stream, &g->ctx, err);
    if (st) memset(g, 0, sizeof *g);
    return st;
}

void ct_gpu_close(ct_gpu *g) {
    if (g->dev.ops) {
        g->dev.ops->session_free(&g->dev, g->stream, g->ctx);
        bf_cuda_release(&g->dev, 1);
    }
    memset(g, 0, sizeof *g);
}

/* A device tensor of (dt, rank, dims) on g, holding a copy of `host` (its nbytes) when not
 * NULL. Freed with dev_tensor_free. */
static bf_status dev_tensor(ct_gpu *g, bf_dtype dt, int rank, const int64_t *dims,
                            const void *host, bf_tensor **out, bf_error *err) {
    *out = NULL;
    bf_tensor *t = calloc(1, sizeof *t);
    if (!t) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory for a tensor");
    bf_status st = bf_shape_size(dt, rank, dims, 0, &t->numel, &t->nbytes, err);
    if (st == BF_OK && !(t->data = g->dev.ops->alloc(&g->dev, t->nbytes, err)))
        st = err->status ? err->status : BF_EDEVICE;
    if (st) {
        free(t);
        return st;
    }
    t->dtype = dt;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->device = &g->dev;
    if (host && (st = g->dev.ops->upload(&g->dev, t->data, host, t->nbytes, g->stream, err))) {
        g->dev.ops->free(&g->dev, t->data);
        free(t);
        return st;
    }
    *out = t;
    return BF_OK;
}

static void dev_tensor_free(ct_gpu *g, bf_tensor *t) {
    if (!t) return;
    g->dev.ops->free(&g->dev, t->data);
    free(t);
}

bf_status ct_run_gpu(ct_gpu *g, const bf_block_desc *d, const char *attrs_json,
                     bf_tensor *const *in, bf_tensor **out, char *note, size_t note_size,
                     bf_error *err) {
    *out = NULL;
    if (note_size) note[0] = '\0';
    if (!d->run_cuda)
        return bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "%s has no GPU kernel", d->type);
    bf_node *node = NULL;
    bf_status st = bf_node_make(d, attrs_json, &node, err);
    if (st) return st;
    const bf_device_ops *ops = g->dev.ops;
    bf_port_info info[4], oinfo[1];
    bf_tensor *dev_in[4] = {NULL}, *dev_out = NULL, *o = NULL;
    const bf_tensor *cin[4];
    void *ws = NULL;
    /* As the session's execute(): the host value is known for BF_PORT_HOST inputs only. */
    for (int i = 0; i < d->n_inputs; i++) {
        bf_port_set(&info[i], in[i]->dtype, in[i]->rank, in[i]->dims);
        if (d->inputs[i].flags & BF_PORT_HOST) info[i].value = in[i];
    }
    memset(oinfo, 0, sizeof(oinfo));
    if ((st = d->infer(node, info, oinfo, err))) goto done;
    if (!bf_port_known(&oinfo[0])) {
        st = bf_err(err, BF_EINTERNAL, "internal", "output not known after infer");
        goto done;
    }
    const char *why = d->gpu_unsupported ? d->gpu_unsupported(node, info) : NULL;
    if (why) {
        st = bf_err(err, BF_EUNSUPPORTED, "gpu_unsupported", "%s cannot run on the GPU: %s",
                    d->type, why);
        goto done;
    }
    for (int i = 0; i < d->n_inputs; i++) {
        cin[i] = in[i];
        if (d->inputs[i].flags & BF_PORT_HOST) continue;
        st = dev_tensor(g, in[i]->dtype, in[i]->rank, in[i]->dims, in[i]->data, &dev_in[i], err);
        if (st) goto done;
        cin[i] = dev_in[i];
    }
    /* The host tensor o receives the result; first it carries the NaN bytes up. */
    if ((st = bf_tensor_new(NULL, oinfo[0].dtype, oinfo[0].rank, oinfo[0].dims, &o, err)))
        goto done;
    memset(o->data, 0xff, o->nbytes);
    if ((st = dev_tensor(g, o->dtype, o->rank, o->dims, o->data, &dev_out, err))) goto done;
    bf_exec ex = {.pool = NULL,
                  .n_threads = 1,
                  .device = &g->dev,
                  .stream = g->stream,
                  .device_ctx = g->ctx,
                  .note = note_size ? note : NULL,
                  .note_size = note_size};
    size_t wsz = d->workspace_cuda ? d->workspace_cuda(node, info, oinfo, &ex) : 0;
    if (wsz && !(ws = ops->alloc(&g->dev, wsz, err))) {
        st = err->status ? err->status : BF_EDEVICE;
        goto done;
    }
    ex.workspace = ws;
    ex.workspace_size = wsz;
    bf_tensor *outs[1] = {dev_out};
    if ((st = d->run_cuda(node, cin, outs, &ex, err))) goto done;
    if ((st = ops->sync(&g->dev, g->stream, err))) goto done;
    if ((st = ops->download(&g->dev, o->data, dev_out->data, o->nbytes, g->stream, err)))
        goto done;
    *out = o;
    o = NULL;
done:
    for (int i = 0; i < d->n_inputs; i++) dev_tensor_free(g, dev_in[i]);
    dev_tensor_free(g, dev_out);
    if (ws) ops->free(&g->dev, ws);
    bf_tensor_free(o);
    bf_node_destroy(node);
    return st;
}
