/* onnx_internal.h: what the loader's files share: the generated protobuf-c
 * types, an allocator that routes protobuf-c through bd_malloc,
 * TensorProto decoding, and the ops expanded at load. */
#ifndef BD_ONNX_INTERNAL_H
#define BD_ONNX_INTERNAL_H

#include "onnx.h"
#include "onnx.pb-c.h"

extern ProtobufCAllocator bd_pb_allocator;
/* Decodes tp into t (data bd_malloc'ed). */
braid_status bd_onnx_tensor(const Onnx__TensorProto *tp, const char *base_dir, bd_tensor *t, bd_err *e);
/* The same, but raw data that needs no conversion is taken from tp (its
 * raw_data left empty) instead of copied. */
braid_status bd_onnx_tensor_take(Onnx__TensorProto *tp, const char *base_dir, bd_tensor *t, bd_err *e);


/* An op expanded at load into other ops (expand.c): its body as a function
 * whose formal inputs are the node's inputs followed by the outer-scope
 * names its subgraphs read (outer[i], as the model writes them), read like a
 * model-local function. Everything lives until bd_expansion_free. */
typedef struct bd_expansion {
    Onnx__FunctionProto f;
    const char **outer;
    int n_outer;
    void *arena;
} bd_expansion;
/* FlexAttention (ai.onnx.preview) node np; q_dtype: its input Q's dtype when
 * the loader knows it, else 0; same_heads: Q and K are known to have as many
 * heads (no GQA repeat needed). Fails naming the attribute or dtype. */
braid_status bd_expand_flex_attention(const Onnx__NodeProto *np, int q_dtype, int same_heads, bd_expansion *x,
                                      bd_err *e);
void bd_expansion_free(bd_expansion *x);

#endif
