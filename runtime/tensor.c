/*
 * tensor.c - dtypes, shape arithmetic with overflow checks, memory budgets, and host tensors.
 *
 * Every size derived from a page goes through bf_shape_size() before anything is allocated,
 * so a page asking for 10^15 elements, or a shape whose product wraps 64 bits, gets BF_ELIMIT
 * naming the shape instead of an attempt (STYLE R7).
 */
#include "tensor.h"
#include "half.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtype_info[BF_DTYPE_COUNT] = {
    [BF_DTYPE_INVALID] = {"invalid", 0}, [BF_DTYPE_F16] = {"float16", 2},
    [BF_DTYPE_BF16] = {"bfloat16", 2},   [BF_DTYPE_F32] = {"float32", 4},
    [BF_DTYPE_F64] = {"float64", 8},     [BF_DTYPE_I32] = {"int32", 4},
    [BF_DTYPE_I64] = {"int64", 8},
};

const char *bf_dtype_name(bf_dtype dt) {
    return (unsigned)dt < BF_DTYPE_COUNT ? dtype_info[dt].name : "invalid";
}

size_t bf_dtype_size(bf_dtype dt) {
    return (unsigned)dt < BF_DTYPE_COUNT ? dtype_info[dt].size : 0;
}

bf_dtype bf_dtype_from_name(const char *name) {
    static const struct {
        const char *alias;
        bf_dtype dt;
    } aliases[] = {{"half", BF_DTYPE_F16},   {"float", BF_DTYPE_F32},
                   {"double", BF_DTYPE_F64}, {"DT_FLOAT", BF_DTYPE_F32},
                   {"DT_DOUBLE", BF_DTYPE_F64}, {"DT_HALF", BF_DTYPE_F16},
                   {"DT_BFLOAT16", BF_DTYPE_BF16}, {"DT_INT32", BF_DTYPE_I32},
                   {"DT_INT64", BF_DTYPE_I64}};
    if (!name) return BF_DTYPE_INVALID;
    for (int i = 1; i < BF_DTYPE_COUNT; i++)
        if (!strcmp(name, dtype_info[i].name)) return (bf_dtype)i;
    for (int i = 0; i < BF_COUNT(aliases); i++)
        if (!strcasecmp(name, aliases[i].alias)) return aliases[i].dt;
    return BF_DTYPE_INVALID;
}

char *bf_shape_str(int rank, const int64_t *dims, char *buf, size_t size) {
    size_t n = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    n += (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++) {
        if (dims[i] < 0)
            n += (size_t)snprintf(buf + n, size - n, "%s?", i ? ", " : "");
        else
            n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? ", " : "",
                                  (long long)dims[i]);
    }
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

bf_status bf_shape_size(bf_dtype dt, int rank, const int64_t *dims, uint64_t max_elements,
                        int64_t *numel, size_t *nbytes, bf_error *err) {
    char s[160];
    if (dt <= BF_DTYPE_INVALID || dt >= BF_DTYPE_COUNT)
        return bf_err(err, BF_EINVAL, "bad_dtype", "invalid dtype %d", (int)dt);
    if (rank < 0 || rank > BF_MAX_RANK)
        return bf_err(err, BF_EINVAL, "bad_shape", "rank %d is outside 0..%d", rank,
                      BF_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return bf_err(err, BF_EINVAL, "bad_shape", "shape %s has a negative dimension",
                          bf_shape_str(rank, dims, s, sizeof(s)));
        if (!bf_i64_mul(n, dims[i], &n))
            return bf_err(err, BF_ELIMIT, "too_large",
                          "shape %s has more elements than 64 bits can count",
                          bf_shape_str(rank, dims, s, sizeof(s)));
    }
    if (max_elements && (uint64_t)n > max_elements)
        return bf_err(err, BF_ELIMIT, "too_large",
                      "shape %s has %lld elements, above the limit of %llu "
                      "(bf_config.max_tensor_elements)",
                      bf_shape_str(rank, dims, s, sizeof(s)), (long long)n,
                      (unsigned long long)max_elements);
    size_t bytes;
    if (!bf_size_mul((size_t)n, bf_dtype_size(dt), &bytes))
        return bf_err(err, BF_ELIMIT, "too_large", "shape %s does not fit in memory",
                      bf_shape_str(rank, dims, s, sizeof(s)));
    if (numel) *numel = n;
    if (nbytes) *nbytes = bytes;
    return BF_OK;
}

bf_status bf_budget_charge(bf_budget *b, size_t bytes, bf_error *err) {
    if (!b) return BF_OK;
    uint64_t used = atomic_load(&b->used);
    for (;;) {
        if (bytes > b->limit || used > b->limit - bytes)
            return bf_err(err, BF_ELIMIT, "memory_limit",
                          "needs %zu more bytes of tensor memory but the session limit is "
                          "%llu bytes with %llu in use (bf_config.max_session_bytes)",
                          bytes, (unsigned long long)b->limit, (unsigned long long)used);
        if (atomic_compare_exchange_weak(&b->used, &used, used + bytes)) break;
    }
    uint64_t now = used + bytes, peak = atomic_load(&b->peak);
    while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now)) {
    }
    return BF_OK;
}

void bf_budget_reset_peak(bf_budget *b) { atomic_store(&b->peak, atomic_load(&b->used)); }

void bf_budget_release(bf_budget *b, size_t bytes) {
    if (b) atomic_fetch_sub(&b->used, bytes);
}

bf_status bf_tensor_alloc(bf_budget *budget, uint64_t max_elements, bf_dtype dt, int rank,
                          const int64_t *dims, bool zero, bf_tensor **out, bf_error *err) {
    *out = NULL;
    int64_t numel = 0;
    size_t nbytes = 0;
    bf_status st = bf_shape_size(dt, rank, dims, max_elements, &numel, &nbytes, err);
    if (st) return st;
    if ((st = bf_budget_charge(budget, nbytes, err))) return st;
    bf_tensor *t = bf_calloc(1, sizeof(*t));
    void *data = bf_aligned_alloc(nbytes, zero);
    if (!t || !data) {
        bf_free(t);
        bf_aligned_free(data);
        bf_budget_release(budget, nbytes);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate %zu bytes", nbytes);
    }
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = data;
    t->budget = budget;
    *out = t;
    return BF_OK;
}

bf_status bf_tensor_new(const bf_context *ctx, bf_dtype dt, int rank, const int64_t *dims,
                        bf_tensor **out, bf_error *err) {
    uint64_t max_el = ctx ? bf_context_config(ctx)->max_tensor_elements : BF_DEFAULT_MAX_ELEMENTS;
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (rank > 0 && !dims) return bf_err(err, BF_EINVAL, "bad_argument", "dims is NULL");
    return bf_tensor_alloc(NULL, max_el, dt, rank, dims, true, out, err);
}

bf_status bf_tensor_new_uninit(const bf_context *ctx, bf_dtype dt, int rank,
                               const int64_t *dims, bf_tensor **out, bf_error *err) {
    uint64_t max_el = ctx ? bf_context_config(ctx)->max_tensor_elements : BF_DEFAULT_MAX_ELEMENTS;
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (rank > 0 && !dims) return bf_err(err, BF_EINVAL, "bad_argument", "dims is NULL");
    return bf_tensor_alloc(NULL, max_el, dt, rank, dims, false, out, err);
}

bf_status bf_tensor_wrap(const bf_context *ctx, bf_dtype dt, int rank, const int64_t *dims,
                         void *data, size_t nbytes, bf_release_fn release, void *user,
                         bf_tensor **out, bf_error *err) {
    uint64_t max_el = ctx ? bf_context_config(ctx)->max_tensor_elements : BF_DEFAULT_MAX_ELEMENTS;
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (rank > 0 && !dims) return bf_err(err, BF_EINVAL, "bad_argument", "dims is NULL");
    int64_t numel = 0;
    size_t want = 0;
    bf_status st = bf_shape_size(dt, rank, dims, max_el, &numel, &want, err);
    if (st) return st;
    char shape[160];
    if (nbytes != want)
        return bf_err(err, BF_EINVAL, "bad_argument",
                      "a %s tensor of shape %s has %zu bytes, but the buffer given has %zu",
                      bf_dtype_name(dt), bf_shape_str(rank, dims, shape, sizeof(shape)), want,
                      nbytes);
    if (!data && nbytes) return bf_err(err, BF_EINVAL, "bad_argument", "data is NULL");
    if ((uintptr_t)data % bf_dtype_size(dt))
        return bf_err(err, BF_EINVAL, "bad_argument",
                      "the buffer at %p is not aligned to the %zu bytes of a %s element", data,
                      bf_dtype_size(dt), bf_dtype_name(dt));
    bf_tensor *t = bf_calloc(1, sizeof(*t));
    if (!t) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = data;
    t->borrowed = true;
    t->release = release;
    t->release_user = user;
    *out = t;
    return BF_OK;
}

bf_status bf_tensor_view(const bf_tensor *src, bf_tensor **out, bf_error *err) {
    bf_tensor *t = bf_malloc(sizeof(*t));
    if (!t) {
        *out = NULL;
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    *t = *src;
    t->budget = NULL;
    t->borrowed = true;
    t->release = NULL;
    t->release_user = NULL;
    *out = t;
    return BF_OK;
}

void bf_tensor_free(bf_tensor *t) {
    if (!t) return;
    BF_ASSERT(t->device == NULL); /* device tensors are freed by the session's device code */
    if (!t->borrowed) bf_aligned_free(t->data);
    else if (t->release) t->release(t->data, t->release_user);
    bf_budget_release(t->budget, t->nbytes);
    bf_free(t);
}

bf_status bf_tensor_copy(const bf_tensor *t, bf_tensor **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!t) return bf_err(err, BF_EINVAL, "bad_argument", "tensor is NULL");
    bf_status st = bf_tensor_alloc(NULL, 0, t->dtype, t->rank, t->dims, false, out, err);
    if (st == BF_OK) memcpy((*out)->data, t->data, t->nbytes);
    return st;
}

bf_dtype bf_tensor_dtype(const bf_tensor *t) { return t ? t->dtype : BF_DTYPE_INVALID; }
int bf_tensor_rank(const bf_tensor *t) { return t ? t->rank : -1; }
const int64_t *bf_tensor_dims(const bf_tensor *t) { return t ? t->dims : NULL; }
int64_t bf_tensor_numel(const bf_tensor *t) { return t ? t->numel : 0; }
size_t bf_tensor_nbytes(const bf_tensor *t) { return t ? t->nbytes : 0; }
void *bf_tensor_data(bf_tensor *t) { return t ? t->data : NULL; }
const void *bf_tensor_cdata(const bf_tensor *t) { return t ? t->data : NULL; }

double bf_tensor_get_f64(const bf_tensor *t, int64_t i) {
    if (!t) return NAN;
    const void *d = t->data;
    switch (t->dtype) {
    case BF_DTYPE_F16: return bf_f16_to_f32(((const uint16_t *)d)[i]);
    case BF_DTYPE_BF16: return bf_bf16_to_f32(((const uint16_t *)d)[i]);
    case BF_DTYPE_F32: return ((const float *)d)[i];
    case BF_DTYPE_F64: return ((const double *)d)[i];
    case BF_DTYPE_I32: return ((const int32_t *)d)[i];
    case BF_DTYPE_I64: return (double)((const int64_t *)d)[i];
    default: return 0;
    }
}

bool bf_tensor_same_shape(const bf_tensor *a, const bf_tensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

bf_status bf_tensor_set_f64(bf_tensor *t, int64_t i, double v, bf_error *err) {
    void *d = t->data;
    switch (t->dtype) {
    case BF_DTYPE_F16: ((uint16_t *)d)[i] = bf_f32_to_f16((float)v); break;
    case BF_DTYPE_BF16: ((uint16_t *)d)[i] = bf_f32_to_bf16((float)v); break;
    case BF_DTYPE_F32: ((float *)d)[i] = (float)v; break;
    case BF_DTYPE_F64: ((double *)d)[i] = v; break;
    case BF_DTYPE_I32:
        if (!(v > -2147483649.0 && v < 2147483648.0))
            return bf_err(err, BF_EDTYPE, "dtype_mismatch", "%g does not fit in int32", v);
        ((int32_t *)d)[i] = (int32_t)v;
        break;
    case BF_DTYPE_I64:
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
            return bf_err(err, BF_EDTYPE, "dtype_mismatch", "%g does not fit in int64", v);
        ((int64_t *)d)[i] = (int64_t)v;
        break;
    default: return bf_err(err, BF_EINVAL, "bad_dtype", "invalid dtype");
    }
    return BF_OK;
}

bf_status bf_tensor_convert(const bf_tensor *src, bf_tensor *dst, bf_error *err) {
    BF_ASSERT(src->numel == dst->numel);
    if (src->dtype == dst->dtype) {
        memcpy(dst->data, src->data, src->nbytes);
        return BF_OK;
    }
    if (src->dtype == BF_DTYPE_I64 && dst->dtype == BF_DTYPE_I32) {
        for (int64_t i = 0; i < src->numel; i++) {
            int64_t v = ((const int64_t *)src->data)[i];
            if (v < INT32_MIN || v > INT32_MAX)
                return bf_err(err, BF_EDTYPE, "dtype_mismatch",
                              "element %lld (%lld) does not fit in int32", (long long)i,
                              (long long)v);
            ((int32_t *)dst->data)[i] = (int32_t)v;
        }
        return BF_OK;
    }
    for (int64_t i = 0; i < src->numel; i++) {
        bf_status st = bf_tensor_set_f64(dst, i, bf_tensor_get_f64(src, i), err);
        if (st) return st;
    }
    return BF_OK;
}
