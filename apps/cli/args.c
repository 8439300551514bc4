/*
 * args.c - numbers and names on the command line, parsed strictly: the whole argument must be
 * the number (no "12abc", no "nan", no "inf", no sign where none is allowed), within the
 * option's range; otherwise the error names the option and says why, and the program exits
 * with the usage status (2). "--threads 1000000" is not an error but is capped at
 * CLI_MAX_THREADS with a message: a machine with more cores than that is not the point.
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool bad(const char *opt, const char *arg, const char *why) {
    fprintf(stderr, "blockflow: %s \"%s\": %s\n", opt, arg ? arg : "", why);
    return false;
}

bool cli_parse_u64(const char *opt, const char *arg, bool suffix, uint64_t min, uint64_t max,
                   uint64_t *out) {
    if (!arg || !*arg) return bad(opt, arg, "needs a value");
    if (!isdigit((unsigned char)arg[0]))
        return bad(opt, arg, arg[0] == '-' ? "must not be negative" : "is not a whole number");
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno == ERANGE) return bad(opt, arg, "is too large");
    int shift = 0;
    if (suffix && *end) {
        switch (*end) {
        case 'K': case 'k': shift = 10; break;
        case 'M': case 'm': shift = 20; break;
        case 'G': case 'g': shift = 30; break;
        case 'T': case 't': shift = 40; break;
        default: shift = -1;
        }
        if (shift > 0) end++;
        if (shift > 0 && (*end == 'B' || *end == 'b')) end++;
    }
    if (*end || shift < 0)
        return bad(opt, arg, suffix ? "is not a size (a whole number, optionally with K, M, G "
                                      "or T)"
                                    : "is not a whole number");
    if (shift && v > (UINT64_MAX >> shift)) return bad(opt, arg, "is too large");
    v <<= shift;
    char why[96];
    if (v < min) {
        snprintf(why, sizeof(why), "must be at least %llu", (unsigned long long)min);
        return bad(opt, arg, why);
    }
    if (v > max) {
        snprintf(why, sizeof(why), "must be at most %llu", (unsigned long long)max);
        return bad(opt, arg, why);
    }
    *out = v;
    return true;
}

bool cli_parse_int(const char *opt, const char *arg, int min, int max, int *out) {
    uint64_t v;
    if (!cli_parse_u64(opt, arg, false, (uint64_t)min, (uint64_t)max, &v)) return false;
    *out = (int)v;
    return true;
}

bool cli_parse_seconds(const char *opt, const char *arg, double *out) {
    if (!arg || !*arg) return bad(opt, arg, "needs a value");
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end || !(isdigit((unsigned char)arg[0]) || arg[0] == '.' ||
                                arg[0] == '-' || arg[0] == '+'))
        return bad(opt, arg, "is not a number of seconds");
    if (isnan(v) || isinf(v) || errno == ERANGE) return bad(opt, arg, "must be a finite number");
    if (v < 0) return bad(opt, arg, "must not be negative");
    if (v > 1e9) return bad(opt, arg, "must be at most 1e9 seconds");
    *out = v;
    return true;
}

int cli_parse_threads(const char *arg) {
    uint64_t v;
    if (!cli_parse_u64("--threads", arg, false, 0, UINT64_MAX, &v)) return -1;
    if (v > CLI_MAX_THREADS) {
        fprintf(stderr, "blockflow: --threads %s: using %d, the most threads blockflow uses\n",
                arg, CLI_MAX_THREADS);
        v = CLI_MAX_THREADS;
    }
    return (int)v;
}

bool cli_parse_device(const char *arg, bf_device_kind *out) {
    static const struct {
        const char *name;
        bf_device_kind kind;
    } devs[] = {{"auto", BF_DEVICE_AUTO}, {"cpu", BF_DEVICE_CPU}, {"gpu", BF_DEVICE_GPU}};
    for (size_t i = 0; arg && i < sizeof(devs) / sizeof(devs[0]); i++)
        if (!strcmp(arg, devs[i].name)) {
            *out = devs[i].kind;
            return true;
        }
    return bad("--device", arg, "must be one of auto, cpu, gpu");
}
