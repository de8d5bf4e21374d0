/* cuda_backend.h: the CUDA backend's internals shared by its files (session
 * state, per-stream handles, counted creation of streams, events, handles and
 * allocations), and the counters that tests read to check that every object
 * a session creates is destroyed. */
#ifndef BD_CUDA_BACKEND_H
#define BD_CUDA_BACKEND_H

#include <stddef.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/common/algo.h"
#include "backend/cuda/common/device_info.h"
#include "backend/cuda/common/faults.h"
#include "backend/cuda/common/host_nodes.h"
#include "backend/cuda/common/io.h"
#include "backend/cuda/common/limits.h"
#include "util/strpool.h"

/* Live objects (created minus destroyed). */
typedef struct bd_cuda_live {
    long streams, events, cudnn, cublas, allocs, graphs;
} bd_cuda_live;

/* The objects one session (the backend state of bd_backend_cuda.open) holds
 * now, its plans included. */
void bd_cuda_session_counts(const void *state, bd_cuda_live *c);
/* Short form: streams and events of one session. */
void bd_cuda_counts(void *state, long *streams_live, long *events_live);
/* Every object of the process (all sessions, kernel caches included): zero
 * once every session is destroyed. */
void bd_cuda_global_counts(bd_cuda_live *c);

/* One pool stream with the handles bound to it. */
typedef struct cuda_stream {
    cudaStream_t s;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    void *ws;          /* kernels' scratch: ws_size bytes, then cuBLAS's own workspace */
    size_t ws_size;
} cuda_stream;

/* How a host-visible buffer was allocated (how to free it). */
enum { BD_MEM_DEVICE = 0, BD_MEM_PINNED = 1, BD_MEM_MANAGED = 2 };

typedef struct cuda_state {
    int device;
    int cuda_graph, profile, allow_tf32;
    int concurrent_managed; /* the device can prefetch and share managed memory */
    int sync;               /* BRAID_CUDA_SYNC: synchronize after every call and launch */
    int tune;               /* time cuDNN's candidates on a shape's first run (BRAID_CUDA_TUNE != 0) */
    int io;                 /* bd_cuda_io: how graph inputs and outputs reach the device */
    size_t ws_budget;       /* cuDNN workspace per stream */
    size_t blas_ws;         /* cuBLAS workspace per stream (its documented recommendation) */
    struct bd_notes *notes; /* the session's */
    cuda_stream *streams;   /* the pool, grown to the widest plan prepared; plan stream s runs on streams[s] */
    int n_streams;
    void *weights;          /* every initializer, one allocation */
    size_t weights_size;
    size_t *weight_off;     /* per value of the model's graph: offset in weights, or SIZE_MAX */
    int n_weight_off;       /* values weight_off covers (a plan's flat graph may have more) */
    bd_cuda_live live;    /* this session's live objects */
    struct shared_buf {
        void *p;            /* what the caller writes */
        void *dev;          /* the same bytes as the device addresses them (pinned: its mapping) */
        size_t n;
        int kind;           /* BD_MEM_PINNED or BD_MEM_MANAGED */
    } *shared;              /* the caller's host-shared input buffers */
    int n_shared, cap_shared;
    /* Host nodes (cuda_host.c): what they make for one top-level run: strings,
     * sequences and optionals (host memory), and device memory for outputs
     * whose size only their kernel knew. */
    bd_strpool strings;
    void **run_dev;
    int n_run_dev, cap_run_dev;
    bd_cuda_versions ver;   /* device and library versions */
    char info[640];         /* bd_cuda_version_line of ver */
} cuda_state;

/* The session's host-shared buffer that holds [p, p + n), or NULL. */
const struct shared_buf *bd_cu_shared_find(const cuda_state *s, const void *p, size_t n);
/* Value v's offset in the session's weights, SIZE_MAX when it has none. */
static inline size_t bd_cu_weight_off(const cuda_state *s, int v)
{
    return v >= 0 && v < s->n_weight_off ? s->weight_off[v] : SIZE_MAX;
}

/* 1 when [p, p + n) lies in one of the session's host-shared buffers. */
int bd_cu_is_shared(const cuda_state *s, const void *p, size_t n);

/* Fault finding around one node (fault.c): begin before its launcher, end
 * after (under sync, synchronizes its stream; *async tells whether an
 * asynchronous error from earlier work surfaced, so that the node is not
 * blamed). peek fails when an earlier asynchronous error is pending. */
void bd_cu_fault_begin(cudaStream_t stream, int sync, int capturing);
braid_status bd_cu_fault_end(bd_err *e, int *async);
braid_status bd_cu_fault_peek(bd_err *e);

/* Counted creation and destruction; s may be NULL (kernel caches count in
 * the process totals only). Failures return BRAID_ERR_DEVICE (or
 * OUT_OF_MEMORY for allocations) with the CUDA error in the message. */
braid_status bd_cu_malloc(cuda_state *s, void **p, size_t n, bd_err *e);
braid_status bd_cu_malloc_managed(cuda_state *s, void **p, size_t n, bd_err *e);
/* Pinned host memory, mapped into the device's address space. */
braid_status bd_cu_malloc_pinned(cuda_state *s, void **p, size_t n, bd_err *e);
void bd_cu_free(cuda_state *s, void *p);
void bd_cu_free_kind(cuda_state *s, void *p, int kind);
braid_status bd_cu_event_create(cuda_state *s, cudaEvent_t *ev, int timing, bd_err *e);
void bd_cu_event_destroy(cuda_state *s, cudaEvent_t ev);
/* Grows the stream pool to n streams (each with its handles and workspace). */
braid_status bd_cu_pool_grow(cuda_state *s, int n, bd_err *e);

/* Control flow and run-time shapes (cuda_control.c): the enqueue walk
 * launches every node through bd_cuda_node_launch (pool_stream: the node's
 * pool stream; pool_end: the first pool stream past the plan's own); the
 * backend's read (a copy to the host of finished work). */
braid_status bd_cuda_node_launch(cuda_state *s, bd_prepared *p, int li, int pool_stream, int pool_end,
                                 bd_cuda_kernel *k);
braid_status bd_cuda_read(void *state, void *dst, const void *src, size_t n, bd_err *e);

/* Host nodes (cuda_host.c; bd_cuda_host_node decides which): init and
 * destroy with the session, reset when a top-level run starts, and the
 * launch that bd_cuda_node_launch calls for such a node. */
void bd_cuda_host_init(cuda_state *s);
void bd_cuda_host_reset(cuda_state *s);
void bd_cuda_host_destroy(cuda_state *s);
braid_status bd_cuda_host_launch(cuda_state *s, bd_cuda_kernel *k);
/* The plan half of the backend (cuda_plan.c). */
braid_status bd_cuda_plan_prepare(void *state, bd_prepared *p, bd_err *e);
void bd_cuda_plan_release(void *state, bd_prepared *p);
braid_status bd_cuda_plan_run(void *state, bd_prepared *p, const bd_tensor *inputs, bd_err *e);
void bd_cuda_plan_graph_info(void *state, const bd_prepared *p, bd_graph_report *r);

/* The device under the backend (device.c, or the emulator of emu/ in
 * libbraid_cuda_emu.so): what happens around each node's launcher (the
 * emulator queues the node's CPU stand-in when it ends; end returns st, or
 * the failure to queue it), and the emulator's reports so far (0 on a real
 * device; last gets the latest report's text). */
void bd_cuda_dev_node_begin(const bd_cuda_kernel *k, int pool_stream);
braid_status bd_cuda_dev_node_end(const bd_cuda_kernel *k, braid_status st);
long bd_cuda_dev_reports(char *last, size_t n);

#define BD_CU_COUNT(s, field, d)                                                                  \
    bd_cu_count_field((s), offsetof(bd_cuda_live, field), (d))
void bd_cu_count_field(cuda_state *s, size_t offset, long delta);

#endif
