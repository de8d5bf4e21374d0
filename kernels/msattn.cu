/* msattn.cu: CUDA kernels of the msattn family (com.microsoft), mirroring
 * src/backend/cpu/ops/msattn.c: the attentions gather Q (plus bias), K and V
 * (past first) in float device scratch, write the present outputs, and run
 * the attention family's bd_cuda_sdpa with onnxruntime's masking; Attention
 * projects its input with one cuBLAS GEMM first; GroupQueryAttention rotates
 * Q and K and writes its cache at each batch's seqlens_k (read on the device). EmbedLayerNormalization
 * runs one thread block per token (statistics in double, as the CPU); an
 * id outside its table gives a NaN row (the CPU fails). */
#include <math.h>

#include "la.cuh"

extern "C" {
#include "ops/msattn.h"
#include "ops/rope.h"
}

/* dst (b, h, total, d) rows [at, at + rows) = src of dtype dt read as (b, rows,
 * h * d) at row stride `row` (rank3) or (b, h, rows, d), plus bias[h * d + c]
 * (dtype bdt) when set. */
static __global__ void ms_gather(float *__restrict__ dst, int64_t total, int64_t at, int dt, const void *__restrict__ src,
                                 int rank3, int64_t row, const void *__restrict__ bias, int bdt, int64_t b, int64_t h,
                                 int64_t rows, int64_t d)
{
    BD_CU_LOOP(t, b * h * rows * d)
    {
        int64_t c = t % d, r = (t / d) % rows, hi = (t / (d * rows)) % h, bi = t / (d * rows * h);
        int64_t so = rank3 ? (bi * rows + r) * row + hi * d + c : t;
        float v = (float)bd_la_ld64(dt, src, so);
        if (bias) v += (float)bd_la_ld64(bdt, bias, hi * d + c);
        dst[((bi * h + hi) * total + at + r) * d + c] = v;
    }
}

static braid_status gather(const bd_cuda_kernel *k, float *dst, int64_t total, int64_t at, int dt, const void *src, int rank3,
                           int64_t row, const void *bias, int bdt, int64_t b, int64_t h, int64_t rows, int64_t d)
{
    int64_t n = b * h * rows * d;
    if (n <= 0) return BRAID_OK;
    ms_gather<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(dst, total, at, dt, src, rank3, row, bias, bdt, b, h, rows, d);
    BD_CU_CHECK_LAUNCH(k, "an attention operand gather");
    return BRAID_OK;
}

/* rows x w = the bias (w values of dtype bdt) on every row, in float. */
static __global__ void bias_rows(float *__restrict__ y, int64_t rows, int64_t w, const void *__restrict__ bias, int bdt)
{
    BD_CU_LOOP(i, rows * w) y[i] = (float)bd_la_ld64(bdt, bias, i % w);
}

/* Scratch layout: named float regions carved from the node's cache. */
struct carve {
    char *base;
    size_t off;
    float *take(int64_t n)
    {
        float *p = (float *)(base + off);
        off += bd_la_align((size_t)(n > 0 ? n : 1) * sizeof(float));
        return p;
    }
};

static braid_status finish(const bd_cuda_kernel *k, bd_sdpa *s, float *yb, void *sb)
{
    braid_status st;
    bd_tensor *y = &k->out[0];
    s->y = y->dtype == BRAID_DTYPE_FLOAT ? y->data : (void *)yb;
    if ((st = bd_cuda_sdpa(k, s, sb))) return st;
    if (y->dtype != BRAID_DTYPE_FLOAT) return bd_la_convert(k, BRAID_DTYPE_FLOAT, yb, y->dtype, y->data, bd_numel(y));
    return BRAID_OK;
}

static braid_status mha(const bd_cuda_kernel *k)
{
    braid_status st;
    const bd_msattn_params *p = (const bd_msattn_params *)k->node->params;
    bd_msattn_geom g;
    if ((st = bd_msattn_geometry(k->node, k->in, &g, k->err))) return st;
    int64_t d = g.n * g.h, dv = g.n * g.hv;
    bd_sdpa s = {};
    bd_msattn_sdpa(p, &g, g.h, k->n_in > 4 ? &k->in[4] : NULL, k->n_in > 5 ? &k->in[5] : NULL, &s);
    s.q_st[0] = g.n * g.s * g.h, s.q_st[1] = g.s * g.h, s.q_st[2] = g.h; /* Q gathered as (b, n, s, h) */
    int64_t nq = g.b * g.n * g.s * g.h, nk = g.b * g.n * g.t * g.h, nv = g.b * g.n * g.t * g.hv, ny = bd_numel(&k->out[0]);
    size_t need = 0;
    for (int64_t n : {nq, nk, nv, ny}) need += bd_la_align((size_t)(n > 0 ? n : 1) * sizeof(float));
    need += bd_la_align(bd_cuda_sdpa_scratch(&s));
    char *mem = NULL;
    if ((st = bd_la_scratch(k, need, &mem))) return st;
    carve c = {mem, 0};
    float *qb = c.take(nq), *kb = c.take(nk), *vb = c.take(nv), *yb = c.take(ny);
    void *sb = mem + c.off;
    const void *bias = g.has_bias ? k->in[3].data : NULL;
    int bdt = g.has_bias ? k->in[3].dtype : 0;
    const char *bk = bias ? (const char *)bias + (size_t)d * bd_dtype_size(bdt) : NULL;
    const char *bv = bias ? (const char *)bias + (size_t)(2 * d) * bd_dtype_size(bdt) : NULL;
    if ((st = gather(k, qb, g.s, 0, k->in[0].dtype, k->in[0].data, 1, d, bias, bdt, g.b, g.n, g.s, g.h))) return st;
    if (g.has_past) {
        if ((st = gather(k, kb, g.t, 0, k->in[6].dtype, k->in[6].data, 0, 0, NULL, 0, g.b, g.n, g.p, g.h))) return st;
        if ((st = gather(k, vb, g.t, 0, k->in[7].dtype, k->in[7].data, 0, 0, NULL, 0, g.b, g.n, g.p, g.hv))) return st;
    }
    if ((st = gather(k, kb, g.t, g.p, k->in[1].dtype, k->in[1].data, !g.kv_bnsh, d, bk, bdt, g.b, g.n, g.l, g.h)) ||
        (st = gather(k, vb, g.t, g.p, k->in[2].dtype, k->in[2].data, !g.kv_bnsh, dv, bv, bdt, g.b, g.n, g.l, g.hv)))
        return st;
    for (int o = 1; o <= 2 && o < k->n_out; o++)
        if (k->out[o].data &&
            (st = bd_la_convert(k, BRAID_DTYPE_FLOAT, o == 1 ? kb : vb, k->out[o].dtype, k->out[o].data, o == 1 ? nk : nv)))
            return st;
    s.q = qb, s.k = kb, s.v = vb;
    if (k->n_out > 3 && k->out[3].data) s.qk = k->out[3].data, s.qk_dt = k->out[3].dtype, s.qk_mode = 2;
    return finish(k, &s, yb, sb);
}

static braid_status attention_ms(const bd_cuda_kernel *k)
{
    braid_status st;
    const bd_msattn_params *p = (const bd_msattn_params *)k->node->params;
    bd_msattn_geom g;
    if ((st = bd_msattn_geometry(k->node, k->in, &g, k->err))) return st;
    const bd_tensor *x = &k->in[0], *w = &k->in[1];
    int64_t d = g.n * g.h, dv = g.n * g.hv, wd = 2 * d + dv, rows = g.b * g.s;
    bd_sdpa s = {};
    bd_msattn_sdpa(p, &g, wd, k->n_in > 3 ? &k->in[3] : NULL, k->n_in > 5 ? &k->in[5] : NULL, &s);
    int64_t nx = rows * g.din, nw = g.din * wd, nqkv = rows * wd, nk = g.b * g.n * g.t * g.h, nv = g.b * g.n * g.t * g.hv;
    int64_t ny = bd_numel(&k->out[0]);
    size_t need = 0;
    for (int64_t n : {nx, nw, nqkv, nk, nv, ny}) need += bd_la_align((size_t)(n > 0 ? n : 1) * sizeof(float));
    need += bd_la_align(bd_cuda_sdpa_scratch(&s));
    char *mem = NULL;
    if ((st = bd_la_scratch(k, need, &mem))) return st;
    carve c = {mem, 0};
    float *xf = c.take(nx), *wf = c.take(nw), *qkv = c.take(nqkv), *kb = c.take(nk), *vb = c.take(nv), *yb = c.take(ny);
    void *sb = mem + c.off;
    if ((st = bd_la_convert(k, x->dtype, x->data, BRAID_DTYPE_FLOAT, xf, nx)) ||
        (st = bd_la_convert(k, w->dtype, w->data, BRAID_DTYPE_FLOAT, wf, nw)))
        return st;
    if (g.has_bias && nqkv > 0) {
        bias_rows<<<bd_cu_grid(nqkv), BD_CU_BLOCK, 0, k->stream>>>(qkv, rows, wd, k->in[2].data, k->in[2].dtype);
        BD_CU_CHECK_LAUNCH(k, "Attention's bias rows");
    }
    if (g.din == 0) {
        if (!g.has_bias) BD_CU_CHECK_CALL(k, cudaMemsetAsync(qkv, 0, (size_t)nqkv * sizeof(float), k->stream));
    } else if ((st = bd_la_gemm(k, BRAID_DTYPE_FLOAT, 0, 0, rows, wd, g.din, 1.0, xf, g.din, 0, wf, wd, 0,
                                g.has_bias ? 1.0 : 0.0, qkv, wd, 0, 1))) {
        return st;
    }
    if (g.has_past) {
        const bd_tensor *ps = &k->in[4];
        size_t half = (size_t)(g.b * g.n * g.p * g.h) * bd_dtype_size(ps->dtype);
        if ((st = gather(k, kb, g.t, 0, ps->dtype, ps->data, 0, 0, NULL, 0, g.b, g.n, g.p, g.h)) ||
            (st = gather(k, vb, g.t, 0, ps->dtype, (const char *)ps->data + half, 0, 0, NULL, 0, g.b, g.n, g.p, g.hv)))
            return st;
    }
    if ((st = gather(k, kb, g.t, g.p, BRAID_DTYPE_FLOAT, qkv + d, 1, wd, NULL, 0, g.b, g.n, g.l, g.h)) ||
        (st = gather(k, vb, g.t, g.p, BRAID_DTYPE_FLOAT, qkv + 2 * d, 1, wd, NULL, 0, g.b, g.n, g.l, g.hv)))
        return st;
    if (k->n_out > 1 && k->out[1].data) {
        bd_tensor *pr = &k->out[1];
        if ((st = bd_la_convert(k, BRAID_DTYPE_FLOAT, kb, pr->dtype, pr->data, nk)) ||
            (st = bd_la_convert(k, BRAID_DTYPE_FLOAT, vb, pr->dtype, (char *)pr->data + (size_t)nk * bd_dtype_size(pr->dtype), nv)))
            return st;
    }
    s.q = qkv, s.k = kb, s.v = vb;
    return finish(k, &s, yb, sb);
}

/* ---- GroupQueryAttention --------------------------------------------------------------- */

/* Rotates pair c of row (b, h, i) of x (b, h, s, d) by position past_b + i; a
 * position outside the caches gives NaN (the CPU fails). */
static __global__ void gqa_rotate(float *__restrict__ x, int64_t b, int64_t h, int64_t s, int64_t d, int64_t half,
                                  const int32_t *__restrict__ sl, int has_past, int cdt, const void *__restrict__ cs,
                                  const void *__restrict__ sn, int64_t max_pos, int interleaved)
{
    BD_CU_LOOP(t, b * h * s * half)
    {
        int64_t c = t % half, i = (t / half) % s, bi = t / (half * s * h);
        int64_t pos = bd_gqa_past(sl, bi, s, has_past) + i, i1, i2;
        float *row = x + (t / half) * d;
        bd_gqa_pair(interleaved, half, c, &i1, &i2);
        double x1 = row[i1], x2 = row[i2];
        if (pos < 0 || pos >= max_pos) {
            row[i1] = row[i2] = NAN;
            continue;
        }
        double co = bd_la_ld64(cdt, cs, pos * half + c), si = bd_la_ld64(cdt, sn, pos * half + c);
        row[i1] = (float)bd_rope_value(1, x1, x2, co, si);
        row[i2] = (float)bd_rope_value(0, x1, x2, co, si);
    }
}

/* present K and V (b, hkv, t, d) in float: the past's rows, the new rows, zeros. */
static __global__ void gqa_present(float *__restrict__ kb, float *__restrict__ vb, const float *__restrict__ kn,
                                   const float *__restrict__ vn, int pdt, const void *__restrict__ pk,
                                   const void *__restrict__ pv, const int32_t *__restrict__ sl, int has_past, int64_t b,
                                   int64_t hkv, int64_t t, int64_t p, int64_t s, int64_t d)
{
    BD_CU_LOOP(i, b * hkv * t * d)
    {
        int64_t c = i % d, j = (i / d) % t, h = (i / (d * t)) % hkv, bi = i / (d * t * hkv);
        int which;
        int64_t at = bd_gqa_present_at(bi, h, j, c, hkv, p, s, d, bd_gqa_past(sl, bi, s, has_past), &which);
        kb[i] = which < 0 ? 0.0f : which ? kn[at] : (float)bd_la_ld64(pdt, pk, at);
        vb[i] = which < 0 ? 0.0f : which ? vn[at] : (float)bd_la_ld64(pdt, pv, at);
    }
}

static braid_status gqa(const bd_cuda_kernel *k)
{
    braid_status st;
    const bd_msattn_params *p = (const bd_msattn_params *)k->node->params;
    bd_msattn_geom g;
    bd_tensor hv[16];
    bd_cu_host_view(k, hv, k->n_in < 16 ? k->n_in : 16); /* total_sequence_length: its plan-time value */
    if ((st = bd_msattn_geometry(k->node, hv, &g, k->err))) return st;
    const bd_tensor *q = &k->in[0];
    const int32_t *sl = (const int32_t *)k->in[5].data;
    int64_t hd = g.n * g.h, kvd = g.hkv * g.h, w = g.packed ? hd + 2 * kvd : hd;
    bd_sdpa s = {};
    s.b = g.b, s.hq = g.n, s.hkv = g.hkv, s.sq = g.s, s.stot = g.t, s.d = s.dv = g.h, s.cdt = BRAID_DTYPE_FLOAT;
    s.softcap = p->softcap, s.kv_len = sl, s.kv_len_dt = BRAID_DTYPE_INT32, s.kv_len_add = 1;
    s.offset_from_len = g.has_past, s.causal = p->causal, s.left = p->local_window > 0 ? p->local_window - 1 : -1;
    s.right = -1, s.masked = s.causal_masked = -INFINITY;
    s.q_st[0] = g.n * g.s * g.h, s.q_st[1] = g.s * g.h, s.q_st[2] = g.h;
    s.k_st[0] = s.v_st[0] = g.hkv * g.t * g.h, s.k_st[1] = s.v_st[1] = g.t * g.h, s.k_st[2] = s.v_st[2] = g.h;
    s.y_st[0] = g.s * hd, s.y_st[1] = g.h, s.y_st[2] = hd;
    s.alpha = p->scale != 0.0f ? (double)p->scale : (double)(1.0f / sqrtf((float)g.h));
    int64_t nq = g.b * g.n * g.s * g.h, nn = g.b * g.hkv * g.s * g.h, nt = g.b * g.hkv * g.t * g.h, ny = bd_numel(&k->out[0]);
    size_t need = bd_la_align(bd_cuda_sdpa_scratch(&s));
    for (int64_t n : {nq, nn, nn, nt, nt, ny}) need += bd_la_align((size_t)(n > 0 ? n : 1) * sizeof(float));
    char *mem = NULL;
    if ((st = bd_la_scratch(k, need, &mem))) return st;
    carve c = {mem, 0};
    float *qb = c.take(nq), *kn = c.take(nn), *vn = c.take(nn), *kb = c.take(nt), *vb = c.take(nt), *yb = c.take(ny);
    void *sb = mem + c.off;
    size_t es = bd_dtype_size(q->dtype);
    if ((st = gather(k, qb, g.s, 0, q->dtype, q->data, 1, w, NULL, 0, g.b, g.n, g.s, g.h))) return st;
    if (g.packed) {
        if ((st = gather(k, kn, g.s, 0, q->dtype, (const char *)q->data + (size_t)hd * es, 1, w, NULL, 0, g.b, g.hkv, g.s, g.h)) ||
            (st = gather(k, vn, g.s, 0, q->dtype, (const char *)q->data + (size_t)(hd + kvd) * es, 1, w, NULL, 0, g.b, g.hkv, g.s, g.h)))
            return st;
    } else if ((st = gather(k, kn, g.s, 0, k->in[1].dtype, k->in[1].data, 1, kvd, NULL, 0, g.b, g.hkv, g.s, g.h)) ||
               (st = gather(k, vn, g.s, 0, k->in[2].dtype, k->in[2].data, 1, kvd, NULL, 0, g.b, g.hkv, g.s, g.h))) {
        return st;
    }
    if (p->do_rotary && g.rd > 0) {
        const bd_tensor *cs = &k->in[7];
        int64_t half = g.rd / 2;
        for (int which = 0; which < 2; which++) {
            int64_t heads = which ? g.hkv : g.n, n = g.b * heads * g.s * half;
            if (n <= 0) continue;
            gqa_rotate<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(which ? kn : qb, g.b, heads, g.s, g.h, half, sl,
                                                                     g.has_past, cs->dtype, cs->data, k->in[8].data,
                                                                     cs->dims[0], p->rotary_interleaved);
            BD_CU_CHECK_LAUNCH(k, "GroupQueryAttention's rotary embedding");
        }
    }
    if (nt > 0) {
        gqa_present<<<bd_cu_grid(nt), BD_CU_BLOCK, 0, k->stream>>>(kb, vb, kn, vn, g.has_past ? k->in[3].dtype : 0,
                                                                   g.has_past ? k->in[3].data : NULL,
                                                                   g.has_past ? k->in[4].data : NULL, sl, g.has_past,
                                                                   g.b, g.hkv, g.t, g.p, g.s, g.h);
        BD_CU_CHECK_LAUNCH(k, "GroupQueryAttention's present cache");
    }
    for (int o = 1; o <= 2 && o < k->n_out; o++)
        if (k->out[o].data && (st = bd_la_convert(k, BRAID_DTYPE_FLOAT, o == 1 ? kb : vb, k->out[o].dtype, k->out[o].data, nt)))
            return st;
    s.q = qb, s.k = kb, s.v = vb;
    return finish(k, &s, yb, sb);
}

/* ---- EmbedLayerNormalization -------------------------------------------------------- */

struct eln_args {
    int dt;
    int64_t b, s, d, nw, np, ng, pos_b;
    const int32_t *ids, *seg, *pos;
    const void *we, *pe, *se, *ga, *be;
    void *y, *sum;
    float eps;
};

/* One block per token; x is that token's float row in scratch. */
static __global__ void eln_rows(eln_args a, float *__restrict__ scratch)
{
    __shared__ double sh[32];
    for (int64_t t = blockIdx.x; t < a.b * a.s; t += gridDim.x) {
        int64_t bi = t / a.s, si = t % a.s;
        int32_t wi = a.ids[t], pi = a.pos ? a.pos[(a.pos_b == 1 ? 0 : bi) * a.s + si] : (int32_t)si;
        int32_t gi = a.seg ? a.seg[t] : 0;
        bool bad = wi < 0 || wi >= a.nw || pi < 0 || pi >= a.np || (a.seg && (gi < 0 || gi >= a.ng));
        float *x = scratch + t * a.d;
        double sum = 0.0;
        for (int64_t c = threadIdx.x; c < a.d; c += blockDim.x) {
            float v = NAN;
            if (!bad) {
                v = (float)bd_la_ld64(a.dt, a.we, (int64_t)wi * a.d + c) + (float)bd_la_ld64(a.dt, a.pe, (int64_t)pi * a.d + c);
                if (a.seg) v += (float)bd_la_ld64(a.dt, a.se, (int64_t)gi * a.d + c);
            }
            x[c] = v;
            if (a.sum) bd_la_st(a.dt, a.sum, t * a.d + c, v);
            sum += v;
        }
        double mean = bd_cu_block_sum(sum, sh) / (double)(a.d ? a.d : 1), var = 0.0;
        for (int64_t c = threadIdx.x; c < a.d; c += blockDim.x) var += ((double)x[c] - mean) * ((double)x[c] - mean);
        var = bd_cu_block_sum(var, sh) / (double)(a.d ? a.d : 1);
        double inv = 1.0 / sqrt(var + (double)a.eps);
        for (int64_t c = threadIdx.x; c < a.d; c += blockDim.x)
            bd_la_st(a.dt, a.y, t * a.d + c,
                     (float)(((double)x[c] - mean) * inv * bd_la_ld64(a.dt, a.ga, c) + bd_la_ld64(a.dt, a.be, c)));
        __syncthreads();
    }
}

/* mask_index[b] = the count of 1s of mask row b (0 without a mask). */
static __global__ void eln_mask(const int32_t *__restrict__ mask, int32_t *__restrict__ out, int64_t b, int64_t s)
{
    BD_CU_LOOP(i, b)
    {
        int32_t c = 0;
        for (int64_t j = 0; mask && j < s; j++) c += mask[i * s + j] == 1;
        out[i] = c;
    }
}

static braid_status embed_layer_norm(const bd_cuda_kernel *k)
{
    const bd_msattn_params *p = (const bd_msattn_params *)k->node->params;
    const bd_tensor *ids = &k->in[0], *we = &k->in[2], *pe = &k->in[3];
    eln_args a = {};
    a.dt = we->dtype, a.b = ids->dims[0], a.s = ids->dims[1], a.d = we->dims[1], a.nw = we->dims[0], a.np = pe->dims[0];
    a.ids = (const int32_t *)ids->data, a.we = we->data, a.pe = pe->data, a.ga = k->in[5].data, a.be = k->in[6].data;
    if (k->n_in > 1 && k->in[1].data) a.seg = (const int32_t *)k->in[1].data, a.se = k->in[4].data, a.ng = k->in[4].dims[0];
    if (k->n_in > 8 && k->in[8].data) a.pos = (const int32_t *)k->in[8].data, a.pos_b = k->in[8].dims[0];
    a.y = k->out[0].data, a.eps = p->epsilon;
    if (k->n_out > 2) a.sum = k->out[2].data;
    int64_t tokens = a.b * a.s;
    if (tokens > 0) {
        char *mem = NULL;
        braid_status st = bd_la_scratch(k, (size_t)(tokens * a.d > 0 ? tokens * a.d : 1) * sizeof(float), &mem);
        if (st) return st;
        unsigned grid = (unsigned)(tokens < 65535 ? tokens : 65535);
        eln_rows<<<grid, a.d >= 512 ? 256 : 64, 0, k->stream>>>(a, (float *)mem);
        BD_CU_CHECK_LAUNCH(k, "the embedding layer normalization");
    }
    if (k->n_out > 1 && k->out[1].data && a.b > 0) {
        eln_mask<<<bd_cu_grid(a.b), BD_CU_BLOCK, 0, k->stream>>>(
            k->n_in > 7 ? (const int32_t *)k->in[7].data : NULL, (int32_t *)k->out[1].data, a.b, a.s);
        BD_CU_CHECK_LAUNCH(k, "the mask index");
    }
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_msattn(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_MS_MultiHeadAttention: return mha(k);
    case BD_OP_MS_Attention: return attention_ms(k);
    case BD_OP_MS_EmbedLayerNormalization: return embed_layer_norm(k);
    case BD_OP_MS_GroupQueryAttention: return gqa(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the msattn family", k->node->op_type);
    }
}

extern "C" void bd_cuda_msattn_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_la_scratch_free(cache);
}
