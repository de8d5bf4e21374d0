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

struct bd_notes;

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
    struct bd_notes *notes; /* the session's notes: a fallback a launcher takes is said there (bd_cu_note) */
    int device;            /* the CUDA device (part of the keys of process-wide caches) */
    int tune;              /* time cuDNN's candidate algorithms on a shape's first run (BRAID_CUDA_TUNE != 0) */
} bd_cuda_kernel;

/* Adds "node 'NAME' (OP): <text>" to the session's notes: for every fallback
 * a launcher takes (an algorithm refused, a fused path not applied), so that
 * none is silent. */
void bd_cu_note(const bd_cuda_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define X(f)                                                                                       \
    braid_status bd_cuda_##f(const bd_cuda_kernel *k);                                             \
    void bd_cuda_##f##_free(const bd_node *n, void *cache);
BD_FAMILIES(X)
#undef X

/* Runs node k on the host with the CPU backend's kernel cpu: its inputs
 * copied to the host (one synchronization of its stream), its outputs back,
 * their actual dims written (src/backend/cuda/cuda_host.c). For ops whose
 * output shape only their input values decide (NonZero, Unique,
 * NonMaxSuppression...): the host must read those values whatever computes
 * the op, and one definition of the op is kept. Refused in a graph capture. */
struct bd_kernel;
braid_status bd_cuda_on_host(const bd_cuda_kernel *k, braid_status (*cpu)(const struct bd_kernel *));

/* Dispatch through the family of k->node->op. */
braid_status bd_cuda_run(const bd_cuda_kernel *k);
void bd_cuda_free_cache(const bd_node *n, void *cache);

/* Device memory for a family's per-node cache, counted in the backend's
 * process totals: free it with bd_cuda_scratch_free in bd_cuda_<family>_free. */
cudaError_t bd_cuda_scratch_alloc(void **p, size_t n);
void bd_cuda_scratch_free(void *p);

/* Fault finding (src/backend/cuda/fault.c). Each checked call and launch
 * reports to bd_cu_after, which remembers it as the node's last call and,
 * under BRAID_CUDA_SYNC=1, synchronizes the node's stream so that an
 * asynchronous fault is pinned on the call that made it. A failure says
 * "CALL: ERROR"; the walk prefixes "node 'NAME' (OP) on stream S: ", or, for
 * an asynchronous error from earlier work, a prefix that blames no node. */
braid_status bd_cu_after(bd_err *e, const char *call);
braid_status bd_cu_fail_cuda(bd_err *e, const char *call, cudaError_t ce, const char *file, int line);
braid_status bd_cu_fail_launch(bd_err *e, const char *what, cudaError_t ce, const char *file, int line);
braid_status bd_cu_fail_lib(bd_err *e, const char *call, const char *status, const char *file, int line);
/* 1 for the errors a kernel raises asynchronously, which leave the context unusable. */
int bd_cu_sticky(cudaError_t ce);

/* Checks a CUDA runtime call; on failure fails with BRAID_ERR_DEVICE (or
 * OUT_OF_MEMORY) naming the call and the CUDA error, then jumps to fail.
 * Needs `st`. */
#define BD_CUDA_TRY(e, call)                                                                       \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) {                                                                  \
            st = bd_cu_fail_cuda((e), #call, ce_, __FILE__, __LINE__);                             \
            goto fail;                                                                             \
        }                                                                                          \
        if ((st = bd_cu_after((e), #call)) != BRAID_OK) goto fail;                                 \
    } while (0)

/* The same for cuDNN and cuBLAS calls. */
#define BD_CUDNN_TRY(e, call)                                                                      \
    do {                                                                                           \
        cudnnStatus_t cs_ = (call);                                                                \
        if (cs_ != CUDNN_STATUS_SUCCESS) {                                                         \
            st = bd_cu_fail_lib((e), #call, cudnnGetErrorString(cs_), __FILE__, __LINE__);         \
            goto fail;                                                                             \
        }                                                                                          \
        if ((st = bd_cu_after((e), #call)) != BRAID_OK) goto fail;                                 \
    } while (0)
#define BD_CUBLAS_TRY(e, call)                                                                     \
    do {                                                                                           \
        cublasStatus_t bs_ = (call);                                                               \
        if (bs_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            st = bd_cu_fail_lib((e), #call, cublasGetStatusString(bs_), __FILE__, __LINE__);       \
            goto fail;                                                                             \
        }                                                                                          \
        if ((st = bd_cu_after((e), #call)) != BRAID_OK) goto fail;                                 \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
