/* resize.cu: CUDA kernels of the resize op family (Resize, Upsample),
 * mirroring src/backend/cpu/ops/resize.c: nearest, linear and cubic, every
 * coordinate mode, antialias, exclude_outside and tf_crop_and_resize's
 * extrapolation. Each output element computes its source coordinates and
 * tap weights on every axis, then sums over the product of the taps: fp32 in
 * float; float16/bfloat16 in float and double/integers in double, stored as
 * bd_resize_store rounds them; nearest on integers and bool copies elements. */
#include <math.h>

#include "common.cuh"

extern "C" {
#include "ops/resize.h"
}

/* What the kernel needs of the parameters and the geometry, by value. */
struct rs_geom {
    int rank, mode, coord, nearest, antialias, exclude_outside;
    float cubic_a, extrapolation;
    int64_t in[BD_MAX_RANK], out[BD_MAX_RANK], stride[BD_MAX_RANK];
    double scale[BD_MAX_RANK], length[BD_MAX_RANK], roi_start[BD_MAX_RANK], roi_end[BD_MAX_RANK];
    int ident[BD_MAX_RANK]; /* axis copied as it is */
    int taps[BD_MAX_RANK];  /* taps per output position */
};

/* The source coordinate of output position o on axis d (the CPU's formula). */
__device__ double rs_src_coord(const rs_geom &g, int d, int64_t o)
{
    return bd_resize_src_coord(g.coord, g.scale[d], (double)g.in[d], g.length[d], g.out[d], g.roi_start[d],
                               g.roi_end[d], (double)o);
}

/* One axis at one output position: taps first + j (j < n), clamped. */
struct rs_axis {
    int64_t first;
    int n, aa; /* aa: the antialias filter, normalized by aa_sum */
    double ratio, aa_sum, ex_sum;
};

/* The unnormalized weight of tap j (the CPU's tap_weights before its sums). */
__device__ double rs_raw(const rs_geom &g, int d, const rs_axis &a, int j)
{
    if (a.n == 2 && g.mode == BD_RESIZE_LINEAR) return j == 0 ? 1 - a.ratio : a.ratio;
    if (!a.aa) return bd_resize_cubic(a.ratio + 1 - j, g.cubic_a);
    double t = (1 - a.n / 2 + j - a.ratio) * g.scale[d];
    return g.mode == BD_RESIZE_LINEAR ? fmax(0.0, 1 - fabs(t)) : bd_resize_cubic(t, g.cubic_a);
}

/* The weight of tap j as the CPU stores it (a float; a double for the double path). */
template <class W = float> __device__ W rs_weight(const rs_geom &g, int d, const rs_axis &a, int j)
{
    if (a.n == 1) return (W)1;
    double c = rs_raw(g, d, a, j);
    if (a.aa) c = a.aa_sum != 0 ? c / a.aa_sum : 0;
    if (g.exclude_outside) {
        int64_t i = a.first + j;
        if (i < 0 || i >= g.in[d]) c = 0;
        if (a.ex_sum != 0) c = c / a.ex_sum;
    }
    return (W)c;
}

/* Sets up axis d at output position o; returns 1 where tf_crop_and_resize
 * extrapolates. */
__device__ int rs_setup(const rs_geom &g, int d, int64_t o, rs_axis *a)
{
    a->n = g.taps[d];
    a->aa = 0;
    a->aa_sum = a->ex_sum = 1;
    if (g.ident[d]) {
        a->first = o, a->n = 1;
        return 0;
    }
    const int64_t L = g.in[d];
    double x = rs_src_coord(g, d, o);
    int ext = g.coord == BD_COORD_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(L - 1));
    if (a->n == 1) {
        int64_t i = bd_resize_nearest_index(g.nearest, x, g.scale[d] < 1.0);
        a->first = i < 0 ? 0 : i > L - 1 ? L - 1 : i;
        return ext;
    }
    double xf = floor(x);
    a->ratio = x == xf ? 1.0 : x - xf;
    a->first = (int64_t)xf - a->n / 2 + (x == xf ? 0 : 1);
    a->aa = !(a->n == 2 && g.mode == BD_RESIZE_LINEAR) &&
            !(a->n == 4 && g.mode == BD_RESIZE_CUBIC && !(g.antialias && g.scale[d] < 1.0));
    if (a->aa) {
        double s = 0;
        for (int j = 0; j < a->n; j++) s += rs_raw(g, d, *a, j);
        a->aa_sum = s;
    }
    if (g.exclude_outside) {
        double s = 0;
        for (int j = 0; j < a->n; j++) {
            int64_t i = a->first + j;
            if (i < 0 || i >= L) continue;
            double c = rs_raw(g, d, *a, j);
            if (a->aa) c = a->aa_sum != 0 ? c / a->aa_sum : 0;
            s += c;
        }
        a->ex_sum = s;
    }
    return ext;
}

__global__ void k_resize(const float *__restrict__ x, float *__restrict__ y, int64_t total, rs_geom g)
{
    BD_CU_LOOP(e, total)
    {
        rs_axis ax[BD_MAX_RANK];
        int64_t rem = e;
        int ext = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            ext |= rs_setup(g, d, rem - q * g.out[d], &ax[d]);
            rem = q;
        }
        if (ext) {
            y[e] = g.extrapolation;
            continue;
        }
        int tc[BD_MAX_RANK] = {0};
        float acc = 0;
        for (;;) {
            int64_t off = 0;
            float w = 1;
            for (int d = 0; d < g.rank; d++) {
                int64_t i = ax[d].first + tc[d];
                i = i < 0 ? 0 : i > g.in[d] - 1 ? g.in[d] - 1 : i;
                off += i * g.stride[d];
                w *= rs_weight(g, d, ax[d], tc[d]);
            }
            acc += w * x[off];
            int d = g.rank - 1;
            while (d >= 0 && ++tc[d] == ax[d].n) tc[d--] = 0;
            if (d < 0) break;
        }
        y[e] = acc;
    }
}


/* Any float or integer dtype: loads as double, sums in ACC (float for
 * float16/bfloat16, double otherwise), stores with bd_resize_store. */
__device__ __forceinline__ double rs_load(const void *x, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)x)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)x)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)x)[i]);
    case BRAID_DTYPE_INT8: return ((const int8_t *)x)[i];
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL: return ((const uint8_t *)x)[i];
    case BRAID_DTYPE_INT16: return ((const int16_t *)x)[i];
    case BRAID_DTYPE_UINT16: return ((const uint16_t *)x)[i];
    case BRAID_DTYPE_INT32: return ((const int32_t *)x)[i];
    case BRAID_DTYPE_UINT32: return ((const uint32_t *)x)[i];
    case BRAID_DTYPE_INT64: return (double)((const int64_t *)x)[i];
    case BRAID_DTYPE_UINT64: return (double)((const uint64_t *)x)[i];
    default: return ((const float *)x)[i];
    }
}

template <class ACC>
__global__ void k_resize_any(const void *__restrict__ x, void *__restrict__ y, int dt, int64_t total, rs_geom g)
{
    BD_CU_LOOP(e, total)
    {
        rs_axis ax[BD_MAX_RANK];
        int64_t rem = e;
        int ext = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            ext |= rs_setup(g, d, rem - q * g.out[d], &ax[d]);
            rem = q;
        }
        if (ext) {
            bd_resize_store(y, dt, e, g.extrapolation);
            continue;
        }
        /* axis by axis, as the CPU's double path and onnx's reference: the
         * inner axes' sum for each tap of the outer one, then that axis's */
        int tc[BD_MAX_RANK] = {0};
        ACC part[BD_MAX_RANK];
        for (int d = 0; d < g.rank; d++) part[d] = 0;
        for (bool more = true; more;) {
            int64_t off = 0;
            for (int d = 0; d < g.rank; d++) {
                int64_t i = ax[d].first + tc[d];
                i = i < 0 ? 0 : i > g.in[d] - 1 ? g.in[d] - 1 : i;
                off += i * g.stride[d];
            }
            int d = g.rank - 1;
            part[d] += rs_weight<ACC>(g, d, ax[d], tc[d]) * (ACC)rs_load(x, dt, off);
            for (;;) {
                if (++tc[d] < ax[d].n) break;
                tc[d] = 0;
                if (d == 0) {
                    more = false;
                    break;
                }
                part[d - 1] += rs_weight<ACC>(g, d - 1, ax[d - 1], tc[d - 1]) * part[d];
                part[d] = 0;
                d--;
            }
        }
        ACC acc = part[0];
        bd_resize_store(y, dt, e, (double)acc);
    }
}

/* Nearest on integers and bool: each output element copies its source. */
template <class T>
__global__ void k_resize_gather(const T *__restrict__ x, T *__restrict__ y, int dt, int64_t total, rs_geom g)
{
    BD_CU_LOOP(e, total)
    {
        rs_axis a;
        int64_t rem = e, off = 0;
        int ext = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            ext |= rs_setup(g, d, rem - q * g.out[d], &a);
            off += a.first * g.stride[d];
            rem = q;
        }
        if (ext) bd_resize_store(y, dt, e, g.extrapolation);
        else y[e] = x[off];
    }
}

extern "C" braid_status bd_cuda_resize(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_resize_params *p = (const bd_resize_params *)n->params;
    bd_err *e = k->err;
    braid_status st;
    if (n->op != BD_OP_Resize && n->op != BD_OP_Upsample)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the resize family", n->op_type);
    /* roi, scales and sizes are read from their plan-time host copies. */
    bd_tensor hv[4];
    int nh = k->n_in < 4 ? k->n_in : 4;
    bd_cu_host_view(k, hv, nh);
    bd_resize_geom rg;
    if ((st = bd_resize_geometry(n, hv, nh, &rg, e))) return st;
    const int tf = p->coord == BD_COORD_TF_CROP_AND_RESIZE;
    if (tf && !rg.has_roi && p->in_roi >= 0 && p->in_roi < k->n_in &&
        k->in[p->in_roi].dtype != BRAID_DTYPE_UNDEFINED && bd_numel(&k->in[p->in_roi]) > 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "op %s with a roi known only at run time is not implemented on CUDA",
                       n->op_type);
    rs_geom g = {};
    g.rank = rg.rank;
    g.mode = p->mode;
    g.coord = p->coord;
    g.nearest = p->nearest;
    g.antialias = p->antialias;
    g.exclude_outside = p->exclude_outside;
    g.cubic_a = p->cubic_a;
    g.extrapolation = p->extrapolation;
    int64_t stride = 1;
    for (int d = rg.rank - 1; d >= 0; d--) {
        if (rg.out[d] != k->out[0].dims[d])
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "output dim %d is %lld, the scales give %lld", d,
                           (long long)k->out[0].dims[d], (long long)rg.out[d]);
        if (rg.in[d] == 0 && rg.out[d] > 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot resize an empty axis %d to %lld", d,
                           (long long)rg.out[d]);
        g.in[d] = rg.in[d];
        g.out[d] = rg.out[d];
        g.scale[d] = rg.scale[d];
        g.length[d] = rg.length[d];
        g.roi_start[d] = rg.roi_start[d];
        g.roi_end[d] = rg.roi_end[d];
        g.stride[d] = stride;
        stride *= rg.in[d];
        g.ident[d] = rg.out[d] == rg.in[d] && rg.scale[d] == 1.0 &&
                     (!tf || (rg.roi_start[d] == 0.0 && rg.roi_end[d] == 1.0));
        g.taps[d] = g.ident[d] ? 1 : bd_resize_taps(p, rg.scale[d]);
        if (g.taps[d] > 64)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                           "antialiasing with scale %g needs %d taps; at most 64 are supported",
                           rg.scale[d], g.taps[d]);
    }
    int64_t total = bd_numel(&k->out[0]);
    if (total == 0) return BRAID_OK;
    /* As the CPU (and onnxruntime): an unchanged shape is a copy, whatever the
     * scales say (tf_crop_and_resize excepted: its roi still crops). */
    int same = !tf;
    for (int d = 0; d < rg.rank; d++) same &= rg.out[d] == rg.in[d];
    if (same) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(k->out[0].data, k->in[0].data,
                                            (size_t)total * bd_dtype_size(k->in[0].dtype),
                                            cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    const int dt = k->in[0].dtype;
    if (dt != BRAID_DTYPE_FLOAT) {
        const unsigned grid = bd_cu_grid(total);
        if (dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
            k_resize_any<float><<<grid, BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, k->out[0].data, dt, total, g);
        } else if (p->mode == BD_RESIZE_NEAREST && dt != BRAID_DTYPE_DOUBLE) {
            bool ok = bd_cu_dispatch_size(bd_dtype_size(dt), [&](auto tag) {
                typedef decltype(tag) T;
                k_resize_gather<T><<<grid, BD_CU_BLOCK, 0, k->stream>>>((const T *)k->in[0].data,
                                                                        (T *)k->out[0].data, dt, total, g);
            });
            if (!ok)
                return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Resize of dtype %s is not implemented on CUDA",
                               bd_dtype_name(dt));
        } else {
            k_resize_any<double><<<grid, BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, k->out[0].data, dt, total, g);
        }
        BD_CU_CHECK_LAUNCH(k, "the resize kernel");
        return BRAID_OK;
    }
    k_resize<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>((const float *)k->in[0].data,
                                                               (float *)k->out[0].data, total, g);
    BD_CU_CHECK_LAUNCH(k, "the resize kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_resize_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
