/* main.c: the braid command: parses options and dispatches to run, info,
 * check, plan and bench. Exit 0 on success, 1 on failure, 2 on bad usage,
 * 3 when the model needs something braid does not support. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: braid COMMAND [options]\n"
    "  run MODEL [--input NAME=FILE]... [--shape NAME=1x3x640x640]... [--output-dir DIR] [--profile FILE.json]\n"
    "  info MODEL\n"
    "  check DIR            (an ONNX test case: model.onnx + test_data_set_N)\n"
    "  plan MODEL [--shape ...] [--dot FILE]\n"
    "  bench MODEL [--shape ...] [--iterations K] [--warmup W] [--profile FILE.json]\n"
    "options for run, check, plan and bench:\n"
    "  --backend cpu|cuda|auto   (default auto: CUDA when a device answers)\n"
    "  --streams N               (0 = automatic, 1 = serial)\n"
    "  --threads N               (0 = all cores)\n"
    "  --cuda-graph              (capture the run once as a CUDA graph)\n"
    "  --tf32                    (let cuBLAS/cuDNN use TF32 for fp32 work)\n"
    "  --no-fold                 (keep every Add apart from the Conv that feeds it)\n"
    "  --layout auto|nchw        (CPU: NHWC convolutions where the plan finds it pays (auto, the\n"
    "                            default), or every value NCHW)\n"
    "  --cuda-workspace MB       (cuDNN workspace per stream; default 64)\n"
    "  --io-buffers              (bench: write inputs into the session's host-shared buffers, read outputs)\n"
    "  --loop-limit N            (most iterations of one Loop node; default 2^24)\n"
    "  --atol A --rtol R         (check: tolerances instead of the test case's)\n";

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "braid: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return CLI_FAIL;
}

int cli_status_exit(braid_status st)
{
    return st == BRAID_OK ? CLI_OK : st == BRAID_ERR_UNSUPPORTED ? CLI_UNSUPPORTED : CLI_FAIL;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    cli_opts o = {.backend = BRAID_BACKEND_AUTO, .iterations = 50, .warmup = 5, .cuda_workspace = -1};
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) { printf("braid %s\n", braid_version()); return CLI_OK; }
    const char *cmd = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        if (!strcmp(a, "--cuda-graph")) { o.cuda_graph = 1; takes = 0; }
        else if (!strcmp(a, "--tf32")) { o.tf32 = 1; takes = 0; }
        else if (!strcmp(a, "--no-fold")) { o.no_fold = 1; takes = 0; }
        else if (!strcmp(a, "--layout") && v && !strcmp(v, "nchw")) o.no_layout = 1;
        else if (!strcmp(a, "--layout") && v && !strcmp(v, "auto")) o.no_layout = 0;
        else if (!strcmp(a, "--layout")) { fprintf(stderr, "braid: --layout takes auto or nchw\n%s", usage); return CLI_USAGE; }
        else if (!strcmp(a, "--io-buffers")) { o.io_buffers = 1; takes = 0; }
        else if (a[0] == '-' && a[1] == '-' && !v) { fprintf(stderr, "braid: %s needs a value\n%s", a, usage); return CLI_USAGE; }
        else if (!strcmp(a, "--input")) { if (o.n_inputs == CLI_MAX_ARGS) return cli_fail("too many --input"); o.inputs[o.n_inputs++] = v; }
        else if (!strcmp(a, "--shape")) { if (o.n_shapes == CLI_MAX_ARGS) return cli_fail("too many --shape"); o.shapes[o.n_shapes++] = v; }
        else if (!strcmp(a, "--output-dir")) o.output_dir = v;
        else if (!strcmp(a, "--dot")) o.dot = v;
        else if (!strcmp(a, "--profile")) o.profile = v;
        else if (!strcmp(a, "--backend")) {
            if (!strcmp(v, "cpu")) o.backend = BRAID_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) o.backend = BRAID_BACKEND_CUDA;
            else if (!strcmp(v, "auto")) o.backend = BRAID_BACKEND_AUTO;
            else { fprintf(stderr, "braid: --backend must be cpu, cuda or auto, not '%s'\n", v); return CLI_USAGE; }
        } else if (!strcmp(a, "--streams") || !strcmp(a, "--threads") || !strcmp(a, "--iterations") || !strcmp(a, "--warmup")) {
            int *dst = a[2] == 's' ? &o.streams : a[2] == 't' ? &o.threads : a[2] == 'i' ? &o.iterations : &o.warmup;
            int lo = a[2] == 'i' ? 1 : 0, hi = a[2] == 's' ? 64 : 1000000;
            if (parse_int(v, lo, hi, dst)) { fprintf(stderr, "braid: %s must be an integer from %d to %d, not '%s'\n", a, lo, hi, v); return CLI_USAGE; }
        } else if (!strcmp(a, "--cuda-workspace")) {
            if (parse_int(v, 0, 65536, &o.cuda_workspace)) { fprintf(stderr, "braid: --cuda-workspace must be a whole number of MB from 0 to 65536, not '%s'\n", v); return CLI_USAGE; }
        } else if (!strcmp(a, "--loop-limit")) {
            char *end;
            long long n = strtoll(v, &end, 10);
            if (!*v || *end || n < 1) { fprintf(stderr, "braid: --loop-limit must be a positive integer, not '%s'\n", v); return CLI_USAGE; }
            o.loop_limit = n;
        } else if (!strcmp(a, "--atol") || !strcmp(a, "--rtol")) {
            char *end;
            double d = strtod(v, &end);
            if (*end || d < 0) { fprintf(stderr, "braid: %s must be a number >= 0\n", a); return CLI_USAGE; }
            if (a[2] == 'a') { o.atol = d; o.have_atol = 1; } else { o.rtol = d; o.have_rtol = 1; }
        } else if (a[0] == '-' && a[1]) { fprintf(stderr, "braid: unknown option '%s'\n%s", a, usage); return CLI_USAGE; }
        else if (!o.model) { o.model = a; takes = 0; }
        else { fprintf(stderr, "braid: unexpected argument '%s'\n%s", a, usage); return CLI_USAGE; }
        i += takes;
    }
    if (!o.model) { fprintf(stderr, "braid: %s needs a model\n%s", cmd, usage); return CLI_USAGE; }
    if (!strcmp(cmd, "run")) return cli_run(&o);
    if (!strcmp(cmd, "info")) return cli_info(&o);
    if (!strcmp(cmd, "check")) return cli_check(&o);
    if (!strcmp(cmd, "plan")) return cli_plan(&o);
    if (!strcmp(cmd, "bench")) return cli_bench(&o);
    fprintf(stderr, "braid: unknown command '%s'\n%s", cmd, usage);
    return CLI_USAGE;
}
