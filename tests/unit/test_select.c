/* test_select.c: the select family (NonZero, Compress, Unique), whose kernels
 * write their outputs' actual dims: inferred largest shapes, actual shapes
 * and values against hand-worked examples and numpy's results (commands in
 * the comments), NaN and -0.0, empty inputs, axes, errors; NonZero over
 * several blocks at 1 and 4 threads. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "ops/select.h"

static void test_nonzero(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* 2x3 float: -0.0 is zero, NaN is not -> rows (0, 1, 1), cols (1, 0, 2) */
    float x[] = {-0.0f, NAN, 0.0f, 2.0f, 0.0f, -1.0f};
    bd_tensor in[1] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, x)};
    bd_node n = op_node(BD_OP_NonZero, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 3);
    int64_t want[] = {0, 1, 1, 1, 0, 2};
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);

    /* a scalar reads as 1-D: [[0]]; an empty tensor gives rank x 0 */
    int32_t s = 7;
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 0, .data = &s};
    n = op_node(BD_OP_NonZero, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 1);
    CHECK_EQ_INT(out[0].dims[1], 1);
    CHECK_EQ_INT(((int64_t *)out[0].data)[0], 0);
    done(&n, out);
    in[0] = tensor(BRAID_DTYPE_BOOL, 3, (int64_t[]){2, 0, 4}, &s);
    n = op_node(BD_OP_NonZero, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK_EQ_INT(out[0].dims[1], 0);
    done(&n, out);

    /* 3 x 50000 bfloat16 (3 blocks of the kernel's split), every 7th element
     * nonzero (0x8000 is -0.0, zero): columns in row-major order, 1 and 4 threads */
    enum { R = 3, C = 50000 };
    uint16_t *b = malloc(sizeof(uint16_t) * R * C);
    int64_t cnt = 0;
    for (int i = 0; i < R * C; i++) {
        b[i] = i % 7 == 0 ? 0x3f80 : i % 2 ? 0x8000 : 0;
        cnt += i % 7 == 0;
    }
    in[0] = tensor(BRAID_DTYPE_BFLOAT16, 2, (int64_t[]){R, C}, b);
    for (int th = 1; th <= 4; th += 3) {
        g_threads = th;
        n = op_node(BD_OP_NonZero, 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[1], cnt);
        int ok = 1;
        const int64_t *y = out[0].data;
        for (int64_t j = 0; j < cnt; j++) ok &= y[j] == (j * 7) / C && y[cnt + j] == (j * 7) % C;
        CHECK(ok);
        done(&n, out);
    }
    g_threads = 1;
    free(b);
    /* strings and float8 are refused */
    in[0].dtype = BRAID_DTYPE_FLOAT8E4M3FN;
    n = op_node(BD_OP_NonZero, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
}

static void test_compress(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* 3x2 int16 along axis 0 with condition (0, 1, 1): rows 1 and 2 */
    int16_t x[] = {1, 2, 3, 4, 5, 6};
    uint8_t c[] = {0, 1, 1};
    bd_attr ax = attr_i("axis", 0);
    bd_tensor in[2] = {tensor(BRAID_DTYPE_INT16, 2, (int64_t[]){3, 2}, x), tensor(BRAID_DTYPE_BOOL, 1, (int64_t[]){3}, c)};
    bd_node n = op_node(BD_OP_Compress, 11, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2); /* exact: the condition is known */
    int16_t w0[] = {3, 4, 5, 6};
    CHECK(memcmp(out[0].data, w0, sizeof w0) == 0);
    done(&n, out);

    /* axis -1 with a condition shorter than the axis (1, 0): column 0 only */
    bd_attr axn = attr_i("axis", -1);
    in[1].dims[0] = 2;
    uint8_t c2[] = {1, 0};
    in[1].data = c2;
    n = op_node(BD_OP_Compress, 11, 2, 1, &axn, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[1], 1);
    int16_t w1[] = {1, 3, 5};
    CHECK(memcmp(out[0].data, w1, sizeof w1) == 0);
    done(&n, out);

    /* no axis: the flattened input, condition (0, 1, 0, 0, 1) -> (2, 5) */
    uint8_t c3[] = {0, 1, 0, 0, 1};
    in[1] = tensor(BRAID_DTYPE_BOOL, 1, (int64_t[]){5}, c3);
    n = op_node(BD_OP_Compress, 11, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 1);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(((int16_t *)out[0].data)[0], 2);
    CHECK_EQ_INT(((int16_t *)out[0].data)[1], 5);
    done(&n, out);

    /* a condition known only at run time: inference gives the largest shape,
     * the kernel the actual one */
    bd_tensor unk[2] = {in[0], in[1]};
    unk[1].data = NULL;
    n = op_node(BD_OP_Compress, 11, 2, 1, &ax, 1);
    CHECK_EQ_INT(bd_op_parse(&n, &e), BRAID_OK);
    bd_tensor o[1] = {0};
    unk[1].dims[0] = 3;
    CHECK_EQ_INT(bd_op_infer(&n, unk, o, &e), BRAID_OK);
    CHECK_EQ_INT(o[0].dims[0], 3);
    done(&n, out);

    /* errors: a condition longer than the axis, a non-bool condition, 2-D */
    in[1] = tensor(BRAID_DTYPE_BOOL, 1, (int64_t[]){4}, c3);
    n = op_node(BD_OP_Compress, 11, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "4 values for 3 slices");
    done(&n, out);
    in[1] = tensor(BRAID_DTYPE_INT32, 1, (int64_t[]){1}, c3);
    n = op_node(BD_OP_Compress, 11, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    done(&n, out);
    in[1] = tensor(BRAID_DTYPE_BOOL, 2, (int64_t[]){1, 1}, c3);
    n = op_node(BD_OP_Compress, 11, 2, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

/* Unique. Expected values from numpy, as onnx's reference computes them:
 *   np.unique(x, True, True, True) (numpy 2.4, equal_nan)  */
static void test_unique(void)
{
    bd_err e = {0};
    bd_tensor out[4] = {0};
    /* the spec's example 1, sorted = 0: x = (2, 1, 1, 3, 4, 3) */
    int64_t x[] = {2, 1, 1, 3, 4, 3};
    bd_attr s0 = attr_i("sorted", 0);
    bd_tensor in[1] = {tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){6}, x)};
    bd_node n = op_node(BD_OP_Unique, 11, 1, 4, &s0, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    int64_t y0[] = {2, 1, 3, 4}, i0[] = {0, 1, 3, 4}, v0[] = {0, 1, 1, 2, 3, 2}, c0[] = {1, 2, 2, 1};
    CHECK_EQ_INT(out[0].dims[0], 4);
    CHECK_EQ_INT(out[1].dims[0], 4);
    CHECK_EQ_INT(out[2].dims[0], 6);
    CHECK_EQ_INT(out[3].dims[0], 4);
    CHECK(memcmp(out[0].data, y0, sizeof y0) == 0);
    CHECK(memcmp(out[1].data, i0, sizeof i0) == 0);
    CHECK(memcmp(out[2].data, v0, sizeof v0) == 0);
    CHECK(memcmp(out[3].data, c0, sizeof c0) == 0);
    done(&n, out);

    /* float with NaN, -0.0 and 0.0 (2x3, no axis, sorted):
     * x = [[0.5, nan, -0.0], [0.0, nan, -1.0]]
     * Y = [-1, -0, 0.5, nan] (the zeros are one, its first occurrence -0.0),
     * indices = [5, 2, 0, 1], inverse = [2, 3, 1, 1, 3, 0], counts = [1, 2, 1, 2] */
    float xf[] = {0.5f, NAN, -0.0f, 0.0f, NAN, -1.0f};
    in[0] = tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, xf);
    n = op_node(BD_OP_Unique, 11, 1, 4, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 4);
    const float *yf = out[0].data;
    CHECK(yf[0] == -1.0f && yf[1] == 0.0f && signbit(yf[1]) && yf[2] == 0.5f && isnan(yf[3]));
    int64_t i1[] = {5, 2, 0, 1}, v1[] = {2, 3, 1, 1, 3, 0}, c1[] = {1, 2, 1, 2};
    CHECK(memcmp(out[1].data, i1, sizeof i1) == 0);
    CHECK(memcmp(out[2].data, v1, sizeof v1) == 0);
    CHECK(memcmp(out[3].data, c1, sizeof c1) == 0);
    done(&n, out);

    /* the spec's example 4: 2x4x2 along axis 1 (and -2), one output only */
    float x4[] = {1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1};
    float y4[] = {0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1};
    int64_t i4[] = {1, 0, 2}, v4[] = {1, 0, 2, 0}, c4[] = {2, 1, 1};
    for (int a = 0; a < 2; a++) {
        bd_attr ax = attr_i("axis", a ? -2 : 1);
        in[0] = tensor(BRAID_DTYPE_FLOAT, 3, (int64_t[]){2, 4, 2}, x4);
        n = op_node(BD_OP_Unique, 11, 1, 4, &ax, 1);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].rank, 3);
        CHECK_EQ_INT(out[0].dims[1], 3);
        CHECK(memcmp(out[0].data, y4, sizeof y4) == 0);
        CHECK(memcmp(out[1].data, i4, sizeof i4) == 0);
        CHECK(memcmp(out[2].data, v4, sizeof v4) == 0);
        CHECK(memcmp(out[3].data, c4, sizeof c4) == 0);
        done(&n, out);
    }
    n = op_node(BD_OP_Unique, 11, 1, 1, NULL, 0);
    in[0] = tensor(BRAID_DTYPE_FLOAT, 3, (int64_t[]){2, 4, 2}, x4);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    float yflat[] = {0, 1, 2};
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK(memcmp(out[0].data, yflat, sizeof yflat) == 0);
    done(&n, out);

    /* example 3 with sorted = 0 along axis 0 of uint8 rows:
     * [[2,3,4],[1,0,0],[2,3,4],[1,0,0]] -> Y rows (2,3,4), (1,0,0) */
    uint8_t x3[] = {2, 3, 4, 1, 0, 0, 2, 3, 4, 1, 0, 0}, y3[] = {2, 3, 4, 1, 0, 0};
    bd_attr at3[2] = {attr_i("axis", 0), attr_i("sorted", 0)};
    in[0] = tensor(BRAID_DTYPE_UINT8, 2, (int64_t[]){4, 3}, x3);
    n = op_node(BD_OP_Unique, 11, 1, 4, at3, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK(memcmp(out[0].data, y3, sizeof y3) == 0);
    int64_t i3[] = {0, 1}, v3[] = {0, 1, 0, 1}, c3[] = {2, 2};
    CHECK(memcmp(out[1].data, i3, sizeof i3) == 0);
    CHECK(memcmp(out[2].data, v3, sizeof v3) == 0);
    CHECK(memcmp(out[3].data, c3, sizeof c3) == 0);
    done(&n, out);

    /* empty input; a scalar has no axis; float8 is refused */
    in[0] = tensor(BRAID_DTYPE_INT32, 1, (int64_t[]){0}, x3);
    n = op_node(BD_OP_Unique, 11, 1, 4, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    CHECK_EQ_INT(out[3].dims[0], 0);
    done(&n, out);
    in[0].rank = 0;
    bd_attr ax0 = attr_i("axis", 0);
    n = op_node(BD_OP_Unique, 11, 1, 1, &ax0, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[0] = tensor(BRAID_DTYPE_FLOAT8E5M2, 1, (int64_t[]){2}, x3);
    n = op_node(BD_OP_Unique, 11, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
}

int main(void)
{
    test_nonzero();
    test_compress();
    test_unique();
    return check_done();
}
