/*
 * page.c - loading a page: JSON text -> blocks, attributes and links, reporting every problem
 * at once with a stable code, the block, the port or attribute, and a JSON pointer.
 *
 * The loader is deliberately lenient in what it goes on with and strict in what it accepts:
 * after a problem it keeps reading the rest of the page so that an editor can show all the
 * problems in one pass, but a page with any error is never returned. Size limits (file bytes,
 * JSON depth, block count) are checked before the work they bound.
 *
 * With BF_LOAD_INCOMPLETE the wiring may be unfinished (an editor's page): unconnected inputs,
 * links and outputs naming nothing, and cycles are kept for the session's check to report;
 * everything else is still an error. Layout (`ui`) and editors' own keys (`x-...`) are kept
 * as written, so that page_json.c can write the page back.
 */
#include "page.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small helpers --------------------------------------------------------------------- */

/* FNV-1a: ids are short and come from the page, so any decent spread will do. */
static uint64_t hash_id(const char *s) {
    uint64_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

int bf_page_find(const bf_page *page, const char *id) {
    if (!page->index) {
        for (int i = 0; i < page->n_blocks; i++)
            if (page->blocks[i].id && !strcmp(page->blocks[i].id, id)) return i;
        return -1;
    }
    size_t mask = page->index_cap - 1;
    for (size_t h = (size_t)hash_id(id) & mask;; h = (h + 1) & mask) {
        int b = page->index[h];
        if (b < 0 || !strcmp(page->blocks[b].id, id)) return b;
    }
}

/* Enter block b (its id set, not yet in the index) into the hash index. */
static void index_add(bf_page *page, int b) {
    size_t mask = page->index_cap - 1;
    size_t h = (size_t)hash_id(page->blocks[b].id) & mask;
    while (page->index[h] >= 0) h = (h + 1) & mask;
    page->index[h] = b;
}

bool bf_page_reindex(bf_page *page) {
    size_t cap = 16;
    while (cap < 2 * (size_t)page->n_blocks) cap *= 2;
    if (cap != page->index_cap || !page->index) {
        int *index = bf_malloc(cap * sizeof(int));
        bf_free(page->index);
        page->index = index;
        page->index_cap = index ? cap : 0;
        if (!index) return false;
    }
    memset(page->index, 0xff, page->index_cap * sizeof(int)); /* all -1 */
    for (int b = 0; b < page->n_blocks; b++) index_add(page, b);
    return true;
}

void bf_page_relink(bf_page *page) {
    for (int bi = 0; bi < page->n_blocks; bi++) {
        bf_page_block *b = &page->blocks[bi];
        b->json_index = bi;
        for (int i = 0; b->desc && i < b->desc->n_inputs; i++) {
            bf_page_input *in = &b->inputs[i];
            in->src_block = -1;
            in->src_port = 0;
            int sb, sp;
            if (in->text && bf_page_resolve(page, in->text, &sb, &sp)) {
                in->src_block = sb;
                in->src_port = sp;
            }
        }
    }
}

const char *bf_page_bad_id(const char *id) {
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > 63) return "an id is 1 to 63 characters";
    if (id[0] == '.') return "an id does not start with '.'";
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) return "an id has no control characters";
        if (*p == ':' || *p == '/' || *p == '\\')
            return "an id has no ':', '/' or '\\' (results are written as ID.npy)";
    }
    return NULL;
}

bool bf_page_resolve(const bf_page *page, const char *ref, int *block, int *port) {
    char id[128];
    const char *colon = strrchr(ref, ':');
    size_t n = colon ? (size_t)(colon - ref) : strlen(ref);
    if (n >= sizeof(id)) return false;
    memcpy(id, ref, n);
    id[n] = '\0';
    int b = bf_page_find(page, id);
    if (b < 0) return false;
    const bf_block_desc *d = page->blocks[b].desc;
    if (!d) return false; /* a block of unknown type (already reported) has no outputs */
    int p = 0;
    if (colon) {
        for (p = 0; p < d->n_outputs; p++)
            if (!strcmp(d->outputs[p].name, colon + 1)) break;
        if (p == d->n_outputs) return false;
    }
    if (d->n_outputs == 0) return false;
    *block = b;
    *port = p;
    return true;
}

/* The loader's running state: the page being built and where problems go. */
typedef struct loader {
    bf_page *page;
    bf_diags *diags;
    bool incomplete;       /* BF_LOAD_INCOMPLETE: keep unfinished wiring for the session */
    bool skip_files;       /* BF_LOAD_SKIP_FILES: do not read `file` attributes */
    bf_error first;
    int n_errors;
    bool oom;
} loader;

static void problem(loader *L, bf_status st, const char *code, const char *block_id,
                    const char *port, const char *attr, const char *fmt, const char *ptr,
                    ...) BF_PRINTF(7, 9);

/* Record one problem. `ptr` is the JSON pointer; the message is printf(fmt, ...). */
static void problem(loader *L, bf_status st, const char *code, const char *block_id,
                    const char *port, const char *attr, const char *fmt, const char *ptr,
                    ...) {
    bf_error e = {0};
    va_list ap;
    va_start(ap, ptr);
    bf_verr(&e, st, code, fmt, ap);
    va_end(ap);
    bf_strlcpy(e.page, L->page->file, sizeof(e.page));
    bf_strlcpy(e.block_id, block_id ? block_id : "", sizeof(e.block_id));
    bf_err_at(&e, port, attr);
    bf_strlcpy(e.pointer, ptr ? ptr : "", sizeof(e.pointer));
    if (st != BF_OK && L->n_errors++ == 0) L->first = e;
    if (!bf_diags_push(L->diags, &e)) L->oom = true;
}

/* JSON nesting depth, iteratively bounded: stops counting past `limit`. */
static int json_depth(const cJSON *j, int depth, int limit) {
    if (depth > limit) return depth;
    int worst = depth;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next) {
        int d = json_depth(c, depth + 1, limit);
        if (d > worst) worst = d;
        if (worst > limit) break;
    }
    return worst;
}

static bool is_ext_key(const char *k) { return k && !strncmp(k, "x-", 2); }

int bf_page_parse_device(const char *s, int *ordinal) {
    *ordinal = 0;
    if (!s) return -1;
    if (!strcmp(s, "auto")) return BF_DEVICE_AUTO;
    if (!strcmp(s, "cpu")) return BF_DEVICE_CPU;
    if (!strcmp(s, "gpu")) return BF_DEVICE_GPU;
    if (!strncmp(s, "gpu:", 4) && s[4] >= '0' && s[4] <= '9' &&
        (s[5] == '\0' || (s[5] >= '0' && s[5] <= '9' && s[6] == '\0'))) {
        *ordinal = atoi(s + 4);
        return BF_DEVICE_GPU;
    }
    return -1;
}

bool bf_json_add(cJSON *obj, const char *key, cJSON *item) {
    if (!item) return false;
    if (cJSON_AddItemToObject(obj, key, item)) return true;
    cJSON_Delete(item);
    return false;
}

/*
 * Keep the "ui" value and the "x-..." keys of object `j` for writing the page back: *ui a
 * copy of j["ui"] (NULL when absent), *ext an object of the x- keys in order (NULL when none).
 * False when out of memory.
 */
static bool keep_layout(const cJSON *j, cJSON **ui, cJSON **ext) {
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "ui");
    if (u && !(*ui = cJSON_Duplicate(u, 1))) return false;
    for (const cJSON *k = j->child; k; k = k->next) {
        if (!is_ext_key(k->string)) continue;
        if (!*ext && !(*ext = cJSON_CreateObject())) return false;
        if (!bf_json_add(*ext, k->string, cJSON_Duplicate(k, 1))) return false;
    }
    return true;
}

/* ---- one block ------------------------------------------------------------------------- */

static void load_block(loader *L, bf_context *ctx, const cJSON *jb, int index) {
    bf_page *page = L->page;
    bf_page_block *b = &page->blocks[page->n_blocks];
    char ptr[64];
    snprintf(ptr, sizeof(ptr), "/blocks/%d", index);
    if (!cJSON_IsObject(jb)) {
        problem(L, BF_ESCHEMA, "bad_block", NULL, NULL, NULL, "a block must be an object", ptr);
        return;
    }
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(jb, "id");
    const cJSON *jtype = cJSON_GetObjectItemCaseSensitive(jb, "type");
    char p2[96];
    snprintf(p2, sizeof(p2), "%s/id", ptr);
    const char *why = cJSON_IsString(jid) ? bf_page_bad_id(jid->valuestring)
                                          : "a block needs an \"id\" string";
    if (why) {
        problem(L, BF_ESCHEMA, "bad_id", NULL, NULL, NULL,
                "%s", p2, why);
        return;
    }
    const char *id = jid->valuestring;
    if (bf_page_find(page, id) >= 0) {
        problem(L, BF_ESCHEMA, "duplicate_id", id, NULL, NULL,
                "the id \"%s\" is used by an earlier block", p2, id);
        return;
    }
    /* Unknown keys. */
    static const char *const keys[] = {"id", "type", "inputs", "attrs", "ui", "device"};
    for (const cJSON *k = jb->child; k; k = k->next) {
        int ok = is_ext_key(k->string);
        for (int i = 0; !ok && i < BF_COUNT(keys); i++) ok = !strcmp(k->string, keys[i]);
        if (!ok) {
            char p3[160];
            snprintf(p3, sizeof(p3), "%s/%.60s", ptr, k->string);
            problem(L, BF_ESCHEMA, "unknown_key", id, NULL, NULL,
                    "unknown key \"%.60s\" (editors' own keys start with \"x-\")", p3,
                    k->string);
        }
    }
    snprintf(p2, sizeof(p2), "%s/type", ptr);
    const bf_block_desc *desc = cJSON_IsString(jtype) ? bf_registry_find(jtype->valuestring)
                                                      : NULL;
    if (!desc) {
        if (cJSON_IsString(jtype))
        {
            char dym[96];
            problem(L, BF_ESCHEMA, "unknown_block_type", id, NULL, NULL,
                    "unknown block type \"%.60s\"%s", p2, jtype->valuestring,
                    bf_suggest_text(bf_suggest_type(jtype->valuestring), dym, sizeof(dym)));
        }
        else
            problem(L, BF_ESCHEMA, "unknown_block_type", id, NULL, NULL,
                    "a block needs a \"type\" string", p2);
    }
    b->id = bf_strdup(id);
    b->json_index = index;
    b->desc = desc;
    page->n_blocks++;
    if (!b->id) {
        L->oom = true;
        return;
    }
    index_add(page, page->n_blocks - 1);
    const cJSON *jattrs = cJSON_GetObjectItemCaseSensitive(jb, "attrs");
    cJSON *attr_ui = NULL; /* an attribute called "ui" is reported by the attribute parser */
    bool kept = keep_layout(jb, &b->ui, &b->ext) &&
                (!cJSON_IsObject(jattrs) || keep_layout(jattrs, &attr_ui, &b->attr_ext));
    cJSON_Delete(attr_ui);
    if (!kept) {
        L->oom = true;
        return;
    }
    const cJSON *jdev = cJSON_GetObjectItemCaseSensitive(jb, "device");
    if (jdev) {
        snprintf(p2, sizeof(p2), "%s/device", ptr);
        b->device = (bf_device_kind)(cJSON_IsString(jdev)
                                         ? bf_page_parse_device(jdev->valuestring,
                                                                &b->gpu_ordinal)
                                         : -1);
        if ((int)b->device < 0) {
            b->device = BF_DEVICE_AUTO;
            problem(L, BF_ESCHEMA, "bad_device", id, NULL, NULL,
                    "\"device\" must be \"auto\", \"cpu\", \"gpu\" or \"gpu:N\"", p2);
        }
    }
    if (!desc) return;
    b->attrs = bf_calloc((size_t)BF_MAX(desc->n_attrs, 1), sizeof(bf_attr_value));
    b->inputs = bf_calloc((size_t)BF_MAX(desc->n_inputs, 1), sizeof(bf_page_input));
    if (!b->attrs || !b->inputs) {
        L->oom = true;
        return;
    }
    for (int i = 0; i < desc->n_inputs; i++) b->inputs[i].src_block = -1;

    /* Attributes. */
    bf_error tmpl = {0};
    bf_strlcpy(tmpl.page, page->file, sizeof(tmpl.page));
    bf_strlcpy(tmpl.block_id, id, sizeof(tmpl.block_id));
    bf_strlcpy(tmpl.pointer, ptr, sizeof(tmpl.pointer));
    bf_attr_report rep = {.tmpl = &tmpl, .diags = L->diags};
    bf_attrs_parse(desc, cJSON_GetObjectItemCaseSensitive(jb, "attrs"), b->attrs, &rep);
    if (rep.n_errors && L->n_errors++ == 0) L->first = rep.first;
    L->n_errors += rep.n_errors ? rep.n_errors - 1 : 0;
    L->oom |= rep.oom;
    if (!rep.n_errors && !rep.oom && !L->skip_files) {
        bf_file_scope files = {page->dir, page->confine_files, page->max_elements};
        bf_error e = tmpl;
        if (bf_attrs_load_files(desc, b->attrs, &files, &e)) {
            char p3[160];
            snprintf(p3, sizeof(p3), "%s/attrs/%s", ptr, e.attr);
            problem(L, e.status, e.code, id, NULL, e.attr, "%s", p3, e.message);
        }
    }

    /* Inputs: texts now, links once every id is known. */
    const cJSON *jin = cJSON_GetObjectItemCaseSensitive(jb, "inputs");
    snprintf(p2, sizeof(p2), "%s/inputs", ptr);
    if (jin && !cJSON_IsObject(jin)) {
        problem(L, BF_ESCHEMA, "bad_link", id, NULL, NULL,
                "\"inputs\" must be an object of port: \"block\" or \"block:port\"", p2);
        return;
    }
    for (const cJSON *k = jin ? jin->child : NULL; k; k = k->next) {
        char p3[160];
        snprintf(p3, sizeof(p3), "%s/%.60s", p2, k->string);
        int port = -1;
        for (int i = 0; i < desc->n_inputs; i++)
            if (!strcmp(desc->inputs[i].name, k->string)) port = i;
        if (port < 0) {
            char names[128] = "";
            size_t n = 0;
            for (int i = 0; i < desc->n_inputs && n < sizeof(names); i++)
                n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
                                      desc->inputs[i].name);
            problem(L, BF_ESCHEMA, "unknown_port", id, k->string, NULL,
                    "%s has no input port \"%.40s\" (its inputs: %s)", p3, desc->type,
                    k->string, n ? names : "none");
            continue;
        }
        if (b->inputs[port].text || b->inputs[port].src_block == -2) {
            problem(L, BF_ESCHEMA, "duplicate_port", id, k->string, NULL,
                    "input \"%.40s\" is given twice", p3, k->string);
            continue;
        }
        if (!cJSON_IsString(k) || !k->valuestring[0]) {
            problem(L, BF_ESCHEMA, "bad_link", id, k->string, NULL,
                    "an input names its source as \"block\" or \"block:port\" (one string)",
                    p3);
            b->inputs[port].src_block = -2; /* reported: not also "missing_input" */
            continue;
        }
        if (!(b->inputs[port].text = bf_strdup(k->valuestring))) L->oom = true;
    }
}

/* Resolve every input text to (block, port) and report missing inputs (not when the page may
 * be incomplete: the session's check reports those). */
static void link_inputs(loader *L) {
    bf_page *page = L->page;
    for (int bi = 0; bi < page->n_blocks; bi++) {
        bf_page_block *b = &page->blocks[bi];
        if (!b->desc) continue;
        for (int i = 0; i < b->desc->n_inputs; i++) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "/blocks/%d/inputs/%s", b->json_index,
                     b->desc->inputs[i].name);
            bf_page_input *in = &b->inputs[i];
            if (!in->text && in->src_block == -2) { /* bad_link reported */
                in->src_block = -1;
                continue;
            }
            int sb, sp;
            bool ok = in->text && bf_page_resolve(page, in->text, &sb, &sp) &&
                      page->blocks[sb].desc;
            if (ok) {
                in->src_block = sb;
                in->src_port = sp;
                continue;
            }
            if (L->incomplete) continue;
            if (!in->text && (b->desc->inputs[i].flags & BF_PORT_OPTIONAL)) continue;
            if (!in->text) {
                snprintf(ptr, sizeof(ptr), "/blocks/%d/inputs", b->json_index);
                problem(L, BF_ESCHEMA, "missing_input", b->id, b->desc->inputs[i].name, NULL,
                        "input \"%s\" of %s is not connected", ptr, b->desc->inputs[i].name,
                        b->desc->type);
                continue;
            }
            problem(L, BF_ESCHEMA, "bad_link", b->id, b->desc->inputs[i].name, NULL,
                    "\"%.80s\" names no block output on this page", ptr, in->text);
        }
    }
}

int bf_page_topo(const bf_page *page, int *order, bool *ordered) {
    int n = page->n_blocks;
    int *indeg = bf_calloc((size_t)BF_MAX(n, 1), sizeof(int));
    int *start = bf_calloc((size_t)n + 1, sizeof(int)); /* consumers in CSR form */
    int *cons = NULL;
    int head = 0, tail = 0;
    if (!indeg || !start) goto oom;
    size_t edges = 0;
    for (int i = 0; i < n; i++) {
        const bf_page_block *b = &page->blocks[i];
        for (int k = 0; b->desc && k < b->desc->n_inputs; k++) {
            int src = b->inputs[k].src_block;
            if (src < 0) continue;
            indeg[i]++;
            start[src + 1]++;
            edges++;
        }
    }
    for (int i = 0; i < n; i++) start[i + 1] += start[i];
    if (!(cons = bf_calloc(BF_MAX(edges, 1), sizeof(int)))) goto oom;
    for (int i = 0; i < n; i++) {
        const bf_page_block *b = &page->blocks[i];
        for (int k = 0; b->desc && k < b->desc->n_inputs; k++)
            if (b->inputs[k].src_block >= 0) cons[start[b->inputs[k].src_block]++] = i;
    }
    for (int i = n; i > 0; i--) start[i] = start[i - 1]; /* undo the fill's advance */
    start[0] = 0;
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0) order[tail++] = i;
    while (head < tail) {
        int b = order[head++];
        for (int c = start[b]; c < start[b + 1]; c++)
            if (--indeg[cons[c]] == 0) order[tail++] = cons[c];
    }
    for (int i = 0; ordered && i < n; i++) ordered[i] = false;
    for (int k = 0; ordered && k < tail; k++) ordered[order[k]] = true;
    bf_free(indeg);
    bf_free(start);
    bf_free(cons);
    return tail;
oom:
    bf_free(indeg);
    bf_free(start);
    bf_free(cons);
    return -1;
}

/* Report every block on or behind a cycle (with the other wiring problems, at once). */
static void find_cycles(loader *L) {
    bf_page *page = L->page;
    int n = page->n_blocks;
    int *order = bf_calloc((size_t)BF_MAX(n, 1), sizeof(int));
    bool *ordered = bf_calloc((size_t)BF_MAX(n, 1), sizeof(bool));
    int done = order && ordered ? bf_page_topo(page, order, ordered) : -1;
    if (done < 0) L->oom = true;
    for (int i = 0; done >= 0 && done < n && i < n; i++) {
        if (ordered[i] || !page->blocks[i].desc) continue;
        char ptr[48];
        snprintf(ptr, sizeof(ptr), "/blocks/%d", page->blocks[i].json_index);
        problem(L, BF_ESCHEMA, "cycle", page->blocks[i].id, NULL, NULL,
                "this block is on (or fed by) a cycle: a block's inputs cannot depend on its "
                "own output", ptr);
    }
    bf_free(order);
    bf_free(ordered);
}

/* ---- the page ------------------------------------------------------------------------- */

void bf_page_block_clear(bf_page_block *b) {
    if (b->desc) {
        bf_attrs_free(b->attrs, b->desc->n_attrs);
        for (int k = 0; b->inputs && k < b->desc->n_inputs; k++) bf_free(b->inputs[k].text);
    }
    bf_free(b->attrs);
    bf_free(b->inputs);
    bf_free(b->id);
    cJSON_Delete(b->ui);
    cJSON_Delete(b->ext);
    cJSON_Delete(b->attr_ext);
    memset(b, 0, sizeof(*b));
}

void bf_page_free(bf_page *page) {
    if (!page) return;
    for (int i = 0; i < page->n_blocks; i++) bf_page_block_clear(&page->blocks[i]);
    cJSON_Delete(page->ui);
    cJSON_Delete(page->ext);
    for (int i = 0; i < page->n_outputs; i++) bf_free(page->outputs[i]);
    bf_free(page->outputs);
    bf_free(page->blocks);
    bf_free(page->index);
    bf_free(page->file);
    bf_free(page->dir);
    bf_free(page->name);
    bf_free(page->description);
    bf_free(page->checkpoint);
    bf_free(page);
}

/* Line and column (1-based) of byte offset `off` in `text`. */
static void line_col(const char *text, size_t off, int *line, int *col) {
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

static void load_top(loader *L, bf_context *ctx, const cJSON *root) {
    bf_page *page = L->page;
    if (!cJSON_IsObject(root)) {
        problem(L, BF_ESCHEMA, "bad_page", NULL, NULL, NULL, "a page must be a JSON object", "");
        return;
    }
    static const char *const keys[] = {"format", "version", "name", "description", "blocks",
                                       "outputs", "ui", "checkpoint"};
    for (const cJSON *k = root->child; k; k = k->next) {
        int ok = is_ext_key(k->string);
        for (int i = 0; !ok && i < BF_COUNT(keys); i++) ok = !strcmp(k->string, keys[i]);
        if (!ok) {
            char p[96];
            snprintf(p, sizeof(p), "/%.60s", k->string);
            problem(L, BF_ESCHEMA, "unknown_key", NULL, NULL, NULL,
                    "unknown key \"%.60s\" (editors' own keys start with \"x-\")", p,
                    k->string);
        }
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "blockflow.page"))
        problem(L, BF_ESCHEMA, "bad_format", NULL, NULL, NULL,
                "\"format\" must be \"blockflow.page\"", "/format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1)
        problem(L, BF_ESCHEMA, "bad_version", NULL, NULL, NULL,
                "\"version\" must be 1 (the page format version this library reads)",
                "/version");
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(root, "description");
    if (name && !cJSON_IsString(name))
        problem(L, BF_ESCHEMA, "bad_page", NULL, NULL, NULL, "\"name\" must be a string", "/name");
    if (desc && !cJSON_IsString(desc))
        problem(L, BF_ESCHEMA, "bad_page", NULL, NULL, NULL, "\"description\" must be a string",
                "/description");
    const cJSON *ckpt = cJSON_GetObjectItemCaseSensitive(root, "checkpoint");
    if (ckpt && (!cJSON_IsString(ckpt) || !ckpt->valuestring[0]))
        problem(L, BF_ESCHEMA, "bad_page", NULL, NULL, NULL, "\"checkpoint\" must be the name "
                "of an .npz file (relative to the page's folder)", "/checkpoint");
    else if (ckpt && !(page->checkpoint = bf_strdup(ckpt->valuestring)))
        L->oom = true;
    page->name = bf_strdup(cJSON_IsString(name) ? name->valuestring : "");
    page->description = bf_strdup(cJSON_IsString(desc) ? desc->valuestring : "");
    if (!page->name || !page->description || !keep_layout(root, &page->ui, &page->ext))
        L->oom = true;

    const cJSON *blocks = cJSON_GetObjectItemCaseSensitive(root, "blocks");
    if (!cJSON_IsArray(blocks)) {
        problem(L, BF_ESCHEMA, "bad_page", NULL, NULL, NULL, "\"blocks\" must be an array",
                "/blocks");
        return;
    }
    int n = cJSON_GetArraySize(blocks);
    if (n > ctx->cfg.max_blocks) {
        problem(L, BF_ELIMIT, "too_many_blocks", NULL, NULL, NULL,
                "the page has %d blocks, above the limit of %d (bf_config.max_blocks)",
                "/blocks", n, ctx->cfg.max_blocks);
        return;
    }
    page->blocks = bf_calloc((size_t)BF_MAX(n, 1), sizeof(bf_page_block));
    page->cap_blocks = BF_MAX(n, 1);
    page->index_cap = 16;
    while (page->index_cap < 2 * (size_t)n) page->index_cap *= 2;
    page->index = bf_malloc(page->index_cap * sizeof(int));
    if (page->index) memset(page->index, 0xff, page->index_cap * sizeof(int)); /* all -1 */
    if (!page->blocks || !page->index) {
        L->oom = true;
        return;
    }
    int index = 0;
    for (const cJSON *jb = blocks->child; jb && !L->oom; jb = jb->next)
        load_block(L, ctx, jb, index++);
    if (L->oom) return;
    link_inputs(L);
    if (!L->incomplete) find_cycles(L);

    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
    if (outs && !cJSON_IsArray(outs)) {
        problem(L, BF_ESCHEMA, "bad_output", NULL, NULL, NULL,
                "\"outputs\" must be an array of \"block\" or \"block:port\"", "/outputs");
        return;
    }
    int no = outs ? cJSON_GetArraySize(outs) : 0;
    page->outputs = bf_calloc((size_t)BF_MAX(no, 1), sizeof(char *));
    if (!page->outputs) {
        L->oom = true;
        return;
    }
    index = 0;
    for (const cJSON *o = outs ? outs->child : NULL; o; o = o->next, index++) {
        char p[48];
        snprintf(p, sizeof(p), "/outputs/%d", index);
        int b, port;
        if (!cJSON_IsString(o) || !o->valuestring[0]) {
            problem(L, BF_ESCHEMA, "bad_output", NULL, NULL, NULL,
                    "output %d must be a \"block\" or \"block:port\" string", p, index);
            continue;
        }
        if (!L->incomplete && !bf_page_resolve(page, o->valuestring, &b, &port)) {
            problem(L, BF_ESCHEMA, "bad_output", NULL, NULL, NULL,
                    "output %d (\"%.80s\") names no block output on this page", p, index,
                    o->valuestring);
            continue;
        }
        if (!(page->outputs[page->n_outputs++] = bf_strdup(o->valuestring))) L->oom = true;
    }
}

bf_status bf_page_parse(bf_context *ctx, const char *json, size_t len, const char *name,
                        const char *dir, unsigned flags, bf_page **out, bf_diags *diags,
                        bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!ctx || !json) return bf_err(err, BF_EINVAL, "bad_argument", "ctx or json is NULL");
    bf_page *page = bf_calloc(1, sizeof(*page));
    if (!page) return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    page->file = bf_strdup(name ? name : "");
    page->dir = bf_strdup(dir ? dir : "");
    page->max_elements = ctx->cfg.max_tensor_elements;
    page->confine_files = ctx->cfg.confine_files != 0;
    page->max_blocks = ctx->cfg.max_blocks;
    loader L = {.page = page, .diags = diags, .incomplete = (flags & BF_LOAD_INCOMPLETE) != 0,
                .skip_files = (flags & BF_LOAD_SKIP_FILES) != 0};
    page->files_skipped = L.skip_files;
    bf_error e0 = {0};
    if (!page->file || !page->dir) {
        bf_page_free(page);
        return bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
    }
    if (len > ctx->cfg.max_page_bytes) {
        problem(&L, BF_ELIMIT, "page_too_large", NULL, NULL, NULL,
                "the page is %zu bytes, above the limit of %llu (bf_config.max_page_bytes)",
                "", len, (unsigned long long)ctx->cfg.max_page_bytes);
        goto done;
    }
    bf_error jc = {0};
    if (bf_json_check(json, len, ctx->cfg.max_json_depth, &jc)) {
        problem(&L, jc.status, jc.code, NULL, NULL, NULL, "%s", "", jc.message);
        L.first.line = jc.line;
        L.first.column = jc.column;
        goto done;
    }
    const char *end = NULL;
    unsigned failures = bf_alloc_failures();
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root && bf_alloc_failures() != failures) {
        L.oom = true; /* not a syntax error: cJSON ran out of memory */
        goto done;
    }
    if (!root) {
        int line, col;
        size_t off = end ? (size_t)(end - json) : 0;
        line_col(json, BF_MIN(off, len), &line, &col);
        /* cJSON stops at its nesting limit with a parse error; say so when that is why. */
        if (ctx->cfg.max_json_depth < CJSON_NESTING_LIMIT) /* deeper text was refused above */
            problem(&L, BF_EPARSE, "bad_json", NULL, NULL, NULL, "not valid JSON", "");
        else
            problem(&L, BF_EPARSE, "bad_json", NULL, NULL, NULL,
                    "not valid JSON (or nested deeper than %d levels)", "", CJSON_NESTING_LIMIT);
        if (L.n_errors == 1) {
            L.first.line = line;
            L.first.column = col;
        }
        if (diags && bf_diags_count(diags)) {
            bf_error *last = (bf_error *)bf_diags_at(diags, bf_diags_count(diags) - 1);
            last->line = line;
            last->column = col;
        }
        goto done;
    }
    if (json_depth(root, 1, ctx->cfg.max_json_depth) > ctx->cfg.max_json_depth) {
        problem(&L, BF_ELIMIT, "too_deep", NULL, NULL, NULL,
                "JSON nested deeper than %d levels (bf_config.max_json_depth)", "",
                ctx->cfg.max_json_depth);
    } else {
        load_top(&L, ctx, root);
    }
    cJSON_Delete(root);
done:
    if (L.oom) { /* other problems found may be its effects: ENOMEM is the answer */
        bf_err(&e0, BF_ENOMEM, "out_of_memory", "out of memory while loading the page");
        bf_strlcpy(e0.page, page->file, sizeof(e0.page));
        L.first = e0;
        L.n_errors = 1;
    }
    if (L.n_errors) {
        if (err) *err = L.first;
        bf_page_free(page);
        return L.first.status;
    }
    *out = page;
    return BF_OK;
}

bf_status bf_page_load_file(bf_context *ctx, const char *path, bf_page **out, bf_diags *diags,
                            bf_error *err) {
    if (!out) return bf_err(err, BF_EINVAL, "bad_argument", "out is NULL");
    *out = NULL;
    if (!ctx || !path) return bf_err(err, BF_EINVAL, "bad_argument", "ctx or path is NULL");
    bf_error e = {0};
    bf_strlcpy(e.page, path, sizeof(e.page));
    /* O_NONBLOCK: opening a FIFO nobody writes to must not hang (it is refused below). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (fd >= 0 && !f) close(fd);
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        int saved = errno;
        if (f) fclose(f);
        bf_err(&e, BF_EIO, "io_error", "cannot read the page: %s",
               f && !saved ? "not a regular file" : strerror(saved));
        if (err) *err = e;
        bf_diags_push(diags, &e);
        return BF_EIO;
    }
    if ((uint64_t)sb.st_size > ctx->cfg.max_page_bytes) {
        fclose(f);
        bf_err(&e, BF_ELIMIT, "page_too_large",
               "the page is %lld bytes, above the limit of %llu (bf_config.max_page_bytes)",
               (long long)sb.st_size, (unsigned long long)ctx->cfg.max_page_bytes);
        if (err) *err = e;
        bf_diags_push(diags, &e);
        return BF_ELIMIT;
    }
    size_t len = (size_t)sb.st_size;
    char *text = bf_malloc(len + 1);
    if (!text || fread(text, 1, len, f) != len) {
        fclose(f);
        bf_free(text);
        bf_err(&e, text ? BF_EIO : BF_ENOMEM, text ? "io_error" : "out_of_memory",
               "cannot read the page");
        if (err) *err = e;
        bf_diags_push(diags, &e);
        return e.status;
    }
    fclose(f);
    text[len] = '\0';
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) < sizeof(dir)) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        if (!dir[0]) bf_strlcpy(dir, "/", sizeof(dir));
    } else {
        bf_strlcpy(dir, ".", sizeof(dir));
    }
    bf_status st = bf_page_parse(ctx, text, len, path, dir, 0, out, diags, err);
    bf_free(text);
    return st;
}

bf_status bf_page_load_string(bf_context *ctx, const char *json, size_t len, const char *name,
                              const char *dir, bf_page **out, bf_diags *diags, bf_error *err) {
    return bf_page_parse(ctx, json, len, name, dir, 0, out, diags, err);
}

const char *bf_page_name(const bf_page *p) { return p ? p->name : NULL; }
const char *bf_page_description(const bf_page *p) { return p ? p->description : NULL; }
const char *bf_page_file(const bf_page *p) { return p ? p->file : NULL; }
int bf_page_block_count(const bf_page *p) { return p ? p->n_blocks : 0; }
const char *bf_page_block_id(const bf_page *p, int i) {
    return p && i >= 0 && i < p->n_blocks ? p->blocks[i].id : NULL;
}
const char *bf_page_block_type(const bf_page *p, int i) {
    return p && i >= 0 && i < p->n_blocks && p->blocks[i].desc ? p->blocks[i].desc->type : NULL;
}
int bf_page_output_count(const bf_page *p) { return p ? p->n_outputs : 0; }
const char *bf_page_output(const bf_page *p, int i) {
    return p && i >= 0 && i < p->n_outputs ? p->outputs[i] : NULL;
}
int bf_page_block_input_count(const bf_page *p, int i) {
    if (!p) return 0;
    return i >= 0 && i < p->n_blocks && p->blocks[i].desc ? p->blocks[i].desc->n_inputs : 0;
}
const char *bf_page_block_input_name(const bf_page *p, int i, int k) {
    return k >= 0 && k < bf_page_block_input_count(p, i) ? p->blocks[i].desc->inputs[k].name
                                                          : NULL;
}
const char *bf_page_block_input_source(const bf_page *p, int i, int k) {
    return k >= 0 && k < bf_page_block_input_count(p, i) ? p->blocks[i].inputs[k].text : NULL;
}
int bf_page_find_block(const bf_page *p, const char *id) {
    return p && id ? bf_page_find(p, id) : -1;
}
