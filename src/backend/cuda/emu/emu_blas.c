/* emu_blas.c: the emulated device's cuBLAS (shared/EMULATOR.md): the handle
 * with its stream, workspace and math mode, and the GEMMs braid's launchers
 * call (Sgemm, Dgemm, GemmEx and their strided and pointer-array batches).
 * Every argument is checked at least as strictly as cuBLAS does, with a line
 * on stderr saying which one is wrong; a GEMM does no arithmetic: it declares
 * the exact bytes it reads and writes to the happens-before checker
 * (emu_compute), and the node's CPU stand-in produces the values. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "backend/cuda/emu/emu.h"


struct cublasContext {
    cudaStream_t stream; /* NULL: the legacy stream */
    void *ws;            /* the workspace cublasSetWorkspace gave, NULL: cuBLAS's own pool */
    size_t ws_size;
    cublasMath_t math;
};

/* ---- live handles: a destroyed or foreign pointer is refused, never read ---------------- */

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cublasContext **live;
static int n_live, cap_live;
static long live_handles; /* cublasCreate minus cublasDestroy */

/* op 0: whether h is live; 1: adds it; -1: removes it (1 when it was live). */
static int live_op(struct cublasContext *h, int op)
{
    int i = 0, ok = 0;
    pthread_mutex_lock(&live_mu);
    while (i < n_live && live[i] != h) i++;
    if (op <= 0) ok = i < n_live;
    if (op < 0 && ok) live[i] = live[--n_live];
    if (op > 0) {
        if (n_live == cap_live) {
            int cap = cap_live ? 2 * cap_live : 16;
            struct cublasContext **t = realloc(live, (size_t)cap * sizeof *t);
            if (t) live = t, cap_live = cap;
        }
        if (n_live < cap_live) live[n_live++] = h, ok = 1;
    }
    if (ok && op) live_handles += op;
    pthread_mutex_unlock(&live_mu);
    return ok;
}

static struct cublasContext *handle_get(cublasHandle_t h) { return h && live_op(h, 0) ? h : NULL; }

/* ---- messages and the status string ----------------------------------------------------- */

static _Thread_local char exec_text[1400]; /* "CUBLAS_STATUS_EXECUTION_FAILED (braid CUDA emulator: ...)" */
static _Thread_local int exec_explained;   /* the thread's last EXECUTION_FAILED has that text */

__attribute__((format(printf, 3, 4))) static cublasStatus_t bad(cublasStatus_t st, const char *fn, const char *fmt, ...)
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

/* Calls are named as braid's code spells them (cublasSgemm, not the
 * exported cublasSgemm_v2); BRAID_CUDA_EMULATOR_FAIL may use either. */
static int fail_now(const char *fn)
{
    char v2[80];
    snprintf(v2, sizeof v2, "%s_v2", fn);
    return emu_fail_now(fn) | emu_fail_now(v2);
}

/* Entry of every call (fn: its name): the emulator started, BRAID_CUDA_EMULATOR_FAIL applied. */
#define ENTER(name, fail)                                                                          \
    const char *fn = name;                                                                         \
    do {                                                                                           \
        if (emu_init() != cudaSuccess || fail_now(fn)) {                                           \
            if ((fail) == CUBLAS_STATUS_EXECUTION_FAILED) exec_explained = 0;                      \
            return (fail);                                                                         \
        }                                                                                          \
    } while (0)

#define HANDLE(h, hv)                                                                              \
    struct cublasContext *h = handle_get(hv);                                                      \
    if (!h) return bad(CUBLAS_STATUS_NOT_INITIALIZED, fn, "handle %p is NULL or not a live cuBLAS handle", (void *)(hv))

/* ---- the handle ----------------------------------------------------------------------------- */

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    const char *fn = "cublasCreate";
    if (emu_init() != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (fail_now(fn)) return CUBLAS_STATUS_ALLOC_FAILED;
    if (!handle) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "handle (the output pointer) is NULL");
    struct cublasContext *h = calloc(1, sizeof *h);
    if (!h || !live_op(h, 1)) {
        free(h);
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    ENTER("cublasDestroy", CUBLAS_STATUS_NOT_INITIALIZED);
    if (!handle || !live_op(handle, -1))
        return bad(CUBLAS_STATUS_NOT_INITIALIZED, fn, "handle %p is NULL or not a live cuBLAS handle", (void *)handle);
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

/* As cuBLAS documents, a new stream also resets the workspace to cuBLAS's own pool. */
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream)
{
    ENTER("cublasSetStream", CUBLAS_STATUS_INVALID_VALUE);
    HANDLE(h, handle);
    emu_lock();
    int known = emu_stream_get(stream) != NULL;
    emu_unlock();
    if (!known) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "streamId %p is not a live CUDA stream", (void *)stream);
    h->stream = stream;
    h->ws = NULL, h->ws_size = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *stream)
{
    ENTER("cublasGetStream", CUBLAS_STATUS_INVALID_VALUE);
    HANDLE(h, handle);
    if (!stream) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "streamId (the output pointer) is NULL");
    *stream = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}

/* The workspace must be device memory (not pinned or managed) of at least
 * size bytes from ws, aligned to 256 bytes. */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *ws, size_t size)
{
    ENTER("cublasSetWorkspace", CUBLAS_STATUS_INVALID_VALUE);
    HANDLE(h, handle);
    if (size == 0) { /* no workspace */
        h->ws = NULL, h->ws_size = 0;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!ws) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "workspace is NULL with workspaceSizeInBytes %zu", size);
    if ((uintptr_t)ws % 256)
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "workspace %p is not aligned to 256 bytes", ws);
    char where[200];
    emu_lock();
    emu_alloc *a = emu_alloc_find((uintptr_t)ws);
    int ok = a && a->kind == EMU_MEM_DEVICE && (uintptr_t)ws + size <= a->base + a->size;
    if (!ok) emu_describe((uintptr_t)ws, where, sizeof where);
    emu_unlock();
    if (!ok)
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "workspace %p (%s) does not hold %zu bytes of device memory", ws,
                   where, size);
    h->ws = ws, h->ws_size = size;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    ENTER("cublasSetMathMode", CUBLAS_STATUS_INVALID_VALUE);
    HANDLE(h, handle);
    int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
        base != CUBLAS_TF32_TENSOR_OP_MATH && base != CUBLAS_FP32_EMULATED_BF16X9_MATH &&
        base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "mode %d is no cublasMath_t", (int)mode);
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    ENTER("cublasGetMathMode", CUBLAS_STATUS_INVALID_VALUE);
    HANDLE(h, handle);
    if (!mode) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "mode (the output pointer) is NULL");
    *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    ENTER("cublasGetProperty", CUBLAS_STATUS_INVALID_VALUE);
    if (!value) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "value is NULL");
    switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "type %d is no libraryPropertyType", (int)type);
    }
}

/* ---- types ---------------------------------------------------------------------------------- */

/* Bytes of an element of a cudaDataType cuBLAS's GEMMs take; 0: none of them. */
static size_t ty_size(int t)
{
    switch (t) {
    case CUDA_R_8I: return 1;
    case CUDA_R_16F: case CUDA_R_16BF: case CUDA_C_8I: return 2;
    case CUDA_R_32F: case CUDA_R_32I: return 4;
    case CUDA_R_64F: case CUDA_C_32F: return 8;
    case CUDA_C_64F: return 16;
    default: return 0;
    }
}
static int ty_valid(int t) { return t >= CUDA_R_32F && t <= CUDA_R_4F_E2M1; }

static const char *ty_name(int t, char *buf)
{
    switch (t) {
#define T(x)                                                                                       \
    case x: return #x;
        T(CUDA_R_16F) T(CUDA_R_16BF) T(CUDA_R_32F) T(CUDA_R_64F) T(CUDA_C_32F) T(CUDA_C_64F) T(CUDA_R_8I) T(CUDA_C_8I)
        T(CUDA_R_32I)
#undef T
    default: snprintf(buf, 16, "cudaDataType %d", t); return buf;
    }
}

/* The compute types by the rows of cuBLAS's table of GemmEx's combinations:
 * 1 half, 2 float, 3 float allowed to down-convert, 4 double, 5 int32; 0: no compute type. */
static int comp_class(int c)
{
    switch (c) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: return 1;
    case CUBLAS_COMPUTE_32F: case CUBLAS_COMPUTE_32F_PEDANTIC: return 2;
    case CUBLAS_COMPUTE_32F_FAST_16F: case CUBLAS_COMPUTE_32F_FAST_16BF: case CUBLAS_COMPUTE_32F_FAST_TF32:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9: return 3;
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT: return 4;
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: return 5;
    default: return 0;
    }
}

/* Whether cuBLAS runs A and B of type ab into C of type c under compute class cls. */
static int combo_ok(int cls, int ab, int c)
{
    static const int rows[][3] = {
        {1, CUDA_R_16F, CUDA_R_16F},   {2, CUDA_R_16BF, CUDA_R_16BF}, {2, CUDA_R_16F, CUDA_R_16F},
        {2, CUDA_R_8I, CUDA_R_32F},    {2, CUDA_R_16BF, CUDA_R_32F},  {2, CUDA_R_16F, CUDA_R_32F},
        {2, CUDA_R_32F, CUDA_R_32F},   {2, CUDA_C_8I, CUDA_C_32F},    {2, CUDA_C_32F, CUDA_C_32F},
        {3, CUDA_R_32F, CUDA_R_32F},   {3, CUDA_C_32F, CUDA_C_32F},   {4, CUDA_R_64F, CUDA_R_64F},
        {4, CUDA_C_64F, CUDA_C_64F},   {5, CUDA_R_8I, CUDA_R_32I},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i][0] == cls && rows[i][1] == ab && rows[i][2] == c) return 1;
    return 0;
}

static int algo_valid(int a) { return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
                                      (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
                                      a == CUBLAS_GEMM_AUTOTUNE; }

/* Whether the scale *s (host memory: the default pointer mode) is not zero;
 * its type follows the compute type (complex when C is). */
static int scale_nonzero(const void *s, int cls, int c)
{
    switch (cls) {
    case 1: return (*(const uint16_t *)s & 0x7fff) != 0;
    case 5: return *(const int32_t *)s != 0;
    case 4: return ((const double *)s)[0] != 0.0 || (c == CUDA_C_64F && ((const double *)s)[1] != 0.0);
    default: return ((const float *)s)[0] != 0.0f || (c == CUDA_C_32F && ((const float *)s)[1] != 0.0f);
    }
}

/* ---- the GEMMs -------------------------------------------------------------------------------- */

/* One call: C = alpha op(A) op(B) + beta C, column-major, batch times. */
typedef struct gemm {
    const char *fn;
    cublasHandle_t handle;
    int ta, tb, m, n, k;
    const void *alpha, *beta;
    const void *a, *b, *c; /* the matrices, or (kind 2) the device arrays of their pointers */
    int at, bt, ct, lda, ldb, ldc;
    long long sa, sb, sc;  /* kind 1: element strides between the batch's matrices */
    int batch, kind;       /* kind 0: one product, 1: a strided batch, 2: a batch of pointer arrays */
    int comp, algo;
} gemm;

static int op_valid(int o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; }
static const char *op_name(int o) { return o == CUBLAS_OP_N ? "N" : o == CUBLAS_OP_T ? "T" : "C"; }

/* Elements a rows x cols matrix at ld spans (a strided batch: count of them, s apart). */
static long long span(long long rows, long long cols, long long ld, long long s, long long count)
{
    if (!rows || !cols || !count) return 0;
    return (count - 1) * s + (cols - 1) * ld + rows;
}

/* 1 when two of the batch's C matrices (m x n at ldc, sc apart) share an element:
 * the batch would write it twice at once. */
static int c_overlap(long long m, long long n, long long ldc, long long sc, long long batch)
{
    if (batch < 2) return 0;
    if (sc == 0) return 1;
    long long one = (n - 1) * ldc + m;
    for (long long d = 1; d < batch && d * sc < one && d < (1 << 20); d++) {
        long long o = d * sc, q = o / ldc, r = o % ldc; /* o = q columns + r rows */
        if ((r < m && q < n) || (ldc - r < m && q + 1 < n)) return 1;
    }
    return 0;
}

/* EXECUTION_FAILED with why as its status string (printed unless the checker already did). */
static cublasStatus_t exec_fail(const char *fn, const char *why, int printed)
{
    snprintf(exec_text, sizeof exec_text, "CUBLAS_STATUS_EXECUTION_FAILED (braid CUDA emulator: %s)", why);
    exec_explained = 1;
    return printed ? CUBLAS_STATUS_EXECUTION_FAILED : bad(CUBLAS_STATUS_EXECUTION_FAILED, fn, "%s", why);
}

static cublasStatus_t gemm_run(const gemm *g)
{
    const char *fn = g->fn;
    HANDLE(h, g->handle);
    if (!op_valid(g->ta) || !op_valid(g->tb))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "%s %d is no cublasOperation_t", op_valid(g->ta) ? "transb" :
                   "transa", op_valid(g->ta) ? g->tb : g->ta);
    if (g->m < 0 || g->n < 0 || g->k < 0)
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "m %d, n %d, k %d: none may be negative", g->m, g->n, g->k);
    if (g->batch < 0) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "batchCount %d is negative", g->batch);
    int ra = g->ta == CUBLAS_OP_N ? g->m : g->k, rb = g->tb == CUBLAS_OP_N ? g->k : g->n;
    if (g->lda < (ra > 1 ? ra : 1))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "lda %d is below max(1, %d), the rows of A as stored (transa %s)",
                   g->lda, ra, op_name(g->ta));
    if (g->ldb < (rb > 1 ? rb : 1))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "ldb %d is below max(1, %d), the rows of B as stored (transb %s)",
                   g->ldb, rb, op_name(g->tb));
    if (g->ldc < (g->m > 1 ? g->m : 1))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "ldc %d is below max(1, m %d)", g->ldc, g->m);
    if (!g->alpha || !g->beta) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "%s is NULL", g->alpha ? "beta" : "alpha");
    if (g->kind == 1 && (g->sa < 0 || g->sb < 0 || g->sc < 0))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "strideA %lld, strideB %lld, strideC %lld: none may be negative",
                   g->sa, g->sb, g->sc);
    if (!ty_valid(g->at) || !ty_valid(g->bt) || !ty_valid(g->ct))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "Atype %d, Btype %d, Ctype %d: not all are cudaDataType values",
                   g->at, g->bt, g->ct);
    int cls = comp_class(g->comp);
    if (!cls) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "computeType %d is no cublasComputeType_t", g->comp);
    if (!algo_valid(g->algo)) return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "algo %d is no cublasGemmAlgo_t", g->algo);
    if (g->at != g->bt || !combo_ok(cls, g->at, g->ct)) {
        char b1[16], b2[16], b3[16];
        return bad(CUBLAS_STATUS_NOT_SUPPORTED, fn, "Atype %s, Btype %s, Ctype %s under computeType %d (%s) is not "
                   "a combination cuBLAS runs", ty_name(g->at, b1), ty_name(g->bt, b2), ty_name(g->ct, b3), g->comp,
                   cls == 1 ? "half" : cls == 2 ? "float" : cls == 3 ? "float, fast" : cls == 4 ? "double" : "int32");
    }
    if (g->m == 0 || g->n == 0 || g->batch == 0) return CUBLAS_STATUS_SUCCESS; /* nothing to do: no work */
    size_t ea = ty_size(g->at), ec = ty_size(g->ct), ep = g->kind == 2 ? sizeof(void *) : 0;
    const char *nm[3] = {"A", "B", "C"};
    const void *pt[3] = {g->a, g->b, g->c};
    for (int i = 0; i < 3; i++)
        if ((uintptr_t)pt[i] % (ep ? ep : i < 2 ? ea : ec))
            return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "%s%s %p is not aligned to its %zu-byte elements", nm[i],
                       ep ? "array" : "", pt[i], ep ? ep : i < 2 ? ea : ec);
    if (g->kind == 1 && c_overlap(g->m, g->n, g->ldc, g->sc, g->batch))
        return bad(CUBLAS_STATUS_INVALID_VALUE, fn, "strideC %lld makes the batch's C matrices (%d x %d at ldc %d) "
                   "overlap", g->sc, g->m, g->n, g->ldc);
    /* The bytes read and written. The pointer arrays live in device memory: only they can be declared. */
    int bz = g->kind == 1 ? g->batch : 1, beta_nz = scale_nonzero(g->beta, cls, g->ct);
    size_t na = g->kind == 2 ? ep * (size_t)g->batch : ea * (size_t)span(ra, g->ta == CUBLAS_OP_N ? g->k : g->m,
                                                                             g->lda, g->sa, bz);
    size_t nb = g->kind == 2 ? ep * (size_t)g->batch : ea * (size_t)span(rb, g->tb == CUBLAS_OP_N ? g->n : g->k,
                                                                             g->ldb, g->sb, bz);
    size_t nc = g->kind == 2 ? ep * (size_t)g->batch : ec * (size_t)span(g->m, g->n, g->ldc, g->sc, bz);
    emu_access acc[6];
    int n = 0;
    acc[n++] = (emu_access){(uintptr_t)g->a, na, 0};
    acc[n++] = (emu_access){(uintptr_t)g->b, nb, 0};
    if (g->kind == 2 || beta_nz) acc[n++] = (emu_access){(uintptr_t)g->c, nc, 0};
    if (g->kind != 2) acc[n++] = (emu_access){(uintptr_t)g->c, nc, 1};
    size_t bytes = na + nb + nc * (size_t)(beta_nz + 1);
    if (h->ws) { /* cuBLAS may use all of it, reading and writing */
        acc[n++] = (emu_access){(uintptr_t)h->ws, h->ws_size, 1}; /* read and written: a write orders against both */
    }
    char what[120], why[1200];
    if (g->kind) snprintf(what, sizeof what, "%s (m %d, n %d, k %d, batch %d)", fn, g->m, g->n, g->k, g->batch);
    else snprintf(what, sizeof what, "%s (m %d, n %d, k %d)", fn, g->m, g->n, g->k);
    why[0] = '\0';
    emu_lock();
    emu_stream *s = emu_stream_get(h->stream);
    cudaError_t e = cudaSuccess;
    if (emu.sticky) snprintf(why, sizeof why, "an earlier asynchronous fault left the device unusable: %s",
                             emu.sticky_text);
    else if (!s) snprintf(why, sizeof why, "the handle's stream %p is no longer a live CUDA stream", (void *)h->stream);
    else if ((e = emu_compute(s, what, acc, n, 0.002 + (double)bytes / 2e9)) == EMU_ERR_REPORT)
        snprintf(why, sizeof why, "%s", emu_report_text());
    else if (e != cudaSuccess)
        snprintf(why, sizeof why, "the emulator could not enqueue %s (CUDA error %d)", what, (int)e);
    emu_unlock();
    return why[0] ? exec_fail(fn, why, e == EMU_ERR_REPORT) : CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                              const float *beta, float *C, int ldc)
{
    ENTER("cublasSgemm", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              lda, ldb, ldc, 0, 0, 0, 1, 0, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
    return gemm_run(&g);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const double *alpha, const double *A, int lda, const double *B, int ldb,
                              const double *beta, double *C, int ldc)
{
    ENTER("cublasDgemm", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
              lda, ldb, ldc, 0, 0, 0, 1, 0, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT};
    return gemm_run(&g);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float *alpha, const float *A, int lda,
                                         long long int strideA, const float *B, int ldb, long long int strideB,
                                         const float *beta, float *C, int ldc, long long int strideC, int batchCount)
{
    ENTER("cublasSgemmStridedBatched", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              lda, ldb, ldc, strideA, strideB, strideC, batchCount, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT};
    return gemm_run(&g);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double *alpha, const double *A, int lda,
                                         long long int strideA, const double *B, int ldb, long long int strideB,
                                         const double *beta, double *C, int ldc, long long int strideC, int batchCount)
{
    ENTER("cublasDgemmStridedBatched", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
              lda, ldb, ldc, strideA, strideB, strideC, batchCount, 1, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT};
    return gemm_run(&g);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    ENTER("cublasGemmEx", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, Atype, Btype, Ctype,
              lda, ldb, ldc, 0, 0, 0, 1, 0, computeType, algo};
    return gemm_run(&g);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                                   int n, int k, const void *alpha, const void *const Aarray[], cudaDataType Atype,
                                   int lda, const void *const Barray[], cudaDataType Btype, int ldb, const void *beta,
                                   void *const Carray[], cudaDataType Ctype, int ldc, int batchCount,
                                   cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    ENTER("cublasGemmBatchedEx", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, Aarray, Barray, Carray, Atype, Btype, Ctype,
              lda, ldb, ldc, 0, 0, 0, batchCount, 2, computeType, algo};
    return gemm_run(&g);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void *beta, void *C, cudaDataType Ctype,
                                          int ldc, long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    ENTER("cublasGemmStridedBatchedEx", CUBLAS_STATUS_EXECUTION_FAILED);
    gemm g = {fn, handle, transa, transb, m, n, k, alpha, beta, A, B, C, Atype, Btype, Ctype,
              lda, ldb, ldc, strideA, strideB, strideC, batchCount, 1, computeType, algo};
    return gemm_run(&g);
}

/* ---- the status string ------------------------------------------------------------------------- */

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return exec_explained ? exec_text : "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "<unknown>";
    }
}
