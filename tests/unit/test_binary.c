/* test_binary.c: the binary family: numpy broadcasting worked out by hand,
 * integer division, comparisons, Where's three-way broadcast, PRelu, Pow with
 * mixed types, and the errors for mismatched dtypes and shapes. Integer and
 * bool results are exact; float results exact too (one rounding per element). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>



static void test_add_row_broadcast(void)
{
    /* (2,3) + (3,): the row [10, 20, 30] is added to each row. */
    float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
    float want[] = {11, 22, 33, 14, 25, 36};
    bd_tensor in[2] = {{F32, 2, {2, 3}, a}, {F32, 1, {3}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Add, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 3);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 0, 0);
    done(&n, &out);
}

static void test_mul_two_way_broadcast(void)
{
    /* (2,1,3) * (4,1) -> (2,4,3): out[i][j][k] = a[i][k] * b[j].
     * a = [[1,2,3]], [[4,5,6]]; b = [1,2,3,4]. */
    float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 2, 3, 4};
    bd_tensor in[2] = {{F32, 3, {2, 1, 3}, a}, {F32, 2, {4, 1}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Mul, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 3);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 4);
    CHECK_EQ_INT(out.dims[2], 3);
    const float *y = out.data;
    /* By hand: the first block is [1,2,3] times 1..4, the second [4,5,6]. */
    float want[24] = {1, 2, 3, 2, 4, 6, 3, 6, 9, 4, 8, 12,
                      4, 5, 6, 8, 10, 12, 12, 15, 18, 16, 20, 24};
    for (int i = 0; i < 24; i++) CHECK_NEAR(y[i], want[i], 0, 0);
    done(&n, &out);
}

static void test_sub_channel_and_scalar(void)
{
    /* (2,3,2,2) - (1,3,1,1): per-channel; then a rank-0 scalar. */
    float x[24], c[3] = {100, 200, 300}, s = 0.5f;
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    bd_tensor in[2] = {{F32, 4, {2, 3, 2, 2}, x}, {F32, 4, {1, 3, 1, 1}, c}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Sub, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    int ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == (float)i - c[(i / 4) % 3];
    CHECK(ok);
    done(&n, &out);
    /* scalar - tensor: the scalar is the first operand */
    bd_tensor in2[2] = {{F32, 0, {0}, &s}, {F32, 4, {2, 3, 2, 2}, x}};
    n = op_node(BD_OP_Sub, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 4);
    ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == 0.5f - (float)i;
    CHECK(ok);
    done(&n, &out);
}

static void test_general_broadcast(void)
{
    /* (3,1,4,1) + (2,1,5): neither side contiguous in the output (3,2,4,5). */
    float a[12], b[10];
    for (int i = 0; i < 12; i++) a[i] = (float)(i * 100);
    for (int i = 0; i < 10; i++) b[i] = (float)i;
    bd_tensor in[2] = {{F32, 4, {3, 1, 4, 1}, a}, {F32, 3, {2, 1, 5}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Add, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out), 120);
    int ok = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 5; l++)
                    ok &= ((float *)out.data)[((i * 2 + j) * 4 + k) * 5 + l] ==
                          a[i * 4 + k] + b[j * 5 + l];
    CHECK(ok);
    done(&n, &out);
}

static void test_int_div(void)
{
    /* ONNX Div on integers truncates toward zero, like C: -7 / 2 = -3. A zero
     * divisor gives 0 rather than trapping; INT32_MIN / -1 wraps. */
    int32_t a[] = {7, -7, 7, -7, 5, INT32_MIN}, b[] = {2, 2, -2, -2, 0, -1};
    int32_t want[] = {3, -3, -3, 3, 0, INT32_MIN};
    bd_tensor in[2] = {{BRAID_DTYPE_INT32, 1, {6}, a}, {BRAID_DTYPE_INT32, 1, {6}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Div, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT32);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], want[i]);
    done(&n, &out);
    /* int64 with a broadcast divisor of 3 */
    int64_t c[] = {10, -10, 3, 2}, d = 3, want64[] = {3, -3, 1, 0};
    bd_tensor in2[2] = {{BRAID_DTYPE_INT64, 1, {4}, c}, {BRAID_DTYPE_INT64, 1, {1}, &d}};
    n = op_node(BD_OP_Div, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], want64[i]);
    done(&n, &out);
}

static void test_errors(void)
{
    float a[2] = {0};
    int64_t b[2] = {0};
    bd_tensor in[2] = {{F32, 1, {2}, a}, {BRAID_DTYPE_INT64, 1, {2}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Add, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "float32");
    CHECK_CONTAINS(e.msg, "int64");
    done(&n, &out);
    /* (2,3) and (4,) do not broadcast */
    float c[6] = {0}, d[4] = {0};
    bd_tensor in2[2] = {{F32, 2, {2, 3}, c}, {F32, 1, {4}, d}};
    n = op_node(BD_OP_Mul, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "2x3 and 4 do not broadcast");
    done(&n, &out);
    /* And takes bool only */
    n = op_node(BD_OP_And, 7, 2, 1, NULL, 0);
    bd_tensor in3[2] = {{F32, 2, {2, 3}, c}, {F32, 2, {2, 3}, c}};
    CHECK_EQ_INT(run(&n, in3, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "float32");
    done(&n, &out);
    /* PRelu's slope broadcasts one way only: (2,3) slope onto (3,) X is refused */
    n = op_node(BD_OP_PRelu, 16, 2, 1, NULL, 0);
    bd_tensor in4[2] = {{F32, 1, {3}, c}, {F32, 2, {2, 3}, c}};
    CHECK_EQ_INT(run(&n, in4, &out, &e), BRAID_ERR_SHAPE);
    done(&n, &out);
}

static void test_compare_and_logic(void)
{
    int32_t a[] = {1, 5, 3}, b[] = {3};
    bd_tensor in[2] = {{BRAID_DTYPE_INT32, 1, {3}, a}, {BRAID_DTYPE_INT32, 0, {0}, b}}, out = {0};
    bd_err e = {0};
    const int ops[3] = {BD_OP_Equal, BD_OP_Less, BD_OP_Greater};
    const uint8_t want[3][3] = {{0, 0, 1}, {1, 0, 0}, {0, 1, 0}};
    for (int o = 0; o < 3; o++) {
        bd_node n = op_node(ops[o], 13, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dtype, BRAID_DTYPE_BOOL);
        for (int i = 0; i < 3; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want[o][i]);
        done(&n, &out);
    }
    /* And/Or over (2,2) x (2,1) */
    uint8_t x[] = {0, 1, 1, 1}, y[] = {1, 0};
    bd_tensor in2[2] = {{BRAID_DTYPE_BOOL, 2, {2, 2}, x}, {BRAID_DTYPE_BOOL, 2, {2, 1}, y}};
    bd_node n = op_node(BD_OP_And, 7, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    const uint8_t want_and[] = {0, 1, 0, 0}, want_or[] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want_and[i]);
    done(&n, &out);
    n = op_node(BD_OP_Or, 7, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want_or[i]);
    done(&n, &out);
}

static void test_where(void)
{
    /* cond (2,1), X (1,3), Y scalar -> (2,3): row 0 takes X, row 1 takes Y. */
    uint8_t c[] = {1, 0};
    int64_t x[] = {1, 2, 3}, y = -9;
    bd_tensor in[3] = {{BRAID_DTYPE_BOOL, 2, {2, 1}, c},
                       {BRAID_DTYPE_INT64, 2, {1, 3}, x},
                       {BRAID_DTYPE_INT64, 0, {0}, &y}},
              out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Where, 16, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 3);
    const int64_t want[] = {1, 2, 3, -9, -9, -9};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], want[i]);
    done(&n, &out);
    /* a float condition is refused */
    float fc[2] = {1, 0};
    in[0].dtype = F32;
    in[0].data = fc;
    n = op_node(BD_OP_Where, 16, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "bool");
    done(&n, &out);
}

static void test_prelu_pow(void)
{
    /* PRelu with a per-channel slope of (3,1) on X (2,3,2) */
    float x[] = {-1, 2, -3, 4, -5, 6, 1, -2, 3, -4, 5, -6}, s[] = {0.5f, 0.25f, 2};
    float want[] = {-0.5f, 2, -0.75f, 4, -10, 6, 1, -1, 3, -1, 5, -12};
    bd_tensor in[2] = {{F32, 3, {2, 3, 2}, x}, {F32, 2, {3, 1}, s}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_PRelu, 16, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 12; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 0, 0);
    done(&n, &out);
    /* Pow: float base, int64 exponent; the output is float */
    float b[] = {1, 2, 3, -2};
    int64_t p[] = {2, 3, 0, 3};
    bd_tensor in2[2] = {{F32, 1, {4}, b}, {BRAID_DTYPE_INT64, 1, {4}, p}};
    n = op_node(BD_OP_Pow, 15, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, F32);
    const float wantp[] = {1, 8, 1, -8};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], wantp[i], 0, 0);
    done(&n, &out);
    /* Pow: float exponent 0.5 broadcast; 2 squared exactly */
    float q[] = {4, 2.25f, 0}, h = 0.5f, two = 2, v[] = {1.5f, -3, 0.1f};
    bd_tensor in3[2] = {{F32, 1, {3}, q}, {F32, 0, {0}, &h}};
    n = op_node(BD_OP_Pow, 15, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in3, &out, &e), BRAID_OK);
    CHECK_NEAR(((float *)out.data)[0], 2, 0, 1e-7);
    CHECK_NEAR(((float *)out.data)[1], 1.5, 0, 1e-7);
    CHECK_NEAR(((float *)out.data)[2], 0, 0, 0);
    done(&n, &out);
    bd_tensor in4[2] = {{F32, 1, {3}, v}, {F32, 0, {0}, &two}};
    n = op_node(BD_OP_Pow, 15, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in4, &out, &e), BRAID_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(((float *)out.data)[i], v[i] * v[i], 0, 0);
    done(&n, &out);
}

static void test_empty(void)
{
    /* (0,3) + (3,): an empty output, nothing to write and no crash. */
    float a[1], b[3] = {1, 2, 3};
    bd_tensor in[2] = {{F32, 2, {0, 3}, a}, {F32, 1, {3}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Add, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 0);
    CHECK_EQ_INT(out.dims[1], 3);
    done(&n, &out);
}

/* Four threads split a big broadcast mid-row; every element must equal the
 * single-threaded result and the reference, bit for bit. */
static void test_threads(void)
{
    enum { A = 3 * 300, B = 7 * 97, N = 3 * 7 * 300 * 97 };
    float *a = malloc(A * sizeof *a), *b = malloc(B * sizeof *b);
    for (int i = 0; i < A; i++) a[i] = (float)i * 0.25f;
    for (int i = 0; i < B; i++) b[i] = 1.0f / (float)(i + 1);
    bd_tensor in[2] = {{F32, 4, {3, 1, 300, 1}, a}, {F32, 3, {7, 1, 97}, b}}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Mul, 14, 2, 1, NULL, 0);
    g_threads = 4;
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    g_threads = 1;
    CHECK_EQ_INT(bd_numel(&out), N);
    int ok = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 7; j++)
            for (int k = 0; k < 300; k++)
                for (int l = 0; l < 97; l++)
                    ok &= ((float *)out.data)[((i * 7 + j) * 300 + k) * 97 + l] ==
                          a[i * 300 + k] * b[j * 97 + l];
    CHECK(ok);
    done(&n, &out);
    free(a);
    free(b);
}

int main(void)
{
    test_threads();
    test_add_row_broadcast();
    test_mul_two_way_broadcast();
    test_sub_channel_and_scalar();
    test_general_broadcast();
    test_int_div();
    test_errors();
    test_compare_and_logic();
    test_where();
    test_prelu_pow();
    test_empty();
    return check_done();
}
