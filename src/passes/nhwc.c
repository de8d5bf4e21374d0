/* nhwc.c: the plan-time NHWC pass (CPU plans). Once an instance's shapes
 * are known, each 4-D float value gets a layout, NCHW or NHWC:
 *
 * - a 2-D float Conv with at least BD_LAYOUT_MIN_M output channels makes its
 *   output in NHWC (its kernel, cpu/ops/convnhwc.c, puts output channels in
 *   vector lanes; its weights are stored as (KH, KW, C/group, M) when the
 *   plan is made, and with one group and more than 64 output channels in
 *   panels of up to 64 of them, "<W>@panels" (bd_conv_params.w_panel), so
 *   that each block of the kernel's channels reads W in one sequential run
 *   instead of one strided row per input channel). It reads its input in
 *   NHWC where that exists, straight
 *   from NCHW where the input has few channels (a network's first Conv),
 *   and otherwise through a conversion;
 * - pools, elementwise ops (the activation, unary and binary families),
 *   Concat, Split, Resize and Pad whose inputs exist in NHWC run in NHWC
 *   too: their axes, and the constants they broadcast, are permuted;
 * - every other reader of an NHWC value (Reshape, Flatten, a graph output...)
 *   gets it back in NCHW through one conversion, made once per value.
 *
 * A Conv whose NHWC output would go straight back to NCHW after its input
 * was converted for it stays NCHW (two conversions for one Conv do not pay).
 *
 * Values keep their meaning; NHWC ones are new values named "<name>@nhwc"
 * with physical shapes (N, H, W, C), and conversions are Transpose nodes
 * named "to_nhwc(<value>)" and "to_nchw(<value>)", so `braid plan` shows
 * where layouts meet. The pass builds a flat graph of the instance's own
 * (as inline.c does for If) and infers the instance again on it. */
#include <stdio.h>
#include <string.h>

#include "passes/instance.h"
#include "ops/conv.h"
#include "ops/layout.h"
#include "ops/pool.h"
#include "ops/resize.h"

#define BD_LAYOUT_MIN_M 8  /* fewer output channels leave most vector lanes idle */
#define BD_LAYOUT_X_NCHW 8 /* at most this many input channels: read NCHW directly */

/* Everything the pass allocates for the flat graph: names, constants,
 * node lists, parameters. Freed with the instance. */
struct bd_lay_own {
    void **p;
    int n, cap;
};

void bd_lay_own_free(struct bd_lay_own *o)
{
    if (!o) return;
    for (int i = 0; i < o->n; i++) bd_free(o->p[i]);
    bd_free(o->p);
    bd_free(o);
}

static void *own(struct bd_lay_own *o, void *p)
{
    if (!p) return NULL;
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 64;
        void **q = bd_realloc(o->p, (size_t)cap * sizeof *q);
        if (!q) { bd_free(p); return NULL; }
        o->p = q;
        o->cap = cap;
    }
    return o->p[o->n++] = p;
}

/* Logical NCHW axis a is physical axis Q[a] of an NHWC value; physical axis
 * j holds logical axis P[j]. */
static const int P[4] = {0, 2, 3, 1}, Q[4] = {0, 3, 1, 2};

enum { K_NONE, K_CONV, K_POOL, K_ELT, K_CONCAT, K_SPLIT, K_RESIZE, K_PAD };

typedef struct lay {
    bd_inst *x;
    const bd_graph *g;
    unsigned char *mode;  /* per node: 1 when it runs in NHWC */
    unsigned char *xnchw; /* per node: a Conv reading NCHW straight */
    unsigned char *ban;   /* per node: a Conv kept NCHW */
    unsigned char *nh;    /* per value: made in NHWC */
    unsigned char *back;  /* per value: made in NHWC and read in NCHW too */
    unsigned char *cv;    /* per value: converted to NHWC for a reader (this round) */
    unsigned char *cv0;   /* the same, last round: available in NHWC */
    int *nh_reads;        /* per value: NHWC readers */
    int *up;              /* per node: union-find parent (prune_regions) */
    unsigned char *rflag; /* per node: region flags (prune_regions) */
    /* the flat graph being made */
    bd_graph *f;
    int cap_nodes;
    struct bd_lay_own *o;
    int *nhv;             /* per value of g: its NHWC version in f, -1 */
    int *hwio;            /* per value of g: a Conv weight stored (KH, KW, C/group, M) in f, -1 */
    int *pan;             /* ... and stored in panels (one-group Convs, bd_conv_panel_width), -1 */
    const float **wino;   /* per value of g: a Conv weight's Winograd transform (bd_conv_wino_weights), NULL */
    int n_conv;           /* conversions made */
} lay;

static int is_const(const lay *L, int v) { return v >= 0 && L->x->vals[v].data != NULL; }
/* Value v exists in NHWC: made so, or converted for some reader. */
static int avail(const lay *L, int v) { return L->nh[v] || L->cv0[v]; }
static const bd_tensor *val(const lay *L, int v) { return &L->x->vals[v]; }

static int kind_of(const bd_node *n)
{
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx")) return K_NONE;
    switch (n->op) {
    case BD_OP_Conv: return K_CONV;
    case BD_OP_MaxPool: case BD_OP_AveragePool: case BD_OP_GlobalAveragePool: case BD_OP_GlobalMaxPool:
        return K_POOL;
    case BD_OP_Concat: return K_CONCAT;
    case BD_OP_Split: return K_SPLIT;
    case BD_OP_Resize: return K_RESIZE;
    case BD_OP_Pad: return K_PAD;
    case BD_OP_Identity: return K_ELT;
    case BD_OP_SwiGLU: return K_NONE; /* halves its last axis */
    default: break;
    }
    bd_family fam = bd_op_table[n->op].family;
    return fam == BD_FAM_activation || fam == BD_FAM_unary || fam == BD_FAM_binary ? K_ELT : K_NONE;
}

/* The inputs of node n that follow its layout (the rest are parameters):
 * every input of elementwise ops and Concat, input 0 of the others. */
static int data_inputs(const bd_node *n, int kind)
{
    switch (kind) {
    case K_ELT: case K_CONCAT: return bd_node_formal_in(n);
    default: return n->n_in > 0 ? 1 : 0;
    }
}

/* Value read as data input k of NHWC node i in NHWC (made so, converted or a
 * permuted constant), or -1: omitted, or the NCHW input a Conv reads
 * straight. */
static int nhwc_read(const lay *L, int i, const bd_node *n, int k)
{
    return k == 0 && L->xnchw[i] ? -1 : n->in[k];
}

/* Whether node n can run in NHWC with the layouts decided so far; *any: one
 * of its data inputs exists in NHWC. */
static int can_nhwc(const lay *L, const bd_node *n, int kind, int *any)
{
    const bd_inst *x = L->x;
    *any = 0;
    for (int k = 0; k < n->n_out; k++) {
        int v = n->out[k];
        if (v >= 0 && (val(L, v)->rank != 4 || (x->vflag[v] & (BD_IV_RUNTIME | BD_IV_ALLOC)))) return 0;
    }
    if (kind == K_CONV) {
        const bd_conv_params *p = n->params;
        int v = n->in[0], w = n->n_in > 1 ? n->in[1] : -1;
        if (n->n_out != 1 || v < 0 || w < 0 || p->layout || p->res) return 0;
        if (val(L, v)->dtype != BRAID_DTYPE_FLOAT || val(L, v)->rank != 4 || !is_const(L, w) || val(L, w)->rank != 4)
            return 0;
        if (val(L, w)->dtype != BRAID_DTYPE_FLOAT || val(L, w)->dims[0] < BD_LAYOUT_MIN_M) return 0;
        *any = avail(L, v);
        return 1;
    }
    if (kind == K_POOL) {
        const bd_pool_params *p = n->params;
        int v = n->in[0];
        if (v < 0 || (n->n_out > 1 && n->out[1] >= 0) || p->layout) return 0;
        if (val(L, v)->dtype != BRAID_DTYPE_FLOAT || val(L, v)->rank != 4) return 0;
        if ((n->op == BD_OP_MaxPool || n->op == BD_OP_AveragePool) && p->nsp != 2) return 0;
        *any = avail(L, v);
        return *any;
    }
    if (kind == K_RESIZE) {
        const bd_resize_params *p = n->params;
        if (p->n_axes || p->n_attr_scales) return 0;
        for (int k = 1; k < n->n_in; k++)
            if (n->in[k] >= 0 && !is_const(L, n->in[k])) return 0;
        if (p->in_roi >= 0 && p->in_roi < n->n_in && n->in[p->in_roi] >= 0 && bd_numel(val(L, n->in[p->in_roi])) &&
            bd_numel(val(L, n->in[p->in_roi])) != 8)
            return 0;
    }
    if (kind == K_PAD) {
        if (n->opset < 11 || n->n_in < 2 || n->in[1] < 0 || !is_const(L, n->in[1])) return 0;
        if (n->n_in > 3 && n->in[3] >= 0) return 0; /* axes */
        if (bd_numel(val(L, n->in[1])) != 8) return 0;
    }
    if (kind == K_SPLIT || kind == K_CONCAT) {
        const bd_layout_params *p = n->params;
        if (p->axis < -4 || p->axis > 3) return 0;
    }
    int nd = data_inputs(n, kind);
    for (int k = 0; k < nd; k++) {
        int v = n->in[k];
        if (v < 0) continue;
        const bd_tensor *t = val(L, v);
        if (avail(L, v)) { *any = 1; continue; }
        if (is_const(L, v)) {
            if (t->rank > 4 || (kind != K_ELT && t->rank != 4)) return 0;
            continue;
        }
        if (t->rank != 4 || (x->vflag[v] & (BD_IV_RUNTIME | BD_IV_ALLOC))) return 0;
    }
    return *any;
}

/* Decides every node's layout (the ban list fixed). */
static void decide(lay *L)
{
    const bd_graph *g = L->g;
    memset(L->mode, 0, (size_t)g->n_nodes);
    memset(L->xnchw, 0, (size_t)g->n_nodes);
    memset(L->nh, 0, (size_t)g->n_values);
    memset(L->back, 0, (size_t)g->n_values);
    memset(L->nh_reads, 0, (size_t)g->n_values * sizeof *L->nh_reads);
    memset(L->cv, 0, (size_t)g->n_values);
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *n = L->x->node[i];
        if (!L->x->live[i]) continue;
        int kind = kind_of(n), any = 0;
        int ok = kind != K_NONE && !L->ban[i] && can_nhwc(L, n, kind, &any);
        if (ok && kind == K_CONV && !any && val(L, n->in[0])->dims[1] <= BD_LAYOUT_X_NCHW) L->xnchw[i] = 1;
        if (ok && (kind == K_CONV || any)) {
            L->mode[i] = 1;
            int nd = data_inputs(n, kind);
            for (int k = 0; k < nd; k++) {
                int v = nhwc_read(L, i, n, k);
                if (v < 0) continue;
                if (L->nh[v]) L->nh_reads[v]++;
                else if (!is_const(L, v)) L->cv[v] = 1;
            }
            for (int k = 0; k < n->n_out; k++)
                if (n->out[k] >= 0) L->nh[n->out[k]] = 1;
            continue;
        }
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] >= 0 && L->nh[n->in[k]]) L->back[n->in[k]] = 1;
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (L->nh[g->outputs[o]]) L->back[g->outputs[o]] = 1;
}

/* cv[v] becomes the number of NHWC readers of converted value v. */
static void count_cv_readers(lay *L)
{
    for (int i = 0; i < L->g->n_nodes; i++) {
        const bd_node *n = L->x->node[i];
        if (!L->mode[i]) continue;
        int kind = kind_of(n), nd = data_inputs(n, kind);
        for (int k = 0; k < nd; k++) {
            int v = nhwc_read(L, i, n, k);
            if (v >= 0 && L->cv[v] && L->cv[v] < 255) L->cv[v]++;
        }
    }
    for (int v = 0; v < L->g->n_values; v++)
        if (L->cv[v]) L->cv[v]--;
}

/* A Conv whose input is converted for it alone and whose output only goes
 * back. */
static int isolated(const lay *L, int i)
{
    const bd_node *n = L->x->node[i];
    return L->mode[i] && kind_of(n) == K_CONV && !L->xnchw[i] && !L->nh[n->in[0]] && L->nh_reads[n->out[0]] == 0 &&
           !(L->cv[n->in[0]] > 1);
}

static int root(int *up, int i)
{
    while (up[i] != i) i = up[i] = up[up[i]];
    return i;
}

/* A region (the NHWC nodes joined by the values they pass in NHWC) that
 * converts some input into NHWC but holds no 1x1 Conv: its dense
 * convolutions run about as fast in NCHW while the conversions cost, so
 * its Convs are kept NCHW (two_conv_add, bench-cpu: 1.56 ms NCHW against
 * 1.65 with the conversions; where a 1x1 Conv is in the region, NHWC won on
 * every model measured). Returns 1 when it banned a Conv. */
static int prune_regions(lay *L)
{
    const bd_graph *g = L->g;
    int *up = L->up;
    unsigned char *flag = L->rflag;
    int nn = g->n_nodes, changed = 0;
    enum { CONVERTS = 1, POINTWISE = 2 };
    for (int i = 0; i < nn; i++) up[i] = i, flag[i] = 0;
    int *first = L->nh_reads; /* reused: per value, the first NHWC reader of a converted value, + 1 */
    memset(first, 0, (size_t)g->n_values * sizeof *first);
    for (int i = 0; i < nn; i++) {
        const bd_node *n = L->x->node[i];
        if (!L->mode[i]) continue;
        int kind = kind_of(n), nd = data_inputs(n, kind);
        if (kind == K_CONV && val(L, n->in[1])->dims[2] == 1 && val(L, n->in[1])->dims[3] == 1) flag[i] |= POINTWISE;
        for (int k = 0; k < nd; k++) {
            int v = nhwc_read(L, i, n, k);
            if (v < 0 || is_const(L, v)) continue;
            int pr = g->values[v].producer;
            if (L->nh[v] && pr >= 0 && L->mode[pr]) {
                up[root(up, i)] = root(up, pr);
            } else if (!L->nh[v]) {
                flag[i] |= CONVERTS;
                if (first[v]) up[root(up, i)] = root(up, first[v] - 1);
                else first[v] = i + 1;
            }
        }
    }
    for (int i = 0; i < nn; i++) flag[root(up, i)] |= flag[i];
    for (int i = 0; i < nn; i++) {
        const bd_node *n = L->x->node[i];
        if (L->mode[i] && kind_of(n) == K_CONV && flag[root(up, i)] == CONVERTS) L->ban[i] = 1, changed = 1;
    }
    return changed;
}

/* ---- building the flat graph ---------------------------------------------------- */

static braid_status add_node(lay *L, bd_node **out, bd_err *e)
{
    bd_graph *f = L->f;
    if (f->n_nodes == L->cap_nodes) {
        int cap = 2 * L->cap_nodes + 16;
        bd_node *nn = bd_realloc(f->nodes, ((size_t)cap + 1) * sizeof *nn);
        if (!nn) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        f->nodes = nn;
        L->cap_nodes = cap;
    }
    *out = &f->nodes[f->n_nodes++];
    memset(*out, 0, sizeof **out);
    return BRAID_OK;
}

/* A new value named base + suffix; its index, or -1 when out of memory. */
static int add_value(lay *L, const char *base, const char *suffix)
{
    bd_graph *f = L->f;
    if (f->n_values == f->cap_values) {
        int cap = 2 * f->cap_values + 16;
        bd_value *nv = bd_realloc(f->values, ((size_t)cap + 1) * sizeof *nv);
        if (!nv) return -1;
        f->values = nv;
        f->cap_values = cap;
    }
    size_t len = strlen(base) + strlen(suffix) + 1;
    char *name = own(L->o, bd_malloc(len));
    if (!name) return -1;
    snprintf(name, len, "%s%s", base, suffix);
    bd_value *v = &f->values[f->n_values];
    memset(v, 0, sizeof *v);
    v->name = name;
    v->rank = -1;
    v->producer = -1;
    return f->n_values++;
}

/* Appends Transpose(src) -> dst with perm. */
static braid_status add_transpose(lay *L, int src, int dst, const int *perm, const char *what, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_node *d = NULL;
    BD_TRY(add_node(L, &d, e));
    const char *vn = L->f->values[src < L->g->n_values ? src : dst].name;
    size_t len = strlen(vn) + strlen(what) + 3;
    d->name = own(L->o, bd_malloc(len));
    d->in = own(L->o, bd_malloc(sizeof *d->in));
    d->out = own(L->o, bd_malloc(sizeof *d->out));
    d->attrs = own(L->o, bd_calloc(1, sizeof *d->attrs));
    int64_t *ints = own(L->o, bd_malloc(4 * sizeof *ints));
    BD_CHECK_ALLOC(e, d->name && d->in && d->out && d->attrs && ints);
    snprintf(d->name, len, "%s(%s)", what, vn);
    for (int k = 0; k < 4; k++) ints[k] = perm[k];
    d->attrs[0] = (bd_attr){.name = (char *)"perm", .type = BD_ATTR_INTS, .n = 4, .ints = ints};
    d->n_attrs = 1;
    d->op_type = (char *)"Transpose";
    d->domain = (char *)"";
    d->op = BD_OP_Transpose;
    d->opset = 13;
    d->n_in = d->n_out = 1;
    d->in[0] = src;
    d->out[0] = dst;
    BD_TRY(bd_op_parse(d, e));
    if (!own(L->o, d->params)) { d->params = NULL; return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    L->n_conv++;
fail:
    return st;
}

/* A constant of f: value v of g (rank r <= 4, read as rank 4 with leading
 * 1s), its axes permuted by perm. */
static int permuted_const(lay *L, int v, const int *perm, const char *suffix)
{
    const bd_tensor *t = val(L, v);
    int64_t d[4] = {1, 1, 1, 1}, od[4], st[4] = {0};
    for (int k = 0; k < t->rank; k++) d[4 - t->rank + k] = t->dims[k];
    size_t es = bd_dtype_size(t->dtype);
    int64_t n = d[0] * d[1] * d[2] * d[3];
    char *data = own(L->o, bd_malloc((size_t)(n ? n : 1) * es));
    int w = data ? add_value(L, L->g->values[v].name, suffix) : -1;
    if (w < 0) return -1;
    int64_t s = 1;
    for (int k = 3; k >= 0; k--) st[k] = s, s *= d[k];
    for (int k = 0; k < 4; k++) od[k] = d[perm[k]];
    const char *src = t->data;
    int64_t o = 0;
    for (int64_t a = 0; a < od[0]; a++)
        for (int64_t b = 0; b < od[1]; b++)
            for (int64_t c = 0; c < od[2]; c++)
                for (int64_t q = 0; q < od[3]; q++, o++) {
                    int64_t idx[4] = {a, b, c, q}, in = 0;
                    for (int k = 0; k < 4; k++) in += idx[k] * st[perm[k]];
                    memcpy(data + o * (int64_t)es, src + in * (int64_t)es, es);
                }
    bd_value *nv = &L->f->values[w];
    nv->dtype = t->dtype;
    nv->rank = 4;
    memcpy(nv->dims, od, sizeof od);
    nv->data = data;
    nv->flags = BD_VAL_CONST;
    return w;
}

/* Reorders the (KH, KW, C, M) float constant w of f into panels of pw
 * output channels (bd_conv_params.w_panel); 0 when out of memory. */
static int to_panels(lay *L, int w, int64_t pw)
{
    bd_value *v = &L->f->values[w];
    int64_t m = v->dims[3], kkc = v->dims[0] * v->dims[1] * v->dims[2];
    float *data = v->data, *tmp = bd_malloc((size_t)BD_MAX(kkc * m, (int64_t)1) * sizeof *tmp);
    if (!tmp) return 0;
    for (int64_t r = 0; r < kkc; r++)
        for (int64_t c = 0; c < m; c++) tmp[bd_conv_panel_at(pw, m, kkc, r, c)] = data[r * m + c];
    memcpy(data, tmp, (size_t)(kkc * m) * sizeof *tmp);
    bd_free(tmp);
    return 1;
}

/* The NHWC version in f of data input v (made now where needed). */
static braid_status nhwc_of(lay *L, int v, int *out, bd_err *e)
{
    if (L->nhv[v] >= 0) { *out = L->nhv[v]; return BRAID_OK; }
    const bd_tensor *t = val(L, v);
    if (is_const(L, v)) {
        /* a scalar (or all ones) broadcasts the same way in both layouts */
        if (bd_numel(t) == 1) { *out = v; return BRAID_OK; }
        int w = permuted_const(L, v, P, "@nhwc");
        if (w < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        *out = L->nhv[v] = w;
        return BRAID_OK;
    }
    int w = add_value(L, L->g->values[v].name, "@nhwc");
    if (w < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    braid_status st = add_transpose(L, v, w, P, "to_nhwc", e);
    if (!st) *out = L->nhv[v] = w;
    return st;
}

/* A 1-D constant of f: constant v of g (n entries, element size es) with
 * its 4 entries (or each half of 8) permuted to physical order. */
static int permuted_list(lay *L, int v)
{
    const bd_tensor *t = val(L, v);
    int64_t n = bd_numel(t);
    size_t es = bd_dtype_size(t->dtype);
    char *data = own(L->o, bd_malloc((size_t)(n ? n : 1) * es));
    int w = data ? add_value(L, L->g->values[v].name, "@nhwc") : -1;
    if (w < 0) return -1;
    for (int64_t h = 0; h < n / 4; h++)
        for (int j = 0; j < 4; j++) memcpy(data + (h * 4 + j) * (int64_t)es, (const char *)t->data + (h * 4 + P[j]) * (int64_t)es, es);
    bd_value *nv = &L->f->values[w];
    nv->dtype = t->dtype;
    nv->rank = t->rank;
    memcpy(nv->dims, t->dims, sizeof t->dims);
    nv->data = data;
    nv->flags = BD_VAL_CONST;
    return w;
}

/* An NHWC Conv n (params p, W now value wf of f) that the Winograd kernel
 * would take (backend/cpu/ops/convwino.c: one group, 3x3, stride 1,
 * dilation 1, NHWC input, bd_conv_wino_planned_pays) on a CPU with
 * AVX-512 gets its weights transformed now, once per W, instead of on every
 * call (p->w_wino). */
static braid_status plan_wino(lay *L, const bd_node *n, bd_conv_params *p, int wf, bd_err *e)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    int w = n->in[1];
    const bd_tensor *wt = val(L, w), *yt = val(L, n->out[0]);
    int unit = 1;
    for (int k = 0; k < p->n_strides; k++) unit &= p->strides[k] == 1;
    for (int k = 0; k < p->n_dilations; k++) unit &= p->dilations[k] == 1;
    if (!unit || p->group != 1 || p->x_nchw || wt->dtype != BRAID_DTYPE_FLOAT || wt->rank != 4 || wt->dims[2] != 3 ||
        wt->dims[3] != 3 || yt->rank != 4 ||
        !bd_conv_wino_planned_pays(wt->dims[1], wt->dims[0], yt->dims[0] * yt->dims[2] * yt->dims[3]) ||
        !__builtin_cpu_supports("avx512f"))
        return BRAID_OK;
    if (!L->wino[w]) {
        float *t = own(L->o, bd_malloc((size_t)bd_conv_wino_floats(wt->dims[1], wt->dims[0]) * sizeof *t));
        if (!t) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        bd_conv_wino_weights(wt->data, 0, 0, wt->dims[1], wt->dims[0], t);
        L->wino[w] = t;
    }
    p->w_wino = L->wino[w];
    p->w_wino_of = L->f->values[wf].data;
#else
    (void)L, (void)n, (void)p, (void)wf, (void)e;
#endif
    return BRAID_OK;
}

/* Appends node n rewritten to run in NHWC, then the conversions back of
 * its outputs that are read in NCHW. */
static braid_status emit_nhwc(lay *L, int i, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *n = L->x->node[i];
    int kind = kind_of(n), nd = data_inputs(n, kind);
    int *in = own(L->o, bd_malloc(((size_t)n->n_in + 1) * sizeof *in));
    int *out = own(L->o, bd_malloc(((size_t)n->n_out + 1) * sizeof *out));
    BD_CHECK_ALLOC(e, in && out);
    memcpy(in, n->in, (size_t)n->n_in * sizeof *in);
    for (int k = 0; k < nd; k++)
        if (nhwc_read(L, i, n, k) >= 0) BD_TRY(nhwc_of(L, n->in[k], &in[k], e));
    void *params = NULL;
    if (kind == K_CONV) {
        int w = n->in[1];
        const bd_conv_params *p0 = n->params;
        int64_t pw = p0->group == 1 ? bd_conv_panel_width(val(L, w)->dims[0]) : 0;
        int *slot = pw ? &L->pan[w] : &L->hwio[w]; /* a W shared by Convs of other group counts: both forms */
        if (*slot < 0) {
            static const int hwio[4] = {2, 3, 1, 0}; /* (M, C/g, KH, KW) -> (KH, KW, C/g, M) */
            *slot = permuted_const(L, w, hwio, pw ? "@panels" : "@hwio");
            if (*slot < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            if (pw && !to_panels(L, *slot, pw)) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
        in[1] = *slot;
        bd_conv_params *p = own(L->o, bd_malloc(sizeof *p));
        BD_CHECK_ALLOC(e, p);
        *p = *p0;
        p->layout = BD_LAYOUT_NHWC;
        p->x_nchw = L->xnchw[i];
        p->w_panel = pw;
        BD_TRY(plan_wino(L, n, p, in[1], e));
        params = p;
    } else if (kind == K_POOL) {
        bd_pool_params *p = own(L->o, bd_malloc(sizeof *p));
        BD_CHECK_ALLOC(e, p);
        *p = *(const bd_pool_params *)n->params;
        p->layout = BD_LAYOUT_NHWC;
        params = p;
    } else if (kind == K_CONCAT || kind == K_SPLIT) {
        bd_layout_params *p = own(L->o, bd_malloc(sizeof *p));
        BD_CHECK_ALLOC(e, p);
        *p = *(const bd_layout_params *)n->params;
        p->axis = Q[p->axis < 0 ? p->axis + 4 : p->axis];
        params = p;
    } else if (kind == K_RESIZE || kind == K_PAD) {
        for (int k = 1; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0 || !bd_numel(val(L, v))) continue;
            if (kind == K_PAD && k != 1) continue; /* constant_value */
            if (L->nhv[v] < 0) L->nhv[v] = permuted_list(L, v);
            if (L->nhv[v] < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            in[k] = L->nhv[v];
        }
    }
    for (int k = 0; k < n->n_out; k++) {
        out[k] = -1;
        if (n->out[k] < 0) continue;
        out[k] = L->nhv[n->out[k]] = add_value(L, L->g->values[n->out[k]].name, "@nhwc");
        if (out[k] < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bd_node *d = NULL;
    BD_TRY(add_node(L, &d, e));
    *d = *n;
    d->in = in;
    d->out = out;
    if (params) d->params = params;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0 && L->back[n->out[k]]) BD_TRY(add_transpose(L, out[k], n->out[k], Q, "to_nchw", e));
fail:
    return st;
}

braid_status bd_inst_layout(bd_inst *x, const bd_tensor *inputs, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = x->g;
    int nn = g->n_nodes, nv = g->n_values, any = 0;
    if (x->flat || x->n_later || x->stage) return BRAID_OK; /* plain instances only */
    lay L = {.x = x, .g = g};
    L.mode = bd_calloc((size_t)nn + 1, 1);
    L.xnchw = bd_calloc((size_t)nn + 1, 1);
    L.ban = bd_calloc((size_t)nn + 1, 1);
    L.nh = bd_calloc((size_t)nv + 1, 1);
    L.back = bd_calloc((size_t)nv + 1, 1);
    L.cv = bd_calloc((size_t)nv + 1, 1);
    L.cv0 = bd_calloc((size_t)nv + 1, 1);
    L.nh_reads = bd_calloc((size_t)nv + 1, sizeof *L.nh_reads);
    L.up = bd_malloc(((size_t)nn + 1) * sizeof *L.up);
    L.rflag = bd_malloc((size_t)nn + 1);
    L.nhv = bd_malloc(((size_t)nv + 1) * sizeof *L.nhv);
    L.hwio = bd_malloc(((size_t)nv + 1) * sizeof *L.hwio);
    L.pan = bd_malloc(((size_t)nv + 1) * sizeof *L.pan);
    L.wino = bd_calloc((size_t)nv + 1, sizeof *L.wino);
    BD_CHECK_ALLOC(e, L.mode && L.xnchw && L.ban && L.nh && L.back && L.cv && L.cv0 && L.nh_reads && L.up && L.rflag && L.nhv && L.hwio &&
                          L.pan && L.wino);
    /* Rounds until nothing changes: a value converted for one reader is
     * available in NHWC to the others in the next round. */
    for (int round = 0; round < 16; round++) {
        decide(&L);
        count_cv_readers(&L);
        int changed = memcmp(L.cv, L.cv0, (size_t)nv) != 0;
        for (int i = 0; i < nn; i++)
            if (isolated(&L, i)) L.ban[i] = 1, changed = 1;
        if (!changed) changed = prune_regions(&L);
        memcpy(L.cv0, L.cv, (size_t)nv);
        if (!changed) break;
    }
    for (int i = 0; i < nn; i++) any |= L.mode[i];
    if (!any) goto fail; /* nothing to change */
    for (int v = 0; v < nv; v++) L.nhv[v] = L.hwio[v] = L.pan[v] = -1;
    /* The flat graph: g's values (same indices), then the new ones. */
    L.o = bd_calloc(1, sizeof *L.o);
    L.f = bd_calloc(1, sizeof *L.f);
    BD_CHECK_ALLOC(e, L.o && L.f);
    bd_graph *f = L.f;
    f->values = bd_malloc(((size_t)nv + 16) * sizeof *f->values);
    f->nodes = bd_malloc(((size_t)nn + 16) * sizeof *f->nodes);
    BD_CHECK_ALLOC(e, f->values && f->nodes);
    f->cap_values = nv + 15;
    L.cap_nodes = nn + 15;
    memcpy(f->values, g->values, (size_t)nv * sizeof *f->values);
    f->n_values = nv;
    bd_flat_share(f, g);
    for (int i = 0; i < nn; i++) {
        if (L.mode[i]) {
            BD_TRY(emit_nhwc(&L, i, e));
            continue;
        }
        bd_node *d = NULL;
        BD_TRY(add_node(&L, &d, e));
        *d = *x->node[i];
    }
    for (int v = 0; v < f->n_values; v++) f->values[v].producer = -1;
    for (int i = 0; i < f->n_nodes; i++)
        for (int q = 0; q < f->nodes[i].n_out; q++)
            if (f->nodes[i].out[q] >= 0) f->values[f->nodes[i].out[q]].producer = i;
    /* The instance again, on the flat graph. */
    bd_inst nx;
    st = bd_inst_build(f, inputs, NULL, &nx, e);
    if (st) { bd_err_prefix(e, "layout pass: "); goto fail; }
    nx.flat = f;
    nx.flat_own = bd_calloc((size_t)f->n_nodes + 1, 1);
    nx.vlayout = bd_calloc((size_t)f->n_values + 1, 1);
    if (!nx.flat_own || !nx.vlayout) {
        nx.flat = NULL; /* f is freed below; its own list with it */
        bd_free(nx.flat_own);
        nx.flat_own = NULL;
        bd_inst_free(&nx);
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    for (int v = 0; v < nv; v++)
        if (L.nhv[v] >= 0 && !is_const(&L, v)) nx.vlayout[L.nhv[v]] = BD_LAYOUT_NHWC;
    nx.n_conversions = L.n_conv;
    nx.lay = L.o;
    L.o = NULL;
    L.f = NULL;
    bd_inst_free(x);
    *x = nx;
fail:
    if (L.f) {
        bd_free(L.f->values);
        bd_free(L.f->nodes);
        bd_free(L.f);
    }
    bd_lay_own_free(L.o);
    bd_free(L.mode);
    bd_free(L.xnchw);
    bd_free(L.ban);
    bd_free(L.nh);
    bd_free(L.back);
    bd_free(L.cv);
    bd_free(L.cv0);
    bd_free(L.nh_reads);
    bd_free(L.up);
    bd_free(L.rflag);
    bd_free(L.nhv);
    bd_free(L.hwio);
    bd_free(L.pan);
    bd_free(L.wino);
    return st;
}
