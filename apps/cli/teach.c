/*
 * teach.c - what the teaching verbs (explain, gradcheck, grad) share: opening a page into a
 * session and turning a failed library call into a printed error and an exit status.
 */
#include "cli.h"

#include <stdio.h>

int cli_open_session(const char *path, bf_context **ctx, bf_session **s) {
    bf_error e = {0};
    bf_config cfg;
    bf_config_init(&cfg);
    cli_config_from_env(&cfg);
    *ctx = NULL, *s = NULL;
    bf_diags *diags = bf_diags_new();
    if (!diags || bf_context_new(&cfg, ctx, &e)) {
        cli_print_error(&e);
        bf_diags_free(diags);
        return EXIT_RUN;
    }
    cli_job_begin(*ctx);
    bf_page *page = NULL;
    if (bf_page_load_file(*ctx, path, &page, diags, &e) || bf_session_new(*ctx, page, s, &e)) {
        size_t n = bf_diags_count(diags);
        for (size_t i = 0; i < n; i++) cli_print_error(bf_diags_at(diags, i));
        if (!bf_diags_errors(diags)) cli_print_error(&e);
        bf_diags_free(diags);
        bf_context_free(*ctx);
        *ctx = NULL;
        return EXIT_INVALID;
    }
    bf_diags_free(diags);
    return EXIT_OK;
}

int cli_feed_all(bf_context *ctx, bf_session *s, const char *const *feeds, int n) {
    for (int i = 0; i < n; i++) {
        int rc = cli_feed(ctx, s, feeds[i]);
        if (rc) return rc;
    }
    return EXIT_OK;
}

int cli_fail(const bf_error *e) {
    cli_print_error(e);
    switch (e->status) {
    case BF_ENOTFOUND:
    case BF_EUNSUPPORTED: return EXIT_USAGE;
    case BF_EPARSE:
    case BF_ESCHEMA:
    case BF_EATTR:
    case BF_ESHAPE:
    case BF_EDTYPE:
    case BF_EINVAL: return EXIT_INVALID;
    case BF_ECANCELED: return EXIT_CANCEL;
    default: return EXIT_RUN;
    }
}
