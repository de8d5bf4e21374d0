/* plan.h: the plan compiler's interface. A plan is data: per stream, a list
 * of commands (launch a node, record an event, wait on an event), plus an
 * offset in one arena for every intermediate buffer. It knows nothing about
 * ops or backends; src/graph/ feeds it a DAG with costs and buffer sizes. */
#ifndef BD_PLAN_H
#define BD_PLAN_H

#include <stdio.h>

#include "../util/common.h"

/* What the planner sees of a graph. Nodes are numbered in a topological
 * order; every array is owned by the caller. */
typedef struct bd_sched_input {
    int n_nodes;
    const int *pred_start;        /* CSR: data predecessors of node i are */
    const int *pred;              /*   pred[pred_start[i] .. pred_start[i+1]) */
    const double *cost;           /* estimated time of each node, seconds */
    double sync_cost;             /* estimated time of one cross-stream record+wait, seconds */
    int n_bufs;                   /* intermediates placed in the arena */
    const size_t *buf_size;       /* bytes */
    const int *buf_producer;      /* the node that writes buffer b */
    const int *use_start;         /* CSR: the nodes that read buffer b are */
    const int *use;               /*   use[use_start[b] .. use_start[b+1]) */
    const char *const *node_name; /* optional: names for printing and messages */
    const char *const *buf_name;  /* optional: n_bufs names for messages (else the producer's name) */
    /* optional: per buffer, 1 when it is read after the plan ends (by a
     * later stage of a staged sequence): its bytes are never reused. */
    const unsigned char *buf_keep;
} bd_sched_input;

typedef enum bd_cmd_kind { BD_CMD_LAUNCH = 0, BD_CMD_RECORD = 1, BD_CMD_WAIT = 2 } bd_cmd_kind;

typedef struct bd_cmd {
    bd_cmd_kind kind;
    int arg; /* LAUNCH: node index; RECORD and WAIT: event index */
} bd_cmd;

typedef struct bd_plan {
    int n_streams;
    int *stream_start;   /* commands of stream s: cmds[stream_start[s] .. stream_start[s+1]) */
    bd_cmd *cmds;
    int *node_stream;    /* n_nodes: the stream that launches each node */
    int n_events;
    int *event_node;     /* n_events: event e is recorded right after this node */
    size_t *buf_offset;  /* n_bufs: byte offset in the arena, aligned to BD_PLAN_ALIGN */
    size_t arena_size;   /* bytes the arena needs */
    size_t sum_bufs;     /* the sum of all (aligned) buffer sizes: the arena without reuse */
} bd_plan;

#define BD_PLAN_ALIGN 256

/* Builds a plan. max_streams: 0 = automatic (the width the DAG needs, after
 * merging chains too small to pay for a fork and a join), 1 = a plain serial
 * plan in node order, N = at most N streams. */
braid_status bd_plan_build(const bd_sched_input *in, int max_streams, bd_plan *out, bd_err *e);

/* Checks a plan, independently of how it was built: every node launched
 * once; every read ordered after its write; every reuse of arena bytes
 * ordered after the last read of the bytes' previous tenant (a kept buffer's
 * bytes are never reused); every wait has a record; no deadlock. Fails with INTERNAL and a message naming the first
 * violation. */
braid_status bd_plan_verify(const bd_sched_input *in, const bd_plan *p, bd_err *e);

void bd_plan_free(bd_plan *p);

/* Prints the plan as text: per stream its commands in order, one a line
 * ("stream 0: launch conv_1", "stream 1: wait e3", "stream 0: record e3"),
 * then "streams N, events M, arena X bytes (intermediates Y bytes)". */
void bd_plan_print(FILE *f, const bd_sched_input *in, const bd_plan *p);

/* Writes the plan as Graphviz: nodes coloured by stream, data edges solid,
 * event edges (producer to the consumer that waits) dashed and labelled. */
braid_status bd_plan_write_dot(const char *path, const bd_sched_input *in, const bd_plan *p, bd_err *e);

#endif /* BD_PLAN_H */
