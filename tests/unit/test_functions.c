/* test_functions.c: model-local functions (ModelProto.functions) expanded at
 * load: formal inputs and outputs bound to the call's names, internal names
 * kept apart from the graph's (the main graph has its own "T"), attributes
 * referenced with ref_attr_name taken from the call (else the function's
 * declared default, else the op's), functions that call functions, and a
 * function that calls itself refused. Expected numbers by hand. */
#include <stdlib.h>

#include "api_internal.h"
#include "check.h"
#include "mbuild.h"

static const int64_t D2[] = {2};

/* local.Scale(X, S) -> Y: T = LeakyRelu(X, alpha = @alpha); Y = T * S. */
static void add_scale(mb *b, mb_model *mm)
{
    Onnx__FunctionProto *f = mb_function(b, mm, "local", "Scale", "X,S", "Y", 17);
    Onnx__NodeProto *lr = mb_fnode(b, f, "LeakyRelu", "X", "T");
    mb_attr_ref(b, lr, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "alpha");
    mb_fnode(b, f, "Mul", "T,S", "Y");
    f->n_attribute = 1;
    f->attribute = mb_alloc(b, sizeof *f->attribute);
    f->attribute[0] = mb_str(b, "alpha");
}

static braid_status run1(braid_model *m, const float *x, float *y)
{
    braid_session *s = NULL;
    braid_tensor in = {BRAID_DTYPE_FLOAT, 1, {2}, (void *)x}, out;
    braid_status st = braid_session_create(m, NULL, &s);
    if (!st) st = braid_session_run(s, 1, &in, 1, &out);
    if (!st) memcpy(y, out.data, 2 * sizeof *y);
    else fprintf(stderr, "%s\n", braid_session_error(s));
    braid_session_destroy(s);
    return st;
}

static void test_call(int with_alpha)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    float three = 3;
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D2);
    mb_init(&b, g, "s", BRAID_DTYPE_FLOAT, 0, NULL, &three, 4);
    mb_node(&b, g, "Neg", "x", "T", "neg"); /* a graph value named like the function's own */
    Onnx__NodeProto *call = mb_node(&b, g, "Scale", "T,s", "y", "call");
    call->domain = mb_str(&b, "local");
    if (with_alpha) mb_attr_f(&b, call, "alpha", 0.5f);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D2);
    mb_model_init(&b, &mm, g, 17);
    mb_model_domain(&b, &mm, "local", 1);
    add_scale(&b, &mm);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    if (!m) { fprintf(stderr, "%s\n", braid_last_error()); mb_free(&b); return; }
    /* Expanded: Neg, then the call's LeakyRelu and Mul, named under the call. */
    const bd_graph *bg = bd_model_graph(m);
    CHECK_EQ_INT(bg->n_nodes, 3);
    CHECK(!strcmp(bg->nodes[1].name, "call/LeakyRelu_0") || !strcmp(bg->nodes[1].name, "call/LeakyRelu_1"));
    float x[] = {2, -4}, y[2];
    CHECK_EQ_INT(run1(m, x, y), BRAID_OK);
    /* T = -x = {-2, 4}: LeakyRelu gives {-2 alpha, 4}, times 3. */
    float a = with_alpha ? 0.5f : 0.01f;
    CHECK_NEAR(y[0], -2 * a * 3, 1e-6, 1e-6);
    CHECK_NEAR(y[1], 12, 0, 0);
    braid_model_destroy(m);
    mb_free(&b);
}

/* local.Outer(X, S) -> Y = Scale(Scale(X, S), S) with Outer's attribute "a"
 * passed on as each inner call's alpha. */
static void test_nested(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    float three = 3;
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D2);
    mb_init(&b, g, "s", BRAID_DTYPE_FLOAT, 0, NULL, &three, 4);
    Onnx__NodeProto *call = mb_node(&b, g, "Outer", "x,s", "y", "outer");
    call->domain = mb_str(&b, "local");
    mb_attr_f(&b, call, "a", 0.5f);
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D2);
    mb_model_init(&b, &mm, g, 17);
    mb_model_domain(&b, &mm, "local", 1);
    add_scale(&b, &mm);
    Onnx__FunctionProto *f = mb_function(&b, &mm, "local", "Outer", "X,S", "Y", 17);
    Onnx__NodeProto *c1 = mb_fnode(&b, f, "Scale", "X,S", "U");
    c1->domain = mb_str(&b, "local");
    mb_attr_ref(&b, c1, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a");
    Onnx__NodeProto *c2 = mb_fnode(&b, f, "Scale", "U,S", "Y");
    c2->domain = mb_str(&b, "local");
    mb_attr_ref(&b, c2, "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a");
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    if (!m) { fprintf(stderr, "%s\n", braid_last_error()); mb_free(&b); return; }
    float x[] = {-2, 4}, y[2];
    CHECK_EQ_INT(run1(m, x, y), BRAID_OK);
    /* {-2, 4} -> {-1, 4} * 3 = {-3, 12} -> {-1.5, 12} * 3 = {-4.5, 36}. */
    CHECK_NEAR(y[0], -4.5, 0, 0);
    CHECK_NEAR(y[1], 36, 0, 0);
    braid_model_destroy(m);

    /* A function that calls itself would never end: refused, naming the call. */
    c2->op_type = mb_str(&b, "Outer");
    c2->n_attribute = 0;
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_ERR_INVALID_MODEL);
    CHECK(!strcmp(braid_last_error(), "node 'outer' (Outer): function 'Outer': node 'outer/Outer_2' (Outer): function "
                                      "'Outer' calls itself, directly or through other functions"));
    mb_free(&b);
}

/* A default declared by the function (FunctionProto.attribute_proto, field
 * 11, newer than the onnx.proto braid is built with) applies where the call
 * leaves the attribute out: here alpha = 0.25, not LeakyRelu's 0.01. */
static void test_default(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    float one = 1;
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 1, D2);
    mb_init(&b, g, "s", BRAID_DTYPE_FLOAT, 0, NULL, &one, 4);
    Onnx__NodeProto *call = mb_node(&b, g, "Scale", "x,s", "y", "call");
    call->domain = mb_str(&b, "local");
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 1, D2);
    mb_model_init(&b, &mm, g, 17);
    mb_model_domain(&b, &mm, "local", 1);
    add_scale(&b, &mm);
    Onnx__FunctionProto *f = mm.m.functions[0];
    Onnx__AttributeProto def;
    onnx__attribute_proto__init(&def);
    def.name = "alpha";
    def.has_type = 1;
    def.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    def.has_f = 1;
    def.f = 0.25f;
    size_t len = onnx__attribute_proto__get_packed_size(&def);
    uint8_t *bytes = mb_alloc(&b, len + 1);
    bytes[0] = (uint8_t)len; /* under 128: one varint byte */
    onnx__attribute_proto__pack(&def, bytes + 1);
    ProtobufCMessageUnknownField *uf = mb_alloc(&b, sizeof *uf);
    *uf = (ProtobufCMessageUnknownField){.tag = 11, .wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, .len = len + 1,
                                         .data = bytes};
    f->base.n_unknown_fields = 1;
    f->base.unknown_fields = uf;
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    if (!m) { fprintf(stderr, "%s\n", braid_last_error()); mb_free(&b); return; }
    float x[] = {-4, 4}, y[2];
    CHECK_EQ_INT(run1(m, x, y), BRAID_OK);
    CHECK_NEAR(y[0], -1, 0, 0);
    CHECK_NEAR(y[1], 4, 0, 0);
    braid_model_destroy(m);
    mb_free(&b);
}

int main(void)
{
    test_call(1);
    test_call(0);
    test_nested();
    test_default();
    return check_done();
}
