/*
 * cli.h - what the files of the `blockflow` program share. The program uses the public API
 * only (include/blockflow.h): the library returns errors and results, these files present them.
 */
#ifndef BF_CLI_H
#define BF_CLI_H

#include "blockflow.h"

#include <stdbool.h>
#include <stdio.h>

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

/* job.c: this process as one rank of an MPI job (one process: rank 0 of 1). Call
 * cli_job_begin once the context is made. cli_job_writer: whether this rank writes files and
 * prints results (rank 0). cli_job_prefix: "rank R: " in a job of several ranks, else "".
 * cli_job_end: the exit status `rc`, after ending the whole job when this rank failed
 * `alone`, in a way the others cannot learn (a page or feed file it could not read; a failure
 * in a session, run or step is agreed by all ranks and ends them together). */
void cli_job_begin(const bf_context *ctx);
int cli_job_rank(void);
bool cli_job_writer(void);
const char *cli_job_prefix(char *buf, size_t size);
int cli_job_end(bf_context *ctx, int rc, bool alone);
/* job.c: `--ranks K`: run body(cfg', arg) in K threads, cfg' being cfg as rank r of a group
 * of K (bf_group), and return the job's exit status (rank 0's, else the first failing rank's).
 * Refused (EXIT_USAGE) under mpirun. */
int cli_job_threads(int ranks, const bf_config *cfg, const char *cmd,
                    int (*body)(const bf_config *cfg, void *arg), void *arg);

/* fmt.c: `blockflow fmt`. */
int cli_fmt(int argc, char **argv);
/* fmt.c: replace `path` by `text` atomically (temporary file, fsync, rename); an exit status,
 * the error printed. */
int cli_write_atomic(const char *path, const char *text, size_t len);

/* teach.c: a context and a session on the page at `path` (errors printed). Returns EXIT_OK,
 * EXIT_INVALID or EXIT_RUN; on success the caller frees *s then *ctx. */
int cli_open_session(const char *path, bf_context **ctx, bf_session **s);
/* teach.c: --feed ID=FILE for each of `feeds` (cli_feed); the first failure's exit status. */
int cli_feed_all(bf_context *ctx, bf_session *s, const char *const *feeds, int n);
/* teach.c: the exit status for a failed library call (the error printed). */
int cli_fail(const bf_error *e);

/* explain.c, gradcheck.c, grad.c: the teaching verbs. */
int cli_explain(int argc, char **argv);
int cli_gradcheck(int argc, char **argv);
int cli_grad(int argc, char **argv);
/* train.c: `blockflow train`. */
int cli_train(int argc, char **argv);
/* import.c: `blockflow import` (enuSpace pages). */
int cli_import(int argc, char **argv);
/* main.c: a limit option (--mem-limit, --max-elements, ..., --confine-files) at argv[*i] into
 * cfg: 1 when it was one (*i advanced past its value), 0 when not, -1 on a bad value
 * (message printed). */
int cli_parse_limit(int argc, char **argv, int *i, bf_config *cfg);

/* args.c: strict numbers. Each prints "blockflow: OPT "ARG": why" and returns false (or -1)
 * on a bad value. Sizes (`suffix`) take K, M, G, T. */
#define CLI_MAX_THREADS 1024
bool cli_parse_u64(const char *opt, const char *arg, bool suffix, uint64_t min, uint64_t max,
                   uint64_t *out);
bool cli_parse_int(const char *opt, const char *arg, int min, int max, int *out);
bool cli_parse_seconds(const char *opt, const char *arg, double *out);
/* --threads: 0..CLI_MAX_THREADS, larger values capped with a message; -1 when bad. */
int cli_parse_threads(const char *arg);
/* --device auto|cpu|gpu; an unknown value names the accepted ones. */
bool cli_parse_device(const char *arg, bf_device_kind *out);

/* input.c: the page from PATH, "-" (standard input) or a stream; returns EXIT_OK,
 * EXIT_INVALID (problems in diags/e, or printed when the page could not be read). */
int cli_load_page(bf_context *ctx, const char *path, bf_page **page, bf_diags *diags,
                  bf_error *e);
/* --feed ID=FILE.npy or ID=FILE.npz[:KEY]: load and feed; returns an exit status, the error
 * printed. */
int cli_feed(bf_context *ctx, bf_session *s, const char *arg);

/* input.c: the array names of the .npz at `path` in archive order, up to `max` (names of
 * 256 bytes or more skipped); -1 when it cannot be read (the error printed). */
int cli_npz_keys(const char *path, char (*keys)[256], int max);

/* batch.c: --set BLOCK.ATTR=VALUE (VALUE JSON, or else a string); an exit status, the error
 * printed. */
int cli_set_attr(bf_session *s, const char *arg);
/* batch.c: the items of `--feed ID=SOURCE --each`: the arrays of SOURCE.npz (each fed as
 * ID=SOURCE.npz:KEY) or the files a glob names, sorted. *n items (up to max) get a name
 * (the key or the file's name without .npy) and the --feed argument that feeds them.
 * Returns EXIT_OK or EXIT_USAGE/EXIT_INVALID (the error printed). */
typedef struct cli_item {
    char name[256];
    char feed[4400];
} cli_item;
int cli_each_items(const char *feed_arg, cli_item *items, int max, int *n);
/* batch.c: write the fetched results of `s` as arrays of the archive `path` (keys: the fetch
 * names, "block" or "block.port", with `prefix` before them); an exit status, the error
 * printed. Collected over several runs with cli_archive_*. */
typedef struct cli_archive cli_archive;
cli_archive *cli_archive_new(void);
int cli_archive_add(cli_archive *a, bf_session *s, const char *const *fetches, int nf,
                    const char *prefix);
int cli_archive_write(cli_archive *a, const char *path);
void cli_archive_free(cli_archive *a);

/* watch.c: `run ... --watch`: `run` (argv without --watch) again whenever the page or a file
 * it reads changes; Ctrl-C while waiting ends it. Returns the exit status. */
int cli_watch(int argc, char **argv, int (*run)(int argc, char **argv));

/* print.c: `--print`. */
void cli_print_tensor(const char *name, const bf_tensor *t);

/* report.c: tables, words, progress and JSON. */
#define CLI_TABLE_ROWS 40
const char *cli_status_word(bf_status st);
void cli_shape_text(int rank, const int64_t *dims, char *buf, size_t size);
void cli_bytes_text(uint64_t bytes, char *buf, size_t size);
int cli_id_width(const bf_page *page, int min);
void cli_print_run_table(bf_session *s);
typedef struct cli_progress {
    bool enabled, drawn;
    int done, started;
    double t0, last;
} cli_progress;
void cli_progress_init(cli_progress *p, bf_session *s, bool enabled);
void cli_progress_event(bf_event_kind kind, const bf_block_stats *st, void *user);
void cli_progress_end(cli_progress *p);
struct cJSON;
struct cJSON *cli_problems_json(const bf_diags *d, const bf_error *e);
struct cJSON *cli_run_json(bf_session *s, bf_status st, const bf_diags *d, const bf_error *e);
/* A tensor as {"shape", "dtype", "values": nested lists} (--json --print); NULL: no memory. */
struct cJSON *cli_tensor_json(const bf_tensor *t);
/* Print `doc` on stdout and free it. */
void cli_json_print(struct cJSON *doc);

/* usage.c: the help text, from one table. */
void cli_usage(FILE *f);
int cli_help(const char *topic, FILE *f);
void cli_usage_error(const char *cmd, const char *arg);

#endif /* BF_CLI_H */
