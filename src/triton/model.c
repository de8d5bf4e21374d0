/* model.c: braid's Triton backend, the backend and model entry points. A
 * model version's 1/model.onnx (or default_model_filename) is loaded once
 * and shared by its instances; the configuration is completed from the ONNX
 * model when it lists no inputs or outputs (Triton's auto-complete), then
 * checked against the model, and its parameters become braid's options. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "triton/backend.h"
#include "triton/json.h"
#include "util/common.h"

/* max_batch_size given to models that can batch and whose configuration
 * says nothing (tritonserver's --backend-config=default-max-batch-size,
 * which the server passes to every backend; 4 when it does not). */
static int default_max_batch = 4;

static atomic_long live_sessions, live_models;
void bt_count_sessions(int delta) { atomic_fetch_add(&live_sessions, delta); }
void bt_count_models(int delta) { atomic_fetch_add(&live_models, delta); }
long bt_live_sessions(void) { return atomic_load(&live_sessions); }
long bt_live_models(void) { return atomic_load(&live_models); }

void bt_log(TRITONSERVER_LogLevel level, const char *file, int line, const char *fmt, ...)
{
    if (!TRITONSERVER_LogIsEnabled(level)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *base = strstr(file, "src/triton/");
    TRITONSERVER_Error *e = TRITONSERVER_LogMessage(level, base ? base + 4 : file, line, msg);
    if (e) TRITONSERVER_ErrorDelete(e);
}

TRITONSERVER_Error *bt_error(TRITONSERVER_Error_Code code, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return TRITONSERVER_ErrorNew(code, msg);
}

TRITONSERVER_Error_Code bt_code(braid_status st)
{
    switch (st) {
    case BRAID_ERR_INVALID_ARGUMENT:
    case BRAID_ERR_SHAPE:
    case BRAID_ERR_DTYPE:
    case BRAID_ERR_LIMIT: return TRITONSERVER_ERROR_INVALID_ARG;
    case BRAID_ERR_UNSUPPORTED: return TRITONSERVER_ERROR_UNSUPPORTED;
    case BRAID_ERR_IO: return TRITONSERVER_ERROR_NOT_FOUND;
    case BRAID_ERR_NO_DEVICE: return TRITONSERVER_ERROR_UNAVAILABLE;
    default: return TRITONSERVER_ERROR_INTERNAL;
    }
}

/* ---- element types ---------------------------------------------------------- */

static const struct {
    braid_dtype b;
    TRITONSERVER_DataType t;
    const char *config; /* the configuration's name */
    const char *wire;   /* the protocol's name */
    size_t size;
} dtypes[] = {
    {BRAID_DTYPE_BOOL, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", "BOOL", 1},
    {BRAID_DTYPE_UINT8, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", "UINT8", 1},
    {BRAID_DTYPE_UINT16, TRITONSERVER_TYPE_UINT16, "TYPE_UINT16", "UINT16", 2},
    {BRAID_DTYPE_UINT32, TRITONSERVER_TYPE_UINT32, "TYPE_UINT32", "UINT32", 4},
    {BRAID_DTYPE_UINT64, TRITONSERVER_TYPE_UINT64, "TYPE_UINT64", "UINT64", 8},
    {BRAID_DTYPE_INT8, TRITONSERVER_TYPE_INT8, "TYPE_INT8", "INT8", 1},
    {BRAID_DTYPE_INT16, TRITONSERVER_TYPE_INT16, "TYPE_INT16", "INT16", 2},
    {BRAID_DTYPE_INT32, TRITONSERVER_TYPE_INT32, "TYPE_INT32", "INT32", 4},
    {BRAID_DTYPE_INT64, TRITONSERVER_TYPE_INT64, "TYPE_INT64", "INT64", 8},
    {BRAID_DTYPE_FLOAT16, TRITONSERVER_TYPE_FP16, "TYPE_FP16", "FP16", 2},
    {BRAID_DTYPE_FLOAT, TRITONSERVER_TYPE_FP32, "TYPE_FP32", "FP32", 4},
    {BRAID_DTYPE_DOUBLE, TRITONSERVER_TYPE_FP64, "TYPE_FP64", "FP64", 8},
    {BRAID_DTYPE_BFLOAT16, TRITONSERVER_TYPE_BF16, "TYPE_BF16", "BF16", 2},
};
#define N_DTYPES (int)(sizeof dtypes / sizeof dtypes[0])

size_t bt_dtype_size(braid_dtype t)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].b == t) return dtypes[i].size;
    return 0;
}

TRITONSERVER_DataType bt_to_triton(braid_dtype t)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].b == t) return dtypes[i].t;
    return TRITONSERVER_TYPE_INVALID;
}

braid_dtype bt_from_triton(TRITONSERVER_DataType t)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].t == t) return dtypes[i].b;
    return BRAID_DTYPE_UNDEFINED;
}

const char *bt_triton_dtype_name(TRITONSERVER_DataType t)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].t == t) return dtypes[i].wire;
    return t == TRITONSERVER_TYPE_BYTES ? "BYTES" : "INVALID";
}

static const char *config_dtype_name(braid_dtype t)
{
    for (int i = 0; i < N_DTYPES; i++)
        if (dtypes[i].b == t) return dtypes[i].config;
    return NULL;
}

static braid_dtype config_dtype(const char *s)
{
    for (int i = 0; s && i < N_DTYPES; i++)
        if (strcmp(dtypes[i].config, s) == 0) return dtypes[i].b;
    return BRAID_DTYPE_UNDEFINED;
}

/* ---- the backend ------------------------------------------------------------- */

/* Reads the server's JSON message into a tree. */
static TRITONSERVER_Error *message_tree(TRITONSERVER_Message *msg, const char *what, bj **out)
{
    const char *base = NULL;
    size_t n = 0;
    TRITONSERVER_Error *e = TRITONSERVER_MessageSerializeToJson(msg, &base, &n);
    if (e) return e;
    char why[200];
    *out = bj_parse(base, n, why, sizeof why);
    if (!*out) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: the %s is not JSON braid can read: %s", what, why);
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_Initialize(TRITONBACKEND_Backend *backend)
{
    uint32_t major = 0, minor = 0;
    TRITONSERVER_Error *e = TRITONBACKEND_ApiVersion(&major, &minor);
    if (e) return e;
    if (major != BT_API_MAJOR || minor < BT_API_MINOR)
        return bt_error(TRITONSERVER_ERROR_UNSUPPORTED,
                        "braid: the server's backend API is %u.%u; braid's backend needs %d.%d or a later %d.x",
                        major, minor, BT_API_MAJOR, BT_API_MINOR, BT_API_MAJOR);
    TRITONSERVER_Message *msg = NULL;
    if ((e = TRITONBACKEND_BackendConfig(backend, &msg))) return e;
    bj *cfg = NULL; /* the message stays the server's */
    if ((e = message_tree(msg, "backend configuration", &cfg))) return e;
    int64_t mbs = 0;
    if (bj_int(bj_get(bj_get(cfg, "cmdline"), "default-max-batch-size"), &mbs) && mbs >= 0 && mbs <= (1 << 30))
        default_max_batch = (int)mbs;
    bj_free(cfg);
    BT_LOG(TRITONSERVER_LOG_INFO, "braid %s backend initialized (backend API %u.%u, default max_batch_size %d)",
           braid_version(), major, minor, default_max_batch);
    return NULL;
}

TRITONSERVER_Error *TRITONBACKEND_Finalize(TRITONBACKEND_Backend *backend)
{
    BT_LOG(TRITONSERVER_LOG_INFO, "braid backend finalized: sessions alive: %ld, models alive: %ld",
           bt_live_sessions(), bt_live_models());
    return NULL;
}

/* ---- configuration ----------------------------------------------------------- */

static void free_model(bt_model *m)
{
    if (!m) return;
    for (int i = 0; m->in && i < m->n_in; i++) bd_free(m->in[i].name);
    for (int i = 0; m->out && i < m->n_out; i++) bd_free(m->out[i].name);
    bd_free(m->in);
    bd_free(m->out);
    if (m->model) bt_count_models(-1);
    braid_model_destroy(m->model);
    bd_free(m->name);
    bd_free(m);
}

/* The model can batch along its first dim: every input and output has one,
 * and it is dynamic. */
static int model_batchable(const bt_model *m)
{
    for (int i = 0; i < m->n_in + m->n_out; i++) {
        const bt_io *io = i < m->n_in ? &m->in[i] : &m->out[i - m->n_in];
        if (io->rank < 1 || io->dims[0] != -1) return 0;
    }
    return m->n_in > 0;
}

static bj *io_entry(const bt_io *io, int batched)
{
    bj *e = bj_new(BJ_OBJ), *dims = bj_new(BJ_ARR);
    int ok = e && dims && bj_set(e, "name", bj_new_str(io->name)) &&
             bj_set(e, "data_type", bj_new_str(config_dtype_name(io->dtype)));
    for (int d = batched; ok && d < io->rank; d++) ok = bj_push(dims, bj_new_int(io->dims[d]));
    if (ok && bj_set(e, "dims", dims)) return e;
    if (!ok) bj_free(dims);
    bj_free(e);
    return NULL;
}

/* Completes cfg from the model where it lists no inputs or outputs; *changed
 * says whether it did. */
static TRITONSERVER_Error *autocomplete(const bt_model *m, bj *cfg, int *changed)
{
    int has_in = bj_len(bj_get(cfg, "input")) > 0, has_out = bj_len(bj_get(cfg, "output")) > 0;
    int64_t mbs = 0;
    bj_int(bj_get(cfg, "max_batch_size"), &mbs);
    *changed = 0;
    if (has_in && has_out) return NULL;
    for (int i = 0; i < m->n_in + m->n_out; i++) {
        const bt_io *io = i < m->n_in ? &m->in[i] : &m->out[i - m->n_in];
        if ((i < m->n_in ? has_in : has_out)) continue;
        if (io->rank < 0)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "braid: model '%s': %s '%s' has no shape in the ONNX model, so the configuration "
                            "cannot be completed: list it in config.pbtxt",
                            m->name, i < m->n_in ? "input" : "output", io->name);
        if (!config_dtype_name(io->dtype))
            return bt_error(TRITONSERVER_ERROR_UNSUPPORTED, "braid: model '%s': %s '%s' is %s, which braid's backend does not serve",
                            m->name, i < m->n_in ? "input" : "output", io->name, braid_dtype_name(io->dtype));
    }
    if (!has_in && !has_out && mbs == 0 && default_max_batch > 0 && model_batchable(m)) {
        mbs = default_max_batch;
        if (!bj_set(cfg, "max_batch_size", bj_new_int(mbs))) goto oom;
        if (!bj_get(cfg, "dynamic_batching") && !bj_get(cfg, "sequence_batching") &&
            !bj_set(cfg, "dynamic_batching", bj_new(BJ_OBJ)))
            goto oom;
        BT_LOG(TRITONSERVER_LOG_INFO, "braid: model '%s': the first dim is dynamic: max_batch_size %lld, dynamic batching",
               m->name, (long long)mbs);
    }
    for (int list = 0; list < 2; list++) {
        if (list == 0 ? has_in : has_out) continue;
        bj *arr = bj_new(BJ_ARR);
        if (!arr) goto oom;
        int n = list == 0 ? m->n_in : m->n_out;
        for (int i = 0; i < n; i++)
            if (!bj_push(arr, io_entry(list == 0 ? &m->in[i] : &m->out[i], mbs > 0))) {
                bj_free(arr);
                goto oom;
            }
        if (!bj_set(cfg, list == 0 ? "input" : "output", arr)) goto oom;
    }
    *changed = 1;
    return NULL;
oom:
    return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory completing the configuration");
}

static int find_io(const bt_io *ios, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(ios[i].name, name) == 0) return i;
    return -1;
}

static void list_names(const bt_io *ios, int n, char *buf, size_t cap)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s'%s'", i ? ", " : "", ios[i].name);
    }
}

/* Checks the configuration's inputs (out = 0) or outputs (1) against the model. */
static TRITONSERVER_Error *check_io(bt_model *m, const bj *list, int out)
{
    const char *what = out ? "output" : "input";
    bt_io *ios = out ? m->out : m->in;
    int n = out ? m->n_out : m->n_in, batched = m->max_batch > 0;
    char names[512];
    for (int k = 0; k < bj_len(list); k++) {
        const bj *e = bj_at(list, k);
        const char *name = bj_str(bj_get(e, "name"));
        int i = find_io(ios, n, name);
        if (i < 0) {
            list_names(ios, n, names, sizeof names);
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': config.pbtxt %s '%s' is not an %s of the model (%s)",
                            m->name, what, name ? name : "", what, names);
        }
        bt_io *io = &ios[i];
        io->in_config = 1;
        const char *dt = bj_str(bj_get(e, "data_type"));
        if (config_dtype(dt) != io->dtype)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': %s '%s' is %s in config.pbtxt but %s (%s) in the model",
                            m->name, what, io->name, dt ? dt : "unset", braid_dtype_name(io->dtype),
                            config_dtype_name(io->dtype) ? config_dtype_name(io->dtype) : "not served by braid's backend");
        if (bj_get(e, "reshape"))
            return bt_error(TRITONSERVER_ERROR_UNSUPPORTED, "braid: model '%s': %s '%s': braid's backend does not apply 'reshape'",
                            m->name, what, io->name);
        const bj *dims = bj_get(e, "dims");
        if (io->rank >= 0 && bj_len(dims) + batched != io->rank)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "braid: model '%s': %s '%s' has %d dims in config.pbtxt%s but rank %d in the model",
                            m->name, what, io->name, bj_len(dims), batched ? " (plus the batch dim)" : "", io->rank);
        for (int d = 0; io->rank >= 0 && d < bj_len(dims); d++) {
            int64_t c = 0, md = io->dims[d + batched];
            if (!bj_int(bj_at(dims, d), &c))
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': %s '%s': dim %d is not an integer",
                                m->name, what, io->name, d);
            if (c != -1 && md != -1 && c != md)
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                                "braid: model '%s': %s '%s': config.pbtxt dim %d is %lld but the model's is %lld",
                                m->name, what, io->name, d, (long long)c, (long long)md);
        }
        if (batched && io->rank >= 0 && (io->rank < 1 || io->dims[0] != -1))
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "braid: model '%s': max_batch_size is %d but %s '%s' has no dynamic first dim "
                            "(it is %lld in the model): set max_batch_size: 0, or export the model with a dynamic batch dim",
                            m->name, m->max_batch, what, io->name, io->rank < 1 ? 0LL : (long long)io->dims[0]);
    }
    for (int i = 0; !out && i < n; i++)
        if (!ios[i].in_config)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': model input '%s' is missing from config.pbtxt",
                            m->name, ios[i].name);
    return NULL;
}

static int parse_bool(const char *s, int *out)
{
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

/* parameters { key: "streams" value: { string_value: "4" } } and the like. */
static TRITONSERVER_Error *parse_parameters(bt_model *m, const bj *params)
{
    m->opt = (bt_options){-1, -1, -1, -1, -1, -1, -1, -1};
    for (int i = 0; i < bj_len(params); i++) {
        const char *key = params->k[i];
        const char *val = bj_str(bj_get(bj_at(params, i), "string_value"));
        if (!val) val = "";
        if (strcmp(key, "backend") == 0) { /* cuda on a KIND_CPU instance: e.g. braid's emulated device */
            m->opt.backend = !strcmp(val, "cpu") ? BRAID_BACKEND_CPU : !strcmp(val, "cuda") ? BRAID_BACKEND_CUDA
                             : !strcmp(val, "auto") ? BRAID_BACKEND_AUTO : -2;
            if (m->opt.backend == -2)
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': parameter 'backend' is '%s': "
                                "expected cpu, cuda or auto", m->name, val);
            continue;
        }
        char *end = NULL;
        long long x = strtoll(val, &end, 10);
        int is_int = *val && !*end && x >= 0 && x <= 65536, flag = 0;
        int *slot = NULL;
        if (strcmp(key, "streams") == 0) slot = &m->opt.streams;
        else if (strcmp(key, "threads") == 0) slot = &m->opt.threads;
        if (slot || strcmp(key, "cuda_workspace_mb") == 0) {
            if (!is_int)
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                                "braid: model '%s': parameter '%s' is '%s': expected a whole number from 0 to 65536",
                                m->name, key, val);
            if (slot) *slot = (int)x;
            else m->opt.cuda_workspace_mb = x;
            continue;
        }
        if (strcmp(key, "cuda_graph") == 0) slot = &m->opt.cuda_graph;
        else if (strcmp(key, "tf32") == 0) slot = &m->opt.tf32;
        else if (strcmp(key, "fold") == 0) slot = &m->opt.fold;
        else if (strcmp(key, "layout") == 0) slot = &m->opt.layout;
        if (!slot)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "braid: model '%s': unknown parameter '%s' (braid's are backend, streams, threads, "
                            "cuda_graph, tf32, fold, layout, cuda_workspace_mb)",
                            m->name, key);
        if (!parse_bool(val, &flag))
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': parameter '%s' is '%s': expected true or false",
                            m->name, key, val);
        *slot = flag;
    }
    return NULL;
}

/* Reads the model's inputs and outputs as braid sees them. */
static TRITONSERVER_Error *model_ios(bt_model *m)
{
    m->n_in = braid_model_input_count(m->model);
    m->n_out = braid_model_output_count(m->model);
    m->in = bd_calloc((size_t)m->n_in + 1, sizeof *m->in);
    m->out = bd_calloc((size_t)m->n_out + 1, sizeof *m->out);
    if (!m->in || !m->out) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
    for (int i = 0; i < m->n_in + m->n_out; i++) {
        bt_io *io = i < m->n_in ? &m->in[i] : &m->out[i - m->n_in];
        braid_value_info vi;
        braid_status st = i < m->n_in ? braid_model_input_info(m->model, i, &vi)
                                      : braid_model_output_info(m->model, i - m->n_in, &vi);
        if (st) return bt_error(bt_code(st), "braid: model '%s': %s", m->name, braid_last_error());
        if (!(io->name = bd_strdup(vi.name))) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
        io->dtype = vi.dtype;
        io->tdtype = bt_to_triton(vi.dtype);
        io->rank = vi.rank;
        for (int d = 0; d < vi.rank && d < BRAID_MAX_RANK; d++) io->dims[d] = vi.dims[d] < 0 ? -1 : vi.dims[d];
        if (io->tdtype == TRITONSERVER_TYPE_INVALID)
            return bt_error(TRITONSERVER_ERROR_UNSUPPORTED, "braid: model '%s': %s '%s' is %s, which braid's backend does not serve",
                            m->name, i < m->n_in ? "input" : "output", io->name, braid_dtype_name(io->dtype));
    }
    return NULL;
}

static TRITONSERVER_Error *model_config(TRITONBACKEND_Model *model, bj **cfg)
{
    TRITONSERVER_Message *msg = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelConfig(model, 1, &msg);
    if (e) return e;
    e = message_tree(msg, "model configuration", cfg);
    TRITONSERVER_MessageDelete(msg);
    return e;
}

static TRITONSERVER_Error *set_config(TRITONBACKEND_Model *model, const bj *cfg)
{
    size_t n = 0;
    char *text = bj_write(cfg, &n);
    if (!text) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
    TRITONSERVER_Message *msg = NULL;
    TRITONSERVER_Error *e = TRITONSERVER_MessageNewFromSerializedJson(&msg, text, n);
    if (!e) e = TRITONBACKEND_ModelSetConfig(model, 1, msg);
    if (msg) TRITONSERVER_MessageDelete(msg);
    bd_free(text);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model *model)
{
    const char *name = NULL, *location = NULL;
    TRITONBACKEND_ArtifactType kind;
    bj *cfg = NULL;
    TRITONSERVER_Error *e = NULL;
    bt_model *m = bd_calloc(1, sizeof *m);
    if (!m) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
    if ((e = TRITONBACKEND_ModelName(model, &name)) || (e = TRITONBACKEND_ModelVersion(model, &m->version)) ||
        (e = TRITONBACKEND_ModelRepository(model, &kind, &location)) || (e = model_config(model, &cfg)))
        goto fail;
    if (!(m->name = bd_strdup(name))) {
        e = bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
        goto fail;
    }
    const char *file = bj_str(bj_get(cfg, "default_model_filename"));
    char path[4096];
    snprintf(path, sizeof path, "%s/%llu/%s", location, (unsigned long long)m->version, file && *file ? file : "model.onnx");
    braid_status st = braid_model_load_file(path, &m->model);
    if (st) {
        e = bt_error(bt_code(st), "braid: model '%s': %s", m->name, braid_last_error());
        goto fail;
    }
    bt_count_models(1);
    if ((e = model_ios(m))) goto fail;

    bool complete = false;
    if ((e = TRITONBACKEND_ModelAutoCompleteConfig(model, &complete))) goto fail;
    int changed = 0;
    if (complete && (e = autocomplete(m, cfg, &changed))) goto fail;
    if (changed) {
        if ((e = set_config(model, cfg))) goto fail;
        bj_free(cfg);
        cfg = NULL;
        if ((e = model_config(model, &cfg))) goto fail;
    }

    int64_t mbs = 0;
    bj_int(bj_get(cfg, "max_batch_size"), &mbs);
    m->max_batch = (int)mbs;
    if ((e = check_io(m, bj_get(cfg, "input"), 0)) || (e = check_io(m, bj_get(cfg, "output"), 1)) ||
        (e = parse_parameters(m, bj_get(cfg, "parameters"))))
        goto fail;
    if ((e = TRITONBACKEND_ModelSetState(model, m))) goto fail;
    bj_free(cfg);
    BT_LOG(TRITONSERVER_LOG_INFO, "braid: model '%s' version %llu loaded from %s: %d inputs, %d outputs, max_batch_size %d%s",
           m->name, (unsigned long long)m->version, path, m->n_in, m->n_out, m->max_batch,
           changed ? " (configuration completed from the model)" : "");
    return NULL;
fail:
    bj_free(cfg);
    free_model(m);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model *model)
{
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelState(model, &state);
    if (e) return e;
    bt_model *m = state;
    if (m) BT_LOG(TRITONSERVER_LOG_INFO, "braid: model '%s' version %llu unloaded", m->name, (unsigned long long)m->version);
    free_model(m);
    BT_LOG(TRITONSERVER_LOG_INFO, "braid: sessions alive: %ld, models alive: %ld", bt_live_sessions(), bt_live_models());
    return NULL;
}
