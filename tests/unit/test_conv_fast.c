/* test_conv_fast.c: Conv's vector kernels (ops/conv.c: the implicit GEMM over
 * the padded, phase-split input, and the depthwise loop; ops/convdirect.c:
 * the direct kernel, row and flat mode; ops/convdw.c: depthwise 3x3 and 5x5) at each level the
 * CPU offers (AVX-512, AVX2, and 0: im2col + SGEMM), against a naive
 * double-precision loop: 1-D, 2-D and 3-D, strides, dilations, asymmetric
 * pads, groups, depthwise with a multiplier, one input channel, sizes that
 * end in vector tails and k past one slice; the fused bias, activation and
 * residual epilogue; and the same bits for 1 and 3 threads. The Winograd
 * kernel (ops/convwino.c) is checked the same way, and against convdirect.c
 * with it turned off (the two must differ in some bits: it ran). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/ops/convdirect.h"
#include "check.h"
#include "optest.h"
#include "ops/conv.h"

typedef struct ccase {
    int nsp;
    int64_t n, c, m, group, x[3], k[3], s[3], d[3], pb[3], pe[3];
    const char *what;
} ccase;

/* Output dim i of a case. */
static int64_t out_dim(const ccase *c, int i)
{
    return (c->x[i] + c->pb[i] + c->pe[i] - (c->k[i] - 1) * c->d[i] - 1) / c->s[i] + 1;
}

/* The naive convolution (up to 3 spatial dims, leading unit dims), with the
 * epilogue of bd_conv_epilogue applied to the double sum rounded to float. */
static void naive(const ccase *c, const float *x, const float *w, const float *b, const float *z, int act, float aa,
                  float ab, int res, float *y)
{
    int off = 3 - c->nsp;
    int64_t X[3], K[3], S[3], D[3], P[3], O[3];
    for (int i = 0; i < 3; i++) {
        int j = i - off, u = j < 0;
        X[i] = u ? 1 : c->x[j], K[i] = u ? 1 : c->k[j], S[i] = u ? 1 : c->s[j], D[i] = u ? 1 : c->d[j];
        P[i] = u ? 0 : c->pb[j], O[i] = u ? 1 : out_dim(c, j);
    }
    int64_t cg = c->c / c->group, mg = c->m / c->group, e = 0;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t m = 0; m < c->m; m++)
            for (int64_t o0 = 0; o0 < O[0]; o0++)
                for (int64_t o1 = 0; o1 < O[1]; o1++)
                    for (int64_t o2 = 0; o2 < O[2]; o2++, e++) {
                        double acc = 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t a0 = 0; a0 < K[0]; a0++)
                                for (int64_t a1 = 0; a1 < K[1]; a1++)
                                    for (int64_t a2 = 0; a2 < K[2]; a2++) {
                                        int64_t i0 = o0 * S[0] - P[0] + a0 * D[0], i1 = o1 * S[1] - P[1] + a1 * D[1];
                                        int64_t i2 = o2 * S[2] - P[2] + a2 * D[2];
                                        if (i0 < 0 || i0 >= X[0] || i1 < 0 || i1 >= X[1] || i2 < 0 || i2 >= X[2])
                                            continue;
                                        int64_t cin = (m / mg) * cg + ci;
                                        acc += (double)x[(((n * c->c + cin) * X[0] + i0) * X[1] + i1) * X[2] + i2] *
                                               w[(((m * cg + ci) * K[0] + a0) * K[1] + a1) * K[2] + a2];
                                    }
                        y[e] = bd_conv_epilogue(act, aa, ab, res, (float)acc, b ? b[m] : 0.0f, res ? z[e] : 0.0f);
                    }
}

/* Runs case c at vector level lvl on `threads` threads, with the epilogue
 * (act, res; z the residual) set as the fusion would; returns the output
 * (malloc'ed) and its element count. */
static float *conv_run(const ccase *c, const float *x, const float *w, const float *b, const float *z, int act,
                       float aa, float ab, int res, int lvl, int threads, int64_t *count)
{
    int64_t xd[5] = {c->n, c->c}, wd[5] = {c->m, c->c / c->group}, bd[1] = {c->m}, pads[6];
    for (int i = 0; i < c->nsp; i++) xd[2 + i] = c->x[i], wd[2 + i] = c->k[i], pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
    bd_tensor in[4] = {tensor(F32, 2 + c->nsp, xd, (void *)x), tensor(F32, 2 + c->nsp, wd, (void *)w),
                       tensor(F32, 1, bd, (void *)b)}, out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 3, 1);
    attr_int(&t, "group", c->group);
    attr_ints(&t, "strides", c->nsp, c->s);
    attr_ints(&t, "dilations", c->nsp, c->d);
    attr_ints(&t, "pads", 2 * c->nsp, pads);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, in, &out, &e), BRAID_OK);
    bd_conv_params *pa = t.n.params;
    pa->act = act, pa->act_a = aa, pa->act_b = ab, pa->res = res;
    *count = bd_numel(&out);
    float *y = malloc((size_t)*count * sizeof *y + 1);
    memset(y, 0xFF, (size_t)*count * sizeof *y); /* NaN: an element not written shows */
    out.data = y;
    if (res) in[3] = tensor(F32, out.rank, out.dims, (void *)z);
    bd_kernel k = {.node = &t.n, .in = in, .n_in = res ? 4 : 3, .out = &out, .n_out = 1, .threads = threads, .err = &e};
    bd_cpu_vec_cap(lvl);
    CHECK_EQ_INT(bd_cpu_conv(&k), BRAID_OK);
    bd_cpu_vec_cap(2);
    bd_free(t.n.params);
    t.n.params = NULL;
    return y;
}

/* Float sums of up to a few hundred terms of size ~1 against double: 1e-4. */
static int count_bad(const float *y, const float *ref, int64_t n)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !(fabsf(y[i] - ref[i]) <= 1e-4f + 1e-4f * fabsf(ref[i]));
    return bad;
}

static const ccase cases[] = {
    {2, 2, 5, 7, 1, {13, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "3x3 pad 1, a partial 8-row block, tails"},
    {2, 1, 4, 6, 1, {11, 19}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {2, 1}, "3x3 stride 2, asymmetric pads"},
    {2, 1, 3, 5, 1, {17, 15}, {5, 3}, {1, 2}, {2, 3}, {2, 1}, {0, 3}, "5x3 dilated (2, 3), stride (1, 2)"},
    {2, 2, 6, 10, 2, {9, 14}, {3, 2}, {2, 1}, {1, 2}, {0, 2}, {1, 0}, "grouped, strided, dilated"},
    {2, 1, 4, 8, 4, {10, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "depthwise, multiplier 2"},
    {2, 2, 3, 3, 3, {23, 19}, {5, 5}, {2, 2}, {1, 1}, {2, 1}, {1, 2}, "depthwise 5x5 stride 2, asymmetric pads"},
    {2, 2, 5, 5, 5, {29, 30}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, "depthwise 3x3 stride 2, 15 columns"},
    {2, 1, 6, 6, 6, {13, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, "depthwise 5x5, 13 rows (a partial row pass)"},
    {2, 1, 3, 6, 3, {11, 17}, {3, 7}, {3, 1}, {2, 1}, {3, 3}, {1, 2}, "depthwise 3x7 row stride 3, row dilation 2"},
    {2, 1, 4, 4, 4, {9, 40}, {3, 3}, {1, 2}, {1, 1}, {0, 1}, {2, 0}, "depthwise 3x3 stride (1, 2), 20 columns"},
    {2, 1, 2, 2, 2, {6, 31}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, "depthwise 1x3, 31 columns (two vectors)"},
    {2, 1, 2, 2, 2, {3, 5}, {3, 3}, {1, 1}, {1, 1}, {4, 4}, {4, 4}, "depthwise, pads wider than the input"},
    {1, 2, 3, 3, 3, {50}, {5}, {2}, {1}, {2}, {1}, "1-D depthwise stride 2"},
    {2, 1, 1, 9, 1, {33, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "one input channel"},
    {2, 2, 40, 24, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "1x1 on a 1x1 map (dot products)"},
    {2, 1, 6, 13, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "3x3 on a 2x2 map (dot products, 6 flat outputs)"},
    {2, 3, 32, 10, 2, {1, 3}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, "grouped 1x3 on a 1x3 map (dot products)"},
    {2, 2, 20, 13, 1, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "1x1, the input read as it is"},
    {2, 1, 8, 7, 1, {9, 12}, {1, 1}, {2, 3}, {1, 1}, {0, 0}, {0, 0}, "1x1 strided (2, 3)"},
    {2, 1, 3, 4, 1, {8, 9}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "3x3 unpadded (no copy)"},
    {2, 1, 40, 14, 1, {12, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "k = 360: past one k slice"},
    {1, 2, 8, 6, 1, {100}, {5}, {1}, {1}, {2}, {2}, "1-D k 5 pad 2"},
    {1, 1, 4, 6, 2, {61}, {3}, {3}, {2}, {1}, {0}, "1-D grouped, stride 3, dilation 2"},
    {3, 1, 3, 5, 1, {6, 7, 9}, {3, 3, 3}, {1, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 0, 1}, "3-D 3x3x3"},
    {3, 1, 4, 4, 4, {5, 6, 7}, {3, 1, 3}, {2, 1, 1}, {1, 1, 2}, {1, 0, 2}, {1, 0, 2}, "3-D depthwise"},
    {2, 2, 5, 13, 1, {9, 70}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, "direct: stride 2, 35 columns (3 vectors a row)"},
    {2, 1, 6, 9, 3, {12, 40}, {3, 5}, {1, 1}, {2, 2}, {2, 4}, {2, 4}, "direct flat: grouped, dilated, same pads"},
    {2, 2, 4, 12, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "direct flat: 49 outputs, tiles of 2 + 2"},
    {2, 1, 4, 11, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "direct flat: 100 outputs, tiles 3 + 2 + 2"},
    {2, 1, 5, 8, 1, {13, 13}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, "direct flat: 5x5 on 13x13"},
    {2, 1, 3, 10, 1, {17, 24}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, "direct: 1x1 stride 2 (even columns)"},
    {2, 2, 3, 16, 1, {30, 31}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 1}, "direct: 3 -> 16 stride 2, odd width"},
    {2, 1, 7, 5, 1, {6, 20}, {2, 3}, {1, 1}, {1, 1}, {1, 0}, {0, 0}, "direct row mode: stride 1, OW != W"},
    {2, 2, 6, 12, 6, {21, 100}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "depthwise 3x3, 100 columns (7 strips), x2"},
    {2, 1, 4, 4, 4, {37, 45}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {1, 2}, "depthwise 5x5 stride 2, 45 columns"},
    {2, 1, 3, 3, 3, {19, 17}, {3, 3}, {2, 1}, {1, 1}, {0, 1}, {1, 1}, "depthwise 3x3 stride (2, 1)"},
    {2, 1, 2, 2, 2, {6, 7}, {5, 5}, {1, 2}, {1, 1}, {3, 0}, {0, 3}, "depthwise 5x5, pads past the input"},
    {2, 2, 6, 10, 1, {15, 41}, {3, 3}, {2, 2}, {1, 2}, {1, 0}, {0, 2}, "direct split: stride 2, odd width, dilation 2"},
    {2, 1, 8, 9, 1, {20, 50}, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {2, 2}, "direct split: 5x5 stride 2"},
    {2, 1, 12, 8, 2, {9, 33}, {1, 1}, {1, 2}, {1, 1}, {0, 0}, {0, 0}, "direct split: grouped 1x1 stride (1, 2)"},
    {2, 2, 9, 13, 1, {20, 45}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "winograd 9 -> 13, 45 columns (2 tile vectors)"},
    {2, 1, 8, 8, 1, {35, 30}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {2, 0}, "winograd, asymmetric pads, 35 output rows"},
    {2, 1, 32, 16, 2, {40, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "winograd grouped 32 -> 16 (8 a group)"},
    {2, 4, 10, 24, 1, {11, 34}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "winograd unpadded, 4 images of 9 x 32 outputs"},
    {2, 3, 40, 20, 1, {37, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "winograd 40 -> 20, 3 images, bands"},
    {2, 1, 0, 0, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "no channels"},
    {2, 1, 0, 3, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "no input channels: the bias alone"},
    {2, 0, 3, 4, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "no images"},
};

/* Every case at every level on 1 and 3 threads against the naive loop. */
static void test_cases_vs_naive(void)
{
    unsigned seed = 11;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ccase *c = &cases[ci];
        int64_t nx = c->n * c->c, nw = c->m * (c->group ? c->c / c->group : 0);
        for (int i = 0; i < c->nsp; i++) nx *= c->x[i], nw *= c->k[i];
        float *x = randn(nx + 1, &seed), *w = randn(nw + 1, &seed), *b = randn(c->m + 1, &seed);
        int64_t ny = c->n * c->m;
        for (int i = 0; i < c->nsp; i++) ny *= out_dim(c, i);
        float *ref = malloc((size_t)ny * sizeof *ref + 1);
        naive(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, ref);
        for (int lvl = 2; lvl >= 0; lvl--)
            for (int th = 1; th <= 3; th += 2) {
                int64_t count;
                float *y = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, lvl, th, &count);
                CHECK_EQ_INT(count, ny);
                int bad = count_bad(y, ref, ny);
                if (bad) fprintf(stderr, "case '%s' level %d threads %d: %d values differ\n", c->what, lvl, th, bad);
                CHECK_EQ_INT(bad, 0);
                free(y);
            }
        free(x), free(w), free(b), free(ref);
    }
}

/* Bias, each activation (Relu, LeakyRelu, Clip, HardSigmoid, HardSwish,
 * Sigmoid, x sigmoid(x)) and the residual before or after it, fused, at each
 * vector level, on a GEMM, a depthwise, a one-channel and a Winograd case. */
static void test_epilogues(void)
{
    const int picks[6] = {0, 5, 6, 13, 14, 40};
    const struct { int act; float a, b; } acts[8] = {
        {BD_ACT_NONE, 0, 0},         {BD_ACT_RELU, 0, 0},     {BD_ACT_LEAKY, 0.1f, 0}, {BD_ACT_CLIP, -0.5f, 0.7f},
        {BD_ACT_HSIGMOID, 0.3f, 0.4f}, {BD_ACT_HSWISH, 0, 0}, {BD_ACT_SIGMOID, 0, 0},  {BD_ACT_SILU, 0, 0}};
    unsigned seed = 5;
    for (int pi = 0; pi < 6; pi++) {
        const ccase *c = &cases[picks[pi]];
        int64_t nx = c->n * c->c, nw = c->m * (c->c / c->group), ny = c->n * c->m;
        for (int i = 0; i < c->nsp; i++) nx *= c->x[i], nw *= c->k[i], ny *= out_dim(c, i);
        float *x = randn(nx, &seed), *w = randn(nw, &seed), *b = randn(c->m, &seed), *z = randn(ny, &seed);
        float *ref = malloc((size_t)ny * sizeof *ref);
        for (int ai = 0; ai < 8; ai++)
            for (int res = BD_RES_NONE; res <= BD_RES_POST; res++) {
                naive(c, x, w, b, z, acts[ai].act, acts[ai].a, acts[ai].b, res, ref);
                for (int lvl = 2; lvl >= 0; lvl--) {
                    int64_t count;
                    float *y = conv_run(c, x, w, b, z, acts[ai].act, acts[ai].a, acts[ai].b, res, lvl, 1, &count);
                    int bad = count_bad(y, ref, ny);
                    if (bad)
                        fprintf(stderr, "case '%s' act %d res %d level %d: %d values differ\n", c->what,
                                acts[ai].act, res, lvl, bad);
                    CHECK_EQ_INT(bad, 0);
                    free(y);
                }
            }
        free(x), free(w), free(b), free(z), free(ref);
    }
}

/* Convolutions big enough to split over threads give the same bits on 1, 2
 * and 3 threads at each level. */
static void test_threads_bitwise(void)
{
    const ccase big[8] = {
        {2, 2, 16, 24, 1, {64, 61}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, "direct split 16->24 stride 2"},
        {2, 1, 16, 16, 1, {64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "GEMM 16->16 64x64"},
        {2, 3, 16, 36, 1, {32, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "direct flat 16->36, 3 images"},
        {2, 1, 3, 16, 1, {224, 224}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, "direct 3->16 stride 2 224x224"},
        {2, 1, 64, 64, 64, {96, 96}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "depthwise 64 96x96"},
        {2, 1, 1, 16, 1, {128, 128}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "one channel 1->16 128x128"},
        {2, 1, 512, 512, 512, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, "depthwise 512 28x28 (direct)"},
        {2, 1, 2048, 2048, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "1x1 2048->2048 on 1x1 (dot products)"},
    };
    unsigned seed = 9;
    for (int ci = 0; ci < 8; ci++) {
        const ccase *c = &big[ci];
        int64_t nx = c->n * c->c * c->x[0] * c->x[1], nw = c->m * (c->c / c->group) * 9;
        float *x = randn(nx, &seed), *w = randn(nw, &seed), *b = randn(c->m, &seed);
        for (int lvl = 2; lvl >= 1; lvl--) {
            int64_t n1, n2, n3;
            float *y1 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 1, &n1);
            float *y2 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 2, &n2);
            float *y3 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 3, &n3);
            int same = memcmp(y1, y2, (size_t)n1 * sizeof *y1) == 0 && memcmp(y1, y3, (size_t)n1 * sizeof *y1) == 0;
            if (!same) fprintf(stderr, "case '%s' level %d: bits differ across threads\n", c->what, lvl);
            CHECK(same);
            free(y1), free(y2), free(y3);
        }
        free(x), free(w), free(b);
    }
}

/* Each Winograd case with the kernel on and off (convdirect.c then): both
 * within the tolerance of the naive loop, and not the same bits (so the
 * Winograd kernel did run); a case it does not take (a dilated 3x5 over 2
 * input channels per group) gives the same bits either way, as every case
 * does on a CPU without AVX-512. */
static void test_winograd_ran(void)
{
    unsigned seed = 21;
    int ran = 0, can = bd_cpu_vec_level() == 2; /* the kernel is AVX-512 only */
    if (!can) fprintf(stderr, "no AVX-512: the Winograd cases must give convdirect.c's bits\n");
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ccase *c = &cases[ci];
        int wino = strncmp(c->what, "winograd", 8) == 0;
        if (!wino && strcmp(c->what, "direct flat: grouped, dilated, same pads") != 0) continue;
        int64_t nx = c->n * c->c * c->x[0] * c->x[1], nw = c->m * (c->c / c->group) * c->k[0] * c->k[1];
        int64_t ny = c->n * c->m * out_dim(c, 0) * out_dim(c, 1), n1, n2;
        float *x = randn(nx, &seed), *w = randn(nw, &seed), *b = randn(c->m, &seed), *ref = malloc((size_t)ny * sizeof *ref);
        naive(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, ref);
        float *on = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, 2, 2, &n1);
        bd_conv_wino_enable(0);
        float *off = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, 2, 2, &n2);
        bd_conv_wino_enable(1);
        CHECK_EQ_INT(count_bad(on, ref, ny), 0);
        CHECK_EQ_INT(count_bad(off, ref, ny), 0);
        int same = memcmp(on, off, (size_t)ny * sizeof *on) == 0;
        if (same == (wino && can)) fprintf(stderr, "case '%s': Winograd %s\n", c->what, wino && can ? "did not run" : "ran");
        CHECK_EQ_INT(same, !(wino && can));
        ran += wino && can;
        free(x), free(w), free(b), free(ref), free(on), free(off);
    }
    CHECK_EQ_INT(ran, can ? 5 : 0);
}

int main(void)
{
    (void)run, (void)done; /* optest.h's harness: these tests call the kernel themselves */
    test_cases_vs_naive();
    test_winograd_ran();
    test_epilogues();
    test_threads_bitwise();
    return check_done();
}
