/* bench.c: `braid plan` (print a model's plan, per stream, and as Graphviz)
 * and `braid bench` (latency percentiles, then the serial plan against the
 * concurrent plan on the same inputs, as a ratio). */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "backend/backend.h"
#include "cli/cli.h"

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
    bd_stages_print(stdout, p, 0);
    if (st) {
        printf("(the run with these inputs failed, so later stages or nested plans may be missing: %s)\n", e.msg);
        rc = cli_status_exit(st);
        goto done;
    }
    if (o->dot && bd_plan_write_dot(o->dot, &p->sin, &p->plan, &e)) { rc = cli_fail("%s", e.msg); goto done; }
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

/* The serial plan and the plan under test alternate run by run, so that load
 * from elsewhere on the machine falls on both alike. */
int cli_bench(const cli_opts *o)
{
    braid_model *m = NULL;
    braid_session *s = NULL, *serial = NULL;
    braid_tensor ins[CLI_MAX_ARGS], outs[CLI_MAX_ARGS];
    char err[1200];
    int rc = CLI_FAIL, n_in = 0, K = o->iterations;
    double *ms = malloc(sizeof(double) * (size_t)K), *ms1 = malloc(sizeof(double) * (size_t)K);
    braid_status st = braid_model_load_file(o->model, &m);
    if (st) { free(ms); free(ms1); return cli_fail("%s", braid_last_error()), cli_status_exit(st); }
    if (!ms || !ms1) { rc = cli_fail("out of memory"); goto done; }
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
    for (int i = 0; i < o->warmup; i++) {
        if ((st = braid_session_run(s, n_in, ins, n_out, outs))) { cli_fail("%s", braid_session_error(s)); rc = cli_status_exit(st); goto done; }
        if (compare && (st = braid_session_run(serial, n_in, ins, n_out, outs))) { cli_fail("%s", braid_session_error(serial)); rc = cli_status_exit(st); goto done; }
    }
    for (int i = 0; i < K; i++) {
        for (int turn = 0; turn < 2; turn++) { /* the order alternates too */
            int run_serial = (turn ^ (i & 1)) != 0;
            if (run_serial && !compare) continue;
            braid_session *x = run_serial ? serial : s;
            double t0 = bd_now();
            if ((st = braid_session_run(x, n_in, ins, n_out, outs))) { cli_fail("%s", braid_session_error(x)); rc = cli_status_exit(st); goto done; }
            (run_serial ? ms1 : ms)[i] = (bd_now() - t0) * 1e3;
        }
    }
    qsort(ms, (size_t)K, sizeof *ms, cmp_double);
    const char *be = braid_session_backend(s) == BRAID_BACKEND_CUDA ? "cuda" : "cpu";
    printf("model %s, backend %s, streams %s, %d iterations after %d warmup\n", o->model, be,
           o->streams ? "fixed" : "auto", K, o->warmup);
    printf("min %.3f ms\nmedian %.3f ms\np90 %.3f ms\np99 %.3f ms\n", ms[0], pct(ms, K, 0.5), pct(ms, K, 0.9), pct(ms, K, 0.99));
    if (compare) {
        qsort(ms1, (size_t)K, sizeof *ms1, cmp_double);
        double a = pct(ms1, K, 0.5), b = pct(ms, K, 0.5);
        printf("serial plan median %.3f ms (min %.3f), concurrent plan median %.3f ms (min %.3f), run alternately: "
               "concurrent/serial %.3f (speedup %.2fx)\n", a, ms1[0], b, ms[0], b / a, a / b);
    }
    rc = CLI_OK;
done:
    free(ms);
    free(ms1);
    cli_free_tensors(ins, n_in);
    braid_session_destroy(serial);
    braid_session_destroy(s);
    braid_model_destroy(m);
    return rc;
}
