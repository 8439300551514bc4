/*
 * bias_add.h - what BiasAdd and BiasAddGrad share: the data_format values and the check of
 * the value (out_backprop) tensor's rank, in TF's words.
 */
#ifndef BF_BIAS_ADD_H
#define BF_BIAS_ADD_H

#include "block.h"

/* "NHWC", "NCHW" (attr index 0 of both blocks; v.i == 1 is NCHW). */
extern const char *const bf_bias_formats[];

/* Rank 2 to 5: "Input tensor must be at least 2D: [3]", "Only ranks up to 5 supported: ...". */
bf_status bf_bias_check_value(const bf_port_info *v, const char *port, bf_error *err);

#endif /* BF_BIAS_ADD_H */
