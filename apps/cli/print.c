/*
 * print.c - `run --print`: fetched tensors as text, for teachers and quick looks.
 *
 * A tensor of up to CLI_PRINT_MAX elements is printed whole, as 2-D grids over its last two
 * axes that are longer than 1 (so a [3,3,1,1] filter is one 3x3 grid). When there is more than
 * one grid, or the tensor has more axes than the grid, each grid is labelled with its real
 * indices, ":" on the grid's axes: [0,1,:,:] is the grid at n=0, h=1. A larger tensor gets a
 * summary instead (shape, min, max, mean, standard deviation, and how many NaN and Inf) and
 * the corners of its first grid, numpy style, with "..." for what is left out.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CLI_PRINT_MAX 1024
#define CORNER 3

static void shape_line(const char *name, const bf_tensor *t) {
    int rank = bf_tensor_rank(t);
    const int64_t *dims = bf_tensor_dims(t);
    printf("%s: %s [", name, bf_dtype_name(bf_tensor_dtype(t)));
    for (int i = 0; i < rank; i++) printf("%s%lld", i ? "," : "", (long long)dims[i]);
    printf("]\n");
}

static void value(const bf_tensor *t, int64_t i) {
    double v = bf_tensor_get_f64(t, i);
    bf_dtype dt = bf_tensor_dtype(t);
    if (dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64) printf(" %8lld", (long long)v);
    else printf(" %11.6g", v);
}

/* The label of the grid at `idx` (all axes), ":" on the grid's axes ra and ca. */
static void label(int rank, const int64_t *idx, int ra, int ca) {
    printf("  [");
    for (int a = 0; a < rank; a++) {
        if (a == ra || a == ca) printf("%s:", a ? "," : "");
        else printf("%s%lld", a ? "," : "", (long long)idx[a]);
    }
    printf("]\n");
}

/* Print the grid at `idx` over axes ra (rows; -1: one row) and ca (columns; -1: one column),
 * whole, or only its corners (CORNER rows and columns at each end) when `corners`. */
static void grid(const bf_tensor *t, int64_t *idx, int ra, int ca, bool corners) {
    int rank = bf_tensor_rank(t);
    const int64_t *dims = bf_tensor_dims(t);
    int64_t stride[BF_MAX_RANK], s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        stride[a] = s;
        s *= dims[a];
    }
    int64_t rows = ra >= 0 ? dims[ra] : 1, cols = ca >= 0 ? dims[ca] : 1;
    int64_t base = 0;
    for (int a = 0; a < rank; a++)
        if (a != ra && a != ca) base += idx[a] * stride[a];
    for (int64_t i = 0; i < rows; i++) {
        if (corners && rows > 2 * CORNER && i == CORNER) {
            printf("    ...\n");
            i = rows - CORNER;
        }
        printf("   ");
        for (int64_t j = 0; j < cols; j++) {
            if (corners && cols > 2 * CORNER && j == CORNER) {
                printf("         ...");
                j = cols - CORNER;
            }
            value(t, base + (ra >= 0 ? i * stride[ra] : 0) + (ca >= 0 ? j * stride[ca] : 0));
        }
        printf("\n");
    }
}

static void summary(const bf_tensor *t) {
    bf_tensor_stats st;
    bf_tensor_stats_of(t, &st); /* the library's one summary, as the server answers it */
    bool f = st.finite > 0;
    printf("  %lld elements: min %.6g  max %.6g  mean %.6g  std %.6g  NaN %lld  Inf %lld\n",
           (long long)st.count, f ? st.min : NAN, f ? st.max : NAN, f ? st.mean : NAN,
           f ? st.std : NAN, (long long)st.nan, (long long)st.inf);
}

void cli_print_tensor(const char *name, const bf_tensor *t) {
    shape_line(name, t);
    int rank = bf_tensor_rank(t);
    const int64_t *dims = bf_tensor_dims(t);
    int64_t n = bf_tensor_numel(t);
    if (n == 0) {
        printf("  (empty)\n");
        return;
    }
    /* the grid's axes: the last two longer than 1 (the last axes when none is) */
    int ca = -1, ra = -1;
    for (int a = rank - 1; a >= 0; a--) {
        if (dims[a] <= 1) continue;
        if (ca < 0) ca = a;
        else if (ra < 0) ra = a;
    }
    if (ca < 0 && rank > 0) ca = rank - 1;
    int64_t idx[BF_MAX_RANK] = {0};
    bool labelled = rank > 2 || (ra < 0 && rank > 1);
    if (n > CLI_PRINT_MAX) {
        summary(t);
        if (labelled) label(rank, idx, ra, ca);
        grid(t, idx, ra, ca, true);
        return;
    }
    for (;;) {
        if (labelled) label(rank, idx, ra, ca);
        grid(t, idx, ra, ca, false);
        int a = rank - 1; /* next grid: odometer over the other axes */
        for (; a >= 0; a--) {
            if (a == ra || a == ca) continue;
            if (++idx[a] < dims[a]) break;
            idx[a] = 0;
        }
        if (a < 0) break;
    }
}
