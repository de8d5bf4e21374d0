/* test_training.c: the training family (Adagrad, Adam, Momentum of
 * ai.onnx.preview.training) on the CPU: one step of each optimizer against
 * the update rules computed here by hand, two tensors in one node, the first
 * step (T = 0: no bias correction in Adam, beta 1 in Momentum), double
 * tensors, empty tensors, the same bits on 1 and 4 threads, and the errors
 * (a missing Momentum attribute, a bad mode, a wrong input count, shapes
 * that disagree). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <math.h>

/* A node with n_in inputs and n_out outputs, value ids 0.. and 100.. */
typedef struct tr_node {
    bd_node n;
    int in[16], out[16];
} tr_node;

static void tr_init(tr_node *t, int op, int n_in, int n_out, bd_attr *a, int n_a)
{
    t->n = op_node(op, 1, n_in, n_out, a, n_a);
    t->n.domain = "ai.onnx.preview.training";
    for (int i = 0; i < 16; i++) t->in[i] = i, t->out[i] = 100 + i;
    t->n.in = t->in;
    t->n.out = t->out;
}

static void test_adagrad(void)
{
    float r = 0.1f, x[2] = {1, -2}, g[2] = {0.5f, 0.25f}, h[2] = {1, 0};
    int64_t t = 3;
    bd_attr a[3] = {attr_f("decay_factor", 0.1f), attr_f("epsilon", 1e-5f), attr_f("norm_coefficient", 0.01f)};
    tr_node tn;
    tr_init(&tn, BD_OP_TR_Adagrad, 5, 2, a, 3);
    bd_tensor in[5] = {{F32, 0, {0}, &r}, {BRAID_DTYPE_INT64, 0, {0}, &t}, {F32, 1, {2}, x}, {F32, 1, {2}, g},
                       {F32, 1, {2}, h}},
              out[2] = {{0}};
    bd_err e = {0};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
    double rr = 0.1f / (1 + 3 * (double)0.1f);
    for (int i = 0; i < 2; i++) {
        double gr = (double)0.01f * x[i] + g[i], hn = h[i] + gr * gr;
        double xn = x[i] - rr * gr / (sqrt(hn) + (double)1e-5f);
        CHECK_NEAR(((float *)out[0].data)[i], xn, 1e-6, 1e-6);
        CHECK_NEAR(((float *)out[1].data)[i], hn, 1e-6, 1e-6);
    }
    done(&tn.n, out);
}

static void test_adam(void)
{
    /* two tensors (shapes 2 and 1x3) in one node, T = 2 and T = 0 */
    float r = 0.5f, x1[2] = {1, 2}, x2[3] = {-1, 0, 3}, g1[2] = {0.1f, -0.2f}, g2[3] = {1, 2, -3};
    float v1[2] = {0.5f, 0}, v2[3] = {0, 1, 0}, h1[2] = {1, 2}, h2[3] = {0, 0.5f, 1};
    bd_attr a[5] = {attr_f("alpha", 0.9f), attr_f("beta", 0.99f), attr_f("epsilon", 1e-3f),
                    attr_f("norm_coefficient", 0.1f), attr_f("norm_coefficient_post", 0.05f)};
    for (int64_t t = 0; t <= 2; t += 2) {
        tr_node tn;
        tr_init(&tn, BD_OP_TR_Adam, 10, 6, a, 5);
        bd_tensor in[10] = {{F32, 0, {0}, &r}, {BRAID_DTYPE_INT64, 1, {1}, &t}, {F32, 1, {2}, x1},
                            {F32, 2, {1, 3}, x2}, {F32, 1, {2}, g1}, {F32, 2, {1, 3}, g2},
                            {F32, 1, {2}, v1}, {F32, 2, {1, 3}, v2}, {F32, 1, {2}, h1},
                            {F32, 2, {1, 3}, h2}},
                  out[6] = {{0}};
        bd_err e = {0};
        CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[1].rank, 2);
        CHECK_EQ_INT(out[5].dims[1], 3);
        double al = 0.9f, be = 0.99f, rr = 0.5;
        if (t > 0) rr = 0.5 * sqrt(1 - pow(be, 2)) / (1 - pow(al, 2));
        for (int k = 0; k < 2; k++) {
            const float *x = k ? x2 : x1, *g = k ? g2 : g1, *v = k ? v2 : v1, *h = k ? h2 : h1;
            for (int i = 0; i < (k ? 3 : 2); i++) {
                double gr = (double)0.1f * x[i] + g[i];
                double vn = al * v[i] + (1 - al) * gr, hn = be * h[i] + (1 - be) * gr * gr;
                double xn = (1 - (double)0.05f) * (x[i] - rr * vn / (sqrt(hn) + (double)1e-3f));
                CHECK_NEAR(((float *)out[k].data)[i], xn, 1e-6, 1e-6);
                CHECK_NEAR(((float *)out[2 + k].data)[i], vn, 1e-6, 1e-6);
                CHECK_NEAR(((float *)out[4 + k].data)[i], hn, 1e-6, 1e-6);
            }
        }
        done(&tn.n, out);
    }
}

static void test_momentum(void)
{
    double r = 0.25, x[3] = {1, 2, 3}, g[3] = {-1, 0.5, 2}, v[3] = {0.1, 0.2, 0.3};
    for (int nest = 0; nest < 2; nest++)
        for (int64_t t = 0; t <= 1; t++) {
            bd_attr a[4] = {attr_f("alpha", 0.9f), attr_f("beta", 0.5f), attr_f("norm_coefficient", 0.01f),
                            {.name = "mode", .type = BD_ATTR_STRING, .s = nest ? "nesterov" : "standard"}};
            tr_node tn;
            tr_init(&tn, BD_OP_TR_Momentum, 5, 2, a, 4);
            bd_tensor in[5] = {{BRAID_DTYPE_DOUBLE, 0, {0}, &r}, {BRAID_DTYPE_INT64, 0, {0}, &t},
                               {BRAID_DTYPE_DOUBLE, 1, {3}, x}, {BRAID_DTYPE_DOUBLE, 1, {3}, g},
                               {BRAID_DTYPE_DOUBLE, 1, {3}, v}},
                      out[2] = {{0}};
            bd_err e = {0};
            CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
            CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_DOUBLE);
            for (int i = 0; i < 3; i++) {
                double gr = (double)0.01f * x[i] + g[i], be = t ? (double)0.5f : 1.0;
                double vn = (double)0.9f * v[i] + be * gr;
                double xn = nest ? x[i] - r * (gr + (double)0.9f * vn) : x[i] - r * vn;
                CHECK_NEAR(((double *)out[0].data)[i], xn, 1e-14, 1e-14);
                CHECK_NEAR(((double *)out[1].data)[i], vn, 1e-14, 1e-14);
            }
            done(&tn.n, out);
        }
}

static void test_threads_and_empty(void)
{
    unsigned seed = 7;
    int64_t N = 100000, t = 5;
    float r = 0.01f, *x = randn(N, &seed), *g = randn(N, &seed), *v = randn(N, &seed), *h = randn(N, &seed);
    for (int64_t i = 0; i < N; i++) h[i] = fabsf(h[i]);
    bd_attr a[1] = {attr_f("epsilon", 1e-4f)};
    float *ref[3] = {0};
    for (int th = 1; th <= 4; th += 3) {
        g_threads = th;
        tr_node tn;
        tr_init(&tn, BD_OP_TR_Adam, 6, 3, a, 1);
        bd_tensor in[6] = {{F32, 0, {0}, &r}, {BRAID_DTYPE_INT64, 0, {0}, &t}, {F32, 1, {N}, x},
                           {F32, 1, {N}, g}, {F32, 1, {N}, v}, {F32, 1, {N}, h}},
                  out[3] = {{0}};
        bd_err e = {0};
        CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
        for (int o = 0; o < 3; o++) {
            if (th == 1) ref[o] = malloc((size_t)N * sizeof(float)), memcpy(ref[o], out[o].data, (size_t)N * 4);
            else CHECK(memcmp(ref[o], out[o].data, (size_t)N * 4) == 0);
        }
        done(&tn.n, out);
    }
    g_threads = 1;
    for (int o = 0; o < 3; o++) free(ref[o]);
    free(x), free(g), free(v), free(h);
    /* an empty tensor: shapes (0, 4) come back, nothing is written */
    float d = 0;
    tr_node tn;
    tr_init(&tn, BD_OP_TR_Adagrad, 5, 2, NULL, 0);
    bd_tensor in[5] = {{F32, 0, {0}, &r}, {BRAID_DTYPE_INT64, 0, {0}, &t}, {F32, 2, {0, 4}, &d},
                       {F32, 2, {0, 4}, &d}, {F32, 2, {0, 4}, &d}},
              out[2] = {{0}};
    bd_err e = {0};
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[1].dims[0], 0);
    CHECK_EQ_INT(out[1].dims[1], 4);
    done(&tn.n, out);
}

static void test_errors(void)
{
    float r = 0.1f, x[2] = {1, 2}, g[3] = {1, 2, 3};
    int64_t t = 1;
    bd_tensor in[5] = {{F32, 0, {0}, &r}, {BRAID_DTYPE_INT64, 0, {0}, &t}, {F32, 1, {2}, x}, {F32, 1, {2}, x},
                       {F32, 1, {2}, x}},
              out[2] = {{0}};
    bd_err e = {0};
    /* Momentum without beta */
    bd_attr a[4] = {attr_f("alpha", 0.9f), attr_f("norm_coefficient", 0),
                    {.name = "mode", .type = BD_ATTR_STRING, .s = "standard"}, attr_f("beta", 1)};
    tr_node tn;
    tr_init(&tn, BD_OP_TR_Momentum, 5, 2, a, 3);
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'beta' is required");
    done(&tn.n, out);
    /* a mode that is neither */
    a[2].s = "heavy";
    tr_init(&tn, BD_OP_TR_Momentum, 5, 2, a, 4);
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'mode' is 'heavy'");
    done(&tn.n, out);
    /* Adagrad with 6 inputs: not R, T and groups of 3 */
    bd_tensor in6[6] = {in[0], in[1], in[2], in[3], in[4], in[4]};
    bd_tensor out3[3] = {{0}};
    tr_init(&tn, BD_OP_TR_Adagrad, 6, 2, NULL, 0);
    CHECK_EQ_INT(run(&tn.n, in6, out3, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "not 6 inputs");
    done(&tn.n, out3);
    /* Adagrad with 3 outputs for one tensor */
    tr_init(&tn, BD_OP_TR_Adagrad, 5, 3, NULL, 0);
    CHECK_EQ_INT(run(&tn.n, in, out3, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "has 3 outputs, not 2");
    done(&tn.n, out3);
    /* G of another shape than X */
    in[3] = (bd_tensor){F32, 1, {3}, g};
    tr_init(&tn, BD_OP_TR_Adagrad, 5, 2, NULL, 0);
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "input G1 has shape 3, X1 has 2");
    done(&tn.n, out);
    /* T of int32 */
    in[3] = in[2];
    int32_t t32 = 1;
    in[1] = (bd_tensor){BRAID_DTYPE_INT32, 0, {0}, &t32};
    tr_init(&tn, BD_OP_TR_Adagrad, 5, 2, NULL, 0);
    CHECK_EQ_INT(run(&tn.n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input T has dtype int32");
    done(&tn.n, out);
}

int main(void)
{
    test_adagrad();
    test_adam();
    test_momentum();
    test_threads_and_empty();
    test_errors();
    return check_done();
}
