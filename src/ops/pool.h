/* pool.h: the pool family's parsed attributes and the window geometry (output
 * size and explicit pads, auto_pad and ceil_mode resolved) that shape
 * inference and the kernels share. */
#ifndef BD_POOL_H
#define BD_POOL_H

#include "ops.h"

#define BD_POOL_MAX_SPATIAL 3

typedef enum bd_auto_pad {
    BD_AUTO_PAD_NOTSET = 0,
    BD_AUTO_PAD_SAME_UPPER = 1,
    BD_AUTO_PAD_SAME_LOWER = 2,
    BD_AUTO_PAD_VALID = 3
} bd_auto_pad;

typedef struct bd_pool_params {
    int nsp;                                 /* spatial dims of the window; 0 for the global pools */
    int64_t kernel[BD_POOL_MAX_SPATIAL];     /* (k0, k1, ...) */
    int64_t strides[BD_POOL_MAX_SPATIAL];
    int64_t dilations[BD_POOL_MAX_SPATIAL];
    int64_t pads[2 * BD_POOL_MAX_SPATIAL];   /* (begin0, begin1, ..., end0, end1, ...) */
    int auto_pad;                            /* bd_auto_pad */
    int ceil_mode, count_include_pad, storage_order;
} bd_pool_params;

/* The resolved window geometry of one input shape. */
typedef struct bd_pool_geom {
    int nsp;
    int64_t in[BD_POOL_MAX_SPATIAL];         /* input spatial dims */
    int64_t out[BD_POOL_MAX_SPATIAL];        /* output spatial dims */
    int64_t pad_begin[BD_POOL_MAX_SPATIAL];
    int64_t pad_end[BD_POOL_MAX_SPATIAL];
} bd_pool_geom;

/* Resolves the geometry of MaxPool / AveragePool for input x (rank nsp + 2):
 * explicit pads from auto_pad, output dims with ceil_mode (the last window
 * must start inside the input or the left padding). Fails with SHAPE. */
braid_status bd_pool_geometry(const bd_node *n, const bd_tensor *x, bd_pool_geom *g, bd_err *e);

#endif /* BD_POOL_H */
