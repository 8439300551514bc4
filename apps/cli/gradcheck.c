/*
 * gradcheck.c - `blockflow gradcheck`, in two forms:
 *   gradcheck PAGE BLOCK [--json] [--eps E] [--tolerance T] [--samples N] [--seed S] [--gpu]:
 *     a gradient block (or both gradients of a forward block) against float64 central
 *     differences of L = sum(forward(x, w) * dy) and the adjoint identity
 *     (bf_session_gradcheck, which documents the method);
 *   gradcheck PAGE --loss ID [--json] [--eps E] [--tolerance T] [--samples N] [--seed S]:
 *     the whole page: the gradient each update block applies against float64 central
 *     differences of the loss with respect to its Variable (bf_session_check_gradients), as a
 *     table of one row per Variable.
 * Exit 0 when it passes, 1 when it fails, the usual codes for errors.
 */
#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static const char usage[] =
    "usage: blockflow gradcheck PAGE BLOCK [--json] [--eps E] [--tolerance T] [--samples N]\n"
    "                           [--seed S] [--gpu] [--feed ID=FILE.npy]...\n"
    "       blockflow gradcheck PAGE --loss ID [--json] [--eps E] [--tolerance T] [--samples N]\n"
    "                           [--seed S] [--feed ID=FILE.npy]...\n";

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}
static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
static const char *verdict(const cJSON *o) {
    return cJSON_IsTrue(cJSON_GetObjectItem(o, "pass")) ? "ok" : "FAILED";
}

static void print_text(const cJSON *r) {
    const char *fwd = str(r, "forward");
    printf("gradcheck %s (%s)%s%s: float64 central differences, step %g relative, "
           "tolerance %g\n",
           str(r, "block"), str(r, "type"), fwd ? " against forward block " : "",
           fwd ? fwd : "", num(r, "eps"), num(r, "tolerance"));
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "checks")) {
        printf("  d/d%-7s (%s): %.0f of %.0f elements, max relative error %.3g", str(c, "wrt"),
               str(c, "gradient_type"), num(c, "n_checked"), num(c, "n_elements"),
               num(c, "max_rel_error"));
        const cJSON *wi = cJSON_GetObjectItem(c, "worst_index"), *v;
        if (wi) {
            printf(" at [");
            int i = 0;
            cJSON_ArrayForEach(v, wi) printf("%s%.0f", i++ ? "," : "", v->valuedouble);
            printf("] (fd %.9g, analytic %.9g)", num(c, "fd"), num(c, "analytic"));
        }
        printf("  %s\n", verdict(c));
    }
    const cJSON *a = cJSON_GetObjectItem(r, "adjoint");
    printf("  adjoint: sum(y*dy) = %.12g", num(a, "forward"));
    const cJSON *v;
    cJSON_ArrayForEach(v, a) {
        if (!strcmp(v->string, "forward") || !cJSON_IsNumber(v) || !strcmp(v->string, "abs_sum") ||
            !strcmp(v->string, "max_rel_error"))
            continue;
        printf(", sum(%s*d%s) = %.12g", v->string, v->string, v->valuedouble);
    }
    printf("; max relative error %.3g  %s\n", num(a, "max_rel_error"), verdict(a));
    const cJSON *o = cJSON_GetObjectItem(r, "output_vs_f64");
    if (o)
        printf("  the block's %s output vs its float64 kernel: max relative difference %.3g "
               "(tolerance %g)  %s\n",
               str(o, "dtype"), num(o, "max_rel_diff"), num(o, "tolerance"), verdict(o));
    const cJSON *g = cJSON_GetObjectItem(r, "gpu");
    if (g && !cJSON_IsTrue(cJSON_GetObjectItem(g, "available")))
        printf("  gpu: no GPU (%s)\n", str(g, "reason") ? str(g, "reason") : "");
    else if (g && str(g, "error"))
        printf("  gpu: %s\n", str(g, "error"));
    else if (g)
        printf("  gpu: %s vs %s: max abs difference %.3g, max relative difference %.3g\n",
               str(g, "cpu_device"), str(g, "gpu_device"), num(g, "max_abs_diff"),
               num(g, "max_rel_diff"));
    printf("%s\n", cJSON_IsTrue(cJSON_GetObjectItem(r, "pass")) ? "PASS" : "FAIL");
}

/* The whole-page check: one row per Variable. */
static void print_page_text(const cJSON *r) {
    const cJSON *v, *vars = cJSON_GetObjectItem(r, "variables");
    int wv = 8, wg = 8;
    cJSON_ArrayForEach(v, vars) {
        const char *a = str(v, "variable"), *g = str(v, "gradient");
        if (a && (int)strlen(a) > wv) wv = (int)strlen(a);
        if (g && (int)strlen(g) > wg) wg = (int)strlen(g);
    }
    printf("gradcheck of %s: float64 central differences, step %g relative, tolerance %g\n",
           str(r, "loss") ? str(r, "loss") : "?", num(r, "eps"), num(r, "tolerance"));
    printf("%-*s  %-*s  %16s  %13s  %s\n", wv, "variable", wg, "gradient", "checked/elements",
           "max rel error", "pass");
    cJSON_ArrayForEach(v, vars) {
        char counts[48];
        snprintf(counts, sizeof(counts), "%.0f/%.0f", num(v, "n_checked"), num(v, "n_elements"));
        printf("%-*s  %-*s  %16s  %13.3g  %s", wv, str(v, "variable") ? str(v, "variable") : "?",
               wg, str(v, "gradient") ? str(v, "gradient") : "?", counts,
               num(v, "max_rel_error"), verdict(v));
        const cJSON *wi = cJSON_GetObjectItem(v, "worst_index"), *x;
        if (wi && !cJSON_IsTrue(cJSON_GetObjectItem(v, "pass"))) {
            printf("  worst at [");
            int i = 0;
            cJSON_ArrayForEach(x, wi) printf("%s%.0f", i++ ? "," : "", x->valuedouble);
            printf("]: fd %.9g, analytic %.9g", num(v, "fd"), num(v, "analytic"));
        }
        printf("\n");
    }
    printf("%s\n", cJSON_IsTrue(cJSON_GetObjectItem(r, "pass")) ? "PASS" : "FAIL");
}

int cli_gradcheck(int argc, char **argv) {
    const char *page = NULL, *block = NULL, *loss = NULL;
    int json = 0;
    bf_gradcheck_options o;
    bf_gradcheck_options_init(&o);
    const char *feeds[64];
    int n_feeds = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--feed") && v && n_feeds < 64) feeds[n_feeds++] = argv[++i];
        else if (!strcmp(a, "--gpu")) o.compare_gpu = 1;
        else if (!strcmp(a, "--loss") && v) loss = argv[++i];
        else if (!strcmp(a, "--eps") && v) o.eps = strtod(argv[++i], &end);
        else if (!strcmp(a, "--tolerance") && v) o.tolerance = strtod(argv[++i], &end);
        else if (!strcmp(a, "--samples") && v) o.samples = (int)strtol(argv[++i], &end, 10);
        else if (!strcmp(a, "--seed") && v) o.seed = strtoull(argv[++i], &end, 10);
        else if (a[0] != '-' && !page) page = a;
        else if (a[0] != '-' && !block) block = a;
        else {
            fprintf(stderr, "blockflow gradcheck: unexpected argument \"%s\"\n%s", a, usage);
            return EXIT_USAGE;
        }
        if (end && (*end || end == argv[i])) {
            fprintf(stderr, "blockflow gradcheck: %s takes a number\n", a);
            return EXIT_USAGE;
        }
    }
    if (!page || (!block && !loss) || o.eps < 0 || o.tolerance < 0 || o.samples < 0) {
        fprintf(stderr, "%s", usage);
        return EXIT_USAGE;
    }
    if (block && loss) {
        fprintf(stderr, "blockflow gradcheck: give BLOCK (one block's gradients) or --loss ID "
                        "(the whole page), not both\n%s", usage);
        return EXIT_USAGE;
    }
    if (loss && o.compare_gpu) {
        fprintf(stderr, "blockflow gradcheck: --gpu goes with BLOCK (the one-block form)\n%s",
                usage);
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
    char *text = NULL;
    bf_error e = {0};
    if (loss ? bf_session_check_gradients(s, loss, &o, &text, &e)
             : bf_session_gradcheck(s, block, &o, &text, &e)) {
        rc = cli_fail(&e);
    } else {
        cJSON *r = cJSON_Parse(text);
        if (!r) {
            fprintf(stderr, "blockflow gradcheck: out of memory\n");
            rc = EXIT_RUN;
        } else {
            if (json) printf("%s\n", text);
            else if (loss) print_page_text(r);
            else print_text(r);
            rc = cJSON_IsTrue(cJSON_GetObjectItem(r, "pass")) ? EXIT_OK : 1;
        }
        cJSON_Delete(r);
    }
    bf_string_free(text);
    bf_session_free(s);
    bf_context_free(ctx);
    return rc;
}
