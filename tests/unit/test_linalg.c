/* test_linalg.c: Einsum (ellipsis with broadcast batch dims, diagonals,
 * size-1 broadcasting, implicit output in ASCII order with upper case first,
 * three operands, int8 wrapping, float16 rounded once, empty dims), Det
 * (batched, singular exactly 0, a permutation -1), FusedMatMul (transBatch
 * and trans views, alpha) and FusedGemm (activations), with the expected
 * numbers pasted from numpy (the command is in each comment) or worked by
 * hand; error codes and messages of bad equations. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include "util/dtype.h"

static bd_attr eq_attr(const char *eq) { return (bd_attr){.name = "equation", .type = BD_ATTR_STRING, .s = (char *)eq}; }

/* Runs Einsum(eq) over n double inputs; checks the output against want (count values). */
static void check_einsum(const char *eq, int n, bd_tensor *in, const double *want, int count, int rank)
{
    bd_attr a = eq_attr(eq);
    int ins[4] = {0, 1, 2, 3}, outs[1] = {5};
    bd_node nd = op_node(BD_OP_Einsum, 12, n, 1, &a, 1);
    nd.in = ins, nd.out = outs;
    bd_tensor out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&nd, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, rank);
    CHECK_EQ_INT(bd_numel(&out[0]), count);
    int ok = bd_numel(&out[0]) == count;
    for (int i = 0; ok && i < count; i++) ok = fabs(bd_get_f64(&out[0], i) - want[i]) <= 1e-12 * (1 + fabs(want[i]));
    if (!ok) fprintf(stderr, "einsum '%s' differs from numpy\n", eq);
    CHECK(ok);
    done(&nd, out);
}

static void test_einsum(void)
{
    /* x = np.arange(12.).reshape(2,2,3) - 5; y = np.arange(6.).reshape(3,2) * 0.5
     * np.einsum('...ij,jk->...ik', x, y) */
    double x[12], y[6];
    for (int i = 0; i < 12; i++) x[i] = i - 5;
    for (int i = 0; i < 6; i++) y[i] = i * 0.5;
    bd_tensor in[3] = {tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){2, 2, 3}, x), tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){3, 2}, y)};
    check_einsum("...ij,jk->...ik", 2, in, (double[]){-10, -16, -1, -2.5, 8, 11, 17, 24.5}, 8, 3);
    /* d = np.arange(18.).reshape(2,3,3): np.einsum('bii->b', d), np.einsum('...ii->...i', d) */
    double d[18];
    for (int i = 0; i < 18; i++) d[i] = i;
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){2, 3, 3}, d);
    check_einsum("bii->b", 1, in, (double[]){12, 39}, 2, 1);
    check_einsum(" ... i i -> ... i ", 1, in, (double[]){0, 4, 8, 9, 13, 17}, 6, 2);
    /* a size-1 dim broadcast: np.einsum('ij,ij->ij', [[1,2],[3,4]], [[10],[20]]) */
    double a2[4] = {1, 2, 3, 4}, b2[2] = {10, 20};
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 2}, a2);
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 1}, b2);
    check_einsum("ij,ij->ij", 2, in, (double[]){10, 20, 60, 80}, 4, 2);
    /* implicit output: np.einsum('ij,jk', np.arange(6.).reshape(2,3), np.arange(12.).reshape(3,4)) */
    double m1[6], m2[12];
    for (int i = 0; i < 6; i++) m1[i] = i;
    for (int i = 0; i < 12; i++) m2[i] = i;
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 3}, m1);
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){3, 4}, m2);
    check_einsum("ij,jk", 2, in, (double[]){20, 23, 26, 29, 56, 68, 80, 92}, 8, 2);
    /* 'Ba,aB->' (upper and lower case differ): np.einsum(...) = 50 */
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){3, 2}, m2);
    check_einsum("Ba,aB->", 2, in, (double[]){50}, 1, 0);
    /* implicit order: 'ba' -> 'ab' is the transpose (numpy: np.einsum('ba', m).shape == (3, 2)) */
    check_einsum("ba", 1, in, (double[]){0, 3, 1, 4, 2, 5}, 6, 2);
    /* int8 wraps as numpy: np.einsum('i,i,i', int8([50,100,-106]), int8([2,2,2]), int8([1,1,1])) = 88 */
    int8_t i1[3] = {50, 100, -106}, i2[3] = {2, 2, 2}, i3[3] = {1, 1, 1};
    bd_tensor ii[3] = {tensor(BRAID_DTYPE_INT8, 1, (int64_t[]){3}, i1), tensor(BRAID_DTYPE_INT8, 1, (int64_t[]){3}, i2),
                       tensor(BRAID_DTYPE_INT8, 1, (int64_t[]){3}, i3)};
    check_einsum("i,i,i", 3, ii, (double[]){88}, 1, 0);
    /* an empty contraction dim gives zeros: (2, 0) x (0, 3) */
    double z = 0;
    in[0] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 0}, &z);
    in[1] = tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){0, 3}, &z);
    check_einsum("ij,jk->ik", 2, in, (double[]){0, 0, 0, 0, 0, 0}, 6, 2);
    /* float16: the float sum 0.1 * 3 terms, rounded once (by hand: float16(0.1) = 0.0999755859375) */
    uint16_t h[3], hw;
    for (int i = 0; i < 3; i++) h[i] = bd_float_to_half(0.1f);
    float hs = 3.0f * bd_half_to_float(h[0]);
    hw = bd_float_to_half(hs);
    bd_tensor hin[1] = {tensor(BRAID_DTYPE_FLOAT16, 1, (int64_t[]){3}, h)};
    check_einsum("i->", 1, hin, (double[]){bd_half_to_float(hw)}, 1, 0);
}

static void test_einsum_errors(void)
{
    static const struct { const char *eq; int code; const char *msg; } bad[] = {
        {"ij,jk->ik", BRAID_ERR_INVALID_MODEL, "2 operands but the node 1 inputs"},
        {"i.j->i", BRAID_ERR_INVALID_MODEL, "stray '.'"},
        {"i1->i", BRAID_ERR_INVALID_MODEL, "'1' is not a letter"},
        {"ij->ii", BRAID_ERR_INVALID_MODEL, "repeats a letter in its output"},
        {"ij->k", BRAID_ERR_INVALID_MODEL, "output letter 'k' appears in no operand"},
        {"ijk->i", BRAID_ERR_SHAPE, "term 0's 3 letters do not match"},
        {"...i->i", BRAID_ERR_INVALID_MODEL, "the output has no '...'"},
        {"ii->i", BRAID_ERR_SHAPE, "repeats a letter over dims of sizes"},
        {"i->i->i", BRAID_ERR_INVALID_MODEL, "two '->'"},
        {"", BRAID_ERR_INVALID_MODEL, "equation is empty"},
    };
    double x[6] = {0};
    for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
        bd_attr a = eq_attr(bad[t].eq);
        bd_node nd = op_node(BD_OP_Einsum, 12, 1, 1, &a, 1);
        int ins[1] = {0}, outs[1] = {5};
        nd.in = ins, nd.out = outs;
        bd_tensor in[1] = {tensor(BRAID_DTYPE_DOUBLE, 2, (int64_t[]){2, 3}, x)}, out[1] = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&nd, in, out, &e), bad[t].code);
        CHECK_CONTAINS(e.msg, bad[t].msg);
        done(&nd, out);
    }
}

static void test_det(void)
{
    /* np.linalg.det([[[2,1,0],[1,3,1],[0,1,4]], [[1,2,3],[2,4,6],[1,1,1]], [[0,1,0],[1,0,0],[0,0,1]]])
     * = [18, 0, -1]: the second is singular (row 2 = 2 row 1) and must be exactly 0 */
    float x[27] = {2, 1, 0, 1, 3, 1, 0, 1, 4, 1, 2, 3, 2, 4, 6, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1};
    bd_tensor in[1] = {tensor(F32, 3, (int64_t[]){3, 3, 3}, x)}, out[1] = {0};
    bd_node nd = op_node(BD_OP_Det, 22, 1, 1, NULL, 0);
    bd_err e = {0};
    for (int th = 1; th <= 4; th += 3) {
        g_threads = th;
        CHECK_EQ_INT(run(&nd, in, out, &e), BRAID_OK);
        const float *y = out[0].data;
        CHECK_EQ_INT(out[0].rank, 1);
        CHECK_NEAR(y[0], 18.0, 1e-5, 0);
        CHECK(y[1] == 0.0f);
        CHECK(y[2] == -1.0f);
        done(&nd, out);
    }
    g_threads = 1;
    /* a 2-D input gives a scalar; bfloat16 rounds once: det([[3, 1], [1, 3]]) = 8 */
    uint16_t b[4];
    float bv[4] = {3, 1, 1, 3};
    for (int i = 0; i < 4; i++) b[i] = bd_float_to_bf16(bv[i]);
    in[0] = tensor(BRAID_DTYPE_BFLOAT16, 2, (int64_t[]){2, 2}, b);
    CHECK_EQ_INT(run(&nd, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 0);
    CHECK(bd_bf16_to_float(((uint16_t *)out[0].data)[0]) == 8.0f);
    done(&nd, out);
    /* not square; integer dtype */
    in[0] = tensor(F32, 2, (int64_t[]){2, 3}, x);
    CHECK_EQ_INT(run(&nd, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "square matrices");
    done(&nd, out);
    int32_t xi[4] = {0};
    in[0] = tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){2, 2}, xi);
    CHECK_EQ_INT(run(&nd, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&nd, out);
}

static void test_fused(void)
{
    /* FusedMatMul transBatchA, alpha 0.5: A stored (2, 3, 4) reads as logical
     * (3, 2, 4) (the permutation [1, 0, 2] moves dim 0 to just before the
     * last); B (4, 1): y[b][i][0] = 0.5 sum_k A[i][b][k] B[k] (onnxruntime
     * 1.31.1 agrees on every combination: tests/python/test_contrib_attention.py) */
    float a[24], bm[4] = {1, -1, 2, 0.5f};
    for (int i = 0; i < 24; i++) a[i] = (float)i;
    tnode t;
    tnode_init(&t, BD_OP_MS_FusedMatMul, 1, 2, 1);
    t.n.domain = "com.microsoft";
    attr_int(&t, "transBatchA", 1);
    attr_float(&t, "alpha", 0.5f);
    bd_tensor in[3] = {tensor(F32, 3, (int64_t[]){2, 3, 4}, a), tensor(F32, 2, (int64_t[]){4, 1}, bm)}, out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK(out[0].dims[0] == 3 && out[0].dims[1] == 2 && out[0].dims[2] == 1);
    int ok = 1;
    for (int bb = 0; bb < 3; bb++)
        for (int i = 0; i < 2; i++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += a[(i * 3 + bb) * 4 + k] * bm[k];
            ok &= ((float *)out[0].data)[bb * 2 + i] == (float)(0.5 * s);
        }
    CHECK(ok);
    done(&t.n, out);
    /* FusedGemm with LeakyRelu (alpha 0.1) and HardSigmoid: y = act(A B + C) by hand */
    float ga[2] = {1, -2}, gb[2] = {3, 4}, gc[1] = {-1}; /* (2,1) x (1,2)?: A (1, 2), B (2, 1) -> 3 - 8 - 1 = -6 */
    tnode_init(&t, BD_OP_MS_FusedGemm, 1, 3, 1);
    t.n.domain = "com.microsoft";
    attr_str(&t, "activation", "LeakyRelu");
    attr_float(&t, "activation_alpha", 0.1f);
    in[0] = tensor(F32, 2, (int64_t[]){1, 2}, ga);
    in[1] = tensor(F32, 2, (int64_t[]){2, 1}, gb);
    in[2] = tensor(F32, 1, (int64_t[]){1}, gc);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_NEAR(((float *)out[0].data)[0], -0.6, 1e-6, 0);
    done(&t.n, out);
    tnode_init(&t, BD_OP_MS_FusedGemm, 1, 3, 1);
    t.n.domain = "com.microsoft";
    attr_str(&t, "activation", "HardSigmoid");
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK(((float *)out[0].data)[0] == 0.0f); /* 0.2 * -6 + 0.5 < 0 */
    done(&t.n, out);
    tnode_init(&t, BD_OP_MS_FusedGemm, 1, 3, 1);
    t.n.domain = "com.microsoft";
    attr_str(&t, "activation", "Gelu");
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "activation 'Gelu'");
    done(&t.n, out);
}

int main(void)
{
    test_einsum();
    test_einsum_errors();
    test_det();
    test_fused();
    return check_done();
}
