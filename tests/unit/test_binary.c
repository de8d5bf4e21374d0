/* test_binary.c: the binary family: numpy broadcasting worked out by hand,
 * integer division and wrapping, Mod's sign rules (both fmod values, the
 * special cases of opset 28), BitShift (out-of-range shifts, signed right
 * shifts), the bitwise and logic ops, comparisons with NaN, Where's
 * three-way broadcast, PRelu (and its per-channel slope before opset 7),
 * Pow with mixed types, the variadic Max/Min/Sum/Mean, the old
 * 'broadcast'/'axis' attributes, float16/bfloat16 rounded once, and the
 * errors. Integer and bool results are exact; float results exact too (one
 * rounding per element). */
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
    /* A scalar X or Y against full cond and other (the contiguous fast rows),
     * 37 elements (a vector remainder), NaN kept bit for bit: the result is
     * exactly the chosen input, element by element. */
    enum { W = 37 };
    uint8_t wc[W];
    float wy[W], zero = 0.0f, nine = 9.5f;
    for (int i = 0; i < W; i++) {
        wc[i] = (uint8_t)(i % 3 == 0);
        wy[i] = i % 5 == 0 ? NAN : (float)i - 10.0f;
    }
    for (int side = 1; side <= 3; side++) { /* 1: X scalar, 2: Y scalar, 3: both */
        bd_tensor win[3] = {{BRAID_DTYPE_BOOL, 2, {1, W}, wc}, {F32, 2, {1, W}, wy}, {F32, 2, {1, W}, wy}};
        if (side & 1) win[1] = (bd_tensor){F32, 0, {0}, &zero};
        if (side & 2) win[2] = (bd_tensor){F32, 0, {0}, &nine};
        n = op_node(BD_OP_Where, 16, 3, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, win, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dims[1], W);
        for (int i = 0; i < W; i++) {
            float got = ((float *)out.data)[i];
            float want_w = wc[i] ? (side & 1 ? zero : wy[i]) : (side & 2 ? nine : wy[i]);
            CHECK(memcmp(&got, &want_w, sizeof got) == 0);
        }
        done(&n, &out);
    }
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


static void test_mod(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    /* int32: fmod=0 takes the divisor's sign (Python's %), fmod=1 the
     * dividend's (C's %); a zero divisor gives 0; INT32_MIN % -1 is 0 */
    int32_t a[] = {-7, 7, -7, 7, 5, INT32_MIN, 6}, b[] = {3, -3, -3, 3, 0, -1, 3};
    const int32_t w0[] = {2, -2, -1, 1, 0, 0, 0}, w1[] = {-1, 1, -1, 1, 0, 0, 0};
    bd_tensor in[2] = {{BRAID_DTYPE_INT32, 1, {7}, a}, {BRAID_DTYPE_INT32, 1, {7}, b}};
    for (int f = 0; f < 2; f++) {
        tnode_init(&t, BD_OP_Mod, 13, 2, 1);
        attr_int(&t, "fmod", f);
        CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
        for (int i = 0; i < 7; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], (f ? w1 : w0)[i]);
        done(&t.n, &out);
    }
    uint8_t ua[] = {7, 200, 255}, ub[] = {3, 0, 16};
    bd_tensor uin[2] = {{BRAID_DTYPE_UINT8, 1, {3}, ua}, {BRAID_DTYPE_UINT8, 1, {3}, ub}};
    tnode_init(&t, BD_OP_Mod, 13, 2, 1);
    CHECK_EQ_INT(run(&t.n, uin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 1);
    CHECK_EQ_INT(((uint8_t *)out.data)[1], 0);
    CHECK_EQ_INT(((uint8_t *)out.data)[2], 15);
    done(&t.n, &out);
    /* floats, fmod=0 (opset 28's special cases): the result has y's sign; a
     * zero result is 0 with y's sign; x finite and y infinite: x when their
     * signs agree, else y; x infinite or y zero: NaN */
    float x[] = {-0.0f, 0.0f, 3, 3, -3, INFINITY, 3, 5.5f, -5.5f, 5.5f};
    float y[] = {2, -2, INFINITY, -INFINITY, INFINITY, 2, 0, 2, 2, -2};
    const float wf0[] = {0.0f, -0.0f, 3, -INFINITY, INFINITY, NAN, NAN, 1.5f, 0.5f, -0.5f};
    const float wf1[] = {-0.0f, 0.0f, 3, 3, -3, NAN, NAN, 1.5f, -1.5f, 1.5f};
    bd_tensor fin[2] = {{F32, 1, {10}, x}, {F32, 1, {10}, y}};
    for (int f = 0; f < 2; f++) {
        tnode_init(&t, BD_OP_Mod, 28, 2, 1);
        attr_int(&t, "fmod", f);
        CHECK_EQ_INT(run(&t.n, fin, &out, &e), BRAID_OK);
        for (int i = 0; i < 10; i++) {
            float g = ((float *)out.data)[i], w = (f ? wf1 : wf0)[i];
            int same = (isnan(w) && isnan(g)) || (g == w && (w != 0 || signbit(g) == signbit(w)));
            CHECK(same);
            if (!same) fprintf(stderr, "Mod(%g, %g, fmod=%d) = %g, want %g\n", x[i], y[i], f, g, w);
        }
        done(&t.n, &out);
    }
    tnode_init(&t, BD_OP_Mod, 13, 2, 1);
    attr_int(&t, "fmod", 2);
    CHECK_EQ_INT(run(&t.n, fin, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'fmod' is 2");
    done(&t.n, &out);
}

static void test_bitshift_bitwise(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    uint8_t x8[] = {1, 0x81, 1, 1}, s8[] = {1, 1, 8, 7};
    bd_tensor in8[2] = {{BRAID_DTYPE_UINT8, 1, {4}, x8}, {BRAID_DTYPE_UINT8, 1, {4}, s8}};
    tnode_init(&t, BD_OP_BitShift, 11, 2, 1);
    attr_str(&t, "direction", "LEFT");
    CHECK_EQ_INT(run(&t.n, in8, &out, &e), BRAID_OK);
    const uint8_t wl[] = {2, 0x02, 0, 0x80};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wl[i]);
    done(&t.n, &out);
    /* signed right shifts fill with the sign; a shift by >= bits or < 0
     * leaves that fill alone: -1 for negatives, 0 else (opset 28) */
    int8_t xs[] = {-128, -1, 64, -7, 64}, ss[] = {7, 9, -1, 1, 6};
    bd_tensor ins[2] = {{BRAID_DTYPE_INT8, 1, {5}, xs}, {BRAID_DTYPE_INT8, 1, {5}, ss}};
    tnode_init(&t, BD_OP_BitShift, 28, 2, 1);
    attr_str(&t, "direction", "RIGHT");
    CHECK_EQ_INT(run(&t.n, ins, &out, &e), BRAID_OK);
    const int8_t wr[] = {-1, -1, 0, -4, 1};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], wr[i]);
    done(&t.n, &out);
    int32_t xl[] = {1, -1, 3}, sl[] = {31, 32, 1};
    bd_tensor inl[2] = {{BRAID_DTYPE_INT32, 1, {3}, xl}, {BRAID_DTYPE_INT32, 1, {3}, sl}};
    tnode_init(&t, BD_OP_BitShift, 28, 2, 1);
    attr_str(&t, "direction", "LEFT");
    CHECK_EQ_INT(run(&t.n, inl, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int32_t *)out.data)[0], INT32_MIN);
    CHECK_EQ_INT(((int32_t *)out.data)[1], 0);
    CHECK_EQ_INT(((int32_t *)out.data)[2], 6);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_BitShift, 11, 2, 1); /* no direction */
    CHECK_EQ_INT(run(&t.n, in8, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'direction' is missing");
    done(&t.n, &out);
    /* the bitwise ops on int16 (2, 2) x (2,) */
    int16_t a[] = {0x0f0f, -1, 0, 0x1234}, b[] = {0x00ff, 0x7000};
    bd_tensor inb[2] = {{BRAID_DTYPE_INT16, 2, {2, 2}, a}, {BRAID_DTYPE_INT16, 1, {2}, b}};
    const int ops[3] = {BD_OP_BitwiseAnd, BD_OP_BitwiseOr, BD_OP_BitwiseXor};
    for (int o = 0; o < 3; o++) {
        tnode_init(&t, ops[o], 18, 2, 1);
        CHECK_EQ_INT(run(&t.n, inb, &out, &e), BRAID_OK);
        for (int i = 0; i < 4; i++) {
            int16_t x = a[i], y = b[i % 2];
            CHECK_EQ_INT(((int16_t *)out.data)[i], (int16_t)(o == 0 ? x & y : o == 1 ? x | y : x ^ y));
        }
        done(&t.n, &out);
    }
}

static void test_compare_more(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    float a[] = {1, 2, NAN, 3}, b[] = {2, 2, 1, NAN};
    bd_tensor in[2] = {{F32, 1, {4}, a}, {F32, 1, {4}, b}};
    const uint8_t wle[] = {1, 1, 0, 0}, wge[] = {0, 1, 0, 0}; /* NaN compares false */
    tnode_init(&t, BD_OP_LessOrEqual, 16, 2, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wle[i]);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_GreaterOrEqual, 16, 2, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wge[i]);
    done(&t.n, &out);
    uint8_t x[] = {0, 1, 1, 0}, y[] = {1, 1};
    bd_tensor bin[2] = {{BRAID_DTYPE_BOOL, 2, {2, 2}, x}, {BRAID_DTYPE_BOOL, 1, {2}, y}};
    tnode_init(&t, BD_OP_Xor, 7, 2, 1);
    CHECK_EQ_INT(run(&t.n, bin, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], x[i] ^ y[i % 2]);
    done(&t.n, &out);
}

static void test_variadic(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    /* Max((4,), (2,3,1), (2,3,4)): out[i][j][k] = max(a[k], b[i][j], c[i][j][k]); NaN propagates */
    float a[4] = {0, 10, -5, NAN}, b[6], c[24];
    for (int i = 0; i < 6; i++) b[i] = (float)i;
    for (int i = 0; i < 24; i++) c[i] = (float)(24 - i) * 0.5f;
    bd_tensor in[3] = {{F32, 1, {4}, a}, {F32, 3, {2, 3, 1}, b}, {F32, 3, {2, 3, 4}, c}};
    const int ops[4] = {BD_OP_Max, BD_OP_Min, BD_OP_Sum, BD_OP_Mean};
    for (int o = 0; o < 4; o++) {
        tnode_init(&t, ops[o], 13, 3, 1);
        CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 3);
        CHECK_EQ_INT(bd_numel(&out), 24);
        int ok = 1;
        for (int i = 0; i < 24; i++) {
            float x = a[i % 4], y = b[i / 4], z = c[i], w;
            if (o == 0) w = isnan(x) ? NAN : fmaxf(fmaxf(x, y), z);
            else if (o == 1) w = isnan(x) ? NAN : fminf(fminf(x, y), z);
            else w = (o == 2) ? (x + y) + z : ((x + y) + z) / 3;
            float g = ((float *)out.data)[i];
            ok &= (isnan(w) && isnan(g)) || g == w;
        }
        CHECK(ok);
        done(&t.n, &out);
    }
    /* com.microsoft BiasAdd: X (1,2,3) + bias (3,) + skip (1,2,3), added left to right */
    float bx[6] = {1, 2, 3, 4, 5, 6}, bb[3] = {0.5f, -1, 10}, bs[6] = {100, 200, 300, 400, 500, 600};
    bd_tensor bin[3] = {{F32, 3, {1, 2, 3}, bx}, {F32, 1, {3}, bb}, {F32, 3, {1, 2, 3}, bs}};
    tnode_init(&t, BD_OP_MS_BiasAdd, 1, 3, 1);
    t.n.domain = "com.microsoft";
    CHECK_EQ_INT(run(&t.n, bin, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK(((float *)out.data)[i] == (bx[i] + bb[i % 3]) + bs[i]);
    done(&t.n, &out);
    /* one input: itself; int64 Min of two */
    tnode_init(&t, BD_OP_Sum, 13, 1, 1);
    CHECK_EQ_INT(run(&t.n, &in[2], &out, &e), BRAID_OK);
    CHECK(memcmp(out.data, c, sizeof c) == 0);
    done(&t.n, &out);
    int64_t p[] = {INT64_MIN, 5, 7}, q[] = {0, INT64_MAX, -7};
    bd_tensor iin[2] = {{BRAID_DTYPE_INT64, 1, {3}, p}, {BRAID_DTYPE_INT64, 1, {3}, q}};
    tnode_init(&t, BD_OP_Min, 13, 2, 1);
    CHECK_EQ_INT(run(&t.n, iin, &out, &e), BRAID_OK);
    CHECK(((int64_t *)out.data)[0] == INT64_MIN && ((int64_t *)out.data)[1] == 5 && ((int64_t *)out.data)[2] == -7);
    done(&t.n, &out);
    /* Sum takes floats only */
    tnode_init(&t, BD_OP_Sum, 13, 2, 1);
    CHECK_EQ_INT(run(&t.n, iin, &out, &e), BRAID_ERR_DTYPE);
    done(&t.n, &out);
    /* an empty broadcast: (0, 4) with (4,) */
    bd_tensor ein[2] = {{F32, 2, {0, 4}, a}, {F32, 1, {4}, a}};
    tnode_init(&t, BD_OP_Max, 13, 2, 1);
    CHECK_EQ_INT(run(&t.n, ein, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 0);
    CHECK_EQ_INT(out.dims[1], 4);
    done(&t.n, &out);
}

/* Opset < 7: 'broadcast' and 'axis' (B's dims placed at axis of A), and
 * PRelu's slope of C values applied on the channel axis. */
static void test_legacy(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    float a[24], b[6] = {100, 200, 300, 400, 500, 600};
    for (int i = 0; i < 24; i++) a[i] = (float)i;
    /* A (2,3,4), B (3,) at axis 1: out[i][j][k] = a + b[j] */
    bd_tensor in[2] = {{F32, 3, {2, 3, 4}, a}, {F32, 1, {3}, b}};
    tnode_init(&t, BD_OP_Add, 6, 2, 1);
    attr_int(&t, "broadcast", 1);
    attr_int(&t, "axis", 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    int ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == a[i] + b[(i / 4) % 3];
    CHECK(ok);
    done(&t.n, &out);
    /* A (2,3,4), B (2,3) at axis 0 with Mul; axis -3 is the same place */
    bd_tensor in2[2] = {{F32, 3, {2, 3, 4}, a}, {F32, 2, {2, 3}, b}};
    tnode_init(&t, BD_OP_Mul, 6, 2, 1);
    attr_int(&t, "broadcast", 1);
    attr_int(&t, "axis", -3);
    CHECK_EQ_INT(run(&t.n, in2, &out, &e), BRAID_OK);
    ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == a[i] * b[i / 4];
    CHECK(ok);
    done(&t.n, &out);
    /* broadcast=1 without axis: B matches A's trailing dims */
    bd_tensor in3[2] = {{F32, 3, {2, 3, 4}, a}, {F32, 1, {4}, b}};
    tnode_init(&t, BD_OP_Sub, 1, 2, 1);
    attr_int(&t, "broadcast", 1);
    CHECK_EQ_INT(run(&t.n, in3, &out, &e), BRAID_OK);
    ok = 1;
    for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == a[i] - b[i % 4];
    CHECK(ok);
    done(&t.n, &out);
    /* no 'broadcast': the shapes must be equal */
    tnode_init(&t, BD_OP_Sub, 6, 2, 1);
    CHECK_EQ_INT(run(&t.n, in3, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "'broadcast' is not set");
    done(&t.n, &out);
    /* a B that does not fit at that axis */
    tnode_init(&t, BD_OP_Add, 6, 2, 1);
    attr_int(&t, "broadcast", 1);
    attr_int(&t, "axis", 2);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    done(&t.n, &out);
    /* PRelu opset 6: X (2,3,4), slope (3,) per channel */
    float x[24], s[3] = {0.5f, 2, -1};
    for (int i = 0; i < 24; i++) x[i] = (float)(i % 2 ? -i : i);
    bd_tensor pin[2] = {{F32, 3, {2, 3, 4}, x}, {F32, 1, {3}, s}};
    for (int opset = 6; opset <= 16; opset += 10) { /* at 16, the one axis of size 3 (onnx's reference) */
        tnode_init(&t, BD_OP_PRelu, opset, 2, 1);
        CHECK_EQ_INT(run(&t.n, pin, &out, &e), BRAID_OK);
        ok = 1;
        for (int i = 0; i < 24; i++) ok &= ((float *)out.data)[i] == (x[i] > 0 ? x[i] : x[i] * s[(i / 4) % 3]);
        CHECK(ok);
        done(&t.n, &out);
    }
}

static void test_half_and_wrap(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    /* float16 2048 + 1 = 2049 is a tie between 2048 and 2050: to even, 2048;
     * 2048 + 3 = 2051 goes to 2052 (np.float16(2048) + np.float16(3)) */
    uint16_t a[] = {0x6800, 0x6800}, b[] = {0x3c00, 0x4200};
    bd_tensor in[2] = {{BRAID_DTYPE_FLOAT16, 1, {2}, a}, {BRAID_DTYPE_FLOAT16, 1, {2}, b}};
    tnode_init(&t, BD_OP_Add, 14, 2, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x6800);
    CHECK_EQ_INT(((uint16_t *)out.data)[1], 0x6802);
    done(&t.n, &out);
    /* bfloat16 3 * 3 = 9 (0x4110); and Less gives bool */
    uint16_t c[] = {0x4040}, d[] = {0x4040};
    bd_tensor bin[2] = {{BRAID_DTYPE_BFLOAT16, 1, {1}, c}, {BRAID_DTYPE_BFLOAT16, 1, {1}, d}};
    tnode_init(&t, BD_OP_Mul, 14, 2, 1);
    CHECK_EQ_INT(run(&t.n, bin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x4110);
    done(&t.n, &out);
    /* integers wrap: int8 127 + 1, uint8 0 - 1, int64 max * 2 */
    int8_t x8[] = {127}, y8[] = {1};
    bd_tensor in8[2] = {{BRAID_DTYPE_INT8, 1, {1}, x8}, {BRAID_DTYPE_INT8, 1, {1}, y8}};
    tnode_init(&t, BD_OP_Add, 14, 2, 1);
    CHECK_EQ_INT(run(&t.n, in8, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], -128);
    done(&t.n, &out);
    uint8_t u0[] = {0}, u1[] = {1};
    bd_tensor inu[2] = {{BRAID_DTYPE_UINT8, 1, {1}, u0}, {BRAID_DTYPE_UINT8, 1, {1}, u1}};
    tnode_init(&t, BD_OP_Sub, 14, 2, 1);
    CHECK_EQ_INT(run(&t.n, inu, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 255);
    done(&t.n, &out);
    int64_t l[] = {INT64_MAX}, two[] = {2};
    bd_tensor inl[2] = {{BRAID_DTYPE_INT64, 1, {1}, l}, {BRAID_DTYPE_INT64, 1, {1}, two}};
    tnode_init(&t, BD_OP_Mul, 14, 2, 1);
    CHECK_EQ_INT(run(&t.n, inl, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int64_t *)out.data)[0], -2);
    done(&t.n, &out);
    /* integer Pow: exact in 64 bits (3^39 = 4052555153018976267), int32
     * wraps (2^31), a negative exponent truncates (2^-1 = 0), a float
     * exponent goes through double (9^0.5 = 3) */
    int64_t pb[] = {3, 2, 9}, pe[] = {39, -1, 2};
    bd_tensor pin[2] = {{BRAID_DTYPE_INT64, 1, {3}, pb}, {BRAID_DTYPE_INT64, 1, {3}, pe}};
    tnode_init(&t, BD_OP_Pow, 15, 2, 1);
    CHECK_EQ_INT(run(&t.n, pin, &out, &e), BRAID_OK);
    CHECK(((int64_t *)out.data)[0] == 4052555153018976267ll);
    CHECK_EQ_INT(((int64_t *)out.data)[1], 0);
    CHECK_EQ_INT(((int64_t *)out.data)[2], 81);
    done(&t.n, &out);
    int32_t ib[] = {2, 9}, ie[] = {31, 2};
    float fe[] = {31, 0.5f};
    bd_tensor iin[2] = {{BRAID_DTYPE_INT32, 1, {2}, ib}, {BRAID_DTYPE_INT32, 1, {2}, ie}};
    tnode_init(&t, BD_OP_Pow, 15, 2, 1);
    CHECK_EQ_INT(run(&t.n, iin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int32_t *)out.data)[0], INT32_MIN);
    done(&t.n, &out);
    iin[1] = (bd_tensor){F32, 1, {2}, fe};
    tnode_init(&t, BD_OP_Pow, 15, 2, 1);
    CHECK_EQ_INT(run(&t.n, iin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int32_t *)out.data)[1], 3);
    done(&t.n, &out);
    /* Where moves float16 and int4 elements by size */
    uint8_t cond[] = {1, 0, 1};
    uint16_t hx[] = {0x3c00, 0x4000, 0x4200}, hy[] = {0xbc00};
    bd_tensor win[3] = {{BRAID_DTYPE_BOOL, 1, {3}, cond}, {BRAID_DTYPE_FLOAT16, 1, {3}, hx},
                        {BRAID_DTYPE_FLOAT16, 0, {0}, hy}};
    tnode_init(&t, BD_OP_Where, 16, 3, 1);
    CHECK_EQ_INT(run(&t.n, win, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x3c00);
    CHECK_EQ_INT(((uint16_t *)out.data)[1], 0xbc00);
    CHECK_EQ_INT(((uint16_t *)out.data)[2], 0x4200);
    done(&t.n, &out);
    int8_t i4x[] = {-8, 7, 3}, i4y[] = {-1, -2, -3};
    bd_tensor w4[3] = {{BRAID_DTYPE_BOOL, 1, {3}, cond}, {BRAID_DTYPE_INT4, 1, {3}, i4x}, {BRAID_DTYPE_INT4, 1, {3}, i4y}};
    tnode_init(&t, BD_OP_Where, 16, 3, 1);
    CHECK_EQ_INT(run(&t.n, w4, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], -8);
    CHECK_EQ_INT(((int8_t *)out.data)[1], -2);
    done(&t.n, &out);
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
    test_mod();
    test_bitshift_bitwise();
    test_compare_more();
    test_variadic();
    test_legacy();
    test_half_and_wrap();
    return check_done();
}
