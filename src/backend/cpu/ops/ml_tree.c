/* ml_tree.c: CPU kernels of the ml_tree op family (TreeEnsemble,
 * TreeEnsembleRegressor, TreeEnsembleClassifier): each row walks every tree
 * with bd_tree_row (src/ops/ml_tree.h), trees in order, so the sums never
 * depend on the thread count; rows are split over threads. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/ml_tree.h"

typedef struct tree_job {
    const bd_kernel *k;
    const bd_tree_params *p;
    int64_t c;
    _Atomic int failed;
} tree_job;

static void tree_range(void *vj, int64_t b, int64_t e)
{
    tree_job *j = vj;
    const bd_kernel *k = j->k;
    const bd_tree_params *p = j->p;
    int64_t nt = p->n_targets, ns = nt > 2 ? nt : 2;
    double *acc = bd_malloc((size_t)ns * (sizeof(double) + sizeof(float) + 1));
    if (!acc) {
        j->failed = 1;
        return;
    }
    float *sc = (float *)(acc + ns);
    unsigned char *has = (unsigned char *)(sc + ns);
    int xdt = k->in[0].dtype, op = k->node->op;
    size_t es = bd_dtype_size(xdt);
    const int64_t *labels = bd_tree_labels(p, p->data);
    for (int64_t r = b; r < e; r++) {
        const char *x = (const char *)k->in[0].data + (size_t)(r * j->c) * es;
        int64_t n = bd_tree_row(p, p->data, x, xdt, acc, has, sc);
        if (op == BD_OP_ML_TreeEnsembleClassifier) {
            int64_t best = 0;
            for (int64_t t = 1; t < n; t++)
                if (sc[t] > sc[best]) best = t;
            ((int64_t *)k->out[0].data)[r] = p->n_labels == 1 ? (best == 1 && labels[0] == 1) : labels[best < p->n_labels ? best : 0];
            if (k->n_out > 1)
                for (int64_t t = 0; t < nt; t++) ((float *)k->out[1].data)[r * nt + t] = sc[t];
        } else if (k->out[0].dtype == BRAID_DTYPE_DOUBLE) {
            for (int64_t t = 0; t < nt; t++)
                ((double *)k->out[0].data)[r * nt + t] = p->post == BD_ML_POST_NONE ? acc[t] : sc[t];
        } else {
            for (int64_t t = 0; t < nt; t++) ((float *)k->out[0].data)[r * nt + t] = sc[t];
        }
    }
    bd_free(acc);
}

braid_status bd_cpu_ml_tree(const bd_kernel *k)
{
    const bd_tree_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ml_tree parameters were not parsed");
    const bd_tensor *x = &k->in[0];
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->dims[x->rank - 1];
    tree_job j = {k, p, c, 0};
    if (rows > 0) bd_parallel_for(k->threads, rows, 16, tree_range, &j);
    if (j.failed) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}
