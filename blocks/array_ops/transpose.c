/*
 * Block:    Transpose
 * Synopsis: y = x with its dims permuted: y.shape[i] = x.shape[perm[i]]
 * Padding:  none.
 * Example:  x = [[1,2,3],[4,5,6]], perm = [1,0]  ->  y = [[1,4],[2,5],[3,6]];
 *           x [N,H,W,C], perm = [0,3,1,2]  ->  y [N,C,H,W].
 *
 * transpose.c - TensorFlow's Transpose (core/ops/array_ops.cc, kernels/transpose_op.cc):
 * `perm` is a host int32/int64 vector, a permutation of [0, rank) where, as in TF's kernel, a
 * negative entry counts from the end. TF's checks and words: "perm must be rank 1, got shape
 * [2,2]", "transpose expects a vector of size 3. But input(1) is a vector of size 2", "5 is
 * out of range [0 .. 3)", "1 is missing from {0,0,2}.". The copy drops size-1 dims, merges
 * dims that stay adjacent, and swaps the innermost dims in cache tiles over the kernel pool
 * (array_util.c bf_permute). The gradient transposes dy by the inverse permutation
 * (array_grad.py _TransposeGrad).
 */
#include "array_util.h"

#include <inttypes.h>
#include <stdio.h>

static const bf_port_desc inputs[] = {
    {"x", BF_DT_ALL, 0, "any tensor"},
    {"perm", BF_DT_INTS, BF_PORT_HOST, "a permutation of [0, rank)"},
};
static const bf_port_desc outputs[] = {{"y", BF_DT_ALL, 0, "x with its dims permuted"}};

/* perm's values checked against rank, negatives wrapped, into p. */
static bf_status read_perm(const bf_tensor *v, int rank, int *p, bf_error *err) {
    if (v->numel != rank)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "perm", NULL,
                          "transpose expects a vector of size %d. But input(1) is a vector of "
                          "size %" PRId64,
                          rank, v->numel);
    bool seen[BF_MAX_RANK] = {false};
    for (int i = 0; i < rank; i++) {
        int64_t d = bf_host_int(v, i);
        if (d < 0) d += rank;
        if (d < 0 || d >= rank)
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "perm", NULL,
                              "%" PRId64 " is out of range [0 .. %d)", d, rank);
        p[i] = (int)d;
        seen[d] = true;
    }
    for (int i = 0; i < rank; i++)
        if (!seen[i]) {
            char list[96];
            size_t n = 0;
            for (int k = 0; k < rank && n < sizeof(list); k++)
                n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%d", k ? "," : "", p[k]);
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "perm", NULL, "%d is missing from {%s}.",
                              i, list);
        }
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *pm = &in[1];
    if (pm->rank >= 0 && pm->rank != 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "perm", NULL,
                          "perm must be rank 1, got shape %s",
                          bf_tf_shape_of(pm, (char[96]){0}, 96));
    int rank = x->rank >= 0 ? x->rank
                            : (pm->rank == 1 && pm->dims[0] >= 0 && pm->dims[0] <= BF_MAX_RANK
                                   ? (int)pm->dims[0]
                                   : -1);
    if (x->rank >= 0 && pm->rank == 1 && pm->dims[0] >= 0 && pm->dims[0] != x->rank)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "perm", NULL,
                          "transpose expects a vector of size %d. But input(1) is a vector of "
                          "size %" PRId64,
                          x->rank, pm->dims[0]);
    if (!pm->value || x->rank < 0) {
        bf_port_set(&out[0], x->dtype, rank, NULL);
        return BF_OK;
    }
    int p[BF_MAX_RANK];
    bf_status st = read_perm(pm->value, x->rank, p, err);
    if (st) return st;
    int64_t dims[BF_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[p[i]];
    bf_port_set(&out[0], x->dtype, x->rank, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node;
    int p[BF_MAX_RANK];
    bf_status st = read_perm(in[1], in[0]->rank, p, err);
    if (st) return st;
    bf_permute(in[0]->data, out[0]->data, in[0]->rank, in[0]->dims, p, bf_dtype_size(in[0]->dtype),
               ex);
    return BF_OK;
}

/* array_grad.py _TransposeGrad: Transpose(dy, invert_permutation(perm)). */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const bf_port_info *x = bf_grad_input_info(g, 0), *pm = bf_grad_input_info(g, 1);
    int p[BF_MAX_RANK];
    if (x->rank < 0 || !pm->value)
        return bf_arr_err(err, BF_ESHAPE, "shape_unknown", "perm", NULL,
                          "the gradient of Transpose needs perm before running (a Const)");
    bf_status st = read_perm(pm->value, x->rank, p, err);
    if (st) return st;
    int64_t inv[BF_MAX_RANK];
    for (int i = 0; i < x->rank; i++) inv[p[i]] = i;
    const char *ip = bf_grad_const_i32(g, "inverse_perm", x->rank, inv);
    const char *dx = ip ? bf_grad_add(g, "dx", "Transpose", NULL, "x", dy, "perm", ip, NULL) : NULL;
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_transpose = {
    .type = "Transpose",
    .category = "array",
    .synopsis = "y = x with its dims permuted: y.shape[i] = x.shape[perm[i]]",
    .doc = "TensorFlow's Transpose: permutes the dims of x by the int32/int64 vector `perm`, "
           "a permutation of [0, rank).",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
