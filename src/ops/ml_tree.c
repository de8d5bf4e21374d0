/* ml_tree.c: attribute parsing, dtype checks, shape inference and cost of
 * the ml_tree op family: TreeEnsemble (ai.onnx.ml opset 5: leaves apart
 * from nodes, modes as a tensor, set membership), TreeEnsembleRegressor and
 * TreeEnsembleClassifier (opsets 1 and 3: nodes by (tree id, node id), modes
 * as strings). All become the flat form of ml_tree.h; the parse checks
 * every index, and that every walk ends at a leaf within n_nodes steps.
 * String class labels are refused by name. */
#include <stdio.h>
#include <stdlib.h>

#include "ml_tree.h"

typedef struct tlist { int64_t n; double *f; int64_t *i; } tlist;

static void tl_free(tlist *l) { bd_free(l->f), bd_free(l->i), l->f = NULL, l->i = NULL, l->n = -1; }

/* A numeric attribute (FLOATS, INTS or a numeric TENSOR); n = -1 when absent. */
static braid_status tl_get(const bd_node *n, const char *name, tlist *l, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    l->n = -1, l->f = NULL, l->i = NULL;
    if (!a) return BRAID_OK;
    int64_t cnt = a->type == BD_ATTR_FLOATS || a->type == BD_ATTR_INTS ? a->n
                  : a->type == BD_ATTR_TENSOR && a->t ? bd_numel(a->t) : -1;
    if (cnt < 0 || (a->type == BD_ATTR_TENSOR && a->t->dtype != BRAID_DTYPE_FLOAT && a->t->dtype != BRAID_DTYPE_DOUBLE &&
                    a->t->dtype != BRAID_DTYPE_INT64 && a->t->dtype != BRAID_DTYPE_INT32 &&
                    a->t->dtype != BRAID_DTYPE_UINT8))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a list or tensor of numbers", name);
    l->f = bd_malloc((size_t)(cnt + 1) * sizeof(double));
    l->i = bd_malloc((size_t)(cnt + 1) * sizeof(int64_t));
    if (!l->f || !l->i) {
        tl_free(l);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t k = 0; k < cnt; k++) {
        if (a->type == BD_ATTR_FLOATS) l->f[k] = a->floats[k];
        else if (a->type == BD_ATTR_INTS) l->f[k] = (double)a->ints[k];
        else if (a->t->dtype == BRAID_DTYPE_UINT8) l->f[k] = ((const uint8_t *)a->t->data)[k];
        else if (a->t->dtype == BRAID_DTYPE_INT64) l->f[k] = (double)((const int64_t *)a->t->data)[k];
        else l->f[k] = bd_ml_ld(a->t->data, a->t->dtype, k);
        l->i[k] = a->type == BD_ATTR_INTS ? a->ints[k]
                  : a->type == BD_ATTR_TENSOR && a->t->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)a->t->data)[k]
                                                                                   : (int64_t)l->f[k];
    }
    l->n = cnt;
    return BRAID_OK;
}

/* The first of name_a / name_b present (the _as_tensor form first). */
static braid_status tl_get2(const bd_node *n, const char *a, const char *b, tlist *l, bd_err *e)
{
    braid_status st = tl_get(n, a, l, e);
    if (st || l->n >= 0) return st;
    return tl_get(n, b, l, e);
}

static void put_f(int64_t *d, double v) { memcpy(d, &v, 8); }

/* Checks that every walk from every root ends at a leaf within n_nodes steps
 * (no cycle), given valid indices. */
static braid_status check_walks(const bd_tree_params *p, bd_err *e)
{
    const int64_t *roots = bd_tree_roots(p, p->data);
    /* depth-first with an explicit stack of (node, depth) */
    int64_t cap = p->n_nodes + 1, *stk = bd_malloc((size_t)cap * 2 * sizeof(int64_t));
    if (!stk) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    braid_status st = BRAID_OK;
    for (int64_t t = 0; t < p->n_trees && !st; t++) {
        int64_t top = 0;
        stk[0] = roots[t], stk[1] = 0, top = 1;
        while (top > 0 && !st) {
            top--;
            int64_t at = stk[2 * top], depth = stk[2 * top + 1];
            const int64_t *r = p->data + at * BD_TREE_REC;
            if (r[0] == BD_TREE_LEAF) continue;
            if (depth >= p->n_nodes || top + 2 > cap) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "tree %lld has a cycle: its walk from the root never ends at a "
                             "leaf", (long long)t);
                break;
            }
            stk[2 * top] = r[2], stk[2 * top + 1] = depth + 1, top++;
            stk[2 * top] = r[3], stk[2 * top + 1] = depth + 1, top++;
        }
    }
    bd_free(stk);
    return st;
}

static int mode_of_string(const char *s)
{
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                        "BRANCH_EQ",  "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    for (int i = 0; i < 8; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

#define NEED(l, name)                                                                              \
    do {                                                                                           \
        if ((l).n < 0) {                                                                           \
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required", name);          \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)
#define SAME(l, name, count)                                                                       \
    do {                                                                                           \
        if ((l).n >= 0 && (l).n != (count)) {                                                      \
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has %lld entries, not %lld", name, \
                         (long long)(l).n, (long long)(count));                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static braid_status alloc_params(bd_tree_params *q, bd_tree_params **out, bd_err *e)
{
    q->n_data = q->n_nodes * BD_TREE_REC + 2 * q->n_pairs + q->n_members + q->n_trees + q->n_base + q->n_labels;
    *out = bd_calloc(1, sizeof *q + (size_t)(q->n_data + 1) * 8);
    if (!*out) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    **out = *q;
    return BRAID_OK;
}

/* TreeEnsemble, opset 5. */
static braid_status parse_v5(bd_node *n, bd_tree_params **out, bd_err *e)
{
    braid_status st = BRAID_OK;
    tlist sp = {-1}, fe = {-1}, mo = {-1}, tn = {-1}, fn = {-1}, tl = {-1}, fl = {-1}, lt = {-1}, lw = {-1}, ro = {-1},
          mv = {-1}, mem = {-1};
    bd_tree_params q = {0}, *p = NULL;
    int64_t v, nn, nl;
    BD_TRY(tl_get(n, "nodes_splits", &sp, e));
    BD_TRY(tl_get(n, "nodes_featureids", &fe, e));
    BD_TRY(tl_get(n, "nodes_modes", &mo, e));
    BD_TRY(tl_get(n, "nodes_truenodeids", &tn, e));
    BD_TRY(tl_get(n, "nodes_falsenodeids", &fn, e));
    BD_TRY(tl_get(n, "nodes_trueleafs", &tl, e));
    BD_TRY(tl_get(n, "nodes_falseleafs", &fl, e));
    BD_TRY(tl_get(n, "leaf_targetids", &lt, e));
    BD_TRY(tl_get(n, "leaf_weights", &lw, e));
    BD_TRY(tl_get(n, "tree_roots", &ro, e));
    BD_TRY(tl_get(n, "nodes_missing_value_tracks_true", &mv, e));
    BD_TRY(tl_get(n, "membership_values", &mem, e));
    NEED(sp, "nodes_splits");
    NEED(fe, "nodes_featureids");
    NEED(mo, "nodes_modes");
    NEED(tn, "nodes_truenodeids");
    NEED(fn, "nodes_falsenodeids");
    NEED(tl, "nodes_trueleafs");
    NEED(fl, "nodes_falseleafs");
    NEED(lt, "leaf_targetids");
    NEED(lw, "leaf_weights");
    NEED(ro, "tree_roots");
    nn = sp.n, nl = lw.n;
    SAME(fe, "nodes_featureids", nn);
    SAME(mo, "nodes_modes", nn);
    SAME(tn, "nodes_truenodeids", nn);
    SAME(fn, "nodes_falsenodeids", nn);
    SAME(tl, "nodes_trueleafs", nn);
    SAME(fl, "nodes_falseleafs", nn);
    SAME(mv, "nodes_missing_value_tracks_true", nn);
    SAME(lt, "leaf_targetids", nl);
    BD_TRY(bd_attr_int(n, "n_targets", -1, &q.n_targets, e));
    if (q.n_targets < 1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'n_targets' is required and positive");
        goto fail;
    }
    BD_TRY(bd_attr_int(n, "aggregate_function", 1, &v, e));
    if (v < 0 || v > 3) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'aggregate_function' is %lld, not 0 to 3", (long long)v);
        goto fail;
    }
    q.agg = (int)v;
    BD_TRY(bd_attr_int(n, "post_transform", 0, &v, e));
    if (v < 0 || v > 4) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'post_transform' is %lld, not 0 to 4", (long long)v);
        goto fail;
    }
    q.post = (int)v;
    q.empty_extreme = 1;
    q.n_nodes = nn + nl, q.n_pairs = nl, q.n_members = mem.n > 0 ? mem.n : 0, q.n_trees = ro.n;
    BD_TRY(alloc_params(&q, &p, e));
    int64_t *d = p->data, *pairs = d + p->n_nodes * BD_TREE_REC, *members = pairs + 2 * nl,
            *roots = members + p->n_members, mpos = 0;
    for (int64_t k = 0; k < q.n_members; k++) put_f(&members[k], mem.f[k]);
    for (int64_t i = 0; i < nn; i++) {
        int64_t *r = d + i * BD_TREE_REC, m = mo.i[i];
        if (m < 0 || m > 6) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_modes'[%lld] is %lld, not 0 to 6", (long long)i,
                         (long long)m);
            goto fail;
        }
        int64_t ti = tn.i[i], fi = fn.i[i];
        if (ti < 0 || ti >= (tl.i[i] ? nl : nn) || fi < 0 || fi >= (fl.i[i] ? nl : nn)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node %lld: attribute 'nodes_truenodeids' or 'nodes_falsenodeids' "
                         "points outside the %s", (long long)i, "nodes or leaves");
            goto fail;
        }
        if (fe.i[i] < 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_featureids'[%lld] is negative", (long long)i);
            goto fail;
        }
        r[0] = m, r[1] = fe.i[i], r[2] = tl.i[i] ? nn + ti : ti, r[3] = fl.i[i] ? nn + fi : fi;
        r[4] = mv.n > 0 ? mv.i[i] != 0 : 0;
        put_f(&r[5], sp.f[i]);
        if (m == BD_TREE_MEMBER) {
            r[6] = mpos;
            while (mpos < q.n_members && mem.f[mpos] == mem.f[mpos]) mpos++;
            if (mpos >= q.n_members) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'membership_values' does not hold a NaN-ended set "
                             "for MEMBER node %lld", (long long)i);
                goto fail;
            }
            r[7] = mpos - r[6];
            mpos++;
        }
    }
    for (int64_t i = 0; i < nl; i++) {
        int64_t *r = d + (nn + i) * BD_TREE_REC;
        if (lt.i[i] < 0 || lt.i[i] >= q.n_targets) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'leaf_targetids'[%lld] is %lld, outside [0, %lld)",
                         (long long)i, (long long)lt.i[i], (long long)q.n_targets);
            goto fail;
        }
        r[0] = BD_TREE_LEAF, r[6] = i, r[7] = 1;
        pairs[2 * i] = lt.i[i];
        put_f(&pairs[2 * i + 1], lw.f[i]);
    }
    for (int64_t t = 0; t < ro.n; t++) {
        int64_t x = ro.i[t];
        if (x < 0 || x >= (nn ? nn : nl)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'tree_roots'[%lld] is %lld, outside the nodes",
                         (long long)t, (long long)x);
            goto fail;
        }
        /* a tree of one leaf: a root whose both branches are the same leaf */
        if (nn && tl.i[x] && fl.i[x] && tn.i[x] == fn.i[x]) x = nn + tn.i[x];
        roots[t] = x;
    }
    BD_TRY(check_walks(p, e));
fail:
    tl_free(&sp), tl_free(&fe), tl_free(&mo), tl_free(&tn), tl_free(&fn), tl_free(&tl), tl_free(&fl);
    tl_free(&lt), tl_free(&lw), tl_free(&ro), tl_free(&mv), tl_free(&mem);
    if (st) bd_free(p), p = NULL;
    *out = p;
    return st;
}

typedef struct tid { int64_t tree, node, index; } tid;
static int tid_cmp(const void *a, const void *b)
{
    const tid *x = a, *y = b;
    if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}
static int64_t tid_find(const tid *ids, int64_t n, int64_t tree, int64_t node)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t m = (lo + hi) / 2;
        if (ids[m].tree < tree || (ids[m].tree == tree && ids[m].node < node)) lo = m + 1;
        else hi = m;
    }
    return lo < n && ids[lo].tree == tree && ids[lo].node == node ? ids[lo].index : -1;
}
typedef struct pr { int64_t node, target, order; double w; } pr;
static int pr_cmp(const void *a, const void *b)
{
    const pr *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* TreeEnsembleRegressor / TreeEnsembleClassifier, opsets 1 and 3. */
static braid_status parse_v1(bd_node *n, bd_tree_params **out, bd_err *e)
{
    int cls = n->op == BD_OP_ML_TreeEnsembleClassifier;
    const char *pre = cls ? "class_" : "target_";
    char nm[4][40];
    braid_status st = BRAID_OK;
    tlist tr = {-1}, ni = {-1}, fe = {-1}, va = {-1}, tn = {-1}, fn = {-1}, mv = {-1}, ptr = {-1}, pno = {-1},
          pid = {-1}, pw = {-1}, base = {-1}, labels = {-1};
    bd_tree_params q = {0}, *p = NULL;
    tid *ids = NULL;
    pr *prs = NULL;
    const char *s;
    const bd_attr *modes = bd_node_attr(n, "nodes_modes");
    if (cls && bd_node_attr(n, "classlabels_strings")) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute 'classlabels_strings': braid runs TreeEnsembleClassifier "
                                               "with int64 labels only (string tensors are not supported here)");
        goto fail;
    }
    snprintf(nm[0], 40, "%streeids", pre), snprintf(nm[1], 40, "%snodeids", pre);
    snprintf(nm[2], 40, "%sids", pre), snprintf(nm[3], 40, "%sweights", pre);
    BD_TRY(tl_get(n, "nodes_treeids", &tr, e));
    BD_TRY(tl_get(n, "nodes_nodeids", &ni, e));
    BD_TRY(tl_get(n, "nodes_featureids", &fe, e));
    BD_TRY(tl_get2(n, "nodes_values_as_tensor", "nodes_values", &va, e));
    BD_TRY(tl_get(n, "nodes_truenodeids", &tn, e));
    BD_TRY(tl_get(n, "nodes_falsenodeids", &fn, e));
    BD_TRY(tl_get(n, "nodes_missing_value_tracks_true", &mv, e));
    BD_TRY(tl_get(n, nm[0], &ptr, e));
    BD_TRY(tl_get(n, nm[1], &pno, e));
    BD_TRY(tl_get(n, nm[2], &pid, e));
    char wt[48];
    snprintf(wt, sizeof wt, "%s_as_tensor", nm[3]);
    BD_TRY(tl_get2(n, wt, nm[3], &pw, e));
    BD_TRY(tl_get2(n, "base_values_as_tensor", "base_values", &base, e));
    if (cls) BD_TRY(tl_get(n, "classlabels_int64s", &labels, e));
    NEED(tr, "nodes_treeids");
    NEED(ni, "nodes_nodeids");
    NEED(ptr, nm[0]);
    NEED(pno, nm[1]);
    NEED(pid, nm[2]);
    NEED(pw, nm[3]);
    if (!modes || modes->type != BD_ATTR_STRINGS) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_modes' is required (a list of strings)");
        goto fail;
    }
    int64_t nn = tr.n, np = pw.n;
    SAME(ni, "nodes_nodeids", nn);
    SAME(fe, "nodes_featureids", nn);
    SAME(va, "nodes_values", nn);
    SAME(tn, "nodes_truenodeids", nn);
    SAME(fn, "nodes_falsenodeids", nn);
    SAME(mv, "nodes_missing_value_tracks_true", nn);
    SAME(ptr, nm[0], np);
    SAME(pno, nm[1], np);
    SAME(pid, nm[2], np);
    if (modes->n != nn) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_modes' has %d entries, not %lld", modes->n, (long long)nn);
        goto fail;
    }
    BD_TRY(bd_attr_string(n, "aggregate_function", "SUM", &s, e));
    if (!strcmp(s, "AVERAGE")) q.agg = BD_TREE_AVERAGE;
    else if (!strcmp(s, "SUM")) q.agg = BD_TREE_SUM;
    else if (!strcmp(s, "MIN")) q.agg = BD_TREE_MIN;
    else if (!strcmp(s, "MAX")) q.agg = BD_TREE_MAX;
    else {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'aggregate_function' is '%s'", s);
        goto fail;
    }
    BD_TRY(bd_attr_string(n, "post_transform", "NONE", &s, e));
    if ((q.post = bd_ml_post_parse(s)) < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'post_transform' is '%s'", s);
        goto fail;
    }
    if (cls) {
        if (labels.n < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'classlabels_int64s' is required");
            goto fail;
        }
        q.n_targets = labels.n;
        q.n_labels = labels.n;
        int one = np > 0;
        for (int64_t k = 1; k < np; k++) one &= pid.i[k] == pid.i[0];
        if (one && labels.n <= 2) {
            q.binary = (int)(1 + pid.i[0]);
            q.binary_pos = 1;
            for (int64_t k = 0; k < np; k++) q.binary_pos &= pw.f[k] >= 0;
        }
        if (q.binary && q.n_targets < 2) q.n_targets = 2;
    } else {
        q.unreached_zero = 1;
        BD_TRY(bd_attr_int(n, "n_targets", 1, &q.n_targets, e));
        if (q.n_targets < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'n_targets' is %lld", (long long)q.n_targets);
            goto fail;
        }
    }
    if (base.n > 0 && base.n != q.n_targets && !(q.binary && base.n == 1)) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'base_values' has %lld entries, not %lld",
                     (long long)base.n, (long long)q.n_targets);
        goto fail;
    }
    ids = bd_malloc((size_t)(nn + 1) * sizeof *ids);
    prs = bd_malloc((size_t)(np + 1) * sizeof *prs);
    BD_CHECK_ALLOC(e, ids);
    BD_CHECK_ALLOC(e, prs);
    for (int64_t i = 0; i < nn; i++) ids[i] = (tid){tr.i[i], ni.i[i], i};
    qsort(ids, (size_t)nn, sizeof *ids, tid_cmp);
    for (int64_t i = 1; i < nn; i++)
        if (ids[i].tree == ids[i - 1].tree && ids[i].node == ids[i - 1].node) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_nodeids': tree %lld has node %lld twice",
                         (long long)ids[i].tree, (long long)ids[i].node);
            goto fail;
        }
    for (int64_t k = 0; k < np; k++) {
        int64_t at = tid_find(ids, nn, ptr.i[k], pno.i[k]);
        if (at < 0 || pid.i[k] < 0 || pid.i[k] >= q.n_targets) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "%s entry %lld (tree %lld, node %lld, id %lld) names no leaf or "
                         "an id outside [0, %lld)", nm[3], (long long)k, (long long)ptr.i[k], (long long)pno.i[k],
                         (long long)pid.i[k], (long long)q.n_targets);
            goto fail;
        }
        prs[k] = (pr){at, pid.i[k], k, pw.f[k]};
    }
    qsort(prs, (size_t)np, sizeof *prs, pr_cmp);
    /* trees: in the order their first node appears */
    int64_t trees = 0;
    for (int64_t i = 0; i < nn; i++) trees += i == 0 || ids[i].tree != ids[i - 1].tree;
    q.n_nodes = nn, q.n_pairs = np, q.n_trees = trees, q.n_base = base.n > 0 ? base.n : 0;
    BD_TRY(alloc_params(&q, &p, e));
    int64_t *d = p->data, *pairs = d + nn * BD_TREE_REC, *roots = pairs + 2 * np, *bv = roots + trees,
            *lab = bv + p->n_base, t = 0;
    for (int64_t i = 0; i < nn; i++)
        if (i == 0 || ids[i].tree != ids[i - 1].tree) {
            /* the root: the tree's node listed first */
            int64_t first = ids[i].index;
            for (int64_t j = i; j < nn && ids[j].tree == ids[i].tree; j++) first = ids[j].index < first ? ids[j].index : first;
            roots[t++] = first;
        }
    for (int64_t i = 0; i < nn; i++) {
        int64_t *r = d + i * BD_TREE_REC;
        int m = mode_of_string(modes->strings[i]);
        if (m < 0 || m == BD_TREE_MEMBER) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'nodes_modes'[%lld] is '%s'", (long long)i,
                         modes->strings[i]);
            goto fail;
        }
        r[0] = m;
        if (m != BD_TREE_LEAF) {
            if (fe.n < 0 || va.n < 0 || tn.n < 0 || fn.n < 0) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes 'nodes_featureids', 'nodes_values', "
                             "'nodes_truenodeids' and 'nodes_falsenodeids' are required");
                goto fail;
            }
            r[1] = fe.i[i], r[4] = mv.n > 0 ? mv.i[i] != 0 : 0;
            put_f(&r[5], va.f[i]);
            r[2] = tid_find(ids, nn, tr.i[i], tn.i[i]);
            r[3] = tid_find(ids, nn, tr.i[i], fn.i[i]);
            if (r[1] < 0 || r[2] < 0 || r[3] < 0) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node %lld of tree %lld: a child id or feature id names no "
                             "node", (long long)ni.i[i], (long long)tr.i[i]);
                goto fail;
            }
        }
    }
    for (int64_t k = 0; k < np; k++) {
        int64_t *r = d + prs[k].node * BD_TREE_REC;
        if (r[0] != BD_TREE_LEAF) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "%s entry %lld names a branch node, not a leaf", nm[3],
                         (long long)prs[k].order);
            goto fail;
        }
        if (r[7] == 0) r[6] = k;
        r[7]++;
        pairs[2 * k] = prs[k].target;
        put_f(&pairs[2 * k + 1], prs[k].w);
    }
    for (int64_t k = 0; k < p->n_base; k++) put_f(&bv[k], base.f[k]);
    for (int64_t k = 0; k < q.n_labels; k++) lab[k] = labels.i[k];
    BD_TRY(check_walks(p, e));
fail:
    bd_free(ids), bd_free(prs);
    tl_free(&tr), tl_free(&ni), tl_free(&fe), tl_free(&va), tl_free(&tn), tl_free(&fn), tl_free(&mv);
    tl_free(&ptr), tl_free(&pno), tl_free(&pid), tl_free(&pw), tl_free(&base), tl_free(&labels);
    if (st) bd_free(p), p = NULL;
    *out = p;
    return st;
}

braid_status bd_ml_tree_parse(bd_node *n, bd_err *e)
{
    bd_tree_params *p = NULL;
    braid_status st;
    if (n->op == BD_OP_ML_TreeEnsemble) st = parse_v5(n, &p, e);
    else if (n->op == BD_OP_ML_TreeEnsembleRegressor || n->op == BD_OP_ML_TreeEnsembleClassifier) st = parse_v1(n, &p, e);
    else st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the ml_tree family", n->op_type);
    return bd_params_done(n, p, st);
}

braid_status bd_ml_tree_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_tree_params *p = n->params;
    const bd_tensor *x = &in[0];
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "ml_tree parameters were not parsed");
    int v5 = n->op == BD_OP_ML_TreeEnsemble;
    if (x->dtype == BRAID_DTYPE_STRING)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input X has dtype string: braid runs %s on numbers only", n->op_type);
    if (x->dtype != BRAID_DTYPE_FLOAT && x->dtype != BRAID_DTYPE_DOUBLE &&
        (v5 || (x->dtype != BRAID_DTYPE_INT64 && x->dtype != BRAID_DTYPE_INT32)))
        return BD_FAIL(e, x->dtype == BRAID_DTYPE_FLOAT16 ? BRAID_ERR_UNSUPPORTED : BRAID_ERR_DTYPE,
                       "input X has dtype %s, which braid does not run for %s", bd_dtype_name(x->dtype), n->op_type);
    if (x->rank != 2 && x->rank != 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d, not 2 ([N, C]) or 1", x->rank);
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, c = x->dims[x->rank - 1];
    /* every feature id must be a column of X */
    for (int64_t i = 0; i < p->n_nodes; i++) {
        const int64_t *r = p->data + i * BD_TREE_REC;
        if (r[0] != BD_TREE_LEAF && r[1] >= c)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "a tree node reads feature %lld, X has %lld", (long long)r[1], (long long)c);
    }
    if (n->op == BD_OP_ML_TreeEnsembleClassifier) {
        out[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 1, .dims = {rows}};
        if (n->n_out > 1) out[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, p->n_targets}};
        return BRAID_OK;
    }
    out[0] = (bd_tensor){.dtype = v5 ? x->dtype : BRAID_DTYPE_FLOAT, .rank = 2, .dims = {rows, p->n_targets}};
    return BRAID_OK;
}

double bd_ml_tree_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_tree_params *p = n->params;
    (void)out;
    if (!p || in[0].rank < 1) return 0;
    return (double)(in[0].rank == 2 ? in[0].dims[0] : 1) * (double)p->n_trees * 16.0;
}
