/* rnn_rewrite.c: the load-time rewrites of recurrent nodes.
 *
 * Split: the two directions of a bidirectional LSTM, GRU, RNN or
 * DynamicQuantizeLSTM share only their inputs, so the node becomes two nodes
 * of the same op and attributes, "NAME/forward" and "NAME/reverse", each
 * running one direction (the internal attribute BD_RNN_PART_ATTR of
 * ops/rnn.h: it reads its direction's slice of W, R, B, P and the initial
 * states, and its outputs have one direction), plus one Concat per output
 * the node had, along the directions axis ("NAME/concat_Y", ...). The
 * planner then puts the two directions on two streams when the plan has
 * them and the work pays for the events.
 *
 * Transpose: a constant R (dirs, G*H, H) of an LSTM, GRU or RNN is replaced
 * by its transpose (dirs, H, G*H), once (nodes that share R share it), and
 * the node is marked (BD_RNN_RT_ATTR): every step multiplies the state by
 * R, and in this layout that product reads R's rows contiguously (OpenBLAS's
 * GEMV is 20 to 45% faster on it for the sizes of speech models). The
 * original goes when nothing else reads it. On x86-64, a float, float16 or
 * bfloat16 R is also packed (as float) into the panels the CPU kernel's
 * step product streams (ops/rnn.h), held by an inert value of the graph
 * and pointed to by the node's parameters: ONNX Runtime's prepacking. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "util/common.h"
#include "util/dtype.h"
#include "ops/ops.h"
#include "ops/rnn.h"

static int is_bidirectional(const bd_node *n)
{
    const bd_rnn_params *p = n->params;
    int rnn = n->op == BD_OP_LSTM || n->op == BD_OP_GRU || n->op == BD_OP_RNN || n->op == BD_OP_MS_DynamicQuantizeLSTM;
    return rnn && p && p->direction == BD_RNN_BIDIRECTIONAL && p->part < 0;
}

static braid_status copy_attr(const bd_attr *a, bd_attr *o, bd_err *e)
{
    memset(o, 0, sizeof *o);
    o->type = a->type;
    o->f = a->f;
    o->i = a->i;
    o->n = a->n;
    o->name = bd_strdup(a->name);
    if (!o->name) goto oom;
    if (a->s && !(o->s = bd_strdup(a->s))) goto oom;
    if (a->floats) {
        if (!(o->floats = bd_malloc((size_t)a->n * sizeof *o->floats + 1))) goto oom;
        memcpy(o->floats, a->floats, (size_t)a->n * sizeof *o->floats);
    }
    if (a->ints) {
        if (!(o->ints = bd_malloc((size_t)a->n * sizeof *o->ints + 1))) goto oom;
        memcpy(o->ints, a->ints, (size_t)a->n * sizeof *o->ints);
    }
    if (a->strings) {
        if (!(o->strings = bd_calloc((size_t)a->n + 1, sizeof *o->strings))) goto oom;
        for (int i = 0; i < a->n; i++)
            if (a->strings[i] && !(o->strings[i] = bd_strdup(a->strings[i]))) goto oom;
    }
    if (a->t) { /* the rnn ops have no tensor attributes; keep the type only */
        o->type = BD_ATTR_UNDEFINED;
    }
    return BRAID_OK;
oom:
    bd_attr_free(o);
    memset(o, 0, sizeof *o);
    return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
}

/* A value named base + suffix (made unique), or -1 when out of memory. */
static int new_value(bd_graph *g, const char *base, const char *suffix)
{
    char name[600];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    for (int k = 2; bd_graph_find_value(g, name) >= 0; k++) snprintf(name, sizeof name, "%s%s.%d", base, suffix, k);
    return bd_graph_add_value(g, name);
}

/* Fills *o as an empty node named NAME + suffix of op (op_type, domain) with
 * n_in inputs, n_out outputs and room for n_attrs attributes. */
static braid_status node_init(bd_node *o, const char *name, const char *suffix, int op, const char *op_type,
                              const char *domain, int opset, int n_in, int n_out, int n_attrs, bd_err *e)
{
    memset(o, 0, sizeof *o);
    size_t len = strlen(name) + strlen(suffix) + 1;
    o->name = bd_malloc(len);
    o->op_type = bd_strdup(op_type);
    o->domain = bd_strdup(domain);
    o->in = bd_malloc(((size_t)n_in + 1) * sizeof *o->in);
    o->out = bd_malloc(((size_t)n_out + 1) * sizeof *o->out);
    o->attrs = bd_calloc((size_t)n_attrs + 1, sizeof *o->attrs);
    if (!o->name || !o->op_type || !o->domain || !o->in || !o->out || !o->attrs)
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(o->name, len, "%s%s", name, suffix);
    o->op = op;
    o->opset = opset;
    o->n_in = n_in;
    o->n_out = n_out;
    return BRAID_OK;
}

/* Rewrites node i (bidirectional) into its forward half at i, and appends
 * its reverse half and the Concats after the graph's nodes. */
static braid_status split(bd_graph *g, int i, int concat_opset, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_node orig = g->nodes[i];
    const bd_rnn_params *p = orig.params;
    int layout = p->layout;
    bd_node half[2];
    int owned = 0; /* the graph holds the halves (and orig is out of it) */
    memset(half, 0, sizeof half);
    static const char *const suffix[2] = {"/forward", "/reverse"};
    static const char *const out_name[3] = {"/concat_Y", "/concat_Y_h", "/concat_Y_c"};
    for (int d = 0; d < 2; d++) {
        bd_node *h = &half[d];
        BD_TRY(node_init(h, orig.name, suffix[d], orig.op, orig.op_type, orig.domain, orig.opset, orig.n_in,
                         orig.n_out, orig.n_attrs + 1, e));
        memcpy(h->in, orig.in, (size_t)orig.n_in * sizeof *h->in);
        for (int k = 0; k < orig.n_attrs; k++, h->n_attrs++) BD_TRY(copy_attr(&orig.attrs[k], &h->attrs[k], e));
        bd_attr *pa = &h->attrs[h->n_attrs];
        pa->name = bd_strdup(BD_RNN_PART_ATTR);
        BD_CHECK_ALLOC(e, pa->name);
        pa->type = BD_ATTR_INT;
        pa->i = d;
        h->n_attrs++;
        for (int k = 0; k < orig.n_out; k++) {
            h->out[k] = -1;
            if (orig.out[k] < 0) continue;
            int v = new_value(g, g->values[orig.out[k]].name, suffix[d]);
            BD_CHECK_ALLOC(e, v >= 0);
            h->out[k] = v;
        }
        st = bd_op_parse(h, e);
        if (st) goto fail;
    }
    int n_cat = 0;
    for (int k = 0; k < orig.n_out; k++) n_cat += orig.out[k] >= 0;
    bd_node *grown = bd_realloc(g->nodes, ((size_t)g->n_nodes + (size_t)n_cat + 2) * sizeof *grown);
    BD_CHECK_ALLOC(e, grown);
    g->nodes = grown;
    g->nodes[i] = half[0];
    g->nodes[g->n_nodes++] = half[1];
    owned = 1;
    for (int k = 0; k < orig.n_out; k++) {
        if (orig.out[k] < 0) continue;
        bd_node *c = &g->nodes[g->n_nodes];
        st = node_init(c, orig.name, out_name[k], BD_OP_Concat, "Concat", "", concat_opset, 2, 1, 1, e);
        g->n_nodes++; /* counted now so that the graph frees a half-made node */
        if (st) goto fail;
        c->in[0] = half[0].out[k];
        c->in[1] = half[1].out[k];
        c->out[0] = orig.out[k];
        c->attrs[0].name = bd_strdup("axis");
        BD_CHECK_ALLOC(e, c->attrs[0].name);
        c->attrs[0].type = BD_ATTR_INT;
        /* the directions axis: Y (seq, dirs, batch, H) or (batch, seq, dirs, H);
         * Y_h and Y_c (dirs, batch, H) or (batch, dirs, H) */
        c->attrs[0].i = k == 0 ? (layout ? 2 : 1) : (layout ? 1 : 0);
        c->n_attrs = 1;
        BD_TRY(bd_op_parse(c, e));
    }
fail:
    if (owned) bd_node_free(&orig);
    else bd_node_free(&half[0]), bd_node_free(&half[1]);
    return st;
}

/* Appends the int attribute name = v to node n. */
static braid_status add_int_attr(bd_node *n, const char *name, int64_t v, bd_err *e)
{
    bd_attr *a = bd_realloc(n->attrs, ((size_t)n->n_attrs + 2) * sizeof *a);
    if (!a) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    n->attrs = a;
    memset(&a[n->n_attrs], 0, sizeof *a);
    a[n->n_attrs].name = bd_strdup(name);
    if (!a[n->n_attrs].name) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    a[n->n_attrs].type = BD_ATTR_INT;
    a[n->n_attrs].i = v;
    n->n_attrs++;
    return BRAID_OK;
}

/* A value holding R^T (dims D, H, GH of dtype dt at rt) packed into float
 * panels; -1 when out of memory. Not a constant: nothing reads it but the
 * CPU kernel, through the node's parameters. */
static int pack_value(bd_graph *g, const char *base, int dt, const char *rt, int64_t D, int64_t H, int64_t GH)
{
    int64_t np = bd_rnn_panels(GH);
    size_t es = bd_dtype_size(dt);
    float *pack = bd_malloc((size_t)(D * np * H * BD_RNN_PANEL) * sizeof *pack + 1);
    float *tmp = bd_malloc((size_t)(H * GH) * sizeof *tmp + 1);
    int v = pack && tmp ? new_value(g, base, "^P") : -1;
    if (v < 0) {
        bd_free(pack), bd_free(tmp);
        return -1;
    }
    for (int64_t d = 0; d < D; d++) {
        const char *src = rt + (size_t)(d * H * GH) * es;
        for (int64_t i = 0; i < H * GH; i++)
            tmp[i] = dt == BRAID_DTYPE_FLOAT ? ((const float *)src)[i]
                     : dt == BRAID_DTYPE_FLOAT16 ? bd_half_to_float(((const uint16_t *)src)[i])
                                                 : bd_bf16_to_float(((const uint16_t *)src)[i]);
        bd_rnn_pack(tmp, GH, 1, H, GH, pack + d * np * H * BD_RNN_PANEL);
    }
    bd_free(tmp);
    bd_value *val = &g->values[v];
    val->dtype = BRAID_DTYPE_FLOAT;
    val->rank = 4;
    val->dims[0] = D, val->dims[1] = np, val->dims[2] = H, val->dims[3] = BD_RNN_PANEL;
    val->data = pack;
    return v;
}

/* Replaces the constant R of every LSTM, GRU and RNN by its transpose. */
static braid_status transpose_r(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    int nv = g->n_values;
    int *done = bd_malloc(((size_t)nv + 1) * sizeof *done); /* per value: its transpose, or -1 */
    int *packed = bd_malloc(((size_t)nv + 1) * sizeof *packed); /* per value: its panels, or -1 */
    int *readers = bd_calloc((size_t)nv + 1, sizeof *readers);
    BD_CHECK_ALLOC(e, done && packed && readers);
    for (int v = 0; v < nv; v++) done[v] = packed[v] = -1;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            if (g->nodes[i].in[k] >= 0) readers[g->nodes[i].in[k]]++;
    for (int i = 0; i < g->n_nodes; i++) {
        bd_node *n = &g->nodes[i];
        const bd_rnn_params *p = n->params;
        if ((n->op != BD_OP_LSTM && n->op != BD_OP_GRU && n->op != BD_OP_RNN) || !p || p->r_transposed || n->n_in < 3)
            continue;
        int rv = n->in[2];
        if (rv < 0 || rv >= nv) continue;
        const bd_value *r = &g->values[rv];
        size_t es = bd_dtype_size(r->dtype);
        if (!(r->flags & BD_VAL_CONST) || !r->data || r->rank != 3 || !es) continue;
        int64_t D = r->dims[0], GH = r->dims[1], H = r->dims[2];
        /* only R of the shape the node wants: a wrong one keeps its shape for the message */
        if (D != p->dirs || GH != p->gates * H || (p->hidden && H != p->hidden)) continue;
        if (done[rv] < 0) {
            char *t = bd_malloc((size_t)(D * GH * H) * es + 1);
            BD_CHECK_ALLOC(e, t);
            const char *src = r->data;
            for (int64_t d = 0; d < D; d++)
                for (int64_t a = 0; a < GH; a++)
                    for (int64_t b = 0; b < H; b++)
                        memcpy(t + (size_t)((d * H + b) * GH + a) * es, src + (size_t)((d * GH + a) * H + b) * es, es);
            int tv = new_value(g, g->values[rv].name, "^T");
            if (tv < 0) { bd_free(t); st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
            bd_value *val = &g->values[tv]; /* (adding a value may move g->values) */
            val->dtype = g->values[rv].dtype;
            val->rank = 3;
            val->dims[0] = D, val->dims[1] = H, val->dims[2] = GH;
            val->data = t;
            val->flags = BD_VAL_CONST;
            done[rv] = tv;
#if defined(__x86_64__)
            int dt = val->dtype;
            if (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16) {
                packed[rv] = pack_value(g, g->values[rv].name, dt, t, D, H, GH);
                if (packed[rv] < 0) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
            }
#endif
        }
        BD_TRY(add_int_attr(n, BD_RNN_RT_ATTR, 1, e));
        n->in[2] = done[rv];
        readers[rv]--;
        st = bd_op_parse(n, e);
        if (st) { bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type); goto fail; }
        if (packed[rv] >= 0) {
            bd_rnn_params *np = n->params;
            np->pack = g->values[packed[rv]].data;
            np->pack_of = g->values[done[rv]].data;
        }
    }
    for (int v = 0; v < nv; v++) { /* drop what no node reads now */
        bd_value *val = &g->values[v];
        if (done[v] < 0 || readers[v] > 0 || (val->flags & (BD_VAL_INPUT | BD_VAL_OUTPUT))) continue;
        bd_free(val->data);
        val->data = NULL;
        val->flags &= ~(unsigned)BD_VAL_CONST;
    }
fail:
    bd_free(done);
    bd_free(packed);
    bd_free(readers);
    return st;
}

braid_status bd_graph_rewrite_rnn(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    int n = g->n_nodes, any = 0, opset = 13;
    for (int i = 0; i < g->n_opsets; i++)
        if (!g->opsets[i].domain[0] && g->opsets[i].version >= 4) opset = (int)g->opsets[i].version;
    for (int i = 0; i < n; i++) {
        if (!is_bidirectional(&g->nodes[i])) continue;
        st = split(g, i, opset, e);
        if (st) {
            bd_err_prefix(e, "node '%s' (%s): splitting its two directions: ", g->nodes[i].name,
                          g->nodes[i].op_type);
            return st;
        }
        any = 1;
    }
    if (any) BD_TRY(bd_graph_toposort(g, e));
    return transpose_r(g, e);
fail:
    return st;
}
