/* test_linattn.c: LinearAttention against the recurrence written out here
 * in double (every update rule, grouped query heads, per-key and per-head
 * decay, a past state of another dtype, the present state), and results the
 * same at 1 and 4 threads; CausalConvWithState by hand (a past state longer
 * than the input, so the present state reaches into it; bias; silu);
 * the errors of a decay the rule forbids, head counts that
 * do not divide, mismatched shapes. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "util/dtype.h"

/* The recurrence in double: q (B,T,HQ*DK), k (B,T,HKV*DK), v (B,T,HKV*DV),
 * decay per key (B,T,HKV*DK) or NULL, beta (B,T,HKV) or NULL, past state or
 * NULL; y (B,T,HQ*DV), state (B,HKV,DK,DV). */
static void ref_la(int B, int T, int HQ, int HKV, int DK, int DV, const float *q, const float *k, const float *v,
                   const float *decay, const float *beta, const float *past, double scale, double *y, double *state)
{
    int g = HQ / HKV;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++) {
            double *S = state + (b * HKV + h) * DK * DV, vt[16];
            for (int e = 0; e < DK * DV; e++) S[e] = past ? past[(b * HKV + h) * DK * DV + e] : 0;
            for (int t = 0; t < T; t++) {
                int bt = b * T + t;
                const float *kt = k + (bt * HKV + h) * DK;
                if (decay)
                    for (int d = 0; d < DK; d++)
                        for (int m = 0; m < DV; m++) S[d * DV + m] *= exp(decay[(bt * HKV + h) * DK + d]);
                for (int m = 0; m < DV; m++) {
                    vt[m] = v[(bt * HKV + h) * DV + m];
                    if (beta) {
                        double r = 0;
                        for (int d = 0; d < DK; d++) r += S[d * DV + m] * kt[d];
                        vt[m] = beta[bt * HKV + h] * (vt[m] - r);
                    }
                }
                for (int d = 0; d < DK; d++)
                    for (int m = 0; m < DV; m++) S[d * DV + m] += kt[d] * vt[m];
                for (int r = 0; r < g; r++)
                    for (int m = 0; m < DV; m++) {
                        double a = 0;
                        for (int d = 0; d < DK; d++) a += q[(bt * HQ + h * g + r) * DK + d] * S[d * DV + m];
                        y[(bt * HQ + h * g + r) * DV + m] = scale * a;
                    }
            }
        }
}

static void test_linear_attention(void)
{
    enum { B = 2, T = 3, HQ = 4, HKV = 2, DK = 3, DV = 2 };
    static const char *const rules[4] = {"linear", "gated", "delta", "gated_delta"};
    unsigned seed = 21;
    float *q = randn(B * T * HQ * DK, &seed), *k = randn(B * T * HKV * DK, &seed), *v = randn(B * T * HKV * DV, &seed);
    float *decay = randn(B * T * HKV * DK, &seed), *beta = randn(B * T * HKV, &seed), *past = randn(B * HKV * DK * DV, &seed);
    uint16_t pasth[B * HKV * DK * DV]; /* the past state in bfloat16: its own dtype */
    for (int i = 0; i < B * HKV * DK * DV; i++) pasth[i] = bd_float_to_bf16(past[i]), past[i] = bd_bf16_to_float(pasth[i]);
    double y[B * T * HQ * DV], st[B * HKV * DK * DV];
    for (int rule = 0; rule < 4; rule++) {
        int gated = rule == 1 || rule == 3, delta = rule >= 2;
        ref_la(B, T, HQ, HKV, DK, DV, q, k, v, gated ? decay : NULL, delta ? beta : NULL, past, 0.5, y, st);
        float *first = NULL;
        for (int th = 1; th <= 4; th += 3) {
            g_threads = th;
            tnode t;
            tnode_init(&t, BD_OP_LinearAttention, 27, 6, 2);
            attr_str(&t, "update_rule", rules[rule]);
            attr_int(&t, "q_num_heads", HQ);
            attr_int(&t, "kv_num_heads", HKV);
            attr_float(&t, "scale", 0.5f);
            int ins[6] = {0, 1, 2, 3, gated ? 4 : -1, delta ? 5 : -1};
            t.n.in = ins;
            bd_tensor none = {.rank = -1};
            bd_tensor in[6] = {tensor(F32, 3, (int64_t[]){B, T, HQ * DK}, q), tensor(F32, 3, (int64_t[]){B, T, HKV * DK}, k),
                               tensor(F32, 3, (int64_t[]){B, T, HKV * DV}, v),
                               tensor(BRAID_DTYPE_BFLOAT16, 4, (int64_t[]){B, HKV, DK, DV}, pasth),
                               gated ? tensor(F32, 3, (int64_t[]){B, T, HKV * DK}, decay) : none,
                               delta ? tensor(F32, 3, (int64_t[]){B, T, HKV}, beta) : none};
            bd_tensor out[2] = {0};
            bd_err e = {0};
            CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
            CHECK_EQ_INT(out[1].dtype, BRAID_DTYPE_BFLOAT16);
            double worst = 0, worst_s = 0;
            for (int i = 0; i < B * T * HQ * DV; i++) worst = fmax(worst, fabs(((float *)out[0].data)[i] - y[i]) / (1 + fabs(y[i])));
            for (int i = 0; i < B * HKV * DK * DV; i++)
                worst_s = fmax(worst_s, fabs(bd_bf16_to_float(((uint16_t *)out[1].data)[i]) - st[i]) / (1 + fabs(st[i])));
            CHECK(worst < 1e-5);   /* float32 state against double */
            CHECK(worst_s < 8e-3); /* rounded to bfloat16 (2^-8) */
            if (th == 1) {
                first = malloc(sizeof(float) * B * T * HQ * DV);
                memcpy(first, out[0].data, sizeof(float) * B * T * HQ * DV);
            } else {
                CHECK(memcmp(first, out[0].data, sizeof(float) * B * T * HQ * DV) == 0);
            }
            done(&t.n, out);
        }
        free(first);
    }
    g_threads = 1;
    /* the linear rule given a decay; 3 query heads over 2 */
    tnode t;
    tnode_init(&t, BD_OP_LinearAttention, 27, 5, 2);
    attr_str(&t, "update_rule", "linear");
    attr_int(&t, "q_num_heads", HQ);
    attr_int(&t, "kv_num_heads", HKV);
    t.in[3] = -1;
    bd_tensor in[5] = {tensor(F32, 3, (int64_t[]){B, T, HQ * DK}, q), tensor(F32, 3, (int64_t[]){B, T, HKV * DK}, k),
                       tensor(F32, 3, (int64_t[]){B, T, HKV * DV}, v), {.rank = -1},
                       tensor(F32, 3, (int64_t[]){B, T, HKV * DK}, decay)};
    bd_tensor out[2] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "update rule linear forbids decay");
    done(&t.n, out);
    tnode_init(&t, BD_OP_LinearAttention, 27, 3, 2);
    attr_int(&t, "q_num_heads", 3);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "q_num_heads (3) must be a positive multiple of kv_num_heads (2)");
    bd_free(t.n.params);
    free(q), free(k), free(v), free(decay), free(beta), free(past);
}

static void test_causal_conv(void)
{
    /* one row, k = 4, input of 2 and past (k - 1 = 3) [1, 2, 3]: padded [1, 2, 3, 10, 20];
     * w = [1, 0, -1, 2], bias 0.5: y0 = 1 - 3 + 20 + 0.5 = 18.5, y1 = 2 - 10 + 40 + 0.5 = 32.5;
     * present = the last 3 of padded: [3, 10, 20] */
    float x[2] = {10, 20}, w[4] = {1, 0, -1, 2}, bias[1] = {0.5f}, past[3] = {1, 2, 3};
    tnode t;
    tnode_init(&t, BD_OP_CausalConvWithState, 27, 4, 2);
    bd_tensor in[4] = {tensor(F32, 3, (int64_t[]){1, 1, 2}, x), tensor(F32, 3, (int64_t[]){1, 1, 4}, w),
                       tensor(F32, 1, (int64_t[]){1}, bias), tensor(F32, 3, (int64_t[]){1, 1, 3}, past)};
    bd_tensor out[2] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    const float *y = out[0].data, *ps = out[1].data;
    CHECK(y[0] == 18.5f && y[1] == 32.5f);
    CHECK(ps[0] == 3 && ps[1] == 10 && ps[2] == 20);
    done(&t.n, out);
    /* silu without bias and past: zeros before the input; y0 = 2 * 10 = 20 -> 20 sigmoid(20) */
    tnode_init(&t, BD_OP_CausalConvWithState, 27, 2, 2);
    attr_str(&t, "activation", "silu");
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    y = out[0].data;
    CHECK_NEAR(y[0], 20.0 / (1.0 + exp(-20.0)), 1e-5, 1e-6);
    CHECK_NEAR(y[1], 30.0 / (1.0 + exp(-30.0)), 1e-5, 1e-6); /* -10 + 2 * 20 */
    ps = out[1].data;
    CHECK(ps[0] == 0 && ps[1] == 10 && ps[2] == 20);
    done(&t.n, out);
    /* a weight that is not (channels, 1, k); an unknown activation */
    tnode_init(&t, BD_OP_CausalConvWithState, 27, 2, 2);
    in[1] = tensor(F32, 3, (int64_t[]){1, 2, 2}, w);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    done(&t.n, out);
    tnode_init(&t, BD_OP_CausalConvWithState, 27, 2, 2);
    attr_str(&t, "activation", "gelu");
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    bd_free(t.n.params);
}

int main(void)
{
    test_linear_attention();
    test_causal_conv();
    return check_done();
}
