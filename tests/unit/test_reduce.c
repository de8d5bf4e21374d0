/* test_reduce.c: the reduce and softmax families: ReduceMean with keepdims 0
 * and 1, axes as an attribute (old opsets) and as an input (new ones),
 * noop_with_empty_axes, empty sets, ArgMax ties with select_last_index, and
 * Softmax's opset 11 (flattened trailing block) versus opset 13 (one axis) on
 * the same 2x3x4 input, against references computed in double (rtol 1e-6).
 * Then the reductions added with the whole reduce family: L1/L2/LogSum/
 * LogSumExp/SumSquare against formulas in double, their empty sets, NaN and
 * infinities, float16/bfloat16 rounded once, the integer widths, ArgMin and
 * NaN in ArgMax/ArgMin, bit-equal results on 1 and 4 threads, and errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

static void test_mean_keepdims(void)
{
    /* [[1,2,3],[4,5,6]] mean over axis 1 = [2, 5]; over axis 0 = [2.5, 3.5, 4.5] */
    float x[] = {1, 2, 3, 4, 5, 6};
    bd_tensor in = {F32, 2, {2, 3}, x}, out = {0};
    bd_err e = {0};
    for (int keep = 0; keep <= 1; keep++) {
        int64_t ax = 1;
        bd_attr a[2] = {attr_is("axes", &ax, 1), attr_i("keepdims", keep)};
        bd_node n = op_node(BD_OP_ReduceMean, 13, 1, 1, a, 2);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, keep ? 2 : 1);
        CHECK_EQ_INT(out.dims[0], 2);
        if (keep) CHECK_EQ_INT(out.dims[1], 1);
        CHECK_NEAR(((float *)out.data)[0], 2, 0, 0);
        CHECK_NEAR(((float *)out.data)[1], 5, 0, 0);
        done(&n, &out);
    }
    /* opset 18: axes as input 1 (-2 = axis 0), keepdims default 1 */
    int64_t ax = -2;
    bd_tensor in2[2] = {in, {BRAID_DTYPE_INT64, 1, {1}, &ax}};
    bd_node n = op_node(BD_OP_ReduceMean, 18, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 1);
    CHECK_EQ_INT(out.dims[1], 3);
    const float want[] = {2.5f, 3.5f, 4.5f};
    for (int i = 0; i < 3; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 0, 0);
    done(&n, &out);
    /* no axes at all: every axis, keepdims 0 gives a scalar */
    bd_attr k0 = attr_i("keepdims", 0);
    n = op_node(BD_OP_ReduceMean, 18, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 0);
    CHECK_NEAR(((float *)out.data)[0], 3.5, 0, 0);
    done(&n, &out);
}

/* An 8-bit integer mean divides by the count itself: over 256 elements the
 * count cast to uint8 would be 0 and trap (SIGFPE). Sums wrap in the element
 * type (256 ones sum to 0), as integer sums do. */
static void test_int8_mean(void)
{
    uint8_t x[256];
    for (int i = 0; i < 256; i++) x[i] = 1;
    bd_tensor in = {BRAID_DTYPE_UINT8, 1, {256}, x}, out = {0};
    bd_err e = {0};
    bd_attr k0 = attr_i("keepdims", 0);
    bd_node n = op_node(BD_OP_ReduceMean, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 0);
    done(&n, &out);
    int8_t y[200];
    for (int i = 0; i < 200; i++) y[i] = (int8_t)(i % 2 ? -1 : 1); /* sum 0 */
    y[0] = 100;                                                   /* sum 99: mean 99 / 200 = 0 */
    bd_tensor in8 = {BRAID_DTYPE_INT8, 1, {200}, y};
    CHECK_EQ_INT(run(&n, &in8, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], 0);
    done(&n, &out);
    int8_t z[4] = {9, 9, 9, 9}; /* 36 / 4 = 9 */
    bd_tensor in4 = {BRAID_DTYPE_INT8, 1, {4}, z};
    CHECK_EQ_INT(run(&n, &in4, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], 9);
    done(&n, &out);
}

static void test_reduce_ops(void)
{
    /* x = 0..23 - 11 as (2,3,4) int32; reduce axes {0, 2}: output (3,) */
    int32_t x[24];
    for (int i = 0; i < 24; i++) x[i] = i - 11;
    bd_tensor xin = {BRAID_DTYPE_INT32, 3, {2, 3, 4}, x}, out = {0};
    bd_err e = {0};
    int64_t axes[] = {0, 2};
    const int ops[] = {BD_OP_ReduceSum, BD_OP_ReduceMax, BD_OP_ReduceMin, BD_OP_ReduceProd};
    for (int o = 0; o < 4; o++) {
        bd_attr a[2] = {attr_is("axes", axes, 2), attr_i("keepdims", 0)};
        bd_node n = op_node(ops[o], 11, 1, 1, a, 2);
        CHECK_EQ_INT(run(&n, &xin, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 1);
        CHECK_EQ_INT(out.dims[0], 3);
        for (int j = 0; j < 3; j++) {
            int64_t s = 0, mx = INT64_MIN, mn = INT64_MAX, p = 1;
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 4; k++) {
                    int64_t v = x[(i * 3 + j) * 4 + k];
                    s += v, p *= v, mx = v > mx ? v : mx, mn = v < mn ? v : mn;
                }
            int64_t want = o == 0 ? s : o == 1 ? mx : o == 2 ? mn : (int32_t)p;
            CHECK_EQ_INT(((int32_t *)out.data)[j], want);
        }
        done(&n, &out);
    }
    /* ReduceSum opset 13 with an axes input that is empty: all axes, or, with
     * noop_with_empty_axes, a copy of the input */
    int64_t none[1];
    bd_tensor in2[2] = {xin, {BRAID_DTYPE_INT64, 1, {0}, none}};
    bd_node n = op_node(BD_OP_ReduceSum, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 3);
    CHECK_EQ_INT(bd_numel(&out), 1);
    CHECK_EQ_INT(((int32_t *)out.data)[0], 12);
    done(&n, &out);
    bd_attr noop = attr_i("noop_with_empty_axes", 1);
    n = op_node(BD_OP_ReduceSum, 13, 2, 1, &noop, 1);
    CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out), 24);
    CHECK(memcmp(out.data, x, sizeof x) == 0);
    done(&n, &out);
    /* an axes input not known when the plan is made is UNSUPPORTED */
    bd_tensor in3[2] = {xin, {BRAID_DTYPE_INT64, 1, {1}, NULL}};
    n = op_node(BD_OP_ReduceSum, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in3, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "axes");
    done(&n, &out);
    /* an axis out of range */
    int64_t bad = 3;
    bd_attr a = attr_is("axes", &bad, 1);
    n = op_node(BD_OP_ReduceMax, 13, 1, 1, &a, 1);
    CHECK_EQ_INT(run(&n, &xin, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis 3");
    done(&n, &out);
}

static void test_empty_set(void)
{
    /* (2,0,4) reduced over axis 1: sum 0, prod 1, max -inf, mean NaN */
    float x[1];
    int64_t ax = 1;
    bd_tensor in[2] = {{F32, 3, {2, 0, 4}, x}, {BRAID_DTYPE_INT64, 1, {1}, &ax}}, out = {0};
    bd_err e = {0};
    const int ops[] = {BD_OP_ReduceSum, BD_OP_ReduceProd, BD_OP_ReduceMax, BD_OP_ReduceMean};
    for (int o = 0; o < 4; o++) {
        bd_node n = op_node(ops[o], 18, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(bd_numel(&out), 8);
        for (int i = 0; i < 8; i++) {
            float v = ((float *)out.data)[i];
            if (o == 0) CHECK(v == 0);
            if (o == 1) CHECK(v == 1);
            if (o == 2) CHECK(isinf(v) && v < 0);
            if (o == 3) CHECK(isnan(v));
        }
        done(&n, &out);
    }
}

static void test_argmax(void)
{
    /* [[2,1,2],[0,3,3]]: along axis 1 the first maxima are at [0, 1], the last at [2, 2]; along
     * axis 0 at [0, 1, 1] either way */
    float x[] = {2, 1, 2, 0, 3, 3};
    bd_tensor in = {F32, 2, {2, 3}, x}, out = {0};
    bd_err e = {0};
    for (int last = 0; last <= 1; last++) {
        bd_attr a[3] = {attr_i("axis", -1), attr_i("keepdims", 1), attr_i("select_last_index", last)};
        bd_node n = op_node(BD_OP_ArgMax, 13, 1, 1, a, 3);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT64);
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[0], 2);
        CHECK_EQ_INT(out.dims[1], 1);
        CHECK_EQ_INT(((int64_t *)out.data)[0], last ? 2 : 0);
        CHECK_EQ_INT(((int64_t *)out.data)[1], last ? 2 : 1);
        done(&n, &out);
    }
    bd_attr k0 = attr_i("keepdims", 0);
    bd_node n = op_node(BD_OP_ArgMax, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 1);
    CHECK_EQ_INT(out.dims[0], 3);
    const int64_t want[] = {0, 1, 1};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], want[i]);
    done(&n, &out);
}

static void test_softmax_opsets(void)
{
    /* The same (2,3,4) input, axis 1. Opset 11 reads it as (2, 12) and
     * normalizes each row of 12; opset 13 normalizes the 3 values along dim 1
     * for each (batch, k). */
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11) * 0.5f - 2;
    bd_tensor in = {F32, 3, {2, 3, 4}, x}, out = {0};
    bd_err e = {0};
    for (int log_ = 0; log_ <= 1; log_++) {
        for (int v = 0; v < 2; v++) {
            int opset = v ? 13 : 11;
            bd_attr axis = attr_i("axis", 1);
            bd_node n = op_node(log_ ? BD_OP_LogSoftmax : BD_OP_Softmax, opset, 1, 1, &axis, 1);
            CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
            CHECK_EQ_INT(out.rank, 3);
            const float *y = out.data;
            for (int b = 0; b < 2; b++)
                for (int k = 0; k < (v ? 4 : 1); k++) {
                    /* the indices of one normalized group */
                    int idx[12], cnt = 0;
                    for (int j = 0; j < (v ? 3 : 12); j++)
                        idx[cnt++] = v ? b * 12 + j * 4 + k : b * 12 + j;
                    double mx = -INFINITY, s = 0;
                    for (int j = 0; j < cnt; j++) mx = fmax(mx, x[idx[j]]);
                    for (int j = 0; j < cnt; j++) s += exp(x[idx[j]] - mx);
                    for (int j = 0; j < cnt; j++) {
                        double want = log_ ? x[idx[j]] - mx - log(s) : exp(x[idx[j]] - mx) / s;
                        CHECK_NEAR(y[idx[j]], want, 1e-7, 1e-6);
                    }
                }
            done(&n, &out);
        }
    }
    /* opset 13 default axis is -1; large inputs stay finite (max subtracted) */
    float big[] = {1000, 1001, 1002, -1000, 0, 1000};
    bd_tensor bin = {F32, 2, {2, 3}, big};
    bd_node n = op_node(BD_OP_Softmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
    double d = 1 + exp(-1) + exp(-2);
    const double want[] = {exp(-2) / d, exp(-1) / d, 1 / d, 0, exp(-1000), 1};
    for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 1e-7, 1e-6);
    done(&n, &out);
    /* an int input is refused */
    int32_t iv[2] = {0};
    bd_tensor iin = {BRAID_DTYPE_INT32, 1, {2}, iv};
    n = op_node(BD_OP_Softmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &iin, &out, &e), BRAID_ERR_DTYPE);
    done(&n, &out);
}

/* Softmax and ReduceMean over 4096 rows of 64 on four threads equal one
 * thread, bit for bit. */
static void test_softmax_threads(void)
{
    enum { R = 4096, C = 64 };
    float *x = malloc(R * C * sizeof *x);
    for (int i = 0; i < R * C; i++) x[i] = (float)((i * 37) % 101) * 0.1f;
    bd_tensor in = {F32, 2, {R, C}, x}, one = {0}, four = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Softmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &in, &one, &e), BRAID_OK);
    done(&n, &four);
    g_threads = 4;
    CHECK_EQ_INT(run(&n, &in, &four, &e), BRAID_OK);
    g_threads = 1;
    CHECK(memcmp(one.data, four.data, R * C * sizeof(float)) == 0);
    free(one.data);
    done(&n, &four);
    int64_t ax = -1;
    bd_attr a = attr_is("axes", &ax, 1);
    n = op_node(BD_OP_ReduceMean, 13, 1, 1, &a, 1);
    CHECK_EQ_INT(run(&n, &in, &one, &e), BRAID_OK);
    done(&n, &four);
    g_threads = 4;
    CHECK_EQ_INT(run(&n, &in, &four, &e), BRAID_OK);
    g_threads = 1;
    CHECK(memcmp(one.data, four.data, R * sizeof(float)) == 0);
    double mean0 = 0;
    for (int i = 0; i < C; i++) mean0 += x[i];
    CHECK_NEAR(((float *)four.data)[0], mean0 / C, 0, 1e-6);
    free(one.data);
    done(&n, &four);
    free(x);
}

/* ---- the reductions of the whole family --------------------------------------- */

/* x = (i % 7) * 0.5 - 1.25 as (2,3,4), reduced over axes {0, 2} (opset 13,
 * attribute) and {-3, -1} (opset 18, input), keepdims 0 and 1. */
static void test_new_reductions(void)
{
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)(i % 7) * 0.5f - 1.25f;
    const int ops[] = {BD_OP_ReduceL1, BD_OP_ReduceL2, BD_OP_ReduceLogSum, BD_OP_ReduceLogSumExp,
                       BD_OP_ReduceSumSquare, BD_OP_ReduceSum, BD_OP_ReduceMean, BD_OP_ReduceProd,
                       BD_OP_ReduceMax, BD_OP_ReduceMin};
    bd_err e = {0};
    for (int o = 0; o < 10; o++)
        for (int v = 0; v < 2; v++)
            for (int keep = 0; keep <= 1; keep++) {
                int64_t ax13[] = {0, 2}, ax18[] = {-3, -1};
                bd_tensor in[2] = {{F32, 3, {2, 3, 4}, x}, ints1(ax18, 2)}, out = {0};
                bd_attr a[2] = {attr_i("keepdims", keep), attr_is("axes", ax13, 2)};
                bd_node n = op_node(ops[o], v ? 18 : 13, v ? 2 : 1, 1, a, v ? 1 : 2);
                if (o == 5 && !v) n.opset = 11; /* ReduceSum takes the input from 13 */
                CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
                CHECK_EQ_INT(out.rank, keep ? 3 : 1);
                CHECK_EQ_INT(out.dims[keep ? 1 : 0], 3);
                for (int j = 0; j < 3; j++) {
                    double s = 0, a1 = 0, sq = 0, p = 1, mx = -INFINITY, mn = INFINITY, se = 0;
                    for (int i = 0; i < 2; i++)
                        for (int k = 0; k < 4; k++) {
                            double t = x[(i * 3 + j) * 4 + k];
                            s += t, a1 += fabs(t), sq += t * t, p *= t, se += exp(t);
                            mx = fmax(mx, t), mn = fmin(mn, t);
                        }
                    const double want[] = {a1, sqrt(sq), log(s), log(se), sq, s, s / 8, p, mx, mn};
                    double got = ((float *)out.data)[j];
                    if (isnan(want[o])) CHECK(isnan(got));
                    else CHECK_NEAR(got, want[o], 1e-6, 1e-6);
                }
                done(&n, &out);
            }
}

/* Reductions over no values: (2,0,3) over axis 1. */
static void test_new_empty_sets(void)
{
    float x[1];
    int32_t xi[1];
    uint8_t xb[1];
    int64_t ax = 1;
    bd_err e = {0};
    const int ops[] = {BD_OP_ReduceL1, BD_OP_ReduceL2, BD_OP_ReduceSumSquare, BD_OP_ReduceLogSum,
                       BD_OP_ReduceLogSumExp, BD_OP_ReduceMin};
    const double want[] = {0, 0, 0, -INFINITY, -INFINITY, INFINITY};
    for (int o = 0; o < 6; o++) {
        bd_tensor in[2] = {{F32, 3, {2, 0, 3}, x}, ints1(&ax, 1)}, out = {0};
        bd_node n = op_node(ops[o], 18, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(bd_numel(&out), 6);
        for (int i = 0; i < 6; i++) CHECK(((float *)out.data)[i] == (float)want[o]);
        done(&n, &out);
    }
    /* integers: max is the lowest value, min the highest, mean 0; bool min is true */
    const int iops[] = {BD_OP_ReduceMax, BD_OP_ReduceMin, BD_OP_ReduceMean, BD_OP_ReduceProd};
    const int64_t iwant[] = {INT32_MIN, INT32_MAX, 0, 1};
    for (int o = 0; o < 4; o++) {
        bd_tensor in[2] = {{BRAID_DTYPE_INT32, 3, {2, 0, 3}, xi}, ints1(&ax, 1)}, out = {0};
        bd_node n = op_node(iops[o], 20, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], iwant[o]);
        done(&n, &out);
    }
    for (int o = 0; o < 2; o++) {
        bd_tensor in[2] = {{BRAID_DTYPE_BOOL, 3, {2, 0, 3}, xb}, ints1(&ax, 1)}, out = {0};
        bd_node n = op_node(iops[o], 20, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], o == 0 ? 0 : 1);
        done(&n, &out);
    }
}

/* One row per case, reduced over its last axis. */
static float reduce_row(int op, const float *x, int n)
{
    int64_t ax = -1;
    bd_tensor in[2] = {{F32, 1, {n}, (void *)x}, ints1(&ax, 1)}, out = {0};
    bd_err e = {0};
    bd_attr k0 = attr_i("keepdims", 0);
    bd_node nd = op_node(op, 18, 2, 1, &k0, 1);
    float r = -12345;
    CHECK_EQ_INT(run(&nd, in, &out, &e), BRAID_OK);
    if (out.data) r = ((float *)out.data)[0];
    done(&nd, &out);
    return r;
}

static void test_nan_inf(void)
{
    /* a NaN anywhere is the max and the min, also past the 8 vector lanes */
    float x[19];
    for (int i = 0; i < 19; i++) x[i] = (float)i;
    for (int at = 0; at < 19; at += 6) {
        x[at] = NAN;
        CHECK(isnan(reduce_row(BD_OP_ReduceMax, x, 19)));
        CHECK(isnan(reduce_row(BD_OP_ReduceMin, x, 19)));
        CHECK(isnan(reduce_row(BD_OP_ReduceSum, x, 19)));
        x[at] = (float)at;
    }
    CHECK(reduce_row(BD_OP_ReduceMax, x, 19) == 18);
    CHECK(reduce_row(BD_OP_ReduceMin, x, 19) == 0);
    /* LogSumExp: large values do not overflow (max shifted out); +inf is +inf;
     * all -inf is -inf (log 0), not NaN; a NaN stays NaN */
    const float big[] = {1000, 1000}, pinf[] = {1, INFINITY, 2}, ninf[] = {-INFINITY, -INFINITY},
                mixed[] = {-INFINITY, 0}, nan[] = {1, NAN};
    CHECK_NEAR(reduce_row(BD_OP_ReduceLogSumExp, big, 2), 1000 + log(2.0), 0, 1e-7);
    CHECK(reduce_row(BD_OP_ReduceLogSumExp, pinf, 3) == INFINITY);
    CHECK(reduce_row(BD_OP_ReduceLogSumExp, ninf, 2) == -INFINITY);
    CHECK(reduce_row(BD_OP_ReduceLogSumExp, mixed, 2) == 0);
    CHECK(isnan(reduce_row(BD_OP_ReduceLogSumExp, nan, 2)));
    /* LogSum of a negative sum is NaN, of 0 is -inf; L2 and L1 of infinities are inf */
    const float neg[] = {-1, -2}, zero[] = {0, 0}, inf2[] = {-INFINITY, 1};
    CHECK(isnan(reduce_row(BD_OP_ReduceLogSum, neg, 2)));
    CHECK(reduce_row(BD_OP_ReduceLogSum, zero, 2) == -INFINITY);
    CHECK(reduce_row(BD_OP_ReduceL2, inf2, 2) == INFINITY);
    CHECK(reduce_row(BD_OP_ReduceL1, inf2, 2) == INFINITY);
    /* L2 of values whose squares overflow float32 stays finite (double accumulators) */
    const float huge[] = {3e30f, 4e30f};
    CHECK_NEAR(reduce_row(BD_OP_ReduceL2, huge, 2), 5e30, 0, 1e-6);
}

/* float16 and bfloat16: computed in float, rounded once per output. */
static void test_half_types(void)
{
    /* float16 sum of 2048 + 1 + 1 is 2050: rounding after each add would
     * stay at 2048 (2049 is a tie that rounds to even) */
    uint16_t h[3] = {bd_float_to_half(2048), bd_float_to_half(1), bd_float_to_half(1)}, hb[3];
    int64_t ax = 0;
    bd_err e = {0};
    bd_tensor in[2] = {{BRAID_DTYPE_FLOAT16, 1, {3}, h}, ints1(&ax, 1)}, out = {0};
    bd_node n = op_node(BD_OP_ReduceSum, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_FLOAT16);
    CHECK(bd_half_to_float(((uint16_t *)out.data)[0]) == 2050);
    done(&n, &out);
    /* float16 mean, L2 and LogSumExp of (2, 5) over the last axis against double */
    uint16_t h10[10];
    float f10[10];
    for (int i = 0; i < 10; i++) h10[i] = bd_float_to_half((float)i * 0.375f - 1), f10[i] = bd_half_to_float(h10[i]);
    int64_t last = -1;
    const int ops[] = {BD_OP_ReduceMean, BD_OP_ReduceL2, BD_OP_ReduceLogSumExp, BD_OP_ReduceMax};
    for (int o = 0; o < 4; o++) {
        for (int bf = 0; bf <= 1; bf++) {
            uint16_t src[10];
            float fv[10];
            for (int i = 0; i < 10; i++) {
                src[i] = bf ? bd_float_to_bf16(f10[i]) : h10[i];
                fv[i] = bf ? bd_bf16_to_float(src[i]) : f10[i];
            }
            bd_tensor in2[2] = {{bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16, 2, {2, 5}, src}, ints1(&last, 1)};
            n = op_node(ops[o], 18, 2, 1, NULL, 0);
            CHECK_EQ_INT(run(&n, in2, &out, &e), BRAID_OK);
            for (int r = 0; r < 2; r++) {
                double s = 0, sq = 0, se = 0, mx = -INFINITY;
                for (int i = 0; i < 5; i++) {
                    double t = fv[r * 5 + i];
                    s += t, sq += t * t, se += exp(t), mx = fmax(mx, t);
                }
                const double want[] = {s / 5, sqrt(sq), log(se), mx};
                uint16_t w = bf ? bd_float_to_bf16((float)want[o]) : bd_float_to_half((float)want[o]);
                uint16_t got = ((uint16_t *)out.data)[r];
                /* one rounding of the double result: the same bits, or the
                 * neighbour when the float exp of LogSumExp lands near a tie */
                CHECK(got == w || (o == 2 && (got == w + 1 || got + 1 == w)));
            }
            done(&n, &out);
        }
    }
    /* bfloat16 ArgMax/ArgMin compare the widened values */
    hb[0] = bd_float_to_bf16(-3), hb[1] = bd_float_to_bf16(7), hb[2] = bd_float_to_bf16(-3);
    bd_tensor bin = {BRAID_DTYPE_BFLOAT16, 1, {3}, hb};
    for (int mn = 0; mn <= 1; mn++) {
        bd_attr sl = attr_i("select_last_index", 1);
        n = op_node(mn ? BD_OP_ArgMin : BD_OP_ArgMax, 13, 1, 1, &sl, 1);
        CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
        CHECK_EQ_INT(((int64_t *)out.data)[0], mn ? 2 : 1);
        done(&n, &out);
    }
}

static void test_integers(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    bd_attr k0 = attr_i("keepdims", 0);
    /* uint64 sum wraps; the max of large values is exact (no double rounding) */
    uint64_t u[3] = {UINT64_MAX, 2, (uint64_t)1 << 63};
    bd_tensor uin = {BRAID_DTYPE_UINT64, 1, {3}, u};
    bd_node n = op_node(BD_OP_ReduceSum, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &uin, &out, &e), BRAID_OK);
    CHECK(((uint64_t *)out.data)[0] == ((uint64_t)1 << 63) + 1);
    done(&n, &out);
    uint64_t v[3] = {(uint64_t)1 << 60, ((uint64_t)1 << 60) + 1, 5};
    uin.data = v;
    n = op_node(BD_OP_ReduceMax, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &uin, &out, &e), BRAID_OK);
    CHECK(((uint64_t *)out.data)[0] == ((uint64_t)1 << 60) + 1);
    done(&n, &out);
    /* int32: L2 of (3, -4) is 5, L1 is 7, SumSquare 25; LogSum of 100 is 4 (log 100 = 4.6,
     * truncated); int8 L1 of (-128) wraps to -128 as numpy's abs does */
    int32_t a[2] = {3, -4};
    bd_tensor ain = {BRAID_DTYPE_INT32, 1, {2}, a};
    const int ops[] = {BD_OP_ReduceL2, BD_OP_ReduceL1, BD_OP_ReduceSumSquare};
    const int want[] = {5, 7, 25};
    for (int o = 0; o < 3; o++) {
        n = op_node(ops[o], 13, 1, 1, &k0, 1);
        CHECK_EQ_INT(run(&n, &ain, &out, &e), BRAID_OK);
        CHECK_EQ_INT(((int32_t *)out.data)[0], want[o]);
        done(&n, &out);
    }
    int32_t hundred[2] = {60, 40};
    ain.data = hundred;
    n = op_node(BD_OP_ReduceLogSum, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &ain, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int32_t *)out.data)[0], 4);
    done(&n, &out);
    int8_t m[1] = {-128};
    bd_tensor min8 = {BRAID_DTYPE_INT8, 1, {1}, m};
    n = op_node(BD_OP_ReduceL1, 13, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &min8, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], -128);
    done(&n, &out);
    /* opset 28 takes no integers in LogSum and LogSumExp */
    n = op_node(BD_OP_ReduceLogSumExp, 28, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &ain, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "int32");
    done(&n, &out);
    /* int64 product and int16 / uint16 ArgMax */
    int64_t p[3] = {-3, 1000000007, 5};
    bd_tensor pin = {BRAID_DTYPE_INT64, 1, {3}, p};
    n = op_node(BD_OP_ReduceProd, 18, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &pin, &out, &e), BRAID_OK);
    CHECK(((int64_t *)out.data)[0] == -15000000105LL);
    done(&n, &out);
    int16_t s16[4] = {-5, 300, 300, -7};
    uint16_t u16[4] = {5, 65535, 2, 65535};
    bd_tensor t16[2] = {{BRAID_DTYPE_INT16, 1, {4}, s16}, {BRAID_DTYPE_UINT16, 1, {4}, u16}};
    for (int t = 0; t < 2; t++) {
        n = op_node(BD_OP_ArgMax, 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &t16[t], &out, &e), BRAID_OK);
        CHECK_EQ_INT(((int64_t *)out.data)[0], 1);
        done(&n, &out);
        n = op_node(BD_OP_ArgMin, 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &t16[t], &out, &e), BRAID_OK);
        CHECK_EQ_INT(((int64_t *)out.data)[0], t ? 2 : 3);
        done(&n, &out);
    }
}

static void test_argmin(void)
{
    /* (2,3): [[2,1,1],[0,3,0]]: along axis 1 first minima [1, 0], last [2, 2];
     * along axis 0 (keepdims 0) [1, 0, 1] */
    float x[] = {2, 1, 1, 0, 3, 0};
    bd_tensor in = {F32, 2, {2, 3}, x}, out = {0};
    bd_err e = {0};
    for (int last = 0; last <= 1; last++) {
        bd_attr a[2] = {attr_i("axis", -1), attr_i("select_last_index", last)};
        bd_node n = op_node(BD_OP_ArgMin, 12, 1, 1, a, 2);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 2);
        CHECK_EQ_INT(out.dims[1], 1);
        CHECK_EQ_INT(((int64_t *)out.data)[0], last ? 2 : 1);
        CHECK_EQ_INT(((int64_t *)out.data)[1], last ? 2 : 0);
        done(&n, &out);
    }
    bd_attr k0 = attr_i("keepdims", 0);
    bd_node n = op_node(BD_OP_ArgMin, 1, 1, 1, &k0, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 1);
    const int64_t want[] = {1, 0, 1};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], want[i]);
    done(&n, &out);
    /* NaN: numpy's argmax and argmin both return the first NaN (the last
     * with select_last_index); -inf/+inf are ordinary values */
    float y[] = {1, NAN, -INFINITY, NAN, INFINITY};
    bd_tensor yin = {F32, 1, {5}, y};
    for (int op = 0; op < 2; op++)
        for (int last = 0; last <= 1; last++) {
            bd_attr sl = attr_i("select_last_index", last);
            n = op_node(op ? BD_OP_ArgMin : BD_OP_ArgMax, 13, 1, 1, &sl, 1);
            CHECK_EQ_INT(run(&n, &yin, &out, &e), BRAID_OK);
            CHECK_EQ_INT(((int64_t *)out.data)[0], last ? 3 : 1);
            done(&n, &out);
        }
    float z[] = {1, -INFINITY, INFINITY, -INFINITY};
    yin = (bd_tensor){F32, 1, {4}, z};
    n = op_node(BD_OP_ArgMin, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &yin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int64_t *)out.data)[0], 1);
    done(&n, &out);
    /* an empty axis has no answer */
    bd_tensor ein = {F32, 2, {0, 3}, x};
    bd_attr a0 = attr_i("axis", 0);
    n = op_node(BD_OP_ArgMin, 13, 1, 1, &a0, 1);
    CHECK_EQ_INT(run(&n, &ein, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "size 0");
    done(&n, &out);
}

/* The same bits on 1 and 4 threads: a whole-tensor sum (fixed blocks), a
 * column reduction (the kept inner group split), a middle-axis LogSumExp. */
static void test_reduce_threads(void)
{
    enum { N = 300000 };
    unsigned seed = 7;
    float *x = randn(N, &seed);
    struct { int op; int rank; int64_t dims[3]; int64_t ax; } cases[] = {
        {BD_OP_ReduceSum, 1, {N}, 0},
        {BD_OP_ReduceMean, 2, {1000, 300}, 0},
        {BD_OP_ReduceLogSumExp, 3, {30, 100, 100}, 1},
        {BD_OP_ReduceMax, 2, {300, 1000}, -1},
    };
    for (int c = 0; c < 4; c++) {
        bd_tensor in[2] = {{F32, cases[c].rank, {0}, x}, ints1(&cases[c].ax, 1)}, one = {0}, four = {0};
        memcpy(in[0].dims, cases[c].dims, sizeof cases[c].dims);
        bd_err e = {0};
        bd_node n = op_node(cases[c].op, 18, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, &one, &e), BRAID_OK);
        bd_free(n.params);
        n.params = NULL;
        g_threads = 4;
        CHECK_EQ_INT(run(&n, in, &four, &e), BRAID_OK);
        g_threads = 1;
        CHECK(memcmp(one.data, four.data, (size_t)bd_numel(&one) * sizeof(float)) == 0);
        if (c == 0) {
            double s = 0;
            for (int i = 0; i < N; i++) s += x[i];
            CHECK_NEAR(((float *)one.data)[0], s, 1e-3, 1e-6);
        }
        free(one.data);
        done(&n, &four);
    }
    free(x);
}

static void test_reduce_errors(void)
{
    float x[6] = {0};
    int64_t ax = 0;
    bd_tensor in[2] = {{F32, 2, {2, 3}, x}, ints1(&ax, 1)}, out = {0};
    bd_err e = {0};
    /* the axes attribute is gone at opset 18, and the axes input is absent before */
    bd_attr a = attr_is("axes", &ax, 1);
    bd_node n = op_node(BD_OP_ReduceL2, 18, 1, 1, &a, 1);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'axes'");
    done(&n, &out);
    n = op_node(BD_OP_ReduceL1, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute");
    done(&n, &out);
    /* an axis twice */
    int64_t twice[2] = {1, -1};
    in[1] = ints1(twice, 2);
    n = op_node(BD_OP_ReduceSumSquare, 18, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "twice");
    done(&n, &out);
    /* bool is for Max and Min only; strings nowhere */
    uint8_t b[2] = {0, 1};
    bd_tensor bin = {BRAID_DTYPE_BOOL, 1, {2}, b};
    n = op_node(BD_OP_ReduceSum, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "bool");
    done(&n, &out);
    n = op_node(BD_OP_ReduceMax, 20, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 1);
    done(&n, &out);
}

int main(void)
{
    test_new_reductions();
    test_new_empty_sets();
    test_nan_inf();
    test_half_types();
    test_integers();
    test_argmin();
    test_reduce_threads();
    test_reduce_errors();
    test_softmax_threads();
    test_mean_keepdims();
    test_int8_mean();
    test_reduce_ops();
    test_empty_set();
    test_argmax();
    test_softmax_opsets();
    return check_done();
}
