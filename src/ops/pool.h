/* pool.h: the pool family's parsed attributes and the window geometry (output
 * size and explicit pads, auto_pad and ceil_mode resolved) that shape
 * inference and the kernels share. */
#ifndef BD_POOL_H
#define BD_POOL_H

#include <math.h>

#include "ops.h"

#define BD_POOL_MAX_SPATIAL 3

typedef enum bd_auto_pad {
    BD_AUTO_PAD_NOTSET = 0,
    BD_AUTO_PAD_SAME_UPPER = 1,
    BD_AUTO_PAD_SAME_LOWER = 2,
    BD_AUTO_PAD_VALID = 3
} bd_auto_pad;

typedef struct bd_pool_params {
    int nsp;                                 /* spatial dims of the window; 0 for the global pools */
    int64_t kernel[BD_POOL_MAX_SPATIAL];     /* (k0, k1, ...) */
    int64_t strides[BD_POOL_MAX_SPATIAL];
    int64_t dilations[BD_POOL_MAX_SPATIAL];
    int64_t pads[2 * BD_POOL_MAX_SPATIAL];   /* (begin0, begin1, ..., end0, end1, ...) */
    int auto_pad;                            /* bd_auto_pad */
    int ceil_mode, count_include_pad, storage_order;
    double p;                                /* LpPool, GlobalLpPool: the norm's exponent (default 2) */
    int layout; /* BD_LAYOUT_NHWC (src/passes/nhwc.c; 2-D MaxPool, AveragePool, the
                 * global pools): X and Y are (N, H, W, C) */
} bd_pool_params;

/* The resolved window geometry of one input shape. */
typedef struct bd_pool_geom {
    int nsp;
    int64_t in[BD_POOL_MAX_SPATIAL];         /* input spatial dims */
    int64_t out[BD_POOL_MAX_SPATIAL];        /* output spatial dims */
    int64_t pad_begin[BD_POOL_MAX_SPATIAL];
    int64_t pad_end[BD_POOL_MAX_SPATIAL];
} bd_pool_geom;

/* One window of an image plane (D x H x W, row-major) as both backends walk
 * it: the cd x ch x cw taps that lie inside the input, from (fd, fh, fw),
 * dilated by (dd, dh, dw). */
typedef struct bd_pool_win {
    int64_t D, H, W;
    int64_t fd, fh, fw, cd, ch, cw, dd, dh, dw;
} bd_pool_win;

#define BD_POOL_WIN_FOREACH(xp, w, v, ...)                                                         \
    for (int64_t a_ = 0; a_ < (w)->cd; a_++)                                                       \
        for (int64_t b_ = 0; b_ < (w)->ch; b_++) {                                                 \
            const float *row_ = (xp) + (((w)->fd + a_ * (w)->dd) * (w)->H + (w)->fh + b_ * (w)->dh) * (w)->W + (w)->fw; \
            for (int64_t c_ = 0; c_ < (w)->cw; c_++) {                                             \
                float v = row_[c_ * (w)->dw];                                                      \
                __VA_ARGS__                                                                        \
            }                                                                                      \
        }

/* The sum of the window's taps, in row order. */
static inline BD_HOST_DEVICE float bd_pool_sum(const float *xp, const bd_pool_win *w)
{
    float sum = 0;
    BD_POOL_WIN_FOREACH(xp, w, v, sum += v;)
    return sum;
}

/* The max of the window's taps, from -FLT_MAX, skipping NaN. */
static inline BD_HOST_DEVICE float bd_pool_max(const float *xp, const bd_pool_win *w)
{
    float m = -3.402823466e+38f;
    BD_POOL_WIN_FOREACH(xp, w, v, m = v > m ? v : m;)
    return m;
}

/* The max with the spatial index of its first tap (MaxPool's Indices,
 * row-major or with col column-major): the window's first tap is taken
 * whatever it is (a NaN there stays), later ones only when greater. *at is
 * -1 for a window with no tap. */
static inline BD_HOST_DEVICE float bd_pool_argmax(const float *xp, const bd_pool_win *w, int col, int64_t *at)
{
    float m = -3.402823466e+38f;
    int64_t bd = -1, bh = 0, bw = 0;
    BD_POOL_WIN_FOREACH(xp, w, v, if (v > m || bd < 0) {
        m = v;
        bd = w->fd + a_ * w->dd, bh = w->fh + b_ * w->dh, bw = w->fw + c_ * w->dw;
    })
    *at = bd < 0 ? -1 : col ? bd + bh * w->D + bw * w->D * w->H : (bd * w->H + bh) * w->W + bw;
    return m;
}

/* LpPool's value of a window: (sum of |x|^p) ^ (1 / p). */
static inline BD_HOST_DEVICE double bd_pool_lp_term(double v, double p)
{
    v = fabs(v);
    return p == 1.0 ? v : p == 2.0 ? v * v : pow(v, p);
}
static inline BD_HOST_DEVICE double bd_pool_lp_root(double s, double p)
{
    return p == 1.0 ? s : p == 2.0 ? sqrt(s) : pow(s, 1.0 / p);
}

/* The lowest value of a pooled dtype: where a max over no taps starts. */
static inline BD_HOST_DEVICE double bd_pool_lowest(int dtype)
{
    switch (dtype) {
    case BRAID_DTYPE_DOUBLE: return -1.7976931348623157e308;
    case BRAID_DTYPE_FLOAT16: return -65504.0;
    case BRAID_DTYPE_BFLOAT16: return -3.3895313892515355e38;
    case BRAID_DTYPE_INT8: return -128.0;
    case BRAID_DTYPE_UINT8: return 0.0;
    default: return -3.402823466e+38;
    }
}

/* MaxUnpool: the output dims (from output_shape when given, its values
 * needed) and the unpooled dims (N, C, (in - 1) stride - pads + kernel)
 * that the indices address; the values land in the output's leading corner,
 * as onnx's reference places them. Fails with SHAPE. */
braid_status bd_unpool_dims(const bd_node *n, const bd_tensor *in, int n_in, int64_t *out_dims,
                            int64_t *unpooled, bd_err *e);

/* Resolves the geometry of MaxPool / AveragePool for input x (rank nsp + 2):
 * explicit pads from auto_pad, output dims with ceil_mode (the last window
 * must start inside the input or the left padding). Fails with SHAPE. */
braid_status bd_pool_geometry(const bd_node *n, const bd_tensor *x, bd_pool_geom *g, bd_err *e);

#endif /* BD_POOL_H */
