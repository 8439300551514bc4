/*
 * reply.c - the server's answers as JSON: the one place an error becomes JSON. A leaf: it
 * needs only the library (bf_error_json) and cJSON, and every other file of the server uses it.
 *
 * An error answer is {"error": E} where E is bf_error_json's object for the error
 * ({"severity", "code", "status", "message", and "page", "block", "port", "attr", "pointer",
 * "line", "column" when set}); a page that did not load adds "problems": every record, each in
 * the same form. The codes are the stable list of BF_ERROR_CODE_MAP.
 */
#include "server.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

void srv_response_free(srv_response *r) {
    free(r->body);
    r->body = NULL;
}

void srv_json(srv_response *res, int status, char *json) {
    free(res->body);
    res->status = json ? status : 500;
    res->content_type = "application/json";
    res->body = json ? json : strdup("{\"error\":{\"code\":\"out_of_memory\",\"message\":"
                                     "\"out of memory\"}}");
    res->body_len = res->body ? strlen(res->body) : 0;
}

cJSON *srv_error_object(const bf_error *e) {
    char *text = NULL;
    cJSON *o = bf_error_json(e, &text, NULL) == BF_OK ? cJSON_Parse(text) : NULL;
    bf_string_free(text);
    return o;
}

void srv_error_bf(srv_response *res, int status, const bf_error *e) {
    cJSON *root = cJSON_CreateObject(), *err = srv_error_object(e);
    char *text = NULL;
    if (root && err) {
        cJSON_AddItemToObject(root, "error", err);
        text = cJSON_PrintUnformatted(root);
    } else {
        cJSON_Delete(err);
    }
    cJSON_Delete(root);
    srv_json(res, status, text);
}

/* The status a server-made error carries in "status": what its HTTP status means. */
static bf_status status_of(int http) {
    return http == 413 || http == 429 || http == 503 ? BF_ELIMIT
           : http == 404 || http == 410              ? BF_ENOTFOUND
           : http >= 500                             ? BF_EINTERNAL
                                                     : BF_EINVAL;
}

void srv_error(srv_response *res, int status, const char *code, const char *fmt, ...) {
    bf_error e = {0};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof(e.message), fmt, ap);
    va_end(ap);
    e.status = status_of(status);
    snprintf(e.code, sizeof(e.code), "%s", code);
    srv_error_bf(res, status, &e);
}

cJSON *srv_problems_json(const bf_diags *d, const bf_error *e) {
    cJSON *arr = cJSON_CreateArray();
    size_t n = d ? bf_diags_count(d) : 0;
    for (size_t i = 0; arr && i < n + (n == 0 && e && e->status); i++) {
        cJSON *o = srv_error_object(i < n ? bf_diags_at(d, i) : e);
        if (o) cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* An HTTP status for a page that failed to load. */
static int load_status(bf_status st) {
    return st == BF_ENOMEM || st == BF_EINTERNAL ? 500 : st == BF_ELIMIT ? 413 : 422;
}

/*
 * Answer with every problem of a page that did not load: {"error": first, "problems": all}.
 */
void srv_problems(srv_response *res, int status, const bf_error *first, const bf_diags *d) {
    srv_error_bf(res, status ? status : load_status(first->status), first);
    cJSON *root = res->body ? cJSON_Parse(res->body) : NULL;
    if (!root) return;
    cJSON_AddItemToObject(root, "problems", srv_problems_json(d, NULL));
    int code = res->status;
    srv_json(res, code, cJSON_PrintUnformatted(root));
    cJSON_Delete(root);
}

