/* test_attention.c: ONNX Attention on the CPU against a double-precision
 * reference written here from the spec (scores q.k * scale, softcap, the sum
 * of the mask and the causal/window/padding rules as -inf, softmax, fully
 * masked rows as zeros, P V): masks with -inf rows (float and boolean),
 * causal with a past KV cache (offset = past length) and the present
 * outputs, grouped-query head mapping, 3-D inputs, nonpad_kv_seqlen with a
 * window and softcap, every qk_matmul_output mode, double inputs, empty
 * sequences, results independent of the thread count, and the error codes
 * and messages of bad head counts, masks and cache inputs. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

/* The reference: 4-D q (b, hq, sq, d), k (b, hkv, stot, d), v (b, hkv, stot, dv);
 * mask (b, hq, sq, stot) additive (NULL: none); causal offset off[b]; valid
 * keys len[b]; window left/right (-1: none). y (b, hq, sq, dv); qk modes 0-3
 * into qk[4] (each (b, hq, sq, stot)) when set. */
typedef struct ref_args {
    int b, hq, hkv, sq, stot, d, dv;
    const float *q, *k, *v, *mask;
    const int64_t *off, *len;
    int causal, left, right;
    double scale, softcap;
} ref_args;

static void ref_attention(const ref_args *a, double *y, double *qk[4])
{
    int g = a->hq / a->hkv;
    double *x = malloc(sizeof(double) * (a->stot + 1)), *bias = malloc(sizeof(double) * (a->stot + 1));
    for (int b = 0; b < a->b; b++)
        for (int h = 0; h < a->hq; h++)
            for (int i = 0; i < a->sq; i++) {
                int hk = h / g, all = 1;
                int64_t off = a->off ? a->off[b] : 0, len = a->len ? a->len[b] : a->stot;
                size_t ro = (((size_t)b * a->hq + h) * a->sq + i) * a->stot;
                for (int j = 0; j < a->stot; j++) {
                    double s = 0;
                    for (int c = 0; c < a->d; c++)
                        s += (double)a->q[(((size_t)b * a->hq + h) * a->sq + i) * a->d + c] *
                             a->k[(((size_t)b * a->hkv + hk) * a->stot + j) * a->d + c];
                    s *= a->scale;
                    if (qk && qk[0]) qk[0][ro + j] = s;
                    if (a->softcap > 0) s = a->softcap * tanh(s / a->softcap);
                    if (qk && qk[1]) qk[1][ro + j] = s;
                    double bb = a->mask ? a->mask[ro + j] : 0;
                    int64_t diff = i + off - j;
                    if (j >= len || (a->causal && diff < 0) || (a->left >= 0 && diff > a->left) ||
                        (a->right >= 0 && -diff > a->right))
                        bb = -INFINITY;
                    all &= bb == -INFINITY;
                    bias[j] = bb;
                    x[j] = s + bb;
                    if (qk && qk[2]) qk[2][ro + j] = x[j];
                }
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < a->stot; j++) mx = fmax(mx, x[j]);
                for (int j = 0; j < a->stot; j++) sum += (x[j] = all ? 0 : exp(x[j] - mx));
                for (int j = 0; j < a->stot; j++) x[j] = all ? 0 : x[j] / sum;
                if (qk && qk[3])
                    for (int j = 0; j < a->stot; j++) qk[3][ro + j] = x[j];
                for (int c = 0; c < a->dv; c++) {
                    double s = 0;
                    for (int j = 0; j < a->stot; j++) s += x[j] * a->v[(((size_t)b * a->hkv + hk) * a->stot + j) * a->dv + c];
                    y[(((size_t)b * a->hq + h) * a->sq + i) * a->dv + c] = s;
                }
            }
    free(x);
    free(bias);
}

/* max |got - want| over n floats. */
static double max_err(const float *got, const double *want, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = isnan(want[i]) ? (isnan(got[i]) ? 0 : INFINITY) : fabs(got[i] - want[i]);
        m = d > m ? d : m;
    }
    return m;
}

/* GQA (4 query heads over 2 kv heads) with a float mask that has a -inf row,
 * every qk mode, and the same bits at 1 and 4 threads. */
static void test_gqa_masks_modes(void)
{
    enum { B = 2, HQ = 4, HKV = 2, SQ = 3, SK = 5, D = 4, DV = 3 };
    unsigned seed = 7;
    float *q = randn(B * HQ * SQ * D, &seed), *k = randn(B * HKV * SK * D, &seed), *v = randn(B * HKV * SK * DV, &seed);
    /* mask (SQ, SK) broadcast: row 1 all -inf (fully masked), row 2 partly */
    float mask[SQ * SK] = {0, 0.5f, -1, 0, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                           -INFINITY, 0, 0, 2, 0};
    float full[B * HQ * SQ * SK];
    for (int i = 0; i < B * HQ; i++) memcpy(full + i * SQ * SK, mask, sizeof mask);
    double want[B * HQ * SQ * DV], *qk[4];
    for (int m = 0; m < 4; m++) qk[m] = malloc(sizeof(double) * B * HQ * SQ * SK);
    ref_args ra = {B, HQ, HKV, SQ, SK, D, DV, q, k, v, full, NULL, NULL, 0, -1, -1, 1.0 / sqrt(D), 0};
    ref_attention(&ra, want, qk);
    float *first = NULL;
    for (int mode = 0; mode < 4; mode++)
        for (int th = 1; th <= 4; th += 3) {
            g_threads = th;
            tnode t;
            tnode_init(&t, BD_OP_Attention, 23, 4, 4);
            attr_int(&t, "qk_matmul_output_mode", mode);
            int outs[4] = {5, 6, 7, 8}; /* tnode holds 3 outputs */
            t.n.out = outs;
            bd_tensor in[4] = {tensor(F32, 4, (int64_t[]){B, HQ, SQ, D}, q), tensor(F32, 4, (int64_t[]){B, HKV, SK, D}, k),
                               tensor(F32, 4, (int64_t[]){B, HKV, SK, DV}, v), tensor(F32, 2, (int64_t[]){SQ, SK}, mask)};
            bd_tensor out[4] = {0};
            bd_err e = {0};
            CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
            CHECK(max_err(out[0].data, want, B * HQ * SQ * DV) < 1e-5);
            CHECK(max_err(out[3].data, qk[mode], B * HQ * SQ * SK) < 1e-5);
            /* the fully masked row 1 of every head is exactly zero */
            int zero = 1;
            for (int bh = 0; bh < B * HQ; bh++)
                for (int c = 0; c < DV; c++) zero &= ((float *)out[0].data)[(bh * SQ + 1) * DV + c] == 0.0f;
            CHECK(zero);
            if (mode == 0 && th == 1) {
                first = malloc(sizeof(float) * B * HQ * SQ * DV);
                memcpy(first, out[0].data, sizeof(float) * B * HQ * SQ * DV);
            } else {
                CHECK(memcmp(first, out[0].data, sizeof(float) * B * HQ * SQ * DV) == 0);
            }
            done(&t.n, out);
        }
    g_threads = 1;
    free(first);
    for (int m = 0; m < 4; m++) free(qk[m]);
    free(q), free(k), free(v);
}

/* A boolean mask with an all-False row and is_causal: zeros, not NaN. */
static void test_bool_mask_causal(void)
{
    enum { SQ = 2, SK = 3, D = 2 };
    float q[SQ * D] = {1, 0, 0, 1}, k[SK * D] = {1, 1, 0, 2, -1, 0}, v[SK * D] = {1, 2, 3, 4, 5, 6};
    uint8_t mask[SQ * SK] = {0, 0, 1, 1, 1, 1}; /* row 0 keeps only key 2, which causal (j <= i) removes */
    tnode t;
    tnode_init(&t, BD_OP_Attention, 24, 4, 1);
    attr_int(&t, "is_causal", 1);
    bd_tensor in[4] = {tensor(F32, 4, (int64_t[]){1, 1, SQ, D}, q), tensor(F32, 4, (int64_t[]){1, 1, SK, D}, k),
                       tensor(F32, 4, (int64_t[]){1, 1, SK, D}, v), tensor(BRAID_DTYPE_BOOL, 2, (int64_t[]){SQ, SK}, mask)};
    bd_tensor out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    const float *y = out[0].data;
    CHECK(y[0] == 0.0f && y[1] == 0.0f);
    /* row 1 = (0, 1) attends keys 0 and 1 with scores (1, 2) / sqrt(2): weights by hand */
    double w0 = exp(1.0 / sqrt(2.0)), w1 = exp(2.0 / sqrt(2.0)), s = w0 + w1;
    CHECK_NEAR(y[2], (1 * w0 + 3 * w1) / s, 1e-6, 1e-6);
    CHECK_NEAR(y[3], (2 * w0 + 4 * w1) / s, 1e-6, 1e-6);
    done(&t.n, out);
}

/* 3-D inputs with a past cache and is_causal: the offset is the past length,
 * present_key/value are the concatenation in 4-D. */
static void test_causal_past_3d(void)
{
    enum { B = 2, H = 2, SQ = 2, SP = 3, SK = 2, ST = SP + SK, D = 3 };
    unsigned seed = 11;
    float *q3 = randn(B * SQ * H * D, &seed), *k3 = randn(B * SK * H * D, &seed), *v3 = randn(B * SK * H * D, &seed);
    float *pk = randn(B * H * SP * D, &seed), *pv = randn(B * H * SP * D, &seed);
    float q4[B * H * SQ * D], kt[B * H * ST * D], vt[B * H * ST * D];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            for (int i = 0; i < SQ; i++)
                for (int c = 0; c < D; c++) q4[((b * H + h) * SQ + i) * D + c] = q3[((b * SQ + i) * H + h) * D + c];
            for (int j = 0; j < ST; j++)
                for (int c = 0; c < D; c++) {
                    int o = ((b * H + h) * ST + j) * D + c;
                    kt[o] = j < SP ? pk[((b * H + h) * SP + j) * D + c] : k3[((b * SK + j - SP) * H + h) * D + c];
                    vt[o] = j < SP ? pv[((b * H + h) * SP + j) * D + c] : v3[((b * SK + j - SP) * H + h) * D + c];
                }
        }
    int64_t off[B] = {SP, SP};
    double want4[B * H * SQ * D];
    ref_args ra = {B, H, H, SQ, ST, D, D, q4, kt, vt, NULL, off, NULL, 1, -1, -1, 0.5, 0};
    ref_attention(&ra, want4, NULL);
    tnode t;
    tnode_init(&t, BD_OP_Attention, 23, 6, 3);
    attr_int(&t, "is_causal", 1);
    attr_int(&t, "q_num_heads", H);
    attr_int(&t, "kv_num_heads", H);
    attr_float(&t, "scale", 0.5f);
    int ins[6] = {0, 1, 2, -1, 4, 5}; /* tnode holds 5 inputs */
    t.n.in = ins;
    bd_tensor in[6] = {tensor(F32, 3, (int64_t[]){B, SQ, H * D}, q3), tensor(F32, 3, (int64_t[]){B, SK, H * D}, k3),
                       tensor(F32, 3, (int64_t[]){B, SK, H * D}, v3), {.dtype = 0, .rank = -1},
                       tensor(F32, 4, (int64_t[]){B, H, SP, D}, pk), tensor(F32, 4, (int64_t[]){B, H, SP, D}, pv)};
    bd_tensor out[3] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 3);
    CHECK_EQ_INT(out[0].dims[2], H * D);
    CHECK_EQ_INT(out[1].dims[2], ST);
    double worst = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < SQ; i++)
            for (int h = 0; h < H; h++)
                for (int c = 0; c < D; c++)
                    worst = fmax(worst, fabs(((float *)out[0].data)[((b * SQ + i) * H + h) * D + c] -
                                             want4[((b * H + h) * SQ + i) * D + c]));
    CHECK(worst < 1e-5);
    CHECK(memcmp(out[1].data, kt, sizeof kt) == 0 && memcmp(out[2].data, vt, sizeof vt) == 0);
    done(&t.n, out);
    free(q3), free(k3), free(v3), free(pk), free(pv);
}

/* nonpad_kv_seqlen (external cache: offset = len - sq), a left window,
 * softcap, in double; a batch whose length is below sq fully masks its first rows. */
static void test_nonpad_window_double(void)
{
    enum { B = 2, H = 1, SQ = 3, SK = 6, D = 2 };
    unsigned seed = 3;
    float *qf = randn(B * H * SQ * D, &seed), *kf = randn(B * H * SK * D, &seed), *vf = randn(B * H * SK * D, &seed);
    double q[B * H * SQ * D], k[B * H * SK * D], v[B * H * SK * D];
    for (int i = 0; i < B * H * SQ * D; i++) q[i] = qf[i];
    for (int i = 0; i < B * H * SK * D; i++) k[i] = kf[i], v[i] = vf[i];
    int64_t len[B] = {5, 1}, off[B] = {5 - SQ, 1 - SQ};
    double want[B * H * SQ * D];
    ref_args ra = {B, H, H, SQ, SK, D, D, qf, kf, vf, NULL, off, len, 1, 1, -1, 1.0 / sqrt(D), 1.5};
    ref_attention(&ra, want, NULL);
    tnode t;
    tnode_init(&t, BD_OP_Attention, 25, 7, 1);
    attr_int(&t, "is_causal", 1);
    attr_int(&t, "left_window_size", 1);
    attr_float(&t, "softcap", 1.5f);
    int ins[7] = {0, 1, 2, -1, -1, -1, 6}; /* tnode holds 5 inputs */
    t.n.in = ins;
    bd_tensor in[7] = {tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){B, H, SQ, D}, q),
                       tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){B, H, SK, D}, k),
                       tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){B, H, SK, D}, v),
                       {.rank = -1}, {.rank = -1}, {.rank = -1}, ints1(len, B)};
    bd_tensor out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_DOUBLE);
    double worst = 0;
    const double *y = out[0].data;
    for (int i = 0; i < B * H * SQ * D; i++) worst = fmax(worst, fabs(y[i] - want[i]));
    CHECK(worst < 1e-12); /* double throughout */
    /* batch 1: len 1, offset -2: rows 0 and 1 see no key -> zeros; row 2 sees key 0 only -> v[key 0] */
    CHECK(y[6] == 0 && y[7] == 0 && y[8] == 0 && y[9] == 0);
    CHECK_NEAR(y[10], v[SK * D], 1e-15, 0);
    done(&t.n, out);
    free(qf), free(kf), free(vf);
}

/* Empty query sequence and empty keys. */
static void test_empty(void)
{
    float dummy[8] = {0};
    for (int which = 0; which < 2; which++) {
        int64_t sq = which ? 2 : 0, sk = which ? 0 : 3;
        tnode t;
        tnode_init(&t, BD_OP_Attention, 23, 3, 1);
        bd_tensor in[3] = {tensor(F32, 4, (int64_t[]){1, 1, sq, 2}, dummy), tensor(F32, 4, (int64_t[]){1, 1, sk, 2}, dummy),
                           tensor(F32, 4, (int64_t[]){1, 1, sk, 2}, dummy)};
        bd_tensor out[1] = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[2], sq);
        if (which) CHECK(((float *)out[0].data)[0] == 0.0f && ((float *)out[0].data)[3] == 0.0f);
        done(&t.n, out);
    }
}

static void test_errors(void)
{
    float d[64] = {0};
    bd_err e = {0};
    bd_tensor out[4] = {0};
    tnode t;
    /* 9 query heads over 2 kv heads */
    tnode_init(&t, BD_OP_Attention, 23, 3, 1);
    bd_tensor in[6] = {tensor(F32, 4, (int64_t[]){1, 9, 2, 2}, d), tensor(F32, 4, (int64_t[]){1, 2, 2, 2}, d),
                       tensor(F32, 4, (int64_t[]){1, 2, 2, 2}, d)};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "query head count 9 must be a multiple of the key/value head count 2");
    done(&t.n, out);
    /* 3-D without head counts; hidden size not a multiple of the heads */
    tnode_init(&t, BD_OP_Attention, 23, 3, 1);
    in[0] = tensor(F32, 3, (int64_t[]){1, 2, 6}, d), in[1] = tensor(F32, 3, (int64_t[]){1, 2, 6}, d);
    in[2] = tensor(F32, 3, (int64_t[]){1, 2, 6}, d);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "q_num_heads and kv_num_heads");
    done(&t.n, out);
    tnode_init(&t, BD_OP_Attention, 23, 3, 1);
    attr_int(&t, "q_num_heads", 4);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "multiples of their head counts");
    done(&t.n, out);
    /* 4-D with head attributes at opset 25 */
    tnode_init(&t, BD_OP_Attention, 25, 3, 1);
    attr_int(&t, "q_num_heads", 1);
    in[0] = tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, d), in[1] = tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, d);
    in[2] = tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, d);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&t.n, out);
    /* a mask that does not broadcast (3 query rows against 2), one longer than the keys */
    tnode_init(&t, BD_OP_Attention, 23, 4, 1);
    in[3] = tensor(F32, 2, (int64_t[]){3, 2}, d);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "attn_mask 3x2 does not broadcast");
    done(&t.n, out);
    tnode_init(&t, BD_OP_Attention, 23, 4, 1);
    in[3] = tensor(F32, 2, (int64_t[]){2, 3}, d);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    done(&t.n, out);
    /* past_key without past_value; nonpad with past; a bad mode; an unsupported dtype */
    tnode_init(&t, BD_OP_Attention, 23, 5, 1);
    t.in[3] = -1;
    in[3] = (bd_tensor){.rank = -1};
    in[4] = tensor(F32, 4, (int64_t[]){1, 1, 2, 2}, d);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "past_key and past_value must be given together");
    done(&t.n, out);
    tnode_init(&t, BD_OP_Attention, 23, 3, 2);
    attr_int(&t, "qk_matmul_output_mode", 4);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "qk_matmul_output_mode must be 0 to 3");
    bd_free(t.n.params);
    t.n.params = NULL;
    tnode_init(&t, BD_OP_Attention, 23, 3, 1);
    int32_t di[8] = {0};
    in[0] = tensor(BRAID_DTYPE_INT32, 4, (int64_t[]){1, 1, 2, 2}, di);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    done(&t.n, out);
}

int main(void)
{
    test_gqa_masks_modes();
    test_bool_mask_causal();
    test_causal_past_3d();
    test_nonpad_window_double();
    test_empty();
    test_errors();
    return check_done();
}
