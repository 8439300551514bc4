/*
 * cli_harness.c - running a program with its output captured (see cli_harness.h).
 */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np */
#include "cli_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void bf_result_free(bf_result *r) {
    free(r->out);
    free(r->err);
}

bf_result bf_run(const bf_run_opts *opts, const char *const *args) {
    static const bf_run_opts plain = {0};
    if (!opts) opts = &plain;
    const char *argv[40];
    int n = 0;
    argv[n++] = opts->prog ? opts->prog : bf_test_binary();
    for (int i = 0; args[i] && n < 39; i++) argv[n++] = args[i];
    argv[n] = NULL;
    char out[512], err[512];
    snprintf(out, sizeof(out), "%s", bf_sp(".stdout"));
    snprintf(err, sizeof(err), "%s", bf_sp(".stderr"));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (opts->in) posix_spawn_file_actions_addopen(&fa, 0, opts->in, O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (opts->dir) posix_spawn_file_actions_addchdir_np(&fa, opts->dir);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ck_assert_msg(rc == 0, "cannot start %s", argv[0]);
    int ws = 0;
    if (opts->timeout_s > 0) {
        long polls = (long)(opts->timeout_s * 100);
        for (long t = 0; t < polls; t++) {
            if (waitpid(pid, &ws, WNOHANG) == pid) break;
            if (t == polls - 1) {
                kill(pid, SIGKILL);
                waitpid(pid, &ws, 0);
                ck_abort_msg("%s %s hung", argv[0], args[0] ? args[0] : "");
            }
            usleep(10000);
        }
    } else {
        ck_assert_int_eq(waitpid(pid, &ws, 0), pid);
    }
    bf_result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, bf_read_file(out, NULL),
                   bf_read_file(err, NULL)};
    unlink(out);
    unlink(err);
    ck_assert_ptr_nonnull(r.out);
    ck_assert_ptr_nonnull(r.err);
    return r;
}
