/* cuda_plan.c: the CUDA backend's plan half: a plan's arena and folded
 * constants on the device, inputs and outputs in host-shared managed memory,
 * one event per plan event, and the run: enqueue every stream's commands in
 * node order (a wait is always enqueued after the record it waits on), join
 * the streams into stream 0 and synchronize; or, with cuda_graph, capture that
 * enqueue once as a CUDA graph and replay it. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"

typedef struct cuda_plan {
    void *arena;          /* plan.arena_size bytes: every intermediate */
    void *consts;         /* plan-time constants that are not initializers (folded) */
    void **in_buf;        /* per graph input: managed memory */
    size_t *in_bytes;
    cudaEvent_t *ev;      /* per plan event */
    cudaEvent_t *fork;    /* per stream: [0] forks the other streams off stream 0, [s] joins s back */
    void **cache;         /* per live node: the family's cache slot */
    int n_ev, n_fork;
    int max_in, max_out;
    cudaGraph_t graph;    /* cuda_graph: the captured run */
    cudaGraphExec_t exec;
    int no_graph;         /* capturing failed: this plan runs uncaptured */
    cudaEvent_t *prof;    /* profile: base, then start and end per live node (timing events) */
    int n_prof;
} cuda_plan;

/* ---- release and prepare ------------------------------------------------------------ */

void bd_cuda_plan_release(void *state, bd_prepared *p)
{
    cuda_state *s = state;
    cuda_plan *cp = p->bstate;
    const bd_graph *g = p->g;
    if (cp) {
        cudaSetDevice(s->device);
        for (int i = 0; i < s->n_streams; i++) cudaStreamSynchronize(s->streams[i].s);
        if (cp->exec) { cudaGraphExecDestroy(cp->exec); BD_CU_COUNT(s, graphs, -1); }
        if (cp->graph) { cudaGraphDestroy(cp->graph); BD_CU_COUNT(s, graphs, -1); }
        if (cp->cache)
            for (int i = 0; i < p->n_live; i++)
                if (cp->cache[i]) bd_cuda_free_cache(p->inst.node[p->live[i]], cp->cache[i]);
        for (int i = 0; i < cp->n_ev; i++) bd_cu_event_destroy(s, cp->ev[i]);
        for (int i = 0; i < cp->n_fork; i++) bd_cu_event_destroy(s, cp->fork[i]);
        for (int i = 0; i < cp->n_prof; i++) bd_cu_event_destroy(s, cp->prof[i]);
        if (cp->in_buf)
            for (int i = 0; i < g->n_inputs; i++) bd_cu_free(s, cp->in_buf[i]);
        bd_cu_free(s, cp->arena);
        bd_cu_free(s, cp->consts);
        bd_free(cp->in_buf);
        bd_free(cp->in_bytes);
        bd_free(cp->ev);
        bd_free(cp->fork);
        bd_free(cp->prof);
        bd_free(cp->cache);
        bd_free(cp);
    }
    for (int o = 0; o < g->n_outputs; o++) {
        bd_cu_free(s, p->out_data[o]);
        p->out_data[o] = NULL;
    }
    p->bstate = NULL;
}

static size_t align_up(size_t n) { return BD_CEIL_DIV(n, BD_PLAN_ALIGN) * BD_PLAN_ALIGN; }

/* Folded constants (known at plan time, not initializers): one allocation,
 * uploaded once per plan. */
static braid_status upload_consts(cuda_state *s, cuda_plan *cp, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    size_t total = 0, bytes;
    for (int v = 0; v < g->n_values; v++) {
        const bd_tensor *t = &p->inst.vals[v];
        if (!t->data || bd_cu_weight_off(s, v) != SIZE_MAX) continue;
        BD_TRY(bd_tensor_nbytes(t, &bytes, e));
        total += align_up(bytes);
    }
    if (!total) return BRAID_OK;
    BD_TRY(bd_cu_malloc(s, &cp->consts, total, e));
    size_t off = 0;
    for (int v = 0; v < g->n_values; v++) {
        const bd_tensor *t = &p->inst.vals[v];
        if (!t->data || bd_cu_weight_off(s, v) != SIZE_MAX) continue;
        BD_TRY(bd_tensor_nbytes(t, &bytes, e));
        if (bytes) BD_CUDA_TRY(e, cudaMemcpy((char *)cp->consts + off, t->data, bytes, cudaMemcpyHostToDevice));
        p->vals[v].data = (char *)cp->consts + off;
        off += align_up(bytes);
    }
    /* A cudaMemcpy from pageable memory may return before its DMA lands, and the
     * pool's non-blocking streams do not wait for the legacy stream it ran on. */
    BD_CUDA_TRY(e, cudaStreamSynchronize(cudaStreamLegacy));
    return BRAID_OK;
fail:
    return st;
}

/* Inputs and outputs: managed memory, never more than the device has free. */
static braid_status alloc_io(cuda_state *s, cuda_plan *cp, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    size_t need = 0, free_b = 0, total_b = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        BD_TRY(bd_tensor_nbytes(&p->inst.vals[g->inputs[i]], &cp->in_bytes[i], e));
        need += align_up(cp->in_bytes[i] ? cp->in_bytes[i] : 1);
    }
    for (int o = 0; o < g->n_outputs; o++) need += align_up(p->out_bytes[o] ? p->out_bytes[o] : 1);
    BD_CUDA_TRY(e, cudaMemGetInfo(&free_b, &total_b));
    if (need > free_b) {
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "the model's inputs and outputs need %.1f MiB of "
                     "host-shared (managed) memory but CUDA device %d has only %.1f MiB free of %.1f MiB",
                     (double)need / 1048576.0, s->device, (double)free_b / 1048576.0,
                     (double)total_b / 1048576.0);
        goto fail;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        BD_TRY(bd_cu_malloc_managed(s, &cp->in_buf[i], cp->in_bytes[i], e));
        p->vals[g->inputs[i]].data = cp->in_buf[i];
    }
    for (int o = 0; o < g->n_outputs; o++) BD_TRY(bd_cu_malloc_managed(s, &p->out_data[o], p->out_bytes[o], e));
    return BRAID_OK;
fail:
    return st;
}

braid_status bd_cuda_plan_prepare(void *state, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_state *s = state;
    const bd_graph *g = p->g;
    int S = p->plan.n_streams;
    cuda_plan *cp = bd_calloc(1, sizeof *cp);
    if (!cp) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    p->bstate = cp;
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    BD_TRY(bd_cu_pool_grow(s, S, e));
    cp->in_buf = bd_calloc((size_t)g->n_inputs + 1, sizeof *cp->in_buf);
    cp->in_bytes = bd_calloc((size_t)g->n_inputs + 1, sizeof *cp->in_bytes);
    cp->ev = bd_calloc((size_t)p->plan.n_events + 1, sizeof *cp->ev);
    cp->fork = bd_calloc((size_t)S + 1, sizeof *cp->fork);
    cp->cache = bd_calloc((size_t)p->n_live + 1, sizeof *cp->cache);
    BD_CHECK_ALLOC(e, cp->in_buf && cp->in_bytes && cp->ev && cp->fork && cp->cache);

    /* Constants: initializers live in the session's weights; folded values here. */
    for (int v = 0; v < g->n_values; v++)
        if (bd_cu_weight_off(s, v) != SIZE_MAX && p->inst.vals[v].data)
            p->vals[v].data = (char *)s->weights + s->weight_off[v];
    BD_TRY(upload_consts(s, cp, p, e));
    /* Intermediates in the arena. */
    if (p->plan.arena_size) BD_TRY(bd_cu_malloc(s, &cp->arena, p->plan.arena_size, e));
    for (int v = 0; v < g->n_values; v++)
        if (p->val_buf[v] >= 0) p->vals[v].data = (char *)cp->arena + p->plan.buf_offset[p->val_buf[v]];
    BD_TRY(alloc_io(s, cp, p, e));
    for (int v = 0; v < g->n_values; v++)
        if (p->val_out[v] >= 0 && p->inst.vals[v].data == NULL && !(g->values[v].flags & BD_VAL_INPUT))
            p->vals[v].data = p->out_data[p->val_out[v]];

    for (int i = 0; i < p->plan.n_events; i++, cp->n_ev++) BD_TRY(bd_cu_event_create(s, &cp->ev[i], 0, e));
    for (int i = 0; i < S; i++, cp->n_fork++) BD_TRY(bd_cu_event_create(s, &cp->fork[i], 0, e));
    if (s->profile) {
        cp->prof = bd_calloc(2 * (size_t)p->n_live + 1, sizeof *cp->prof);
        BD_CHECK_ALLOC(e, cp->prof);
        for (int i = 0; i < 2 * p->n_live + 1; i++, cp->n_prof++) BD_TRY(bd_cu_event_create(s, &cp->prof[i], 1, e));
    }
    for (int i = 0; i < p->n_live; i++) {
        cp->max_in = BD_MAX(cp->max_in, bd_node_slots(p->inst.node[p->live[i]]));
        cp->max_out = BD_MAX(cp->max_out, p->inst.node[p->live[i]]->n_out);
    }
    return BRAID_OK;
fail:
    bd_cuda_plan_release(state, p);
    return st;
}

/* ---- the enqueue walk ----------------------------------------------------------------- */

typedef struct walk {
    cuda_state *s;
    bd_prepared *p;
    cuda_plan *cp;
    int *cur;                 /* per stream: the next command */
    bd_tensor *in, *out, *host_in;
    int profile;
} walk;

static braid_status do_cmd(walk *w, int stream, const bd_cmd *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    cudaStream_t cs = w->s->streams[stream].s;
    if (c->kind == BD_CMD_RECORD) BD_CUDA_TRY(e, cudaEventRecord(w->cp->ev[c->arg], cs));
    else if (c->kind == BD_CMD_WAIT) BD_CUDA_TRY(e, cudaStreamWaitEvent(cs, w->cp->ev[c->arg], 0));
    return BRAID_OK;
fail:
    return st;
}

static braid_status launch(walk *w, int stream, int li, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_prepared *p = w->p;
    const cuda_stream *cs = &w->s->streams[stream];
    const bd_node *n = p->inst.node[p->live[li]];
    const cuda_plan *cp = p->bstate;
    for (int k = 0; k < cp->max_in; k++) { /* past n_in: omitted, as in shape inference */
        if (k >= n->n_in || n->in[k] < 0) {
            memset(&w->in[k], 0, sizeof w->in[k]);
            w->in[k].rank = -1;
            w->host_in[k] = w->in[k];
        } else {
            w->in[k] = p->vals[n->in[k]];
            w->host_in[k] = p->inst.vals[n->in[k]];
        }
    }
    for (int k = 0; k < n->n_out; k++) {
        w->out[k] = p->vals[n->out[k] >= 0 ? n->out[k] : 0];
        if (n->out[k] < 0) w->out[k].data = NULL; /* no kernel writes an omitted output */
    }
    bd_cuda_kernel k = {.node = n, .in = w->in, .n_in = n->n_in, .out = w->out, .n_out = n->n_out,
                        .host_in = w->host_in, .stream = cs->s, .cudnn = cs->dnn, .cublas = cs->blas,
                        .workspace = cs->ws, .workspace_size = cs->ws_size, .cache = &w->cp->cache[li],
                        .allow_tf32 = w->s->allow_tf32, .err = e};
    if (w->profile) BD_CUDA_TRY(e, cudaEventRecord(w->cp->prof[1 + 2 * li], cs->s));
    st = bd_cuda_node_launch(w->s, p, li, stream, p->plan.n_streams, &k);
    if (st) goto fail;
    if (w->profile) BD_CUDA_TRY(e, cudaEventRecord(w->cp->prof[2 + 2 * li], cs->s));
    return BRAID_OK;
fail:
    bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type);
    return st;
}

/* Enqueues the whole plan. Nodes go in increasing index; before node i on
 * stream s, the commands of s that precede it (its waits); after it, the
 * records that follow it. Every producer has a lower index than its
 * consumers, so each record is enqueued before any wait on it. Streams are
 * forked off stream 0 first and joined back into it last. */
static braid_status enqueue(walk *w, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_prepared *p = w->p;
    cuda_plan *cp = w->cp;
    const bd_plan *pl = &p->plan;
    int S = pl->n_streams;
    cudaStream_t s0 = w->s->streams[0].s;
    BD_CUDA_TRY(e, cudaEventRecord(cp->fork[0], s0));
    for (int t = 1; t < S; t++) BD_CUDA_TRY(e, cudaStreamWaitEvent(w->s->streams[t].s, cp->fork[0], 0));
    if (w->profile) BD_CUDA_TRY(e, cudaEventRecord(cp->prof[0], s0));
    for (int t = 0; t < S; t++) w->cur[t] = pl->stream_start[t];
    for (int i = 0; i < p->n_live; i++) {
        int t = pl->node_stream[i], end = pl->stream_start[t + 1];
        while (w->cur[t] < end && pl->cmds[w->cur[t]].kind != BD_CMD_LAUNCH)
            BD_TRY(do_cmd(w, t, &pl->cmds[w->cur[t]++], e));
        if (w->cur[t] >= end || pl->cmds[w->cur[t]].arg != i) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "the plan launches nodes out of order on stream %d "
                         "(expected node %d)", t, i);
            goto fail;
        }
        w->cur[t]++;
        BD_TRY(launch(w, t, i, e));
        while (w->cur[t] < end && pl->cmds[w->cur[t]].kind == BD_CMD_RECORD)
            BD_TRY(do_cmd(w, t, &pl->cmds[w->cur[t]++], e));
    }
    for (int t = 0; t < S; t++) /* trailing commands, if any */
        while (w->cur[t] < pl->stream_start[t + 1]) BD_TRY(do_cmd(w, t, &pl->cmds[w->cur[t]++], e));
    for (int t = 1; t < S; t++) {
        BD_CUDA_TRY(e, cudaEventRecord(cp->fork[t], w->s->streams[t].s));
        BD_CUDA_TRY(e, cudaStreamWaitEvent(s0, cp->fork[t], 0));
    }
    return BRAID_OK;
fail:
    return st;
}

/* After a failure: let every stream drain so that nothing runs on freed memory. */
static void drain(cuda_state *s)
{
    for (int i = 0; i < s->n_streams; i++) cudaStreamSynchronize(s->streams[i].s);
    cudaGetLastError();
}

/* Captures the enqueue of the whole plan as one CUDA graph. Run after an
 * uncaptured run, so that every kernel's cache (algorithms, scratch) is
 * already made: nothing may allocate or synchronize while capturing. */
static braid_status capture(walk *w, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_plan *cp = w->cp;
    cudaStream_t s0 = w->s->streams[0].s;
    cudaGraph_t graph = NULL;
    const bd_graph *g = w->p->g;
    for (int i = 0; i < g->n_inputs; i++) w->p->vals[g->inputs[i]].data = cp->in_buf[i];
    /* Thread-local: a capture in Global mode makes every other thread's unsafe
     * call (another session's cudaMalloc, cudaMemcpy, ...) fail while it lasts. */
    BD_CUDA_TRY(e, cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    st = enqueue(w, e);
    if (st) /* join every forked stream back, or EndCapture fails as unjoined and they stay capturing */
        for (int t = 1; t < w->p->plan.n_streams; t++) {
            cudaEventRecord(cp->fork[t], w->s->streams[t].s);
            cudaStreamWaitEvent(s0, cp->fork[t], 0);
        }
    cudaError_t ce = cudaStreamEndCapture(s0, &graph);
    if (graph) BD_CU_COUNT(w->s, graphs, 1);
    if (st) goto fail;
    if (ce != cudaSuccess) {
        st = BD_FAIL(e, BRAID_ERR_DEVICE, "capturing the run as a CUDA graph failed: %s", cudaGetErrorString(ce));
        goto fail;
    }
    BD_CUDA_TRY(e, cudaGraphInstantiateWithFlags(&cp->exec, graph, 0));
    BD_CU_COUNT(w->s, graphs, 1);
    cp->graph = graph;
    return BRAID_OK;
fail:
    if (graph) { cudaGraphDestroy(graph); BD_CU_COUNT(w->s, graphs, -1); }
    cp->exec = NULL;
    cudaGetLastError();
    return st;
}

static braid_status prefetch(cuda_state *s, void *ptr, size_t n, int to_host, cudaStream_t stream, bd_err *e)
{
    braid_status st = BRAID_OK;
    if (!s->concurrent_managed || !n) return BRAID_OK;
#if CUDART_VERSION >= 13000
    struct cudaMemLocation loc = {.type = to_host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                  .id = to_host ? 0 : s->device};
    BD_CUDA_TRY(e, cudaMemPrefetchAsync(ptr, n, loc, 0, stream));
#else
    BD_CUDA_TRY(e, cudaMemPrefetchAsync(ptr, n, to_host ? cudaCpuDeviceId : s->device, stream));
#endif
    return BRAID_OK;
fail:
    return st;
}

static void collect_profile(cuda_state *s, bd_prepared *p, double host_base)
{
    cuda_plan *cp = p->bstate;
    for (int i = 0; i < p->n_live; i++) {
        float a = 0, b = 0;
        if (cudaEventElapsedTime(&a, cp->prof[0], cp->prof[1 + 2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&b, cp->prof[0], cp->prof[2 + 2 * i]) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        bd_trace_add(p, p->plan.node_stream[i], p->live[i], host_base + a * 1e-3, host_base + b * 1e-3);
    }
}

braid_status bd_cuda_plan_run(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_state *s = state;
    cuda_plan *cp = p->bstate;
    const bd_graph *g = p->g;
    int S = p->plan.n_streams;
    walk w = {.s = s, .p = p, .cp = cp};
    if (S < 1) return BRAID_OK; /* nothing to run: every output is a constant or an input */
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    cudaStream_t s0 = s->streams[0].s;
    w.cur = bd_malloc((size_t)S * sizeof *w.cur);
    w.in = bd_calloc((size_t)cp->max_in + 1, sizeof *w.in);
    w.host_in = bd_calloc((size_t)cp->max_in + 1, sizeof *w.host_in);
    w.out = bd_calloc((size_t)cp->max_out + 1, sizeof *w.out);
    BD_CHECK_ALLOC(e, w.cur && w.in && w.host_in && w.out);
    /* Inputs. One in a host-shared buffer of the session is used where it is
     * (no copy), except by a captured graph, which reads the plan's own
     * buffers: it gets a device-side copy. Any other input is copied into the
     * plan's managed buffer on stream 0, before the fork (or the graph) that
     * every other stream waits on. */
    for (int i = 0; i < g->n_inputs; i++) {
        void *src = inputs[i].data, *use = cp->in_buf[i];
        size_t nb = cp->in_bytes[i];
        if (nb && bd_cu_is_shared(s, src, nb)) {
            if (!cp->exec) use = src;
            else if (src != use) BD_CUDA_TRY(e, cudaMemcpyAsync(use, src, nb, cudaMemcpyDefault, s0));
            BD_TRY(prefetch(s, use, nb, 0, s0, e));
        } else if (nb) {
            /* Host stores into managed pages that the last run moved to the device
             * would fault every page back; the copy engine writes them in place. */
            BD_TRY(prefetch(s, use, nb, 0, s0, e));
            BD_CUDA_TRY(e, cudaMemcpyAsync(use, src, nb, cudaMemcpyDefault, s0));
        }
        p->vals[g->inputs[i]].data = use;
    }
    /* Outputs back on the device before kernels write them (the last run moved
     * them to the host): one migration by the copy engine, not a fault per page. */
    for (int o = 0; o < g->n_outputs; o++) BD_TRY(prefetch(s, p->out_data[o], p->out_bytes[o], 0, s0, e));
    w.profile = s->profile && !cp->exec && cp->n_prof;
    double host_base = bd_now();
    if (cp->exec) BD_CUDA_TRY(e, cudaGraphLaunch(cp->exec, s0));
    else BD_TRY(enqueue(&w, e));
    for (int o = 0; o < g->n_outputs; o++) BD_TRY(prefetch(s, p->out_data[o], p->out_bytes[o], 1, s0, e));
    BD_CUDA_TRY(e, cudaStreamSynchronize(s0));
    if (w.profile) collect_profile(s, p, host_base);
    /* The first run of a graph-mode plan ran uncaptured and filled every cache;
     * capture now, and replay from the next run on. */
    if (s->cuda_graph && !cp->exec && !cp->no_graph) {
        bd_err ce = {0};
        w.profile = 0;
        /* A plan whose kernels cannot be captured keeps running uncaptured. */
        if (capture(&w, &ce) != BRAID_OK) { cp->no_graph = 1; drain(s); }
    }
    bd_free(w.cur);
    bd_free(w.in);
    bd_free(w.host_in);
    bd_free(w.out);
    return BRAID_OK;
fail:
    drain(s);
    bd_free(w.cur);
    bd_free(w.in);
    bd_free(w.host_in);
    bd_free(w.out);
    return st;
}
