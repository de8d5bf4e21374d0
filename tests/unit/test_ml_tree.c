/* test_ml_tree.c: the ml_tree family on the CPU. A TreeEnsemble (opset 5)
 * of two trees over two features, hand-evaluated: every aggregate function
 * (SUM, AVERAGE, MIN, MAX), the post transforms LOGISTIC, SOFTMAX,
 * SOFTMAX_ZERO and PROBIT against formulas computed here, the missing-value
 * track (NaN goes true), each branch mode, set membership, an empty batch,
 * the same bits on 1 and 4 threads, and the errors (a cycle, a child index
 * out of range, an unknown mode, a feature X lacks). The opset 1/3
 * regressor and classifier were also checked against onnxruntime (every
 * aggregate, post transforms, binary and multiclass; see the commit). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <float.h>
#include <math.h>

typedef struct tens {
    bd_tensor t[3];
    float splits[4], weights[5], members[4];
    int64_t modes[4];
} tens;

/* tree 0: node0 (x0 MODE s0) ? leaf0 : node1; node1 (x1 <= 1) ? leaf1 : leaf2
 * tree 1: node2 (x1 > 0) ? leaf3 : leaf4; targets: leaf0 -> 0, leaf1 -> 1,
 * leaf2 -> 0, leaf3 -> 1, leaf4 -> 0. missing tracks true on node0. */
static void build(tnode *t, tens *s, int agg, int post, int64_t mode0)
{
    tnode_init(t, BD_OP_ML_TreeEnsemble, 5, 1, 1);
    t->n.domain = "ai.onnx.ml";
    float sp[3] = {0.5f, 1, 0}, w[5] = {1, 2, 3, 4, 5};
    memcpy(s->splits, sp, sizeof sp), memcpy(s->weights, w, sizeof w);
    s->modes[0] = mode0, s->modes[1] = 0, s->modes[2] = 3;
    s->members[0] = 2, s->members[1] = 7, s->members[2] = NAN;
    s->t[0] = (bd_tensor){F32, 1, {3}, s->splits};
    s->t[1] = (bd_tensor){F32, 1, {5}, s->weights};
    s->t[2] = (bd_tensor){BRAID_DTYPE_INT64, 1, {3}, s->modes};
    int64_t fe[3] = {0, 1, 1}, tn[3] = {0, 1, 3}, fn[3] = {1, 2, 4}, tl[3] = {1, 1, 1}, fl[3] = {0, 1, 1};
    int64_t lt[5] = {0, 1, 0, 1, 0}, roots[2] = {0, 2}, mv[3] = {1, 0, 0};
    tnode_attr(t, "nodes_splits", BD_ATTR_TENSOR)->t = &s->t[0];
    tnode_attr(t, "leaf_weights", BD_ATTR_TENSOR)->t = &s->t[1];
    tnode_attr(t, "nodes_modes", BD_ATTR_TENSOR)->t = &s->t[2];
    attr_ints(t, "nodes_featureids", 3, fe);
    attr_ints(t, "nodes_truenodeids", 3, tn);
    attr_ints(t, "nodes_falsenodeids", 3, fn);
    attr_ints(t, "nodes_trueleafs", 3, tl);
    attr_ints(t, "nodes_falseleafs", 3, fl);
    attr_ints(t, "leaf_targetids", 5, lt);
    attr_ints(t, "tree_roots", 2, roots);
    attr_ints(t, "nodes_missing_value_tracks_true", 3, mv);
    attr_int(t, "n_targets", 2);
    attr_int(t, "aggregate_function", agg);
    attr_int(t, "post_transform", post);
}

/* The two trees' (target, weight) for row (x0, x1) with node0 as LEQ. */
static void hand(float x0, float x1, int *t0, double *w0, int *t1, double *w1)
{
    if (x0 <= 0.5f || isnan(x0)) *t0 = 0, *w0 = 1;
    else if (x1 <= 1) *t0 = 1, *w0 = 2;
    else *t0 = 0, *w0 = 3;
    if (x1 > 0) *t1 = 1, *w1 = 4;
    else *t1 = 0, *w1 = 5;
}

static void test_aggregates_posts(void)
{
    float x[10] = {0, 0, 1, 0.5f, 1, 2, NAN, 3, 2, -1};
    for (int agg = 0; agg < 4; agg++)
        for (int post = 0; post < 4; post++) { /* PROBIT: test_probit_and_modes */
            tnode t;
            tens s;
            build(&t, &s, agg, post, 0);
            bd_tensor in = {F32, 2, {5, 2}, x}, out = {0};
            bd_err e = {0};
            CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
            CHECK_EQ_INT(out.dims[1], 2);
            for (int r = 0; r < 5; r++) {
                int ta, tb;
                double wa, wb, v[2] = {0, 0};
                int has[2] = {0, 0};
                hand(x[2 * r], x[2 * r + 1], &ta, &wa, &tb, &wb);
                int tt[2] = {ta, tb};
                double ww[2] = {wa, wb};
                for (int k = 0; k < 2; k++) {
                    int q = tt[k];
                    if (agg == 2) v[q] = has[q] ? fmin(v[q], ww[k]) : ww[k];
                    else if (agg == 3) v[q] = has[q] ? fmax(v[q], ww[k]) : ww[k];
                    else v[q] += ww[k];
                    has[q] = 1;
                }
                for (int q = 0; q < 2; q++) {
                    if (agg == 0) v[q] /= 2;
                    if (!has[q] && agg == 2) v[q] = FLT_MAX;
                    if (!has[q] && agg == 3) v[q] = -FLT_MAX;
                }
                if (post == 2) v[0] = 1 / (1 + exp(-v[0])), v[1] = 1 / (1 + exp(-v[1]));
                if (post == 1 || post == 3) {
                    double m = fmax(v[0], v[1]), a = exp(v[0] - m), b = exp(v[1] - m);
                    if (post == 3 && v[0] == 0) a = 0;
                    if (post == 3 && v[1] == 0) b = 0;
                    v[0] = a / (a + b), v[1] = b / (a + b);
                }
                for (int q = 0; q < 2; q++) {
                    float got = ((float *)out.data)[r * 2 + q];
                    if (fabs(v[q]) >= FLT_MAX) CHECK(got == (float)v[q]);
                    else CHECK_NEAR(got, v[q], 1e-6, 1e-6);
                }
            }
            done(&t.n, &out);
        }
}

static void test_probit_and_modes(void)
{
    /* PROBIT of a single score 0.8 (tree 1 only: weight 0.8 at target 0): sqrt(2) erfinv(0.6) = 0.8416 */
    tnode t;
    tens s;
    build(&t, &s, 1, 4, 0);
    s.weights[0] = 0.8f, s.weights[4] = 0;
    float x[2] = {0, -1}; /* tree 0 -> leaf0 (0.8, target 0); tree 1 -> leaf4 (0, target 0) */
    bd_tensor in = {F32, 2, {1, 2}, x}, out = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_NEAR(((float *)out.data)[0], 0.8416212, 2e-3, 0); /* the approximation of the reference */
    done(&t.n, &out);
    /* each mode at node0 against split 0.5, x0 in {0, 0.5, 1}: true goes to leaf0 (target 0, weight 1) */
    const int want[6][3] = {{1, 1, 0}, {1, 0, 0}, {0, 1, 1}, {0, 0, 1}, {0, 1, 0}, {1, 0, 1}};
    float xs[6] = {0, 5, 0.5f, 5, 1, 5};
    for (int m = 0; m < 6; m++) {
        build(&t, &s, 1, 0, m);
        bd_tensor inm = {F32, 2, {3, 2}, xs};
        CHECK_EQ_INT(run(&t.n, &inm, &out, &e), BRAID_OK);
        /* target 0 = (node0 true ? 1 : 3 [leaf2, x1 = 5 > 1]) + tree 1 leaf4? no: x1 = 5 > 0 -> leaf3 (target 1) */
        for (int r = 0; r < 3; r++) CHECK(((float *)out.data)[2 * r] == (want[m][r] ? 1.0f : 3.0f));
        done(&t.n, &out);
    }
    /* MEMBER: x0 in {2, 7} */
    build(&t, &s, 1, 0, 6);
    bd_tensor mt = {F32, 1, {3}, s.members};
    tnode_attr(&t, "membership_values", BD_ATTR_TENSOR)->t = &mt;
    float xm[6] = {7, 5, 3, 5, 2, 5};
    bd_tensor inm = {F32, 2, {3, 2}, xm};
    CHECK_EQ_INT(run(&t.n, &inm, &out, &e), BRAID_OK);
    CHECK(((float *)out.data)[0] == 1 && ((float *)out.data)[2] == 3 && ((float *)out.data)[4] == 1);
    done(&t.n, &out);
}

static void test_threads_empty(void)
{
    unsigned seed = 3;
    int64_t N = 5000;
    float *x = randn(2 * N, &seed), *ref = NULL;
    for (int th = 1; th <= 4; th += 3) {
        g_threads = th;
        tnode t;
        tens s;
        build(&t, &s, 0, 1, 0);
        bd_tensor in = {F32, 2, {N, 2}, x}, out = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        if (th == 1) ref = malloc((size_t)N * 8), memcpy(ref, out.data, (size_t)N * 8);
        else CHECK(memcmp(ref, out.data, (size_t)N * 8) == 0);
        done(&t.n, &out);
    }
    g_threads = 1;
    free(ref), free(x);
    tnode t;
    tens s;
    build(&t, &s, 1, 0, 0);
    float d = 0;
    bd_tensor in = {F32, 2, {0, 2}, &d}, out = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 0);
    CHECK_EQ_INT(out.dims[1], 2);
    done(&t.n, &out);
}

static void test_errors(void)
{
    float x[2] = {0, 0};
    bd_tensor in = {F32, 2, {1, 2}, x}, out = {0};
    bd_err e = {0};
    tnode t;
    tens s;
    /* node1's false branch back to node0: a cycle */
    build(&t, &s, 1, 0, 0);
    int64_t fl[3] = {0, 0, 1}, fn[3] = {1, 0, 4};
    memcpy(t.ints[6], fn, sizeof fn);
    memcpy(t.ints[8], fl, sizeof fl);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "has a cycle");
    done(&t.n, &out);
    /* a true node id outside the nodes */
    build(&t, &s, 1, 0, 0);
    t.ints[5][1] = 7;
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'nodes_truenodeids'");
    done(&t.n, &out);
    /* mode 9 */
    build(&t, &s, 1, 0, 9);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'nodes_modes'[0] is 9");
    done(&t.n, &out);
    /* aggregate 4 */
    build(&t, &s, 4, 0, 0);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'aggregate_function' is 4");
    done(&t.n, &out);
    /* X with one feature, the trees read feature 1 */
    build(&t, &s, 1, 0, 0);
    in.dims[1] = 1;
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "reads feature 1");
    done(&t.n, &out);
}

int main(void)
{
    test_aggregates_posts();
    test_probit_and_modes();
    test_threads_empty();
    test_errors();
    return check_done();
}
