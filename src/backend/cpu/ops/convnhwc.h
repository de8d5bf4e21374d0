/* convnhwc.h: the conv and pool kernels on NHWC data (convnhwc.c,
 * poolnhwc.c), for the nodes the NHWC pass (src/passes/nhwc.c) set to
 * BD_LAYOUT_NHWC, and the pool window tables poolnhwc.c shares with pool.c.
 * conv.c and pool.c dispatch to them. */
#ifndef BD_CPU_CONVNHWC_H
#define BD_CPU_CONVNHWC_H

#include "backend/cpu/cpu_ops.h"

struct bd_conv_geom; /* ops/conv.h */

/* A 2-D float Conv (geometry g): X (N, H, W, C), or (N, C, H, W) when the
 * node's x_nchw is set; W (KH, KW, C/group, M); B (M) optional; the
 * residual (input 3, when res is set) and Y (N, OH, OW, M); bias, residual
 * and activation applied as bd_conv_epilogue orders them. */
braid_status bd_conv_nhwc(const bd_kernel *k, const struct bd_conv_geom *g);

/* Winograd F(2x2, 3x3) of convwino.c for the one-group 3x3 stride-1 NHWC
 * Convs (X NHWC) with at least 8 input and 16 output channels, on AVX-512:
 * 1 when done, 0 when the caller must run it, -1 out of memory. */
int bd_conv_wino_nhwc(const bd_kernel *k, const struct bd_conv_geom *g);

/* A 2-D float MaxPool or AveragePool (one output), GlobalAveragePool or
 * GlobalMaxPool: X and Y (N, H, W, C). */
braid_status bd_pool_nhwc(const bd_kernel *k);

/* Per spatial axis and output position of a pool window (pool.c, shared
 * with poolnhwc.c): the first valid input index, how many taps fall inside
 * the input, and how many inside the input plus its explicit pads
 * (count_include_pad's divisor). */
typedef struct bd_pool_axis {
    int64_t *first, *count, *npad;
} bd_pool_axis;
/* Fills t for `out` outputs over an axis of length L: k taps, stride s,
 * dilation dl, pads pb and pe. */
void bd_pool_fill_axis(bd_pool_axis *t, int64_t out, int64_t L, int64_t k, int64_t s, int64_t dl, int64_t pb,
                       int64_t pe);

#endif /* BD_CPU_CONVNHWC_H */
