/* common.cuh: device and launcher helpers that braid's CUDA op families share:
 * grid sizing for grid-stride loops, launch checks, dtype dispatch, and a
 * by-value descriptor of up to 8 dims with per-input strides for broadcast
 * and strided indexing. */
#ifndef BD_KERNELS_COMMON_CUH
#define BD_KERNELS_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

/* braid's headers are C: give their declarations C linkage here, whether or
 * not the headers carry their own guards (nesting is harmless). */
extern "C" {
#include "ops/ops.h"
}
#include "backend/cuda/cuda_ops.h"

#define BD_CU_BLOCK 256
#define BD_CU_CEIL_DIV(a, b) (((a) + (b)-1) / (b))

/* Blocks for n elements at `block` threads each, capped: kernels loop with a
 * grid stride, so any n is covered. */
static inline unsigned bd_cu_grid(int64_t n, int block = BD_CU_BLOCK)
{
    int64_t g = BD_CU_CEIL_DIV(n, (int64_t)block);
    if (g < 1) g = 1;
    if (g > 65535LL * 16) g = 65535LL * 16;
    return (unsigned)g;
}

/* Checks the launch just made; returns a DEVICE failure from the launcher
 * ("launch of WHAT: ERROR"). Under BRAID_CUDA_SYNC=1 it also waits for the
 * kernel, so that a fault in it is reported here, naming WHAT. */
#define BD_CU_CHECK_LAUNCH(k, what)                                                                \
    do {                                                                                           \
        cudaError_t ce_ = cudaGetLastError();                                                      \
        if (ce_ != cudaSuccess) return bd_cu_fail_launch((k)->err, (what), ce_, __FILE__, __LINE__); \
        braid_status bs_ = bd_cu_after((k)->err, (what));                                          \
        if (bs_ != BRAID_OK) return bs_;                                                           \
    } while (0)

/* Same for a runtime call (memcpy, memset) made by a launcher. */
#define BD_CU_CHECK_CALL(k, call)                                                                  \
    do {                                                                                           \
        cudaError_t ce_ = (call);                                                                  \
        if (ce_ != cudaSuccess) return bd_cu_fail_cuda((k)->err, #call, ce_, __FILE__, __LINE__);  \
        braid_status bs_ = bd_cu_after((k)->err, #call);                                           \
        if (bs_ != BRAID_OK) return bs_;                                                           \
    } while (0)

/* The grid-stride loop over [0, n). */
#define BD_CU_LOOP(i, n)                                                                           \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)blockDim.x * gridDim.x)

/* An element of braid's bool dtype. */
typedef uint8_t bd_bool_t;

/* Calls f(T{}) with T the C type of dtype dt; false when dt is not listed.
 * NUM: the numeric types; NUM_BOOL: and bool (as uint8_t, which callers that
 * care tell apart by dt). */
#define BD_CU_CASE(DT, T)                                                                          \
    case BRAID_DTYPE_##DT: f(T{}); return true;
template <class F> static inline bool bd_cu_dispatch_float(int dt, F &&f)
{
    switch (dt) {
        BD_CU_CASE(FLOAT, float)
        BD_CU_CASE(DOUBLE, double)
    default: return false;
    }
}
template <class F> static inline bool bd_cu_dispatch_sint(int dt, F &&f)
{
    switch (dt) {
        BD_CU_CASE(INT8, int8_t)
        BD_CU_CASE(INT16, int16_t)
        BD_CU_CASE(INT32, int32_t)
        BD_CU_CASE(INT64, int64_t)
    default: return false;
    }
}
template <class F> static inline bool bd_cu_dispatch_uint(int dt, F &&f)
{
    switch (dt) {
        BD_CU_CASE(UINT8, uint8_t)
        BD_CU_CASE(UINT16, uint16_t)
        BD_CU_CASE(UINT32, uint32_t)
        BD_CU_CASE(UINT64, uint64_t)
    default: return false;
    }
}
template <class F> static inline bool bd_cu_dispatch_num(int dt, F &&f)
{
    return bd_cu_dispatch_float(dt, f) || bd_cu_dispatch_sint(dt, f) || bd_cu_dispatch_uint(dt, f);
}
/* By element size only (for ops that move bytes): T is a uint of that width. */
template <class F> static inline bool bd_cu_dispatch_size(size_t es, F &&f)
{
    switch (es) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(uint64_t{}); return true;
    default: return false;
    }
}

/* Up to BD_MAX_RANK output dims with the strides (in elements, any sign, 0 for
 * broadcast) of up to 3 inputs, passed to kernels by value. */
#define BD_CU_MAX_IN 3
struct bd_cu_nd {
    int rank;
    int64_t dims[BD_MAX_RANK];
    int64_t st[BD_CU_MAX_IN][BD_MAX_RANK];
};

/* The offsets into each of the first n inputs of output element i. */
template <int N> __device__ __forceinline__ void bd_cu_offsets(const bd_cu_nd &g, int64_t i, int64_t *off)
{
    for (int j = 0; j < N; j++) off[j] = 0;
    for (int d = g.rank - 1; d >= 0; d--) {
        int64_t q = i / g.dims[d], r = i - q * g.dims[d];
        for (int j = 0; j < N; j++) off[j] += r * g.st[j][d];
        i = q;
    }
}

/* Strides (in elements) of in read as broadcast into a tensor of out_rank
 * dims out_dims: 0 where in's dim is 1 and out's is not (numpy rules). */
static inline void bd_cu_bcast_strides(const bd_tensor *in, int out_rank, const int64_t *out_dims,
                                       int64_t *strides)
{
    int64_t s = 1;
    for (int i = out_rank - 1; i >= 0; i--) {
        int j = i - (out_rank - in->rank);
        if (j < 0) { strides[i] = 0; continue; }
        strides[i] = in->dims[j] == 1 && out_dims[i] != 1 ? 0 : s;
        s *= in->dims[j];
    }
}

/* Row-major strides (elements) of a contiguous tensor. */
static inline void bd_cu_contig_strides(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) st[d] = s, s *= dims[d];
}

/* Builds g from out dims and n_in stride arrays, dropping dims of 1 and
 * merging a dim into its inner neighbour when every input walks both as one.
 * The result has rank >= 1. */
static inline void bd_cu_nd_make(bd_cu_nd *g, int rank, const int64_t *dims, int n_in,
                                 int64_t (*st)[BD_MAX_RANK])
{
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1) continue;
        int merge = r > 0;
        for (int j = 0; merge && j < n_in; j++)
            if (g->st[j][r - 1] != st[j][d] * dims[d]) merge = 0;
        if (merge) {
            g->dims[r - 1] *= dims[d];
            for (int j = 0; j < n_in; j++) g->st[j][r - 1] = st[j][d];
        } else {
            g->dims[r] = dims[d];
            for (int j = 0; j < n_in; j++) g->st[j][r] = st[j][d];
            r++;
        }
    }
    if (r == 0) {
        g->dims[0] = 1;
        for (int j = 0; j < n_in; j++) g->st[j][0] = 1;
        r = 1;
    }
    for (int j = n_in; j < BD_CU_MAX_IN; j++)
        for (int d = 0; d < r; d++) g->st[j][d] = 0;
    g->rank = r;
}

/* The inputs as seen on the host: shapes and dtypes of k->in, data from the
 * plan-time host copies (NULL where the value is only on the device). For
 * resolvers (axes, pads, slice bounds) that read constant inputs. */
static inline void bd_cu_host_view(const bd_cuda_kernel *k, bd_tensor *hv, int max)
{
    for (int i = 0; i < k->n_in && i < max; i++) {
        hv[i] = k->in[i];
        hv[i].data = k->host_in ? k->host_in[i].data : NULL;
    }
}

/* Warp and block sums/maxes (block of a multiple of 32 threads, <= 1024). */
template <class T> __device__ __forceinline__ T bd_cu_warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <class T> __device__ __forceinline__ T bd_cu_warp_max(T v)
{
    for (int o = 16; o > 0; o >>= 1) {
        T w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    return v;
}
/* Every thread of the block gets the block's sum; sh holds 32 T. */
template <class T> __device__ __forceinline__ T bd_cu_block_sum(T v, T *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = bd_cu_warp_sum(v);
    __syncthreads(); /* sh may still be read from a previous call */
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (T)0;
    return bd_cu_warp_sum(v);
}
template <class T> __device__ __forceinline__ T bd_cu_block_max(T v, T lowest, T *sh)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = bd_cu_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : lowest;
    return bd_cu_warp_max(v);
}

/* o[0..n) = v. */
template <class T> static __global__ void bd_cu_fill_kernel(T *__restrict__ o, int64_t n, T v)
{
    BD_CU_LOOP(i, n) o[i] = v;
}

/* Fills n elements of es bytes at o with the element at bytes (host memory,
 * passed by value), on k's stream. */
static inline braid_status bd_cu_fill(const bd_cuda_kernel *k, void *o, int64_t n, size_t es,
                                      const void *bytes)
{
    if (n <= 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        T v;
        memcpy(&v, bytes, sizeof v);
        bd_cu_fill_kernel<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((T *)o, n, v);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "filling elements of %zu bytes is not implemented on CUDA", es);
    BD_CU_CHECK_LAUNCH(k, "a fill kernel");
    return BRAID_OK;
}

#endif /* BD_KERNELS_COMMON_CUH */
