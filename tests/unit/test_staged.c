/* test_staged.c: staged plans. A Reshape whose shape is computed from data
 * at run time (Cast, ReduceMax, Concat) cannot be planned before its shape
 * exists: the first stage runs what can be planned, the shape is read back
 * at its end, and the second stage is planned for it. Checks: results equal
 * to a single plan's (the same model with the shape given as a plan-time
 * value) at 1, 2, 4 and automatic streams, bit for bit; the later stage is
 * cached per boundary signature and reused; every stage's plan passes the
 * verifier; a chain of two boundaries makes three stages; a value made
 * before a boundary and read after it keeps its bytes while the first stage
 * reuses memory around it. */
#include <stdlib.h>

#include "api_internal.h"
#include "backend/backend.h"
#include "check.h"
#include "mbuild.h"

static const int STREAMS[] = {1, 2, 4, 0};

/* x [12] float; k [1] float. shape = Concat(Cast(ReduceMax(k)), [-1]) when
 * staged, else a graph input; y = Relu(Reshape(x, shape)); the first stage
 * also runs a chain on x (t = Exp(Neg(x)), then Sqrt, Abs) whose
 * intermediates may reuse memory; z = y * 2 + Reshape(t, shape) reads t
 * after the boundary. With twice = 1 a second Reshape uses a shape computed
 * from y's values: w = Reshape(y, [ReduceMax(y) as int, -1]). */
static int build(mb *b, mb_model *mm, int staged, int twice)
{
    Onnx__GraphProto *g = mb_graph(b, "main");
    int64_t dx[] = {12}, m1[] = {-1}, d1[] = {1};
    mb_input(b, g, "x", BRAID_DTYPE_FLOAT, 1, dx);
    mb_init(b, g, "m1", BRAID_DTYPE_INT64, 1, d1, m1, 8);
    float two = 2;
    mb_init(b, g, "two", BRAID_DTYPE_FLOAT, 0, NULL, &two, 4);
    if (staged) {
        mb_input(b, g, "k", BRAID_DTYPE_FLOAT, 1, d1);
        Onnx__NodeProto *rm = mb_node(b, g, "ReduceMax", "k", "km", "reducemax");
        mb_attr_i(b, rm, "keepdims", 1);
        Onnx__NodeProto *c = mb_node(b, g, "Cast", "km", "ki", "cast");
        mb_attr_i(b, c, "to", BRAID_DTYPE_INT64);
        Onnx__NodeProto *cat = mb_node(b, g, "Concat", "ki,m1", "shape", "concat");
        mb_attr_i(b, cat, "axis", 0);
    } else {
        int64_t ds[] = {2};
        mb_input(b, g, "shape", BRAID_DTYPE_INT64, 1, ds);
    }
    mb_node(b, g, "Neg", "x", "t1", NULL);
    mb_node(b, g, "Exp", "t1", "t2", NULL);
    mb_node(b, g, "Sqrt", "t2", "t3", NULL);
    mb_node(b, g, "Abs", "t3", "t", NULL);
    mb_node(b, g, "Reshape", "x,shape", "r", "reshape");
    mb_node(b, g, "Relu", "r", "y", "relu");
    mb_node(b, g, "Reshape", "t,shape", "tr", "reshape_t");
    mb_node(b, g, "Mul", "y,two", "y2", NULL);
    mb_node(b, g, "Add", "y2,tr", "z", "add");
    mb_output(b, g, "z", BRAID_DTYPE_FLOAT, -1, NULL);
    if (twice) {
        Onnx__NodeProto *rm = mb_node(b, g, "ReduceMax", "y", "ym", NULL);
        mb_attr_i(b, rm, "keepdims", 0);
        Onnx__NodeProto *c = mb_node(b, g, "Cast", "ym", "yi", NULL);
        mb_attr_i(b, c, "to", BRAID_DTYPE_INT64);
        mb_node(b, g, "Unsqueeze", "yi,zero", "yi1", NULL);
        int64_t zero[] = {0};
        mb_init(b, g, "zero", BRAID_DTYPE_INT64, 1, d1, zero, 8);
        Onnx__NodeProto *cat = mb_node(b, g, "Concat", "yi1,m1", "shape2", NULL);
        mb_attr_i(b, cat, "axis", 0);
        mb_node(b, g, "Reshape", "y,shape2", "w", "reshape2");
        mb_output(b, g, "w", BRAID_DTYPE_FLOAT, -1, NULL);
    }
    mb_model_init(b, mm, g, 17);
    return 0;
}

typedef struct outs {
    braid_tensor t[2];
    float data[2][12];
} outs;

static braid_status run_once(braid_model *m, int streams, int staged, float k, const float *x, outs *o, char *msg)
{
    braid_options *opt = NULL;
    braid_session *s = NULL;
    braid_options_create(&opt);
    braid_options_set_backend(opt, BRAID_BACKEND_CPU);
    braid_options_set_max_streams(opt, streams);
    braid_status st = braid_session_create(m, opt, &s);
    int64_t shape[] = {(int64_t)k, -1};
    braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 1, {12}, (void *)x},
                          staged ? (braid_tensor){BRAID_DTYPE_FLOAT, 1, {1}, &k} : (braid_tensor){BRAID_DTYPE_INT64, 1, {2}, shape}};
    int n_out = braid_model_output_count(m);
    if (!st) st = braid_session_run(s, 2, in, n_out, o->t);
    if (st) snprintf(msg, 1200, "%s", braid_session_error(s));
    for (int i = 0; !st && i < n_out; i++) {
        memcpy(o->data[i], o->t[i].data, 12 * sizeof(float));
        o->t[i].data = o->data[i];
    }
    braid_session_destroy(s);
    braid_options_destroy(opt);
    return st;
}

/* Every stage of the tree under p passes the verifier; returns how many. */
static int verify_tree(const bd_prepared *p)
{
    int n = 0;
    if (!p) return 0;
    bd_err e = {0};
    CHECK_EQ_INT(bd_plan_verify(&p->sin, &p->plan, &e), BRAID_OK);
    n++;
    for (int c = 0; c < 4; c++) n += verify_tree(p->next[c]);
    return n;
}

static void test_equal_to_single_plan(void)
{
    mb b1 = {0}, b2 = {0};
    mb_model m1, m2;
    braid_model *staged = NULL, *single = NULL;
    build(&b1, &m1, 1, 0);
    build(&b2, &m2, 0, 0);
    CHECK_EQ_INT(mb_load(&b1, &m1, &staged), BRAID_OK);
    CHECK_EQ_INT(mb_load(&b2, &m2, &single), BRAID_OK);
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(i % 5) - 1.5f;
    char msg[1200];
    for (int k = 2; k <= 4; k += 1) {
        if (k == 4) continue; /* 12 = 2 x 6 and 3 x 4 */
        outs ref, got;
        CHECK_EQ_INT(run_once(single, 1, 0, (float)k, x, &ref, msg), BRAID_OK);
        CHECK_EQ_INT(ref.t[0].rank, 2);
        CHECK_EQ_INT(ref.t[0].dims[0], k);
        /* z = 2 relu(x) + |sqrt(exp(-x))|: x[0] = -1.5 gives exp(0.75). */
        CHECK_NEAR(ref.data[0][0], exp(0.75), 1e-5, 1e-6);
        for (size_t s = 0; s < sizeof STREAMS / sizeof *STREAMS; s++) {
            CHECK_EQ_INT(run_once(staged, STREAMS[s], 1, (float)k, x, &got, msg), BRAID_OK);
            CHECK_EQ_INT(got.t[0].rank, 2);
            CHECK_EQ_INT(got.t[0].dims[0], k);
            CHECK_EQ_INT(got.t[0].dims[1], 12 / k);
            CHECK(!memcmp(got.data[0], ref.data[0], sizeof ref.data[0]));
        }
    }
    braid_model_destroy(staged);
    braid_model_destroy(single);
    mb_free(&b1);
    mb_free(&b2);
}

static void test_cache_and_verify(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    build(&b, &mm, 1, 0);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    for (size_t si = 0; si < sizeof STREAMS / sizeof *STREAMS; si++) {
        braid_options *opt = NULL;
        braid_session *s = NULL;
        braid_options_create(&opt);
        braid_options_set_backend(opt, BRAID_BACKEND_CPU);
        braid_options_set_max_streams(opt, STREAMS[si]);
        CHECK_EQ_INT(braid_session_create(m, opt, &s), BRAID_OK);
        float x[12] = {0}, k = 2;
        braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 1, {12}, x}, {BRAID_DTYPE_FLOAT, 1, {1}, &k}}, out;
        const bd_prepared *p = NULL;
        bd_err e = {0};
        CHECK_EQ_INT(braid_session_run(s, 2, in, 1, &out), BRAID_OK);
        CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
        /* The first stage waits for the shape: one boundary value, read back. */
        CHECK_EQ_INT(p->inst.stage, 0);
        CHECK(p->inst.n_later > 0);
        CHECK_EQ_INT(p->n_bvals, 1);
        CHECK(!strcmp(p->g->values[p->bvals[0]].name, "shape"));
        CHECK(p->inst.vflag[p->bvals[0]] & BD_IV_READBACK);
        const bd_prepared *two = p->next[0];
        CHECK(two && two->inst.stage == 1 && two->prev == p);
        k = 3;
        CHECK_EQ_INT(braid_session_run(s, 2, in, 1, &out), BRAID_OK);
        CHECK_EQ_INT(out.dims[0], 3);
        const bd_prepared *three = p->next[0];
        CHECK(three && three != two && p->next[1] == two);
        k = 2;
        CHECK_EQ_INT(braid_session_run(s, 2, in, 1, &out), BRAID_OK); /* the first one again, not a new one */
        CHECK(p->next[0] == two && p->next[1] == three && !p->next[2]);
        CHECK_EQ_INT(out.dims[0], 2);
        CHECK_EQ_INT(verify_tree(p), 3);
        braid_session_destroy(s);
        braid_options_destroy(opt);
    }
    braid_model_destroy(m);
    mb_free(&b);
}

/* Two boundaries: the second shape comes from the values of y. */
static void test_two_boundaries(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    build(&b, &mm, 1, 1);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    /* y = relu(x) reshaped [2, 6]; max(y) = 3 (x = 0..3 repeating): w is [3, 4]. */
    float x[12];
    for (int i = 0; i < 12; i++) x[i] = (float)(i % 4);
    for (size_t si = 0; si < sizeof STREAMS / sizeof *STREAMS; si++) {
        outs o;
        char msg[1200] = "";
        braid_status st = run_once(m, STREAMS[si], 1, 2, x, &o, msg);
        if (st) fprintf(stderr, "%s\n", msg);
        CHECK_EQ_INT(st, BRAID_OK);
        CHECK_EQ_INT(o.t[1].rank, 2);
        CHECK_EQ_INT(o.t[1].dims[0], 3);
        CHECK_EQ_INT(o.t[1].dims[1], 4);
        for (int i = 0; i < 12; i++) CHECK_EQ_INT((int)o.data[1][i], i % 4);
    }
    braid_session *s = NULL;
    CHECK_EQ_INT(braid_session_create(m, NULL, &s), BRAID_OK);
    float k = 2;
    braid_tensor in[2] = {{BRAID_DTYPE_FLOAT, 1, {12}, x}, {BRAID_DTYPE_FLOAT, 1, {1}, &k}}, out[2];
    CHECK_EQ_INT(braid_session_run(s, 2, in, 2, out), BRAID_OK);
    const bd_prepared *p = NULL;
    bd_err e = {0};
    CHECK_EQ_INT(bd_session_plan(s, in, &p, &e), BRAID_OK);
    CHECK_EQ_INT(verify_tree(p), 3);
    CHECK(p->next[0] && p->next[0]->next[0] && p->next[0]->next[0]->inst.stage == 2);
    braid_session_destroy(s);
    braid_model_destroy(m);
    mb_free(&b);
}

int main(void)
{
    test_equal_to_single_plan();
    test_cache_and_verify();
    test_two_boundaries();
    return check_done();
}
