/* test_control.c: If, Loop and Scan, from models built here (mbuild.h): run
 * and constant conditions, branches of different shapes, captures of outer
 * values two levels up, Loop in every combination of M and condition, zero
 * iterations, loop-carried values that change shape or swap, the iteration
 * limit, nested loops, Scan's axes and directions (opset 9+) and its batch
 * form (opset 8), nested-plan reuse, and the load errors with their exact
 * messages. Every model runs at 1, 2, 4 and automatic streams. Expected
 * numbers are worked out by hand in the comments. */
#include <stdlib.h>

#include "api_internal.h"
#include "backend/backend.h"
#include "runtime/controlflow.h"
#include "check.h"
#include "mbuild.h"

static const int STREAMS[] = {1, 2, 4, 0};

typedef struct result {
    int n;
    braid_tensor t[4]; /* host copies, malloc'ed */
    char msg[1200];
    braid_status st;
} result;

static void result_free(result *r)
{
    for (int i = 0; i < r->n; i++) free(r->t[i].data);
    memset(r, 0, sizeof *r);
}

/* Runs m once on a new CPU session with these streams (and loop limit). */
static result run_model(braid_model *m, int streams, int64_t loop_limit, int n_in, const braid_tensor *in)
{
    result r = {0};
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    braid_options_set_max_streams(o, streams);
    braid_options_set_loop_limit(o, loop_limit);
    if ((r.st = braid_session_create(m, o, &s))) {
        snprintf(r.msg, sizeof r.msg, "%s", braid_last_error());
        goto done;
    }
    r.n = braid_model_output_count(m);
    braid_tensor out[4] = {{0}};
    if ((r.st = braid_session_run(s, n_in, in, r.n, out))) {
        snprintf(r.msg, sizeof r.msg, "%s", braid_session_error(s));
        r.n = 0;
        goto done;
    }
    for (int i = 0; i < r.n; i++) {
        size_t nb = braid_dtype_name(out[i].dtype) ? 1 : 1;
        int64_t cnt = 1;
        for (int d = 0; d < out[i].rank; d++) cnt *= out[i].dims[d];
        nb = (size_t)cnt * (out[i].dtype == BRAID_DTYPE_INT64 ? 8 : out[i].dtype == BRAID_DTYPE_BOOL ? 1 : 4);
        r.t[i] = out[i];
        r.t[i].data = malloc(nb + 1);
        memcpy(r.t[i].data, out[i].data, nb);
    }
done:
    braid_session_destroy(s);
    braid_options_destroy(o);
    return r;
}

static int shape_is(const braid_tensor *t, int rank, const int64_t *dims)
{
    if (t->rank != rank) return 0;
    for (int d = 0; d < rank; d++)
        if (t->dims[d] != dims[d]) return 0;
    return 1;
}

/* Output i of r is float, of the given shape, and equal to want. */
static void check_f(const result *r, int i, int rank, const int64_t *dims, const float *want, int line)
{
    if (r->st || i >= r->n) {
        fprintf(stderr, "line %d: run failed: %s\n", line, r->msg);
        CHECK(0);
        return;
    }
    CHECK_EQ_INT(r->t[i].dtype, BRAID_DTYPE_FLOAT);
    if (!shape_is(&r->t[i], rank, dims)) {
        fprintf(stderr, "line %d: output %d has rank %d dims", line, i, r->t[i].rank);
        for (int d = 0; d < r->t[i].rank; d++) fprintf(stderr, " %lld", (long long)r->t[i].dims[d]);
        fprintf(stderr, "\n");
        CHECK(0);
        return;
    }
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++) cnt *= dims[d];
    for (int64_t k = 0; k < cnt; k++) {
        float got = ((const float *)r->t[i].data)[k];
        if (got != want[k]) {
            fprintf(stderr, "line %d: output %d element %lld: %g, want %g\n", line, i, (long long)k, got, want[k]);
            CHECK(0);
            return;
        }
    }
    CHECK(1);
}

/* Runs m at every stream count and checks output 0 (and 1 when want1). */
static void check_all(braid_model *m, int n_in, const braid_tensor *in, int rank, const int64_t *dims,
                      const float *want, int rank1, const int64_t *dims1, const float *want1, int line)
{
    for (size_t k = 0; k < sizeof STREAMS / sizeof *STREAMS; k++) {
        result r = run_model(m, STREAMS[k], 0, n_in, in);
        check_f(&r, 0, rank, dims, want, line);
        if (want1) check_f(&r, 1, rank1, dims1, want1, line);
        result_free(&r);
    }
}

/* Loads the model; on failure prints why and fails the check. */
static int load_ok(mb *b, mb_model *mm, braid_model **m, int line)
{
    braid_status st = mb_load(b, mm, m);
    if (st) fprintf(stderr, "line %d: load failed: %s\n", line, braid_last_error());
    CHECK_EQ_INT(st, BRAID_OK);
    return st == BRAID_OK;
}
#define LOAD_OK(b, mm, m) if (!load_ok(b, mm, m, __LINE__)) { mb_free(b); return; }

static const int64_t D2[] = {2}, D3[] = {3}, D6[] = {6}, D1[] = {1};

/* ---- If ---------------------------------------------------------------------------- */

/* then: y = x + x; else: y = x * k (k an initializer of the main graph). */
static void test_if_runtime(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    float kv[] = {10, 20, 30};
    mb_input(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D3);
    mb_init(&b, g, "k", BRAID_DTYPE_FLOAT, 1, D3, kv, sizeof kv);
    mb_node(&b, th, "Add", "x,x", "ty", "tadd");
    mb_output(&b, th, "ty", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, el, "Mul", "x,k", "ey", "emul");
    mb_output(&b, el, "ey", BRAID_DTYPE_FLOAT, 1, D3);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y", "if");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D3);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    /* The If reads x and k as implicit inputs: explicit edges. */
    const bd_graph *bg = bd_model_graph(m);
    CHECK_EQ_INT(bg->nodes[0].n_implicit, 2);
    CHECK_EQ_INT(bg->nodes[0].n_in, 3);
    float x[] = {1, 2, 3};
    unsigned char t = 1, f = 0;
    braid_tensor in[2] = {{BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {3}, x}};
    check_all(m, 2, in, 1, D3, (float[]){2, 4, 6}, 0, NULL, NULL, __LINE__);
    in[0].data = &f;
    check_all(m, 2, in, 1, D3, (float[]){10, 40, 90}, 0, NULL, NULL, __LINE__);

    /* Both branches' plans are made once each and then reused. */
    braid_session *s = NULL;
    braid_options *o = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    braid_tensor out;
    for (int rep = 0; rep < 3; rep++) {
        in[0].data = rep == 1 ? &f : &t;
        CHECK_EQ_INT(braid_session_run(s, 2, in, 1, &out), BRAID_OK);
    }
    const bd_prepared *p = NULL;
    bd_err e = {0};
    CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p->n_live, 1);
    CHECK_EQ_INT(bd_nest_plan_count(p->nest[0], 0), 1);
    CHECK_EQ_INT(bd_nest_plan_count(p->nest[0], 1), 1);
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    mb_free(&b);
}

/* A branch these inputs do not suit (else reshapes x [3] to [2, 2]) does not
 * fail the If while its condition is unknown: the then branch gives the
 * shapes, and the error comes only in a run that takes the else branch,
 * (silero VAD has one branch per sample rate). */
static void test_if_unsuited_branch(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    mb_input(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, th, "Identity", "x", "ty", NULL);
    mb_output(&b, th, "ty", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_const_i(&b, el, "shape", 1, D2, (int64_t[]){2, 2}, 2);
    mb_node(&b, el, "Reshape", "x,shape", "ey", NULL);
    mb_output(&b, el, "ey", BRAID_DTYPE_FLOAT, -1, NULL);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y", "if");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    float x[] = {1, 2, 3};
    unsigned char t = 1, f = 0;
    braid_tensor in[2] = {{BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {3}, x}};
    for (size_t k = 0; k < sizeof STREAMS / sizeof *STREAMS; k++) {
        in[0].data = &t;
        result r = run_model(m, STREAMS[k], 0, 2, in);
        check_f(&r, 0, 1, D3, x, __LINE__);
        result_free(&r);
        in[0].data = &f;
        r = run_model(m, STREAMS[k], 0, 2, in);
        CHECK_EQ_INT(r.st, BRAID_ERR_SHAPE);
        CHECK_CONTAINS(r.msg, "else_branch");
        result_free(&r);
    }
    braid_model_destroy(m);
    mb_free(&b);
}

/* Branches of different shapes: then y = x [3], else y = Concat(x, x) [6];
 * z = Neg(y) waits for the second stage, planned for the shape the If gave. */
static void test_if_union(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    mb_input(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, th, "Identity", "x", "ty", NULL);
    mb_output(&b, th, "ty", BRAID_DTYPE_FLOAT, 1, D3);
    Onnx__NodeProto *cat = mb_node(&b, el, "Concat", "x,x", "ey", NULL);
    mb_attr_i(&b, cat, "axis", 0);
    mb_output(&b, el, "ey", BRAID_DTYPE_FLOAT, 1, D6);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y", "if");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_node(&b, g, "Neg", "y", "z", "neg");
    mb_output(&b, g, "z", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    float x[] = {1, 2, 3};
    unsigned char t = 1, f = 0;
    braid_tensor in[2] = {{BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {3}, x}};
    check_all(m, 2, in, 1, D3, (float[]){-1, -2, -3}, 1, D3, x, __LINE__);
    in[0].data = &f;
    check_all(m, 2, in, 1, D6, (float[]){-1, -2, -3, -1, -2, -3}, 1, D6, (float[]){1, 2, 3, 1, 2, 3}, __LINE__);
    /* Two stages: the If's output shape is read when the first ends. */
    braid_session *s = NULL;
    CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK);
    braid_tensor out[2];
    CHECK_EQ_INT(braid_session_run(s, 2, in, 2, out), BRAID_OK);
    const bd_prepared *p = NULL;
    bd_err e = {0};
    CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
    CHECK_EQ_INT(p->inst.n_later, 1);
    CHECK_EQ_INT(p->n_bvals, 1);
    CHECK(p->next[0] && p->next[0]->inst.n_later == 0);
    braid_session_destroy(s);
    braid_model_destroy(m);
    mb_free(&b);
}

/* A condition known when the plan is made (an initializer): one branch
 * planned, no read of the condition. Also a nested If two levels down that
 * reads a value of the main graph: y = c2 ? x + one : x - one. */
static void test_if_const_and_nested(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    Onnx__GraphProto *ith = mb_graph(&b, "ithen"), *iel = mb_graph(&b, "ielse");
    unsigned char ct = 1;
    float one = 1;
    mb_input(&b, g, "c2", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D3);
    mb_init(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL, &ct, 1);
    mb_init(&b, g, "one", BRAID_DTYPE_FLOAT, 0, NULL, &one, 4);
    mb_node(&b, ith, "Add", "x,one", "iy", "iadd");
    mb_output(&b, ith, "iy", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, iel, "Sub", "x,one", "iz", "isub");
    mb_output(&b, iel, "iz", BRAID_DTYPE_FLOAT, 1, D3);
    Onnx__NodeProto *inner = mb_node(&b, th, "If", "c2", "ty", "inner");
    mb_attr_g(&b, inner, "then_branch", ith);
    mb_attr_g(&b, inner, "else_branch", iel);
    mb_output(&b, th, "ty", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, el, "Neg", "x", "ey", NULL);
    mb_output(&b, el, "ey", BRAID_DTYPE_FLOAT, 1, D3);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y", "outer");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D3);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    /* The outer If captures x, one and c2 for its then branch, whose If
     * captures x and one again: explicit at every level. */
    const bd_graph *bg = bd_model_graph(m);
    const bd_graph *tg = bd_node_subgraph(&bg->nodes[0], "then_branch");
    CHECK(tg != NULL);
    CHECK_EQ_INT(bg->nodes[0].n_implicit, 3);
    CHECK_EQ_INT(tg->n_captures, 3);
    CHECK_EQ_INT(tg->nodes[0].n_implicit, 2);
    float x[] = {1, 2, 3};
    unsigned char t = 1, f = 0;
    braid_tensor in[2] = {{BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {3}, x}};
    check_all(m, 2, in, 1, D3, (float[]){2, 3, 4}, 0, NULL, NULL, __LINE__);
    in[0].data = &f;
    check_all(m, 2, in, 1, D3, (float[]){0, 1, 2}, 0, NULL, NULL, __LINE__);
    /* The outer If is gone from the plan: its then branch took its place, so
     * the inner If is a node of the model's own plan (its condition is only
     * known at run time), and the else branch was never planned. */
    braid_session *s = NULL;
    CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK);
    braid_tensor out;
    CHECK_EQ_INT(braid_session_run(s, 2, in, 1, &out), BRAID_OK);
    const bd_prepared *p = NULL;
    bd_err e = {0};
    CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
    CHECK(p->inst.flat != NULL);
    CHECK_EQ_INT(p->g->n_nodes, 1);
    CHECK_EQ_INT(p->n_live, 1);
    CHECK(!strcmp(p->inst.node[p->live[0]]->name, "inner"));
    CHECK_EQ_INT(bd_nest_plan_count(p->nest[0], 1), 1); /* c2 false: the inner else branch */
    CHECK_EQ_INT(bd_nest_plan_count(p->nest[0], 0), 0);
    braid_session_destroy(s);
    braid_model_destroy(m);
    mb_free(&b);
}

/* A known condition whose branch works beside the rest of the graph: the
 * branch's two nodes join the model's plan, and with two streams the outer
 * Exp runs on a stream of its own beside them. Branch outputs that are a
 * capture and a constant of the branch go out through Identity nodes. */
static void test_if_inline_concurrent(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    unsigned char ct = 1;
    int64_t big[] = {256, 256};
    float kc[] = {7, 8, 9};
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 2, big);
    mb_init(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL, &ct, 1);
    mb_node(&b, g, "Exp", "x", "ex", "outer_exp");
    mb_node(&b, th, "Neg", "x", "t1", "then_neg");
    mb_node(&b, th, "Tanh", "t1", "t2", "then_tanh");
    mb_init(&b, th, "kc", BRAID_DTYPE_FLOAT, 1, D3, kc, sizeof kc);
    mb_output(&b, th, "t2", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, th, "x", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, th, "kc", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, el, "Sigmoid", "x", "e1", NULL);
    mb_output(&b, el, "e1", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, el, "e1", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, el, "kc2", BRAID_DTYPE_FLOAT, 1, D3);
    mb_init(&b, el, "kc2", BRAID_DTYPE_FLOAT, 1, D3, kc, sizeof kc);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y,xb,k", "if");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_node(&b, g, "Add", "ex,y", "z", "join");
    mb_output(&b, g, "z", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, g, "xb", BRAID_DTYPE_FLOAT, 2, big);
    mb_output(&b, g, "k", BRAID_DTYPE_FLOAT, 1, D3);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    float *x = malloc(256 * 256 * sizeof *x);
    for (int i = 0; i < 256 * 256; i++) x[i] = (float)(i % 7) * 0.25f - 0.75f;
    braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 2, {256, 256}, x}};
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    braid_options_set_max_streams(o, 2);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    braid_tensor out[3];
    CHECK_EQ_INT(braid_session_run(s, 1, in, 3, out), BRAID_OK);
    int bad = 0;
    for (int i = 0; i < 256 * 256; i++) {
        float want = expf(x[i]) + tanhf(-x[i]);
        bad += fabsf(((float *)out[0].data)[i] - want) > 1e-6f * (1 + fabsf(want));
        bad += ((float *)out[1].data)[i] != x[i];
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(!memcmp(out[2].data, kc, sizeof kc));
    const bd_prepared *p = NULL;
    bd_err e = {0};
    CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
    /* Exp, Neg, Tanh, two Identities (x and kc given back), Add; no If. */
    CHECK_EQ_INT(p->n_live, 5); /* the Identity of the constant kc folds */
    int streams_of_branch = -1, stream_of_exp = -1;
    for (int i = 0; i < p->n_live; i++) {
        const char *nm = p->inst.node[p->live[i]]->name;
        CHECK(strcmp(p->inst.node[p->live[i]]->op_type, "If") != 0);
        if (!strcmp(nm, "then_tanh")) streams_of_branch = p->plan.node_stream[i];
        if (!strcmp(nm, "outer_exp")) stream_of_exp = p->plan.node_stream[i];
    }
    CHECK_EQ_INT(p->plan.n_streams, 2);
    CHECK(streams_of_branch >= 0 && stream_of_exp >= 0 && streams_of_branch != stream_of_exp);
    braid_session_destroy(s);
    braid_options_destroy(o);
    free(x);
    braid_model_destroy(m);
    mb_free(&b);
}

static void test_if_errors(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *th = mb_graph(&b, "then"), *el = mb_graph(&b, "else");
    mb_input(&b, g, "c", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, th, "Add", "x,nope", "ty", "add");
    mb_output(&b, th, "ty", BRAID_DTYPE_FLOAT, 1, D3);
    mb_node(&b, el, "Neg", "x", "ey", NULL);
    mb_output(&b, el, "ey", BRAID_DTYPE_FLOAT, 1, D3);
    Onnx__NodeProto *n = mb_node(&b, g, "If", "c", "y", "if");
    mb_attr_g(&b, n, "then_branch", th);
    mb_attr_g(&b, n, "else_branch", el);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D3);
    mb_model_init(&b, &mm, g, 17);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_ERR_INVALID_MODEL);
    CHECK(!strcmp(braid_last_error(), "node 'if' (If): subgraph 'then_branch': node 'add' (Add): input 'nope' is not "
                                      "a graph input, an initializer or the output of any node, in its graph or an "
                                      "enclosing one"));
    /* Branches with different output counts. */
    th->node[0]->input[1] = "x";
    mb_output(&b, el, "x", BRAID_DTYPE_FLOAT, 1, D3);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(braid_last_error(), "node 'if' (If): subgraph 'else_branch' has 2 outputs, 1 expected");
    /* A condition that is not bool: DTYPE when the plan is made. */
    el->n_output = 1;
    g->input[0] = mb_vi(&b, "c", BRAID_DTYPE_FLOAT, 0, NULL);
    LOAD_OK(&b, &mm, &m);
    float cf = 1, x[] = {1, 2, 3};
    braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 0, {0}, &cf}, {BRAID_DTYPE_FLOAT, 1, {3}, x}};
    result r = run_model(m, 1, 0, 2, in);
    CHECK_EQ_INT(r.st, BRAID_ERR_DTYPE);
    CHECK_CONTAINS(r.msg, "node 'if' (If): the condition has dtype float32, it must be bool");
    result_free(&r);
    braid_model_destroy(m);
    mb_free(&b);
}

/* ---- Loop -------------------------------------------------------------------------- */

/* A Loop whose body adds x (captured) to s and emits s as a scan output;
 * the body's condition is iter < lim (lim captured). M and cond are graph
 * inputs named "M" and "cond", or "" (left out). */
static Onnx__GraphProto *loop_model(mb *b, mb_model *mm, const char *M, const char *cond, int m_const, int64_t mval)
{
    Onnx__GraphProto *g = mb_graph(b, "main"), *body = mb_graph(b, "body");
    float s0[] = {0, 0};
    int64_t lim = 2;
    if (M[0] && !m_const) mb_input(b, g, "M", BRAID_DTYPE_INT64, 0, NULL);
    if (M[0] && m_const) mb_init(b, g, "M", BRAID_DTYPE_INT64, 0, NULL, &mval, 8);
    if (cond[0]) mb_input(b, g, "cond", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(b, g, "x", BRAID_DTYPE_FLOAT, 1, D2);
    mb_init(b, g, "s0", BRAID_DTYPE_FLOAT, 1, D2, s0, sizeof s0);
    mb_init(b, g, "lim", BRAID_DTYPE_INT64, 0, NULL, &lim, 8);
    mb_input(b, body, "i", BRAID_DTYPE_INT64, 0, NULL);
    mb_input(b, body, "cin", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(b, body, "s", BRAID_DTYPE_FLOAT, 1, D2);
    mb_node(b, body, "Less", "i,lim", "cout", NULL);
    mb_node(b, body, "Add", "s,x", "s2", "acc");
    mb_node(b, body, "Identity", "s2", "scan", NULL);
    mb_output(b, body, "cout", BRAID_DTYPE_BOOL, 0, NULL);
    mb_output(b, body, "s2", BRAID_DTYPE_FLOAT, 1, D2);
    mb_output(b, body, "scan", BRAID_DTYPE_FLOAT, 1, D2);
    char ins[64];
    snprintf(ins, sizeof ins, "%s,%s,s0", M, cond);
    Onnx__NodeProto *n = mb_node(b, g, "Loop", ins, "s_final,scans", "loop");
    mb_attr_g(b, n, "body", body);
    mb_output(b, g, "s_final", BRAID_DTYPE_FLOAT, 1, D2);
    mb_output(b, g, "scans", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(b, mm, g, 17);
    return g;
}

static void test_loop_forms(void)
{
    float x[] = {1, 2};
    unsigned char t = 1, f = 0;
    int64_t M = 4, M0 = 0, M10 = 10, M2 = 2;
    /* M only (a for loop: the body's condition is ignored): 4 iterations. */
    {
        mb b = {0};
        mb_model mm;
        braid_model *m = NULL;
        loop_model(&b, &mm, "M", "", 0, 0);
        LOAD_OK(&b, &mm, &m);
        braid_tensor in[2] = {{BRAID_DTYPE_INT64, 0, {0}, &M}, {BRAID_DTYPE_FLOAT, 1, {2}, x}};
        check_all(m, 2, in, 1, D2, (float[]){4, 8}, 2, (int64_t[]){4, 2}, (float[]){1, 2, 2, 4, 3, 6, 4, 8}, __LINE__);
        /* No iteration: s stays s0, the scan output has 0 rows of 2. */
        in[0].data = &M0;
        check_all(m, 2, in, 1, D2, (float[]){0, 0}, 2, (int64_t[]){0, 2}, NULL, __LINE__);
        braid_model_destroy(m);
        mb_free(&b);
    }
    /* M known when the plan is made: the scan output is planned [3, 2]. */
    {
        mb b = {0};
        mb_model mm;
        braid_model *m = NULL;
        loop_model(&b, &mm, "M", "", 1, 3);
        LOAD_OK(&b, &mm, &m);
        braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 1, {2}, x}};
        check_all(m, 1, in, 1, D2, (float[]){3, 6}, 2, (int64_t[]){3, 2}, (float[]){1, 2, 2, 4, 3, 6}, __LINE__);
        braid_model_destroy(m);
        mb_free(&b);
    }
    /* cond only (a while loop): the body says iter < 2, so iterations 0, 1
     * and 2 run (the last one says stop). cond false: none. */
    {
        mb b = {0};
        mb_model mm;
        braid_model *m = NULL;
        loop_model(&b, &mm, "", "cond", 0, 0);
        LOAD_OK(&b, &mm, &m);
        braid_tensor in[2] = {{BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {2}, x}};
        check_all(m, 2, in, 1, D2, (float[]){3, 6}, 2, (int64_t[]){3, 2}, (float[]){1, 2, 2, 4, 3, 6}, __LINE__);
        in[0].data = &f;
        check_all(m, 2, in, 1, D2, (float[]){0, 0}, 2, (int64_t[]){0, 2}, NULL, __LINE__);
        braid_model_destroy(m);
        mb_free(&b);
    }
    /* M and cond: whichever stops first. */
    {
        mb b = {0};
        mb_model mm;
        braid_model *m = NULL;
        loop_model(&b, &mm, "M", "cond", 0, 0);
        LOAD_OK(&b, &mm, &m);
        braid_tensor in[3] = {{BRAID_DTYPE_INT64, 0, {0}, &M10}, {BRAID_DTYPE_BOOL, 0, {0}, &t}, {BRAID_DTYPE_FLOAT, 1, {2}, x}};
        check_all(m, 3, in, 1, D2, (float[]){3, 6}, 2, (int64_t[]){3, 2}, (float[]){1, 2, 2, 4, 3, 6}, __LINE__);
        in[0].data = &M2;
        check_all(m, 3, in, 1, D2, (float[]){2, 4}, 2, (int64_t[]){2, 2}, (float[]){1, 2, 2, 4}, __LINE__);
        /* The body's plan is made once for all iterations and runs. */
        braid_session *s = NULL;
        CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK);
        braid_tensor out[2];
        CHECK_EQ_INT(braid_session_run(s, 3, in, 2, out), BRAID_OK);
        CHECK_EQ_INT(braid_session_run(s, 3, in, 2, out), BRAID_OK);
        const bd_prepared *p = NULL;
        bd_err e = {0};
        CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
        CHECK_EQ_INT(bd_nest_plan_count(p->nest[0], 0), 1);
        braid_session_destroy(s);
        braid_model_destroy(m);
        mb_free(&b);
    }
    /* Neither: only the session's limit stops it, with LIMIT naming the node. */
    {
        mb b = {0};
        mb_model mm;
        braid_model *m = NULL;
        loop_model(&b, &mm, "", "", 0, 0);
        LOAD_OK(&b, &mm, &m);
        braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 1, {2}, x}};
        result r = run_model(m, 1, 5, 1, in);
        CHECK_EQ_INT(r.st, BRAID_ERR_LIMIT);
        CHECK(!strcmp(r.msg, "node 'loop' (Loop): ran past the session's loop limit of 5 iterations "
                             "(braid_options_set_loop_limit, --loop-limit)"));
        result_free(&r);
        braid_model_destroy(m);
        mb_free(&b);
    }
}

/* Loop-carried values that swap (a, b) -> (b, a), and one that grows by
 * one element per iteration (s = Concat(s, float(i))). M = 3. */
static void test_loop_carried(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *body = mb_graph(&b, "body");
    int64_t M = 3, ax[] = {0};
    float a0 = 1, b0 = 2, s0 = -1;
    mb_init(&b, g, "M", BRAID_DTYPE_INT64, 0, NULL, &M, 8);
    mb_input(&b, g, "a0", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_init(&b, g, "b0", BRAID_DTYPE_FLOAT, 0, NULL, &b0, 4);
    mb_init(&b, g, "s0", BRAID_DTYPE_FLOAT, 1, D1, &s0, 4);
    mb_init(&b, g, "ax", BRAID_DTYPE_INT64, 1, D1, ax, 8);
    mb_input(&b, body, "i", BRAID_DTYPE_INT64, 0, NULL);
    mb_input(&b, body, "cin", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, body, "a", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_input(&b, body, "b", 0, -1, NULL); /* untyped: its type comes from the Loop */
    mb_input(&b, body, "s", BRAID_DTYPE_FLOAT, -1, NULL);
    Onnx__NodeProto *cast = mb_node(&b, body, "Cast", "i", "fi", NULL);
    mb_attr_i(&b, cast, "to", BRAID_DTYPE_FLOAT);
    mb_node(&b, body, "Unsqueeze", "fi,ax", "fi1", NULL);
    Onnx__NodeProto *cat = mb_node(&b, body, "Concat", "s,fi1", "s2", NULL);
    mb_attr_i(&b, cat, "axis", 0);
    mb_output(&b, body, "cin", 0, -1, NULL);
    mb_output(&b, body, "b", 0, -1, NULL);
    mb_output(&b, body, "a", 0, -1, NULL);
    mb_output(&b, body, "s2", 0, -1, NULL);
    Onnx__NodeProto *n = mb_node(&b, g, "Loop", "M,,a0,b0,s0", "a,b,s", "loop");
    mb_attr_g(&b, n, "body", body);
    mb_node(&b, g, "Neg", "s", "ns", NULL); /* reads the grown value: a later stage */
    mb_output(&b, g, "a", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_output(&b, g, "b", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_output(&b, g, "ns", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 0, {0}, &a0}};
    for (size_t k = 0; k < sizeof STREAMS / sizeof *STREAMS; k++) {
        result r = run_model(m, STREAMS[k], 0, 1, in);
        check_f(&r, 0, 0, NULL, (float[]){2}, __LINE__); /* three swaps */
        check_f(&r, 1, 0, NULL, (float[]){1}, __LINE__);
        check_f(&r, 2, 1, (int64_t[]){4}, (float[]){1, -0.0f, -1, -2}, __LINE__);
        result_free(&r);
    }
    braid_model_destroy(m);
    mb_free(&b);
}

/* Paddle's Loop bodies: the iteration number and condition declared [1],
 * a carried value declared [5] that enters as [1] and grows: declared
 * shapes of a subgraph's inputs are hints (as onnxruntime takes them), the
 * body sees [1]-shaped formals, s = [-1, 0, 1, 2]. */
static void test_loop_declared_hints(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *body = mb_graph(&b, "body");
    int64_t M = 3;
    float s0 = -1;
    mb_init(&b, g, "M", BRAID_DTYPE_INT64, 0, NULL, &M, 8);
    mb_input(&b, g, "s0", BRAID_DTYPE_FLOAT, 1, D1);
    mb_input(&b, body, "i", BRAID_DTYPE_INT64, 1, D1);
    mb_input(&b, body, "cin", BRAID_DTYPE_BOOL, 1, D1);
    mb_input(&b, body, "s", BRAID_DTYPE_FLOAT, 1, (int64_t[]){5});
    Onnx__NodeProto *cast = mb_node(&b, body, "Cast", "i", "fi", NULL);
    mb_attr_i(&b, cast, "to", BRAID_DTYPE_FLOAT);
    Onnx__NodeProto *cat = mb_node(&b, body, "Concat", "s,fi", "s2", NULL);
    mb_attr_i(&b, cat, "axis", 0);
    mb_output(&b, body, "cin", 0, -1, NULL);
    mb_output(&b, body, "s2", 0, -1, NULL);
    Onnx__NodeProto *n = mb_node(&b, g, "Loop", "M,,s0", "s", "loop");
    mb_attr_g(&b, n, "body", body);
    mb_output(&b, g, "s", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 1, {1}, &s0}};
    check_all(m, 1, in, 1, (int64_t[]){4}, (float[]){-1, 0, 1, 2}, 0, NULL, NULL, __LINE__);
    braid_model_destroy(m);
    mb_free(&b);
}

/* A Loop in a Loop: the outer runs 3 times, the inner 2 times, each inner
 * iteration adds x (captured two levels up): s = 6x. */
static void test_loop_nested(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *ob = mb_graph(&b, "outer"), *ib = mb_graph(&b, "inner");
    int64_t M3 = 3, M2 = 2;
    float s0[] = {0, 0};
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D2);
    mb_init(&b, g, "M3", BRAID_DTYPE_INT64, 0, NULL, &M3, 8);
    mb_init(&b, g, "M2", BRAID_DTYPE_INT64, 0, NULL, &M2, 8);
    mb_init(&b, g, "s0", BRAID_DTYPE_FLOAT, 1, D2, s0, sizeof s0);
    mb_input(&b, ib, "j", BRAID_DTYPE_INT64, 0, NULL);
    mb_input(&b, ib, "jc", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, ib, "t", BRAID_DTYPE_FLOAT, 1, D2);
    mb_node(&b, ib, "Add", "t,x", "t2", "inner_add");
    mb_output(&b, ib, "jc", BRAID_DTYPE_BOOL, 0, NULL);
    mb_output(&b, ib, "t2", BRAID_DTYPE_FLOAT, 1, D2);
    mb_input(&b, ob, "i", BRAID_DTYPE_INT64, 0, NULL);
    mb_input(&b, ob, "ic", BRAID_DTYPE_BOOL, 0, NULL);
    mb_input(&b, ob, "s", BRAID_DTYPE_FLOAT, 1, D2);
    Onnx__NodeProto *in_loop = mb_node(&b, ob, "Loop", "M2,,s", "s2", "inner");
    mb_attr_g(&b, in_loop, "body", ib);
    mb_output(&b, ob, "ic", BRAID_DTYPE_BOOL, 0, NULL);
    mb_output(&b, ob, "s2", BRAID_DTYPE_FLOAT, 1, D2);
    Onnx__NodeProto *n = mb_node(&b, g, "Loop", "M3,,s0", "s", "outer");
    mb_attr_g(&b, n, "body", ob);
    mb_output(&b, g, "s", BRAID_DTYPE_FLOAT, 1, D2);
    mb_model_init(&b, &mm, g, 17);
    LOAD_OK(&b, &mm, &m);
    float x[] = {1, 10};
    braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 1, {2}, x}};
    check_all(m, 1, in, 1, D2, (float[]){6, 60}, 0, NULL, NULL, __LINE__);
    braid_model_destroy(m);
    mb_free(&b);
}

/* ---- Scan -------------------------------------------------------------------------- */

/* Opset 9+: X [2, 3] scanned along axis 1 (written -1), the body sums the
 * columns into s and emits s, written along output axis 1. */
static void test_scan_axes(void)
{
    for (int rev_in = 0; rev_in < 2; rev_in++)
        for (int rev_out = 0; rev_out < 2; rev_out++) {
            mb b = {0};
            mb_model mm;
            braid_model *m = NULL;
            Onnx__GraphProto *g = mb_graph(&b, "main"), *body = mb_graph(&b, "body");
            float s0[] = {0, 0};
            int64_t dx[] = {2, 3}, ai[] = {-1}, ao[] = {1}, di[] = {rev_in}, dout[] = {rev_out};
            mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 2, dx);
            mb_init(&b, g, "s0", BRAID_DTYPE_FLOAT, 1, D2, s0, sizeof s0);
            mb_input(&b, body, "s", BRAID_DTYPE_FLOAT, 1, D2);
            mb_input(&b, body, "xt", BRAID_DTYPE_FLOAT, 1, D2);
            mb_node(&b, body, "Add", "s,xt", "s2", NULL);
            mb_node(&b, body, "Identity", "s2", "y", NULL);
            mb_output(&b, body, "s2", BRAID_DTYPE_FLOAT, 1, D2);
            mb_output(&b, body, "y", BRAID_DTYPE_FLOAT, 1, D2);
            Onnx__NodeProto *n = mb_node(&b, g, "Scan", "s0,X", "sf,Y", "scan");
            mb_attr_g(&b, n, "body", body);
            mb_attr_i(&b, n, "num_scan_inputs", 1);
            mb_attr_is(&b, n, "scan_input_axes", 1, ai);
            mb_attr_is(&b, n, "scan_output_axes", 1, ao);
            mb_attr_is(&b, n, "scan_input_directions", 1, di);
            mb_attr_is(&b, n, "scan_output_directions", 1, dout);
            mb_output(&b, g, "sf", BRAID_DTYPE_FLOAT, 1, D2);
            mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 2, dx);
            mb_model_init(&b, &mm, g, 16);
            LOAD_OK(&b, &mm, &m);
            float X[] = {1, 2, 3, 10, 20, 30};
            braid_tensor in[1] = {{BRAID_DTYPE_FLOAT, 2, {2, 3}, X}};
            /* Forward: partial sums 1, 3, 6 (and 10, 30, 60); reversed input:
             * 3, 5, 6. A reversed output writes step t at column 2 - t. */
            float want[4][6] = {{1, 3, 6, 10, 30, 60}, {6, 3, 1, 60, 30, 10}, {3, 5, 6, 30, 50, 60}, {6, 5, 3, 60, 50, 30}};
            check_all(m, 1, in, 1, D2, (float[]){6, 60}, 2, dx, want[rev_in * 2 + rev_out], __LINE__);
            braid_model_destroy(m);
            mb_free(&b);
        }
}

/* Opset 8: a batch axis, directions, sequence_lens left out. Two rows of
 * [3, 1]: running sums per row. */
static void test_scan_batch(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *body = mb_graph(&b, "body");
    int64_t dx[] = {2, 3, 1}, ds[] = {2, 1}, dir[] = {1};
    mb_input(&b, g, "s0", BRAID_DTYPE_FLOAT, 2, ds);
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 3, dx);
    mb_input(&b, body, "s", BRAID_DTYPE_FLOAT, 1, D1);
    mb_input(&b, body, "xt", BRAID_DTYPE_FLOAT, 1, D1);
    mb_node(&b, body, "Add", "s,xt", "s2", NULL);
    mb_node(&b, body, "Identity", "s2", "y", NULL);
    mb_output(&b, body, "s2", BRAID_DTYPE_FLOAT, 1, D1);
    mb_output(&b, body, "y", BRAID_DTYPE_FLOAT, 1, D1);
    Onnx__NodeProto *n = mb_node(&b, g, "Scan", ",s0,X", "sf,Y", "scan8");
    mb_attr_g(&b, n, "body", body);
    mb_attr_i(&b, n, "num_scan_inputs", 1);
    mb_attr_is(&b, n, "directions", 1, dir);
    mb_output(&b, g, "sf", BRAID_DTYPE_FLOAT, 2, ds);
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 3, dx);
    mb_model_init(&b, &mm, g, 8);
    LOAD_OK(&b, &mm, &m);
    float s0[] = {100, 200}, X[] = {1, 2, 3, 4, 5, 6};
    braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 2, {2, 1}, s0}, {BRAID_DTYPE_FLOAT, 3, {2, 3, 1}, X}};
    /* Reversed: row 0 adds 3, 2, 1 to 100; row 1 adds 6, 5, 4 to 200. */
    check_all(m, 2, in, 2, ds, (float[]){106, 215}, 3, dx, (float[]){103, 105, 106, 206, 211, 215}, __LINE__);
    braid_model_destroy(m);
    mb_free(&b);
}

static void test_scan_errors(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main"), *body = mb_graph(&b, "body");
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 1, D3);
    mb_input(&b, g, "Z", BRAID_DTYPE_FLOAT, 1, D2);
    mb_input(&b, body, "xt", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_input(&b, body, "zt", BRAID_DTYPE_FLOAT, 0, NULL);
    mb_node(&b, body, "Add", "xt,zt", "y", NULL);
    mb_output(&b, body, "y", BRAID_DTYPE_FLOAT, 0, NULL);
    Onnx__NodeProto *n = mb_node(&b, g, "Scan", "X,Z", "Y", "scan");
    mb_attr_g(&b, n, "body", body);
    mb_attr_i(&b, n, "num_scan_inputs", 2);
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 11);
    LOAD_OK(&b, &mm, &m);
    float X[3] = {0}, Z[2] = {0};
    braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 1, {3}, X}, {BRAID_DTYPE_FLOAT, 1, {2}, Z}};
    result r = run_model(m, 1, 0, 2, in);
    CHECK_EQ_INT(r.st, BRAID_ERR_SHAPE);
    CHECK(!strcmp(r.msg, "node 'scan' (Scan): scan input 1 has 2 steps along its axis, scan input 0 has 3"));
    result_free(&r);
    braid_model_destroy(m);
    /* num_scan_inputs past the inputs: refused at load. */
    n->attribute[1]->i = 3;
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(braid_last_error(), "node 'scan' (Scan): attribute 'num_scan_inputs' is 3; it must be 1 to 64");
    mb_free(&b);
}

int main(void)
{
    test_if_runtime();
    test_if_union();
    test_if_unsuited_branch();
    test_if_const_and_nested();
    test_if_inline_concurrent();
    test_if_errors();
    test_loop_forms();
    test_loop_carried();
    test_loop_declared_hints();
    test_loop_nested();
    test_scan_axes();
    test_scan_batch();
    test_scan_errors();
    return check_done();
}
