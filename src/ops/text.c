/* text.c: attribute parsing, dtype checks, shape inference and cost of the
 * text op family: TfIdfVectorizer (opset 9) over int32/int64 tokens, modes
 * TF, IDF and TFIDF with optional weights. String tokens (pool_strings, a
 * string input) are refused by name: braid has no string tensors here. */
#include <string.h>

#include "text.h"

static braid_status ints_attr(const bd_node *n, const char *name, const bd_attr **out, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, name);
    if (a && a->type != BD_ATTR_INTS)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a list of ints", name);
    *out = a;
    return BRAID_OK;
}

braid_status bd_text_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_attr *counts = NULL, *idx = NULL, *pool = NULL, *w = NULL;
    const char *mode = NULL;
    bd_tfidf_params q = {0}, *p = &q;
    if (n->op != BD_OP_TfIdfVectorizer) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the text family", n->op_type);
        goto fail;
    }
    if (bd_node_attr(n, "pool_strings")) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute 'pool_strings': braid runs TfIdfVectorizer on integer "
                                               "tokens only (string tensors are not supported here)");
        goto fail;
    }
    static const char *const req[] = {"max_gram_length", "min_gram_length", "max_skip_count", "mode",
                                      "ngram_counts", "ngram_indexes", "pool_int64s"};
    for (int i = 0; i < 7; i++)
        if (!bd_node_attr(n, req[i])) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required", req[i]);
            goto fail;
        }
    BD_TRY(bd_attr_int(n, "max_gram_length", 0, &p->max_len, e));
    BD_TRY(bd_attr_int(n, "min_gram_length", 0, &p->min_len, e));
    BD_TRY(bd_attr_int(n, "max_skip_count", 0, &p->max_skip, e));
    BD_TRY(bd_attr_string(n, "mode", NULL, &mode, e));
    if (!strcmp(mode, "TF")) p->mode = BD_TFIDF_TF;
    else if (!strcmp(mode, "IDF")) p->mode = BD_TFIDF_IDF;
    else if (!strcmp(mode, "TFIDF")) p->mode = BD_TFIDF_TFIDF;
    else {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'mode' is '%s', not TF, IDF or TFIDF", mode);
        goto fail;
    }
    if (p->min_len < 1 || p->max_len < p->min_len) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                     "attributes 'min_gram_length' %lld and 'max_gram_length' %lld: need 1 <= min <= max",
                     (long long)p->min_len, (long long)p->max_len);
        goto fail;
    }
    if (p->max_skip < 0 || p->max_skip > (1 << 20)) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'max_skip_count' is %lld", (long long)p->max_skip);
        goto fail;
    }
    BD_TRY(ints_attr(n, "ngram_counts", &counts, e));
    BD_TRY(ints_attr(n, "ngram_indexes", &idx, e));
    BD_TRY(ints_attr(n, "pool_int64s", &pool, e));
    p->n_pool = pool->n;
    /* pass 1: validate and count the n-grams of listed lengths */
    int64_t total = 0, kept = 0;
    for (int i = 0; i < counts->n; i++) {
        int64_t s = counts->ints[i], end = i + 1 < counts->n ? counts->ints[i + 1] : pool->n, k = i + 1;
        if (s < 0 || end < s || end > pool->n) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'ngram_counts'[%d] = %lld does not start a slice of "
                         "the %d pool entries in order", i, (long long)s, pool->n);
            goto fail;
        }
        total += (end - s) / k;
        if (k >= p->min_len && k <= p->max_len) kept += (end - s) / k;
    }
    if (idx->n < total) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'ngram_indexes' has %d entries, the pool holds %lld n-grams",
                     idx->n, (long long)total);
        goto fail;
    }
    p->n_out = 0;
    for (int i = 0; i < idx->n; i++) {
        if (idx->ints[i] < 0 || idx->ints[i] > (1 << 30)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'ngram_indexes'[%d] is %lld", i,
                         (long long)idx->ints[i]);
            goto fail;
        }
        if (idx->ints[i] + 1 > p->n_out) p->n_out = idx->ints[i] + 1;
    }
    p->n_grams = kept;
    if ((w = bd_node_attr(n, "weights"))) {
        if (w->type != BD_ATTR_FLOATS) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'weights' must be a list of floats");
            goto fail;
        }
        p->n_weights = w->n;
    }
    p->n_data = (int64_t)((size_t)(p->n_pool + 3 * kept) * sizeof(int64_t) + (size_t)p->n_weights * sizeof(float));
    p = bd_calloc(1, sizeof *p + (size_t)p->n_data + 8);
    BD_CHECK_ALLOC(e, p);
    *p = q;
    if (p->n_pool) memcpy(p->data, pool->ints, (size_t)p->n_pool * sizeof(int64_t));
    if (p->n_weights) memcpy((float *)bd_tfidf_weights(p, p->data), w->floats, (size_t)p->n_weights * sizeof(float));
    int64_t *start = p->data + p->n_pool, *len = start + kept, *col = len + kept, g = 0, id = 0;
    for (int i = 0; i < counts->n; i++) {
        int64_t s = counts->ints[i], end = i + 1 < counts->n ? counts->ints[i + 1] : pool->n, k = i + 1;
        for (int64_t j = 0; j < (end - s) / k; j++, id++) {
            if (k < p->min_len || k > p->max_len) continue;
            start[g] = s + j * k, len[g] = k, col[g] = idx->ints[id], g++;
        }
    }
fail:
    return bd_params_done(n, p == &q ? NULL : p, st);
}

braid_status bd_text_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_tfidf_params *p = n->params;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "text parameters were not parsed");
    if (in[0].dtype == BRAID_DTYPE_STRING)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input X has dtype string: braid runs TfIdfVectorizer on "
                                                 "int32/int64 tokens only");
    if (in[0].dtype != BRAID_DTYPE_INT32 && in[0].dtype != BRAID_DTYPE_INT64)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, not int32, int64 or string",
                       bd_dtype_name(in[0].dtype));
    if (in[0].rank > 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d, not 1 ([C]) or 2 ([B, C])", in[0].rank);
    out[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = in[0].rank == 2 ? 2 : 1};
    if (in[0].rank == 2) out[0].dims[0] = in[0].dims[0], out[0].dims[1] = p->n_out;
    else out[0].dims[0] = p->n_out;
    return BRAID_OK;
}

double bd_text_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_tfidf_params *p = n->params;
    (void)out;
    if (!p) return 0;
    return (double)bd_numel(&in[0]) * (double)(p->max_skip + 1) * (double)(p->n_grams + 1);
}
