/* conv.cu: CUDA launchers of the conv op family through cuDNN. Conv is
 * cudnnConvolutionForward, ConvTranspose is cudnnConvolutionBackwardData;
 * geometry (auto_pad, output_shape, asymmetric pads) comes from
 * bd_conv_geometry exactly as on the CPU. cuDNN only pads symmetrically, so an
 * asymmetric Conv first copies its input into a zero-padded scratch, and an
 * asymmetric (or negatively padded) ConvTranspose computes the uncropped
 * output into scratch and crops it. Descriptors and the algorithm are chosen
 * once per node (shapes are fixed per plan) and kept in the node's cache. The
 * algorithm: on the first run of a shape in the process, cuDNN's candidates
 * that fit the stream's workspace are timed on the node's own tensors and the
 * fastest is kept in a process-wide cache (bd_algo_choose, bd_algo_cache in
 * src/backend/cuda/common/algo.c); without timing, the heuristic's order. Tensors
 * past cuDNN's limits are refused before any cuDNN call. float16 and
 * bfloat16 tensors go to cuDNN as CUDNN_DATA_HALF / CUDNN_DATA_BFLOAT16 with
 * float32 accumulation (the convolution's compute type), so each output is
 * rounded once; the padding, crop and epilogue kernels compute in float and
 * round when they store. */
#include <limits.h>
#include <stdlib.h>

#include "common.cuh"

extern "C" {
#include "backend/cuda/common/algo.h"
#include "backend/cuda/common/limits.h"
#include "ops/conv.h"
}

#define TIMING_REPS 3 /* timed runs per candidate, after one warm-up run */

enum conv_mode {
    CONV_DIRECT = 0,      /* Conv, symmetric pads */
    CONV_PADDED = 1,      /* Conv, asymmetric pads: x copied into a padded scratch */
    CONVT_DIRECT = 2,     /* ConvTranspose, symmetric pads cuDNN reproduces */
    CONVT_CROPPED = 3     /* ConvTranspose into an uncropped scratch, then cropped */
};

/* A 5-D view (N*C planes of D x H x W) of 1-, 2- and 3-D images. */
struct plane3 {
    int64_t d, h, w;
};

struct conv_cache {
    conv_mode mode;
    bd_conv_geom g;
    cudnnTensorDescriptor_t xd, yd, bd; /* the cuDNN-side input, output and bias */
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    int fwd_algo, bwd_algo;
    size_t ws_need;
    void *tmp;                          /* CONV_PADDED: padded input; CONVT_CROPPED: uncropped output */
    size_t tmp_bytes;
    plane3 img, tmp_img;                /* the planes of the real tensor and of the scratch */
    int64_t off[3];                     /* scratch index = real index + off (per spatial dim) */
    int64_t planes;                     /* N * channels of the tensor that is padded or cropped */
    int inject;                         /* BRAID_CUDA_TEST_FAULT names this node (see below) */
};

/* A test hook for the fault reports (tests/gpu, scripts/gpu-check): the node
 * named by BRAID_CUDA_TEST_FAULT hands cuDNN an unmapped input address, so
 * that its convolution faults with an illegal memory access, asynchronously,
 * as a real bug would. Never set otherwise. */
#define TEST_FAULT_ENV "BRAID_CUDA_TEST_FAULT"
static const void *const test_fault_address = (const void *)(uintptr_t)0x100;

/* ---- kernels ------------------------------------------------------------------------ */

/* Element access by dtype: float, or float16/bfloat16 held as uint16_t and
 * computed in float. */
struct el_f32 {
    typedef float T;
    static __device__ __forceinline__ float ld(const T *p, int64_t i) { return p[i]; }
    static __device__ __forceinline__ void st(T *p, int64_t i, float v) { p[i] = v; }
};
struct el_f16 {
    typedef uint16_t T;
    static __device__ __forceinline__ float ld(const T *p, int64_t i) { return bd_half_to_float_hd(p[i]); }
    static __device__ __forceinline__ void st(T *p, int64_t i, float v) { p[i] = bd_float_to_half(v); }
};
struct el_bf16 {
    typedef uint16_t T;
    static __device__ __forceinline__ float ld(const T *p, int64_t i) { return bd_bf16_to_float(p[i]); }
    static __device__ __forceinline__ void st(T *p, int64_t i, float v) { p[i] = bd_float_to_bf16(v); }
};

/* Calls f(E{}) with the element access of dtype dt; false for a dtype the
 * family does not run. */
template <class F> static bool el_dispatch(int dt, F &&f)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: f(el_f32{}); return true;
    case BRAID_DTYPE_FLOAT16: f(el_f16{}); return true;
    case BRAID_DTYPE_BFLOAT16: f(el_bf16{}); return true;
    default: return false;
    }
}

static cudnnDataType_t cudnn_type(int dt)
{
    return dt == BRAID_DTYPE_FLOAT16 ? CUDNN_DATA_HALF : dt == BRAID_DTYPE_BFLOAT16 ? CUDNN_DATA_BFLOAT16
                                                                                    : CUDNN_DATA_FLOAT;
}

static size_t el_size(int dt) { return dt == BRAID_DTYPE_FLOAT ? sizeof(float) : sizeof(uint16_t); }

/* y = bd_conv_epilogue(...) in place, one pass: the bias, the residual of an
 * Add folded into the Conv (input 3) and the fused activation (src/passes/fuse_conv.c). */
template <class E>
static __global__ void conv_epilogue(typename E::T *__restrict__ y, int64_t n, int64_t plane, int64_t c_out,
                                     const typename E::T *__restrict__ bias, const typename E::T *__restrict__ z,
                                     int act, float a, float b, int res)
{
    BD_CU_LOOP(i, n)
    {
        float bv = bias ? E::ld(bias, (i / plane) % c_out) : 0.0f;
        E::st(y, i, bd_conv_epilogue(act, a, b, res, E::ld(y, i), bv, z ? E::ld(z, i) : 0.0f));
    }
}

/* dst (planes x td x th x tw) = src (planes x sd x sh x sw) shifted by off, zero outside;
 * plus bias[plane % c] when bias is set. Serves both the input padding
 * (off = pad begin) and the output crop (off = -pad begin). */
template <class E>
static __global__ void shift_copy(const typename E::T *__restrict__ src, typename E::T *__restrict__ dst,
                                  int64_t planes, plane3 s, plane3 t, int64_t od, int64_t oh, int64_t ow,
                                  const typename E::T *__restrict__ bias, int64_t c)
{
    int64_t n = planes * t.d * t.h * t.w;
    BD_CU_LOOP(i, n)
    {
        int64_t x = i % t.w, r = i / t.w;
        int64_t y = r % t.h;
        r /= t.h;
        int64_t z = r % t.d, pl = r / t.d;
        int64_t sz = z - od, sy = y - oh, sx = x - ow;
        float v = 0.0f;
        if (sz >= 0 && sz < s.d && sy >= 0 && sy < s.h && sx >= 0 && sx < s.w)
            v = E::ld(src, ((pl * s.d + sz) * s.h + sy) * s.w + sx);
        if (bias) v += E::ld(bias, pl % c);
        E::st(dst, i, v);
    }
}

/* ---- setup ---------------------------------------------------------------------------- */

static void cache_free(conv_cache *c)
{
    if (!c) return;
    if (c->xd) cudnnDestroyTensorDescriptor(c->xd);
    if (c->yd) cudnnDestroyTensorDescriptor(c->yd);
    if (c->bd) cudnnDestroyTensorDescriptor(c->bd);
    if (c->wd) cudnnDestroyFilterDescriptor(c->wd);
    if (c->cd) cudnnDestroyConvolutionDescriptor(c->cd);
    bd_cuda_scratch_free(c->tmp);
    bd_free(c);
}

extern "C" void bd_cuda_conv_free(const bd_node *n, void *cache)
{
    (void)n;
    cache_free((conv_cache *)cache);
}

/* (N, C, spatial...) as cuDNN wants it: at least 2 spatial dims (a 1-D
 * convolution gets a leading unit dim), packed strides. */
static braid_status set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int64_t n, int64_t c,
                               const int64_t *sp, int nsp, bd_err *e)
{
    braid_status st = BRAID_OK;
    int nb = 2 + (nsp < 2 ? 2 : nsp), dims[5], strides[5];
    dims[0] = (int)n;
    dims[1] = (int)c;
    for (int i = 2; i < nb; i++) dims[i] = 1;
    for (int i = 0; i < nsp; i++) dims[nb - nsp + i] = (int)sp[i];
    int64_t s = 1;
    for (int i = nb - 1; i >= 0; i--) {
        if (s > INT_MAX) return BD_FAIL(e, BRAID_ERR_LIMIT, "a tensor of this convolution is beyond cuDNN's 2^31 elements");
        strides[i] = (int)s;
        s *= dims[i];
    }
    BD_CUDNN_TRY(e, cudnnSetTensorNdDescriptor(d, dt, nb, dims, strides));
    return BRAID_OK;
fail:
    return st;
}

static plane3 planes_of(const int64_t *sp, int nsp)
{
    int64_t v[3] = {1, 1, 1};
    for (int i = 0; i < nsp; i++) v[3 - nsp + i] = sp[i];
    return plane3{v[0], v[1], v[2]};
}

/* Sets the math type the chosen algorithm runs with and its exact workspace
 * under it; an algorithm that math type refuses (or that needs more than the
 * stream's workspace) falls back to the one that always runs. ws_of(algo,
 * &bytes) asks cuDNN for an algorithm's workspace. */
template <class Query>
static braid_status settle(const bd_cuda_kernel *k, conv_cache *c, int *algo, int fallback, cudnnMathType_t math,
                           Query ws_of)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    size_t need = 0;
    BD_CUDNN_TRY(e, cudnnSetConvolutionMathType(c->cd, math));
    if (ws_of(*algo, &need) != CUDNN_STATUS_SUCCESS || need > k->workspace_size) {
        *algo = fallback;
        BD_CUDNN_TRY(e, cudnnSetConvolutionMathType(c->cd, k->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
        BD_CUDNN_TRY(e, ws_of(*algo, &need));
    }
    c->ws_need = need;
    return BRAID_OK;
fail:
    return st;
}

static const char *math_name(int m)
{
    switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op with conversion";
    case CUDNN_FMA_MATH: return "FMA";
    default: return "unknown";
    }
}

/* The convolution itself with algorithm algo (forward, or backward data for
 * ConvTranspose) from x into y, with ws bytes of the stream's workspace. */
static cudnnStatus_t conv_call(const bd_cuda_kernel *k, const conv_cache *c, int tr, int algo, size_t ws,
                               const void *x, const void *w, void *y)
{
    const float one = 1.0f, zero = 0.0f;
    if (!tr)
        return cudnnConvolutionForward(k->cudnn, &one, c->xd, x, c->wd, w, c->cd, (cudnnConvolutionFwdAlgo_t)algo,
                                       k->workspace, ws, &zero, c->yd, y);
    return cudnnConvolutionBackwardData(k->cudnn, &one, c->wd, w, c->xd, x, c->cd,
                                        (cudnnConvolutionBwdDataAlgo_t)algo, k->workspace, ws, &zero, c->yd, y);
}

static cudnnStatus_t ws_of(const bd_cuda_kernel *k, const conv_cache *c, int tr, int algo, size_t *need)
{
    if (!tr)
        return cudnnGetConvolutionForwardWorkspaceSize(k->cudnn, c->xd, c->wd, c->cd, c->yd,
                                                       (cudnnConvolutionFwdAlgo_t)algo, need);
    return cudnnGetConvolutionBackwardDataWorkspaceSize(k->cudnn, c->wd, c->xd, c->cd, c->yd,
                                                        (cudnnConvolutionBwdDataAlgo_t)algo, need);
}

/* The timing source of bd_algo_choose: the candidate runs once to warm up,
 * then TIMING_REPS times between two events on the node's stream, on the
 * node's own tensors (the output is written again by the real run). */
struct time_ctx {
    const bd_cuda_kernel *k;
    conv_cache *c;
    int tr;
    const void *x, *w;
    void *y;
    cudaEvent_t a, b;
    cudaError_t fault; /* an asynchronous fault a timed run raised (not a refusal) */
    int fault_algo;
};

static int time_candidate(void *vctx, const bd_algo_cand *cand, double *ms)
{
    time_ctx *t = (time_ctx *)vctx;
    size_t need = 0;
    if (cudnnSetConvolutionMathType(t->c->cd, (cudnnMathType_t)cand->math) != CUDNN_STATUS_SUCCESS) return 1;
    if (ws_of(t->k, t->c, t->tr, cand->algo, &need) != CUDNN_STATUS_SUCCESS || need > t->k->workspace_size) return 1;
    for (int r = 0; r <= TIMING_REPS; r++) {
        if (r == 1 && cudaEventRecord(t->a, t->k->stream) != cudaSuccess) return cudaGetLastError(), 1;
        if (conv_call(t->k, t->c, t->tr, cand->algo, need, t->x, t->w, t->y) != CUDNN_STATUS_SUCCESS) {
            cudaGetLastError();
            return 1;
        }
    }
    float f = 0;
    cudaError_t ce = cudaEventRecord(t->b, t->k->stream);
    if (ce == cudaSuccess) ce = cudaEventSynchronize(t->b);
    if (ce == cudaSuccess) ce = cudaEventElapsedTime(&f, t->a, t->b);
    if (ce != cudaSuccess) {
        if (bd_cu_sticky(ce) && !t->fault) t->fault = ce, t->fault_algo = cand->algo; /* not a refusal */
        cudaGetLastError();
        return 1;
    }
    *ms = (double)f / TIMING_REPS;
    return 0;
}

/* The algorithm of c: the process-wide cache's, else chosen now (timed when
 * k->tune, outside a capture), then settled (its exact workspace under its
 * math type). Every fallback taken is a note. key: the geometry as cuDNN
 * sees it. */
static braid_status choose_algo(const bd_cuda_kernel *k, conv_cache *c, int tr, bd_algo_key *key)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    int *algo = tr ? &c->bwd_algo : &c->fwd_algo;
    int fallback = tr ? (int)CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 : (int)CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    bd_algo_pick pick;
    time_ctx t = {k, c, tr, NULL, NULL, NULL, NULL, NULL, cudaSuccess, 0};
    key->v[0] = tr ? 2 : 1;
    key->v[1] = k->device;
    key->v[2] = k->allow_tf32;
    key->v[3] = (int64_t)k->workspace_size;
    key->v[4] = k->tune;
    if (!bd_algo_cache_get(key, &pick)) {
        /* cuDNN lists one entry per (algorithm, math type): room for both of each. */
        enum { MAX_FWD = 2 * CUDNN_CONVOLUTION_FWD_ALGO_COUNT, MAX_BWD = 2 * CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT };
        bd_algo_cand cands[MAX_FWD + MAX_BWD];
        int got = 0, n = 0;
        if (!tr) {
            cudnnConvolutionFwdAlgoPerf_t perf[MAX_FWD];
            BD_CUDNN_TRY(e, cudnnGetConvolutionForwardAlgorithm_v7(k->cudnn, c->xd, c->wd, c->cd, c->yd, MAX_FWD, &got,
                                                                   perf));
            for (int i = 0; i < got; i++)
                if (perf[i].status == CUDNN_STATUS_SUCCESS)
                    cands[n++] = bd_algo_cand{(int)perf[i].algo, (int)perf[i].mathType, perf[i].memory};
        } else {
            cudnnConvolutionBwdDataAlgoPerf_t perf[MAX_BWD];
            BD_CUDNN_TRY(e, cudnnGetConvolutionBackwardDataAlgorithm_v7(k->cudnn, c->wd, c->xd, c->cd, c->yd, MAX_BWD,
                                                                        &got, perf));
            for (int i = 0; i < got; i++)
                if (perf[i].status == CUDNN_STATUS_SUCCESS)
                    cands[n++] = bd_algo_cand{(int)perf[i].algo, (int)perf[i].mathType, perf[i].memory};
        }
        cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(k->stream, &cap) != cudaSuccess) cudaGetLastError();
        int timing = k->tune && cap == cudaStreamCaptureStatusNone;
        if (timing) {
            t.x = c->mode == CONV_PADDED ? c->tmp : k->in[0].data;
            t.w = k->in[1].data;
            t.y = c->mode == CONVT_CROPPED ? c->tmp : k->out[0].data;
            if (cudaEventCreate(&t.a) != cudaSuccess || cudaEventCreate(&t.b) != cudaSuccess) {
                cudaGetLastError();
                timing = 0;
            }
        }
        bd_algo_choose(cands, n, k->workspace_size, k->allow_tf32, timing ? time_candidate : NULL, &t, fallback,
                       &pick);
        if (t.a) cudaEventDestroy(t.a);
        if (t.b) cudaEventDestroy(t.b);
        t.a = t.b = NULL;
        if (t.fault) { /* a fault, not a refusal: the context is gone, and this node's timing made it */
            char call[96];
            snprintf(call, sizeof call, "%s (timing candidate algorithm %d)",
                     tr ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward", t.fault_algo);
            return bd_cu_fail_cuda(e, call, t.fault, __FILE__, __LINE__);
        }
        if (pick.fallback)
            bd_cu_note(k, "no cuDNN algorithm fits the %zu MiB workspace under the math rule (TF32 %s): runs "
                       "algorithm %d, which needs none", k->workspace_size >> 20, k->allow_tf32 ? "on" : "off",
                       fallback);
        else if (timing && !pick.tuned)
            bd_cu_note(k, "cuDNN refused every one of the %d candidate algorithms it was timed with: runs its "
                       "heuristic's first choice (algorithm %d) untimed", pick.timed, pick.algo);
    }
    {
        int chosen = pick.algo;
        *algo = chosen;
        BD_TRY(settle(k, c, algo, fallback, (cudnnMathType_t)pick.math,
                      [&](int a, size_t *need) { return ws_of(k, c, tr, a, need); }));
        if (*algo != chosen) {
            bd_cu_note(k, "cuDNN refused algorithm %d under %s math within the %zu MiB workspace: runs algorithm "
                       "%d instead", chosen, math_name(pick.math), k->workspace_size >> 20, *algo);
            pick.algo = *algo;
            pick.math = k->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
            pick.tuned = 0;
        }
        pick.ws = c->ws_need;
        bd_algo_cache_put(key, &pick);
    }
    return BRAID_OK;
fail:
    if (t.a) cudaEventDestroy(t.a);
    if (t.b) cudaEventDestroy(t.b);
    return st;
}

static braid_status setup(const bd_cuda_kernel *k, conv_cache **out)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    int tr = k->node->op == BD_OP_ConvTranspose;
    const bd_tensor *b = k->n_in > 2 ? &k->in[2] : NULL;
    conv_cache *c = (conv_cache *)bd_calloc(1, sizeof *c);
    BD_CHECK_ALLOC(e, c);
    BD_TRY(bd_conv_geometry(k->node, &k->in[0], &k->in[1], b, &c->g, e));
    BD_TRY(bd_cudnn_conv_limits(k->node, &k->in[0], &k->in[1], &k->out[0], e)); /* before any cuDNN call */
    {
        const char *f = getenv(TEST_FAULT_ENV);
        c->inject = f && !strcmp(f, k->node->name);
    }
    {
        const bd_conv_geom &g = c->g;
        /* The tensors' type; the convolution's compute type stays float32 (the
         * CUDNN_DATA_FLOAT of the convolution descriptor): cuDNN's pseudo-half
         * configuration for float16 and bfloat16. */
        cudnnDataType_t dt = cudnn_type(k->in[0].dtype);
        int nsp = g.nsp, nsp2 = nsp < 2 ? 2 : nsp, nb = 2 + nsp2;
        int sym = 1, nonneg = 1;
        for (int i = 0; i < nsp; i++) {
            sym &= g.pb[i] == g.pe[i];
            nonneg &= g.pb[i] >= 0;
        }
        for (int i = 0; i < nsp; i++)
            if (g.x[i] > INT_MAX || g.y[i] > INT_MAX) {
                st = BD_FAIL(e, BRAID_ERR_LIMIT, "a spatial dim of this convolution is beyond cuDNN's int range");
                goto fail;
            }
        BD_CUDNN_TRY(e, cudnnCreateTensorDescriptor(&c->xd));
        BD_CUDNN_TRY(e, cudnnCreateTensorDescriptor(&c->yd));
        BD_CUDNN_TRY(e, cudnnCreateTensorDescriptor(&c->bd));
        BD_CUDNN_TRY(e, cudnnCreateFilterDescriptor(&c->wd));
        BD_CUDNN_TRY(e, cudnnCreateConvolutionDescriptor(&c->cd));

        int wdims[5], pads[3], strides[3], dil[3];
        const bd_tensor *w = &k->in[1];
        wdims[0] = (int)w->dims[0];
        wdims[1] = (int)w->dims[1];
        for (int i = 0; i < nsp2; i++) {
            int j = i - (nsp2 - nsp); /* spatial dim of the model, or < 0 for the added unit dim */
            wdims[2 + i] = j < 0 ? 1 : (int)g.k[j];
            strides[i] = j < 0 ? 1 : (int)g.s[j];
            dil[i] = j < 0 ? 1 : (int)g.d[j];
            pads[i] = 0;
        }
        BD_CUDNN_TRY(e, cudnnSetFilterNdDescriptor(c->wd, dt, CUDNN_TENSOR_NCHW, nb, wdims));

        /* The tensors cuDNN sees: the image side may be a padded or uncropped scratch. */
        int64_t x_sp[3], y_sp[3];
        for (int i = 0; i < nsp; i++) x_sp[i] = g.x[i], y_sp[i] = g.y[i];
        if (!tr) {
            c->mode = sym ? CONV_DIRECT : CONV_PADDED;
            for (int i = 0; i < nsp; i++) {
                if (sym) pads[nsp2 - nsp + i] = (int)g.pb[i];
                else x_sp[i] = g.x[i] + g.pb[i] + g.pe[i], c->off[3 - nsp + i] = g.pb[i];
            }
            if (c->mode == CONV_PADDED) {
                c->img = planes_of(g.x, nsp);
                c->tmp_img = planes_of(x_sp, nsp);
                c->planes = g.n * g.c_in;
            }
        } else {
            c->mode = sym && nonneg ? CONVT_DIRECT : CONVT_CROPPED;
            for (int i = 0; i < nsp; i++) {
                if (c->mode == CONVT_DIRECT) {
                    pads[nsp2 - nsp + i] = (int)g.pb[i];
                } else {
                    y_sp[i] = g.s[i] * (g.x[i] - 1) + (g.k[i] - 1) * g.d[i] + 1; /* uncropped, no output_padding */
                    c->off[3 - nsp + i] = -g.pb[i];
                }
            }
        }
        BD_CUDNN_TRY(e, cudnnSetConvolutionNdDescriptor(c->cd, nsp2, pads, strides, dil, CUDNN_CROSS_CORRELATION,
                                                        CUDNN_DATA_FLOAT));
        BD_CUDNN_TRY(e, cudnnSetConvolutionGroupCount(c->cd, (int)g.group));
        BD_CUDNN_TRY(e, cudnnSetConvolutionMathType(c->cd, k->allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
        if (!tr) {
            BD_TRY(set_tensor(c->xd, dt, g.n, g.c_in, x_sp, nsp, e));
            BD_TRY(set_tensor(c->yd, dt, g.n, g.c_out, y_sp, nsp, e));
        } else {
            /* Backward data of the forward conv y -> x: dy is x, dx is y. */
            BD_TRY(set_tensor(c->xd, dt, g.n, g.c_in, x_sp, nsp, e));
            BD_TRY(set_tensor(c->yd, dt, g.n, g.c_out, y_sp, nsp, e));
        }
        if (c->mode == CONVT_DIRECT) {
            /* cuDNN derives the forward output (our x) from y; it must agree. */
            int od[5];
            BD_CUDNN_TRY(e, cudnnGetConvolutionNdForwardOutputDim(c->cd, c->yd, c->wd, nb, od));
            int agree = od[1] == (int)g.c_in;
            for (int i = 0; i < nsp; i++) agree &= od[nb - nsp + i] == (int)g.x[i];
            if (!agree) { /* output_padding beyond what cuDNN infers: crop instead */
                c->mode = CONVT_CROPPED;
                for (int i = 0; i < nsp2; i++) pads[i] = 0;
                for (int i = 0; i < nsp; i++) {
                    y_sp[i] = g.s[i] * (g.x[i] - 1) + (g.k[i] - 1) * g.d[i] + 1;
                    c->off[3 - nsp + i] = -g.pb[i];
                }
                BD_CUDNN_TRY(e, cudnnSetConvolutionNdDescriptor(c->cd, nsp2, pads, strides, dil,
                                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
                BD_TRY(set_tensor(c->yd, dt, g.n, g.c_out, y_sp, nsp, e));
            }
        }
        if (c->mode == CONVT_CROPPED) {
            c->img = planes_of(y_sp, nsp);   /* source of the crop: the uncropped output */
            c->tmp_img = planes_of(g.y, nsp); /* destination: the real output */
            c->planes = g.n * g.c_out;
        }
        if (!tr) {
            int od[5];
            BD_CUDNN_TRY(e, cudnnGetConvolutionNdForwardOutputDim(c->cd, c->xd, c->wd, nb, od));
            for (int i = 0; i < nsp; i++)
                if (od[nb - nsp + i] != (int)g.y[i]) {
                    st = BD_FAIL(e, BRAID_ERR_INTERNAL, "cuDNN computes output dim %d = %d where braid "
                                 "computes %lld", i, od[nb - nsp + i], (long long)g.y[i]);
                    goto fail;
                }
        }
        /* Bias: (1, C_out, 1, ...) */
        {
            int bdims[5], bstr[5];
            for (int i = 0; i < nb; i++) bdims[i] = 1;
            bdims[1] = (int)g.c_out;
            for (int i = 0; i < nb; i++) bstr[i] = i <= 1 ? (i == 0 ? (int)g.c_out : 1) : 1;
            BD_CUDNN_TRY(e, cudnnSetTensorNdDescriptor(c->bd, dt, nb, bdims, bstr));
        }
        /* Scratch for padding or cropping. */
        if (c->mode == CONV_PADDED || c->mode == CONVT_CROPPED) {
            plane3 t = c->mode == CONV_PADDED ? c->tmp_img : c->img;
            c->tmp_bytes = (size_t)(c->planes * t.d * t.h * t.w) * el_size(k->in[0].dtype);
            cudaError_t ce = bd_cuda_scratch_alloc(&c->tmp, c->tmp_bytes);
            if (ce != cudaSuccess) {
                st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "cannot allocate %.1f MiB of scratch for the "
                             "convolution's padding: %s", (double)c->tmp_bytes / 1048576.0, cudaGetErrorString(ce));
                goto fail;
            }
        }
        /* The algorithm: keyed by the geometry cuDNN sees. */
        bd_algo_key key;
        memset(&key, 0, sizeof key);
        int64_t *kv = key.v + 5;
        *kv++ = c->mode;
        *kv++ = k->in[0].dtype;
        *kv++ = g.n, *kv++ = g.c_in, *kv++ = g.c_out, *kv++ = g.group, *kv++ = nsp;
        for (int i = 0; i < nsp2; i++) *kv++ = pads[i], *kv++ = strides[i], *kv++ = dil[i], *kv++ = wdims[2 + i];
        for (int i = 0; i < nsp; i++) *kv++ = x_sp[i], *kv++ = y_sp[i];
        BD_TRY(choose_algo(k, c, tr, &key));
    }
    *out = c;
    return BRAID_OK;
fail:
    cache_free(c);
    return st;
}

/* ---- the launcher ------------------------------------------------------------------- */

/* The padding or crop copy of c (shift_copy) from src into dst, in dtype dt. */
static void launch_shift(int dt, const conv_cache *c, const void *src, void *dst, plane3 s, plane3 t, const void *bias,
                         int64_t ch, cudaStream_t stream)
{
    int64_t n = c->planes * t.d * t.h * t.w;
    el_dispatch(dt, [&](auto e) {
        typedef decltype(e) E;
        typedef typename E::T T;
        shift_copy<E><<<bd_cu_grid(n), BD_CU_BLOCK, 0, stream>>>((const T *)src, (T *)dst, c->planes, s, t, c->off[0],
                                                                 c->off[1], c->off[2], (const T *)bias, ch);
    });
}

extern "C" braid_status bd_cuda_conv(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    bd_err *e = k->err;
    int dt = k->in[0].dtype;
    if (k->node->op != BD_OP_Conv && k->node->op != BD_OP_ConvTranspose)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the conv family", k->node->op_type);
    if (dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_FLOAT16 && dt != BRAID_DTYPE_BFLOAT16)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "the CUDA %s runs float, float16 and bfloat16 tensors, not %s",
                       k->node->op_type, bd_dtype_name(dt));
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    if (bd_numel(&k->in[0]) == 0 || bd_numel(&k->in[1]) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "the CUDA %s does not run empty inputs", k->node->op_type);
    conv_cache *c = (conv_cache *)*k->cache;
    if (!c) {
        BD_TRY(setup(k, &c));
        *k->cache = c;
    }
    {
        /* alpha and beta are float for float, float16 and bfloat16 data alike. */
        const float one = 1.0f, zero = 0.0f;
        const void *x = k->in[0].data, *w = k->in[1].data;
        const void *bias = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
        void *y = k->out[0].data;
        const plane3 &a = c->img, &t = c->tmp_img;
        switch (c->mode) {
        case CONV_DIRECT:
        case CONV_PADDED: {
            const void *src = x;
            if (c->mode == CONV_PADDED) {
                launch_shift(dt, c, x, c->tmp, a, t, NULL, 1, k->stream);
                BD_CU_CHECK_LAUNCH(k, "the convolution's padding kernel");
                src = c->tmp;
            }
            if (c->inject) src = test_fault_address;
            BD_CUDNN_TRY(e, cudnnConvolutionForward(k->cudnn, &one, c->xd, src, c->wd, w, c->cd,
                                                    (cudnnConvolutionFwdAlgo_t)c->fwd_algo, k->workspace,
                                                    c->ws_need, &zero, c->yd, y));
            const bd_conv_params *pa = (const bd_conv_params *)k->node->params;
            const void *z = pa->res != BD_RES_NONE && k->n_in > 3 ? k->in[3].data : NULL;
            if (bias || z || pa->act != BD_ACT_NONE) {
                int64_t n = bd_numel(&k->out[0]);
                el_dispatch(dt, [&](auto el) {
                    typedef decltype(el) E;
                    typedef typename E::T T;
                    conv_epilogue<E><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
                        (T *)y, n, n / (c->g.n * c->g.c_out), c->g.c_out, (const T *)bias, (const T *)z, pa->act,
                        pa->act_a, pa->act_b, pa->res);
                });
                BD_CU_CHECK_LAUNCH(k, "the convolution's epilogue (bias, residual, activation)");
            }
            break;
        }
        case CONVT_DIRECT:
            if (c->inject) x = test_fault_address;
            BD_CUDNN_TRY(e, cudnnConvolutionBackwardData(k->cudnn, &one, c->wd, w, c->xd, x, c->cd,
                                                         (cudnnConvolutionBwdDataAlgo_t)c->bwd_algo, k->workspace,
                                                         c->ws_need, &zero, c->yd, y));
            if (bias) BD_CUDNN_TRY(e, cudnnAddTensor(k->cudnn, &one, c->bd, bias, &one, c->yd, y));
            break;
        case CONVT_CROPPED: {
            BD_CUDNN_TRY(e, cudnnConvolutionBackwardData(k->cudnn, &one, c->wd, w, c->xd, x, c->cd,
                                                         (cudnnConvolutionBwdDataAlgo_t)c->bwd_algo, k->workspace,
                                                         c->ws_need, &zero, c->yd, c->tmp));
            launch_shift(dt, c, c->tmp, y, a, t, bias, c->g.c_out, k->stream);
            BD_CU_CHECK_LAUNCH(k, "the transposed convolution's crop kernel");
            break;
        }
        }
    }
    return BRAID_OK;
fail:
    return st;
}
