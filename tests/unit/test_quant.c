/* test_quant.c: the quantization families (quant, qgemm, qlinear) on the
 * edge cases the node tests miss: rounding ties (half to even), saturation
 * at both ends of every integer dtype, NaN, float8 with and without
 * saturate, per-axis and blocked scales with negative axes, zero points,
 * empty tensors, DynamicQuantizeLinear's range rules, exact int32
 * accumulation over long K (and its wrap-around), convolution padding with
 * the zero point, requantization ties, results independent of the thread
 * count, and every error a bad model gives (status and message). Expected
 * values are worked out by hand in the comments or by an independent loop
 * in double; integer outputs must be equal. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "ops/quant.h"

#include <stdlib.h>

#define U8 BRAID_DTYPE_UINT8
#define S8 BRAID_DTYPE_INT8
#define I32 BRAID_DTYPE_INT32

/* A node with up to 20 inputs held here (inputs 0.., outputs 20..). */
typedef struct qnode {
    bd_node n;
    int in[20], out[3];
    bd_attr attrs[8];
    int64_t ints[8][8];
} qnode;

static void qnode_init(qnode *q, int op, int opset, int n_in, int n_out)
{
    memset(q, 0, sizeof *q);
    q->n = op_node(op, opset, n_in, n_out, q->attrs, 0);
    q->n.domain = bd_op_table[op].domain == BD_DOM_MS ? "com.microsoft" : "";
    q->n.in = q->in;
    q->n.out = q->out;
    for (int i = 0; i < 20; i++) q->in[i] = i;
    for (int i = 0; i < 3; i++) q->out[i] = 20 + i;
}
static void q_int(qnode *q, const char *name, int64_t v) { q->attrs[q->n.n_attrs++] = attr_i(name, v); }
static void q_ints(qnode *q, const char *name, int n, const int64_t *v)
{
    memcpy(q->ints[q->n.n_attrs], v, (size_t)n * sizeof *v);
    q->attrs[q->n.n_attrs] = attr_is(name, q->ints[q->n.n_attrs], n);
    q->n.n_attrs++;
}

static bd_tensor scalar(int dt, void *p) { return (bd_tensor){.dtype = dt, .rank = 0, .data = p}; }
static bd_tensor vec(int dt, int64_t n, void *p) { return (bd_tensor){.dtype = dt, .rank = 1, .dims = {n}, .data = p}; }
static const bd_tensor NONE = {.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1};

/* The node's inputs in slots for every input the op defines, those past
 * n_in omitted (as the executors hand them over). */
static void slots(const bd_node *n, const bd_tensor *in, bd_tensor *all)
{
    for (int i = 0; i < 20; i++) all[i] = i < n->n_in ? in[i] : NONE;
}

/* run() of optest.h, with the slots filled. */
static braid_status qrun(bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_tensor all[20];
    slots(n, in, all);
    return run(n, all, out, e);
}

/* Runs with the inputs' data hidden from shape inference (as values computed
 * at run time), so that the kernel's own checks answer. */
static braid_status run_rt(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_tensor hidden[20], all[20];
    braid_status st = bd_op_parse(n, e);
    if (st) return st;
    slots(n, in, all);
    for (int i = 0; i < 20; i++) hidden[i] = all[i], hidden[i].data = NULL;
    if ((st = bd_op_infer(n, hidden, out, e))) return st;
    for (int i = 0; i < n->n_out; i++) {
        size_t nb;
        bd_tensor_nbytes(&out[i], &nb, e);
        out[i].data = malloc(nb + 1);
    }
    bd_kernel k = {.node = n, .in = all, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = 1, .err = e};
    return bd_cpu_run(&k);
}

/* ---- QuantizeLinear ------------------------------------------------------------------------------ */

static void test_quantize_ties_and_saturation(void)
{
    bd_err e = {0};
    qnode q;
    /* x / 1: the ties go to the even neighbour; +-1000 saturate; NaN gives the low end */
    float x[] = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f, -1000.0f, 1000.0f, NAN};
    float one = 1.0f;
    struct { int dt; int64_t want[10]; } cases[] = {
        {S8, {-2, -2, 0, 0, 2, 2, 4, -128, 127, -128}},
        {U8, {0, 0, 0, 0, 2, 2, 4, 0, 255, 0}},
        {BRAID_DTYPE_INT16, {-2, -2, 0, 0, 2, 2, 4, -1000, 1000, -32768}},
        {BRAID_DTYPE_UINT16, {0, 0, 0, 0, 2, 2, 4, 0, 1000, 0}},
        {BRAID_DTYPE_INT4, {-2, -2, 0, 0, 2, 2, 4, -8, 7, -8}},
        {BRAID_DTYPE_UINT4, {0, 0, 0, 0, 2, 2, 4, 0, 15, 0}},
        {BRAID_DTYPE_INT2, {-2, -2, 0, 0, 1, 1, 1, -2, 1, -2}},
        {BRAID_DTYPE_UINT2, {0, 0, 0, 0, 2, 2, 3, 0, 3, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        uint64_t zp = 0;
        bd_tensor in[3] = {vec(F32, 10, x), scalar(F32, &one), scalar(cases[c].dt, &zp)}, out = {0};
        qnode_init(&q, BD_OP_QuantizeLinear, 25, 3, 1);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dtype, cases[c].dt);
        for (int i = 0; i < 10; i++) CHECK_EQ_INT(bd_get_f64(&out, i), cases[c].want[i]);
        done(&q.n, &out);
    }
    /* a zero point moves the ties: x / 2 + 10 with x = 1, 3, 5, -1 -> 0.5, 1.5, 2.5, -0.5 -> 10, 12, 12, 10 */
    float x2[] = {1, 3, 5, -1}, two = 2.0f;
    uint8_t z10 = 10;
    bd_tensor in[3] = {vec(F32, 4, x2), scalar(F32, &two), scalar(U8, &z10)}, out = {0};
    qnode_init(&q, BD_OP_QuantizeLinear, 13, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    const uint8_t w2[] = {10, 12, 12, 10};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], w2[i]);
    done(&q.n, &out);
    /* no zero point: uint8 (opset 10) */
    qnode_init(&q, BD_OP_QuantizeLinear, 10, 2, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, U8);
    CHECK_EQ_INT(((uint8_t *)out.data)[2], 2); /* 2.5 -> 2 */
    done(&q.n, &out);
}

static void test_quantize_float8(void)
{
    bd_err e = {0};
    qnode q;
    float x[] = {1000.0f, -1000.0f, 1.0f, -0.0f}, one = 1.0f;
    uint8_t zp = 0;
    /* e4m3fn: largest 448 = 0x7e; saturate=0 turns overflow into NaN (0x7f / 0xff); 1 = 0x38; -0 = 0x80 */
    for (int sat = 0; sat <= 1; sat++) {
        bd_tensor in[3] = {vec(F32, 4, x), scalar(F32, &one), scalar(BRAID_DTYPE_FLOAT8E4M3FN, &zp)}, out = {0};
        qnode_init(&q, BD_OP_QuantizeLinear, 21, 3, 1);
        q_int(&q, "saturate", sat);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        const uint8_t *y = out.data;
        CHECK_EQ_INT(y[0], sat ? 0x7e : 0x7f);
        CHECK_EQ_INT(y[1], sat ? 0xfe : 0xff);
        CHECK_EQ_INT(y[2], 0x38);
        CHECK_EQ_INT(y[3], 0x80);
        done(&q.n, &out);
    }
    /* e5m2 without saturation: +-inf (0x7c, 0xfc); with: the largest, 57344 (0x7b) */
    float xl[] = {1e6f, -1e6f};
    for (int sat = 0; sat <= 1; sat++) {
        bd_tensor in[3] = {vec(F32, 2, xl), scalar(F32, &one), scalar(BRAID_DTYPE_FLOAT8E5M2, &zp)}, out = {0};
        qnode_init(&q, BD_OP_QuantizeLinear, 21, 3, 1);
        q_int(&q, "saturate", sat);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(((uint8_t *)out.data)[0], sat ? 0x7b : 0x7c);
        CHECK_EQ_INT(((uint8_t *)out.data)[1], sat ? 0xfb : 0xfc);
        done(&q.n, &out);
    }
}

static void test_quantize_axis_blocked(void)
{
    bd_err e = {0};
    qnode q;
    /* x (2, 3) per axis 1 (and -1): scales 1, 2, 4; zero points 0, 1, 2 */
    float x[] = {3, 3, 3, -8, 10, 18};
    float s[] = {1, 2, 4};
    int8_t z[] = {0, 1, 2};
    /* 3/1+0=3; 3/2=1.5->2,+1=3; 3/4=0.75->1,+2=3; -8; 10/2=5,+1=6; 18/4=4.5->4,+2=6 */
    const int8_t want[] = {3, 3, 3, -8, 6, 6};
    for (int axis = -1; axis <= 1; axis += 2) {
        bd_tensor in[3] = {tensor(F32, 2, (int64_t[]){2, 3}, x), vec(F32, 3, s), vec(S8, 3, z)}, out = {0};
        qnode_init(&q, BD_OP_QuantizeLinear, 13, 3, 1);
        q_int(&q, "axis", axis);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], want[i]);
        done(&q.n, &out);
    }
    /* blocked: x (2, 5), axis 1, block 2 -> scale (2, 3); the last block is one column */
    float xb[] = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
    float sb[] = {1, 2, 4, 1, 2, 4};
    /* row 0: 1, 2 | 3/2=1.5->2, 4/2=2 | 5/4=1.25->1; row 1: -1, -2 | -1.5->-2, -2 | -1.25->-1 */
    const int8_t wantb[] = {1, 2, 2, 2, 1, -1, -2, -2, -2, -1};
    for (int axis = -1; axis <= 1; axis += 2) {
        int8_t zb[6] = {0};
        bd_tensor in[3] = {tensor(F32, 2, (int64_t[]){2, 5}, xb), tensor(F32, 2, (int64_t[]){2, 3}, sb),
                           tensor(S8, 2, (int64_t[]){2, 3}, zb)}, out = {0};
        qnode_init(&q, BD_OP_QuantizeLinear, 21, 3, 1);
        q_int(&q, "axis", axis);
        q_int(&q, "block_size", 2);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        for (int i = 0; i < 10; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], wantb[i]);
        done(&q.n, &out);
    }
    /* DequantizeLinear per axis 0 of int8 (3, 2), output_dtype float16: (x - z) * s */
    int8_t xd[] = {10, -10, 0, 127, -128, 5};
    float sd[] = {0.5f, 0.25f, 2.0f};
    int8_t zd[] = {0, 1, -128};
    bd_tensor in[3] = {tensor(S8, 2, (int64_t[]){3, 2}, xd), vec(F32, 3, sd), vec(S8, 3, zd)}, out = {0};
    qnode_init(&q, BD_OP_DequantizeLinear, 23, 3, 1);
    q_int(&q, "axis", 0);
    q_int(&q, "output_dtype", BRAID_DTYPE_FLOAT16);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.dtype, BRAID_DTYPE_FLOAT16);
    const double wantd[] = {5, -5, -0.25, 31.5, 0, 266};
    for (int i = 0; i < 6; i++) CHECK_NEAR(bd_get_f64(&out, i), wantd[i], 0, 0);
    done(&q.n, &out);
}

static void test_quant_empty_and_errors(void)
{
    bd_err e = {0};
    qnode q;
    float one = 1.0f, zero = 0.0f, s3[] = {1, 1, 1}, s2[] = {1, 1};
    uint8_t z = 0, z3[] = {0, 0, 0};
    /* empty x */
    bd_tensor in[3] = {tensor(F32, 2, (int64_t[]){0, 3}, NULL), scalar(F32, &one), scalar(U8, &z)}, out = {0};
    qnode_init(&q, BD_OP_QuantizeLinear, 19, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(out.rank, 2);
    CHECK_EQ_INT(out.dims[0], 0);
    done(&q.n, &out);
    /* a zero scale known at plan time */
    float x[3] = {1, 2, 3};
    bd_tensor iz[3] = {vec(F32, 3, x), scalar(F32, &zero), scalar(U8, &z)};
    qnode_init(&q, BD_OP_QuantizeLinear, 19, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, iz, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "y_scale");
    CHECK_CONTAINS(e.msg, "nonzero");
    done(&q.n, &out);
    /* ... and only at run time: the kernel answers */
    qnode_init(&q, BD_OP_DequantizeLinear, 19, 3, 1);
    uint8_t xq[3] = {1, 2, 3};
    bd_tensor idq[3] = {vec(U8, 3, xq), scalar(F32, &zero), scalar(U8, &z)};
    CHECK_EQ_INT(run_rt(&q.n, idq, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "x_scale");
    done(&q.n, &out);
    /* zero point shaped unlike its scale */
    float x23[6] = {0};
    bd_tensor im[3] = {tensor(F32, 2, (int64_t[]){2, 3}, x23), vec(F32, 3, s3), vec(U8, 2, z3)};
    qnode_init(&q, BD_OP_QuantizeLinear, 13, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, im, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "y_zero_point");
    done(&q.n, &out);
    /* an axis out of range, and a per-axis scale of the wrong length */
    bd_tensor ia[3] = {tensor(F32, 2, (int64_t[]){2, 3}, x23), vec(F32, 3, s3), vec(U8, 3, z3)};
    qnode_init(&q, BD_OP_QuantizeLinear, 13, 3, 1);
    q_int(&q, "axis", 2);
    CHECK_EQ_INT(qrun(&q.n, ia, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis");
    done(&q.n, &out);
    bd_tensor il[2] = {tensor(F32, 2, (int64_t[]){2, 3}, x23), vec(F32, 2, s2)};
    qnode_init(&q, BD_OP_QuantizeLinear, 13, 2, 1);
    CHECK_EQ_INT(qrun(&q.n, il, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "y_scale");
    done(&q.n, &out);
    /* blocked with a scale that does not fit ceil(3 / 2) = 2 along the axis */
    bd_tensor ib[2] = {tensor(F32, 2, (int64_t[]){2, 3}, x23), tensor(F32, 2, (int64_t[]){2, 3}, x23)};
    qnode_init(&q, BD_OP_QuantizeLinear, 21, 2, 1);
    q_int(&q, "block_size", 2);
    CHECK_EQ_INT(qrun(&q.n, ib, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "block_size 2");
    done(&q.n, &out);
    /* output_dtype that disagrees with the zero point */
    qnode_init(&q, BD_OP_QuantizeLinear, 21, 3, 1);
    q_int(&q, "output_dtype", S8);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "output_dtype");
    done(&q.n, &out);
    /* DequantizeLinear: zero point of another dtype */
    int8_t zs = 0;
    bd_tensor idz[3] = {vec(U8, 3, xq), scalar(F32, &one), scalar(S8, &zs)};
    qnode_init(&q, BD_OP_DequantizeLinear, 19, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, idz, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "x_zero_point");
    done(&q.n, &out);
}

static void test_dynamic_quantize(void)
{
    bd_err e = {0};
    qnode q;
    /* min -3, max 2: scale 5/255, zero point 3 / (5/255) = 153; 2 -> 102 + 153 = 255, -3 -> 0, -1 -> 102 */
    float x[] = {0, 2, -3, -1};
    bd_tensor in[1] = {vec(F32, 4, x)}, out[3] = {{0}};
    qnode_init(&q, BD_OP_DynamicQuantizeLinear, 11, 1, 3);
    CHECK_EQ_INT(qrun(&q.n, in, out, &e), BRAID_OK);
    CHECK_NEAR(*(float *)out[1].data, 5.0 / 255.0, 1e-9, 1e-6);
    CHECK_EQ_INT(*(uint8_t *)out[2].data, 153);
    const uint8_t want[] = {153, 255, 0, 102};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out[0].data)[i], want[i]);
    done(&q.n, out);
    /* all positive: the range still holds 0 (zero point 0); all zero or empty: scale 1 */
    float xp[] = {1, 2, 4};
    bd_tensor inp[1] = {vec(F32, 3, xp)};
    qnode_init(&q, BD_OP_DynamicQuantizeLinear, 11, 1, 3);
    CHECK_EQ_INT(qrun(&q.n, inp, out, &e), BRAID_OK);
    CHECK_EQ_INT(*(uint8_t *)out[2].data, 0);
    CHECK_EQ_INT(((uint8_t *)out[0].data)[2], 255);
    done(&q.n, out);
    bd_tensor ine[1] = {tensor(F32, 2, (int64_t[]){0, 4}, NULL)};
    qnode_init(&q, BD_OP_DynamicQuantizeLinear, 11, 1, 3);
    CHECK_EQ_INT(qrun(&q.n, ine, out, &e), BRAID_OK);
    CHECK_EQ_INT(*(float *)out[1].data, 1);
    CHECK_EQ_INT(*(uint8_t *)out[2].data, 0);
    done(&q.n, out);
}

/* ---- integer products ------------------------------------------------------------------------------ */

/* MatMulInteger over a long K at the extremes: exact, and wrapping like int32
 * past 2^31; 2 rows take the byte path, 12 the float GEMM in K chunks. */
static void test_matmul_integer_exact(void)
{
    bd_err e = {0};
    qnode q;
    const int64_t ks[2] = {5000, 70000};
    for (int c = 0; c < 4; c++) {
        int64_t k = ks[c % 2], m = c < 2 ? 2 : 12;
        uint8_t *a = malloc((size_t)(m * k));
        int8_t *b = malloc((size_t)(k * 3));
        for (int64_t i = 0; i < m * k; i++) a[i] = 255;
        for (int64_t i = 0; i < k * 3; i++) b[i] = i % 3 == 0 ? -128 : i % 3 == 1 ? 127 : (int8_t)(i & 1 ? 1 : -1);
        bd_tensor in[2] = {tensor(U8, 2, (int64_t[]){m, k}, a), tensor(S8, 2, (int64_t[]){k, 3}, b)}, out = {0};
        for (int t = 1; t <= 3; t += 2) {
            g_threads = t;
            qnode_init(&q, BD_OP_MatMulInteger, 10, 2, 1);
            CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
            int64_t want[3] = {0, 0, 0};
            for (int64_t l = 0; l < k; l++)
                for (int j = 0; j < 3; j++) want[j] += 255 * (int64_t)b[l * 3 + j];
            for (int j = 0; j < 3; j++) {
                int32_t w = (int32_t)(uint32_t)(uint64_t)want[j]; /* int32 wrap-around */
                CHECK_EQ_INT(((int32_t *)out.data)[j], w);
                CHECK_EQ_INT(((int32_t *)out.data)[(m - 1) * 3 + j], w);
            }
            done(&q.n, &out);
        }
        g_threads = 1;
        free(a), free(b);
    }
    /* per-row a zero point (1-D, M values) and per-column b zero point; hand-checked:
     * A - za = [[0, 1], [1, 1]], B - zb = [[1, 0], [0, 2]] -> [[0, 2], [1, 2]] */
    uint8_t a[] = {1, 2, 3, 3}, za[] = {1, 2}, bm[] = {1, 5, 0, 7}, zb[] = {0, 5};
    bd_tensor in[4] = {tensor(U8, 2, (int64_t[]){2, 2}, a), tensor(U8, 2, (int64_t[]){2, 2}, bm), vec(U8, 2, za),
                       vec(U8, 2, zb)}, out = {0};
    qnode_init(&q, BD_OP_MatMulInteger, 10, 4, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    const int32_t want[] = {0, 2, 1, 2};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((int32_t *)out.data)[i], want[i]);
    done(&q.n, &out);
    /* errors: a zero point of the other signedness; a b zero point of the wrong length */
    int8_t zs = 0;
    bd_tensor bad[4] = {in[0], in[1], scalar(S8, &zs), NONE};
    qnode_init(&q, BD_OP_MatMulInteger, 10, 3, 1);
    CHECK_EQ_INT(qrun(&q.n, bad, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "a_zero_point");
    done(&q.n, &out);
    uint8_t zb3[3] = {0};
    bd_tensor bad2[4] = {in[0], in[1], NONE, vec(U8, 3, zb3)};
    qnode_init(&q, BD_OP_MatMulInteger, 10, 4, 1);
    CHECK_EQ_INT(qrun(&q.n, bad2, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "b_zero_point");
    done(&q.n, &out);
}

/* ConvInteger against a loop in double, for the GEMM path, the depthwise path
 * and a 1-D convolution: pads read as the zero point, per-channel w zero points. */
static void test_conv_integer(void)
{
    bd_err e = {0};
    qnode q;
    unsigned seed = 7;
    struct { int64_t c, m, group, h, w, k, s, d, pad; } cases[] = {
        {4, 6, 2, 5, 6, 3, 2, 1, 1},  /* grouped, strided, padded */
        {3, 6, 3, 6, 5, 3, 1, 2, 2},  /* depthwise with multiplier 2, dilated */
        {2, 3, 1, 1, 9, 1, 1, 1, 0},  /* 1x1 (one spatial row) */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int64_t C = cases[c].c, M = cases[c].m, G = cases[c].group, H = cases[c].h, W = cases[c].w, K = cases[c].k;
        int64_t S = cases[c].s, D = cases[c].d, P = cases[c].pad, cg = C / G, mg = M / G;
        int64_t kh = H == 1 ? 1 : K;
        int64_t oh = (H + 2 * (H == 1 ? 0 : P) - (kh - 1) * D - 1) / S + 1, ow = (W + 2 * P - (K - 1) * D - 1) / S + 1;
        uint8_t *x = malloc((size_t)(2 * C * H * W)), xz = 100;
        int8_t *w = malloc((size_t)(M * cg * kh * K)), wz[8];
        for (int64_t i = 0; i < 2 * C * H * W; i++) seed = seed * 1103515245u + 12345u, x[i] = (uint8_t)(seed >> 16);
        for (int64_t i = 0; i < M * cg * kh * K; i++) seed = seed * 1103515245u + 12345u, w[i] = (int8_t)(seed >> 16);
        for (int64_t i = 0; i < M; i++) wz[i] = (int8_t)(i * 7 - 20);
        int64_t pads[4] = {H == 1 ? 0 : P, P, H == 1 ? 0 : P, P}, str[2] = {S, S}, dil[2] = {D, D};
        bd_tensor in[4] = {tensor(U8, 4, (int64_t[]){2, C, H, W}, x), tensor(S8, 4, (int64_t[]){M, cg, kh, K}, w),
                           scalar(U8, &xz), vec(S8, M, wz)}, out = {0};
        qnode_init(&q, BD_OP_ConvInteger, 10, 4, 1);
        q_int(&q, "group", G);
        q_ints(&q, "pads", 4, pads);
        q_ints(&q, "strides", 2, str);
        q_ints(&q, "dilations", 2, dil);
        CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dims[2], oh);
        CHECK_EQ_INT(out.dims[3], ow);
        int bad = 0;
        for (int64_t n = 0; n < 2; n++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t i = 0; i < oh; i++)
                    for (int64_t j = 0; j < ow; j++) {
                        double acc = 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t a = 0; a < kh; a++)
                                for (int64_t b = 0; b < K; b++) {
                                    int64_t y = i * S - pads[0] + a * D, xx = j * S - pads[1] + b * D;
                                    double xv = y < 0 || y >= H || xx < 0 || xx >= W
                                                    ? 0 : (double)x[((n * C + (m / mg) * cg + ci) * H + y) * W + xx] - xz;
                                    acc += xv * ((double)w[((m * cg + ci) * kh + a) * K + b] - wz[m]);
                                }
                        bad += ((int32_t *)out.data)[((n * M + m) * oh + i) * ow + j] != (int32_t)acc;
                    }
        CHECK_EQ_INT(bad, 0);
        done(&q.n, &out);
        free(x), free(w);
    }
}

/* QLinearConv's requantization: 1x1 weights of 1, scales 1, 1 and 2, so
 * y = rint(x / 2) + zp: the ties 1.5, 2.5, -1.5, -2.5 go to 2, 2, -2, -2;
 * the bias adds before the scale; the output saturates. */
static void test_qlinear_conv_requant(void)
{
    bd_err e = {0};
    qnode q;
    int8_t x[] = {3, 5, -3, -5, 120, -120}, xz = 0, w = 1, wz = 0, yz = 1;
    float xs = 1, ws = 1, ys = 2;
    int32_t bias = 0;
    bd_tensor in[9] = {tensor(S8, 4, (int64_t[]){1, 1, 1, 6}, x), scalar(F32, &xs), scalar(S8, &xz),
                       tensor(S8, 4, (int64_t[]){1, 1, 1, 1}, &w), scalar(F32, &ws), scalar(S8, &wz), scalar(F32, &ys),
                       scalar(S8, &yz), vec(I32, 1, &bias)}, out = {0};
    const int8_t want[] = {3, 3, -1, -1, 61, -59};
    qnode_init(&q, BD_OP_QLinearConv, 10, 9, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(((int8_t *)out.data)[i], want[i]);
    done(&q.n, &out);
    /* bias 300: (3 + 300) / 2 = 151.5 -> 152, + 1 saturates at 127 */
    bias = 300;
    qnode_init(&q, BD_OP_QLinearConv, 10, 9, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((int8_t *)out.data)[0], 127);
    CHECK_EQ_INT(((int8_t *)out.data)[5], 91); /* (-120 + 300) / 2 = 90, + 1 */
    done(&q.n, &out);
    /* a bias of the wrong length names it */
    int32_t b2[2] = {0, 0};
    in[8] = vec(I32, 2, b2);
    qnode_init(&q, BD_OP_QLinearConv, 10, 9, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "bias 'B'");
    done(&q.n, &out);
}

/* ---- qlinear ------------------------------------------------------------------------------------------ */

static void test_qlinear_ops(void)
{
    bd_err e = {0};
    qnode q;
    /* QLinearAdd broadcast: (a - 10) * 0.5 + (b - 0) * 0.25 over C's scale 0.5, zero point 5:
     * a = 12, 14 and b = 2 -> (1 + 0.5) / 0.5 = 3 + 5 = 8; (2 + 0.5) / 0.5 = 5 + 5 = 10 */
    uint8_t a[] = {12, 14}, b = 2, az = 10, bz = 0, cz = 5;
    float as = 0.5f, bs = 0.25f, cs = 0.5f;
    bd_tensor in[8] = {vec(U8, 2, a), scalar(F32, &as), scalar(U8, &az), scalar(U8, &b), scalar(F32, &bs),
                       scalar(U8, &bz), scalar(F32, &cs), scalar(U8, &cz)}, out = {0};
    qnode_init(&q, BD_OP_MS_QLinearAdd, 1, 8, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 8);
    CHECK_EQ_INT(((uint8_t *)out.data)[1], 10);
    done(&q.n, &out);
    /* QLinearMul: (2 * 2) * 0.5 * 0.25 / 0.5 = 1 -> 6; (4 * 2) * 0.25 = 2 -> 7 */
    qnode_init(&q, BD_OP_MS_QLinearMul, 1, 8, 1);
    CHECK_EQ_INT(qrun(&q.n, in, &out, &e), BRAID_OK);
    CHECK_EQ_INT(((uint8_t *)out.data)[0], 6);
    CHECK_EQ_INT(((uint8_t *)out.data)[1], 7);
    done(&q.n, &out);
    /* a zero output scale computed at run time */
    float zero = 0;
    in[6] = scalar(F32, &zero);
    qnode_init(&q, BD_OP_MS_QLinearAdd, 1, 8, 1);
    CHECK_EQ_INT(run_rt(&q.n, in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "C_scale");
    done(&q.n, &out);
    /* QLinearGlobalAveragePool, NCHW and channels_last: x (1, 2, 2, 2) NCHW holds channel 0 = 1, 2, 3, 4
     * and channel 1 = 10, 10, 10, 11: means 2.5 and 10.25 (scale 1, zp 0) over y scale 0.5 -> 5, 20.5 -> 20 */
    uint8_t x[] = {1, 2, 3, 4, 10, 10, 10, 11}, xn[] = {1, 10, 2, 10, 3, 10, 4, 11}, z0 = 0;
    float one = 1, half = 0.5f;
    for (int cl = 0; cl <= 1; cl++) {
        bd_tensor ip[5] = {tensor(U8, 4, (int64_t[]){1, 2, 2, 2}, cl ? xn : x), scalar(F32, &one), scalar(U8, &z0),
                           scalar(F32, &half), scalar(U8, &z0)};
        qnode_init(&q, BD_OP_MS_QLinearGlobalAveragePool, 1, 5, 1);
        q_int(&q, "channels_last", cl);
        CHECK_EQ_INT(qrun(&q.n, ip, &out, &e), BRAID_OK);
        CHECK_EQ_INT(out.dims[cl ? 3 : 1], 2);
        CHECK_EQ_INT(out.dims[cl ? 1 : 2], 1);
        CHECK_EQ_INT(((uint8_t *)out.data)[0], 5);
        CHECK_EQ_INT(((uint8_t *)out.data)[1], 20);
        done(&q.n, &out);
    }
    /* QLinearConcat of two inputs, the second requantized (scale 2 -> 1: codes doubled) on axis -1 */
    uint8_t c1[] = {1, 2}, c2[] = {3, 4};
    float two = 2;
    bd_tensor ic[8] = {scalar(F32, &one), scalar(U8, &z0), tensor(U8, 2, (int64_t[]){2, 1}, c1), scalar(F32, &one),
                       scalar(U8, &z0), tensor(U8, 2, (int64_t[]){2, 1}, c2), scalar(F32, &two), scalar(U8, &z0)};
    qnode_init(&q, BD_OP_MS_QLinearConcat, 1, 8, 1);
    q_int(&q, "axis", -1);
    CHECK_EQ_INT(qrun(&q.n, ic, &out, &e), BRAID_OK);
    const uint8_t wc[] = {1, 6, 2, 8};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(((uint8_t *)out.data)[i], wc[i]);
    done(&q.n, &out);
    /* QEmbedLayerNormalization: an input id past the word table is an error naming it; the
     * tokens (2 rows of 3 + 2 = 5, hidden 2) otherwise normalize to +-1 times gamma (1) plus beta (0):
     * word (0, 2) + position (0, 0) -> mean 1, var 1 -> (-1, 1) with eps 0 */
    int32_t ids[2] = {0, 3};
    uint8_t word[6] = {0, 2, 1, 5, 9, 9}, pos[4] = {0, 0, 0, 0}, gam[2] = {1, 1}, bet[2] = {0, 0};
    bd_tensor ie[18];
    for (int i = 0; i < 18; i++) ie[i] = NONE;
    ie[0] = tensor(I32, 2, (int64_t[]){1, 2}, ids);
    ie[2] = tensor(U8, 2, (int64_t[]){3, 2}, word);
    ie[3] = tensor(U8, 2, (int64_t[]){2, 2}, pos);
    ie[5] = vec(U8, 2, gam), ie[6] = vec(U8, 2, bet);
    for (int i = 8; i <= 12; i++) ie[i] = scalar(F32, &one);
    for (int i = 13; i <= 17; i++) ie[i] = scalar(U8, &z0);
    ie[10] = ie[15] = NONE;
    qnode_init(&q, BD_OP_MS_QEmbedLayerNormalization, 1, 18, 1);
    CHECK_EQ_INT(run_rt(&q.n, ie, &out, &e), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(e.msg, "input id 3 at token 1");
    done(&q.n, &out);
    ids[1] = 2; /* word row 2: (9, 9) -> both 0 after the mean, var 0: 0 / sqrt(eps) = 0 */
    qnode_init(&q, BD_OP_MS_QEmbedLayerNormalization, 1, 18, 1);
    CHECK_EQ_INT(qrun(&q.n, ie, &out, &e), BRAID_OK);
    const float we[4] = {-1, 1, 0, 0};
    for (int i = 0; i < 4; i++) CHECK_NEAR(((float *)out.data)[i], we[i], 1e-6, 0);
    done(&q.n, &out);
    /* QLinearConcat with a missing zero point in a triple is refused */
    qnode_init(&q, BD_OP_MS_QLinearConcat, 1, 7, 1);
    q_int(&q, "axis", 0);
    CHECK_EQ_INT(qrun(&q.n, ic, &out, &e), BRAID_ERR_INVALID_MODEL);
    done(&q.n, &out);
}

int main(void)
{
    test_quantize_ties_and_saturation();
    test_quantize_float8();
    test_quantize_axis_blocked();
    test_quant_empty_and_errors();
    test_dynamic_quantize();
    test_matmul_integer_exact();
    test_conv_integer();
    test_qlinear_conv_requant();
    test_qlinear_ops();
    return check_done();
}
