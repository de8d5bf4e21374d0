/* onnx_internal.h: what the loader's files share: the generated protobuf-c
 * types, an allocator that routes protobuf-c through bd_malloc, and
 * TensorProto decoding. */
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

#endif
