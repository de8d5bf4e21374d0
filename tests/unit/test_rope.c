/* test_rope.c: RotaryEmbedding (ONNX opset 23 and com.microsoft) against the
 * rotation written out here (pairs (x[i], x[i + half]) or (x[2i], x[2i+1]),
 * cos x1 - sin x2 and sin x1 + cos x2), partial rotation leaving the tail
 * untouched, 3-D and 4-D layouts, com.microsoft's one-value position offset,
 * float16 rounded once, and the errors: position ids outside the caches, a
 * 3-D input without num_heads, odd rotary dims, caches of the wrong width. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"

#include "util/dtype.h"

/* Expected y for 4-D x (B, H, S, D) with rows r[b][s] of (.., rd/2) caches. */
static void ref_rope(const float *x, const float *c, const float *s, const int64_t *rows, int B, int H, int S, int D,
                     int rd, int inter, float *y)
{
    int half = rd / 2;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < S; t++) {
                const float *xr = x + ((b * H + h) * S + t) * D;
                float *yr = y + ((b * H + h) * S + t) * D;
                int64_t r = rows[b * S + t];
                for (int d = 0; d < D; d++) yr[d] = xr[d];
                for (int i = 0; i < half; i++) {
                    int a = inter ? 2 * i : i, bb = inter ? 2 * i + 1 : i + half;
                    double cv = c[r * half + i], sv = s[r * half + i];
                    yr[a] = (float)(cv * xr[a] - sv * xr[bb]);
                    yr[bb] = (float)(sv * xr[a] + cv * xr[bb]);
                }
            }
}

static void test_onnx(void)
{
    enum { B = 2, H = 2, S = 3, D = 6, RD = 4, P = 5 };
    unsigned seed = 5;
    float *x = randn(B * H * S * D, &seed), *c = randn(P * RD / 2, &seed), *s = randn(P * RD / 2, &seed);
    int64_t pos[B * S] = {0, 4, 2, 3, 3, 1};
    float want[B * H * S * D];
    for (int inter = 0; inter <= 1; inter++) {
        ref_rope(x, c, s, pos, B, H, S, D, RD, inter, want);
        tnode t;
        tnode_init(&t, BD_OP_RotaryEmbedding, 23, 4, 1);
        attr_int(&t, "interleaved", inter);
        attr_int(&t, "rotary_embedding_dim", RD);
        bd_tensor in[4] = {tensor(F32, 4, (int64_t[]){B, H, S, D}, x), tensor(F32, 2, (int64_t[]){P, RD / 2}, c),
                           tensor(F32, 2, (int64_t[]){P, RD / 2}, s), ints1(pos, B * S)};
        in[3].rank = 2, in[3].dims[0] = B, in[3].dims[1] = S;
        bd_tensor out[1] = {0};
        bd_err e = {0};
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        double worst = 0;
        for (int i = 0; i < B * H * S * D; i++) worst = fmax(worst, fabs(((float *)out[0].data)[i] - want[i]));
        CHECK(worst < 1e-6);
        /* the tail past the rotated dims is a copy */
        CHECK(((float *)out[0].data)[5] == x[5] && ((float *)out[0].data)[4] == x[4]);
        done(&t.n, out);
    }
    /* a position past the cache's rows */
    pos[4] = P;
    tnode t;
    tnode_init(&t, BD_OP_RotaryEmbedding, 23, 4, 1);
    attr_int(&t, "rotary_embedding_dim", RD);
    bd_tensor in[4] = {tensor(F32, 4, (int64_t[]){B, H, S, D}, x), tensor(F32, 2, (int64_t[]){P, RD / 2}, c),
                       tensor(F32, 2, (int64_t[]){P, RD / 2}, s), tensor(BRAID_DTYPE_INT64, 2, (int64_t[]){B, S}, pos)};
    bd_tensor out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "position_ids value 5 at index 4 is outside the caches' 5 rows");
    done(&t.n, out);
    /* 3-D without num_heads; odd rotary dims; caches of the wrong width */
    tnode_init(&t, BD_OP_RotaryEmbedding, 23, 4, 1);
    in[0] = tensor(F32, 3, (int64_t[]){B, S, H * D}, x);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "needs the num_heads attribute");
    done(&t.n, out);
    tnode_init(&t, BD_OP_RotaryEmbedding, 23, 4, 1);
    attr_int(&t, "num_heads", H);
    attr_int(&t, "rotary_embedding_dim", 3);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "must be even");
    done(&t.n, out);
    tnode_init(&t, BD_OP_RotaryEmbedding, 23, 4, 1);
    attr_int(&t, "num_heads", H);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
    CHECK_CONTAINS(e.msg, "half the rotated dims (6)");
    done(&t.n, out);
    free(x), free(c), free(s);
}

/* com.microsoft: 3-D input, position_ids of one value = the offset of token 0;
 * float16 rounded once from the float rotation. */
static void test_ms_half(void)
{
    enum { B = 1, S = 2, H = 2, D = 4, P = 6 };
    unsigned seed = 9;
    float *xf = randn(B * S * H * D, &seed), *cf = randn(P * D / 2, &seed), *sf = randn(P * D / 2, &seed);
    uint16_t x[B * S * H * D], c[P * D / 2], s[P * D / 2];
    for (int i = 0; i < B * S * H * D; i++) x[i] = bd_float_to_half(xf[i]), xf[i] = bd_half_to_float(x[i]);
    for (int i = 0; i < P * D / 2; i++) {
        c[i] = bd_float_to_half(cf[i]), cf[i] = bd_half_to_float(c[i]);
        s[i] = bd_float_to_half(sf[i]), sf[i] = bd_half_to_float(s[i]);
    }
    int64_t off = 3, rows[B * S] = {3, 4};
    /* reorder the 3-D (B, S, H, D) input as 4-D (B, H, S, D) for the reference */
    float x4[B * H * S * D], want4[B * H * S * D];
    for (int t = 0; t < S; t++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) x4[(h * S + t) * D + d] = xf[(t * H + h) * D + d];
    ref_rope(x4, cf, sf, rows, B, H, S, D, D, 0, want4);
    tnode t;
    tnode_init(&t, BD_OP_MS_RotaryEmbedding, 1, 4, 1);
    t.n.domain = "com.microsoft";
    attr_float(&t, "scale", 2.0f); /* read and unused, as onnxruntime's CPU kernel */
    bd_tensor in[4] = {tensor(BRAID_DTYPE_FLOAT16, 3, (int64_t[]){B, S, H * D}, x), ints1(&off, 1),
                       tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){P, D / 2}, c),
                       tensor(BRAID_DTYPE_FLOAT16, 2, (int64_t[]){P, D / 2}, s)};
    bd_tensor out[1] = {0};
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    int ok = 1;
    for (int tt = 0; tt < S; tt++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++)
                ok &= ((uint16_t *)out[0].data)[(tt * H + h) * D + d] == bd_float_to_half(want4[(h * S + tt) * D + d]);
    CHECK(ok);
    done(&t.n, out);
    /* the offset runs past the cache: 5 + 1 >= 6 */
    off = 5;
    tnode_init(&t, BD_OP_MS_RotaryEmbedding, 1, 4, 1);
    t.n.domain = "com.microsoft";
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
    done(&t.n, out);
    free(xf), free(cf), free(sf);
}

int main(void)
{
    test_onnx();
    test_ms_half();
    return check_done();
}
