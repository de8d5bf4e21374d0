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
 *    session holds one graph and its executable. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"

#include "braid.h"
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
    for (int i = 0; i < o->n; i++) free(o->t[i].data);
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
    int ran = 0, same = 0, unsupported = 0, cpu_skip = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, "test_", 5)) continue;
        braid_model *m = NULL;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, de->d_name);
        if (braid_model_load_file(path, &m)) { cpu_skip++; continue; }
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
    printf("node tests: %d run on both, %d equal, %d unsupported on cuda, %d not run by the cpu\n", ran, same,
           unsupported, cpu_skip);
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
    braid_session_destroy(s);
    braid_options_destroy(o);
    expect_zero_live("after the graph session was destroyed");
    braid_model_destroy(m);
}

#endif /* BRAID_HAVE_CUDA */

int main(void)
{
#ifndef BRAID_HAVE_CUDA
    printf("SKIPPED: no CUDA device (this braid was built without CUDA)\n");
    return 77;
#else
    char why[256] = "";
    if (!cuda_probe(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 77;
    }
    lifecycle_and_graph();
    model_tests();
    node_tests();
    return check_done();
#endif
}
