/* test_norm.c: the norm family (BatchNormalization, LayerNormalization) on
 * hand-built nodes: values computed by hand, LayerNormalization's optional
 * Mean/InvStdDev outputs and broadcast Scale, and the errors (training mode,
 * bad shapes, dtypes, axis). */
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "ops/norm.h"

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

int main(void)
{
    test_batchnorm_by_hand();
    test_layernorm_by_hand();
    test_layernorm_axis_broadcast();
    test_errors();
    return check_done();
}
