/* test_msattn.c: the com.microsoft attentions and EmbedLayerNormalization
 * beyond tests/python/test_contrib_attention.py (which checks their numbers
 * against onnxruntime): a batch whose key padding mask keeps no key gets
 * onnxruntime's finite-filter result (every score shifted by the filter:
 * the unmasked softmax), float16 inputs give the float result rounded once,
 * and the error codes and messages of what braid refuses or rejects
 * (GroupQueryAttention's included). */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include <stdlib.h>

#include "util/dtype.h"

static void ms(tnode *t, int op, int n_in, int n_out)
{
    tnode_init(t, op, 1, n_in, n_out);
    t->n.domain = "com.microsoft";
}

static void test_mha_numbers(void)
{
    enum { B = 2, S = 2, L = 3, N = 2, H = 2 };
    unsigned seed = 3;
    float *q = randn(B * S * N * H, &seed), *k = randn(B * L * N * H, &seed), *v = randn(B * L * N * H, &seed);
    int32_t lens[B] = {3, 0}; /* batch 1 keeps no key: all scores get the filter, the softmax is unchanged */
    tnode t;
    ms(&t, BD_OP_MS_MultiHeadAttention, 5, 1);
    attr_int(&t, "num_heads", N);
    attr_float(&t, "mask_filter_value", -50.0f);
    t.in[3] = -1;
    bd_tensor in[5] = {tensor(F32, 3, (int64_t[]){B, S, N * H}, q), tensor(F32, 3, (int64_t[]){B, L, N * H}, k),
                       tensor(F32, 3, (int64_t[]){B, L, N * H}, v), {.rank = -1},
                       tensor(BRAID_DTYPE_INT32, 1, (int64_t[]){B}, lens)};
    bd_tensor out[1] = {0}, plain[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    tnode u;
    ms(&u, BD_OP_MS_MultiHeadAttention, 3, 1);
    attr_int(&u, "num_heads", N);
    CHECK_EQ_INT(run(&u.n, in, plain, &e), BRAID_OK);
    double worst = 0;
    for (int i = 0; i < B * S * N * H; i++) worst = fmax(worst, fabs(((float *)out[0].data)[i] - ((float *)plain[0].data)[i]));
    CHECK(worst < 1e-5);
    done(&t.n, out);
    done(&u.n, plain);
    /* float16: the float computation on the decoded inputs, rounded once */
    uint16_t qh[B * S * N * H], kh[B * L * N * H], vh[B * L * N * H];
    for (int i = 0; i < B * S * N * H; i++) qh[i] = bd_float_to_half(q[i]), q[i] = bd_half_to_float(qh[i]);
    for (int i = 0; i < B * L * N * H; i++) {
        kh[i] = bd_float_to_half(k[i]), k[i] = bd_half_to_float(kh[i]);
        vh[i] = bd_float_to_half(v[i]), v[i] = bd_half_to_float(vh[i]);
    }
    ms(&u, BD_OP_MS_MultiHeadAttention, 3, 1);
    attr_int(&u, "num_heads", N);
    CHECK_EQ_INT(run(&u.n, in, plain, &e), BRAID_OK);
    bd_tensor inh[3] = {tensor(BRAID_DTYPE_FLOAT16, 3, (int64_t[]){B, S, N * H}, qh),
                        tensor(BRAID_DTYPE_FLOAT16, 3, (int64_t[]){B, L, N * H}, kh),
                        tensor(BRAID_DTYPE_FLOAT16, 3, (int64_t[]){B, L, N * H}, vh)};
    ms(&t, BD_OP_MS_MultiHeadAttention, 3, 1);
    attr_int(&t, "num_heads", N);
    CHECK_EQ_INT(run(&t.n, inh, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dtype, BRAID_DTYPE_FLOAT16);
    int same = 1;
    for (int i = 0; i < B * S * N * H; i++)
        same &= ((uint16_t *)out[0].data)[i] == bd_float_to_half(((float *)plain[0].data)[i]);
    CHECK(same);
    done(&t.n, out);
    done(&u.n, plain);
    free(q), free(k), free(v);
}

static void test_errors(void)
{
    float f[256] = {0};
    int32_t m[16] = {0};
    bd_tensor out[4] = {0};
    bd_err e = {0};
    tnode t;
    /* num_heads is required */
    ms(&t, BD_OP_MS_MultiHeadAttention, 3, 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "'num_heads' must be positive");
    bd_free(t.n.params);
    /* packed QKV (5-D query alone) */
    ms(&t, BD_OP_MS_MultiHeadAttention, 1, 1);
    attr_int(&t, "num_heads", 2);
    bd_tensor in[8] = {tensor(F32, 5, (int64_t[]){1, 2, 2, 3, 2}, f)};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "packed QKV");
    done(&t.n, out);
    /* hidden size 6 over 4 heads */
    ms(&t, BD_OP_MS_MultiHeadAttention, 3, 1);
    attr_int(&t, "num_heads", 4);
    in[0] = tensor(F32, 3, (int64_t[]){1, 2, 6}, f), in[1] = tensor(F32, 3, (int64_t[]){1, 2, 6}, f);
    in[2] = tensor(F32, 3, (int64_t[]){1, 2, 6}, f);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "not a multiple of num_heads 4");
    done(&t.n, out);
    /* a left-padding mask index (2 * batch) and an int64 mask */
    ms(&t, BD_OP_MS_MultiHeadAttention, 5, 1);
    attr_int(&t, "num_heads", 2);
    t.in[3] = -1;
    in[3] = (bd_tensor){.rank = -1};
    in[4] = tensor(BRAID_DTYPE_INT32, 1, (int64_t[]){2}, m);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "left padding");
    done(&t.n, out);
    ms(&t, BD_OP_MS_MultiHeadAttention, 5, 1);
    attr_int(&t, "num_heads", 2);
    t.in[3] = -1;
    in[4] = tensor(BRAID_DTYPE_INT64, 1, (int64_t[]){1}, m);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "key_padding_mask must be int32");
    done(&t.n, out);
    /* Attention: do_rotary; weights that do not split into Q, K, V */
    ms(&t, BD_OP_MS_Attention, 2, 1);
    attr_int(&t, "num_heads", 2);
    attr_int(&t, "do_rotary", 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "do_rotary=1");
    bd_free(t.n.params);
    ms(&t, BD_OP_MS_Attention, 2, 1);
    attr_int(&t, "num_heads", 2);
    in[0] = tensor(F32, 3, (int64_t[]){1, 2, 4}, f), in[1] = tensor(F32, 2, (int64_t[]){4, 10}, f);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "do not split into Q, K, V");
    done(&t.n, out);
    /* EmbedLayerNormalization: a word id past the table; segment ids without their table */
    int32_t ids[2] = {0, 9};
    bd_tensor ein[7] = {tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){1, 2}, ids), {.rank = -1},
                        tensor(F32, 2, (int64_t[]){4, 3}, f), tensor(F32, 2, (int64_t[]){4, 3}, f), {.rank = -1},
                        tensor(F32, 1, (int64_t[]){3}, f), tensor(F32, 1, (int64_t[]){3}, f)};
    ms(&t, BD_OP_MS_EmbedLayerNormalization, 7, 1);
    int ins[7] = {0, -1, 2, 3, -1, 5, 6};
    t.n.in = ins;
    CHECK_EQ_INT(run(&t.n, ein, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "word id 9");
    done(&t.n, out);
    ms(&t, BD_OP_MS_EmbedLayerNormalization, 7, 1);
    t.n.in = ins;
    ein[1] = tensor(BRAID_DTYPE_INT32, 2, (int64_t[]){1, 2}, ids);
    CHECK_EQ_INT(run(&t.n, ein, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "segment_ids and segment_embedding must be given together");
    done(&t.n, out);
}

/* GroupQueryAttention's refusals: seqlens_k past the present, an unknown
 * total_sequence_length, unsupported inputs, head counts. */
static void test_gqa_errors(void)
{
    float f[512] = {0};
    int32_t sl[2] = {7, 0}, tl = 3;
    bd_tensor out[3] = {0};
    bd_err e = {0};
    tnode t;
    int ins[7] = {0, 1, 2, -1, -1, 5, 6};
    bd_tensor in[10] = {tensor(F32, 3, (int64_t[]){2, 3, 16}, f), tensor(F32, 3, (int64_t[]){2, 3, 8}, f),
                        tensor(F32, 3, (int64_t[]){2, 3, 8}, f), {.rank = -1}, {.rank = -1},
                        tensor(BRAID_DTYPE_INT32, 1, (int64_t[]){2}, sl), tensor(BRAID_DTYPE_INT32, 0, NULL, &tl)};
    ms(&t, BD_OP_MS_GroupQueryAttention, 7, 3);
    t.n.in = ins;
    attr_int(&t, "num_heads", 4);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "seqlens_k[0] = 7 does not fit 3 new tokens in a present of 3");
    done(&t.n, out);
    in[6].data = NULL; /* the value is known only at run time */
    ms(&t, BD_OP_MS_GroupQueryAttention, 7, 3);
    t.n.in = ins;
    attr_int(&t, "num_heads", 4);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "must be known when the plan is made");
    done(&t.n, out);
    in[6].data = &tl;
    int64_t pid[6] = {0};
    in[7] = (bd_tensor){.rank = -1}, in[8] = (bd_tensor){.rank = -1};
    in[9] = tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){2, 3}, pid);
    int ins10[10] = {0, 1, 2, -1, -1, 5, 6, -1, -1, 9};
    ms(&t, BD_OP_MS_GroupQueryAttention, 10, 3);
    t.n.in = ins10;
    attr_int(&t, "num_heads", 4);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
    CHECK_CONTAINS(e.msg, "'position_ids' is not supported");
    done(&t.n, out);
    ms(&t, BD_OP_MS_GroupQueryAttention, 7, 3);
    attr_int(&t, "num_heads", 3);
    attr_int(&t, "kv_num_heads", 2);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "num_heads (3) must be a positive multiple of kv_num_heads (2)");
    bd_free(t.n.params);
    ms(&t, BD_OP_MS_GroupQueryAttention, 7, 3);
    attr_int(&t, "num_heads", 4);
    attr_int(&t, "kv_num_heads", 2);
    attr_int(&t, "smooth_softmax", 1);
    CHECK_EQ_INT(bd_op_parse(&t.n, &e), BRAID_ERR_UNSUPPORTED);
    bd_free(t.n.params);
}

int main(void)
{
    test_gqa_errors();
    test_mha_numbers();
    test_errors();
    return check_done();
}
