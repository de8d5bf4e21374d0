/* attention.cu: CUDA kernels of the attention family, mirroring
 * src/backend/cpu/ops/attention.c. bd_cuda_sdpa runs one scaled dot-product
 * attention (src/ops/attention.h) as two cublasGemmBatchedEx calls around a
 * row kernel: a chunk of (head, row block) items gets its scores S = alpha Q
 * K^T (pointer arrays built on the device, grouped-query heads mapped there),
 * one thread block per score row applies softcap, bias (the shared
 * bd_sdpa_bias), the softmax with block reductions and the fully-masked
 * guard, then Y = P V. The score scratch is bounded (SCORE_BUDGET): long
 * sequences run in row blocks and chunks of heads. ONNX's Attention gathers
 * K and V (with the past) in the compute dtype first, as the CPU does. */
#include <math.h>

#include "la.cuh"

extern "C" {
#include "ops/attention.h"
}

/* Bytes of scores one chunk may hold. */
#define SCORE_BUDGET ((size_t)256 << 20)

/* ---- the row kernel ------------------------------------------------------------------ */

template <class T> __device__ __forceinline__ T t_exp(T v);
template <> __device__ __forceinline__ float t_exp<float>(float v) { return expf(v); }
template <> __device__ __forceinline__ double t_exp<double>(double v) { return exp(v); }

/* Row t of the chunk: item it = t / m (head bh0 + it), query row i0 + t % m;
 * x is its stot scores, rewritten with the probabilities. */
template <class T>
static __global__ void sdpa_rows(bd_sdpa s, T *__restrict__ S, int64_t bh0, int64_t nitems, int64_t i0, int64_t m)
{
    __shared__ double shd[32];
    __shared__ float shf[32];
    __shared__ float bsum;
    int64_t n = s.stot;
    int emu = s.emu_dt, half_sm = s.sm_dt == BRAID_DTYPE_FLOAT16 || s.sm_dt == BRAID_DTYPE_BFLOAT16;
    for (int64_t t = blockIdx.x; t < nitems * m; t += gridDim.x) {
        int64_t it = t / m, bh = bh0 + it, b = bh / s.hq, h = bh % s.hq, i = i0 + t % m;
        T *x = S + t * n;
        int64_t len = bd_sdpa_len(&s, b), off = bd_sdpa_offset(&s, b);
        int64_t qo = ((b * s.hq + h) * s.sq + i) * n;
        int mine = 1; /* every bias this thread saw is -inf */
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            double v = (double)x[j];
            if (emu) v = bd_sdpa_round(emu, (float)v);
            if (s.qk && s.qk_mode == 0) bd_la_st(s.qk_dt, s.qk, qo + j, v);
            if (s.softcap > 0.0f) {
                float c = s.softcap;
                v = emu ? (double)bd_sdpa_round(emu, bd_sdpa_round(emu, tanhf(bd_sdpa_round(emu, (float)v / c))) * c)
                        : bd_sdpa_softcap(v, c);
            }
            if (sizeof(T) == 4) v = (float)v;
            if (s.qk && s.qk_mode == 1) bd_la_st(s.qk_dt, s.qk, qo + j, v);
            double bias = bd_sdpa_bias(&s, b, h, i, j, len, off);
            mine &= bias == -INFINITY;
            v = (double)(T)(v + bias);
            if (emu) v = bd_sdpa_round(emu, (float)v);
            if (s.qk && s.qk_mode == 2) bd_la_st(s.qk_dt, s.qk, qo + j, v);
            if (half_sm) v = bd_sdpa_round(s.sm_dt, (float)v);
            x[j] = (T)v;
        }
        int all_masked = __syncthreads_and(mine);
        if (all_masked) {
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) x[j] = (T)0;
        } else if (s.sm_dt == BRAID_DTYPE_DOUBLE || sizeof(T) == 8) {
            double mx = -INFINITY, sum = 0.0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = (double)x[j] > mx ? (double)x[j] : mx;
            mx = bd_cu_block_max(mx, (double)-INFINITY, shd);
            if (mx == -INFINITY) mx = 0.0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += exp((double)x[j] - mx);
            sum = bd_cu_block_sum(sum, shd);
            if (sum == 0.0) sum = 1.0;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) x[j] = (T)(exp((double)x[j] - mx) / sum);
        } else if (half_sm) { /* numpy's steps in float16/bfloat16, as the CPU's softmax_half */
            int dt = s.sm_dt;
            float mx = -INFINITY;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = (float)x[j] > mx ? (float)x[j] : mx;
            mx = bd_cu_block_max(mx, -INFINITY, shf);
            if (mx == -INFINITY) mx = 0.0f;
            float part = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float e = bd_sdpa_round(dt, expf(bd_sdpa_round(dt, (float)x[j] - mx)));
                x[j] = (T)e;
                part += e;
            }
            if (dt == BRAID_DTYPE_BFLOAT16) { /* ml_dtypes rounds after every addition: in order */
                __syncthreads();
                if (threadIdx.x == 0) {
                    float acc = 0.0f;
                    for (int64_t j = 0; j < n; j++) acc = bd_sdpa_round(dt, acc + (float)x[j]);
                    bsum = acc;
                }
                __syncthreads();
                part = bsum;
            } else {
                part = bd_sdpa_round(dt, bd_cu_block_sum(part, shf));
            }
            float sum = part == 0.0f ? 1.0f : part;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) x[j] = (T)bd_sdpa_round(dt, (float)x[j] / sum);
        } else {
            float mx = -INFINITY, sum = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) mx = (float)x[j] > mx ? (float)x[j] : mx;
            mx = bd_cu_block_max(mx, -INFINITY, shf);
            if (mx == -INFINITY) mx = 0.0f;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
                float e = expf((float)x[j] - mx);
                x[j] = (T)e;
                sum += e;
            }
            sum = bd_cu_block_sum(sum, shf);
            float r = sum == 0.0f ? 1.0f : 1.0f / sum;
            for (int64_t j = threadIdx.x; j < n; j += blockDim.x) x[j] = (T)((float)x[j] * r);
        }
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            if (s.qk && s.qk_mode == 3) bd_la_st(s.qk_dt, s.qk, qo + j, (double)x[j]);
            if (s.p_dt) x[j] = (T)bd_sdpa_round(s.p_dt, (float)x[j]);
        }
        __syncthreads(); /* x and the shared slots are reused by the next row */
    }
}

/* The pointer arrays of a chunk's two products: item it (head bh0 + it, rows
 * i0...) reads Q, K, V at their strides and writes S and Y. */
static __global__ void sdpa_pointers(bd_sdpa s, size_t es, char *S, int64_t bh0, int64_t nitems, int64_t i0,
                                     int64_t m, const void **qa, const void **ka, void **sa, const void **sb,
                                     const void **va, void **ya)
{
    BD_CU_LOOP(it, nitems)
    {
        int64_t bh = bh0 + it, b = bh / s.hq, h = bh % s.hq, hk = h / (s.hq / s.hkv);
        qa[it] = (const char *)s.q + (size_t)(b * s.q_st[0] + h * s.q_st[1] + i0 * s.q_st[2]) * es;
        ka[it] = (const char *)s.k + (size_t)(b * s.k_st[0] + hk * s.k_st[1]) * es;
        va[it] = (const char *)s.v + (size_t)(b * s.v_st[0] + hk * s.v_st[1]) * es;
        sa[it] = S + (size_t)(it * m * s.stot) * es;
        sb[it] = sa[it];
        ya[it] = (char *)s.y + (size_t)(b * s.y_st[0] + h * s.y_st[1] + i0 * s.y_st[2]) * es;
    }
}

/* y (b, h, rows, dv at y_st) = 0: no key at all. */
template <class T> static __global__ void zero_y(bd_sdpa s, T *__restrict__ y)
{
    BD_CU_LOOP(t, s.b * s.hq * s.sq * s.dv)
    {
        int64_t c = t % s.dv, r = t / s.dv, i = r % s.sq, bh = r / s.sq;
        y[(bh / s.hq) * s.y_st[0] + (bh % s.hq) * s.y_st[1] + i * s.y_st[2] + c] = (T)0;
    }
}

/* ---- bd_cuda_sdpa --------------------------------------------------------------------- */

/* Scratch bytes bd_cuda_sdpa needs for s (see sdpa_plan). */
struct sdpa_plan {
    int64_t rows, items; /* query rows per block, (head, block) items per chunk */
    size_t score_bytes, ptr_bytes;
};

static sdpa_plan sdpa_plan_of(const bd_sdpa *s)
{
    sdpa_plan p;
    size_t es = s->cdt == BRAID_DTYPE_DOUBLE ? 8 : 4, row = (size_t)(s->stot > 0 ? s->stot : 1) * es;
    int64_t heads = s->b * s->hq > 0 ? s->b * s->hq : 1;
    p.rows = s->sq > 0 ? s->sq : 1;
    if ((size_t)p.rows * row > SCORE_BUDGET) p.rows = (int64_t)(SCORE_BUDGET / row) > 0 ? (int64_t)(SCORE_BUDGET / row) : 1;
    p.items = (int64_t)(SCORE_BUDGET / ((size_t)p.rows * row));
    if (p.items < 1) p.items = 1;
    if (p.items > heads) p.items = heads;
    p.score_bytes = ((size_t)p.items * (size_t)p.rows * row + 255) & ~(size_t)255;
    p.ptr_bytes = (size_t)p.items * 6 * sizeof(void *);
    return p;
}

extern "C" size_t bd_cuda_sdpa_scratch(const bd_sdpa *s)
{
    sdpa_plan p = sdpa_plan_of(s);
    return p.score_bytes + p.ptr_bytes;
}

/* Runs s with `scratch` (bd_cuda_sdpa_scratch(s) bytes of device memory). */
extern "C" braid_status bd_cuda_sdpa(const bd_cuda_kernel *k, const bd_sdpa *s, void *scratch)
{
    braid_status st = BRAID_OK;
    int dbl = s->cdt == BRAID_DTYPE_DOUBLE;
    size_t es = dbl ? 8 : 4;
    if (s->b * s->hq * s->sq == 0 || s->dv < 0) return BRAID_OK;
    if (s->stot == 0) {
        if (dbl) zero_y<double><<<bd_cu_grid(s->b * s->hq * s->sq * s->dv), BD_CU_BLOCK, 0, k->stream>>>(*s, (double *)s->y);
        else zero_y<float><<<bd_cu_grid(s->b * s->hq * s->sq * s->dv), BD_CU_BLOCK, 0, k->stream>>>(*s, (float *)s->y);
        BD_CU_CHECK_LAUNCH(k, "attention's empty output");
        return BRAID_OK;
    }
    if (s->sq > INT_MAX || s->stot > INT_MAX || s->d > INT_MAX || s->dv > INT_MAX || s->q_st[2] > INT_MAX ||
        s->k_st[2] > INT_MAX || s->v_st[2] > INT_MAX || s->y_st[2] > INT_MAX)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "attention dims beyond cuBLAS's limit of %d", INT_MAX);
    sdpa_plan p = sdpa_plan_of(s);
    char *S = (char *)scratch;
    void **ptrs = (void **)(S + p.score_bytes);
    const void **qa = (const void **)ptrs, **ka = qa + p.items, **sb = ka + p.items, **va = sb + p.items;
    void **sa = (void **)(va + p.items), **ya = sa + p.items;
    cudaDataType_t ty = dbl ? CUDA_R_64F : CUDA_R_32F;
    cublasComputeType_t ct = dbl ? CUBLAS_COMPUTE_64F : k->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    double a1 = s->alpha, one = 1.0, zero = 0.0;
    float a1f = (float)s->alpha, onef = 1.0f, zerof = 0.0f;
    const void *pa1 = dbl ? (const void *)&a1 : (const void *)&a1f, *pone = dbl ? (const void *)&one : (const void *)&onef;
    const void *pzero = dbl ? (const void *)&zero : (const void *)&zerof;
    int64_t heads = s->b * s->hq;
    for (int64_t i0 = 0; i0 < s->sq; i0 += p.rows) {
        int64_t m = s->sq - i0 < p.rows ? s->sq - i0 : p.rows;
        for (int64_t bh0 = 0; bh0 < heads; bh0 += p.items) {
            int64_t cnt = heads - bh0 < p.items ? heads - bh0 : p.items;
            sdpa_pointers<<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>(*s, es, S, bh0, cnt, i0, m, qa, ka, sa, sb,
                                                                          va, ya);
            BD_CU_CHECK_LAUNCH(k, "attention's pointer arrays");
            /* S (m x stot) = alpha Q (m x d) K^T: column-major S^T = K Q^T */
            if (s->d > 0) {
                BD_CUBLAS_TRY(k->err, cublasGemmBatchedEx(k->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)s->stot, (int)m,
                                                          (int)s->d, pa1, ka, ty, (int)s->k_st[2], qa, ty,
                                                          (int)s->q_st[2], pzero, sa, ty, (int)s->stot, (int)cnt, ct,
                                                          CUBLAS_GEMM_DEFAULT));
            } else {
                BD_CU_CHECK_CALL(k, cudaMemsetAsync(S, 0, (size_t)(cnt * m * s->stot) * es, k->stream));
            }
            unsigned grid = (unsigned)(cnt * m < 65535LL * 16 ? cnt * m : 65535LL * 16);
            int block = s->stot >= 1024 ? 256 : s->stot >= 128 ? 128 : 32;
            if (dbl) sdpa_rows<double><<<grid, block, 0, k->stream>>>(*s, (double *)S, bh0, cnt, i0, m);
            else sdpa_rows<float><<<grid, block, 0, k->stream>>>(*s, (float *)S, bh0, cnt, i0, m);
            BD_CU_CHECK_LAUNCH(k, "attention's softmax rows");
            /* Y (m x dv) = P (m x stot) V: column-major Y^T = V^T P^T */
            if (s->dv > 0)
                BD_CUBLAS_TRY(k->err, cublasGemmBatchedEx(k->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)s->dv, (int)m,
                                                          (int)s->stot, pone, va, ty, (int)s->v_st[2], sb, ty,
                                                          (int)s->stot, pzero, ya, ty, (int)s->y_st[2], (int)cnt, ct,
                                                          CUBLAS_GEMM_DEFAULT));
        }
    }
    return BRAID_OK;
fail:
    return st;
}

/* ---- ONNX Attention -------------------------------------------------------------------- */

/* dst (b, h, total, d) rows [at, at + rows) in the compute dtype from src (dtype
 * dt): 4-D (b, h, rows, d) or 3-D (b, rows, h * d). */
static __global__ void gather_heads(int cdt, void *dst, int64_t total, int64_t at, int dt, const void *src, int rank3,
                                    int64_t b, int64_t h, int64_t rows, int64_t d)
{
    BD_CU_LOOP(t, b * h * rows * d)
    {
        int64_t c = t % d, r = (t / d) % rows, hi = (t / (d * rows)) % h, bi = t / (d * rows * h);
        int64_t so = rank3 ? ((bi * rows + r) * h + hi) * d + c : t;
        bd_la_st(cdt, dst, ((bi * h + hi) * total + at + r) * d + c, bd_la_ld64(dt, src, so));
    }
}

/* x = round(x * r) in dtype dt's precision (float buffers). */
static __global__ void prescale(float *x, int64_t n, float r, int dt)
{
    BD_CU_LOOP(i, n) x[i] = bd_sdpa_round(dt, x[i] * r);
}

static braid_status attention(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    const bd_attention_params *p = (const bd_attention_params *)n->params;
    const bd_tensor *q = &k->in[0], *kt = &k->in[1], *vt = &k->in[2];
    const bd_tensor *mask = k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL;
    const bd_tensor *pk = k->n_in > 4 && k->in[4].data ? &k->in[4] : NULL;
    const bd_tensor *pv = k->n_in > 5 && k->in[5].data ? &k->in[5] : NULL;
    const bd_tensor *nonpad = k->n_in > 6 && k->in[6].data ? &k->in[6] : NULL;
    bd_tensor *y = &k->out[0];
    bd_attention_geom g;
    if ((st = bd_attention_geometry(n, k->in, &g, k->err))) return st;
    int half = (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) && g.cdt == BRAID_DTYPE_FLOAT;
    size_t ces = bd_dtype_size(g.cdt);
    int64_t kn = g.b * g.hkv * g.stot * g.d, vn = g.b * g.hkv * g.stot * g.dv, qn = bd_numel(q), yn = bd_numel(y);
    int own_q = q->dtype != g.cdt, own_y = y->dtype != g.cdt;
    bd_sdpa s = {};
    s.b = g.b, s.hq = g.hq, s.hkv = g.hkv, s.sq = g.sq, s.stot = g.stot, s.d = g.d, s.dv = g.dv, s.cdt = g.cdt;
    s.softcap = p->softcap, s.offset = g.spast, s.causal = p->is_causal, s.left = p->left, s.right = p->right;
    s.masked = s.causal_masked = -INFINITY;
    size_t kb = bd_la_align((size_t)kn * ces), vb = bd_la_align((size_t)vn * ces), qb = own_q ? bd_la_align((size_t)qn * ces) : 0;
    size_t yb = own_y ? bd_la_align((size_t)yn * ces) : 0, sb = bd_la_align(bd_cuda_sdpa_scratch(&s));
    char *mem = NULL;
    if ((st = bd_la_scratch(k, kb + vb + qb + yb + sb, &mem))) return st;
    void *kbuf = mem, *vbuf = mem + kb, *qbuf = mem + kb + vb, *ybuf = mem + kb + vb + qb, *sbuf = mem + kb + vb + qb + yb;
    if (pk) {
        gather_heads<<<bd_cu_grid(g.b * g.hkv * g.spast * g.d), BD_CU_BLOCK, 0, k->stream>>>(
            g.cdt, kbuf, g.stot, 0, pk->dtype, pk->data, 0, g.b, g.hkv, g.spast, g.d);
        gather_heads<<<bd_cu_grid(g.b * g.hkv * g.spast * g.dv), BD_CU_BLOCK, 0, k->stream>>>(
            g.cdt, vbuf, g.stot, 0, pv->dtype, pv->data, 0, g.b, g.hkv, g.spast, g.dv);
    }
    if (g.skv > 0) {
        gather_heads<<<bd_cu_grid(g.b * g.hkv * g.skv * g.d), BD_CU_BLOCK, 0, k->stream>>>(
            g.cdt, kbuf, g.stot, g.spast, kt->dtype, kt->data, g.rank3, g.b, g.hkv, g.skv, g.d);
        gather_heads<<<bd_cu_grid(g.b * g.hkv * g.skv * g.dv), BD_CU_BLOCK, 0, k->stream>>>(
            g.cdt, vbuf, g.stot, g.spast, vt->dtype, vt->data, g.rank3, g.b, g.hkv, g.skv, g.dv);
    }
    BD_CU_CHECK_LAUNCH(k, "attention's key/value gather");
    for (int o = 1; o <= 2 && o < k->n_out; o++)
        if (k->out[o].data && (st = bd_la_convert(k, g.cdt, o == 1 ? kbuf : vbuf, k->out[o].dtype, k->out[o].data,
                                                  o == 1 ? kn : vn)))
            return st;
    if (own_q && (st = bd_la_convert(k, q->dtype, q->data, g.cdt, qbuf, qn))) return st;
    s.q = own_q ? qbuf : q->data, s.k = kbuf, s.v = vbuf, s.y = own_y ? ybuf : y->data;
    if (g.rank3) {
        s.q_st[0] = g.sq * g.hq * g.d, s.q_st[1] = g.d, s.q_st[2] = g.hq * g.d;
        s.y_st[0] = g.sq * g.hq * g.dv, s.y_st[1] = g.dv, s.y_st[2] = g.hq * g.dv;
    } else {
        s.q_st[0] = g.hq * g.sq * g.d, s.q_st[1] = g.sq * g.d, s.q_st[2] = g.d;
        s.y_st[0] = g.hq * g.sq * g.dv, s.y_st[1] = g.sq * g.dv, s.y_st[2] = g.dv;
    }
    s.k_st[0] = g.hkv * g.stot * g.d, s.k_st[1] = g.stot * g.d, s.k_st[2] = g.d;
    s.v_st[0] = g.hkv * g.stot * g.dv, s.v_st[1] = g.stot * g.dv, s.v_st[2] = g.dv;
    double scale = p->has_scale ? (double)p->scale : 1.0 / sqrt((double)g.d), r = sqrt(scale);
    r = q->dtype == BRAID_DTYPE_DOUBLE ? r : (double)bd_sdpa_round(q->dtype, (float)r);
    s.alpha = r * r;
    if (half) { /* as the CPU: Q and K scaled and rounded in Q's dtype */
        prescale<<<bd_cu_grid(qn), BD_CU_BLOCK, 0, k->stream>>>((float *)qbuf, qn, (float)r, q->dtype);
        prescale<<<bd_cu_grid(kn), BD_CU_BLOCK, 0, k->stream>>>((float *)kbuf, kn, (float)r, q->dtype);
        BD_CU_CHECK_LAUNCH(k, "attention's Q/K scaling");
        s.alpha = 1.0;
        s.emu_dt = q->dtype;
    }
    if (mask) {
        s.mask = mask->data, s.mask_dt = mask->dtype, s.mask_flags = mask->dtype == BRAID_DTYPE_BOOL;
        int64_t full[4] = {g.b, g.hq, g.sq, mask->dims[mask->rank - 1]};
        bd_cu_bcast_strides(mask, 4, full, s.m_st);
        s.mask_kv = mask->dims[mask->rank - 1];
    }
    if (nonpad) s.kv_len = nonpad->data, s.kv_len_dt = BRAID_DTYPE_INT64, s.offset_from_len = 1;
    if (p->softmax_precision) s.sm_dt = p->softmax_precision;
    else if (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) s.sm_dt = q->dtype;
    if (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) s.p_dt = q->dtype;
    if (k->n_out > 3 && k->out[3].data) s.qk = k->out[3].data, s.qk_dt = k->out[3].dtype, s.qk_mode = p->qk_mode;
    if ((st = bd_cuda_sdpa(k, &s, sbuf))) return st;
    if (own_y) return bd_la_convert(k, g.cdt, ybuf, y->dtype, y->data, yn);
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_attention(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (k->node->op == BD_OP_Attention) return attention(k);
    return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the attention family", k->node->op_type);
}

extern "C" void bd_cuda_attention_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_la_scratch_free(cache);
}
