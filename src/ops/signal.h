/* signal.h: the signal family's parsed attributes and the formulas both
 * backends share: the window functions, the mel filterbank's bin edges, and
 * an O(n log n) FFT in double (iterative radix-2, Bluestein's chirp-z for
 * other lengths) that a CPU thread or a CUDA thread runs on one line. */
#ifndef BD_SIGNAL_H
#define BD_SIGNAL_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

typedef struct bd_signal_params {
    int inverse, onesided;   /* DFT; STFT: onesided (default 1) */
    int64_t axis;            /* DFT-17: the axis attribute (default 1) */
    int periodic;            /* window ops (default 1) */
    int out_dtype;           /* window ops and MelWeightMatrix: output_datatype (default float) */
} bd_signal_params;

/* ---- element access ------------------------------------------------------ */

/* Element i of a float, double, float16 or bfloat16 buffer, as double. */
static inline BD_HOST_DEVICE double bd_sig_load(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    default: return ((const float *)p)[i];
    }
}

/* Stores v as element i of a buffer of dtype dt: floats round to nearest,
 * integers truncate toward zero (Cast's rule) and saturate, NaN becomes 0. */
static inline BD_HOST_DEVICE void bd_sig_store(void *p, int dt, int64_t i, double v)
{
    double t = v != v ? 0.0 : v < 0 ? ceil(v) : floor(v);
#define BD_SIG_SAT(T, lo, hi) ((T *)p)[i] = t <= (double)(lo) ? (T)(lo) : t >= (double)(hi) ? (T)(hi) : (T)t
    switch (dt) {
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    case BRAID_DTYPE_INT8: BD_SIG_SAT(int8_t, -128, 127); break;
    case BRAID_DTYPE_UINT8: BD_SIG_SAT(uint8_t, 0, 255); break;
    case BRAID_DTYPE_INT16: BD_SIG_SAT(int16_t, -32768, 32767); break;
    case BRAID_DTYPE_UINT16: BD_SIG_SAT(uint16_t, 0, 65535); break;
    case BRAID_DTYPE_INT32: BD_SIG_SAT(int32_t, -2147483647 - 1, 2147483647); break;
    case BRAID_DTYPE_UINT32: BD_SIG_SAT(uint32_t, 0, 4294967295u); break;
    case BRAID_DTYPE_INT64: BD_SIG_SAT(int64_t, -9223372036854775807LL - 1, 9223372036854775807LL); break;
    case BRAID_DTYPE_UINT64: BD_SIG_SAT(uint64_t, 0, 18446744073709551615ull); break;
    default: break;
    }
#undef BD_SIG_SAT
}

/* ---- window functions ---------------------------------------------------- */

/* Point k of a window of `size` points (op: BD_OP_HannWindow, _HammingWindow
 * or _BlackmanWindow): a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), with N =
 * size (periodic) or size - 1 (symmetric), as ONNX's function bodies define
 * them (a symmetric window of one point divides by zero: NaN, as there). */
static inline BD_HOST_DEVICE double bd_window_value(int op, int64_t k, int64_t size, int periodic)
{
    double a0, a1, a2 = 0.0;
    if (op == BD_OP_HannWindow) a0 = 0.5, a1 = 0.5;
    else if (op == BD_OP_HammingWindow) a0 = 25.0 / 46.0, a1 = 1.0 - 25.0 / 46.0;
    else a0 = 0.42, a1 = 0.5, a2 = 0.08;
    double N = (double)(periodic ? size : size - 1);
    double x = 2.0 * 3.14159265358979323846 * (double)k / N;
    return a0 - a1 * cos(x) + a2 * cos(2.0 * x);
}

/* ---- mel filterbank ------------------------------------------------------ */

/* The spectrogram bin of edge i (0 .. bins + 1) of a mel filterbank, as
 * onnx's reference computes it: the edges' mel values from
 * 2595 log10(1 + f / 700) (log1p in float32 unless the edges are double),
 * spaced evenly, mapped back to hertz and to bin floor((dft + 1) f / rate). */
static inline BD_HOST_DEVICE int64_t bd_mel_edge_bin(int64_t i, int64_t bins, int64_t dft_length, int64_t rate,
                                                     double lo_hz, double hi_hz, int edges_double)
{
    const double ln10 = 2.302585092994045684;
    double lo_mel, hi_mel;
    if (edges_double) {
        lo_mel = 2595.0 * log1p(lo_hz / 700.0) / ln10;
        hi_mel = 2595.0 * log1p(hi_hz / 700.0) / ln10;
    } else {
        lo_mel = (double)(2595.0f * log1pf((float)lo_hz / 700.0f)) / ln10;
        hi_mel = (double)(2595.0f * log1pf((float)hi_hz / 700.0f)) / ln10;
    }
    double step = (hi_mel - lo_mel) / (double)(bins + 2);
    double hz = 700.0 * expm1(((double)i * step + lo_mel) / 2595.0 * ln10);
    return (int64_t)floor((double)(dft_length + 1) * hz / (double)rate);
}

/* Weight of spectrogram bin j in the mel filter whose edges are bins (l, c,
 * h), as the reference writes it: rising over [l, c] (1 at c alone when l ==
 * c), then falling over [c, h), which overwrites c. Bins outside the output
 * are dropped by the caller. */
static inline BD_HOST_DEVICE double bd_mel_weight(int64_t j, int64_t l, int64_t c, int64_t h)
{
    double w = 0.0;
    if (l == c) w = j == c ? 1.0 : 0.0;
    else if (j >= l && j <= c) w = (double)(j - l) / (double)(c - l);
    if (h > c && j >= c && j < h) w = (double)(h - j) / (double)(h - c);
    return w;
}

/* ---- FFT ----------------------------------------------------------------- */

/* Two transforms. Double: radix-2 for powers of two, Bluestein's chirp-z
 * (radix-2 transforms of length m = the power of two >= 2n - 1) for other
 * lengths. Float: a mixed-radix (4, 2, 3, 5 and any odd factor up to 64)
 * self-sorting Cooley-Tukey in float32, decimating in frequency one factor
 * at a time, for the float32 transforms that numpy computes in float32 (see
 * bd_dft_line), whose rounding it follows on the lengths the tests use.
 * The tables (all complex values interleaved (re, im)):
 *   tw     (m / 2 doubles pairs): exp(-2 pi i j / m)
 *   chirp  (n): exp(-pi i k^2 / n)                    (Bluestein only)
 *   filt   (m): FFT of the conjugate chirp, over m    (Bluestein only)
 *   twf    (n float pairs): exp(+2 pi i j / n)         (float transform only) */
#define BD_FFTF_MAX_FACTOR 64
typedef struct bd_fft_plan {
    int64_t n, m;
    int bluestein;
    const double *tw, *chirp, *filt;
    int f32, nf;               /* the float transform is available; its factors */
    int64_t fct[64];
    const float *twf;
} bd_fft_plan;

static inline BD_HOST_DEVICE int64_t bd_fft_length(int64_t n)
{
    int64_t m = 1;
    if (n > 0 && (n & (n - 1)) == 0) return n;
    while (m < 2 * n - 1) m <<= 1;
    return m;
}

/* Doubles the plan's tables take: tw, chirp and filt when Bluestein, and
 * twf (n float pairs = n doubles). */
static inline BD_HOST_DEVICE int64_t bd_fft_table_doubles(int64_t n)
{
    int64_t m = bd_fft_length(n);
    return m + (m != n ? 2 * n + 2 * m : 0) + n;
}

/* cos and sin of 2 pi j / m, reduced to the first octant exactly so that the
 * symmetric values agree and the quarter turns are exact. */
static inline BD_HOST_DEVICE void bd_sincos_2pi(int64_t j, int64_t m, double *c, double *s)
{
    const double tau = 6.283185307179586477;
    j %= m;
    if (j < 0) j += m;
    double sgn_s = 1.0, sgn_c = 1.0, cc, ss;
    if (2 * j > m) j = m - j, sgn_s = -1.0;     /* angle in [0, pi] */
    int64_t a = j, b = m;                       /* angle = 2 pi a / b */
    int flip = 0;
    if (4 * a > b) a = b - 2 * a, b = 2 * b, sgn_c = -1.0; /* pi - angle, in [0, pi/2) */
    if (8 * a > b) a = b - 4 * a, b = 4 * b, flip = 1;     /* pi/2 - angle, in [0, pi/4] */
    double x = tau * (double)a / (double)b;
    cc = cos(x), ss = sin(x);
    if (flip) { double t = cc; cc = ss; ss = t; }
    *c = sgn_c * cc;
    *s = sgn_s * ss;
}

/* exp(-2 pi i j / m) and exp(-pi i k^2 / n). */
static inline BD_HOST_DEVICE void bd_fft_twiddle(int64_t j, int64_t m, double *re, double *im)
{
    double c, s;
    bd_sincos_2pi(j, m, &c, &s);
    *re = c, *im = -s;
}
static inline BD_HOST_DEVICE void bd_fft_chirp(int64_t k, int64_t n, double *re, double *im)
{
    int64_t q = (int64_t)(((unsigned long long)k * (unsigned long long)k) % (unsigned long long)(2 * n));
    double c, s;
    bd_sincos_2pi(q, 2 * n, &c, &s);
    *re = c, *im = -s;
}

/* In-place forward FFT of a (m complex, m a power of two), radix-2
 * decimation in time after a bit-reversal permutation; tw as in the plan. */
static inline BD_HOST_DEVICE void bd_fft_pow2(double *a, int64_t m, const double *tw)
{
    for (int64_t i = 1, j = 0; i < m; i++) {
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double r = a[2 * i], s = a[2 * i + 1];
            a[2 * i] = a[2 * j], a[2 * i + 1] = a[2 * j + 1];
            a[2 * j] = r, a[2 * j + 1] = s;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len >> 1, step = m / len;
        for (int64_t b = 0; b < m; b += len)
            for (int64_t k = 0; k < half; k++) {
                double wr = tw[2 * k * step], wi = tw[2 * k * step + 1];
                double *u = a + 2 * (b + k), *v = a + 2 * (b + k + half);
                double xr = v[0] * wr - v[1] * wi, xi = v[0] * wi + v[1] * wr;
                v[0] = u[0] - xr, v[1] = u[1] - xi;
                u[0] += xr, u[1] += xi;
            }
    }
}

/* The float transform's factors of n: 4s, then a 2 (first), then odd
 * factors in increasing order; 0 when one exceeds BD_FFTF_MAX_FACTOR. */
static inline BD_HOST_DEVICE int bd_fftf_factor(int64_t n, int64_t *fct, int *nf)
{
    int k = 0;
    int64_t len = n;
    while (len % 4 == 0) fct[k++] = 4, len /= 4;
    if (len % 2 == 0) {
        len /= 2;
        fct[k++] = 2;
        int64_t t = fct[0]; fct[0] = fct[k - 1]; fct[k - 1] = t;
    }
    for (int64_t d = 3; d * d <= len; d += 2)
        while (len % d == 0) fct[k++] = d, len /= d;
    if (len > 1) fct[k++] = len;
    *nf = k;
    for (int i = 0; i < k; i++)
        if (fct[i] > BD_FFTF_MAX_FACTOR) return 0;
    return n >= 1;
}

/* c = a * w (backward) or a * conj(w) (forward), in float. */
static inline BD_HOST_DEVICE void bd_fftf_twmul(float *c, float ar, float ai, float wr, float wi, int fwd)
{
    if (fwd) c[0] = ar * wr + ai * wi, c[1] = ai * wr - ar * wi;
    else c[0] = ar * wr - ai * wi, c[1] = ar * wi + ai * wr;
}

/* One pass of factor ip over l1 finished blocks of ido points: the ip-point
 * DFT of the inputs ido apart, outputs u > 0 turned by exp(-+2 pi i u l1 i / n). */
static inline BD_HOST_DEVICE void bd_fftf_pass(int64_t ip, int64_t l1, int64_t ido, int64_t n, const float *cc,
                                               float *ch, const float *tw, int fwd)
{
    const float sg = fwd ? -1.0f : 1.0f;
    const float c3i = sg * 0.86602540378443864676f;
    const float c5r1 = 0.3090169943749474241f, c5i1 = sg * 0.95105651629515357212f;
    const float c5r2 = -0.8090169943749474241f, c5i2 = sg * 0.58778525229247312917f;
    float a[2 * BD_FFTF_MAX_FACTOR], b[2 * BD_FFTF_MAX_FACTOR];
    for (int64_t k = 0; k < l1; k++)
        for (int64_t i = 0; i < ido; i++) {
            for (int64_t m = 0; m < ip; m++) {
                const float *src = cc + 2 * (i + ido * (m + ip * k));
                a[2 * m] = src[0], a[2 * m + 1] = src[1];
            }
            if (ip == 2) {
                b[0] = a[0] + a[2], b[1] = a[1] + a[3];
                b[2] = a[0] - a[2], b[3] = a[1] - a[3];
            } else if (ip == 4) {
                float t2r = a[0] + a[4], t2i = a[1] + a[5], t1r = a[0] - a[4], t1i = a[1] - a[5];
                float t3r = a[2] + a[6], t3i = a[3] + a[7], t4r = a[2] - a[6], t4i = a[3] - a[7];
                float rr = fwd ? t4i : -t4i, ri = fwd ? -t4r : t4r; /* t4 turned a quarter */
                b[0] = t2r + t3r, b[1] = t2i + t3i, b[4] = t2r - t3r, b[5] = t2i - t3i;
                b[2] = t1r + rr, b[3] = t1i + ri, b[6] = t1r - rr, b[7] = t1i - ri;
            } else if (ip == 3) {
                float t1r = a[2] + a[4], t1i = a[3] + a[5], t2r = a[2] - a[4], t2i = a[3] - a[5];
                b[0] = a[0] + t1r, b[1] = a[1] + t1i;
                float car = a[0] + -0.5f * t1r, cai = a[1] + -0.5f * t1i;
                float cbi = c3i * t2r, cbr = -(c3i * t2i);
                b[2] = car + cbr, b[3] = cai + cbi, b[4] = car - cbr, b[5] = cai - cbi;
            } else if (ip == 5) {
                float t0r = a[0], t0i = a[1];
                float t1r = a[2] + a[8], t1i = a[3] + a[9], t4r = a[2] - a[8], t4i = a[3] - a[9];
                float t2r = a[4] + a[6], t2i = a[5] + a[7], t3r = a[4] - a[6], t3i = a[5] - a[7];
                b[0] = t0r + t1r + t2r, b[1] = t0i + t1i + t2i;
                for (int h = 0; h < 2; h++) { /* outputs (1, 4), then (2, 3) */
                    float xr = h ? c5r2 : c5r1, yr = h ? c5r1 : c5r2, xi = h ? c5i2 : c5i1, yi = h ? -c5i1 : c5i2;
                    float car = t0r + xr * t1r + yr * t2r, cai = t0i + xr * t1i + yr * t2i;
                    float cbi = xi * t4r + yi * t3r, cbr = -(xi * t4i + yi * t3i);
                    int u1 = h ? 2 : 1, u2 = h ? 3 : 4;
                    b[2 * u1] = car + cbr, b[2 * u1 + 1] = cai + cbi;
                    b[2 * u2] = car - cbr, b[2 * u2 + 1] = cai - cbi;
                }
            } else { /* any odd factor: the direct sum */
                const int64_t step = n / ip;
                for (int64_t u = 0; u < ip; u++) {
                    float sr = a[0], si = a[1];
                    for (int64_t m = 1; m < ip; m++) {
                        const float *w = tw + 2 * (((u * m) % ip) * step);
                        float t[2];
                        bd_fftf_twmul(t, a[2 * m], a[2 * m + 1], w[0], w[1], fwd);
                        sr += t[0], si += t[1];
                    }
                    b[2 * u] = sr, b[2 * u + 1] = si;
                }
            }
            for (int64_t u = 0; u < ip; u++) {
                float *dst = ch + 2 * (i + ido * (k + l1 * u));
                if (u == 0 || i == 0) dst[0] = b[2 * u], dst[1] = b[2 * u + 1];
                else {
                    const float *w = tw + 2 * ((u * l1 * i) % n);
                    bd_fftf_twmul(dst, b[2 * u], b[2 * u + 1], w[0], w[1], fwd);
                }
            }
        }
}

/* In place: the forward (fwd) or backward DFT of a (n complex floats),
 * unscaled; scratch holds n complex floats. */
static inline BD_HOST_DEVICE void bd_fftf(const bd_fft_plan *p, float *a, float *scratch, int fwd)
{
    float *p1 = a, *p2 = scratch;
    int64_t l1 = 1;
    for (int f = 0; f < p->nf; f++) {
        const int64_t ip = p->fct[f], l2 = ip * l1, ido = p->n / l2;
        bd_fftf_pass(ip, l1, ido, p->n, p1, p2, p->twf, fwd);
        float *t = p1; p1 = p2; p2 = t;
        l1 = l2;
    }
    if (p1 != a)
        for (int64_t k = 0; k < 2 * p->n; k++) a[k] = p1[k];
}

/* Points a plan at its tables (bd_fft_table_doubles(n) doubles) without
 * filling them: for tables filled elsewhere (the host's copy uploaded). */
static inline BD_HOST_DEVICE void bd_fft_plan_bind(bd_fft_plan *p, int64_t n, double *table)
{
    p->n = n;
    p->m = bd_fft_length(n);
    p->bluestein = p->m != n;
    p->tw = table;
    p->chirp = p->bluestein ? table + p->m : 0;
    p->filt = p->bluestein ? table + p->m + 2 * n : 0;
    p->twf = (const float *)(table + p->m + (p->bluestein ? 2 * n + 2 * p->m : 0));
    p->f32 = bd_fftf_factor(n, p->fct, &p->nf);
}

/* Fills a plan's tables (table: bd_fft_table_doubles(n) doubles). Host and device. */
static inline BD_HOST_DEVICE void bd_fft_plan_fill(bd_fft_plan *p, int64_t n, double *table)
{
    bd_fft_plan_bind(p, n, table);
    double *tw = table;
    for (int64_t j = 0; j < p->m / 2; j++) bd_fft_twiddle(j, p->m, &tw[2 * j], &tw[2 * j + 1]);
    float *twf = (float *)p->twf;
    for (int64_t j = 0; j < n; j++) {
        double c, s;
        bd_sincos_2pi(j, n, &c, &s);
        twf[2 * j] = (float)c, twf[2 * j + 1] = (float)s;
    }
    if (!p->bluestein) return;
    double *chirp = (double *)p->chirp, *filt = (double *)p->filt;
    for (int64_t k = 0; k < n; k++) bd_fft_chirp(k, n, &chirp[2 * k], &chirp[2 * k + 1]);
    for (int64_t k = 0; k < 2 * p->m; k++) filt[k] = 0.0;
    for (int64_t k = 0; k < n; k++) { /* b[k] = b[m - k] = conj(chirp[k]) */
        filt[2 * k] = chirp[2 * k], filt[2 * k + 1] = -chirp[2 * k + 1];
        if (k) filt[2 * (p->m - k)] = chirp[2 * k], filt[2 * (p->m - k) + 1] = -chirp[2 * k + 1];
    }
    bd_fft_pow2(filt, p->m, tw);
    for (int64_t k = 0; k < 2 * p->m; k++) filt[k] /= (double)p->m;
}

/* In-place forward DFT of length n of a (the plan's m complex of room; the
 * first n hold the signal). */
static inline BD_HOST_DEVICE void bd_fft(const bd_fft_plan *p, double *a)
{
    if (!p->bluestein) {
        if (p->n > 1) bd_fft_pow2(a, p->n, p->tw);
        return;
    }
    const int64_t n = p->n, m = p->m;
    for (int64_t k = 0; k < n; k++) {
        double xr = a[2 * k], xi = a[2 * k + 1], cr = p->chirp[2 * k], ci = p->chirp[2 * k + 1];
        a[2 * k] = xr * cr - xi * ci, a[2 * k + 1] = xr * ci + xi * cr;
    }
    for (int64_t k = 2 * n; k < 2 * m; k++) a[k] = 0.0;
    bd_fft_pow2(a, m, p->tw);
    /* times the filter, then the inverse FFT as conj(FFT(conj(.))) */
    for (int64_t k = 0; k < m; k++) {
        double xr = a[2 * k], xi = a[2 * k + 1], fr = p->filt[2 * k], fi = p->filt[2 * k + 1];
        a[2 * k] = xr * fr - xi * fi, a[2 * k + 1] = -(xr * fi + xi * fr);
    }
    bd_fft_pow2(a, m, p->tw);
    for (int64_t k = 0; k < n; k++) {
        double xr = a[2 * k], xi = -a[2 * k + 1], cr = p->chirp[2 * k], ci = p->chirp[2 * k + 1];
        a[2 * k] = xr * cr - xi * ci, a[2 * k + 1] = xr * ci + xi * cr;
    }
}

/* ---- DFT and STFT lines -------------------------------------------------- */

/* Where the lines of a DFT or an STFT lie. A line reads `len` complex (or
 * real, in_c = 1) values from x at src + t * src_stride (t < len; zeros past
 * it up to n), optionally times a window, and writes n_out values of out_c
 * (2 complex, 1 real) to y at dst + k * dst_stride. */
typedef struct bd_dft_geom {
    int stft;
    int64_t lines;
    int64_t inner;       /* DFT: the product of the dims after the axis (not the complex dim) */
    int64_t L;           /* DFT: the axis's length; STFT: the signal length */
    int64_t len;         /* values read per line */
    int64_t n;           /* the transform's length */
    int64_t n_out;       /* values written per line */
    int64_t frames, step; /* STFT */
    int in_c, out_c;
    int inverse, irfft;  /* irfft: the input is one-sided, the output real */
} bd_dft_geom;

/* The longest transform: Bluestein's tables for it take about 1 GiB. */
#define BD_DFT_MAX_LENGTH (1LL << 25)

/* The geometry of a DFT or STFT node from its inputs (n_in of them; dft_length,
 * axis and frame_length need data), and its output's dims. */
braid_status bd_dft_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_dft_geom *g, int64_t *out_dims,
                             int *out_rank, bd_err *e);

static inline BD_HOST_DEVICE void bd_dft_line_at(const bd_dft_geom *g, int64_t line, int64_t *src,
                                                 int64_t *src_stride, int64_t *dst, int64_t *dst_stride)
{
    if (g->stft) {
        int64_t b = line / g->frames, f = line - b * g->frames;
        *src = (b * g->L + f * g->step) * g->in_c;
        *src_stride = g->in_c;
        *dst = line * g->n_out * g->out_c;
        *dst_stride = g->out_c;
        return;
    }
    int64_t o = line / g->inner, i = line - o * g->inner;
    *src = (o * g->L * g->inner + i) * g->in_c;
    *src_stride = g->inner * g->in_c;
    *dst = (o * g->n_out * g->inner + i) * g->out_c;
    *dst_stride = g->inner * g->out_c;
}

/* One line: x and y of dtype dt (window too, or NULL), buf of the plan's m
 * complex. Precision follows numpy, which makes onnx's reference and the
 * tests' data: an inverse float32 transform runs in float32 (numpy's ifft of
 * complex64 does: the float transform, unscaled, then times the float 1 / n);
 * every other one in double (numpy's fft of complex64 computes in double):
 * there the inverse is conj(DFT(conj(.))) / n, and an IRFFT first rebuilds
 * the full spectrum from its n / 2 + 1 bins by conjugate symmetry. */
static inline BD_HOST_DEVICE void bd_dft_line(const bd_dft_geom *g, const bd_fft_plan *p, int64_t line,
                                              const void *x, const void *window, void *y, int dt, double *buf)
{
    int64_t src, ss, dst, ds;
    bd_dft_line_at(g, line, &src, &ss, &dst, &ds);
    const int64_t n = g->n;
    if (dt == BRAID_DTYPE_FLOAT && p->f32 && g->inverse && !g->irfft) {
        const float *xf = (const float *)x, *wf = (const float *)window;
        float *fa = (float *)buf, *fs = fa + 2 * n;
        for (int64_t t = 0; t < n; t++) {
            float re = 0.0f, im = 0.0f;
            if (t < g->len) {
                re = xf[src + t * ss];
                im = g->in_c == 2 ? xf[src + t * ss + 1] : 0.0f;
                if (wf) re *= wf[t], im *= wf[t];
            }
            fa[2 * t] = re, fa[2 * t + 1] = im;
        }
        bd_fftf(p, fa, fs, !g->inverse);
        const float fct = (float)(1.0 / (double)n);
        float *yf = (float *)y;
        for (int64_t k = 0; k < g->n_out; k++) {
            yf[dst + k * ds] = g->inverse ? fa[2 * k] * fct : fa[2 * k];
            if (g->out_c == 2) yf[dst + k * ds + 1] = g->inverse ? fa[2 * k + 1] * fct : fa[2 * k + 1];
        }
        return;
    }
    const double sign = g->inverse ? -1.0 : 1.0;
    for (int64_t t = 0; t < n; t++) {
        double re = 0.0, im = 0.0;
        int64_t from = g->irfft && t > n / 2 ? n - t : t; /* the bin whose conjugate this is */
        if (from < g->len) {
            re = bd_sig_load(x, dt, src + from * ss);
            im = g->in_c == 2 ? bd_sig_load(x, dt, src + from * ss + 1) : 0.0;
            if (window) {
                double w = bd_sig_load(window, dt, t);
                re *= w, im *= w;
            }
        }
        if (from != t) im = -im;
        buf[2 * t] = re, buf[2 * t + 1] = sign * im;
    }
    bd_fft(p, buf);
    const double scale = g->inverse ? 1.0 / (double)n : 1.0;
    for (int64_t k = 0; k < g->n_out; k++) {
        bd_sig_store(y, dt, dst + k * ds, buf[2 * k] * scale);
        if (g->out_c == 2) bd_sig_store(y, dt, dst + k * ds + 1, sign * buf[2 * k + 1] * scale);
    }
}

#endif /* BD_SIGNAL_H */
