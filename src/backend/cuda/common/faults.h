/* faults.h: the texts of CUDA faults as braid reports them, and the
 * BRAID_CUDA_SYNC switch. Part of the CUDA backend's host code that needs no
 * GPU, compiled into braid's core (and into libbraid_cuda.so, which links
 * the core), so that the CPU tests check it. No CUDA header here. */
#ifndef BD_CUDA_FAULTS_H
#define BD_CUDA_FAULTS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

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

#endif
