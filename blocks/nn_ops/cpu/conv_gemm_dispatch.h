/*
 * conv_gemm_dispatch.h - bf_conv_ws and bf_conv_run, the two entry points of one
 * instantiation, which the ISA file puts in its bf_conv_isa_impl table (e.g.
 * bf_conv_run_avx512_f32). Part of the kernel template (conv_gemm_impl.h; no include guard).
 *
 * Both pick the family in the same order, so the run gets the workspace that was planned for
 * it: depthwise (conv_gemm_depthwise.h); BWD_FILTER of a 1x1 filter with x read in place, where
 * the ISA has UKRS (conv_gemm_filter_1x1.h), else direct (conv_gemm_direct_filter.h), else its
 * GEMM (conv_gemm_filter.h); FWD direct (conv_gemm_direct_fwd.h); stride-1 BWD_INPUT as a
 * direct FWD of dy; BWD_INPUT with few input channels (conv_gemm_col2im.h); otherwise the
 * packed row GEMM (conv_gemm_rows.h).
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_conv_ws  BF_KFN(bf_conv_ws)
#define bf_conv_run BF_KFN(bf_conv_run)

static size_t bf_conv_ws(bf_conv_op op, const bf_conv_geom *g, int n_threads) {
    if (n_threads < 1) n_threads = 1;
    if (bf_dw_wanted(g)) return bf_dw_ws(op, g, n_threads);
#ifdef UKRS
    if (op == BF_CONV_BWD_FILTER && bf_f1_wanted(g)) return bf_f1_ws(g, n_threads);
#endif
    if (op == BF_CONV_BWD_FILTER && bf_sf_wanted(g)) return bf_sf_ws(g, n_threads);
    if (op == BF_CONV_BWD_FILTER) return bf_cf_ws(g, n_threads);
    if (bf_sd_wanted(op, g)) return bf_sd_ws(g, n_threads);
    bf_conv_geom g2;
    if (op == BF_CONV_BWD_INPUT && bf_sd_bwd_geom(g, &g2))
        return bf_sd_ws(&g2, n_threads);
    if (op == BF_CONV_BWD_INPUT && bf_ci_wanted(g, n_threads))
        return bf_ci_ws(g, n_threads);
    return bf_cg_rows_ws(op, g, n_threads);
}

static void bf_conv_run(bf_conv_op op, const bf_conv_geom *g, const T *a, const T *b,
                        T *out, const bf_exec *ex) {
    bf_conv_geom g2;
    if (bf_dw_wanted(g)) bf_dw_run(op, g, a, b, out, ex);
#ifdef UKRS
    else if (op == BF_CONV_BWD_FILTER && bf_f1_wanted(g)) bf_f1_run(g, a, b, out, ex);
#endif
    else if (op == BF_CONV_BWD_FILTER && bf_sf_wanted(g)) bf_sf_run(g, a, b, out, ex);
    else if (op == BF_CONV_BWD_FILTER) bf_cf_run(g, a, b, out, ex);
    else if (bf_sd_wanted(op, g)) bf_sd_run(g, a, b, out, false, ex);
    else if (op == BF_CONV_BWD_INPUT && bf_sd_bwd_geom(g, &g2))
        bf_sd_run(&g2, a, b, out, true, ex);
    else if (op == BF_CONV_BWD_INPUT && bf_ci_wanted(g, ex->n_threads))
        bf_ci_run(g, a, b, out, ex);
    else bf_cg_rows_run(op, g, a, b, out, ex);
}
