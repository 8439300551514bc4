/*
 * store.c - the pages folder of `blockflow serve`.
 *
 * Every file operation goes through one directory descriptor opened at start, with names that
 * passed srv_page_name_ok(): one to four segments of [A-Za-z0-9._-] (srv_name_ok: no leading
 * dot) joined by '/', so a page may lie in a subfolder ("teach/conv_grad"), with ".json"
 * appended. No name, encoded or not, can leave the folder: there is no "..", no empty segment,
 * no absolute path to resolve, and the folders of a name are opened one by one beneath the
 * pages folder with O_NOFOLLOW|O_DIRECTORY (open_parent), so a symbolic link planted as a
 * subfolder is never entered. Reads use O_NOFOLLOW and refuse anything but a regular file, so
 * a link planted as a page (pointing at ~/.ssh/id_rsa, say) is never followed. Writes go to a
 * hidden temporary file (a leading dot: never a valid page name) in the page's own folder that
 * is fsync'd and renamed over the page, then the folder is fsync'd: a crash or a signal leaves
 * the old page or the new one, never half of one. rename() replaces a planted link itself,
 * not its target. The lists walk at most LIST_MAX_DIRS real folders (links and hidden ones are
 * skipped) and name at most LIST_MAX_NAMES files.
 */
#include "server.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

enum {
    LIST_MAX_DIRS = 1000,    /* folders a list or a sweep walks */
    LIST_MAX_NAMES = 100000, /* names a list gives */
};

bool srv_name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 100 || name[0] == '.') return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/*
 * The words the API puts after a page name (router.c's routes: pages/{name}/run, ...). A page
 * in a subfolder may not be named one of them, so that pages/teach/run is always the run of
 * page "teach" and never a page "teach/run" (the URL decodes %2F: both arrive as segments).
 */
static const char *const api_actions[] = {
    "rename", "duplicate", "check", "edits", "run", "explain", "gradcheck", "grad", "open",
    "close", "update-copy", "train", "backward", "check_backward",
};

bool srv_page_name_ok(const char *name) {
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 100) return false;
    int segs = 0;
    for (const char *p = name;;) {
        size_t len = strcspn(p, "/");
        char seg[101];
        if (len == 0 || ++segs > SRV_PAGE_MAX_DEPTH) return false;
        memcpy(seg, p, len);
        seg[len] = '\0';
        if (!srv_name_ok(seg)) return false;
        p += len;
        if (*p) {
            p++; /* a trailing '/' leaves an empty last segment: refused above */
            continue;
        }
        for (size_t k = 0; segs > 1 && k < sizeof(api_actions) / sizeof(*api_actions); k++)
            if (!strcmp(seg, api_actions[k])) return false;
        return true;
    }
}

static void file_name(const char *leaf, char buf[128]) { snprintf(buf, 128, "%s.json", leaf); }

/*
 * The folder holding `name` (a srv_page_name_ok name, or a file name of the same form) beneath
 * the store, each folder opened with O_NOFOLLOW|O_DIRECTORY so that no link is entered; with
 * `create`, missing folders are made. *leaf points at name's last segment. Returns a descriptor
 * to close, or -ELOOP (a link or a file where a folder should be), -ENOENT or another -errno.
 */
static int open_parent(const srv_store *st, const char *name, bool create, const char **leaf) {
    int fd = fcntl(st->dirfd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return -errno;
    for (const char *p = name;;) {
        const char *slash = strchr(p, '/');
        if (!slash) {
            *leaf = p;
            return fd;
        }
        char seg[128];
        snprintf(seg, sizeof(seg), "%.*s", (int)(slash - p), p);
        int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        int next = openat(fd, seg, flags);
        if (next < 0 && errno == ENOENT && create) {
            if (mkdirat(fd, seg, 0755) == 0) fsync(fd);
            next = openat(fd, seg, flags);
        }
        int err = errno;
        close(fd);
        if (next < 0) return err == ELOOP || err == ENOTDIR ? -ELOOP : -err;
        fd = next;
        p = slash + 1;
    }
}

void srv_store_page_dir(const srv_store *st, const char *name, char *buf, size_t n) {
    const char *slash = name ? strrchr(name, '/') : NULL;
    if (slash) snprintf(buf, n, "%s/%.*s", st->dir, (int)(slash - name), name);
    else snprintf(buf, n, "%s", st->dir);
}

int srv_store_open(srv_store *st, const char *dir, uint64_t max_bytes, char *why, size_t n) {
    memset(st, 0, sizeof(*st));
    st->dirfd = -1;
    st->max_bytes = max_bytes ? max_bytes : (uint64_t)16 << 20;
    if (!realpath(dir, st->dir)) {
        snprintf(why, n, "pages folder %s: %s", dir, strerror(errno));
        return -1;
    }
    st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dirfd < 0) {
        snprintf(why, n, "pages folder %s: %s", st->dir, strerror(errno));
        return -1;
    }
    st->swept = srv_store_sweep(st);
    return 0;
}

/*
 * The pid in a temporary file name of write_temp (".NAME.PID.N.tmp"), or 0 when `fn` is not
 * one.
 */
static long temp_pid(const char *fn) {
    size_t n = strlen(fn);
    if (fn[0] != '.' || n < 9 || strcmp(fn + n - 4, ".tmp")) return 0;
    const char *end = fn + n - 4, *p = end;
    while (p > fn && p[-1] >= '0' && p[-1] <= '9') p--; /* N */
    if (p == end || p <= fn || p[-1] != '.') return 0;
    const char *pid_end = --p;
    while (p > fn && p[-1] >= '0' && p[-1] <= '9') p--; /* PID */
    if (p == pid_end || p <= fn + 1 || p[-1] != '.') return 0;
    return strtol(p, NULL, 10);
}

/*
 * Call fn(st, dirfd, rel, entry name, user) for each entry of folder `dirfd` ("rel" is its path
 * beneath the pages folder, "" at the top) and of its real subfolders whose names pass
 * srv_name_ok, down to SRV_PAGE_MAX_DEPTH segments; at most *budget folders in all. Takes
 * ownership of dirfd.
 */
typedef void (*walk_fn)(srv_store *st, int dirfd, const char *rel, const char *entry, void *u);
static void walk(srv_store *st, int dirfd, const char *rel, int depth, unsigned *budget,
                 walk_fn fn, void *user) {
    DIR *d = fdopendir(dirfd);
    if (!d) {
        close(dirfd);
        return;
    }
    rewinddir(d); /* a duplicate of the store's descriptor shares the offset of earlier walks */
    for (struct dirent *e; (e = readdir(d));) {
        fn(st, dirfd, rel, e->d_name, user);
        struct stat sb;
        if (depth + 1 >= SRV_PAGE_MAX_DEPTH || !srv_name_ok(e->d_name) || *budget == 0 ||
            fstatat(dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode) ||
            strlen(rel) + strlen(e->d_name) + 2 > 101)
            continue; /* a link to a folder is not entered, nor a hidden folder */
        char path[128]; /* fits: checked above (GCC's -Wformat-truncation wants the return) */
        int pn = snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        if (pn < 0 || (size_t)pn >= sizeof(path)) continue;
        int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        (*budget)--;
        walk(st, sub, path, depth + 1, budget, fn, user);
    }
    closedir(d);
}

static void walk_store(srv_store *st, walk_fn fn, void *user) {
    int fd = fcntl(st->dirfd, F_DUPFD_CLOEXEC, 0);
    unsigned budget = LIST_MAX_DIRS;
    if (fd < 0) return;
    walk(st, fd, "", 0, &budget, fn, user);
}

static void sweep_one(srv_store *st, int dirfd, const char *rel, const char *fn, void *user) {
    (void)st;
    (void)rel;
    long pid = temp_pid(fn);
    struct stat sb;
    /* only a regular file left by a process that is gone (a server killed mid-write) */
    if (pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) return;
    if (fstatat(dirfd, fn, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode)) return;
    if (unlinkat(dirfd, fn, 0) == 0) (*(unsigned *)user)++;
}

unsigned srv_store_sweep(srv_store *st) {
    unsigned removed = 0;
    walk_store(st, sweep_one, &removed);
    return removed;
}

void srv_store_close(srv_store *st) {
    if (st->dirfd >= 0) close(st->dirfd);
    st->dirfd = -1;
}

/* Read file `path` (a srv_page_name_ok path, its extension included) of at most `max` bytes. */
static int read_file(srv_store *st, const char *path, uint64_t max, char **text, size_t *len) {
    const char *leaf;
    *text = NULL;
    *len = 0;
    if (!srv_page_name_ok(path)) return -EINVAL;
    int dfd = open_parent(st, path, false, &leaf);
    if (dfd < 0) return dfd;
    int fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int err = errno;
    close(dfd);
    if (fd < 0) return err == ELOOP || err == EMLINK ? -ELOOP : -err;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return -EFBIG;
    }
    size_t cap = (size_t)sb.st_size, got = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break; /* the file shrank: use what is there */
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

int srv_store_read(srv_store *st, const char *name, char **text, size_t *len) {
    char path[128];
    *text = NULL;
    *len = 0;
    if (!srv_page_name_ok(name)) return -EINVAL;
    file_name(name, path);
    return read_file(st, path, st->max_bytes, text, len);
}

int srv_store_read_file(srv_store *st, const char *path, const char *ext, uint64_t max,
                        char **data, size_t *len) {
    size_t n = strlen(path), el = strlen(ext);
    *data = NULL;
    *len = 0;
    if (n <= el || strcmp(path + n - el, ext)) return -EINVAL;
    return read_file(st, path, max, data, len);
}

/* Write `text` to a new hidden temporary file in folder dfd; its name goes to tmp[128]. */
static int write_temp(srv_store *st, int dfd, const char *leaf, const char *text, size_t len,
                      char tmp[128]) {
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(tmp, 128, ".%s.%ld.%u.tmp", leaf, (long)getpid(), st->n_temps++);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) return -errno;
    }
    if (fd < 0) return -EEXIST;
    size_t off = 0;
    int rc = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        off += (size_t)w;
    }
    if (!rc && fsync(fd) != 0) rc = -errno;
    if (close(fd) != 0 && !rc) rc = -errno;
    if (rc) unlinkat(dfd, tmp, 0);
    return rc;
}

int srv_store_write(srv_store *st, const char *name, const char *text, size_t len,
                    bool exclusive) {
    char fn[128], tmp[128];
    const char *leaf;
    if (!srv_page_name_ok(name)) return -EINVAL;
    int dfd = open_parent(st, name, true, &leaf);
    if (dfd < 0) return dfd;
    file_name(leaf, fn);
    int rc = write_temp(st, dfd, leaf, text, len, tmp);
    /* exclusive: link() fails with EEXIST instead of replacing, atomically */
    if (!rc && (exclusive ? linkat(dfd, tmp, dfd, fn, 0) != 0
                          : renameat(dfd, tmp, dfd, fn) != 0)) {
        rc = -errno;
        unlinkat(dfd, tmp, 0);
    } else if (!rc) {
        if (exclusive) unlinkat(dfd, tmp, 0);
        fsync(dfd);
    }
    close(dfd);
    return rc;
}

int srv_store_delete(srv_store *st, const char *name) {
    char fn[128];
    const char *leaf;
    if (!srv_page_name_ok(name)) return -EINVAL;
    int dfd = open_parent(st, name, false, &leaf);
    if (dfd < 0) return dfd;
    file_name(leaf, fn);
    int rc = unlinkat(dfd, fn, 0) != 0 ? -errno : 0;
    if (!rc) fsync(dfd);
    close(dfd);
    return rc;
}

int srv_store_rename(srv_store *st, const char *from, const char *to) {
    char a[128], b[128];
    const char *la, *lb;
    if (!srv_page_name_ok(from) || !srv_page_name_ok(to)) return -EINVAL;
    int fa = open_parent(st, from, false, &la);
    if (fa < 0) return fa;
    int fb = open_parent(st, to, true, &lb);
    if (fb < 0) {
        close(fa);
        return fb;
    }
    file_name(la, a);
    file_name(lb, b);
    struct stat sb;
    int rc = 0;
    if (fstatat(fa, a, &sb, AT_SYMLINK_NOFOLLOW) != 0) rc = -errno;
    else if (!S_ISREG(sb.st_mode)) rc = -EINVAL;
    /* no-replace rename: hard link then unlink (both inside the folder) */
    else if (linkat(fa, a, fb, b, 0) != 0) rc = -errno;
    else if (unlinkat(fa, a, 0) != 0) {
        rc = -errno;
        unlinkat(fb, b, 0);
    }
    if (!rc) {
        fsync(fa);
        fsync(fb);
    }
    close(fa);
    close(fb);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct list_acc {
    const char *ext;
    size_t el;
    bool strip;
    char **names;
    size_t n, cap;
} list_acc;

static void list_one(srv_store *st, int dirfd, const char *rel, const char *fn, void *user) {
    (void)st;
    list_acc *a = user;
    size_t len = strlen(fn);
    if (a->n >= LIST_MAX_NAMES || len <= a->el || len > 100 + a->el ||
        strcmp(fn + len - a->el, a->ext))
        return;
    char leaf[128], name[256];
    snprintf(leaf, sizeof(leaf), "%.*s", (int)(a->strip ? len - a->el : len), fn);
    snprintf(name, sizeof(name), "%s%s%s", rel, rel[0] ? "/" : "", leaf);
    struct stat sb;
    if (!srv_name_ok(leaf) || !srv_page_name_ok(name) ||
        fstatat(dirfd, fn, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
        return; /* links and odd names are not pages (nor files pages may name) */
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 32;
        char **nn = realloc(a->names, nc * sizeof(*nn));
        if (!nn) return;
        a->names = nn;
        a->cap = nc;
    }
    if ((a->names[a->n] = strdup(name))) a->n++;
}

/*
 * The sorted names of the regular files in the folder and its subfolders ending in `ext`
 * ("teach/conv_grad.json"; links and names that fail srv_page_name_ok are left out), as a JSON
 * array text; with `strip`, without the extension.
 */
static char *list_ext(srv_store *st, const char *ext, bool strip) {
    list_acc a = {.ext = ext, .el = strlen(ext), .strip = strip};
    walk_store(st, list_one, &a);
    if (a.n) qsort(a.names, a.n, sizeof(*a.names), cmp_str); /* names is NULL when n is 0 */
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < a.n; i++) {
        if (arr) cJSON_AddItemToArray(arr, cJSON_CreateString(a.names[i]));
        free(a.names[i]);
    }
    free(a.names);
    char *out = arr ? cJSON_PrintUnformatted(arr) : NULL;
    cJSON_Delete(arr);
    return out;
}

void srv_revision(const char *text, size_t len, char rev[17]) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)text[i];
        h *= 1099511628211ull;
    }
    snprintf(rev, 17, "%016llx", (unsigned long long)h);
}

char *srv_store_list_json(srv_store *st) { return list_ext(st, ".json", true); }

char *srv_store_list_files_json(srv_store *st, const char *ext) {
    return list_ext(st, ext, false);
}
