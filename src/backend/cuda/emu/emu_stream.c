/* emu_stream.c: streams and their operations. Each stream is a queue that
 * its own worker thread runs in order; an operation's clock, its checks and
 * its fake duration are settled when it is enqueued (under the emulator's
 * lock), its effect (a copy, a memset, a node's CPU stand-in, an event
 * completing) happens when its worker reaches it, after an optional random
 * delay (BRAID_CUDA_EMULATOR_DELAY=seed) that shakes out missing waits the
 * checker cannot see. The legacy stream orders itself with blocking streams
 * (never with non-blocking ones), as CUDA documents. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/cuda/emu/emu.h"

emu_op *emu_op_new(int kind, const char *what)
{
    emu_op *op = calloc(1, sizeof *op);
    if (!op) return NULL;
    op->kind = kind;
    op->height = 1;
    snprintf(op->what, sizeof op->what, "%s", what ? what : "");
    return op;
}

void emu_rec_put(emu_rec *r)
{
    if (r && --r->refs == 0) free(r);
}

void emu_op_free(emu_op *op)
{
    if (!op) return;
    free(op->staged);
    emu_rec_put(op->rec);
    if (op->standin) emu_standin_free(op->standin);
    free(op->acc);
    free(op);
}

const char *emu_stream_name(const emu_stream *s, char *buf, size_t n)
{
    if (!s || s->legacy) snprintf(buf, n, "the legacy stream");
    else if (s->label[0]) snprintf(buf, n, "%s", s->label);
    else snprintf(buf, n, "CUDA stream #%d", s->id);
    return buf;
}

void emu_rec_wait(emu_rec *r)
{
    while (!r->done) pthread_cond_wait(&emu.done_cv, &emu.mu);
}

/* ---- the worker ---------------------------------------------------------------------- */

static void run_op(emu_stream *s, emu_op *op)
{
    switch (op->kind) {
    case EMU_OP_COPY: {
        char *d = emu_work_ptr(op->dst);
        const char *src = op->staged ? (const char *)op->staged : emu_work_ptr(op->src);
        size_t sp = op->staged ? op->width : op->spitch;
        for (size_t r = 0; r < op->height; r++) memmove(d + r * op->dpitch, src + r * sp, op->width);
        break;
    }
    case EMU_OP_SET: {
        char *d = emu_work_ptr(op->dst);
        for (size_t r = 0; r < op->height; r++) memset(d + r * op->dpitch, op->value, op->width);
        break;
    }
    case EMU_OP_STANDIN: {
        char err[480];
        if (emu_standin_run(op->standin, err, sizeof err)) {
            emu_lock();
            if (!s->pending) {
                s->pending = EMU_ERR_REPORT;
                snprintf(s->pending_text, sizeof s->pending_text, "%s: the CPU kernel that stands in for it "
                         "failed: %s", op->what, err);
            }
            emu_report("%s: the CPU kernel that stands in for it failed: %s", op->what, err);
            emu_unlock();
        }
        break;
    }
    case EMU_OP_FAULT:
        emu_lock();
        if (!emu.sticky) {
            emu.sticky = op->fault;
            snprintf(emu.sticky_text, sizeof emu.sticky_text, "%s", op->what);
            fprintf(stderr, "braid CUDA emulator: an asynchronous fault: %s\n", op->what);
        }
        emu_unlock();
        break;
    default:
        break;
    }
}

static void *worker(void *arg)
{
    emu_stream *s = arg;
    emu_lock();
    for (;;) {
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &emu.mu);
        if (!s->head) break;
        emu_op *op = s->head;
        if (op->kind == EMU_OP_WAIT) emu_rec_wait(op->rec);
        if (op->kind == EMU_OP_WAITSEQ)
            while (op->other->done_seq < op->other_seq && op->other->queued) pthread_cond_wait(&emu.done_cv, &emu.mu);
        int delay = emu.delay_max_us ? (int)(rand_r(&s->rng) % (unsigned)emu.delay_max_us) : 0;
        emu_unlock();
        if (delay) usleep((useconds_t)delay);
        if (!emu.sticky) run_op(s, op); /* after a fault the device does nothing more */
        emu_lock();
        if (op->kind == EMU_OP_RECORD) op->rec->done = 1;
        s->head = op->next;
        if (!s->head) s->tail = NULL;
        s->done_seq = op->seq;
        s->queued--;
        pthread_cond_broadcast(&emu.done_cv);
        emu_op_free(op);
    }
    emu_unlock();
    return NULL;
}

/* ---- streams ------------------------------------------------------------------------- */

static int lane_take(void)
{
    const emu_vc *h = emu_host_vc();
    int fresh = -1;
    for (int l = 1; l < EMU_LANES; l++) {
        if (emu.lane_used[l]) continue;
        /* A lane whose last stream the host has synchronized past: its new
         * stream's work really is ordered after the old one's. */
        if (emu.lane_seq[l] && h->c[l] >= emu.lane_seq[l]) return l;
        if (!emu.lane_seq[l] && fresh < 0) fresh = l;
    }
    return fresh;
}

emu_stream *emu_stream_new(unsigned flags)
{
    int lane = lane_take();
    if (lane < 0) {
        emu_report("more than %d streams are alive or were destroyed without a synchronization: the checker has "
                   "no lane left for another", EMU_LANES - 1);
        return NULL;
    }
    if (emu.n_streams == emu.cap_streams) {
        int cap = emu.cap_streams ? 2 * emu.cap_streams : 16;
        emu_stream **t = realloc(emu.streams, (size_t)cap * sizeof *t);
        if (!t) return NULL;
        emu.streams = t;
        emu.cap_streams = cap;
    }
    emu_stream *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->id = ++emu.next_stream_id;
    s->lane = lane;
    s->flags = flags;
    s->vc = *emu_host_vc();
    s->last_seq = s->done_seq = emu.lane_seq[lane];
    s->rng = emu.delay_seed ^ (unsigned)s->id * 2654435761u;
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->thread, NULL, worker, s) != 0) {
        free(s);
        return NULL;
    }
    s->has_thread = 1;
    emu.lane_used[lane] = 1;
    emu.streams[emu.n_streams++] = s;
    return s;
}

void emu_stream_destroy(emu_stream *s)
{
    /* CUDA lets the work finish; here it finishes before the stream goes. */
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    emu_unlock();
    pthread_join(s->thread, NULL);
    emu_lock();
    for (int i = 0; i < emu.n_streams; i++)
        if (emu.streams[i] == s) {
            emu.streams[i] = emu.streams[--emu.n_streams];
            break;
        }
    emu.lane_used[s->lane] = 0;
    free(s->deps);
    pthread_cond_destroy(&s->cv);
    free(s);
}

emu_stream *emu_stream_get(cudaStream_t h)
{
    if (h == NULL || h == cudaStreamLegacy) return emu.legacy;
    for (int i = 0; i < emu.n_streams; i++)
        if ((cudaStream_t)emu.streams[i] == h) return emu.streams[i];
    return NULL;
}

int emu_stream_idle(const emu_stream *s) { return s->queued == 0; }

/* ---- enqueue ------------------------------------------------------------------------- */

static void push(emu_stream *s, emu_op *op)
{
    op->next = NULL;
    if (s->tail) s->tail->next = op;
    else s->head = op;
    s->tail = op;
    s->queued++;
    pthread_cond_signal(&s->cv);
}

/* An implicit wait of s on other's work so far (the legacy stream's rule). */
static void implicit_wait(emu_stream *s, emu_stream *other, emu_vc *vc)
{
    if (other == s || other->queued == 0) {
        emu_vc_join(vc, &other->vc);
        return;
    }
    emu_op *w = emu_op_new(EMU_OP_WAITSEQ, "an implicit wait of the legacy stream");
    if (!w) return;
    w->other = other;
    w->other_seq = other->last_seq;
    w->seq = s->last_seq; /* completes nothing of its own */
    emu_vc_join(vc, &other->vc);
    push(s, w);
}

cudaError_t emu_enqueue(emu_stream *s, emu_op *op, const emu_access *acc, int n_acc, double cost_ms)
{
    op->cost = cost_ms;
    if (s->cap) return emu_capture_op(s, op, acc, n_acc);
    emu_vc vc = s->vc;
    emu_vc_join(&vc, emu_host_vc());
    int blocking = !(s->flags & cudaStreamNonBlocking);
    if (s->legacy) {
        for (int i = 0; i < emu.n_streams; i++)
            if (!emu.streams[i]->legacy && !(emu.streams[i]->flags & cudaStreamNonBlocking))
                implicit_wait(s, emu.streams[i], &vc);
    } else if (blocking) {
        implicit_wait(s, emu.legacy, &vc);
    }
    if (op->kind == EMU_OP_WAIT) {
        emu_vc_join(&vc, &op->rec->vc);
        if (op->rec->t > s->t) s->t = op->rec->t;
    }
    uint32_t seq = ++emu.lane_seq[s->lane];
    vc.c[s->lane] = seq;
    op->id = ++emu.next_op_id;
    op->seq = seq;
    char name[80], what[sizeof op->what];
    snprintf(what, sizeof what, "%s", op->what);
    snprintf(op->what, sizeof op->what, "%s on %s", what, emu_stream_name(s, name, sizeof name));
    emu_oprec_put(op->id, s->lane, seq, op->what);
    if (emu.trace) {
        fprintf(stderr, "braid CUDA emulator: trace: #%llu %s", (unsigned long long)op->id, op->what);
        for (int k = 0; k < n_acc; k++)
            fprintf(stderr, "%s %s %p+%zu", k ? "," : ";", acc[k].write ? "writes" : "reads", (void *)acc[k].addr,
                    acc[k].n);
        fprintf(stderr, "\n");
    }
    int bad = -1, rc = emu_check(op->id, s->lane, seq, &vc, acc, n_acc, &bad);
    if (bad >= 0 && op->kind != EMU_OP_COPY && op->kind != EMU_OP_SET) {
        /* On a GPU: an illegal address when the work runs, sticky. */
        char where[200];
        emu_describe(acc[bad].addr, where, sizeof where);
        char text[sizeof op->what];
        snprintf(text, sizeof text, "%s %s %zu bytes at %p (%s): an illegal memory access", op->what,
                 acc[bad].write ? "writes" : "reads", acc[bad].n, (void *)acc[bad].addr, where);
        snprintf(op->what, sizeof op->what, "%s", text);
        if (op->standin) { emu_standin_free(op->standin); op->standin = NULL; }
        op->kind = EMU_OP_FAULT;
        op->fault = cudaErrorIllegalAddress;
    }
    s->t += cost_ms;
    op->t = s->t;
    if (op->kind == EMU_OP_RECORD) {
        op->rec->vc = vc;
        op->rec->t = s->t;
    }
    s->vc = vc;
    s->last_seq = seq;
    push(s, op);
    for (int k = 0; k < n_acc; k++) { /* pinned and managed memory: close what queued work may use */
        emu_alloc *a = emu_alloc_find(acc[k].addr);
        if (a && a->kind != EMU_MEM_DEVICE) emu_mem_protect(a);
    }
    return rc ? EMU_ERR_REPORT : cudaSuccess;
}

/* ---- synchronization ------------------------------------------------------------------ */

static cudaError_t take_pending(emu_stream *s)
{
    cudaError_t e = s->pending;
    if (e) {
        emu_report("%s", s->pending_text); /* the host thread's text for cudaGetErrorString */
        emu.reports--;                     /* counted once, by the worker */
        s->pending = cudaSuccess;
    }
    return e;
}

cudaError_t emu_stream_sync(emu_stream *s)
{
    emu_vc snap = s->vc;
    uint32_t target = s->last_seq;
    while (s->queued && s->done_seq < target) pthread_cond_wait(&emu.done_cv, &emu.mu);
    emu_vc_join(emu_host_vc(), &snap);
    emu_mem_reprotect_all();
    if (emu.sticky) return emu.sticky;
    return take_pending(s);
}

cudaError_t emu_device_sync(void)
{
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < emu.n_streams; i++) {
        cudaError_t x = emu_stream_sync(emu.streams[i]);
        if (x && !e) e = x;
    }
    return e;
}
