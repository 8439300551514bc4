/*
 * common.c - status names, error filling, diagnostics lists, the replaceable allocator and the
 * clock. The allocator hooks are the one piece of process-wide mutable state besides the
 * (constant) registry: like uv_replace_allocator, they are set once, before anything else,
 * and cJSON is pointed at them so that fault-injection tests see every allocation.
 */
#include "common.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* ---- status ------------------------------------------------------------------------------ */

const char *bf_status_name(bf_status status) {
    switch (status) {
    case BF_OK: return "OK";
#define BF_STATUS_NAME_(name, value, text) \
    case BF_##name: return #name;
        BF_STATUS_MAP(BF_STATUS_NAME_)
#undef BF_STATUS_NAME_
    }
    return "UNKNOWN";
}

const char *bf_strerror(bf_status status) {
    switch (status) {
    case BF_OK: return "success";
#define BF_STATUS_TEXT_(name, value, text) \
    case BF_##name: return text;
        BF_STATUS_MAP(BF_STATUS_TEXT_)
#undef BF_STATUS_TEXT_
    }
    return "unknown error";
}

void bf_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "blockflow: internal assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

/* ---- allocation ---------------------------------------------------------------------------- */

static void *default_malloc(size_t size, void *user) { (void)user; return malloc(size); }
static void *default_realloc(void *p, size_t size, void *user) {
    (void)user;
    return realloc(p, size);
}
static void default_free(void *p, void *user) { (void)user; free(p); }

static struct {
    bf_malloc_fn m;
    bf_realloc_fn r;
    bf_free_fn f;
    void *user;
} alloc_hooks = {default_malloc, default_realloc, default_free, NULL};

static void *cjson_malloc(size_t size) { return bf_malloc(size); }
static void cjson_free(void *p) { bf_free(p); }

void bf_replace_allocator(bf_malloc_fn m, bf_realloc_fn r, bf_free_fn f, void *user) {
    alloc_hooks.m = m ? m : default_malloc;
    alloc_hooks.r = r ? r : default_realloc;
    alloc_hooks.f = f ? f : default_free;
    alloc_hooks.user = user;
    cJSON_Hooks hooks = {cjson_malloc, cjson_free};
    cJSON_InitHooks(&hooks);
}

static _Thread_local unsigned alloc_failures;

unsigned bf_alloc_failures(void) { return alloc_failures; }

void *bf_malloc(size_t size) {
    void *p = alloc_hooks.m(size ? size : 1, alloc_hooks.user);
    if (!p) alloc_failures++;
    return p;
}

void *bf_calloc(size_t n, size_t size) {
    size_t total;
    if (!bf_size_mul(n, size, &total)) return NULL;
    void *p = bf_malloc(total);
    if (p) memset(p, 0, total);
    return p;
}

void *bf_realloc(void *ptr, size_t size) {
    void *p = alloc_hooks.r(ptr, size ? size : 1, alloc_hooks.user);
    if (!p) alloc_failures++;
    return p;
}

void bf_free(void *ptr) {
    if (ptr) alloc_hooks.f(ptr, alloc_hooks.user);
}

char *bf_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = bf_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void bf_string_free(char *s) { bf_free(s); }

/* Aligned blocks keep the raw pointer just before the aligned address. */
#define BF_ALIGN 64

void *bf_aligned_alloc(size_t size, bool zero) {
    size_t total;
    if (!bf_size_add(size, BF_ALIGN + sizeof(void *), &total)) return NULL;
    unsigned char *raw = bf_malloc(total);
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)raw + sizeof(void *) + BF_ALIGN - 1) & ~(uintptr_t)(BF_ALIGN - 1);
    ((void **)a)[-1] = raw;
    bf_advise_huge((void *)a, size);
    if (zero) memset((void *)a, 0, size);
    return (void *)a;
}

/*
 * Large buffers ask for transparent huge pages, as numpy does for its arrays (numpy's
 * npy_alloc_cache: madvise(MADV_HUGEPAGE) from 4 MiB). On a kernel whose THP mode is
 * "madvise" (a common default), the first touch of fresh memory then costs one fault per
 * 2 MiB instead of one per 4 KiB: a 51 MB tensor written once was 10x faster here. The advice
 * covers the whole pages inside the buffer; it is only advice, so a failure changes nothing.
 */
void bf_advise_huge(void *ptr, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size < BF_HUGE_MIN) return;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uintptr_t start = ((uintptr_t)ptr + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    uintptr_t end = ((uintptr_t)ptr + size) & ~((uintptr_t)pg - 1);
    if (end > start) (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)ptr, (void)size;
#endif
}

void bf_aligned_free(void *ptr) {
    if (ptr) bf_free(((void **)ptr)[-1]);
}

/* ---- errors ------------------------------------------------------------------------------ */

void bf_strlcpy(char *dst, const char *src, size_t size) {
    if (!size) return;
    size_t n = src ? strlen(src) : 0;
    if (n >= size) n = size - 1;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

void bf_error_clear(bf_error *e) {
    if (e) memset(e, 0, sizeof(*e));
}

bf_status bf_verr(bf_error *err, bf_status status, const char *code, const char *fmt,
                  va_list ap) {
    if (!err) return status;
    err->status = status;
    bf_strlcpy(err->code, code ? code : "", sizeof(err->code));
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    return status;
}

bf_status bf_err(bf_error *err, bf_status status, const char *code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bf_verr(err, status, code, fmt, ap);
    va_end(ap);
    return status;
}

void bf_err_at(bf_error *err, const char *port, const char *attr) {
    if (!err) return;
    if (port) bf_strlcpy(err->port, port, sizeof(err->port));
    if (attr) bf_strlcpy(err->attr, attr, sizeof(err->attr));
}

int bf_error_format(const bf_error *e, char *buf, size_t size) {
    if (!e) return snprintf(buf, size, "(no error)");
    if (!e) return snprintf(buf, size, "no error");
    char where[512] = "";
    size_t n = 0;
    if (e->page[0]) n += (size_t)snprintf(where + n, sizeof(where) - n, "%s: ", e->page);
    if (e->line > 0 && n < sizeof(where))
        n += (size_t)snprintf(where + n, sizeof(where) - n, "line %d, column %d: ", e->line,
                              e->column);
    if (e->block_id[0] && n < sizeof(where))
        n += (size_t)snprintf(where + n, sizeof(where) - n, "block \"%s\": ", e->block_id);
    if (e->port[0] && n < sizeof(where))
        n += (size_t)snprintf(where + n, sizeof(where) - n, "port \"%s\": ", e->port);
    if (e->attr[0] && n < sizeof(where))
        n += (size_t)snprintf(where + n, sizeof(where) - n, "attribute \"%s\": ", e->attr);
    const char *msg = e->message[0] ? e->message : bf_strerror(e->status);
    if (e->status == BF_OK) return snprintf(buf, size, "%swarning: %s", where, msg);
    return snprintf(buf, size, "%s%s", where, msg);
}

/* ---- diagnostics --------------------------------------------------------------------------- */

struct bf_diags {
    bf_error *items;
    size_t n, cap;
};

bf_diags *bf_diags_new(void) { return bf_calloc(1, sizeof(bf_diags)); }

void bf_diags_free(bf_diags *d) {
    if (!d) return;
    bf_free(d->items);
    bf_free(d);
}

void bf_diags_clear(bf_diags *d) {
    if (!d) return;
    if (d) d->n = 0;
}

size_t bf_diags_count(const bf_diags *d) { return d ? d->n : 0; }

size_t bf_diags_errors(const bf_diags *d) {
    if (!d) return 0;
    size_t k = 0;
    for (size_t i = 0; d && i < d->n; i++) k += d->items[i].status != BF_OK;
    return k;
}

const bf_error *bf_diags_at(const bf_diags *d, size_t i) {
    if (!d) return NULL;
    return d && i < d->n ? &d->items[i] : NULL;
}

/*
 * A hostile page can hold a problem per block (100000 by default) and a record is 1 KiB, so
 * the list keeps at most BF_DIAGS_MAX records: the last one says that more were dropped (with
 * the status of the first dropped one, so an error is never hidden behind a warning).
 */
#define BF_DIAGS_MAX 1000

bool bf_diags_push(bf_diags *d, const bf_error *e) {
    if (!d) return true;
    if (d->n >= BF_DIAGS_MAX) return true;
    if (d->n == BF_DIAGS_MAX - 1) {
        bf_error more = {0};
        bf_err(&more, e->status, "too_many_problems",
               "more than %d problems: the rest are not listed", BF_DIAGS_MAX - 1);
        bf_strlcpy(more.page, e->page, sizeof(more.page));
        e = &more;
        if (d->n == d->cap) {
            bf_error *items = bf_realloc(d->items, BF_DIAGS_MAX * sizeof(bf_error));
            if (!items) return false;
            d->items = items;
            d->cap = BF_DIAGS_MAX;
        }
        d->items[d->n++] = *e;
        return true;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8, bytes;
        if (!bf_size_mul(cap, sizeof(bf_error), &bytes)) return false;
        bf_error *items = bf_realloc(d->items, bytes);
        if (!items) return false;
        d->items = items;
        d->cap = cap;
    }
    d->items[d->n++] = *e;
    return true;
}

/* ---- clock --------------------------------------------------------------------------------- */

double bf_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
