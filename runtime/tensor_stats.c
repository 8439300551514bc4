/*
 * tensor_stats.c - the one summary of a tensor's values (bf_tensor_stats_of): count, finite,
 * NaN and infinity counts, min, max, mean and population standard deviation of the finite
 * elements in one pass (Welford's update, which stays accurate where the sum of squares
 * cancels). The CLI's summary of a large tensor and the server's ?view=summary both use it.
 */
#include "common.h"

#include <math.h>
#include <string.h>

void bf_tensor_stats_of(const bf_tensor *t, bf_tensor_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof(*out));
    if (!t) return;
    int64_t n = bf_tensor_numel(t);
    double lo = INFINITY, hi = -INFINITY, mean = 0, m2 = 0;
    out->count = n;
    for (int64_t i = 0; i < n; i++) {
        double v = bf_tensor_get_f64(t, i);
        if (isnan(v)) {
            out->nan++;
            continue;
        }
        if (isinf(v)) {
            out->inf++;
            continue;
        }
        out->finite++;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        double d = v - mean;
        mean += d / (double)out->finite;
        m2 += d * (v - mean);
    }
    if (out->finite) {
        out->min = lo;
        out->max = hi;
        out->mean = mean;
        out->std = sqrt(m2 / (double)out->finite);
    }
}
