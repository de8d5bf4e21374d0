/* vrow.h: the max and min of a contiguous float32 or float64 row that keep a
 * NaN once seen (ops/reduce.h's BD_RED_MAX2), in 8 lanes written with GCC's
 * vector extensions: GCC does not vectorize that select from plain C (it
 * does the plain sums), and the reductions, softmax and the norms need it at
 * memory speed. The lanes are folded in a fixed order, so the result does not
 * depend on how rows are split over threads. */
#ifndef BD_VROW_H
#define BD_VROW_H

#include <stdint.h>
#include <string.h>

#include "ops/reduce.h"

#if defined(__GNUC__)
typedef float bd_v4f __attribute__((vector_size(16)));
typedef int32_t bd_v4i __attribute__((vector_size(16)));
typedef double bd_v2d __attribute__((vector_size(16)));
typedef int64_t bd_v2l __attribute__((vector_size(16)));

/* b where it is larger (is_min 0) or smaller (1) than a, or NaN; else a. */
#define BD_VSEL(VT, IT, a, b, is_min)                                                              \
    ({                                                                                             \
        IT m_ = ((is_min) ? (IT)((b) < (a)) : (IT)((b) > (a))) | (IT)((b) != (b));                 \
        (VT)(((IT)(b) & m_) | ((IT)(a) & ~m_));                                                    \
    })

#define BD_DEF_ROW_EXT(NAME, T, VT, IT, W)                                                         \
    static inline T NAME(const T *x, int64_t n, T a, int is_min)                                  \
    {                                                                                              \
        VT l0, l1;                                                                                 \
        int64_t i = 0;                                                                             \
        for (int q = 0; q < W; q++) l0[q] = l1[q] = a;                                             \
        for (; i + 2 * W <= n; i += 2 * W) {                                                       \
            VT v0, v1;                                                                             \
            memcpy(&v0, x + i, sizeof v0);                                                         \
            memcpy(&v1, x + i + W, sizeof v1);                                                     \
            l0 = BD_VSEL(VT, IT, l0, v0, is_min);                                                  \
            l1 = BD_VSEL(VT, IT, l1, v1, is_min);                                                  \
        }                                                                                          \
        for (; i < n; i++) a = is_min ? BD_RED_MIN2(a, x[i]) : BD_RED_MAX2(a, x[i]);               \
        for (int q = 0; q < W; q++) {                                                              \
            a = is_min ? BD_RED_MIN2(a, l0[q]) : BD_RED_MAX2(a, l0[q]);                            \
            a = is_min ? BD_RED_MIN2(a, l1[q]) : BD_RED_MAX2(a, l1[q]);                            \
        }                                                                                          \
        return a;                                                                                  \
    }
BD_DEF_ROW_EXT(bd_row_extf, float, bd_v4f, bd_v4i, 4)
BD_DEF_ROW_EXT(bd_row_extd, double, bd_v2d, bd_v2l, 2)
#else
#define BD_DEF_ROW_EXT(NAME, T)                                                                    \
    static inline T NAME(const T *x, int64_t n, T a, int is_min)                                  \
    {                                                                                              \
        for (int64_t i = 0; i < n; i++) a = is_min ? BD_RED_MIN2(a, x[i]) : BD_RED_MAX2(a, x[i]);  \
        return a;                                                                                  \
    }
BD_DEF_ROW_EXT(bd_row_extf, float)
BD_DEF_ROW_EXT(bd_row_extd, double)
#endif

#endif /* BD_VROW_H */
