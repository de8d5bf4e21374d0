/* linattn.c: CPU kernels of the linattn family. LinearAttention runs the
 * recurrence token by token in float32 (as onnx's reference does, whatever
 * the dtype), one key/value head's (d_k x d_v) state per work item: decay,
 * delta correction, the rank-1 write, then the reads of the query heads that
 * share it. CausalConvWithState is an element loop over the shared
 * formulas of src/ops/linattn.h, split across threads. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "la.h"

#include <math.h>

#include "ops/attention.h"
#include "ops/linattn.h"
#include "vmath.h"

/* ---- LinearAttention ----------------------------------------------------------------- */

typedef struct la_job {
    const bd_linattn_params *p;
    bd_linattn_geom g;
    const bd_tensor *q, *k, *v, *past, *decay, *beta;
    bd_tensor *y, *present;
    int fail;
} la_job;

static void la_heads(void *vj, int64_t begin, int64_t end)
{
    la_job *j = vj;
    const bd_linattn_geom *g = &j->g;
    int64_t dk = g->dk, dv = g->dv, grp = g->hq / g->hkv;
    int gating = j->p->rule == BD_LA_GATED || j->p->rule == BD_LA_GATED_DELTA;
    int delta = j->p->rule == BD_LA_DELTA || j->p->rule == BD_LA_GATED_DELTA;
    float *S = bd_malloc((size_t)(dk * dv + 3 * (dk + dv) + 1) * sizeof *S);
    if (!S) {
        j->fail = 1;
        return;
    }
    float *kt = S + dk * dv, *vt = kt + dk, *qt = vt + dv, *o = qt + dk;
    (void)o;
    for (int64_t it = begin; it < end; it++) {
        int64_t b = it / g->hkv, h = it % g->hkv;
        if (j->past) bd_la_to_f32(j->past->dtype, (const char *)j->past->data + (size_t)(it * dk * dv) * bd_dtype_size(j->past->dtype), S, dk * dv);
        else memset(S, 0, (size_t)(dk * dv) * sizeof *S);
        for (int64_t t = 0; t < g->t; t++) {
            int64_t bt = b * g->t + t;
            for (int64_t d = 0; d < dk; d++) kt[d] = (float)bd_attn_load(j->k->dtype, j->k->data, (bt * g->hkv + h) * dk + d);
            for (int64_t m = 0; m < dv; m++) vt[m] = (float)bd_attn_load(j->v->dtype, j->v->data, (bt * g->hkv + h) * dv + m);
            if (gating)
                for (int64_t d = 0; d < dk; d++) {
                    int64_t di = g->decay_per_key ? (bt * g->hkv + h) * dk + d : bt * g->hkv + h;
                    float f = expf((float)bd_attn_load(j->decay->dtype, j->decay->data, di));
                    for (int64_t m = 0; m < dv; m++) S[d * dv + m] *= f;
                }
            if (delta) {
                float bv = (float)bd_attn_load(j->beta->dtype, j->beta->data, g->beta_shared ? bt : bt * g->hkv + h);
                for (int64_t m = 0; m < dv; m++) {
                    float r = 0;
                    for (int64_t d = 0; d < dk; d++) r += S[d * dv + m] * kt[d];
                    vt[m] = bv * (vt[m] - r);
                }
            }
            for (int64_t d = 0; d < dk; d++)
                for (int64_t m = 0; m < dv; m++) S[d * dv + m] += kt[d] * vt[m];
            for (int64_t r = 0; r < grp; r++) {
                int64_t hq = h * grp + r;
                for (int64_t d = 0; d < dk; d++) qt[d] = (float)bd_attn_load(j->q->dtype, j->q->data, (bt * g->hq + hq) * dk + d);
                for (int64_t m = 0; m < dv; m++) {
                    float a = 0;
                    for (int64_t d = 0; d < dk; d++) a += qt[d] * S[d * dv + m];
                    a *= g->scale;
                    int64_t oi = (bt * g->hq + hq) * dv + m;
                    bd_la_from_f32(j->y->dtype, &a, (char *)j->y->data + (size_t)oi * bd_dtype_size(j->y->dtype), 1);
                }
            }
        }
        if (j->present && j->present->data)
            bd_la_from_f32(j->present->dtype, S, (char *)j->present->data + (size_t)(it * dk * dv) * bd_dtype_size(j->present->dtype), dk * dv);
    }
    bd_free(S);
}

static braid_status linear_attention(const bd_kernel *k)
{
    la_job j = {.p = k->node->params, .q = &k->in[0], .k = &k->in[1], .v = &k->in[2], .y = &k->out[0]};
    braid_status st = bd_linattn_geometry(k->node, k->in, &j.g, k->err);
    if (st) return st;
    j.past = k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL;
    j.decay = k->n_in > 4 && k->in[4].data ? &k->in[4] : NULL;
    j.beta = k->n_in > 5 && k->in[5].data ? &k->in[5] : NULL;
    j.present = k->n_out > 1 ? &k->out[1] : NULL;
    int64_t work = j.g.t * j.g.dk * j.g.dv * (3 + j.g.hq / j.g.hkv);
    bd_parallel_for(k->threads, j.g.b * j.g.hkv, work >= (1 << 16) ? 1 : (1 << 16) / (work + 1) + 1, la_heads, &j);
    if (j.fail) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}

/* ---- CausalConvWithState ------------------------------------------------------- */

typedef struct elem_job {
    const bd_kernel *k;
} elem_job;

/* Rows (batch, channel) [begin, end) of CausalConvWithState. */
static void conv_rows(void *vj, int64_t begin, int64_t end)
{
    const bd_kernel *k = ((elem_job *)vj)->k;
    const bd_linattn_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *w = &k->in[1];
    const bd_tensor *bias = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    const bd_tensor *past = k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL;
    const bd_tensor *y = &k->out[0], *ps = k->n_out > 1 ? &k->out[1] : NULL;
    int dt = x->dtype;
    size_t es = bd_dtype_size(dt);
    int64_t c = x->dims[1], len = x->dims[2], kk = w->dims[2];
    for (int64_t r = begin; r < end; r++) {
        int64_t ch = r % c;
        for (int64_t t = 0; t < len; t++) {
            float acc = bias ? (float)bd_attn_load(dt, bias->data, ch) : 0.0f;
            for (int64_t q = 0; q < kk; q++) {
                int which;
                int64_t at = bd_ccws_padded(r, t + q, len, kk, past != NULL, &which);
                float v = which < 0 ? 0.0f : (float)bd_attn_load(dt, which ? x->data : past->data, at);
                acc += (float)bd_attn_load(dt, w->data, ch * kk + q) * v;
            }
            acc = bd_linattn_round(dt, acc);
            if (p->silu) acc = bd_linattn_round(dt, bd_silu(acc));
            bd_la_from_f32(dt, &acc, (char *)y->data + (size_t)(r * len + t) * es, 1);
        }
        if (ps && ps->data)
            for (int64_t q = 0; q < kk - 1; q++) {
                int which;
                int64_t at = bd_ccws_padded(r, len + q, len, kk, past != NULL, &which);
                float v = which < 0 ? 0.0f : (float)bd_attn_load(dt, which ? x->data : past->data, at);
                bd_la_from_f32(dt, &v, (char *)ps->data + (size_t)(r * (kk - 1) + q) * es, 1);
            }
    }
}

braid_status bd_cpu_linattn(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_LinearAttention: return linear_attention(k);
    case BD_OP_CausalConvWithState: {
        elem_job j = {k};
        int64_t rows = k->in[0].dims[0] * k->in[0].dims[1], per = k->in[0].dims[2] * k->in[1].dims[2] + 1;
        bd_parallel_for(k->threads, rows, per >= (1 << 15) ? 1 : (1 << 15) / per + 1, conv_rows, &j);
        return BRAID_OK;
    }
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the linattn family", k->node->op_type);
    }
}
