/* control.h: the parsed attributes of the control op family (If, Loop,
 * Scan: nodes that own subgraphs), and the one view of a scanned tensor
 * that the engine running them on every backend shares. */
#ifndef BD_OPS_CONTROL_H
#define BD_OPS_CONTROL_H

#include "ops.h"

/* The most scan inputs and scan outputs one Scan node may have. */
#define BD_SCAN_MAX 64

typedef struct bd_control_params {
    int n_branches;          /* If: 2 (then, else); Loop and Scan: 1 (the body) */
    const bd_graph *branch[2];
    int first;               /* index of the first loop-carried/state input (Loop 2, Scan 8: 1, Scan 9+: 0) */
    int n_state;             /* Loop: loop-carried values; Scan: state variables */
    int n_scan_in;           /* Scan: scan inputs */
    int n_scan_out;          /* Loop, Scan: scan outputs of the body */
    int batch;               /* Scan opset 8: axis 0 of states and scan inputs is a batch */
    signed char in_dir[BD_SCAN_MAX], out_dir[BD_SCAN_MAX];  /* 0 forward, 1 reverse */
    int64_t in_axis[BD_SCAN_MAX], out_axis[BD_SCAN_MAX];    /* as given (may be negative) */
} bd_control_params;

/* The formal inputs and outputs of a subgraph (before its captures). */
static inline int bd_subgraph_formal_in(const bd_graph *g) { return g->n_inputs - g->n_captures; }

/* A Loop body's iteration number (i 0) and condition (i 1) are scalars; a
 * body that declares one of them [1] (Paddle's exporter does) gets it so. */
static inline void bd_loop_formal_shape(const bd_graph *body, int i, bd_tensor *t)
{
    const bd_value *v = i < body->n_inputs ? &body->values[body->inputs[i]] : NULL;
    if (v && v->rank == 1 && (v->dims[0] == 1 || v->dims[0] < 0)) t->rank = 1, t->dims[0] = 1;
}

/* A tensor seen as (outer, len, inner) elements around axis: element
 * (o, t, i) at (o * len + t) * inner + i. Slice t of it is outer rows of
 * inner elements, rows len * inner apart: a 2-D copy. */
typedef struct bd_scan_view {
    int64_t outer, len, inner;
} bd_scan_view;

static inline bd_scan_view bd_scan_view_of(const bd_tensor *t, int axis)
{
    bd_scan_view v = {1, 1, 1};
    for (int d = 0; d < t->rank; d++) {
        if (d < axis) v.outer *= t->dims[d];
        else if (d == axis) v.len = t->dims[d];
        else v.inner *= t->dims[d];
    }
    return v;
}

#endif
