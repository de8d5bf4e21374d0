/* test_resize.c: the resize family on hand-computed numbers: nearest 2x
 * upsampling with asymmetric coordinates, linear half_pixel 2x upsampling,
 * tf_crop_and_resize with extrapolation, keep_aspect_ratio_policy sizes,
 * Upsample-7, and the errors for missing or unknown scales and sizes. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"

#include <stdlib.h>

#define MAX_ATTRS 8

typedef struct test_node {
    bd_node n;
    bd_attr attrs[MAX_ATTRS];
    int in[4], out[1];
} test_node;

static void node_init(test_node *t, int op, int opset, int n_in)
{
    memset(t, 0, sizeof *t);
    t->n.name = "resize_under_test";
    t->n.op_type = (char *)bd_op_table[op].name;
    t->n.domain = "";
    t->n.op = op;
    t->n.opset = opset;
    t->n.n_in = n_in;
    t->n.n_out = 1;
    t->n.in = t->in;
    t->n.out = t->out;
    t->n.attrs = t->attrs;
}

static bd_attr *attr(test_node *t, const char *name, bd_attr_type type)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = type;
    return a;
}

static void attr_str(test_node *t, const char *name, const char *s)
{
    attr(t, name, BD_ATTR_STRING)->s = (char *)s;
}

static const bd_tensor none = {BRAID_DTYPE_UNDEFINED, -1, {0}, NULL};

static bd_tensor vec_f(int n, float *v)
{
    bd_tensor t = {BRAID_DTYPE_FLOAT, 1, {n}, v};
    return t;
}

static bd_tensor vec_i64(int n, int64_t *v)
{
    bd_tensor t = {BRAID_DTYPE_INT64, 1, {n}, v};
    return t;
}

/* Parses, infers and runs the node on in[]; out gets allocated data. */
static braid_status run(test_node *t, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = bd_op_parse(&t->n, e);
    if (st != BRAID_OK) return st;
    memset(out, 0, sizeof *out);
    st = bd_op_infer(&t->n, in, out, e);
    if (st != BRAID_OK) return st;
    out->data = calloc((size_t)bd_numel(out) + 1, sizeof(float));
    bd_kernel k = {&t->n, in, t->n.n_in, out, 1, 1, e};
    return bd_cpu_run(&k);
}

static void done(test_node *t, bd_tensor *out)
{
    free(out->data);
    out->data = NULL;
    bd_free(t->n.params);
    t->n.params = NULL;
}

int main(void)
{
    bd_err e = {0};
    test_node t;
    bd_tensor out;
    float x4[4] = {1, 2, 3, 4}; /* (1, 1, 2, 2) */
    float s2[4] = {1, 1, 2, 2};

    /* Nearest, asymmetric, round_prefer_floor: output o reads input o / 2
     * rounded half down (0, 0.5, 1, 1.5 -> 0, 0, 1, 1): each pixel repeated. */
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "nearest");
    attr_str(&t, "coordinate_transformation_mode", "asymmetric");
    bd_tensor in[4] = {{BRAID_DTYPE_FLOAT, 4, {1, 1, 2, 2}, x4}, none, vec_f(4, s2), none};
    CHECK_EQ_INT(run(&t, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 4);
    CHECK_EQ_INT(out.dims[2], 4);
    CHECK_EQ_INT(out.dims[3], 4);
    const float want_nearest[16] = {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};
    for (int i = 0; i < 16; i++) CHECK_NEAR(((float *)out.data)[i], want_nearest[i], 0, 0);
    done(&t, &out);

    /* Linear, half_pixel: source x = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75,
     * 1.25, clamped to [0, 1]: a row [a b] becomes [a, .75a+.25b, .25a+.75b, b]. */
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    CHECK_EQ_INT(run(&t, in, &out, &e), BRAID_OK);
    const float want_linear[16] = {1,   1.25f, 1.75f, 2,   1.5f, 1.75f, 2.25f, 2.5f,
                                   2.5f, 2.75f, 3.25f, 3.5f, 3,    3.25f, 3.75f, 4};
    for (int i = 0; i < 16; i++) CHECK_NEAR(((float *)out.data)[i], want_linear[i], 1e-6, 1e-6);
    done(&t, &out);

    /* The same through sizes instead of scales. */
    int64_t sz[4] = {1, 1, 4, 4};
    node_init(&t, BD_OP_Resize, 19, 4);
    attr_str(&t, "mode", "linear");
    bd_tensor in_sz[4] = {in[0], none, none, vec_i64(4, sz)};
    CHECK_EQ_INT(run(&t, in_sz, &out, &e), BRAID_OK);
    for (int i = 0; i < 16; i++) CHECK_NEAR(((float *)out.data)[i], want_linear[i], 1e-6, 1e-6);
    done(&t, &out);

    /* tf_crop_and_resize on 1-D [1 2], roi [0.5, 1.5], 3 outputs: source x =
     * 0.5 + o * 0.5 = 0.5, 1, 1.5; the last is outside [0, 1]: extrapolated. */
    float x2[2] = {1, 2}, roi[2] = {0.5f, 1.5f};
    int64_t sz3[1] = {3};
    node_init(&t, BD_OP_Resize, 19, 4);
    attr_str(&t, "mode", "linear");
    attr_str(&t, "coordinate_transformation_mode", "tf_crop_and_resize");
    attr(&t, "extrapolation_value", BD_ATTR_FLOAT)->f = 10;
    bd_tensor in_tf[4] = {{BRAID_DTYPE_FLOAT, 1, {2}, x2}, vec_f(2, roi), none, vec_i64(1, sz3)};
    CHECK_EQ_INT(run(&t, in_tf, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[0], 3);
    CHECK_NEAR(((float *)out.data)[0], 1.5, 1e-6, 0);
    CHECK_NEAR(((float *)out.data)[1], 2, 1e-6, 0);
    CHECK_NEAR(((float *)out.data)[2], 10, 0, 0);
    done(&t, &out);

    /* keep_aspect_ratio_policy not_larger: sizes (7, 8) on 2x2 take the
     * smaller scale 3.5 on both axes: 7x7. not_smaller takes 4: 8x8. */
    int64_t axes[2] = {2, 3}, sz78[2] = {7, 8};
    const char *policy[2] = {"not_larger", "not_smaller"};
    for (int i = 0; i < 2; i++) {
        node_init(&t, BD_OP_Resize, 19, 4);
        bd_attr *a = attr(&t, "axes", BD_ATTR_INTS);
        a->n = 2;
        a->ints = axes;
        attr_str(&t, "keep_aspect_ratio_policy", policy[i]);
        bd_tensor in_k[4] = {in[0], none, none, vec_i64(2, sz78)};
        CHECK_EQ_INT(run(&t, in_k, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dims[1], 1);
        CHECK_EQ_INT(out.dims[2], i ? 8 : 7);
        CHECK_EQ_INT(out.dims[3], i ? 8 : 7);
        done(&t, &out);
    }

    /* Upsample-7: scales as an attribute, nearest floors x / 2. */
    node_init(&t, BD_OP_Upsample, 7, 1);
    bd_attr *a = attr(&t, "scales", BD_ATTR_FLOATS);
    a->n = 4;
    a->floats = s2;
    CHECK_EQ_INT(run(&t, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 16; i++) CHECK_NEAR(((float *)out.data)[i], want_nearest[i], 0, 0);
    done(&t, &out);

    /* Neither scales nor sizes (both omitted, or both empty): INVALID_MODEL. */
    node_init(&t, BD_OP_Resize, 19, 4);
    bd_tensor in_none[4] = {in[0], none, {BRAID_DTYPE_FLOAT, 1, {0}, NULL}, none};
    CHECK_EQ_INT(run(&t, in_none, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "Resize needs 'scales' or 'sizes'");
    CHECK_CONTAINS(e.msg, "neither was given");
    done(&t, &out);

    /* Scales that are not known when the plan is made: UNSUPPORTED. */
    node_init(&t, BD_OP_Resize, 19, 3);
    bd_tensor in_unknown[4] = {in[0], none, vec_f(4, NULL), none};
    CHECK_EQ_INT(run(&t, in_unknown, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "'scales' must be known");
    done(&t, &out);

    /* Both given, a wrong count, a bad mode, string data. */
    node_init(&t, BD_OP_Resize, 19, 4);
    bd_tensor in_both[4] = {in[0], none, vec_f(4, s2), vec_i64(4, sz)};
    CHECK_EQ_INT(run(&t, in_both, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "only one may be");
    bd_tensor in_short[4] = {in[0], none, vec_f(2, s2), none};
    CHECK_EQ_INT(run(&t, in_short, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "'scales' has 2 values, expected 4");
    bd_tensor in_int[4] = {in[0], none, vec_f(4, s2), none};
    in_int[0].dtype = BRAID_DTYPE_STRING;
    CHECK_EQ_INT(run(&t, in_int, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "string");
    done(&t, &out);
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "area");
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "attribute 'mode' is 'area'");
    done(&t, &out);

    return check_done();
}
