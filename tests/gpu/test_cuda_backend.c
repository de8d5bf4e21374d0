/* test_cuda_backend.c: the CUDA backend against the CPU backend. Needs a
 * CUDA device: without one it prints "SKIPPED: no CUDA device (reason)" and
 * exits 77, which ctest counts as skipped, never as passed.
 *
 * 1. Every ONNX node test ($BRAID_NODE_DATA/test_*, data set 0) that the
 *    CPU runs: the CUDA outputs equal the CPU's within atol 1e-5 + 1e-4 |cpu|
 *    (or the case's own tolerance when looser); exact for integer outputs. A
 *    CUDA UNSUPPORTED is counted and listed, never a wrong number.
 * 2. The generated models (models/gen/<name>/model.onnx): CUDA with one
 *    stream and with automatic streams equal the CPU within 1e-4 relative.
 * 3. Several create/run/destroy cycles: the process's live streams, events,
 *    handles, allocations and graphs are zero after each destroy.
 * 4. --cuda-graph: three runs (the first uncaptured, then graph replays) with
 *    new input data each time equal an uncaptured session's outputs, and the
 *    session holds one graph and its executable; braid_session_graph_info
 *    says captured, and counts the replays.
 * 5. Streams and handles follow the plan (one for a serial plan); the device
 *    line names the device, cuDNN and cuBLAS.
 * 6. The I/O modes (BRAID_CUDA_IO=staged, mapped, managed) give the same
 *    bytes, from host memory and from the session's host-shared buffers
 *    rewritten between runs, with and without a CUDA graph.
 * 7. BRAID_CUDA_SYNC=1: runs give the same outputs; a CUDA graph is not
 *    captured and graph_info and a note say why.
 * 8. Fault reports (a child process each, as a fault leaves the context
 *    unusable): BRAID_CUDA_TEST_FAULT makes a Conv fault; under
 *    BRAID_CUDA_SYNC=1 the error names the node, its op, its stream and
 *    cudnnConvolutionForward; without it, the error blames no node and names
 *    BRAID_CUDA_SYNC.
 * 9. Limits: an input past cuDNN's 2^31 elements is refused with LIMIT naming
 *    the Conv, before anything is allocated for it.
 * 10. Tuned cuDNN algorithms are kept process-wide: a second session of the
 *    same shapes times nothing; BRAID_CUDA_TUNE=0 and a zero workspace run
 *    and agree with the CPU.
 * 11. Host nodes: a model whose sequence and string nodes sit between device
 *    kernels (a SequenceAt whose tensor only the run sizes, read by an Add;
 *    a StringNormalizer and a string Equal feeding a Cast and a Mul) gives
 *    the CPU's outputs, strings equal, over three runs with new inputs; the
 *    plan print says "on the host" for exactly the host nodes; a CUDA graph
 *    asked for is refused for it and the runs still agree.
 * Node tests whose inputs or outputs are sequences or optionals are left to
 * tests/onnx_node/run.py --backend cuda (scripts/gpu-check), which reads
 * them; here they are counted. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "mbuild.h"

#include "braid.h"
#include "api_internal.h"
#include "onnx/onnx.h"
#include "backend/cpu/cpu_ops.h"
#include "util/common.h"
#ifdef BRAID_HAVE_CUDA
#include "backend/backend.h"
#include "cuda_counts.h"
#endif

#ifdef BRAID_HAVE_CUDA
#define MAX_IO 32

typedef struct run_out {
    int n;
    braid_tensor t[MAX_IO]; /* data malloc'ed copies */
} run_out;

static void out_free(run_out *o)
{
    for (int i = 0; i < o->n; i++) {
        if (o->t[i].dtype == BRAID_DTYPE_STRING)
            for (size_t j = 0, c = bd_numel((const bd_tensor *)&o->t[i]); j < c; j++) free(((char **)o->t[i].data)[j]);
        free(o->t[i].data);
    }
    o->n = 0;
}

static size_t nbytes(const braid_tensor *t)
{
    size_t n = bd_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

/* Runs m once on a fresh session; copies the outputs. */
static braid_status run_once(const braid_model *m, braid_backend be, int streams, int graph, int n_in,
                             const braid_tensor *in, run_out *out, char *err, size_t errn)
{
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_tensor res[MAX_IO];
    memset(res, 0, sizeof res);
    out->n = 0;
    braid_options_create(&o);
    braid_options_set_backend(o, be);
    braid_options_set_max_streams(o, streams);
    braid_options_set_cuda_graph(o, graph);
    braid_status st = braid_session_create(m, o, &s);
    if (st) { snprintf(err, errn, "%s", braid_last_error()); goto done; }
    int n_out = braid_model_output_count(m);
    if (n_out > MAX_IO) n_out = MAX_IO;
    st = braid_session_run(s, n_in, in, n_out, res);
    if (st) { snprintf(err, errn, "%s", braid_session_error(s)); goto done; }
    for (int i = 0; i < n_out; i++) {
        out->t[i] = res[i];
        size_t b = nbytes(&res[i]);
        out->t[i].data = malloc(b ? b : 1);
        if (b) memcpy(out->t[i].data, res[i].data, b);
        if (res[i].dtype == BRAID_DTYPE_STRING) /* the session's strings go with it */
            for (size_t j = 0, c = b / sizeof(char *); j < c; j++)
                ((char **)out->t[i].data)[j] = strdup(((char **)res[i].data)[j]);
        out->n++;
    }
done:
    braid_session_destroy(s);
    braid_options_destroy(o);
    return st;
}

static double elem(const braid_tensor *t, size_t i)
{
    bd_tensor v = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
    return bd_get_f64(&v, (int64_t)i);
}

/* 0 when got equals want within |g - w| <= atol + rtol |w| (exact for integers). */
static int differ(const run_out *got, const run_out *want, double rtol, double atol, char *why, size_t n)
{
    if (got->n != want->n) { snprintf(why, n, "%d outputs, expected %d", got->n, want->n); return 1; }
    for (int o = 0; o < got->n; o++) {
        const braid_tensor *g = &got->t[o], *w = &want->t[o];
        if (g->dtype != w->dtype || g->rank != w->rank) { snprintf(why, n, "output %d: dtype or rank differ", o); return 1; }
        for (int d = 0; d < g->rank; d++)
            if (g->dims[d] != w->dims[d]) { snprintf(why, n, "output %d: dims differ", o); return 1; }
        if (g->dtype == BRAID_DTYPE_STRING) {
            for (size_t i = 0, c = nbytes(g) / sizeof(char *); i < c; i++)
                if (strcmp(((char **)g->data)[i], ((char **)w->data)[i])) {
                    snprintf(why, n, "output %d element %zu: cuda '%s', cpu '%s'", o, i, ((char **)g->data)[i],
                             ((char **)w->data)[i]);
                    return 1;
                }
            continue;
        }
        int fl = g->dtype == BRAID_DTYPE_FLOAT || g->dtype == BRAID_DTYPE_DOUBLE;
        size_t cnt = bd_dtype_size(g->dtype) ? nbytes(g) / bd_dtype_size(g->dtype) : 0;
        for (size_t i = 0; i < cnt; i++) {
            double a = elem(g, i), b = elem(w, i);
            if ((isnan(a) && isnan(b)) || a == b) continue; /* a == b: equal infinities too */
            if (fl ? !(fabs(a - b) <= atol + rtol * fabs(b)) : a != b) {
                snprintf(why, n, "output %d element %zu: cuda %.9g, cpu %.9g", o, i, a, b);
                return 1;
            }
        }
    }
    return 0;
}

static const char *src_dir(void)
{
    const char *d = getenv("BRAID_SOURCE_DIR");
    return d ? d : ".";
}

/* ---- 1. node tests ------------------------------------------------------------------ */

static void node_tests(void)
{
    char root[1024], path[2048], err[1200];
    const char *data = getenv("BRAID_NODE_DATA"); /* made by the node_data fixture */
    if (data) snprintf(root, sizeof root, "%s", data);
    else snprintf(root, sizeof root, "%s/tests/onnx_node/data", src_dir());
    DIR *dir = opendir(root);
    if (!dir) { printf("node tests: %s not found (generate with tests/onnx_node/gen.py)\n", root); return; }
    int ran = 0, same = 0, unsupported = 0, cpu_skip = 0, containers = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, "test_", 5)) continue;
        braid_model *m = NULL;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, de->d_name);
        if (braid_model_load_file(path, &m)) { cpu_skip++; continue; }
        int boxed = 0;
        for (int i = 0; i < braid_model_input_count(m) || i < braid_model_output_count(m); i++) {
            braid_value_info vi;
            if (i < braid_model_input_count(m) && !braid_model_input_info(m, i, &vi)) boxed |= bd_dt_container(vi.dtype);
            if (i < braid_model_output_count(m) && !braid_model_output_info(m, i, &vi)) boxed |= bd_dt_container(vi.dtype);
        }
        if (boxed) { /* tests/onnx_node/run.py --backend cuda runs these */
            containers++;
            braid_model_destroy(m);
            continue;
        }
        int n_in = braid_model_input_count(m);
        braid_tensor in[MAX_IO];
        memset(in, 0, sizeof in);
        int ok = n_in <= MAX_IO;
        for (int i = 0; ok && i < n_in; i++) {
            bd_err e = {0};
            snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", root, de->d_name, i);
            ok = bd_onnx_read_tensor_file(path, (bd_tensor *)&in[i], NULL, &e) == BRAID_OK;
        }
        double rtol = 1e-4, atol = 1e-5, trt, tat;
        snprintf(path, sizeof path, "%s/%s/tolerance.txt", root, de->d_name);
        FILE *tf = fopen(path, "r");
        if (tf) {
            if (fscanf(tf, "%lf %lf", &trt, &tat) == 2) { rtol = fmax(rtol, trt); atol = fmax(atol, tat); }
            fclose(tf);
        }
        run_out cpu = {0}, gpu = {0};
        if (ok && run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, &cpu, err, sizeof err) == BRAID_OK) {
            braid_status st = run_once(m, BRAID_BACKEND_CUDA, 1, 0, n_in, in, &gpu, err, sizeof err);
            ran++;
            if (st == BRAID_ERR_UNSUPPORTED) {
                unsupported++;
                printf("unsupported on cuda: %s: %s\n", de->d_name, err);
            } else if (st) {
                check_failed++;
                fprintf(stderr, "FAIL %s: cuda failed: %s\n", de->d_name, err);
            } else if (differ(&gpu, &cpu, rtol, atol, err, sizeof err)) {
                check_failed++;
                fprintf(stderr, "FAIL %s: %s\n", de->d_name, err);
            } else {
                same++;
                check_passed++;
            }
        } else {
            cpu_skip++;
        }
        out_free(&cpu);
        out_free(&gpu);
        for (int i = 0; i < n_in; i++) bd_free(in[i].data);
        braid_model_destroy(m);
    }
    closedir(dir);
    printf("node tests: %d run on both, %d equal, %d unsupported on cuda, %d not run by the cpu, %d with sequence or "
           "optional inputs or outputs (left to run.py --backend cuda)\n", ran, same, unsupported, cpu_skip, containers);
}

/* ---- 2. generated models ------------------------------------------------------------- */

/* Fixed-seed inputs shaped by the declarations (symbolic dims = 1). */
static int make_inputs(const braid_model *m, braid_tensor *in, unsigned seed)
{
    int n = braid_model_input_count(m);
    for (int i = 0; i < n && i < MAX_IO; i++) {
        braid_value_info vi;
        braid_model_input_info(m, i, &vi);
        memset(&in[i], 0, sizeof in[i]);
        in[i].dtype = vi.dtype;
        in[i].rank = vi.rank < 0 ? 0 : vi.rank;
        for (int d = 0; d < in[i].rank; d++) in[i].dims[d] = vi.dims[d] > 0 ? vi.dims[d] : 1;
        size_t b = nbytes(&in[i]);
        in[i].data = malloc(b ? b : 1);
        size_t cnt = bd_dtype_size(vi.dtype) ? b / bd_dtype_size(vi.dtype) : 0;
        for (size_t j = 0; j < cnt; j++) {
            seed = seed * 1664525u + 1013904223u;
            double r = (double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0;
            if (vi.dtype == BRAID_DTYPE_FLOAT) ((float *)in[i].data)[j] = (float)r;
            else if (vi.dtype == BRAID_DTYPE_INT64) ((int64_t *)in[i].data)[j] = (int64_t)(r * 4);
            else memset((char *)in[i].data + j * bd_dtype_size(vi.dtype), 0, bd_dtype_size(vi.dtype));
        }
    }
    return n;
}

static void model_tests(void)
{
    char root[1024], path[2048], err[1200];
    snprintf(root, sizeof root, "%s/models/gen", src_dir());
    DIR *dir = opendir(root);
    if (!dir) { printf("models: %s not found\n", root); return; }
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.') continue;
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, de->d_name);
        if (stat(path, &sb)) continue;
        braid_model *m = NULL;
        if (braid_model_load_file(path, &m)) { check_failed++; fprintf(stderr, "FAIL load %s: %s\n", path, braid_last_error()); continue; }
        braid_tensor in[MAX_IO];
        int n_in = make_inputs(m, in, 7);
        run_out cpu = {0}, one = {0}, autos = {0};
        CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, &cpu, err, sizeof err), BRAID_OK);
        braid_status s1 = run_once(m, BRAID_BACKEND_CUDA, 1, 0, n_in, in, &one, err, sizeof err);
        if (s1) fprintf(stderr, "%s streams 1: %s\n", de->d_name, err);
        CHECK_EQ_INT(s1, BRAID_OK);
        braid_status sa = run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &autos, err, sizeof err);
        if (sa) fprintf(stderr, "%s streams auto: %s\n", de->d_name, err);
        CHECK_EQ_INT(sa, BRAID_OK);
        if (!s1 && differ(&one, &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL %s streams 1: %s\n", de->d_name, err); }
        if (!sa && differ(&autos, &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL %s streams auto: %s\n", de->d_name, err); }
        printf("model %s: cuda streams 1 %s, auto %s\n", de->d_name, s1 ? "failed" : "ran", sa ? "failed" : "ran");
        out_free(&cpu);
        out_free(&one);
        out_free(&autos);
        for (int i = 0; i < n_in; i++) free(in[i].data);
        braid_model_destroy(m);
    }
    closedir(dir);
}

/* ---- 3 and 4. counts and CUDA graphs ---------------------------------------------------- */

static void expect_zero_live(const char *when)
{
    bd_cuda_live c;
    cuda_counts(&c);
    if (c.streams || c.events || c.cudnn || c.cublas || c.allocs || c.graphs) {
        check_failed++;
        fprintf(stderr, "%s: live streams %ld events %ld cudnn %ld cublas %ld allocs %ld graphs %ld\n", when,
                c.streams, c.events, c.cudnn, c.cublas, c.allocs, c.graphs);
    } else {
        check_passed++;
    }
}

static void lifecycle_and_graph(void)
{
    char path[2048], err[1200];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { printf("lifecycle: %s not loaded: %s\n", path, braid_last_error()); return; }
    braid_tensor in[MAX_IO];
    expect_zero_live("before any session");
    for (int cycle = 0; cycle < 3; cycle++) {
        braid_options *o = NULL;
        braid_session *s = NULL;
        braid_options_create(&o);
        braid_options_set_backend(o, BRAID_BACKEND_CUDA);
        braid_options_set_max_streams(o, cycle == 1 ? 1 : 0);
        CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
        int n_in = make_inputs(m, in, 11 + cycle);
        braid_tensor res[MAX_IO];
        for (int r = 0; r < 2; r++) CHECK_EQ_INT(braid_session_run(s, n_in, in, 1, res), BRAID_OK);
        bd_cuda_live c;
        cuda_counts(&c);
        CHECK(c.streams >= 1);
        CHECK(c.cudnn == c.streams && c.cublas == c.streams);
        {
            /* Streams exist for the plan's streams, no more (created on demand). */
            const bd_prepared *p = NULL;
            bd_err pe = {0};
            CHECK_EQ_INT(bd_session_plan(s, in, &p, &pe), BRAID_OK);
            if (p) CHECK_EQ_INT(c.streams, p->plan.n_streams);
            if (cycle == 1) CHECK_EQ_INT(c.streams, 1);
            const char *dev = braid_session_device_info(s);
            CHECK_CONTAINS(dev, "sm_");
            CHECK_CONTAINS(dev, "cuDNN ");
            CHECK_CONTAINS(dev, "cuBLAS ");
            if (cycle == 0) printf("device: %s\n", dev);
        }
        long ns = 0, ne = 0;
        CHECK_EQ_INT(braid_session_device_counts(s, &ns, &ne), BRAID_OK);
        CHECK_EQ_INT(ns, c.streams); /* the only session */
        CHECK(ne >= 1);              /* at least the fork event of the plan */
        if (cycle == 0) {
            /* A host-shared input buffer (no copy) gives the same outputs as host memory. */
            void *buf = NULL;
            size_t b = nbytes(&in[0]);
            CHECK_EQ_INT(braid_session_input_buffer(s, 0, &in[0], &buf), BRAID_OK);
            if (buf) {
                run_out host = {0}, shared = {0};
                braid_tensor sin[MAX_IO];
                memcpy(sin, in, sizeof sin);
                CHECK_EQ_INT(braid_session_run(s, n_in, in, 1, res), BRAID_OK);
                host.n = 1;
                host.t[0] = res[0];
                host.t[0].data = malloc(nbytes(&res[0]));
                memcpy(host.t[0].data, res[0].data, nbytes(&res[0]));
                memcpy(buf, in[0].data, b);
                sin[0].data = buf;
                CHECK_EQ_INT(braid_session_run(s, n_in, sin, 1, res), BRAID_OK);
                shared.n = 1;
                shared.t[0] = res[0];
                if (differ(&shared, &host, 0, 0, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL shared input: %s\n", err); }
                else check_passed++;
                out_free(&host);
            }
        }
        braid_session_destroy(s);
        braid_options_destroy(o);
        for (int i = 0; i < n_in; i++) free(in[i].data);
        expect_zero_live("after a session was destroyed");
    }

    /* Graph replays equal uncaptured runs on new data. */
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    braid_options_set_cuda_graph(o, 1);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    for (int r = 0; r < 3 && s; r++) {
        int n_in = make_inputs(m, in, 100 + r);
        braid_tensor res[MAX_IO];
        run_out plain = {0}, graph = {0};
        CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &plain, err, sizeof err), BRAID_OK);
        int n_out = braid_model_output_count(m);
        CHECK_EQ_INT(braid_session_run(s, n_in, in, n_out, res), BRAID_OK);
        graph.n = n_out;
        for (int i = 0; i < n_out; i++) graph.t[i] = res[i];
        if (differ(&graph, &plain, 1e-6, 1e-7, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL cuda graph run %d: %s\n", r, err); }
        else check_passed++;
        graph.n = 0; /* the session owns those */
        out_free(&plain);
        for (int i = 0; i < n_in; i++) free(in[i].data);
    }
    /* Replays that read a host-shared input buffer rewritten by the host before
     * each run: the replay must copy the new bytes into the plan's own buffer. */
    void *buf = NULL;
    int n_in = s ? make_inputs(m, in, 200) : 0;
    if (s && braid_session_input_buffer(s, 0, &in[0], &buf) == BRAID_OK && buf) {
        for (int r = 0; r < 3; r++) {
            for (int i = 0; i < n_in; i++) free(in[i].data);
            n_in = make_inputs(m, in, 300 + r);
            memcpy(buf, in[0].data, nbytes(&in[0]));
            braid_tensor sin[MAX_IO], res[MAX_IO];
            memcpy(sin, in, sizeof sin);
            sin[0].data = buf;
            run_out plain = {0}, graph = {0};
            CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &plain, err, sizeof err), BRAID_OK);
            int n_out = braid_model_output_count(m);
            CHECK_EQ_INT(braid_session_run(s, n_in, sin, n_out, res), BRAID_OK);
            graph.n = n_out;
            for (int i = 0; i < n_out; i++) graph.t[i] = res[i];
            if (differ(&graph, &plain, 1e-6, 1e-7, err, sizeof err)) {
                check_failed++;
                fprintf(stderr, "FAIL cuda graph run %d on a host-shared input: %s\n", r, err);
            } else {
                check_passed++;
            }
            graph.n = 0;
            out_free(&plain);
        }
    } else if (s) {
        check_failed++;
        fprintf(stderr, "FAIL: braid_session_input_buffer: %s\n", braid_session_error(s));
    }
    for (int i = 0; i < n_in; i++) free(in[i].data);
    bd_cuda_live c;
    cuda_counts(&c);
    CHECK_EQ_INT(c.graphs, 2); /* the captured graph and its executable */
    if (s) {
        braid_graph_info gi;
        CHECK_EQ_INT(braid_session_graph_info(s, &gi), BRAID_OK);
        CHECK_EQ_INT(gi.requested, 1);
        CHECK_EQ_INT(gi.captured, 1);
        CHECK_EQ_INT(gi.failed, 0);
        CHECK_EQ_INT(gi.uncaptured, 1); /* the first run, which captures */
        CHECK_EQ_INT(gi.replays, 5);    /* 3 + 3 runs of the same shapes */
        CHECK(!strcmp(gi.error, ""));
        for (int i = 0; i < braid_session_note_count(s); i++) printf("note (graph session): %s\n", braid_session_note(s, i));
    }
    braid_session_destroy(s);
    braid_options_destroy(o);
    expect_zero_live("after the graph session was destroyed");
    braid_model_destroy(m);
}

/* ---- 6. I/O modes -------------------------------------------------------------------- */

/* Runs two_conv_add on a session made with the environment as it is now:
 * from host memory, then from a host-shared buffer rewritten before each of
 * three runs; out[0] gets the host-memory run, out[1..3] the buffer runs. */
static int io_runs(const braid_model *m, int graph, run_out out[4], char *err, size_t errn)
{
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_tensor in[MAX_IO], res[MAX_IO];
    int n_in = make_inputs(m, in, 500), rc = 1;
    void *buf = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    braid_options_set_cuda_graph(o, graph);
    if (braid_session_create(m, o, &s)) { snprintf(err, errn, "%s", braid_last_error()); goto done; }
    for (int r = 0; r < 4; r++) {
        braid_tensor sin[MAX_IO];
        memcpy(sin, in, sizeof sin);
        if (r > 0) {
            if (!buf && braid_session_input_buffer(s, 0, &in[0], &buf)) { snprintf(err, errn, "%s", braid_session_error(s)); goto done; }
            for (int i = 0; i < n_in; i++) free(in[i].data);
            make_inputs(m, in, 500 + r); /* new bytes each run: a stale copy would show */
            memcpy(buf, in[0].data, nbytes(&in[0]));
            sin[0].data = buf;
        }
        if (braid_session_run(s, n_in, sin, 1, res)) { snprintf(err, errn, "%s", braid_session_error(s)); goto done; }
        out[r].n = 1;
        out[r].t[0] = res[0];
        out[r].t[0].data = malloc(nbytes(&res[0]));
        memcpy(out[r].t[0].data, res[0].data, nbytes(&res[0]));
    }
    printf("io %s%s: %s\n", getenv("BRAID_CUDA_IO") ? getenv("BRAID_CUDA_IO") : "(default)", graph ? " + graph" : "",
           braid_session_device_info(s));
    for (int i = 0; i < braid_session_note_count(s); i++) printf("  note: %s\n", braid_session_note(s, i));
    rc = 0;
done:
    for (int i = 0; i < n_in; i++) free(in[i].data);
    braid_session_destroy(s);
    braid_options_destroy(o);
    return rc;
}

static void io_modes(void)
{
    char path[2048], err[1200];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { check_failed++; fprintf(stderr, "FAIL io: %s\n", braid_last_error()); return; }
    static const char *modes[] = {"staged", "mapped", "managed"};
    run_out ref[4] = {{0}};
    int have_ref = 0;
    for (int mi = 0; mi < 3; mi++)
        for (int graph = 0; graph < 2; graph++) {
            run_out got[4] = {{0}};
            setenv("BRAID_CUDA_IO", modes[mi], 1);
            if (io_runs(m, graph, got, err, sizeof err)) {
                check_failed++;
                fprintf(stderr, "FAIL io %s graph %d: %s\n", modes[mi], graph, err);
            } else if (!have_ref) {
                memcpy(ref, got, sizeof ref);
                have_ref = 1;
                check_passed++;
                continue;
            } else {
                for (int r = 0; r < 4; r++) { /* the same kernels and algorithms: the same bytes */
                    if (differ(&got[r], &ref[r], 0, 0, err, sizeof err)) {
                        check_failed++;
                        fprintf(stderr, "FAIL io %s graph %d run %d differs from staged: %s\n", modes[mi], graph, r, err);
                    } else {
                        check_passed++;
                    }
                }
            }
            for (int r = 0; r < 4; r++) out_free(&got[r]);
        }
    unsetenv("BRAID_CUDA_IO");
    /* The reference against the CPU (inputs as io_runs makes them). */
    braid_tensor in[MAX_IO];
    for (int r = 0; have_ref && r < 4; r++) {
        int n_in = make_inputs(m, in, 500 + r);
        run_out cpu = {0};
        CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, &cpu, err, sizeof err), BRAID_OK);
        if (differ(&ref[r], &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL io run %d vs cpu: %s\n", r, err); }
        else check_passed++;
        out_free(&cpu);
        for (int i = 0; i < n_in; i++) free(in[i].data);
    }
    for (int r = 0; r < 4; r++) out_free(&ref[r]);
    setenv("BRAID_CUDA_IO", "bogus", 1);
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(braid_last_error(), "BRAID_CUDA_IO is 'bogus'");
    unsetenv("BRAID_CUDA_IO");
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    expect_zero_live("after the I/O mode sessions");
}

/* ---- 7. BRAID_CUDA_SYNC in process --------------------------------------------------------- */

static void sync_mode(void)
{
    char path[2048], err[1200];
    snprintf(path, sizeof path, "%s/models/gen/inception/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { check_failed++; fprintf(stderr, "FAIL sync: %s\n", braid_last_error()); return; }
    braid_tensor in[MAX_IO], res[MAX_IO];
    int n_in = make_inputs(m, in, 900);
    run_out plain = {0}, synced = {0};
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &plain, err, sizeof err), BRAID_OK);
    setenv("BRAID_CUDA_SYNC", "1", 1);
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &synced, err, sizeof err), BRAID_OK);
    if (differ(&synced, &plain, 0, 0, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL sync run: %s\n", err); }
    else check_passed++;
    /* A graph cannot hold a synchronization: not captured, and said so. */
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    braid_options_set_cuda_graph(o, 1);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    for (int r = 0; s && r < 2; r++) CHECK_EQ_INT(braid_session_run(s, n_in, in, 1, res), BRAID_OK);
    if (s) {
        braid_graph_info gi;
        CHECK_EQ_INT(braid_session_graph_info(s, &gi), BRAID_OK);
        CHECK_EQ_INT(gi.captured, 0);
        CHECK_EQ_INT(gi.failed, 1);
        CHECK_EQ_INT(gi.uncaptured, 2);
        CHECK_CONTAINS(gi.error, "BRAID_CUDA_SYNC");
        CHECK(braid_session_note_count(s) >= 1);
        CHECK_CONTAINS(braid_session_note(s, braid_session_note_count(s) - 1), "CUDA graph not captured");
    }
    unsetenv("BRAID_CUDA_SYNC");
    braid_session_destroy(s);
    braid_options_destroy(o);
    out_free(&plain);
    out_free(&synced);
    for (int i = 0; i < n_in; i++) free(in[i].data);
    braid_model_destroy(m);
    expect_zero_live("after the sync sessions");
}

/* ---- 8. fault reports, in child processes ------------------------------------------------------ */

/* The child: two_conv_add on CUDA (automatic streams) with the fault hook
 * set by the parent; prints the run's status and message. */
static int fault_child(void)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", src_dir());
    braid_model *m = NULL;
    braid_options *o = NULL;
    braid_session *s = NULL;
    if (braid_model_load_file(path, &m)) { printf("CHILD load failed: %s\n", braid_last_error()); return 2; }
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    if (braid_session_create(m, o, &s)) { printf("CHILD create failed: %s\n", braid_last_error()); return 2; }
    braid_tensor in[MAX_IO], res[MAX_IO];
    int n_in = make_inputs(m, in, 1);
    braid_status st = braid_session_run(s, n_in, in, 1, res);
    printf("CHILD status=%d\nCHILD message=%s\n", (int)st, st ? braid_session_error(s) : "");
    fflush(stdout);
    _exit(0); /* the context may be unusable: no teardown */
}

static void fault_reports(const char *self)
{
    char path[2048], cmd[4096], out[8192];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { check_failed++; return; }
    const bd_graph *g = bd_model_graph(m);
    const char *conv = NULL;
    for (int i = 0; i < g->n_nodes && !conv; i++)
        if (!strcmp(g->nodes[i].op_type, "Conv")) conv = g->nodes[i].name;
    if (!conv) { check_failed++; fprintf(stderr, "FAIL faults: two_conv_add has no Conv\n"); braid_model_destroy(m); return; }
    for (int sync = 1; sync >= 0; sync--) {
        snprintf(cmd, sizeof cmd, "BRAID_CUDA_SYNC=%d BRAID_CUDA_TEST_FAULT='%s' '%s' --fault-child 2>&1", sync, conv, self);
        FILE *p = popen(cmd, "r");
        size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[got] = '\0';
        if (p) pclose(p);
        printf("fault child (BRAID_CUDA_SYNC=%d):\n%s", sync, out);
        const char *msg = strstr(out, "CHILD message=");
        CHECK(msg != NULL);
        CHECK(strstr(out, "CHILD status=10") != NULL); /* BRAID_ERR_DEVICE */
        if (!msg) continue;
        msg += strlen("CHILD message=");
        char want[600];
        if (sync) {
            snprintf(want, sizeof want, "node '%s' (Conv) on stream ", conv);
            CHECK(!strncmp(msg, want, strlen(want)));
            CHECK_CONTAINS(msg, "cudnnConvolutionForward: an illegal memory access was encountered");
        } else {
            CHECK(strncmp(msg, "node '", 6) != 0); /* no node is blamed */
            CHECK_CONTAINS(msg, "asynchronous");
            CHECK_CONTAINS(msg, "BRAID_CUDA_SYNC=1");
        }
    }
    braid_model_destroy(m);
}

/* ---- 9. limits ---------------------------------------------------------------------------------- */

static void limits(void)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/models/gen/two_conv_add/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { check_failed++; return; }
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    /* x: 131073 x 16 x 32 x 32 = 2147500032 elements, past 2^31 - 1. The data is
     * never read: the plan is refused first. */
    float dummy[4] = {0};
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 4, .dims = {131073, 16, 32, 32}, .data = dummy}, res;
    if (s) {
        CHECK_EQ_INT(braid_session_run(s, 1, &in, 1, &res), BRAID_ERR_LIMIT);
        CHECK_CONTAINS(braid_session_error(s), "(Conv): the input (131073x16x32x32) has more than the 2147483647");
        printf("limit: %s\n", braid_session_error(s));
        /* The session still runs shapes within the limits. */
        braid_tensor small[MAX_IO];
        int n_in = make_inputs(m, small, 3);
        CHECK_EQ_INT(braid_session_run(s, n_in, small, 1, &res), BRAID_OK);
        for (int i = 0; i < n_in; i++) free(small[i].data);
    }
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    expect_zero_live("after the limit session");
}

/* ---- 10. tuned algorithms --------------------------------------------------------------------- */

static void algo_stats(long *hits, long *misses, int *entries)
{
    *hits = *misses = -1;
    *entries = -1;
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    if (mod && mod->algo_stats) mod->algo_stats(hits, misses, entries);
}

static void tuning(void)
{
    char path[2048], err[1200];
    snprintf(path, sizeof path, "%s/models/gen/wide/model.onnx", src_dir());
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) { check_failed++; return; }
    braid_tensor in[MAX_IO];
    int n_in = make_inputs(m, in, 77);
    run_out cpu = {0}, a = {0}, b = {0}, c = {0}, d = {0};
    long h0, m0, h1, m1;
    int e0, e1;
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, &cpu, err, sizeof err), BRAID_OK);
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &a, err, sizeof err), BRAID_OK);
    algo_stats(&h0, &m0, &e0);
    CHECK(e0 >= 1);
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &b, err, sizeof err), BRAID_OK);
    algo_stats(&h1, &m1, &e1);
    CHECK_EQ_INT(m1, m0); /* a second session of the same shapes looks up, times nothing */
    CHECK(h1 > h0);
    CHECK_EQ_INT(e1, e0);
    printf("tuned algorithms: %d kept, %ld hits, %ld misses\n", e1, h1, m1);
    if (differ(&b, &a, 0, 0, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL tuned runs differ: %s\n", err); }
    if (differ(&a, &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL tuned vs cpu: %s\n", err); }
    /* The heuristic's order (no timing), and no workspace at all. */
    setenv("BRAID_CUDA_TUNE", "0", 1);
    CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CUDA, 0, 0, n_in, in, &c, err, sizeof err), BRAID_OK);
    unsetenv("BRAID_CUDA_TUNE");
    if (differ(&c, &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL untuned vs cpu: %s\n", err); }
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_tensor res[MAX_IO];
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    CHECK_EQ_INT(braid_options_set_cuda_workspace(o, 0), BRAID_OK);
    CHECK_EQ_INT(braid_session_create(m, o, &s), BRAID_OK);
    if (s && braid_session_run(s, n_in, in, 1, res) == BRAID_OK) {
        d.n = 1;
        d.t[0] = res[0];
        if (differ(&d, &cpu, 1e-4, 1e-5, err, sizeof err)) { check_failed++; fprintf(stderr, "FAIL workspace 0 vs cpu: %s\n", err); }
        else check_passed++;
        d.n = 0;
        for (int i = 0; i < braid_session_note_count(s); i++) printf("note (workspace 0): %s\n", braid_session_note(s, i));
    } else {
        check_failed++;
        fprintf(stderr, "FAIL workspace 0: %s\n", s ? braid_session_error(s) : braid_last_error());
    }
    braid_session_destroy(s);
    braid_options_destroy(o);
    out_free(&cpu);
    out_free(&a);
    out_free(&b);
    out_free(&c);
    for (int i = 0; i < n_in; i++) free(in[i].data);
    braid_model_destroy(m);
    expect_zero_live("after the tuning sessions");
}


/* ---- 11. host nodes ---------------------------------------------------------------- */

static void host_nodes(void)
{
    mb b = {0};
    mb_model mm;
    int64_t d23[2] = {2, 3}, d3[1] = {3};
    Onnx__GraphProto *g = mb_graph(&b, "host_nodes");
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 2, d23);
    mb_input(&b, g, "s", BRAID_DTYPE_STRING, 1, d3);
    int64_t one = 1;
    mb_init(&b, g, "idx", BRAID_DTYPE_INT64, 0, NULL, &one, sizeof one);
    static const char *const keys[3] = {"AB", "CD", "EF"};
    mb_init_strings(&b, g, "k", 3, keys);
    mb_node(&b, g, "Relu", "x", "r", "relu");
    mb_node(&b, g, "SequenceConstruct", "x,r", "seq", "construct");
    mb_node(&b, g, "SequenceAt", "seq,idx", "y", "at");
    mb_node(&b, g, "Add", "y,x", "z", "add");
    mb_node(&b, g, "SequenceLength", "seq", "len", "length");
    Onnx__NodeProto *sn = mb_node(&b, g, "StringNormalizer", "s", "su", "normalize");
    Onnx__AttributeProto *a = mb_attr(&b, sn, "case_change_action", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->s.data = (uint8_t *)mb_str(&b, "UPPER");
    a->s.len = 5;
    a->has_s = 1;
    mb_node(&b, g, "Equal", "su,k", "eq", "equal");
    Onnx__NodeProto *cn = mb_node(&b, g, "Cast", "eq", "eqf", "cast");
    mb_attr_i(&b, cn, "to", BRAID_DTYPE_FLOAT);
    mb_node(&b, g, "Mul", "eqf,r", "w", "mul");
    mb_output(&b, g, "z", BRAID_DTYPE_FLOAT, 2, d23);
    mb_output(&b, g, "len", BRAID_DTYPE_INT64, 0, NULL);
    mb_output(&b, g, "su", BRAID_DTYPE_STRING, 1, d3);
    mb_output(&b, g, "w", BRAID_DTYPE_FLOAT, 2, d23);
    mb_model_init(&b, &mm, g, 20);
    braid_model *m = NULL;
    if (mb_load(&b, &mm, &m) != BRAID_OK) {
        check_failed++;
        fprintf(stderr, "FAIL host nodes: the model does not load: %s\n", braid_last_error());
        mb_free(&b);
        return;
    }
    char err[1200];
    for (int graph = 0; graph < 2; graph++)
        for (int r = 0; r < 3; r++) {
            float x[6];
            for (int i = 0; i < 6; i++) x[i] = (float)((i * 7 + r * 3) % 11) - 5.0f;
            const char *sv[3][3] = {{"ab", "cd", "xy"}, {"Ab", "zz", "eF"}, {"", "CD", "ef"}};
            braid_tensor in[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {2, 3}, .data = x},
                                  {.dtype = BRAID_DTYPE_STRING, .rank = 1, .dims = {3}, .data = (void *)sv[r]}};
            run_out cpu = {0}, gpu = {0};
            braid_status sc = run_once(m, BRAID_BACKEND_CPU, 0, 0, 2, in, &cpu, err, sizeof err);
            CHECK_EQ_INT(sc, BRAID_OK);
            braid_status sg = run_once(m, BRAID_BACKEND_CUDA, 0, graph, 2, in, &gpu, err, sizeof err);
            if (sg) {
                check_failed++;
                fprintf(stderr, "FAIL host nodes (graph %d, run %d): cuda failed: %s\n", graph, r, err);
            } else if (!sc && differ(&gpu, &cpu, 0, 0, err, sizeof err)) {
                check_failed++;
                fprintf(stderr, "FAIL host nodes (graph %d, run %d): %s\n", graph, r, err);
            } else {
                check_passed++;
            }
            out_free(&cpu);
            out_free(&gpu);
        }
    /* The plan print: on the host exactly the sequence, string and Equal nodes. */
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    braid_options_set_max_streams(o, 1);
    if (braid_session_create(m, o, &s) == BRAID_OK) {
        float x[6] = {1, -2, 3, -4, 5, -6};
        const char *sv[3] = {"ab", "cd", "ef"};
        braid_tensor in[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {2, 3}, .data = x},
                              {.dtype = BRAID_DTYPE_STRING, .rank = 1, .dims = {3}, .data = (void *)sv}};
        const bd_prepared *p = NULL;
        bd_err e = {0};
        CHECK_EQ_INT(bd_session_plan_run(s, in, &p, &e), BRAID_OK);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f && p) {
            bd_stages_print(f, p, 0);
            fclose(f);
            static const char *const host[] = {"construct", "at", "length", "normalize", "equal"};
            static const char *const dev[] = {"relu", "add", "cast", "mul"};
            char want[128];
            for (int i = 0; i < 5; i++) {
                snprintf(want, sizeof want, "launch %s (on the host:", host[i]);
                CHECK(strstr(text, want) != NULL);
            }
            for (int i = 0; i < 4; i++) {
                snprintf(want, sizeof want, "launch %s\n", dev[i]);
                CHECK(strstr(text, want) != NULL);
            }
        } else {
            check_failed++;
        }
        free(text);
    } else {
        check_failed++;
        fprintf(stderr, "FAIL host nodes: session: %s\n", braid_last_error());
    }
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    mb_free(&b);
}
#endif /* BRAID_HAVE_CUDA */

int main(int argc, char **argv)
{
#ifndef BRAID_HAVE_CUDA
    (void)argc;
    (void)argv;
    printf("SKIPPED: no CUDA device (this braid was built without CUDA)\n");
    return 77;
#else
    if (argc > 1 && !strcmp(argv[1], "--fault-child")) return fault_child();
    char why[256] = "";
    if (!cuda_probe(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 77;
    }
    /* Steps by name: test_cuda_backend [lifecycle io sync faults limits tuning models host nodes]. */
    const char *only = argc > 1 ? argv[1] : NULL;
#define STEP(name) (!only || !strcmp(only, name))
    if (STEP("lifecycle")) lifecycle_and_graph();
    if (STEP("io")) io_modes();
    if (STEP("sync")) sync_mode();
    if (STEP("faults")) {
        char self[1024];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len > 0) {
            self[len] = '\0';
            fault_reports(self);
        } else {
            check_failed++;
            fprintf(stderr, "FAIL faults: cannot read /proc/self/exe\n");
        }
    }
    if (STEP("limits")) limits();
    if (STEP("tuning")) tuning();
    if (STEP("models")) model_tests();
    if (STEP("host")) host_nodes();
    if (STEP("nodes")) node_tests();
#undef STEP
    return check_done();
#endif
}
