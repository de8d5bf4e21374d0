/* braid.h: the one public header of braid, a concurrent ONNX model executor.
 *
 * Embedding braid in ten lines:
 *
 *     braid_model *m = NULL; braid_session *s = NULL; braid_options *o = NULL;
 *     if (braid_model_load_file("model.onnx", &m) != BRAID_OK)
 *         { fprintf(stderr, "%s\n", braid_last_error()); return 1; }
 *     braid_options_create(&o);
 *     braid_options_set_backend(o, BRAID_BACKEND_AUTO);
 *     if (braid_session_create(m, o, &s) != BRAID_OK) { ... braid_last_error() ... }
 *     braid_tensor in = { .dtype = BRAID_DTYPE_FLOAT, .rank = 4,
 *                         .dims = {1, 3, 224, 224}, .data = pixels };
 *     braid_tensor out = {0};                      // filled by braid, owned by s
 *     braid_session_run(s, 1, &in, 1, &out);       // inputs/outputs in graph order
 *     braid_session_destroy(s); braid_options_destroy(o); braid_model_destroy(m);
 *
 * Conventions: every function returns a braid_status; BRAID_OK is 0. The text
 * of the last failure is kept per session (braid_session_error) and per thread
 * (braid_last_error) for calls that have no session. Every destroy accepts NULL.
 *
 * Threads: a model is immutable once loaded and may be shared by sessions on
 * any threads. Several threads may call braid_session_run on one session at
 * once: runs on one session are serialized by a lock inside the session (each
 * run then sees the session's whole arena and streams). For parallel runs,
 * create one session per thread from the same model.
 */
#ifndef BRAID_H
#define BRAID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BRAID_VERSION_MAJOR 0
#define BRAID_VERSION_MINOR 1
#define BRAID_VERSION_PATCH 0
#define BRAID_MAX_RANK 8

typedef enum braid_status {
    BRAID_OK = 0,
    BRAID_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, a bad option value */
    BRAID_ERR_IO = 2,               /* a file that cannot be opened or read */
    BRAID_ERR_PARSE = 3,            /* bytes that are not a valid ONNX/npy/pb message */
    BRAID_ERR_INVALID_MODEL = 4,    /* a model that breaks ONNX rules (cycle, missing input) */
    BRAID_ERR_UNSUPPORTED = 5,      /* an op, opset, dtype or attribute braid does not run */
    BRAID_ERR_SHAPE = 6,            /* shapes that do not fit (run inputs, broadcasting) */
    BRAID_ERR_DTYPE = 7,            /* element types that do not fit */
    BRAID_ERR_OUT_OF_MEMORY = 8,
    BRAID_ERR_NO_DEVICE = 9,        /* the CUDA backend was asked for and no GPU answers */
    BRAID_ERR_DEVICE = 10,          /* a CUDA, cuDNN or cuBLAS call failed */
    BRAID_ERR_LIMIT = 11,           /* a declared size beyond what braid accepts */
    BRAID_ERR_INTERNAL = 12
} braid_status;

/* Element types use ONNX's TensorProto.DataType numbers. In a braid_tensor
 * every element takes whole bytes: the sub-byte types (INT4, UINT4, INT2,
 * UINT2, FLOAT4E2M1, FLOAT6E2M3, FLOAT6E3M2) take one byte each, the
 * integers sign- or zero-extended to 8 bits, the floats as their code in the
 * low bits. (ONNX's packed form is read and written in .pb files only.)
 * A STRING element is a `const char *` to a NUL-terminated UTF-8 string
 * (data is an array of numel pointers). For inputs the caller owns the
 * strings and keeps them alive during the run; an output's strings are owned
 * by the session, immutable, and valid until the next run or the session's
 * destruction, like its data. Strings with embedded NULs are cut at the NUL.
 *
 * Sequences and optionals (ONNX's sequence and optional types) are flags on
 * the element's dtype: a sequence of float32 tensors is
 * BRAID_DTYPE_SEQUENCE | BRAID_DTYPE_FLOAT, an optional of such a sequence
 * BRAID_DTYPE_OPTIONAL | BRAID_DTYPE_SEQUENCE | BRAID_DTYPE_FLOAT. A
 * sequence value is a braid_tensor with that dtype, rank 1, dims[0] = its
 * length and data pointing at that many braid_tensor, its elements (each a
 * tensor of the element dtype, shapes free). An optional value is the value
 * it holds, or, when empty, dtype UNDEFINED with data NULL. Inputs: the
 * caller owns the element array and the data, alive during the run. Outputs:
 * the session owns them, valid until the next run, like tensor outputs;
 * braid_session_run_into refuses sequence outputs. */
typedef enum braid_dtype {
    BRAID_DTYPE_UNDEFINED = 0,
    BRAID_DTYPE_FLOAT = 1,
    BRAID_DTYPE_UINT8 = 2,
    BRAID_DTYPE_INT8 = 3,
    BRAID_DTYPE_UINT16 = 4,
    BRAID_DTYPE_INT16 = 5,
    BRAID_DTYPE_INT32 = 6,
    BRAID_DTYPE_INT64 = 7,
    BRAID_DTYPE_STRING = 8,
    BRAID_DTYPE_BOOL = 9,
    BRAID_DTYPE_FLOAT16 = 10,
    BRAID_DTYPE_DOUBLE = 11,
    BRAID_DTYPE_UINT32 = 12,
    BRAID_DTYPE_UINT64 = 13,
    BRAID_DTYPE_COMPLEX64 = 14,  /* named for messages; braid runs no complex op */
    BRAID_DTYPE_COMPLEX128 = 15,
    BRAID_DTYPE_BFLOAT16 = 16,
    BRAID_DTYPE_FLOAT8E4M3FN = 17,
    BRAID_DTYPE_FLOAT8E4M3FNUZ = 18,
    BRAID_DTYPE_FLOAT8E5M2 = 19,
    BRAID_DTYPE_FLOAT8E5M2FNUZ = 20,
    BRAID_DTYPE_UINT4 = 21,
    BRAID_DTYPE_INT4 = 22,
    BRAID_DTYPE_FLOAT4E2M1 = 23,
    BRAID_DTYPE_FLOAT8E8M0 = 24,
    BRAID_DTYPE_UINT2 = 25,
    BRAID_DTYPE_INT2 = 26,
    BRAID_DTYPE_FLOAT6E2M3 = 27,
    BRAID_DTYPE_FLOAT6E3M2 = 28,
    BRAID_DTYPE_SEQUENCE = 0x100, /* flag: a sequence of tensors of the dtype in the low bits */
    BRAID_DTYPE_OPTIONAL = 0x200  /* flag: an optional of the tensor or sequence type in the other bits */
} braid_dtype;

typedef enum braid_backend {
    BRAID_BACKEND_AUTO = 0, /* CUDA when a device answers, else the CPU */
    BRAID_BACKEND_CPU = 1,
    BRAID_BACKEND_CUDA = 2
} braid_backend;

/* A dense, row-major tensor. For run inputs the caller owns data. For run
 * outputs braid fills every field; data points into the session's output
 * buffer, valid until the next run or the session's destruction. */
typedef struct braid_tensor {
    braid_dtype dtype;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    void *data;
} braid_tensor;

/* A graph input or output as declared by the model. A dim is -1 where it is
 * symbolic (dim_names[i] then holds its name) or unknown. */
typedef struct braid_value_info {
    const char *name;
    braid_dtype dtype;
    int rank; /* -1 when the model does not say */
    int64_t dims[BRAID_MAX_RANK];
    const char *dim_names[BRAID_MAX_RANK];
} braid_value_info;

typedef struct braid_model braid_model;
typedef struct braid_options braid_options;
typedef struct braid_session braid_session;

const char *braid_version(void);
const char *braid_status_name(braid_status s);
const char *braid_dtype_name(braid_dtype t);
/* The message of the last failure on this thread that had no session. */
const char *braid_last_error(void);

/* ---- models -------------------------------------------------------------- */
braid_status braid_model_load_file(const char *path, braid_model **out);
/* base_dir resolves external data; NULL refuses any external data. */
braid_status braid_model_load_memory(const void *bytes, size_t size, const char *base_dir,
                                     braid_model **out);
void braid_model_destroy(braid_model *m);
int braid_model_input_count(const braid_model *m);
int braid_model_output_count(const braid_model *m);
braid_status braid_model_input_info(const braid_model *m, int i, braid_value_info *out);
braid_status braid_model_output_info(const braid_model *m, int i, braid_value_info *out);

/* ---- options ------------------------------------------------------------- */
braid_status braid_options_create(braid_options **out);
void braid_options_destroy(braid_options *o);
braid_status braid_options_set_backend(braid_options *o, braid_backend b);
braid_status braid_options_set_device(braid_options *o, int device);
/* 0 = automatic (the width of the graph); 1 = a serial plan. */
braid_status braid_options_set_max_streams(braid_options *o, int n);
/* 0 = all cores. */
braid_status braid_options_set_threads(braid_options *o, int n);
braid_status braid_options_set_cuda_graph(braid_options *o, int enable);
/* Lets cuBLAS and cuDNN use TF32 tensor cores for fp32 work (faster, about
 * 1e-3 relative error). Off unless asked. */
braid_status braid_options_set_tf32(braid_options *o, int enable);
/* Lets the planner fold an Add into the Conv that produces one of its inputs
 * (with the activation after the Add) where its cost estimate says running
 * the branches concurrently is worth less (default on). 0 keeps every Add a
 * node of its own, e.g. to measure what folding gains. */
braid_status braid_options_set_fold(braid_options *o, int enable);
/* Lets the CPU backend choose each value's memory layout when it plans:
 * 2-D float convolutions, and the pools, elementwise ops, Concats and
 * Resizes around them, run on NHWC data where the plan finds that pays, with
 * a conversion only where NHWC meets an op that needs NCHW (default on; the
 * CUDA backend keeps NCHW). 0 keeps every value NCHW. Inputs and outputs
 * are NCHW either way. */
braid_status braid_options_set_layout(braid_options *o, int enable);
/* The most cuDNN workspace a CUDA session gives the convolutions of one
 * stream, in MiB (0 to 65536; default 64; 0 allows only algorithms that need
 * none). The first run of each convolution shape in a process times cuDNN's
 * candidate algorithms that fit (BRAID_CUDA_TUNE=0 in the environment keeps
 * cuDNN's heuristic order instead) and keeps the fastest for every later
 * session of that process. */
braid_status braid_options_set_cuda_workspace(braid_options *o, int64_t mib);
/* The most iterations one Loop node may run in a run; a loop that goes past
 * it fails with BRAID_ERR_LIMIT naming the node. 0 = the default, 2^24. */
braid_status braid_options_set_loop_limit(braid_options *o, int64_t n);
/* Chrome trace-event JSON written at session destruction; NULL turns it off. */
braid_status braid_options_set_profile(braid_options *o, const char *path);

/* ---- sessions ------------------------------------------------------------ */
braid_status braid_session_create(const braid_model *m, const braid_options *o,
                                  braid_session **out);
void braid_session_destroy(braid_session *s);
/* The backend actually used (AUTO resolved). */
braid_backend braid_session_backend(const braid_session *s);
/* Why a BRAID_BACKEND_AUTO session runs on the CPU ("no CUDA device answers:
 * ...", "the CUDA backend library could not be loaded: ..."); "" when it runs
 * on CUDA or the backend was named. Owned by the session. */
const char *braid_session_backend_note(const braid_session *s);
/* The device a CUDA session runs on and the library versions it loaded, one
 * line: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, 3352 GB/s); driver
 * 580.65.06 (CUDA 13.0); runtime 13.0; cuDNN 9.19.0; cuBLAS 13.1.0; I/O
 * staged" (cuDNN and cuBLAS as loaded at run time, with the versions braid
 * was built with when they differ). "" on the CPU. Owned by the session. */
const char *braid_session_device_info(const braid_session *s);
/* Notes: what the session did other than what it was asked, one sentence
 * each (a CUDA graph that could not be captured, a cuDNN algorithm refused,
 * an I/O mode the device cannot do), oldest first; equal notes are kept once.
 * braid never falls back silently: a fallback it takes is a note. Note i is
 * "" past the count; the text lives as long as the session. */
int braid_session_note_count(const braid_session *s);
const char *braid_session_note(const braid_session *s, int i);

/* CUDA graphs (braid_options_set_cuda_graph), for the plan of the session's
 * most recent run: the first run of a plan runs node by node and captures
 * the plan at its end; later runs replay the graph. When capturing fails the
 * plan runs node by node, error says why, and a note says so too. */
typedef struct braid_graph_info {
    int requested;    /* the session asked for CUDA graphs and runs on CUDA */
    int captured;     /* the plan holds a captured graph */
    int failed;       /* capturing failed, or cannot be done (BRAID_CUDA_SYNC): runs go uncaptured */
    long replays;     /* runs of the plan that replayed its graph */
    long uncaptured;  /* runs of the plan that ran node by node */
    const char *error; /* why capturing failed; "" otherwise; valid until the plan is dropped */
} braid_graph_info;
braid_status braid_session_graph_info(braid_session *s, braid_graph_info *out);

/* Runs the model. inputs[i] is graph input i (braid_model_input_info order);
 * n_inputs must equal the input count. outputs[i] receives graph output i
 * (n_outputs may be smaller than the output count): braid fills every field,
 * and data points at the session's host-shared output buffer (no copy),
 * valid until the next run on this session or its destruction. */
braid_status braid_session_run(braid_session *s, int n_inputs, const braid_tensor *inputs,
                               int n_outputs, braid_tensor *outputs);
/* The same, into the caller's buffers: outputs[i].data is the caller's, and
 * outputs[i].dtype/rank/dims state what the caller expects; braid copies
 * output i there, or fails with BRAID_ERR_DTYPE / BRAID_ERR_SHAPE when it
 * differs. Threads sharing one session should use this form. On the CPU,
 * an output whose shape the plan knows before the run, given a buffer of
 * that shape aligned to 16 bytes that overlaps no input, is written there
 * by the run itself instead of copied after it: its contents are undefined
 * if the run fails. */
braid_status braid_session_run_into(braid_session *s, int n_inputs, const braid_tensor *inputs,
                                    int n_outputs, const braid_tensor *outputs);
const char *braid_session_error(const braid_session *s);

/* Host-shared input buffers. Returns in *data a buffer owned by the session,
 * large enough for input i at the given shape (shape->dtype and dims are
 * read), that both the host and the device can use: plain memory on the CPU
 * backend; on the CUDA backend, pinned host memory that a run moves to the
 * device in one DMA (the default), reads in place, or managed memory
 * prefetched to the device (BRAID_CUDA_IO=staged|mapped|managed, see
 * docs/cuda.md). Write the input there and pass the same pointer in
 * braid_session_run's inputs[i].data: braid then makes no host copy and the
 * host's writes cause no page faults (an input in ordinary memory costs a
 * pageable copy instead). The buffer lives until the next call for the same
 * input or the session's end. Output buffers are always the session's own
 * (braid_tensor.data after a run), host memory of the same kind. */
braid_status braid_session_input_buffer(braid_session *s, int i, const braid_tensor *shape, void **data);
/* How many CUDA streams and events the session holds now (0 on the CPU).
 * For tests and monitoring: they all go when the session is destroyed. */
braid_status braid_session_device_counts(const braid_session *s, long *streams, long *events);

#ifdef __cplusplus
}
#endif
#endif /* BRAID_H */
