/* test_unary.c: the unary family (and a few activations that were here
 * first): the math against libm in double, Round's ties to even, Sign, IsNaN
 * and IsInf with their flags (float16 and float8 too), BitwiseNot, integer
 * Abs/Neg/Erf, Clip with attributes (opset 6), optional inputs (opset 13),
 * inverted bounds and integer types, Not, float16/bfloat16 rounded once,
 * and the vectorized exp/log/tanh/erf within 4 ulp. Float results are
 * compared with a relative tolerance of 1e-6 (libm) unless said. */
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

/* Every step-th element of a whole-array run (the vector loop) has the bits
 * of the same element run alone (the scalar tail). */
static int same_alone(int op, const float *x, const float *y, int n, int step)
{
    int ok = 1;
    bd_err e = {0};
    for (int i = 0; i < n; i += step) {
        bd_tensor in = {F32, 1, {1}, (void *)&x[i]}, out = {0};
        bd_node nd = op_node(op, 13, 1, 1, NULL, 0);
        if (run(&nd, &in, &out, &e) != BRAID_OK) return 0;
        float a = ((float *)out.data)[0];
        if (memcmp(&a, &y[i], sizeof a) != 0) {
            fprintf(stderr, "%s(%.9g): %.9g alone, %.9g in a vector\n", nd.op_type, x[i], a, y[i]);
            ok = 0;
        }
        done(&nd, &out);
    }
    return ok;
}

/* The float32 Exp, Sigmoid, Tanh and Erf kernels use vectorizable
 * approximations: within 4 ulp of the double result on a sweep of [-30, 30]
 * (Tanh and Erf, rational fits: 7 ulp; results below FLT_MIN excepted: they
 * flush toward 0 as float32 libm does), and exact on inf, NaN and -0. */
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
        double bound = o >= 2 ? 7 : 4;
        CHECK(worst <= bound);
        if (worst > bound) fprintf(stderr, "%s: %.2f ulp\n", bd_op_table[ops[o]].name, worst);
        if (g_threads == 1) CHECK(same_alone(ops[o], x, out.data, N, 97));
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


/* The libm functions and Reciprocal against double on [-3, 3] (Acosh on
 * [1, 7], Atanh and the arcs on (-1, 1)); float libm is within 1 ulp. */
static void test_math(void)
{
    enum { N = 601 };
    float x[N];
    bd_err e = {0};
    const int ops[] = {BD_OP_Sin, BD_OP_Cos, BD_OP_Tan, BD_OP_Asin, BD_OP_Acos, BD_OP_Atan, BD_OP_Sinh,
                       BD_OP_Cosh, BD_OP_Asinh, BD_OP_Acosh, BD_OP_Atanh, BD_OP_Reciprocal, BD_OP_Log, BD_OP_Sqrt};
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        int op = ops[o];
        for (int i = 0; i < N; i++) {
            double t = (i - N / 2) / (double)(N / 2); /* [-1, 1] */
            x[i] = (float)(op == BD_OP_Acosh ? 4 + 3 * t : op == BD_OP_Asin || op == BD_OP_Acos || op == BD_OP_Atanh
                                                               ? 0.999 * t
                           : op == BD_OP_Log || op == BD_OP_Sqrt ? 50 * (t + 1.001) : 3 * t);
        }
        bd_tensor in = {F32, 1, {N}, x}, out = {0};
        bd_node n = op_node(op, 22, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        int ok = 1;
        for (int i = 0; i < N; i++) {
            double v = x[i], w;
            switch (op) {
            case BD_OP_Sin: w = sin(v); break;
            case BD_OP_Cos: w = cos(v); break;
            case BD_OP_Tan: w = tan(v); break;
            case BD_OP_Asin: w = asin(v); break;
            case BD_OP_Acos: w = acos(v); break;
            case BD_OP_Atan: w = atan(v); break;
            case BD_OP_Sinh: w = sinh(v); break;
            case BD_OP_Cosh: w = cosh(v); break;
            case BD_OP_Asinh: w = asinh(v); break;
            case BD_OP_Acosh: w = acosh(v); break;
            case BD_OP_Atanh: w = atanh(v); break;
            case BD_OP_Log: w = log(v); break;
            case BD_OP_Sqrt: w = sqrt(v); break;
            default: w = 1 / v; break;
            }
            double got = ((float *)out.data)[i];
            if (!(got == w || fabs(got - w) <= 1e-6 * fabs(w) + 1e-30)) {
                ok = 0;
                fprintf(stderr, "%s(%g) = %.9g, want %.9g\n", n.op_type, v, got, w);
            }
        }
        CHECK(ok);
        done(&n, &out);
    }
    /* outside their domains: NaN, as libm */
    float bad[] = {-2, 2};
    bd_tensor bin = {F32, 1, {2}, bad}, out = {0};
    bd_node n = op_node(BD_OP_Asin, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
    CHECK(isnan(((float *)out.data)[0]) && isnan(((float *)out.data)[1]));
    done(&n, &out);
}

/* Round: halves to even; Sign: -1, 0, 1, NaN and -0 kept; both in double too. */
static void test_round_sign(void)
{
    float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.3f, -4.5f, 0.9f, -0.0f, NAN, INFINITY, 8388609.0f};
    const float wr[] = {0, 2, 2, -0.0f, -2, 2, -4, 1, -0.0f, NAN, INFINITY, 8388609.0f};
    const float ws[] = {1, 1, 1, -1, -1, 1, -1, 1, -0.0f, NAN, 1, 1};
    bd_err e = {0};
    for (int k = 0; k < 2; k++) {
        bd_tensor in = {F32, 1, {12}, x}, out = {0};
        bd_node n = op_node(k ? BD_OP_Sign : BD_OP_Round, 22, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        const float *w = k ? ws : wr;
        for (int i = 0; i < 12; i++) {
            float g = ((float *)out.data)[i];
            CHECK((isnan(w[i]) && isnan(g)) || (g == w[i] && signbit(g) == signbit(w[i])));
        }
        done(&n, &out);
    }
    double d[] = {2.5, -3.5, 1e300};
    bd_tensor din = {BRAID_DTYPE_DOUBLE, 1, {3}, d}, out = {0};
    bd_node n = op_node(BD_OP_Round, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &din, &out, &e), BRAID_OK);
    CHECK(((double *)out.data)[0] == 2 && ((double *)out.data)[1] == -4 && ((double *)out.data)[2] == 1e300);
    done(&n, &out);
    int16_t s16[] = {-300, 0, 7, INT16_MIN};
    bd_tensor sin_ = {BRAID_DTYPE_INT16, 1, {4}, s16};
    n = op_node(BD_OP_Sign, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &sin_, &out, &e), BRAID_OK);
    const int16_t w16[] = {-1, 0, 1, -1};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int16_t *)out.data)[i], w16[i]);
    done(&n, &out);
}

static void test_isnan_isinf(void)
{
    float x[] = {NAN, INFINITY, -INFINITY, 0, -1, FLT_MAX};
    bd_err e = {0};
    /* detect_negative, detect_positive -> which of the 6 are true */
    static const struct { int neg, pos; uint8_t w[6]; } cases[] = {
        {1, 1, {0, 1, 1, 0, 0, 0}}, {0, 1, {0, 1, 0, 0, 0, 0}}, {1, 0, {0, 0, 1, 0, 0, 0}}, {0, 0, {0, 0, 0, 0, 0, 0}}};
    for (int c = 0; c < 4; c++) {
        tnode t;
        tnode_init(&t, BD_OP_IsInf, 20, 1, 1);
        attr_int(&t, "detect_negative", cases[c].neg);
        attr_int(&t, "detect_positive", cases[c].pos);
        bd_tensor in = {F32, 1, {6}, x}, out = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dtype, BRAID_DTYPE_BOOL);
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], cases[c].w[i]);
        done(&t.n, &out);
    }
    /* float16: 0x7e00 NaN, 0x7c00 inf, 0xfc00 -inf, 0x7bff 65504 */
    uint16_t h[] = {0x7e00, 0x7c00, 0xfc00, 0x7bff};
    bd_tensor hin = {BRAID_DTYPE_FLOAT16, 1, {4}, h}, out = {0};
    bd_node n = op_node(BD_OP_IsNaN, 20, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &hin, &out, &e), BRAID_OK);
    const uint8_t wn[] = {1, 0, 0, 0};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wn[i]);
    done(&n, &out);
    /* float8e4m3fn has no inf: 0x7f is NaN, 0x7e is 448 */
    uint8_t f8[] = {0x7f, 0x7e, 0xff, 0x00};
    bd_tensor f8in = {BRAID_DTYPE_FLOAT8E4M3FN, 1, {4}, f8};
    n = op_node(BD_OP_IsNaN, 20, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &f8in, &out, &e), BRAID_OK);
    const uint8_t w8[] = {1, 0, 1, 0};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], w8[i]);
    done(&n, &out);
    n = op_node(BD_OP_IsInf, 20, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &f8in, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], 0);
    done(&n, &out);
    /* IsNaN of an integer is a dtype error */
    int32_t iv[2] = {0};
    bd_tensor iin = {BRAID_DTYPE_INT32, 1, {2}, iv};
    n = op_node(BD_OP_IsNaN, 20, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &iin, &out, &e), BRAID_ERR_DTYPE);
    done(&n, &out);
}

static void test_int_more(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    uint8_t u[] = {0, 1, 0x0f, 0xff};
    bd_tensor uin = {BRAID_DTYPE_UINT8, 1, {4}, u};
    bd_node n = op_node(BD_OP_BitwiseNot, 18, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &uin, &out, &e), BRAID_OK);
    const uint8_t wn[] = {0xff, 0xfe, 0xf0, 0};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wn[i]);
    done(&n, &out);
    n = op_node(BD_OP_Abs, 13, 1, 1, NULL, 0); /* unsigned: itself */
    CHECK_EQ_INT(run(&n, &uin, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], u[i]);
    done(&n, &out);
    int64_t l[] = {-9, 0, 1, 4, INT64_MIN};
    bd_tensor lin = {BRAID_DTYPE_INT64, 1, {5}, l};
    n = op_node(BD_OP_BitwiseNot, 18, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &lin, &out, &e), BRAID_OK);
    for (int i = 0; i < 5; i++) CHECK(((int64_t *)out.data)[i] == ~l[i]);
    done(&n, &out);
    /* Erf of integers: float(erf(x)) truncated: erf(4) rounds to 1.0f -> 1 (onnx's reference) */
    n = op_node(BD_OP_Erf, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &lin, &out, &e), BRAID_OK);
    const int64_t we[] = {-1, 0, 0, 1, -1};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], we[i]);
    done(&n, &out);
    /* Clip with min > max gives max, integers too; uint16 with a max only */
    int32_t x[] = {-5, 0, 5, 50};
    int32_t lo = 10, hi = 3;
    bd_tensor in[3] = {{BRAID_DTYPE_INT32, 1, {4}, x}, {BRAID_DTYPE_INT32, 0, {0}, &lo}, {BRAID_DTYPE_INT32, 0, {0}, &hi}};
    n = op_node(BD_OP_Clip, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], 3);
    done(&n, &out);
    uint16_t ux[] = {0, 7, 65535}, umax = 9;
    bd_tensor uin2[3] = {{BRAID_DTYPE_UINT16, 1, {3}, ux}, {BRAID_DTYPE_UNDEFINED, -1, {0}, NULL},
                         {BRAID_DTYPE_UINT16, 0, {0}, &umax}};
    n = op_node(BD_OP_Clip, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, uin2, &out, &e), BRAID_OK);
    const uint16_t wu[] = {0, 7, 9};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((uint16_t *)out.data)[i], wu[i]);
    done(&n, &out);
}

/* float16 and bfloat16 run the float kernel and round once: Exp(1) in
 * float16 is 0x4170 (2.71875, the nearest to e), Sqrt(2) in bfloat16 0x3fb5,
 * Clip keeps the input's bits. */
static void test_half(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    uint16_t h[] = {0x3c00, 0x0000, 0xfc00}; /* 1, 0, -inf */
    bd_tensor hin = {BRAID_DTYPE_FLOAT16, 1, {3}, h};
    bd_node n = op_node(BD_OP_Exp, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &hin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x4170);
    CHECK_EQ_INT(((uint16_t *)out.data)[1], 0x3c00);
    CHECK_EQ_INT(((uint16_t *)out.data)[2], 0x0000);
    done(&n, &out);
    uint16_t b[] = {0x4000}; /* 2 */
    bd_tensor bin = {BRAID_DTYPE_BFLOAT16, 1, {1}, b};
    n = op_node(BD_OP_Sqrt, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x3fb5);
    done(&n, &out);
    uint16_t x[] = {0x3555, 0xc800, 0x7bff}, lo = 0xbc00, hi = 0x4000; /* 0.333, -8, 65504; [-1, 2] */
    bd_tensor cin[3] = {{BRAID_DTYPE_FLOAT16, 1, {3}, x}, {BRAID_DTYPE_FLOAT16, 0, {0}, &lo},
                        {BRAID_DTYPE_FLOAT16, 0, {0}, &hi}};
    n = op_node(BD_OP_Clip, 13, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, cin, &out, &e), BRAID_OK);
    const uint16_t wc[] = {0x3555, 0xbc00, 0x4000};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((uint16_t *)out.data)[i], wc[i]);
    done(&n, &out);
}

/* Log over float32's whole positive range, subnormals included, within 4
 * ulp of the double result; 0, negatives, inf and NaN as libm. */
static void test_log_accuracy(void)
{
    enum { N = 100000 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)exp2(-149.0 + 277.0 * i / N);
    bd_tensor in = {F32, 1, {N}, x}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Log, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double r = log((double)x[i]);
        float rf = (float)fabs(r);
        double ulp = nextafterf(rf, INFINITY) - rf, err = fabs(((float *)out.data)[i] - r) / ulp;
        worst = err > worst ? err : worst;
    }
    CHECK(worst <= 4);
    if (worst > 4) fprintf(stderr, "Log: %.2f ulp\n", worst);
    done(&n, &out);
    float sp[] = {0, -0.0f, -1, INFINITY, NAN, 1};
    bd_tensor sin_ = {F32, 1, {6}, sp};
    n = op_node(BD_OP_Log, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &sin_, &out, &e), BRAID_OK);
    const float *y = out.data;
    CHECK(y[0] == -INFINITY && y[1] == -INFINITY && isnan(y[2]) && y[3] == INFINITY && isnan(y[4]) && y[5] == 0);
    done(&n, &out);
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
    test_math();
    test_round_sign();
    test_isnan_isinf();
    test_int_more();
    test_half();
    test_log_accuracy();
    return check_done();
}
