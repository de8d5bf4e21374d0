/* load.c: a ModelProto to braid's IR. Checks what ONNX requires (opsets,
 * known ops, arity, attribute types, names that resolve, no cycles) and turns
 * Constant nodes into constant values. Every failure names the node, its op
 * and the problem; malformed bytes give PARSE, never a crash.
 *
 * Subgraphs: a GRAPH attribute is read into a graph of its own, validated
 * like the model's (sorted, fused, every name resolved). A name a subgraph
 * does not define is looked up in the enclosing graphs (scopes): found, it
 * becomes a capture (an input of the subgraph after its formal ones) and an
 * implicit input of the node that owns the subgraph, up every level between;
 * not found, the load fails naming the node that reads it.
 *
 * Functions: a node that calls a model-local function (ModelProto.functions,
 * matched by domain and name; a default-domain function does not hide an op
 * braid runs) is replaced by the function's nodes: its formal inputs and
 * outputs are the call's names, every other name gets the call's name as a
 * prefix, attributes that refer to the function's (ref_attr_name) take the
 * call's value or the function's declared default, and the nodes use the
 * function's opset imports. Functions may call functions, not themselves. */
#include "onnx_internal.h"
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

static void *pb_alloc(void *ud, size_t n) { (void)ud; return bd_malloc(n); }
static void pb_free(void *ud, void *p) { (void)ud; bd_free(p); }
ProtobufCAllocator bd_pb_allocator = {pb_alloc, pb_free, NULL};

/* ---- a name -> value index hash, for graphs of any size -------------------- */
typedef struct name_map {
    int cap;
    int *slot; /* value index + 1; 0 = empty */
} name_map;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int map_find(const name_map *m, const bd_graph *g, const char *name)
{
    for (uint64_t i = hash_str(name) & (uint64_t)(m->cap - 1);; i = (i + 1) & (uint64_t)(m->cap - 1)) {
        int v = m->slot[i] - 1;
        if (v < 0) return -1;
        if (!strcmp(g->values[v].name, name)) return v;
    }
}

static void map_put(name_map *m, const bd_graph *g, int v)
{
    uint64_t i = hash_str(g->values[v].name) & (uint64_t)(m->cap - 1);
    while (m->slot[i]) i = (i + 1) & (uint64_t)(m->cap - 1);
    m->slot[i] = v + 1;
}

/* Finds or adds the value called name. */
static int value_of(bd_graph *g, name_map *m, const char *name)
{
    int v = map_find(m, g, name);
    if (v >= 0) return v;
    v = bd_graph_add_value(g, name);
    if (v >= 0) map_put(m, g, v);
    return v;
}

/* ---- pieces of the model ------------------------------------------------------ */

/* The dtype code (braid.h) of a sequence or optional type: a container
 * flag on the element's tensor dtype. Maps, sparse tensors, sequences of
 * sequences and optionals inside sequences are not supported. 0: unknown
 * element type. */
static braid_status container_type(const Onnx__TypeProto *tp, const char *what, int *code, bd_err *e)
{
    int flags = 0;
    for (int depth = 0; tp; depth++) {
        switch (tp->value_case) {
        case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
            *code = tp->tensor_type->has_elem_type && tp->tensor_type->elem_type > 0 &&
                            tp->tensor_type->elem_type < 0x100 ? flags | tp->tensor_type->elem_type : 0;
            return BRAID_OK;
        case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
            if (flags & BD_DT_SEQ) break;
            flags |= BD_DT_SEQ;
            tp = tp->sequence_type->elem_type;
            continue;
        case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
            if (flags) break;
            flags |= BD_DT_OPT;
            tp = tp->optional_type->elem_type;
            continue;
        case ONNX__TYPE_PROTO__VALUE__NOT_SET:
            *code = 0;
            return BRAID_OK;
        default: break;
        }
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s has a type braid does not support (maps, sparse tensors, "
                       "sequences of sequences and optionals inside sequences are not supported)", what);
    }
    *code = 0;
    return BRAID_OK;
}

static braid_status read_value_info(const Onnx__ValueInfoProto *vi, bd_value *v, bd_err *e)
{
    const Onnx__TypeProto *tp = vi->type;
    /* no type, or a TypeProto with nothing set (PyTorch writes these for
     * values inside If branches): unknown, inferred like an untyped value */
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) return BRAID_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE) {
        char what[300];
        int code = 0;
        snprintf(what, sizeof what, "value '%s'", v->name);
        BD_TRY_RET(container_type(tp, what, &code, e));
        if (code) { /* a sequence or optional: one pointer inside a plan (common.h) */
            v->dtype = code;
            v->rank = 0;
        }
        return BRAID_OK;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (tt->has_elem_type && (tt->elem_type < 0 || tt->elem_type >= 0x100))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "value '%s' has tensor element type %d, which ONNX does not define",
                       v->name, tt->elem_type);
    if (tt->has_elem_type) v->dtype = tt->elem_type;
    if (!tt->shape) return BRAID_OK;
    if (tt->shape->n_dim > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "value '%s' has rank %zu; braid supports up to %d", v->name,
                       tt->shape->n_dim, BD_MAX_RANK);
    v->rank = (int)tt->shape->n_dim;
    for (int d = 0; d < v->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        v->dims[d] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0)
            v->dims[d] = dim->dim_value;
        else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            v->dim_param[d] = bd_strdup(dim->dim_param);
            if (!v->dim_param[d]) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    return BRAID_OK;
}

static braid_status set_const(bd_value *v, bd_tensor *t)
{
    v->flags |= BD_VAL_CONST;
    v->dtype = t->dtype;
    v->rank = t->rank;
    memcpy(v->dims, t->dims, sizeof v->dims);
    v->data = t->data;
    t->data = NULL;
    return BRAID_OK;
}

static braid_status read_attr(const Onnx__AttributeProto *ap, bd_attr *a, bd_err *e)
{
    a->name = bd_strdup(ap->name ? ap->name : "");
    if (!a->name) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    a->type = ap->has_type ? (bd_attr_type)ap->type : BD_ATTR_UNDEFINED;
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s' refers to a function attribute", a->name);
    switch (a->type) {
    case BD_ATTR_FLOAT: a->f = ap->f; break;
    case BD_ATTR_INT: a->i = ap->i; break;
    case BD_ATTR_STRING:
        a->s = bd_strndup(ap->s.data ? (const char *)ap->s.data : "", ap->s.len); /* "" may have no data */
        if (!a->s) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        break;
    case BD_ATTR_FLOATS:
        a->n = (int)ap->n_floats;
        a->floats = bd_malloc(ap->n_floats * sizeof(float));
        if (!a->floats) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (a->n) memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case BD_ATTR_INTS:
        a->n = (int)ap->n_ints;
        a->ints = bd_malloc(ap->n_ints * sizeof(int64_t));
        if (!a->ints) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (a->n) memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case BD_ATTR_STRINGS:
        a->strings = bd_calloc(ap->n_strings, sizeof(char *));
        if (!a->strings) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        a->n = (int)ap->n_strings;
        for (size_t i = 0; i < ap->n_strings; i++) {
            a->strings[i] = bd_strndup(ap->strings[i].data ? (const char *)ap->strings[i].data : "", ap->strings[i].len);
            if (!a->strings[i]) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
        break;
    case BD_ATTR_TENSOR: {
        if (!ap->t) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has no tensor", a->name);
        a->t = bd_calloc(1, sizeof *a->t);
        if (!a->t) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        braid_status st = bd_onnx_tensor(ap->t, NULL, a->t, e);
        if (st) { bd_err_prefix(e, "attribute '%s': ", a->name); return st; }
        break;
    }
    case BD_ATTR_TYPE_PROTO: { /* Optional's "type": its dtype code (braid.h) in i */
        char what[300];
        int code = 0;
        snprintf(what, sizeof what, "attribute '%s'", a->name);
        BD_TRY_RET(container_type(ap->tp, what, &code, e));
        a->i = code;
        break;
    }
    default: break; /* graphs and sparse tensors: kept as a type only */
    }
    return BRAID_OK;
}

/* A Constant node becomes a constant value; returns 1 in *folded when done. */
static braid_status fold_constant_node(const Onnx__NodeProto *np, bd_value *out, bd_err *e)
{
    bd_tensor t = {0};
    if (np->n_attribute != 1)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "a Constant needs exactly one value attribute, it has %zu",
                       np->n_attribute);
    const Onnx__AttributeProto *ap = np->attribute[0];
    const char *an = ap->name ? ap->name : "";
    braid_status st = BRAID_OK;
    if (!strcmp(an, "value")) {
        if (!ap->t) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'value' holds no tensor");
        st = bd_onnx_tensor(ap->t, NULL, &t, e);
        if (st) return st;
    } else if (!strcmp(an, "value_float") || !strcmp(an, "value_int")) {
        int isf = an[6] == 'f';
        t.dtype = isf ? BRAID_DTYPE_FLOAT : BRAID_DTYPE_INT64;
        t.rank = 0;
        t.data = bd_malloc(8);
        if (!t.data) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (isf) *(float *)t.data = ap->f;
        else *(int64_t *)t.data = ap->i;
    } else if (!strcmp(an, "value_floats") || !strcmp(an, "value_ints")) {
        int isf = an[6] == 'f';
        size_t n = isf ? ap->n_floats : ap->n_ints;
        t.dtype = isf ? BRAID_DTYPE_FLOAT : BRAID_DTYPE_INT64;
        t.rank = 1;
        t.dims[0] = (int64_t)n;
        t.data = bd_malloc(n * (isf ? 4 : 8));
        if (!t.data) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (n) memcpy(t.data, isf ? (void *)ap->floats : (void *)ap->ints, n * (isf ? 4 : 8));
    } else {
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Constant attribute '%s' is not supported", an);
    }
    return set_const(out, &t);
}

/* ---- scopes: names, captures, function frames ---------------------------------- */

/* One graph being read: its names, the enclosing graph's scope, and the
 * outer values it has captured so far (in first-reference order). */
typedef struct scope {
    const struct scope *parent;
    bd_graph *g;
    name_map m;
    int n_caps, cap_caps;
    int *caps; /* value indices in g (BD_VAL_INPUT | BD_VAL_OUTER) */
} scope;

/* A model-local function being expanded into the graph: its formal names
 * map to the call's actual names, every other name gets the call's prefix. */
typedef struct frame {
    const struct frame *up;
    const Onnx__FunctionProto *f;
    const Onnx__NodeProto *call; /* names already in the caller's namespace */
    const struct frame *call_frame;
    char *prefix;                /* "callname/" */
} frame;

typedef struct load_ctx {
    const Onnx__ModelProto *mp;
    const char *base_dir;
    const bd_graph *main;        /* opsets */
    const frame *fr;             /* the innermost function being expanded, or NULL */
    int depth;                   /* subgraph and function nesting */
    char **strs;                 /* translated names, freed at the end of the load */
    int n_strs, cap_strs;
} load_ctx;

#define BD_LOAD_MAX_DEPTH 64

/* Keeps s (bd_malloc'ed) until the load ends; returns it, or NULL when out of memory. */
static char *keep_str(load_ctx *c, char *s)
{
    if (!s) return NULL;
    if (c->n_strs == c->cap_strs) {
        int cap = c->cap_strs ? 2 * c->cap_strs : 64;
        char **n = bd_realloc(c->strs, (size_t)cap * sizeof *n);
        if (!n) { bd_free(s); return NULL; }
        c->strs = n;
        c->cap_strs = cap;
    }
    return c->strs[c->n_strs++] = s;
}

/* A name as the graph sees it: inside a function body, formal inputs and
 * outputs become the call's names and the others get the call's prefix.
 * NULL when out of memory; "" stays "" (an omitted input or output). */
static const char *tr_name(load_ctx *c, const frame *fr, const char *name)
{
    if (!fr || !name[0]) return name;
    const Onnx__FunctionProto *f = fr->f;
    for (size_t i = 0; i < f->n_input; i++)
        if (!strcmp(f->input[i], name)) return i < fr->call->n_input ? fr->call->input[i] : "";
    for (size_t i = 0; i < f->n_output; i++)
        if (!strcmp(f->output[i], name)) return i < fr->call->n_output ? fr->call->output[i] : "";
    size_t lp = strlen(fr->prefix), ln = strlen(name);
    char *s = bd_malloc(lp + ln + 1);
    if (!s) return NULL;
    memcpy(s, fr->prefix, lp);
    memcpy(s + lp, name, ln + 1);
    return keep_str(c, s);
}

static int scope_defines(const scope *sc, const char *name)
{
    for (; sc; sc = sc->parent)
        if (map_find(&sc->m, sc->g, name) >= 0) return 1;
    return 0;
}

/* Grows a scope's map when it is more than half full. */
static braid_status map_reserve(scope *sc, bd_err *e)
{
    if ((sc->g->n_values + 1) * 2 < sc->m.cap) return BRAID_OK;
    name_map n = {.cap = sc->m.cap * 2};
    n.slot = bd_calloc((size_t)n.cap, sizeof *n.slot);
    if (!n.slot) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int v = 0; v < sc->g->n_values; v++) map_put(&n, sc->g, v);
    bd_free(sc->m.slot);
    sc->m = n;
    return BRAID_OK;
}

/* Finds or adds the value called name in sc's own graph (a definition). */
static braid_status define(scope *sc, const char *name, int *out, bd_err *e)
{
    BD_TRY_RET(map_reserve(sc, e));
    *out = value_of(sc->g, &sc->m, name);
    return *out < 0 ? BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory") : BRAID_OK;
}

/* The value that a reference to name means in sc: its own, else a capture of
 * an enclosing graph's value (added on first use). *out = -2 when no graph
 * up the tree defines the name (the main graph instead adds the value and
 * lets the topological sort report it, as it always did). */
static braid_status resolve(scope *sc, const char *name, int *out, bd_err *e)
{
    int v = map_find(&sc->m, sc->g, name);
    if (v >= 0 || !sc->parent) {
        if (v < 0) return define(sc, name, out, e);
        *out = v;
        return BRAID_OK;
    }
    if (!scope_defines(sc->parent, name)) { *out = -2; return BRAID_OK; }
    BD_TRY_RET(define(sc, name, &v, e));
    sc->g->values[v].flags |= BD_VAL_INPUT | BD_VAL_OUTER;
    if (sc->n_caps == sc->cap_caps) {
        int cap = sc->cap_caps ? 2 * sc->cap_caps : 8;
        int *n = bd_realloc(sc->caps, (size_t)cap * sizeof *n);
        if (!n) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        sc->caps = n;
        sc->cap_caps = cap;
    }
    sc->caps[sc->n_caps++] = v;
    *out = v;
    return BRAID_OK;
}

static int64_t opset_in(const bd_opset *os, int n, const char *domain)
{
    const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
    for (int i = 0; i < n; i++)
        if (!strcmp(os[i].domain, d)) return os[i].version;
    return -1;
}

/* The opset of domain for a node: a function's own import first, then the model's. */
static int64_t opset_of(const load_ctx *c, const char *domain)
{
    for (const frame *fr = c->fr; fr; fr = fr->up) {
        const Onnx__FunctionProto *f = fr->f;
        const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
        for (size_t i = 0; i < f->n_opset_import; i++) {
            const char *fd = f->opset_import[i]->domain ? f->opset_import[i]->domain : "";
            if (!strcmp(strcmp(fd, "ai.onnx") ? fd : "", d))
                return f->opset_import[i]->has_version ? f->opset_import[i]->version : 1;
        }
    }
    return opset_in(c->main->opsets, c->main->n_opsets, domain);
}

/* The model-local function a node calls, or NULL. A function of the default
 * domain does not hide an op braid runs. */
static const Onnx__FunctionProto *function_of(const load_ctx *c, const char *domain, const char *op_type)
{
    const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
    for (size_t i = 0; i < c->mp->n_functions; i++) {
        const Onnx__FunctionProto *f = c->mp->functions[i];
        const char *fd = f->domain && strcmp(f->domain, "ai.onnx") ? f->domain : "";
        if (!f->name || strcmp(f->name, op_type) || strcmp(fd, d)) continue;
        if (!d[0] && bd_op_lookup(d, op_type, opset_of(c, d)) >= 0) return NULL;
        return f;
    }
    return NULL;
}

static braid_status read_graph(load_ctx *c, const Onnx__GraphProto *gp, scope *parent, bd_graph *g, bd_err *e);
static braid_status read_nodes(load_ctx *c, scope *sc, Onnx__NodeProto *const *nodes, size_t n, int *cap_nodes,
                               bd_err *e);

static braid_status grow_nodes(bd_graph *g, int *cap, int more, bd_err *e)
{
    if (g->n_nodes + more <= *cap) return BRAID_OK;
    int ncap = BD_MAX(*cap * 2, g->n_nodes + more + 8);
    bd_node *n = bd_realloc(g->nodes, (size_t)ncap * sizeof *n);
    if (!n) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    memset(n + *cap, 0, (size_t)(ncap - *cap) * sizeof *n);
    g->nodes = n;
    *cap = ncap;
    return BRAID_OK;
}

/* Reads the GRAPH attributes of a node into subgraphs, then gives the node
 * the union of their captures as implicit inputs (in the order first seen)
 * and every subgraph the same captures, in that order, as its last inputs. */
static braid_status read_subgraphs(load_ctx *c, scope *sc, const Onnx__NodeProto *np, bd_node *nd, const char *name,
                                   bd_err *e)
{
    braid_status st = BRAID_OK;
    scope *subs = NULL;
    const char **uni = NULL;
    int n_uni = 0, cap_uni = 0, any = 0;
    for (int i = 0; i < nd->n_attrs; i++) any |= nd->attrs[i].type == BD_ATTR_GRAPH;
    if (!any) return BRAID_OK;
    subs = bd_calloc(np->n_attribute + 1, sizeof *subs);
    BD_CHECK_ALLOC(e, subs);
    if (c->depth >= BD_LOAD_MAX_DEPTH) {
        st = BD_FAIL(e, BRAID_ERR_LIMIT, "subgraphs and functions nest deeper than %d levels", BD_LOAD_MAX_DEPTH);
        goto fail;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        bd_attr *a = &nd->attrs[i];
        if (a->type != BD_ATTR_GRAPH) continue;
        if (!ap->g) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' holds no graph", a->name);
            goto fail;
        }
        a->g = bd_calloc(1, sizeof *a->g);
        BD_CHECK_ALLOC(e, a->g);
        subs[i].parent = sc;
        c->depth++;
        st = read_graph(c, ap->g, &subs[i], a->g, e);
        c->depth--;
        if (st) { bd_err_prefix(e, "subgraph '%s': ", a->name); goto fail; }
        for (int k = 0; k < subs[i].n_caps; k++) {
            const char *nm = a->g->values[subs[i].caps[k]].name;
            int seen = 0;
            for (int j = 0; j < n_uni && !seen; j++) seen = !strcmp(uni[j], nm);
            if (seen) continue;
            if (n_uni == cap_uni) {
                cap_uni = cap_uni ? 2 * cap_uni : 8;
                const char **nu = bd_realloc(uni, (size_t)cap_uni * sizeof *nu);
                BD_CHECK_ALLOC(e, nu);
                uni = nu;
            }
            uni[n_uni++] = nm;
        }
    }
    if (n_uni) {
        int *in = bd_realloc(nd->in, ((size_t)nd->n_in + (size_t)n_uni + 1) * sizeof *in);
        BD_CHECK_ALLOC(e, in);
        nd->in = in;
        for (int j = 0; j < n_uni; j++) {
            int v;
            BD_TRY(resolve(sc, uni[j], &v, e)); /* an enclosing graph defines it: the subgraph found it */
            nd->in[nd->n_in++] = v;
            nd->n_implicit++;
        }
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        bd_graph *sg = nd->attrs[i].g;
        if (!sg) continue;
        int *ins = bd_realloc(sg->inputs, ((size_t)sg->n_inputs + (size_t)n_uni + 1) * sizeof *ins);
        BD_CHECK_ALLOC(e, ins);
        sg->inputs = ins;
        for (int j = 0; j < n_uni; j++) {
            int v;
            BD_TRY(define(&subs[i], uni[j], &v, e)); /* an unused capture where this branch reads none */
            sg->values[v].flags |= BD_VAL_INPUT | BD_VAL_OUTER;
            sg->inputs[sg->n_inputs++] = v;
        }
        sg->n_captures = n_uni;
        sg->is_sub = 1;
        unsigned char *is = bd_realloc(sg->input_shapes, (size_t)sg->n_inputs + 1);
        BD_CHECK_ALLOC(e, is);
        sg->input_shapes = is;
        for (int j = sg->n_inputs - n_uni; j < sg->n_inputs; j++) is[j] = 0;
    }
fail:
    (void)name;
    for (size_t i = 0; subs && i < np->n_attribute; i++) {
        bd_free(subs[i].m.slot);
        bd_free(subs[i].caps);
    }
    bd_free(subs);
    bd_free(uni);
    return st;
}

/* A node that calls a model-local function: its body's nodes, renamed, in
 * the graph, with attribute references resolved against the call. */
static braid_status expand_function(load_ctx *c, scope *sc, const Onnx__FunctionProto *f, const Onnx__NodeProto *np,
                                    const char *name, int *cap_nodes, bd_err *e)
{
    braid_status st = BRAID_OK;
    Onnx__NodeProto *copies = NULL, **ptrs = NULL;
    Onnx__AttributeProto **attrs = NULL, *acopies = NULL, **defaults = NULL;
    size_t n_attr = 0, n_def = 0;
    frame fr = {.up = c->fr, .f = f, .call = np};
    for (const frame *up = c->fr; up; up = up->up)
        if (up->f == f)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "function '%s' calls itself, directly or through other functions",
                           f->name);
    if (c->depth >= BD_LOAD_MAX_DEPTH)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "subgraphs and functions nest deeper than %d levels (a function "
                       "that calls itself?)", BD_LOAD_MAX_DEPTH);
    if (np->n_input > f->n_input || np->n_output > f->n_output)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "has %zu inputs and %zu outputs; function '%s' takes %zu and gives %zu",
                       np->n_input, np->n_output, f->name, f->n_input, f->n_output);
    size_t lp = strlen(name);
    fr.prefix = bd_malloc(lp + 2);
    BD_CHECK_ALLOC(e, fr.prefix);
    memcpy(fr.prefix, name, lp);
    memcpy(fr.prefix + lp, "/", 2);
    /* The body's nodes as the graph will read them: attribute references
     * replaced by the call's attributes (dropped where the call has none, so
     * the op's default applies). Names are translated when read. */
    /* Default values of the function's attributes (FunctionProto field 11,
     * attribute_proto, newer than the onnx.proto braid is built with: read
     * from the unknown fields). */
    defaults = bd_calloc(f->base.n_unknown_fields + 1, sizeof *defaults);
    BD_CHECK_ALLOC(e, defaults);
    for (unsigned u = 0; u < f->base.n_unknown_fields; u++) {
        const ProtobufCMessageUnknownField *uf = &f->base.unknown_fields[u];
        if (uf->tag != 11 || uf->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) continue;
        /* The field's bytes begin with their length (a varint). */
        size_t at = 0, len = 0;
        for (int sh = 0; at < uf->len && sh < 64; sh += 7) {
            len |= (size_t)(uf->data[at] & 0x7f) << sh;
            if (!(uf->data[at++] & 0x80)) break;
        }
        if (len == uf->len - at) defaults[n_def] = onnx__attribute_proto__unpack(&bd_pb_allocator, len, uf->data + at);
        if (!defaults[n_def]) {
            st = BD_FAIL(e, BRAID_ERR_PARSE, "function '%s': a default attribute value is not a valid AttributeProto",
                         f->name);
            goto fail;
        }
        n_def++;
    }
    for (size_t i = 0; i < f->n_node; i++) n_attr += f->node[i]->n_attribute;
    copies = bd_calloc(f->n_node + 1, sizeof *copies);
    ptrs = bd_calloc(f->n_node + 1, sizeof *ptrs);
    attrs = bd_calloc(n_attr + 1, sizeof *attrs);
    acopies = bd_calloc(n_attr + 1, sizeof *acopies);
    BD_CHECK_ALLOC(e, copies && ptrs && attrs && acopies);
    size_t k = 0;
    for (size_t i = 0; i < f->n_node; i++) {
        copies[i] = *f->node[i];
        copies[i].attribute = attrs + k;
        copies[i].n_attribute = 0;
        for (size_t j = 0; j < f->node[i]->n_attribute; j++) {
            const Onnx__AttributeProto *ap = f->node[i]->attribute[j];
            if (!ap->ref_attr_name || !ap->ref_attr_name[0]) { attrs[k++] = (Onnx__AttributeProto *)ap; copies[i].n_attribute++; continue; }
            const Onnx__AttributeProto *given = NULL;
            for (size_t q = 0; q < np->n_attribute && !given; q++)
                if (np->attribute[q]->name && !strcmp(np->attribute[q]->name, ap->ref_attr_name)) given = np->attribute[q];
            for (size_t q = 0; q < n_def && !given; q++) /* the call leaves it out: the function's default */
                if (defaults[q]->name && !strcmp(defaults[q]->name, ap->ref_attr_name)) given = defaults[q];
            if (!given) continue; /* no default either: the op's own applies */
            acopies[k] = *given;
            acopies[k].name = ap->name;
            attrs[k] = &acopies[k];
            k++;
            copies[i].n_attribute++;
        }
        ptrs[i] = &copies[i];
    }
    c->fr = &fr;
    c->depth++;
    st = read_nodes(c, sc, ptrs, f->n_node, cap_nodes, e);
    c->depth--;
    c->fr = fr.up;
    if (st) bd_err_prefix(e, "function '%s': ", f->name);
fail:
    for (size_t q = 0; q < n_def; q++) onnx__attribute_proto__free_unpacked(defaults[q], &bd_pb_allocator);
    bd_free(defaults);
    bd_free(fr.prefix);
    bd_free(copies);
    bd_free(ptrs);
    bd_free(attrs);
    bd_free(acopies);
    return st;
}

/* The dtype of the value name means in sc, when the loader knows it (a graph
 * input, an initializer, a constant); 0 otherwise. */
static int dtype_of(const scope *sc, const char *name)
{
    for (; sc; sc = sc->parent) {
        int v = map_find(&sc->m, sc->g, name);
        if (v >= 0 && sc->g->values[v].dtype) return sc->g->values[v].dtype;
    }
    return 0;
}

/* Dim 1 of the rank-4 value name means in sc when the loader knows it
 * (a graph input or constant of static shape); -1 otherwise. */
static int64_t heads_of(const scope *sc, const char *name)
{
    for (; sc; sc = sc->parent) {
        int v = map_find(&sc->m, sc->g, name);
        if (v >= 0 && sc->g->values[v].rank == 4 && sc->g->values[v].dims[1] > 0) return sc->g->values[v].dims[1];
    }
    return -1;
}

/* A node braid expands into other ops (expand.c: FlexAttention), read as a
 * call of its body: the node's inputs, then the outer-scope names its
 * subgraphs read, all in the caller's namespace. */
static braid_status expand_node(load_ctx *c, scope *sc, const Onnx__NodeProto *np, const char *name, int *cap_nodes,
                                bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_expansion x = {0};
    char **names = NULL;
    int64_t os = opset_of(c, "");
    if (os < 15)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "braid expands %s into default-domain ops of opset 15 or later; the "
                       "model imports %s%lld", np->op_type, os < 0 ? "none" : "opset ", os < 0 ? 0LL : (long long)os);
    const char *q = tr_name(c, c->fr, np->input[0]), *k = tr_name(c, c->fr, np->input[1]);
    BD_CHECK_ALLOC(e, q && k);
    int64_t hq = heads_of(sc, q);
    BD_TRY(bd_expand_flex_attention(np, dtype_of(sc, q), hq > 0 && hq == heads_of(sc, k), &x, e));
    size_t n_in = 3 + (size_t)x.n_outer;
    names = bd_calloc(n_in + 2, sizeof *names);
    BD_CHECK_ALLOC(e, names);
    for (size_t i = 0; i < n_in + 1; i++) {
        const char *nm = i < 3 ? np->input[i] : i < n_in ? x.outer[i - 3] : np->output[0];
        names[i] = (char *)tr_name(c, c->fr, nm);
        BD_CHECK_ALLOC(e, names[i]);
    }
    Onnx__NodeProto call = *np;
    call.input = names;
    call.n_input = n_in;
    call.output = names + n_in;
    call.n_output = 1;
    st = expand_function(c, sc, &x.f, &call, name, cap_nodes, e);
fail:
    bd_free(names);
    bd_expansion_free(&x);
    return st;
}

static braid_status read_node(load_ctx *c, scope *sc, const Onnx__NodeProto *np, int index, int *cap_nodes,
                              bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_graph *g = sc->g;
    const char *op_type = np->op_type ? np->op_type : "";
    const char *domain = np->domain ? np->domain : "";
    char defname[96];
    snprintf(defname, sizeof defname, "%s_%d", op_type, index);
    const char *name = tr_name(c, c->fr, np->name && np->name[0] ? np->name : defname);
    if (!name) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t opset = opset_of(c, domain);
    const Onnx__FunctionProto *f = function_of(c, domain, op_type);
    if (f) {
        /* The call's names, translated once into the namespace of the caller. */
        Onnx__NodeProto call = *np;
        char **names = bd_calloc(np->n_input + np->n_output + 1, sizeof *names);
        if (!names) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < np->n_input + np->n_output; i++) {
            const char *nm = i < np->n_input ? np->input[i] : np->output[i - np->n_input];
            names[i] = (char *)tr_name(c, c->fr, nm);
            if (!names[i]) { bd_free(names); return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
        }
        call.input = names;
        call.output = names + np->n_input;
        st = expand_function(c, sc, f, &call, name, cap_nodes, e);
        bd_free(names);
        if (st) bd_err_prefix(e, "node '%s' (%s): ", name, op_type);
        return st;
    }
    if (opset < 0) {
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (%s): the model imports no opset for domain '%s'",
                       name, op_type, domain);
    }
    if (bd_domain_lookup(domain) < 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "node '%s' (%s): unsupported op '%s' in domain '%s': braid runs no op of that domain "
                       "(it knows ai.onnx, com.microsoft, ai.onnx.ml, ai.onnx.preview and ai.onnx.preview.training)", name, op_type, op_type, domain);
    int op = bd_op_lookup(domain, op_type, opset);
    if (op < 0) {
        int first = 0, last = bd_op_last_opset(domain, op_type, &first);
        if (last)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                           "node '%s' (%s): op '%s' at opset %lld is not supported (braid runs it at opsets %d to %d)",
                           name, op_type, op_type, (long long)opset, first, last);
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "node '%s' (%s): unsupported op '%s'%s%s%s", name, op_type,
                       op_type, domain[0] ? " in domain '" : "", domain, domain[0] ? "'" : "");
    }
    const bd_op_info *info = &bd_op_table[op];
    /* Trailing empty names are omitted optional inputs/outputs. */
    size_t n_in = np->n_input, n_out = np->n_output;
    while (n_in && !np->input[n_in - 1][0]) n_in--;
    while (n_out && !np->output[n_out - 1][0]) n_out--;
    if ((int)n_in < info->min_in || (int)n_in > info->max_in)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (%s): has %zu inputs, %s takes %d to %d", name,
                       op_type, n_in, op_type, info->min_in, info->max_in == BD_VARIADIC ? 9999 : info->max_in);
    if ((int)n_out < info->min_out || (int)n_out > info->max_out)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (%s): has %zu outputs, %s gives %d to %d", name,
                       op_type, n_out, op_type, info->min_out,
                       info->max_out == BD_VARIADIC ? 9999 : info->max_out);

    if (op == BD_OP_PV_FlexAttention) { /* becomes the ops of its function body */
        st = expand_node(c, sc, np, name, cap_nodes, e);
        if (st) bd_err_prefix(e, "node '%s' (%s): ", name, op_type);
        return st;
    }
    if (op == BD_OP_Constant) { /* becomes a constant value, not a node */
        const char *on = tr_name(c, c->fr, np->output[0]);
        int v;
        if (!on) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        BD_TRY_RET(define(sc, on, &v, e));
        if (g->values[v].flags & (BD_VAL_CONST | BD_VAL_INPUT))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (Constant): output '%s' is already defined",
                           name, on);
        st = fold_constant_node(np, &g->values[v], e);
        if (st) bd_err_prefix(e, "node '%s' (Constant): ", name);
        return st;
    }

    BD_TRY_RET(grow_nodes(g, cap_nodes, 1, e));
    bd_node *nd = &g->nodes[g->n_nodes];
    memset(nd, 0, sizeof *nd);
    g->n_nodes++; /* counted now so that bd_graph_free releases a half-read node */
    nd->op = op;
    nd->opset = (int)opset;
    nd->name = bd_strdup(name);
    nd->op_type = bd_strdup(op_type);
    nd->domain = bd_strdup(domain);
    nd->in = bd_malloc((n_in + 1) * sizeof(int));
    nd->out = bd_malloc((n_out + 1) * sizeof(int));
    nd->attrs = bd_calloc(np->n_attribute + 1, sizeof(bd_attr));
    if (!nd->name || !nd->op_type || !nd->domain || !nd->in || !nd->out || !nd->attrs)
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    nd->n_in = (int)n_in;
    nd->n_out = (int)n_out;
    for (size_t i = 0; i < n_in; i++) {
        const char *nm = tr_name(c, c->fr, np->input[i]);
        nd->in[i] = -1;
        if (!nm) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (!nm[0]) continue;
        BD_TRY_RET(resolve(sc, nm, &nd->in[i], e));
        if (nd->in[i] == -2)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "node '%s' (%s): input '%s' is not a graph input, an initializer or the output of any "
                           "node, in its graph or an enclosing one", name, op_type, nm);
    }
    for (size_t i = 0; i < n_out; i++) {
        const char *nm = tr_name(c, c->fr, np->output[i]);
        nd->out[i] = -1;
        if (!nm) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (!nm[0]) continue;
        BD_TRY_RET(define(sc, nm, &nd->out[i], e));
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        nd->n_attrs++;
        st = read_attr(np->attribute[i], &nd->attrs[i], e);
        if (st) { bd_err_prefix(e, "node '%s' (%s): ", name, op_type); return st; }
    }
    if ((st = read_subgraphs(c, sc, np, nd, name, e))) {
        bd_err_prefix(e, "node '%s' (%s): ", name, op_type);
        return st;
    }
    st = bd_op_parse(nd, e);
    if (st) bd_err_prefix(e, "node '%s' (%s): ", name, op_type);
    return st;
}

static braid_status read_nodes(load_ctx *c, scope *sc, Onnx__NodeProto *const *nodes, size_t n, int *cap_nodes,
                               bd_err *e)
{
    /* Outputs first: a node may read a value that a later node of the list
     * defines (a graph need not be sorted), and a subgraph may capture it. */
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < nodes[i]->n_output; k++) {
            const char *nm = tr_name(c, c->fr, nodes[i]->output[k]);
            int v;
            if (!nm) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
            if (nm[0]) BD_TRY_RET(define(sc, nm, &v, e));
        }
    for (size_t i = 0; i < n; i++) BD_TRY_RET(read_node(c, sc, nodes[i], sc->g->n_nodes, cap_nodes, e));
    return BRAID_OK;
}

static braid_status copy_opsets(const bd_graph *from, bd_graph *g, bd_err *e)
{
    g->opsets = bd_calloc((size_t)from->n_opsets + 1, sizeof *g->opsets);
    if (!g->opsets) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < from->n_opsets; i++, g->n_opsets++) {
        g->opsets[i].version = from->opsets[i].version;
        g->opsets[i].domain = bd_strdup(from->opsets[i].domain);
        if (!g->opsets[i].domain) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return BRAID_OK;
}

/* Reads one graph, the model's or a subgraph (sc->parent set): values,
 * nodes (subgraphs and function calls included), topological order,
 * load-time fusions. */
static braid_status read_graph(load_ctx *c, const Onnx__GraphProto *gp, scope *sc, bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_tensor t = {0};
    int cap_nodes = 0, sub = sc->parent != NULL;
    sc->g = g;
    g->ir_version = c->main->ir_version;
    g->name = bd_strdup(gp->name ? gp->name : "");
    BD_CHECK_ALLOC(e, g->name);
    if (sub) BD_TRY(copy_opsets(c->main, g, e));
    if (gp->n_sparse_initializer) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "sparse initializers are not supported");
        goto fail;
    }

    size_t n_names = gp->n_initializer + gp->n_input + gp->n_output;
    for (size_t i = 0; i < gp->n_node; i++) n_names += gp->node[i]->n_input + gp->node[i]->n_output;
    sc->m.cap = 64;
    while ((size_t)sc->m.cap < 2 * n_names + 2) sc->m.cap *= 2;
    sc->m.slot = bd_calloc((size_t)sc->m.cap, sizeof *sc->m.slot);
    BD_CHECK_ALLOC(e, sc->m.slot);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        Onnx__TensorProto *tp = gp->initializer[i]; /* its raw data is taken, not copied */
        const char *nm = tr_name(c, c->fr, tp->name ? tp->name : "");
        BD_CHECK_ALLOC(e, nm);
        if (map_find(&sc->m, g, nm) >= 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "initializer '%s' is defined twice", nm);
            goto fail;
        }
        int v;
        BD_TRY(define(sc, nm, &v, e));
        BD_TRY(bd_onnx_tensor_take(tp, c->base_dir, &t, e));
        set_const(&g->values[v], &t);
    }
    /* Graph inputs; those backed by an initializer are constants (their
     * declared type must agree with the initializer). A subgraph's inputs
     * may leave their types to the node that runs it. */
    g->inputs = bd_malloc((gp->n_input + 1) * sizeof(int));
    g->outputs = bd_malloc((gp->n_output + 1) * sizeof(int));
    BD_CHECK_ALLOC(e, g->inputs && g->outputs);
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *nm = tr_name(c, c->fr, gp->input[i]->name ? gp->input[i]->name : "");
        int v;
        BD_CHECK_ALLOC(e, nm);
        BD_TRY(define(sc, nm, &v, e));
        bd_value *val = &g->values[v];
        if (val->flags & BD_VAL_INPUT) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph input '%s' is declared twice", nm);
            goto fail;
        }
        if (val->flags & BD_VAL_CONST) continue;
        BD_TRY(read_value_info(gp->input[i], val, e));
        if (!sub && val->rank < 0 && !gp->input[i]->type) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph input '%s' has no type", nm);
            goto fail;
        }
        if (!bd_dtype_size(val->dtype) && (!sub || val->dtype)) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "graph input '%s' has dtype %s, which braid does not support",
                         nm, bd_dtype_name(val->dtype));
            goto fail;
        }
        val->flags |= BD_VAL_INPUT;
        g->inputs[g->n_inputs++] = v;
    }
    BD_TRY(grow_nodes(g, &cap_nodes, (int)gp->n_node, e));
    BD_TRY(read_nodes(c, sc, gp->node, gp->n_node, &cap_nodes, e));
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = tr_name(c, c->fr, gp->output[i]->name ? gp->output[i]->name : "");
        BD_CHECK_ALLOC(e, nm);
        int v = map_find(&sc->m, g, nm);
        if (v < 0 && sub) {
            BD_TRY(resolve(sc, nm, &v, e));
            if (v == -2) v = -1;
        }
        if (v < 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph output '%s' is not produced by any node", nm);
            goto fail;
        }
        bd_value *val = &g->values[v];
        if (!(val->flags & (BD_VAL_CONST | BD_VAL_INPUT)) && val->rank < 0) {
            BD_TRY(read_value_info(gp->output[i], val, e));
        }
        val->flags |= BD_VAL_OUTPUT;
        g->outputs[g->n_outputs++] = v;
    }
    BD_TRY(bd_graph_toposort(g, e));
    BD_TRY(bd_graph_rewrite_rnn(g, e));
    BD_TRY(bd_graph_fuse_act(g, e));
    BD_TRY(bd_graph_fuse(g, e));
    BD_TRY(bd_graph_fuse_affine_in(g, e));
    /* Inputs that feed shape inputs of ops are planned with their values. */
    g->input_shapes = bd_calloc((size_t)g->n_inputs + 1, 1);
    BD_CHECK_ALLOC(e, g->input_shapes);
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_in; k++)
            for (int j = 0; j < g->n_inputs; j++)
                if (g->nodes[i].in[k] == g->inputs[j] && bd_op_shape_input(g->nodes[i].op, k)) g->input_shapes[j] = 1;
    /* Outputs must now be produced (a value named only as an output is not). */
    for (int i = 0; i < g->n_outputs; i++) {
        bd_value *val = &g->values[g->outputs[i]];
        if (val->producer < 0 && !(val->flags & (BD_VAL_CONST | BD_VAL_INPUT))) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph output '%s' is not produced by any node", val->name);
            goto fail;
        }
    }
fail:
    bd_free(t.data);
    if (!sub) bd_free(sc->m.slot), sc->m.slot = NULL;
    return st;
}

static braid_status build_graph(const Onnx__ModelProto *mp, const char *base_dir, bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    const Onnx__GraphProto *gp = mp->graph;
    load_ctx c = {.mp = mp, .base_dir = base_dir, .main = g};
    scope sc = {0};
    if (!gp) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "the model has no graph");
    g->ir_version = mp->has_ir_version ? mp->ir_version : 0;

    /* Opsets: the default domain must be one braid knows. */
    g->opsets = bd_calloc(mp->n_opset_import + 1, sizeof *g->opsets);
    BD_CHECK_ALLOC(e, g->opsets);
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = mp->opset_import[i];
        const char *d = os->domain && strcmp(os->domain, "ai.onnx") ? os->domain : "";
        g->opsets[g->n_opsets].domain = bd_strdup(d);
        BD_CHECK_ALLOC(e, g->opsets[g->n_opsets].domain);
        g->opsets[g->n_opsets++].version = os->has_version ? os->version : 1;
        if (!d[0] && (os->version > BD_MAX_OPSET || os->version < 1)) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                         "the model imports opset %lld of the default domain; braid supports 1 to %d",
                         (long long)os->version, BD_MAX_OPSET);
            goto fail;
        }
    }
    if (mp->n_opset_import == 0) { /* IR < 3 models: opset 1 */
        g->opsets[0].domain = bd_strdup("");
        BD_CHECK_ALLOC(e, g->opsets[0].domain);
        g->opsets[0].version = 1;
        g->n_opsets = 1;
    }
    st = read_graph(&c, gp, &sc, g, e);
fail:
    bd_free(sc.m.slot);
    bd_free(sc.caps);
    for (int i = 0; i < c.n_strs; i++) bd_free(c.strs[i]);
    bd_free(c.strs);
    return st;
}

static braid_status load(const void *bytes, void *owned, size_t size, const char *base_dir, bd_graph *g, bd_err *e)
{
    memset(g, 0, sizeof *g);
    if (size == 0) {
        bd_free(owned);
        return BD_FAIL(e, BRAID_ERR_PARSE, "the model is empty (0 bytes)");
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&bd_pb_allocator, size, bytes);
    bd_free(owned); /* the message holds copies of everything */
    if (!mp)
        return BD_FAIL(e, BRAID_ERR_PARSE,
                       "the model is not a valid ONNX protobuf (truncated or not an ONNX file, %zu bytes)",
                       size);
    braid_status st = build_graph(mp, base_dir, g, e);
    onnx__model_proto__free_unpacked(mp, &bd_pb_allocator);
    if (st) bd_graph_free(g);
    return st;
}

braid_status bd_onnx_load(const void *bytes, size_t size, const char *base_dir, bd_graph *g, bd_err *e)
{
    return load(bytes, NULL, size, base_dir, g, e);
}

braid_status bd_onnx_load_owned(void *bytes, size_t size, const char *base_dir, bd_graph *g, bd_err *e)
{
    return load(bytes, bytes, size, base_dir, g, e);
}
