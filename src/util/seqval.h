/* seqval.h: making and copying sequence and optional values (common.h says
 * how a plan holds them): the objects a kernel, the API or the CLI builds,
 * always in a pool (util/strpool.h) that frees them all at once. */
#ifndef BD_SEQVAL_H
#define BD_SEQVAL_H

#include "common.h"
#include "strpool.h"

/* A sequence of n (uninitialized) elements of tensor dtype elem, in pool. */
bd_seq *bd_seq_new(bd_strpool *pool, int elem, int n, bd_err *e);
/* dst = a deep copy of tensor src in pool: its data and, for strings, the
 * strings too. src's data may be NULL only when it has no bytes. */
braid_status bd_tensor_clone(bd_strpool *pool, const bd_tensor *src, bd_tensor *dst, bd_err *e);
/* A deep copy of sequence s (its elements' data copied) in pool. */
braid_status bd_seq_clone(bd_strpool *pool, const bd_seq *s, bd_seq **out, bd_err *e);
/* The object a container value's slot points at: slot is the value's data
 * (one pointer). NULL for an empty optional. */
static inline void *bd_box_get(const void *slot) { return slot ? *(void *const *)slot : NULL; }
static inline void bd_box_set(void *slot, const void *obj) { *(const void **)slot = obj; }

#endif /* BD_SEQVAL_H */
