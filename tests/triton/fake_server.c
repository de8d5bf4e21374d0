/* fake_server.c: drives libtriton_braid.so without tritonserver. It defines
 * the TRITONSERVER_* and TRITONBACKEND_* functions the backend calls (as
 * tritonserver would, exported from this program so that dlopen resolves
 * them here), loads the library with dlopen, and walks it through a model's
 * life: backend and model initialization with the configuration completed
 * from models/gen/two_conv_add, an instance, Execute calls with batches of
 * requests (good ones, inputs in several buffers, a wrong
 * type, a missing input, shapes braid refuses), then unload. Outputs are
 * checked against braid run directly on each request alone; statistics,
 * responses and releases are counted. Run under valgrind (ctest
 * valgrind/triton_fake) it shows the backend frees everything it made.
 *
 * Usage: fake_server LIBTRITON_BRAID TWO_CONV_ADD_ONNX TMPDIR
 * (TMPDIR receives the repository entry: tca/1/model.onnx, a link) */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "braid.h"
#include "triton/triton_api.h"

#define EXPORT __attribute__((visibility("default")))

static int failures;
#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (cond) {                                                                                            \
            printf("ok   ");                                                                                   \
        } else {                                                                                               \
            printf("FAIL ");                                                                                   \
            failures++;                                                                                        \
        }                                                                                                      \
        printf(__VA_ARGS__);                                                                                   \
        printf("\n");                                                                                          \
    } while (0)

/* ---- the server's objects ----------------------------------------------------- */
struct TRITONSERVER_Error {
    TRITONSERVER_Error_Code code;
    char *msg;
};
struct TRITONSERVER_Message {
    char *json;
};
struct TRITONBACKEND_Backend {
    struct TRITONSERVER_Message cfg;
};
struct TRITONBACKEND_Model {
    const char *name, *repo;
    char *config; /* JSON */
    void *state;
    int set_config_calls;
};
struct TRITONBACKEND_ModelInstance {
    const char *name;
    TRITONBACKEND_Model *model;
    void *state;
    int ok_stats, fail_stats, batches;
    uint64_t batch_rows;
};
struct TRITONBACKEND_Input {
    const char *name;
    TRITONSERVER_DataType dtype;
    int64_t shape[8];
    uint32_t rank, nbuf;
    const void *buf[4];
    uint64_t size[4];
};
struct TRITONBACKEND_Output {
    char name[64];
    TRITONSERVER_DataType dtype;
    int64_t shape[8];
    uint32_t rank;
    void *buf;
    uint64_t size;
};
struct TRITONBACKEND_Response {
    struct TRITONBACKEND_Request *req;
    struct TRITONBACKEND_Output out[4];
    int n_out;
};
struct TRITONBACKEND_Request {
    struct TRITONBACKEND_Input in[2];
    int n_in;
    const char *outs[2];
    int n_outs;
    int released, responses;
    int failed;
    char err[1024];
    struct TRITONBACKEND_Output out; /* the one output kept from its response */
};

static int live_errors, live_messages;
static TRITONSERVER_InstanceGroupKind instance_kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;

EXPORT TRITONSERVER_Error *TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char *msg)
{
    TRITONSERVER_Error *e = calloc(1, sizeof *e);
    e->code = code;
    e->msg = strdup(msg);
    live_errors++;
    return e;
}
EXPORT void TRITONSERVER_ErrorDelete(TRITONSERVER_Error *e)
{
    if (!e) return;
    free(e->msg);
    free(e);
    live_errors--;
}
EXPORT const char *TRITONSERVER_ErrorMessage(TRITONSERVER_Error *e) { return e->msg; }
EXPORT bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) { return true; }
EXPORT TRITONSERVER_Error *TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char *file, const int line,
                                                   const char *msg)
{
    printf("log  %s:%d %s\n", file, line, msg);
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message **m, const char *base,
                                                                     size_t n)
{
    *m = calloc(1, sizeof **m);
    (*m)->json = strndup(base, n);
    live_messages++;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONSERVER_MessageDelete(TRITONSERVER_Message *m)
{
    free(m->json);
    free(m);
    live_messages--;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message *m, const char **base, size_t *n)
{
    *base = m->json;
    *n = strlen(m->json);
    return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ApiVersion(uint32_t *major, uint32_t *minor)
{
    *major = 1;
    *minor = 19;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend *b, TRITONSERVER_Message **msg)
{
    *msg = &b->cfg;
    return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelName(TRITONBACKEND_Model *m, const char **name)
{
    *name = m->name;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelVersion(TRITONBACKEND_Model *m, uint64_t *v)
{
    *v = 1;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelRepository(TRITONBACKEND_Model *m, TRITONBACKEND_ArtifactType *t,
                                                         const char **loc)
{
    *t = TRITONBACKEND_ARTIFACT_FILESYSTEM;
    *loc = m->repo;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelConfig(TRITONBACKEND_Model *m, const uint32_t v, TRITONSERVER_Message **msg)
{
    return TRITONSERVER_MessageNewFromSerializedJson(msg, m->config, strlen(m->config));
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model *m, bool *ac)
{
    *ac = true;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model *m, const uint32_t v, TRITONSERVER_Message *msg)
{
    free(m->config);
    m->config = strdup(msg->json);
    m->set_config_calls++;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelState(TRITONBACKEND_Model *m, void **s)
{
    *s = m->state;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelSetState(TRITONBACKEND_Model *m, void *s)
{
    m->state = s;
    return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance *i, const char **name)
{
    *name = i->name;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance *i,
                                                           TRITONSERVER_InstanceGroupKind *k)
{
    *k = instance_kind;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance *i, int32_t *d)
{
    *d = instance_kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? 1 : 0;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance *i, TRITONBACKEND_Model **m)
{
    *m = i->model;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance *i, void **s)
{
    *s = i->state;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance *i, void *s)
{
    i->state = s;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance *i,
                                                                       TRITONBACKEND_Request *r, const bool ok,
                                                                       const uint64_t a, const uint64_t b,
                                                                       const uint64_t c, const uint64_t d)
{
    if (ok && !(a <= b && b <= c && c <= d)) printf("FAIL timestamps out of order\n"), failures++;
    if (ok) i->ok_stats++;
    else i->fail_stats++;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ModelInstanceReportBatchStatistics(TRITONBACKEND_ModelInstance *i,
                                                                            const uint64_t rows, const uint64_t a,
                                                                            const uint64_t b, const uint64_t c,
                                                                            const uint64_t d)
{
    i->batches++;
    i->batch_rows += rows;
    return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_RequestInput(TRITONBACKEND_Request *r, const char *name,
                                                      TRITONBACKEND_Input **in)
{
    for (int k = 0; k < r->n_in; k++)
        if (strcmp(r->in[k].name, name) == 0) return *in = &r->in[k], NULL;
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "no such input");
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request *r, uint32_t *n)
{
    *n = (uint32_t)r->n_outs;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request *r, const uint32_t k, const char **name)
{
    *name = r->outs[k];
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_RequestRelease(TRITONBACKEND_Request *r, uint32_t flags)
{
    r->released++;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_InputProperties(TRITONBACKEND_Input *in, const char **name,
                                                         TRITONSERVER_DataType *dt, const int64_t **shape,
                                                         uint32_t *rank, uint64_t *bytes, uint32_t *nbuf)
{
    if (name) *name = in->name;
    *dt = in->dtype;
    *shape = in->shape;
    *rank = in->rank;
    *bytes = 0;
    for (uint32_t b = 0; b < in->nbuf; b++) *bytes += in->size[b];
    *nbuf = in->nbuf;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_InputBuffer(TRITONBACKEND_Input *in, const uint32_t k, const void **buf,
                                                     uint64_t *size, TRITONSERVER_MemoryType *mt, int64_t *id)
{
    *buf = in->buf[k];
    *size = in->size[k];
    *mt = TRITONSERVER_MEMORY_CPU;
    *id = 0;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ResponseNew(TRITONBACKEND_Response **resp, TRITONBACKEND_Request *r)
{
    *resp = calloc(1, sizeof **resp);
    (*resp)->req = r;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response *resp, TRITONBACKEND_Output **out,
                                                        const char *name, const TRITONSERVER_DataType dt,
                                                        const int64_t *shape, const uint32_t rank)
{
    TRITONBACKEND_Output *o = &resp->out[resp->n_out++];
    snprintf(o->name, sizeof o->name, "%s", name);
    o->dtype = dt;
    o->rank = rank;
    memcpy(o->shape, shape, rank * sizeof *shape);
    *out = o;
    return NULL;
}
EXPORT TRITONSERVER_Error *TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output *o, void **buf, const uint64_t size,
                                                      TRITONSERVER_MemoryType *mt, int64_t *id)
{
    o->buf = malloc(size ? size : 1);
    o->size = size;
    *buf = o->buf;
    *mt = TRITONSERVER_MEMORY_CPU;
    *id = 0;
    return NULL;
}

EXPORT TRITONSERVER_Error *TRITONBACKEND_ResponseSend(TRITONBACKEND_Response *resp, const uint32_t flags,
                                                      TRITONSERVER_Error *err)
{
    TRITONBACKEND_Request *r = resp->req;
    r->responses++;
    if (err) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", err->msg);
    } else if (resp->n_out > 0) {
        free(r->out.buf);
        r->out = resp->out[0];
        resp->out[0].buf = NULL;
    }
    for (int k = 0; k < resp->n_out; k++) free(resp->out[k].buf);
    free(resp);
    return NULL;
}

/* ---- the driver ------------------------------------------------------------------- */

typedef TRITONSERVER_Error *(*fn_backend)(TRITONBACKEND_Backend *);
typedef TRITONSERVER_Error *(*fn_model)(TRITONBACKEND_Model *);
typedef TRITONSERVER_Error *(*fn_instance)(TRITONBACKEND_ModelInstance *);
typedef TRITONSERVER_Error *(*fn_execute)(TRITONBACKEND_ModelInstance *, TRITONBACKEND_Request **, const uint32_t);

static struct {
    fn_backend init, fini;
    fn_model model_init, model_fini;
    fn_instance inst_init, inst_fini;
    fn_execute execute;
} be;

static int ok_or_report(TRITONSERVER_Error *e, const char *what)
{
    if (!e) return 1;
    printf("FAIL %s: %s\n", what, e->msg);
    failures++;
    TRITONSERVER_ErrorDelete(e);
    return 0;
}

/* A request of `rows` rows of (c, h, w) floats; split in two buffers when split. */
static void make_request(TRITONBACKEND_Request *r, float *data, int64_t rows, int64_t c, int64_t h, int64_t w,
                         int split)
{
    memset(r, 0, sizeof *r);
    r->n_in = 1;
    TRITONBACKEND_Input *in = &r->in[0];
    in->name = "x";
    in->dtype = TRITONSERVER_TYPE_FP32;
    in->rank = 4;
    in->shape[0] = rows, in->shape[1] = c, in->shape[2] = h, in->shape[3] = w;
    uint64_t bytes = (uint64_t)(rows * c * h * w) * sizeof(float);
    in->nbuf = split ? 2 : 1;
    in->buf[0] = data;
    in->size[0] = split ? bytes / 3 : bytes;
    in->buf[1] = (char *)data + in->size[0];
    in->size[1] = bytes - in->size[0];
    r->n_outs = 1;
    r->outs[0] = "y";
}

/* braid on the request alone: the reference. */
static double max_diff_vs_braid(braid_session *s, const TRITONBACKEND_Request *r, const float *data)
{
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .data = (void *)data}, out = {0};
    for (int d = 0; d < 4; d++) in.dims[d] = r->in[0].shape[d];
    if (braid_session_run(s, 1, &in, 1, &out) != BRAID_OK) return INFINITY;
    size_t n = 1;
    for (int d = 0; d < out.rank; d++) n *= (size_t)out.dims[d];
    if (r->out.size != n * sizeof(float) || (int)r->out.rank != out.rank) return INFINITY;
    for (int d = 0; d < out.rank; d++)
        if (r->out.shape[d] != out.dims[d]) return INFINITY;
    double m = 0;
    for (size_t k = 0; k < n; k++) m = fmax(m, fabs((double)((float *)r->out.buf)[k] - ((float *)out.data)[k]));
    return m;
}

static float *random_data(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    for (size_t k = 0; k < n; k++) {
        seed = seed * 1664525u + 1013904223u;
        p[k] = (float)((seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    }
    return p;
}

/* One model's life: initialize with `config`, one instance, the requests, unload. */
static void model_life(const char *repo, const char *name, const char *config, braid_session *ref, int any_dims)
{
    TRITONBACKEND_Model model = {.name = name, .repo = repo, .config = strdup(config)};
    TRITONBACKEND_ModelInstance inst = {.name = "inst_0", .model = &model};
    if (!ok_or_report(be.model_init(&model), "ModelInitialize")) {
        free(model.config);
        return;
    }
    if (!any_dims) {
        CHECK(model.set_config_calls == 1 && strstr(model.config, "\"max_batch_size\":8") &&
                  strstr(model.config, "\"dynamic_batching\":{}") &&
                  strstr(model.config, "\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[16,32,32]}]") &&
                  strstr(model.config, "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[32,32,32]}]"),
              "%s: the completed configuration: %s", name, model.config);
    }
    if (ok_or_report(be.inst_init(&inst), "ModelInstanceInitialize")) {
        /* requests: 1 row; 2 rows in two buffers; FP64 (refused); 1 row; no input;
         * with any dims also 16x16 images and 8 channels (Triton lets them through,
         * braid refuses them) */
        enum { N = 7 };
        TRITONBACKEND_Request req[N], *reqs[N];
        float *data[N] = {0};
        int64_t rows[N] = {1, 2, 1, 1, 1, 1, 1}, chans[N] = {16, 16, 16, 16, 16, 16, 8}, hw[N] = {32, 32, 32, 32, 32, 16, 32};
        int n = any_dims ? N : 5;
        for (int k = 0; k < n; k++) {
            data[k] = random_data((size_t)(rows[k] * chans[k] * hw[k] * hw[k]), 17u + (unsigned)k);
            make_request(&req[k], data[k], rows[k], chans[k], hw[k], hw[k], k == 1);
            reqs[k] = &req[k];
        }
        req[2].in[0].dtype = TRITONSERVER_TYPE_FP64;
        req[4].n_in = 0;
        if (ok_or_report(be.execute(&inst, reqs, (uint32_t)n), "ModelInstanceExecute")) {
            for (int k = 0; k < n; k++)
                CHECK(req[k].released == 1 && req[k].responses == 1, "%s request %d: one response, released once", name, k);
            for (int k = 0; k < n; k++) {
                if (k == 2 || k == 4 || k >= 5) continue;
                double d = req[k].failed ? INFINITY : max_diff_vs_braid(ref, &req[k], data[k]);
                CHECK(d < 1e-4, "%s request %d (%lld rows, %lldx%lld): outputs as braid alone gives them (max diff %g)%s%s",
                      name, k, (long long)rows[k], (long long)hw[k], (long long)hw[k], d, req[k].failed ? ": " : "",
                      req[k].err);
            }
            CHECK(req[2].failed && strstr(req[2].err, "input 'x' is FP64; the model takes FP32"),
                  "%s: FP64 refused: %s", name, req[2].err);
            CHECK(req[4].failed && strstr(req[4].err, "the request has no input 'x'"), "%s: no input refused: %s", name,
                  req[4].err);
            if (any_dims) {
                CHECK(req[5].failed && strstr(req[5].err, "1x16x16x16 but the model declares Nx16x32x32"),
                      "%s: 16x16 images refused with braid's message: %s", name, req[5].err);
                CHECK(req[6].failed && strstr(req[6].err, "1x8x32x32"), "%s: 8 channels refused with braid's message: %s",
                      name, req[6].err);
            }
            /* 1 + 2 + 1 rows of 32x32 in one run (the 16x16 and 8-channel requests are
             * groups of their own, whose runs fail) */
            CHECK(inst.batches == 1 && inst.batch_rows == 4, "%s: %d braid runs over %llu rows", name, inst.batches,
                  (unsigned long long)inst.batch_rows);
            CHECK(inst.ok_stats == 3 && inst.fail_stats == (any_dims ? 4 : 2),
                  "%s: statistics: %d succeeded, %d failed", name, inst.ok_stats, inst.fail_stats);
        }
        for (int k = 0; k < n; k++) {
            free(data[k]);
            free(req[k].out.buf);
        }
        ok_or_report(be.inst_fini(&inst), "ModelInstanceFinalize");
    }
    ok_or_report(be.model_fini(&model), "ModelFinalize");
    free(model.config);
}

static const char *refused(const char *repo, const char *config)
{
    static char msg[1024];
    TRITONBACKEND_Model model = {.name = "tca", .repo = repo, .config = strdup(config)};
    TRITONSERVER_Error *e = be.model_init(&model);
    snprintf(msg, sizeof msg, "%s", e ? e->msg : "(loaded)");
    if (e) TRITONSERVER_ErrorDelete(e);
    else be.model_fini(&model);
    free(model.config);
    return msg;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fake_server LIBTRITON_BRAID TWO_CONV_ADD_ONNX TMPDIR\n");
        return 2;
    }
    const char *lib = argv[1], *onnx = argv[2], *tmp = argv[3];
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("FAIL dlopen: %s\n", dlerror());
        return 1;
    }
    be.init = (fn_backend)dlsym(h, "TRITONBACKEND_Initialize");
    be.fini = (fn_backend)dlsym(h, "TRITONBACKEND_Finalize");
    be.model_init = (fn_model)dlsym(h, "TRITONBACKEND_ModelInitialize");
    be.model_fini = (fn_model)dlsym(h, "TRITONBACKEND_ModelFinalize");
    be.inst_init = (fn_instance)dlsym(h, "TRITONBACKEND_ModelInstanceInitialize");
    be.inst_fini = (fn_instance)dlsym(h, "TRITONBACKEND_ModelInstanceFinalize");
    be.execute = (fn_execute)dlsym(h, "TRITONBACKEND_ModelInstanceExecute");
    CHECK(be.init && be.fini && be.model_init && be.model_fini && be.inst_init && be.inst_fini && be.execute,
          "the library exports the seven entry points");
    CHECK(dlsym(h, "braid_session_run") == NULL && dlsym(h, "bd_malloc") == NULL, "and nothing of braid's own");
    if (failures) return 1;

    char repo[4096], path[4200];
    snprintf(repo, sizeof repo, "%s/tca", tmp);
    snprintf(path, sizeof path, "%s/1", repo);
    mkdir(tmp, 0755);
    mkdir(repo, 0755);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/1/model.onnx", repo);
    unlink(path);
    if (symlink(onnx, path) != 0) {
        printf("FAIL cannot link %s to %s\n", path, onnx);
        return 1;
    }
    braid_model *m = NULL;
    braid_options *o = NULL;
    braid_session *ref = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    if (braid_model_load_file(onnx, &m) != BRAID_OK || braid_session_create(m, o, &ref) != BRAID_OK) {
        printf("FAIL the reference session: %s\n", braid_last_error());
        return 1;
    }
    braid_options_destroy(o);

    TRITONBACKEND_Backend backend = {.cfg.json = "{\"cmdline\":{\"default-max-batch-size\":\"8\"}}"};
    if (ok_or_report(be.init(&backend), "TRITONBACKEND_Initialize")) {
        const char *base = "{\"name\":\"tca\",\"backend\":\"braid\",\"max_batch_size\":0,\"input\":[],\"output\":[],"
                           "\"parameters\":{\"streams\":{\"string_value\":\"2\"},\"fold\":{\"string_value\":\"off\"}}}";
        model_life(repo, "tca", base, ref, 0);
        model_life(repo, "tca_any",
                   "{\"name\":\"tca_any\",\"backend\":\"braid\",\"max_batch_size\":8,"
                   "\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\",\"dims\":[\"-1\",\"-1\",\"-1\"]}],"
                   "\"output\":[{\"name\":\"y\",\"data_type\":\"TYPE_FP32\",\"dims\":[-1,-1,-1]}]}",
                   ref, 1);
        const char *msg = refused(repo, "{\"backend\":\"braid\",\"parameters\":{\"streams\":{\"string_value\":\"x\"}}}");
        CHECK(strstr(msg, "parameter 'streams' is 'x'") != NULL, "a bad parameter value is refused: %s", msg);
        msg = refused(repo, "{\"backend\":\"braid\",\"max_batch_size\":8,\"input\":[{\"name\":\"z\","
                            "\"data_type\":\"TYPE_FP32\",\"dims\":[16,32,32]}]}");
        CHECK(strstr(msg, "config.pbtxt input 'z' is not an input of the model ('x')") != NULL, "an unknown input is refused: %s", msg);
        msg = refused(repo, "{\"backend\":\"braid\",\"max_batch_size\":8,\"input\":[{\"name\":\"x\","
                            "\"data_type\":\"TYPE_FP32\",\"dims\":[16,32,31]}]}");
        CHECK(strstr(msg, "dim 2 is 31 but the model's is 32") != NULL, "a dim that differs is refused: %s", msg);
        msg = refused(repo, "{\"backend\":\"braid\",\"input\":[{\"name\":\"x\",\"data_type\":\"TYPE_FP32\","
                            "\"dims\":[16,32,32],\"reshape\":{\"shape\":[1]}}]}");
        CHECK(strstr(msg, "'reshape'") != NULL, "reshape is refused: %s", msg);
        msg = refused(repo, "{\"backend\":\"braid\",\"default_model_filename\":\"nothing.onnx\"}");
        CHECK(strstr(msg, "nothing.onnx") != NULL, "a missing model file is refused: %s", msg);
        /* KIND_GPU: braid's CUDA backend on the instance's device; without a GPU
         * (or without CUDA in this build) the instance is refused with braid's reason */
        {
            TRITONBACKEND_Model model = {.name = "tca", .repo = repo, .config = strdup("{\"backend\":\"braid\"}")};
            TRITONBACKEND_ModelInstance inst = {.name = "tca_gpu_0", .model = &model};
            if (ok_or_report(be.model_init(&model), "ModelInitialize")) {
                instance_kind = TRITONSERVER_INSTANCEGROUPKIND_GPU;
                TRITONSERVER_Error *e = be.inst_init(&inst);
                instance_kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
                if (e) {
                    CHECK(strstr(e->msg, "CUDA") != NULL, "a KIND_GPU instance without a GPU is refused: %s", e->msg);
                    TRITONSERVER_ErrorDelete(e);
                } else {
                    printf("note: a KIND_GPU instance was created (a GPU answers)\n");
                    ok_or_report(be.inst_fini(&inst), "ModelInstanceFinalize");
                }
                ok_or_report(be.model_fini(&model), "ModelFinalize");
            }
            free(model.config);
        }
        msg = refused(repo, "{\"backend\":\"braid\",\"input\":[}");
        CHECK(strstr(msg, "not JSON") != NULL, "a configuration that is not JSON is refused: %s", msg);
        ok_or_report(be.fini(&backend), "TRITONBACKEND_Finalize");
    }
    CHECK(live_errors == 0 && live_messages == 0, "every error and message freed (%d errors, %d messages left)",
          live_errors, live_messages);
    braid_session_destroy(ref);
    braid_model_destroy(m);
    dlclose(h);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
