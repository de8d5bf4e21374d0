/* convepi.h: the epilogue of a convolution's sums in 16 AVX-512 lanes (bias,
 * residual and activation as bd_conv_epilogue computes them, lane by lane),
 * shared by the convolution kernels of conv.c and convdirect.c. */
#ifndef BD_CPU_CONVEPI_H
#define BD_CPU_CONVEPI_H

#include "ops/conv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Lanes i in [0, 16) with 0 <= c + i < n: the lanes of a vector starting at
 * column c that fall in a row of n (the kernels' masked loads and stores). */
static inline __mmask16 pg_lanes16(int64_t c, int64_t n)
{
    int64_t a = BD_MAX(-c, (int64_t)0), b = BD_MIN(n - c, (int64_t)16);
    if (b <= a) return 0;
    return (__mmask16)((((uint32_t)1 << b) - 1) & ~(((uint32_t)1 << a) - 1));
}

/* e^x in 16 lanes (conv.c's pg_exp8 in AVX-512). */
__attribute__((target("avx512f"))) static inline __m512 pg_exp16(__m512 x)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f), lo = _mm512_set1_ps(-104.0f), hi = _mm512_set1_ps(89.0f);
    x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ), x, lo);
    x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ), x, hi);
    __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), magic);
    __m512i n = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(magic));
    __m512 nf = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(nf, _mm512_set1_ps(0.693359375f)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(nf, _mm512_set1_ps(-2.12194440e-4f)));
    __m512 q = _mm512_set1_ps(1.9875691500e-4f);
    q = _mm512_add_ps(_mm512_mul_ps(q, r), _mm512_set1_ps(1.3981999507e-3f));
    q = _mm512_add_ps(_mm512_mul_ps(q, r), _mm512_set1_ps(8.3334519073e-3f));
    q = _mm512_add_ps(_mm512_mul_ps(q, r), _mm512_set1_ps(4.1665795894e-2f));
    q = _mm512_add_ps(_mm512_mul_ps(q, r), _mm512_set1_ps(1.6666665459e-1f));
    q = _mm512_add_ps(_mm512_mul_ps(q, r), _mm512_set1_ps(5.0000001201e-1f));
    q = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(q, r), r), r), _mm512_set1_ps(1.0f));
    __m512i n1 = _mm512_srai_epi32(_mm512_add_epi32(n, _mm512_srli_epi32(n, 31)), 1), n2 = _mm512_sub_epi32(n, n1);
    const __m512i bias = _mm512_set1_epi32(127);
    __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
    __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
    return _mm512_mul_ps(_mm512_mul_ps(q, s1), s2);
}

/* HardSwish (u = v / 6 + 1/2 clamped to [0, 1], then v u) or HardSigmoid
 * (u = aa v + ab clamped, hsig) in 16 lanes: NaN goes through (a compare
 * with NaN is false, so the blends keep it). Inlined into the kernels'
 * epilogues, where a call per vector cost more than a short tile's FMAs. */
__attribute__((target("avx512f"), always_inline)) static inline __m512 pg_hard16(__m512 v, int hsig, __m512 aa,
                                                                             __m512 ab)
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    __m512 u = hsig ? _mm512_add_ps(_mm512_mul_ps(aa, v), ab)
                    : _mm512_add_ps(_mm512_mul_ps(v, _mm512_set1_ps((float)(1.0 / 6.0))), _mm512_set1_ps(0.5f));
    u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, zero, _CMP_LT_OQ), u, zero);
    u = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(u, one, _CMP_GT_OQ), u, one);
    return hsig ? u : _mm512_mul_ps(v, u);
}

/* The epilogue of 16 sums v: NaN goes through as the scalar code lets it; z
 * is read under mask only when res is set. */
__attribute__((target("avx512f"))) static inline __m512 pg_epi16(__m512 v, __m512 bias, const float *z, __mmask16 mask,
                                                                int act, __m512 aa, __m512 ab, int res)
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    v = _mm512_add_ps(v, bias);
    if (res == BD_RES_PRE) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, z));
    switch (act) {
    case BD_ACT_RELU: v = _mm512_max_ps(v, zero); break; /* NaN -> 0, as v > 0 ? v : 0 */
    case BD_ACT_LEAKY: v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, zero, _CMP_GE_OQ), _mm512_mul_ps(v, aa), v); break;
    case BD_ACT_CLIP:
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, aa, _CMP_LT_OQ), v, aa);
        v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, ab, _CMP_GT_OQ), v, ab);
        break;
    case BD_ACT_HSIGMOID:
    case BD_ACT_HSWISH: v = pg_hard16(v, act == BD_ACT_HSIGMOID, aa, ab); break;
    case BD_ACT_SIGMOID:
    case BD_ACT_SILU: {
        __m512 sg = _mm512_div_ps(one, _mm512_add_ps(one, pg_exp16(_mm512_sub_ps(zero, v))));
        v = act == BD_ACT_SILU ? _mm512_mul_ps(v, sg) : sg;
        break;
    }
    default: break;
    }
    if (res == BD_RES_POST) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, z));
    return v;
}

#endif

#endif /* BD_CPU_CONVEPI_H */
