/* backend.h: the state of braid's Triton backend shared by model.c (the
 * backend and model entry points: configuration, auto-completion, options)
 * and instance.c (model instances: one braid session each, and execution). */
#ifndef BRAID_TRITON_BACKEND_H
#define BRAID_TRITON_BACKEND_H

#include <stdint.h>

#include "braid.h"
#include "triton/triton_api.h"

/* A graph input or output as the configuration serves it. */
typedef struct bt_io {
    char *name;
    braid_dtype dtype;
    TRITONSERVER_DataType tdtype;
    int rank;                      /* the model's rank, batch dim included; -1 unknown */
    int64_t dims[BRAID_MAX_RANK];  /* the model's dims; -1 dynamic */
    int in_config;                 /* outputs: listed in the configuration */
} bt_io;

/* Options from the configuration's parameters; -1 where not given. */
typedef struct bt_options {
    int streams, threads, cuda_graph, tf32, fold, layout;
    int64_t cuda_workspace_mb;
    int backend; /* parameter "backend": a braid_backend, or -1 (the instance's kind decides) */
} bt_options;

/* One per loaded model version, shared by its instances. */
typedef struct bt_model {
    char *name;
    uint64_t version;
    braid_model *model;
    int max_batch;          /* the configuration's max_batch_size; 0: no batch dim */
    int n_in, n_out;
    bt_io *in, *out;        /* graph order */
    bt_options opt;
} bt_model;

/* Live braid objects of this process's backend, for the log lines that show
 * an unload frees everything (tests/triton reads them). */
void bt_count_sessions(int delta);
void bt_count_models(int delta);
long bt_live_sessions(void);
long bt_live_models(void);

/* Logging and errors. */
void bt_log(TRITONSERVER_LogLevel level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
TRITONSERVER_Error *bt_error(TRITONSERVER_Error_Code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The Triton error code for a braid status. */
TRITONSERVER_Error_Code bt_code(braid_status st);

/* Element types. */
size_t bt_dtype_size(braid_dtype t); /* 0 for types braid's backend does not serve */
TRITONSERVER_DataType bt_to_triton(braid_dtype t);
braid_dtype bt_from_triton(TRITONSERVER_DataType t);
const char *bt_triton_dtype_name(TRITONSERVER_DataType t);

#define BT_LOG(level, ...) bt_log(level, __FILE__, __LINE__, __VA_ARGS__)

#endif /* BRAID_TRITON_BACKEND_H */
