/*
 * hints.c - presenting the library's errors on the command line. The library describes a
 * problem in the page's terms; what a user of this program can do about it (a flag to raise a
 * limit, a feed to give) is added here, keyed on the error's stable code, so the server and
 * embedding programs can give their own advice for the same errors.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_hint(const bf_error *e) {
    static const struct {
        const char *code, *hint;
    } hints[] = {
        {"missing_feed", "give it with --feed ID=FILE.npy"},
        {"unknown_block_type", "`blockflow blocks` lists the types"},
        {"too_many_blocks", "raise the limit with --max-blocks"},
        {"page_too_large", "raise the limit with --max-page-bytes"},
        {"too_deep", "raise the limit with --max-json-depth"},
        {"too_large", "raise the limit with --max-elements"},
        {"memory_limit", "raise the limit with --mem-limit"},
        {"timeout", "raise the limit with --timeout"},
        {"file_outside_page", "files are confined to the page's folder by --confine-files"},
    };
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
        if (!strcmp(e->code, hints[i].code)) return hints[i].hint;
    return NULL;
}

void cli_print_error(const bf_error *e) {
    char line[1200], prefix[32];
    bf_error_format(e, line, sizeof(line));
    const char *hint = cli_hint(e), *rank = cli_job_prefix(prefix, sizeof(prefix));
    if (hint) fprintf(stderr, "%s%s (%s)\n", rank, line, hint);
    else fprintf(stderr, "%s%s\n", rank, line);
}

void cli_config_from_env(bf_config *cfg) {
    const char *at = getenv("BF_CUDNN_AUTOTUNE"), *det = getenv("BF_CUDNN_DETERMINISTIC");
    const char *ws = getenv("BF_CUDNN_WORKSPACE_MB"), *dr = getenv("BF_DETERMINISTIC_REDUCE");
    cfg->deterministic_reduce = dr && dr[0] == '1';
    cfg->cudnn_autotune = at && at[0] == '1';
    cfg->cudnn_nondeterministic = det && det[0] == '0';
    if (ws && *ws) {
        char *end;
        long mb = strtol(ws, &end, 10);
        if (*end == '\0' && mb >= 0 && mb <= (1L << 20)) cfg->cudnn_workspace_mb = (int)mb;
        else fprintf(stderr, "blockflow: BF_CUDNN_WORKSPACE_MB=%s ignored (MiB, 0 to %ld)\n",
                     ws, 1L << 20);
    }
}
