/*
 * place.c - devices: where a block runs this run ("auto" picks the GPU when one is present
 * and the block has a GPU kernel that supports the shapes, else the CPU; "gpu" insists, with
 * a clear error when no GPU can be used, but still falls back, with the reason recorded, for
 * a block that has no GPU kernel), tensors on devices and the copies between them, and the
 * kernels' workspaces, kept across runs.
 *
 * Tensors stay where they were produced and are copied only when a consumer on another
 * device, or a fetch, needs them.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

bf_status bf_sess_tensor_alloc(bf_session *s, bf_device *dev, const bf_port_info *p,
                               bf_tensor **out, bf_error *err) {
    if (!dev)
        return bf_tensor_alloc(&s->budget, s->ctx->cfg.max_tensor_elements, p->dtype, p->rank,
                               p->dims, false, out, err);
    *out = NULL;
    int64_t numel;
    size_t nbytes;
    bf_status st = bf_shape_size(p->dtype, p->rank, p->dims, s->ctx->cfg.max_tensor_elements,
                                 &numel, &nbytes, err);
    if (st || (st = bf_budget_charge(&s->budget, nbytes, err))) return st;
    bf_tensor *t = bf_calloc(1, sizeof(*t));
    void *data = t ? dev->ops->alloc(dev, nbytes ? nbytes : 1, err) : NULL;
    if (!data) {
        bf_free(t);
        bf_budget_release(&s->budget, nbytes);
        return t ? (err ? err->status : BF_EDEVICE)
                 : bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    t->dtype = p->dtype;
    t->rank = p->rank;
    memcpy(t->dims, p->dims, sizeof(t->dims));
    t->numel = numel;
    t->nbytes = nbytes;
    t->data = data;
    t->device = dev;
    t->budget = &s->budget;
    *out = t;
    return BF_OK;
}

void bf_sess_tensor_free(bf_tensor *t) {
    if (!t) return;
    if (!t->device) {
        bf_tensor_free(t);
        return;
    }
    t->device->ops->free(t->device, t->data);
    bf_budget_release(t->budget, t->nbytes);
    bf_free(t);
}

/* The session's state on `dev`, set up on first use. Caller holds gpu_mu (or runs alone). */
gpu_state *bf_sess_gpu(bf_session *s, bf_device *dev, bf_error *err) {
    gpu_state *g = &s->gpu[dev->ordinal];
    if (!g->ready) {
        if (dev->ops->session_init(dev, &s->ctx->cfg, &g->stream, &g->ctx, err)) return NULL;
        g->ready = true;
    }
    return g;
}

/* Copy `src` to device `dev` (NULL = host) as a new tensor. */
bf_status bf_sess_tensor_move(bf_session *s, const bf_tensor *src, bf_device *dev,
                              bf_tensor **out, bf_error *err) {
    bf_port_info p;
    bf_port_set(&p, src->dtype, src->rank, src->dims);
    bf_status st = bf_sess_tensor_alloc(s, dev, &p, out, err);
    if (st) return st;
    bf_device *io = dev ? dev : src->device;
    gpu_state *g = bf_sess_gpu(s, io, err);
    if (!g) st = err ? err->status : BF_EDEVICE;
    else if (dev && !src->device)
        st = io->ops->upload(io, (*out)->data, src->data, src->nbytes, g->stream, err);
    else if (!dev && src->device)
        st = io->ops->download(io, (*out)->data, src->data, src->nbytes, g->stream, err);
    else
        st = bf_err(err, BF_EUNSUPPORTED, "device_copy", "copies between two GPUs go through "
                    "the host");
    if (st == BF_OK) st = io->ops->sync(io, g->stream, err);
    if (st) {
        bf_sess_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* Choose the device of node n for this run; fills the stats note on fallback. */
bf_status bf_sess_place(bf_session *s, snode *n, bf_port_info *in, bf_error *err) {
    bf_device_kind want = s->opts->device != BF_DEVICE_AUTO ? s->opts->device : n->pb->device;
    const bf_block_desc *d = n->pb->desc;
    n->dev = NULL;
    n->stats.note[0] = '\0';
    if (want == BF_DEVICE_CPU) return BF_OK;
    if (!d->run_cuda) {
        if (want == BF_DEVICE_GPU)
            snprintf(n->stats.note, sizeof(n->stats.note), "no GPU kernel: ran on the CPU");
        return BF_OK;
    }
    bool have = bf_context_has_gpu(s->ctx);
    int ordinal = s->opts->device == BF_DEVICE_GPU ? 0 : n->pb->gpu_ordinal;
    if (want == BF_DEVICE_GPU && (!have || ordinal >= s->ctx->n_gpus)) {
        bf_err_at(err, NULL, NULL);
        return bf_err(err, BF_EDEVICE, "no_gpu",
                      "the block asks for gpu:%d but no GPU can be used (%s)", ordinal,
                      have ? "no such device" : s->ctx->gpu_why);
    }
    if (!have) return BF_OK;
    const char *why = d->gpu_unsupported ? d->gpu_unsupported(&n->node, in) : NULL;
    if (why) {
        snprintf(n->stats.note, sizeof(n->stats.note), "CPU fallback: %s", why);
        return BF_OK;
    }
    n->dev = &s->ctx->gpus[ordinal];
    return BF_OK;
}

/* Ensure n's workspace on its device is at least `bytes`; kept across runs. */
bf_status bf_sess_workspace(bf_session *s, snode *n, size_t bytes, bf_error *err) {
    if (!n->dev) {
        if (bytes <= n->ws_size) return BF_OK;
        bf_aligned_free(n->ws);
        bf_budget_release(&s->budget, n->ws_size);
        n->ws = NULL;
        n->ws_size = 0;
        bf_status st = bf_budget_charge(&s->budget, bytes, err);
        if (st) return st;
        n->ws = bf_aligned_alloc(bytes, false);
        if (!n->ws) {
            bf_budget_release(&s->budget, bytes);
            return bf_err(err, BF_ENOMEM, "out_of_memory", "cannot allocate %zu bytes of "
                          "workspace", bytes);
        }
        n->ws_size = bytes;
        return BF_OK;
    }
    if (bytes <= n->dws_size && n->dws_dev == n->dev) return BF_OK;
    if (n->dws) n->dws_dev->ops->free(n->dws_dev, n->dws);
    bf_budget_release(&s->budget, n->dws_size);
    n->dws = NULL;
    n->dws_size = 0;
    bf_status st = bf_budget_charge(&s->budget, bytes, err);
    if (st) return st;
    n->dws = n->dev->ops->alloc(n->dev, bytes, err);
    if (!n->dws) {
        bf_budget_release(&s->budget, bytes);
        return err ? err->status : BF_EDEVICE;
    }
    n->dws_size = bytes;
    n->dws_dev = n->dev;
    return BF_OK;
}

void bf_sess_workspace_free(bf_session *s, snode *n) {
    bf_aligned_free(n->ws);
    bf_budget_release(&s->budget, n->ws_size);
    if (n->dws) n->dws_dev->ops->free(n->dws_dev, n->dws);
    bf_budget_release(&s->budget, n->dws_size);
    n->ws = n->dws = NULL;
    n->ws_size = n->dws_size = 0;
    n->dws_dev = NULL;
}
