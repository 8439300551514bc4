/*
 * explain.c - `blockflow explain PAGE BLOCK INDEX... [--port P] [--json] [--max-terms N]
 * [--feed ID=FILE]...`:
 * where one number of a convolution (gradient) comes from. Runs what the element needs, then
 * prints its value, the padding (SAME's odd pixel marked) and the terms of its sum, pairs of
 * operand elements in the tensors' own layouts (bf_session_explain). The text form lists the
 * first terms and summarises the rest; --json prints the library's JSON with every term
 * (unless --max-terms caps the list; the sum always covers all of them).
 */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

enum { SHOWN_TERMS = 12 };

static const char usage[] =
    "usage: blockflow explain PAGE BLOCK INDEX... [--port P] [--json] [--max-terms N]\n"
    "                         [--feed ID=FILE.npy]...\n"
    "  INDEX: one integer per axis of the block's output, in its own layout\n"
    "  (NHWC or NCHW; HWIO for a filter gradient; [fh, fw, C, M] for depthwise)\n";

static void print_index(const cJSON *idx) {
    const cJSON *v;
    int i = 0;
    putchar('[');
    cJSON_ArrayForEach(v, idx) printf("%s%lld", i++ ? "," : "", (long long)v->valuedouble);
    putchar(']');
}

static void print_operand(const cJSON *o) {
    printf("%s", cJSON_GetObjectItem(o, "tensor")->valuestring);
    print_index(cJSON_GetObjectItem(o, "index"));
    printf(" = %-10.6g", cJSON_GetObjectItem(o, "value")->valuedouble);
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void print_text(const cJSON *r) {
    const cJSON *pad = cJSON_GetObjectItem(r, "padding"), *odd = cJSON_GetObjectItem(pad, "odd");
    bool odd_b = false, odd_r = false;
    const cJSON *v;
    cJSON_ArrayForEach(v, odd) {
        odd_b = odd_b || !strcmp(v->valuestring, "bottom");
        odd_r = odd_r || !strcmp(v->valuestring, "right");
    }
    printf("%s", cJSON_GetObjectItem(r, "block")->valuestring);
    print_index(cJSON_GetObjectItem(r, "index"));
    printf(" = %.9g   (%s, %s)\n", num(r, "value"), cJSON_GetObjectItem(r, "type")->valuestring,
           cJSON_GetObjectItem(r, "dtype")->valuestring);
    printf("padding %s: top %.0f, bottom %.0f%s, left %.0f, right %.0f%s\n",
           cJSON_GetObjectItem(pad, "mode")->valuestring, num(pad, "top"), num(pad, "bottom"),
           odd_b ? " (SAME's odd pixel)" : "", num(pad, "left"), num(pad, "right"),
           odd_r ? " (SAME's odd pixel)" : "");
    const cJSON *ops = cJSON_GetObjectItem(r, "operands");
    double n = num(r, "n_terms"), np = num(r, "n_padded");
    printf("sum of %.0f terms %s x %s", n, cJSON_GetObjectItem(ops, "a")->valuestring,
           cJSON_GetObjectItem(ops, "b")->valuestring);
    if (np > 0) printf(" (%.0f window taps fell in the padding and read zeros)", np);
    printf(":\n");
    const cJSON *terms = cJSON_GetObjectItem(r, "terms"), *t;
    int shown = 0;
    cJSON_ArrayForEach(t, terms) {
        if (shown == SHOWN_TERMS) break;
        const cJSON *a = cJSON_GetObjectItem(t, "a"), *b = cJSON_GetObjectItem(t, "b");
        printf("  ");
        print_operand(a);
        printf(" x ");
        print_operand(b);
        printf(" -> %.6g\n", num(a, "value") * num(b, "value"));
        shown++;
    }
    if (n > shown) printf("  ... and %.0f more terms (--json lists them all)\n", n - shown);
    printf("sum of products = %.9g, value = %.9g, |difference| = %.3g (sum of |terms| %.6g)\n",
           num(r, "sum"), num(r, "value"), num(r, "max_abs_diff"), num(r, "abs_sum"));
}

int cli_explain(int argc, char **argv) {
    const char *page = NULL, *block = NULL, *port = NULL;
    int64_t index[8];
    int rank = 0, json = 0;
    long long max_terms = -1;
    const char *feeds[64];
    int n_feeds = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--feed") && i + 1 < argc && n_feeds < 64) feeds[n_feeds++] = argv[++i];
        else if (!strcmp(a, "--port") && i + 1 < argc) port = argv[++i];
        else if (!strcmp(a, "--max-terms") && i + 1 < argc) {
            errno = 0;
            max_terms = strtoll(argv[++i], &end, 10);
            if (errno || *end || max_terms < 1) {
                fprintf(stderr, "blockflow explain: --max-terms takes a positive number\n");
                return EXIT_USAGE;
            }
        } else if (!page && a[0] != '-') page = a;
        else if (!block && (a[0] != '-' || !a[1])) block = a;
        else if (page && block && rank < 8 && (errno = 0, index[rank] = strtoll(a, &end, 10),
                                               !errno && !*end && end != a))
            rank++;
        else {
            fprintf(stderr, "blockflow explain: unexpected argument \"%s\"\n%s", a, usage);
            return EXIT_USAGE;
        }
    }
    if (!page || !block || !rank) {
        fprintf(stderr, "%s", usage);
        return EXIT_USAGE;
    }
    bf_context *ctx;
    bf_session *s;
    int rc = cli_open_session(page, &ctx, &s);
    if (rc) return rc;
    if ((rc = cli_feed_all(ctx, s, feeds, n_feeds))) {
        bf_session_free(s);
        bf_context_free(ctx);
        return rc;
    }
    bf_explain_options o;
    bf_explain_options_init(&o);
    o.port = port;
    o.max_terms = json ? max_terms : SHOWN_TERMS;
    char *text = NULL;
    bf_error e = {0};
    if (bf_session_explain(s, block, index, rank, &o, &text, &e)) {
        rc = e.status == BF_EINVAL ? (cli_print_error(&e), EXIT_USAGE) : cli_fail(&e);
    } else if (json) {
        printf("%s\n", text);
    } else {
        cJSON *r = cJSON_Parse(text);
        if (r) print_text(r);
        else rc = EXIT_RUN, fprintf(stderr, "blockflow explain: out of memory\n");
        cJSON_Delete(r);
    }
    bf_string_free(text);
    bf_session_free(s);
    bf_context_free(ctx);
    return rc;
}
