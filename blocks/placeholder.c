/*
 * Block:    Placeholder
 * Synopsis: output = the tensor fed at run time (bf_session_feed, blockflow run --feed)
 * Padding:  none.
 * Example:  {"id": "x", "type": "Placeholder", "attrs": {"dtype": "float32",
 *           "shape": [1, 5, 5, -1]}} accepts any 1x5x5xC float32 tensor.
 *
 * placeholder.c - an input of the page, as in TensorFlow. `shape` may leave dimensions
 * unknown (-1); a feed must match the known ones and the dtype exactly. Feeding a placeholder
 * invalidates only the blocks downstream of it.
 *
 * shard "batch": in a job of several ranks (mpirun), every rank is fed the whole batch and
 * yields only its part of it, rows bf_shard_rows(N, rank, ranks) of the first dimension (a
 * batch that does not divide: the first N % ranks ranks take one row more). `shape` and the
 * feed describe the whole batch. In one process the part is the whole batch.
 */
#include "block.h"

#include <string.h>

enum { A_DTYPE, A_SHAPE, A_SHARD };
static const char *const shards[] = {"none", "batch", NULL};
static const bf_attr_desc attrs[] = {
    [A_DTYPE] = {"dtype", BF_ATTR_DTYPE, "\"float32\"", NULL, 0, "dtype of the fed tensor"},
    [A_SHAPE] = {"shape", BF_ATTR_SHAPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "expected shape; -1 marks an unknown dimension; absent: any shape"},
    [A_SHARD] = {"shard", BF_ATTR_ENUM, "\"none\"", shards, 0,
                 "batch: in a job of several ranks, yield this rank's part of the first "
                 "dimension (the first N % ranks ranks take one row more); none: all of it"},
};

static bool sharded(const bf_node *node) {
    return node->attrs[A_SHARD].i == 1 && node->ranks > 1;
}

/* The rows of the whole batch this rank yields. */
static void part(const bf_node *node, int64_t rows, int64_t *first, int64_t *count) {
    if (sharded(node)) bf_shard_rows(rows, node->rank, node->ranks, first, count);
    else *first = 0, *count = rows;
}
static const bf_port_desc outputs[] = {{"output", BF_DT_ALL, 0, "the fed tensor"}};

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)in;
    const bf_attr_value *dt = &node->attrs[A_DTYPE], *shape = &node->attrs[A_SHAPE];
    const bf_tensor *feed = node->feed;
    bf_dtype want = bf_node_float(node, dt->dtype);
    int64_t first, count;
    if (sharded(node) && ((feed && feed->rank == 0) || (shape->set && shape->n == 0))) {
        bf_err_at(err, "output", "shard");
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "shard \"batch\" splits the first "
                      "dimension, and a scalar has none");
    }
    if (!feed) {
        bf_port_set(&out[0], want, shape->set ? shape->n : -1, shape->list);
        if (shape->set && shape->n > 0 && shape->list[0] >= 0) {
            part(node, shape->list[0], &first, &count);
            out[0].dims[0] = count;
        } else if (sharded(node) && out[0].rank > 0) {
            out[0].dims[0] = -1;
        }
        return BF_OK;
    }
    if (feed->dtype != want) {
        bf_err_at(err, "output", "dtype");
        const char *have = bf_dtype_name(feed->dtype);
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "fed %s %s tensor, expected %s",
                      have[0] == 'i' ? "an" : "a", have, bf_dtype_name(want));
    }
    if (shape->set) {
        bool ok = shape->n == feed->rank;
        for (int i = 0; ok && i < feed->rank; i++)
            ok = shape->list[i] < 0 || shape->list[i] == feed->dims[i];
        if (!ok) {
            char a[128], b[128];
            bf_err_at(err, "output", "shape");
            return bf_err(err, BF_ESHAPE, "shape_mismatch", "fed shape %s, expected %s",
                          bf_shape_str(feed->rank, feed->dims, a, sizeof(a)),
                          bf_shape_str(shape->n, shape->list, b, sizeof(b)));
        }
    }
    bf_port_set(&out[0], feed->dtype, feed->rank, feed->dims);
    out[0].value = feed;
    if (sharded(node)) {
        part(node, feed->dims[0], &first, &count);
        out[0].dims[0] = count;
        out[0].value = NULL; /* a part: no tensor holds it before running */
    }
    return BF_OK;
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)in, (void)ex;
    if (!node->feed) {
        bf_err_at(err, "output", NULL);
        return bf_err(err, BF_EINVAL, "missing_feed", "placeholder \"%s\" was not fed",
                      node->id);
    }
    int64_t first = 0, count = 0;
    if (!sharded(node)) {
        memcpy(out[0]->data, node->feed->data, node->feed->nbytes);
        return BF_OK;
    }
    part(node, node->feed->dims[0], &first, &count);
    size_t row = node->feed->dims[0] ? node->feed->nbytes / (size_t)node->feed->dims[0] : 0;
    memcpy(out[0]->data, (const char *)node->feed->data + (size_t)first * row,
           (size_t)count * row);
    return BF_OK;
}

const bf_block_desc bf_block_placeholder = {
    .type = "Placeholder",
    .category = "generic",
    .synopsis = "output = the tensor fed at run time",
    .doc = "An input of the page: the tensor fed before a run (bf_session_feed(); on the "
           "command line, --feed ID=FILE.npy). With shard \"batch\", each rank of an MPI job "
           "yields its part of the batch (the first dimension).",
    .flags = BF_BLOCK_FEEDABLE,
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .infer = infer,
    .run_cpu = run_cpu,
};
