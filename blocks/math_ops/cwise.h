/*
 * cwise.h - what TensorFlow's elementwise ("cwise") math blocks share: the broadcasting shape
 * rule (TensorFlow's BCast: align trailing dims, a dim of 1 stretches), the same-shape rule of
 * the *Grad blocks and AddN, and the loops that run them.
 *
 * A block file states its scalar operation once, as an expression in x (and y) of type T, and
 * the macros below turn it into plain typed loops over contiguous data (vectorisable for
 * float32 and float64), one per operand layout: both operands vectors (VV), y one value (VS),
 * x one value (SV). cwise.c reduces every broadcast to runs of those loops:
 * - equal shapes, or one side a single element: one run over the whole output;
 * - otherwise the dims are collapsed (neighbours with the same broadcast pattern merge, dims
 *   of 1 drop), the innermost collapsed dim is the run, the outer ones a strided row walk.
 * Outputs above 64k elements are split over the thread pool, from 8k for the libm-bound
 * unary blocks and 16k for the halves (floats only: integer loops stop at the first
 * overflow, so they run on one thread).
 *
 * Dtypes: float32 and float64 natively; float16 and bfloat16 through the float32 loop
 * (converted in chunks, computed in float, rounded once, as TensorFlow's Eigen::half does);
 * int32 and int64 exactly, through an int64 operation that reports overflow (a result that
 * does not fit the dtype is an error, never a wrapped value).
 */
#ifndef BF_CWISE_H
#define BF_CWISE_H

#include "block.h"

/* Operand layouts of one run: x and y vectors, y a single value, x a single value. */
enum { BF_CW_VV, BF_CW_VS, BF_CW_SV };

/* One run of n elements. Returns -1, or (integer loops) the index of the first element whose
 * result does not fit the dtype, stopping there. */
typedef int64_t (*bf_cw_loop2)(const void *x, const void *y, void *z, int64_t n);
typedef int64_t (*bf_cw_loop1)(const void *x, void *y, int64_t n);

/* What an integer operation returns: 0, or why the element has no result. */
enum { BF_CW_OK = 0, BF_CW_OVERFLOW = 1, BF_CW_DIV_ZERO = 2 };
typedef int (*bf_cw_iop2)(int64_t a, int64_t b, int64_t *out);
typedef int (*bf_cw_iop1)(int64_t a, int64_t *out);

/* impl of a binary block: its loops per dtype (NULL: dtype not offered; the port masks say
 * the same), its integer operation (error messages), and whether it compares (the output
 * is then int32 0/1, our stand-in for TensorFlow's bool). */
typedef struct bf_binary_impl {
    bf_cw_loop2 f32[3], f64[3], i32[3], i64[3];
    bf_cw_iop2 iop;
    bool compare;
} bf_binary_impl;

typedef struct bf_unary_impl {
    bf_cw_loop1 f32, f64, i32, i64;
    bf_cw_iop1 iop;
    bool heavy; /* a libm call per element (exp, log, tanh): worth threads on fewer elements */
} bf_unary_impl;

/* Add's loops, shared by AddV2 and AddN. */
extern const bf_binary_impl bf_cw_add_impl;

/* ---- ports shared by the families --------------------------------------------------------- */

extern const bf_port_desc bf_cw_xy_all[2], bf_cw_xy_floats[2];   /* "x", "y" */
extern const bf_port_desc bf_cw_z_all[1], bf_cw_z_floats[1];     /* "z" */
extern const bf_port_desc bf_cw_x_all[1], bf_cw_x_floats[1];     /* "x" */
extern const bf_port_desc bf_cw_y_all[1], bf_cw_y_floats[1];     /* "y" */
extern const bf_port_desc bf_cw_grad_inputs[2];                  /* "y", "dy" (SigmoidGrad) */

/* ---- shapes ------------------------------------------------------------------------------- */

/* The shape as TensorFlow prints it: "[2,3]", "[]", "?" for an unknown dim or rank. */
char *bf_cw_shape_str(int rank, const int64_t *dims, char *buf, size_t size);

/* The broadcast of x and y's shapes (TensorFlow's BCast; at check time the shape function's
 * rule for unknown dims). ok = false when they are incompatible. */
bool bf_cw_broadcast_shape(const bf_port_info *x, const bf_port_info *y, int *rank,
                           int64_t *dims);

/* Infer: broadcasting binary op on inputs 0 and 1 ("Incompatible shapes: [2,3] vs. [4]"). */
bf_status bf_cw_broadcast_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                                bf_error *err);
/* Infer: two inputs of one shape (the *Grad blocks), TensorFlow's message
 * "Inputs to operation g of type ReluGrad must have the same size and shape.  Input 0: [2,3]
 * != input 1: [3]". */
bf_status bf_cw_same_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                           bf_error *err);
/* Infer: output 0 = input 0. */
bf_status bf_cw_unary_infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                            bf_error *err);

/* The kernels: impl from node->desc->impl. */
bf_status bf_cw_binary_run(const bf_node *node, const bf_tensor *const *in,
                           bf_tensor *const *out, const bf_exec *ex, bf_error *err);
bf_status bf_cw_unary_run(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                          const bf_exec *ex, bf_error *err);

/* ---- gradients (math_grad.py, nn_grad.py) ------------------------------------------------- */

/* Declare `ref` (of the forward output's shape; NULL: nothing) the gradient of input k,
 * reduced to input k's shape over the axes k was broadcast along (Sum, then Reshape). */
void bf_cw_grad_reduce(bf_grad_ctx *g, int k, const char *name, const char *ref);
/* The gradient of a one-input block as one block of `type` that takes the forward output on
 * `out_port` and the incoming gradient on `dy_port` (Sigmoid: SigmoidGrad(y, dy)). */
bf_status bf_cw_grad_by_block(bf_grad_ctx *g, const char *type, const char *out_port,
                              const char *dy_port);
/* The gradient of a one-input block as dy * f, f a block of type `type` on the input's
 * port `port` (Log: dy * Reciprocal(x); Abs: dy * Sign(x)). */
bf_status bf_cw_grad_times(bf_grad_ctx *g, const char *type, const char *port);

/* The gradients shared by several types: Add and AddV2; Div and RealDiv; Maximum (max) and
 * Minimum. */
bf_status bf_cw_add_gradient(bf_grad_ctx *g, bf_error *err);
bf_status bf_cw_div_gradient(bf_grad_ctx *g, bf_error *err);
bf_status bf_cw_maxmin_gradient(bf_grad_ctx *g, bool max);

/* ---- loop generators ---------------------------------------------------------------------- */

/*
 * BF_CW_LOOP2(name, Tin, Tout, expr): name##_vv, name##_vs, name##_sv computing
 * z[i] = expr with x and y of type T (= Tin). Constants in expr are written (T)c so that
 * float32 stays float32.
 */
#define BF_CW_LOOP2(name, Tin, Tout, expr)                                                     \
    static int64_t name##_vv(const void *xp, const void *yp, void *zp, int64_t n) {            \
        typedef Tin T;                                                                         \
        const T *a = xp, *b = yp;                                                              \
        Tout *z = zp;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                      \
            T x = a[i], y = b[i];                                                              \
            z[i] = (Tout)(expr);                                                               \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    static int64_t name##_vs(const void *xp, const void *yp, void *zp, int64_t n) {            \
        typedef Tin T;                                                                         \
        const T *a = xp, y = *(const T *)yp;                                                   \
        Tout *z = zp;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                      \
            T x = a[i];                                                                        \
            z[i] = (Tout)(expr);                                                               \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    static int64_t name##_sv(const void *xp, const void *yp, void *zp, int64_t n) {            \
        typedef Tin T;                                                                         \
        const T x = *(const T *)xp, *b = yp;                                                   \
        Tout *z = zp;                                                                          \
        for (int64_t i = 0; i < n; i++) {                                                      \
            T y = b[i];                                                                        \
            z[i] = (Tout)(expr);                                                               \
        }                                                                                      \
        return -1;                                                                             \
    }

/* Integer loops through iop (an int64 operation, BF_CW_OK or why not), stopping at the
 * first element without a result in the dtype. */
static inline bool bf_cw_fits_i32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }
static inline bool bf_cw_fits_i64(int64_t v) { (void)v; return true; }

#define BF_CW_ILOOP2_(name, T, iop, fits)                                                      \
    static int64_t name##_vv(const void *xp, const void *yp, void *zp, int64_t n) {            \
        const T *a = xp, *b = yp;                                                              \
        T *z = zp;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            int64_t v;                                                                         \
            if (iop(a[i], b[i], &v) != BF_CW_OK || !fits(v)) return i;                         \
            z[i] = (T)v;                                                                       \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    static int64_t name##_vs(const void *xp, const void *yp, void *zp, int64_t n) {            \
        const T *a = xp, y = *(const T *)yp;                                                   \
        T *z = zp;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            int64_t v;                                                                         \
            if (iop(a[i], y, &v) != BF_CW_OK || !fits(v)) return i;                            \
            z[i] = (T)v;                                                                       \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    static int64_t name##_sv(const void *xp, const void *yp, void *zp, int64_t n) {            \
        const T x = *(const T *)xp, *b = yp;                                                   \
        T *z = zp;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            int64_t v;                                                                         \
            if (iop(x, b[i], &v) != BF_CW_OK || !fits(v)) return i;                            \
            z[i] = (T)v;                                                                       \
        }                                                                                      \
        return -1;                                                                             \
    }

/* The float loops of op (op##_f32_vv, ...) from one expression, and their initializer. */
#define BF_CW_FLOAT2(op, expr)                                                                 \
    BF_CW_LOOP2(op##_f32, float, float, expr)                                                  \
    BF_CW_LOOP2(op##_f64, double, double, expr)
#define BF_CW_FLOATS2(op)                                                                      \
    .f32 = {op##_f32_vv, op##_f32_vs, op##_f32_sv}, .f64 = {op##_f64_vv, op##_f64_vs, op##_f64_sv}

/* The integer loops of op through iop, and their initializer (which sets .iop too). */
#define BF_CW_INT2(op, iop)                                                                    \
    BF_CW_ILOOP2_(op##_i32, int32_t, iop, bf_cw_fits_i32)                                      \
    BF_CW_ILOOP2_(op##_i64, int64_t, iop, bf_cw_fits_i64)
#define BF_CW_INTS2(op, iopfn)                                                                 \
    .i32 = {op##_i32_vv, op##_i32_vs, op##_i32_sv},                                            \
    .i64 = {op##_i64_vv, op##_i64_vs, op##_i64_sv}, .iop = iopfn

/* Comparisons: every dtype in, int32 0/1 out. */
#define BF_CW_COMPARE2(op, expr)                                                               \
    BF_CW_LOOP2(op##_f32, float, int32_t, expr)                                                \
    BF_CW_LOOP2(op##_f64, double, int32_t, expr)                                               \
    BF_CW_LOOP2(op##_i32, int32_t, int32_t, expr)                                              \
    BF_CW_LOOP2(op##_i64, int64_t, int32_t, expr)
#define BF_CW_COMPARES2(op)                                                                    \
    BF_CW_FLOATS2(op), .i32 = {op##_i32_vv, op##_i32_vs, op##_i32_sv},                         \
                       .i64 = {op##_i64_vv, op##_i64_vs, op##_i64_sv}, .compare = true

/* Unary: y[i] = expr in x of type T. */
#define BF_CW_LOOP1(name, Tin, expr)                                                           \
    static int64_t name(const void *xp, void *yp, int64_t n) {                                 \
        typedef Tin T;                                                                         \
        const T *a = xp;                                                                       \
        T *z = yp;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            T x = a[i];                                                                        \
            z[i] = (T)(expr);                                                                  \
        }                                                                                      \
        return -1;                                                                             \
    }
#define BF_CW_FLOAT1(op, expr)                                                                 \
    BF_CW_LOOP1(op##_f32, float, expr)                                                         \
    BF_CW_LOOP1(op##_f64, double, expr)
#define BF_CW_FLOATS1(op) .f32 = op##_f32, .f64 = op##_f64

#define BF_CW_ILOOP1_(name, T, iop, fits)                                                      \
    static int64_t name(const void *xp, void *yp, int64_t n) {                                 \
        const T *a = xp;                                                                       \
        T *z = yp;                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                      \
            int64_t v;                                                                         \
            if (iop(a[i], &v) != BF_CW_OK || !fits(v)) return i;                              \
            z[i] = (T)v;                                                                       \
        }                                                                                      \
        return -1;                                                                             \
    }
#define BF_CW_INT1(op, iop)                                                                    \
    BF_CW_ILOOP1_(op##_i32, int32_t, iop, bf_cw_fits_i32)                                      \
    BF_CW_ILOOP1_(op##_i64, int64_t, iop, bf_cw_fits_i64)
#define BF_CW_INTS1(op, iopfn) .i32 = op##_i32, .i64 = op##_i64, .iop = iopfn

/* The descriptor fields every broadcasting binary block has. */
#define BF_CW_BINARY_FIELDS(ins, outs)                                                         \
    .inputs = ins, .n_inputs = 2, .outputs = outs, .n_outputs = 1,                             \
    .infer = bf_cw_broadcast_infer, .run_cpu = bf_cw_binary_run
#define BF_CW_UNARY_FIELDS(ins, outs)                                                          \
    .inputs = ins, .n_inputs = 1, .outputs = outs, .n_outputs = 1,                             \
    .infer = bf_cw_unary_infer, .run_cpu = bf_cw_unary_run
#define BF_CW_SAME_FIELDS(ins, outs)                                                           \
    .inputs = ins, .n_inputs = 2, .outputs = outs, .n_outputs = 1,                             \
    .infer = bf_cw_same_infer, .run_cpu = bf_cw_binary_run

#endif /* BF_CWISE_H */
