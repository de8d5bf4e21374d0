/* rnn.cu: CUDA kernels of the rnn op family: LSTM, GRU, RNN and
 * com.microsoft DynamicQuantizeLSTM, mirroring src/backend/cpu/ops/rnn.c.
 * Per direction: the input projection of every step is one cuBLAS GEMM
 * (float16/bfloat16 through cublasGemmEx into float), then each step is one
 * cuBLAS GEMM of the state by R (GRU without linear_before_reset: two, with
 * the reset kernel between) and one gate kernel, a thread per hidden unit,
 * calling the formulas of ops/rnn.h. The scratch (projection, state, step
 * products) and R converted to float (float16/bfloat16; once when R is a
 * constant) live in the node's cache, allocated on the first run of a plan.
 * sequence_lens is read on the host: from its plan-time copy when constant,
 * else with one synchronization of the stream (it decides the step count and
 * is checked against the sequence length). DynamicQuantizeLSTM quantizes X
 * and each step's state on the device (one block finds the range) and sums
 * the integer products exactly in int32. */
#include <limits.h>
#include <stdlib.h>

#include "common.cuh"

extern "C" {
#include "ops/rnn.h"
#include "util/dtype.h"
}

enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P, IN_WS, IN_WZ, IN_RS, IN_RZ };

/* ---- element access by dtype (uniform branches) ----------------------------------- */

template <class R> __device__ __forceinline__ R ld(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return (R)((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return (R)((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return (R)bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return (R)bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}

template <class R> __device__ __forceinline__ void st(void *p, int64_t i, int dt, R v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = (double)v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    default: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    }
}

/* The formulas of ops/rnn.h by computed type. */
__device__ __forceinline__ void lstm_unit(const bd_rnn_cell *k, float gi, float go, float gf, float gc, float pi,
                                          float po, float pf, float cp, float *c, float *h)
{
    bd_lstm_unitf(k, gi, go, gf, gc, pi, po, pf, cp, c, h);
}
__device__ __forceinline__ void lstm_unit(const bd_rnn_cell *k, double gi, double go, double gf, double gc, double pi,
                                          double po, double pf, double cp, double *c, double *h)
{
    bd_lstm_unitd(k, gi, go, gf, gc, pi, po, pf, cp, c, h);
}
__device__ __forceinline__ float gru_reset(const bd_rnn_cell *k, float g) { return bd_gru_resetf(k, g); }
__device__ __forceinline__ double gru_reset(const bd_rnn_cell *k, double g) { return bd_gru_resetd(k, g); }
__device__ __forceinline__ float gru_unit(const bd_rnn_cell *k, float z, float h, float hp) { return bd_gru_unitf(k, z, h, hp); }
__device__ __forceinline__ double gru_unit(const bd_rnn_cell *k, double z, double h, double hp) { return bd_gru_unitd(k, z, h, hp); }
__device__ __forceinline__ float rnn_unit(const bd_rnn_cell *k, float g) { return bd_rnn_unitf(k, g); }
__device__ __forceinline__ double rnn_unit(const bd_rnn_cell *k, double g) { return bd_rnn_unitd(k, g); }

/* ---- kernels ------------------------------------------------------------------------- */

/* What the per-step kernels read, by value. */
template <class R> struct step_args {
    bd_rnn_cell cell;
    int kind, layout, rev, ydt;
    int64_t seq, batch, H, GH, od, o, s;
    const int32_t *lens; /* NULL: every entry has length seq */
    const R *xp, *sg, *bias, *rbh, *peep;
    R *h, *c, *rh;
    void *y; /* NULL when Y is not an output */
};

__device__ __forceinline__ int64_t len_of(const int32_t *lens, int64_t b, int64_t seq)
{
    if (!lens) return seq;
    int64_t l = lens[b];
    return l < 0 ? 0 : l > seq ? seq : l; /* checked on the host; never read outside X */
}

/* Bias (Wb + Rb; GRU with linear_before_reset: Wb only for h, Rb of h in
 * rbh) and peepholes of direction d, 0 where absent. */
template <class R>
static __global__ void k_bias(const void *B, const void *P, int dt, int64_t d, int64_t H, int64_t GH, int lbr,
                              R *bias, R *rbh, R *peep)
{
    BD_CU_LOOP(j, GH)
    {
        R wb = B ? ld<R>(B, d * 2 * GH + j, dt) : (R)0, rb = B ? ld<R>(B, d * 2 * GH + GH + j, dt) : (R)0;
        int h_gate = lbr && j >= 2 * H;
        bias[j] = h_gate ? wb : wb + rb;
        if (h_gate) rbh[j - 2 * H] = rb;
        if (j < 3 * H) peep[j] = P ? ld<R>(P, d * 3 * H + j, dt) : (R)0;
    }
}

/* The initial state of direction d (0 where absent). */
template <class R>
static __global__ void k_state(const void *h0, const void *c0, int dt, int layout, int64_t d, int64_t dirs,
                               int64_t batch, int64_t H, R *h, R *c)
{
    BD_CU_LOOP(i, batch * H)
    {
        int64_t b = i / H, j = i - b * H, off = bd_rnn_hoff(layout, d, b, dirs, batch, H) + j;
        h[i] = h0 ? ld<R>(h0, off, dt) : (R)0;
        c[i] = c0 ? ld<R>(c0, off, dt) : (R)0;
    }
}

/* n elements of src (dtype dt) from off on, as float. */
static __global__ void k_to_float(const void *src, int dt, int64_t off, int64_t n, float *dst)
{
    BD_CU_LOOP(i, n) dst[i] = ld<float>(src, off + i, dt);
}

/* GRU without linear_before_reset: rh = r * h for the running entries. */
template <class R> static __global__ void k_gru_reset(step_args<R> a)
{
    BD_CU_LOOP(i, a.batch * a.H)
    {
        int64_t b = i / a.H, j = i - b * a.H;
        int64_t t = bd_rnn_time(a.rev, a.s, len_of(a.lens, b, a.seq));
        if (t < 0) continue;
        const R *xp = a.xp + bd_rnn_xrow(a.layout, t, b, a.seq, a.batch) * a.GH, *sg = a.sg + b * a.GH;
        a.rh[i] = gru_reset(&a.cell, xp[a.H + j] + sg[a.H + j] + a.bias[a.H + j]) * a.h[i];
    }
}

/* The gate update of step s: a thread per unit of a running entry; the state
 * in place, Y at (t, o, b). */
template <class R> static __global__ void k_gates(step_args<R> a)
{
    BD_CU_LOOP(i, a.batch * a.H)
    {
        int64_t b = i / a.H, j = i - b * a.H, H = a.H;
        int64_t t = bd_rnn_time(a.rev, a.s, len_of(a.lens, b, a.seq));
        if (t < 0) continue;
        const R *xp = a.xp + bd_rnn_xrow(a.layout, t, b, a.seq, a.batch) * a.GH, *sg = a.sg + b * a.GH;
        const R *bs = a.bias;
        R hn;
        if (a.kind == BD_RNN_LSTM) {
            R cn;
            lstm_unit(&a.cell, xp[j] + sg[j] + bs[j], xp[H + j] + sg[H + j] + bs[H + j],
                      xp[2 * H + j] + sg[2 * H + j] + bs[2 * H + j], xp[3 * H + j] + sg[3 * H + j] + bs[3 * H + j],
                      a.peep[j], a.peep[H + j], a.peep[2 * H + j], a.c[i], &cn, &hn);
            a.c[i] = cn;
        } else if (a.kind == BD_RNN_GRU) {
            R gh = a.cell.linear_before_reset
                       ? xp[2 * H + j] + bs[2 * H + j] +
                             gru_reset(&a.cell, xp[H + j] + sg[H + j] + bs[H + j]) * (sg[2 * H + j] + a.rbh[j])
                       : xp[2 * H + j] + sg[2 * H + j] + bs[2 * H + j];
            hn = gru_unit(&a.cell, xp[j] + sg[j] + bs[j], gh, a.h[i]);
        } else {
            hn = rnn_unit(&a.cell, xp[j] + sg[j] + bs[j]);
        }
        a.h[i] = hn;
        if (a.y) st<R>(a.y, bd_rnn_yoff(a.layout, t, a.o, b, a.seq, a.od, a.batch, H) + j, a.ydt, hn);
    }
}

/* After the steps: Y is 0 past each entry's length, Y_h and Y_c the last
 * state (0 for an entry of length 0). */
template <class R>
static __global__ void k_finish(int layout, int64_t seq, int64_t batch, int64_t H, int64_t od, int64_t o,
                                const int32_t *lens, const R *h, const R *c, void *y, void *yh, void *yc, int dt)
{
    BD_CU_LOOP(i, (seq ? seq : 1) * batch * H) /* (at least one time step, for Y_h and Y_c) */
    {
        int64_t j = i % H, r = i / H, b = r % batch, t = r / batch, len = len_of(lens, b, seq);
        if (y && t >= len) st<R>(y, bd_rnn_yoff(layout, t, o, b, seq, od, batch, H) + j, dt, (R)0);
        if (t == 0) {
            int64_t off = bd_rnn_hoff(layout, o, b, od, batch, H) + j;
            if (yh) st<R>(yh, off, dt, len ? h[b * H + j] : (R)0);
            if (yc) st<R>(yc, off, dt, len ? c[b * H + j] : (R)0);
        }
    }
}

/* ---- DynamicQuantizeLSTM ------------------------------------------------------------- */

struct qparam {
    float scale;
    int zp;
};

/* One block: the range of the rows of a (cols wide) that count, onnxruntime's
 * scale and zero point for it (into *q), and all rows quantized into qa.
 * Rows are X's (mode 0: t < steps) or the state's (mode 1: as the CPU). */
static __global__ void k_quantize(const float *a, int64_t rows, int64_t cols, int mode, int layout, int64_t seq,
                                  int64_t batch, int64_t steps, int64_t s, int y_req, const int32_t *lens,
                                  uint8_t *qa, qparam *q)
{
    __shared__ float sh[32];
    __shared__ qparam qs;
    float lo = 0, hi = 0;
    for (int64_t r = 0; r < rows; r++) {
        int counts;
        if (mode == 0) { /* X row r is time t of entry b */
            int64_t t = layout ? r % seq : r / batch;
            counts = t < steps;
        } else {
            int64_t len = len_of(lens, r, seq);
            counts = s == 0 || s <= len || (!y_req && len > 0);
        }
        if (!counts) continue;
        for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
            float v = a[r * cols + j];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    lo = -bd_cu_block_max(-lo, -INFINITY, sh);
    hi = bd_cu_block_max(hi, -INFINITY, sh);
    if (threadIdx.x == 0) {
        bd_rnn_qparams(lo, hi, &qs.scale, &qs.zp);
        *q = qs;
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < rows * cols; i += blockDim.x) qa[i] = (uint8_t)bd_rnn_quantize(a[i], qs.scale, qs.zp);
}

/* Per-column scales and zero points of direction d (each per tensor: one for all). */
static __global__ void k_qcols(const float *scale, int scale_cols, const uint8_t *zp, int zp_cols, int sgn, int64_t d,
                               int64_t N, float *sc, int *zc)
{
    BD_CU_LOOP(n, N)
    {
        int64_t i = scale_cols ? d * N + n : d, z = zp_cols ? d * N + n : d;
        sc[n] = scale[i];
        zc[n] = sgn ? (int)(int8_t)zp[z] : (int)zp[z];
    }
}

/* C (rows, N; rows ldc apart) = sum_k (qa - za)(w - wz[n]) * (sa * ws[n]), w (K, N). */
static __global__ void k_qgemm(const uint8_t *qa, const qparam *q, const uint8_t *w, int sgn, const int *wz,
                               const float *ws, int64_t M, int64_t N, int64_t K, float *c, int64_t ldc)
{
    BD_CU_LOOP(i, M * N)
    {
        int64_t m = i / N, n = i - m * N;
        int za = q->zp, z = wz[n];
        int32_t acc = 0;
        const uint8_t *a = qa + m * K;
        for (int64_t kk = 0; kk < K; kk++) {
            int wv = sgn ? (int)(int8_t)w[kk * N + n] : (int)w[kk * N + n];
            acc += ((int32_t)a[kk] - za) * (wv - z);
        }
        float mul = q->scale * ws[n];
        c[m * ldc + n] = (float)acc * mul;
    }
}

/* ---- the node's cache ------------------------------------------------------------------ */

struct rnn_cache {
    void *mem;        /* one device allocation */
    size_t bytes;
    void *xp, *s, *h, *c, *rh, *bias, *rbh, *peep; /* computed type */
    float *rc;        /* float16/bfloat16: R[d] as float, per direction; else NULL */
    int rc_ready;     /* R was a constant and rc holds it */
    uint8_t *qx, *qh; /* DynamicQuantizeLSTM */
    qparam *qp;       /* [2]: X's and the state's */
    float *wsc, *rsc; /* per-column scales (GH) */
    int *wzc, *rzc;   /* per-column zero points (GH) */
    int32_t *lens_host;
};

extern "C" void bd_cuda_rnn_free(const bd_node *n, void *cache)
{
    (void)n;
    rnn_cache *c = (rnn_cache *)cache;
    if (!c) return;
    bd_cuda_scratch_free(c->mem);
    bd_free(c->lens_host);
    bd_free(c);
}

/* The cache of this plan's node: made on its first run (shapes are fixed per plan). */
static braid_status cache_get(const bd_cuda_kernel *k, const bd_rnn_params *p, int64_t rows, int64_t batch,
                              int64_t isz, int64_t H, size_t rs, int conv, int dirs_run, rnn_cache **out)
{
    rnn_cache *c = (rnn_cache *)*k->cache;
    if (c) { *out = c; return BRAID_OK; }
    int64_t GH = p->gates * H;
    size_t sz[16] = {(size_t)(rows * GH) * rs, (size_t)(batch * GH) * rs, (size_t)(batch * H) * rs,
                     (size_t)(batch * H) * rs, (size_t)(batch * H) * rs, (size_t)GH * rs, (size_t)H * rs,
                     (size_t)(3 * H) * rs,
                     conv ? (size_t)(dirs_run * GH * H) * sizeof(float) : 0,
                     p->quantized ? (size_t)(rows * isz) : 0, p->quantized ? (size_t)(batch * H) : 0,
                     p->quantized ? 2 * sizeof(qparam) : 0,
                     p->quantized ? (size_t)GH * sizeof(float) : 0, p->quantized ? (size_t)GH * sizeof(float) : 0,
                     p->quantized ? (size_t)GH * sizeof(int) : 0, p->quantized ? (size_t)GH * sizeof(int) : 0};
    size_t total = 0, off[16];
    for (int i = 0; i < 16; i++) {
        off[i] = total;
        total += (sz[i] + 255) & ~(size_t)255;
    }
    c = (rnn_cache *)bd_calloc(1, sizeof *c);
    if (!c) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    c->lens_host = (int32_t *)bd_malloc((size_t)(batch + 1) * sizeof(int32_t));
    cudaError_t ce = bd_cuda_scratch_alloc(&c->mem, total ? total : 256);
    if (ce != cudaSuccess || !c->lens_host) {
        bd_cuda_rnn_free(k->node, c);
        return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate %.1f MiB of scratch for the recurrence",
                       (double)total / 1048576.0);
    }
    char *m = (char *)c->mem;
    void **ptr[16] = {&c->xp, &c->s, &c->h, &c->c, &c->rh, &c->bias, &c->rbh, &c->peep, (void **)&c->rc,
                      (void **)&c->qx, (void **)&c->qh, (void **)&c->qp, (void **)&c->wsc, (void **)&c->rsc,
                      (void **)&c->wzc, (void **)&c->rzc};
    for (int i = 0; i < 16; i++) *ptr[i] = sz[i] ? m + off[i] : NULL;
    c->bytes = total;
    *k->cache = c;
    *out = c;
    return BRAID_OK;
}

/* ---- GEMMs --------------------------------------------------------------------------- */

/* Row-major y (m x n, rows ldy apart) = op(a) op(b), op(a) (m x kk); a and b
 * of dtype ab (float, double, or float16/bfloat16 with y float). */
static braid_status gemm_rm(const bd_cuda_kernel *k, int ab, int ta, int tb, int64_t m, int64_t n, int64_t kk,
                            const void *a, int64_t lda, const void *b, int64_t ldb, void *y, int64_t ldy)
{
    braid_status st = BRAID_OK;
    if (m <= 0 || n <= 0) return BRAID_OK;
    if (m > INT_MAX || n > INT_MAX || kk > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldy > INT_MAX)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "matrix dims (M %lld, N %lld, K %lld) are beyond cuBLAS's limit",
                       (long long)m, (long long)n, (long long)kk);
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (ab == BRAID_DTYPE_FLOAT) {
        const float one = 1.0f, zero = 0.0f;
        BD_CUBLAS_TRY(k->err, cublasSgemm(k->cublas, ob, oa, (int)n, (int)m, (int)kk, &one, (const float *)b, (int)ldb,
                                          (const float *)a, (int)lda, &zero, (float *)y, (int)ldy));
    } else if (ab == BRAID_DTYPE_DOUBLE) {
        const double one = 1.0, zero = 0.0;
        BD_CUBLAS_TRY(k->err, cublasDgemm(k->cublas, ob, oa, (int)n, (int)m, (int)kk, &one, (const double *)b,
                                          (int)ldb, (const double *)a, (int)lda, &zero, (double *)y, (int)ldy));
    } else {
        const float one = 1.0f, zero = 0.0f;
        cudaDataType_t t = ab == BRAID_DTYPE_FLOAT16 ? CUDA_R_16F : CUDA_R_16BF;
        BD_CUBLAS_TRY(k->err, cublasGemmEx(k->cublas, ob, oa, (int)n, (int)m, (int)kk, &one, b, t, (int)ldb, a, t,
                                           (int)lda, &zero, y, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F,
                                           CUBLAS_GEMM_DEFAULT));
    }
    return BRAID_OK;
fail:
    return st;
}

/* ---- the recurrence --------------------------------------------------------------------- */

template <class R>
static braid_status run_dirs(const bd_cuda_kernel *k, const bd_rnn_params *p, rnn_cache *c, int64_t seq,
                             int64_t batch, int64_t isz, int64_t H, int64_t steps, const int32_t *lens)
{
    braid_status st = BRAID_OK;
    const bd_tensor *x = &k->in[IN_X], *w = &k->in[IN_W], *r = &k->in[IN_R];
    int dt = x->dtype, real = sizeof(R) == 8 ? BRAID_DTYPE_DOUBLE : BRAID_DTYPE_FLOAT;
    int64_t GH = p->gates * H, rows = seq * batch;
    int first, count;
    bd_rnn_dirs(p, &first, &count);
    void *y = k->n_out > 0 && k->node->out[0] >= 0 ? k->out[0].data : NULL;
    void *yh = k->n_out > 1 && k->node->out[1] >= 0 ? k->out[1].data : NULL;
    void *yc = k->n_out > 2 && k->node->out[2] >= 0 ? k->out[2].data : NULL;
    const void *B = k->n_in > IN_B ? k->in[IN_B].data : NULL;
    const void *P = p->cell == BD_RNN_LSTM && k->n_in > IN_P ? k->in[IN_P].data : NULL;
    const void *h0 = k->n_in > IN_H0 ? k->in[IN_H0].data : NULL;
    const void *c0 = p->cell == BD_RNN_LSTM && k->n_in > IN_C0 ? k->in[IN_C0].data : NULL;
    unsigned gh = bd_cu_grid(GH), gb = bd_cu_grid(batch * H);
    /* float16/bfloat16 R as float: once when R is a constant */
    if (c->rc && !c->rc_ready) {
        for (int i = 0; i < count; i++)
            k_to_float<<<bd_cu_grid(GH * H), BD_CU_BLOCK, 0, k->stream>>>(r->data, dt, (int64_t)(first + i) * GH * H,
                                                                          GH * H, c->rc + (int64_t)i * GH * H);
        BD_CU_CHECK_LAUNCH(k, "the R conversion kernel");
        c->rc_ready = k->host_in && k->host_in[IN_R].data != NULL;
    }
    for (int i = 0; i < count; i++) {
        int64_t d = first + i;
        step_args<R> a;
        memset(&a, 0, sizeof a);
        a.cell = p->dir[d];
        a.kind = p->cell;
        a.layout = p->layout;
        a.rev = bd_rnn_reverse(p->direction, (int)d);
        a.ydt = dt;
        a.seq = seq, a.batch = batch, a.H = H, a.GH = GH, a.od = count, a.o = i;
        a.lens = lens;
        a.xp = (const R *)c->xp, a.sg = (const R *)c->s, a.bias = (const R *)c->bias, a.rbh = (const R *)c->rbh;
        a.peep = (const R *)c->peep, a.h = (R *)c->h, a.c = (R *)c->c, a.rh = (R *)c->rh, a.y = y;
        k_bias<R><<<gh, BD_CU_BLOCK, 0, k->stream>>>(B, P, dt, d, H, GH,
                                                     p->cell == BD_RNN_GRU && a.cell.linear_before_reset,
                                                     (R *)c->bias, (R *)c->rbh, (R *)c->peep);
        k_state<R><<<gb, BD_CU_BLOCK, 0, k->stream>>>(h0, c0, dt, p->layout, d, p->dirs, batch, H, (R *)c->h,
                                                      (R *)c->c);
        BD_CU_CHECK_LAUNCH(k, "the rnn state kernels");
        /* the input projection of every step */
        const int32_t *dlens = lens;
        if (p->quantized) {
            int sgn = w->dtype == BRAID_DTYPE_INT8;
            k_qcols<<<gh, BD_CU_BLOCK, 0, k->stream>>>(
                (const float *)k->in[IN_WS].data, k->in[IN_WS].rank == 2, (const uint8_t *)k->in[IN_WZ].data,
                k->in[IN_WZ].rank == 2, sgn, d, GH, c->wsc, c->wzc);
            k_qcols<<<gh, BD_CU_BLOCK, 0, k->stream>>>(
                (const float *)k->in[IN_RS].data, k->in[IN_RS].rank == 2, (const uint8_t *)k->in[IN_RZ].data,
                k->in[IN_RZ].rank == 2, sgn, d, GH, c->rsc, c->rzc);
            k_quantize<<<1, 1024, 0, k->stream>>>((const float *)x->data, rows, isz, 0, p->layout, seq, batch, steps,
                                                  0, 0, dlens, c->qx, c->qp);
            k_qgemm<<<bd_cu_grid(rows * GH), BD_CU_BLOCK, 0, k->stream>>>(
                c->qx, c->qp, (const uint8_t *)w->data + d * isz * GH, sgn, c->wzc, c->wsc, rows, GH, isz,
                (float *)c->xp, GH);
            BD_CU_CHECK_LAUNCH(k, "the input quantization kernels");
        } else {
            BD_TRY(gemm_rm(k, dt, 0, 1, rows, GH, isz, x->data, isz,
                           (const char *)w->data + (size_t)(d * GH * isz) * bd_dtype_size(dt), isz, c->xp, GH));
        }
        /* R[d]: (GH, H) or transposed (H, GH), in the computed type */
        const void *rd = c->rc ? (const void *)(c->rc + (int64_t)i * GH * H)
                               : (const void *)((const char *)r->data + (size_t)(d * GH * H) * bd_dtype_size(dt));
        int rt = p->r_transposed;
        size_t rs = sizeof(R);
        for (int64_t s = 0; s < steps; s++) {
            a.s = s;
            if (p->quantized) {
                k_quantize<<<1, 1024, 0, k->stream>>>((const float *)c->h, batch, H, 1, p->layout, seq, batch, steps,
                                                      s, y != NULL, dlens, c->qh, c->qp + 1);
                k_qgemm<<<bd_cu_grid(batch * GH), BD_CU_BLOCK, 0, k->stream>>>(
                    c->qh, c->qp + 1, (const uint8_t *)r->data + d * H * GH, w->dtype == BRAID_DTYPE_INT8, c->rzc,
                    c->rsc, batch, GH, H, (float *)c->s, GH);
                BD_CU_CHECK_LAUNCH(k, "the state quantization kernels");
            } else if (p->cell == BD_RNN_GRU && !a.cell.linear_before_reset) {
                /* z and r columns, then r * h, then the h columns of (r * h) R^T */
                BD_TRY(gemm_rm(k, real, 0, !rt, batch, 2 * H, H, c->h, H, rd, rt ? GH : H, c->s, GH));
                k_gru_reset<R><<<gb, BD_CU_BLOCK, 0, k->stream>>>(a);
                BD_CU_CHECK_LAUNCH(k, "the GRU reset kernel");
                const char *rh_cols = (const char *)rd + (size_t)(rt ? 2 * H : 2 * H * H) * rs;
                BD_TRY(gemm_rm(k, real, 0, !rt, batch, H, H, c->rh, H, rh_cols, rt ? GH : H, (char *)c->s + 2 * H * rs,
                               GH));
            } else {
                BD_TRY(gemm_rm(k, real, 0, !rt, batch, GH, H, c->h, H, rd, rt ? GH : H, c->s, GH));
            }
            k_gates<R><<<gb, BD_CU_BLOCK, 0, k->stream>>>(a);
            BD_CU_CHECK_LAUNCH(k, "the gate kernel");
        }
        k_finish<R><<<bd_cu_grid(BD_MAX(seq, (int64_t)1) * batch * H), BD_CU_BLOCK, 0, k->stream>>>(
            p->layout, seq, batch, H, count, i, lens, (const R *)c->h, (const R *)c->c, seq ? y : NULL, yh, yc, dt);
        BD_CU_CHECK_LAUNCH(k, "the rnn finishing kernel");
    }
    return BRAID_OK;
fail:
    return st;
}

extern "C" braid_status bd_cuda_rnn(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_rnn_params *p = (const bd_rnn_params *)k->node->params;
    const bd_tensor *x = &k->in[IN_X];
    int dt = x->dtype;
    int64_t seq = x->dims[p->layout ? 1 : 0], batch = x->dims[p->layout ? 0 : 1], isz = x->dims[2];
    int64_t H = bd_rnn_hidden(p, &k->in[IN_R]), steps = seq;
    const int32_t *lens = NULL, *hl = NULL;
    int first, count;
    rnn_cache *c = NULL;
    if (batch == 0 || H == 0) return BRAID_OK;
    bd_rnn_dirs(p, &first, &count);
    size_t rs = dt == BRAID_DTYPE_DOUBLE ? sizeof(double) : sizeof(float);
    int conv = dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
    BD_TRY(cache_get(k, p, seq * batch, batch, isz, H, rs, conv, count, &c));
    /* sequence_lens on the host: it decides the number of steps, and values
     * outside [0, seq] are an error as on the CPU */
    if (k->n_in > IN_LENS && k->in[IN_LENS].data) {
        lens = (const int32_t *)k->in[IN_LENS].data;
        hl = k->host_in ? (const int32_t *)k->host_in[IN_LENS].data : NULL;
        if (!hl) {
            BD_CUDA_TRY(k->err, cudaMemcpyAsync(c->lens_host, lens, (size_t)batch * sizeof(int32_t),
                                                cudaMemcpyDefault, k->stream));
            BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream));
            hl = c->lens_host;
        }
        steps = 0;
        for (int64_t b = 0; b < batch; b++) {
            if (hl[b] < 0 || hl[b] > seq)
                return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                               "sequence_lens[%lld] is %d, outside [0, %lld] (the sequence length of X)",
                               (long long)b, (int)hl[b], (long long)seq);
            steps = BD_MAX(steps, (int64_t)hl[b]);
        }
    }
    if (dt == BRAID_DTYPE_DOUBLE) BD_TRY(run_dirs<double>(k, p, c, seq, batch, isz, H, steps, lens));
    else BD_TRY(run_dirs<float>(k, p, c, seq, batch, isz, H, steps, lens));
    return BRAID_OK;
fail:
    return st;
}
