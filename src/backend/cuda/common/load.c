/* load.c: finds and loads the CUDA backend, which lives in its own
 * library (libbraid_cuda.so, linked against cuDNN and cuBLAS) so that braid
 * itself starts and runs on the CPU on machines without them; with
 * BRAID_CUDA_EMULATOR=1, the same backend on braid's emulated device
 * (libbraid_cuda_emu.so, src/backend/cuda/emu/). Loaded once per process, on
 * the first session that may use CUDA, and never unloaded. */
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
static int want_emu; /* BRAID_CUDA_EMULATOR=1: the emulated device, and only it */

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
    const char *why = !m ? "no braid_cuda_module in it"
                    : m->abi != BD_CUDA_MODULE_ABI || strcmp(m->version, braid_version()) != 0 ? "another build"
                    : m->emulated && !want_emu ? "the emulated device, which only " BD_CUDA_EMULATOR_ENV "=1 selects"
                    : !m->emulated && want_emu ? "a real device's backend, not the emulated one " BD_CUDA_EMULATOR_ENV
                                                 "=1 asks for"
                    : NULL;
    if (why) {
        snprintf(load_error, sizeof load_error, "%s is not the CUDA backend of this braid (%s)", path, why);
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
    const char *emu = getenv(BD_CUDA_EMULATOR_ENV);
    want_emu = emu && !strcmp(emu, "1");
    const char *file = want_emu ? BD_CUDA_EMU_MODULE_FILE : BD_CUDA_MODULE_FILE;
    const char *env = getenv(want_emu ? "BRAID_CUDA_EMULATOR_MODULE" : "BRAID_CUDA_MODULE");
    if (env && *env) { /* an explicit choice is final */
        try_path(env, &saw_file);
        return;
    }
    Dl_info info; /* next to the library or program that holds braid */
    if (dladdr((void *)&bd_cuda_module_load, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        char dir[3072];
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        *strrchr(dir, '/') = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if (try_path(path, &saw_file)) return;
        /* an installed program: PREFIX/bin/braid finds PREFIX/lib/libbraid_cuda.so */
        snprintf(path, sizeof path, "%s/../" BRAID_MODULE_RELDIR "/%s", dir, file);
        if (try_path(path, &saw_file)) return;
    }
    if (BRAID_MODULE_DIR[0]) {
        snprintf(path, sizeof path, BRAID_MODULE_DIR "/%s", file);
        if (try_path(path, &saw_file)) return;
    }
    try_path(file, &saw_file); /* the loader's search path */
}

/* The driver's own answer, before anything of CUDA's runtime, cuDNN or
 * cuBLAS is loaded: libcuda.so.1 alone, unloaded again. Its entry points
 * are plain C (CUresult is an int; CUDA_SUCCESS 0, CUDA_ERROR_NO_DEVICE 100). */
int bd_cuda_device_present(char *why, size_t n)
{
    const char *emu = getenv(BD_CUDA_EMULATOR_ENV);
    if (emu && !strcmp(emu, "1")) return 1; /* the emulated device is always there */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        if (why && n) snprintf(why, n, "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)");
        return 0;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int devices = 0, rc = init && count ? init(0) : -1;
    if (rc == 0) rc = count(&devices);
    dlclose(h);
    if (rc == 0 && devices > 0) return 1;
    if (why && n) {
        if (rc == 100 || (rc == 0 && !devices)) snprintf(why, n, "the NVIDIA driver reports no CUDA device");
        else snprintf(why, n, "the NVIDIA driver does not start (cuInit: error %d)", rc);
    }
    return 0;
}

const bd_cuda_module *bd_cuda_module_load(char *why, size_t n)
{
    pthread_once(&once, load_once);
    if (!loaded && why && n)
        snprintf(why, n, "the %sCUDA backend library could not be loaded: %s", want_emu ? "emulated " : "", load_error);
    return loaded;
}
#else
int bd_cuda_device_present(char *why, size_t n)
{
    if (why && n) snprintf(why, n, "this braid was built without CUDA");
    return 0;
}

const bd_cuda_module *bd_cuda_module_load(char *why, size_t n)
{
    if (why && n) snprintf(why, n, "this braid was built without CUDA");
    return NULL;
}
#endif
