/* loss.cu: CUDA kernels of the loss op family (NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss), mirroring src/backend/cpu/ops/loss.c with
 * ops/loss.h's formulas, in double. One thread per (n, d) term writes the
 * unreduced loss and SoftmaxCrossEntropyLoss's log_prob line; a reduction is
 * summed by one block in a fixed order. A target outside [0, C) that is not
 * the ignore_index gives NaN (the CPU, which can read the targets, fails). */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/loss.h"
#include "util/dtype.h"
}

struct lh16 { uint16_t v; };
struct lb16 { uint16_t v; };

__device__ __forceinline__ double l_ld(float v) { return v; }
__device__ __forceinline__ double l_ld(double v) { return v; }
__device__ __forceinline__ double l_ld(lh16 v) { return bd_half_to_float_hd(v.v); }
__device__ __forceinline__ double l_ld(lb16 v) { return bd_bf16_to_float(v.v); }
__device__ __forceinline__ void l_st(float &o, double v) { o = (float)v; }
__device__ __forceinline__ void l_st(double &o, double v) { o = v; }
__device__ __forceinline__ void l_st(lh16 &o, double v) { o.v = bd_float_to_half((float)v); }
__device__ __forceinline__ void l_st(lb16 &o, double v) { o.v = bd_float_to_bf16((float)v); }

struct loss_args {
    int64_t c, d, terms;
    int sce;
    bd_loss_params p;
};

/* Term i = (b, dd): its loss and weight; writes the line's log_prob when lp. */
template <class S, class TI>
__device__ __forceinline__ double term_of(const S *__restrict__ x, const TI *__restrict__ t, const S *__restrict__ w,
                                          S *__restrict__ lp, const loss_args &a, int64_t i, double *wt)
{
    int64_t b = i / a.d, dd = i - b * a.d, base = b * a.c * a.d + dd;
    double lse = 0;
    if (a.sce) {
        double mx = -INFINITY, s = 0;
        for (int64_t c = 0; c < a.c; c++) {
            double v = l_ld(x[base + c * a.d]);
            mx = v > mx || v != v ? v : mx;
        }
        double sh = isfinite(mx) ? mx : 0.0;
        for (int64_t c = 0; c < a.c; c++) s += exp(l_ld(x[base + c * a.d]) - sh);
        lse = sh + log(s);
        if (lp)
            for (int64_t c = 0; c < a.c; c++) l_st(lp[base + c * a.d], l_ld(x[base + c * a.d]) - lse);
    }
    int64_t cls = bd_loss_class((int64_t)t[i], a.c, &a.p);
    if (cls == -1) {
        *wt = 0;
        return 0;
    }
    if (cls == -2) {
        *wt = NAN;
        return NAN;
    }
    *wt = w ? l_ld(w[cls]) : 1.0;
    return -(l_ld(x[base + cls * a.d]) - lse) * *wt;
}

/* One thread per term: the unreduced loss (out, when not NULL) and log_prob (lp). */
template <class S, class TI>
__global__ void k_loss_terms(const S *__restrict__ x, const TI *__restrict__ t, const S *__restrict__ w,
                             S *__restrict__ out, S *__restrict__ lp, loss_args a)
{
    BD_CU_LOOP(i, a.terms)
    {
        double wt, v = term_of(x, t, w, lp, a, i, &wt);
        if (out) l_st(out[i], v);
    }
}

/* One block of 256 threads sums every term and weight (thread j takes terms
 * j, j + 256, ...; then a fixed tree), and writes the reduced loss. */
template <class S, class TI>
__global__ void k_loss_reduce(const S *__restrict__ x, const TI *__restrict__ t, const S *__restrict__ w,
                              S *__restrict__ out, loss_args a)
{
    __shared__ double sh_s[256], sh_w[256];
    double s = 0, ws = 0;
    for (int64_t i = threadIdx.x; i < a.terms; i += blockDim.x) {
        double wt, v = term_of<S, TI>(x, t, w, (S *)NULL, a, i, &wt);
        s += v;
        ws += wt;
    }
    sh_s[threadIdx.x] = s;
    sh_w[threadIdx.x] = ws;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) {
            sh_s[threadIdx.x] += sh_s[threadIdx.x + h];
            sh_w[threadIdx.x] += sh_w[threadIdx.x + h];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) l_st(out[0], bd_loss_reduce(a.p.reduction, sh_s[0], sh_w[0]));
}

template <class S, class TI> static void launch(const bd_cuda_kernel *k, const loss_args &a)
{
    const S *x = (const S *)k->in[0].data, *w = k->n_in > 2 && k->in[2].data ? (const S *)k->in[2].data : NULL;
    const TI *t = (const TI *)k->in[1].data;
    S *out = (S *)k->out[0].data, *lp = k->n_out > 1 ? (S *)k->out[1].data : NULL;
    int none = a.p.reduction == BD_LOSS_NONE;
    if ((none || lp) && a.terms > 0)
        k_loss_terms<S, TI><<<bd_cu_grid(a.terms), BD_CU_BLOCK, 0, k->stream>>>(x, t, w, none ? out : NULL, lp, a);
    if (!none) k_loss_reduce<S, TI><<<1, 256, 0, k->stream>>>(x, t, w, out, a);
}

extern "C" braid_status bd_cuda_loss(const bd_cuda_kernel *k)
{
    const bd_loss_params *p = (const bd_loss_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "loss parameters were not parsed");
    if (k->node->op != BD_OP_NegativeLogLikelihoodLoss && k->node->op != BD_OP_SoftmaxCrossEntropyLoss)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the loss family", k->node->op_type);
    loss_args a;
    int64_t n;
    bd_loss_dims(x, &n, &a.c, &a.d);
    a.terms = n * a.d;
    a.sce = k->node->op == BD_OP_SoftmaxCrossEntropyLoss;
    a.p = *p;
    int i64 = k->in[1].dtype == BRAID_DTYPE_INT64;
    switch (x->dtype) {
    case BRAID_DTYPE_FLOAT: i64 ? launch<float, int64_t>(k, a) : launch<float, int32_t>(k, a); break;
    case BRAID_DTYPE_DOUBLE: i64 ? launch<double, int64_t>(k, a) : launch<double, int32_t>(k, a); break;
    case BRAID_DTYPE_FLOAT16: i64 ? launch<lh16, int64_t>(k, a) : launch<lh16, int32_t>(k, a); break;
    case BRAID_DTYPE_BFLOAT16: i64 ? launch<lb16, int64_t>(k, a) : launch<lb16, int32_t>(k, a); break;
    default:
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s with dtype %s is not implemented on CUDA",
                       k->node->op_type, bd_dtype_name(x->dtype));
    }
    BD_CU_CHECK_LAUNCH(k, "a loss kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_loss_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
