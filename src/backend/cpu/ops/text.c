/* text.c: CPU kernels of the text op family (TfIdfVectorizer): each row of
 * tokens is counted by bd_tfidf_row (src/ops/text.h); rows are split over
 * threads, each row counted by one, so the output never depends on the
 * thread count. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/text.h"

typedef struct tfidf_job {
    const bd_tfidf_params *p;
    const char *x;
    float *y;
    int is32;
    int64_t c;
} tfidf_job;

static void tfidf_range(void *vj, int64_t b, int64_t e)
{
    const tfidf_job *j = vj;
    size_t es = j->is32 ? 4 : 8;
    for (int64_t r = b; r < e; r++)
        bd_tfidf_row(j->p, j->p->data, j->x + (size_t)(r * j->c) * es, j->is32, j->c, j->y + r * j->p->n_out);
}

braid_status bd_cpu_text(const bd_kernel *k)
{
    const bd_tfidf_params *p = k->node->params;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "text parameters were not parsed");
    if (k->node->op != BD_OP_TfIdfVectorizer)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the text family", k->node->op_type);
    int64_t rows, c;
    bd_tfidf_rows(&k->in[0], &rows, &c);
    tfidf_job j = {p, k->in[0].data, k->out[0].data, k->in[0].dtype == BRAID_DTYPE_INT32, c};
    if (rows * p->n_out > 0) bd_parallel_for(k->threads, rows, 16, tfidf_range, &j);
    return BRAID_OK;
}
