/* reduce.cu: CUDA kernels of the reduce op family (ReduceMean/Sum/Max/Min/
 * Prod over any axes, ArgMax), mirroring src/backend/cpu/ops/reduce.c. The
 * input's dims are merged into kept and reduced groups; each output element
 * is reduced by one thread, or by one block when the reduced values are
 * contiguous and many. */
#include <math.h>

#include <limits>
#include <type_traits>

#include "common.cuh"

extern "C" {
#include "ops/reduce.h"
}

enum { R_SUM, R_PROD, R_MAX, R_MIN };

/* The input seen as kept groups (in output order) and reduced groups. */
struct red_geom {
    int nk, nr;
    int64_t ks[BD_MAX_RANK], kst[BD_MAX_RANK]; /* kept sizes and input strides */
    int64_t rs[BD_MAX_RANK], rst[BD_MAX_RANK]; /* reduced sizes and input strides */
    int64_t n_out, n_red;
    int64_t row_len; /* the accumulator is rounded to T after every row_len values, as the CPU does */
};

/* Sums and products accumulate in double (floats) or int64 (integers, which
 * wrap as the CPU's do); max and min in the input's type. The values of an
 * output are folded in row-major order of the reduced dims, and like the CPU
 * the accumulator is stored back as T after each row of the innermost reduced
 * group (the CPU's row in double) or, when the innermost dim is kept, after
 * every value (the CPU then folds in T: a float sum or product rounded from
 * double is the float one, so those match it bit for bit, overflow to inf
 * included). */
template <class T, int OP> struct red_acc {
    typedef typename std::conditional<
        OP == R_MAX || OP == R_MIN, T,
        typename std::conditional<std::is_integral<T>::value, int64_t, double>::type>::type type;
};

template <class A, int OP> __host__ __device__ __forceinline__ A red_combine(A a, A b)
{
    if (OP == R_SUM) return a + b;
    if (OP == R_PROD) return a * b;
    if (OP == R_MAX) return b > a ? b : a;
    return b < a ? b : a;
}

__host__ __device__ __forceinline__ int64_t red_offset(int n, const int64_t *sz, const int64_t *st, int64_t i)
{
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t q = i / sz[d];
        off += (i - q * sz[d]) * st[d];
        i = q;
    }
    return off;
}

/* o = the reduced value, or for a mean (T)sum / count (integers truncate, and
 * divide by the count itself, never by a count wrapped to T's range; a count
 * of 0 gives NaN for floats and 0 for integers). */
template <class T, class A, int OP>
__host__ __device__ __forceinline__ T red_finish(A acc, int mean, int64_t count)
{
    T v = (T)acc;
    if (!mean) return v;
    if (std::is_integral<T>::value && count == 0) return (T)0;
    return (T)(v / count); /* float / int64 converts the count to float, as the CPU */
}

/* Output i folded by one thread (host and device, so that the host can check
 * it against the CPU kernel). */
template <class T, int OP>
__host__ __device__ __forceinline__ T red_one(const T *__restrict__ x, const red_geom &g, T init, int mean,
                                              int64_t i)
{
    typedef typename red_acc<T, OP>::type A;
    const T *xb = x + red_offset(g.nk, g.ks, g.kst, i);
    A acc = (A)init;
    int64_t idx[BD_MAX_RANK] = {0}, off = 0, in_row = 0;
    for (int64_t r = 0; r < g.n_red; r++) {
        acc = red_combine<A, OP>(acc, (A)xb[off]);
        if (++in_row == g.row_len) acc = (A)(T)acc, in_row = 0;
        for (int d = g.nr - 1; d >= 0; d--) { /* odometer over the reduced groups */
            off += g.rst[d];
            if (++idx[d] < g.rs[d]) break;
            off -= g.rst[d] * g.rs[d];
            idx[d] = 0;
        }
    }
    return red_finish<T, A, OP>(acc, mean, g.n_red);
}

template <class T, int OP>
__global__ void k_reduce_thread(const T *__restrict__ x, T *__restrict__ o, red_geom g, T init,
                                int mean)
{
    BD_CU_LOOP(i, g.n_out) o[i] = red_one<T, OP>(x, g, init, mean, i);
}

/* One block per output; the innermost group is reduced and contiguous (rows
 * of row_len values), each row folded by the block. */
template <class T, int OP>
__global__ void k_reduce_block(const T *__restrict__ x, T *__restrict__ o, red_geom g, T init,
                               int mean)
{
    typedef typename red_acc<T, OP>::type A;
    __shared__ A sh[256];
    const int64_t rows = g.n_red / g.row_len;
    for (int64_t i = blockIdx.x; i < g.n_out; i += gridDim.x) {
        const T *xb = x + red_offset(g.nk, g.ks, g.kst, i);
        A acc = (A)init;
        for (int64_t row = 0; row < rows; row++) {
            const T *xr = xb + red_offset(g.nr - 1, g.rs, g.rst, row);
            A part = (A)init;
            for (int64_t r = threadIdx.x; r < g.row_len; r += blockDim.x)
                part = red_combine<A, OP>(part, (A)xr[r]);
            __syncthreads(); /* sh of the previous row is read */
            sh[threadIdx.x] = part;
            __syncthreads();
            for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                if ((int)threadIdx.x < s) sh[threadIdx.x] = red_combine<A, OP>(sh[threadIdx.x], sh[threadIdx.x + s]);
                __syncthreads();
            }
            acc = (A)(T)red_combine<A, OP>(acc, sh[0]);
        }
        if (threadIdx.x == 0) o[i] = red_finish<T, A, OP>(acc, mean, g.n_red);
    }
}

/* ArgMax over the middle dim of (outer, n, inner); ties to the first index,
 * or the last with select_last_index. */
template <class T>
__global__ void k_argmax(const T *__restrict__ x, int64_t *__restrict__ o, int64_t outer, int64_t n,
                         int64_t inner, int last)
{
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const T *xl = x + b * n * inner + i;
        int64_t best = 0;
        T bv = xl[0];
        for (int64_t j = 1; j < n; j++) {
            T v = xl[j * inner];
            if (last ? v >= bv : v > bv) best = j, bv = v;
        }
        o[t] = best;
    }
}

/* The reduce dtypes: float, double, int32, int64, int8, uint8 and bool. */
template <class F> static bool red_dispatch(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: f(float{}); return true;
    case BRAID_DTYPE_DOUBLE: f(double{}); return true;
    case BRAID_DTYPE_INT32: f(int32_t{}); return true;
    case BRAID_DTYPE_INT64: f(int64_t{}); return true;
    case BRAID_DTYPE_INT8: f(int8_t{}); return true;
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL: f(uint8_t{}); return true;
    default: return false;
    }
}

template <class T> static T red_init(int op, int is_bool)
{
    switch (op) {
    case R_SUM: return (T)0;
    case R_PROD: return (T)1;
    case R_MAX:
        if constexpr (std::is_integral<T>::value) return std::numeric_limits<T>::lowest();
        else return (T)-INFINITY;
    default:
        if (is_bool) return (T)1;
        if constexpr (std::is_integral<T>::value) return std::numeric_limits<T>::max();
        else return (T)INFINITY;
    }
}

template <class T, int OP>
static void launch_reduce(const bd_cuda_kernel *k, const red_geom &g, int blockwise, int mean,
                          int is_bool)
{
    const T *x = (const T *)k->in[0].data;
    T *o = (T *)k->out[0].data;
    T init = red_init<T>(OP, is_bool);
    if (blockwise) {
        int block = g.row_len >= 2048 ? 256 : 128;
        unsigned grid = (unsigned)(g.n_out < 65535LL * 16 ? g.n_out : 65535LL * 16);
        k_reduce_block<T, OP><<<grid, block, 0, k->stream>>>(x, o, g, init, mean);
    } else {
        k_reduce_thread<T, OP><<<bd_cu_grid(g.n_out), BD_CU_BLOCK, 0, k->stream>>>(x, o, g, init, mean);
    }
}

static braid_status run_argmax(const bd_cuda_kernel *k, const bd_reduce_params *p)
{
    const bd_tensor *x = &k->in[0];
    int axis;
    braid_status st = bd_axis(p->axes[0], x->rank, &axis, k->err);
    if (st) return st;
    int64_t outer, n = x->dims[axis], inner;
    bd_axis_split(x, axis, &outer, &inner);
    bool ok = red_dispatch(x->dtype, [&](auto tag) {
        typedef decltype(tag) T;
        if (n > 0 && outer * inner > 0)
            k_argmax<T><<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(
                (const T *)x->data, (int64_t *)k->out[0].data, outer, n, inner,
                p->select_last_index);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op ArgMax with dtype %s is not implemented on CUDA",
                       bd_dtype_name(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the ArgMax kernel");
    return BRAID_OK;
}

/* g for x reduced over the dims in mask into n_out values: dims of 1
 * dropped, neighbours of the same kind merged. Returns 1 when a block per
 * output should fold it. */
static int red_make_geom(const bd_tensor *x, unsigned mask, int64_t n_out, red_geom *g)
{
    memset(g, 0, sizeof *g);
    int last_kind = -1;
    int64_t stride[BD_MAX_RANK];
    bd_cu_contig_strides(x->rank, x->dims, stride);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 1) continue;
        int r = (mask >> d) & 1;
        int64_t *sz = r ? g->rs : g->ks, *sst = r ? g->rst : g->kst;
        int *cnt = r ? &g->nr : &g->nk;
        if (last_kind == r && sst[*cnt - 1] == stride[d] * x->dims[d]) {
            sz[*cnt - 1] *= x->dims[d];
            sst[*cnt - 1] = stride[d];
        } else {
            sz[*cnt] = x->dims[d];
            sst[*cnt] = stride[d];
            (*cnt)++;
        }
        last_kind = r;
    }
    g->n_out = n_out;
    g->n_red = 1;
    for (int i = 0; i < g->nr; i++) g->n_red *= g->rs[i];
    /* The CPU's rows: the innermost reduced group when it is the innermost
     * dim, else single values. A block per output when those rows are long. */
    g->row_len = last_kind == 1 ? g->rs[g->nr - 1] : 1;
    return last_kind == 1 && g->row_len >= 64;
}

extern "C" braid_status bd_cuda_reduce(const bd_cuda_kernel *k)
{
    const bd_node *nd = k->node;
    const bd_reduce_params *p = (const bd_reduce_params *)nd->params;
    const bd_tensor *x = &k->in[0];
    int dt = x->dtype, identity;
    unsigned mask;
    braid_status st;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "reduce parameters were not parsed");
    if (nd->op == BD_OP_ArgMax) return run_argmax(k, p);
    /* The axes input is read from its plan-time host copy. */
    bd_tensor hv[2];
    bd_cu_host_view(k, hv, 2);
    if ((st = bd_reduce_axes(nd, hv, k->n_in < 2 ? k->n_in : 2, &mask, &identity, k->err))) return st;
    int64_t n_in = bd_numel(x), n_out = bd_numel(&k->out[0]);
    if (identity) {
        if (n_in > 0)
            BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, x->data, (size_t)n_in * bd_dtype_size(dt),
                                                cudaMemcpyDeviceToDevice, k->stream));
        return BRAID_OK;
    }
    if (n_out <= 0) return BRAID_OK;
    red_geom g;
    int blockwise = red_make_geom(x, mask, n_out, &g);
    int mean = nd->op == BD_OP_ReduceMean, is_bool = dt == BRAID_DTYPE_BOOL;
    bool ok = red_dispatch(dt, [&](auto tag) {
        typedef decltype(tag) T;
        switch (nd->op) {
        case BD_OP_ReduceSum:
        case BD_OP_ReduceMean: launch_reduce<T, R_SUM>(k, g, blockwise, mean, is_bool); break;
        case BD_OP_ReduceProd: launch_reduce<T, R_PROD>(k, g, blockwise, mean, is_bool); break;
        case BD_OP_ReduceMax: launch_reduce<T, R_MAX>(k, g, blockwise, mean, is_bool); break;
        default: launch_reduce<T, R_MIN>(k, g, blockwise, mean, is_bool); break;
        }
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       nd->op_type, bd_dtype_name(dt));
    BD_CU_CHECK_LAUNCH(k, "a reduce kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_reduce_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
