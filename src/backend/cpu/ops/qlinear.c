/* qlinear.c: CPU kernels of the qlinear op family (com.microsoft's 8-bit
 * QOperator ops), with the formulas of ops/qlinear.h. Binary ops and Where
 * walk the broadcast output row by row; ops of one 8-bit input (the
 * activations, Concat and Where's requantization) go through a 256-entry
 * table built per run; GlobalAveragePool sums exact integers, AveragePool
 * dequantized floats in window order (as onnxruntime); Softmax uses a table
 * of exp(-d * x_scale) for d = max - x; QEmbedLayerNormalization runs a
 * token at a time. Work splits over threads by rows, planes or tokens, each
 * computed alike whatever the split. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <math.h>
#include <string.h>

#include "ops/qlinear.h"

#define MIN_CHUNK (1 << 15)

/* A per-tensor parameter of input i: a scale (float) or a zero point (0 when omitted). */
static float param(const bd_kernel *k, int i, int scale)
{
    if (i < 0 || i >= k->n_in || k->in[i].dtype == BRAID_DTYPE_UNDEFINED || !k->in[i].data) return scale ? 1.0f : 0.0f;
    return scale ? bd_q_scale_at(k->in[i].dtype, k->in[i].data, 0) : bd_q_value_at(k->in[i].dtype, k->in[i].data, 0);
}

/* Fails with INVALID_MODEL when a scale computed at run time is zero or not finite. */
static braid_status check_scales(const bd_kernel *k, const int *idx, int n)
{
    for (int j = 0; j < n; j++) {
        float s = param(k, idx[j], 1);
        if (s == 0.0f || !isfinite(s))
            return BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "scale '%s' is %g; a quantization scale must be finite "
                           "and nonzero", bd_qlinear_input_name(k->node->op, idx[j]), (double)s);
    }
    return BRAID_OK;
}

/* The value of code c (0..255) of dtype dt (uint8: c; int8: (int8_t)c). */
static float code_value(int dt, int c) { return dt == BRAID_DTYPE_UINT8 ? (float)c : (float)(int8_t)(uint8_t)c; }

/* ---- broadcast rows ---------------------------------------------------------------------------- */

typedef struct bcast {
    int r, n_in;
    int64_t dims[BD_MAX_RANK], st[3][BD_MAX_RANK];
    const bd_tensor *in[3];
    bd_tensor *out;
    float ra, rb, zp, lo, hi, azp, bzp; /* Add / Mul */
    int mul;
    uint8_t lut[2][256];                /* Where: X and Y requantized */
} bcast;

static void bcast_make(bcast *b, bd_tensor *out, const bd_tensor *const *ins, int n_in)
{
    b->r = out->rank > 0 ? out->rank : 1;
    b->n_in = n_in;
    b->out = out;
    for (int d = 0; d < b->r; d++) b->dims[d] = out->rank > 0 ? out->dims[d] : 1;
    for (int i = 0; i < n_in; i++) {
        b->in[i] = ins[i];
        if (out->rank > 0) bd_broadcast_strides(ins[i], out, b->st[i]);
        else b->st[i][0] = 0;
    }
}

/* The offset of row `row` (all dims but the last) in each input. */
static void bcast_row(const bcast *b, int64_t row, int64_t *off)
{
    for (int i = 0; i < b->n_in; i++) off[i] = 0;
    for (int d = b->r - 2; d >= 0; d--) {
        int64_t q = row / b->dims[d], idx = row - q * b->dims[d];
        for (int i = 0; i < b->n_in; i++) off[i] += idx * b->st[i][d];
        row = q;
    }
}

#define BIN_ROW(T)                                                                                 \
    do {                                                                                           \
        const T *pa = (const T *)b->in[0]->data + off[0], *pb = (const T *)b->in[1]->data + off[1]; \
        T *o = (T *)b->out->data + row * n;                                                        \
        int64_t sa = b->st[0][b->r - 1], sb = b->st[1][b->r - 1];                                  \
        if (b->mul)                                                                                \
            for (int64_t j = 0; j < n; j++)                                                        \
                o[j] = (T)(int32_t)bd_ql_mul((float)pa[j * sa] - b->azp, (float)pb[j * sb] - b->bzp, b->ra, b->zp, \
                                             b->lo, b->hi);                                        \
        else                                                                                       \
            for (int64_t j = 0; j < n; j++)                                                        \
                o[j] = (T)(int32_t)bd_ql_add((float)pa[j * sa] - b->azp, (float)pb[j * sb] - b->bzp, b->ra, b->rb, \
                                             b->zp, b->lo, b->hi);                                 \
    } while (0)

static void binary_rows(void *vb, int64_t r0, int64_t r1)
{
    const bcast *b = vb;
    int64_t n = b->dims[b->r - 1], off[3];
    for (int64_t row = r0; row < r1; row++) {
        bcast_row(b, row, off);
        if (b->out->dtype == BRAID_DTYPE_UINT8) BIN_ROW(uint8_t);
        else BIN_ROW(int8_t);
    }
}

static void where_rows(void *vb, int64_t r0, int64_t r1)
{
    const bcast *b = vb;
    int64_t n = b->dims[b->r - 1], off[3], sc = b->st[0][b->r - 1], sx = b->st[1][b->r - 1], sy = b->st[2][b->r - 1];
    for (int64_t row = r0; row < r1; row++) {
        bcast_row(b, row, off);
        const uint8_t *c = (const uint8_t *)b->in[0]->data + off[0];
        const uint8_t *x = (const uint8_t *)b->in[1]->data + off[1], *y = (const uint8_t *)b->in[2]->data + off[2];
        uint8_t *o = (uint8_t *)b->out->data + row * n;
        for (int64_t j = 0; j < n; j++) o[j] = c[j * sc] ? b->lut[0][x[j * sx]] : b->lut[1][y[j * sy]];
    }
}

/* A table: code -> code requantized from (scale s, zero point z) to (ys, yz). */
static void requant_lut(int dt, float s, float z, float ys, float yz, uint8_t *lut)
{
    float lo, hi;
    bd_q_int_range(dt, &lo, &hi);
    for (int c = 0; c < 256; c++) {
        int32_t v = (int32_t)bd_ql_requant(code_value(dt, c) - z, s, ys, yz, lo, hi);
        lut[c] = (uint8_t)v;
    }
}

static braid_status binary(const bd_kernel *k)
{
    int where = k->node->op == BD_OP_MS_QLinearWhere;
    bd_qlinear_io io = bd_qlinear_io_of(k->node->op);
    int scales[3] = {io.xs, io.ys, io.zs};
    braid_status st = check_scales(k, scales, 3);
    if (st) return st;
    bcast *b = bd_calloc(1, sizeof *b);
    if (!b) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    int dt = k->out[0].dtype;
    float as = param(k, io.xs, 1), bs = param(k, io.ys, 1), cs = param(k, io.zs, 1);
    b->azp = param(k, io.xzp, 0), b->bzp = param(k, io.yzp, 0), b->zp = param(k, io.zzp, 0);
    bd_q_int_range(dt, &b->lo, &b->hi);
    int64_t rows = bd_numel(&k->out[0]) / BD_MAX((int64_t)1, k->out[0].rank ? k->out[0].dims[k->out[0].rank - 1] : 1);
    if (where) {
        const bd_tensor *ins[3] = {&k->in[0], &k->in[io.x], &k->in[io.y]};
        bcast_make(b, &k->out[0], ins, 3);
        requant_lut(dt, as, b->azp, cs, b->zp, b->lut[0]);
        requant_lut(dt, bs, b->bzp, cs, b->zp, b->lut[1]);
        if (bd_numel(&k->out[0]) > 0) bd_parallel_for(k->threads, rows, BD_MAX((int64_t)1, MIN_CHUNK / b->dims[b->r - 1]), where_rows, b);
    } else {
        const bd_tensor *ins[2] = {&k->in[io.x], &k->in[io.y]};
        bcast_make(b, &k->out[0], ins, 2);
        b->mul = k->node->op == BD_OP_MS_QLinearMul;
        if (b->mul) b->ra = as * bs / cs;
        else b->ra = as / cs, b->rb = bs / cs;
        if (bd_numel(&k->out[0]) > 0) bd_parallel_for(k->threads, rows, BD_MAX((int64_t)1, MIN_CHUNK / b->dims[b->r - 1]), binary_rows, b);
    }
    bd_free(b);
    return BRAID_OK;
}

/* ---- one input: activations ----------------------------------------------------------------------- */

typedef struct lut_job {
    const uint8_t *x;
    uint8_t *y;
    uint8_t lut[256];
} lut_job;

static void lut_range(void *vj, int64_t b, int64_t e)
{
    const lut_job *j = vj;
    for (int64_t i = b; i < e; i++) j->y[i] = j->lut[j->x[i]];
}

static braid_status activation(const bd_kernel *k)
{
    const bd_qlinear_params *p = k->node->params;
    int scales[2] = {1, 3}, dt = k->in[0].dtype;
    braid_status st = check_scales(k, scales, 2);
    if (st) return st;
    lut_job j = {k->in[0].data, k->out[0].data, {0}};
    float xs = param(k, 1, 1), xz = param(k, 2, 0), ys = param(k, 3, 1), yz = param(k, 4, 0), lo, hi;
    bd_q_int_range(dt, &lo, &hi);
    int leaky = k->node->op == BD_OP_MS_QLinearLeakyRelu;
    for (int c = 0; c < 256; c++)
        j.lut[c] = (uint8_t)(int32_t)bd_ql_activation(leaky, code_value(dt, c) - xz, xs, p->alpha, ys, yz, lo, hi);
    bd_parallel_for(k->threads, bd_numel(&k->in[0]), MIN_CHUNK, lut_range, &j);
    return BRAID_OK;
}

/* ---- pools ------------------------------------------------------------------------------------------- */

/* X seen as (N, C, S) with element (n, c, s) at n * C * S + c * cs + s * ss (NCHW or NHWC). */
typedef struct pool_job {
    const bd_kernel *k;
    int64_t n, c, s, cs, ss, os, ocs, oss; /* input and output layouts */
    int nsp;
    int64_t in[3], out[3], kern[3], str[3], dil[3], pb[3], kprod;
    int include_pad, global;
    float xs, xz, ys, yz, lo, hi, m;
} pool_job;

#define X8(j, i) ((j)->k->in[0].dtype == BRAID_DTYPE_UINT8 ? (int32_t)((const uint8_t *)(j)->k->in[0].data)[i] \
                                                           : (int32_t)((const int8_t *)(j)->k->in[0].data)[i])

static void store8(const pool_job *j, int64_t o, float v)
{
    if (j->k->out[0].dtype == BRAID_DTYPE_UINT8) ((uint8_t *)j->k->out[0].data)[o] = (uint8_t)(int32_t)v;
    else ((int8_t *)j->k->out[0].data)[o] = (int8_t)(int32_t)v;
}

/* (image, channel) planes [b, e). */
static void pool_planes(void *vj, int64_t b, int64_t e)
{
    const pool_job *j = vj;
    int32_t zx = (int32_t)j->xz;
    for (int64_t pl = b; pl < e; pl++) {
        int64_t n = pl / j->c, c = pl % j->c, base = n * j->c * j->s + c * j->cs, obase = n * j->c * j->os + c * j->ocs;
        if (j->global) {
            int32_t sum = 0;
            for (int64_t s = 0; s < j->s; s++) sum += X8(j, base + s * j->ss);
            sum -= zx * (int32_t)j->s;
            store8(j, obase, bd_ql_gavg(sum, j->m, j->yz, j->lo, j->hi));
            continue;
        }
        for (int64_t o = 0; o < j->os; o++) {
            int64_t op[3] = {0, 0, 0}, r = o;
            for (int d = j->nsp - 1; d >= 0; d--) op[d] = r % j->out[d], r /= j->out[d];
            int64_t lo3[3] = {0, 0, 0}, hi3[3] = {1, 1, 1}, st3[3] = {0, 0, 0}, dl3[3] = {1, 1, 1}, count = 1;
            for (int d = 0; d < j->nsp; d++) {
                int64_t start = op[d] * j->str[d] - j->pb[d];
                /* taps t with 0 <= start + t * dil < in: as onnxruntime, the window ends kernel taps on */
                int64_t t0 = start < 0 ? (-start + j->dil[d] - 1) / j->dil[d] : 0, t1 = j->kern[d];
                while (t1 > t0 && start + (t1 - 1) * j->dil[d] >= j->in[d]) t1--;
                lo3[d] = t0, hi3[d] = BD_MAX(t0, t1), st3[d] = start, dl3[d] = j->dil[d];
                count *= hi3[d] - lo3[d];
            }
            float sum = 0.0f;
            int64_t strides[3] = {1, 1, 1};
            for (int d = j->nsp - 2; d >= 0; d--) strides[d] = strides[d + 1] * j->in[d + 1];
            for (int64_t a = lo3[0]; a < hi3[0]; a++)
                for (int64_t bb = lo3[1]; bb < hi3[1]; bb++)
                    for (int64_t cc = lo3[2]; cc < hi3[2]; cc++) {
                        int64_t t[3] = {a, bb, cc}, sp = 0;
                        for (int d = 0; d < j->nsp; d++) sp += (st3[d] + t[d] * dl3[d]) * strides[d];
                        sum += bd_ql_deq(X8(j, base + sp * j->ss), zx, j->xs);
                    }
            if (j->include_pad) count = j->kprod;
            store8(j, obase + o * j->oss, count ? bd_ql_avg(sum, count, j->ys, j->yz, j->lo, j->hi)
                                               : bd_q_to_int(0.0f, j->yz, j->lo, j->hi));
        }
    }
}

static braid_status pool(const bd_kernel *k)
{
    const bd_qlinear_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int scales[2] = {1, 3};
    braid_status st = check_scales(k, scales, 2);
    if (st) return st;
    pool_job j = {.k = k, .global = k->node->op == BD_OP_MS_QLinearGlobalAveragePool};
    int cl = p->channels_last, r = x->rank;
    j.n = x->dims[0];
    j.c = cl ? x->dims[r - 1] : x->dims[1];
    j.s = 1;
    for (int d = cl ? 1 : 2; d < (cl ? r - 1 : r); d++) j.s *= x->dims[d];
    j.os = bd_numel(&k->out[0]) / BD_MAX((int64_t)1, j.n * j.c);
    j.cs = cl ? 1 : j.s, j.ss = cl ? j.c : 1, j.ocs = cl ? 1 : j.os, j.oss = cl ? j.c : 1;
    j.xs = param(k, 1, 1), j.xz = param(k, 2, 0), j.ys = param(k, 3, 1), j.yz = param(k, 4, 0);
    bd_q_int_range(k->out[0].dtype, &j.lo, &j.hi);
    if (j.global) {
        j.m = j.xs / (j.ys * (float)j.s);
    } else {
        j.nsp = p->pool.nsp;
        if (j.nsp > 3) return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "a %d-D window is not supported", j.nsp);
        bd_tensor v = *x;
        if (cl) {
            v.dims[1] = x->dims[r - 1];
            for (int d = 2; d < r; d++) v.dims[d] = x->dims[d - 1];
        }
        bd_pool_geom g;
        bd_node c = *k->node;
        c.op = BD_OP_AveragePool;
        if ((st = bd_pool_geometry(&c, &v, &g, k->err))) return st;
        j.kprod = 1;
        for (int d = 0; d < j.nsp; d++) {
            j.in[d] = g.in[d], j.out[d] = g.out[d], j.kern[d] = p->pool.kernel[d], j.str[d] = p->pool.strides[d];
            j.dil[d] = p->pool.dilations[d], j.pb[d] = g.pad_begin[d];
            j.kprod *= j.kern[d];
        }
        j.include_pad = p->pool.count_include_pad;
    }
    int64_t planes = j.n * j.c;
    if (planes > 0 && j.os > 0)
        bd_parallel_for(k->threads, planes, BD_MAX((int64_t)1, MIN_CHUNK / BD_MAX((int64_t)1, j.s)), pool_planes, &j);
    return BRAID_OK;
}

/* ---- Concat -------------------------------------------------------------------------------------------- */

static braid_status concat(const bd_kernel *k)
{
    const bd_qlinear_params *p = k->node->params;
    bd_tensor *y = &k->out[0];
    int ax, dt = y->dtype;
    braid_status st = bd_axis(p->axis, y->rank, &ax, k->err);
    if (st) return st;
    float ys = param(k, 0, 1), yz = param(k, 1, 0);
    int64_t outer = 1, inner = 1, yoff = 0;
    for (int d = 0; d < ax; d++) outer *= y->dims[d];
    for (int d = ax + 1; d < y->rank; d++) inner *= y->dims[d];
    int64_t yrow = y->dims[ax] * inner;
    for (int i = 2; i + 2 < k->n_in; i += 3) {
        const bd_tensor *x = &k->in[i];
        int scales[1] = {i + 1};
        if ((st = check_scales(k, scales, 1))) return st;
        float xs = param(k, i + 1, 1), xz = param(k, i + 2, 0);
        int64_t xrow = x->dims[ax] * inner;
        const uint8_t *xd = x->data;
        uint8_t *yd = (uint8_t *)y->data + yoff;
        if (xs == ys && xz == yz) {
            for (int64_t o = 0; o < outer; o++) memcpy(yd + o * yrow, xd + o * xrow, (size_t)xrow);
        } else {
            uint8_t lut[256];
            requant_lut(dt, xs, xz, ys, yz, lut);
            for (int64_t o = 0; o < outer; o++)
                for (int64_t t = 0; t < xrow; t++) yd[o * yrow + t] = lut[xd[o * xrow + t]];
        }
        yoff += xrow;
    }
    return BRAID_OK;
}

/* ---- Softmax ------------------------------------------------------------------------------------------- */

typedef struct sm_job {
    const bd_kernel *k;
    int64_t d, inner;
    float ys, yz, lo, hi;
    float e[256]; /* exp(-t * x_scale) */
} sm_job;

static void softmax_rows(void *vj, int64_t r0, int64_t r1)
{
    const sm_job *j = vj;
    int u = j->k->in[0].dtype == BRAID_DTYPE_UINT8;
    const uint8_t *xu = j->k->in[0].data;
    const int8_t *xs = j->k->in[0].data;
    for (int64_t r = r0; r < r1; r++) {
        int64_t o = r / j->inner, in = r % j->inner, base = o * j->d * j->inner + in;
        int32_t mx = -1000;
        for (int64_t t = 0; t < j->d; t++) {
            int32_t v = u ? xu[base + t * j->inner] : xs[base + t * j->inner];
            mx = v > mx ? v : mx;
        }
        float sum = 0.0f;
        for (int64_t t = 0; t < j->d; t++) sum += j->e[mx - (u ? xu[base + t * j->inner] : xs[base + t * j->inner])];
        for (int64_t t = 0; t < j->d; t++) {
            int64_t at = base + t * j->inner;
            float v = bd_q_to_int(j->e[mx - (u ? xu[at] : xs[at])] / sum / j->ys, j->yz, j->lo, j->hi);
            if (u) ((uint8_t *)j->k->out[0].data)[at] = (uint8_t)(int32_t)v;
            else ((int8_t *)j->k->out[0].data)[at] = (int8_t)(int32_t)v;
        }
    }
}

static braid_status softmax(const bd_kernel *k)
{
    const bd_qlinear_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int ax, scales[2] = {1, 3};
    braid_status st = check_scales(k, scales, 2);
    if (st || (st = bd_axis(p->axis, x->rank, &ax, k->err))) return st;
    sm_job *j = bd_calloc(1, sizeof *j);
    if (!j) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    j->k = k;
    int64_t outer = 1;
    j->d = 1, j->inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < ax) outer *= x->dims[d];
        else if (d == ax || p->softmax_opset < 13) j->d *= x->dims[d];
        else j->inner *= x->dims[d];
    }
    float xs = param(k, 1, 1);
    for (int t = 0; t < 256; t++) j->e[t] = expf(-(float)t * xs);
    j->ys = param(k, 3, 1), j->yz = param(k, 4, 0);
    bd_q_int_range(k->out[0].dtype, &j->lo, &j->hi);
    int64_t rows = outer * j->inner;
    if (rows > 0 && j->d > 0) bd_parallel_for(k->threads, rows, BD_MAX((int64_t)1, MIN_CHUNK / j->d), softmax_rows, j);
    bd_free(j);
    return BRAID_OK;
}

/* ---- QEmbedLayerNormalization -------------------------------------------------------------------- */

typedef struct emb_job {
    const bd_kernel *k;
    int64_t s, h, rows[3]; /* sequence length, hidden size, rows of word / position / segment */
    float sc[5], zp[5];    /* word, position, segment, gamma, beta */
    float *gamma, *beta;   /* dequantized, h each */
} emb_job;

/* Tokens [b, e): the three rows dequantized and summed, then the LayerNorm. */
static void embed_tokens(void *vj, int64_t b, int64_t e)
{
    const emb_job *j = vj;
    const bd_tensor *in = j->k->in;
    const int32_t *ids = in[BD_QEMB_IDS].data, *seg = in[BD_QEMB_SEG_IDS].data;
    int u = in[BD_QEMB_WORD].dtype == BRAID_DTYPE_UINT8;
    const int64_t h = j->h;
    for (int64_t t = b; t < e; t++) {
        float *o = (float *)j->k->out[0].data + t * h;
        const int64_t row[3] = {ids[t], t % j->s, seg ? seg[t] : 0};
        for (int64_t i = 0; i < h; i++) o[i] = 0.0f;
        for (int tb = 0; tb < (seg ? 3 : 2); tb++) {
            const void *base = in[BD_QEMB_WORD + tb].data;
            int32_t z = (int32_t)j->zp[tb];
            for (int64_t i = 0; i < h; i++) {
                int64_t at = row[tb] * h + i;
                int32_t v = u ? ((const uint8_t *)base)[at] : ((const int8_t *)base)[at];
                o[i] = tb ? o[i] + bd_ql_deq(v, z, j->sc[tb]) : bd_ql_deq(v, z, j->sc[tb]);
            }
        }
        bd_qemb_layernorm(o, h, ((const bd_qlinear_params *)j->k->node->params)->epsilon, j->gamma, j->beta);
    }
}

static braid_status embed(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_tensor *in = k->in, *ids = &in[BD_QEMB_IDS];
    emb_job j = {.k = k, .s = ids->dims[1], .h = in[BD_QEMB_WORD].dims[1]};
    int seg = in[BD_QEMB_SEG_IDS].data != NULL;
    int scales[5] = {8, 9, 10, 11, 12};
    if ((st = check_scales(k, scales, 2)) || (seg && (st = check_scales(k, scales + 2, 1))) ||
        (st = check_scales(k, scales + 3, 2)))
        return st;
    for (int t = 0; t < 5; t++) {
        j.sc[t] = param(k, BD_QEMB_SCALES + t, 1), j.zp[t] = param(k, BD_QEMB_ZPS + t, 0);
        if (t < 3) j.rows[t] = in[BD_QEMB_WORD + t].data ? in[BD_QEMB_WORD + t].dims[0] : 0;
    }
    int64_t n = bd_numel(ids);
    for (int64_t t = 0; t < n; t++) { /* every index checked before the parallel pass */
        int64_t v[3] = {((const int32_t *)ids->data)[t], t % j.s, seg ? ((const int32_t *)in[BD_QEMB_SEG_IDS].data)[t] : 0};
        for (int tb = 0; tb < (seg ? 3 : 2); tb++)
            if (v[tb] < 0 || v[tb] >= j.rows[tb])
                return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "%s %lld at token %lld is out of range for '%s' "
                               "with %lld rows", tb == 1 ? "position" : tb ? "segment id" : "input id", (long long)v[tb],
                               (long long)t, bd_qlinear_input_name(k->node->op, BD_QEMB_WORD + tb), (long long)j.rows[tb]);
    }
    j.gamma = bd_malloc((size_t)(2 * j.h + 1) * sizeof *j.gamma);
    if (!j.gamma) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    j.beta = j.gamma + j.h;
    int u = in[BD_QEMB_GAMMA].dtype == BRAID_DTYPE_UINT8;
    for (int64_t i = 0; i < j.h; i++) {
        int32_t g = u ? ((const uint8_t *)in[BD_QEMB_GAMMA].data)[i] : ((const int8_t *)in[BD_QEMB_GAMMA].data)[i];
        int32_t b = u ? ((const uint8_t *)in[BD_QEMB_BETA].data)[i] : ((const int8_t *)in[BD_QEMB_BETA].data)[i];
        j.gamma[i] = bd_ql_deq(g, (int32_t)j.zp[3], j.sc[3]);
        j.beta[i] = bd_ql_deq(b, (int32_t)j.zp[4], j.sc[4]);
    }
    bd_parallel_for(k->threads, n, BD_MAX((int64_t)1, MIN_CHUNK / BD_MAX(j.h, (int64_t)1)), embed_tokens, &j);
    bd_free(j.gamma);
    if (k->n_out > 1 && k->out[1].data) { /* mask_index: the count of ones per sequence */
        const int32_t *mask = in[BD_QEMB_MASK].data;
        for (int64_t b = 0; b < ids->dims[0]; b++) {
            int32_t c = 0;
            for (int64_t t = 0; mask && t < j.s; t++) c += mask[b * j.s + t] == 1;
            ((int32_t *)k->out[1].data)[b] = c;
        }
    }
    return BRAID_OK;
}

braid_status bd_cpu_qlinear(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_MS_QLinearAdd: case BD_OP_MS_QLinearMul: case BD_OP_MS_QLinearWhere: return binary(k);
    case BD_OP_MS_QLinearSigmoid: case BD_OP_MS_QLinearLeakyRelu: return activation(k);
    case BD_OP_MS_QLinearGlobalAveragePool: case BD_OP_MS_QLinearAveragePool: return pool(k);
    case BD_OP_MS_QLinearConcat: return concat(k);
    case BD_OP_MS_QLinearSoftmax: return softmax(k);
    case BD_OP_MS_QEmbedLayerNormalization: return embed(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the qlinear family", k->node->op_type);
    }
}
