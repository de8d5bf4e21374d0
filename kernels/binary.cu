/* binary.cu: CUDA kernels of the binary op family (arithmetic, Pow, PRelu,
 * comparisons, And/Or, Where) with numpy broadcasting, mirroring
 * src/backend/cpu/ops/binary.c: integer arithmetic wraps, integer division
 * truncates and gives 0 for a zero divisor. */
#include <math.h>

#include <type_traits>

#include "common.cuh"

/* ---- element operations -------------------------------------------------- */

template <class T> struct bd_is_int { static const bool v = std::is_integral<T>::value; };
template <class T> struct bd_is_signed { static const bool v = std::is_signed<T>::value; };

template <class T> struct op_add {
    __device__ T operator()(T x, T y) const
    {
        if (bd_is_int<T>::v) return (T)((uint64_t)x + (uint64_t)y);
        return x + y;
    }
};
template <class T> struct op_sub {
    __device__ T operator()(T x, T y) const
    {
        if (bd_is_int<T>::v) return (T)((uint64_t)x - (uint64_t)y);
        return x - y;
    }
};
template <class T> struct op_mul {
    __device__ T operator()(T x, T y) const
    {
        if (bd_is_int<T>::v) return (T)((uint64_t)x * (uint64_t)y);
        return x * y;
    }
};
template <class T> struct op_div {
    __device__ T operator()(T x, T y) const
    {
        if (!bd_is_int<T>::v) return x / y;
        if (y == 0) return (T)0;
        if (bd_is_signed<T>::v && y == (T)-1) return (T)(0 - (uint64_t)x);
        return (T)(x / y);
    }
};
template <class T> struct op_eq {
    __device__ bd_bool_t operator()(T x, T y) const { return x == y; }
};
template <class T> struct op_lt {
    __device__ bd_bool_t operator()(T x, T y) const { return x < y; }
};
template <class T> struct op_gt {
    __device__ bd_bool_t operator()(T x, T y) const { return x > y; }
};
template <class T> struct op_prelu {
    __device__ T operator()(T x, T y) const { return x < 0 ? (T)(x * y) : x; }
};
struct op_and {
    __device__ bd_bool_t operator()(bd_bool_t x, bd_bool_t y) const { return (x != 0) & (y != 0); }
};
struct op_or {
    __device__ bd_bool_t operator()(bd_bool_t x, bd_bool_t y) const { return (x != 0) | (y != 0); }
};

/* Pow in double, the result converted to the base's type (as the CPU's
 * bd_set_f64 does). Equal float types square as x * x, as the CPU's POW_F
 * does. An integer base with a whole exponent >= 0 multiplies in double while
 * the result stays below 2^53: every product is then exact, as glibc's
 * correctly rounded pow is, where CUDA's pow (up to 2 ulp) could land just
 * below a whole number and truncate to one less. */
template <class TA, class TB> struct op_pow {
    __device__ TA operator()(TA x, TB y) const
    {
        if constexpr (std::is_same<TA, TB>::value && !std::is_integral<TA>::value) {
            if (y == 2) return x * x;
        }
        double xd = (double)x, yd = (double)y;
        if constexpr (std::is_integral<TA>::value) {
            if (yd >= 0 && yd <= 64 && yd == floor(yd) && fabs(xd) <= 9007199254740992.0) {
                double r = 1, b = xd;
                bool exact = true;
                for (unsigned e = (unsigned)yd; e && exact; e >>= 1) {
                    if (e & 1) r *= b, exact = fabs(r) <= 9007199254740992.0;
                    if (e > 1) b *= b;
                }
                if (exact) return (TA)r;
            }
        }
        return (TA)pow(xd, yd);
    }
};

/* ---- kernels ------------------------------------------------------------- */

/* Broadcast in g (rank >= 1); one element per thread, grid-stride. */
template <class TA, class TB, class TO, class Op>
__global__ void k_binary(const TA *__restrict__ a, const TB *__restrict__ b, TO *__restrict__ o,
                         int64_t n, bd_cu_nd g, Op op)
{
    BD_CU_LOOP(i, n)
    {
        int64_t off[2];
        bd_cu_offsets<2>(g, i, off);
        o[i] = op(a[off[0]], b[off[1]]);
    }
}

/* After merging, one dim: each input is walked with stride 0 or 1. */
template <class TA, class TB, class TO, class Op>
__global__ void k_binary_flat(const TA *__restrict__ a, int64_t sa, const TB *__restrict__ b,
                              int64_t sb, TO *__restrict__ o, int64_t n, Op op)
{
    BD_CU_LOOP(i, n) o[i] = op(a[i * sa], b[i * sb]);
}

template <class T>
__global__ void k_where(const bd_bool_t *__restrict__ c, const T *__restrict__ x,
                        const T *__restrict__ y, T *__restrict__ o, int64_t n, bd_cu_nd g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t off[3];
        bd_cu_offsets<3>(g, i, off);
        o[i] = c[off[0]] ? x[off[1]] : y[off[2]];
    }
}

/* ---- launchers ----------------------------------------------------------- */

/* The broadcast geometry of the n_in inputs into out. */
static void make_geom(const bd_cuda_kernel *k, int n_in, bd_cu_nd *g)
{
    int64_t st[BD_CU_MAX_IN][BD_MAX_RANK];
    const bd_tensor *out = &k->out[0];
    for (int i = 0; i < n_in; i++) bd_cu_bcast_strides(&k->in[i], out->rank, out->dims, st[i]);
    bd_cu_nd_make(g, out->rank, out->dims, n_in, st);
}

template <class TA, class TB, class TO, class Op>
static braid_status launch2(const bd_cuda_kernel *k, Op op)
{
    bd_cu_nd g;
    int64_t n = bd_numel(&k->out[0]);
    if (n <= 0) return BRAID_OK;
    make_geom(k, 2, &g);
    const TA *a = (const TA *)k->in[0].data;
    const TB *b = (const TB *)k->in[1].data;
    TO *o = (TO *)k->out[0].data;
    if (g.rank == 1)
        k_binary_flat<TA, TB, TO, Op>
            <<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, g.st[0][0], b, g.st[1][0], o, n, op);
    else
        k_binary<TA, TB, TO, Op><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, b, o, n, g, op);
    BD_CU_CHECK_LAUNCH(k, "a binary kernel");
    return BRAID_OK;
}

static braid_status run_where(const bd_cuda_kernel *k)
{
    int64_t n = bd_numel(&k->out[0]);
    size_t es = bd_dtype_size(k->in[1].dtype);
    braid_status st = BRAID_OK;
    if (k->n_in < 3)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Where needs 3 inputs, it has %d", k->n_in);
    if (n <= 0) return BRAID_OK;
    bd_cu_nd g;
    make_geom(k, 3, &g);
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_where<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
            (const bd_bool_t *)k->in[0].data, (const T *)k->in[1].data, (const T *)k->in[2].data,
            (T *)k->out[0].data, n, g);
        cudaError_t ce = cudaGetLastError();
        if (ce != cudaSuccess)
            st = BD_FAIL(k->err, BRAID_ERR_DEVICE, "launch of the Where kernel failed: %s",
                         cudaGetErrorString(ce));
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Where with dtype %s is not implemented on CUDA",
                       bd_dtype_name(k->in[1].dtype));
    return st;
}

extern "C" braid_status bd_cuda_binary(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    int dt = k->in[0].dtype;
    braid_status st = BRAID_OK;
    bool ok = false;
    switch (n->op) {
#define SAME_OP(OPNAME, FUNCTOR, DISPATCH)                                                         \
    case BD_OP_##OPNAME:                                                                           \
        ok = DISPATCH(dt, [&](auto tag) {                                                          \
            typedef decltype(tag) T;                                                               \
            st = launch2<T, T, T>(k, FUNCTOR<T>());                                                \
        });                                                                                        \
        break;
#define BOOL_OP(OPNAME, FUNCTOR, DISPATCH)                                                         \
    case BD_OP_##OPNAME:                                                                           \
        ok = DISPATCH(dt, [&](auto tag) {                                                          \
            typedef decltype(tag) T;                                                               \
            st = launch2<T, T, bd_bool_t>(k, FUNCTOR<T>());                                        \
        });                                                                                        \
        break;
        SAME_OP(Add, op_add, bd_cu_dispatch_num)
        SAME_OP(Sub, op_sub, bd_cu_dispatch_num)
        SAME_OP(Mul, op_mul, bd_cu_dispatch_num)
        SAME_OP(Div, op_div, bd_cu_dispatch_num)
        BOOL_OP(Less, op_lt, bd_cu_dispatch_num)
        BOOL_OP(Greater, op_gt, bd_cu_dispatch_num)
#undef SAME_OP
#undef BOOL_OP
    case BD_OP_Equal:
        /* bool compares as its byte. */
        if (dt == BRAID_DTYPE_BOOL) dt = BRAID_DTYPE_UINT8;
        ok = bd_cu_dispatch_num(dt, [&](auto tag) {
            typedef decltype(tag) T;
            st = launch2<T, T, bd_bool_t>(k, op_eq<T>());
        });
        dt = k->in[0].dtype;
        break;
    case BD_OP_PRelu:
        if (dt == BRAID_DTYPE_INT32) ok = true, st = launch2<int32_t, int32_t, int32_t>(k, op_prelu<int32_t>());
        else if (dt == BRAID_DTYPE_INT64) ok = true, st = launch2<int64_t, int64_t, int64_t>(k, op_prelu<int64_t>());
        else
            ok = bd_cu_dispatch_float(dt, [&](auto tag) {
                typedef decltype(tag) T;
                st = launch2<T, T, T>(k, op_prelu<T>());
            });
        break;
    case BD_OP_And:
        if (dt == BRAID_DTYPE_BOOL) ok = true, st = launch2<bd_bool_t, bd_bool_t, bd_bool_t>(k, op_and());
        break;
    case BD_OP_Or:
        if (dt == BRAID_DTYPE_BOOL) ok = true, st = launch2<bd_bool_t, bd_bool_t, bd_bool_t>(k, op_or());
        break;
    case BD_OP_Pow: {
        int tb = k->in[1].dtype;
        if (k->out[0].dtype != dt) break;
        auto base = [&](auto ta) {
            typedef decltype(ta) TA;
            ok = bd_cu_dispatch_num(tb, [&](auto tbt) {
                typedef decltype(tbt) TB;
                st = launch2<TA, TB, TA>(k, op_pow<TA, TB>());
            });
        };
        if (dt == BRAID_DTYPE_INT32) base(int32_t{});
        else if (dt == BRAID_DTYPE_INT64) base(int64_t{});
        else bd_cu_dispatch_float(dt, base);
        if (!ok)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                           "op Pow with base dtype %s and exponent dtype %s is not implemented on CUDA",
                           bd_dtype_name(dt), bd_dtype_name(tb));
        return st;
    }
    case BD_OP_Where: return run_where(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the binary family", n->op_type);
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       n->op_type, bd_dtype_name(dt));
    return st;
}

extern "C" void bd_cuda_binary_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
