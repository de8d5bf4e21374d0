/* text.h: the parsed attributes of the text op family (TfIdfVectorizer over
 * integer tokens) and the per-row count both backends' kernels share. */
#ifndef BD_TEXT_H
#define BD_TEXT_H

#include "ops.h"

enum { BD_TFIDF_TF = 0, BD_TFIDF_IDF = 1, BD_TFIDF_TFIDF = 2 };

/* The pool's n-grams as flat arrays: n-gram j has len[j] tokens starting at
 * pool[start[j]] and counts into output column col[j]. Only the n-grams of
 * lengths min_len..max_len are listed (the others can never count). The
 * arrays follow the struct in its one allocation (params are freed with one
 * bd_free), as int64: pool (n_pool), start, len, col (n_grams each), then
 * the weights as floats (n_weights): a backend copies data[] whole. */
typedef struct bd_tfidf_params {
    int mode;
    int64_t min_len, max_len, max_skip;
    int64_t n_out;   /* output columns: max(ngram_indexes) + 1 */
    int64_t n_pool, n_grams;
    int64_t n_weights;
    int64_t n_data;  /* bytes of data[] */
    int64_t data[];
} bd_tfidf_params;

static inline BD_HOST_DEVICE const float *bd_tfidf_weights(const bd_tfidf_params *p, const int64_t *data)
{
    return p->n_weights ? (const float *)(data + p->n_pool + 3 * p->n_grams) : NULL;
}

/* Counts (ints: p->data, or its device copy) the n-grams of one row of c tokens x (int32 when is32, else int64)
 * into y (n_out floats, overwritten) and applies the mode's weighting. The
 * walk: for each skip distance d = 1..max_skip+1 and each start i, the grams
 * x[i], x[i+d], ... of every length from min_len (2 after the first pass
 * when min_len is 1: a unigram is counted once) to max_len that match a pool
 * n-gram count once in its column (the last such n-gram when the pool
 * repeats one). */
static inline BD_HOST_DEVICE void bd_tfidf_row(const bd_tfidf_params *p, const int64_t *ints, const void *x,
                                               int is32, int64_t c, float *y)
{
    const float *weights = bd_tfidf_weights(p, ints);
    const int64_t *pool = ints, *start = ints + p->n_pool, *len = start + p->n_grams, *col = len + p->n_grams;
    for (int64_t j = 0; j < p->n_out; j++) y[j] = 0;
    int64_t first = p->min_len;
    for (int64_t d = 1; d <= p->max_skip + 1; d++) {
        for (int64_t i = 0; i < c && i + d * (first - 1) < c; i++) {
            for (int64_t k = first; k <= p->max_len && i + d * (k - 1) < c; k++) {
                int64_t hit = -1;
                for (int64_t g = 0; g < p->n_grams; g++) {
                    if (len[g] != k) continue;
                    int64_t m = 0;
                    for (; m < k; m++) {
                        int64_t pos = i + d * m;
                        int64_t v = is32 ? (int64_t)((const int32_t *)x)[pos] : ((const int64_t *)x)[pos];
                        if (v != pool[start[g] + m]) break;
                    }
                    if (m == k) hit = g;
                }
                if (hit >= 0) y[col[hit]] += 1.0f;
            }
        }
        if (first == 1) {
            first = 2;
            if (first > p->max_len) break;
        }
    }
    for (int64_t j = 0; j < p->n_out; j++) {
        float w = weights && j < p->n_weights ? weights[j] : 1.0f;
        if (p->mode == BD_TFIDF_IDF) y[j] = y[j] > 0 ? w : 0.0f;
        else if (p->mode == BD_TFIDF_TFIDF) y[j] = w * y[j];
    }
}

/* The rows (B) and tokens per row (C) of input x: [C] is one row. */
static inline void bd_tfidf_rows(const bd_tensor *x, int64_t *rows, int64_t *c)
{
    *rows = x->rank == 2 ? x->dims[0] : 1;
    *c = x->rank == 2 ? x->dims[1] : x->rank == 1 ? x->dims[0] : 1;
}

#endif /* BD_TEXT_H */
