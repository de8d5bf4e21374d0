/* test_layout_pass.c: the plan-time layout pass (src/passes/nhwc.c). On
 * models built here it checks which values become NHWC and where the
 * conversions go (counts and names, through bd_prepare and the plan print),
 * that a lone Conv between two conversions, or a region of 3x3 Convs behind
 * a conversion, stays NCHW, that a few-channel
 * input is read in NCHW directly, that plans without the pass are untouched,
 * and that every output of a session with the pass matches the same session
 * without it (NCHW kernels, checked against onnxruntime elsewhere) within
 * 1e-5 + 1e-4 relative, bitwise the same for 1 and 2 threads; and that a
 * 3x3 stride-1 NHWC Conv gets its weights transformed for Winograd once, at
 * plan time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "mbuild.h"

#include "backend/backend.h"
#include "onnx/onnx.h"
#include "ops/conv.h"

#define F BRAID_DTYPE_FLOAT

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static void init_rand(mb *b, Onnx__GraphProto *g, const char *name, int rank, const int64_t *dims, unsigned seed)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = 0.5f * frand(&seed);
    mb_init(b, g, name, F, rank, dims, v, (size_t)n * sizeof *v);
    free(v);
}

static Onnx__NodeProto *conv(mb *b, Onnx__GraphProto *g, const char *ins, const char *out, int k, int stride, int pad,
                             int group)
{
    Onnx__NodeProto *n = mb_node(b, g, "Conv", ins, out, out);
    int64_t ks[2] = {k, k}, s[2] = {stride, stride}, p[4] = {pad, pad, pad, pad};
    mb_attr_is(b, n, "kernel_shape", 2, ks);
    mb_attr_is(b, n, "strides", 2, s);
    mb_attr_is(b, n, "pads", 4, p);
    mb_attr_i(b, n, "group", group);
    return n;
}

/* Model "block": a Conv block with every kind of op the pass rewrites:
 * x (2, 16, 9, 11) -> Conv 3x3 + Relu -> MaxPool 2x2 ceil -> two Convs ->
 * Concat -> Mul by (1, 32, 1, 1) -> Add (32, 1, 1) -> Resize x2 nearest ->
 * depthwise Conv + Sigmoid -> out2, and GlobalAveragePool -> Flatten -> out1,
 * Pad -> out3, Split -> out4, out5. */
static void model_block(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "block");
    int64_t xd[4] = {2, 16, 9, 11};
    mb_input(b, g, "x", F, 4, xd);
    int64_t w1[4] = {24, 16, 3, 3}, b1[1] = {24}, w2[4] = {24, 24, 1, 1}, w3[4] = {8, 24, 3, 3}, wd[4] = {32, 1, 3, 3};
    int64_t k1[4] = {1, 32, 1, 1}, k2[3] = {32, 1, 1}, sc[1] = {4}, pd[1] = {8}, sp[1] = {2};
    init_rand(b, g, "W1", 4, w1, 1);
    init_rand(b, g, "B1", 1, b1, 2);
    init_rand(b, g, "W2", 4, w2, 3);
    init_rand(b, g, "W3", 4, w3, 4);
    init_rand(b, g, "Wd", 4, wd, 5);
    init_rand(b, g, "K1", 4, k1, 6);
    init_rand(b, g, "K2", 3, k2, 7);
    float scales[4] = {1, 1, 2, 2};
    mb_init(b, g, "scales", F, 1, sc, scales, sizeof scales);
    int64_t pads[8] = {0, 0, 1, 2, 0, 0, 2, 1}, split[2] = {12, 20};
    mb_init(b, g, "pads", BRAID_DTYPE_INT64, 1, pd, pads, sizeof pads);
    mb_init(b, g, "split", BRAID_DTYPE_INT64, 1, sp, split, sizeof split);
    conv(b, g, "x,W1,B1", "c1", 3, 1, 1, 1);
    mb_node(b, g, "Relu", "c1", "r1", "r1");
    Onnx__NodeProto *mp = mb_node(b, g, "MaxPool", "r1", "p1", "p1");
    int64_t k22[2] = {2, 2};
    mb_attr_is(b, mp, "kernel_shape", 2, k22);
    mb_attr_is(b, mp, "strides", 2, k22);
    mb_attr_i(b, mp, "ceil_mode", 1);
    conv(b, g, "p1,W2", "c2", 1, 1, 0, 1);
    conv(b, g, "p1,W3", "c3", 3, 1, 1, 1);
    mb_attr_i(b, mb_node(b, g, "Concat", "c2,c3", "cat", "cat"), "axis", 1);
    mb_node(b, g, "Mul", "cat,K1", "m", "m");
    mb_node(b, g, "Add", "m,K2", "a", "a");
    Onnx__NodeProto *rs = mb_node(b, g, "Resize", "a,,scales", "up", "up");
    (void)rs; /* mode nearest, the default */
    conv(b, g, "up,Wd", "dw", 3, 1, 1, 32);
    mb_node(b, g, "Sigmoid", "dw", "out2", "sig");
    mb_node(b, g, "GlobalAveragePool", "out2", "gap", "gap");
    mb_node(b, g, "Flatten", "gap", "out1", "flat");
    mb_node(b, g, "Pad", "out2,pads", "out3", "pad");
    mb_attr_i(b, mb_node(b, g, "Split", "out2,split", "out4,out5", "split"), "axis", 1);
    int64_t o1[2] = {2, 32}, o2[4] = {2, 32, 10, 12}, o3[4] = {2, 32, 13, 15}, o4[4] = {2, 12, 10, 12},
            o5[4] = {2, 20, 10, 12};
    mb_output(b, g, "out1", F, 2, o1);
    mb_output(b, g, "out2", F, 4, o2);
    mb_output(b, g, "out3", F, 4, o3);
    mb_output(b, g, "out4", F, 4, o4);
    mb_output(b, g, "out5", F, 4, o5);
    mb_model_init(b, mm, g, 18);
}

/* Model "lone": x (1, 16, 6, 6) -> Conv -> Reshape -> y: the Conv alone
 * would need a conversion in and one out. */
static void model_lone(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "lone");
    int64_t xd[4] = {1, 16, 6, 6}, w[4] = {16, 16, 3, 3}, sd[1] = {2}, yd[2] = {1, 576};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "W", 4, w, 9);
    int64_t shape[2] = {1, -1};
    mb_init(b, g, "shape", BRAID_DTYPE_INT64, 1, sd, shape, sizeof shape);
    conv(b, g, "x,W", "c", 3, 1, 1, 1);
    mb_node(b, g, "Reshape", "c,shape", "y", "reshape");
    mb_output(b, g, "y", F, 2, yd);
    mb_model_init(b, mm, g, 18);
}

/* Model "panels": x (1, 16, 6, 7) -> Conv 1x1 16->96 + Relu -> Conv 3x3
 * 96->80 -> y: both Convs NHWC with W in panels of 48 channels. */
static void model_panels(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "panels");
    int64_t xd[4] = {1, 16, 6, 7}, w1[4] = {96, 16, 1, 1}, w2[4] = {80, 96, 3, 3}, b2[1] = {80}, yd[4] = {1, 80, 6, 7};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "Wa", 4, w1, 11);
    init_rand(b, g, "Wb", 4, w2, 12);
    init_rand(b, g, "Bb", 1, b2, 13);
    conv(b, g, "x,Wa", "ca", 1, 1, 0, 1);
    mb_node(b, g, "Relu", "ca", "ra", "ra");
    conv(b, g, "ra,Wb,Bb", "y", 3, 1, 1, 1);
    mb_output(b, g, "y", F, 4, yd);
    mb_model_init(b, mm, g, 18);
}

/* Model "shared": one W (96, 8, 3, 3) for a one-group Conv of x (1, 8, 6,
 * 7) and a two-group Conv of x twice over (16 channels), summed, then a 1x1
 * Conv 96->16 -> y: the first stores W in panels, the second as (KH, KW,
 * C/group, M); each must get its own form. */
static void model_shared(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "shared");
    int64_t xd[4] = {1, 8, 6, 7}, w[4] = {96, 8, 3, 3}, w1[4] = {16, 96, 1, 1}, yd[4] = {1, 16, 6, 7};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "Ws", 4, w, 14);
    init_rand(b, g, "W1", 4, w1, 15);
    conv(b, g, "x,Ws", "a", 3, 1, 1, 1);
    mb_attr_i(b, mb_node(b, g, "Concat", "x,x", "x2", "x2"), "axis", 1);
    conv(b, g, "x2,Ws", "c", 3, 1, 1, 2);
    mb_node(b, g, "Add", "a,c", "s", "s");
    conv(b, g, "s,W1", "y", 1, 1, 0, 1);
    mb_output(b, g, "y", F, 4, yd);
    mb_model_init(b, mm, g, 18);
}

/* Model "dense": x (1, 16, 8, 8) -> Conv 3x3 + Relu -> Conv 3x3 -> y: a
 * region of 3x3 Convs behind a conversion of its input stays NCHW. */
static void model_dense(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "dense");
    int64_t xd[4] = {1, 16, 8, 8}, w[4] = {16, 16, 3, 3}, yd[4] = {1, 16, 8, 8};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "W", 4, w, 13);
    init_rand(b, g, "V", 4, w, 14);
    conv(b, g, "x,W", "c", 3, 1, 1, 1);
    mb_node(b, g, "Relu", "c", "r", "relu");
    conv(b, g, "r,V", "y", 3, 1, 1, 1);
    mb_output(b, g, "y", F, 4, yd);
    mb_model_init(b, mm, g, 18);
}

/* Model "first": x (1, 3, 13, 12) -> Conv 3x3 s2 (16) + Relu -> y: the Conv
 * reads its three-channel input in NCHW directly. */
static void model_first(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "first");
    int64_t xd[4] = {1, 3, 13, 12}, w[4] = {16, 3, 3, 3}, yd[4] = {1, 16, 7, 6};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "W", 4, w, 11);
    conv(b, g, "x,W", "c", 3, 2, 1, 1);
    mb_node(b, g, "Relu", "c", "y", "relu");
    mb_output(b, g, "y", F, 4, yd);
    mb_model_init(b, mm, g, 18);
}

/* Model "wino": x (1, 16, 36, 36) -> Conv 1x1 16->32 + Relu -> Conv 3x3
 * 32->48 + bias -> y: the 3x3 gets its weights transformed for Winograd
 * when the plan is made (w_wino), the 1x1 does not. */
static void model_wino(mb *b, mb_model *mm)
{
    Onnx__GraphProto *g = mb_graph(b, "wino");
    int64_t xd[4] = {1, 16, 36, 36}, w1[4] = {32, 16, 1, 1}, w2[4] = {48, 32, 3, 3}, b2[1] = {48}, yd[4] = {1, 48, 36, 36};
    mb_input(b, g, "x", F, 4, xd);
    init_rand(b, g, "Wa", 4, w1, 21);
    init_rand(b, g, "Wb", 4, w2, 22);
    init_rand(b, g, "Bb", 1, b2, 23);
    conv(b, g, "x,Wa", "ca", 1, 1, 0, 1);
    mb_node(b, g, "Relu", "ca", "ra", "ra");
    conv(b, g, "ra,Wb,Bb", "y", 3, 1, 1, 1);
    mb_output(b, g, "y", F, 4, yd);
    mb_model_init(b, mm, g, 18);
}

/* Prepares the model for its input shape with the pass on or off; the plan
 * print goes into text (malloc'ed). */
static int plan_of(mb *b, mb_model *mm, const int64_t *xd, int layout, char **text, bd_prepared *p, bd_graph *g)
{
    size_t n = 0;
    const void *bytes = mb_bytes(b, mm, &n);
    bd_err e = {0};
    memset(g, 0, sizeof *g);
    if (bd_onnx_load(bytes, n, NULL, g, &e)) {
        fprintf(stderr, "load: %s\n", e.msg);
        return 1;
    }
    bd_tensor in = {.dtype = F, .rank = 4, .dims = {xd[0], xd[1], xd[2], xd[3]}};
    bd_prepare_opts o = {.max_streams = 1, .layout = layout};
    if (bd_prepare(g, &in, NULL, &o, p, &e)) {
        fprintf(stderr, "prepare: %s\n", e.msg);
        return 1;
    }
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    bd_stages_print(f, p, 0);
    fclose(f);
    return 0;
}

static int count(const char *s, const char *sub)
{
    int c = 0;
    for (const char *q = strstr(s, sub); q; q = strstr(q + 1, sub)) c++;
    return c;
}

/* Runs the model through sessions with and without the pass (threads 1
 * and 2) and compares every output. */
static void same_numbers(mb *b, mb_model *mm, const int64_t *xd, int n_out)
{
    braid_model *m = NULL;
    CHECK_EQ_INT(mb_load(b, mm, &m), BRAID_OK);
    if (!m) return;
    int64_t nx = xd[0] * xd[1] * xd[2] * xd[3];
    float *x = malloc((size_t)nx * sizeof *x);
    unsigned seed = 77;
    for (int64_t i = 0; i < nx; i++) x[i] = frand(&seed);
    braid_tensor in = {.dtype = F, .rank = 4, .dims = {xd[0], xd[1], xd[2], xd[3]}, .data = x};
    float *res[3][8] = {{0}};
    int64_t cnt[8] = {0};
    for (int r = 0; r < 3; r++) { /* NCHW; layout, 1 thread; layout, 2 threads */
        braid_options *o = NULL;
        braid_session *s = NULL;
        braid_options_create(&o);
        braid_options_set_backend(o, BRAID_BACKEND_CPU);
        braid_options_set_layout(o, r > 0);
        braid_options_set_threads(o, r == 2 ? 2 : 1);
        CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
        braid_tensor out[8] = {{0}};
        CHECK_EQ_INT(braid_session_run(s, 1, &in, n_out, out), BRAID_OK);
        for (int k = 0; k < n_out; k++) {
            cnt[k] = 1;
            for (int d = 0; d < out[k].rank; d++) cnt[k] *= out[k].dims[d];
            res[r][k] = malloc((size_t)cnt[k] * sizeof(float));
            if (out[k].data) memcpy(res[r][k], out[k].data, (size_t)cnt[k] * sizeof(float));
        }
        braid_session_destroy(s);
        braid_options_destroy(o);
    }
    for (int k = 0; k < n_out; k++) {
        double worst = 0;
        int bits = 1;
        for (int64_t i = 0; i < cnt[k]; i++) {
            double ref = res[0][k][i], got = res[1][k][i];
            double err = fabs(got - ref) / (1e-5 + 1e-4 * fabs(ref));
            if (!(err <= worst)) worst = err;
            bits &= memcmp(&res[1][k][i], &res[2][k][i], sizeof(float)) == 0;
        }
        CHECK(worst <= 1.0);
        CHECK(bits);
        if (worst > 1.0) fprintf(stderr, "output %d: error %g of the tolerance\n", k, worst);
        for (int r = 0; r < 3; r++) free(res[r][k]);
    }
    free(x);
    braid_model_destroy(m);
}

int main(void)
{
    mb b = {0};
    mb_model mm;
    bd_prepared p;
    bd_graph g;
    char *text = NULL;

    /* block: every op in NHWC; conversions only at the edges. */
    int64_t xb[4] = {2, 16, 9, 11};
    model_block(&b, &mm);
    if (!plan_of(&b, &mm, xb, 1, &text, &p, &g)) {
        /* x has 16 channels: converted once for the first Conv; out1 (after
         * Flatten), out2, out3, out4 and out5 are NCHW outputs. */
        CHECK_CONTAINS(text, "launch to_nhwc(x) (NHWC)\n");
        CHECK_EQ_INT(count(text, "launch to_nhwc("), 1);
        CHECK_CONTAINS(text, "launch to_nchw(gap)\n");
        CHECK_CONTAINS(text, "launch to_nchw(out2)\n");
        CHECK_CONTAINS(text, "launch to_nchw(out3)\n");
        CHECK_CONTAINS(text, "launch to_nchw(out4)\n");
        CHECK_CONTAINS(text, "launch to_nchw(out5)\n");
        CHECK_EQ_INT(count(text, "launch to_nchw("), 5);
        CHECK_CONTAINS(text, "launch flat\n"); /* Flatten stays NCHW */
        CHECK_CONTAINS(text, "launch p1 (NHWC)\n");
        CHECK_CONTAINS(text, "launch cat (NHWC)\n");
        CHECK_CONTAINS(text, "launch up (NHWC)\n");
        CHECK_CONTAINS(text, "launch split (NHWC)\n");
        CHECK_CONTAINS(text, "launch pad (NHWC)\n");
        CHECK_CONTAINS(text, "launch gap (NHWC)\n");
        CHECK_CONTAINS(text, "6 layout conversions\n");
        int convs = 0, nhwc_convs = 0;
        for (int i = 0; i < p.n_live; i++) {
            const bd_node *n = p.inst.node[p.live[i]];
            if (n->op != BD_OP_Conv) continue;
            const bd_conv_params *cp = n->params;
            convs++;
            nhwc_convs += cp->layout == BD_LAYOUT_NHWC && !cp->x_nchw;
            /* weights stored (KH, KW, C/group, M) */
            if (cp->layout == BD_LAYOUT_NHWC) CHECK_EQ_INT(p.inst.vals[n->in[1]].dims[3], p.inst.vals[n->out[0]].dims[3]);
        }
        CHECK_EQ_INT(convs, 4);
        CHECK_EQ_INT(nhwc_convs, 4);
        /* the values keep their meaning: out2 is (2, 32, 10, 12) NCHW, its NHWC twin (2, 10, 12, 32) */
        int v = bd_graph_find_value(p.g, "out2"), w = bd_graph_find_value(p.g, "out2@nhwc");
        CHECK(v >= 0 && w >= 0);
        if (v >= 0 && w >= 0) {
            CHECK_EQ_INT(p.inst.vals[v].dims[1], 32);
            CHECK_EQ_INT(p.inst.vals[w].dims[3], 32);
            CHECK_EQ_INT(p.inst.vlayout[w], BD_LAYOUT_NHWC);
            CHECK_EQ_INT(p.inst.vlayout[v], BD_LAYOUT_NCHW);
        }
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    /* without the pass (as the CUDA backend plans): nothing changes */
    if (!plan_of(&b, &mm, xb, 0, &text, &p, &g)) {
        CHECK(!p.inst.vlayout);
        CHECK(!strstr(text, "NHWC"));
        CHECK(!strstr(text, "launch to_nhwc"));
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    same_numbers(&b, &mm, xb, 5);
    mb_free(&b);

    /* lone: the Conv stays NCHW, the plan is the model's own */
    int64_t xl[4] = {1, 16, 6, 6};
    model_lone(&b, &mm);
    if (!plan_of(&b, &mm, xl, 1, &text, &p, &g)) {
        CHECK(!p.inst.vlayout);
        CHECK(!strstr(text, "launch to_nhwc"));
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    mb_free(&b);

    /* dense: no 1x1 Conv behind the input's conversion: NCHW */
    int64_t xdn[4] = {1, 16, 8, 8};
    model_dense(&b, &mm);
    if (!plan_of(&b, &mm, xdn, 1, &text, &p, &g)) {
        CHECK(!p.inst.vlayout);
        CHECK(!strstr(text, "launch to_nhwc"));
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    mb_free(&b);

    /* panels: W of 96 and 80 output channels stored in panels of 48 */
    int64_t xp[4] = {1, 16, 6, 7};
    model_panels(&b, &mm);
    if (!plan_of(&b, &mm, xp, 1, &text, &p, &g)) {
        int panels = 0;
        for (int i = 0; i < p.n_live; i++) {
            const bd_node *n = p.inst.node[p.live[i]];
            if (n->op != BD_OP_Conv) continue;
            const bd_conv_params *cp = n->params;
            CHECK_EQ_INT(cp->layout, BD_LAYOUT_NHWC);
            CHECK_EQ_INT(cp->w_panel, 48);
            CHECK(strstr(p.g->values[n->in[1]].name, "@panels") != NULL);
            panels++;
        }
        CHECK_EQ_INT(panels, 2);
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    same_numbers(&b, &mm, xp, 1);
    mb_free(&b);

    /* shared: the one-group Conv reads W's panels, the two-group one W as
     * (KH, KW, C/group, M), both from the same initializer */
    int64_t xs[4] = {1, 8, 6, 7};
    model_shared(&b, &mm);
    if (!plan_of(&b, &mm, xs, 1, &text, &p, &g)) {
        int seen = 0;
        for (int i = 0; i < p.n_live; i++) {
            const bd_node *n = p.inst.node[p.live[i]];
            if (n->op != BD_OP_Conv) continue;
            const bd_conv_params *cp = n->params;
            if (cp->layout != BD_LAYOUT_NHWC || p.inst.vals[n->out[0]].dims[3] != 96) continue;
            const char *wn = p.g->values[n->in[1]].name;
            if (cp->group == 1) CHECK(cp->w_panel == 48 && strstr(wn, "@panels") != NULL);
            else CHECK(cp->w_panel == 0 && strstr(wn, "@hwio") != NULL);
            seen++;
        }
        CHECK_EQ_INT(seen, 2);
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    same_numbers(&b, &mm, xs, 1);
    mb_free(&b);

    /* first: three channels read in NCHW, no conversion in, one out */
    int64_t xf[4] = {1, 3, 13, 12};
    model_first(&b, &mm);
    if (!plan_of(&b, &mm, xf, 1, &text, &p, &g)) {
        CHECK(!strstr(text, "launch to_nhwc"));
        CHECK_EQ_INT(count(text, "launch to_nchw("), 1);
        for (int i = 0; i < p.n_live; i++) {
            const bd_node *n = p.inst.node[p.live[i]];
            if (n->op != BD_OP_Conv) continue;
            const bd_conv_params *cp = n->params;
            CHECK_EQ_INT(cp->layout, BD_LAYOUT_NHWC);
            CHECK_EQ_INT(cp->x_nchw, 1);
        }
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    same_numbers(&b, &mm, xf, 1);
    mb_free(&b);

    /* wino: the 3x3's W transformed at plan time (on a CPU with AVX-512),
     * for the data its W input holds; the 1x1's not */
    int64_t xw[4] = {1, 16, 36, 36};
    model_wino(&b, &mm);
    if (!plan_of(&b, &mm, xw, 1, &text, &p, &g)) {
        int seen = 0;
        for (int i = 0; i < p.n_live; i++) {
            const bd_node *n = p.inst.node[p.live[i]];
            if (n->op != BD_OP_Conv) continue;
            const bd_conv_params *cp = n->params;
            CHECK_EQ_INT(cp->layout, BD_LAYOUT_NHWC);
            int three = p.inst.vals[n->in[1]].dims[0] == 3;
#if defined(__x86_64__)
            if (three && __builtin_cpu_supports("avx512f")) {
                CHECK(cp->w_wino != NULL);
                CHECK(cp->w_wino_of == p.inst.vals[n->in[1]].data);
            } else
#endif
                CHECK(cp->w_wino == NULL);
            seen += three;
        }
        CHECK_EQ_INT(seen, 1);
        free(text);
        bd_prepared_free(&p);
        bd_graph_free(&g);
    }
    same_numbers(&b, &mm, xw, 1);
    mb_free(&b);
    return check_done();
}
