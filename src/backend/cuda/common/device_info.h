/* device_info.h: the device line: the device and the driver, runtime, cuDNN
 * and cuBLAS versions a session runs with. Part of the CUDA backend's host
 * code that needs no GPU, compiled into braid's core (and into
 * libbraid_cuda.so, which links the core), so that the CPU tests check it.
 * No CUDA header here. */
#ifndef BD_CUDA_DEVICE_INFO_H
#define BD_CUDA_DEVICE_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

typedef struct bd_cuda_versions {
    char name[256];          /* device name */
    int cc_major, cc_minor;  /* compute capability */
    int sms;                 /* multiprocessors */
    size_t mem_bytes;        /* global memory */
    double mem_bw;           /* bytes/s, 0 when unknown */
    char driver[64];         /* the kernel module's release ("580.65.06"), "" when unknown */
    int driver_api;          /* cudaDriverGetVersion: 13000 = 13.0 */
    int runtime;             /* cudaRuntimeGetVersion */
    long cudnn, cudnn_built; /* cudnnGetVersion() at run time, CUDNN_VERSION at build */
    int cublas[3], cublas_built; /* cuBLAS major, minor, patch at run time; CUBLAS_VERSION at build */
    const char *io;          /* the I/O mode's name */
} bd_cuda_versions;

/* "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, 3352 GB/s); driver 580.65.06
 * (CUDA 13.0); runtime 13.0; cuDNN 9.19.0; cuBLAS 13.1.0; I/O staged", with
 * "(built with X)" after a library whose run-time version differs. */
void bd_cuda_version_line(char *buf, size_t n, const bd_cuda_versions *v);
/* cudnnGetVersion's number as major.minor.patch (cuDNN 9 counts 10000 per
 * major, earlier ones 1000). */
void bd_cudnn_version_split(long v, int *major, int *minor, int *patch);
/* The release in /proc/driver/nvidia/version's text ("... Kernel Module  580.65.06  ..."). */
int bd_nvidia_driver_release(const char *proc_text, char *buf, size_t n);

#endif
