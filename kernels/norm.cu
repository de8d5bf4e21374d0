/* norm.cu: CUDA kernels of the norm op family on fp32, mirroring
 * src/backend/cpu/ops/norm.c: BatchNormalization (inference, a per-channel
 * multiply-add) and LayerNormalization (one block per normalized row: mean and
 * variance in double, then scale and shift). */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/norm.h"
}

/* The CPU compiles a * b + c as a rounded product and a sum (no FMA on
 * baseline x86-64); nvcc would fuse them, so the products here are rounded
 * explicitly (__fmul_rn / __dmul_rn are never fused) to give the CPU's bits. */

/* The per-channel multiplier and offset, computed as the CPU does. */
__device__ __forceinline__ void bn_coef(const float *scale, const float *bias, const float *mean,
                                        const float *var, float eps, int64_t c, float *a, float *b)
{
    *a = (float)(scale[c] / sqrt((double)var[c] + eps));
    *b = (float)(bias[c] - __dmul_rn(mean[c], (double)*a));
}

/* One element per thread: channel = (i / plane) % C. For small planes. */
__global__ void k_bn_elem(const float *__restrict__ x, float *__restrict__ y, int64_t n, int64_t C,
                          int64_t plane, const float *scale, const float *bias, const float *mean,
                          const float *var, float eps)
{
    BD_CU_LOOP(i, n)
    {
        float a, b;
        bn_coef(scale, bias, mean, var, eps, (i / plane) % C, &a, &b);
        y[i] = __fmul_rn(x[i], a) + b;
    }
}

/* One block per (n, c) plane (grid-stride over planes). */
__global__ void k_bn_plane(const float *__restrict__ x, float *__restrict__ y, int64_t planes,
                           int64_t C, int64_t plane, const float *scale, const float *bias,
                           const float *mean, const float *var, float eps)
{
    for (int64_t pl = blockIdx.x; pl < planes; pl += gridDim.x) {
        float a, b;
        bn_coef(scale, bias, mean, var, eps, pl % C, &a, &b);
        const float *src = x + pl * plane;
        float *dst = y + pl * plane;
        for (int64_t j = threadIdx.x; j < plane; j += blockDim.x) dst[j] = __fmul_rn(src[j], a) + b;
    }
}

/* Scale and B laid over the normalized dims (g.st[0], g.st[1]); direct when
 * each has exactly cols values. */
struct ln_affine {
    int direct_s, direct_b;
    bd_cu_nd g;
};

__global__ void k_layernorm(const float *__restrict__ x, float *__restrict__ y, int64_t rows,
                            int64_t cols, const float *scale, const float *bias, ln_affine af,
                            float eps, float *mean_out, float *inv_out)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *src = x + r * cols;
        float *dst = y + r * cols;
        double sum = 0, sq = 0;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += src[j];
        sum = bd_cu_block_sum(sum, sh);
        double mean = cols ? sum / (double)cols : 0.0;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            double d = src[j] - mean;
            sq += d * d;
        }
        sq = bd_cu_block_sum(sq, sh);
        double inv = 1.0 / sqrt((cols ? sq / (double)cols : 0.0) + eps);
        float fm = (float)mean, fi = (float)inv;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            int64_t off[2] = {j, j};
            if (!af.direct_s || !af.direct_b) bd_cu_offsets<2>(af.g, j, off);
            float v = __fmul_rn((src[j] - fm) * fi, scale[af.direct_s ? j : off[0]]);
            if (bias) v += bias[af.direct_b ? j : off[1]];
            dst[j] = v;
        }
        if (threadIdx.x == 0) {
            if (mean_out) mean_out[r] = fm;
            if (inv_out) inv_out[r] = fi;
        }
    }
}

static braid_status batchnorm(const bd_cuda_kernel *k)
{
    const bd_norm_params *p = (const bd_norm_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int64_t n = x->dims[0], c = x->rank > 1 ? x->dims[1] : 1, plane = 1;
    for (int i = 2; i < x->rank; i++) plane *= x->dims[i];
    int64_t total = n * c * plane;
    if (total <= 0) return BRAID_OK;
    const float *s = (const float *)k->in[1].data, *b = (const float *)k->in[2].data;
    const float *m = (const float *)k->in[3].data, *v = (const float *)k->in[4].data;
    if (plane >= 64) {
        int64_t planes = n * c;
        unsigned grid = (unsigned)(planes < 65535LL * 16 ? planes : 65535LL * 16);
        k_bn_plane<<<grid, plane >= 256 ? 256 : 64, 0, k->stream>>>(
            (const float *)x->data, (float *)k->out[0].data, planes, c, plane, s, b, m, v, p->epsilon);
    } else {
        k_bn_elem<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(
            (const float *)x->data, (float *)k->out[0].data, total, c, plane, s, b, m, v, p->epsilon);
    }
    BD_CU_CHECK_LAUNCH(k, "the BatchNormalization kernel");
    return BRAID_OK;
}

/* t's strides over the normalized dims (X's dims from axis on), leading unit
 * dims beyond the normalized rank dropped, as the CPU's expand_affine reads it. */
static void affine_strides(const bd_tensor *x, int axis, const bd_tensor *t, int64_t *st)
{
    int nr = x->rank - axis;
    bd_tensor view = *t;
    if (view.rank > nr) {
        int drop = view.rank - nr;
        for (int i = 0; i < nr; i++) view.dims[i] = view.dims[i + drop];
        view.rank = nr;
    }
    bd_cu_bcast_strides(&view, nr, x->dims + axis, st);
}

static braid_status layernorm(const bd_cuda_kernel *k)
{
    const bd_norm_params *p = (const bd_norm_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    const bd_tensor *bt = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    int axis;
    braid_status st = bd_axis(p->axis, x->rank, &axis, k->err);
    if (st) return st;
    int64_t rows = 1, cols = 1;
    for (int i = 0; i < x->rank; i++) *(i < axis ? &rows : &cols) *= x->dims[i];
    ln_affine af = {};
    int64_t sts[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    af.direct_s = bd_numel(&k->in[1]) == cols;
    af.direct_b = !bt || bd_numel(bt) == cols;
    affine_strides(x, axis, &k->in[1], sts[0]);
    if (bt) affine_strides(x, axis, bt, sts[1]);
    /* Not merged: the normalized dims keep their count so both inputs line up. */
    af.g.rank = x->rank - axis;
    for (int d = 0; d < af.g.rank; d++) {
        af.g.dims[d] = x->dims[axis + d];
        af.g.st[0][d] = sts[0][d];
        af.g.st[1][d] = sts[1][d];
        af.g.st[2][d] = 0;
    }
    float *mean_out = k->n_out > 1 ? (float *)k->out[1].data : NULL;
    float *inv_out = k->n_out > 2 ? (float *)k->out[2].data : NULL;
    if (rows <= 0) return BRAID_OK;
    int block = cols >= 1024 ? 256 : cols >= 128 ? 128 : 32;
    unsigned grid = (unsigned)(rows < 65535LL * 16 ? rows : 65535LL * 16);
    k_layernorm<<<grid, block, 0, k->stream>>>((const float *)x->data, (float *)k->out[0].data, rows,
                                              cols, (const float *)k->in[1].data,
                                              bt ? (const float *)bt->data : NULL, af, p->epsilon,
                                              mean_out, inv_out);
    BD_CU_CHECK_LAUNCH(k, "the LayerNormalization kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_norm(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    for (int i = 0; i < k->n_in; i++)
        if (k->in[i].data && k->in[i].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                           "op %s with dtype %s (input %d) is not implemented on CUDA",
                           k->node->op_type, bd_dtype_name(k->in[i].dtype), i);
    switch (k->node->op) {
    case BD_OP_BatchNormalization: return batchnorm(k);
    case BD_OP_LayerNormalization: return layernorm(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the norm family",
                       k->node->op_type);
    }
}

extern "C" void bd_cuda_norm_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
