/* im2col.h: the im2col family's parsed attributes (Col2Im, DeformConv) and
 * the geometry and formulas both backends share: which column feeds an
 * output pixel of Col2Im, and DeformConv's sampling positions and their
 * multilinear interpolation with zeros outside the image. */
#ifndef BD_IM2COL_H
#define BD_IM2COL_H

#include <math.h>

#include "ops.h"

#define BD_IM2COL_MAX_SPATIAL 6  /* Col2Im; DeformConv runs 1 to 3 */

typedef struct bd_im2col_params {
    int n_kernel;                               /* DeformConv: kernel_shape entries (0: from W) */
    int64_t kernel[BD_IM2COL_MAX_SPATIAL];
    int n_strides, n_dilations, n_pads;         /* 0: the defaults */
    int64_t strides[BD_IM2COL_MAX_SPATIAL], dilations[BD_IM2COL_MAX_SPATIAL];
    int64_t pads[2 * BD_IM2COL_MAX_SPATIAL];    /* begins, then ends */
    int64_t group, offset_group;                /* DeformConv */
} bd_im2col_params;

/* The resolved geometry: image dims, kernel (block) dims, blocks (output
 * positions of the convolution) per dim, strides, dilations, begin pads. */
typedef struct bd_im2col_geom {
    int nsp;
    int64_t img[BD_IM2COL_MAX_SPATIAL], blk[BD_IM2COL_MAX_SPATIAL], nb[BD_IM2COL_MAX_SPATIAL];
    int64_t str[BD_IM2COL_MAX_SPATIAL], dil[BD_IM2COL_MAX_SPATIAL], pb[BD_IM2COL_MAX_SPATIAL];
    int64_t K, L, P; /* kernel points, blocks (columns), image points */
} bd_im2col_geom;

/* Col2Im: the column (block) whose kernel point kk lands on image point p,
 * or -1 when none does (a stride it misses, or a block outside). */
static inline BD_HOST_DEVICE int64_t bd_col2im_col(const bd_im2col_geom *g, int64_t p, int64_t kk)
{
    int64_t col = 0, stride_p = 1, stride_k = 1, stride_c = 1;
    for (int i = g->nsp - 1; i >= 0; i--) {
        int64_t s = (p / stride_p) % g->img[i], k = (kk / stride_k) % g->blk[i];
        int64_t t = s + g->pb[i] - k * g->dil[i];
        if (t < 0 || t % g->str[i] != 0 || t / g->str[i] >= g->nb[i]) return -1;
        col += (t / g->str[i]) * stride_c;
        stride_p *= g->img[i], stride_k *= g->blk[i], stride_c *= g->nb[i];
    }
    return col;
}

/* DeformConv: the sampling position along dim d of kernel point kk (its
 * coordinate k_d) at output position o_d, moved by the offset. */
static inline BD_HOST_DEVICE double bd_deform_pos(const bd_im2col_geom *g, int d, int64_t o_d, int64_t k_d,
                                                  double offset)
{
    return (double)(o_d * g->str[d] - g->pb[d] + k_d * g->dil[d]) + offset;
}

/* The corners of the multilinear sample at pos in an image of dims
 * img[0..nsp): 2^nsp plane offsets (row-major; -1 for a corner outside the
 * image, which reads as zero: GridSample's zeros padding, as onnx's
 * reference) and weights. A position no corner of which lies inside (or NaN)
 * gives only -1s. Returns the corner count. */
static inline BD_HOST_DEVICE int bd_deform_corners(const bd_im2col_geom *g, const double *pos, int64_t *idx, double *w)
{
    const int nc = 1 << g->nsp;
    int64_t base[3];
    double frac[3];
    for (int d = 0; d < g->nsp; d++) {
        if (!(pos[d] > -1.0 && pos[d] < (double)g->img[d])) {
            for (int c = 0; c < nc; c++) idx[c] = -1, w[c] = 0.0;
            return nc;
        }
        double f = floor(pos[d]);
        base[d] = (int64_t)f, frac[d] = pos[d] - f;
    }
    for (int c = 0; c < nc; c++) {
        int64_t off = 0;
        double wt = 1.0;
        int in = 1;
        for (int d = 0; d < g->nsp; d++) {
            int up = (c >> (g->nsp - 1 - d)) & 1;
            int64_t i = base[d] + up;
            in &= i >= 0 && i < g->img[d];
            off = off * g->img[d] + i;
            wt *= up ? frac[d] : 1.0 - frac[d];
        }
        idx[c] = in ? off : -1;
        w[c] = wt;
    }
    return nc;
}

/* Resolves Col2Im's geometry from image_shape and block_shape (data needed)
 * and the input's shape; DeformConv's from X, W and offset. SHAPE on mismatch. */
braid_status bd_col2im_geometry(const bd_node *n, const bd_tensor *in, bd_im2col_geom *g, bd_err *e);
braid_status bd_deform_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_im2col_geom *g, bd_err *e);

#endif /* BD_IM2COL_H */
