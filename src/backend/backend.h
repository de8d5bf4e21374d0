/* backend.h: the backend interface. A backend runs prepared plans: it owns
 * the session's device state (weights, streams, handles), a plan's memory
 * (arena, output buffers, events) and the walk over the plan's commands.
 * The CPU backend runs each plan stream on a worker thread; the CUDA backend
 * enqueues onto one cudaStream_t per plan stream. Kernels are reached through
 * each backend's own per-family table. */
#ifndef BD_BACKEND_H
#define BD_BACKEND_H

#include "graph/shape.h"
#include "sched/plan.h"

typedef struct bd_exec_opts {
    int max_streams; /* 0 = automatic */
    int threads;     /* 0 = all cores */
    int device;
    int cuda_graph;
    int profile;     /* collect per-node timings into the trace */
    int allow_tf32;  /* CUDA: let cuDNN and cuBLAS use TF32 tensor cores (default off) */
    int no_fold;     /* no plan-time Conv+Add folds (bd_inst_fuse_add) */
    int no_layout;   /* every value NCHW (no layout pass, src/graph/layout.c) */
    int64_t cuda_workspace;  /* CUDA: cuDNN workspace per stream, bytes; < 0: BD_CUDA_WORKSPACE_DEFAULT */
    struct bd_notes *notes;  /* the session's notes (backend/notes.h): where a backend says what it did
                              * instead of what was asked; set by the session, NULL in options */
    int64_t loop_limit;      /* most iterations one Loop node may run (0: BD_LOOP_LIMIT_DEFAULT) */
} bd_exec_opts;

/* The default session limit on a Loop's iterations: large, but finite, so
 * that a loop whose condition never turns false ends with BRAID_ERR_LIMIT. */
#define BD_LOOP_LIMIT_DEFAULT ((int64_t)1 << 24)

/* What a backend did with one plan's CUDA graph (bd_backend.graph_info), and
 * how long its last run took on the device. */
typedef struct bd_graph_report {
    int captured;      /* the plan holds a captured graph that its runs replay */
    int failed;        /* capture was tried and failed (or cannot be tried): the plan runs uncaptured */
    long replays;      /* runs of the plan that replayed the graph */
    long uncaptured;   /* runs of the plan that enqueued node by node */
    const char *error; /* why it failed, "" otherwise; owned by the plan */
    double device_ms;  /* the last run's device time, inputs already on the device and outputs not yet
                        * copied back (CUDA events); < 0: not timed */
} bd_graph_report;

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
    int layout;         /* 1: run the layout pass (src/graph/layout.c) on top-level plans */
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
    int host_mem; /* 1: all of the backend's memory is host memory (CPU) */
    int host_out; /* 1: plans' output buffers (out_data) are readable by the host after run */
    int host_in;  /* 1: run inputs are host memory */
} bd_runner;

/* A plan specialized to one input signature, ready to run. It is one stage
 * of a staged sequence (see src/backend/stage.c): the first stage of a
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
    struct bd_nest **nest;     /* per live node: a control-flow node's nested plans (src/backend/nest.c) */
} bd_prepared;

/* The backend half of a run, as the staged sequence sees it at the end: graph
 * output o's actual shape and data in the backend's memory, and where the
 * host can read the same bytes directly (NULL when it cannot). */
typedef struct bd_run_out {
    bd_tensor t;
    const void *host;
} bd_run_out;

typedef struct bd_backend {
    const char *name;
    braid_status (*open)(const bd_graph *g, const bd_exec_opts *o, void **state, bd_err *e);
    void (*close)(void *state);
    /* Binds p->vals[v].data for constants, intermediates and outputs, and
     * allocates p->out_data. */
    braid_status (*prepare)(void *state, bd_prepared *p, bd_err *e);
    void (*release)(void *state, bd_prepared *p);
    /* inputs: one per graph input, data on the host. On return the outputs
     * are in p->out_data, readable by the host. */
    braid_status (*run)(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e);
    /* Copies n bytes of the backend's memory at src, written by the runs so
     * far, to the host (optional: NULL means the memory is the host's). */
    braid_status (*read)(void *state, void *dst, const void *src, size_t n, bd_err *e);
    /* Host-shared memory for the caller's inputs (optional: NULL means plain
     * host memory through bd_malloc). */
    braid_status (*alloc_shared)(void *state, size_t bytes, void **out, bd_err *e);
    void (*free_shared)(void *state, void *p);
    /* Live device streams and events (optional). */
    void (*counts)(void *state, long *streams, long *events);
    /* The most streams an automatic plan should use on this backend
     * (optional: BD_AUTO_MAX_STREAMS). The CPU answers its core budget: more
     * stream threads than cores only contend. */
    int (*auto_streams)(void *state);
    /* The estimated cost (seconds, as bd_inst.cost) at which one node keeps
     * the whole device busy, so that running others beside it gains nothing;
     * 0: none does (a node gets 1/streams of the device). The plan-time
     * Conv+Add fusion weighs concurrency with it (bd_inst_fuse_add). */
    double fill_cost;
    /* An automatic plan uses several streams only for graphs at least this
     * parallel (total work over critical-path work; 0: BD_MIN_PARALLELISM). */
    double min_parallelism;
    /* 1: its kernels run NHWC Conv and pool nodes (the layout pass's). */
    int layouts;
    /* One line naming the device and the library versions the session runs
     * with, and the device's memory bandwidth in bytes/s (optional: the CPU
     * has none). */
    const char *(*device_info)(void *state, double *mem_bw);
    /* How plan p used a CUDA graph (optional). */
    void (*graph_info)(void *state, const bd_prepared *p, bd_graph_report *r);
} bd_backend;

extern const bd_backend bd_backend_cpu;
#ifdef BRAID_HAVE_CUDA
/* Defined by the CUDA backend (src/backend/cuda/), which is built into its
 * own library; braid reaches them through bd_cuda_module_load. */
extern const bd_backend bd_backend_cuda;
/* 1 when a CUDA device answers; *why gets the reason when not. */
int bd_cuda_probe(char *why, size_t n);
#endif

/* What the CUDA backend library exports under the name braid_cuda_module
 * (src/backend/cuda/module.c). The ABI number and the version keep a library
 * from another build of braid out: the two share these structures. */
typedef struct bd_cuda_module {
    unsigned long abi;
    const char *version;
    const bd_backend *backend;
    int (*probe)(char *why, size_t n);
    /* The process's live CUDA objects, all sessions together: streams,
     * events, cuDNN handles, cuBLAS handles, allocations, CUDA graphs. */
    void (*global_counts)(long live[6]);
    /* The process-wide cache of tuned cuDNN algorithms (cuda_logic.h): lookups
     * that found a choice, lookups that did not, choices kept. */
    void (*algo_stats)(long *hits, long *misses, int *entries);
    /* 1: libbraid_cuda_emu.so, the CUDA backend on braid's emulated device
     * (src/backend/cuda/emu/), loaded only when BRAID_CUDA_EMULATOR=1. */
    int emulated;
    /* The emulator's reports so far (races, host touches of device memory,
     * failed stand-ins); last gets the latest text. 0 on a real device. */
    long (*reports)(char *last, size_t n);
} bd_cuda_module;
#define BD_CUDA_MODULE_ABI                                                                            \
    ((unsigned long)sizeof(bd_backend) * 1000003ul + sizeof(bd_prepared) * 10007ul +               \
     sizeof(bd_inst) * 101ul + sizeof(bd_graph) * 7ul + sizeof(bd_node) + sizeof(bd_plan) * 3ul +  \
     sizeof(bd_graph_report) * 13ul + 2ul)
#define BD_CUDA_MODULE_FILE "libbraid_cuda.so"
#define BD_CUDA_EMU_MODULE_FILE "libbraid_cuda_emu.so"
/* The switch that runs the CUDA backend on braid's emulated device. */
#define BD_CUDA_EMULATOR_ENV "BRAID_CUDA_EMULATOR"
/* The CUDA backend, loaded once per process: from $BRAID_CUDA_MODULE when
 * set, else beside the library or program that holds braid (or in ../lib
 * from it), else braid's install libdir, else the loader's search path. With
 * BRAID_CUDA_EMULATOR=1, the emulated one (libbraid_cuda_emu.so, or
 * $BRAID_CUDA_EMULATOR_MODULE) the same way, and never the other: a module
 * that is not what was asked for is refused. NULL when it cannot be
 * loaded (or braid was built without CUDA); *why then says why. */
const bd_cuda_module *bd_cuda_module_load(char *why, size_t n);
/* Whether a CUDA device can be there, asked of the driver alone (or 1 on
 * the emulated device), so that a machine without one never loads the CUDA
 * backend and its libraries (hundreds of MB) to learn it; *why says why not.
 * 1 does not promise the backend runs: the module's probe decides that. */
int bd_cuda_device_present(char *why, size_t n);

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

/* ---- the staged sequence (src/backend/stage.c) ---- */
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
