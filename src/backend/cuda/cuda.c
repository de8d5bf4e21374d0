/* cuda.c: the CUDA backend's session half: the device probe, the device and
 * library versions, the pool of non-blocking streams (grown to the widest
 * plan prepared) with a cuDNN handle, a cuBLAS handle and a workspace each,
 * every initializer uploaded once into one allocation, the caller's
 * host-shared input buffers (of the session's I/O mode), and the counted
 * creation of every stream, event, handle and allocation. The plan half
 * (arena, I/O buffers, events, the enqueue walk, CUDA graphs) is cuda_plan.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "runtime/notes.h"

#define WEIGHT_ALIGN 256

static bd_cuda_live g_live; /* the process's live objects */

void bd_cu_count_field(cuda_state *s, size_t offset, long delta)
{
    __atomic_add_fetch((long *)((char *)&g_live + offset), delta, __ATOMIC_RELAXED);
    if (s) __atomic_add_fetch((long *)((char *)&s->live + offset), delta, __ATOMIC_RELAXED);
}

static void load_counts(const bd_cuda_live *src, bd_cuda_live *c)
{
    c->streams = __atomic_load_n(&src->streams, __ATOMIC_RELAXED);
    c->events = __atomic_load_n(&src->events, __ATOMIC_RELAXED);
    c->cudnn = __atomic_load_n(&src->cudnn, __ATOMIC_RELAXED);
    c->cublas = __atomic_load_n(&src->cublas, __ATOMIC_RELAXED);
    c->allocs = __atomic_load_n(&src->allocs, __ATOMIC_RELAXED);
    c->graphs = __atomic_load_n(&src->graphs, __ATOMIC_RELAXED);
}

void bd_cuda_global_counts(bd_cuda_live *c) { load_counts(&g_live, c); }

void bd_cuda_session_counts(const void *state, bd_cuda_live *c)
{
    memset(c, 0, sizeof *c);
    if (state) load_counts(&((const cuda_state *)state)->live, c);
}

void bd_cuda_counts(void *state, long *streams_live, long *events_live)
{
    bd_cuda_live c;
    bd_cuda_session_counts(state, &c);
    if (streams_live) *streams_live = c.streams;
    if (events_live) *events_live = c.events;
}

/* ---- counted objects ------------------------------------------------------------ */

static double mib(size_t n) { return (double)n / (1024.0 * 1024.0); }

/* BRAID_CUDA_POISON=1 (the GPU tests set it): fresh device, managed and
 * pinned memory is filled with 0xFF bytes (NaN in every float type), so that
 * an output or intermediate nobody wrote shows instead of reading as the
 * zeros a fresh allocation often holds. The emulated device does it always. */
static int poison_on(void)
{
    static int on = -1;
    if (on < 0) on = bd_cuda_sync_enabled(getenv("BRAID_CUDA_POISON"));
    return on;
}

/* The poisoning of a fresh allocation *p of n bytes; on failure it is freed. */
static braid_status poisoned(cuda_state *s, void **p, size_t n, int host, bd_err *e)
{
    braid_status st = BRAID_OK;
    if (!poison_on() || !n) return BRAID_OK;
    if (host) {
        memset(*p, 0xFF, n);
        return BRAID_OK;
    }
    /* On the legacy stream, then waited for: the pool's non-blocking streams
     * would not wait for it. */
    BD_CUDA_TRY(e, cudaMemset(*p, 0xFF, n));
    BD_CUDA_TRY(e, cudaStreamSynchronize(cudaStreamLegacy));
    return BRAID_OK;
fail:
    bd_cu_free_kind(s, *p, host ? BD_MEM_PINNED : BD_MEM_DEVICE);
    *p = NULL;
    return st;
}

braid_status bd_cu_malloc(cuda_state *s, void **p, size_t n, bd_err *e)
{
    *p = NULL;
    cudaError_t ce = cudaMalloc(p, n ? n : 1);
    if (ce != cudaSuccess) {
        *p = NULL;
        cudaGetLastError(); /* an allocation failure is not sticky: clear it */
        return BD_FAIL(e, ce == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE,
                       "cannot allocate %.1f MiB of device memory: %s", mib(n), cudaGetErrorString(ce));
    }
    BD_CU_COUNT(s, allocs, 1);
    return poisoned(s, p, n, 0, e);
}

braid_status bd_cu_malloc_managed(cuda_state *s, void **p, size_t n, bd_err *e)
{
    *p = NULL;
    cudaError_t ce = cudaMallocManaged(p, n ? n : 1, cudaMemAttachGlobal);
    if (ce != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        return BD_FAIL(e, ce == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE,
                       "cannot allocate %.1f MiB of managed (host-shared) memory: %s", mib(n),
                       cudaGetErrorString(ce));
    }
    BD_CU_COUNT(s, allocs, 1);
    return poisoned(s, p, n, 0, e);
}

braid_status bd_cu_malloc_pinned(cuda_state *s, void **p, size_t n, bd_err *e)
{
    *p = NULL;
    cudaError_t ce = cudaHostAlloc(p, n ? n : 1, cudaHostAllocPortable | cudaHostAllocMapped);
    if (ce != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        return BD_FAIL(e, ce == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE,
                       "cannot allocate %.1f MiB of pinned (page-locked) host memory: %s", mib(n),
                       cudaGetErrorString(ce));
    }
    BD_CU_COUNT(s, allocs, 1);
    return poisoned(s, p, n, 1, e);
}

void bd_cu_free(cuda_state *s, void *p)
{
    if (!p) return;
    cudaFree(p);
    BD_CU_COUNT(s, allocs, -1);
}

void bd_cu_free_kind(cuda_state *s, void *p, int kind)
{
    if (!p) return;
    if (kind == BD_MEM_PINNED) {
        cudaFreeHost(p);
        BD_CU_COUNT(s, allocs, -1);
    } else {
        bd_cu_free(s, p);
    }
}

cudaError_t bd_cuda_scratch_alloc(void **p, size_t n)
{
    cudaError_t ce = cudaMalloc(p, n ? n : 1);
    if (ce == cudaSuccess) BD_CU_COUNT(NULL, allocs, 1);
    else { *p = NULL; cudaGetLastError(); }
    return ce;
}

void bd_cuda_scratch_free(void *p) { bd_cu_free(NULL, p); }

braid_status bd_cu_event_create(cuda_state *s, cudaEvent_t *ev, int timing, bd_err *e)
{
    cudaError_t ce = cudaEventCreateWithFlags(ev, timing ? cudaEventDefault : cudaEventDisableTiming);
    if (ce != cudaSuccess) {
        *ev = NULL;
        return BD_FAIL(e, BRAID_ERR_DEVICE, "cudaEventCreateWithFlags failed: %s", cudaGetErrorString(ce));
    }
    BD_CU_COUNT(s, events, 1);
    return BRAID_OK;
}

void bd_cu_event_destroy(cuda_state *s, cudaEvent_t ev)
{
    if (!ev) return;
    cudaEventDestroy(ev);
    BD_CU_COUNT(s, events, -1);
}

/* ---- the probe ------------------------------------------------------------------- */

int bd_cuda_probe(char *why, size_t n)
{
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess) {
        cudaGetLastError();
        if (!why || !n) return 0;
        if (ce == cudaErrorInsufficientDriver)
            snprintf(why, n, "no NVIDIA driver is loaded, or it is older than CUDA runtime %d.%d needs (%s)",
                     CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10, cudaGetErrorString(ce));
        else
            snprintf(why, n, "%s", cudaGetErrorString(ce));
        return 0;
    }
    if (count < 1) {
        if (why && n) snprintf(why, n, "the CUDA runtime reports no devices");
        return 0;
    }
    return 1;
}

/* ---- the stream pool ------------------------------------------------------------- */

static void stream_destroy(cuda_state *s, cuda_stream *cs)
{
    if (cs->s) cudaStreamSynchronize(cs->s);
    if (cs->dnn) { cudnnDestroy(cs->dnn); BD_CU_COUNT(s, cudnn, -1); }
    if (cs->blas) { cublasDestroy(cs->blas); BD_CU_COUNT(s, cublas, -1); }
    bd_cu_free(s, cs->ws);
    if (cs->s) { cudaStreamDestroy(cs->s); BD_CU_COUNT(s, streams, -1); }
    memset(cs, 0, sizeof *cs);
}

/* A stream, its cuDNN and cuBLAS handles bound to it, and its workspace:
 * ws_budget bytes for cuDNN and the kernels, then blas_ws bytes for cuBLAS,
 * so that cuBLAS never allocates while a CUDA graph is being captured. */
static braid_status stream_make(cuda_state *s, cuda_stream *cs, bd_err *e)
{
    braid_status st = BRAID_OK;
    memset(cs, 0, sizeof *cs);
    BD_CUDA_TRY(e, cudaStreamCreateWithFlags(&cs->s, cudaStreamNonBlocking));
    BD_CU_COUNT(s, streams, 1);
    BD_CUDNN_TRY(e, cudnnCreate(&cs->dnn));
    BD_CU_COUNT(s, cudnn, 1);
    BD_CUDNN_TRY(e, cudnnSetStream(cs->dnn, cs->s));
    BD_CUBLAS_TRY(e, cublasCreate(&cs->blas));
    BD_CU_COUNT(s, cublas, 1);
    BD_CUBLAS_TRY(e, cublasSetStream(cs->blas, cs->s));
    BD_CUBLAS_TRY(e, cublasSetMathMode(cs->blas, s->allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    BD_TRY(bd_cu_malloc(s, &cs->ws, s->ws_budget + s->blas_ws, e));
    cs->ws_size = s->ws_budget;
    BD_CUBLAS_TRY(e, cublasSetWorkspace(cs->blas, (char *)cs->ws + s->ws_budget, s->blas_ws));
    return BRAID_OK;
fail:
    stream_destroy(s, cs);
    return st;
}

braid_status bd_cu_pool_grow(cuda_state *s, int n, bd_err *e)
{
    braid_status st = BRAID_OK;
    if (n <= s->n_streams) return BRAID_OK;
    cuda_stream *pool = bd_realloc(s->streams, (size_t)n * sizeof *pool);
    BD_CHECK_ALLOC(e, pool);
    s->streams = pool;
    while (s->n_streams < n) {
        BD_TRY(stream_make(s, &s->streams[s->n_streams], e));
        s->n_streams++;
    }
    return BRAID_OK;
fail:
    return st;
}

/* ---- host-shared input buffers ---------------------------------------------------- */

/* One input buffer of the session's I/O mode: pinned host memory (staged,
 * mapped), or managed memory advised read-mostly (managed: a prefetch makes a
 * device copy and the host's stays valid, so the host's next write does not
 * fault the pages back from the device). */
static braid_status cuda_alloc_shared(void *state, size_t bytes, void **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    cuda_state *s = state;
    struct shared_buf b = {.n = bytes, .kind = s->io == BD_IO_MANAGED ? BD_MEM_MANAGED : BD_MEM_PINNED};
    *out = NULL;
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    if (s->n_shared == s->cap_shared) {
        int cap = s->cap_shared ? 2 * s->cap_shared : 8;
        struct shared_buf *t = bd_realloc(s->shared, (size_t)cap * sizeof *t);
        BD_CHECK_ALLOC(e, t);
        s->shared = t;
        s->cap_shared = cap;
    }
    if (b.kind == BD_MEM_MANAGED) {
        size_t free_b = 0, total_b = 0;
        BD_CUDA_TRY(e, cudaMemGetInfo(&free_b, &total_b));
        if (bytes > free_b) {
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "an input buffer of %.1f MiB of host-shared (managed) memory "
                         "is more than the %.1f MiB CUDA device %d has free", mib(bytes), mib(free_b), s->device);
            goto fail;
        }
        BD_TRY(bd_cu_malloc_managed(s, &b.p, bytes, e));
        b.dev = b.p;
#if CUDART_VERSION >= 13000
        struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = s->device};
        cudaError_t ce = cudaMemAdvise(b.p, bytes ? bytes : 1, cudaMemAdviseSetReadMostly, loc);
#else
        cudaError_t ce = cudaMemAdvise(b.p, bytes ? bytes : 1, cudaMemAdviseSetReadMostly, s->device);
#endif
        if (ce != cudaSuccess) {
            cudaGetLastError();
            bd_notes_add(s->notes, "BRAID_CUDA_IO=managed: cudaMemAdvise(SetReadMostly) on an input buffer failed "
                         "(%s): the host's writes may fault its pages back from the device", cudaGetErrorString(ce));
        }
    } else {
        BD_TRY(bd_cu_malloc_pinned(s, &b.p, bytes, e));
        cudaError_t ce = cudaHostGetDevicePointer(&b.dev, b.p, 0);
        if (ce != cudaSuccess) {
            cudaGetLastError();
            b.dev = NULL; /* not mapped: runs copy it to the device instead (cuda_plan.c) */
            if (s->io == BD_IO_MAPPED)
                bd_notes_add(s->notes, BD_CUDA_IO_ENV "=mapped: an input buffer has no device mapping "
                             "(cudaHostGetDevicePointer: %s): runs copy it to the device instead",
                             cudaGetErrorString(ce));
        }
    }
    s->shared[s->n_shared++] = b;
    *out = b.p;
    return BRAID_OK;
fail:
    return st;
}

static void cuda_free_shared(void *state, void *p)
{
    cuda_state *s = state;
    for (int i = 0; i < s->n_shared; i++)
        if (s->shared[i].p == p) {
            cudaSetDevice(s->device);
            for (int t = 0; t < s->n_streams; t++) cudaStreamSynchronize(s->streams[t].s);
            bd_cu_free_kind(s, p, s->shared[i].kind);
            s->shared[i] = s->shared[--s->n_shared];
            return;
        }
}

const struct shared_buf *bd_cu_shared_find(const cuda_state *s, const void *p, size_t n)
{
    for (int i = 0; i < s->n_shared; i++) {
        const char *b = s->shared[i].p;
        if ((const char *)p >= b && (const char *)p + n <= b + s->shared[i].n) return &s->shared[i];
    }
    return NULL;
}

int bd_cu_is_shared(const cuda_state *s, const void *p, size_t n) { return bd_cu_shared_find(s, p, n) != NULL; }

/* ---- the session ----------------------------------------------------------------- */

static void cuda_close(void *state)
{
    cuda_state *s = state;
    if (!s) return;
    cudaSetDevice(s->device);
    for (int i = 0; i < s->n_streams; i++) /* a failed run's work may still read host nodes' memory */
        cudaStreamSynchronize(s->streams[i].s);
    bd_cuda_host_destroy(s);
    for (int i = 0; i < s->n_streams; i++) stream_destroy(s, &s->streams[i]);
    bd_free(s->streams);
    bd_cu_free(s, s->weights);
    for (int i = 0; i < s->n_shared; i++) bd_cu_free_kind(s, s->shared[i].p, s->shared[i].kind); /* the API frees them first */
    bd_free(s->shared);
    bd_free(s->weight_off);
    bd_free(s);
}

/* Every initializer (and Constant output) goes into one device allocation: a
 * table of aligned offsets, one cudaMalloc, one copy each. */
static braid_status upload_weights(cuda_state *s, const bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    s->weight_off = bd_malloc(((size_t)g->n_values + 1) * sizeof *s->weight_off);
    BD_CHECK_ALLOC(e, s->weight_off);
    s->n_weight_off = g->n_values;
    size_t total = 0;
    for (int v = 0; v < g->n_values; v++) {
        const bd_value *val = &g->values[v];
        s->weight_off[v] = SIZE_MAX;
        if (!(val->flags & BD_VAL_CONST) || !val->data || val->rank < 0) continue;
        bd_tensor t = {.dtype = val->dtype, .rank = val->rank};
        memcpy(t.dims, val->dims, sizeof t.dims);
        size_t bytes;
        BD_TRY(bd_tensor_nbytes(&t, &bytes, e));
        if (!bytes) continue;
        s->weight_off[v] = total;
        total += BD_CEIL_DIV(bytes, WEIGHT_ALIGN) * WEIGHT_ALIGN;
    }
    s->weights_size = total;
    if (!total) return BRAID_OK;
    st = bd_cu_malloc(s, &s->weights, total, e);
    if (st) { bd_err_prefix(e, "uploading the weights: "); goto fail; }
    for (int v = 0; v < g->n_values; v++) {
        if (s->weight_off[v] == SIZE_MAX) continue;
        const bd_value *val = &g->values[v];
        bd_tensor t = {.dtype = val->dtype, .rank = val->rank};
        memcpy(t.dims, val->dims, sizeof t.dims);
        size_t bytes;
        BD_TRY(bd_tensor_nbytes(&t, &bytes, e));
        BD_CUDA_TRY(e, cudaMemcpy((char *)s->weights + s->weight_off[v], val->data, bytes, cudaMemcpyHostToDevice));
    }
    /* A cudaMemcpy from pageable memory may return before its DMA lands, and the
     * pool's non-blocking streams do not wait for the legacy stream it ran on. */
    BD_CUDA_TRY(e, cudaStreamSynchronize(cudaStreamLegacy));
    return BRAID_OK;
fail:
    return st;
}

/* The device and the library versions the session runs with (cuDNN and
 * cuBLAS as loaded at run time), and the line that says them. */
static void read_versions(cuda_state *s)
{
    bd_cuda_versions *v = &s->ver;
    struct cudaDeviceProp prop;
    memset(v, 0, sizeof *v);
    if (cudaGetDeviceProperties(&prop, s->device) == cudaSuccess) {
        snprintf(v->name, sizeof v->name, "%s", prop.name);
        v->cc_major = prop.major;
        v->cc_minor = prop.minor;
        v->sms = prop.multiProcessorCount;
        v->mem_bytes = prop.totalGlobalMem;
    } else {
        cudaGetLastError();
        snprintf(v->name, sizeof v->name, "CUDA device %d", s->device);
    }
    int clk_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clk_khz, cudaDevAttrMemoryClockRate, s->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, s->device) != cudaSuccess) {
        cudaGetLastError();
        clk_khz = bus_bits = 0;
    }
    v->mem_bw = 2.0 * clk_khz * 1e3 * bus_bits / 8.0; /* double data rate */
    if (cudaDriverGetVersion(&v->driver_api) != cudaSuccess) cudaGetLastError();
    if (cudaRuntimeGetVersion(&v->runtime) != cudaSuccess) cudaGetLastError();
    v->cudnn = (long)cudnnGetVersion();
    v->cudnn_built = CUDNN_VERSION;
    cublasGetProperty(MAJOR_VERSION, &v->cublas[0]);
    cublasGetProperty(MINOR_VERSION, &v->cublas[1]);
    cublasGetProperty(PATCH_LEVEL, &v->cublas[2]);
    v->cublas_built = CUBLAS_VERSION;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f) {
        char text[1024];
        size_t got = fread(text, 1, sizeof text - 1, f);
        text[got] = '\0';
        fclose(f);
        bd_nvidia_driver_release(text, v->driver, sizeof v->driver);
    }
    v->io = bd_cuda_io_name(s->io);
    bd_cuda_version_line(s->info, sizeof s->info, v);
}

static const char *cuda_device_info(void *state, double *mem_bw)
{
    cuda_state *s = state;
    if (mem_bw) *mem_bw = s ? s->ver.mem_bw : 0;
    return s ? s->info : "";
}

/* The switches of the environment: BRAID_CUDA_SYNC, BRAID_CUDA_TUNE and
 * BRAID_CUDA_IO (whose mode the device must be able to do: when it cannot,
 * a note says which mode runs instead). */
static braid_status read_env(cuda_state *s, bd_err *e)
{
    braid_status st = BRAID_OK;
    s->sync = bd_cuda_sync_enabled(getenv(BD_CUDA_SYNC_ENV));
    const char *tune = getenv("BRAID_CUDA_TUNE");
    s->tune = !(tune && !strcmp(tune, "0"));
    BD_TRY(bd_cuda_io_parse(getenv(BD_CUDA_IO_ENV), &s->io, e));
    if (s->io == BD_IO_MANAGED && !s->concurrent_managed) {
        bd_notes_add(s->notes, BD_CUDA_IO_ENV "=managed needs concurrent managed access (prefetch), which CUDA "
                     "device %d lacks: inputs and outputs are staged through pinned memory instead", s->device);
        s->io = BD_IO_STAGED;
    }
    if (s->io == BD_IO_MAPPED) {
        int can = 0;
        if (cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, s->device) != cudaSuccess) cudaGetLastError();
        if (!can) {
            bd_notes_add(s->notes, BD_CUDA_IO_ENV "=mapped: CUDA device %d cannot map host memory: inputs and "
                         "outputs are staged through pinned memory instead", s->device);
            s->io = BD_IO_STAGED;
        }
    }
    return BRAID_OK;
fail:
    return st;
}

static braid_status cuda_open(const bd_graph *g, const bd_exec_opts *o, void **state, bd_err *e)
{
    braid_status st = BRAID_OK;
    int count = 0, cma = 0;
    cuda_state *s = bd_calloc(1, sizeof *s);
    if (!s) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    bd_cuda_host_init(s);
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count < 1) {
        cudaGetLastError();
        st = BD_FAIL(e, BRAID_ERR_NO_DEVICE, "no CUDA device answers: %s",
                     ce != cudaSuccess ? cudaGetErrorString(ce) : "the runtime reports no devices");
        goto fail;
    }
    if (o->device < 0 || o->device >= count) {
        st = BD_FAIL(e, BRAID_ERR_NO_DEVICE, "CUDA device %d was asked for but this machine has %d (0 to %d)",
                     o->device, count, count - 1);
        goto fail;
    }
    s->device = o->device;
    s->cuda_graph = o->cuda_graph;
    s->profile = o->profile;
    s->allow_tf32 = o->allow_tf32;
    s->notes = o->notes;
    s->ws_budget = o->cuda_workspace < 0 ? BD_CUDA_WORKSPACE_DEFAULT : (size_t)o->cuda_workspace;
    BD_CUDA_TRY(e, cudaSetDevice(s->device));
    BD_CUDA_TRY(e, cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, s->device));
    s->concurrent_managed = cma;
    BD_TRY(read_env(s, e));
    read_versions(s);
    s->blas_ws = bd_cublas_workspace_bytes(s->ver.cc_major);
    /* No streams yet: each plan grows the pool to the streams it uses (bd_cu_pool_grow). */
    BD_TRY(upload_weights(s, g, e));
    *state = s;
    return BRAID_OK;
fail:
    cuda_close(s);
    return st;
}

const bd_backend bd_backend_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .prepare = bd_cuda_plan_prepare,
    .release = bd_cuda_plan_release,
    .run = bd_cuda_plan_run,
    .read = bd_cuda_read,
    .alloc_shared = cuda_alloc_shared,
    .free_shared = cuda_free_shared,
    .counts = bd_cuda_counts,
    .device_info = cuda_device_info,
    .graph_info = bd_cuda_plan_graph_info,
    .node_note = bd_cuda_node_note,
    .fill_cost = 0.025, /* ~0.5 GFLOP at the cost model's 20 GFLOP/s: a few microseconds of a whole H100 */
};
