/*
 * Block:    Reshape
 * Synopsis: output = tensor's elements, in order, in the shape `shape` (one -1 is inferred)
 * Padding:  none.
 * Example:  tensor = [[1,2,3],[4,5,6]], shape = [3, -1]  ->  output = [[1,2],[3,4],[5,6]];
 *           shape = [-1]  ->  [1,2,3,4,5,6]; shape = [] for a one-element tensor: a scalar.
 *
 * reshape.c - TensorFlow's Reshape (core/ops/array_ops.cc, kernels/reshape_op.h): `shape` is
 * an int32 or int64 vector (a scalar is taken as one, TF's legacy case) read on the host, so
 * that a Const shape gives the output's shape at check time. At most one -1, inferred from
 * the element count; a 0 in `shape` lets -1 be inferred from the other input dims, as TF
 * does. TF's messages: "Only one input size may be -1, not both 0 and 1", "Size 1 must be
 * non-negative, not -2", "Input to reshape is a tensor with 7 values, but the requested shape
 * requires a multiple of 2", "Input to reshape is a tensor with 6 values, but the requested
 * shape has 4". The gradient reshapes dy back to the input's shape (array_grad.py
 * _ReshapeGrad).
 */
#include "array_util.h"
#include "reshape.h"

#include <inttypes.h>
#include <string.h>

static const bf_port_desc inputs[] = {
    {"tensor", BF_DT_ALL, 0, "any tensor"},
    {"shape", BF_DT_INTS, BF_PORT_HOST, "the new shape (int32/int64 vector, one -1 allowed)"},
};
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "tensor in the new shape"}};

bf_status bf_reshape_shape(const bf_port_info *x, const bf_tensor *sizes, int *rank, int64_t *dims,
                           bf_error *err) {
    if (sizes->rank > 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                          "sizes input must be 1-D, not %s",
                          bf_tf_shape(sizes->rank, sizes->dims, (char[96]){0}, 96));
    if (sizes->numel > BF_MAX_RANK)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                          "shape has %" PRId64 " dims: at most %d are supported", sizes->numel,
                          BF_MAX_RANK);
    *rank = (int)sizes->numel;
    int unknown = -1;
    bool sizes_zero = false;
    int64_t product = 1;
    for (int d = 0; d < *rank; d++) {
        int64_t s = bf_host_int(sizes, d);
        if (s == -1) {
            if (unknown != -1)
                return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                                  "Only one input size may be -1, not both %d and %d", unknown, d);
            unknown = d;
            dims[d] = -1;
        } else if (s < 0) {
            return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                              "Size %d must be non-negative, not %" PRId64, d, s);
        } else {
            dims[d] = s;
            if (s == 0)
                sizes_zero = true;
            else if (!bf_i64_mul(product, s, &product))
                return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                                  "Shape %s has too many elements",
                                  bf_tf_shape(*rank, dims, (char[160]){0}, 160));
        }
    }
    if (!bf_port_known(x)) return BF_OK; /* -1 stays unknown until the input's shape is */
    int64_t n = bf_port_numel(x);
    if (unknown != -1) {
        int64_t in_n = 1;
        bool in_zero = false;
        for (int k = 0; k < x->rank; k++)
            if (x->dims[k] > 0 || !sizes_zero)
                in_n *= x->dims[k];
            else
                in_zero = true;
        int64_t missing = in_n / product;
        if (!in_zero && product * missing != in_n)
            return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "shape", NULL,
                              "Input to reshape is a tensor with %" PRId64
                              " values, but the requested shape requires a multiple of %" PRId64,
                              in_n, product);
        dims[unknown] = missing;
    }
    int64_t m = 1;
    for (int d = 0; d < *rank; d++) m *= dims[d]; /* no overflow: product and missing fit */
    if (m != n)
        return bf_arr_err(err, BF_ESHAPE, "shape_mismatch", "shape", NULL,
                          "Input to reshape is a tensor with %" PRId64
                          " values, but the requested shape has %" PRId64,
                          n, m);
    return BF_OK;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)node;
    const bf_port_info *x = &in[0], *s = &in[1];
    if (s->rank > 1)
        return bf_arr_err(err, BF_ESHAPE, "bad_shape", "shape", NULL,
                          "sizes input must be 1-D, not %s", bf_tf_shape_of(s, (char[96]){0}, 96));
    if (!s->value) { /* only the rank may be known: the length of `shape` */
        int r = s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= BF_MAX_RANK ? (int)s->dims[0]
                : s->rank == 0                                               ? 1
                                                                             : -1;
        bf_port_set(&out[0], x->dtype, r, NULL);
        return BF_OK;
    }
    int rank;
    int64_t dims[BF_MAX_RANK];
    bf_status st = bf_reshape_shape(x, s->value, &rank, dims, err);
    if (st) return st;
    bf_port_set(&out[0], x->dtype, rank, dims);
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)node, (void)ex, (void)err;
    if (out[0]->nbytes) memcpy(out[0]->data, in[0]->data, out[0]->nbytes);
    return BF_OK;
}

const char *bf_grad_reshape_to_input(bf_grad_ctx *g, const char *name, const char *dy) {
    const bf_port_info *x = bf_grad_input_info(g, 0);
    const char *shape = bf_port_known(x) ? bf_grad_const_i32(g, "input_shape", x->rank, x->dims)
                                         : bf_grad_add(g, "input_shape", "Shape", NULL, "input",
                                                       bf_grad_input(g, 0), NULL);
    return shape ? bf_grad_add(g, name, "Reshape", NULL, "tensor", dy, "shape", shape, NULL) : NULL;
}

/* array_grad.py _ReshapeGrad: Reshape(dy, shape(tensor)); none for `shape`. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    if (!dy || !bf_grad_wants(g, 0)) return BF_OK;
    const char *dx = bf_grad_reshape_to_input(g, "dx", dy);
    if (dx) bf_grad_set(g, 0, dx);
    return BF_OK;
}

const bf_block_desc bf_block_reshape = {
    .type = "Reshape",
    .category = "array",
    .synopsis = "output = tensor's elements in the shape `shape` (one -1 inferred)",
    .doc = "TensorFlow's Reshape: the same elements in row-major order, in the shape given "
           "by the int32/int64 vector `shape`, where one -1 is inferred from the element "
           "count. A Const `shape` gives the output's shape when the page is checked.",
    .inputs = inputs,
    .n_inputs = BF_COUNT(inputs),
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
