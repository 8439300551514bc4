/*
 * cuda_loader.c - the core's side of the CUDA backend (cuda_api.h): finding libblockflow_cuda.so,
 * loading it with dlopen, checking that it is of this build, and the device probe that goes
 * through it. The core links neither the CUDA runtime nor cuDNN; the backend does, so when
 * they (or the backend, or a driver) are missing, the probe finds no GPU and says why, and
 * everything runs on the CPU. A build without CUDA never looks for a backend.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "devices/cuda_api.h"

#include <dlfcn.h>
#include <errno.h> /* program_invocation_name */
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bf_status bf_cuda_no_backend(bf_error *err) {
#ifdef BF_HAVE_CUDA
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "no CUDA device behind this kernel's run");
#else
    return bf_err(err, BF_EUNSUPPORTED, "no_gpu", "this library was built without CUDA");
#endif
}

int bf_cuda_probe(bf_device *devs, int cap, char *why, size_t why_size) {
    const bf_cuda_api_v1 *api = bf_cuda_backend(why, why_size);
    if (!api) return 0;
    int n = api->probe(devs, cap, why, why_size);
    for (int i = 0; i < n; i++)
        devs[i].cuda = api;
    return n;
}

void bf_cuda_release(bf_device *devs, int n) {
    if (n > 0 && devs[0].cuda) devs[0].cuda->release(devs, n);
}

#ifndef BF_HAVE_CUDA

const bf_cuda_api_v1 *bf_cuda_backend(char *why, size_t why_size) {
    bf_strlcpy(why, "built without CUDA", why_size);
    return NULL;
}

#else /* BF_HAVE_CUDA */

/* Where an installed program's folder (bin/) finds the library folder: set by CMake. */
#ifndef BF_CUDA_LIBDIR_FROM_BIN
#define BF_CUDA_LIBDIR_FROM_BIN "../lib"
#endif

/* What the backend's bf_malloc, bf_err, ... call (cuda_api.h). Constant. */
static const bf_cuda_core_v1 core_v1 = {
    .abi             = BF_CUDA_ABI,
    .size            = sizeof(bf_cuda_core_v1),
    .malloc          = bf_malloc,
    .calloc          = bf_calloc,
    .realloc         = bf_realloc,
    .free            = bf_free,
    .verr            = bf_verr,
    .strlcpy         = bf_strlcpy,
    .dtype_name      = bf_dtype_name,
    .dtype_size      = bf_dtype_size,
    .dtype_from_name = bf_dtype_from_name,
};

typedef struct find_self {
    uintptr_t addr;     /* an address inside the core's code */
    char path[PATH_MAX];
    const char *interp; /* the main program's dynamic loader (PT_INTERP) */
    int found, is_main;
} find_self;

static int find_self_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    find_self *f = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        if (ph->p_type != PT_LOAD || f->addr < lo || f->addr - lo >= (uintptr_t)ph->p_memsz)
            continue;
        f->found = 1;
        f->is_main = !info->dlpi_name || !info->dlpi_name[0];
        if (!f->is_main) bf_strlcpy(f->path, info->dlpi_name, sizeof f->path);
        for (int j = 0; f->is_main && j < info->dlpi_phnum; j++)
            if (info->dlpi_phdr[j].p_type == PT_INTERP)
                f->interp = (const char *)(info->dlpi_addr + info->dlpi_phdr[j].p_vaddr);
        return 1;
    }
    return 0;
}

/* The program's own file: /proc/self/exe, unless that is the dynamic loader, which was then
 * started by hand (`ld.so --inhibit-cache PROGRAM`, as tests/install/ does to hide the CUDA
 * libraries), with the program as argv[0]. */
static bool main_program(find_self *f) {
    char exe[PATH_MAX], interp[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    if (f->interp && realpath(f->interp, interp) && !strcmp(interp, exe) &&
        realpath(program_invocation_name, f->path))
        return true;
    bf_strlcpy(f->path, exe, sizeof f->path);
    return true;
}

/* The folder of the file that holds the core: libblockflow.so, or the program that links the
 * core statically (the loader names the main program "", so main_program says which). */
static bool core_dir(char *dir, size_t size) {
    find_self f;
    memset(&f, 0, sizeof f);
    const bf_cuda_api_v1 *(*self)(char *, size_t) = bf_cuda_backend;
    memcpy(&f.addr, &self, sizeof f.addr < sizeof self ? sizeof f.addr : sizeof self);
    if (!dl_iterate_phdr(find_self_cb, &f) || !f.found) return false;
    if (f.is_main && !main_program(&f)) return false;
    char *slash = strrchr(f.path, '/');
    if (!slash) return false;
    *slash = '\0';
    return snprintf(dir, size, "%s", f.path[0] ? f.path : "/") < (int)size;
}

/* The loader's message about `path`, with the folder left out (the file names the thing). A
 * bare file name that the loader's search did not find says where it was looked for. */
static void load_error(const char *path, char *why, size_t why_size) {
    const char *e = dlerror();
    if (!e) e = "unknown error";
    size_t n = strlen(path);
    if (!strncmp(e, path, n) && e[n] == ':') {
        e += n + 1 + (e[n + 1] == ' ');
        if (!strchr(path, '/') && !strncmp(e, "cannot open shared object file", 30)) {
            snprintf(why, why_size, "no %s beside the blockflow library or on the loader's "
                     "path", path);
            return;
        }
    }
    snprintf(why, why_size, "cannot load %s: %s", BF_CUDA_BACKEND_FILE, e);
}

/* Check the table of a loaded backend; NULL with why when it is not one of this build. */
static const bf_cuda_api_v1 *check_api(const bf_cuda_api_v1 *api, char *why, size_t why_size) {
    if (api->abi != BF_CUDA_ABI || api->size < sizeof(bf_cuda_api_v1)) {
        snprintf(why, why_size, "%s speaks backend ABI %u, this library %d", BF_CUDA_BACKEND_FILE,
                 (unsigned)api->abi, BF_CUDA_ABI);
        return NULL;
    }
    if (!api->version || strcmp(api->version, BF_VERSION_STRING) != 0) {
        snprintf(why, why_size, "%s is from blockflow %s, this library is %s",
                 BF_CUDA_BACKEND_FILE, api->version ? api->version : "?", BF_VERSION_STRING);
        return NULL;
    }
    bf_cuda_layout here = bf_cuda_layout_here();
    if (memcmp(&api->layout, &here, sizeof here) != 0) {
        snprintf(why, why_size, "%s was built from other sources than this library (struct "
                 "sizes differ): rebuild both", BF_CUDA_BACKEND_FILE);
        return NULL;
    }
    return api;
}

/* dlopen `path` (a file name alone: the loader's search) and take its table. */
static const bf_cuda_api_v1 *load(const char *path, char *why, size_t why_size) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        load_error(path, why, why_size);
        return NULL;
    }
    void *sym = dlsym(lib, BF_CUDA_ENTRY);
    if (!sym) {
        snprintf(why, why_size, "%s has no %s (a backend of another ABI)", BF_CUDA_BACKEND_FILE,
                 BF_CUDA_ENTRY);
        return NULL;
    }
    bf_cuda_entry_v1 entry;
    memcpy(&entry, &sym, sizeof entry);
    const bf_cuda_api_v1 *api = entry(&core_v1, why, why_size);
    /* A refused backend stays loaded too: unloading the CUDA libraries it pulled in is not
     * safe, and nothing of it runs. */
    return api ? check_api(api, why, why_size) : NULL;
}

const bf_cuda_api_v1 *bf_cuda_backend(char *why, size_t why_size) {
    const char *env = getenv("BLOCKFLOW_CUDA_BACKEND");
    if (env && env[0]) return load(env, why, why_size);
    char dir[PATH_MAX], path[PATH_MAX + 64];
    if (core_dir(dir, sizeof dir)) {
        static const char *const rel[] = {"", "/" BF_CUDA_LIBDIR_FROM_BIN};
        for (int i = 0; i < BF_COUNT(rel); i++) {
            int n = snprintf(path, sizeof path, "%s%s/%s", dir, rel[i], BF_CUDA_BACKEND_FILE);
            if (n > 0 && (size_t)n < sizeof path && access(path, F_OK) == 0)
                return load(path, why, why_size);
        }
    }
    return load(BF_CUDA_BACKEND_FILE, why, why_size);
}

#endif /* BF_HAVE_CUDA */
