/* control.c: CPU kernels of the control op family: If, Loop and Scan, nodes
 * that own subgraphs. The engine (src/runtime/controlflow.c) runs them; this file
 * gives it the CPU's primitives: the CPU backend as the runner of nested
 * plans (each with its own stream threads), host memory copies and allocations. */
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "runtime/controlflow.h"

static braid_status cpu_read(void *ctx, void *dst, const void *src, size_t n, bd_err *e)
{
    (void)ctx, (void)e;
    if (n) memcpy(dst, src, n);
    return BRAID_OK;
}

static braid_status cpu_copy2d(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                               size_t height, bd_err *e)
{
    (void)ctx, (void)e;
    for (size_t r = 0; r < height; r++) memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    return BRAID_OK;
}

static braid_status cpu_alloc(void *ctx, void **p, size_t n, bd_err *e)
{
    (void)ctx;
    *p = bd_malloc(n);
    return *p ? BRAID_OK : BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
}

static void cpu_free(void *ctx, void *p)
{
    (void)ctx;
    bd_free(p);
}

static braid_status cpu_prepare(void *ctx, bd_prepared *p, bd_err *e) { return bd_backend_cpu.prepare(ctx, p, e); }
static void cpu_release(void *ctx, bd_prepared *p) { bd_backend_cpu.release(ctx, p); }
static braid_status cpu_run(void *ctx, bd_prepared *p, const bd_tensor *in, bd_err *e)
{
    return bd_cpu_run_nested(ctx, p, in, e); /* the run's pool of strings and sequences lives on */
}

braid_status bd_cpu_control(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    if (!k->plan)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s runs only in a plan, it is never folded", n->op_type);
    bd_nest_ops ops = {.runner = {.ctx = k->backend, .prepare = cpu_prepare, .release = cpu_release, .run = cpu_run,
                                  .read = cpu_read, .host_mem = 1, .host_out = 1, .host_in = 1},
                       .copy2d = cpu_copy2d, .write = cpu_read, .alloc = cpu_alloc, .free = cpu_free, .sync_note = ""};
    bd_tensor *host = bd_calloc((size_t)n->n_in + 1, sizeof *host);
    if (!host) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n->n_in; i++) {
        host[i].rank = -1;
        if (n->in[i] >= 0) host[i] = k->plan->inst.vals[n->in[i]];
    }
    bd_nest_call c = {.node = n, .in = k->in, .host_in = host, .out = k->out, .opts = &k->plan->opts,
                      .pool = k->strings};
    st = bd_nest_run(&k->plan->nest[k->live_index], &ops, &c, k->err);
    bd_free(host);
    return st;
}
