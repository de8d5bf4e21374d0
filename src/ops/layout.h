/* layout.h: the layout family's parsed attributes (Concat, Split, Slice,
 * Transpose, Gather, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
 * CenterCropPad) and the resolvers that shape inference (src/ops/layout.c)
 * and the kernels share. */
#ifndef BD_OPS_LAYOUT_H
#define BD_OPS_LAYOUT_H

#include "ops.h"

typedef enum bd_pad_mode {
    BD_PADMODE_CONSTANT = 0,
    BD_PADMODE_REFLECT = 1,
    BD_PADMODE_EDGE = 2,
    BD_PADMODE_WRAP = 3
} bd_pad_mode;

typedef struct bd_layout_params {
    int64_t axis;                   /* Concat, Split, Gather */
    int64_t num_outputs;            /* Split (opset 18); 0 when absent */
    int n_perm;                     /* Transpose; 0 = reversed dims */
    int64_t perm[BD_MAX_RANK];
    int n_starts, n_ends, n_axes;   /* Slice opset 1 attributes; n_axes -1 = absent */
    int64_t starts[BD_MAX_RANK], ends[BD_MAX_RANK], axes[BD_MAX_RANK];
    bd_pad_mode pad_mode;           /* Pad */
    float pad_value;                /* Pad before opset 11 */
    int n_pads;                     /* Pad before opset 11; (begin_0, ..., end_0, ...) */
    int64_t pads[2 * BD_MAX_RANK];
    int64_t blocksize;              /* DepthToSpace, SpaceToDepth */
    int crd;                        /* DepthToSpace, SpaceToDepth: mode CRD (else DCR) */
    int n_crop_axes;                /* CenterCropPad: -1 = absent (every axis) */
    int64_t crop_axes[BD_MAX_RANK];
    int n_split;                    /* Split before opset 13; -1 = absent */
    int64_t split[];                /* n_split sizes */
} bd_layout_params;

/* Pad: where output position i (relative to the data: already minus the
 * leading pad) reads in a dim of n values; -1 means the constant. */
static inline BD_HOST_DEVICE int64_t bd_pad_source(int64_t i, int64_t n, int mode)
{
    if (i >= 0 && i < n) return i;
    switch (mode) {
    case BD_PADMODE_EDGE: return i < 0 ? 0 : n - 1;
    case BD_PADMODE_WRAP: return ((i % n) + n) % n;
    case BD_PADMODE_REFLECT: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1);
        i = ((i % p) + p) % p;
        return i < n ? i : p - i;
    }
    default: return -1;
    }
}

/* Slice: for each dim d of in[0], the first index start[d], the step step[d]
 * and the output length len[d] (dims that are not sliced: 0, 1, dim). Reads
 * the attributes (opset 1) or inputs 1-4 (known data needed). */
braid_status bd_slice_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *start,
                              int64_t *step, int64_t *len, bd_err *e);
/* Pad: pads[d] = padding before dim d, pads[rank + d] = after (negative crops). */
/* Slice as a strided view of its input: output element (i_0, i_1, ...) is
 * input element *offset + sum(i_d * strides[d]) (in elements, not bytes).
 * Checks the output's dims against the resolved lengths. */
braid_status bd_slice_view(const bd_node *n, const bd_tensor *in, int n_in, const bd_tensor *out, int64_t *offset,
                           int64_t *strides, bd_err *e);

/* Concat and Split as row copies: the whole (Concat's output, Split's input)
 * is `outer` rows of `row` bytes, and each part takes chunk bytes of every
 * row, the parts side by side in order. */
typedef struct bd_concat_rows {
    int axis;
    int64_t outer, row, inner; /* inner: bytes of one step along the axis */
} bd_concat_rows;
braid_status bd_concat_rows_of(const bd_node *n, const bd_tensor *whole, bd_concat_rows *r, bd_err *e);
/* A part's bytes in each row (0 for an empty part). */
static inline int64_t bd_concat_chunk(const bd_concat_rows *r, const bd_tensor *part)
{
    return part->rank > r->axis ? part->dims[r->axis] * r->inner : 0;
}

braid_status bd_pad_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads,
                            bd_err *e);
/* The bytes of Pad's 'value' attribute (before opset 11) as an element of
 * dtype (16 bytes of room): rounded to nearest for the float types,
 * truncated toward zero for the integers (as a C cast), nonzero for bool. */
void bd_pad_value_bytes(int dtype, float v, unsigned char *bytes);
/* CenterCropPad as a constant-0 Pad: pads[d] before and pads[rank + d]
 * after dim d (negative crops), from input 1 (the target shape, known data
 * needed) and the axes attribute. */
braid_status bd_center_crop_pads(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads, bd_err *e);
/* The pads of Pad or CenterCropPad (whichever n is). */
braid_status bd_layout_pads(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads, bd_err *e);

/* DepthToSpace and SpaceToDepth as a strided copy: the output, contiguous,
 * read as 6 dims dims6, takes element (i_0..i_5) from the input element at
 * sum(i_d * st6[d]) (in elements). x is the NCHW input. */
static inline void bd_space_depth_view(int op, int64_t b, int crd, const int64_t *x, int64_t *dims6, int64_t *st6)
{
    int64_t n = x[0], c = x[1], h = x[2], w = x[3], sn = c * h * w, sc = h * w;
    if (op == BD_OP_DepthToSpace) { /* output (n, c', h, i, w, j) from channel ((i, j), c') or (c', (i, j)) */
        int64_t co = c / (b * b), d[6] = {n, co, h, b, w, b};
        int64_t s[6] = {sn, crd ? b * b * sc : sc, w, crd ? b * sc : b * co * sc, 1, crd ? sc : co * sc};
        for (int i = 0; i < 6; i++) dims6[i] = d[i], st6[i] = s[i];
    } else if (!crd) { /* SpaceToDepth DCR: output (n, i, j, c, h', w') */
        int64_t d[6] = {n, b, b, c, h / b, w / b}, s[6] = {sn, w, 1, sc, b * w, b};
        for (int i = 0; i < 6; i++) dims6[i] = d[i], st6[i] = s[i];
    } else { /* SpaceToDepth CRD: output (n, c, i, j, h', w') */
        int64_t d[6] = {n, c, b, b, h / b, w / b}, s[6] = {sn, sc, w, 1, b * w, b};
        for (int i = 0; i < 6; i++) dims6[i] = d[i], st6[i] = s[i];
    }
}

/* Split: sizes[i] for each of the n->n_out outputs along the (normalized) *axis. */
braid_status bd_split_resolve(const bd_node *n, const bd_tensor *in, int n_in, int *axis,
                              int64_t *sizes, bd_err *e);

/* Transpose: the permutation for rank (the attribute, or reversed dims). */
static inline void bd_transpose_perm(const bd_layout_params *p, int rank, int *perm)
{
    for (int i = 0; i < rank; i++) perm[i] = p->n_perm ? (int)p->perm[i] : rank - 1 - i;
}

#endif /* BD_OPS_LAYOUT_H */
