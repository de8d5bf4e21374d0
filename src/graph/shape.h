/* shape.h: a graph specialized to the input shapes of one run (an
 * "instance"): every value's dtype and shape inferred with symbolic dims
 * resolved, and every node whose inputs are known at plan time folded into a
 * constant by running its CPU kernel once. Plans are built on instances. */
#ifndef BD_SHAPE_H
#define BD_SHAPE_H

#include "graph/ir.h"

typedef struct bd_inst {
    const bd_graph *g;
    bd_tensor *vals;          /* n_values: dtype and shape; data for plan-time constants */
    unsigned char *owned;     /* n_values: 1 where vals[v].data was made here (folded) */
    unsigned char *live;      /* n_nodes: 0 where the node was folded away */
    double *cost;             /* n_nodes: estimated seconds of each live node */
    /* n_nodes: each node as this instance runs it: the graph's own, or a
     * copy that a plan-time fusion rewrote (src/graph/fuse.c), owned here. */
    const bd_node **node;
    bd_node *fused;           /* the rewritten copies */
    int n_fused;
} bd_inst;

/* inputs: one per graph input (g->inputs order); only dtype and shape are
 * read. Fails with SHAPE or DTYPE when an input disagrees with the model's
 * declaration, and with the op's error (prefixed by the node) when inference
 * fails. */
braid_status bd_inst_build(const bd_graph *g, const bd_tensor *inputs, bd_inst *x, bd_err *e);
void bd_inst_free(bd_inst *x);

/* Plan-time fusion (src/graph/fuse.c): folds an Add into the Conv that
 * produces one of its inputs (and the Relu, LeakyRelu or Clip right after the
 * Add, when there is one) wherever the estimated time of the instance's DAG
 * does not grow. lanes: the streams the plan may use. fill_cost: the
 * estimated cost (seconds, as in cost[]) at which one node occupies the whole
 * device, so that nothing beside it runs faster for running concurrently; 0
 * when no node fills the device (each lane then has 1/lanes of it). *n_folded
 * gets the number of Adds folded. */
braid_status bd_inst_fuse_add(bd_inst *x, int lanes, double fill_cost, int *n_folded, bd_err *e);

/* A small graph input (at most 1-D, at most BD_PLAN_VALUE_MAX int or float
 * values) that feeds an op's shape input (Slice starts, Reshape shape, Resize
 * scales: bd_op_shape_input) is known when the plan is made: its values join
 * the plan's cache key with the input shapes, and what depends on it folds. */
#define BD_PLAN_VALUE_MAX 16
int bd_input_is_plan_value(const bd_graph *g, int i, const bd_tensor *t);
/* Writes the cache key of these inputs into sig (up to max entries) and
 * returns its full length. */
int bd_signature(const bd_graph *g, const bd_tensor *inputs, int64_t *sig, int max);

/* Checks one run input against the declaration of graph input i. */
braid_status bd_check_input(const bd_graph *g, int i, const bd_tensor *t, bd_err *e);

#endif
