/* test_emulator.c: the emulated CUDA device's own tests (shared/EMULATOR.md):
 * for each rule it enforces, a tiny program that breaks it and the report or
 * error it must give, and the same program done right, which must give none.
 * It calls the CUDA runtime API as braid's backend does, linked against the
 * emulator (src/backend/cuda/emu/) instead of libcudart. What ends the
 * process (a host touching device memory, a host reading pinned memory too
 * early) runs in a child: the child must die by SIGSEGV with the
 * emulator's message. Switches read once at start-up (injected failures,
 * random delays) run in a child started with them in its environment. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "check.h"

#include "backend/cuda/emu/emu.h"

#define N 4096

static const char *self;

static long reports(void) { return emu.reports; }

static cudaStream_t stream(unsigned flags)
{
    cudaStream_t s = NULL;
    CHECK_EQ_INT(cudaStreamCreateWithFlags(&s, flags), cudaSuccess);
    return s;
}

static void *dev(size_t n)
{
    void *p = NULL;
    CHECK_EQ_INT(cudaMalloc(&p, n), cudaSuccess);
    return p;
}

/* Every byte of the n at device pointer p, read back to the host, is b. */
static int all_bytes(const void *p, size_t n, unsigned char b)
{
    unsigned char h[N];
    if (cudaMemcpy(h, p, n, cudaMemcpyDeviceToHost) != cudaSuccess) return 0;
    for (size_t i = 0; i < n; i++)
        if (h[i] != b) return 0;
    return 1;
}

/* Runs this program as a child with `--child what` and env (NAME=VALUE or
 * NULL); its stdout and stderr into out; returns the wait status. */
static int child(const char *what, const char *env, char *out, size_t n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' --child %s 2>&1", env ? env : "", self, what);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(out, 1, n - 1, p) : 0;
    out[got] = '\0';
    return p ? pclose(p) : -1;
}

/* The child died of SIGSEGV (popen's shell reports it as 128 + SIGSEGV). */
static int segv(int st)
{
    return (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) || (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGSEGV);
}

/* ---- memory ------------------------------------------------------------------------------ */

static void t_poison(void)
{
    void *a = dev(256);
    CHECK(all_bytes(a, 256, 0xFF)); /* nothing wrote it: poison, NaN as float */
    CHECK_EQ_INT(cudaMemset(a, 0, 256), cudaSuccess);
    CHECK(all_bytes(a, 256, 0));
    CHECK_EQ_INT(cudaFree(a), cudaSuccess);
    CHECK_EQ_INT(cudaFree(a), cudaErrorInvalidValue); /* twice */
}

static void t_copy_bounds(void)
{
    void *a = dev(64);
    char h[128];
    long r = reports();
    CHECK_EQ_INT(cudaMemcpy(h, a, 128, cudaMemcpyDeviceToHost), cudaErrorInvalidValue); /* past its end */
    CHECK_EQ_INT(cudaMemcpy(a, h, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);  /* the wrong kind */
    CHECK_EQ_INT(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ_INT(cudaGetLastError(), cudaSuccess); /* not sticky */
    CHECK_EQ_INT(reports(), r);
    cudaFree(a);
}

static void t_pageable_staged(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    void *a = dev(N);
    unsigned char h[N];
    memset(h, 7, N);
    CHECK_EQ_INT(cudaMemcpyAsync(a, h, N, cudaMemcpyHostToDevice, s), cudaSuccess);
    memset(h, 9, N); /* the bytes were staged when the call was made */
    CHECK_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(all_bytes(a, N, 7));
    cudaFree(a);
    cudaStreamDestroy(s);
}

static void t_managed_discard(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    unsigned char *m = NULL;
    CHECK_EQ_INT(cudaMallocManaged((void **)&m, N, cudaMemAttachGlobal), cudaSuccess);
    memset(m, 3, N);
    struct cudaMemLocation loc = {.type = cudaMemLocationTypeDevice, .id = 0};
    size_t size = N, first = 0;
    void *ptr = m;
    CHECK_EQ_INT(cudaMemDiscardAndPrefetchBatchAsync(&ptr, &size, 1, &loc, &first, 1, 0, s), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ_INT(m[0], 0xFF); /* discarded: undefined, so poison */
    CHECK_EQ_INT(m[N - 1], 0xFF);
    CHECK_EQ_INT(cudaMemPrefetchAsync(m, N, loc, 0, s), cudaSuccess);
    void *d = dev(64);
    CHECK_EQ_INT(cudaMemPrefetchAsync(d, 64, loc, 0, s), cudaErrorInvalidValue); /* not managed */
    CHECK_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
    cudaFree(d);
    cudaFree(m);
    cudaStreamDestroy(s);
}

static void t_free_in_use(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    void *a = dev(N);
    long r = reports();
    CHECK_EQ_INT(cudaMemsetAsync(a, 1, N, s), cudaSuccess);
    CHECK_EQ_INT(cudaFree(a), cudaSuccess); /* no synchronization: queued work may still write it */
    CHECK_EQ_INT(reports(), r + 1);
    CHECK_CONTAINS(emu_report_text(), "cudaFree freed device allocation");
    CHECK_CONTAINS(emu_report_text(), "cudaMemsetAsync");
    cudaStreamDestroy(s);
}

/* ---- the happens-before checker ------------------------------------------------------------ */

static void t_race(void)
{
    cudaStream_t s1 = stream(cudaStreamNonBlocking), s2 = stream(cudaStreamNonBlocking);
    void *a = dev(N), *b = dev(N);
    long r = reports();
    /* A read on s2 of what s1 writes, with nothing between them. */
    CHECK_EQ_INT(cudaMemsetAsync(a, 1, N, s1), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s2), EMU_ERR_REPORT);
    CHECK_EQ_INT(reports(), r + 1);
    CHECK_CONTAINS(emu_report_text(), "cudaMemcpyAsync (device to device, 4096 bytes) on CUDA stream");
    CHECK_CONTAINS(emu_report_text(), "reads bytes [0, 4096) of device allocation");
    CHECK_CONTAINS(emu_report_text(), "written by cudaMemsetAsync (4096 bytes) on CUDA stream");
    CHECK_CONTAINS(emu_report_text(), "nothing orders the two");
    CHECK_CONTAINS(cudaGetErrorString(EMU_ERR_REPORT), "nothing orders the two");
    cudaDeviceSynchronize();
    /* The same with an event between them: no report, the right bytes. */
    cudaEvent_t e;
    CHECK_EQ_INT(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    CHECK_EQ_INT(cudaMemsetAsync(a, 2, N, s1), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(e, s1), cudaSuccess);
    CHECK_EQ_INT(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s2), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK(all_bytes(b, N, 2));
    /* A write on s1 of what s2 still reads: write after read. */
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s2), cudaSuccess);
    CHECK_EQ_INT(cudaMemsetAsync(a, 3, N, s1), EMU_ERR_REPORT);
    CHECK_CONTAINS(emu_report_text(), "writes bytes [0, 4096)");
    CHECK_CONTAINS(emu_report_text(), "read by cudaMemcpyAsync");
    /* Ordered through the host: a synchronization of s2 before s1's write. */
    CHECK_EQ_INT(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s1), cudaSuccess);
    long r2 = reports();
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s2), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK_EQ_INT(cudaMemsetAsync(a, 4, N, s1), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s1), cudaSuccess);
    CHECK_EQ_INT(reports(), r2);
    CHECK_EQ_INT(reports(), r + 2);
    cudaEventDestroy(e);
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
}

/* A plain cudaMemcpy from pageable memory runs on the legacy stream and may
 * return before its DMA lands: a non-blocking stream that reads the bytes
 * must be ordered after it; a blocking stream is, implicitly. */
static void t_pageable_legacy(void)
{
    cudaStream_t nb = stream(cudaStreamNonBlocking), bl = stream(cudaStreamDefault);
    void *a = dev(N), *b = dev(N);
    unsigned char h[N];
    memset(h, 5, N);
    long r = reports();
    CHECK_EQ_INT(cudaMemcpy(a, h, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, nb), EMU_ERR_REPORT);
    CHECK_CONTAINS(emu_report_text(), "cudaMemcpy (pageable host to device, 4096 bytes) on the legacy stream");
    cudaDeviceSynchronize();
    CHECK_EQ_INT(cudaMemcpy(a, h, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, bl), cudaSuccess); /* implicit order */
    CHECK_EQ_INT(cudaStreamSynchronize(bl), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpy(a, h, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess); /* what braid's weight upload does */
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, nb), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(nb), cudaSuccess);
    CHECK(all_bytes(b, N, 5));
    CHECK_EQ_INT(reports(), r + 1);
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(nb);
    cudaStreamDestroy(bl);
}

/* ---- the host's view ------------------------------------------------------------------------- */

static int child_host_touches_device(void)
{
    float *a = dev(64);
    printf("reading %p\n", (void *)a);
    fflush(stdout);
    volatile float x = a[0];
    printf("CHILD SURVIVED %g\n", (double)x);
    return 0;
}

static int child_pinned_read_early(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    void *a = dev(N);
    unsigned char *p = NULL;
    cudaMemset(a, 6, N);
    cudaDeviceSynchronize();
    CHECK_EQ_INT(cudaHostAlloc((void **)&p, N, cudaHostAllocMapped), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(p, a, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    fflush(stdout);
    volatile unsigned char x = p[0]; /* before any synchronization */
    printf("CHILD SURVIVED %d\n", x);
    return 0;
}

static int child_pinned_write_while_read(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    void *a = dev(N);
    unsigned char *p = NULL;
    CHECK_EQ_INT(cudaHostAlloc((void **)&p, N, 0), cudaSuccess);
    memset(p, 1, N);
    CHECK_EQ_INT(cudaMemcpyAsync(a, p, N, cudaMemcpyHostToDevice, s), cudaSuccess);
    volatile unsigned char x = p[0]; /* reading is fine while the copy reads it */
    printf("read %d\n", x);
    fflush(stdout);
    p[0] = 2; /* writing is not */
    printf("CHILD SURVIVED\n");
    return 0;
}

static void t_host_view(void)
{
    char out[4096];
    int st = child("device", NULL, out, sizeof out);
    CHECK(segv(st));
    CHECK_CONTAINS(out, "the host touched emulated device memory");
    CHECK_CONTAINS(out, "a device pointer was used as a host pointer");
    CHECK(!strstr(out, "CHILD SURVIVED"));
    st = child("pinned-read", NULL, out, sizeof out);
    CHECK(segv(st));
    CHECK_CONTAINS(out, "the host touched pinned or managed memory");
    CHECK_CONTAINS(out, "no synchronization");
    st = child("pinned-write", NULL, out, sizeof out);
    CHECK(segv(st));
    CHECK_CONTAINS(out, "read 1");
    CHECK(!strstr(out, "CHILD SURVIVED"));
    /* Done right: the host reads pinned memory after synchronizing. */
    cudaStream_t s = stream(cudaStreamNonBlocking);
    void *a = dev(N);
    unsigned char *p = NULL;
    cudaMemset(a, 8, N);
    cudaDeviceSynchronize();
    CHECK_EQ_INT(cudaHostAlloc((void **)&p, N, cudaHostAllocMapped), cudaSuccess);
    void *mapped = NULL;
    CHECK_EQ_INT(cudaHostGetDevicePointer(&mapped, p, 0), cudaSuccess);
    CHECK(mapped == p); /* unified addressing */
    CHECK_EQ_INT(cudaMemcpyAsync(p, a, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ_INT(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ_INT(p[N - 1], 8);
    p[0] = 1;
    CHECK_EQ_INT(cudaFreeHost(p), cudaSuccess);
    cudaFree(a);
    cudaStreamDestroy(s);
}

/* ---- events ------------------------------------------------------------------------------ */

static void t_events(void)
{
    cudaStream_t s = stream(cudaStreamNonBlocking);
    cudaEvent_t never, timed0, timed1, untimed;
    CHECK_EQ_INT(cudaEventCreate(&never), cudaSuccess);
    CHECK_EQ_INT(cudaEventCreate(&timed0), cudaSuccess);
    CHECK_EQ_INT(cudaEventCreate(&timed1), cudaSuccess);
    CHECK_EQ_INT(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming), cudaSuccess);
    CHECK_EQ_INT(cudaStreamWaitEvent(s, never, 0), cudaSuccess); /* never recorded: complete */
    CHECK_EQ_INT(cudaEventQuery(never), cudaSuccess);
    CHECK_EQ_INT(cudaEventSynchronize(never), cudaSuccess);
    void *a = dev(N);
    CHECK_EQ_INT(cudaEventRecord(timed0, s), cudaSuccess);
    CHECK_EQ_INT(cudaMemsetAsync(a, 0, N, s), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(timed1, s), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(untimed, s), cudaSuccess);
    CHECK_EQ_INT(cudaEventSynchronize(timed1), cudaSuccess);
    float ms = -1;
    CHECK_EQ_INT(cudaEventElapsedTime(&ms, timed0, timed1), cudaSuccess);
    CHECK(ms > 0); /* the fake clock: a memset takes time */
    CHECK_EQ_INT(cudaEventElapsedTime(&ms, timed0, untimed), cudaErrorInvalidResourceHandle);
    CHECK_EQ_INT(cudaEventElapsedTime(&ms, timed0, never), cudaErrorInvalidResourceHandle);
    CHECK_EQ_INT(cudaEventDestroy(never), cudaSuccess);
    CHECK_EQ_INT(cudaEventDestroy(never), cudaErrorInvalidResourceHandle);
    CHECK_EQ_INT(cudaEventRecord(never, s), cudaErrorInvalidResourceHandle);
    cudaEventDestroy(timed0);
    cudaEventDestroy(timed1);
    cudaEventDestroy(untimed);
    cudaFree(a);
    cudaStreamDestroy(s);
}

/* ---- stream capture and graphs ------------------------------------------------------------- */

static void t_capture_rules(void)
{
    cudaStream_t s0 = stream(cudaStreamNonBlocking), s1 = stream(cudaStreamNonBlocking);
    cudaGraph_t g = (cudaGraph_t)1;
    enum cudaStreamCaptureStatus cs;
    void *a = dev(N);
    /* Synchronizing a capturing stream is refused and invalidates the capture. */
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ_INT(cudaStreamIsCapturing(s0, &cs), cudaSuccess);
    CHECK_EQ_INT(cs, cudaStreamCaptureStatusActive);
    CHECK_EQ_INT(cudaStreamSynchronize(s0), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ_INT(cudaStreamIsCapturing(s0, &cs), cudaSuccess);
    CHECK_EQ_INT(cs, cudaStreamCaptureStatusInvalidated);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureInvalidated);
    CHECK(g == NULL);
    CHECK_EQ_INT(cudaStreamQuery(s0), cudaSuccess); /* the stream is usable again */
    /* Allocating while capturing in this thread is refused; Relaxed allows it. */
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    void *b = NULL;
    CHECK_EQ_INT(cudaMalloc(&b, 64), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureInvalidated);
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeRelaxed), cudaSuccess);
    CHECK_EQ_INT(cudaMalloc(&b, 64), cudaSuccess);
    CHECK_EQ_INT(cudaMemsetAsync(a, 0, N, s0), cudaSuccess);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaSuccess);
    CHECK(g != NULL);
    CHECK_EQ_INT(cudaGraphDestroy(g), cudaSuccess);
    cudaFree(b);
    /* Pageable memory cannot be captured. */
    unsigned char h[64] = {0};
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(a, h, 64, cudaMemcpyHostToDevice, s0), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureInvalidated);
    /* Waiting on work outside the capture is refused. */
    cudaEvent_t outside, fork;
    cudaEventCreateWithFlags(&outside, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaMemsetAsync(a, 1, N, s1);
    cudaEventRecord(outside, s1);
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ_INT(cudaStreamWaitEvent(s0, outside, 0), cudaErrorStreamCaptureIsolation);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureInvalidated);
    cudaStreamSynchronize(s1);
    /* A stream forked into the capture and never joined back. */
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(fork, s0), cudaSuccess);
    CHECK_EQ_INT(cudaStreamWaitEvent(s1, fork, 0), cudaSuccess);
    CHECK_EQ_INT(cudaStreamIsCapturing(s1, &cs), cudaSuccess);
    CHECK_EQ_INT(cs, cudaStreamCaptureStatusActive); /* s1 joined the capture */
    CHECK_EQ_INT(cudaMemsetAsync(a, 2, N, s1), cudaSuccess);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaErrorStreamCaptureUnjoined);
    CHECK_EQ_INT(cudaStreamIsCapturing(s1, &cs), cudaSuccess);
    CHECK_EQ_INT(cs, cudaStreamCaptureStatusNone);
    CHECK_EQ_INT(cudaStreamEndCapture(s1, &g), cudaErrorIllegalState); /* nothing to end */
    cudaEventDestroy(outside);
    cudaEventDestroy(fork);
    cudaFree(a);
    cudaStreamDestroy(s0);
    cudaStreamDestroy(s1);
}

/* A graph of a fork and a join: s0 sets a, s1 copies a to b, s0 copies b to
 * c. Nothing runs while capturing; each replay runs it all, in order. */
static cudaGraphExec_t fork_join(cudaStream_t s0, cudaStream_t s1, void *a, void *b, void *c, int race)
{
    cudaEvent_t e0, e1;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaEventCreateWithFlags(&e0, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&e1, cudaEventDisableTiming);
    CHECK_EQ_INT(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    if (!race) CHECK_EQ_INT(cudaMemsetAsync(a, 4, N, s0), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(e0, s0), cudaSuccess);
    if (race) CHECK_EQ_INT(cudaMemsetAsync(a, 4, N, s0), cudaSuccess); /* after the fork: s1 does not wait for it */
    CHECK_EQ_INT(cudaStreamWaitEvent(s1, e0, 0), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s1), cudaSuccess);
    CHECK_EQ_INT(cudaEventRecord(e1, s1), cudaSuccess);
    CHECK_EQ_INT(cudaStreamWaitEvent(s0, e1, 0), cudaSuccess);
    CHECK_EQ_INT(cudaMemcpyAsync(c, b, N, cudaMemcpyDeviceToDevice, s0), cudaSuccess);
    CHECK_EQ_INT(cudaStreamEndCapture(s0, &g), cudaSuccess);
    CHECK_EQ_INT(cudaGraphInstantiateWithFlags(&x, g, 0), cudaSuccess);
    CHECK_EQ_INT(cudaGraphDestroy(g), cudaSuccess); /* the executable stands alone */
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return x;
}

static void t_graph(void)
{
    cudaStream_t s0 = stream(cudaStreamNonBlocking), s1 = stream(cudaStreamNonBlocking);
    void *a = dev(N), *b = dev(N), *c = dev(N);
    long r = reports();
    cudaGraphExec_t x = fork_join(s0, s1, a, b, c, 0);
    CHECK(all_bytes(c, N, 0xFF)); /* captured, not run */
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(cudaMemset(c, 0, N), cudaSuccess);
        CHECK_EQ_INT(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
        CHECK_EQ_INT(cudaGraphLaunch(x, s0), cudaSuccess);
        CHECK_EQ_INT(cudaStreamSynchronize(s0), cudaSuccess);
        CHECK(all_bytes(c, N, 4));
    }
    CHECK_EQ_INT(reports(), r);
    CHECK_EQ_INT(cudaGraphExecDestroy(x), cudaSuccess);
    /* The same graph with s1's copy not ordered after s0's memset: the
     * checker sees the race when the graph runs. */
    x = fork_join(s0, s1, a, b, c, 1);
    CHECK_EQ_INT(cudaGraphLaunch(x, s0), EMU_ERR_REPORT);
    CHECK_EQ_INT(reports(), r + 1);
    CHECK_CONTAINS(emu_report_text(), "graph replay: cudaMemcpyAsync");
    CHECK_CONTAINS(emu_report_text(), "written by graph replay: cudaMemsetAsync");
    cudaStreamSynchronize(s0);
    CHECK_EQ_INT(cudaGraphExecDestroy(x), cudaSuccess);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaStreamDestroy(s0);
    cudaStreamDestroy(s1);
}

/* ---- kernels ----------------------------------------------------------------------------------- */

/* What nvcc's host stubs call, declared as nvcc declares them. */
void **__cudaRegisterFatBinary(void *fat_cubin);
void __cudaRegisterFunction(void **h, const char *host_fun, char *device_fun, const char *device_name, int limit,
                            uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize);
cudaError_t __cudaGetKernel(cudaKernel_t *out, const void *fun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                               cudaStream_t s);

static void fake_kernel(void) {}

static void t_launch(void)
{
    void **h = __cudaRegisterFatBinary(NULL);
    __cudaRegisterFunction(h, (const char *)fake_kernel, (char *)"_Z4fakev", "_Z4fakev", -1, NULL, NULL, NULL, NULL,
                           NULL);
    cudaKernel_t k = NULL;
    CHECK_EQ_INT(__cudaGetKernel(&k, (const void *)fake_kernel), cudaSuccess);
    dim3 one = {1, 1, 1}, big = {2048, 1, 1}, deep = {1, 1, 65};
    CHECK_EQ_INT(__cudaLaunchKernel(k, one, big, NULL, 0, NULL), cudaErrorInvalidConfiguration);
    CHECK_EQ_INT(__cudaLaunchKernel(k, one, deep, NULL, 0, NULL), cudaErrorInvalidConfiguration);
    CHECK_EQ_INT(__cudaLaunchKernel(k, one, one, NULL, 64 << 10, NULL), cudaErrorInvalidValue); /* no opt-in */
    long r = reports();
    CHECK_EQ_INT(__cudaLaunchKernel(k, one, one, NULL, 0, NULL), EMU_ERR_REPORT); /* no node stands in for it */
    CHECK_EQ_INT(reports(), r + 1);
    CHECK_CONTAINS(emu_report_text(), "kernel fake was launched outside any node");
    CHECK_EQ_INT(cudaGetLastError(), EMU_ERR_REPORT);
}

/* ---- switches read at start-up ------------------------------------------------------------------ */

static int child_fail(void)
{
    void *p[3] = {0};
    for (int i = 0; i < 3; i++) printf("malloc %d: %d\n", i + 1, (int)cudaMalloc(&p[i], 64));
    return 0;
}

/* Two streams handing a buffer back and forth through events, many times:
 * under random delays the values still come out right. */
static int child_delays(void)
{
    cudaStream_t s1 = stream(cudaStreamNonBlocking), s2 = stream(cudaStreamNonBlocking);
    void *a = dev(N), *b = dev(N);
    cudaEvent_t e1, e2;
    cudaEventCreateWithFlags(&e1, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&e2, cudaEventDisableTiming);
    int wrong = 0;
    for (int i = 0; i < 20; i++) {
        cudaMemsetAsync(a, i, N, s1);
        cudaEventRecord(e1, s1);
        cudaStreamWaitEvent(s2, e1, 0);
        cudaMemcpyAsync(b, a, N, cudaMemcpyDeviceToDevice, s2);
        cudaEventRecord(e2, s2);
        cudaStreamWaitEvent(s1, e2, 0); /* s1 may write a again only after s2 read it */
        cudaStreamSynchronize(s2);
        wrong += !all_bytes(b, N, (unsigned char)i);
    }
    printf("wrong %d reports %ld\n", wrong, emu.reports);
    return 0;
}

static int child_h200(void)
{
    struct cudaDeviceProp p;
    size_t free_b = 0, total = 0;
    cudaGetDeviceProperties(&p, 0);
    cudaMemGetInfo(&free_b, &total);
    printf("name %s total %zu\n", p.name, total);
    return 0;
}

static void t_switches(void)
{
    char out[4096];
    int st0 = child("h200", "BRAID_CUDA_EMULATOR_DEVICE=h200", out, sizeof out);
    CHECK(WIFEXITED(st0) && WEXITSTATUS(st0) == 0);
    CHECK_CONTAINS(out, "name NVIDIA H200 (emulated by braid) total 150754820096");
    int st = child("fail", "BRAID_CUDA_EMULATOR_FAIL=cudaMalloc:2", out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_CONTAINS(out, "malloc 1: 0\n");
    CHECK_CONTAINS(out, "malloc 2: 2\n"); /* cudaErrorMemoryAllocation */
    CHECK_CONTAINS(out, "malloc 3: 0\n");
    CHECK_CONTAINS(out, "cudaMalloc fails as BRAID_CUDA_EMULATOR_FAIL asks");
    st = child("delays", "BRAID_CUDA_EMULATOR_DELAY=7:300", out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_CONTAINS(out, "wrong 0 reports 0");
}

/* ---- the device ---------------------------------------------------------------------------------- */

static void t_device(void)
{
    int n = 0, v = 0;
    struct cudaDeviceProp p;
    CHECK_EQ_INT(cudaGetDeviceCount(&n), cudaSuccess);
    CHECK_EQ_INT(n, 1);
    CHECK_EQ_INT(cudaSetDevice(1), cudaErrorInvalidDevice);
    CHECK_EQ_INT(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    CHECK_CONTAINS(p.name, "emulated by braid");
    CHECK_EQ_INT(p.major, 9);
    CHECK_EQ_INT(cudaDeviceGetAttribute(&v, cudaDevAttrConcurrentManagedAccess, 0), cudaSuccess);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(cudaDeviceGetAttribute(&v, cudaDevAttrPageableMemoryAccess, 0), cudaSuccess);
    CHECK_EQ_INT(v, 0);
    size_t free_b = 0, total = 0;
    CHECK_EQ_INT(cudaMemGetInfo(&free_b, &total), cudaSuccess);
    CHECK(total == p.totalGlobalMem && free_b <= total);
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc > 2 && !strcmp(argv[1], "--child")) {
        if (!strcmp(argv[2], "device")) return child_host_touches_device();
        if (!strcmp(argv[2], "pinned-read")) return child_pinned_read_early();
        if (!strcmp(argv[2], "pinned-write")) return child_pinned_write_while_read();
        if (!strcmp(argv[2], "fail")) return child_fail();
        if (!strcmp(argv[2], "delays")) return child_delays();
        if (!strcmp(argv[2], "h200")) return child_h200();
        return 2;
    }
    t_device();
    t_poison();
    t_copy_bounds();
    t_pageable_staged();
    t_managed_discard();
    t_free_in_use();
    t_race();
    t_pageable_legacy();
    t_host_view();
    t_events();
    t_capture_rules();
    t_graph();
    t_launch();
    t_switches();
    return check_done();
}
