/*
 * block.h - what a block type is, as data (STYLE R9). A block file fills one bf_block_desc:
 * its ports, its attributes, a shape/dtype inference function (which also performs every
 * check TensorFlow performs, in TensorFlow's words) and one kernel per device. The runtime
 * reads only this descriptor: it parses attributes by kind, checks port dtypes against the
 * masks, wires inputs, plans memory and picks the device. It knows nothing of convolutions.
 */
#ifndef BF_BLOCK_H
#define BF_BLOCK_H

#include "common.h"
#include "exec.h"
#include "tensor.h"

/* ---- ports ---------------------------------------------------------------------------- */

#define BF_DT(x) (1u << BF_DTYPE_##x)
#define BF_DT_FLOATS (BF_DT(F16) | BF_DT(BF16) | BF_DT(F32) | BF_DT(F64))
#define BF_DT_INTS (BF_DT(I32) | BF_DT(I64))
#define BF_DT_ALL (BF_DT_FLOATS | BF_DT_INTS)

enum {
    BF_PORT_HOST = 1u << 0, /* the kernel reads this input on the host even when it runs on a
                               GPU (TensorFlow's HostMemory, e.g. filter_sizes) */
    BF_PORT_OPTIONAL = 1u << 1, /* may stay unconnected: the kernel then gets a NULL tensor
                                   and infer an info with dtype INVALID and rank -2 */
    BF_PORT_REF = 1u << 2, /* TensorFlow's ref input (`var`, `ref`, `accum`, `m`, `v`): it must
                              be wired straight to a stateful block (a Variable), and the block
                              computes that state's next value in output BF_PORT_REF_OUTPUT,
                              which the runtime commits when the step ends (see bf_state_desc) */
};
/* A ref input whose next value is output `k`: flags BF_PORT_REF_TO(k). */
#define BF_PORT_REF_TO(k)      (BF_PORT_REF | ((unsigned)(k) << 8))
#define BF_PORT_REF_OUTPUT(fl) ((int)((fl) >> 8))
/* The info of an unconnected optional input. */
#define BF_PORT_ABSENT_RANK (-2)

typedef struct bf_port_desc {
    const char *name;
    unsigned dtypes; /* mask of BF_DT(...) the port accepts */
    unsigned flags;  /* BF_PORT_* */
    const char *doc;
} bf_port_desc;

/* ---- attributes ----------------------------------------------------------------------- */

typedef enum bf_attr_kind {
    BF_ATTR_INT,      /* JSON integer                                  -> v.i */
    BF_ATTR_FLOAT,    /* JSON number                                   -> v.f */
    BF_ATTR_BOOL,     /* true/false                                    -> v.b */
    BF_ATTR_ENUM,     /* one of desc.values                            -> v.s, v.i = index */
    BF_ATTR_STRING,   /* any string                                    -> v.s */
    BF_ATTR_INT_LIST, /* [1,2,2,1]; also "1,2,2,1" and "{1,2,2,1}"     -> v.list, v.n */
    BF_ATTR_SHAPE,    /* like INT_LIST, each >= -1 (-1 = unknown dim)  -> v.list, v.n */
    BF_ATTR_DTYPE,    /* "float32", ...                                -> v.dtype */
    BF_ATTR_TENSOR,   /* nested or flat list of numbers                -> v.numbers, v.n */
    BF_ATTR_FILE,     /* path of a .npy file, relative to the page     -> v.s, v.tensor */
    BF_ATTR_PATH,     /* a data file of any format, relative to the page: resolved and
                         confined as FILE is, but not read (the block reads it in init)
                                                                       -> v.s, v.path */
} bf_attr_kind;

enum {
    BF_ATTR_OPTIONAL = 1u << 0, /* may be absent and has no default (v.set == false) */
    BF_ATTR_KEEPS_STATE = 1u << 1, /* changing it keeps a stateful block's state (a Variable's
                                      `trainable`); any other attribute re-initialises it */
};

/*
 * INT_LIST: the element count a non-empty value must have, kept in the flags' upper bits so
 * the positional attribute tables keep their six fields. Only the catalogue reads it (editors
 * size their list widgets from it); the block's own validation stays the one that refuses.
 */
#define BF_ATTR_LENGTH(n)     ((unsigned)(n) << 8)
#define BF_ATTR_LENGTH_OF(fl) ((int)((fl) >> 8))

typedef struct bf_attr_desc {
    const char *name;
    bf_attr_kind kind;
    const char *def;           /* default as JSON text; NULL: required unless OPTIONAL */
    const char *const *values; /* ENUM: the allowed values, NULL-terminated */
    unsigned flags;            /* BF_ATTR_* */
    const char *doc;
} bf_attr_desc;

/* A parsed attribute value. Memory belongs to the page (or session) holding it. */
typedef struct bf_attr_value {
    bool set;          /* given in the page, or defaulted */
    bool defaulted;    /* set from desc.def */
    int64_t i;         /* INT; ENUM index */
    double f;          /* FLOAT */
    bool b;            /* BOOL */
    char *s;           /* ENUM, STRING, FILE: the text */
    int n;             /* INT_LIST, SHAPE, TENSOR: element count */
    int64_t *list;     /* INT_LIST, SHAPE */
    double *numbers;   /* TENSOR, flattened row-major */
    int nest_rank;     /* TENSOR: rank of the nested JSON list (1 for a flat list) */
    int64_t nest_dims[BF_MAX_RANK];
    bf_dtype dtype;    /* DTYPE */
    bf_tensor *tensor; /* FILE: the loaded .npy (host) */
    char *path;        /* PATH: the name resolved against the page's folder (confined) */
} bf_attr_value;

/* ---- nodes: one block instance as blocks see it --------------------------------------- */

struct bf_block_desc;

typedef struct bf_node {
    const char *id;                    /* the block id from the page */
    const struct bf_block_desc *desc;
    const bf_attr_value *attrs;        /* desc->n_attrs values, in desc->attrs order */
    const bf_tensor *feed;             /* FEEDABLE blocks: the fed tensor, or NULL */
    void *state;                       /* owned by the block: made by init, freed by fini */
    bf_budget *budget;                 /* the session's memory account */
    uint64_t max_elements;             /* the context's per-tensor element limit */
    bool promote_f64;                  /* a float64 re-run of the page (whole-page gradient
                                          check): blocks that choose a float dtype from an
                                          attribute choose float64 instead (bf_node_float) */
    int rank, ranks;                   /* this process's place in the job (0 of 1 in one
                                          process): a block marked shard "batch" yields its
                                          rank's part of each batch (bf_shard_rows) */
} bf_node;

/*
 * Rows [*first, *first + *count) of a batch of `rows` rows that rank `rank` of `ranks` takes
 * (numpy.array_split's rule: the first rows % ranks ranks take one row more), so the parts are
 * disjoint, in rank order, and together the whole batch whatever the number of ranks.
 */
static inline void bf_shard_rows(int64_t rows, int rank, int ranks, int64_t *first,
                                 int64_t *count) {
    int64_t k = ranks > 0 ? ranks : 1, r = rank, q = rows / k, m = rows % k;
    *first = r * q + (r < m ? r : m);
    *count = q + (r < m);
}

/* The dtype a block makes for attribute dtype `dt`: float64 for a float dtype when the node
 * is in a float64 re-run, else `dt`. */
static inline bf_dtype bf_node_float(const bf_node *node, bf_dtype dt) {
    bool is_float = dt == BF_DTYPE_F16 || dt == BF_DTYPE_BF16 || dt == BF_DTYPE_F32;
    return node->promote_f64 && is_float ? BF_DTYPE_F64 : dt;
}

/*
 * What is known about one port before running: dtype, rank and dims (-1 where unknown) and,
 * when the producing block knows it before running (Const, a fed Placeholder, Identity of
 * those), its host value. Blocks such as Conv2DBackpropFilter use that value (filter_sizes)
 * to infer their output shape at check time, as TensorFlow's constant folding does.
 */
typedef struct bf_port_info {
    bf_dtype dtype;            /* BF_DTYPE_INVALID when unknown */
    int rank;                  /* -1 when unknown */
    int64_t dims[BF_MAX_RANK]; /* -1 where unknown */
    const bf_tensor *value;    /* host value known before running, or NULL */
} bf_port_info;

/* ---- teaching: where the numbers of one output element come from (optional) ---------- */

/*
 * What a block's `explain` reports besides the terms: which inputs hold the operands A and B
 * of every term, and the window geometry (pads before/after per spatial axis, rows then
 * cols, in the tensors' own H and W whatever the data_format).
 */
typedef struct bf_explain_geom {
    int a_input, b_input;      /* input port indices of operand A and operand B */
    const char *padding;       /* "SAME", "VALID", "EXPLICIT"; NULL when the block has none */
    int64_t pad_before[2];     /* top, left */
    int64_t pad_after[2];      /* bottom, right */
    int odd_after[2];          /* 1: SAME's odd pixel went after on this axis */
    int64_t n_padded;          /* window taps of this element that read padding (skipped) */
} bf_explain_geom;

/* One term a[a_flat] * b[b_flat] of the sum (flat row-major offsets into the operands). */
typedef void (*bf_explain_term_cb)(int64_t a_flat, int64_t b_flat, void *user);

/*
 * One window tap that reads padding: the term a[a_index] * b[b_flat] that would have been,
 * had operand A's element not fallen outside the data. (h, w) is its position on operand A's
 * spatial grid counted from the unpadded data, so -1 is the row (column) before the data and
 * H (W) the one after; a_index is A's whole index in its own layout with h and w in place
 * (the other entries, batch and channel, are in range). Only the operand A of a sliding window
 * can read padding, so B's element is always a real one.
 */
typedef struct bf_explain_pad_tap {
    int64_t h, w;                  /* on A's padded grid: -pad_before <= h < H + pad_after */
    int64_t a_index[BF_MAX_RANK];  /* A's rank entries, spatial ones possibly outside */
    int64_t b_flat;                /* flat row-major offset into operand B */
} bf_explain_pad_tap;

/* Called once per padded tap (tap is borrowed for the call). */
typedef void (*bf_explain_pad_cb)(const bf_explain_pad_tap *tap, void *user);

/*
 * A gradient block's relation to its forward block, as tf.gradients builds it: this block is
 * d(sum(forward(...) * dy)) / d(wrt), its input `shape_port` holds wrt's shape and `dy_port`
 * the forward output's gradient; every other input has the name of the forward input it
 * takes. The forward block and this one share one attribute table.
 */
typedef struct bf_grad_desc {
    const char *forward;    /* "Conv2D" */
    const char *wrt;        /* the forward input differentiated: "filter" */
    const char *shape_port; /* "filter_sizes" */
    const char *dy_port;    /* "out_backprop" */
} bf_grad_desc;

/* ---- state: Variables and datasets (runtime/state.c) --------------------------------- */

/*
 * A stateful block keeps its state in node->state, made by init (a Variable's initial value,
 * a dataset's cursor) and freed by fini. Its kernel reads the state as of the start of the
 * step: the runtime changes the state only between steps, when a step commits:
 * - a Variable's next value is the output of the update block whose BF_PORT_REF input is
 *   wired to it (Assign, ApplyGradientDescent, ...), committed with `assign`;
 * - a block with `advance` (a dataset) that ran in the step advances once.
 * A failed or cancelled step commits nothing. `save` and `load` carry the state in and out of
 * checkpoints as one tensor (a Variable's value, a dataset's cursor); resetting is fini+init.
 */
typedef struct bf_state_desc {
    bool variable; /* a Variable: gradients and optimizers may differentiate and update it */
    /* Take `value` (host, of the block's output 0 dtype and shape) as the next state. */
    bf_status (*assign)(bf_node *node, const bf_tensor *value, bf_error *err);
    /* After a step that ran the block (datasets). */
    void (*advance)(bf_node *node);
    /* The state as a new host tensor (checkpoints; the caller frees it). */
    bf_status (*save)(const bf_node *node, bf_tensor **out, bf_error *err);
    /* Restore a state saved by `save` (checked: dtype, shape, range). */
    bf_status (*load)(bf_node *node, const bf_tensor *t, bf_error *err);
} bf_state_desc;

/* ---- whole-page gradients (runtime/grad.c) -------------------------------------------- */

/*
 * A differentiable block builds its own gradient as blocks, as TensorFlow's registered
 * gradient functions do: `gradient` is called once per forward block on the path from the
 * loss back to the Variables, in reverse topological order, with the gradient arriving at
 * each of its outputs, and declares the gradient of each input it can differentiate by adding
 * blocks through the functions below. A ref is "block" or "block:port", as a page writes it;
 * every string a function below returns belongs to the builder and lives until the build
 * ends. On failure they return NULL and record the error, which the build then reports (a
 * gradient function may simply return BF_OK after a NULL: the build fails with that error).
 */
typedef struct bf_grad_ctx bf_grad_ctx;

/* The forward block (its node: attributes, id). */
const bf_node *bf_grad_node(const bf_grad_ctx *g);
/* Input k's source ref and what the check inferred for it. */
const char *bf_grad_input(const bf_grad_ctx *g, int k);
const bf_port_info *bf_grad_input_info(const bf_grad_ctx *g, int k);
/* The ref of the forward block's output p ("fwd" or "fwd:port") and its info. */
const char *bf_grad_output(const bf_grad_ctx *g, int p);
const bf_port_info *bf_grad_output_info(const bf_grad_ctx *g, int p);
/* The gradient arriving at output p, or NULL when none does (that output does not lead to
 * the loss: treat it as zeros). Its dtype and shape are output p's. */
const char *bf_grad_dy(const bf_grad_ctx *g, int p);
/* Whether input k needs a gradient (it lies on a path from a differentiated Variable). */
bool bf_grad_wants(const bf_grad_ctx *g, int k);
/* Declare `ref` the gradient of input k (of input k's dtype and shape). */
void bf_grad_set(bf_grad_ctx *g, int k, const char *ref);

/*
 * Add a block of `type` with id "<forward id>_<name>" (made unique), attributes `attrs_json`
 * (a JSON object's text, NULL for none, or BF_GRAD_SAME_ATTRS: the attributes the forward
 * block sets that `type` also has), then its inputs as (port name, ref) pairs ending with
 * NULL. Returns the new block's id (its first output's ref).
 */
#define BF_GRAD_SAME_ATTRS "\x01same"
const char *bf_grad_add(bf_grad_ctx *g, const char *name, const char *type,
                        const char *attrs_json, ...);
/* A Const int32 block of shape [n] holding v (the shapes and axes gradients need). */
const char *bf_grad_const_i32(bf_grad_ctx *g, const char *name, int n, const int64_t *v);
/* A Const rank-0 block of dtype dt holding v. */
const char *bf_grad_const_scalar(bf_grad_ctx *g, const char *name, bf_dtype dt, double v);
/*
 * The gradient `dy` of a broadcasting op's output (dtype and shape `dy_info`) reduced to the
 * shape of input k, as tf.gradients does with BroadcastGradientArgs: Sum over the broadcast
 * axes, then Reshape to input k's shape; `dy` itself when no axis was broadcast.
 */
const char *bf_grad_unbroadcast(bf_grad_ctx *g, const char *name, const char *dy,
                                const bf_port_info *dy_info, int k);

/* ---- the descriptor ------------------------------------------------------------------- */

enum {
    BF_BLOCK_FEEDABLE = 1u << 0, /* takes bf_session_feed() (Placeholder) */
};

typedef struct bf_block_desc {
    const char *type;       /* "Conv2DBackpropFilter" */
    const char *category;   /* "nn", "generic", "check" */
    const char *synopsis;   /* one line: the formula */
    const char *doc;        /* a paragraph for the catalogue */
    unsigned flags;         /* BF_BLOCK_* */

    const bf_port_desc *inputs;
    int n_inputs;
    const bf_port_desc *outputs;
    int n_outputs;
    const bf_attr_desc *attrs;
    int n_attrs;

    /*
     * Optional. Derive per-node state from the attributes (e.g. Const builds its tensor),
     * after loading and after each attribute change. On error, fills err (naming the attr)
     * and leaves node->state NULL. fini frees node->state (called with NULL state too).
     */
    bf_status (*init)(bf_node *node, bf_error *err);
    void (*fini)(bf_node *node);

    /*
     * Required. Check the attributes and the input infos and fill the output infos. Called at
     * check time with partial knowledge (unknown dims are -1: check what can be checked, and
     * leave unknown what cannot be inferred), and again right before the kernel runs with
     * every input known (rank >= 0, all dims >= 0, `value` set for BF_PORT_HOST inputs). The
     * outputs are then allocated exactly as inferred. On error: fill err with the status, code
     * and message, and bf_err_at() the port or attribute.
     */
    bf_status (*infer)(const bf_node *node, const bf_port_info *in, bf_port_info *out,
                       bf_error *err);

    /*
     * Optional. Scratch bytes the kernel needs for these (fully known) shapes on the CPU,
     * when run with `ex` (its thread count; ex->workspace is not set yet). The session keeps
     * the buffer across runs and hands it to run_cpu in ex->workspace.
     */
    size_t (*workspace_cpu)(const bf_node *node, const bf_port_info *in,
                            const bf_port_info *out, const bf_exec *ex);
    /* Required. The CPU kernel: inputs and outputs are host tensors of the inferred shapes. */
    bf_status (*run_cpu)(const bf_node *node, const bf_tensor *const *in, bf_tensor *const *out,
                         const bf_exec *ex, bf_error *err);

    /*
     * Optional GPU kernel (NULL: the block always runs on the CPU). Inputs and outputs are
     * device tensors except BF_PORT_HOST inputs. gpu_unsupported returns NULL when run_cuda
     * handles these shapes/attrs, or a short reason ("float64 depthwise") to fall back to the
     * CPU, which the run report shows.
     */
    const char *(*gpu_unsupported)(const bf_node *node, const bf_port_info *in);
    size_t (*workspace_cuda)(const bf_node *node, const bf_port_info *in,
                             const bf_port_info *out, const bf_exec *ex);
    bf_status (*run_cuda)(const bf_node *node, const bf_tensor *const *in,
                          bf_tensor *const *out, const bf_exec *ex, bf_error *err);

    /*
     * Optional (teaching views). Enumerate the terms of the sum behind element `out_flat`
     * (flat offset into output `out_port`) for these fully known inputs (`value` set for
     * BF_PORT_HOST ports): cb (may be NULL: only geom is wanted) is called once per term, in
     * a fixed order; taps falling in padding are not terms: they are counted in
     * geom->n_padded and pad_cb (may be NULL) is called once for each, in the same order.
     * Both get `user`. Uses the same geometry as the kernels, so the two cannot disagree.
     * Errors: those of `infer`, BF_EINVAL (index).
     */
    bf_status (*explain)(const bf_node *node, const bf_port_info *in, int out_port,
                         int64_t out_flat, bf_explain_term_cb cb, bf_explain_pad_cb pad_cb,
                         void *user, bf_explain_geom *geom, bf_error *err);
    /* Optional: set on gradient blocks (gradient checks, building gradients). */
    const bf_grad_desc *grad;

    /* Optional: builds the gradient of a differentiable block as blocks (see above). */
    bf_status (*gradient)(bf_grad_ctx *g, bf_error *err);
    /* Optional: a stateful block (Variable, dataset). */
    const bf_state_desc *state;

    /*
     * Optional: a collective block (AllReduce). Its run_cpu writes this rank's contribution in
     * output 0 (a float tensor); in a job of several ranks the runtime then sums output 0 over
     * the ranks, in one buffer with every other collective block of the same round (fuse.c),
     * and calls `finish` on the sum (AllReduce's mean divides it by `ranks`). In one process
     * output 0 stays as run_cpu wrote it and finish is not called.
     */
    void (*collective_finish)(const bf_node *node, bf_tensor *out, int ranks);

    /*
     * Optional constant data of this type, read by its functions as node->desc->impl. Block
     * types that share one implementation (the six convolutions, the two random fills) point
     * at the same functions and differ by this data alone.
     */
    const void *impl;
} bf_block_desc;

/* ---- registry (blocks/registry.c) ----------------------------------------------------- */

/* The descriptor of `type`, or NULL. The table is constant and sorted by type. */
const bf_block_desc *bf_registry_find(const char *type);
int bf_registry_count(void);
const bf_block_desc *bf_registry_at(int i);

/* ---- "did you mean" (runtime/suggest.c) ---------------------------------------------- */

/* The registered type, or the attribute of `desc`, nearest to a misspelt name (compared
 * without case), or NULL when none is close enough to be a typo. Static strings. */
const char *bf_suggest_type(const char *type);
const char *bf_suggest_attr(const bf_block_desc *desc, const char *attr);
/* " (did you mean \"NAME\"?)" in buf, or "" when name is NULL: the tail of a message. */
const char *bf_suggest_text(const char *name, char *buf, size_t size);

/* ---- helpers for block code (runtime/attr.c) ------------------------------------------ */

/* True when every dim of `p` is known (rank >= 0 and all dims >= 0). */
bool bf_port_known(const bf_port_info *p);
/* Set `p` to (dt, rank, dims) with no value. dims may be NULL for all-unknown. */
void bf_port_set(bf_port_info *p, bf_dtype dt, int rank, const int64_t *dims);
/* Element count of a known port; -1 when unknown. */
int64_t bf_port_numel(const bf_port_info *p);

/* ---- nodes outside a page (tests, tools; runtime/attr.c) --------------------------- */

/*
 * A standalone node of type `desc` with attributes from `attrs_json` (a JSON object, or the
 * enuSpace attribute text as a JSON string; NULL or "" for none); defaults applied and
 * desc->init called. For tests and tools that drive a block without a page.
 * Errors: BF_EPARSE, BF_EATTR (err names the attribute), BF_ENOMEM.
 */
bf_status bf_node_make(const bf_block_desc *desc, const char *attrs_json, bf_node **out,
                       bf_error *err);
void bf_node_destroy(bf_node *node);

#endif /* BF_BLOCK_H */
