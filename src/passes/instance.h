/* instance.h: a graph specialized to the input shapes of one run (an
 * "instance"): every value's dtype and shape inferred with symbolic dims
 * resolved, and every node whose inputs are known at plan time folded into a
 * constant by running its CPU kernel once. Plans are built on instances. */
#ifndef BD_INSTANCE_H
#define BD_INSTANCE_H

#include "ir/ir.h"

/* Staged instances. Some shapes are known only once part of the graph has
 * run: the output of a node flagged BD_OPF_DATA_SHAPE (NonZero: its kernel
 * writes the actual dims), an output whose size only its kernel learns (a
 * Loop's scan outputs: infer leaves dims -1 and the kernel allocates), and
 * every output of a node whose shape input (a Reshape's shape, a Slice's
 * starts) is computed from data at run time. An instance then covers a
 * stage: the nodes whose shapes are known (live, or folded), while every
 * node that needs a run-time shape or value waits for a later stage
 * (later[]). When the stage has run, the boundary values are read (the
 * actual dims of BD_IV_RUNTIME values, the host data of BD_IV_READBACK ones)
 * and bd_inst_next continues inference for the waiting nodes with them:
 * the next stage. src/runtime/stage.c runs and caches the sequence. */
enum {
    BD_IV_RUNTIME = 1u << 0,  /* made in this stage, shape known only after its node ran */
    BD_IV_ALLOC = 1u << 1,    /* RUNTIME, and no size is known now: the kernel allocates it */
    BD_IV_EXPORT = 1u << 2,   /* made in this stage and read after it: its memory outlives the stage */
    BD_IV_READBACK = 1u << 3, /* a later stage needs its values on the host: read at the boundary */
    BD_IV_EXTERNAL = 1u << 4  /* made by an earlier stage: it lives in that stage's memory */
};

typedef struct bd_inst {
    const bd_graph *g;
    bd_tensor *vals;          /* n_values: dtype and shape; data for plan-time constants. A
                               * RUNTIME value holds its largest shape (ALLOC: dims -1) */
    unsigned char *owned;     /* n_values: 1 where vals[v].data was made here (folded, read back) */
    unsigned char *vflag;     /* n_values: BD_IV_* */
    unsigned char *live;      /* n_nodes: 1 where the node runs in this stage */
    unsigned char *later;     /* n_nodes: 1 where the node waits for a later stage */
    int n_later;
    int stage;                /* 0 for the first */
    double *cost;             /* n_nodes: estimated seconds of each live node */
    /* n_nodes: each node as this instance runs it: the graph's own, or a
     * copy that a plan-time fusion rewrote (src/passes/fuse_conv.c), owned here. */
    const bd_node **node;
    bd_node *fused;           /* the rewritten copies */
    int n_fused;
    /* When an If was replaced by its branch (src/passes/inline_if.c), g is a
     * flat graph of this instance's own (later stages share it). */
    bd_graph *flat;
    unsigned char *flat_own;
    /* Strings that nodes folded here made (string tensors point into it);
     * made on first use. */
    struct bd_strpool *strings;
    /* After the NHWC pass (src/passes/nhwc.c) changed something: per
     * value of the flat graph, its layout (BD_LAYOUT_*), the conversions
     * it planned, and what it allocated. NULL / 0 otherwise. */
    unsigned char *vlayout;
    int n_conversions;
    struct bd_lay_own *lay;
} bd_inst;

/* Replaces If node `at` of x (its condition known) by branch b (0: then,
 * 1: else): x->g becomes a flat graph, nodes from `at` on still to infer. */
braid_status bd_inst_inline_if(bd_inst *x, int at, int b, bd_err *e);
void bd_flat_free(bd_graph *g, unsigned char *own);
/* A flat graph f shares g's inputs, outputs, opsets and name (not owned). */
void bd_flat_share(bd_graph *f, const bd_graph *g);

/* inputs: one per graph input (g->inputs order); only dtype and shape are
 * read, and the data of small inputs that decide shapes (plan values).
 * known (may be NULL): per input, 1 when its data is a constant of the
 * caller's (a nested plan's captures of plan-time constants), used as such
 * and borrowed for the instance's life. Fails with SHAPE or DTYPE when an
 * input disagrees with the model's declaration, and with the op's error
 * (prefixed by the node) when inference fails. */
braid_status bd_inst_build(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known, bd_inst *x,
                           bd_err *e);
/* The next stage of prev: actual holds, for each boundary value of prev (BD_IV_RUNTIME
 * values read later, BD_IV_READBACK values), its dtype and actual shape, and
 * for READBACK ones its host data (copied). prev must outlive x: constants
 * are shared. */
braid_status bd_inst_next(const bd_inst *prev, const bd_tensor *actual, bd_inst *x, bd_err *e);
/* 1 when value v of prev must be read when prev's stage ends. */
static inline int bd_inst_boundary(const bd_inst *x, int v)
{
    return x->n_later && ((x->vflag[v] & BD_IV_READBACK) || ((x->vflag[v] & BD_IV_RUNTIME) && (x->vflag[v] & BD_IV_EXPORT)));
}
void bd_inst_free(bd_inst *x);

/* The NHWC pass (src/passes/nhwc.c): on a built first-stage instance of
 * a top-level plan (no If inlined, no later stage), chooses NHWC for the 2-D
 * float Convs and the ops around them where that pays, and makes x an
 * instance of a flat graph with the NHWC nodes and the conversions; inputs
 * as given to bd_inst_build. Leaves x as it was when nothing changes. */
braid_status bd_inst_layout(bd_inst *x, const bd_tensor *inputs, bd_err *e);
void bd_lay_own_free(struct bd_lay_own *o);

/* Plan-time fusion (src/passes/fuse_conv.c): folds an Add into the Conv that
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
 * returns its full length. known: as for bd_inst_build (their values are
 * not part of the key). */
int bd_signature(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known, int64_t *sig, int max);

/* Checks one run input against the declaration of graph input i. */
braid_status bd_check_input(const bd_graph *g, int i, const bd_tensor *t, bd_err *e);

#endif
