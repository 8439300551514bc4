/*
 * grad.c - `blockflow grad`, in two forms:
 *   grad PAGE BLOCK [--dy SOURCE]: the gradient blocks of one forward block (Conv2D:
 *     Conv2DBackpropFilter and Conv2DBackpropInput, with their shape constants and an
 *     out_backprop Placeholder unless --dy names a source), as tf.gradients builds them
 *     (bf_session_add_gradients);
 *   grad PAGE --loss ID [--wrt V1,V2] [--optimizer SPEC]: the backward pass of the whole page,
 *     the gradient of the loss with respect to its Variables, and with --optimizer the update
 *     blocks that train them (bf_session_build_gradients); --data-parallel [--ranks K] puts an
 *     AllReduce (mean) on each Variable's gradient, for a job of K ranks.
 * Either prints the page in canonical form, rewrites the file with --in-place or writes OUT
 * with -o OUT (atomically). What was added goes to stderr unless --quiet.
 */
#include "cli.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <string.h>

#define MAX_WRT 256

static const char usage[] =
    "usage: blockflow grad PAGE BLOCK [--dy SOURCE] [--in-place | -o OUT] [--quiet]\n"
    "       blockflow grad PAGE --loss ID [--wrt VAR,...] [--optimizer SPEC]\n"
    "                          [--in-place | -o OUT] [--quiet]\n";

static int usage_error(const char *fmt, const char *a) {
    fprintf(stderr, "blockflow grad: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (blockflow help grad)\n");
    return EXIT_USAGE;
}

/* What bf_session_build_gradients made, for people: each Variable's gradient and update. */
static void print_created(const char *json) {
    cJSON *d = cJSON_Parse(json);
    if (!d) {
        fprintf(stderr, "added: %s\n", json);
        return;
    }
    const cJSON *g, *u = cJSON_GetObjectItem(d, "updates"), *b;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(d, "gradients")) {
        const cJSON *up = cJSON_GetObjectItem(u, g->string);
        fprintf(stderr, "d(loss)/d(%s) = %s", g->string,
                cJSON_IsString(g) ? g->valuestring : "?");
        if (cJSON_IsString(up)) fprintf(stderr, ", updated by %s", up->valuestring);
        fputc('\n', stderr);
    }
    int n = cJSON_GetArraySize(cJSON_GetObjectItem(d, "blocks")), i = 0;
    fprintf(stderr, "added %d block%s:", n, n == 1 ? "" : "s");
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(d, "blocks"))
        fprintf(stderr, "%s%s", i++ ? ", " : " ", cJSON_IsString(b) ? b->valuestring : "?");
    fputc('\n', stderr);
    cJSON_Delete(d);
}

int cli_grad(int argc, char **argv) {
    const char *page = NULL, *block = NULL, *dy = NULL, *loss = NULL, *optimizer = NULL,
               *out = NULL, *wrt_arg = NULL;
    bool in_place = false, quiet = false, data_parallel = false;
    int ranks = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool value = !strcmp(a, "--dy") || !strcmp(a, "--loss") || !strcmp(a, "--wrt") ||
                     !strcmp(a, "--optimizer") || !strcmp(a, "-o") || !strcmp(a, "--out") ||
                     !strcmp(a, "--ranks");
        if (value && i + 1 >= argc) return usage_error("%s needs a value", a);
        if (!strcmp(a, "--in-place")) in_place = true;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) quiet = true;
        else if (!strcmp(a, "--dy")) dy = argv[++i];
        else if (!strcmp(a, "--loss")) loss = argv[++i];
        else if (!strcmp(a, "--wrt")) wrt_arg = argv[++i];
        else if (!strcmp(a, "--optimizer")) optimizer = argv[++i];
        else if (!strcmp(a, "--data-parallel")) data_parallel = true;
        else if (!strcmp(a, "--ranks")) {
            if (!cli_parse_int(a, argv[++i], 1, 1 << 20, &ranks)) return EXIT_USAGE;
        }
        else if (!strcmp(a, "-o") || !strcmp(a, "--out")) out = argv[++i];
        else if (a[0] != '-' && !page) page = a;
        else if (a[0] != '-' && !block) block = a;
        else {
            fprintf(stderr, "blockflow grad: unexpected argument \"%s\"\n%s", a, usage);
            return EXIT_USAGE;
        }
    }
    if (!page || (!block && !loss)) {
        fprintf(stderr, "%s", usage);
        return EXIT_USAGE;
    }
    if (block && loss)
        return usage_error("give BLOCK (one block's gradients) or --loss ID (the whole page), "
                           "not both%s", "");
    if (block && (wrt_arg || optimizer || data_parallel))
        return usage_error("%s goes with --loss ID (the whole-page form)",
                           wrt_arg ? "--wrt" : optimizer ? "--optimizer" : "--data-parallel");
    if (ranks && !data_parallel) return usage_error("%s goes with --data-parallel", "--ranks");
    if (loss && dy) return usage_error("%s goes with BLOCK (the one-block form)", "--dy");
    if (in_place && out) return usage_error("%s: give --in-place or -o OUT, not both", "-o");

    /* --wrt V1,V2 */
    char wrt_buf[4096];
    const char *wrt[MAX_WRT];
    int n_wrt = 0;
    if (wrt_arg) {
        if (strlen(wrt_arg) >= sizeof(wrt_buf)) return usage_error("%s: too long", "--wrt");
        snprintf(wrt_buf, sizeof(wrt_buf), "%s", wrt_arg);
        for (char *p = wrt_buf, *next; p; p = next) {
            next = strchr(p, ',');
            if (next) *next++ = '\0';
            if (!*p) return usage_error("--wrt \"%s\": an empty name", wrt_arg);
            if (n_wrt == MAX_WRT) return usage_error("--wrt \"%.40s...\": too many", wrt_arg);
            wrt[n_wrt++] = p;
        }
    }

    bf_context *ctx;
    bf_session *s;
    int rc = cli_open_session(page, &ctx, &s);
    if (rc) return rc;
    char *created = NULL, *text = NULL;
    bf_error e = {0};
    bf_grad_options go;
    bf_grad_options_init(&go);
    go.optimizer = optimizer;
    go.data_parallel = data_parallel;
    go.ranks = ranks;
    bf_status st = loss ? bf_session_build_gradients_opts(s, loss, n_wrt ? wrt : NULL, n_wrt,
                                                          &go, &created, &e)
                        : bf_session_add_gradients(s, block, dy, &created, &e);
    if (st || bf_page_to_json(bf_session_page(s), &text, &e)) {
        rc = cli_fail(&e);
    } else if (!cli_job_writer()) { /* every rank built it; rank 0 writes it */
    } else {
        if (!quiet) {
            if (loss) print_created(created);
            else fprintf(stderr, "added: %s\n", created);
        }
        if (in_place) rc = cli_write_atomic(page, text, strlen(text));
        else if (out) rc = cli_write_atomic(out, text, strlen(text));
        else fputs(text, stdout);
    }
    bf_string_free(created);
    bf_string_free(text);
    bf_session_free(s);
    bf_context_free(ctx);
    return rc;
}
