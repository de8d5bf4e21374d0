/* test_shape_ops.c: the shape family (Reshape, Flatten, Squeeze, Unsqueeze,
 * Shape, Identity, Dropout) and the generate family (Constant,
 * ConstantOfShape, Range): inferred shapes, kernel outputs and error codes. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

/* A node of op with the given attributes (not owned). */


static void test_reshape(void)
{
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    bd_err e = {0};
    /* 0 copies dim 0 (2), -1 takes the rest: 2x3x4 -> 2x4x3 */
    int64_t shp[] = {0, 4, -1};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {2, 3, 4}, .data = x},
                       ints1(shp, 3)};
    bd_tensor out[1] = {0};
    bd_node n = op_node(BD_OP_Reshape, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 4);
    CHECK_EQ_INT(out[0].dims[2], 3);
    CHECK(memcmp(out[0].data, x, sizeof x) == 0);
    done(&n, out);

    /* allowzero = 1: a 0 is a real 0; data of 0x3x4 reshaped to (3, 4, 0) */
    bd_attr az = {.name = "allowzero", .type = BD_ATTR_INT, .i = 1};
    int64_t shp0[] = {3, 4, 0};
    bd_tensor in0[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {0, 3, 4}, .data = x},
                        ints1(shp0, 3)};
    n = op_node(BD_OP_Reshape, 14, 2, 1, &az, 1);
    CHECK_EQ_INT(run(&n, in0, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 0);
    done(&n, out);

    /* 24 elements cannot become 5x5: SHAPE, naming both shapes */
    int64_t bad[] = {5, 5};
    in[1] = ints1(bad, 2);
    n = op_node(BD_OP_Reshape, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "2x3x4");
    CHECK_CONTAINS(e.msg, "[5, 5]");
    CHECK_CONTAINS(e.msg, "24 elements");
    done(&n, out);

    /* -1 that does not divide: 24 into (5, -1) */
    int64_t bad2[] = {5, -1};
    in[1] = ints1(bad2, 2);
    n = op_node(BD_OP_Reshape, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "[5, -1]");
    done(&n, out);

    /* two -1 */
    int64_t bad3[] = {-1, -1};
    in[1] = ints1(bad3, 2);
    n = op_node(BD_OP_Reshape, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);

    /* a shape not known when the plan is made: UNSUPPORTED */
    in[1] = ints1(shp, 3);
    in[1].data = NULL;
    n = op_node(BD_OP_Reshape, 14, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "'shape'");
    done(&n, out);
}

static void test_flatten_squeeze(void)
{
    int16_t x[24];
    for (int i = 0; i < 24; i++) x[i] = (int16_t)(i - 5);
    bd_err e = {0};
    bd_tensor out[1] = {0};
    bd_attr ax = {.name = "axis", .type = BD_ATTR_INT, .i = -2};
    bd_tensor in[2] = {{.dtype = BRAID_DTYPE_INT16, .rank = 4, .dims = {2, 1, 3, 4}, .data = x}};
    bd_node n = op_node(BD_OP_Flatten, 13, 1, 1, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 2);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 12);
    CHECK(memcmp(out[0].data, x, sizeof x) == 0);
    done(&n, out);

    /* Squeeze with no axes removes every 1 */
    n = op_node(BD_OP_Squeeze, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[1], 3);
    done(&n, out);

    /* Squeeze of an axis whose size is not 1 */
    int64_t axes[] = {2};
    in[1] = ints1(axes, 1);
    n = op_node(BD_OP_Squeeze, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);

    /* Unsqueeze (opset 11, attribute) with negative axes relative to the output rank:
     * 2x1x3x4 with axes (-1, 0) -> 1x2x1x3x4x1 */
    int64_t ua[] = {-1, 0};
    bd_attr uat = {.name = "axes", .type = BD_ATTR_INTS, .n = 2, .ints = ua};
    n = op_node(BD_OP_Unsqueeze, 11, 1, 1, &uat, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 6);
    int64_t want[] = {1, 2, 1, 3, 4, 1};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(out[0].dims[i], want[i]);
    CHECK(memcmp(out[0].data, x, sizeof x) == 0);
    done(&n, out);
}

static void test_shape_dropout(void)
{
    bd_err e = {0};
    bd_tensor out[2] = {0};
    /* Shape of 3x4x5 with start -2: (4, 5); data is never read */
    bd_attr st = {.name = "start", .type = BD_ATTR_INT, .i = -2};
    bd_tensor in[3] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {3, 4, 5}, .data = NULL}};
    bd_node n = op_node(BD_OP_Shape, 15, 1, 1, &st, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT64);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(((int64_t *)out[0].data)[0], 4);
    CHECK_EQ_INT(((int64_t *)out[0].data)[1], 5);
    done(&n, out);

    /* Dropout in inference: copy, mask all true */
    double x[6] = {1, -2, 3, -4, 5, -6};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_DOUBLE, .rank = 2, .dims = {2, 3}, .data = x};
    n = op_node(BD_OP_Dropout, 13, 1, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, x, sizeof x) == 0);
    CHECK_EQ_INT(out[1].dtype, BRAID_DTYPE_BOOL);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((uint8_t *)out[1].data)[i], 1);
    done(&n, out);

    /* training_mode known true with ratio 0.5: UNSUPPORTED */
    float ratio = 0.5f;
    uint8_t yes = 1;
    in[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 0, .data = &ratio};
    in[2] = (bd_tensor){.dtype = BRAID_DTYPE_BOOL, .rank = 0, .data = &yes};
    n = op_node(BD_OP_Dropout, 13, 3, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "training_mode");
    done(&n, out);
}

static void test_generate(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* Constant value_ints */
    int64_t v[] = {7, -8, 9};
    bd_attr a = {.name = "value_ints", .type = BD_ATTR_INTS, .n = 3, .ints = v};
    bd_node n = op_node(BD_OP_Constant, 13, 0, 1, &a, 1);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT64);
    CHECK_EQ_INT(out[0].dims[0], 3);
    CHECK(memcmp(out[0].data, v, sizeof v) == 0);
    done(&n, out);

    /* Constant value (tensor of uint16, 2x2) */
    uint16_t tv[] = {1, 2, 65535, 4};
    bd_tensor t = {.dtype = BRAID_DTYPE_UINT16, .rank = 2, .dims = {2, 2}, .data = tv};
    bd_attr at = {.name = "value", .type = BD_ATTR_TENSOR, .t = &t};
    n = op_node(BD_OP_Constant, 13, 0, 1, &at, 1);
    CHECK_EQ_INT(run(&n, NULL, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 2);
    CHECK(memcmp(out[0].data, tv, sizeof tv) == 0);
    done(&n, out);

    /* ConstantOfShape (2, 3) of int32 value 5 */
    int32_t five = 5;
    bd_tensor ft = {.dtype = BRAID_DTYPE_INT32, .rank = 1, .dims = {1}, .data = &five};
    bd_attr af = {.name = "value", .type = BD_ATTR_TENSOR, .t = &ft};
    int64_t shp[] = {2, 3};
    bd_tensor in[3] = {ints1(shp, 2)};
    n = op_node(BD_OP_ConstantOfShape, 9, 1, 1, &af, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT32);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)out[0].data)[i], 5);
    done(&n, out);

    /* Range(10, 4, -3) of int32 -> 10, 7 (ceil(-6 / -3) = 2) */
    int32_t s = 10, l = 4, d = -3;
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 0, .data = &s};
    in[1] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 0, .data = &l};
    in[2] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 0, .data = &d};
    n = op_node(BD_OP_Range, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(((int32_t *)out[0].data)[0], 10);
    CHECK_EQ_INT(((int32_t *)out[0].data)[1], 7);
    done(&n, out);

    /* Range(1, 2, 0.3) of float32 -> 1, 1.3, 1.6, 1.9 (4 values) */
    float fs = 1, fl = 2, fd = 0.3f;
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 0, .data = &fs};
    in[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 0, .data = &fl};
    in[2] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 0, .data = &fd};
    n = op_node(BD_OP_Range, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 4);
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], 1 + 0.3 * i, 1e-6, 1e-6);
    done(&n, out);

    /* limit not known when the plan is made */
    in[1].data = NULL;
    n = op_node(BD_OP_Range, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "'limit'");
    done(&n, out);
}

int main(void)
{
    test_reshape();
    test_flatten_squeeze();
    test_shape_dropout();
    test_generate();
    return check_done();
}
