/* check.c: `braid check DIR` runs an ONNX test case (model.onnx and
 * test_data_set_N folders of input_N.pb and output_N.pb) and compares every output with the
 * expected one at the case's tolerance (tolerance.txt "rtol atol" when
 * present, else onnx's defaults rtol 1e-3, atol 1e-7; --rtol/--atol win;
 * bfloat16 outputs at rtol 2^-6 at least, as onnx's runner).
 * Prints one PASS, FAIL or SKIP (unsupported) line with the max error. An
 * output drawn by a random op (the random family) is checked for its
 * dtype and shape only, and the case reports SKIP with that reason: its
 * expected values came from numpy's generator, which no executor reproduces
 * (onnx's own runners leave these cases out). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_internal.h"
#include "backend/cpu/cpu_ops.h"
#include "util/dtype.h"
#include "cli/cli.h"

static int exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static double elem(const braid_tensor *t, int64_t i)
{
    bd_tensor v = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
    return bd_get_f64(&v, i);
}

/* Compares got with want: 0 when equal within tolerance. why gets the reason.
 * Sequences compare element by element; an empty optional is UNDEFINED. */
static int compare(const braid_tensor *got, const braid_tensor *want, double rtol, double atol, double *max_err,
                   char *why, size_t n)
{
    *max_err = 0;
    if (got->dtype == BRAID_DTYPE_UNDEFINED || want->dtype == BRAID_DTYPE_UNDEFINED) {
        if (got->dtype == want->dtype) return 0;
        snprintf(why, n, "%s, expected %s", got->dtype ? braid_dtype_name(got->dtype) : "an empty optional",
                 want->dtype ? braid_dtype_name(want->dtype) : "an empty optional");
        return 1;
    }
    if ((got->dtype & BRAID_DTYPE_SEQUENCE) && got->dtype == want->dtype) {
        if (got->dims[0] != want->dims[0]) {
            snprintf(why, n, "a sequence of %lld tensors, expected %lld", (long long)got->dims[0], (long long)want->dims[0]);
            return 1;
        }
        for (int64_t i = 0; i < got->dims[0]; i++) {
            double err;
            char sub[1000];
            if (compare(&((const braid_tensor *)got->data)[i], &((const braid_tensor *)want->data)[i], rtol, atol, &err,
                        sub, sizeof sub)) {
                snprintf(why, n, "sequence element %lld: %s", (long long)i, sub);
                return 1;
            }
            if (err > *max_err) *max_err = err;
        }
        return 0;
    }
    if (got->dtype != want->dtype) {
        snprintf(why, n, "dtype %s, expected %s", braid_dtype_name(got->dtype), braid_dtype_name(want->dtype));
        return 1;
    }
    int same = got->rank == want->rank;
    for (int d = 0; same && d < got->rank; d++) same = got->dims[d] == want->dims[d];
    if (!same) {
        char a[160] = "", b[160] = "";
        size_t oa = 0, ob = 0;
        for (int d = 0; d < got->rank; d++) oa += snprintf(a + oa, sizeof a - oa, "%s%lld", d ? "x" : "", (long long)got->dims[d]);
        for (int d = 0; d < want->rank; d++) ob += snprintf(b + ob, sizeof b - ob, "%s%lld", d ? "x" : "", (long long)want->dims[d]);
        snprintf(why, n, "shape %s, expected %s", got->rank ? a : "scalar", want->rank ? b : "scalar");
        return 1;
    }
    int64_t cnt = 1;
    for (int d = 0; d < got->rank; d++) cnt *= got->dims[d];
    if (got->dtype == BRAID_DTYPE_STRING) { /* strings must be equal byte for byte */
        const char *const *g = got->data, *const *w = want->data;
        for (int64_t i = 0; i < cnt; i++)
            if (strcmp(g[i] ? g[i] : "", w[i] ? w[i] : "")) {
                snprintf(why, n, "element %lld is \"%.200s\", expected \"%.200s\"", (long long)i, g[i] ? g[i] : "",
                         w[i] ? w[i] : "");
                return 1;
            }
        return 0;
    }
    /* Integers and bools must be equal; every float type (float16, bfloat16
     * and the float8s included) is compared at the case's tolerance, as
     * onnx's own runner does. */
    int exact = got->dtype != BRAID_DTYPE_FLOAT && got->dtype != BRAID_DTYPE_DOUBLE &&
                got->dtype != BRAID_DTYPE_FLOAT16 && !bd_dtype_is_narrow_float(got->dtype);
    int64_t bad = -1;
    for (int64_t i = 0; i < cnt; i++) {
        double g = elem(got, i), w = elem(want, i);
        if (isnan(w) && isnan(g)) continue;
        if (isinf(w) && g == w) continue;
        double err = fabs(g - w);
        if (isnan(err)) err = INFINITY;
        if (err > *max_err) *max_err = err;
        if (bad < 0 && (exact ? g != w : !(err <= atol + rtol * fabs(w)))) bad = i;
    }
    if (bad >= 0) {
        snprintf(why, n, "element %lld is %.9g, expected %.9g", (long long)bad, elem(got, bad), elem(want, bad));
        return 1;
    }
    return 0;
}

/* The op of a random node that value v depends on, or NULL. */
static const char *random_source(const bd_graph *g, int v, unsigned char *seen)
{
    if (v < 0 || v >= g->n_values || seen[v]) return NULL;
    seen[v] = 1;
    int p = g->values[v].producer;
    if (p < 0) return NULL;
    const bd_node *n = &g->nodes[p];
    if (n->op >= 0 && n->op < BD_OP_COUNT && bd_op_table[n->op].family == BD_FAM_random) return n->op_type;
    for (int i = 0; i < n->n_in; i++) {
        const char *r = random_source(g, n->in[i], seen);
        if (r) return r;
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_check(const cli_opts *o)
{
    char path[4096], why[1200] = "";
    const char *dir = o->model;
    braid_model *m = NULL;
    braid_session *s = NULL;
    braid_tensor ins[CLI_MAX_ARGS] = {{0}}, outs[CLI_MAX_ARGS] = {{0}}, want[CLI_MAX_ARGS] = {{0}};
    char *sets[256];
    int n_sets = 0, rc = CLI_FAIL, n_in = 0, n_out = 0, n_want = 0;
    double rtol = 1e-3, atol = 1e-7, worst = 0;
    const char *random_op = NULL, *random_out = NULL;

    snprintf(path, sizeof path, "%s/tolerance.txt", dir);
    FILE *tf = fopen(path, "r");
    if (tf) {
        if (fscanf(tf, "%lf %lf", &rtol, &atol) != 2) { rtol = 1e-3; atol = 1e-7; }
        fclose(tf);
    }
    if (o->have_rtol) rtol = o->rtol;
    if (o->have_atol) atol = o->atol;
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    braid_status st = braid_model_load_file(path, &m);
    if (st) {
        printf("%s %s: %s\n", st == BRAID_ERR_UNSUPPORTED ? "SKIP" : "FAIL", dir, braid_last_error());
        return cli_status_exit(st);
    }
    if ((st = cli_session(o, m, o->streams, &s))) {
        printf("FAIL %s: %s\n", dir, braid_last_error());
        rc = cli_status_exit(st);
        goto done;
    }
    DIR *d = opendir(dir);
    if (!d) { printf("FAIL %s: cannot open the folder\n", dir); goto done; }
    for (struct dirent *de; (de = readdir(d)) && n_sets < 256;)
        if (!strncmp(de->d_name, "test_data_set_", 14)) sets[n_sets++] = strdup(de->d_name);
    closedir(d);
    qsort(sets, (size_t)n_sets, sizeof *sets, cmp_str);
    if (!n_sets) { printf("FAIL %s: no test_data_set_* folder\n", dir); goto done; }
    n_in = braid_model_input_count(m);
    n_out = braid_model_output_count(m);
    if (n_in > CLI_MAX_ARGS || n_out > CLI_MAX_ARGS) { printf("FAIL %s: too many inputs or outputs\n", dir); n_in = n_out = 0; goto done; }
    for (int k = 0; k < n_sets; k++) {
        /* input_N.pb in graph-input order; inputs that have initializers were
         * dropped from the model's input list, so match by position among the rest. */
        int have = 0;
        for (;; have++) {
            snprintf(path, sizeof path, "%s/%s/input_%d.pb", dir, sets[k], have);
            if (!exists(path)) break;
        }
        if (have != n_in) {
            printf("FAIL %s: %s has %d inputs, the model takes %d\n", dir, sets[k], have, n_in);
            goto done;
        }
        for (int i = 0; i < n_in; i++) {
            braid_value_info vi;
            braid_model_input_info(m, i, &vi);
            snprintf(path, sizeof path, "%s/%s/input_%d.pb", dir, sets[k], i);
            if (cli_read_value(path, vi.dtype, &ins[i], why, sizeof why)) { printf("FAIL %s: %s\n", dir, why); cli_free_tensors(ins, i); n_in = 0; goto done; }
        }
        st = braid_session_run(s, n_in, ins, n_out, outs);
        cli_free_tensors(ins, n_in);
        if (st) {
            printf("%s %s: %s\n", st == BRAID_ERR_UNSUPPORTED ? "SKIP" : "FAIL", dir, braid_session_error(s));
            rc = cli_status_exit(st);
            goto done;
        }
        for (int i = 0; i < n_out; i++) {
            braid_value_info vi;
            braid_model_output_info(m, i, &vi);
            snprintf(path, sizeof path, "%s/%s/output_%d.pb", dir, sets[k], i);
            if (cli_read_value(path, vi.dtype, &want[i], why, sizeof why)) { printf("FAIL %s: %s\n", dir, why); goto done; }
            n_want = i + 1;
            double err;
            const bd_graph *g = bd_model_graph(m);
            unsigned char *seen = calloc((size_t)g->n_values + 1, 1);
            const char *rnd = seen ? random_source(g, g->outputs[i], seen) : NULL;
            free(seen);
            if (rnd) { /* dtype and shape only: the values are random draws */
                if (compare(&outs[i], &want[i], INFINITY, INFINITY, &err, why, sizeof why) && strncmp(why, "element ", 8)) {
                    printf("FAIL %s: %s output '%s': %s\n", dir, sets[k], vi.name, why);
                    goto done;
                }
                random_op = rnd, random_out = vi.name;
                continue;
            }
            /* as onnx's own runner: a bfloat16 output is compared at two of
             * its ulps at least (2^-6), 1e-3 being finer than the type */
            double out_rtol = outs[i].dtype == BRAID_DTYPE_BFLOAT16 && !o->have_rtol && rtol < 0x1p-6 ? 0x1p-6 : rtol;
            if (compare(&outs[i], &want[i], out_rtol, atol, &err, why, sizeof why)) {
                printf("FAIL %s: %s output '%s': %s (max abs error %.3g, rtol %g, atol %g)\n", dir, sets[k], vi.name, why, err, out_rtol, atol);
                goto done;
            }
            printf("  %s %s: max abs error %.3g\n", sets[k], vi.name, err);
            worst = err > worst ? err : worst;
        }
        cli_free_tensors(want, n_want);
        n_want = 0;
    }
    if (random_op) {
        printf("SKIP %s: output '%s' is drawn by random op %s: its dtype and shape match, but the expected values "
               "come from numpy's generator, which braid does not reproduce\n", dir, random_out, random_op);
        rc = CLI_UNSUPPORTED;
        goto done;
    }
    printf("PASS %s: %d data sets, %d outputs, max abs error %.3g\n", dir, n_sets, n_out, worst);
    rc = CLI_OK;
done:
    cli_free_tensors(want, n_want);
    for (int k = 0; k < n_sets; k++) free(sets[k]);
    braid_session_destroy(s);
    braid_model_destroy(m);
    return rc;
}
