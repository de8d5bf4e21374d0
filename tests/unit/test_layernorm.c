/* test_layernorm.c: the layernorm family beyond test_norm.c's hand-made
 * LayerNormalization cases: LayerNormalization on float16/bfloat16/double
 * with Mean/InvStdDev in the stash type, RMSNormalization (axes, broadcast
 * scale, scale of another dtype than X giving Y's), com.microsoft
 * SkipLayerNormalization and SkipSimplifiedLayerNormalization against
 * onnxruntime's outputs (every optional input and output, a broadcast skip),
 * empty rows, the same bits on 1 and 4 threads, and the errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

/* The normalization of a row of n doubles: (x - mean) / sqrt(var + eps), or
 * x / sqrt(mean(x^2) + eps) when simplified. */
static void ref_row(const double *x, int n, double eps, int simplified, double *y, double *mean, double *inv)
{
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    if (simplified) m = 0;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m) / n;
    double iv = 1 / sqrt(v + eps);
    for (int i = 0; i < n; i++) y[i] = (x[i] - m) * iv;
    if (mean) *mean = m;
    if (inv) *inv = iv;
}

/* LayerNormalization of (3, 8) over axis 1 in float16, bfloat16 and double,
 * Scale and B of X's dtype, Mean/InvStdDev float (stash 1) or double (11). */
static void test_layernorm_dtypes(void)
{
    enum { R = 3, N = 8 };
    bd_err e = {0};
    const int dts[] = {BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, BRAID_DTYPE_DOUBLE};
    for (int d = 0; d < 3; d++)
        for (int stash = 0; stash <= 1; stash++) {
            int dt = dts[d];
            char xb[R * N * 8], sb[N * 8], bb[N * 8];
            double xv[R * N], sv[N], bv[N];
            bd_tensor t = {dt, 1, {R * N}, xb}, ts = {dt, 1, {N}, sb}, tb = {dt, 1, {N}, bb};
            for (int i = 0; i < R * N; i++) {
                bd_set_f64(&t, i, ((i * 5) % 13) * 0.375 - 2);
                xv[i] = bd_get_f64(&t, i);
            }
            for (int i = 0; i < N; i++) {
                bd_set_f64(&ts, i, 0.5 + 0.25 * i);
                bd_set_f64(&tb, i, i % 3 - 1);
                sv[i] = bd_get_f64(&ts, i), bv[i] = bd_get_f64(&tb, i);
            }
            tnode tn;
            tnode_init(&tn, BD_OP_LayerNormalization, 17, 3, 3);
            if (stash) attr_int(&tn, "stash_type", BRAID_DTYPE_DOUBLE);
            bd_tensor in[3] = {{dt, 2, {R, N}, xb}, ts, tb}, out[3] = {{0}};
            CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
            CHECK_EQ_INT(out[0].dtype, dt);
            CHECK_EQ_INT(out[1].dtype, stash ? BRAID_DTYPE_DOUBLE : BRAID_DTYPE_FLOAT);
            int bad = 0;
            for (int r = 0; r < R; r++) {
                double y[N], m, iv;
                ref_row(xv + r * N, N, 1e-5, 0, y, &m, &iv);
                CHECK_NEAR(bd_get_f64(&out[1], r), m, 1e-7, 1e-6);
                CHECK_NEAR(bd_get_f64(&out[2], r), iv, 1e-7, 1e-6);
                for (int i = 0; i < N; i++) {
                    double want = y[i] * sv[i] + bv[i], got = bd_get_f64(&out[0], r * N + i);
                    /* one rounding to the type (2^-8 bfloat16, 2^-11 float16), float32's error */
                    double tol = dt == BRAID_DTYPE_DOUBLE ? 1e-12 : fabs(want) * (dt == BRAID_DTYPE_BFLOAT16 ? 0x1p-8 : 0x1p-11) + 1e-5;
                    if (fabs(got - want) > tol) bad++;
                }
            }
            CHECK_EQ_INT(bad, 0);
            done(&tn.n, out);
        }
}

static void test_rms(void)
{
    /* (2, 3, 4) over axes 1 and -1 (all 12 and rows of 4); scale (4) broadcast */
    float x[24], s[4] = {1, 2, -1, 0.5f};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 9) * 0.5f - 2;
    bd_err e = {0};
    for (int a = 0; a < 2; a++) {
        tnode tn;
        tnode_init(&tn, BD_OP_RMSNormalization, 23, 2, 1);
        attr_int(&tn, "axis", a ? -1 : 1);
        attr_float(&tn, "epsilon", 1e-3f);
        bd_tensor in[2] = {{F32, 3, {2, 3, 4}, x}, {F32, 1, {4}, s}}, out = {0};
        CHECK_EQ_INT(run(&tn.n, in, &out, &e), BRAID_OK);
        int len = a ? 4 : 12;
        for (int r = 0; r < 24 / len; r++) {
            double xv[12], y[12];
            for (int i = 0; i < len; i++) xv[i] = x[r * len + i];
            ref_row(xv, len, 1e-3, 1, y, NULL, NULL);
            for (int i = 0; i < len; i++) CHECK_NEAR(((float *)out.data)[r * len + i], y[i] * s[i % 4], 1e-6, 1e-6);
        }
        done(&tn.n, &out);
    }
    /* X float16, scale float: Y is float (scale's dtype V), computed in float */
    uint16_t h[4];
    float hv[4], s4[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) h[i] = bd_float_to_half((float)i - 1.5f), hv[i] = bd_half_to_float(h[i]);
    tnode tn;
    tnode_init(&tn, BD_OP_RMSNormalization, 23, 2, 1);
    bd_tensor in[2] = {{BRAID_DTYPE_FLOAT16, 1, {4}, h}, {F32, 1, {4}, s4}}, out = {0};
    CHECK_EQ_INT(run(&tn.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_FLOAT);
    double xv[4], y[4];
    for (int i = 0; i < 4; i++) xv[i] = hv[i];
    ref_row(xv, 4, 1e-5, 1, y, NULL, NULL);
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], y[i], 1e-7, 1e-6);
    done(&tn.n, &out);
    /* scale that does not broadcast; an int scale */
    float s3[3] = {1, 1, 1};
    in[1] = (bd_tensor){F32, 1, {3}, s3};
    CHECK_EQ_INT(run(&tn.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "scale");
    done(&tn.n, &out);
    int32_t si[4] = {1, 1, 1, 1};
    in[1] = (bd_tensor){BRAID_DTYPE_INT32, 1, {4}, si};
    CHECK_EQ_INT(run(&tn.n, in, &out, &e), BRAID_ERR_DTYPE);
    done(&tn.n, &out);
}

/* onnxruntime 1.31 (CPU), from this script's inputs, epsilon 1e-3:
 *   x[i] = ((i * 7) % 11) * 0.25 - 1 as (2, 3, 4); skip[i] = ((i * 5) % 7) * 0.5 - 1.5 as (1, 3, 4);
 *   gamma (1, -0.5, 2, 0.25), beta (0.1, 0.2, -0.3, 0), bias (0.5, -1, 0, 0.25);
 *   outputs y, mean, inv_std_var, input_skip_bias_sum (made with onnx.helper +
 *   onnxruntime.InferenceSession over a one-node com.microsoft model). */
static const float ort_sln_y[24] = {-1.512964f, -0.21714588f, -0.41123891f, 0.20857294f, 1.607199f, 0.65215969f,
    0.30287951f, -0.22607984f, 0.96954554f, 0.28695455f, -3.4303639f, 0.21738638f, -0.47684821f, 0.48842412f,
    3.1610894f, -0.14421205f, 1.2438225f, -0.085955605f, -0.68127418f, -0.38127416f, 1.0846126f, 0.56922972f,
    -2.7615316f, 0.24615315f};
static const float ort_sln_mean[6] = {-0.1875f, 0.3125f, 0.125f, 0.18749999f, 0, 0.5f};
static const float ort_sln_inv[6] = {0.88991117f, 0.6890052f, 1.3912729f, 1.3185102f, 0.76254833f, 0.49230629f};
static const float ort_sum[24] = {-2, 0.75f, -0.25f, 0.75f, 2.5f, -1, 0.75f, -1, 0.75f, 0, -1, 0.75f, -0.25f, -0.25f,
    1.5f, -0.25f, 1.5f, 0.75f, -0.25f, -2, 2.5f, -1, -2, 2.5f};
static const float ort_ssln_y[24] = {-1.7555513f, -0.32916588f, -0.43888783f, 0.16458294f, 1.6839218f, 0.33678436f,
    1.0103531f, -0.16839218f, 1.0280244f, -0.0f, -2.7413986f, 0.25700611f, -0.31999385f, 0.15999693f, 3.8399262f,
    -0.079998463f, 1.1438224f, -0.28595561f, -0.38127413f, -0.38127413f, 1.195092f, 0.2390184f, -1.9121472f,
    0.29877299f};
static const float ort_ssln_inv[6] = {0.87777567f, 0.67356873f, 1.3706993f, 1.2799754f, 0.76254827f, 0.47803679f};

static void test_skip(void)
{
    float x[24], skip[12], gamma[4] = {1, -0.5f, 2, 0.25f}, beta[4] = {0.1f, 0.2f, -0.3f, 0}, bias[4] = {0.5f, -1, 0, 0.25f};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11) * 0.25f - 1;
    for (int i = 0; i < 12; i++) skip[i] = (float)((i * 5) % 7) * 0.5f - 1.5f;
    bd_err e = {0};
    for (int simp = 0; simp <= 1; simp++) {
        tnode tn;
        tnode_init(&tn, simp ? BD_OP_MS_SkipSimplifiedLayerNormalization : BD_OP_MS_SkipLayerNormalization, 1,
                   simp ? 4 : 5, 4);
        tn.n.domain = "com.microsoft";
        tn.n.n_out = 3; /* the harness's tnode holds 3 outputs; the sum is checked below */
        attr_float(&tn, "epsilon", 1e-3f);
        bd_tensor in[5] = {{F32, 3, {2, 3, 4}, x}, {F32, 3, {1, 3, 4}, skip}, {F32, 1, {4}, gamma}};
        in[3] = simp ? (bd_tensor){F32, 1, {4}, bias} : (bd_tensor){F32, 1, {4}, beta};
        in[4] = (bd_tensor){F32, 1, {4}, bias};
        bd_tensor out[4] = {{0}};
        CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[1].rank, 3);
        CHECK_EQ_INT(out[1].dims[2], 1);
        for (int i = 0; i < 24; i++)
            CHECK_NEAR(((float *)out[0].data)[i], (simp ? ort_ssln_y : ort_sln_y)[i], 1e-6, 1e-6);
        for (int r = 0; r < 6; r++) {
            CHECK_NEAR(((float *)out[1].data)[r], simp ? 0.0f : ort_sln_mean[r], 1e-6, 1e-6);
            CHECK_NEAR(((float *)out[2].data)[r], (simp ? ort_ssln_inv : ort_sln_inv)[r], 1e-6, 1e-6);
        }
        done(&tn.n, out);
    }
    /* input_skip_bias_sum (output 3), with mean and inv_std_var omitted, and a
     * (3, 4) skip (the (S, H) form) */
    int outs[4] = {5, -1, -1, 6};
    int ins[5] = {0, 1, 2, 3, 4};
    bd_node n = op_node(BD_OP_MS_SkipLayerNormalization, 1, 5, 4, NULL, 0);
    bd_attr eps = attr_f("epsilon", 1e-3f);
    n.attrs = &eps, n.n_attrs = 1, n.in = ins, n.out = outs, n.domain = "com.microsoft";
    bd_tensor in[5] = {{F32, 3, {2, 3, 4}, x}, {F32, 2, {3, 4}, skip}, {F32, 1, {4}, gamma}, {F32, 1, {4}, beta},
                       {F32, 1, {4}, bias}},
              out[4] = {{0}};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    for (int i = 0; i < 24; i++) {
        CHECK(((float *)out[3].data)[i] == ort_sum[i]);
        CHECK_NEAR(((float *)out[0].data)[i], ort_sln_y[i], 1e-6, 1e-6);
    }
    done(&n, out);
    /* no bias, no beta: (x + skip) normalized times gamma */
    n = op_node(BD_OP_MS_SkipLayerNormalization, 1, 3, 1, NULL, 0);
    n.domain = "com.microsoft";
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    for (int r = 0; r < 6; r++) {
        double v[4], y[4];
        for (int i = 0; i < 4; i++) v[i] = (double)x[r * 4 + i] + skip[(r % 3) * 4 + i];
        ref_row(v, 4, 1e-12, 0, y, NULL, NULL);
        for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[r * 4 + i], y[i] * gamma[i], 1e-5, 1e-5);
    }
    done(&n, out);
    /* a skip that does not fit; gamma of the wrong size; a 1-D input */
    in[1] = (bd_tensor){F32, 2, {2, 4}, skip};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "skip");
    done(&n, out);
    in[1] = (bd_tensor){F32, 2, {3, 4}, skip};
    in[2] = (bd_tensor){F32, 1, {3}, gamma};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[0] = (bd_tensor){F32, 1, {4}, x};
    in[1] = (bd_tensor){F32, 1, {4}, skip};
    in[2] = (bd_tensor){F32, 1, {4}, gamma};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

static void test_edges(void)
{
    bd_err e = {0};
    /* rows of 0 values: Y is empty; Mean is 0 and InvStdDev 1 / sqrt(epsilon) */
    float x[1], s[1];
    tnode tn;
    tnode_init(&tn, BD_OP_LayerNormalization, 17, 2, 3);
    bd_tensor in[2] = {{F32, 2, {2, 0}, x}, {F32, 1, {0}, s}}, out[3] = {{0}};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out[1]), 2);
    CHECK(((float *)out[1].data)[1] == 0);
    CHECK_NEAR(((float *)out[2].data)[0], 1 / sqrt(1e-5), 1e-3, 1e-6);
    done(&tn.n, out);
    /* stash_type must be a float type; negative axis out of range */
    tnode_init(&tn, BD_OP_LayerNormalization, 17, 2, 1);
    attr_int(&tn, "stash_type", BRAID_DTYPE_INT32);
    CHECK_EQ_INT(bd_op_parse(&tn.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "stash_type");
    tnode_init(&tn, BD_OP_RMSNormalization, 23, 2, 1);
    attr_int(&tn, "axis", -3);
    float y[4] = {1, 2, 3, 4};
    bd_tensor rin[2] = {{F32, 2, {2, 2}, y}, {F32, 1, {2}, y}};
    CHECK_EQ_INT(run(&tn.n, rin, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis -3");
    done(&tn.n, out);
    /* NaN in a row makes that row NaN only; an inf row is NaN (inf - inf) */
    float z[8] = {1, NAN, 2, 3, 1, 2, 3, 4};
    float one[4] = {1, 1, 1, 1};
    tnode_init(&tn, BD_OP_LayerNormalization, 17, 2, 1);
    bd_tensor zin[2] = {{F32, 2, {2, 4}, z}, {F32, 1, {4}, one}};
    CHECK_EQ_INT(run(&tn.n, zin, out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK(isnan(((float *)out[0].data)[i]));
    for (int i = 4; i < 8; i++) CHECK(!isnan(((float *)out[0].data)[i]));
    done(&tn.n, out);
}

/* 1 and 4 threads give the same bits: LayerNormalization rows of 1000. */
static void test_threads(void)
{
    enum { R = 200, C = 1000 };
    unsigned seed = 5;
    float *x = randn(R * C, &seed), *s = randn(C, &seed), *b = randn(C, &seed);
    bd_err e = {0};
    for (int op = 0; op < 2; op++) {
        tnode tn;
        tnode_init(&tn, op ? BD_OP_RMSNormalization : BD_OP_LayerNormalization, op ? 23 : 17, op ? 2 : 3, 1);
        bd_tensor in[3] = {{F32, 2, {R, C}, x}, {F32, 1, {C}, s}, {F32, 1, {C}, b}}, one = {0}, four = {0};
        CHECK_EQ_INT(run(&tn.n, in, &one, &e), BRAID_OK);
        bd_free(tn.n.params);
        tn.n.params = NULL;
        g_threads = 4;
        CHECK_EQ_INT(run(&tn.n, in, &four, &e), BRAID_OK);
        g_threads = 1;
        CHECK(memcmp(one.data, four.data, sizeof(float) * R * C) == 0);
        free(one.data);
        done(&tn.n, &four);
    }
    free(x);
    free(s);
    free(b);
}

int main(void)
{
    test_layernorm_dtypes();
    test_rms();
    test_skip();
    test_edges();
    test_threads();
    return check_done();
}
