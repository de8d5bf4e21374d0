/* fuse_act.c: activations that exporters write out as chains of elementwise
 * nodes, put back together at load (bd_graph_fuse_act) so that they cost one
 * pass over the tensor instead of three or four, and so that the Conv fold
 * after them (fuse.c) sees one activation node:
 *
 *   HardSwish(X)  from  Div(Mul(X, Clip(Add(X, 3), 0, 6)), 6)   (Paddle)
 *                 or    Mul(Mul(X, Clip(Add(X, 3), 0, 6)), 1/6)
 *                 or    Mul(X, HardSigmoid(X)) with alpha 1/6, beta 1/2
 *   Swish(X)      from  Mul(X, Sigmoid(X))                       (SiLU)
 *   Gelu(X)       from  Mul(X, Mul(Add(Erf(Div(X, sqrt 2)), 1), 0.5))
 *                 or    Mul(Mul(X, 0.5), Add(Erf(...), 1)), Mul(Mul(X, Add(Erf(...), 1)), 0.5),
 *                       Erf's argument also Mul(X, 1/sqrt 2)      (PyTorch's exact GELU)
 *
 * Operands may come in either order where the op commutes. Every
 * intermediate must have exactly one reader and not be a graph output, and
 * the constants must be float32 scalars of exactly those values, so nothing
 * that another node or the caller can see changes. The rewritten node keeps
 * the name of the chain's last node; the others go. The results differ from
 * the chain's by float32 rounding only (the chain rounds after each step). */
#include <math.h>
#include <string.h>

#include "ir/ir.h"
#include "ops/ops.h"

/* A float32 scalar constant (any rank of ones) equal to want within 1e-6. */
static int const_is(const bd_graph *g, int v, float want)
{
    if (v < 0) return 0;
    const bd_value *val = &g->values[v];
    if (!(val->flags & BD_VAL_CONST) || val->dtype != BRAID_DTYPE_FLOAT || !val->data) return 0;
    for (int d = 0; d < val->rank; d++)
        if (val->dims[d] != 1) return 0;
    return fabsf(*(const float *)val->data - want) <= 1e-6f * fmaxf(1.0f, fabsf(want));
}

typedef struct fa_ctx {
    bd_graph *g;
    int *readers, *producer;
    unsigned char *gone;
} fa_ctx;

/* The node making v, when v is an intermediate with one reader; else NULL. */
static bd_node *sole(const fa_ctx *c, int v)
{
    if (v < 0 || c->readers[v] != 1 || (c->g->values[v].flags & (BD_VAL_OUTPUT | BD_VAL_INPUT | BD_VAL_CONST)))
        return NULL;
    int p = c->producer[v];
    return p >= 0 && !c->gone[p] ? &c->g->nodes[p] : NULL;
}

static int node_index(const fa_ctx *c, const bd_node *n) { return (int)(n - c->g->nodes); }

/* Clip(Add(X, 3), 0, 6) made v: returns X, or -1. */
static int relu6_of_x_plus_3(const fa_ctx *c, int v, int *clip, int *add)
{
    bd_node *cl = sole(c, v);
    if (!cl || cl->op != BD_OP_Clip || cl->opset < 11 || cl->n_in < 3 || !const_is(c->g, cl->in[1], 0) ||
        !const_is(c->g, cl->in[2], 6))
        return -1;
    bd_node *ad = sole(c, cl->in[0]);
    if (!ad || ad->op != BD_OP_Add || ad->n_in != 2) return -1;
    int x = const_is(c->g, ad->in[1], 3) ? ad->in[0] : const_is(c->g, ad->in[0], 3) ? ad->in[1] : -1;
    *clip = node_index(c, cl);
    *add = node_index(c, ad);
    return x;
}

/* Mul(X, Clip(Add(X, 3), 0, 6)) made v, X either side: returns X, or -1. */
static int x_times_relu6(const fa_ctx *c, int v, int chain[3])
{
    bd_node *mu = sole(c, v);
    if (!mu || mu->op != BD_OP_Mul || mu->n_in != 2) return -1;
    for (int s = 0; s < 2; s++) {
        int x = relu6_of_x_plus_3(c, mu->in[1 - s], &chain[1], &chain[2]);
        if (x >= 0 && x == mu->in[s]) {
            chain[0] = node_index(c, mu);
            return x;
        }
    }
    return -1;
}

/* Add(Erf(Div(X, sqrt 2) or Mul(X, 1/sqrt 2)), 1) made v: returns X, or -1;
 * chain gets its three nodes. */
static int one_plus_erf(const fa_ctx *c, int v, int chain[3])
{
    bd_node *ad = sole(c, v);
    if (!ad || ad->op != BD_OP_Add || ad->n_in != 2) return -1;
    for (int s = 0; s < 2; s++) {
        if (!const_is(c->g, ad->in[1 - s], 1.0f)) continue;
        bd_node *er = sole(c, ad->in[s]);
        if (!er || er->op != BD_OP_Erf || er->n_in != 1) continue;
        bd_node *sc = sole(c, er->in[0]);
        if (!sc || sc->n_in != 2) continue;
        int x = -1;
        if (sc->op == BD_OP_Div && const_is(c->g, sc->in[1], 1.41421356f)) x = sc->in[0];
        else if (sc->op == BD_OP_Mul && const_is(c->g, sc->in[1], 0.70710678f)) x = sc->in[0];
        else if (sc->op == BD_OP_Mul && const_is(c->g, sc->in[0], 0.70710678f)) x = sc->in[1];
        if (x < 0) continue;
        chain[0] = node_index(c, ad), chain[1] = node_index(c, er), chain[2] = node_index(c, sc);
        return x;
    }
    return -1;
}

/* x when e is made by Add(Erf(...x...), 1) (one_plus_erf, chain its nodes); else -1. */
static int erf_of(const fa_ctx *c, int e, int x, int chain[3])
{
    return x >= 0 && one_plus_erf(c, e, chain) == x ? x : -1;
}

/* Mul node n (the chain's last) computes GELU(X): returns X, or -1; chain
 * gets the other four nodes. n = Mul(a, Mul(p, q)), and with E = 1 + erf:
 * Mul(X, Mul(E, 0.5)), Mul(E, Mul(X, 0.5)) or Mul(Mul(X, E), 0.5). */
static int gelu_of(const fa_ctx *c, const bd_node *n, int chain[4])
{
    for (int s = 0; s < 2; s++) {
        int a = n->in[s];
        bd_node *m = sole(c, n->in[1 - s]);
        if (!m || m->op != BD_OP_Mul || m->n_in != 2) continue;
        for (int t = 0; t < 2; t++) {
            int p = m->in[t], q = m->in[1 - t], x = -1;
            if (const_is(c->g, q, 0.5f)) x = erf_of(c, p, a, chain + 1) >= 0 ? a : erf_of(c, a, p, chain + 1);
            else if (const_is(c->g, a, 0.5f)) x = erf_of(c, q, p, chain + 1);
            if (x >= 0) {
                chain[0] = node_index(c, m);
                return x;
            }
        }
    }
    return -1;
}

/* Node n becomes op (one input x, no attributes), parsed again. */
static braid_status become(bd_node *n, int op, const char *op_type, int64_t opset, int x, bd_err *e)
{
    char *t = bd_strdup(op_type);
    if (!t) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    bd_free(n->op_type);
    n->op_type = t;
    for (int i = 0; i < n->n_attrs; i++) bd_attr_free(&n->attrs[i]);
    n->n_attrs = 0;
    bd_free(n->params);
    n->params = NULL;
    n->op = op;
    n->opset = opset;
    n->n_in = 1;
    n->in[0] = x;
    return bd_op_parse(n, e);
}

/* Tries the patterns that end at node i; *fused counts the nodes that go. */
static braid_status try_node(fa_ctx *c, int i, int *fused, bd_err *e)
{
    bd_node *n = &c->g->nodes[i];
    int chain[4], x = -1, n_chain = 0, op = 0;
    if (n->n_out != 1 || n->n_in != 2 || (strcmp(n->domain ? n->domain : "", "") != 0)) return BRAID_OK;
    if (n->op == BD_OP_Div && const_is(c->g, n->in[1], 6)) { /* (X * relu6(X + 3)) / 6 */
        x = x_times_relu6(c, n->in[0], chain);
        n_chain = 3, op = BD_OP_HardSwish;
    } else if (n->op == BD_OP_Mul && (x = gelu_of(c, n, chain)) >= 0) {
        n_chain = 4, op = BD_OP_Gelu;
    } else if (n->op == BD_OP_Mul) {
        for (int s = 0; s < 2 && x < 0; s++) {
            int other = n->in[1 - s];
            if (const_is(c->g, n->in[s], 1.0f / 6)) { /* (X * relu6(X + 3)) * (1/6) */
                if ((x = x_times_relu6(c, other, chain)) >= 0) n_chain = 3, op = BD_OP_HardSwish;
                continue;
            }
            bd_node *a = sole(c, other);
            if (!a || a->n_in != 1 || a->in[0] != n->in[s]) continue;
            if (a->op == BD_OP_Sigmoid) { /* X * Sigmoid(X) */
                x = n->in[s], chain[0] = node_index(c, a), n_chain = 1, op = BD_OP_Swish;
            } else if (a->op == BD_OP_HardSigmoid) { /* X * HardSigmoid(X), alpha 1/6, beta 1/2 */
                float al = 0.2f, be = 0.5f;
                bd_err ignore;
                if (bd_attr_float(a, "alpha", 0.2f, &al, &ignore) || bd_attr_float(a, "beta", 0.5f, &be, &ignore) ||
                    fabsf(al - 1.0f / 6) > 1e-6f || fabsf(be - 0.5f) > 1e-6f)
                    continue;
                x = n->in[s], chain[0] = node_index(c, a), n_chain = 1, op = BD_OP_HardSwish;
            }
        }
    }
    if (x < 0 || !op) return BRAID_OK;
    /* X must be float32 where the model says (the constants were float32) */
    const bd_value *xv = &c->g->values[x];
    if (xv->dtype && xv->dtype != BRAID_DTYPE_FLOAT) return BRAID_OK;
    for (int k = 0; k < n_chain; k++) c->gone[chain[k]] = 1;
    *fused += n_chain;
    if (op == BD_OP_Gelu) return become(n, op, "Gelu", 20, x, e);
    return op == BD_OP_Swish ? become(n, op, "Swish", 24, x, e) : become(n, op, "HardSwish", 14, x, e);
}

braid_status bd_graph_fuse_act(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    fa_ctx c = {g, bd_calloc((size_t)g->n_values + 1, sizeof(int)), bd_malloc(((size_t)g->n_values + 1) * sizeof(int)),
                bd_calloc((size_t)g->n_nodes + 1, 1)};
    BD_CHECK_ALLOC(e, c.readers && c.producer && c.gone);
    for (int v = 0; v < g->n_values; v++) c.producer[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *n = &g->nodes[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) c.readers[n->in[k]]++;
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) c.producer[n->out[k]] = i;
    }
    int fused = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!c.gone[i]) BD_TRY(try_node(&c, i, &fused, e));
    if (fused) BD_TRY(bd_graph_drop_nodes(g, c.gone, e)); /* producers are re-derived */
fail:
    bd_free(c.readers);
    bd_free(c.producer);
    bd_free(c.gone);
    return st;
}
