/* bench.c: `braid plan` (print a model's plan, per stream, and as Graphviz)
 * and `braid bench` (latency percentiles, then the serial plan against the
 * concurrent plan on the same inputs, as a ratio, host to host and, on a
 * device, in device time). Both say the device and library versions, the
 * bytes the plan moves against the device's memory bandwidth, what became of
 * a CUDA graph, and the session's notes. */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "backend/backend.h"
#include "backend/cpu/sgemm.h"
#include "backend/cuda/common/limits.h"
#include "cli/cli.h"
#include "ops/ops.h"

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

/* The plan's arithmetic as braid's cost model counts it (bd_op_cost: 2 per
 * multiply-add in Conv and Gemm, about one per element elsewhere). */
static double plan_flops(const bd_prepared *p)
{
    double total = 0;
    for (int i = 0; i < p->n_live; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        bd_tensor *in = bd_calloc((size_t)n->n_in + 1, sizeof *in), *out = bd_calloc((size_t)n->n_out + 1, sizeof *out);
        if (in && out) {
            for (int k = 0; k < n->n_in; k++) {
                if (n->in[k] >= 0) in[k] = p->inst.vals[n->in[k]];
                else in[k].rank = -1;
            }
            for (int k = 0; k < n->n_out; k++) {
                if (n->out[k] >= 0) out[k] = p->inst.vals[n->out[k]];
                else out[k].rank = -1;
            }
            total += bd_op_cost(n, in, out);
        }
        bd_free(in);
        bd_free(out);
    }
    return total;
}

/* What bounds a run of the plan s uses: its streams and events, its
 * arithmetic, and the bytes it moves (print_traffic). */
static void print_plan_figures(FILE *f, braid_session *s, const braid_tensor *ins, const char *label)
{
    const bd_prepared *p = NULL;
    bd_err e = {0};
    if (bd_session_plan(s, ins, &p, &e) != BRAID_OK) return;
    fprintf(f, "plan%s: streams %d, events %d, nodes %d\n", label, p->plan.n_streams, p->plan.n_events, p->n_live);
    fprintf(f, "work%s: %.4f GFLOP as braid's cost model counts it (2 per multiply-add in Conv and Gemm)\n", label,
            plan_flops(p) / 1e9);
    print_traffic(f, s, ins, label);
}

/* One form of the model's plan that bench times, and its timings (ms, one
 * per timed run). */
typedef struct bench_form {
    const char *label; /* "serial plan", "concurrent plan" */
    braid_session *s;  /* NULL: the form is not timed */
    braid_tensor bins[CLI_MAX_ARGS]; /* --io-buffers: the session's input buffers */
    double *ms;        /* the whole run, host to host */
    double *run_ms;    /* --io-buffers: the run alone */
    double *dev_ms;    /* the run's device time; < 0: none (no device) */
} bench_form;

/* The forms' slots: the plan asked for, the serial plan it is compared with
 * (empty when the plan asked for is serial), and, with --cuda-graph on CUDA,
 * the same two run node by node. */
enum { F_ASKED, F_SERIAL, F_ASKED_NODES, F_SERIAL_NODES, BENCH_FORMS };

static void form_free(bench_form *f)
{
    braid_session_destroy(f->s);
    free(f->ms);
    free(f->run_ms);
    free(f->dev_ms);
}

/* Makes the forms, all in this process, so that every form of a
 * convolution shape runs the same tuned cuDNN algorithm (the choice is
 * cached process-wide, cuda/common/algo.h), whichever form tuned it. */
static braid_status make_forms(const cli_opts *o, const braid_model *m, int K, bench_form *f)
{
    cli_opts asked = *o, plain = *o;
    plain.cuda_graph = 0;
    plain.profile = NULL;
    for (int k = 0; k < BENCH_FORMS; k++) {
        int serial = k == F_SERIAL || k == F_SERIAL_NODES;
        if (serial && o->streams == 1) continue;
        if (k >= F_ASKED_NODES && !(o->cuda_graph && braid_session_backend(f[F_ASKED].s) == BRAID_BACKEND_CUDA))
            break;
        if (k == F_SERIAL) asked.profile = NULL; /* one profile: the plan asked for */
        bench_form *x = &f[k];
        x->label = serial || o->streams == 1 ? "serial plan" : "concurrent plan";
        x->ms = malloc(sizeof(double) * (size_t)K);
        x->run_ms = malloc(sizeof(double) * (size_t)K);
        x->dev_ms = malloc(sizeof(double) * (size_t)K);
        if (!x->ms || !x->run_ms || !x->dev_ms) return BRAID_ERR_OUT_OF_MEMORY;
        braid_status st = cli_session(k < F_ASKED_NODES ? &asked : &plain, m, serial ? 1 : o->streams, &x->s);
        if (st) return st;
    }
    return BRAID_OK;
}

/* "serial plan median A ms (min a), concurrent plan median B ms (min b), run
 * alternately: ..." for a pair of forms, or "median A ms (min a)" for one,
 * host to host or in device time; sorts those timings. */
static void print_pair(FILE *f, const char *prefix, bench_form *serial, bench_form *conc, int dev, int K)
{
    bench_form *x[2] = {serial, conc};
    double med[2] = {0, 0};
    fprintf(f, "%s", prefix);
    for (int k = 0; k < 2; k++) {
        if (!x[k]) continue;
        double *v = dev ? x[k]->dev_ms : x[k]->ms;
        qsort(v, (size_t)K, sizeof *v, cmp_double);
        med[k] = pct(v, K, 0.5);
        if (serial) fprintf(f, "%s%s ", k ? ", " : "", x[k]->label);
        fprintf(f, "median %.3f ms (min %.3f)", med[k], v[0]);
    }
    if (serial)
        fprintf(f, ", run alternately: concurrent/serial %.3f (speedup %.2fx)", med[1] / med[0], med[0] / med[1]);
    fprintf(f, "\n");
}

/* Whether every timed run of every form has a device time. */
static int have_device_time(const bench_form *f, int K)
{
    for (int k = 0; k < BENCH_FORMS; k++)
        for (int i = 0; f[k].s && i < K; i++)
            if (f[k].dev_ms[i] < 0) return 0;
    return 1;
}

/* The timings: each pair of forms (the plan asked for against the serial
 * plan) host to host, then in device time; the node-by-node pair after the
 * captured one. The plan asked for alone has its percentiles instead. */
static void print_timings(FILE *f, bench_form *fm, int K)
{
    int dev = have_device_time(fm, K);
    for (int g = 0; g < 2; g++) {
        bench_form *conc = &fm[2 * g], *ser = fm[2 * g + 1].s ? &fm[2 * g + 1] : NULL;
        if (!conc->s) continue;
        const char *pre = g ? "node by node: " : "";
        char dpre[80];
        snprintf(dpre, sizeof dpre, "%sdevice time (inputs and outputs on the device): ", pre);
        if (ser || g) print_pair(f, pre, ser, conc, 0, K);
        if (dev) print_pair(f, dpre, ser, conc, 1, K);
    }
}

/* The bytes a run moves between host memory and the device: what bounds a
 * host-to-host time besides the device's own work. */
static void print_host_bytes(FILE *f, int n_in, const braid_tensor *ins, int n_out, const braid_tensor *outs)
{
    double in = 0, out = 0;
    for (int i = 0; i < n_in; i++) in += (double)tensor_bytes(&ins[i]);
    for (int o = 0; o < n_out; o++) out += (double)tensor_bytes(&outs[o]);
    fprintf(f, "host transfers: inputs %.3f MiB, outputs %.3f MiB a run\n", in / 1048576.0, out / 1048576.0);
}

/* The forms run in turn, run by run, the order rotating, so that load from
 * elsewhere on the machine falls on all alike. */
int cli_bench(const cli_opts *o)
{
    braid_model *m = NULL;
    bench_form fm[BENCH_FORMS];
    braid_tensor ins[CLI_MAX_ARGS], outs[CLI_MAX_ARGS];
    char err[1200];
    int rc = CLI_FAIL, n_in = 0, n_out = 0, K = o->iterations, act[BENCH_FORMS], n_act = 0;
    double run_ms = 0;
    memset(fm, 0, sizeof fm);
    braid_status st = braid_model_load_file(o->model, &m);
    if (st) return cli_fail("%s", braid_last_error()), cli_status_exit(st);
    n_in = braid_model_input_count(m);
    n_out = braid_model_output_count(m);
    if (n_in > CLI_MAX_ARGS || n_out > CLI_MAX_ARGS) { n_in = 0; rc = cli_fail("too many inputs or outputs"); goto done; }
    if (cli_make_inputs(o, m, ins, err, sizeof err)) { n_in = 0; rc = cli_fail("%s", err); goto done; }
    if ((st = make_forms(o, m, K, fm))) {
        cli_fail("%s", st == BRAID_ERR_OUT_OF_MEMORY ? "out of memory" : braid_last_error());
        rc = cli_status_exit(st);
        goto done;
    }
    for (int k = 0; k < BENCH_FORMS; k++) {
        if (!fm[k].s) continue;
        act[n_act++] = k;
        if (o->io_buffers && (st = io_buffers(fm[k].s, n_in, ins, fm[k].bins))) {
            cli_fail("braid_session_input_buffer: %s", braid_session_error(fm[k].s));
            rc = cli_status_exit(st);
            goto done;
        }
    }
    for (int i = 0; i < o->warmup + K; i++) {
        for (int turn = 0; turn < n_act; turn++) {
            bench_form *x = &fm[act[(turn + i) % n_act]];
            double t0 = bd_now();
            if (o->io_buffers) st = io_cycle(x->s, n_in, ins, x->bins, n_out, outs, &run_ms);
            else st = braid_session_run(x->s, n_in, ins, n_out, outs);
            double ms = (bd_now() - t0) * 1e3;
            if (st) { cli_print_notes(stderr, x->s, "braid: "); cli_fail("%s", braid_session_error(x->s)); rc = cli_status_exit(st); goto done; }
            if (i < o->warmup) continue;
            x->ms[i - o->warmup] = ms;
            x->run_ms[i - o->warmup] = o->io_buffers ? run_ms : 0;
            x->dev_ms[i - o->warmup] = bd_session_device_ms(x->s);
        }
    }
    braid_session *s = fm[F_ASKED].s, *serial = fm[F_SERIAL].s;
    int cuda = braid_session_backend(s) == BRAID_BACKEND_CUDA;
    double *ms = fm[F_ASKED].ms;
    qsort(ms, (size_t)K, sizeof *ms, cmp_double);
    printf("model %s, backend %s, streams %s, %d iterations after %d warmup%s%s\n", o->model, cuda ? "cuda" : "cpu",
           o->streams ? "fixed" : "auto", K, o->warmup, fm[F_ASKED_NODES].s ? ", each form also node by node" : "",
           o->io_buffers ? " (--io-buffers: each timed run writes the inputs into the session's buffers, runs, "
                           "reads every output byte)" : "");
    cli_print_device(stdout, s, "");
    if (!cuda) printf("gemm: %s\n", bd_sgemm_kernel_desc());
    printf("min %.3f ms\nmedian %.3f ms\np90 %.3f ms\np99 %.3f ms\n", ms[0], pct(ms, K, 0.5), pct(ms, K, 0.9), pct(ms, K, 0.99));
    if (o->io_buffers) {
        double *r = fm[F_ASKED].run_ms;
        qsort(r, (size_t)K, sizeof *r, cmp_double);
        printf("io-buffers: run alone median %.3f ms (min %.3f); write+run+read median %.3f ms (min %.3f)\n",
               pct(r, K, 0.5), r[0], pct(ms, K, 0.5), ms[0]);
    }
    print_timings(stdout, fm, K);
    print_plan_figures(stdout, s, ins, serial ? " (concurrent plan)" : "");
    if (serial) print_plan_figures(stdout, serial, ins, " (serial plan)");
    if (cuda) print_host_bytes(stdout, n_in, ins, n_out, outs);
    if (o->cuda_graph) {
        cli_print_graph(stdout, s, serial ? "concurrent plan: " : "");
        if (serial) cli_print_graph(stdout, serial, "serial plan: ");
    }
    cli_print_notes(stdout, s, serial ? "concurrent plan: " : "");
    if (serial) cli_print_notes(stdout, serial, "serial plan: ");
    rc = CLI_OK;
done:
    for (int k = BENCH_FORMS - 1; k >= 0; k--) form_free(&fm[k]);
    cli_free_tensors(ins, n_in);
    braid_model_destroy(m);
    return rc;
}
