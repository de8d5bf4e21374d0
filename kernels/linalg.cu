/* linalg.cu: CUDA kernels of the linalg family, mirroring
 * src/backend/cpu/ops/linalg.c. Einsum runs the same program
 * (src/ops/linalg.c builds it on the host) with a strided gather kernel, a
 * row-sum kernel and cuBLAS strided-batched GEMMs in float or double (a
 * wrapping 64-bit kernel for integers). Det runs the shared bd_det_lu, one
 * thread per matrix, in double scratch. FusedMatMul gathers its transposed
 * views and multiplies; FusedGemm adds the shared activation epilogue. */
#include <math.h>

#include "la.cuh"

extern "C" {
#include "ops/gemm.h"
#include "ops/linalg.h"
}

enum { W_F32 = 1, W_F64 = 2, W_INT = 3 };

static int work_type(int dt)
{
    return dt == BRAID_DTYPE_DOUBLE ? W_F64
           : (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) ? W_F32 : W_INT;
}

static int w_dtype(int w) { return w == W_F64 ? BRAID_DTYPE_DOUBLE : w == W_F32 ? BRAID_DTYPE_FLOAT : BRAID_DTYPE_UINT64; }

/* ---- kernels ------------------------------------------------------------------------ */

/* Integers to/from 64-bit wrapping words (sign- or zero-extended; stores keep the low bytes). */
static __global__ void int_to_u64(int dt, const void *__restrict__ src, uint64_t *__restrict__ dst, int64_t n)
{
    BD_CU_LOOP(i, n)
    {
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
        dst[i] = v;
    }
}

static __global__ void u64_to_int(int dt, const uint64_t *__restrict__ src, void *__restrict__ dst, int64_t n)
{
    BD_CU_LOOP(i, n)
    {
        uint64_t v = src[i];
        switch (dt) {
        case BRAID_DTYPE_INT8: case BRAID_DTYPE_UINT8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
        case BRAID_DTYPE_INT16: case BRAID_DTYPE_UINT16: ((uint16_t *)dst)[i] = (uint16_t)v; break;
        case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: ((uint32_t *)dst)[i] = (uint32_t)v; break;
        default: ((uint64_t *)dst)[i] = v; break;
        }
    }
}

/* The GATHER step: dst (contiguous over s.dims) = src at s.st; T by element size. */
template <class T> static __global__ void gather_k(bd_es_step s, const T *__restrict__ src, T *__restrict__ dst, int64_t total)
{
    BD_CU_LOOP(i, total)
    {
        int64_t rem = i, off = 0;
        for (int d = s.rank - 1; d >= 0; d--) {
            int64_t q = rem / s.dims[d];
            off += (rem - q * s.dims[d]) * s.st[d];
            rem = q;
        }
        dst[i] = src[off];
    }
}

/* The REDUCE step: one thread per output (inner sums run in order, as the CPU). */
template <class T> static __global__ void reduce_k(const T *__restrict__ src, T *__restrict__ dst, int64_t outer, int64_t inner)
{
    BD_CU_LOOP(o, outer)
    {
        T a = 0;
        for (int64_t i = 0; i < inner; i++) a += src[o * inner + i];
        dst[o] = a;
    }
}

/* The GEMM step on wrapping 64-bit integers. */
static __global__ void gemm_u64(bd_es_step s, const uint64_t *__restrict__ a, const uint64_t *__restrict__ b,
                                uint64_t *__restrict__ c)
{
    BD_CU_LOOP(t, s.count * s.m * s.n)
    {
        int64_t j = t % s.n, i = (t / s.n) % s.m, it = t / (s.m * s.n);
        const uint64_t *ai = a + it * s.m * s.k, *bi = b + it * s.k * s.n;
        uint64_t acc = 0;
        for (int64_t l = 0; l < s.k; l++)
            acc += ai[s.ta ? l * s.m + i : i * s.k + l] * bi[s.tb ? j * s.k + l : l * s.n + j];
        c[t] = acc;
    }
}

/* Det: one thread per matrix, the shared LU in double scratch. */
static __global__ void det_k(int dt, const void *__restrict__ x, void *__restrict__ y, double *__restrict__ scratch,
                             int64_t count, int64_t n)
{
    BD_CU_LOOP(i, count)
    {
        double *a = scratch + i * n * n;
        for (int64_t t = 0; t < n * n; t++) a[t] = bd_la_ld64(dt, x, i * n * n + t);
        bd_la_st(dt, y, i, bd_det_lu(a, n));
    }
}

/* y (m x n) = c broadcast at strides (s0, s1), in the work type. */
static __global__ void bcast_c(int cdt, const void *__restrict__ c, int wdt, void *__restrict__ y, int64_t m, int64_t n,
                               int64_t s0, int64_t s1)
{
    BD_CU_LOOP(i, m * n) bd_la_st(wdt, y, i, bd_la_ld64(cdt, c, (i / n) * s0 + (i % n) * s1));
}

/* y = act(y) (work dtype wdt) into out (dtype odt). */
static __global__ void act_k(int wdt, const void *__restrict__ y, int odt, void *__restrict__ out, int64_t n, bd_fact f,
                             float a, float b, float g)
{
    BD_CU_LOOP(i, n) bd_la_st(odt, out, i, bd_fact_apply(f, bd_la_ld64(wdt, y, i), a, b, g));
}

/* ---- helpers -------------------------------------------------------------------------- */

static braid_status run_gather(const bd_cuda_kernel *k, const bd_es_step *s, const void *src, void *dst, size_t es)
{
    int64_t total = 1;
    for (int i = 0; i < s->rank; i++) total *= s->dims[i];
    if (total <= 0) return BRAID_OK;
    if (es == 4) gather_k<uint32_t><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(*s, (const uint32_t *)src, (uint32_t *)dst, total);
    else gather_k<uint64_t><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(*s, (const uint64_t *)src, (uint64_t *)dst, total);
    BD_CU_CHECK_LAUNCH(k, "a linalg gather");
    return BRAID_OK;
}

/* n elements of dtype dt into the work type w. */
static braid_status to_work(const bd_cuda_kernel *k, int w, int dt, const void *src, void *dst, int64_t n)
{
    if (w != W_INT) return bd_la_convert(k, dt, src, w_dtype(w), dst, n);
    if (n <= 0) return BRAID_OK;
    int_to_u64<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(dt, src, (uint64_t *)dst, n);
    BD_CU_CHECK_LAUNCH(k, "an integer widening");
    return BRAID_OK;
}

static braid_status from_work(const bd_cuda_kernel *k, int w, int dt, const void *src, void *dst, int64_t n)
{
    if (w != W_INT) return bd_la_convert(k, w_dtype(w), src, dt, dst, n);
    if (n <= 0) return BRAID_OK;
    u64_to_int<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(dt, (const uint64_t *)src, dst, n);
    BD_CU_CHECK_LAUNCH(k, "an integer narrowing");
    return BRAID_OK;
}

/* ---- Einsum ------------------------------------------------------------------------------ */

static braid_status einsum(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_es_prog prog;
    bd_tensor hv[BD_ES_TERMS];
    int dt = k->in[0].dtype, w = work_type(dt);
    size_t es = w == W_F32 ? 4 : 8;
    if (k->n_in > BD_ES_TERMS) return BD_FAIL(k->err, BRAID_ERR_LIMIT, "more than %d operands", BD_ES_TERMS);
    bd_cu_host_view(k, hv, k->n_in);
    if ((st = bd_einsum_plan(k->node, hv, NULL, &prog, k->err))) return st;
    void **bufs = (void **)bd_calloc((size_t)prog.n_bufs, sizeof *bufs);
    size_t *offs = (size_t *)bd_calloc((size_t)prog.n_bufs, sizeof *offs), total = 0;
    char *mem = NULL;
    if (!bufs || !offs) {
        st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < prog.n_bufs; i++) {
        offs[i] = total;
        total += bd_la_align((size_t)(prog.buf_n[i] > 0 ? prog.buf_n[i] : 1) * es);
    }
    if ((st = bd_la_scratch(k, total, &mem))) goto done;
    for (int i = 0; i < prog.n_bufs; i++) bufs[i] = mem + offs[i];
    for (int i = 0; i < k->n_in; i++)
        if ((st = to_work(k, w, dt, k->in[i].data, bufs[i], prog.buf_n[i]))) goto done;
    for (int i = 0; i < prog.n_steps; i++) {
        const bd_es_step *s = &prog.steps[i];
        if (s->kind == BD_ES_GATHER) {
            if ((st = run_gather(k, s, bufs[s->src], bufs[s->dst], es))) goto done;
        } else if (s->kind == BD_ES_REDUCE) {
            if (s->outer > 0) {
                if (w == W_F32) reduce_k<float><<<bd_cu_grid(s->outer), BD_CU_BLOCK, 0, k->stream>>>((const float *)bufs[s->src], (float *)bufs[s->dst], s->outer, s->inner);
                else if (w == W_F64) reduce_k<double><<<bd_cu_grid(s->outer), BD_CU_BLOCK, 0, k->stream>>>((const double *)bufs[s->src], (double *)bufs[s->dst], s->outer, s->inner);
                else reduce_k<uint64_t><<<bd_cu_grid(s->outer), BD_CU_BLOCK, 0, k->stream>>>((const uint64_t *)bufs[s->src], (uint64_t *)bufs[s->dst], s->outer, s->inner);
                cudaError_t ce = cudaGetLastError();
                if (ce != cudaSuccess) { st = bd_cu_fail_launch(k->err, "an einsum sum", ce, __FILE__, __LINE__); goto done; }
            }
        } else if (w == W_INT) {
            if (s->count * s->m * s->n > 0) {
                gemm_u64<<<bd_cu_grid(s->count * s->m * s->n), BD_CU_BLOCK, 0, k->stream>>>(
                    *s, (const uint64_t *)bufs[s->src], (const uint64_t *)bufs[s->src2], (uint64_t *)bufs[s->dst]);
                cudaError_t ce = cudaGetLastError();
                if (ce != cudaSuccess) { st = bd_cu_fail_launch(k->err, "an einsum product", ce, __FILE__, __LINE__); goto done; }
            }
        } else if ((st = bd_la_gemm(k, w_dtype(w), s->ta, s->tb, s->m, s->n, s->k, 1.0, bufs[s->src], s->ta ? s->m : s->k,
                                    s->m * s->k, bufs[s->src2], s->tb ? s->k : s->n, s->k * s->n, 0.0, bufs[s->dst],
                                    s->n, s->m * s->n, s->count))) {
            goto done;
        }
    }
    st = from_work(k, w, dt, bufs[prog.out_buf], k->out[0].data, bd_numel(&k->out[0]));
done:
    bd_free(bufs);
    bd_free(offs);
    bd_einsum_free(&prog);
    return st;
}

/* ---- Det, FusedMatMul, FusedGemm ----------------------------------------------------------- */

static braid_status det(const bd_cuda_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    int64_t n = x->dims[x->rank - 1], count = bd_numel(&k->out[0]);
    if (count == 0) return BRAID_OK;
    char *mem = NULL;
    braid_status st = bd_la_scratch(k, (size_t)(count * n * n > 0 ? count * n * n : 1) * sizeof(double), &mem);
    if (st) return st;
    det_k<<<bd_cu_grid(count, 64), 64, 0, k->stream>>>(x->dtype, x->data, k->out[0].data, (double *)mem, count, n);
    BD_CU_CHECK_LAUNCH(k, "the determinant kernel");
    return BRAID_OK;
}

static braid_status fused_matmul(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_linalg_params *p = (const bd_linalg_params *)k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_tensor *y = &k->out[0], va, vb;
    int64_t sa[BD_MAX_RANK], sb[BD_MAX_RANK];
    int w = work_type(a->dtype), wdt = w_dtype(w);
    size_t es = w == W_F32 ? 4 : 8;
    bd_fused_matmul_view(a, p->trans_batch_a, p->trans_a && a->rank > 1, &va, sa);
    bd_fused_matmul_view(b, p->trans_batch_b, p->trans_b && b->rank > 1, &vb, sb);
    bd_matmul_geom g;
    if ((st = bd_matmul_geometry(&va, &vb, &g, NULL, k->err))) return st;
    int64_t na = bd_numel(a), nb = bd_numel(b), ny = bd_numel(y), nbat = bd_numel(&g.batch);
    if (ny == 0) return BRAID_OK;
    size_t ba = bd_la_align((size_t)(na > 0 ? na : 1) * es), bb = bd_la_align((size_t)(nb > 0 ? nb : 1) * es);
    size_t by = bd_la_align((size_t)ny * es);
    char *mem = NULL;
    if ((st = bd_la_scratch(k, 2 * ba + 2 * bb + by, &mem))) return st;
    char *ca = mem, *wa = mem + ba, *cb = mem + 2 * ba, *wb = cb + bb, *wy = wb + bb;
    if ((st = to_work(k, w, a->dtype, a->data, ca, na)) || (st = to_work(k, w, b->dtype, b->data, cb, nb))) return st;
    bd_es_step s;
    memset(&s, 0, sizeof s);
    s.rank = va.rank;
    for (int i = 0; i < va.rank; i++) s.dims[i] = va.dims[i], s.st[i] = sa[i];
    if ((st = run_gather(k, &s, ca, wa, es))) return st;
    s.rank = vb.rank;
    for (int i = 0; i < vb.rank; i++) s.dims[i] = vb.dims[i], s.st[i] = sb[i];
    if ((st = run_gather(k, &s, cb, wb, es))) return st;
    int64_t bsa[BD_MAX_RANK], bsb[BD_MAX_RANK];
    bd_cu_bcast_strides(&g.a_batch, g.batch.rank, g.batch.dims, bsa);
    bd_cu_bcast_strides(&g.b_batch, g.batch.rank, g.batch.dims, bsb);
    for (int64_t i = 0; i < nbat; i++) {
        int64_t rem = i, oa = 0, ob = 0;
        for (int d = g.batch.rank - 1; d >= 0; d--) {
            int64_t idx = rem % g.batch.dims[d];
            rem /= g.batch.dims[d];
            oa += idx * bsa[d];
            ob += idx * bsb[d];
        }
        if ((st = bd_la_gemm(k, wdt, 0, 0, g.m, g.n, g.k, p->alpha, wa + (size_t)(oa * g.m * g.k) * es, g.k, 0,
                             wb + (size_t)(ob * g.k * g.n) * es, g.n, 0, 0.0, wy + (size_t)(i * g.m * g.n) * es, g.n,
                             0, 1)))
            return st;
    }
    return from_work(k, w, y->dtype, wy, y->data, ny);
}

static braid_status fused_gemm(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_linalg_params *p = (const bd_linalg_params *)k->node->params;
    const bd_tensor *a = &k->in[0], *b = &k->in[1], *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    bd_tensor *y = &k->out[0];
    int w = work_type(a->dtype), wdt = w_dtype(w);
    size_t es = w == W_F32 ? 4 : 8;
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1], na = bd_numel(a), nb = bd_numel(b);
    if (m * n == 0) return BRAID_OK;
    size_t ba = bd_la_align((size_t)(na > 0 ? na : 1) * es), bb = bd_la_align((size_t)(nb > 0 ? nb : 1) * es);
    char *mem = NULL;
    if ((st = bd_la_scratch(k, ba + bb + bd_la_align((size_t)(m * n) * es), &mem))) return st;
    char *wa = mem, *wb = mem + ba, *wy = wb + bb;
    if ((st = to_work(k, w, a->dtype, a->data, wa, na)) || (st = to_work(k, w, b->dtype, b->data, wb, nb))) return st;
    double beta = 0.0;
    if (c && p->beta != 0.0f) {
        int64_t str[2];
        bd_cu_bcast_strides(c, 2, y->dims, str);
        bcast_c<<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>(c->dtype, c->data, wdt, wy, m, n, str[0], str[1]);
        BD_CU_CHECK_LAUNCH(k, "FusedGemm's bias broadcast");
        beta = p->beta;
    }
    if ((st = bd_la_gemm(k, wdt, p->trans_a, p->trans_b, m, n, kk, p->alpha, wa, p->trans_a ? m : kk, 0, wb,
                         p->trans_b ? kk : n, 0, beta, wy, n, 0, 1)))
        return st;
    act_k<<<bd_cu_grid(m * n), BD_CU_BLOCK, 0, k->stream>>>(wdt, wy, y->dtype, y->data, m * n, p->act, p->act_alpha,
                                                             p->act_beta, p->act_gamma);
    BD_CU_CHECK_LAUNCH(k, "FusedGemm's activation");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_linalg(const bd_cuda_kernel *k)
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

extern "C" void bd_cuda_linalg_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_la_scratch_free(cache);
}
