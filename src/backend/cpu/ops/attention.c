/* attention.c: CPU kernels of the attention family. bd_cpu_sdpa runs one
 * scaled dot-product attention (src/ops/attention.h) as GEMMs plus a fused
 * masked softmax: each work item is a block of query rows of one head,
 * whose scores S = alpha Q K^T come from one BLAS call, whose rows are
 * softcapped, biased (mask, causal, window, padding) and normalized in
 * place (max-subtracted, fully masked rows give zeros), and whose output
 * rows are P V from a second BLAS call. Items are split across threads and
 * each is computed by one thread, so results do not depend on the thread
 * count. ONNX's Attention materializes K and V (with the past cache) in the
 * compute dtype, then calls it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "la.h"

#include <math.h>

#include "ops/attention.h"
#include "vmath.h"

/* Query rows per work item: bounds the score block at ROWS x stot. */
#define ROWS 64

typedef struct sdpa_job {
    const bd_sdpa *s;
    int64_t blocks;  /* row blocks per head */
    int fail;
} sdpa_job;

/* The qk output row (b, h, i) gets x (n values of the compute type). */
static void put_qk(const bd_sdpa *s, int64_t b, int64_t h, int64_t i, const void *x, int dbl)
{
    int64_t o = ((b * s->hq + h) * s->sq + i) * s->stot;
    if (dbl) bd_la_from_f64(s->qk_dt, x, (char *)s->qk + (size_t)o * bd_dtype_size(s->qk_dt), s->stot);
    else bd_la_from_f32(s->qk_dt, x, (char *)s->qk + (size_t)o * bd_dtype_size(s->qk_dt), s->stot);
}

/* The softmax of a row in float16/bfloat16 arithmetic as numpy runs it
 * there (onnx's reference): x - max, exp and the division each rounded to
 * dt; float16 sums in float and rounds once, bfloat16 (ml_dtypes) rounds
 * after every addition. */
static void softmax_half(int dt, float *x, int64_t n)
{
    float mx = -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < n; j++) x[j] = bd_sdpa_round(dt, x[j]);
    for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    if (mx == -INFINITY) mx = 0.0f;
    for (int64_t j = 0; j < n; j++) x[j] = bd_sdpa_round(dt, expf(bd_sdpa_round(dt, x[j] - mx)));
    for (int64_t j = 0; j < n; j++) sum = dt == BRAID_DTYPE_BFLOAT16 ? bd_sdpa_round(dt, sum + x[j]) : sum + x[j];
    sum = bd_sdpa_round(dt, sum);
    if (sum == 0.0f) sum = 1.0f;
    for (int64_t j = 0; j < n; j++) x[j] = bd_sdpa_round(dt, x[j] / sum);
}

/* 1 when the row's bias can take the fast path: every rule masks with -inf
 * (ONNX) and there is no second bias, so the causal/window/length rules are
 * one interval of kept keys and only the mask needs values. */
static int bias_fast(const bd_sdpa *s)
{
    return s->masked == -INFINITY && s->causal_masked == -INFINITY && !s->bias2;
}

/* The interval [lo, hi) of keys that the causal, window, length and
 * mask-length rules keep for query row i: the same as bd_sdpa_bias gives
 * 0 (not -inf) for, before the mask's values. */
static void kept(const bd_sdpa *s, int64_t i, int64_t len, int64_t off, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, z = BD_MIN(s->stot, len), p = i + off;
    if (s->mask) z = BD_MIN(z, s->mask_kv);
    if (s->causal) z = BD_MIN(z, p + 1);
    if (s->right >= 0) z = BD_MIN(z, p + s->right + 1);
    if (s->left >= 0) a = BD_MAX(a, p - s->left);
    *lo = BD_MAX(a, (int64_t)0), *hi = BD_MAX(z, *lo);
}

/* The fast bias of one row of type T: -inf outside the kept interval, the
 * mask's values inside (typed loops for float and bool masks). Returns 1
 * when every key is masked. */
#define DEF_BIAS(T, N)                                                                                         \
    static int bias_##N(const bd_sdpa *s, T *x, int64_t b, int64_t h, int64_t i, int64_t len, int64_t off)    \
    {                                                                                                          \
        int64_t lo, hi, n = s->stot;                                                                           \
        kept(s, i, len, off, &lo, &hi);                                                                        \
        for (int64_t j = 0; j < lo; j++) x[j] = -INFINITY;                                                     \
        for (int64_t j = hi; j < n; j++) x[j] = -INFINITY;                                                     \
        if (!s->mask) return lo >= hi;                                                                         \
        int all = 1;                                                                                           \
        int64_t base = b * s->m_st[0] + h * s->m_st[1] + i * s->m_st[2], js = s->m_st[3];                      \
        if (s->mask_dt == BRAID_DTYPE_BOOL) {                                                                  \
            const uint8_t *m = (const uint8_t *)s->mask + base;                                                \
            for (int64_t j = lo; j < hi; j++) {                                                                \
                x[j] = m[j * js] ? x[j] : (T)-INFINITY;                                                        \
                all &= !m[j * js];                                                                             \
            }                                                                                                  \
        } else if (s->mask_dt == BRAID_DTYPE_FLOAT && !s->mask_flags) {                                        \
            const float *m = (const float *)s->mask + base;                                                    \
            for (int64_t j = lo; j < hi; j++) {                                                                \
                x[j] = (T)((double)x[j] + m[j * js]);                                                          \
                all &= m[j * js] == -INFINITY;                                                                 \
            }                                                                                                  \
        } else {                                                                                               \
            for (int64_t j = lo; j < hi; j++) {                                                                \
                double bias = bd_sdpa_bias(s, b, h, i, j, len, off);                                          \
                all &= bias == -INFINITY;                                                                      \
                x[j] = (T)((double)x[j] + bias);                                                               \
            }                                                                                                  \
        }                                                                                                      \
        return all;                                                                                            \
    }
DEF_BIAS(float, f)
DEF_BIAS(double, d)

/* One score row, in place: softcap, bias, softmax, zero when fully masked,
 * the qk output of the chosen mode. T is the compute type; the softmax runs
 * in double when sm_dt asks (then tmp holds the exponentials). */
#define DEF_ROW(T, N, DBL)                                                                                     \
    static void row_##N(const bd_sdpa *s, T *x, double *tmp, int64_t b, int64_t h, int64_t i, int64_t len,     \
                        int64_t off)                                                                           \
    {                                                                                                          \
        int64_t n = s->stot;                                                                                   \
        int emu = s->emu_dt;                                                                                   \
        if (emu)                                                                                               \
            for (int64_t j = 0; j < n; j++) x[j] = (T)bd_sdpa_round(emu, (float)x[j]);                         \
        if (s->qk && s->qk_mode == 0) put_qk(s, b, h, i, x, DBL);                                              \
        if (s->softcap > 0.0f && emu) {                                                                        \
            float c = s->softcap;                                                                              \
            for (int64_t j = 0; j < n; j++)                                                                    \
                x[j] = (T)bd_sdpa_round(emu, bd_sdpa_round(emu, tanhf(bd_sdpa_round(emu, (float)x[j] / c))) * c); \
        } else if (s->softcap > 0.0f) {                                                                        \
            for (int64_t j = 0; j < n; j++) x[j] = (T)bd_sdpa_softcap(x[j], s->softcap);                       \
        }                                                                                                      \
        if (s->qk && s->qk_mode == 1) put_qk(s, b, h, i, x, DBL);                                              \
        int all_masked = 1;                                                                                    \
        if (bias_fast(s)) {                                                                                    \
            all_masked = bias_##N(s, x, b, h, i, len, off);                                                    \
        } else {                                                                                               \
            for (int64_t j = 0; j < n; j++) {                                                                  \
                double bias = bd_sdpa_bias(s, b, h, i, j, len, off);                                          \
                all_masked &= bias == -INFINITY;                                                               \
                x[j] = (T)((double)x[j] + bias);                                                               \
            }                                                                                                  \
        }                                                                                                      \
        if (emu)                                                                                               \
            for (int64_t j = 0; j < n; j++) x[j] = (T)bd_sdpa_round(emu, (float)x[j]);                         \
        if (s->qk && s->qk_mode == 2) put_qk(s, b, h, i, x, DBL);                                              \
        if (all_masked) {                                                                                      \
            for (int64_t j = 0; j < n; j++) x[j] = 0;                                                          \
        } else if (s->sm_dt == BRAID_DTYPE_DOUBLE && !(DBL)) {                                                 \
            double mx = -INFINITY, sum = 0;                                                                    \
            for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;                                        \
            if (mx == -INFINITY) mx = 0;                                                                       \
            for (int64_t j = 0; j < n; j++) sum += (tmp[j] = exp((double)x[j] - mx));                          \
            sum = sum == 0 ? 1 : sum;                                                                          \
            for (int64_t j = 0; j < n; j++) x[j] = (T)(tmp[j] / sum);                                          \
        } else if ((s->sm_dt == BRAID_DTYPE_FLOAT16 || s->sm_dt == BRAID_DTYPE_BFLOAT16) && !(DBL)) {         \
            softmax_half(s->sm_dt, (float *)x, n);                                                             \
        } else {                                                                                               \
            if (s->sm_dt == BRAID_DTYPE_FLOAT16 || s->sm_dt == BRAID_DTYPE_BFLOAT16)                           \
                for (int64_t j = 0; j < n; j++) x[j] = (T)bd_sdpa_round(s->sm_dt, (float)x[j]);                \
            T mx = -INFINITY, sum = 0;                                                                         \
            for (int64_t j = 0; j < n; j++) mx = x[j] > mx ? x[j] : mx;                                        \
            if (mx == -INFINITY) mx = 0;                                                                       \
            for (int64_t j = 0; j < n; j++) x[j] = x[j] == (T)-INFINITY ? (T)0 : EXP_##N(x[j] - mx);             \
            for (int64_t j = 0; j < n; j++) sum += x[j];                                                       \
            T r = sum == 0 ? (T)1 : (T)1 / sum;                                                                \
            for (int64_t j = 0; j < n; j++) x[j] *= r;                                                         \
        }                                                                                                      \
        if (s->qk && s->qk_mode == 3) put_qk(s, b, h, i, x, DBL);                                              \
        if (s->p_dt)                                                                                           \
            for (int64_t j = 0; j < n; j++) x[j] = (T)bd_sdpa_round(s->p_dt, (float)x[j]);                     \
    }
#define EXP_f bd_vexpf
#define EXP_d exp
DEF_ROW(float, f, 0)
DEF_ROW(double, d, 1)

static void sdpa_items(void *vj, int64_t begin, int64_t end)
{
    sdpa_job *j = vj;
    const bd_sdpa *s = j->s;
    int dbl = s->cdt == BRAID_DTYPE_DOUBLE;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    int64_t rows = BD_MIN((int64_t)ROWS, s->sq);
    char *x = bd_malloc((size_t)(rows * s->stot) * es + 1);
    double *tmp = bd_malloc((size_t)s->stot * sizeof *tmp + 1);
    if (!x || !tmp) {
        j->fail = 1;
        goto done;
    }
    int64_t group = s->hq / s->hkv;
    for (int64_t it = begin; it < end; it++) {
        int64_t blk = it % j->blocks, bh = it / j->blocks, h = bh % s->hq, b = bh / s->hq, hk = h / group;
        int64_t i0 = blk * ROWS, m = BD_MIN((int64_t)ROWS, s->sq - i0);
        int64_t len = bd_sdpa_len(s, b), off = bd_sdpa_offset(s, b);
        size_t qo = (size_t)(b * s->q_st[0] + h * s->q_st[1] + i0 * s->q_st[2]) * es;
        size_t ko = (size_t)(b * s->k_st[0] + hk * s->k_st[1]) * es, vo = (size_t)(b * s->v_st[0] + hk * s->v_st[1]) * es;
        size_t yo = (size_t)(b * s->y_st[0] + h * s->y_st[1] + i0 * s->y_st[2]) * es;
        const char *q = (const char *)s->q + qo, *k = (const char *)s->k + ko, *v = (const char *)s->v + vo;
        char *y = (char *)s->y + yo;
        if (dbl) {
            bd_la_dgemm1(0, 1, m, s->stot, s->d, s->alpha, (const double *)q, s->q_st[2], (const double *)k,
                         s->k_st[2], 0.0, (double *)x, s->stot);
            for (int64_t r = 0; r < m; r++) row_d(s, (double *)x + r * s->stot, tmp, b, h, i0 + r, len, off);
            bd_la_dgemm1(0, 0, m, s->dv, s->stot, 1.0, (const double *)x, s->stot, (const double *)v, s->v_st[2], 0.0,
                         (double *)y, s->y_st[2]);
        } else {
            bd_la_sgemm1(0, 1, m, s->stot, s->d, (float)s->alpha, (const float *)q, s->q_st[2], (const float *)k,
                         s->k_st[2], 0.0f, (float *)x, s->stot);
            for (int64_t r = 0; r < m; r++) row_f(s, (float *)x + r * s->stot, tmp, b, h, i0 + r, len, off);
            bd_la_sgemm1(0, 0, m, s->dv, s->stot, 1.0f, (const float *)x, s->stot, (const float *)v, s->v_st[2],
                         0.0f, (float *)y, s->y_st[2]);
        }
    }
done:
    bd_free(x);
    bd_free(tmp);
}

braid_status bd_cpu_sdpa(const bd_sdpa *s, int threads, bd_err *e)
{
    braid_status st = bd_la_check_dims(s->sq, s->stot, BD_MAX(s->d, s->dv), e);
    if (st) return st;
    if (s->q_st[2] > INT_MAX || s->k_st[2] > INT_MAX || s->v_st[2] > INT_MAX || s->y_st[2] > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "row strides beyond the BLAS limit of %d", INT_MAX);
    if (s->b * s->hq * s->sq == 0) return BRAID_OK;
    if (s->stot == 0) { /* no key at all: every row is fully masked, Y is zeros */
        int dbl = s->cdt == BRAID_DTYPE_DOUBLE;
        for (int64_t b = 0; b < s->b; b++)
            for (int64_t h = 0; h < s->hq; h++)
                for (int64_t i = 0; i < s->sq; i++)
                    for (int64_t c = 0; c < s->dv; c++) {
                        int64_t o = b * s->y_st[0] + h * s->y_st[1] + i * s->y_st[2] + c;
                        if (dbl) ((double *)s->y)[o] = 0;
                        else ((float *)s->y)[o] = 0;
                    }
        return BRAID_OK;
    }
    sdpa_job j = {s, BD_CEIL_DIV(s->sq, (int64_t)ROWS), 0};
    int64_t per_item = BD_MIN((int64_t)ROWS, s->sq) * s->stot * (s->d + s->dv + 10);
    int64_t min_items = per_item >= (1 << 17) ? 1 : ((int64_t)1 << 17) / BD_MAX(per_item, 1);
    bd_parallel_for(threads, s->b * s->hq * j.blocks, min_items, sdpa_items, &j);
    if (j.fail) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the attention scores");
    return BRAID_OK;
}

/* ---- ONNX Attention ------------------------------------------------------------------ */

/* dst (b, h, rows, d) in the compute dtype from src of dtype dt: a 4-D tensor
 * (b, h, rows, d) or a 3-D one (b, rows, h * d), placed at row `at` of dst's
 * `total` rows. */
static void gather_heads(int cdt, void *dst, int64_t total, int64_t at, int dt, const void *src, int rank3, int64_t b,
                         int64_t h, int64_t rows, int64_t d)
{
    size_t es = bd_dtype_size(dt), ces = bd_dtype_size(cdt);
    for (int64_t bi = 0; bi < b; bi++)
        for (int64_t hi = 0; hi < h; hi++)
            for (int64_t r = 0; r < rows; r++) {
                int64_t so = rank3 ? ((bi * rows + r) * h + hi) * d : ((bi * h + hi) * rows + r) * d;
                int64_t doff = ((bi * h + hi) * total + at + r) * d;
                const char *sp = (const char *)src + (size_t)so * es;
                char *dp = (char *)dst + (size_t)doff * ces;
                if (cdt == BRAID_DTYPE_DOUBLE) bd_la_to_f64(dt, sp, (double *)dp, d);
                else bd_la_to_f32(dt, sp, (float *)dp, d);
            }
}

static braid_status attention(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    const bd_attention_params *p = n->params;
    const bd_tensor *q = &k->in[0], *kt = &k->in[1], *vt = &k->in[2];
    const bd_tensor *mask = k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL;
    const bd_tensor *pk = k->n_in > 4 && k->in[4].data ? &k->in[4] : NULL;
    const bd_tensor *pv = k->n_in > 5 && k->in[5].data ? &k->in[5] : NULL;
    const bd_tensor *nonpad = k->n_in > 6 && k->in[6].data ? &k->in[6] : NULL;
    bd_tensor *y = &k->out[0];
    void *kbuf = NULL, *vbuf = NULL, *qbuf = NULL, *ybuf = NULL;
    bd_attention_geom g;
    BD_TRY(bd_attention_geometry(n, k->in, &g, k->err));
    int half = (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) && g.cdt == BRAID_DTYPE_FLOAT;
    size_t ces = bd_dtype_size(g.cdt);
    int64_t kn = g.b * g.hkv * g.stot * g.d, vn = g.b * g.hkv * g.stot * g.dv, qn = bd_numel(q), yn = bd_numel(y);
    kbuf = bd_malloc((size_t)kn * ces + 1);
    vbuf = bd_malloc((size_t)vn * ces + 1);
    BD_CHECK_ALLOC(k->err, kbuf && vbuf);
    /* K and V: (b, hkv, stot, d) with the past first */
    if (pk) {
        gather_heads(g.cdt, kbuf, g.stot, 0, pk->dtype, pk->data, 0, g.b, g.hkv, g.spast, g.d);
        gather_heads(g.cdt, vbuf, g.stot, 0, pv->dtype, pv->data, 0, g.b, g.hkv, g.spast, g.dv);
    }
    gather_heads(g.cdt, kbuf, g.stot, g.spast, kt->dtype, kt->data, g.rank3, g.b, g.hkv, g.skv, g.d);
    gather_heads(g.cdt, vbuf, g.stot, g.spast, vt->dtype, vt->data, g.rank3, g.b, g.hkv, g.skv, g.dv);
    for (int o = 1; o <= 2 && o < k->n_out; o++) {
        if (!k->out[o].data) continue;
        int64_t cnt = o == 1 ? kn : vn;
        if (g.cdt == BRAID_DTYPE_DOUBLE) bd_la_from_f64(k->out[o].dtype, o == 1 ? kbuf : vbuf, k->out[o].data, cnt);
        else bd_la_from_f32(k->out[o].dtype, o == 1 ? kbuf : vbuf, k->out[o].data, cnt);
    }
    /* Q in the compute dtype, same layout; Y likewise */
    const void *qd = q->data;
    if (q->dtype != g.cdt) {
        qbuf = bd_malloc((size_t)qn * ces + 1);
        BD_CHECK_ALLOC(k->err, qbuf);
        if (g.cdt == BRAID_DTYPE_DOUBLE) bd_la_to_f64(q->dtype, q->data, qbuf, qn);
        else bd_la_to_f32(q->dtype, q->data, qbuf, qn);
        qd = qbuf;
    }
    void *yd = y->data;
    if (y->dtype != g.cdt) {
        ybuf = bd_malloc((size_t)yn * ces + 1);
        BD_CHECK_ALLOC(k->err, ybuf);
        yd = ybuf;
    }
    bd_sdpa s = {.b = g.b, .hq = g.hq, .hkv = g.hkv, .sq = g.sq, .stot = g.stot, .d = g.d, .dv = g.dv,
                 .cdt = g.cdt, .q = qd, .k = kbuf, .v = vbuf, .y = yd, .softcap = p->softcap,
                 .offset = g.spast, .causal = p->is_causal, .left = p->left, .right = p->right,
                 .masked = -INFINITY, .causal_masked = -INFINITY};
    if (g.rank3) {
        s.q_st[0] = g.sq * g.hq * g.d, s.q_st[1] = g.d, s.q_st[2] = g.hq * g.d;
        s.y_st[0] = g.sq * g.hq * g.dv, s.y_st[1] = g.dv, s.y_st[2] = g.hq * g.dv;
    } else {
        s.q_st[0] = g.hq * g.sq * g.d, s.q_st[1] = g.sq * g.d, s.q_st[2] = g.d;
        s.y_st[0] = g.hq * g.sq * g.dv, s.y_st[1] = g.sq * g.dv, s.y_st[2] = g.dv;
    }
    s.k_st[0] = g.hkv * g.stot * g.d, s.k_st[1] = g.stot * g.d, s.k_st[2] = g.d;
    s.v_st[0] = g.hkv * g.stot * g.dv, s.v_st[1] = g.stot * g.dv, s.v_st[2] = g.dv;
    /* alpha: (Q sqrt(scale)) (K sqrt(scale))^T with sqrt(scale) in Q's dtype, as the spec writes it;
     * float16/bfloat16 round the scaled Q and K too, as the reference does in that type */
    double scale = p->has_scale ? (double)p->scale : 1.0 / sqrt((double)g.d), r = sqrt(scale);
    r = q->dtype == BRAID_DTYPE_DOUBLE ? r : (double)bd_sdpa_round(q->dtype, (float)r);
    s.alpha = r * r;
    if (half) {
        float *qf = qbuf, *kf = kbuf, rf = (float)r;
        for (int64_t i = 0; i < qn; i++) qf[i] = bd_sdpa_round(q->dtype, qf[i] * rf);
        for (int64_t i = 0; i < kn; i++) kf[i] = bd_sdpa_round(q->dtype, kf[i] * rf);
        s.alpha = 1.0;
        s.emu_dt = q->dtype;
    }
    if (mask) {
        s.mask = mask->data;
        s.mask_dt = mask->dtype;
        s.mask_flags = mask->dtype == BRAID_DTYPE_BOOL;
        bd_tensor full = {.rank = 4, .dims = {g.b, g.hq, g.sq, mask->dims[mask->rank - 1]}};
        bd_broadcast_strides(mask, &full, s.m_st);
        s.mask_kv = mask->dims[mask->rank - 1];
    }
    if (nonpad) {
        s.kv_len = nonpad->data;
        s.kv_len_dt = BRAID_DTYPE_INT64;
        s.offset_from_len = 1;
    }
    if (p->softmax_precision) s.sm_dt = p->softmax_precision;
    else if (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) s.sm_dt = q->dtype;
    if (q->dtype == BRAID_DTYPE_FLOAT16 || q->dtype == BRAID_DTYPE_BFLOAT16) s.p_dt = q->dtype;
    if (k->n_out > 3 && k->out[3].data) {
        s.qk = k->out[3].data;
        s.qk_dt = k->out[3].dtype;
        s.qk_mode = p->qk_mode;
    }
    BD_TRY(bd_cpu_sdpa(&s, k->threads, k->err));
    if (ybuf) {
        if (g.cdt == BRAID_DTYPE_DOUBLE) bd_la_from_f64(y->dtype, ybuf, y->data, yn);
        else bd_la_from_f32(y->dtype, ybuf, y->data, yn);
    }
fail:
    bd_free(kbuf);
    bd_free(vbuf);
    bd_free(qbuf);
    bd_free(ybuf);
    return st;
}

braid_status bd_cpu_attention(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (k->node->op == BD_OP_Attention) return attention(k);
    return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the attention family", k->node->op_type);
}
