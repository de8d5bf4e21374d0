/* svm.c: CPU kernels of the svm op family (ai.onnx.ml SVMClassifier and
 * SVMRegressor): rows split over threads, each row computed alone by
 * bd_svm_row (src/ops/svm.h) with its own scratch, so the bits do not depend
 * on the thread count; string labels are copied into the run's pool. */
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "ops/svm.h"
#include "util/strpool.h"

typedef struct svm_job {
    const bd_kernel *k;
    const bd_svm_params *p;
    int64_t *labels; /* label index per row (classifier) */
    float *z;        /* scores (output 1, or scratch when it is not asked for) */
    _Atomic int oom;
} svm_job;

static void svm_rows(void *vj, int64_t b, int64_t e)
{
    svm_job *j = vj;
    const bd_kernel *k = j->k;
    int64_t ns = bd_svm_scratch(j->p);
    float *sc = bd_malloc((size_t)ns * sizeof *sc);
    if (!sc) {
        j->oom = 1;
        return;
    }
    for (int64_t r = b; r < e; r++)
        bd_svm_row(k->node->op, j->p, j->p->data, k->in[0].data, k->in[0].dtype, r, k->out[0].data,
                   j->labels ? j->labels + r : NULL, j->z, sc);
    bd_free(sc);
}

braid_status bd_cpu_svm(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_svm_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "svm parameters were not parsed");
    int cls = k->node->op == BD_OP_ML_SVMClassifier;
    int64_t rows = k->out[0].dims[0];
    svm_job j = {k, p, NULL, NULL, 0};
    float *zbuf = NULL;
    if (rows == 0) return BRAID_OK;
    if (cls) {
        j.labels = bd_malloc((size_t)rows * sizeof *j.labels);
        BD_CHECK_ALLOC(k->err, j.labels);
        if (k->n_out > 1) {
            j.z = k->out[1].data;
        } else {
            zbuf = bd_malloc((size_t)(rows * p->n_scores) * sizeof *zbuf);
            BD_CHECK_ALLOC(k->err, zbuf);
            j.z = zbuf;
        }
    }
    bd_parallel_for(k->threads, rows, 16, svm_rows, &j);
    if (j.oom) {
        st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    if (cls) {
        const int64_t *lab = p->data + p->o_labels;
        if (p->str_labels && !k->strings) {
            st = BD_FAIL(k->err, BRAID_ERR_INTERNAL, "SVMClassifier runs with no string pool");
            goto fail;
        }
        for (int64_t r = 0; r < rows; r++) {
            if (!p->str_labels) {
                ((int64_t *)k->out[0].data)[r] = lab[j.labels[r]];
                continue;
            }
            const char *s = (const char *)(p->data + p->n_data) + lab[j.labels[r]];
            const char *c = bd_strpool_dup(k->strings, s, strlen(s));
            if (!c) {
                st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the labels of SVMClassifier");
                goto fail;
            }
            ((const char **)k->out[0].data)[r] = c;
        }
    }
fail:
    bd_free(j.labels);
    bd_free(zbuf);
    return st;
}
