/* signal.c: CPU kernels of the signal op family: DFT and STFT (each line
 * transformed in double by the FFT of src/ops/signal.h, lines split among
 * threads so that every line is computed by one thread in a fixed order),
 * the window functions and MelWeightMatrix. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <stdatomic.h>
#include <string.h>

#include "ops/signal.h"

typedef struct dft_job {
    const bd_dft_geom *g;
    const bd_fft_plan *plan;
    const void *x, *window;
    void *y;
    int dt;
    atomic_int oom;
} dft_job;

static void dft_range(void *vj, int64_t begin, int64_t end)
{
    dft_job *j = vj;
    double *buf = bd_malloc((size_t)j->plan->m * 2 * sizeof *buf);
    if (!buf) {
        atomic_store(&j->oom, 1);
        return;
    }
    for (int64_t line = begin; line < end; line++)
        bd_dft_line(j->g, j->plan, line, j->x, j->window, j->y, j->dt, buf);
    bd_free(buf);
}

static braid_status run_dft(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    bd_err *e = k->err;
    double *table = NULL;
    bd_dft_geom g;
    int64_t dims[BD_MAX_RANK];
    int rank = 0;
    BD_TRY(bd_dft_geometry(n, k->in, k->n_in, &g, dims, &rank, e));
    for (int d = 0; d < rank; d++)
        if (dims[d] != k->out[0].dims[d]) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "output dim %d is %lld, the transform gives %lld", d,
                         (long long)k->out[0].dims[d], (long long)dims[d]);
            goto fail;
        }
    if (g.lines == 0 || g.n_out == 0) goto fail;
    table = bd_malloc((size_t)bd_fft_table_doubles(g.n) * sizeof *table);
    BD_CHECK_ALLOC(e, table);
    bd_fft_plan plan;
    bd_fft_plan_fill(&plan, g.n, table);
    const void *window = n->op == BD_OP_STFT && k->n_in > 2 && k->in[2].dtype ? k->in[2].data : NULL;
    dft_job j = {&g, &plan, k->in[0].data, window, k->out[0].data, k->in[0].dtype, 0};
    double per_line = 10.0 * (double)plan.m * (plan.bluestein ? 3 : 1) * 20.0;
    int64_t min_chunk = per_line >= 65536.0 ? 1 : (int64_t)(65536.0 / per_line);
    bd_parallel_for(k->threads, g.lines, min_chunk, dft_range, &j);
    if (atomic_load(&j.oom)) st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
fail:
    bd_free(table);
    return st;
}

/* MelWeightMatrix: out (dft_length / 2 + 1, bins). */
static braid_status run_mel(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    int64_t *edge = NULL;
    const int64_t rows = k->out[0].dims[0], bins = k->out[0].dims[1];
    const int64_t dft = (int64_t)bd_get_f64(&k->in[1], 0);
    const int64_t rate = (int64_t)bd_get_f64(&k->in[2], 0);
    const double lo = bd_sig_load(k->in[3].data, k->in[3].dtype, 0);
    const double hi = bd_sig_load(k->in[4].data, k->in[4].dtype, 0);
    if (rate <= 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "sample_rate is %lld; it must be positive", (long long)rate);
        goto fail;
    }
    edge = bd_malloc((size_t)(bins + 2) * sizeof *edge);
    BD_CHECK_ALLOC(e, edge);
    for (int64_t i = 0; i < bins + 2; i++)
        edge[i] = bd_mel_edge_bin(i, bins, dft, rate, lo, hi, k->in[3].dtype == BRAID_DTYPE_DOUBLE);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < bins; i++)
            bd_sig_store(k->out[0].data, k->out[0].dtype, r * bins + i,
                         bd_mel_weight(r, edge[i], edge[i + 1], edge[i + 2]));
fail:
    bd_free(edge);
    return st;
}

braid_status bd_cpu_signal(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_signal_params *p = n->params;
    switch (n->op) {
    case BD_OP_DFT:
    case BD_OP_STFT: return run_dft(k);
    case BD_OP_HannWindow:
    case BD_OP_HammingWindow:
    case BD_OP_BlackmanWindow: {
        const int64_t size = k->out[0].dims[0];
        for (int64_t i = 0; i < size; i++)
            bd_sig_store(k->out[0].data, k->out[0].dtype, i, bd_window_value(n->op, i, size, p->periodic));
        return BRAID_OK;
    }
    case BD_OP_MelWeightMatrix: return run_mel(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the signal family", n->op_type);
    }
}
