/*
 * report.c - what `run` and `check` tell their user: the per-block table (summarised past
 * CLI_TABLE_ROWS rows: the slowest and the failed blocks are always shown), its footer with the
 * run's peak memory, the progress line on a terminal, status words, and the one JSON document
 * of --json.
 *
 * --json writes exactly one document on stdout, whatever happens (a usage error excepted):
 *   run:   {"ok", "status", "peak_bytes", "cached_bytes", "blocks": [{"id", "type", "device",
 *           "shape", "dtype", "ms", "status", "note"}], "problems": [...], "outputs": [...],
 *           and with --print "values": {FETCH: {"shape", "dtype", "values": nested lists}}}
 *   check: bf_session_check_json's document ({"ok", "problems", "blocks"}), or {"ok": false,
 *          "problems": [...]} when the page does not load.
 * "problems" are the objects of bf_session_check_json; "status" is a word ("ran", "reused",
 * "failed", "cancelled", ...), as in the table.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *cli_status_word(bf_status st) {
    switch (st) {
    case BF_OK: return "ok";
    case BF_ECANCELED: return "cancelled";
    case BF_ETIMEDOUT: return "timed out";
    case BF_ENOMEM: return "out of memory";
    case BF_ELIMIT: return "over a limit";
    case BF_EDEVICE: return "device error";
    case BF_EUNSUPPORTED: return "unsupported";
    case BF_EIO: return "i/o error";
    case BF_ESCHEMA: case BF_EATTR: case BF_ESHAPE: case BF_EDTYPE: case BF_EPARSE:
    case BF_EINVAL: return "invalid";
    default: return "failed";
    }
}

static const char *block_status(const bf_block_stats *st) {
    return st->status ? cli_status_word(st->status) : st->reused ? "reused" : st->ran ? "ran"
                                                                                      : "-";
}

void cli_shape_text(int rank, const int64_t *dims, char *buf, size_t size) {
    if (rank < 0) {
        snprintf(buf, size, "?");
        return;
    }
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < rank && n < size; i++)
        n += dims[i] < 0 ? (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "")
                         : (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "",
                                            (long long)dims[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

void cli_bytes_text(uint64_t b, char *buf, size_t size) {
    if (b < 1024) snprintf(buf, size, "%llu B", (unsigned long long)b);
    else if (b < (1u << 20)) snprintf(buf, size, "%.1f KiB", (double)b / 1024);
    else if (b < (1u << 30)) snprintf(buf, size, "%.1f MiB", (double)b / (1 << 20));
    else snprintf(buf, size, "%.2f GiB", (double)b / (1 << 30));
}

int cli_id_width(const bf_page *page, int min) {
    int w = min;
    for (int i = 0; i < bf_page_block_count(page); i++) {
        int n = (int)strlen(bf_page_block_id(page, i));
        if (n > w) w = n;
    }
    return w > 40 ? 40 : w;
}

static bool shown(const bf_block_stats *st) { return st->ran || st->reused || st->status; }

static void row(const bf_block_stats *st, int w) {
    char shape[96] = "-", ms[32] = "-";
    if (st->n_outputs > 0) cli_shape_text(st->rank[0], st->dims[0], shape, sizeof(shape));
    if (st->ran) snprintf(ms, sizeof(ms), "%.3f", st->ms);
    printf("%-*s %-36s %-6s %-18s %9s  %s%s%s\n", w, st->id, st->type,
           st->device[0] ? st->device : "-", shape, ms, block_status(st),
           st->note[0] ? "  " : "", st->note);
}

void cli_print_run_table(bf_session *s) {
    const bf_page *page = bf_session_page(s);
    int n = bf_page_block_count(page), w = cli_id_width(page, 5), count = 0;
    double total = 0;
    for (int i = 0; i < n; i++) {
        const bf_block_stats *st = bf_session_block_stats(s, i);
        count += shown(st);
        if (st->ran) total += st->ms;
    }
    if (!count) return;
    printf("%-*s %-36s %-6s %-18s %9s  %s\n", w, "block", "type", "device", "shape", "ms",
           "status");
    if (count <= CLI_TABLE_ROWS) {
        for (int i = 0; i < n; i++)
            if (shown(bf_session_block_stats(s, i))) row(bf_session_block_stats(s, i), w);
    } else {
        /* A large page: the failed blocks and the slowest, in page order. */
        double cut = INFINITY; /* the CLI_TABLE_ROWS-th largest time */
        int keep = CLI_TABLE_ROWS, left = 0;
        for (int k = 0; k < keep; k++) {
            double best = -1;
            for (int i = 0; i < n; i++) {
                const bf_block_stats *st = bf_session_block_stats(s, i);
                if (st->ran && st->ms < cut && st->ms > best) best = st->ms;
            }
            if (best < 0) break;
            cut = best;
        }
        int printed = 0;
        for (int i = 0; i < n; i++) {
            const bf_block_stats *st = bf_session_block_stats(s, i);
            if (!shown(st)) continue;
            if (st->status || (st->ran && st->ms >= cut && printed < keep)) {
                row(st, w);
                printed++;
            } else {
                left++;
            }
        }
        printf("... %d more blocks not shown (the %d slowest and any that failed are; --json "
               "lists all)\n", left, keep);
    }
    char peak[32];
    cli_bytes_text(bf_session_peak_bytes(s), peak, sizeof(peak));
    printf("%d blocks, %.3f ms of kernels, peak memory %s (%llu bytes)\n", count, total, peak,
           (unsigned long long)bf_session_peak_bytes(s));
}

/* ---- progress ----------------------------------------------------------------------------- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_init(cli_progress *p, bf_session *s, bool enabled) {
    memset(p, 0, sizeof(*p));
    p->enabled = enabled && isatty(STDERR_FILENO);
    p->t0 = now_s();
    (void)s;
}

void cli_progress_event(bf_event_kind kind, const bf_block_stats *st, void *user) {
    cli_progress *p = user;
    if (!p->enabled) return;
    if (kind == BF_EVENT_BLOCK_DONE) p->done++;
    if (kind == BF_EVENT_BLOCK_START) p->started++;
    double t = now_s();
    /* quiet for the first half second (a quick run prints nothing), then at most 10 a second */
    if (t - p->t0 < 0.5 || t - p->last < 0.1) return;
    p->last = t;
    p->drawn = true;
    fprintf(stderr, "\r\033[K[%.1f s] %d done, running %.40s (%s)", t - p->t0, p->done, st->id,
            st->type);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->drawn) fprintf(stderr, "\r\033[K");
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* A problem as bf_session_check_json writes it (bf_error_json), as a cJSON object. */
static cJSON *problem_json(const bf_error *e) {
    char *text = NULL;
    if (bf_error_json(e, &text, NULL)) return cJSON_CreateNull();
    cJSON *o = cJSON_Parse(text);
    bf_string_free(text);
    return o ? o : cJSON_CreateNull();
}

cJSON *cli_problems_json(const bf_diags *d, const bf_error *e) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; d && i < bf_diags_count(d); i++)
        cJSON_AddItemToArray(a, problem_json(bf_diags_at(d, i)));
    if ((!d || !bf_diags_errors(d)) && e && e->status) cJSON_AddItemToArray(a, problem_json(e));
    return a;
}

void cli_json_print(cJSON *doc) {
    char *text = cJSON_Print(doc);
    if (text) {
        fputs(text, stdout);
        fputc('\n', stdout);
    }
    free(text);
    cJSON_Delete(doc);
}

/* Elements [*i, ...) of `t` as nested lists from axis `axis` on (NaN and Inf become null:
 * JSON has no such numbers). NULL when out of memory. */
static cJSON *values_at(const bf_tensor *t, int axis, int64_t *i) {
    if (axis == bf_tensor_rank(t)) {
        double v = bf_tensor_get_f64(t, (*i)++);
        return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
    }
    cJSON *a = cJSON_CreateArray();
    for (int64_t k = 0; a && k < bf_tensor_dims(t)[axis]; k++) {
        cJSON *x = values_at(t, axis + 1, i);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

cJSON *cli_tensor_json(const bf_tensor *t) {
    int64_t i = 0;
    cJSON *o = cJSON_CreateObject();
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    for (int k = 0; shape && k < bf_tensor_rank(t); k++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)bf_tensor_dims(t)[k]));
    cJSON_AddStringToObject(o, "dtype", bf_dtype_name(bf_tensor_dtype(t)));
    cJSON *v = values_at(t, 0, &i);
    if (!o || !v || !cJSON_AddItemToObject(o, "values", v)) {
        cJSON_Delete(v);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *cli_run_json(bf_session *s, bf_status st, const bf_diags *d, const bf_error *e) {
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddBoolToObject(doc, "ok", st == BF_OK);
    cJSON_AddStringToObject(doc, "status", st ? cli_status_word(st) : "ran");
    cJSON *blocks = cJSON_AddArrayToObject(doc, "blocks");
    if (s) {
        cJSON_AddNumberToObject(doc, "peak_bytes", (double)bf_session_peak_bytes(s));
        cJSON_AddNumberToObject(doc, "cached_bytes", (double)bf_session_cached_bytes(s));
        const bf_page *page = bf_session_page(s);
        for (int i = 0; i < bf_page_block_count(page); i++) {
            const bf_block_stats *bs = bf_session_block_stats(s, i);
            cJSON *b = cJSON_CreateObject();
            cJSON_AddStringToObject(b, "id", bs->id);
            cJSON_AddStringToObject(b, "type", bs->type);
            cJSON_AddStringToObject(b, "device", bs->device);
            if (bs->n_outputs > 0 && bs->rank[0] >= 0) {
                cJSON *sh = cJSON_AddArrayToObject(b, "shape");
                for (int k = 0; k < bs->rank[0]; k++)
                    cJSON_AddItemToArray(sh, bs->dims[0][k] < 0 ? cJSON_CreateNull()
                                                               : cJSON_CreateNumber(
                                                                     (double)bs->dims[0][k]));
                cJSON_AddStringToObject(b, "dtype", bf_dtype_name(bs->dtype[0]));
            } else {
                cJSON_AddNullToObject(b, "shape");
            }
            if (bs->ran) cJSON_AddNumberToObject(b, "ms", bs->ms);
            else cJSON_AddNullToObject(b, "ms");
            cJSON_AddStringToObject(b, "status", block_status(bs));
            cJSON_AddStringToObject(b, "note", bs->note);
            cJSON_AddItemToArray(blocks, b);
        }
    }
    cJSON_AddItemToObject(doc, "problems", cli_problems_json(d, e));
    cJSON_AddArrayToObject(doc, "outputs");
    return doc;
}
