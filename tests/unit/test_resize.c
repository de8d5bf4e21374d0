/* test_resize.c: the resize family on hand-computed numbers: nearest 2x
 * upsampling with asymmetric coordinates, linear half_pixel 2x upsampling,
 * tf_crop_and_resize with extrapolation, keep_aspect_ratio_policy sizes,
 * Upsample-7, and the errors for missing or unknown scales and sizes; the
 * dtypes beyond float32: integers rounded half to even and saturated
 * (against onnx's reference), int64 nearest exact beyond 2^53, bool,
 * float16, bfloat16 and double. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "util/dtype.h"

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
    out->data = calloc((size_t)bd_numel(out) + 1, bd_dtype_size(out->dtype) > 4 ? 8 : 4);
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

static bd_tensor tensor4(int dt, int64_t n, int64_t c, int64_t h, int64_t w, void *data)
{
    bd_tensor t = {dt, 4, {n, c, h, w}, data};
    return t;
}

static void resize_dtypes(void)
{
    bd_err e = {0};
    test_node t;
    bd_tensor out;
    float sc2[4] = {1, 1, 1, 2}, sc15[4] = {1, 1, 1.5f, 2}, sc04[4] = {1, 1, 1, 0.4f};

    /* uint8 linear (half_pixel) 2x on (10, 12): the two middle points are
     * 10.5 and 11.5, which round half to even: 10 and 12 (not 11, 12). */
    uint8_t u[2] = {10, 12};
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    bd_tensor in_u[3] = {tensor4(BRAID_DTYPE_UINT8, 1, 1, 1, 2, u), none, vec_f(4, sc2)};
    CHECK_EQ_INT(run(&t, in_u, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_UINT8);
    const uint8_t want_u[4] = {10, 10, 12, 12};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want_u[i]);
    done(&t, &out);

    /* Against onnx.reference (onnx 1.23.2), Resize-19 with roi = [] and:
     *   uint8 (0, 255, 255, 0, 40) (1,1,1,5), scales (1,1,1,2), mode cubic
     *     -> [0, 58, 197, 255, 255, 196, 54, 0, 22, 44]   (the overshoot saturates)
     *   int8 (-100, 50, 127, -128, 3, -7) (1,1,2,3), scales (1,1,1.5,2), mode linear
     *     -> [-100, -62, 12, 69, 108, 127, -114, -79, -9, 35, 52, 60, -128, -95, -30, 0, -4, -7]
     *   int32 1000 * arange(12) - 5000 (1,1,1,12), scales (1,1,1,0.4), linear, antialias 1
     *     -> [-4120, -1760, 760, 3240] */
    uint8_t uc[5] = {0, 255, 255, 0, 40};
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "cubic");
    bd_tensor in_c[3] = {tensor4(BRAID_DTYPE_UINT8, 1, 1, 1, 5, uc), none, vec_f(4, sc2)};
    CHECK_EQ_INT(run(&t, in_c, &out, &e), BRAID_OK);
    const uint8_t want_c[10] = {0, 58, 197, 255, 255, 196, 54, 0, 22, 44};
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], want_c[i]);
    done(&t, &out);
    int8_t i8[6] = {-100, 50, 127, -128, 3, -7};
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    bd_tensor in_8[3] = {tensor4(BRAID_DTYPE_INT8, 1, 1, 2, 3, i8), none, vec_f(4, sc15)};
    CHECK_EQ_INT(run(&t, in_8, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[2], 3);
    CHECK_EQ_INT(out.dims[3], 6);
    const int8_t want_8[18] = {-100, -62, 12, 69, 108, 127, -114, -79, -9, 35, 52, 60, -128, -95, -30, 0, -4, -7};
    for (int i = 0; i < 18; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], want_8[i]);
    done(&t, &out);
    int32_t i32[12];
    for (int i = 0; i < 12; i++) i32[i] = 1000 * i - 5000;
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    attr(&t, "antialias", BD_ATTR_INT)->i = 1;
    bd_tensor in_32[3] = {tensor4(BRAID_DTYPE_INT32, 1, 1, 1, 12, i32), none, vec_f(4, sc04)};
    CHECK_EQ_INT(run(&t, in_32, &out, &e), BRAID_OK);
    const int32_t want_32[4] = {-4120, -1760, 760, 3240};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], want_32[i]);
    done(&t, &out);

    /* int64 nearest copies exactly, beyond double's 53 bits; bool nearest;
     * bool linear is refused. */
    int64_t big[2] = {(1LL << 62) + 1, -(1LL << 60) - 3};
    node_init(&t, BD_OP_Resize, 19, 3);
    bd_tensor in_big[3] = {tensor4(BRAID_DTYPE_INT64, 1, 1, 1, 2, big), none, vec_f(4, sc2)};
    CHECK_EQ_INT(run(&t, in_big, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK(((int64_t *)out.data)[i] == big[i / 2]);
    done(&t, &out);
    uint8_t b[2] = {1, 0};
    node_init(&t, BD_OP_Resize, 19, 3);
    bd_tensor in_b[3] = {tensor4(BRAID_DTYPE_BOOL, 1, 1, 1, 2, b), none, vec_f(4, sc2)};
    CHECK_EQ_INT(run(&t, in_b, &out, &e), BRAID_OK);
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], b[i / 2]);
    done(&t, &out);
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    CHECK_EQ_INT(run(&t, in_b, &out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "bool");
    done(&t, &out);

    /* float16, bfloat16 and double: linear 2x of (1, 2): 1, 1.25, 1.75, 2
     * (exact in every dtype); double keeps 1/3-scale precision. */
    for (int k = 0; k < 3; k++) {
        uint16_t h[2];
        double dv[2] = {1, 2};
        int dt = k == 0 ? BRAID_DTYPE_FLOAT16 : k == 1 ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_DOUBLE;
        h[0] = k == 0 ? bd_float_to_half(1) : bd_float_to_bf16(1);
        h[1] = k == 0 ? bd_float_to_half(2) : bd_float_to_bf16(2);
        node_init(&t, BD_OP_Resize, 19, 3);
        attr_str(&t, "mode", "linear");
        bd_tensor in_h[3] = {tensor4(dt, 1, 1, 1, 2, k == 2 ? (void *)dv : h), none, vec_f(4, sc2)};
        CHECK_EQ_INT(run(&t, in_h, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dtype, dt);
        const double want[4] = {1, 1.25, 1.75, 2};
        for (int i = 0; i < 4; i++) {
            double got = k == 2 ? ((double *)out.data)[i]
                                : k == 0 ? bd_half_to_float(((uint16_t *)out.data)[i])
                                         : bd_bf16_to_float(((uint16_t *)out.data)[i]);
            CHECK_NEAR(got, want[i], 0, 0);
        }
        done(&t, &out);
    }
    /* Upsample-1: height_scale 2, width_scale 3, nearest, on (1, 2; 3, 4) */
    float up[4] = {1, 2, 3, 4};
    node_init(&t, BD_OP_Upsample, 1, 1);
    attr(&t, "height_scale", BD_ATTR_FLOAT)->f = 2.0f;
    attr(&t, "width_scale", BD_ATTR_FLOAT)->f = 3.0f;
    bd_tensor in_up[1] = {tensor4(BRAID_DTYPE_FLOAT, 1, 1, 2, 2, up)};
    CHECK_EQ_INT(run(&t, in_up, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dims[2], 4);
    CHECK_EQ_INT(out.dims[3], 6);
    for (int i = 0; i < 24; i++) CHECK_NEAR(((float *)out.data)[i], up[(i / 6 / 2) * 2 + (i % 6) / 3], 0, 0);
    done(&t, &out);
    node_init(&t, BD_OP_Upsample, 6, 1);
    attr(&t, "height_scale", BD_ATTR_FLOAT)->f = 2.0f;
    CHECK_EQ_INT(run(&t, in_up, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'width_scale' are required");
    done(&t, &out);

    /* double at scale 3: the points 1/3 and 2/3 of the way, to double precision */
    double d3[2] = {0, 1};
    float sc3[4] = {1, 1, 1, 3};
    node_init(&t, BD_OP_Resize, 19, 3);
    attr_str(&t, "mode", "linear");
    attr_str(&t, "coordinate_transformation_mode", "align_corners");
    bd_tensor in_d[3] = {tensor4(BRAID_DTYPE_DOUBLE, 1, 1, 1, 2, d3), none, vec_f(4, sc3)};
    CHECK_EQ_INT(run(&t, in_d, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(((double *)out.data)[i], i / 5.0, 1e-15, 0);
    done(&t, &out);
}

/* ---- NHWC: scales (1, sh, sw, 1) on (N, H, W, C) ----------------------------- */

static braid_status run_threads(test_node *t, bd_tensor *in, bd_tensor *out, int threads, bd_err *e)
{
    braid_status st = bd_op_parse(&t->n, e);
    if (st != BRAID_OK) return st;
    memset(out, 0, sizeof *out);
    if ((st = bd_op_infer(&t->n, in, out, e)) != BRAID_OK) return st;
    out->data = malloc((size_t)bd_numel(out) * 4 + 4);
    memset(out->data, 0xFF, (size_t)bd_numel(out) * 4); /* NaN: an element left unwritten shows */
    bd_kernel k = {&t->n, in, t->n.n_in, out, 1, threads, e};
    return bd_cpu_run(&k);
}

typedef struct nhwc_case {
    const char *mode, *coord, *nearest;
    float sh, sw;
    int roi; /* tf_crop_and_resize's roi, extrapolation value 7 */
} nhwc_case;

/* The NHWC resize (channels as runs: copies and vector blends) gives the
 * bits of the NCHW one on the same data transposed, at 1 and 3 threads. */
static void check_nhwc(const nhwc_case *c, int64_t N, int64_t C, int64_t H, int64_t W)
{
    int64_t nx = N * C * H * W;
    float *x = malloc(sizeof *x * (size_t)nx), *xh = malloc(sizeof *x * (size_t)nx);
    unsigned seed = (unsigned)(C * 31 + H * 7 + W);
    for (int64_t i = 0; i < nx; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t i = 0; i < H * W; i++) xh[(n * H * W + i) * C + ch] = x[(n * C + ch) * H * W + i];
    float sc_c[4] = {1, 1, c->sh, c->sw}, sc_h[4] = {1, c->sh, c->sw, 1};
    float roi_c[8] = {0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 1.2f}, roi_h[8] = {0, 0.1f, 0.2f, 0, 1, 0.9f, 1.2f, 1};
    bd_tensor in_c[4] = {tensor4(BRAID_DTYPE_FLOAT, N, C, H, W, x), c->roi ? vec_f(8, roi_c) : none, vec_f(4, sc_c), none};
    bd_tensor in_h[4] = {tensor4(BRAID_DTYPE_FLOAT, N, H, W, C, xh), c->roi ? vec_f(8, roi_h) : none, vec_f(4, sc_h), none};
    bd_tensor yc = {0}, y1 = {0}, y3 = {0}, yc3 = {0};
    bd_err e = {0};
    test_node t;
#define NHWC_NODE()                                                                                              \
    do {                                                                                                         \
        node_init(&t, BD_OP_Resize, 19, 3);                                                                      \
        attr_str(&t, "mode", c->mode);                                                                           \
        attr_str(&t, "coordinate_transformation_mode", c->coord);                                                \
        if (c->nearest) attr_str(&t, "nearest_mode", c->nearest);                                                \
        if (c->roi) attr(&t, "extrapolation_value", BD_ATTR_FLOAT)->f = 7.0f;                                    \
    } while (0)
    NHWC_NODE();
    int ok = run_threads(&t, in_c, &yc, 1, &e) == BRAID_OK;
    done(&t, &(bd_tensor){0});
    NHWC_NODE();
    ok = ok && run_threads(&t, in_c, &yc3, 3, &e) == BRAID_OK;
    done(&t, &(bd_tensor){0});
    NHWC_NODE();
    ok = ok && run_threads(&t, in_h, &y1, 1, &e) == BRAID_OK;
    done(&t, &(bd_tensor){0});
    NHWC_NODE();
    ok = ok && run_threads(&t, in_h, &y3, 3, &e) == BRAID_OK;
    done(&t, &(bd_tensor){0});
#undef NHWC_NODE
    if (!ok) fprintf(stderr, "resize %s/%s: %s\n", c->mode, c->coord, e.msg);
    CHECK(ok);
    if (ok) {
        int64_t OH = yc.dims[2], OW = yc.dims[3], no = N * C * OH * OW;
        CHECK(y1.dims[1] == OH && y1.dims[2] == OW && y1.dims[3] == C);
        float *ref = malloc(sizeof *ref * (size_t)no);
        for (int64_t n = 0; n < N; n++)
            for (int64_t ch = 0; ch < C; ch++)
                for (int64_t i = 0; i < OH * OW; i++)
                    ref[(n * OH * OW + i) * C + ch] = ((float *)yc.data)[(n * C + ch) * OH * OW + i];
        int same = memcmp(y1.data, ref, sizeof *ref * (size_t)no) == 0;
        if (!same)
            fprintf(stderr, "resize %s/%s %g x %g C %lld %lldx%lld: NHWC differs from NCHW\n", c->mode, c->coord,
                    c->sh, c->sw, (long long)C, (long long)H, (long long)W);
        CHECK(same);
        CHECK(memcmp(y1.data, y3.data, sizeof *ref * (size_t)no) == 0);
        CHECK(memcmp(yc.data, yc3.data, sizeof *ref * (size_t)no) == 0);
        free(ref);
    }
    free(yc.data);
    free(yc3.data);
    free(y1.data);
    free(y3.data);
    free(x);
    free(xh);
}

static void resize_nhwc(void)
{
    static const nhwc_case cases[] = {
        {"nearest", "asymmetric", "floor", 2, 2, 0},
        {"nearest", "half_pixel", "round_prefer_floor", 2, 2, 0},
        {"nearest", "align_corners", "round_prefer_ceil", 1.5f, 2.5f, 0},
        {"nearest", "asymmetric", "floor", 0.5f, 0.5f, 0},
        {"nearest", "half_pixel_symmetric", "ceil", 3, 1, 0},
        {"linear", "half_pixel", NULL, 2, 2, 0},
        {"linear", "pytorch_half_pixel", NULL, 2, 3, 0},
        {"linear", "align_corners", NULL, 2, 2, 0},
        {"linear", "asymmetric", NULL, 0.6f, 1.7f, 0},
        {"linear", "half_pixel", NULL, 1, 2, 0},
        {"linear", "tf_crop_and_resize", NULL, 2, 1.5f, 1},
        {"cubic", "half_pixel", NULL, 2, 2, 0},
    };
    static const int64_t chans[] = {1, 3, 16, 17, 64};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (size_t ci = 0; ci < sizeof chans / sizeof *chans; ci++) {
            check_nhwc(&cases[i], 1 + (int64_t)(ci % 2), chans[ci], 5, 7);
            check_nhwc(&cases[i], 1, chans[ci], 1, 1);
        }
    check_nhwc(&cases[0], 2, 64, 20, 20);
    check_nhwc(&cases[5], 1, 33, 40, 40);
    check_nhwc(&cases[11], 2, 100, 6, 5); /* cubic: channels in blocks of 64 */
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

    resize_dtypes();
    for (int lvl = 2; lvl >= 0; lvl--) { /* each vector level (bd_cpu_vec_cap): AVX-512, AVX2, plain */
        bd_cpu_vec_cap(lvl);
        resize_nhwc();
    }
    bd_cpu_vec_cap(2);
    return check_done();
}
