/* fuse_affine_in.c: an affine applied to a Conv's input, folded into that
 * Conv's weights at load (bd_graph_fuse_affine_in).
 *
 * PP-LCNet (PP-OCRv4's recognizer) scales and shifts each activation by
 * learned scalars before the next convolution: X -> Mul(X, s) -> Add(., t)
 * -> Conv. When the Conv pads nothing, Conv(s X + t) = Conv'(X) with
 *   W'[m, c, ...] = W[m, c, ...] s[c]   and   b'[m] = b[m] + sum_{c, taps} W[m, c, ...] t[c]
 * exactly in real numbers (with padding, the padded zeros would not get t, so
 * such Convs are left alone). s and t may be scalars or one value per input
 * channel; a chain of up to four Mul/Add nodes by such constants folds at
 * once. Each node of the chain must be the only reader of what it reads (the
 * first reads X, which others may read too) and not make a graph output; the
 * chain's nodes go and the Conv reads X. The results differ from the chain's
 * by float32 rounding only. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"
#include "ops/conv.h"
#include "ops/ops.h"

#define MAX_CHAIN 4

static int pads_nothing(const bd_conv_params *p)
{
    if (p->auto_pad != BD_PAD_NOTSET && p->auto_pad != BD_PAD_VALID) return 0;
    if (p->auto_pad == BD_PAD_VALID) return 1;
    for (int i = 0; i < p->n_pads; i++)
        if (p->pads[i] != 0) return 0;
    return 1;
}

/* Folds the chain before Conv node i, if there is one; *folded counts the
 * nodes that go. */
static braid_status fold_in(bd_graph *g, int i, int *readers, const int *producer, unsigned char *gone, int *folded,
                            bd_err *e)
{
    bd_node *c = &g->nodes[i];
    const bd_conv_params *cp = c->params;
    if (c->op != BD_OP_Conv || !cp || c->n_out != 1 || c->n_in < 2 || c->in[0] < 0 || c->in[1] < 0 ||
        !pads_nothing(cp) || cp->group < 1)
        return BRAID_OK;
    int wv = c->in[1], bv = c->n_in > 2 ? c->in[2] : -1;
    const bd_value *w = &g->values[wv];
    if (!(w->flags & BD_VAL_CONST) || w->dtype != BRAID_DTYPE_FLOAT || !w->data || w->rank < 3) return BRAID_OK;
    if (bv >= 0) {
        const bd_value *b = &g->values[bv];
        if (!(b->flags & BD_VAL_CONST) || b->dtype != BRAID_DTYPE_FLOAT || !b->data || b->rank != 1 ||
            b->dims[0] != w->dims[0])
            return BRAID_OK;
    }
    int R = w->rank;
    int64_t M = w->dims[0], cg = w->dims[1], C = cg * cp->group, taps = 1;
    for (int d = 2; d < R; d++) taps *= w->dims[d];
    if (M % cp->group) return BRAID_OK;
    /* The chain, walked back from the Conv's input: nodes[0] is the last. */
    const float *s[MAX_CHAIN], *t[MAX_CHAIN];
    int ss[MAX_CHAIN], ts[MAX_CHAIN], nodes[MAX_CHAIN], n = 0, v = c->in[0];
    while (n < MAX_CHAIN && v >= 0 && readers[v] == 1 && !(g->values[v].flags & (BD_VAL_OUTPUT | BD_VAL_INPUT)) &&
           producer[v] >= 0 && !gone[producer[v]]) {
        const bd_node *r = &g->nodes[producer[v]];
        if ((r->op != BD_OP_Mul && r->op != BD_OP_Add) || r->n_in != 2 || r->n_out != 1 || r->out[0] != v ||
            (r->domain && r->domain[0]))
            break;
        int k = -1; /* the constant's slot */
        const float *f;
        int st;
        for (int q = 0; q < 2 && k < 0; q++)
            if (bd_graph_channel_const(g, r->in[q], R, C, &f, &st)) k = q;
        if (k < 0 || r->in[1 - k] < 0) break;
        const bd_value *x = &g->values[r->in[1 - k]];
        if (x->dtype && x->dtype != BRAID_DTYPE_FLOAT) break;
        /* X declared with other than C channels: the constant would broadcast it up (or the model is wrong) */
        if (x->rank == R && x->dims[1] >= 0 && x->dims[1] != C) break;
        s[n] = r->op == BD_OP_Mul ? f : NULL, ss[n] = st;
        t[n] = r->op == BD_OP_Add ? f : NULL, ts[n] = st;
        nodes[n++] = producer[v];
        v = r->in[1 - k];
    }
    if (!n || v < 0) return BRAID_OK;
    /* Per input channel: Conv's input = X S + T, the chain applied from its first node. */
    float *nw = bd_malloc((size_t)(M * cg * taps) * sizeof *nw + 1), *nb = bd_malloc((size_t)M * sizeof *nb + 1);
    float *sc = bd_malloc((size_t)(2 * C) * sizeof *sc + 1);
    if (!nw || !nb || !sc) {
        bd_free(nw), bd_free(nb), bd_free(sc);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    float *sh = sc + C;
    for (int64_t ch = 0; ch < C; ch++) {
        float a = 1.0f, b = 0.0f;
        for (int k = n - 1; k >= 0; k--) {
            float sk = s[k] ? s[k][ch * ss[k]] : 1.0f, tk = t[k] ? t[k][ch * ts[k]] : 0.0f;
            a *= sk;
            b = b * sk + tk;
        }
        sc[ch] = a, sh[ch] = b;
    }
    const float *w0 = w->data, *b0 = bv >= 0 ? g->values[bv].data : NULL;
    int64_t per_group = M / cp->group;
    for (int64_t m = 0; m < M; m++) {
        int64_t c0 = (m / per_group) * cg; /* the group's first input channel */
        double acc = b0 ? b0[m] : 0.0;
        for (int64_t cl = 0; cl < cg; cl++)
            for (int64_t q = 0; q < taps; q++) {
                int64_t at = (m * cg + cl) * taps + q;
                nw[at] = w0[at] * sc[c0 + cl];
                acc += (double)w0[at] * sh[c0 + cl];
            }
        nb[m] = (float)acc;
    }
    bd_free(sc);
    int64_t bdims[1] = {M}, wdims[BD_MAX_RANK];
    memcpy(wdims, w->dims, sizeof wdims); /* adding values may move g->values */
    int nwv = bd_graph_new_const(g, c->name, ".W+affine_in", R, wdims, nw);
    if (nwv < 0) { bd_free(nw); bd_free(nb); return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    int nbv = bd_graph_new_const(g, c->name, ".B+affine_in", 1, bdims, nb);
    if (nbv < 0) { bd_free(nb); return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    size_t len = strlen(c->name) + 1;
    for (int k = 0; k < n; k++) len += strlen(g->nodes[nodes[k]].name) + 1;
    char *name = bd_malloc(len);
    if (!name) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    name[0] = 0;
    for (int k = n - 1; k >= 0; k--) strcat(strcat(name, g->nodes[nodes[k]].name), "+");
    strcat(name, c->name);
    bd_free(c->name);
    c->name = name;
    readers[wv]--;
    if (bv >= 0) readers[bv]--;
    readers[c->in[0]]--;
    c->in[0] = v;
    readers[v]++;
    c->in[1] = nwv;
    readers[nwv]++;
    c->in[2] = nbv; /* the loader left room for a third input */
    readers[nbv]++;
    c->n_in = 3;
    for (int k = 0; k < n; k++) {
        const bd_node *r = &g->nodes[nodes[k]];
        for (int j = 0; j < r->n_in; j++)
            if (r->in[j] >= 0) readers[r->in[j]]--;
        gone[nodes[k]] = 1;
        for (int j = 0; j < r->n_in; j++) bd_graph_drop_if_unread(g, r->in[j], readers);
    }
    bd_graph_drop_if_unread(g, wv, readers);
    bd_graph_drop_if_unread(g, bv, readers);
    *folded += n;
    return BRAID_OK;
}

braid_status bd_graph_fuse_affine_in(bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    /* each fold adds two values: room for them in the counts */
    int cap = g->n_values + 2 * g->n_nodes + 1;
    int *readers = bd_calloc((size_t)cap, sizeof *readers);
    int *producer = bd_malloc((size_t)cap * sizeof *producer);
    unsigned char *gone = bd_calloc((size_t)g->n_nodes + 1, 1);
    BD_CHECK_ALLOC(e, readers && producer && gone);
    for (int v = 0; v < cap; v++) producer[v] = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k] >= 0) readers[nd->in[k]]++;
        for (int k = 0; k < nd->n_out; k++)
            if (nd->out[k] >= 0) producer[nd->out[k]] = i;
    }
    int folded = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!gone[i]) BD_TRY(fold_in(g, i, readers, producer, gone, &folded, e));
    if (folded) BD_TRY(bd_graph_drop_nodes(g, gone, e)); /* producers are re-derived */
fail:
    bd_free(readers);
    bd_free(producer);
    bd_free(gone);
    return st;
}
