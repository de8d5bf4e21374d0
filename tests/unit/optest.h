/* optest.h: the single-op harness the family unit tests share: run a node
 * as the executor would (parse, infer, an output buffer filled with garbage
 * so that an element the kernel forgets shows up, then the CPU kernel). */
#ifndef BD_OPTEST_H
#define BD_OPTEST_H

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"

/* Intra-op threads the kernels may use. */
static int g_threads = 1;

/* parse + infer + allocate every output (filled with garbage: the kernel must
 * write every byte) + run. Outputs' data is malloc'ed; done() frees it. */
static braid_status run(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = bd_op_parse(n, e);
    if (st) return st;
    if ((st = bd_op_infer(n, in, out, e))) return st;
    for (int i = 0; i < n->n_out; i++) {
        size_t nb;
        if ((st = bd_tensor_nbytes(&out[i], &nb, e))) return st;
        out[i].data = malloc(nb + 1);
        memset(out[i].data, 0xAB, nb);
    }
    bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = g_threads,
                   .err = e};
    return bd_cpu_run(&k);
}

static void done(bd_node *n, bd_tensor *out)
{
    for (int i = 0; i < n->n_out; i++) {
        free(out[i].data);
        out[i].data = NULL;
    }
    bd_free(n->params);
    n->params = NULL;
}

/* A 1-D int64 tensor over v. */
static inline bd_tensor ints1(int64_t *v, int n)
{
    return (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 1, .dims = {n}, .data = v};
}

#define F32 BRAID_DTYPE_FLOAT

#endif
