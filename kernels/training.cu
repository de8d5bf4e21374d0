/* training.cu: CUDA kernels of the training op family (Adagrad, Adam,
 * Momentum), mirroring src/backend/cpu/ops/training.c: one thread per
 * element applies the update rule of src/ops/training.h in double. R and T
 * are read on the device, so nothing waits on the host. */
#include "common.cuh"

extern "C" {
#include "ops/training.h"
}

template <class T, class R>
__global__ void k_train(int op, bd_train_params p, const R *r, const int64_t *t, int64_t n, const T *x, const T *g,
                        const T *s1, const T *s2, T *ox, T *o1, T *o2)
{
    bd_train_scalars s = bd_train_scalars_of(op, &p, (double)r[0], t[0]);
    BD_CU_LOOP(i, n)
    {
        double xn, a, c = 0;
        if (op == BD_OP_TR_Adagrad) bd_train_adagrad(&p, s, x[i], g[i], s1[i], &xn, &a);
        else if (op == BD_OP_TR_Adam) bd_train_adam(&p, s, x[i], g[i], s1[i], s2[i], &xn, &a, &c);
        else bd_train_momentum(&p, s, x[i], g[i], s1[i], &xn, &a);
        ox[i] = (T)xn;
        o1[i] = (T)a;
        if (o2) o2[i] = (T)c;
    }
}

template <class T, class R> static void launch(const bd_cuda_kernel *k, const bd_train_params *p, int g, int64_t n)
{
    int G = p->groups;
    const T *s2 = p->per == 4 ? (const T *)k->in[2 + 3 * G + g].data : NULL;
    T *o2 = p->per == 4 ? (T *)k->out[2 * G + g].data : NULL;
    k_train<T, R><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
        k->node->op, *p, (const R *)k->in[0].data, (const int64_t *)k->in[1].data, n, (const T *)k->in[2 + g].data,
        (const T *)k->in[2 + G + g].data, (const T *)k->in[2 + 2 * G + g].data, s2, (T *)k->out[g].data,
        (T *)k->out[G + g].data, o2);
}

extern "C" braid_status bd_cuda_training(const bd_cuda_kernel *k)
{
    const bd_train_params *p = (const bd_train_params *)k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "training parameters were not parsed");
    if (k->node->op != BD_OP_TR_Adagrad && k->node->op != BD_OP_TR_Adam && k->node->op != BD_OP_TR_Momentum)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the training family", k->node->op_type);
    int rd = k->in[0].dtype;
    for (int g = 0; g < p->groups; g++) {
        int64_t n = bd_numel(&k->in[2 + g]);
        if (n == 0) continue;
        int xd = k->in[2 + g].dtype;
        if (xd == BRAID_DTYPE_FLOAT && rd == BRAID_DTYPE_FLOAT) launch<float, float>(k, p, g, n);
        else if (xd == BRAID_DTYPE_FLOAT) launch<float, double>(k, p, g, n);
        else if (rd == BRAID_DTYPE_FLOAT) launch<double, float>(k, p, g, n);
        else launch<double, double>(k, p, g, n);
        BD_CU_CHECK_LAUNCH(k, "the training update kernel");
    }
    return BRAID_OK;
}

extern "C" void bd_cuda_training_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
