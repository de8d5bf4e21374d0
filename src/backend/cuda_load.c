/* cuda_load.c: finds and loads the CUDA backend, which lives in its own
 * library (libbraid_cuda.so, linked against cuDNN and cuBLAS) so that braid
 * itself starts and runs on the CPU on machines without them. Loaded once
 * per process, on the first session that may use CUDA, and never unloaded. */
#define _GNU_SOURCE 1 /* dladdr */
#include "backend/backend.h"

#include <stdio.h>

#ifdef BRAID_HAVE_CUDA
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BRAID_MODULE_DIR
#define BRAID_MODULE_DIR "" /* the install libdir, set by CMake */
#endif
#ifndef BRAID_MODULE_RELDIR
#define BRAID_MODULE_RELDIR "lib" /* the libdir relative to the prefix */
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const bd_cuda_module *loaded;
static char load_error[512];

/* Tries one path; 1 when the module is loaded. Keeps the first error of a
 * file that exists (its missing dependency is the news), else the last. */
static int try_path(const char *path, int *saw_file)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        int exists = strchr(path, '/') && access(path, F_OK) == 0;
        if (exists || !*saw_file) snprintf(load_error, sizeof load_error, "%s", dlerror());
        *saw_file |= exists;
        return 0;
    }
    const bd_cuda_module *m = dlsym(h, "braid_cuda_module");
    if (!m || m->abi != BD_CUDA_MODULE_ABI || strcmp(m->version, braid_version()) != 0) {
        snprintf(load_error, sizeof load_error, "%s is not the CUDA backend of this braid (%s)", path,
                 m ? "another build" : "no braid_cuda_module in it");
        *saw_file = 1;
        dlclose(h);
        return 0;
    }
    loaded = m;
    return 1;
}

static void load_once(void)
{
    int saw_file = 0;
    char path[4096];
    const char *env = getenv("BRAID_CUDA_MODULE");
    if (env && *env) { /* an explicit choice is final */
        try_path(env, &saw_file);
        return;
    }
    Dl_info info; /* next to the library or program that holds braid */
    if (dladdr((void *)&bd_cuda_module_load, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        char dir[3072];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        *strrchr(dir, '/') = '\0';
        snprintf(path, sizeof path, "%s/" BD_CUDA_MODULE_FILE, dir);
        if (try_path(path, &saw_file)) return;
        /* an installed program: PREFIX/bin/braid finds PREFIX/lib/libbraid_cuda.so */
        snprintf(path, sizeof path, "%s/../" BRAID_MODULE_RELDIR "/" BD_CUDA_MODULE_FILE, dir);
        if (try_path(path, &saw_file)) return;
    }
    if (BRAID_MODULE_DIR[0] && try_path(BRAID_MODULE_DIR "/" BD_CUDA_MODULE_FILE, &saw_file)) return;
    try_path(BD_CUDA_MODULE_FILE, &saw_file); /* the loader's search path */
}

const bd_cuda_module *bd_cuda_module_load(char *why, size_t n)
{
    pthread_once(&once, load_once);
    if (!loaded && why && n) snprintf(why, n, "the CUDA backend library could not be loaded: %s", load_error);
    return loaded;
}
#else
const bd_cuda_module *bd_cuda_module_load(char *why, size_t n)
{
    if (why && n) snprintf(why, n, "this braid was built without CUDA");
    return NULL;
}
#endif
