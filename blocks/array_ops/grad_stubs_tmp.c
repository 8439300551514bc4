/*
 * grad_stubs_tmp.c - TEMPORARY weak stand-ins for the gradient builder API of block.h, so this
 * branch links before runtime/grad.c lands on main. Removed when it does (the strong
 * definitions would win anyway). Never called in this branch's tests.
 */
#include "block.h"

#define WEAK __attribute__((weak))
WEAK const bf_node *bf_grad_node(const bf_grad_ctx *g) { (void)g; return NULL; }
WEAK const char *bf_grad_input(const bf_grad_ctx *g, int k) { (void)g, (void)k; return NULL; }
WEAK const bf_port_info *bf_grad_input_info(const bf_grad_ctx *g, int k) {
    (void)g, (void)k;
    return NULL;
}
WEAK const char *bf_grad_output(const bf_grad_ctx *g, int p) { (void)g, (void)p; return NULL; }
WEAK const bf_port_info *bf_grad_output_info(const bf_grad_ctx *g, int p) {
    (void)g, (void)p;
    return NULL;
}
WEAK const char *bf_grad_dy(const bf_grad_ctx *g, int p) { (void)g, (void)p; return NULL; }
WEAK bool bf_grad_wants(const bf_grad_ctx *g, int k) { (void)g, (void)k; return false; }
WEAK void bf_grad_set(bf_grad_ctx *g, int k, const char *ref) { (void)g, (void)k, (void)ref; }
WEAK const char *bf_grad_add(bf_grad_ctx *g, const char *name, const char *type,
                             const char *attrs_json, ...) {
    (void)g, (void)name, (void)type, (void)attrs_json;
    return NULL;
}
WEAK const char *bf_grad_const_i32(bf_grad_ctx *g, const char *name, int n, const int64_t *v) {
    (void)g, (void)name, (void)n, (void)v;
    return NULL;
}
WEAK const char *bf_grad_const_scalar(bf_grad_ctx *g, const char *name, bf_dtype dt, double v) {
    (void)g, (void)name, (void)dt, (void)v;
    return NULL;
}
WEAK const char *bf_grad_unbroadcast(bf_grad_ctx *g, const char *name, const char *dy,
                                     const bf_port_info *dy_info, int k) {
    (void)g, (void)name, (void)dy, (void)dy_info, (void)k;
    return NULL;
}
