/* qgemm.cu: CUDA kernels of the qgemm op family, computing what
 * src/backend/cpu/ops/qgemm.c computes: exact int32 accumulations of
 * (a - a_zero_point)(b - b_zero_point), then the epilogue of ops/qgemm.h
 * (kept, requantized with bd_q_requant, or scaled to float with
 * bd_qepi_float and the multiplier of bd_qgemm_mult). Products run as a
 * 16 x 16 shared-memory tiled kernel over any strides (transposes, batch
 * broadcast by bd_cu_nd offsets, per-row / per-column zero points and
 * scales through bd_qvec); convolutions as a direct kernel, one thread per
 * output element. DynamicQuantizeMatMul quantizes A into the workspace
 * first (device-side min/max, scale and zero point). Scales and zero points
 * are read on the device: no host round trip. */
#include "common.cuh"

extern "C" {
#include "ops/gemm.h"
#include "ops/qgemm.h"
}

#define TILE 16

/* An epilogue's inputs, all on the device (pointers NULL when absent). */
struct epi_args {
    int kind, ydt, sdt, qgemm;
    float alpha;
    const void *as, *bs, *ys, *yzp, *fbias;
    int asdt, bsdt, ysdt, yzdt, fbdt;
    bd_qvec vs;              /* b_scale per column (matrices) */
    int64_t bs_n;            /* convolutions: w_scale values (1 or M) */
    const int32_t *ibias;    /* QGemm's C (strides bi, bj) or QLinearConv's B */
    int64_t bi, bj;
    const float *dyn;        /* DynamicQuantizeMatMul: (a_scale, a_zero_point) on the device */
    void *y;
};

__device__ __forceinline__ int32_t q8(int dt, const void *p, int64_t i)
{
    return dt == BRAID_DTYPE_UINT8 ? (int32_t)((const uint8_t *)p)[i] : (int32_t)((const int8_t *)p)[i];
}

/* Output element o of (row i, column j) from accumulator acc; bs_at is the index of its b_scale. */
__device__ __forceinline__ void epi_store(const epi_args &e, int64_t o, int32_t acc, int64_t i, int64_t j,
                                          int64_t bs_at, int64_t fb_at)
{
    if (e.ibias) acc = (int32_t)((uint32_t)acc + (uint32_t)e.ibias[i * e.bi + j * e.bj]);
    if (e.kind == BD_QEPI_INT32) {
        ((int32_t *)e.y)[o] = acc;
        return;
    }
    float as = e.dyn ? e.dyn[0] : e.as ? bd_q_scale_at(e.asdt, e.as, 0) : 1.0f;
    float bs = e.bs ? bd_q_scale_at(e.bsdt, e.bs, bs_at) : 1.0f;
    float ys = e.ys ? bd_q_scale_at(e.ysdt, e.ys, 0) : 1.0f;
    float m = bd_qgemm_mult(e.qgemm, e.alpha, as, bs, e.ys != NULL, ys, e.sdt);
    if (e.kind == BD_QEPI_REQUANT) {
        float lo, hi;
        bd_q_int_range(e.ydt, &lo, &hi);
        float q = bd_q_requant(acc, m, bd_q_value_at(e.yzdt, e.yzp, 0), lo, hi);
        if (e.ydt == BRAID_DTYPE_UINT8) ((uint8_t *)e.y)[o] = (uint8_t)(int32_t)q;
        else ((int8_t *)e.y)[o] = (int8_t)(int32_t)q;
        return;
    }
    float f = bd_qepi_float(acc, m, e.fbias ? bd_q_scale_at(e.fbdt, e.fbias, fb_at) : 0.0f);
    if (e.ydt == BRAID_DTYPE_FLOAT16) ((uint16_t *)e.y)[o] = bd_float_to_half(f);
    else ((float *)e.y)[o] = f;
}

/* ---- products ------------------------------------------------------------------------------- */

struct mm_args {
    const void *a, *b;
    int adt, bdt;
    int64_t m, n, k, sam, sak, sbk, sbn, a_mat, b_mat, batch;
    bd_cu_nd g;              /* output batch -> (A matrix, B matrix) */
    const void *azp, *bzp;   /* per row of A / per column of B (bd_qvec) */
    int azdt, bzdt;
    bd_qvec va, vb;
};

static __global__ void k_qmatmul(mm_args a, epi_args e)
{
    __shared__ int32_t sa[TILE][TILE + 1], sb[TILE][TILE + 1];
    int64_t t = blockIdx.z, i = (int64_t)blockIdx.y * TILE + threadIdx.y, j = (int64_t)blockIdx.x * TILE + threadIdx.x;
    int64_t off[2];
    bd_cu_offsets<2>(a.g, t, off);
    const char *ap = (const char *)a.a + off[0] * a.a_mat, *bp = (const char *)a.b + off[1] * a.b_mat;
    int32_t za = 0, zb = 0;
    if (a.azp && i < a.m) za = q8(a.azdt, a.azp, bd_qvec_index(&a.va, off[0] * a.m + i));
    if (e.dyn) za = (int32_t)e.dyn[1];
    int64_t jl = (int64_t)blockIdx.x * TILE + threadIdx.y; /* the column this thread loads for B */
    if (a.bzp && jl < a.n) zb = q8(a.bzdt, a.bzp, bd_qvec_index(&a.vb, off[1] * a.n + jl));
    int32_t acc = 0;
    for (int64_t k0 = 0; k0 < a.k; k0 += TILE) {
        int64_t ka = k0 + threadIdx.x;
        sa[threadIdx.y][threadIdx.x] = i < a.m && ka < a.k ? q8(a.adt, ap, i * a.sam + ka * a.sak) - za : 0;
        sb[threadIdx.x][threadIdx.y] = jl < a.n && ka < a.k ? q8(a.bdt, bp, ka * a.sbk + jl * a.sbn) - zb : 0;
        __syncthreads();
        for (int q = 0; q < TILE; q++)
            acc = (int32_t)((uint32_t)acc + (uint32_t)(sa[threadIdx.y][q] * sb[q][threadIdx.x]));
        __syncthreads();
    }
    if (i < a.m && j < a.n)
        epi_store(e, (t * a.m + i) * a.n + j, acc, i, j, bd_qvec_index(&e.vs, off[1] * a.n + j), j);
}

/* DynamicQuantizeMatMul's A: block partial min/max, then (scale, zero point), then uint8 codes. */
#define DYN_BLOCKS 256
static __global__ void k_dyn_minmax(const float *__restrict__ x, int64_t n, float *__restrict__ part)
{
    __shared__ float sh[32];
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        mn = x[i] < mn ? x[i] : mn;
        mx = x[i] > mx ? x[i] : mx;
    }
    mx = bd_cu_block_max(mx, 0.0f, sh);
    mn = -bd_cu_block_max(-mn, 0.0f, sh);
    if (threadIdx.x == 0) part[2 * blockIdx.x] = mn, part[2 * blockIdx.x + 1] = mx;
}
static __global__ void k_dyn_params(const float *__restrict__ part, int blocks, float *params)
{
    float mn = 0.0f, mx = 0.0f;
    for (int b = 0; b < blocks; b++) {
        mn = part[2 * b] < mn ? part[2 * b] : mn;
        mx = part[2 * b + 1] > mx ? part[2 * b + 1] : mx;
    }
    bd_q_dynamic_params(mn, mx, &params[0], &params[1]);
}
static __global__ void k_dyn_quantize(const float *__restrict__ x, uint8_t *__restrict__ q, int64_t n,
                                      const float *__restrict__ params)
{
    float s = params[0], z = params[1];
    BD_CU_LOOP(i, n) q[i] = (uint8_t)(int32_t)bd_q_to_int(__fdiv_rn(x[i], s), z, 0.0f, 255.0f);
}

/* The epilogue arguments of node k (scales read on the device). */
static void epi_make(const bd_cuda_kernel *k, const bd_qgemm_io &io, epi_args &e)
{
    const bd_qgemm_params *p = (const bd_qgemm_params *)k->node->params;
    auto has = [&](int i) { return i >= 0 && k->in[i].dtype != BRAID_DTYPE_UNDEFINED; };
    memset(&e, 0, sizeof e);
    e.ydt = k->out[0].dtype;
    e.kind = e.ydt == BRAID_DTYPE_INT32 ? BD_QEPI_INT32 : has(io.yzp) ? BD_QEPI_REQUANT : BD_QEPI_FLOAT;
    e.qgemm = k->node->op == BD_OP_MS_QGemm;
    e.alpha = p->alpha;
    e.sdt = k->node->op == BD_OP_QLinearMatMul ? k->in[io.as].dtype : BRAID_DTYPE_FLOAT;
    if (has(io.as)) e.as = k->in[io.as].data, e.asdt = k->in[io.as].dtype;
    if (has(io.bs)) e.bs = k->in[io.bs].data, e.bsdt = k->in[io.bs].dtype, e.bs_n = bd_numel(&k->in[io.bs]);
    if (has(io.ys)) e.ys = k->in[io.ys].data, e.ysdt = k->in[io.ys].dtype;
    if (has(io.yzp)) e.yzp = k->in[io.yzp].data, e.yzdt = k->in[io.yzp].dtype;
    if (io.fbias && has(io.bias)) e.fbias = k->in[io.bias].data, e.fbdt = k->in[io.bias].dtype;
    e.vs.rank = 1, e.vs.dims[0] = 1;
    e.y = k->out[0].data;
}

static braid_status matmul(const bd_cuda_kernel *k, const bd_qgemm_io &io)
{
    const bd_qgemm_params *p = (const bd_qgemm_params *)k->node->params;
    const bd_tensor *a = &k->in[io.a], *b = &k->in[io.b];
    const bd_tensor none = {BRAID_DTYPE_UNDEFINED, -1};
    const bd_tensor *azp = io.azp >= 0 ? &k->in[io.azp] : &none, *bzp = io.bzp >= 0 ? &k->in[io.bzp] : &none;
    const bd_tensor *bs = io.bs >= 0 ? &k->in[io.bs] : &none;
    int qg = k->node->op == BD_OP_MS_QGemm, ta = qg && p->trans_a, tb = qg && p->trans_b;
    mm_args m = {};
    epi_args e;
    bd_matmul_geom g;
    braid_status st;
    if (qg) {
        memset(&g, 0, sizeof g);
        g.m = a->dims[ta ? 1 : 0], g.k = a->dims[ta ? 0 : 1], g.n = b->dims[tb ? 0 : 1];
    } else if ((st = bd_matmul_geometry(a, b, &g, NULL, k->err))) {
        return st;
    }
    if ((st = bd_qvec_make(azp, a, 0, 0, "a_zero_point", &m.va, k->err)) ||
        (st = bd_qvec_make(bzp, b, 1, tb, "b_zero_point", &m.vb, k->err)))
        return st;
    epi_make(k, io, e);
    if ((st = bd_qvec_make(bs, b, 1, tb, "b_scale", &e.vs, k->err))) return st;
    m.a = a->data, m.b = b->data, m.adt = a->dtype, m.bdt = b->dtype;
    m.m = g.m, m.n = g.n, m.k = g.k;
    m.sam = ta ? 1 : g.k, m.sak = ta ? g.m : 1, m.sbk = tb ? 1 : g.n, m.sbn = tb ? g.k : 1;
    m.a_mat = g.m * g.k, m.b_mat = g.k * g.n;
    m.batch = bd_numel(&g.batch);
    if (azp->dtype != BRAID_DTYPE_UNDEFINED) m.azp = azp->data, m.azdt = azp->dtype;
    if (bzp->dtype != BRAID_DTYPE_UNDEFINED) m.bzp = bzp->data, m.bzdt = bzp->dtype;
    if (io.bias >= 0 && !io.fbias && k->in[io.bias].dtype != BRAID_DTYPE_UNDEFINED) {
        const bd_tensor *c = &k->in[io.bias];
        e.ibias = (const int32_t *)c->data;
        e.bi = c->rank == 2 && c->dims[0] != 1 ? c->dims[1] : 0;
        e.bj = c->rank >= 1 && c->dims[c->rank - 1] != 1 ? 1 : 0;
    }
    int64_t strd[BD_CU_MAX_IN][BD_MAX_RANK] = {};
    bd_cu_bcast_strides(&g.a_batch, g.batch.rank, g.batch.dims, strd[0]);
    bd_cu_bcast_strides(&g.b_batch, g.batch.rank, g.batch.dims, strd[1]);
    bd_cu_nd_make(&m.g, g.batch.rank, g.batch.dims, 2, strd);
    if (m.batch == 0 || g.m == 0 || g.n == 0) return BRAID_OK;
    if (m.batch > 65535 || BD_CU_CEIL_DIV(g.m, (int64_t)TILE) > 65535)
        return BD_FAIL(k->err, BRAID_ERR_LIMIT, "%s: %lld batches of %lld rows are beyond the CUDA grid", k->node->op_type,
                       (long long)m.batch, (long long)g.m);
    if (io.dyn) { /* A quantized into the workspace, its (scale, zero point) after it */
        int64_t na = bd_numel(a);
        size_t need = (size_t)na + 16 + (2 * DYN_BLOCKS + 2) * sizeof(float);
        if (need > k->workspace_size)
            return BD_FAIL(k->err, BRAID_ERR_LIMIT, "DynamicQuantizeMatMul: input A (%lld values) is beyond the CUDA "
                           "workspace", (long long)na);
        float *part = (float *)k->workspace, *params = part + 2 * DYN_BLOCKS;
        uint8_t *q = (uint8_t *)(params + 2);
        int blocks = (int)BD_MIN((int64_t)DYN_BLOCKS, BD_MAX((int64_t)1, BD_CU_CEIL_DIV(na, (int64_t)BD_CU_BLOCK)));
        k_dyn_minmax<<<blocks, BD_CU_BLOCK, 0, k->stream>>>((const float *)a->data, na, part);
        k_dyn_params<<<1, 1, 0, k->stream>>>(part, blocks, params);
        if (na > 0) k_dyn_quantize<<<bd_cu_grid(na), BD_CU_BLOCK, 0, k->stream>>>((const float *)a->data, q, na, params);
        BD_CU_CHECK_LAUNCH(k, "DynamicQuantizeMatMul's quantization of A");
        m.a = q, m.adt = BRAID_DTYPE_UINT8;
        e.dyn = params;
    }
    dim3 grid((unsigned)BD_CU_CEIL_DIV(g.n, (int64_t)TILE), (unsigned)BD_CU_CEIL_DIV(g.m, (int64_t)TILE), (unsigned)m.batch);
    k_qmatmul<<<grid, dim3(TILE, TILE), 0, k->stream>>>(m, e);
    BD_CU_CHECK_LAUNCH(k, "the integer matrix product");
    return BRAID_OK;
}

/* ---- convolutions --------------------------------------------------------------------------- */

struct cv_args {
    const void *x, *w;
    int xdt, wdt;
    int64_t n, c_in, c_out, group, total;
    int64_t xs[3], ysz[3], kk[3], s[3], d[3], pb[3]; /* 3-D, leading unit dims */
    const void *xzp, *wzp;
    int xzdt, wzdt;
    int64_t wz_n;
};

static __global__ void k_qconv(cv_args a, epi_args e)
{
    int64_t cg = a.c_in / a.group, mg = a.c_out / a.group;
    int64_t osp = a.ysz[0] * a.ysz[1] * a.ysz[2], isp = a.xs[0] * a.xs[1] * a.xs[2];
    int64_t taps = a.kk[0] * a.kk[1] * a.kk[2];
    BD_CU_LOOP(o, a.total)
    {
        int64_t pos = o % osp, r = o / osp, m = r % a.c_out, n = r / a.c_out;
        int64_t ow = pos % a.ysz[2], oh = (pos / a.ysz[2]) % a.ysz[1], od = pos / (a.ysz[2] * a.ysz[1]);
        int32_t zx = a.xzp ? q8(a.xzdt, a.xzp, 0) : 0, zw = a.wzp ? q8(a.wzdt, a.wzp, a.wz_n > 1 ? m : 0) : 0;
        const char *xb = (const char *)a.x + (n * a.c_in + (m / mg) * cg) * isp;
        const char *wb = (const char *)a.w + m * cg * taps;
        int32_t acc = 0;
        for (int64_t c = 0; c < cg; c++)
            for (int64_t kd = 0; kd < a.kk[0]; kd++) {
                int64_t id = od * a.s[0] - a.pb[0] + kd * a.d[0];
                if (id < 0 || id >= a.xs[0]) continue;
                for (int64_t kh = 0; kh < a.kk[1]; kh++) {
                    int64_t ih = oh * a.s[1] - a.pb[1] + kh * a.d[1];
                    if (ih < 0 || ih >= a.xs[1]) continue;
                    for (int64_t kw = 0; kw < a.kk[2]; kw++) {
                        int64_t iw = ow * a.s[2] - a.pb[2] + kw * a.d[2];
                        if (iw < 0 || iw >= a.xs[2]) continue;
                        int32_t xv = q8(a.xdt, xb, c * isp + (id * a.xs[1] + ih) * a.xs[2] + iw) - zx;
                        int32_t wv = q8(a.wdt, wb, (c * a.kk[0] + kd) * a.kk[1] * a.kk[2] + kh * a.kk[2] + kw) - zw;
                        acc = (int32_t)((uint32_t)acc + (uint32_t)(xv * wv));
                    }
                }
            }
        epi_store(e, o, acc, m, 0, e.bs_n > 1 ? m : 0, 0);
    }
}

static braid_status conv(const bd_cuda_kernel *k, const bd_qgemm_io &io)
{
    const bd_tensor *x = &k->in[io.a], *w = &k->in[io.b];
    bd_conv_geom g;
    bd_tensor xf = *x, wf = *w;
    xf.dtype = wf.dtype = BRAID_DTYPE_FLOAT;
    bd_node cn = *k->node;
    cn.op = BD_OP_Conv;
    braid_status st = bd_conv_geometry(&cn, &xf, &wf, NULL, &g, k->err);
    if (st) return st;
    cv_args a = {};
    epi_args e;
    epi_make(k, io, e);
    a.x = x->data, a.w = w->data, a.xdt = x->dtype, a.wdt = w->dtype;
    a.n = g.n, a.c_in = g.c_in, a.c_out = g.c_out, a.group = g.group;
    int off = 3 - g.nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off, unit = j < 0;
        a.xs[i] = unit ? 1 : g.x[j], a.ysz[i] = unit ? 1 : g.y[j], a.kk[i] = unit ? 1 : g.k[j];
        a.s[i] = unit ? 1 : g.s[j], a.d[i] = unit ? 1 : g.d[j], a.pb[i] = unit ? 0 : g.pb[j];
    }
    a.total = bd_numel(&k->out[0]);
    const bd_tensor *xzp = &k->in[io.azp], *wzp = &k->in[io.bzp];
    if (io.azp < k->n_in && xzp->dtype != BRAID_DTYPE_UNDEFINED) a.xzp = xzp->data, a.xzdt = xzp->dtype;
    if (io.bzp < k->n_in && wzp->dtype != BRAID_DTYPE_UNDEFINED)
        a.wzp = wzp->data, a.wzdt = wzp->dtype, a.wz_n = bd_numel(wzp);
    if (io.bias >= 0 && io.bias < k->n_in && k->in[io.bias].dtype != BRAID_DTYPE_UNDEFINED)
        e.ibias = (const int32_t *)k->in[io.bias].data, e.bi = 1, e.bj = 0;
    if (a.total <= 0) return BRAID_OK;
    k_qconv<<<bd_cu_grid(a.total), BD_CU_BLOCK, 0, k->stream>>>(a, e);
    BD_CU_CHECK_LAUNCH(k, "the integer convolution");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_qgemm(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    bd_qgemm_io io = bd_qgemm_io_of(k->node->op);
    return io.conv ? conv(k, io) : matmul(k, io);
}

extern "C" void bd_cuda_qgemm_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
