/*
 * ops.c - the table of enuSpace palette symbols that map one-to-one onto blockflow blocks
 * (ops.h). enuSpace's names are TensorFlow's C++ wrappers (Subtract, Multiply, Negate); the
 * blocks are the raw ops behind them (Sub, Mul, Neg). Pins keep TensorFlow's names except
 * the reductions' `axis`, which the raw op calls `reduction_indices`. Const, Const_ex,
 * Variable and ClientSession are not in the table: convert.c reads them itself.
 */
#include "ops.h"

#include <string.h>

#define CONV_ATTRS "data_format:s dilations:L use_cudnn_on_gpu:b"
#define REDUCE_IN "input axis>reduction_indices:int32"

static const enu_op ops[] = {
    {"Add", "Add", "x y", "z", "", ""},
    {"Subtract", "Sub", "x y", "z", "", ""},
    {"Sub", "Sub", "x y", "z", "", ""},
    {"Multiply", "Mul", "x y", "z", "", ""},
    {"Mul", "Mul", "x y", "z", "", ""},
    {"Div", "Div", "x y", "z", "", ""},
    {"RealDiv", "RealDiv", "x y", "z", "", ""},
    {"Maximum", "Maximum", "x y", "z", "", ""},
    {"Minimum", "Minimum", "x y", "z", "", ""},
    {"SquaredDifference", "SquaredDifference", "x y", "z", "", ""},
    {"Equal", "Equal", "x y", "z", "", ""},
    {"GreaterEqual", "GreaterEqual", "x y", "z", "", ""},
    {"MatMul", "MatMul", "a b", "product", "", "transpose_a:b transpose_b:b"},
    {"Square", "Square", "x", "y", "", ""},
    {"Sqrt", "Sqrt", "x", "y", "", ""},
    {"Rsqrt", "Rsqrt", "x", "y", "", ""},
    {"Exp", "Exp", "x", "y", "", ""},
    {"Log", "Log", "x", "y", "", ""},
    {"Abs", "Abs", "x", "y", "", ""},
    {"Sign", "Sign", "x", "y", "", ""},
    {"Reciprocal", "Reciprocal", "x", "y", "", ""},
    {"Negate", "Neg", "x", "y", "", ""},
    {"Neg", "Neg", "x", "y", "", ""},
    {"Sigmoid", "Sigmoid", "x", "y", "", ""},
    {"Tanh", "Tanh", "x", "y", "", ""},
    {"ZerosLike", "ZerosLike", "x", "y", "", ""},
    {"OnesLike", "OnesLike", "x", "y", "", ""},
    {"Relu", "Relu", "features", "activations", "", ""},
    {"Relu6", "Relu6", "features", "activations", "", ""},
    {"Softplus", "Softplus", "features", "activations", "", ""},
    {"Softmax", "Softmax", "logits", "softmax", "", ""},
    {"LogSoftmax", "LogSoftmax", "logits", "logsoftmax", "", ""},
    {"Mean", "Mean", REDUCE_IN, "output", "", "keep_dims:b"},
    {"Sum", "Sum", REDUCE_IN, "output", "", "keep_dims:b"},
    {"Max", "Max", REDUCE_IN, "output", "", "keep_dims:b"},
    {"Min", "Min", REDUCE_IN, "output", "", "keep_dims:b"},
    {"Prod", "Prod", REDUCE_IN, "output", "", "keep_dims:b"},
    {"L2Loss", "L2Loss", "t", "output", "", ""},
    {"AddN", "AddN", "*inputs", "sum", "", ""},
    {"BiasAdd", "BiasAdd", "value bias", "output", "", "data_format:s"},
    {"Conv2D", "Conv2D", "input filter", "output", "strides:l padding:s", CONV_ATTRS},
    {"Conv2DBackpropFilter", "Conv2DBackpropFilter", "input filter_sizes:int32 out_backprop",
     "output", "strides:l padding:s", CONV_ATTRS},
    {"Conv2DBackpropInput", "Conv2DBackpropInput", "input_sizes:int32 filter out_backprop",
     "output", "strides:l padding:s", CONV_ATTRS},
    {"MaxPool", "MaxPool", "input", "output", "ksize:l strides:l padding:s", "data_format:s"},
    {"AvgPool", "AvgPool", "value", "output", "ksize:l strides:l padding:s", "data_format:s"},
    {"Reshape", "Reshape", "tensor shape:int32", "output", "", ""},
    {"Transpose", "Transpose", "x perm:int32", "y", "", ""},
    {"Tile", "Tile", "input multiples:int32", "output", "", ""},
    {"Fill", "Fill", "dims:int32 value", "output", "", ""},
    {"Shape", "Shape", "input", "output", "", "out_type:t"},
    {"Cast", "Cast", "x", "y", "DstT:t", ""},
    {"ArgMax", "ArgMax", "input dimension:int32", "output", "", "output_type:t"},
    {"OneHot", "OneHot", "indices depth:int32 on_value off_value", "output", "", "axis:i"},
    {"SoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits", "features labels",
     "loss backprop", "", ""},
    {"SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
     "features labels", "loss backprop", "", ""},
    {"ApplyGradientDescent", "ApplyGradientDescent", "var alpha delta", "out", "",
     "use_locking:-"},
    {"Assign", "Assign", "ref value", "output_ref", "", "validate_shape:b use_locking:b"},
    {"AssignAdd", "AssignAdd", "ref value", "output_ref", "", "use_locking:b"},
    {"AssignSub", "AssignSub", "ref value", "output_ref", "", "use_locking:b"},
};

const enu_op *enu_op_find(const char *symbol) {
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(ops[i].symbol, symbol)) return &ops[i];
    return NULL;
}

int enu_op_count(void) { return (int)(sizeof ops / sizeof *ops); }
const enu_op *enu_op_at(int i) { return i >= 0 && i < enu_op_count() ? &ops[i] : NULL; }
