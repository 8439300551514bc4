/*
 * conv.h - the state of one conversion (convert.c) and the helpers its files share:
 * conv_util.c (errors, notes, owned strings, blockflow ids), values.c (the values of Const
 * and Variable blocks), attr_text.c (enuSpace's attribute text as typed attributes).
 */
#ifndef BF_ENU_CONV_H
#define BF_ENU_CONV_H

#include "graph.h"
#include "idmap.h"
#include "ops.h"

#include <cjson/cJSON.h>

enum { K_MAPPED, K_CONST, K_VARIABLE, K_DISPLAY, K_SESSION, K_OPERATION, K_UNSUPPORTED,
       K_ABSORBED, K_DATASET, K_ONEHOT, K_SYMGRAD };

typedef struct conv {
    enu_graph *g;
    const enu_options *o;
    const unsigned char *dat;
    size_t dat_len;
    enu_idmap ids;      /* enuSpace id -> block index */
    enu_idmap used;     /* blockflow ids taken */
    char **newid;       /* per block */
    int *kind;
    char **why;         /* per block: why it is unsupported */
    enu_value *vals;    /* per block: the value of a Const or the initial value of a Variable */
    const char **init;  /* per block: a Variable's initializer when its .dat is missing */
    const enu_op **op;
    int *in_first, *in_last, *in_next; /* wires into each block, in document order */
    char **strs;        /* strings owned for `used` */
    int n_strs, cap_strs;
    cJSON *blocks, *report, *r_mapped, *r_dropped, *r_unsup, *r_dat, *r_lits, *r_notes,
        *r_placeholders, *r_maps, *r_symgrad;
    enu_idmap ph;       /* "id\x1fport" -> placeholder string index */
    enu_idmap fnames;   /* .npy file names taken */
    enu_file *files;
    int n_files, cap_files;
    char *err;
    size_t errsz;
    int n_caches;
} conv;

/* conv_util.c */
/* Set the error (block and pin named by the caller's format); returns -1. */
int conv_fail(conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int conv_oom(conv *c);
/* A line in the report's notes. */
void conv_note(conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Keep `s` (a new string) alive until the conversion ends; NULL on OOM. */
const char *conv_own(conv *c, char *s);
/* A blockflow id for `want` not taken yet (made valid and numbered when needed). */
const char *conv_take_id(conv *c, const char *want);
/* Mark block i unsupported, saying why. */
void conv_unsupported(conv *c, int i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The text value of pin `pin` of `b`, "" when it has none. */
const char *conv_pin_text(const enu_block *b, const char *pin);
/* The number of wires into (block i, pin); *first the first of them, -1. */
int conv_wires_into(const conv *c, int i, const char *pin, int *first);

/* values.c */
cJSON *conv_shape_json(const enu_value *v);
/* dtype and value (inline, or a .npy file named after `id`) into `attrs`. */
int conv_put_value(conv *c, cJSON *attrs, const char *id, const enu_value *v);
/* Read pin `p` of `b` (text or .dat), recording .dat reads in the report. */
int conv_read_pin(conv *c, const enu_block *b, const enu_pin *p, enu_value *v);
/* The value of Const / Const_ex i, the initial value of Variable i (FORMAT.md 7.5). */
int conv_const_value(conv *c, int i);
int conv_variable_value(conv *c, int i);

/* attr_text.c */
/* Attribute `name` of kind `kind` (b, i, l, L, s, t) from `val` into attrs. */
int conv_typed_attr(conv *c, const enu_block *b, cJSON *attrs, const char *name, char kind,
                    const char *val, const char *pin);
/* The attribute text of block b (op's names, NULL for none) into attrs. */
int conv_attr_text(conv *c, const enu_block *b, const enu_op *op, cJSON *attrs, const char *text);

#endif /* BF_ENU_CONV_H */
