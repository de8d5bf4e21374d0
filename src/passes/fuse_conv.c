/* fuse_conv.c: fusions of Conv with what follows it, in two places.
 *
 * At load (bd_graph_fuse), first: a per-channel affine right after a Conv (a
 * BatchNormalization, or a Mul and/or an Add by constants of one value per
 * output channel, as exporters that unfold BatchNormalization write it) is
 * folded into new weight and bias constants, W'[m] = W[m] * s[m] and
 * b'[m] = b[m] * s[m] + t[m]; the Conv writes the affine's output and is
 * named "conv+mul+add" (or "conv+bn"). The old weights go when nothing else
 * reads them. Then: a float Conv (not one known to be float16 or bfloat16,
 * whose reference rounds before the activation) whose output is read by exactly one node, a
 * Relu, LeakyRelu, Clip (with constant bounds), HardSigmoid, HardSwish,
 * Sigmoid or Swish with alpha 1, and is not a graph output, takes that activation into its
 * epilogue: the activation node goes, the Conv writes the activation's
 * output, and its name becomes "conv+act" (a Sigmoid and the Mul of the
 * Conv's output by it, x sigmoid(x), go the same way: "conv+sigmoid+mul"). It
 * never changes what can run concurrently (the activation had no other
 * reader) and saves one pass over the tensor.
 *
 * At plan time (bd_inst_fuse_add): an Add whose input is a Conv's only use
 * folds into that Conv (the Conv reads the Add's other input, the residual,
 * in its epilogue), with the Relu, LeakyRelu or Clip after the Add when there
 * is one. When the residual is already computed before the Conv starts (a
 * ResNet skip), this only saves work. When it comes from a branch that could
 * run beside the Conv (two convolutions into an Add), folding makes the Conv
 * wait for that branch, so the fold is taken only where the instance's
 * estimated time does not grow: serial plans, and nodes big enough to fill
 * the device alone, fold; small concurrent branches stay concurrent. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "passes/instance.h"
#include "ops/conv.h"
#include "ops/norm.h"

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
    case BD_OP_HardSigmoid:
        *act = BD_ACT_HSIGMOID;
        return bd_attr_float(r, "alpha", 0.2f, a, &ignore) == BRAID_OK &&
               bd_attr_float(r, "beta", 0.5f, b, &ignore) == BRAID_OK;
    case BD_OP_HardSwish: *act = BD_ACT_HSWISH; return 1;
    case BD_OP_Sigmoid: *act = BD_ACT_SIGMOID; return 1;
    case BD_OP_Swish: { /* fuse_act.c writes X * Sigmoid(X) as Swish (alpha 1) */
        float al = 1.0f;
        *act = BD_ACT_SILU;
        return bd_attr_float(r, "alpha", 1.0f, &al, &ignore) == BRAID_OK && al == 1.0f;
    }
    default: return 0;
    }
}

/* 1 when Conv node c is known to run float16 or bfloat16: its activation
 * stays a node of its own, since the reference rounds the Conv's output
 * before the activation and an epilogue would round once after it. */
static int half_conv(const bd_graph *g, const bd_node *c)
{
    for (int i = 0; i < 2 && i < c->n_in; i++) {
        int v = c->in[i];
        if (v >= 0 && (g->values[v].dtype == BRAID_DTYPE_FLOAT16 || g->values[v].dtype == BRAID_DTYPE_BFLOAT16))
            return 1;
    }
    return 0;
}

/* ---- load time: a per-channel affine folded into the Conv before it --------------- */

int bd_graph_channel_const(const bd_graph *g, int v, int R, int64_t C, const float **f, int *stride)
{
    if (v < 0) return 0;
    const bd_value *val = &g->values[v];
    if (!(val->flags & BD_VAL_CONST) || val->dtype != BRAID_DTYPE_FLOAT || !val->data || val->rank < 0 ||
        val->rank > R)
        return 0;
    int ch = 1 - (R - val->rank), per = 0; /* the constant's dim that lines up with the channels */
    for (int d = 0; d < val->rank; d++) {
        if (val->dims[d] == 1) continue;
        if (d != ch || val->dims[d] != C) return 0;
        per = 1;
    }
    *f = val->data;
    *stride = per;
    return 1;
}

/* The affine that node r (reading v, a Conv output of rank R with C
 * channels) applies, as y = x * s + t with s or t NULL for 1 or 0 (their
 * strides as bd_graph_channel_const's); BatchNormalization's s and t go to buf (2 C). */
static int affine_of(const bd_graph *g, const bd_node *r, int v, int R, int64_t C, const float **s, int *ss,
                     const float **t, int *ts, float *buf)
{
    *s = *t = NULL;
    *ss = *ts = 0;
    if (r->n_out != 1 || r->out[0] < 0) return 0;
    if ((r->op == BD_OP_Mul || r->op == BD_OP_Add) && r->n_in == 2 && (r->in[0] == v) != (r->in[1] == v)) {
        int k = r->in[0] == v ? 1 : 0;
        return r->op == BD_OP_Mul ? bd_graph_channel_const(g, r->in[k], R, C, s, ss)
                                  : bd_graph_channel_const(g, r->in[k], R, C, t, ts);
    }
    if (r->op == BD_OP_BatchNormalization && r->n_in == 5 && r->in[0] == v && r->params &&
        !((const bd_norm_params *)r->params)->training) { /* training mode normalizes by the batch */
        const float *sc, *b, *mean, *var;
        int s1, s2, s3, s4;
        if (!bd_graph_channel_const(g, r->in[1], 2, C, &sc, &s1) ||
            !bd_graph_channel_const(g, r->in[2], 2, C, &b, &s2) ||
            !bd_graph_channel_const(g, r->in[3], 2, C, &mean, &s3) ||
            !bd_graph_channel_const(g, r->in[4], 2, C, &var, &s4))
            return 0;
        double eps = ((const bd_norm_params *)r->params)->epsilon;
        for (int64_t m = 0; m < C; m++) { /* as the BatchNormalization kernel: in double */
            double a = sc[m * s1] / sqrt((double)var[m * s4] + eps);
            buf[m] = (float)a;
            buf[C + m] = (float)(b[m * s2] - mean[m * s3] * a);
        }
        *s = buf;
        *t = buf + C;
        *ss = *ts = 1;
        return 1;
    }
    return 0;
}

int bd_graph_new_const(bd_graph *g, const char *base, const char *suffix, int rank, const int64_t *dims, float *data)
{
    char name[512];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    int v = bd_graph_add_value(g, name);
    if (v < 0) return -1;
    bd_value *val = &g->values[v];
    val->dtype = BRAID_DTYPE_FLOAT;
    val->rank = rank;
    memcpy(val->dims, dims, (size_t)rank * sizeof *dims);
    val->data = data;
    val->flags = BD_VAL_CONST;
    return v;
}

braid_status bd_graph_drop_nodes(bd_graph *g, const unsigned char *gone, bd_err *e)
{
    int w = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!gone[i]) { g->nodes[w++] = g->nodes[i]; continue; }
        bd_node_free(&g->nodes[i]);
    }
    g->n_nodes = w;
    return bd_graph_toposort(g, e);
}

void bd_graph_drop_if_unread(bd_graph *g, int v, const int *readers)
{
    if (v < 0 || readers[v] > 0) return;
    bd_value *val = &g->values[v];
    if (!(val->flags & BD_VAL_CONST) || (val->flags & (BD_VAL_INPUT | BD_VAL_OUTPUT))) return;
    bd_free(val->data);
    val->data = NULL;
    val->flags &= ~(unsigned)BD_VAL_CONST;
}

#define MAX_AFFINE 4

/* Folds the affine nodes after Conv node i (BatchNormalization, Mul and Add by
 * per-channel constants, up to MAX_AFFINE in a row); *folded counts the nodes
 * that go. */
static braid_status fold_affine(bd_graph *g, int i, int *readers, int *reader, unsigned char *gone, int *folded,
                                bd_err *e)
{
    bd_node *c = &g->nodes[i];
    const bd_conv_params *cp = c->params;
    if (c->op != BD_OP_Conv || !cp || cp->act != BD_ACT_NONE || c->n_out != 1 || c->out[0] < 0 || c->n_in < 2)
        return BRAID_OK;
    int wv = c->in[1], bv = c->n_in > 2 ? c->in[2] : -1;
    if (wv < 0) return BRAID_OK; /* W left out: shape inference refuses the node */
    const bd_value *w = &g->values[wv];
    if (!(w->flags & BD_VAL_CONST) || w->dtype != BRAID_DTYPE_FLOAT || !w->data || w->rank < 3) return BRAID_OK;
    int R = w->rank;
    int64_t C = w->dims[0], per = 1;
    for (int d = 1; d < R; d++) per *= w->dims[d];
    const float *b0 = NULL;
    int bs = 0;
    /* (as BatchNormalization's inputs: a 1-D (C) lines up with the channels of a rank-2 (N, C)) */
    if (bv >= 0 && (!bd_graph_channel_const(g, bv, 2, C, &b0, &bs) || g->values[bv].rank != 1)) return BRAID_OK;
    /* A chain of affine nodes (affine after affine is affine), each the only
     * reader of what it reads. */
    const float *s[MAX_AFFINE], *t[MAX_AFFINE];
    int ss[MAX_AFFINE], ts[MAX_AFFINE], nodes[MAX_AFFINE], n_aff = 0, v = c->out[0];
    if (readers[v] != 1) return BRAID_OK;
    int op = g->nodes[reader[v]].op;
    if (op != BD_OP_Mul && op != BD_OP_Add && op != BD_OP_BatchNormalization) return BRAID_OK;
    float *bn = bd_malloc(((size_t)2 * MAX_AFFINE * (size_t)C + 1) * sizeof *bn);
    if (!bn) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    while (n_aff < MAX_AFFINE && readers[v] == 1 && !(g->values[v].flags & BD_VAL_OUTPUT)) {
        const bd_node *r = &g->nodes[reader[v]];
        if (!affine_of(g, r, v, R, C, &s[n_aff], &ss[n_aff], &t[n_aff], &ts[n_aff], bn + 2 * C * n_aff)) break;
        nodes[n_aff++] = reader[v];
        v = r->out[0];
    }
    if (!n_aff) { bd_free(bn); return BRAID_OK; }
    float *nw = bd_malloc((size_t)(C * per) * sizeof *nw), *nb = bd_malloc((size_t)C * sizeof *nb);
    if (!nw || !nb) {
        bd_free(bn);
        bd_free(nw);
        bd_free(nb);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t m = 0; m < C; m++) {
        float sc = 1.0f, bias = b0 ? b0[m * bs] : 0.0f;
        for (int k = 0; k < n_aff; k++) { /* x * s + t, node after node */
            float sk = s[k] ? s[k][m * ss[k]] : 1.0f, tk = t[k] ? t[k][m * ts[k]] : 0.0f;
            sc *= sk;
            bias = bias * sk + tk;
        }
        const float *src = (const float *)w->data + m * per;
        for (int64_t j = 0; j < per; j++) nw[m * per + j] = src[j] * sc;
        nb[m] = bias;
    }
    bd_free(bn);
    int64_t bdims[1] = {C}, wdims[BD_MAX_RANK];
    memcpy(wdims, w->dims, sizeof wdims); /* adding values may move g->values */
    int nwv = bd_graph_new_const(g, c->name, ".W+affine", R, wdims, nw);
    if (nwv < 0) { bd_free(nw); bd_free(nb); return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    int nbv = bd_graph_new_const(g, c->name, ".B+affine", 1, bdims, nb);
    if (nbv < 0) { bd_free(nb); return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    size_t len = strlen(c->name) + 1;
    for (int k = 0; k < n_aff; k++) len += strlen(g->nodes[nodes[k]].name) + 1;
    char *name = bd_malloc(len);
    if (!name) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    strcpy(name, c->name);
    for (int k = 0; k < n_aff; k++) strcat(strcat(name, "+"), g->nodes[nodes[k]].name);
    bd_free(c->name);
    c->name = name;
    readers[wv]--;
    if (bv >= 0) readers[bv]--;
    c->in[1] = nwv;
    c->in[2] = nbv; /* the loader left room for a third input */
    c->n_in = 3;
    c->out[0] = v;
    for (int k = 0; k < n_aff; k++) {
        const bd_node *r = &g->nodes[nodes[k]];
        for (int j = 0; j < r->n_in; j++)
            if (r->in[j] >= 0) readers[r->in[j]]--;
        gone[nodes[k]] = 1;
        for (int j = 1; j < r->n_in; j++) bd_graph_drop_if_unread(g, r->in[j], readers);
    }
    bd_graph_drop_if_unread(g, wv, readers);
    bd_graph_drop_if_unread(g, bv, readers);
    *folded += n_aff;
    return BRAID_OK;
}

/* The Sigmoid s whose output only a Mul reads, the Mul of v by s (v read by
 * those two nodes alone); -1 when v is not so read. */
static int silu_of(const bd_graph *g, int v, const int *readers, const int *reader, const unsigned char *gone)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *s = &g->nodes[i];
        if (gone[i] || s->op != BD_OP_Sigmoid || s->n_in != 1 || s->in[0] != v || s->n_out != 1) continue;
        int sv = s->out[0];
        if (sv < 0 || readers[sv] != 1 || (g->values[sv].flags & BD_VAL_OUTPUT)) return -1;
        const bd_node *m = &g->nodes[reader[sv]];
        if (gone[reader[sv]] || m->op != BD_OP_Mul || m->n_in != 2 || m->n_out != 1 || m->out[0] < 0) return -1;
        if (!((m->in[0] == v && m->in[1] == sv) || (m->in[0] == sv && m->in[1] == v))) return -1;
        return i;
    }
    return -1;
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
    for (int i = 0; i < g->n_nodes; i++)
        if (!gone[i]) BD_TRY(fold_affine(g, i, readers, reader, gone, &fused, e));
    for (int i = 0; i < g->n_nodes; i++) {
        bd_node *c = &g->nodes[i];
        if (gone[i]) continue;
        if (c->op != BD_OP_Conv || !c->params || c->n_out != 1 || half_conv(g, c)) continue;
        int v = c->out[0], silu = -1;
        if (v >= 0 && readers[v] == 2 && !(g->values[v].flags & BD_VAL_OUTPUT)) silu = silu_of(g, v, readers, reader, gone);
        if (silu >= 0) { /* Conv -> Sigmoid -> Mul(conv, sigmoid): x sigmoid(x) */
            bd_node *s = &g->nodes[silu], *m = &g->nodes[reader[s->out[0]]];
            char *name = bd_malloc(strlen(c->name) + strlen(s->name) + strlen(m->name) + 3);
            BD_CHECK_ALLOC(e, name);
            sprintf(name, "%s+%s+%s", c->name, s->name, m->name);
            bd_free(c->name);
            c->name = name;
            bd_conv_params *p = c->params;
            p->act = BD_ACT_SILU;
            p->act_a = p->act_b = 0;
            c->out[0] = m->out[0];
            gone[reader[s->out[0]]] = 1;
            gone[silu] = 1;
            fused += 2;
            continue;
        }
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
    if (fused) BD_TRY(bd_graph_drop_nodes(g, gone, e)); /* producers are re-derived */
fail:
    bd_free(readers);
    bd_free(reader);
    bd_free(gone);
    return st;
}

/* ---- plan time: an Add folded into the Conv that feeds it ------------------------ */

/* Who makes and who reads each value among the instance's live nodes. */
typedef struct use_map {
    int *prod;   /* per value: the live node that writes it, -1 for none */
    int *nread;  /* per value: live input slots that read it */
    int *reader; /* per value: the last such node */
} use_map;

static void use_map_fill(const bd_inst *x, use_map *u)
{
    const bd_graph *g = x->g;
    for (int v = 0; v < g->n_values; v++) u->prod[v] = -1, u->nread[v] = 0, u->reader[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!x->live[i]) continue;
        const bd_node *n = x->node[i];
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0) { u->nread[n->in[k]]++; u->reader[n->in[k]] = i; }
        for (int k = 0; k < n->n_out; k++)
            if (n->out[k] >= 0) u->prod[n->out[k]] = i;
    }
}

/* One way to fold Add node a: the Conv c writes the Add's result (or that of
 * the activation r after it), reading the residual z. */
typedef struct fold_cand {
    int c, a, r; /* r: -1 when no activation folds */
    int z;       /* the residual value */
    int act;
    float act_a, act_b;
    double cost; /* estimated cost of the fused node */
} fold_cand;

/* The share of the device a node of cost c occupies (see bd_inst_fuse_add). */
static double occupancy(double c, int lanes, double fill_cost)
{
    double f = 1.0 / lanes;
    if (fill_cost > 0 && c / fill_cost > f) f = c / fill_cost < 1 ? c / fill_cost : 1;
    return f;
}

/* The estimated time of the live DAG, with candidate f applied when given:
 * the longer of its critical path and its total work weighted by the share
 * of the device each node occupies (nodes that fill the device add up; small
 * ones overlap up to `lanes` at a time). finish: n_nodes scratch. */
static double est_time(const bd_inst *x, const use_map *u, const fold_cand *f, int lanes, double fill_cost,
                       double *finish)
{
    const bd_graph *g = x->g;
    double crit = 0, occ = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        if (!x->live[i]) continue;
        const bd_node *n = x->node[i];
        double start = 0, c = x->cost[i];
        for (int k = 0; k < n->n_in; k++) {
            int p = n->in[k] >= 0 ? u->prod[n->in[k]] : -1;
            if (p >= 0) start = BD_MAX(start, finish[p]);
        }
        if (f && (i == f->c || i == f->r)) c = 0; /* their work moves into the fused node, at a */
        if (f && i == f->a) c = f->cost;
        finish[i] = start + c;
        crit = BD_MAX(crit, finish[i]);
        occ += c * occupancy(c, lanes, fill_cost);
    }
    return BD_MAX(crit, occ);
}

/* 1 when node p is one of c's ancestors among the live nodes. */
static int reaches(const bd_inst *x, const use_map *u, int p, int c, int *stack, unsigned char *seen)
{
    int top = 0, found = 0;
    memset(seen, 0, (size_t)x->g->n_nodes);
    stack[top++] = c;
    seen[c] = 1;
    while (top && !found) {
        const bd_node *n = x->node[stack[--top]];
        for (int k = 0; k < n->n_in; k++) {
            int q = n->in[k] >= 0 ? u->prod[n->in[k]] : -1;
            if (q < 0 || seen[q]) continue;
            if (q == p) { found = 1; break; }
            seen[q] = 1;
            stack[top++] = q;
        }
    }
    return found;
}

static int same_shape(const bd_tensor *a, const bd_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return 0;
    return 1;
}

/* Whether input k of Add node a can fold into its producer; fills f. */
static int candidate(const bd_inst *x, const use_map *u, int a, int k, fold_cand *f)
{
    const bd_graph *g = x->g;
    const bd_node *an = x->node[a];
    int v = an->in[k], z = an->in[1 - k];
    if (v < 0 || z < 0 || v == z || an->n_out != 1 || an->out[0] < 0) return 0;
    int c = u->prod[v];
    if (c < 0 || u->nread[v] != 1 || (g->values[v].flags & BD_VAL_OUTPUT) || (x->vflag[v] & BD_IV_EXPORT)) return 0;
    const bd_node *cn = x->node[c];
    const bd_conv_params *p = cn->params;
    if (cn->op != BD_OP_Conv || !p || p->res != BD_RES_NONE || cn->n_out != 1) return 0;
    const bd_tensor *y = &x->vals[v];
    if (y->dtype != BRAID_DTYPE_FLOAT || !same_shape(y, &x->vals[z]) || !same_shape(y, &x->vals[an->out[0]]))
        return 0;
    *f = (fold_cand){.c = c, .a = a, .r = -1, .z = z, .act = p->act, .act_a = p->act_a, .act_b = p->act_b};
    f->cost = x->cost[c] + x->cost[a] / 3; /* the Add's pass becomes one more read */
    int w = an->out[0], r = u->reader[w];
    if (p->act == BD_ACT_NONE && r >= 0 && u->nread[w] == 1 && !(g->values[w].flags & BD_VAL_OUTPUT) &&
        !(x->vflag[w] & BD_IV_EXPORT)) {
        const bd_node *rn = x->node[r];
        int act;
        float aa, bb;
        if (rn->in[0] == w && rn->n_out == 1 && rn->out[0] >= 0 && !(x->vflag[rn->out[0]] & BD_IV_EXPORT) &&
            act_of(g, rn, &act, &aa, &bb)) {
            f->r = r;
            f->act = act;
            f->act_a = aa;
            f->act_b = bb;
        }
    }
    return 1;
}

/* Rewrites the instance: the fused copy of the Conv takes the Add's place
 * (the Add follows both of its producers in node order). */
static braid_status apply_fold(bd_inst *x, const fold_cand *f, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *cn = x->node[f->c], *an = x->node[f->a];
    const bd_node *rn = f->r >= 0 ? x->node[f->r] : NULL;
    bd_node *n = &x->fused[x->n_fused];
    *n = *cn; /* op, attributes and domain stay the graph's */
    size_t len = strlen(cn->name) + strlen(an->name) + (rn ? strlen(rn->name) + 1 : 0) + 2;
    n->name = bd_malloc(len);
    n->in = bd_malloc(4 * sizeof *n->in);
    n->out = bd_malloc(sizeof *n->out);
    bd_conv_params *p = bd_malloc(sizeof *p);
    n->params = p;
    if (!n->name || !n->in || !n->out || !p) {
        bd_free(n->name);
        bd_free(n->in);
        bd_free(n->out);
        bd_free(p);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    x->n_fused++;
    snprintf(n->name, len, "%s+%s%s%s", cn->name, an->name, rn ? "+" : "", rn ? rn->name : "");
    n->n_in = 4;
    n->in[0] = cn->in[0];
    n->in[1] = cn->in[1];
    n->in[2] = cn->n_in > 2 ? cn->in[2] : -1;
    n->in[3] = f->z;
    n->n_out = 1;
    n->out[0] = rn ? rn->out[0] : an->out[0];
    *p = *(const bd_conv_params *)cn->params;
    p->res = p->act != BD_ACT_NONE ? BD_RES_POST : BD_RES_PRE; /* a load-time activation comes first */
    p->act = f->act;
    p->act_a = f->act_a;
    p->act_b = f->act_b;
    x->node[f->a] = n;
    x->cost[f->a] = f->cost;
    x->live[f->c] = 0;
    x->cost[f->c] = 0;
    if (f->r >= 0) { x->live[f->r] = 0; x->cost[f->r] = 0; }
    return st;
}

braid_status bd_inst_fuse_add(bd_inst *x, int lanes, double fill_cost, int *n_folded, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = x->g;
    int nn = g->n_nodes, nv = g->n_values, adds = 0;
    *n_folded = 0;
    if (lanes < 1) lanes = 1;
    for (int i = 0; i < nn; i++) adds += x->live[i] && x->node[i]->op == BD_OP_Add;
    if (!adds) return BRAID_OK;
    use_map u = {bd_malloc(((size_t)nv + 1) * sizeof(int)), bd_malloc(((size_t)nv + 1) * sizeof(int)),
                 bd_malloc(((size_t)nv + 1) * sizeof(int))};
    double *finish = bd_malloc(((size_t)nn + 1) * sizeof *finish);
    int *stack = bd_malloc(((size_t)nn + 1) * sizeof *stack);
    unsigned char *seen = bd_malloc((size_t)nn + 1);
    x->fused = bd_calloc((size_t)adds, sizeof *x->fused);
    BD_CHECK_ALLOC(e, u.prod && u.nread && u.reader && finish && stack && seen && x->fused);
    use_map_fill(x, &u);
    for (int a = 0; a < nn; a++) {
        if (!x->live[a] || x->node[a]->op != BD_OP_Add || x->node[a]->n_in != 2) continue;
        fold_cand best = {0}, f;
        double best_t = 0, base = -1;
        int have = 0;
        for (int k = 0; k < 2; k++) {
            if (!candidate(x, &u, a, k, &f)) continue;
            int zp = u.prod[f.z];
            double t = 0;
            /* A residual made before the Conv starts (or a graph input or
             * constant) costs no concurrency; neither does a serial plan. */
            if (lanes > 1 && zp >= 0 && !reaches(x, &u, zp, f.c, stack, seen)) {
                if (base < 0) base = est_time(x, &u, NULL, lanes, fill_cost, finish);
                t = est_time(x, &u, &f, lanes, fill_cost, finish);
                if (t > base) continue;
            }
            if (!have || t < best_t) { best = f; best_t = t; have = 1; }
        }
        if (!have) continue;
        BD_TRY(apply_fold(x, &best, e));
        use_map_fill(x, &u);
        (*n_folded)++;
    }
fail:
    bd_free(u.prod);
    bd_free(u.nread);
    bd_free(u.reader);
    bd_free(finish);
    bd_free(stack);
    bd_free(seen);
    return st;
}
