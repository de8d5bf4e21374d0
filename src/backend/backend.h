/* backend.h: the backend interface. A backend runs prepared plans
 * (runtime/runtime.h): it owns the session's device state (weights, streams,
 * handles), a plan's memory (arena, output buffers, events) and the walk over
 * the plan's commands. The CPU backend runs each plan stream on a worker
 * thread; the CUDA backend enqueues onto one cudaStream_t per plan stream.
 * Kernels are reached through each backend's own per-family table. Also the
 * way braid's core finds and loads the CUDA backend, which lives in a
 * library of its own (backend/cuda/common/load.c). */
#ifndef BD_BACKEND_H
#define BD_BACKEND_H

#include "runtime/runtime.h"

typedef struct bd_exec_opts {
    int max_streams; /* 0 = automatic */
    int threads;     /* 0 = all cores */
    int device;
    int cuda_graph;
    int profile;     /* collect per-node timings into the trace */
    int allow_tf32;  /* CUDA: let cuDNN and cuBLAS use TF32 tensor cores (default off) */
    int no_fold;     /* no plan-time Conv+Add folds (bd_inst_fuse_add) */
    int no_layout;   /* every value NCHW (no NHWC pass, src/passes/nhwc.c) */
    int64_t cuda_workspace;  /* CUDA: cuDNN workspace per stream, bytes; < 0: BD_CUDA_WORKSPACE_DEFAULT */
    struct bd_notes *notes;  /* the session's notes (runtime/notes.h): where a backend says what it did
                              * instead of what was asked; set by the session, NULL in options */
    int64_t loop_limit;      /* most iterations one Loop node may run (0: BD_LOOP_LIMIT_DEFAULT) */
} bd_exec_opts;

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
    /* What the backend does differently for node n of instance x, said by
     * `braid plan` (optional; bd_runner.node_note). */
    const char *(*node_note)(const bd_node *n, const bd_inst *x);
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
    /* The process-wide cache of tuned cuDNN algorithms (cuda/common/algo.h): lookups
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

#endif
