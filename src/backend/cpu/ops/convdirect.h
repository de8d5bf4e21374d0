/* convdirect.h: the direct NCHW convolution kernels of convdirect.c,
 * convwino.c and convdw.c (AVX-512), called by conv.c for the 1-D and 2-D convolutions
 * they take. */
#ifndef BD_CPU_CONVDIRECT_H
#define BD_CPU_CONVDIRECT_H

#include "backend/cpu/cpu_ops.h"
#include "convwin.h"

/* Both are called only where conv.c's vector level (pg_level, which tests
 * may cap) is AVX-512. Runs convolution k (geometry g, window w) when this
 * kernel takes it; returns 1 when done, 0 when the caller must run it, -1
 * when a buffer could not be allocated (the caller fails with
 * OUT_OF_MEMORY). */
int bd_conv_direct(const bd_kernel *k, const bd_conv_geom *g, const win3 *w);

/* Winograd F(2x2, 3x3) of convwino.c for 3x3 stride-1 convolutions with at
 * least 8 input and output channels per group, the same way. */
int bd_conv_wino(const bd_kernel *k, const bd_conv_geom *g, const win3 *w);
/* Tests: 0 turns the Winograd kernel off (those convolutions then run on
 * convdirect.c), 1 (the default) back on. Set it while no kernel runs. */
void bd_conv_wino_enable(int on);

/* The depthwise 3x3 and 5x5 kernel of convdw.c, the same way. */
int bd_conv_dw(const bd_kernel *k, const bd_conv_geom *g, const win3 *w);

#endif /* BD_CPU_CONVDIRECT_H */
