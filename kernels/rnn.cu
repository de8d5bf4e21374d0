/* rnn.cu: CUDA kernels of the rnn op family: the recurrent ops LSTM, GRU and RNN.
 * (No op of the family is registered yet.) */
#include "common.cuh"

extern "C" braid_status bd_cuda_rnn(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has no CUDA kernel", k->node->op_type);
}

extern "C" void bd_cuda_rnn_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
