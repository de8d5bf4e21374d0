/* test_unary.c: the unary family: activations against their formulas, Clip
 * with attributes (opset 6) and with optional inputs (opset 13), integer
 * Relu/Neg/Abs/Clip, Not, and Cast between dtypes (float -> int truncates
 * toward zero, float -> bool is x != 0, float16 rounds to nearest even).
 * Float results are compared with a relative tolerance of 1e-6 (libm). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <float.h>
#include <stdlib.h>




static const float xs[] = {-3.5f, -1, -0.25f, 0, 0.25f, 1, 2.5f, 7};
#define NX 8

static double ref(int op, double v)
{
    switch (op) {
    case BD_OP_Relu: return v > 0 ? v : 0;
    case BD_OP_LeakyRelu: return v >= 0 ? v : 0.1 * v;
    case BD_OP_Sigmoid: return 1 / (1 + exp(-v));
    case BD_OP_HardSigmoid: return fmax(0, fmin(1, 0.2 * v + 0.5));
    case BD_OP_HardSwish: return v * fmax(0, fmin(1, v / 6 + 0.5));
    case BD_OP_Tanh: return tanh(v);
    case BD_OP_Exp: return exp(v);
    case BD_OP_Neg: return -v;
    case BD_OP_Abs: return fabs(v);
    case BD_OP_Erf: return erf(v);
    case BD_OP_Floor: return floor(v);
    case BD_OP_Ceil: return ceil(v);
    default: return NAN;
    }
}

static void test_float_ops(void)
{
    const int ops[] = {BD_OP_Relu, BD_OP_LeakyRelu, BD_OP_Sigmoid, BD_OP_HardSigmoid,
                       BD_OP_HardSwish, BD_OP_Tanh, BD_OP_Exp, BD_OP_Neg, BD_OP_Abs,
                       BD_OP_Erf, BD_OP_Floor, BD_OP_Ceil};
    bd_tensor in = {F32, 2, {2, 4}, (void *)xs}, out = {0};
    bd_err e = {0};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        bd_attr alpha = attr_f("alpha", 0.1f);
        bd_node n = op_node(ops[o], 13, 1, 1, &alpha, ops[o] == BD_OP_LeakyRelu);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 2);
        for (int i = 0; i < NX; i++) CHECK_NEAR(((float *)out.data)[i], ref(ops[o], xs[i]), 1e-7, 1e-6);
        done(&n, &out);
    }
    /* Log, Sqrt, Reciprocal on positives */
    float p[] = {0.5f, 1, 4, 100};
    bd_tensor pin = {F32, 1, {4}, p};
    const int pops[] = {BD_OP_Log, BD_OP_Sqrt, BD_OP_Reciprocal};
    for (int o = 0; o < 3; o++) {
        bd_node n = op_node(pops[o], 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &pin, &out, &e), BRAID_OK);
        for (int i = 0; i < 4; i++) {
            double want = o == 0 ? log(p[i]) : o == 1 ? sqrt(p[i]) : 1.0 / p[i];
            CHECK_NEAR(((float *)out.data)[i], want, 1e-7, 1e-6);
        }
        done(&n, &out);
    }
    /* Sigmoid does not take int32 */
    int32_t iv[2] = {1, 2};
    bd_tensor iin = {BRAID_DTYPE_INT32, 1, {2}, iv};
    bd_node n = op_node(BD_OP_Sigmoid, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &iin, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "int32");
    done(&n, &out);
}

static void test_int_ops(void)
{
    int32_t x[] = {-5, 0, 7, INT32_MIN};
    bd_tensor in = {BRAID_DTYPE_INT32, 1, {4}, x}, out = {0};
    bd_err e = {0};
    const int ops[] = {BD_OP_Relu, BD_OP_Neg, BD_OP_Abs};
    /* Neg and Abs wrap at INT32_MIN, as two's complement does. */
    const int32_t want[3][4] = {{0, 0, 7, 0}, {5, 0, -7, INT32_MIN}, {5, 0, 7, INT32_MIN}};
    for (int o = 0; o < 3; o++) {
        bd_node n = op_node(ops[o], 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], want[o][i]);
        done(&n, &out);
    }
    uint8_t b[] = {0, 1, 1, 0};
    bd_tensor bin = {BRAID_DTYPE_BOOL, 2, {2, 2}, b};
    bd_node n = op_node(BD_OP_Not, 1, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_BOOL);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], !b[i]);
    done(&n, &out);
}

static void test_clip(void)
{
    bd_tensor x = {F32, 1, {NX}, (void *)xs}, out = {0};
    bd_err e = {0};
    /* opset 6: attributes; max omitted means no upper bound */
    bd_attr lo = attr_f("min", -1);
    bd_node n = op_node(BD_OP_Clip, 6, 1, 1, &lo, 1);
    CHECK_EQ_INT(run(&n, &x, &out, &e), BRAID_OK);
    for (int i = 0; i < NX; i++) CHECK_NEAR(((float *)out.data)[i], fmax(xs[i], -1), 0, 0);
    done(&n, &out);
    /* opset 13: min omitted (UNDEFINED), max = 1 */
    float mx = 1;
    bd_tensor in[3] = {x, {BRAID_DTYPE_UNDEFINED, -1, {0}, NULL}, {F32, 0, {0}, &mx}};
    n = op_node(BD_OP_Clip, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < NX; i++) CHECK_NEAR(((float *)out.data)[i], fmin(xs[i], 1), 0, 0);
    done(&n, &out);
    /* min > max: every element becomes max */
    float mn = 2;
    bd_tensor in2[3] = {x, {F32, 0, {0}, &mn}, {F32, 0, {0}, &mx}};
    n = op_node(BD_OP_Clip, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    for (int i = 0; i < NX; i++) CHECK_NEAR(((float *)out.data)[i], 1, 0, 0);
    done(&n, &out);
    /* int8 with only min given */
    int8_t xi[] = {-128, -3, 0, 127}, mi = -2;
    bd_tensor in3[2] = {{BRAID_DTYPE_INT8, 1, {4}, xi}, {BRAID_DTYPE_INT8, 0, {0}, &mi}};
    n = op_node(BD_OP_Clip, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in3, &out, &e), BRAID_OK);
    const int8_t wi[] = {-2, -2, 0, 127};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], wi[i]);
    done(&n, &out);
    /* a bound of another dtype is refused, naming both */
    int64_t m64 = 0;
    bd_tensor in4[2] = {x, {BRAID_DTYPE_INT64, 0, {0}, &m64}};
    n = op_node(BD_OP_Clip, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in4, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "int64");
    CHECK_CONTAINS(e.msg, "float32");
    done(&n, &out);
    /* before opset 11 Clip is float only: its default bounds (FLT_MAX) have
     * no int32 value */
    n = op_node(BD_OP_Clip, 6, 1, 1, &lo, 1);
    int32_t x32[] = {1, 2};
    bd_tensor in5 = {BRAID_DTYPE_INT32, 1, {2}, x32};
    CHECK_EQ_INT(run(&n, &in5, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input has dtype int32, which Clip does not take");
    done(&n, &out);
}

static void test_cast(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    /* float -> int32 truncates toward zero; -> bool is x != 0 */
    float f[] = {-1.7f, 1.7f, 2.5f, -0.0f, 0.25f, 100};
    bd_tensor fin = {F32, 1, {6}, f};
    bd_attr to = attr_i("to", BRAID_DTYPE_INT32);
    bd_node n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT32);
    const int32_t wi[] = {-1, 1, 2, 0, 0, 100};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], wi[i]);
    done(&n, &out);
    to = attr_i("to", BRAID_DTYPE_BOOL);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_OK);
    const uint8_t wb[] = {1, 1, 1, 0, 1, 1};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wb[i]);
    done(&n, &out);
    /* int64 -> double, exact beyond 2^53 only for representable values */
    int64_t l[] = {-3, (int64_t)1 << 53, 7};
    bd_tensor lin = {BRAID_DTYPE_INT64, 1, {3}, l};
    to = attr_i("to", BRAID_DTYPE_DOUBLE);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &lin, &out, &e), BRAID_OK);
    for (int i = 0; i < 3; i++) CHECK_NEAR(((double *)out.data)[i], (double)l[i], 0, 0);
    done(&n, &out);
    /* float -> float16 -> float: 1, 0.5, 65504 (largest), 1 + 2^-11 (a tie,
     * rounds to even: 1), 2^-24 (smallest subnormal), 70000 (inf) */
    float h[] = {1, 0.5f, 65504, 1 + 0x1p-11f, 0x1p-24f, 70000};
    const uint16_t wh[] = {0x3c00, 0x3800, 0x7bff, 0x3c00, 0x0001, 0x7c00};
    bd_tensor hin = {F32, 1, {6}, h};
    to = attr_i("to", BRAID_DTYPE_FLOAT16);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &hin, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((uint16_t *)out.data)[i], wh[i]);
    bd_tensor back_in = out;
    bd_tensor back = {0};
    to = attr_i("to", BRAID_DTYPE_FLOAT);
    bd_node n2 = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n2, &back_in, &back, &e), BRAID_OK);
    const float wf[] = {1, 0.5f, 65504, 1, 0x1p-24f, INFINITY};
    for (int i = 0; i < 6; i++) CHECK(((float *)back.data)[i] == wf[i]);
    done(&n2, &back);
    done(&n, &out);
    /* to string: UNSUPPORTED at parse; no 'to': INVALID_MODEL */
    to = attr_i("to", BRAID_DTYPE_STRING);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "string");
    done(&n, &out);
    n = op_node(BD_OP_Cast, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'to'");
    done(&n, &out);
}

/* The float32 Exp, Sigmoid, Tanh and Erf kernels use vectorizable
 * approximations: within 4 ulp of the double result on a sweep of [-30, 30]
 * (results below FLT_MIN excepted: they flush toward 0 as float32 libm does),
 * and exact on inf, NaN and -0. */
static void test_fast_math_accuracy(void)
{
    enum { N = 200001 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * 3e-4f;
    bd_tensor in = {F32, 1, {N}, x}, out = {0};
    bd_err e = {0};
    const int ops[] = {BD_OP_Exp, BD_OP_Sigmoid, BD_OP_Tanh, BD_OP_Erf};
    for (int o = 0; o < 4; o++) {
        bd_node n = op_node(ops[o], 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        double worst = 0;
        for (int i = 0; i < N; i++) {
            double v = x[i];
            double r = o == 0 ? exp(v) : o == 1 ? 1 / (1 + exp(-v)) : o == 2 ? tanh(v) : erf(v);
            float g = ((float *)out.data)[i], rf = (float)fabs(r);
            if (fabs(r) < FLT_MIN || isinf(rf)) continue;
            double ulp = nextafterf(rf, INFINITY) - rf, err = fabs(g - r) / ulp;
            worst = err > worst ? err : worst;
        }
        CHECK(worst <= 4);
        if (worst > 4) fprintf(stderr, "%s: %.2f ulp\n", bd_op_table[ops[o]].name, worst);
        done(&n, &out);
        float sp[] = {INFINITY, -INFINITY, NAN, -0.0f, 100, -100};
        bd_tensor sin_ = {F32, 1, {6}, sp};
        n = op_node(ops[o], 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &sin_, &out, &e), BRAID_OK);
        const float *y = out.data;
        for (int i = 0; i < 6; i++) {
            double v = sp[i];
            float r = (float)(o == 0 ? exp(v) : o == 1 ? 1 / (1 + exp(-v)) : o == 2 ? tanh(v) : erf(v));
            int same = (isnan(r) && isnan(y[i])) ||
                       ((y[i] == r || fabsf(y[i] - r) <= FLT_MIN) && signbit(y[i]) == signbit(r));
            CHECK(same);
            if (!same) fprintf(stderr, "%s(%g) = %g, want %g\n", bd_op_table[ops[o]].name, v, y[i], r);
        }
        done(&n, &out);
    }
    free(x);
}

int main(void)
{
    test_fast_math_accuracy();
    g_threads = 3; /* the same checks, the work split across threads */
    test_fast_math_accuracy();
    g_threads = 1;
    test_float_ops();
    test_int_ops();
    test_clip();
    test_cast();
    return check_done();
}
