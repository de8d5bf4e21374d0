/* bench.c: `braid plan` (print a model's plan, per stream, and as Graphviz)
 * and `braid bench` (latency percentiles, then the serial plan against the
 * concurrent plan on the same inputs, as a ratio). Both say the device and
 * library versions, the bytes the plan moves against the device's memory
 * bandwidth, what became of a CUDA graph, and the session's notes. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "backend/backend.h"
#include "backend/cpu/sgemm.h"
#include "backend/cuda_logic.h"
#include "cli/cli.h"

/* "traffic: X MiB (...); physical limit Y ms at Z GB/s" for the plan s runs
 * on these inputs: the time the device needs just to move its bytes. */
static void print_traffic(FILE *f, braid_session *s, const braid_tensor *ins, const char *label)
{
    const bd_prepared *p = NULL;
    bd_err e = {0};
    if (bd_session_plan(s, ins, &p, &e) != BRAID_OK) return;
    double bytes = bd_plan_traffic_bytes(p), bw = bd_session_mem_bandwidth(s);
    fprintf(f, "traffic%s: %.2f MiB if every node reads its inputs and writes its outputs once", label,
            bytes / 1048576.0);
    if (bw > 0) fprintf(f, "; physical limit %.6f ms at the device's %.0f GB/s", bytes / bw * 1e3, bw / 1e9);
    fprintf(f, "\n");
}

/* Prints the plan a run would use: made through a session, so the backend's
 * choices (its automatic stream count) are the run's. */
int cli_plan(const cli_opts *o)
{
    braid_model *m = NULL;
    braid_session *s = NULL;
    braid_tensor ins[CLI_MAX_ARGS];
    const bd_prepared *p = NULL;
    bd_err e = {0};
    char err[1200];
    int rc = CLI_FAIL, n_in = 0;
    braid_status st = braid_model_load_file(o->model, &m);
    if (st) return cli_fail("%s", braid_last_error()), cli_status_exit(st);
    n_in = braid_model_input_count(m);
    if (n_in > CLI_MAX_ARGS) { n_in = 0; rc = cli_fail("too many inputs"); goto done; }
    if (cli_make_inputs(o, m, ins, err, sizeof err)) { n_in = 0; rc = cli_fail("%s", err); goto done; }
    if ((st = cli_session(o, m, o->streams, &s))) { cli_fail("%s", braid_last_error()); rc = cli_status_exit(st); goto done; }
    /* One run first: later stages and the nested plans of control-flow
     * nodes are made when the values they depend on exist. */
    st = bd_session_plan_run(s, ins, &p, &e);
    if (!p) { cli_fail("%s", e.msg); rc = cli_status_exit(st); goto done; }
    printf("backend %s\n", braid_session_backend(s) == BRAID_BACKEND_CUDA ? "cuda" : "cpu");
    cli_print_device(stdout, s, "");
    bd_stages_print(stdout, p, 0);
    if (st) {
        printf("(the run with these inputs failed, so later stages or nested plans may be missing: %s)\n", e.msg);
        rc = cli_status_exit(st);
        goto done;
    }
    print_traffic(stdout, s, ins, "");
    if (o->dot && bd_plan_write_dot(o->dot, &p->sin, &p->plan, &e)) { rc = cli_fail("%s", e.msg); goto done; }
    if (o->cuda_graph && braid_session_backend(s) == BRAID_BACKEND_CUDA) {
        /* A plan is captured at the end of its first run: one run says whether capturing works. */
        braid_tensor outs[CLI_MAX_ARGS];
        int n_out = braid_model_output_count(m);
        if (n_out > CLI_MAX_ARGS) n_out = CLI_MAX_ARGS;
        if ((st = braid_session_run(s, n_in, ins, n_out, outs))) {
            cli_print_notes(stdout, s, "");
            rc = cli_fail("%s", braid_session_error(s));
            goto done;
        }
        cli_print_graph(stdout, s, "");
    }
    cli_print_notes(stdout, s, "");
    rc = CLI_OK;
done:
    cli_free_tensors(ins, n_in);
    braid_session_destroy(s);
    braid_model_destroy(m);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *ms, int n, double q)
{
    int i = (int)(q * (n - 1) + 0.5);
    return ms[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* --io-buffers: the session's host-shared input buffers, one per input, and
 * the inputs that point at them. */
static braid_status io_buffers(braid_session *s, int n_in, const braid_tensor *ins, braid_tensor *bins)
{
    for (int i = 0; i < n_in; i++) {
        bins[i] = ins[i];
        braid_status st = braid_session_input_buffer(s, i, &ins[i], &bins[i].data);
        if (st) return st;
    }
    return BRAID_OK;
}

static size_t tensor_bytes(const braid_tensor *t)
{
    bd_tensor b = {.dtype = t->dtype, .rank = t->rank};
    memcpy(b.dims, t->dims, sizeof b.dims);
    size_t nb = 0;
    bd_err e = {0};
    return bd_tensor_nbytes(&b, &nb, &e) == BRAID_OK ? nb : 0;
}

static volatile uint64_t g_sink; /* keeps the output reads */

/* One run as a caller of host-shared buffers makes it: the inputs written
 * into the buffers, the run, every output byte read. *run_ms: the run alone. */
static braid_status io_cycle(braid_session *s, int n_in, const braid_tensor *ins, const braid_tensor *bins,
                             int n_out, braid_tensor *outs, double *run_ms)
{
    for (int i = 0; i < n_in; i++) memcpy(bins[i].data, ins[i].data, tensor_bytes(&ins[i]));
    double t0 = bd_now();
    braid_status st = braid_session_run(s, n_in, bins, n_out, outs);
    *run_ms = (bd_now() - t0) * 1e3;
    for (int o = 0; !st && o < n_out; o++) {
        const unsigned char *b = outs[o].data;
        size_t nb = tensor_bytes(&outs[o]);
        uint64_t acc = 0;
        for (size_t k = 0; k < nb; k++) acc += b[k];
        g_sink += acc;
    }
    return st;
}

/* The serial plan and the plan under test alternate run by run, so that load
 * from elsewhere on the machine falls on both alike. */
int cli_bench(const cli_opts *o)
{
    braid_model *m = NULL;
    braid_session *s = NULL, *serial = NULL;
    braid_tensor ins[CLI_MAX_ARGS], outs[CLI_MAX_ARGS], bins[CLI_MAX_ARGS], bins1[CLI_MAX_ARGS];
    char err[1200];
    int rc = CLI_FAIL, n_in = 0, K = o->iterations;
    double run_ms = 0;
    double *ms = malloc(sizeof(double) * (size_t)K), *ms1 = malloc(sizeof(double) * (size_t)K);
    double *msr = malloc(sizeof(double) * (size_t)K), *msr1 = malloc(sizeof(double) * (size_t)K);
    braid_status st = braid_model_load_file(o->model, &m);
    if (st) { free(ms); free(ms1); free(msr); free(msr1); return cli_fail("%s", braid_last_error()), cli_status_exit(st); }
    if (!ms || !ms1 || !msr || !msr1) { rc = cli_fail("out of memory"); goto done; }
    n_in = braid_model_input_count(m);
    int n_out = braid_model_output_count(m);
    if (n_in > CLI_MAX_ARGS || n_out > CLI_MAX_ARGS) { n_in = 0; rc = cli_fail("too many inputs or outputs"); goto done; }
    if (cli_make_inputs(o, m, ins, err, sizeof err)) { n_in = 0; rc = cli_fail("%s", err); goto done; }
    if ((st = cli_session(o, m, o->streams, &s))) { cli_fail("%s", braid_last_error()); rc = cli_status_exit(st); goto done; }
    int compare = o->streams != 1;
    if (compare) {
        cli_opts o1 = *o;
        o1.profile = NULL;
        if ((st = cli_session(&o1, m, 1, &serial))) { cli_fail("%s", braid_last_error()); rc = cli_status_exit(st); goto done; }
    }
    if (o->io_buffers) {
        for (int k = 0; k < (compare ? 2 : 1); k++) {
            braid_session *x = k ? serial : s;
            if ((st = io_buffers(x, n_in, ins, k ? bins1 : bins))) {
                cli_fail("braid_session_input_buffer: %s", braid_session_error(x));
                rc = cli_status_exit(st);
                goto done;
            }
        }
    }
    for (int i = 0; i < o->warmup + K; i++) {
        for (int turn = 0; turn < 2; turn++) { /* the order alternates too */
            int run_serial = (turn ^ (i & 1)) != 0;
            if (run_serial && !compare) continue;
            braid_session *x = run_serial ? serial : s;
            double t0 = bd_now();
            if (o->io_buffers) st = io_cycle(x, n_in, ins, run_serial ? bins1 : bins, n_out, outs, &run_ms);
            else st = braid_session_run(x, n_in, ins, n_out, outs);
            if (st) { cli_print_notes(stderr, x, "braid: "); cli_fail("%s", braid_session_error(x)); rc = cli_status_exit(st); goto done; }
            if (i < o->warmup) continue;
            (run_serial ? ms1 : ms)[i - o->warmup] = (bd_now() - t0) * 1e3;
            (run_serial ? msr1 : msr)[i - o->warmup] = o->io_buffers ? run_ms : 0;
        }
    }
    qsort(ms, (size_t)K, sizeof *ms, cmp_double);
    const char *be = braid_session_backend(s) == BRAID_BACKEND_CUDA ? "cuda" : "cpu";
    printf("model %s, backend %s, streams %s, %d iterations after %d warmup%s\n", o->model, be,
           o->streams ? "fixed" : "auto", K, o->warmup,
           o->io_buffers ? " (--io-buffers: each timed run writes the inputs into the session's buffers, runs, "
                           "reads every output byte)" : "");
    cli_print_device(stdout, s, "");
    if (braid_session_backend(s) == BRAID_BACKEND_CPU) printf("gemm: %s\n", bd_sgemm_kernel_desc());
    printf("min %.3f ms\nmedian %.3f ms\np90 %.3f ms\np99 %.3f ms\n", ms[0], pct(ms, K, 0.5), pct(ms, K, 0.9), pct(ms, K, 0.99));
    if (o->io_buffers) {
        qsort(msr, (size_t)K, sizeof *msr, cmp_double);
        printf("io-buffers: run alone median %.3f ms (min %.3f); write+run+read median %.3f ms (min %.3f)\n",
               pct(msr, K, 0.5), msr[0], pct(ms, K, 0.5), ms[0]);
    }
    if (compare) {
        qsort(ms1, (size_t)K, sizeof *ms1, cmp_double);
        double a = pct(ms1, K, 0.5), b = pct(ms, K, 0.5);
        printf("serial plan median %.3f ms (min %.3f), concurrent plan median %.3f ms (min %.3f), run alternately: "
               "concurrent/serial %.3f (speedup %.2fx)\n", a, ms1[0], b, ms[0], b / a, a / b);
    }
    print_traffic(stdout, s, ins, compare ? " (concurrent plan)" : "");
    if (compare) print_traffic(stdout, serial, ins, " (serial plan)");
    if (o->cuda_graph) {
        cli_print_graph(stdout, s, compare ? "concurrent plan: " : "");
        if (compare) cli_print_graph(stdout, serial, "serial plan: ");
    }
    cli_print_notes(stdout, s, compare ? "concurrent plan: " : "");
    if (compare) cli_print_notes(stdout, serial, "serial plan: ");
    rc = CLI_OK;
done:
    free(ms);
    free(ms1);
    free(msr);
    free(msr1);
    cli_free_tensors(ins, n_in);
    braid_session_destroy(serial);
    braid_session_destroy(s);
    braid_model_destroy(m);
    return rc;
}
