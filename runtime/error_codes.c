/*
 * error_codes.c - the stable error codes (BF_ERROR_CODE_MAP in include/blockflow.h) for
 * programs: their names in order and each one's meaning.
 */
#include "common.h"

#include <string.h>

static const char *const names[] = {
#define BF_CODE_NAME_(code, meaning) #code,
    BF_ERROR_CODE_MAP(BF_CODE_NAME_)
#undef BF_CODE_NAME_
};

static const char *const meanings[] = {
#define BF_CODE_MEANING_(code, meaning) meaning,
    BF_ERROR_CODE_MAP(BF_CODE_MEANING_)
#undef BF_CODE_MEANING_
};

size_t bf_error_codes(const char *const **out) {
    if (out) *out = names;
    return sizeof(names) / sizeof(names[0]);
}

const char *bf_error_code_meaning(const char *code) {
    for (size_t i = 0; code && i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(names[i], code)) return meanings[i];
    return NULL;
}
