/* test_shape_ops.c: the shape family (Reshape, Flatten, Squeeze, Unsqueeze,
 * Shape, Identity, Dropout, Size, BitCast) and the generate family
 * (Constant, ConstantOfShape, Range with float16/bfloat16): inferred shapes,
 * kernel outputs and error codes. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "ops/generate.h"
#include "util/dtype.h"

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

    /* Squeeze-1 and -11 take 'axes' as an attribute (negative from 11): 2x1x3x4 -> 2x3x4 */
    int64_t sq[] = {-3}, sq1[] = {1};
    bd_attr sqa = attr_is("axes", sq, 1), sqa1 = attr_is("axes", sq1, 1);
    n = op_node(BD_OP_Squeeze, 11, 1, 1, &sqa, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[0], 2);
    CHECK_EQ_INT(out[0].dims[1], 3);
    done(&n, out);
    n = op_node(BD_OP_Squeeze, 1, 1, 1, &sqa1, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    done(&n, out);
    /* Unsqueeze-1 without 'axes' is refused */
    n = op_node(BD_OP_Unsqueeze, 1, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'axes'");
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


static void test_size_bitcast(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* Size of 3x0x5 is 0, of a scalar 1; the data is never read */
    bd_tensor in[1] = {{.dtype = BRAID_DTYPE_BFLOAT16, .rank = 3, .dims = {3, 0, 5}, .data = NULL}};
    bd_node n = op_node(BD_OP_Size, 21, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT64);
    CHECK_EQ_INT(out[0].rank, 0);
    CHECK_EQ_INT(*(int64_t *)out[0].data, 0);
    done(&n, out);
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT4, .rank = 0};
    n = op_node(BD_OP_Size, 21, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(*(int64_t *)out[0].data, 1);
    done(&n, out);

    /* BitCast float32 -> int32 keeps the bits: 1.0f is 0x3f800000, -0.0f 0x80000000 */
    float f[] = {1.0f, -0.0f, -2.5f};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 1, .dims = {3}, .data = f};
    bd_attr to = attr_i("to", BRAID_DTYPE_INT32);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT32);
    CHECK_EQ_INT(((uint32_t *)out[0].data)[0], 0x3f800000u);
    CHECK_EQ_INT(((uint32_t *)out[0].data)[1], 0x80000000u);
    CHECK_EQ_INT(((uint32_t *)out[0].data)[2], 0xc0200000u);
    done(&n, out);

    /* bfloat16 -> float16 (16 bits each): bits unchanged */
    uint16_t h[] = {0x3f80, 0xffff};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_BFLOAT16, .rank = 1, .dims = {2}, .data = h};
    to = attr_i("to", BRAID_DTYPE_FLOAT16);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, h, sizeof h) == 0);
    done(&n, out);

    /* int4 (sign-extended in a byte) -> uint4 and float4e2m1 take the low 4
     * bits; uint4 -> int4 sign-extends bit 3: -1 -> 15 -> -1, 8 -> -8 */
    int8_t i4[] = {-1, 7, -8, 0};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT4, .rank = 1, .dims = {4}, .data = i4};
    to = attr_i("to", BRAID_DTYPE_UINT4);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    uint8_t want_u4[] = {15, 7, 8, 0};
    CHECK(memcmp(out[0].data, want_u4, 4) == 0);
    done(&n, out);
    uint8_t u4[] = {15, 8, 7, 1};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_UINT4, .rank = 1, .dims = {4}, .data = u4};
    to = attr_i("to", BRAID_DTYPE_INT4);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    int8_t want_i4[] = {-1, -8, 7, 1};
    CHECK(memcmp(out[0].data, want_i4, 4) == 0);
    done(&n, out);
    /* int2 -> uint2: -2 -> 2, -1 -> 3 */
    int8_t i2[] = {-2, -1, 1};
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT2, .rank = 1, .dims = {3}, .data = i2};
    to = attr_i("to", BRAID_DTYPE_UINT2);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out[0].data)[0], 2);
    CHECK_EQ_INT(((uint8_t *)out[0].data)[1], 3);
    CHECK_EQ_INT(((uint8_t *)out[0].data)[2], 1);
    done(&n, out);

    /* widths that differ, a string target, a missing 'to' */
    in[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 1, .dims = {3}, .data = f};
    to = attr_i("to", BRAID_DTYPE_INT64);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "float32 (32 bits) to int64 (64 bits)");
    done(&n, out);
    to = attr_i("to", BRAID_DTYPE_STRING);
    n = op_node(BD_OP_BitCast, 26, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
    n = op_node(BD_OP_BitCast, 26, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'to'");
    done(&n, out);
}

/* Range of float16 and bfloat16 (opset 27): computed in float32 (stash_type
 * 1, the default) or double (11) and rounded once. Expected bits from onnx's
 * reference (numpy arange in the stash type, then astype):
 *   np.arange(np.float32(1000), 1010.0, float(np.float16(0.7)), dtype=np.float32).astype(np.float16)
 *   np.arange(np.float32(-3), 40.0, float(ml_dtypes.bfloat16(2.9)), dtype=np.float32).astype(ml_dtypes.bfloat16) */
static void test_range_half(void)
{
    static const uint16_t want_h[] = {0x63d0, 0x63d1, 0x63d3, 0x63d4, 0x63d6, 0x63d7, 0x63d8, 0x63da,
                                      0x63db, 0x63dd, 0x63de, 0x63df, 0x63e1, 0x63e2, 0x63e4};
    static const uint16_t want_b[] = {0xc040, 0xbdc0, 0x4034, 0x40b7, 0x410a, 0x4138, 0x4167, 0x418b,
                                      0x41a2, 0x41b9, 0x41d0, 0x41e8, 0x41ff, 0x420b, 0x4217};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    uint16_t s = bd_float_to_half(1000.0f), l = bd_float_to_half(1010.0f), d = bd_float_to_half(0.7f);
    bd_tensor in[3] = {{.dtype = BRAID_DTYPE_FLOAT16, .rank = 0, .data = &s},
                       {.dtype = BRAID_DTYPE_FLOAT16, .rank = 0, .data = &l},
                       {.dtype = BRAID_DTYPE_FLOAT16, .rank = 0, .data = &d}};
    for (int stash = 0; stash < 3; stash++) { /* default, 1, 11: the same bits here */
        bd_attr a = attr_i("stash_type", stash == 2 ? 11 : 1);
        bd_node n = op_node(BD_OP_Range, 27, 3, 1, &a, stash ? 1 : 0);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[0], 15);
        CHECK(memcmp(out[0].data, want_h, sizeof want_h) == 0);
        done(&n, out);
    }
    uint16_t bs = bd_float_to_bf16(-3.0f), bl = bd_float_to_bf16(40.0f), bdl = bd_float_to_bf16(2.9f);
    for (int i = 0; i < 3; i++) in[i].dtype = BRAID_DTYPE_BFLOAT16;
    in[0].data = &bs, in[1].data = &bl, in[2].data = &bdl;
    bd_node n = op_node(BD_OP_Range, 27, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 15);
    CHECK(memcmp(out[0].data, want_b, sizeof want_b) == 0);
    done(&n, out);
    /* a stash_type that is neither float nor double */
    bd_attr bad = attr_i("stash_type", 10);
    n = op_node(BD_OP_Range, 27, 3, 1, &bad, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "stash_type");
    done(&n, out);
    /* delta 0 */
    bdl = 0;
    n = op_node(BD_OP_Range, 27, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    done(&n, out);
}

/* The double-to-float rounding to odd keeps a later rounding to float16
 * correct: 1 + 2^-11 + 2^-40 lies just above the float16 tie between 1 and
 * 1 + 2^-10, so it rounds up; via a plain (float) it would round to the tie
 * and then to even (1.0). */
static void test_round_odd(void)
{
    double v = 1.0 + 0x1p-11 + 0x1p-40;
    CHECK_EQ_INT(bd_float_to_half(bd_f64_to_f32_odd(v)), 0x3c01);
    CHECK_EQ_INT(bd_float_to_half((float)v), 0x3c00);
    CHECK_EQ_INT(bd_float_to_half(bd_f64_to_f32_odd(-v)), 0xbc01);
    CHECK(bd_f64_to_f32_odd(0.5) == 0.5f);
    CHECK(bd_f64_to_f32_odd(-0x1p-160) < 0 && bd_f64_to_f32_odd(-0x1p-160) > -1e-44f);
}

int main(void)
{
    test_reshape();
    test_flatten_squeeze();
    test_shape_dropout();
    test_generate();
    test_size_bitcast();
    test_range_half();
    test_round_odd();
    return check_done();
}
