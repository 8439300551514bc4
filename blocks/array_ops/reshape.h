/*
 * reshape.h - Reshape's shape rule, and the gradient that reshapes dy back to the forward
 * block's input 0 (Reshape, ExpandDims and Squeeze: array_grad.py _ReshapeToInput).
 */
#ifndef BF_RESHAPE_H
#define BF_RESHAPE_H

#include "block.h"

/*
 * The output shape of Reshape(x, sizes): sizes' values checked and one -1 inferred from x's
 * shape when x's shape is known (else left -1). TF's words; errors name port "shape".
 */
bf_status bf_reshape_shape(const bf_port_info *x, const bf_tensor *sizes, int *rank, int64_t *dims,
                           bf_error *err);

/* Reshape(dy, shape of the forward block's input 0): a Const shape when it is known before
 * running, else a Shape block. The new block's ref, or NULL (the builder has the error). */
const char *bf_grad_reshape_to_input(bf_grad_ctx *g, const char *name, const char *dy);

#endif /* BF_RESHAPE_H */
