/* load.c: a ModelProto to braid's IR. Checks what ONNX requires (opsets,
 * known ops, arity, attribute types, names that resolve, no cycles) and turns
 * Constant nodes into constant values. Every failure names the node, its op
 * and the problem; malformed bytes give PARSE, never a crash. */
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

static braid_status read_value_info(const Onnx__ValueInfoProto *vi, bd_value *v, bd_err *e)
{
    const Onnx__TypeProto *tp = vi->type;
    if (!tp) return BRAID_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "value '%s' is not a tensor (sequences, maps and "
                       "optionals are not supported)", v->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
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
        a->s = bd_strndup((const char *)ap->s.data, ap->s.len);
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
            a->strings[i] = bd_strndup((const char *)ap->strings[i].data, ap->strings[i].len);
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

static int64_t opset_of(const bd_graph *g, const char *domain)
{
    const char *d = domain && strcmp(domain, "ai.onnx") ? domain : "";
    for (int i = 0; i < g->n_opsets; i++)
        if (!strcmp(g->opsets[i].domain, d)) return g->opsets[i].version;
    return -1;
}

static braid_status read_node(bd_graph *g, name_map *m, const Onnx__NodeProto *np, int index, bd_err *e)
{
    braid_status st = BRAID_OK;
    const char *op_type = np->op_type ? np->op_type : "";
    const char *domain = np->domain ? np->domain : "";
    char defname[96];
    snprintf(defname, sizeof defname, "%s_%d", op_type, index);
    const char *name = np->name && np->name[0] ? np->name : defname;
    int64_t opset = opset_of(g, domain);
    if (opset < 0) {
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (%s): the model imports no opset for domain '%s'",
                       name, op_type, domain);
    }
    if (bd_domain_lookup(domain) < 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "node '%s' (%s): unsupported op '%s' in domain '%s': braid runs no op of that domain "
                       "(it knows ai.onnx and com.microsoft)", name, op_type, op_type, domain);
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

    if (op == BD_OP_Constant) { /* becomes a constant value, not a node */
        int v = value_of(g, m, np->output[0]);
        if (v < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        if (g->values[v].flags & BD_VAL_CONST)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "node '%s' (Constant): output '%s' is already defined",
                           name, np->output[0]);
        st = fold_constant_node(np, &g->values[v], e);
        if (st) bd_err_prefix(e, "node '%s' (Constant): ", name);
        return st;
    }

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
        nd->in[i] = -1;
        if (!np->input[i][0]) continue;
        nd->in[i] = value_of(g, m, np->input[i]);
        if (nd->in[i] < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n_out; i++) {
        nd->out[i] = -1;
        if (!np->output[i][0]) continue;
        nd->out[i] = value_of(g, m, np->output[i]);
        if (nd->out[i] < 0) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        nd->n_attrs++;
        st = read_attr(np->attribute[i], &nd->attrs[i], e);
        if (st) { bd_err_prefix(e, "node '%s' (%s): ", name, op_type); return st; }
    }
    st = bd_op_parse(nd, e);
    if (st) bd_err_prefix(e, "node '%s' (%s): ", name, op_type);
    return st;
}

static braid_status build_graph(const Onnx__ModelProto *mp, const char *base_dir, bd_graph *g, bd_err *e)
{
    braid_status st = BRAID_OK;
    const Onnx__GraphProto *gp = mp->graph;
    name_map m = {0};
    bd_tensor t = {0};
    if (!gp) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "the model has no graph");
    g->ir_version = mp->has_ir_version ? mp->ir_version : 0;
    g->name = bd_strdup(gp->name ? gp->name : "");
    BD_CHECK_ALLOC(e, g->name);

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
    if (gp->n_sparse_initializer) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "sparse initializers are not supported");
        goto fail;
    }

    size_t n_names = gp->n_initializer + gp->n_input + gp->n_output;
    for (size_t i = 0; i < gp->n_node; i++) n_names += gp->node[i]->n_input + gp->node[i]->n_output;
    m.cap = 64;
    while ((size_t)m.cap < 2 * n_names + 2) m.cap *= 2;
    m.slot = bd_calloc((size_t)m.cap, sizeof *m.slot);
    BD_CHECK_ALLOC(e, m.slot);

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *nm = tp->name ? tp->name : "";
        if (map_find(&m, g, nm) >= 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "initializer '%s' is defined twice", nm);
            goto fail;
        }
        int v = value_of(g, &m, nm);
        if (v < 0) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
        BD_TRY(bd_onnx_tensor(tp, base_dir, &t, e));
        set_const(&g->values[v], &t);
    }
    /* Graph inputs; those backed by an initializer are constants (their
     * declared type must agree with the initializer). */
    g->inputs = bd_malloc((gp->n_input + 1) * sizeof(int));
    g->outputs = bd_malloc((gp->n_output + 1) * sizeof(int));
    BD_CHECK_ALLOC(e, g->inputs && g->outputs);
    for (size_t i = 0; i < gp->n_input; i++) {
        const char *nm = gp->input[i]->name ? gp->input[i]->name : "";
        int v = value_of(g, &m, nm);
        if (v < 0) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
        bd_value *val = &g->values[v];
        if (val->flags & BD_VAL_INPUT) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph input '%s' is declared twice", nm);
            goto fail;
        }
        if (val->flags & BD_VAL_CONST) continue;
        BD_TRY(read_value_info(gp->input[i], val, e));
        if (val->rank < 0 && !gp->input[i]->type) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "graph input '%s' has no type", nm);
            goto fail;
        }
        if (!bd_dtype_size(val->dtype)) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "graph input '%s' has dtype %s, which braid does not support",
                         nm, bd_dtype_name(val->dtype));
            goto fail;
        }
        val->flags |= BD_VAL_INPUT;
        g->inputs[g->n_inputs++] = v;
    }
    g->nodes = bd_calloc(gp->n_node + 1, sizeof(bd_node));
    BD_CHECK_ALLOC(e, g->nodes);
    for (size_t i = 0; i < gp->n_node; i++) BD_TRY(read_node(g, &m, gp->node[i], (int)i, e));
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name ? gp->output[i]->name : "";
        int v = map_find(&m, g, nm);
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
    BD_TRY(bd_graph_fuse(g, e));
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
    bd_free(m.slot);
    return st;
}

braid_status bd_onnx_load(const void *bytes, size_t size, const char *base_dir, bd_graph *g, bd_err *e)
{
    memset(g, 0, sizeof *g);
    if (size == 0) return BD_FAIL(e, BRAID_ERR_PARSE, "the model is empty (0 bytes)");
    Onnx__ModelProto *mp = onnx__model_proto__unpack(&bd_pb_allocator, size, bytes);
    if (!mp)
        return BD_FAIL(e, BRAID_ERR_PARSE,
                       "the model is not a valid ONNX protobuf (truncated or not an ONNX file, %zu bytes)",
                       size);
    braid_status st = build_graph(mp, base_dir, g, e);
    onnx__model_proto__free_unpacked(mp, &bd_pb_allocator);
    if (st) bd_graph_free(g);
    return st;
}
