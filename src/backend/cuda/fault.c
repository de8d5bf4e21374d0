/* fault.c: fault finding for the CUDA backend. The thread that enqueues a
 * plan keeps a small context per node: the last call or launch the node's
 * launcher made and, under BRAID_CUDA_SYNC=1, the stream to synchronize after
 * each of them, so that an asynchronous fault is caught at the call that made
 * it and reported as "node 'conv_3' (Conv) on stream 2:
 * cudnnConvolutionForward: an illegal memory access was encountered". Without
 * the switch, an asynchronous error that surfaces at some later call is
 * marked as such, so that the node being enqueued is not blamed for it. The
 * texts themselves are built by src/backend/cuda/common/faults.c (unit-tested). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/common/faults.h"
#include "runtime/notes.h"

typedef struct fault_ctx {
    int active;          /* inside a node (bd_cu_fault_begin .. bd_cu_fault_end) */
    int sync;            /* synchronize the node's stream after every call and launch */
    int capturing;       /* the stream is being captured: no query, no synchronization */
    int async;           /* an asynchronous error from earlier work surfaced in this node */
    cudaStream_t stream;
    char last[160];      /* the last call or launch the node made */
} fault_ctx;

static _Thread_local fault_ctx ctx;

int bd_cu_sticky(cudaError_t ce)
{
    switch (ce) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorExternalDevice:
        return 1;
    default:
        return 0;
    }
}

void bd_cu_fault_begin(cudaStream_t stream, int sync, int capturing)
{
    ctx.active = 1;
    ctx.sync = sync && !capturing;
    ctx.capturing = capturing;
    ctx.async = 0;
    ctx.stream = stream;
    ctx.last[0] = '\0';
}

braid_status bd_cu_fault_end(bd_err *e, int *async)
{
    braid_status st = BRAID_OK;
    if (ctx.active && ctx.sync) {
        /* Kernels a launcher enqueued without a check after them. */
        cudaError_t ce = cudaStreamSynchronize(ctx.stream);
        if (ce != cudaSuccess) {
            cudaGetLastError();
            if (ctx.last[0])
                st = BD_FAIL(e, BRAID_ERR_DEVICE, "work enqueued after %s: %s", ctx.last, cudaGetErrorString(ce));
            else
                st = BD_FAIL(e, BRAID_ERR_DEVICE, "a kernel of this node: %s", cudaGetErrorString(ce));
        }
    }
    if (async) *async = ctx.async;
    ctx.active = 0;
    return st;
}

braid_status bd_cu_fault_peek(bd_err *e)
{
    cudaError_t ce = cudaPeekAtLastError();
    if (ce == cudaSuccess) return BRAID_OK;
    if (!bd_cu_sticky(ce)) {
        cudaGetLastError(); /* a failure some earlier call reported and its caller handled */
        return BRAID_OK;
    }
    ctx.async = 1;
    return BD_FAIL(e, BRAID_ERR_DEVICE, "cudaPeekAtLastError before the launch: %s", cudaGetErrorString(ce));
}

braid_status bd_cu_after(bd_err *e, const char *call)
{
    if (!ctx.active) return BRAID_OK;
    bd_cu_call_name(call, ctx.last, sizeof ctx.last);
    if (!ctx.sync) return BRAID_OK;
    cudaError_t ce = cudaStreamSynchronize(ctx.stream);
    if (ce == cudaSuccess) return BRAID_OK;
    char msg[400];
    cudaGetLastError();
    bd_cu_call_text(msg, sizeof msg, call, cudaGetErrorString(ce));
    return BD_FAIL(e, BRAID_ERR_DEVICE, "%s", msg);
}

/* Outside a node (the walk's events, the input and output copies), an
 * asynchronous error cannot be a node's: the message says where to look. */
static const char *outside_hint(cudaError_t ce)
{
    return bd_cu_sticky(ce) && !ctx.active ? " (an asynchronous error from earlier work: rerun with "
                                             BD_CUDA_SYNC_ENV "=1 to find the node that caused it)" : "";
}

braid_status bd_cu_fail_cuda(bd_err *e, const char *call, cudaError_t ce, const char *file, int line)
{
    char msg[400];
    if (bd_cu_sticky(ce) && !(ctx.active && ctx.sync)) ctx.async = 1;
    else cudaGetLastError(); /* not sticky: clear it, so that the next check does not see it again */
    bd_cu_call_text(msg, sizeof msg, call, cudaGetErrorString(ce));
    return bd_fail(e, ce == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE, file, line,
                   "%s%s", msg, outside_hint(ce));
}

braid_status bd_cu_fail_launch(bd_err *e, const char *what, cudaError_t ce, const char *file, int line)
{
    if (bd_cu_sticky(ce) && !(ctx.active && ctx.sync)) ctx.async = 1;
    return bd_fail(e, BRAID_ERR_DEVICE, file, line, "launch of %s: %s%s", what, cudaGetErrorString(ce),
                   outside_hint(ce));
}

braid_status bd_cu_fail_lib(bd_err *e, const char *call, const char *status, const char *file, int line)
{
    char msg[400], ctxt[200] = "";
    /* A library status hides the CUDA error behind it: ask the stream. */
    if (ctx.active && !ctx.capturing) {
        cudaError_t q = cudaStreamQuery(ctx.stream);
        if (q != cudaSuccess) cudaGetLastError();
        if (bd_cu_sticky(q)) {
            if (!ctx.sync) ctx.async = 1;
            snprintf(ctxt, sizeof ctxt, " (the CUDA context holds an asynchronous error: %s)", cudaGetErrorString(q));
        }
    }
    bd_cu_call_text(msg, sizeof msg, call, status);
    return bd_fail(e, BRAID_ERR_DEVICE, file, line, "%s%s", msg, ctxt);
}

void bd_cu_note(const bd_cuda_kernel *k, const char *fmt, ...)
{
    char buf[BD_NOTE_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bd_notes_add(k->notes, "node '%s' (%s): %s", k->node->name, k->node->op_type, buf);
}
