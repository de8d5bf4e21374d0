/* rope.h: the rope family's parsed attributes and the rotary position
 * embedding's index formula, shared by src/ops/rope.c, the CPU kernel
 * (src/backend/cpu/ops/rope.c) and the CUDA kernel (kernels/rope.cu):
 * ONNX's RotaryEmbedding (opset 23) and com.microsoft's. */
#ifndef BD_OPS_ROPE_H
#define BD_OPS_ROPE_H

#include "ops.h"

typedef struct bd_rope_params {
    int interleaved;
    int64_t rot_dim;   /* rotary_embedding_dim; 0: the head size */
    int64_t num_heads; /* 0 when absent */
} bd_rope_params;

/* Where the cos/sin row of token (b, s) comes from. */
enum {
    BD_ROPE_CACHE_3D = 0, /* no position_ids: caches are (batch, seq, rot/2) */
    BD_ROPE_IDS = 1,      /* position_ids (batch, seq) index (max_pos, rot/2) caches */
    BD_ROPE_OFFSET = 2    /* com.microsoft's position_ids of one value: row = that value + s */
};

/* The resolved geometry (src/ops/rope.c). */
typedef struct bd_rope_geom {
    int rank3;             /* X is (batch, seq, heads * head) */
    int64_t b, h, s, d, rd; /* batch, heads, sequence, head size, rotated dims (even) */
    int pos_mode;
    int64_t max_pos;       /* rows of a 2-D cache */
} bd_rope_geom;
braid_status bd_rope_geometry(const bd_node *n, const bd_tensor *in, bd_rope_geom *g, bd_err *e);

/* Output element i of X (in X's own layout): its token (b, s), the offsets
 * of the two inputs it combines (x1, x2, relative to i's row start `row`),
 * the cache column `col`, and whether it is the first of the pair
 * (cos x1 - sin x2) or the second (sin x1 + cos x2). Returns 0 for an
 * element past the rotated dims (copied as is). */
static inline BD_HOST_DEVICE int bd_rope_at(const bd_rope_geom *g, int interleaved, int64_t i, int64_t *b, int64_t *s,
                                            int64_t *row, int64_t *p1, int64_t *p2, int64_t *col, int *first)
{
    int64_t d = i % g->d, r = i / g->d;
    if (g->rank3) { /* (b, s, h, d): the head does not matter */
        r /= g->h;
        *s = r % g->s;
        *b = r / g->s;
    } else { /* (b, h, s, d) */
        *s = r % g->s;
        *b = r / g->s / g->h;
    }
    *row = i - d;
    if (d >= g->rd) return 0;
    int64_t half = g->rd / 2;
    if (interleaved) {
        *col = d / 2;
        *first = (d & 1) == 0;
        *p1 = 2 * *col;
        *p2 = *p1 + 1;
    } else {
        *first = d < half;
        *col = *first ? d : d - half;
        *p1 = *col;
        *p2 = *col + half;
    }
    return 1;
}

/* The rotated value from the pair (x1, x2) and the angle's cos and sin. */
static inline BD_HOST_DEVICE double bd_rope_value(int first, double x1, double x2, double c, double sn)
{
    return first ? c * x1 - sn * x2 : sn * x1 + c * x2;
}

#endif /* BD_OPS_ROPE_H */
