/* training.h: the parsed attributes of the training op family
 * (ai.onnx.preview.training: Adagrad, Adam, Momentum) and the per-element
 * update rules both backends' kernels share, computed in double. */
#ifndef BD_TRAINING_H
#define BD_TRAINING_H

#include <math.h>

#include "ops.h"

typedef struct bd_train_params {
    double alpha, beta, epsilon, decay_factor;
    double norm_coefficient, norm_coefficient_post;
    int nesterov; /* Momentum mode "nesterov" (else "standard") */
    int groups;   /* the number of tensors the node updates */
    int per;      /* inputs per tensor after R and T: Adagrad 3 (X G H),
                   * Adam 4 (X G V H), Momentum 3 (X G V) */
} bd_train_params;

/* The scalars every element of a node shares, derived from R and T. */
typedef struct bd_train_scalars {
    double r;    /* Adagrad: R / (1 + T decay); Adam: R with bias correction; Momentum: R */
    double beta; /* Momentum: beta, or 1 on the first step (T == 0) */
} bd_train_scalars;

static inline BD_HOST_DEVICE bd_train_scalars bd_train_scalars_of(int op, const bd_train_params *p, double r,
                                                                   int64_t t)
{
    bd_train_scalars s = {r, p->beta};
    if (op == BD_OP_TR_Adagrad) {
        s.r = r / (1.0 + (double)t * p->decay_factor);
    } else if (op == BD_OP_TR_Adam) {
        if (t > 0) s.r = r * sqrt(1.0 - pow(p->beta, (double)t)) / (1.0 - pow(p->alpha, (double)t));
    } else if (t <= 0) {
        s.beta = 1.0;
    }
    return s;
}

/* Adagrad: x, g, h in; *x_new, *h_new out. */
static inline BD_HOST_DEVICE void bd_train_adagrad(const bd_train_params *p, bd_train_scalars s, double x, double g,
                                                   double h, double *x_new, double *h_new)
{
    double gr = p->norm_coefficient * x + g;
    *h_new = h + gr * gr;
    *x_new = x - s.r * gr / (sqrt(*h_new) + p->epsilon);
}

/* Adam: x, g, v, h in; *x_new, *v_new, *h_new out. */
static inline BD_HOST_DEVICE void bd_train_adam(const bd_train_params *p, bd_train_scalars s, double x, double g,
                                                double v, double h, double *x_new, double *v_new, double *h_new)
{
    double gr = p->norm_coefficient * x + g;
    *v_new = p->alpha * v + (1.0 - p->alpha) * gr;
    *h_new = p->beta * h + (1.0 - p->beta) * gr * gr;
    double xn = x - s.r * (*v_new / (sqrt(*h_new) + p->epsilon));
    *x_new = (1.0 - p->norm_coefficient_post) * xn;
}

/* Momentum (standard or Nesterov): x, g, v in; *x_new, *v_new out. */
static inline BD_HOST_DEVICE void bd_train_momentum(const bd_train_params *p, bd_train_scalars s, double x,
                                                    double g, double v, double *x_new, double *v_new)
{
    double gr = p->norm_coefficient * x + g;
    *v_new = p->alpha * v + s.beta * gr;
    *x_new = p->nesterov ? x - s.r * (gr + p->alpha * *v_new) : x - s.r * *v_new;
}

#endif /* BD_TRAINING_H */
