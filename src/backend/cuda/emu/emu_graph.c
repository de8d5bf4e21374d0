/* emu_graph.c: stream capture and CUDA graphs, with CUDA's rules. A capture
 * begins on an origin stream; other streams join it by waiting on an event
 * recorded in it, and must be joined back into the origin before the
 * capture ends (else cudaErrorStreamCaptureUnjoined). While a stream
 * captures, its work goes into the graph instead of running; synchronizing
 * or querying it, waiting on uncaptured work, copying pageable memory, and
 * (in the capturing thread, or any thread under a global-mode capture)
 * allocating or synchronizing fail and invalidate the capture. A graph's
 * executable replays the captured operations on private streams, one per
 * captured stream, with events where the graph's edges cross them, forked
 * from and joined back to the launch stream: the checker sees exactly the
 * graph's ordering. Launches of one executable follow each other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/emu/emu.h"

typedef struct emu_gnode {
    emu_op *op;            /* the template, copied at each replay */
    emu_access *acc;
    int n_acc;
    int chain;             /* the captured stream it came from */
    int index;
    struct emu_gnode **deps;
    int n_deps;
    int needs_rec;         /* a node of another chain depends on it */
} emu_gnode;

typedef struct emu_capture {
    emu_stream *origin;
    enum cudaStreamCaptureMode mode;
    pthread_t thread;
    int invalid;
    emu_gnode **nodes;
    int n, cap;
    emu_stream **members;  /* the origin first */
    int n_members, cap_members;
} emu_capture;

struct CUgraph_st {
    emu_gnode **nodes;
    int n, n_chains;
};

struct CUgraphExec_st {
    struct CUgraph_st g;
    emu_stream **lanes;    /* one per chain */
};

static _Thread_local emu_capture *my_cap; /* the capture this thread began, if any */
static _Thread_local int my_strict, my_global;

static void gnode_free(emu_gnode *g)
{
    if (!g) return;
    emu_op_free(g->op);
    free(g->acc);
    free(g->deps);
    free(g);
}

static int member_index(emu_capture *c, emu_stream *s)
{
    for (int i = 0; i < c->n_members; i++)
        if (c->members[i] == s) return i;
    if (c->n_members == c->cap_members) {
        int cap = c->cap_members ? 2 * c->cap_members : 4;
        emu_stream **t = realloc(c->members, (size_t)cap * sizeof *t);
        if (!t) return -1;
        c->members = t;
        c->cap_members = cap;
    }
    c->members[c->n_members] = s;
    return c->n_members++;
}

static int set_deps(emu_stream *s, emu_gnode *const *d, int n)
{
    if (n > s->cap_deps) {
        emu_gnode **t = realloc(s->deps, (size_t)n * sizeof *t);
        if (!t) return -1;
        s->deps = t;
        s->cap_deps = n;
    }
    if (n) memcpy(s->deps, d, (size_t)n * sizeof *d);
    s->n_deps = n;
    return 0;
}

int emu_capture_forbids_unsafe(void)
{
    return my_strict > 0 || emu.capturing_global > my_global;
}

void emu_capture_invalidate(emu_stream *s)
{
    emu_capture *c = s ? s->cap : my_cap;
    if (c) c->invalid = 1;
}

cudaError_t emu_capture_op(emu_stream *s, emu_op *op, const emu_access *acc, int n_acc)
{
    emu_capture *c = s->cap;
    if (c->invalid) {
        emu_op_free(op);
        return cudaErrorStreamCaptureInvalidated;
    }
    emu_gnode *g = calloc(1, sizeof *g);
    if (!g || (n_acc && !(g->acc = malloc((size_t)n_acc * sizeof *acc))) ||
        (s->n_deps && !(g->deps = malloc((size_t)s->n_deps * sizeof *g->deps)))) {
        gnode_free(g);
        emu_op_free(op);
        c->invalid = 1;
        return cudaErrorMemoryAllocation;
    }
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 32;
        emu_gnode **t = realloc(c->nodes, (size_t)cap * sizeof *t);
        if (!t) { gnode_free(g); emu_op_free(op); c->invalid = 1; return cudaErrorMemoryAllocation; }
        c->nodes = t;
        c->cap = cap;
    }
    g->op = op;
    if (n_acc) memcpy(g->acc, acc, (size_t)n_acc * sizeof *acc);
    g->n_acc = n_acc;
    g->chain = member_index(c, s);
    g->index = c->n;
    if (s->n_deps) memcpy(g->deps, s->deps, (size_t)s->n_deps * sizeof *g->deps);
    g->n_deps = s->n_deps;
    c->nodes[c->n++] = g;
    set_deps(s, &g, 1);
    return cudaSuccess;
}

cudaError_t emu_capture_wait(emu_stream *s, emu_event *ev)
{
    if (!ev->cap) { /* a capturing stream waits on work outside the capture */
        if (!ev->rec) return cudaSuccess;
        emu_capture_invalidate(s);
        return cudaErrorStreamCaptureIsolation;
    }
    if (ev->cap->invalid) return cudaErrorStreamCaptureInvalidated;
    if (s->cap && s->cap != ev->cap) {
        emu_capture_invalidate(s);
        return cudaErrorStreamCaptureMerge;
    }
    if (!s->cap) { /* s joins the capture, forked from the event's point */
        if (s->legacy) return cudaErrorStreamCaptureImplicit;
        s->cap = ev->cap;
        s->cap_origin = 0;
        if (member_index(ev->cap, s) < 0 || set_deps(s, ev->deps, ev->n_deps)) return cudaErrorMemoryAllocation;
        return cudaSuccess;
    }
    for (int i = 0; i < ev->n_deps; i++) { /* union */
        int have = 0;
        for (int j = 0; j < s->n_deps && !have; j++) have = s->deps[j] == ev->deps[i];
        if (have) continue;
        emu_gnode **t = s->n_deps + 1 > s->cap_deps ? realloc(s->deps, (size_t)(s->n_deps + 1) * sizeof *t) : s->deps;
        if (!t) return cudaErrorMemoryAllocation;
        if (s->n_deps + 1 > s->cap_deps) s->cap_deps = s->n_deps + 1;
        s->deps = t;
        s->deps[s->n_deps++] = ev->deps[i];
    }
    return cudaSuccess;
}

/* ---- begin, end ------------------------------------------------------------------------- */

cudaError_t cudaStreamBeginCapture(cudaStream_t h, enum cudaStreamCaptureMode mode)
{
    cudaError_t e = emu_enter("cudaStreamBeginCapture", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    emu_capture *c = NULL;
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (s->legacy) e = cudaErrorStreamCaptureUnsupported;
    else if (s->cap) e = cudaErrorIllegalState;
    else if (!(c = calloc(1, sizeof *c)) || member_index(c, s) < 0) e = cudaErrorMemoryAllocation;
    else {
        c->origin = s;
        c->mode = mode;
        c->thread = pthread_self();
        s->cap = c;
        s->cap_origin = 1;
        s->n_deps = 0;
        if (mode != cudaStreamCaptureModeRelaxed) my_strict++;
        if (mode == cudaStreamCaptureModeGlobal) { my_global++; emu.capturing_global++; }
        my_cap = c;
        c = NULL;
    }
    if (c) { free(c->members); free(c); }
    emu_unlock();
    return emu_err(e);
}

/* Marks every node an ancestor of (or in) set d. */
static void mark(emu_gnode *const *d, int n, unsigned char *seen)
{
    for (int i = 0; i < n; i++)
        if (!seen[d[i]->index]) {
            seen[d[i]->index] = 1;
            mark(d[i]->deps, d[i]->n_deps, seen);
        }
}

static void capture_end(emu_capture *c)
{
    for (int i = 0; i < c->n_members; i++) {
        c->members[i]->cap = NULL;
        c->members[i]->n_deps = 0;
    }
    if (c->mode != cudaStreamCaptureModeRelaxed) my_strict--;
    if (c->mode == cudaStreamCaptureModeGlobal) { my_global--; emu.capturing_global--; }
    if (my_cap == c) my_cap = NULL;
    free(c->members);
}

cudaError_t cudaStreamEndCapture(cudaStream_t h, cudaGraph_t *out)
{
    cudaError_t e = emu_enter("cudaStreamEndCapture", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!out) return emu_err(cudaErrorInvalidValue);
    *out = NULL;
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    emu_capture *c = s ? s->cap : NULL;
    if (!s) { emu_unlock(); return emu_err(cudaErrorInvalidResourceHandle); }
    if (!c) { emu_unlock(); return emu_err(cudaErrorIllegalState); }
    if (!s->cap_origin) { emu_unlock(); return emu_err(cudaErrorStreamCaptureUnmatched); }
    if (c->mode != cudaStreamCaptureModeRelaxed && !pthread_equal(c->thread, pthread_self())) {
        emu_unlock();
        return emu_err(cudaErrorStreamCaptureWrongThread);
    }
    if (!c->invalid) { /* every other stream's last work must lead into the origin's */
        unsigned char *seen = calloc((size_t)c->n + 1, 1);
        if (!seen) e = cudaErrorMemoryAllocation;
        else {
            mark(s->deps, s->n_deps, seen);
            for (int m = 1; m < c->n_members && !e; m++)
                for (int i = 0; i < c->members[m]->n_deps; i++)
                    if (!seen[c->members[m]->deps[i]->index]) e = cudaErrorStreamCaptureUnjoined;
            free(seen);
        }
    } else {
        e = cudaErrorStreamCaptureInvalidated;
    }
    struct CUgraph_st *g = NULL;
    if (!e && !(g = calloc(1, sizeof *g))) e = cudaErrorMemoryAllocation;
    if (!e) {
        g->nodes = c->nodes;
        g->n = c->n;
        g->n_chains = c->n_members;
        c->nodes = NULL;
        emu.live_graphs++;
    }
    for (int i = 0; c->nodes && i < c->n; i++) gnode_free(c->nodes[i]);
    free(c->nodes);
    emu_events_forget_capture(c);
    capture_end(c);
    free(c);
    emu_unlock();
    *out = g;
    return emu_err(e);
}

cudaError_t cudaStreamIsCapturing(cudaStream_t h, enum cudaStreamCaptureStatus *st)
{
    cudaError_t e = emu_enter("cudaStreamIsCapturing", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!st) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (!s->cap) *st = cudaStreamCaptureStatusNone;
    else *st = s->cap->invalid ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
    emu_unlock();
    return emu_err(e);
}

/* ---- graphs ------------------------------------------------------------------------------ */

static void graph_free_nodes(struct CUgraph_st *g)
{
    for (int i = 0; i < g->n; i++) gnode_free(g->nodes[i]);
    free(g->nodes);
    g->nodes = NULL;
    g->n = 0;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    cudaError_t e = emu_enter("cudaGraphDestroy", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!g) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    graph_free_nodes(g);
    free(g);
    emu.live_graphs--;
    emu_unlock();
    return cudaSuccess;
}

static emu_gnode *gnode_copy(const emu_gnode *x)
{
    emu_gnode *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    *g = *x;
    g->op = emu_op_new(x->op->kind, x->op->what);
    g->acc = x->n_acc ? malloc((size_t)x->n_acc * sizeof *g->acc) : NULL;
    g->deps = x->n_deps ? malloc((size_t)x->n_deps * sizeof *g->deps) : NULL;
    if (!g->op || (x->n_acc && !g->acc) || (x->n_deps && !g->deps)) { gnode_free(g); return NULL; }
    emu_op *o = g->op;
    *o = *x->op;
    o->next = NULL;
    o->staged = NULL;
    o->rec = NULL;
    o->acc = NULL;
    o->standin = x->op->standin ? emu_standin_copy(x->op->standin) : NULL;
    if (x->op->standin && !o->standin) { gnode_free(g); return NULL; }
    if (x->n_acc) memcpy(g->acc, x->acc, (size_t)x->n_acc * sizeof *g->acc);
    return g;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *out, cudaGraph_t g, unsigned long long flags)
{
    cudaError_t e = emu_enter("cudaGraphInstantiateWithFlags", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!out || !g || flags) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x || !(x->g.nodes = calloc((size_t)g->n + 1, sizeof *x->g.nodes)) ||
        !(x->lanes = calloc((size_t)g->n_chains + 1, sizeof *x->lanes)))
        e = cudaErrorMemoryAllocation;
    for (int i = 0; !e && i < g->n; i++) { /* a deep copy, with deps pointing into it */
        if (!(x->g.nodes[i] = gnode_copy(g->nodes[i]))) e = cudaErrorMemoryAllocation;
        else {
            x->g.n++;
            for (int d = 0; d < g->nodes[i]->n_deps; d++) {
                emu_gnode *dep = x->g.nodes[g->nodes[i]->deps[d]->index];
                x->g.nodes[i]->deps[d] = dep;
                if (dep->chain != x->g.nodes[i]->chain) dep->needs_rec = 1;
            }
        }
    }
    if (x) x->g.n_chains = g->n_chains;
    for (int c = 0; !e && c < g->n_chains; c++) {
        if (!(x->lanes[c] = emu_stream_new(cudaStreamNonBlocking))) e = cudaErrorMemoryAllocation;
        else snprintf(x->lanes[c]->label, sizeof x->lanes[c]->label, "graph stream %d (of captured stream %d)", c, c);
    }
    if (e && x) {
        for (int c = 0; x->lanes && c < x->g.n_chains; c++)
            if (x->lanes[c]) emu_stream_destroy(x->lanes[c]);
        graph_free_nodes(&x->g);
        free(x->lanes);
        free(x);
        x = NULL;
    }
    if (x) emu.live_graphs++;
    emu_unlock();
    *out = x;
    return emu_err(e);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x)
{
    cudaError_t e = emu_enter("cudaGraphExecDestroy", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!x) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    for (int c = 0; c < x->g.n_chains; c++) emu_stream_destroy(x->lanes[c]);
    graph_free_nodes(&x->g);
    free(x->lanes);
    free(x);
    emu.live_graphs--;
    emu_unlock();
    return cudaSuccess;
}

/* A record of s's position now, for waits of other streams. */
static emu_rec *mark_rec(emu_stream *s, cudaError_t *e)
{
    emu_rec *r = calloc(1, sizeof *r);
    emu_op *op = emu_op_new(EMU_OP_RECORD, "graph launch: a fork or join point");
    if (!r || !op) { free(r); emu_op_free(op); *e = cudaErrorMemoryAllocation; return NULL; }
    r->refs = 2;
    op->rec = r;
    cudaError_t x = emu_enqueue(s, op, NULL, 0, 0);
    if (x && !*e) *e = x;
    return r;
}

static void wait_rec(emu_stream *s, emu_rec *r, cudaError_t *e)
{
    emu_op *op = emu_op_new(EMU_OP_WAIT, "graph launch: a wait on a graph edge");
    if (!op) { *e = cudaErrorMemoryAllocation; return; }
    op->rec = r;
    r->refs++;
    cudaError_t x = emu_enqueue(s, op, NULL, 0, 0);
    if (x && !*e) *e = x;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t h)
{
    cudaError_t e = emu_enter("cudaGraphLaunch", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!x) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    if (!s) { emu_unlock(); return emu_err(cudaErrorInvalidResourceHandle); }
    if (s->cap) { /* a graph launched into a capture becomes a node: not modelled */
        emu_capture_invalidate(s);
        emu_unlock();
        return emu_err(cudaErrorStreamCaptureUnsupported);
    }
    emu_rec **recs = calloc((size_t)x->g.n + 1, sizeof *recs);
    if (!recs) { emu_unlock(); return emu_err(cudaErrorMemoryAllocation); }
    emu_rec *fork = mark_rec(s, &e);
    for (int c = 0; fork && c < x->g.n_chains; c++) wait_rec(x->lanes[c], fork, &e);
    for (int i = 0; i < x->g.n && !e; i++) {
        emu_gnode *g = x->g.nodes[i];
        emu_stream *lane = x->lanes[g->chain];
        for (int d = 0; d < g->n_deps; d++)
            if (g->deps[d]->chain != g->chain && recs[g->deps[d]->index]) wait_rec(lane, recs[g->deps[d]->index], &e);
        emu_gnode *copy = gnode_copy(g);
        if (!copy) { e = cudaErrorMemoryAllocation; break; }
        emu_op *op = copy->op;
        copy->op = NULL;
        char what[sizeof op->what];
        snprintf(what, sizeof what, "graph replay: %s", op->what);
        snprintf(op->what, sizeof op->what, "%s", what);
        cudaError_t r = emu_enqueue(lane, op, copy->acc, copy->n_acc, op->cost);
        if (r && !e) e = r;
        gnode_free(copy);
        if (g->needs_rec) recs[i] = mark_rec(lane, &e);
    }
    for (int c = 0; c < x->g.n_chains; c++) {
        emu_rec *j = mark_rec(x->lanes[c], &e);
        if (j) { wait_rec(s, j, &e); emu_rec_put(j); }
    }
    for (int i = 0; i < x->g.n; i++) emu_rec_put(recs[i]);
    emu_rec_put(fork);
    free(recs);
    emu_unlock();
    return emu_err(e);
}
