/* sequence.h: the sequence op family's parameters, and the split rule that
 * shape inference and the kernel share (src/ops/sequence.c). */
#ifndef BD_OPS_SEQUENCE_H
#define BD_OPS_SEQUENCE_H

#include "ops.h"

typedef struct bd_sequence_params {
    int64_t axis;     /* SplitToSequence, ConcatFromSequence */
    int keepdims;     /* SplitToSequence */
    int new_axis;     /* ConcatFromSequence */
    int dtype;        /* SequenceEmpty's element dtype; Optional's type (braid.h code), 0 if none */
} bd_sequence_params;

/* SplitToSequence of a tensor of shape x along axis a (normalized): the
 * pieces' lengths along a. split: the split input (NULL when omitted), read
 * as int64 or int32. *n gets the count, len[] (capacity cap) the lengths;
 * *squeeze is 1 when the pieces drop the axis (no split and keepdims 0). */
braid_status bd_split_to_sequence_lengths(const bd_sequence_params *p, const bd_tensor *x, int a,
                                          const bd_tensor *split, int64_t *len, int64_t cap, int64_t *n,
                                          int *squeeze, bd_err *e);

/* A position input of SequenceAt/Insert/Erase as int64 (scalar int32 or int64). */
braid_status bd_sequence_position(const bd_tensor *t, int64_t *pos, bd_err *e);

/* The shape of ConcatFromSequence n over sequence s; fails when the
 * elements' shapes cannot be joined. */
braid_status bd_sequence_concat_shape(const bd_node *n, const struct bd_seq *s, bd_tensor *o, bd_err *e);

#endif /* BD_OPS_SEQUENCE_H */
