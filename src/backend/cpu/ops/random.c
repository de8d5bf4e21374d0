/* random.c: CPU kernels of the random op family. Each output element is a
 * pure function of the run's seed and its index (src/ops/random.h), so the
 * elements split over the threads freely and the CUDA kernels draw the same. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/random.h"

#define MIN_CHUNK (1 << 12)

typedef struct rnd_job {
    const bd_node *node;
    const bd_random_params *p;
    uint64_t seed;
    const bd_tensor *x;
    bd_tensor *y;
} rnd_job;

static void rnd_range(void *vj, int64_t begin, int64_t end)
{
    const rnd_job *j = vj;
    int op = j->node->op, dt = j->y->dtype;
    for (int64_t i = begin; i < end; i++) {
        double v;
        if (op == BD_OP_Bernoulli) {
            double u0, u1;
            bd_random_u01x2(j->seed, (uint64_t)i, &u0, &u1);
            v = u0 < bd_random_load(j->x->dtype, j->x->data, i); /* P(1) = p */
        } else if (op == BD_OP_Multinomial) {
            double u0, u1;
            int64_t s = j->p->sample_size;
            bd_random_u01x2(j->seed, (uint64_t)i, &u0, &u1);
            v = (double)bd_multinomial_pick(j->x->dtype, j->x->data, i / s, j->x->dims[1], u0);
        } else {
            v = bd_random_value(op, j->p, j->seed, i);
        }
        bd_random_store(dt, j->y->data, i, v);
    }
}

braid_status bd_cpu_random(const bd_kernel *k)
{
    const bd_node *n = k->node;
    switch (n->op) {
    case BD_OP_RandomNormal:
    case BD_OP_RandomUniform:
    case BD_OP_RandomNormalLike:
    case BD_OP_RandomUniformLike:
    case BD_OP_Bernoulli:
    case BD_OP_Multinomial: {
        rnd_job j = {.node = n, .p = n->params, .x = k->n_in ? &k->in[0] : NULL, .y = &k->out[0]};
        j.seed = bd_random_seed(j.p);
        bd_parallel_for(k->threads, bd_numel(&k->out[0]), MIN_CHUNK, rnd_range, &j);
        return BRAID_OK;
    }
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the random family", n->op_type);
    }
}
