/*
 * graph.h - an enuSpace page as read, before any mapping: its blocks with their pins (values
 * as text or as a place in the .dat), and its wires in document order. The SVG reader and the
 * Task JSON reader both produce it; convert.c maps it to a blockflow page.
 */
#ifndef BF_ENU_GRAPH_H
#define BF_ENU_GRAPH_H

#include "enuspace.h"

typedef struct enu_pin {
    char *name;        /* without '#' and shape suffix */
    char *shape;       /* "[2][3]" or "" */
    char *type;        /* string, double, float, int, bool */
    char *value;       /* text value ("" when none) */
    bool binary;       /* value in the .dat at `pos` */
    int64_t pos;
} enu_pin;

typedef struct enu_block {
    char *id;
    char *symbol;      /* palette symbol, without '#' */
    char *task;        /* tensorflow, enu_tensorflow2_0, logic, ... */
    double x, y;
    bool has_pos;
    enu_pin *pins;
    int n_pins, cap_pins;
    char *absorbed;    /* set by pipeline.c: why the block is part of a mapping and not a
                          block of its own (NULL: it is one) */
} enu_block;

typedef struct enu_wire {
    char *from, *from_pin, *to, *to_pin;
} enu_wire;

typedef struct enu_graph {
    enu_block *blocks;
    int n_blocks, cap_blocks;
    enu_wire *wires;
    int n_wires, cap_wires;
    char *version;     /* enuspace-version of an SVG page, "" for Task JSON */
    bool is_json;
    const enu_options *opt;
    const struct enu_idmap *index; /* id -> block, while pipeline.c rewrites the graph */
} enu_graph;

/* Append (copies of the strings); NULL / false on OOM. */
enu_block *enu_graph_add_block(enu_graph *g, const char *id, const char *symbol,
                               const char *task);
enu_pin *enu_block_add_pin(enu_block *b, const char *name, const char *shape, const char *type,
                           const char *value);
bool enu_graph_add_wire(enu_graph *g, const char *from, const char *from_pin, const char *to,
                        const char *to_pin);
void enu_graph_free(enu_graph *g);
enu_pin *enu_block_pin(const enu_block *b, const char *name);

/* Read a page (SVG or Task JSON: the first non-blank character decides) into `g`.
 * 0, or -1 with `err` set. */
int enu_read_page(const unsigned char *bytes, size_t len, const enu_options *o, enu_graph *g,
                  char *err, size_t errsz);
int enu_read_svg(const char *utf8, size_t len, const enu_options *o, enu_graph *g, char *err,
                 size_t errsz);
int enu_read_task_json(const char *utf8, size_t len, const enu_options *o, enu_graph *g,
                       char *err, size_t errsz);

/* utf16.c: code point c (at most 0x10FFFF) as UTF-8 at o (up to 4 bytes); the bytes written. */
size_t enu_put_utf8(char *o, unsigned long c);
/* utf16.c: the text of a page as UTF-8 (a new NUL-terminated buffer): UTF-16LE/BE with a BOM,
 * or UTF-8 (with or without a BOM). Malformed input (a lone surrogate, an odd byte count, a
 * NUL character, invalid UTF-8) is an error naming the byte offset. */
char *enu_decode_text(const unsigned char *bytes, size_t len, size_t *out_len, char *err,
                      size_t errsz);

/* A value: the numbers of a pin or literal, with its dtype and shape. */
typedef enum enu_dtype { ENU_F32, ENU_F64, ENU_I32, ENU_I64, ENU_BOOL, ENU_STRING } enu_dtype;
#define ENU_MAX_RANK 8
typedef struct enu_value {
    enu_dtype dtype;
    int rank;
    int64_t dims[ENU_MAX_RANK];
    int64_t n;
    double *d;         /* n numbers (not for strings) */
    char *s;           /* the string of a string scalar */
} enu_value;
void enu_value_free(enu_value *v);
const char *enu_dtype_name(enu_dtype t); /* blockflow's name ("float32"), "bool", "string" */

/* literal.c. Each returns 0, or -1 with `err` set (the caller prefixes block and pin). */
/* "[2][3]" -> dims; "" -> rank 0. */
int enu_parse_shape_suffix(const char *s, const enu_options *o, enu_value *v, char *err,
                           size_t errsz);
/* A pin's var-type ("double", "float", "int", "bool") -> dtype; -1 for others. */
int enu_dtype_from_var_type(const char *t);
/* "DT_FLOAT" -> dtype; -1 for others (names the unsupported ones in err). */
int enu_dtype_from_tf(const char *t, char *err, size_t errsz);
/* A typed array pin: values split on ';' or ',', braces ignored, shape from `shape`. */
int enu_parse_typed_text(const char *text, const char *shape, enu_dtype dt, const enu_options *o,
                         enu_value *v, char *err, size_t errsz);
/* A tensor literal (7.3 of FORMAT.md): dtype explicit (dt >= 0) or from the characters,
 * shape from the brace nesting. */
int enu_parse_literal(const char *text, int dt, const enu_options *o, enu_value *v, char *err,
                      size_t errsz);
/* "{8,3}" / "{}" -> a shape; "{-1,28,28,1}" is accepted (-1 kept) for Reshape. */
int enu_parse_int_list(const char *text, int64_t *out, int max, int *n, char *err, size_t errsz);

/* dat.c: a binary pin's value from the .dat (bounds checked). */
int enu_read_dat_value(const unsigned char *dat, size_t dat_len, const enu_pin *pin,
                       const enu_options *o, enu_value *v, char *err, size_t errsz);
/* The value of a pin as stored (typed text or binary), its dtype from its var-type. */
int enu_pin_value(const unsigned char *dat, size_t dat_len, const enu_pin *pin,
                  const enu_options *o, enu_value *v, char *err, size_t errsz);

/* pipeline.c: recognise what has no one-to-one block (FORMAT.md 7.9) and rewrite the graph:
 * the MNIST reader pipeline (FIFOQueue, QueueEnqueue, FixedLengthRecordReader, ReaderReadUpTo,
 * DecodeRaw) becomes symbol "blockflow.Dataset" on the DecodeRaw (pins file, batch_size,
 * record_bytes), the one-hot chain (TensorArray ... SparseToDense) symbol "blockflow.OneHot"
 * on the SparseToDense (pins depth, on, off and a wire into "indices"), a Switch that gates an
 * Assign is bypassed, Save chains are dropped, and what then only fed dropped blocks (the
 * load and save counters) is dropped too. Each dropped block gets `absorbed` (why), each
 * mapping a line in `mappings` (strings, a cJSON array). 0, or -1 on OOM with err set. */
struct cJSON;
int enu_rewrite_pipelines(enu_graph *g, const enu_options *o, struct cJSON *mappings, char *err,
                          size_t errsz);

/* npy.c: `v` as .npy bytes in its dtype. */
int enu_npy_bytes(const enu_value *v, unsigned char **out, size_t *size);

#endif /* BF_ENU_GRAPH_H */
