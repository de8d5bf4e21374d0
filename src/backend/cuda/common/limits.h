/* limits.h: cuDNN's size limits, checked before any cuDNN call, and the
 * workspace sizes of cuDNN and cuBLAS. Part of the CUDA backend's host code
 * that needs no GPU, compiled into braid's core (and into libbraid_cuda.so,
 * which links the core), so that the CPU tests check it. No CUDA header
 * here. */
#ifndef BD_CUDA_LIMITS_H
#define BD_CUDA_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* The most elements (and the largest dim and stride) cuDNN takes in one
 * tensor: its descriptors hold int. */
#define BD_CUDNN_MAX_ELEMS 2147483647LL

/* Fails with LIMIT when a tensor of rank dims (as cuDNN would see it: packed
 * strides) has a dim, stride or element count cuDNN refuses; what names it. */
braid_status bd_cudnn_check_tensor(const char *what, int rank, const int64_t *dims, bd_err *e);

/* Every tensor cuDNN would see for a Conv or ConvTranspose node (the input,
 * padded where the pads are asymmetric, the weights, the output and, for a
 * ConvTranspose that crops, its uncropped output), and its pads, strides and
 * dilations: LIMIT naming the one refused. x, w, y: shapes only. */
braid_status bd_cudnn_conv_limits(const bd_node *n, const bd_tensor *x, const bd_tensor *w, const bd_tensor *y,
                                  bd_err *e);

/* cuBLAS's workspace per handle, as its documentation recommends
 * (cublasSetWorkspace): 32 MiB on Hopper and later, 4 MiB before. */
size_t bd_cublas_workspace_bytes(int cc_major);

/* The default cuDNN workspace per stream when the session does not set one. */
#define BD_CUDA_WORKSPACE_DEFAULT ((size_t)64 << 20)

#endif
