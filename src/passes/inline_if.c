/* inline_if.c: an If whose condition is known when the plan is made is replaced
 * by its branch. The instance then plans a flat graph of its own: the
 * graph's values (same indices, so weights and outputs keep theirs) followed
 * by the branch's, and the graph's nodes with the If's place taken by the
 * branch's nodes, in their order, reading the node's captured outer values
 * where the branch read its captures and writing the If's outputs where the
 * branch wrote its outputs (an Identity where an output is not made by a
 * branch node: a capture or constant given back, or one value given twice).
 * The branch's nodes then join the outer DAG: they run concurrently with the
 * rest of the graph, fold where their inputs are known, and are planned like
 * any node, with no nested plan and no read of the condition.
 *
 * Node and value structs are shallow copies: names, attributes, parameters
 * and constant data stay the model's. A flat graph owns its arrays, the
 * input and output lists of the branch nodes it rewrote, and its Identity
 * nodes; inlining again (another If, or one inside the branch just inlined)
 * builds a new flat graph that takes these over from the last. */
#include <stdio.h>
#include <string.h>

#include "passes/instance.h"
#include "ops/control.h"

/* What a flat graph owns beyond its arrays (kept in the instance). */
enum { FLAT_IO = 1, FLAT_NODE = 2 }; /* in/out lists; and name, params (an Identity) */

void bd_flat_free(bd_graph *g, unsigned char *own)
{
    if (!g) return;
    for (int i = 0; own && i < g->n_nodes; i++) {
        if (own[i] & FLAT_IO) {
            bd_free(g->nodes[i].in);
            bd_free(g->nodes[i].out);
        }
        if (own[i] & FLAT_NODE) {
            bd_free(g->nodes[i].name);
            bd_free(g->nodes[i].params);
        }
    }
    bd_free(g->values);
    bd_free(g->nodes);
    bd_free(g);
    bd_free(own);
}

void bd_flat_share(bd_graph *f, const bd_graph *g)
{
    f->n_inputs = g->n_inputs;
    f->inputs = g->inputs;
    f->n_outputs = g->n_outputs;
    f->outputs = g->outputs;
    f->n_captures = g->n_captures;
    f->is_sub = g->is_sub;
    f->input_shapes = g->input_shapes;
    f->n_opsets = g->n_opsets;
    f->opsets = g->opsets;
    f->ir_version = g->ir_version;
    f->name = g->name;
}

/* Grows the instance's per-value and per-node arrays to the flat graph's
 * sizes: values keep their index; nodes before `at` keep their states, and
 * from `at` (the If's place) on every node is still to be inferred. */
static braid_status regrow(bd_inst *x, const bd_graph *f, int at, bd_err *e)
{
    braid_status st = BRAID_OK;
    int nv = f->n_values, nn = f->n_nodes, ov = x->g->n_values;
    bd_tensor *vals = bd_calloc((size_t)nv + 1, sizeof *vals);
    unsigned char *owned = bd_calloc((size_t)nv + 1, 1), *vflag = bd_calloc((size_t)nv + 1, 1);
    unsigned char *live = bd_calloc((size_t)nn + 1, 1), *later = bd_calloc((size_t)nn + 1, 1);
    double *cost = bd_calloc((size_t)nn + 1, sizeof *cost);
    const bd_node **node = bd_malloc(((size_t)nn + 1) * sizeof *node);
    BD_CHECK_ALLOC(e, vals && owned && vflag && live && later && cost && node);
    memcpy(vals, x->vals, (size_t)ov * sizeof *vals);
    memcpy(owned, x->owned, (size_t)ov);
    memcpy(vflag, x->vflag, (size_t)ov);
    for (int v = ov; v < nv; v++) {
        const bd_value *val = &f->values[v];
        vals[v].rank = -1;
        if (val->flags & BD_VAL_CONST) { /* a constant of the branch */
            vals[v].dtype = val->dtype;
            vals[v].rank = val->rank;
            memcpy(vals[v].dims, val->dims, sizeof val->dims);
            vals[v].data = val->data;
        }
    }
    memcpy(live, x->live, (size_t)at);
    memcpy(later, x->later, (size_t)at);
    memcpy(cost, x->cost, (size_t)at * sizeof *cost);
    for (int i = 0; i < nn; i++) node[i] = &f->nodes[i];
    bd_free(x->vals);
    bd_free(x->owned);
    bd_free(x->vflag);
    bd_free(x->live);
    bd_free(x->later);
    bd_free(x->cost);
    bd_free((void *)x->node);
    x->vals = vals;
    x->owned = owned;
    x->vflag = vflag;
    x->live = live;
    x->later = later;
    x->cost = cost;
    x->node = node;
    return BRAID_OK;
fail:
    bd_free(vals);
    bd_free(owned);
    bd_free(vflag);
    bd_free(live);
    bd_free(later);
    bd_free(cost);
    bd_free((void *)node);
    return st;
}

braid_status bd_inst_inline_if(bd_inst *x, int at, int b, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = x->g;
    const bd_node *n = x->node[at];
    const bd_control_params *p = n->params;
    const bd_graph *br = p->branch[b];
    int base = bd_node_formal_in(n), nf = bd_subgraph_formal_in(br);
    int *map = bd_malloc(((size_t)br->n_values + 1) * sizeof *map);
    int *made = bd_calloc((size_t)br->n_values + 1, sizeof *made);
    bd_graph *f = bd_calloc(1, sizeof *f);
    unsigned char *own = NULL;
    int n_new = 0, n_ident = 0;
    BD_CHECK_ALLOC(e, map && made && f);
    for (int i = 0; i < br->n_nodes; i++)
        for (int k = 0; k < br->nodes[i].n_out; k++)
            if (br->nodes[i].out[k] >= 0) made[br->nodes[i].out[k]] = 1;
    /* Values: the graph's, then the branch's own; captures are the node's inputs. */
    for (int w = 0; w < br->n_values; w++) map[w] = -1;
    for (int j = 0; j < br->n_captures; j++) map[br->inputs[nf + j]] = n->in[base + j];
    /* An output a branch node makes is written straight into the If's output. */
    for (int o = 0; o < br->n_outputs; o++) {
        int w = br->outputs[o];
        if (o < n->n_out && n->out[o] >= 0 && made[w] == 1 && map[w] < 0) {
            map[w] = n->out[o];
            made[w] = 2;
        } else if (o < n->n_out && n->out[o] >= 0) {
            n_ident++;
        }
    }
    for (int w = 0; w < br->n_values; w++)
        if (map[w] < 0) map[w] = g->n_values + n_new++;
    f->n_values = f->cap_values = g->n_values + n_new;
    f->n_nodes = g->n_nodes - 1 + br->n_nodes + n_ident;
    f->values = bd_calloc((size_t)f->n_values + 1, sizeof *f->values);
    f->nodes = bd_calloc((size_t)f->n_nodes + 1, sizeof *f->nodes);
    own = bd_calloc((size_t)f->n_nodes + 1, 1);
    BD_CHECK_ALLOC(e, f->values && f->nodes && own);
    memcpy(f->values, g->values, (size_t)g->n_values * sizeof *f->values);
    for (int w = 0; w < br->n_values; w++) {
        if (map[w] < g->n_values) continue;
        bd_value *v = &f->values[map[w]];
        *v = br->values[w];
        v->flags &= BD_VAL_CONST;
    }
    bd_flat_share(f, g); /* the rest of the graph struct is the outer graph's */
    /* Nodes: before the If, the branch, its Identities, after the If. */
    int k = 0;
    for (int i = 0; i < at; i++, k++) {
        f->nodes[k] = *x->node[i];
        own[k] = x->flat_own ? x->flat_own[i] : 0;
    }
    for (int i = 0; i < br->n_nodes; i++, k++) {
        const bd_node *s = &br->nodes[i];
        bd_node *d = &f->nodes[k];
        *d = *s;
        d->in = bd_malloc(((size_t)s->n_in + 1) * sizeof *d->in);
        d->out = bd_malloc(((size_t)s->n_out + 1) * sizeof *d->out);
        own[k] = FLAT_IO;
        BD_CHECK_ALLOC(e, d->in && d->out);
        for (int q = 0; q < s->n_in; q++) d->in[q] = s->in[q] >= 0 ? map[s->in[q]] : -1;
        for (int q = 0; q < s->n_out; q++) d->out[q] = s->out[q] >= 0 ? map[s->out[q]] : -1;
    }
    for (int o = 0; o < br->n_outputs && o < n->n_out; o++) {
        int w = br->outputs[o];
        if (n->out[o] < 0 || (made[w] == 2 && map[w] == n->out[o])) continue;
        bd_node *d = &f->nodes[k];
        size_t len = strlen(n->name) + 16;
        memset(d, 0, sizeof *d);
        d->name = bd_malloc(len);
        d->in = bd_malloc(sizeof *d->in);
        d->out = bd_malloc(sizeof *d->out);
        own[k] = FLAT_IO | FLAT_NODE;
        k++;
        BD_CHECK_ALLOC(e, d->name && d->in && d->out);
        snprintf(d->name, len, "%s/out%d", n->name, o);
        d->op_type = (char *)"Identity";
        d->domain = (char *)"";
        d->op = BD_OP_Identity;
        d->opset = 16;
        d->n_in = d->n_out = 1;
        d->in[0] = map[w];
        d->out[0] = n->out[o];
        BD_TRY(bd_op_parse(d, e));
    }
    for (int i = at + 1; i < g->n_nodes; i++, k++) {
        f->nodes[k] = *x->node[i];
        own[k] = x->flat_own ? x->flat_own[i] : 0;
    }
    /* Producers in the flat order. */
    for (int v = 0; v < f->n_values; v++) f->values[v].producer = -1;
    for (int i = 0; i < f->n_nodes; i++)
        for (int q = 0; q < f->nodes[i].n_out; q++)
            if (f->nodes[i].out[q] >= 0) f->values[f->nodes[i].out[q]].producer = i;
    BD_TRY(regrow(x, f, at, e));
    /* The last flat graph's own lists now belong to this one, except the
     * replaced If's (an If of an earlier inlined branch owns its lists). */
    if (x->flat_own && (x->flat_own[at] & FLAT_IO)) {
        bd_free(x->flat->nodes[at].in);
        bd_free(x->flat->nodes[at].out);
    }
    if (x->flat_own && (x->flat_own[at] & FLAT_NODE)) {
        bd_free(x->flat->nodes[at].name);
        bd_free(x->flat->nodes[at].params);
    }
    if (x->flat) {
        bd_free(x->flat->values);
        bd_free(x->flat->nodes);
        bd_free(x->flat);
        bd_free(x->flat_own);
    }
    x->flat = f;
    x->flat_own = own;
    x->g = f;
    bd_free(map);
    bd_free(made);
    return BRAID_OK;
fail:
    /* Only what this call made: the nodes it rewrote or added. */
    for (int i = 0; f && f->nodes && own && i < f->n_nodes; i++)
        if (i >= at && i < at + br->n_nodes + n_ident) {
            if (own[i] & FLAT_IO) { bd_free(f->nodes[i].in); bd_free(f->nodes[i].out); }
            if (own[i] & FLAT_NODE) { bd_free(f->nodes[i].name); bd_free(f->nodes[i].params); }
        }
    if (f) { bd_free(f->values); bd_free(f->nodes); }
    bd_free(f);
    bd_free(own);
    bd_free(map);
    bd_free(made);
    return st;
}
