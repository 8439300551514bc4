/*
 * conv_gemm_vec.h - bf_vec and its helpers, the channel vectors of the depthwise and direct
 * loops (conv_gemm_depthwise.h, conv_gemm_direct_fwd.h, conv_gemm_direct_filter.h). Part of
 * the kernel template (conv_gemm_impl.h; no include guard).
 *
 * bf_vec is a GCC vector of T, BF_VEC_BYTES wide, with BF_VL lanes. bf_ldv and bf_stv load
 * and store it unaligned, bf_vsplat broadcasts a scalar (BF_VSPLAT when the ISA file gives
 * one), and BF_VFMA_(a, b, c) is a * b + c, fused when the ISA file gives BF_VFMA. bf_pf_part
 * prefetches a slice of a range in address order (see there).
 */

/* Names of this instantiation: see "Names" in conv_gemm_impl.h. */
#define bf_vec    BF_KFN(bf_vec)
#define bf_ldv    BF_KFN(bf_ldv)
#define bf_stv    BF_KFN(bf_stv)
#define bf_vsplat BF_KFN(bf_vsplat)
#define bf_pf_part BF_KFN(bf_pf_part)

/* Vectors of BF_VEC_BYTES for the channel loops (GCC vector extension: one zmm with AVX-512,
   one ymm with AVX2, one xmm in the generic build). Unaligned loads and stores via memcpy. */
typedef T bf_vec __attribute__((vector_size(BF_VEC_BYTES)));
#define BF_VL ((int64_t)(BF_VEC_BYTES / sizeof(T)))
static inline bf_vec bf_ldv(const T *p) {
    bf_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void bf_stv(T *p, bf_vec v) { memcpy(p, &v, sizeof v); }
static inline bf_vec bf_vsplat(T s) {
#ifdef BF_VSPLAT
    return (bf_vec)BF_VSPLAT(s); /* ISA hook: one broadcast */
#else
    return (bf_vec){0} + s;
#endif
}
/* a * b + c on vectors, fused where the ISA file provides BF_VFMA (ISO C mode does not
   contract a * b + c by itself) */
#ifdef BF_VFMA
#define BF_VFMA_(a, b, c) BF_VFMA(a, b, c)
#else
#define BF_VFMA_(a, b, c) ((a) * (b) + (c))
#endif

/* Prefetch part k of `parts` of [base, base + nel) into L2, in address order: the loops that
   read a row one line per pixel (a channel vector or a few channels at a time, pixels C
   apart) call it once per pass for the memory their next row reads first, which no hardware
   prefetcher would fetch ahead in that order. */
static inline void bf_pf_part(const T *base, int64_t nel, int64_t k, int64_t parts) {
    int64_t per = (int64_t)(64 / sizeof(T)), lines = bf_cc_ceil_div(nel, per);
    for (int64_t l = k * lines / parts; l < (k + 1) * lines / parts; l++)
        __builtin_prefetch(base + BF_MIN(l * per, nel - 1), 0, 2); /* never past the end */
}
