/*
 * ops.h - the mapping table: an enuSpace palette symbol -> the blockflow block (a TensorFlow
 * raw op) it becomes, with its pins. ops.c holds the table.
 */
#ifndef BF_ENU_OPS_H
#define BF_ENU_OPS_H

typedef struct enu_op {
    const char *symbol;   /* palette symbol ("Subtract") */
    const char *op;       /* blockflow type ("Sub") */
    /* input pins in order, space-separated; "axis>reduction_indices" renames a pin, ":int32"
     * gives the dtype its literal is read with (the palette's auto-datatype), "*" marks a list
     * input (wired several times: port name "inputs_0", "inputs_1", ...) */
    const char *inputs;
    const char *outputs;  /* output pins, the first the default port */
    /* const pins that become attributes: "strides:l padding:s" (l int list, s string,
     * t dtype) */
    const char *consts;
    /* the names the `attrs` text may give: "transpose_a:b" (b bool, i int, l int list,
     * s string, - read and ignored as the plugin does) */
    const char *attrs;
} enu_op;

/* The entry for `symbol`, or NULL. */
const enu_op *enu_op_find(const char *symbol);
/* Number of entries and the i-th (for the report and the README's list). */
int enu_op_count(void);
const enu_op *enu_op_at(int i);

#endif /* BF_ENU_OPS_H */
