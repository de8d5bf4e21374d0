/* binary.h: the parsed attributes of the binary op family (n->params), the
 * view under which an input is broadcast in the old forms (opset < 7 'axis',
 * PRelu's per-channel slope), and the element formulas that are more than
 * an operator (Mod, BitShift, integer Pow, NaN-propagating Max/Min), host/
 * device, shared by the CPU and CUDA kernels. */
#ifndef BD_BINARY_H
#define BD_BINARY_H

#include <math.h>
#include <stdint.h>

#include "ops/ops.h"

typedef struct bd_binary_params {
    int fmod;       /* Mod: 1 truncates (C fmod), 0 floors (Python %) */
    int shift_left; /* BitShift: direction "LEFT" */
    int legacy;     /* opset < 7 form of an op that had 'broadcast' */
    int broadcast;  /* its 'broadcast' attribute */
    int has_axis;   /* its 'axis' attribute is set */
    int64_t axis;
} bd_binary_params;

/* 1 when b broadcasts into a's shape (numpy rules, a unchanged). */
static inline int bd_binary_into(const bd_tensor *a, const bd_tensor *b)
{
    if (b->rank > a->rank) return 0;
    for (int d = 1; d <= b->rank; d++) {
        int64_t x = a->dims[a->rank - d], y = b->dims[b->rank - d];
        if (y != x && y != 1) return 0;
    }
    return 1;
}

/* The shape under which input b (the second) is broadcast against a: an old
 * binary op's B placed at 'axis' of A (broadcast=1), or PRelu's 1-D slope of
 * C values placed on the axis of A that has C entries when numpy rules do not
 * apply (before opset 7: the channel axis 1; later, as onnx's reference, the
 * one axis of that size). Returns 1 and sets *v (b's data, a's rank) when b
 * is viewed so, 0 when b is used as it is. Shapes are checked by infer. */
static inline int bd_binary_view(const bd_node *n, const bd_tensor *a, const bd_tensor *b, bd_tensor *v)
{
    const bd_binary_params *p = (const bd_binary_params *)n->params;
    int axis = -1;
    if (a->rank < 0 || b->rank < 0) return 0;
    if (p && p->legacy && p->broadcast && p->has_axis) {
        axis = (int)(p->axis < 0 ? p->axis + a->rank : p->axis);
    } else if (n->op == BD_OP_PRelu && b->rank == 1 && a->rank >= 2 && b->dims[0] != 1) {
        if (n->opset < 7 && a->dims[1] == b->dims[0]) {
            axis = 1;
        } else if (!bd_binary_into(a, b)) {
            int found = 0;
            for (int d = 0; d < a->rank; d++)
                if (a->dims[d] == b->dims[0]) found++, axis = d;
            if (found != 1) axis = -1;
        }
    }
    if (axis < 0 || axis + b->rank > a->rank) return 0;
    *v = *b;
    v->rank = a->rank;
    for (int d = 0; d < a->rank; d++) v->dims[d] = d >= axis && d < axis + b->rank ? b->dims[d - axis] : 1;
    return 1;
}

/* ---- formulas ------------------------------------------------------------ */

/* Max and Min propagate NaN (numpy's maximum/minimum). */
static inline BD_HOST_DEVICE float bd_bin_max_f(float a, float b) { return a > b || a != a ? a : b; }
static inline BD_HOST_DEVICE float bd_bin_min_f(float a, float b) { return a < b || a != a ? a : b; }
static inline BD_HOST_DEVICE double bd_bin_max_d(double a, double b) { return a > b || a != a ? a : b; }
static inline BD_HOST_DEVICE double bd_bin_min_d(double a, double b) { return a < b || a != a ? a : b; }

/* Mod of floats: fmod=1 is C's fmod (the sign of a); fmod=0 floors, as
 * numpy's mod: the sign of b, a zero result carries b's sign. */
static inline BD_HOST_DEVICE double bd_bin_mod_d(double a, double b, int fmod_)
{
    double m = fmod(a, b);
    if (fmod_ || b == 0 || m != m) return m;
    if (m != 0) return (b < 0) != (m < 0) ? m + b : m;
    return copysign(0.0, b);
}
static inline BD_HOST_DEVICE float bd_bin_mod_f(float a, float b, int fmod_)
{
    float m = fmodf(a, b);
    if (fmod_ || b == 0 || m != m) return m;
    if (m != 0) return (b < 0) != (m < 0) ? m + b : m;
    return copysignf(0.0f, b);
}
/* Mod of signed integers: fmod=1 truncates, 0 takes the sign of b (Python's
 * %). A zero divisor gives 0 (numpy's result; the spec leaves it open), and
 * -1 gives 0 without the overflow of INT_MIN % -1. */
static inline BD_HOST_DEVICE int64_t bd_bin_mod_i(int64_t a, int64_t b, int fmod_)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return !fmod_ && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static inline BD_HOST_DEVICE uint64_t bd_bin_mod_u(uint64_t a, uint64_t b) { return b == 0 ? 0 : a % b; }

/* BitShift of a `bits`-wide integer by y: the vacated bits are 0 (left, and
 * right of unsigned), copies of the sign bit (right of signed); a shift by
 * y < 0 or y >= bits leaves only that fill: 0, or -1 for a negative x
 * shifted right (opset 28's rule). x and y are the values sign- or
 * zero-extended to 64 bits; the caller keeps the low `bits` bits. */
static inline BD_HOST_DEVICE int64_t bd_bin_shift(int64_t x, int64_t y, int bits, int left, int is_signed)
{
    if (y < 0 || y >= bits) return !left && is_signed && x < 0 ? -1 : 0;
    if (left) return (int64_t)((uint64_t)x << y);
    if (is_signed) return x >> y; /* arithmetic on every compiler braid builds with */
    return (int64_t)(((uint64_t)x & (bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1)) >> y);
}

/* Integer Pow: a whole exponent >= 0 multiplies exactly in 64 bits (wrapping,
 * as numpy's integer power), any other exponent goes through double and
 * truncates toward zero (saturating beyond int64). */
static inline BD_HOST_DEVICE int64_t bd_bin_ipow(int64_t base, double e)
{
    if (e >= 0 && e <= 9.2e18 && e == floor(e)) {
        uint64_t r = 1, x = (uint64_t)base;
        for (uint64_t k = (uint64_t)e; k; k >>= 1) {
            if (k & 1) r *= x;
            x *= x;
        }
        return (int64_t)r;
    }
    double v = pow((double)base, e);
    if (!(v == v)) return 0;
    return v >= 9223372036854775807.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}

#endif /* BD_BINARY_H */
