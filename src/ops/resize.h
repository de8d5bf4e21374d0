/* resize.h: the resize family's parsed attributes and the per-axis geometry
 * (output sizes, scales, roi) that shape inference and the kernels share. */
#ifndef BD_RESIZE_H
#define BD_RESIZE_H

#include <math.h>

#include "ops.h"
#include "util/dtype.h"

typedef enum bd_resize_mode {
    BD_RESIZE_NEAREST = 0,
    BD_RESIZE_LINEAR = 1,
    BD_RESIZE_CUBIC = 2
} bd_resize_mode;

typedef enum bd_resize_coord {
    BD_COORD_HALF_PIXEL = 0,
    BD_COORD_PYTORCH_HALF_PIXEL = 1,
    BD_COORD_ALIGN_CORNERS = 2,
    BD_COORD_ASYMMETRIC = 3,
    BD_COORD_TF_CROP_AND_RESIZE = 4,
    BD_COORD_HALF_PIXEL_SYMMETRIC = 5
} bd_resize_coord;

typedef enum bd_resize_nearest {
    BD_NEAREST_ROUND_PREFER_FLOOR = 0,
    BD_NEAREST_ROUND_PREFER_CEIL = 1,
    BD_NEAREST_FLOOR = 2,
    BD_NEAREST_CEIL = 3,
    BD_NEAREST_SIMPLE = 4 /* Upsample and Resize-10: floor, or ceil when downsampling */
} bd_resize_nearest;

typedef enum bd_resize_aspect {
    BD_ASPECT_STRETCH = 0,
    BD_ASPECT_NOT_LARGER = 1,
    BD_ASPECT_NOT_SMALLER = 2
} bd_resize_aspect;

typedef struct bd_resize_params {
    int mode;            /* bd_resize_mode */
    int coord;           /* bd_resize_coord */
    int nearest;         /* bd_resize_nearest */
    int aspect;          /* bd_resize_aspect */
    int antialias, exclude_outside;
    float cubic_a, extrapolation;
    int n_axes;          /* entries of the 'axes' attribute; 0 = all axes */
    int64_t axes[BD_MAX_RANK];
    int n_attr_scales;   /* Upsample-7: the 'scales' attribute */
    float attr_scales[BD_MAX_RANK];
    int in_roi, in_scales, in_sizes; /* input positions; -1 when the op version has none */
} bd_resize_params;

/* The resolved geometry of one input shape: for each axis d of the input,
 * its output size, scale and roi (1, 0, 1 on axes that are not resized). */
typedef struct bd_resize_geom {
    int rank;
    int64_t in[BD_MAX_RANK], out[BD_MAX_RANK];
    double scale[BD_MAX_RANK];       /* output / input, as the model gives it */
    double length[BD_MAX_RANK];      /* the resized length: scale * input (may be fractional) */
    double roi_start[BD_MAX_RANK], roi_end[BD_MAX_RANK];
    int has_roi;                     /* roi data was read (it may be unknown at plan time) */
} bd_resize_geom;

/* Resolves the geometry from the node and its inputs (n_in of them). scales
 * and sizes must have data; roi is read when its data is there. Fails with
 * INVALID_MODEL when neither scales nor sizes is given, UNSUPPORTED when the
 * one given is not known, DTYPE and SHAPE for malformed ones. */
braid_status bd_resize_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_resize_geom *g,
                                bd_err *e);

/* The formulas both backends use, defined once. */

/* The source coordinate of output position x on one axis: coord is the
 * coordinate mode, s the scale, L the input length, len the resized length
 * (scale * L, maybe fractional), out the output length, [a, b] the roi. */
static inline BD_HOST_DEVICE double bd_resize_src_coord(int coord, double s, double L, double len, int64_t out,
                                                        double roi_a, double roi_b, double x)
{
    switch (coord) {
    case BD_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (x + 0.5) / s - 0.5 : 0.0;
    case BD_COORD_ALIGN_CORNERS: return len == 1.0 ? 0.0 : x * (L - 1) / (len - 1);
    case BD_COORD_ASYMMETRIC: return x / s;
    case BD_COORD_TF_CROP_AND_RESIZE: {
        /* roi arithmetic in float, as onnxruntime and the onnx reference do. */
        float a = (float)roi_a, b = (float)roi_b;
        float start = a * (float)(L - 1), span = b - a;
        return len > 1.0 ? start + x * span * (L - 1) / (len - 1) : 0.5 * (a + b) * (L - 1);
    }
    case BD_COORD_HALF_PIXEL_SYMMETRIC: {
        double offset = L / 2 * (1 - (double)out / len);
        return offset + (x + 0.5) / s - 0.5;
    }
    default: return (x + 0.5) / s - 0.5; /* half_pixel */
    }
}

/* The input index nearest to coordinate x under nearest_mode; down: the axis
 * shrinks (Resize-10 and Upsample's rule). */
static inline BD_HOST_DEVICE int64_t bd_resize_nearest_index(int mode, double x, int down)
{
    double f = floor(x);
    switch (mode) {
    case BD_NEAREST_ROUND_PREFER_CEIL: return (int64_t)(x - f >= 0.5 ? f + 1 : f);
    case BD_NEAREST_FLOOR: return (int64_t)f;
    case BD_NEAREST_CEIL: return (int64_t)ceil(x);
    case BD_NEAREST_SIMPLE: return down ? (int64_t)ceil(x) : (int64_t)f;
    default: return (int64_t)(x - f > 0.5 ? f + 1 : f); /* round_prefer_floor */
    }
}

/* The cubic convolution kernel with coefficient A. */
static inline BD_HOST_DEVICE double bd_resize_cubic(double x, double A)
{
    x = fabs(x);
    if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
    if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    return 0;
}

/* How many taps an axis needs: 1 (nearest), 2 (linear), 4 (cubic), or the
 * antialias filter's footprint when downsampling. */
static inline int bd_resize_taps(const bd_resize_params *p, double scale)
{
    if (p->mode == BD_RESIZE_NEAREST) return 1;
    double support = p->mode == BD_RESIZE_LINEAR ? 1.0 : 2.0;
    if (!p->antialias || scale >= 1.0) return (int)(2 * support);
    int64_t start = (int64_t)floor(-support / scale) + 1;
    return (int)(2 - 2 * start);
}

/* Stores v (computed in float or double) as element i of a buffer of dtype
 * dt: floats round to nearest, integers round half to even and saturate (as
 * onnx's reference: saturate_cast of np.round), bool is v != 0. */
static inline BD_HOST_DEVICE void bd_resize_store(void *p, int dt, int64_t i, double v)
{
    double r = rint(v);
#define BD_RS_SAT(T, lo, hi) ((T *)p)[i] = r <= (double)(lo) ? (T)(lo) : r >= (double)(hi) ? (T)(hi) : (T)r
    switch (dt) {
    case BRAID_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case BRAID_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case BRAID_DTYPE_FLOAT16: ((uint16_t *)p)[i] = bd_float_to_half((float)v); break;
    case BRAID_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = bd_float_to_bf16((float)v); break;
    case BRAID_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case BRAID_DTYPE_INT8: BD_RS_SAT(int8_t, -128, 127); break;
    case BRAID_DTYPE_UINT8: BD_RS_SAT(uint8_t, 0, 255); break;
    case BRAID_DTYPE_INT16: BD_RS_SAT(int16_t, -32768, 32767); break;
    case BRAID_DTYPE_UINT16: BD_RS_SAT(uint16_t, 0, 65535); break;
    case BRAID_DTYPE_INT32: BD_RS_SAT(int32_t, -2147483647 - 1, 2147483647); break;
    case BRAID_DTYPE_UINT32: BD_RS_SAT(uint32_t, 0, 4294967295u); break;
    case BRAID_DTYPE_INT64: BD_RS_SAT(int64_t, -9223372036854775807LL - 1, 9223372036854775807LL); break;
    case BRAID_DTYPE_UINT64: BD_RS_SAT(uint64_t, 0, 18446744073709551615ull); break;
    default: break;
    }
#undef BD_RS_SAT
}

#endif /* BD_RESIZE_H */
