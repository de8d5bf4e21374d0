/* reduce.cu: CUDA kernels of the reduce op family (ReduceSum/Mean/Prod/Max/
 * Min/L1/L2/LogSum/LogSumExp/SumSquare over any axes, ArgMax, ArgMin) on every
 * dtype the CPU runs, mirroring src/backend/cpu/ops/reduce.c: the same
 * accumulators (double for floats, 64-bit integers for integers), the same
 * folds and finishing formulas from ops/reduce.h. The input's dims are merged
 * into kept and reduced groups; each output is folded by one thread, or by
 * one block when its reduced values are contiguous rows and many. */
#include <math.h>

#include <limits>
#include <type_traits>

#include "common.cuh"

extern "C" {
#include "ops/reduce.h"
#include "util/dtype.h"
}

/* float16 and bfloat16 elements (their bits). */
struct rh16 { uint16_t v; };
struct rb16 { uint16_t v; };

template <class S> struct r_is_float {
    static const bool value = std::is_floating_point<S>::value || std::is_same<S, rh16>::value ||
                              std::is_same<S, rb16>::value;
};

__host__ __device__ __forceinline__ double r_ld(float v) { return v; }
__host__ __device__ __forceinline__ double r_ld(double v) { return v; }
__host__ __device__ __forceinline__ double r_ld(rh16 v) { return bd_half_to_float_hd(v.v); }
__host__ __device__ __forceinline__ double r_ld(rb16 v) { return bd_bf16_to_float(v.v); }
__host__ __device__ __forceinline__ void r_st(float &o, double v) { o = (float)v; }
__host__ __device__ __forceinline__ void r_st(double &o, double v) { o = v; }
__host__ __device__ __forceinline__ void r_st(rh16 &o, double v) { o.v = bd_float_to_half((float)v); }
__host__ __device__ __forceinline__ void r_st(rb16 &o, double v) { o.v = bd_float_to_bf16((float)v); }

/* The accumulator of fold F over elements S, as on the CPU. */
template <class S, int F> struct r_acc {
    typedef typename std::conditional<
        r_is_float<S>::value || F == BD_RF_EXP, double,
        typename std::conditional<(F == BD_RF_MAX || F == BD_RF_MIN) && std::is_signed<S>::value, int64_t,
                                  uint64_t>::type>::type type;
};

template <class S, int F, class A> __device__ __forceinline__ A r_map(S x, double sh)
{
    if constexpr (r_is_float<S>::value) {
        double d = r_ld(x);
        if constexpr (F == BD_RF_ABS) return fabs(d);
        else if constexpr (F == BD_RF_SQ) return __dmul_rn(d, d);
        else if constexpr (F == BD_RF_EXP) return exp(d - sh);
        else return d;
    } else if constexpr (F == BD_RF_EXP) {
        return exp((double)x - sh);
    } else if constexpr (F == BD_RF_MAX || F == BD_RF_MIN) {
        return (A)x;
    } else {
        uint64_t u = (uint64_t)(int64_t)x;
        if constexpr (F == BD_RF_ABS && std::is_signed<S>::value) return (int64_t)x < 0 ? (uint64_t)0 - u : u;
        else if constexpr (F == BD_RF_SQ) return u * u;
        else return u;
    }
}

template <int F, class A> __host__ __device__ __forceinline__ A r_comb(A a, A b)
{
    if (F == BD_RF_PROD) return a * b;
    if (F == BD_RF_MAX) return BD_RED_MAX2(a, b);
    if (F == BD_RF_MIN) return BD_RED_MIN2(a, b);
    return a + b;
}

/* The input seen as kept groups (in output order) and reduced groups. */
struct red_geom {
    int nk, nr;
    int64_t ks[BD_MAX_RANK], kst[BD_MAX_RANK]; /* kept sizes and input strides */
    int64_t rs[BD_MAX_RANK], rst[BD_MAX_RANK]; /* reduced sizes and input strides */
    int64_t n_out, n_red, row_len;             /* row_len: the innermost reduced group when contiguous */
};

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

/* The values of one output (from xb) folded by one thread, row-major. */
template <class S, int F, class A>
__device__ __forceinline__ A fold_thread(const S *__restrict__ xb, const red_geom &g, A init, double sh)
{
    A acc = init;
    int64_t idx[BD_MAX_RANK] = {0}, off = 0;
    for (int64_t r = 0; r < g.n_red; r++) {
        acc = r_comb<F, A>(acc, r_map<S, F, A>(xb[off], sh));
        for (int d = g.nr - 1; d >= 0; d--) { /* odometer over the reduced groups */
            off += g.rst[d];
            if (++idx[d] < g.rs[d]) break;
            off -= g.rst[d] * g.rs[d];
            idx[d] = 0;
        }
    }
    return acc;
}

/* The same by a block over rows of row_len contiguous values; every thread
 * gets the result. sh: 256 A of shared memory. */
template <class S, int F, class A>
__device__ __forceinline__ A fold_block(const S *__restrict__ xb, const red_geom &g, A init, double shv, A *sh)
{
    const int64_t rows = g.n_red / g.row_len;
    A acc = init;
    for (int64_t row = 0; row < rows; row++) {
        const S *xr = xb + red_offset(g.nr - 1, g.rs, g.rst, row);
        A part = init;
        for (int64_t r = threadIdx.x; r < g.row_len; r += blockDim.x)
            part = r_comb<F, A>(part, r_map<S, F, A>(xr[r], shv));
        __syncthreads(); /* sh of the previous row is read */
        sh[threadIdx.x] = part;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if ((int)threadIdx.x < s) sh[threadIdx.x] = r_comb<F, A>(sh[threadIdx.x], sh[threadIdx.x + s]);
            __syncthreads();
        }
        acc = r_comb<F, A>(acc, sh[0]);
    }
    return acc;
}

/* Output o from accumulator acc (ops/reduce.h's formulas; integers as the CPU). */
template <class S, class A>
__device__ __forceinline__ void finish(S &o, A acc, double shift, int kind, int64_t count)
{
    if constexpr (r_is_float<S>::value) {
        r_st(o, bd_red_finish(kind, (double)acc, shift, count));
    } else {
        typedef typename std::conditional<std::is_signed<S>::value, int64_t, uint64_t>::type W;
        double lo = (double)std::numeric_limits<S>::lowest(), hi = (double)std::numeric_limits<S>::max();
        double d;
        switch (kind) {
        case BD_RED_MEAN: {
            S s = (S)(W)acc;
            o = count ? (S)(s / count) : (S)0;
            return;
        }
        case BD_RED_L2: d = sqrt((double)(W)acc); break;
        case BD_RED_LOGSUM: d = log((double)(W)acc); break;
        case BD_RED_LOGSUMEXP: d = bd_red_finish(kind, (double)acc, shift, count); break;
        default: o = (S)(W)acc; return;
        }
        o = (S)bd_red_clamp_int(d, lo, hi);
    }
}

/* The max of an output's values as LogSumExp's shift. */
template <class S> __device__ __forceinline__ double shift_of(double mx, int64_t n) { return n ? bd_red_lse_shift(mx) : 0.0; }

template <class S, int F>
__global__ void k_reduce_thread(const S *__restrict__ x, S *__restrict__ o, red_geom g,
                                typename r_acc<S, F>::type init, typename r_acc<S, BD_RF_MAX>::type lowest,
                                int kind)
{
    typedef typename r_acc<S, F>::type A;
    typedef typename r_acc<S, BD_RF_MAX>::type M;
    BD_CU_LOOP(i, g.n_out)
    {
        const S *xb = x + red_offset(g.nk, g.ks, g.kst, i);
        double sh = 0;
        if (F == BD_RF_EXP) sh = shift_of<S>((double)fold_thread<S, BD_RF_MAX, M>(xb, g, lowest, 0), g.n_red);
        finish<S, A>(o[i], fold_thread<S, F, A>(xb, g, init, sh), sh, kind, g.n_red);
    }
}

template <class S, int F>
__global__ void k_reduce_block(const S *__restrict__ x, S *__restrict__ o, red_geom g,
                               typename r_acc<S, F>::type init, typename r_acc<S, BD_RF_MAX>::type lowest,
                               int kind)
{
    typedef typename r_acc<S, F>::type A;
    typedef typename r_acc<S, BD_RF_MAX>::type M;
    __shared__ A sh_a[256];
    __shared__ M sh_m[256];
    for (int64_t i = blockIdx.x; i < g.n_out; i += gridDim.x) {
        const S *xb = x + red_offset(g.nk, g.ks, g.kst, i);
        double sh = 0;
        if (F == BD_RF_EXP) sh = shift_of<S>((double)fold_block<S, BD_RF_MAX, M>(xb, g, lowest, 0, sh_m), g.n_red);
        A acc = fold_block<S, F, A>(xb, g, init, sh, sh_a);
        if (threadIdx.x == 0) finish<S, A>(o[i], acc, sh, kind, g.n_red);
    }
}

/* ArgMax / ArgMin over the middle dim of (outer, n, inner). */
template <class S>
__global__ void k_arg(const S *__restrict__ x, int64_t *__restrict__ o, int64_t outer, int64_t n,
                      int64_t inner, int is_min, int last)
{
    BD_CU_LOOP(t, outer * inner)
    {
        int64_t b = t / inner, i = t - b * inner;
        const S *xl = x + b * n * inner + i;
        int64_t best = 0;
        if constexpr (r_is_float<S>::value) {
            double bv = r_ld(xl[0]);
            for (int64_t j = 1; j < n; j++) {
                double v = r_ld(xl[j * inner]);
                if (BD_ARG_TAKES(v, bv, is_min, last)) best = j, bv = v;
            }
        } else {
            S bv = xl[0];
            for (int64_t j = 1; j < n; j++) {
                S v = xl[j * inner];
                if (BD_ARG_TAKES(v, bv, is_min, last)) best = j, bv = v;
            }
        }
        o[t] = best;
    }
}

/* Calls f(S{}) for the element type of dtype dt. */
template <class F> static bool red_dispatch(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT16: f(rh16{}); return true;
    case BRAID_DTYPE_BFLOAT16: f(rb16{}); return true;
    case BRAID_DTYPE_BOOL: f(uint8_t{}); return true;
    default: return bd_cu_dispatch_num(dt, f);
    }
}

template <class S, int F> static typename r_acc<S, F>::type fold_init(int is_bool)
{
    typedef typename r_acc<S, F>::type A;
    switch (F) {
    case BD_RF_PROD: return (A)1;
    case BD_RF_MAX:
        if constexpr (r_is_float<S>::value) return (A)-INFINITY;
        else return (A)std::numeric_limits<S>::lowest();
    case BD_RF_MIN:
        if constexpr (r_is_float<S>::value) return (A)INFINITY;
        else return is_bool ? (A)1 : (A)std::numeric_limits<S>::max();
    default: return (A)0;
    }
}

template <class S, int F>
static void launch_reduce(const bd_cuda_kernel *k, const red_geom &g, int blockwise, int kind, int is_bool)
{
    const S *x = (const S *)k->in[0].data;
    S *o = (S *)k->out[0].data;
    typename r_acc<S, F>::type init = fold_init<S, F>(is_bool);
    typename r_acc<S, BD_RF_MAX>::type lowest = fold_init<S, BD_RF_MAX>(is_bool);
    if (blockwise) {
        unsigned grid = (unsigned)(g.n_out < 65535LL * 16 ? g.n_out : 65535LL * 16);
        k_reduce_block<S, F><<<grid, g.row_len >= 2048 ? 256 : 128, 0, k->stream>>>(x, o, g, init, lowest, kind);
    } else {
        k_reduce_thread<S, F><<<bd_cu_grid(g.n_out), BD_CU_BLOCK, 0, k->stream>>>(x, o, g, init, lowest, kind);
    }
}

static braid_status run_arg(const bd_cuda_kernel *k, const bd_reduce_params *p)
{
    const bd_tensor *x = &k->in[0];
    int axis;
    braid_status st = bd_axis(p->axes[0], x->rank, &axis, k->err);
    if (st) return st;
    int64_t outer, n = x->dims[axis], inner;
    bd_axis_split(x, axis, &outer, &inner);
    bool ok = red_dispatch(x->dtype, [&](auto tag) {
        typedef decltype(tag) S;
        if (n > 0 && outer * inner > 0)
            k_arg<S><<<bd_cu_grid(outer * inner), BD_CU_BLOCK, 0, k->stream>>>(
                (const S *)x->data, (int64_t *)k->out[0].data, outer, n, inner, p->kind == BD_RED_ARGMIN,
                p->select_last_index);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(x->dtype));
    BD_CU_CHECK_LAUNCH(k, "the ArgMax/ArgMin kernel");
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
    if (p->kind == BD_RED_ARGMAX || p->kind == BD_RED_ARGMIN) return run_arg(k, p);
    /* The axes input is read from its plan-time host copy. */
    bd_tensor hv[2];
    bd_cu_host_view(k, hv, 2);
    if ((st = bd_reduce_axes(nd, hv, k->n_in < 2 ? k->n_in : 2, &mask, &identity, k->err))) return st;
    int64_t n_in = bd_numel(x), n_out = bd_numel(&k->out[0]);
    if (identity) {
        if (n_in > 0)
            BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, x->data, (size_t)n_in * bd_dtype_size(dt),
                                                cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    if (n_out <= 0) return BRAID_OK;
    red_geom g;
    int blockwise = red_make_geom(x, mask, n_out, &g);
    int kind = p->kind, is_bool = dt == BRAID_DTYPE_BOOL;
    bool ok = red_dispatch(dt, [&](auto tag) {
        typedef decltype(tag) S;
        switch (bd_red_fold_of(kind)) {
        case BD_RF_SUM: launch_reduce<S, BD_RF_SUM>(k, g, blockwise, kind, is_bool); break;
        case BD_RF_PROD: launch_reduce<S, BD_RF_PROD>(k, g, blockwise, kind, is_bool); break;
        case BD_RF_MAX: launch_reduce<S, BD_RF_MAX>(k, g, blockwise, kind, is_bool); break;
        case BD_RF_MIN: launch_reduce<S, BD_RF_MIN>(k, g, blockwise, kind, is_bool); break;
        case BD_RF_ABS: launch_reduce<S, BD_RF_ABS>(k, g, blockwise, kind, is_bool); break;
        case BD_RF_SQ: launch_reduce<S, BD_RF_SQ>(k, g, blockwise, kind, is_bool); break;
        default: launch_reduce<S, BD_RF_EXP>(k, g, blockwise, kind, is_bool); break;
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
