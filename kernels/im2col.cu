/* im2col.cu: CUDA kernels of the im2col op family, on the formulas of
 * src/ops/im2col.h that the CPU kernels run. Col2Im: one thread per output
 * pixel, summing its column entries in kernel-point order (every numeric
 * dtype, bool as OR). DeformConv: a kernel samples the deformed columns of
 * one (image, group) into scratch (in float, or double for double), cuBLAS
 * multiplies them by the group's weights, a last kernel adds the bias and
 * rounds float16/bfloat16 outputs once. */
#include <limits.h>

#include "common.cuh"

extern "C" {
#include "ops/im2col.h"
#include "util/dtype.h"
}

/* ---- Col2Im -------------------------------------------------------------------- */

template <class T, class ACC>
__global__ void k_col2im(const T *__restrict__ x, T *__restrict__ y, bd_im2col_geom g, int64_t total, int mode)
{
    /* mode: 0 add, 1 or (bool), 2 float16, 3 bfloat16 (stored as uint16_t) */
    BD_CU_LOOP(e, total)
    {
        const int64_t p = e % g.P, pl = e / g.P;
        const T *xs = x + pl * g.K * g.L;
        ACC acc = 0;
        for (int64_t kk = 0; kk < g.K; kk++) {
            int64_t col = bd_col2im_col(&g, p, kk);
            if (col < 0) continue;
            T v = xs[kk * g.L + col];
            if (mode == 1) acc = acc || v;
            else if (mode == 2) acc += (ACC)bd_half_to_float_hd((uint16_t)v);
            else if (mode == 3) acc += (ACC)bd_bf16_to_float((uint16_t)v);
            else acc += (ACC)v;
        }
        if (mode == 2) y[e] = (T)bd_float_to_half((float)acc);
        else if (mode == 3) y[e] = (T)bd_float_to_bf16((float)acc);
        else y[e] = (T)acc;
    }
}

static braid_status run_col2im(const bd_cuda_kernel *k)
{
    bd_tensor hv[3];
    bd_cu_host_view(k, hv, 3);
    bd_im2col_geom g;
    braid_status st = bd_col2im_geometry(k->node, hv, &g, k->err);
    if (st) return st;
    const int64_t total = bd_numel(&k->out[0]);
    if (total == 0) return BRAID_OK;
    const void *x = k->in[0].data;
    void *y = k->out[0].data;
    const unsigned grid = bd_cu_grid(total);
    switch (k->in[0].dtype) {
#define C2I(DT, T, ACC, MODE)                                                                      \
    case BRAID_DTYPE_##DT:                                                                         \
        k_col2im<T, ACC><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const T *)x, (T *)y, g, total, MODE); \
        break;
        C2I(FLOAT, float, float, 0)
        C2I(DOUBLE, double, double, 0)
        C2I(FLOAT16, uint16_t, float, 2)
        C2I(BFLOAT16, uint16_t, float, 3)
        C2I(INT8, int8_t, unsigned long long, 0)
        C2I(INT16, int16_t, unsigned long long, 0)
        C2I(INT32, int32_t, unsigned long long, 0)
        C2I(INT64, int64_t, unsigned long long, 0)
        C2I(UINT8, uint8_t, unsigned long long, 0)
        C2I(UINT16, uint16_t, unsigned long long, 0)
        C2I(UINT32, uint32_t, unsigned long long, 0)
        C2I(UINT64, uint64_t, unsigned long long, 0)
        C2I(BOOL, uint8_t, unsigned int, 1)
#undef C2I
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Col2Im of dtype %s is not implemented on CUDA",
                       bd_dtype_name(k->in[0].dtype));
    }
    BD_CU_CHECK_LAUNCH(k, "the Col2Im kernel");
    return BRAID_OK;
}

/* ---- DeformConv ---------------------------------------------------------------- */

__host__ __device__ __forceinline__ double dload(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

struct dc_args {
    bd_im2col_geom g;
    int dt;
    int64_t n, grp, C, cg, og_ch, rows;
};

/* cols (rows, L) of image n, group grp: mask times the deformed sample. */
template <class T>
__global__ void k_deform_cols(const void *__restrict__ x, const void *__restrict__ off, const void *__restrict__ mask,
                              T *__restrict__ cols, dc_args a)
{
    const bd_im2col_geom &g = a.g;
    BD_CU_LOOP(e, a.rows * g.L)
    {
        const int64_t row = e / g.L, p = e % g.L;
        const int64_t ci = row / g.K, kk = row % g.K, c = a.grp * a.cg + ci, og = c / a.og_ch, ogs = a.C / a.og_ch;
        int64_t kc[3] = {0, 0, 0}, q = kk, rem = p;
        for (int d = g.nsp - 1; d >= 0; d--) kc[d] = q % g.blk[d], q /= g.blk[d];
        const int64_t off_base = ((a.n * g.K * g.nsp * ogs) + (og * g.K + kk) * g.nsp) * g.L;
        double pos[3];
        for (int d = g.nsp - 1; d >= 0; d--) {
            int64_t o = rem % g.nb[d];
            rem /= g.nb[d];
            pos[d] = bd_deform_pos(&g, d, o, kc[d], dload(off, a.dt, off_base + d * g.L + p));
        }
        int64_t idx[8];
        double cw[8], v = 0.0;
        const int nc = bd_deform_corners(&g, pos, idx, cw);
        for (int j = 0; j < nc; j++)
            if (idx[j] >= 0) v += cw[j] * dload(x, a.dt, (a.n * a.C + c) * g.P + idx[j]);
        if (mask) v *= dload(mask, a.dt, (a.n * g.K * ogs + og * g.K + kk) * g.L + p);
        cols[e] = (T)v;
    }
}

/* y (float or double scratch, N OC L) plus bias, stored in the output's dtype. */
template <class T>
__global__ void k_deform_out(const T *__restrict__ acc, const void *__restrict__ bias, void *__restrict__ y, int dt,
                             int64_t OC, int64_t L, int64_t total)
{
    BD_CU_LOOP(e, total)
    {
        double v = (double)acc[e];
        if (bias) v += dload(bias, dt, (e / L) % OC);
        switch (dt) {
        case BRAID_DTYPE_DOUBLE: ((double *)y)[e] = v; break;
        case BRAID_DTYPE_FLOAT16: ((uint16_t *)y)[e] = bd_float_to_half((float)v); break;
        case BRAID_DTYPE_BFLOAT16: ((uint16_t *)y)[e] = bd_float_to_bf16((float)v); break;
        default: ((float *)y)[e] = (float)v; break;
        }
    }
}

/* W as float (float16/bfloat16 weights widened once per run). */
__global__ void k_widen(const void *__restrict__ w, int dt, float *__restrict__ o, int64_t n)
{
    BD_CU_LOOP(i, n) o[i] = (float)dload(w, dt, i);
}

struct dc_cache {
    size_t bytes;
    void *buf;
};

static braid_status run_deform(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_im2col_params *prm = (const bd_im2col_params *)k->node->params;
    bd_im2col_geom g;
    if ((st = bd_deform_geometry(k->node, k->in, k->n_in, &g, k->err))) return st;
    const int dt = k->in[0].dtype, dbl = dt == BRAID_DTYPE_DOUBLE;
    const int64_t N = k->in[0].dims[0], C = k->in[0].dims[1], OC = k->out[0].dims[1];
    const int64_t G = prm->group, cg = C / G, ocg = OC / G, rows = cg * g.K, total = bd_numel(&k->out[0]);
    if (total == 0) return BRAID_OK;
    if (rows > INT_MAX || g.L > INT_MAX || ocg > INT_MAX)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "DeformConv's matrices (%lld x %lld) are beyond cuBLAS's int dims",
                       (long long)rows, (long long)g.L);
    const size_t es = dbl ? sizeof(double) : sizeof(float);
    /* scratch: cols (rows L), the result before bias (N OC L), W widened (OC rows) */
    const size_t bytes = ((size_t)(rows * g.L) + (size_t)total + (dbl ? 0 : (size_t)(OC * rows))) * es;
    dc_cache *c = (dc_cache *)*k->cache;
    if (!c || c->bytes < bytes) {
        if (c) bd_cuda_scratch_free(c->buf), bd_free(c);
        *k->cache = NULL;
        if (!(c = (dc_cache *)bd_calloc(1, sizeof *c))) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        cudaError_t ce = bd_cuda_scratch_alloc(&c->buf, bytes);
        if (ce != cudaSuccess) {
            bd_free(c);
            return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate %.1f MiB of scratch for DeformConv: %s",
                           (double)bytes / 1048576.0, cudaGetErrorString(ce));
        }
        c->bytes = bytes;
        *k->cache = c;
    }
    char *cols = (char *)c->buf, *acc = cols + (size_t)(rows * g.L) * es, *wf = acc + (size_t)total * es;
    const void *w = k->in[1].data;
    if (!dbl) {
        k_widen<<<bd_cu_grid(OC * rows), BD_CU_BLOCK, 0, k->stream>>>(w, dt, (float *)wf, OC * rows);
        BD_CU_CHECK_LAUNCH(k, "the DeformConv weight kernel");
        w = wf;
    }
    const void *mask = k->n_in > 4 && k->in[4].dtype ? k->in[4].data : NULL;
    const void *bias = k->n_in > 3 && k->in[3].dtype ? k->in[3].data : NULL;
    for (int64_t n = 0; n < N; n++)
        for (int64_t grp = 0; grp < G; grp++) {
            dc_args a = {g, dt, n, grp, C, cg, C / prm->offset_group, rows};
            if (dbl)
                k_deform_cols<double><<<bd_cu_grid(rows * g.L), BD_CU_BLOCK, 0, k->stream>>>(
                    k->in[0].data, k->in[2].data, mask, (double *)cols, a);
            else
                k_deform_cols<float><<<bd_cu_grid(rows * g.L), BD_CU_BLOCK, 0, k->stream>>>(
                    k->in[0].data, k->in[2].data, mask, (float *)cols, a);
            BD_CU_CHECK_LAUNCH(k, "the DeformConv column kernel");
            /* row-major Y (ocg x L) = W_g (ocg x rows) cols (rows x L), as column-major Y^T = cols^T W_g^T */
            const int64_t yo = (n * OC + grp * ocg) * g.L, wo = grp * ocg * rows;
            if (dbl) {
                const double one = 1.0, zero = 0.0;
                BD_CUBLAS_TRY(k->err, cublasDgemm(k->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)g.L, (int)ocg, (int)rows,
                                                  &one, (const double *)cols, (int)g.L, (const double *)w + wo,
                                                  (int)rows, &zero, (double *)acc + yo, (int)g.L));
            } else {
                const float one = 1.0f, zero = 0.0f;
                BD_CUBLAS_TRY(k->err, cublasSgemm(k->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)g.L, (int)ocg, (int)rows,
                                                  &one, (const float *)cols, (int)g.L, (const float *)w + wo,
                                                  (int)rows, &zero, (float *)acc + yo, (int)g.L));
            }
        }
    if (dbl)
        k_deform_out<double><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>((const double *)acc, bias,
                                                                               k->out[0].data, dt, OC, g.L, total);
    else
        k_deform_out<float><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>((const float *)acc, bias,
                                                                              k->out[0].data, dt, OC, g.L, total);
    BD_CU_CHECK_LAUNCH(k, "the DeformConv output kernel");
    return BRAID_OK;
fail:
    return st;
}

extern "C" braid_status bd_cuda_im2col(const bd_cuda_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_Col2Im: return run_col2im(k);
    case BD_OP_DeformConv: return run_deform(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the im2col family", k->node->op_type);
    }
}

extern "C" void bd_cuda_im2col_free(const bd_node *n, void *cache)
{
    if (cache && n->op == BD_OP_DeformConv) {
        dc_cache *c = (dc_cache *)cache;
        bd_cuda_scratch_free(c->buf);
        bd_free(c);
    }
}
