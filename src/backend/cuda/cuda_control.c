/* cuda_control.c: the CUDA side of control flow and run-time shapes.
 *
 * bd_cuda_node_launch is what cuda_plan.c's enqueue walk calls for every
 * node: an ordinary node goes to its family's launcher, a node on host
 * values to the host (cuda_host.c), and where a node's output shape is known
 * only when it runs (BD_IV_RUNTIME) the shape its launcher wrote is kept for
 * later stages. A control-flow node (If, Loop, Scan, SequenceMap) is one
 * command on its stream: the engine of src/runtime/controlflow.c runs it with the
 * primitives below.
 *
 * Nested plans run on the device like any plan, enqueued from the host
 * while the outer walk waits: a nested plan's stream 0 is the node's own
 * stream, its other streams are pool streams past the range of the plan that
 * holds the node (forked from the node's stream with an event and joined
 * back into it), with events of their own and memory of their own (arena,
 * constants, outputs: device memory, never managed). The host reads an If's
 * condition, a Loop's trip count and, after every iteration of a Loop that
 * has a condition, that condition: each is one synchronization of the node's
 * stream (braid plan says so). Nothing here can be captured in a CUDA graph,
 * nor a node of a later stage that reads memory a kernel allocated while
 * running (its address may change from run to run): a plan with such a node
 * runs uncaptured (cuda_plan.c falls back when capturing fails). */
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "runtime/controlflow.h"

/* What the nested plans of one control-flow node run on: the node's pool
 * stream, and the first pool stream free for their other streams. */
typedef struct nest_ctx {
    cuda_state *s;
    int stream; /* pool index of the node's stream */
    int base;   /* pool index of nested stream 1 */
} nest_ctx;

/* A nested plan's device state. */
typedef struct nested_plan {
    nest_ctx *ctx;
    void *arena, *consts;
    cudaEvent_t *ev, *fork; /* plan events; fork[0] forks, fork[t] joins stream t back */
    int n_ev, n_fork;
    void **cache;           /* per live node: the family's cache slot */
    int max_in, max_out;
} nested_plan;

static size_t align_up(size_t n) { return BD_CEIL_DIV(n, BD_PLAN_ALIGN) * BD_PLAN_ALIGN; }

/* Pool index of nested stream t. */
static int pool_of(const nest_ctx *c, int t) { return t == 0 ? c->stream : c->base + t - 1; }

void bd_cuda_control_ctx_free(void *ctx) { bd_free(ctx); }

/* ---- the engine's primitives ---------------------------------------------------- */

braid_status bd_cuda_read(void *state, void *dst, const void *src, size_t n, bd_err *e)
{
    braid_status st = BRAID_OK;
    (void)state;
    if (n) BD_CUDA_TRY(e, cudaMemcpy(dst, src, n, cudaMemcpyDefault));
    return BRAID_OK;
fail:
    return st;
}

static braid_status nest_read(void *ctx, void *dst, const void *src, size_t n, bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_ctx *c = ctx;
    /* The one synchronization of a condition or trip count read. */
    BD_CUDA_TRY(e, cudaStreamSynchronize(c->s->streams[c->stream].s));
    if (n) BD_CUDA_TRY(e, cudaMemcpy(dst, src, n, cudaMemcpyDefault));
    return BRAID_OK;
fail:
    return st;
}

static braid_status nest_copy2d(void *ctx, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                size_t height, bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_ctx *c = ctx;
    if (width && height)
        BD_CUDA_TRY(e, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, cudaMemcpyDefault,
                                         c->s->streams[c->stream].s));
    return BRAID_OK;
fail:
    return st;
}

static braid_status nest_write(void *ctx, void *dst, const void *src, size_t n, bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_ctx *c = ctx;
    /* From pageable memory: the bytes are staged before the call returns. */
    if (n) BD_CUDA_TRY(e, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->s->streams[c->stream].s));
    return BRAID_OK;
fail:
    return st;
}

static braid_status nest_alloc(void *ctx, void **p, size_t n, bd_err *e)
{
    return bd_cu_malloc(((nest_ctx *)ctx)->s, p, n, e);
}

static void nest_free(void *ctx, void *p)
{
    nest_ctx *c = ctx;
    cudaStreamSynchronize(c->s->streams[c->stream].s); /* nothing enqueued may still use it */
    bd_cu_free(c->s, p);
}

/* ---- nested plans ------------------------------------------------------------------ */

static void nested_release(void *ctx, bd_prepared *p)
{
    nest_ctx *c = ctx;
    nested_plan *np = p->bstate;
    const bd_graph *g = p->g;
    if (np) {
        cudaStreamSynchronize(c->s->streams[c->stream].s);
        for (int i = 0; np->cache && i < p->n_live; i++)
            if (np->cache[i]) bd_cuda_free_cache(p->inst.node[p->live[i]], np->cache[i]);
        for (int i = 0; i < np->n_ev; i++) bd_cu_event_destroy(c->s, np->ev[i]);
        for (int i = 0; i < np->n_fork; i++) bd_cu_event_destroy(c->s, np->fork[i]);
        bd_cu_free(c->s, np->arena);
        bd_cu_free(c->s, np->consts);
        bd_free(np->ev);
        bd_free(np->fork);
        bd_free(np->cache);
        bd_free(np);
    }
    for (int o = 0; p->out_data && o < g->n_outputs; o++) {
        bd_cu_free(c->s, p->out_data[o]);
        p->out_data[o] = NULL;
    }
    p->bstate = NULL;
}

static braid_status nested_prepare(void *ctx, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_ctx *c = ctx;
    cuda_state *s = c->s;
    const bd_graph *g = p->g;
    int S = p->plan.n_streams;
    nested_plan *np = bd_calloc(1, sizeof *np);
    if (!np) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    p->bstate = np;
    np->ctx = c;
    BD_TRY(bd_cu_pool_grow(s, c->base + S - 1, e));
    np->ev = bd_calloc((size_t)p->plan.n_events + 1, sizeof *np->ev);
    np->fork = bd_calloc((size_t)S + 1, sizeof *np->fork);
    np->cache = bd_calloc((size_t)p->n_live + 1, sizeof *np->cache);
    BD_CHECK_ALLOC(e, np->ev && np->fork && np->cache);
    /* Every plan-time constant of the subgraph, its initializers included
     * (the session's weights are the model graph's only): one allocation. */
    size_t total = 0, bytes, off = 0;
    for (int v = 0; v < g->n_values; v++)
        if (p->inst.vals[v].data) {
            BD_TRY(bd_tensor_nbytes(&p->inst.vals[v], &bytes, e));
            total += align_up(bytes);
        }
    if (total) BD_TRY(bd_cu_malloc(s, &np->consts, total, e));
    for (int v = 0; v < g->n_values; v++) {
        if (!p->inst.vals[v].data) continue;
        BD_TRY(bd_tensor_nbytes(&p->inst.vals[v], &bytes, e));
        if (bytes)
            BD_CUDA_TRY(e, cudaMemcpy((char *)np->consts + off, p->inst.vals[v].data, bytes, cudaMemcpyHostToDevice));
        p->vals[v].data = (char *)np->consts + off;
        off += align_up(bytes);
    }
    if (total) BD_CUDA_TRY(e, cudaStreamSynchronize(cudaStreamLegacy));
    if (p->plan.arena_size) BD_TRY(bd_cu_malloc(s, &np->arena, p->plan.arena_size, e));
    for (int v = 0; v < g->n_values; v++)
        if (p->val_buf[v] >= 0) p->vals[v].data = (char *)np->arena + p->plan.buf_offset[p->val_buf[v]];
    for (int o = 0; o < g->n_outputs; o++) BD_TRY(bd_cu_malloc(s, &p->out_data[o], p->out_bytes[o], e));
    for (int v = 0; v < g->n_values; v++)
        if (p->val_out[v] >= 0 && !p->inst.vals[v].data && !(g->values[v].flags & BD_VAL_INPUT))
            p->vals[v].data = p->out_data[p->val_out[v]];
    for (int i = 0; i < p->plan.n_events; i++, np->n_ev++) BD_TRY(bd_cu_event_create(s, &np->ev[i], 0, e));
    for (int i = 0; i < S; i++, np->n_fork++) BD_TRY(bd_cu_event_create(s, &np->fork[i], 0, e));
    for (int i = 0; i < p->n_live; i++) {
        np->max_in = BD_MAX(np->max_in, bd_node_slots(p->inst.node[p->live[i]]));
        np->max_out = BD_MAX(np->max_out, p->inst.node[p->live[i]]->n_out);
    }
    return BRAID_OK;
fail:
    nested_release(ctx, p);
    return st;
}

static braid_status nested_launch(nest_ctx *c, bd_prepared *p, int li, bd_tensor *in, bd_tensor *host_in,
                                  bd_tensor *out, bd_err *e)
{
    nested_plan *np = p->bstate;
    int t = p->plan.node_stream[li], pool = pool_of(c, t);
    const cuda_stream *cs = &c->s->streams[pool];
    const bd_node *n = p->inst.node[p->live[li]];
    for (int k = 0; k < np->max_in; k++) {
        if (k >= n->n_in || n->in[k] < 0) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].rank = -1;
            host_in[k] = in[k];
        } else {
            in[k] = p->vals[n->in[k]];
            host_in[k] = p->inst.vals[n->in[k]];
        }
    }
    for (int k = 0; k < n->n_out; k++) {
        out[k] = p->vals[n->out[k] >= 0 ? n->out[k] : 0];
        if (n->out[k] < 0) out[k].data = NULL;
    }
    bd_cuda_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .host_in = host_in,
                        .stream = cs->s, .cudnn = cs->dnn, .cublas = cs->blas, .workspace = cs->ws,
                        .workspace_size = cs->ws_size, .cache = &np->cache[li], .allow_tf32 = c->s->allow_tf32, .err = e,
                        .notes = c->s->notes, .device = c->s->device, .tune = c->s->tune};
    braid_status st = bd_cuda_node_launch(c->s, p, li, pool, c->base + p->plan.n_streams - 1, &k);
    if (st) bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type);
    return st;
}

/* Enqueues a nested plan on the node's stream, as cuda_plan.c enqueues a
 * plan: nodes in index order, each stream's waits before its launch and its
 * records after; the other streams forked off the node's and joined back. */
static braid_status nested_run(void *ctx, bd_prepared *p, const bd_tensor *inputs, bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_ctx *c = ctx;
    nested_plan *np = p->bstate;
    const bd_plan *pl = &p->plan;
    const bd_graph *g = p->g;
    int S = pl->n_streams;
    int *cur = bd_malloc(((size_t)S + 1) * sizeof *cur);
    bd_tensor *in = bd_calloc((size_t)np->max_in + 1, sizeof *in), *host_in = bd_calloc((size_t)np->max_in + 1, sizeof *host_in);
    bd_tensor *out = bd_calloc((size_t)np->max_out + 1, sizeof *out);
    BD_CHECK_ALLOC(e, cur && in && host_in && out);
    for (int i = 0; i < g->n_inputs; i++) p->vals[g->inputs[i]].data = inputs[i].data;
    if (S < 1 || !p->n_live) goto fail;
    cudaStream_t s0 = c->s->streams[c->stream].s;
    BD_CUDA_TRY(e, cudaEventRecord(np->fork[0], s0));
    for (int t = 1; t < S; t++) BD_CUDA_TRY(e, cudaStreamWaitEvent(c->s->streams[pool_of(c, t)].s, np->fork[0], 0));
    for (int t = 0; t < S; t++) cur[t] = pl->stream_start[t];
    for (int i = 0; i < p->n_live; i++) {
        int t = pl->node_stream[i], end = pl->stream_start[t + 1];
        cudaStream_t cs = c->s->streams[pool_of(c, t)].s;
        for (; cur[t] < end && pl->cmds[cur[t]].kind == BD_CMD_WAIT; cur[t]++)
            BD_CUDA_TRY(e, cudaStreamWaitEvent(cs, np->ev[pl->cmds[cur[t]].arg], 0));
        if (cur[t] >= end || pl->cmds[cur[t]].kind != BD_CMD_LAUNCH || pl->cmds[cur[t]].arg != i) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "the plan launches nodes out of order on stream %d (expected node %d)", t, i);
            goto fail;
        }
        cur[t]++;
        BD_TRY(nested_launch(c, p, i, in, host_in, out, e));
        for (; cur[t] < end && pl->cmds[cur[t]].kind == BD_CMD_RECORD; cur[t]++)
            BD_CUDA_TRY(e, cudaEventRecord(np->ev[pl->cmds[cur[t]].arg], cs));
    }
    for (int t = 1; t < S; t++) {
        BD_CUDA_TRY(e, cudaEventRecord(np->fork[t], c->s->streams[pool_of(c, t)].s));
        BD_CUDA_TRY(e, cudaStreamWaitEvent(s0, np->fork[t], 0));
    }
fail:
    bd_free(cur);
    bd_free(in);
    bd_free(host_in);
    bd_free(out);
    return st;
}

/* ---- the hook of the enqueue walk -------------------------------------------------------- */

braid_status bd_cuda_node_launch(cuda_state *s, bd_prepared *p, int li, int pool_stream, int pool_end,
                                 bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    unsigned flags = bd_op_table[n->op].flags;
    /* A value an earlier stage's kernel allocated (a Loop's scan output) may
     * move from one run to the next: a captured graph must not keep its address. */
    int moves = 0;
    for (int q = 0; q < n->n_in && !moves; q++)
        for (int x = 0; n->in[q] >= 0 && (p->inst.vflag[n->in[q]] & BD_IV_EXTERNAL) && x < p->n_ext; x++)
            if (p->ext[x] == n->in[q] && (p->ext_from[x]->inst.vflag[n->in[q]] & BD_IV_ALLOC)) moves = 1;
    int host = bd_cuda_host_node(n, &p->inst);
    if ((flags & (BD_OPF_SUBGRAPHS | BD_OPF_DATA_SHAPE)) || moves || host) {
        enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        BD_CUDA_TRY(k->err, cudaStreamIsCapturing(k->stream, &cap));
        if (cap != cudaStreamCaptureStatusNone) {
            st = BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "a node whose work depends on values read on the host, "
                         "that runs on the host, or that reads memory allocated while running, cannot be captured "
                         "in a CUDA graph");
            goto fail;
        }
    }
    if (host) {
        BD_TRY(bd_cuda_host_launch(s, k));
    } else if (!(flags & BD_OPF_SUBGRAPHS)) {
        bd_cuda_dev_node_begin(k, pool_stream);
        BD_TRY(bd_cuda_dev_node_end(k, bd_cuda_run(k)));
    } else {
        nest_ctx *c = *k->cache;
        if (!c) {
            c = bd_calloc(1, sizeof *c);
            BD_CHECK_ALLOC(k->err, c);
            *c = (nest_ctx){.s = s, .stream = pool_stream, .base = pool_end};
            *k->cache = c; /* freed with the plan's caches (bd_cuda_control_free) */
        }
        bd_nest_ops ops = {.runner = {.ctx = c, .prepare = nested_prepare, .release = nested_release,
                                      .node_note = bd_cuda_node_note,
                                      .run = nested_run, .read = nest_read},
                           .copy2d = nest_copy2d, .write = nest_write, .alloc = nest_alloc, .free = nest_free,
                           .sync_note = "a synchronization of the node's stream"};
        bd_nest_call call = {.node = n, .in = k->in, .host_in = k->host_in, .out = k->out, .opts = &p->opts,
                             .pool = &s->strings};
        BD_TRY(bd_nest_run(&p->nest[li], &ops, &call, k->err));
    }
    for (int q = 0; q < n->n_out; q++) /* shapes only the run knew, for later stages */
        if (n->out[q] >= 0 && (p->inst.vflag[n->out[q]] & BD_IV_RUNTIME)) p->actual[n->out[q]] = k->out[q];
    return BRAID_OK;
fail:
    return st;
}
