/* layout.h: the layout family's parsed attributes (Concat, Split, Slice,
 * Transpose, Gather, Expand, Tile, Pad) and the resolvers that shape
 * inference (src/ops/layout.c) and the kernels share. */
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
    int n_split;                    /* Split before opset 13; -1 = absent */
    int64_t split[];                /* n_split sizes */
} bd_layout_params;

/* Slice: for each dim d of in[0], the first index start[d], the step step[d]
 * and the output length len[d] (dims that are not sliced: 0, 1, dim). Reads
 * the attributes (opset 1) or inputs 1-4 (known data needed). */
braid_status bd_slice_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *start,
                              int64_t *step, int64_t *len, bd_err *e);
/* Pad: pads[d] = padding before dim d, pads[rank + d] = after (negative crops). */
braid_status bd_pad_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads,
                            bd_err *e);
/* Split: sizes[i] for each of the n->n_out outputs along the (normalized) *axis. */
braid_status bd_split_resolve(const bd_node *n, const bd_tensor *in, int n_in, int *axis,
                              int64_t *sizes, bd_err *e);

/* Transpose: the permutation for rank (the attribute, or reversed dims). */
static inline void bd_transpose_perm(const bd_layout_params *p, int rank, int *perm)
{
    for (int i = 0; i < rank; i++) perm[i] = p->n_perm ? (int)p->perm[i] : rank - 1 - i;
}

#endif /* BD_OPS_LAYOUT_H */
