/* test_cast.c: the cast family. Float to integer truncates toward zero and
 * keeps the low bits (int4, int2 wrap), integers wrap, anything to bool is
 * nonzero; the float types round once to nearest even (a double to float16
 * directly, as numpy); float8 with and without saturate; float8e8m0 with
 * each round_mode; float4; the sub-byte integers; CastLike; the errors.
 * The expected codes come from ml_dtypes and onnx.numpy_helper (the command
 * is in each comment); integer results are exact. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

/* Runs Cast(to) on in (attributes: saturate, round_mode when given). */
static braid_status cast(bd_tensor *in, int to, int sat, const char *mode, bd_tensor *out, bd_err *e, tnode *t)
{
    tnode_init(t, BD_OP_Cast, 25, 1, 1);
    attr_int(t, "to", to);
    if (sat >= 0) attr_int(t, "saturate", sat);
    if (mode) attr_str(t, "round_mode", mode);
    return run(&t->n, in, out, e);
}

/* The cases braid had before the cast family: float -> int32, bool, double,
 * float16 (ties to even, the smallest subnormal, overflow to inf) and back. */
static void test_basic(void)
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
    /* to string: a string output (its text: tests/python/test_cast_strings.py);
     * to complex64: UNSUPPORTED at parse; no 'to': INVALID_MODEL */
    to = attr_i("to", BRAID_DTYPE_STRING);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(bd_op_parse(&n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&n, &fin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_STRING);
    done(&n, &out);
    to = attr_i("to", BRAID_DTYPE_COMPLEX64);
    n = op_node(BD_OP_Cast, 13, 1, 1, &to, 1);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "complex64");
    done(&n, &out);
    n = op_node(BD_OP_Cast, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &fin, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'to'");
    done(&n, &out);
}

static void test_to_int(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor out = {0};
    /* float -> int32: toward zero; NaN -> 0 and beyond int64 saturates
     * (the spec leaves both undefined; braid's rule is in ops/cast.h) */
    float f[] = {-1.7f, 1.7f, 2.5f, -0.0f, 100, NAN, 1e30f, -1e30f};
    bd_tensor fin = {F32, 1, {8}, f};
    CHECK_EQ_INT(cast(&fin, BRAID_DTYPE_INT64, -1, NULL, &out, &e, &t), BRAID_OK);
    const int64_t w64[] = {-1, 1, 2, 0, 100, 0, INT64_MAX, INT64_MIN};
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], w64[i]);
    done(&t.n, &out);
    /* float -> int8 keeps the low 8 bits: 200 -> -56 (numpy: np.float32(200).astype(np.int8)) */
    float g[] = {200, -129, 127.9f, -3.99f};
    bd_tensor gin = {F32, 1, {4}, g};
    CHECK_EQ_INT(cast(&gin, BRAID_DTYPE_INT8, -1, NULL, &out, &e, &t), BRAID_OK);
    const int8_t w8[] = {-56, 127, 127, -3};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], w8[i]);
    done(&t.n, &out);
    /* float -> int4 and uint2 wrap (onnx's test_cast_FLOAT_to_INT4 data: 9 -> -7, 8 -> -8) */
    float h[] = {-9, -8, 7, 8, 9, 15, -1};
    bd_tensor hin = {F32, 1, {7}, h};
    CHECK_EQ_INT(cast(&hin, BRAID_DTYPE_INT4, -1, NULL, &out, &e, &t), BRAID_OK);
    const int8_t w4[] = {7, -8, 7, -8, -7, -1, -1};
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], w4[i]);
    done(&t.n, &out);
    CHECK_EQ_INT(cast(&hin, BRAID_DTYPE_UINT2, -1, NULL, &out, &e, &t), BRAID_OK);
    const uint8_t wu2[] = {3, 0, 3, 0, 1, 3, 3};
    for (int i = 0; i < 7; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wu2[i]);
    done(&t.n, &out);
    /* int64 -> uint8 and int16 keep the low bits; -> bool is nonzero */
    int64_t l[] = {300, -1, 65536 + 7, 0};
    bd_tensor lin = {BRAID_DTYPE_INT64, 1, {4}, l};
    CHECK_EQ_INT(cast(&lin, BRAID_DTYPE_UINT8, -1, NULL, &out, &e, &t), BRAID_OK);
    const uint8_t wu8[] = {44, 255, 7, 0};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wu8[i]);
    done(&t.n, &out);
    CHECK_EQ_INT(cast(&lin, BRAID_DTYPE_BOOL, -1, NULL, &out, &e, &t), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], l[i] != 0);
    done(&t.n, &out);
    /* int4 (one element per byte, sign-extended) -> int32, uint2 -> float */
    int8_t i4[] = {-8, -1, 0, 7};
    bd_tensor i4in = {BRAID_DTYPE_INT4, 1, {4}, i4};
    CHECK_EQ_INT(cast(&i4in, BRAID_DTYPE_INT32, -1, NULL, &out, &e, &t), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], i4[i]);
    done(&t.n, &out);
    /* uint64 beyond 2^63 from double */
    double big[] = {18446744073709549568.0, 9223372036854775808.0, -1};
    bd_tensor bin = {BRAID_DTYPE_DOUBLE, 1, {3}, big};
    CHECK_EQ_INT(cast(&bin, BRAID_DTYPE_UINT64, -1, NULL, &out, &e, &t), BRAID_OK);
    CHECK(((uint64_t *)out.data)[0] == 18446744073709549568ull);
    CHECK(((uint64_t *)out.data)[1] == 9223372036854775808ull);
    CHECK(((uint64_t *)out.data)[2] == UINT64_MAX); /* -1 wraps, as numpy gives */
    done(&t.n, &out);
}

static void test_to_float(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor out = {0};
    /* double -> float16 rounds once (numpy: np.array([...]).astype(np.float16)):
     * 1 + 2^-11 + 2^-40 is above the tie: 0x3c01 (through float it would
     * land on the tie and go to even, 0x3c00); 1 + 2^-11 is the tie: 0x3c00;
     * 65519.99 -> 65504; 65520 -> inf */
    double d[] = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1 + 3 * 0x1p-11, 65519.99, 65520};
    const uint16_t wh[] = {0x3c01, 0x3c00, 0x3c02, 0x7bff, 0x7c00};
    bd_tensor din = {BRAID_DTYPE_DOUBLE, 1, {5}, d};
    CHECK_EQ_INT(cast(&din, BRAID_DTYPE_FLOAT16, -1, NULL, &out, &e, &t), BRAID_OK);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(((uint16_t *)out.data)[i], wh[i]);
    done(&t.n, &out);
    /* double -> bfloat16 goes through float, as ml_dtypes does: 1 + 2^-8 +
     * 2^-40 gives 0x3f80 (np.array([1 + 2**-8 + 2**-40]).astype(ml_dtypes.bfloat16)) */
    double db[] = {1 + 0x1p-8 + 0x1p-40, 3};
    bd_tensor dbin = {BRAID_DTYPE_DOUBLE, 1, {2}, db};
    CHECK_EQ_INT(cast(&dbin, BRAID_DTYPE_BFLOAT16, -1, NULL, &out, &e, &t), BRAID_OK);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x3f80);
    CHECK_EQ_INT(((uint16_t *)out.data)[1], 0x4040);
    done(&t.n, &out);
    /* int64 -> float: 2^24 + 1 rounds to even (16777216); uint64 max -> 2^64 */
    int64_t l[] = {16777217, -16777219};
    bd_tensor lin = {BRAID_DTYPE_INT64, 1, {2}, l};
    CHECK_EQ_INT(cast(&lin, F32, -1, NULL, &out, &e, &t), BRAID_OK);
    CHECK(((float *)out.data)[0] == 16777216.0f);
    CHECK(((float *)out.data)[1] == -16777220.0f);
    done(&t.n, &out);
    /* float -> bool: NaN is true, -0 false */
    float f[] = {NAN, -0.0f, 1e-30f};
    bd_tensor fin = {F32, 1, {3}, f};
    CHECK_EQ_INT(cast(&fin, BRAID_DTYPE_BOOL, -1, NULL, &out, &e, &t), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 1);
    CHECK_EQ_INT(((uint8_t *)out.data)[1], 0);
    CHECK_EQ_INT(((uint8_t *)out.data)[2], 1);
    done(&t.n, &out);
}

/* float32 -> each float8 kind, saturate 0 and 1. Expected codes:
 *   x = np.array([0.1, 1, 3, 100, 448, 464, 1000, -1000, inf, -inf, nan, 2**-9, 2**-10], np.float32)
 *   x.astype(T).view(np.uint8) (saturate 0), np.clip(x, finfo(T).min, finfo(T).max).astype(T) (1) */
static void test_float8(void)
{
    float x[] = {0.1f, 1, 3, 100, 448, 464, 1000, -1000, INFINITY, -INFINITY, NAN, 0x1p-9f, 0x1p-10f};
    static const uint8_t want[4][2][13] = {
        {{0x1d, 0x38, 0x44, 0x6c, 0x7e, 0x7e, 0x7f, 0xff, 0x7f, 0xff, 0x7f, 0x1, 0x0},
         {0x1d, 0x38, 0x44, 0x6c, 0x7e, 0x7e, 0x7e, 0xfe, 0x7e, 0xfe, 0x7f, 0x1, 0x0}},
        {{0x25, 0x40, 0x4c, 0x74, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x2, 0x1},
         {0x25, 0x40, 0x4c, 0x74, 0x7f, 0x7f, 0x7f, 0xff, 0x7f, 0xff, 0x80, 0x2, 0x1}},
        {{0x2e, 0x3c, 0x42, 0x56, 0x5f, 0x5f, 0x64, 0xe4, 0x7c, 0xfc, 0x7e, 0x18, 0x14},
         {0x2e, 0x3c, 0x42, 0x56, 0x5f, 0x5f, 0x64, 0xe4, 0x7b, 0xfb, 0x7e, 0x18, 0x14}},
        {{0x32, 0x40, 0x46, 0x5a, 0x63, 0x63, 0x68, 0xe8, 0x80, 0x80, 0x80, 0x1c, 0x18},
         {0x32, 0x40, 0x46, 0x5a, 0x63, 0x63, 0x68, 0xe8, 0x7f, 0xff, 0x80, 0x1c, 0x18}},
    };
    bd_err e = {0};
    bd_tensor in = {F32, 1, {13}, x}, out = {0}, back = {0};
    tnode t, t2;
    for (int k = 0; k < 4; k++) {
        for (int sat = 0; sat < 2; sat++) {
            CHECK_EQ_INT(cast(&in, BRAID_DTYPE_FLOAT8E4M3FN + k, sat, NULL, &out, &e, &t), BRAID_OK);
            for (int i = 0; i < 13; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want[k][sat][i]);
            /* and back to float16: the float8 value exactly */
            CHECK_EQ_INT(cast(&out, BRAID_DTYPE_FLOAT16, -1, NULL, &back, &e, &t2), BRAID_OK);
            for (int i = 0; i < 13; i++) {
                float v = bd_narrow_to_float(BRAID_DTYPE_FLOAT8E4M3FN + k, out.data, i);
                uint16_t h = ((uint16_t *)back.data)[i];
                CHECK(isnan(v) ? (h & 0x7fff) > 0x7c00 : bd_half_to_float(h) == v);
            }
            done(&t2.n, &back);
            done(&t.n, &out);
        }
    }
}

/* float8e8m0 by round_mode; expected from onnx.numpy_helper.to_float8e8m0(
 *   np.array([0.1, 1, 3, 0.75, 1.5, 3.5, 2**-127, 3e38], np.float32), saturate, mode).view(np.uint8) */
static void test_e8m0(void)
{
    float x[] = {0.1f, 1, 3, 0.75f, 1.5f, 3.5f, 0x1p-127f, 3e38f};
    static const struct { const char *mode; int sat; uint8_t w[8]; } cases[] = {
        {"up", 1, {0x7c, 0x7f, 0x81, 0x7f, 0x80, 0x81, 0x1, 0xfe}},
        {"up", 0, {0x7c, 0x7f, 0x81, 0x7f, 0x80, 0x81, 0x1, 0xff}},
        {"down", 1, {0x7b, 0x7f, 0x80, 0x7e, 0x7f, 0x80, 0x0, 0xfe}},
        {"nearest", 1, {0x7c, 0x7f, 0x81, 0x7f, 0x80, 0x81, 0x0, 0xfe}},
        {"nearest", 0, {0x7c, 0x7f, 0x81, 0x7f, 0x80, 0x81, 0x0, 0xff}},
    };
    bd_err e = {0};
    bd_tensor in = {F32, 1, {8}, x}, out = {0};
    tnode t;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        CHECK_EQ_INT(cast(&in, BRAID_DTYPE_FLOAT8E8M0, cases[c].sat, cases[c].mode, &out, &e, &t), BRAID_OK);
        for (int i = 0; i < 8; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], cases[c].w[i]);
        done(&t.n, &out);
    }
    /* float4e2m1 (np.array([...], np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)):
     * 1.25 is a tie between 1 and 1.5 (to even: 1), 100 saturates to 6 */
    float y[] = {0.25f, 0.5f, 0.75f, 1.25f, 2.5f, 5, 7, 100, -3, 0.1f};
    const uint8_t w4[] = {0x0, 0x1, 0x2, 0x2, 0x4, 0x6, 0x7, 0x7, 0xd, 0x0};
    bd_tensor yin = {F32, 1, {10}, y};
    CHECK_EQ_INT(cast(&yin, BRAID_DTYPE_FLOAT4E2M1, -1, NULL, &out, &e, &t), BRAID_OK);
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], w4[i]);
    done(&t.n, &out);
}

static void test_castlike_and_errors(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    /* CastLike takes the second input's dtype (its values are not read) */
    float f[] = {1.5f, -2.5f, 65504};
    uint16_t target = 0;
    bd_tensor in[2] = {{F32, 1, {3}, f}, {BRAID_DTYPE_FLOAT16, 1, {1}, &target}};
    bd_node n = op_node(BD_OP_CastLike, 15, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_FLOAT16);
    CHECK_EQ_INT(((uint16_t *)out.data)[0], 0x3e00);
    CHECK_EQ_INT(((uint16_t *)out.data)[1], 0xc100);
    CHECK_EQ_INT(((uint16_t *)out.data)[2], 0x7bff);
    done(&n, &out);
    /* a string target gives a string output; a float8 one from strings is refused */
    in[1].dtype = BRAID_DTYPE_STRING;
    n = op_node(BD_OP_CastLike, 15, 2, 1, NULL, 0);
    CHECK_EQ_INT(bd_op_parse(&n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_STRING);
    in[0].dtype = BRAID_DTYPE_STRING;
    in[1].dtype = BRAID_DTYPE_FLOAT8E5M2;
    CHECK_EQ_INT(bd_op_infer(&n, in, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "cast from string to float8e5m2 is not supported");
    in[0].dtype = F32;
    done(&n, &out);
    /* no 'to'; a bad round_mode; 'to' that is no ONNX dtype */
    n = op_node(BD_OP_Cast, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'to'");
    done(&n, &out);
    tnode t;
    tnode_init(&t, BD_OP_Cast, 25, 1, 1);
    attr_int(&t, "to", BRAID_DTYPE_FLOAT16);
    attr_str(&t, "round_mode", "sideways");
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'round_mode' is 'sideways'");
    done(&t.n, &out);
    tnode_init(&t, BD_OP_Cast, 25, 1, 1);
    attr_int(&t, "to", 99);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    done(&t.n, &out);
    /* Cast-1 names its target: to="INT32" */
    tnode_init(&t, BD_OP_Cast, 1, 1, 1);
    attr_str(&t, "to", "INT32");
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT32);
    CHECK_EQ_INT(((int32_t *)out.data)[1], -2);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_Cast, 1, 1, 1);
    attr_str(&t, "to", "FLOAT99");
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'FLOAT99'");
    done(&t.n, &out);
    /* an empty tensor */
    bd_tensor empty = {F32, 2, {3, 0}, f};
    tnode_init(&t, BD_OP_Cast, 25, 1, 1);
    attr_int(&t, "to", BRAID_DTYPE_FLOAT8E5M2);
    CHECK_EQ_INT(run(&t.n, &empty, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[1], 0);
    done(&t.n, &out);
}

/* A big float -> float16 cast: the same bits on 1 and 3 threads. */
static void test_threads(void)
{
    enum { N = 100003 };
    unsigned seed = 3;
    float *x = randn(N, &seed);
    bd_tensor in = {F32, 1, {N}, x}, o1 = {0}, o3 = {0};
    bd_err e = {0};
    tnode t1, t3;
    CHECK_EQ_INT(cast(&in, BRAID_DTYPE_FLOAT16, -1, NULL, &o1, &e, &t1), BRAID_OK);
    g_threads = 3;
    CHECK_EQ_INT(cast(&in, BRAID_DTYPE_FLOAT16, -1, NULL, &o3, &e, &t3), BRAID_OK);
    g_threads = 1;
    int ok = memcmp(o1.data, o3.data, N * 2) == 0;
    for (int i = 0; i < N; i++) ok &= ((uint16_t *)o1.data)[i] == bd_float_to_half(x[i]);
    CHECK(ok);
    done(&t1.n, &o1);
    done(&t3.n, &o3);
    free(x);
}

int main(void)
{
    test_basic();
    test_to_int();
    test_to_float();
    test_float8();
    test_e8m0();
    test_castlike_and_errors();
    test_threads();
    return check_done();
}
