/* index.cu: CUDA kernels of the index op family (GatherElements, GatherND,
 * OneHot, Trilu, EyeLike, ReverseSequence), mirroring
 * src/backend/cpu/ops/index.c with the index formulas of src/ops/index.h.
 * One thread per output element, elements moved by width. Indices known on
 * the host when the plan is made are checked as the CPU checks them; an index
 * out of range seen only on the device writes 0 rather than read outside the
 * input (as Gather does). */
#include "common.cuh"

extern "C" {
#include "ops/index.h"
#include "util/dtype.h"
}

#define LAUNCH_FAIL_IF_NOT(ok, k, es)                                                              \
    do {                                                                                           \
        if (!(ok))                                                                                 \
            return BD_FAIL((k)->err, BRAID_ERR_UNSUPPORTED,                                        \
                           "op %s with elements of %zu bytes is not implemented on CUDA",          \
                           (k)->node->op_type, (size_t)(es));                                      \
    } while (0)

/* ---- kernels ------------------------------------------------------------- */

template <class T>
__global__ void k_gather_elems(const T *__restrict__ x, const void *__restrict__ idx, int is64, T *__restrict__ y,
                               int64_t n, bd_gather_elems g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t v = bd_index_wrap(bd_index_at(idx, is64, i), g.dim);
        y[i] = v >= 0 ? x[bd_gather_elems_base(&g, i) + v * g.dst[g.axis]] : (T)0;
    }
}

template <class T>
__global__ void k_gather_nd(const T *__restrict__ x, const void *__restrict__ idx, int is64, T *__restrict__ y,
                            int64_t n, bd_nd_geom g)
{
    BD_CU_LOOP(e, n)
    {
        int64_t t = e / g.slice, s = e - t * g.slice;
        int64_t off = bd_nd_offset(&g, idx, is64, t, NULL);
        y[e] = off >= 0 ? x[off + s] : (T)0;
    }
}

/* Element i of a numeric tensor of dtype dt as double (OneHot's indices). */
__device__ __forceinline__ double load_f64(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_INT8: return ((const int8_t *)p)[i];
    case BRAID_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)p)[i];
    case BRAID_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case BRAID_DTYPE_INT32: return ((const int32_t *)p)[i];
    case BRAID_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    case BRAID_DTYPE_INT64: return (double)((const int64_t *)p)[i];
    case BRAID_DTYPE_UINT64: return (double)((const uint64_t *)p)[i];
    default: return 0.0 / 0.0;
    }
}

/* OneHot over (outer, depth, inner): values = [off, on] on the device. */
template <class T>
__global__ void k_one_hot(const void *__restrict__ idx, int idt, const T *__restrict__ vals, T *__restrict__ y,
                          int64_t n, int64_t depth, int64_t inner)
{
    T off = vals[0], on = vals[1];
    BD_CU_LOOP(e, n)
    {
        int64_t i = e % inner, t = e / inner, c = t % depth, o = t / depth;
        double v = load_f64(idx, idt, o * inner + i);
        bool hit = v > -9.0e18 && v < 9.0e18 && bd_index_wrap((int64_t)v, depth) == c;
        y[e] = hit ? on : off;
    }
}

/* Trilu over rows of m columns, n rows per matrix; k from the device (or 0). */
template <class T>
__global__ void k_trilu(const T *__restrict__ x, T *__restrict__ y, int64_t total, int64_t n, int64_t m,
                        const int64_t *kp, int upper)
{
    int64_t k = kp ? *kp : 0;
    BD_CU_LOOP(e, total)
    {
        int64_t r = e / m, j = e - r * m, lo, hi;
        bd_trilu_row(r % n, m, k, upper, &lo, &hi);
        y[e] = j >= lo && j < hi ? x[e] : (T)0;
    }
}

/* EyeLike: the one on the diagonal (i, i + k) for i in [first, first + cnt). */
template <class T> __global__ void k_eye(T *__restrict__ y, int64_t cnt, int64_t first, int64_t m, int64_t k, T one)
{
    BD_CU_LOOP(t, cnt)
    {
        int64_t i = first + t;
        y[i * m + i + k] = one;
    }
}

/* ReverseSequence over (a0, a1, inner) with the time axis at time_axis. */
template <class T>
__global__ void k_reverse_seq(const T *__restrict__ x, const int64_t *__restrict__ len, T *__restrict__ y,
                              int64_t n, int64_t d0, int64_t d1, int64_t inner, int time_axis)
{
    BD_CU_LOOP(e, n)
    {
        int64_t i = e % inner, r = e / inner, a1 = r % d1, a0 = r / d1;
        int64_t t = time_axis == 0 ? a0 : a1, b = time_axis == 0 ? a1 : a0, tdim = time_axis == 0 ? d0 : d1;
        int64_t l = len[b];
        if (l < 0 || l > tdim) { y[e] = (T)0; continue; }
        int64_t s = bd_reverse_time(t, l);
        int64_t src = time_axis == 0 ? (s * d1 + a1) * inner + i : (a0 * d1 + s) * inner + i;
        y[e] = x[src];
    }
}

/* ---- launchers ----------------------------------------------------------- */

/* The CPU's index check where the indices are known on the host. */
static braid_status check_host_indices(const bd_cuda_kernel *k, int slot, int64_t dim, int axis)
{
    const void *h = k->host_in ? k->host_in[slot].data : NULL;
    const bd_tensor *ix = &k->in[slot];
    int is64 = ix->dtype == BRAID_DTYPE_INT64;
    for (int64_t i = 0, n = bd_numel(ix); h && i < n; i++) {
        int64_t v = bd_index_at(h, is64, i);
        if (bd_index_wrap(v, dim) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (element %lld of 'indices') is out of range for axis %d of size %lld",
                           (long long)v, (long long)i, axis, (long long)dim);
    }
    return BRAID_OK;
}

static braid_status run_gather_elements(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int a;
    braid_status st = bd_axis(p->axis, x->rank, &a, k->err);
    if (st || (st = check_host_indices(k, 1, x->dims[a], a))) return st;
    int64_t n = bd_numel(ix);
    size_t es = bd_dtype_size(x->dtype);
    if (n == 0) return BRAID_OK;
    bd_gather_elems g;
    bd_gather_elems_of(x, ix, a, &g);
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_gather_elems<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)x->data, ix->data, ix->dtype == BRAID_DTYPE_INT64, (T *)k->out[0].data, n, g);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the GatherElements kernel");
    return BRAID_OK;
}

static braid_status run_gather_nd(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    int64_t n = bd_numel(&k->out[0]);
    size_t es = bd_dtype_size(x->dtype);
    int is64 = ix->dtype == BRAID_DTYPE_INT64, bad = 0;
    bd_nd_geom g;
    bd_nd_geom_of(x, ix, (int)p->batch_dims, &g);
    const void *h = k->host_in ? k->host_in[1].data : NULL;
    for (int64_t t = 0; h && t < g.n_tuples; t++)
        if (bd_nd_offset(&g, h, is64, t, &bad) < 0)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld (tuple %lld of 'indices') is out of range for data axis %d of size %lld",
                           (long long)bd_index_at(h, is64, t * g.k + bad), (long long)t, (int)p->batch_dims + bad,
                           (long long)g.dims[bad]);
    if (n == 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_gather_nd<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, ix->data, is64,
                                                                     (T *)k->out[0].data, n, g);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the GatherND kernel");
    return BRAID_OK;
}

static braid_status run_one_hot(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    const bd_tensor *ix = &k->in[0];
    bd_tensor *y = &k->out[0];
    int a;
    braid_status st = bd_axis(p->axis, ix->rank + 1, &a, k->err);
    if (st) return st;
    int64_t depth = y->dims[a], inner = 1, n = bd_numel(y);
    for (int d = a + 1; d < y->rank; d++) inner *= y->dims[d];
    size_t es = bd_dtype_size(y->dtype);
    if (n == 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_one_hot<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(ix->data, ix->dtype, (const T *)k->in[2].data,
                                                                   (T *)y->data, n, depth, inner);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the OneHot kernel");
    return BRAID_OK;
}

static braid_status run_trilu(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int64_t n = x->dims[x->rank - 2], m = x->dims[x->rank - 1], total = bd_numel(x);
    size_t es = bd_dtype_size(x->dtype);
    const int64_t *kp = k->n_in > 1 && k->in[1].dtype ? (const int64_t *)k->in[1].data : NULL;
    if (total == 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_trilu<T><<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, (T *)k->out[0].data, total,
                                                                     n, m, kp, p->upper != 0);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the Trilu kernel");
    return BRAID_OK;
}

static braid_status run_eye_like(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    bd_tensor *y = &k->out[0];
    unsigned char one[8];
    size_t es = bd_one_bytes(y->dtype, one);
    int64_t n = y->dims[0], m = y->dims[1];
    if (!es) return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "EyeLike of dtype %s is not supported", bd_dtype_name(y->dtype));
    if (n * m == 0) return BRAID_OK;
    BD_CU_CHECK_CALL(k, cudaMemsetAsync(y->data, 0, (size_t)(n * m) * es, k->stream));
    if (p->k >= m || p->k <= -n) return BRAID_OK;
    int64_t first = p->k < 0 ? -p->k : 0, last = BD_MIN(n, m - p->k), cnt = last - first;
    if (cnt <= 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        T v;
        memcpy(&v, one, sizeof v);
        k_eye<T><<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>((T *)y->data, cnt, first, m, p->k, v);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the EyeLike kernel");
    return BRAID_OK;
}

static braid_status run_reverse_sequence(const bd_cuda_kernel *k)
{
    const bd_index_params *p = (const bd_index_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int64_t inner = 1, n = bd_numel(x), tdim = x->dims[p->time_axis];
    size_t es = bd_dtype_size(x->dtype);
    for (int d = 2; d < x->rank; d++) inner *= x->dims[d];
    const int64_t *h = k->host_in ? (const int64_t *)k->host_in[1].data : NULL;
    for (int64_t b = 0; h && b < x->dims[p->batch_axis]; b++)
        if (h[b] < 0 || h[b] > tdim)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "sequence_lens[%lld] = %lld is outside [0, %lld] (the time axis)", (long long)b,
                           (long long)h[b], (long long)tdim);
    if (n == 0) return BRAID_OK;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_reverse_seq<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const T *)x->data, (const int64_t *)k->in[1].data, (T *)k->out[0].data, n, x->dims[0], x->dims[1], inner,
            (int)p->time_axis);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the ReverseSequence kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_index(const bd_cuda_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_GatherElements: return run_gather_elements(k);
    case BD_OP_GatherND: return run_gather_nd(k);
    case BD_OP_OneHot: return run_one_hot(k);
    case BD_OP_Trilu: return run_trilu(k);
    case BD_OP_EyeLike: return run_eye_like(k);
    case BD_OP_ReverseSequence: return run_reverse_sequence(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the index family", k->node->op_type);
    }
}

extern "C" void bd_cuda_index_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
