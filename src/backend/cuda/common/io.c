/* io.c: how graph inputs and outputs reach the device (BRAID_CUDA_IO):
 * staged, mapped or managed (io.h). Plain C, no CUDA: the CPU tests run it. */
#include "backend/cuda/common/io.h"

#include <string.h>

static const char *const io_names[] = {"staged", "mapped", "managed"};

const char *bd_cuda_io_name(int mode)
{
    return mode >= 0 && mode < (int)(sizeof io_names / sizeof *io_names) ? io_names[mode] : "unknown";
}

braid_status bd_cuda_io_parse(const char *value, int *mode, bd_err *e)
{
    *mode = BD_IO_DEFAULT;
    if (!value || !*value) return BRAID_OK;
    for (int i = 0; i < (int)(sizeof io_names / sizeof *io_names); i++)
        if (!strcasecmp(value, io_names[i])) {
            *mode = i;
            return BRAID_OK;
        }
    return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, BD_CUDA_IO_ENV " is '%s'; it must be staged, mapped or managed "
                   "(or unset: %s)", value, bd_cuda_io_name(BD_IO_DEFAULT));
}
