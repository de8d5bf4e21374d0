/* emu_runtime.c: the emulated CUDA runtime's entry points other than copies,
 * graphs and launches: start-up and its switches, errors (the thread's last
 * error, sticky faults, injected failures, reports), the device (an H100 or
 * an H200, BRAID_CUDA_EMULATOR_DEVICE), allocations, streams and events.
 *
 * The switches, read once:
 *   BRAID_CUDA_EMULATOR_DEVICE=h100|h200  the device's properties (h100)
 *   BRAID_CUDA_EMULATOR_DELAY=SEED[:US]    random delays of up to US (200)
 *                                          microseconds before each operation
 *   BRAID_CUDA_EMULATOR_FAIL=NAME:N[,...]  the N-th call of NAME fails with
 *                                          its natural error
 *   BRAID_CUDA_EMULATOR_FAULT=kernel:N|node:NAME  that kernel launch (or the
 *                                          node's first) faults asynchronously
 *                                          with an illegal address
 *   BRAID_CUDA_EMULATOR_SEED=N             the fake timings' seed
 *   BRAID_CUDA_EMULATOR_TRACE=1            every operation, with what it reads and
 *                                          writes, on stderr as it is enqueued */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/emu/emu.h"

emu_state emu = {.mu = PTHREAD_MUTEX_INITIALIZER, .done_cv = PTHREAD_COND_INITIALIZER};

void emu_lock(void) { pthread_mutex_lock(&emu.mu); }
void emu_unlock(void) { pthread_mutex_unlock(&emu.mu); }

/* ---- errors --------------------------------------------------------------------------- */

static _Thread_local cudaError_t last_err;
static _Thread_local char report_text[1024];

cudaError_t emu_err(cudaError_t e)
{
    if (e != cudaSuccess) last_err = e;
    return e;
}

void emu_report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report_text, sizeof report_text, fmt, ap);
    va_end(ap);
    emu.reports++;
    snprintf(emu.last_report, sizeof emu.last_report, "%s", report_text);
    fprintf(stderr, "braid CUDA emulator: %s\n", report_text);
}

const char *emu_report_text(void) { return report_text; }

/* BRAID_CUDA_EMULATOR_FAIL's entries and each name's calls so far. */
typedef struct fail_rule {
    char name[64];
    long n, calls;
} fail_rule;
static fail_rule fails[16];
static int n_fails;

static void parse_fails(const char *v)
{
    while (v && *v && n_fails < 16) {
        const char *comma = strchr(v, ','), *colon = strchr(v, ':');
        size_t len = comma ? (size_t)(comma - v) : strlen(v);
        if (colon && colon < v + len && (size_t)(colon - v) < sizeof fails[0].name) {
            fail_rule *f = &fails[n_fails++];
            memcpy(f->name, v, (size_t)(colon - v));
            f->name[colon - v] = '\0';
            f->n = atol(colon + 1);
        }
        v = comma ? comma + 1 : NULL;
    }
}

int emu_fail_now(const char *name)
{
    if (emu_init() != cudaSuccess) return 1;
    int hit = 0;
    emu_lock();
    for (int i = 0; i < n_fails; i++)
        if (!strcmp(fails[i].name, name) && ++fails[i].calls == fails[i].n) hit = 1;
    emu_unlock();
    if (hit) fprintf(stderr, "braid CUDA emulator: %s fails as BRAID_CUDA_EMULATOR_FAIL asks\n", name);
    return hit;
}

cudaError_t emu_enter(const char *name, cudaError_t fail_code)
{
    cudaError_t e = emu_init();
    if (e) return e;
    if (emu_fail_now(name)) return fail_code;
    return emu.sticky;
}

cudaError_t cudaGetLastError(void)
{
    if (emu.sticky) return emu.sticky;
    cudaError_t e = last_err;
    last_err = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return emu.sticky ? emu.sticky : last_err; }

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorInvalidDeviceFunction: return "invalid device function";
    case cudaErrorInvalidPitchValue: return "invalid pitch argument";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureMerge: return "operation would result in a merge of separate capture sequences";
    case cudaErrorStreamCaptureUnmatched: return "capture was not ended in the same stream as it began";
    case cudaErrorStreamCaptureUnjoined: return "capturing stream has unjoined work";
    case cudaErrorStreamCaptureIsolation: return "dependency created on uncaptured work in another stream";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorStreamCaptureWrongThread: return "attempt to terminate a thread-local capture sequence from another thread";
    case EMU_ERR_REPORT: return report_text[0] ? report_text : "operation not permitted in the current state";
    default: return "unknown error";
    }
}

const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaError"; }

/* ---- start-up --------------------------------------------------------------------------- */

static const emu_device h100 = {"NVIDIA H100 80GB HBM3 (emulated by braid)", 85017755648ull, 132, 9, 0, 2619000, 5120,
                                52428800};
static const emu_device h200 = {"NVIDIA H200 (emulated by braid)", 150754820096ull, 132, 9, 0, 3201000, 6144, 62914560};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_err;

static int bd_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "true"));
}

void openblas_set_num_threads(int n); /* the stand-ins' GEMMs run on their stream's worker alone */

static void init_once(void)
{
    const char *d = getenv("BRAID_CUDA_EMULATOR_DEVICE");
    emu.dev = d && !strcmp(d, "h200") ? h200 : h100;
    if (d && strcmp(d, "h100") && strcmp(d, "h200"))
        fprintf(stderr, "braid CUDA emulator: BRAID_CUDA_EMULATOR_DEVICE=%s is not h100 or h200: emulating an H100\n", d);
    if ((init_err = emu_mem_init())) return;
    openblas_set_num_threads(1);
    const char *delay = getenv("BRAID_CUDA_EMULATOR_DELAY");
    if (delay && *delay && strcmp(delay, "0")) {
        emu.delay_seed = (unsigned)strtoul(delay, NULL, 10);
        const char *c = strchr(delay, ':');
        emu.delay_max_us = c ? atoi(c + 1) : 200;
        if (emu.delay_max_us < 1) emu.delay_max_us = 1;
    }
    const char *fault = getenv("BRAID_CUDA_EMULATOR_FAULT");
    if (fault && !strncmp(fault, "kernel:", 7)) emu.fault_kernel = atol(fault + 7);
    else if (fault && !strncmp(fault, "node:", 5)) snprintf(emu.fault_node, sizeof emu.fault_node, "%s", fault + 5);
    parse_fails(getenv("BRAID_CUDA_EMULATOR_FAIL"));
    emu.trace = bd_env_flag("BRAID_CUDA_EMULATOR_TRACE");
    emu_lock();
    emu.legacy = emu_stream_new(0);
    if (emu.legacy) emu.legacy->legacy = 1;
    else init_err = cudaErrorInitializationError;
    emu.ready = 1;
    emu_unlock();
}

cudaError_t emu_init(void)
{
    pthread_once(&once, init_once);
    return init_err;
}

uint64_t emu_hash(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    h ^= 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

double emu_fake_algo_ms(uint64_t key, int algo)
{
    static long seed = -1;
    if (seed < 0) {
        const char *s = getenv("BRAID_CUDA_EMULATOR_SEED");
        seed = s ? atol(s) : 0;
    }
    uint64_t h = emu_hash(&algo, sizeof algo, key ^ (uint64_t)seed * 0x9e3779b97f4a7c15ull);
    return 0.01 + (double)(h % 1000) / 1000.0 * 0.09; /* 10 to 100 microseconds */
}

/* ---- the device ------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    cudaError_t e = emu_enter("cudaGetDeviceCount", cudaErrorNoDevice);
    if (count) *count = e ? 0 : 1;
    return emu_err(count ? e : cudaErrorInvalidValue);
}

cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = emu_enter("cudaSetDevice", cudaErrorInvalidDevice);
    if (e) return emu_err(e);
    return emu_err(device == 0 ? cudaSuccess : cudaErrorInvalidDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    cudaError_t e = emu_enter("cudaGetDevice", cudaErrorInvalidValue);
    if (!e && device) *device = 0;
    return emu_err(e ? e : device ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int device)
{
    cudaError_t e = emu_enter("cudaGetDeviceProperties", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!p) return emu_err(cudaErrorInvalidValue);
    if (device != 0) return emu_err(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", emu.dev.name);
    p->totalGlobalMem = emu.dev.mem;
    p->sharedMemPerBlock = 49152;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = 2147483647;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = emu.dev.major;
    p->minor = emu.dev.minor;
    p->multiProcessorCount = emu.dev.sms;
    p->canMapHostMemory = 1;
    p->concurrentKernels = 1;
    p->asyncEngineCount = 3;
    p->unifiedAddressing = 1;
    p->l2CacheSize = emu.dev.l2;
    p->maxThreadsPerMultiProcessor = 2048;
    p->sharedMemPerMultiprocessor = 233472;
    p->sharedMemPerBlockOptin = 232448;
    p->managedMemory = 1;
    p->concurrentManagedAccess = 1;
    p->pageableMemoryAccess = 0; /* a kernel may not read pageable host memory: stricter than HMM systems */
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    cudaError_t e = emu_enter("cudaDeviceGetAttribute", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!value) return emu_err(cudaErrorInvalidValue);
    if (device != 0) return emu_err(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *value = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *value = 64; break;
    case cudaDevAttrMaxGridDimX: *value = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *value = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *value = 49152; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = 232448; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMultiProcessorCount: *value = emu.dev.sms; break;
    case cudaDevAttrComputeCapabilityMajor: *value = emu.dev.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = emu.dev.minor; break;
    case cudaDevAttrClockRate: *value = 1980000; break;
    case cudaDevAttrMemoryClockRate: *value = emu.dev.mem_clock_khz; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = emu.dev.bus_bits; break;
    case cudaDevAttrL2CacheSize: *value = emu.dev.l2; break;
    case cudaDevAttrCanMapHostMemory: case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory:
    case cudaDevAttrConcurrentManagedAccess: case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrPageableMemoryAccess: *value = 0; break;
    case cudaDevAttrAsyncEngineCount: *value = 3; break;
    default: return emu_err(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    cudaError_t e = emu_enter("cudaDriverGetVersion", cudaErrorInvalidValue);
    if (!e && v) *v = CUDART_VERSION;
    return emu_err(e ? e : v ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    cudaError_t e = emu_enter("cudaRuntimeGetVersion", cudaErrorInvalidValue);
    if (!e && v) *v = CUDART_VERSION;
    return emu_err(e ? e : v ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    cudaError_t e = emu_enter("cudaMemGetInfo", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    emu_lock();
    if (free_b) *free_b = emu.dev.mem - emu.dev_used;
    if (total) *total = emu.dev.mem;
    emu_unlock();
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    cudaError_t e = emu_enter("cudaDeviceSynchronize", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    emu_lock();
    if (emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        emu_unlock();
        return emu_err(cudaErrorStreamCaptureUnsupported);
    }
    e = emu_device_sync();
    emu_unlock();
    return emu_err(e);
}

/* ---- allocations -------------------------------------------------------------------------- */

/* An allocation: refused while the thread may not make unsafe calls. */
static cudaError_t alloc(const char *name, int kind, unsigned flags, void **p, size_t n)
{
    cudaError_t e = emu_enter(name, cudaErrorMemoryAllocation);
    if (e) return emu_err(e);
    if (!p) return emu_err(cudaErrorInvalidValue);
    *p = NULL;
    if (!n && kind == EMU_MEM_DEVICE) return cudaSuccess;
    emu_lock();
    if (emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        emu_unlock();
        return emu_err(cudaErrorStreamCaptureUnsupported);
    }
    e = emu_alloc_new(kind, n, p);
    if (!e) emu_alloc_find((uintptr_t)*p)->flags = flags;
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaMalloc(void **p, size_t n) { return alloc("cudaMalloc", EMU_MEM_DEVICE, 0, p, n); }

cudaError_t cudaMallocManaged(void **p, size_t n, unsigned int flags)
{
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return emu_err(cudaErrorInvalidValue);
    return alloc("cudaMallocManaged", EMU_MEM_MANAGED, flags, p, n);
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
        return emu_err(cudaErrorInvalidValue);
    return alloc("cudaHostAlloc", EMU_MEM_PINNED, flags, p, n);
}

cudaError_t cudaMallocHost(void **p, size_t n) { return alloc("cudaMallocHost", EMU_MEM_PINNED, 0, p, n); }

static cudaError_t release(const char *name, void *p, int kinds)
{
    cudaError_t e = emu_enter(name, cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!p) return cudaSuccess;
    emu_lock();
    if (emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        emu_unlock();
        return emu_err(cudaErrorStreamCaptureUnsupported);
    }
    e = emu_alloc_free(p, kinds);
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaFree(void *p)
{
    return release("cudaFree", p, 1 << EMU_MEM_DEVICE | 1 << EMU_MEM_MANAGED);
}

cudaError_t cudaFreeHost(void *p) { return release("cudaFreeHost", p, 1 << EMU_MEM_PINNED); }

cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags)
{
    cudaError_t e = emu_enter("cudaHostGetDevicePointer", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!dev || flags) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_alloc *a = emu_alloc_find((uintptr_t)host);
    int ok = a && a->kind == EMU_MEM_PINNED && (a->flags & cudaHostAllocMapped);
    emu_unlock();
    *dev = ok ? host : NULL; /* unified addressing: the same address */
    return emu_err(ok ? cudaSuccess : cudaErrorInvalidValue);
}

/* ---- streams ----------------------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
    cudaError_t e = emu_enter("cudaStreamCreateWithFlags", cudaErrorMemoryAllocation);
    if (e) return emu_err(e);
    if (!out || (flags & ~(unsigned)cudaStreamNonBlocking)) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_stream *s = emu_stream_new(flags);
    if (s) emu.live_streams++;
    emu_unlock();
    *out = (cudaStream_t)s;
    return emu_err(s ? cudaSuccess : cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamCreate(cudaStream_t *out) { return cudaStreamCreateWithFlags(out, cudaStreamDefault); }

cudaError_t cudaStreamDestroy(cudaStream_t h)
{
    cudaError_t e = emu_enter("cudaStreamDestroy", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_stream *s = h ? emu_stream_get(h) : NULL;
    if (!s || s->legacy) {
        emu_unlock();
        return emu_err(cudaErrorInvalidResourceHandle);
    }
    if (s->cap) emu_capture_invalidate(s);
    emu.live_streams--;
    emu_stream_destroy(s);
    emu_unlock();
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t h)
{
    cudaError_t e = emu_enter("cudaStreamSynchronize", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (s->cap) { /* a capture cannot wait for itself */
        emu_capture_invalidate(s);
        e = cudaErrorStreamCaptureUnsupported;
    } else if (s->legacy && emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        e = cudaErrorStreamCaptureUnsupported;
    } else {
        e = emu_stream_sync(s);
    }
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaStreamQuery(cudaStream_t h)
{
    cudaError_t e = emu_enter("cudaStreamQuery", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_stream *s = emu_stream_get(h);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (s->cap) {
        emu_capture_invalidate(s);
        e = cudaErrorStreamCaptureUnsupported;
    } else if (!emu_stream_idle(s)) {
        e = cudaErrorNotReady;
    } else {
        e = emu_stream_sync(s); /* idle: observing it orders the host after its work */
    }
    emu_unlock();
    return e == cudaErrorNotReady ? e : emu_err(e);
}

/* ---- events ------------------------------------------------------------------------------- */

static emu_event **events;
static int n_events, cap_events;

emu_event *emu_event_get(cudaEvent_t h)
{
    for (int i = 0; h && i < n_events; i++)
        if ((cudaEvent_t)events[i] == h) return events[i];
    return NULL;
}

void emu_events_forget_capture(struct emu_capture *c)
{
    for (int i = 0; i < n_events; i++)
        if (events[i]->cap == c) {
            events[i]->cap = NULL;
            free(events[i]->deps);
            events[i]->deps = NULL;
            events[i]->n_deps = 0;
        }
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
    cudaError_t e = emu_enter("cudaEventCreateWithFlags", cudaErrorMemoryAllocation);
    if (e) return emu_err(e);
    unsigned known = cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;
    if (!out || (flags & ~known) || ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)))
        return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_event *ev = calloc(1, sizeof *ev);
    if (ev && n_events == cap_events) {
        int cap = cap_events ? 2 * cap_events : 64;
        emu_event **t = realloc(events, (size_t)cap * sizeof *t);
        if (t) { events = t; cap_events = cap; }
    }
    if (ev && n_events < cap_events) {
        ev->flags = flags;
        events[n_events++] = ev;
        emu.live_events++;
    } else {
        free(ev);
        ev = NULL;
    }
    emu_unlock();
    *out = (cudaEvent_t)ev;
    return emu_err(ev ? cudaSuccess : cudaErrorMemoryAllocation);
}

cudaError_t cudaEventCreate(cudaEvent_t *out) { return cudaEventCreateWithFlags(out, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t h)
{
    cudaError_t e = emu_enter("cudaEventDestroy", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_event *ev = emu_event_get(h);
    if (ev) {
        for (int i = 0; i < n_events; i++)
            if (events[i] == ev) { events[i] = events[--n_events]; break; }
        emu_rec_put(ev->rec);
        free(ev->deps);
        free(ev);
        emu.live_events--;
    }
    emu_unlock();
    return emu_err(ev ? cudaSuccess : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t h, cudaStream_t sh)
{
    cudaError_t e = emu_enter("cudaEventRecord", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_event *ev = emu_event_get(h);
    emu_stream *s = emu_stream_get(sh);
    if (!ev || !s) {
        emu_unlock();
        return emu_err(cudaErrorInvalidResourceHandle);
    }
    if (s->cap) { /* in a capture: the event marks the stream's current nodes */
        free(ev->deps);
        ev->deps = NULL;
        ev->n_deps = 0;
        ev->cap = s->cap;
        if (s->n_deps && (ev->deps = malloc((size_t)s->n_deps * sizeof *ev->deps))) {
            memcpy(ev->deps, s->deps, (size_t)s->n_deps * sizeof *ev->deps);
            ev->n_deps = s->n_deps;
        }
        emu_unlock();
        return cudaSuccess;
    }
    emu_rec *r = calloc(1, sizeof *r);
    emu_op *op = emu_op_new(EMU_OP_RECORD, "cudaEventRecord");
    if (!r || !op) {
        free(r);
        emu_op_free(op);
        emu_unlock();
        return emu_err(cudaErrorMemoryAllocation);
    }
    r->refs = 2; /* the event's and the op's */
    r->timing = !(ev->flags & cudaEventDisableTiming);
    op->rec = r;
    ev->cap = NULL;
    emu_rec_put(ev->rec);
    ev->rec = r;
    e = emu_enqueue(s, op, NULL, 0, 0);
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t sh, cudaEvent_t h, unsigned int flags)
{
    cudaError_t e = emu_enter("cudaStreamWaitEvent", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    if (flags) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_event *ev = emu_event_get(h);
    emu_stream *s = emu_stream_get(sh);
    if (!ev || !s) e = cudaErrorInvalidResourceHandle;
    else if (ev->cap || s->cap) e = emu_capture_wait(s, ev);
    else if (ev->rec) { /* a wait on an event never recorded is complete at once */
        emu_op *op = emu_op_new(EMU_OP_WAIT, "cudaStreamWaitEvent");
        if (!op) e = cudaErrorMemoryAllocation;
        else {
            op->rec = ev->rec;
            ev->rec->refs++;
            e = emu_enqueue(s, op, NULL, 0, 0);
        }
    }
    emu_unlock();
    return emu_err(e);
}

/* Query and synchronize: the host learns the record's clock once it completed. */
static cudaError_t event_done(const char *name, cudaEvent_t h, int wait)
{
    cudaError_t e = emu_enter(name, cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    emu_lock();
    emu_event *ev = emu_event_get(h);
    if (!ev) e = cudaErrorInvalidResourceHandle;
    else if (ev->cap) e = cudaErrorCapturedEvent;
    else if (wait && emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        e = cudaErrorStreamCaptureUnsupported;
    } else if (ev->rec) {
        if (!ev->rec->done && !wait) e = cudaErrorNotReady;
        else {
            emu_rec_wait(ev->rec);
            emu_vc_join(emu_host_vc(), &ev->rec->vc);
            emu_mem_reprotect_all();
            e = emu.sticky;
        }
    }
    emu_unlock();
    return e == cudaErrorNotReady ? e : emu_err(e);
}

cudaError_t cudaEventQuery(cudaEvent_t h) { return event_done("cudaEventQuery", h, 0); }
cudaError_t cudaEventSynchronize(cudaEvent_t h) { return event_done("cudaEventSynchronize", h, 1); }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    cudaError_t e = emu_enter("cudaEventElapsedTime", cudaErrorInvalidResourceHandle);
    if (e) return emu_err(e);
    if (!ms) return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_event *x = emu_event_get(a), *y = emu_event_get(b);
    if (!x || !y || (x->flags & cudaEventDisableTiming) || (y->flags & cudaEventDisableTiming) || !x->rec || !y->rec)
        e = cudaErrorInvalidResourceHandle;
    else if (!x->rec->done || !y->rec->done) e = cudaErrorNotReady;
    else *ms = (float)(y->rec->t - x->rec->t); /* the fake clock: deterministic */
    emu_unlock();
    return emu_err(e);
}
