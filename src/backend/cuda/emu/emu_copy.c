/* emu_copy.c: copies, memsets and the managed-memory calls, with the
 * synchrony CUDA documents ("API synchronization behavior"), never more:
 *   cudaMemcpy (the legacy stream): from pageable memory to the device it
 *     returns once the bytes are staged, before the DMA lands; from pinned
 *     or managed memory to the device, and from the device to any host
 *     memory, it returns when the copy is done; device to device it does not
 *     wait;
 *   cudaMemcpyAsync: a pageable source is staged when the call is made; a
 *     pageable destination makes the call wait for the copy; pinned and
 *     managed memory stay the stream's until the host synchronizes (the
 *     host's view of them is closed meanwhile, emu_mem.c).
 * A copy that involves pageable memory cannot be captured into a graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/emu/emu.h"

enum { P_BAD, P_PAGEABLE, P_DEVICE, P_PINNED, P_MANAGED };

/* What memory [p, p + extent) is; P_BAD past an allocation's end, in
 * device memory that is not allocated, or NULL. */
static int classify(const void *p, size_t extent)
{
    if (!p) return P_BAD;
    emu_alloc *a = emu_alloc_find((uintptr_t)p);
    if (a) {
        if ((uintptr_t)p + extent > a->base + (a->size ? a->size : 1)) return P_BAD;
        return a->kind == EMU_MEM_DEVICE ? P_DEVICE : a->kind == EMU_MEM_PINNED ? P_PINNED : P_MANAGED;
    }
    uintptr_t x = (uintptr_t)p;
    if (emu_in_device_region(x) || (x >= (uintptr_t)emu.hreg.user && x < (uintptr_t)emu.hreg.user + emu.hreg.size))
        return P_BAD;
    return P_PAGEABLE;
}

static int on_host(int c) { return c == P_PAGEABLE || c == P_PINNED || c == P_MANAGED; }
static int on_dev(int c) { return c == P_DEVICE || c == P_MANAGED; }
static int tracked(int c) { return c == P_DEVICE || c == P_PINNED || c == P_MANAGED; }

static const char *kind_text(int sc, int dc)
{
    if (on_dev(sc) && sc != P_MANAGED && on_dev(dc) && dc != P_MANAGED) return "device to device";
    if (sc == P_DEVICE) return dc == P_PAGEABLE ? "device to pageable host" : "device to host";
    if (dc == P_DEVICE) return sc == P_PAGEABLE ? "pageable host to device" : "pinned host to device";
    return "host-shared";
}

/* Appends the rows of [p, width x height at pitch) as accesses. */
static int rows(emu_access *acc, int n, const void *p, size_t pitch, size_t width, size_t height, int write)
{
    if (pitch == width || height == 1) {
        acc[n++] = (emu_access){(uintptr_t)p, width * height, write};
        return n;
    }
    for (size_t r = 0; r < height; r++) acc[n++] = (emu_access){(uintptr_t)p + r * pitch, width, write};
    return n;
}

/* Whether [a, a + n) lies in one of the current node's inputs. */
static int in_node_input(const emu_node *nd, uintptr_t a, size_t n)
{
    for (int i = 0; i < nd->k->n_in; i++) {
        const bd_tensor *t = &nd->k->in[i];
        size_t nb = 0;
        bd_err e = {0};
        if (!t->data || bd_tensor_nbytes(t, &nb, &e)) continue;
        if (a >= (uintptr_t)t->data && a + n <= (uintptr_t)t->data + nb) return 1;
    }
    return 0;
}

static cudaError_t copy(const char *name, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                        size_t height, enum cudaMemcpyKind kind, cudaStream_t sh, int sync_api)
{
    cudaError_t e = emu_enter(name, cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!width || !height) return cudaSuccess;
    if (width > dpitch || width > spitch) return emu_err(cudaErrorInvalidPitchValue);
    emu_lock();
    emu_stream *s = sync_api ? emu.legacy : emu_stream_get(sh);
    size_t dext = (height - 1) * dpitch + width, sext = (height - 1) * spitch + width;
    int dc = classify(dst, dext), sc = classify(src, sext);
    emu_access *acc = NULL;
    int ok_kind = kind == cudaMemcpyDefault || (kind == cudaMemcpyHostToHost && on_host(sc) && on_host(dc)) ||
                  (kind == cudaMemcpyHostToDevice && on_host(sc) && on_dev(dc)) ||
                  (kind == cudaMemcpyDeviceToHost && on_dev(sc) && on_host(dc)) ||
                  (kind == cudaMemcpyDeviceToDevice && on_dev(sc) && on_dev(dc));
    if (!s) { e = cudaErrorInvalidResourceHandle; goto done; }
    if (dc == P_BAD || sc == P_BAD || !ok_kind) {
        char dw[200], sw[200];
        emu_describe((uintptr_t)dst, dw, sizeof dw);
        emu_describe((uintptr_t)src, sw, sizeof sw);
        fprintf(stderr, "braid CUDA emulator: %s of %zu x %zu bytes refused: destination %p (%s), source %p (%s), "
                "kind %d\n", name, width, height, dst, dw, src, sw, (int)kind);
        e = cudaErrorInvalidValue;
        goto done;
    }
    if ((s->cap && (sc == P_PAGEABLE || dc == P_PAGEABLE)) || (sync_api && emu_capture_forbids_unsafe())) {
        emu_capture_invalidate(s->cap ? s : NULL);
        e = cudaErrorStreamCaptureUnsupported;
        goto done;
    }
    if (!tracked(dc) && !tracked(sc)) { /* host to host: the host does it */
        emu_unlock();
        for (size_t r = 0; r < height; r++) memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
        return cudaSuccess;
    }
    char pre[300], what[400];
    emu_node_prefix(pre, sizeof pre);
    snprintf(what, sizeof what, "%s%s (%s, %zu bytes)", pre, name, kind_text(sc, dc), width * height);
    emu_op *op = emu_op_new(EMU_OP_COPY, what);
    acc = malloc(2 * (height + 1) * sizeof *acc);
    if (!op || !acc) { emu_op_free(op); e = cudaErrorMemoryAllocation; goto done; }
    op->dst = dst;
    op->src = src;
    op->width = width;
    op->height = height;
    op->dpitch = dpitch;
    op->spitch = spitch;
    if (sc == P_PAGEABLE) { /* staged now: the caller may reuse its buffer when the call returns */
        if (!(op->staged = malloc(width * height))) { emu_op_free(op); e = cudaErrorMemoryAllocation; goto done; }
        for (size_t r = 0; r < height; r++) memcpy(op->staged + r * width, (const char *)src + r * spitch, width);
    }
    int n = 0;
    if (tracked(dc)) n = rows(acc, n, dst, dpitch, width, height, 1);
    int n_w = n;
    if (tracked(sc)) n = rows(acc, n, src, spitch, width, height, 0);
    emu_node *nd = emu_node_current();
    if (nd && tracked(dc) && dc != P_PINNED)
        for (int i = 0; i < n_w; i++) emu_node_note_write(&acc[i]);
    if (nd && nd->launched && on_host(dc) && dc != P_MANAGED && !in_node_input(nd, (uintptr_t)src, sext))
        emu_report("%s: the launcher reads back device bytes after launching its kernels, which the emulator does "
                   "not run (only the node's CPU stand-in, queued after the launcher, computes its outputs)", what);
    int host_involved = sc == P_PAGEABLE || sc == P_PINNED || dc == P_PAGEABLE || dc == P_PINNED;
    double cost = (double)(width * height) / (host_involved ? 25e6 : 2e9);
    e = emu_enqueue(s, op, acc, n, cost);
    if (e) goto done;
    int wait = sync_api ? (sc == P_PINNED || sc == P_MANAGED || (on_host(dc) && !on_dev(dc)))
                        : (dc == P_PAGEABLE);
    if (wait) e = emu_stream_sync(s);
done:
    free(acc);
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    return copy("cudaMemcpy", dst, n, src, n, n, 1, kind, NULL, 1);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
    return copy("cudaMemcpyAsync", dst, n, src, n, n, 1, kind, s, 0);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t s)
{
    return copy("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, s, 0);
}

static cudaError_t set(const char *name, void *p, int value, size_t n, cudaStream_t sh, int sync_api)
{
    cudaError_t e = emu_enter(name, cudaErrorInvalidValue);
    if (e || !n) return emu_err(e);
    emu_lock();
    emu_stream *s = sync_api ? emu.legacy : emu_stream_get(sh);
    int c = classify(p, n);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (!on_dev(c)) e = cudaErrorInvalidValue;
    else if (sync_api && emu_capture_forbids_unsafe()) {
        emu_capture_invalidate(NULL);
        e = cudaErrorStreamCaptureUnsupported;
    } else {
        char pre[300], what[400];
        emu_node_prefix(pre, sizeof pre);
        snprintf(what, sizeof what, "%s%s (%zu bytes)", pre, name, n);
        emu_op *op = emu_op_new(EMU_OP_SET, what);
        if (!op) e = cudaErrorMemoryAllocation;
        else {
            op->dst = p;
            op->width = n;
            op->dpitch = n;
            op->value = value;
            emu_access a = {(uintptr_t)p, n, 1};
            if (emu_node_current()) emu_node_note_write(&a);
            e = emu_enqueue(s, op, &a, 1, (double)n / 2e9);
        }
    }
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
    return set("cudaMemsetAsync", p, value, n, s, 0);
}

cudaError_t cudaMemset(void *p, int value, size_t n) { return set("cudaMemset", p, value, n, NULL, 1); }

/* ---- managed memory ------------------------------------------------------------------ */

static int managed_range(const void *p, size_t n) { return classify(p, n ? n : 1) == P_MANAGED; }

cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc, unsigned int flags,
                                 cudaStream_t sh)
{
    cudaError_t e = emu_enter("cudaMemPrefetchAsync", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    emu_lock();
    emu_stream *s = emu_stream_get(sh);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else if (flags || !managed_range(p, n) ||
             !(loc.type == cudaMemLocationTypeHost || (loc.type == cudaMemLocationTypeDevice && loc.id == 0)))
        e = cudaErrorInvalidValue;
    else {
        /* Moves pages, not contents: it orders nothing but its stream. */
        emu_op *op = emu_op_new(EMU_OP_NOP, "cudaMemPrefetchAsync");
        e = op ? emu_enqueue(s, op, NULL, 0, (double)n / 25e6) : cudaErrorMemoryAllocation;
    }
    emu_unlock();
    return emu_err(e);
}

cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise advice, struct cudaMemLocation loc)
{
    cudaError_t e = emu_enter("cudaMemAdvise", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    emu_lock();
    int ok = managed_range(p, n) && (int)advice >= 1 && (int)advice <= 6;
    emu_unlock();
    return emu_err(ok ? cudaSuccess : cudaErrorInvalidValue);
}

cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void **dptrs, size_t *sizes, size_t count,
                                                struct cudaMemLocation *locs, size_t *loc_idx, size_t n_locs,
                                                unsigned long long flags, cudaStream_t sh)
{
    cudaError_t e = emu_enter("cudaMemDiscardAndPrefetchBatchAsync", cudaErrorInvalidValue);
    if (e) return emu_err(e);
    if (!count || !dptrs || !sizes || !locs || !loc_idx || !n_locs || n_locs > count || loc_idx[0] != 0 || flags)
        return emu_err(cudaErrorInvalidValue);
    emu_lock();
    emu_stream *s = emu_stream_get(sh);
    if (!s) e = cudaErrorInvalidResourceHandle;
    for (size_t i = 0; !e && i < count; i++)
        if (!managed_range(dptrs[i], sizes[i])) e = cudaErrorInvalidValue;
    for (size_t i = 0; !e && i < count; i++) {
        /* Discarded: the contents are undefined, so poisoned. */
        emu_op *op = emu_op_new(EMU_OP_SET, "cudaMemDiscardAndPrefetchBatchAsync");
        if (!op) { e = cudaErrorMemoryAllocation; break; }
        op->dst = dptrs[i];
        op->width = op->dpitch = sizes[i];
        op->value = EMU_POISON;
        emu_access a = {(uintptr_t)dptrs[i], sizes[i], 1};
        e = emu_enqueue(s, op, &a, 1, (double)sizes[i] / 2e9);
    }
    emu_unlock();
    return emu_err(e);
}
