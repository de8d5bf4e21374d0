/* test_cuda_backend.c: the CUDA backend's own behaviour, against the CPU
 * backend where numbers are compared (whole models: test_cuda_models.c).
 * Needs a CUDA device or the emulated one (BRAID_CUDA_EMULATOR=1): without
 * either it prints "SKIPPED: no CUDA device (reason)" and exits 77, which
 * ctest counts as skipped, never as passed. One step per process
 * (test_cuda_backend STEP), or all of them:
 *   probe      only the device: a Relu runs, its device line printed.
 *   lifecycle  several create/run/destroy cycles: the process's live streams,
 *      events, handles, allocations and graphs are zero after each destroy;
 *      streams and handles follow the plan (one for a serial plan); the
 *      device line names the device, cuDNN and cuBLAS; a host-shared input
 *      buffer gives the same outputs as host memory; --cuda-graph: runs with
 *      new input data each time (the first uncaptured, then graph replays)
 *      equal an uncaptured session's outputs, the session holds one graph and
 *      its executable, braid_session_graph_info says captured and counts the
 *      replays. The outputs a run hands back are read on the host: on the
 *      emulated device a device pointer handed out faults at once.
 *   io         the I/O modes (BRAID_CUDA_IO=staged, mapped, managed) run in
 *      the mode asked for (the device line says it) and give the same bytes,
 *      from host memory and from the session's host-shared buffers rewritten
 *      between runs, with and without a CUDA graph.
 *   sync       BRAID_CUDA_SYNC=1: runs give the same outputs; a CUDA graph is
 *      not captured and graph_info and a note say why.
 *   faults     (a child process each, as a fault leaves the context
 *      unusable) BRAID_CUDA_TEST_FAULT makes a Conv fault; under
 *      BRAID_CUDA_SYNC=1 the error names the node, its op, its stream and
 *      cudnnConvolutionForward; without it, the error blames no node and
 *      names BRAID_CUDA_SYNC.
 *   inject     (the emulated device only) each call the backend makes fails in
 *      turn (BRAID_CUDA_EMULATOR_FAIL), in a child each: a clean failure
 *      naming the call, no crash, nothing left alive after the destroy.
 *   limits     an input past cuDNN's 2^31 elements is refused with LIMIT
 *      naming the Conv, before anything is allocated for it.
 *   tuning     tuned cuDNN algorithms are kept process-wide: a second session
 *      of the same shapes times nothing; BRAID_CUDA_TUNE=0 and a zero
 *      workspace run and agree with the CPU.
 *   host       a model whose sequence and string nodes sit between device
 *      kernels gives the CPU's outputs over three runs with new inputs; the
 *      plan print says "on the host" for exactly the host nodes; a CUDA graph
 *      asked for is refused for it (graph_info says so) and the runs agree.
 * Fresh device memory reads as NaN: the emulator's poison, or on a GPU
 * BRAID_CUDA_POISON=1, which this program sets there. On the emulated device the
 * program also checks that the emulator reported nothing. */
#include <stdio.h>
#include <unistd.h>

#include "mbuild.h"
#ifdef BRAID_HAVE_CUDA
#include "cuda_test.h"
#else
#include <stdio.h>
#endif

#ifdef BRAID_HAVE_CUDA
/* ---- 3 and 4. counts and CUDA graphs ---------------------------------------------------- */

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
    if (getenv("BRAID_CUDA_IO")) { /* the mode asked for is the mode that ran */
        char want[64];
        snprintf(want, sizeof want, "I/O %s", getenv("BRAID_CUDA_IO"));
        CHECK_CONTAINS(braid_session_device_info(s), want);
    }
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

/* The child of the inject step: inception on CUDA with a CUDA graph (the
 * call named by BRAID_CUDA_EMULATOR_FAIL fails in it), created, run three
 * times, destroyed; prints each status, and the live objects left. */
static int inject_child(void)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/models/gen/inception/model.onnx", src_dir());
    braid_model *m = NULL;
    braid_options *o = NULL;
    braid_session *s = NULL;
    if (braid_model_load_file(path, &m)) { printf("CHILD load failed: %s\n", braid_last_error()); return 2; }
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    braid_options_set_cuda_graph(o, 1);
    braid_status st = braid_session_create(m, o, &s);
    printf("CHILD create=%d %s\n", (int)st, st ? braid_last_error() : "");
    braid_tensor in[MAX_IO], res[MAX_IO];
    int n_in = make_inputs(m, in, 1);
    for (int r = 0; s && r < 3; r++) {
        st = braid_session_run(s, n_in, in, 1, res);
        printf("CHILD run=%d %s\n", (int)st, st ? braid_session_error(s) : "");
    }
    braid_session_destroy(s);
    bd_cuda_live c;
    cuda_counts(&c);
    printf("CHILD live=%ld %ld %ld %ld %ld %ld\n", c.streams, c.events, c.cudnn, c.cublas, c.allocs, c.graphs);
    fflush(stdout);
    return 0;
}

/* On the emulated device, each call the backend makes fails in turn
 * (BRAID_CUDA_EMULATOR_FAIL), in a child each: the create or the run that
 * hits it fails with a status and a message naming the call, a later run
 * may succeed (or repeat the failure), nothing crashes, and every stream,
 * event, handle, allocation and graph is gone after the destroy. */
static void injected_failures(const char *self)
{
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    if (!mod || !mod->emulated) {
        printf("inject: only on the emulated device (BRAID_CUDA_EMULATOR=1)\n");
        return;
    }
    static const char *const calls[] = {"cudaMalloc", "cudaHostAlloc", "cudaStreamCreateWithFlags",
                                        "cudaEventCreateWithFlags", "cudnnCreate", "cublasCreate_v2",
                                        "cudaMemcpyAsync", "cudaLaunchKernel", "cudnnConvolutionForward",
                                        "cudaStreamBeginCapture", "cudaGraphInstantiateWithFlags"};
    char cmd[4096], out[16384];
    int hits = 0;
    for (size_t c = 0; c < sizeof calls / sizeof *calls; c++)
        for (int nth = 1; nth <= 3; nth++) {
            snprintf(cmd, sizeof cmd, "BRAID_CUDA_EMULATOR_FAIL=%s:%d '%s' --inject-child 2>&1", calls[c], nth, self);
            FILE *p = popen(cmd, "r");
            size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
            out[got] = '\0';
            int rc = p ? pclose(p) : -1;
            const char *live = strstr(out, "CHILD live=");
            int ok = rc == 0 && live && !strncmp(live, "CHILD live=0 0 0 0 0 0", 22);
            int failed = strstr(out, "CHILD create=0") == NULL || strstr(out, "CHILD run=1") || strstr(out, "CHILD run=8") ||
                         strstr(out, "CHILD run=10");
            hits += failed;
            /* a failure names what failed (the call, or a refused graph capture, which is not an error) */
            if (failed && !strstr(out, calls[c]) && !strstr(out, "out of memory") && !strstr(out, "cannot allocate")) ok = 0;
            if (!ok) {
                check_failed++;
                fprintf(stderr, "FAIL inject %s:%d (exit %d):\n%s\n", calls[c], nth, rc, out);
            } else {
                check_passed++;
            }
        }
    printf("inject: %zu calls failed at their 1st, 2nd and 3rd use, %d of those runs failed cleanly\n",
           sizeof calls / sizeof *calls, hits);
    CHECK(hits >= 10); /* the failures reached the backend */
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
    /* The Conv's own test hook (a bad address handed to cuDNN), then, on the
     * emulated device, its fault switch (the node's first kernel or library
     * call faults as it runs). */
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    int kinds = mod && mod->emulated ? 2 : 1;
    for (int kind = 0; kind < kinds; kind++)
    for (int sync = 1; sync >= 0; sync--) {
        snprintf(cmd, sizeof cmd, "BRAID_CUDA_SYNC=%d %s='%s%s' '%s' --fault-child 2>&1", sync,
                 kind ? "BRAID_CUDA_EMULATOR_FAULT" : "BRAID_CUDA_TEST_FAULT", kind ? "node:" : "", conv, self);
        FILE *p = popen(cmd, "r");
        size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
        out[got] = '\0';
        if (p) pclose(p);
        printf("fault child (%s, BRAID_CUDA_SYNC=%d):\n%s", kind ? "emulator's switch" : "test hook", sync, out);
        const char *msg = strstr(out, "CHILD message=");
        CHECK(msg != NULL);
        CHECK(strstr(out, "CHILD status=10") != NULL); /* BRAID_ERR_DEVICE */
        if (!msg) continue;
        msg += strlen("CHILD message=");
        char want[600];
        if (sync) {
            snprintf(want, sizeof want, "node '%s' (Conv) on stream ", conv);
            CHECK(!strncmp(msg, want, strlen(want)));
            CHECK_CONTAINS(msg, "an illegal memory access was encountered");
            if (!kind) CHECK_CONTAINS(msg, "cudnnConvolutionForward: an illegal memory access was encountered");
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
    /* A CUDA graph asked for: refused (host nodes synchronize), said so, and
     * the runs go node by node. */
    {
        float x[6] = {1, -2, 3, -4, 5, -6};
        const char *sv[3] = {"ab", "cd", "ef"};
        braid_tensor in[2] = {{.dtype = BRAID_DTYPE_FLOAT, .rank = 2, .dims = {2, 3}, .data = x},
                              {.dtype = BRAID_DTYPE_STRING, .rank = 1, .dims = {3}, .data = (void *)sv}};
        braid_tensor res[4];
        braid_session *gs = open_session(m, BRAID_BACKEND_CUDA, 0, 1, err, sizeof err);
        CHECK(gs != NULL);
        for (int r = 0; gs && r < 3; r++) CHECK_EQ_INT(braid_session_run(gs, 2, in, 4, res), BRAID_OK);
        braid_graph_info gi;
        if (gs && braid_session_graph_info(gs, &gi) == BRAID_OK) {
            CHECK_EQ_INT(gi.requested, 1);
            CHECK_EQ_INT(gi.captured, 0);
            CHECK_EQ_INT(gi.failed, 1);
            CHECK_EQ_INT(gi.replays, 0);
            CHECK_EQ_INT(gi.uncaptured, 3);
            CHECK_CONTAINS(gi.error, "cannot be captured in a CUDA graph");
            printf("host nodes, graph refused: %s\n", gi.error);
        } else {
            check_failed++;
        }
        braid_session_destroy(gs);
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

/* The device answers and a session runs a Relu on it: its line printed. */
static int probe_device(void)
{
    mb b = {0};
    mb_model mm;
    int64_t d[3] = {2, 3, 4};
    Onnx__GraphProto *g = mb_graph(&b, "probe");
    mb_input(&b, g, "x", BRAID_DTYPE_FLOAT, 3, d);
    mb_node(&b, g, "Relu", "x", "y", "relu");
    mb_output(&b, g, "y", BRAID_DTYPE_FLOAT, 3, d);
    mb_model_init(&b, &mm, g, 13);
    braid_model *m = NULL;
    braid_options *o = NULL;
    braid_session *s = NULL;
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i - 12.0f;
    braid_tensor in = {.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {2, 3, 4}, .data = x}, out = {0};
    int rc = 1;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CUDA);
    if (mb_load(&b, &mm, &m) || braid_session_create(m, o, &s) || braid_session_run(s, 1, &in, 1, &out)) {
        printf("probe: %s\n", s ? braid_session_error(s) : braid_last_error());
        goto done;
    }
    rc = 0;
    for (int i = 0; i < 24; i++) rc |= ((float *)out.data)[i] != (x[i] > 0 ? x[i] : 0.0f);
    printf("device: %s\n%s\n", braid_session_device_info(s), rc ? "probe: Relu gave wrong numbers" : "probe: Relu ran");
done:
    braid_session_destroy(s);
    braid_options_destroy(o);
    braid_model_destroy(m);
    mb_free(&b);
    return rc;
}

int main(int argc, char **argv)
{
#ifndef BRAID_HAVE_CUDA
    (void)argc;
    (void)argv;
    printf("SKIPPED: no CUDA device (this braid was built without CUDA)\n");
    return 77;
#else
    if (argc > 1 && !strcmp(argv[1], "--fault-child")) return fault_child();
    if (argc > 1 && !strcmp(argv[1], "--inject-child")) return inject_child();
    char why[256] = "";
    if (!cuda_probe(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 77;
    }
    poison_fresh_memory();
    const char *only = argc > 1 ? argv[1] : NULL;
    if (only && !strcmp(only, "probe")) return probe_device();
    static const char *const steps[] = {"lifecycle", "io", "sync", "faults", "inject", "limits", "tuning", "host"};
    int known = !only;
    for (int i = 0; i < 8; i++) known |= only && !strcmp(only, steps[i]);
    if (!known) {
        fprintf(stderr, "usage: test_cuda_backend [probe|lifecycle|io|sync|faults|inject|limits|tuning|host]\n");
        return 2;
    }
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
    if (STEP("inject")) {
        char self[1024];
        ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
        if (len > 0) {
            self[len] = '\0';
            injected_failures(self);
        }
    }
    if (STEP("limits")) limits();
    if (STEP("tuning")) tuning();
    if (STEP("host")) host_nodes();
#undef STEP
    expect_no_reports();
    return check_done();
#endif
}
