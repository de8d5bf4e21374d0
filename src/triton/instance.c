/* instance.c: braid's Triton backend, model instances. Each instance owns one
 * braid session (KIND_CPU: the CPU backend; KIND_GPU: CUDA on the instance's
 * device). Execute checks every request on its own, groups the good ones by
 * the shape of their inputs past the batch dim, runs each group as one braid
 * run over the requests' rows concatenated, and splits the outputs back into
 * one response per request. When a group's run fails, its requests run one
 * by one, so that each failing request gets braid's own message and the
 * others their outputs. Statistics go to Triton per request and per run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "triton/backend.h"
#include "util/common.h"

typedef struct bt_instance {
    bt_model *m;
    char *name;
    braid_session *s;
    int notes_logged;
    void **stage;      /* per input: the session's host-shared buffer for gathered rows */
    size_t *stage_cap; /* its size in bytes */
} bt_instance;

/* One input of one request. */
typedef struct bt_input {
    TRITONBACKEND_Input *in;
    const int64_t *shape;
    uint32_t rank, nbuf;
    uint64_t bytes;
} bt_input;

/* One request of an Execute call. */
typedef struct bt_req {
    TRITONBACKEND_Request *r;
    TRITONSERVER_Error *err; /* it failed: an error response is (or was) sent */
    bt_input *in;            /* one per model input */
    int *outs;               /* the outputs it asks for: indices into m->out */
    int n_outs;
    int64_t rows;            /* its share of the batch dim (1 without one) */
    int grouped, responded;
} bt_req;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* std::chrono::steady_clock on Linux */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- instances -------------------------------------------------------------- */

static TRITONSERVER_Error *set_options(const bt_model *m, braid_options *o, TRITONSERVER_InstanceGroupKind kind,
                                       int32_t device)
{
    const bt_options *p = &m->opt;
    /* The instance's kind, unless the model's "backend" parameter says (CUDA
     * on a KIND_CPU instance: tritonserver refuses KIND_GPU without a GPU,
     * and braid's emulated device, BRAID_CUDA_EMULATOR=1, has none). */
    braid_backend b = p->backend >= 0                                  ? (braid_backend)p->backend
                      : kind == TRITONSERVER_INSTANCEGROUPKIND_CPU   ? BRAID_BACKEND_CPU
                      : kind == TRITONSERVER_INSTANCEGROUPKIND_GPU ? BRAID_BACKEND_CUDA
                                                                   : BRAID_BACKEND_AUTO;
    braid_status st = braid_options_set_backend(o, b);
    if (!st && kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) st = braid_options_set_device(o, device);
    if (!st && p->streams >= 0) st = braid_options_set_max_streams(o, p->streams);
    if (!st && p->threads >= 0) st = braid_options_set_threads(o, p->threads);
    if (!st && p->cuda_graph >= 0) st = braid_options_set_cuda_graph(o, p->cuda_graph);
    if (!st && p->tf32 >= 0) st = braid_options_set_tf32(o, p->tf32);
    if (!st && p->fold >= 0) st = braid_options_set_fold(o, p->fold);
    if (!st && p->layout >= 0) st = braid_options_set_layout(o, p->layout);
    if (!st && p->cuda_workspace_mb >= 0) st = braid_options_set_cuda_workspace(o, p->cuda_workspace_mb);
    if (st) return bt_error(bt_code(st), "braid: model '%s': %s", m->name, braid_last_error());
    return NULL;
}

static void free_instance(bt_instance *x)
{
    if (!x) return;
    if (x->s) bt_count_sessions(-1);
    braid_session_destroy(x->s); /* frees the stage buffers too */
    bd_free(x->stage);
    bd_free(x->stage_cap);
    bd_free(x->name);
    bd_free(x);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance *instance)
{
    const char *name = NULL;
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_AUTO;
    int32_t device = 0;
    TRITONBACKEND_Model *model = NULL;
    void *state = NULL;
    braid_options *o = NULL;
    TRITONSERVER_Error *e = NULL;
    if ((e = TRITONBACKEND_ModelInstanceName(instance, &name)) || (e = TRITONBACKEND_ModelInstanceKind(instance, &kind)) ||
        (e = TRITONBACKEND_ModelInstanceDeviceId(instance, &device)) ||
        (e = TRITONBACKEND_ModelInstanceModel(instance, &model)) || (e = TRITONBACKEND_ModelState(model, &state)))
        return e;
    bt_instance *x = bd_calloc(1, sizeof *x);
    if (!x) return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
    x->m = state;
    x->name = bd_strdup(name);
    x->stage = bd_calloc((size_t)x->m->n_in + 1, sizeof *x->stage);
    x->stage_cap = bd_calloc((size_t)x->m->n_in + 1, sizeof *x->stage_cap);
    if (!x->name || !x->stage || !x->stage_cap) {
        e = bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
        goto fail;
    }
    braid_status st = braid_options_create(&o);
    if (st) {
        e = bt_error(bt_code(st), "braid: %s", braid_last_error());
        goto fail;
    }
    if ((e = set_options(x->m, o, kind, device))) goto fail;
    if ((st = braid_session_create(x->m->model, o, &x->s))) {
        e = bt_error(bt_code(st), "braid: instance '%s': %s", name, braid_last_error());
        goto fail;
    }
    bt_count_sessions(1);
    if ((e = TRITONBACKEND_ModelInstanceSetState(instance, x))) goto fail;
    braid_options_destroy(o);
    const char *note = braid_session_backend_note(x->s), *dev = braid_session_device_info(x->s);
    BT_LOG(TRITONSERVER_LOG_INFO, "braid: instance '%s' runs on %s%s%s%s%s (sessions alive: %ld)", name,
           braid_session_backend(x->s) == BRAID_BACKEND_CUDA ? "CUDA" : "the CPU", *dev ? ": " : "", dev,
           *note ? "; " : "", note, bt_live_sessions());
    return NULL;
fail:
    braid_options_destroy(o);
    free_instance(x);
    return e;
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance *instance)
{
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) return e;
    bt_instance *x = state;
    char name[256];
    snprintf(name, sizeof name, "%s", x && x->name ? x->name : "");
    free_instance(x);
    BT_LOG(TRITONSERVER_LOG_INFO, "braid: instance '%s' released its session (sessions alive: %ld)", name,
           bt_live_sessions());
    return NULL;
}

/* ---- requests --------------------------------------------------------------- */

static int find_output(const bt_model *m, const char *name)
{
    for (int i = 0; name && i < m->n_out; i++)
        if (strcmp(m->out[i].name, name) == 0) return i;
    return -1;
}

/* Reads and checks one request's inputs and requested outputs. */
static TRITONSERVER_Error *read_request(const bt_model *m, bt_req *q)
{
    TRITONSERVER_Error *e = NULL;
    q->rows = 1;
    for (int i = 0; i < m->n_in; i++) {
        const bt_io *io = &m->in[i];
        bt_input *in = &q->in[i];
        TRITONSERVER_DataType dt = TRITONSERVER_TYPE_INVALID;
        if ((e = TRITONBACKEND_RequestInput(q->r, io->name, &in->in))) {
            TRITONSERVER_ErrorDelete(e);
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': the request has no input '%s'", m->name,
                            io->name);
        }
        if ((e = TRITONBACKEND_InputProperties(in->in, NULL, &dt, &in->shape, &in->rank, &in->bytes, &in->nbuf)))
            return e;
        if (dt != io->tdtype)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': input '%s' is %s; the model takes %s",
                            m->name, io->name, bt_triton_dtype_name(dt), bt_triton_dtype_name(io->tdtype));
        if (in->rank > BRAID_MAX_RANK || (io->rank >= 0 && (int)in->rank != io->rank) || (m->max_batch > 0 && in->rank < 1))
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': input '%s' has %u dims; the model takes %d",
                            m->name, io->name, in->rank, io->rank);
        uint64_t count = 1;
        for (uint32_t d = 0; d < in->rank; d++) {
            if (in->shape[d] < 0 || (in->shape[d] > 0 && count > UINT64_MAX / (uint64_t)in->shape[d]))
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': input '%s' has a bad dim %u", m->name,
                                io->name, d);
            count *= (uint64_t)in->shape[d];
        }
        size_t es = bt_dtype_size(io->dtype);
        if (count > UINT64_MAX / es || count * es != in->bytes)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                            "braid: model '%s': input '%s' holds %llu bytes; its shape and type need %llu", m->name,
                            io->name, (unsigned long long)in->bytes, (unsigned long long)(count * es));
        if (m->max_batch > 0) {
            if (i > 0 && in->shape[0] != q->rows)
                return bt_error(TRITONSERVER_ERROR_INVALID_ARG,
                                "braid: model '%s': input '%s' has %lld rows but input '%s' has %lld", m->name,
                                io->name, (long long)in->shape[0], m->in[0].name, (long long)q->rows);
            q->rows = in->shape[0];
        }
    }
    uint32_t n = 0;
    if ((e = TRITONBACKEND_RequestOutputCount(q->r, &n))) return e;
    if (n > (uint32_t)m->n_out)
        return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': %u outputs asked for; the model has %d",
                        m->name, n, m->n_out);
    for (uint32_t k = 0; k < n; k++) {
        const char *name = NULL;
        if ((e = TRITONBACKEND_RequestOutputName(q->r, k, &name))) return e;
        int o = find_output(m, name);
        if (o < 0)
            return bt_error(TRITONSERVER_ERROR_INVALID_ARG, "braid: model '%s': the model has no output '%s'", m->name,
                            name ? name : "");
        q->outs[q->n_outs++] = o;
    }
    return NULL;
}

/* Requests whose inputs agree past the batch dim can share a run. */
static int same_shapes(const bt_model *m, const bt_req *a, const bt_req *b)
{
    if (m->max_batch <= 0) return 0;
    for (int i = 0; i < m->n_in; i++) {
        if (a->in[i].rank != b->in[i].rank) return 0;
        for (uint32_t d = 1; d < a->in[i].rank; d++)
            if (a->in[i].shape[d] != b->in[i].shape[d]) return 0;
    }
    return 1;
}

/* Input i of a run over requests q[ids[0..n)]: the request's own buffer
 * when one request brings it in one piece, else its rows gathered into the
 * session's host-shared buffer. */
static TRITONSERVER_Error *gather(bt_instance *x, bt_req *q, const int *ids, int n, int i, int64_t rows,
                                  braid_tensor *t)
{
    const bt_model *m = x->m;
    const bt_input *first = &q[ids[0]].in[i];
    t->dtype = m->in[i].dtype;
    t->rank = (int)first->rank;
    for (uint32_t d = 0; d < first->rank; d++) t->dims[d] = first->shape[d];
    if (m->max_batch > 0) t->dims[0] = rows;
    uint64_t total = 0;
    for (int k = 0; k < n; k++) total += q[ids[k]].in[i].bytes;
    int direct = n == 1 && first->nbuf == 1;
    if (!direct && total > x->stage_cap[i]) {
        x->stage[i] = NULL;
        x->stage_cap[i] = 0;
        braid_status st = braid_session_input_buffer(x->s, i, t, &x->stage[i]);
        if (st) return bt_error(bt_code(st), "braid: %s", braid_session_error(x->s));
        x->stage_cap[i] = total;
    }
    uint64_t off = 0;
    for (int k = 0; k < n; k++) {
        const bt_input *in = &q[ids[k]].in[i];
        for (uint32_t b = 0; b < in->nbuf; b++) {
            const void *p = NULL;
            uint64_t size = 0;
            TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
            int64_t mt_id = 0;
            TRITONSERVER_Error *e = TRITONBACKEND_InputBuffer(in->in, b, &p, &size, &mt, &mt_id);
            if (e) return e;
            if (mt == TRITONSERVER_MEMORY_GPU)
                return bt_error(TRITONSERVER_ERROR_UNSUPPORTED,
                                "braid: model '%s': input '%s' is in GPU memory; braid's backend takes inputs in host memory",
                                m->name, m->in[i].name);
            if (size > total - off)
                return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: input '%s': buffers larger than the input",
                                m->in[i].name);
            if (direct) t->data = (void *)p;
            else if (size) memcpy((char *)x->stage[i] + off, p, size);
            off += size;
        }
    }
    if (off != total)
        return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: input '%s': buffers of %llu bytes for %llu", m->in[i].name,
                        (unsigned long long)off, (unsigned long long)total);
    if (!direct) t->data = x->stage[i];
    return NULL;
}

static uint64_t tensor_bytes(const braid_tensor *t)
{
    uint64_t n = bt_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) n *= (uint64_t)t->dims[d];
    return n;
}

/* Sends request q its rows [row, row + q->rows) of the run's outputs. */
static TRITONSERVER_Error *respond(bt_instance *x, bt_req *q, const braid_tensor *outs, int64_t rows, int64_t row)
{
    const bt_model *m = x->m;
    TRITONBACKEND_Response *resp = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ResponseNew(&resp, q->r);
    if (e) return e;
    for (int k = 0; k < q->n_outs && !e; k++) {
        const bt_io *io = &m->out[q->outs[k]];
        const braid_tensor *t = &outs[q->outs[k]];
        int64_t shape[BRAID_MAX_RANK];
        uint64_t bytes = tensor_bytes(t), off = 0;
        TRITONSERVER_DataType dt = bt_to_triton(t->dtype);
        if (dt == TRITONSERVER_TYPE_INVALID) {
            e = bt_error(TRITONSERVER_ERROR_UNSUPPORTED, "braid: output '%s' is %s, which braid's backend does not serve",
                         io->name, braid_dtype_name(t->dtype));
            break;
        }
        for (int d = 0; d < t->rank; d++) shape[d] = t->dims[d];
        if (m->max_batch > 0) {
            if (t->rank < 1 || t->dims[0] != rows) {
                e = bt_error(TRITONSERVER_ERROR_INTERNAL,
                             "braid: model '%s': output '%s' has %lld rows for a batch of %lld: it cannot be split "
                             "into responses",
                             m->name, io->name, t->rank < 1 ? 0LL : (long long)t->dims[0], (long long)rows);
                break;
            }
            uint64_t row_bytes = rows ? bytes / (uint64_t)rows : 0;
            shape[0] = q->rows;
            off = row_bytes * (uint64_t)row;
            bytes = row_bytes * (uint64_t)q->rows;
        }
        TRITONBACKEND_Output *out = NULL;
        void *buf = NULL;
        TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
        int64_t mt_id = 0;
        if ((e = TRITONBACKEND_ResponseOutput(resp, &out, io->name, dt, shape, (uint32_t)t->rank))) break;
        if ((e = TRITONBACKEND_OutputBuffer(out, &buf, bytes, &mt, &mt_id))) break;
        if (mt == TRITONSERVER_MEMORY_GPU) {
            e = bt_error(TRITONSERVER_ERROR_UNSUPPORTED,
                         "braid: output '%s': the server gave a GPU buffer; braid's backend writes host memory", io->name);
            break;
        }
        if (bytes) memcpy(buf, (const char *)t->data + off, bytes);
    }
    TRITONSERVER_Error *se = TRITONBACKEND_ResponseSend(resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, e);
    q->responded = 1;
    if (se) {
        BT_LOG(TRITONSERVER_LOG_ERROR, "braid: sending a response failed: %s", TRITONSERVER_ErrorMessage(se));
        TRITONSERVER_ErrorDelete(se);
    }
    return e;
}

static void log_notes(bt_instance *x)
{
    int n = braid_session_note_count(x->s);
    for (; x->notes_logged < n; x->notes_logged++)
        BT_LOG(TRITONSERVER_LOG_WARN, "braid: instance '%s': %s", x->name, braid_session_note(x->s, x->notes_logged));
}

/* Runs requests q[ids[0..n)] as one braid run and answers them. */
static void run_group(TRITONBACKEND_ModelInstance *instance, bt_instance *x, bt_req *q, const int *ids, int n,
                      uint64_t exec_start)
{
    const bt_model *m = x->m;
    braid_tensor in[64], *ins = in, *outs = NULL;
    TRITONSERVER_Error *e = NULL;
    int64_t rows = 0;
    for (int k = 0; k < n; k++) rows += q[ids[k]].rows;
    if (m->n_in > 64 && !(ins = bd_calloc((size_t)m->n_in, sizeof *ins))) {
        e = bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
        goto done;
    }
    if (!(outs = bd_calloc((size_t)m->n_out + 1, sizeof *outs))) {
        e = bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory");
        goto done;
    }
    for (int i = 0; i < m->n_in && !e; i++) e = gather(x, q, ids, n, i, rows, &ins[i]);
    if (e) goto done;
    uint64_t compute_start = now_ns();
    braid_status st = braid_session_run(x->s, m->n_in, ins, m->n_out, outs);
    uint64_t compute_end = now_ns();
    log_notes(x);
    if (st) {
        e = bt_error(bt_code(st), "braid: model '%s': %s", m->name, braid_session_error(x->s));
        goto done;
    }
    int64_t row = 0;
    for (int k = 0; k < n; k++) {
        bt_req *r = &q[ids[k]];
        r->err = respond(x, r, outs, rows, row);
        row += r->rows;
        if (!r->err) {
            TRITONSERVER_Error *se = TRITONBACKEND_ModelInstanceReportStatistics(instance, r->r, true, exec_start,
                                                                                 compute_start, compute_end, now_ns());
            if (se) TRITONSERVER_ErrorDelete(se);
        }
    }
    TRITONSERVER_Error *se = TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, (uint64_t)rows, exec_start,
                                                                              compute_start, compute_end, now_ns());
    if (se) TRITONSERVER_ErrorDelete(se);
done:
    if (ins != in) bd_free(ins);
    bd_free(outs);
    if (!e) return;
    if (n == 1) {
        q[ids[0]].err = e;
        return;
    }
    /* One bad request must not fail the others: run each on its own. */
    BT_LOG(TRITONSERVER_LOG_WARN, "braid: instance '%s': a run of %d requests failed (%s); running them one by one",
           x->name, n, TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
    for (int k = 0; k < n; k++) run_group(instance, x, q, &ids[k], 1, exec_start);
}

TRITONSERVER_Error *TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance *instance,
                                                       TRITONBACKEND_Request **requests, const uint32_t request_count)
{
    uint64_t exec_start = now_ns();
    void *state = NULL;
    TRITONSERVER_Error *e = TRITONBACKEND_ModelInstanceState(instance, &state);
    if (e) return e; /* the requests stay Triton's */
    bt_instance *x = state;
    const bt_model *m = x->m;
    size_t nq = request_count;
    bt_req *q = bd_calloc(nq + 1, sizeof *q);
    bt_input *ins = bd_calloc(nq * (size_t)m->n_in + 1, sizeof *ins);
    int *outs = bd_calloc(nq * (size_t)m->n_out + 1, sizeof *outs), *ids = bd_calloc(nq + 1, sizeof *ids);
    if (!q || !ins || !outs || !ids) {
        bd_free(q);
        bd_free(ins);
        bd_free(outs);
        bd_free(ids);
        return bt_error(TRITONSERVER_ERROR_INTERNAL, "braid: out of memory"); /* Triton answers them */
    }
    for (size_t k = 0; k < nq; k++) {
        q[k].r = requests[k];
        q[k].in = &ins[k * (size_t)m->n_in];
        q[k].outs = &outs[k * (size_t)m->n_out];
        q[k].err = read_request(m, &q[k]);
    }
    for (size_t k = 0; k < nq; k++) {
        if (q[k].err || q[k].grouped) continue;
        int n = 0;
        for (size_t j = k; j < nq; j++)
            if (!q[j].err && !q[j].grouped && (j == k || same_shapes(m, &q[k], &q[j]))) {
                q[j].grouped = 1;
                ids[n++] = (int)j;
            }
        run_group(instance, x, q, ids, n, exec_start);
    }
    for (size_t k = 0; k < nq; k++) {
        if (q[k].err) {
            if (!q[k].responded) {
                TRITONBACKEND_Response *resp = NULL;
                TRITONSERVER_Error *se = TRITONBACKEND_ResponseNew(&resp, q[k].r);
                if (!se) se = TRITONBACKEND_ResponseSend(resp, TRITONSERVER_RESPONSE_COMPLETE_FINAL, q[k].err);
                if (se) {
                    BT_LOG(TRITONSERVER_LOG_ERROR, "braid: an error response could not be sent: %s",
                           TRITONSERVER_ErrorMessage(se));
                    TRITONSERVER_ErrorDelete(se);
                }
            }
            TRITONSERVER_Error *se = TRITONBACKEND_ModelInstanceReportStatistics(instance, q[k].r, false, exec_start, 0, 0,
                                                                                 now_ns());
            if (se) TRITONSERVER_ErrorDelete(se);
            TRITONSERVER_ErrorDelete(q[k].err);
        }
        TRITONSERVER_Error *re = TRITONBACKEND_RequestRelease(q[k].r, TRITONSERVER_REQUEST_RELEASE_ALL);
        if (re) {
            BT_LOG(TRITONSERVER_LOG_ERROR, "braid: releasing a request failed: %s", TRITONSERVER_ErrorMessage(re));
            TRITONSERVER_ErrorDelete(re);
        }
    }
    bd_free(q);
    bd_free(ins);
    bd_free(outs);
    bd_free(ids);
    return NULL;
}
