/* binary.cu: CUDA kernels of the binary op family (arithmetic, Mod, Pow,
 * PRelu, comparisons, logic and bitwise ops, Where, the variadic Max, Min,
 * Sum, Mean and BiasAdd) with numpy broadcasting, mirroring
 * src/backend/cpu/ops/binary.c: integer arithmetic wraps, integer division
 * truncates and gives 0 for a zero divisor, float16/bfloat16 are computed in
 * float; the formulas beyond an operator are src/ops/binary.h's. The
 * variadic ops fold their inputs into the output left to right. */
#include <math.h>

#include <type_traits>

#include "elementwise.cuh"

extern "C" {
#include "ops/binary.h"
}

/* ---- element operations over the compute type ----------------------------- */

#define IS_INT(C) std::is_integral<C>::value
struct o_add {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (IS_INT(C)) return (C)((uint64_t)x + (uint64_t)y);
        else return x + y;
    }
};
struct o_sub {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (IS_INT(C)) return (C)((uint64_t)x - (uint64_t)y);
        else return x - y;
    }
};
struct o_mul {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (IS_INT(C)) return (C)((uint64_t)x * (uint64_t)y);
        else return x * y;
    }
};
struct o_div {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (IS_INT(C)) {
            if (y == 0) return (C)0;
            if (std::is_signed<C>::value && y == (C)-1) return (C)(0 - (uint64_t)x);
            return (C)(x / y);
        } else {
            return x / y;
        }
    }
};
struct o_mod {
    int fmod_;
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (std::is_same<C, float>::value) return bd_bin_mod_f(x, y, fmod_);
        else if constexpr (std::is_same<C, double>::value) return bd_bin_mod_d(x, y, fmod_);
        else if constexpr (std::is_signed<C>::value) return (C)bd_bin_mod_i(x, y, fmod_);
        else return (C)bd_bin_mod_u(x, y);
    }
};
struct o_prelu {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (IS_INT(C)) return x > 0 ? x : (C)((uint64_t)x * (uint64_t)y);
        else return x > 0 ? x : x * y;
    }
};
struct o_max {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (std::is_same<C, float>::value) return bd_bin_max_f(x, y);
        else if constexpr (std::is_same<C, double>::value) return bd_bin_max_d(x, y);
        else return x > y ? x : y;
    }
};
struct o_min {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (std::is_same<C, float>::value) return bd_bin_min_f(x, y);
        else if constexpr (std::is_same<C, double>::value) return bd_bin_min_d(x, y);
        else return x < y ? x : y;
    }
};
struct o_mean_last { /* the last step of Mean: (sum + x) / n */
    float n;
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return (x + y) / (C)n; }
};
/* Pow of equal float types: squaring is exact as x * x, as on the CPU. */
struct o_pow {
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        return y == 2 ? x * x : (C)pow((double)x, (double)y);
    }
};
/* Pow of any base and exponent types (the output has the base's): integer
 * bases by bd_bin_ipow, float bases in double. */
struct o_pow_mixed {
    template <class CA, class CB> __device__ __forceinline__ CA operator()(CA x, CB y) const
    {
        if constexpr (IS_INT(CA)) return (CA)bd_bin_ipow((int64_t)x, (double)y);
        else return (CA)pow((double)x, (double)y);
    }
};
#define CMP_OP(NAME, EXPR)                                                                         \
    struct NAME {                                                                                  \
        template <class C> __device__ __forceinline__ bd_bool_t operator()(C x, C y) const { return EXPR; } \
    };
CMP_OP(o_eq, x == y)
CMP_OP(o_lt, x < y)
CMP_OP(o_gt, x > y)
CMP_OP(o_le, x <= y)
CMP_OP(o_ge, x >= y)
CMP_OP(o_and, (x != 0) & (y != 0))
CMP_OP(o_or, (x != 0) | (y != 0))
CMP_OP(o_xor, (x != 0) ^ (y != 0))
#undef CMP_OP
#define BIT_OP(NAME, EXPR)                                                                         \
    struct NAME {                                                                                  \
        template <class C> __device__ __forceinline__ C operator()(C x, C y) const { return (C)(EXPR); } \
    };
BIT_OP(o_band, x & y)
BIT_OP(o_bor, x | y)
BIT_OP(o_bxor, x ^ y)
#undef BIT_OP
struct o_shift {
    int left;
    template <class C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        return (C)bd_bin_shift((int64_t)x, (int64_t)y, (int)(8 * sizeof(C)), left, std::is_signed<C>::value);
    }
};

/* ---- Where: elements moved by size --------------------------------------- */

template <class T>
__global__ void k_where(const bd_bool_t *__restrict__ c, const T *__restrict__ x, const T *__restrict__ y,
                        T *__restrict__ o, int64_t n, bd_cu_nd g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t off[3];
        bd_cu_offsets<3>(g, i, off);
        o[i] = c[off[0]] ? x[off[1]] : y[off[2]];
    }
}

static braid_status run_where(const bd_cuda_kernel *k)
{
    int64_t n = bd_numel(&k->out[0]);
    size_t es = bd_dtype_size(k->in[1].dtype);
    if (k->n_in < 3) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Where needs 3 inputs, it has %d", k->n_in);
    if (n <= 0) return BRAID_OK;
    int64_t st[BD_CU_MAX_IN][BD_MAX_RANK];
    const bd_tensor *out = &k->out[0];
    for (int i = 0; i < 3; i++) bd_cu_bcast_strides(&k->in[i], out->rank, out->dims, st[i]);
    bd_cu_nd g;
    bd_cu_nd_make(&g, out->rank, out->dims, 3, st);
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_where<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const bd_bool_t *)k->in[0].data,
                                                                (const T *)k->in[1].data, (const T *)k->in[2].data,
                                                                (T *)out->data, n, g);
    });
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "Where with dtype %s is not implemented on CUDA",
                       bd_dtype_name(k->in[1].dtype));
    BD_CU_CHECK_LAUNCH(k, "the Where kernel");
    return BRAID_OK;
}

/* ---- launchers ----------------------------------------------------------- */

/* out = op(a, b) folded over the inputs: (in0, in1) with in1 under its old-
 * form view, then (out, in2), (out, in3)... Mean's last step divides. */
template <class S, class TO, class Op>
static braid_status fold(const bd_cuda_kernel *k, Op op)
{
    const bd_tensor *out = &k->out[0];
    if (k->n_in == 1) {
        int64_t n = bd_numel(out);
        if (n > 0)
            BD_CU_CHECK_CALL(k, cudaMemcpyAsync(out->data, k->in[0].data, (size_t)n * sizeof(S),
                                                cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    bd_tensor view;
    const bd_tensor *b = bd_binary_view(k->node, &k->in[0], &k->in[1], &view) ? &view : &k->in[1];
    for (int i = 1; i < k->n_in; i++) {
        const bd_tensor *a = i == 1 ? &k->in[0] : out;
        if (i > 1) b = &k->in[i];
        braid_status st;
        if (k->node->op == BD_OP_Mean && i == k->n_in - 1)
            st = bd_ew_bcast<S, S, TO>(k, a, b, out, o_mean_last{(float)k->n_in});
        else
            st = bd_ew_bcast<S, S, TO>(k, a, b, out, op);
        if (st) return st;
    }
    return BRAID_OK;
}

/* Same-typed inputs over a dispatch set, the output of their type or bool. */
template <class Op> static bool same_num(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_num(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = fold<S, S>(k, op);
    });
}
template <class Op> static bool same_float(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_float(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = fold<S, S>(k, op);
    });
}
template <class Op> static bool same_int(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_int(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = fold<S, S>(k, op);
    });
}
template <class Op> static bool cmp_num(const bd_cuda_kernel *k, Op op, braid_status *st)
{
    return bd_ew_dispatch_num(k->in[0].dtype, [&](auto tag) {
        typedef decltype(tag) S;
        *st = fold<S, bd_bool_t>(k, op);
    });
}

static bool run_pow(const bd_cuda_kernel *k, braid_status *st)
{
    int ta = k->in[0].dtype, tb = k->in[1].dtype;
    if (ta == tb && bd_ew_dispatch_float(ta, [&](auto tag) {
            typedef decltype(tag) S;
            *st = fold<S, S>(k, o_pow());
        }))
        return true;
    bool ok = false;
    auto base = [&](auto atag) {
        typedef decltype(atag) TA;
        ok = bd_ew_dispatch_num(tb, [&](auto btag) {
            typedef decltype(btag) TB;
            bd_tensor view;
            const bd_tensor *b = bd_binary_view(k->node, &k->in[0], &k->in[1], &view) ? &view : &k->in[1];
            *st = bd_ew_bcast<TA, TB, TA>(k, &k->in[0], b, &k->out[0], o_pow_mixed());
        });
    };
    if (ta == BRAID_DTYPE_INT32) base(int32_t{});
    else if (ta == BRAID_DTYPE_INT64) base(int64_t{});
    else bd_ew_dispatch_float(ta, base);
    return ok;
}

extern "C" braid_status bd_cuda_binary(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_binary_params *p = (const bd_binary_params *)n->params;
    int dt = k->in[0].dtype;
    braid_status st = BRAID_OK;
    bool ok = false;
    switch (n->op) {
    case BD_OP_Where: return run_where(k);
    case BD_OP_Add: case BD_OP_Sum: case BD_OP_MS_BiasAdd: ok = same_num(k, o_add(), &st); break;
    case BD_OP_Mean: ok = same_float(k, o_add(), &st); break;
    case BD_OP_Sub: ok = same_num(k, o_sub(), &st); break;
    case BD_OP_Mul: ok = same_num(k, o_mul(), &st); break;
    case BD_OP_Div: ok = same_num(k, o_div(), &st); break;
    case BD_OP_Mod: ok = same_num(k, o_mod{p ? p->fmod : 0}, &st); break;
    case BD_OP_PRelu: ok = same_num(k, o_prelu(), &st); break;
    case BD_OP_Max: ok = same_num(k, o_max(), &st); break;
    case BD_OP_Min: ok = same_num(k, o_min(), &st); break;
    case BD_OP_Pow: ok = run_pow(k, &st); break;
    case BD_OP_Less: ok = cmp_num(k, o_lt(), &st); break;
    case BD_OP_Greater: ok = cmp_num(k, o_gt(), &st); break;
    case BD_OP_LessOrEqual: ok = cmp_num(k, o_le(), &st); break;
    case BD_OP_GreaterOrEqual: ok = cmp_num(k, o_ge(), &st); break;
    case BD_OP_Equal:
        if (dt == BRAID_DTYPE_BOOL) ok = true, st = fold<bd_bool_t, bd_bool_t>(k, o_eq());
        else ok = cmp_num(k, o_eq(), &st);
        break;
    case BD_OP_And: if (dt == BRAID_DTYPE_BOOL) ok = true, st = fold<bd_bool_t, bd_bool_t>(k, o_and()); break;
    case BD_OP_Or: if (dt == BRAID_DTYPE_BOOL) ok = true, st = fold<bd_bool_t, bd_bool_t>(k, o_or()); break;
    case BD_OP_Xor: if (dt == BRAID_DTYPE_BOOL) ok = true, st = fold<bd_bool_t, bd_bool_t>(k, o_xor()); break;
    case BD_OP_BitwiseAnd: ok = same_int(k, o_band(), &st); break;
    case BD_OP_BitwiseOr: ok = same_int(k, o_bor(), &st); break;
    case BD_OP_BitwiseXor: ok = same_int(k, o_bxor(), &st); break;
    case BD_OP_BitShift: ok = same_int(k, o_shift{p ? p->shift_left : 0}, &st); break;
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the binary family", n->op_type);
    }
    if (!ok)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA", n->op_type,
                       bd_dtype_name(dt));
    return st;
}

extern "C" void bd_cuda_binary_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
