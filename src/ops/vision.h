/* vision.h: the vision family's parsed attributes (GridSample, AffineGrid,
 * RoiAlign, MaxRoiPool, NonMaxSuppression) and the formulas both backends
 * share: GridSample's coordinate mapping, padding and taps, RoiAlign's
 * sampling points, RoiPool's bins and NonMaxSuppression's overlap test.
 * Coordinates follow onnx's reference (and PyTorch): float32 arithmetic for
 * float grids and boxes, double for double ones, so each formula exists as a
 * _f and a _d function. */
#ifndef BD_VISION_H
#define BD_VISION_H

#include <math.h>

#include "ops.h"

#define BD_GS_MAX_SPATIAL 3 /* GridSample's spatial dims: 2 (opset 16), 1-3 (opset 20) */

typedef enum bd_gs_mode { BD_GS_NEAREST = 0, BD_GS_LINEAR = 1, BD_GS_CUBIC = 2 } bd_gs_mode;
typedef enum bd_gs_pad { BD_GS_ZEROS = 0, BD_GS_BORDER = 1, BD_GS_REFLECTION = 2 } bd_gs_pad;

typedef struct bd_vision_params {
    int mode;            /* GridSample: bd_gs_mode; RoiAlign: 0 avg, 1 max */
    int padding;         /* GridSample: bd_gs_pad */
    int align_corners;   /* GridSample, AffineGrid */
    int half_pixel;      /* RoiAlign: coordinate_transformation_mode half_pixel (opset 16 default) */
    int64_t out_h, out_w; /* RoiAlign output_height/width; MaxRoiPool pooled_shape */
    int64_t sampling_ratio;
    float spatial_scale;
    int center_point_box; /* NonMaxSuppression */
} bd_vision_params;

/* GridSample's taps along one axis at one output position: up to 4 input
 * indices (-1: a zero from padding) and their weights. */
typedef struct bd_gs_taps {
    int n;
    int64_t idx[4];
    double w[4];
} bd_gs_taps;

#define BD_VISION_FORMULAS(T, S, FLOOR, RINT, FABS)                                                  \
    /* Normalized grid value v in [-1, 1] to a pixel coordinate on an axis of L. */                 \
    static inline BD_HOST_DEVICE T bd_gs_denorm_##S(T v, int64_t L, int align)                      \
    {                                                                                               \
        return align ? (v + (T)1) / (T)2 * (T)(L - 1) : ((v + (T)1) * (T)L - (T)1) / (T)2;            \
    }                                                                                               \
    /* Reflects x into [lo, hi] by the nearer border, repeatedly. */                                \
    static inline BD_HOST_DEVICE T bd_gs_reflect_##S(T x, T lo, T hi)                               \
    {                                                                                               \
        T rng = hi - lo;                                                                            \
        if (!(rng > (T)0)) return lo;                                                               \
        if (x < lo) {                                                                               \
            T dx = lo - x;                                                                          \
            if (!(dx / rng < (T)1e15)) return lo; /* beyond any meaningful reflection */            \
            int64_t k = (int64_t)(dx / rng);                                                        \
            T r = dx - (T)k * rng;                                                                  \
            return k % 2 == 0 ? lo + r : hi - r;                                                    \
        }                                                                                           \
        if (x > hi) {                                                                               \
            T dx = x - hi;                                                                          \
            if (!(dx / rng < (T)1e15)) return hi;                                                   \
            int64_t k = (int64_t)(dx / rng);                                                        \
            T r = dx - (T)k * rng;                                                                  \
            return k % 2 == 0 ? hi - r : lo + r;                                                    \
        }                                                                                           \
        return x;                                                                                   \
    }                                                                                               \
    /* The pixel coordinate that GridSample samples for grid value v: rounded     \
     * half to even for nearest, then moved inside by border or reflection padding     \
     * when it lies beyond the borders (the pixel centres with align_corners, else     \
     * the image's edges). NaN stays NaN. */                                                         \
    static inline BD_HOST_DEVICE T bd_gs_coord_##S(T v, int64_t L, int align, int padding, int mode) \
    {                                                                                               \
        T x = bd_gs_denorm_##S(v, L, align);                                                        \
        if (mode == BD_GS_NEAREST) x = RINT(x);                                                     \
        T lo = align ? (T)0 : (T)-0.5, hi = align ? (T)(L - 1) : (T)L - (T)0.5;                     \
        if (x < lo || x > hi) {                                                                     \
            if (padding == BD_GS_BORDER) x = x < (T)0 ? (T)0 : x > (T)(L - 1) ? (T)(L - 1) : x;      \
            else if (padding == BD_GS_REFLECTION) x = bd_gs_reflect_##S(x, lo, hi);                 \
        }                                                                                           \
        return x;                                                                                   \
    }                                                                                               \
    /* The input index of integer position i under the padding mode; -1 for a    \
     * zero (zeros padding, or a coordinate that is not a number). */                              \
    static inline BD_HOST_DEVICE int64_t bd_gs_index_##S(T i, int64_t L, int align, int padding)   \
    {                                                                                               \
        if (!(i == i) || FABS(i) > (T)4e18) return padding == BD_GS_ZEROS ? -1 : 0;                 \
        int64_t k = (int64_t)i;                                                                     \
        if (padding == BD_GS_ZEROS) return k >= 0 && k < L ? k : -1;                                \
        if (padding == BD_GS_BORDER) return k < 0 ? 0 : k > L - 1 ? L - 1 : k;                      \
        T lo = align ? (T)0 : (T)-0.5, hi = align ? (T)(L - 1) : (T)L - (T)0.5;                     \
        k = (int64_t)bd_gs_reflect_##S((T)k, lo, hi);                                               \
        return k < 0 ? 0 : k > L - 1 ? L - 1 : k;                                                   \
    }                                                                                               \
    /* The taps of one axis for grid value v. */                                                    \
    static inline BD_HOST_DEVICE void bd_gs_taps_##S(T v, int64_t L, int align, int padding, int mode, \
                                                     bd_gs_taps *t)                                 \
    {                                                                                               \
        T x = bd_gs_coord_##S(v, L, align, padding, mode);                                          \
        if (mode == BD_GS_NEAREST) {                                                                \
            t->n = 1;                                                                               \
            t->idx[0] = bd_gs_index_##S(x, L, align, padding);                                      \
            t->w[0] = 1.0;                                                                          \
            return;                                                                                 \
        }                                                                                           \
        T x0 = FLOOR(x), d = x - x0;                                                                \
        if (mode == BD_GS_LINEAR) {                                                                 \
            t->n = 2;                                                                               \
            t->w[0] = (double)((T)1 - d), t->w[1] = (double)d;                                      \
        } else { /* Keys' cubic convolution, A = -0.75 */                                           \
            const T A = (T)-0.75;                                                                   \
            T a = d + (T)1, b = d, c = (T)1 - d, e = (T)2 - d;                                      \
            t->n = 4;                                                                               \
            t->w[0] = (double)(((A * a - (T)5 * A) * a + (T)8 * A) * a - (T)4 * A);                 \
            t->w[1] = (double)(((A + (T)2) * b - (A + (T)3)) * b * b + (T)1);                       \
            t->w[2] = (double)(((A + (T)2) * c - (A + (T)3)) * c * c + (T)1);                       \
            t->w[3] = (double)(((A * e - (T)5 * A) * e + (T)8 * A) * e - (T)4 * A);                 \
            x0 -= (T)1;                                                                             \
        }                                                                                           \
        for (int j = 0; j < t->n; j++) t->idx[j] = bd_gs_index_##S(x0 + (T)j, L, align, padding);   \
    }                                                                                               \
    /* NonMaxSuppression: does box b (4 values) overlap box a by more than thr?   \
     * Corners (y1, x1, y2, x2) in any order, or (xc, yc, w, h) with center. */                     \
    static inline BD_HOST_DEVICE int bd_nms_suppress_##S(const T *a, const T *b, int center, T thr) \
    {                                                                                               \
        T ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;                                                   \
        if (center) {                                                                               \
            ax0 = a[0] - a[2] / (T)2, ax1 = a[0] + a[2] / (T)2;                                     \
            ay0 = a[1] - a[3] / (T)2, ay1 = a[1] + a[3] / (T)2;                                     \
            bx0 = b[0] - b[2] / (T)2, bx1 = b[0] + b[2] / (T)2;                                     \
            by0 = b[1] - b[3] / (T)2, by1 = b[1] + b[3] / (T)2;                                     \
        } else {                                                                                    \
            ax0 = a[1] < a[3] ? a[1] : a[3], ax1 = a[1] < a[3] ? a[3] : a[1];                       \
            ay0 = a[0] < a[2] ? a[0] : a[2], ay1 = a[0] < a[2] ? a[2] : a[0];                       \
            bx0 = b[1] < b[3] ? b[1] : b[3], bx1 = b[1] < b[3] ? b[3] : b[1];                       \
            by0 = b[0] < b[2] ? b[0] : b[2], by1 = b[0] < b[2] ? b[2] : b[0];                       \
        }                                                                                           \
        T ix0 = ax0 > bx0 ? ax0 : bx0, ix1 = ax1 < bx1 ? ax1 : bx1;                                 \
        if (!(ix1 > ix0)) return 0;                                                                 \
        T iy0 = ay0 > by0 ? ay0 : by0, iy1 = ay1 < by1 ? ay1 : by1;                                 \
        if (!(iy1 > iy0)) return 0;                                                                 \
        T inter = (ix1 - ix0) * (iy1 - iy0);                                                        \
        if (!(inter > (T)0)) return 0;                                                              \
        T area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);                   \
        T uni = area_a + area_b - inter;                                                            \
        if (!(area_a > (T)0) || !(area_b > (T)0) || !(uni > (T)0)) return 0;                        \
        return inter / uni > thr;                                                                   \
    }

BD_VISION_FORMULAS(float, f, floorf, rintf, fabsf)
BD_VISION_FORMULAS(double, d, floor, rint, fabs)

/* RoiAlign: one sample point (y, x) of the bilinear grid: 4 input offsets
 * (within a plane of W columns) and weights; all zero when the point lies
 * more than one pixel outside the map (as onnxruntime and the reference). */
#define BD_ROI_MAX_GRID 4096

typedef struct bd_roi_sample {
    int64_t o[4];
    double w[4];
} bd_roi_sample;

#define BD_ROI_FORMULAS(T, S, FLOOR)                                                                 \
    static inline BD_HOST_DEVICE void bd_roi_sample_##S(T y, T x, int64_t H, int64_t W, bd_roi_sample *s) \
    {                                                                                               \
        if (y < (T)-1 || y > (T)H || x < (T)-1 || x > (T)W) {                                       \
            for (int j = 0; j < 4; j++) s->o[j] = 0, s->w[j] = 0;                                   \
            return;                                                                                 \
        }                                                                                           \
        if (y < (T)0) y = (T)0;                                                                     \
        if (x < (T)0) x = (T)0;                                                                     \
        int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1, x1;                                           \
        if (y0 >= H - 1) y1 = y0 = H - 1, y = (T)y0;                                                \
        else y1 = y0 + 1;                                                                           \
        if (x0 >= W - 1) x1 = x0 = W - 1, x = (T)x0;                                                \
        else x1 = x0 + 1;                                                                           \
        T ly = y - (T)y0, lx = x - (T)x0, hy = (T)1 - ly, hx = (T)1 - lx;                           \
        s->o[0] = y0 * W + x0, s->o[1] = y0 * W + x1, s->o[2] = y1 * W + x0, s->o[3] = y1 * W + x1; \
        s->w[0] = (double)(hy * hx), s->w[1] = (double)(hy * lx);                                   \
        s->w[2] = (double)(ly * hx), s->w[3] = (double)(ly * lx);                                   \
    }                                                                                               \
    /* The ROI r (x1, y1, x2, y2) in map coordinates: start (y, x), bin sizes    \
     * and the sampling grid (gh x gw points per bin). */                                            \
    static inline BD_HOST_DEVICE void bd_roi_geom_##S(const T *r, T scale, int half_pixel, int64_t oh, int64_t ow, \
                                                      int64_t ratio, T *y0, T *x0, T *bh, T *bw, int64_t *gh, \
                                                      int64_t *gw)                                  \
    {                                                                                               \
        T off = half_pixel ? (T)0.5 : (T)0;                                                         \
        T sx = r[0] * scale - off, sy = r[1] * scale - off;                                         \
        T ex = r[2] * scale - off, ey = r[3] * scale - off;                                         \
        T rw = ex - sx, rh = ey - sy;                                                               \
        if (!half_pixel) { /* malformed ROIs become 1 x 1 */                                        \
            rw = rw > (T)1 ? rw : (T)1;                                                             \
            rh = rh > (T)1 ? rh : (T)1;                                                             \
        }                                                                                           \
        *y0 = sy, *x0 = sx;                                                                         \
        *bh = rh / (T)oh, *bw = rw / (T)ow;                                                         \
        double ah = ceil((double)(rh / (T)oh)), aw = ceil((double)(rw / (T)ow));                   \
        /* an adaptive grid is capped at BD_ROI_MAX_GRID points a side (NaN gives 0) */             \
        *gh = ratio > 0 ? ratio : ah > 0 ? (int64_t)(ah < BD_ROI_MAX_GRID ? ah : BD_ROI_MAX_GRID) : 0; \
        *gw = ratio > 0 ? ratio : aw > 0 ? (int64_t)(aw < BD_ROI_MAX_GRID ? aw : BD_ROI_MAX_GRID) : 0; \
    }

BD_ROI_FORMULAS(float, f, floorf)
BD_ROI_FORMULAS(double, d, floor)

/* MaxRoiPool: the input window [*h0, *h1) x [*w0, *w1) of output bin (ph, pw)
 * for the ROI (x1, y1, x2, y2) (already scaled and rounded), as Caffe's and
 * onnxruntime's RoIPool: bins of roi_size / pooled in float, floor/ceil, clipped. */
static inline BD_HOST_DEVICE void bd_roipool_bin(int64_t sx, int64_t sy, int64_t ex, int64_t ey, int64_t ph,
                                                 int64_t pw, int64_t PH, int64_t PW, int64_t H, int64_t W,
                                                 int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1)
{
    int64_t rh = ey - sy + 1 > 1 ? ey - sy + 1 : 1, rw = ex - sx + 1 > 1 ? ex - sx + 1 : 1;
    float bh = (float)rh / (float)PH, bw = (float)rw / (float)PW;
    int64_t a = (int64_t)floorf((float)ph * bh) + sy, b = (int64_t)ceilf((float)(ph + 1) * bh) + sy;
    int64_t c = (int64_t)floorf((float)pw * bw) + sx, d = (int64_t)ceilf((float)(pw + 1) * bw) + sx;
    *h0 = a < 0 ? 0 : a > H ? H : a;
    *h1 = b < 0 ? 0 : b > H ? H : b;
    *w0 = c < 0 ? 0 : c > W ? W : c;
    *w1 = d < 0 ? 0 : d > W ? W : d;
}

/* The spatial dims GridSample resolves for X (N, C, spatial...) and grid
 * (N, out spatial..., r); fails with SHAPE. */
braid_status bd_gridsample_check(const bd_node *n, const bd_tensor *x, const bd_tensor *grid, bd_err *e);

#endif /* BD_VISION_H */
