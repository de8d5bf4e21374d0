/* controlflow.h: the engine that runs control-flow nodes (If, Loop, Scan) on every
 * backend. A control-flow node is one command on its stream; when it runs,
 * the engine picks a subgraph (the If branch its condition names, or the
 * Loop/Scan body for each iteration), finds or makes that subgraph's plan for
 * the signature of what it is handed (cached per subgraph, per signature),
 * binds its inputs, runs it as a staged sequence (src/runtime/stage.c) and
 * copies its outputs into the node's. Backends give it a few primitives:
 * their plan runner and a host read (a condition, a trip count), 2-D
 * copies, writes of host scalars and allocations, all on the node's stream. */
#ifndef BD_CONTROLFLOW_H
#define BD_CONTROLFLOW_H

#include <stdio.h>

#include "runtime/runtime.h"

typedef struct bd_nest_ops {
    bd_runner runner; /* makes, runs and releases the nested plans; read: to the host */
    /* height rows of width bytes from src (rows spitch apart) to dst (dpitch apart). */
    braid_status (*copy2d)(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, bd_err *e);
    /* n bytes of host memory to backend memory. */
    braid_status (*write)(void *ctx, void *dst, const void *src, size_t n, bd_err *e);
    braid_status (*alloc)(void *ctx, void **p, size_t n, bd_err *e);
    void (*free)(void *ctx, void *p);
    /* What the backend pays to read a condition on the host, for plan
     * prints ("" when nothing: the CPU). */
    const char *sync_note;
} bd_nest_ops;

/* One run of a control-flow node. */
typedef struct bd_nest_call {
    const bd_node *node;
    const bd_tensor *in;      /* node->n_in inputs (implicit ones last), data in backend memory */
    const bd_tensor *host_in; /* the same inputs' plan-time host data where known, else data NULL */
    bd_tensor *out;           /* node->n_out outputs: planned ones bound; an output whose infer left dims
                               * -1 gets its shape and memory (the engine's, kept with the plan) here */
    const bd_prepare_opts *opts; /* the outer plan's: nested plans are made the same way */
    /* Where SequenceMap makes its sequences (the run's pool, util/common.h):
     * backends whose memory is the host's; NULL elsewhere, which refuses it. */
    struct bd_strpool *pool;
} bd_nest_call;

struct bd_nest;
/* Runs c; *slot holds the node's engine state for its plan (made on the
 * first run, with ops copied into it). */
braid_status bd_nest_run(struct bd_nest **slot, const bd_nest_ops *ops, const bd_nest_call *c, bd_err *e);
/* Releases the nested plans and buffers (nothing of theirs may still run). */
void bd_nest_free(struct bd_nest *n);
/* How many first stages subgraph s holds now (tests: cache reuse). */
int bd_nest_plan_count(const struct bd_nest *n, int s);
/* Prints the nested plans made so far, indented. */
void bd_nest_print(FILE *f, const struct bd_nest *n, int indent);

#endif
