/* test_activation.c: the activation family against its formulas evaluated
 * in double (libm), on a sweep of [-12, 12] and on NaN and the infinities;
 * each attribute; integer Relu and Shrink; float16/bfloat16 rounded once;
 * com.microsoft's fused GELUs with a bias broadcast over the last dim;
 * SwiGLU; the errors; results that do not depend on the thread count.
 * Tolerances: float32 within 2e-6 relative (the vectorized exp/log/erfc are
 * within a few ulp) plus 1e-7 absolute (a * x + b cancels in float, as in
 * any float32 evaluation); below 1e-20, where exp's argument (x^2 near 100)
 * has float spacing 8e-6, 2e-5 relative. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <float.h>
#include <stdlib.h>

#define SQRT1_2 0.70710678118654752440

/* The ONNX definitions, in double. */
static double ref(int op, double x, double a, double b)
{
    switch (op) {
    case BD_OP_Relu: return x < 0 ? 0 : x;
    case BD_OP_LeakyRelu: return x >= 0 ? x : a * x;
    case BD_OP_Sigmoid: return 1 / (1 + exp(-x));
    case BD_OP_HardSigmoid: return fmax(0, fmin(1, a * x + b));
    case BD_OP_HardSwish: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case BD_OP_Elu: return x > 0 ? x : a * expm1(x);
    case BD_OP_Selu: return b * (x > 0 ? x : a * expm1(x));
    case BD_OP_Celu: return fmax(0, x) + fmin(0, a * expm1(x / a));
    case BD_OP_ThresholdedRelu: return x > a ? x : 0;
    case BD_OP_Gelu: return 0.5 * x * erfc(-x * SQRT1_2);
    case BD_OP_Mish: return x * tanh(log1p(exp(x)));
    case BD_OP_Softplus: return log1p(exp(x));
    case BD_OP_Softsign: return x / (1 + fabs(x));
    case BD_OP_Swish: return x / (1 + exp(-a * x));
    case BD_OP_Shrink: return x < -a ? x + b : x > a ? x - b : 0;
    default: return NAN;
    }
}

static double gelu_tanh(double x)
{
    return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}

typedef struct act_case {
    int op;
    float a, b;      /* the attributes ref() takes */
    const char *an, *bn; /* their names, NULL: left to the default */
} act_case;

/* Every element of a whole-array run (the vector loop) has the bits of the
 * same element run alone (the scalar tail): multiply-adds fuse alike in both,
 * so results cannot depend on where a thread's chunk starts. Checks every
 * step-th element. */
static int same_alone(tnode *t, const float *x, const float *y, int n, int step)
{
    int ok = 1;
    bd_err e = {0};
    for (int i = 0; i < n; i += step) {
        bd_tensor in = {F32, 1, {1}, (void *)&x[i]}, out = {0};
        if (run(&t->n, &in, &out, &e) != BRAID_OK) return 0;
        float a = ((float *)out.data)[0];
        if (memcmp(&a, &y[i], sizeof a) != 0) {
            fprintf(stderr, "%s(%.9g): %.9g alone, %.9g in a vector\n", t->n.op_type, x[i], a, y[i]);
            ok = 0;
        }
        done(&t->n, &out);
    }
    return ok;
}

static void test_formulas(void)
{
    static const act_case cases[] = {
        {BD_OP_Relu, 0, 0, NULL, NULL},
        {BD_OP_LeakyRelu, 0.01f, 0, NULL, NULL},
        {BD_OP_LeakyRelu, 0.3f, 0, "alpha", NULL},
        {BD_OP_Sigmoid, 0, 0, NULL, NULL},
        {BD_OP_HardSigmoid, 0.2f, 0.5f, NULL, NULL},
        {BD_OP_HardSigmoid, 0.25f, 0.125f, "alpha", "beta"},
        {BD_OP_HardSwish, 0, 0, NULL, NULL},
        {BD_OP_Elu, 1, 0, NULL, NULL},
        {BD_OP_Elu, 0.5f, 0, "alpha", NULL},
        {BD_OP_Selu, 1.67326319217681884765625f, 1.05070102214813232421875f, NULL, NULL},
        {BD_OP_Selu, 2, 3, "alpha", "gamma"},
        {BD_OP_Celu, 1, 0, NULL, NULL},
        {BD_OP_Celu, 2.5f, 0, "alpha", NULL},
        {BD_OP_ThresholdedRelu, 1, 0, NULL, NULL},
        {BD_OP_ThresholdedRelu, -0.5f, 0, "alpha", NULL},
        {BD_OP_Gelu, 0, 0, NULL, NULL},
        {BD_OP_Mish, 0, 0, NULL, NULL},
        {BD_OP_Softplus, 0, 0, NULL, NULL},
        {BD_OP_Softsign, 0, 0, NULL, NULL},
        {BD_OP_Swish, 1, 0, NULL, NULL},
        {BD_OP_Swish, 0.75f, 0, "alpha", NULL},
        {BD_OP_Shrink, 0.5f, 0, NULL, NULL},
        {BD_OP_Shrink, 1.5f, 0.25f, "lambd", "bias"},
    };
    enum { N = 4801 };
    float *x = malloc(N * sizeof *x);
    for (int i = 0; i < N; i++) x[i] = (float)(i - N / 2) * 0.005f; /* [-12, 12] */
    bd_err e = {0};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const act_case *k = &cases[c];
        tnode t;
        tnode_init(&t, k->op, 22, 1, 1);
        if (k->an) attr_float(&t, k->an, k->a);
        if (k->bn) attr_float(&t, k->bn, k->b);
        bd_tensor in = {F32, 1, {N}, x}, out = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        double worst = 0;
        int worst_i = 0;
        for (int i = 0; i < N; i++) {
            double want = ref(k->op, x[i], k->a, k->b), got = ((float *)out.data)[i];
            double err = (fabs(got - want) - 1e-7 * (fabs(want) > 1e-20)) / fabs(want) / (fabs(want) > 1e-20 ? 1 : 10);
            if (err > worst) worst = err, worst_i = i;
        }
        CHECK(worst <= 2e-6);
        if (worst > 2e-6)
            fprintf(stderr, "%s(%g): %.3g relative (got %.9g, want %.9g)\n", t.n.op_type, x[worst_i], worst,
                    ((float *)out.data)[worst_i], ref(k->op, x[worst_i], k->a, k->b));
        float *yv = out.data;
        out.data = NULL;
        done(&t.n, &out);
        CHECK(same_alone(&t, x, yv, N, 3));
        free(yv);
        /* NaN stays NaN (Relu included, as numpy's maximum); the infinities */
        float sp[] = {NAN, INFINITY, -INFINITY, -0.0f};
        bd_tensor sin_ = {F32, 1, {4}, sp};
        tnode_init(&t, k->op, 22, 1, 1);
        if (k->an) attr_float(&t, k->an, k->a);
        if (k->bn) attr_float(&t, k->bn, k->b);
        CHECK_EQ_INT(run(&t.n, &sin_, &out, &e), BRAID_OK);
        const float *y = out.data;
        CHECK(isnan(y[0]) || k->op == BD_OP_ThresholdedRelu || k->op == BD_OP_Shrink);
        for (int i = 1; i < 4; i++) {
            double want = ref(k->op, sp[i], k->a, k->b);
            int same = (isnan(want) && isnan(y[i])) || y[i] == (float)want;
            CHECK(same);
            if (!same) fprintf(stderr, "%s(%g) = %g, want %g\n", t.n.op_type, sp[i], y[i], want);
        }
        done(&t.n, &out);
    }
    /* Gelu's tanh form */
    tnode t;
    tnode_init(&t, BD_OP_Gelu, 20, 1, 1);
    attr_str(&t, "approximate", "tanh");
    bd_tensor in = {F32, 1, {N}, x}, out = {0};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    int ok = 1;
    for (int i = 0; i < N; i++) {
        double want = gelu_tanh(x[i]), got = ((float *)out.data)[i];
        int good = fabs(got - want) <= 2e-6 * fabs(want) + 1e-12; /* exp(2y) of a float y near 25 */
        if (!good) fprintf(stderr, "Gelu tanh(%g) = %.9g, want %.9g\n", x[i], got, want);
        ok &= good;
    }
    CHECK(ok);
    done(&t.n, &out);
    free(x);
}

/* The negative tails keep their digits: GELU(-8) = -8 Phi(-8) = -4.9e-15,
 * Elu near 0 is x, not a rounded exp(x) - 1, Softplus(-30) = 9.4e-14. */
static void test_tails(void)
{
    float x[] = {-8, -5, 1e-7f, -30, 30};
    bd_err e = {0};
    const int ops[] = {BD_OP_Gelu, BD_OP_Elu, BD_OP_Softplus, BD_OP_Mish};
    for (int o = 0; o < 4; o++) {
        bd_node n = op_node(ops[o], 22, 1, 1, NULL, 0);
        bd_tensor in = {F32, 1, {5}, x}, out = {0};
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        for (int i = 0; i < 5; i++) CHECK_NEAR(((float *)out.data)[i], ref(ops[o], x[i], 1, 0), 1e-40, 1e-5);
        done(&n, &out);
    }
}

static void test_ints(void)
{
    bd_err e = {0};
    int8_t x8[] = {-128, -3, 0, 5, 127};
    bd_tensor in = {BRAID_DTYPE_INT8, 1, {5}, x8}, out = {0};
    bd_node n = op_node(BD_OP_Relu, 14, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    const int8_t w8[] = {0, 0, 0, 5, 127};
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], w8[i]);
    done(&n, &out);
    /* Shrink of int32 with lambd 2, bias 1.5: computed in double, truncated
     * toward zero (onnx's reference: np.where(...).astype): -5 + 1.5 = -3.5
     * -> -3; 4 - 1.5 = 2.5 -> 2; |x| <= 2 -> 0. */
    int32_t x32[] = {-5, -2, 0, 2, 4, INT32_MAX};
    const int32_t w32[] = {-3, 0, 0, 0, 2, INT32_MAX - 2};
    tnode t;
    tnode_init(&t, BD_OP_Shrink, 9, 1, 1);
    attr_float(&t, "lambd", 2);
    attr_float(&t, "bias", 1.5f);
    bd_tensor in32 = {BRAID_DTYPE_INT32, 1, {6}, x32};
    CHECK_EQ_INT(run(&t.n, &in32, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], w32[i]);
    done(&t.n, &out);
    /* uint8: 1 - 1.5 = -0.5 truncates to 0 */
    uint8_t xu[] = {0, 1, 3, 255};
    const uint8_t wu[] = {0, 0, 1, 253};
    tnode_init(&t, BD_OP_Shrink, 9, 1, 1);
    attr_float(&t, "lambd", 0.5f);
    attr_float(&t, "bias", 1.5f);
    bd_tensor inu = {BRAID_DTYPE_UINT8, 1, {4}, xu};
    CHECK_EQ_INT(run(&t.n, &inu, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wu[i]);
    done(&t.n, &out);
    /* Sigmoid of an integer is a dtype error */
    n = op_node(BD_OP_Sigmoid, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "int8");
    done(&n, &out);
}

/* float16 and bfloat16: computed in float, rounded once to nearest even.
 * The expected bits are the double formula rounded by util/dtype.h. */
static void test_half(void)
{
    float xs[] = {-3, -1, -0.25f, 0, 0.5f, 1, 2, 6};
    uint16_t h[8], b[8];
    for (int i = 0; i < 8; i++) h[i] = bd_float_to_half(xs[i]), b[i] = bd_float_to_bf16(xs[i]);
    bd_err e = {0};
    const int ops[] = {BD_OP_Sigmoid, BD_OP_HardSwish, BD_OP_Gelu, BD_OP_Softplus, BD_OP_Elu};
    for (int o = 0; o < 5; o++) {
        for (int k = 0; k < 2; k++) {
            bd_node n = op_node(ops[o], 22, 1, 1, NULL, 0);
            bd_tensor in = {k ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16, 1, {8}, k ? b : h}, out = {0};
            CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
            CHECK_EQ_INT(out.dtype, in.dtype);
            for (int i = 0; i < 8; i++) {
                float want = (float)ref(ops[o], xs[i], 1, 0);
                uint16_t wb = k ? bd_float_to_bf16(want) : bd_float_to_half(want);
                uint16_t got = ((uint16_t *)out.data)[i];
                CHECK(abs((int)got - (int)wb) <= 1); /* at most one unit in the last place */
                if (abs((int)got - (int)wb) > 1) fprintf(stderr, "%s(%g): %04x, want %04x\n", n.op_type, xs[i], got, wb);
            }
            done(&n, &out);
        }
    }
}

static void test_two_inputs(void)
{
    /* FastGelu(X, bias) and BiasGelu(A, B): the bias (3,) added along the last
     * dim of (2, 3); QuickGelu's alpha defaults to 1.702. */
    float x[] = {-2, -0.5f, 0, 0.5f, 1, 3}, bias[] = {0.25f, -1, 2};
    bd_err e = {0};
    bd_tensor in[2] = {{F32, 2, {2, 3}, x}, {F32, 1, {3}, bias}}, out = {0};
    tnode t;
    tnode_init(&t, BD_OP_MS_FastGelu, 1, 2, 1);
    t.n.domain = "com.microsoft";
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], gelu_tanh(x[i] + bias[i % 3]), 1e-7, 2e-6);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_MS_FastGelu, 1, 1, 1); /* no bias */
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], gelu_tanh(x[i]), 1e-7, 2e-6);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_MS_BiasGelu, 1, 2, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(((float *)out.data)[i], ref(BD_OP_Gelu, (double)(x[i] + bias[i % 3]), 0, 0), 1e-7, 2e-6);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_MS_QuickGelu, 1, 1, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], ref(BD_OP_Swish, x[i], 1.702f, 0), 1e-7, 2e-6);
    done(&t.n, &out);
    /* a bias of the wrong length */
    float bad[4] = {0};
    bd_tensor in2[2] = {{F32, 2, {2, 3}, x}, {F32, 1, {4}, bad}};
    tnode_init(&t, BD_OP_MS_BiasGelu, 1, 2, 1);
    CHECK_EQ_INT(run(&t.n, in2, &out, &e), BRAID_ERR_SHAPE);
    done(&t.n, &out);
    /* SwiGLU(A, B) = Swish_alpha(A) * B, equal shapes only */
    float a[] = {-1, 0.5f, 2, 4, -3, 1}, bb[] = {2, -1, 0.5f, 1, 3, -2};
    bd_tensor in3[2] = {{F32, 2, {2, 3}, a}, {F32, 2, {2, 3}, bb}};
    tnode_init(&t, BD_OP_SwiGLU, 28, 2, 1);
    attr_float(&t, "alpha", 1.5f);
    CHECK_EQ_INT(run(&t.n, in3, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], ref(BD_OP_Swish, a[i], 1.5f, 0) * bb[i], 1e-7, 2e-6);
    done(&t.n, &out);
    in3[1].rank = 1;
    in3[1].dims[0] = 3;
    tnode_init(&t, BD_OP_SwiGLU, 28, 2, 1);
    CHECK_EQ_INT(run(&t.n, in3, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "same shape");
    done(&t.n, &out);
}

static void test_errors(void)
{
    float x[2] = {1, 2};
    bd_tensor in = {F32, 1, {2}, x}, out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Celu, 12, 1, 1);
    attr_float(&t, "alpha", 0);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'alpha'");
    done(&t.n, &out);
    tnode_init(&t, BD_OP_Gelu, 20, 1, 1);
    attr_str(&t, "approximate", "erf");
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'approximate' is 'erf'");
    done(&t.n, &out);
    /* an empty tensor: nothing to compute */
    bd_tensor empty = {F32, 2, {0, 4}, x};
    bd_node n = op_node(BD_OP_Mish, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &empty, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 0);
    done(&n, &out);
}

/* The same bits on 1 and 3 threads, the split falling mid-vector. */
static void test_threads(void)
{
    enum { N = 200003 };
    unsigned seed = 7;
    float *x = randn(N, &seed);
    for (int i = 0; i < N; i++) x[i] *= 8;
    const int ops[] = {BD_OP_Gelu, BD_OP_Sigmoid, BD_OP_HardSwish, BD_OP_Mish};
    bd_err e = {0};
    for (int o = 0; o < 4; o++) {
        bd_tensor in = {F32, 1, {N}, x}, o1 = {0}, o3 = {0};
        bd_node n = op_node(ops[o], 22, 1, 1, NULL, 0);
        g_threads = 1;
        CHECK_EQ_INT(run(&n, &in, &o1, &e), BRAID_OK);
        bd_node n3 = op_node(ops[o], 22, 1, 1, NULL, 0);
        g_threads = 3;
        CHECK_EQ_INT(run(&n3, &in, &o3, &e), BRAID_OK);
        g_threads = 1;
        CHECK(memcmp(o1.data, o3.data, N * sizeof(float)) == 0);
        done(&n, &o1);
        done(&n3, &o3);
    }
    free(x);
}

int main(void)
{
    test_formulas();
    test_tails();
    test_ints();
    test_half();
    test_two_inputs();
    test_errors();
    test_threads();
    return check_done();
}
