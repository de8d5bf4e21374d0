/* test_cumulative.c: the cumulative family (CumSum, CumProd) on the CPU:
 * every combination of exclusive and reverse against hand-computed sums and
 * products, a middle axis and a negative axis, integers that wrap as their
 * type does, float16 accumulated in float and rounded once per output, empty
 * tensors, the same bits on 1 and 4 threads, and the errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

static void test_flags(void)
{
    double x[] = {1, 2, 3, 4};
    /* CumSum and CumProd of 1 2 3 4 for (exclusive, reverse) = 00, 01, 10, 11 */
    const double sum[4][4] = {{1, 3, 6, 10}, {10, 9, 7, 4}, {0, 1, 3, 6}, {9, 7, 4, 0}};
    const double prod[4][4] = {{1, 2, 6, 24}, {24, 24, 12, 4}, {1, 1, 2, 6}, {24, 12, 4, 1}};
    int32_t ax = 0;
    bd_err e = {0};
    for (int p = 0; p < 2; p++)
        for (int f = 0; f < 4; f++) {
            bd_tensor in[2] = {{BRAID_DTYPE_DOUBLE, 1, {4}, x}, {BRAID_DTYPE_INT32, 0, {0}, &ax}}, out = {0};
            bd_attr a[2] = {attr_i("exclusive", f >> 1), attr_i("reverse", f & 1)};
            bd_node n = op_node(p ? BD_OP_CumProd : BD_OP_CumSum, p ? 26 : 14, 2, 1, a, 2);
            CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
            for (int i = 0; i < 4; i++) CHECK(((double *)out.data)[i] == (p ? prod : sum)[f][i]);
            done(&n, &out);
        }
}

static void test_axes(void)
{
    /* (2, 3, 2) along axis 1 (given as -2, a 1-D int64 of one value) */
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(i + 1);
    int64_t ax = -2;
    bd_tensor in[2] = {{F32, 3, {2, 3, 2}, x}, ints1(&ax, 1)}, out = {0};
    bd_err e = {0};
    bd_attr rev = attr_i("reverse", 1);
    bd_node n = op_node(BD_OP_CumSum, 11, 2, 1, &rev, 1);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 3; j++) {
                double s = 0;
                for (int t = j; t < 3; t++) s += x[(b * 3 + t) * 2 + k];
                CHECK(((float *)out.data)[(b * 3 + j) * 2 + k] == (float)s);
            }
    done(&n, &out);
}

static void test_types(void)
{
    bd_err e = {0};
    int64_t ax = 0;
    /* int32 wraps as int32 does; uint64 products wrap mod 2^64 */
    int32_t a[3] = {INT32_MAX, 1, 1};
    bd_tensor in[2] = {{BRAID_DTYPE_INT32, 1, {3}, a}, ints1(&ax, 1)}, out = {0};
    bd_node n = op_node(BD_OP_CumSum, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int32_t *)out.data)[1], INT32_MIN);
    CHECK_EQ_INT(((int32_t *)out.data)[2], INT32_MIN + 1);
    done(&n, &out);
    uint64_t u[2] = {(uint64_t)1 << 40, (uint64_t)1 << 30};
    in[0] = (bd_tensor){BRAID_DTYPE_UINT64, 1, {2}, u};
    n = op_node(BD_OP_CumProd, 26, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK(((uint64_t *)out.data)[1] == ((uint64_t)1 << 40) * ((uint64_t)1 << 30)); /* 2^70 wraps to 0 */
    CHECK(((uint64_t *)out.data)[1] == 0);
    done(&n, &out);
    /* float16: 2048 + 1 + 1 accumulated in float is 2049 (rounds to 2048) then
     * 2050; rounding after every add would give 2048 twice */
    uint16_t h[3] = {bd_float_to_half(2048), bd_float_to_half(1), bd_float_to_half(1)};
    in[0] = (bd_tensor){BRAID_DTYPE_FLOAT16, 1, {3}, h};
    n = op_node(BD_OP_CumSum, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK(bd_half_to_float(((uint16_t *)out.data)[1]) == 2048);
    CHECK(bd_half_to_float(((uint16_t *)out.data)[2]) == 2050);
    done(&n, &out);
    /* bfloat16 CumProd: 3 * 3 * 3 = 27 (exact in bfloat16's 8 significant bits) */
    uint16_t b[3] = {bd_float_to_bf16(3), bd_float_to_bf16(3), bd_float_to_bf16(3)};
    in[0] = (bd_tensor){BRAID_DTYPE_BFLOAT16, 1, {3}, b};
    n = op_node(BD_OP_CumProd, 26, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK(bd_bf16_to_float(((uint16_t *)out.data)[2]) == 27);
    done(&n, &out);
    /* float16 is not in CumSum-11 */
    in[0] = (bd_tensor){BRAID_DTYPE_FLOAT16, 1, {3}, h};
    n = op_node(BD_OP_CumSum, 11, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "float16");
    done(&n, &out);
}

static void test_edges(void)
{
    bd_err e = {0};
    float x[1];
    int64_t ax = 1;
    bd_tensor in[2] = {{F32, 2, {3, 0}, x}, ints1(&ax, 1)}, out = {0};
    bd_node n = op_node(BD_OP_CumSum, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK); /* empty: nothing to write */
    CHECK_EQ_INT(bd_numel(&out), 0);
    done(&n, &out);
    /* errors: axis out of range, an axis of two values, a float axis, a scalar x */
    float y[4] = {1, 2, 3, 4};
    ax = 2;
    in[0] = (bd_tensor){F32, 2, {2, 2}, y};
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis 2");
    done(&n, &out);
    int64_t two[2] = {0, 1};
    in[1] = ints1(two, 2);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_SHAPE);
    done(&n, &out);
    float fax = 0;
    in[1] = (bd_tensor){F32, 0, {0}, &fax};
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_DTYPE);
    done(&n, &out);
    ax = 0;
    in[1] = ints1(&ax, 1);
    in[0] = (bd_tensor){F32, 0, {0}, y};
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_SHAPE);
    done(&n, &out);
    /* 1 and 4 threads: the same bits (rows, and columns) */
    enum { R = 64, C = 3000 };
    unsigned seed = 3;
    float *z = randn(R * C, &seed);
    for (int axis = 0; axis < 2; axis++) {
        int64_t a2 = axis;
        bd_tensor zin[2] = {{F32, 2, {R, C}, z}, ints1(&a2, 1)}, one = {0}, four = {0};
        bd_node m = op_node(BD_OP_CumSum, 14, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&m, zin, &one, &e), BRAID_OK);
        bd_free(m.params);
        m.params = NULL;
        g_threads = 4;
        CHECK_EQ_INT(run(&m, zin, &four, &e), BRAID_OK);
        g_threads = 1;
        CHECK(memcmp(one.data, four.data, sizeof(float) * R * C) == 0);
        double s = 0; /* the last of the first line against double */
        for (int i = 0; i < (axis ? C : R); i++) s += z[axis ? i : i * C];
        CHECK_NEAR(((float *)one.data)[axis ? C - 1 : (R - 1) * C], s, 1e-5, 1e-6);
        free(one.data);
        done(&m, &four);
    }
    free(z);
}

int main(void)
{
    test_flags();
    test_axes();
    test_types();
    test_edges();
    return check_done();
}
