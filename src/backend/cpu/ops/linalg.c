/* linalg.c: CPU kernels of the linalg family. Einsum runs the program that
 * src/ops/linalg.c builds (strided gathers, sums over trailing dims, batched
 * GEMMs through BLAS) in float (float16/bfloat16/float, rounded once at the
 * end), double, or wrapping 64-bit integers (every integer dtype: the low
 * bits of the dtype's own arithmetic). Det factors each matrix by LU with
 * partial pivoting in double. FusedMatMul materializes its transposed views
 * and multiplies with numpy's broadcasting; FusedGemm is Gemm with
 * onnxruntime's fused activation applied to each output element. */
#include "la.h"

#include <math.h>

#include "ops/gemm.h"
#include "ops/linalg.h"

enum { W_F32 = 1, W_F64 = 2, W_INT = 3 };

static int work_type(int dt)
{
    return dt == BRAID_DTYPE_DOUBLE ? W_F64 : bd_la_is_float(dt) ? W_F32 : W_INT;
}

static size_t w_size(int w) { return w == W_F32 ? 4 : 8; }

/* n elements of dtype dt into the work type. */
static void to_work(int w, int dt, const void *src, void *dst, int64_t n)
{
    if (w == W_F32) bd_la_to_f32(dt, src, dst, n);
    else if (w == W_F64) bd_la_to_f64(dt, src, dst, n);
    else
        for (int64_t i = 0; i < n; i++) {
            uint64_t v;
            switch (dt) {
            case BRAID_DTYPE_INT8: v = (uint64_t)(int64_t)((const int8_t *)src)[i]; break;
            case BRAID_DTYPE_INT16: v = (uint64_t)(int64_t)((const int16_t *)src)[i]; break;
            case BRAID_DTYPE_INT32: v = (uint64_t)(int64_t)((const int32_t *)src)[i]; break;
            case BRAID_DTYPE_UINT8: v = ((const uint8_t *)src)[i]; break;
            case BRAID_DTYPE_UINT16: v = ((const uint16_t *)src)[i]; break;
            case BRAID_DTYPE_UINT32: v = ((const uint32_t *)src)[i]; break;
            default: v = ((const uint64_t *)src)[i]; break;
            }
            ((uint64_t *)dst)[i] = v;
        }
}

static void from_work(int w, int dt, const void *src, void *dst, int64_t n)
{
    if (w == W_F32) bd_la_from_f32(dt, src, dst, n);
    else if (w == W_F64) bd_la_from_f64(dt, src, dst, n);
    else {
        size_t es = bd_dtype_size(dt);
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = ((const uint64_t *)src)[i];
            memcpy((char *)dst + (size_t)i * es, &v, es); /* the low bytes (little-endian) */
        }
    }
}

/* ---- Einsum ------------------------------------------------------------------------------- */

/* dst (contiguous over dims) = src at strides, es-byte elements. */
static void gather(const bd_es_step *s, const char *src, char *dst, size_t es)
{
    int r = s->rank;
    int64_t total = 1, idx[BD_ES_MAXD] = {0};
    for (int i = 0; i < r; i++) total *= s->dims[i];
    if (total == 0) return;
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t inner = s->dims[r - 1], ist = s->st[r - 1], off = 0;
    for (int64_t o = 0; o < total; o += inner) {
        const char *sp = src + (size_t)off * es;
        if (es == 4)
            for (int64_t j = 0; j < inner; j++) ((uint32_t *)dst)[j] = ((const uint32_t *)sp)[j * ist];
        else
            for (int64_t j = 0; j < inner; j++) ((uint64_t *)dst)[j] = ((const uint64_t *)sp)[j * ist];
        dst += (size_t)inner * es;
        for (int d = r - 2; d >= 0; d--) { /* next index of the outer dims */
            off += s->st[d];
            if (++idx[d] < s->dims[d]) break;
            off -= s->st[d] * s->dims[d];
            idx[d] = 0;
        }
    }
}

static void reduce(int w, const bd_es_step *s, const void *src, void *dst)
{
    for (int64_t o = 0; o < s->outer; o++) {
        if (w == W_F32) {
            const float *x = (const float *)src + o * s->inner;
            float a = 0;
            for (int64_t i = 0; i < s->inner; i++) a += x[i];
            ((float *)dst)[o] = a;
        } else if (w == W_F64) {
            const double *x = (const double *)src + o * s->inner;
            double a = 0;
            for (int64_t i = 0; i < s->inner; i++) a += x[i];
            ((double *)dst)[o] = a;
        } else {
            const uint64_t *x = (const uint64_t *)src + o * s->inner;
            uint64_t a = 0;
            for (int64_t i = 0; i < s->inner; i++) a += x[i];
            ((uint64_t *)dst)[o] = a;
        }
    }
}

/* Wrapping integer batched product with the step's transposes. */
static void gemm_int(const bd_es_step *s, const uint64_t *a, const uint64_t *b, uint64_t *c)
{
    for (int64_t it = 0; it < s->count; it++) {
        const uint64_t *ai = a + it * s->m * s->k, *bi = b + it * s->k * s->n;
        uint64_t *ci = c + it * s->m * s->n;
        for (int64_t i = 0; i < s->m; i++)
            for (int64_t j = 0; j < s->n; j++) {
                uint64_t acc = 0;
                for (int64_t l = 0; l < s->k; l++)
                    acc += ai[s->ta ? l * s->m + i : i * s->k + l] * bi[s->tb ? j * s->k + l : l * s->n + j];
                ci[i * s->n + j] = acc;
            }
    }
}

static braid_status einsum(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_es_prog prog;
    void **bufs = NULL;
    char *owned = NULL;
    int dt = k->in[0].dtype, w = work_type(dt);
    size_t es = w_size(w);
    BD_TRY(bd_einsum_plan(k->node, k->in, NULL, &prog, k->err));
    bufs = bd_calloc((size_t)prog.n_bufs, sizeof *bufs);
    owned = bd_calloc((size_t)prog.n_bufs, 1);
    BD_CHECK_ALLOC(k->err, bufs && owned);
    for (int i = 0; i < prog.n_bufs; i++) {
        int same = i < k->n_in && ((w == W_F32 && dt == BRAID_DTYPE_FLOAT) || (w == W_F64) ||
                                   (w == W_INT && bd_dtype_size(dt) == 8));
        if (same) {
            bufs[i] = k->in[i].data;
            continue;
        }
        bufs[i] = bd_malloc((size_t)(prog.buf_n[i] > 0 ? prog.buf_n[i] : 1) * es);
        BD_CHECK_ALLOC(k->err, bufs[i]);
        owned[i] = 1;
        if (i < k->n_in) to_work(w, dt, k->in[i].data, bufs[i], prog.buf_n[i]);
    }
    for (int i = 0; i < prog.n_steps; i++) {
        const bd_es_step *s = &prog.steps[i];
        if (s->kind == BD_ES_GATHER) gather(s, bufs[s->src], bufs[s->dst], es);
        else if (s->kind == BD_ES_REDUCE) reduce(w, s, bufs[s->src], bufs[s->dst]);
        else if (w == W_INT) gemm_int(s, bufs[s->src], bufs[s->src2], bufs[s->dst]);
        else {
            bd_la_batch g = {.dbl = w == W_F64, .ta = s->ta, .tb = s->tb, .count = s->count, .m = s->m, .n = s->n,
                             .k = s->k, .alpha = 1.0, .beta = 0.0, .a = bufs[s->src], .b = bufs[s->src2],
                             .c = bufs[s->dst], .lda = s->ta ? s->m : s->k, .ldb = s->tb ? s->k : s->n, .ldc = s->n,
                             .sa = s->m * s->k, .sb = s->k * s->n, .sc = s->m * s->n};
            BD_TRY(bd_la_batch_gemm(k->threads, &g, k->err));
        }
    }
    from_work(w, dt, bufs[prog.out_buf], k->out[0].data, bd_numel(&k->out[0]));
fail:
    if (bufs)
        for (int i = 0; i < prog.n_bufs; i++)
            if (owned[i]) bd_free(bufs[i]);
    bd_free(bufs);
    bd_free(owned);
    bd_einsum_free(&prog);
    return st;
}

/* ---- Det ----------------------------------------------------------------------------------- */

typedef struct det_job {
    const bd_tensor *x;
    bd_tensor *y;
    int64_t n;
    int fail;
} det_job;

static void det_items(void *vj, int64_t begin, int64_t end)
{
    det_job *j = vj;
    int64_t nn = j->n * j->n;
    double *a = bd_malloc((size_t)(nn > 0 ? nn : 1) * sizeof *a);
    if (!a) {
        j->fail = 1;
        return;
    }
    size_t es = bd_dtype_size(j->x->dtype);
    for (int64_t i = begin; i < end; i++) {
        bd_la_to_f64(j->x->dtype, (const char *)j->x->data + (size_t)(i * nn) * es, a, nn);
        double d = bd_det_lu(a, j->n);
        bd_la_from_f64(j->y->dtype, &d, (char *)j->y->data + (size_t)i * es, 1);
    }
    bd_free(a);
}

static braid_status det(const bd_kernel *k)
{
    det_job j = {&k->in[0], &k->out[0], k->in[0].dims[k->in[0].rank - 1], 0};
    int64_t count = bd_numel(&k->out[0]);
    bd_parallel_for(k->threads, count, j.n >= 64 ? 1 : 4096 / (j.n * j.n + 1) + 1, det_items, &j);
    if (j.fail) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}

/* ---- FusedMatMul, FusedGemm --------------------------------------------------------------- */

/* A float-kind tensor viewed through `strides` (logical dims view->dims) as a
 * contiguous work buffer (float or double). */
static void *materialize(int w, const bd_tensor *t, const bd_tensor *view, const int64_t *strides, bd_err *e)
{
    int64_t n = bd_numel(t);
    size_t es = w_size(w);
    void *conv = bd_malloc((size_t)(n > 0 ? n : 1) * es), *out = bd_malloc((size_t)(n > 0 ? n : 1) * es);
    if (!conv || !out) {
        bd_free(conv);
        bd_free(out);
        BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    to_work(w, t->dtype, t->data, conv, n);
    bd_es_step s = {.kind = BD_ES_GATHER, .rank = view->rank};
    for (int i = 0; i < view->rank; i++) s.dims[i] = view->dims[i], s.st[i] = strides[i];
    gather(&s, conv, out, es);
    bd_free(conv);
    return out;
}

static braid_status fused_matmul(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_linalg_params *p = k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_tensor *y = &k->out[0], va, vb;
    int64_t sa[BD_MAX_RANK], sb[BD_MAX_RANK];
    int w = work_type(a->dtype);
    size_t es = w_size(w);
    void *wa = NULL, *wb = NULL, *wy = NULL;
    bd_fused_matmul_view(a, p->trans_batch_a, p->trans_a && a->rank > 1, &va, sa);
    bd_fused_matmul_view(b, p->trans_batch_b, p->trans_b && b->rank > 1, &vb, sb);
    bd_matmul_geom g;
    BD_TRY(bd_matmul_geometry(&va, &vb, &g, NULL, k->err));
    wa = materialize(w, a, &va, sa, k->err);
    wb = materialize(w, b, &vb, sb, k->err);
    int64_t ny = bd_numel(y), nb = bd_numel(&g.batch);
    wy = bd_malloc((size_t)(ny > 0 ? ny : 1) * es);
    if (!wa || !wb || !wy) {
        st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    int64_t ba[BD_MAX_RANK], bb[BD_MAX_RANK];
    bd_broadcast_strides(&g.a_batch, &g.batch, ba);
    bd_broadcast_strides(&g.b_batch, &g.batch, bb);
    for (int64_t i = 0; i < nb; i++) {
        int64_t rem = i, oa = 0, ob = 0;
        for (int d = g.batch.rank - 1; d >= 0; d--) {
            int64_t idx = rem % g.batch.dims[d];
            rem /= g.batch.dims[d];
            oa += idx * ba[d];
            ob += idx * bb[d];
        }
        bd_la_batch bt = {.dbl = w == W_F64, .count = 1, .m = g.m, .n = g.n, .k = g.k, .alpha = p->alpha,
                          .a = (char *)wa + (size_t)(oa * g.m * g.k) * es, .b = (char *)wb + (size_t)(ob * g.k * g.n) * es,
                          .c = (char *)wy + (size_t)(i * g.m * g.n) * es, .lda = g.k, .ldb = g.n, .ldc = g.n};
        BD_TRY(bd_la_batch_gemm(k->threads, &bt, k->err));
    }
    from_work(w, y->dtype, wy, y->data, ny);
fail:
    bd_free(wa);
    bd_free(wb);
    bd_free(wy);
    return st;
}

static braid_status fused_gemm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_linalg_params *p = k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1], *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    bd_tensor *y = &k->out[0];
    int w = work_type(a->dtype), dbl = w == W_F64;
    size_t es = w_size(w);
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1], na = bd_numel(a), nb = bd_numel(b);
    void *wa = bd_malloc((size_t)(na > 0 ? na : 1) * es), *wb = bd_malloc((size_t)(nb > 0 ? nb : 1) * es);
    void *wy = bd_calloc((size_t)(m * n > 0 ? m * n : 1), es);
    BD_CHECK_ALLOC(k->err, wa && wb && wy);
    to_work(w, a->dtype, a->data, wa, na);
    to_work(w, b->dtype, b->data, wb, nb);
    double beta = 0.0;
    if (c && p->beta != 0.0f) {
        int64_t str[2];
        bd_broadcast_strides(c, y, str);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = bd_get_f64(c, i * str[0] + j * str[1]);
                if (dbl) ((double *)wy)[i * n + j] = v;
                else ((float *)wy)[i * n + j] = (float)v;
            }
        beta = p->beta;
    }
    bd_la_batch bt = {.dbl = dbl, .ta = p->trans_a, .tb = p->trans_b, .count = 1, .m = m, .n = n, .k = kk,
                      .alpha = p->alpha, .beta = beta, .a = wa, .b = wb, .c = wy, .lda = p->trans_a ? m : kk,
                      .ldb = p->trans_b ? kk : n, .ldc = n};
    BD_TRY(bd_la_batch_gemm(k->threads, &bt, k->err));
    for (int64_t i = 0; i < m * n && p->act; i++) {
        double v = dbl ? ((double *)wy)[i] : ((float *)wy)[i];
        v = bd_fact_apply(p->act, v, p->act_alpha, p->act_beta, p->act_gamma);
        if (dbl) ((double *)wy)[i] = v;
        else ((float *)wy)[i] = (float)v;
    }
    from_work(w, y->dtype, wy, y->data, m * n);
fail:
    bd_free(wa);
    bd_free(wb);
    bd_free(wy);
    return st;
}

braid_status bd_cpu_linalg(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_Einsum: return einsum(k);
    case BD_OP_Det: return det(k);
    case BD_OP_MS_FusedMatMul: return fused_matmul(k);
    case BD_OP_MS_FusedGemm: return fused_gemm(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the linalg family", k->node->op_type);
    }
}
