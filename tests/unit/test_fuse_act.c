/* test_fuse_act.c: the load-time activation fusions of src/graph/fuse_act.c.
 * Each chain an exporter writes (Paddle's (X * Clip(X + 3, 0, 6)) / 6, its
 * form with * (1/6) and operands swapped, X * HardSigmoid(X) with alpha 1/6,
 * X * Sigmoid(X)) must load as one HardSwish or Swish node and give the
 * chain's values within float32 rounding (|d| <= 4e-7 |y| + 1e-7) against a
 * double reference; chains that differ in one respect (a constant 3.5, an
 * intermediate that is also a graph output, HardSigmoid's default alpha)
 * must stay as they are and still give the chain's values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "graph/ir.h"
#include "ops/ops.h"
#include "check.h"
#include "mbuild.h"

enum { N = 64 };
static const int64_t DN[] = {N};

typedef struct want {
    int nodes;      /* nodes after load */
    int op;         /* the op of the last node, when nodes == 1 */
    double (*f)(double);
} want;

static double hswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }
static double hswish35(double x) { return x * fmin(fmax(x + 3.5, 0), 6) / 6; }
static double silu(double x) { return x / (1 + exp(-x)); }
static double x_hsig_default(double x) { return x * fmin(fmax(0.2 * x + 0.5, 0), 1); }

/* Loads the model, checks the node count (and op), runs it on X and checks Y. */
static void check_model(mb *b, mb_model *mm, want w, int line)
{
    braid_model *m = NULL;
    braid_status st = mb_load(b, mm, &m);
    if (st) {
        fprintf(stderr, "line %d: load: %s\n", line, braid_last_error());
        CHECK(0);
        return;
    }
    const bd_graph *g = bd_model_graph(m);
    if (g->n_nodes != w.nodes) fprintf(stderr, "line %d: %d nodes, want %d\n", line, g->n_nodes, w.nodes);
    CHECK_EQ_INT(g->n_nodes, w.nodes);
    if (w.nodes == 1) CHECK_EQ_INT(g->nodes[0].op, w.op);
    float x[N];
    for (int i = 0; i < N; i++) x[i] = -5.0f + 10.0f * (float)i / (N - 1); /* through both kinks */
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    braid_tensor in = {BRAID_DTYPE_FLOAT, 1, {N}, x}, out[2] = {{0}};
    int n_out = braid_model_output_count(m);
    CHECK_EQ_INT(braid_session_run(s, 1, &in, n_out, out), BRAID_OK);
    int bad = 0;
    for (int i = 0; out[0].data && i < N; i++) {
        double y = ((const float *)out[0].data)[i], r = w.f(x[i]);
        if (fabs(y - r) > 4e-7 * fabs(r) + 1e-7) {
            if (!bad) fprintf(stderr, "line %d: x %g: %.9g, want %.9g\n", line, x[i], y, r);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
}

/* X -> Add(X, c3) -> Clip(0, 6) -> Mul(X, .) -> Div(., 6) or Mul(., 1/6). */
static void hardswish_chain(float c3, int by_mul, int swap, int clip_out, want w, int line)
{
    mb b = {0};
    mb_model mm;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 1, DN);
    mb_const_f(&b, g, "c3", 0, NULL, &c3, 1);
    mb_const_f(&b, g, "c0", 0, NULL, (float[]){0}, 1);
    mb_const_f(&b, g, "c6", 0, NULL, (float[]){6}, 1);
    mb_const_f(&b, g, "c16", 0, NULL, (float[]){1.0f / 6}, 1);
    mb_node(&b, g, "Add", swap ? "c3,X" : "X,c3", "a", NULL);
    mb_node(&b, g, "Clip", "a,c0,c6", "c", NULL);
    mb_node(&b, g, "Mul", swap ? "c,X" : "X,c", "m", NULL);
    mb_node(&b, g, by_mul ? "Mul" : "Div", by_mul ? (swap ? "c16,m" : "m,c16") : "m,c6", "Y", NULL);
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 1, DN);
    if (clip_out) mb_output(&b, g, "c", BRAID_DTYPE_FLOAT, 1, DN);
    mb_model_init(&b, &mm, g, 13);
    check_model(&b, &mm, w, line);
    mb_free(&b);
}

/* X -> act(X) -> Mul(X, act) with act Sigmoid or HardSigmoid (alpha, or the default). */
static void gate_chain(const char *act, float alpha, int swap, want w, int line)
{
    mb b = {0};
    mb_model mm;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 1, DN);
    Onnx__NodeProto *a = mb_node(&b, g, act, "X", "s", NULL);
    if (alpha > 0) mb_attr_f(&b, a, "alpha", alpha);
    mb_node(&b, g, "Mul", swap ? "s,X" : "X,s", "Y", NULL);
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 1, DN);
    mb_model_init(&b, &mm, g, 13);
    check_model(&b, &mm, w, line);
    mb_free(&b);
}

int main(void)
{
    want hs = {1, BD_OP_HardSwish, hswish}, sw = {1, BD_OP_Swish, silu};
    hardswish_chain(3, 0, 0, 0, hs, __LINE__);  /* Paddle's form */
    hardswish_chain(3, 1, 0, 0, hs, __LINE__);  /* * (1/6) */
    hardswish_chain(3, 1, 1, 0, hs, __LINE__);  /* operands swapped */
    hardswish_chain(3, 0, 1, 0, hs, __LINE__);
    gate_chain("HardSigmoid", 1.0f / 6, 0, hs, __LINE__);
    gate_chain("Sigmoid", 0, 0, sw, __LINE__);
    gate_chain("Sigmoid", 0, 1, sw, __LINE__);
    /* left alone */
    hardswish_chain(3.5f, 0, 0, 0, (want){4, 0, hswish35}, __LINE__);
    hardswish_chain(3, 0, 0, 1, (want){4, 0, hswish}, __LINE__); /* Clip's output is also an output */
    gate_chain("HardSigmoid", 0, 0, (want){2, 0, x_hsig_default}, __LINE__);
    return check_done();
}
