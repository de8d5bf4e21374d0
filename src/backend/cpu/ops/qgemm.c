/* qgemm.c: CPU kernels of the qgemm op family. Every product is exact
 * integer arithmetic done by the float SGEMM: the operands, zero points
 * subtracted, are small integers held exactly in float (|a|, |b| <= 255 for
 * 8-bit types), and K is cut into chunks short enough that every partial
 * sum stays below 2^24, where floats count exactly; the chunks are summed in
 * int32 (wrapping, as int32 accumulation does). So the results are the
 * spec's int32 accumulations bit for bit, for any thread count (bd_sgemm's
 * fixed tiles), at OpenBLAS's speed. The int32 accumulator then goes
 * through the op's epilogue (ops/qgemm.h): kept, requantized, or scaled
 * to float. Convolutions run as im2col + this GEMM per (image, group), or,
 * depthwise, as a direct loop over the taps (exact in float while taps *
 * |x| * |w| < 2^24). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <limits.h>
#include <string.h>

#include "ops/gemm.h"
#include "ops/qgemm.h"
#include "convwin.h"

#define EXACT 16777216.0 /* 2^24: floats hold every integer up to here */
#define MIN_ROWS_WORK (1 << 15)

/* ---- the exact integer GEMM -------------------------------------------------------------------- */

/* c (m x n int32, ldc) = op(a) (m x k) op(b) (k x n) for integer-valued float operands with |a| <= amax
 * and |b| <= bmax (see the top of this file). tmp: m x n floats. */
static void gemm_exact(int threads, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                       const float *b, int64_t ldb, double amax, double bmax, int32_t *c, int64_t ldc, float *tmp)
{
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
        return;
    }
    double per = amax * bmax;
    int64_t chunk = per > 0 ? (int64_t)(EXACT / per) : k;
    chunk = BD_MAX((int64_t)1, BD_MIN(chunk, k));
    for (int64_t k0 = 0; k0 < k; k0 += chunk) {
        int64_t kc = BD_MIN(chunk, k - k0);
        bd_sgemm(threads, ta, tb, m, n, kc, 1.0f, a + (ta ? k0 * lda : k0), lda, b + (tb ? k0 : k0 * ldb), ldb,
                 0.0f, tmp, n);
        for (int64_t i = 0; i < m; i++) {
            int32_t *ci = c + i * ldc;
            const float *ti = tmp + i * n;
            if (k0 == 0)
                for (int64_t j = 0; j < n; j++) ci[j] = (int32_t)ti[j];
            else
                for (int64_t j = 0; j < n; j++) ci[j] = (int32_t)((uint32_t)ci[j] + (uint32_t)(int32_t)ti[j]);
        }
    }
}

static braid_status check_dims(int64_t a, int64_t b, int64_t c, bd_err *e)
{
    if (a > INT_MAX || b > INT_MAX || c > INT_MAX)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "matrix dims (%lld, %lld, %lld) are beyond the BLAS limit of %d",
                       (long long)a, (long long)b, (long long)c, INT_MAX);
    return BRAID_OK;
}

/* Few rows (a GEMV, a token at a time): B is read as bytes instead of being
 * widened to floats, a row of int16 a' = a - zero point at a time:
 * c[i][j] = sum_k a'[i][k] b[k][j] - bzp[j] sum_k a'[i][k], exact in int32
 * (wrapping). Columns split over threads. */
#define SMALL_ROWS 8
typedef struct small_job {
    const float *af; /* rows x k, a' as float */
    const void *b;   /* k x n, uint8 or int8 */
    const float *zc; /* per column zero points */
    int32_t *c;
    int64_t rows, n, k;
    int bdt;
} small_job;

#define SMALL_COLS(T)                                                                              \
    for (int64_t l = 0; l < k; l++) {                                                              \
        const int16_t av = (int16_t)ai[l];                                                         \
        const T *bl = (const T *)j->b + l * n;                                                     \
        for (int64_t q = j0; q < j1; q++) ci[q] += (uint32_t)((int32_t)av * (int32_t)(int16_t)bl[q]); \
    }
static void small_cols(void *ctx, int64_t j0, int64_t j1)
{
    const small_job *j = ctx;
    const int64_t n = j->n, k = j->k; /* locals: the stores may alias *j */
    const float *zc = j->zc;
    for (int64_t i = 0; i < j->rows; i++) {
        uint32_t *ci = (uint32_t *)j->c + i * n; /* wraps as int32 accumulation does */
        const float *ai = j->af + i * k;
        int32_t rs = 0; /* |a'| <= 255 and k < 2^23: no overflow */
        for (int64_t l = 0; l < k; l++) rs += (int32_t)ai[l];
        for (int64_t q = j0; q < j1; q++) ci[q] = 0u - (uint32_t)rs * (uint32_t)(int32_t)zc[q];
        if (j->bdt == BRAID_DTYPE_UINT8) { SMALL_COLS(uint8_t) }
        else { SMALL_COLS(int8_t) }
    }
}

/* ---- operands as float ------------------------------------------------------------------------- */

/* dst (rows x cols) = src - zr[row] - zc[col] (zr, zc may be NULL) for uint8 or int8 src. */
#define TO_FLOAT(T)                                                                                \
    for (int64_t r = 0; r < rows; r++) {                                                           \
        const T *s = (const T *)src + r * cols;                                                    \
        float *d = dst + r * cols, z = zr ? zr[r] : 0.0f;                                          \
        if (zc) for (int64_t c = 0; c < cols; c++) d[c] = (float)s[c] - z - zc[c];                 \
        else for (int64_t c = 0; c < cols; c++) d[c] = (float)s[c] - z;                            \
    }
static void to_float(int dt, const void *src, int64_t rows, int64_t cols, const float *zr, const float *zc, float *dst)
{
    if (dt == BRAID_DTYPE_UINT8) { TO_FLOAT(uint8_t) }
    else { TO_FLOAT(int8_t) }
}

/* The largest |v - z| of dtype dt's values over the n zero points z (n 0: z = 0). */
static double dev_bound(int dt, const float *z, int64_t n)
{
    float lo, hi;
    bd_q_int_range(dt, &lo, &hi);
    double b = BD_MAX(-(double)lo, (double)hi);
    for (int64_t i = 0; i < n; i++) b = BD_MAX(b, BD_MAX((double)hi - z[i], (double)z[i] - lo));
    return b;
}

/* v's values over the positions [0, count) of a qvec of tensor t (omitted: zeros). */
static void qvec_fill(const bd_tensor *t, const bd_qvec *v, int64_t count, float *out, int scale)
{
    for (int64_t p = 0; p < count; p++) {
        if (t->dtype == BRAID_DTYPE_UNDEFINED) { out[p] = scale ? 1.0f : 0.0f; continue; }
        int64_t i = bd_qvec_index(v, p);
        out[p] = scale ? bd_q_scale_at(t->dtype, t->data, i) : bd_q_value_at(t->dtype, t->data, i);
    }
}

/* ---- epilogue ------------------------------------------------------------------------------------ */

/* What becomes of acc (rows x cols) written to y at element offset yoff.
 * Per-element multipliers and biases come by strides (i, j) so that one
 * routine serves matrices (per column) and convolutions (per channel row). */
typedef struct qepi {
    int kind, ydt;
    float zp, lo, hi;
    const float *mult;
    int64_t mi, mj;
    const float *fbias;
    int64_t fi, fj;
    const int32_t *ibias;
    int64_t bi, bj;
} qepi;

/* One row of the requantization / scaling, its multiplier per column (MJ 1) or one (MJ 0). */
#define EPI_REQ(T, MJ)                                                                             \
    for (int64_t j = 0; j < cols; j++) (yq)[j] = (T)(int32_t)bd_q_requant(ai[j], m[(MJ) * j], zp, lo, hi)
#define EPI_FLT(MJ, FJ)                                                                            \
    for (int64_t j = 0; j < cols; j++) yf[j] = bd_qepi_float(ai[j], m[(MJ) * j], fb ? fb[(FJ) * j] : 0.0f)

/* acc (rows x cols; its bias is added in place) through e into y at element
 * offset yoff: flat loops per case, so that they vectorize. */
static void epilogue(const qepi *e, int32_t *acc, int64_t rows, int64_t cols, void *y, int64_t yoff)
{
    const float zp = e->zp, lo = e->lo, hi = e->hi;
    for (int64_t i = 0; i < rows; i++) {
        int32_t *ai = acc + i * cols;
        if (e->ibias) {
            const int32_t *ib = e->ibias + i * e->bi;
            if (e->bj) for (int64_t j = 0; j < cols; j++) ai[j] = (int32_t)((uint32_t)ai[j] + (uint32_t)ib[j]);
            else for (int64_t j = 0; j < cols; j++) ai[j] = (int32_t)((uint32_t)ai[j] + (uint32_t)ib[0]);
        }
        int64_t o = yoff + i * cols;
        const float *m = e->mult ? e->mult + i * e->mi : NULL, *fb = e->fbias ? e->fbias + i * e->fi : NULL;
        if (e->kind == BD_QEPI_INT32) {
            memcpy((int32_t *)y + o, ai, (size_t)cols * sizeof *ai);
        } else if (e->kind == BD_QEPI_REQUANT && e->ydt == BRAID_DTYPE_UINT8) {
            uint8_t *yq = (uint8_t *)y + o;
            if (e->mj) EPI_REQ(uint8_t, 1);
            else EPI_REQ(uint8_t, 0);
        } else if (e->kind == BD_QEPI_REQUANT) {
            int8_t *yq = (int8_t *)y + o;
            if (e->mj) EPI_REQ(int8_t, 1);
            else EPI_REQ(int8_t, 0);
        } else if (e->ydt == BRAID_DTYPE_FLOAT) {
            float *yf = (float *)y + o;
            if (e->mj && e->fj) EPI_FLT(1, 1);
            else if (e->mj) EPI_FLT(1, 0);
            else if (e->fj) EPI_FLT(0, 1);
            else EPI_FLT(0, 0);
        } else { /* float16 */
            uint16_t *yh = (uint16_t *)y + o;
            for (int64_t j = 0; j < cols; j++)
                yh[j] = bd_float_to_half(bd_qepi_float(ai[j], m[e->mj * j], fb ? fb[e->fj * j] : 0.0f));
        }
    }
}

/* The output's epilogue of node k, its multipliers (count values, per column
 * or channel, or one) written into mult; fbias (count floats) when the op
 * has a float bias. */
static void epi_make(const bd_kernel *k, const bd_qgemm_io *io, float a_scale, const float *b_scale, int64_t count,
                     float *mult, float *fbias, qepi *e)
{
    const bd_qgemm_params *p = k->node->params;
    memset(e, 0, sizeof *e);
    e->ydt = k->out[0].dtype;
    int has_yzp = io->yzp >= 0 && k->in[io->yzp].dtype != BRAID_DTYPE_UNDEFINED;
    int has_ys = io->ys >= 0 && k->in[io->ys].dtype != BRAID_DTYPE_UNDEFINED;
    e->kind = e->ydt == BRAID_DTYPE_INT32 ? BD_QEPI_INT32 : has_yzp ? BD_QEPI_REQUANT : BD_QEPI_FLOAT;
    float ys = has_ys ? bd_q_scale_at(k->in[io->ys].dtype, k->in[io->ys].data, 0) : 1.0f;
    /* QLinearMatMul's half scales multiply in their own precision, as onnx's reference */
    int sdt = k->node->op == BD_OP_QLinearMatMul ? k->in[io->as].dtype : BRAID_DTYPE_FLOAT;
    for (int64_t i = 0; i < count; i++)
        mult[i] = bd_qgemm_mult(k->node->op == BD_OP_MS_QGemm, p->alpha, a_scale, b_scale[i], has_ys, ys, sdt);
    e->mult = mult;
    if (has_yzp) {
        e->zp = bd_q_value_at(k->in[io->yzp].dtype, k->in[io->yzp].data, 0);
        bd_q_int_range(e->ydt, &e->lo, &e->hi);
    }
    if (io->fbias && io->bias >= 0 && k->in[io->bias].data) {
        const bd_tensor *b = &k->in[io->bias];
        for (int64_t i = 0; i < count; i++) fbias[i] = bd_q_scale_at(b->dtype, b->data, i % bd_numel(b));
        e->fbias = fbias;
    }
}

/* ---- MatMulInteger, QLinearMatMul, QGemm, DynamicQuantizeMatMul, MatMulIntegerToFloat ---------- */

/* DynamicQuantizeMatMul's A: quantized per tensor (uint8) and given back as q - zp; *scale set. */
static void dynamic_a(const float *a, int64_t n, float *af, float *scale)
{
    float mn = 0.0f, mx = 0.0f, s, z;
    for (int64_t i = 0; i < n; i++) {
        mn = a[i] < mn ? a[i] : mn;
        mx = a[i] > mx ? a[i] : mx;
    }
    bd_q_dynamic_params(mn, mx, &s, &z);
    for (int64_t i = 0; i < n; i++) af[i] = bd_q_to_int(a[i] / s, z, 0.0f, 255.0f) - z;
    *scale = s;
}

static braid_status matmul(const bd_kernel *k, const bd_qgemm_io *io)
{
    braid_status st = BRAID_OK;
    const bd_qgemm_params *p = k->node->params;
    const bd_tensor *a = &k->in[io->a], *b = &k->in[io->b];
    const bd_tensor none = {.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1};
    const bd_tensor *azp = io->azp >= 0 ? &k->in[io->azp] : &none, *bzp = io->bzp >= 0 ? &k->in[io->bzp] : &none;
    const bd_tensor *bs = io->bs >= 0 ? &k->in[io->bs] : &none;
    int qg = k->node->op == BD_OP_MS_QGemm, ta = qg && p->trans_a, tb = qg && p->trans_b;
    bd_matmul_geom g;
    bd_qvec va, vb, vs;
    float *af = NULL, *bf = NULL, *zr = NULL, *zc = NULL, *sc = NULL, *mult = NULL, *fbias = NULL, *tmp = NULL;
    int32_t *acc = NULL;
    if (qg) { /* 2-D, maybe transposed: the geometry by hand */
        memset(&g, 0, sizeof g);
        g.m = a->dims[ta ? 1 : 0], g.k = a->dims[ta ? 0 : 1], g.n = b->dims[tb ? 0 : 1];
    } else {
        BD_TRY(bd_matmul_geometry(a, b, &g, NULL, k->err));
    }
    BD_TRY(bd_qvec_make(azp, a, 0, 0, "a_zero_point", &va, k->err));
    BD_TRY(bd_qvec_make(bzp, b, 1, tb, "b_zero_point", &vb, k->err));
    BD_TRY(bd_qvec_make(bs, b, 1, tb, "b_scale", &vs, k->err));
    int64_t na = bd_numel(&g.a_batch), nbb = bd_numel(&g.b_batch), nb = bd_numel(&g.batch);
    int64_t mm = g.m, nn = g.n, kk = g.k, arows = na * mm, bcols = nbb * nn;
    af = bd_malloc((size_t)(bd_numel(a) + 1) * sizeof *af);
    bf = bd_malloc((size_t)(bd_numel(b) + 1) * sizeof *bf);
    zr = bd_malloc((size_t)(arows + 1) * sizeof *zr);
    zc = bd_malloc((size_t)(bcols + 1) * sizeof *zc);
    sc = bd_malloc((size_t)(bcols + 1) * sizeof *sc);
    mult = bd_malloc((size_t)(bcols + 1) * sizeof *mult);
    fbias = bd_malloc((size_t)(bcols + 1) * sizeof *fbias);
    BD_CHECK_ALLOC(k->err, af && bf && zr && zc && sc && mult && fbias);
    /* A as (rows x K) floats, zero points subtracted */
    float a_scale = io->as >= 0 ? bd_q_scale_at(k->in[io->as].dtype, k->in[io->as].data, 0) : 1.0f;
    double amax;
    if (io->dyn) {
        dynamic_a(a->data, bd_numel(a), af, &a_scale);
        amax = 255.0;
    } else if (ta) { /* QGemm's transposed A: (K x M), one zero point */
        float z = azp->dtype != BRAID_DTYPE_UNDEFINED ? bd_q_value_at(azp->dtype, azp->data, 0) : 0.0f;
        to_float(a->dtype, a->data, kk, mm, NULL, NULL, af);
        for (int64_t i = 0; i < kk * mm; i++) af[i] -= z;
        amax = dev_bound(a->dtype, &z, 1);
    } else {
        qvec_fill(azp, &va, arows, zr, 0);
        to_float(a->dtype, a->data, arows, kk, zr, NULL, af);
        amax = dev_bound(a->dtype, zr, azp->dtype != BRAID_DTYPE_UNDEFINED ? arows : 0);
    }
    /* B as floats, per-column zero points subtracted (B^T: per row); for few rows, as it is */
    int shared_b = nbb == 1 && na == nb; /* one product with M * batch rows */
    int64_t rows = shared_b ? mm * nb : mm;
    int small = !ta && !tb && rows <= SMALL_ROWS && kk < (1 << 23);
    qvec_fill(bzp, &vb, bcols, zc, 0);
    qvec_fill(bs, &vs, bcols, sc, 1);
    if (tb) to_float(b->dtype, b->data, nn, kk, zc, NULL, bf);
    else if (!small)
        for (int64_t t = 0; t < nbb; t++) to_float(b->dtype, (const char *)b->data + t * kk * nn, kk, nn, NULL, zc + t * nn, bf + t * kk * nn);
    double bmax = dev_bound(b->dtype, zc, bzp->dtype != BRAID_DTYPE_UNDEFINED ? bcols : 0);
    qepi e;
    epi_make(k, io, a_scale, sc, bcols, mult, fbias, &e);
    if (io->bias >= 0 && !io->fbias && k->in[io->bias].data) { /* QGemm's C, broadcast to (M, N) */
        const bd_tensor *c = &k->in[io->bias];
        e.ibias = c->data;
        e.bi = c->rank == 2 && c->dims[0] != 1 ? c->dims[1] : 0;
        e.bj = c->rank >= 1 && c->dims[c->rank - 1] != 1 ? 1 : 0;
    }
    e.mj = 1, e.fj = 1;
    int direct = e.kind == BD_QEPI_INT32 && !e.ibias;
    BD_TRY(check_dims(rows, nn, kk, k->err));
    tmp = bd_malloc((size_t)(rows * nn + 1) * sizeof *tmp);
    if (!direct) acc = bd_malloc((size_t)(rows * nn + 1) * sizeof *acc);
    BD_CHECK_ALLOC(k->err, tmp && (direct || acc));
    int64_t sa[BD_MAX_RANK], sb[BD_MAX_RANK];
    bd_broadcast_strides(&g.a_batch, &g.batch, sa);
    bd_broadcast_strides(&g.b_batch, &g.batch, sb);
    for (int64_t t = 0; t < (shared_b ? 1 : nb); t++) {
        int64_t rem = t, oa = 0, ob = 0;
        for (int d = g.batch.rank - 1; d >= 0 && !shared_b; d--) {
            int64_t idx = rem % g.batch.dims[d];
            rem /= g.batch.dims[d];
            oa += idx * sa[d];
            ob += idx * sb[d];
        }
        int32_t *c = direct ? (int32_t *)k->out[0].data + t * mm * nn : acc;
        if (small) {
            small_job sj = {af + oa * mm * kk, (const char *)b->data + ob * kk * nn, zc + ob * nn, c, rows, nn, kk,
                            b->dtype};
            bd_parallel_for(k->threads, nn, BD_MAX((int64_t)64, MIN_ROWS_WORK / BD_MAX(rows * kk, (int64_t)1)),
                            small_cols, &sj);
        } else {
            gemm_exact(k->threads, ta, tb, rows, nn, kk, af + oa * mm * kk, ta ? mm : kk, bf + ob * kk * nn,
                       tb ? kk : nn, amax, bmax, c, nn, tmp);
        }
        if (direct) continue;
        qepi eb = e;
        eb.mult = mult + ob * nn;
        if (eb.fbias) eb.fbias = fbias + ob * nn;
        epilogue(&eb, acc, rows, nn, k->out[0].data, t * mm * nn);
    }
fail:
    bd_free(af), bd_free(bf), bd_free(zr), bd_free(zc), bd_free(sc), bd_free(mult), bd_free(fbias);
    bd_free(tmp), bd_free(acc);
    return st;
}

/* ---- ConvInteger, QLinearConv ------------------------------------------------------------------- */


/* col (channels*taps x grid) = the patches of img - zp; padding reads as zp (0 after the subtraction). */
#define IM2COL(T)                                                                                  \
    WIN_FOREACH(w, channels, {                                                                     \
        float *dst = col + (c * w->taps + t) * w->grid_size + grow;                                \
        if (!ok) { memset(dst, 0, (size_t)w->grid[2] * sizeof *dst); continue; }                   \
        const T *src = (const T *)img + irow + off_w;                                              \
        for (int64_t j = 0; j < wlo; j++) dst[j] = 0.0f;                                           \
        for (int64_t j = wlo; j < whi; j++) dst[j] = (float)src[j * s] - zp;                       \
        for (int64_t j = whi; j < w->grid[2]; j++) dst[j] = 0.0f;                                  \
    })
static void im2col(int dt, const void *img, float zp, int64_t channels, const win3 *w, float *col)
{
    int64_t s = w->s[2];
    if (dt == BRAID_DTYPE_UINT8) { IM2COL(uint8_t) }
    else { IM2COL(int8_t) }
}

typedef struct conv_job {
    const bd_kernel *k;
    const bd_conv_geom *g;
    const win3 *w;
    const qepi *e;
    const float *wf; /* (M x Cg*taps) weights minus their zero points */
    float xzp;
    double xmax, wmax;
    float *buf;      /* per worker: per_worker floats */
    int64_t per_worker, pairs, workers, kk, p;
    int threads, depthwise;
} conv_job;

/* A worker's share of the (image, group) pairs, or depthwise of the (image, channel) planes. */
static void conv_worker(void *ctx, int64_t begin, int64_t end)
{
    const conv_job *j = ctx;
    const bd_conv_geom *g = j->g;
    const win3 *w = j->w;
    int dt = j->k->in[0].dtype, es = 1;
    int64_t cg = g->c_in / g->group, mg = g->c_out / g->group, p = j->p;
    for (int64_t wi = begin; wi < end; wi++) {
        float *col = j->buf + wi * j->per_worker, *tmp = col + (j->depthwise ? w->img_size : j->kk * p);
        int32_t *acc = (int32_t *)(tmp + (j->depthwise ? p : mg * p));
        for (int64_t pr = j->pairs * wi / j->workers; pr < j->pairs * (wi + 1) / j->workers; pr++) {
            if (j->depthwise) { /* plane pr = (image, output channel m): direct taps, exact in float */
                int64_t n = pr / g->c_out, m = pr % g->c_out, s = w->s[2];
                const char *xc = (const char *)j->k->in[0].data + (n * g->c_in + m / mg) * w->img_size * es;
                float *xf = col;
                if (dt == BRAID_DTYPE_UINT8) for (int64_t i = 0; i < w->img_size; i++) xf[i] = (float)((const uint8_t *)xc)[i] - j->xzp;
                else for (int64_t i = 0; i < w->img_size; i++) xf[i] = (float)((const int8_t *)xc)[i] - j->xzp;
                memset(tmp, 0, (size_t)p * sizeof *tmp);
                const float *wm = j->wf + m * w->taps;
                WIN_FOREACH(w, 1, {
                    if (!ok) continue;
                    const float wv = wm[t], *src = xf + irow + off_w;
                    float *dst = tmp + grow;
                    if (s == 1) for (int64_t q = wlo; q < whi; q++) dst[q] += wv * src[q];
                    else for (int64_t q = wlo; q < whi; q++) dst[q] += wv * src[q * s];
                })
                for (int64_t q = 0; q < p; q++) acc[q] = (int32_t)tmp[q];
                qepi e = *j->e; /* one channel: its multiplier and bias are row constants */
                e.mult = e.mult ? e.mult + m * e.mi : NULL;
                e.ibias = e.ibias ? e.ibias + m * e.bi : NULL;
                epilogue(&e, acc, 1, p, j->k->out[0].data, pr * p);
                continue;
            }
            int64_t n = pr / g->group, gi = pr % g->group;
            const char *xg = (const char *)j->k->in[0].data + (n * g->c_in + gi * cg) * w->img_size * es;
            im2col(dt, xg, j->xzp, cg, w, col);
            int64_t ch0 = gi * mg, yoff = (n * g->c_out + ch0) * p;
            int direct = j->e->kind == BD_QEPI_INT32 && !j->e->ibias;
            int32_t *c = direct ? (int32_t *)j->k->out[0].data + yoff : acc;
            gemm_exact(j->threads, 0, 0, mg, p, j->kk, j->wf + ch0 * j->kk, j->kk, col, p, j->wmax, j->xmax, c, p, tmp);
            if (direct) continue;
            qepi e = *j->e;
            e.mult = e.mult ? e.mult + ch0 * e.mi : NULL;
            e.ibias = e.ibias ? e.ibias + ch0 * e.bi : NULL;
            epilogue(&e, acc, mg, p, j->k->out[0].data, yoff);
        }
    }
}

#define CONV_MIN_WORK (1 << 21) /* multiply-adds per worker worth a thread */

static braid_status conv(const bd_kernel *k, const bd_qgemm_io *io)
{
    braid_status st = BRAID_OK;
    const bd_tensor *x = &k->in[io->a], *wt = &k->in[io->b];
    const bd_tensor *xzp = &k->in[io->azp], *wzp = &k->in[io->bzp];
    float *wf = NULL, *zw = NULL, *sc = NULL, *mult = NULL, *buf = NULL;
    bd_conv_geom g;
    bd_tensor xf = *x, wff = *wt;
    xf.dtype = wff.dtype = BRAID_DTYPE_FLOAT;
    bd_node cn = *k->node;
    cn.op = BD_OP_Conv;
    BD_TRY(bd_conv_geometry(&cn, &xf, &wff, NULL, &g, k->err));
    win3 w;
    win_make(&g, 0, &w);
    int64_t cg = g.c_in / g.group, mg = g.c_out / g.group, kk = cg * w.taps, p = w.grid_size, m = g.c_out;
    wf = bd_malloc((size_t)(m * kk + 1) * sizeof *wf);
    zw = bd_malloc((size_t)(m + 1) * sizeof *zw);
    sc = bd_malloc((size_t)(m + 1) * sizeof *sc);
    mult = bd_malloc((size_t)(m + 1) * sizeof *mult);
    BD_CHECK_ALLOC(k->err, wf && zw && sc && mult);
    int has_wzp = wzp->dtype != BRAID_DTYPE_UNDEFINED && wzp->data;
    for (int64_t i = 0; i < m; i++) {
        int64_t zi = has_wzp && bd_numel(wzp) > 1 ? i : 0;
        zw[i] = has_wzp ? bd_q_value_at(wzp->dtype, wzp->data, zi) : 0.0f;
        sc[i] = io->bs >= 0 ? bd_q_scale_at(k->in[io->bs].dtype, k->in[io->bs].data, bd_numel(&k->in[io->bs]) > 1 ? i : 0)
                            : 1.0f;
    }
    to_float(wt->dtype, wt->data, m, kk, zw, NULL, wf);
    float x_zp = xzp->dtype != BRAID_DTYPE_UNDEFINED && xzp->data ? bd_q_value_at(xzp->dtype, xzp->data, 0) : 0.0f;
    float a_scale = io->as >= 0 ? bd_q_scale_at(k->in[io->as].dtype, k->in[io->as].data, 0) : 1.0f;
    qepi e;
    epi_make(k, io, a_scale, sc, m, mult, NULL, &e);
    e.mi = 1, e.mj = 0;
    if (io->bias >= 0 && k->in[io->bias].data) e.ibias = k->in[io->bias].data, e.bi = 1, e.bj = 0;
    double xmax = dev_bound(x->dtype, &x_zp, 1), wmax = dev_bound(wt->dtype, zw, has_wzp ? m : 0);
    int depthwise = cg == 1 && (double)w.taps * xmax * wmax < EXACT;
    int64_t pairs = depthwise ? g.n * m : g.n * g.group, work = (depthwise ? w.taps : mg * kk) * p;
    if (!depthwise) BD_TRY(check_dims(mg, p, kk, k->err));
    int64_t workers = BD_MIN((int64_t)BD_MAX(k->threads, 1), pairs);
    workers = BD_MAX((int64_t)1, BD_MIN(workers, pairs * work / CONV_MIN_WORK));
    /* per worker: the columns (or the converted plane), a float result and an int32 one */
    int64_t per = depthwise ? w.img_size + 2 * p : kk * p + 2 * mg * p;
    buf = bd_malloc((size_t)(workers * per + 1) * sizeof *buf);
    BD_CHECK_ALLOC(k->err, buf);
    conv_job j = {k, &g, &w, &e, wf, x_zp, xmax, wmax, buf, per, pairs, workers, kk, p,
                  workers > 1 ? 1 : k->threads, depthwise};
    if (pairs > 0 && p > 0) bd_parallel_for((int)workers, workers, 1, conv_worker, &j);
fail:
    bd_free(wf), bd_free(zw), bd_free(sc), bd_free(mult), bd_free(buf);
    return st;
}

braid_status bd_cpu_qgemm(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    bd_qgemm_io io = bd_qgemm_io_of(k->node->op);
    if (io.conv) return conv(k, &io);
    return matmul(k, &io);
}
