/*
 * grad_api_stub.c - TEMPORARY weak stand-ins for the gradient builder API of block.h
 * (bf_grad_*), so that the pooling and loss blocks, whose `gradient` functions call it, link
 * before runtime/grad.c exists. Each fails cleanly. runtime/grad.c's definitions are strong
 * and replace these wherever both are linked; this file is deleted when grad.c lands on main.
 */
#include "block.h"

#define BF_WEAK __attribute__((weak))

BF_WEAK const bf_node *bf_grad_node(const bf_grad_ctx *g) { (void)g; return NULL; }
BF_WEAK const char *bf_grad_input(const bf_grad_ctx *g, int k) { (void)g, (void)k; return NULL; }
BF_WEAK const bf_port_info *bf_grad_input_info(const bf_grad_ctx *g, int k) {
    (void)g, (void)k;
    return NULL;
}
BF_WEAK const char *bf_grad_output(const bf_grad_ctx *g, int p) { (void)g, (void)p; return NULL; }
BF_WEAK const bf_port_info *bf_grad_output_info(const bf_grad_ctx *g, int p) {
    (void)g, (void)p;
    return NULL;
}
BF_WEAK const char *bf_grad_dy(const bf_grad_ctx *g, int p) { (void)g, (void)p; return NULL; }
BF_WEAK bool bf_grad_wants(const bf_grad_ctx *g, int k) { (void)g, (void)k; return false; }
BF_WEAK void bf_grad_set(bf_grad_ctx *g, int k, const char *ref) { (void)g, (void)k, (void)ref; }
BF_WEAK const char *bf_grad_add(bf_grad_ctx *g, const char *name, const char *type,
                                const char *attrs_json, ...) {
    (void)g, (void)name, (void)type, (void)attrs_json;
    return NULL;
}
BF_WEAK const char *bf_grad_const_i32(bf_grad_ctx *g, const char *name, int n,
                                      const int64_t *v) {
    (void)g, (void)name, (void)n, (void)v;
    return NULL;
}
BF_WEAK const char *bf_grad_const_scalar(bf_grad_ctx *g, const char *name, bf_dtype dt,
                                         double v) {
    (void)g, (void)name, (void)dt, (void)v;
    return NULL;
}
BF_WEAK const char *bf_grad_unbroadcast(bf_grad_ctx *g, const char *name, const char *dy,
                                        const bf_port_info *dy_info, int k) {
    (void)g, (void)name, (void)dy, (void)dy_info, (void)k;
    return NULL;
}
