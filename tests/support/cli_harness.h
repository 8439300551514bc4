/*
 * cli_harness.h - running a program (by default the blockflow program, $BF_BINARY) from a
 * test, the way a user would: its standard output and standard error captured whole, its
 * exit status, optionally its standard input from a file, its working folder and a limit on
 * how long it may take. The output goes through files in the scratch folder (bf_test.h), so a
 * test using this has bf_scratch_setup/bf_scratch_teardown as its fixture.
 */
#ifndef BF_CLI_HARNESS_H
#define BF_CLI_HARNESS_H

#include "bf_test.h"

/* What a program did. */
typedef struct bf_result {
    int status;     /* exit status, or -1 when a signal ended it */
    char *out, *err; /* all it wrote to stdout and stderr, NUL-terminated (never NULL) */
} bf_result;

void bf_result_free(bf_result *r);

/* How to run it; a zeroed struct (or NULL) runs $BF_BINARY as the test itself would. */
typedef struct bf_run_opts {
    const char *prog; /* the program's path; NULL: bf_test_binary() */
    const char *in;   /* a file for its standard input; NULL: the test's own (inherited) */
    const char *dir;  /* its working folder; NULL: the test's own */
    /* > 0: polled every 10 ms and, still running after this many seconds, killed (SIGKILL)
     * and the test failed with "PROG ARG1 hung" instead of stalling; 0: waited for forever */
    double timeout_s;
} bf_run_opts;

/*
 * Run opts->prog (argv[0]) with the NULL-terminated `args` (at most 38 are passed) and wait
 * for it. stdout and stderr go to scratch/.stdout and scratch/.stderr, read back into the
 * result and removed. The test fails when the program cannot be started, hangs past the
 * timeout, or its output cannot be read back.
 */
bf_result bf_run(const bf_run_opts *opts, const char *const *args);

#endif /* BF_CLI_HARNESS_H */
