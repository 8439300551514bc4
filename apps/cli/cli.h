/*
 * cli.h - what the files of the `blockflow` program share. The program uses the public API
 * only (include/blockflow.h): the library returns errors and results, these files present them.
 */
#ifndef BF_CLI_H
#define BF_CLI_H

#include "blockflow.h"

#include <stdbool.h>

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 2,   /* bad command line */
    EXIT_INVALID = 3, /* the page (or a feed) is invalid: nothing ran */
    EXIT_RUN = 4,     /* a block failed at run time (kernel, device, limit, timeout) */
    EXIT_OUTPUT = 5,  /* results could not be written */
    EXIT_CANCEL = 130 /* interrupted (Ctrl-C) */
};

/* hints.c: print `e` as one line on stderr, with what to do about it on the command line
 * when there is something (the library's messages never name CLI flags). */
void cli_print_error(const bf_error *e);
/* The CLI's hint for an error, or NULL ("raise it with --mem-limit"). */
const char *cli_hint(const bf_error *e);
/* Map the environment (BF_CUDNN_AUTOTUNE, BF_CUDNN_DETERMINISTIC, BF_CUDNN_WORKSPACE_MB) onto
 * `cfg`: the library itself never reads the environment. */
void cli_config_from_env(bf_config *cfg);

/* fmt.c: `blockflow fmt`. */
int cli_fmt(int argc, char **argv);
/* fmt.c: replace `path` by `text` atomically (temporary file, fsync, rename); an exit status,
 * the error printed. */
int cli_write_atomic(const char *path, const char *text, size_t len);

/* teach.c: a context and a session on the page at `path` (errors printed). Returns EXIT_OK,
 * EXIT_INVALID or EXIT_RUN; on success the caller frees *s then *ctx. */
int cli_open_session(const char *path, bf_context **ctx, bf_session **s);
/* teach.c: the exit status for a failed library call (the error printed). */
int cli_fail(const bf_error *e);

/* explain.c, gradcheck.c, grad.c: the teaching verbs. */
int cli_explain(int argc, char **argv);
int cli_gradcheck(int argc, char **argv);
int cli_grad(int argc, char **argv);

#endif /* BF_CLI_H */
