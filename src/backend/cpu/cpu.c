/* cpu.c: the CPU backend. Each plan stream runs on its own worker thread
 * (stream 0 on the caller's; the others are started once per plan and park
 * between runs); an event is a generation counter guarded by a mutex and a
 * condition variable: RECORD stores the run's generation and wakes waiters,
 * WAIT sleeps until the event holds this run's generation. A failing kernel
 * aborts the run: every waiter wakes up and every stream stops, so an error
 * never deadlocks.
 *
 * The thread budget (--threads) is shared by the streams that have work at
 * the moment: a kernel's bd_parallel_for calls run on budget / (streams not
 * waiting on an event and not finished) threads, read when a call starts
 * and again between its grains (bd_parallel_set_share), so helpers join a
 * long kernel as soon as the other streams go idle. So a stream that idles while
 * another waits for it leaves the cores to the one that runs, and a plan
 * whose side stream is busy only for a branch (the reverse half of a
 * bidirectional LSTM) costs the rest of the graph no threads. Results do not
 * depend on the thread count, so this changes no bits. */
#include <cblas.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "util/strpool.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

typedef struct cpu_state {
    int threads;
    int profile;
    bd_strpool strings; /* what string kernels made; reset when a top-level run starts */
} cpu_state;

typedef struct worker {
    struct bd_prepared *p;
    struct cpu_state *s;
    int stream;
    pthread_t tid;
} worker;

typedef struct cpu_plan {
    void *arena_base;  /* bd_malloc'ed, arena is aligned inside it */
    long *event_gen;   /* per event: the generation of the run that recorded it */
    long gen;          /* the current run; also what parked workers wait for */
    int abort;
    bd_err err;        /* the first failure of the run */
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* events */
    pthread_cond_t go_cv;   /* parked workers wait for a new gen */
    pthread_cond_t done_cv; /* the caller waits for the workers to finish */
    int done, quit;
    worker *w;              /* n_streams workers; w[0] is the caller's */
    int n_started;          /* worker threads running (streams 1..n_started) */
    int busy;               /* streams running a node now (atomic): they share the thread budget */
    int busy0;              /* streams whose first command is not a wait: busy when a run starts */
    int *wait_ev;           /* per stream (under mu): the event it sleeps on, -1 none, -2 woken by its
                             * record and counted busy by the recorder (so the next node it
                             * launches already counts in the share of the recorder's) */
    int max_in, max_out;
} cpu_plan;

static void *run_stream(void *arg);

static braid_status cpu_open(const bd_graph *g, const bd_exec_opts *o, void **state, bd_err *e)
{
    cpu_state *s = bd_calloc(1, sizeof *s);
    if (!s) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    s->threads = o->threads > 0 ? o->threads : (int)(ncpu > 0 ? ncpu : 1);
    s->profile = o->profile;
    bd_strpool_init(&s->strings);
    openblas_set_num_threads(1);
    *state = s;
    return BRAID_OK;
}

static void cpu_close(void *state)
{
    cpu_state *s = state;
    if (s) bd_strpool_destroy(&s->strings);
    bd_free(state);
}

static void *align_up(void *p, size_t a) { return (void *)(((uintptr_t)p + a - 1) & ~(uintptr_t)(a - 1)); }

static void cpu_release(void *state, bd_prepared *p)
{
    cpu_plan *cp = p->bstate;
    if (cp) {
        pthread_mutex_lock(&cp->mu);
        cp->quit = 1;
        pthread_cond_broadcast(&cp->go_cv);
        pthread_mutex_unlock(&cp->mu);
        for (int t = 1; t <= cp->n_started; t++) pthread_join(cp->w[t].tid, NULL);
        pthread_mutex_destroy(&cp->mu);
        pthread_cond_destroy(&cp->cv);
        pthread_cond_destroy(&cp->go_cv);
        pthread_cond_destroy(&cp->done_cv);
        bd_free(cp->w);
        bd_free(cp->wait_ev);
        bd_free(cp->arena_base);
        bd_free(cp->event_gen);
        bd_free(cp);
    }
    for (int o = 0; o < p->g->n_outputs; o++) { bd_free(p->out_data[o]); p->out_data[o] = NULL; }
    p->bstate = NULL;
}

/* A parked stream thread: runs its stream once per new generation. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    cpu_plan *cp = w->p->bstate;
    long seen = 0;
    for (;;) {
        pthread_mutex_lock(&cp->mu);
        while (cp->gen == seen && !cp->quit) pthread_cond_wait(&cp->go_cv, &cp->mu);
        int quit = cp->quit;
        seen = cp->gen;
        pthread_mutex_unlock(&cp->mu);
        if (quit) return NULL;
        run_stream(w);
        pthread_mutex_lock(&cp->mu);
        cp->done++;
        pthread_cond_signal(&cp->done_cv);
        pthread_mutex_unlock(&cp->mu);
    }
}

static braid_status cpu_prepare(void *state, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    cpu_plan *cp = bd_calloc(1, sizeof *cp);
    if (!cp) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    p->bstate = cp;
    pthread_mutex_init(&cp->mu, NULL);
    pthread_cond_init(&cp->cv, NULL);
    pthread_cond_init(&cp->go_cv, NULL);
    pthread_cond_init(&cp->done_cv, NULL);
    cp->arena_base = bd_malloc(p->plan.arena_size + BD_PLAN_ALIGN);
    cp->event_gen = bd_calloc((size_t)p->plan.n_events + 1, sizeof(long));
    BD_CHECK_ALLOC(e, cp->arena_base && cp->event_gen);
    char *arena = align_up(cp->arena_base, BD_PLAN_ALIGN);
    for (int v = 0; v < g->n_values; v++)
        if (p->val_buf[v] >= 0) p->vals[v].data = arena + p->plan.buf_offset[p->val_buf[v]];
    for (int o = 0; o < g->n_outputs; o++) {
        p->out_data[o] = bd_malloc(p->out_bytes[o]);
        BD_CHECK_ALLOC(e, p->out_data[o]);
    }
    for (int v = 0; v < g->n_values; v++)
        if (p->val_out[v] >= 0 && p->inst.vals[v].data == NULL && !(g->values[v].flags & BD_VAL_INPUT))
            p->vals[v].data = p->out_data[p->val_out[v]];
    for (int i = 0; i < p->n_live; i++) {
        cp->max_in = BD_MAX(cp->max_in, bd_node_slots(p->inst.node[p->live[i]]));
        cp->max_out = BD_MAX(cp->max_out, p->inst.node[p->live[i]]->n_out);
    }
    /* Stream threads, started once; intra-op threads share the cores with them. */
    int S = BD_MAX(p->plan.n_streams, 1);
    cpu_state *s = state;
    cp->w = bd_calloc((size_t)S, sizeof *cp->w);
    cp->wait_ev = bd_malloc((size_t)S * sizeof *cp->wait_ev);
    BD_CHECK_ALLOC(e, cp->w && cp->wait_ev);
    for (int t = 0; t < S; t++) {
        cp->w[t] = (worker){.p = p, .s = s, .stream = t};
        cp->wait_ev[t] = -1;
        int c0 = p->plan.stream_start[t];
        cp->busy0 += c0 >= p->plan.stream_start[t + 1] || p->plan.cmds[c0].kind != BD_CMD_WAIT;
    }
    for (int t = 1; t < S; t++) {
        if (pthread_create(&cp->w[t].tid, NULL, worker_main, &cp->w[t]) != 0) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "cannot start the thread of stream %d", t);
            goto fail;
        }
        cp->n_started = t;
    }
    return BRAID_OK;
fail:
    cpu_release(state, p);
    return st;
}

static void run_abort(cpu_plan *cp, const bd_err *err)
{
    pthread_mutex_lock(&cp->mu);
    if (!cp->abort) {
        cp->abort = 1;
        cp->err = *err;
    }
    pthread_cond_broadcast(&cp->cv);
    pthread_mutex_unlock(&cp->mu);
}

static void *run_stream(void *arg)
{
    worker *w = arg;
    bd_prepared *p = w->p;
    cpu_plan *cp = p->bstate;
    bd_err err = {0};
    const int c_first = p->plan.stream_start[w->stream], c_end = p->plan.stream_start[w->stream + 1];
    int busy = c_first < c_end && p->plan.cmds[c_first].kind != BD_CMD_WAIT; /* counted in cp->busy */
    bd_parallel_share outer = bd_parallel_set_share((bd_parallel_share){&cp->busy, w->s->threads});
    bd_tensor *in = bd_calloc((size_t)cp->max_in + 1, sizeof *in);
    bd_tensor *out = bd_calloc((size_t)cp->max_out + 1, sizeof *out);
    if (!in || !out) {
        BD_FAIL(&err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        run_abort(cp, &err);
        goto done;
    }
    for (int c = c_first; c < c_end; c++) {
        const bd_cmd *cmd = &p->plan.cmds[c];
        if (cmd->kind == BD_CMD_LAUNCH) {
            if (__atomic_load_n(&cp->abort, __ATOMIC_ACQUIRE)) break;
            int ni = p->live[cmd->arg];
            const bd_node *n = p->inst.node[ni];
            for (int k = 0; k < cp->max_in; k++) { /* past n_in: omitted, as in shape inference */
                if (k >= n->n_in || n->in[k] < 0) { memset(&in[k], 0, sizeof in[k]); in[k].rank = -1; }
                else in[k] = p->vals[n->in[k]];
            }
            for (int k = 0; k < n->n_out; k++) out[k] = p->vals[n->out[k] >= 0 ? n->out[k] : 0];
            /* An omitted optional output still needs memory: none of braid's
             * kernels write such outputs, so they get a NULL pointer. */
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k] < 0) out[k].data = NULL;
            if (!busy) { /* a stream with no wait before its first launch */
                __atomic_add_fetch(&cp->busy, 1, __ATOMIC_RELAXED);
                busy = 1;
            }
            /* The kernel may split its work for the whole budget; its
             * bd_parallel_for calls run on the share (the profile records
             * the share at launch). */
            int sharing = BD_MAX(1, __atomic_load_n(&cp->busy, __ATOMIC_RELAXED));
            int share = BD_MAX(1, w->s->threads / sharing);
            bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out,
                           .threads = w->s->threads, .err = &err, .plan = p, .live_index = cmd->arg, .backend = w->s,
                           .strings = &w->s->strings};
            double t0 = w->s->profile ? bd_now() : 0;
            if (bd_cpu_run(&k) != BRAID_OK) {
                bd_err_prefix(&err, "node '%s' (%s): ", n->name, n->op_type);
                run_abort(cp, &err);
                break;
            }
            /* Outputs whose shape only the run knows: what the kernel made of
             * them, for later stages and the caller (read after the run). */
            for (int q = 0; q < n->n_out; q++)
                if (n->out[q] >= 0 && (p->inst.vflag[n->out[q]] & BD_IV_RUNTIME)) p->actual[n->out[q]] = out[q];
            if (w->s->profile) {
                double t1 = bd_now();
                pthread_mutex_lock(&cp->mu);
                bd_trace_add(p, w->stream, ni, share, t0, t1);
                pthread_mutex_unlock(&cp->mu);
            }
        } else if (cmd->kind == BD_CMD_RECORD) {
            pthread_mutex_lock(&cp->mu);
            cp->event_gen[cmd->arg] = cp->gen;
            for (int t = 0; t < p->plan.n_streams; t++) /* they have work again from now on */
                if (cp->wait_ev[t] == cmd->arg) {
                    cp->wait_ev[t] = -2;
                    __atomic_add_fetch(&cp->busy, 1, __ATOMIC_RELAXED);
                }
            pthread_cond_broadcast(&cp->cv);
            pthread_mutex_unlock(&cp->mu);
        } else {
            pthread_mutex_lock(&cp->mu);
            if (cp->event_gen[cmd->arg] != cp->gen && !cp->abort) {
                if (busy) __atomic_sub_fetch(&cp->busy, 1, __ATOMIC_RELAXED); /* idle while it waits */
                busy = 0;
                cp->wait_ev[w->stream] = cmd->arg;
                while (cp->event_gen[cmd->arg] != cp->gen && !cp->abort) pthread_cond_wait(&cp->cv, &cp->mu);
                busy = cp->wait_ev[w->stream] == -2; /* the recorder counted it */
                cp->wait_ev[w->stream] = -1;
            }
            int stop = cp->abort;
            pthread_mutex_unlock(&cp->mu);
            if (stop) break;
        }
    }
done:
    bd_parallel_set_share(outer);
    if (busy) __atomic_sub_fetch(&cp->busy, 1, __ATOMIC_RELAXED);
    bd_free(in);
    bd_free(out);
    return NULL;
}

braid_status bd_cpu_run_nested(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e)
{
    cpu_plan *cp = p->bstate;
    const bd_graph *g = p->g;
    if (p->plan.n_streams < 1) return BRAID_OK; /* nothing to run: every output is a constant or an input */
    for (int i = 0; i < g->n_inputs; i++) p->vals[g->inputs[i]].data = inputs[i].data;
    pthread_mutex_lock(&cp->mu);
    cp->abort = 0;
    cp->done = 0;
    __atomic_store_n(&cp->busy, cp->busy0, __ATOMIC_RELAXED);
    cp->gen++; /* a new run: events of the last one no longer count, parked streams go */
    pthread_cond_broadcast(&cp->go_cv);
    pthread_mutex_unlock(&cp->mu);
    run_stream(&cp->w[0]);
    pthread_mutex_lock(&cp->mu);
    while (cp->done < cp->n_started) pthread_cond_wait(&cp->done_cv, &cp->mu);
    pthread_mutex_unlock(&cp->mu);
    if (cp->abort) {
        *e = cp->err;
        return e->status;
    }
    return BRAID_OK;
}

/* A run of a session's own plan: at its first stage, the strings and
 * sequences of the last run's outputs go (never for nested plans: a loop's
 * state made in one iteration is read in the next). */
static braid_status cpu_run_top(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e)
{
    if (!p->prev) bd_strpool_reset(&((cpu_state *)state)->strings);
    return bd_cpu_run_nested(state, p, inputs, e);
}

static int cpu_auto_streams(void *state)
{
    const cpu_state *s = state;
    return BD_MAX(1, BD_MIN(s->threads, BD_AUTO_MAX_STREAMS));
}

const bd_backend bd_backend_cpu = {
    .auto_streams = cpu_auto_streams,
    /* A second stream from BD_MIN_PARALLELISM (1.5), as on CUDA: at 1.1
     * (tried), MiniLM, the PP-OCRv4 detector and PicoDet took two streams
     * and ran 1.3-1.8x slower than serial on 2 cores (scripts/bench-cpu). */
    .min_parallelism = 0,
    .layouts = 1,
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .prepare = cpu_prepare,
    .release = cpu_release,
    .run = cpu_run_top,
};
