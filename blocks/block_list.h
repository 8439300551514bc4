/*
 * block_list.h - every block type, one line each (STYLE R9). blocks/registry.c expands this
 * list twice: once into extern declarations of the descriptors, once into the sorted table.
 * Adding a block is its file plus one line here.
 */
/* generic blocks (blocks/) */
BF_BLOCK(placeholder)
BF_BLOCK(const)
BF_BLOCK(identity)
BF_BLOCK(random_normal)
BF_BLOCK(random_uniform)
BF_BLOCK(sum)
BF_BLOCK(relative_error)

/* convolution family (blocks/nn_ops/) */
BF_BLOCK(conv2d)
BF_BLOCK(conv2d_backprop_filter)
BF_BLOCK(conv2d_backprop_input)
BF_BLOCK(depthwise_conv2d_native)
BF_BLOCK(depthwise_conv2d_native_backprop_filter)
BF_BLOCK(depthwise_conv2d_native_backprop_input)

/* math: elementwise with TensorFlow's broadcasting, activations and their gradients
 * (blocks/math_ops/) */
BF_BLOCK(add)
BF_BLOCK(add_v2)
BF_BLOCK(sub)
BF_BLOCK(mul)
BF_BLOCK(div)
BF_BLOCK(real_div)
BF_BLOCK(maximum)
BF_BLOCK(minimum)
BF_BLOCK(squared_difference)
BF_BLOCK(equal)
BF_BLOCK(greater_equal)
BF_BLOCK(add_n)
BF_BLOCK(neg)
BF_BLOCK(square)
BF_BLOCK(sqrt)
BF_BLOCK(rsqrt)
BF_BLOCK(exp)
BF_BLOCK(log)
BF_BLOCK(reciprocal)
BF_BLOCK(abs)
BF_BLOCK(sign)
BF_BLOCK(relu)
BF_BLOCK(relu6)
BF_BLOCK(sigmoid)
BF_BLOCK(tanh)
BF_BLOCK(softplus)
BF_BLOCK(relu_grad)
BF_BLOCK(relu6_grad)
BF_BLOCK(sigmoid_grad)
BF_BLOCK(tanh_grad)
BF_BLOCK(sqrt_grad)
BF_BLOCK(rsqrt_grad)
BF_BLOCK(reciprocal_grad)

/* arrays, linear algebra and reductions (blocks/array_ops/) */
BF_BLOCK(mat_mul)
BF_BLOCK(mean)
BF_BLOCK(max)
BF_BLOCK(min)
BF_BLOCK(prod)
BF_BLOCK(arg_max)
BF_BLOCK(cast)
BF_BLOCK(bias_add)
BF_BLOCK(bias_add_grad)
BF_BLOCK(reshape)
BF_BLOCK(transpose)
BF_BLOCK(expand_dims)
BF_BLOCK(squeeze)
BF_BLOCK(shape)
BF_BLOCK(broadcast_to)
BF_BLOCK(tile)
BF_BLOCK(fill)
BF_BLOCK(zeros_like)
BF_BLOCK(ones_like)
BF_BLOCK(one_hot)

/* pooling and losses (blocks/nn_ops/) */
BF_BLOCK(max_pool)
BF_BLOCK(max_pool_grad)
BF_BLOCK(avg_pool)
BF_BLOCK(avg_pool_grad)
BF_BLOCK(softmax)
BF_BLOCK(log_softmax)
BF_BLOCK(softmax_cross_entropy_with_logits)
BF_BLOCK(sparse_softmax_cross_entropy_with_logits)
BF_BLOCK(l2_loss)

/* state: Variables and their updates (blocks/state_ops/) */
BF_BLOCK(variable)
BF_BLOCK(assign)
BF_BLOCK(assign_add)
BF_BLOCK(assign_sub)
BF_BLOCK(apply_gradient_descent)
BF_BLOCK(apply_momentum)
BF_BLOCK(apply_adam)

/* data: datasets (blocks/data_ops/) */
BF_BLOCK(dataset)

/* more than one process: data parallelism (blocks/collective_ops/) */
BF_BLOCK(all_reduce)
