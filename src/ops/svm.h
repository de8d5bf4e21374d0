/* svm.h: the parsed attributes of the svm op family (ai.onnx.ml
 * SVMClassifier and SVMRegressor) and the per-row rule both backends'
 * kernels call. The rule is onnxruntime's (its CPU provider is what models
 * exported by skl2onnx are checked against): the kernel of each support
 * vector (LINEAR, POLY (gamma x.s + coef0)^degree, RBF exp(-gamma |x-s|^2),
 * SIGMOID tanh(gamma x.s + coef0)); one-vs-one votes and pair scores, or
 * Platt's pairwise probabilities (prob_a, prob_b) coupled by libsvm's
 * multiclass_probability; liblinear mode (no support vectors: one
 * coefficient row per class and rho[0]); the binary label rule and the two
 * score columns of a binary model; post transforms as bd_ml_post. Sums are
 * taken in double and stored as float. */
#ifndef BD_SVM_H
#define BD_SVM_H

#include "ml.h"

enum { BD_SVM_LINEAR, BD_SVM_POLY, BD_SVM_RBF, BD_SVM_SIGMOID };

/* data[] (8 bytes an entry; floats as double bits, counts as int64):
 *   coef     classifier: SVC (classes - 1) x vectors, linear classes x features;
 *            regressor: vectors (SVC) or features (linear)
 *   sv       vectors x features
 *   rho, prob_a, prob_b (prob_* empty without probabilities)
 *   vpc, start  per class: its support vectors and where they start
 *   labels   int64, or byte offsets of the strings after data[n_data] */
typedef struct bd_svm_params {
    int svc;            /* support vectors given (else liblinear mode) */
    int kernel;         /* BD_SVM_* (LINEAR in liblinear mode) */
    int post;           /* BD_ML_POST_* */
    int str_labels;     /* classlabels_strings */
    int all_pos;        /* every coefficient >= 0 */
    int one_class;      /* SVMRegressor: sign of the score */
    int proba;          /* prob_a given (SVC only) */
    int write_add;      /* >= 0: a binary SVC without probabilities, two columns from one score */
    double gamma, coef0, degree;
    int64_t classes, vectors, features;
    int64_t n_scores;   /* Z's columns (classifier) */
    int64_t n_coef, n_rho, n_prob;
    int64_t o_coef, o_sv, o_rho, o_pa, o_pb, o_vpc, o_start, o_labels;
    int64_t n_data;
    int64_t data[];
} bd_svm_params;

/* floats of scratch one row needs (kernels, pair scores, votes, the
 * probability coupling). */
static inline BD_HOST_DEVICE int64_t bd_svm_scratch(const bd_svm_params *p)
{
    int64_t c = p->classes;
    return p->vectors + c * (c - 1) / 2 + c + 2 * c * c + 2 * c + c + 2;
}

static inline BD_HOST_DEVICE double bd_svm_kernel(const bd_svm_params *p, const int64_t *d, const void *x, int xdt,
                                                  int64_t o, const int64_t *vec_at)
{
    double s = 0;
    int64_t f = p->features;
    if (p->kernel == BD_SVM_RBF) {
        for (int64_t j = 0; j < f; j++) {
            double v = bd_ml_ld(x, xdt, o + j) - bd_ml_f(vec_at, j);
            s += v * v;
        }
        return exp(-p->gamma * s);
    }
    for (int64_t j = 0; j < f; j++) s += bd_ml_ld(x, xdt, o + j) * bd_ml_f(vec_at, j);
    (void)d;
    if (p->kernel == BD_SVM_POLY) return pow(p->gamma * s + p->coef0, p->degree);
    if (p->kernel == BD_SVM_SIGMOID) return tanh(p->gamma * s + p->coef0);
    return s;
}

/* libsvm's coupling of the pairwise probabilities r (c x c) into p (c);
 * q (c x c) and qp (c) are scratch. In float, as onnxruntime. */
static inline BD_HOST_DEVICE void bd_svm_couple(int64_t c, const float *r, float *p, float *q, float *qp)
{
    float eps = 0.005f / (float)c;
    for (int64_t i = 0; i < c * c; i++) q[i] = 0;
    for (int64_t i = 0; i < c; i++) {
        p[i] = 1.0f / (float)c;
        for (int64_t j = 0; j < i; j++) {
            q[i * c + i] += r[j * c + i] * r[j * c + i];
            q[i * c + j] = q[j * c + i];
        }
        for (int64_t j = i + 1; j < c; j++) {
            q[i * c + i] += r[j * c + i] * r[j * c + i];
            q[i * c + j] = -r[j * c + i] * r[i * c + j];
        }
    }
    for (int loop = 0; loop < 100; loop++) {
        float pqp = 0, max_err = 0;
        for (int64_t i = 0; i < c; i++) {
            qp[i] = 0;
            for (int64_t j = 0; j < c; j++) qp[i] += q[i * c + j] * p[j];
            pqp += p[i] * qp[i];
        }
        for (int64_t i = 0; i < c; i++) {
            float err = fabsf(qp[i] - pqp);
            if (err > max_err) max_err = err;
        }
        if (max_err < eps) break;
        for (int64_t i = 0; i < c; i++) {
            float diff = (-qp[i] + pqp) / q[i * c + i];
            p[i] += diff;
            pqp = (pqp + diff * (diff * q[i * c + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
            for (int64_t j = 0; j < c; j++) {
                qp[j] = (qp[j] + diff * q[i * c + j]) / (1 + diff);
                p[j] /= (1 + diff);
            }
        }
    }
}

/* Row r of X (c features, dtype xdt): the regressor's value into y[r], or
 * the classifier's label index into *label and its n_scores scores into
 * z + r * n_scores. sc: bd_svm_scratch(p) floats. */
static inline BD_HOST_DEVICE void bd_svm_row(int op, const bd_svm_params *p, const int64_t *d, const void *x, int xdt,
                                             int64_t r, float *y, int64_t *label, float *z, float *sc)
{
    int64_t o = r * p->features, V = p->vectors, C = p->classes;
    const int64_t *coef = d + p->o_coef, *sv = d + p->o_sv, *rho = d + p->o_rho;
    if (op == BD_OP_ML_SVMRegressor) {
        double s;
        if (p->svc) {
            s = 0;
            for (int64_t v = 0; v < V; v++) s += bd_ml_f(coef, v) * bd_svm_kernel(p, d, x, xdt, o, sv + v * p->features);
        } else {
            s = 0;
            for (int64_t j = 0; j < p->features; j++) s += bd_ml_ld(x, xdt, o + j) * bd_ml_f(coef, j);
        }
        s += bd_ml_f(rho, 0);
        float f = (float)s;
        y[r] = p->one_class ? (f > 0 ? 1.0f : -1.0f) : f;
        return;
    }
    float *zr = z + r * p->n_scores;
    int64_t npairs = C * (C - 1) / 2, maxclass = 0, nsc;
    float max_weight = 0;
    if (!p->svc) {
        for (int64_t k = 0; k < C; k++) {
            double s = bd_ml_f(rho, 0);
            for (int64_t j = 0; j < p->features; j++) s += bd_ml_ld(x, xdt, o + j) * bd_ml_f(coef, k * p->features + j);
            zr[k] = (float)s;
        }
        for (int64_t k = 1; k < C; k++)
            if (zr[k] > zr[maxclass]) maxclass = k;
        max_weight = C ? zr[maxclass] : 0;
        nsc = C;
    } else {
        float *kern = sc, *pair = kern + V, *votes = pair + npairs, *r2 = votes + C, *q = r2 + C * C, *qp = q + C * C;
        const int64_t *vpc = d + p->o_vpc, *start = d + p->o_start;
        for (int64_t v = 0; v < V; v++) kern[v] = (float)bd_svm_kernel(p, d, x, xdt, o, sv + v * p->features);
        for (int64_t k = 0; k < C; k++) votes[k] = 0;
        int64_t idx = 0;
        for (int64_t i = 0; i < C - 1; i++)
            for (int64_t j = i + 1; j < C; j++, idx++) {
                double s = 0;
                for (int64_t m = 0; m < vpc[i]; m++) s += bd_ml_f(coef, (j - 1) * V + start[i] + m) * kern[start[i] + m];
                for (int64_t m = 0; m < vpc[j]; m++) s += bd_ml_f(coef, i * V + start[j] + m) * kern[start[j] + m];
                s += bd_ml_f(rho, idx);
                pair[idx] = (float)s;
                votes[s > 0 ? i : j] += 1;
            }
        for (int64_t k = 1; k < C; k++)
            if (votes[k] > votes[maxclass]) maxclass = k;
        if (p->proba) {
            const int64_t *pa = d + p->o_pa, *pb = d + p->o_pb;
            for (int64_t k = 0; k < C * C; k++) r2[k] = 0;
            idx = 0;
            for (int64_t i = 0; i < C - 1; i++)
                for (int64_t j = i + 1; j < C; j++, idx++) {
                    float v = pair[idx] * (float)bd_ml_f(pa, idx) + (float)bd_ml_f(pb, idx);
                    float e = 1.0f / (1.0f + expf(-fabsf(v)));
                    float l = v < 0 ? 1 - e : e;
                    float v1 = 1 - l;
                    v1 = v1 > 1.0e-7f ? v1 : 1.0e-7f;
                    v1 = v1 < 1 - 1.0e-7f ? v1 : 1 - 1.0e-7f;
                    r2[i * C + j] = v1;
                    r2[j * C + i] = 1 - v1;
                }
            bd_svm_couple(C, r2, zr, q, qp);
            nsc = C;
        } else {
            for (int64_t k = 0; k < npairs; k++) zr[k] = pair[k];
            nsc = npairs;
        }
    }
    /* the label */
    if (npairs == 1 && !p->proba && ((p->all_pos && max_weight >= 0.5f) || (max_weight > 0 && !p->all_pos)))
        *label = 1;
    else
        *label = maxclass;
    /* the scores */
    if (nsc > 1) {
        bd_ml_post(p->post, zr, nsc);
    } else if (nsc == 1) {
        float s = zr[0];
        if (p->post == BD_ML_POST_PROBIT) {
            zr[0] = (float)bd_ml_probit(s);
            if (p->n_scores == 2) zr[1] = 0; /* onnxruntime leaves it unwritten */
        } else if (p->write_add >= 0) { /* a binary SVC: two columns from one score, as onnxruntime 1.31 */
            if (p->post == BD_ML_POST_LOGISTIC) zr[0] = (float)bd_ml_logistic(-s), zr[1] = (float)bd_ml_logistic(s);
            else if (p->post == BD_ML_POST_NONE) zr[0] = -s, zr[1] = s;
            else zr[0] = 1.0f - s, zr[1] = s;
        }
    }
}

#endif /* BD_SVM_H */
