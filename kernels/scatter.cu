/* scatter.cu: CUDA kernels of the scatter op family (Scatter,
 * ScatterElements, ScatterND, TensorScatter), mirroring
 * src/backend/cpu/ops/scatter.c with the formulas of src/ops/scatter.h. The
 * output starts as a device copy of the data; the updates then go in the
 * reference's order wherever two can meet, as on the CPU: one thread per
 * ScatterElements line (along the axis), one thread per ScatterND slice
 * position (tuple after tuple), one per TensorScatter element (writes never
 * meet). So results never depend on scheduling, atomics are not needed, and
 * the bits equal the CPU's. Indices known on the host are checked as the CPU
 * checks them; an index out of range seen only on the device skips its
 * update. */
#include "common.cuh"

extern "C" {
#include "ops/scatter.h"
}

/* One update: a copy of es bytes, or the reduction. */
__device__ __forceinline__ void put(int dt, int red, size_t es, char *out, int64_t oi, const char *upd, int64_t ui)
{
    if (red != BD_SCATTER_NONE) {
        bd_scatter_apply(dt, red, out, oi, upd, ui);
        return;
    }
    switch (es) {
    case 1: ((uint8_t *)out)[oi] = ((const uint8_t *)upd)[ui]; break;
    case 2: ((uint16_t *)out)[oi] = ((const uint16_t *)upd)[ui]; break;
    case 4: ((uint32_t *)out)[oi] = ((const uint32_t *)upd)[ui]; break;
    default: ((uint64_t *)out)[oi] = ((const uint64_t *)upd)[ui]; break;
    }
}

__global__ void k_scatter_lines(const void *__restrict__ idx, int is64, const char *__restrict__ upd, char *out,
                                bd_scatter_lines g, int dt, int red, size_t es)
{
    int64_t ia = g.ist[g.axis], da = g.dst[g.axis];
    BD_CU_LOOP(l, g.n_lines)
    {
        int64_t ub, ob;
        bd_scatter_line(&g, l, &ub, &ob);
        for (int64_t t = 0; t < g.len; t++) {
            int64_t ui = ub + t * ia, v = bd_index_wrap(bd_index_at(idx, is64, ui), g.dim);
            if (v >= 0) put(dt, red, es, out, ob + v * da, upd, ui);
        }
    }
}

__global__ void k_scatter_nd(const void *__restrict__ idx, int is64, const char *__restrict__ upd, char *out,
                             bd_nd_geom g, int dt, int red, size_t es)
{
    BD_CU_LOOP(s, g.slice)
    {
        for (int64_t t = 0; t < g.n_tuples; t++) {
            int64_t off = bd_nd_offset(&g, idx, is64, t, NULL);
            if (off >= 0) put(dt, red, es, out, off + s, upd, t * g.slice + s);
        }
    }
}

template <class T>
__global__ void k_tscatter(const T *__restrict__ upd, const int64_t *__restrict__ wi, T *out, int64_t n,
                           bd_tscatter_geom g, int circular)
{
    BD_CU_LOOP(e, n)
    {
        int64_t i = e % g.inner, r = e / g.inner, pre = r / g.seq, s = r - pre * g.seq;
        int64_t pos = bd_tscatter_pos(wi ? wi[pre / g.per_batch] : 0, s, g.max_seq, circular);
        if (pos >= 0) out[(pre * g.max_seq + pos) * g.inner + i] = upd[e];
    }
}

static braid_status copy_data(const bd_cuda_kernel *k)
{
    size_t nb = (size_t)bd_numel(&k->out[0]) * bd_dtype_size(k->out[0].dtype);
    if (nb && k->out[0].data != k->in[0].data)
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, k->in[0].data, nb, cudaMemcpyDefault, k->stream));
    return BRAID_OK;
}

static braid_status run_elements(const bd_cuda_kernel *k)
{
    const bd_scatter_params *p = (const bd_scatter_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int a, is64 = ix->dtype == BRAID_DTYPE_INT64;
    braid_status st = bd_axis(p->axis, x->rank, &a, k->err);
    if (st) return st;
    int64_t dim = x->dims[a];
    const void *h = k->host_in ? k->host_in[1].data : NULL;
    for (int64_t i = 0, n = bd_numel(ix); h && i < n; i++) {
        int64_t v = bd_index_at(h, is64, i);
        if (bd_index_wrap(v, dim) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (element %lld of 'indices') is out of range for axis %d of size %lld",
                           (long long)v, (long long)i, a, (long long)dim);
    }
    if ((st = copy_data(k))) return st;
    bd_scatter_lines g;
    bd_scatter_lines_of(x, ix, a, &g);
    if (g.n_lines == 0 || g.len == 0) return BRAID_OK;
    k_scatter_lines<<<bd_cu_grid(g.n_lines), BD_CU_BLOCK, 0, k->stream>>>(
        ix->data, is64, (const char *)k->in[2].data, (char *)k->out[0].data, g, x->dtype, p->red,
        bd_dtype_size(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the ScatterElements kernel");
    return BRAID_OK;
}

static braid_status run_nd(const bd_cuda_kernel *k)
{
    const bd_scatter_params *p = (const bd_scatter_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int is64 = ix->dtype == BRAID_DTYPE_INT64, bad = 0;
    bd_nd_geom g;
    bd_nd_geom_of(x, ix, 0, &g);
    const void *h = k->host_in ? k->host_in[1].data : NULL;
    for (int64_t t = 0; h && t < g.n_tuples; t++)
        if (bd_nd_offset(&g, h, is64, t, &bad) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (tuple %lld of 'indices') is out of range for data axis %d of size %lld",
                           (long long)bd_index_at(h, is64, t * g.k + bad), (long long)t, bad, (long long)g.dims[bad]);
    braid_status st = copy_data(k);
    if (st || g.n_tuples == 0 || g.slice == 0) return st;
    k_scatter_nd<<<bd_cu_grid(g.slice), BD_CU_BLOCK, 0, k->stream>>>(
        ix->data, is64, (const char *)k->in[2].data, (char *)k->out[0].data, g, x->dtype, p->red,
        bd_dtype_size(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the ScatterND kernel");
    return BRAID_OK;
}

static braid_status run_tensor_scatter(const bd_cuda_kernel *k)
{
    const bd_scatter_params *p = (const bd_scatter_params *)k->node->params;
    bd_tscatter_geom g;
    bd_tscatter_geom_of(k->node, &k->in[0], &k->in[1], &g);
    const int64_t *wi = k->n_in > 2 && k->in[2].dtype ? (const int64_t *)k->in[2].data : NULL;
    const int64_t *h = wi && k->host_in ? (const int64_t *)k->host_in[2].data : NULL;
    for (int64_t b = 0; h && b < k->in[0].dims[0] && g.seq > 0; b++)
        if (bd_tscatter_pos(h[b], 0, g.max_seq, p->circular) < 0 ||
            bd_tscatter_pos(h[b], g.seq - 1, g.max_seq, p->circular) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "write_indices[%lld] = %lld: %lld steps from there do not fit a cache of %lld (mode linear)",
                           (long long)b, (long long)h[b], (long long)g.seq, (long long)g.max_seq);
    braid_status st = copy_data(k);
    int64_t n = bd_numel(&k->in[1]);
    size_t es = bd_dtype_size(k->in[0].dtype);
    if (st || n == 0) return st;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_tscatter<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)k->in[1].data, wi, (T *)k->out[0].data,
                                                                    n, g, p->circular);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op TensorScatter with elements of %zu bytes is not implemented on CUDA", es);
    BD_CU_CHECK_LAUNCH(k, "the TensorScatter kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_scatter(const bd_cuda_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_Scatter:
    case BD_OP_ScatterElements: return run_elements(k);
    case BD_OP_ScatterND: return run_nd(k);
    case BD_OP_TensorScatter: return run_tensor_scatter(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the scatter family", k->node->op_type);
    }
}

extern "C" void bd_cuda_scatter_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
