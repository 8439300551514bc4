/*
 * conv_harness.c - see conv_harness.h.
 */
#include "conv_harness.h"
#include "half.h"
#include "tensor.h"

#include <stdlib.h>
#include <string.h>

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
        st = bf_err(err, BF_ENOMEM, "oom", "workspace");
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
