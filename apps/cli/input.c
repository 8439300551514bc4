/*
 * input.c - what `run` and `check` read: the page, from a file, from standard input ("-") or
 * from any other file that is not a regular one (a FIFO, a process substitution, a device),
 * and the feeds, from .npy files or from one array of an .npz archive (FILE.npz:KEY).
 *
 * Pages that are not regular files are read as streams, at most max_page_bytes of them: a
 * regular file's size is known before reading, a stream's is not, so the limit is applied
 * while reading. Opening never hangs: the file is opened with O_NONBLOCK (a FIFO without a
 * writer opens at once and reads as empty), then read in blocking mode. A page from standard
 * input has no folder of its own: its `file` attributes are relative to the current folder.
 *
 * .npz archives are the ZIP files numpy's savez writes: each array is a stored (uncompressed)
 * member KEY.npy. The member is copied to a private temporary file and read with
 * bf_tensor_load_npy, so it gets exactly the checks of a .npy feed. Compressed members
 * (savez_compressed) are refused with a message saying so.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- pages ------------------------------------------------------------------------------ */

/* Read all of fd, at most `limit` bytes, into a NUL-terminated buffer (caller frees). */
static char *read_stream(int fd, uint64_t limit, size_t *len, const char **why) {
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    *why = "out of memory";
    while (buf) {
        if (n + 1 >= cap) {
            char *p = realloc(buf, cap * 2);
            if (!p) break;
            buf = p;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            *why = strerror(errno);
            break;
        }
        n += (size_t)got;
        if (n > limit) {
            *why = "the page is larger than the limit (--max-page-bytes)";
            break;
        }
        if (got == 0) {
            buf[n] = '\0';
            *len = n;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

int cli_load_page(bf_context *ctx, const char *path, bf_page **page, bf_diags *diags,
                  bf_error *e) {
    *page = NULL;
    bool in = !strcmp(path, "-");
    int fd = in ? STDIN_FILENO : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (!in && fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
        close(fd); /* a regular file: the library reads it (its size known in advance) */
        return bf_page_load_file(ctx, path, page, diags, e) ? EXIT_INVALID : EXIT_OK;
    }
    if (fd < 0 || (!in && fstat(fd, &sb) != 0) || (!in && S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "blockflow: cannot read the page %s: %s\n", path,
                fd < 0 ? strerror(errno) : "it is a folder");
        if (fd >= 0) close(fd);
        return EXIT_INVALID;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    size_t len = 0;
    const char *why = "";
    char *text = read_stream(fd, bf_context_config(ctx)->max_page_bytes, &len, &why);
    if (!in) close(fd);
    if (!text) {
        fprintf(stderr, "blockflow: cannot read the page %s: %s\n", in ? "from standard input"
                                                                       : path, why);
        return EXIT_INVALID;
    }
    /* A stream's `file` attributes: relative to the current folder for standard input, to
     * the stream's own folder otherwise (as for a regular page). */
    char dir[4096] = ".";
    const char *slash = in ? NULL : strrchr(path, '/');
    if (slash) snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) ? (int)(slash - path) : 1,
                        path);
    bf_status st = bf_page_load_string(ctx, text, len, in ? "<stdin>" : path, dir, page, diags,
                                       e);
    free(text);
    return st ? EXIT_INVALID : EXIT_OK;
}

/* ---- feeds ------------------------------------------------------------------------------ */

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static bool feed_fail(const char *file, const char *why) {
    fprintf(stderr, "blockflow: --feed %s: %s\n", file, why);
    return false;
}

/*
 * Find member `name` of the ZIP archive `f` (whose size is `size`): its data's offset and
 * size. Reads the end of central directory record (the ZIP64 one when present) and walks the
 * central directory. Fills `keys` with the archive's array names (for messages).
 */
typedef void (*npz_each_fn)(const char *name, size_t len, void *user);

static bool npz_find(FILE *f, uint64_t size, const char *npz, const char *key, uint64_t *off,
                     uint64_t *len, char *keys, size_t keys_size, npz_each_fn each,
                     void *user) {
    unsigned char tail[65536 + 22];
    uint64_t tn = size < sizeof(tail) ? size : sizeof(tail);
    if (fseeko(f, (off_t)(size - tn), SEEK_SET) || fread(tail, 1, tn, f) != tn)
        return feed_fail(npz, "cannot read the archive");
    int64_t e = -1;
    for (int64_t i = (int64_t)tn - 22; i >= 0; i--)
        if (rd32(tail + i) == 0x06054b50) {
            e = i;
            break;
        }
    if (e < 0) return feed_fail(npz, "not an .npz file (no ZIP directory)");
    uint64_t count = rd16(tail + e + 10), cd_size = rd32(tail + e + 12),
             cd_off = rd32(tail + e + 16);
    if (e >= 20 && rd32(tail + e - 20) == 0x07064b50) { /* ZIP64 locator */
        unsigned char z[56];
        uint64_t zoff = rd64(tail + e - 20 + 8);
        if (fseeko(f, (off_t)zoff, SEEK_SET) || fread(z, 1, 56, f) != 56 ||
            rd32(z) != 0x06064b50)
            return feed_fail(npz, "damaged ZIP64 directory");
        count = rd64(z + 32), cd_size = rd64(z + 40), cd_off = rd64(z + 48);
    }
    if (cd_off > size || cd_size > size - cd_off || cd_size > (64u << 20))
        return feed_fail(npz, "damaged ZIP directory");
    unsigned char *cd = malloc(cd_size ? cd_size : 1);
    if (!cd || fseeko(f, (off_t)cd_off, SEEK_SET) || fread(cd, 1, cd_size, f) != cd_size) {
        free(cd);
        return feed_fail(npz, "cannot read the ZIP directory");
    }
    char want[512];
    snprintf(want, sizeof(want), "%s.npy", key ? key : "");
    bool found = false;
    int n_arrays = 0;
    size_t kn = 0;
    keys[0] = '\0';
    for (uint64_t i = 0, p = 0; i < count && p + 46 <= cd_size; i++) {
        const unsigned char *h = cd + p;
        if (rd32(h) != 0x02014b50) break;
        uint32_t method = rd16(h + 10), nlen = rd16(h + 28), xlen = rd16(h + 30),
                 clen = rd16(h + 32);
        uint64_t csize = rd32(h + 20), usize = rd32(h + 24), loff = rd32(h + 42);
        if (p + 46 + nlen + xlen + clen > cd_size) break;
        const char *name = (const char *)h + 46;
        /* ZIP64 extra field: the 64-bit values of the fields set to 0xFFFFFFFF, in order */
        for (const unsigned char *x = h + 46 + nlen; x + 4 <= h + 46 + nlen + xlen;) {
            uint32_t id = rd16(x), sz = rd16(x + 2);
            const unsigned char *v = x + 4, *vend = v + sz;
            if (id == 1) {
                if (usize == 0xFFFFFFFFu && v + 8 <= vend) usize = rd64(v), v += 8;
                if (csize == 0xFFFFFFFFu && v + 8 <= vend) csize = rd64(v), v += 8;
                if (loff == 0xFFFFFFFFu && v + 8 <= vend) loff = rd64(v), v += 8;
            }
            x = vend;
        }
        if (nlen > 4 && !memcmp(name + nlen - 4, ".npy", 4)) {
            n_arrays++;
            if (each) each(name, nlen - 4, user);
            if (kn + nlen < keys_size)
                kn += (size_t)snprintf(keys + kn, keys_size - kn, "%s%.*s", kn ? ", " : "",
                                       (int)nlen - 4, name);
            bool match = key ? (nlen == strlen(want) && !memcmp(name, want, nlen)) : !found;
            if (match) {
                found = true;
                if (method != 0) {
                    free(cd);
                    return feed_fail(npz, "the array is compressed (numpy.savez_compressed); "
                                          "write it with numpy.savez");
                }
                unsigned char lh[30];
                if (fseeko(f, (off_t)loff, SEEK_SET) || fread(lh, 1, 30, f) != 30 ||
                    rd32(lh) != 0x04034b50) {
                    free(cd);
                    return feed_fail(npz, "damaged ZIP member");
                }
                *off = loff + 30 + rd16(lh + 26) + rd16(lh + 28);
                *len = csize;
                if (csize != usize || *off > size || csize > size - *off) {
                    free(cd);
                    return feed_fail(npz, "damaged ZIP member");
                }
            }
        }
        p += 46 + nlen + xlen + clen;
    }
    free(cd);
    if (each) return true; /* listing only */
    if (!key && n_arrays > 1) {
        char why[600];
        snprintf(why, sizeof(why), "holds several arrays: name one (FILE.npz:KEY; keys: %s)",
                 keys);
        return feed_fail(npz, why);
    }
    if (!found) {
        char why[700];
        snprintf(why, sizeof(why), "has no array \"%s\" (keys: %s)", key ? key : "",
                 keys[0] ? keys : "none");
        return feed_fail(npz, why);
    }
    return true;
}

/* Load array `key` (NULL: the only one) of the .npz file `npz`. */
static bf_status load_npz(bf_context *ctx, const char *npz, const char *key, bf_tensor **t,
                          bf_error *e) {
    FILE *f = fopen(npz, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        feed_fail(npz, f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return BF_EIO;
    }
    uint64_t off = 0, len = 0;
    char keys[512];
    if (!npz_find(f, (uint64_t)sb.st_size, npz, key, &off, &len, keys, sizeof(keys), NULL,
                  NULL)) {
        fclose(f);
        return BF_EIO;
    }
    const char *tmpdir = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s/blockflow-npz-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = mkstemp(tmp);
    bool ok = fd >= 0 && fseeko(f, (off_t)off, SEEK_SET) == 0;
    char buf[65536];
    for (uint64_t left = len; ok && left;) {
        size_t want = left < sizeof(buf) ? (size_t)left : sizeof(buf);
        ok = fread(buf, 1, want, f) == want && write(fd, buf, want) == (ssize_t)want;
        left -= want;
    }
    fclose(f);
    if (fd >= 0) close(fd);
    bf_status st = BF_EIO;
    if (!ok) feed_fail(npz, "cannot copy the array out of the archive");
    else st = bf_tensor_load_npy(ctx, tmp, t, e);
    if (st && ok) { /* name the archive and array instead of the temporary file */
        snprintf(e->page, sizeof(e->page), "%s:%s", npz, key ? key : "");
    }
    if (fd >= 0) unlink(tmp);
    return ok ? st : BF_EIO;
}

/* float32 -> bfloat16 bits, rounded to nearest even, NaN kept quiet (runtime/half.h's rule,
 * and Python's blockflow._tensor.f32_to_bf16_bits). */
static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* A float32 array fed to a bfloat16 Placeholder is rounded to it (numpy has no bfloat16, so
 * .npy files of bfloat16 data are float32), as a bfloat16 Const reads a float32 file. */
static bf_status to_bfloat16_if_wanted(bf_session *s, const char *id, bf_tensor **t,
                                       bf_error *e) {
    bf_port_shape want;
    if (bf_tensor_dtype(*t) != BF_DTYPE_F32 ||
        bf_session_port_shape(s, id, NULL, 1, &want, NULL) != BF_OK ||
        want.dtype != BF_DTYPE_BF16)
        return BF_OK;
    bf_tensor *b = NULL;
    bf_status st = bf_tensor_new_uninit(NULL, BF_DTYPE_BF16, bf_tensor_rank(*t),
                                        bf_tensor_dims(*t), &b, e);
    if (st) return st;
    const float *src = bf_tensor_cdata(*t);
    uint16_t *dst = bf_tensor_data(b);
    for (int64_t i = 0; i < bf_tensor_numel(*t); i++) dst[i] = f32_to_bf16(src[i]);
    bf_tensor_free(*t);
    *t = b;
    return BF_OK;
}

int cli_feed(bf_context *ctx, bf_session *s, const char *arg) {
    char id[256], file[4096];
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(id) || !eq[1]) {
        fprintf(stderr, "blockflow: --feed \"%s\": takes ID=FILE.npy or ID=FILE.npz:KEY\n", arg);
        return EXIT_USAGE;
    }
    snprintf(id, sizeof(id), "%.*s", (int)(eq - arg), arg);
    snprintf(file, sizeof(file), "%s", eq + 1);
    const char *key = NULL;
    char *npz = strstr(file, ".npz");
    while (npz && npz[4] != '\0' && npz[4] != ':') npz = strstr(npz + 1, ".npz");
    if (npz) {
        if (npz[4] == ':') key = npz + 5;
        npz[4] = '\0';
        if (key && !*key) key = NULL;
    }
    bf_tensor *t = NULL;
    bf_error e = {0};
    bf_status st = npz ? load_npz(ctx, file, key, &t, &e) : bf_tensor_load_npy(ctx, file, &t, &e);
    if (st == BF_OK) st = to_bfloat16_if_wanted(s, id, &t, &e);
    if (st == BF_OK) {
        st = bf_session_feed_tensor(s, id, t, &e); /* takes t: no copy */
        t = NULL;
    }
    bf_tensor_free(t);
    if (st && e.status) cli_print_error(&e);
    return st ? EXIT_INVALID : EXIT_OK;
}

typedef struct key_list {
    char (*keys)[256];
    int n, max;
} key_list;

static void add_key(const char *name, size_t len, void *user) {
    key_list *k = user;
    if (k->n < k->max && len < 256) snprintf(k->keys[k->n++], 256, "%.*s", (int)len, name);
}

int cli_npz_keys(const char *path, char (*keys)[256], int max) {
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        feed_fail(path, f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    uint64_t off = 0, len = 0;
    char names[512];
    key_list k = {keys, 0, max};
    bool ok = npz_find(f, (uint64_t)sb.st_size, path, NULL, &off, &len, names, sizeof(names),
                       add_key, &k);
    fclose(f);
    return ok ? k.n : -1;
}
