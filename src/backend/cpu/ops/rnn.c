/* rnn.c: CPU kernels of the rnn op family: LSTM, GRU, RNN and com.microsoft
 * DynamicQuantizeLSTM. Per direction: the input projection of every time
 * step is one GEMM (OpenBLAS); each step is one GEMM of the state by R (a
 * GEMV at batch 1; GRU without linear_before_reset needs a second for the
 * reset state) and one pass of the gate formulas of ops/rnn.h over the batch.
 * float16 and bfloat16 are computed in float (their inputs converted once
 * per run, outputs rounded once); double in double. DynamicQuantizeLSTM
 * quantizes X once and the state at every step to uint8 as onnxruntime does
 * and accumulates the integer products exactly in int32. All scratch is one
 * allocation per run; nothing is allocated per step. */
/* Vectorize the gate loops even in -O2 builds; selects need no FP traps. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/scratch.h"

#include <cblas.h>
#include <string.h>

#include "backend/cpu/parallel.h"
#include "backend/cpu/sgemm.h"
#include "panel.h"
#include "util/dtype.h"
#include "vmath.h"
/* The float gate formulas with vmath's exp and tanh, which vectorize. */
#define BD_RNN_EXPF bd_vexpf
#define BD_RNN_TANHF bd_vtanhf
#include "ops/rnn.h"

enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P, IN_WS, IN_WZ, IN_RS, IN_RZ };

_Static_assert(BD_RNN_PANEL == BD_PANEL_W, "ops/rnn.h packs R for panel.h");
/* Batches up to this size multiply the state by R packed in panels (where the
 * CPU has AVX2 and FMA); bigger ones amortize OpenBLAS's packing. */
#define PANEL_ROWS 64

/* Steps whose GEMM is smaller than this (multiply-adds) run on one thread:
 * handing work to helper threads costs more than it saves. */
#define PAR_MACS (1 << 18)

typedef struct rnn_run {
    const bd_kernel *k;
    const bd_rnn_params *p;
    bd_rnn_cell cell;
    int dt, real;           /* the tensors' dtype; FLOAT or DOUBLE, the one computed in */
    size_t rs;              /* sizeof the computed type */
    int64_t seq, batch, isz, H, G, GH, od;
    int d, o, rev;          /* weight direction, output direction, reverse pass */
    const int32_t *lens;    /* NULL: every entry has length seq */
    int64_t steps;          /* the longest entry */
    /* scratch, in the computed type */
    void *xp;               /* (seq * batch, GH): X W^T, rows as bd_rnn_xrow */
    void *s;                /* (batch, GH): the state times R^T this step */
    void *h, *c, *rh;       /* (batch, H): state, cell state, GRU's r * h */
    void *bias, *rbh, *peep;/* (GH) Wb + Rb (GRU with linear_before_reset: Wb only for h); (H) Rb of h; (3H) */
    void *xc, *wc;          /* X, W[d] converted (float16, bfloat16), else NULL */
    void *rtc;              /* R[d]^T (H, GH) made here (R not transposed at load, or converted), else NULL */
    const void *x, *w, *rt; /* what the GEMMs read: X, W[d] (GH, isz), R[d]^T (H, GH) */
    const float *rd;        /* R[d] (GH, H) itself, read in place by the step product (rdirect) */
    int rdirect;            /* float R not transposed nor packed at load, few steps: products of R^T in place */
    const float *pk;        /* R[d]^T in panels (ops/rnn.h), when the step product uses them */
    float *pks;             /* scratch for them when R was not packed at load */
    int panels;             /* the step product uses panels */
    /* DynamicQuantizeLSTM */
    uint8_t *qx, *qh;       /* quantized X and state */
    int16_t *wq, *rq;       /* W[d] - zero point (isz, 4H), R[d] - zero point (H, 4H) */
    const float *wsc, *rsc; /* per-column scales (4H) */
    float *sc;              /* (4H) scratch: the scales of one product */
    int64_t s_at;           /* the step being computed */
} rnn_run;

static int64_t len_of(const rnn_run *u, int64_t b) { return u->lens ? u->lens[b] : u->seq; }

/* n elements of t from element off on, into dst as the computed type. */
static void load(const rnn_run *u, const bd_tensor *t, int64_t off, int64_t n, void *dst)
{
    if (t->dtype == u->real) {
        memcpy(dst, (const char *)t->data + (size_t)off * u->rs, (size_t)n * u->rs);
        return;
    }
    float *f = dst; /* float16 and bfloat16 go to float */
    const uint16_t *src = (const uint16_t *)t->data + off;
    for (int64_t i = 0; i < n; i++)
        f[i] = t->dtype == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(src[i]) : bd_bf16_to_float(src[i]);
}

/* n computed-type elements of src into t from element off on, rounded once. */
static void store(const rnn_run *u, bd_tensor *t, int64_t off, const void *src, int64_t n)
{
    if (t->dtype == u->real) {
        memcpy((char *)t->data + (size_t)off * u->rs, src, (size_t)n * u->rs);
        return;
    }
    const float *f = src;
    uint16_t *dst = (uint16_t *)t->data + off;
    for (int64_t i = 0; i < n; i++)
        dst[i] = t->dtype == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(f[i]) : bd_float_to_bf16(f[i]);
}

static void zero(bd_tensor *t, int64_t off, int64_t n)
{
    memset((char *)t->data + (size_t)off * bd_dtype_size(t->dtype), 0, (size_t)n * bd_dtype_size(t->dtype));
}

static void *at(const rnn_run *u, const void *base, int64_t i) { return (char *)base + (size_t)i * u->rs; }

/* ---- GEMMs ---------------------------------------------------------------- */

/* Batches up to this size multiply the state by R as one GEMV per entry:
 * OpenBLAS's GEMM packs R on every call, which costs more than the product
 * of a few rows (measured: sgemm of M = 1 to 4 rows by a 512 x 128 R costs
 * what 4 GEMVs do). */
#define GEMV_ROWS 8
/* GEMV columns per call: a fixed split, so that each output comes from the
 * same OpenBLAS call whatever the thread count. */
#define GEMV_BLOCK 256

typedef struct gemv_job {
    const rnn_run *u;
    int64_t M, N, K, ldc;
    const void *a, *b;
    void *c;
} gemv_job;

/* Column blocks [b0, b1) of every row of C = A B^T, one GEMV per row of A. */
static void gemv_cols(void *ctx, int64_t b0, int64_t b1)
{
    const gemv_job *j = ctx;
    int64_t n0 = b0 * GEMV_BLOCK, n1 = BD_MIN(b1 * GEMV_BLOCK, j->N);
    for (int64_t m = 0; m < j->M; m++) {
        if (j->u->real == BRAID_DTYPE_FLOAT)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)(n1 - n0), (int)j->K, 1.0f,
                        (const float *)j->b + n0 * j->K, (int)j->K, (const float *)j->a + m * j->K, 1, 0.0f,
                        (float *)j->c + m * j->ldc + n0, 1);
        else
            cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)(n1 - n0), (int)j->K, 1.0,
                        (const double *)j->b + n0 * j->K, (int)j->K, (const double *)j->a + m * j->K, 1, 0.0,
                        (double *)j->c + m * j->ldc + n0, 1);
    }
}

/* C (M, N; rows ldc apart) = A (M, K) B^T, B (N, K) row-major. The same
 * bits for any thread count: a fixed split of the rows of B, or
 * bd_sgemm's fixed tiles. */
static void gemm_nt(const rnn_run *u, int64_t M, int64_t N, int64_t K, const void *a, const void *b, void *c,
                    int64_t ldc)
{
    if (M == 0 || N == 0) return;
    if (K == 0) {
        for (int64_t m = 0; m < M; m++) memset(at(u, c, m * ldc), 0, (size_t)N * u->rs);
        return;
    }
    int threads = M * N * K >= PAR_MACS ? u->k->threads : 1;
    /* A few rows against B^T: braid's dot-product kernel (bd_sgemm) where the
     * CPU has one, which reads B once; OpenBLAS's GEMV of a Prescott core took
     * 14 us of a 384 x 128 product (akiki_vad's input projection). */
    if (u->real == BRAID_DTYPE_FLOAT && bd_sgemm_cpu_kernel() != BD_SGEMM_OPENBLAS) {
        bd_sgemm(threads, 0, 1, M, N, K, 1.0f, a, K, b, K, 0.0f, c, ldc);
    } else if (M <= GEMV_ROWS) {
        gemv_job j = {u, M, N, K, ldc, a, b, c};
        bd_parallel_for(threads, BD_CEIL_DIV(N, GEMV_BLOCK), 1, gemv_cols, &j);
    } else if (u->real == BRAID_DTYPE_FLOAT) {
        bd_sgemm(threads, 0, 1, M, N, K, 1.0f, a, K, b, K, 0.0f, c, ldc);
    } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0, a, (int)K, b, (int)K, 0.0,
                    c, (int)ldc);
    }
}

/* Column blocks [b0, b1) of every row of C = A RT, one GEMV per row of A. */
static void gemv_t_cols(void *ctx, int64_t b0, int64_t b1)
{
    const gemv_job *j = ctx;
    int64_t n0 = b0 * GEMV_BLOCK, n1 = BD_MIN(b1 * GEMV_BLOCK, j->N);
    for (int64_t m = 0; m < j->M; m++) {
        if (j->u->real == BRAID_DTYPE_FLOAT)
            cblas_sgemv(CblasRowMajor, CblasTrans, (int)j->K, (int)(n1 - n0), 1.0f, (const float *)j->b + n0,
                        (int)j->u->GH, (const float *)j->a + m * j->K, 1, 0.0f, (float *)j->c + m * j->ldc + n0, 1);
        else
            cblas_dgemv(CblasRowMajor, CblasTrans, (int)j->K, (int)(n1 - n0), 1.0, (const double *)j->b + n0,
                        (int)j->u->GH, (const double *)j->a + m * j->K, 1, 0.0, (double *)j->c + m * j->ldc + n0, 1);
    }
}

/* The state's product: C (M, N; rows ldc apart) = A (M, H) RT[:, 0:N], where
 * RT points at a column of R^T (H rows GH apart). */
static void gemm_rt(const rnn_run *u, int64_t M, int64_t N, const void *a, const void *rt, void *c, int64_t ldc)
{
    int64_t K = u->H;
    if (M == 0 || N == 0) return;
    int threads = M * N * K >= PAR_MACS ? u->k->threads : 1;
    /* braid's kernel reads a few rows' B in place (nothing packed). */
    if (u->real == BRAID_DTYPE_FLOAT && bd_sgemm_kernel() != BD_SGEMM_OPENBLAS) {
        bd_sgemm(threads, 0, 0, M, N, K, 1.0f, a, K, rt, u->GH, 0.0f, c, ldc);
    } else if (M <= GEMV_ROWS) {
        gemv_job j = {u, M, N, K, ldc, a, rt, c};
        bd_parallel_for(threads, BD_CEIL_DIV(N, GEMV_BLOCK), 1, gemv_t_cols, &j);
    } else if (u->real == BRAID_DTYPE_FLOAT) {
        bd_sgemm(threads, 0, 0, M, N, K, 1.0f, a, K, rt, u->GH, 0.0f, c, ldc);
    } else {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0, a, (int)K, rt,
                    (int)u->GH, 0.0, c, (int)ldc);
    }
}

/* DynamicQuantizeLSTM: rows [m0, m1) of C (float, N columns) = the uint8
 * rows of qa (K columns, zero point za) times the zero-point-free weights
 * wq (K, N), each int32 sum times scale[n]. */
typedef struct qgemm_job {
    const uint8_t *qa;
    int za;
    const int16_t *wq;
    const float *scale;
    float *c;
    int64_t K, N;
} qgemm_job;

static void qgemm_rows(void *ctx, int64_t m0, int64_t m1)
{
    const qgemm_job *j = ctx;
    for (int64_t m = m0; m < m1; m++) {
        int32_t *acc = (int32_t *)(j->c + m * j->N); /* summed in place, then read back as float */
        memset(acc, 0, (size_t)j->N * sizeof *acc);
        const uint8_t *a = j->qa + m * j->K;
        for (int64_t kk = 0; kk < j->K; kk++) {
            int32_t av = (int32_t)a[kk] - j->za;
            if (!av) continue;
            const int16_t *w = j->wq + kk * j->N;
            for (int64_t n = 0; n < j->N; n++) acc[n] += av * (int32_t)w[n];
        }
        for (int64_t n = 0; n < j->N; n++) j->c[m * j->N + n] = (float)acc[n] * j->scale[n];
    }
}

/* Quantizes n floats of src (contiguous) with onnxruntime's parameters for
 * the range [lo, hi]; *scale gets the scale, returns the zero point. */
static int quantize(const float *src, int64_t n, float lo, float hi, uint8_t *dst, float *scale)
{
    int zp;
    bd_rnn_qparams(lo, hi, scale, &zp);
    for (int64_t i = 0; i < n; i++) dst[i] = (uint8_t)bd_rnn_quantize(src[i], *scale, zp);
    return zp;
}

static void qgemm(const rnn_run *u, int64_t M, const uint8_t *qa, int za, float sa, const int16_t *wq, int64_t K,
                  const float *wscale, float *c)
{
    int64_t N = 4 * u->H;
    for (int64_t n = 0; n < N; n++) u->sc[n] = sa * wscale[n];
    qgemm_job j = {qa, za, wq, u->sc, c, K, N};
    bd_parallel_for(M * N * K >= PAR_MACS ? u->k->threads : 1, M, 1, qgemm_rows, &j);
}

/* ---- the gates --------------------------------------------------------------- */

/* One batch entry's units, for each cell. The pointers do not alias, so the
 * loops vectorize; the _std variants fix the activations to the defaults
 * (LSTM sigmoid, tanh, tanh; GRU sigmoid, tanh; RNN tanh) so that the
 * compiler folds the formulas' switch away. */
#define ROW_ATTR static inline __attribute__((always_inline))
#define DEF_ROWS(R, S)                                                                             \
    ROW_ATTR void lstm_row_##S(const bd_rnn_cell *k, int64_t H, const R *restrict xp, const R *restrict sg, \
                               const R *restrict bs, const R *restrict pe, R *restrict c, R *restrict h) \
    {                                                                                              \
        for (int64_t j = 0; j < H; j++)                                                            \
            bd_lstm_unit##S(k, xp[j] + sg[j] + bs[j], xp[H + j] + sg[H + j] + bs[H + j],           \
                            xp[2 * H + j] + sg[2 * H + j] + bs[2 * H + j],                         \
                            xp[3 * H + j] + sg[3 * H + j] + bs[3 * H + j], pe[j], pe[H + j], pe[2 * H + j], \
                            c[j], &c[j], &h[j]);                                                   \
    }                                                                                              \
    /* GRU's r * h (before the second GEMM, without linear_before_reset). */                      \
    ROW_ATTR void gru_reset_row_##S(const bd_rnn_cell *k, int64_t H, const R *restrict xp,        \
                                    const R *restrict sg, const R *restrict bs, const R *restrict h, \
                                    R *restrict rh)                                                \
    {                                                                                              \
        for (int64_t j = 0; j < H; j++) rh[j] = bd_gru_reset##S(k, xp[H + j] + sg[H + j] + bs[H + j]) * h[j]; \
    }                                                                                              \
    ROW_ATTR void gru_row_##S(const bd_rnn_cell *k, int64_t H, const R *restrict xp, const R *restrict sg, \
                              const R *restrict bs, const R *restrict rbh, R *restrict h)          \
    {                                                                                              \
        if (k->linear_before_reset)                                                                \
            for (int64_t j = 0; j < H; j++) {                                                      \
                R r = bd_gru_reset##S(k, xp[H + j] + sg[H + j] + bs[H + j]);                       \
                R gh = xp[2 * H + j] + bs[2 * H + j] + r * (sg[2 * H + j] + rbh[j]);               \
                h[j] = bd_gru_unit##S(k, xp[j] + sg[j] + bs[j], gh, h[j]);                         \
            }                                                                                      \
        else                                                                                       \
            for (int64_t j = 0; j < H; j++)                                                        \
                h[j] = bd_gru_unit##S(k, xp[j] + sg[j] + bs[j], xp[2 * H + j] + sg[2 * H + j] + bs[2 * H + j], h[j]); \
    }                                                                                              \
    ROW_ATTR void rnn_row_##S(const bd_rnn_cell *k, int64_t H, const R *restrict xp, const R *restrict sg, \
                              const R *restrict bs, R *restrict h)                                 \
    {                                                                                              \
        for (int64_t j = 0; j < H; j++) h[j] = bd_rnn_unit##S(k, xp[j] + sg[j] + bs[j]);           \
    }                                                                                              \
    /* One entry at time t: phase 1 is GRU's r * h, phase 2 the state update.                    \
     * std (a constant where inlined): the op's default activations. */                           \
    ROW_ATTR void entry_##S(const rnn_run *u, int phase, int std, int64_t b, int64_t t)           \
    {                                                                                              \
        int64_t H = u->H, GH = u->GH;                                                              \
        const R *xp = (const R *)u->xp + bd_rnn_xrow(u->p->layout, t, b, u->seq, u->batch) * GH;   \
        const R *sg = (const R *)u->s + b * GH, *bs = u->bias;                                     \
        R *h = (R *)u->h + b * H;                                                                  \
        bd_rnn_cell k = u->cell;                                                                   \
        if (std) k.f[1].kind = k.f[2].kind = BD_RNN_TANH;                                          \
        if (phase == 1) {                                                                          \
            if (std) k.f[0].kind = BD_RNN_SIGMOID;                                                 \
            gru_reset_row_##S(&k, H, xp, sg, bs, h, (R *)u->rh + b * H);                           \
        } else if (u->p->cell == BD_RNN_LSTM) {                                                    \
            if (std) k.f[0].kind = BD_RNN_SIGMOID;                                                 \
            lstm_row_##S(&k, H, xp, sg, bs, u->peep, (R *)u->c + b * H, h);                        \
        } else if (u->p->cell == BD_RNN_GRU) {                                                     \
            if (std) k.f[0].kind = BD_RNN_SIGMOID;                                                 \
            gru_row_##S(&k, H, xp, sg, bs, u->rbh, h);                                             \
        } else {                                                                                   \
            if (std) k.f[0].kind = BD_RNN_TANH;                                                    \
            rnn_row_##S(&k, H, xp, sg, bs, h);                                                     \
        }                                                                                          \
    }
DEF_ROWS(float, f)
DEF_ROWS(double, d)

/* Whether the cell's activations are the op's defaults. */
static int std_acts(const rnn_run *u)
{
    const bd_rnn_fn *f = u->cell.f;
    switch (u->p->cell) {
    case BD_RNN_LSTM: return f[0].kind == BD_RNN_SIGMOID && f[1].kind == BD_RNN_TANH && f[2].kind == BD_RNN_TANH;
    case BD_RNN_GRU: return f[0].kind == BD_RNN_SIGMOID && f[1].kind == BD_RNN_TANH;
    default: return f[0].kind == BD_RNN_TANH;
    }
}

/* Rows [b0, b1) of the batch at step u->s_at: the entries still running get
 * their gates, state and Y row. Built twice on x86-64 with GCC, for AVX2+FMA
 * and for the baseline, and picked when the program loads (the
 * transcendental gates are most of a small step's time). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void gates_range(const rnn_run *u, int phase, int64_t b0, int64_t b1)
{
    bd_tensor *y = u->k->n_out > 0 && u->k->node->out[0] >= 0 ? &u->k->out[0] : NULL;
    int std = std_acts(u);
    for (int64_t b = b0; b < b1; b++) {
        int64_t t = bd_rnn_time(u->rev, u->s_at, len_of(u, b));
        if (t < 0) continue;
        if (u->real == BRAID_DTYPE_FLOAT) {
            if (std) entry_f(u, phase, 1, b, t);
            else entry_f(u, phase, 0, b, t);
        } else entry_d(u, phase, 0, b, t);
        if (phase == 2 && y)
            store(u, y, bd_rnn_yoff(u->p->layout, t, u->o, b, u->seq, u->od, u->batch, u->H), at(u, u->h, b * u->H),
                  u->H);
    }
}

typedef struct gate_job {
    const rnn_run *u;
    int phase;
} gate_job;

static void gate_rows(void *ctx, int64_t b0, int64_t b1)
{
    const gate_job *j = ctx;
    gates_range(j->u, j->phase, b0, b1);
}

static void gates(const rnn_run *u, int phase)
{
    gate_job j = {u, phase};
    int64_t work = u->batch * u->GH * 20;
    bd_parallel_for(work >= PAR_MACS ? u->k->threads : 1, u->batch, 1, gate_rows, &j);
}

/* ---- one direction ------------------------------------------------------------- */

static void minmax(const float *v, int64_t n, float *lo, float *hi)
{
    for (int64_t i = 0; i < n; i++) {
        *lo = v[i] < *lo ? v[i] : *lo;
        *hi = v[i] > *hi ? v[i] : *hi;
    }
}

typedef struct panel_job {
    const rnn_run *u;
    const float *a;
    int64_t c0, c1;
    int64_t p0, p1; /* the panels holding columns [c0, c1) */
    int parts, wide; /* wide: AVX-512 for lone rows (bd_panel_one) */
} panel_job;

/* Part q of the panels: a fixed share, the same thread's at every step
 * (bd_parallel_parts), walked forwards on even steps and backwards on odd
 * ones. R^T's share of each core then comes from that core's L2 from step to
 * step where it fits, and when it does not quite, the panels the last step
 * read last are read first (one direction every step evicts each panel just
 * before it is read again). Which thread runs a panel and in what order the
 * panels run change no output's bits: each column is its own FMA chain. */
static void panel_part(void *ctx, int64_t q, int64_t q1)
{
    (void)q1;
    const panel_job *j = ctx;
    float tmp[PANEL_ROWS * BD_PANEL_W];
    int64_t n = j->p1 - j->p0, b0 = j->p0 + q * n / j->parts, b1 = j->p0 + (q + 1) * n / j->parts;
    int back = (int)(j->u->s_at & 1);
    for (int64_t i = b0; i < b1; i++) {
        int64_t pn = back ? b1 - 1 - (i - b0) : i;
        bd_panel_gemm(j->a, j->u->H, j->u->batch, j->u->H, j->u->pk, pn, pn + 1, j->c0, j->c1, j->u->s, j->u->GH,
                      tmp, j->wide);
    }
}

/* Columns [c0, c1) of S = a (batch, H) R^T from R's panels. */
static void panel_product(const rnn_run *u, const void *a, int64_t c0, int64_t c1)
{
    panel_job j = {u, a, c0, c1, c0 / BD_PANEL_W, BD_CEIL_DIV(c1, BD_PANEL_W), 1, bd_cpu_vec_level() == 2};
    int64_t threads = u->batch * (c1 - c0) * u->H >= PAR_MACS ? u->k->threads : 1;
    j.parts = (int)BD_MAX((int64_t)1, BD_MIN(BD_MIN(threads, (int64_t)64), j.p1 - j.p0));
    bd_parallel_parts(j.parts, panel_part, &j);
}

/* The recurrent product S = h R^T of step u->s_at (phase 1: GRU's z and r
 * columns; phase 2: its h columns from r * h). */
static void recur(rnn_run *u, int phase)
{
    int64_t H = u->H, GH = u->GH;
    if (u->p->quantized) {
        /* The state quantized over the whole batch, as onnxruntime (one
         * intra-op thread) does: its range covers the rows it would hold, the
         * initial state at step 0 and then the rows still running, or every
         * started row when Y is not an output. */
        const float *h = u->h;
        int y = u->k->n_out > 0 && u->k->node->out[0] >= 0;
        float lo = 0, hi = 0;
        for (int64_t b = 0; b < u->batch; b++) {
            int64_t len = len_of(u, b);
            if (u->s_at == 0 || u->s_at <= len || (!y && len > 0)) minmax(h + b * H, H, &lo, &hi);
        }
        float sa;
        int za = quantize(h, u->batch * H, lo, hi, u->qh, &sa);
        qgemm(u, u->batch, u->qh, za, sa, u->rq, H, u->rsc, u->s);
        return;
    }
    if (u->pk) {
        if (u->p->cell == BD_RNN_GRU && !u->cell.linear_before_reset) {
            if (phase == 1) panel_product(u, u->h, 0, 2 * H);
            else panel_product(u, u->rh, 2 * H, GH);
        } else panel_product(u, u->h, 0, GH);
        return;
    }
    if (u->rdirect) { /* S = h R^T with R (GH, H): A B^T */
        if (u->p->cell == BD_RNN_GRU && !u->cell.linear_before_reset) {
            if (phase == 1) gemm_nt(u, u->batch, 2 * H, H, u->h, u->rd, u->s, GH);
            else gemm_nt(u, u->batch, H, H, u->rh, u->rd + 2 * H * H, (float *)u->s + 2 * H, GH);
        } else gemm_nt(u, u->batch, GH, H, u->h, u->rd, u->s, GH);
        return;
    }
    const char *rt = u->rt;
    if (u->p->cell == BD_RNN_GRU && !u->cell.linear_before_reset) {
        if (phase == 1) gemm_rt(u, u->batch, 2 * H, u->h, rt, u->s, GH);
        else gemm_rt(u, u->batch, H, u->rh, rt + (size_t)(2 * H) * u->rs, at(u, u->s, 2 * H), GH);
        return;
    }
    gemm_rt(u, u->batch, GH, u->h, rt, u->s, GH);
}

static braid_status run_dir(rnn_run *u)
{
    const bd_kernel *k = u->k;
    const bd_rnn_params *p = u->p;
    int64_t H = u->H, GH = u->GH, d = u->d, rows = u->seq * u->batch;
    u->cell = p->dir[d];
    u->rev = bd_rnn_reverse(p->direction, (int)d);
    /* Biases and peepholes of this direction (0 when absent). */
    memset(u->bias, 0, (size_t)GH * u->rs);
    memset(u->rbh, 0, (size_t)H * u->rs);
    memset(u->peep, 0, (size_t)3 * H * u->rs);
    if (k->n_in > IN_B && k->in[IN_B].data) {
        load(u, &k->in[IN_B], d * 2 * GH, GH, u->bias);
        load(u, &k->in[IN_B], d * 2 * GH + GH, GH, u->s); /* Rb, through the step buffer */
        int lbr = p->cell == BD_RNN_GRU && u->cell.linear_before_reset;
        for (int64_t j = 0; j < GH; j++) {
            if (lbr && j >= 2 * H) continue;
            if (u->real == BRAID_DTYPE_FLOAT) ((float *)u->bias)[j] += ((float *)u->s)[j];
            else ((double *)u->bias)[j] += ((double *)u->s)[j];
        }
        if (lbr) memcpy(u->rbh, at(u, u->s, 2 * H), (size_t)H * u->rs);
    }
    if (p->cell == BD_RNN_LSTM && k->n_in > IN_P && k->in[IN_P].data) load(u, &k->in[IN_P], d * 3 * H, 3 * H, u->peep);
    /* The initial state. */
    for (int i = 0; i < 2; i++) {
        void *dst = i ? u->c : u->h;
        int in = i ? IN_C0 : IN_H0;
        if (i && p->cell != BD_RNN_LSTM) break;
        if (k->n_in > in && k->in[in].data)
            for (int64_t b = 0; b < u->batch; b++)
                load(u, &k->in[in], bd_rnn_hoff(p->layout, d, b, p->dirs, u->batch, H), H, at(u, dst, b * H));
        else memset(dst, 0, (size_t)(u->batch * H) * u->rs);
    }
    /* The input projection of every step. */
    if (p->quantized) {
        const bd_tensor *w = &k->in[IN_W], *wz = &k->in[IN_WZ], *rz = &k->in[IN_RZ];
        int per_w = wz->rank == 2, per_r = rz->rank == 2, sgn = w->dtype == BRAID_DTYPE_INT8;
        const uint8_t *wd = (const uint8_t *)w->data + d * u->isz * GH;
        const uint8_t *rd = (const uint8_t *)k->in[IN_R].data + d * H * GH;
        const uint8_t *wzd = (const uint8_t *)wz->data + d * (per_w ? GH : 1);
        const uint8_t *rzd = (const uint8_t *)rz->data + d * (per_r ? GH : 1);
        for (int64_t i = 0; i < u->isz * GH; i++) {
            int64_t n = i % GH;
            int v = sgn ? (int8_t)wd[i] : wd[i], z = sgn ? (int8_t)wzd[per_w ? n : 0] : wzd[per_w ? n : 0];
            u->wq[i] = (int16_t)(v - z);
        }
        for (int64_t i = 0; i < H * GH; i++) {
            int64_t n = i % GH;
            int v = sgn ? (int8_t)rd[i] : rd[i], z = sgn ? (int8_t)rzd[per_r ? n : 0] : rzd[per_r ? n : 0];
            u->rq[i] = (int16_t)(v - z);
        }
        const bd_tensor *ws = &k->in[IN_WS], *rs = &k->in[IN_RS];
        float *wsc = u->sc + GH, *rsc = u->sc + 2 * GH; /* per-column scales of this direction */
        for (int64_t n = 0; n < GH; n++) {
            wsc[n] = ((const float *)ws->data)[ws->rank == 2 ? d * GH + n : d];
            rsc[n] = ((const float *)rs->data)[rs->rank == 2 ? d * GH + n : d];
        }
        u->wsc = wsc;
        u->rsc = rsc;
        /* X over the rows of the steps that run (t < the longest entry), as onnxruntime does. */
        const float *x = k->in[IN_X].data;
        float lo = 0, hi = 0;
        for (int64_t t = 0; t < u->steps; t++)
            for (int64_t b = 0; b < u->batch; b++)
                minmax(x + bd_rnn_xrow(p->layout, t, b, u->seq, u->batch) * u->isz, u->isz, &lo, &hi);
        float sx;
        int zx = quantize(x, rows * u->isz, lo, hi, u->qx, &sx);
        qgemm(u, rows, u->qx, zx, sx, u->wq, u->isz, u->wsc, u->xp);
    } else {
        const bd_tensor *r = &k->in[IN_R];
        if (u->wc) load(u, &k->in[IN_W], d * GH * u->isz, GH * u->isz, u->wc);
        int packed = u->panels && p->pack && r->data == p->pack_of; /* at load */
        u->rd = u->rdirect ? (const float *)r->data + d * GH * H : NULL; /* read in place: nothing to make */
        if (!u->rdirect && !packed && u->rtc && p->r_transposed) load(u, r, d * H * GH, H * GH, u->rtc);
        else if (!u->rdirect && !packed && u->rtc)
            for (int64_t n = 0; n < GH; n++) { /* row n of R[d] is column n of R^T */
                load(u, r, (d * GH + n) * H, H, u->s);
                for (int64_t j = 0; j < H; j++)
                    memcpy(at(u, u->rtc, j * GH + n), at(u, u->s, j), u->rs);
            }
        u->w = u->wc ? u->wc : at(u, k->in[IN_W].data, d * GH * u->isz);
        u->rt = u->rtc ? u->rtc : at(u, r->data, d * H * GH);
        u->pk = NULL;
        if (u->panels) { /* the step product from panels (never with rdirect): packed at load, else here */
            int64_t per = bd_rnn_panels(GH) * H * BD_RNN_PANEL;
            if (packed) u->pk = p->pack + d * per;
            else {
                if (u->rtc || p->r_transposed) bd_rnn_pack(u->rt, GH, 1, H, GH, u->pks);
                else bd_rnn_pack(u->rt, 1, H, H, GH, u->pks); /* R[d] (GH, H): R^T(k, n) = R[n][k] */
                u->pk = u->pks;
            }
        }
        gemm_nt(u, rows, GH, u->isz, u->x, u->w, u->xp, GH);
    }
    /* The recurrence. */
    int two = p->cell == BD_RNN_GRU && !u->cell.linear_before_reset;
    for (int64_t s = 0; s < u->steps; s++) {
        u->s_at = s;
        recur(u, 1);
        if (two) {
            gates(u, 1);
            recur(u, 2);
        }
        gates(u, 2);
    }
    /* Y is 0 past each entry's length; Y_h and Y_c hold the last state (0 for
     * an entry of length 0). */
    bd_tensor *y = k->n_out > 0 && k->node->out[0] >= 0 ? &k->out[0] : NULL;
    for (int64_t b = 0; b < u->batch; b++) {
        int64_t len = len_of(u, b);
        for (int64_t t = len; y && t < u->seq; t++)
            zero(y, bd_rnn_yoff(p->layout, t, u->o, b, u->seq, u->od, u->batch, H), H);
        for (int i = 1; i <= 2; i++) {
            if (k->n_out <= i || k->node->out[i] < 0) continue;
            int64_t off = bd_rnn_hoff(p->layout, u->o, b, u->od, u->batch, H);
            if (len == 0) zero(&k->out[i], off, H);
            else store(u, &k->out[i], off, at(u, i == 1 ? u->h : u->c, b * H), H);
        }
    }
    return BRAID_OK;
}

braid_status bd_cpu_rnn(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_rnn_params *p = k->node->params;
    const bd_tensor *x = &k->in[IN_X];
    rnn_run u = {.k = k, .p = p, .dt = x->dtype};
    u.real = x->dtype == BRAID_DTYPE_DOUBLE ? BRAID_DTYPE_DOUBLE : BRAID_DTYPE_FLOAT;
    u.rs = bd_dtype_size(u.real);
    u.seq = x->dims[p->layout ? 1 : 0];
    u.batch = x->dims[p->layout ? 0 : 1];
    u.isz = x->dims[2];
    u.H = bd_rnn_hidden(p, &k->in[IN_R]);
    u.G = p->gates;
    u.GH = u.G * u.H;
    int first, count;
    bd_rnn_dirs(p, &first, &count);
    u.od = count;
    char *mem = NULL;
    /* sequence_lens, checked here when it was not known at plan time. */
    u.steps = u.seq;
    if (k->n_in > IN_LENS && k->in[IN_LENS].data) {
        u.lens = k->in[IN_LENS].data;
        u.steps = 0;
        for (int64_t b = 0; b < u.batch; b++) {
            if (u.lens[b] < 0 || u.lens[b] > u.seq)
                return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                               "sequence_lens[%lld] is %d, outside [0, %lld] (the sequence length of X)",
                               (long long)b, (int)u.lens[b], (long long)u.seq);
            u.steps = BD_MAX(u.steps, (int64_t)u.lens[b]);
        }
    }
    if (u.batch == 0 || u.H == 0) return BRAID_OK;
    int conv = x->dtype == BRAID_DTYPE_FLOAT16 || x->dtype == BRAID_DTYPE_BFLOAT16;
    int64_t rows = u.seq * u.batch, H = u.H, GH = u.GH;
    /* One block: xp, s, h, c, rh, bias, rbh, peep (computed type); X, W, R
     * converted; the quantized buffers. */
    int panels = u.real == BRAID_DTYPE_FLOAT && !p->quantized && u.batch <= PANEL_ROWS && bd_panel_ok();
    int at_load = panels && p->pack && k->in[IN_R].data == p->pack_of;
    /* An R that is not a constant of the graph (an If branch's Unsqueeze of
     * one: Silero VAD) would be transposed or packed on every run, which
     * costs more than a few steps' products: those read R in place with
     * braid's dot-product kernel (bd_sgemm, A B^T) instead. */
    u.rdirect = u.real == BRAID_DTYPE_FLOAT && !conv && !p->quantized && !p->r_transposed && !at_load &&
                u.steps * u.batch <= 4 && bd_sgemm_cpu_kernel() != BD_SGEMM_OPENBLAS;
    if (u.rdirect) panels = 0;
    u.panels = panels;
    size_t sizes[15] = {(size_t)(rows * GH), (size_t)(u.batch * GH), (size_t)(u.batch * H), (size_t)(u.batch * H),
                        (size_t)(u.batch * H), (size_t)GH, (size_t)H, (size_t)(3 * H),
                        conv ? (size_t)(rows * u.isz) : 0, conv ? (size_t)(GH * u.isz) : 0,
                        (conv || !p->r_transposed) && !p->quantized && !panels && !u.rdirect ? (size_t)(GH * H) : 0, 0, 0, 0,
                        panels && !at_load ? (size_t)(bd_rnn_panels(GH) * H * BD_RNN_PANEL) : 0};
    if (panels && !at_load && conv) sizes[10] = (size_t)(GH * H); /* float16/bfloat16: R^T converted, then packed */
    size_t bytes[15], total = 0;
    for (int i = 0; i < 11; i++) bytes[i] = sizes[i] * u.rs;
    bytes[14] = sizes[14] * sizeof(float);
    if (p->quantized) {
        bytes[11] = (size_t)(rows * u.isz + u.batch * H);     /* qx, qh */
        bytes[12] = (size_t)(u.isz * GH + H * GH) * 2;        /* wq, rq */
        bytes[13] = (size_t)(3 * GH) * sizeof(float);         /* sc */
    } else bytes[11] = bytes[12] = bytes[13] = 0;
    for (int i = 0; i < 15; i++) total += (bytes[i] + 63) & ~(size_t)63;
    mem = bd_scratch_alloc(total ? total : 1);
    BD_CHECK_ALLOC(k->err, mem);
    void *ptr[15];
    for (size_t i = 0, off = 0; i < 15; i++) {
        ptr[i] = bytes[i] ? mem + off : NULL;
        off += (bytes[i] + 63) & ~(size_t)63;
    }
    u.xp = ptr[0], u.s = ptr[1], u.h = ptr[2], u.c = ptr[3], u.rh = ptr[4];
    u.bias = ptr[5], u.rbh = ptr[6], u.peep = ptr[7], u.xc = ptr[8], u.wc = ptr[9], u.rtc = ptr[10];
    u.pks = ptr[14];
    if (p->quantized) {
        u.qx = ptr[11];
        u.qh = u.qx + rows * u.isz;
        u.wq = ptr[12];
        u.rq = u.wq + u.isz * GH;
        u.sc = ptr[13];
    }
    if (u.xc) load(&u, x, 0, rows * u.isz, u.xc);
    u.x = u.xc ? u.xc : x->data;
    for (int i = 0; i < count; i++) {
        u.d = first + i;
        u.o = i;
        BD_TRY(run_dir(&u));
    }
fail:
    bd_scratch_free(mem);
    return st;
}
