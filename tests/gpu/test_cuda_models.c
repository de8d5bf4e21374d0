/* test_cuda_models.c: the CUDA backend against the CPU backend on whole
 * models. Needs a CUDA device or the emulated one (BRAID_CUDA_EMULATOR=1):
 * without either it prints "SKIPPED: no CUDA device (reason)" and exits 77,
 * which ctest counts as skipped, never as passed.
 *
 *   nodes [STREAMS [graph]]  every ONNX node test ($BRAID_NODE_DATA/test_*,
 *       data set 0) that the CPU runs: the CUDA outputs equal the CPU's
 *       within atol 1e-5 + 1e-4 |cpu| (or the case's own tolerance when
 *       looser); exact for integers. At STREAMS (0: automatic, the default);
 *       with graph, each model runs twice on one session, the second run a
 *       CUDA graph replay where the plan could be captured. A CUDA
 *       UNSUPPORTED is counted and listed, never a wrong number; ops that
 *       draw random numbers without a seed compare shapes and dtypes only.
 *   models [graph]  every generated model (models/gen/<name>): at batches 1
 *       and 3 where the first dim is symbolic, at 1 and automatic streams
 *       (and with graph, a CUDA graph), one session running twice on new
 *       data each time: each run equals the CPU within 1e-4 relative.
 *   branchy N  the branchy models (two_conv_add, inception, fpn) at automatic
 *       streams, N runs each on one session with new data each run, each
 *       equal to the CPU; with BRAID_CUDA_EMULATOR_DELAY set, every operation
 *       of the emulated device waits a random time first, which turns a
 *       missing wait the checker cannot see into wrong numbers.
 * On the emulated device every step also checks that the emulator reported
 * nothing. Node tests whose inputs or outputs are sequences or optionals are
 * left to tests/onnx_node/run.py --backend cuda; here they are counted. */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cuda_test.h"
#include "onnx/onnx.h"

/* ---- node tests ------------------------------------------------------------------------ */

static int boxed_io(const braid_model *m)
{
    int boxed = 0;
    for (int i = 0; i < braid_model_input_count(m) || i < braid_model_output_count(m); i++) {
        braid_value_info vi;
        if (i < braid_model_input_count(m) && !braid_model_input_info(m, i, &vi)) boxed |= bd_dt_container(vi.dtype);
        if (i < braid_model_output_count(m) && !braid_model_output_info(m, i, &vi)) boxed |= bd_dt_container(vi.dtype);
    }
    return boxed;
}

/* 0 when the outputs have the same count, dtypes and dims (values aside). */
static int differ_shapes(const run_out *got, const run_out *want, char *why, size_t n)
{
    int bad = got->n != want->n;
    for (int o = 0; !bad && o < got->n; o++)
        bad = got->t[o].dtype != want->t[o].dtype || got->t[o].rank != want->t[o].rank ||
              memcmp(got->t[o].dims, want->t[o].dims, (size_t)got->t[o].rank * sizeof got->t[o].dims[0]);
    if (bad) snprintf(why, n, "the outputs' count, dtypes or dims differ");
    return bad;
}

/* The CPU's outputs. On the emulated device, whose kernels are the CPU's
 * own run on one thread, the CPU runs the way a CUDA plan does (NCHW
 * values, one thread), so that where the two plans make the same choices
 * (the same fusions) the bits are equal; elsewhere the tolerance decides. */
static braid_status cpu_reference(const braid_model *m, int emulated, int n_in, const braid_tensor *in, run_out *out,
                                  char *err, size_t errn)
{
    if (!emulated) return run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, out, err, errn);
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_tensor res[MAX_IO];
    int n_out = braid_model_output_count(m);
    if (n_out > MAX_IO) n_out = MAX_IO;
    braid_options_create(&o);
    braid_options_set_backend(o, BRAID_BACKEND_CPU);
    braid_options_set_threads(o, 1);
    braid_options_set_layout(o, 0);
    braid_status st = braid_session_create(m, o, &s);
    if (st) snprintf(err, errn, "%s", braid_last_error());
    else if ((st = braid_session_run(s, n_in, in, n_out, res))) snprintf(err, errn, "%s", braid_session_error(s));
    else keep_outputs(res, n_out, out);
    braid_session_destroy(s);
    braid_options_destroy(o);
    return st;
}

static void node_tests(int streams, int graph)
{
    char root[1024], path[2048], err[1200];
    const char *data = getenv("BRAID_NODE_DATA"); /* made by the node_data fixture */
    if (data) snprintf(root, sizeof root, "%s", data);
    else snprintf(root, sizeof root, "%s/tests/onnx_node/data", src_dir());
    DIR *dir = opendir(root);
    if (!dir) {
        check_failed++;
        fprintf(stderr, "FAIL node tests: %s not found (generate with tests/onnx_node/gen.py)\n", root);
        return;
    }
    int ran = 0, same = 0, unsupported = 0, cpu_skip = 0, containers = 0, random = 0, bitwise = 0;
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    int emulated = mod && mod->emulated;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, "test_", 5)) continue;
        braid_model *m = NULL;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, de->d_name);
        if (braid_model_load_file(path, &m)) { cpu_skip++; continue; }
        if (boxed_io(m)) { /* tests/onnx_node/run.py --backend cuda runs these */
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
        int rnd = unseeded_random(m);
        random += rnd;
        run_out cpu = {0}, gpu = {0};
        if (ok && cpu_reference(m, emulated, n_in, in, &cpu, err, sizeof err) == BRAID_OK) {
            braid_status st = run_n(m, BRAID_BACKEND_CUDA, streams, graph, graph ? 2 : 1, n_in, in, &gpu, err, sizeof err);
            ran++;
            if (st == BRAID_ERR_UNSUPPORTED) {
                unsupported++;
                printf("unsupported on cuda: %s: %s\n", de->d_name, err);
            } else if (st) {
                check_failed++;
                fprintf(stderr, "FAIL %s: cuda failed: %s\n", de->d_name, err);
            } else if (rnd ? differ_shapes(&gpu, &cpu, err, sizeof err) : differ(&gpu, &cpu, rtol, atol, err, sizeof err)) {
                check_failed++;
                fprintf(stderr, "FAIL %s: %s\n", de->d_name, err);
            } else {
                same++;
                bitwise += !rnd && !differ(&gpu, &cpu, 0, 0, err, sizeof err);
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
    printf("node tests (streams %d%s): %d run on both, %d equal (%d bitwise; %d unseeded random ops: shapes only), "
           "%d unsupported on cuda, %d not run by the cpu, %d with sequence or optional inputs or outputs (left to "
           "run.py --backend cuda)\n", streams, graph ? ", CUDA graph" : "", ran, same, bitwise, random, unsupported,
           cpu_skip, containers);
    CHECK(ran > 1000); /* the suite was there */
}

/* ---- generated models ------------------------------------------------------------------------- */

static braid_model *load_model(const char *name)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/models/gen/%s/model.onnx", src_dir(), name);
    braid_model *m = NULL;
    if (braid_model_load_file(path, &m)) {
        check_failed++;
        fprintf(stderr, "FAIL load %s: %s\n", path, braid_last_error());
        return NULL;
    }
    return m;
}

/* One session of m (streams, graph) running `runs` times on new inputs
 * (seeds seed, seed + 1, ...) at batch: each run's outputs equal the CPU's. */
static void runs_vs_cpu(const braid_model *m, const char *name, int64_t batch, int streams, int graph, int runs,
                        unsigned seed)
{
    char err[1200];
    braid_session *s = open_session(m, BRAID_BACKEND_CUDA, streams, graph, err, sizeof err);
    if (!s) {
        check_failed++;
        fprintf(stderr, "FAIL %s: no CUDA session: %s\n", name, err);
        return;
    }
    int n_out = braid_model_output_count(m), bad = 0;
    for (int r = 0; r < runs; r++) {
        braid_tensor in[MAX_IO], res[MAX_IO];
        int n_in = make_inputs_batch(m, in, seed + (unsigned)r, batch);
        run_out cpu = {0}, gpu = {0};
        CHECK_EQ_INT(run_once(m, BRAID_BACKEND_CPU, 0, 0, n_in, in, &cpu, err, sizeof err), BRAID_OK);
        braid_status st = braid_session_run(s, n_in, in, n_out, res);
        if (st) {
            bad++;
            fprintf(stderr, "FAIL %s batch %lld streams %d graph %d run %d: %s\n", name, (long long)batch, streams,
                    graph, r, braid_session_error(s));
        } else {
            gpu.n = n_out;
            memcpy(gpu.t, res, (size_t)n_out * sizeof *res); /* the session's buffers, read in place */
            if (differ(&gpu, &cpu, 1e-4, 1e-5, err, sizeof err)) {
                bad++;
                fprintf(stderr, "FAIL %s batch %lld streams %d graph %d run %d: %s\n", name, (long long)batch,
                        streams, graph, r, err);
            }
            gpu.n = 0;
        }
        out_free(&cpu);
        for (int i = 0; i < n_in; i++) free(in[i].data);
    }
    if (bad) check_failed++;
    else check_passed++;
    braid_session_destroy(s);
}

static void model_tests(int graph)
{
    char root[1024], path[2048];
    snprintf(root, sizeof root, "%s/models/gen", src_dir());
    DIR *dir = opendir(root);
    if (!dir) { check_failed++; fprintf(stderr, "FAIL models: %s not found\n", root); return; }
    struct dirent *de;
    int n = 0;
    while ((de = readdir(dir))) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s/model.onnx", root, de->d_name);
        if (de->d_name[0] == '.' || stat(path, &sb)) continue;
        braid_model *m = load_model(de->d_name);
        if (!m) continue;
        braid_value_info vi;
        braid_model_input_info(m, 0, &vi);
        int batches = vi.rank > 0 && vi.dims[0] <= 0 ? 2 : 1; /* a symbolic batch: 1 and 3 */
        for (int b = 0; b < batches; b++)
            for (int streams = 1; streams >= 0; streams--)
                runs_vs_cpu(m, de->d_name, b ? 3 : 1, streams, graph, graph ? 3 : 2, 7 + 10 * (unsigned)b);
        printf("model %s: batch 1%s, streams 1 and auto%s: checked\n", de->d_name, batches > 1 ? " and 3" : "",
               graph ? ", CUDA graph" : "");
        n++;
        braid_model_destroy(m);
    }
    closedir(dir);
    CHECK(n >= 9);
}

static void branchy(int runs)
{
    static const char *const names[] = {"two_conv_add", "inception", "fpn"};
    for (int i = 0; i < 3; i++) {
        braid_model *m = load_model(names[i]);
        if (!m) continue;
        runs_vs_cpu(m, names[i], 2, 0, 0, runs, 1000);
        printf("branchy %s: %d runs at automatic streams%s\n", names[i], runs,
               getenv("BRAID_CUDA_EMULATOR_DELAY") ? ", random delays" : "");
        braid_model_destroy(m);
    }
}

int main(int argc, char **argv)
{
    char why[256] = "";
    if (!cuda_probe(why, sizeof why)) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 77;
    }
    poison_fresh_memory();
    const char *step = argc > 1 ? argv[1] : "";
    if (!strcmp(step, "nodes")) node_tests(argc > 2 ? atoi(argv[2]) : 0, argc > 3 && !strcmp(argv[3], "graph"));
    else if (!strcmp(step, "models")) model_tests(argc > 2 && !strcmp(argv[2], "graph"));
    else if (!strcmp(step, "branchy")) branchy(argc > 2 ? atoi(argv[2]) : 50);
    else {
        fprintf(stderr, "usage: test_cuda_models nodes [STREAMS [graph]] | models [graph] | branchy [N]\n");
        return 2;
    }
    expect_no_reports();
    expect_zero_live("at the end");
    return check_done();
}
