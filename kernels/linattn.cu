/* linattn.cu: CUDA kernels of the linattn family, mirroring
 * src/backend/cpu/ops/linattn.c: LinearAttention with one thread block per
 * key/value head walking the tokens in order (its float32 state in device
 * scratch, phases separated by barriers: decay, delta correction, rank-1
 * write, the query heads' reads), and one thread per element for
 * CausalConvWithState over the shared formulas. */
#include <math.h>

#include "la.cuh"

extern "C" {
#include "ops/linattn.h"
}

/* ---- LinearAttention ----------------------------------------------------------------- */

struct la_args {
    bd_linattn_geom g;
    int gating, delta;
    int qdt, kdt, vdt, pdt, ddt, bdt, ydt, sdt;
    const void *q, *k, *v, *past, *decay, *beta;
    void *y, *present;
};

/* Block it = (b, kv head); S (dk x dv) and vp (dv) live in scratch. */
static __global__ void la_heads(la_args a, float *__restrict__ scratch)
{
    const bd_linattn_geom &g = a.g;
    int64_t dk = g.dk, dv = g.dv, grp = g.hq / g.hkv;
    for (int64_t it = blockIdx.x; it < g.b * g.hkv; it += gridDim.x) {
        float *S = scratch + it * (dk * dv + dv), *vp = S + dk * dv;
        int64_t b = it / g.hkv, h = it % g.hkv;
        for (int64_t e = threadIdx.x; e < dk * dv; e += blockDim.x)
            S[e] = a.past ? (float)bd_la_ld64(a.pdt, a.past, it * dk * dv + e) : 0.0f;
        __syncthreads();
        for (int64_t t = 0; t < g.t; t++) {
            int64_t bt = b * g.t + t;
            if (a.gating) {
                for (int64_t e = threadIdx.x; e < dk * dv; e += blockDim.x) {
                    int64_t d = e / dv, di = g.decay_per_key ? (bt * g.hkv + h) * dk + d : bt * g.hkv + h;
                    S[e] *= expf((float)bd_la_ld64(a.ddt, a.decay, di));
                }
                __syncthreads();
            }
            for (int64_t m = threadIdx.x; m < dv; m += blockDim.x) {
                float v = (float)bd_la_ld64(a.vdt, a.v, (bt * g.hkv + h) * dv + m);
                if (a.delta) {
                    float r = 0.0f, bv = (float)bd_la_ld64(a.bdt, a.beta, g.beta_shared ? bt : bt * g.hkv + h);
                    for (int64_t d = 0; d < dk; d++) r += S[d * dv + m] * (float)bd_la_ld64(a.kdt, a.k, (bt * g.hkv + h) * dk + d);
                    v = bv * (v - r);
                }
                vp[m] = v;
            }
            __syncthreads();
            for (int64_t e = threadIdx.x; e < dk * dv; e += blockDim.x) {
                int64_t d = e / dv, m = e % dv;
                S[e] += (float)bd_la_ld64(a.kdt, a.k, (bt * g.hkv + h) * dk + d) * vp[m];
            }
            __syncthreads();
            for (int64_t e = threadIdx.x; e < grp * dv; e += blockDim.x) {
                int64_t hq = h * grp + e / dv, m = e % dv;
                float acc = 0.0f;
                for (int64_t d = 0; d < dk; d++) acc += (float)bd_la_ld64(a.qdt, a.q, (bt * g.hq + hq) * dk + d) * S[d * dv + m];
                bd_la_st(a.ydt, a.y, (bt * g.hq + hq) * dv + m, acc * g.scale);
            }
            __syncthreads();
        }
        if (a.present)
            for (int64_t e = threadIdx.x; e < dk * dv; e += blockDim.x) bd_la_st(a.sdt, a.present, it * dk * dv + e, S[e]);
        __syncthreads();
    }
}

static braid_status linear_attention(const bd_cuda_kernel *k)
{
    const bd_linattn_params *p = (const bd_linattn_params *)k->node->params;
    la_args a = {};
    braid_status st = bd_linattn_geometry(k->node, k->in, &a.g, k->err);
    if (st) return st;
    a.gating = p->rule == BD_LA_GATED || p->rule == BD_LA_GATED_DELTA;
    a.delta = p->rule == BD_LA_DELTA || p->rule == BD_LA_GATED_DELTA;
    a.q = k->in[0].data, a.qdt = k->in[0].dtype, a.k = k->in[1].data, a.kdt = k->in[1].dtype;
    a.v = k->in[2].data, a.vdt = k->in[2].dtype;
    if (k->n_in > 3 && k->in[3].data) a.past = k->in[3].data, a.pdt = k->in[3].dtype;
    if (k->n_in > 4 && k->in[4].data) a.decay = k->in[4].data, a.ddt = k->in[4].dtype;
    if (k->n_in > 5 && k->in[5].data) a.beta = k->in[5].data, a.bdt = k->in[5].dtype;
    a.y = k->out[0].data, a.ydt = k->out[0].dtype;
    if (k->n_out > 1 && k->out[1].data) a.present = k->out[1].data, a.sdt = k->out[1].dtype;
    int64_t heads = a.g.b * a.g.hkv;
    if (heads == 0) return BRAID_OK;
    char *mem = NULL;
    if ((st = bd_la_scratch(k, (size_t)(heads * (a.g.dk * a.g.dv + a.g.dv)) * sizeof(float), &mem))) return st;
    unsigned grid = (unsigned)(heads < 65535 ? heads : 65535);
    la_heads<<<grid, 256, 0, k->stream>>>(a, (float *)mem);
    BD_CU_CHECK_LAUNCH(k, "the linear attention recurrence");
    return BRAID_OK;
}

/* ---- CausalConvWithState ------------------------------------------------------- */

/* Output element i = (row r, t < len) or, past len, present_state element. */
static __global__ void conv_k(int dt, const void *__restrict__ x, const void *__restrict__ w, const void *__restrict__ bias,
                              const void *__restrict__ past, void *__restrict__ y, void *__restrict__ ps, int64_t rows,
                              int64_t c, int64_t len, int64_t kk, int silu)
{
    BD_CU_LOOP(i, rows * (len + kk - 1))
    {
        int64_t r = i / (len + kk - 1), t = i % (len + kk - 1), ch = r % c;
        int which;
        if (t >= len) { /* present_state: padded position len + (t - len) */
            if (!ps) continue;
            int64_t at = bd_ccws_padded(r, t, len, kk, past != NULL, &which);
            bd_la_st(dt, ps, r * (kk - 1) + t - len, which < 0 ? 0.0 : bd_la_ld64(dt, which ? x : past, at));
            continue;
        }
        float acc = bias ? (float)bd_la_ld64(dt, bias, ch) : 0.0f;
        for (int64_t q = 0; q < kk; q++) {
            int64_t at = bd_ccws_padded(r, t + q, len, kk, past != NULL, &which);
            float v = which < 0 ? 0.0f : (float)bd_la_ld64(dt, which ? x : past, at);
            acc += (float)bd_la_ld64(dt, w, ch * kk + q) * v;
        }
        acc = bd_linattn_round(dt, acc);
        if (silu) acc = bd_linattn_round(dt, bd_silu(acc));
        bd_la_st(dt, y, r * len + t, acc);
    }
}

extern "C" braid_status bd_cuda_linattn(const bd_cuda_kernel *k)
{
    const bd_linattn_params *p = (const bd_linattn_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_LinearAttention: return linear_attention(k);
    case BD_OP_CausalConvWithState: {
        const bd_tensor *x = &k->in[0];
        int64_t rows = x->dims[0] * x->dims[1], len = x->dims[2], kk = k->in[1].dims[2], n = rows * (len + kk - 1);
        if (n == 0) return BRAID_OK;
        conv_k<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            x->dtype, x->data, k->in[1].data, k->n_in > 2 ? k->in[2].data : NULL, k->n_in > 3 ? k->in[3].data : NULL,
            k->out[0].data, k->n_out > 1 ? k->out[1].data : NULL, rows, x->dims[1], len, kk, p->silu);
        BD_CU_CHECK_LAUNCH(k, "the causal convolution");
        return BRAID_OK;
    }
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the linattn family", k->node->op_type);
    }
}

extern "C" void bd_cuda_linattn_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_la_scratch_free(cache);
}
