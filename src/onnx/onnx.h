/* onnx.h: the ONNX front end: a ModelProto (bytes) to braid's IR, and
 * TensorProto decoding shared by initializers, Constant nodes and the .pb
 * tensor files that test cases and `braid run --input` use. */
#ifndef BD_ONNX_H
#define BD_ONNX_H

#include "ir/ir.h"

/* Parses and validates a model. base_dir resolves external data (NULL
 * refuses it). On failure g is left empty and e names what and where. */
braid_status bd_onnx_load(const void *bytes, size_t size, const char *base_dir, bd_graph *g,
                          bd_err *e);
/* The same for bytes (bd_malloc'ed) it takes over: they are freed as soon as
 * they are parsed, before the graph is built, and the graph's initializers
 * take the parsed message's raw data instead of copying it, so that a model
 * is held about twice at the peak of its load, not three times. */
braid_status bd_onnx_load_owned(void *bytes, size_t size, const char *base_dir, bd_graph *g, bd_err *e);

/* Reads a serialized TensorProto file into t (data bd_malloc'ed); *name (may
 * be NULL) receives its name, bd_malloc'ed. */
braid_status bd_onnx_parse_tensor(const void *bytes, size_t size, bd_tensor *t, char **name, bd_err *e);
braid_status bd_onnx_read_tensor_file(const char *path, bd_tensor *t, char **name, bd_err *e);

/* A value of declared type dtype (braid.h) from its serialized proto: a
 * TensorProto, a SequenceProto (t: dtype SEQUENCE|elem, rank 1, dims[0] the
 * length, data a bd_malloc'ed array of tensors with their own data) or an
 * OptionalProto (t: what it holds, or dtype UNDEFINED when empty). Free
 * with bd_onnx_value_free. */
braid_status bd_onnx_parse_value(const void *bytes, size_t size, int dtype, bd_tensor *t, bd_err *e);
braid_status bd_onnx_read_value_file(const char *path, int dtype, bd_tensor *t, bd_err *e);
void bd_onnx_value_free(bd_tensor *t);

#endif
