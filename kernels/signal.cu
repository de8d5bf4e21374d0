/* signal.cu: CUDA kernels of the signal op family, on the formulas of
 * src/ops/signal.h that the CPU kernels run: DFT and STFT (one thread per
 * line, each transforming its line in double in a slot of scratch memory with
 * the plan's tables, made on the host on the first run and kept in the
 * node's cache), the window functions and MelWeightMatrix (one thread per
 * element). A long single line runs on one thread: correct, not fast. */
#include "common.cuh"

extern "C" {
#include "ops/signal.h"
}

/* Per node: the FFT tables and the lines' scratch (device memory). */
struct dft_cache {
    int64_t n, slots, m;
    double *table;   /* bd_fft_table_doubles(n) */
    double *scratch; /* slots * 2m */
};

__global__ void k_dft(bd_dft_geom g, bd_fft_plan p, const void *__restrict__ x, const void *__restrict__ w,
                      void *__restrict__ y, int dt, double *__restrict__ scratch, int64_t slots)
{
    int64_t slot = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= slots) return;
    double *buf = scratch + slot * 2 * p.m;
    for (int64_t line = slot; line < g.lines; line += slots) bd_dft_line(&g, &p, line, x, w, y, dt, buf);
}

static void dft_cache_free(dft_cache *c)
{
    if (!c) return;
    bd_cuda_scratch_free(c->table);
    bd_cuda_scratch_free(c->scratch);
    bd_free(c);
}

static braid_status run_dft(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    bd_err *e = k->err;
    braid_status st = BRAID_OK;
    bd_tensor hv[4];
    int nh = k->n_in < 4 ? k->n_in : 4;
    bd_cu_host_view(k, hv, nh);
    bd_dft_geom g;
    int64_t dims[BD_MAX_RANK];
    int rank = 0;
    if ((st = bd_dft_geometry(n, hv, nh, &g, dims, &rank, e))) return st;
    for (int d = 0; d < rank; d++)
        if (dims[d] != k->out[0].dims[d])
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "output dim %d is %lld, the transform gives %lld", d,
                           (long long)k->out[0].dims[d], (long long)dims[d]);
    if (g.lines == 0 || g.n_out == 0) return BRAID_OK;
    dft_cache *c = (dft_cache *)*k->cache;
    if (c && c->n != g.n) {
        dft_cache_free(c);
        *k->cache = c = NULL;
    }
    if (!c) {
        double *host = NULL;
        cudaError_t ce = cudaSuccess;
        c = (dft_cache *)bd_calloc(1, sizeof *c);
        if (!c) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        c->n = g.n;
        c->m = bd_fft_length(g.n);
        int64_t per = 2 * c->m * (int64_t)sizeof(double);
        int64_t cap = ((int64_t)64 << 20) / per;
        c->slots = g.lines < cap ? g.lines : cap < 1 ? 1 : cap;
        if (c->slots > 65536) c->slots = 65536;
        size_t tbytes = (size_t)bd_fft_table_doubles(g.n) * sizeof(double);
        host = (double *)bd_malloc(tbytes);
        if (!host) {
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        bd_fft_plan hp;
        bd_fft_plan_fill(&hp, g.n, host);
        if ((ce = bd_cuda_scratch_alloc((void **)&c->table, tbytes)) != cudaSuccess ||
            (ce = bd_cuda_scratch_alloc((void **)&c->scratch, (size_t)(c->slots * per))) != cudaSuccess) {
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate the DFT's tables and scratch (%.1f MiB): %s",
                         (double)(tbytes + (size_t)(c->slots * per)) / 1048576.0, cudaGetErrorString(ce));
            goto fail;
        }
        /* On the node's stream, which the kernel below follows: a plain
         * cudaMemcpy from pageable memory runs on the legacy stream and may
         * return before its DMA lands, which a non-blocking stream does not
         * wait for. From pageable memory the bytes are staged before the call
         * returns, so host can go at once. */
        if ((ce = cudaMemcpyAsync(c->table, host, tbytes, cudaMemcpyHostToDevice, k->stream)) != cudaSuccess) {
            st = bd_cu_fail_cuda(e, "cudaMemcpyAsync(DFT tables)", ce, __FILE__, __LINE__);
            goto fail;
        }
        bd_free(host);
        *k->cache = c;
        goto ready;
    fail:
        bd_free(host);
        dft_cache_free(c);
        return st;
    }
ready:
    bd_fft_plan p;
    bd_fft_plan_bind(&p, g.n, c->table);
    const void *w = n->op == BD_OP_STFT && k->n_in > 2 && k->in[2].dtype ? k->in[2].data : NULL;
    k_dft<<<bd_cu_grid(c->slots, 128), 128, 0, k->stream>>>(g, p, k->in[0].data, w, k->out[0].data,
                                                             k->in[0].dtype, c->scratch, c->slots);
    BD_CU_CHECK_LAUNCH(k, "the DFT kernel");
    return BRAID_OK;
}

__global__ void k_window(void *__restrict__ y, int dt, int op, int64_t size, int periodic)
{
    BD_CU_LOOP(i, size) bd_sig_store(y, dt, i, bd_window_value(op, i, size, periodic));
}

/* MelWeightMatrix, one thread per output element (row r, filter i). */
__global__ void k_mel(void *__restrict__ y, int dt, int64_t rows, int64_t bins, int64_t dft,
                      const void *__restrict__ rate_p, int rate_dt, const void *__restrict__ lo_p,
                      const void *__restrict__ hi_p, int edge_dt)
{
    const int64_t rate = rate_dt == BRAID_DTYPE_INT64 ? *(const int64_t *)rate_p : *(const int32_t *)rate_p;
    const double lo = bd_sig_load(lo_p, edge_dt, 0), hi = bd_sig_load(hi_p, edge_dt, 0);
    const int ed = edge_dt == BRAID_DTYPE_DOUBLE;
    BD_CU_LOOP(e, rows * bins)
    {
        int64_t r = e / bins, i = e - r * bins;
        double v = 0.0;
        if (rate > 0) {
            int64_t l = bd_mel_edge_bin(i, bins, dft, rate, lo, hi, ed);
            int64_t c = bd_mel_edge_bin(i + 1, bins, dft, rate, lo, hi, ed);
            int64_t h = bd_mel_edge_bin(i + 2, bins, dft, rate, lo, hi, ed);
            v = bd_mel_weight(r, l, c, h);
        } else {
            v = nan(""); /* the CPU refuses a sample_rate <= 0; here it shows as NaN */
        }
        bd_sig_store(y, dt, e, v);
    }
}

extern "C" braid_status bd_cuda_signal(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_signal_params *p = (const bd_signal_params *)n->params;
    switch (n->op) {
    case BD_OP_DFT:
    case BD_OP_STFT: return run_dft(k);
    case BD_OP_HannWindow:
    case BD_OP_HammingWindow:
    case BD_OP_BlackmanWindow: {
        int64_t size = k->out[0].dims[0];
        if (size == 0) return BRAID_OK;
        k_window<<<bd_cu_grid(size), BD_CU_BLOCK, 0, k->stream>>>(k->out[0].data, k->out[0].dtype, n->op, size,
                                                                  p->periodic);
        BD_CU_CHECK_LAUNCH(k, "the window kernel");
        return BRAID_OK;
    }
    case BD_OP_MelWeightMatrix: {
        int64_t rows = k->out[0].dims[0], bins = k->out[0].dims[1];
        bd_tensor hv[2];
        bd_cu_host_view(k, hv, 2);
        if (!hv[1].data)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "input 'dft_length' must be known when the plan is made");
        int64_t dft = hv[1].dtype == BRAID_DTYPE_INT64 ? *(const int64_t *)hv[1].data : *(const int32_t *)hv[1].data;
        k_mel<<<bd_cu_grid(rows * bins), BD_CU_BLOCK, 0, k->stream>>>(
            k->out[0].data, k->out[0].dtype, rows, bins, dft, k->in[2].data, k->in[2].dtype, k->in[3].data,
            k->in[4].data, k->in[3].dtype);
        BD_CU_CHECK_LAUNCH(k, "the MelWeightMatrix kernel");
        return BRAID_OK;
    }
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the signal family", n->op_type);
    }
}

extern "C" void bd_cuda_signal_free(const bd_node *n, void *cache)
{
    (void)n;
    dft_cache_free((dft_cache *)cache);
}
