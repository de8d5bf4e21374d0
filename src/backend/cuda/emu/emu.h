/* emu.h: the emulated CUDA device's internals (shared/EMULATOR.md). The
 * emulator implements the part of the CUDA runtime, cuDNN and cuBLAS that
 * braid's CUDA backend calls, so that the backend's host code (plans, streams,
 * events, copies, I/O modes, host nodes, graph capture, fault finding,
 * algorithm search) runs for real on a machine with no GPU, linked into
 * libbraid_cuda_emu.so instead of libcudart, cuDNN and cuBLAS. It is stricter
 * than the hardware, never looser:
 *   - device memory lives at addresses the host cannot touch (PROT_NONE; the
 *     workers use a second mapping of the same pages) and reads as poison
 *     (0xFF bytes: NaN for every float type) until written; pinned and
 *     managed memory is closed to the host while queued work may still read
 *     or write it;
 *   - every stream is a queue run by its own worker thread; events, the legacy
 *     stream and the documented (a)synchrony of copies are modelled;
 *   - a happens-before checker (vector clocks, computed as work is enqueued)
 *     fails any access that is not ordered after a conflicting one;
 *   - kernels and library compute only record what they access; the node's
 *     result comes from the CPU backend's kernel, queued as the node's last
 *     operation on its stream (emu_launch.c).
 * Files: emu_mem.c (memory), emu_check.c (the checker), emu_stream.c (streams,
 * events, workers), emu_runtime.c and emu_copy.c (the runtime API),
 * emu_graph.c (capture and graphs), emu_launch.c (kernels, node stand-ins),
 * emu_dnn.c and emu_blas.c (the libraries). */
#ifndef BD_CUDA_EMU_H
#define BD_CUDA_EMU_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "backend/cuda/cuda_ops.h"

/* ---- the process's emulator ------------------------------------------------------- */

#define EMU_LANES 512       /* vector clock entries: one per live stream */
#define EMU_ALIGN 256       /* cudaMalloc's alignment */
#define EMU_POISON 0xFF     /* fresh memory: NaN in every float type, -1 in every int */

typedef struct emu_vc {
    uint32_t c[EMU_LANES];
} emu_vc;

struct emu_stream;
struct emu_op;

/* What one operation touches: addr as braid handed it (a device or host
 * pointer), n bytes. */
typedef struct emu_access {
    uintptr_t addr;
    size_t n;
    int write;
} emu_access;

/* One allocation of emulated memory. */
enum { EMU_MEM_DEVICE = 1, EMU_MEM_PINNED = 2, EMU_MEM_MANAGED = 3 };
typedef struct emu_seg {
    size_t lo, hi;          /* bytes [lo, hi) of the allocation */
    uint64_t w_op;          /* the last write: its operation (0: none since the allocation) */
    int poisoned;           /* never written, and already filled with EMU_POISON (device memory is
                             * poisoned lazily, when something first reads bytes nothing wrote) */
    int w_lane;
    uint32_t w_seq;
    int n_r, cap_r;
    struct emu_read {
        int lane;
        uint32_t seq;
        uint64_t op;
    } *r;                   /* the latest read per lane since the last write */
} emu_seg;

typedef struct emu_alloc {
    uintptr_t base;         /* as braid sees it */
    size_t size, span;      /* requested bytes; bytes reserved (aligned) */
    int kind;               /* EMU_MEM_* */
    size_t off;             /* offset in its region */
    unsigned flags;         /* cudaHostAlloc's or cudaMallocManaged's flags */
    int prot;               /* pinned and managed: the host view's protection now */
    emu_seg *seg;           /* the checker's state, sorted, covering [0, size) */
    int n_seg, cap_seg;
    uint64_t id;            /* allocation number, for messages */
} emu_alloc;

typedef struct emu_region {
    int fd;
    char *user;             /* what braid sees (device: PROT_NONE) */
    char *work;             /* the workers' view */
    size_t size;
} emu_region;

/* One device's properties (H100 or H200, BRAID_CUDA_EMULATOR_DEVICE). */
typedef struct emu_device {
    const char *name;
    size_t mem;
    int sms, major, minor, mem_clock_khz, bus_bits, l2;
} emu_device;

typedef struct emu_state {
    pthread_mutex_t mu;     /* everything below, and every stream's queue */
    pthread_cond_t done_cv; /* broadcast when any operation completes */
    int ready;
    emu_device dev;
    emu_region dreg, hreg;  /* device memory; pinned and managed memory */
    emu_alloc **allocs;     /* live, sorted by base (both regions) */
    int n_allocs, cap_allocs;
    size_t dev_used;
    uint64_t next_alloc_id, next_op_id;
    /* lanes */
    uint32_t lane_seq[EMU_LANES];
    unsigned char lane_used[EMU_LANES];
    struct emu_stream *legacy;
    struct emu_stream **streams; /* live streams (the legacy one too) */
    int n_streams, cap_streams;
    int next_stream_id;
    /* errors and faults */
    cudaError_t sticky;     /* an asynchronous fault: every later call returns it */
    char sticky_text[512];
    long reports;           /* checker and emulator reports so far */
    char last_report[1024];
    unsigned delay_seed;    /* BRAID_CUDA_EMULATOR_DELAY: random delays before each operation */
    int delay_max_us;
    long kernels;           /* kernel launches so far (BRAID_CUDA_EMULATOR_FAULT=kernel:N) */
    long fault_kernel;      /* that N, 0: none */
    char fault_node[256];   /* BRAID_CUDA_EMULATOR_FAULT=node:NAME */
    int capturing_global;   /* global-mode captures in progress, all threads */
    int trace;              /* BRAID_CUDA_EMULATOR_TRACE=1: every operation on stderr as it is enqueued */
    /* counts of live objects, for the tests */
    long live_streams, live_events, live_graphs;
} emu_state;

extern emu_state emu;

/* Starts the emulator once (memory, the legacy stream, the environment's
 * switches); 0 on success, else the error every call then returns. */
cudaError_t emu_init(void);

/* Lock and unlock the emulator (emu.mu). */
void emu_lock(void);
void emu_unlock(void);

/* ---- errors (emu_runtime.c) --------------------------------------------------------- */

/* Entry of every emulated API call: starts the emulator, applies the fault
 * injection (BRAID_CUDA_EMULATOR_FAIL=name:N fails the N-th call of name
 * with fail_code), returns the sticky error if a fault left one. 0: go on. */
cudaError_t emu_enter(const char *name, cudaError_t fail_code);
/* Records e as the calling thread's last error (cudaGetLastError) and returns it. */
cudaError_t emu_err(cudaError_t e);
/* 1 when BRAID_CUDA_EMULATOR_FAIL makes this call of name fail (cuDNN and cuBLAS use it). */
int emu_fail_now(const char *name);
/* A report: the checker's or the emulator's. Printed to stderr, counted, kept
 * as the thread's text for cudaGetErrorString(EMU_ERR_REPORT). */
void emu_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The code an API call returns when it found a report (not sticky). */
#define EMU_ERR_REPORT cudaErrorIllegalState
/* The thread's text of its last report. */
const char *emu_report_text(void);

/* ---- memory (emu_mem.c) ---------------------------------------------------------------- */

cudaError_t emu_mem_init(void);
cudaError_t emu_alloc_new(int kind, size_t n, void **out);
/* Frees the allocation at base p of kind (device, or pinned/managed); cudaErrorInvalidValue when p is none. */
cudaError_t emu_alloc_free(void *p, int kind_mask);
/* The allocation holding address a, or NULL (lock held). */
emu_alloc *emu_alloc_find(uintptr_t a);
/* Where the workers touch a braid address: the worker view for emulated
 * memory, a itself for other (host) memory. */
void *emu_work_ptr(const void *a);
/* 1 when a lies in the device region (allocated or not). */
int emu_in_device_region(uintptr_t a);
/* Pinned and managed memory: recomputes the host view's protection of a
 * (closed while queued work may write it, read-only while queued work may
 * read it) for the host's clock. */
void emu_mem_protect(emu_alloc *a);
/* After a host synchronization: reopens what is now ordered before the host. */
void emu_mem_reprotect_all(void);
/* Describes an address for messages: "device allocation #3 (4096 bytes) + 128". */
void emu_describe(uintptr_t a, char *buf, size_t n);

/* ---- the checker (emu_check.c) --------------------------------------------------------- */

typedef struct emu_oprec {
    uint64_t id;
    int lane;
    uint32_t seq;
    char what[200];         /* "node 'conv_3' (Conv) on stream 2: kernel conv_epilogue" */
} emu_oprec;

void emu_vc_join(emu_vc *a, const emu_vc *b);
/* The host's clock (what its synchronizations have shown complete; lock held). */
emu_vc *emu_host_vc(void);
/* Keeps the description of operation id for later messages. */
void emu_oprec_put(uint64_t id, int lane, uint32_t seq, const char *what);
/* Checks the accesses of the operation (id, lane, seq, clock vc) against the
 * earlier ones and records them. Pointers into no allocation, or past the
 * end of one, set *bad (the first such access). 0 when every access is
 * ordered; else a report was made and its text is emu_report_text(). */
int emu_check(uint64_t id, int lane, uint32_t seq, const emu_vc *vc, const emu_access *acc, int n, int *bad);
/* Whether every write (and, with reads, every read) of [0, size) of a is
 * ordered before clock vc; *who gets the latest unordered op's text. */
int emu_ordered_before(const emu_alloc *a, const emu_vc *vc, int with_reads, char *who, size_t n);
void emu_seg_reset(emu_alloc *a);
void emu_seg_free(emu_alloc *a);

/* ---- streams and operations (emu_stream.c) ---------------------------------------- */

enum emu_op_kind {
    EMU_OP_NOP,      /* prefetch, advice: ordering only */
    EMU_OP_COPY,     /* 2-D copy: height rows of width bytes */
    EMU_OP_SET,      /* memset */
    EMU_OP_KERNEL,   /* a kernel or library call: accesses only */
    EMU_OP_STANDIN,  /* the CPU kernel of a node */
    EMU_OP_RECORD,   /* an event record */
    EMU_OP_WAIT,     /* a wait on an event record */
    EMU_OP_WAITSEQ,  /* an implicit wait (legacy stream) on another stream's position */
    EMU_OP_FAULT     /* an asynchronous fault: the context becomes unusable */
};

/* One event record: what a wait joins. */
typedef struct emu_rec {
    int refs;
    int done;
    emu_vc vc;
    double t;               /* the fake clock (ms) when it completes */
    int timing;
} emu_rec;

struct emu_standin;

typedef struct emu_op {
    int kind;
    struct emu_op *next;
    uint64_t id;
    uint32_t seq;
    double t;               /* fake completion time */
    double cost;            /* fake duration (ms), kept for graph replays */
    void *dst;
    const void *src;
    size_t width, height, dpitch, spitch;
    int value;
    unsigned char *staged;  /* a pageable source copied when the call was made */
    emu_rec *rec;
    struct emu_stream *other;
    uint32_t other_seq;
    struct emu_standin *standin;
    cudaError_t fault;
    /* for replay by a graph (emu_graph.c): the accesses declared */
    emu_access *acc;
    int n_acc;
    char what[200];
} emu_op;

typedef struct emu_stream {
    int id;                 /* the emulator's number, for messages */
    int lane;
    unsigned flags;         /* cudaStreamNonBlocking */
    int legacy;
    emu_vc vc;              /* the clock after the last enqueued operation */
    uint32_t last_seq, done_seq;
    long queued;            /* operations not yet completed */
    double t;               /* the fake clock after the last enqueued operation */
    emu_op *head, *tail;
    pthread_t thread;
    int stop, has_thread;
    pthread_cond_t cv;
    cudaError_t pending;    /* a stand-in's failure, returned by the next synchronization */
    char pending_text[512];
    char label[64];         /* "stream 2" once a node names its pool stream */
    unsigned rng;
    struct emu_capture *cap; /* the capture this stream belongs to now */
    int cap_origin;
    struct emu_gnode **deps; /* in a capture: the nodes the next one depends on */
    int n_deps, cap_deps;
} emu_stream;

/* The stream a handle names (NULL: the legacy stream; cudaStreamLegacy,
 * cudaStreamPerThread too); NULL when it is no live stream. */
emu_stream *emu_stream_get(cudaStream_t s);
emu_stream *emu_stream_new(unsigned flags);
void emu_stream_destroy(emu_stream *s);
/* "stream 2" or "CUDA stream #5" or "the legacy stream". */
const char *emu_stream_name(const emu_stream *s, char *buf, size_t n);

/* Enqueues op on s (lock held): its clock (the stream's, the host's, the
 * legacy stream's implicit order), the checker on acc (copied for graphs),
 * the fake clock advanced by cost_ms. In a capture, the op goes into the
 * graph instead. Returns 0, EMU_ERR_REPORT when the checker reported, or
 * cudaErrorIllegalAddress-as-a-queued-fault when an access points outside
 * every allocation (the op becomes an asynchronous fault, as on a GPU). */
cudaError_t emu_enqueue(emu_stream *s, emu_op *op, const emu_access *acc, int n_acc, double cost_ms);
emu_op *emu_op_new(int kind, const char *what);
void emu_op_free(emu_op *op);
/* Blocks until everything enqueued on s so far has run; joins the host's
 * clock; returns the stream's pending error, if any (lock held). */
cudaError_t emu_stream_sync(emu_stream *s);
/* The same for every stream. */
cudaError_t emu_device_sync(void);
/* 1 when everything enqueued on s has run. */
int emu_stream_idle(const emu_stream *s);
void emu_rec_put(emu_rec *r);
/* Waits (lock held) until record r completed. */
void emu_rec_wait(emu_rec *r);

/* ---- events (emu_stream.c) --------------------------------------------------------------- */

typedef struct emu_event {
    unsigned flags;
    emu_rec *rec;           /* the latest record, NULL before any */
    struct emu_capture *cap; /* recorded in a capture (still going): ... */
    struct emu_gnode **deps; /* ... the graph nodes a wait on it depends on */
    int n_deps;
} emu_event;
/* The event a handle names, or NULL (lock held). */
emu_event *emu_event_get(cudaEvent_t e);
/* A capture ended: events recorded in it are as if never recorded there. */
void emu_events_forget_capture(struct emu_capture *c);

/* ---- graphs (emu_graph.c) ------------------------------------------------------------------ */

struct emu_capture;
/* In a capture (lock held): takes op into the capture of s instead of running it. */
cudaError_t emu_capture_op(emu_stream *s, emu_op *op, const emu_access *acc, int n_acc);
/* 1 when the calling thread may not make a "potentially unsafe" call now
 * (a capture of its own, or a global-mode capture anywhere). */
int emu_capture_forbids_unsafe(void);
/* Invalidates the capture s belongs to (an illegal call was made in it);
 * s NULL: the calling thread's own capture, if any. */
void emu_capture_invalidate(emu_stream *s);
/* cudaStreamWaitEvent where s or the event takes part in a capture. */
cudaError_t emu_capture_wait(emu_stream *s, emu_event *ev);

/* ---- kernels and nodes (emu_launch.c) ---------------------------------------------------- */

/* The node being launched on this thread, or NULL: its accesses are what a
 * kernel or library call of its launcher is declared to make. */
typedef struct emu_node {
    const bd_cuda_kernel *k;
    int pool_stream;
    int launched;           /* a kernel or a library call was made: a stand-in is needed */
    int faulted;            /* BRAID_CUDA_EMULATOR_FAULT named it and its first launch faulted */
    emu_access *up;         /* device bytes its launcher wrote by copies and memsets so far */
    int n_up, cap_up;
} emu_node;
emu_node *emu_node_current(void);
/* A kernel or library compute call on s: the current node's accesses plus
 * extra; what names it. Fails with the checker's report, or queues a fault
 * when BRAID_CUDA_EMULATOR_FAULT asks. */
cudaError_t emu_compute(emu_stream *s, const char *what, const emu_access *extra, int n_extra, double cost_ms);
/* A copy or memset made by a node's launcher: what its kernels then read. */
void emu_node_note_write(const emu_access *a);
/* Runs a stand-in (a worker, lock not held): 0 or a message in err. */
int emu_standin_run(struct emu_standin *s, char *err, size_t n);
void emu_standin_free(struct emu_standin *s);
struct emu_standin *emu_standin_copy(const struct emu_standin *s);

/* The description of the current node for messages: "node 'x' (Conv) on stream 2: " or "". */
void emu_node_prefix(char *buf, size_t n);

/* ---- fake time ------------------------------------------------------------------------------- */

/* A fixed, seeded cost for library algorithm a of a call with key (for the
 * cuDNN algorithm search to have something to choose by). */
double emu_fake_algo_ms(uint64_t key, int algo);
uint64_t emu_hash(const void *p, size_t n, uint64_t h);

#endif
