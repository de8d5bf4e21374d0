/* runtime.h: the runtime's half of running a model, apart from any backend:
 * a plan specialized to one input signature and made live (bd_prepared),
 * who makes plans live and runs them at one level of the plan tree
 * (bd_runner: the session's backend, or a control-flow node's), the staged
 * sequence of plans that run-time shapes need (stage.c), and the control-flow
 * engine's nested plans (controlflow.h). prepare.c makes the backend-
 * independent half of a plan: shapes, the plan-time passes, the schedule. */
#ifndef BD_RUNTIME_H
#define BD_RUNTIME_H

#include <stdio.h>

#include "passes/instance.h"
#include "sched/plan.h"

/* The default session limit on a Loop's iterations: large, but finite, so
 * that a loop whose condition never turns false ends with BRAID_ERR_LIMIT. */
#define BD_LOOP_LIMIT_DEFAULT ((int64_t)1 << 24)

/* One slice of the profile: a node run on a stream. */
typedef struct bd_trace_event {
    int stream;
    int node;      /* graph node index */
    int threads;   /* the intra-op threads it was given (CPU); 0: not counted */
    double t0, t1; /* seconds, bd_now() */
} bd_trace_event;

/* How bd_prepare plans. */
typedef struct bd_prepare_opts {
    /* N > 0 = at most N streams (1 = serial); 0 = automatic, up to
     * BD_AUTO_MAX_STREAMS; -N = automatic, up to N. */
    int max_streams;
    double fill_cost;   /* the backend's (bd_backend.fill_cost) */
    double min_parallelism; /* the backend's (bd_backend.min_parallelism; 0: BD_MIN_PARALLELISM) */
    int no_fold;        /* 1: leave every Add a node of its own */
    int64_t loop_limit; /* most iterations of one Loop node (see bd_exec_opts) */
    int layout;         /* 1: run the NHWC pass (src/passes/nhwc.c) on top-level plans */
} bd_prepare_opts;

struct bd_prepared;
struct bd_nest;

/* Who makes plans live and runs them, at one level of the plan tree: the
 * session's backend for the model's own plans, or a control-flow node's
 * backend for its nested plans (on CUDA these run on the node's stream).
 * Every plan of a tree points at the runner that made it, which releases it. */
typedef struct bd_runner {
    void *ctx; /* handed to every function below */
    /* The backend half of a plan after bd_prepare: binds memory, events. */
    braid_status (*prepare)(void *ctx, struct bd_prepared *p, bd_err *e);
    void (*release)(void *ctx, struct bd_prepared *p);
    /* Runs p with graph input i's data at inputs[i].data. On return p's
     * outputs, and what later stages read, are written (CUDA nested plans:
     * enqueued on the node's stream, which later work follows). */
    braid_status (*run)(void *ctx, struct bd_prepared *p, const bd_tensor *inputs, bd_err *e);
    /* Copies n bytes of backend memory at src, written by runs so far, to
     * the host (a synchronization on CUDA). */
    braid_status (*read)(void *ctx, void *dst, const void *src, size_t n, bd_err *e);
    /* What the backend does differently for node n of instance x, for
     * `braid plan` ("on the host: ..."), or NULL (optional). */
    const char *(*node_note)(const bd_node *n, const bd_inst *x);
    int host_mem; /* 1: all of the backend's memory is host memory (CPU) */
    int host_out; /* 1: plans' output buffers (out_data) are readable by the host after run */
    int host_in;  /* 1: run inputs are host memory */
} bd_runner;

/* A plan specialized to one input signature, ready to run. It is one stage
 * of a staged sequence (see src/runtime/stage.c): the first stage of a
 * signature, or a later one made for the boundary values its prev stage read. */
typedef struct bd_prepared {
    const bd_graph *g;
    int64_t *sig;       /* input dims, the cache key */
    int sig_len;
    bd_inst inst;       /* shapes and plan-time constants */
    int n_live;
    int *live;          /* plan node i is graph node live[i] */
    bd_sched_input sin; /* arrays owned here */
    bd_plan plan;
    int *val_buf;       /* per value: arena buffer index, or -1 */
    int *val_out;       /* per value: graph output slot that holds it, or -1 */
    int *val_prod;      /* per value: the graph node (live in this stage) that makes it, or -1 */
    bd_tensor *vals;    /* per value: shape plus the data pointer the backend binds */
    void **out_data;    /* per graph output: a host-visible buffer */
    size_t *out_bytes;
    void *bstate;       /* the backend's per-plan state */
    /* profile of the last runs */
    bd_trace_event *trace;
    int n_trace, cap_trace;
    bd_prepare_opts opts;      /* how it was planned; nested plans inherit it */
    const unsigned char *known; /* per graph input: a caller's constant (nested plans), or NULL */
    /* ---- the staged sequence ---- */
    const bd_runner *runner;   /* who made it live and releases it */
    struct bd_prepared *prev;  /* the stage before this one, NULL for a first stage */
    struct bd_prepared *next[4]; /* later stages made so far, most recently used first */
    int64_t *bsig;             /* a later stage: the boundary it was made for (shapes, read-back values) */
    int bsig_len;
    int n_bvals;
    int *bvals;                /* values read when this stage ends (bd_inst_boundary) */
    int n_ext;
    int *ext;                  /* values made by earlier stages that this one reads... */
    struct bd_prepared **ext_from; /* ...and the stage that made each */
    bd_tensor *actual;         /* per value: after a run, the actual shape and data of values
                                * whose shape is known only then (BD_IV_RUNTIME); backends set it */
    struct bd_nest **nest;     /* per live node: a control-flow node's nested plans (src/runtime/controlflow.c) */
} bd_prepared;

/* The backend half of a run, as the staged sequence sees it at the end: graph
 * output o's actual shape and data in the backend's memory, and where the
 * host can read the same bytes directly (NULL when it cannot). */
typedef struct bd_run_out {
    bd_tensor t;
    const void *host;
} bd_run_out;

/* The most streams an automatic plan uses on any backend. */
#define BD_AUTO_MAX_STREAMS 8

/* An automatic plan uses several streams only for graphs at least this parallel
 * (total work over critical-path work), unless the backend says otherwise. */
#define BD_MIN_PARALLELISM 1.5

/* Builds the first stage of one input signature (backend-independent
 * part). known: see bd_inst_build (NULL for the model's own plans; when set
 * it must outlive p). */
braid_status bd_prepare(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known,
                        const bd_prepare_opts *o, bd_prepared *p, bd_err *e);
/* Builds the stage after prev for the boundary values in actual (see
 * bd_inst_next); p->prev = prev. */
braid_status bd_prepare_next(bd_prepared *prev, const bd_tensor *actual, bd_prepared *p, bd_err *e);
void bd_prepared_free(bd_prepared *p);
/* The bytes plan p moves if each of its nodes reads its inputs and writes
 * its outputs once (weights included): what the physical limit of a run
 * divides by a device's memory bandwidth. */
double bd_plan_traffic_bytes(const bd_prepared *p);

/* ---- the staged sequence (src/runtime/stage.c) ---- */
/* Makes p live with runner r (r->prepare); on failure p is freed (not the struct). */
braid_status bd_stage_prepare(const bd_runner *r, bd_prepared *p, bd_err *e);
/* Releases and frees a plan made live by bd_stage_prepare, with its later
 * stages and nested plans, and the struct itself. NULL is fine. */
void bd_stage_free(bd_prepared *p);
/* Runs the sequence that begins with first stage p: each stage, then its
 * boundary read and the next stage (cached, or made with p's runner and
 * options), until one has nothing left. inputs: graph inputs as the
 * runner's run takes them. outs: one per graph output. *last: the last stage run. */
braid_status bd_stages_run(bd_prepared *p, const bd_tensor *inputs, bd_run_out *outs, bd_prepared **last,
                           bd_err *e);
/* Prints the plans of p's sequence: each stage, its boundary (what is read
 * on the host, a synchronization on CUDA) and the nested plans of its
 * control-flow nodes, indented under them. */
void bd_stages_print(FILE *f, const bd_prepared *p, int indent);
/* Appends a trace event (thread-safe only per stream slot: callers lock). */
void bd_trace_add(bd_prepared *p, int stream, int node, int threads, double t0, double t1);

#endif
