/* host_nodes.c: which nodes of a CUDA plan run on the host (strings,
 * sequences, optionals), and what `braid plan` says of them (host_nodes.h).
 * Plain C, no CUDA: the CPU tests run it. */
#include "backend/cuda/common/host_nodes.h"

#include "ops/ops.h"

static int host_value(const bd_inst *x, int v)
{
    if (v < 0) return 0;
    int dt = x->vals[v].dtype ? x->vals[v].dtype : x->g->values[v].dtype;
    return dt == BRAID_DTYPE_STRING || bd_dt_container(dt);
}

int bd_cuda_host_node(const bd_node *n, const bd_inst *x)
{
    unsigned flags = bd_op_table[n->op].flags;
    if (flags & BD_OPF_SUBGRAPHS) return 0;
    if (flags & BD_OPF_HOST) return 1;
    for (int k = 0; k < n->n_in; k++)
        if (host_value(x, n->in[k])) return 1;
    for (int k = 0; k < n->n_out; k++)
        if (host_value(x, n->out[k])) return 1;
    return 0;
}

const char *bd_cuda_node_note(const bd_node *n, const bd_inst *x)
{
    if (bd_cuda_host_node(n, x))
        return "on the host: its stream synchronized, its inputs copied to the host, its outputs back";
    if (n->op == BD_OP_SequenceMap)
        return "SequenceMap: each element written to the device, each result read back to the host, one "
               "synchronization each";
    return NULL;
}
