/* qlinear.cu: CUDA kernels of the qlinear op family (com.microsoft's 8-bit
 * QOperator ops), mirroring src/backend/cpu/ops/qlinear.c with the formulas
 * of ops/qlinear.h: one thread per output element for the broadcast binary
 * ops, Where, the activations, Concat and AveragePool (windows summed in the
 * CPU's order), one per (image, channel) for GlobalAveragePool and one per
 * row for Softmax and per token for QEmbedLayerNormalization. Scales and
 * zero points are read on the device. The
 * sigmoid uses the device's expf, which may differ from the host libm's in
 * the last bit (so, rarely, by one code after rounding). */
#include "common.cuh"

extern "C" {
#include "ops/qlinear.h"
}

/* A per-tensor scale or zero point on the device (NULL: 1 or 0). */
struct qp {
    const void *p;
    int dt;
};
__device__ __forceinline__ float scale_of(qp s) { return s.p ? bd_q_scale_at(s.dt, s.p, 0) : 1.0f; }
__device__ __forceinline__ float zero_of(qp z) { return z.p ? bd_q_value_at(z.dt, z.p, 0) : 0.0f; }

__device__ __forceinline__ float ld8(int dt, const void *p, int64_t i)
{
    return dt == BRAID_DTYPE_UINT8 ? (float)((const uint8_t *)p)[i] : (float)((const int8_t *)p)[i];
}
__device__ __forceinline__ void st8(int dt, void *p, int64_t i, float v)
{
    if (dt == BRAID_DTYPE_UINT8) ((uint8_t *)p)[i] = (uint8_t)(int32_t)v;
    else ((int8_t *)p)[i] = (int8_t)(int32_t)v;
}

struct ql_args {
    int op, dt;
    qp xs, xz, ys, yz, zs, zz;
    const void *x, *y;
    const uint8_t *cond;
    void *out;
    float alpha, lo, hi;
};

static __global__ void k_binary(ql_args a, bd_cu_nd g, int64_t n)
{
    float as = scale_of(a.xs), bs = scale_of(a.ys), cs = scale_of(a.zs);
    float az = zero_of(a.xz), bz = zero_of(a.yz), cz = zero_of(a.zz);
    BD_CU_LOOP(i, n)
    {
        int64_t off[3];
        bd_cu_offsets<3>(g, i, off);
        float v;
        if (a.op == BD_OP_MS_QLinearWhere) {
            v = a.cond[off[0]] ? bd_ql_requant(ld8(a.dt, a.x, off[1]) - az, as, cs, cz, a.lo, a.hi)
                               : bd_ql_requant(ld8(a.dt, a.y, off[2]) - bz, bs, cs, cz, a.lo, a.hi);
        } else if (a.op == BD_OP_MS_QLinearMul) {
            v = bd_ql_mul(ld8(a.dt, a.x, off[0]) - az, ld8(a.dt, a.y, off[1]) - bz, BD_QMUL(as, bs) / cs, cz, a.lo, a.hi);
        } else {
            v = bd_ql_add(ld8(a.dt, a.x, off[0]) - az, ld8(a.dt, a.y, off[1]) - bz, as / cs, bs / cs, cz, a.lo, a.hi);
        }
        st8(a.dt, a.out, i, v);
    }
}

static __global__ void k_activation(ql_args a, int64_t n)
{
    float xs = scale_of(a.xs), xz = zero_of(a.xz), ys = scale_of(a.zs), yz = zero_of(a.zz);
    int leaky = a.op == BD_OP_MS_QLinearLeakyRelu;
    BD_CU_LOOP(i, n) st8(a.dt, a.out, i, bd_ql_activation(leaky, ld8(a.dt, a.x, i) - xz, xs, a.alpha, ys, yz, a.lo, a.hi));
}

/* Concat: input block (outer x xrow) requantized into the output at column offset yoff of rows of yrow. */
static __global__ void k_concat(ql_args a, int64_t outer, int64_t xrow, int64_t yrow, int64_t yoff)
{
    float xs = scale_of(a.xs), xz = zero_of(a.xz), ys = scale_of(a.zs), yz = zero_of(a.zz);
    BD_CU_LOOP(i, outer * xrow)
    {
        int64_t o = i / xrow, t = i - o * xrow;
        float x = ld8(a.dt, a.x, i);
        st8(a.dt, a.out, o * yrow + yoff + t, xs == ys && xz == yz ? x : bd_ql_requant(x - xz, xs, ys, yz, a.lo, a.hi));
    }
}

struct pool_args {
    int64_t n, c, s, cs, ss, os, ocs, oss;
    int nsp, include_pad, global;
    int64_t in[3], out[3], kern[3], str[3], dil[3], pb[3], kprod;
};

static __global__ void k_pool(ql_args a, pool_args p)
{
    float xs = scale_of(a.xs), ys = scale_of(a.zs), yz = zero_of(a.zz);
    int32_t zx = (int32_t)zero_of(a.xz);
    int64_t total = p.global ? p.n * p.c : p.n * p.c * p.os;
    BD_CU_LOOP(i, total)
    {
        int64_t o = p.global ? 0 : i % p.os, pl = p.global ? i : i / p.os;
        int64_t n = pl / p.c, c = pl % p.c, base = n * p.c * p.s + c * p.cs, obase = n * p.c * p.os + c * p.ocs;
        if (p.global) {
            int32_t sum = 0;
            for (int64_t s = 0; s < p.s; s++) sum += (int32_t)ld8(a.dt, a.x, base + s * p.ss);
            sum -= zx * (int32_t)p.s;
            st8(a.dt, a.out, obase, bd_ql_gavg(sum, xs / BD_QMUL(ys, (float)p.s), yz, a.lo, a.hi));
            continue;
        }
        int64_t op[3] = {0, 0, 0}, r = o;
        for (int d = p.nsp - 1; d >= 0; d--) op[d] = r % p.out[d], r /= p.out[d];
        int64_t lo3[3] = {0, 0, 0}, hi3[3] = {1, 1, 1}, st3[3] = {0, 0, 0}, dl3[3] = {1, 1, 1}, count = 1;
        for (int d = 0; d < p.nsp; d++) {
            int64_t start = op[d] * p.str[d] - p.pb[d];
            int64_t t0 = start < 0 ? (-start + p.dil[d] - 1) / p.dil[d] : 0, t1 = p.kern[d];
            while (t1 > t0 && start + (t1 - 1) * p.dil[d] >= p.in[d]) t1--;
            lo3[d] = t0, hi3[d] = t1 > t0 ? t1 : t0, st3[d] = start, dl3[d] = p.dil[d];
            count *= hi3[d] - lo3[d];
        }
        int64_t strides[3] = {1, 1, 1};
        for (int d = p.nsp - 2; d >= 0; d--) strides[d] = strides[d + 1] * p.in[d + 1];
        float sum = 0.0f;
        for (int64_t x0 = lo3[0]; x0 < hi3[0]; x0++)
            for (int64_t x1 = lo3[1]; x1 < hi3[1]; x1++)
                for (int64_t x2 = lo3[2]; x2 < hi3[2]; x2++) {
                    int64_t t[3] = {x0, x1, x2}, sp = 0;
                    for (int d = 0; d < p.nsp; d++) sp += (st3[d] + t[d] * dl3[d]) * strides[d];
                    sum = BD_QADD(sum, bd_ql_deq((int32_t)ld8(a.dt, a.x, base + sp * p.ss), zx, xs));
                }
        if (p.include_pad) count = p.kprod;
        st8(a.dt, a.out, obase + o * p.oss, count ? bd_ql_avg(sum, count, ys, yz, a.lo, a.hi) : bd_q_to_int(0.0f, yz, a.lo, a.hi));
    }
}

/* Softmax: one thread per row of d elements at stride inner. */
static __global__ void k_softmax(ql_args a, int64_t rows, int64_t d, int64_t inner)
{
    float xs = scale_of(a.xs), ys = scale_of(a.zs), yz = zero_of(a.zz);
    BD_CU_LOOP(r, rows)
    {
        int64_t base = (r / inner) * d * inner + r % inner;
        float mx = -1000.0f, sum = 0.0f;
        for (int64_t t = 0; t < d; t++) mx = fmaxf(mx, ld8(a.dt, a.x, base + t * inner));
        for (int64_t t = 0; t < d; t++) sum = BD_QADD(sum, expf(BD_QMUL(-(mx - ld8(a.dt, a.x, base + t * inner)), xs)));
        for (int64_t t = 0; t < d; t++) {
            float e = expf(BD_QMUL(-(mx - ld8(a.dt, a.x, base + t * inner)), xs));
            st8(a.dt, a.out, base + t * inner, bd_q_to_int(e / sum / ys, yz, a.lo, a.hi));
        }
    }
}

/* QEmbedLayerNormalization: one thread per token, the row sums in the output
 * itself; a token with an index out of range gets NaN (the CPU reports it). */
struct emb_args {
    const int32_t *ids, *seg;
    const void *tab[5]; /* word, position, segment, gamma, beta */
    qp sc[5], zp[5];
    int dt;
    int64_t tokens, s, h, rows[3];
    float eps;
    const float *gb; /* gamma then beta, dequantized (workspace) */
    float *out;
};

static __global__ void k_embed(emb_args a)
{
    BD_CU_LOOP(t, a.tokens)
    {
        float *o = a.out + t * a.h;
        int64_t row[3] = {a.ids[t], t % a.s, a.seg ? a.seg[t] : 0};
        int nt = a.seg ? 3 : 2, bad = 0;
        for (int tb = 0; tb < nt; tb++) bad |= row[tb] < 0 || row[tb] >= a.rows[tb];
        if (bad) {
            for (int64_t i = 0; i < a.h; i++) o[i] = __int_as_float(0x7fc00000);
            continue;
        }
        for (int tb = 0; tb < nt; tb++) {
            float s = scale_of(a.sc[tb]);
            int32_t z = (int32_t)zero_of(a.zp[tb]);
            for (int64_t i = 0; i < a.h; i++) {
                float v = bd_ql_deq((int32_t)ld8(a.dt, a.tab[tb], row[tb] * a.h + i), z, s);
                o[i] = tb ? BD_QADD(o[i], v) : v;
            }
        }
        bd_qemb_layernorm(o, a.h, a.eps, a.gb, a.gb + a.h);
    }
}

/* gamma and beta dequantized into gb (2h floats), as the CPU does. */
static __global__ void k_embed_gb(emb_args a, float *gb)
{
    BD_CU_LOOP(i, 2 * a.h)
    {
        int tb = i < a.h ? 3 : 4;
        gb[i] = bd_ql_deq((int32_t)ld8(a.dt, a.tab[tb], i % a.h), (int32_t)zero_of(a.zp[tb]), scale_of(a.sc[tb]));
    }
}

static __global__ void k_mask_index(const int32_t *__restrict__ mask, int32_t *__restrict__ out, int64_t b, int64_t s)
{
    BD_CU_LOOP(i, b)
    {
        int32_t c = 0;
        for (int64_t t = 0; mask && t < s; t++) c += mask[i * s + t] == 1;
        out[i] = c;
    }
}

static qp param(const bd_cuda_kernel *k, int i);

static braid_status embed(const bd_cuda_kernel *k, const bd_qlinear_params *p)
{
    const bd_tensor *ids = &k->in[BD_QEMB_IDS];
    emb_args a = {};
    a.ids = (const int32_t *)ids->data;
    a.seg = k->in[BD_QEMB_SEG_IDS].dtype != BRAID_DTYPE_UNDEFINED ? (const int32_t *)k->in[BD_QEMB_SEG_IDS].data : NULL;
    for (int t = 0; t < 5; t++) {
        a.tab[t] = k->in[BD_QEMB_WORD + t].data;
        a.sc[t] = param(k, BD_QEMB_SCALES + t), a.zp[t] = param(k, BD_QEMB_ZPS + t);
        if (t < 3) a.rows[t] = k->in[BD_QEMB_WORD + t].dtype != BRAID_DTYPE_UNDEFINED ? k->in[BD_QEMB_WORD + t].dims[0] : 0;
    }
    a.dt = k->in[BD_QEMB_WORD].dtype;
    a.tokens = bd_numel(ids), a.s = ids->dims[1], a.h = k->in[BD_QEMB_WORD].dims[1], a.eps = p->epsilon;
    a.out = (float *)k->out[0].data;
    if ((size_t)(2 * a.h) * sizeof(float) > k->workspace_size)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "QEmbedLayerNormalization: hidden size %lld is beyond the CUDA workspace",
                       (long long)a.h);
    float *gb = (float *)k->workspace;
    if (a.h > 0) k_embed_gb<<<bd_cu_grid(2 * a.h), BD_CU_BLOCK, 0, k->stream>>>(a, gb);
    a.gb = gb;
    if (a.tokens > 0) k_embed<<<bd_cu_grid(a.tokens, 64), 64, 0, k->stream>>>(a);
    BD_CU_CHECK_LAUNCH(k, "the QEmbedLayerNormalization kernel");
    if (k->n_out > 1 && k->out[1].data && ids->dims[0] > 0) {
        const int32_t *mask = k->in[BD_QEMB_MASK].dtype != BRAID_DTYPE_UNDEFINED ? (const int32_t *)k->in[BD_QEMB_MASK].data : NULL;
        k_mask_index<<<bd_cu_grid(ids->dims[0]), BD_CU_BLOCK, 0, k->stream>>>(mask, (int32_t *)k->out[1].data,
                                                                              ids->dims[0], a.s);
        BD_CU_CHECK_LAUNCH(k, "QEmbedLayerNormalization's mask index");
    }
    return BRAID_OK;
}

/* ---- launchers ------------------------------------------------------------------------------- */

static qp param(const bd_cuda_kernel *k, int i)
{
    qp r = {NULL, 0};
    if (i >= 0 && i < k->n_in && k->in[i].dtype != BRAID_DTYPE_UNDEFINED) r.p = k->in[i].data, r.dt = k->in[i].dtype;
    return r;
}

static braid_status pool(const bd_cuda_kernel *k, ql_args &a)
{
    const bd_qlinear_params *p = (const bd_qlinear_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    pool_args g = {};
    int cl = p->channels_last, r = x->rank;
    g.global = k->node->op == BD_OP_MS_QLinearGlobalAveragePool;
    g.n = x->dims[0], g.c = cl ? x->dims[r - 1] : x->dims[1], g.s = 1;
    for (int d = cl ? 1 : 2; d < (cl ? r - 1 : r); d++) g.s *= x->dims[d];
    g.os = bd_numel(&k->out[0]) / BD_MAX((int64_t)1, g.n * g.c);
    g.cs = cl ? 1 : g.s, g.ss = cl ? g.c : 1, g.ocs = cl ? 1 : g.os, g.oss = cl ? g.c : 1;
    if (!g.global) {
        bd_tensor v = *x;
        if (cl) {
            v.dims[1] = x->dims[r - 1];
            for (int d = 2; d < r; d++) v.dims[d] = x->dims[d - 1];
        }
        bd_pool_geom pg;
        bd_node c = *k->node;
        c.op = BD_OP_AveragePool;
        braid_status st = bd_pool_geometry(&c, &v, &pg, k->err);
        if (st) return st;
        g.nsp = p->pool.nsp;
        g.kprod = 1;
        for (int d = 0; d < g.nsp; d++) {
            g.in[d] = pg.in[d], g.out[d] = pg.out[d], g.kern[d] = p->pool.kernel[d], g.str[d] = p->pool.strides[d];
            g.dil[d] = p->pool.dilations[d], g.pb[d] = pg.pad_begin[d];
            g.kprod *= g.kern[d];
        }
        g.include_pad = p->pool.count_include_pad;
    }
    int64_t total = g.global ? g.n * g.c : g.n * g.c * g.os;
    if (total <= 0) return BRAID_OK;
    k_pool<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(a, g);
    BD_CU_CHECK_LAUNCH(k, "a QLinear pool kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_qlinear(const bd_cuda_kernel *k)
{
    const bd_qlinear_params *p = (const bd_qlinear_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    bd_qlinear_io io = bd_qlinear_io_of(k->node->op);
    bd_tensor *out = &k->out[0];
    ql_args a = {};
    a.op = k->node->op, a.dt = out->dtype, a.out = out->data, a.alpha = p->alpha;
    bd_q_int_range(a.dt, &a.lo, &a.hi);
    int64_t n = bd_numel(out);
    switch (k->node->op) {
    case BD_OP_MS_QLinearAdd: case BD_OP_MS_QLinearMul: case BD_OP_MS_QLinearWhere: {
        int where = k->node->op == BD_OP_MS_QLinearWhere;
        a.xs = param(k, io.xs), a.xz = param(k, io.xzp), a.ys = param(k, io.ys), a.yz = param(k, io.yzp);
        a.zs = param(k, io.zs), a.zz = param(k, io.zzp);
        a.x = k->in[io.x].data, a.y = k->in[io.y].data, a.cond = where ? (const uint8_t *)k->in[0].data : NULL;
        const bd_tensor *ins[3] = {where ? &k->in[0] : &k->in[io.x], where ? &k->in[io.x] : &k->in[io.y], &k->in[io.y]};
        int64_t strd[BD_CU_MAX_IN][BD_MAX_RANK] = {};
        for (int i = 0; i < (where ? 3 : 2); i++) bd_cu_bcast_strides(ins[i], out->rank, out->dims, strd[i]);
        bd_cu_nd g = {};
        bd_cu_nd_make(&g, out->rank, out->dims, where ? 3 : 2, strd);
        if (n > 0) k_binary<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, g, n);
        break;
    }
    case BD_OP_MS_QLinearSigmoid: case BD_OP_MS_QLinearLeakyRelu:
        a.xs = param(k, 1), a.xz = param(k, 2), a.zs = param(k, 3), a.zz = param(k, 4), a.x = k->in[0].data;
        if (n > 0) k_activation<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, n);
        break;
    case BD_OP_MS_QLinearGlobalAveragePool: case BD_OP_MS_QLinearAveragePool:
        a.xs = param(k, 1), a.xz = param(k, 2), a.zs = param(k, 3), a.zz = param(k, 4), a.x = k->in[0].data;
        return pool(k, a);
    case BD_OP_MS_QLinearConcat: {
        int ax;
        braid_status st = bd_axis(p->axis, out->rank, &ax, k->err);
        if (st) return st;
        int64_t outer = 1, inner = 1, yoff = 0;
        for (int d = 0; d < ax; d++) outer *= out->dims[d];
        for (int d = ax + 1; d < out->rank; d++) inner *= out->dims[d];
        a.zs = param(k, 0), a.zz = param(k, 1);
        for (int i = 2; i + 2 < k->n_in; i += 3) {
            int64_t xrow = k->in[i].dims[ax] * inner;
            a.x = k->in[i].data, a.xs = param(k, i + 1), a.xz = param(k, i + 2);
            if (outer * xrow > 0)
                k_concat<<<bd_cu_grid(outer * xrow), BD_CU_BLOCK, 0, k->stream>>>(a, outer, xrow, out->dims[ax] * inner,
                                                                                   yoff);
            BD_CU_CHECK_LAUNCH(k, "the QLinearConcat kernel");
            yoff += xrow;
        }
        return BRAID_OK;
    }
    case BD_OP_MS_QLinearSoftmax: {
        const bd_tensor *x = &k->in[0];
        int ax;
        braid_status st = bd_axis(p->axis, x->rank, &ax, k->err);
        if (st) return st;
        int64_t outer = 1, d = 1, inner = 1;
        for (int i = 0; i < x->rank; i++) {
            if (i < ax) outer *= x->dims[i];
            else if (i == ax || p->softmax_opset < 13) d *= x->dims[i];
            else inner *= x->dims[i];
        }
        a.xs = param(k, 1), a.xz = param(k, 2), a.zs = param(k, 3), a.zz = param(k, 4), a.x = x->data;
        if (outer * inner > 0 && d > 0)
            k_softmax<<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(a, outer * inner, d, inner);
        break;
    }
    case BD_OP_MS_QEmbedLayerNormalization: return embed(k, p);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the qlinear family", k->node->op_type);
    }
    BD_CU_CHECK_LAUNCH(k, "a qlinear kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_qlinear_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
