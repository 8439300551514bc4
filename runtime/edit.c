/*
 * edit.c - changing a session's page in place: blocks added, removed and renamed, inputs
 * connected and disconnected, attributes and devices set, layout, outputs, name and
 * description, feeds, and a batch of edits given as JSON (all or nothing).
 *
 * Every edit validates everything it touches before it changes anything, so an edit that
 * fails leaves the page and the session exactly as they were, and its error names the block,
 * port or attribute. Each edit invalidates exactly what it affects: an attribute, a device, a
 * wire or a feed recomputes that block and what is downstream of it; layout, names, renames
 * and outputs invalidate nothing; a removed block's results are freed and the blocks that
 * read it (now unconnected) are invalidated.
 */
#include "session.h"

#include <stdio.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------- */

/* Fill *err with a problem of the page (no block). Returns the status. */
static bf_status page_err(bf_session *s, bf_error *err, bf_status st, const char *code,
                          const char *fmt, ...) BF_PRINTF(5, 6);
static bf_status page_err(bf_session *s, bf_error *err, bf_status st, const char *code,
                          const char *fmt, ...) {
    bf_error e = {0};
    va_list ap;
    va_start(ap, fmt);
    bf_verr(&e, st, code, fmt, ap);
    va_end(ap);
    bf_strlcpy(e.page, s->page->file, sizeof(e.page));
    if (err) *err = e;
    return st;
}

/* Complete `e` as being about block b and copy it to *err. Returns its status. */
static bf_status block_err(bf_session *s, int b, bf_error *e, bf_error *err) {
    bf_sess_where(s, b, e);
    if (err) *err = *e;
    return e->status;
}

static int find_node(bf_session *s, const char *id, bf_error *err) {
    int b = id ? bf_page_find(s->page, id) : -1;
    if (b < 0)
        page_err(s, err, BF_ENOTFOUND, "unknown_block", "no block \"%.60s\" on this page",
                 id ? id : "(null)");
    return b;
}

static int find_input(const bf_block_desc *d, const char *port) {
    for (int i = 0; port && i < d->n_inputs; i++)
        if (!strcmp(d->inputs[i].name, port)) return i;
    return -1;
}

/* The unknown-port error, listing the ports there are. */
static bf_status no_such_input(bf_session *s, int b, const char *port, bf_error *err) {
    const bf_block_desc *d = s->page->blocks[b].desc;
    char names[128] = "";
    size_t n = 0;
    for (int i = 0; i < d->n_inputs && n < sizeof(names); i++)
        n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                              d->inputs[i].name);
    bf_error e = {0};
    bf_err_at(&e, port, NULL);
    bf_err(&e, BF_ENOTFOUND, "unknown_port", "%s has no input port \"%.40s\" (its inputs: %s)",
           d->type, port ? port : "(null)", n ? names : "none");
    return block_err(s, b, &e, err);
}

/* Parse optional JSON text; *out NULL for NULL or "" text. */
static bf_status parse_json(bf_session *s, const char *text, const char *what, cJSON **out,
                            bf_error *err) {
    *out = NULL;
    if (!text || !text[0]) return BF_OK;
    unsigned failures = bf_alloc_failures();
    *out = cJSON_Parse(text);
    if (*out) return BF_OK;
    if (bf_alloc_failures() != failures)
        return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    return page_err(s, err, BF_EPARSE, "bad_json", "%s is not valid JSON", what);
}

/* The session changed shape: rebuild the id index, links and graph. */
static bf_status restructure(bf_session *s, bool relink, bf_error *err) {
    bf_page_reindex(s->page); /* without memory the page searches linearly: still correct */
    if (relink) bf_page_relink(s->page);
    if (!bf_sess_graph_build(s))
        return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    return BF_OK;
}

/* ---- blocks ---------------------------------------------------------------------------------- */

static bf_status add_block_checked(bf_session *s, const char *id, const char *type,
                                   const cJSON *attrs, const char *device, const cJSON *ui,
                                   bf_error *err);

/* Add a block; every error names the block being added (its id as given). */
static bf_status add_block(bf_session *s, const char *id, const char *type, const cJSON *attrs,
                           const char *device, const cJSON *ui, bf_error *err) {
    bf_status st = add_block_checked(s, id, type, attrs, device, ui, err);
    if (st && err && !err->block_id[0]) bf_strlcpy(err->block_id, id ? id : "",
                                                   sizeof(err->block_id));
    return st;
}

static bf_status add_block_checked(bf_session *s, const char *id, const char *type,
                                   const cJSON *attrs, const char *device, const cJSON *ui,
                                   bf_error *err) {
    bf_page *page = s->page;
    const char *why = id ? bf_page_bad_id(id) : "a block needs an id";
    if (why)
        return page_err(s, err, BF_ESCHEMA, "bad_id", "%s", why);
    if (bf_page_find(page, id) >= 0)
        return page_err(s, err, BF_ESCHEMA, "duplicate_id", "the id \"%s\" is used by another "
                        "block", id);
    const bf_block_desc *desc = type ? bf_registry_find(type) : NULL;
    char dym[96];
    if (!desc)
        return page_err(s, err, BF_ESCHEMA, "unknown_block_type", "unknown block type "
                        "\"%.60s\"%s", type ? type : "(null)",
                        bf_suggest_text(bf_suggest_type(type), dym, sizeof(dym)));
    int ordinal = 0, dev = device ? bf_page_parse_device(device, &ordinal) : BF_DEVICE_AUTO;
    if (dev < 0)
        return page_err(s, err, BF_ESCHEMA, "bad_device", "\"device\" must be \"auto\", "
                        "\"cpu\", \"gpu\" or \"gpu:N\"");
    if (page->max_blocks > 0 && page->n_blocks >= page->max_blocks)
        return page_err(s, err, BF_ELIMIT, "too_many_blocks", "the page already has %d "
                        "blocks, the limit (bf_config.max_blocks)", page->n_blocks);

    /* Everything the block owns, made before the page changes. */
    bf_page_block b = {.desc = desc, .device = (bf_device_kind)dev, .gpu_ordinal = ordinal};
    b.id = bf_strdup(id);
    b.attrs = bf_calloc((size_t)BF_MAX(desc->n_attrs, 1), sizeof(bf_attr_value));
    b.inputs = bf_calloc((size_t)BF_MAX(desc->n_inputs, 1), sizeof(bf_page_input));
    if (ui) b.ui = cJSON_Duplicate(ui, 1);
    bf_status st = BF_OK;
    bf_error e = {0};
    bf_strlcpy(e.page, page->file, sizeof(e.page));
    bf_strlcpy(e.block_id, id, sizeof(e.block_id));
    if (!b.id || !b.attrs || !b.inputs || (ui && !b.ui)) {
        st = bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
        goto fail;
    }
    for (int k = 0; k < desc->n_inputs; k++) b.inputs[k].src_block = -1;
    bf_attr_report rep = {.tmpl = &e};
    for (const cJSON *k = cJSON_IsObject(attrs) ? attrs->child : NULL; k; k = k->next) {
        if (strncmp(k->string, "x-", 2)) continue;
        if ((!b.attr_ext && !(b.attr_ext = cJSON_CreateObject())) ||
            !bf_json_add(b.attr_ext, k->string, cJSON_Duplicate(k, 1))) {
            st = bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
            goto fail;
        }
    }
    if (bf_attrs_parse(desc, attrs, b.attrs, &rep)) {
        e = rep.first;
        st = e.status;
        goto fail;
    }
    bf_file_scope files = {page->dir, page->confine_files, page->max_elements};
    if ((st = bf_attrs_load_files(desc, b.attrs, &files, &e))) goto fail;
    if (page->n_blocks == page->cap_blocks) {
        int cap = BF_MAX(8, page->cap_blocks * 2);
        bf_page_block *blocks = bf_realloc(page->blocks, (size_t)cap * sizeof(*blocks));
        if (!blocks) {
            st = bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
            goto fail;
        }
        page->blocks = blocks;
        page->cap_blocks = cap;
        for (int i = 0; i < s->n; i++) bf_sess_node_bind(s, i); /* the blocks moved */
    }
    if (!bf_sess_reserve(s, s->n + 1)) {
        st = bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
        goto fail;
    }
    /* The page and the session change from here; undone if the block's init fails. */
    int i = page->n_blocks;
    b.json_index = i;
    page->blocks[i] = b;
    page->n_blocks++;
    s->n++;
    memset(&s->nodes[i], 0, sizeof(snode));
    bf_sess_node_bind(s, i);
    snode *n = &s->nodes[i];
    if (!bf_sess_node_alloc(s, i)) st = bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
    else if (desc->init) st = desc->init(&n->node, &e);
    if (st) {
        bf_sess_node_free(s, n);
        page->n_blocks--;
        s->n--;
        bf_page_block_clear(&page->blocks[i]);
        if (err) {
            *err = e;
            bf_strlcpy(err->page, page->file, sizeof(err->page));
            bf_strlcpy(err->block_id, id, sizeof(err->block_id));
        }
        return st;
    }
    return restructure(s, true, err); /* a dangling link may name the new block */
fail:
    bf_page_block_clear(&b);
    if (err) {
        *err = e;
        bf_strlcpy(err->page, page->file, sizeof(err->page));
        bf_strlcpy(err->block_id, id, sizeof(err->block_id));
    }
    return st;
}

static bf_status remove_block(bf_session *s, const char *id, bf_error *err) {
    int b = find_node(s, id, err);
    if (b < 0) return BF_ENOTFOUND;
    bf_page *page = s->page;
    bf_sess_invalidate(s, b); /* b and everything that reads it */
    for (int i = 0; i < page->n_blocks; i++) {
        bf_page_block *pb = &page->blocks[i];
        for (int k = 0; k < pb->desc->n_inputs; k++) {
            if (pb->inputs[k].src_block != b) continue;
            bf_free(pb->inputs[k].text);
            pb->inputs[k].text = NULL;
            pb->inputs[k].src_block = -1;
        }
    }
    int kept = 0;
    for (int i = 0; i < page->n_outputs; i++) {
        int ob, op;
        if (bf_page_resolve(page, page->outputs[i], &ob, &op) && ob == b)
            bf_free(page->outputs[i]);
        else
            page->outputs[kept++] = page->outputs[i];
    }
    page->n_outputs = kept;
    bf_sess_node_free(s, &s->nodes[b]);
    bf_page_block_clear(&page->blocks[b]);
    memmove(&page->blocks[b], &page->blocks[b + 1],
            (size_t)(page->n_blocks - b - 1) * sizeof(bf_page_block));
    memmove(&s->nodes[b], &s->nodes[b + 1], (size_t)(s->n - b - 1) * sizeof(snode));
    page->n_blocks--;
    s->n--;
    bf_sess_cache_removed(s, b);
    return restructure(s, true, err);
}

/* `ref` with its block part `from` replaced by `to` ("from:port" -> "to:port"), or NULL
 * (and *oom false) when ref does not name `from`. */
static char *renamed_ref(const char *ref, const char *from, const char *to, bool *oom) {
    const char *colon = strrchr(ref, ':');
    size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
    if (n != strlen(from) || strncmp(ref, from, n)) return NULL;
    size_t len = strlen(to) + strlen(ref + n) + 1;
    char *out = bf_malloc(len);
    if (!out) {
        *oom = true;
        return NULL;
    }
    snprintf(out, len, "%s%s", to, ref + n);
    return out;
}

static bf_status rename_block(bf_session *s, const char *id, const char *new_id,
                              bf_error *err) {
    int b = find_node(s, id, err);
    if (b < 0) return BF_ENOTFOUND;
    bf_page *page = s->page;
    const char *why = new_id ? bf_page_bad_id(new_id) : "the new id is missing";
    bf_error e = {0};
    if (why) {
        bf_err(&e, BF_ESCHEMA, "bad_id", "%s", why);
        return block_err(s, b, &e, err);
    }
    if (!strcmp(id, new_id)) return BF_OK;
    if (bf_page_find(page, new_id) >= 0) {
        bf_err(&e, BF_ESCHEMA, "duplicate_id", "the id \"%s\" is used by another block",
               new_id);
        return block_err(s, b, &e, err);
    }
    /* Every new text first, then the swap: all or nothing. */
    int n_in = 0;
    for (int i = 0; i < page->n_blocks; i++) n_in += page->blocks[i].desc->n_inputs;
    char **texts = bf_calloc((size_t)(n_in + page->n_outputs + 1), sizeof(char *));
    char *dup = bf_strdup(new_id);
    bool oom = !texts || !dup;
    int t = 0;
    for (int i = 0; !oom && i < page->n_blocks; i++)
        for (int k = 0; k < page->blocks[i].desc->n_inputs; k++, t++)
            if (page->blocks[i].inputs[k].text)
                texts[t] = renamed_ref(page->blocks[i].inputs[k].text, id, new_id, &oom);
    for (int i = 0; !oom && i < page->n_outputs; i++, t++)
        texts[t] = renamed_ref(page->outputs[i], id, new_id, &oom);
    if (oom) {
        for (int i = 0; texts && i < n_in + page->n_outputs; i++) bf_free(texts[i]);
        bf_free(texts);
        bf_free(dup);
        return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    t = 0;
    for (int i = 0; i < page->n_blocks; i++)
        for (int k = 0; k < page->blocks[i].desc->n_inputs; k++, t++)
            if (texts[t]) {
                bf_free(page->blocks[i].inputs[k].text);
                page->blocks[i].inputs[k].text = texts[t];
            }
    for (int i = 0; i < page->n_outputs; i++, t++)
        if (texts[t]) {
            bf_free(page->outputs[i]);
            page->outputs[i] = texts[t];
        }
    bf_free(texts);
    bf_free(page->blocks[b].id);
    page->blocks[b].id = dup;
    /* A link to the new id that named nothing before (an editor's dangling link) resolves
     * now. Its block never ran (it had a problem), so there is nothing to invalidate. */
    return restructure(s, true, err);
}

/* ---- wires ---------------------------------------------------------------------------------- */

static bf_status connect_input(bf_session *s, const char *block_id, const char *port,
                               const char *source, bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    bf_page_block *pb = &s->page->blocks[b];
    int k = find_input(pb->desc, port);
    if (k < 0) return no_such_input(s, b, port, err);
    int sb, sp;
    bf_error e = {0};
    bf_err_at(&e, port, NULL);
    if (!source || !bf_page_resolve(s->page, source, &sb, &sp)) {
        bf_err(&e, BF_ESCHEMA, "bad_link", "\"%.80s\" names no block output on this page",
               source ? source : "(null)");
        return block_err(s, b, &e, err);
    }
    bf_page_input *in = &pb->inputs[k];
    if (in->text && !strcmp(in->text, source)) return BF_OK;
    char *text = bf_strdup(source);
    if (!text) {
        bf_err(&e, BF_ENOMEM, "out_of_memory", "out of memory");
        return block_err(s, b, &e, err);
    }
    bf_sess_invalidate(s, b);
    bf_free(in->text);
    in->text = text;
    in->src_block = sb;
    in->src_port = sp;
    return restructure(s, false, err);
}

static bf_status disconnect_input(bf_session *s, const char *block_id, const char *port,
                                  bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    bf_page_block *pb = &s->page->blocks[b];
    int k = find_input(pb->desc, port);
    if (k < 0) return no_such_input(s, b, port, err);
    if (!pb->inputs[k].text) return BF_OK;
    bf_sess_invalidate(s, b);
    bf_free(pb->inputs[k].text);
    pb->inputs[k].text = NULL;
    pb->inputs[k].src_block = -1;
    return restructure(s, false, err);
}

/* ---- attributes, devices, feeds ---------------------------------------------------------- */

/* Same value (and both given, or both defaulted): the change would change nothing. */
static bool same_value(const bf_attr_desc *d, const bf_attr_value *a, const bf_attr_value *b) {
    if (a->set != b->set || a->defaulted != b->defaulted) return false;
    if (!a->set) return true;
    cJSON *ja = bf_attr_to_json(d, a), *jb = bf_attr_to_json(d, b);
    bool same = ja && jb && cJSON_Compare(ja, jb, true);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    return same;
}

/*
 * What a check says about attribute `attr` of block b as it is now set: the block's own
 * inference on its inputs as the last check knew them (when every input is known), so that a
 * bad value ("strides": [1, 2, 2]) fails the edit that sets it rather than the next run. Only a
 * problem with this attribute fails it: what the new value does downstream (a shape the next
 * block refuses) is the check's to report, as an editor's page may pass through such states.
 */
static bf_status validate_attr(bf_session *s, int b, const char *attr, bf_error *e) {
    snode *n = &s->nodes[b];
    const bf_block_desc *d = n->pb->desc;
    bf_port_info in[16], out[16];
    if (d->n_inputs > 16 || d->n_outputs > 16 || !bf_sess_gather_infos(s, b, in)) return BF_OK;
    bf_error ve = {0};
    n->node.feed = NULL; /* a feed the new value no longer accepts is refused at the run, as
                            after any edit: the next feed may well fit */
    bf_status st = d->infer(&n->node, in, out, &ve);
    n->node.feed = n->feed;
    if (st == BF_OK || !(ve.attr[0] ? !strcmp(ve.attr, attr) : st == BF_EATTR)) return BF_OK;
    ve.block_id[0] = '\0';
    *e = ve;
    return st;
}

/* Set attribute `attr` of block b to `value` (NULL: back to its default, or unset). */
static bf_status set_attr(bf_session *s, const char *block_id, const char *attr,
                          const cJSON *value, bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    const bf_block_desc *d = n->pb->desc;
    bf_error e = {0};
    int a = -1;
    for (int i = 0; attr && i < d->n_attrs; i++)
        if (!strcmp(d->attrs[i].name, attr)) a = i;
    if (a < 0) {
        char dym[96];
        bf_err(&e, BF_ENOTFOUND, "unknown_attr", "%s has no attribute \"%.40s\"%s", d->type,
               attr ? attr : "(null)",
               bf_suggest_text(attr ? bf_suggest_attr(d, attr) : NULL, dym, sizeof(dym)));
        bf_err_at(&e, NULL, attr);
        return block_err(s, b, &e, err);
    }
    const bf_attr_desc *ad = &d->attrs[a];
    bf_attr_value v = {0};
    bf_status st;
    if (!value || cJSON_IsNull(value)) {
        if (!ad->def && !(ad->flags & BF_ATTR_OPTIONAL))
            st = bf_err(&e, BF_EATTR, "missing_attr", "%s requires the attribute \"%s\": it "
                        "has no default to go back to", d->type, ad->name);
        else
            st = bf_attr_set_default(ad, &v) ? BF_OK : bf_err(&e, BF_ENOMEM, "out_of_memory",
                                                              "out of memory");
    } else {
        st = bf_attr_parse_one(ad, value, &v, NULL, &e);
    }
    bf_file_scope files = {s->page->dir, s->page->confine_files, s->page->max_elements};
    if (st == BF_OK && (ad->kind == BF_ATTR_FILE || ad->kind == BF_ATTR_PATH)) {
        bf_attr_value tmp[64] = {{0}};
        BF_ASSERT(d->n_attrs <= BF_COUNT(tmp));
        tmp[a] = v;
        st = bf_attrs_load_files(d, tmp, &files, &e);
        v = tmp[a];
    }
    /* The same value changes nothing, except a file name: setting it again re-reads the file,
     * whose contents may have changed on disk. */
    if (st == BF_OK && ad->kind != BF_ATTR_FILE && ad->kind != BF_ATTR_PATH && same_value(ad, &n->pb->attrs[a], &v)) {
        bf_attr_value_free(&v);
        return BF_OK;
    }
    if (st == BF_OK) {
        bf_attr_value old = n->pb->attrs[a];
        /* A stateful block keeps its state across an attribute that says so (a Variable's
         * `trainable`); any other attribute of its own re-initialises it (bf_sess_state_*). */
        bf_tensor *kept = NULL;
        bool keep = d->state && (ad->flags & BF_ATTR_KEEPS_STATE);
        if (keep && (st = d->state->save(&n->node, &kept, &e))) {
            bf_attr_value_free(&v);
            bf_err_at(&e, NULL, attr);
            return block_err(s, b, &e, err);
        }
        if (!s->checked) bf_session_check(s, NULL, NULL); /* the inputs' shapes, for below */
        if (d->fini) d->fini(&n->node);
        n->pb->attrs[a] = v;
        st = d->init ? d->init(&n->node, &e) : BF_OK;
        if (st == BF_OK) {
            st = validate_attr(s, b, attr, &e);
            if (st && d->fini) d->fini(&n->node);
        }
        if (st) {
            n->pb->attrs[a] = old; /* keep the block as it was */
            bf_attr_value_free(&v);
            bf_error ignored;
            if (d->init) d->init(&n->node, &ignored);
            if (kept) d->state->load(&n->node, kept, &ignored);
        } else {
            bf_attr_value_free(&old);
            if (kept) d->state->load(&n->node, kept, &e); /* same dtype and shape */
            else if (d->state) bf_sess_state_was_reset(s, b, attr);
            bf_sess_invalidate(s, b);
        }
        bf_tensor_free(kept);
    } else {
        bf_attr_value_free(&v);
    }
    if (st) {
        bf_err_at(&e, NULL, attr);
        return block_err(s, b, &e, err);
    }
    return BF_OK;
}

static bf_status set_device(bf_session *s, const char *block_id, const char *device,
                            bf_error *err) {
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    int ordinal = 0, dev = bf_page_parse_device(device, &ordinal);
    if (dev < 0) {
        bf_error e = {0};
        snprintf(e.pointer, sizeof(e.pointer), "/blocks/%d/device", b);
        bf_err(&e, BF_ESCHEMA, "bad_device", "\"device\" must be \"auto\", \"cpu\", \"gpu\" or "
               "\"gpu:N\"");
        return block_err(s, b, &e, err);
    }
    bf_page_block *pb = &s->page->blocks[b];
    if ((int)pb->device == dev && pb->gpu_ordinal == ordinal) return BF_OK;
    pb->device = (bf_device_kind)dev;
    pb->gpu_ordinal = ordinal;
    bf_sess_invalidate(s, b);
    return BF_OK;
}

static bf_status feed_node(bf_session *s, int b, bf_tensor *copy, bf_error *err);

bf_status bf_session_feed(bf_session *s, const char *block_id, const bf_tensor *t,
                          bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    int b = find_node(s, block_id, err);
    if (b < 0) return BF_ENOTFOUND;
    snode *n = &s->nodes[b];
    bf_error e = {0};
    if (!(n->pb->desc->flags & BF_BLOCK_FEEDABLE) || !t) {
        bf_err(&e, BF_EINVAL, "not_feedable", "%s blocks cannot be fed; feed a Placeholder",
               n->pb->desc->type);
        return block_err(s, b, &e, err);
    }
    bf_tensor *copy = NULL;
    bf_port_info p;
    bf_port_set(&p, t->dtype, t->rank, t->dims);
    bf_status st = bf_sess_tensor_alloc(s, NULL, &p, &copy, &e);
    if (st) return block_err(s, b, &e, err);
    memcpy(copy->data, t->data, t->nbytes);
    return feed_node(s, b, copy, err);
}

bf_status bf_session_feed_tensor(bf_session *s, const char *block_id, bf_tensor *t,
                                 bf_error *err) {
    if (!s) {
        bf_sess_tensor_free(t);
        return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    }
    int b = find_node(s, block_id, err);
    if (b < 0) {
        bf_sess_tensor_free(t);
        return BF_ENOTFOUND;
    }
    snode *n = &s->nodes[b];
    bf_error e = {0};
    if (!(n->pb->desc->flags & BF_BLOCK_FEEDABLE) || !t || t->device) {
        if (!t)
            bf_err(&e, BF_EINVAL, "bad_argument", "the tensor is NULL");
        else if (t->device)
            bf_err(&e, BF_EINVAL, "bad_argument", "the tensor is not in host memory");
        else
            bf_err(&e, BF_EINVAL, "not_feedable", "%s blocks cannot be fed; feed a Placeholder",
                   n->pb->desc->type);
        bf_sess_tensor_free(t);
        return block_err(s, b, &e, err);
    }
    /* The session's memory account takes the bytes over from whoever held them. */
    bf_budget_release(t->budget, t->nbytes);
    t->budget = NULL;
    bf_status st = bf_budget_charge(&s->budget, t->nbytes, &e);
    if (st) {
        bf_tensor_free(t);
        return block_err(s, b, &e, err);
    }
    t->budget = &s->budget;
    return feed_node(s, b, t, err);
}

/* Make `copy` (owned by the session from here on) the feed of node b, once the placeholder's
 * dtype and shape accept it; freed on failure. */
static bf_status feed_node(bf_session *s, int b, bf_tensor *copy, bf_error *err) {
    snode *n = &s->nodes[b];
    bf_error e = {0};
    bf_status st;
    /* Check it against the placeholder's declared dtype and shape right away. */
    const bf_tensor *old = n->node.feed;
    n->node.feed = copy;
    bf_port_info out[4];
    st = n->pb->desc->infer(&n->node, NULL, out, &e);
    n->node.feed = old;
    if (st) {
        bf_sess_tensor_free(copy);
        return block_err(s, b, &e, err);
    }
    bf_sess_invalidate(s, b); /* first: the placeholder's output is a view of its feed */
    bf_sess_tensor_free(n->feed);
    n->feed = copy;
    n->node.feed = copy;
    return BF_OK;
}

/* ---- layout, outputs, name ---------------------------------------------------------------- */

static bf_status set_ui(bf_session *s, const char *block_id, const cJSON *ui, bf_error *err) {
    int b = block_id ? find_node(s, block_id, err) : -1;
    if (block_id && b < 0) return BF_ENOTFOUND;
    cJSON *copy = ui && !cJSON_IsNull(ui) ? cJSON_Duplicate(ui, 1) : NULL;
    if (ui && !cJSON_IsNull(ui) && !copy)
        return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    cJSON **slot = b >= 0 ? &s->page->blocks[b].ui : &s->page->ui;
    cJSON_Delete(*slot);
    *slot = copy;
    return BF_OK;
}

static bf_status set_outputs(bf_session *s, const char *const *refs, int n, bf_error *err) {
    if (n < 0 || (n > 0 && !refs))
        return page_err(s, err, BF_EINVAL, "bad_argument", "no outputs given");
    for (int i = 0; i < n; i++) {
        int b, p;
        if (!refs[i] || !bf_page_resolve(s->page, refs[i], &b, &p)) {
            bf_error e = {0};
            bf_strlcpy(e.page, s->page->file, sizeof(e.page));
            snprintf(e.pointer, sizeof(e.pointer), "/outputs/%d", i);
            bf_err(&e, BF_ESCHEMA, "bad_output", "output %d (\"%.80s\") names no block output "
                   "on this page", i, refs[i] ? refs[i] : "(null)");
            if (err) *err = e;
            return BF_ESCHEMA;
        }
    }
    char **outs = bf_calloc((size_t)BF_MAX(n, 1), sizeof(char *));
    bool oom = !outs;
    for (int i = 0; !oom && i < n; i++) oom = !(outs[i] = bf_strdup(refs[i]));
    if (oom) {
        for (int i = 0; outs && i < n; i++) bf_free(outs[i]);
        bf_free(outs);
        return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    for (int i = 0; i < s->page->n_outputs; i++) bf_free(s->page->outputs[i]);
    bf_free(s->page->outputs);
    s->page->outputs = outs;
    s->page->n_outputs = n;
    s->checked = false;
    return BF_OK;
}

static bf_status set_text(bf_session *s, char **slot, const char *text, bf_error *err) {
    char *dup = bf_strdup(text ? text : "");
    if (!dup) return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    bf_free(*slot);
    *slot = dup;
    return BF_OK;
}

/* ---- the public calls ---------------------------------------------------------------------- */

bf_status bf_session_add_block(bf_session *s, const char *id, const char *type,
                               const char *attrs_json, const char *device, const char *ui_json,
                               bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    cJSON *attrs = NULL, *ui = NULL;
    bf_status st = parse_json(s, attrs_json, "the attributes", &attrs, err);
    if (st == BF_OK) st = parse_json(s, ui_json, "the layout", &ui, err);
    if (st == BF_OK) st = add_block(s, id, type, attrs, device, ui, err);
    cJSON_Delete(attrs);
    cJSON_Delete(ui);
    return st;
}

bf_status bf_session_remove_block(bf_session *s, const char *id, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return remove_block(s, id, err);
}

bf_status bf_session_rename_block(bf_session *s, const char *id, const char *new_id,
                                  bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return rename_block(s, id, new_id, err);
}

bf_status bf_session_connect(bf_session *s, const char *block_id, const char *port,
                             const char *source, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return connect_input(s, block_id, port, source, err);
}

bf_status bf_session_disconnect(bf_session *s, const char *block_id, const char *port,
                                bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return disconnect_input(s, block_id, port, err);
}

bf_status bf_session_set_attr(bf_session *s, const char *block_id, const char *attr,
                              const char *json_value, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    cJSON *v = NULL;
    bf_status st = BF_OK;
    if (json_value) {
        st = parse_json(s, json_value, "the value", &v, err);
        if (st == BF_OK && !v) st = page_err(s, err, BF_EPARSE, "bad_json", "the value is "
                                             "empty");
    }
    if (st) {
        if (err) {
            bf_strlcpy(err->block_id, block_id ? block_id : "", sizeof(err->block_id));
            bf_err_at(err, NULL, attr);
        }
        return st;
    }
    st = set_attr(s, block_id, attr, v, err);
    cJSON_Delete(v);
    return st;
}

bf_status bf_session_set_device(bf_session *s, const char *block_id, const char *device,
                                bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return set_device(s, block_id, device, err);
}

bf_status bf_session_set_ui(bf_session *s, const char *block_id, const char *ui_json,
                            bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    cJSON *ui = NULL;
    bf_status st = parse_json(s, ui_json, "the layout", &ui, err);
    if (st == BF_OK) st = set_ui(s, block_id, ui, err);
    cJSON_Delete(ui);
    return st;
}

bf_status bf_session_set_outputs(bf_session *s, const char *const *refs, int n, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return set_outputs(s, refs, n, err);
}

bf_status bf_session_set_name(bf_session *s, const char *name, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return set_text(s, &s->page->name, name, err);
}

bf_status bf_session_set_description(bf_session *s, const char *text, bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    return set_text(s, &s->page->description, text, err);
}

/* ---- a batch of edits as JSON ---------------------------------------------------------------- */

typedef struct edit_op {
    const char *name;
    const char *required[4]; /* members that must be present */
    const char *optional[4];
} edit_op;

static const edit_op OPS[] = {
    {"add_block", {"id", "type"}, {"attrs", "device", "ui"}},
    {"remove_block", {"id"}, {0}},
    {"rename_block", {"id", "new_id"}, {0}},
    {"connect", {"block", "port", "source"}, {0}},
    {"disconnect", {"block", "port"}, {0}},
    {"set_attr", {"block", "attr", "value"}, {0}},
    {"set_device", {"block", "device"}, {0}},
    {"set_ui", {"ui"}, {"block"}},
    {"set_outputs", {"outputs"}, {0}},
    {"set_name", {"name"}, {0}},
    {"set_description", {"description"}, {0}},
};

static const char *str(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Check the shape of edit `j` against its op: a known op, the members it needs (strings where
 * text is meant), and no others. */
static bf_status edit_shape(const cJSON *j, const edit_op **op, char *why, size_t size) {
    *op = NULL;
    const char *name = str(j, "op");
    if (!cJSON_IsObject(j) || !name) {
        snprintf(why, size, "an edit is an object with an \"op\"");
        return BF_ESCHEMA;
    }
    for (int i = 0; i < BF_COUNT(OPS); i++)
        if (!strcmp(OPS[i].name, name)) *op = &OPS[i];
    if (!*op) {
        snprintf(why, size, "unknown edit \"%.40s\" (add_block, remove_block, rename_block, "
                 "connect, disconnect, set_attr, set_device, set_ui, set_outputs, set_name, "
                 "set_description)", name);
        return BF_ESCHEMA;
    }
    for (const cJSON *k = j->child; k; k = k->next) {
        bool known = !strcmp(k->string, "op");
        for (int i = 0; i < 4 && !known; i++)
            known = ((*op)->required[i] && !strcmp((*op)->required[i], k->string)) ||
                    ((*op)->optional[i] && !strcmp((*op)->optional[i], k->string));
        if (!known) {
            snprintf(why, size, "%s has no member \"%.40s\"", name, k->string);
            return BF_ESCHEMA;
        }
    }
    static const char *const texts[] = {"id", "type", "new_id", "block", "port", "source",
                                        "attr", "device", "name", "description"};
    for (int i = 0; i < 4 && (*op)->required[i]; i++) {
        const char *key = (*op)->required[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
        if (!v) {
            snprintf(why, size, "%s needs \"%s\"", name, key);
            return BF_ESCHEMA;
        }
    }
    for (int i = 0; i < BF_COUNT(texts); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, texts[i]);
        if (v && !cJSON_IsString(v)) {
            snprintf(why, size, "\"%s\" must be a string", texts[i]);
            return BF_ESCHEMA;
        }
    }
    return BF_OK;
}

/* Apply one edit (its shape checked). */
static bf_status apply_one(bf_session *s, const edit_op *op, const cJSON *j, bf_error *err) {
    const char *name = op->name;
    if (!strcmp(name, "add_block"))
        return add_block(s, str(j, "id"), str(j, "type"), cJSON_GetObjectItem(j, "attrs"),
                         str(j, "device"), cJSON_GetObjectItem(j, "ui"), err);
    if (!strcmp(name, "remove_block")) return remove_block(s, str(j, "id"), err);
    if (!strcmp(name, "rename_block")) return rename_block(s, str(j, "id"), str(j, "new_id"),
                                                           err);
    if (!strcmp(name, "connect"))
        return connect_input(s, str(j, "block"), str(j, "port"), str(j, "source"), err);
    if (!strcmp(name, "disconnect")) return disconnect_input(s, str(j, "block"),
                                                             str(j, "port"), err);
    if (!strcmp(name, "set_attr"))
        return set_attr(s, str(j, "block"), str(j, "attr"), cJSON_GetObjectItem(j, "value"),
                        err);
    if (!strcmp(name, "set_device")) return set_device(s, str(j, "block"), str(j, "device"),
                                                       err);
    if (!strcmp(name, "set_ui")) return set_ui(s, str(j, "block"), cJSON_GetObjectItem(j, "ui"),
                                               err);
    if (!strcmp(name, "set_name")) return set_text(s, &s->page->name, str(j, "name"), err);
    if (!strcmp(name, "set_description"))
        return set_text(s, &s->page->description, str(j, "description"), err);
    /* set_outputs */
    const cJSON *outs = cJSON_GetObjectItem(j, "outputs");
    int n = cJSON_IsArray(outs) ? cJSON_GetArraySize(outs) : -1;
    const char **refs = n >= 0 ? bf_calloc((size_t)BF_MAX(n, 1), sizeof(char *)) : NULL;
    if (n < 0) return page_err(s, err, BF_ESCHEMA, "bad_edit", "\"outputs\" must be an array");
    if (!refs) return page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory");
    int i = 0;
    for (const cJSON *o = outs->child; o; o = o->next) refs[i++] = cJSON_IsString(o) ?
                                                                    o->valuestring : NULL;
    bf_status st = set_outputs(s, refs, n, err);
    bf_free(refs);
    return st;
}

/* Apply every edit of `list` to s; on the first failure, report it as edit i and stop. */
static bf_status apply_list(bf_session *s, const cJSON *list, bf_diags *diags, bf_error *err) {
    int i = 0;
    for (const cJSON *j = list->child; j; j = j->next, i++) {
        const edit_op *op;
        char why[256];
        bf_error e = {0};
        bf_status st = edit_shape(j, &op, why, sizeof(why));
        if (st) {
            bf_err(&e, st, "bad_edit", "%s", why);
            bf_strlcpy(e.page, s->page->file, sizeof(e.page));
        } else {
            st = apply_one(s, op, j, &e);
        }
        if (st) {
            char msg[sizeof(e.message) + 64];
            snprintf(msg, sizeof(msg), "edit %d (%s): %s", i, op ? op->name : "?", e.message);
            bf_strlcpy(e.message, msg, sizeof(e.message));
            snprintf(e.pointer, sizeof(e.pointer), "/%d", i);
            if (err) *err = e;
            bf_diags_push(diags, &e);
            return st;
        }
    }
    return BF_OK;
}

bf_status bf_session_apply_edits(bf_session *s, const char *json, size_t len, bf_diags *diags,
                                 bf_error *err) {
    if (!s) return bf_err(err, BF_EINVAL, "bad_argument", "session is NULL");
    if (!json) return bf_err(err, BF_EINVAL, "bad_argument", "the edit list is NULL");
    if (!s || !json) return bf_err(err, BF_EINVAL, "bad_argument", "session or edits is NULL");
    if (len > s->ctx->cfg.max_page_bytes)
        return page_err(s, err, BF_ELIMIT, "edits_too_large", "the edits are %zu bytes, above "
                        "the page size limit of %llu (bf_config.max_page_bytes)", len,
                        (unsigned long long)s->ctx->cfg.max_page_bytes);
    unsigned failures = bf_alloc_failures();
    cJSON *list = cJSON_ParseWithLength(json, len);
    if (!list) {
        bf_status st = bf_alloc_failures() != failures
                           ? page_err(s, err, BF_ENOMEM, "out_of_memory", "out of memory")
                           : page_err(s, err, BF_EPARSE, "bad_json", "the edits are not valid "
                                      "JSON (or nested deeper than %d levels)",
                                      CJSON_NESTING_LIMIT);
        if (err) bf_diags_push(diags, err);
        return st;
    }
    bf_status st = BF_OK;
    if (!cJSON_IsArray(list)) {
        st = page_err(s, err, BF_ESCHEMA, "bad_edit", "the edits must be a JSON array");
        if (err) bf_diags_push(diags, err);
    } else if (cJSON_GetArraySize(list) > 1) {
        /* All or nothing: the batch is first applied to a copy of the page, so an edit that
         * fails halfway leaves this session untouched. A single edit is atomic by itself. */
        char *text = NULL;
        bf_page *copy = NULL;
        bf_session *dry = NULL;
        st = bf_page_to_json(s->page, &text, err);
        if (st == BF_OK)
            st = bf_page_parse(s->ctx, text, strlen(text), s->page->file, s->page->dir,
                               BF_LOAD_INCOMPLETE, &copy, NULL, err);
        if (st == BF_OK) { /* the copy needs no state of its own */
            bf_free(copy->checkpoint);
            copy->checkpoint = NULL;
        }
        if (st == BF_OK) st = bf_sess_make(s->ctx, copy, false, true, &dry, err);
        bf_string_free(text);
        if (dry) dry->dry_run = true;
        if (st == BF_OK) st = apply_list(dry, list, diags, err);
        bf_session_free(dry);
    }
    s->edit_diags = diags; /* where edits report a state they re-initialised */
    if (st == BF_OK && cJSON_IsArray(list)) st = apply_list(s, list, diags, err);
    s->edit_diags = NULL;
    cJSON_Delete(list);
    return st;
}
