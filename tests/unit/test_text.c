/* test_text.c: the text family (TfIdfVectorizer on integer tokens) on the
 * CPU: unigrams and bigrams with skips against counts made by hand, the
 * modes TF, IDF and TFIDF with weights, int32 tokens, a batch with an empty
 * row count (B = 0), and the errors (string pool refused by name, bad mode,
 * gram lengths out of order). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

static void set_pool(tnode *t, const char *mode, int64_t minl, int64_t maxl, int64_t skip)
{
    /* unigrams 2 3 (columns 0 1), bigrams (5 6) (7 8) (columns 2 3) */
    int64_t counts[2] = {0, 2}, idx[4] = {0, 1, 2, 3}, pool[6] = {2, 3, 5, 6, 7, 8};
    attr_int(t, "min_gram_length", minl);
    attr_int(t, "max_gram_length", maxl);
    attr_int(t, "max_skip_count", skip);
    attr_str(t, "mode", mode);
    attr_ints(t, "ngram_counts", 2, counts);
    attr_ints(t, "ngram_indexes", 4, idx);
    attr_ints(t, "pool_int64s", 6, pool);
}

static void test_counts(void)
{
    /* tokens 2 5 6 3 2 7 9 8: unigram 2 twice, 3 once; bigram 5 6 adjacent;
     * 7 8 only with one token skipped (distance 2) */
    int64_t x[8] = {2, 5, 6, 3, 2, 7, 9, 8};
    const float want[3][4] = {{2, 1, 1, 0}, {2, 1, 1, 1}, {0, 0, 1, 1}};
    const int64_t cfg[3][3] = {{1, 2, 0}, {1, 2, 1}, {2, 2, 5}}; /* min, max, skip */
    for (int c = 0; c < 3; c++) {
        tnode t;
        tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
        set_pool(&t, "TF", cfg[c][0], cfg[c][1], cfg[c][2]);
        bd_tensor in = ints1(x, 8), out = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 1);
        CHECK_EQ_INT(out.dims[0], 4);
        for (int i = 0; i < 4; i++) CHECK(((float *)out.data)[i] == want[c][i]);
        done(&t.n, &out);
    }
}

static void test_modes_int32_batch(void)
{
    /* two rows of int32 tokens; weights 0.5 1.5 2.5 3.5 */
    int32_t x[6] = {2, 2, 3, 5, 6, 0};
    float w[4] = {0.5f, 1.5f, 2.5f, 3.5f};
    const float tf[2][4] = {{2, 1, 0, 0}, {0, 0, 1, 0}};
    for (int m = 0; m < 3; m++) {
        tnode t;
        tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
        set_pool(&t, m == 0 ? "TF" : m == 1 ? "IDF" : "TFIDF", 1, 2, 0);
        bd_attr *a = tnode_attr(&t, "weights", BD_ATTR_FLOATS);
        a->floats = w, a->n = 4;
        bd_tensor in = {BRAID_DTYPE_INT32, 2, {2, 3}, x}, out = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.rank, 2);
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 4; i++) {
                float f = tf[r][i], v = m == 0 ? f : m == 1 ? (f > 0 ? w[i] : 0) : w[i] * f;
                CHECK(((float *)out.data)[r * 4 + i] == v);
            }
        done(&t.n, &out);
    }
    /* B = 0: an empty (0, 4) output */
    tnode t;
    tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
    set_pool(&t, "TF", 1, 2, 0);
    bd_tensor in = {BRAID_DTYPE_INT64, 2, {0, 3}, x}, out = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 0);
    CHECK_EQ_INT(out.dims[1], 4);
    done(&t.n, &out);
}

static void test_errors(void)
{
    int64_t x[2] = {1, 2};
    bd_tensor in = ints1(x, 2), out = {0};
    bd_err e = {0};
    tnode t;
    tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
    set_pool(&t, "TF", 1, 2, 0);
    char *strs[1] = {"a"};
    bd_attr *a = tnode_attr(&t, "pool_strings", BD_ATTR_STRINGS);
    a->strings = strs, a->n = 1;
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "attribute 'pool_strings'");
    done(&t.n, &out);
    tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
    set_pool(&t, "BM25", 1, 2, 0);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'mode' is 'BM25'");
    done(&t.n, &out);
    tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
    set_pool(&t, "TF", 3, 2, 0);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'min_gram_length' 3");
    done(&t.n, &out);
    /* float tokens */
    tnode_init(&t, BD_OP_TfIdfVectorizer, 9, 1, 1);
    set_pool(&t, "TF", 1, 2, 0);
    float fx[2] = {1, 2};
    bd_tensor fin = {F32, 1, {2}, fx};
    CHECK_EQ_INT(run(&t.n, &fin, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "input X has dtype float");
    done(&t.n, &out);
}

int main(void)
{
    test_counts();
    test_modes_int32_batch();
    test_errors();
    return check_done();
}
