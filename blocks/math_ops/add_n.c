/*
 * Block:    AddN
 * Synopsis: sum = inputs_0 + inputs_1 + ... (every connected input; same shapes)
 * Example:  inputs_0 = [1,2], inputs_1 = [10,20], inputs_2 = [100,200]  ->  sum = [111,222].
 *
 * add_n.c - the elementwise sum of a list of tensors of one shape and dtype (no
 * broadcasting), as TensorFlow's AddN. TensorFlow's input is a list `inputs` of N tensors
 * (attribute N >= 1); a block's ports are fixed per type, so AddN has the ports inputs_0 ..
 * inputs_15: the first two must be connected, the others are optional, and the sum is over
 * those connected, in port order (gaps allowed). There is no N attribute: the wiring says it.
 * float32 and float64 are summed left to right in their dtype, as TensorFlow's Eigen
 * expression does; float16 and bfloat16 are summed in float32 and rounded once (TensorFlow
 * rounds after each addition); integers are exact, and a sum that does not fit the dtype is
 * an error.
 */
#include "cwise.h"

#include "half.h"

#include <stdio.h>

#define N_PORTS 16
#define CHUNK   ((int64_t)16384)

#define IN(k, flags) {"inputs_" #k, BF_DT_ALL, flags, "a term (same shape and dtype as inputs_0)"}
static const bf_port_desc inputs[N_PORTS] = {
    IN(0, 0),
    IN(1, 0),
    IN(2, BF_PORT_OPTIONAL),
    IN(3, BF_PORT_OPTIONAL),
    IN(4, BF_PORT_OPTIONAL),
    IN(5, BF_PORT_OPTIONAL),
    IN(6, BF_PORT_OPTIONAL),
    IN(7, BF_PORT_OPTIONAL),
    IN(8, BF_PORT_OPTIONAL),
    IN(9, BF_PORT_OPTIONAL),
    IN(10, BF_PORT_OPTIONAL),
    IN(11, BF_PORT_OPTIONAL),
    IN(12, BF_PORT_OPTIONAL),
    IN(13, BF_PORT_OPTIONAL),
    IN(14, BF_PORT_OPTIONAL),
    IN(15, BF_PORT_OPTIONAL),
};
static const bf_port_desc outputs[] = {{"sum", BF_DT_ALL, 0, "the sum, of the inputs' shape"}};

static bool absent(const bf_port_info *p) { return p->rank == BF_PORT_ABSENT_RANK; }

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    bf_port_info m = in[0]; /* what all connected inputs agree on so far */
    m.value = NULL;
    for (int k = 1; k < N_PORTS; k++) {
        const bf_port_info *p = &in[k];
        if (absent(p)) continue;
        if (m.dtype && p->dtype && m.dtype != p->dtype) {
            bf_err_at(err, inputs[k].name, NULL);
            return bf_err(err, BF_EDTYPE, "dtype_mismatch",
                          "cannot compute AddN as input #%d(zero-based) was expected to be a "
                          "%s tensor but is a %s tensor",
                          k, bf_dtype_name(m.dtype), bf_dtype_name(p->dtype));
        }
        if (!m.dtype) m.dtype = p->dtype;
        if (p->rank < 0) continue;
        if (m.rank < 0) {
            bf_port_set(&m, m.dtype, p->rank, p->dims);
            continue;
        }
        bool same = m.rank == p->rank;
        for (int i = 0; same && i < m.rank; i++)
            same = m.dims[i] < 0 || p->dims[i] < 0 || m.dims[i] == p->dims[i];
        if (!same) {
            char a[128], b[128];
            bf_err_at(err, inputs[k].name, NULL);
            return bf_err(err, BF_ESHAPE, "shape_mismatch",
                          "Inputs to operation %s of type AddN must have the same size and "
                          "shape.  Input 0: %s != input %d: %s",
                          node->id ? node->id : "AddN",
                          bf_cw_shape_str(m.rank, m.dims, a, sizeof(a)), k,
                          bf_cw_shape_str(p->rank, p->dims, b, sizeof(b)));
        }
        for (int i = 0; i < m.rank; i++)
            if (m.dims[i] < 0) m.dims[i] = p->dims[i];
    }
    bf_port_set(out, m.dtype, m.rank, m.rank >= 0 ? m.dims : NULL);
    return BF_OK;
}

typedef struct job {
    const bf_tensor *t[N_PORTS]; /* the connected inputs, in port order */
    int n_in;
    bf_tensor *z;
} job;

/* Elements [o, o + n) of the float32 / float64 sum, left to right in the dtype. */
static void sum_native(const job *j, int64_t o, int64_t n) {
    int layout = BF_CW_VV;
    bool f64 = j->z->dtype == BF_DTYPE_F64;
    bf_cw_loop2 add = f64 ? bf_cw_add_impl.f64[layout] : bf_cw_add_impl.f32[layout];
    size_t es = f64 ? 8 : 4;
    char *z = (char *)j->z->data + o * (int64_t)es;
    add((const char *)j->t[0]->data + o * (int64_t)es,
        (const char *)j->t[1]->data + o * (int64_t)es, z, n);
    for (int k = 2; k < j->n_in; k++) add(z, (const char *)j->t[k]->data + o * (int64_t)es, z, n);
}

/* The halves: summed in float32, rounded once. */
static void sum_half(const job *j, int64_t o, int64_t n) {
    bool f16 = j->z->dtype == BF_DTYPE_F16;
    float acc[256];
    uint16_t *z = (uint16_t *)j->z->data + o;
    for (int64_t c = 0; c < n; c += 256) {
        int64_t m = BF_MIN(256, n - c);
        for (int k = 0; k < j->n_in; k++) {
            const uint16_t *s = (const uint16_t *)j->t[k]->data + o + c;
            for (int64_t i = 0; i < m; i++) {
                float v = f16 ? bf_f16_to_f32(s[i]) : bf_bf16_to_f32(s[i]);
                acc[i] = k ? acc[i] + v : v;
            }
        }
        for (int64_t i = 0; i < m; i++)
            z[c + i] = f16 ? bf_f32_to_f16(acc[i]) : bf_f32_to_bf16(acc[i]);
    }
}

static void task(void *arg, int64_t t, int slot) {
    (void)slot;
    const job *j = arg;
    int64_t o = t * CHUNK, n = BF_MIN(CHUNK, j->z->numel - o);
    if (j->z->dtype == BF_DTYPE_F32 || j->z->dtype == BF_DTYPE_F64) sum_native(j, o, n);
    else sum_half(j, o, n);
}

static int64_t int_at(const bf_tensor *t, int64_t i) {
    return t->dtype == BF_DTYPE_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    job j = {.z = out[0]};
    for (int k = 0; k < N_PORTS; k++)
        if (in[k]) j.t[j.n_in++] = in[k];
    BF_ASSERT(j.n_in >= 2);
    int64_t n = j.z->numel;
    if (n == 0) return BF_OK;
    bf_dtype dt = j.z->dtype;
    if (dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64) {
        /* Exact: int64 with overflow checks, then the dtype's range. */
        for (int64_t i = 0; i < n; i++) {
            int64_t s = 0;
            bool bad = false;
            for (int k = 0; k < j.n_in && !bad; k++)
                bad = __builtin_add_overflow(s, int_at(j.t[k], i), &s);
            if (bad || (dt == BF_DTYPE_I32 && !bf_cw_fits_i32(s))) {
                bf_err_at(err, "sum", NULL);
                return bf_err(err, BF_EDTYPE, "dtype_mismatch",
                              "element %lld: AddN of %d inputs overflows %s", (long long)i,
                              j.n_in, bf_dtype_name(dt));
            }
            if (dt == BF_DTYPE_I32) ((int32_t *)j.z->data)[i] = (int32_t)s;
            else ((int64_t *)j.z->data)[i] = s;
        }
        return BF_OK;
    }
    int64_t tasks = (n + CHUNK - 1) / CHUNK;
    if (n > 4 * CHUNK && ex && ex->n_threads > 1) {
        bf_parallel_for(ex, tasks, task, &j);
    } else {
        for (int64_t t = 0; t < tasks; t++) task(&j, t, 0);
    }
    (void)node;
    return BF_OK;
}

/* math_grad.py _AddNGrad: every input gets dy. */
static bf_status gradient(bf_grad_ctx *g, bf_error *err) {
    (void)err;
    const char *dy = bf_grad_dy(g, 0);
    for (int k = 0; dy && k < N_PORTS; k++)
        if (bf_grad_wants(g, k)) bf_grad_set(g, k, dy);
    return BF_OK;
}

const bf_block_desc bf_block_add_n = {
    .type = "AddN",
    .category = "math",
    .synopsis = "sum = inputs_0 + inputs_1 + ... (connected inputs)",
    .doc = "Elementwise sum of 2 to 16 tensors of one shape and dtype (no broadcasting). "
           "TensorFlow's list input `inputs` is the ports inputs_0 .. inputs_15: the first "
           "two connected, the rest optional. Every dtype; integers are exact, and a sum "
           "that overflows is an error.",
    .inputs = inputs,
    .n_inputs = N_PORTS,
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .infer = infer,
    .run_cpu = run_cpu,
    .gradient = gradient,
};
