/* loss.h: the parsed attributes of the loss op family (n->params) and the
 * formulas both backends' kernels share. The input is read as (N, C, D) with
 * D the product of the dims after C, the target as (N, D); each (n, d) picks
 * class t = target[n, d] and contributes -x[n, t, d] * w with w = weight[t]
 * (1 without weights), or nothing when t is the ignore_index. */
#ifndef BD_LOSS_H
#define BD_LOSS_H

#include "ops.h"

enum { BD_LOSS_NONE = 0, BD_LOSS_SUM = 1, BD_LOSS_MEAN = 2 };

typedef struct bd_loss_params {
    int reduction;        /* BD_LOSS_*: "none", "sum", "mean" (the default) */
    int has_ignore;       /* ignore_index given */
    int64_t ignore_index;
} bd_loss_params;

/* The class that (n, d) with target t picks: t itself, -1 when it is
 * ignored, -2 when it is out of [0, C) (an error on the CPU, NaN on CUDA). */
static inline BD_HOST_DEVICE int64_t bd_loss_class(int64_t t, int64_t C, const bd_loss_params *p)
{
    if (p->has_ignore && t == p->ignore_index) return -1;
    return t >= 0 && t < C ? t : -2;
}

/* The reduced loss from the sum of the terms and the sum of their weights:
 * "mean" divides by the weights (the count of terms not ignored without
 * weights; 0 / 0 = NaN when all are ignored), as the spec's function does. */
static inline BD_HOST_DEVICE double bd_loss_reduce(int reduction, double sum, double wsum)
{
    return reduction == BD_LOSS_MEAN ? sum / wsum : sum;
}

/* N, C and D of input x (rank >= 2). */
static inline BD_HOST_DEVICE void bd_loss_dims(const bd_tensor *x, int64_t *n, int64_t *c, int64_t *d)
{
    *n = x->dims[0];
    *c = x->dims[1];
    *d = 1;
    for (int i = 2; i < x->rank; i++) *d *= x->dims[i];
}

#endif /* BD_LOSS_H */
