/* emu_launch.c: kernels and nodes. nvcc's host code registers every kernel
 * (__cudaRegisterFunction) and launches through __cudaPushCallConfiguration,
 * __cudaPopCallConfiguration and __cudaLaunchKernel: here a launch checks its
 * configuration as the hardware would (grid and block limits, 48 KiB of
 * dynamic shared memory without an opt-in) and becomes an operation that
 * only declares accesses. What a kernel or library call accesses is not in
 * its arguments' types, so it is declared conservatively from the node whose
 * launcher made it: the node's inputs and the bytes its launcher uploaded so
 * far are read, its outputs written, the stream's workspace read and written.
 * The node's result comes from the CPU backend's kernel for the same node,
 * queued on its stream as its last operation (bd_cuda_dev_node_end): so a
 * launcher whose host logic is wrong (a wrong pointer, stream, size or
 * order) still fails here, and on a GPU only the device code is new. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/emu/emu.h"

/* ---- registration ------------------------------------------------------------------------ */

typedef struct emu_kernel {
    const void *host_fun;
    char name[128];
} emu_kernel;

static emu_kernel **kernels; /* registered by constructors, before any thread starts */
static int n_kernels, cap_kernels;

void **__cudaRegisterFatBinary(void *fat_cubin)
{
    static void *handle;
    (void)fat_cubin;
    return &handle;
}

void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }

/* "_Z13conv_epilogueI6el_f32EvPT_..." gives "conv_epilogue". */
static void demangle(const char *m, char *out, size_t n)
{
    if (m && m[0] == '_' && m[1] == 'Z') {
        const char *p = m + 2;
        if (*p == 'N') p++; /* a nested name: its first part */
        size_t len = 0;
        while (*p >= '0' && *p <= '9') len = len * 10 + (size_t)(*p++ - '0');
        if (len && len < n && strlen(p) >= len) {
            memcpy(out, p, len);
            out[len] = '\0';
            return;
        }
    }
    snprintf(out, n, "%s", m ? m : "?");
}

void __cudaRegisterFunction(void **h, const char *host_fun, char *device_fun, const char *device_name, int limit,
                            uint3 *tid, uint3 *bid, dim3 *bdim, dim3 *gdim, int *wsize)
{
    (void)h, (void)device_fun, (void)limit, (void)tid, (void)bid, (void)bdim, (void)gdim, (void)wsize;
    if (n_kernels == cap_kernels) {
        int cap = cap_kernels ? 2 * cap_kernels : 256;
        emu_kernel **t = realloc(kernels, (size_t)cap * sizeof *t);
        if (!t) return;
        kernels = t;
        cap_kernels = cap;
    }
    emu_kernel *k = calloc(1, sizeof *k);
    if (!k) return;
    k->host_fun = host_fun;
    demangle(device_name, k->name, sizeof k->name);
    kernels[n_kernels++] = k;
}

cudaError_t __cudaGetKernel(cudaKernel_t *out, const void *fun)
{
    for (int i = 0; i < n_kernels; i++)
        if (kernels[i]->host_fun == fun) {
            *out = (cudaKernel_t)kernels[i];
            return cudaSuccess;
        }
    *out = NULL;
    return cudaErrorInvalidDeviceFunction;
}

/* The <<<>>> configuration, pushed by the caller and popped by the stub. */
typedef struct launch_cfg {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
} launch_cfg;
static _Thread_local launch_cfg cfg_stack[8];
static _Thread_local int cfg_depth;

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream)
{
    if (cfg_depth == 8) return 1;
    cfg_stack[cfg_depth++] = (launch_cfg){grid, block, shmem, (cudaStream_t)stream};
    return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream)
{
    if (!cfg_depth) return cudaErrorInvalidConfiguration;
    launch_cfg *c = &cfg_stack[--cfg_depth];
    *grid = c->grid;
    *block = c->block;
    *shmem = c->shmem;
    *(cudaStream_t *)stream = c->stream;
    return cudaSuccess;
}

/* ---- the node being launched -------------------------------------------------------------- */

static _Thread_local emu_node *cur;

emu_node *emu_node_current(void) { return cur; }

void emu_node_prefix(char *buf, size_t n)
{
    if (cur) snprintf(buf, n, "node '%s' (%s): ", cur->k->node->name, cur->k->node->op_type);
    else buf[0] = '\0';
}

void emu_node_note_write(const emu_access *a)
{
    if (!cur) return;
    if (cur->n_up == cur->cap_up) {
        int cap = cur->cap_up ? 2 * cur->cap_up : 4;
        emu_access *t = realloc(cur->up, (size_t)cap * sizeof *t);
        if (!t) return;
        cur->up = t;
        cur->cap_up = cap;
    }
    cur->up[cur->n_up] = *a;
    cur->up[cur->n_up++].write = 0; /* what the node's kernels then read */
}

static size_t bytes_of(const bd_tensor *t)
{
    size_t nb = 0;
    bd_err e = {0};
    if (!t->data || bd_tensor_nbytes(t, &nb, &e)) return 0;
    return nb;
}

/* The node's declared accesses, then extra; *n set. Caller frees. */
static emu_access *node_accesses(const emu_node *nd, const emu_access *extra, int n_extra, int *n)
{
    int cap = n_extra + (nd ? nd->k->n_in + nd->k->n_out + nd->n_up + 1 : 0);
    emu_access *a = malloc((size_t)(cap + 1) * sizeof *a);
    *n = 0;
    if (!a) return NULL;
    if (nd) {
        const bd_cuda_kernel *k = nd->k;
        for (int i = 0; i < k->n_in; i++)
            if (bytes_of(&k->in[i])) a[(*n)++] = (emu_access){(uintptr_t)k->in[i].data, bytes_of(&k->in[i]), 0};
        for (int i = 0; i < nd->n_up; i++) a[(*n)++] = nd->up[i];
        for (int i = 0; i < k->n_out; i++)
            if (bytes_of(&k->out[i])) a[(*n)++] = (emu_access){(uintptr_t)k->out[i].data, bytes_of(&k->out[i]), 1};
        /* The workspace, read and written: as a write, which the checker orders against both. */
        if (k->workspace && k->workspace_size) a[(*n)++] = (emu_access){(uintptr_t)k->workspace, k->workspace_size, 1};
    }
    for (int i = 0; i < n_extra; i++) a[(*n)++] = extra[i];
    return a;
}

cudaError_t emu_compute(emu_stream *s, const char *what, const emu_access *extra, int n_extra, double cost_ms)
{
    char pre[300], text[512];
    emu_node_prefix(pre, sizeof pre);
    snprintf(text, sizeof text, "%s%s", pre, what);
    if (!cur) {
        /* Nothing stands in for it: its results would stay poison. */
        emu_report("%s was launched outside any node: the emulator cannot compute it (only nodes have CPU stand-ins)",
                   text);
        return EMU_ERR_REPORT;
    }
    int n = 0;
    emu_access *acc = node_accesses(cur, extra, n_extra, &n);
    emu_op *op = emu_op_new(EMU_OP_KERNEL, text);
    if (!acc || !op) {
        free(acc);
        emu_op_free(op);
        return cudaErrorMemoryAllocation;
    }
    emu.kernels++;
    if ((emu.fault_kernel && emu.kernels == emu.fault_kernel) ||
        (emu.fault_node[0] && !cur->faulted && !strcmp(emu.fault_node, cur->k->node->name))) {
        cur->faulted = 1;
        op->kind = EMU_OP_FAULT; /* as BRAID_CUDA_EMULATOR_FAULT asks: an illegal address when it runs */
        op->fault = cudaErrorIllegalAddress;
        snprintf(op->what, sizeof op->what, "%s: an illegal memory access (BRAID_CUDA_EMULATOR_FAULT)", text);
    }
    cur->launched = 1;
    cudaError_t e = emu_enqueue(s, op, acc, n, cost_ms);
    free(acc);
    return e;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                               cudaStream_t sh)
{
    cudaError_t e = emu_enter("cudaLaunchKernel", cudaErrorLaunchOutOfResources);
    if (e) return emu_err(e);
    emu_kernel *k = (emu_kernel *)kernel;
    (void)args;
    if (!k) return emu_err(cudaErrorInvalidDeviceFunction);
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (!grid.x || !grid.y || !grid.z || grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535 || !threads ||
        threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64) {
        fprintf(stderr, "braid CUDA emulator: kernel %s launched with grid (%u, %u, %u) and block (%u, %u, %u): "
                "outside the device's limits\n", k->name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
        return emu_err(cudaErrorInvalidConfiguration);
    }
    if (shmem > 49152) { /* more needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize) */
        fprintf(stderr, "braid CUDA emulator: kernel %s asks for %zu bytes of dynamic shared memory, more than the "
                "49152 a kernel gets without opting in\n", k->name, shmem);
        return emu_err(cudaErrorInvalidValue);
    }
    emu_lock();
    emu_stream *s = emu_stream_get(sh);
    if (!s) e = cudaErrorInvalidResourceHandle;
    else {
        char what[200];
        snprintf(what, sizeof what, "kernel %s", k->name);
        size_t bytes = 0;
        if (cur)
            for (int i = 0; i < cur->k->n_in + cur->k->n_out; i++)
                bytes += bytes_of(i < cur->k->n_in ? &cur->k->in[i] : &cur->k->out[i - cur->k->n_in]);
        e = emu_compute(s, what, NULL, 0, 0.003 + (double)bytes / 2e9);
    }
    emu_unlock();
    return emu_err(e);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                                    cudaStream_t sh)
{
    return __cudaLaunchKernel(kernel, grid, block, args, shmem, sh);
}

/* ---- the CPU stand-in of a node ------------------------------------------------------------- */

typedef struct emu_standin {
    const bd_node *node;
    int n_in, n_out;
    int n_slots;         /* in's entries: every input slot of the node, those past n_in omitted, as
                          * kernels may read them (bd_node_slots) */
    bd_tensor *in, *out; /* as the launcher left them: device addresses, final shapes */
} emu_standin;

void emu_standin_free(emu_standin *s)
{
    if (!s) return;
    free(s->in);
    free(s->out);
    free(s);
}

emu_standin *emu_standin_copy(const emu_standin *x)
{
    emu_standin *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    *s = *x;
    s->in = malloc(((size_t)x->n_slots + 1) * sizeof *s->in);
    s->out = malloc(((size_t)x->n_out + 1) * sizeof *s->out);
    if (!s->in || !s->out) { emu_standin_free(s); return NULL; }
    memcpy(s->in, x->in, (size_t)x->n_slots * sizeof *s->in);
    memcpy(s->out, x->out, (size_t)x->n_out * sizeof *s->out);
    return s;
}

int emu_standin_run(emu_standin *s, char *err, size_t n)
{
    bd_tensor *in = malloc(((size_t)s->n_slots + 1) * sizeof *in), *out = malloc(((size_t)s->n_out + 1) * sizeof *out);
    if (!in || !out) {
        free(in);
        free(out);
        snprintf(err, n, "out of memory");
        return 1;
    }
    for (int i = 0; i < s->n_slots; i++) {
        in[i] = s->in[i];
        if (in[i].data) in[i].data = emu_work_ptr(in[i].data);
    }
    for (int i = 0; i < s->n_out; i++) {
        out[i] = s->out[i];
        if (out[i].data) out[i].data = emu_work_ptr(out[i].data);
    }
    bd_err e = {0};
    bd_kernel k = {.node = s->node, .in = in, .n_in = s->n_in, .out = out, .n_out = s->n_out, .threads = 1, .err = &e};
    braid_status st = bd_cpu_run(&k);
    if (!st)
        for (int i = 0; i < s->n_out; i++) /* a CPU kernel that changed an output's shape disagrees with the launcher */
            if (s->out[i].data && (out[i].rank != s->out[i].rank ||
                                   memcmp(out[i].dims, s->out[i].dims, sizeof out[i].dims[0] * (size_t)out[i].rank))) {
                snprintf(e.msg, sizeof e.msg, "output %d: the launcher set its shape to rank %d, the CPU kernel to "
                         "rank %d (or other dims)", i, s->out[i].rank, out[i].rank);
                st = BRAID_ERR_INTERNAL;
            }
    if (st) snprintf(err, n, "%s", e.msg);
    free(in);
    free(out);
    return st != BRAID_OK;
}

/* ---- the hooks of the CUDA backend (cuda_backend.h) ----------------------------------------- */

void bd_cuda_dev_node_begin(const bd_cuda_kernel *k, int pool_stream)
{
    emu_node *nd = calloc(1, sizeof *nd);
    if (!nd) return; /* then nothing is declared: the stand-in is skipped and the outputs stay poison */
    nd->k = k;
    nd->pool_stream = pool_stream;
    if (emu_init() == cudaSuccess) {
        emu_lock();
        emu_stream *s = emu_stream_get(k->stream);
        if (s && !s->legacy) snprintf(s->label, sizeof s->label, "stream %d", pool_stream);
        emu_unlock();
    }
    cur = nd;
}

braid_status bd_cuda_dev_node_end(const bd_cuda_kernel *k, braid_status st)
{
    emu_node *nd = cur;
    cur = NULL;
    if (!nd) return st;
    if (!st && nd->launched) {
        emu_standin *s = calloc(1, sizeof *s);
        if (s) {
            s->node = k->node;
            s->n_in = k->n_in;
            s->n_out = k->n_out;
            s->n_slots = BD_MAX(k->n_in, bd_node_slots(k->node));
            s->in = malloc(((size_t)s->n_slots + 1) * sizeof *s->in);
            s->out = malloc(((size_t)k->n_out + 1) * sizeof *s->out);
        }
        if (!s || !s->in || !s->out) {
            emu_standin_free(s);
            st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            memcpy(s->in, k->in, (size_t)s->n_slots * sizeof *s->in); /* the walk zeroes those past n_in */
            memcpy(s->out, k->out, (size_t)k->n_out * sizeof *s->out);
            char what[300];
            snprintf(what, sizeof what, "node '%s' (%s): the CPU kernel standing in for it", k->node->name,
                     k->node->op_type);
            int n = 0;
            emu_access *acc = node_accesses(nd, NULL, 0, &n);
            emu_op *op = emu_op_new(EMU_OP_STANDIN, what);
            cudaError_t e = cudaErrorMemoryAllocation;
            if (acc && op) {
                op->standin = s;
                s = NULL;
                n -= k->workspace && k->workspace_size ? 1 : 0; /* the stand-in uses no workspace */
                emu_lock();
                emu_stream *str = emu_stream_get(k->stream);
                e = str ? emu_enqueue(str, op, acc, n, 0) : cudaErrorInvalidResourceHandle;
                if (!str) emu_op_free(op);
                emu_unlock();
                op = NULL;
            }
            emu_op_free(op);
            emu_standin_free(s);
            free(acc);
            if (e) st = BD_FAIL(k->err, e == cudaErrorMemoryAllocation ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_DEVICE,
                                "%s", cudaGetErrorString(e));
        }
    }
    free(nd->up);
    free(nd);
    return st;
}

long bd_cuda_dev_reports(char *last, size_t n)
{
    if (emu_init() != cudaSuccess) return -1;
    emu_lock();
    long r = emu.reports;
    if (last && n) snprintf(last, n, "%s", emu.last_report);
    emu_unlock();
    return r;
}

