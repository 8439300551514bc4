/*
 * npy.c - reading and writing NumPy .npy files (bf_tensor_load_npy, bf_tensor_save_npy).
 *
 * The format (numpy/lib/format.py, NEP 1): the 6 bytes "\x93NUMPY", a major and a minor
 * version byte, the header length as a little-endian u16 (version 1.0) or u32 (2.0 and 3.0),
 * then the header: a Python dict literal such as
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n', and finally the raw array bytes, nothing after them.
 * We accept exactly the three keys, in any order, with Python's whitespace and an optional
 * trailing comma; 'descr' is one of <f2 <f4 <f8 <i4 <i8, or <V2 / |V2 read as the raw bits
 * of bfloat16 (numpy has no bfloat16; ml_dtypes saves it as V2). Big-endian data, structured
 * dtypes and Fortran order with more than one dimension are BF_EUNSUPPORTED.
 *
 * Files are input (STYLE R6, R7): a hostile file must not make us abort, read out of bounds or
 * allocate what it claims. So the header length is refused above NPY_MAX_HEADER before it is
 * read, the header is parsed inside its own bounds, the shape goes through bf_shape_size()
 * (overflow and max_tensor_elements) and the data size must equal the rest of the file, all
 * before the tensor is allocated. Every message names the file.
 *
 * Writing produces what numpy 1.23+ writes for the same array (version 1.0, keys sorted, 21
 * digits of growth room, data aligned to 64 bytes), except that bfloat16 is widened to <f4,
 * which is exact. The file is written to "<path>.tmp.XXXXXX" in the same folder, every write
 * checked, then fsync'd and renamed over `path`, so readers see the old file or the new one,
 * never a partial one; on any failure the temporary file is removed.
 */
#include "half.h"
#include "tensor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c reads and writes tensor bytes as they are: it needs a little-endian host"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (64 * 1024) /* numpy itself refuses headers over 10000 bytes */
#define NPY_ALIGN 64               /* numpy's ARRAY_ALIGN */
#define NPY_GROWTH_DIGITS 21       /* numpy's GROWTH_AXIS_MAX_DIGITS */

/* The descr strings we read, and the dtype each becomes. */
static const struct {
    const char *descr;
    bf_dtype dt;
} npy_descrs[] = {
    {"<f2", BF_DTYPE_F16}, {"<f4", BF_DTYPE_F32}, {"<f8", BF_DTYPE_F64}, {"<i4", BF_DTYPE_I32},
    {"<i8", BF_DTYPE_I64}, {"<V2", BF_DTYPE_BF16}, {"|V2", BF_DTYPE_BF16},
};

/* ---- header parsing ------------------------------------------------------------------------ */

/* A cursor over the header text [p, end). */
typedef struct npy_parser {
    const char *p, *end;
    const char *path;   /* for messages */
    int allow_long;     /* accept Python 2's "3L" in shapes (versions 1.0 and 2.0) */
    bf_error *err;
} npy_parser;

/* What the header says. */
typedef struct npy_header {
    char descr[16];
    int fortran_order;
    int rank;
    int64_t dims[BF_MAX_RANK];
    int have_descr, have_order, have_shape;
} npy_header;

static void skip_ws(npy_parser *ps) {
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Consume `c` (after whitespace) and return true, or return false and consume nothing. */
static bool accept(npy_parser *ps, char c) {
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return true;
    }
    return false;
}

/* A BF_EPARSE "bad_npy" error: "<path>: malformed .npy header: <what>". */
static bf_status bad_header(npy_parser *ps, const char *what) {
    return bf_err(ps->err, BF_EPARSE, "bad_npy", "%s: malformed .npy header: %s", ps->path,
                  what);
}

/*
 * Parse a quoted Python string without escapes ('...' or "...") into buf (size bytes).
 * Strings that do not fit, contain a backslash or are not closed are BF_EPARSE.
 */
static bf_status parse_string(npy_parser *ps, char *buf, size_t size) {
    skip_ws(ps);
    if (ps->p >= ps->end || (*ps->p != '\'' && *ps->p != '"'))
        return bad_header(ps, "expected a quoted string");
    char q = *ps->p++;
    size_t n = 0;
    while (ps->p < ps->end && *ps->p != q) {
        if (*ps->p == '\\' || *ps->p == '\n' || n + 1 >= size)
            return bad_header(ps, "unexpected string (too long or with escapes)");
        buf[n++] = *ps->p++;
    }
    if (ps->p >= ps->end) return bad_header(ps, "unterminated string");
    ps->p++;
    buf[n] = '\0';
    return BF_OK;
}

/* Parse True or False. */
static bf_status parse_bool(npy_parser *ps, int *out) {
    skip_ws(ps);
    size_t left = (size_t)(ps->end - ps->p);
    if (left >= 4 && !memcmp(ps->p, "True", 4)) {
        *out = 1;
        ps->p += 4;
    } else if (left >= 5 && !memcmp(ps->p, "False", 5)) {
        *out = 0;
        ps->p += 5;
    } else {
        return bad_header(ps, "'fortran_order' must be True or False");
    }
    return BF_OK;
}

/*
 * Parse a shape tuple: "()", "(5,)", "(2, 3)" or "(2, 3,)". A single element needs its comma,
 * as in Python ("(5)" is an int, not a tuple). Negative dims are BF_EPARSE, more than
 * BF_MAX_RANK dims or a dim above INT64_MAX is BF_ELIMIT.
 */
static bf_status parse_shape(npy_parser *ps, npy_header *h) {
    if (!accept(ps, '(')) return bad_header(ps, "'shape' must be a tuple");
    h->rank = 0;
    bool comma = false;
    while (!accept(ps, ')')) {
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '-')
            return bf_err(ps->err, BF_EPARSE, "bad_npy",
                          "%s: .npy shape has a negative dimension", ps->path);
        if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
            return bad_header(ps, "expected a dimension in 'shape'");
        if (h->rank == BF_MAX_RANK)
            return bf_err(ps->err, BF_ELIMIT, "too_large",
                          "%s: .npy shape has more than %d dimensions", ps->path, BF_MAX_RANK);
        int64_t v = 0;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
            if (!bf_i64_mul(v, 10, &v) || !bf_i64_add(v, *ps->p - '0', &v))
                return bf_err(ps->err, BF_ELIMIT, "too_large",
                              "%s: .npy shape has a dimension above 2^63-1", ps->path);
            ps->p++;
        }
        if (ps->allow_long && ps->p < ps->end && *ps->p == 'L') ps->p++;
        h->dims[h->rank++] = v;
        comma = accept(ps, ',');
        if (!comma) {
            if (!accept(ps, ')')) return bad_header(ps, "expected ',' or ')' in 'shape'");
            break;
        }
    }
    if (h->rank == 1 && !comma) return bad_header(ps, "a one-element shape needs a comma");
    return BF_OK;
}

/*
 * Parse the whole header dict. Exactly the keys 'descr', 'fortran_order' and 'shape', each
 * once, in any order; only whitespace may follow the closing brace.
 */
static bf_status parse_header(npy_parser *ps, npy_header *h) {
    bf_status st;
    memset(h, 0, sizeof(*h));
    if (!accept(ps, '{')) return bad_header(ps, "expected '{'");
    while (!accept(ps, '}')) {
        char key[32];
        if ((st = parse_string(ps, key, sizeof(key)))) return st;
        if (!accept(ps, ':')) return bad_header(ps, "expected ':' after a key");
        if (!strcmp(key, "descr")) {
            if (h->have_descr++) return bad_header(ps, "duplicate key 'descr'");
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == '[')
                return bf_err(ps->err, BF_EUNSUPPORTED, "unsupported_npy",
                              "%s: structured .npy dtypes are not supported", ps->path);
            if ((st = parse_string(ps, h->descr, sizeof(h->descr)))) return st;
        } else if (!strcmp(key, "fortran_order")) {
            if (h->have_order++) return bad_header(ps, "duplicate key 'fortran_order'");
            if ((st = parse_bool(ps, &h->fortran_order))) return st;
        } else if (!strcmp(key, "shape")) {
            if (h->have_shape++) return bad_header(ps, "duplicate key 'shape'");
            if ((st = parse_shape(ps, h))) return st;
        } else {
            return bf_err(ps->err, BF_EPARSE, "bad_npy",
                          "%s: malformed .npy header: unexpected key '%s'", ps->path, key);
        }
        if (!accept(ps, ',')) {
            if (!accept(ps, '}')) return bad_header(ps, "expected ',' or '}'");
            break;
        }
    }
    skip_ws(ps);
    if (ps->p != ps->end) return bad_header(ps, "unexpected text after the dict");
    if (!h->have_descr) return bad_header(ps, "missing key 'descr'");
    if (!h->have_order) return bad_header(ps, "missing key 'fortran_order'");
    if (!h->have_shape) return bad_header(ps, "missing key 'shape'");
    return BF_OK;
}

/* ---- reading --------------------------------------------------------------------------------- */

/* Re-issue `inner` (from a helper that does not know the file) with the file name in front. */
static bf_status with_path(bf_error *err, const char *path, const bf_error *inner) {
    return bf_err(err, inner->status, inner->code, "%s: %s", path, inner->message);
}

/* Where the bytes come from: an open file, or a buffer in memory (an .npz member). */
typedef struct npy_src {
    FILE *f;                  /* NULL: read mem */
    const unsigned char *mem;
    uint64_t len, pos;
} npy_src;

/* Read exactly n bytes or fail: BF_EIO on a read error, BF_EPARSE when the file ends early. */
static bf_status read_exact(npy_src *src, void *buf, size_t n, const char *path,
                            const char *what, bf_error *err) {
    if (!src->f) {
        if (n <= src->len - src->pos) {
            memcpy(buf, src->mem + src->pos, n);
            src->pos += n;
            return BF_OK;
        }
        return bf_err(err, BF_EPARSE, "bad_npy", "%s: file ends inside the .npy %s", path, what);
    }
    FILE *f = src->f;
    if (fread(buf, 1, n, f) == n) return BF_OK;
    if (ferror(f))
        return bf_err(err, BF_EIO, "io_error", "%s: cannot read the %s: %s", path, what,
                      strerror(errno));
    return bf_err(err, BF_EPARSE, "bad_npy", "%s: file ends inside the .npy %s", path, what);
}

/*
 * Everything after fopen (the caller closes the file), or the whole parse of a buffer. On
 * success *out holds the tensor.
 */
static bf_status load_from(uint64_t max_el, npy_src *src, const char *path, bf_tensor **out,
                           bf_error *err) {
    uint64_t file_size = src->len;
    if (src->f) {
        struct stat sb;
        if (fstat(fileno(src->f), &sb))
            return bf_err(err, BF_EIO, "io_error", "%s: cannot stat: %s", path,
                          strerror(errno));
        if (!S_ISREG(sb.st_mode))
            return bf_err(err, BF_EIO, "io_error", "%s: not a regular file", path);
        file_size = (uint64_t)sb.st_size;
    }

    /* Magic, version and header length. */
    unsigned char pre[12];
    bf_status st;
    if ((st = read_exact(src, pre, 8, path, "magic string", err))) return st;
    if (memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN))
        return bf_err(err, BF_EPARSE, "bad_npy", "%s: not a .npy file (bad magic string)",
                      path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return bf_err(err, BF_EUNSUPPORTED, "unsupported_npy",
                      "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)",
                      path, major, minor);
    size_t len_bytes = major == 1 ? 2 : 4;
    if ((st = read_exact(src, pre + 8, len_bytes, path, "header length", err))) return st;
    uint64_t hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    if (len_bytes == 4) hlen |= (uint64_t)pre[10] << 16 | (uint64_t)pre[11] << 24;
    uint64_t prefix = 8 + len_bytes;
    if (hlen > NPY_MAX_HEADER)
        return bf_err(err, BF_ELIMIT, "too_large",
                      "%s: .npy header claims %llu bytes, above the limit of %d", path,
                      (unsigned long long)hlen, NPY_MAX_HEADER);
    if (file_size < prefix || hlen > file_size - prefix)
        return bf_err(err, BF_EPARSE, "bad_npy",
                      "%s: .npy header claims %llu bytes but the file has only %llu after "
                      "the header length", path, (unsigned long long)hlen,
                      (unsigned long long)(file_size >= prefix ? file_size - prefix : 0));

    /* The header dict. */
    char *text = bf_malloc((size_t)hlen + 1);
    if (!text)
        return bf_err(err, BF_ENOMEM, "out_of_memory", "%s: cannot allocate the .npy header",
                      path);
    npy_header h;
    st = read_exact(src, text, (size_t)hlen, path, "header", err);
    if (!st) {
        npy_parser ps = {text, text + hlen, path, major <= 2, err};
        st = parse_header(&ps, &h);
    }
    bf_free(text);
    if (st) return st;

    bf_dtype dt = BF_DTYPE_INVALID;
    for (int i = 0; i < BF_COUNT(npy_descrs); i++)
        if (!strcmp(h.descr, npy_descrs[i].descr)) dt = npy_descrs[i].dt;
    if (dt == BF_DTYPE_INVALID)
        return bf_err(err, BF_EUNSUPPORTED, "unsupported_npy",
                      "%s: .npy dtype '%s' is not supported (<f2 <f4 <f8 <i4 <i8, and <V2 "
                      "as bfloat16)", path, h.descr);
    /* Fortran and C order are the same bytes when at most one dimension exceeds 1. */
    int big_dims = 0;
    for (int i = 0; i < h.rank; i++) big_dims += h.dims[i] > 1;
    if (h.fortran_order && big_dims > 1)
        return bf_err(err, BF_EUNSUPPORTED, "unsupported_npy",
                      "%s: .npy array is in Fortran order; save it in C order "
                      "(np.ascontiguousarray)", path);

    /* Sizes, limits and the file size, all before allocating. */
    int64_t numel;
    size_t nbytes;
    bf_error inner = {0};
    if ((st = bf_shape_size(dt, h.rank, h.dims, max_el, &numel, &nbytes, &inner)))
        return with_path(err, path, &inner);
    uint64_t data_size = file_size - prefix - hlen;
    if (data_size != nbytes) {
        char s[160];
        return bf_err(err, BF_EPARSE, "bad_npy",
                      "%s: .npy data is %llu bytes but shape %s of %s needs %zu", path,
                      (unsigned long long)data_size, bf_shape_str(h.rank, h.dims, s, sizeof(s)),
                      h.descr, nbytes);
    }

    bf_tensor *t = NULL;
    if ((st = bf_tensor_alloc(NULL, max_el, dt, h.rank, h.dims, false, &t, &inner)))
        return with_path(err, path, &inner);
    if (!(st = read_exact(src, t->data, nbytes, path, "data", err)) && src->f &&
        fgetc(src->f) != EOF)
        st = bf_err(err, BF_EPARSE, "bad_npy", "%s: .npy file grew while being read", path);
    if (st) {
        bf_tensor_free(t);
        return st;
    }
    *out = t;
    return BF_OK;
}

bf_status bf_tensor_load_npy(const bf_context *ctx, const char *path, bf_tensor **out,
                             bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!path) return bf_err(err, BF_EINVAL, "bad_argument", "path is NULL");
    return bf_npy_load(path, ctx ? bf_context_config(ctx)->max_tensor_elements
                                 : BF_DEFAULT_MAX_ELEMENTS,
                       out, err);
}

bf_status bf_tensor_load_npy_mem(const bf_context *ctx, const void *data, size_t len,
                                 const char *name, bf_tensor **out, bf_error *err) {
    return bf_npy_parse(data, len, name ? name : "(memory)",
                        ctx ? bf_context_config(ctx)->max_tensor_elements
                            : BF_DEFAULT_MAX_ELEMENTS,
                        out, err);
}

bf_status bf_npy_load(const char *path, uint64_t max_elements, bf_tensor **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!path) return bf_err(err, BF_EINVAL, "bad_argument", "path is NULL");
    /* O_NONBLOCK: a page may name a FIFO, whose open would otherwise wait for a writer
     * forever; load_from() then refuses anything but a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) close(fd);
        return bf_err(err, BF_EIO, "io_error", "%s: cannot open: %s", path, strerror(e));
    }
    npy_src src = {.f = f};
    bf_status st = load_from(max_elements, &src, path, out, err);
    fclose(f); /* read-only: nothing to lose */
    return st;
}

bf_status bf_npy_parse(const void *data, size_t len, const char *name, uint64_t max_elements,
                       bf_tensor **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!data && len) return bf_err(err, BF_EINVAL, "bad_argument", "data is NULL");
    npy_src src = {.mem = data, .len = len};
    return load_from(max_elements, &src, name ? name : "(memory)", out, err);
}

/* ---- writing --------------------------------------------------------------------------------- */

/*
 * Build the numpy 1.0 header for `t` into buf (at least NPY_MAX_HEADER bytes is plenty: eight
 * 19-digit dims make about 250). Returns the total length (prefix included), a multiple of
 * NPY_ALIGN.
 */
size_t bf_npy_header(const bf_tensor *t, char *buf, size_t size) {
    const char *descr = "<f4";
    switch (t->dtype) {
    case BF_DTYPE_F16: descr = "<f2"; break;
    case BF_DTYPE_BF16: descr = "<f4"; break; /* widened on write */
    case BF_DTYPE_F32: descr = "<f4"; break;
    case BF_DTYPE_F64: descr = "<f8"; break;
    case BF_DTYPE_I32: descr = "<i4"; break;
    case BF_DTYPE_I64: descr = "<i8"; break;
    default: BF_ASSERT(!"dtype checked by the caller");
    }
    char shape[BF_MAX_RANK * 22 + 4];
    size_t n = 0;
    n += (size_t)snprintf(shape + n, sizeof(shape) - n, "(");
    for (int i = 0; i < t->rank; i++)
        n += (size_t)snprintf(shape + n, sizeof(shape) - n, "%s%lld", i ? ", " : "",
                              (long long)t->dims[i]);
    snprintf(shape + n, sizeof(shape) - n, "%s)", t->rank == 1 ? "," : "");

    size_t h = NPY_MAGIC_LEN + 4; /* magic, version, u16 length */
    int len = snprintf(buf + h, size - h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descr, shape);
    BF_ASSERT(len > 0 && (size_t)len < size - h);
    h += (size_t)len;
    /* Room to grow the first axis in place, as numpy leaves it. */
    if (t->rank > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->dims[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++) buf[h++] = ' ';
    }
    /* Pad with spaces so that the data starts at a multiple of NPY_ALIGN, then '\n'. */
    size_t total = (h + 1 + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
    if (total == h + 1) total += NPY_ALIGN; /* numpy's padlen is 1..64, never 0 */
    BF_ASSERT(total <= size);
    memset(buf + h, ' ', total - h - 1);
    buf[total - 1] = '\n';
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    size_t hlen = total - 10;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    return total;
}

/* Write all n bytes to fd, retrying on EINTR and short writes. Returns 0 or an errno. */
int bf_write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (w == 0) return EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/*
 * The mode a new file would get from open(path, O_CREAT, 0666): mkstemp makes 0600, which
 * would silently hide saved tensors from other users. An existing file keeps its mode. The
 * umask is read from /proc (Linux 4.7+) because umask() can only be read by changing it, which
 * would race with other threads; without /proc the file stays 0600.
 */
static int wanted_mode(const char *path) {
    struct stat sb;
    if (!stat(path, &sb) && S_ISREG(sb.st_mode)) return (int)(sb.st_mode & 07777);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0600;
    char line[128];
    int mode = 0600;
    while (fgets(line, sizeof(line), f)) {
        unsigned mask;
        if (sscanf(line, "Umask: %o", &mask) == 1) {
            mode = 0666 & ~(int)mask;
            break;
        }
    }
    fclose(f);
    return mode;
}

/* Write header and data to fd. Returns 0 or an errno. */
static int write_body(int fd, const bf_tensor *t) {
    char header[512];
    size_t hlen = bf_npy_header(t, header, sizeof(header));
    int e = bf_write_all(fd, header, hlen);
    if (e || t->dtype != BF_DTYPE_BF16) return e ? e : bf_write_all(fd, t->data, t->nbytes);
    /* bfloat16 -> float32 in chunks, on the stack: exact, and no allocation. */
    float chunk[2048];
    const uint16_t *src = t->data; /* [numel] */
    for (int64_t i = 0; i < t->numel && !e; i += BF_COUNT(chunk)) {
        int64_t m = BF_MIN(t->numel - i, (int64_t)BF_COUNT(chunk));
        for (int64_t j = 0; j < m; j++) chunk[j] = bf_bf16_to_f32(src[i + j]);
        e = bf_write_all(fd, chunk, (size_t)m * sizeof(float));
    }
    return e;
}

bf_status bf_file_write_atomic(const char *path, int (*body)(int fd, void *user), void *user,
                               bf_error *err) {
    static const char suffix[] = ".tmp.XXXXXX";
    size_t plen = strlen(path), tlen;
    if (!bf_size_add(plen, sizeof(suffix), &tlen))
        return bf_err(err, BF_EINVAL, "bad_argument", "path too long");
    char *tmp = bf_malloc(tlen);
    if (!tmp)
        return bf_err(err, BF_ENOMEM, "out_of_memory", "%s: cannot allocate a file name", path);
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, suffix, sizeof(suffix));

    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        bf_free(tmp);
        return bf_err(err, BF_EIO, "io_error", "%s: cannot create a temporary file next to it: %s",
                      path, strerror(e));
    }
    const char *step = NULL; /* what failed, for the message */
    int e = 0;
    if (fchmod(fd, (mode_t)wanted_mode(path))) {
        e = errno;
        step = "set the mode of the temporary file";
    }
    if (!e && (e = body(fd, user))) step = "write the temporary file";
    if (!e && fsync(fd)) {
        e = errno;
        step = "sync the temporary file";
    }
    if (close(fd) && !e) { /* NFS reports delayed write errors here */
        e = errno;
        step = "close the temporary file";
    }
    if (!e && rename(tmp, path)) {
        e = errno;
        step = "rename the temporary file over it";
    }
    if (e) {
        unlink(tmp);
        bf_free(tmp);
        return bf_err(err, BF_EIO, "io_error", "%s: cannot %s: %s", path, step, strerror(e));
    }
    /* Make the rename itself durable. Best effort: the new file is in place either way. */
    char *slash = strrchr(tmp, '/');
    const char *dir = ".";
    if (slash) {
        slash[slash == tmp] = '\0'; /* "/x.npy" lives in "/" */
        dir = tmp;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    bf_free(tmp);
    return BF_OK;
}

static int write_npy_body(int fd, void *t) { return write_body(fd, t); }

bf_status bf_tensor_save_npy(const bf_tensor *t, const char *path, bf_error *err) {
    if (!t || !path) return bf_err(err, BF_EINVAL, "bad_argument", "tensor or path is NULL");
    if (!t || !path) return bf_err(err, BF_EINVAL, "bad_argument", "tensor or path is NULL");
    if (t->device || !bf_dtype_size(t->dtype))
        return bf_err(err, BF_EINVAL, "bad_argument", "%s: only host tensors can be saved",
                      path);
    return bf_file_write_atomic(path, write_npy_body, (void *)t, err);
}
