/* resize.h: the resize family's parsed attributes and the per-axis geometry
 * (output sizes, scales, roi) that shape inference and the kernels share. */
#ifndef BD_RESIZE_H
#define BD_RESIZE_H

#include "ops.h"

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

#endif /* BD_RESIZE_H */
