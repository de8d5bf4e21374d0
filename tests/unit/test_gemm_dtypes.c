/* test_gemm_dtypes.c: MatMul and Gemm on the dtypes beyond float32
 * (src/backend/cpu/ops/gemm_dtypes.c): double against a double loop in the
 * test, float16/bfloat16 against the float product rounded once, the
 * unsigned and signed integers exactly (wrapping at 2^32 / 2^64), integer
 * Gemm's alpha/beta in double with truncation (onnx's reference: numpy
 * float64 then astype), broadcast batches, K = 0, 1 and 4 threads. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "util/dtype.h"

/* Reference: y[b] = a[b % ba] b[b % bb] in double over (batch, m, k) x (batch, k, n). */
static void ref_mm(const double *a, const double *b, double *y, int nb, int ba, int bb, int m, int k, int n)
{
    for (int t = 0; t < nb; t++)
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int l = 0; l < k; l++) s += a[(t % ba) * m * k + i * k + l] * b[(t % bb) * k * n + l * n + j];
                y[(t * m + i) * n + j] = s;
            }
}

static void test_matmul_double(void)
{
    bd_err e = {0};
    /* (3, 4, 5) x (1, 5, 6): B shared; (3, 4, 5) x (3, 5, 6): per batch */
    enum { NB = 3, M = 4, K = 5, N = 6 };
    double a[NB * M * K], b[NB * K * N], want[NB * M * N];
    for (int i = 0; i < NB * M * K; i++) a[i] = (double)((i * 37) % 11) / 7.0 - 0.5;
    for (int i = 0; i < NB * K * N; i++) b[i] = (double)((i * 53) % 13) / 3.0 - 2.0;
    for (int shared = 0; shared <= 1; shared++)
        for (int th = 1; th <= 4; th += 3) {
            g_threads = th;
            bd_tensor in[2] = {tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){NB, M, K}, a),
                               tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){shared ? 1 : NB, K, N}, b)};
            bd_tensor out[1] = {0};
            bd_node n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
            CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
            CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_DOUBLE);
            ref_mm(a, b, want, NB, NB, shared ? 1 : NB, M, K, N);
            double worst = 0;
            for (int i = 0; i < NB * M * N; i++) worst = fmax(worst, fabs(((double *)out[0].data)[i] - want[i]));
            CHECK(worst < 1e-12); /* double accumulation: far below float's 1e-7 */
            done(&n, out);
        }
    g_threads = 1;
    /* batch dims that broadcast in between: (2, 1, 2, 3) x (1, 3, 3, 2) -> (2, 3, 2, 2) */
    double a2[2 * 2 * 3], b2[3 * 3 * 2];
    for (int i = 0; i < 12; i++) a2[i] = i - 5.5;
    for (int i = 0; i < 18; i++) b2[i] = 0.25 * i;
    bd_tensor in[2] = {tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){2, 1, 2, 3}, a2),
                       tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){1, 3, 3, 2}, b2)};
    bd_tensor out[1] = {0};
    bd_node n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 4);
    int ok = 1;
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int l = 0; l < 3; l++) s += a2[p * 6 + i * 3 + l] * b2[q * 6 + l * 2 + j];
                    ok &= ((double *)out[0].data)[((p * 3 + q) * 2 + i) * 2 + j] == s;
                }
    CHECK(ok);
    done(&n, out);
}

static void test_matmul_half(void)
{
    bd_err e = {0};
    /* float16 and bfloat16 (2, 3) x (3, 2): the float product of the decoded
     * inputs, rounded once. 1 + 2^-11 is not a float16: the inputs below are
     * exact in both types; the product 0.1 * 3 rounds differently in each. */
    float av[6] = {0.1f, 1.0f, -2.0f, 0.5f, 3.0f, 0.25f}, bv[6] = {3.0f, 1.0f, -1.5f, 2.0f, 0.125f, -4.0f};
    for (int dt = BRAID_DTYPE_FLOAT16; dt; dt = dt == BRAID_DTYPE_FLOAT16 ? BRAID_DTYPE_BFLOAT16 : 0) {
        uint16_t a[6], b[6];
        float fa[6], fb[6];
        for (int i = 0; i < 6; i++) {
            a[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(av[i]) : bd_float_to_bf16(av[i]);
            b[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(bv[i]) : bd_float_to_bf16(bv[i]);
            fa[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(a[i]) : bd_bf16_to_float(a[i]);
            fb[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(b[i]) : bd_bf16_to_float(b[i]);
        }
        bd_tensor in[2] = {tensor(dt, 2, (int64_t[]){2, 3}, a), tensor(dt, 2, (int64_t[]){3, 2}, b)};
        bd_tensor out[1] = {0};
        bd_node n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dtype, dt);
        int ok = 1;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                float s = 0;
                for (int l = 0; l < 3; l++) s += fa[i * 3 + l] * fb[l * 2 + j];
                uint16_t want = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(s) : bd_float_to_bf16(s);
                ok &= ((uint16_t *)out[0].data)[i * 2 + j] == want;
            }
        CHECK(ok);
        done(&n, out);
    }
}

static void test_matmul_ints(void)
{
    bd_err e = {0};
    /* uint32 wraps at 2^32: 0xffffffff * 2 + 1 * 3 = 0x1_ffff_fffe + 3 -> 1 */
    uint32_t a[2] = {0xffffffffu, 1}, b[2] = {2, 3};
    bd_tensor in[2] = {tensor(BRAID_DTYPE_UINT32, 1, (int64_t[]){2}, a), tensor(BRAID_DTYPE_UINT32, 1, (int64_t[]){2}, b)};
    bd_tensor out[1] = {0};
    bd_node n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 0);
    CHECK_EQ_INT(((uint32_t *)out[0].data)[0], 1);
    done(&n, out);
    /* uint64 beyond double's 2^53: (2^60 + 1) * 3 exactly */
    uint64_t a6[1] = {(1ull << 60) + 1}, b6[1] = {3};
    in[0] = tensor(BRAID_DTYPE_UINT64, 2, (int64_t[]){1, 1}, a6);
    in[1] = tensor(BRAID_DTYPE_UINT64, 2, (int64_t[]){1, 1}, b6);
    n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    CHECK(((uint64_t *)out[0].data)[0] == 3 * ((1ull << 60) + 1));
    done(&n, out);
    /* K = 0: (2, 0) x (0, 3) is zeros */
    double z;
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 0}, &z);
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){0, 3}, &z);
    n = op_node(BD_OP_MatMul, 13, 2, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, in, out, &e), BRAID_OK);
    int ok = 1;
    for (int i = 0; i < 6; i++) ok &= ((double *)out[0].data)[i] == 0.0;
    CHECK(ok);
    done(&n, out);
}

static void test_gemm(void)
{
    bd_err e = {0};
    /* int64 Gemm transA, C (2,) broadcast over rows, alpha = beta = 1: exact
     * A^T = [[1, 2], [3, 4]] (A = [[1, 3], [2, 4]]), B = [[5, 6], [7, 8]]:
     * A^T B = [[19, 22], [43, 50]]; + C [1e15, -1] */
    int64_t a[4] = {1, 3, 2, 4}, b[4] = {5, 6, 7, 8}, c[2] = {1000000000000000LL, -1};
    tnode t;
    tnode_init(&t, BD_OP_Gemm, 13, 3, 1);
    attr_int(&t, "transA", 1);
    bd_tensor in[3] = {tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){2, 2}, a), tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){2, 2}, b),
                       tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){2}, c)};
    bd_tensor out[1] = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    const int64_t *y = out[0].data;
    CHECK(y[0] == 19 + 1000000000000000LL && y[1] == 21 && y[2] == 43 + 1000000000000000LL && y[3] == 49);
    done(&t.n, out);
    /* int32, alpha 0.5 and beta -1.5: trunc(0.5 * ab - 1.5 * c) as numpy's float64 -> int32
     * ab = [[19, 22], [43, 50]] (no transposes here: A = [[1,2],[3,4]]), c = 3 (scalar)
     * -> trunc(9.5 - 4.5) = 5, trunc(11 - 4.5) = 6, trunc(21.5 - 4.5) = 17, trunc(25 - 4.5) = 20 */
    int32_t a3[4] = {1, 2, 3, 4}, b3[4] = {5, 6, 7, 8}, c3[1] = {3};
    tnode_init(&t, BD_OP_Gemm, 13, 3, 1);
    attr_float(&t, "alpha", 0.5f);
    attr_float(&t, "beta", -1.5f);
    in[0] = tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){2, 2}, a3);
    in[1] = tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){2, 2}, b3);
    in[2] = tensor(BRAID_DTYPE_INT32, 0, NULL, c3);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    const int32_t *y3 = out[0].data;
    CHECK(y3[0] == 5 && y3[1] == 6 && y3[2] == 17 && y3[3] == 20);
    done(&t.n, out);
    /* float16 transB with C (2, 1) broadcast over columns, alpha 2, beta 0.5:
     * A = [[1, 2]], B^T: B = [[3, 4], [5, 6], [7, 8]] (3, 2) -> AB^T = [11, 17, 23];
     * y = 2 * that + 0.5 * [10] = [27, 39, 51] (one row: C (1, 1)) */
    uint16_t ah[2], bh[6], ch[1] = {bd_float_to_half(10.0f)};
    for (int i = 0; i < 2; i++) ah[i] = bd_float_to_half((float)(i + 1));
    for (int i = 0; i < 6; i++) bh[i] = bd_float_to_half((float)(i + 3));
    tnode_init(&t, BD_OP_Gemm, 13, 3, 1);
    attr_int(&t, "transB", 1);
    attr_float(&t, "alpha", 2.0f);
    attr_float(&t, "beta", 0.5f);
    in[0] = tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){1, 2}, ah);
    in[1] = tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){3, 2}, bh);
    in[2] = tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){1, 1}, ch);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT16);
    const uint16_t *yh = out[0].data;
    CHECK(bd_half_to_float(yh[0]) == 27.0f && bd_half_to_float(yh[1]) == 39.0f && bd_half_to_float(yh[2]) == 51.0f);
    done(&t.n, out);
    /* double with K = 0 and C: Y = beta C */
    double z = 0, cd[2] = {1.5, -2.0};
    tnode_init(&t, BD_OP_Gemm, 13, 3, 1);
    attr_float(&t, "beta", 2.0f);
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){1, 0}, &z);
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){0, 2}, &z);
    in[2] = tensor(BRAID_DTYPE_DOUBLE, 1, (int64_t[]){2}, cd);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK(((double *)out[0].data)[0] == 3.0 && ((double *)out[0].data)[1] == -4.0);
    done(&t.n, out);
}

int main(void)
{
    test_matmul_double();
    test_matmul_half();
    test_matmul_ints();
    test_gemm();
    return check_done();
}
