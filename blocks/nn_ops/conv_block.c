/*
 * conv_block.c - the descriptor functions the six convolution blocks share once the geometry is
 * known: the CPU workspace plan, the CPU run (dtype conversion around the float32/float64
 * kernels of conv_kernels.h) and the forwarding of the GPU entry points.
 *
 * float16 and bfloat16 are converted to float32 once into the workspace, computed in float32
 * and rounded once into the output (never per multiply-add). float64 is computed in float64.
 */
#include "conv_geom.h"
#include "half.h"

#include <stdio.h>
#include <string.h>

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

/* Byte offsets of the float32 copies (halves only) and of the kernel scratch. */
typedef struct ws_plan {
    size_t off_b, off_o, off_kernel, total;
} ws_plan;

static bool plan(const bf_conv_spec *spec, const bf_conv_geom *g, bf_dtype dt, int64_t na,
                 int64_t nb, int64_t no, int n_threads, ws_plan *p) {
    bool half = dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16;
    bf_dtype cdt = half ? BF_DTYPE_F32 : dt;
    size_t sa = 0, sb = 0, so = 0;
    if (half) {
        if (!bf_size_mul((size_t)na, 4, &sa) || !bf_size_mul((size_t)nb, 4, &sb) ||
            !bf_size_mul((size_t)no, 4, &so) || sa > SIZE_MAX / 4 || sb > SIZE_MAX / 4 ||
            so > SIZE_MAX / 4)
            return false;
        sa = align64(sa), sb = align64(sb), so = align64(so);
    }
    p->off_b = sa;
    p->off_o = sa + sb;
    p->off_kernel = sa + sb + so;
    size_t k = bf_conv_cpu_workspace(spec->op, g, cdt, n_threads);
    return bf_size_add(p->off_kernel, align64(k), &p->total);
}

/* The kernel operands a, b of conv_kernels.h among the block inputs. */
static void operands(bf_conv_op op, const bf_tensor *const *in, const bf_tensor **a,
                     const bf_tensor **b) {
    /* FWD: x, w;  BWD_FILTER: x, dy;  BWD_INPUT: dy, w */
    *a = in[op == BF_CONV_BWD_INPUT ? 2 : 0];
    *b = in[op == BF_CONV_BWD_FILTER ? 2 : 1];
}
static void operand_infos(bf_conv_op op, const bf_port_info *in, const bf_port_info **a,
                          const bf_port_info **b) {
    *a = &in[op == BF_CONV_BWD_INPUT ? 2 : 0];
    *b = &in[op == BF_CONV_BWD_FILTER ? 2 : 1];
}

size_t bf_conv_block_workspace_cpu(const bf_node *node, const bf_conv_spec *spec,
                                   const bf_port_info *in, const bf_port_info *out,
                                   const bf_exec *ex) {
    bf_conv_geom g;
    bf_port_info o;
    int complete = 0;
    if (bf_conv_infer(node, spec, in, &o, &g, &complete, NULL) || !complete) return 0;
    const bf_port_info *a, *b;
    operand_infos(spec->op, in, &a, &b);
    ws_plan p;
    if (!plan(spec, &g, out[0].dtype, bf_port_numel(a), bf_port_numel(b), bf_port_numel(&out[0]),
              ex && ex->n_threads > 0 ? ex->n_threads : 1, &p))
        return SIZE_MAX; /* the session's limits then refuse it with a clear error */
    return p.total;
}

/* Convert n halves (or bfloat16s) to float32. */
static void widen(bf_dtype dt, const uint16_t *src, float *dst, int64_t n) {
    if (dt == BF_DTYPE_F16) {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_f16_to_f32(src[i]);
    } else {
        for (int64_t i = 0; i < n; i++) dst[i] = bf_bf16_to_f32(src[i]);
    }
}

bf_status bf_conv_block_run_cpu(const bf_node *node, const bf_conv_spec *spec,
                                const bf_tensor *const *in, bf_tensor *const *out,
                                const bf_exec *ex, bf_error *err) {
    bf_conv_geom g;
    bf_status st = bf_conv_geom_from_tensors(node, spec, in, &g, err);
    if (st) return st;
    bf_tensor *o = out[0];
    if (o->numel == 0) return BF_OK;
    const bf_tensor *a, *b;
    operands(spec->op, in, &a, &b);
    if (a->numel == 0 || b->numel == 0) {
        /* Padding only, or an empty gradient: nothing contributes (CVE-2022-35996/35999). */
        memset(o->data, 0, o->nbytes);
        return BF_OK;
    }
    ws_plan p;
    const int threads = ex && ex->n_threads > 0 ? ex->n_threads : 1;
    if (!plan(spec, &g, o->dtype, a->numel, b->numel, o->numel, threads, &p))
        return bf_err(err, BF_ELIMIT, "too_large", "convolution workspace size overflows");

    /*
     * The session plans the workspace with workspace_cpu for this very bf_exec, so it fits. A
     * caller driving the block directly (a test, a tool) may pass no workspace at all: then,
     * and only then, the block allocates one for the call.
     */
    bf_exec kex = ex ? *ex : (bf_exec){.n_threads = 1};
    char *ws = kex.workspace, *own = NULL;
    if (ws && p.total > kex.workspace_size)
        return bf_err(err, BF_EINTERNAL, "workspace", "planned workspace of %zu bytes is "
                      "smaller than the %zu this call needs", kex.workspace_size, p.total);
    if (!ws) {
        own = bf_aligned_alloc(p.total ? p.total : 64, false);
        if (!own)
            return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory for %zu bytes of workspace",
                          p.total);
        ws = own;
    }
    kex.workspace = ws + p.off_kernel;
    kex.workspace_size = p.total - p.off_kernel;

    switch (o->dtype) {
    case BF_DTYPE_F32:
        bf_conv_cpu_f32(spec->op, &g, a->data, b->data, o->data, &kex); /* layouts: geom */
        break;
    case BF_DTYPE_F64:
        bf_conv_cpu_f64(spec->op, &g, a->data, b->data, o->data, &kex);
        break;
    case BF_DTYPE_F16:
    case BF_DTYPE_BF16: {
        /* float32 copies of the operands and the result, laid out as the tensors are */
        float *fa = (float *)ws;              /* operand a (x or dy) */
        float *fb = (float *)(ws + p.off_b);  /* operand b (w or dy) */
        float *fo = (float *)(ws + p.off_o);  /* the result, rounded once into o */
        widen(o->dtype, a->data, fa, a->numel);
        widen(o->dtype, b->data, fb, b->numel);
        bf_conv_cpu_f32(spec->op, &g, fa, fb, fo, &kex);
        uint16_t *dst = o->data;
        if (o->dtype == BF_DTYPE_F16) {
            for (int64_t i = 0; i < o->numel; i++) dst[i] = bf_f32_to_f16(fo[i]);
        } else {
            for (int64_t i = 0; i < o->numel; i++) dst[i] = bf_f32_to_bf16(fo[i]);
        }
        break;
    }
    default:
        bf_aligned_free(own);
        return bf_err(err, BF_EDTYPE, "bad_dtype", "no CPU kernel for dtype %s",
                      bf_dtype_name(o->dtype));
    }
    bf_aligned_free(own);
    if (bf_exec_cancelled(ex)) return bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled");
    return BF_OK;
}

/* Geometry and use_cudnn from port infos, for the GPU planning entry points. */
static bool gpu_geom(const bf_node *node, const bf_conv_spec *spec, const bf_port_info *in,
                     bf_conv_geom *g, bf_dtype *dt, int *use_cudnn) {
    bf_conv_attrs a;
    bf_port_info o;
    int complete = 0;
    if (bf_conv_parse_attrs(node, spec, &a, NULL)) return false;
    if (bf_conv_infer(node, spec, in, &o, g, &complete, NULL) || !complete) return false;
    *dt = o.dtype;
    *use_cudnn = a.use_cudnn;
    return true;
}

const char *bf_conv_block_gpu_unsupported(const bf_node *node, const bf_conv_spec *spec,
                                          const bf_port_info *in) {
    bf_conv_geom g;
    bf_dtype dt;
    int use_cudnn;
    if (!gpu_geom(node, spec, in, &g, &dt, &use_cudnn)) return "shapes not valid or not known";
    return bf_conv_cuda_unsupported(spec->op, &g, dt, use_cudnn);
}

size_t bf_conv_block_workspace_cuda(const bf_node *node, const bf_conv_spec *spec,
                                    const bf_port_info *in, const bf_port_info *out,
                                    const bf_exec *ex) {
    (void)out;
    bf_conv_geom g;
    bf_dtype dt;
    int use_cudnn;
    if (!gpu_geom(node, spec, in, &g, &dt, &use_cudnn)) return 0;
    return bf_conv_cuda_workspace(spec->op, &g, dt, use_cudnn, ex);
}

bf_status bf_conv_block_run_cuda(const bf_node *node, const bf_conv_spec *spec,
                                 const bf_tensor *const *in, bf_tensor *const *out,
                                 const bf_exec *ex, bf_error *err) {
    bf_conv_attrs at;
    bf_conv_geom g;
    bf_status st = bf_conv_parse_attrs(node, spec, &at, err);
    if (st || (st = bf_conv_geom_from_tensors(node, spec, in, &g, err))) return st;
    if (out[0]->numel == 0) return BF_OK;
    const bf_tensor *a, *b;
    operands(spec->op, in, &a, &b);
    /* Empty a or b: the CUDA kernels zero-fill the output themselves (conv_kernels.h). */
    return bf_conv_cuda(spec->op, &g, out[0]->dtype, at.use_cudnn, a->data, b->data,
                        out[0]->data, ex, err);
}

/* ---- the descriptor functions: the op comes from the descriptor's impl ---------------- */

static const bf_conv_spec *spec_of(const bf_node *node) { return node->desc->impl; }

bf_status bf_conv_desc_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                             bf_error *err) {
    return bf_conv_infer(node, spec_of(node), in, out, NULL, NULL, err);
}

size_t bf_conv_desc_workspace_cpu(const bf_node *node, const bf_port_info *in,
                                  const bf_port_info *out, const bf_exec *ex) {
    return bf_conv_block_workspace_cpu(node, spec_of(node), in, out, ex);
}

bf_status bf_conv_desc_run_cpu(const bf_node *node, const bf_tensor *const *in,
                               bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    return bf_conv_block_run_cpu(node, spec_of(node), in, out, ex, err);
}

const char *bf_conv_desc_gpu_unsupported(const bf_node *node, const bf_port_info *in) {
    return bf_conv_block_gpu_unsupported(node, spec_of(node), in);
}

size_t bf_conv_desc_workspace_cuda(const bf_node *node, const bf_port_info *in,
                                   const bf_port_info *out, const bf_exec *ex) {
    return bf_conv_block_workspace_cuda(node, spec_of(node), in, out, ex);
}

bf_status bf_conv_desc_run_cuda(const bf_node *node, const bf_tensor *const *in,
                                bf_tensor *const *out, const bf_exec *ex, bf_error *err) {
    return bf_conv_block_run_cuda(node, spec_of(node), in, out, ex, err);
}

/*
 * The gradient of a forward convolution (Conv2D, DepthwiseConv2dNative), as nn_grad.py
 * builds it: one gradient block per differentiated input, of the type whose `grad` relation
 * names this forward type and that input, with the forward block's attributes, the input's
 * shape as an int32 Const on its shape port, the incoming gradient on its dy port and the
 * other forward inputs on the ports of the same names.
 */
bf_status bf_conv_desc_gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const bf_node *node = bf_grad_node(g);
    const bf_block_desc *f = node->desc;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy) return BF_OK;
    for (int i = 0; i < bf_registry_count(); i++) {
        const bf_block_desc *d = bf_registry_at(i);
        if (!d->grad || strcmp(d->grad->forward, f->type) || d->n_inputs != 3) continue;
        int k = 0;
        while (k < f->n_inputs && strcmp(f->inputs[k].name, d->grad->wrt)) k++;
        if (k == f->n_inputs || !bf_grad_wants(g, k)) continue;
        const bf_port_info *wi = bf_grad_input_info(g, k);
        char name[64];
        snprintf(name, sizeof(name), "%s", d->grad->shape_port);
        const char *shape = bf_grad_const_i32(g, name, wi->rank, wi->dims);
        /* the remaining port reads the forward input of the same name */
        const char *ports[3], *srcs[3];
        for (int q = 0; q < 3; q++) {
            ports[q] = d->inputs[q].name;
            if (!strcmp(ports[q], d->grad->shape_port)) srcs[q] = shape;
            else if (!strcmp(ports[q], d->grad->dy_port)) srcs[q] = dy;
            else {
                int fk = 0;
                while (fk < f->n_inputs && strcmp(f->inputs[fk].name, ports[q])) fk++;
                srcs[q] = fk < f->n_inputs ? bf_grad_input(g, fk) : NULL;
            }
        }
        snprintf(name, sizeof(name), "grad_%s", d->grad->wrt);
        const char *grad = shape ? bf_grad_add(g, name, d->type, BF_GRAD_SAME_ATTRS, ports[0],
                                               srcs[0], ports[1], srcs[1], ports[2], srcs[2],
                                               NULL)
                                 : NULL;
        bf_grad_set(g, k, grad);
    }
    return BF_OK;
}
