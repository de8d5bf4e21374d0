/* test_fuse_act.c: the load-time activation fusions of src/passes/fuse_act.c.
 * Each chain an exporter writes (Paddle's (X * Clip(X + 3, 0, 6)) / 6, its
 * form with * (1/6) and operands swapped, X * HardSigmoid(X) with alpha 1/6,
 * X * Sigmoid(X)) must load as one HardSwish or Swish node and give the
 * chain's values within float32 rounding (|d| <= 4e-7 |y| + 1e-7) against a
 * double reference; chains that differ in one respect (a constant 3.5, an
 * intermediate that is also a graph output, HardSigmoid's default alpha)
 * must stay as they are and still give the chain's values. PyTorch's exact
 * GELU chain, 0.5 X (1 + erf(X / sqrt 2)) in the three orders exporters
 * write, must load as one Gelu node within the same bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "ir/ir.h"
#include "ops/ops.h"
#include "check.h"
#include "mbuild.h"

enum { N = 64 };
static const int64_t DN[] = {N};

typedef struct want {
    int nodes;      /* nodes after load */
    int op;         /* the op of the last node, when nodes == 1 */
    double (*f)(double);
    double atol;    /* 0: 1e-7 */
} want;

static double hswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }
static double hswish35(double x) { return x * fmin(fmax(x + 3.5, 0), 6) / 6; }
static double silu(double x) { return x / (1 + exp(-x)); }
static double x_hsig_default(double x) { return x * fmin(fmax(0.2 * x + 0.5, 0), 1); }
static double gelu(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
static double gelu_off(double x) { return 0.5 * x * (1 + erf(x / 1.5)); }

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
        if (fabs(y - r) > 4e-7 * fabs(r) + (w.atol > 0 ? w.atol : 1e-7)) {
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

/* PyTorch's exact GELU: X -> Div(X, sqrt 2) (or Mul(X, 1/sqrt 2)) -> Erf -> Add(., 1), then
 * form 0: Mul(X, Mul(., 0.5)); 1: Mul(., Mul(X, 0.5)); 2: Mul(Mul(X, .), 0.5). swap: operands
 * the other way round. div: the sqrt 2 constant (1.5 must stay apart). */
static void gelu_chain(int form, int by_mul, int swap, float div, int erf_out, want w, int line)
{
    mb b = {0};
    mb_model mm;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 1, DN);
    mb_const_f(&b, g, "cd", 0, NULL, by_mul ? (float[]){1.0f / div} : &div, 1);
    mb_const_f(&b, g, "c1", 0, NULL, (float[]){1}, 1);
    mb_const_f(&b, g, "ch", 0, NULL, (float[]){0.5f}, 1);
    mb_node(&b, g, by_mul ? "Mul" : "Div", swap && by_mul ? "cd,X" : "X,cd", "d", NULL);
    mb_node(&b, g, "Erf", "d", "e", NULL);
    mb_node(&b, g, "Add", swap ? "c1,e" : "e,c1", "a", NULL);
    if (form == 0) {
        mb_node(&b, g, "Mul", swap ? "ch,a" : "a,ch", "h", NULL);
        mb_node(&b, g, "Mul", swap ? "h,X" : "X,h", "Y", NULL);
    } else if (form == 1) {
        mb_node(&b, g, "Mul", swap ? "ch,X" : "X,ch", "h", NULL);
        mb_node(&b, g, "Mul", swap ? "h,a" : "a,h", "Y", NULL);
    } else {
        mb_node(&b, g, "Mul", swap ? "a,X" : "X,a", "h", NULL);
        mb_node(&b, g, "Mul", swap ? "ch,h" : "h,ch", "Y", NULL);
    }
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 1, DN);
    if (erf_out) mb_output(&b, g, "e", BRAID_DTYPE_FLOAT, 1, DN);
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
    want ge = {1, BD_OP_Gelu, gelu};
    for (int form = 0; form < 3; form++)
        for (int v = 0; v < 4; v++) gelu_chain(form, v & 1, v >> 1, 1.41421356f, 0, ge, __LINE__);
    /* left alone */
    /* (the chain rounds 1 + erf(x) in float32: 6e-8 absolute, times x / 2) */
    gelu_chain(0, 0, 0, 1.5f, 0, (want){5, 0, gelu_off, 5e-7}, __LINE__);
    gelu_chain(1, 0, 0, 1.41421356f, 1, (want){5, 0, gelu, 5e-7}, __LINE__); /* Erf's output is also an output */
    hardswish_chain(3.5f, 0, 0, 0, (want){4, 0, hswish35}, __LINE__);
    hardswish_chain(3, 0, 0, 1, (want){4, 0, hswish}, __LINE__); /* Clip's output is also an output */
    gate_chain("HardSigmoid", 0, 0, (want){2, 0, x_hsig_default}, __LINE__);
    return check_done();
}
