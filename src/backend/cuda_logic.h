/* cuda_logic.h: the CUDA backend's decisions that need no GPU, compiled into
 * braid's core (and into libbraid_cuda.so, which links the core) so that the
 * CPU tests check them: the texts of device faults, the choice of a cuDNN
 * algorithm from timings a callback supplies, the process-wide cache of those
 * choices, cuDNN's size limits, the version line, the I/O mode switch,
 * cuBLAS's workspace size, and the bytes a plan moves. No CUDA header here. */
#ifndef BD_CUDA_LOGIC_H
#define BD_CUDA_LOGIC_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* ---- fault texts ------------------------------------------------------------------ */

/* The switch that makes the CUDA backend synchronize after every call and
 * launch, so that a fault names the node that made it. */
#define BD_CUDA_SYNC_ENV "BRAID_CUDA_SYNC"
/* 1 when the value of BRAID_CUDA_SYNC turns it on ("1", "yes", "on", "true"). */
int bd_cuda_sync_enabled(const char *value);

/* The function a call expression calls: "cudnnConvolutionForward(k->cudnn, &one)"
 * gives "cudnnConvolutionForward"; a text that is no call is copied whole. */
const char *bd_cu_call_name(const char *expr, char *buf, size_t n);

/* "CALL: ERR": what failed (the function a call expression names) and why. */
void bd_cu_call_text(char *buf, size_t n, const char *expr, const char *err);

/* "node 'NAME' (OP) on stream S: ", the prefix of a fault a node made. */
void bd_cu_node_prefix(char *buf, size_t n, const char *node, const char *op, int stream);

/* The prefix of an asynchronous error that surfaced while a node was being
 * enqueued, without BRAID_CUDA_SYNC: it does not blame the node. */
void bd_cu_earlier_prefix(char *buf, size_t n, const char *node, const char *op, int stream);

/* The message of an asynchronous error found when a run ends (call: the call
 * that returned it, err: its text). sticky: the error leaves the CUDA context
 * unusable. Names the BRAID_CUDA_SYNC switch. */
void bd_cu_async_text(char *buf, size_t n, const char *call, const char *err, int sticky);

/* ---- cuDNN algorithm choice ---------------------------------------------------------- */

/* cudnnMathType_t's values. */
enum { BD_MATH_DEFAULT = 0, BD_MATH_TENSOR_OP = 1, BD_MATH_ALLOW_CONVERSION = 2, BD_MATH_FMA = 3 };

/* One candidate as cuDNN's heuristic lists it (best first): an algorithm,
 * the math type it was listed with, the workspace it needs. */
typedef struct bd_algo_cand {
    int algo;
    int math;
    size_t ws;
} bd_algo_cand;

/* Times candidate c as it would run (c->math is the math type to run it
 * with): 0 and *ms set, or nonzero when the library refuses it. */
typedef int (*bd_algo_timer)(void *ctx, const bd_algo_cand *c, double *ms);

#define BD_ALGO_MAX_TIMED 8 /* candidates timed at most, in the heuristic's order */

typedef struct bd_algo_pick {
    int algo, math;
    size_t ws;
    double ms;     /* its time (tuned only) */
    int tuned;     /* chosen by timing; 0: by the heuristic's order or the fallback */
    int eligible;  /* candidates that fit the budget and the math rule */
    int timed;     /* candidates timed */
    int refused;   /* candidates the timer refused */
    int fallback;  /* no candidate was eligible: the fallback algorithm */
} bd_algo_pick;

/* Picks the algorithm to run. A candidate is eligible when its workspace fits
 * budget and its math obeys tf32: ALLOW_CONVERSION (fp32 computed in fp16)
 * never; with tf32 off, only FMA and DEFAULT entries, both run with FMA math
 * (one candidate per algorithm); with tf32 on, each runs with its own math.
 * With a timer, up to BD_ALGO_MAX_TIMED eligible candidates are timed and the
 * fastest wins (ties: the heuristic's order); when the timer refuses them all,
 * or without a timer, the first eligible one wins. When none is eligible,
 * fallback_algo with no workspace (FMA math when tf32 is off, DEFAULT when on). */
void bd_algo_choose(const bd_algo_cand *cands, int n, size_t budget, int tf32, bd_algo_timer timer, void *ctx,
                    int fallback_algo, bd_algo_pick *out);

/* The process-wide cache of choices, keyed by everything that decides one
 * (direction, device, math rule, budget, the convolution's geometry): the
 * first run of a shape times, later plans and sessions reuse. Thread-safe,
 * fixed size (the oldest entry is replaced when full). */
#define BD_ALGO_KEY_LEN 48
typedef struct bd_algo_key {
    int64_t v[BD_ALGO_KEY_LEN];
} bd_algo_key;
int bd_algo_cache_get(const bd_algo_key *k, bd_algo_pick *out);
void bd_algo_cache_put(const bd_algo_key *k, const bd_algo_pick *p);
void bd_algo_cache_stats(long *hits, long *misses, int *entries);
void bd_algo_cache_clear(void);

/* ---- cuDNN's limits ------------------------------------------------------------------- */

/* The most elements (and the largest dim and stride) cuDNN takes in one
 * tensor: its descriptors hold int. */
#define BD_CUDNN_MAX_ELEMS 2147483647LL

/* Fails with LIMIT when a tensor of rank dims (as cuDNN would see it: packed
 * strides) has a dim, stride or element count cuDNN refuses; what names it. */
braid_status bd_cudnn_check_tensor(const char *what, int rank, const int64_t *dims, bd_err *e);

/* Every tensor cuDNN would see for a Conv or ConvTranspose node (the input,
 * padded where the pads are asymmetric, the weights, the output and, for a
 * ConvTranspose that crops, its uncropped output), and its pads, strides and
 * dilations: LIMIT naming the one refused. x, w, y: shapes only. */
braid_status bd_cudnn_conv_limits(const bd_node *n, const bd_tensor *x, const bd_tensor *w, const bd_tensor *y,
                                  bd_err *e);

/* ---- versions ------------------------------------------------------------------------ */

typedef struct bd_cuda_versions {
    char name[256];          /* device name */
    int cc_major, cc_minor;  /* compute capability */
    int sms;                 /* multiprocessors */
    size_t mem_bytes;        /* global memory */
    double mem_bw;           /* bytes/s, 0 when unknown */
    char driver[64];         /* the kernel module's release ("580.65.06"), "" when unknown */
    int driver_api;          /* cudaDriverGetVersion: 13000 = 13.0 */
    int runtime;             /* cudaRuntimeGetVersion */
    long cudnn, cudnn_built; /* cudnnGetVersion() at run time, CUDNN_VERSION at build */
    int cublas[3], cublas_built; /* cuBLAS major, minor, patch at run time; CUBLAS_VERSION at build */
    const char *io;          /* the I/O mode's name */
} bd_cuda_versions;

/* "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, 3352 GB/s); driver 580.65.06
 * (CUDA 13.0); runtime 13.0; cuDNN 9.19.0; cuBLAS 13.1.0; I/O staged", with
 * "(built with X)" after a library whose run-time version differs. */
void bd_cuda_version_line(char *buf, size_t n, const bd_cuda_versions *v);
/* cudnnGetVersion's number as major.minor.patch (cuDNN 9 counts 10000 per
 * major, earlier ones 1000). */
void bd_cudnn_version_split(long v, int *major, int *minor, int *patch);
/* The release in /proc/driver/nvidia/version's text ("... Kernel Module  580.65.06  ..."). */
int bd_nvidia_driver_release(const char *proc_text, char *buf, size_t n);

/* ---- I/O modes ------------------------------------------------------------------------- */

/* How graph inputs and outputs reach the device. The caller's host-shared
 * buffers (braid_session_input_buffer, the outputs a run returns) are:
 *   STAGED  pinned host memory; each run copies an input to a device buffer
 *           and an output back, one pinned DMA each way;
 *   MAPPED  pinned host memory the kernels read and write in place (no copy;
 *           every kernel access crosses the bus);
 *   MANAGED managed memory: inputs read-mostly and prefetched to the device
 *           (a device copy; the host's stays valid), outputs discarded and
 *           prefetched to the device before the run (no copy back of stale
 *           pages) and prefetched to the host after it.
 * An input in ordinary memory is copied (pageable) into a device buffer. */
typedef enum bd_cuda_io { BD_IO_STAGED = 0, BD_IO_MAPPED = 1, BD_IO_MANAGED = 2 } bd_cuda_io;
/* The mode used unless BRAID_CUDA_IO names another: the one place to change
 * once the GPU measurement (scripts/gpu-check) has picked the winner. */
#define BD_IO_DEFAULT BD_IO_STAGED
#define BD_CUDA_IO_ENV "BRAID_CUDA_IO"
const char *bd_cuda_io_name(int mode);
/* value NULL or "" gives BD_IO_DEFAULT; an unknown name fails with
 * INVALID_ARGUMENT naming the choices. */
braid_status bd_cuda_io_parse(const char *value, int *mode, bd_err *e);

/* ---- host nodes --------------------------------------------------------------------------- */

/* 1 when node n of instance x runs on the host inside a CUDA plan
 * (src/backend/cuda/cuda_host.c): its op works on host values (BD_OPF_HOST:
 * strings, sequences, optionals), or one of its inputs or outputs is a
 * string tensor, a sequence or an optional, whose contents live in host
 * memory on every backend (a CUDA plan holds only their pointers). Control
 * flow (If, Loop, Scan, SequenceMap) is never a host node: the nest engine
 * runs it on the node's stream. */
int bd_cuda_host_node(const bd_node *n, const bd_inst *x);

/* ---- sizes ------------------------------------------------------------------------------- */

/* cuBLAS's workspace per handle, as its documentation recommends
 * (cublasSetWorkspace): 32 MiB on Hopper and later, 4 MiB before. */
size_t bd_cublas_workspace_bytes(int cc_major);

/* The default cuDNN workspace per stream when the session does not set one. */
#define BD_CUDA_WORKSPACE_DEFAULT ((size_t)64 << 20)

/* The bytes plan p moves if each of its nodes reads its inputs and writes
 * its outputs once (weights included): what the physical limit of a run
 * divides by the card's memory bandwidth. */
double bd_plan_traffic_bytes(const bd_prepared *p);

#endif
