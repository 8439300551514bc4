/*
 * npz.c - numpy .npz archives: the ZIP files numpy.savez writes, one stored (uncompressed)
 * member KEY.npy per array. Checkpoints are written and read here (runtime/state.c), and
 * bf_tensor_load_npz reads one array for programs.
 *
 * Reading treats the archive as hostile input (STYLE R6): the end-of-directory record is
 * searched in the last 64 KiB, every offset and size is checked against the file before it
 * is used, ZIP64 records and extra fields (numpy writes them with force_zip64) are read
 * within their bounds, compressed members are refused with a message saying so, and each
 * member goes through the .npy parser (bf_npy_parse) with its limits. Writing produces a
 * plain ZIP (no ZIP64: a member of 4 GiB or more is refused) with CRC-32s, that numpy.load
 * reads, written atomically (bf_file_write_atomic).
 */
#include "half.h"
#include "tensor.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define ZIP_LOCAL 0x04034b50u
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_END 0x06054b50u
#define ZIP64_END 0x06064b50u
#define ZIP64_LOCATOR 0x07064b50u
#define NPZ_MAX_KEY 200

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void wr32(unsigned char *p, uint32_t v) { wr16(p, v & 0xffff), wr16(p + 2, v >> 16); }

/* CRC-32 (ISO-HDLC, ZIP's), one byte at a time through a table made per call (1 KiB). */
typedef struct crc32_table {
    uint32_t t[256];
} crc32_table;

static void crc32_init(crc32_table *c) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i;
        for (int k = 0; k < 8; k++) r = r & 1 ? 0xEDB88320u ^ (r >> 1) : r >> 1;
        c->t[i] = r;
    }
}

static uint32_t crc32_update(const crc32_table *c, uint32_t crc, const void *data, size_t n) {
    const unsigned char *p = data;
    crc = ~crc;
    while (n--) crc = c->t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* ---- reading ------------------------------------------------------------------------------- */

static bf_status damaged(bf_error *err, const char *path, const char *what) {
    return bf_err(err, BF_EPARSE, "bad_npz", "%s: not a readable .npz archive (%s)", path, what);
}

/* The whole file in memory (caller frees), refusing what is not a regular file. */
static bf_status read_whole(const char *path, unsigned char **out, size_t *len, bf_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return bf_err(err, BF_EIO, "io_error", "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    bf_status st = BF_OK;
    unsigned char *buf = NULL;
    if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
        st = bf_err(err, BF_EIO, "io_error", "%s: not a regular file", path);
    } else if (!(buf = bf_malloc((size_t)sb.st_size + 1))) {
        st = bf_err(err, BF_ENOMEM, "out_of_memory", "%s: cannot hold %lld bytes", path,
                    (long long)sb.st_size);
    } else if (fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size) {
        st = bf_err(err, BF_EIO, "io_error", "%s: cannot read it whole", path);
    }
    fclose(f);
    if (st) {
        bf_free(buf);
        return st;
    }
    *out = buf;
    *len = (size_t)sb.st_size;
    return BF_OK;
}

bf_status bf_npz_each(const char *path, uint64_t max_elements, bf_npz_member_cb cb, void *user,
                      bf_error *err) {
    unsigned char *z = NULL;
    size_t size = 0;
    bf_status st = read_whole(path, &z, &size, err);
    if (st) return st;
    /* the end of central directory record, within the last 64 KiB (its comment) */
    int64_t e = -1;
    for (int64_t i = (int64_t)size - 22; i >= 0 && i >= (int64_t)size - 22 - 65535; i--)
        if (rd32(z + i) == ZIP_END) {
            e = i;
            break;
        }
    if (e < 0) {
        bf_free(z);
        return damaged(err, path, "no ZIP directory");
    }
    uint64_t count = rd16(z + e + 10), cd_size = rd32(z + e + 12), cd_off = rd32(z + e + 16);
    if (e >= 20 && rd32(z + e - 20) == ZIP64_LOCATOR) {
        uint64_t zoff = rd64(z + e - 20 + 8);
        if (zoff > size || size - zoff < 56 || rd32(z + zoff) != ZIP64_END) {
            bf_free(z);
            return damaged(err, path, "damaged ZIP64 directory");
        }
        count = rd64(z + zoff + 32), cd_size = rd64(z + zoff + 40), cd_off = rd64(z + zoff + 48);
    }
    if (cd_off > size || cd_size > size - cd_off) {
        bf_free(z);
        return damaged(err, path, "directory outside the file");
    }
    const unsigned char *cd = z + cd_off;
    uint64_t p = 0;
    for (uint64_t i = 0; st == BF_OK && i < count; i++) {
        if (p + 46 > cd_size || rd32(cd + p) != ZIP_CENTRAL) {
            st = damaged(err, path, "damaged directory entry");
            break;
        }
        const unsigned char *h = cd + p;
        uint32_t method = rd16(h + 10), nlen = rd16(h + 28), xlen = rd16(h + 30),
                 clen = rd16(h + 32);
        uint64_t csize = rd32(h + 20), usize = rd32(h + 24), loff = rd32(h + 42);
        if (p + 46 + nlen + xlen + clen > cd_size) {
            st = damaged(err, path, "directory entry past the directory");
            break;
        }
        /* ZIP64 extra field: the 64-bit values of the fields set to 0xFFFFFFFF, in order */
        for (const unsigned char *x = h + 46 + nlen, *xend = x + xlen; x + 4 <= xend;) {
            uint32_t id = rd16(x), sz = rd16(x + 2);
            const unsigned char *v = x + 4, *vend = v + sz;
            if (vend > xend) break;
            if (id == 1) {
                if (usize == 0xFFFFFFFFu && v + 8 <= vend) usize = rd64(v), v += 8;
                if (csize == 0xFFFFFFFFu && v + 8 <= vend) csize = rd64(v), v += 8;
                if (loff == 0xFFFFFFFFu && v + 8 <= vend) loff = rd64(v), v += 8;
            }
            x = vend;
        }
        char key[NPZ_MAX_KEY + 1];
        const char *name = (const char *)h + 46;
        p += 46 + (uint64_t)nlen + xlen + clen;
        if (nlen <= 4 || memcmp(name + nlen - 4, ".npy", 4)) continue; /* not an array */
        if (nlen - 4 > NPZ_MAX_KEY || memchr(name, '\0', nlen)) {
            st = damaged(err, path, "an array name is too long or holds a NUL");
            break;
        }
        memcpy(key, name, nlen - 4);
        key[nlen - 4] = '\0';
        if (method != 0) {
            st = bf_err(err, BF_EUNSUPPORTED, "unsupported_npz",
                        "%s: array \"%s\" is compressed (numpy.savez_compressed); write it "
                        "with numpy.savez", path, key);
            break;
        }
        if (loff > size || size - loff < 30 || rd32(z + loff) != ZIP_LOCAL) {
            st = damaged(err, path, "damaged member header");
            break;
        }
        uint64_t off = loff + 30 + rd16(z + loff + 26) + rd16(z + loff + 28);
        if (csize != usize || off > size || csize > size - off) {
            st = damaged(err, path, "member outside the file");
            break;
        }
        char what[NPZ_MAX_KEY + 300];
        snprintf(what, sizeof(what), "%.250s:%s", path, key);
        bf_tensor *t = NULL;
        if ((st = bf_npy_parse(z + off, (size_t)csize, what, max_elements, &t, err))) break;
        st = cb(key, t, user, err); /* cb owns t from here */
    }
    bf_free(z);
    return st;
}

typedef struct find_one {
    const char *key;
    bf_tensor *t;
} find_one;

static bf_status keep_match(const char *key, bf_tensor *t, void *user, bf_error *err) {
    (void)err;
    find_one *f = user;
    if (!f->t && !strcmp(key, f->key)) f->t = t;
    else bf_tensor_free(t);
    return BF_OK;
}

bf_status bf_tensor_load_npz(const bf_context *ctx, const char *path, const char *key,
                             bf_tensor **out, bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!path || !key) return bf_err(err, BF_EINVAL, "bad_argument", "path or key is NULL");
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!path || !key) return bf_err(err, BF_EINVAL, "bad_argument", "path or key is NULL");
    find_one f = {key, NULL};
    bf_status st = bf_npz_each(path, ctx ? bf_context_config(ctx)->max_tensor_elements
                                         : BF_DEFAULT_MAX_ELEMENTS,
                               keep_match, &f, err);
    if (st) {
        bf_tensor_free(f.t);
        return st;
    }
    if (!f.t)
        return bf_err(err, BF_ENOTFOUND, "not_found", "%s: no array \"%.80s\" in the archive",
                      path, key);
    *out = f.t;
    return BF_OK;
}

/* ---- writing ------------------------------------------------------------------------------- */

typedef struct npz_out {
    const char *const *keys;
    const bf_tensor *const *ts;
    int n;
} npz_out;

/* The whole archive: each member's local header, name, .npy header and data, then the
 * central directory and its end record. */
static int npz_body(int fd, void *user) {
    const npz_out *o = user;
    crc32_table crc;
    crc32_init(&crc);
    uint64_t at = 0;
    unsigned char *central = bf_calloc((size_t)o->n, 46 + NPZ_MAX_KEY + 4);
    if (!central) return ENOMEM;
    size_t cd_len = 0;
    int e = 0;
    for (int i = 0; i < o->n && !e; i++) {
        const bf_tensor *t = o->ts[i];
        char header[512], name[NPZ_MAX_KEY + 5];
        size_t hlen = bf_npy_header(t, header, sizeof(header));
        int nlen = snprintf(name, sizeof(name), "%s.npy", o->keys[i]);
        uint64_t size = hlen + t->nbytes;
        if (nlen <= 4 || nlen >= (int)sizeof(name) || size >= 0xFFFFFFFFu ||
            at >= 0xFFFFFFFFu) {
            e = EFBIG;
            break;
        }
        uint32_t c = crc32_update(&crc, 0, header, hlen);
        c = crc32_update(&crc, c, t->data, t->nbytes);
        unsigned char lh[30] = {0};
        wr32(lh, ZIP_LOCAL), wr16(lh + 4, 20), wr16(lh + 12, 0x21); /* 1980-01-01 */
        wr32(lh + 14, c), wr32(lh + 18, (uint32_t)size), wr32(lh + 22, (uint32_t)size);
        wr16(lh + 26, (uint32_t)nlen);
        unsigned char *ch = central + cd_len;
        wr32(ch, ZIP_CENTRAL), wr16(ch + 4, 20), wr16(ch + 6, 20), wr16(ch + 14, 0x21);
        wr32(ch + 16, c), wr32(ch + 20, (uint32_t)size), wr32(ch + 24, (uint32_t)size);
        wr16(ch + 28, (uint32_t)nlen), wr32(ch + 42, (uint32_t)at);
        memcpy(ch + 46, name, (size_t)nlen);
        cd_len += 46 + (size_t)nlen;
        e = bf_write_all(fd, lh, 30);
        if (!e) e = bf_write_all(fd, name, (size_t)nlen);
        if (!e) e = bf_write_all(fd, header, hlen);
        if (!e) e = bf_write_all(fd, t->data, t->nbytes);
        at += 30 + (uint64_t)nlen + size;
    }
    if (!e && at >= 0xFFFFFFFFu) e = EFBIG;
    if (!e) e = bf_write_all(fd, central, cd_len);
    unsigned char end[22] = {0};
    wr32(end, ZIP_END), wr16(end + 8, (uint32_t)o->n), wr16(end + 10, (uint32_t)o->n);
    wr32(end + 12, (uint32_t)cd_len), wr32(end + 16, (uint32_t)at);
    if (!e) e = bf_write_all(fd, end, sizeof(end));
    bf_free(central);
    return e;
}

bf_status bf_npz_save(const char *path, const char *const *keys, const bf_tensor *const *ts,
                      int n, bf_error *err) {
    if (!path || n < 0 || n > 65535 || (n && (!keys || !ts)))
        return bf_err(err, BF_EINVAL, "bad_argument", "invalid archive arguments");
    for (int i = 0; i < n; i++) {
        if (!keys[i] || !ts[i] || ts[i]->device || ts[i]->dtype == BF_DTYPE_BF16 ||
            strlen(keys[i]) > NPZ_MAX_KEY)
            return bf_err(err, BF_EINVAL, "bad_argument", "%s: array %d cannot be archived "
                          "(host tensors other than bfloat16, names up to %d bytes)", path, i,
                          NPZ_MAX_KEY);
        if (ts[i]->nbytes >= 0xFFFFFFFFu - 512)
            return bf_err(err, BF_ELIMIT, "too_large", "%s: array \"%s\" is 4 GiB or more, "
                          "beyond a plain ZIP archive", path, keys[i]);
    }
    npz_out o = {keys, ts, n};
    return bf_file_write_atomic(path, npz_body, &o, err);
}

bf_status bf_tensor_save_npz(const char *path, const char *const *keys,
                             const bf_tensor *const *ts, int n, bf_error *err) {
    if (!path || n < 0 || n > 65535 || (n && (!keys || !ts)))
        return bf_err(err, BF_EINVAL, "bad_argument", "invalid archive arguments");
    for (int i = 0; i < n; i++)
        if (!ts[i] || ts[i]->device)
            return bf_err(err, BF_EINVAL, "bad_argument", "%s: array %d is not a host tensor",
                          path, i);
    /* bfloat16 (numpy has none) widened to float32 copies, as bf_tensor_save_npy does */
    const bf_tensor **use = bf_calloc((size_t)BF_MAX(n, 1), sizeof(*use));
    bf_tensor **wide = bf_calloc((size_t)BF_MAX(n, 1), sizeof(*wide));
    bf_status st = use && wide ? BF_OK : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    for (int i = 0; st == BF_OK && i < n; i++) {
        use[i] = ts[i];
        if (ts[i]->dtype != BF_DTYPE_BF16) continue;
        st = bf_tensor_alloc(NULL, 0, BF_DTYPE_F32, ts[i]->rank, ts[i]->dims, false, &wide[i],
                             err);
        if (st == BF_OK) st = bf_tensor_convert(ts[i], wide[i], err);
        use[i] = wide[i];
    }
    if (st == BF_OK) st = bf_npz_save(path, keys, use, n, err);
    for (int i = 0; wide && i < n; i++) bf_tensor_free(wide[i]);
    bf_free(wide);
    bf_free((void *)use);
    return st;
}
