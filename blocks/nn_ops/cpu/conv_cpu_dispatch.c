/*
 * conv_cpu_dispatch.c - a stand-in for the fast CPU kernels: bf_conv_cpu_* run the reference
 * kernels and need no workspace. It exists so that the blocks build and run on the `conv`
 * branch before the fast kernels land; delete this file when merging them (it also carries
 * bf_conv_macs, which moves with the fast kernels if they do not define it).
 */
#include "../conv_kernels.h"

size_t bf_conv_cpu_workspace(bf_conv_op op, const bf_conv_geom *g, bf_dtype dt, int n_threads) {
    (void)op, (void)g, (void)dt, (void)n_threads;
    return 0;
}

void bf_conv_cpu_f32(bf_conv_op op, const bf_conv_geom *g, const float *a, const float *b,
                     float *out, const bf_exec *ex) {
    bf_conv_ref_f32(op, g, a, b, out, ex);
}

void bf_conv_cpu_f64(bf_conv_op op, const bf_conv_geom *g, const double *a, const double *b,
                     double *out, const bf_exec *ex) {
    bf_conv_ref_f64(op, g, a, b, out, ex);
}

double bf_conv_macs(const bf_conv_geom *g) {
    return (double)g->n * (double)g->out_h * (double)g->out_w * (double)g->out_c *
           (double)g->k_h * (double)g->k_w * (double)g->k_in_c;
}
