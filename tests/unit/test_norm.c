/* test_norm.c: the norm family (and LayerNormalization, now of the layernorm
 * family) on hand-built nodes: values computed by hand, LayerNormalization's
 * optional Mean/InvStdDev outputs and broadcast Scale, the errors (training
 * outputs without training mode, bad shapes, dtypes, axis); then
 * BatchNormalization's training mode at opsets 6, 7 and 15 (batch, running
 * and saved statistics), spatial 0, mixed dtypes and rank 1,
 * InstanceNormalization, GroupNormalization 18 and 21, LRN with odd and even
 * sizes, LpNormalization, MeanVarianceNormalization, against double, and the
 * same bits on 1 and 4 threads. */
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "ops/norm.h"
#include "util/dtype.h"

/* ---- tests -------------------------------------------------------------------- */

/* X (1, 2, 1, 2) = [1, 2 | 3, 4], mean [1.5, 3.5], var [0.25, 0.25] (std 0.5),
 * epsilon 0, scale [1, 2], B [0, 1]: channel 0 gives (x - 1.5) / 0.5 = [-1, 1],
 * channel 1 gives (x - 3.5) / 0.5 * 2 + 1 = [-1, 3]. */
static void test_batchnorm_by_hand(void)
{
    float x[4] = {1, 2, 3, 4}, scale[2] = {1, 2}, b[2] = {0, 1}, mean[2] = {1.5f, 3.5f};
    float var[2] = {0.25f, 0.25f};
    int64_t xd[4] = {1, 2, 1, 2}, cd[1] = {2};
    bd_tensor in[5] = {tensor(F32, 4, xd, x), tensor(F32, 1, cd, scale), tensor(F32, 1, cd, b),
                       tensor(F32, 1, cd, mean), tensor(F32, 1, cd, var)};
    bd_tensor out[3] = {{0}};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_BatchNormalization, 17, 5, 1);
    attr_float(&t, "epsilon", 0.0f);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK(bd_shape_equal(&out[0], &in[0]));
    const float want[4] = {-1, 1, -1, 3};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], want[i], 1e-6, 0);
    done(&t.n, out);
}

/* Rows [1, 2, 3, 4] (mean 2.5, variance 1.25) and [2, 2, 2, 2] (mean 2,
 * variance 0: the output is B alone), Scale [1, 1, 2, 2], B [0, 0, 0, 1],
 * epsilon 1e-5; Mean and InvStdDev are (2, 1). */
static void test_layernorm_by_hand(void)
{
    float x[8] = {1, 2, 3, 4, 2, 2, 2, 2}, scale[4] = {1, 1, 2, 2}, b[4] = {0, 0, 0, 1};
    int64_t xd[2] = {2, 4}, sd[1] = {4};
    bd_tensor in[3] = {tensor(F32, 2, xd, x), tensor(F32, 1, sd, scale), tensor(F32, 1, sd, b)};
    bd_tensor out[3] = {{0}};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_LayerNormalization, 17, 3, 3);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    double inv = 1.0 / sqrt(1.25 + 1e-5);
    for (int j = 0; j < 4; j++) {
        CHECK_NEAR(((float *)out[0].data)[j], (x[j] - 2.5) * inv * scale[j] + b[j], 1e-6, 1e-6);
        CHECK_NEAR(((float *)out[0].data)[4 + j], b[j], 1e-6, 0);
    }
    CHECK_EQ_INT(out[1].rank, 2);
    CHECK_EQ_INT(out[1].dims[0], 2);
    CHECK_EQ_INT(out[1].dims[1], 1);
    CHECK_EQ_INT(out[2].dtype, BRAID_DTYPE_FLOAT);
    CHECK_NEAR(((float *)out[1].data)[0], 2.5, 1e-6, 0);
    CHECK_NEAR(((float *)out[1].data)[1], 2.0, 1e-6, 0);
    CHECK_NEAR(((float *)out[2].data)[0], inv, 1e-6, 1e-6);
    CHECK_NEAR(((float *)out[2].data)[1], 1.0 / sqrt(1e-5), 1e-3, 1e-6);
    done(&t.n, out);
}

/* axis 1 of (2, 3, 4): each of the 2 rows normalizes 12 values; Scale (3, 1)
 * and B (4) broadcast onto (3, 4). Checked against a naive double loop. */
static void test_layernorm_axis_broadcast(void)
{
    float x[24], scale[3] = {0.5f, 1.0f, -2.0f}, b[4] = {1, 2, 3, 4};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11) - 3.0f;
    int64_t xd[3] = {2, 3, 4}, sd[2] = {3, 1}, bd[1] = {4};
    bd_tensor in[3] = {tensor(F32, 3, xd, x), tensor(F32, 2, sd, scale), tensor(F32, 1, bd, b)};
    bd_tensor out[3] = {{0}};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_LayerNormalization, 17, 3, 1);
    attr_int(&t, "axis", 1);
    attr_float(&t, "epsilon", 1e-3f);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    for (int r = 0; r < 2; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < 12; j++) mean += x[r * 12 + j] / 12.0;
        for (int j = 0; j < 12; j++) var += (x[r * 12 + j] - mean) * (x[r * 12 + j] - mean) / 12.0;
        for (int j = 0; j < 12; j++) {
            double want = (x[r * 12 + j] - mean) / sqrt(var + 1e-3) * scale[j / 4] + b[j % 4];
            CHECK_NEAR(((float *)out[0].data)[r * 12 + j], want, 1e-5, 1e-5);
        }
    }
    done(&t.n, out);
}

static void test_errors(void)
{
    bd_err e = {0};
    bd_tensor out[3] = {{0}};
    tnode t;

    /* Training mode is the attribute's from opset 14: running statistics asked
     * for without it are a model error; omitted outputs are fine. */
    tnode_init(&t, BD_OP_BatchNormalization, 17, 5, 1);
    attr_int(&t, "training_mode", 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK(((const bd_norm_params *)t.n.params)->training);
    bd_free(t.n.params);
    tnode_init(&t, BD_OP_BatchNormalization, 17, 5, 3);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "training mode only");
    CHECK(t.n.params == NULL);
    tnode_init(&t, BD_OP_BatchNormalization, 17, 5, 3);
    t.out[1] = t.out[2] = -1; /* omitted outputs are fine */
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);

    /* Per-channel inputs must have C values. */
    int64_t xd[4] = {1, 3, 2, 2}, cd[1] = {3}, bad[1] = {2};
    bd_tensor in[5] = {tensor(F32, 4, xd, NULL), tensor(F32, 1, cd, NULL), tensor(F32, 1, cd, NULL),
                       tensor(F32, 1, bad, NULL), tensor(F32, 1, cd, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "input_mean has shape 2; expected 3 values");
    in[3].dims[0] = 3;
    CHECK_EQ_INT(bd_op_infer(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[2].rank, 1); /* omitted outputs still get a shape */
    CHECK_EQ_INT(out[2].dims[0], 3);
    in[4].dtype = BRAID_DTYPE_DOUBLE;
    CHECK_EQ_INT(bd_op_infer(&t.n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input_var is float64 but input_mean is float32");
    bd_free(t.n.params);

    /* LayerNormalization: Scale that does not fit, axis out of range, ints. */
    int64_t ld[3] = {2, 3, 4}, sd[1] = {3};
    bd_tensor lin[2] = {tensor(F32, 3, ld, NULL), tensor(F32, 1, sd, NULL)};
    tnode_init(&t, BD_OP_LayerNormalization, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, lin, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "Scale has shape 3");
    lin[1].dims[0] = 4;
    lin[0].dtype = BRAID_DTYPE_INT32;
    CHECK_EQ_INT(bd_op_infer(&t.n, lin, out, &e), BRAID_ERR_DTYPE);
    lin[0].dtype = BRAID_DTYPE_FLOAT;
    lin[1].dtype = BRAID_DTYPE_DOUBLE;
    CHECK_EQ_INT(bd_op_infer(&t.n, lin, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "Scale is float64");
    lin[1].dtype = BRAID_DTYPE_FLOAT;
    bd_free(t.n.params);
    lin[0].dtype = BRAID_DTYPE_FLOAT;
    tnode_init(&t, BD_OP_LayerNormalization, 17, 2, 1);
    attr_int(&t, "axis", 3);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, lin, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis 3");
    bd_free(t.n.params);
}

/* ---- the norms added with the family ----------------------------------------- */

/* BatchNormalization training (opset 15) on X (2, 2, 3): batch mean and
 * population variance per channel over N and the plane, Y from them, and the
 * running statistics with momentum 0.8; against double. */
static void test_batchnorm_training(void)
{
    float x[12], sc[2] = {1.5f, -0.5f}, b[2] = {0.25f, 1}, rm[2] = {0.5f, -1}, rv[2] = {2, 0.5f};
    for (int i = 0; i < 12; i++) x[i] = (float)((i * 5) % 7) - 2.5f;
    bd_err e = {0};
    for (int old = 0; old <= 2; old++) { /* opset 15 training_mode; opset 6 is_test 0; opset 7 by its outputs */
        tnode t;
        int opset = old == 0 ? 15 : old == 1 ? 6 : 7;
        tnode_init(&t, BD_OP_BatchNormalization, opset, 5, 3);
        attr_float(&t, "momentum", 0.8f);
        attr_float(&t, "epsilon", 1e-3f);
        if (old == 0) attr_int(&t, "training_mode", 1);
        bd_tensor in[5] = {{F32, 3, {2, 2, 3}, x}, {F32, 1, {2}, sc}, {F32, 1, {2}, b}, {F32, 1, {2}, rm},
                           {F32, 1, {2}, rv}},
                  out[3] = {{0}};
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int c = 0; c < 2; c++) {
            double m = 0, v = 0;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 3; i++) m += x[(n * 2 + c) * 3 + i] / 6.0;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 3; i++) v += (x[(n * 2 + c) * 3 + i] - m) * (x[(n * 2 + c) * 3 + i] - m) / 6.0;
            for (int n = 0; n < 2; n++)
                for (int i = 0; i < 3; i++) {
                    int at = (n * 2 + c) * 3 + i;
                    CHECK_NEAR(((float *)out[0].data)[at], (x[at] - m) / sqrt(v + 1e-3) * sc[c] + b[c], 1e-5, 1e-5);
                }
            CHECK_NEAR(((float *)out[1].data)[c], rm[c] * 0.8 + m * 0.2, 1e-6, 1e-6);
            CHECK_NEAR(((float *)out[2].data)[c], rv[c] * 0.8 + v * 0.2, 1e-6, 1e-6);
        }
        done(&t.n, out);
    }
    /* opset 6 with is_test 1, and opset 9 with one output: inference (the
     * running statistics normalize) */
    for (int v = 0; v < 2; v++) {
        tnode t;
        tnode_init(&t, BD_OP_BatchNormalization, v ? 9 : 6, 5, 1);
        if (!v) attr_int(&t, "is_test", 1);
        attr_float(&t, "epsilon", 0);
        bd_tensor in[5] = {{F32, 3, {2, 2, 3}, x}, {F32, 1, {2}, sc}, {F32, 1, {2}, b}, {F32, 1, {2}, rm},
                           {F32, 1, {2}, rv}},
                  out[1] = {{0}};
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int i = 0; i < 12; i++) {
            int c = (i / 3) % 2;
            CHECK_NEAR(((float *)out[0].data)[i], (x[i] - rm[c]) / sqrt(rv[c]) * sc[c] + b[c], 1e-5, 1e-5);
        }
        done(&t.n, out);
    }
}

/* Opset 6 training with all five outputs (running and saved statistics), and
 * spatial 0 (one mean per activation: scale etc. of C * D values). */
static void test_batchnorm_old(void)
{
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 9}; /* (2, 2, 2) */
    float one[4] = {1, 1, 1, 1}, zero[4] = {0, 0, 0, 0};
    bd_err e = {0};
    int ins[5] = {0, 1, 2, 3, 4}, outs[5] = {5, 6, 7, 8, 9};
    bd_attr a[2] = {attr_f("epsilon", 0), attr_f("momentum", 0.5f)};
    bd_node n = op_node(BD_OP_BatchNormalization, 6, 5, 5, a, 2);
    n.in = ins, n.out = outs;
    bd_tensor in[5] = {{F32, 3, {2, 2, 2}, x}, {F32, 1, {2}, one}, {F32, 1, {2}, zero}, {F32, 1, {2}, zero},
                       {F32, 1, {2}, one}},
              out[5] = {{0}};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    /* channel 0: 1 2 5 6 (mean 3.5, var 4.25); channel 1: 3 4 7 9 (mean 5.75, var 5.6875) */
    CHECK_NEAR(((float *)out[3].data)[0], 3.5, 1e-6, 0);
    CHECK_NEAR(((float *)out[4].data)[1], 5.6875, 1e-6, 0);
    CHECK_NEAR(((float *)out[1].data)[1], 5.75 * 0.5, 1e-6, 0);
    CHECK_NEAR(((float *)out[2].data)[0], 0.5 + 4.25 * 0.5, 1e-6, 0);
    CHECK_NEAR(((float *)out[0].data)[0], (1 - 3.5) / sqrt(4.25), 1e-6, 1e-6);
    done(&n, out);
    /* spatial 0, inference: per activation (c, d) of the (2, 2) trailing block */
    float m4[4] = {1, 2, 3, 4}, v4[4] = {1, 4, 1, 4};
    bd_attr sp[3] = {attr_i("spatial", 0), attr_i("is_test", 1), attr_f("epsilon", 0)};
    n = op_node(BD_OP_BatchNormalization, 6, 5, 1, sp, 3);
    bd_tensor in2[5] = {{F32, 3, {2, 2, 2}, x}, {F32, 2, {2, 2}, one}, {F32, 2, {2, 2}, zero}, {F32, 2, {2, 2}, m4},
                        {F32, 2, {2, 2}, v4}};
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    for (int i = 0; i < 8; i++) CHECK_NEAR(((float *)out[0].data)[i], (x[i] - m4[i % 4]) / sqrt(v4[i % 4]), 1e-6, 1e-6);
    done(&n, out);
    /* spatial 1 with per-activation statistics is a shape error */
    sp[0] = attr_i("spatial", 1);
    n = op_node(BD_OP_BatchNormalization, 6, 5, 1, sp, 3);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

/* float16 X with float scale/B and double mean/var (opset 15's T, T1, T2),
 * and an X of rank 1 (N values, one channel). */
static void test_batchnorm_dtypes(void)
{
    uint16_t h[4];
    for (int i = 0; i < 4; i++) h[i] = bd_float_to_half((float)i * 0.75f);
    float sc[2] = {2, 1}, b[2] = {0, 1};
    double m[2] = {1, 0}, v[2] = {4, 1};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_BatchNormalization, 15, 5, 1);
    attr_float(&t, "epsilon", 0);
    bd_tensor in[5] = {{BRAID_DTYPE_FLOAT16, 3, {1, 2, 2}, h}, {F32, 1, {2}, sc}, {F32, 1, {2}, b},
                       {BRAID_DTYPE_DOUBLE, 1, {2}, m}, {BRAID_DTYPE_DOUBLE, 1, {2}, v}},
              out[1] = {{0}};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) {
        int c = i / 2;
        double want = (i * 0.75 - m[c]) / sqrt(v[c]) * sc[c] + b[c];
        CHECK(((uint16_t *)out[0].data)[i] == bd_float_to_half((float)want));
    }
    done(&t.n, out);
    /* opset 14 takes scale of X's dtype only */
    tnode_init(&t, BD_OP_BatchNormalization, 14, 5, 1);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "scale");
    done(&t.n, out);
    float x1[3] = {1, 2, 3}, one[1] = {1}, zero[1] = {0};
    tnode_init(&t, BD_OP_BatchNormalization, 15, 5, 1);
    attr_float(&t, "epsilon", 0);
    bd_tensor in1[5] = {{F32, 1, {3}, x1}, {F32, 1, {1}, one}, {F32, 1, {1}, zero}, {F32, 1, {1}, zero}, {F32, 1, {1}, one}};
    CHECK_EQ_INT(run(&t.n, in1, out, &e), BRAID_OK);
    CHECK(((float *)out[0].data)[2] == 3);
    done(&t.n, out);
}

/* InstanceNormalization and GroupNormalization (18: per-group scale; 21:
 * per-channel) on X (2, 4, 3) against double. */
static void test_instance_group(void)
{
    float x[24], s4[4] = {1, 2, -1, 0.5f}, b4[4] = {0, 1, 2, 3}, s2[2] = {2, -1}, b2[2] = {0.5f, 1};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 10) * 0.5f - 1;
    bd_err e = {0};
    for (int v = 0; v < 3; v++) { /* instance, group-18 (2 groups), group-21 (2 groups) */
        tnode t;
        tnode_init(&t, v ? BD_OP_GroupNormalization : BD_OP_InstanceNormalization, v == 0 ? 22 : v == 1 ? 18 : 21, 3, 1);
        if (v) attr_int(&t, "num_groups", 2);
        attr_float(&t, "epsilon", 1e-2f);
        const float *sc = v == 1 ? s2 : s4, *bb = v == 1 ? b2 : b4;
        bd_tensor in[3] = {{F32, 3, {2, 4, 3}, x}, {F32, 1, {v == 1 ? 2 : 4}, (void *)sc}, {F32, 1, {v == 1 ? 2 : 4}, (void *)bb}},
                  out = {0};
        CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
        int cpg = v ? 2 : 1;
        for (int n = 0; n < 2; n++)
            for (int g = 0; g < 4 / cpg; g++) {
                const float *blk = x + (n * 4 + g * cpg) * 3;
                double m = 0, var = 0;
                for (int i = 0; i < 3 * cpg; i++) m += blk[i] / (3.0 * cpg);
                for (int i = 0; i < 3 * cpg; i++) var += (blk[i] - m) * (blk[i] - m) / (3.0 * cpg);
                for (int i = 0; i < 3 * cpg; i++) {
                    int ch = g * cpg + i / 3, ai = v == 1 ? g : ch;
                    double want = (blk[i] - m) / sqrt(var + 1e-2) * sc[ai] + bb[ai];
                    CHECK_NEAR(((float *)out.data)[(n * 4 + g * cpg) * 3 + i], want, 1e-5, 1e-5);
                }
            }
        done(&t.n, &out);
    }
    /* errors: channels that do not split into the groups; per-group scale at 21 */
    tnode t;
    tnode_init(&t, BD_OP_GroupNormalization, 21, 3, 1);
    attr_int(&t, "num_groups", 3);
    bd_tensor in[3] = {{F32, 3, {2, 4, 3}, x}, {F32, 1, {4}, s4}, {F32, 1, {4}, b4}}, out = {0};
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "3 groups");
    done(&t.n, &out);
    tnode_init(&t, BD_OP_GroupNormalization, 21, 3, 1);
    attr_int(&t, "num_groups", 2);
    in[1] = (bd_tensor){F32, 1, {2}, s2};
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_GroupNormalization, 21, 3, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "num_groups");
    done(&t.n, &out);
}

/* LRN with an odd and an even size (the window reaches floor((size-1)/2)
 * channels back and ceil forward), LpNormalization p 1 and 2 (a zero line
 * stays 0), MeanVarianceNormalization over the default axes and over one. */
static void test_lrn_lp_mvn(void)
{
    float x[30];
    for (int i = 0; i < 30; i++) x[i] = (float)((i * 11) % 13) * 0.3f - 1.5f;
    bd_err e = {0};
    for (int size = 3; size <= 4; size++) {
        tnode t;
        tnode_init(&t, BD_OP_LRN, 13, 1, 1);
        attr_int(&t, "size", size);
        attr_float(&t, "alpha", 0.5f);
        attr_float(&t, "beta", 0.6f);
        attr_float(&t, "bias", 2);
        bd_tensor in = {F32, 4, {1, 5, 3, 2}, x}, out = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        for (int c = 0; c < 5; c++)
            for (int i = 0; i < 6; i++) {
                double s = 0;
                for (int w = c - (size - 1) / 2; w <= c + size / 2; w++)
                    if (w >= 0 && w < 5) s += (double)x[w * 6 + i] * x[w * 6 + i];
                CHECK_NEAR(((float *)out.data)[c * 6 + i], x[c * 6 + i] / pow(2 + 0.5 / size * s, 0.6), 1e-6, 1e-6);
            }
        done(&t.n, &out);
    }
    float y[6] = {3, -4, 0, 0, 1, 2}; /* (3, 2) */
    for (int p = 1; p <= 2; p++)
        for (int ax = 0; ax <= 1; ax++) {
            tnode t;
            tnode_init(&t, BD_OP_LpNormalization, 22, 1, 1);
            attr_int(&t, "p", p);
            attr_int(&t, "axis", ax ? -1 : 0);
            bd_tensor in = {F32, 2, {3, 2}, y}, out = {0};
            CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
            for (int i = 0; i < 6; i++) {
                double nrm = 0;
                for (int k = 0; k < (ax ? 2 : 3); k++) {
                    double v = y[ax ? (i / 2) * 2 + k : k * 2 + i % 2];
                    nrm += p == 1 ? fabs(v) : v * v;
                }
                if (p == 2) nrm = sqrt(nrm);
                CHECK_NEAR(((float *)out.data)[i], nrm == 0 ? 0 : y[i] / nrm, 1e-6, 1e-6);
            }
            done(&t.n, &out);
        }
    tnode t;
    tnode_init(&t, BD_OP_LpNormalization, 22, 1, 1);
    attr_int(&t, "p", 3);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "p is 3");
    for (int v = 0; v < 2; v++) { /* default axes (0, 2, 3) of (2, 3, 1, 5); then axes (1) */
        tnode_init(&t, BD_OP_MeanVarianceNormalization, 13, 1, 1);
        int64_t one = 1;
        if (v) attr_ints(&t, "axes", 1, &one);
        bd_tensor in = {F32, 4, {2, 3, 1, 5}, x}, out = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        for (int i = 0; i < 30; i++) {
            int n = i / 15, c = (i / 5) % 3, w = i % 5;
            double m = 0, var = 0;
            int cnt = v ? 3 : 10;
            for (int k = 0; k < cnt; k++) {
                int at = v ? n * 15 + k * 5 + w : (k / 5) * 15 + c * 5 + k % 5;
                m += x[at] / cnt;
            }
            for (int k = 0; k < cnt; k++) {
                int at = v ? n * 15 + k * 5 + w : (k / 5) * 15 + c * 5 + k % 5;
                var += (x[at] - m) * (x[at] - m) / cnt;
            }
            CHECK_NEAR(((float *)out.data)[i], (x[i] - m) / (sqrt(var) + 1e-9), 1e-5, 1e-5);
        }
        done(&t.n, &out);
    }
    /* a constant block: 0 (the 1e-9 keeps it finite) */
    float k4[4] = {2, 2, 2, 2};
    int64_t all[2] = {0, 1};
    tnode_init(&t, BD_OP_MeanVarianceNormalization, 13, 1, 1);
    attr_ints(&t, "axes", 2, all);
    bd_tensor kin = {F32, 2, {2, 2}, k4}, kout = {0};
    CHECK_EQ_INT(run(&t.n, &kin, &kout, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK(((float *)kout.data)[i] == 0);
    done(&t.n, &kout);
}

/* 1 and 4 threads give the same bits: BatchNormalization training over 32
 * channels, GroupNormalization over 64 blocks, LRN. */
static void test_norm_threads(void)
{
    enum { N = 4, C = 32, P = 1000 };
    unsigned seed = 11;
    float *x = randn(N * C * P, &seed), *p = randn(4 * C, &seed);
    for (int i = 3 * C; i < 4 * C; i++) p[i] = 1 + p[i] * p[i];
    bd_err e = {0};
    for (int op = 0; op < 3; op++) {
        tnode t;
        tnode_init(&t, op == 0 ? BD_OP_BatchNormalization : op == 1 ? BD_OP_GroupNormalization : BD_OP_LRN,
                   op == 0 ? 15 : op == 1 ? 21 : 13, op == 0 ? 5 : op == 1 ? 3 : 1, op == 0 ? 3 : 1);
        if (op == 0) attr_int(&t, "training_mode", 1);
        if (op == 1) attr_int(&t, "num_groups", 16);
        if (op == 2) attr_int(&t, "size", 5);
        bd_tensor in[5] = {{F32, 3, {N, C, P}, x}};
        for (int i = 1; i < 5; i++) in[i] = (bd_tensor){F32, 1, {C}, p + (i - 1) * C};
        bd_tensor one[3] = {{0}}, four[3] = {{0}};
        CHECK_EQ_INT(run(&t.n, in, one, &e), BRAID_OK);
        bd_free(t.n.params);
        t.n.params = NULL;
        g_threads = 4;
        CHECK_EQ_INT(run(&t.n, in, four, &e), BRAID_OK);
        g_threads = 1;
        for (int o = 0; o < t.n.n_out; o++) {
            CHECK(memcmp(one[o].data, four[o].data, (size_t)bd_numel(&one[o]) * sizeof(float)) == 0);
            free(one[o].data);
        }
        done(&t.n, four);
    }
    free(x);
    free(p);
}

int main(void)
{
    test_batchnorm_training();
    test_batchnorm_old();
    test_batchnorm_dtypes();
    test_instance_group();
    test_lrn_lp_mvn();
    test_norm_threads();
    test_batchnorm_by_hand();
    test_layernorm_by_hand();
    test_layernorm_axis_broadcast();
    test_errors();
    return check_done();
}
