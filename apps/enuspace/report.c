/*
 * report.c - the import report (enu_import's JSON) as lines for a terminal: what was read,
 * what each enuSpace block became, the values read from the .dat, the outputs, what could not
 * be mapped and what it feeds.
 */
#include "enuspace.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf {
    char *s;
    size_t n, cap;
    bool oom;
} buf;

static void put(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void put(buf *b, const char *fmt, ...) {
    if (b->oom) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

static const char *s(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

char *enu_report_text(const char *report_json) {
    cJSON *r = cJSON_Parse(report_json ? report_json : "");
    if (!r) return NULL;
    buf b = {0};
    const cJSON *e;
    put(&b, "%s (%s%s%s): %d blocks, %d wires read\n", s(r, "page"), s(r, "source"),
        *s(r, "enuspace_version") ? ", enuSpace " : "", s(r, "enuspace_version"),
        cJSON_GetObjectItem(r, "blocks_read") ? cJSON_GetObjectItem(r, "blocks_read")->valueint : 0,
        cJSON_GetObjectItem(r, "wires_read") ? cJSON_GetObjectItem(r, "wires_read")->valueint : 0);
    const cJSON *mapped = cJSON_GetObjectItem(r, "mapped");
    put(&b, "  mapped %d blocks:", cJSON_GetArraySize(mapped));
    int k = 0;
    cJSON_ArrayForEach(e, mapped) {
        const char *id = s(e, "id"), *blk = s(e, "block");
        if (k++ % 4 == 0) put(&b, "\n   ");
        put(&b, " %s %s -> %s%s%s", id, s(e, "type"), s(e, "op"), strcmp(id, blk) ? " as " : "",
            strcmp(id, blk) ? blk : "");
        put(&b, ";");
    }
    put(&b, "\n");
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "mappings")) put(&b, "  mapping: %s\n", e->valuestring);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "literals"))
        put(&b, "  literal %s.%s \"%s\" -> Const %s (%s)\n", s(e, "block"), s(e, "pin"),
            s(e, "text"), s(e, "const"), s(e, "dtype"));
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "dat_values"))
        put(&b, "  .dat: %s.%s, %d %s values at offset %.0f\n", s(e, "block"), s(e, "pin"),
            cJSON_GetObjectItem(e, "values")->valueint, s(e, "dtype"),
            cJSON_GetObjectItem(e, "offset")->valuedouble);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "dropped"))
        put(&b, "  dropped %s (%s): %s\n", s(e, "id"), s(e, "type"), s(e, "why"));
    const cJSON *caches = cJSON_GetObjectItem(r, "result_caches_dropped");
    if (caches && caches->valueint)
        put(&b, "  dropped %d result caches (result_* pins: display only)\n", caches->valueint);
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "sessions")) {
        put(&b, "  session %s: %s, run targets:", s(e, "id"),
            cJSON_IsTrue(cJSON_GetObjectItem(e, "infinite_loop")) ? "steps back to back "
                                                                   "(INFINITE_LOOP)"
                                                                 : "one step per run");
        const cJSON *t;
        int nt = 0;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(e, "run_targets")) put(&b, " %s", t->valuestring), nt++;
        put(&b, "%s\n", nt ? "" : " none");
    }
    put(&b, "  outputs:");
    int no = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "outputs")) put(&b, " %s", e->valuestring), no++;
    put(&b, "%s\n", no ? "" : " none");
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "unsupported")) {
        put(&b, "  unsupported %s (%s): %s", s(e, "id"), s(e, "type"), s(e, "why"));
        const cJSON *f;
        int nf = 0;
        cJSON_ArrayForEach(f, cJSON_GetObjectItem(e, "feeds"))
            put(&b, "%s%s", nf++ ? ", " : "; feeds ", f->valuestring);
        put(&b, "\n");
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "placeholders"))
        put(&b, "  placeholder %s stands for %s:%s\n", s(e, "placeholder"), s(e, "for"),
            s(e, "port"));
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(r, "notes")) put(&b, "  note: %s\n", e->valuestring);
    cJSON_Delete(r);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
