/*
 * usage.c - the help text, one entry per command, and `blockflow help [TOPIC]`. `--help`, a
 * usage error and `help TOPIC` print from this one table, so they cannot disagree; `help`
 * without a topic prints the synopsis of every command and the shared sections.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

typedef struct topic {
    const char *name;
    const char *synopsis; /* one or two lines under "commands:" */
    const char *details;  /* `help NAME` adds this */
} topic;

static const topic topics[] = {
    {"run",
     "  run PAGE|- [--feed ID=FILE.npy|ID=FILE.npz:KEY]... [--fetch ID[:PORT]]... [--out DIR]\n"
     "           [--no-save] [--device auto|cpu|gpu] [--print] [--json] [--quiet]\n"
     "           [--timeout SECONDS] [--threads N] [--cache-limit BYTES] [LIMITS]\n"
     "           [--set BLOCK.ATTR=VALUE]... [--each] [--out FILE.npz] [--watch] [--ranks K]\n"
     "      run the page; write each fetched tensor to DIR/ID.npy (DIR/ID.PORT.npy for a\n"
     "      non-default port; DIR defaults to the current folder) and print a table per block\n",
     "  PAGE \"-\" reads the page from standard input (its \"file\" paths are then relative to\n"
     "  the current folder); FIFOs and other streams are read up to --max-page-bytes.\n"
     "  --feed ID=FILE      feed Placeholder ID from a .npy file, or one array of an .npz\n"
     "                      archive (numpy.savez) with FILE.npz:KEY\n"
     "  --fetch ID[:PORT]   compute and write this output (default: the page's outputs);\n"
     "                      a fetch given twice is one\n"
     "  --out DIR           where results go; checked (created, writable) before running\n"
     "  --out FILE.npz      every result in one numpy archive instead (keys: ID, ID.PORT)\n"
     "  --set BLOCK.ATTR=VALUE  override an attribute for this run (VALUE as JSON: 2,\n"
     "                      [1,2,2,1], \"SAME\"; a bare word is a string), checked as an edit\n"
     "  --each              one run per item of the last --feed that is ID=FILE.npz (each\n"
     "                      array) or ID='GLOB' (each file, sorted): results go to\n"
     "                      DIR/ITEM/ (or keys ITEM/ID of FILE.npz)\n"
     "  --watch             run, then again whenever the page or a file it reads (feeds,\n"
     "                      \"file\" attributes) changes, saying what changed; Ctrl-C stops\n"
     "  --no-save           write no file\n"
     "  --print             print the results: small ones whole, large ones as a summary\n"
     "  --json              one JSON document on stdout: blocks, problems, output files\n"
     "  --quiet             print only errors (no table, no progress line)\n"
     "  --timeout SECONDS   stop the run after that long (exit 4)\n"
     "  --threads N         kernel threads (default: the CPU cores; at most 1024)\n"
     "  --cache-limit BYTES results kept for re-runs; a single run needs none (default 0)\n"
     "  The table ends with the run's peak memory, the bytes --mem-limit counts.\n"
     "  --deterministic-reduce  AllReduce sums the ranks' values in rank order on rank 0\n"
     "                      (gather, sum, broadcast): the same bits on every run\n"
     "  Under mpirun -np K every rank runs the page (shard \"batch\" blocks take their part\n"
     "  of the batch); rank 0 alone writes and prints; errors are prefixed \"rank R: \".\n"
     "  --ranks K           the same job without MPI: K ranks that are threads of this\n"
     "                      process; sums across ranks in rank order (the bits of\n"
     "                      mpirun -np K with --deterministic-reduce)\n"},
    {"check",
     "  check PAGE|- [--json] [--quiet] [LIMITS]\n"
     "      validate the page and print the inferred dtype and shape of every port\n",
     "  --json    bf_session_check_json's document: ok, problems, every port's dtype and shape\n"
     "  --quiet   print only the problems\n"},
    {"fmt",
     "  fmt PAGE... [--check | --in-place]\n"
     "      print a page in canonical form; --check exits 1 when one is not, --in-place\n"
     "      rewrites it; a page with problems (unknown type, bad value) is laid out as\n"
     "      written, its problems on stderr (--check: exit 3)\n",
     NULL},
    {"blocks", "  blocks [--json] [TYPE]   the block catalogue\n", NULL},
    {"explain",
     "  explain PAGE BLOCK INDEX... [--port P] [--json] [--max-terms N] [--feed ID=FILE]...\n"
     "      one output element of a convolution block: its value, the padding, and the\n"
     "      terms of its sum (pairs of operand elements in the tensors' own layouts)\n",
     NULL},
    {"import",
     "  import PAGE.svg|PAGE.json [--dat FILE] [-o OUT.json] [--data-dir DIR] [--partial]\n"
     "         [--json] [--quiet]\n"
     "      an enuSpace-Tensorflow page (SVG page + .dat, or Task JSON export) as a canonical\n"
     "      blockflow page; the import report on stderr\n",
     "  --dat FILE      the page's .dat side file (default: PAGE.dat beside the page)\n"
     "  -o OUT.json     write the page there (atomically), arrays of more than 100 elements\n"
     "                  beside it as OUT.<block>.npy; default: standard output\n"
     "  --data-dir DIR  where the IDX files its MNIST reader pipelines read are (the Dataset\n"
     "                  reads DIR/NAME; default PARENT/NAME beside the page)\n"
     "  --partial       write a Placeholder for each block that cannot be mapped, instead\n"
     "                  of failing (the report lists them and what they feed)\n"
     "  --json          the report as JSON on stdout (needs -o)\n"
     "  --quiet         print only errors\n"},
    {"train",
     "  train PAGE|- [--steps N | --epochs E] [--metrics ID[:PORT],...] [--log FILE.csv|.jsonl]\n"
     "        [--checkpoint FILE.npz [--save-every K]] [--resume FILE.npz] [--feed ID=FILE]...\n"
     "        [--device auto|cpu|gpu] [--timeout SECONDS] [--threads N] [--ranks K] [--json]\n"
     "        [--quiet] [--deterministic-reduce]\n"
     "        [LIMITS]\n"
     "      run training steps: each runs the page and commits its update blocks' new values\n"
     "      (add them with grad --loss ID --optimizer SPEC); a progress line on a terminal\n",
     "  --steps N           steps to run (default 100), counted from the resumed step\n"
     "  --epochs E          run until the page's dataset block has started E more epochs\n"
     "                      (a page without a dataset block is a usage error)\n"
     "  --metrics ID,...    what to report each step: the first element of each (default:\n"
     "                      the page's outputs, typically the loss and an accuracy)\n"
     "  --log FILE          one row per step (step, seconds since the start, each metric) as\n"
     "                      CSV with a header (FILE.csv) or JSON Lines (FILE.jsonl), flushed\n"
     "                      every step; made new, or appended to with --resume\n"
     "  --checkpoint FILE   save every Variable and dataset cursor, and the step count, to\n"
     "                      this .npz at the end, on Ctrl-C and every --save-every K steps\n"
     "                      (atomically; a failed step saves nothing, the last save stands)\n"
     "  --resume FILE       restore a checkpoint, and its step count, before the first step\n"
     "  --feed ID=FILE      feed Placeholder ID for every step (as run's --feed)\n"
     "  --timeout SECONDS   the longest one step may take (exit 4)\n"
     "  --json              one JSON document on stdout: ok, status, step, steps, seconds,\n"
     "                      steps_per_second, metrics {ID: last value}, checkpoint, log,\n"
     "                      problems\n"
     "  --quiet             print only errors (no progress line, no summary)\n"
     "  Ctrl-C stops at a step boundary (the step in flight is dropped), writes the checkpoint\n"
     "  and exits 130. A checkpoint holds one array per Variable and dataset cursor, named\n"
     "  by the block's id, and \".step\" (numpy.load reads it).\n"
     "  --deterministic-reduce  as run's: AllReduce in rank order, the same bits every run\n"
     "  Under mpirun -np K (a page built with grad --data-parallel): rank 0 writes the log\n"
     "  and checkpoints (Variables compared across the ranks first), a failing rank stops\n"
     "  them all, and Ctrl-C (SIGINT or SIGTERM) stops every rank at a step boundary.\n"
     "  --ranks K           the same job without MPI: K ranks that are threads of this\n"
     "                      process (each with --threads kernel threads, default the cores\n"
     "                      / K); sums across ranks in rank order: the bits of\n"
     "                      mpirun -np K --deterministic-reduce with the same --threads\n"},
    {"gradcheck",
     "  gradcheck PAGE BLOCK [--json] [--eps E] [--tolerance T] [--samples N] [--seed S]\n"
     "           [--gpu] [--feed ID=FILE]...\n"
     "      check a gradient block (or both gradients of a forward block) against float64\n"
     "      central differences and the adjoint identity; exit 1 when it fails\n"
     "  gradcheck PAGE --loss ID [--json] [--eps E] [--tolerance T] [--samples N] [--seed S]\n"
     "           [--feed ID=FILE]...\n"
     "      check the gradient every update block applies against float64 central\n"
     "      differences of the loss; exit 1 when one fails\n",
     NULL},
    {"grad",
     "  grad PAGE BLOCK [--dy SOURCE] [--in-place | -o OUT] [--quiet]\n"
     "      add the gradient blocks of a Conv2D or DepthwiseConv2dNative block, as\n"
     "      tf.gradients builds them; print the page (or write it)\n"
     "  grad PAGE --loss ID[:PORT] [--wrt VAR,...] [--optimizer SPEC] [--in-place | -o OUT]\n"
     "            [--data-parallel [--ranks K]]\n"
     "      add the backward pass of the whole page (the gradient of the loss with respect\n"
     "      to its Variables) and, with --optimizer, the update blocks that train them\n",
     "  --wrt VAR,...       the Variables to differentiate for (default: every trainable\n"
     "                      Variable the loss depends on)\n"
     "  --optimizer SPEC    sgd:LR, momentum:LR[:MOMENTUM] or adam:LR[:BETA1:BETA2:EPSILON]\n"
     "                      (TensorFlow's defaults: momentum 0.9; adam 0.9, 0.999, 1e-8)\n"
     "  --in-place          rewrite PAGE (atomically); -o OUT writes OUT; otherwise stdout\n"
     "  --quiet             do not list the new blocks on stderr\n"
     "  --data-parallel     an AllReduce (mean) on every Variable's gradient, for mpirun\n"
     "  --ranks K           build for a job of K ranks (default: this job's, 1 outside\n"
     "                      mpirun): the shapes are those of one rank's part of the batch\n"},
    {"bench",
     "  bench [--cases FILE] [--ops LIST] [--threads N] [--rounds R] [--time SECONDS]\n"
     "        [--dtype f32|f64] [--isa generic|avx2|avx512] [--no-peers] [--json]\n"
     "        [--device cpu|gpu]\n"
     "      benchmark the convolution kernels against oneDNN and PyTorch (see\n"
     "      bench/RESULTS.md); --isa picks our kernels' instruction set (default: the best\n"
     "      this CPU runs)\n",
     NULL},
    {"serve",
     "  serve [--listen 127.0.0.1:8470] [--pages DIR] [--token TOKEN] [--threads N] [--open]\n"
     "      the runtime over HTTP and WebSocket for the browser editor (serve --help)\n",
     NULL},
    {"help", "  help [TOPIC]   this text, or one command's in full (help run)\n", NULL},
    {"version", "  version | --version | -V\n", NULL},
};

static const char limits[] =
    "limits (bf_config; sizes take K, M, G suffixes):\n"
    "  --mem-limit BYTES      tensor memory of the run (default: half the RAM)\n"
    "  --max-elements N       elements of one tensor (default 2^40)\n"
    "  --max-blocks N         blocks in a page (default 100000)\n"
    "  --max-page-bytes BYTES size of the page file (default 64M)\n"
    "  --max-json-depth N     JSON nesting of the page (default 64)\n"
    "  --confine-files        \"file\" attributes may only read inside the page's folder\n";

static const char tail[] =
    "environment: BF_CUDNN_AUTOTUNE=1 (benchmark cuDNN's algorithms), BF_CUDNN_DETERMINISTIC=0\n"
    "  (admit non-deterministic ones), BF_CUDNN_WORKSPACE_MB (cap on cuDNN's workspace)\n"
    "\n"
    "exit status: 0 success, 1 not canonical (fmt --check) or failed (gradcheck), 2 usage\n"
    "             error, 3 invalid page, feed or checkpoint, 4 run-time failure, 5 results,\n"
    "             log or checkpoint could not be written, 130 interrupted\n";

void cli_usage(FILE *f) {
    fputs("usage: blockflow COMMAND [ARGS]\n\ncommands:\n", f);
    for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) fputs(topics[i].synopsis, f);
    fprintf(f, "\n%s\n%s", limits, tail);
}

int cli_help(const char *name, FILE *f) {
    if (!name) {
        cli_usage(f);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) {
        if (strcmp(name, topics[i].name)) continue;
        fprintf(f, "usage:\n%s", topics[i].synopsis);
        if (topics[i].details) fprintf(f, "\n%s", topics[i].details);
        if (!strcmp(name, "run") || !strcmp(name, "check") || !strcmp(name, "train"))
            fprintf(f, "\n%s", limits);
        return EXIT_OK;
    }
    if (!strcmp(name, "limits")) {
        fputs(limits, f);
        return EXIT_OK;
    }
    fprintf(stderr, "blockflow help: no topic \"%s\"; topics:", name);
    for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++)
        fprintf(stderr, " %s", topics[i].name);
    fprintf(stderr, " limits\n");
    return EXIT_USAGE;
}

void cli_usage_error(const char *cmd, const char *fmt_arg) {
    fprintf(stderr, "blockflow %s: unexpected argument \"%s\" (blockflow help %s)\n", cmd,
            fmt_arg, cmd);
}
