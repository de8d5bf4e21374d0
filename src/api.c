/* api.c: the public functions of braid.h: argument checks, error text (per
 * session, and per thread for calls without one), the plan cache keyed by
 * input shapes (each entry the first stage of a staged sequence, see
 * src/runtime/stage.c), backend selection, and the profile writer. */
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stddef.h>

#include "util/seqval.h"
#include "util/strpool.h"
#include "backend/backend.h"
#include "runtime/notes.h"
#include "onnx/onnx.h"
#include "ops/ops.h"
#include "api_internal.h"

#define PLAN_CACHE 8

struct braid_model {
    bd_graph g;
};

struct braid_options {
    braid_backend backend;
    bd_exec_opts x;
    char *profile_path;
};

struct braid_session {
    const braid_model *m;
    const bd_backend *be;
    braid_backend kind;
    void *bstate;
    bd_runner runner;               /* the backend as the runner of the model's plans */
    bd_exec_opts x;
    char *profile_path;
    pthread_mutex_t mu;
    bd_prepared *cache[PLAN_CACHE]; /* first stages, most recently used first */
    void **res;                     /* per graph output: a host copy where the backend's memory is not the host's */
    size_t *res_cap;
    void **in_buf;                  /* per graph input: host-shared buffer, or NULL */
    char err[1100];
    char backend_note[600];         /* why AUTO chose the CPU */
    bd_notes notes;                 /* what the backend did instead of what was asked */
    bd_strpool out_strings;         /* the strings of the last run's STRING outputs, and its sequences (braid.h) */
    bd_strpool in_boxes;            /* the last run's sequence and optional inputs as braid holds them */
};

static _Thread_local char tls_err[1100];

static int debug_where(void)
{
    const char *d = getenv("BRAID_DEBUG");
    return d && d[0] && d[0] != '0';
}

static braid_status set_error(char *dst, const bd_err *e)
{
    if (debug_where() && e->where[0]) snprintf(dst, 1100, "%s [%s]", e->msg, e->where);
    else snprintf(dst, 1100, "%s", e->msg);
    return e->status;
}

static braid_status thread_fail(braid_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err, sizeof tls_err, fmt, ap);
    va_end(ap);
    return s;
}

const char *braid_version(void) { return BRAID_VERSION_STRING; }
const char *braid_last_error(void) { return tls_err; }
const char *braid_session_error(const braid_session *s) { return s ? s->err : tls_err; }
const char *braid_dtype_name(braid_dtype t) { return bd_dtype_name((int)t); }

const char *braid_status_name(braid_status s)
{
    static const char *names[] = {"ok", "invalid argument", "i/o error", "parse error", "invalid model",
                                  "unsupported", "shape error", "dtype error", "out of memory", "no device",
                                  "device error", "limit exceeded", "internal error"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown status";
}

/* ---- models ---------------------------------------------------------------- */

/* A model from bytes; owned (the same bytes, bd_malloc'ed, or NULL) is freed
 * here, as soon as the loader has parsed it. */
static braid_status model_load(const void *bytes, void *owned, size_t size, const char *base_dir, braid_model **out)
{
    braid_model *m = bd_calloc(1, sizeof *m);
    if (!m) {
        bd_free(owned);
        return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    bd_err e = {0};
    braid_status st = owned ? bd_onnx_load_owned(owned, size, base_dir, &m->g, &e)
                            : bd_onnx_load(bytes, size, base_dir, &m->g, &e);
    if (st != BRAID_OK) {
        bd_free(m);
        return set_error(tls_err, &e);
    }
    *out = m;
    return BRAID_OK;
}

braid_status braid_model_load_memory(const void *bytes, size_t size, const char *base_dir, braid_model **out)
{
    if (!out) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_load_memory: out is NULL");
    *out = NULL;
    if (!bytes && size) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_load_memory: bytes is NULL");
    return model_load(bytes, NULL, size, base_dir, out);
}

braid_status braid_model_load_file(const char *path, braid_model **out)
{
    if (!out) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_load_file: out is NULL");
    *out = NULL;
    if (!path) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_load_file: path is NULL");
    bd_err e = {0};
    void *bytes = NULL;
    size_t size = 0;
    if (bd_read_file(path, &bytes, &size, &e) != BRAID_OK) return set_error(tls_err, &e);
    char *dir = bd_strdup(path);
    if (!dir) { bd_free(bytes); return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
    braid_status st = model_load(bytes, bytes, size, dirname(dir), out); /* frees bytes */
    if (st) {
        char tmp[sizeof tls_err];
        snprintf(tmp, sizeof tmp, "%s: %s", path, tls_err);
        memcpy(tls_err, tmp, sizeof tls_err);
    }
    bd_free(dir);
    return st;
}

const bd_graph *bd_model_graph(const braid_model *m) { return m ? &m->g : NULL; }

void braid_model_destroy(braid_model *m)
{
    if (!m) return;
    bd_graph_free(&m->g);
    bd_free(m);
}

int braid_model_input_count(const braid_model *m) { return m ? m->g.n_inputs : 0; }
int braid_model_output_count(const braid_model *m) { return m ? m->g.n_outputs : 0; }

static void fill_info(const bd_value *v, braid_value_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = v->name;
    out->dtype = (braid_dtype)v->dtype;
    out->rank = bd_dt_container(v->dtype) ? -1 : v->rank; /* a container's elements have shapes of their own */
    for (int d = 0; d < out->rank && d < BRAID_MAX_RANK; d++) {
        out->dims[d] = v->dims[d];
        out->dim_names[d] = v->dim_param[d];
    }
}

braid_status braid_model_input_info(const braid_model *m, int i, braid_value_info *out)
{
    if (!m || !out || i < 0 || i >= m->g.n_inputs)
        return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_input_info: no input %d", i);
    fill_info(&m->g.values[m->g.inputs[i]], out);
    return BRAID_OK;
}

braid_status braid_model_output_info(const braid_model *m, int i, braid_value_info *out)
{
    if (!m || !out || i < 0 || i >= m->g.n_outputs)
        return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_model_output_info: no output %d", i);
    fill_info(&m->g.values[m->g.outputs[i]], out);
    return BRAID_OK;
}

/* ---- options ------------------------------------------------------------------- */

braid_status braid_options_create(braid_options **out)
{
    if (!out) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_options_create: out is NULL");
    *out = bd_calloc(1, sizeof **out);
    if (!*out) return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    (*out)->backend = BRAID_BACKEND_AUTO;
    (*out)->x.cuda_workspace = -1;
    return BRAID_OK;
}

void braid_options_destroy(braid_options *o)
{
    if (!o) return;
    bd_free(o->profile_path);
    bd_free(o);
}

#define OPT_CHECK(o, cond, what)                                                                   \
    do {                                                                                           \
        if (!(o)) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "%s: options is NULL", __func__);  \
        if (!(cond)) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "%s: %s", __func__, what);      \
    } while (0)

braid_status braid_options_set_backend(braid_options *o, braid_backend b)
{
    OPT_CHECK(o, b == BRAID_BACKEND_AUTO || b == BRAID_BACKEND_CPU || b == BRAID_BACKEND_CUDA, "unknown backend");
    o->backend = b;
    return BRAID_OK;
}
braid_status braid_options_set_device(braid_options *o, int device)
{
    OPT_CHECK(o, device >= 0, "device must be >= 0");
    o->x.device = device;
    return BRAID_OK;
}
braid_status braid_options_set_max_streams(braid_options *o, int n)
{
    OPT_CHECK(o, n >= 0 && n <= 64, "max streams must be 0 (automatic) to 64");
    o->x.max_streams = n;
    return BRAID_OK;
}
braid_status braid_options_set_threads(braid_options *o, int n)
{
    OPT_CHECK(o, n >= 0 && n <= 1024, "threads must be 0 (all cores) to 1024");
    o->x.threads = n;
    return BRAID_OK;
}
braid_status braid_options_set_cuda_graph(braid_options *o, int enable)
{
    OPT_CHECK(o, 1, "");
    o->x.cuda_graph = enable != 0;
    return BRAID_OK;
}
braid_status braid_options_set_tf32(braid_options *o, int enable)
{
    OPT_CHECK(o, 1, "");
    o->x.allow_tf32 = enable != 0;
    return BRAID_OK;
}
braid_status braid_options_set_fold(braid_options *o, int enable)
{
    OPT_CHECK(o, 1, "");
    o->x.no_fold = enable == 0;
    return BRAID_OK;
}
braid_status braid_options_set_layout(braid_options *o, int enable)
{
    OPT_CHECK(o, 1, "");
    o->x.no_layout = enable == 0;
    return BRAID_OK;
}
braid_status braid_options_set_cuda_workspace(braid_options *o, int64_t mib)
{
    OPT_CHECK(o, mib >= 0 && mib <= 65536, "the CUDA workspace must be 0 to 65536 MiB");
    o->x.cuda_workspace = mib << 20;
    return BRAID_OK;
}
braid_status braid_options_set_loop_limit(braid_options *o, int64_t n)
{
    OPT_CHECK(o, n >= 0, "the loop limit must be 0 (the default) or a positive count");
    o->x.loop_limit = n;
    return BRAID_OK;
}
braid_status braid_options_set_profile(braid_options *o, const char *path)
{
    OPT_CHECK(o, 1, "");
    char *p = path ? bd_strdup(path) : NULL;
    if (path && !p) return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    bd_free(o->profile_path);
    o->profile_path = p;
    o->x.profile = p != NULL;
    return BRAID_OK;
}

/* ---- sessions ------------------------------------------------------------------- */

/* The session's backend as the runner of its plans. */
static braid_status runner_prepare(void *ctx, bd_prepared *p, bd_err *e)
{
    braid_session *s = ctx;
    return s->be->prepare(s->bstate, p, e);
}
static void runner_release(void *ctx, bd_prepared *p)
{
    braid_session *s = ctx;
    s->be->release(s->bstate, p);
}
static braid_status runner_run(void *ctx, bd_prepared *p, const bd_tensor *in, bd_err *e)
{
    braid_session *s = ctx;
    return s->be->run(s->bstate, p, in, e);
}
static braid_status runner_read(void *ctx, void *dst, const void *src, size_t n, bd_err *e)
{
    braid_session *s = ctx;
    if (s->be->read) return s->be->read(s->bstate, dst, src, n, e);
    if (n) memcpy(dst, src, n);
    return BRAID_OK;
}

/* The first op of g (its subgraphs too) that runs on host values only
 * (BD_OPF_HOST: strings, sequences, optionals), or NULL. */
static const char *host_op(const bd_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *n = &g->nodes[i];
        if (bd_op_table[n->op].flags & BD_OPF_HOST) return n->op_type;
        for (int a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].type == BD_ATTR_GRAPH && n->attrs[a].g) {
                const char *h = host_op(n->attrs[a].g);
                if (h) return h;
            }
    }
    return NULL;
}

braid_status braid_session_create(const braid_model *m, const braid_options *o, braid_session **out)
{
    if (!out) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_create: out is NULL");
    *out = NULL;
    if (!m) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_create: model is NULL");
    braid_options defaults = {.backend = BRAID_BACKEND_AUTO, .x.cuda_workspace = -1};
    if (!o) o = &defaults;
    braid_session *s = bd_calloc(1, sizeof *s);
    if (!s) return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    s->m = m;
    s->x = o->x;
    bd_notes_init(&s->notes);
    s->x.notes = &s->notes;
    if (o->profile_path && !(s->profile_path = bd_strdup(o->profile_path))) {
        bd_notes_destroy(&s->notes);
        bd_free(s);
        return thread_fail(BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->kind = BRAID_BACKEND_CPU;
    s->be = &bd_backend_cpu;
    char why[600] = "";
    /* The driver first: without a device nothing of CUDA is loaded. */
    int present = o->backend != BRAID_BACKEND_CPU && bd_cuda_device_present(why, sizeof why);
    const bd_cuda_module *cu = present ? bd_cuda_module_load(why, sizeof why) : NULL;
    int have = cu && cu->probe(why, sizeof why);
    if (o->backend == BRAID_BACKEND_CUDA && !have) {
        bd_notes_destroy(&s->notes);
        bd_free(s->profile_path);
        bd_free(s);
        return thread_fail(BRAID_ERR_NO_DEVICE, "the CUDA backend was asked for but %s%s",
                           cu || !present ? "no CUDA device answers: " : "", why);
    }
    const char *host = have && o->backend == BRAID_BACKEND_AUTO ? host_op(&m->g) : NULL;
    if (host) { /* AUTO: the CPU runs what works on host values */
        have = 0;
        snprintf(why, sizeof why, "the model's op %s works on string, sequence or optional values, which live on "
                 "the host: a CUDA plan would run such nodes on the host, a synchronization and copies each "
                 "(--backend cuda does)", host);
        cu = NULL;
    }
    if (have) { s->kind = BRAID_BACKEND_CUDA; s->be = cu->backend; }
    else if (o->backend == BRAID_BACKEND_AUTO) snprintf(s->backend_note, sizeof s->backend_note, "%s%s",
                                                        cu || !present ? "no CUDA device answers: " : "", why);
    bd_err e = {0};
    if (s->be->open(&m->g, &s->x, &s->bstate, &e) != BRAID_OK) {
        bd_notes_destroy(&s->notes);
        bd_free(s->profile_path);
        bd_free(s);
        return set_error(tls_err, &e);
    }
    s->runner = (bd_runner){.ctx = s, .prepare = runner_prepare, .release = runner_release, .run = runner_run,
                            .node_note = s->be->node_note,
                            .read = runner_read, .host_mem = s->be == &bd_backend_cpu, .host_out = 1, .host_in = 1};
    pthread_mutex_init(&s->mu, NULL);
    bd_strpool_init(&s->out_strings);
    bd_strpool_init(&s->in_boxes);
    *out = s;
    return BRAID_OK;
}

braid_backend braid_session_backend(const braid_session *s) { return s ? s->kind : BRAID_BACKEND_CPU; }

const char *braid_session_backend_note(const braid_session *s) { return s ? s->backend_note : ""; }

const char *braid_session_device_info(const braid_session *s)
{
    if (!s || !s->be->device_info) return "";
    const char *t = s->be->device_info(s->bstate, NULL);
    return t ? t : "";
}

int braid_session_note_count(const braid_session *s)
{
    return s ? bd_notes_count((bd_notes *)&s->notes) : 0;
}

const char *braid_session_note(const braid_session *s, int i)
{
    return s ? bd_notes_get((bd_notes *)&s->notes, i) : "";
}

braid_status braid_session_graph_info(braid_session *s, braid_graph_info *out)
{
    if (!s || !out) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_graph_info: NULL argument");
    memset(out, 0, sizeof *out);
    out->error = "";
    pthread_mutex_lock(&s->mu);
    out->requested = s->x.cuda_graph && s->kind == BRAID_BACKEND_CUDA;
    if (s->cache[0] && s->be->graph_info) {
        bd_graph_report r = {.error = ""};
        s->be->graph_info(s->bstate, s->cache[0], &r);
        out->captured = r.captured;
        out->failed = r.failed;
        out->replays = r.replays;
        out->uncaptured = r.uncaptured;
        out->error = r.error ? r.error : "";
    }
    pthread_mutex_unlock(&s->mu);
    return BRAID_OK;
}

double bd_session_device_ms(braid_session *s)
{
    bd_graph_report r = {.error = "", .device_ms = -1};
    if (!s) return -1;
    pthread_mutex_lock(&s->mu);
    if (s->cache[0] && s->be->graph_info) s->be->graph_info(s->bstate, s->cache[0], &r);
    pthread_mutex_unlock(&s->mu);
    return r.device_ms;
}

double bd_session_mem_bandwidth(const braid_session *s)
{
    double bw = 0;
    if (s && s->be->device_info) s->be->device_info(s->bstate, &bw);
    return bw;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s < 0x20) fprintf(f, "\\u%04x", *s);
        else fputc(*s, f);
    }
    fputc('"', f);
}

/* Every stage of the session's plans, in a flat list (at most max). */
static int all_stages(bd_prepared *p, bd_prepared **list, int n, int max)
{
    if (!p || n >= max) return n;
    list[n++] = p;
    for (int c = 0; c < (int)(sizeof p->next / sizeof *p->next); c++) n = all_stages(p->next[c], list, n, max);
    return n;
}

/* Chrome trace-event JSON: one track (tid) per stream, one slice per node. */
static void write_profile(braid_session *s)
{
    FILE *f = fopen(s->profile_path, "w");
    if (!f) return;
    bd_prepared *list[256];
    int n_list = 0;
    for (int c = 0; c < PLAN_CACHE && s->cache[c]; c++) n_list = all_stages(s->cache[c], list, n_list, 256);
    double t_base = -1;
    for (int c = 0; c < n_list; c++)
        for (int i = 0; i < list[c]->n_trace; i++)
            if (t_base < 0 || list[c]->trace[i].t0 < t_base) t_base = list[c]->trace[i].t0;
    fprintf(f, "{\"traceEvents\":[\n");
    int first = 1, max_stream = 0;
    for (int c = 0; c < n_list; c++) {
        bd_prepared *p = list[c];
        for (int i = 0; i < p->n_trace; i++) {
            const bd_trace_event *t = &p->trace[i];
            const bd_node *n = p->inst.node[t->node];
            max_stream = BD_MAX(max_stream, t->stream);
            fprintf(f, "%s{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", first ? "" : ",\n",
                    t->stream, (t->t0 - t_base) * 1e6, (t->t1 - t->t0) * 1e6);
            json_str(f, n->name);
            fprintf(f, ",\"cat\":");
            json_str(f, n->op_type);
            fprintf(f, ",\"args\":{\"op\":");
            json_str(f, n->op_type);
            fprintf(f, ",\"inputs\":\"");
            for (int k = 0; k < n->n_in; k++) {
                char b[160];
                if (n->in[k] >= 0) fprintf(f, "%s%s", k ? " " : "", bd_shape_str(&p->inst.vals[n->in[k]], b, sizeof b));
            }
            fprintf(f, "\",\"outputs\":\"");
            for (int k = 0; k < n->n_out; k++) {
                char b[160];
                if (n->out[k] >= 0) fprintf(f, "%s%s", k ? " " : "", bd_shape_str(&p->inst.vals[n->out[k]], b, sizeof b));
            }
            fprintf(f, "\"");
            if (p->inst.vlayout && n->n_out > 0 && n->out[0] >= 0 && p->inst.vlayout[n->out[0]] == BD_LAYOUT_NHWC)
                fprintf(f, ",\"layout\":\"NHWC\""); /* shapes are (N, H, W, C); a Conv's W (KH, KW, C/group, M) */
            if (t->threads > 0) fprintf(f, ",\"threads\":%d", t->threads);
            fprintf(f, "}}");
            first = 0;
        }
    }
    for (int t = 0; t <= max_stream; t++)
        fprintf(f, "%s{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":\"stream %d\"}}",
                first && t == 0 ? "" : ",\n", t, t);
    fprintf(f, "\n]}\n");
    fclose(f);
}

static void free_shared(braid_session *s, void *p)
{
    if (!p) return;
    if (s->be->free_shared) s->be->free_shared(s->bstate, p);
    else bd_free(p);
}

braid_status braid_session_input_buffer(braid_session *s, int i, const braid_tensor *shape, void **data)
{
    if (!s) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_input_buffer: session is NULL");
    if (!shape || !data || i < 0 || i >= s->m->g.n_inputs) {
        snprintf(s->err, sizeof s->err, "braid_session_input_buffer: no input %d, or shape/data is NULL", i);
        return BRAID_ERR_INVALID_ARGUMENT;
    }
    bd_err e = {0};
    bd_tensor t = {.dtype = shape->dtype, .rank = shape->rank};
    braid_status st = BRAID_OK;
    size_t nb = 0;
    pthread_mutex_lock(&s->mu);
    if (shape->rank < 0 || shape->rank > BD_MAX_RANK) {
        st = BD_FAIL(&e, BRAID_ERR_SHAPE, "rank %d is out of range", shape->rank);
        goto fail;
    }
    memcpy(t.dims, shape->dims, sizeof t.dims);
    BD_TRY(bd_check_input(&s->m->g, i, &t, &e));
    BD_TRY(bd_tensor_nbytes(&t, &nb, &e));
    if (!s->in_buf) {
        s->in_buf = bd_calloc((size_t)s->m->g.n_inputs + 1, sizeof(void *));
        BD_CHECK_ALLOC(&e, s->in_buf);
    }
    free_shared(s, s->in_buf[i]);
    s->in_buf[i] = NULL;
    if (s->be->alloc_shared) BD_TRY(s->be->alloc_shared(s->bstate, nb, &s->in_buf[i], &e));
    else {
        s->in_buf[i] = bd_malloc(nb);
        BD_CHECK_ALLOC(&e, s->in_buf[i]);
    }
    *data = s->in_buf[i];
fail:
    if (st) set_error(s->err, &e);
    pthread_mutex_unlock(&s->mu);
    return st;
}

braid_status braid_session_device_counts(const braid_session *s, long *streams, long *events)
{
    if (!s || !streams || !events)
        return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_device_counts: NULL argument");
    *streams = *events = 0;
    if (s->be->counts) s->be->counts(s->bstate, streams, events);
    return BRAID_OK;
}

void braid_session_destroy(braid_session *s)
{
    if (!s) return;
    if (s->profile_path) write_profile(s);
    for (int c = 0; c < PLAN_CACHE; c++) bd_stage_free(s->cache[c]);
    for (int i = 0; s->in_buf && i < s->m->g.n_inputs; i++) free_shared(s, s->in_buf[i]);
    bd_free(s->in_buf);
    for (int o = 0; s->res && o < s->m->g.n_outputs; o++) bd_free(s->res[o]);
    bd_free(s->res);
    bd_free(s->res_cap);
    s->be->close(s->bstate);
    pthread_mutex_destroy(&s->mu);
    bd_strpool_destroy(&s->out_strings);
    bd_strpool_destroy(&s->in_boxes);
    bd_notes_destroy(&s->notes);
    bd_free(s->profile_path);
    bd_free(s);
}

static int sig_match(const bd_prepared *p, const int64_t *sig, int len)
{
    return p->sig_len == len && !memcmp(p->sig, sig, (size_t)len * sizeof *sig);
}

/* Finds or builds the plan for these input shapes; moves it to the front. */
static braid_status get_plan(braid_session *s, const bd_tensor *in, bd_prepared **out, bd_err *e)
{
    const bd_graph *g = &s->m->g;
    int64_t sig_buf[256], *sig = sig_buf;
    int len = bd_signature(g, in, NULL, NULL, 0);
    if (len > 256 && !(sig = bd_malloc((size_t)len * sizeof *sig))) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    bd_signature(g, in, NULL, sig, len);
    int c = 0;
    while (c < PLAN_CACHE && s->cache[c] && !sig_match(s->cache[c], sig, len)) c++;
    if (sig != sig_buf) bd_free(sig);
    if (c == PLAN_CACHE || !s->cache[c]) {
        bd_prepared *p = bd_calloc(1, sizeof *p);
        if (!p) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        int ms = s->x.max_streams; /* automatic: negative, capped by the backend */
        if (!ms) ms = -(s->be->auto_streams ? s->be->auto_streams(s->bstate) : BD_AUTO_MAX_STREAMS);
        bd_prepare_opts po = {.max_streams = ms, .fill_cost = s->be->fill_cost,
                              .min_parallelism = s->be->min_parallelism, .no_fold = s->x.no_fold,
                              .layout = s->be->layouts && !s->x.no_layout,
                              .loop_limit = s->x.loop_limit ? s->x.loop_limit : BD_LOOP_LIMIT_DEFAULT};
        braid_status st = bd_prepare(g, in, NULL, &po, p, e);
        if (!st) st = bd_stage_prepare(&s->runner, p, e);
        if (st) { bd_free(p); return st; }
        c = PLAN_CACHE - 1;
        bd_stage_free(s->cache[c]);
        s->cache[c] = p;
    }
    bd_prepared *p = s->cache[c];
    memmove(&s->cache[1], &s->cache[0], (size_t)c * sizeof *s->cache);
    s->cache[0] = p;
    *out = p;
    return BRAID_OK;
}

_Static_assert(sizeof(bd_tensor) == sizeof(braid_tensor) && offsetof(bd_tensor, data) == offsetof(braid_tensor, data),
               "a sequence's elements are braid_tensor to the caller and bd_tensor inside");

/* One tensor the caller gave (an input, or an element of a sequence input). */
static braid_status check_tensor(const char *name, const char *what, const braid_tensor *t, bd_err *e)
{
    bd_tensor x = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
    if (t->rank < 0 || t->rank > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s'%s has rank %d; braid supports 0 to %d", name, what, t->rank,
                       BD_MAX_RANK);
    memcpy(x.dims, t->dims, sizeof x.dims);
    if (bd_dt_container(t->dtype) || !bd_dtype_size(t->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s'%s has dtype %s, not a tensor dtype", name, what,
                       bd_dtype_name(t->dtype));
    size_t nb;
    braid_status st = bd_tensor_nbytes(&x, &nb, e);
    if (st) { bd_err_prefix(e, "input '%s'%s: ", name, what); return st; }
    if (!t->data && nb) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "input '%s'%s has no data", name, what);
    if (t->dtype == BRAID_DTYPE_STRING) /* every element must point at a string */
        for (int64_t k = 0, n = bd_numel(&x); k < n; k++)
            if (!((const char *const *)t->data)[k])
                return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "string input '%s'%s has a NULL element at %lld", name, what,
                               (long long)k);
    return BRAID_OK;
}

/* A sequence or optional input (declared type dt) as braid holds it inside a
 * plan: one pointer, in pool, to what it holds (util/common.h); the
 * caller's elements and data are used where they are. */
static braid_status take_container(const char *name, int dt, const braid_tensor *t, bd_strpool *pool, bd_tensor *in,
                                   bd_err *e)
{
    void **slot = bd_strpool_alloc(pool, sizeof *slot);
    if (!slot) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    memset(in, 0, sizeof *in);
    in->dtype = dt;
    in->rank = 0;
    in->data = slot;
    *slot = NULL;
    if ((dt & BD_DT_OPT) && t->dtype == BRAID_DTYPE_UNDEFINED) return BRAID_OK; /* an empty optional */
    int want = dt & ~BD_DT_OPT;
    if ((int)t->dtype != want)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' is %s but the model declares %s", name, bd_dtype_name(t->dtype),
                       bd_dtype_name(dt));
    if (!(want & BD_DT_SEQ)) { /* an optional holding a tensor */
        BD_TRY_RET(check_tensor(name, "", t, e));
        bd_tensor *x = bd_strpool_alloc(pool, sizeof *x);
        if (!x) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        memcpy(x, t, sizeof *x);
        *slot = x;
        return BRAID_OK;
    }
    if (t->rank != 1 || t->dims[0] < 0 || t->dims[0] > 1 << 24 || (t->dims[0] && !t->data))
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "sequence input '%s' must have rank 1, dims[0] its length "
                       "(up to 2^24) and data its elements", name);
    bd_seq *q = bd_seq_new(pool, bd_dt_elem(want), (int)t->dims[0], e);
    if (!q) return e->status;
    const braid_tensor *items = t->data;
    for (int i = 0; i < q->n; i++) {
        char what[48];
        snprintf(what, sizeof what, " (element %d)", i);
        if ((int)items[i].dtype != q->elem)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s'%s is %s but the sequence holds %s", name, what,
                           bd_dtype_name(items[i].dtype), bd_dtype_name(q->elem));
        BD_TRY_RET(check_tensor(name, what, &items[i], e));
        memcpy(&q->items[i], &items[i], sizeof q->items[i]);
    }
    *slot = q;
    return BRAID_OK;
}

/* The caller's inputs as braid's tensors, each checked against the model's
 * declaration (count, rank, shape, dtype, data present). Sequence and
 * optional inputs are made into braid's form in pool. */
static braid_status take_inputs(const bd_graph *g, int n_inputs, const braid_tensor *inputs, bd_tensor *in,
                                bd_strpool *pool, bd_err *e)
{
    if (n_inputs != g->n_inputs)
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "the model has %d inputs, %d were given", g->n_inputs, n_inputs);
    if (n_inputs > 64) return BD_FAIL(e, BRAID_ERR_LIMIT, "the model has %d inputs; braid accepts up to 64", n_inputs);
    for (int i = 0; i < n_inputs; i++) {
        const braid_tensor *t = &inputs[i];
        const bd_value *v = &g->values[g->inputs[i]];
        if (bd_dt_container(v->dtype) || (!v->dtype && bd_dt_container(t->dtype))) {
            braid_status st = take_container(v->name, v->dtype ? v->dtype : (int)t->dtype, t, pool, &in[i], e);
            if (st) return st;
            continue;
        }
        in[i].dtype = t->dtype;
        in[i].rank = t->rank;
        in[i].data = t->data;
        if (t->rank < 0 || t->rank > BD_MAX_RANK)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has rank %d; braid supports 0 to %d",
                           g->values[g->inputs[i]].name, t->rank, BD_MAX_RANK);
        memcpy(in[i].dims, t->dims, sizeof in[i].dims);
        braid_status st = bd_check_input(g, i, &in[i], e);
        if (st) return st;
        if ((st = check_tensor(v->name, "", t, e))) return st;
    }
    return BRAID_OK;
}

/* (the session's lock held: its sequence and optional inputs live in
 * in_boxes, which every run remakes) */
braid_status bd_session_plan_run(braid_session *s, const braid_tensor *inputs, const bd_prepared **out, bd_err *e)
{
    bd_tensor in[64];
    bd_run_out *outs = bd_calloc((size_t)s->m->g.n_outputs + 1, sizeof *outs);
    if (!outs) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_lock(&s->mu);
    bd_strpool_reset(&s->in_boxes);
    bd_prepared *p = NULL, *last = NULL;
    braid_status st = take_inputs(&s->m->g, s->m->g.n_inputs, inputs, in, &s->in_boxes, e);
    if (!st) st = get_plan(s, in, &p, e);
    *out = p;
    if (!st) st = bd_stages_run(p, in, outs, &last, e);
    pthread_mutex_unlock(&s->mu);
    bd_free(outs);
    return st;
}

braid_status bd_session_plan(braid_session *s, const braid_tensor *inputs, const bd_prepared **out, bd_err *e)
{
    bd_tensor in[64];
    pthread_mutex_lock(&s->mu);
    bd_strpool_reset(&s->in_boxes);
    bd_prepared *p = NULL;
    braid_status st = take_inputs(&s->m->g, s->m->g.n_inputs, inputs, in, &s->in_boxes, e);
    if (!st) st = get_plan(s, in, &p, e);
    pthread_mutex_unlock(&s->mu);
    *out = p;
    return st;
}

/* Output o's bytes where the host reads them: the backend's own memory
 * when the host can read it, else a copy in the session's buffer for it. */
static braid_status host_output(braid_session *s, int o, const bd_run_out *r, int copy_always, const void **out,
                                bd_err *e)
{
    size_t nb;
    BD_TRY_RET(bd_tensor_nbytes(&r->t, &nb, e));
    if (r->host && !copy_always) { *out = r->host; return BRAID_OK; }
    if (!s->res) {
        s->res = bd_calloc((size_t)s->m->g.n_outputs + 1, sizeof *s->res);
        s->res_cap = bd_calloc((size_t)s->m->g.n_outputs + 1, sizeof *s->res_cap);
        if (!s->res || !s->res_cap) {
            bd_free(s->res);
            bd_free(s->res_cap);
            s->res = NULL;
            s->res_cap = NULL;
            return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
    }
    if (s->res_cap[o] < nb || !s->res[o]) {
        void *q = bd_malloc(nb ? nb : 1);
        if (!q) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        bd_free(s->res[o]);
        s->res[o] = q;
        s->res_cap[o] = nb;
    }
    if (nb && r->host) memcpy(s->res[o], r->host, nb);
    else if (nb) BD_TRY_RET(runner_read(s, s->res[o], r->t.data, nb, e));
    *out = s->res[o];
    return BRAID_OK;
}

/* Output o, a sequence or optional, as braid.h gives it: a copy, owned by
 * the session until the next run, of what its pointer holds. */
static braid_status give_container(braid_session *s, int o, const bd_run_out *r, braid_tensor *out, bd_err *e)
{
    void *slot = NULL;
    BD_TRY_RET(host_output(s, o, r, 0, (const void **)&slot, e));
    const void *obj = bd_box_get(slot);
    memset(out, 0, sizeof *out);
    if (!obj) return BRAID_OK; /* an empty optional: UNDEFINED, no data */
    if (r->t.dtype & BD_DT_SEQ) {
        bd_seq *q = NULL;
        BD_TRY_RET(bd_seq_clone(&s->out_strings, obj, &q, e));
        out->dtype = (braid_dtype)(r->t.dtype & ~BD_DT_OPT);
        out->rank = 1;
        out->dims[0] = q->n;
        out->data = q->items;
        return BRAID_OK;
    }
    bd_tensor x;
    BD_TRY_RET(bd_tensor_clone(&s->out_strings, obj, &x, e));
    memcpy(out, &x, sizeof *out);
    return BRAID_OK;
}

/* Whether the bytes at x of a tensor shaped t overlap those at y of one
 * shaped u; 1 when a size does not fit. */
static int overlaps(const void *x, const bd_tensor *t, const void *y, const bd_tensor *u)
{
    size_t a, b;
    bd_err e = {0};
    if (bd_tensor_nbytes(t, &a, &e) || bd_tensor_nbytes(u, &b, &e)) return 1;
    const char *p = x, *q = y;
    return p < q + b && q < p + a;
}

static braid_status run_locked(braid_session *s, int n_inputs, const braid_tensor *inputs, int n_outputs,
                               braid_tensor *outputs, int into, bd_err *e)
{
    const bd_graph *g = &s->m->g;
    bd_tensor in[64];
    if (n_inputs != g->n_inputs || n_inputs > 64) return take_inputs(g, n_inputs, inputs, in, &s->in_boxes, e);
    if (n_outputs < 0 || n_outputs > g->n_outputs || (n_outputs && !outputs))
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "asked for %d outputs; the model has %d", n_outputs, g->n_outputs);
    bd_strpool_reset(&s->in_boxes);
    braid_status st = take_inputs(g, n_inputs, inputs, in, &s->in_boxes, e);
    if (st) return st;
    bd_prepared *p = NULL, *last = NULL;
    bd_run_out *outs = bd_calloc((size_t)g->n_outputs + 1, sizeof *outs);
    if (!outs) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    BD_TRY(get_plan(s, in, &p, e));
    bd_strpool_reset(&s->out_strings);
    /* run_into on host memory: outputs whose shape the plan knows are
     * written straight into the caller's buffers (bound for this run), not
     * copied after it. */
    void *saved[64];
    int bound[64] = {0}, any = 0;
    if (into && s->runner.host_mem && !p->inst.n_later && n_outputs <= 64)
        for (int o = 0; o < n_outputs; o++) {
            int v = g->outputs[o];
            const bd_tensor *t = &p->vals[v];
            bd_tensor want = {.dtype = outputs[o].dtype, .rank = outputs[o].rank};
            memcpy(want.dims, outputs[o].dims, sizeof want.dims);
            if (p->val_out[v] != o || p->val_prod[v] < 0 || (p->inst.vflag && p->inst.vflag[v]) ||
                t->data != p->out_data[o] || bd_dt_container(t->dtype) || t->dtype == BRAID_DTYPE_STRING ||
                !outputs[o].data || (uintptr_t)outputs[o].data % 16 || want.dtype != t->dtype ||
                !bd_shape_equal(&want, t))
                continue;
            /* not over an input, nor over another bound output (copies, as before) */
            int clash = 0;
            for (int i = 0; i < g->n_inputs && !clash; i++)
                clash = in[i].data && !bd_dt_container(in[i].dtype) && overlaps(outputs[o].data, t, in[i].data, &in[i]);
            for (int q = 0; q < o && !clash; q++)
                clash = bound[q] && overlaps(outputs[o].data, t, outputs[q].data, &p->vals[g->outputs[q]]);
            if (clash) continue;
            saved[o] = p->vals[v].data;
            p->vals[v].data = outputs[o].data;
            bound[o] = any = 1;
        }
    st = bd_stages_run(p, in, outs, &last, e);
    if (any)
        for (int o = 0; o < n_outputs; o++)
            if (bound[o]) p->vals[g->outputs[o]].data = saved[o];
    if (st) goto fail;
    for (int o = 0; o < n_outputs; o++) {
        if (bound[o]) continue; /* written in place */
        const bd_tensor *t = &outs[o].t;
        const void *src = NULL;
        if (bd_dt_container(t->dtype)) {
            if (into) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "output '%s' is a %s: braid_session_run returns it",
                             g->values[g->outputs[o]].name, bd_dtype_name(t->dtype));
                goto fail;
            }
            BD_TRY(give_container(s, o, &outs[o], &outputs[o], e));
            continue;
        }
        /* An input given back is copied: the caller may reuse its buffer. */
        int is_str = t->dtype == BRAID_DTYPE_STRING;
        BD_TRY(host_output(s, o, &outs[o], is_str || (g->values[g->outputs[o]].flags & BD_VAL_INPUT) ? 1 : 0, &src,
                           e));
        if (is_str) { /* the session's own copies: a string may be the caller's input or a constant's */
            const char **strs = (const char **)src;
            for (int64_t i = 0, n = bd_numel(t); i < n; i++) {
                strs[i] = bd_strpool_dup(&s->out_strings, strs[i], strlen(strs[i]));
                if (!strs[i]) {
                    st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the strings of output %d", o);
                    goto fail;
                }
            }
        }
        if (into) { /* the caller's buffer, at the shape the caller states */
            if (!outputs[o].data) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "output %d has no buffer", o);
                goto fail;
            }
            bd_tensor want = {.dtype = outputs[o].dtype, .rank = outputs[o].rank};
            memcpy(want.dims, outputs[o].dims, sizeof want.dims);
            char a[160], b[160];
            if (want.dtype != t->dtype) {
                st = BD_FAIL(e, BRAID_ERR_DTYPE, "output '%s' is %s but the caller's buffer is %s",
                             g->values[g->outputs[o]].name, bd_dtype_name(t->dtype), bd_dtype_name(want.dtype));
                goto fail;
            }
            if (!bd_shape_equal(&want, t)) {
                st = BD_FAIL(e, BRAID_ERR_SHAPE, "output '%s' has shape %s but the caller's buffer is %s",
                             g->values[g->outputs[o]].name, bd_shape_str(t, a, sizeof a), bd_shape_str(&want, b, sizeof b));
                goto fail;
            }
            size_t nb;
            BD_TRY(bd_tensor_nbytes(t, &nb, e));
            if (nb) memcpy(outputs[o].data, src, nb);
            continue;
        }
        outputs[o].dtype = (braid_dtype)t->dtype;
        outputs[o].rank = t->rank;
        memcpy(outputs[o].dims, t->dims, sizeof outputs[o].dims);
        outputs[o].data = (void *)src;
    }
fail:
    bd_free(outs);
    return st;
}

static braid_status run(braid_session *s, int n_inputs, const braid_tensor *inputs, int n_outputs,
                        braid_tensor *outputs, int into)
{
    if (!s) return thread_fail(BRAID_ERR_INVALID_ARGUMENT, "braid_session_run: session is NULL");
    if (n_inputs && !inputs) {
        snprintf(s->err, sizeof s->err, "braid_session_run: inputs is NULL");
        return BRAID_ERR_INVALID_ARGUMENT;
    }
    bd_err e = {0};
    pthread_mutex_lock(&s->mu);
    braid_status st = run_locked(s, n_inputs, inputs, n_outputs, outputs, into, &e);
    if (st) set_error(s->err, &e);
    pthread_mutex_unlock(&s->mu);
    return st;
}

braid_status braid_session_run(braid_session *s, int n_inputs, const braid_tensor *inputs, int n_outputs,
                               braid_tensor *outputs)
{
    return run(s, n_inputs, inputs, n_outputs, outputs, 0);
}

braid_status braid_session_run_into(braid_session *s, int n_inputs, const braid_tensor *inputs, int n_outputs,
                                    const braid_tensor *outputs)
{
    /* Only outputs[i].data's pointee is written, never the structs. */
    return run(s, n_inputs, inputs, n_outputs, (braid_tensor *)outputs, 1);
}
