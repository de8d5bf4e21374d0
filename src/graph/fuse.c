/* fuse.c: fusions made when a model loads. A Conv whose output is read by
 * exactly one node, a Relu, LeakyRelu or Clip (with constant bounds), and is
 * not a graph output, takes that activation into its epilogue: the activation
 * node goes, the Conv writes the activation's output, and its name becomes
 * "conv+act" so plans and profiles show the fusion. It never changes what can
 * run concurrently (the activation had no other reader), and it saves one
 * pass over the tensor. Folding an Add into the Conv that feeds it is not done
 * yet: when the Add's other input comes from a concurrent branch it would
 * serialize the branches, so it needs the plan's cost estimate. */
#include <stdio.h>
#include <string.h>

#include "graph/ir.h"
#include "ops/conv.h"

/* Reads a constant float scalar (a Clip bound); 0 when the value is not one. */
static int const_scalar(const bd_graph *g, int v, float *out)
{
    if (v < 0) return 0;
    const bd_value *val = &g->values[v];
    if (!(val->flags & BD_VAL_CONST) || val->dtype != BRAID_DTYPE_FLOAT || !val->data) return 0;
    for (int d = 0; d < val->rank; d++)
        if (val->dims[d] != 1) return 0;
    *out = *(const float *)val->data;
    return 1;
}

/* How activation node r maps to a conv epilogue; 0 when it does not. */
static int act_of(const bd_graph *g, const bd_node *r, int *act, float *a, float *b)
{
    bd_err ignore;
    *a = 0;
    *b = 0;
    switch (r->op) {
    case BD_OP_Relu: *act = BD_ACT_RELU; return 1;
    case BD_OP_LeakyRelu:
        *act = BD_ACT_LEAKY;
        return bd_attr_float(r, "alpha", 0.01f, a, &ignore) == BRAID_OK;
    case BD_OP_Clip:
        *act = BD_ACT_CLIP;
        *a = -3.402823466e38f;
        *b = 3.402823466e38f;
        if (r->opset < 11)
            return bd_attr_float(r, "min", *a, a, &ignore) == BRAID_OK && bd_attr_float(r, "max", *b, b, &ignore) == BRAID_OK;
        return (r->n_in < 2 || r->in[1] < 0 || const_scalar(g, r->in[1], a)) &&
               (r->n_in < 3 || r->in[2] < 0 || const_scalar(g, r->in[2], b));
    default: return 0;
    }
}

braid_status bd_graph_fuse(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    int *readers = bd_calloc((size_t)g->n_values + 1, sizeof *readers);
    int *reader = bd_malloc(((size_t)g->n_values + 1) * sizeof *reader);
    unsigned char *gone = bd_calloc((size_t)g->n_nodes + 1, 1);
    BD_CHECK_ALLOC(e, readers && reader && gone);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++) {
            int v = g->nodes[i].in[k];
            if (v < 0) continue;
            readers[v]++;
            reader[v] = i;
        }
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        bd_node *c = &g->nodes[i];
        if (c->op != BD_OP_Conv || !c->params || c->n_out != 1) continue;
        int v = c->out[0];
        if (v < 0 || readers[v] != 1 || (g->values[v].flags & BD_VAL_OUTPUT)) continue;
        bd_node *r = &g->nodes[reader[v]];
        int act;
        float a, b;
        if (r->in[0] != v || r->n_out != 1 || r->out[0] < 0 || !act_of(g, r, &act, &a, &b)) continue;
        char *name = bd_malloc(strlen(c->name) + strlen(r->name) + 2);
        BD_CHECK_ALLOC(e, name);
        sprintf(name, "%s+%s", c->name, r->name);
        bd_free(c->name);
        c->name = name;
        bd_conv_params *p = c->params;
        p->act = act;
        p->act_a = a;
        p->act_b = b;
        c->out[0] = r->out[0];
        gone[reader[v]] = 1;
        fused++;
    }
    if (fused) { /* drop the absorbed nodes; producers are re-derived */
        int w = 0;
        for (int i = 0; i < g->n_nodes; i++) {
            if (!gone[i]) { g->nodes[w++] = g->nodes[i]; continue; }
            bd_node_free(&g->nodes[i]);
        }
        g->n_nodes = w;
        BD_TRY(bd_graph_toposort(g, e));
    }
fail:
    bd_free(readers);
    bd_free(reader);
    bd_free(gone);
    return st;
}
