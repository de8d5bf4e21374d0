/* test_signal.c: the signal family against independent references: DFT of
 * every length from 1 to 40 and some large ones (powers of two, primes,
 * Bluestein's lengths) against the direct O(n^2) sum in double, inverse
 * round trips, RFFT/IRFFT with odd and even lengths, dft_length padding and
 * truncation, axes (attribute and input, negative), float16 and bfloat16,
 * NaN, empty batches, thread-count independence, STFT against direct
 * windowed sums, the window formulas, MelWeightMatrix against onnx's
 * reference, and the errors. */
#include "check.h"
#include "optest.h"

#include <math.h>

#include "ops/signal.h"
#include "util/dtype.h"

#define PI 3.14159265358979323846

/* The direct DFT of x (n complex, interleaved) into y (len_out complex):
 * y[k] = sum_t x[t] exp(-+2 pi i k t / n) (sign -1 forward). */
static void direct_dft(const double *x, int64_t n, double *y, int64_t len_out, int inverse)
{
    for (int64_t k = 0; k < len_out; k++) {
        double re = 0, im = 0;
        for (int64_t t = 0; t < n; t++) {
            double a = (inverse ? 2 : -2) * PI * (double)((k * t) % n) / (double)n;
            re += x[2 * t] * cos(a) - x[2 * t + 1] * sin(a);
            im += x[2 * t] * sin(a) + x[2 * t + 1] * cos(a);
        }
        y[2 * k] = inverse ? re / (double)n : re;
        y[2 * k + 1] = inverse ? im / (double)n : im;
    }
}

static bd_tensor scalar64(int64_t *v) { return (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 0, .data = v}; }

/* Runs a DFT of x (double, (1, n, c)) and compares with the direct sum. */
static void check_dft_len(int64_t n, int c, int inverse, int onesided)
{
    unsigned seed = (unsigned)(n * 7 + c);
    float *r = randn(2 * n, &seed);
    double *x = malloc((size_t)(2 * n) * sizeof *x), *xc = calloc((size_t)(2 * n), sizeof *xc);
    double *want = malloc((size_t)(2 * n) * sizeof *want);
    for (int64_t i = 0; i < c * n; i++) x[i] = r[i];
    for (int64_t t = 0; t < n; t++) xc[2 * t] = x[c * t], xc[2 * t + 1] = c == 2 ? x[2 * t + 1] : 0;
    int64_t nout = onesided ? n / 2 + 1 : n;
    direct_dft(xc, n, want, nout, inverse);
    tnode t;
    tnode_init(&t, BD_OP_DFT, 17, 1, 1);
    attr_int(&t, "axis", 1);
    attr_int(&t, "inverse", inverse);
    attr_int(&t, "onesided", onesided);
    bd_tensor in[1] = {tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){1, n, c}, x)}, out[1];
    bd_err e = {0};
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].dims[1], nout);
    CHECK_EQ_INT(out[0].dims[2], 2);
    const double *y = out[0].data;
    double worst = 0;
    for (int64_t i = 0; i < 2 * nout; i++) worst = fmax(worst, fabs(y[i] - want[i]));
    /* The direct sum's own error grows like n eps; the FFT's like log n eps. */
    if (!(worst <= 1e-12 * (double)(n + 1))) fprintf(stderr, "DFT n=%lld c=%d inverse=%d: error %g\n", (long long)n, c, inverse, worst);
    CHECK(worst <= 1e-12 * (double)(n + 1));
    done(&t.n, out);
    free(r), free(x), free(xc), free(want);
}

int main(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor in[5], out[1];

    /* Every length 1..40, both directions, real and complex; plus large
     * powers of two, a large prime and a length of 3 * 2^k. */
    for (int64_t n = 1; n <= 40; n++) {
        check_dft_len(n, 2, 0, 0);
        check_dft_len(n, 2, 1, 0);
        check_dft_len(n, 1, 0, 0);
        check_dft_len(n, 1, 0, 1);
    }
    check_dft_len(1024, 2, 0, 0);
    check_dft_len(1021, 2, 1, 0);
    check_dft_len(768, 1, 0, 1);

    /* Inverse float32 transforms run in float32 (mixed radix 4, 2, 3, 5 and
     * odd factors up to 64; beyond that, e.g. 67 or 2 * 67, in double): every
     * length 1..70 and 134 against the direct sum, within float32 rounding. */
    for (int64_t n = 1; n <= 134; n = n < 70 ? n + 1 : n == 70 ? 134 : 135) {
        unsigned seed = (unsigned)n;
        float *x = randn(2 * n, &seed);
        double *xd = malloc((size_t)(2 * n) * sizeof *xd), *want = malloc((size_t)(2 * n) * sizeof *want);
        for (int64_t i = 0; i < 2 * n; i++) xd[i] = x[i];
        direct_dft(xd, n, want, n, 1);
        tnode_init(&t, BD_OP_DFT, 20, 1, 1);
        attr_int(&t, "inverse", 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, n, 2}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        double worst = 0;
        for (int64_t i = 0; i < 2 * n; i++) worst = fmax(worst, fabs(((float *)out[0].data)[i] - want[i]));
        if (!(worst < 2e-7 * (double)(n + 8))) fprintf(stderr, "float inverse n=%lld: error %g\n", (long long)n, worst);
        CHECK(worst < 2e-7 * (double)(n + 8));
        done(&t.n, out);
        free(x), free(xd), free(want);
    }

    /* numpy's rounding, which the node tests' data carries: ifft of the
     * column 0, 10, ..., 90 (complex64) has at the Nyquist bin the imaginary
     * part 1.9073487e-07 (exactly 0 in exact arithmetic):
     *   np.fft.ifft(np.arange(0, 100, dtype=np.complex64).reshape(10, 10), axis=0)[5, 0]
     *   -> (-5+1.9073487e-07j)   (numpy 2.4.6) */
    {
        float x[20];
        for (int i = 0; i < 10; i++) x[2 * i] = (float)(10 * i), x[2 * i + 1] = 0;
        tnode_init(&t, BD_OP_DFT, 20, 1, 1);
        attr_int(&t, "inverse", 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 10, 2}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_NEAR(((float *)out[0].data)[10], -5.0f, 0, 0);
        CHECK_NEAR(((float *)out[0].data)[11], 1.9073487e-07f, 0, 0);
        done(&t.n, out);
    }

    /* Round trip: IDFT(DFT(x)) == x for n = 45 (Bluestein, then 3 * 3 * 5), float32. */
    {
        unsigned seed = 5;
        float *x = randn(90, &seed);
        tnode_init(&t, BD_OP_DFT, 20, 1, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 45, 2}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        bd_tensor mid = out[0];
        out[0].data = NULL;
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 20, 1, 1);
        attr_int(&t, "inverse", 1);
        in[0] = mid;
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        double worst = 0;
        for (int i = 0; i < 90; i++) worst = fmax(worst, fabs(((float *)out[0].data)[i] - x[i]));
        CHECK(worst < 2e-6);
        done(&t.n, out);
        free(mid.data);
        free(x);
    }

    /* IRFFT: 4 one-sided bins of a length-7 signal (dft_length 7) and the
     * default even length 2 * (4 - 1) = 6, against the direct inverse of the
     * conjugate-symmetric extension (imaginary parts of bin 0 ignored). */
    for (int odd = 0; odd < 2; odd++) {
        double x[8] = {1.0, 0.5, -2.0, 1.5, 0.25, -0.75, 3.0, 2.0};
        int64_t n = odd ? 7 : 6, len = 7;
        double full[14], want[14];
        for (int64_t k = 0; k < n; k++) {
            int64_t f = k <= n / 2 ? k : n - k;
            full[2 * k] = x[2 * f];
            full[2 * k + 1] = (k <= n / 2 ? 1 : -1) * x[2 * f + 1];
        }
        full[1] = 0; /* c2r ignores the imaginary part of DC... */
        if (n % 2 == 0) full[2 * (n / 2) + 1] = 0; /* ...and of the Nyquist bin */
        direct_dft(full, n, want, n, 1);
        tnode_init(&t, BD_OP_DFT, 20, odd ? 2 : 1, 1);
        attr_int(&t, "inverse", 1);
        attr_int(&t, "onesided", 1);
        in[0] = tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){1, 4, 2}, x);
        in[1] = scalar64(&len);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[1], n);
        CHECK_EQ_INT(out[0].dims[2], 1);
        for (int64_t k = 0; k < n; k++) CHECK_NEAR(((double *)out[0].data)[k], want[2 * k], 1e-12, 0);
        done(&t.n, out);
    }

    /* dft_length pads (8 > 5) and truncates (3 < 5); axis as a negative
     * input (-3 of rank 4 is axis 1); the other axis (2) keeps its values. */
    for (int pad = 0; pad < 2; pad++) {
        int64_t n = pad ? 8 : 3, axis = -3;
        double x[2 * 5 * 3 * 2], y_line[16], x_line[16];
        for (int i = 0; i < 60; i++) x[i] = sin(0.7 * i) + 0.1 * i;
        tnode_init(&t, BD_OP_DFT, 20, 3, 1);
        in[0] = tensor(BRAID_DTYPE_DOUBLE, 4, (int64_t[]){2, 5, 3, 2}, x);
        in[1] = scalar64(&n);
        in[2] = scalar64(&axis);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[1], n);
        CHECK_EQ_INT(out[0].dims[2], 3);
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 3; j++) {
                for (int64_t s = 0; s < n; s++) {
                    x_line[2 * s] = s < 5 ? x[((b * 5 + s) * 3 + j) * 2] : 0;
                    x_line[2 * s + 1] = s < 5 ? x[((b * 5 + s) * 3 + j) * 2 + 1] : 0;
                }
                direct_dft(x_line, n, y_line, n, 0);
                for (int64_t k = 0; k < n; k++) {
                    CHECK_NEAR(((double *)out[0].data)[((b * n + k) * 3 + j) * 2], y_line[2 * k], 1e-12, 0);
                    CHECK_NEAR(((double *)out[0].data)[((b * n + k) * 3 + j) * 2 + 1], y_line[2 * k + 1], 1e-12, 0);
                }
            }
        done(&t.n, out);
    }

    /* float16 and bfloat16: computed in double on the rounded inputs, each
     * output rounded once. Values chosen so that the exact sums are exact in
     * float16: x = (1, 2, 3, 4) real gives (10, -2+2i, -2, -2-2i). */
    for (int bf = 0; bf < 2; bf++) {
        uint16_t x[4], y[8];
        const float xv[4] = {1, 2, 3, 4}, want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
        for (int i = 0; i < 4; i++) x[i] = bf ? bd_float_to_bf16(xv[i]) : bd_float_to_half(xv[i]);
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        in[0] = tensor(bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16, 3, (int64_t[]){1, 4, 1}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dtype, bf ? BRAID_DTYPE_BFLOAT16 : BRAID_DTYPE_FLOAT16);
        memcpy(y, out[0].data, sizeof y);
        for (int i = 0; i < 8; i++) CHECK_NEAR(bf ? bd_bf16_to_float(y[i]) : bd_half_to_float(y[i]), want[i], 0, 0);
        done(&t.n, out);
    }

    /* NaN spreads over its own line only; an empty batch gives an empty output. */
    {
        float x[2 * 6] = {1, 2, 3, NAN, 5, 6, 1, 2, 3, 4, 5, 6};
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        attr_int(&t, "axis", 1);
        in[0] = tensor(F32, 3, (int64_t[]){2, 6, 1}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        const float *y = out[0].data;
        for (int i = 0; i < 12; i++) CHECK(isnan(y[i]));
        CHECK_NEAR(y[12], 21, 0, 0);
        CHECK(!isnan(y[13]) && !isnan(y[23]));
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        in[0] = tensor(F32, 3, (int64_t[]){0, 6, 1}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(bd_numel(&out[0]), 0);
        CHECK_EQ_INT(out[0].dims[1], 6);
        done(&t.n, out);
    }

    /* The same bits on 1 and 4 threads (300 lines of length 50). */
    {
        unsigned seed = 9;
        float *x = randn(300 * 50 * 2, &seed);
        float *ref = NULL;
        for (int th = 1; th <= 4; th += 3) {
            g_threads = th;
            tnode_init(&t, BD_OP_DFT, 17, 1, 1);
            attr_int(&t, "axis", 1);
            in[0] = tensor(F32, 3, (int64_t[]){300, 50, 2}, x);
            CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
            if (!ref) {
                ref = out[0].data;
                out[0].data = NULL;
            } else {
                CHECK(memcmp(ref, out[0].data, 300 * 50 * 2 * sizeof(float)) == 0);
            }
            done(&t.n, out);
        }
        g_threads = 1;
        free(ref);
        free(x);
    }

    /* Errors: the complex dim as axis, a last dim of 3, dft_length 0, an
     * int input, DFT-17 given an axis input. */
    {
        float x[12] = {0};
        int64_t zero = 0, ax = 2;
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        attr_int(&t, "axis", 2);
        in[0] = tensor(F32, 3, (int64_t[]){1, 6, 2}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "axis 2 is out of range");
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 4, 3}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "1 (real) or 2 (complex)");
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 17, 2, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 6, 2}, x);
        in[1] = scalar64(&zero);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "dft_length is 0");
        done(&t.n, out);
        int64_t huge = (1LL << 40);
        tnode_init(&t, BD_OP_DFT, 17, 2, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 6, 2}, x);
        in[1] = scalar64(&huge);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_LIMIT);
        CHECK_CONTAINS(e.msg, "dft_length is 1099511627776");
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 17, 1, 1);
        in[0] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){1, 6, 2}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_DTYPE);
        CHECK_CONTAINS(e.msg, "int32");
        done(&t.n, out);
        tnode_init(&t, BD_OP_DFT, 17, 3, 1);
        in[0] = tensor(F32, 3, (int64_t[]){1, 6, 2}, x);
        in[1] = (bd_tensor){.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1};
        in[2] = scalar64(&ax);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "at most 2 inputs");
        done(&t.n, out);
    }

    /* STFT: 2 signals of 20 real samples, frame_step 3, a Hann window of 8:
     * frames (20 - 8) / 3 + 1 = 5, one-sided bins 5; against direct sums. */
    {
        double x[40], win[8], fr[16], want[16];
        int64_t step = 3;
        for (int i = 0; i < 40; i++) x[i] = cos(0.3 * i) + 0.05 * i;
        for (int i = 0; i < 8; i++) win[i] = 0.5 - 0.5 * cos(2 * PI * i / 8);
        tnode_init(&t, BD_OP_STFT, 17, 3, 1);
        in[0] = tensor(BRAID_DTYPE_DOUBLE, 3, (int64_t[]){2, 20, 1}, x);
        in[1] = scalar64(&step);
        in[2] = tensor(BRAID_DTYPE_DOUBLE, 1, (int64_t[]){8}, win);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].rank, 4);
        CHECK_EQ_INT(out[0].dims[1], 5);
        CHECK_EQ_INT(out[0].dims[2], 5);
        for (int b = 0; b < 2; b++)
            for (int f = 0; f < 5; f++) {
                for (int s = 0; s < 8; s++) fr[2 * s] = x[b * 20 + f * 3 + s] * win[s], fr[2 * s + 1] = 0;
                direct_dft(fr, 8, want, 5, 0);
                for (int k = 0; k < 10; k++)
                    CHECK_NEAR(((double *)out[0].data)[(b * 5 + f) * 10 + k], want[k], 1e-12, 0);
            }
        done(&t.n, out);
        /* frame_length and window disagree */
        int64_t fl = 6;
        tnode_init(&t, BD_OP_STFT, 17, 4, 1);
        in[3] = scalar64(&fl);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "window has 8 values but frame_length is 6");
        done(&t.n, out);
    }

    /* Windows: periodic and symmetric against the formulas, an int32 output
     * (truncated: 1 only where the window is exactly 1), and size 0. */
    {
        int ops[3] = {BD_OP_HannWindow, BD_OP_HammingWindow, BD_OP_BlackmanWindow};
        double a[3][3] = {{0.5, 0.5, 0}, {25.0 / 46, 21.0 / 46, 0}, {0.42, 0.5, 0.08}};
        for (int o = 0; o < 3; o++)
            for (int periodic = 0; periodic < 2; periodic++) {
                int64_t size = 9;
                tnode_init(&t, ops[o], 17, 1, 1);
                attr_int(&t, "periodic", periodic);
                attr_int(&t, "output_datatype", BRAID_DTYPE_DOUBLE);
                in[0] = scalar64(&size);
                CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
                CHECK_EQ_INT(out[0].dims[0], 9);
                double N = periodic ? 9 : 8;
                for (int k = 0; k < 9; k++)
                    CHECK_NEAR(((double *)out[0].data)[k],
                               a[o][0] - a[o][1] * cos(2 * PI * k / N) + a[o][2] * cos(4 * PI * k / N), 1e-15, 0);
                done(&t.n, out);
            }
        int64_t size = 5;
        tnode_init(&t, BD_OP_HannWindow, 17, 1, 1);
        attr_int(&t, "periodic", 0);
        attr_int(&t, "output_datatype", BRAID_DTYPE_INT32);
        in[0] = scalar64(&size);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        const int32_t want_i[5] = {0, 0, 1, 0, 0};
        for (int k = 0; k < 5; k++) CHECK_EQ_INT(((int32_t *)out[0].data)[k], want_i[k]);
        done(&t.n, out);
        size = 0;
        tnode_init(&t, BD_OP_BlackmanWindow, 17, 1, 1);
        in[0] = scalar64(&size);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[0], 0);
        done(&t.n, out);
        size = -1;
        tnode_init(&t, BD_OP_BlackmanWindow, 17, 1, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "size is -1");
        done(&t.n, out);
        tnode_init(&t, BD_OP_HannWindow, 17, 1, 1);
        attr_int(&t, "output_datatype", BRAID_DTYPE_BOOL);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "output_datatype");
        done(&t.n, out);
    }

    /* MelWeightMatrix(3 bins, dft_length 32, 8000 Hz, 100..3500 Hz), from
     * onnx.reference.ReferenceEvaluator (onnx 1.23.2) on a one-node model:
     *   MelWeightMatrix(int64 3, int64 32, int64 8000, float32 100, float32 3500) */
    {
        int64_t bins = 3, dft = 32, rate = 8000;
        float lo = 100, hi = 3500;
        static const float want[17][3] = {{0, 0, 0}, {1, 0, 0}, {0.5f, 0.5f, 0}, {0, 1, 0},
                                          {0, 0.6666667f, 0.33333334f}, {0, 0.33333334f, 0.6666667f},
                                          {0, 0, 1}, {0, 0, 0.6666667f}, {0, 0, 0.33333334f}};
        tnode_init(&t, BD_OP_MelWeightMatrix, 17, 5, 1);
        in[0] = scalar64(&bins);
        in[1] = scalar64(&dft);
        in[2] = scalar64(&rate);
        in[3] = tensor(F32, 0, NULL, &lo);
        in[4] = tensor(F32, 0, NULL, &hi);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(out[0].dims[0], 17);
        CHECK_EQ_INT(out[0].dims[1], 3);
        for (int r = 0; r < 17; r++)
            for (int i = 0; i < 3; i++) CHECK_NEAR(((float *)out[0].data)[r * 3 + i], want[r][i], 1e-7, 0);
        done(&t.n, out);
        rate = 0;
        tnode_init(&t, BD_OP_MelWeightMatrix, 17, 5, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_INVALID_MODEL);
        CHECK_CONTAINS(e.msg, "sample_rate is 0");
        done(&t.n, out);
    }
    return check_done();
}
