/* test_gemm.c: the gemm family (Gemm, MatMul) on hand-built nodes: values
 * computed by hand, transposes and C broadcasting, MatMul's 1-D promotion and
 * batch broadcasting against a naive loop, integer MatMul, and the errors. */
#include <stdlib.h>

#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

/* ---- tests -------------------------------------------------------------------- */

/* A = [[1,2,3],[4,5,6]], B = [[1,0],[0,1],[1,1]]: AB = [[4,5],[10,11]];
 * alpha 2, beta 0.5, C = [10, 20] (one value per column):
 * Y = [[8+5, 10+10], [20+5, 22+10]]. */
static void test_gemm_by_hand(void)
{
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[2] = {10, 20};
    int64_t ad[2] = {2, 3}, bd[2] = {3, 2}, cd[1] = {2};
    bd_tensor in[3] = {tensor(1, 2, ad, a), tensor(1, 2, bd, b), tensor(1, 1, cd, c)}, out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_Gemm, 17, 3, 1);
    attr_float(&t, "alpha", 2.0f);
    attr_float(&t, "beta", 0.5f);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 2);
    const float want[4] = {13, 20, 25, 32};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], want[i], 1e-6, 0);
    done(&t.n, &out);

    /* No C: Y = AB. */
    tnode_init(&t, BD_OP_Gemm, 17, 2, 1);
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    const float want2[4] = {4, 5, 10, 11};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], want2[i], 1e-6, 0);
    done(&t.n, &out);
}

/* transA, transB and each shape of C against a naive loop. */
static void test_gemm_transposes(void)
{
    const int64_t m = 5, n = 7, k = 3;
    const int64_t cshapes[4][3] = {{0}, {1, 1}, {2, m, 1}, {2, m, n}}; /* rank, dims */
    unsigned seed = 5;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int ci = 0; ci < 4; ci++) {
                int64_t ad[2] = {ta ? k : m, ta ? m : k}, bd[2] = {tb ? n : k, tb ? k : n};
                int crank = (int)cshapes[ci][0];
                int64_t cn = crank == 0 ? 1 : crank == 1 ? cshapes[ci][1] : cshapes[ci][1] * cshapes[ci][2];
                float *a = randn(m * k, &seed), *b = randn(k * n, &seed), *c = randn(cn, &seed);
                bd_tensor in[3] = {tensor(1, 2, ad, a), tensor(1, 2, bd, b),
                                   tensor(1, crank, &cshapes[ci][1], c)},
                          out = {0};
                bd_err e = {0};
                tnode t;
                tnode_init(&t, BD_OP_Gemm, 17, 3, 1);
                attr_int(&t, "transA", ta);
                attr_int(&t, "transB", tb);
                attr_float(&t, "beta", 0.25f);
                CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
                int bad = 0;
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double acc = 0;
                        for (int64_t l = 0; l < k; l++)
                            acc += (double)a[ta ? l * m + i : i * k + l] *
                                   b[tb ? j * k + l : l * n + j];
                        int64_t cidx = crank == 0 ? 0 : crank == 1 ? 0 : cshapes[ci][2] == 1 ? i : i * n + j;
                        acc += 0.25 * c[cidx];
                        bad += !(fabs(((float *)out.data)[i * n + j] - acc) <= 1e-5);
                    }
                if (bad) fprintf(stderr, "transA %d transB %d C rank %d: %d values differ\n", ta, tb, crank, bad);
                CHECK_EQ_INT(bad, 0);
                done(&t.n, &out);
                free(a), free(b), free(c);
            }
}

/* MatMul shapes (numpy rules) and values against a naive batched loop. */
static void test_matmul_shapes(void)
{
    struct {
        int ra, rb;
        int64_t a[4], b[4];
        int ry;
        int64_t y[4];
    } cases[] = {
        {2, 2, {3, 4}, {4, 5}, 2, {3, 5}},
        {1, 1, {4}, {4}, 0, {0}},
        {1, 3, {4}, {2, 4, 5}, 2, {2, 5}},
        {3, 1, {2, 3, 4}, {4}, 2, {2, 3}},
        {4, 3, {2, 1, 3, 4}, {5, 4, 2}, 4, {2, 5, 3, 2}},
        {3, 2, {6, 3, 4}, {4, 2}, 3, {6, 3, 2}}, /* B shared: one GEMM with 18 rows */
        {2, 3, {3, 4}, {2, 4, 5}, 3, {2, 3, 5}},
    };
    unsigned seed = 9;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        __typeof__(cases[0]) *c = &cases[ci];
        bd_tensor in[2] = {tensor(1, c->ra, c->a, NULL), tensor(1, c->rb, c->b, NULL)}, out = {0};
        float *a = randn(bd_numel(&in[0]), &seed), *b = randn(bd_numel(&in[1]), &seed);
        in[0].data = a, in[1].data = b;
        bd_err e = {0};
        tnode t;
        tnode_init(&t, BD_OP_MatMul, 17, 2, 1);
        CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, c->ry);
        for (int i = 0; i < c->ry; i++) CHECK_EQ_INT(out.dims[i], c->y[i]);
        /* Naive: promote to rank 4 (batch0, batch1, M, K) x (batch0, batch1, K, N). */
        int64_t A[4] = {1, 1, 1, 1}, B[4] = {1, 1, 1, 1};
        if (c->ra == 1) A[3] = c->a[0];
        else for (int i = 0; i < c->ra; i++) A[4 - c->ra + i] = c->a[i];
        if (c->rb == 1) B[2] = c->b[0];
        else for (int i = 0; i < c->rb; i++) B[4 - c->rb + i] = c->b[i];
        int64_t b0 = BD_MAX(A[0], B[0]), b1 = BD_MAX(A[1], B[1]), m = A[2], k = A[3], n = B[3];
        int bad = 0;
        for (int64_t i0 = 0; i0 < b0; i0++)
            for (int64_t i1 = 0; i1 < b1; i1++) {
                const float *am = a + ((A[0] > 1 ? i0 : 0) * A[1] + (A[1] > 1 ? i1 : 0)) * m * k;
                const float *bm = b + ((B[0] > 1 ? i0 : 0) * B[1] + (B[1] > 1 ? i1 : 0)) * k * n;
                const float *ym = (float *)out.data + (i0 * b1 + i1) * m * n;
                for (int64_t i = 0; i < m; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double acc = 0;
                        for (int64_t l = 0; l < k; l++) acc += (double)am[i * k + l] * bm[l * n + j];
                        bad += !(fabs(ym[i * n + j] - acc) <= 1e-5);
                    }
            }
        if (bad) fprintf(stderr, "MatMul case %zu: %d values differ\n", ci, bad);
        CHECK_EQ_INT(bad, 0);
        done(&t.n, &out);
        free(a), free(b);
    }
}

/* [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]] in int64 and int32. */
static void test_matmul_int(void)
{
    int64_t a64[4] = {1, 2, 3, 4}, b64[4] = {5, 6, 7, 8};
    int32_t a32[4] = {1, 2, 3, 4}, b32[4] = {5, 6, 7, 8};
    int64_t d[2] = {2, 2};
    const int64_t want[4] = {19, 22, 43, 50};
    bd_tensor in64[2] = {tensor(BRAID_DTYPE_INT64, 2, d, a64), tensor(BRAID_DTYPE_INT64, 2, d, b64)};
    bd_tensor in32[2] = {tensor(BRAID_DTYPE_INT32, 2, d, a32), tensor(BRAID_DTYPE_INT32, 2, d, b32)};
    bd_tensor out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_MatMul, 17, 2, 1);
    CHECK_EQ_INT(run(&t.n, in64, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT64);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], want[i]);
    done(&t.n, &out);
    tnode_init(&t, BD_OP_MatMul, 17, 2, 1);
    CHECK_EQ_INT(run(&t.n, in32, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT32);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], want[i]);
    done(&t.n, &out);
}

static void test_errors(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    tnode t;
    int64_t d23[2] = {2, 3}, d42[2] = {4, 2}, d32[2] = {3, 2}, d22[2] = {2, 2};

    /* Gemm: 3 columns against 4 rows. */
    tnode_init(&t, BD_OP_Gemm, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor in1[2] = {tensor(1, 2, d23, NULL), tensor(1, 2, d42, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in1, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "3 columns against 4 rows");
    bd_free(t.n.params);

    /* Gemm: C (3, 2) does not broadcast to (2, 2). */
    tnode_init(&t, BD_OP_Gemm, 17, 3, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor in2[3] = {tensor(1, 2, d22, NULL), tensor(1, 2, d22, NULL), tensor(1, 2, d32, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in2, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "C has shape 3x2");
    bd_free(t.n.params);

    /* Gemm on a dtype outside its schema (int8) is UNSUPPORTED (the others: test_gemm_dtypes.c). */
    tnode_init(&t, BD_OP_Gemm, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor in3[2] = {tensor(BRAID_DTYPE_INT8, 2, d22, NULL), tensor(BRAID_DTYPE_INT8, 2, d22, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in3, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "int8");
    bd_free(t.n.params);

    /* MatMul: batch dims 2 and 3 do not broadcast. */
    int64_t a[3] = {2, 3, 4}, b[3] = {3, 4, 5};
    tnode_init(&t, BD_OP_MatMul, 17, 2, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor in4[2] = {tensor(1, 3, a, NULL), tensor(1, 3, b, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in4, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "batch dims do not broadcast");
    CHECK_CONTAINS(e.msg, "2x3x4");

    /* MatMul: operands that disagree (DTYPE), a type braid does not run (UNSUPPORTED). */
    bd_tensor in5[2] = {tensor(1, 2, d22, NULL), tensor(BRAID_DTYPE_INT64, 2, d22, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in5, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "A is float32 but B is int64");
    bd_tensor in6[2] = {tensor(BRAID_DTYPE_UINT8, 2, d22, NULL), tensor(BRAID_DTYPE_UINT8, 2, d22, NULL)};
    CHECK_EQ_INT(bd_op_infer(&t.n, in6, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "uint8");
    bd_free(t.n.params);
}

int main(void)
{
    test_gemm_by_hand();
    test_gemm_transposes();
    test_matmul_shapes();
    test_matmul_int();
    test_errors();
    return check_done();
}
