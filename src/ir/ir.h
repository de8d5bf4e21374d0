/* ir.h: braid's intermediate representation of an ONNX graph: values (name,
 * dtype, shape with symbolic dims, constant data), nodes (op, attributes, the
 * op's parsed parameters) and the graph that owns them in topological order.
 * The loader (src/onnx/) builds it; nothing here knows about protobuf.
 *
 * Graphs form a tree: a node of a control-flow op (If, Loop, Scan) owns
 * subgraphs in its GRAPH attributes. A subgraph's references to values of
 * enclosing graphs are explicit edges at every level: such a value is a
 * "capture", an input of the subgraph after its formal ones, and the owning
 * node reads the outer value as an "implicit" input after its formal ones.
 * Every subgraph of one node captures the same list, in the order of the
 * node's implicit inputs, so DAGs, shape inference, folding and the memory
 * planner see every outer read as an ordinary input of the node. */
#ifndef BD_IR_H
#define BD_IR_H

#include "../util/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bd_attr_type {
    BD_ATTR_UNDEFINED = 0,
    BD_ATTR_FLOAT = 1,
    BD_ATTR_INT = 2,
    BD_ATTR_STRING = 3,
    BD_ATTR_TENSOR = 4,
    BD_ATTR_GRAPH = 5,
    BD_ATTR_FLOATS = 6,
    BD_ATTR_INTS = 7,
    BD_ATTR_STRINGS = 8,
    BD_ATTR_TYPE_PROTO = 13 /* kept as its dtype code (braid.h) in i */
} bd_attr_type; /* AttributeProto.AttributeType numbers */

typedef struct bd_attr {
    char *name;
    bd_attr_type type;
    float f;
    int64_t i;
    char *s;          /* STRING, NUL-terminated */
    int n;            /* element count of FLOATS / INTS / STRINGS */
    float *floats;
    int64_t *ints;
    char **strings;
    bd_tensor *t;     /* TENSOR: owned, data owned */
    struct bd_graph *g; /* GRAPH: the subgraph, owned */
} bd_attr;

enum {
    BD_VAL_INPUT = 1u << 0,  /* a graph input (fed by the caller) */
    BD_VAL_OUTPUT = 1u << 1, /* a graph output */
    BD_VAL_CONST = 1u << 2,  /* an initializer or a Constant node's output: data is set */
    BD_VAL_OUTER = 1u << 3   /* a subgraph's capture of an enclosing graph's value (also INPUT) */
};

typedef struct bd_value {
    char *name;
    int dtype;                     /* braid_dtype; UNDEFINED when not declared */
    int rank;                      /* -1 when not declared */
    int64_t dims[BD_MAX_RANK];     /* -1 where symbolic or unknown */
    char *dim_param[BD_MAX_RANK];  /* symbolic dim names, owned, NULL if none */
    void *data;                    /* BD_VAL_CONST: host data, owned */
    int producer;                  /* node index, -1 for inputs and constants */
    unsigned flags;
} bd_value;

typedef struct bd_node {
    char *name;      /* never NULL: the loader names unnamed nodes "<op>_<index>" */
    char *op_type;
    char *domain;    /* "" for the default ONNX domain */
    int op;          /* BD_OP_* from src/ops/ops.def */
    int opset;       /* version of the node's domain in the model's opset_import */
    int n_in, n_out;
    int *in, *out;   /* value indices; -1 for an omitted optional input/output */
    int n_implicit;  /* the last n_implicit of in[]: outer values its subgraphs capture */
    int n_attrs;
    bd_attr *attrs;
    void *params;    /* the op family's parsed attributes (bd_free'd with the node) */
} bd_node;

typedef struct bd_opset {
    char *domain;
    int64_t version;
} bd_opset;

typedef struct bd_graph {
    int n_values, cap_values;
    bd_value *values;
    int n_nodes;
    bd_node *nodes;    /* topological order once bd_graph_toposort has run */
    int n_inputs, n_outputs;
    int *inputs;       /* graph inputs the caller feeds (those without an initializer first) */
    int n_captures;    /* subgraphs: the last n_captures of inputs[] are captures (BD_VAL_OUTER) */
    int is_sub;        /* a node's subgraph: its inputs' declared shapes are hints, not checked */
    int *outputs;
    unsigned char *input_shapes; /* per graph input: 1 when it feeds an op's shape input (see shape.h) */
    int n_opsets;
    bd_opset *opsets;
    int64_t ir_version;
    char *name;
} bd_graph;

void bd_graph_free(bd_graph *g);
/* Finds a value by name; -1 if absent. */
int bd_graph_find_value(const bd_graph *g, const char *name);
/* Adds a value (name copied) and returns its index, or -1 when out of memory. */
int bd_graph_add_value(bd_graph *g, const char *name);
/* Orders g->nodes topologically and sets each value's producer. Fails with
 * INVALID_MODEL naming a node on a cycle, or a node whose input nobody makes. */
braid_status bd_graph_toposort(bd_graph *g, bd_err *e);
void bd_attr_free(bd_attr *a);
/* Frees what a node owns (not the node itself). */
void bd_node_free(bd_node *n);
/* Load-time fusions (src/passes/fuse_conv.c): Conv + Relu/LeakyRelu/Clip. */
braid_status bd_graph_fuse(bd_graph *g, bd_err *e);
/* For the fusions that rewrite weights (fuse.c, fuse_affine_in.c): constant
 * v as per-channel factors against a tensor of rank R with C channels (dim
 * 1): 1 and *f, *stride (1 per channel, 0 for one value for all) when it is
 * a float constant that broadcasts along the channel axis only; a new
 * constant float value named base + suffix, of the given dims, holding data
 * (taken; -1 when out of memory); and the data of constant v dropped once
 * nothing reads it (readers: per value, the slots that read it). */
int bd_graph_channel_const(const bd_graph *g, int v, int R, int64_t C, const float **f, int *stride);
int bd_graph_new_const(bd_graph *g, const char *base, const char *suffix, int rank, const int64_t *dims, float *data);
void bd_graph_drop_if_unread(bd_graph *g, int v, const int *readers);
/* Removes the nodes a fusion absorbed (gone[i] = 1) and sorts the rest again. */
braid_status bd_graph_drop_nodes(bd_graph *g, const unsigned char *gone, bd_err *e);
/* Load-time fusions (src/passes/fuse_act.c): HardSwish and Swish written out
 * as chains of elementwise nodes become one node. */
braid_status bd_graph_fuse_act(bd_graph *g, bd_err *e);
/* Load-time fusion (src/passes/fuse_affine_in.c): Mul/Add by scalar or
 * per-channel constants right before a Conv that pads nothing, folded into
 * its weights and bias. */
braid_status bd_graph_fuse_affine_in(bd_graph *g, bd_err *e);
/* Load-time rewrites of recurrent nodes (src/passes/rnn_rewrite.c): each
 * bidirectional LSTM, GRU, RNN or DynamicQuantizeLSTM becomes a forward and
 * a reverse node and the Concats that join their outputs, so that the
 * directions can run on two streams; a constant R is stored transposed. */
braid_status bd_graph_rewrite_rnn(bd_graph *g, bd_err *e);

/* Attribute access for op families. Each returns def when absent; a present
 * attribute of the wrong type fails with INVALID_MODEL naming it. */
const bd_attr *bd_node_attr(const bd_node *n, const char *name);
braid_status bd_attr_int(const bd_node *n, const char *name, int64_t def, int64_t *out, bd_err *e);
braid_status bd_attr_float(const bd_node *n, const char *name, float def, float *out, bd_err *e);
/* *out points into the node (not a copy); def may be NULL. */
braid_status bd_attr_string(const bd_node *n, const char *name, const char *def, const char **out,
                            bd_err *e);
/* Copies up to max ints into out; *count = how many (0 when absent). More
 * than max fails with INVALID_MODEL. */
braid_status bd_attr_ints(const bd_node *n, const char *name, int64_t *out, int max, int *count,
                          bd_err *e);
braid_status bd_attr_floats(const bd_node *n, const char *name, float *out, int max, int *count,
                            bd_err *e);
/* The number of formal inputs of n (its inputs before the implicit ones). */
static inline int bd_node_formal_in(const bd_node *n) { return n->n_in - n->n_implicit; }
/* The subgraph in n's GRAPH attribute called name ("then_branch", "body"); NULL if none. */
static inline bd_graph *bd_node_subgraph(const bd_node *n, const char *name)
{
    const bd_attr *a = bd_node_attr(n, name);
    return a && a->type == BD_ATTR_GRAPH ? a->g : NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* BD_IR_H */
