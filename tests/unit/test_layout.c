/* test_layout.c: the layout family (Slice, Gather, Pad, Transpose, Concat,
 * Split, Expand, Tile, DepthToSpace, SpaceToDepth, CenterCropPad): inferred shapes and kernel outputs against plain
 * reference loops, on several element sizes; exact, since values are moved. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>



static void test_slice(void)
{
    /* x = 0..59 as 3x4x5 (float32) */
    float x[60];
    for (int i = 0; i < 60; i++) x[i] = (float)i;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* axis 2 reversed with step -2 from INT64_MAX (clamped to 4) to INT64_MIN
     * (clamped to -1): indices 4, 2, 0; axis 0: start -2 (= 1) to 1000
     * (clamped to 3), step 1: indices 1, 2. */
    int64_t starts[] = {INT64_MAX, -2}, ends[] = {INT64_MIN, 1000}, axes[] = {-1, 0},
            steps[] = {-2, 1};
    bd_tensor in[5] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = x},
                       ints1(starts, 2), ints1(ends, 2), ints1(axes, 2), ints1(steps, 2)};
    bd_node n = op_node(BD_OP_Slice, 13, 5, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 4);
    CHECK_EQ_INT(out[0].dims[2], 3);
    const float *y = out[0].data;
    int ok = 1;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 3; c++)
                ok &= y[(a * 4 + b) * 3 + c] == x[(a + 1) * 20 + b * 5 + (4 - 2 * c)];
    CHECK(ok);
    done(&n, out);

    /* step -1 from -1 to -4 on axis 1 (int8): indices 3, 2, 1 */
    int8_t xb[12];
    for (int i = 0; i < 12; i++) xb[i] = (int8_t)(i * 3 - 20);
    int64_t s2[] = {-1}, e2[] = {-4}, a2[] = {1}, st2[] = {-1};
    bd_tensor in2[5] = {{.dtype = BRAID_DTYPE_INT8, .rank = 2, .dims = {3, 4}, .data = xb},
                        ints1(s2, 1), ints1(e2, 1), ints1(a2, 1), ints1(st2, 1)};
    n = op_node(BD_OP_Slice, 13, 5, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[1], 3);
    ok = 1;
    for (int a = 0; a < 3; a++)
        for (int c = 0; c < 3; c++) ok &= ((int8_t *)out[0].data)[a * 3 + c] == xb[a * 4 + 3 - c];
    CHECK(ok);
    done(&n, out);

    /* an empty slice: start past the end */
    int64_t s3[] = {10}, e3[] = {20};
    bd_tensor in3[3] = {in2[0], ints1(s3, 1), ints1(e3, 1)};
    n = op_node(BD_OP_Slice, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    done(&n, out);

    /* step 0 is refused */
    int64_t z[] = {0};
    in2[4] = ints1(z, 1);
    n = op_node(BD_OP_Slice, 13, 5, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
}

/* Step 2 on the last axis of float rows (YOLO's space-to-depth; the
 * AVX-512 gather of every second float): starts 0 and 1, widths around the
 * vector's 16 and its tail, every row right; each input is its own
 * allocation of exactly its size, so a read past its end shows under ASan. */
static void test_slice_step2(void)
{
    const int64_t widths[] = {1, 2, 15, 16, 17, 31, 32, 33, 34, 35, 63, 64, 65, 416};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int bad = 0, runs = 0;
    for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)
        for (int64_t start = 0; start < 2; start++) {
            int64_t w = widths[wi], rows = 3;
            float *x = malloc((size_t)(rows * w) * sizeof *x);
            for (int64_t i = 0; i < rows * w; i++) x[i] = (float)i + 0.5f;
            int64_t st[] = {start}, en[] = {INT64_MAX}, ax[] = {-1}, sp[] = {2};
            bd_tensor in[5] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, w}, .data = x},
                               ints1(st, 1), ints1(en, 1), ints1(ax, 1), ints1(sp, 1)};
            bd_node n = op_node(BD_OP_Slice, 13, 5, 1, NULL, 0);
            CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
            int64_t ow = (w - start + 1) / 2;
            CHECK_EQ_INT(out[0].dims[1], ow);
            const float *y = out[0].data;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t c = 0; c < ow; c++) bad += y[r * ow + c] != x[r * w + start + 2 * c];
            runs++;
            done(&n, out);
            free(x);
        }
    CHECK_EQ_INT(runs, 28);
    CHECK_EQ_INT(bad, 0);
}

static void test_gather(void)
{
    int64_t x[12];
    for (int i = 0; i < 12; i++) x[i] = 100 + i;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* axis 1 of 3x4 with int32 indices (-1, 0, -4, 2) -> 3x4 */
    int32_t idx[] = {-1, 0, -4, 2};
    bd_attr ax = {.name = "axis", .type = BD_ATTR_INT, .i = 1};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_INT64, .rank = 2, .dims = {3, 4}, .data = x},
                       {.dtype = BRAID_DTYPE_INT32, .rank = 1, .dims = {4}, .data = idx}};
    bd_node n = op_node(BD_OP_Gather, 13, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    int want_col[] = {3, 0, 0, 2};
    int ok = 1;
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 4; j++) ok &= ((int64_t *)out[0].data)[r * 4 + j] == x[r * 4 + want_col[j]];
    CHECK(ok);
    done(&n, out);

    /* axis 0 with 2-D int64 indices (-1, 1; 0, -3) -> 2x2x4 */
    int64_t idx2[] = {-1, 1, 0, -3};
    bd_tensor in2[2] = {in[0], {.dtype = BRAID_DTYPE_INT64, .rank = 2, .dims = {2, 2}, .data = idx2}};
    n = op_node(BD_OP_Gather, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    int rows[] = {2, 1, 0, 0};
    ok = 1;
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 4; c++) ok &= ((int64_t *)out[0].data)[i * 4 + c] == x[rows[i] * 4 + c];
    CHECK(ok);
    done(&n, out);

    /* an index out of range is an error at run time */
    int64_t idx3[] = {3};
    bd_tensor in3[2] = {in[0], ints1(idx3, 1)};
    n = op_node(BD_OP_Gather, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "index 3 is out of range");
    done(&n, out);
}

static void test_pad(void)
{
    /* reflect: [[1,2,3],[4,5,6]] padded (1, 2) before and (0, 1) after on (rows, cols):
     * numpy.pad(x, ((1,0),(2,1)), 'reflect') */
    int32_t x[] = {1, 2, 3, 4, 5, 6};
    int32_t want[] = {6, 5, 4, 5, 6, 5,
                      3, 2, 1, 2, 3, 2,
                      6, 5, 4, 5, 6, 5};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    bd_attr mode = {.name = "mode", .type = BD_ATTR_STRING, .s = "reflect"};
    int64_t pads[] = {1, 2, 0, 1};
    bd_tensor in[4] = {{.dtype = BRAID_DTYPE_INT32, .rank = 2, .dims = {2, 3}, .data = x},
                       ints1(pads, 4)};
    bd_node n = op_node(BD_OP_Pad, 13, 2, 1, &mode, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK_EQ_INT(out[0].dims[1], 6);
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);

    /* constant 9 with a negative pad (crop) and opset-18 axes (-1 only):
     * cols padded 1 before, cropped 1 after: [[9,1,2],[9,4,5]] */
    int32_t nine = 9;
    int64_t p2[] = {1, -1}, ax2[] = {-1};
    int32_t want2[] = {9, 1, 2, 9, 4, 5};
    bd_tensor in2[4] = {in[0], ints1(p2, 2),
                        {.dtype = BRAID_DTYPE_INT32, .rank = 0, .data = &nine}, ints1(ax2, 1)};
    n = op_node(BD_OP_Pad, 18, 4, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want2, sizeof want2) == 0);
    done(&n, out);

    /* edge, before opset 11 (pads attribute) */
    int64_t p3[] = {0, 1, 1, 0};
    bd_attr at3[] = {{.name = "mode", .type = BD_ATTR_STRING, .s = "edge"},
                     {.name = "pads", .type = BD_ATTR_INTS, .n = 4, .ints = p3}};
    int32_t want3[] = {1, 1, 2, 3, 4, 4, 5, 6, 4, 4, 5, 6};
    n = op_node(BD_OP_Pad, 2, 1, 1, at3, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want3, sizeof want3) == 0);
    done(&n, out);
}

/* Pads wider than the data: wrap and reflect repeat (numpy.pad, which onnx's
 * reference calls): np.pad(x, ((3, 1), (4, 5)), 'wrap') and
 * np.pad(x, ((0, 0), (5, 4)), 'reflect') of x = [[1, 2, 3], [4, 5, 6]]. */
static void test_pad_wide(void)
{
    int32_t x[] = {1, 2, 3, 4, 5, 6};
    int32_t wrap[] = {6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2,
                      6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2,
                      6, 4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2};
    int32_t refl[] = {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 5, 4, 5, 6, 5, 4, 5, 6, 5, 4, 5, 6};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t pw[] = {3, 4, 1, 5}, pr[] = {0, 5, 0, 4};
    bd_attr mw = {.name = "mode", .type = BD_ATTR_STRING, .s = "wrap"}, mr = {.name = "mode", .type = BD_ATTR_STRING, .s = "reflect"};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){2, 3}, x), ints1(pw, 4)};
    bd_node n = op_node(BD_OP_Pad, 19, 2, 1, &mw, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 6);
    CHECK_EQ_INT(out[0].dims[1], 12);
    CHECK(memcmp(out[0].data, wrap, sizeof wrap) == 0);
    done(&n, out);
    in[1] = ints1(pr, 4);
    n = op_node(BD_OP_Pad, 19, 2, 1, &mr, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, refl, sizeof refl) == 0);
    done(&n, out);
    /* an empty axis cannot be wrapped */
    in[0].dims[1] = 0;
    n = op_node(BD_OP_Pad, 19, 2, 1, &mw, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

/* Transpose (0, 2, 3, 1) of an N x C x H x W tensor against the definition
 * y[n][h][w][c] = x[n][c][h][w], for element sizes 4, 1 and 8 and a shape
 * big enough for the tiled path. */
#define CHECK_NHWC(T, DT, N, C, H, W)                                                              \
    do {                                                                                           \
        T *x_ = malloc(sizeof(T) * N * C * H * W);                                                 \
        for (int i = 0; i < N * C * H * W; i++) x_[i] = (T)(i * 7 + 3);                            \
        int64_t perm_[] = {0, 2, 3, 1};                                                            \
        bd_attr p_ = {.name = "perm", .type = BD_ATTR_INTS, .n = 4, .ints = perm_};                \
        bd_tensor in_[1] = {{.dtype = DT, .rank = 4, .dims = {N, C, H, W}, .data = x_}};           \
        bd_tensor out_[1] = {0};                                                                   \
        bd_err e_ = {0};                                                                           \
        bd_node n_ = op_node(BD_OP_Transpose, 13, 1, 1, &p_, 1);                                        \
        CHECK_EQ_INT(run(&n_, in_, out_, &e_), BRAID_OK);                                          \
        CHECK_EQ_INT(out_[0].dims[1], H);                                                          \
        CHECK_EQ_INT(out_[0].dims[3], C);                                                          \
        int ok_ = 1;                                                                               \
        const T *y_ = out_[0].data;                                                                \
        for (int n = 0; n < N; n++)                                                                \
            for (int c = 0; c < C; c++)                                                            \
                for (int h = 0; h < H; h++)                                                        \
                    for (int w = 0; w < W; w++)                                                    \
                        ok_ &= y_[((n * H + h) * W + w) * C + c] == x_[((n * C + c) * H + h) * W + w]; \
        CHECK(ok_);                                                                                \
        done(&n_, out_);                                                                           \
        free(x_);                                                                                  \
    } while (0)

static void test_transpose(void)
{
    CHECK_NHWC(float, BRAID_DTYPE_FLOAT, 2, 3, 2, 2);
    CHECK_NHWC(float, BRAID_DTYPE_FLOAT, 2, 37, 9, 11);
    CHECK_NHWC(uint8_t, BRAID_DTYPE_UINT8, 1, 16, 5, 7);
    CHECK_NHWC(int64_t, BRAID_DTYPE_INT64, 3, 40, 6, 6);

    /* the 2x2x2x... small case, numbers written out: x = 0..11 as 1x3x2x2 */
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)i;
    float want[] = {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11};
    int64_t perm[] = {0, 2, 3, 1};
    bd_attr p = {.name = "perm", .type = BD_ATTR_INTS, .n = 4, .ints = perm};
    bd_tensor in[1] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {1, 3, 2, 2}, .data = x}};
    bd_tensor out[1] = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Transpose, 13, 1, 1, &p, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);

    /* default perm reverses: 2x3 -> 3x2 */
    int16_t m[] = {1, 2, 3, 4, 5, 6}, mt[] = {1, 4, 2, 5, 3, 6};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT16, .rank = 2, .dims = {2, 3}, .data = m};
    n = op_node(BD_OP_Transpose, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK(memcmp(out[0].data, mt, sizeof mt) == 0);
    done(&n, out);
}

/* Transpose of a float (N, A, B, C) by perm, exactly against index math at
 * 1 and 3 threads: the NHWC transposes both ways (register-tiled 2-D
 * transposes, C = 3 interleaved), the swap of the last two axes, and the
 * channel counts and planes that leave rims (not multiples of 8 or 16). */
static int transpose_matches(const int64_t *d, const int64_t *perm)
{
    int64_t n = d[0] * d[1] * d[2] * d[3], st[4] = {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}, od[4];
    float *x = malloc(sizeof *x * (size_t)n), *want = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)i * 0.5f - 7.0f;
    for (int i = 0; i < 4; i++) od[i] = d[perm[i]];
    int64_t o = 0;
    for (int64_t a = 0; a < od[0]; a++)
        for (int64_t b = 0; b < od[1]; b++)
            for (int64_t c = 0; c < od[2]; c++)
                for (int64_t e = 0; e < od[3]; e++)
                    want[o++] = x[a * st[perm[0]] + b * st[perm[1]] + c * st[perm[2]] + e * st[perm[3]]];
    bd_attr pa = attr_is("perm", (int64_t *)perm, 4);
    bd_tensor in[1] = {tensor(BRAID_DTYPE_FLOAT, 4, d, x)};
    int ok = 1;
    for (int t = 1; t <= 3; t += 2) {
        bd_err e = {0};
        bd_tensor out[1] = {0};
        bd_node nd = op_node(BD_OP_Transpose, 13, 1, 1, &pa, 1);
        g_threads = t;
        ok &= run(&nd, in, out, &e) == BRAID_OK && memcmp(out[0].data, want, sizeof *x * (size_t)n) == 0;
        done(&nd, out);
    }
    g_threads = 1;
    if (!ok)
        fprintf(stderr, "transpose %lldx%lldx%lldx%lld perm %lld%lld%lld%lld differs\n", (long long)d[0], (long long)d[1],
                (long long)d[2], (long long)d[3], (long long)perm[0], (long long)perm[1], (long long)perm[2],
                (long long)perm[3]);
    free(x);
    free(want);
    return ok;
}

static void test_transpose_fast(void)
{
    static const int64_t to_nhwc[] = {0, 2, 3, 1}, to_nchw[] = {0, 3, 1, 2}, swap[] = {0, 1, 3, 2};
    static const int64_t chans[] = {2, 3, 5, 8, 15, 16, 17, 33, 64};
    static const int64_t planes[][2] = {{1, 1}, {4, 4}, {7, 9}, {16, 16}, {13, 37}, {64, 65}};
    for (size_t c = 0; c < sizeof chans / sizeof *chans; c++)
        for (size_t p = 0; p < sizeof planes / sizeof *planes; p++) {
            int64_t nchw[4] = {1 + (int64_t)(c + p) % 2, chans[c], planes[p][0], planes[p][1]};
            int64_t nhwc[4] = {nchw[0], nchw[2], nchw[3], nchw[1]};
            CHECK(transpose_matches(nchw, to_nhwc));
            CHECK(transpose_matches(nhwc, to_nchw));
            CHECK(transpose_matches(nchw, swap));
        }
    /* larger planes, split into many tiles */
    CHECK(transpose_matches((int64_t[]){1, 3, 80, 61}, to_nhwc));
    CHECK(transpose_matches((int64_t[]){1, 80, 61, 3}, to_nchw));
    CHECK(transpose_matches((int64_t[]){2, 64, 50, 38}, to_nhwc));
    CHECK(transpose_matches((int64_t[]){2, 50, 38, 64}, to_nchw));
    CHECK(transpose_matches((int64_t[]){1, 7, 300, 200}, to_nhwc));
}

/* Concat and Split on the last axis of (N, H, W, C) parts (the NHWC
 * channel concat: short rows copied part by part in vectors, the last one
 * overlapping when a chunk is not a multiple of 64 bytes), exactly against
 * index math at 1 and 3 threads; a part of 4 channels takes the plain path. */
static void check_concat_last(int64_t N, int64_t H, int64_t W, const int64_t *cs, int parts)
{
    int64_t rows = N * H * W, C = 0;
    for (int i = 0; i < parts; i++) C += cs[i];
    float *src[4], *whole = malloc(sizeof(float) * (size_t)(rows * C));
    bd_tensor in[4];
    for (int i = 0, c0 = 0; i < parts; c0 += (int)cs[i], i++) {
        src[i] = malloc(sizeof(float) * (size_t)(rows * cs[i]));
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < cs[i]; c++) {
                src[i][r * cs[i] + c] = (float)(r * 1000 + c0 + c);
                whole[r * C + c0 + c] = (float)(r * 1000 + c0 + c);
            }
        in[i] = tensor(BRAID_DTYPE_FLOAT, 4, (int64_t[]){N, H, W, cs[i]}, src[i]);
    }
    bd_attr ax = attr_i("axis", 3);
    int ok = 1;
    for (int t = 1; t <= 3; t += 2) {
        bd_err e = {0};
        bd_tensor out[4] = {0};
        g_threads = t;
        bd_node n = op_node(BD_OP_Concat, 13, parts, 1, &ax, 1);
        ok &= run(&n, in, out, &e) == BRAID_OK && memcmp(out[0].data, whole, sizeof(float) * (size_t)(rows * C)) == 0;
        done(&n, out);
        bd_tensor sin[2] = {tensor(BRAID_DTYPE_FLOAT, 4, (int64_t[]){N, H, W, C}, whole), ints1((int64_t *)cs, parts)};
        n = op_node(BD_OP_Split, 13, 2, parts, &ax, 1);
        ok &= run(&n, sin, out, &e) == BRAID_OK;
        for (int i = 0; ok && i < parts; i++) ok &= memcmp(out[i].data, src[i], sizeof(float) * (size_t)(rows * cs[i])) == 0;
        done(&n, out);
    }
    g_threads = 1;
    CHECK(ok);
    for (int i = 0; i < parts; i++) free(src[i]);
    free(whole);
}

static void test_concat_last(void)
{
    check_concat_last(1, 13, 11, (int64_t[]){96, 96}, 2);
    check_concat_last(2, 9, 10, (int64_t[]){64, 128}, 2);
    check_concat_last(1, 7, 5, (int64_t[]){17, 33, 16}, 3);
    check_concat_last(2, 40, 40, (int64_t[]){19, 100, 64, 21}, 4);
    check_concat_last(1, 6, 7, (int64_t[]){4, 32}, 2);
}

static void test_concat_split(void)
{
    bd_err e = {0};
    bd_tensor out[3] = {0};
    uint16_t a[] = {1, 2, 3, 4}, b[] = {5, 6};
    bd_attr ax = {.name = "axis", .type = BD_ATTR_INT, .i = -1};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_UINT16, .rank = 2, .dims = {2, 2}, .data = a},
                       {.dtype = BRAID_DTYPE_UINT16, .rank = 2, .dims = {2, 1}, .data = b}};
    bd_node n = op_node(BD_OP_Concat, 13, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    uint16_t want[] = {1, 2, 5, 3, 4, 6};
    CHECK_EQ_INT(out[0].dims[1], 3);
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);

    /* Split opset 18, num_outputs 3 of 7 values: 3, 3, 1 */
    float x[7] = {0, 1, 2, 3, 4, 5, 6};
    bd_attr no = {.name = "num_outputs", .type = BD_ATTR_INT, .i = 3};
    bd_tensor sx[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 1, .dims = {7}, .data = x}};
    n = op_node(BD_OP_Split, 18, 1, 3, &no, 1);
    CHECK_EQ_INT(run(&n, sx, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK_EQ_INT(out[1].dims[0], 3);
    CHECK_EQ_INT(out[2].dims[0], 1);
    CHECK_EQ_INT(((float *)out[1].data)[0], 3);
    CHECK_EQ_INT(((float *)out[2].data)[0], 6);
    done(&n, out);

    /* Split opset 13 with sizes (2, 5) */
    int64_t sizes[] = {2, 5};
    sx[1] = ints1(sizes, 2);
    n = op_node(BD_OP_Split, 13, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, sx, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[1].dims[0], 5);
    CHECK_EQ_INT(((float *)out[1].data)[4], 6);
    done(&n, out);

    /* equal split that does not divide */
    n = op_node(BD_OP_Split, 13, 1, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, sx, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

static void test_expand_tile(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* Expand 3x1 to (2, 1, 4): bidirectional -> 2x3x4 */
    double x[] = {1, 2, 3};
    int64_t shp[] = {2, 1, 4};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_DOUBLE, .rank = 2, .dims = {3, 1}, .data = x},
                       ints1(shp, 3)};
    bd_node n = op_node(BD_OP_Expand, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[1], 3);
    int ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((double *)out[0].data)[i] == x[(i / 4) % 3];
    CHECK(ok);
    done(&n, out);

    /* Tile 2x2 by (2, 3) -> 4x6 */
    uint8_t t[] = {1, 2, 3, 4};
    int64_t rep[] = {2, 3};
    bd_tensor tin[2] = {{.dtype = BRAID_DTYPE_BOOL, .rank = 2, .dims = {2, 2}, .data = t},
                        ints1(rep, 2)};
    n = op_node(BD_OP_Tile, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, tin, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 4);
    CHECK_EQ_INT(out[0].dims[1], 6);
    ok = 1;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 6; c++) ok &= ((uint8_t *)out[0].data)[r * 6 + c] == t[(r % 2) * 2 + c % 2];
    CHECK(ok);
    done(&n, out);
}


/* DepthToSpace and SpaceToDepth against their definitions (onnx's reshape +
 * transpose written as index formulas), DCR and CRD, blocksize 3, int16 and
 * int8 elements; opset 13 SpaceToDepth ignores 'mode' (DCR). */
static void test_space_depth(void)
{
    enum { N = 2, C = 18, H = 4, W = 5, B = 3 };
    int16_t *x = malloc(sizeof(int16_t) * N * C * H * W);
    for (int i = 0; i < N * C * H * W; i++) x[i] = (int16_t)(i * 5 - 1000);
    bd_err e = {0};
    bd_tensor out[1] = {0};
    for (int crd = 0; crd < 2; crd++) {
        bd_attr at[2] = {attr_i("blocksize", B), {.name = "mode", .type = BD_ATTR_STRING, .s = crd ? "CRD" : "DCR"}};
        bd_tensor in[1] = {{.dtype = BRAID_DTYPE_INT16, .rank = 4, .dims = {N, C, H, W}, .data = x}};
        bd_node n = op_node(BD_OP_DepthToSpace, 13, 1, 1, at, 2);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        int co = C / (B * B), ok = out[0].dims[1] == co && out[0].dims[2] == H * B && out[0].dims[3] == W * B;
        const int16_t *y = out[0].data;
        for (int b = 0; ok && b < N; b++)
            for (int c = 0; c < co; c++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < B; i++)
                        for (int w = 0; w < W; w++)
                            for (int j = 0; j < B; j++) {
                                int ch = crd ? c * B * B + i * B + j : (i * B + j) * co + c;
                                ok &= y[((b * co + c) * H * B + h * B + i) * W * B + w * B + j] ==
                                      x[((b * C + ch) * H + h) * W + w];
                            }
        CHECK(ok);
        /* SpaceToDepth (opset 28, same mode) takes it back */
        bd_tensor back[1] = {out[0]};
        bd_tensor out2[1] = {0};
        bd_node n2 = op_node(BD_OP_SpaceToDepth, 28, 1, 1, at, 2);
        CHECK_EQ_INT(run(&n2, back, out2, &e), BRAID_OK);
        CHECK(memcmp(out2[0].data, x, sizeof(int16_t) * N * C * H * W) == 0);
        done(&n2, out2);
        done(&n, out);
    }
    free(x);

    /* SpaceToDepth DCR by its definition: y[n][(i*b+j)*C + c][h][w] = x[n][c][h*b+i][w*b+j] */
    uint8_t x8[1 * 2 * 4 * 6];
    for (int i = 0; i < 48; i++) x8[i] = (uint8_t)i;
    bd_attr at[2] = {attr_i("blocksize", 2), {.name = "mode", .type = BD_ATTR_STRING, .s = "CRD"}};
    bd_tensor in[1] = {{.dtype = BRAID_DTYPE_FLOAT8E4M3FN, .rank = 4, .dims = {1, 2, 4, 6}, .data = x8}};
    bd_node n = op_node(BD_OP_SpaceToDepth, 13, 1, 1, at, 2); /* mode is not read before opset 28 */
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[1], 8);
    int ok = 1;
    for (int c = 0; c < 2; c++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                for (int h = 0; h < 2; h++)
                    for (int w = 0; w < 3; w++)
                        ok &= ((uint8_t *)out[0].data)[(((i * 2 + j) * 2 + c) * 2 + h) * 3 + w] ==
                              x8[(c * 4 + h * 2 + i) * 6 + w * 2 + j];
    CHECK(ok);
    done(&n, out);

    /* errors: channels not divisible, odd spatial dims, rank, blocksize 0, bad mode */
    bd_attr b3 = attr_i("blocksize", 3);
    n = op_node(BD_OP_DepthToSpace, 13, 1, 1, &b3, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "blocksize^2");
    done(&n, out);
    n = op_node(BD_OP_SpaceToDepth, 13, 1, 1, &b3, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[0].rank = 3;
    n = op_node(BD_OP_SpaceToDepth, 13, 1, 1, at, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    bd_attr b0 = attr_i("blocksize", 0);
    n = op_node(BD_OP_DepthToSpace, 13, 1, 1, &b0, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    bd_attr bm[2] = {attr_i("blocksize", 2), {.name = "mode", .type = BD_ATTR_STRING, .s = "XYZ"}};
    n = op_node(BD_OP_DepthToSpace, 13, 1, 1, bm, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    n = op_node(BD_OP_DepthToSpace, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "blocksize");
    done(&n, out);
}

/* CenterCropPad: x = 0..19 as 4x5 (bfloat16 bits), target (7, 2): rows padded
 * 1 before and 2 after (odd padding goes after), columns cropped from 1 to 3
 * (start rounded down); then axes (-1) only with target 8 (pad 1, 2). */
static void test_center_crop_pad(void)
{
    uint16_t x[20];
    for (int i = 0; i < 20; i++) x[i] = (uint16_t)(i + 1);
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t shp[] = {7, 2};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_BFLOAT16, .rank = 2, .dims = {4, 5}, .data = x}, ints1(shp, 2)};
    bd_node n = op_node(BD_OP_CenterCropPad, 18, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 7);
    CHECK_EQ_INT(out[0].dims[1], 2);
    int ok = 1;
    for (int r = 0; r < 7; r++)
        for (int c = 0; c < 2; c++)
            ok &= ((uint16_t *)out[0].data)[r * 2 + c] == (r >= 1 && r < 5 ? x[(r - 1) * 5 + c + 1] : 0);
    CHECK(ok);
    done(&n, out);

    int64_t ax[] = {-1}, s8[] = {8};
    bd_attr axes = attr_is("axes", ax, 1);
    in[1] = ints1(s8, 1);
    n = op_node(BD_OP_CenterCropPad, 18, 2, 1, &axes, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 4);
    CHECK_EQ_INT(out[0].dims[1], 8);
    ok = 1;
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 8; c++)
            ok &= ((uint16_t *)out[0].data)[r * 8 + c] == (c >= 1 && c < 6 ? x[r * 5 + c - 1] : 0);
    CHECK(ok);
    done(&n, out);

    /* a crop to 0, a shape of the wrong length, a repeated axis */
    int64_t z[] = {0, 5};
    in[1] = ints1(z, 2);
    n = op_node(BD_OP_CenterCropPad, 18, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    done(&n, out);
    n = op_node(BD_OP_CenterCropPad, 18, 2, 1, &axes, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "2 values for 1 axes");
    done(&n, out);
    int64_t twice[] = {1, -1};
    bd_attr axes2 = attr_is("axes", twice, 2);
    n = op_node(BD_OP_CenterCropPad, 18, 2, 1, &axes2, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "twice");
    done(&n, out);
}


/* The attribute forms of old opsets: Slice-1 (starts/ends/axes attributes),
 * Split-2/11 ('split' attribute) and Split-1 ('split' input), Pad-1/2
 * ('paddings'/'pads' and 'value', float16 included). */
static void test_attribute_forms(void)
{
    float x[60];
    for (int i = 0; i < 60; i++) x[i] = (float)i;
    bd_err e = {0};
    bd_tensor out[2] = {0};
    /* Slice-1 on 3x4x5: axes (0, 2), starts (1, -3), ends (1000, -1) -> rows 1-2, columns 2-3 */
    int64_t st[] = {1, -3}, en[] = {1000, -1}, ax[] = {0, 2};
    bd_attr at[3] = {attr_is("starts", st, 2), attr_is("ends", en, 2), attr_is("axes", ax, 2)};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_FLOAT, 3, (int64_t[]){3, 4, 5}, x)};
    bd_node n = op_node(BD_OP_Slice, 1, 1, 1, at, 3);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 4);
    CHECK_EQ_INT(out[0].dims[2], 2);
    int ok = 1;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 2; c++) ok &= ((float *)out[0].data)[(a * 4 + b) * 2 + c] == x[(a + 1) * 20 + b * 5 + c + 2];
    CHECK(ok);
    done(&n, out);
    /* without axes, dims 0 and 1: dim 1 (of 4) from -3 (1) to -1 (3); without ends: refused */
    n = op_node(BD_OP_Slice, 1, 1, 1, at, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 2);
    CHECK_EQ_INT(out[0].dims[2], 5);
    CHECK(((float *)out[0].data)[0] == x[20 + 5]);
    done(&n, out);
    n = op_node(BD_OP_Slice, 1, 1, 1, at, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);

    /* Split-2 and Split-11 with the 'split' attribute (2, 3) along axis -1 of 3x4x5 */
    int64_t sp[] = {2, 3};
    bd_attr sa[2] = {attr_is("split", sp, 2), attr_i("axis", -1)};
    for (int op = 0; op < 2; op++) {
        n = op_node(BD_OP_Split, op ? 11 : 2, 1, 2, sa, 2);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[2], 2);
        CHECK_EQ_INT(out[1].dims[2], 3);
        CHECK(((float *)out[1].data)[0] == 2 && ((float *)out[1].data)[3] == 7);
        done(&n, out);
    }
    /* Split-1 takes 'split' as an input */
    in[1] = ints1(sp, 2);
    bd_attr a1 = attr_i("axis", 2);
    n = op_node(BD_OP_Split, 1, 2, 2, &a1, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 2);
    done(&n, out);
    /* a 'split' attribute that does not add up */
    int64_t bad[] = {2, 2};
    bd_attr sb[2] = {attr_is("split", bad, 2), attr_i("axis", -1)};
    n = op_node(BD_OP_Split, 11, 1, 2, sb, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);

    /* Pad-2 on float16 with value 2.5 (0x4100) and Pad-1's 'paddings' on float with -1.5 */
    uint16_t h[] = {0x3c00, 0x4000};
    int64_t pads[] = {1, 0};
    bd_attr pa[3] = {attr_is("pads", pads, 2), attr_f("value", 2.5f), {.name = "mode", .type = BD_ATTR_STRING, .s = "constant"}};
    bd_tensor hin[1] = {tensor(BRAID_DTYPE_FLOAT16, 1, (int64_t[]){2}, h)};
    n = op_node(BD_OP_Pad, 2, 1, 1, pa, 3);
    CHECK_EQ_INT(run(&n, hin, out, &e), BRAID_OK);
    uint16_t want_h[] = {0x4100, 0x3c00, 0x4000};
    CHECK(memcmp(out[0].data, want_h, sizeof want_h) == 0);
    done(&n, out);
    int64_t pads1[] = {0, 2};
    bd_attr p1[2] = {attr_is("paddings", pads1, 2), attr_f("value", -1.5f)};
    bd_tensor fin[1] = {tensor(BRAID_DTYPE_FLOAT, 1, (int64_t[]){2}, x)};
    n = op_node(BD_OP_Pad, 1, 1, 1, p1, 2);
    CHECK_EQ_INT(run(&n, fin, out, &e), BRAID_OK);
    float want_f[] = {0, 1, -1.5f, -1.5f};
    CHECK(memcmp(out[0].data, want_f, sizeof want_f) == 0);
    done(&n, out);
    n = op_node(BD_OP_Pad, 2, 1, 1, p1 + 1, 1); /* no 'pads' */
    CHECK_EQ_INT(run(&n, fin, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
}


/* The kernels split large tensors over threads: 1 and 4 threads give the
 * same bytes (Transpose both ways, Concat with few and many rows, Slice,
 * Pad, Gather, DepthToSpace on a 2x64x64x48 float tensor), and the NHWC
 * transpose matches its definition. */
static int same_at_1_and_4(bd_node *n, bd_tensor *in)
{
    bd_err e = {0};
    bd_tensor o1[2] = {0}, o4[2] = {0};
    g_threads = 4;
    braid_status s4 = run(n, in, o4, &e);
    bd_free(n->params);
    n->params = NULL;
    g_threads = 1;
    braid_status s1 = run(n, in, o1, &e);
    size_t nb = 0;
    int ok = s1 == BRAID_OK && s4 == BRAID_OK && bd_tensor_nbytes(&o1[0], &nb, &e) == BRAID_OK &&
             memcmp(o1[0].data, o4[0].data, nb) == 0;
    done(n, o1);
    free(o4[0].data);
    free(o4[1].data);
    return ok;
}

static void test_threads(void)
{
    enum { N = 2, C = 64, H = 64, W = 48 };
    float *x = malloc(sizeof(float) * N * C * H * W);
    for (int i = 0; i < N * C * H * W; i++) x[i] = (float)i;
    bd_tensor in[5] = {tensor(BRAID_DTYPE_FLOAT, 4, (int64_t[]){N, C, H, W}, x)};
    int64_t p1[] = {0, 2, 3, 1}, p2[] = {0, 3, 1, 2}, p3[] = {3, 2, 1, 0};
    bd_attr a1 = attr_is("perm", p1, 4), a2 = attr_is("perm", p2, 4), a3 = attr_is("perm", p3, 4);
    bd_node n = op_node(BD_OP_Transpose, 13, 1, 1, &a1, 1);
    CHECK(same_at_1_and_4(&n, in));
    n = op_node(BD_OP_Transpose, 13, 1, 1, &a2, 1);
    CHECK(same_at_1_and_4(&n, in));
    n = op_node(BD_OP_Transpose, 13, 1, 1, &a3, 1);
    CHECK(same_at_1_and_4(&n, in));
    bd_tensor cin[2] = {in[0], in[0]};
    for (int axis = 0; axis < 4; axis++) {
        bd_attr ax = attr_i("axis", axis);
        n = op_node(BD_OP_Concat, 13, 2, 1, &ax, 1);
        CHECK(same_at_1_and_4(&n, cin));
        n = op_node(BD_OP_Split, 13, 1, 2, &ax, 1);
        CHECK(same_at_1_and_4(&n, in));
    }
    int64_t st[] = {-1, 1}, en[] = {INT64_MIN, 60}, ax[] = {3, 1}, sp[] = {-3, 2};
    bd_tensor sin[5] = {in[0], ints1(st, 2), ints1(en, 2), ints1(ax, 2), ints1(sp, 2)};
    n = op_node(BD_OP_Slice, 13, 5, 1, NULL, 0);
    CHECK(same_at_1_and_4(&n, sin));
    int64_t pads[] = {0, 1, 3, 2, 1, 0, 2, 3};
    bd_attr md = {.name = "mode", .type = BD_ATTR_STRING, .s = "reflect"};
    bd_tensor pin[2] = {in[0], ints1(pads, 8)};
    n = op_node(BD_OP_Pad, 13, 2, 1, &md, 1);
    CHECK(same_at_1_and_4(&n, pin));
    int64_t gi[] = {5, -1, 0, 33, 33, -64};
    bd_tensor gin[2] = {in[0], ints1(gi, 6)};
    bd_attr g1 = attr_i("axis", 1);
    n = op_node(BD_OP_Gather, 13, 2, 1, &g1, 1);
    CHECK(same_at_1_and_4(&n, gin));
    bd_attr bs = attr_i("blocksize", 4);
    n = op_node(BD_OP_DepthToSpace, 13, 1, 1, &bs, 1);
    CHECK(same_at_1_and_4(&n, in));
    n = op_node(BD_OP_SpaceToDepth, 13, 1, 1, &bs, 1);
    CHECK(same_at_1_and_4(&n, in));
    free(x);
}

int main(void)
{
    test_slice();
    test_gather();
    test_pad();
    test_pad_wide();
    test_transpose();
    test_concat_split();
    /* the vector paths (transposes, the step-2 gather, last-axis Concat) at
     * each level: AVX-512, AVX2, plain loops (bd_cpu_vec_cap) */
    for (int lvl = 2; lvl >= 0; lvl--) {
        bd_cpu_vec_cap(lvl);
        test_slice_step2();
        test_transpose_fast();
        test_concat_last();
    }
    bd_cpu_vec_cap(2);
    test_expand_tile();
    test_space_depth();
    test_center_crop_pad();
    test_attribute_forms();
    test_threads();
    return check_done();
}
