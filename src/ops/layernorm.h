/* layernorm.h: the layernorm family's parsed attributes (LayerNormalization,
 * RMSNormalization, com.microsoft SkipLayerNormalization and
 * SkipSimplifiedLayerNormalization) and what shape inference and both
 * backends' kernels share. X is read as rows of `cols` values (the dims from
 * axis on); each row is normalized by its mean and variance, or by its root
 * mean square (the simplified ops), then scaled and shifted. */
#ifndef BD_OPS_LAYERNORM_H
#define BD_OPS_LAYERNORM_H

#include <math.h>

#include "ops.h"

typedef struct bd_layernorm_params {
    float epsilon;   /* 1e-5; the com.microsoft ops 1e-12 */
    int64_t axis;    /* the first normalized axis as written (-1 for the Skip ops) */
    int stash;       /* stash_type: dtype of Mean/InvStdDev (the Skip ops: float) */
    int simplified;  /* RMSNormalization, SkipSimplifiedLayerNormalization: no mean */
    int skip;        /* the com.microsoft ops: input + skip (+ bias) is normalized */
} bd_layernorm_params;

/* 1 / sqrt(v + eps) of a row's variance (or mean square) v. */
static inline BD_HOST_DEVICE double bd_ln_inv(double v, double eps) { return 1.0 / sqrt(v + eps); }

/* The input indices of the Skip ops' optional beta and bias (-1: none). */
static inline int bd_skip_beta_index(int simplified) { return simplified ? -1 : 3; }
static inline int bd_skip_bias_index(int simplified) { return simplified ? 3 : 4; }

/* Rows and columns of node n's X (shapes inferred); fails on a bad axis. */
braid_status bd_layernorm_rows(const bd_node *n, const bd_tensor *x, int *axis, int64_t *rows, int64_t *cols,
                               bd_err *e);

#endif /* BD_OPS_LAYERNORM_H */
