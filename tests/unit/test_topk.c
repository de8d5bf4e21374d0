/* test_topk.c: the topk family (TopK) on the CPU: largest and smallest,
 * ties to the lower index (onnx's reference sorts by value, then index), NaN
 * above +inf and -0 equal to +0 as numpy orders them, K of 0 and of the
 * whole axis, a middle axis, the heap path (K small against n) against a
 * full sort, exact 64-bit integers, float16/bfloat16, opset 1's attribute k,
 * and the errors (K out of range, dtypes an opset does not take). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

/* TopK at opset 11 of x (F32, shape dims) with K, axis, largest. */
static braid_status topk(bd_tensor *x, int64_t k, int64_t axis, int largest, bd_tensor *out, bd_err *e,
                         bd_node *n, bd_attr *a)
{
    static int64_t kv;
    kv = k;
    bd_tensor in[2] = {*x, ints1(&kv, 1)};
    a[0] = attr_i("axis", axis);
    a[1] = attr_i("largest", largest);
    *n = op_node(BD_OP_TopK, 11, 2, 2, a, 2);
    return run(n, in, out, e);
}

static void test_order(void)
{
    /* ties: 3 appears at 1, 3 and 5 */
    float x[] = {1, 3, 2, 3, -0.0f, 3, 0};
    bd_tensor in = {F32, 1, {7}, x}, out[2] = {{0}};
    bd_err e = {0};
    bd_node n;
    bd_attr a[2];
    CHECK_EQ_INT(topk(&in, 4, 0, 1, out, &e, &n, a), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 4);
    CHECK_EQ_INT(out[1].dtype, BRAID_DTYPE_INT64);
    const int64_t wi[] = {1, 3, 5, 2};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(((int64_t *)out[1].data)[i], wi[i]);
        CHECK(((float *)out[0].data)[i] == x[wi[i]]);
    }
    done(&n, out);
    /* smallest: -0 and 0 tie, so the lower index (4) first; its sign is kept */
    CHECK_EQ_INT(topk(&in, 3, -1, 0, out, &e, &n, a), BRAID_OK);
    const int64_t si[] = {4, 6, 0};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(((int64_t *)out[1].data)[i], si[i]);
    CHECK(signbit(((float *)out[0].data)[0]));
    done(&n, out);
    /* NaN sorts above +inf: first for largest, last for smallest */
    float y[] = {INFINITY, NAN, -INFINITY, 0};
    bd_tensor yin = {F32, 1, {4}, y};
    CHECK_EQ_INT(topk(&yin, 4, 0, 1, out, &e, &n, a), BRAID_OK);
    const int64_t ly[] = {1, 0, 3, 2};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out[1].data)[i], ly[i]);
    CHECK(isnan(((float *)out[0].data)[0]));
    done(&n, out);
    CHECK_EQ_INT(topk(&yin, 4, 0, 0, out, &e, &n, a), BRAID_OK);
    const int64_t sy[] = {2, 3, 0, 1};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out[1].data)[i], sy[i]);
    done(&n, out);
    /* an Indices output the graph leaves out has no memory (the executors pass
     * NULL): the values are still written */
    CHECK_EQ_INT(topk(&in, 2, 0, 1, out, &e, &n, a), BRAID_OK);
    void *keep = out[1].data;
    memset(out[0].data, 0, 2 * sizeof(float));
    out[1].data = NULL;
    int64_t kv = 2;
    bd_tensor kin[2] = {in, ints1(&kv, 1)};
    bd_kernel kk = {.node = &n, .in = kin, .n_in = 2, .out = out, .n_out = 2, .threads = 1, .err = &e};
    CHECK_EQ_INT(bd_cpu_run(&kk), BRAID_OK);
    CHECK(((float *)out[0].data)[0] == 3 && ((float *)out[0].data)[1] == 3);
    out[1].data = keep;
    done(&n, out);
    /* K = 0: empty outputs */
    CHECK_EQ_INT(topk(&in, 0, 0, 1, out, &e, &n, a), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out[0]), 0);
    done(&n, out);
}

/* Axis 1 of (2, 3, 2): each (b, k) line of 3 is sorted on its own. */
static void test_middle_axis(void)
{
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)((i * 5) % 7);
    bd_tensor in = {F32, 3, {2, 3, 2}, x}, out[2] = {{0}};
    bd_err e = {0};
    bd_node n;
    bd_attr a[2];
    CHECK_EQ_INT(topk(&in, 2, 1, 1, out, &e, &n, a), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[1], 2);
    for (int b = 0; b < 2; b++)
        for (int k = 0; k < 2; k++) {
            int best = -1, second = -1;
            for (int j = 0; j < 3; j++) {
                float v = x[(b * 3 + j) * 2 + k];
                if (best < 0 || v > x[(b * 3 + best) * 2 + k]) second = best, best = j;
                else if (second < 0 || v > x[(b * 3 + second) * 2 + k]) second = j;
            }
            CHECK_EQ_INT(((int64_t *)out[1].data)[(b * 2 + 0) * 2 + k], best);
            CHECK_EQ_INT(((int64_t *)out[1].data)[(b * 2 + 1) * 2 + k], second);
            CHECK(((float *)out[0].data)[(b * 2 + 1) * 2 + k] == x[(b * 3 + second) * 2 + k]);
        }
    done(&n, out);
}

/* The heap path (K = 5 of 1000, many ties) equals the head of a full sort (K = 1000). */
static void test_heap_vs_sort(void)
{
    enum { N = 1000 };
    float x[N];
    for (int i = 0; i < N; i++) x[i] = (float)((i * 7919) % 97);
    bd_tensor in = {F32, 2, {1, N}, x}, small[2] = {{0}}, all[2] = {{0}};
    bd_err e = {0};
    for (int largest = 0; largest <= 1; largest++) {
        bd_node n1, n2;
        bd_attr a1[2], a2[2];
        CHECK_EQ_INT(topk(&in, 5, 1, largest, small, &e, &n1, a1), BRAID_OK);
        CHECK_EQ_INT(topk(&in, N, 1, largest, all, &e, &n2, a2), BRAID_OK);
        CHECK(memcmp(small[1].data, all[1].data, 5 * sizeof(int64_t)) == 0);
        CHECK(memcmp(small[0].data, all[0].data, 5 * sizeof(float)) == 0);
        /* the full sort is ordered, ties by index */
        int ok = 1;
        for (int i = 1; i < N; i++) {
            float p = ((float *)all[0].data)[i - 1], q = ((float *)all[0].data)[i];
            int64_t pi = ((int64_t *)all[1].data)[i - 1], qi = ((int64_t *)all[1].data)[i];
            if (largest ? p < q : p > q) ok = 0;
            if (p == q && pi > qi) ok = 0;
        }
        CHECK(ok);
        done(&n1, small);
        done(&n2, all);
    }
}

static void test_dtypes(void)
{
    bd_err e = {0};
    bd_tensor out[2] = {{0}};
    int64_t k = 2;
    /* int64 values 2^62 + 1 and 2^62 differ: no rounding through double */
    int64_t v[3] = {((int64_t)1 << 62), ((int64_t)1 << 62) + 1, -5};
    bd_tensor in[2] = {{BRAID_DTYPE_INT64, 1, {3}, v}, ints1(&k, 1)};
    bd_node n = op_node(BD_OP_TopK, 11, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(((int64_t *)out[1].data)[0], 1);
    CHECK(((int64_t *)out[0].data)[1] == ((int64_t)1 << 62));
    done(&n, out);
    uint64_t u[3] = {UINT64_MAX, 1, UINT64_MAX - 1};
    in[0] = (bd_tensor){BRAID_DTYPE_UINT64, 1, {3}, u};
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(((int64_t *)out[1].data)[1], 2);
    done(&n, out);
    /* float16 (opset 10) and bfloat16 (opset 24): values copied bit for bit */
    uint16_t h[3] = {bd_float_to_half(-1.5f), bd_float_to_half(65504), bd_float_to_half(0.25f)};
    in[0] = (bd_tensor){BRAID_DTYPE_FLOAT16, 1, {3}, h};
    n = op_node(BD_OP_TopK, 10, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(((uint16_t *)out[0].data)[0] == h[1] && ((uint16_t *)out[0].data)[1] == h[2]);
    done(&n, out);
    uint16_t bf[3] = {bd_float_to_bf16(3), bd_float_to_bf16(-7), bd_float_to_bf16(3.5f)};
    in[0] = (bd_tensor){BRAID_DTYPE_BFLOAT16, 1, {3}, bf};
    n = op_node(BD_OP_TopK, 24, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(((int64_t *)out[1].data)[0], 2);
    CHECK_EQ_INT(((int64_t *)out[1].data)[1], 0);
    done(&n, out);
    /* bfloat16 before opset 24 and integers before opset 11 are not in the spec */
    n = op_node(BD_OP_TopK, 11, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "bfloat16");
    done(&n, out);
    in[0] = (bd_tensor){BRAID_DTYPE_INT64, 1, {3}, v};
    n = op_node(BD_OP_TopK, 10, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    done(&n, out);
}

static void test_opset1_and_errors(void)
{
    float x[] = {5, 1, 4};
    bd_tensor in[2] = {{F32, 1, {3}, x}}, out[2] = {{0}};
    bd_err e = {0};
    /* opset 1: k is an attribute; largest first */
    bd_attr ka = attr_i("k", 2);
    bd_node n = op_node(BD_OP_TopK, 1, 1, 2, &ka, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(((float *)out[0].data)[0] == 5 && ((float *)out[0].data)[1] == 4);
    done(&n, out);
    n = op_node(BD_OP_TopK, 1, 1, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'k'");
    done(&n, out);
    /* K beyond the axis, and negative */
    int64_t k = 4;
    in[1] = ints1(&k, 1);
    n = op_node(BD_OP_TopK, 11, 2, 2, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "K = 4");
    done(&n, out);
    k = -1;
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    done(&n, out);
    /* K must be known when the plan is made; axis in range */
    in[1].data = NULL;
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
    k = 1;
    in[1].data = &k;
    bd_attr ax = attr_i("axis", 1);
    n = op_node(BD_OP_TopK, 11, 2, 2, &ax, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis 1");
    done(&n, out);
}

int main(void)
{
    test_order();
    test_middle_axis();
    test_heap_vs_sort();
    test_dtypes();
    test_opset1_and_errors();
    return check_done();
}
