/*
 * symgrad.h - AddSymbolicGradients, built by blockflow's own gradient builder. The importer
 * (no runtime inside) leaves a Placeholder for each grad_outputs[k] that is read and lists
 * them in the page's x-enuspace "symbolic_gradients"; this step, which needs the runtime (the
 * public API only), builds the gradient of the block's output with respect to its inputs
 * (bf_session_build_gradients, as `grad --loss` does: TensorFlow's AddSymbolicGradients
 * seeds the gradient with ones, i.e. differentiates the sum of the outputs, which is the loss
 * itself for a scalar) and wires each reader of a Placeholder to the gradient it stood for.
 */
#ifndef BF_ENU_SYMGRAD_H
#define BF_ENU_SYMGRAD_H

#include "blockflow.h"

#include <stddef.h>

/*
 * `page_json` with its symbolic gradients built: *out (free with bf_string_free) the
 * canonical page, or NULL when the page has none (nothing to do). `dir` is where the page's
 * .npy files are. 0, or -1 with `err` naming the AddSymbolicGradients block.
 */
int enu_build_symbolic_gradients(bf_context *ctx, const char *page_json, const char *name,
                                 const char *dir, char **out, char *err, size_t errsz);

#endif /* BF_ENU_SYMGRAD_H */
