/* random.h: the random family (RandomNormal, RandomUniform,
 * RandomNormalLike, RandomUniformLike, Bernoulli, Multinomial): parsed
 * attributes and the generator both backends share.
 *
 * The generator is counter-based (Philox4x32-10, Salmon et al., SC'11): the
 * draws for output element i are a pure function of (seed, i), so results
 * never depend on the thread count or the backend's scheduling, and the CPU
 * and CUDA draw the same uniforms. With a 'seed' attribute a node gives the
 * same tensor on every run (what "deterministic for a given seed" means for
 * an executor that keeps no state between runs); without one each run takes
 * a fresh seed. Values cannot equal numpy's (onnx's reference uses numpy's
 * Mersenne Twister, whose stream depends on the draw order). */
#ifndef BD_OPS_RANDOM_H
#define BD_OPS_RANDOM_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

typedef struct bd_random_params {
    int has_seed;
    uint64_t seed;          /* the attribute, truncated to an integer as onnx's reference does */
    int64_t dtype;          /* output dtype; 0 = the input's (the *Like ops, Bernoulli) */
    float a, b;             /* Normal: mean, scale; Uniform: low, high */
    int64_t sample_size;    /* Multinomial */
    int n_shape;            /* RandomNormal, RandomUniform */
    int64_t shape[BD_MAX_RANK];
} bd_random_params;

/* Philox4x32-10: four 32-bit words from a 128-bit counter and a 64-bit key. */
static inline BD_HOST_DEVICE void bd_philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1, c[3] = (uint32_t)p0, c[0] = n0, c[2] = n2;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
}

/* Two uniforms in [0, 1) with 53 random bits each for draw i of a seed. */
static inline BD_HOST_DEVICE void bd_random_u01x2(uint64_t seed, uint64_t i, double *u0, double *u1)
{
    uint32_t c[4] = {(uint32_t)i, (uint32_t)(i >> 32), 0x243F6A88u, 0x85A308D3u};
    bd_philox(c, (uint32_t)seed, (uint32_t)(seed >> 32));
    *u0 = (double)(((uint64_t)c[0] << 21) ^ (c[1] >> 11)) * 0x1p-53;
    *u1 = (double)(((uint64_t)c[2] << 21) ^ (c[3] >> 11)) * 0x1p-53;
}

/* A standard normal draw (Box-Muller with the cosine), from draw i. */
static inline BD_HOST_DEVICE double bd_random_normal(uint64_t seed, uint64_t i)
{
    double u0, u1;
    bd_random_u01x2(seed, i, &u0, &u1);
    return sqrt(-2.0 * log(1.0 - u0)) * cos(6.283185307179586 * u1); /* 1 - u0 is in (0, 1] */
}

/* Element i of a float tensor (float16, bfloat16, float, double) as double. */
static inline BD_HOST_DEVICE double bd_random_load(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_DOUBLE: return ((const double *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}

/* Stores v as element i of dtype dt: the float types rounded to nearest
 * (through float, with round-to-odd for the half types), the integers and
 * bool take v as it is (0 or 1 here). */
static inline BD_HOST_DEVICE void bd_random_store(int dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16: {
        float f = (float)v;
        if ((double)f != v && v == v) { /* round to odd, so the second rounding is the right one */
            uint32_t u = bd_f32_bits(f);
            if (!(u & 1u)) u += ((v < 0 ? -v : v) > (f < 0 ? -(double)f : (double)f)) ? 1u : 0xffffffffu;
            f = bd_bits_f32(u);
        }
        ((uint16_t *)p)[i] = dt == BRAID_DTYPE_FLOAT16 ? bd_float_to_half(f) : bd_float_to_bf16(f);
        break;
    }
    case BRAID_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)v; break;
    case BRAID_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)v; break;
    case BRAID_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case BRAID_DTYPE_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    case BRAID_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case BRAID_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case BRAID_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break; /* UINT8, BOOL */
    }
}

/* Element i of a Random* op: low + u (high - low), or mean + scale z. */
static inline BD_HOST_DEVICE double bd_random_value(int op, const bd_random_params *p, uint64_t seed, int64_t i)
{
    if (op == BD_OP_RandomNormal || op == BD_OP_RandomNormalLike)
        return (double)p->a + (double)p->b * bd_random_normal(seed, (uint64_t)i);
    double u0, u1;
    bd_random_u01x2(seed, (uint64_t)i, &u0, &u1);
    return (double)p->a + u0 * ((double)p->b - (double)p->a);
}

/* Multinomial: the class of a uniform u in [0, 1) among n classes of row x
 * (unnormalized log-probabilities): the first c whose cumulative weight
 * exp(x_c - max) exceeds u times the total. */
static inline BD_HOST_DEVICE int64_t bd_multinomial_pick(int dt, const void *x, int64_t row, int64_t n, double u)
{
    double mx = -1.0 / 0.0, tot = 0, acc = 0;
    for (int64_t c = 0; c < n; c++) {
        double v = bd_random_load(dt, x, row * n + c);
        mx = v > mx ? v : mx;
    }
    for (int64_t c = 0; c < n; c++) tot += exp(bd_random_load(dt, x, row * n + c) - mx);
    double target = u * tot;
    for (int64_t c = 0; c < n; c++) {
        acc += exp(bd_random_load(dt, x, row * n + c) - mx);
        if (target < acc) return c;
    }
    return n - 1; /* u * tot rounded up to the total */
}

/* The seed of one run: the attribute's, or a fresh one (never the same twice
 * in a process). */
uint64_t bd_random_seed(const bd_random_params *p);

#endif /* BD_OPS_RANDOM_H */
