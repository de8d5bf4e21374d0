/* mbuild.h: ONNX models built in C for unit tests (graphs with subgraphs,
 * functions and any attribute), through the protobuf-c structs braid parses:
 * a test writes the model it needs next to its checks, with no generator.
 * Every allocation is the builder's and goes with mb_free. */
#ifndef BD_MBUILD_H
#define BD_MBUILD_H

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"
#include "onnx.pb-c.h"

typedef struct mb {
    void **blocks;
    int n, cap;
} mb;

static inline void *mb_alloc(mb *b, size_t n)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->blocks = realloc(b->blocks, (size_t)b->cap * sizeof *b->blocks);
    }
    return b->blocks[b->n++] = calloc(1, n ? n : 1);
}

static inline void mb_free(mb *b)
{
    for (int i = 0; i < b->n; i++) free(b->blocks[i]);
    free(b->blocks);
    memset(b, 0, sizeof *b);
}

static inline char *mb_str(mb *b, const char *s)
{
    char *d = mb_alloc(b, strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* Appends p to an array of pointers (*arr, *n). */
static inline void mb_push(mb *b, void ***arr, size_t *n, void *p)
{
    void **a = mb_alloc(b, (*n + 1) * sizeof *a);
    if (*n) memcpy(a, *arr, *n * sizeof *a);
    a[(*n)++] = p;
    *arr = a;
}

/* "a,b,,c" into names (empty ones kept: omitted inputs). */
static inline void mb_names(mb *b, const char *list, char ***out, size_t *n)
{
    *n = 0;
    *out = NULL;
    if (!list) return;
    const char *s = list;
    for (;;) {
        const char *c = strchr(s, ',');
        size_t len = c ? (size_t)(c - s) : strlen(s);
        char *nm = mb_alloc(b, len + 1);
        memcpy(nm, s, len);
        mb_push(b, (void ***)out, n, nm);
        if (!c) break;
        s = c + 1;
    }
    if (*n == 1 && !(*out)[0][0]) *n = 0; /* "" is no names */
}

static inline Onnx__GraphProto *mb_graph(mb *b, const char *name)
{
    Onnx__GraphProto *g = mb_alloc(b, sizeof *g);
    onnx__graph_proto__init(g);
    g->name = mb_str(b, name);
    return g;
}

/* A value info: dtype 0 leaves the type out, rank -1 the shape; dims < 0 are
 * symbolic (named "d<i>"). */
static inline Onnx__ValueInfoProto *mb_vi(mb *b, const char *name, int dtype, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = mb_alloc(b, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = mb_str(b, name);
    if (!dtype) return vi;
    Onnx__TypeProto *tp = mb_alloc(b, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = mb_alloc(b, sizeof *tt);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    tt->has_elem_type = 1;
    tt->elem_type = dtype;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = mb_alloc(b, sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        for (int d = 0; d < rank; d++) {
            Onnx__TensorShapeProto__Dimension *dim = mb_alloc(b, sizeof *dim);
            onnx__tensor_shape_proto__dimension__init(dim);
            if (dims[d] >= 0) {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dim->dim_value = dims[d];
            } else {
                char nm[16];
                snprintf(nm, sizeof nm, "d%d", d);
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dim->dim_param = mb_str(b, nm);
            }
            mb_push(b, (void ***)&sh->dim, &sh->n_dim, dim);
        }
        tt->shape = sh;
    }
    return vi;
}

static inline void mb_input(mb *b, Onnx__GraphProto *g, const char *name, int dtype, int rank, const int64_t *dims)
{
    mb_push(b, (void ***)&g->input, &g->n_input, mb_vi(b, name, dtype, rank, dims));
}

static inline void mb_output(mb *b, Onnx__GraphProto *g, const char *name, int dtype, int rank, const int64_t *dims)
{
    mb_push(b, (void ***)&g->output, &g->n_output, mb_vi(b, name, dtype, rank, dims));
}

/* A tensor with raw data (bytes copied). */
static inline Onnx__TensorProto *mb_tensor(mb *b, const char *name, int dtype, int rank, const int64_t *dims, const void *data,
                                    size_t bytes)
{
    Onnx__TensorProto *t = mb_alloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = mb_str(b, name);
    t->has_data_type = 1;
    t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = mb_alloc(b, (size_t)(rank + 1) * sizeof *t->dims);
    for (int d = 0; d < rank; d++) t->dims[d] = dims[d];
    t->has_raw_data = 1;
    t->raw_data.len = bytes;
    t->raw_data.data = mb_alloc(b, bytes);
    if (bytes) memcpy(t->raw_data.data, data, bytes);
    return t;
}

static inline void mb_init(mb *b, Onnx__GraphProto *g, const char *name, int dtype, int rank, const int64_t *dims,
                    const void *data, size_t bytes)
{
    mb_push(b, (void ***)&g->initializer, &g->n_initializer, mb_tensor(b, name, dtype, rank, dims, data, bytes));
}

/* A 1-D string initializer of n strings. */
static inline void mb_init_strings(mb *b, Onnx__GraphProto *g, const char *name, int n, const char *const *v)
{
    int64_t dims[1] = {n};
    Onnx__TensorProto *t = mb_tensor(b, name, BRAID_DTYPE_STRING, 1, dims, NULL, 0);
    t->has_raw_data = 0;
    t->n_string_data = (size_t)n;
    t->string_data = mb_alloc(b, (size_t)n * sizeof *t->string_data);
    for (int i = 0; i < n; i++) {
        t->string_data[i].data = (uint8_t *)mb_str(b, v[i]);
        t->string_data[i].len = strlen(v[i]);
    }
    mb_push(b, (void ***)&g->initializer, &g->n_initializer, t);
}

static inline Onnx__NodeProto *mb_node(mb *b, Onnx__GraphProto *g, const char *op, const char *ins, const char *outs,
                                const char *name)
{
    Onnx__NodeProto *n = mb_alloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = mb_str(b, op);
    n->name = mb_str(b, name ? name : "");
    n->domain = mb_str(b, "");
    mb_names(b, ins, &n->input, &n->n_input);
    mb_names(b, outs, &n->output, &n->n_output);
    if (g) mb_push(b, (void ***)&g->node, &g->n_node, n);
    return n;
}

static inline Onnx__AttributeProto *mb_attr(mb *b, Onnx__NodeProto *n, const char *name, int type)
{
    Onnx__AttributeProto *a = mb_alloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = mb_str(b, name);
    a->has_type = 1;
    a->type = type;
    mb_push(b, (void ***)&n->attribute, &n->n_attribute, a);
    return a;
}

static inline void mb_attr_i(mb *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void mb_attr_f(mb *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void mb_attr_is(mb *b, Onnx__NodeProto *n, const char *name, int cnt, const int64_t *v)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)cnt;
    a->ints = mb_alloc(b, (size_t)(cnt + 1) * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)cnt * sizeof *v);
}

static inline void mb_attr_g(mb *b, Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    a->g = g;
}

static inline void mb_attr_t(mb *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
}

/* An attribute that refers to an attribute of the calling function. */
static inline void mb_attr_ref(mb *b, Onnx__NodeProto *n, const char *name, int type, const char *ref)
{
    Onnx__AttributeProto *a = mb_attr(b, n, name, type);
    a->ref_attr_name = mb_str(b, ref);
}

/* A Constant node with a float or int64 tensor. */
static inline void mb_const_f(mb *b, Onnx__GraphProto *g, const char *out, int rank, const int64_t *dims, const float *v,
                       size_t n)
{
    Onnx__NodeProto *c = mb_node(b, g, "Constant", "", out, NULL);
    mb_attr_t(b, c, "value", mb_tensor(b, out, BRAID_DTYPE_FLOAT, rank, dims, v, n * sizeof *v));
}

static inline void mb_const_i(mb *b, Onnx__GraphProto *g, const char *out, int rank, const int64_t *dims, const int64_t *v,
                       size_t n)
{
    Onnx__NodeProto *c = mb_node(b, g, "Constant", "", out, NULL);
    mb_attr_t(b, c, "value", mb_tensor(b, out, BRAID_DTYPE_INT64, rank, dims, v, n * sizeof *v));
}

typedef struct mb_model {
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os;
} mb_model;

static inline Onnx__FunctionProto *mb_function(mb *b, mb_model *mm, const char *domain, const char *name, const char *ins,
                                        const char *outs, int opset)
{
    Onnx__FunctionProto *f = mb_alloc(b, sizeof *f);
    onnx__function_proto__init(f);
    f->name = mb_str(b, name);
    f->domain = mb_str(b, domain);
    mb_names(b, ins, &f->input, &f->n_input);
    mb_names(b, outs, &f->output, &f->n_output);
    Onnx__OperatorSetIdProto *os = mb_alloc(b, sizeof *os);
    onnx__operator_set_id_proto__init(os);
    os->domain = mb_str(b, "");
    os->has_version = 1;
    os->version = opset;
    mb_push(b, (void ***)&f->opset_import, &f->n_opset_import, os);
    mb_push(b, (void ***)&mm->m.functions, &mm->m.n_functions, f);
    return f;
}

/* Appends a node to a function's body. */
static inline Onnx__NodeProto *mb_fnode(mb *b, Onnx__FunctionProto *f, const char *op, const char *ins, const char *outs)
{
    Onnx__NodeProto *n = mb_node(b, NULL, op, ins, outs, NULL);
    mb_push(b, (void ***)&f->node, &f->n_node, n);
    return n;
}

static inline void mb_model_init(mb *b, mb_model *mm, Onnx__GraphProto *g, int opset)
{
    memset(mm, 0, sizeof *mm);
    onnx__model_proto__init(&mm->m);
    onnx__operator_set_id_proto__init(&mm->os);
    mm->m.has_ir_version = 1;
    mm->m.ir_version = 8;
    mm->os.domain = mb_str(b, "");
    mm->os.has_version = 1;
    mm->os.version = opset;
    mm->m.n_opset_import = 1;
    mm->m.opset_import = mb_alloc(b, sizeof *mm->m.opset_import);
    mm->m.opset_import[0] = &mm->os;
    mm->m.graph = g;
}

/* Imports another domain (for model-local functions). */
static inline void mb_model_domain(mb *b, mb_model *mm, const char *domain, int version)
{
    Onnx__OperatorSetIdProto *os = mb_alloc(b, sizeof *os);
    onnx__operator_set_id_proto__init(os);
    os->domain = mb_str(b, domain);
    os->has_version = 1;
    os->version = version;
    mb_push(b, (void ***)&mm->m.opset_import, &mm->m.n_opset_import, os);
}

/* Serializes and loads the model; returns the load's status. */
static inline braid_status mb_load(mb *b, mb_model *mm, braid_model **out)
{
    size_t n = onnx__model_proto__get_packed_size(&mm->m);
    uint8_t *buf = mb_alloc(b, n);
    onnx__model_proto__pack(&mm->m, buf);
    return braid_model_load_memory(buf, n, NULL, out);
}

/* The bytes of the model (owned by the builder), for files. */
static inline const void *mb_bytes(mb *b, mb_model *mm, size_t *n)
{
    *n = onnx__model_proto__get_packed_size(&mm->m);
    uint8_t *buf = mb_alloc(b, *n);
    onnx__model_proto__pack(&mm->m, buf);
    return buf;
}

#endif
