/* emu_dnn.c: the emulated device's cuDNN (shared/EMULATOR.md): the handle,
 * the tensor, filter and convolution descriptors, the output-dim formula,
 * the algorithm heuristics with their workspace sizes, and the compute calls
 * braid's conv launchers make (forward, backward data, add tensor). Every
 * argument is checked at least as strictly as cuDNN does, with a line on
 * stderr saying which one is wrong; a compute call does no arithmetic: it
 * declares the exact bytes it reads and writes to the happens-before checker
 * (emu_compute), and the node's CPU stand-in produces the values. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "backend/cuda/emu/emu.h"

/* cuDNN 9 marks the legacy convolution API deprecated; this file implements it. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define MAXD CUDNN_DIM_MAX

enum { OBJ_HANDLE = 0x6e6e6401, OBJ_TENSOR, OBJ_FILTER, OBJ_CONV };

/* Each object opens with its kind; a descriptor then says whether it was set. */
struct cudnnContext {
    int kind;
    cudaStream_t stream; /* NULL: the legacy stream */
};
struct cudnnTensorStruct {
    int kind, set, dt, nb, dim[MAXD], str[MAXD];
};
struct cudnnFilterStruct {
    int kind, set, dt, fmt, nb, dim[MAXD];
};
struct cudnnConvolutionStruct {
    int kind, set, len, pad[MAXD], str[MAXD], dil[MAXD];
    int mode, ct, groups, math; /* the group count and math type are set on their own */
};

/* ---- live objects: a destroyed or foreign pointer is refused, never read ---------------- */

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static void **live;         /* sorted */
static size_t n_live, cap_live;
static long live_handles;   /* cudnnCreate minus cudnnDestroy */

/* The index where p is, or would go, in live (live_mu held). */
static size_t live_pos(const void *p)
{
    size_t lo = 0, hi = n_live;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((uintptr_t)live[mid] < (uintptr_t)p) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int live_grow(void)
{
    size_t cap = cap_live ? 2 * cap_live : 64;
    void **t = realloc(live, cap * sizeof *t);
    if (!t) return 0;
    live = t, cap_live = cap;
    return 1;
}

/* op 0: whether p is a live object of kind; 1: adds it; -1: removes it (1 when it was live). */
static int live_op(void *p, int op, int kind)
{
    int ok = 0;
    pthread_mutex_lock(&live_mu);
    size_t i = live_pos(p);
    int found = i < n_live && live[i] == p && *(int *)p == kind;
    if (op <= 0) ok = found;
    if (op < 0 && found) memmove(&live[i], &live[i + 1], (--n_live - i) * sizeof *live);
    if (op > 0 && (n_live < cap_live || live_grow())) {
        memmove(&live[i + 1], &live[i], (n_live++ - i) * sizeof *live);
        live[i] = p, ok = 1;
    }
    if (ok && op && kind == OBJ_HANDLE) live_handles += op;
    pthread_mutex_unlock(&live_mu);
    return ok;
}

static void *obj_new(size_t size, int kind)
{
    int *o = calloc(1, size);
    if (o) *o = kind;
    if (o && !live_op(o, 1, kind)) free(o), o = NULL;
    return o;
}
static void *obj_get(const void *p, int kind) { return p && live_op((void *)p, 0, kind) ? (void *)p : NULL; }
static int obj_free(void *p, int kind)
{
    if (!p || !live_op(p, -1, kind)) return 0;
    free(p);
    return 1;
}

/* ---- messages and the error string ---------------------------------------------------------- */

static _Thread_local char exec_text[1400]; /* "CUDNN_STATUS_EXECUTION_FAILED (braid CUDA emulator: ...)" */
static _Thread_local int exec_explained;   /* the thread's last EXECUTION_FAILED has that text */

__attribute__((format(printf, 3, 4))) static cudnnStatus_t bad(cudnnStatus_t st, const char *fn, const char *fmt, ...)
{
    char pre[300], msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emu_node_prefix(pre, sizeof pre);
    fprintf(stderr, "braid CUDA emulator: %s%s: %s\n", pre, fn, msg);
    return st;
}

/* Entry of every call (fn: its name): the emulator started, BRAID_CUDA_EMULATOR_FAIL applied. */
#define ENTER(fail)                                                                                \
    const char *fn = __func__;                                                                     \
    do {                                                                                           \
        if (emu_init() != cudaSuccess || emu_fail_now(fn)) {                                       \
            if ((fail) == CUDNN_STATUS_EXECUTION_FAILED) exec_explained = 0;                       \
            return (fail);                                                                         \
        }                                                                                          \
    } while (0)

#define HANDLE(h, hv)                                                                              \
    struct cudnnContext *h = obj_get(hv, OBJ_HANDLE);                                              \
    if (!h) return bad(CUDNN_STATUS_BAD_PARAM, fn, "handle %p is NULL or not a live cuDNN handle", (void *)(hv))

static int dt_valid(int t) { return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_COMPLEX_FP64; }

static size_t dt_size(int t)
{
    switch (t) {
    case CUDNN_DATA_DOUBLE: case CUDNN_DATA_INT64: case CUDNN_DATA_COMPLEX_FP32: return 8;
    case CUDNN_DATA_COMPLEX_FP64: return 16;
    case CUDNN_DATA_FLOAT: case CUDNN_DATA_INT32: case CUDNN_DATA_UINT32: return 4;
    case CUDNN_DATA_HALF: case CUDNN_DATA_BFLOAT16: return 2;
    default: return 1;
    }
}

static const char *dims_text(const int *d, int n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? ", " : "[", d[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}

/* ---- handles ---------------------------------------------------------------------------------- */

size_t cudnnGetVersion(void) { return CUDNN_VERSION; }

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)
{
    const char *fn = __func__;
    if (emu_init() != cudaSuccess) return CUDNN_STATUS_NOT_INITIALIZED;
    if (emu_fail_now(fn)) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    if (!handle) return bad(CUDNN_STATUS_BAD_PARAM, fn, "handle (the output pointer) is NULL");
    struct cudnnContext *h = obj_new(sizeof *h, OBJ_HANDLE);
    if (!h) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    *handle = h; /* bound to the legacy stream (NULL) until cudnnSetStream */
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    if (!obj_free(handle, OBJ_HANDLE))
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "handle %p is NULL or not a live cuDNN handle", (void *)handle);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    HANDLE(h, handle);
    emu_lock();
    int known = emu_stream_get(stream) != NULL;
    emu_unlock();
    if (!known) return bad(CUDNN_STATUS_BAD_PARAM, fn, "streamId %p is not a live CUDA stream", (void *)stream);
    h->stream = stream;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *stream)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    HANDLE(h, handle);
    if (!stream) return bad(CUDNN_STATUS_BAD_PARAM, fn, "streamId (the output pointer) is NULL");
    *stream = h->stream;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- descriptors ------------------------------------------------------------------------------ */

#define CREATE_DESTROY(Create, Destroy, T, S, KIND)                                                \
    cudnnStatus_t Create(T *d)                                                                     \
    {                                                                                              \
        ENTER(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED);                                 \
        if (!d) return bad(CUDNN_STATUS_BAD_PARAM, fn, "the output pointer is NULL");              \
        if (!(*d = obj_new(sizeof(struct S), KIND))) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED; \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }                                                                                              \
    cudnnStatus_t Destroy(T d)                                                                     \
    {                                                                                              \
        ENTER(CUDNN_STATUS_BAD_PARAM);                                                             \
        if (d && !obj_free(d, KIND))                                                               \
            return bad(CUDNN_STATUS_BAD_PARAM, fn, "%p is not a live descriptor of this kind", (void *)d); \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }
CREATE_DESTROY(cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor, cudnnTensorDescriptor_t, cudnnTensorStruct,
               OBJ_TENSOR)
CREATE_DESTROY(cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor, cudnnFilterDescriptor_t, cudnnFilterStruct,
               OBJ_FILTER)
CREATE_DESTROY(cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor, cudnnConvolutionDescriptor_t,
               cudnnConvolutionStruct, OBJ_CONV)

/* A live descriptor of kind that was set (name: the parameter, for the message). */
static cudnnStatus_t desc_get(const void *p, int kind, const char *fn, const char *name, void **out)
{
    int *o = obj_get(p, kind);
    if (!o) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s %p is NULL or not a live descriptor of its kind", name, p);
    if (!o[1]) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s is used before it was set", name);
    *out = o;
    return CUDNN_STATUS_SUCCESS;
}
#define DESC(var, type, p, kind, name)                                                             \
    type *var = NULL;                                                                              \
    do {                                                                                           \
        cudnnStatus_t s_ = desc_get(p, kind, fn, name, (void **)&var);                             \
        if (s_) return s_;                                                                         \
    } while (0)
/* A live descriptor, set or not. */
#define OBJ(var, type, p, kind, name)                                                              \
    type *var = obj_get(p, kind);                                                                  \
    if (!var) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s %p is NULL or not a live descriptor", name, (void *)p)

/* dataType, nbDims, the dims (and strides: str non-NULL) of a tensor or filter. */
static cudnnStatus_t dims_check(const char *fn, cudnnDataType_t dt, int nb, const int *dim, const int *str, int strided)
{
    if (!dt_valid(dt)) return bad(CUDNN_STATUS_BAD_PARAM, fn, "dataType %d is no cudnnDataType_t", (int)dt);
    if (nb < 3) return bad(CUDNN_STATUS_BAD_PARAM, fn, "nbDims %d is below 3", nb);
    if (nb > MAXD) return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "nbDims %d is above CUDNN_DIM_MAX (%d)", nb, MAXD);
    if (!dim || (strided && !str)) return bad(CUDNN_STATUS_BAD_PARAM, fn, "the dims or strides array is NULL");
    long long numel = 1;
    for (int i = 0; i < nb; i++) {
        if (dim[i] <= 0) return bad(CUDNN_STATUS_BAD_PARAM, fn, "dim %d is %d (must be > 0)", i, dim[i]);
        if (str && str[i] <= 0) return bad(CUDNN_STATUS_BAD_PARAM, fn, "stride %d is %d (must be > 0)", i, str[i]);
        if ((numel *= dim[i]) > 0x7fffffffLL)
            return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "the descriptor has more than 2^31 - 1 elements");
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc, cudnnDataType_t dt, int nb, const int dim[],
                                         const int str[])
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(t, struct cudnnTensorStruct, desc, OBJ_TENSOR, "tensorDesc");
    cudnnStatus_t st = dims_check(fn, dt, nb, dim, str, 1);
    if (st) return st;
    t->dt = dt, t->nb = nb;
    memcpy(t->dim, dim, (size_t)nb * sizeof *dim);
    memcpy(t->str, str, (size_t)nb * sizeof *str);
    t->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc, int req, cudnnDataType_t *dt, int *nb,
                                         int dim[], int str[])
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    DESC(t, struct cudnnTensorStruct, desc, OBJ_TENSOR, "tensorDesc");
    if (!dt || !nb || (req > 0 && (!dim || !str)) || req < 0)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "an output pointer is NULL or nbDimsRequested %d is negative", req);
    *dt = t->dt, *nb = t->nb;
    for (int i = 0; i < req && i < t->nb; i++) dim[i] = t->dim[i], str[i] = t->str[i];
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t dt, cudnnTensorFormat_t fmt,
                                         int nb, const int dim[])
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(f, struct cudnnFilterStruct, desc, OBJ_FILTER, "filterDesc");
    if (fmt != CUDNN_TENSOR_NCHW && fmt != CUDNN_TENSOR_NHWC && fmt != CUDNN_TENSOR_NCHW_VECT_C)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "format %d is no cudnnTensorFormat_t", (int)fmt);
    cudnnStatus_t st = dims_check(fn, dt, nb, dim, NULL, 0);
    if (st) return st;
    f->dt = dt, f->fmt = fmt, f->nb = nb;
    memcpy(f->dim, dim, (size_t)nb * sizeof *dim);
    f->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc, int len, const int pad[],
                                              const int str[], const int dil[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t ct)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(c, struct cudnnConvolutionStruct, desc, OBJ_CONV, "convDesc");
    if (len < 1) return bad(CUDNN_STATUS_BAD_PARAM, fn, "arrayLength %d is below 1", len);
    if (len > MAXD - 2) return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "arrayLength %d is above CUDNN_DIM_MAX - 2", len);
    if (!pad || !str || !dil) return bad(CUDNN_STATUS_BAD_PARAM, fn, "padA, filterStrideA or dilationA is NULL");
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "mode %d is no cudnnConvolutionMode_t", (int)mode);
    if (!dt_valid(ct)) return bad(CUDNN_STATUS_BAD_PARAM, fn, "computeType %d is no cudnnDataType_t", (int)ct);
    for (int i = 0; i < len; i++) {
        if (pad[i] < 0) return bad(CUDNN_STATUS_BAD_PARAM, fn, "padA[%d] is %d (must be >= 0)", i, pad[i]);
        if (str[i] <= 0) return bad(CUDNN_STATUS_BAD_PARAM, fn, "filterStrideA[%d] is %d (must be > 0)", i, str[i]);
        if (dil[i] <= 0) return bad(CUDNN_STATUS_BAD_PARAM, fn, "dilationA[%d] is %d (must be > 0)", i, dil[i]);
    }
    c->len = len;
    memcpy(c->pad, pad, (size_t)len * sizeof *pad);
    memcpy(c->str, str, (size_t)len * sizeof *str);
    memcpy(c->dil, dil, (size_t)len * sizeof *dil);
    c->mode = mode, c->ct = ct;
    if (!c->groups) c->groups = 1; /* the group count and math type are their own settings */
    c->set = 1;
    return CUDNN_STATUS_SUCCESS;
}

/* The group count and math type may be set before the geometry (cuDNN keeps them apart). */
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(c, struct cudnnConvolutionStruct, desc, OBJ_CONV, "convDesc");
    if (groups < 1) return bad(CUDNN_STATUS_BAD_PARAM, fn, "groupCount %d is below 1", groups);
    c->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int *groups)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(c, struct cudnnConvolutionStruct, desc, OBJ_CONV, "convDesc");
    if (!groups) return bad(CUDNN_STATUS_BAD_PARAM, fn, "groupCount is NULL");
    *groups = c->groups ? c->groups : 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(c, struct cudnnConvolutionStruct, desc, OBJ_CONV, "convDesc");
    if ((int)math < CUDNN_DEFAULT_MATH || (int)math > CUDNN_FMA_MATH)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "mathType %d is no cudnnMathType_t", (int)math);
    c->math = math;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t *math)
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    OBJ(c, struct cudnnConvolutionStruct, desc, OBJ_CONV, "convDesc");
    if (!math) return bad(CUDNN_STATUS_BAD_PARAM, fn, "mathType is NULL");
    *math = c->math;
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the convolution's geometry ---------------------------------------------------------------- */

/* The forward output dims of x under c and w (od: x->nb entries). */
static cudnnStatus_t out_dims(const char *fn, const struct cudnnConvolutionStruct *c,
                              const struct cudnnTensorStruct *x, const struct cudnnFilterStruct *w, int *od)
{
    char a[120], b[120];
    int g = c->groups ? c->groups : 1;
    if (x->nb != w->nb)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the image tensor has %d dims and the filter %d", x->nb, w->nb);
    if (c->len != x->nb - 2)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the convolution's arrayLength %d is not the tensors' %d dims - 2",
                   c->len, x->nb);
    if (x->dt != w->dt)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the image tensor's dataType %d differs from the filter's %d",
                   (int)x->dt, (int)w->dt);
    if ((long long)x->dim[1] != (long long)w->dim[1] * g)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the image tensor has %d channels, but the filter %s has %d per group "
                   "and groupCount is %d", x->dim[1], dims_text(w->dim, w->nb, a, sizeof a), w->dim[1], g);
    od[0] = x->dim[0];
    od[1] = w->dim[0];
    for (int i = 0; i < c->len; i++) {
        long long ek = (long long)(w->dim[i + 2] - 1) * c->dil[i] + 1;
        long long span = (long long)x->dim[i + 2] + 2LL * c->pad[i] - ek;
        if (span < 0)
            return bad(CUDNN_STATUS_BAD_PARAM, fn, "spatial dim %d: the dilated filter (%lld) is larger than the "
                       "padded image %s (pad %d)", i, ek, dims_text(x->dim, x->nb, b, sizeof b), c->pad[i]);
        od[i + 2] = (int)(span / c->str[i] + 1);
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                    const cudnnTensorDescriptor_t inDesc,
                                                    const cudnnFilterDescriptor_t wDesc, int nb, int od[])
{
    ENTER(CUDNN_STATUS_BAD_PARAM);
    DESC(c, struct cudnnConvolutionStruct, convDesc, OBJ_CONV, "convDesc");
    DESC(x, struct cudnnTensorStruct, inDesc, OBJ_TENSOR, "inputTensorDesc");
    DESC(w, struct cudnnFilterStruct, wDesc, OBJ_FILTER, "filterDesc");
    if (!od) return bad(CUDNN_STATUS_BAD_PARAM, fn, "tensorOuputDimA is NULL");
    if (nb != x->nb) return bad(CUDNN_STATUS_BAD_PARAM, fn, "nbDims %d is not the input's %d dims", nb, x->nb);
    int t[MAXD];
    cudnnStatus_t st = out_dims(fn, c, x, w, t);
    if (st) return st;
    memcpy(od, t, (size_t)nb * sizeof *od);
    return CUDNN_STATUS_SUCCESS;
}

/* What decides algorithms, workspaces and fake times: the forward relation
 * x (*) w -> y (backward data: dx (*) w -> dy). Hashed whole: keep it plain. */
typedef struct geom {
    int dir, nsp, dt, ct, groups, mode;
    long long n, c, k, cg;
    long long x[3], w[3], y[3], pad[3], str[3], dil[3];
} geom;

/* Checks that x, w, c and y describe one convolution cuDNN runs (xn, yn: the
 * tensors' parameter names) and fills g. */
static cudnnStatus_t conv_geom(const char *fn, int dir, cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                               cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, geom *g)
{
    const char *xn = dir ? "dxDesc" : "xDesc", *yn = dir ? "dyDesc" : "yDesc";
    char a[120], b[120];
    DESC(x, struct cudnnTensorStruct, xd, OBJ_TENSOR, xn);
    DESC(w, struct cudnnFilterStruct, wd, OBJ_FILTER, "wDesc");
    DESC(c, struct cudnnConvolutionStruct, cd, OBJ_CONV, "convDesc");
    DESC(y, struct cudnnTensorStruct, yd, OBJ_TENSOR, yn);
    int od[MAXD];
    cudnnStatus_t st = out_dims(fn, c, x, w, od);
    if (st) return st;
    if (y->nb != x->nb) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s has %d dims, %s %d", yn, y->nb, xn, x->nb);
    if (y->dt != x->dt)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s's dataType %d differs from %s's %d", yn, (int)y->dt, xn, (int)x->dt);
    if (x->nb != 4 && x->nb != 5)
        return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "convolutions run on 4-D and 5-D tensors, not %d-D", x->nb);
    if (w->fmt == CUDNN_TENSOR_NCHW_VECT_C)
        return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "the NCHW_VECT_C filter format is not supported");
    if (w->dim[0] % c->groups)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the filter's %d output channels are not a multiple of groupCount %d",
                   w->dim[0], c->groups);
    for (int i = 0; i < x->nb; i++)
        if (y->dim[i] != od[i])
            return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s dims %s differ from the convolution's output dims %s", yn,
                       dims_text(y->dim, y->nb, a, sizeof a), dims_text(od, x->nb, b, sizeof b));
    int d = x->dt, t = c->ct;
    if (!((d == CUDNN_DATA_FLOAT && t == CUDNN_DATA_FLOAT) || (d == CUDNN_DATA_DOUBLE && t == CUDNN_DATA_DOUBLE) ||
          (d == CUDNN_DATA_HALF && (t == CUDNN_DATA_HALF || t == CUDNN_DATA_FLOAT)) ||
          (d == CUDNN_DATA_BFLOAT16 && t == CUDNN_DATA_FLOAT)))
        return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "tensors of dataType %d with computeType %d are not a supported "
                   "configuration", d, t);
    memset(g, 0, sizeof *g);
    g->dir = dir, g->nsp = x->nb - 2, g->dt = d, g->ct = t, g->groups = c->groups, g->mode = c->mode;
    g->n = x->dim[0], g->c = x->dim[1], g->k = w->dim[0], g->cg = w->dim[1];
    for (int i = 0; i < g->nsp; i++) {
        g->x[i] = x->dim[i + 2], g->w[i] = w->dim[i + 2], g->y[i] = y->dim[i + 2];
        g->pad[i] = c->pad[i], g->str[i] = c->str[i], g->dil[i] = c->dil[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ---- algorithms and their workspaces ------------------------------------------------------------ */

static long long prod3(const long long *v, int n)
{
    long long p = 1;
    for (int i = 0; i < n; i++) p *= v[i];
    return p;
}
static int all_one(const long long *v, int n)
{
    for (int i = 0; i < n; i++)
        if (v[i] != 1) return 0;
    return 1;
}
static size_t al(long long b) { return (size_t)((b + 255) / 256 * 256); }
static long long pow2_up(long long v)
{
    long long p = 1;
    while (p < v) p *= 2;
    return p;
}

/* The algorithm families: forward numbering, backward data mapped onto it. */
enum { A_IGEMM, A_PRECOMP, A_GEMM, A_DIRECT, A_FFT, A_FFT_TILING, A_WINO, A_WINO_NF, A_BWD0, A_BWD1 };
static int family(int dir, int algo)
{
    static const int bwd[] = {A_BWD0, A_BWD1, A_FFT, A_FFT_TILING, A_WINO, A_WINO_NF};
    return dir ? bwd[algo] : algo;
}
static int n_algos(int dir) { return dir ? CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT : CUDNN_CONVOLUTION_FWD_ALGO_COUNT; }

/* Whether cuDNN runs algo on g. */
static int algo_ok(const geom *g, int algo)
{
    int f = family(g->dir, algo);
    int fl = g->dt == CUDNN_DATA_FLOAT || g->dt == CUDNN_DATA_HALF;
    int unit = g->nsp == 2 && all_one(g->str, 2) && all_one(g->dil, 2);
    int k3 = g->w[0] == 3 && g->w[1] == 3, k5 = g->w[0] == 5 && g->w[1] == 5;
    switch (f) {
    case A_IGEMM: case A_PRECOMP: case A_BWD0: case A_BWD1: return 1;
    case A_GEMM: return g->dt != CUDNN_DATA_BFLOAT16;
    case A_FFT:
        return fl && unit && g->groups == 1 && g->x[0] + 2 * g->pad[0] <= 256 && g->x[1] + 2 * g->pad[1] <= 256 &&
               g->pad[0] < g->w[0] && g->pad[1] < g->w[1];
    case A_FFT_TILING: return fl && unit && g->groups == 1 && g->w[0] <= 32 && g->w[1] <= 32;
    case A_WINO: return fl && unit && k3;
    case A_WINO_NF: return fl && unit && (k3 || k5);
    default: return 0; /* DIRECT: cuDNN implements none */
    }
}

/* The workspace algo needs on g; tensor: under tensor-op math (float only). */
static size_t algo_ws(const geom *g, int algo, int tensor)
{
    long long es = (long long)dt_size(g->dt), R = prod3(g->w, g->nsp), P = prod3(g->y, g->nsp);
    long long X = prod3(g->x, g->nsp), filt = g->k * g->cg * R, ws = 0;
    switch (family(g->dir, algo)) {
    case A_PRECOMP: ws = 4 * (g->cg * R + P); break;
    case A_BWD1: ws = 4 * (g->cg * R + X); break;
    case A_GEMM: ws = es * g->c * R * P; break;
    case A_FFT: {
        long long h = pow2_up(g->x[0] + 2 * g->pad[0]), w = pow2_up(g->x[1] + 2 * g->pad[1]);
        ws = 8 * h * (w / 2 + 1) * (g->n * g->c + filt / R + g->n * g->k);
        break;
    }
    case A_FFT_TILING: ws = 8 * 32 * 17 * (g->k * g->cg + g->n * (g->c + g->k)); break;
    case A_WINO: ws = es * 16 * g->k * g->cg; break;
    case A_WINO_NF: {
        long long t = g->w[0] == 3 ? 6 : 8, out = t - g->w[0] + 1;
        long long tiles = ((g->y[0] + out - 1) / out) * ((g->y[1] + out - 1) / out);
        ws = es * t * t * (g->k * g->cg + g->n * (g->c + g->k) * tiles);
        break;
    }
    default: ws = 0; break;
    }
    if (tensor && ws) ws += es * filt; /* the filter reordered for the tensor cores */
    return al(ws);
}

/* Float convolutions get a tensor-op entry per algorithm unless the math type forbids it. */
static int tensor_entries(const geom *g, int math) { return g->dt == CUDNN_DATA_FLOAT && math != CUDNN_FMA_MATH; }
static int runs_tensor(const geom *g, int math)
{
    return g->dt == CUDNN_DATA_FLOAT && (math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

static uint64_t geom_key(const geom *g) { return emu_hash(g, sizeof *g, 0x636f6e76ull); }

typedef struct entry {
    int algo, status, math, det;
    size_t mem;
} entry;

/* The heuristic's list for g, best first: the supported algorithms in an
 * order fixed by the geometry's hash, then the unsupported ones. */
static int algo_list(const geom *g, int math, entry *out)
{
    int sup[8], n_sup = 0, n = 0;
    uint64_t r = geom_key(g) | 1;
    for (int a = 0; a < n_algos(g->dir); a++)
        if (algo_ok(g, a)) sup[n_sup++] = a;
    for (int i = n_sup - 1; i > 0; i--) { /* Fisher-Yates, xorshift */
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int j = (int)(r % (uint64_t)(i + 1)), t = sup[i];
        sup[i] = sup[j], sup[j] = t;
    }
    for (int i = 0; i < n_sup; i++) {
        int a = sup[i], det = !(g->dir && a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
        entry d = {a, CUDNN_STATUS_SUCCESS, CUDNN_DEFAULT_MATH, det, algo_ws(g, a, 0)};
        entry t = {a, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH, det, algo_ws(g, a, 1)};
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        if (!tensor_entries(g, math)) out[n++] = d;
        else if (r & 1) out[n++] = t, out[n++] = d;
        else out[n++] = d, out[n++] = t;
    }
    for (int a = 0; a < n_algos(g->dir); a++)
        if (!algo_ok(g, a)) out[n++] = (entry){a, CUDNN_STATUS_NOT_SUPPORTED, CUDNN_DEFAULT_MATH, 1, 0};
    return n;
}

static cudnnStatus_t algo_check(const char *fn, const geom *g, int algo)
{
    if (algo < 0 || algo >= n_algos(g->dir))
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "algo %d is no %s algorithm", algo, g->dir ? "bwd data" : "forward");
    if (!algo_ok(g, algo))
        return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "algo %d does not run this convolution (cuDNN's heuristic lists it "
                   "as not supported)", algo);
    return CUDNN_STATUS_SUCCESS;
}

#define HEURISTIC(Name, Perf, Algo, DIR, XD, YD)                                                   \
    cudnnStatus_t Name(cudnnHandle_t handle, DIR##_ARGS, const int req, int *got, Perf *perf)      \
    {                                                                                              \
        ENTER(CUDNN_STATUS_BAD_PARAM);                                                             \
        HANDLE(h, handle);                                                                         \
        (void)h;                                                                                   \
        geom g;                                                                                    \
        cudnnStatus_t st = conv_geom(fn, DIR, XD, wDesc, convDesc, YD, &g);                        \
        if (st) return st;                                                                         \
        if (req < 1) return bad(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount %d is below 1", req); \
        if (!got || !perf) return bad(CUDNN_STATUS_BAD_PARAM, fn, "returnedAlgoCount or perfResults is NULL"); \
        entry e[32];                                                                               \
        int n = algo_list(&g, ((struct cudnnConvolutionStruct *)convDesc)->math, e);               \
        *got = n < req ? n : req;                                                                  \
        for (int i = 0; i < *got; i++) {                                                           \
            memset(&perf[i], 0, sizeof perf[i]);                                                   \
            perf[i].algo = (Algo)e[i].algo;                                                        \
            perf[i].status = (cudnnStatus_t)e[i].status;                                           \
            perf[i].time = -1.0f;                                                                  \
            perf[i].memory = e[i].mem;                                                             \
            perf[i].determinism = e[i].det ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;        \
            perf[i].mathType = (cudnnMathType_t)e[i].math;                                         \
        }                                                                                          \
        return CUDNN_STATUS_SUCCESS;                                                               \
    }
#define FWD_ARGS                                                                                   \
    const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,                      \
        const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc
#define BWD_ARGS                                                                                   \
    const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,                     \
        const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc
#define FWD 0
#define BWD 1
HEURISTIC(cudnnGetConvolutionForwardAlgorithm_v7, cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t, FWD,
          xDesc, yDesc)
HEURISTIC(cudnnGetConvolutionBackwardDataAlgorithm_v7, cudnnConvolutionBwdDataAlgoPerf_t,
          cudnnConvolutionBwdDataAlgo_t, BWD, dxDesc, dyDesc)

/* The workspace of algo under the descriptor's math type, as the list says. */
static cudnnStatus_t ws_query(const char *fn, int dir, cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                              cudnnConvolutionDescriptor_t cd, cudnnTensorDescriptor_t yd, int algo, geom *g,
                              size_t *need)
{
    cudnnStatus_t st = conv_geom(fn, dir, xd, wd, cd, yd, g);
    if (!st) st = algo_check(fn, g, algo);
    if (!st) *need = algo_ws(g, algo, runs_tensor(g, ((struct cudnnConvolutionStruct *)cd)->math));
    return st;
}

#define WS_SIZE(Name, Algo, DIR, XD, YD)                                                           \
    cudnnStatus_t Name(cudnnHandle_t handle, DIR##_ARGS, Algo algo, size_t *size)                  \
    {                                                                                              \
        ENTER(CUDNN_STATUS_BAD_PARAM);                                                             \
        HANDLE(h, handle);                                                                         \
        geom g;                                                                                    \
        if (!size) return bad(CUDNN_STATUS_BAD_PARAM, fn, "sizeInBytes is NULL");                  \
        return (void)h, ws_query(fn, DIR, XD, wDesc, convDesc, YD, (int)algo, &g, size);           \
    }
WS_SIZE(cudnnGetConvolutionForwardWorkspaceSize, cudnnConvolutionFwdAlgo_t, FWD, xDesc, yDesc)
WS_SIZE(cudnnGetConvolutionBackwardDataWorkspaceSize, cudnnConvolutionBwdDataAlgo_t, BWD, dxDesc, dyDesc)

/* ---- the compute calls ------------------------------------------------------------------------------ */

/* Bytes a tensor spans: 1 + sum((dim - 1) * stride) elements. */
static size_t t_bytes(const struct cudnnTensorStruct *t)
{
    long long e = 1;
    for (int i = 0; i < t->nb; i++) e += (long long)(t->dim[i] - 1) * t->str[i];
    return (size_t)e * dt_size(t->dt);
}

/* 1 when no two elements of t share an address (a tensor a call writes). */
static int t_disjoint(const struct cudnnTensorStruct *t)
{
    int ord[MAXD], n = 0;
    for (int i = 0; i < t->nb; i++)
        if (t->dim[i] > 1) {
            int j = n++;
            while (j > 0 && t->str[ord[j - 1]] > t->str[i]) ord[j] = ord[j - 1], j--;
            ord[j] = i;
        }
    long long need = 1;
    for (int i = 0; i < n; i++) {
        if (t->str[ord[i]] < need) return 0;
        need = (long long)t->str[ord[i]] * t->dim[ord[i]];
    }
    return 1;
}

/* alpha and beta are double for double data, float otherwise. */
static int scale_nonzero(const void *s, int dt)
{
    return dt == CUDNN_DATA_DOUBLE ? *(const double *)s != 0.0 : *(const float *)s != 0.0f;
}

static cudnnStatus_t data_check(const char *fn, const char *name, const void *p, int dt)
{
    if (!p) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s is NULL", name);
    if ((uintptr_t)p % dt_size(dt))
        return bad(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, fn, "%s %p is not aligned to its %zu-byte elements",
                   name, p, dt_size(dt));
    return CUDNN_STATUS_SUCCESS;
}

/* EXECUTION_FAILED with why as its error string (printed unless the checker already did). */
static cudnnStatus_t exec_fail(const char *fn, const char *why, int printed)
{
    snprintf(exec_text, sizeof exec_text, "CUDNN_STATUS_EXECUTION_FAILED (braid CUDA emulator: %s)", why);
    exec_explained = 1;
    return printed ? CUDNN_STATUS_EXECUTION_FAILED : bad(CUDNN_STATUS_EXECUTION_FAILED, fn, "%s", why);
}

/* Enqueues the call's accesses on the handle's stream. */
static cudnnStatus_t enqueue(const char *fn, const struct cudnnContext *h, const char *what, const emu_access *acc,
                             int n, double cost_ms)
{
    char why[1200];
    why[0] = '\0';
    emu_lock();
    emu_stream *s = emu_stream_get(h->stream);
    cudaError_t e = cudaSuccess;
    if (emu.sticky)
        snprintf(why, sizeof why, "an earlier asynchronous fault left the device unusable: %s", emu.sticky_text);
    else if (!s) snprintf(why, sizeof why, "the handle's stream %p is no longer a live CUDA stream", (void *)h->stream);
    else if ((e = emu_compute(s, what, acc, n, cost_ms)) == EMU_ERR_REPORT)
        snprintf(why, sizeof why, "%s", emu_report_text());
    else if (e != cudaSuccess)
        snprintf(why, sizeof why, "the emulator could not enqueue %s (CUDA error %d)", what, (int)e);
    emu_unlock();
    return why[0] ? exec_fail(fn, why, e == EMU_ERR_REPORT) : CUDNN_STATUS_SUCCESS;
}

static void acc_put(emu_access *acc, int *n, const void *p, size_t bytes, int write)
{
    acc[*n].addr = (uintptr_t)p;
    acc[*n].n = bytes;
    acc[*n].write = write;
    (*n)++;
}

/* Forward (dir 0: x, w -> y) and backward data (dir 1: dy, w -> dx), after
 * their argument order: src is read, dst written. */
static cudnnStatus_t conv_run(const char *fn, int dir, cudnnHandle_t handle, const void *alpha,
                              cudnnTensorDescriptor_t srcd, const void *src, cudnnFilterDescriptor_t wd, const void *w,
                              cudnnConvolutionDescriptor_t cd, int algo, void *ws, size_t ws_size, const void *beta,
                              cudnnTensorDescriptor_t dstd, void *dst)
{
    HANDLE(h, handle);
    geom g;
    size_t need = 0;
    cudnnTensorDescriptor_t xd = dir ? dstd : srcd, yd = dir ? srcd : dstd;
    cudnnStatus_t st = ws_query(fn, dir, xd, wd, cd, yd, algo, &g, &need);
    if (st) return st;
    const char *sn = dir ? "dy" : "x", *dn = dir ? "dx" : "y";
    if (!alpha || !beta) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s is NULL", alpha ? "beta" : "alpha");
    if ((st = data_check(fn, sn, src, g.dt)) || (st = data_check(fn, "w", w, g.dt)) ||
        (st = data_check(fn, dn, dst, g.dt)))
        return st;
    static const char *const math[] = {"default", "tensor-op", "tensor-op with conversion", "FMA"};
    if (ws_size < need)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "workSpaceSizeInBytes %zu is below the %zu bytes algo %d needs under "
                   "the descriptor's %s math", ws_size, need, algo, math[((struct cudnnConvolutionStruct *)cd)->math]);
    if (need && !ws) return bad(CUDNN_STATUS_BAD_PARAM, fn, "workSpace is NULL; algo %d needs %zu bytes", algo, need);
    const struct cudnnTensorStruct *s = (const void *)srcd, *d = (const void *)dstd;
    const struct cudnnFilterStruct *f = (const void *)wd;
    if (!t_disjoint(d))
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "the strides of %sDesc make elements of %s overlap", dn, dn);
    size_t fb = dt_size(f->dt);
    for (int i = 0; i < f->nb; i++) fb *= (size_t)f->dim[i];
    emu_access acc[5];
    int n = 0;
    acc_put(acc, &n, src, t_bytes(s), 0);
    acc_put(acc, &n, w, fb, 0);
    if (scale_nonzero(beta, g.dt)) acc_put(acc, &n, dst, t_bytes(d), 0);
    acc_put(acc, &n, dst, t_bytes(d), 1);
    if (ws && ws_size) acc_put(acc, &n, ws, ws_size, 1); /* read and written: a write orders against both */
    char what[96];
    snprintf(what, sizeof what, "%s (algo %d)", fn, algo);
    int tensor = runs_tensor(&g, ((struct cudnnConvolutionStruct *)cd)->math);
    uint64_t key = geom_key(&g);
    if (tensor) key = emu_hash(&tensor, sizeof tensor, key);
    return enqueue(fn, h, what, acc, n, emu_fake_algo_ms(key, algo));
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                                      const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                                      void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y)
{
    ENTER(CUDNN_STATUS_EXECUTION_FAILED);
    return conv_run(fn, 0, handle, alpha, xDesc, x, wDesc, w, convDesc, (int)algo, workSpace, workSpaceSizeInBytes,
                    beta, yDesc, y);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc,
                                           const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t convDesc,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx)
{
    ENTER(CUDNN_STATUS_EXECUTION_FAILED);
    return conv_run(fn, 1, handle, alpha, dyDesc, dy, wDesc, w, convDesc, (int)algo, workSpace, workSpaceSizeInBytes,
                    beta, dxDesc, dx);
}

/* C = alpha A + beta C, A broadcast over C where its dims are 1. */
cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc,
                             const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C)
{
    ENTER(CUDNN_STATUS_EXECUTION_FAILED);
    HANDLE(h, handle);
    DESC(a, struct cudnnTensorStruct, aDesc, OBJ_TENSOR, "aDesc");
    DESC(c, struct cudnnTensorStruct, cDesc, OBJ_TENSOR, "cDesc");
    char s1[120], s2[120];
    cudnnStatus_t st;
    if (a->dt != c->dt)
        return bad(CUDNN_STATUS_BAD_PARAM, fn, "aDesc's dataType %d differs from cDesc's %d", (int)a->dt, (int)c->dt);
    if (a->nb != c->nb) return bad(CUDNN_STATUS_BAD_PARAM, fn, "aDesc has %d dims, cDesc %d", a->nb, c->nb);
    for (int i = 0; i < a->nb; i++)
        if (a->dim[i] != 1 && a->dim[i] != c->dim[i])
            return bad(CUDNN_STATUS_BAD_PARAM, fn, "aDesc dims %s neither equal nor broadcast (1) to cDesc dims %s",
                       dims_text(a->dim, a->nb, s1, sizeof s1), dims_text(c->dim, c->nb, s2, sizeof s2));
    if (a->nb > 5) return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "tensors of %d dims are not supported", a->nb);
    if (c->dt != CUDNN_DATA_FLOAT && c->dt != CUDNN_DATA_DOUBLE && c->dt != CUDNN_DATA_HALF &&
        c->dt != CUDNN_DATA_BFLOAT16)
        return bad(CUDNN_STATUS_NOT_SUPPORTED, fn, "dataType %d is not supported", (int)c->dt);
    if (!alpha || !beta) return bad(CUDNN_STATUS_BAD_PARAM, fn, "%s is NULL", alpha ? "beta" : "alpha");
    if ((st = data_check(fn, "A", A, a->dt)) || (st = data_check(fn, "C", C, c->dt))) return st;
    if (!t_disjoint(c)) return bad(CUDNN_STATUS_BAD_PARAM, fn, "the strides of cDesc make elements of C overlap");
    emu_access acc[3];
    int n = 0;
    size_t ab = t_bytes(a), cb = t_bytes(c), total = ab + cb;
    acc_put(acc, &n, A, ab, 0);
    if (scale_nonzero(beta, c->dt)) acc_put(acc, &n, C, cb, 0), total += cb;
    acc_put(acc, &n, C, cb, 1);
    return enqueue(fn, h, fn, acc, n, 0.002 + (double)total / 2e9);
}

/* ---- error strings -------------------------------------------------------------------------------------- */

const char *cudnnGetErrorString(cudnnStatus_t status)
{
#define S(x) {x, #x},
    static const struct { int code; const char *name; } names[] = {
        S(CUDNN_STATUS_SUCCESS) S(CUDNN_STATUS_NOT_INITIALIZED) S(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
        S(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH) S(CUDNN_STATUS_DEPRECATED) S(CUDNN_STATUS_LICENSE_ERROR)
        S(CUDNN_STATUS_RUNTIME_IN_PROGRESS) S(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
        S(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED) S(CUDNN_STATUS_BAD_PARAM) S(CUDNN_STATUS_INVALID_VALUE)
        S(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
        S(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER) S(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
        S(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND) S(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
        S(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH) S(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
        S(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES) S(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
        S(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH) S(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
        S(CUDNN_STATUS_NOT_SUPPORTED) S(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN) S(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
        S(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE) S(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
        S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER) S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
        S(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH) S(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
        S(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE) S(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
        S(CUDNN_STATUS_NOT_SUPPORTED_PADDING) S(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
        S(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API) S(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
        S(CUDNN_STATUS_INTERNAL_ERROR) S(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
        S(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE) S(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        S(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) S(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
        S(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED) S(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
        S(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS) S(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
        S(CUDNN_STATUS_EXECUTION_FAILED_CURAND)};
#undef S
    if (status == CUDNN_STATUS_EXECUTION_FAILED) return exec_explained ? exec_text : "CUDNN_STATUS_EXECUTION_FAILED";
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].code == (int)status) return names[i].name;
    return "CUDNN_UNKNOWN_STATUS_FOUND";
}
