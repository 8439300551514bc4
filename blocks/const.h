/*
 * const.h - how a Const makes its tensor from its attributes, shared with the Variable block
 * (its initial `value` or `file`): dtype, shape, inline numbers (nested, flat with a shape, or
 * one number filling the shape) or a .npy file converted to the dtype; integers refused for
 * non-integral numbers. Float dtypes become float64 in a float64 re-run (bf_node_float).
 */
#ifndef BF_CONST_H
#define BF_CONST_H

#include "block.h"

/* Make the tensor of exactly one of `value` and `file` (the other unset); dt and shape may be
 * unset. Errors name the attribute (BF_EATTR, BF_ESHAPE, BF_EDTYPE, BF_ELIMIT, BF_ENOMEM). */
bf_status bf_const_tensor(const bf_node *node, const bf_attr_value *dt,
                          const bf_attr_value *shape, const bf_attr_value *value,
                          const bf_attr_value *file, bf_tensor **out, bf_error *err);

/* The block's state is that tensor: free it (fini), and copy it to output 0 (run_cpu). */
void bf_const_fini(bf_node *node);
bf_status bf_const_run_cpu(const bf_node *node, const bf_tensor *const *in,
                           bf_tensor *const *out, const bf_exec *ex, bf_error *err);

#endif /* BF_CONST_H */
