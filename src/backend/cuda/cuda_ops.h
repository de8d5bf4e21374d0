/* cuda_ops.h: the interface of the CUDA op families, one entry per family
 * (kernels/<family>.cu holds its kernels and an extern "C" launcher
 * bd_cuda_<family> that switches on k->node->op and enqueues on k->stream).
 * Shapes are final when a kernel is called; pointers are device pointers. */
#ifndef BD_CUDA_OPS_H
#define BD_CUDA_OPS_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bd_cuda_kernel {
    const bd_node *node;
    const bd_tensor *in;   /* device data; an omitted optional input has dtype UNDEFINED, data NULL */
    int n_in;
    bd_tensor *out;        /* device data, shapes set */
    int n_out;
    const bd_tensor *host_in; /* the same inputs' plan-time host copies where known (constants), else data NULL */
    cudaStream_t stream;
    cudnnHandle_t cudnn;   /* bound to stream */
    cublasHandle_t cublas; /* bound to stream */
    void *workspace;       /* per-stream scratch, workspace_size bytes */
    size_t workspace_size;
    void **cache;          /* per-node slot that persists across runs of one plan (e.g. a cuDNN
                            * algorithm and descriptors); the family frees it in bd_cuda_<family>_free */
    int allow_tf32;
    bd_err *err;
} bd_cuda_kernel;

#define X(f)                                                                                       \
    braid_status bd_cuda_##f(const bd_cuda_kernel *k);                                             \
    void bd_cuda_##f##_free(const bd_node *n, void *cache);
BD_FAMILIES(X)
#undef X

/* Dispatch through the family of k->node->op. */
braid_status bd_cuda_run(const bd_cuda_kernel *k);
void bd_cuda_free_cache(const bd_node *n, void *cache);

/* Device memory for a family's per-node cache, counted in the backend's
 * process totals: free it with bd_cuda_scratch_free in bd_cuda_<family>_free. */
cudaError_t bd_cuda_scratch_alloc(void **p, size_t n);
void bd_cuda_scratch_free(void *p);

/* Checks a CUDA runtime call; on failure fails with BRAID_ERR_DEVICE naming
 * the call, the CUDA error and file:line, then jumps to fail. Needs `st`. */
#define BD_CUDA_TRY(e, call)                                                                       \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            st = bd_fail((e), BRAID_ERR_DEVICE, __FILE__, __LINE__, "%s failed: %s", #call,       \
                         cudaGetErrorString(ce_));                                                 \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* The same for cuDNN and cuBLAS calls. */
#define BD_CUDNN_TRY(e, call)                                                                      \
    do {                                                                                           \
        cudnnStatus_t cs_ = (call);                                                                \
        if (cs_ != CUDNN_STATUS_SUCCESS) {                                                         \
            st = bd_fail((e), BRAID_ERR_DEVICE, __FILE__, __LINE__, "%s failed: %s", #call,       \
                         cudnnGetErrorString(cs_));                                                \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define BD_CUBLAS_TRY(e, call)                                                                     \
    do {                                                                                           \
        cublasStatus_t bs_ = (call);                                                               \
        if (bs_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            st = bd_fail((e), BRAID_ERR_DEVICE, __FILE__, __LINE__, "%s failed: %s", #call,       \
                         cublasGetStatusString(bs_));                                              \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
