/* test_fuse_affine_in.c: src/passes/fuse_affine_in.c, an affine before a Conv
 * folded into its weights at load. X (1, 6, 5, 4) -> Mul(s) -> Add(t) -> Conv
 * (1x1 or 3x3, groups 1, 2 or 6, with and without bias; s and t scalars or
 * one per channel) must load as the Conv alone and give the chain's values
 * within float32 rounding of a double reference (|d| <= 2e-6 (|y| + 1));
 * a Conv that pads, an Add whose output a graph output also is, and a Sub
 * (not folded) keep their nodes and still give the chain's values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "ir/ir.h"
#include "ops/ops.h"
#include "check.h"
#include "mbuild.h"

enum { C = 6, H = 5, W = 4, M = 6 };
static const int64_t XD[] = {1, C, H, W};

typedef struct spec {
    int k;        /* kernel size (1 or 3) */
    int pad;      /* pads of the 3x3 kernel */
    int group;
    int bias;
    int per_ch;   /* s and t per channel, else scalars */
    int only;     /* 1: Mul only, 2: Add only, 0: both */
    int add_out;  /* the Add's output is a graph output too */
    int sub;      /* a Sub instead of the Add (left alone) */
    int want_nodes;
} spec;

static float wv(int i) { return (float)((i * 37) % 23 - 11) / 16.0f; }

static void run_case(spec sp, int line)
{
    mb b = {0};
    mb_model mm;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    mb_input(&b, g, "X", BRAID_DTYPE_FLOAT, 4, XD);
    float s[C], t[C], wt[M * C * 9], bias[M];
    for (int c = 0; c < C; c++) s[c] = 0.5f + 0.25f * (float)c, t[c] = -0.75f + 0.3f * (float)c;
    int cg = C / sp.group, taps = sp.k * sp.k;
    for (int i = 0; i < M * cg * taps; i++) wt[i] = wv(i);
    for (int m = 0; m < M; m++) bias[m] = 0.1f * (float)(m + 1);
    int64_t cd[] = {1, C, 1, 1}, wd[] = {M, cg, sp.k, sp.k}, bd[] = {M};
    mb_const_f(&b, g, "s", sp.per_ch ? 4 : 0, sp.per_ch ? cd : NULL, s, sp.per_ch ? C : 1);
    mb_const_f(&b, g, "t", sp.per_ch ? 4 : 0, sp.per_ch ? cd : NULL, t, sp.per_ch ? C : 1);
    mb_init(&b, g, "W", BRAID_DTYPE_FLOAT, 4, wd, wt, sizeof(float) * (size_t)(M * cg * taps));
    mb_init(&b, g, "B", BRAID_DTYPE_FLOAT, 1, bd, bias, sizeof bias);
    const char *cin = "X";
    if (sp.only != 2) { mb_node(&b, g, "Mul", "s,X", "m", NULL); cin = "m"; }
    if (sp.only != 1) {
        mb_node(&b, g, sp.sub ? "Sub" : "Add", sp.only == 2 ? "X,t" : "m,t", "a", NULL);
        cin = "a";
    }
    char ins[32];
    snprintf(ins, sizeof ins, "%s,W%s", cin, sp.bias ? ",B" : "");
    Onnx__NodeProto *cv = mb_node(&b, g, "Conv", ins, "Y", NULL);
    mb_attr_i(&b, cv, "group", sp.group);
    if (sp.pad) mb_attr_is(&b, cv, "pads", 4, (int64_t[]){1, 1, 1, 1});
    int oh = H - sp.k + 1 + 2 * sp.pad, ow = W - sp.k + 1 + 2 * sp.pad;
    int64_t yd[] = {1, M, oh, ow};
    mb_output(&b, g, "Y", BRAID_DTYPE_FLOAT, 4, yd);
    if (sp.add_out) mb_output(&b, g, "a", BRAID_DTYPE_FLOAT, 4, XD);
    mb_model_init(&b, &mm, g, 13);
    braid_model *model = NULL;
    braid_status st = mb_load(&b, &mm, &model);
    CHECK_EQ_INT(st, BRAID_OK);
    if (st) { fprintf(stderr, "line %d: %s\n", line, braid_last_error()); mb_free(&b); return; }
    const bd_graph *gr = bd_model_graph(model);
    if (gr->n_nodes != sp.want_nodes) fprintf(stderr, "line %d: %d nodes, want %d\n", line, gr->n_nodes, sp.want_nodes);
    CHECK_EQ_INT(gr->n_nodes, sp.want_nodes);
    float x[C * H * W];
    for (int i = 0; i < C * H * W; i++) x[i] = (float)((i * 13) % 17 - 8) / 8.0f;
    braid_options *o = NULL;
    braid_session *ss = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    CHECK_EQ_INT(braid_session_create(model, o, &ss), BRAID_OK);
    braid_tensor in = {BRAID_DTYPE_FLOAT, 4, {1, C, H, W}, x}, out[2] = {{0}};
    CHECK_EQ_INT(braid_session_run(ss, 1, &in, braid_model_output_count(model), out), BRAID_OK);
    /* the reference: the chain, then the convolution, in double */
    double a[C * H * W];
    for (int c = 0; c < C; c++)
        for (int i = 0; i < H * W; i++) {
            double v = x[c * H * W + i], sc = sp.per_ch ? s[c] : s[0], sh = sp.per_ch ? t[c] : t[0];
            if (sp.only != 2) v *= sc;
            if (sp.only != 1) v = sp.sub ? v - sh : v + sh;
            a[c * H * W + i] = v;
        }
    int bad = 0;
    for (int m = 0; m < M && out[0].data; m++)
        for (int y = 0; y < oh; y++)
            for (int xx = 0; xx < ow; xx++) {
                double r = sp.bias ? bias[m] : 0;
                int g0 = m / (M / sp.group) * cg;
                for (int cl = 0; cl < cg; cl++)
                    for (int ky = 0; ky < sp.k; ky++)
                        for (int kx = 0; kx < sp.k; kx++) {
                            int iy = y + ky - sp.pad, ix = xx + kx - sp.pad;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            r += wt[((m * cg + cl) * sp.k + ky) * sp.k + kx] * a[(g0 + cl) * H * W + iy * W + ix];
                        }
                double yv = ((const float *)out[0].data)[(m * oh + y) * ow + xx];
                if (fabs(yv - r) > 2e-6 * (fabs(r) + 1)) {
                    if (!bad) fprintf(stderr, "line %d: y[%d,%d,%d] %.9g, want %.9g\n", line, m, y, xx, yv, r);
                    bad++;
                }
            }
    CHECK_EQ_INT(bad, 0);
    braid_session_destroy(ss);
    braid_options_destroy(o);
    braid_model_destroy(model);
    mb_free(&b);
}

int main(void)
{
    for (int per = 0; per < 2; per++)
        for (int grp = 0; grp < 3; grp++)
            for (int bias = 0; bias < 2; bias++) {
                int group = grp == 0 ? 1 : grp == 1 ? 2 : 6;
                run_case((spec){.k = 1, .group = group, .bias = bias, .per_ch = per, .want_nodes = 1}, __LINE__);
                run_case((spec){.k = 3, .group = group, .bias = bias, .per_ch = per, .want_nodes = 1}, __LINE__);
            }
    run_case((spec){.k = 1, .group = 1, .bias = 1, .per_ch = 1, .only = 1, .want_nodes = 1}, __LINE__);
    run_case((spec){.k = 1, .group = 2, .bias = 0, .per_ch = 0, .only = 2, .want_nodes = 1}, __LINE__);
    /* left alone */
    run_case((spec){.k = 3, .pad = 1, .group = 1, .bias = 1, .per_ch = 1, .want_nodes = 3}, __LINE__);
    run_case((spec){.k = 1, .group = 1, .bias = 1, .per_ch = 0, .add_out = 1, .want_nodes = 3}, __LINE__);
    run_case((spec){.k = 1, .group = 1, .bias = 1, .per_ch = 0, .sub = 1, .want_nodes = 3}, __LINE__);
    return check_done();
}
