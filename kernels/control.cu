/* control.cu: the control op family on CUDA (BD_OP_If, BD_OP_Loop and
 * BD_OP_Scan: nodes that own subgraphs). They run no kernel of their own: the enqueue walk hands them to
 * the engine (src/backend/cuda/cuda_control.c, src/runtime/controlflow.c), whose
 * slices and copies are cudaMemcpy2DAsync on the node's stream. The node's
 * cache slot holds where its nested plans run, freed here with the plan. */
#include "common.cuh"

extern "C" void bd_cuda_control_ctx_free(void *ctx);

extern "C" braid_status bd_cuda_control(const bd_cuda_kernel *k)
{
    return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s runs through the control-flow engine, not a kernel",
                   k->node->op_type);
}

extern "C" void bd_cuda_control_free(const bd_node *n, void *cache)
{
    (void)n;
    bd_cuda_control_ctx_free(cache);
}
