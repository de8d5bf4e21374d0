/* vision.cu: CUDA kernels of the vision op family, on the formulas of
 * src/ops/vision.h that the CPU kernels run: GridSample, AffineGrid, RoiAlign
 * and MaxRoiPool with one thread per output element. NonMaxSuppression runs
 * on the host (bd_cuda_on_host, the CPU kernel): its output's size is its
 * selected count, which the host must read whatever computes it, and its
 * greedy selection is serial per (batch, class), a poor fit for the GPU's
 * threads (the kernel it replaces ran one thread per class). */
#include <float.h>

#include "common.cuh"

extern "C" {
#include "backend/cpu/cpu_ops.h"
#include "ops/vision.h"
#include "util/dtype.h"
}

/* Element i of a float, double, float16 or bfloat16 buffer. */
__device__ __forceinline__ double vload(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Stores v (computed in float, or double for double) as element i. */
__device__ __forceinline__ void vstore(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    default: ((float *)p)[i] = (float)v; break;
    }
}

static bool is_float_dt(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
           dt == BRAID_DTYPE_BFLOAT16;
}

/* ---- GridSample ------------------------------------------------------------ */

struct gs_args {
    int r, mode, padding, align, x_dt, grid_dt, interp; /* interp: a float X (else bytes, nearest) */
    size_t esz;
    int64_t C, L[BD_GS_MAX_SPATIAL], P, S, total;
};

__global__ void k_gridsample(const void *__restrict__ x, const void *__restrict__ grid, void *__restrict__ y,
                             gs_args a)
{
    BD_CU_LOOP(e, a.total)
    {
        const int64_t p = e % a.P, pl = e / a.P, n = pl / a.C;
        bd_gs_taps t[BD_GS_MAX_SPATIAL];
        for (int d = 0; d < a.r; d++) {
            double v = vload(grid, a.grid_dt, (n * a.P + p) * a.r + (a.r - 1 - d));
            if (a.grid_dt == BRAID_DTYPE_DOUBLE) bd_gs_taps_d(v, a.L[d], a.align, a.padding, a.mode, &t[d]);
            else bd_gs_taps_f((float)v, a.L[d], a.align, a.padding, a.mode, &t[d]);
        }
        if (!a.interp) { /* nearest on any dtype */
            int64_t o = 0;
            for (int d = 0; d < a.r; d++) o = o < 0 || t[d].idx[0] < 0 ? -1 : o * a.L[d] + t[d].idx[0];
            const char *src = (const char *)x + (size_t)(pl * a.S + (o < 0 ? 0 : o)) * a.esz;
            char *dst = (char *)y + (size_t)e * a.esz;
            for (size_t b = 0; b < a.esz; b++) dst[b] = o < 0 ? 0 : src[b];
            continue;
        }
        int c[BD_GS_MAX_SPATIAL] = {0, 0, 0};
        double accd = 0.0;
        float accf = 0.0f;
        for (;;) {
            int64_t o = 0;
            double w = 1.0;
            for (int d = 0; d < a.r; d++) {
                int64_t i = t[d].idx[c[d]];
                o = o < 0 || i < 0 ? -1 : o * a.L[d] + i;
                w *= t[d].w[c[d]];
            }
            if (o >= 0) {
                double v = vload(x, a.x_dt, pl * a.S + o);
                if (a.x_dt == BRAID_DTYPE_DOUBLE) accd += w * v;
                else accf += (float)w * (float)v;
            }
            int d = a.r - 1;
            while (d >= 0 && ++c[d] == t[d].n) c[d--] = 0;
            if (d < 0) break;
        }
        vstore(y, a.x_dt, e, a.x_dt == BRAID_DTYPE_DOUBLE ? accd : (double)accf);
    }
}

static braid_status run_gridsample(const bd_cuda_kernel *k)
{
    const bd_vision_params *p = (const bd_vision_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *grid = &k->in[1];
    braid_status st = bd_gridsample_check(k->node, x, grid, k->err);
    if (st) return st;
    gs_args a = {};
    a.r = x->rank - 2, a.mode = p->mode, a.padding = p->padding, a.align = p->align_corners;
    a.x_dt = x->dtype, a.grid_dt = grid->dtype, a.interp = is_float_dt(x->dtype);
    a.esz = bd_dtype_size(x->dtype);
    a.C = x->dims[1], a.P = a.S = 1;
    for (int d = 0; d < a.r; d++) {
        a.L[d] = x->dims[2 + d];
        a.S *= a.L[d];
        a.P *= k->out[0].dims[2 + d];
    }
    a.total = bd_numel(&k->out[0]);
    if (a.total == 0) return BRAID_OK;
    k_gridsample<<<bd_cu_grid(a.total), BD_CU_BLOCK, 0, k->stream>>>(x->data, grid->data, k->out[0].data, a);
    BD_CU_CHECK_LAUNCH(k, "the GridSample kernel");
    return BRAID_OK;
}

/* ---- AffineGrid ------------------------------------------------------------ */

__device__ __forceinline__ double base_coord(int64_t i, int64_t L, int align)
{
    if (align) return L > 1 ? -1.0 + 2.0 * (double)i / (double)(L - 1) : -1.0;
    return -1.0 + (2.0 * (double)i + 1.0) / (double)L;
}

__global__ void k_affine_grid(const void *__restrict__ th, void *__restrict__ y, int dt, int r, int64_t D,
                              int64_t H, int64_t W, int align, int64_t total)
{
    BD_CU_LOOP(e, total)
    {
        int64_t i = e % r, pos = e / r;
        int64_t x = pos % W, yy = (pos / W) % H, z = (pos / (W * H)) % D, n = pos / (W * H * D);
        double v[4] = {base_coord(x, W, align), base_coord(yy, H, align), r == 3 ? base_coord(z, D, align) : 1.0,
                       1.0};
        double s = 0;
        for (int c = 0; c <= r; c++) s += vload(th, dt, (n * r + i) * (r + 1) + c) * v[c];
        vstore(y, dt, e, s);
    }
}

/* ---- RoiAlign and MaxRoiPool ----------------------------------------------- */

struct roi_args {
    int mode, half_pixel, dt;
    int64_t N, C, H, W, oh, ow, ratio, total;
    float scale;
};

/* The formulas of vision.h by type. */
__device__ __forceinline__ void roi_geom(const float *r, float s, int hp, int64_t oh, int64_t ow, int64_t ratio,
                                         float *y0, float *x0, float *bh, float *bw, int64_t *gh, int64_t *gw)
{
    bd_roi_geom_f(r, s, hp, oh, ow, ratio, y0, x0, bh, bw, gh, gw);
}
__device__ __forceinline__ void roi_geom(const double *r, double s, int hp, int64_t oh, int64_t ow, int64_t ratio,
                                         double *y0, double *x0, double *bh, double *bw, int64_t *gh, int64_t *gw)
{
    bd_roi_geom_d(r, s, hp, oh, ow, ratio, y0, x0, bh, bw, gh, gw);
}
__device__ __forceinline__ void roi_sample(float y, float x, int64_t H, int64_t W, bd_roi_sample *s)
{
    bd_roi_sample_f(y, x, H, W, s);
}
__device__ __forceinline__ void roi_sample(double y, double x, int64_t H, int64_t W, bd_roi_sample *s)
{
    bd_roi_sample_d(y, x, H, W, s);
}

template <class T>
__device__ void roi_align_elem(const void *x, const void *rois, const int64_t *batch, void *y, const roi_args &a,
                               int64_t e)
{
    const int64_t pw = e % a.ow, ph = (e / a.ow) % a.oh, c = (e / (a.ow * a.oh)) % a.C, r = e / (a.ow * a.oh * a.C);
    T roi[4];
    for (int i = 0; i < 4; i++) roi[i] = (T)vload(rois, a.dt, r * 4 + i);
    T y0, x0, bh, bw;
    int64_t gh, gw;
    roi_geom(roi, (T)a.scale, a.half_pixel, a.oh, a.ow, a.ratio, &y0, &x0, &bh, &bw, &gh, &gw);
    const int64_t b = batch[r];
    if (b < 0 || b >= a.N) { /* the CPU refuses such a batch index; here it reads as NaN */
        vstore(y, a.dt, e, nan(""));
        return;
    }
    const int64_t base = (b * a.C + c) * a.H * a.W;
    T acc = 0;
    for (int64_t iy = 0; iy < gh; iy++) {
        T yy = y0 + (T)ph * bh + ((T)iy + (T)0.5) * bh / (T)gh;
        for (int64_t ix = 0; ix < gw; ix++) {
            T xx = x0 + (T)pw * bw + ((T)ix + (T)0.5) * bw / (T)gw;
            bd_roi_sample s;
            roi_sample(yy, xx, a.H, a.W, &s);
            T v[4];
            for (int j = 0; j < 4; j++) v[j] = (T)s.w[j] * (T)vload(x, a.dt, base + s.o[j]);
            if (a.mode == 0) acc += v[0] + v[1] + v[2] + v[3];
            else {
                T m = v[0] > v[1] ? v[0] : v[1], m2 = v[2] > v[3] ? v[2] : v[3];
                m = m > m2 ? m : m2;
                acc = (iy == 0 && ix == 0) || m > acc ? m : acc;
            }
        }
    }
    T count = (T)(gh * gw > 1 ? gh * gw : 1);
    vstore(y, a.dt, e, (double)(a.mode == 0 ? acc / count : acc));
}

__global__ void k_roi_align(const void *__restrict__ x, const void *__restrict__ rois,
                            const int64_t *__restrict__ batch, void *__restrict__ y, roi_args a)
{
    BD_CU_LOOP(e, a.total)
    {
        if (a.dt == BRAID_DTYPE_DOUBLE) roi_align_elem<double>(x, rois, batch, y, a, e);
        else roi_align_elem<float>(x, rois, batch, y, a, e);
    }
}

__global__ void k_roi_pool(const void *__restrict__ x, const void *__restrict__ rois, void *__restrict__ y,
                           roi_args a)
{
    BD_CU_LOOP(e, a.total)
    {
        const int64_t pw = e % a.ow, ph = (e / a.ow) % a.oh, c = (e / (a.ow * a.oh)) % a.C;
        const int64_t r = e / (a.ow * a.oh * a.C);
        double roi[5];
        for (int i = 0; i < 5; i++) roi[i] = vload(rois, a.dt, r * 5 + i);
        int64_t b = (int64_t)roi[0];
        if (b < 0 || b >= a.N) {
            vstore(y, a.dt, e, nan(""));
            continue;
        }
        double sc = a.dt == BRAID_DTYPE_DOUBLE ? (double)a.scale : 0.0;
        int64_t sx, sy, ex, ey;
        if (a.dt == BRAID_DTYPE_DOUBLE) {
            sx = (int64_t)round(roi[1] * sc), sy = (int64_t)round(roi[2] * sc);
            ex = (int64_t)round(roi[3] * sc), ey = (int64_t)round(roi[4] * sc);
        } else {
            sx = (int64_t)roundf((float)roi[1] * a.scale), sy = (int64_t)roundf((float)roi[2] * a.scale);
            ex = (int64_t)roundf((float)roi[3] * a.scale), ey = (int64_t)roundf((float)roi[4] * a.scale);
        }
        int64_t h0, h1, w0, w1;
        bd_roipool_bin(sx, sy, ex, ey, ph, pw, a.oh, a.ow, a.H, a.W, &h0, &h1, &w0, &w1);
        const int64_t base = (b * a.C + c) * a.H * a.W;
        double m = h1 <= h0 || w1 <= w0 ? 0.0 : -INFINITY;
        for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++) {
                double v = vload(x, a.dt, base + h * a.W + w);
                m = v > m ? v : m;
            }
        vstore(y, a.dt, e, m);
    }
}

static braid_status run_roi(const bd_cuda_kernel *k)
{
    const bd_vision_params *p = (const bd_vision_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    roi_args a = {};
    a.mode = p->mode, a.half_pixel = p->half_pixel, a.dt = x->dtype;
    a.N = x->dims[0], a.C = x->dims[1], a.H = x->dims[2], a.W = x->dims[3], a.oh = p->out_h, a.ow = p->out_w;
    a.ratio = p->sampling_ratio, a.scale = p->spatial_scale;
    a.total = bd_numel(&k->out[0]);
    if (a.total == 0) return BRAID_OK;
    if (a.H == 0 || a.W == 0)
        return BD_FAIL(k->err, BRAID_ERR_SHAPE, "cannot pool ROIs from an empty image (%lld x %lld)",
                       (long long)a.H, (long long)a.W);
    if (k->node->op == BD_OP_RoiAlign)
        k_roi_align<<<bd_cu_grid(a.total), BD_CU_BLOCK, 0, k->stream>>>(x->data, k->in[1].data,
                                                                        (const int64_t *)k->in[2].data,
                                                                        k->out[0].data, a);
    else
        k_roi_pool<<<bd_cu_grid(a.total), BD_CU_BLOCK, 0, k->stream>>>(x->data, k->in[1].data, k->out[0].data, a);
    BD_CU_CHECK_LAUNCH(k, "the ROI kernel");
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_vision(const bd_cuda_kernel *k)
{
    const bd_vision_params *p = (const bd_vision_params *)k->node->params;
    switch (k->node->op) {
    case BD_OP_GridSample: return run_gridsample(k);
    case BD_OP_AffineGrid: {
        const bd_tensor *o = &k->out[0];
        const int r = o->rank - 2;
        int64_t D = r == 3 ? o->dims[1] : 1, H = o->dims[r == 3 ? 2 : 1], W = o->dims[r == 3 ? 3 : 2];
        int64_t total = bd_numel(o);
        if (total == 0) return BRAID_OK;
        k_affine_grid<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(k->in[0].data, o->data, o->dtype, r, D, H,
                                                                        W, p->align_corners, total);
        BD_CU_CHECK_LAUNCH(k, "the AffineGrid kernel");
        return BRAID_OK;
    }
    case BD_OP_RoiAlign:
    case BD_OP_MaxRoiPool: return run_roi(k);
    case BD_OP_NonMaxSuppression: return bd_cuda_on_host(k, bd_cpu_vision);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the vision family", k->node->op_type);
    }
}

extern "C" void bd_cuda_vision_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
