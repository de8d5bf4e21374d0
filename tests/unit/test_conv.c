/* test_conv.c: the conv family (Conv, ConvTranspose) on hand-built nodes:
 * values computed by hand, every kernel path (im2col, 1x1, depthwise) against
 * a naive loop, ConvTranspose as the adjoint of Conv, auto_pad geometry,
 * float16/bfloat16 against float32 rounded once, and the errors for bad
 * weights, dtypes and attributes. */
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "backend/cpu/ops/fbuf.h"
#include "ops/conv.h"

/* Naive 2-D grouped convolution, straight from the definition. */
static void naive_conv2d(const float *x, const float *w, const float *b, float *y, int64_t n,
                         int64_t c, int64_t h, int64_t wd, int64_t m, int64_t kh, int64_t kw,
                         int64_t group, const int64_t *s, const int64_t *d, const int64_t *pads,
                         int64_t oh, int64_t ow)
{
    int64_t cg = c / group, mg = m / group;
    for (int64_t ni = 0; ni < n; ni++)
        for (int64_t mi = 0; mi < m; mi++)
            for (int64_t yi = 0; yi < oh; yi++)
                for (int64_t xi = 0; xi < ow; xi++) {
                    double acc = b ? b[mi] : 0;
                    for (int64_t ci = 0; ci < cg; ci++)
                        for (int64_t a = 0; a < kh; a++)
                            for (int64_t bb = 0; bb < kw; bb++) {
                                int64_t iy = yi * s[0] - pads[0] + a * d[0];
                                int64_t ix = xi * s[1] - pads[1] + bb * d[1];
                                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                                int64_t cin = (mi / mg) * cg + ci;
                                acc += x[((ni * c + cin) * h + iy) * wd + ix] *
                                       w[((mi * cg + ci) * kh + a) * kw + bb];
                            }
                    y[((ni * m + mi) * oh + yi) * ow + xi] = (float)acc;
                }
}

/* ---- tests -------------------------------------------------------------------- */

/* A 3x3 image [1..9] and the 2x2 kernel [[1,2],[3,4]]: each output is the sum
 * of a 2x2 window times the kernel, e.g. 1*1 + 2*2 + 4*3 + 5*4 = 37. */
static void test_by_hand(void)
{
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4}, b[1] = {1};
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2}, bd[1] = {1};
    bd_tensor in[3] = {tensor(F32, 4, xd, x), tensor(F32, 4, wd, w), tensor(F32, 1, bd, b)}, out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 3, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 4);
    CHECK_EQ_INT(out.dims[2], 2);
    CHECK_EQ_INT(out.dims[3], 2);
    const float want[4] = {38, 48, 68, 78}; /* 37, 47, 67, 77 plus the bias 1 */
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 1e-6, 0);
    done(&t.n, &out);

    /* pads 1 and stride 2: the windows start at -1 and 1, so the corner sees
     * only x[0][0] under k[1][1] (1*4), the next only x[0][1..2] under k[1][..]. */
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {2, 2};
    attr_ints(&t, "pads", 4, pads);
    attr_ints(&t, "strides", 2, strides);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[2], 2);
    const float want2[4] = {4, 2 * 3 + 3 * 4, 4 * 2 + 7 * 4, 5 * 1 + 6 * 2 + 8 * 3 + 9 * 4};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], want2[i], 1e-6, 0);
    done(&t.n, &out);

    /* ConvTranspose of [[1,2],[3,4]] with a 2x2 kernel of ones: stride 1 sums
     * the overlapping copies; stride 2 lays them side by side. */
    float xt[4] = {1, 2, 3, 4}, ones[4] = {1, 1, 1, 1};
    int64_t xtd[4] = {1, 1, 2, 2};
    bd_tensor tin[2] = {tensor(F32, 4, xtd, xt), tensor(F32, 4, wd, ones)};
    tnode_init(&t, BD_OP_ConvTranspose, 17, 2, 1);
    CHECK_EQ_INT(run(&t.n, tin, &out, &e), BRAID_OK);
    const float want3[9] = {1, 3, 2, 4, 10, 6, 3, 7, 4};
    CHECK_EQ_INT(out.dims[2], 3);
    for (int i = 0; i < 9; i++) CHECK_NEAR(((float *)out.data)[i], want3[i], 1e-6, 0);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_ConvTranspose, 17, 2, 1);
    attr_ints(&t, "strides", 2, strides);
    CHECK_EQ_INT(run(&t.n, tin, &out, &e), BRAID_OK);
    const float want4[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    CHECK_EQ_INT(out.dims[3], 4);
    for (int i = 0; i < 16; i++) CHECK_NEAR(((float *)out.data)[i], want4[i], 1e-6, 0);
    done(&t.n, &out);
}

/* Random convolutions through each path, against the naive loop (1e-4: float
 * sums of at most 54 terms of size ~1 in a different order). */
static void test_paths_vs_naive(void)
{
    struct {
        int64_t n, c, h, w, m, kh, kw, group, s[2], d[2], pads[4];
        const char *what;
    } cases[] = {
        {2, 6, 9, 11, 4, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, "im2col 3x3"},
        {1, 6, 10, 7, 4, 3, 2, 2, {2, 1}, {1, 2}, {0, 2, 1, 0}, "grouped, strided, dilated"},
        {2, 8, 5, 6, 5, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, "1x1 direct GEMM"},
        {1, 8, 5, 6, 6, 1, 1, 2, {2, 2}, {1, 1}, {0, 0, 0, 0}, "1x1 strided"},
        {2, 5, 9, 8, 5, 3, 3, 5, {1, 1}, {1, 1}, {1, 1, 1, 1}, "depthwise 3x3"},
        {1, 4, 11, 9, 8, 3, 3, 4, {2, 2}, {2, 1}, {2, 0, 1, 1}, "depthwise x2, strided"},
        /* one input channel through long windows at few places (an STFT): im2col + SGEMM */
        {1, 1, 1, 640, 258, 1, 256, 1, {1, 128}, {1, 1}, {0, 0, 0, 0}, "STFT-like 1x256 stride 128"},
        {2, 1, 7, 40, 9, 5, 8, 1, {2, 16}, {1, 1}, {1, 3, 1, 2}, "long windows 5x8, padded, batch 2"},
    };
    unsigned seed = 7;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        __typeof__(cases[0]) *c = &cases[ci];
        int64_t xd[4] = {c->n, c->c, c->h, c->w}, wd[4] = {c->m, c->c / c->group, c->kh, c->kw};
        int64_t bd[1] = {c->m};
        float *x = randn(c->n * c->c * c->h * c->w, &seed);
        float *w = randn(wd[0] * wd[1] * wd[2] * wd[3], &seed), *b = randn(c->m, &seed);
        bd_tensor in[3] = {tensor(F32, 4, xd, x), tensor(F32, 4, wd, w), tensor(F32, 1, bd, b)}, out = {0};
        bd_err e = {0};
        tnode t;
        tnode_init(&t, BD_OP_Conv, 17, 3, 1);
        attr_int(&t, "group", c->group);
        attr_ints(&t, "strides", 2, c->s);
        attr_ints(&t, "dilations", 2, c->d);
        attr_ints(&t, "pads", 4, c->pads);
        CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
        int64_t oh = out.dims[2], ow = out.dims[3], ny = bd_numel(&out);
        CHECK_EQ_INT(oh, (c->h + c->pads[0] + c->pads[2] - (c->kh - 1) * c->d[0] - 1) / c->s[0] + 1);
        float *ref = malloc((size_t)ny * sizeof *ref);
        naive_conv2d(x, w, b, ref, c->n, c->c, c->h, c->w, c->m, c->kh, c->kw, c->group, c->s,
                     c->d, c->pads, oh, ow);
        int bad = 0;
        for (int64_t i = 0; i < ny; i++)
            bad += !(fabsf(((float *)out.data)[i] - ref[i]) <= 1e-4f + 1e-4f * fabsf(ref[i]));
        if (bad) fprintf(stderr, "case '%s': %d values differ\n", c->what, bad);
        CHECK_EQ_INT(bad, 0);
        done(&t.n, &out);
        free(x), free(w), free(b), free(ref);
    }
}

/* The depthwise loop against the same convolution computed as a group conv
 * with two channels per group through im2col: the 2-channel weights hold the
 * depthwise tap on the channel it reads and zero on the other. */
static void test_depthwise_vs_im2col(void)
{
    const int64_t c = 6, h = 13, wd_ = 10, strides[2][2] = {{1, 1}, {2, 2}};
    const int64_t pads[4] = {1, 1, 1, 1};
    unsigned seed = 3;
    for (int si = 0; si < 2; si++) {
        int64_t xd[4] = {2, c, h, wd_}, dwd[4] = {c, 1, 3, 3}, gwd[4] = {c, 2, 3, 3}, bd[1] = {c};
        float *x = randn(2 * c * h * wd_, &seed), *dw = randn(c * 9, &seed), *b = randn(c, &seed);
        float *gw = calloc((size_t)(c * 2 * 9), sizeof *gw);
        for (int64_t m = 0; m < c; m++) memcpy(gw + (m * 2 + m % 2) * 9, dw + m * 9, 9 * sizeof *gw);
        bd_tensor in1[3] = {tensor(F32, 4, xd, x), tensor(F32, 4, dwd, dw), tensor(F32, 1, bd, b)};
        bd_tensor in2[3] = {tensor(F32, 4, xd, x), tensor(F32, 4, gwd, gw), tensor(F32, 1, bd, b)};
        bd_tensor o1 = {0}, o2 = {0};
        bd_err e = {0};
        tnode t1, t2;
        tnode_init(&t1, BD_OP_Conv, 17, 3, 1);
        attr_int(&t1, "group", c);
        attr_ints(&t1, "pads", 4, pads);
        attr_ints(&t1, "strides", 2, strides[si]);
        tnode_init(&t2, BD_OP_Conv, 17, 3, 1);
        attr_int(&t2, "group", c / 2);
        attr_ints(&t2, "pads", 4, pads);
        attr_ints(&t2, "strides", 2, strides[si]);
        CHECK_EQ_INT(run(&t1.n, in1, &o1, &e), BRAID_OK);
        CHECK_EQ_INT(run(&t2.n, in2, &o2, &e), BRAID_OK);
        CHECK(bd_shape_equal(&o1, &o2));
        double maxdiff = 0;
        for (int64_t i = 0; i < bd_numel(&o1); i++) {
            double dlt = fabs(((float *)o1.data)[i] - ((float *)o2.data)[i]);
            if (!(dlt <= maxdiff)) maxdiff = dlt; /* NaN shows too */
        }
        CHECK_NEAR(maxdiff, 0, 1e-5, 0);
        done(&t1.n, &o1);
        done(&t2.n, &o2);
        free(x), free(dw), free(b), free(gw);
    }
}

/* The depthwise loop split over 4 threads (32 planes of 64x64, 3x3: enough
 * work for 4) gives exactly the single-threaded result. */
static void test_depthwise_threads(void)
{
    const int64_t xd[4] = {1, 32, 64, 64}, wd[4] = {32, 1, 3, 3}, pads[4] = {1, 1, 1, 1};
    unsigned seed = 21;
    float *x = randn(32 * 64 * 64, &seed), *w = randn(32 * 9, &seed);
    bd_tensor in[2] = {tensor(F32, 4, xd, x), tensor(F32, 4, wd, w)}, o1 = {0}, o4 = {0};
    bd_err e = {0};
    tnode t1, t4;
    tnode_init(&t1, BD_OP_Conv, 17, 2, 1);
    attr_int(&t1, "group", 32);
    attr_ints(&t1, "pads", 4, pads);
    t4 = t1;
    t4.n.attrs = t4.attrs;
    t4.n.in = t4.in;
    t4.n.out = t4.out;
    t4.attrs[1].ints = t4.ints[1];
    CHECK_EQ_INT(run(&t1.n, in, &o1, &e), BRAID_OK);
    g_threads = 4;
    CHECK_EQ_INT(run(&t4.n, in, &o4, &e), BRAID_OK);
    g_threads = 1;
    CHECK(memcmp(o1.data, o4.data, (size_t)bd_numel(&o1) * sizeof(float)) == 0);
    done(&t1.n, &o1);
    done(&t4.n, &o4);
    free(x), free(w);
}

/* ConvTranspose with weights W is the adjoint of Conv with W:
 * <Conv(x), y> == <x, ConvTranspose(y)> (sizes chosen so the shapes match). */
static void test_transpose_is_adjoint(void)
{
    const int64_t strides[2] = {2, 3}, dil[2] = {1, 2}, pads[4] = {1, 2, 0, 1};
    /* (10 + 1 - 3) and (14 + 3 - 5) are multiples of the strides, so no output_padding is needed */
    const int64_t xd[4] = {1, 4, 10, 14}, wd[4] = {6, 2, 3, 3}; /* group 2 */
    unsigned seed = 11;
    float *x = randn(4 * 10 * 14, &seed), *w = randn(6 * 2 * 9, &seed);
    bd_tensor in[2] = {tensor(F32, 4, xd, x), tensor(F32, 4, wd, w)}, y = {0}, xt = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    attr_int(&t, "group", 2);
    attr_ints(&t, "strides", 2, strides);
    attr_ints(&t, "dilations", 2, dil);
    attr_ints(&t, "pads", 4, pads);
    CHECK_EQ_INT(run(&t.n, in, &y, &e), BRAID_OK);
    float *r = randn(bd_numel(&y), &seed);
    bd_tensor tin[2] = {tensor(F32, 4, y.dims, r), tensor(F32, 4, wd, w)};
    tnode tt;
    tnode_init(&tt, BD_OP_ConvTranspose, 17, 2, 1);
    attr_int(&tt, "group", 2);
    attr_ints(&tt, "strides", 2, strides);
    attr_ints(&tt, "dilations", 2, dil);
    attr_ints(&tt, "pads", 4, pads);
    CHECK_EQ_INT(run(&tt.n, tin, &xt, &e), BRAID_OK);
    CHECK_EQ_INT(xt.dims[1], 4);
    CHECK_EQ_INT(xt.dims[2], 10);
    CHECK_EQ_INT(xt.dims[3], 14);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < bd_numel(&y); i++) lhs += (double)((float *)y.data)[i] * r[i];
    for (int64_t i = 0; i < bd_numel(&xt); i++) rhs += (double)((float *)xt.data)[i] * x[i];
    CHECK_NEAR(rhs, lhs, 1e-3, 1e-5);
    done(&t.n, &y);
    done(&tt.n, &xt);
    free(x), free(w), free(r);
}

/* auto_pad: a 5-wide input, kernel 2, stride 2 gives ceil(5/2) = 3 outputs
 * and needs (3-1)*2 + 2 - 5 = 1 pad, at the end (UPPER) or the start (LOWER). */
static void test_auto_pad(void)
{
    const int64_t xd[4] = {1, 1, 5, 5}, wd[4] = {1, 1, 2, 2}, strides[2] = {2, 2};
    bd_tensor x = tensor(F32, 4, xd, NULL), w = tensor(F32, 4, wd, NULL);
    const char *modes[3] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    const int64_t want_pb[3] = {0, 1, 0}, want_pe[3] = {1, 0, 0}, want_y[3] = {3, 3, 2};
    for (int i = 0; i < 3; i++) {
        tnode t;
        bd_conv_geom g;
        bd_err e = {0};
        tnode_init(&t, BD_OP_Conv, 17, 2, 1);
        attr_str(&t, "auto_pad", modes[i]);
        attr_ints(&t, "strides", 2, strides);
        CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
        CHECK_EQ_INT(bd_conv_geometry(&t.n, &x, &w, NULL, &g, &e), BRAID_OK);
        CHECK_EQ_INT(g.y[0], want_y[i]);
        CHECK_EQ_INT(g.pb[1], want_pb[i]);
        CHECK_EQ_INT(g.pe[1], want_pe[i]);
        bd_free(t.n.params);
    }
}

static void test_errors(void)
{
    int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {2, 3, 3, 3};
    bd_tensor in[2] = {tensor(F32, 4, xd, NULL), tensor(F32, 4, wd, NULL)}, out = {0};
    bd_err e = {0};
    tnode t;

    /* W says 3 input channels per group, X has 4 channels. */
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "3 input channels per group");
    CHECK_CONTAINS(e.msg, "4 channels");
    bd_free(t.n.params);

    /* group 2 needs 2 per group. */
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    attr_int(&t, "group", 2);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "group is 2, which needs 2 per group");
    bd_free(t.n.params);

    /* float, float16 and bfloat16 only: another type for X (double) is
     * UNSUPPORTED; W disagreeing with X is DTYPE, a float16 X with float W too. */
    bd_tensor ini[2] = {in[0], in[1]};
    ini[0].dtype = BRAID_DTYPE_DOUBLE;
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, ini, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "float64");
    ini[0].dtype = BRAID_DTYPE_FLOAT;
    ini[1].dtype = BRAID_DTYPE_INT64;
    CHECK_EQ_INT(bd_op_infer(&t.n, ini, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "W is int64");
    ini[0].dtype = BRAID_DTYPE_FLOAT16;
    ini[1].dtype = BRAID_DTYPE_FLOAT;
    CHECK_EQ_INT(bd_op_infer(&t.n, ini, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input X is float16 but W is float32");
    bd_free(t.n.params);

    /* Bias of the wrong length. */
    int64_t wd2[4] = {2, 4, 3, 3}, bd[1] = {3};
    bd_tensor inb[3] = {in[0], tensor(F32, 4, wd2, NULL), tensor(F32, 1, bd, NULL)};
    tnode_init(&t, BD_OP_Conv, 17, 3, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, inb, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "bias B has shape 3");
    bd_free(t.n.params);

    /* Attributes: an unknown auto_pad, a zero stride, a pads list of the wrong length. */
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    attr_str(&t, "auto_pad", "SAME");
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'SAME'");
    CHECK(t.n.params == NULL);
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    const int64_t zero[2] = {1, 0};
    attr_ints(&t, "strides", 2, zero);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "strides");
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    const int64_t pads3[2] = {1, 1};
    attr_ints(&t, "pads", 2, pads3);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, (bd_tensor[]){in[0], tensor(F32, 4, wd2, NULL)}, &out, &e),
                 BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "'pads' has 2 values");
    bd_free(t.n.params);

    /* A kernel larger than the padded input. */
    int64_t wbig[4] = {2, 4, 7, 3};
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, (bd_tensor[]){in[0], tensor(F32, 4, wbig, NULL)}, &out, &e),
                 BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "kernel spans 7");
    bd_free(t.n.params);

    /* Four spatial dims. */
    int64_t x6[6] = {1, 1, 2, 2, 2, 2}, w6[6] = {1, 1, 1, 1, 1, 1};
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, (bd_tensor[]){tensor(F32, 6, x6, NULL), tensor(F32, 6, w6, NULL)}, &out,
                             &e), BRAID_ERR_UNSUPPORTED);
    bd_free(t.n.params);
}

/* float16 and bfloat16 Conv and ConvTranspose: the output has X's dtype and
 * is, bit for bit, the float32 convolution of the widened inputs rounded
 * once (what onnx's reference computes: numpy's half dot products sum in
 * float32), and within half a unit in the last place of a double-precision
 * naive sum for Conv. Cases: grouped, strided, padded; depthwise; a batch of
 * zero images; ConvTranspose with output_padding. */
static void test_half(void)
{
    const int dts[2] = {BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16};
    struct {
        int op;
        int64_t xd[4], wd[4], group, s[2], pads[4];
    } cases[] = {
        {BD_OP_Conv, {2, 4, 7, 6}, {6, 2, 3, 3}, 2, {2, 1}, {1, 0, 1, 2}},
        {BD_OP_Conv, {1, 3, 5, 5}, {3, 1, 3, 3}, 3, {1, 1}, {1, 1, 1, 1}},
        {BD_OP_Conv, {0, 3, 5, 5}, {2, 3, 2, 2}, 1, {1, 1}, {0, 0, 0, 0}},
        {BD_OP_ConvTranspose, {1, 4, 3, 4}, {4, 3, 3, 2}, 1, {2, 2}, {1, 0, 0, 1}},
    };
    unsigned seed = 5;
    for (int di = 0; di < 2; di++)
        for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
            __typeof__(cases[0]) *c = &cases[ci];
            int dt = dts[di], tr = c->op == BD_OP_ConvTranspose;
            int64_t nx = c->xd[0] * c->xd[1] * c->xd[2] * c->xd[3], nw = c->wd[0] * c->wd[1] * c->wd[2] * c->wd[3];
            int64_t m = tr ? c->wd[1] * c->group : c->wd[0], bdim[1] = {m};
            float *x = randn(nx, &seed), *w = randn(nw, &seed), *b = randn(m, &seed);
            uint16_t *xh = malloc((size_t)(nx + 1) * 2), *wh = malloc((size_t)nw * 2), *bh = malloc((size_t)m * 2);
            bd_narrow(x, xh, dt, nx), bd_narrow(w, wh, dt, nw), bd_narrow(b, bh, dt, m);
            bd_widen(xh, dt, x, nx), bd_widen(wh, dt, w, nw), bd_widen(bh, dt, b, m); /* the values as stored */
            bd_tensor hin[3] = {tensor(dt, 4, c->xd, xh), tensor(dt, 4, c->wd, wh), tensor(dt, 1, bdim, bh)};
            bd_tensor fin[3] = {tensor(F32, 4, c->xd, x), tensor(F32, 4, c->wd, w), tensor(F32, 1, bdim, b)};
            bd_tensor ho = {0}, fo = {0};
            bd_err e = {0};
            tnode th, tf;
            const int64_t opad[2] = {1, 0};
            tnode *ts[2] = {&th, &tf};
            for (int q = 0; q < 2; q++) {
                tnode_init(ts[q], c->op, 22, 3, 1);
                attr_int(ts[q], "group", c->group);
                attr_ints(ts[q], "strides", 2, c->s);
                attr_ints(ts[q], "pads", 4, c->pads);
                if (tr) attr_ints(ts[q], "output_padding", 2, opad);
            }
            CHECK_EQ_INT(run(&th.n, hin, &ho, &e), BRAID_OK);
            CHECK_EQ_INT(run(&tf.n, fin, &fo, &e), BRAID_OK);
            CHECK_EQ_INT(ho.dtype, dt);
            CHECK_EQ_INT(ho.rank, 4);
            for (int d = 0; d < 4; d++) CHECK_EQ_INT(ho.dims[d], fo.dims[d]);
            int64_t ny = bd_numel(&ho);
            uint16_t *want = malloc((size_t)(ny + 1) * 2);
            bd_narrow(fo.data, want, dt, ny);
            int bad = 0;
            for (int64_t i = 0; i < ny; i++) bad += ((uint16_t *)ho.data)[i] != want[i];
            CHECK_EQ_INT(bad, 0);
            if (!tr && ny) { /* against a double-precision sum: within one rounding of the half type */
                float *ref = malloc((size_t)ny * sizeof *ref), *got = malloc((size_t)ny * sizeof *got);
                const int64_t dil[2] = {1, 1}, pb[2] = {c->pads[0], c->pads[1]};
                naive_conv2d(x, w, b, ref, c->xd[0], c->xd[1], c->xd[2], c->xd[3], m, c->wd[2], c->wd[3], c->group,
                             c->s, dil, pb, ho.dims[2], ho.dims[3]);
                bd_widen(ho.data, dt, got, ny);
                double ulp = dt == BRAID_DTYPE_FLOAT16 ? 1.0 / 1024 : 1.0 / 128;
                for (int64_t i = 0; i < ny; i++) bad += !(fabsf(got[i] - ref[i]) <= ulp * (fabsf(ref[i]) + 1e-3));
                CHECK_EQ_INT(bad, 0);
                free(ref), free(got);
            }
            done(&th.n, &ho);
            done(&tf.n, &fo);
            free(x), free(w), free(b), free(xh), free(wh), free(bh), free(want);
        }
}

/* With fault injection, the im2col buffer's allocation failing is reported
 * as OUT_OF_MEMORY. */
static void test_out_of_memory(void)
{
#ifdef BRAID_FAULT_INJECTION
    float x2[18] = {0}, w8[8] = {0}, y[4];
    int64_t x2d[4] = {1, 2, 3, 3}, wd1[4] = {1, 2, 2, 2}; /* 2 channels: not depthwise */
    bd_tensor in[2] = {tensor(F32, 4, x2d, x2), tensor(F32, 4, wd1, w8)}, out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Conv, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, in, &out, &e), BRAID_OK);
    out.data = y;
    bd_kernel k = {.node = &t.n, .in = in, .n_in = 2, .out = &out, .n_out = 1, .threads = 1,
                   .err = &e};
    bd_fault_arm(1);
    CHECK_EQ_INT(bd_cpu_run(&k), BRAID_ERR_OUT_OF_MEMORY);
    bd_fault_arm(0);
    CHECK_EQ_INT(bd_cpu_run(&k), BRAID_OK);
    bd_free(t.n.params);
    t.n.params = NULL;
    bd_fault_arm(1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_OUT_OF_MEMORY);
    bd_fault_arm(0);
#endif
}

int main(void)
{
    test_by_hand();
    test_paths_vs_naive();
    test_depthwise_vs_im2col();
    test_depthwise_threads();
    test_transpose_is_adjoint();
    test_auto_pad();
    test_errors();
    test_half();
    test_out_of_memory();
    return check_done();
}
