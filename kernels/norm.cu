/* norm.cu: CUDA kernels of the norm op family, mirroring
 * src/backend/cpu/ops/norm.c with ops/norm.h's formulas: BatchNormalization
 * (inference: a per-channel multiply-add; training: one block per channel
 * takes its batch statistics in double, normalizes and writes the running and
 * saved statistics), InstanceNormalization and GroupNormalization (one block
 * per (n, group)), LRN (one thread per element), LpNormalization (one thread
 * per line) and MeanVarianceNormalization (one thread per kept index).
 * float16/bfloat16 are computed in float and rounded once; the per-channel
 * parameters may have their own float dtype (BatchNormalization-15). */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/norm.h"
#include "util/dtype.h"
}

struct nh16 { uint16_t v; };
struct nb16 { uint16_t v; };

template <class S> struct n_c { typedef float type; };
template <> struct n_c<double> { typedef double type; };

__device__ __forceinline__ float n_ld(float v) { return v; }
__device__ __forceinline__ double n_ld(double v) { return v; }
__device__ __forceinline__ float n_ld(nh16 v) { return bd_half_to_float_hd(v.v); }
__device__ __forceinline__ float n_ld(nb16 v) { return bd_bf16_to_float(v.v); }
__device__ __forceinline__ void n_st(float &o, double v) { o = (float)v; }
__device__ __forceinline__ void n_st(double &o, double v) { o = v; }
__device__ __forceinline__ void n_st(nh16 &o, double v) { o.v = bd_float_to_half((float)v); }
__device__ __forceinline__ void n_st(nb16 &o, double v) { o.v = bd_float_to_bf16((float)v); }

/* Products rounded before the add, as the CPU (no FMA contraction). */
__device__ __forceinline__ float n_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double n_mul(double a, double b) { return __dmul_rn(a, b); }

/* Element i of a parameter tensor of any float dtype. */
__device__ __forceinline__ double n_par(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}
__device__ __forceinline__ void n_put(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    default: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    }
}

/* The parameters of a launch: scale, bias, mean, var and the statistics outputs. */
struct n_params {
    const void *in[4];
    int in_dt[4];
    void *out[4]; /* BatchNormalization's outputs 1..4 (NULL: not asked) */
    int out_dt[4];
};

/* ---- BatchNormalization ---------------------------------------------------------------- */

/* Inference: element i of channel (i / plane) % C. */
template <class S>
__global__ void k_bn_infer(const S *__restrict__ x, S *__restrict__ y, int64_t total, int64_t C, int64_t plane,
                           n_params q, bd_norm_params p)
{
    typedef typename n_c<S>::type T;
    BD_CU_LOOP(i, total)
    {
        int64_t c = (i / plane) % C;
        double a, b;
        bd_bn_coef(n_par(q.in[0], q.in_dt[0], c), n_par(q.in[1], q.in_dt[1], c), n_par(q.in[2], q.in_dt[2], c),
                   n_par(q.in[3], q.in_dt[3], c), p.epsilon, &a, &b);
        T v = n_ld(x[i]);
        n_st(y[i], n_mul(v, (T)a) + (T)b);
    }
}

/* Training: one block per channel. */
template <class S>
__global__ void k_bn_train(const S *__restrict__ x, S *__restrict__ y, int64_t N, int64_t C, int64_t plane,
                           n_params q, bd_norm_params p)
{
    typedef typename n_c<S>::type T;
    __shared__ double sh[32];
    for (int64_t c = blockIdx.x; c < C; c += gridDim.x) {
        int64_t cnt = N * plane;
        double s = 0, v = 0;
        for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) s += n_ld(x[((e / plane) * C + c) * plane + e % plane]);
        double mean = bd_cu_block_sum(s, sh) / (double)cnt;
        for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
            double d = n_ld(x[((e / plane) * C + c) * plane + e % plane]) - mean;
            v += d * d;
        }
        double var = bd_cu_block_sum(v, sh) / (double)cnt, a, b;
        bd_bn_coef(n_par(q.in[0], q.in_dt[0], c), n_par(q.in[1], q.in_dt[1], c), mean, var, p.epsilon, &a, &b);
        for (int64_t e = threadIdx.x; e < cnt; e += blockDim.x) {
            int64_t at = ((e / plane) * C + c) * plane + e % plane;
            n_st(y[at], n_mul((T)n_ld(x[at]), (T)a) + (T)b);
        }
        if (threadIdx.x == 0) {
            double st[4] = {bd_bn_running(n_par(q.in[2], q.in_dt[2], c), mean, p.momentum),
                            bd_bn_running(n_par(q.in[3], q.in_dt[3], c), var, p.momentum), mean, var};
            for (int o = 0; o < 4; o++)
                if (q.out[o]) n_put(q.out[o], q.out_dt[o], c, st[o]);
        }
    }
}

/* ---- InstanceNormalization, GroupNormalization ---------------------------------------- */

/* One block per (n, group) of cpg channels of `plane` values. */
template <class S>
__global__ void k_group(const S *__restrict__ x, S *__restrict__ y, int64_t blocks, int64_t C, int64_t G,
                        int64_t plane, int per_group, n_params q, bd_norm_params p)
{
    typedef typename n_c<S>::type T;
    __shared__ double sh[32];
    int64_t cpg = C / G, len = cpg * plane;
    for (int64_t blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
        const S *src = x + blk * len;
        S *dst = y + blk * len;
        double s = 0, v = 0;
        for (int64_t e = threadIdx.x; e < len; e += blockDim.x) s += n_ld(src[e]);
        double m = len ? bd_cu_block_sum(s, sh) / (double)len : 0.0;
        for (int64_t e = threadIdx.x; e < len; e += blockDim.x) {
            double d = n_ld(src[e]) - m;
            v += d * d;
        }
        double var = len ? bd_cu_block_sum(v, sh) / (double)len : 0.0, inv = 1.0 / sqrt(var + p.epsilon);
        for (int64_t e = threadIdx.x; e < len; e += blockDim.x) {
            int64_t ch = (blk % G) * cpg + e / plane, ai = bd_gn_affine_index(ch, C, G, per_group);
            T k = (T)(inv * n_par(q.in[0], q.in_dt[0], ai)), b = (T)n_par(q.in[1], q.in_dt[1], ai);
            n_st(dst[e], n_mul((T)(n_ld(src[e]) - (T)m), k) + b);
        }
    }
}

/* ---- LRN, LpNormalization ------------------------------------------------------------------ */

template <class S>
__global__ void k_lrn(const S *__restrict__ x, S *__restrict__ y, int64_t total, int64_t C, int64_t plane,
                      bd_norm_params p)
{
    BD_CU_LOOP(i, total)
    {
        int64_t b = i / (C * plane), c = (i / plane) % C, e = i % plane, lo, hi;
        bd_lrn_window(c, C, p.size, &lo, &hi);
        double s = 0;
        for (int64_t w = lo; w <= hi; w++) {
            double v = n_ld(x[(b * C + w) * plane + e]);
            s += v * v;
        }
        n_st(y[i], bd_lrn(n_ld(x[i]), s, &p));
    }
}

/* One thread per line (b, i) of n values at stride inner. */
template <class S>
__global__ void k_lp(const S *__restrict__ x, S *__restrict__ y, int64_t outer, int64_t n, int64_t inner, int pw)
{
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const S *xl = x + b * n * inner + i;
        S *yl = y + b * n * inner + i;
        double s = 0;
        for (int64_t j = 0; j < n; j++) {
            double v = n_ld(xl[j * inner]);
            s += pw == 1 ? fabs(v) : v * v;
        }
        if (pw == 2) s = sqrt(s);
        for (int64_t j = 0; j < n; j++) n_st(yl[j * inner], bd_lp_norm(n_ld(xl[j * inner]), s));
    }
}

/* ---- MeanVarianceNormalization ------------------------------------------------------------- */

struct mvn_geom {
    int nk, nr;
    int64_t ks[BD_MAX_RANK], kst[BD_MAX_RANK], rs[BD_MAX_RANK], rst[BD_MAX_RANK];
    int64_t n_kept, n_red;
};

__device__ __forceinline__ int64_t mvn_off(int n, const int64_t *sz, const int64_t *st, int64_t i)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t q = i / sz[d];
        off += (i - q * sz[d]) * st[d];
        i = q;
    }
    return off;
}

template <class S> __global__ void k_mvn(const S *__restrict__ x, S *__restrict__ y, mvn_geom g)
{
    BD_CU_LOOP(t, g.n_kept)
    {
        int64_t base = mvn_off(g.nk, g.ks, g.kst, t);
        double s = 0, v = 0;
        for (int64_t r = 0; r < g.n_red; r++) s += n_ld(x[base + mvn_off(g.nr, g.rs, g.rst, r)]);
        double m = s / (double)g.n_red;
        for (int64_t r = 0; r < g.n_red; r++) {
            double d = n_ld(x[base + mvn_off(g.nr, g.rs, g.rst, r)]) - m;
            v += d * d;
        }
        v /= (double)g.n_red;
        for (int64_t r = 0; r < g.n_red; r++) {
            int64_t at = base + mvn_off(g.nr, g.rs, g.rst, r);
            n_st(y[at], bd_mvn(n_ld(x[at]), m, v));
        }
    }
}

/* ---- dispatch ------------------------------------------------------------------------------ */

template <class S> static braid_status run(const bd_cuda_kernel *k)
{
    const bd_norm_params *p = (const bd_norm_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    const S *xd = (const S *)x->data;
    S *yd = (S *)k->out[0].data;
    int op = k->node->op;
    int64_t total = bd_numel(x);
    n_params q = {};
    for (int i = 0; i < 4 && i + 1 < k->n_in; i++) q.in[i] = k->in[i + 1].data, q.in_dt[i] = k->in[i + 1].dtype;
    for (int o = 0; o < 4 && o + 1 < k->n_out; o++) q.out[o] = k->out[o + 1].data, q.out_dt[o] = k->out[o + 1].dtype;
    if (op == BD_OP_LpNormalization) {
        int axis;
        braid_status st = bd_axis(p->axis, x->rank, &axis, k->err);
        if (st) return st;
        int64_t outer, inner;
        bd_axis_split(x, axis, &outer, &inner);
        if (total > 0) k_lp<S><<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(xd, yd, outer, x->dims[axis], inner, p->p);
        return BRAID_OK;
    }
    if (op == BD_OP_MeanVarianceNormalization) {
        unsigned mask;
        braid_status st = bd_mvn_mask(p, x->rank, &mask, k->err);
        if (st) return st;
        mvn_geom g = {};
        int64_t stride[BD_MAX_RANK];
        bd_cu_contig_strides(x->rank, x->dims, stride);
        g.n_kept = g.n_red = 1;
        for (int d = 0; d < x->rank; d++) {
            if (mask >> d & 1) g.rs[g.nr] = x->dims[d], g.rst[g.nr++] = stride[d], g.n_red *= x->dims[d];
            else g.ks[g.nk] = x->dims[d], g.kst[g.nk++] = stride[d], g.n_kept *= x->dims[d];
        }
        if (total > 0) k_mvn<S><<<bd_cu_grid(g.n_kept), BD_CU_BLOCK, 0, k->stream>>>(xd, yd, g);
        return BRAID_OK;
    }
    int64_t n = x->dims[0], c = x->rank >= 2 ? x->dims[1] : 1, plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    if (op == BD_OP_BatchNormalization && !p->spatial && k->node->opset < 9) c *= plane, plane = 1;
    switch (op) {
    case BD_OP_BatchNormalization:
        if (p->training) {
            unsigned grid = (unsigned)BD_MIN(c, 65535LL * 16);
            if (c > 0) k_bn_train<S><<<grid, n * plane >= 1024 ? 256 : 64, 0, k->stream>>>(xd, yd, n, c, plane, q, *p);
        } else if (total > 0) {
            k_bn_infer<S><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(xd, yd, total, c, plane, q, *p);
        }
        break;
    case BD_OP_InstanceNormalization: case BD_OP_GroupNormalization: {
        int64_t G = op == BD_OP_GroupNormalization ? p->groups : c, blocks = n * G;
        int per_group = op == BD_OP_GroupNormalization && p->group_affine;
        if (blocks > 0 && total > 0)
            k_group<S><<<(unsigned)BD_MIN(blocks, 65535LL * 16), (c / G) * plane >= 1024 ? 256 : 64, 0, k->stream>>>(
                xd, yd, blocks, c, G, plane, per_group, q, *p);
        break;
    }
    case BD_OP_LRN:
        if (total > 0) k_lrn<S><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(xd, yd, total, c, plane, *p);
        break;
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the norm family", k->node->op_type);
    }
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_norm(const bd_cuda_kernel *k)
{
    braid_status st;
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->in[0].dtype) {
    case BRAID_DTYPE_FLOAT: st = run<float>(k); break;
    case BRAID_DTYPE_DOUBLE: st = run<double>(k); break;
    case BRAID_DTYPE_FLOAT16: st = run<nh16>(k); break;
    case BRAID_DTYPE_BFLOAT16: st = run<nb16>(k); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(k->in[0].dtype));
    }
    if (st) return st;
    BD_CU_CHECK_LAUNCH(k, "a norm kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_norm_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
