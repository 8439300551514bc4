/*
 * test_conv_cuda_emu.cu - checks, on the CPU, the algorithms of our CUDA
 * convolution kernels in every CUDA build, GPU or not (label cpu): it includes
 * conv_cuda_own.cu and runs its
 * __host__ __device__ pieces on the host against a float64 reference, on 400
 * random geometries (NHWC/NCHW, strides, dilations, VALID / SAME / asymmetric
 * EXPLICIT pads, groups, depthwise multipliers) and 200 more that stress
 * BWD_INPUT's stride phases (strides 2-4, dilations 1-3, filters up to 7x7,
 * asymmetric pads up to 4, images smaller than the stride), all three ops:
 *  - the tiled implicit GEMM, emulated block by block with each __syncthreads
 * phase run for all 256 threads in turn (same grid, same work items per
 * grid.z index (group, stride phase, split), folded onto grid.z values from 1
 * to 65535, same tile shapes, tile loads and 4x4 thread mapping, same split-K
 * partial layout and ordered reduction), with 1, 4 and 132 "SMs" so that split
 * counts vary;
 *  - the depthwise direct kernels (their per-element functions), with split
 * reductions;
 *  - the cuDNN path's TF-style handling of asymmetric padding: pad by the
 * difference (our pad_crop_src indices), convolve with the common symmetric
 * padding, crop for BWD_INPUT; and that cuDNN's output-size formula gives the
 * geometry's output size. What it cannot check: anything that needs a GPU
 * (launch configuration, shared-memory races, cuDNN itself).
 * tests/blocks/test_conv_gpu.c does that where a GPU exists.
 */
#include "nn_ops/cuda/conv_cuda_own.cu"
#include "conv_ref64.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>


// Faithful sequential emulation of gemm_kernel<double, OP, TBM, TBN>: one block at a time,
// each __syncthreads phase run for all 256 "threads" in turn, with grid.z = gz. FWD and
// BWD_FILTER have gz = nz (one work item a block); BWD_INPUT loops over the work items
// z = bz, bz + gz, ... (the launch's gz = min(nz, 65535); smaller values here exercise it).
template <int OP, int TBM, int TBN>
static void emu_gemm(bf_cgeo g, const double *a, const double *b, double *out, double *partial,
                     int M, int NC, int K, int kchunk, int splits, int nz, int gz) {
    enum { TX = TBN / 4 };
    int gx = (M + TBM - 1) / TBM, gy = (NC + TBN - 1) / TBN;
    static double As[BK][TBM + 1], Bs[BK][TBN + 1];
    std::vector<double> acc(256 * 16);
    for (int bz = 0; bz < gz; bz++)
        for (int by = 0; by < gy; by++)
            for (int bx = 0; bx < gx; bx++) {
                int m0 = bx * TBM, n0 = by * TBN;
                for (int z = bz; z < nz; z += gz) {
                    const gemm_blk p = gemm_blk_of<OP>(g, z, splits, M, K);
                    if (m0 >= p.M) continue;
                    int kbeg = p.split * kchunk, kend = std::min(p.K, kbeg + kchunk);
                    std::fill(acc.begin(), acc.end(), 0.0);
                    for (int k0 = kbeg; k0 < kend; k0 += BK) {
                        for (int t = 0; t < 256; t++) {
                            for (int i = 0; i < (TBM * BK) / GEMM_THREADS; i++) {
                                int idx = t + i * GEMM_THREADS;
                                int kk = idx % BK, mm = idx / BK;
                                As[kk][mm] = gemm_a<double, OP>(g, p, a, m0 + mm, k0 + kk, kend);
                            }
                            for (int i = 0; i < (TBN * BK) / GEMM_THREADS; i++) {
                                int idx = t + i * GEMM_THREADS;
                                int nn = idx % TBN, kk = idx / TBN;
                                Bs[kk][nn] = gemm_b<double, OP>(g, p, b, k0 + kk, n0 + nn, NC, kend);
                            }
                        }
                        for (int t = 0; t < 256; t++) {
                            int tx = t % TX, ty = t / TX;
                            for (int kk = 0; kk < BK; kk++)
                                for (int i = 0; i < 4; i++)
                                    for (int j = 0; j < 4; j++)
                                        acc[t * 16 + i * 4 + j] +=
                                            As[kk][ty * 4 + i] * Bs[kk][tx + TX * j];
                        }
                    }
                    for (int t = 0; t < 256; t++) {
                        int tx = t % TX, ty = t / TX;
                        for (int i = 0; i < 4; i++) {
                            int m = m0 + ty * 4 + i;
                            if (m >= p.M) continue;
                            for (int j = 0; j < 4; j++) {
                                int nn = n0 + tx + TX * j;
                                if (nn >= NC) continue;
                                if (splits > 1)
                                    partial[((size_t)(p.split * g.groups + p.grp) * M + m) * NC +
                                            nn] = acc[t * 16 + i * 4 + j];
                                else
                                    out[gemm_out_idx<OP>(g, p, m, nn)] = acc[t * 16 + i * 4 + j];
                            }
                        }
                    }
                }
            }
}

// Mirror of launch_own with host emulation.
static void emu_own(bf_conv_op op, const bf_conv_geom *geom, const double *a, const double *b,
                    double *out, int sm, int zcap) {
    bf_cgeo g = bf_cgeo_from(geom);
    int depthwise = bf_conv_is_depthwise(geom);
    if (op == BF_CONV_BWD_FILTER) {
        int F = g.kh * g.kw * g.cg * g.o, P = g.n * g.oh * g.ow;
        int splits = bwd_filter_splits(geom, BF_DTYPE_F64, sm);
        if (splits < 2) splits = 1;
        std::vector<double> part((size_t)splits * F + 1);
        if (depthwise) {
            int chunk = (P + splits - 1) / splits;
            for (int s = 0; s < splits; s++)
                for (int f = 0; f < F; f++) {
                    int pb = s * chunk, pe = std::min(P, pb + chunk);
                    double v = direct_bwd_filter_elem<double>(g, a, b, f, pb, pe);
                    if (splits == 1)
                        out[f] = v;
                    else
                        part[(size_t)s * F + f] = v;
                }
            if (splits > 1)
                for (int f = 0; f < F; f++) {
                    double s = 0;
                    for (int sp = 0; sp < splits; sp++)
                        s += part[(size_t)sp * F + f];
                    out[f] = s;
                }
        } else {
            int M = g.kh * g.kw * g.cg, NC = g.og, K = P;
            int kchunk = ((K + splits - 1) / splits + BK - 1) / BK * BK;
            splits = (K + kchunk - 1) / kchunk;
            if (splits < 1) splits = 1;
            int nz = g.groups * splits;
            emu_gemm<BF_CONV_BWD_FILTER, BM, BN>(g, a, b, out, part.data(), M, NC, K, kchunk, splits,
                                                 nz, nz);
            if (splits > 1) {
                int total = g.groups * M * NC;
                for (int i = 0; i < total; i++) {
                    int nn = i % NC, t = i / NC, m = t % M, grp = t / M;
                    double s = 0;
                    for (int sp = 0; sp < splits; sp++)
                        s += part[(size_t)sp * total + i];
                    out[m * g.o + grp * g.og + nn] = s;
                }
            }
        }
        return;
    }
    if (depthwise) {
        int total = op == BF_CONV_FWD ? g.n * g.oh * g.ow * g.o : g.n * g.h * g.w * g.c;
        for (int i = 0; i < total; i++)
            out[i] = op == BF_CONV_FWD ? direct_fwd_elem<double>(g, a, b, i)
                                       : direct_bwd_input_elem<double>(g, a, b, i);
        return;
    }
    if (op == BF_CONV_FWD) {
        int M = g.n * g.oh * g.ow, NC = g.og, K = g.kh * g.kw * g.cg;
        emu_gemm<BF_CONV_FWD, BM, BN>(g, a, b, out, NULL, M, NC, K, K, 1, g.groups, g.groups);
    } else {
        int phases = bi_phases_y(g) * bi_phases_x(g), nz = g.groups * phases;
        int M = g.n * ((g.h - 1) / g.sh + 1) * ((g.w - 1) / g.sw + 1), NC = g.cg;
        int K = g.kh * g.kw * g.og;
        if (NC <= THIN_BN)
            emu_gemm<BF_CONV_BWD_INPUT, THIN_BM, THIN_BN>(g, a, b, out, NULL, M, NC, K, K, 1, nz,
                                                          std::min(nz, zcap));
        else
            emu_gemm<BF_CONV_BWD_INPUT, BM, BN>(g, a, b, out, NULL, M, NC, K, K, 1, nz,
                                                std::min(nz, zcap));
    }
}

static int64_t rint_(std::mt19937_64 &r, int64_t lo, int64_t hi) {
    return lo + (int64_t)(r() % (uint64_t)(hi - lo + 1));
}
static int64_t pads_for(int mode, int64_t in, int64_t k, int64_t s, int64_t d, std::mt19937_64 &r,
                        int64_t *b, int64_t *a, int64_t maxpad = 3) {
    int64_t eff = (k - 1) * d + 1;
    if (mode == 1) {
        int64_t out = (in + s - 1) / s;
        int64_t total = std::max<int64_t>((out - 1) * s + eff - in, 0);
        *b = total / 2;
        *a = total - *b;
        return out;
    }
    *b = mode == 2 ? rint_(r, 0, maxpad) : 0;
    *a = mode == 2 ? rint_(r, 0, maxpad) : 0;
    int64_t span = in + *b + *a;
    return span < eff ? -1 : (span - eff) / s + 1;
}

// Cases 400.. stress BWD_INPUT's stride phases: no depthwise (those use the direct kernels),
// strides 2..4, dilations 1..3 (so gcd(stride, dilation) takes the values 1, 2 and 3), filters
// up to 7, random asymmetric explicit pads up to 4 (or SAME / VALID), images as small as 1 (fewer
// phases than the stride), and cg from 1 to 40 (thin and wide tiles).
static void strided_geom(std::mt19937_64 &r, bf_conv_geom &g) {
    for (;;) {
        memset(&g, 0, sizeof g);
        g.nchw = (int)rint_(r, 0, 1);
        g.n = rint_(r, 1, 2);
        g.groups = rint_(r, 0, 2) == 0 ? rint_(r, 2, 3) : 1;
        g.in_c = g.groups * rint_(r, 1, rint_(r, 0, 1) ? 40 : 8);
        g.out_c = g.groups * rint_(r, 1, 20);
        g.k_in_c = g.in_c / g.groups;
        g.in_h = rint_(r, 1, 20);
        g.in_w = rint_(r, 1, 20);
        g.k_h = rint_(r, 1, 7);
        g.k_w = rint_(r, 1, 7);
        g.stride_h = rint_(r, 2, 4);
        g.stride_w = rint_(r, 1, 4);
        if (rint_(r, 0, 1)) std::swap(g.stride_h, g.stride_w);
        g.dil_h = rint_(r, 1, 3);
        g.dil_w = rint_(r, 1, 3);
        int mode = rint_(r, 0, 3) ? 2 : (int)rint_(r, 0, 1);
        g.out_h = pads_for(mode, g.in_h, g.k_h, g.stride_h, g.dil_h, r, &g.pad_top, &g.pad_bottom,
                           4);
        g.out_w = pads_for(mode, g.in_w, g.k_w, g.stride_w, g.dil_w, r, &g.pad_left,
                           &g.pad_right, 4);
        if (g.out_h > 0 && g.out_w > 0) return;
    }
}

int main() {
    std::mt19937_64 r(12345);
    int fails = 0, runs = 0, strided_bi = 0, thin_bi = 0;
    for (int cs = 0; cs < 600; cs++) {
        bf_conv_geom g;
        bool big = cs % 7 == 6;
        for (;;) {
            if (cs >= 400) {
                strided_geom(r, g);
                break;
            }
            memset(&g, 0, sizeof g);
            g.nchw = (int)rint_(r, 0, 1);
            g.n = rint_(r, 1, big ? 2 : 3);
            int kind = (int)rint_(r, 0, 2);
            if (kind == 0) {
                g.groups = 1;
                g.in_c = rint_(r, 1, big ? 40 : 7);
                g.out_c = rint_(r, 1, big ? 70 : 9);
            } else if (kind == 1) {
                g.groups = rint_(r, 2, 3);
                g.in_c = g.groups * rint_(r, 1, big ? 12 : 4);
                g.out_c = g.groups * rint_(r, 1, big ? 24 : 4);
            } else {
                g.in_c = rint_(r, 2, big ? 24 : 6);
                g.groups = g.in_c;
                g.out_c = g.in_c * rint_(r, 1, 3);
            }
            g.k_in_c = g.in_c / g.groups;
            g.in_h = rint_(r, 1, big ? 24 : 12);
            g.in_w = rint_(r, 1, big ? 24 : 12);
            g.k_h = rint_(r, 1, 4);
            g.k_w = rint_(r, 1, 4);
            g.stride_h = rint_(r, 1, 3);
            g.stride_w = rint_(r, 1, 3);
            g.dil_h = rint_(r, 1, 2);
            g.dil_w = rint_(r, 1, 2);
            int mode = (int)rint_(r, 0, 2);
            g.out_h =
                pads_for(mode, g.in_h, g.k_h, g.stride_h, g.dil_h, r, &g.pad_top, &g.pad_bottom);
            g.out_w =
                pads_for(mode, g.in_w, g.k_w, g.stride_w, g.dil_w, r, &g.pad_left, &g.pad_right);
            if (g.out_h > 0 && g.out_w > 0) break;
        }
        if (!bf_conv_is_depthwise(&g) && (g.stride_h > 1 || g.stride_w > 1)) {
            strided_bi++;
            thin_bi += g.k_in_c <= THIN_BN;
        }
        // BWD_INPUT's grid.z as launched (65535), or small, to fold its work items onto fewer
        // blocks.
        int zcap = cs % 4 == 1 ? 1 : cs % 4 == 2 ? 2 : cs % 4 == 3 ? 5 : 65535;
        int64_t nx = g.n * g.in_h * g.in_w * g.in_c, ny = g.n * g.out_h * g.out_w * g.out_c,
                nw = g.k_h * g.k_w * g.k_in_c * g.out_c;
        std::uniform_real_distribution<double> u(-1, 1);
        std::vector<double> x(nx), y(ny), w(nw);
        for (auto &v : x)
            v = u(r);
        for (auto &v : y)
            v = u(r);
        for (auto &v : w)
            v = u(r);
        for (int op = 0; op < 3; op++) {
            const double *a = op == BF_CONV_BWD_INPUT ? y.data() : x.data();
            const double *b = op == BF_CONV_BWD_FILTER ? y.data() : w.data();
            int64_t no = op == BF_CONV_FWD ? ny : op == BF_CONV_BWD_FILTER ? nw : nx;
            std::vector<double> ref(no), got(no, NAN);
            bf_test_conv_ref64((bf_conv_op)op, &g, a, b, ref.data(), no);
            int sm = (cs % 3 == 0) ? 132 : (cs % 3 == 1 ? 4 : 1);
            emu_own((bf_conv_op)op, &g, a, b, got.data(), sm, zcap);
            double worst = 0;
            for (int64_t i = 0; i < no; i++) {
                double e = std::fabs(got[i] - ref[i]);
                if (!(e <= worst)) worst = e;
            }
            runs++;
            if (!(worst < 1e-9)) {
                fails++;
                printf("FAIL own case %d op %d err %g (n%lld h%lld w%lld c%lld "
                       "k%lldx%lld o%lld g%lld nchw%d)\n",
                       cs, op, worst, (long long)g.n, (long long)g.in_h, (long long)g.in_w,
                       (long long)g.in_c, (long long)g.k_h, (long long)g.k_w, (long long)g.out_c,
                       (long long)g.groups, g.nchw);
            }
            // cuDNN-path emulation: pad by the difference, symmetric common padding,
            // crop.
            bf_conv_geom q = g;
            int ct = (int)std::min(g.pad_top, g.pad_bottom),
                cl = (int)std::min(g.pad_left, g.pad_right);
            int et = (int)g.pad_top - ct, eb = (int)g.pad_bottom - ct, el = (int)g.pad_left - cl,
                er = (int)g.pad_right - cl;
            q.in_h = g.in_h + et + eb;
            q.in_w = g.in_w + el + er;
            q.pad_top = q.pad_bottom = ct;
            q.pad_left = q.pad_right = cl;
            // cuDNN's output size for q:
            int64_t coh = (q.in_h + 2 * ct - ((g.k_h - 1) * g.dil_h + 1)) / g.stride_h + 1;
            int64_t cow = (q.in_w + 2 * cl - ((g.k_w - 1) * g.dil_w + 1)) / g.stride_w + 1;
            if (coh != g.out_h || cow != g.out_w) {
                fails++;
                printf("FAIL cudnn out size case %d\n", cs);
                continue;
            }
            int64_t nxp = q.n * q.in_h * q.in_w * q.in_c;
            std::vector<double> xp(nxp), got2(no, NAN);
            if (op != BF_CONV_BWD_INPUT) {
                for (int64_t i = 0; i < nxp; i++) {
                    int j = pad_crop_src((int)i, (int)g.n, (int)g.in_h, (int)g.in_w, (int)g.in_c,
                                         et, eb, el, er, g.nchw, 1);
                    xp[i] = j < 0 ? 0 : x[j];
                }
                bf_test_conv_ref64((bf_conv_op)op, &q, xp.data(), b, got2.data(), no);
            } else {
                std::vector<double> dxp(nxp);
                bf_test_conv_ref64(BF_CONV_BWD_INPUT, &q, a, b, dxp.data(), nxp);
                for (int64_t i = 0; i < nx; i++)
                    got2[i] = dxp[pad_crop_src((int)i, (int)g.n, (int)g.in_h, (int)g.in_w,
                                               (int)g.in_c, et, eb, el, er, g.nchw, 0)];
            }
            worst = 0;
            for (int64_t i = 0; i < no; i++) {
                double e = std::fabs(got2[i] - ref[i]);
                if (!(e <= worst)) worst = e;
            }
            if (!(worst < 1e-9)) {
                fails++;
                printf("FAIL cudnn-pad case %d op %d err %g\n", cs, op, worst);
            }
        }
    }
    printf("%d runs, %d failures (%d geometries with strided implicit-GEMM BWD_INPUT, %d of them "
           "on the thin tile)\n",
           runs, fails, strided_bi, thin_bi);
    return fails != 0;
}
