/* cuda_host.c: host nodes of a CUDA plan. A node that works on host values
 * (bd_cuda_host_node: a BD_OPF_HOST op, or one that reads or writes a string
 * tensor, a sequence or an optional) has no CUDA kernel: where the plan put
 * it, on its stream, it runs the CPU backend's kernel on the host. Its
 * stream is synchronized first (the walk enqueued its waits before it, so
 * its inputs are complete), its device inputs are copied to host buffers
 * (plan-time constants are read from their host copies), the CPU kernel
 * runs, and its outputs are copied into the node's device memory on its
 * stream, which is synchronized again before the host buffers are freed. `braid
 * plan` says so for every such node (src/runtime/stage.c).
 *
 * What strings, sequences and optionals hold lives in host memory on every
 * backend: device memory holds only their pointers (a string tensor's char
 * pointers, a container's one pointer), and what host nodes make is kept in
 * the session's run pool (cuda_state.strings) until the next top-level run
 * starts, as the CPU backend keeps its own. An output whose size only the
 * kernel knows (SequenceAt's tensor) gets device memory of the run pool too.
 * A plan with a host node cannot be captured in a CUDA graph (it falls back
 * to running uncaptured, as cuda_plan.c does for any capture failure). */
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cuda/cuda_backend.h"
#include "util/strpool.h"

void bd_cuda_host_init(cuda_state *s) { bd_strpool_init(&s->strings); }

/* Frees the device memory of the last run's host nodes and empties the run
 * pool: nothing of the last run is in flight when the next one starts. */
void bd_cuda_host_reset(cuda_state *s)
{
    for (int i = 0; i < s->n_run_dev; i++) bd_cu_free(s, s->run_dev[i]);
    s->n_run_dev = 0;
    bd_strpool_reset(&s->strings);
}

void bd_cuda_host_destroy(cuda_state *s)
{
    bd_cuda_host_reset(s);
    bd_free(s->run_dev);
    s->run_dev = NULL;
    s->cap_run_dev = 0;
    bd_strpool_destroy(&s->strings);
}

/* Device memory that lives until the next top-level run. */
static braid_status run_alloc(cuda_state *s, void **p, size_t n, bd_err *e)
{
    if (s->n_run_dev == s->cap_run_dev) {
        int cap = s->cap_run_dev ? 2 * s->cap_run_dev : 16;
        void **q = bd_realloc(s->run_dev, (size_t)cap * sizeof *q);
        if (!q) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        s->run_dev = q;
        s->cap_run_dev = cap;
    }
    BD_TRY_RET(bd_cu_malloc(s, p, n ? n : 1, e));
    s->run_dev[s->n_run_dev++] = *p;
    return BRAID_OK;
}

braid_status bd_cuda_host_launch(cuda_state *s, bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_node *n = k->node;
    bd_err *e = k->err;
    bd_tensor *in = bd_calloc((size_t)k->n_in + 1, sizeof *in);
    bd_tensor *out = bd_calloc((size_t)k->n_out + 1, sizeof *out);
    void **own = bd_calloc((size_t)(k->n_in + k->n_out) + 1, sizeof *own);
    int n_own = 0;
    BD_CHECK_ALLOC(e, in && out && own);
    /* The one synchronization: every producer's kernels are done. */
    BD_CUDA_TRY(e, cudaStreamSynchronize(k->stream));
    for (int q = 0; q < k->n_in; q++) {
        in[q] = k->in[q];
        if (!k->in[q].data) continue; /* omitted */
        if (k->host_in && k->host_in[q].data) {
            in[q].data = k->host_in[q].data;
            continue;
        }
        size_t nb;
        BD_TRY(bd_tensor_nbytes(&k->in[q], &nb, e));
        void *h = bd_malloc(nb ? nb : 1);
        BD_CHECK_ALLOC(e, h);
        own[n_own++] = h;
        if (nb) BD_CUDA_TRY(e, cudaMemcpy(h, k->in[q].data, nb, cudaMemcpyDefault));
        in[q].data = h;
    }
    for (int q = 0; q < k->n_out; q++) {
        out[q] = k->out[q];
        out[q].data = NULL;
        /* Omitted, or its size only the kernel knows (it allocates). */
        if (n->out[q] < 0 || (!k->out[q].data && !bd_shape_known(&k->out[q]))) continue;
        size_t nb;
        BD_TRY(bd_tensor_nbytes(&k->out[q], &nb, e));
        void *h = bd_calloc(1, nb ? nb : 1);
        BD_CHECK_ALLOC(e, h);
        own[n_own++] = h;
        out[q].data = h;
    }
    bd_kernel ck = {.node = n, .in = in, .n_in = k->n_in, .out = out, .n_out = k->n_out, .threads = 1, .err = e,
                    .strings = &s->strings};
    BD_TRY(bd_cpu_run(&ck));
    for (int q = 0; q < k->n_out; q++) {
        if (n->out[q] < 0) continue;
        size_t nb;
        if (!out[q].data || !bd_shape_known(&out[q])) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "the host kernel left output %d without data or shape", q);
            goto fail;
        }
        BD_TRY(bd_tensor_nbytes(&out[q], &nb, e));
        void *dev = k->out[q].data;
        if (!dev && nb) BD_TRY(run_alloc(s, &dev, nb, e));
        /* On the node's stream, which its consumers follow (their events
         * are recorded on it after this node). */
        if (nb) BD_CUDA_TRY(e, cudaMemcpyAsync(dev, out[q].data, nb, cudaMemcpyDefault, k->stream));
        k->out[q] = out[q];
        k->out[q].data = dev;
    }
    /* The host buffers are freed below: the copies must have read them. */
    BD_CUDA_TRY(e, cudaStreamSynchronize(k->stream));
fail:
    for (int i = 0; i < n_own; i++) bd_free(own[i]);
    bd_free(in);
    bd_free(out);
    bd_free(own);
    return st;
}

braid_status bd_cuda_on_host(const bd_cuda_kernel *k, braid_status (*cpu)(const bd_kernel *))
{
    braid_status st = BRAID_OK;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    bd_tensor *hin = bd_calloc((size_t)k->n_in + 1, sizeof *hin), *hout = bd_calloc((size_t)k->n_out + 1, sizeof *hout);
    BD_CHECK_ALLOC(k->err, hin && hout);
    BD_CUDA_TRY(k->err, cudaStreamIsCapturing(k->stream, &cap));
    if (cap != cudaStreamCaptureStatusNone) {
        st = BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "op %s has a shape known only from its input values, computed "
                     "on the host: it cannot run in a CUDA graph", k->node->op_type);
        goto fail;
    }
    for (int i = 0; i < k->n_in; i++) {
        size_t nb = 0;
        hin[i] = k->in[i];
        hin[i].data = NULL;
        if (!k->in[i].dtype || !k->in[i].data) continue;
        if (k->host_in && k->host_in[i].data) { /* known when the plan was made */
            hin[i].data = k->host_in[i].data;
            continue;
        }
        BD_TRY(bd_tensor_nbytes(&k->in[i], &nb, k->err));
        hin[i].data = bd_malloc(nb ? nb : 1);
        BD_CHECK_ALLOC(k->err, hin[i].data);
        if (nb) BD_CUDA_TRY(k->err, cudaMemcpyAsync(hin[i].data, k->in[i].data, nb, cudaMemcpyDefault, k->stream));
    }
    for (int i = 0; i < k->n_out; i++) {
        size_t nb = 0;
        hout[i] = k->out[i];
        hout[i].data = NULL;
        if (!k->out[i].data) continue;
        BD_TRY(bd_tensor_nbytes(&k->out[i], &nb, k->err));
        hout[i].data = bd_malloc(nb ? nb : 1);
        BD_CHECK_ALLOC(k->err, hout[i].data);
    }
    BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream)); /* the inputs are on the host */
    bd_kernel hk = {.node = k->node, .in = hin, .n_in = k->n_in, .out = hout, .n_out = k->n_out, .threads = 1,
                    .err = k->err};
    BD_TRY(cpu(&hk));
    for (int i = 0; i < k->n_out; i++) {
        size_t nb = 0;
        memcpy(k->out[i].dims, hout[i].dims, sizeof hout[i].dims); /* the actual shape */
        if (!hout[i].data) continue;
        BD_TRY(bd_tensor_nbytes(&hout[i], &nb, k->err));
        if (nb) BD_CUDA_TRY(k->err, cudaMemcpyAsync(k->out[i].data, hout[i].data, nb, cudaMemcpyDefault, k->stream));
    }
    BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream)); /* before the host buffers go */
fail:
    for (int i = 0; hin && i < k->n_in; i++)
        if (hin[i].data && !(k->host_in && k->host_in[i].data == hin[i].data)) bd_free(hin[i].data);
    for (int i = 0; hout && i < k->n_out; i++) bd_free(hout[i].data);
    bd_free(hin);
    bd_free(hout);
    return st;
}
