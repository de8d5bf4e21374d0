/* ops.h: the op registry (built from ops.def) and the interface every op
 * family implements: parse attributes once, infer output dtypes and shapes,
 * and estimate cost for the planner. Kernels live in the backends. */
#ifndef BD_OPS_H
#define BD_OPS_H

#include "ir/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BD_VARIADIC 2147483647

/* Op families, in the order of their files. */
#define BD_FAMILIES(X)                                                                             \
    X(conv) X(gemm) X(norm) X(binary) X(unary) X(pool) X(softmax) X(reduce) X(shape) X(layout)     \
    X(generate) X(resize) X(control) X(rnn) X(quant) X(qgemm) X(qlinear) X(index) X(loss)         \
    X(vision) X(signal) X(attention) X(linalg) X(sequence) X(string) X(scatter) X(select) X(random) \
    X(cumulative) X(topk) X(layernorm) X(activation) X(cast) X(im2col)       \
    X(rope) X(linattn) X(msattn)                                                                   \
    X(training) X(text) X(ml) X(ml_tree) X(svm) X(image)

typedef enum bd_family {
#define X(f) BD_FAM_##f,
    BD_FAMILIES(X)
#undef X
    BD_FAM_COUNT
} bd_family;

/* The row macros of ops.def. */
#define IO(lo, hi) lo, hi
#define OPSETS(first, last) first, last
#define SI(i) (1u << (i))

typedef enum bd_op {
#define OP(name, fam, in, out, opsets, si, flags) BD_OP_##name,
#define MSOP(name, fam, in, out, opsets, si, flags) BD_OP_MS_##name,
#define MLOP(name, fam, in, out, opsets, si, flags) BD_OP_ML_##name,
#define TROP(name, fam, in, out, opsets, si, flags) BD_OP_TR_##name,
#define PVOP(name, fam, in, out, opsets, si, flags) BD_OP_PV_##name,
#include "ops.def"
#undef OP
#undef MSOP
#undef MLOP
#undef TROP
#undef PVOP
    BD_OP_COUNT
} bd_op;

/* Op flags (the last column of ops.def). */
enum {
    /* The output shape depends on input values (NonZero, Unique, a
     * NonMaxSuppression): infer gives each output's largest shape, the kernel
     * writes the actual dims into out[k].dims (same rank, no dim larger) and
     * the data contiguously for those dims. With constant inputs the node
     * folds; otherwise it runs with outputs of the largest size, and the
     * nodes that read them wait for the next stage of the plan, which is
     * planned for the actual dims (src/runtime/stage.c). A CUDA kernel learns
     * the dims on the host (a synchronization of its stream). */
    BD_OPF_DATA_SHAPE = 1u << 0,
    /* The node owns subgraphs (graph attributes): If, Loop, Scan. Its
     * subgraphs' reads of outer values are its implicit inputs (ir.h). */
    BD_OPF_SUBGRAPHS = 1u << 1,
    /* Runs on the host on every backend (strings, sequences). */
    BD_OPF_HOST = 1u << 2,
    /* Never folded into a constant at plan time, even with constant inputs
     * (random ops: each run draws anew). */
    BD_OPF_NO_FOLD = 1u << 3
};

/* Memory layouts of 4-D float values, chosen per value when a plan is made
 * (src/passes/nhwc.c). A value's shape is always its physical one: an NHWC
 * value of logical shape (N, C, H, W) has dims (N, H, W, C). Ops that run on
 * NHWC data say so in their parsed attributes (bd_conv_params.layout,
 * bd_pool_params.layout); every other op sees plain row-major tensors. */
enum { BD_LAYOUT_NCHW = 0, BD_LAYOUT_NHWC = 1 };

/* Domains braid knows. */
typedef enum bd_domain {
    BD_DOM_ONNX = 0,     /* "" (also written "ai.onnx") */
    BD_DOM_MS = 1,       /* "com.microsoft": onnxruntime's contrib ops */
    BD_DOM_ML = 2,       /* "ai.onnx.ml" */
    BD_DOM_TRAINING = 3, /* "ai.onnx.preview.training" */
    BD_DOM_PREVIEW = 4,  /* "ai.onnx.preview" */
    BD_DOM_COUNT
} bd_domain;
extern const char *const bd_domain_names[BD_DOM_COUNT];

typedef struct bd_op_info {
    const char *name;
    bd_domain domain;
    bd_family family;
    int min_in, max_in, min_out, max_out;
    int first_opset, last_opset; /* last 0: open-ended */
    unsigned shape_inputs;       /* bit i: input i decides output shapes */
    unsigned flags;              /* BD_OPF_* */
} bd_op_info;

extern const bd_op_info bd_op_table[BD_OP_COUNT];
extern const char *const bd_family_names[BD_FAM_COUNT];

/* The input slots an executor must hand node n: its inputs, and up to the
 * op's most inputs after them (read as omitted), since a family may look at
 * any slot the op defines (Slice's steps of a one-input Slice). */
static inline int bd_node_slots(const bd_node *n)
{
    int m = n->op >= 0 && n->op < BD_OP_COUNT ? bd_op_table[n->op].max_in : 0;
    return n->n_in > m || m == BD_VARIADIC ? n->n_in : m;
}

/* The highest default-domain opset braid knows; models importing more are
 * refused. Every op braid runs has the same meaning from opset 23 to 28 for
 * the dtypes braid runs: Cast 24/25/28 changed only float8/float4 rounding,
 * Range 27 only float16/bfloat16 accumulation. Check again before raising. */
#define BD_MAX_OPSET 28

/* The domain of a node's domain string ("" and "ai.onnx" are the default
 * one); -1 when braid knows no op of that domain. */
int bd_domain_lookup(const char *domain);
/* Looks up the row of (domain, op_type) whose opsets cover opset; -1 when
 * none does. opset < 0 matches any row (does braid know the op at all). */
int bd_op_lookup(const char *domain, const char *op_type, int64_t opset);
/* The opset of the node's domain that braid runs last for op_type; 0 when
 * braid knows no such op. For messages. */
int bd_op_last_opset(const char *domain, const char *op_type, int *first);

/* What a family implements (src/ops/<family>.c), each switching on n->op.
 *
 * parse: validates the node's attributes and fills n->params (bd_malloc'ed,
 *   freed with the node). Runs once, at load. Errors name the attribute; the
 *   caller prefixes "node 'NAME' (OP): ".
 * infer: given the inputs' dtypes and shapes (in[i].data set when the value is
 *   known at plan time, such as initializers, Constant outputs and folded
 *   shape computations; an omitted optional input has dtype UNDEFINED), sets
 *   each output's dtype, rank and dims. Checks dtypes (DTYPE) and shapes
 *   (SHAPE). An op whose output shape depends on an input that is not known at
 *   plan time fails with UNSUPPORTED; when that input is one of its shape
 *   inputs (the SI column) and is computed at run time, the node waits for a
 *   later stage of the plan, made once the stage before has run and the
 *   input's values have been read back (src/passes/instance.c). An output with
 *   no bound before the node runs (a Loop's scan outputs) gets its dtype and
 *   dims -1 (or rank -1): its kernel then sets the shape and supplies the
 *   memory, and readers wait for a later stage. Only the control family does
 *   this today (its engine, src/runtime/controlflow.c, owns such outputs).
 * cost: estimated floating-point operations of one run (the planner adds the
 *   bytes moved itself). */
#define X(f)                                                                                       \
    braid_status bd_##f##_parse(bd_node *n, bd_err *e);                                            \
    braid_status bd_##f##_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e); \
    double bd_##f##_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out);
BD_FAMILIES(X)
#undef X

/* Dispatch through the family of n->op. */
braid_status bd_op_parse(bd_node *n, bd_err *e);
braid_status bd_op_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e);
double bd_op_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out);

/* 1 when input `index` of op decides output shapes (Reshape's shape, Slice's
 * starts, Resize's scales...: the shape_inputs column of ops.def): such
 * inputs are known when the plan is made (constants, folded shape
 * arithmetic, small graph inputs), or read back at the end of the stage that
 * computes them and the node planned in the next. */
static inline int bd_op_shape_input(int op, int index)
{
    return op >= 0 && op < BD_OP_COUNT && index >= 0 && index < 32 && (bd_op_table[op].shape_inputs >> index & 1u);
}

/* Shared helpers for families. */
/* The end of a family's parse: on success n->params takes p (what an earlier
 * parse left there is freed), on failure p is freed; returns st. */
static inline braid_status bd_params_done(bd_node *n, void *p, braid_status st)
{
    if (st) {
        bd_free(p);
        return st;
    }
    bd_free(n->params);
    n->params = p;
    return BRAID_OK;
}
/* Normalizes a possibly negative axis against rank; fails with INVALID_MODEL. */
braid_status bd_axis(int64_t axis, int rank, int *out, bd_err *e);
/* x seen as (outer, dims[axis], inner) around axis (0 <= axis < rank). */
static inline void bd_axis_split(const bd_tensor *x, int axis, int64_t *outer, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis) *outer *= x->dims[d];
        else if (d > axis) *inner *= x->dims[d];
    }
}
/* Reads a constant int64 or int32 1-D (or scalar) input into out (max entries). */
braid_status bd_const_ints(const bd_tensor *t, const char *what, int64_t *out, int max, int *count,
                           bd_err *e);
/* Fails with UNSUPPORTED unless t->dtype is one of the listed types (0-terminated):
 * a dtype braid does not run for this op. Use DTYPE for inputs whose dtypes
 * must agree and do not. */
braid_status bd_expect_dtype(const bd_tensor *t, const char *what, bd_err *e, ...);

#ifdef __cplusplus
}
#endif
#endif /* BD_OPS_H */
