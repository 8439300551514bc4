/*
 * blockflow.h - the whole public API of libblockflow.
 *
 * blockflow runs *pages*: JSON files of connected blocks whose semantics are TensorFlow's raw
 * ops (Conv2D and its gradients, the depthwise family, and a few generic blocks). A program
 * embeds it in five steps:
 *
 *     bf_context *ctx;  bf_context_new(NULL, &ctx, &err);          limits, threads, devices
 *     bf_page *page;    bf_page_load_file(ctx, "p.json", &page, diags, &err);
 *     bf_session *s;    bf_session_new(ctx, page, &s, &err);       the session owns `page`
 *     bf_session_run(s, &opts, diags, &err);                       validate, infer, execute
 *     const bf_tensor *t = bf_session_output(s, "dw", NULL);       borrowed result
 *
 * Conventions (the same for every function below):
 * - Every fallible function returns a bf_status (BF_OK == 0, errors negative) and sets its
 *   out-parameters to NULL on failure.
 * - The last argument `bf_error *err` is caller-owned and may be NULL. On failure it is filled
 *   with the status, the block / port / attribute concerned, a JSON pointer into the page and
 *   one sentence; no allocation is needed to fill it, so it works when memory is exhausted.
 * - A `bf_diags *` collects *all* problems of a page at once (validation), plus warnings. It
 *   may be NULL when the caller only wants the first error.
 * - Every function checks its handles and out-parameters: a NULL context, page, session,
 *   tensor, diags list or out-pointer gives BF_EINVAL ("bad_argument"), never a crash; getters
 *   given NULL return NULL, 0, -1 (a rank) or NaN (an element), _init and _free do nothing.
 * - Whoever calls a _new or _load function calls the matching _free; every _free accepts NULL.
 *   Getters return borrowed pointers whose lifetime is stated on each.
 * - Nothing here prints. The CLI and the server present errors with bf_error_format().
 * - Thread safety: distinct objects may be used from distinct threads. One session is used by
 *   one thread at a time, except bf_session_cancel(), which any thread may call at any time.
 */
#ifndef BLOCKFLOW_H
#define BLOCKFLOW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define BF_API __declspec(dllexport)
#else
#define BF_API __attribute__((visibility("default")))
#endif

#define BF_VERSION_MAJOR 0
#define BF_VERSION_MINOR 1
#define BF_VERSION_PATCH 0
#define BF_VERSION_STRING "0.1.0"

/* Largest tensor rank blockflow handles (rank 0 is a scalar). */
#define BF_MAX_RANK 8

/* ---------------------------------------------------------------------------------------------
 * Status codes. One list expands into the enum, bf_status_name() and bf_strerror(), so they
 * cannot drift apart (libuv's UV_ERRNO_MAP).
 */
#define BF_STATUS_MAP(XX)                                                                       \
    XX(ENOMEM, -1, "out of memory")                                                             \
    XX(EPARSE, -2, "page is not valid JSON")                                                    \
    XX(ESCHEMA, -3, "page does not follow the page format")                                     \
    XX(EATTR, -4, "invalid attribute")                                                          \
    XX(ESHAPE, -5, "invalid or mismatched shape")                                               \
    XX(EDTYPE, -6, "invalid or mismatched dtype")                                               \
    XX(ELIMIT, -7, "a configured limit was exceeded")                                           \
    XX(EDEVICE, -8, "device error")                                                             \
    XX(EUNSUPPORTED, -9, "not supported")                                                       \
    XX(EIO, -10, "input/output error")                                                          \
    XX(ECANCELED, -11, "run was cancelled")                                                     \
    XX(ETIMEDOUT, -12, "run exceeded its time limit")                                           \
    XX(EINVAL, -13, "invalid argument")                                                         \
    XX(ENOTFOUND, -14, "no such block, port or output")                                         \
    XX(EINTERNAL, -15, "internal error")

typedef enum bf_status {
    BF_OK = 0,
#define BF_STATUS_ENUM_(name, value, text) BF_##name = (value),
    BF_STATUS_MAP(BF_STATUS_ENUM_)
#undef BF_STATUS_ENUM_
} bf_status;

/* "EATTR" for BF_EATTR, "OK" for BF_OK, "UNKNOWN" otherwise. Static string. */
BF_API const char *bf_status_name(bf_status status);
/* A short description of `status` ("invalid attribute"). Static string. */
BF_API const char *bf_strerror(bf_status status);

/* ---------------------------------------------------------------------------------------------
 * Stable error codes: every bf_error.code the library, the server, the CLI and the Python
 * module use, in one list (a test collects every code used in the tree and checks it is
 * here). bf_error_code_meaning() and bf_error_codes() expand it for programs; the editor has
 * it as web/src/api/codes.js (checked equal to this list by the same test).
 */
#define BF_ERROR_CODE_MAP(XX)                                                                   \
    XX(bad_argument, "an argument of a library call is invalid")                                  \
    XX(bad_attr, "an attribute's value is invalid")                                               \
    XX(bad_block, "a block entry of the page is malformed")                                       \
    XX(bad_checkpoint, "a checkpoint file is malformed")                                          \
    XX(bad_config, "a bf_config field is out of range")                                           \
    XX(bad_cursor, "a dataset cursor is invalid")                                                 \
    XX(bad_dataset, "a dataset file or its attributes are invalid")                               \
    XX(bad_device, "an unknown or unusable device was asked for")                                 \
    XX(bad_dtype, "a dtype is not allowed here")                                                  \
    XX(bad_edit, "an edit of a page is malformed")                                                \
    XX(bad_feed, "a feed (a tensor given to a Placeholder) is invalid")                           \
    XX(bad_fetch, "a fetch names no block or port")                                               \
    XX(bad_format, "the page format field is not blockflow.page")                                 \
    XX(bad_gradient, "a gradient cannot be formed here")                                          \
    XX(bad_host, "the Host header does not name the server")                                      \
    XX(bad_id, "a block id is invalid")                                                           \
    XX(bad_idx, "an IDX (MNIST) file is malformed")                                               \
    XX(bad_index, "an element index is out of range")                                             \
    XX(bad_json, "the text is not valid JSON")                                                    \
    XX(bad_label, "a label is invalid")                                                           \
    XX(bad_link, "an input link is malformed")                                                    \
    XX(bad_name, "a page name is invalid")                                                        \
    XX(bad_npy, "a .npy file is malformed")                                                       \
    XX(bad_npz, "a .npz file is malformed")                                                       \
    XX(bad_optimizer, "an optimizer block is misconfigured")                                      \
    XX(bad_origin, "the request comes from another origin")                                       \
    XX(bad_output, "a page output names no block or port")                                        \
    XX(bad_page, "the page is not a JSON object of the page format")                              \
    XX(bad_request, "the request is malformed")                                                   \
    XX(bad_shape, "a shape is invalid")                                                           \
    XX(bad_slice, "a tensor slice is malformed")                                                  \
    XX(bad_state, "a block's state is invalid")                                                   \
    XX(bad_update, "a variable update is invalid")                                                \
    XX(bad_version, "the page's format version is not supported")                                 \
    XX(batch_not_divisible, "a sharded batch does not divide evenly among the ranks")             \
    XX(busy, "the page or the server is busy; try again")                                         \
    XX(cancelled, "the run or job was cancelled")                                                 \
    XX(cublas, "cuBLAS failed")                                                                   \
    XX(cuda, "the CUDA runtime failed")                                                           \
    XX(cudnn, "cuDNN failed")                                                                     \
    XX(cycle, "the page's links form a cycle")                                                    \
    XX(device_copy, "a copy between devices is not possible")                                     \
    XX(diverged, "a Variable differs between the ranks of a job")                                 \
    XX(division_by_zero, "an integer division by zero")                                           \
    XX(double_update, "a variable is updated twice in one run")                                   \
    XX(dtype_mismatch, "dtypes that must agree do not")                                           \
    XX(duplicate_id, "two blocks share an id")                                                    \
    XX(duplicate_port, "an input port is given twice")                                            \
    XX(edits_too_large, "an edit batch is too large")                                             \
    XX(exists, "a page of that name exists")                                                      \
    XX(file_outside_page, "a file attribute reaches outside the page's folder")                   \
    XX(forbidden, "the operation is not allowed")                                                 \
    XX(gone, "the result was replaced or dropped")                                                \
    XX(gpu_unsupported, "this block or dtype has no GPU kernel")                                  \
    XX(import_failed, "an enuSpace page could not be imported")                                   \
    XX(internal, "an internal error of blockflow")                                                \
    XX(io_error, "a file could not be read or written")                                           \
    XX(legacy_attr_form, "an attribute uses an older accepted form (warning)")                    \
    XX(limit, "a server limit was reached (the message names its flag)")                          \
    XX(loss_unknown, "the loss block is not known")                                               \
    XX(memory_limit, "the tensor memory limit was reached")                                       \
    XX(method_not_allowed, "the HTTP method is not allowed here")                                 \
    XX(misaligned, "a buffer is not aligned as the tensor needs")                                 \
    XX(missing_attr, "a required attribute is missing")                                           \
    XX(missing_feed, "a Placeholder was not fed")                                                 \
    XX(missing_input, "a required input is not linked")                                           \
    XX(mpi_error, "an MPI call failed")                                                           \
    XX(no_dependency, "the output does not depend on that block")                                 \
    XX(no_device_ctx, "a device kernel ran without its device context")                           \
    XX(no_exec, "a kernel ran without its execution context")                                     \
    XX(no_fetch, "nothing to fetch")                                                              \
    XX(no_gpu, "no GPU is available")                                                             \
    XX(no_gradient, "the block has no gradient")                                                  \
    XX(no_mpi, "blockflow was built without Open MPI")                                            \
    XX(no_output, "the page has no such output")                                                  \
    XX(no_result, "an output has no result to read")                                              \
    XX(no_state, "the block keeps no state")                                                      \
    XX(no_update, "nothing updates the variable")                                                 \
    XX(not_feedable, "the block cannot be fed")                                                   \
    XX(not_found, "no such page, block, port, run or endpoint")                                   \
    XX(nul_in_string, "a JSON string holds a NUL")                                                \
    XX(out_of_memory, "out of memory")                                                            \
    XX(page_too_large, "the page file is larger than the limit")                                  \
    XX(rank_failed, "another rank of the job failed, so this one stopped too")                    \
    XX(ref_not_variable, "a reference input is not a Variable")                                   \
    XX(round_mismatch, "the ranks of a job reduce different amounts in one all-reduce round")     \
    XX(scheduler, "the scheduler could not run a block")                                          \
    XX(shape_mismatch, "shapes that must agree do not")                                           \
    XX(shape_unknown, "a shape is not known before the run")                                      \
    XX(skipped, "an output was not computed: its branch has a problem (a partial run)")           \
    XX(stale_revision, "the page changed since that revision was read")                           \
    XX(state_reset, "a block's state was reset")                                                  \
    XX(stopping, "the server is shutting down")                                                   \
    XX(thread_error, "a thread could not be started or synchronised")                             \
    XX(timeout, "the run exceeded its time limit")                                                \
    XX(too_deep, "JSON nested deeper than the limit")                                             \
    XX(too_large, "a size exceeds a limit")                                                       \
    XX(too_many_blocks, "the page has more blocks than the limit")                                \
    XX(unauthorized, "the access token is missing or wrong")                                      \
    XX(unknown_attr, "the block type has no such attribute")                                      \
    XX(unknown_block, "no block of that id")                                                      \
    XX(unknown_block_type, "no block type of that name")                                          \
    XX(unknown_client, "the client id is not a connected WebSocket's")                            \
    XX(unknown_key, "the page has a key the format does not define")                              \
    XX(unknown_port, "the block has no such port")                                                \
    XX(unknown_state, "the state entry is not known")                                             \
    XX(unsupported, "not supported")                                                              \
    XX(unsupported_npy, "a .npy feature that is not supported")                                   \
    XX(unsupported_npz, "a .npz feature that is not supported")                                   \
    XX(workspace, "a kernel's planned workspace is missing or too small")                         \
    XX(wrong_rank_count, "the page was built for another number of ranks than the job has")

/* The meaning of stable error code `code` (one phrase), or NULL when it is not one. */
BF_API const char *bf_error_code_meaning(const char *code);
/* The stable error codes, in the list's order: *names gets the static array; returns its
 * length. */
BF_API size_t bf_error_codes(const char *const **names);

/* ---------------------------------------------------------------------------------------------
 * Errors and diagnostics.
 */
typedef struct bf_error {
    bf_status status;     /* BF_OK for a warning */
    char code[32];        /* stable machine code: "missing_input", "bad_attr", "cycle", ... */
    char page[256];       /* page file name (or "" for pages loaded from a string) */
    char block_id[64];    /* "" when the error is not about one block */
    char port[32];        /* input/output port name, or "" */
    char attr[32];        /* attribute name, or "" */
    char pointer[256];    /* RFC 6901 JSON Pointer into the page, e.g. "/blocks/3/attrs/strides" */
    int line, column;     /* 1-based, for JSON syntax errors; 0 when unknown */
    char message[256];    /* one sentence, no trailing newline */
} bf_error;

/*
 * Format `e` as the one line the CLI and the server show, e.g.
 *   page.json: block "conv3": attribute "strides": strides must have 4 elements, got 3
 * Writes at most `size` bytes including the NUL; returns the length it wanted (snprintf).
 */
BF_API int bf_error_format(const bf_error *e, char *buf, size_t size);

/*
 * `e` as one JSON object, the form of a problem in bf_session_check_json and in the server's
 * answers: {"severity": "error"|"warning", "code", "status", "message", "page"?, "block"?,
 * "port"?, "attr"?, "pointer", "line"?, "column"?} (members marked ? only when set; "code"
 * falls back to the status name). Free with bf_string_free(). Errors: BF_EINVAL, BF_ENOMEM.
 */
BF_API bf_status bf_error_json(const bf_error *e, char **out, bf_error *err);

/*
 * The check a JSON text from outside passes before it is parsed (the page loader and the
 * server use it): nesting no deeper than `max_depth` (0: 64), and no NUL in it, neither a raw
 * 0 byte nor "\u0000" in a string (C strings would silently cut the text there). BF_OK, or
 * BF_ELIMIT code "too_deep" / BF_EPARSE code "nul_in_string" with the line and column.
 */
BF_API bf_status bf_json_check(const char *text, size_t len, int max_depth, bf_error *err);

/* Reset `e` to "no error". Accepts NULL. */
BF_API void bf_error_clear(bf_error *e);

/* A growable list of bf_error records: every validation problem and warning of a page. */
typedef struct bf_diags bf_diags;

/* A new empty list, or NULL when out of memory. Free with bf_diags_free(). */
BF_API bf_diags *bf_diags_new(void);
BF_API void bf_diags_free(bf_diags *d);
/* Drop every record. */
BF_API void bf_diags_clear(bf_diags *d);
/* Number of records (errors and warnings). */
BF_API size_t bf_diags_count(const bf_diags *d);
/* Number of records whose status is not BF_OK. */
BF_API size_t bf_diags_errors(const bf_diags *d);
/* Record i (0 <= i < count), borrowed until the list is cleared or freed; NULL out of range. */
BF_API const bf_error *bf_diags_at(const bf_diags *d, size_t i);

/* ---------------------------------------------------------------------------------------------
 * Allocation. Every allocation of the library (cJSON's included) goes through these hooks.
 * bf_replace_allocator() must be called before any other blockflow function and is not
 * thread-safe; it exists for embedding programs and for fault-injection tests.
 */
typedef void *(*bf_malloc_fn)(size_t size, void *user);
typedef void *(*bf_realloc_fn)(void *ptr, size_t size, void *user);
typedef void (*bf_free_fn)(void *ptr, void *user);
BF_API void bf_replace_allocator(bf_malloc_fn m, bf_realloc_fn r, bf_free_fn f, void *user);

/* The context (configuration, limits, thread pool, devices) is described further below. */
typedef struct bf_context bf_context;

/* ---------------------------------------------------------------------------------------------
 * Dtypes and tensors.
 */
typedef enum bf_dtype {
    BF_DTYPE_INVALID = 0,
    BF_DTYPE_F16,
    BF_DTYPE_BF16,
    BF_DTYPE_F32,
    BF_DTYPE_F64,
    BF_DTYPE_I32,
    BF_DTYPE_I64,
    BF_DTYPE_COUNT
} bf_dtype;

/* "float32" for BF_DTYPE_F32 and so on; "invalid" otherwise. Static string. */
BF_API const char *bf_dtype_name(bf_dtype dt);
/* Parse a dtype name ("float32", "half", "bfloat16", ...); BF_DTYPE_INVALID if unknown. */
BF_API bf_dtype bf_dtype_from_name(const char *name);
/* Bytes per element, 0 for BF_DTYPE_INVALID. */
BF_API size_t bf_dtype_size(bf_dtype dt);

/* A dense, row-major (C order) tensor in host memory. Opaque. */
typedef struct bf_tensor bf_tensor;

/*
 * Allocate a zero-filled host tensor of `rank` dims (0..BF_MAX_RANK). Sizes are
 * overflow-checked and bounded by the context's max_tensor_bytes (ctx may be NULL: then
 * the default limits apply). Errors: BF_EINVAL, BF_ELIMIT, BF_ENOMEM.
 */
BF_API bf_status bf_tensor_new(const bf_context *ctx, bf_dtype dt, int rank,
                               const int64_t *dims, bf_tensor **out, bf_error *err);
/* bf_tensor_new without the zero-fill, for a caller that writes every element (the data is
 * whatever the memory held). Same checks and errors. */
BF_API bf_status bf_tensor_new_uninit(const bf_context *ctx, bf_dtype dt, int rank,
                                      const int64_t *dims, bf_tensor **out, bf_error *err);

/* Frees memory lent with bf_tensor_wrap: called once with that `data` and `user`. */
typedef void (*bf_release_fn)(void *data, void *user);

/*
 * A tensor over the caller's memory, without a copy (as TF_NewTensor and ONNX Runtime's
 * CreateTensorWithDataAsOrtValue). Rules:
 * - `data` holds the tensor row-major (C order), `nbytes` == numel * bf_dtype_size(dt) bytes
 *   (checked: a mismatch is BF_EINVAL), aligned to at least the element size (checked);
 *   64-byte alignment is best for the kernels. NULL is allowed when nbytes is 0.
 * - Lifetime: the memory must stay valid, and must not be changed while a session may read
 *   it, until `release` (may be NULL: then the caller decides when the memory is no longer
 *   used, i.e. after freeing the tensor) is called. It is called exactly once, by the
 *   bf_tensor_free of this tensor, on the thread that calls it: the caller's own, or a
 *   session's that took the tensor (bf_session_feed_tensor: at the next feed of that block,
 *   when the block is removed, or in bf_session_free).
 * - The library never writes into a tensor that is fed; bf_tensor_data() gives `data` back.
 * On failure `release` is not called and the memory stays the caller's.
 * Errors: BF_EINVAL (NULL out, dims or data; misaligned data; wrong nbytes), BF_ELIMIT,
 * BF_ENOMEM.
 */
BF_API bf_status bf_tensor_wrap(const bf_context *ctx, bf_dtype dt, int rank,
                                const int64_t *dims, void *data, size_t nbytes,
                                bf_release_fn release, void *user, bf_tensor **out,
                                bf_error *err);
/* Free a tensor made by bf_tensor_new / _new_uninit / _wrap / _load_npy / _copy or handed over
 * by bf_session_take_output (a wrapped one: its release is called). Accepts NULL. */
BF_API void bf_tensor_free(bf_tensor *t);
/* What a tensor's values are, in one pass (Welford's mean and variance, stable): the CLI's
 * summary and the server's ?view=summary. min/max/mean/std are over the finite elements (0
 * when there is none); nan and inf count the others. */
typedef struct bf_tensor_stats {
    int64_t count;   /* elements */
    int64_t finite;
    int64_t nan;
    int64_t inf;     /* + and - infinity */
    double min, max, mean, std; /* population standard deviation */
} bf_tensor_stats;
/* The statistics of host tensor `t` (values read as float64) into *out (all 0 for a NULL
 * `t`; nothing for a NULL `out`). */
BF_API void bf_tensor_stats_of(const bf_tensor *t, bf_tensor_stats *out);

/* A deep copy of `t` in host memory. */
BF_API bf_status bf_tensor_copy(const bf_tensor *t, bf_tensor **out, bf_error *err);
BF_API bf_dtype bf_tensor_dtype(const bf_tensor *t);
BF_API int bf_tensor_rank(const bf_tensor *t);
/* Pointer to `rank` dims, borrowed for the tensor's lifetime. */
BF_API const int64_t *bf_tensor_dims(const bf_tensor *t);
BF_API int64_t bf_tensor_numel(const bf_tensor *t);
BF_API size_t bf_tensor_nbytes(const bf_tensor *t);
/* Host data, row-major. Borrowed for the tensor's lifetime. */
BF_API void *bf_tensor_data(bf_tensor *t);
BF_API const void *bf_tensor_cdata(const bf_tensor *t);
/* Element i converted to double (any dtype). No bounds check beyond i < numel. */
BF_API double bf_tensor_get_f64(const bf_tensor *t, int64_t i);

/*
 * Read a .npy file (format 1.0, 2.0 or 3.0; little-endian; C order; dtypes <f2 <f4 <f8 <i4 <i8,
 * and |V2 / <V2 read as raw bfloat16 bits). The header is parsed strictly and the claimed size
 * is checked against the limits and the file size before anything is allocated.
 * Errors: BF_EIO (cannot read), BF_EPARSE (malformed header), BF_EUNSUPPORTED (dtype, order),
 * BF_ELIMIT, BF_ENOMEM.
 */
BF_API bf_status bf_tensor_load_npy(const bf_context *ctx, const char *path,
                                    bf_tensor **out, bf_error *err);
/*
 * bf_tensor_load_npy from a whole .npy file held in memory (`len` bytes at `data`; `name` names
 * it in messages, e.g. "feed x"): the same strict parse, the same limits, the claimed size
 * checked against `len` before anything is allocated. For programs that receive .npy bytes
 * (an upload, a member of an archive) without writing them to a file.
 */
BF_API bf_status bf_tensor_load_npy_mem(const bf_context *ctx, const void *data, size_t len,
                                        const char *name, bf_tensor **out, bf_error *err);
/*
 * Write `t` as .npy atomically: a temporary file in the same folder, fsync, then rename, so a
 * failure leaves any older file untouched and never a partial one. bfloat16 is written as
 * float32 (exact widening: numpy has no bfloat16). Errors: BF_EINVAL (NULL argument or a tensor not
 * in host memory), BF_EIO (the message carries the system's reason), BF_ENOMEM.
 */
BF_API bf_status bf_tensor_save_npy(const bf_tensor *t, const char *path, bf_error *err);

/*
 * Read array `key` of a .npz archive (numpy.savez: stored members; savez_compressed's are
 * refused with a message saying so), with the checks of bf_tensor_load_npy. Errors: those of
 * bf_tensor_load_npy, BF_ENOTFOUND (no such array).
 */
BF_API bf_status bf_tensor_load_npz(const bf_context *ctx, const char *path, const char *key,
                                    bf_tensor **out, bf_error *err);

/*
 * Write the n tensors ts[i] as arrays keys[i] of one .npz archive (numpy.savez's form: stored,
 * not compressed; numpy.load reads it), atomically as bf_tensor_save_npy. bfloat16 is written
 * as float32 (exact widening). Keys are up to 200 bytes; each array below 4 GiB.
 * Errors: BF_EINVAL (NULL argument, a tensor not in host memory), BF_ELIMIT, BF_EIO, BF_ENOMEM.
 */
BF_API bf_status bf_tensor_save_npz(const char *path, const char *const *keys,
                                    const bf_tensor *const *ts, int n, bf_error *err);

/* ---------------------------------------------------------------------------------------------
 * Context: configuration, limits, the kernel thread pool and the devices. One per program is
 * typical; sessions borrow it and it must outlive them.
 */

typedef struct bf_group bf_group; /* a job of ranks that are threads of one process */

typedef struct bf_config {
    uint64_t max_session_bytes; /* tensor memory one session may hold; 0 = 1/2 of RAM */
    uint64_t max_tensor_elements; /* elements of one tensor; 0 = 2^40 */
    uint64_t max_page_bytes;    /* size of a page file; 0 = 64 MiB */
    int max_blocks;             /* blocks in one page; 0 = 100000 */
    int max_json_depth;         /* JSON nesting; 0 = 64 */
    int threads;                /* kernel threads; 0 = number of CPU cores */
    int disable_gpu;            /* 1: never use a GPU even when present */
    int confine_files;          /* 1: "file" attributes may only name files inside the page's
                                   folder (no absolute path, no "..", no link leading out);
                                   for servers running other people's pages */
    int cudnn_autotune;         /* 1: benchmark cuDNN's algorithms per shape and keep the
                                   fastest (the CLI maps BF_CUDNN_AUTOTUNE=1 onto it) */
    int cudnn_nondeterministic; /* 1: also admit cuDNN algorithms that accumulate with atomics,
                                   whose results vary in the last bits (BF_CUDNN_DETERMINISTIC=0) */
    int cudnn_workspace_mb;     /* cap on cuDNN's workspace in MiB; 0 = 1024
                                   (BF_CUDNN_WORKSPACE_MB) */
    uint64_t max_cache_bytes;   /* results a session keeps for incremental re-runs beyond those
                                   it must keep; 0 = max_session_bytes / 2 (see below) */
    int no_cache;               /* 1: keep no such result (max_cache_bytes becomes 0); for
                                   programs that run a page once, as `blockflow run` */
    int distributed;            /* the job (see "More than one process" below): 0 = join the
                                   MPI job when started by mpirun, else one process; 1 = MPI
                                   required (an error without it); -1 = one process always */
    int deterministic_reduce;   /* 1: AllReduce gathers the ranks' values on rank 0, sums
                                   them in rank order and broadcasts the sum: the same bits
                                   whatever the network and MPI's algorithm (BF_DETERMINISTIC_
                                   REDUCE=1 in the CLI's environment, --deterministic-reduce) */
    bf_group *group;            /* non-NULL: this context is rank group_rank of a job whose
                                   ranks are threads of this process (bf_group_new below);
                                   MPI is not used then */
    int group_rank;
} bf_config;

/*
 * Memory of a run, and the result cache. A run frees an intermediate result as soon as the
 * last block of the run that reads it has completed, unless the result is fetched by the run
 * or is one of the page's outputs (those stay until the next run or edit, as
 * bf_session_output promises). A freed result goes to the session's cache first: the cache
 * keeps the most recently used results, up to max_cache_bytes, so that a re-run after an
 * edit recomputes only what the edit affects; past the limit the least recently used result
 * is freed. A block whose result was freed is not lost: a later run that needs it runs it
 * again (and what it reads, as far back as needed). A run never fails because of the cache:
 * when a block cannot get memory under max_session_bytes, the cache is emptied and the block
 * tried again. Every byte a session holds (results, cache, constants, kernel workspaces)
 * counts against max_session_bytes, and bf_session_peak_bytes reports the most it held.
 */

/* Fill `cfg` with the defaults (all zeros mean "default"). */
BF_API void bf_config_init(bf_config *cfg);
/* A new context; cfg may be NULL for the defaults. Errors: BF_ENOMEM, BF_EINVAL. */
BF_API bf_status bf_context_new(const bf_config *cfg, bf_context **out, bf_error *err);
/* Free the context. Every session made from it must already be freed. Accepts NULL. */
BF_API void bf_context_free(bf_context *ctx);
/* The effective configuration (defaults resolved). Borrowed for the context's lifetime. */
BF_API const bf_config *bf_context_config(const bf_context *ctx);
/* Whether a GPU can be used: 1 when built with CUDA, a driver and a device are present. */
BF_API int bf_context_has_gpu(bf_context *ctx);
/* A one-line description of the devices ("cpu: 2 threads, avx512; gpu: none (no driver)"). */
BF_API const char *bf_context_devices(bf_context *ctx);

/*
 * More than one process (runtime/collective.h): a program started by `mpirun -np K` is rank r
 * of a job of K processes, each with its context (made in the same order on every rank:
 * making a context is collective there). Sessions of such a context are data-parallel: a
 * Placeholder or Dataset marked shard "batch" yields this rank's part of each batch, AllReduce
 * blocks sum or average across the ranks (all those of a step in one fused call), Variables
 * start as rank 0's (broadcast when the session is made, reset or restored) and are compared
 * when a checkpoint is saved, a step commits only when it succeeded on every rank, and an
 * error or cancel on one rank stops the step on all of them (the others' error names it).
 * Every rank must make the same calls (sessions, steps, runs, checkpoints) in the same order.
 * Outside mpirun the job is one process: rank 0 of 1. Under mpirun, a blockflow built without
 * Open MPI refuses to make a context (BF_EUNSUPPORTED "no_mpi") rather than run K unaware
 * copies, unless bf_config.distributed is -1.
 */
/* Whether this process was started by an MPI launcher (mpirun, srun --mpi=pmix): 1 or 0. */
BF_API int bf_launched_by_mpi(void);
/* This process's rank in the job (0 in one process) and the number of ranks (1). */
BF_API int bf_context_rank(const bf_context *ctx);
BF_API int bf_context_size(const bf_context *ctx);
/* A one-line description of the job ("one process", "Open MPI v4.1.4: rank 0 of 2"). */
BF_API const char *bf_context_job(const bf_context *ctx);
/* All-reductions of data made so far (one per fused round and dtype, one per step for the
 * metrics), their bytes, and the seconds spent in them, waiting for the slowest rank included
 * (each may be NULL). The small agreements that start each round and step are not counted. */
BF_API void bf_context_job_stats(const bf_context *ctx, int64_t *calls, int64_t *bytes,
                                 double *seconds);
/* End every process of the job now with exit status `code` (MPI_Abort): for a failure that the
 * other ranks cannot learn from a step (a page that loads on one rank only). In one process it
 * does nothing and returns; in a group of threads it breaks the group (the other ranks' calls
 * fail with "rank_failed" naming this rank) and returns. */
BF_API void bf_context_abort(bf_context *ctx, int code);

/*
 * A job whose K ranks are threads of this process (`blockflow train PAGE --ranks K`): the same
 * data-parallel sessions as under mpirun -np K, on one machine and without MPI, to show the
 * batch sum as a sum across ranks, and to get a K-rank job's results in one process. Make the
 * group, then in each of K threads a context with cfg.group = g and cfg.group_rank = r (each
 * rank one context, used from its own thread), and make the same calls on every rank as under
 * MPI. Sums across ranks are made in rank order element by element, so a group's results are
 * the bits of an MPI job's with bf_config.deterministic_reduce (same page, feeds and threads
 * per rank). A rank whose context is freed, or aborted, while the others still call breaks
 * the group: their calls fail with "rank_failed" rather than wait. A group serves one job.
 * Errors: BF_EINVAL (ranks outside 1..4096, out NULL), BF_ENOMEM.
 */
BF_API bf_status bf_group_new(int ranks, bf_group **out, bf_error *err);
/* The number of ranks (0 for NULL). */
BF_API int bf_group_size(const bf_group *g);
/* Free the group, after every context made with it. Accepts NULL. */
BF_API void bf_group_free(bf_group *g);

/* ---------------------------------------------------------------------------------------------
 * Block catalogue (the registry is constant data compiled into the library).
 */
/* Number of block types, and the type name of block type i in sorted order (static string). */
BF_API int bf_block_type_count(void);
BF_API const char *bf_block_type_name(int i);
/*
 * The catalogue as JSON text (graph_schemas/block_catalog.schema.json), for all types when
 * `type` is NULL, else for that one. The caller frees the string with bf_string_free().
 * Errors: BF_ENOTFOUND, BF_ENOMEM.
 */
BF_API bf_status bf_block_catalog_json(const char *type, char **out, bf_error *err);
/* The catalogue as text for people (same arguments as bf_block_catalog_json). */
BF_API bf_status bf_block_catalog_text(const char *type, char **out, bf_error *err);
/* Free a string returned by the library. Accepts NULL. */
BF_API void bf_string_free(char *s);

/* ---------------------------------------------------------------------------------------------
 * Pages.
 */
typedef struct bf_page bf_page;

/*
 * Load a page from a file. Structural problems (unknown keys, unknown block types, duplicate
 * ids, bad links, malformed attributes) are all appended to `diags`; the first is also put in
 * `err`. A page with errors is not returned. Relative `file` attributes resolve against the
 * page's folder. Errors: BF_EIO, BF_EPARSE (with line/column), BF_ESCHEMA, BF_EATTR,
 * BF_ELIMIT, BF_ENOMEM.
 */
BF_API bf_status bf_page_load_file(bf_context *ctx, const char *path, bf_page **out,
                                   bf_diags *diags, bf_error *err);
/* The same from a string of `len` bytes; `name` is used in messages, `dir` resolves files. */
BF_API bf_status bf_page_load_string(bf_context *ctx, const char *json, size_t len,
                                     const char *name, const char *dir, bf_page **out,
                                     bf_diags *diags, bf_error *err);

/* bf_page_parse flag: keep a page whose only problems are its wiring (inputs not connected,
 * links or outputs naming nothing, cycles), as an editor must. Those problems are then
 * reported by bf_session_check, together with every other one; anything else (JSON syntax,
 * the page format, unknown types, attributes, files) is still an error. */
#define BF_LOAD_INCOMPLETE 1u
/* bf_page_parse flag: do not read the .npy files that `file` attributes name (their names are
 * kept). Such a page can be written back (bf_page_to_json) but not run: a session refuses it. */
#define BF_LOAD_SKIP_FILES 2u

/* bf_page_load_string with flags (BF_LOAD_* or 0). */
BF_API bf_status bf_page_parse(bf_context *ctx, const char *json, size_t len, const char *name,
                               const char *dir, unsigned flags, bf_page **out, bf_diags *diags,
                               bf_error *err);

/*
 * The page as its canonical JSON text: keys in a fixed order, attributes in typed form (the
 * enuSpace forms come back typed), only the attributes the page gives, "ui" and "x-" keys as
 * written, blocks in page order, UTF-8, 2-space indentation, a final newline. Loading the
 * text gives the identical page. Free with bf_string_free(). Errors: BF_ENOMEM.
 */
BF_API bf_status bf_page_to_json(const bf_page *page, char **out, bf_error *err);
/*
 * A page's JSON text laid out as bf_page_to_json lays it out (keys of the page and of each
 * block in the canonical order, 2-space indentation, scalar-only containers on one line, a
 * final newline) without interpreting the blocks: unknown types, attributes and values stay
 * as written (a typed, defaults-free canonical form needs a page that loads: bf_page_to_json).
 * For formatting a page that has problems, as `blockflow fmt` does. Free with
 * bf_string_free(). Errors: BF_EINVAL (NULL), BF_EPARSE (not JSON, with line and column),
 * BF_ESCHEMA (not a JSON object), BF_ENOMEM.
 */
BF_API bf_status bf_page_format_json(const char *json, size_t len, char **out, bf_error *err);
BF_API void bf_page_free(bf_page *page);
/* The page's name, description and file name; borrowed for the page's lifetime. */
BF_API const char *bf_page_name(const bf_page *page);
BF_API const char *bf_page_description(const bf_page *page);
BF_API const char *bf_page_file(const bf_page *page);
/* Number of blocks, block i's id and type (borrowed). */
BF_API int bf_page_block_count(const bf_page *page);
BF_API const char *bf_page_block_id(const bf_page *page, int i);
BF_API const char *bf_page_block_type(const bf_page *page, int i);
/* The page's declared outputs ("block" or "block:port"), borrowed. */
BF_API int bf_page_output_count(const bf_page *page);
BF_API const char *bf_page_output(const bf_page *page, int i);
/* Index of block `id`, or -1. */
BF_API int bf_page_find_block(const bf_page *page, const char *id);
/* Block i's input ports: count, the name of port k and its source ("block" or "block:port",
 * NULL when not connected). Borrowed until the page changes. */
BF_API int bf_page_block_input_count(const bf_page *page, int i);
BF_API const char *bf_page_block_input_name(const bf_page *page, int i, int k);
BF_API const char *bf_page_block_input_source(const bf_page *page, int i, int k);

/* ---------------------------------------------------------------------------------------------
 * Sessions.
 */
typedef struct bf_session bf_session;

typedef enum bf_device_kind {
    BF_DEVICE_AUTO = 0, /* the block's own choice: GPU when available and supported, else CPU */
    BF_DEVICE_CPU,
    BF_DEVICE_GPU
} bf_device_kind;

typedef enum bf_event_kind {
    BF_EVENT_BLOCK_START = 1, /* a block's kernel is about to run */
    BF_EVENT_BLOCK_DONE,      /* it finished (status BF_OK) or failed */
    BF_EVENT_BLOCK_REUSED     /* its cached result was reused */
} bf_event_kind;

/* What a run reports about one block (bf_session_block_stats and events). */
typedef struct bf_block_stats {
    const char *id;         /* borrowed: the block id */
    const char *type;       /* borrowed: the block type */
    char device[16];        /* "cpu", "gpu:0", or "" when it did not run */
    char note[96];          /* e.g. why it fell back to the CPU, or the cuDNN algorithm */
    double ms;              /* kernel wall time of the last execution */
    int ran;                /* 1 when the last run executed it */
    int reused;             /* 1 when the last run reused its cached result */
    int n_outputs;
    int rank[4];            /* rank and dims of the first 4 outputs (-1 = unknown) */
    int64_t dims[4][BF_MAX_RANK];
    bf_dtype dtype[4];
    bf_status status;
} bf_block_stats;

/* Called on the thread that runs bf_session_run, between kernels (never concurrently). */
typedef void (*bf_event_cb)(bf_event_kind kind, const bf_block_stats *stats, void *user);

typedef struct bf_run_options {
    const char *const *fetches; /* "block" or "block:port"; NULL = the page's outputs */
    int n_fetches;
    bf_device_kind device;      /* overrides every block's "device" when not AUTO */
    double timeout_s;           /* 0 = no limit; else BF_ETIMEDOUT after that long */
    bf_event_cb on_event;       /* may be NULL */
    void *user;                 /* passed to on_event */
} bf_run_options;

/* Fill `o` with the defaults (page outputs, auto device, no timeout, no callback). */
BF_API void bf_run_options_init(bf_run_options *o);

/*
 * A session that owns `page` (on success and on failure alike: the page is freed if the
 * session cannot be made). Errors: BF_ENOMEM.
 */
BF_API bf_status bf_session_new(bf_context *ctx, bf_page *page, bf_session **out,
                                bf_error *err);
/* Free the session, its page and all its tensors. Must not run concurrently. Accepts NULL. */
BF_API void bf_session_free(bf_session *s);
/* The session's page (borrowed). */
BF_API const bf_page *bf_session_page(const bf_session *s);

/*
 * Validate the whole graph and infer every port's dtype and shape without running kernels.
 * Every problem goes to `diags`; the first also to `err`. Shapes that depend on values only
 * known at run time are reported as unknown (-1). Errors: BF_ESCHEMA, BF_EATTR, BF_ESHAPE,
 * BF_EDTYPE, BF_ELIMIT.
 */
BF_API bf_status bf_session_check(bf_session *s, bf_diags *diags, bf_error *err);

/*
 * Feed a Placeholder block. The session copies `t` (the caller keeps ownership). Blocks
 * downstream of the placeholder are recomputed on the next run; nothing else is.
 * Errors: BF_ENOTFOUND (no such block), BF_EINVAL (not a Placeholder), BF_EDTYPE, BF_ESHAPE.
 */
BF_API bf_status bf_session_feed(bf_session *s, const char *block_id, const bf_tensor *t,
                                 bf_error *err);

/*
 * Feed a Placeholder with `t` itself, without a copy: the session takes `t`, on success and on
 * failure alike (then it is freed at once), and frees it (calling a wrapped tensor's release)
 * when it no longer needs it: at the next feed of that block, when the block is removed, or
 * in bf_session_free. The caller must not use or free `t` afterwards. The Placeholder's
 * output is then t's memory itself, read (never written) whenever the block or what depends
 * on it is computed, so a wrapped buffer must stay unchanged while fed. The bytes count
 * against max_session_bytes as a copied feed does. Errors: those of bf_session_feed,
 * BF_EINVAL (NULL, or a tensor not in host memory), BF_ELIMIT.
 */
BF_API bf_status bf_session_feed_tensor(bf_session *s, const char *block_id, bf_tensor *t,
                                        bf_error *err);

/* ---------------------------------------------------------------------------------------------
 * Editing the session's page in place (an editor's live page). Each call validates what it
 * touches and fails with an error naming the block, port or attribute, and then changes
 * nothing. Each invalidates exactly what it affects: attributes, devices, wires and feeds
 * recompute that block and what is downstream on the next run; layout, names, renames and
 * outputs invalidate nothing; a removed block's results are freed. An edited page may be
 * incomplete (inputs not connected, cycles): bf_session_check lists those problems with all
 * the others, and a run refuses only when a block it needs has one. Borrowed pointers from
 * bf_session_page() and bf_session_output() are invalidated by any edit.
 */

/* Add a block at the end of the page: `attrs_json` a JSON object (or NULL), `device` "auto",
 * "cpu", "gpu", "gpu:N" (NULL: auto), `ui_json` its layout (or NULL). Its inputs start
 * unconnected. Errors: BF_ESCHEMA (bad or duplicate id, unknown type, bad device), BF_EATTR,
 * BF_EPARSE, BF_EIO (a file attribute), BF_ELIMIT, BF_ENOMEM. */
BF_API bf_status bf_session_add_block(bf_session *s, const char *id, const char *type,
                                      const char *attrs_json, const char *device,
                                      const char *ui_json, bf_error *err);
/* Remove a block; the inputs it fed become unconnected and it leaves the page's outputs. */
BF_API bf_status bf_session_remove_block(bf_session *s, const char *id, bf_error *err);
/* Rename a block; every link and output naming it follows. Invalidates nothing. */
BF_API bf_status bf_session_rename_block(bf_session *s, const char *id, const char *new_id,
                                         bf_error *err);
/* Connect input `port` of a block to `source` ("block" or "block:port"), replacing any
 * earlier link. A link that closes a cycle is allowed and reported by the check. */
BF_API bf_status bf_session_connect(bf_session *s, const char *block_id, const char *port,
                                    const char *source, bf_error *err);
/* Leave input `port` of a block unconnected (a no-op when it is). */
BF_API bf_status bf_session_disconnect(bf_session *s, const char *block_id, const char *port,
                                       bf_error *err);
/*
 * Change one attribute of a block, given as JSON text (e.g. "[1,2,2,1]" or "\"SAME\""), or
 * NULL to go back to its default. The value is checked as the block checks it (TensorFlow's
 * rules: "strides": [1, 2, 2] fails here, not at the next run) when the block's inputs are
 * known; what it does to other blocks (a shape the next one refuses) is left to the check.
 * Setting the value it has changes nothing, except for a
 * `file` attribute, which is read again (the file may have changed). Errors:
 * BF_ENOTFOUND, BF_EATTR, BF_EPARSE, BF_EIO.
 */
BF_API bf_status bf_session_set_attr(bf_session *s, const char *block_id, const char *attr,
                                     const char *json_value, bf_error *err);
/* Where a block runs: "auto", "cpu", "gpu" or "gpu:N". */
BF_API bf_status bf_session_set_device(bf_session *s, const char *block_id, const char *device,
                                       bf_error *err);
/* A block's layout as JSON text (block_id NULL: the page's); NULL or "" removes it. */
BF_API bf_status bf_session_set_ui(bf_session *s, const char *block_id, const char *ui_json,
                                   bf_error *err);
/* The page's outputs ("block" or "block:port", each naming an output of the page). */
BF_API bf_status bf_session_set_outputs(bf_session *s, const char *const *refs, int n,
                                        bf_error *err);
BF_API bf_status bf_session_set_name(bf_session *s, const char *name, bf_error *err);
BF_API bf_status bf_session_set_description(bf_session *s, const char *text, bf_error *err);
/*
 * A list of edits as a JSON array, applied all or nothing (the form servers and bindings
 * use). Each edit is an object with "op" and its members:
 *   {"op": "add_block", "id", "type", "attrs"?, "device"?, "ui"?}
 *   {"op": "remove_block", "id"}            {"op": "rename_block", "id", "new_id"}
 *   {"op": "connect", "block", "port", "source"}   {"op": "disconnect", "block", "port"}
 *   {"op": "set_attr", "block", "attr", "value"}   (value null: back to the default)
 *   {"op": "set_device", "block", "device"}  {"op": "set_ui", "block"?, "ui"}
 *   {"op": "set_outputs", "outputs": [...]}  {"op": "set_name", "name"}
 *   {"op": "set_description", "description"}
 * The failing edit goes to `diags` and `err` with its block, port and attribute, the message
 * prefixed "edit N (op): " and the pointer "/N" into the list. A batch of several edits is
 * tried on a copy of the page first, so a failure leaves the session untouched.
 */
BF_API bf_status bf_session_apply_edits(bf_session *s, const char *edits_json, size_t len,
                                        bf_diags *diags, bf_error *err);

/* ---------------------------------------------------------------------------------------------
 * Inference without running: what a port holds, as known at check time.
 */
typedef struct bf_port_shape {
    bf_dtype dtype;              /* BF_DTYPE_INVALID when unknown */
    int rank;                    /* -1 when unknown */
    int64_t dims[BF_MAX_RANK];   /* -1 where known only at run time */
} bf_port_shape;

/*
 * The dtype and shape of input (`output` 0) or output (`output` 1) port `port` of a block
 * (port NULL: the first output), as the last check inferred them; checks the page first when
 * an edit made the last check stale. Unknown when the port's source has a problem or is not
 * connected. Errors: BF_ENOTFOUND (no such block or port).
 */
BF_API bf_status bf_session_port_shape(bf_session *s, const char *block_id, const char *port,
                                       int output, bf_port_shape *out, bf_error *err);
/* "float32[1,?,?,3]" ("?" for what is known only at run time, "[...]" for an unknown rank).
 * Returns the length it wanted (snprintf). */
BF_API int bf_port_shape_format(const bf_port_shape *p, char *buf, size_t size);
/*
 * Check the page and describe it as JSON, for editors and servers:
 *   {"ok": bool,
 *    "problems": [{"severity", "code", "status", "message", "block"?, "port"?, "attr"?,
 *                  "pointer"}],
 *    "blocks": {"ID": {"type", "inputs": {"PORT": {"source", "dtype", "shape", "label"}},
 *                      "outputs": {"PORT": {"dtype", "shape", "label"}}}}}
 * where "shape" is an array with null for a dimension known only at run time, or null for an
 * unknown rank, and "label" is bf_port_shape_format's text. Free with bf_string_free().
 */
BF_API bf_status bf_session_check_json(bf_session *s, char **out, bf_error *err);

/*
 * Run the page: check it (as bf_session_check; only the problems of blocks the fetches need
 * stop the run), then execute the blocks the fetches need and that are not already up to
 * date, independent blocks concurrently. `opts` may be NULL.
 * Errors: anything bf_session_check returns, plus BF_ECANCELED, BF_ETIMEDOUT, BF_EDEVICE,
 * BF_ENOMEM, BF_ELIMIT and kernel errors, each naming the block. After a failed run the
 * session stays usable; results of blocks that completed are kept as the cache allows.
 * The call blocks the calling thread until the run ends (its blocks run on libuv's thread
 * pool meanwhile). An event-loop program, such as `blockflow serve`, calls it from a worker
 * thread, forwards the on_event records to its loop, and cancels with bf_session_cancel().
 */
BF_API bf_status bf_session_run(bf_session *s, const bf_run_options *opts, bf_diags *diags,
                                bf_error *err);
/*
 * Ask a running bf_session_run to stop: blocks not started are skipped and running kernels
 * stop at their next check. Safe from any thread and from a signal handler; a no-op when
 * nothing runs.
 */
BF_API void bf_session_cancel(bf_session *s);

/*
 * The tensor of output `port` (NULL = the first) of block `block_id` after the last run, in
 * host memory. Borrowed until the next run, feed, attribute change or free. NULL when the
 * block did not produce it, or when it is an intermediate result that stayed on a GPU (fetch
 * it to have it copied to the host).
 */
BF_API const bf_tensor *bf_session_output(bf_session *s, const char *block_id,
                                          const char *port);
/*
 * Hand the result of output `port` (NULL = the first) of block `block_id` over to the caller
 * without a copy: *out is the caller's, freed with bf_tensor_free, and stays valid through
 * later runs, edits and bf_session_free (as an output of TF_SessionRun or ONNX Runtime's Run).
 * The session gives the result up: bf_session_output returns NULL for that port from then on
 * (the block's other ports stay readable until the next run), and a later run that needs it
 * runs the block again (the blocks it reads stay cached). A result that is not the block's own
 * memory (a Placeholder's output is its feed) is copied instead. For a result made on a GPU,
 * the host copy the run made is handed over and the GPU tensor stays, so nothing is run
 * again. Errors: BF_EINVAL (NULL argument),
 * BF_ENOTFOUND (no such block or port, or no result to hand over: the block did not run, or
 * its result stayed on a GPU), BF_ENOMEM.
 */
BF_API bf_status bf_session_take_output(bf_session *s, const char *block_id, const char *port,
                                        bf_tensor **out, bf_error *err);
/*
 * The most tensor bytes the session held at once during its last run: its results, the
 * cache, the constants' tensors and kernel workspaces, the same bytes that
 * bf_config.max_session_bytes limits. Before the first run: what making the session took
 * (the constants' tensors). Read it after bf_session_run returns.
 */
BF_API uint64_t bf_session_peak_bytes(const bf_session *s);
/* Bytes of results the session keeps in its cache now (see bf_config.max_cache_bytes). */
BF_API uint64_t bf_session_cached_bytes(const bf_session *s);
/* Per-block report of the last run/check, in page order (0 <= i < block count). Borrowed. */
BF_API const bf_block_stats *bf_session_block_stats(const bf_session *s, int i);
/* Number of output ports of block i, and the name of port j (borrowed). */
BF_API int bf_session_block_output_count(const bf_session *s, int i);
BF_API const char *bf_session_block_output_name(const bf_session *s, int i, int j);

/* ---------------------------------------------------------------------------------------------
 * Teaching views (runtime/teach.c): where every number of a convolution (gradient) comes from.
 * They work on blocks whose type offers them (the six convolution blocks): others get
 * BF_EUNSUPPORTED. Each runs what it needs first, as bf_session_run with the given limits.
 * bf_session_cancel() stops them as it stops a run (BF_ECANCELED), from any thread; they block
 * the calling thread, so an event-loop program calls them from a worker, as bf_session_run.
 */

typedef struct bf_explain_options {
    const char *port;       /* output port of the block; NULL = its first */
    int64_t max_terms;      /* terms listed in the JSON (all are summed); 0 = 10000, -1 = all */
    bf_device_kind device;  /* for the run that computes the inputs and the element */
    double timeout_s;       /* for that run; 0 = no limit */
    bf_event_cb on_event;   /* that run's block events, as bf_run_options; may be NULL */
    void *user;             /* passed to on_event */
} bf_explain_options;

/* Fill `o` with the defaults. */
BF_API void bf_explain_options_init(bf_explain_options *o);

/*
 * Explain one output element of a block: run the block and its inputs (results already up to
 * date are reused), then enumerate the terms of the element's sum with the kernels' own
 * geometry. `index` has `rank` entries in the output tensor's own layout (NHWC or NCHW, HWIO,
 * depthwise [fh, fw, C, M]). *json_out (free with bf_string_free) is
 *   {"block", "type", "port", "dtype", "index": [...], "value",
 *    "padding": {"mode": "SAME"|"VALID"|"EXPLICIT", "top", "bottom", "left", "right",
 *                "odd": ["bottom"?, "right"?]},     (SAME's odd pixel, always after the data)
 *    "operands": {"a": PORT, "b": PORT},
 *    "terms": [{"a": {"tensor", "index", "value"}, "b": {"tensor", "index", "value"}}, ...],
 *    "n_terms", "n_padded",
 *    "padded_taps": [{"h", "w", "a": {"tensor", "index", "value": 0}, "b": {...}}, ...],
 *    "truncated", "padded_truncated", "sum", "abs_sum", "max_abs_diff"}
 * where "tensor" is the input port holding the operand, indices are in that tensor's own
 * layout, n_padded counts the window taps that read padding (zeros: no terms), "sum" is the
 * float64 sum of every term's product (all n_terms, even when the list is truncated to
 * max_terms), abs_sum the sum of their absolute values (the scale for a tolerance) and
 * max_abs_diff = |sum - value|.
 * padded_taps says where those taps are, in the order of the sum: (h, w) is the tap's
 * position on operand A's spatial grid counted from the unpadded data, so h = -1 is the row
 * before it and h = H the row after (-top <= h < H + bottom, likewise w), "a" the element of
 * A it would have read (its "index" holds that h and w, outside the data; its value is 0) and
 * "b" the real element of operand B it would have been multiplied with. Operand A's grid is
 * the input x for Conv2D, DepthwiseConv2dNative and both BackpropFilter blocks (B is the
 * filter, respectively out_backprop). For the two BackpropInput blocks the grid is dX's own,
 * the grid of x (A is out_backprop there, and no tap of a dX element's sum leaves the data),
 * so their padded_taps is always [] and n_padded 0. max_terms caps padded_taps as it caps
 * terms (each list holds at most max_terms entries); n_padded counts every padded tap, and
 * "truncated" / "padded_truncated" say which list was cut.
 * Errors: BF_ENOTFOUND (block or port), BF_EUNSUPPORTED (type without a teaching view),
 * BF_EINVAL (index rank or range), anything bf_session_run returns, BF_ENOMEM.
 */
BF_API bf_status bf_session_explain(bf_session *s, const char *block_id, const int64_t *index,
                                    int rank, const bf_explain_options *opts, char **json_out,
                                    bf_error *err);

typedef struct bf_gradcheck_options {
    double eps;             /* relative finite-difference step; 0 = 1e-2 (see below) */
    double tolerance;       /* pass when max relative error <= this; 0 = 1e-6 */
    int full_below;         /* check every element of tensors with at most this many; 0 = 4096 */
    int samples;            /* else a seeded sample of this many; 0 = 256 */
    uint64_t seed;          /* for the samples and the random operands; 0 = 1 */
    int compare_gpu;        /* 1: also run the block on the CPU and on the GPU, side by side */
    double timeout_s;       /* for the whole check (runs, float64 work); 0 = no limit */
    bf_event_cb on_event;   /* the block events of its runs, as bf_run_options; may be NULL */
    void *user;             /* passed to on_event */
} bf_gradcheck_options;

/* Fill `o` with the defaults. */
BF_API void bf_gradcheck_options_init(bf_gradcheck_options *o);

/*
 * Check a gradient block (or both gradients of a forward block) against central finite
 * differences, in float64. With L(x, w) = sum(forward(x, w) * dy):
 * - the forward op is the page's forward block feeding the same operands as the gradient
 *   block when there is one (so a gradient whose attributes disagree with its forward block
 *   fails), else the gradient block's own attributes;
 * - the operands are the block's inputs converted to float64; the differentiated operand,
 *   which a gradient block does not read, is seeded random (L is linear in it); for a forward
 *   block dy is seeded random;
 * - the analytical gradient is the block's own kernel recomputed in float64 on those operands
 *   (for a float16/bfloat16/float32 block the block's actual output is compared with it
 *   separately, "output_vs_f64", within the dtype's tolerance: 1e-12, 1e-5, 1e-2, 1e-1
 *   relative to the element's scale);
 * - fd_i = (L(v + h e_i) - L(v - h e_i)) / 2h with h = eps * max(1, |v_i|). L is linear in v,
 *   so the difference has no truncation error and a large step only shrinks rounding error;
 *   relative error = |fd - an| / max(|fd|, |an|, 1e-8 * max|an|);
 * - the adjoint identity sum(forward(x,w)*dy) = sum(x*dX) = sum(w*dW), every gradient of the
 *   forward op computed by its own block type, relative to the sum of |terms|.
 * *json_out (free with bf_string_free):
 *   {"block", "type", "forward": "id"|null, "eps", "tolerance", "pass",
 *    "checks": [{"wrt", "gradient_type", "n_elements", "n_checked", "sampled",
 *                "max_rel_error", "worst_index": [...], "fd", "analytic", "pass"}],
 *    "adjoint": {"forward": L, "input": sum(x*dX), "filter": sum(w*dW), "max_rel_error",
 *                "pass"},
 *    "output_vs_f64": {"dtype", "max_rel_diff", "tolerance", "pass"} (gradient blocks only),
 *    "gpu": {"available": false, "reason"} or {"available": true, "max_abs_diff",
 *            "max_rel_diff"}}
 * A failed check is a result ("pass": false), not an error. Errors: BF_ENOTFOUND,
 * BF_EUNSUPPORTED (not a gradient or forward block with gradients), anything bf_session_run
 * returns, BF_ELIMIT, BF_ENOMEM.
 */
BF_API bf_status bf_session_gradcheck(bf_session *s, const char *block_id,
                                      const bf_gradcheck_options *opts, char **json_out,
                                      bf_error *err);

/*
 * Add the gradient blocks of a forward block, as tf.gradients builds them: one block per
 * gradient type of the forward type (Conv2D: Conv2DBackpropFilter and Conv2DBackpropInput),
 * wired to the forward block's inputs, with every attribute copied, a Const int32 block per
 * shape input (filter_sizes, input_sizes; the shape must be known at check time) and
 * `dy_source` ("block" or "block:port") as out_backprop, or when NULL a new Placeholder of the
 * forward output's dtype and shape. New ids are derived from the forward id ("conv_dy",
 * "conv_filter_sizes", "conv_grad_filter", ...; "_2" and so on when taken), laid out to the
 * right of the forward block (ui x + 260, one row each). All or nothing (one edit batch).
 * *created_json (free with bf_string_free) is
 *   {"dy": id, "gradients": {"filter": id, "input": id}, "blocks": [every new id]}.
 * Errors: BF_ENOTFOUND, BF_EUNSUPPORTED (no gradient types), BF_ESHAPE (a shape not known
 * before running), those of bf_session_apply_edits, BF_ENOMEM.
 */
BF_API bf_status bf_session_add_gradients(bf_session *s, const char *forward_block_id,
                                          const char *dy_source, char **created_json,
                                          bf_error *err);


/* ---------------------------------------------------------------------------------------------
 * Training (runtime/state.c, runtime/grad.c): state between runs, steps, gradients of a whole
 * page, optimizers, checkpoints.
 *
 * A *step* is one run of the page that also runs every update block (Assign, AssignAdd,
 * AssignSub, ApplyGradientDescent, ApplyMomentum, ApplyAdam: the blocks with a ref input)
 * and then commits: each update block's new value becomes its Variable's value, each dataset
 * block that ran advances one batch, and the step count grows by one, all at once. Every read
 * in a step sees the values of the start of the step, whatever the block order (TensorFlow's
 * numbers for a step whose reads precede its updates). A failed or cancelled step commits
 * nothing. bf_session_run evaluates the page without committing anything (update blocks run
 * only when fetched, and their results are not committed).
 *
 * After a commit, what depends on a changed Variable or an advanced dataset is recomputed at
 * the next step; the rest stays cached. Edits keep the state (a learning rate, a wire, an
 * attribute of a block without state); a Variable or dataset whose own attributes change
 * (shape, dtype, initializer, ...) is re-initialised, and the edit reports so as a warning
 * (code "state_reset") in its diags.
 */

/* Called after each committed step with the step count (1 after the first step) and the
 * first element of each fetched tensor as a double (NAN for an empty one), in fetch order; in
 * a job of several ranks, the mean over the ranks of each (the same on every rank). Return
 * nonzero to stop after this step (in a job, every rank stops at the next step boundary). */
typedef int (*bf_step_cb)(int64_t step, const double *metrics, int n_metrics, void *user);

typedef struct bf_step_options {
    const char *const *fetches; /* read after each step ("block" or "block:port"); NULL = the
                                   page's outputs (a training page's loss and metrics) */
    int n_fetches;
    bf_device_kind device;      /* as bf_run_options */
    double timeout_s;           /* per step; 0 = no limit */
    bf_event_cb on_event;       /* block events of every step; may be NULL */
    bf_step_cb on_step;         /* may be NULL */
    void *user;                 /* passed to on_event and on_step */
} bf_step_options;

/* Fill `o` with the defaults. */
BF_API void bf_step_options_init(bf_step_options *o);

/*
 * Run `n` steps (n >= 1), each committed before the next starts; stops early when on_step
 * returns nonzero or bf_session_cancel() is called (a cancel lands between steps or stops the
 * step in flight, which then commits nothing). The fetched tensors of the last step stay
 * readable with bf_session_output. Errors: those of bf_session_run, naming the block, and
 * BF_ESCHEMA "double_update" when two update blocks write one Variable.
 */
BF_API bf_status bf_session_step(bf_session *s, int64_t n, const bf_step_options *opts,
                                 bf_diags *diags, bf_error *err);
/* Steps committed since the session was made, reset or restored. */
BF_API int64_t bf_session_step_count(const bf_session *s);
/* Re-initialise all state: Variables from their initializers, datasets to their first
 * batch, the step count to 0. Errors: BF_EINVAL (NULL), BF_ENOMEM, an initializer's error. */
BF_API bf_status bf_session_reset(bf_session *s, bf_error *err);

/* Number of stateful blocks (Variables, datasets) in page order, and the id of the i-th. */
BF_API int bf_session_state_count(const bf_session *s);
BF_API const char *bf_session_state_id(const bf_session *s, int i);
/*
 * The current value of Variable `block_id` (for a dataset: its cursor, int64 [epoch, batch
 * index]), as a new host tensor the caller frees. Errors: BF_ENOTFOUND, BF_EINVAL (no state).
 */
BF_API bf_status bf_session_read_state(bf_session *s, const char *block_id, bf_tensor **out,
                                       bf_error *err);
/* Set Variable `block_id` to `value` (same dtype and shape); what depends on it is recomputed.
 * Errors: BF_ENOTFOUND, BF_EINVAL, BF_EDTYPE, BF_ESHAPE. */
BF_API bf_status bf_session_write_state(bf_session *s, const char *block_id,
                                        const bf_tensor *value, bf_error *err);
/*
 * Save all state to one .npz (keys: the block ids, and ".step" for the step count, int64),
 * atomically (a temporary file, then a rename). Errors: BF_EIO, BF_ENOMEM.
 */
BF_API bf_status bf_session_save_state(bf_session *s, const char *path, bf_error *err);
/* In a job of several ranks, save and load are collective: save first compares every
 * Variable's checksum across the ranks (BF_EINTERNAL "diverged" naming the first that differs,
 * and nothing is written), then rank 0 writes the file; load reads the file on rank 0 and
 * gives its state and step count to every rank (the other ranks need not see the file). */
/*
 * Restore state saved by bf_session_save_state: every key must name a stateful block of the
 * same dtype and shape (checked for all before anything changes); blocks the file does not
 * name keep their state. Errors: BF_EIO, BF_EPARSE, BF_ENOTFOUND (a key names no stateful
 * block), BF_EDTYPE, BF_ESHAPE, BF_ENOMEM.
 */
BF_API bf_status bf_session_load_state(bf_session *s, const char *path, bf_error *err);

/*
 * Build the backward pass of a whole page as blocks, as tf.gradients does: the gradient of
 * the scalar `loss` ("block" or "block:port") with respect to the Variables `wrt` (n_wrt
 * ids; NULL = every trainable Variable the loss depends on), each forward block on the way
 * adding its own gradient blocks (ReluGrad from the Relu's output, MaxPoolGrad from its
 * input and output, broadcasting undone by Sum and Reshape, the convolutions' two gradient
 * blocks, gradients of a fan-out summed with AddN), laid out mirrored to the right of the
 * forward blocks, ids derived from the forward ids ("conv1_grad_filter").
 * `optimizer` (NULL for none) then adds the update blocks: "sgd:LR", "momentum:LR:MOMENTUM"
 * or "adam:LR" (beta1 0.9, beta2 0.999, epsilon 1e-8 as TensorFlow's defaults; or
 * "adam:LR:B1:B2:EPS"), with a learning-rate Const and the slot Variables they need.
 * The shapes the gradient blocks need (input_sizes, a Mean's count, the seed of ones) are
 * Consts of the shapes known now: a batch of another size later is refused by the first
 * gradient block with a shape error (a Dataset takes drop_remainder).
 * All or nothing (one edit batch). *created_json (free with bf_string_free):
 *   {"loss", "gradients": {VARIABLE: gradient ref}, "updates": {VARIABLE: block},
 *    "blocks": [every new id]}
 * Errors: BF_ENOTFOUND, BF_ESHAPE (a shape not known before running, or a non-scalar loss),
 * BF_EUNSUPPORTED (a block on the way without a gradient, named), BF_EINVAL (bad optimizer
 * text, a loss that depends on no Variable), those of bf_session_apply_edits, BF_ENOMEM.
 */
BF_API bf_status bf_session_build_gradients(bf_session *s, const char *loss,
                                            const char *const *wrt, int n_wrt,
                                            const char *optimizer, char **created_json,
                                            bf_error *err);

typedef struct bf_grad_options {
    const char *optimizer;  /* as bf_session_build_gradients's; NULL: no update blocks */
    int data_parallel;      /* 1: an AllReduce (op "mean") on every Variable's gradient, so
                               the update applies the mean over the ranks of their gradients:
                               the gradient of the whole batch when the loss is a mean over
                               the batch and the page's data is marked shard "batch" */
    int ranks;              /* with data_parallel: the rank count to build for (0 = this
                               job's). The shapes are one rank's part of the batch, recorded
                               in each AllReduce's `ranks`: the page then runs with that many
                               ranks only. A batch that does not divide among them is refused
                               (BF_ESHAPE "batch_not_divisible", naming the block) */
} bf_grad_options;

/* Fill `o` with the defaults (no optimizer, not data-parallel). */
BF_API void bf_grad_options_init(bf_grad_options *o);
/* bf_session_build_gradients with options; *created_json also has "all_reduce":
 * {VARIABLE: its AllReduce block, the gradient the update applies} when data_parallel
 * ("gradients" names each rank's own gradient, the AllReduce's input). */
BF_API bf_status bf_session_build_gradients_opts(bf_session *s, const char *loss,
                                                 const char *const *wrt, int n_wrt,
                                                 const bf_grad_options *opts,
                                                 char **created_json, bf_error *err);

/*
 * Check the backward pass of a training page, whether built by bf_session_build_gradients or
 * wired by hand: for each Variable updated by an update block, the gradient that block
 * applies (its `delta` / `grad` / `value` input) is compared with central finite differences
 * of `loss` with respect to sampled elements of that Variable, everything recomputed in a
 * float64 re-run of the page on the same batch (nothing is committed), relative error
 * |fd - an| / max(|fd|, |an|, 1e-4 * max|an| of that Variable). A point where the loss is
 * not differentiable (a Relu input exactly 0, as a zero bias on blank pixels gives at the
 * start) shows up as a large error: check such pages after a few steps. `opts` as
 * bf_session_gradcheck's (eps, tolerance, samples, seed, timeout), with other defaults here:
 * eps 1e-6, tolerance 1e-5, every element of Variables up to 64 elements, else 32 sampled
 * ones. *json_out:
 *   {"loss", "pass", "tolerance",
 *    "variables": [{"variable", "gradient", "n_elements", "n_checked", "max_rel_error",
 *                   "worst_index": [...], "fd", "analytic", "pass"}]}
 * bf_session_cancel(s) from another thread stops it between two of its runs (BF_ECANCELED).
 * Errors: BF_ENOTFOUND, BF_EINVAL (no update block), BF_ECANCELED, anything bf_session_run
 * returns.
 */
BF_API bf_status bf_session_check_gradients(bf_session *s, const char *loss,
                                            const bf_gradcheck_options *opts, char **json_out,
                                            bf_error *err);

#ifdef __cplusplus
}
#endif
#endif /* BLOCKFLOW_H */
