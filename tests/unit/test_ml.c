/* test_ml.c: the ml family (ai.onnx.ml) on the CPU against values computed
 * by hand: ArrayFeatureExtractor on a 1-D and a 3-D input, Binarizer with
 * NaN, Scaler with one and per-feature offsets, Imputer of NaN and of a
 * value, Normalizer MAX/L1/L2 (and an all-zero row), LinearRegressor with two
 * targets, LinearClassifier binary and multiclass with each post transform,
 * LabelEncoder int->float, float->int64 (NaN key) and the opset 4 tensor
 * attributes, OneHotEncoder, empty batches, and the errors (string labels
 * refused by name, bad attributes, unknown category), and
 * FeatureVectorizer cutting and padding its inputs. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

static bd_node ml_node(tnode *t, int op, int opset, int n_in, int n_out)
{
    tnode_init(t, op, opset, n_in, n_out);
    t->n.domain = "ai.onnx.ml";
    return t->n;
}

static bd_attr *attr_fs(tnode *t, const char *name, float *v, int n)
{
    bd_attr *a = tnode_attr(t, name, BD_ATTR_FLOATS);
    a->floats = v, a->n = n;
    return a;
}

static void test_afe_binarizer(void)
{
    bd_err e = {0};
    tnode t;
    /* X (2, 1, 3), columns 2 0 2 */
    float x[6] = {1, 2, 3, 4, 5, 6};
    int64_t ix[3] = {2, 0, 2};
    ml_node(&t, BD_OP_ML_ArrayFeatureExtractor, 1, 2, 1);
    bd_tensor in[2] = {{F32, 3, {2, 1, 3}, x}, ints1(ix, 3)}, out = {0};
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 3);
    const float w[6] = {3, 1, 3, 6, 4, 6};
    for (int i = 0; i < 6; i++) CHECK(((float *)out.data)[i] == w[i]);
    done(&t.n, &out);
    /* 1-D X gives (1, m) */
    in[0] = (bd_tensor){F32, 1, {3}, x};
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 1);
    CHECK(((float *)out.data)[0] == 3 && ((float *)out.data)[1] == 1);
    done(&t.n, &out);
    /* an index out of range */
    ix[1] = 3;
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "input Y[1] = 3 is outside [0, 3)");
    done(&t.n, &out);
    /* Binarizer: > threshold is 1, NaN is 0 */
    double xb[4] = {0.5, 1.0, 1.5, NAN};
    ml_node(&t, BD_OP_ML_Binarizer, 1, 1, 1);
    attr_float(&t, "threshold", 1.0f);
    bd_tensor bin = {BRAID_DTYPE_DOUBLE, 1, {4}, xb};
    CHECK_EQ_INT(run(&t.n, &bin, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_DOUBLE);
    const double wb[4] = {0, 0, 1, 0};
    for (int i = 0; i < 4; i++) CHECK(((double *)out.data)[i] == wb[i]);
    done(&t.n, &out);
}

static void test_scaler_imputer_normalizer(void)
{
    bd_err e = {0};
    tnode t;
    int64_t x[6] = {1, 2, 3, 4, 5, 6};
    float off[3] = {1, 2, 3}, sc[1] = {0.5f};
    ml_node(&t, BD_OP_ML_Scaler, 1, 1, 1);
    attr_fs(&t, "offset", off, 3);
    attr_fs(&t, "scale", sc, 1);
    bd_tensor in = {BRAID_DTYPE_INT64, 2, {2, 3}, x}, out = {0};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, F32);
    for (int i = 0; i < 6; i++) CHECK(((float *)out.data)[i] == (float)((x[i] - off[i % 3]) * 0.5));
    done(&t.n, &out);
    /* 2 offsets for 3 features */
    t.attrs[0].n = 2;
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "attributes 'offset' (2)");
    done(&t.n, &out);
    /* Imputer: NaN -> per-feature values */
    float xf[4] = {NAN, 1, 2, NAN}, imp[2] = {10, 20};
    ml_node(&t, BD_OP_ML_Imputer, 1, 1, 1);
    attr_fs(&t, "imputed_value_floats", imp, 2);
    attr_float(&t, "replaced_value_float", NAN);
    in = (bd_tensor){F32, 2, {2, 2}, xf};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    const float wi[4] = {10, 1, 2, 20};
    for (int i = 0; i < 4; i++) CHECK(((float *)out.data)[i] == wi[i]);
    done(&t.n, &out);
    /* Imputer of int64 value 2 */
    int64_t xi[3] = {2, 3, 2}, impi[1] = {7};
    ml_node(&t, BD_OP_ML_Imputer, 1, 1, 1);
    attr_ints(&t, "imputed_value_int64s", 1, impi);
    attr_int(&t, "replaced_value_int64", 2);
    in = (bd_tensor){BRAID_DTYPE_INT64, 2, {1, 3}, xi};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK(((int64_t *)out.data)[0] == 7 && ((int64_t *)out.data)[1] == 3 && ((int64_t *)out.data)[2] == 7);
    done(&t.n, &out);
    /* Normalizer over rows (3, -4) and (0, 0) */
    float xn[4] = {3, -4, 0, 0};
    const float wn[3][2] = {{0.75f, -1}, {3.0f / 7, -4.0f / 7}, {0.6f, -0.8f}};
    const char *norms[3] = {"MAX", "L1", "L2"};
    for (int k = 0; k < 3; k++) {
        ml_node(&t, BD_OP_ML_Normalizer, 1, 1, 1);
        attr_str(&t, "norm", norms[k]);
        in = (bd_tensor){F32, 2, {2, 2}, xn};
        CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
        for (int i = 0; i < 2; i++) CHECK_NEAR(((float *)out.data)[i], wn[k][i], 1e-7, 1e-6);
        CHECK(((float *)out.data)[2] == 0 && ((float *)out.data)[3] == 0);
        done(&t.n, &out);
    }
    ml_node(&t, BD_OP_ML_Normalizer, 1, 1, 1);
    attr_str(&t, "norm", "L3");
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'norm' is 'L3'");
    done(&t.n, &out);
}

static void test_linear(void)
{
    bd_err e = {0};
    tnode t;
    float x[4] = {1, 2, -1, 0.5f};
    /* regressor, 2 targets: y_k = b_k + w_k . x */
    float co[4] = {1, 2, 3, -1}, ic[2] = {0.5f, -1};
    ml_node(&t, BD_OP_ML_LinearRegressor, 1, 1, 1);
    attr_fs(&t, "coefficients", co, 4);
    attr_fs(&t, "intercepts", ic, 2);
    attr_int(&t, "targets", 2);
    bd_tensor in = {F32, 2, {2, 2}, x}, out[2] = {{0}};
    CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_OK);
    const float wr[4] = {5.5f, 0, 0.5f, -4.5f};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], wr[i], 1e-6, 0);
    done(&t.n, out);
    /* 2 features, X with 3 */
    in.dims[1] = 1;
    CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_ERR_SHAPE);
    done(&t.n, out);
    /* binary classifier, one coefficient row: scores (-s, s), labels 5 / 9 */
    float cb[2] = {1, -1}, ib[1] = {0.25f};
    int64_t lab[2] = {5, 9};
    const char *posts[3] = {"NONE", "LOGISTIC", "SOFTMAX"};
    for (int k = 0; k < 3; k++) {
        ml_node(&t, BD_OP_ML_LinearClassifier, 1, 1, 2);
        attr_fs(&t, "coefficients", cb, 2);
        attr_fs(&t, "intercepts", ib, 1);
        attr_ints(&t, "classlabels_ints", 2, lab);
        attr_str(&t, "post_transform", posts[k]);
        in = (bd_tensor){F32, 2, {2, 2}, x};
        CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[1].dims[1], 2);
        double s[2] = {1 - 2 + 0.25, -1 - 0.5 + 0.25};
        for (int r = 0; r < 2; r++) {
            double a = -s[r], b = s[r];
            if (k == 1) a = 1 / (1 + exp(-a)), b = 1 / (1 + exp(-b));
            if (k == 2) { double ea = exp(a - b), eb = 1; a = ea / (ea + eb), b = eb / (ea + eb); }
            CHECK_NEAR(((float *)out[1].data)[2 * r], a, 1e-6, 1e-5);
            CHECK_NEAR(((float *)out[1].data)[2 * r + 1], b, 1e-6, 1e-5);
            CHECK_EQ_INT(((int64_t *)out[0].data)[r], s[r] > 0 ? 9 : 5);
        }
        done(&t.n, out);
    }
    /* three classes, SOFTMAX_ZERO keeps a zero score's weight at exp(-max) */
    float c3[6] = {1, 0, 0, 1, 0, 0}, i3[3] = {0, 0, 0};
    int64_t l3[3] = {10, 20, 30};
    ml_node(&t, BD_OP_ML_LinearClassifier, 1, 1, 2);
    attr_fs(&t, "coefficients", c3, 6);
    attr_fs(&t, "intercepts", i3, 3);
    attr_ints(&t, "classlabels_ints", 3, l3);
    attr_str(&t, "post_transform", "SOFTMAX_ZERO");
    in = (bd_tensor){F32, 2, {2, 2}, x};
    CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_OK);
    /* row 0 scores (1, 2, 0): exp(-1), 1, 0 * exp(-2) = 0 */
    double z = exp(-1.0) + 1;
    CHECK_NEAR(((float *)out[1].data)[0], exp(-1.0) / z, 1e-6, 1e-5);
    CHECK_NEAR(((float *)out[1].data)[1], 1 / z, 1e-6, 1e-5);
    CHECK(((float *)out[1].data)[2] == 0);
    CHECK_EQ_INT(((int64_t *)out[0].data)[0], 20);
    CHECK_EQ_INT(((int64_t *)out[0].data)[1], 20); /* scores (-1, 0.5, 0) */
    done(&t.n, out);
    /* string labels are refused by name */
    ml_node(&t, BD_OP_ML_LinearClassifier, 1, 1, 2);
    attr_fs(&t, "coefficients", c3, 6);
    tnode_attr(&t, "classlabels_strings", BD_ATTR_STRINGS);
    CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "attribute 'classlabels_strings'");
    done(&t.n, out);
    /* an empty batch */
    ml_node(&t, BD_OP_ML_LinearRegressor, 1, 1, 1);
    attr_fs(&t, "coefficients", co, 2);
    in = (bd_tensor){F32, 2, {0, 2}, x};
    CHECK_EQ_INT(run(&t.n, &in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[0], 0);
    CHECK_EQ_INT(out[0].dims[1], 1);
    done(&t.n, out);
}

static void test_label_onehot(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor out = {0};
    /* int64 keys -> float values, default -0.0 */
    int64_t keys[3] = {30, 10, 20}, x[4] = {10, 20, 99, 30};
    float vals[3] = {3.5f, 1.5f, 2.5f};
    ml_node(&t, BD_OP_ML_LabelEncoder, 2, 1, 1);
    attr_ints(&t, "keys_int64s", 3, keys);
    attr_fs(&t, "values_floats", vals, 3);
    bd_tensor in = ints1(x, 4);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, F32);
    const float w[4] = {1.5f, 2.5f, -0.0f, 3.5f};
    for (int i = 0; i < 4; i++) CHECK(((float *)out.data)[i] == w[i]);
    CHECK(signbit(((float *)out.data)[2]));
    done(&t.n, &out);
    /* opset 4 tensors: double keys with NaN -> int64 values, default 42 */
    double kd[3] = {NAN, 1.5, -2}, xd[4] = {-2, NAN, 7, 1.5};
    int64_t vd[3] = {100, 200, 300}, def = 42;
    bd_tensor kt = {BRAID_DTYPE_DOUBLE, 1, {3}, kd}, vt = ints1(vd, 3), dt = ints1(&def, 1);
    ml_node(&t, BD_OP_ML_LabelEncoder, 4, 1, 1);
    tnode_attr(&t, "keys_tensor", BD_ATTR_TENSOR)->t = &kt;
    tnode_attr(&t, "values_tensor", BD_ATTR_TENSOR)->t = &vt;
    tnode_attr(&t, "default_tensor", BD_ATTR_TENSOR)->t = &dt;
    in = (bd_tensor){BRAID_DTYPE_DOUBLE, 2, {2, 2}, xd};
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_INT64);
    const int64_t wd[4] = {300, 100, 42, 200};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out.data)[i], wd[i]);
    done(&t.n, &out);
    /* int input against float keys */
    in = ints1(x, 4);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_DTYPE);
    done(&t.n, &out);
    /* opset 1 without classes_strings; string keys with no values; keys and
     * values of different lengths (string maps: test_ml_strings.py) */
    ml_node(&t, BD_OP_ML_LabelEncoder, 1, 1, 1);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'classes_strings' is required at opset 1");
    done(&t.n, &out);
    ml_node(&t, BD_OP_ML_LabelEncoder, 2, 1, 1);
    tnode_attr(&t, "keys_strings", BD_ATTR_STRINGS);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'values_*' is required");
    done(&t.n, &out);
    ml_node(&t, BD_OP_ML_LabelEncoder, 2, 1, 1);
    attr_ints(&t, "keys_int64s", 3, keys);
    attr_fs(&t, "values_floats", vals, 2);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "keys (3 entries) and values (2)");
    done(&t.n, &out);
    /* OneHotEncoder: (2) -> (2, 3); 99 unknown is all zeros, or an error with zeros 0 */
    int64_t cats[3] = {20, 10, 30}, xo[2] = {10, 99};
    ml_node(&t, BD_OP_ML_OneHotEncoder, 1, 1, 1);
    attr_ints(&t, "cats_int64s", 3, cats);
    in = ints1(xo, 2);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[1], 3);
    const float wo[6] = {0, 1, 0, 0, 0, 0};
    for (int i = 0; i < 6; i++) CHECK(((float *)out.data)[i] == wo[i]);
    done(&t.n, &out);
    attr_int(&t, "zeros", 0);
    CHECK_EQ_INT(run(&t.n, &in, &out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "input X[1] = 99 is not in attribute 'cats_int64s'");
    done(&t.n, &out);
}

static void test_feature_vectorizer(void)
{
    /* inputs (2, 3) float cut to 2 columns, (2) int64 as a column padded to 2 */
    float a[6] = {1, 2, 3, 4, 5, 6};
    int64_t b[2] = {7, 8}, dims[2] = {2, 2};
    tnode t;
    ml_node(&t, BD_OP_ML_FeatureVectorizer, 1, 2, 1);
    attr_ints(&t, "inputdimensions", 2, dims);
    bd_tensor in[2] = {{F32, 2, {2, 3}, a}, ints1(b, 2)}, out = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 2);
    CHECK_EQ_INT(out.dims[1], 4);
    const float w[8] = {1, 2, 7, 0, 4, 5, 8, 0};
    for (int i = 0; i < 8; i++) CHECK(((float *)out.data)[i] == w[i]);
    done(&t.n, &out);
    /* rows that disagree; inputdimensions of the wrong length */
    in[1].dims[0] = 1;
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "input 1 has 1 rows");
    done(&t.n, &out);
    t.attrs[0].n = 1;
    CHECK_EQ_INT(run(&t.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "attribute 'inputdimensions' has 1 entries");
    done(&t.n, &out);
}

int main(void)
{
    test_feature_vectorizer();
    test_afe_binarizer();
    test_scaler_imputer_normalizer();
    test_linear();
    test_label_onehot();
    return check_done();
}
