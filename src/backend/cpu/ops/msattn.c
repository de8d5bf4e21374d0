/* msattn.c: CPU kernels of the msattn family (com.microsoft). The two
 * attentions gather their operands in float (Q plus its bias; K and V with
 * the past first, in (batch, heads, total, size)), write the present
 * outputs from those, and run the attention family's bd_cpu_sdpa with
 * onnxruntime's masking values; Attention first projects its input with one
 * BLAS GEMM against the merged weights. EmbedLayerNormalization sums the
 * three embeddings of each token and normalizes the row (statistics in
 * double). float16 and bfloat16 compute in float and round once. */
#include "la.h"

#include <math.h>

#include "ops/msattn.h"
#include "ops/rope.h"

/* dst (b, h, total, d) rows [at, at + rows) in float from src of dtype dt, read
 * as (b, rows, h * d) at row stride `row` (3-D) or (b, h, rows, d) (4-D),
 * plus bias (h * d floats) when set. */
static void gather(float *dst, int64_t total, int64_t at, int dt, const void *src, int rank3, int64_t row,
                   const float *bias, int64_t b, int64_t h, int64_t rows, int64_t d)
{
    size_t es = bd_dtype_size(dt);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hi = 0; hi < h; hi++)
            for (int64_t r = 0; r < rows; r++) {
                int64_t so = rank3 ? (bi * rows + r) * row + hi * d : ((bi * h + hi) * rows + r) * d;
                float *dp = dst + ((bi * h + hi) * total + at + r) * d;
                bd_la_to_f32(dt, (const char *)src + (size_t)so * es, dp, d);
                if (bias)
                    for (int64_t c = 0; c < d; c++) dp[c] += bias[hi * d + c];
            }
}

/* Runs s (float operands set by the caller) into y: through a float buffer
 * when y is float16/bfloat16. */
static braid_status run_sdpa(const bd_kernel *k, bd_sdpa *s, bd_tensor *y)
{
    braid_status st = BRAID_OK;
    int64_t ny = bd_numel(y);
    float *yb = NULL;
    if (y->dtype != BRAID_DTYPE_FLOAT) {
        yb = bd_malloc((size_t)(ny > 0 ? ny : 1) * sizeof *yb);
        BD_CHECK_ALLOC(k->err, yb);
    }
    s->y = yb ? (void *)yb : y->data;
    BD_TRY(bd_cpu_sdpa(s, k->threads, k->err));
    if (yb) bd_la_from_f32(y->dtype, yb, y->data, ny);
fail:
    bd_free(yb);
    return st;
}

static braid_status mha(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_msattn_params *p = k->node->params;
    bd_msattn_geom g;
    float *bias = NULL, *qb = NULL, *kb = NULL, *vb = NULL;
    BD_TRY(bd_msattn_geometry(k->node, k->in, &g, k->err));
    int64_t d = g.n * g.h, dv = g.n * g.hv;
    const bd_tensor *q = &k->in[0], *kt = &k->in[1], *vt = &k->in[2];
    qb = bd_malloc((size_t)(g.b * g.s * d + 1) * sizeof *qb);
    kb = bd_malloc((size_t)(g.b * g.n * g.t * g.h + 1) * sizeof *kb);
    vb = bd_malloc((size_t)(g.b * g.n * g.t * g.hv + 1) * sizeof *vb);
    BD_CHECK_ALLOC(k->err, qb && kb && vb);
    if (g.has_bias) {
        bias = bd_malloc((size_t)(2 * d + dv) * sizeof *bias);
        BD_CHECK_ALLOC(k->err, bias);
        bd_la_to_f32(k->in[3].dtype, k->in[3].data, bias, 2 * d + dv);
    }
    gather(qb, g.s, 0, q->dtype, q->data, 1, d, bias, g.b, g.n, g.s, g.h); /* (b, n, s, h) */
    if (g.has_past) {
        gather(kb, g.t, 0, k->in[6].dtype, k->in[6].data, 0, 0, NULL, g.b, g.n, g.p, g.h);
        gather(vb, g.t, 0, k->in[7].dtype, k->in[7].data, 0, 0, NULL, g.b, g.n, g.p, g.hv);
    }
    gather(kb, g.t, g.p, kt->dtype, kt->data, !g.kv_bnsh, d, bias ? bias + d : NULL, g.b, g.n, g.l, g.h);
    gather(vb, g.t, g.p, vt->dtype, vt->data, !g.kv_bnsh, dv, bias ? bias + 2 * d : NULL, g.b, g.n, g.l, g.hv);
    for (int o = 1; o <= 2 && o < k->n_out; o++)
        if (k->out[o].data) bd_la_from_f32(k->out[o].dtype, o == 1 ? kb : vb, k->out[o].data, bd_numel(&k->out[o]));
    bd_sdpa s = {0};
    bd_msattn_sdpa(p, &g, g.h, k->n_in > 4 ? &k->in[4] : NULL, k->n_in > 5 ? &k->in[5] : NULL, &s);
    s.q_st[0] = g.n * g.s * g.h, s.q_st[1] = g.s * g.h, s.q_st[2] = g.h; /* Q gathered as (b, n, s, h) */
    s.q = qb, s.k = kb, s.v = vb;
    bd_tensor *qk = k->n_out > 3 && k->out[3].data ? &k->out[3] : NULL;
    if (qk) {
        s.qk = qk->data, s.qk_dt = qk->dtype, s.qk_mode = 2;
    }
    BD_TRY(run_sdpa(k, &s, &k->out[0]));
fail:
    bd_free(bias);
    bd_free(qb);
    bd_free(kb);
    bd_free(vb);
    return st;
}

static braid_status attention_ms(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_msattn_params *p = k->node->params;
    bd_msattn_geom g;
    float *xf = NULL, *wf = NULL, *qkv = NULL, *kb = NULL, *vb = NULL;
    BD_TRY(bd_msattn_geometry(k->node, k->in, &g, k->err));
    const bd_tensor *x = &k->in[0], *w = &k->in[1];
    int64_t d = g.n * g.h, dv = g.n * g.hv, wd = 2 * d + dv, rows = g.b * g.s;
    xf = bd_malloc((size_t)(rows * g.din + 1) * sizeof *xf);
    wf = bd_malloc((size_t)(g.din * wd + 1) * sizeof *wf);
    qkv = bd_calloc((size_t)(rows * wd + 1), sizeof *qkv);
    kb = bd_malloc((size_t)(g.b * g.n * g.t * g.h + 1) * sizeof *kb);
    vb = bd_malloc((size_t)(g.b * g.n * g.t * g.hv + 1) * sizeof *vb);
    BD_CHECK_ALLOC(k->err, xf && wf && qkv && kb && vb);
    bd_la_to_f32(x->dtype, x->data, xf, rows * g.din);
    bd_la_to_f32(w->dtype, w->data, wf, g.din * wd);
    if (g.has_bias) /* QKV starts as the bias on every row; the GEMM adds to it */
        for (int64_t r = 0; r < rows; r++) bd_la_to_f32(k->in[2].dtype, k->in[2].data, qkv + r * wd, wd);
    bd_la_batch proj = {.count = 1, .m = rows, .n = wd, .k = g.din, .alpha = 1.0, .beta = g.has_bias ? 1.0 : 0.0,
                        .a = xf, .b = wf, .c = qkv, .lda = g.din, .ldb = wd, .ldc = wd};
    BD_TRY(bd_la_batch_gemm(k->threads, &proj, k->err));
    if (g.has_past) {
        const bd_tensor *ps = &k->in[4];
        size_t half = (size_t)(g.b * g.n * g.p * g.h) * bd_dtype_size(ps->dtype);
        gather(kb, g.t, 0, ps->dtype, ps->data, 0, 0, NULL, g.b, g.n, g.p, g.h);
        gather(vb, g.t, 0, ps->dtype, (const char *)ps->data + half, 0, 0, NULL, g.b, g.n, g.p, g.hv);
    }
    gather(kb, g.t, g.p, BRAID_DTYPE_FLOAT, qkv + d, 1, wd, NULL, g.b, g.n, g.l, g.h);
    gather(vb, g.t, g.p, BRAID_DTYPE_FLOAT, qkv + 2 * d, 1, wd, NULL, g.b, g.n, g.l, g.hv);
    if (k->n_out > 1 && k->out[1].data) { /* present (2, b, n, t, h): K then V */
        bd_tensor *pr = &k->out[1];
        int64_t half = g.b * g.n * g.t * g.h;
        bd_la_from_f32(pr->dtype, kb, pr->data, half);
        bd_la_from_f32(pr->dtype, vb, (char *)pr->data + (size_t)half * bd_dtype_size(pr->dtype), half);
    }
    bd_sdpa s = {0};
    bd_msattn_sdpa(p, &g, wd, k->n_in > 3 ? &k->in[3] : NULL, k->n_in > 5 ? &k->in[5] : NULL, &s);
    s.q = qkv, s.k = kb, s.v = vb;
    BD_TRY(run_sdpa(k, &s, &k->out[0]));
fail:
    bd_free(xf);
    bd_free(wf);
    bd_free(qkv);
    bd_free(kb);
    bd_free(vb);
    return st;
}

/* ---- GroupQueryAttention --------------------------------------------------------------- */

/* Rotates the first rd dims of each (b, h, i) row of x (b, h, s, d) by
 * position past_b + i of the caches (max_pos rows); fails past the caches. */
static braid_status rotate(const bd_kernel *k, float *x, int64_t b, int64_t h, int64_t s, int64_t d, int64_t rd,
                           const int64_t *past, int interleaved)
{
    const bd_tensor *cs = &k->in[7], *sn = &k->in[8];
    int64_t half = rd / 2, max_pos = cs->dims[0];
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hi = 0; hi < h; hi++)
            for (int64_t i = 0; i < s; i++) {
                int64_t pos = past[bi] + i;
                if (pos < 0 || pos >= max_pos)
                    return BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "position %lld is outside the rotary caches' %lld rows",
                                   (long long)pos, (long long)max_pos);
                float *row = x + ((bi * h + hi) * s + i) * d;
                for (int64_t cc = 0; cc < half; cc++) {
                    int64_t i1, i2;
                    bd_gqa_pair(interleaved, half, cc, &i1, &i2);
                    double co = bd_attn_load(cs->dtype, cs->data, pos * half + cc), si = bd_attn_load(sn->dtype, sn->data, pos * half + cc);
                    double x1 = row[i1], x2 = row[i2];
                    row[i1] = (float)bd_rope_value(1, x1, x2, co, si);
                    row[i2] = (float)bd_rope_value(0, x1, x2, co, si);
                }
            }
    return BRAID_OK;
}

static braid_status gqa(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_msattn_params *p = k->node->params;
    bd_msattn_geom g;
    float *qb = NULL, *kn = NULL, *vn = NULL, *kb = NULL, *vb = NULL;
    int64_t *past = NULL;
    BD_TRY(bd_msattn_geometry(k->node, k->in, &g, k->err));
    const int32_t *sl = k->in[5].data;
    past = bd_malloc((size_t)(g.b + 1) * sizeof *past);
    BD_CHECK_ALLOC(k->err, past);
    for (int64_t b = 0; b < g.b; b++) {
        past[b] = bd_gqa_past(sl, b, g.s, g.has_past);
        if (past[b] < 0 || past[b] + g.s > g.t || (int64_t)sl[b] + 1 > g.t || sl[b] < 0) {
            st = BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "seqlens_k[%lld] = %d does not fit %lld new tokens in a present "
                         "of %lld", (long long)b, sl[b], (long long)g.s, (long long)g.t);
            goto fail;
        }
    }
    int64_t hd = g.n * g.h, kvd = g.hkv * g.h, w = g.packed ? hd + 2 * kvd : hd;
    int64_t nq = g.b * g.n * g.s * g.h, nn = g.b * g.hkv * g.s * g.h, nt = g.b * g.hkv * g.t * g.h;
    qb = bd_malloc((size_t)(nq + 1) * sizeof *qb), kn = bd_malloc((size_t)(nn + 1) * sizeof *kn);
    vn = bd_malloc((size_t)(nn + 1) * sizeof *vn), kb = bd_malloc((size_t)(nt + 1) * sizeof *kb);
    vb = bd_malloc((size_t)(nt + 1) * sizeof *vb);
    BD_CHECK_ALLOC(k->err, qb && kn && vn && kb && vb);
    const bd_tensor *q = &k->in[0];
    size_t es = bd_dtype_size(q->dtype);
    gather(qb, g.s, 0, q->dtype, q->data, 1, w, NULL, g.b, g.n, g.s, g.h);
    if (g.packed) {
        gather(kn, g.s, 0, q->dtype, (const char *)q->data + (size_t)hd * es, 1, w, NULL, g.b, g.hkv, g.s, g.h);
        gather(vn, g.s, 0, q->dtype, (const char *)q->data + (size_t)(hd + kvd) * es, 1, w, NULL, g.b, g.hkv, g.s, g.h);
    } else {
        gather(kn, g.s, 0, k->in[1].dtype, k->in[1].data, 1, kvd, NULL, g.b, g.hkv, g.s, g.h);
        gather(vn, g.s, 0, k->in[2].dtype, k->in[2].data, 1, kvd, NULL, g.b, g.hkv, g.s, g.h);
    }
    if (p->do_rotary) {
        BD_TRY(rotate(k, qb, g.b, g.n, g.s, g.h, g.rd, past, p->rotary_interleaved));
        BD_TRY(rotate(k, kn, g.b, g.hkv, g.s, g.h, g.rd, past, p->rotary_interleaved));
    }
    for (int64_t i = 0; i < nt; i++) { /* present: the past's rows, the new rows, zeros */
        int64_t c = i % g.h, j = (i / g.h) % g.t, h = (i / (g.h * g.t)) % g.hkv, b = i / (g.h * g.t * g.hkv);
        int which;
        int64_t at = bd_gqa_present_at(b, h, j, c, g.hkv, g.p, g.s, g.h, past[b], &which);
        kb[i] = which < 0 ? 0.0f : which ? kn[at] : (float)bd_attn_load(k->in[3].dtype, k->in[3].data, at);
        vb[i] = which < 0 ? 0.0f : which ? vn[at] : (float)bd_attn_load(k->in[4].dtype, k->in[4].data, at);
    }
    for (int o = 1; o <= 2 && o < k->n_out; o++)
        if (k->out[o].data) bd_la_from_f32(k->out[o].dtype, o == 1 ? kb : vb, k->out[o].data, nt);
    bd_sdpa s = {.b = g.b, .hq = g.n, .hkv = g.hkv, .sq = g.s, .stot = g.t, .d = g.h, .dv = g.h,
                 .cdt = BRAID_DTYPE_FLOAT, .q = qb, .k = kb, .v = vb, .softcap = p->softcap, .kv_len = sl,
                 .kv_len_dt = BRAID_DTYPE_INT32, .kv_len_add = 1, .offset_from_len = g.has_past,
                 .causal = p->causal, .left = p->local_window > 0 ? p->local_window - 1 : -1, .right = -1,
                 .masked = -INFINITY, .causal_masked = -INFINITY};
    s.q_st[0] = g.n * g.s * g.h, s.q_st[1] = g.s * g.h, s.q_st[2] = g.h;
    s.k_st[0] = s.v_st[0] = g.hkv * g.t * g.h, s.k_st[1] = s.v_st[1] = g.t * g.h, s.k_st[2] = s.v_st[2] = g.h;
    s.y_st[0] = g.s * hd, s.y_st[1] = g.h, s.y_st[2] = hd;
    s.alpha = p->scale != 0.0f ? (double)p->scale : (double)(1.0f / sqrtf((float)g.h));
    BD_TRY(run_sdpa(k, &s, &k->out[0]));
fail:
    bd_free(past);
    bd_free(qb);
    bd_free(kn);
    bd_free(vn);
    bd_free(kb);
    bd_free(vb);
    return st;
}

/* ---- EmbedLayerNormalization -------------------------------------------------------- */

static braid_status embed_layer_norm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_msattn_params *p = k->node->params;
    const bd_tensor *ids = &k->in[0], *we = &k->in[2], *pe = &k->in[3];
    const bd_tensor *seg = k->n_in > 1 && k->in[1].data ? &k->in[1] : NULL, *se = seg ? &k->in[4] : NULL;
    const bd_tensor *mask = k->n_in > 7 && k->in[7].data ? &k->in[7] : NULL;
    const bd_tensor *pos = k->n_in > 8 && k->in[8].data ? &k->in[8] : NULL;
    int64_t b = ids->dims[0], s = ids->dims[1], d = we->dims[1];
    int dt = we->dtype;
    size_t es = bd_dtype_size(dt);
    float *x = bd_malloc((size_t)(d + 1) * sizeof *x), *ga = bd_malloc((size_t)(d + 1) * sizeof *ga);
    float *be = bd_malloc((size_t)(d + 1) * sizeof *be), *row = bd_malloc((size_t)(d + 1) * sizeof *row);
    BD_CHECK_ALLOC(k->err, x && ga && be && row);
    bd_la_to_f32(dt, k->in[5].data, ga, d);
    bd_la_to_f32(dt, k->in[6].data, be, d);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t si = 0; si < s; si++) {
            int64_t t = bi * s + si;
            int32_t wi = ((const int32_t *)ids->data)[t];
            int32_t pi = pos ? ((const int32_t *)pos->data)[(pos->dims[0] == 1 ? 0 : bi) * s + si] : (int32_t)si;
            int32_t gi = seg ? ((const int32_t *)seg->data)[t] : 0;
            if (wi < 0 || wi >= we->dims[0] || pi < 0 || pi >= pe->dims[0] || (seg && (gi < 0 || gi >= se->dims[0]))) {
                st = BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "token (%lld, %lld): word id %d, position %d or segment %d "
                             "is outside its embedding table", (long long)bi, (long long)si, wi, pi, gi);
                goto fail;
            }
            bd_la_to_f32(dt, (const char *)we->data + (size_t)(wi * d) * es, x, d);
            bd_la_to_f32(dt, (const char *)pe->data + (size_t)(pi * d) * es, row, d);
            for (int64_t c = 0; c < d; c++) x[c] += row[c];
            if (seg) {
                bd_la_to_f32(dt, (const char *)se->data + (size_t)(gi * d) * es, row, d);
                for (int64_t c = 0; c < d; c++) x[c] += row[c];
            }
            if (k->n_out > 2 && k->out[2].data) bd_la_from_f32(dt, x, (char *)k->out[2].data + (size_t)(t * d) * es, d);
            double mean = 0, var = 0;
            for (int64_t c = 0; c < d; c++) mean += x[c];
            mean /= (double)(d ? d : 1);
            for (int64_t c = 0; c < d; c++) var += ((double)x[c] - mean) * ((double)x[c] - mean);
            var /= (double)(d ? d : 1);
            double inv = 1.0 / sqrt(var + (double)p->epsilon);
            for (int64_t c = 0; c < d; c++) row[c] = (float)(((double)x[c] - mean) * inv * ga[c] + be[c]);
            bd_la_from_f32(dt, row, (char *)k->out[0].data + (size_t)(t * d) * es, d);
        }
    if (k->n_out > 1 && k->out[1].data) /* the count of 1s of each mask row (0 without a mask) */
        for (int64_t bi = 0; bi < b; bi++) {
            int32_t c = 0;
            for (int64_t si = 0; mask && si < s; si++) c += ((const int32_t *)mask->data)[bi * s + si] == 1;
            ((int32_t *)k->out[1].data)[bi] = c;
        }
fail:
    bd_free(x);
    bd_free(ga);
    bd_free(be);
    bd_free(row);
    return st;
}

braid_status bd_cpu_msattn(const bd_kernel *k)
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
