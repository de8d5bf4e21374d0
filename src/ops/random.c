/* random.c: attribute parsing, shape inference and cost of the random op
 * family (RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike,
 * Bernoulli, Multinomial), and the seed of a run. Every op is flagged
 * BD_OPF_NO_FOLD: a plan never replaces it by a constant. */
#include "random.h"

#include <stdatomic.h>
#include <string.h>
#include <time.h>

static int float_type(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

/* Bernoulli's outputs: the numbers and bool. */
static int bernoulli_type(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT16: case BRAID_DTYPE_INT32: case BRAID_DTYPE_INT64:
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT16: case BRAID_DTYPE_UINT32: case BRAID_DTYPE_UINT64:
    case BRAID_DTYPE_BOOL: return 1;
    default: return float_type(dt);
    }
}

braid_status bd_random_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_random_params *p = bd_calloc(1, sizeof *p);
    float seed;
    int normal = n->op == BD_OP_RandomNormal || n->op == BD_OP_RandomNormalLike;
    int uniform = n->op == BD_OP_RandomUniform || n->op == BD_OP_RandomUniformLike;
    BD_CHECK_ALLOC(e, p);
    p->has_seed = bd_node_attr(n, "seed") != NULL;
    BD_TRY(bd_attr_float(n, "seed", 0, &seed, e));
    /* int(seed), as onnx's reference seeds numpy; beyond int64 the bits */
    p->seed = seed > -9.2e18f && seed < 9.2e18f ? (uint64_t)(int64_t)seed : (uint64_t)bd_f32_bits(seed);
    if (n->op == BD_OP_RandomNormal || n->op == BD_OP_RandomUniform || n->op == BD_OP_Multinomial)
        BD_TRY(bd_attr_int(n, "dtype", n->op == BD_OP_Multinomial ? BRAID_DTYPE_INT32 : BRAID_DTYPE_FLOAT, &p->dtype, e));
    else
        BD_TRY(bd_attr_int(n, "dtype", 0, &p->dtype, e));
    if (normal) {
        BD_TRY(bd_attr_float(n, "mean", 0, &p->a, e));
        BD_TRY(bd_attr_float(n, "scale", 1, &p->b, e));
    } else if (uniform) {
        BD_TRY(bd_attr_float(n, "low", 0, &p->a, e));
        BD_TRY(bd_attr_float(n, "high", 1, &p->b, e));
    }
    if (n->op == BD_OP_Multinomial) {
        BD_TRY(bd_attr_int(n, "sample_size", 1, &p->sample_size, e));
        if (p->sample_size < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'sample_size' must be positive, not %lld",
                         (long long)p->sample_size);
            goto fail;
        }
    }
    if (n->op == BD_OP_RandomNormal || n->op == BD_OP_RandomUniform) {
        if (!bd_node_attr(n, "shape")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'shape' is required");
            goto fail;
        }
        BD_TRY(bd_attr_ints(n, "shape", p->shape, BD_MAX_RANK, &p->n_shape, e));
        for (int i = 0; i < p->n_shape; i++)
            if (p->shape[i] < 0) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'shape' has a negative dim %lld", (long long)p->shape[i]);
                goto fail;
            }
    }
fail:
    return bd_params_done(n, p, st);
}

uint64_t bd_random_seed(const bd_random_params *p)
{
    static _Atomic uint64_t runs, base;
    if (p->has_seed) return p->seed;
    /* a counter no two runs share, offset by the time this process first
     * asked, and spread over the key by splitmix64's finalizer */
    uint64_t b = atomic_load(&base);
    if (!b) {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        uint64_t expect = 0;
        atomic_compare_exchange_strong(&base, &expect, ((uint64_t)ts.tv_sec * 1000000007u + (uint64_t)ts.tv_nsec) | 1);
        b = atomic_load(&base);
    }
    uint64_t z = b + 0x9E3779B97F4A7C15ull * (atomic_fetch_add(&runs, 1) + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

braid_status bd_random_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_random_params *p = n->params;
    switch (n->op) {
    case BD_OP_RandomNormal:
    case BD_OP_RandomUniform:
        if (!float_type((int)p->dtype))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s of dtype %s is not supported", n->op_type,
                           bd_dtype_name((int)p->dtype));
        out->dtype = (int)p->dtype;
        out->rank = p->n_shape;
        memcpy(out->dims, p->shape, (size_t)p->n_shape * sizeof *p->shape);
        return BRAID_OK;
    case BD_OP_RandomNormalLike:
    case BD_OP_RandomUniformLike:
    case BD_OP_Bernoulli: {
        int dt = p->dtype ? (int)p->dtype : in[0].dtype;
        if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
        if (n->op == BD_OP_Bernoulli && !float_type(in[0].dtype))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input must be a float type (probabilities), not %s",
                           bd_dtype_name(in[0].dtype));
        if (n->op == BD_OP_Bernoulli ? !bernoulli_type(dt) : !float_type(dt))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s of dtype %s is not supported", n->op_type, bd_dtype_name(dt));
        out->dtype = dt;
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    }
    case BD_OP_Multinomial:
        if (!float_type(in[0].dtype))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input must be a float type (log-probabilities), not %s",
                           bd_dtype_name(in[0].dtype));
        if (in[0].rank != 2)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input must be [batch_size, class_size], not rank %d", in[0].rank);
        if (in[0].dims[1] < 1 && in[0].dims[0] > 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "input has no classes");
        if (p->dtype != BRAID_DTYPE_INT32 && p->dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'dtype' must be int32 or int64, not %s",
                           bd_dtype_name((int)p->dtype));
        out->dtype = (int)p->dtype;
        out->rank = 2;
        out->dims[0] = in[0].dims[0];
        out->dims[1] = p->sample_size;
        return BRAID_OK;
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the random family", n->op_type);
    }
}

double bd_random_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)in;
    /* about 60 operations per draw (ten Philox rounds, the conversion) */
    double c = out[0].rank >= 0 ? (double)bd_numel(&out[0]) * 60 : 0;
    if (n->op == BD_OP_Multinomial && in[0].rank == 2) c *= 3.0 * (double)in[0].dims[1];
    return c;
}
