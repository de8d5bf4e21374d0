/* test_random.c: the random family. The generator against Random123's
 * known-answer vectors for Philox4x32-10; a seed gives the same bits on
 * every run and at 1 and 4 threads, no seed fresh ones; the distributions'
 * ranges and moments within 5 standard errors over 200000 draws (so a test
 * that fails by chance is about a one in a million event); every output
 * dtype; the errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "ops/random.h"

static void test_philox_kat(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1}};
    for (int t = 0; t < 3; t++) {
        uint32_t c[4] = {kat[t][0], kat[t][1], kat[t][2], kat[t][3]};
        bd_philox(c, kat[t][4], kat[t][5]);
        for (int i = 0; i < 4; i++) CHECK_EQ_INT(c[i], kat[t][6 + i]);
    }
}

/* Runs a node twice; *same = the two outputs are equal. Output stays in out. */
static braid_status run_twice(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e, int *same, int threads2)
{
    bd_tensor o2[1] = {0};
    g_threads = 1;
    braid_status st = run(n, in, out, e);
    if (st) return st;
    bd_free(n->params);
    n->params = NULL;
    g_threads = threads2;
    st = run(n, in, o2, e);
    g_threads = 1;
    size_t nb = 0;
    bd_tensor_nbytes(&out[0], &nb, e);
    *same = st == BRAID_OK && memcmp(out[0].data, o2[0].data, nb) == 0;
    free(o2[0].data);
    return st;
}

enum { N = 200000 };

static void test_uniform_normal(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t shape[] = {400, 500};
    int same = 0;
    /* RandomUniform float in [-2, 3): seeded, same at 1 and 4 threads */
    bd_attr at[4] = {attr_is("shape", shape, 2), attr_f("low", -2), attr_f("high", 3), attr_f("seed", 42)};
    bd_node n = op_node(BD_OP_RandomUniform, 22, 0, 1, at, 4);
    CHECK_EQ_INT(run_twice(&n, NULL, out, &e, &same, 4), BRAID_OK);
    CHECK(same);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT);
    double sum = 0, sq = 0;
    int inside = 1;
    for (int i = 0; i < N; i++) {
        double v = ((float *)out[0].data)[i];
        inside &= v >= -2 && v < 3;
        sum += v, sq += v * v;
    }
    double mean = sum / N, var = sq / N - mean * mean;
    CHECK(inside);
    CHECK_NEAR(mean, 0.5, 5 * sqrt(25.0 / 12 / N), 0);  /* uniform: variance (b - a)^2 / 12 */
    CHECK_NEAR(var, 25.0 / 12, 5 * 25.0 / 12 * sqrt(0.8 / N), 0);
    done(&n, out);

    /* another seed draws other values */
    float first = 0;
    n = op_node(BD_OP_RandomUniform, 22, 0, 1, at, 4);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_OK);
    first = ((float *)out[0].data)[0];
    done(&n, out);
    at[3] = attr_f("seed", 43);
    n = op_node(BD_OP_RandomUniform, 22, 0, 1, at, 4);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_OK);
    CHECK(((float *)out[0].data)[0] != first);
    done(&n, out);

    /* RandomNormal double, mean 1, scale 2: moments; no seed: two runs differ */
    bd_attr an[4] = {attr_is("shape", shape, 2), attr_f("mean", 1), attr_f("scale", 2), attr_i("dtype", BRAID_DTYPE_DOUBLE)};
    n = op_node(BD_OP_RandomNormal, 22, 0, 1, an, 4);
    CHECK_EQ_INT(run_twice(&n, NULL, out, &e, &same, 1), BRAID_OK);
    CHECK(!same);
    sum = sq = 0;
    for (int i = 0; i < N; i++) {
        double v = ((double *)out[0].data)[i];
        sum += v, sq += v * v;
    }
    mean = sum / N, var = sq / N - mean * mean;
    CHECK_NEAR(mean, 1.0, 5 * 2 / sqrt(N), 0);
    CHECK_NEAR(var, 4.0, 5 * 4 * sqrt(2.0 / N), 0);
    done(&n, out);

    /* the *Like ops take the input's shape and dtype (float16, bfloat16), or 'dtype' */
    uint16_t x16[6] = {0};
    bd_tensor in[1] = {tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){2, 3}, x16)};
    bd_attr al[3] = {attr_f("low", 10), attr_f("high", 11), attr_f("seed", 1)};
    n = op_node(BD_OP_RandomUniformLike, 22, 1, 1, al, 3);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT16);
    CHECK_EQ_INT(out[0].dims[1], 3);
    for (int i = 0; i < 6; i++) {
        float v = bd_half_to_float(((uint16_t *)out[0].data)[i]);
        CHECK(v >= 10 && v <= 11); /* float16 rounding may reach high */
    }
    done(&n, out);
    in[0].dtype = BRAID_DTYPE_INT32;
    bd_attr ad[2] = {attr_i("dtype", BRAID_DTYPE_BFLOAT16), attr_f("seed", 1)};
    n = op_node(BD_OP_RandomNormalLike, 22, 1, 1, ad, 2);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_BFLOAT16);
    done(&n, out);

    /* errors: an int32 input without 'dtype', no 'shape', a negative dim, an int dtype */
    n = op_node(BD_OP_RandomNormalLike, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
    n = op_node(BD_OP_RandomNormal, 22, 0, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'shape'");
    done(&n, out);
    int64_t neg[] = {2, -1};
    bd_attr as = attr_is("shape", neg, 2);
    n = op_node(BD_OP_RandomUniform, 22, 0, 1, &as, 1);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    bd_attr ai[2] = {attr_is("shape", shape, 2), attr_i("dtype", BRAID_DTYPE_INT64)};
    n = op_node(BD_OP_RandomUniform, 22, 0, 1, ai, 2);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
}

static void test_bernoulli(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* p = 0, 1 and 0.3 in thirds of 3 x 100000 (float): exact for 0 and 1, the
     * 0.3 third within 5 standard errors */
    enum { M = 100000 };
    float *p = malloc(sizeof(float) * 3 * M);
    for (int i = 0; i < 3 * M; i++) p[i] = i < M ? 0.0f : i < 2 * M ? 1.0f : 0.3f;
    bd_tensor in[1] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){3, M}, p)};
    bd_attr at[2] = {attr_i("dtype", BRAID_DTYPE_INT64), attr_f("seed", 5)};
    bd_node n = op_node(BD_OP_Bernoulli, 22, 1, 1, at, 2);
    int same = 0;
    CHECK_EQ_INT(run_twice(&n, in, out, &e, &same, 4), BRAID_OK);
    CHECK(same);
    const int64_t *y = out[0].data;
    int64_t ones[3] = {0};
    int binary = 1;
    for (int i = 0; i < 3 * M; i++) ones[i / M] += y[i], binary &= y[i] == 0 || y[i] == 1;
    CHECK(binary);
    CHECK_EQ_INT(ones[0], 0);
    CHECK_EQ_INT(ones[1], M);
    CHECK_NEAR((double)ones[2] / M, 0.3, 5 * sqrt(0.21 / M), 0);
    done(&n, out);
    /* bool and float16 outputs; the input's dtype by default */
    bd_attr ab = attr_i("dtype", BRAID_DTYPE_BOOL);
    for (int i = 0; i < 20; i++) p[i] = i < 10 ? 0.0f : 1.0f;
    in[0].dims[0] = 2, in[0].dims[1] = 10;
    n = op_node(BD_OP_Bernoulli, 22, 1, 1, &ab, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(((uint8_t *)out[0].data)[i], 0);
    for (int i = 10; i < 20; i++) CHECK_EQ_INT(((uint8_t *)out[0].data)[i], 1);
    done(&n, out);
    n = op_node(BD_OP_Bernoulli, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT);
    CHECK(((float *)out[0].data)[10] == 1.0f);
    done(&n, out);
    /* an integer input is refused */
    in[0].dtype = BRAID_DTYPE_INT32;
    n = op_node(BD_OP_Bernoulli, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    done(&n, out);
    free(p);
}

/* Multinomial: logits log(0.2), log(0.3), log(0.5) + 7 (unnormalized) and a
 * class of probability 0 (-inf); 2 rows x 100000 samples; frequencies within
 * 5 standard errors, the impossible class never drawn. */
static void test_multinomial(void)
{
    enum { S = 100000 };
    bd_err e = {0};
    bd_tensor out[1] = {0};
    double x[8] = {log(0.2) + 7, log(0.3) + 7, log(0.5) + 7, -INFINITY, 0, 0, 0, 0};
    bd_tensor in[1] = {tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 4}, x)};
    bd_attr at[3] = {attr_i("sample_size", S), attr_f("seed", 9), attr_i("dtype", BRAID_DTYPE_INT64)};
    bd_node n = op_node(BD_OP_Multinomial, 22, 1, 1, at, 3);
    int same = 0;
    CHECK_EQ_INT(run_twice(&n, in, out, &e, &same, 4), BRAID_OK);
    CHECK(same);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], S);
    int64_t cnt[2][4] = {{0}};
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < S; i++) cnt[r][((int64_t *)out[0].data)[r * S + i]]++;
    double pr[2][4] = {{0.2, 0.3, 0.5, 0}, {0.25, 0.25, 0.25, 0.25}};
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++) CHECK_NEAR((double)cnt[r][c] / S, pr[r][c], 5 * sqrt(pr[r][c] * (1 - pr[r][c]) / S), 0);
    CHECK_EQ_INT(cnt[0][3], 0);
    done(&n, out);
    /* int32 by default; float output refused; a rank-1 input refused */
    bd_attr one = attr_i("sample_size", 3);
    n = op_node(BD_OP_Multinomial, 22, 1, 1, &one, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT32);
    done(&n, out);
    bd_attr fd = attr_i("dtype", BRAID_DTYPE_FLOAT);
    n = op_node(BD_OP_Multinomial, 22, 1, 1, &fd, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    in[0].rank = 1;
    n = op_node(BD_OP_Multinomial, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

int main(void)
{
    test_philox_kat();
    test_uniform_normal();
    test_bernoulli();
    test_multinomial();
    return check_done();
}
