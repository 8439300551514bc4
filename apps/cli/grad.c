/*
 * grad.c - `blockflow grad PAGE BLOCK [--dy SOURCE] [--in-place]`: add the gradient blocks of
 * a forward block (Conv2D: Conv2DBackpropFilter and Conv2DBackpropInput, with their shape
 * constants and an out_backprop Placeholder unless --dy names a source), as tf.gradients
 * builds them (bf_session_add_gradients), then print the page in canonical form, or rewrite
 * the file with --in-place. The ids of the new blocks go to stderr.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char usage[] = "usage: blockflow grad PAGE BLOCK [--dy SOURCE] [--in-place]\n";

int cli_grad(int argc, char **argv) {
    const char *page = NULL, *block = NULL, *dy = NULL;
    int in_place = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--in-place")) in_place = 1;
        else if (!strcmp(a, "--dy") && i + 1 < argc) dy = argv[++i];
        else if (a[0] != '-' && !page) page = a;
        else if (a[0] != '-' && !block) block = a;
        else {
            fprintf(stderr, "blockflow grad: unexpected argument \"%s\"\n%s", a, usage);
            return EXIT_USAGE;
        }
    }
    if (!page || !block) {
        fprintf(stderr, "%s", usage);
        return EXIT_USAGE;
    }
    bf_context *ctx;
    bf_session *s;
    int rc = cli_open_session(page, &ctx, &s);
    if (rc) return rc;
    char *created = NULL, *text = NULL;
    bf_error e = {0};
    if (bf_session_add_gradients(s, block, dy, &created, &e) ||
        bf_page_to_json(bf_session_page(s), &text, &e)) {
        rc = cli_fail(&e);
    } else {
        fprintf(stderr, "added: %s\n", created);
        if (in_place) rc = cli_write_atomic(page, text, strlen(text));
        else fputs(text, stdout);
    }
    bf_string_free(created);
    bf_string_free(text);
    bf_session_free(s);
    bf_context_free(ctx);
    return rc;
}
