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

/* The tables of a transform of length n: m = n when n is a power of two,
 * else Bluestein's length (the power of two >= 2n - 1). All complex values are
 * interleaved (re, im) doubles.
 *   tw     (m / 2): exp(-2 pi i j / m)
 *   chirp  (n): exp(-pi i k^2 / n)                 (Bluestein only)
 *   filt   (m): FFT of the conjugate chirp, over m (Bluestein only) */
typedef struct bd_fft_plan {
    int64_t n, m;
    int bluestein;
    const double *tw, *chirp, *filt;
} bd_fft_plan;

static inline BD_HOST_DEVICE int64_t bd_fft_length(int64_t n)
{
    int64_t m = 1;
    if (n > 0 && (n & (n - 1)) == 0) return n;
    while (m < 2 * n - 1) m <<= 1;
    return m;
}

/* Doubles the plan's tables take: tw, then chirp and filt when Bluestein. */
static inline BD_HOST_DEVICE int64_t bd_fft_table_doubles(int64_t n)
{
    int64_t m = bd_fft_length(n);
    return m + (m != n ? 2 * n + 2 * m : 0);
}

/* exp(-2 pi i j / m) and exp(-pi i k^2 / n), angles reduced exactly first. */
static inline BD_HOST_DEVICE void bd_fft_twiddle(int64_t j, int64_t m, double *re, double *im)
{
    double a = -2.0 * 3.14159265358979323846 * (double)j / (double)m;
    *re = cos(a), *im = sin(a);
}
static inline BD_HOST_DEVICE void bd_fft_chirp(int64_t k, int64_t n, double *re, double *im)
{
    int64_t q = (int64_t)(((unsigned long long)k * (unsigned long long)k) % (unsigned long long)(2 * n));
    double a = -3.14159265358979323846 * (double)q / (double)n;
    *re = cos(a), *im = sin(a);
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

/* Fills a plan's tables (table: bd_fft_table_doubles(n) doubles; scratch for
 * Bluestein's filter is its own filt region). Host and device. */
static inline BD_HOST_DEVICE void bd_fft_plan_fill(bd_fft_plan *p, int64_t n, double *table)
{
    p->n = n;
    p->m = bd_fft_length(n);
    p->bluestein = p->m != n;
    double *tw = table;
    for (int64_t j = 0; j < p->m / 2; j++) bd_fft_twiddle(j, p->m, &tw[2 * j], &tw[2 * j + 1]);
    p->tw = tw;
    p->chirp = p->filt = 0;
    if (!p->bluestein) return;
    double *chirp = table + p->m, *filt = chirp + 2 * n;
    for (int64_t k = 0; k < n; k++) bd_fft_chirp(k, n, &chirp[2 * k], &chirp[2 * k + 1]);
    for (int64_t k = 0; k < 2 * p->m; k++) filt[k] = 0.0;
    for (int64_t k = 0; k < n; k++) { /* b[k] = b[m - k] = conj(chirp[k]) */
        filt[2 * k] = chirp[2 * k], filt[2 * k + 1] = -chirp[2 * k + 1];
        if (k) filt[2 * (p->m - k)] = chirp[2 * k], filt[2 * (p->m - k) + 1] = -chirp[2 * k + 1];
    }
    bd_fft_pow2(filt, p->m, tw);
    for (int64_t k = 0; k < 2 * p->m; k++) filt[k] /= (double)p->m;
    p->chirp = chirp;
    p->filt = filt;
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
 * complex. The inverse is conj(DFT(conj(.))) / n; an IRFFT first rebuilds the
 * full spectrum from its n / 2 + 1 bins by conjugate symmetry. */
static inline BD_HOST_DEVICE void bd_dft_line(const bd_dft_geom *g, const bd_fft_plan *p, int64_t line,
                                              const void *x, const void *window, void *y, int dt, double *buf)
{
    int64_t src, ss, dst, ds;
    bd_dft_line_at(g, line, &src, &ss, &dst, &ds);
    const int64_t n = g->n;
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
