/* io.h: how graph inputs and outputs reach the device (BRAID_CUDA_IO):
 * staged, mapped or managed. Part of the CUDA backend's host code that needs
 * no GPU, compiled into braid's core (and into libbraid_cuda.so, which links
 * the core), so that the CPU tests check it. No CUDA header here. */
#ifndef BD_CUDA_IO_H
#define BD_CUDA_IO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* How graph inputs and outputs reach the device. The caller's host-shared
 * buffers (braid_session_input_buffer, the outputs a run returns) are:
 *   STAGED  pinned host memory; each run copies an input to a device buffer
 *           and an output back, one pinned DMA each way;
 *   MAPPED  pinned host memory the kernels read and write in place (no copy;
 *           every kernel access crosses the bus);
 *   MANAGED managed memory: inputs read-mostly and prefetched to the device
 *           (a device copy; the host's stays valid), outputs discarded and
 *           prefetched to the device before the run (no copy back of stale
 *           pages) and prefetched to the host after it.
 * An input in ordinary memory is copied (pageable) into a device buffer. */
typedef enum bd_cuda_io { BD_IO_STAGED = 0, BD_IO_MAPPED = 1, BD_IO_MANAGED = 2 } bd_cuda_io;
/* The mode used unless BRAID_CUDA_IO names another: the one place to change
 * once the GPU measurement (scripts/gpu-check) has picked the winner. */
#define BD_IO_DEFAULT BD_IO_STAGED
#define BD_CUDA_IO_ENV "BRAID_CUDA_IO"
const char *bd_cuda_io_name(int mode);
/* value NULL or "" gives BD_IO_DEFAULT; an unknown name fails with
 * INVALID_ARGUMENT naming the choices. */
braid_status bd_cuda_io_parse(const char *value, int *mode, bd_err *e);

#endif
