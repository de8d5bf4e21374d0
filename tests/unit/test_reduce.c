/* test_reduce.c: the reduce and softmax families: ReduceMean with keepdims 0
 * and 1, axes as an attribute (old opsets) and as an input (new ones),
 * noop_with_empty_axes, empty sets, ArgMax ties with select_last_index, and
 * Softmax's opset 11 (flattened trailing block) versus opset 13 (one axis) on
 * the same 2x3x4 input, against references computed in double (rtol 1e-6). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

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

int main(void)
{
    test_softmax_threads();
    test_mean_keepdims();
    test_int8_mean();
    test_reduce_ops();
    test_empty_set();
    test_argmax();
    test_softmax_opsets();
    return check_done();
}
