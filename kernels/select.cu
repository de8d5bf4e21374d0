/* select.cu: the select op family (NonZero, Compress, Unique) on CUDA. Their
 * output shapes depend on input values, so the host must read those values
 * whatever runs the op: the launcher copies the inputs to the host (one
 * synchronization of the node's stream), runs the CPU kernels of
 * src/backend/cpu/ops/select.c on them (one definition of the ops), copies
 * the outputs back and writes their actual dims. Refused inside a CUDA graph
 * capture, which cannot synchronize. */
#include <stdlib.h>

#include "common.cuh"

extern "C" {
#include "backend/cpu/cpu_ops.h"
#include "ops/select.h"
}

enum { MAX_IO = 4 };

extern "C" braid_status bd_cuda_select(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_tensor hin[MAX_IO], hout[MAX_IO];
    int n_in = k->n_in < MAX_IO ? k->n_in : MAX_IO, n_out = k->n_out < MAX_IO ? k->n_out : MAX_IO;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    memset(hin, 0, sizeof hin);
    memset(hout, 0, sizeof hout);
    if (cudaStreamIsCapturing(k->stream, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                       "op %s has a shape known only from its input values: it cannot run in a CUDA graph",
                       k->node->op_type);
    for (int i = 0; i < n_in; i++) {
        size_t nb = 0;
        hin[i] = k->in[i];
        hin[i].data = NULL;
        if (!k->in[i].dtype || !k->in[i].data) continue;
        BD_TRY(bd_tensor_nbytes(&k->in[i], &nb, k->err));
        if (k->host_in && k->host_in[i].data) { /* known when the plan was made */
            hin[i].data = k->host_in[i].data;
            continue;
        }
        hin[i].data = bd_malloc(nb ? nb : 1);
        BD_CHECK_ALLOC(k->err, hin[i].data);
        if (nb) BD_CUDA_TRY(k->err, cudaMemcpyAsync(hin[i].data, k->in[i].data, nb, cudaMemcpyDeviceToHost, k->stream));
    }
    for (int i = 0; i < n_out; i++) {
        size_t nb = 0;
        hout[i] = k->out[i];
        hout[i].data = NULL;
        if (!k->out[i].data) continue;
        BD_TRY(bd_tensor_nbytes(&k->out[i], &nb, k->err));
        hout[i].data = bd_malloc(nb ? nb : 1);
        BD_CHECK_ALLOC(k->err, hout[i].data);
    }
    BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream));
    {
        bd_kernel hk = {};
        hk.node = k->node, hk.in = hin, hk.n_in = n_in, hk.out = hout, hk.n_out = n_out, hk.threads = 1, hk.err = k->err;
        BD_TRY(bd_cpu_select(&hk));
    }
    for (int i = 0; i < n_out; i++) {
        size_t nb = 0;
        memcpy(k->out[i].dims, hout[i].dims, sizeof hout[i].dims);
        if (!hout[i].data) continue;
        BD_TRY(bd_tensor_nbytes(&hout[i], &nb, k->err));
        if (nb) BD_CUDA_TRY(k->err, cudaMemcpyAsync(k->out[i].data, hout[i].data, nb, cudaMemcpyHostToDevice, k->stream));
    }
    BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream)); /* before the host buffers go */
fail:
    for (int i = 0; i < n_in; i++)
        if (hin[i].data && !(k->host_in && k->host_in[i].data == hin[i].data)) bd_free(hin[i].data);
    for (int i = 0; i < n_out; i++) bd_free(hout[i].data);
    return st;
}

extern "C" void bd_cuda_select_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
