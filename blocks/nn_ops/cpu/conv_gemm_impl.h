/*
 * conv_gemm_impl.h - the CPU convolution kernels, written once and instantiated per ISA and
 * element type. Each ISA file (conv_gemm_avx512.c, conv_gemm_avx2.c, conv_gemm_generic.c)
 * includes this header once per element type, after defining:
 *   T        element type (float or double)
 *   MR, NR   register block of the microkernel: MR output rows x NR output columns
 *   UKR      static microkernel, A as [k][MR] (see below)
 *   UKRB     the same microkernel with A as [k / AKB][MR][AKB]
 *   UKRS     (optional) the same with A read in place with a row stride (below)
 *   AKB      the A block width of UKRB (one vector of T)
 *   BF_VEC_BYTES  vector width of the depthwise and direct loops
 *   BF_ISA   the suffix of this instantiation's names, e.g. avx512_f32 (see "Names")
 * The file that includes it is compiled with that ISA's flags (CMake: *_avx512.c, *_avx2.c),
 * so the packing, direct and depthwise loops are auto-vectorised for the same ISA.
 *
 * The kernels are split by family, one header each, included below in this order (a family
 * may use what an earlier one defines; each header says what it owns and what it uses):
 *   conv_gemm_rows.h           bf_cg_*  packed GEMM for dense FWD and BWD_INPUT, with the
 *                                       in-place variant (UKRI)
 *   conv_gemm_col2im.h         bf_ci_*  dense BWD_INPUT with few input channels: GEMM, col2im
 *   conv_gemm_filter.h         bf_cf_*  GEMM for dense BWD_FILTER; bf_partials_run, the
 *                                       per-thread partial dW sums
 *   conv_gemm_filter_1x1.h     bf_f1_*  dense BWD_FILTER of 1x1 stride-1 filters: one long
 *                                       GEMM, x read in place (UKRS), dy packed per chunk
 *   conv_gemm_vec.h            bf_vec   channel vectors of the loops below
 *   conv_gemm_depthwise.h      bf_dw_*  depthwise FWD, BWD_INPUT and BWD_FILTER
 *   conv_gemm_direct_fwd.h     bf_sd_*  direct dense FWD, and stride-1 BWD_INPUT as one
 *   conv_gemm_direct_filter.h  bf_sf_*  direct dense BWD_FILTER
 *   conv_gemm_dispatch.h       bf_conv_ws, bf_conv_run: the entry points, which pick a family
 * They keep the conv_gemm_ prefix of the ISA files that instantiate them, direct and
 * depthwise loops included. None has an include guard: each is read once per instantiation.
 *
 * Names. Every function and type of the families is defined and called by its plain name,
 *     static void bf_cg_rows_task(void *arg, int64_t task, int slot) { ... }
 *     bf_parallel_for(ex, ..., bf_cg_rows_task, &p);
 * and each family header opens with one line per name that gives it this instantiation's
 * suffix:
 *     #define bf_cg_rows_task BF_KFN(bf_cg_rows_task)    (-> bf_cg_rows_task_avx512_f32)
 * A macro is not expanded again inside its own expansion, so the line is not recursive (the
 * same trick as zlib's `#define deflate z_deflate`). Hence `grep -rn bf_cg_rows_task blocks/`
 * lands on the definition, every call and that line; ctags indexes the definition as the
 * function bf_cg_rows_task (and the line as a macro of that name); and a symbol from a
 * profiler or debugger is found by dropping its suffix: avx512_f32, avx512_f64, avx2_f32,
 * avx2_f64, generic_f32 or generic_f64. A name left out of its header's list does not
 * compile, because both instantiations in one ISA file would define it. Rejected: the former
 * FN(bf_cg_rows_task) spelling at every definition and call (ctags indexed none of them, and
 * the suffixed symbol was nowhere), and one translation unit per instantiation with
 * unsuffixed static names (six files, and all ISAs' copies alike in a profile).
 *
 * Microkernel contract: UKR(kc, a, b, crow, coff, mr, nr, acc) computes the MR x NR block
 * sum_k a[k*MR + i] * b[k*NR + j] and, for i < mr and j < nr, stores it to crow[i][coff + j]
 * (acc == 0) or adds it there (acc != 0). kc may be 0 (stores zeros). UKRB is the same with
 * A in AKB-wide k blocks: a[(k / AKB) * MR * AKB + i * AKB + k % AKB].
 * Optional UKRI(kc, run, rows, next, b, crow, coff, mr, nr, acc): the same with A read in
 * place: the reduction is kc / run runs of run values, row i of run t at rows[t * MR + i]; a
 * run whose rows[t * MR] is NULL is all zeros and skipped. next (or NULL) is the table of the
 * block the caller runs next, whose runs the microkernel prefetches as it goes. With it, the
 * row GEMM reads A in place (conv_gemm_rows.h). UKRI also takes acc == 2: store the final
 * values like acc == 0, with streaming stores where a row of the block is whole and 64-byte
 * aligned (the row GEMM asks for it when the output is too big to stay in cache, and fences
 * before its task ends).
 * Optional UKRS(kc, a, lda, b, crow, coff, mr, nr, acc, pf, npf): UKR with A read in place
 * with a row stride, a[k * lda + i] (it reads all MR rows of each step, whatever mr is), which
 * also prefetches the npf 64-byte lines from pf on into L2, one every 8 steps (those that
 * kc steps reach); with it, the 1x1 filter gradient reads x in place
 * (conv_gemm_filter_1x1.h).
 * Optional ISA hooks: BF_COPY_SHORT(dst, src, n) copies n values (zeros when src is NULL);
 * BF_ADD_SHORT(dst, src, n) adds n values of src to dst, the tail masked (col2im's runs);
 * BF_VFMA(a, b, c) fused a * b + c and BF_VSPLAT(s) broadcast on the vectors of the direct and
 * depthwise loops (ISO C mode does not contract a * b + c by itself); BF_VSTREAM(p, v) a
 * streaming store and BF_VSTREAM_FENCE() its fence, for the depthwise row kernel (FWD and
 * stride-1 BWD_INPUT).
 */

/* name##_##BF_ISA, BF_ISA expanded first (two levels, so that it is). */
#define BF_KFN(name)                BF_KFN_PASTE(name, BF_ISA)
#define BF_KFN_PASTE(name, isa)     BF_KFN_PASTE_NOW(name, isa)
#define BF_KFN_PASTE_NOW(name, isa) name##_##isa

#include "conv_gemm_rows.h"
#include "conv_gemm_col2im.h"
#include "conv_gemm_filter.h"
#include "conv_gemm_filter_1x1.h"
#include "conv_gemm_vec.h"
#include "conv_gemm_depthwise.h"
#include "conv_gemm_direct_fwd.h"
#include "conv_gemm_direct_filter.h"
#include "conv_gemm_dispatch.h"

/* Constants that later families use, dropped so the next instantiation defines its own. The
   name lines stay: the next inclusion repeats them unchanged, and BF_KFN reads BF_ISA where
   a name is used. */
#undef BF_CG_MC
#undef BF_CG_KC
#undef BF_CG_KCI
#undef BF_CF_PC_MAX
#undef BF_CG_TAPS_MAX
#undef BF_VL
#undef BF_VFMA_
