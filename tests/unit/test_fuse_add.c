/* test_fuse_add.c: the plan-time Conv+Add fusion's choices (bd_inst_fuse_add
 * through bd_prepare) on the generated models: it folds where nothing could
 * run beside the Conv (serial plans, skips computed earlier), keeps small
 * concurrent branches apart, and folds them when each Conv fills the device
 * (the CUDA backend's fill_cost). The numbers of fused plans are checked
 * against onnxruntime by the models/residual and models/two_conv_add tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "backend/backend.h"
#include "onnx/onnx.h"
#include "ops/conv.h"

#define CUDA_FILL 0.025 /* bd_backend_cuda.fill_cost */

static int load(const char *name, bd_graph *g)
{
    char path[4096];
    void *bytes = NULL;
    size_t size = 0;
    bd_err e = {0};
    snprintf(path, sizeof path, "%s/models/gen/%s/model.onnx", getenv("BRAID_SOURCE_DIR"), name);
    if (bd_read_file(path, &bytes, &size, &e) || bd_onnx_load(bytes, size, NULL, g, &e)) {
        fprintf(stderr, "%s: %s\n", path, e.msg);
        bd_free(bytes);
        return 1;
    }
    bd_free(bytes);
    return 0;
}

/* Prepares g for an NCHW float input of batch n; returns the live node count
 * and writes the names of the fused nodes (those with a residual) into
 * fused, space-separated. */
static int no_fold;

static int prepare(const bd_graph *g, int64_t n, int64_t c, int64_t hw, int streams, double fill, bd_prepared *p,
                   char *fused, size_t cap)
{
    bd_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {n, c, hw, hw}};
    bd_err e = {0};
    fused[0] = 0;
    bd_prepare_opts o = {.max_streams = streams, .fill_cost = fill, .no_fold = no_fold};
    if (bd_prepare(g, &in, NULL, &o, p, &e) != BRAID_OK) {
        fprintf(stderr, "prepare: %s\n", e.msg);
        return -1;
    }
    for (int i = 0; i < p->n_live; i++) {
        const bd_node *nd = p->inst.node[p->live[i]];
        const bd_conv_params *cp = nd->params;
        if (nd->op == BD_OP_Conv && cp->res != BD_RES_NONE) {
            strncat(fused, nd->name, cap - strlen(fused) - 2);
            strncat(fused, " ", cap - strlen(fused) - 1);
        }
    }
    return p->n_live;
}

static int has_node(const bd_prepared *p, const char *name)
{
    for (int i = 0; i < p->n_live; i++)
        if (strcmp(p->inst.node[p->live[i]]->name, name) == 0) return 1;
    return 0;
}

int main(void)
{
    bd_graph g = {0};
    bd_prepared p;
    char fused[1024];
    if (load("two_conv_add", &g)) return 1;

    /* Small branches on the CPU (automatic, 2 streams): both convs run side by side. */
    CHECK_EQ_INT(prepare(&g, 8, 16, 32, -2, 0, &p, fused, sizeof fused), 3);
    CHECK(strcmp(fused, "") == 0);
    CHECK_EQ_INT(p.plan.n_streams, 2);
    bd_prepared_free(&p);

    /* A serial plan loses nothing by folding: 2 launches, the Add's pass gone. */
    CHECK_EQ_INT(prepare(&g, 8, 16, 32, 1, 0, &p, fused, sizeof fused), 2);
    CHECK_CONTAINS(fused, "+add_7");
    CHECK_EQ_INT(p.plan.n_streams, 1);
    bd_prepared_free(&p);

    /* The CUDA cost model: at batch 1024 each conv fills the device, so
     * running them concurrently gains nothing and the Add folds... */
    CHECK_EQ_INT(prepare(&g, 1024, 16, 32, -8, CUDA_FILL, &p, fused, sizeof fused), 2);
    CHECK_CONTAINS(fused, "+add_7");
    bd_prepared_free(&p);
    /* ... at batch 1 they are small, and concurrency wins. */
    CHECK_EQ_INT(prepare(&g, 1, 16, 32, -8, CUDA_FILL, &p, fused, sizeof fused), 3);
    CHECK(strcmp(fused, "") == 0);
    CHECK_EQ_INT(p.plan.n_streams, 2);
    bd_prepared_free(&p);
    /* Folding turned off (braid_options_set_fold): the device-filling case
     * keeps its Add, and its two convs on two streams. */
    no_fold = 1;
    CHECK_EQ_INT(prepare(&g, 1024, 16, 32, -8, CUDA_FILL, &p, fused, sizeof fused), 3);
    CHECK(strcmp(fused, "") == 0);
    CHECK_EQ_INT(p.plan.n_streams, 2);
    bd_prepared_free(&p);
    no_fold = 0;
    bd_graph_free(&g);

    /* residual: identity skips and the activation-first block fold whatever
     * the streams; the projection block folds into the main path's conv
     * (b2_c2) so that the cheap shortcut still runs beside it. */
    memset(&g, 0, sizeof g);
    if (load("residual", &g)) return 1;
    CHECK_EQ_INT(prepare(&g, 2, 16, 32, 2, 0, &p, fused, sizeof fused), 7);
    CHECK(strcmp(fused, "b1_c2_7+b1_add_8+b1_relu_9 b2_c2_16+b2_add_20+b2_relu_21 "
                        "b3_dw_23+b3_add_24+b3_leaky_25 b4_c1_28+b4_c1_relu_29+b4_add_30 ") == 0);
    CHECK(has_node(&p, "b2_proj_19"));
    CHECK_EQ_INT(p.plan.n_streams, 2);
    int b4 = -1, b1 = -1;
    for (int i = 0; i < p.n_live; i++) {
        const char *nm = p.inst.node[p.live[i]]->name;
        if (strncmp(nm, "b4_", 3) == 0) b4 = i;
        if (strncmp(nm, "b1_c2", 5) == 0) b1 = i;
    }
    CHECK(b1 >= 0 && b4 >= 0);
    if (b1 >= 0 && b4 >= 0) {
        const bd_conv_params *c1 = p.inst.node[p.live[b1]]->params, *c4 = p.inst.node[p.live[b4]]->params;
        CHECK_EQ_INT(c1->res, BD_RES_PRE); /* relu(conv + x) */
        CHECK_EQ_INT(c1->act, BD_ACT_RELU);
        CHECK_EQ_INT(c4->res, BD_RES_POST); /* relu(conv) + y3: the Relu fused at load */
        CHECK_EQ_INT(p.inst.node[p.live[b4]]->n_in, 4);
    }
    /* The graph itself is untouched: its nodes keep their names and inputs. */
    CHECK_EQ_INT(g.nodes[0].n_in, 3);
    bd_prepared_free(&p);

    /* Serial: every Add folds (4); the b2 fold may take either conv. */
    CHECK_EQ_INT(prepare(&g, 2, 16, 32, 1, 0, &p, fused, sizeof fused), 7);
    int folds = 0;
    for (const char *s = fused; (s = strstr(s, "_add_")); s++) folds++;
    CHECK_EQ_INT(folds, 4);
    bd_prepared_free(&p);
    bd_graph_free(&g);
    return check_done();
}
