/* test_conv_nhwc.c: Conv on NHWC data (ops/convnhwc.c: the implicit GEMM,
 * the flat 1x1 walk and the depthwise kernel) at each vector level (AVX-512,
 * AVX2, 0: plain loops), against a double-precision loop over the same
 * NHWC layouts: 1x1 with channel counts off the vector width, 3x3 with
 * strides, symmetric and asymmetric pads, dilation, 5x5 and 7x7, a first conv
 * reading NCHW input (x_nchw), depthwise 3x3 / 5x5 / with a multiplier,
 * groups 2 and 4, two images, tiny planes; every fused epilogue; and the same
 * bits on 1 and 3 threads; W large enough to be packed per call, and
 * large W on few pixels (GEMV, 5x5), read in place; depthwise 5x5 with
 * many channels (bands from a padded copy); W in output-channel panels
 * (the layout pass's w_panel), K chunks of whole taps and of a tap's
 * channels, bit for bit against W in place; the Winograd F(2x2, 3x3)
 * kernel (ops/convwino.c) on 3x3 stride-1 cases, and against the implicit
 * GEMM with it turned off (not the same bits: it ran), with the weights
 * transformed per call or ahead (w_wino). Tolerance: 1e-4 absolute + 1e-4 relative, for
 * float sums of up to a few thousand N(0,1) products against double. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/ops/convdirect.h"
#include "backend/cpu/ops/convnhwc.h"
#include "check.h"
#include "optest.h"
#include "ops/conv.h"

typedef struct ncase {
    int64_t n, c, m, group, x[2], k[2], s[2], d[2], pb[2], pe[2];
    int x_nchw;
    const char *what;
} ncase;

static int64_t out_dim(const ncase *c, int i)
{
    return (c->x[i] + c->pb[i] + c->pe[i] - (c->k[i] - 1) * c->d[i] - 1) / c->s[i] + 1;
}

static int64_t numel_x(const ncase *c) { return c->n * c->c * c->x[0] * c->x[1]; }
static int64_t numel_w(const ncase *c) { return c->k[0] * c->k[1] * (c->group ? c->c / c->group : 0) * c->m; }
static int64_t numel_y(const ncase *c) { return c->n * out_dim(c, 0) * out_dim(c, 1) * c->m; }

/* The naive convolution on X (N, H, W, C) or (N, C, H, W), W (KH, KW, C/g, M),
 * Y (N, OH, OW, M): double sums rounded to float, then bd_conv_epilogue. */
static void naive(const ncase *c, const float *x, const float *w, const float *b, const float *z, int act, float aa,
                  float ab, int res, float *y)
{
    int64_t H = c->x[0], W = c->x[1], OH = out_dim(c, 0), OW = out_dim(c, 1);
    int64_t cg = c->c / c->group, mg = c->m / c->group;
    for (int64_t n = 0; n < c->n; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t m = 0; m < c->m; m++) {
                    double acc = 0;
                    for (int64_t kh = 0; kh < c->k[0]; kh++)
                        for (int64_t kw = 0; kw < c->k[1]; kw++) {
                            int64_t ih = oh * c->s[0] - c->pb[0] + kh * c->d[0];
                            int64_t iw = ow * c->s[1] - c->pb[1] + kw * c->d[1];
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            for (int64_t ci = 0; ci < cg; ci++) {
                                int64_t cin = m / mg * cg + ci;
                                int64_t xi = c->x_nchw ? ((n * c->c + cin) * H + ih) * W + iw
                                                       : ((n * H + ih) * W + iw) * c->c + cin;
                                acc += (double)x[xi] * w[((kh * c->k[1] + kw) * cg + ci) * c->m + m];
                            }
                        }
                    int64_t o = ((n * OH + oh) * OW + ow) * c->m + m;
                    y[o] = bd_conv_epilogue(act, aa, ab, res, (float)acc, b ? b[m] : 0.0f, res ? z[o] : 0.0f);
                }
}

/* The panel width conv_run gives W (one group only): 0, W as (KH, KW, C, M). */
static int64_t g_panel = 0;
/* 1: conv_run transforms W for Winograd as the layout pass does (w_wino);
 * 2: the same, but for another W (w_wino_of elsewhere: must be ignored). */
static int g_plan_wino = 0;

/* Runs case c as an NHWC node at level lvl on `threads` threads; returns the
 * output (malloc'ed, NaN-filled first so that a skipped element shows). */
static float *conv_run(const ncase *c, const float *x, const float *w, const float *b, const float *z, int act,
                       float aa, float ab, int res, int lvl, int threads)
{
    int64_t xd[4] = {c->n, c->x[0], c->x[1], c->c}, wd[4] = {c->k[0], c->k[1], c->c / c->group, c->m};
    int64_t bd[1] = {c->m}, pads[4] = {c->pb[0], c->pb[1], c->pe[0], c->pe[1]};
    if (c->x_nchw) xd[1] = c->c, xd[2] = c->x[0], xd[3] = c->x[1];
    bd_tensor in[4] = {tensor(F32, 4, xd, (void *)x), tensor(F32, 4, wd, (void *)w), tensor(F32, 1, bd, (void *)b)};
    bd_tensor out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 3, 1);
    attr_int(&t, "group", c->group);
    attr_ints(&t, "strides", 2, c->s);
    attr_ints(&t, "dilations", 2, c->d);
    attr_ints(&t, "pads", 4, pads);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_conv_params *pa = t.n.params;
    pa->layout = BD_LAYOUT_NHWC, pa->x_nchw = c->x_nchw;
    CHECK_EQ_INT(bd_op_infer(&t.n, in, &out, &e), BRAID_OK);
    pa->act = act, pa->act_a = aa, pa->act_b = ab, pa->res = res;
    float *wpan = NULL;
    if (g_panel && c->group == 1) { /* W in panels, as the layout pass stores it */
        int64_t kkc = c->k[0] * c->k[1] * c->c;
        wpan = malloc((size_t)(kkc * c->m) * sizeof *wpan + 1);
        for (int64_t r = 0; r < kkc; r++)
            for (int64_t m = 0; m < c->m; m++) wpan[bd_conv_panel_at(g_panel, c->m, kkc, r, m)] = w[r * c->m + m];
        in[1].data = wpan;
        pa->w_panel = g_panel;
    }
    float *wino = NULL;
    if (g_plan_wino && c->group == 1 && c->k[0] == 3 && c->k[1] == 3) {
        wino = malloc((size_t)bd_conv_wino_floats(c->c, c->m) * sizeof *wino);
        bd_conv_wino_weights(in[1].data, 1, pa->w_panel, c->c, c->m, wino);
        pa->w_wino = wino;
        pa->w_wino_of = g_plan_wino == 1 ? in[1].data : (const void *)x;
    }
    CHECK_EQ_INT(bd_numel(&out), numel_y(c));
    CHECK_EQ_INT(out.dims[3], c->m);
    int64_t ny = numel_y(c);
    float *y = malloc((size_t)ny * sizeof *y + 1);
    memset(y, 0xFF, (size_t)ny * sizeof *y);
    out.data = y;
    if (res) in[3] = tensor(F32, out.rank, out.dims, (void *)z);
    bd_kernel k = {.node = &t.n, .in = in, .n_in = res ? 4 : (b ? 3 : 2), .out = &out, .n_out = 1,
                   .threads = threads, .err = &e};
    bd_cpu_vec_cap(lvl);
    CHECK_EQ_INT(bd_cpu_conv(&k), BRAID_OK);
    bd_cpu_vec_cap(2);
    free(wpan);
    free(wino);
    bd_free(t.n.params);
    t.n.params = NULL;
    return y;
}

static int count_bad(const float *y, const float *ref, int64_t n)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += !(fabsf(y[i] - ref[i]) <= 1e-4f + 1e-4f * fabsf(ref[i]));
    return bad;
}

/* n, c, m, group, {H, W}, {KH, KW}, strides, dilations, pads begin, pads end, x_nchw */
static const ncase cases[] = {
    {2, 20, 13, 1, {7, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 flat, C 20, M 13 (< 16)"},
    {1, 37, 100, 1, {11, 13}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 flat, M 100 (7 vectors, a tail)"},
    {1, 16, 200, 1, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 flat, M 200 (4 blocks)"},
    {1, 8, 7, 1, {9, 12}, {1, 1}, {2, 3}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 strided (2, 3)"},
    {1, 5, 9, 1, {6, 7}, {1, 1}, {1, 1}, {1, 1}, {1, 0}, {0, 1}, 0, "1x1 padded"},
    {2, 5, 7, 1, {13, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 s1 p1, two images"},
    {1, 16, 32, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "3x3 s1 p0"},
    {1, 24, 48, 1, {15, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 s2 p1, M 48"},
    {1, 4, 6, 1, {11, 19}, {3, 3}, {2, 2}, {1, 1}, {0, 1}, {2, 1}, 0, "3x3 s2, asymmetric pads"},
    {1, 6, 17, 1, {14, 16}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 0, "3x3 dilation 2"},
    {1, 3, 5, 1, {17, 15}, {5, 3}, {1, 2}, {2, 3}, {2, 1}, {0, 3}, 0, "5x3 dilated (2, 3), stride (1, 2)"},
    {1, 8, 70, 1, {13, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0, "5x5 p2, M 70"},
    {1, 3, 16, 1, {31, 29}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}, 1, "7x7 s2 first conv, NCHW input, C 3"},
    {2, 3, 16, 1, {40, 30}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, "3x3 s2 first conv, NCHW input, 2 images"},
    {1, 1, 9, 1, {13, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, "one channel, NCHW input"},
    {1, 2, 5, 1, {7, 8}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1, "1x1 NCHW input"},
    {1, 64, 64, 64, {13, 14}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "depthwise 3x3 s1, 64 channels"},
    {2, 37, 37, 37, {15, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, "depthwise 3x3 s2, 37 channels"},
    {1, 300, 300, 300, {9, 9}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0, "depthwise 5x5, 300 channels (blocks)"},
    {1, 5, 5, 5, {8, 9}, {3, 3}, {1, 2}, {2, 1}, {0, 1}, {2, 0}, 0, "depthwise dilated, asymmetric"},
    {2, 100, 100, 100, {7, 11}, {5, 5}, {1, 1}, {2, 1}, {3, 2}, {1, 2}, 0,
     "depthwise 5x5 bands: 100 channels (a tail), 2 images, row dilation 2, asymmetric pads"},
    {1, 130, 130, 130, {30, 20}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0, "depthwise 5x5 130ch 30x20: two bands"},
    {1, 112, 112, 112, {3, 4}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0, "depthwise 5x5 bands on a 3x4 map"},
    {1, 6, 6, 6, {3, 5}, {3, 3}, {1, 1}, {1, 1}, {4, 4}, {4, 4}, 0, "depthwise, pads wider than the input"},
    {1, 16, 16, 16, {12, 12}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "depthwise 1x1 (flat)"},
    {1, 4, 8, 4, {10, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "depthwise multiplier 2"},
    {2, 6, 10, 2, {9, 14}, {3, 2}, {2, 1}, {1, 2}, {0, 2}, {1, 0}, 0, "groups 2, strided, dilated"},
    {1, 32, 40, 4, {8, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "groups 4"},
    {1, 32, 40, 4, {8, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "groups 4, 1x1 flat"},
    {2, 40, 24, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 on a 1x1 map"},
    {1, 6, 13, 1, {2, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 on a 2x3 map (no interior)"},
    {1, 6, 13, 1, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 on a 1x1 map"},
    {1, 40, 14, 1, {12, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "k = 360"},
    {1, 0, 3, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "no input channels: the bias alone"},
    {0, 3, 4, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "no images"},
    {1, 2, 3, 1, {3, 40}, {1, 17}, {1, 1}, {1, 1}, {0, 8}, {0, 8}, 0, "1x17 (wide window, border pixels)"},
    {2, 128, 160, 1, {8, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 128->160: W packed per call"},
    {1, 256, 200, 2, {26, 9}, {3, 3}, {2, 1}, {1, 1}, {1, 0}, {1, 1}, 0, "groups 2, W packed, tails"},
    {1, 512, 300, 1, {12, 10}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 flat 512->300: W packed"},
    {1, 512, 1000, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 512->1000 on one pixel (GEMV)"},
    {3, 300, 170, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 on three 1x1 images, W in place"},
    {1, 512, 520, 1, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 512->520 on 5x5: W in place"},
    {1, 128, 160, 1, {5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 128->160 on 5x6: W in place"},
    {1, 48, 64, 1, {14, 16}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 0, "3x3 dilation 2, 48->64: K chunks of whole taps"},
    {1, 3, 80, 1, {23, 19}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, "first conv 3->80 s2, NCHW input (panels 48 + 32)"},
    {2, 7, 130, 1, {6, 9}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 flat 7->130, two images (panels 48 x 2 + 34)"},
    {2, 20, 40, 1, {23, 27}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "winograd 20->40, odd sizes, two images"},
    {1, 9, 100, 1, {33, 35}, {3, 3}, {1, 1}, {1, 1}, {0, 2}, {2, 0}, 0, "winograd 9->100 (7 vectors: 3 + 2 + 2), asymmetric"},
    {1, 48, 24, 1, {36, 35}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "winograd 48->24 unpadded, 17 x 17 tiles"},
    {3, 16, 16, 1, {9, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "winograd 16->16, 3 images of 9 rows"},
    {1, 200, 96, 1, {9, 40}, {3, 3}, {2, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 200->96, 40 wide: K chunks, strips"},
};

/* Every case at every level on 1 and 3 threads against the naive loop, with a bias. */
static void test_cases_vs_naive(void)
{
    unsigned seed = 11;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ncase *c = &cases[ci];
        float *x = randn(numel_x(c) + 1, &seed), *w = randn(numel_w(c) + 1, &seed), *b = randn(c->m + 1, &seed);
        int64_t ny = numel_y(c);
        float *ref = malloc((size_t)ny * sizeof *ref + 1);
        naive(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, ref);
        for (int lvl = 2; lvl >= 0; lvl--)
            for (int th = 1; th <= 3; th += 2) {
                float *y = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, lvl, th);
                int bad = count_bad(y, ref, ny);
                if (bad) fprintf(stderr, "case '%s' level %d threads %d: %d values differ\n", c->what, lvl, th, bad);
                CHECK_EQ_INT(bad, 0);
                free(y);
            }
        free(x), free(w), free(b), free(ref);
    }
}

/* Each activation, the residual before or after it, with and without a bias,
 * at each level, on a flat 1x1, a 3x3 with a tail, an NCHW-input, a
 * depthwise and a Winograd case. */
static void test_epilogues(void)
{
    const int picks[5] = {1, 7, 13, 17, 46};
    const struct { int act; float a, b; } acts[8] = {
        {BD_ACT_NONE, 0, 0},           {BD_ACT_RELU, 0, 0},   {BD_ACT_LEAKY, 0.1f, 0}, {BD_ACT_CLIP, -0.5f, 0.7f},
        {BD_ACT_HSIGMOID, 0.3f, 0.4f}, {BD_ACT_HSWISH, 0, 0}, {BD_ACT_SIGMOID, 0, 0},  {BD_ACT_SILU, 0, 0}};
    unsigned seed = 5;
    for (int pi = 0; pi < 5; pi++) {
        const ncase *c = &cases[picks[pi]];
        int64_t ny = numel_y(c);
        float *x = randn(numel_x(c), &seed), *w = randn(numel_w(c), &seed), *b = randn(c->m, &seed);
        float *z = randn(ny, &seed), *ref = malloc((size_t)ny * sizeof *ref);
        for (int ai = 0; ai < 8; ai++)
            for (int res = BD_RES_NONE; res <= BD_RES_POST; res++)
                for (int hb = 0; hb < 2; hb++) {
                    const float *bb = hb ? b : NULL;
                    naive(c, x, w, bb, z, acts[ai].act, acts[ai].a, acts[ai].b, res, ref);
                    for (int lvl = 2; lvl >= 0; lvl--) {
                        float *y = conv_run(c, x, w, bb, z, acts[ai].act, acts[ai].a, acts[ai].b, res, lvl, 1);
                        int bad = count_bad(y, ref, ny);
                        if (bad)
                            fprintf(stderr, "case '%s' act %d res %d bias %d level %d: %d values differ\n", c->what,
                                    acts[ai].act, res, hb, lvl, bad);
                        CHECK_EQ_INT(bad, 0);
                        free(y);
                    }
                }
        free(x), free(w), free(b), free(z), free(ref);
    }
}

/* Convolutions big enough to split over threads: the same bits on 1, 2 and 3
 * threads at each vector level. */
static void test_threads_bitwise(void)
{
    const ncase big[8] = {
        {1, 64, 64, 1, {40, 36}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "1x1 64->64 flat"},
        {2, 16, 32, 1, {32, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 16->32, 2 images"},
        {1, 48, 96, 1, {26, 26}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, "3x3 s2 48->96"},
        {1, 3, 16, 1, {120, 96}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, "first conv NCHW 3->16 s2"},
        {1, 64, 64, 64, {56, 56}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "depthwise 64 56x56"},
        {1, 32, 32, 32, {112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 0, "depthwise 32 s2 112x112"},
        {1, 512, 1280, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 0, "GEMV 512->1280, blocks over M"},
        {1, 200, 200, 200, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0, "depthwise 5x5 200ch, bands"},
    };
    unsigned seed = 9;
    for (int ci = 0; ci < 8; ci++) {
        const ncase *c = &big[ci];
        float *x = randn(numel_x(c), &seed), *w = randn(numel_w(c), &seed), *b = randn(c->m, &seed);
        int64_t ny = numel_y(c);
        for (int lvl = 2; lvl >= 0; lvl--) {
            float *y1 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 1);
            float *y2 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 2);
            float *y3 = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, lvl, 3);
            int same = memcmp(y1, y2, (size_t)ny * sizeof *y1) == 0 && memcmp(y1, y3, (size_t)ny * sizeof *y1) == 0;
            if (!same) fprintf(stderr, "case '%s' level %d: bits differ across threads\n", c->what, lvl);
            CHECK(same);
            free(y1), free(y2), free(y3);
        }
        free(x), free(w), free(b);
    }
}

/* W in panels (bd_conv_params.w_panel) of 16, 48 and 64 channels and of
 * bd_conv_panel_width's choice: every one-group case at every level, on 1
 * and 3 threads, against the naive loop and bit for bit against the same
 * case with W as (KH, KW, C, M) (the same FMA chains); with a residual and
 * an activation on a case of K chunks. Also the widths the layout pass
 * picks. */
static void test_panels(void)
{
    CHECK_EQ_INT(bd_conv_panel_width(64), 0);
    CHECK_EQ_INT(bd_conv_panel_width(24), 0);
    CHECK_EQ_INT(bd_conv_panel_width(96), 48);
    CHECK_EQ_INT(bd_conv_panel_width(160), 64);
    CHECK_EQ_INT(bd_conv_panel_width(80), 48);
    CHECK_EQ_INT(bd_conv_panel_width(384), 64);
    CHECK_EQ_INT(bd_conv_panel_width(100), 64);
    unsigned seed = 21;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ncase *c = &cases[ci];
        if (c->group != 1 || c->m <= 16) continue;
        float *x = randn(numel_x(c) + 1, &seed), *w = randn(numel_w(c) + 1, &seed), *b = randn(c->m + 1, &seed);
        float *z = randn(numel_y(c) + 1, &seed);
        int64_t ny = numel_y(c), widths[4] = {16, 48, 64, bd_conv_panel_width(c->m)};
        float *ref = malloc((size_t)ny * sizeof *ref + 1);
        int chunky = ci == sizeof cases / sizeof *cases - 1;
        int act = chunky ? BD_ACT_HSWISH : BD_ACT_NONE, res = chunky ? BD_RES_PRE : BD_RES_NONE;
        naive(c, x, w, b, z, act, 0, 0, res, ref);
        for (int lvl = 2; lvl >= 0; lvl--) {
            float *yh = conv_run(c, x, w, b, z, act, 0, 0, res, lvl, 1);
            for (int wi = 0; wi < 4; wi++) {
                if (!widths[wi] || widths[wi] >= c->m) continue;
                g_panel = widths[wi];
                for (int th = 1; th <= 3; th += 2) {
                    float *y = conv_run(c, x, w, b, z, act, 0, 0, res, lvl, th);
                    int bad = count_bad(y, ref, ny), same = memcmp(y, yh, (size_t)ny * sizeof *y) == 0;
                    if (bad || !same)
                        fprintf(stderr, "case '%s' panels of %lld level %d threads %d: %d values differ, %s bits\n",
                                c->what, (long long)g_panel, lvl, th, bad, same ? "same" : "other");
                    CHECK_EQ_INT(bad, 0);
                    CHECK(same);
                    free(y);
                }
                g_panel = 0;
            }
            free(yh);
        }
        free(x), free(w), free(b), free(z), free(ref);
    }
}

/* The Winograd cases with the kernel on and off: both within the tolerance
 * of the naive loop, and not the same bits (the Winograd kernel ran); cases
 * it does not take (3x3 stride 2; 3x3 stride 1 on 10x10 outputs, under
 * WG_MIN_PIXELS) give the same bits either way, as every case does on a
 * CPU without AVX-512. */
static void test_winograd_ran(void)
{
    unsigned seed = 31;
    int ran = 0, can = bd_cpu_vec_level() == 2; /* the kernel is AVX-512 only */
    if (!can) fprintf(stderr, "no AVX-512: the Winograd cases must give the implicit GEMM's bits\n");
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const ncase *c = &cases[ci];
        int wino = strncmp(c->what, "winograd", 8) == 0;
        if (!wino && strcmp(c->what, "3x3 s2 p1, M 48") != 0 && strcmp(c->what, "3x3 s1 p0") != 0) continue;
        int64_t ny = numel_y(c);
        float *x = randn(numel_x(c), &seed), *w = randn(numel_w(c), &seed), *b = randn(c->m, &seed);
        float *ref = malloc((size_t)ny * sizeof *ref);
        naive(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, ref);
        float *on = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, 2, 2);
        bd_conv_wino_enable(0);
        float *off = conv_run(c, x, w, b, NULL, BD_ACT_RELU, 0, 0, BD_RES_NONE, 2, 2);
        bd_conv_wino_enable(1);
        CHECK_EQ_INT(count_bad(on, ref, ny), 0);
        CHECK_EQ_INT(count_bad(off, ref, ny), 0);
        int same = memcmp(on, off, (size_t)ny * sizeof *on) == 0;
        if (same == (wino && can)) fprintf(stderr, "case '%s': Winograd %s\n", c->what, wino && can ? "did not run" : "ran");
        CHECK_EQ_INT(same, !(wino && can));
        ran += wino && can;
        free(x), free(w), free(b), free(ref), free(on), free(off);
    }
    CHECK_EQ_INT(ran, can ? 4 : 0);
}

/* Weights transformed ahead (w_wino, as the layout pass stores them): a
 * 128->128 3x3 on 10x10, under the threshold of the per-call transform but
 * over bd_conv_wino_planned_pays, runs Winograd only then (other bits than
 * without, both within tolerance); a case that runs Winograd either way
 * gives the same bits planned or not, in panels too; w_wino of another W
 * is ignored. */
static void test_winograd_planned(void)
{
    const ncase small = {1, 128, 128, 1, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, "winograd planned 10x10"};
    const ncase *big = NULL;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
        if (strcmp(cases[ci].what, "winograd 9->100 (7 vectors: 3 + 2 + 2), asymmetric") == 0) big = &cases[ci];
    CHECK(big != NULL);
    CHECK(!bd_conv_wino_planned_pays(32, 32, 16 * 16)); /* 2.4M multiply-adds: the GEMM */
    CHECK(bd_conv_wino_planned_pays(128, 128, 100));
    unsigned seed = 41;
    int can = bd_cpu_vec_level() == 2; /* without AVX-512 neither path runs Winograd */
    for (int which = 0; which < 2 && big; which++) {
        const ncase *c = which ? big : &small;
        int64_t ny = numel_y(c);
        float *x = randn(numel_x(c), &seed), *w = randn(numel_w(c), &seed), *b = randn(c->m, &seed);
        float *ref = malloc((size_t)ny * sizeof *ref);
        naive(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, ref);
        float *plain = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, 2, 2);
        g_plan_wino = 1;
        float *planned = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, 2, 2);
        g_panel = 48;
        float *paneled = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, 2, 2);
        g_panel = 0;
        g_plan_wino = 2;
        float *other = conv_run(c, x, w, b, NULL, BD_ACT_NONE, 0, 0, BD_RES_NONE, 2, 2);
        g_plan_wino = 0;
        size_t nb = (size_t)ny * sizeof(float);
        CHECK_EQ_INT(count_bad(planned, ref, ny), 0);
        CHECK_EQ_INT(count_bad(plain, ref, ny), 0);
        CHECK_EQ_INT(memcmp(planned, plain, nb) == 0, which || !can); /* small: Winograd only when planned */
        CHECK(memcmp(paneled, planned, nb) == 0);
        CHECK(memcmp(other, plain, nb) == 0);
        free(x), free(w), free(b), free(ref), free(plain), free(planned), free(paneled), free(other);
    }
}

int main(void)
{
    (void)run, (void)done; /* optest.h's harness: these tests call the kernel themselves */
    test_cases_vs_naive();
    test_winograd_ran();
    test_winograd_planned();
    test_epilogues();
    test_threads_bitwise();
    test_panels();
    return check_done();
}
