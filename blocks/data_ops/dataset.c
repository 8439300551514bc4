/*
 * Block:    Dataset
 * Synopsis: batch = rows [k*B, k*B + B) of `file` (through the epoch's permutation when
 *           shuffling), batch2 = the same rows of `file2`; one batch per training step
 * Padding:  none.
 * Example:  {"id": "data", "type": "Dataset",
 *            "attrs": {"file": "digits_train_x.npy", "file2": "digits_train_y.npy",
 *                      "batch_size": 32, "shuffle": true, "seed": 1}}
 *           data:batch is float32 [32, 8, 8, 1], data:batch2 int32 [32], the same 32 samples.
 *
 * dataset.c - blockflow's own block (not a TensorFlow op): the input pipeline of a training
 * page, tf.data's from_tensor_slices(...).shuffle(N).batch(B) in one block. The file is read
 * once, when the block is made, and kept; each step yields one batch of its samples (the
 * first dimension), and the runtime advances the block once after every step it ran in
 * (bf_state_desc.advance). A plain run does not advance it.
 *
 * Files (recognised by their first bytes, whatever their names):
 * - .npy: any array bf_tensor_load_npy reads (float16/32/64, int32/64, bfloat16);
 * - .npz: the array `key` of a numpy.savez archive (stored members; numpy.savez_compressed's
 *   deflated members are refused: blockflow has no zlib); `key` may be left out when the
 *   archive holds one array;
 * - IDX (MNIST's train-images-idx3-ubyte, train-labels-idx1-ubyte, ...): magic 0x00 0x00
 *   0x08 NDIMS (unsigned bytes; the other IDX element types are refused), then NDIMS
 *   big-endian uint32 dims, then the bytes, nothing after them.
 * `file2` (optional) is a second file of as many samples (labels), yielded on `batch2` in
 * lockstep: the same samples, in the same order.
 *
 * Dtypes. `dtype` / `dtype2` give the output dtypes; left out, a .npy or .npz array keeps its
 * own dtype and IDX bytes become float32 for a file of two or more dims (images) and int32 for
 * a one-dim file (labels). Values are converted as they are, never scaled: MNIST's pixels
 * stay 0..255 (divide on the page, as enuSpace's pipeline does). A float file going to an
 * integer dtype must hold integers in range (checked once, when the file is read).
 *
 * Batches. An epoch is ceil(N / batch_size) batches, the last one short when batch_size does
 * not divide N, or floor(N / batch_size) full ones with drop_remainder. After the epoch's
 * last batch the block goes on with batch 0 of the next epoch. With shuffle, epoch e visits
 * the samples in the order of a permutation that is a pure function of (seed, e): a
 * Fisher-Yates shuffle whose draws come from the counter-based generator of counter_rng.h,
 * so two runs with the same seed see the same batches, and every sample once per epoch.
 * Outputs `epoch` and `index` (int64 scalars) tell which batch this is.
 *
 * Sharding. With shard "batch", in a job of several ranks (mpirun), each rank yields its part
 * of every batch: rows bf_shard_rows(rows, rank, ranks) of the batch, in order, so the ranks'
 * parts are disjoint and together the very batch one process yields, whatever the number of
 * ranks (the order, the shuffle and the cursor are the whole job's). A batch that does not
 * divide by the rank count (batch_size, or a short last batch) gives the first rows % ranks
 * ranks one sample more (numpy.array_split's rule).
 *
 * State. The cursor (epoch, batch index) is the state a checkpoint keeps (int64 [2]); loading
 * one recomputes that epoch's permutation. The outputs change from step to step, so no value
 * is known before running (unlike a Const's).
 *
 * Files are input (STYLE R6): every size is overflow-checked and bounded by the element limit
 * before anything is allocated; a truncated, oversized or malformed file is refused with a
 * message naming it, and the error names the attribute (file, file2, key, key2).
 *
 * Paths: `file` and `file2` are PATH attributes: the runtime resolves them against the page's
 * folder and confines them there as it does a Const's .npy file, and this block reads them.
 */
#include "block.h"
#include "counter_rng.h"
#include "half.h"
#include "tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { A_FILE, A_KEY, A_FILE2, A_KEY2, A_BATCH, A_SHUFFLE, A_SEED, A_DROP, A_DTYPE, A_DTYPE2,
       A_SHARD };
static const char *const shards[] = {"none", "batch", NULL};
static const bf_attr_desc attrs[] = {
    [A_FILE] = {"file", BF_ATTR_PATH, NULL, NULL, 0,
                "the samples: a .npy, a .npz (with key) or an IDX file; the first dim counts "
                "the samples"},
    [A_KEY] = {"key", BF_ATTR_STRING, NULL, NULL, BF_ATTR_OPTIONAL,
               ".npz only: the array to read (may be left out when there is one)"},
    [A_FILE2] = {"file2", BF_ATTR_PATH, NULL, NULL, BF_ATTR_OPTIONAL,
                 "optional second file of as many samples (labels), yielded on batch2"},
    [A_KEY2] = {"key2", BF_ATTR_STRING, NULL, NULL, BF_ATTR_OPTIONAL,
                ".npz only: the array of file2"},
    [A_BATCH] = {"batch_size", BF_ATTR_INT, "32", NULL, 0, "samples per batch, >= 1"},
    [A_SHUFFLE] = {"shuffle", BF_ATTR_BOOL, "false", NULL, 0,
                   "visit the samples in a new seeded order every epoch"},
    [A_SEED] = {"seed", BF_ATTR_INT, "0", NULL, 0, "seed of the shuffle"},
    [A_DROP] = {"drop_remainder", BF_ATTR_BOOL, "false", NULL, 0,
                "skip the last, short batch of an epoch"},
    [A_DTYPE] = {"dtype", BF_ATTR_DTYPE, NULL, NULL, BF_ATTR_OPTIONAL,
                 "dtype of batch; default: the file's (IDX bytes: float32, int32 for 1-D)"},
    [A_DTYPE2] = {"dtype2", BF_ATTR_DTYPE, NULL, NULL, BF_ATTR_OPTIONAL,
                  "dtype of batch2; default: file2's (IDX bytes: float32, int32 for 1-D)"},
    [A_SHARD] = {"shard", BF_ATTR_ENUM, "\"none\"", shards, 0,
                 "batch: in a job of several ranks, each yields its part of every batch (the "
                 "first batch % ranks ranks one sample more); none: the whole batch"},
};
enum { O_BATCH, O_BATCH2, O_EPOCH, O_INDEX };
static const bf_port_desc outputs[] = {
    [O_BATCH] = {"batch", BF_DT_ALL, 0, "this step's samples of file: [rows, ...file dims]"},
    [O_BATCH2] = {"batch2", BF_DT_ALL, 0,
                  "the same samples of file2 (an empty [0] tensor without file2)"},
    [O_EPOCH] = {"epoch", BF_DT(I64), 0, "the epoch of this batch, from 0"},
    [O_INDEX] = {"index", BF_DT(I64), 0, "the batch's index within its epoch, from 0"},
};

/* ---- the data of one file ----------------------------------------------------------------- */

typedef struct source {
    bf_tensor *tensor;          /* a .npy / .npz array, charged to the session's budget */
    unsigned char *bytes;       /* or IDX unsigned bytes (bf_malloc'd, charged by hand) */
    size_t charged;             /* bytes charged for `bytes` */
    int rank;
    int64_t dims[BF_MAX_RANK];  /* dims[0]: the samples */
    int64_t row;                /* elements per sample */
    bf_dtype out;               /* the output dtype */
} source;

typedef struct dataset {
    source src[2];
    bool two;                   /* file2 given */
    bf_dtype out2;              /* batch2's dtype without file2 */
    int64_t n;                  /* samples */
    int64_t batch;              /* batch_size */
    int64_t batches;            /* batches per epoch */
    bool shuffle;
    uint64_t seed;
    int64_t *perm;              /* [n]: epoch `epoch`'s order (shuffle only), charged */
    bf_budget *budget;
    int64_t epoch, index;       /* the cursor: this step's batch */
} dataset;

static bool is_int(bf_dtype dt) { return dt == BF_DTYPE_I32 || dt == BF_DTYPE_I64; }

static void source_free(source *s, bf_budget *budget) {
    bf_tensor_free(s->tensor);
    bf_free(s->bytes);
    bf_budget_release(budget, s->charged);
    memset(s, 0, sizeof(*s));
}

/* Element i of the file (any dtype) as a double. */
static double src_get(const source *s, int64_t i) {
    return s->bytes ? (double)s->bytes[i] : bf_tensor_get_f64(s->tensor, i);
}

/* Element i of an integer or byte file, exactly. */
static int64_t src_get_int(const source *s, int64_t i) {
    if (s->bytes) return s->bytes[i];
    if (s->tensor->dtype == BF_DTYPE_I32) return ((const int32_t *)s->tensor->data)[i];
    if (s->tensor->dtype == BF_DTYPE_I64) return ((const int64_t *)s->tensor->data)[i];
    return (int64_t)bf_tensor_get_f64(s->tensor, i); /* checked integral and in range */
}

/* The file as the page's loader resolved it (against the page's folder, confined where the
 * context confines files); a node made without a page (bf_node_make) opens the name as given. */
static const char *data_path(const bf_node *node, int attr) {
    return node->attrs[attr].path ? node->attrs[attr].path : node->attrs[attr].s;
}

/* ---- IDX ------------------------------------------------------------------------------------ */

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static bf_status read_all(int fd, void *buf, size_t n, const char *path, const char *what,
                          bf_error *err) {
    unsigned char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return bf_err(err, BF_EIO, "io_error", "%s: cannot read the %s: %s", path, what,
                          strerror(errno));
        if (r == 0)
            return bf_err(err, BF_EPARSE, "bad_idx", "%s: the file ends inside the %s", path,
                          what);
        p += r, n -= (size_t)r;
    }
    return BF_OK;
}

/* The IDX file open on fd (size bytes, the 4 magic bytes `magic` already read). */
static bf_status load_idx(const bf_node *node, int fd, uint64_t size, const unsigned char *magic,
                          const char *path, source *s, bf_error *err) {
    static const struct {
        unsigned code;
        const char *name;
    } types[] = {{0x09, "signed bytes"}, {0x0B, "int16"}, {0x0C, "int32"},
                 {0x0D, "float32"}, {0x0E, "float64"}};
    if (magic[2] != 0x08) {
        const char *name = "an unknown element type";
        for (int i = 0; i < BF_COUNT(types); i++)
            if (types[i].code == magic[2]) name = types[i].name;
        return bf_err(err, magic[2] == 0x09 || (magic[2] >= 0x0B && magic[2] <= 0x0E)
                               ? BF_EUNSUPPORTED : BF_EPARSE,
                      "bad_idx", "%s: IDX element type 0x%02X (%s) is not supported: only "
                      "unsigned bytes (0x08), as MNIST's files hold", path, magic[2], name);
    }
    int rank = magic[3];
    if (rank < 1 || rank > BF_MAX_RANK)
        return bf_err(err, BF_EPARSE, "bad_idx", "%s: the IDX header claims %d dimensions "
                      "(1 to %d are read)", path, rank, BF_MAX_RANK);
    uint64_t header = 4 + 4 * (uint64_t)rank;
    if (size < header)
        return bf_err(err, BF_EPARSE, "bad_idx", "%s: the file ends inside the IDX header "
                      "(%llu bytes, its %d dims need %llu)", path, (unsigned long long)size,
                      rank, (unsigned long long)header);
    unsigned char raw[4 * BF_MAX_RANK];
    bf_status st = read_all(fd, raw, 4 * (size_t)rank, path, "IDX dims", err);
    if (st) return st;
    int64_t total = 1;
    bool overflow = false;
    for (int i = 0; i < rank; i++) {
        s->dims[i] = be32(raw + 4 * i);
        overflow |= !bf_i64_mul(total, s->dims[i], &total);
    }
    s->rank = rank;
    char shp[200];
    bf_shape_str(rank, s->dims, shp, sizeof(shp));
    if (overflow || (node->max_elements && (uint64_t)total > node->max_elements))
        return bf_err(err, BF_ELIMIT, "too_large", "%s: the IDX dims %s hold more elements "
                      "than the limit of %llu", path, shp,
                      (unsigned long long)node->max_elements);
    uint64_t data = size - header;
    if (data != (uint64_t)total)
        return bf_err(err, BF_EPARSE, "bad_idx", "%s: the IDX dims %s need %lld bytes of data "
                      "but the file has %llu after its header (%s)", path, shp, (long long)total,
                      (unsigned long long)data, data < (uint64_t)total ? "truncated" : "the dims "
                      "do not describe the file");
    if ((st = bf_budget_charge(node->budget, (size_t)total, err))) return st;
    s->charged = (size_t)total;
    s->bytes = bf_malloc(total ? (size_t)total : 1);
    if (!s->bytes)
        return bf_err(err, BF_ENOMEM, "out_of_memory", "%s: cannot hold its %lld bytes", path,
                      (long long)total);
    return read_all(fd, s->bytes, (size_t)total, path, "IDX data", err);
}

/* ---- .npz ------------------------------------------------------------------------------------ */

typedef struct npz_pick {
    const char *key;   /* wanted, or NULL: the only one */
    bf_tensor *t;      /* the chosen array */
    int count;         /* arrays seen */
    char names[160];   /* their keys, for messages */
} npz_pick;

static bf_status npz_member(const char *key, bf_tensor *t, void *user, bf_error *err) {
    (void)err;
    npz_pick *p = user;
    size_t k = strlen(p->names);
    if (k + 8 < sizeof(p->names))
        snprintf(p->names + k, sizeof(p->names) - k, "%s\"%s\"", p->count ? ", " : "", key);
    p->count++;
    if (!p->t && (p->key ? !strcmp(key, p->key) : true)) p->t = t;
    else bf_tensor_free(t);
    return BF_OK;
}

/* Array `key` of the archive (the only one when key is NULL). On a key problem, *key_fault. */
static bf_status load_npz(const bf_node *node, const char *path, const char *key, bf_tensor **out,
                          bool *key_fault, bf_error *err) {
    npz_pick p = {.key = key};
    bf_status st = bf_npz_each(path, node->max_elements, npz_member, &p, err);
    if (st) {
        bf_tensor_free(p.t);
        return st;
    }
    if (!p.t || (!key && p.count > 1)) {
        bf_tensor_free(p.t);
        *key_fault = true;
        if (!p.count)
            return bf_err(err, BF_EPARSE, "bad_npz", "%s: the archive holds no array", path);
        if (key)
            return bf_err(err, BF_ENOTFOUND, "not_found", "%s has no array \"%.60s\" (it holds "
                          "%s)", path, key, p.names);
        return bf_err(err, BF_EATTR, "missing_attr", "%s holds %d arrays (%s): name one with "
                      "the key attribute", path, p.count, p.names);
    }
    *out = p.t;
    return BF_OK;
}

/* ---- one file, whatever its kind ------------------------------------------------------------ */

static bf_status open_error(bf_error *err, const char *path, const char *what) {
    return bf_err(err, BF_EIO, "io_error", "%s: %s: %s", path, what, strerror(errno));
}

/* Read file `which` (0: file, 1: file2) into s, its error naming the attribute at fault. */
static bf_status load_source(const bf_node *node, int which, source *s, bf_error *err) {
    int fa = which ? A_FILE2 : A_FILE, ka = which ? A_KEY2 : A_KEY;
    int da = which ? A_DTYPE2 : A_DTYPE;
    const char *fname = attrs[fa].name, *kname = attrs[ka].name;
    const char *path = data_path(node, fa);
    const char *key = node->attrs[ka].set ? node->attrs[ka].s : NULL;
    bf_status st = BF_OK;
    const char *fault = fname;
    if (!path || !path[0]) {
        bf_err_at(err, NULL, fname);
        return bf_err(err, BF_EATTR, "bad_attr", "%s must name a .npy, .npz or IDX file", fname);
    }
    /* O_NONBLOCK: a FIFO would otherwise block the open; only regular files are read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    unsigned char magic[6] = {0};
    if (fd < 0) {
        st = open_error(err, path, "cannot open");
    } else if (fstat(fd, &sb)) {
        st = open_error(err, path, "cannot stat");
    } else if (!S_ISREG(sb.st_mode)) {
        st = bf_err(err, BF_EIO, "io_error", "%s: not a regular file", path);
    } else if (sb.st_size < 4) {
        st = bf_err(err, BF_EPARSE, "bad_dataset", "%s: %lld bytes, too short for a .npy, .npz "
                    "or IDX file", path, (long long)sb.st_size);
    } else {
        st = read_all(fd, magic, 4, path, "magic number", err);
    }
    bool npy = !memcmp(magic, "\x93NUM", 4), npz = !memcmp(magic, "PK\x03\x04", 4) ||
                                                  !memcmp(magic, "PK\x05\x06", 4);
    bool idx = magic[0] == 0 && magic[1] == 0;
    if (!st && !npy && !npz && !idx)
        st = bf_err(err, BF_EPARSE, "bad_dataset", "%s: not a .npy, .npz or IDX file (it starts "
                    "with bytes %02X %02X %02X %02X)", path, magic[0], magic[1], magic[2],
                    magic[3]);
    if (!st && key && !npz) {
        fault = kname;
        st = bf_err(err, BF_EATTR, "bad_attr", "%s names an array of a .npz archive, but %s is "
                    "a%s file", kname, path, npy ? " .npy" : "n IDX");
    }
    if (!st && idx) st = load_idx(node, fd, (uint64_t)sb.st_size, magic, path, s, err);
    if (fd >= 0) close(fd);
    if (!st && (npy || npz)) {
        bool key_fault = false;
        st = npy ? bf_npy_load(path, node->max_elements, &s->tensor, err)
                 : load_npz(node, path, key, &s->tensor, &key_fault, err);
        if (key_fault) fault = kname;
        if (!st && (st = bf_budget_charge(node->budget, s->tensor->nbytes, err)) == BF_OK)
            s->tensor->budget = node->budget; /* released when the tensor is freed */
        if (!st) {
            s->rank = s->tensor->rank;
            memcpy(s->dims, s->tensor->dims, sizeof(s->dims));
        }
    }
    if (!st && s->rank < 1)
        st = bf_err(err, BF_ESHAPE, "shape_mismatch", "%s holds a scalar: a dataset's first "
                    "dimension counts its samples", path);
    if (st) {
        bf_err_at(err, NULL, fault);
        return st;
    }
    s->row = 1;
    for (int i = 1; i < s->rank; i++) s->row *= s->dims[i]; /* no overflow: the whole fits */

    /* The output dtype, and the values it must be able to hold. */
    const bf_attr_value *dt = &node->attrs[da];
    s->out = dt->set ? dt->dtype : s->tensor ? s->tensor->dtype
                                             : s->rank >= 2 ? BF_DTYPE_F32 : BF_DTYPE_I32;
    s->out = bf_node_float(node, s->out);
    bool int_src = s->bytes || is_int(s->tensor->dtype);
    if (is_int(s->out) && !(s->tensor && s->tensor->dtype == s->out)) {
        double lo = s->out == BF_DTYPE_I32 ? -2147483648.0 : -9223372036854775808.0;
        int64_t total = s->row * s->dims[0];
        for (int64_t i = 0; i < total; i++) {
            double v = src_get(s, i);
            bool ok = int_src ? (s->out == BF_DTYPE_I64 ||
                                 (src_get_int(s, i) >= INT32_MIN && src_get_int(s, i) <= INT32_MAX))
                              : v == floor(v) && v >= lo && v < -lo;
            if (!ok) {
                bf_err_at(err, NULL, attrs[da].name);
                return bf_err(err, BF_EDTYPE, "dtype_mismatch", "%s: element %lld (%g) is not "
                              "an %s value: give %s a float dtype", path, (long long)i, v,
                              bf_dtype_name(s->out), attrs[da].name);
            }
        }
    }
    return BF_OK;
}

/* ---- the order of an epoch ------------------------------------------------------------------ */

/*
 * perm = epoch e's order: Fisher-Yates from the last place down, place i taking the sample at
 * a place j uniform in [0, i], j drawn from the counter generator keyed by (seed, e) at
 * counter i. A pure function of (seed, e, n).
 */
static void permute(dataset *d, int64_t e) {
    int64_t *p = d->perm;
    uint64_t key = bf_mix64(d->seed ^ bf_mix64((uint64_t)e * 0x9e3779b97f4a7c15ull + 1));
    for (int64_t i = 0; i < d->n; i++) p[i] = i;
    for (int64_t i = d->n - 1; i > 0; i--) {
        int64_t j = (int64_t)(bf_counter_uniform(key, (uint64_t)i, 0) * (double)(i + 1));
        if (j > i) j = i; /* the draw is below 1, but (i + 1) * u may round up to i + 1 */
        int64_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

/* ---- init, fini ------------------------------------------------------------------------------ */

static void fini(bf_node *node) {
    dataset *d = node->state;
    if (!d) return;
    for (int k = 0; k < 2; k++) source_free(&d->src[k], d->budget);
    if (d->perm) {
        bf_free(d->perm);
        bf_budget_release(d->budget, (size_t)d->n * sizeof(int64_t));
    }
    bf_free(d);
    node->state = NULL;
}

static bf_status init(bf_node *node, bf_error *err) {
    int64_t batch = node->attrs[A_BATCH].i;
    if (batch < 1) {
        bf_err_at(err, NULL, "batch_size");
        return bf_err(err, BF_EATTR, "bad_attr", "batch_size must be at least 1, got %lld",
                      (long long)batch);
    }
    for (int k = A_KEY; k <= A_KEY2; k += A_KEY2 - A_KEY)
        if (node->attrs[k].set && !node->attrs[k == A_KEY ? A_FILE : A_FILE2].set) {
            bf_err_at(err, NULL, attrs[k].name);
            return bf_err(err, BF_EATTR, "bad_attr", "%s is given without %s", attrs[k].name,
                          k == A_KEY ? "file" : "file2");
        }
    dataset *d = bf_calloc(1, sizeof(*d));
    if (!d) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    node->state = d;
    d->budget = node->budget;
    d->batch = batch;
    d->shuffle = node->attrs[A_SHUFFLE].b;
    d->seed = (uint64_t)node->attrs[A_SEED].i;
    d->two = node->attrs[A_FILE2].set;
    const bf_attr_value *dt2 = &node->attrs[A_DTYPE2];
    d->out2 = bf_node_float(node, dt2->set ? dt2->dtype : BF_DTYPE_I32);
    bf_status st = load_source(node, 0, &d->src[0], err);
    if (!st && d->two) st = load_source(node, 1, &d->src[1], err);
    /* Files of different lengths are a problem of the page (infer reports it), not of this
     * attribute: an editor changes `file` and `file2` one after the other. */
    d->n = d->src[0].dims[0];
    if (!st && d->two) d->n = BF_MIN(d->n, d->src[1].dims[0]);
    if (!st && d->n == 0) {
        bf_err_at(err, NULL, "file");
        st = bf_err(err, BF_ESHAPE, "shape_mismatch", "%s holds no samples (its first "
                    "dimension is 0)", data_path(node, A_FILE));
    }
    if (!st) {
        d->batches = d->n / batch;
        if (!node->attrs[A_DROP].b) d->batches += d->n % batch != 0;
        if (d->batches == 0) {
            bf_err_at(err, NULL, "batch_size");
            st = bf_err(err, BF_EATTR, "bad_attr", "batch_size %lld exceeds the %lld samples "
                        "and drop_remainder drops the one short batch: no batch is left",
                        (long long)batch, (long long)d->n);
        }
    }
    if (!st && d->shuffle) {
        size_t bytes = (size_t)d->n * sizeof(int64_t); /* n elements exist: no overflow */
        if ((st = bf_budget_charge(d->budget, bytes, err)) == BF_OK &&
            !(d->perm = bf_malloc(bytes))) {
            bf_budget_release(d->budget, bytes);
            st = bf_err(err, BF_ENOMEM, "out_of_memory", "no memory for the order of %lld "
                        "samples", (long long)d->n);
        }
        if (st) bf_err_at(err, NULL, "shuffle");
        else permute(d, 0);
    }
    if (st) fini(node);
    return st;
}

/* ---- infer, run ------------------------------------------------------------------------------ */

/* This step's batch, as this rank yields it: rows [*first, *first + *rows) of the epoch's
 * order (its part of the batch with shard "batch"). */
static void batch_rows(const bf_node *node, const dataset *d, int64_t *first, int64_t *rows) {
    *first = d->index * d->batch;
    *rows = BF_MIN(d->batch, d->n - *first);
    if (node->attrs[A_SHARD].i == 1 && node->ranks > 1) {
        int64_t skip, count;
        bf_shard_rows(*rows, node->rank, node->ranks, &skip, &count);
        *first += skip;
        *rows = count;
    }
}

static void set_batch(const dataset *d, const source *s, int64_t rows, bf_port_info *p) {
    int64_t dims[BF_MAX_RANK];
    memcpy(dims, s->dims, sizeof(dims));
    dims[0] = rows;
    bf_port_set(p, s->out, s->rank, dims); /* no value: it changes every step */
    (void)d;
}

static bf_status infer(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err) {
    (void)in;
    const dataset *d = node->state;
    int64_t first, rows, zero = 0;
    if (d->two && d->src[1].dims[0] != d->src[0].dims[0]) {
        bf_err_at(err, NULL, "file2");
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "file2 has %lld samples but file has "
                      "%lld: the two are yielded in lockstep", (long long)d->src[1].dims[0],
                      (long long)d->src[0].dims[0]);
    }
    batch_rows(node, d, &first, &rows);
    set_batch(d, &d->src[0], rows, &out[O_BATCH]);
    if (d->two) set_batch(d, &d->src[1], rows, &out[O_BATCH2]);
    else bf_port_set(&out[O_BATCH2], d->out2, 1, &zero);
    bf_port_set(&out[O_EPOCH], BF_DTYPE_I64, 0, NULL);
    bf_port_set(&out[O_INDEX], BF_DTYPE_I64, 0, NULL);
    return BF_OK;
}

typedef struct copy_job {
    const dataset *d;
    const source *s;
    bf_tensor *t;
    int64_t first;
} copy_job;

enum { ROWS_PER_TASK = 64 };

/* Rows [r0, r1) of the batch: sample order[first + r] of the file, converted. */
static void copy_rows(void *arg, int64_t task, int slot) {
    (void)slot;
    const copy_job *j = arg;
    const dataset *d = j->d;
    const source *s = j->s;
    bf_tensor *t = j->t;
    int64_t row = s->row, r0 = task * ROWS_PER_TASK;
    int64_t r1 = BF_MIN(t->dims[0], r0 + ROWS_PER_TASK);
    size_t esz = bf_dtype_size(t->dtype);
    bool same = s->tensor && s->tensor->dtype == t->dtype;
    for (int64_t r = r0; r < r1; r++) {
        int64_t k = j->first + r, sample = d->perm ? d->perm[k] : k;
        int64_t from = sample * row, to = r * row;
        if (same) {
            memcpy((char *)t->data + (size_t)to * esz,
                   (const char *)s->tensor->data + (size_t)from * esz, (size_t)row * esz);
            continue;
        }
        for (int64_t i = 0; i < row; i++) {
            switch (t->dtype) {
            case BF_DTYPE_I32:
                ((int32_t *)t->data)[to + i] = (int32_t)src_get_int(s, from + i);
                break;
            case BF_DTYPE_I64: ((int64_t *)t->data)[to + i] = src_get_int(s, from + i); break;
            case BF_DTYPE_F32: ((float *)t->data)[to + i] = (float)src_get(s, from + i); break;
            case BF_DTYPE_F64: ((double *)t->data)[to + i] = src_get(s, from + i); break;
            case BF_DTYPE_F16:
                ((uint16_t *)t->data)[to + i] = bf_f32_to_f16((float)src_get(s, from + i));
                break;
            case BF_DTYPE_BF16:
                ((uint16_t *)t->data)[to + i] = bf_f32_to_bf16((float)src_get(s, from + i));
                break;
            default: BF_ASSERT(!"dtype"); break;
            }
        }
    }
}

static bf_status run_cpu(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err) {
    (void)in;
    const dataset *d = node->state;
    int64_t first, rows;
    batch_rows(node, d, &first, &rows);
    for (int k = 0; k < 1 + d->two; k++) {
        copy_job j = {d, &d->src[k], out[k], first};
        BF_ASSERT(out[k]->dims[0] == rows);
        bf_parallel_for(ex, (rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK, copy_rows, &j);
    }
    ((int64_t *)out[O_EPOCH]->data)[0] = d->epoch;
    ((int64_t *)out[O_INDEX]->data)[0] = d->index;
    return bf_exec_cancelled(ex) ? bf_err(err, BF_ECANCELED, "cancelled", "the run was cancelled")
                                 : BF_OK;
}

/* ---- state: the cursor ---------------------------------------------------------------------- */

static void advance(bf_node *node) {
    dataset *d = node->state;
    if (++d->index < d->batches) return;
    d->index = 0;
    d->epoch++;
    if (d->perm) permute(d, d->epoch);
}

static bf_status save(const bf_node *node, bf_tensor **out, bf_error *err) {
    const dataset *d = node->state;
    int64_t two = 2;
    bf_status st = bf_tensor_new(NULL, BF_DTYPE_I64, 1, &two, out, err);
    if (st) return st;
    int64_t *c = bf_tensor_data(*out);
    c[0] = d->epoch;
    c[1] = d->index;
    return BF_OK;
}

static bf_status load(bf_node *node, const bf_tensor *t, bf_error *err) {
    dataset *d = node->state;
    if (t->dtype != BF_DTYPE_I64)
        return bf_err(err, BF_EDTYPE, "dtype_mismatch", "a Dataset's cursor is int64 [epoch, "
                      "batch index], not %s", bf_dtype_name(t->dtype));
    if (t->rank != 1 || t->dims[0] != 2) {
        char s[128];
        return bf_err(err, BF_ESHAPE, "shape_mismatch", "a Dataset's cursor is int64 [epoch, "
                      "batch index] (shape [2]), not shape %s",
                      bf_shape_str(t->rank, t->dims, s, sizeof(s)));
    }
    const int64_t *c = t->data;
    if (c[0] < 0 || c[1] < 0 || c[1] >= d->batches)
        return bf_err(err, BF_EINVAL, "bad_state", "cursor [%lld, %lld] is out of range: the "
                      "epoch must be >= 0 and the batch index in [0, %lld)", (long long)c[0],
                      (long long)c[1], (long long)d->batches);
    d->epoch = c[0];
    d->index = c[1];
    if (d->perm) permute(d, d->epoch);
    return BF_OK;
}

static const bf_state_desc state = {.advance = advance, .save = save, .load = load};

const bf_block_desc bf_block_dataset = {
    .type = "Dataset",
    .category = "data",
    .synopsis = "batch = the next batch_size samples of file (batch2: of file2)",
    .doc = "The samples of a .npy, .npz or IDX (MNIST) file, read once, yielded batch_size at a "
           "time, one batch per training step, optionally shuffled anew every epoch with a seed; "
           "file2 (labels) in lockstep on batch2. blockflow's own block, not a TensorFlow op.",
    .outputs = outputs,
    .n_outputs = BF_COUNT(outputs),
    .attrs = attrs,
    .n_attrs = BF_COUNT(attrs),
    .init = init,
    .fini = fini,
    .infer = infer,
    .run_cpu = run_cpu,
    .state = &state,
};
