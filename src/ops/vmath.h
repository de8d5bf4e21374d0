/* vmath.h: branch-free float32 exp, expm1, log, log1p, sigmoid, tanh, erf
 * and the normal CDF that GCC vectorizes inside flat loops (libm's are scalar calls,
 * 10-20 ns each); host/device, so the CUDA kernels compute the same formulas.
 * Accuracy, checked against libm in double by tests/unit/test_unary.c and
 * test_activation.c: exp, expm1, log, log1p and sigmoid within 4 ulp; tanh
 * and erf (rational fits) within 7 ulp (4e-7 relative); the normal CDF
 * within 2e-6 relative down to x = -9. Inf and NaN behave as in libm. Every function is branch-free (selects), so a vector lane and the
 * scalar tail of a loop run the same operations. */
#ifndef BD_VMATH_H
#define BD_VMATH_H

#include <stdint.h>

#include "util/dtype.h"

/* e^x: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite, two-part ln2), e^r by
 * Cephes' degree-6 polynomial, 2^n applied as two factors so that subnormal
 * results and overflow to inf come out right. */
static inline BD_HOST_DEVICE float bd_vexpf(float x)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    x = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x; /* beyond: 0 and inf; NaN passes */
    float t = x * 1.44269504088896341f + magic;
    int32_t n = (int32_t)(bd_f32_bits(t) - bd_f32_bits(magic));
    float nf = t - magic;
    float r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t n1 = n / 2, n2 = n - n1;
    return p * bd_bits_f32((uint32_t)(n1 + 127) << 23) * bd_bits_f32((uint32_t)(n2 + 127) << 23);
}

/* e^x - 1: its Taylor series to x^9 where |x| < ln2 / 2 (truncation below
 * 2e-10 relative), else e^x - 1, which has no cancellation there. */
static inline BD_HOST_DEVICE float bd_vexpm1f(float x)
{
    float p = 1.0f / 362880.0f;
    p = p * x + 1.0f / 40320.0f;
    p = p * x + 1.0f / 5040.0f;
    p = p * x + 1.0f / 720.0f;
    p = p * x + 1.0f / 120.0f;
    p = p * x + 1.0f / 24.0f;
    p = p * x + 1.0f / 6.0f;
    p = p * x + 0.5f;
    float small = x + x * x * p; /* keeps -0 */
    float big = bd_vexpf(x) - 1.0f;
    float a = x < 0 ? -x : x;
    return a < 0.34657359f ? small : big;
}

/* ln x (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln(1 + f)
 * by a degree-9 polynomial, e ln2 added in two parts. Subnormals are scaled
 * first; 0 gives -inf, negatives NaN, inf and NaN themselves. */
static inline BD_HOST_DEVICE float bd_vlogf(float x)
{
    int sub = x < 1.17549435e-38f;
    float xs = sub ? x * 8388608.0f : x; /* 2^23 */
    uint32_t u = bd_f32_bits(xs);
    int32_t e = (int32_t)((u >> 23) & 0xffu) - 127 - (sub ? 23 : 0);
    float m = bd_bits_f32((u & 0x7fffffu) | 0x3f800000u); /* [1, 2) */
    int up = m > 1.41421356f;
    m = up ? m * 0.5f : m;
    float ef = (float)(e + up);
    float f = m - 1.0f, z = f * f;
    float p = 7.0376836292e-2f;
    p = p * f - 1.1514610310e-1f;
    p = p * f + 1.1676998740e-1f;
    p = p * f - 1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f;
    p = p * f - 1.6668057665e-1f;
    p = p * f + 2.0000714765e-1f;
    p = p * f - 2.4999993993e-1f;
    p = p * f + 3.3333331174e-1f;
    float y = f * z * p;
    y = y + ef * -2.12194440e-4f;
    y = y - 0.5f * z;
    float r = f + y + ef * 0.693359375f;
    r = x == 0.0f ? bd_bits_f32(0xff800000u) : r;      /* -inf */
    r = x < 0.0f ? bd_bits_f32(0x7fc00000u) : r;       /* NaN */
    r = x == bd_bits_f32(0x7f800000u) ? x : r;         /* inf */
    return x != x ? x : r;
}

/* ln(1 + x), accurate near 0: with u = 1 + x rounded, ln(u) * x / (u - 1)
 * cancels the rounding of u (Goldberg); u == 1 means ln(1 + x) = x. */
static inline BD_HOST_DEVICE float bd_vlog1pf(float x)
{
    float u = 1.0f + x, d = u - 1.0f;
    float r = bd_vlogf(u) * (x / (d == 0.0f ? 1.0f : d));
    r = d == 0.0f ? x : r;
    return x == bd_bits_f32(0x7f800000u) ? x : r;
}

static inline BD_HOST_DEVICE float bd_vsigmoidf(float x) { return 1.0f / (1.0f + bd_vexpf(-x)); }

/* tanh: x P(x^2) / Q(x^2) on [-9, 9] (beyond, +-1 in float32), a rational
 * fit braid made for this (Loeb's iterated least squares, relative error
 * weighted; the fit alone is within 0.5 ulp, the float evaluation brings it
 * to 6). One division and 9 multiply-adds, where exp-based forms need two
 * branches. */
static inline BD_HOST_DEVICE float bd_vtanhf(float x)
{
    float a = x < 9.0f ? x : 9.0f;
    a = a > -9.0f ? a : -9.0f;
    float z = a * a;
    float p = -1.2648372800516672e-11f;
    p = p * z + 3.119204805557274e-08f;
    p = p * z + 2.8262116757105105e-05f;
    p = p * z + 0.0038810097612440586f;
    p = p * z + 0.13690051436424255f;
    p = p * z + 1.0f;
    float q = 1.3050894267507829e-06f;
    q = q * z + 0.0003960948088206351f;
    q = q * z + 0.027292301878333092f;
    q = q * z + 0.47023382782936096f;
    q = q * z + 1.0f;
    float r = a * p / q;
    r = r > 1.0f ? 1.0f : r < -1.0f ? -1.0f : r;
    return x != x ? x : r;
}

/* Phi(x), the standard normal CDF (GELU's gate), accurate in both tails:
 * Phi(-a) = exp(-a^2 / 2) R(a) for a = |x| with R(a) = P(a) / Q(a) a rational
 * fit of Phi(-a) exp(a^2 / 2) on [0, 13] (made for braid as bd_vtanhf's,
 * within 2e-8), and Phi(x) = 1 - Phi(-x) above 0. The float a^2 in the
 * exponent keeps it within 2e-6 relative to x = -9 (Phi = 1e-19). */
static inline BD_HOST_DEVICE float bd_vnormcdff(float x)
{
    float a = x < 0 ? -x : x;
    float b = a < 13.0f ? a : 13.0f; /* R is flat beyond, and exp(-a^2 / 2) goes to 0 */
    float p = 0.004055089317262173f;
    p = p * b + 0.04020173102617264f;
    p = p * b + 0.1819210797548294f;
    p = p * b + 0.4364633560180664f;
    p = p * b + 0.5f;
    float q = 0.010164458304643631f;
    q = q * b + 0.10077813267707825f;
    q = q * b + 0.4660094082355499f;
    q = q * b + 1.19695246219635f;
    q = q * b + 1.670811653137207f;
    q = q * b + 1.0f;
    float t = bd_vexpf(-0.5f * a * a) * p / q; /* Phi(-a) */
    float r = x < 0 ? t : 1.0f - t;
    return x != x ? x : r;
}

/* erf: x P(x^2) / Q(x^2) on [-3.92, 3.92] (beyond, +-1 in float32),
 * fitted as bd_vtanhf's (the fit within 0.9 ulp, 7 ulp with the float
 * evaluation): 12 multiply-adds and a division. */
static inline BD_HOST_DEVICE float bd_verff(float x)
{
    float a = x < 3.92f ? x : 3.92f;
    a = a > -3.92f ? a : -3.92f;
    float z = a * a;
    float p = -1.3031124623807955e-08f;
    p = p * z + 4.651568360714009e-06f;
    p = p * z + 0.00037844444159418344f;
    p = p * z + 0.0038484265096485615f;
    p = p * z + 0.05429646745324135f;
    p = p * z + 0.1852596402168274f;
    p = p * z + 1.128379225730896f;
    float q = 6.279935769271106e-05f;
    q = q * z + 0.0013057896867394447f;
    q = q * z + 0.015455438755452633f;
    q = q * z + 0.11395704001188278f;
    q = q * z + 0.497515469789505f;
    q = q * z + 1.0f;
    float r = a * p / q;
    r = r > 1.0f ? 1.0f : r;
    r = r < -1.0f ? -1.0f : r;
    r = x >= 3.92f ? 1.0f : r; /* selects, not ||: a short circuit would stop the vectorizer */
    r = x <= -3.92f ? -1.0f : r;
    return x != x ? x : r;
}

#endif /* BD_VMATH_H */
