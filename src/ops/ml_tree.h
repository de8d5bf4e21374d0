/* ml_tree.h: the tree ensembles of ai.onnx.ml (TreeEnsemble of opset 5,
 * TreeEnsembleRegressor and TreeEnsembleClassifier of opsets 1 and 3), all
 * parsed into one flat form, and the per-row walk both backends share.
 *
 * data[] (8 bytes an entry, after the struct in its one allocation):
 *   nodes   n_nodes records of BD_TREE_REC: mode, feature, true index,
 *           false index, missing tracks true, split (double bits), and
 *           start/count of a leaf's (target, weight) pairs or of a MEMBER
 *           node's set in members
 *   pairs   n_pairs records of 2: target, weight (double bits)
 *   members n_members doubles
 *   roots   n_trees node indices
 *   base    n_base doubles (base values, added per target)
 *   labels  n_labels int64 (classifier class labels) */
#ifndef BD_ML_TREE_H
#define BD_ML_TREE_H

#include <float.h>

#include "ml.h"

enum { BD_TREE_LEQ, BD_TREE_LT, BD_TREE_GTE, BD_TREE_GT, BD_TREE_EQ, BD_TREE_NEQ, BD_TREE_MEMBER, BD_TREE_LEAF };
enum { BD_TREE_AVERAGE, BD_TREE_SUM, BD_TREE_MIN, BD_TREE_MAX };
#define BD_TREE_REC 8

typedef struct bd_tree_params {
    int agg, post;
    int empty_extreme;  /* MIN/MAX of a target no leaf reached: +-max of X's dtype (opset 5), else 0 */
    int unreached_zero; /* a target no leaf reached scores 0, no base value (the regressor, as onnxruntime) */
    int binary;         /* 1 + the class id of a classifier whose class_ids are all that id */
    int binary_pos;     /* ... and whose weights are all >= 0: scores (1 - s, s) without a post
                         * transform or with PROBIT, else (-s, s), as onnxruntime */
    int64_t n_targets;  /* scores per row */
    int64_t n_nodes, n_pairs, n_members, n_trees, n_base, n_labels;
    int64_t n_data;     /* entries of data[] */
    int64_t data[];
} bd_tree_params;

static inline BD_HOST_DEVICE const int64_t *bd_tree_pairs(const bd_tree_params *p, const int64_t *d)
{
    return d + p->n_nodes * BD_TREE_REC;
}
static inline BD_HOST_DEVICE const int64_t *bd_tree_members(const bd_tree_params *p, const int64_t *d)
{
    return bd_tree_pairs(p, d) + 2 * p->n_pairs;
}
static inline BD_HOST_DEVICE const int64_t *bd_tree_roots(const bd_tree_params *p, const int64_t *d)
{
    return bd_tree_members(p, d) + p->n_members;
}
static inline BD_HOST_DEVICE const int64_t *bd_tree_base(const bd_tree_params *p, const int64_t *d)
{
    return bd_tree_roots(p, d) + p->n_trees;
}
static inline BD_HOST_DEVICE const int64_t *bd_tree_labels(const bd_tree_params *p, const int64_t *d)
{
    return bd_tree_base(p, d) + p->n_base;
}

/* The leaf that row x (c features, dtype xdt) reaches from node `at`. The
 * parse checked every child index and that no walk is longer than n_nodes. */
static inline BD_HOST_DEVICE int64_t bd_tree_leaf(const bd_tree_params *p, const int64_t *d, const void *x, int xdt,
                                                  int64_t at)
{
    const int64_t *mem = bd_tree_members(p, d);
    for (int64_t step = 0; step <= p->n_nodes; step++) {
        const int64_t *r = d + at * BD_TREE_REC;
        if (r[0] == BD_TREE_LEAF) return at;
        double v = bd_ml_ld(x, xdt, r[1]), s = bd_ml_f(r, 5);
        int t;
        if (v != v && r[4]) t = 1;
        else switch (r[0]) {
            case BD_TREE_LEQ: t = v <= s; break;
            case BD_TREE_LT: t = v < s; break;
            case BD_TREE_GTE: t = v >= s; break;
            case BD_TREE_GT: t = v > s; break;
            case BD_TREE_EQ: t = v == s; break;
            case BD_TREE_NEQ: t = v != s; break;
            default:
                t = 0;
                for (int64_t k = 0; k < r[7]; k++) t |= bd_ml_f(mem, r[6] + k) == v;
                break;
            }
        at = t ? r[2] : r[3];
    }
    return at;
}

/* Scores of one row: acc (n_targets doubles) and has (n_targets bytes) are
 * scratch; sc (n_targets floats, 2 at least) gets the scores (the
 * classifier's binary case two) after base values and the post transform;
 * acc keeps them in double before the post transform. Returns the number of
 * scores. */
static inline BD_HOST_DEVICE int64_t bd_tree_row(const bd_tree_params *p, const int64_t *d, const void *x, int xdt,
                                                 double *acc, unsigned char *has, float *sc)
{
    const int64_t *pairs = bd_tree_pairs(p, d), *roots = bd_tree_roots(p, d), *base = bd_tree_base(p, d);
    int64_t nt = p->n_targets;
    for (int64_t t = 0; t < nt; t++) acc[t] = 0, has[t] = 0;
    for (int64_t i = 0; i < p->n_trees; i++) {
        const int64_t *r = d + bd_tree_leaf(p, d, x, xdt, roots[i]) * BD_TREE_REC;
        for (int64_t k = 0; k < r[7]; k++) {
            int64_t t = pairs[2 * (r[6] + k)];
            double w = bd_ml_f(pairs, 2 * (r[6] + k) + 1);
            if (p->agg == BD_TREE_MIN) acc[t] = has[t] && acc[t] < w ? acc[t] : w;
            else if (p->agg == BD_TREE_MAX) acc[t] = has[t] && acc[t] > w ? acc[t] : w;
            else acc[t] += w;
            has[t] = 1;
        }
    }
    for (int64_t t = 0; t < nt; t++) {
        double v = acc[t];
        if (p->agg == BD_TREE_AVERAGE && p->n_trees) v /= (double)p->n_trees;
        if (!has[t] && p->empty_extreme && (p->agg == BD_TREE_MIN || p->agg == BD_TREE_MAX)) {
            double big = xdt == BRAID_DTYPE_DOUBLE ? DBL_MAX : FLT_MAX;
            v = p->agg == BD_TREE_MIN ? big : -big;
        }
        if (t < p->n_base && (has[t] || !p->unreached_zero)) v += bd_ml_f(base, t);
        acc[t] = v;
        sc[t] = (float)v;
    }
    int64_t ns = nt;
    if (p->binary) {
        float s = sc[p->binary - 1];
        if (ns < 2) ns = 2;
        sc[1] = s;
        sc[0] = p->binary_pos && (p->post == BD_ML_POST_NONE || p->post == BD_ML_POST_PROBIT) ? 1.0f - s : -s;
    }
    bd_ml_post(p->post, sc, ns);
    return ns;
}

#endif /* BD_ML_TREE_H */
