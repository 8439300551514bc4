/*
 * files.c - `file` attributes: where a name may lead and loading the .npy it names. The one
 * place where a page's attributes touch the file system (parsing them never does), called by
 * the loader, by attribute changes and by added blocks.
 *
 * Confinement (bf_config.confine_files, which a server turns on): a name must be relative,
 * without ".." components, and the file it reaches with every symlink followed must lie inside
 * the page's folder, so a page cannot read what its author could not put next to it.
 */
#include "page.h"
#include "tensor.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bf_status bf_file_resolve(const char *name, const bf_file_scope *files, char *path,
                              size_t size, bf_error *err) {
    const char *dir = files ? files->dir : NULL;
    int n = name[0] == '/' || !dir || !dir[0] ? snprintf(path, size, "%s", name)
                                              : snprintf(path, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size)
        return bf_err(err, BF_EATTR, "bad_attr", "the file path is too long");
    if (!files || !files->confine) return BF_OK;
    bool dotdot = false;
    for (const char *p = name; *p; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p))
        dotdot |= !strncmp(p, "..", 2) && (p[2] == '/' || p[2] == '\0');
    if (name[0] == '/' || dotdot)
        return bf_err(err, BF_EATTR, "file_outside_page",
                      "\"%.80s\" is outside the page's folder (file reads are confined to it)",
                      name);
    char real_dir[PATH_MAX], real_file[PATH_MAX];
    if (!realpath(dir && dir[0] ? dir : ".", real_dir) || !realpath(path, real_file))
        return bf_err(err, BF_EIO, "io_error", "%s: cannot open: %s", name, strerror(errno));
    size_t k = strlen(real_dir);
    if (strncmp(real_file, real_dir, k) || (real_file[k] != '/' && k > 1))
        return bf_err(err, BF_EATTR, "file_outside_page",
                      "\"%.80s\" leads outside the page's folder through a link (file reads "
                      "are confined to it)", name);
    return BF_OK;
}

bf_status bf_attrs_load_files(const bf_block_desc *desc, bf_attr_value *vals,
                              const bf_file_scope *scope, bf_error *err) {
    for (int i = 0; i < desc->n_attrs; i++) {
        bf_attr_value *v = &vals[i];
        bf_attr_kind kind = desc->attrs[i].kind;
        if ((kind != BF_ATTR_FILE && kind != BF_ATTR_PATH) || !v->set || v->tensor || v->path)
            continue;
        char path[PATH_MAX];
        bf_status st = bf_file_resolve(v->s, scope, path, sizeof(path), err);
        if (st == BF_OK && kind == BF_ATTR_PATH && !(v->path = bf_strdup(path)))
            st = bf_err(err, BF_ENOMEM, "out_of_memory", "out of memory");
        if (st == BF_OK && kind == BF_ATTR_FILE)
            st = bf_npy_load(path, scope ? scope->max_elements : 0, &v->tensor, err);
        if (st) {
            bf_err_at(err, NULL, desc->attrs[i].name);
            return st;
        }
    }
    return BF_OK;
}
