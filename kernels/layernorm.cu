/* layernorm.cu: CUDA kernels of the layernorm family (LayerNormalization,
 * RMSNormalization, com.microsoft SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization), mirroring src/backend/cpu/ops/
 * layernorm.c: one block per row of `cols` values takes the mean and variance
 * (or mean square) in double, then writes y = (x - mean) * inv * scale + bias
 * in the compute type (float, or double when X, scale or the stash type is).
 * The Skip ops normalize input + skip (+ bias), recomputed in each pass, and
 * write that sum when asked. Scale and bias broadcast over the normalized
 * dims; every tensor may be float32/float64/float16/bfloat16. */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/layernorm.h"
#include "util/dtype.h"
}

__device__ __forceinline__ double ln_ld(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}
__device__ __forceinline__ void ln_st(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    default: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    }
}
__device__ __forceinline__ float ln_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double ln_mul(double a, double b) { return __dmul_rn(a, b); }

/* What a launch reads and writes; the tensors' dtypes travel with them. */
struct ln_args {
    const void *x, *skip, *scale, *beta, *sbias; /* skip, beta, sbias may be NULL */
    int xdt, sdt, bdt;                           /* X's (skip's, sbias'), scale's, beta's */
    void *y, *mean, *inv, *sum;                  /* mean, inv, sum may be NULL */
    int ydt, mdt;
    int64_t rows, cols, skip_rows;
    int simplified, direct;                      /* direct: scale and beta have cols values each */
    float eps;
    bd_cu_nd g;                                  /* scale (st[0]) and beta (st[1]) over the normalized dims */
};

/* Value j of row r as normalized: x, or input + skip + bias, in C as the CPU. */
template <class C> __device__ __forceinline__ C ln_val(const ln_args &a, int64_t r, int64_t j)
{
    C v = (C)ln_ld(a.x, a.xdt, r * a.cols + j);
    if (a.skip) {
        v = v + (C)ln_ld(a.skip, a.xdt, (r % a.skip_rows) * a.cols + j);
        if (a.sbias) v = v + (C)ln_ld(a.sbias, a.xdt, j);
    }
    return v;
}

template <class C> __global__ void k_layernorm(ln_args a)
{
    __shared__ double sh[32];
    for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
        double s = 0, q = 0, mean = 0;
        if (!a.simplified) {
            for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) s += ln_val<C>(a, r, j);
            mean = a.cols ? bd_cu_block_sum(s, sh) / (double)a.cols : 0.0;
        }
        for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
            double d = (double)ln_val<C>(a, r, j) - mean;
            q += d * d;
        }
        double v = a.cols ? bd_cu_block_sum(q, sh) / (double)a.cols : 0.0;
        C cm = (C)mean, ci = (C)bd_ln_inv(v, a.eps);
        for (int64_t j = threadIdx.x; j < a.cols; j += blockDim.x) {
            int64_t off[2] = {j, j};
            if (!a.direct) bd_cu_offsets<2>(a.g, j, off);
            C xv = ln_val<C>(a, r, j);
            C o = ln_mul(ln_mul(xv - cm, ci), (C)ln_ld(a.scale, a.sdt, off[0]));
            if (a.beta) o += (C)ln_ld(a.beta, a.bdt, off[1]);
            ln_st(a.y, a.ydt, r * a.cols + j, o);
            if (a.sum) ln_st(a.sum, a.xdt, r * a.cols + j, xv);
        }
        if (threadIdx.x == 0) {
            if (a.mean) ln_st(a.mean, a.mdt, r, a.simplified ? 0.0 : (double)cm);
            if (a.inv) ln_st(a.inv, a.mdt, r, (double)ci);
        }
    }
}

/* t's strides over the normalized dims (X's from axis on), leading unit dims
 * beyond the normalized rank dropped, as the CPU lays it out. */
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

extern "C" braid_status bd_cuda_layernorm(const bd_cuda_kernel *k)
{
    const bd_layernorm_params *p = (const bd_layernorm_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int axis;
    int64_t rows, cols;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_LayerNormalization: case BD_OP_RMSNormalization: case BD_OP_MS_SkipLayerNormalization:
    case BD_OP_MS_SkipSimplifiedLayerNormalization: break;
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the layernorm family", k->node->op_type);
    }
    braid_status st = bd_layernorm_rows(k->node, x, &axis, &rows, &cols, k->err);
    if (st) return st;
    int gamma = p->skip ? 2 : 1, beta = p->skip ? bd_skip_beta_index(p->simplified) : 2;
    int bias = p->skip ? bd_skip_bias_index(p->simplified) : -1;
    const bd_tensor *bt = beta >= 0 && beta < k->n_in && k->in[beta].data ? &k->in[beta] : NULL;
    ln_args a = {};
    a.x = x->data, a.xdt = x->dtype;
    a.scale = k->in[gamma].data, a.sdt = k->in[gamma].dtype;
    if (bt) a.beta = bt->data, a.bdt = bt->dtype;
    if (p->skip) {
        a.skip = k->in[1].data;
        a.skip_rows = cols ? BD_MAX(bd_numel(&k->in[1]) / cols, (int64_t)1) : 1;
        if (bias < k->n_in && k->in[bias].data) a.sbias = k->in[bias].data;
        if (k->n_out > 3) a.sum = k->out[3].data;
    }
    a.y = k->out[0].data, a.ydt = k->out[0].dtype;
    if (k->n_out > 1) a.mean = k->out[1].data, a.mdt = k->out[1].dtype;
    if (k->n_out > 2) a.inv = k->out[2].data, a.mdt = k->out[2].dtype;
    a.rows = rows, a.cols = cols, a.simplified = p->simplified, a.eps = p->epsilon;
    a.direct = bd_numel(&k->in[gamma]) == cols && (!bt || bd_numel(bt) == cols);
    int64_t sts[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    affine_strides(x, axis, &k->in[gamma], sts[0]);
    if (bt) affine_strides(x, axis, bt, sts[1]);
    a.g.rank = x->rank - axis; /* not merged: the normalized dims keep their count so both line up */
    for (int d = 0; d < a.g.rank; d++) {
        a.g.dims[d] = x->dims[axis + d];
        a.g.st[0][d] = sts[0][d];
        a.g.st[1][d] = sts[1][d];
        a.g.st[2][d] = 0;
    }
    if (rows <= 0) return BRAID_OK;
    int dbl = x->dtype == BRAID_DTYPE_DOUBLE || a.sdt == BRAID_DTYPE_DOUBLE || (!p->skip && p->stash == BRAID_DTYPE_DOUBLE);
    int block = cols >= 1024 ? 256 : cols >= 128 ? 128 : 32;
    unsigned grid = (unsigned)(rows < 65535LL * 16 ? rows : 65535LL * 16);
    if (dbl) k_layernorm<double><<<grid, block, 0, k->stream>>>(a);
    else k_layernorm<float><<<grid, block, 0, k->stream>>>(a);
    BD_CU_CHECK_LAUNCH(k, "the layernorm kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_layernorm_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
