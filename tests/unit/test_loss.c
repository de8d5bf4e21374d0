/* test_loss.c: the loss family on the CPU: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss for every reduction, with and without weights,
 * ignore_index inside and outside the classes, N-d inputs with int32 and
 * int64 targets, the optional log_prob output, all terms ignored (mean 0/0 =
 * NaN), float16/bfloat16 rounded once, and the errors (a target out of range,
 * shapes, dtypes, the reduction attribute); references computed in double
 * from the spec's definition. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

/* The spec's loss in double: x (N, C, D), t (N*D), w (C) or NULL. */
static double ref_loss(const float *x, const int64_t *t, const float *w, int n, int c, int d, int sce, int red,
                       int has_ii, int64_t ii, double *per)
{
    double s = 0, ws = 0;
    for (int b = 0; b < n; b++)
        for (int k = 0; k < d; k++) {
            int64_t tv = t[b * d + k];
            double term = 0, wt = 0;
            if (!(has_ii && tv == ii)) {
                double lse = 0;
                if (sce) {
                    double mx = -INFINITY, e = 0;
                    for (int j = 0; j < c; j++) mx = fmax(mx, x[(b * c + j) * d + k]);
                    for (int j = 0; j < c; j++) e += exp(x[(b * c + j) * d + k] - mx);
                    lse = mx + log(e);
                }
                wt = w ? w[tv] : 1;
                term = -(x[(b * c + tv) * d + k] - lse) * wt;
            }
            if (per) per[b * d + k] = term;
            s += term, ws += wt;
        }
    return red == 2 ? s / ws : s;
}

static const char *const reductions[] = {"none", "sum", "mean"};

/* (2, 4, 3) scores, targets with an ignore_index of 1 or none, weights or none. */
static void test_all_modes(void)
{
    float x[24], w[4] = {0.5f, 2, 1, 0.25f};
    for (int i = 0; i < 24; i++) x[i] = (float)((i * 11) % 13) * 0.3f - 1.7f;
    int64_t t[6] = {0, 3, 1, 2, 1, 3};
    int32_t t32[6];
    for (int i = 0; i < 6; i++) t32[i] = (int32_t)t[i];
    bd_err e = {0};
    for (int sce = 0; sce <= 1; sce++)
        for (int red = 0; red < 3; red++)
            for (int wi = 0; wi <= 1; wi++)
                for (int ii = 0; ii <= 1; ii++) {
                    tnode tn;
                    tnode_init(&tn, sce ? BD_OP_SoftmaxCrossEntropyLoss : BD_OP_NegativeLogLikelihoodLoss,
                               sce ? 13 : 22, wi ? 3 : 2, sce ? 2 : 1);
                    attr_str(&tn, "reduction", reductions[red]);
                    if (ii) attr_int(&tn, "ignore_index", 1);
                    bd_tensor in[3] = {{F32, 3, {2, 4, 3}, x},
                                       {ii ? BRAID_DTYPE_INT32 : BRAID_DTYPE_INT64, 2, {2, 3}, ii ? (void *)t32 : t},
                                       {F32, 1, {4}, w}},
                              out[2] = {{0}};
                    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
                    double per[6];
                    double want = ref_loss(x, t, wi ? w : NULL, 2, 4, 3, sce, red, ii, 1, per);
                    if (red == 0) {
                        CHECK_EQ_INT(out[0].rank, 2);
                        for (int i = 0; i < 6; i++) CHECK_NEAR(((float *)out[0].data)[i], per[i], 1e-6, 1e-6);
                    } else {
                        CHECK_EQ_INT(out[0].rank, 0);
                        CHECK_NEAR(((float *)out[0].data)[0], want, 1e-6, 1e-6);
                    }
                    if (sce) { /* log_prob: x - logsumexp over C */
                        CHECK_EQ_INT(out[1].rank, 3);
                        for (int b = 0; b < 2; b++)
                            for (int k = 0; k < 3; k++) {
                                double mx = -INFINITY, s = 0;
                                for (int j = 0; j < 4; j++) mx = fmax(mx, x[(b * 4 + j) * 3 + k]);
                                for (int j = 0; j < 4; j++) s += exp(x[(b * 4 + j) * 3 + k] - mx);
                                for (int j = 0; j < 4; j++) {
                                    int at = (b * 4 + j) * 3 + k;
                                    CHECK_NEAR(((float *)out[1].data)[at], x[at] - mx - log(s), 1e-6, 1e-6);
                                }
                            }
                    }
                    done(&tn.n, out);
                }
}

static void test_edges(void)
{
    float x[6] = {-1, -2, -3, -4, -5, -6}; /* (2, 3) */
    bd_err e = {0};
    bd_tensor out[2] = {{0}};
    /* every target ignored: sum 0, mean 0 / 0 = NaN; an ignore_index outside
     * [0, C) (here -100) is no error */
    int64_t t[2] = {-100, -100};
    for (int red = 1; red <= 2; red++) {
        tnode tn;
        tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 2, 1);
        attr_str(&tn, "reduction", reductions[red]);
        attr_int(&tn, "ignore_index", -100);
        bd_tensor in[2] = {{F32, 2, {2, 3}, x}, {BRAID_DTYPE_INT64, 1, {2}, t}};
        CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
        if (red == 1) CHECK(((float *)out[0].data)[0] == 0);
        else CHECK(isnan(((float *)out[0].data)[0]));
        done(&tn.n, out);
    }
    /* a target out of range that is not ignored */
    int64_t bad[2] = {0, 3};
    tnode tn;
    tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 2, 1);
    bd_tensor in[3] = {{F32, 2, {2, 3}, x}, {BRAID_DTYPE_INT64, 1, {2}, bad}};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "target 3");
    done(&tn.n, out);
    bad[1] = -1; /* negative without an ignore_index */
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_INVALID_ARGUMENT);
    done(&tn.n, out);
    /* shapes: target (2, 1) for input (2, 3); weights (2); input of rank 1 */
    int64_t t21[2] = {0, 1};
    in[1] = (bd_tensor){BRAID_DTYPE_INT64, 2, {2, 1}, t21};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "target");
    done(&tn.n, out);
    float w2[2] = {1, 1};
    tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 3, 1);
    in[1] = (bd_tensor){BRAID_DTYPE_INT64, 1, {2}, t21};
    in[2] = (bd_tensor){F32, 1, {2}, w2};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "weights");
    done(&tn.n, out);
    tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 2, 1);
    in[0] = (bd_tensor){F32, 1, {6}, x};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_SHAPE);
    done(&tn.n, out);
    /* the reduction attribute, and dtypes: float targets, int scores,
     * bfloat16 before NegativeLogLikelihoodLoss-22 */
    in[0] = (bd_tensor){F32, 2, {2, 3}, x};
    tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 2, 1);
    attr_str(&tn, "reduction", "average");
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "average");
    done(&tn.n, out);
    tnode_init(&tn, BD_OP_NegativeLogLikelihoodLoss, 13, 2, 1);
    in[1] = (bd_tensor){F32, 1, {2}, w2};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_DTYPE);
    done(&tn.n, out);
    uint16_t hb[6] = {0};
    in[0] = (bd_tensor){BRAID_DTYPE_BFLOAT16, 2, {2, 3}, hb};
    in[1] = (bd_tensor){BRAID_DTYPE_INT64, 1, {2}, t21};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "bfloat16");
    done(&tn.n, out);
}

/* float16 SoftmaxCrossEntropyLoss and bfloat16 NegativeLogLikelihoodLoss-22
 * over (3, 5, 4, 2) with int32 targets, against double rounded once. */
static void test_half(void)
{
    enum { N = 3, C = 5, D = 8 };
    bd_err e = {0};
    for (int bf = 0; bf <= 1; bf++) {
        uint16_t h[N * C * D];
        float f[N * C * D];
        int32_t t[N * D];
        int64_t t64[N * D];
        for (int i = 0; i < N * C * D; i++) {
            float v = (float)((i * 7) % 17) * 0.2f - 1.5f;
            h[i] = bf ? bd_float_to_bf16(v) : bd_float_to_half(v);
            f[i] = bf ? bd_bf16_to_float(h[i]) : bd_half_to_float(h[i]);
        }
        for (int i = 0; i < N * D; i++) t64[i] = t[i] = (i * 3) % C;
        tnode tn;
        tnode_init(&tn, bf ? BD_OP_NegativeLogLikelihoodLoss : BD_OP_SoftmaxCrossEntropyLoss, bf ? 22 : 13, 2, 1);
        attr_str(&tn, "reduction", "none");
        int dt = bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16;
        bd_tensor in[2] = {{dt, 4, {N, C, 4, 2}, h}, {BRAID_DTYPE_INT32, 3, {N, 4, 2}, t}}, out[2] = {{0}};
        CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
        double per[N * D];
        ref_loss(f, t64, NULL, N, C, D, !bf, 0, 0, 0, per);
        int bad = 0;
        for (int i = 0; i < N * D; i++) {
            uint16_t w = bf ? bd_float_to_bf16((float)per[i]) : bd_float_to_half((float)per[i]);
            uint16_t got = ((uint16_t *)out[0].data)[i];
            if (got != w && got + 1 != w && got != w + 1) bad++; /* one rounding, float's error at a tie */
        }
        CHECK_EQ_INT(bad, 0);
        done(&tn.n, out);
    }
}

/* SoftmaxCrossEntropyLoss over 64 batches of (C 50, D 40) with log_prob: the
 * same bits on 1 and 4 threads. */
static void test_threads(void)
{
    enum { N = 64, C = 50, D = 40 };
    unsigned seed = 9;
    float *x = randn(N * C * D, &seed);
    int64_t *t = malloc(N * D * sizeof *t);
    for (int i = 0; i < N * D; i++) t[i] = (i * 31) % C;
    bd_err e = {0};
    tnode tn;
    tnode_init(&tn, BD_OP_SoftmaxCrossEntropyLoss, 13, 2, 2);
    bd_tensor in[2] = {{F32, 3, {N, C, D}, x}, {BRAID_DTYPE_INT64, 2, {N, D}, t}}, one[2] = {{0}}, four[2] = {{0}};
    CHECK_EQ_INT(run(&tn.n, in, one, &e), BRAID_OK);
    bd_free(tn.n.params);
    tn.n.params = NULL;
    g_threads = 4;
    CHECK_EQ_INT(run(&tn.n, in, four, &e), BRAID_OK);
    g_threads = 1;
    CHECK(memcmp(one[0].data, four[0].data, sizeof(float)) == 0);
    CHECK(memcmp(one[1].data, four[1].data, sizeof(float) * N * C * D) == 0);
    CHECK_NEAR(((float *)one[0].data)[0], ref_loss(x, t, NULL, N, C, D, 1, 2, 0, 0, NULL), 1e-6, 1e-6);
    free(one[0].data);
    free(one[1].data);
    done(&tn.n, four);
    free(x);
    free(t);
}

int main(void)
{
    test_all_modes();
    test_edges();
    test_half();
    test_threads();
    return check_done();
}
