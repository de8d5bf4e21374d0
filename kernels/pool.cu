/* pool.cu: CUDA kernels of the pool op family on fp32, mirroring
 * src/backend/cpu/ops/pool.c: MaxPool (with optional Indices), AveragePool,
 * GlobalAveragePool and GlobalMaxPool, NC + 1-3 spatial dims. Windows run as
 * 3-D ones with unit leading dims, one output element per thread;
 * GlobalMaxPool reduces one plane per block, GlobalAveragePool sums in the
 * CPU's order (8 threads per plane). The CPU reduces a run of >= 4 windows that
 * lie wholly inside the input along W row by row (each tap column folded over
 * the window's rows, starting from its first row, then across the taps); those
 * windows are folded in that same order here, so both give the same bits,
 * NaN and -inf included (elsewhere a max starts from -FLT_MAX). LpPool,
 * GlobalLpPool and the other dtypes (double, float16, bfloat16, int8/uint8)
 * run the CPU's plain path, one output element (or plane) per thread,
 * accumulating in double; MaxUnpool scatters with the last writer of each
 * position chosen by an atomic max over the source index, as the CPU's
 * in-order loop keeps it. */
#include <float.h>

#include "common.cuh"

extern "C" {
#include "ops/pool.h"
#include "util/dtype.h"
}

/* The 3-D window geometry, passed by value. */
struct pool_geom {
    int64_t L[3], O[3], K[3], S[3], DL[3], PB[3], PE[3];
    int64_t planes;
    int64_t lo, hi; /* output columns [lo, hi) take the CPU's row-wise path */
    int avg, cip, col;
};

/* Axis a at output position o: the first valid input index of the window,
 * how many taps fall inside the input, and how many inside input plus its
 * explicit pads (count_include_pad's divisor). */
__host__ __device__ __forceinline__ void pool_axis(const pool_geom &g, int a, int64_t o, int64_t *first,
                                          int64_t *count, int64_t *npad)
{
    int64_t L = g.L[a], k = g.K[a], dl = g.DL[a], pe = g.PE[a];
    int64_t start = o * g.S[a] - g.PB[a];
    int64_t j0 = start >= 0 ? 0 : (-start + dl - 1) / dl;
    int64_t j1 = L - 1 - start >= 0 ? BD_MIN(k, (L - 1 - start) / dl + 1) : 0;
    int64_t jp = L + pe - start > 0 ? BD_MIN(k, (L + pe - start + dl - 1) / dl) : 0;
    *first = start + j0 * dl;
    *count = j1 > j0 ? j1 - j0 : 0;
    *npad = jp;
}

/* Output element e (host and device, so that the host can check it against
 * the CPU kernel). */
__host__ __device__ __forceinline__ void pool_elem(const float *__restrict__ x, float *__restrict__ y,
                                                   int64_t *__restrict__ ind, const pool_geom &g, int64_t e)
{
    const int64_t D = g.L[0], H = g.L[1], W = g.L[2];
    const int64_t dd = g.DL[0], dh = g.DL[1], dw = g.DL[2];
    const int64_t isz = D * H * W, osz = g.O[0] * g.O[1] * g.O[2];
    int64_t pl = e / osz, r = e - pl * osz;
    int64_t ow = r % g.O[2], oh = (r / g.O[2]) % g.O[1], od = r / (g.O[2] * g.O[1]);
    int64_t fd, cd, nd, fh, ch, nh, fw, cw, nw;
    pool_axis(g, 0, od, &fd, &cd, &nd);
    pool_axis(g, 1, oh, &fh, &ch, &nh);
    pool_axis(g, 2, ow, &fw, &cw, &nw);
    const float *xp = x + pl * isz;
    if (ow >= g.lo && ow < g.hi) { /* the CPU's row-wise path (never with Indices) */
        if (cd * ch == 0) { /* no input row in the window */
            y[e] = g.avg ? 0.0f : -FLT_MAX;
            return;
        }
        float v = 0.0f;
        for (int64_t c = 0; c < g.K[2]; c++) {
            const float *tap = xp + fw + c * dw;
            float t = 0.0f;
            for (int64_t a = 0; a < cd; a++)
                for (int64_t b = 0; b < ch; b++) {
                    float u = tap[((fd + a * dd) * H + fh + b * dh) * W];
                    t = a == 0 && b == 0 ? u : g.avg ? t + u : u > t ? u : t;
                }
            v = c == 0 ? t : g.avg ? v + t : t > v ? t : v;
        }
        if (g.avg) {
            int64_t div = g.cip ? nd * nh * g.K[2] : cd * ch * g.K[2];
            v = div > 0 ? v / (float)div : 0.0f;
        }
        y[e] = v;
    } else {
        const bd_pool_win win = {D, H, W, fd, fh, fw, cd, ch, cw, dd, dh, dw};
        if (g.avg) {
            int64_t div = g.cip ? nd * nh * nw : cd * ch * cw;
            y[e] = div > 0 ? bd_pool_sum(xp, &win) / (float)div : 0.0f;
        } else if (!ind) {
            y[e] = bd_pool_max(xp, &win);
        } else { /* Indices flattened over (N, C, spatial) */
            int64_t at;
            y[e] = bd_pool_argmax(xp, &win, g.col, &at);
            ind[e] = at < 0 ? -1 : pl * isz + at;
        }
    }
}

__global__ void k_pool(const float *__restrict__ x, float *__restrict__ y, int64_t *__restrict__ ind,
                       pool_geom g)
{
    BD_CU_LOOP(e, g.planes * g.O[0] * g.O[1] * g.O[2]) pool_elem(x, y, ind, g, e);
}

/* GlobalMaxPool: one block per plane (grid-stride over planes). A max that
 * skips NaN and starts from -FLT_MAX does not depend on the order. */
__global__ void k_global_max(const float *__restrict__ x, float *__restrict__ y, int64_t planes,
                             int64_t size)
{
    __shared__ float sh[32];
    for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
        const float *xp = x + pl * size;
        float m = -FLT_MAX;
        for (int64_t i = threadIdx.x; i < size; i += blockDim.x) m = xp[i] > m ? xp[i] : m;
        m = bd_cu_block_max(m, -FLT_MAX, sh);
        if (threadIdx.x == 0) y[pl] = m;
    }
}

/* GlobalAveragePool summed as the CPU does, so that both give the same bits:
 * 8 running lanes (lane j adds values j, j + 8, ... of the whole groups of 8;
 * the rest go to lane 0), then ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
 * 8 threads per plane, 4 planes per warp; the warp loops as one. */
__global__ void k_global_avg(const float *__restrict__ x, float *__restrict__ y, int64_t planes,
                             int64_t size)
{
    const int lane = threadIdx.x & 7;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    const int64_t whole = size / 8 * 8;
    for (int64_t p0 = warp * 4; p0 < planes; p0 += warps * 4) {
        int64_t pl = p0 + ((threadIdx.x & 31) >> 3);
        float acc = 0.0f;
        if (pl < planes) {
            const float *xp = x + pl * size;
            for (int64_t i = lane; i < whole; i += 8) acc += xp[i];
            if (lane == 0)
                for (int64_t i = whole; i < size; i++) acc += xp[i];
        }
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        acc += __shfl_xor_sync(0xffffffffu, acc, 4);
        if (pl < planes && lane == 0) y[pl] = size > 0 ? acc / (float)size : 0.0f;
    }
}

/* The window geometry of k as the kernel reads it, and the Indices output
 * (NULL when not wanted). */
static braid_status pool_setup(const bd_cuda_kernel *k, pool_geom &g, int64_t **ind_out)
{
    const bd_node *n = k->node;
    const bd_pool_params *p = (const bd_pool_params *)n->params;
    bd_pool_geom pg;
    braid_status st = bd_pool_geometry(n, &k->in[0], &pg, k->err);
    if (st) return st;
    int off = BD_POOL_MAX_SPATIAL - pg.nsp;
    for (int i = 0; i < 3; i++) {
        g.L[i] = g.O[i] = g.K[i] = g.S[i] = g.DL[i] = 1;
        g.PB[i] = g.PE[i] = 0;
    }
    for (int i = 0; i < pg.nsp; i++) {
        g.L[off + i] = pg.in[i];
        g.O[off + i] = pg.out[i];
        g.K[off + i] = p->kernel[i];
        g.S[off + i] = p->strides[i];
        g.DL[off + i] = p->dilations[i];
        g.PB[off + i] = pg.pad_begin[i];
        g.PE[off + i] = pg.pad_end[i];
    }
    for (int i = off; i < 3; i++)
        if (g.O[i] != k->out[0].dims[2 + i - off])
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "output dim %d is %lld, the window gives %lld",
                           2 + i - off, (long long)k->out[0].dims[2 + i - off], (long long)g.O[i]);
    g.planes = k->in[0].dims[0] * k->in[0].dims[1];
    g.avg = n->op == BD_OP_AveragePool;
    g.cip = p->count_include_pad;
    g.col = p->storage_order == 1;
    int64_t *ind = n->op == BD_OP_MaxPool && k->n_out > 1 ? (int64_t *)k->out[1].data : NULL;
    /* The CPU's interior run along W: the first run of windows with all KW
     * taps inside the input, when it has 4 or more and no Indices are wanted. */
    int64_t f, cnt, np;
    g.lo = 0;
    while (g.lo < g.O[2] && (pool_axis(g, 2, g.lo, &f, &cnt, &np), cnt != g.K[2])) g.lo++;
    for (g.hi = g.lo; g.hi < g.O[2] && (pool_axis(g, 2, g.hi, &f, &cnt, &np), cnt == g.K[2]); g.hi++) {}
    if (ind || g.hi - g.lo < 4) g.lo = g.hi = g.O[2];
    *ind_out = ind;
    return BRAID_OK;
}

static braid_status window_pool(const bd_cuda_kernel *k)
{
    pool_geom g;
    int64_t *ind = NULL;
    braid_status st = pool_setup(k, g, &ind);
    if (st) return st;
    int64_t total = g.planes * g.O[0] * g.O[1] * g.O[2];
    if (total <= 0) return BRAID_OK;
    k_pool<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>((const float *)k->in[0].data,
                                                             (float *)k->out[0].data, ind, g);
    BD_CU_CHECK_LAUNCH(k, "the pool kernel");
    return BRAID_OK;
}

static braid_status global_pool(const bd_cuda_kernel *k)
{
    const bd_tensor *xt = &k->in[0];
    const int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t size = 1;
    for (int i = 2; i < xt->rank; i++) size *= xt->dims[i];
    if (planes <= 0) return BRAID_OK;
    const float *x = (const float *)xt->data;
    float *y = (float *)k->out[0].data;
    if (k->node->op == BD_OP_GlobalAveragePool) {
        k_global_avg<<<bd_cu_grid(planes * 8), BD_CU_BLOCK, 0, k->stream>>>(x, y, planes, size);
    } else {
        int block = size >= 1024 ? 256 : size >= 128 ? 128 : 32;
        unsigned grid = (unsigned)(planes < 65535LL * 16 ? planes : 65535LL * 16);
        k_global_max<<<grid, block, 0, k->stream>>>(x, y, planes, size);
    }
    BD_CU_CHECK_LAUNCH(k, "the global pool kernel");
    return BRAID_OK;
}

/* ---- the plain path: any dtype, LpPool, MaxUnpool ---------------------------------- */

__device__ __forceinline__ double pload(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_INT8: return ((const int8_t *)p)[i];
    case BRAID_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    default: return ((const float *)p)[i];
    }
}

__device__ __forceinline__ void pstore(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    case BRAID_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break; /* a max of int8 values */
    case BRAID_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

__global__ void k_pool_generic(const void *__restrict__ x, void *__restrict__ y, int64_t *__restrict__ ind,
                               pool_geom g, int op, int dt, double p, double lowest)
{
    const int64_t D = g.L[0], H = g.L[1], W = g.L[2], isz = D * H * W, osz = g.O[0] * g.O[1] * g.O[2];
    BD_CU_LOOP(e, g.planes * osz)
    {
        int64_t pl = e / osz, r = e - pl * osz;
        int64_t ow = r % g.O[2], oh = (r / g.O[2]) % g.O[1], od = r / (g.O[2] * g.O[1]);
        int64_t fd, cd, nd, fh, ch, nh, fw, cw, nw;
        pool_axis(g, 0, od, &fd, &cd, &nd);
        pool_axis(g, 1, oh, &fh, &ch, &nh);
        pool_axis(g, 2, ow, &fw, &cw, &nw);
        double acc = op == BD_OP_MaxPool ? lowest : 0.0;
        int64_t at = -1;
        for (int64_t a = 0; a < cd; a++)
            for (int64_t b = 0; b < ch; b++)
                for (int64_t c = 0; c < cw; c++) {
                    int64_t zz = fd + a * g.DL[0], yy = fh + b * g.DL[1], xx = fw + c * g.DL[2];
                    double v = pload(x, dt, pl * isz + (zz * H + yy) * W + xx);
                    if (op == BD_OP_AveragePool) acc += v;
                    else if (op == BD_OP_LpPool) acc += bd_pool_lp_term(v, p);
                    else if (v > acc || (ind && at < 0)) {
                        acc = v;
                        at = g.col ? zz + yy * D + xx * D * H : (zz * H + yy) * W + xx;
                    }
                }
        if (op == BD_OP_AveragePool) {
            int64_t div = g.cip ? nd * nh * nw : cd * ch * cw;
            acc = div > 0 ? acc / (double)div : 0.0;
        } else if (op == BD_OP_LpPool) {
            acc = bd_pool_lp_root(acc, p);
        }
        pstore(y, dt, e, acc);
        if (ind) ind[e] = at < 0 ? -1 : pl * isz + at;
    }
}

__global__ void k_global_generic(const void *__restrict__ x, void *__restrict__ y, int64_t planes, int64_t size,
                                 int op, int dt, double p, double lowest)
{
    BD_CU_LOOP(pl, planes)
    {
        double acc = op == BD_OP_GlobalMaxPool ? lowest : 0.0;
        for (int64_t i = 0; i < size; i++) {
            double v = pload(x, dt, pl * size + i);
            if (op == BD_OP_GlobalAveragePool) acc += v;
            else if (op == BD_OP_GlobalLpPool) acc += bd_pool_lp_term(v, p);
            else acc = v > acc ? v : acc;
        }
        if (op == BD_OP_GlobalAveragePool) acc = size > 0 ? acc / (double)size : 0.0;
        else if (op == BD_OP_GlobalLpPool) acc = bd_pool_lp_root(acc, p);
        pstore(y, dt, pl, acc);
    }
}

static braid_status window_generic(const bd_cuda_kernel *k)
{
    pool_geom g;
    int64_t *ind = NULL;
    braid_status st = pool_setup(k, g, &ind);
    if (st) return st;
    const bd_pool_params *p = (const bd_pool_params *)k->node->params;
    int64_t total = g.planes * g.O[0] * g.O[1] * g.O[2];
    if (total <= 0) return BRAID_OK;
    int dt = k->in[0].dtype;
    k_pool_generic<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, k->out[0].data, ind, g,
                                                                     k->node->op, dt, p->p, bd_pool_lowest(dt));
    BD_CU_CHECK_LAUNCH(k, "the pool kernel");
    return BRAID_OK;
}

static braid_status global_generic(const bd_cuda_kernel *k)
{
    const bd_tensor *xt = &k->in[0];
    const bd_pool_params *p = (const bd_pool_params *)k->node->params;
    const int64_t planes = xt->dims[0] * xt->dims[1];
    int64_t size = 1;
    for (int i = 2; i < xt->rank; i++) size *= xt->dims[i];
    if (planes <= 0) return BRAID_OK;
    k_global_generic<<<bd_cu_grid(planes, 64), 64, 0, k->stream>>>(xt->data, k->out[0].data, planes, size,
                                                                   k->node->op, xt->dtype, p->p,
                                                                   bd_pool_lowest(xt->dtype));
    BD_CU_CHECK_LAUNCH(k, "the global pool kernel");
    return BRAID_OK;
}

struct unpool_geom {
    int rank;
    int64_t up[BD_MAX_RANK], out[BD_MAX_RANK];
    int64_t total_up;
};

/* The offset in y of unpooled index v, or -1 when v is out of range. */
__device__ __forceinline__ int64_t unpool_offset(const unpool_geom &g, int64_t v)
{
    if (v < 0 || v >= g.total_up) return -1;
    int64_t o = 0, stride = 1;
    for (int d = g.rank - 1; d >= 0; d--) {
        o += (v % g.up[d]) * stride;
        v /= g.up[d];
        stride *= g.out[d];
    }
    return o;
}

__global__ void k_unpool_claim(const int64_t *__restrict__ ind, long long *__restrict__ owner, int64_t n,
                               unpool_geom g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t o = unpool_offset(g, ind[i]);
        if (o >= 0) atomicMax(&owner[o], (long long)i);
    }
}

template <class T>
__global__ void k_unpool_write(const T *__restrict__ x, const int64_t *__restrict__ ind,
                               const long long *__restrict__ owner, T *__restrict__ y, int64_t n, unpool_geom g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t o = unpool_offset(g, ind[i]);
        if (o >= 0 && owner[o] == (long long)i) y[o] = x[i];
    }
}

struct unpool_cache {
    size_t bytes;
    long long *owner;
};

static braid_status unpool(const bd_cuda_kernel *k)
{
    bd_tensor hv[3];
    int nh = k->n_in < 3 ? k->n_in : 3;
    bd_cu_host_view(k, hv, nh);
    unpool_geom g = {};
    braid_status st = bd_unpool_dims(k->node, hv, nh, g.out, g.up, k->err);
    if (st) return st;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    g.rank = x->rank;
    g.total_up = 1;
    for (int d = 0; d < g.rank; d++) g.total_up *= g.up[d];
    const int64_t n = bd_numel(x), ny = bd_numel(y);
    const size_t es = bd_dtype_size(x->dtype);
    if (ny == 0) return BRAID_OK;
    BD_CU_CHECK_CALL(k, cudaMemsetAsync(y->data, 0, (size_t)ny * es, k->stream));
    if (n == 0) return BRAID_OK;
    size_t bytes = (size_t)ny * sizeof(long long);
    unpool_cache *c = (unpool_cache *)*k->cache;
    if (!c || c->bytes < bytes) {
        if (c) bd_cuda_scratch_free(c->owner), bd_free(c);
        *k->cache = NULL;
        if (!(c = (unpool_cache *)bd_calloc(1, sizeof *c))) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        cudaError_t ce = bd_cuda_scratch_alloc((void **)&c->owner, bytes);
        if (ce != cudaSuccess) {
            bd_free(c);
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate %.1f MiB of scratch for MaxUnpool: %s",
                           (double)bytes / 1048576.0, cudaGetErrorString(ce));
        }
        c->bytes = bytes;
        *k->cache = c;
    }
    BD_CU_CHECK_CALL(k, cudaMemsetAsync(c->owner, 0xFF, bytes, k->stream)); /* -1: no writer */
    const int64_t *ind = (const int64_t *)k->in[1].data;
    k_unpool_claim<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(ind, c->owner, n, g);
    BD_CU_CHECK_LAUNCH(k, "the MaxUnpool claim kernel");
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_unpool_write<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, ind, c->owner,
                                                                        (T *)y->data, n, g);
    });
    if (!ok) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "MaxUnpool of %zu-byte elements", es);
    BD_CU_CHECK_LAUNCH(k, "the MaxUnpool kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_pool(const bd_cuda_kernel *k)
{
    const int f32 = k->in[0].dtype == BRAID_DTYPE_FLOAT;
    switch (k->node->op) {
    case BD_OP_MaxPool:
    case BD_OP_AveragePool: return f32 ? window_pool(k) : window_generic(k);
    case BD_OP_LpPool: return window_generic(k);
    case BD_OP_GlobalAveragePool:
    case BD_OP_GlobalMaxPool: return f32 ? global_pool(k) : global_generic(k);
    case BD_OP_GlobalLpPool: return global_generic(k);
    case BD_OP_MaxUnpool: return unpool(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the pool family",
                       k->node->op_type);
    }
}

extern "C" void bd_cuda_pool_free(const bd_node *n, void *cache)
{
    if (cache && n->op == BD_OP_MaxUnpool) {
        unpool_cache *c = (unpool_cache *)cache;
        bd_cuda_scratch_free(c->owner);
        bd_free(c);
    }
}
