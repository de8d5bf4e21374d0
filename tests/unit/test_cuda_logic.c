/* test_cuda_logic.c: what the CUDA backend decides without a GPU, checked on
 * the CPU (src/backend/cuda/common/, src/runtime/notes.c) and the API around
 * it: the notes list (dedup, overflow), fault texts (the BRAID_CUDA_SYNC
 * message of the issue, word for word), the cuDNN algorithm choice with a
 * fake timing source, the process-wide choice cache, cuDNN's size limits,
 * the version line, the I/O mode switch, cuBLAS's workspace size, a plan's
 * traffic, the workspace option's validation and what a CPU session reports
 * (no device line, no notes, no graph). */
#include <limits.h>
#include <stdlib.h>

#include "check.h"
#include "optest.h"

#include "api_internal.h"
#include "backend/cuda/common/algo.h"
#include "backend/cuda/common/device_info.h"
#include "backend/cuda/common/faults.h"
#include "backend/cuda/common/host_nodes.h"
#include "backend/cuda/common/io.h"
#include "backend/cuda/common/limits.h"
#include "runtime/notes.h"

/* ---- notes --------------------------------------------------------------------------- */

static void test_notes(void)
{
    bd_notes ns;
    bd_notes_init(&ns);
    CHECK_EQ_INT(bd_notes_count(&ns), 0);
    CHECK(!strcmp(bd_notes_get(&ns, 0), ""));
    CHECK_EQ_INT(bd_notes_add(&ns, "node '%s' (%s): refused", "c1", "Conv"), 1);
    CHECK_EQ_INT(bd_notes_add(&ns, "node '%s' (%s): refused", "c1", "Conv"), 0); /* the same text: kept once */
    CHECK_EQ_INT(bd_notes_add(&ns, "second"), 1);
    CHECK_EQ_INT(bd_notes_count(&ns), 2);
    CHECK(!strcmp(bd_notes_get(&ns, 0), "node 'c1' (Conv): refused"));
    CHECK(!strcmp(bd_notes_get(&ns, 1), "second"));
    CHECK(!strcmp(bd_notes_get(&ns, 2), ""));
    CHECK(!strcmp(bd_notes_get(&ns, -1), ""));
    /* Fill up: BD_NOTES_MAX - 1 notes are kept, the last slot says more were dropped. */
    for (int i = 0; i < BD_NOTES_MAX + 5; i++) bd_notes_add(&ns, "note %d", i);
    CHECK_EQ_INT(bd_notes_count(&ns), BD_NOTES_MAX);
    CHECK(!strcmp(bd_notes_get(&ns, BD_NOTES_MAX - 2), "note 28")); /* 2 + 29 notes = 31 kept */
    CHECK_CONTAINS(bd_notes_get(&ns, BD_NOTES_MAX - 1), "the rest are dropped");
    CHECK_EQ_INT(ns.dropped, BD_NOTES_MAX + 5 - (BD_NOTES_MAX - 3));
    /* A long note is cut, not overrun. */
    char big[2000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    bd_notes fresh;
    bd_notes_init(&fresh);
    CHECK_EQ_INT(bd_notes_add(&fresh, "%s", big), 1);
    CHECK_EQ_INT(strlen(bd_notes_get(&fresh, 0)), BD_NOTE_LEN - 1);
    CHECK_EQ_INT(bd_notes_add(NULL, "x"), 0);
    CHECK_EQ_INT(bd_notes_count(NULL), 0);
    bd_notes_destroy(&fresh);
    bd_notes_destroy(&ns);
}

/* ---- fault texts ---------------------------------------------------------------------- */

static void test_fault_texts(void)
{
    char b[600], pre[300];
    CHECK(!strcmp(bd_cu_call_name("cudnnConvolutionForward(k->cudnn, &one, c->xd)", b, sizeof b),
                  "cudnnConvolutionForward"));
    CHECK(!strcmp(bd_cu_call_name("  cudaMemcpyAsync (a, b, n, kind, s)", b, sizeof b), "cudaMemcpyAsync"));
    CHECK(!strcmp(bd_cu_call_name("the Relu kernel", b, sizeof b), "the Relu kernel")); /* not a call: whole */
    CHECK(!strcmp(bd_cu_call_name("cudaGetLastError()", b, 5), "cuda")); /* cut to the buffer */
    CHECK(!strcmp(bd_cu_call_name(NULL, b, sizeof b), ""));

    /* The message the issue asks for, assembled as the backend does under BRAID_CUDA_SYNC=1. */
    bd_cu_node_prefix(pre, sizeof pre, "conv_3", "Conv", 2);
    bd_cu_call_text(b, sizeof b, "cudnnConvolutionForward(k->cudnn, &one, c->xd, src)",
                    "an illegal memory access was encountered");
    char whole[900];
    snprintf(whole, sizeof whole, "%s%s", pre, b);
    CHECK(!strcmp(whole, "node 'conv_3' (Conv) on stream 2: cudnnConvolutionForward: an illegal memory access "
                         "was encountered"));

    /* An earlier error never blames the node being enqueued, and names the switch. */
    bd_cu_earlier_prefix(pre, sizeof pre, "relu_1", "Relu", 0);
    CHECK_CONTAINS(pre, "from earlier work");
    CHECK_CONTAINS(pre, "node 'relu_1' (Relu) on stream 0");
    CHECK_CONTAINS(pre, "did not necessarily cause it");
    CHECK_CONTAINS(pre, "BRAID_CUDA_SYNC=1");

    /* The end of a run without the switch: says so and names it. */
    bd_cu_async_text(b, sizeof b, "cudaStreamSynchronize", "an illegal memory access was encountered", 1);
    CHECK_CONTAINS(b, "asynchronous CUDA error (cudaStreamSynchronize: an illegal memory access was encountered)");
    CHECK_CONTAINS(b, "rerun with BRAID_CUDA_SYNC=1 to name the node");
    CHECK_CONTAINS(b, "unusable");
    bd_cu_async_text(b, sizeof b, "cudaStreamSynchronize", "unspecified launch failure", 0);
    CHECK(!strstr(b, "unusable"));

    CHECK_EQ_INT(bd_cuda_sync_enabled("1"), 1);
    CHECK_EQ_INT(bd_cuda_sync_enabled("ON"), 1);
    CHECK_EQ_INT(bd_cuda_sync_enabled("0"), 0);
    CHECK_EQ_INT(bd_cuda_sync_enabled(""), 0);
    CHECK_EQ_INT(bd_cuda_sync_enabled(NULL), 0);
}

/* ---- the algorithm choice with a fake timing source --------------------------------------- */

typedef struct fake_timer {
    double ms[16];      /* per algorithm */
    int refuse[16];     /* per algorithm: 1 = the library refuses it */
    int calls;
    int seen_math[16];  /* the math type each algorithm was timed with */
} fake_timer;

static int fake_time(void *ctx, const bd_algo_cand *c, double *ms)
{
    fake_timer *t = ctx;
    t->calls++;
    t->seen_math[c->algo] = c->math;
    if (t->refuse[c->algo]) return 1;
    *ms = t->ms[c->algo];
    return 0;
}

static void test_algo_choice(void)
{
    const size_t MB = 1 << 20;
    /* cuDNN's heuristic order: algo 6 first, then 1, 2 (a TF32 entry), 5, 0, 7. */
    bd_algo_cand c[] = {
        {6, BD_MATH_DEFAULT, 8 * MB}, {1, BD_MATH_FMA, 0},          {2, BD_MATH_TENSOR_OP, 1 * MB},
        {5, BD_MATH_DEFAULT, 900 * MB}, {0, BD_MATH_DEFAULT, 0}, {7, BD_MATH_ALLOW_CONVERSION, 0},
        {1, BD_MATH_DEFAULT, 0}, /* algo 1 again under DEFAULT: the same run as FMA when TF32 is off */
    };
    int n = (int)(sizeof c / sizeof *c);
    bd_algo_pick p;
    fake_timer t = {.ms = {[6] = 3.0, [1] = 2.0, [2] = 0.5, [5] = 0.1, [0] = 2.0, [7] = 0.01}};

    /* TF32 off, 64 MiB: eligible 6, 1, 0 (2 is TF32, 5 over budget, 7 fp16); 1 and 0 tie at
     * 2.0 ms: the heuristic's order breaks the tie. All timed with FMA math. */
    bd_algo_choose(c, n, 64 * MB, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.algo, 1);
    CHECK_EQ_INT(p.math, BD_MATH_FMA);
    CHECK_EQ_INT(p.tuned, 1);
    CHECK_NEAR(p.ms, 2.0, 0, 0);
    CHECK_EQ_INT(p.eligible, 3);
    CHECK_EQ_INT(p.timed, 3);
    CHECK_EQ_INT(t.calls, 3);
    CHECK_EQ_INT(t.seen_math[6], BD_MATH_FMA); /* a DEFAULT entry runs under FMA with TF32 off */
    CHECK_EQ_INT(p.fallback, 0);

    /* TF32 on: the tensor-op entry is eligible and fastest; it keeps its math type. */
    t.calls = 0;
    bd_algo_choose(c, n, 64 * MB, 1, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.algo, 2);
    CHECK_EQ_INT(p.math, BD_MATH_TENSOR_OP);
    CHECK_EQ_INT(p.ws, 1 * MB);
    CHECK_EQ_INT(p.eligible, 5); /* 6, 1 (FMA), 2, 0, 1 (DEFAULT): 7 never, 5 over budget */

    /* A bigger budget lets algo 5 in, and it wins. */
    bd_algo_choose(c, n, 1024 * MB, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.algo, 5);
    CHECK_EQ_INT(p.ws, 900 * MB);

    /* A refused candidate is skipped. */
    t.refuse[5] = 1;
    bd_algo_choose(c, n, 1024 * MB, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.algo, 1);
    CHECK_EQ_INT(p.refused, 1);

    /* Every candidate refused: the heuristic's first eligible one, not tuned. */
    for (int a = 0; a < 16; a++) t.refuse[a] = 1;
    bd_algo_choose(c, n, 64 * MB, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.algo, 6);
    CHECK_EQ_INT(p.tuned, 0);
    CHECK_EQ_INT(p.refused, 3);

    /* No timer (tuning off): the heuristic's first eligible, nothing timed. */
    bd_algo_choose(c, n, 64 * MB, 0, NULL, NULL, 1, &p);
    CHECK_EQ_INT(p.algo, 6);
    CHECK_EQ_INT(p.timed, 0);
    CHECK_EQ_INT(p.tuned, 0);

    /* A zero budget: only algorithms that need none. */
    memset(t.refuse, 0, sizeof t.refuse);
    bd_algo_choose(c, n, 0, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.eligible, 2); /* 1 and 0 */
    CHECK_EQ_INT(p.ws, 0);

    /* Nothing eligible: the fallback, with no workspace. */
    bd_algo_cand only[] = {{7, BD_MATH_ALLOW_CONVERSION, 0}, {3, BD_MATH_TENSOR_OP, 0}};
    bd_algo_choose(only, 2, 64 * MB, 0, fake_time, &t, 1, &p);
    CHECK_EQ_INT(p.fallback, 1);
    CHECK_EQ_INT(p.algo, 1);
    CHECK_EQ_INT(p.math, BD_MATH_FMA);
    CHECK_EQ_INT(p.ws, 0);
    bd_algo_choose(NULL, 0, 64 * MB, 1, fake_time, &t, 0, &p);
    CHECK_EQ_INT(p.fallback, 1);
    CHECK_EQ_INT(p.math, BD_MATH_DEFAULT);

    /* At most BD_ALGO_MAX_TIMED are timed. */
    bd_algo_cand many[12];
    for (int i = 0; i < 12; i++) many[i] = (bd_algo_cand){i, BD_MATH_FMA, 0};
    fake_timer t2 = {.calls = 0};
    for (int i = 0; i < 12; i++) t2.ms[i] = 12 - i; /* the last is fastest but never timed */
    bd_algo_choose(many, 12, 0, 0, fake_time, &t2, 1, &p);
    CHECK_EQ_INT(t2.calls, BD_ALGO_MAX_TIMED);
    CHECK_EQ_INT(p.algo, BD_ALGO_MAX_TIMED - 1);
    CHECK_EQ_INT(p.eligible, 12);
}

static void test_algo_cache(void)
{
    bd_algo_cache_clear();
    bd_algo_key k1, k2;
    memset(&k1, 0, sizeof k1);
    memset(&k2, 0, sizeof k2);
    k1.v[0] = 1, k1.v[1] = 64;
    k2.v[0] = 1, k2.v[1] = 65;
    bd_algo_pick p = {.algo = 4, .math = BD_MATH_FMA, .ws = 123, .tuned = 1}, got;
    CHECK_EQ_INT(bd_algo_cache_get(&k1, &got), 0);
    bd_algo_cache_put(&k1, &p);
    memset(&got, 0, sizeof got);
    CHECK_EQ_INT(bd_algo_cache_get(&k1, &got), 1);
    CHECK_EQ_INT(got.algo, 4);
    CHECK_EQ_INT(got.ws, 123);
    CHECK_EQ_INT(bd_algo_cache_get(&k2, &got), 0);
    p.algo = 5;
    bd_algo_cache_put(&k1, &p); /* the same key: replaced, not added */
    long hits, misses;
    int entries;
    bd_algo_cache_stats(&hits, &misses, &entries);
    CHECK_EQ_INT(entries, 1);
    CHECK_EQ_INT(hits, 1);
    CHECK_EQ_INT(misses, 2);
    CHECK_EQ_INT(bd_algo_cache_get(&k1, &got), 1);
    CHECK_EQ_INT(got.algo, 5);
    /* Full: the oldest entry goes. */
    for (int i = 0; i < 600; i++) {
        bd_algo_key k;
        memset(&k, 0, sizeof k);
        k.v[0] = 2, k.v[1] = i;
        bd_algo_cache_put(&k, &p);
    }
    bd_algo_cache_stats(NULL, NULL, &entries);
    CHECK_EQ_INT(entries, 512);
    CHECK_EQ_INT(bd_algo_cache_get(&k1, &got), 0);
    bd_algo_key last;
    memset(&last, 0, sizeof last);
    last.v[0] = 2, last.v[1] = 599;
    CHECK_EQ_INT(bd_algo_cache_get(&last, &got), 1);
    bd_algo_cache_clear();
    bd_algo_cache_stats(&hits, NULL, &entries);
    CHECK_EQ_INT(entries, 0);
    CHECK_EQ_INT(hits, 0);
}

/* ---- cuDNN's limits --------------------------------------------------------------------- */

static void test_limits(void)
{
    bd_err e = {0};
    int64_t ok[4] = {1, 1, 46340, 46341};         /* 2147441940 elements: under 2^31 - 1 */
    int64_t edge[2] = {1, INT_MAX};               /* exactly 2^31 - 1 */
    int64_t over[4] = {2, 1, 32768, 32768};       /* 2^31 */
    int64_t dim[2] = {1, (int64_t)INT_MAX + 1};   /* a dim of 2^31 */
    int64_t wrap[4] = {1LL << 40, 1LL << 40, 1, 1}; /* would overflow int64 if multiplied */
    CHECK_EQ_INT(bd_cudnn_check_tensor("x", 4, ok, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_check_tensor("x", 2, edge, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_check_tensor("the input", 4, over, &e), BRAID_ERR_LIMIT);
    CHECK_CONTAINS(e.msg, "the input (2x1x32768x32768) has more than the 2147483647 (2^31 - 1) elements");
    CHECK_EQ_INT(bd_cudnn_check_tensor("w", 2, dim, &e), BRAID_ERR_LIMIT);
    CHECK_CONTAINS(e.msg, "has a dim of 2147483648");
    CHECK_EQ_INT(bd_cudnn_check_tensor("w", 4, wrap, &e), BRAID_ERR_LIMIT);
    int64_t zero[4] = {0, 3, 1LL << 30, 1LL << 30}; /* empty: no elements */
    CHECK_EQ_INT(bd_cudnn_check_tensor("x", 4, zero, &e), BRAID_OK);

    /* A Conv: 1x1x46340x46340 input (2147395600 elements, fits); a 3x3 kernel. */
    int64_t xd[4] = {1, 1, 46340, 46340}, wd[4] = {1, 1, 3, 3};
    bd_tensor x = tensor(F32, 4, xd, NULL), w = tensor(F32, 4, wd, NULL);
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    int64_t sym[4] = {1, 1, 1, 1}, asym[4] = {1, 1, 2, 2};
    attr_ints(&t, "pads", 4, sym);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_conv_limits(&t.n, &x, &w, NULL, &e), BRAID_OK); /* symmetric: cuDNN pads itself */
    bd_free(t.n.params);
    /* Asymmetric pads: braid pads into a scratch of 46343x46343, past the limit. */
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    attr_ints(&t, "pads", 4, asym);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_conv_limits(&t.n, &x, &w, NULL, &e), BRAID_ERR_LIMIT);
    CHECK_CONTAINS(e.msg, "the zero-padded input (1x1x46343x46343)");
    bd_free(t.n.params);
    /* Many output channels: the output is past the limit though the input is not. */
    int64_t xs[4] = {1, 1, 1024, 1024}, ws[4] = {4096, 1, 1, 1};
    bd_tensor xs_t = tensor(F32, 4, xs, NULL), ws_t = tensor(F32, 4, ws, NULL);
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_conv_limits(&t.n, &xs_t, &ws_t, NULL, &e), BRAID_ERR_LIMIT);
    CHECK_CONTAINS(e.msg, "the output (1x4096x1024x1024)");
    bd_free(t.n.params);
    /* ConvTranspose: stride 2 from 1x1x32768x32768 (2^30) gives 65536x65536 (2^32). */
    int64_t xt[4] = {1, 1, 32768, 32768}, wt[4] = {1, 1, 2, 2}, s2[2] = {2, 2};
    bd_tensor xt_t = tensor(F32, 4, xt, NULL), wt_t = tensor(F32, 4, wt, NULL);
    tnode_init(&t, BD_OP_ConvTranspose, 17, 2, 1);
    attr_ints(&t, "strides", 2, s2);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_conv_limits(&t.n, &xt_t, &wt_t, NULL, &e), BRAID_ERR_LIMIT);
    CHECK_CONTAINS(e.msg, "the output (1x1x65536x65536)");
    bd_free(t.n.params);
    /* A small one passes. */
    int64_t sx[4] = {2, 3, 8, 8}, sw[4] = {4, 3, 3, 3};
    bd_tensor sx_t = tensor(F32, 4, sx, NULL), sw_t = tensor(F32, 4, sw, NULL);
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_cudnn_conv_limits(&t.n, &sx_t, &sw_t, NULL, &e), BRAID_OK);
    bd_free(t.n.params);
}

/* ---- versions, I/O modes, sizes ------------------------------------------------------------ */

static void test_versions(void)
{
    char b[600];
    bd_cuda_versions v = {.name = "NVIDIA H100 80GB HBM3", .cc_major = 9, .cc_minor = 0, .sms = 132,
                          .mem_bytes = (size_t)85 << 30, .mem_bw = 3.352e12, .driver = "580.65.06",
                          .driver_api = 13000, .runtime = 13000, .cudnn = 91900, .cudnn_built = 91900,
                          .cublas = {13, 1, 0}, .cublas_built = 130100, .io = "staged"};
    bd_cuda_version_line(b, sizeof b, &v);
    CHECK(!strcmp(b, "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 85.0 GiB, 3352 GB/s); driver 580.65.06 (CUDA 13.0); "
                     "runtime 13.0; cuDNN 9.19.0; cuBLAS 13.1.0; I/O staged"));
    if (strcmp(b, "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 85.0 GiB, 3352 GB/s); driver 580.65.06 (CUDA 13.0); "
                  "runtime 13.0; cuDNN 9.19.0; cuBLAS 13.1.0; I/O staged"))
        fprintf(stderr, "version line: %s\n", b);
    /* Libraries loaded at run time that differ from the headers say so. */
    v.cudnn = 91000;
    v.cublas[1] = 0;
    v.driver[0] = '\0';
    v.driver_api = 12080;
    v.mem_bw = 0;
    bd_cuda_version_line(b, sizeof b, &v);
    CHECK_CONTAINS(b, "cuDNN 9.10.0 (built with 9.19.0)");
    CHECK_CONTAINS(b, "cuBLAS 13.0.0 (built with 13.1.0)");
    CHECK_CONTAINS(b, "driver for CUDA 12.8");
    CHECK_CONTAINS(b, "85.0 GiB)");
    int a, c, d;
    bd_cudnn_version_split(91900, &a, &c, &d);
    CHECK(a == 9 && c == 19 && d == 0);
    bd_cudnn_version_split(8907, &a, &c, &d); /* cuDNN 8 counted 1000 per major */
    CHECK(a == 8 && c == 9 && d == 7);

    char r[64];
    CHECK_EQ_INT(bd_nvidia_driver_release("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 "
                                          "07:09:02 UTC 2025\nGCC version:  gcc version 12.2.0\n", r, sizeof r), 1);
    CHECK(!strcmp(r, "580.65.06"));
    CHECK_EQ_INT(bd_nvidia_driver_release("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  "
                                          "Release Build  (dvs-builder@U16)  Sat May 24 2025\n", r, sizeof r), 1);
    CHECK(!strcmp(r, "575.57.08"));
    CHECK_EQ_INT(bd_nvidia_driver_release("no module here", r, sizeof r), 0);
    CHECK(!strcmp(r, ""));
    CHECK_EQ_INT(bd_nvidia_driver_release(NULL, r, sizeof r), 0);
}

static void test_io_and_sizes(void)
{
    bd_err e = {0};
    int m = -1;
    CHECK_EQ_INT(bd_cuda_io_parse(NULL, &m, &e), BRAID_OK);
    CHECK_EQ_INT(m, BD_IO_DEFAULT);
    CHECK_EQ_INT(bd_cuda_io_parse("", &m, &e), BRAID_OK);
    CHECK_EQ_INT(m, BD_IO_DEFAULT);
    CHECK_EQ_INT(bd_cuda_io_parse("mapped", &m, &e), BRAID_OK);
    CHECK_EQ_INT(m, BD_IO_MAPPED);
    CHECK_EQ_INT(bd_cuda_io_parse("MANAGED", &m, &e), BRAID_OK);
    CHECK_EQ_INT(m, BD_IO_MANAGED);
    CHECK_EQ_INT(bd_cuda_io_parse("staged", &m, &e), BRAID_OK);
    CHECK_EQ_INT(m, BD_IO_STAGED);
    CHECK_EQ_INT(bd_cuda_io_parse("zero-copy", &m, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "BRAID_CUDA_IO is 'zero-copy'; it must be staged, mapped or managed");
    CHECK(!strcmp(bd_cuda_io_name(BD_IO_MANAGED), "managed"));
    CHECK(!strcmp(bd_cuda_io_name(7), "unknown"));

    CHECK_EQ_INT(bd_cublas_workspace_bytes(9), 32 << 20);  /* Hopper */
    CHECK_EQ_INT(bd_cublas_workspace_bytes(10), 32 << 20); /* later */
    CHECK_EQ_INT(bd_cublas_workspace_bytes(8), 4 << 20);   /* Ampere and before */
}

/* A plan of two nodes by hand: y = MatMul(x (2x3), w (3x4)); z = Relu(y). */
static void test_traffic(void)
{
    bd_tensor vals[4] = {
        {.dtype = F32, .rank = 2, .dims = {2, 3}}, {.dtype = F32, .rank = 2, .dims = {3, 4}},
        {.dtype = F32, .rank = 2, .dims = {2, 4}}, {.dtype = F32, .rank = 2, .dims = {2, 4}},
    };
    int in0[2] = {0, 1}, out0[1] = {2}, in1[2] = {2, -1}, out1[1] = {3};
    bd_node nodes[2] = {{.name = "mm", .n_in = 2, .n_out = 1, .in = in0, .out = out0},
                        {.name = "relu", .n_in = 2, .n_out = 1, .in = in1, .out = out1}}; /* -1: omitted */
    const bd_node *np[2] = {&nodes[0], &nodes[1]};
    int live[2] = {0, 1};
    bd_prepared p;
    memset(&p, 0, sizeof p);
    p.inst.vals = vals;
    p.inst.node = np;
    p.n_live = 2;
    p.live = live;
    /* mm: 24 + 48 in, 32 out; relu: 32 in, 32 out */
    CHECK_NEAR(bd_plan_traffic_bytes(&p), 24 + 48 + 32 + 32 + 32, 0, 0);
    p.n_live = 1;
    CHECK_NEAR(bd_plan_traffic_bytes(&p), 104, 0, 0);
}

/* ---- host nodes ------------------------------------------------------------------------------ */

/* Which nodes a CUDA plan runs on the host (bd_cuda_host_node), and what
 * `braid plan` prints for them on CUDA (a runner whose memory is not the
 * host's) and on the CPU (nothing). */
static void test_host_nodes(void)
{
    enum { X, S, SEQ, OPTV, STR, Y, Z, IDX, N_V };
    bd_value values[N_V] = {0};
    values[X].dtype = F32, values[Y].dtype = F32, values[Z].dtype = F32;
    values[S].dtype = BRAID_DTYPE_STRING;
    values[SEQ].dtype = BRAID_DTYPE_SEQUENCE | F32;
    values[OPTV].dtype = BRAID_DTYPE_OPTIONAL | F32;
    values[STR].dtype = BRAID_DTYPE_STRING;
    values[IDX].dtype = BRAID_DTYPE_INT64;
    bd_graph g = {.values = values, .n_values = N_V};
    bd_tensor vals[N_V] = {0};
    vals[STR].dtype = BRAID_DTYPE_STRING; /* the rest: dtype 0 here, the graph's declaration decides */
    bd_inst x = {.g = &g, .vals = vals};
    int add_in[2] = {X, Y}, add_out[1] = {Z};
    int at_in[2] = {SEQ, IDX}, at_out[1] = {Y};
    int sid_in[1] = {S}, sid_out[1] = {STR};
    int gat_in[2] = {S, IDX}, gat_out[1] = {STR};
    int cast_in[1] = {X}, cast_out[1] = {STR};
    int opt_in[1] = {OPTV}, opt_out[1] = {Y};
    int skip_in[3] = {X, -1, Y}, skip_out[2] = {Z, -1};
    int map_in[1] = {SEQ}, map_out[1] = {SEQ};
    bd_node nodes[8] = {
        {.name = "add", .op_type = "Add", .op = BD_OP_Add, .n_in = 2, .n_out = 1, .in = add_in, .out = add_out},
        {.name = "at", .op_type = "SequenceAt", .op = BD_OP_SequenceAt, .n_in = 2, .n_out = 1, .in = at_in, .out = at_out},
        {.name = "sid", .op_type = "Identity", .op = BD_OP_Identity, .n_in = 1, .n_out = 1, .in = sid_in, .out = sid_out},
        {.name = "gat", .op_type = "Gather", .op = BD_OP_Gather, .n_in = 2, .n_out = 1, .in = gat_in, .out = gat_out},
        {.name = "cast", .op_type = "Cast", .op = BD_OP_Cast, .n_in = 1, .n_out = 1, .in = cast_in, .out = cast_out},
        {.name = "get", .op_type = "Identity", .op = BD_OP_Identity, .n_in = 1, .n_out = 1, .in = opt_in, .out = opt_out},
        {.name = "skip", .op_type = "Clip", .op = BD_OP_Clip, .n_in = 3, .n_out = 2, .in = skip_in, .out = skip_out},
        {.name = "map", .op_type = "SequenceMap", .op = BD_OP_SequenceMap, .n_in = 1, .n_out = 1, .in = map_in,
         .out = map_out},
    };
    const int want[8] = {0, 1, 1, 1, 1, 1, 0, 0};
    for (int i = 0; i < 8; i++)
        if (bd_cuda_host_node(&nodes[i], &x) != want[i]) {
            fprintf(stderr, "host node %s: want %d\n", nodes[i].name, want[i]);
            CHECK(0);
        }
    /* An If is never one, even when what it returns is a sequence. */
    bd_node cond = {.name = "if", .op_type = "If", .op = BD_OP_If, .n_in = 1, .n_out = 1, .in = map_in, .out = map_out};
    CHECK_EQ_INT(bd_cuda_host_node(&cond, &x), 0);

    /* The plan print: add, at and map on one stream. */
    const bd_node *np[3] = {&nodes[0], &nodes[1], &nodes[7]};
    int live[3] = {0, 1, 2}, start[2] = {0, 3};
    bd_cmd cmds[3] = {{BD_CMD_LAUNCH, 0}, {BD_CMD_LAUNCH, 1}, {BD_CMD_LAUNCH, 2}};
    bd_prepared p;
    memset(&p, 0, sizeof p);
    x.node = np;
    p.g = &g;
    p.inst = x;
    p.n_live = 3;
    p.live = live;
    p.plan.n_streams = 1;
    p.plan.stream_start = start;
    p.plan.cmds = cmds;
    for (int host_mem = 0; host_mem < 2; host_mem++) { /* a CUDA runner, and the CPU's (no note) */
        bd_runner r = {.host_mem = host_mem, .node_note = host_mem ? NULL : bd_cuda_node_note};
        p.runner = &r;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        CHECK(f != NULL);
        if (!f) return;
        bd_stages_print(f, &p, 0);
        fclose(f);
        int on_host = strstr(text, "stream 0: launch at (on the host: its stream synchronized, its inputs copied to "
                                   "the host, its outputs back)\n") != NULL;
        int map = strstr(text, "stream 0: launch map (SequenceMap: each element written to the device, each result "
                               "read back to the host, one synchronization each)\n") != NULL;
        CHECK_EQ_INT(on_host, !host_mem);
        CHECK_EQ_INT(map, !host_mem);
        CHECK(strstr(text, "stream 0: launch add\n") != NULL);
        free(text);
    }
}

/* ---- the API on the CPU ------------------------------------------------------------------------ */

static void test_api(void)
{
    braid_options *o = NULL;
    CHECK_EQ_INT(braid_options_create(&o), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_cuda_workspace(o, -1), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(braid_last_error(), "braid_options_set_cuda_workspace: the CUDA workspace must be 0 to 65536 MiB");
    CHECK_EQ_INT(braid_options_set_cuda_workspace(o, 65537), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(braid_options_set_cuda_workspace(NULL, 64), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(braid_options_set_cuda_workspace(o, 0), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_cuda_workspace(o, 65536), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_backend(o, BRAID_BACKEND_CPU), BRAID_OK);
    CHECK_EQ_INT(braid_options_set_cuda_graph(o, 1), BRAID_OK);

    char path[1024];
    const char *data = getenv("BRAID_NODE_DATA");
    snprintf(path, sizeof path, "%s/test_relu/model.onnx", data ? data : "build/onnx_node");
    braid_model *m = NULL;
    braid_session *s = NULL;
    if (braid_model_load_file(path, &m) != BRAID_OK) {
        fprintf(stderr, "skipping the session checks: %s\n", braid_last_error());
        braid_options_destroy(o);
        return;
    }
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    CHECK(!strcmp(braid_session_device_info(s), ""));
    CHECK(!strcmp(braid_session_device_info(NULL), ""));
    CHECK_EQ_INT(braid_session_note_count(s), 0);
    CHECK(!strcmp(braid_session_note(s, 0), ""));
    CHECK_EQ_INT(braid_session_note_count(NULL), 0);
    braid_graph_info gi;
    CHECK_EQ_INT(braid_session_graph_info(s, &gi), BRAID_OK);
    CHECK_EQ_INT(gi.requested, 0); /* CUDA graphs asked for, but this is the CPU */
    CHECK_EQ_INT(gi.captured, 0);
    CHECK(gi.error && !strcmp(gi.error, ""));
    CHECK_EQ_INT(braid_session_graph_info(NULL, &gi), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_EQ_INT(braid_session_graph_info(s, NULL), BRAID_ERR_INVALID_ARGUMENT);
    float x[60] = {0}, y[60];
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = x};
    braid_tensor out = {.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = y};
    CHECK_EQ_INT(braid_session_run_into(s, 1, &in, 1, &out), BRAID_OK);
    CHECK_EQ_INT(braid_session_graph_info(s, &gi), BRAID_OK);
    CHECK_EQ_INT(gi.replays + gi.uncaptured, 0);
    CHECK_EQ_INT(bd_session_mem_bandwidth(s), 0);
    braid_session_destroy(s);
    braid_model_destroy(m);
    braid_options_destroy(o);
}

int main(void)
{
    (void)run; /* optest.h's single-op harness: only its node builders are used here */
    (void)done;
    test_notes();
    test_host_nodes();
    test_fault_texts();
    test_algo_choice();
    test_algo_cache();
    test_limits();
    test_versions();
    test_io_and_sizes();
    test_traffic();
    test_api();
    return check_done();
}
