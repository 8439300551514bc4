/*
 * Block:    Tile
 * Synopsis: output = input repeated multiples[k] times along each dim k
 * Padding:  none.
 * Example:  input = [[1,2],[3,4]], multiples = [1,2]  ->  output = [[1,2,1,2],[3,4,3,4]].
 *
 * tile.c - TensorFlow's Tile (core/ops/array_ops.cc, kernels/tile_ops.cc): `multiples` is a
 * host int32/int64 vector with one non-negative entry per input dim, in TF's words ("Expected
 * multiples argument to be a vector of length 3 but got length 2", "Expected multiples[0] >=
 * 0, but got -1"). The gradient (array_grad.py _TileGrad) reshapes dy to [m0, d0, m1, d1, ...]
 * and sums over the multiples' axes.
 */
#include "array_util.h"

#include <inttypes.h>

static const bf_port_desc inputs[] = {
    {"input", BF_DT_ALL, 0, "any tensor of rank >= 1"},
    {"multiples", BF_DT_INTS, BF_PORT_HOST, "one repeat count per input dim"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "input repeated"}};

static bf_status read_multiples(const bf_tensor *m, int rank, int64_t *mul, bf_error *err) {
    if (m->rank != 1 || m->numel != rank)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "multiples", NULL,
                          "Expected multiples argument to be a vector of length %d but got "
                          "length %" PRId64,
                          rank, m->rank >= 1 ? m->dims[0] : 0);
    for (int k = 0; k < rank; k++) {
        mul[k] = bf_host_int(m, k);
        if (mul[k] < 0)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "multiples", NULL,
                              "Expected multiples[%d] >= 0, but got %" PRId64, k, mul[k]);
    }
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *m = &in[1];
    if (m->rank >= 0 && m->rank != 1)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "multiples", NULL,
                          "Expected multiples argument to be a vector of length %d but got "
                          "length %" PRId64,
                          x->rank, m->rank >= 1 ? m->dims[0] : 0);
    if (!m->value || x->rank < 0) {
        bf_port_set(&out[0], x->dtype, x->rank, NULL);
        return BF_OK;
    }
    int64_t mul[BF_MAX_RANK], dims[BF_MAX_RANK];
    bf_status st = read_multiples(m->value, x->rank, mul, err);
    if (st) return st;
    for (int k = 0; k < x->rank; k++) {
        dims[k] = -1;
        if (x->dims[k] >= 0 && !bf_i64_mul(x->dims[k], mul[k], &dims[k]))
            return bf_arr_err(err, BF_ELIMIT, "too_large", "multiples", NULL,
                              "dim %d of the output overflows", k);
    }
    bf_port_set(&out[0], x->dtype, x->rank, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)err;
    bf_tile_copy(in[0]->data, in[0]->dims, out[0]->data, out[0]->dims, out[0]->rank,
                 bf_dtype_size(in[0]->dtype), ex);
    return BF_OK;
}

/* _TileGrad: Sum(Reshape(dy, [m0, d0, m1, d1, ...]), axes [0, 2, 4, ...]). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const bf_port_info *x = bf_grad_input_info(g, 0), *m = bf_grad_input_info(g, 1);
    if (!bf_port_known(x) || !m->value)
        return bf_arr_err(err, BF_ESHAPE, "shape_unknown", "multiples", NULL,
                          "the gradient of Tile needs the input's shape and multiples before "
                          "running (a Const)");
    if (2 * x->rank > BF_MAX_RANK)
        return bf_arr_err(err, BF_EUNSUPPORTED, "unsupported", "input", NULL,
                          "the gradient of Tile reshapes to rank %d: at most %d is supported",
                          2 * x->rank, BF_MAX_RANK);
    int64_t mul[BF_MAX_RANK], split[BF_MAX_RANK], axes[BF_MAX_RANK];
    bf_status st = read_multiples(m->value, x->rank, mul, err);
    if (st) return st;
    for (int k = 0; k < x->rank; k++) {
        split[2 * k] = mul[k], split[2 * k + 1] = x->dims[k];
        axes[k] = 2 * k;
    }
    const char *ss = bf_grad_const_i32(g, "split_shape", 2 * x->rank, split);
    const char *r =
        ss ? bf_grad_add(g, "split", "Reshape", NULL, "tensor", dy, "shape", ss, NULL) : NULL;
    const char *ax = r ? bf_grad_const_i32(g, "axes", x->rank, axes) : NULL;
    const char *dx =
        ax ? bf_grad_add(g, "dx", "Sum", NULL, "input", r, "reduction_indices", ax, NULL) : NULL;
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_tile = {
    .type = "Tile",
    .category = "array",
    .synopsis = "output = input repeated multiples[k] times along each dim k",
    .doc = "TensorFlow's Tile: repeats the whole input multiples[k] times along dim k "
           "(multiples: an int32/int64 vector, one non-negative entry per dim).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
