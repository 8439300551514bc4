/*
 * import_routes.c - POST /api/import: an enuSpace-Tensorflow page uploaded from the editor
 * becomes a page of the pages folder (the importer of apps/enuspace, as `blockflow import`).
 *
 *   body    {"name": "NAME", "page": "<base64 .svg or .json>", "dat": "<base64 .dat>" (optional),
 *            "partial": false}
 *   201     {"name", "revision", "files": [the .npy files written], "report": {...}}
 *   422     {"error": {...}, "report": {...}}: the page cannot be imported (the report lists
 *           what cannot be mapped)
 *   409     a page or file of that name exists (nothing is replaced)
 *
 * Limits: the body is bounded by --max-body like every request, the decoded page and .dat
 * together by --max-upload, the page's arrays by the context's max_tensor_elements. What is
 * written goes only into the pages folder, through its directory descriptor: NAME.json (a
 * safe name) and the page's large arrays as NAME.<block>.npy (the importer makes those names
 * safe), every file created exclusively (never over an existing one, never through a link)
 * and removed again when a later one fails, so a failed import leaves nothing behind.
 * AddSymbolicGradients blocks are built by blockflow's gradient builder (symgrad.c) on the
 * loop thread: shape inference and edits, no kernel runs.
 */
#include "enuspace.h"
#include "server.h"
#include "symgrad.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Create `fname` in the pages folder with `len` bytes: a temporary file, fsync, then a link
 * that fails when the name exists. 0 or -errno. */
static int create_file(srv_store *st, const char *fname, const void *data, size_t len) {
    char tmp[160];
    int fd = -1;
    for (int tries = 0; tries < 100 && fd < 0; tries++) {
        snprintf(tmp, sizeof tmp, ".import.%ld.%u.tmp", (long)getpid(), st->n_temps++);
        fd = openat(st->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) return -errno;
    }
    if (fd < 0) return -EEXIST;
    int rc = 0;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        off += (size_t)w;
    }
    if (!rc && fsync(fd) != 0) rc = -errno;
    if (close(fd) != 0 && !rc) rc = -errno;
    if (!rc && linkat(st->dirfd, tmp, st->dirfd, fname, 0) != 0) rc = -errno;
    unlinkat(st->dirfd, tmp, 0);
    return rc;
}

/* The base64 string `key` of `body` decoded (budget: *left bytes); NULL with res filled. */
static unsigned char *decode(const cJSON *body, const char *key, size_t *left, size_t *len,
                             srv_response *res) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, key);
    if (!cJSON_IsString(v)) {
        srv_error(res, 400, "bad_request", "\"%s\" must be a base64 string", key);
        return NULL;
    }
    size_t n = strlen(v->valuestring), cap = n / 4 * 3 + 3;
    if (cap > *left + 3) {
        srv_error(res, 413, "limit", "the uploaded files exceed %zu bytes (--max-upload)", *left);
        return NULL;
    }
    unsigned char *buf = malloc(cap ? cap : 1);
    long got = buf ? srv_base64_decode(v->valuestring, n, buf, cap) : -1;
    if (got < 0 || (size_t)got > *left) {
        free(buf);
        if (!buf) srv_error(res, 500, "out_of_memory", "out of memory");
        else if (got < 0) srv_error(res, 400, "bad_request", "\"%s\" is not base64", key);
        else srv_error(res, 413, "limit", "the uploaded files exceed --max-upload");
        return NULL;
    }
    *left -= (size_t)got;
    *len = (size_t)got;
    return buf;
}

void srv_import(srv_app *app, const srv_request *req, srv_response *res) {
    if (!req->body_len) {
        srv_error(res, 400, "bad_request", "POST /api/import takes {\"name\", \"page\" (base64), "
                  "\"dat\" (base64, optional), \"partial\"}");
        return;
    }
    bf_error jc = {0};
    if (bf_json_check(req->body, req->body_len, bf_context_config(app->ctx)->max_json_depth,
                      &jc)) {
        srv_error_bf(res, 400, &jc);
        return;
    }
    cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
    const cJSON *name_j = cJSON_GetObjectItemCaseSensitive(body, "name");
    if (!body || !cJSON_IsString(name_j) || !srv_name_ok(name_j->valuestring) ||
        strlen(name_j->valuestring) > 60) {
        srv_error(res, 400, "bad_request", "\"name\" must be a page name: letters, digits, '.', "
                  "'_' and '-', not starting with '.', at most 60 characters");
        cJSON_Delete(body);
        return;
    }
    char name[64], prefix[80];
    snprintf(name, sizeof name, "%s", name_j->valuestring);
    snprintf(prefix, sizeof prefix, "%s.", name);
    size_t left = app->lim.max_upload, plen = 0, dlen = 0;
    unsigned char *page = decode(body, "page", &left, &plen, res), *dat = NULL;
    if (page && cJSON_GetObjectItemCaseSensitive(body, "dat") &&
        !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "dat")))
        dat = decode(body, "dat", &left, &dlen, res);
    bool partial = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "partial"));
    bool need_dat = cJSON_GetObjectItemCaseSensitive(body, "dat") &&
                    !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "dat"));
    cJSON_Delete(body);
    if (!page || (need_dat && !dat)) {
        free(page);
        return;
    }
    enu_options o;
    enu_options_init(&o);
    o.partial = partial;
    o.page_name = name;
    o.file_prefix = prefix;
    o.max_input_bytes = app->lim.max_upload;
    int64_t lim = (int64_t)bf_context_config(app->ctx)->max_tensor_elements;
    if (lim > 0 && lim < o.max_elements) o.max_elements = lim;
    enu_result r;
    int st = enu_import(page, plen, dat, dlen, &o, &r);
    free(page);
    free(dat);
    cJSON *out = cJSON_CreateObject();
    cJSON *report = r.report_json ? cJSON_Parse(r.report_json) : NULL;
    if (st) {
        cJSON *err = cJSON_CreateObject();
        cJSON_AddStringToObject(err, "code", "import_failed");
        cJSON_AddStringToObject(err, "message", r.error);
        cJSON_AddItemToObject(out, "error", err);
        if (report) cJSON_AddItemToObject(out, "report", report);
        enu_result_free(&r);
        char *t = cJSON_PrintUnformatted(out);
        cJSON_Delete(out);
        srv_json(res, 422, t);
        return;
    }
    /* the library checks the page and writes its canonical form (the .npy files are not
       there yet: they are not read here) */
    /* the .npy files first (the symbolic gradients are built on the page with its files),
       then the page; all or nothing */
    int rc = 0, made = 0;
    cJSON *files = cJSON_CreateArray();
    for (; made < r.n_files && !rc; made++) {
        if (!srv_name_ok(r.files[made].name)) rc = -EINVAL;
        else rc = create_file(&app->store, r.files[made].name, r.files[made].data,
                              r.files[made].size);
        if (!rc) cJSON_AddItemToArray(files, cJSON_CreateString(r.files[made].name));
    }
    if (rc) made--; /* the failed one was not created */
    char fname[128], *canon = NULL, *built = NULL, why[600] = "";
    snprintf(fname, sizeof fname, "%s.json", name);
    bf_diags *d = NULL;
    bf_error e = {0};
    int status = 0; /* an HTTP error answered below */
    if (!rc && enu_build_symbolic_gradients(app->ctx, r.page_json, fname, app->store.dir, &built,
                                            why, sizeof why)) {
        status = 422;
    } else if (!rc) {
        /* the library checks the page and writes its canonical form */
        const char *text = built ? built : r.page_json;
        bf_page *pg = NULL;
        d = bf_diags_new();
        bf_status bs = d ? bf_page_parse(app->ctx, text, strlen(text), fname, app->store.dir,
                                         BF_LOAD_INCOMPLETE | BF_LOAD_SKIP_FILES, &pg, d, &e)
                         : BF_ENOMEM;
        if (bs == BF_OK) bs = bf_page_to_json(pg, &canon, &e);
        bf_page_free(pg);
        if (bs) status = -1;
        else rc = srv_store_write(&app->store, name, canon, strlen(canon), true);
    }
    if (rc || status) {
        for (int i = 0; i < made; i++) unlinkat(app->store.dirfd, r.files[i].name, 0);
        if (status == 422) {
            cJSON *err = cJSON_CreateObject();
            cJSON_AddStringToObject(err, "code", "import_failed");
            cJSON_AddStringToObject(err, "message", why);
            cJSON_AddItemToObject(out, "error", err);
            if (report) cJSON_AddItemToObject(out, "report", report), report = NULL;
            char *t = cJSON_PrintUnformatted(out);
            srv_json(res, 422, t);
        } else if (status) {
            srv_problems(res, 422, &e, d);
        } else if (rc == -EEXIST) {
            srv_error(res, 409, "exists", "a page or file of that name exists (\"%s\" or one "
                      "of its .npy files): choose another name", name);
        } else {
            srv_error(res, 500, "io_error", "cannot write the imported page: %s", strerror(-rc));
        }
        cJSON_Delete(files);
        cJSON_Delete(report);
        cJSON_Delete(out);
    } else {
        char rev[17];
        srv_revision(canon, strlen(canon), rev);
        cJSON_AddStringToObject(out, "name", name);
        cJSON_AddStringToObject(out, "revision", rev);
        cJSON_AddItemToObject(out, "files", files);
        if (report) cJSON_AddItemToObject(out, "report", report);
        char *t = cJSON_PrintUnformatted(out);
        cJSON_Delete(out);
        srv_json(res, 201, t);
    }
    bf_diags_free(d);
    bf_string_free(built);
    bf_string_free(canon);
    enu_result_free(&r);
}
