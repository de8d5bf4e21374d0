/* norm.h: the norm family's parsed attributes (BatchNormalization,
 * InstanceNormalization, GroupNormalization, LRN, LpNormalization,
 * MeanVarianceNormalization) and the element formulas that shape inference
 * (src/ops/norm.c) and both backends' kernels share. */
#ifndef BD_OPS_NORM_H
#define BD_OPS_NORM_H

#include <math.h>

#include "ops.h"

typedef struct bd_norm_params {
    float epsilon;     /* first: src/passes/fuse_conv.c reads it to fold BatchNormalization */
    int training;      /* BatchNormalization: batch statistics (training_mode, is_test 0, or
                        * opsets 7-13 with optional outputs); fuse.c folds only inference */
    int spatial;       /* BatchNormalization before opset 9: 0 = one mean per activation */
    float momentum;    /* BatchNormalization: running = momentum * running + (1 - momentum) * batch */
    int64_t groups;    /* GroupNormalization: num_groups */
    int group_affine;  /* GroupNormalization-18: scale and bias per group (21: per channel) */
    int64_t size;      /* LRN */
    float alpha, beta, bias; /* LRN */
    int64_t axis;      /* LpNormalization */
    int p;             /* LpNormalization: 1 or 2 */
    int n_axes;        /* MeanVarianceNormalization (default 0, 2, 3) */
    int64_t axes[BD_MAX_RANK];
} bd_norm_params;

/* BatchNormalization's per-channel multiplier and offset (y = x * a + b), in
 * double as src/passes/fuse_conv.c's fold computes them. */
static inline BD_HOST_DEVICE void bd_bn_coef(double scale, double bias, double mean, double var, double eps,
                                             double *a, double *b)
{
    *a = scale / sqrt(var + eps);
    *b = bias - mean * *a;
}

/* A running statistic after a training step. */
static inline BD_HOST_DEVICE double bd_bn_running(double running, double batch, double momentum)
{
    return running * momentum + batch * (1.0 - momentum);
}

/* The channels [*lo, *hi] that LRN sums for channel c of C. */
static inline BD_HOST_DEVICE void bd_lrn_window(int64_t c, int64_t C, int64_t size, int64_t *lo, int64_t *hi)
{
    int64_t before = (size - 1) / 2, after = size - 1 - before; /* floor and ceil of (size - 1) / 2 */
    *lo = c - before < 0 ? 0 : c - before;
    *hi = c + after > C - 1 ? C - 1 : c + after;
}

/* LRN's output from x and the sum of squares over its window. */
static inline BD_HOST_DEVICE double bd_lrn(double x, double sumsq, const bd_norm_params *p)
{
    return x / pow((double)p->bias + (double)p->alpha / (double)p->size * sumsq, (double)p->beta);
}

/* LpNormalization: x over the norm, 0 where the norm is 0 (onnx's reference). */
static inline BD_HOST_DEVICE double bd_lp_norm(double x, double norm) { return norm == 0 ? 0.0 : x / norm; }

/* MeanVarianceNormalization's function body: (x - mean) / (sqrt(var) + 1e-9). */
static inline BD_HOST_DEVICE double bd_mvn(double x, double mean, double var)
{
    return (x - mean) / (sqrt(var) + 1e-9);
}

/* GroupNormalization: the scale/bias index of channel c (C channels, G groups). */
static inline BD_HOST_DEVICE int64_t bd_gn_affine_index(int64_t c, int64_t C, int64_t G, int per_group)
{
    return per_group ? c / (C / G) : c;
}

/* The dims of x that MeanVarianceNormalization reduces (bit d of the mask). */
braid_status bd_mvn_mask(const bd_norm_params *p, int rank, unsigned *mask, bd_err *e);

#endif /* BD_OPS_NORM_H */
