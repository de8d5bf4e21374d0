/* xnnpack-conv.c: times one fp32 2-D convolution in XNNPACK (Debian's
 * libxnnpack-dev), for scripts/bench-conv-libs, which compares it with
 * braid's and onnxruntime's kernels on the benchmark set's convolution
 * shapes. Not part of braid: XNNPACK is measured here as a candidate.
 *
 *   xnnpack-conv N C H W M KH KW SH SW PH PW GROUP THREADS ITERS
 *
 * prints two medians in microseconds, space-separated: the convolution on
 * NHWC tensors alone, and the same with braid's layout around it (NCHW
 * input transposed to NHWC before, the output back after), as a plan that
 * keeps NCHW between ops would have to run it. Exit 1 with a message on
 * bad arguments or an XNNPACK failure. */
#include <math.h>
#include <pthreadpool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xnnpack.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* NCHW <-> NHWC of one image set: planes of n x a x b into n x b x a. */
static void transpose(const float *src, float *dst, size_t n, size_t a, size_t b)
{
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < a; p++)
            for (size_t q = 0; q < b; q++) dst[(i * b + q) * a + p] = src[(i * a + p) * b + q];
}

int main(int argc, char **argv)
{
    if (argc != 15) {
        fprintf(stderr, "usage: xnnpack-conv N C H W M KH KW SH SW PH PW GROUP THREADS ITERS\n");
        return 1;
    }
    long v[14];
    for (int i = 0; i < 14; i++) v[i] = strtol(argv[i + 1], NULL, 10);
    size_t N = v[0], C = v[1], H = v[2], W = v[3], M = v[4], KH = v[5], KW = v[6];
    uint32_t SH = v[7], SW = v[8], PH = v[9], PW = v[10], G = v[11];
    int threads = (int)v[12], iters = (int)v[13];
    if (!N || !C || !M || !G || C % G || M % G || iters < 1) {
        fprintf(stderr, "xnnpack-conv: bad shape\n");
        return 1;
    }
    size_t OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1;
    if (xnn_initialize(NULL) != xnn_status_success) {
        fprintf(stderr, "xnnpack-conv: xnn_initialize failed\n");
        return 1;
    }
    pthreadpool_t pool = threads > 1 ? pthreadpool_create((size_t)threads) : NULL;
    size_t nx = N * C * H * W, ny = N * M * OH * OW, nw = M * (C / G) * KH * KW;
    float *x = malloc(nx * sizeof *x), *xt = malloc(nx * sizeof *xt), *y = malloc(ny * sizeof *y),
          *yt = malloc(ny * sizeof *yt), *w = malloc(nw * sizeof *w), *b = malloc(M * sizeof *b),
          *wt = malloc(nw * sizeof *wt);
    if (!x || !xt || !y || !yt || !w || !b || !wt) return 1;
    for (size_t i = 0; i < nx; i++) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < M; i++) b[i] = 0.01f * (float)i;
    /* OIHW -> OHWI (per group: goc x kh x kw x gic) */
    size_t gic = C / G;
    for (size_t o = 0; o < M; o++)
        for (size_t i = 0; i < gic; i++)
            for (size_t kk = 0; kk < KH * KW; kk++) wt[(o * KH * KW + kk) * gic + i] = w[(o * gic + i) * KH * KW + kk];
    xnn_operator_t op = NULL;
    if (xnn_create_convolution2d_nhwc_f32(PH, PW, PH, PW, KH, KW, SH, SW, 1, 1, G, gic, M / G, C, M, wt, b,
                                          -INFINITY, INFINITY, 0, &op) != xnn_status_success ||
        xnn_setup_convolution2d_nhwc_f32(op, N, H, W, xt, yt, pool) != xnn_status_success) {
        fprintf(stderr, "xnnpack-conv: the operator could not be made\n");
        return 1;
    }
    double *t0 = malloc((size_t)iters * sizeof *t0), *t1 = malloc((size_t)iters * sizeof *t1);
    for (int i = 0; i < 5; i++) xnn_run_operator(op, pool);
    for (int i = 0; i < iters; i++) {
        double a = now_us();
        if (xnn_run_operator(op, pool) != xnn_status_success) {
            fprintf(stderr, "xnnpack-conv: run failed\n");
            return 1;
        }
        t0[i] = now_us() - a;
        a = now_us();
        transpose(x, xt, N, C, H * W);
        xnn_run_operator(op, pool);
        transpose(yt, y, N, OH * OW, M);
        t1[i] = now_us() - a;
    }
    qsort(t0, (size_t)iters, sizeof *t0, cmp);
    qsort(t1, (size_t)iters, sizeof *t1, cmp);
    printf("%.2f %.2f\n", t0[iters / 2], t1[iters / 2]);
    xnn_delete_operator(op);
    if (pool) pthreadpool_destroy(pool);
    return 0;
}
