/* scatter.h: the scatter family's parsed attributes (Scatter,
 * ScatterElements, ScatterND, TensorScatter) and the element formulas and
 * geometry that shape inference (src/ops/scatter.c), the CPU kernels and the
 * CUDA kernels share. Every scatter starts from a copy of the data and
 * applies the updates in the order onnx's reference does (row-major over the
 * indices); the kernels split the work only where updates cannot meet. */
#ifndef BD_OPS_SCATTER_H
#define BD_OPS_SCATTER_H

#include "index.h"
#include "util/dtype.h"

typedef enum bd_scatter_red {
    BD_SCATTER_NONE = 0,
    BD_SCATTER_ADD = 1,
    BD_SCATTER_MUL = 2,
    BD_SCATTER_MAX = 3,
    BD_SCATTER_MIN = 4
} bd_scatter_red;

typedef struct bd_scatter_params {
    int64_t axis;        /* Scatter, ScatterElements, TensorScatter */
    bd_scatter_red red;  /* ScatterElements, ScatterND */
    int circular;        /* TensorScatter: mode "circular" (else "linear") */
} bd_scatter_params;

/* ---- combining one update with the value in place -------------------------- */

/* Floats (float16, bfloat16, float, double) combine in double and round to
 * their type: what the type's own arithmetic (numpy's, in onnx's reference)
 * gives. max and min propagate NaN (numpy's maximum and minimum). */
static inline BD_HOST_DEVICE double bd_scatter_f64(int red, double a, double b)
{
    switch (red) {
    case BD_SCATTER_ADD: return a + b;
    case BD_SCATTER_MUL: return a * b;
    case BD_SCATTER_MAX: return a != a || b != b ? a + b : a > b ? a : b;
    case BD_SCATTER_MIN: return a != a || b != b ? a + b : a < b ? a : b;
    default: return b;
    }
}

/* Integers combine in 64 bits, wrapping like numpy's; the caller truncates to
 * the element width (which wraps the same way). */
static inline BD_HOST_DEVICE int64_t bd_scatter_i64(int red, int64_t a, int64_t b)
{
    switch (red) {
    case BD_SCATTER_ADD: return (int64_t)((uint64_t)a + (uint64_t)b);
    case BD_SCATTER_MUL: return (int64_t)((uint64_t)a * (uint64_t)b);
    case BD_SCATTER_MAX: return a > b ? a : b;
    case BD_SCATTER_MIN: return a < b ? a : b;
    default: return b;
    }
}
static inline BD_HOST_DEVICE uint64_t bd_scatter_u64(int red, uint64_t a, uint64_t b)
{
    switch (red) {
    case BD_SCATTER_ADD: return a + b;
    case BD_SCATTER_MUL: return a * b;
    case BD_SCATTER_MAX: return a > b ? a : b;
    case BD_SCATTER_MIN: return a < b ? a : b;
    default: return b;
    }
}

/* 1 for the dtypes a reduction can combine (numbers and bool). */
static inline BD_HOST_DEVICE int bd_scatter_reducible(int dt)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: case BRAID_DTYPE_DOUBLE: case BRAID_DTYPE_FLOAT16: case BRAID_DTYPE_BFLOAT16:
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT16: case BRAID_DTYPE_INT32: case BRAID_DTYPE_INT64:
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT16: case BRAID_DTYPE_UINT32: case BRAID_DTYPE_UINT64:
    case BRAID_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

/* out[oi] = red(out[oi], upd[ui]) for an element of dtype dt. Bool adds as
 * or and multiplies as and (numpy's bool arithmetic). */
static inline BD_HOST_DEVICE void bd_scatter_apply(int dt, int red, void *out, int64_t oi, const void *upd, int64_t ui)
{
#define BD_SC_I(T) ((T *)out)[oi] = (T)bd_scatter_i64(red, ((T *)out)[oi], ((const T *)upd)[ui]); break
#define BD_SC_U(T) ((T *)out)[oi] = (T)bd_scatter_u64(red, ((T *)out)[oi], ((const T *)upd)[ui]); break
    switch (dt) {
    case BRAID_DTYPE_FLOAT:
        ((float *)out)[oi] = (float)bd_scatter_f64(red, ((float *)out)[oi], ((const float *)upd)[ui]);
        break;
    case BRAID_DTYPE_DOUBLE: ((double *)out)[oi] = bd_scatter_f64(red, ((double *)out)[oi], ((const double *)upd)[ui]); break;
    /* The half types: double rounded to float, then to the type; each step
     * keeps at least 2p + 2 bits of the one after, so the result is the
     * correctly rounded one (no double-rounding error). */
    case BRAID_DTYPE_FLOAT16:
        ((uint16_t *)out)[oi] = bd_float_to_half((float)bd_scatter_f64(
            red, bd_half_to_float_hd(((uint16_t *)out)[oi]), bd_half_to_float_hd(((const uint16_t *)upd)[ui])));
        break;
    case BRAID_DTYPE_BFLOAT16:
        ((uint16_t *)out)[oi] = bd_float_to_bf16((float)bd_scatter_f64(
            red, bd_bf16_to_float(((uint16_t *)out)[oi]), bd_bf16_to_float(((const uint16_t *)upd)[ui])));
        break;
    case BRAID_DTYPE_INT8: BD_SC_I(int8_t);
    case BRAID_DTYPE_INT16: BD_SC_I(int16_t);
    case BRAID_DTYPE_INT32: BD_SC_I(int32_t);
    case BRAID_DTYPE_INT64: BD_SC_I(int64_t);
    case BRAID_DTYPE_UINT8: BD_SC_U(uint8_t);
    case BRAID_DTYPE_UINT16: BD_SC_U(uint16_t);
    case BRAID_DTYPE_UINT32: BD_SC_U(uint32_t);
    case BRAID_DTYPE_UINT64: BD_SC_U(uint64_t);
    case BRAID_DTYPE_BOOL: {
        uint8_t a = ((uint8_t *)out)[oi] != 0, b = ((const uint8_t *)upd)[ui] != 0;
        ((uint8_t *)out)[oi] = red == BD_SCATTER_ADD || red == BD_SCATTER_MAX ? (a | b)
                               : red == BD_SCATTER_MUL || red == BD_SCATTER_MIN ? (a & b) : b;
        break;
    }
    default: break;
    }
#undef BD_SC_I
#undef BD_SC_U
}

/* ---- ScatterElements: lines along the axis --------------------------------- */

/* The updates (shape of the indices) fall into lines that differ only along
 * the axis; two updates can meet only within a line, so lines may run in
 * parallel, each in order along the axis (the reference's order). */
typedef struct bd_scatter_lines {
    int rank, axis;
    int64_t idims[BD_MAX_RANK], ist[BD_MAX_RANK], dst[BD_MAX_RANK];
    int64_t n_lines, len, dim; /* len: updates per line; dim: data's size along the axis */
} bd_scatter_lines;

/* The first update (*ubase, in the indices/updates) and the output element
 * (*obase, without the axis term) of line l. */
static inline BD_HOST_DEVICE void bd_scatter_line(const bd_scatter_lines *g, int64_t l, int64_t *ubase, int64_t *obase)
{
    int64_t u = 0, o = 0;
    for (int d = g->rank - 1; d >= 0; d--) {
        if (d == g->axis) continue;
        int64_t q = l / g->idims[d], c = l - q * g->idims[d];
        u += c * g->ist[d];
        o += c * g->dst[d];
        l = q;
    }
    *ubase = u;
    *obase = o;
}

void bd_scatter_lines_of(const bd_tensor *data, const bd_tensor *indices, int axis, bd_scatter_lines *g);

/* ---- TensorScatter ---------------------------------------------------------- */

/* The cache viewed as (prefix, max_seq, inner) around the axis, the update as
 * (prefix, seq, inner); the batch of a prefix is prefix / per_batch. */
typedef struct bd_tscatter_geom {
    int64_t prefix, per_batch, max_seq, seq, inner;
} bd_tscatter_geom;

/* The cache position of update step s of a sequence whose write index is w:
 * -1 when it falls outside the cache (linear mode only). */
static inline BD_HOST_DEVICE int64_t bd_tscatter_pos(int64_t w, int64_t s, int64_t max_seq, int circular)
{
    int64_t p = w + s;
    if (circular) return max_seq > 0 ? ((p % max_seq) + max_seq) % max_seq : -1;
    return p >= 0 && p < max_seq ? p : -1;
}

void bd_tscatter_geom_of(const bd_node *n, const bd_tensor *cache, const bd_tensor *update, bd_tscatter_geom *g);

#endif /* BD_OPS_SCATTER_H */
