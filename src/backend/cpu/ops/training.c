/* training.c: CPU kernels of the training op family (Adagrad, Adam,
 * Momentum): each element of each updated tensor goes through the update
 * rule of src/ops/training.h in double and is rounded once to its dtype.
 * Elements are split over threads; each is computed alone, so the bits do
 * not depend on the thread count. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/training.h"

typedef struct train_job {
    const bd_kernel *k;
    const bd_train_params *p;
    bd_train_scalars s;
    int g; /* the group being updated */
} train_job;

static void train_range(void *vj, int64_t b, int64_t end)
{
    const train_job *j = vj;
    const bd_kernel *k = j->k;
    const bd_train_params *p = j->p;
    int G = p->groups, g = j->g;
    const bd_tensor *x = &k->in[2 + g], *gr = &k->in[2 + G + g], *s1 = &k->in[2 + 2 * G + g];
    const bd_tensor *s2 = p->per == 4 ? &k->in[2 + 3 * G + g] : NULL;
    bd_tensor *ox = &k->out[g], *o1 = &k->out[G + g], *o2 = p->per == 4 ? &k->out[2 * G + g] : NULL;
    for (int64_t i = b; i < end; i++) {
        double xn, a, c;
        if (k->node->op == BD_OP_TR_Adagrad) {
            bd_train_adagrad(p, j->s, bd_get_f64(x, i), bd_get_f64(gr, i), bd_get_f64(s1, i), &xn, &a);
        } else if (k->node->op == BD_OP_TR_Adam) {
            bd_train_adam(p, j->s, bd_get_f64(x, i), bd_get_f64(gr, i), bd_get_f64(s1, i), bd_get_f64(s2, i), &xn, &a,
                          &c);
            bd_set_f64(o2, i, c);
        } else {
            bd_train_momentum(p, j->s, bd_get_f64(x, i), bd_get_f64(gr, i), bd_get_f64(s1, i), &xn, &a);
        }
        bd_set_f64(ox, i, xn);
        bd_set_f64(o1, i, a);
    }
}

braid_status bd_cpu_training(const bd_kernel *k)
{
    const bd_train_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "training parameters were not parsed");
    if (k->node->op != BD_OP_TR_Adagrad && k->node->op != BD_OP_TR_Adam && k->node->op != BD_OP_TR_Momentum)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the training family", k->node->op_type);
    double r = bd_get_f64(&k->in[0], 0);
    int64_t t = ((const int64_t *)k->in[1].data)[0];
    train_job j = {k, p, bd_train_scalars_of(k->node->op, p, r, t), 0};
    for (j.g = 0; j.g < p->groups; j.g++) {
        int64_t n = bd_numel(&k->in[2 + j.g]);
        if (n > 0) bd_parallel_for(k->threads, n, 1 << 14, train_range, &j);
    }
    return BRAID_OK;
}
