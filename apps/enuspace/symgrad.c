/*
 * symgrad.c - the symbolic gradients of an imported page (symgrad.h), through the public API:
 * a session on the page as imported (its wiring may be unfinished: the Placeholders), one
 * bf_session_build_gradients per AddSymbolicGradients block, then each reader of a Placeholder
 * connected to its gradient and the Placeholder removed; the canonical page comes back.
 */
#include "symgrad.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Block id of a ref ("id" or "id:port") into buf. */
static const char *ref_id(const char *ref, char *buf, size_t size) {
    size_t n = strcspn(ref, ":");
    snprintf(buf, size, "%.*s", (int)(n < size ? n : size - 1), ref);
    return buf;
}

static int one(bf_session *s, const cJSON *e, char *err, size_t errsz) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(e, "id"));
    const cJSON *outs = cJSON_GetObjectItem(e, "outputs"), *ins = cJSON_GetObjectItem(e, "inputs"),
                *ph = cJSON_GetObjectItem(e, "placeholders"), *p;
    int n_in = cJSON_GetArraySize(ins);
    if (!id || cJSON_GetArraySize(outs) != 1 || n_in < 1 || n_in > 256) {
        snprintf(err, errsz, "AddSymbolicGradients \"%.60s\": %d outputs and %d inputs wired; "
                 "blockflow builds the gradient of one output (a scalar loss) with respect to "
                 "1 to 256 Variables", id ? id : "?", cJSON_GetArraySize(outs), n_in);
        return -1;
    }
    const char *loss = cJSON_GetStringValue(cJSON_GetArrayItem(outs, 0));
    char ids[256][128];
    const char *wrt[256];
    for (int k = 0; k < n_in; k++) {
        const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(ins, k));
        wrt[k] = ref_id(r ? r : "", ids[k], sizeof ids[k]);
    }
    char *created = NULL;
    bf_error e2 = {0};
    if (bf_session_build_gradients(s, loss, wrt, n_in, NULL, &created, &e2)) {
        snprintf(err, errsz, "AddSymbolicGradients \"%.60s\": %s%s%s", id, e2.message,
                 *e2.block_id ? " (block " : "", *e2.block_id ? e2.block_id : "");
        if (*e2.block_id) strncat(err, ")", errsz - strlen(err) - 1);
        return -1;
    }
    cJSON *c = cJSON_Parse(created);
    bf_string_free(created);
    const cJSON *grads = cJSON_GetObjectItem(c, "gradients");
    int rc = 0;
    cJSON_ArrayForEach(p, ph) {
        const bf_page *page = bf_session_page(s);
        /* grad_outputs[k] -> the gradient of the k-th input */
        int k = atoi(p->string + strcspn(p->string, "[") + 1);
        const char *g = k >= 0 && k < n_in ? cJSON_GetStringValue(cJSON_GetObjectItem(grads, wrt[k]))
                                           : NULL;
        const char *pid = cJSON_GetStringValue(p);
        if (!g || !pid) {
            snprintf(err, errsz, "AddSymbolicGradients \"%.60s\": %s has no gradient (input %d "
                     "of %d)", id, p->string, k, n_in);
            rc = -1;
            break;
        }
        /* every reader of the Placeholder reads the gradient instead */
        for (int b = 0; b < bf_page_block_count(page) && !rc; b++) {
            for (int q = 0; q < bf_page_block_input_count(page, b); q++) {
                const char *src = bf_page_block_input_source(page, b, q);
                char sid[128];
                if (!src || strcmp(ref_id(src, sid, sizeof sid), pid)) continue;
                if (bf_session_connect(s, bf_page_block_id(page, b),
                                       bf_page_block_input_name(page, b, q), g, &e2)) {
                    snprintf(err, errsz, "AddSymbolicGradients \"%.60s\": %s", id, e2.message);
                    rc = -1;
                    break;
                }
            }
        }
        if (!rc && bf_session_remove_block(s, pid, &e2)) {
            snprintf(err, errsz, "AddSymbolicGradients \"%.60s\": %s", id, e2.message);
            rc = -1;
        }
    }
    cJSON_Delete(c);
    return rc;
}

int enu_build_symbolic_gradients(bf_context *ctx, const char *page_json, const char *name,
                                 const char *dir, char **out, char *err, size_t errsz) {
    *out = NULL;
    cJSON *pj = cJSON_Parse(page_json);
    const cJSON *list = cJSON_GetObjectItem(cJSON_GetObjectItem(pj, "x-enuspace"),
                                            "symbolic_gradients");
    if (!cJSON_GetArraySize(list)) {
        cJSON_Delete(pj);
        return 0;
    }
    bf_page *page = NULL;
    bf_session *s = NULL;
    bf_error e = {0};
    int rc = -1;
    if (bf_page_parse(ctx, page_json, strlen(page_json), name, dir, BF_LOAD_INCOMPLETE, &page,
                      NULL, &e) ||
        bf_session_new(ctx, page, &s, &e)) {
        snprintf(err, errsz, "the imported page does not load for its symbolic gradients: %s",
                 e.message);
        if (!s) bf_page_free(page);
        goto done;
    }
    const cJSON *entry;
    cJSON_ArrayForEach(entry, list) {
        if (one(s, entry, err, errsz)) goto done;
    }
    if (bf_page_to_json(bf_session_page(s), out, &e)) {
        snprintf(err, errsz, "%s", e.message);
        goto done;
    }
    rc = 0;
done:
    bf_session_free(s);
    cJSON_Delete(pj);
    return rc;
}
