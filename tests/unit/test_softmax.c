/* test_softmax.c: the softmax family beyond test_reduce.c's checks:
 * Hardmax (first maximum, NaN first, one axis from opset 13, the flattened
 * trailing block before), float16 and bfloat16 Softmax/LogSoftmax against
 * double references rounded once, rows with NaN and -inf, strided lines
 * (inner > 1), empty tensors and dtype errors. */
#include "backend/cpu/cpu_ops.h"
#include "check.h"
#include "optest.h"
#include "util/dtype.h"

#include <stdlib.h>

static void test_hardmax(void)
{
    /* (2, 2, 3): opset 13 along axis -1; ties go to the first; a NaN wins */
    float x[] = {1, 3, 3, 0, -1, -2, NAN, 5, NAN, -INFINITY, -INFINITY, -INFINITY};
    bd_tensor in = {F32, 3, {2, 2, 3}, x}, out = {0};
    bd_err e = {0};
    bd_node n = op_node(BD_OP_Hardmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    const float w13[] = {0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};
    for (int i = 0; i < 12; i++) CHECK(((float *)out.data)[i] == w13[i]);
    done(&n, &out);
    /* opset 11, axis 1: each batch is one row of 6 */
    bd_attr a1 = attr_i("axis", 1);
    n = op_node(BD_OP_Hardmax, 11, 1, 1, &a1, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    const float w11[] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    for (int i = 0; i < 12; i++) CHECK(((float *)out.data)[i] == w11[i]);
    done(&n, &out);
    /* opset 13, axis 1 (lines of 2 at stride 3) */
    n = op_node(BD_OP_Hardmax, 13, 1, 1, &a1, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
    const float wa1[] = {1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0};
    for (int i = 0; i < 12; i++) CHECK(((float *)out.data)[i] == wa1[i]);
    done(&n, &out);
    /* float16 and double */
    uint16_t h[3] = {bd_float_to_half(0.5f), bd_float_to_half(2), bd_float_to_half(-7)};
    bd_tensor hin = {BRAID_DTYPE_FLOAT16, 1, {3}, h};
    n = op_node(BD_OP_Hardmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &hin, &out, &e), BRAID_OK);
    CHECK(((uint16_t *)out.data)[0] == 0 && ((uint16_t *)out.data)[1] == 0x3c00 && ((uint16_t *)out.data)[2] == 0);
    done(&n, &out);
    double d[2] = {-1, -0.5};
    bd_tensor din = {BRAID_DTYPE_DOUBLE, 1, {2}, d};
    CHECK_EQ_INT(run(&n, &din, &out, &e), BRAID_OK);
    CHECK(((double *)out.data)[0] == 0 && ((double *)out.data)[1] == 1);
    done(&n, &out);
}

/* Softmax/LogSoftmax of 2 rows of 37 (past the 8 lanes) and of lines at
 * stride 5, in float16 and bfloat16, against double rounded once. */
/* v rounded to float16 (bf 0) or bfloat16 (bf 1). */
static double r16(int bf, double v)
{
    return bf ? bd_bf16_to_float(bd_float_to_bf16((float)v)) : bd_half_to_float(bd_float_to_half((float)v));
}

static void test_half(void)
{
    enum { N = 2 * 37 * 5 };
    bd_err e = {0};
    for (int bf = 0; bf <= 1; bf++)
        for (int log_ = 0; log_ <= 1; log_++)
            for (int strided = 0; strided <= 1; strided++) {
                uint16_t h[N];
                double v[N];
                for (int i = 0; i < N; i++) {
                    float f = (float)((i * 13) % 29) * 0.25f - 3;
                    h[i] = bf ? bd_float_to_bf16(f) : bd_float_to_half(f);
                    v[i] = bf ? bd_bf16_to_float(h[i]) : bd_half_to_float(h[i]);
                }
                bd_tensor in = {bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16, 3, {2, 37, 5}, h}, out = {0};
                bd_attr ax = attr_i("axis", strided ? 1 : -1);
                bd_node n = op_node(log_ ? BD_OP_LogSoftmax : BD_OP_Softmax, 13, 1, 1, &ax, 1);
                CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
                int lines = strided ? 2 * 5 : 2 * 37, len = strided ? 37 : 5, bad = 0;
                for (int l = 0; l < lines; l++) {
                    int base = strided ? (l / 5) * 185 + l % 5 : l * 5, step = strided ? 5 : 1;
                    double mx = -INFINITY, s = 0;
                    for (int j = 0; j < len; j++) mx = fmax(mx, v[base + j * step]);
                    for (int j = 0; j < len; j++) s += exp(v[base + j * step] - mx);
                    /* Softmax in the reference's steps, each rounded to the type */
                    double s16 = 0;
                    for (int j = 0; j < len; j++) s16 += r16(bf, exp(r16(bf, v[base + j * step] - mx)));
                    s16 = r16(bf, s16);
                    for (int j = 0; j < len; j++) {
                        double t = v[base + j * step] - mx,
                               want = log_ ? t - log(s) : r16(bf, exp(r16(bf, t))) / s16;
                        uint16_t got = ((uint16_t *)out.data)[base + j * step];
                        double g = bf ? bd_bf16_to_float(got) : bd_half_to_float(got);
                        /* LogSoftmax, one rounding; Softmax, the last one: within half an ulp of the type (a relative
                         * 2^-9 for bfloat16, 2^-12 for float16, at most twice
                         * that below a power of two; half a subnormal step for
                         * float16), plus float32's error */
                        double tol = fabs(want) * (bf ? 0x1p-8 : 0x1p-11) + (bf ? 0 : 0x1p-25) + fabs(want) * 1e-6;
                        if (fabs(g - want) > tol) bad++;
                    }
                }
                CHECK_EQ_INT(bad, 0);
                done(&n, &out);
            }
}

static void test_special_values(void)
{
    bd_err e = {0};
    bd_tensor out = {0};
    /* a NaN makes its row NaN; -inf entries get probability 0 (log: -inf) */
    float x[] = {1, NAN, 2, -INFINITY, 0, -INFINITY};
    bd_tensor in = {F32, 2, {2, 3}, x};
    for (int log_ = 0; log_ <= 1; log_++) {
        bd_node n = op_node(log_ ? BD_OP_LogSoftmax : BD_OP_Softmax, 13, 1, 1, NULL, 0);
        CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_OK);
        const float *y = out.data;
        for (int i = 0; i < 3; i++) CHECK(isnan(y[i]));
        CHECK(y[3] == (log_ ? -INFINITY : 0));
        CHECK(y[4] == (log_ ? 0 : 1));
        CHECK(y[5] == (log_ ? -INFINITY : 0));
        done(&n, &out);
    }
    /* empty tensors, and an axis of size 0 */
    float z[1];
    bd_tensor ein = {F32, 2, {0, 4}, z};
    bd_node n = op_node(BD_OP_Softmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &ein, &out, &e), BRAID_OK);
    CHECK_EQ_INT(bd_numel(&out), 0);
    done(&n, &out);
    ein.dims[0] = 4, ein.dims[1] = 0;
    n = op_node(BD_OP_Hardmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &ein, &out, &e), BRAID_OK);
    done(&n, &out);
    /* bfloat16 only from opset 13; ints never */
    uint16_t b[2] = {0, 0};
    bd_tensor bin = {BRAID_DTYPE_BFLOAT16, 1, {2}, b};
    n = op_node(BD_OP_Softmax, 11, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &bin, &out, &e), BRAID_ERR_DTYPE);
    CHECK_CONTAINS(e.msg, "bfloat16");
    done(&n, &out);
    int64_t iv[2] = {0, 0};
    bd_tensor iin = {BRAID_DTYPE_INT64, 1, {2}, iv};
    n = op_node(BD_OP_Hardmax, 13, 1, 1, NULL, 0);
    CHECK_EQ_INT(run(&n, &iin, &out, &e), BRAID_ERR_DTYPE);
    done(&n, &out);
    /* axis out of range */
    bd_attr a = attr_i("axis", -3);
    n = op_node(BD_OP_Softmax, 13, 1, 1, &a, 1);
    CHECK_EQ_INT(run(&n, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "axis -3");
    done(&n, &out);
}

/* float32 rows of every length around the 8-wide vector body (tails of 1 to
 * 7, and a row shorter than one vector) against a double reference: Softmax
 * within 1e-6 relative + 1e-12 (about 8 ulp: exp within 4 ulp, the sum and
 * the scale), LogSoftmax within 2e-6 absolute of values up to ~10 (log of the
 * sum, then a subtraction); and the same bits on 1 and 3 threads. */
static void test_rows_f32(void)
{
    static const int lens[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 100, 1023};
    unsigned seed = 11;
    bd_err e = {0};
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++) {
        int n = lens[l], rows = 5;
        float *x = malloc(sizeof(float) * (size_t)(rows * n));
        for (int i = 0; i < rows * n; i++) {
            seed = seed * 1664525u + 1013904223u;
            x[i] = (float)((seed >> 8) & 0xffff) / 65536.0f * 20.0f - 10.0f;
        }
        bd_tensor in = {F32, 2, {rows, n}, x};
        for (int log_ = 0; log_ <= 1; log_++) {
            double worst = 0;
            float *first = NULL;
            for (int t = 1; t <= 3; t += 2) {
                g_threads = t;
                bd_tensor out = {0};
                bd_node nd = op_node(log_ ? BD_OP_LogSoftmax : BD_OP_Softmax, 13, 1, 1, NULL, 0);
                CHECK_EQ_INT(run(&nd, &in, &out, &e), BRAID_OK);
                const float *y = out.data;
                for (int r = 0; r < rows; r++) {
                    const float *xr = x + r * n;
                    double mx = -INFINITY, sum = 0;
                    for (int i = 0; i < n; i++) mx = xr[i] > mx ? xr[i] : mx;
                    for (int i = 0; i < n; i++) sum += exp((double)xr[i] - mx);
                    for (int i = 0; i < n; i++) {
                        double ref = log_ ? (double)xr[i] - mx - log(sum) : exp((double)xr[i] - mx) / sum;
                        double err = fabs(y[r * n + i] - ref) / (log_ ? 2e-6 : 1e-6 * fabs(ref) + 1e-12);
                        worst = err > worst ? err : worst;
                    }
                }
                if (!first) {
                    first = malloc(sizeof(float) * (size_t)(rows * n));
                    memcpy(first, y, sizeof(float) * (size_t)(rows * n));
                } else {
                    CHECK(memcmp(first, y, sizeof(float) * (size_t)(rows * n)) == 0);
                }
                done(&nd, &out);
            }
            g_threads = 1;
            if (worst > 1) fprintf(stderr, "%s row of %d: %.2f of the bound\n", log_ ? "LogSoftmax" : "Softmax", n, worst);
            CHECK(worst <= 1);
            free(first);
        }
        free(x);
    }
}

int main(void)
{
    test_rows_f32();
    test_hardmax();
    test_half();
    test_special_values();
    return check_done();
}
