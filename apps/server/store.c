/*
 * store.c - the pages folder of `blockflow serve`.
 *
 * Every file operation goes through one directory descriptor opened at start, with names that
 * passed srv_name_ok() (one segment of [A-Za-z0-9._-], no leading dot) and ".json" appended.
 * So no name, encoded or not, can leave the folder: there is no '/', no "..", no absolute
 * path to resolve. Reads use O_NOFOLLOW and refuse anything but a regular file, so a symbolic
 * link planted in the folder (pointing at ~/.ssh/id_rsa, say) is never followed. Writes go to
 * a hidden temporary file (a leading dot: never a valid page name) that is fsync'd and renamed
 * over the page, then the folder is fsync'd: a crash or a signal leaves the old page or the
 * new one, never half of one. rename() replaces a planted link itself, not its target.
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

static void file_name(const char *name, char buf[128]) { snprintf(buf, 128, "%s.json", name); }

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

unsigned srv_store_sweep(srv_store *st) {
    int fd = dup(st->dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    unsigned removed = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid = temp_pid(e->d_name);
        struct stat sb;
        /* only a regular file left by a process that is gone (a server killed mid-write) */
        if (pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        if (fstatat(st->dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISREG(sb.st_mode))
            continue;
        if (unlinkat(st->dirfd, e->d_name, 0) == 0) removed++;
    }
    closedir(d);
    return removed;
}

void srv_store_close(srv_store *st) {
    if (st->dirfd >= 0) close(st->dirfd);
    st->dirfd = -1;
}

int srv_store_read(srv_store *st, const char *name, char **text, size_t *len) {
    char fn[128];
    *text = NULL;
    *len = 0;
    if (!srv_name_ok(name)) return -EINVAL;
    file_name(name, fn);
    int fd = openat(st->dirfd, fn, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno == ELOOP || errno == EMLINK ? -ELOOP : -errno;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if ((uint64_t)sb.st_size > st->max_bytes) {
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

/* Write `text` to a new hidden temporary file in the folder; its name goes to tmp[128]. */
static int write_temp(srv_store *st, const char *name, const char *text, size_t len,
                      char tmp[128]) {
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(tmp, 128, ".%s.%ld.%u.tmp", name, (long)getpid(), st->n_temps++);
        fd = openat(st->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
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
    if (rc) unlinkat(st->dirfd, tmp, 0);
    return rc;
}

int srv_store_write(srv_store *st, const char *name, const char *text, size_t len,
                    bool exclusive) {
    char fn[128], tmp[128];
    if (!srv_name_ok(name)) return -EINVAL;
    file_name(name, fn);
    int rc = write_temp(st, name, text, len, tmp);
    if (rc) return rc;
    /* exclusive: link() fails with EEXIST instead of replacing, atomically */
    if (exclusive ? linkat(st->dirfd, tmp, st->dirfd, fn, 0) != 0
                  : renameat(st->dirfd, tmp, st->dirfd, fn) != 0) {
        rc = -errno;
        unlinkat(st->dirfd, tmp, 0);
        return rc;
    }
    if (exclusive) unlinkat(st->dirfd, tmp, 0);
    fsync(st->dirfd);
    return 0;
}

int srv_store_delete(srv_store *st, const char *name) {
    char fn[128];
    if (!srv_name_ok(name)) return -EINVAL;
    file_name(name, fn);
    if (unlinkat(st->dirfd, fn, 0) != 0) return -errno;
    fsync(st->dirfd);
    return 0;
}

int srv_store_rename(srv_store *st, const char *from, const char *to) {
    char a[128], b[128];
    if (!srv_name_ok(from) || !srv_name_ok(to)) return -EINVAL;
    file_name(from, a);
    file_name(to, b);
    struct stat sb;
    if (fstatat(st->dirfd, a, &sb, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
    if (!S_ISREG(sb.st_mode)) return -EINVAL;
    /* no-replace rename: hard link then unlink (both inside the folder) */
    if (linkat(st->dirfd, a, st->dirfd, b, 0) != 0) return -errno;
    if (unlinkat(st->dirfd, a, 0) != 0) {
        int rc = -errno;
        unlinkat(st->dirfd, b, 0);
        return rc;
    }
    fsync(st->dirfd);
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The sorted names of the regular files in the folder ending in `ext` (links and names that
 * fail srv_name_ok are left out), as a JSON array text; with `strip`, without the extension.
 */
static char *list_ext(srv_store *st, const char *ext, bool strip) {
    size_t el = strlen(ext);
    int fd = dup(st->dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    rewinddir(d);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= el || len > 100 + el || strcmp(e->d_name + len - el, ext)) continue;
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(strip ? len - el : len), e->d_name);
        struct stat sb;
        if (!srv_name_ok(name) || fstatat(st->dirfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(sb.st_mode))
            continue; /* links and odd names are not pages (nor files pages may name) */
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 32;
            char **nn = realloc(names, nc * sizeof(*nn));
            if (!nn) break;
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(name))) break;
        n++;
        if (n >= 100000) break;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof(*names), cmp_str); /* names is NULL when n is 0 */
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        if (arr) cJSON_AddItemToArray(arr, cJSON_CreateString(names[i]));
        free(names[i]);
    }
    free(names);
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
