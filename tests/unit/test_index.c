/* test_index.c: the index family (GatherElements, GatherND, OneHot, Trilu,
 * EyeLike, ReverseSequence): outputs against reference loops written from the
 * spec's formulas, on several element sizes, negative axes and indices, empty
 * tensors, 1 and 4 threads, and the errors (out-of-range indices name the
 * index). Exact: values are only moved. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "ops/index.h"
#include "util/dtype.h"

/* Runs n on 1 and on 4 threads; 1 when both succeed with the same bytes. The
 * 1-thread output stays in out. */
static int run_both(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_tensor o4[1] = {0};
    g_threads = 4;
    braid_status s4 = run(n, in, o4, e);
    bd_free(n->params);
    n->params = NULL;
    g_threads = 1;
    braid_status s1 = run(n, in, out, e);
    size_t nb = 0;
    int same = s1 == BRAID_OK && s4 == BRAID_OK && bd_tensor_nbytes(&out[0], &nb, e) == BRAID_OK &&
               memcmp(out[0].data, o4[0].data, nb) == 0;
    free(o4[0].data);
    return same;
}

/* GatherElements on a 3x4x5 int64 tensor with indices 3x2x5 (axis 1, so the
 * indices are shorter than the data along axis 1 only) and on other axes,
 * against out[i][j][k] = data[...index...] written per axis. */
static void test_gather_elements(void)
{
    int64_t x[60];
    for (int i = 0; i < 60; i++) x[i] = 1000 + i;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t dd[3] = {3, 4, 5};
    for (int axis = -3; axis < 3; axis++) {
        int a = axis < 0 ? axis + 3 : axis;
        int64_t id[3] = {a == 0 ? 5 : 2, a == 1 ? 6 : 3, a == 2 ? 7 : 4}; /* longer than data along the axis */
        int cnt = (int)(id[0] * id[1] * id[2]);
        int32_t *ix = malloc(sizeof(int32_t) * (size_t)cnt);
        for (int i = 0; i < cnt; i++) ix[i] = (int32_t)((i * 7) % (2 * dd[a]) - dd[a]); /* [-dim, dim) */
        bd_attr at = attr_i("axis", axis);
        bd_tensor in[2] = {tensor(BRAID_DTYPE_INT64, 3, dd, x), tensor(BRAID_DTYPE_INT32, 3, id, ix)};
        bd_node n = op_node(BD_OP_GatherElements, 13, 2, 1, &at, 1);
        CHECK(run_both(&n, in, out, &e));
        int ok = out[0].dims[0] == id[0] && out[0].dims[1] == id[1] && out[0].dims[2] == id[2];
        for (int i = 0; ok && i < id[0]; i++)
            for (int j = 0; j < id[1]; j++)
                for (int l = 0; l < id[2]; l++) {
                    int c[3] = {i, j, l}, v = ix[(i * id[1] + j) * id[2] + l];
                    c[a] = v < 0 ? v + (int)dd[a] : v;
                    ok &= ((int64_t *)out[0].data)[(i * id[1] + j) * id[2] + l] == x[(c[0] * 4 + c[1]) * 5 + c[2]];
                }
        CHECK(ok);
        done(&n, out);
        free(ix);
    }

    /* the spec's example 2, uint8, and empty indices */
    uint8_t d2[] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, want[] = {4, 8, 3, 7, 2, 3};
    int64_t i2[] = {1, 2, 0, 2, 0, 0};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_UINT8, 2, (int64_t[]){3, 3}, d2), tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){2, 3}, i2)};
    bd_node n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want, 6) == 0);
    done(&n, out);
    in[1].dims[0] = 0;
    n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    done(&n, out);

    /* errors: an index out of range, indices wider than the data on another
     * axis, ranks that differ, float indices, an axis out of range */
    in[1].dims[0] = 2;
    i2[4] = -4;
    n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "index -4 (element 4 of 'indices') is out of range for axis 0 of size 3");
    done(&n, out);
    i2[4] = 0;
    in[1].dims[1] = 4, in[1].dims[0] = 1;
    n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[1].rank = 1;
    n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[1] = tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){1, 1}, i2);
    n = op_node(BD_OP_GatherElements, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_DTYPE);
    done(&n, out);
    bd_attr bad = attr_i("axis", 2);
    in[1] = tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){1, 1}, i2);
    n = op_node(BD_OP_GatherElements, 13, 2, 1, &bad, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
}

/* GatherND: data 2x3x4 (float16 bits 0..23), against the definition
 * out[batch..., m...] = data[batch..., idx...][rest...]. */
static void test_gather_nd(void)
{
    uint16_t x[24];
    for (int i = 0; i < 24; i++) x[i] = (uint16_t)(100 + i);
    int64_t dd[3] = {2, 3, 4};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* b = 0, k = 2: indices 2x2x2 of (i0, i1) pairs, slices of 4 */
    int64_t i1[] = {0, 1, -1, -1, 1, 0, -2, 2};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_FLOAT16, 3, dd, x), tensor(BRAID_DTYPE_INT64, 3, (int64_t[]){2, 2, 2}, i1)};
    bd_node n = op_node(BD_OP_GatherND, 13, 2, 1, NULL, 0);
    CHECK(run_both(&n, in, out, &e));
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[2], 4);
    int ok = 1;
    for (int t = 0; t < 4; t++) {
        int a0 = (int)(i1[2 * t] < 0 ? i1[2 * t] + 2 : i1[2 * t]), a1 = (int)(i1[2 * t + 1] < 0 ? i1[2 * t + 1] + 3 : i1[2 * t + 1]);
        for (int c = 0; c < 4; c++) ok &= ((uint16_t *)out[0].data)[t * 4 + c] == x[(a0 * 3 + a1) * 4 + c];
    }
    CHECK(ok);
    done(&n, out);

    /* b = 1, k = 2 (scalars): indices 2x3x2 -> output 2x3 */
    int32_t i2[] = {0, 0, 2, 3, 1, -1, 2, 2, 0, 1, -3, -4};
    bd_attr bdim = attr_i("batch_dims", 1);
    in[1] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){2, 3, 2}, i2);
    n = op_node(BD_OP_GatherND, 13, 2, 1, &bdim, 1);
    CHECK(run_both(&n, in, out, &e));
    CHECK_EQ_INT(out[0].rank, 2);
    ok = out[0].dims[0] == 2 && out[0].dims[1] == 3;
    for (int b = 0; ok && b < 2; b++)
        for (int m = 0; m < 3; m++) {
            int j0 = i2[(b * 3 + m) * 2], j1 = i2[(b * 3 + m) * 2 + 1];
            j0 = j0 < 0 ? j0 + 3 : j0, j1 = j1 < 0 ? j1 + 4 : j1;
            ok &= ((uint16_t *)out[0].data)[b * 3 + m] == x[(b * 3 + j0) * 4 + j1];
        }
    CHECK(ok);
    done(&n, out);

    /* b = 2, k = 1 on 2x3x4: indices 2x3x1 -> output 2x3 */
    int64_t i3[] = {3, 2, 1, 0, -1, -4};
    bd_attr b2 = attr_i("batch_dims", 2);
    in[1] = tensor(BRAID_DTYPE_INT64, 3, (int64_t[]){2, 3, 1}, i3);
    n = op_node(BD_OP_GatherND, 13, 2, 1, &b2, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    ok = 1;
    for (int t = 0; t < 6; t++) ok &= ((uint16_t *)out[0].data)[t] == x[t * 4 + (i3[t] < 0 ? i3[t] + 4 : i3[t])];
    CHECK(ok);
    done(&n, out);

    /* errors: an index out of range, k too large, batch dims that differ, b >= rank */
    i3[4] = 4;
    n = op_node(BD_OP_GatherND, 13, 2, 1, &b2, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "index 4 (tuple 4 of 'indices') is out of range for data axis 2 of size 4");
    done(&n, out);
    in[1] = tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){1, 4}, i1);
    n = op_node(BD_OP_GatherND, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[1] = tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){3, 1}, i1);
    n = op_node(BD_OP_GatherND, 13, 2, 1, &bdim, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "batch dim 0");
    done(&n, out);
    n = op_node(BD_OP_GatherND, 13, 2, 1, &b2, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    /* no tuples: indices 0x2 */
    in[1] = tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){0, 2}, i1);
    n = op_node(BD_OP_GatherND, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    CHECK_EQ_INT(out[0].dims[1], 4);
    done(&n, out);
}

/* OneHot: float indices are truncated to int64 (1.7 -> 1, -1.2 -> -1 -> depth
 * - 1), out of range gives all off; depth 3.9 reads as 3. */
static void test_one_hot(void)
{
    float ix[] = {1.7f, -1.2f, 3.0f, 0.0f, -3.0f, -4.0f};
    double depth = 3.9;
    int8_t vals[] = {-5, 9};
    bd_err e = {0};
    bd_tensor out[1] = {0};
    bd_tensor in[3] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){2, 3}, ix), {.dtype = BRAID_DTYPE_DOUBLE, .rank = 0, .data = &depth},
                       tensor(BRAID_DTYPE_INT8, 1, (int64_t[]){2}, vals)};
    int hot[] = {1, 2, -1, 0, 0, -1}; /* the class of each index, -1 none */
    for (int axis = -3; axis < 3; axis++) {
        int a = axis < 0 ? axis + 3 : axis;
        bd_attr at = attr_i("axis", axis);
        bd_node n = op_node(BD_OP_OneHot, 11, 3, 1, &at, 1);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT8);
        CHECK_EQ_INT(out[0].dims[a], 3);
        int ok = 1;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int c = 0; c < 3; c++) {
                    int co[3], q = 0;
                    for (int d = 0; d < 3; d++) co[d] = d == a ? c : q++ == 0 ? i : j;
                    int8_t v = ((int8_t *)out[0].data)[(co[0] * out[0].dims[1] + co[1]) * out[0].dims[2] + co[2]];
                    ok &= v == (hot[i * 3 + j] == c ? 9 : -5);
                }
        CHECK(ok);
        done(&n, out);
    }
    /* bfloat16 values, int64 indices, scalar input (output 1-D) */
    uint16_t bv[] = {0, 0x3f80};
    int64_t one = -2, d4 = 4;
    bd_tensor in2[3] = {{.dtype = BRAID_DTYPE_INT64, .rank = 0, .data = &one}, ints1(&d4, 1),
                        tensor(BRAID_DTYPE_BFLOAT16, 1, (int64_t[]){2}, bv)};
    bd_node n = op_node(BD_OP_OneHot, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    uint16_t want[] = {0, 0, 0x3f80, 0};
    CHECK_EQ_INT(out[0].rank, 1);
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);
    /* errors: negative depth, values of 3, depth unknown at plan time */
    d4 = -1;
    n = op_node(BD_OP_OneHot, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    done(&n, out);
    d4 = 4;
    in2[2].dims[0] = 3;
    n = op_node(BD_OP_OneHot, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in2[2].dims[0] = 2;
    in2[1].data = NULL;
    n = op_node(BD_OP_OneHot, 11, 3, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "'depth'");
    done(&n, out);
}

/* Trilu on 3 batches of 4x5 int32 for k in -6..6 and the int64 extremes,
 * upper and lower, against keep(i, j) = upper ? j - i >= k : j - i <= k. */
static void test_trilu(void)
{
    int32_t x[60];
    for (int i = 0; i < 60; i++) x[i] = i + 1;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t ks[] = {-6, -3, -1, 0, 1, 2, 4, 6, INT64_MAX, INT64_MIN};
    for (int upper = 0; upper < 2; upper++)
        for (int t = 0; t < 10; t++) {
            int64_t kv = ks[t];
            bd_attr at = attr_i("upper", upper);
            bd_tensor in[2] = {tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){3, 4, 5}, x), {.dtype = BRAID_DTYPE_INT64, .rank = 0, .data = &kv}};
            bd_node n = op_node(BD_OP_Trilu, 14, 2, 1, &at, 1);
            CHECK(run_both(&n, in, out, &e));
            int ok = 1;
            for (int b = 0; b < 3; b++)
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 5; j++) {
                        double d = (double)j - i;
                        int keep = upper ? d >= (double)kv : d <= (double)kv;
                        ok &= ((int32_t *)out[0].data)[(b * 4 + i) * 5 + j] == (keep ? x[(b * 4 + i) * 5 + j] : 0);
                    }
            CHECK(ok);
            done(&n, out);
        }
    /* no k: upper keeps j >= i (float64 data) */
    double m[4] = {1, 2, 3, 4}, want[4] = {1, 2, 0, 4};
    bd_tensor in[1] = {tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 2}, m)};
    bd_node n = op_node(BD_OP_Trilu, 14, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);
    /* an empty matrix and a rank-1 input */
    in[0].dims[1] = 0;
    n = op_node(BD_OP_Trilu, 14, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    done(&n, out);
    in[0].rank = 1;
    n = op_node(BD_OP_Trilu, 14, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

/* EyeLike: 3x5 with k from -4 to 6 and the extremes; dtype attribute; the
 * input's own dtype (bool, float16). */
static void test_eye_like(void)
{
    bd_err e = {0};
    bd_tensor out[1] = {0};
    int64_t ks[] = {-4, -2, 0, 1, 4, 5, 6, INT64_MAX, INT64_MIN};
    for (int t = 0; t < 9; t++) {
        bd_attr at[2] = {attr_i("k", ks[t]), attr_i("dtype", BRAID_DTYPE_INT32)};
        bd_tensor in[1] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {3, 5}}};
        bd_node n = op_node(BD_OP_EyeLike, 22, 1, 1, at, 2);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT32);
        int ok = 1;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 5; j++) ok &= ((int32_t *)out[0].data)[i * 5 + j] == ((double)j - i == (double)ks[t]);
        CHECK(ok);
        done(&n, out);
    }
    bd_tensor in[1] = {{.dtype = BRAID_DTYPE_FLOAT16, .rank = 2, .dims = {2, 2}}};
    bd_node n = op_node(BD_OP_EyeLike, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    uint16_t want[] = {0x3c00, 0, 0, 0x3c00};
    CHECK(memcmp(out[0].data, want, sizeof want) == 0);
    done(&n, out);
    in[0].dtype = BRAID_DTYPE_BOOL;
    n = op_node(BD_OP_EyeLike, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    uint8_t wb[] = {1, 0, 0, 1};
    CHECK(memcmp(out[0].data, wb, 4) == 0);
    done(&n, out);
    /* rank 3, a float8 target */
    in[0].rank = 3;
    n = op_node(BD_OP_EyeLike, 22, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
    in[0].rank = 2;
    bd_attr f8 = attr_i("dtype", BRAID_DTYPE_FLOAT8E4M3FN);
    n = op_node(BD_OP_EyeLike, 22, 1, 1, &f8, 1);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&n, out);
}

/* ReverseSequence: the spec's two examples, then a 3-D case with an inner
 * dim (batch axis 0), lengths 0 and full, and a length beyond the time axis. */
static void test_reverse_sequence(void)
{
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)i;
    bd_err e = {0};
    bd_tensor out[1] = {0};
    /* example 1: input[t][b] = 4 * b + t, time_axis 0, batch_axis 1 */
    float x1[16], want1[] = {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15};
    for (int t = 0; t < 4; t++)
        for (int b = 0; b < 4; b++) x1[t * 4 + b] = (float)(4 * b + t);
    int64_t l1[] = {4, 3, 2, 1};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){4, 4}, x1), ints1(l1, 4)};
    bd_node n = op_node(BD_OP_ReverseSequence, 10, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want1, sizeof want1) == 0);
    done(&n, out);
    /* example 2: time_axis 1, batch_axis 0 */
    float want2[] = {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12};
    int64_t l2[] = {1, 2, 3, 4};
    bd_attr at[2] = {attr_i("time_axis", 1), attr_i("batch_axis", 0)};
    bd_tensor in2[2] = {tensor(BRAID_DTYPE_FLOAT, 2, (int64_t[]){4, 4}, x), ints1(l2, 4)};
    n = op_node(BD_OP_ReverseSequence, 10, 2, 1, at, 2);
    CHECK_EQ_INT(run(&n, in2, out, &e), BRAID_OK);
    CHECK(memcmp(out[0].data, want2, sizeof want2) == 0);
    done(&n, out);
    /* 2 batches x 4 steps x 2 (uint16): lengths 0 and 4 */
    uint16_t x3[16];
    for (int i = 0; i < 16; i++) x3[i] = (uint16_t)i;
    int64_t l3[] = {0, 4};
    bd_tensor in3[2] = {tensor(BRAID_DTYPE_UINT16, 3, (int64_t[]){2, 4, 2}, x3), ints1(l3, 2)};
    n = op_node(BD_OP_ReverseSequence, 10, 2, 1, at, 2);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_OK);
    uint16_t want3[] = {0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 12, 13, 10, 11, 8, 9};
    CHECK(memcmp(out[0].data, want3, sizeof want3) == 0);
    done(&n, out);
    /* errors: a length beyond the time axis, equal axes, lengths of the wrong size */
    l3[1] = 5;
    n = op_node(BD_OP_ReverseSequence, 10, 2, 1, at, 2);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "sequence_lens[1] = 5");
    done(&n, out);
    bd_attr same[2] = {attr_i("time_axis", 1), attr_i("batch_axis", 1)};
    n = op_node(BD_OP_ReverseSequence, 10, 2, 1, same, 2);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&n, out);
    in3[1].dims[0] = 3;
    n = op_node(BD_OP_ReverseSequence, 10, 2, 1, at, 2);
    CHECK_EQ_INT(run(&n, in3, out, &e), BRAID_ERR_SHAPE);
    done(&n, out);
}

int main(void)
{
    test_gather_elements();
    test_gather_nd();
    test_one_hot();
    test_trilu();
    test_eye_like();
    test_reverse_sequence();
    return check_done();
}
