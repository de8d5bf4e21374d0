/* test_pool.c: the pool family on hand-computed numbers: MaxPool 2x2 stride 2
 * (values and Indices, both storage orders), AveragePool with
 * count_include_pad 0 and 1 on a padded 3x3 input, ceil_mode output sizes
 * (including the rule that the last window starts inside the input or the
 * left pad), global pools, and the errors for bad dtypes and attributes;
 * LpPool (p 1, 2, 3 and a float p, pads, dilations, ceil_mode), GlobalLpPool,
 * MaxUnpool (with and without output_shape, repeated and bad indices), and
 * the dtypes beyond float32: MaxPool on int8/uint8 with Indices, double,
 * float16 and bfloat16 pools; float32 MaxPool against a brute-force
 * reference over many window shapes. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "util/dtype.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define MAX_ATTRS 8

typedef struct test_node {
    bd_node n;
    bd_attr attrs[MAX_ATTRS];
    int in[3], out[2];
} test_node;

static void node_init(test_node *t, int op, int n_out)
{
    memset(t, 0, sizeof *t);
    t->n.name = "pool_under_test";
    t->n.op_type = (char *)bd_op_table[op].name;
    t->n.domain = "";
    t->n.op = op;
    t->n.opset = 19;
    t->n.n_in = 1;
    t->n.n_out = n_out;
    t->n.in = t->in;
    t->n.out = t->out;
    t->n.attrs = t->attrs;
}

static void attr_ints(test_node *t, const char *name, int n, const int64_t *v)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = BD_ATTR_INTS;
    a->n = n;
    a->ints = (int64_t *)v;
}

static void attr_int(test_node *t, const char *name, int64_t v)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = BD_ATTR_INT;
    a->i = v;
}

static void attr_str(test_node *t, const char *name, const char *s)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = BD_ATTR_STRING;
    a->s = (char *)s;
}

static bd_tensor tensor4(int64_t n, int64_t c, int64_t h, int64_t w, float *data)
{
    bd_tensor t = {BRAID_DTYPE_FLOAT, 4, {n, c, h, w}, data};
    return t;
}

/* Intra-op threads of run(). */
static int g_threads = 1;

/* Parses, infers and runs the node on x; out[] gets allocated data. */
static braid_status run(test_node *t, bd_tensor *x, bd_tensor *out, bd_err *e)
{
    braid_status st = bd_op_parse(&t->n, e);
    if (st != BRAID_OK) return st;
    st = bd_op_infer(&t->n, x, out, e);
    if (st != BRAID_OK) return st;
    for (int i = 0; i < t->n.n_out; i++) {
        out[i].data = calloc((size_t)bd_numel(&out[i]), bd_dtype_size(out[i].dtype));
    }
    bd_kernel k = {&t->n, x, t->n.n_in, out, t->n.n_out, g_threads, e};
    return bd_cpu_run(&k);
}

static void done(test_node *t, bd_tensor *out)
{
    for (int i = 0; i < t->n.n_out; i++) free(out[i].data), out[i].data = NULL;
    bd_free(t->n.params);
    t->n.params = NULL;
}

static void attr_float(test_node *t, const char *name, float v)
{
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = BD_ATTR_FLOAT;
    a->f = v;
}

/* MaxPool on float32 without Indices (the reduced-rows path, planes on the
 * threads) against a brute-force max over each window's taps inside the
 * input, on random data with 2 x 3 planes: 1-D, 2-D and 3-D windows, the
 * SPP windows of YOLO necks (5, 9, 13 on 13x13, stride 1, "same" pads),
 * strides, dilations, asymmetric pads and ceil_mode, the unit-stride
 * pools whose output rows are as wide as the input's (the whole-plane
 * path: odd widths, asymmetric and row-only pads), on 1 and 2 threads.
 * Tolerance 0: a max is one of its inputs. */
static void maxpool_vs_reference(void)
{
    static const struct {
        int nsp;
        int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
        int ceil;
    } cfg[] = {
        {2, {13, 13}, {13, 13}, {1, 1}, {1, 1}, {6, 6}, {6, 6}, 0},
        {2, {13, 13}, {9, 9}, {1, 1}, {1, 1}, {4, 4}, {4, 4}, 0},
        {2, {13, 13}, {5, 5}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, 0},
        {2, {7, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
        {2, {8, 8}, {3, 3}, {1, 1}, {2, 2}, {2, 2}, {2, 2}, 0},
        {2, {6, 10}, {2, 3}, {2, 3}, {1, 1}, {0, 1}, {1, 0}, 1},
        {2, {6, 6}, {2, 2}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0},
        {1, {20}, {4}, {3}, {1}, {1}, {2}, 0},
        {3, {5, 6, 7}, {3, 2, 3}, {2, 1, 2}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, 0},
        /* unit strides, output rows as wide as the input's: the whole-plane path */
        {2, {7, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
        {2, {9, 9}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 0},
        {2, {6, 12}, {3, 5}, {1, 1}, {1, 1}, {1, 2}, {1, 2}, 0},
        {2, {5, 17}, {5, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, 0},
        {1, {20}, {5}, {1}, {1}, {2}, {2}, 0},
        {3, {1, 8, 8}, {1, 3, 3}, {1, 1, 1}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}, 0},
    };
    uint64_t r = 12345;
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
        int nsp = cfg[c].nsp;
        int64_t pads[6];
        for (int i = 0; i < nsp; i++) pads[i] = cfg[c].pb[i], pads[nsp + i] = cfg[c].pe[i];
        bd_tensor x = {BRAID_DTYPE_FLOAT, 2 + nsp, {2, 3}, NULL};
        int64_t isz = 1;
        for (int i = 0; i < nsp; i++) x.dims[2 + i] = cfg[c].in[i], isz *= cfg[c].in[i];
        float *xd = malloc((size_t)(6 * isz) * sizeof *xd);
        for (int64_t i = 0; i < 6 * isz; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            xd[i] = (float)((int64_t)(r >> 40) % 2001 - 1000) / 97.0f;
        }
        x.data = xd;
        for (int th = 1; th <= 2; th++) {
            test_node t;
            bd_err e = {0};
            bd_tensor out[2];
            memset(out, 0, sizeof out);
            node_init(&t, BD_OP_MaxPool, 1);
            attr_ints(&t, "kernel_shape", nsp, cfg[c].k);
            attr_ints(&t, "strides", nsp, cfg[c].s);
            attr_ints(&t, "dilations", nsp, cfg[c].d);
            attr_ints(&t, "pads", 2 * nsp, pads);
            attr_int(&t, "ceil_mode", cfg[c].ceil);
            g_threads = th;
            CHECK_EQ_INT(run(&t, &x, out, &e), BRAID_OK);
            g_threads = 1;
            int64_t O[3] = {1, 1, 1}, L[3] = {1, 1, 1}, K[3] = {1, 1, 1}, S[3] = {1, 1, 1}, D[3] = {1, 1, 1},
                    P[3] = {0, 0, 0}, osz = 1;
            for (int i = 0; i < nsp; i++) {
                int j = 3 - nsp + i;
                O[j] = out[0].dims[2 + i], L[j] = cfg[c].in[i], K[j] = cfg[c].k[i], S[j] = cfg[c].s[i];
                D[j] = cfg[c].d[i], P[j] = cfg[c].pb[i];
                osz *= O[j];
            }
            int bad = 0;
            for (int64_t pl = 0; pl < 6; pl++)
                for (int64_t o0 = 0; o0 < O[0]; o0++)
                    for (int64_t o1 = 0; o1 < O[1]; o1++)
                        for (int64_t o2 = 0; o2 < O[2]; o2++) {
                            float m = -FLT_MAX;
                            for (int64_t a = 0; a < K[0]; a++)
                                for (int64_t b = 0; b < K[1]; b++)
                                    for (int64_t q = 0; q < K[2]; q++) {
                                        int64_t i0 = o0 * S[0] - P[0] + a * D[0], i1 = o1 * S[1] - P[1] + b * D[1],
                                                i2 = o2 * S[2] - P[2] + q * D[2];
                                        if (i0 < 0 || i0 >= L[0] || i1 < 0 || i1 >= L[1] || i2 < 0 || i2 >= L[2])
                                            continue;
                                        float v = xd[pl * isz + (i0 * L[1] + i1) * L[2] + i2];
                                        m = v > m ? v : m;
                                    }
                            float got = ((float *)out[0].data)[pl * osz + (o0 * O[1] + o1) * O[2] + o2];
                            bad += got != m;
                        }
            if (bad) fprintf(stderr, "MaxPool config %zu on %d threads: %d outputs differ\n", c, th, bad);
            CHECK_EQ_INT(bad, 0);
            done(&t, out);
        }
        free(xd);
    }
}

/* LpPool, GlobalLpPool, MaxUnpool and the dtypes beyond float32. */
static void more_pools(void)
{
    bd_err e = {0};
    test_node t;
    bd_tensor out[2];
    static const int64_t k22[] = {2, 2}, s22[] = {2, 2}, s11[] = {1, 1}, d22[] = {2, 2}, p0101[] = {0, 0, 1, 1};

    /* LpPool 2x2 stride 1 on x = (1, -2, 3; -4, 5, -6; 7, -8, 9): window sums of
     * |x|^p: p 1: 12, 16, 24, 28; p 2: sqrt(46), sqrt(74), sqrt(154), sqrt(206);
     * p 3: cbrt(1 + 8 + 64 + 125) = cbrt(198), ...; float p 1.5 (opset 1). */
    float x9[9] = {1, -2, 3, -4, 5, -6, 7, -8, 9};
    const double want_p[4][4] = {{12, 16, 24, 28},
                                 {sqrt(46.0), sqrt(74.0), sqrt(154.0), sqrt(206.0)},
                                 {cbrt(198.0), cbrt(8 + 27 + 125 + 216.0), cbrt(64 + 125 + 343 + 512.0),
                                  cbrt(125 + 216 + 512 + 729.0)},
                                 {0, 0, 0, 0}};
    for (int q = 0; q < 4; q++) {
        node_init(&t, BD_OP_LpPool, 1);
        t.n.opset = q == 3 ? 1 : 18;
        attr_ints(&t, "kernel_shape", 2, k22);
        attr_ints(&t, "strides", 2, s11);
        if (q == 3) attr_float(&t, "p", 1.5f);
        else attr_int(&t, "p", q + 1);
        bd_tensor x = tensor4(1, 1, 3, 3, x9);
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, &x, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[2], 2);
        for (int i = 0; i < 4; i++) {
            double want = want_p[q][i];
            if (q == 3) { /* the window (r, c) .. (r + 1, c + 1) */
                int r = i / 2, c = i % 2;
                want = 0;
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++) want += pow(fabs(x9[(r + a) * 3 + c + b]), 1.5);
                want = pow(want, 1 / 1.5);
            }
            CHECK_NEAR(((float *)out[0].data)[i], want, 1e-5, 1e-6);
        }
        done(&t, out);
    }
    /* pads (zeros add nothing), dilations and ceil_mode: 3x3 input, kernel 2x2
     * dilated 2 (extent 3), stride 2, pads end 1: windows at 0 and 2, the
     * second only partly inside: (1, 3, 7, 9) -> sqrt(140); (3, 9) -> sqrt(90);
     * (7, 9) -> sqrt(130); (9) -> 9. */
    node_init(&t, BD_OP_LpPool, 1);
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    attr_ints(&t, "dilations", 2, d22);
    attr_ints(&t, "pads", 4, p0101);
    attr_int(&t, "ceil_mode", 1);
    bd_tensor x3 = tensor4(1, 1, 3, 3, x9);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &x3, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 2);
    CHECK_EQ_INT(out[0].dims[3], 2);
    const double want_d[4] = {sqrt(140.0), sqrt(90.0), sqrt(130.0), 9};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], want_d[i], 1e-5, 1e-6);
    done(&t, out);
    node_init(&t, BD_OP_LpPool, 1);
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_int(&t, "p", 0);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'p' is 0");
    done(&t, out);

    /* GlobalLpPool (p 2, double) over 2 channels of 2x2. */
    double xd8[8] = {3, 4, 0, 0, 1, -1, 1, -1};
    node_init(&t, BD_OP_GlobalLpPool, 1);
    bd_tensor xg = {BRAID_DTYPE_DOUBLE, 4, {1, 2, 2, 2}, xd8};
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xg, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_DOUBLE);
    CHECK_NEAR(((double *)out[0].data)[0], 5, 1e-15, 0);
    CHECK_NEAR(((double *)out[0].data)[1], 2, 1e-15, 0);
    done(&t, out);

    /* MaxPool on int8 with Indices: -128 and the window maxima, ties to the first. */
    int8_t xi8[16] = {-128, -5, 3, 3, -7, -9, 3, 2, 100, 127, -1, -1, 0, 126, -1, -2};
    node_init(&t, BD_OP_MaxPool, 2);
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    bd_tensor xi = tensor4(1, 1, 4, 4, NULL);
    xi.dtype = BRAID_DTYPE_INT8;
    xi.data = xi8;
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xi, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_INT8);
    const int8_t want_i8[4] = {-5, 3, 127, -1};
    const int64_t want_ix[4] = {1, 2, 9, 10};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(((int8_t *)out[0].data)[i], want_i8[i]);
        CHECK_EQ_INT(((int64_t *)out[1].data)[i], want_ix[i]);
    }
    done(&t, out);
    /* storage_order 1: the same maxima at column-major indices (row + 4 col) */
    node_init(&t, BD_OP_MaxPool, 2);
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    attr_int(&t, "storage_order", 1);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xi, out, &e), BRAID_OK);
    const int64_t want_cm[4] = {4, 8, 6, 10};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int64_t *)out[1].data)[i], want_cm[i]);
    done(&t, out);
    uint8_t xu8[4] = {200, 255, 0, 17};
    node_init(&t, BD_OP_MaxPool, 1);
    attr_ints(&t, "kernel_shape", 2, k22);
    bd_tensor xu = {BRAID_DTYPE_UINT8, 4, {1, 1, 2, 2}, xu8};
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xu, out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out[0].data)[0], 255);
    done(&t, out);

    /* double AveragePool with count_include_pad and ceil_mode (the 1-D case of
     * the float test above: 1, 3, 2) and float16/bfloat16 (rounded once). */
    double xd4[4] = {1, 2, 3, 4};
    static const int64_t k3[] = {3}, s2[] = {2}, p11[] = {1, 1};
    node_init(&t, BD_OP_AveragePool, 1);
    attr_ints(&t, "kernel_shape", 1, k3);
    attr_ints(&t, "strides", 1, s2);
    attr_ints(&t, "pads", 2, p11);
    attr_int(&t, "ceil_mode", 1);
    attr_int(&t, "count_include_pad", 1);
    bd_tensor x1 = {BRAID_DTYPE_DOUBLE, 3, {1, 1, 4}, xd4};
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &x1, out, &e), BRAID_OK);
    const double want_a[3] = {1, 3, 2};
    for (int i = 0; i < 3; i++) CHECK_NEAR(((double *)out[0].data)[i], want_a[i], 1e-15, 0);
    done(&t, out);
    for (int bf = 0; bf < 2; bf++) {
        uint16_t h[4];
        /* float16: (1 + 2 + 4 + 2050) / 4 = 514.25, a tie between float16's 514 and 514.5: 514 */
        const float hv[4] = {1, 2, 4, 2050};
        for (int i = 0; i < 4; i++) h[i] = bf ? bd_float_to_bf16(hv[i]) : bd_float_to_half(hv[i]);
        node_init(&t, BD_OP_GlobalAveragePool, 1);
        bd_tensor xh = {bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16, 4, {1, 1, 2, 2}, h};
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, &xh, out, &e), BRAID_OK);
        float got = bf ? bd_bf16_to_float(((uint16_t *)out[0].data)[0]) : bd_half_to_float(((uint16_t *)out[0].data)[0]);
        /* bfloat16 holds 2050 as 2048: (1 + 2 + 4 + 2048) / 4 = 513.75 -> 512 */
        CHECK_NEAR(got, bf ? 512.0f : 514.0f, 0, 0);
        done(&t, out);
    }

    /* MaxUnpool: 2x2 values at indices of a 4x4 image; with output_shape
     * (1, 1, 5, 5) they keep their 4x4 positions in its corner (onnx's
     * reference); a repeated index keeps the later value. */
    float xv[4] = {5, 6, 7, 8};
    int64_t ind[4] = {5, 7, 13, 15}, dup[4] = {5, 5, 13, 0}, bad[4] = {5, 7, 16, 0}, oshape[4] = {1, 1, 5, 5};
    bd_tensor uin[3] = {tensor4(1, 1, 2, 2, xv), {BRAID_DTYPE_INT64, 4, {1, 1, 2, 2}, ind},
                        {BRAID_DTYPE_INT64, 1, {4}, oshape}};
    for (int with = 0; with < 2; with++) {
        node_init(&t, BD_OP_MaxUnpool, 1);
        t.n.n_in = with ? 3 : 2;
        attr_ints(&t, "kernel_shape", 2, k22);
        attr_ints(&t, "strides", 2, s22);
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, uin, out, &e), BRAID_OK);
        int64_t W = with ? 5 : 4;
        CHECK_EQ_INT(out[0].dims[2], W);
        CHECK_EQ_INT(out[0].dims[3], W);
        for (int64_t i = 0; i < W * W; i++) {
            int64_t r = i / W, c = i % W;
            float want = r == 1 && c == 1 ? 5 : r == 1 && c == 3 ? 6 : r == 3 && c == 1 ? 7 : r == 3 && c == 3 ? 8 : 0;
            CHECK_NEAR(((float *)out[0].data)[i], want, 0, 0);
        }
        done(&t, out);
    }
    uin[1].data = dup;
    node_init(&t, BD_OP_MaxUnpool, 1);
    t.n.n_in = 2;
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, uin, out, &e), BRAID_OK);
    CHECK_NEAR(((float *)out[0].data)[5], 6, 0, 0);
    CHECK_NEAR(((float *)out[0].data)[0], 8, 0, 0);
    CHECK_NEAR(((float *)out[0].data)[13], 7, 0, 0);
    done(&t, out);
    uin[1].data = bad;
    node_init(&t, BD_OP_MaxUnpool, 1);
    t.n.n_in = 2;
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, uin, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "index 2 of I is 16");
    done(&t, out);
    int64_t small[4] = {1, 1, 3, 5};
    uin[1].data = ind;
    uin[2].data = small;
    node_init(&t, BD_OP_MaxUnpool, 1);
    t.n.n_in = 3;
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_ints(&t, "strides", 2, s22);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, uin, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "output_shape[2] = 3 is smaller than the unpooled size 4");
    done(&t, out);
}

int main(void)
{
    maxpool_vs_reference();
    bd_err e = {0};
    test_node t;
    bd_tensor out[2];

    /* MaxPool 2x2 stride 2 on 1..16 (4x4): the max of each quadrant. */
    float x16[16];
    for (int i = 0; i < 16; i++) x16[i] = (float)(i + 1);
    static const int64_t k22[] = {2, 2}, s22[] = {2, 2};
    for (int order = 0; order < 2; order++) {
        node_init(&t, BD_OP_MaxPool, 2);
        attr_ints(&t, "kernel_shape", 2, k22);
        attr_ints(&t, "strides", 2, s22);
        attr_int(&t, "storage_order", order);
        bd_tensor x = tensor4(1, 1, 4, 4, x16);
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, &x, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].rank, 4);
        CHECK_EQ_INT(out[0].dims[2], 2);
        CHECK_EQ_INT(out[0].dims[3], 2);
        CHECK_EQ_INT(out[1].dtype, BRAID_DTYPE_INT64);
        const float want[4] = {6, 8, 14, 16};
        /* The max of quadrant (qy, qx) sits at row 2qy+1, col 2qx+1. */
        const int64_t row_major[4] = {5, 7, 13, 15}, col_major[4] = {5, 13, 7, 15};
        for (int i = 0; i < 4; i++) {
            CHECK_NEAR(((float *)out[0].data)[i], want[i], 0, 0);
            CHECK_EQ_INT(((int64_t *)out[1].data)[i], order ? col_major[i] : row_major[i]);
        }
        done(&t, out);
    }

    /* AveragePool 3x3, pads 1, on 1..9 (3x3). The corner window holds 1, 2, 4
     * and 5 (sum 12): 12/4 = 3 without the pad cells, 12/9 with them. */
    float x9[9];
    for (int i = 0; i < 9; i++) x9[i] = (float)(i + 1);
    static const int64_t k33[] = {3, 3}, p1111[] = {1, 1, 1, 1};
    const float want_cip0[9] = {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7};
    const float want_cip1[9] = {12 / 9.f, 21 / 9.f, 16 / 9.f, 27 / 9.f, 5,
                                33 / 9.f, 24 / 9.f, 39 / 9.f, 28 / 9.f};
    for (int cip = 0; cip < 2; cip++) {
        node_init(&t, BD_OP_AveragePool, 1);
        attr_ints(&t, "kernel_shape", 2, k33);
        attr_ints(&t, "pads", 4, p1111);
        attr_int(&t, "count_include_pad", cip);
        bd_tensor x = tensor4(1, 1, 3, 3, x9);
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, &x, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[2], 3);
        CHECK_EQ_INT(out[0].dims[3], 3);
        for (int i = 0; i < 9; i++)
            CHECK_NEAR(((float *)out[0].data)[i], cip ? want_cip1[i] : want_cip0[i], 1e-6, 1e-6);
        done(&t, out);
    }

    /* ceil_mode, 1-D [1 2 3 4], kernel 3, stride 2, pads 1: floor gives 2
     * windows, ceil 3. The third starts at 3 and covers 3, 4 (right pad) and
     * 5 (added by ceil_mode): count_include_pad divides by 2, not 3. */
    float x4[4] = {1, 2, 3, 4};
    static const int64_t k3[] = {3}, s2[] = {2}, p11[] = {1, 1};
    for (int ceil = 0; ceil < 2; ceil++) {
        node_init(&t, BD_OP_AveragePool, 1);
        attr_ints(&t, "kernel_shape", 1, k3);
        attr_ints(&t, "strides", 1, s2);
        attr_ints(&t, "pads", 2, p11);
        attr_int(&t, "ceil_mode", ceil);
        attr_int(&t, "count_include_pad", 1);
        bd_tensor x = {BRAID_DTYPE_FLOAT, 3, {1, 1, 4}, x4};
        memset(out, 0, sizeof out);
        CHECK_EQ_INT(run(&t, &x, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[2], ceil ? 3 : 2);
        const float want[3] = {1, 3, 2};
        for (int i = 0; i < (ceil ? 3 : 2); i++)
            CHECK_NEAR(((float *)out[0].data)[i], want[i], 1e-6, 1e-6);
        done(&t, out);
    }

    /* ceil_mode may not start a window in the right pad: 2x2 input, kernel 1,
     * stride 2 gives ceil(1/2)+1 = 2, but window 2 would start at 2 (outside),
     * so the output is 1x1 (onnx test maxpool_2d_ceil_output_size_reduce_by_one). */
    static const int64_t k11[] = {1, 1};
    node_init(&t, BD_OP_MaxPool, 1);
    attr_ints(&t, "kernel_shape", 2, k11);
    attr_ints(&t, "strides", 2, s22);
    attr_int(&t, "ceil_mode", 1);
    bd_tensor x22 = tensor4(1, 1, 2, 2, x16);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &x22, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 1);
    CHECK_EQ_INT(out[0].dims[3], 1);
    CHECK_NEAR(((float *)out[0].data)[0], 1, 0, 0);
    done(&t, out);

    /* SAME_UPPER on 4x4, kernel 3, stride 2: 2x2 output, pads (0, 1). */
    node_init(&t, BD_OP_MaxPool, 1);
    attr_ints(&t, "kernel_shape", 2, k33);
    attr_ints(&t, "strides", 2, s22);
    attr_str(&t, "auto_pad", "SAME_UPPER");
    bd_tensor x44 = tensor4(1, 1, 4, 4, x16);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &x44, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 2);
    const float want_same[4] = {11, 12, 15, 16};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out[0].data)[i], want_same[i], 0, 0);
    done(&t, out);

    /* Global pools over 2 channels of 2x2. */
    float x8[8] = {1, 2, 3, 4, -5, -6, -7, -8};
    node_init(&t, BD_OP_GlobalAveragePool, 1);
    bd_tensor xg = tensor4(1, 2, 2, 2, x8);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xg, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[2], 1);
    CHECK_NEAR(((float *)out[0].data)[0], 2.5, 1e-6, 0);
    CHECK_NEAR(((float *)out[0].data)[1], -6.5, 1e-6, 0);
    done(&t, out);
    node_init(&t, BD_OP_GlobalMaxPool, 1);
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(run(&t, &xg, out, &e), BRAID_OK);
    CHECK_NEAR(((float *)out[0].data)[0], 4, 0, 0);
    CHECK_NEAR(((float *)out[0].data)[1], -5, 0, 0);
    done(&t, out);

    /* Errors: int32 data, a missing kernel_shape, a window bigger than the input. */
    node_init(&t, BD_OP_MaxPool, 1);
    attr_ints(&t, "kernel_shape", 2, k22);
    bd_tensor xi = tensor4(1, 1, 4, 4, x16);
    xi.dtype = BRAID_DTYPE_INT32;
    memset(out, 0, sizeof out);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    CHECK_EQ_INT(bd_op_infer(&t.n, &xi, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "int32");
    done(&t, out);
    static const int64_t k44[] = {4, 4};
    node_init(&t, BD_OP_MaxPool, 1);
    attr_ints(&t, "kernel_shape", 2, k44);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_OK);
    bd_tensor x1 = tensor4(1, 1, 1, 1, x16);
    CHECK_EQ_INT(bd_op_infer(&t.n, &x1, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "larger than the padded input");
    done(&t, out);
    node_init(&t, BD_OP_AveragePool, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'kernel_shape' is required");
    attr_ints(&t, "kernel_shape", 2, k22);
    attr_str(&t, "auto_pad", "SAME");
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "auto_pad");
    done(&t, out);

    more_pools();
    return check_done();
}
