/* quant.c: CPU kernels of the quant op family: QuantizeLinear and
 * DequantizeLinear (both domains; per tensor, per axis, blocked; every
 * dtype of the spec) and DynamicQuantizeLinear. Work goes in blocks of
 * BLK elements through three flat loops that vectorize (load as float,
 * the formula of ops/quant.h, store as the output dtype), over threads
 * in contiguous chunks: every element is computed alike whatever the split. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math", "no-math-errno")
#endif

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ops/quant.h"

#define BLK 512
#define MIN_CHUNK (1 << 15) /* elements per thread worth a thread */

typedef struct qd_job {
    bd_qview v;
    const float *sf, *zf; /* the scales and zero points as float; zf NULL: all zero */
    const void *x;
    void *y;
    int xdt, ydt;
    int prec;             /* QuantizeLinear: the dtype the division rounds to */
    int has_zp, sat;
    float lo, hi;         /* integer outputs: the saturation range */
    float lut[256];       /* DequantizeLinear of a narrow float: code -> value */
} qd_job;

/* The scale and zero point of elements [i0, i0 + c). */
static void gather(const qd_job *j, int64_t i0, int64_t c, float *sb, float *zb)
{
    const bd_qview *v = &j->v;
    const float *sf = j->sf, *zf = j->zf;
    if (v->mode == BD_QV_TENSOR) {
        float s = sf[0], z = zf ? zf[0] : 0.0f;
        for (int64_t t = 0; t < c; t++) sb[t] = s, zb[t] = z;
        return;
    }
    int64_t in = i0 % v->inner, r = i0 / v->inner, a = r % v->d, o = r / v->d;
    const int64_t inner = v->inner, d = v->d, s = v->s, block = v->block;
    const int axis = v->mode == BD_QV_AXIS;
    for (int64_t t = 0; t < c; t++) {
        int64_t idx = axis ? a : (o * s + a / block) * inner + in;
        sb[t] = sf[idx];
        zb[t] = zf ? zf[idx] : 0.0f;
        if (++in == inner) {
            in = 0;
            if (++a == d) a = 0, o++;
        }
    }
}

/* Integer outputs: q (already x / scale) -> saturated integers of type T. */
#define STORE_INT(T)                                                                               \
    do {                                                                                           \
        T *y = (T *)j->y + off;                                                                    \
        const float lo = j->lo, hi = j->hi; /* locals: y may alias *j */                           \
        for (int64_t t = 0; t < c; t++) y[t] = (T)(int32_t)bd_q_to_int(qb[t], zb[t], lo, hi);      \
    } while (0)

static void store_q(const qd_job *j, int64_t off, int64_t c, const float *qb, const float *zb)
{
    switch (j->ydt) {
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: STORE_INT(uint8_t); break;
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: STORE_INT(int8_t); break;
    case BRAID_DTYPE_UINT16: STORE_INT(uint16_t); break;
    case BRAID_DTYPE_INT16: STORE_INT(int16_t); break;
    default: { /* narrow floats */
        bd_mf_format f = bd_minifloat_format(j->ydt, NULL);
        uint8_t *y = (uint8_t *)j->y + off;
        for (int64_t t = 0; t < c; t++) y[t] = bd_q_to_minifloat(&f, qb[t], zb[t], j->has_zp, j->sat);
        break;
    }
    }
}

/* The runs of elements that share one scale: all of x per tensor, the
 * inner rows per axis; 0 (no runs) for the other layouts, which go through
 * the per-element gather. */
static int64_t run_length(const qd_job *j)
{
    if (j->v.mode == BD_QV_TENSOR) return INT64_MAX;
    if (j->v.mode == BD_QV_AXIS && j->v.inner >= 16) return j->v.inner;
    return 0;
}

/* The common cases in one flat loop per run: float to 8- and 16-bit integers
 * (Q) and back (DQ). Returns 0 when the job is not one of them. */
#define FAST_Q(T)                                                                                  \
    do {                                                                                           \
        T *y = (T *)j->y;                                                                          \
        for (int64_t i = off; i < end; i++) y[i] = (T)(int32_t)bd_q_to_int(x[i] / sc, z, lo, hi);  \
    } while (0)
#define FAST_DQ(T)                                                                                 \
    do {                                                                                           \
        const T *xq = (const T *)j->x;                                                             \
        for (int64_t i = off; i < end; i++) y[i] = ((float)xq[i] - z) * sc;                        \
    } while (0)
static int fast_range(const qd_job *j, int q, int64_t b, int64_t e)
{
    int64_t run = run_length(j);
    int dt = q ? j->ydt : j->xdt;
    int ints = dt == BRAID_DTYPE_UINT8 || dt == BRAID_DTYPE_INT8 || dt == BRAID_DTYPE_UINT16 || dt == BRAID_DTYPE_INT16 ||
               dt == BRAID_DTYPE_UINT4 || dt == BRAID_DTYPE_INT4 || dt == BRAID_DTYPE_UINT2 || dt == BRAID_DTYPE_INT2;
    if (!run || !ints || (q ? j->xdt != BRAID_DTYPE_FLOAT || j->prec != BRAID_DTYPE_FLOAT : j->ydt != BRAID_DTYPE_FLOAT))
        return 0;
    const float *x = j->x, lo = j->lo, hi = j->hi;
    float *y = j->y;
    for (int64_t off = b; off < e;) {
        int64_t idx = run == INT64_MAX ? 0 : (off / run) % j->v.d;
        int64_t end = run == INT64_MAX ? e : BD_MIN(e, (off / run + 1) * run);
        const float sc = j->sf[idx], z = j->zf ? j->zf[idx] : 0.0f;
        switch (dt) {
        case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2:
            if (q) FAST_Q(uint8_t); else FAST_DQ(uint8_t);
            break;
        case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2:
            if (q) FAST_Q(int8_t); else FAST_DQ(int8_t);
            break;
        case BRAID_DTYPE_UINT16: if (q) FAST_Q(uint16_t); else FAST_DQ(uint16_t); break;
        default: if (q) FAST_Q(int16_t); else FAST_DQ(int16_t); break;
        }
        off = end;
    }
    return 1;
}

static void quantize_range(void *vj, int64_t b, int64_t e)
{
    if (fast_range(vj, 1, b, e)) return;
    const qd_job *j = vj;
    float xb[BLK], sb[BLK], zb[BLK], qb[BLK];
    for (int64_t off = b; off < e; off += BLK) {
        int64_t c = BD_MIN((int64_t)BLK, e - off);
        gather(j, off, c, sb, zb);
        if (j->xdt == BRAID_DTYPE_INT32) { /* as onnx's reference: int32 / float in double */
            const int32_t *x = (const int32_t *)j->x + off;
            int integer = j->ydt != BRAID_DTYPE_FLOAT && !bd_dtype_is_narrow_float(j->ydt);
            for (int64_t t = 0; t < c; t++) {
                double q = (double)x[t] / (double)bd_q_round_to(j->prec, sb[t]);
                if (j->prec == BRAID_DTYPE_FLOAT16 || j->prec == BRAID_DTYPE_BFLOAT16)
                    q = bd_q_round_to(j->prec, (float)q);
                if (integer) qb[t] = (float)bd_q_to_int_d(q, zb[t], j->lo, j->hi), zb[t] = 0.0f;
                else qb[t] = (float)q;
            }
            store_q(j, off, c, qb, zb); /* integers: already saturated, stored exactly */
            continue;
        }
        if (j->xdt == BRAID_DTYPE_FLOAT) memcpy(xb, (const float *)j->x + off, (size_t)c * sizeof *xb);
        else if (j->xdt == BRAID_DTYPE_FLOAT16)
            for (int64_t t = 0; t < c; t++) xb[t] = bd_half_to_float_hd(((const uint16_t *)j->x)[off + t]);
        else
            for (int64_t t = 0; t < c; t++) xb[t] = bd_bf16_to_float(((const uint16_t *)j->x)[off + t]);
        if (j->prec == BRAID_DTYPE_FLOAT16 || j->prec == BRAID_DTYPE_BFLOAT16) {
            for (int64_t t = 0; t < c; t++)
                qb[t] = bd_q_round_to(j->prec, bd_q_round_to(j->prec, xb[t]) / bd_q_round_to(j->prec, sb[t]));
        } else {
            for (int64_t t = 0; t < c; t++) qb[t] = xb[t] / sb[t];
        }
        store_q(j, off, c, qb, zb);
    }
}

/* x as float: integers exactly (int32 rounds, as the reference's astype). */
#define LOAD_INT(T)                                                                                \
    do {                                                                                           \
        const T *x = (const T *)j->x + off;                                                        \
        for (int64_t t = 0; t < c; t++) xb[t] = (float)x[t];                                        \
    } while (0)

static void dequantize_range(void *vj, int64_t b, int64_t e)
{
    if (fast_range(vj, 0, b, e)) return;
    const qd_job *j = vj;
    float xb[BLK], sb[BLK], zb[BLK], yb[BLK];
    for (int64_t off = b; off < e; off += BLK) {
        int64_t c = BD_MIN((int64_t)BLK, e - off);
        gather(j, off, c, sb, zb);
        switch (j->xdt) {
        case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: LOAD_INT(uint8_t); break;
        case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: LOAD_INT(int8_t); break;
        case BRAID_DTYPE_UINT16: LOAD_INT(uint16_t); break;
        case BRAID_DTYPE_INT16: LOAD_INT(int16_t); break;
        case BRAID_DTYPE_INT32: LOAD_INT(int32_t); break;
        default: {
            const uint8_t *x = (const uint8_t *)j->x + off;
            for (int64_t t = 0; t < c; t++) xb[t] = j->lut[x[t]];
        }
        }
        if (j->xdt == BRAID_DTYPE_INT32) /* as the reference: float32 x minus int32 zp in double */
            for (int64_t t = 0; t < c; t++) yb[t] = (float)(((double)xb[t] - (double)zb[t]) * (double)sb[t]);
        else
            for (int64_t t = 0; t < c; t++) yb[t] = (xb[t] - zb[t]) * sb[t];
        if (j->ydt == BRAID_DTYPE_FLOAT) memcpy((float *)j->y + off, yb, (size_t)c * sizeof *yb);
        else if (j->ydt == BRAID_DTYPE_FLOAT16)
            for (int64_t t = 0; t < c; t++) ((uint16_t *)j->y)[off + t] = bd_float_to_half(yb[t]);
        else
            for (int64_t t = 0; t < c; t++) ((uint16_t *)j->y)[off + t] = bd_float_to_bf16(yb[t]);
    }
}

/* Q and DQ: the scales and zero points as float, checked, then the elements. */
static braid_status quant_dequant(const bd_kernel *k, int q)
{
    braid_status st = BRAID_OK;
    const bd_quant_params *p = k->node->params;
    const bd_tensor *x = &k->in[0], *s = &k->in[1];
    const bd_tensor *z = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    qd_job *j = bd_calloc(1, sizeof *j);
    float *buf = NULL;
    BD_CHECK_ALLOC(k->err, j);
    BD_TRY(bd_qview_make(x, s, z, p->axis, p->block_size, q ? "y_scale" : "x_scale",
                         q ? "y_zero_point" : "x_zero_point", &j->v, k->err));
    int64_t ns = bd_numel(s), n = bd_numel(x);
    buf = bd_malloc((size_t)(2 * ns + 1) * sizeof *buf);
    BD_CHECK_ALLOC(k->err, buf);
    for (int64_t i = 0; i < ns; i++) {
        buf[i] = bd_q_scale_at(s->dtype, s->data, i);
        buf[ns + i] = z ? bd_q_value_at(z->dtype, z->data, i) : 0.0f;
    }
    bd_tensor sv = *s;
    sv.data = buf;
    sv.dtype = BRAID_DTYPE_FLOAT;
    BD_TRY(bd_q_check_scale(&sv, q ? "y_scale" : "x_scale", k->err));
    j->sf = buf;
    j->zf = z ? buf + ns : NULL;
    j->x = x->data;
    j->y = k->out[0].data;
    j->xdt = x->dtype;
    j->ydt = k->out[0].dtype;
    j->prec = p->precision ? p->precision : s->dtype;
    j->has_zp = z != NULL;
    j->sat = p->saturate;
    bd_q_int_range(j->ydt, &j->lo, &j->hi);
    if (!q && bd_dtype_is_narrow_float(x->dtype)) {
        bd_mf_format f = bd_minifloat_format(x->dtype, NULL);
        for (int c = 0; c < 256; c++) j->lut[c] = bd_minifloat_to_float(&f, (uint8_t)c);
    }
    bd_parallel_for(k->threads, n, MIN_CHUNK, q ? quantize_range : dequantize_range, j);
fail:
    bd_free(buf);
    bd_free(j);
    return st;
}

/* ---- DynamicQuantizeLinear ----------------------------------------------------------------- */

#define DQL_SLOTS 64

typedef struct dql_job {
    const float *x;
    uint8_t *y;
    int64_t n, slots;
    float mn[DQL_SLOTS], mx[DQL_SLOTS];
    float scale, zp;
} dql_job;

/* The min and max of x[0..n) and 0, NaN skipped (v < m ? v : m keeps m for
 * NaN; so does SSE's minps with the running value second). A min
 * reduction does not vectorize without -ffast-math, hence the intrinsics. */
static void minmax(const float *x, int64_t n, float *pmn, float *pmx)
{
    float mn = 0.0f, mx = 0.0f;
    int64_t i = 0;
#if defined(__SSE2__)
    __m128 vmn = _mm_setzero_ps(), vmx = _mm_setzero_ps(), wmn = vmn, wmx = vmx;
    for (; i + 8 <= n; i += 8) {
        __m128 a = _mm_loadu_ps(x + i), b = _mm_loadu_ps(x + i + 4);
        vmn = _mm_min_ps(a, vmn), vmx = _mm_max_ps(a, vmx);
        wmn = _mm_min_ps(b, wmn), wmx = _mm_max_ps(b, wmx);
    }
    float l[8];
    _mm_storeu_ps(l, _mm_min_ps(vmn, wmn));
    _mm_storeu_ps(l + 4, _mm_max_ps(vmx, wmx));
    for (int k = 0; k < 4; k++) {
        mn = l[k] < mn ? l[k] : mn;
        mx = l[4 + k] > mx ? l[4 + k] : mx;
    }
#endif
    for (; i < n; i++) {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
    }
    *pmn = mn, *pmx = mx;
}

/* Slot s: the min and max of its share of x. */
static void dql_minmax(void *vj, int64_t b, int64_t e)
{
    dql_job *j = vj;
    for (int64_t s = b; s < e; s++) {
        int64_t i0 = j->n * s / j->slots, i1 = j->n * (s + 1) / j->slots;
        minmax(j->x + i0, i1 - i0, &j->mn[s], &j->mx[s]);
    }
}

static void dql_quantize(void *vj, int64_t b, int64_t e)
{
    const dql_job *j = vj;
    const float s = j->scale, z = j->zp, *x = j->x; /* locals: y may alias *j */
    uint8_t *y = j->y;
    for (int64_t i = b; i < e; i++) y[i] = (uint8_t)(int32_t)bd_q_to_int(x[i] / s, z, 0.0f, 255.0f);
}

/* The range of x, then bd_q_dynamic_params, then the quantize pass. */
static braid_status dynamic_quantize(const bd_kernel *k)
{
    dql_job j = {.x = k->in[0].data, .y = k->out[0].data, .n = bd_numel(&k->in[0])};
    j.slots = BD_MAX((int64_t)1, BD_MIN(BD_MIN((int64_t)k->threads, (int64_t)DQL_SLOTS), j.n / MIN_CHUNK));
    bd_parallel_for(k->threads, j.slots, 1, dql_minmax, &j);
    float mn = 0.0f, mx = 0.0f;
    for (int64_t s = 0; s < j.slots; s++) {
        mn = j.mn[s] < mn ? j.mn[s] : mn;
        mx = j.mx[s] > mx ? j.mx[s] : mx;
    }
    bd_q_dynamic_params(mn, mx, &j.scale, &j.zp);
    bd_parallel_for(k->threads, j.n, MIN_CHUNK, dql_quantize, &j);
    if (k->n_out > 1 && k->out[1].data) *(float *)k->out[1].data = j.scale;
    if (k->n_out > 2 && k->out[2].data) *(uint8_t *)k->out[2].data = (uint8_t)j.zp;
    return BRAID_OK;
}

braid_status bd_cpu_quant(const bd_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_QuantizeLinear: case BD_OP_MS_QuantizeLinear: return quant_dequant(k, 1);
    case BD_OP_DequantizeLinear: case BD_OP_MS_DequantizeLinear: return quant_dequant(k, 0);
    case BD_OP_DynamicQuantizeLinear: return dynamic_quantize(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the quant family", k->node->op_type);
    }
}
