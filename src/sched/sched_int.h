/* sched_int.h: what the files of the plan compiler share (bitsets, the
 * reduced dependency DAG) and the steps bd_plan_build runs in order. */
#ifndef BD_SCHED_INT_H
#define BD_SCHED_INT_H

#include "plan.h"

/* ---- bitsets: rows of 64-bit words ------------------------------------------ */
#define BD_BITS_WORDS(n) (((size_t)(n) + 63) / 64)
static inline void bd_bit_set(uint64_t *b, int i) { b[i >> 6] |= 1ull << (i & 63); }
static inline int bd_bit_get(const uint64_t *b, int i) { return (int)((b[i >> 6] >> (i & 63)) & 1); }

/* The dependency DAG: data edges (in->pred) plus producer -> reader edges of
 * the buffers, duplicates removed, then transitively reduced. */
typedef struct bd_dag {
    int n;
    int *pred_start, *pred; /* reduced: direct predecessors, ascending */
    int *succ_start, *succ; /* reduced: direct successors, ascending */
    size_t words;           /* words per closure row */
    uint64_t *desc;         /* n rows: the descendants of each node (the closure) */
} bd_dag;

/* Name of node i for messages: in->node_name[i] or "node<i>" written in buf. */
const char *bd_sched_node_name(const bd_sched_input *in, int i, char *buf, size_t n);
/* Name of buffer b: in->buf_name[b], else its producer's name. */
const char *bd_sched_buf_name(const bd_sched_input *in, int b, char *buf, size_t n);
/* Size of buffer b rounded up to BD_PLAN_ALIGN; fails with LIMIT on overflow. */
braid_status bd_sched_aligned_size(const bd_sched_input *in, int b, size_t *out, bd_err *e);

/* dag.c: checks the caller's input: sizes, ranges, nodes numbered in a
 * topological order, every reader of a buffer later than its producer. */
braid_status bd_sched_check_input(const bd_sched_input *in, bd_err *e);

/* dag.c: builds the reduced DAG and its closure from a checked input. */
braid_status bd_dag_build(const bd_sched_input *in, bd_dag *d, bd_err *e);
void bd_dag_free(bd_dag *d);

/* streams.c: the minimum chain cover, merged by cost and capped at
 * max_streams (0 = no cap). Fills node_stream (n) and *n_streams; streams
 * are numbered by their first node. */
braid_status bd_streams_assign(const bd_sched_input *in, const bd_dag *d, int max_streams,
                               int *node_stream, int *n_streams, bd_err *e);

/* events.c: lays out p's commands from p->node_stream (and n_streams): waits,
 * launches in node order, records. Returns pos (n: 1-based position of each
 * node on its stream) and clock (n x n_streams: per stream, the last
 * position known to happen before the node's launch), both bd_malloc'ed. */
braid_status bd_events_build(const bd_sched_input *in, const bd_dag *d, bd_plan *p, int **pos,
                             int **clock, bd_err *e);

/* memplan.c: fills p->buf_offset, arena_size and sum_bufs from the
 * happens-before relation given by pos and clock. */
braid_status bd_memplan(const bd_sched_input *in, bd_plan *p, const int *pos, const int *clock,
                        bd_err *e);

#endif /* BD_SCHED_INT_H */
