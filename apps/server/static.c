/*
 * static.c - the browser editor's files (web/dist: index.html and assets/), served by
 * `blockflow serve` next to its API.
 *
 * The files are not secret, so they need no token (the API behind them does), but they are
 * still read as hostile paths: every segment of the path must be a safe name (srv_name_ok:
 * no "..", no leading dot, no odd characters), each folder is opened relative to the last
 * with O_NOFOLLOW, so neither a crafted path nor a link inside the folder reaches outside it,
 * and only regular files up to 32 MiB are answered. The content type comes from the
 * extension; http.c adds nosniff.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { WEB_MAX_FILE = 32 << 20, WEB_MAX_DEPTH = 4 };

int srv_web_open(srv_app *app, const char *dir, char *why, size_t n) {
    app->have_web = false;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, n, "%s: %s", dir, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstatat(fd, "index.html", &sb, 0) || !S_ISREG(sb.st_mode)) {
        snprintf(why, n, "%s has no index.html", dir);
        close(fd);
        return -1;
    }
    if (!realpath(dir, app->web_dir)) snprintf(app->web_dir, sizeof(app->web_dir), "%s", dir);
    app->web_fd = fd;
    app->have_web = true;
    return 0;
}

void srv_web_close(srv_app *app) {
    if (app->have_web) close(app->web_fd);
    app->have_web = false;
}

static const char *content_type(const char *name) {
    static const char *const types[][2] = {
        {".html", "text/html; charset=utf-8"},  {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},    {".json", "application/json"},
        {".png", "image/png"},                  {".svg", "image/svg+xml"},
        {".ico", "image/x-icon"},               {".woff2", "font/woff2"},
        {".map", "application/json"},           {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(dot, types[i][0])) return types[i][1];
    return "application/octet-stream";
}

/* Open `path` ("a/b/c", already split-checked) beneath dirfd without following links. */
static int open_beneath(int dirfd, char seg[][128], int nseg) {
    int fd = dirfd;
    for (int i = 0; i < nseg; i++) {
        int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (i + 1 < nseg ? O_DIRECTORY : 0);
        int next = openat(fd, seg[i], flags);
        if (fd != dirfd) close(fd);
        if (next < 0) return -1;
        fd = next;
    }
    return fd == dirfd ? -1 : fd;
}

void srv_static(srv_app *app, const char *path, srv_response *res) {
    char seg[WEB_MAX_DEPTH][128];
    int nseg = 0;
    if (!app->have_web || !path || path[0] != '/') goto not_found;
    if (!strcmp(path, "/")) path = "/index.html";
    for (const char *p = path + 1; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 0 || len >= sizeof(seg[0]) || nseg == WEB_MAX_DEPTH) goto not_found;
        memcpy(seg[nseg], p, len);
        seg[nseg][len] = '\0';
        if (!srv_name_ok(seg[nseg])) goto not_found;
        nseg++;
        p += len;
        if (*p == '/') p++;
    }
    if (nseg == 0) goto not_found;
    int fd = open_beneath(app->web_fd, seg, nseg);
    if (fd < 0) goto not_found;
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size > WEB_MAX_FILE) {
        close(fd);
        goto not_found;
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *buf = malloc(size ? size : 1);
    while (buf && got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != size) {
        free(buf);
        srv_error(res, 500, "io_error", "cannot read the editor's file");
        return;
    }
    free(res->body);
    res->status = 200;
    res->content_type = content_type(seg[nseg - 1]);
    res->body = buf;
    res->body_len = size;
    return;
not_found:
    srv_error(res, 404, "not_found", "no such file");
}
