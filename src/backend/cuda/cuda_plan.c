/* cuda_plan.c: the CUDA backend's plan half: a plan's arena and folded
 * constants on the device, its input and output buffers in the session's I/O
 * mode (common/io.h: staged, mapped or managed), one event per plan event,
 * and the run: the inputs to the device, every stream's commands enqueued in
 * node order (a wait is always enqueued after the record it waits on), the
 * streams joined into stream 0, the outputs to the host, one synchronization;
 * or, with cuda_graph, that enqueue captured once as a CUDA graph and
 * replayed. A capture that fails is reported (graph_info, a note), never
 * dropped silently; under BRAID_CUDA_SYNC every node is synchronized and a
 * fault names it (fault.c). Every run is also timed on the device, between
 * two events on stream 0 (graph_info's device_ms): what `braid bench`
 * compares plans by, free of the host's copies. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "runtime/notes.h"
#include "ops/conv.h"

typedef struct cuda_plan {
    void *arena;          /* plan.arena_size bytes: every intermediate */
    void *consts;         /* plan-time constants that are not initializers (folded) */
    void **in_dev;        /* per graph input: a device buffer (inputs in ordinary memory, staged
                           * inputs, and every input of a captured graph, whose pointers are fixed) */
    size_t *in_bytes;
    void **out_dev;       /* per graph output: where the kernels write it: staged, a device buffer
                           * copied to out_data after the run; mapped, out_data's device mapping;
                           * managed, out_data itself */
    unsigned char *out_run; /* per graph output: 1 when a kernel of the plan writes it */
    int io;               /* the I/O mode the buffers were made in */
    int no_discard;       /* managed: the discard call failed once; plain prefetches since */
    cudaEvent_t *ev;      /* per plan event */
    cudaEvent_t *fork;    /* per stream: [0] forks the other streams off stream 0, [s] joins s back */
    void **cache;         /* per live node: the family's cache slot */
    int n_ev, n_fork;
    int max_in, max_out;
    cudaGraph_t graph;    /* cuda_graph: the captured run */
    cudaGraphExec_t exec;
    int no_graph;         /* capturing failed (or cannot be done): this plan runs uncaptured */
    char graph_err[512];  /* why */
    long replays, uncaptured; /* runs of each kind */
    cudaEvent_t *prof;    /* profile: base, then start and end per live node (timing events) */
    int n_prof;
    cudaEvent_t timed[2]; /* device time: on stream 0 once the inputs are on the device, and before
                           * the outputs go back (timing events) */
    double device_ms;     /* the last run's time between them; < 0: not timed */
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
        for (int i = 0; i < 2; i++)
            if (cp->timed[i]) bd_cu_event_destroy(s, cp->timed[i]);
        if (cp->in_dev)
            for (int i = 0; i < g->n_inputs; i++) bd_cu_free(s, cp->in_dev[i]);
        if (cp->out_dev && cp->io == BD_IO_STAGED)
            for (int o = 0; o < g->n_outputs; o++) bd_cu_free(s, cp->out_dev[o]);
        bd_cu_free(s, cp->arena);
        bd_cu_free(s, cp->consts);
        bd_free(cp->in_dev);
        bd_free(cp->in_bytes);
        bd_free(cp->out_dev);
        bd_free(cp->out_run);
        bd_free(cp->ev);
        bd_free(cp->fork);
        bd_free(cp->prof);
        bd_free(cp->cache);
        bd_free(cp);
    }
    int kind = cp && cp->io == BD_IO_MANAGED ? BD_MEM_MANAGED : BD_MEM_PINNED;
    for (int o = 0; o < g->n_outputs; o++) {
        bd_cu_free_kind(s, p->out_data[o], kind);
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

/* Input and output buffers in the session's I/O mode: a device buffer per
 * input; per output, the host-visible buffer the caller reads (pinned, or
 * managed: never more managed memory than the device has free) and where the
 * kernels write it. */
static braid_status alloc_io(cuda_state *s, cuda_plan *cp, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    for (int i = 0; i < g->n_inputs; i++) {
        BD_TRY(bd_tensor_nbytes(&p->inst.vals[g->inputs[i]], &cp->in_bytes[i], e));
        BD_TRY(bd_cu_malloc(s, &cp->in_dev[i], cp->in_bytes[i], e));
    }
    if (cp->io == BD_IO_MANAGED) {
        size_t need = 0, free_b = 0, total_b = 0;
        for (int o = 0; o < g->n_outputs; o++) need += align_up(p->out_bytes[o] ? p->out_bytes[o] : 1);
        BD_CUDA_TRY(e, cudaMemGetInfo(&free_b, &total_b));
        if (need > free_b) {
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "the model's outputs need %.1f MiB of host-shared (managed) "
                         "memory but CUDA device %d has only %.1f MiB free of %.1f MiB", (double)need / 1048576.0,
                         s->device, (double)free_b / 1048576.0, (double)total_b / 1048576.0);
            goto fail;
        }
    }
    for (int o = 0; o < g->n_outputs; o++) {
        size_t nb = p->out_bytes[o];
        if (cp->io == BD_IO_MANAGED) {
            BD_TRY(bd_cu_malloc_managed(s, &p->out_data[o], nb, e));
            cp->out_dev[o] = p->out_data[o];
            continue;
        }
        BD_TRY(bd_cu_malloc_pinned(s, &p->out_data[o], nb, e));
        if (cp->io == BD_IO_STAGED) BD_TRY(bd_cu_malloc(s, &cp->out_dev[o], nb, e));
        else BD_CUDA_TRY(e, cudaHostGetDevicePointer(&cp->out_dev[o], p->out_data[o], 0));
    }
    return BRAID_OK;
fail:
    return st;
}

/* Every tensor cuDNN will see fits its limits: refused here, naming the
 * node, before any cuDNN call. */
static braid_status check_limits(const bd_prepared *p, bd_err *e)
{
    for (int i = 0; i < p->n_live; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        if ((n->op != BD_OP_Conv && n->op != BD_OP_ConvTranspose) || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0)
            continue;
        const bd_tensor *y = n->n_out > 0 && n->out[0] >= 0 ? &p->inst.vals[n->out[0]] : NULL;
        braid_status st = bd_cudnn_conv_limits(n, &p->inst.vals[n->in[0]], &p->inst.vals[n->in[1]], y, e);
        if (st) {
            bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type);
            return st;
        }
    }
    return BRAID_OK;
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
    cp->io = s->io;
    cp->device_ms = -1;
    BD_TRY(check_limits(p, e));
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    BD_TRY(bd_cu_pool_grow(s, S, e));
    cp->in_dev = bd_calloc((size_t)g->n_inputs + 1, sizeof *cp->in_dev);
    cp->in_bytes = bd_calloc((size_t)g->n_inputs + 1, sizeof *cp->in_bytes);
    cp->out_dev = bd_calloc((size_t)g->n_outputs + 1, sizeof *cp->out_dev);
    cp->out_run = bd_calloc((size_t)g->n_outputs + 1, 1);
    cp->ev = bd_calloc((size_t)p->plan.n_events + 1, sizeof *cp->ev);
    cp->fork = bd_calloc((size_t)S + 1, sizeof *cp->fork);
    cp->cache = bd_calloc((size_t)p->n_live + 1, sizeof *cp->cache);
    BD_CHECK_ALLOC(e, cp->in_dev && cp->in_bytes && cp->out_dev && cp->out_run && cp->ev && cp->fork && cp->cache);

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
        if (p->val_out[v] >= 0 && p->inst.vals[v].data == NULL && !(g->values[v].flags & BD_VAL_INPUT)) {
            p->vals[v].data = cp->out_dev[p->val_out[v]];
            cp->out_run[p->val_out[v]] = 1;
        }

    for (int i = 0; i < p->plan.n_events; i++, cp->n_ev++) BD_TRY(bd_cu_event_create(s, &cp->ev[i], 0, e));
    for (int i = 0; i < S; i++, cp->n_fork++) BD_TRY(bd_cu_event_create(s, &cp->fork[i], 0, e));
    for (int i = 0; i < 2; i++) BD_TRY(bd_cu_event_create(s, &cp->timed[i], 1, e));
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
    int capturing;            /* the walk is being captured into a CUDA graph */
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

static braid_status record(cudaEvent_t ev, cudaStream_t s, bd_err *e)
{
    braid_status st = BRAID_OK;
    BD_CUDA_TRY(e, cudaEventRecord(ev, s));
    return BRAID_OK;
fail:
    return st;
}

/* One node: its launcher between bd_cu_fault_begin and _end (fault.c). A
 * failure is prefixed with the node, its op and its stream, unless it is an
 * asynchronous error from earlier work, which blames no node. */
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
                        .allow_tf32 = w->s->allow_tf32, .err = e, .notes = w->s->notes, .device = w->s->device,
                        .tune = w->s->tune};
    int async = 0;
    bd_cu_fault_begin(cs->s, w->s->sync, w->capturing);
    st = bd_cu_fault_peek(e); /* an error left by earlier work is not this node's */
    if (!st && w->profile) st = record(w->cp->prof[1 + 2 * li], cs->s, e);
    if (!st) st = bd_cuda_node_launch(w->s, p, li, stream, p->plan.n_streams, &k);
    if (!st && w->profile) st = record(w->cp->prof[2 + 2 * li], cs->s, e);
    bd_err later = {0};
    braid_status end = bd_cu_fault_end(st ? &later : e, &async);
    if (!st) st = end;
    if (st) {
        char pre[400];
        if (async && !w->s->sync) bd_cu_earlier_prefix(pre, sizeof pre, n->name, n->op_type, stream);
        else bd_cu_node_prefix(pre, sizeof pre, n->name, n->op_type, stream);
        bd_err_prefix(e, "%s", pre);
    }
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
 * uncaptured run, so that every kernel's cache (tuned algorithms, scratch) is
 * already made: nothing may allocate or synchronize while capturing. The
 * graph reads the plan's own input buffers (in_dev): a run copies its inputs
 * there before replaying it. */
static braid_status capture(walk *w, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_plan *cp = w->cp;
    cudaStream_t s0 = w->s->streams[0].s;
    cudaGraph_t graph = NULL;
    const bd_graph *g = w->p->g;
    for (int i = 0; i < g->n_inputs; i++) w->p->vals[g->inputs[i]].data = cp->in_dev[i];
    /* Thread-local: a capture in Global mode makes every other thread's unsafe
     * call (another session's cudaMalloc, cudaMemcpy, ...) fail while it lasts. */
    BD_CUDA_TRY(e, cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    w->capturing = 1;
    st = enqueue(w, e);
    w->capturing = 0;
    if (st) /* join every forked stream back, or EndCapture fails as unjoined and they stay capturing */
        for (int t = 1; t < w->p->plan.n_streams; t++) {
            cudaEventRecord(cp->fork[t], w->s->streams[t].s);
            cudaStreamWaitEvent(s0, cp->fork[t], 0);
        }
    cudaError_t ce = cudaStreamEndCapture(s0, &graph);
    if (graph) BD_CU_COUNT(w->s, graphs, 1);
    if (st) goto fail;
    if (ce != cudaSuccess) {
        st = BD_FAIL(e, BRAID_ERR_DEVICE, "cudaStreamEndCapture: %s", cudaGetErrorString(ce));
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

#if CUDART_VERSION >= 13000
static struct cudaMemLocation where(const cuda_state *s, int to_host)
{
    struct cudaMemLocation loc;
    memset(&loc, 0, sizeof loc);
    loc.type = to_host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    loc.id = to_host ? 0 : s->device;
    return loc;
}
#endif

static braid_status prefetch(cuda_state *s, void *ptr, size_t n, int to_host, cudaStream_t stream, bd_err *e)
{
    braid_status st = BRAID_OK;
    if (!s->concurrent_managed || !n) return BRAID_OK;
#if CUDART_VERSION >= 13000
    BD_CUDA_TRY(e, cudaMemPrefetchAsync(ptr, n, where(s, to_host), 0, stream));
#else
    BD_CUDA_TRY(e, cudaMemPrefetchAsync(ptr, n, to_host ? cudaCpuDeviceId : s->device, stream));
#endif
    return BRAID_OK;
fail:
    return st;
}

/* Managed outputs before a run: the last run's contents are dropped and the
 * pages mapped on the device, so that the kernels' writes neither fault nor
 * bring the stale bytes back. Where the discard call is missing or refused,
 * a plain prefetch (which moves the stale bytes), and a note says so. */
static braid_status outputs_to_device(cuda_state *s, cuda_plan *cp, bd_prepared *p, cudaStream_t s0, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
#if CUDART_VERSION >= 13000
    if (!cp->no_discard) {
        void *ptr[64];
        size_t size[64], n = 0, first = 0;
        struct cudaMemLocation loc = where(s, 0);
        for (int o = 0; o <= g->n_outputs; o++) {
            if (o < g->n_outputs && cp->out_run[o] && p->out_bytes[o]) {
                ptr[n] = p->out_data[o];
                size[n++] = p->out_bytes[o];
            }
            if (n && (n == 64 || o == g->n_outputs)) {
                cudaError_t ce = cudaMemDiscardAndPrefetchBatchAsync(ptr, size, n, &loc, &first, 1, 0, s0);
                n = 0;
                if (ce == cudaSuccess) continue;
                if (bd_cu_sticky(ce)) {
                    st = bd_cu_fail_cuda(e, "cudaMemDiscardAndPrefetchBatchAsync", ce, __FILE__, __LINE__);
                    goto fail;
                }
                cudaGetLastError();
                cp->no_discard = 1;
                bd_notes_add(s->notes, BD_CUDA_IO_ENV "=managed: cudaMemDiscardAndPrefetchBatchAsync failed (%s): "
                             "outputs are prefetched to the device with their stale contents instead",
                             cudaGetErrorString(ce));
                break;
            }
        }
        if (!cp->no_discard) return BRAID_OK;
    }
#endif
    for (int o = 0; o < g->n_outputs; o++)
        if (cp->out_run[o]) BD_TRY(prefetch(s, p->out_data[o], p->out_bytes[o], 0, s0, e));
    return BRAID_OK;
fail:
    return st;
}

/* The run's device time in ms, between the events around the plan's work on
 * stream 0 (every other stream forks from and joins back into it there).
 * Staged, it holds no copy; mapped and managed, the kernels' own accesses of
 * host-shared memory fall inside it. -1 when CUDA cannot say. */
static double device_time(cuda_plan *cp)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, cp->timed[0], cp->timed[1]) != cudaSuccess) {
        cudaGetLastError();
        return -1;
    }
    return ms;
}

static void collect_profile(cuda_state *s, bd_prepared *p, double host_base)
{
    cuda_plan *cp = p->bstate;
    (void)s;
    for (int i = 0; i < p->n_live; i++) {
        float a = 0, b = 0;
        if (cudaEventElapsedTime(&a, cp->prof[0], cp->prof[1 + 2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&b, cp->prof[0], cp->prof[2 + 2 * i]) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        bd_trace_add(p, p->plan.node_stream[i], p->live[i], 0, host_base + a * 1e-3, host_base + b * 1e-3);
    }
}

/* The inputs onto the device, on stream 0, before the fork (or the graph)
 * that every other stream waits on. An input in one of the session's
 * host-shared buffers costs at most one DMA: staged, a pinned copy into the
 * plan's device buffer; mapped, none (the kernels read it in place);
 * managed, a prefetch that leaves the host's copy valid. A captured graph
 * reads the plan's device buffers, so it gets the copy in every mode. Any
 * other input is copied from ordinary (pageable) memory. */
static braid_status inputs_in(cuda_state *s, cuda_plan *cp, bd_prepared *p, const bd_tensor *inputs,
                              cudaStream_t s0, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    for (int i = 0; i < g->n_inputs; i++) {
        void *src = inputs[i].data, *use = cp->in_dev[i];
        size_t nb = cp->in_bytes[i];
        const struct shared_buf *sb = nb ? bd_cu_shared_find(s, src, nb) : NULL;
        if (!nb) {
            /* nothing to move */
        } else if (sb && !cp->exec && s->io == BD_IO_MAPPED && sb->kind == BD_MEM_PINNED && sb->dev) {
            use = (char *)sb->dev + ((const char *)src - (const char *)sb->p);
        } else if (sb && !cp->exec && s->io == BD_IO_MANAGED && sb->kind == BD_MEM_MANAGED) {
            BD_TRY(prefetch(s, src, nb, 0, s0, e));
            use = src;
        } else {
            cudaError_t ce = cudaMemcpyAsync(use, src, nb, cudaMemcpyDefault, s0);
            if (ce != cudaSuccess) {
                st = bd_cu_fail_cuda(e, "cudaMemcpyAsync", ce, __FILE__, __LINE__);
                bd_err_prefix(e, "copying input '%s' to the device: ", g->values[g->inputs[i]].name);
                goto fail;
            }
        }
        p->vals[g->inputs[i]].data = use;
    }
    return BRAID_OK;
fail:
    return st;
}

/* The outputs to the host, on stream 0 after the join: staged, one pinned
 * copy each; managed, a prefetch; mapped, nothing (the kernels wrote them). */
static braid_status outputs_out(cuda_state *s, cuda_plan *cp, bd_prepared *p, cudaStream_t s0, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    for (int o = 0; o < g->n_outputs; o++) {
        if (!cp->out_run[o] || !p->out_bytes[o]) continue;
        if (cp->io == BD_IO_STAGED)
            BD_CUDA_TRY(e, cudaMemcpyAsync(p->out_data[o], cp->out_dev[o], p->out_bytes[o], cudaMemcpyDeviceToHost, s0));
        else if (cp->io == BD_IO_MANAGED)
            BD_TRY(prefetch(s, p->out_data[o], p->out_bytes[o], 1, s0, e));
    }
    return BRAID_OK;
fail:
    return st;
}

/* The end of a run: one synchronization of stream 0. An error there is
 * asynchronous: without BRAID_CUDA_SYNC no node can be named, and the
 * message says how to find it. */
static braid_status finish(cuda_state *s, cudaStream_t s0, bd_err *e)
{
    cudaError_t ce = cudaStreamSynchronize(s0);
    if (ce == cudaSuccess) return BRAID_OK;
    cudaGetLastError();
    if (s->sync)
        return BD_FAIL(e, BRAID_ERR_DEVICE, "cudaStreamSynchronize at the end of the run (after every node "
                       "completed under " BD_CUDA_SYNC_ENV "=1: the input or output copies): %s",
                       cudaGetErrorString(ce));
    char msg[700];
    bd_cu_async_text(msg, sizeof msg, "cudaStreamSynchronize", cudaGetErrorString(ce), bd_cu_sticky(ce));
    return BD_FAIL(e, BRAID_ERR_DEVICE, "%s", msg);
}

static void input_shapes(const bd_prepared *p, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->g->n_inputs && o + 1 < n; i++) {
        char sh[160];
        o += (size_t)snprintf(buf + o, n - o, "%s%s %s", i ? ", " : "", p->g->values[p->g->inputs[i]].name,
                              bd_shape_str(&p->inst.vals[p->g->inputs[i]], sh, sizeof sh));
    }
}

/* After the first run of a graph-mode plan (which filled every cache):
 * capture, or say why not. */
static void try_capture(walk *w)
{
    cuda_state *s = w->s;
    cuda_plan *cp = w->cp;
    char shapes[300];
    input_shapes(w->p, shapes, sizeof shapes);
    if (s->sync) {
        cp->no_graph = 1;
        snprintf(cp->graph_err, sizeof cp->graph_err, BD_CUDA_SYNC_ENV "=1 synchronizes after every launch, "
                 "which a CUDA graph cannot hold: runs go node by node");
        bd_notes_add(s->notes, "CUDA graph not captured: %s", cp->graph_err);
        return;
    }
    bd_err ce = {0};
    w->profile = 0;
    if (capture(w, &ce) != BRAID_OK) {
        cp->no_graph = 1;
        snprintf(cp->graph_err, sizeof cp->graph_err, "%s", ce.msg);
        bd_notes_add(s->notes, "CUDA graph: capturing the plan for inputs %s failed, so its runs go node by node: %s",
                     shapes, ce.msg);
        drain(s);
    }
}

braid_status bd_cuda_plan_run(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_state *s = state;
    cuda_plan *cp = p->bstate;
    int S = p->plan.n_streams;
    walk w = {.s = s, .p = p, .cp = cp};
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    if (!p->prev) bd_cuda_host_reset(s); /* a top-level run starts: the last one's host values go */
    if (S < 1) return BRAID_OK; /* nothing to run: every output is a constant or an input */
    cudaStream_t s0 = s->streams[0].s;
    {
        cudaError_t pending = cudaPeekAtLastError();
        if (bd_cu_sticky(pending)) {
            st = BD_FAIL(e, BRAID_ERR_DEVICE, "an asynchronous CUDA error from earlier work is pending before the "
                         "run (%s); rerun with " BD_CUDA_SYNC_ENV "=1 to find the node that caused it. The CUDA "
                         "context is unusable: restart the process", cudaGetErrorString(pending));
            goto fail;
        }
    }
    w.cur = bd_malloc((size_t)S * sizeof *w.cur);
    w.in = bd_calloc((size_t)cp->max_in + 1, sizeof *w.in);
    w.host_in = bd_calloc((size_t)cp->max_in + 1, sizeof *w.host_in);
    w.out = bd_calloc((size_t)cp->max_out + 1, sizeof *w.out);
    BD_CHECK_ALLOC(e, w.cur && w.in && w.host_in && w.out);
    BD_TRY(inputs_in(s, cp, p, inputs, s0, e));
    if (cp->io == BD_IO_MANAGED) BD_TRY(outputs_to_device(s, cp, p, s0, e));
    w.profile = s->profile && !cp->exec && cp->n_prof;
    double host_base = bd_now();
    cp->device_ms = -1;
    BD_CUDA_TRY(e, cudaEventRecord(cp->timed[0], s0));
    if (cp->exec) {
        BD_CUDA_TRY(e, cudaGraphLaunch(cp->exec, s0));
        cp->replays++;
    } else {
        BD_TRY(enqueue(&w, e));
        cp->uncaptured++;
    }
    BD_CUDA_TRY(e, cudaEventRecord(cp->timed[1], s0));
    BD_TRY(outputs_out(s, cp, p, s0, e));
    BD_TRY(finish(s, s0, e));
    cp->device_ms = device_time(cp);
    if (w.profile) collect_profile(s, p, host_base);
    if (s->cuda_graph && !cp->exec && !cp->no_graph) try_capture(&w);
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

void bd_cuda_plan_graph_info(void *state, const bd_prepared *p, bd_graph_report *r)
{
    (void)state;
    const cuda_plan *cp = p ? p->bstate : NULL;
    memset(r, 0, sizeof *r);
    r->error = "";
    r->device_ms = cp ? cp->device_ms : -1;
    if (!cp) return;
    r->captured = cp->exec != NULL;
    r->failed = cp->no_graph;
    r->replays = cp->replays;
    r->uncaptured = cp->uncaptured;
    r->error = cp->graph_err;
}
