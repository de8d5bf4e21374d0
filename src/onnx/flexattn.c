/* flexattn.c: the op the loader expands into other ops instead of running
 * them as one node: ai.onnx.preview's FlexAttention becomes the ops of its
 * ONNX function body (the context-dependent function that onnx's own
 * `_expanded` node tests hold), with its score_mod and prob_mod subgraphs
 * inlined where the body calls them. Both backends then run it with the
 * kernels they have, and the planner sees the subgraphs' nodes as nodes.
 *
 * The body is handed to the loader as a FunctionProto (bd_expansion.f), read
 * like a model-local function (load.c's expand_function): its formal inputs
 * are Q, K, V and then every outer-scope name the subgraphs read, the call
 * passes the node's inputs and those names, and every other name gets the
 * node's name as prefix. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- an arena for the protobuf structs of one expansion ---------------------- */

typedef struct blk {
    struct blk *next;
    max_align_t data[];
} blk;

typedef struct arena {
    blk *head;
    int failed;
} arena;

static void *a_alloc(arena *a, size_t n)
{
    blk *b = bd_calloc(1, sizeof *b + (n ? n : 1));
    if (!b) { a->failed = 1; return NULL; }
    b->next = a->head;
    a->head = b;
    return b->data;
}

static char *a_str(arena *a, const char *s)
{
    char *d = a_alloc(a, strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static char *a_cat(arena *a, const char *x, const char *y)
{
    char *d = a_alloc(a, strlen(x) + strlen(y) + 1);
    if (d) strcat(strcpy(d, x), y);
    return d;
}

/* ---- the body under construction ------------------------------------------------ */

#define MAX_BODY 64 /* nodes of the body itself, subgraphs aside */

typedef struct body {
    arena *a;
    Onnx__NodeProto **nodes;
    size_t n, cap;
} body;

/* Appends n to the body; 0 when out of memory. */
static int push_node(body *b, Onnx__NodeProto *n)
{
    if (!n) return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : MAX_BODY;
        Onnx__NodeProto **nn = a_alloc(b->a, cap * sizeof *nn);
        if (!nn) return 0;
        if (b->n) memcpy(nn, b->nodes, b->n * sizeof *nn);
        b->nodes = nn;
        b->cap = cap;
    }
    b->nodes[b->n++] = n;
    return 1;
}

static Onnx__NodeProto *add_node(body *b, const char *op, const char *out, int n_in, ...)
{
    Onnx__NodeProto *n = a_alloc(b->a, sizeof *n);
    char **in = a_alloc(b->a, (size_t)(n_in + 1) * sizeof *in), **o = a_alloc(b->a, sizeof *o);
    if (!n || !in || !o) return NULL;
    onnx__node_proto__init(n);
    va_list ap;
    va_start(ap, n_in);
    for (int i = 0; i < n_in; i++) in[i] = (char *)va_arg(ap, const char *);
    va_end(ap);
    o[0] = (char *)out;
    n->input = in;
    n->n_input = (size_t)n_in;
    n->output = o;
    n->n_output = 1;
    n->op_type = (char *)op;
    n->domain = "";
    n->name = (char *)out; /* prefixed like any name of the body */
    return push_node(b, n) ? n : NULL;
}

static Onnx__AttributeProto *add_attr(body *b, Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type)
{
    if (!n) return NULL;
    Onnx__AttributeProto **as = a_alloc(b->a, (n->n_attribute + 1) * sizeof *as);
    Onnx__AttributeProto *at = a_alloc(b->a, sizeof *at);
    if (!as || !at) return NULL;
    onnx__attribute_proto__init(at);
    if (n->n_attribute) memcpy(as, n->attribute, n->n_attribute * sizeof *as);
    at->name = (char *)name;
    at->has_type = 1;
    at->type = type;
    as[n->n_attribute++] = at;
    n->attribute = as;
    return at;
}

static void attr_int(body *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *at = add_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (at) at->has_i = 1, at->i = v;
}

static void attr_ints(body *b, Onnx__NodeProto *n, const char *name, const int64_t *v, size_t count)
{
    Onnx__AttributeProto *at = add_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    int64_t *c = a_alloc(b->a, count * sizeof *c);
    if (!at || !c) return;
    memcpy(c, v, count * sizeof *c);
    at->ints = c;
    at->n_ints = count;
}

/* A Constant node: value = t. */
static void constant(body *b, const char *out, Onnx__TensorProto *t)
{
    Onnx__NodeProto *n = add_node(b, "Constant", out, 0);
    Onnx__AttributeProto *at = add_attr(b, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (at) at->t = t;
}

/* A Constant of one int64 (rank 0, or rank 1 of length 1 when vec). */
static void const_i64(body *b, const char *out, int64_t v, int vec)
{
    Onnx__TensorProto *t = a_alloc(b->a, sizeof *t);
    int64_t *d = a_alloc(b->a, sizeof *d), *dims = a_alloc(b->a, sizeof *dims);
    if (!t || !d || !dims) return;
    onnx__tensor_proto__init(t);
    t->has_data_type = 1;
    t->data_type = BRAID_DTYPE_INT64;
    *d = v;
    t->int64_data = d;
    t->n_int64_data = 1;
    *dims = 1;
    t->dims = dims;
    t->n_dims = vec ? 1 : 0;
    constant(b, out, t);
}

static void const_f32(body *b, const char *out, float v)
{
    Onnx__TensorProto *t = a_alloc(b->a, sizeof *t);
    float *d = a_alloc(b->a, sizeof *d);
    if (!t || !d) return;
    onnx__tensor_proto__init(t);
    t->has_data_type = 1;
    t->data_type = BRAID_DTYPE_FLOAT;
    *d = v;
    t->float_data = d;
    t->n_float_data = 1;
    constant(b, out, t);
}

static void shape_slice(body *b, const char *out, const char *x, int64_t start, int64_t end)
{
    Onnx__NodeProto *n = add_node(b, "Shape", out, 1, x);
    attr_int(b, n, "start", start);
    attr_int(b, n, "end", end);
}

/* ---- subgraphs ------------------------------------------------------------------- */

typedef struct outer_list {
    const char **names; /* as the subgraphs write them */
    char **formals;     /* their formal names in the body */
    int n, cap;
} outer_list;

/* Whether a node of g writes name (nodes_only), or g defines it at all. */
static int gp_defines(const Onnx__GraphProto *g, const char *name, int nodes_only)
{
    for (size_t i = 0; i < g->n_input && !nodes_only; i++)
        if (g->input[i]->name && !strcmp(g->input[i]->name, name)) return 1;
    for (size_t i = 0; i < g->n_initializer && !nodes_only; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return 1;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_output; k++)
            if (!strcmp(g->node[i]->output[k], name)) return 1;
    return 0;
}

/* The formal name of outer-scope name nm (added on first use). */
static const char *outer_formal(arena *a, outer_list *o, const char *nm)
{
    for (int i = 0; i < o->n; i++)
        if (!strcmp(o->names[i], nm)) return o->formals[i];
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        const char **nn = a_alloc(a, (size_t)cap * sizeof *nn);
        char **nf = a_alloc(a, (size_t)cap * sizeof *nf);
        if (!nn || !nf) return NULL;
        if (o->n) memcpy(nn, o->names, (size_t)o->n * sizeof *nn), memcpy(nf, o->formals, (size_t)o->n * sizeof *nf);
        o->names = nn;
        o->formals = nf;
        o->cap = cap;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "\001outer%d", o->n); /* no name of the body or a subgraph starts with \001 */
    o->names[o->n] = nm;
    o->formals[o->n] = a_str(a, buf);
    return o->formals[o->n++];
}

/* Name nm of subgraph g as the body sees it: its input is src, its output
 * dst (when a node of g writes it), its own names get "tag/", other names
 * are outer-scope formals. */
static const char *sub_name(body *b, outer_list *o, const Onnx__GraphProto *g, const char *tag, const char *src,
                            const char *dst, const char *nm)
{
    if (!nm[0]) return nm;
    if (!strcmp(nm, g->input[0]->name)) return src;
    if (!strcmp(nm, g->output[0]->name) && gp_defines(g, nm, 1)) return dst;
    if (gp_defines(g, nm, 0)) return a_cat(b->a, a_cat(b->a, tag, "/"), nm);
    return outer_formal(b->a, o, nm);
}

/* Inlines subgraph g (attribute `tag`) reading value src and writing dst. */
static braid_status inline_sub(body *b, outer_list *o, const Onnx__GraphProto *g, const char *tag, const char *src,
                               const char *dst, bd_err *e)
{
    if (g->n_input != 1 || g->n_output != 1)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph '%s' has %zu inputs and %zu outputs; it must have 1 and 1",
                       tag, g->n_input, g->n_output);
    if (!g->input[0]->name || !g->input[0]->name[0] || !g->output[0]->name || !g->output[0]->name[0])
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph '%s': its input and output must be named", tag);
    if (g->n_sparse_initializer)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "subgraph '%s': sparse initializers are not supported", tag);
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        constant(b, sub_name(b, o, g, tag, src, dst, t->name ? t->name : ""), t);
    }
    int made = 0; /* whether a node of the subgraph writes its output */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *sn = g->node[i];
        for (size_t k = 0; k < sn->n_attribute; k++)
            if (sn->attribute[k]->g || sn->attribute[k]->n_graphs)
                return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "subgraph '%s': node '%s' (%s) holds a subgraph of its own; "
                               "braid inlines score_mod and prob_mod only when their nodes hold none", tag,
                               sn->name ? sn->name : "", sn->op_type ? sn->op_type : "");
        Onnx__NodeProto *n = a_alloc(b->a, sizeof *n);
        char **in = a_alloc(b->a, (sn->n_input + 1) * sizeof *in), **out = a_alloc(b->a, (sn->n_output + 1) * sizeof *out);
        if (!n || !in || !out) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        *n = *sn;
        for (size_t k = 0; k < sn->n_input; k++) in[k] = (char *)sub_name(b, o, g, tag, src, dst, sn->input[k]);
        for (size_t k = 0; k < sn->n_output; k++) {
            out[k] = (char *)sub_name(b, o, g, tag, src, dst, sn->output[k]);
            made |= out[k] == dst;
        }
        n->input = in;
        n->output = out;
        char nm[64];
        snprintf(nm, sizeof nm, "%zu", i);
        n->name = a_cat(b->a, a_cat(b->a, tag, "/"), sn->name && sn->name[0] ? sn->name : nm);
        if (!push_node(b, n) || b->a->failed) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!made) /* the output is the input, an initializer or an outer value */
        add_node(b, "Identity", dst, 1, sub_name(b, o, g, tag, src, dst, g->output[0]->name));
    return b->a->failed ? BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory") : BRAID_OK;
}

/* ---- FlexAttention ---------------------------------------------------------------- */

static int is_float_type(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16 ||
           dt == BRAID_DTYPE_DOUBLE;
}

braid_status bd_expand_flex_attention(const Onnx__NodeProto *np, int q_dtype, int same_heads, bd_expansion *x,
                                      bd_err *e)
{
    braid_status st = BRAID_OK;
    memset(x, 0, sizeof *x);
    arena *a = bd_calloc(1, sizeof *a);
    if (!a) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    x->arena = a;
    body b = {.a = a};
    outer_list o = {0};
    const Onnx__AttributeProto *score_mod = NULL, *prob_mod = NULL, *scale = NULL, *prec = NULL;
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *at = np->attribute[i];
        const char *nm = at->name ? at->name : "";
        int want = -1;
        if (!strcmp(nm, "score_mod")) score_mod = at, want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        else if (!strcmp(nm, "prob_mod")) prob_mod = at, want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
        else if (!strcmp(nm, "scale")) scale = at, want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        else if (!strcmp(nm, "softmax_precision")) prec = at, want = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        else {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "unknown attribute '%s' (FlexAttention has scale, "
                         "softmax_precision, score_mod and prob_mod)", nm);
            goto fail;
        }
        if (at->has_type && (int)at->type != want) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be a %s", nm,
                         want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH ? "graph"
                         : want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? "float" : "int");
            goto fail;
        }
        if (want == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH && !at->g) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' holds no graph", nm);
            goto fail;
        }
    }
    if (q_dtype && !is_float_type(q_dtype)) {
        st = BD_FAIL(e, BRAID_ERR_DTYPE, "input Q has dtype %s; FlexAttention takes float16, bfloat16, float or "
                     "double", bd_dtype_name(q_dtype));
        goto fail;
    }
    /* The softmax's type: softmax_precision, else float (double for double inputs). */
    int cdt;
    if (prec) {
        cdt = (int)prec->i;
        if (prec->i != BRAID_DTYPE_FLOAT && prec->i != BRAID_DTYPE_FLOAT16 && prec->i != BRAID_DTYPE_BFLOAT16 &&
            prec->i != BRAID_DTYPE_DOUBLE) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'softmax_precision' is %lld; it must be 1 (float), "
                         "10 (float16), 16 (bfloat16) or 11 (double)", (long long)prec->i);
            goto fail;
        }
    } else if (q_dtype) {
        cdt = q_dtype == BRAID_DTYPE_DOUBLE ? BRAID_DTYPE_DOUBLE : BRAID_DTYPE_FLOAT;
    } else {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "the dtype of input Q is not known when the model is loaded, and "
                     "without it the softmax's precision is not either: set attribute 'softmax_precision'");
        goto fail;
    }

    /* Formal inputs Q, K, V ("\001" keeps them apart from every other name). */
    const char *Q = "\001Q", *K = "\001K", *V = "\001V", *Y = "\001Y";
    /* GQA: K and V repeated along the heads, as the function body does it
     * (left out where Q and K are known to have as many heads: two copies
     * fewer). */
    const char *kal = "KAligned", *val = "VAligned";
    if (same_heads) {
        kal = K, val = V;
    } else {
        shape_slice(&b, "BatchSize", Q, 0, 1);
        shape_slice(&b, "KVSeqLen", K, -2, -1);
        shape_slice(&b, "QNumHeads", Q, 1, 2);
        shape_slice(&b, "KVNumHeads", K, 1, 2);
        add_node(&b, "Div", "KVRepeat", 2, "QNumHeads", "KVNumHeads");
        const_i64(&b, "Axis2", 2, 1);
        const char *kv[2][6] = {{"K", "KUnsqueezed", "KHeadSize1D", "KExpandShape", "KExpanded", "KAlignedShape"},
                                {"V", "VUnsqueezed", "VHeadSize1D", "VExpandShape", "VExpanded", "VAlignedShape"}};
        for (int i = 0; i < 2; i++) {
            const char *src = i ? V : K;
            add_node(&b, "Unsqueeze", kv[i][1], 2, src, "Axis2");
            shape_slice(&b, kv[i][2], src, 3, 4);
            attr_int(&b, add_node(&b, "Concat", kv[i][3], 5, "BatchSize", "KVNumHeads", "KVRepeat", "KVSeqLen", kv[i][2]),
                     "axis", 0);
            add_node(&b, "Expand", kv[i][4], 2, kv[i][1], kv[i][3]);
            attr_int(&b, add_node(&b, "Concat", kv[i][5], 4, "BatchSize", "QNumHeads", "KVSeqLen", kv[i][2]), "axis", 0);
            add_node(&b, "Reshape", i ? "VAligned" : "KAligned", 2, kv[i][4], kv[i][5]);
        }
    }
    /* The scale, in float32: 1/sqrt(head_size) unless given; Q and K are each
     * multiplied by its square root, cast to their type. */
    if (scale) {
        const_f32(&b, "ScaleFactorF32", scale->f);
    } else {
        add_node(&b, "Shape", "QShapeAll", 1, Q);
        const_i64(&b, "Idx3Head", 3, 0);
        attr_int(&b, add_node(&b, "Gather", "QKHeadSize", 2, "QShapeAll", "Idx3Head"), "axis", 0);
        attr_int(&b, add_node(&b, "Cast", "QKHeadSizeF", 1, "QKHeadSize"), "to", BRAID_DTYPE_FLOAT);
        add_node(&b, "Sqrt", "SqrtHeadSize", 1, "QKHeadSizeF");
        const_f32(&b, "OneF", 1.0f);
        add_node(&b, "Div", "ScaleFactorF32", 2, "OneF", "SqrtHeadSize");
    }
    add_node(&b, "Sqrt", "ScaleFactorSqrtF32", 1, "ScaleFactorF32");
    if (q_dtype) /* a Cast of constants folds at plan time; CastLike reads Q */
        attr_int(&b, add_node(&b, "Cast", "ScaleFactorSqrt", 1, "ScaleFactorSqrtF32"), "to", q_dtype);
    else
        add_node(&b, "CastLike", "ScaleFactorSqrt", 2, "ScaleFactorSqrtF32", Q);
    add_node(&b, "Mul", "QScaled", 2, Q, "ScaleFactorSqrt");
    add_node(&b, "Mul", "KScaled", 2, kal, "ScaleFactorSqrt");
    const int64_t perm[4] = {0, 1, 3, 2};
    attr_ints(&b, add_node(&b, "Transpose", "KTranspose", 1, "KScaled"), "perm", perm, 4);
    add_node(&b, "MatMul", "Score", 2, "QScaled", "KTranspose");
    const char *cast = "Score", *scores, *probs = "Prob";
    if (q_dtype != cdt) /* the scores in the softmax's type (no copy when they have it) */
        attr_int(&b, add_node(&b, "Cast", cast = "SoftmaxCast", 1, "Score"), "to", cdt);
    scores = cast;
    if (score_mod) {
        if ((st = inline_sub(&b, &o, score_mod->g, "score_mod", cast, "ScoreAfterScoreMod", e))) goto fail;
        scores = "ScoreAfterScoreMod";
    }
    attr_int(&b, add_node(&b, "Softmax", "Prob", 1, scores), "axis", 3);
    if (prob_mod) {
        if ((st = inline_sub(&b, &o, prob_mod->g, "prob_mod", "Prob", "ProbAfterProbMod", e))) goto fail;
        probs = "ProbAfterProbMod";
    }
    /* Probs @ V in the softmax's type, cast back to V's. */
    if (q_dtype == cdt) {
        add_node(&b, "MatMul", Y, 2, probs, val);
    } else {
        attr_int(&b, add_node(&b, "Cast", "VSp", 1, val), "to", cdt);
        add_node(&b, "MatMul", "YSp", 2, probs, "VSp");
        add_node(&b, "CastLike", Y, 2, "YSp", V);
    }
    if (a->failed) {
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }

    /* The function: formals Q, K, V, the outer names; output Y. */
    {
        Onnx__FunctionProto *f = &x->f;
        onnx__function_proto__init(f);
        f->name = "FlexAttention";
        f->domain = "ai.onnx.preview";
        char **in = a_alloc(a, (size_t)(3 + o.n) * sizeof *in), **out = a_alloc(a, sizeof *out);
        if (!in || !out) {
            st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            goto fail;
        }
        in[0] = (char *)Q, in[1] = (char *)K, in[2] = (char *)V;
        for (int i = 0; i < o.n; i++) in[3 + i] = o.formals[i];
        out[0] = (char *)Y;
        f->input = in;
        f->n_input = (size_t)(3 + o.n);
        f->output = out;
        f->n_output = 1;
        f->node = b.nodes;
        f->n_node = b.n;
        x->outer = o.names;
        x->n_outer = o.n;
    }
    return BRAID_OK;
fail:
    bd_expansion_free(x);
    return st;
}

void bd_expansion_free(bd_expansion *x)
{
    if (!x) return;
    arena *a = x->arena;
    for (blk *b = a ? a->head : NULL, *nx; b; b = nx) {
        nx = b->next;
        bd_free(b);
    }
    bd_free(a);
    memset(x, 0, sizeof *x);
}
