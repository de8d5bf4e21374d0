/* cuda_test.h: what the CUDA test programs share (test_cuda_backend.c,
 * test_cuda_models.c): a run of a model on a fresh session with its outputs
 * copied, the comparison of two runs' outputs, fixed-seed inputs, and the
 * check that every CUDA object a session made is gone. Static functions:
 * each test program is one file. With BRAID_CUDA_EMULATOR=1 they run on the
 * emulated device; on a real GPU they set BRAID_CUDA_POISON=1, so that fresh
 * device memory reads as NaN there too (src/backend/cuda/cuda.c). */
#ifndef BD_TEST_CUDA_TEST_H
#define BD_TEST_CUDA_TEST_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#include "braid.h"
#include "api_internal.h"
#include "backend/backend.h"
#include "cuda_counts.h"
#include "util/common.h"
#include "backend/cpu/cpu_ops.h"

#define MAX_IO 32

typedef struct run_out {
    int n;
    braid_tensor t[MAX_IO]; /* data malloc'ed copies */
} run_out;

static inline void out_free(run_out *o)
{
    for (int i = 0; i < o->n; i++) {
        if (o->t[i].dtype == BRAID_DTYPE_STRING)
            for (size_t j = 0, c = bd_numel((const bd_tensor *)&o->t[i]); j < c; j++) free(((char **)o->t[i].data)[j]);
        free(o->t[i].data);
    }
    o->n = 0;
}

static inline size_t nbytes(const braid_tensor *t)
{
    size_t n = bd_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->dims[d];
    return n;
}

/* Copies a run's outputs (the session's buffers) into out. */
static inline void keep_outputs(const braid_tensor *res, int n_out, run_out *out)
{
    out->n = 0;
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
}

static inline braid_session *open_session(const braid_model *m, braid_backend be, int streams, int graph, char *err,
                                   size_t errn)
{
    braid_options *o = NULL;
    braid_session *s = NULL;
    braid_options_create(&o);
    braid_options_set_backend(o, be);
    braid_options_set_max_streams(o, streams);
    braid_options_set_cuda_graph(o, graph);
    if (braid_session_create(m, o, &s)) snprintf(err, errn, "%s", braid_last_error());
    braid_options_destroy(o);
    return s;
}

/* Runs m runs times on a fresh session (a CUDA graph is captured after the
 * first run and replayed by the next); copies the last run's outputs. */
static inline braid_status run_n(const braid_model *m, braid_backend be, int streams, int graph, int runs, int n_in,
                          const braid_tensor *in, run_out *out, char *err, size_t errn)
{
    braid_tensor res[MAX_IO];
    memset(res, 0, sizeof res);
    out->n = 0;
    braid_session *s = open_session(m, be, streams, graph, err, errn);
    if (!s) return BRAID_ERR_INTERNAL;
    int n_out = braid_model_output_count(m);
    if (n_out > MAX_IO) n_out = MAX_IO;
    braid_status st = BRAID_OK;
    for (int r = 0; r < runs && !st; r++)
        if ((st = braid_session_run(s, n_in, in, n_out, res))) snprintf(err, errn, "%s", braid_session_error(s));
    if (!st) keep_outputs(res, n_out, out);
    braid_session_destroy(s);
    return st ? st : BRAID_OK;
}

static inline braid_status run_once(const braid_model *m, braid_backend be, int streams, int graph, int n_in,
                             const braid_tensor *in, run_out *out, char *err, size_t errn)
{
    return run_n(m, be, streams, graph, 1, n_in, in, out, err, errn);
}

static inline double elem(const braid_tensor *t, size_t i)
{
    bd_tensor v = {.dtype = t->dtype, .rank = t->rank, .data = t->data};
    return bd_get_f64(&v, (int64_t)i);
}

/* 0 when got equals want within |g - w| <= atol + rtol |w| (exact for integers). */
static inline int differ(const run_out *got, const run_out *want, double rtol, double atol, char *why, size_t n)
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

static inline const char *src_dir(void)
{
    const char *d = getenv("BRAID_SOURCE_DIR");
    return d ? d : ".";
}

static inline int float_dtype(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16;
}

static inline int signed_dtype(int dt)
{
    return dt == BRAID_DTYPE_INT8 || dt == BRAID_DTYPE_INT16 || dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64;
}

/* Fixed-seed inputs shaped by the declarations: a symbolic first dim is
 * batch, any other symbolic dim 1. Floats uniform in [-1, 1); integers small
 * (-3 to 3, unsigned 0 to 6), bools 0 or 1: never all zeros, so a kernel that
 * reads the wrong bytes shows. */
static inline int make_inputs_batch(const braid_model *m, braid_tensor *in, unsigned seed, int64_t batch)
{
    int n = braid_model_input_count(m);
    for (int i = 0; i < n && i < MAX_IO; i++) {
        braid_value_info vi;
        braid_model_input_info(m, i, &vi);
        memset(&in[i], 0, sizeof in[i]);
        in[i].dtype = vi.dtype;
        in[i].rank = vi.rank < 0 ? 0 : vi.rank;
        for (int d = 0; d < in[i].rank; d++) in[i].dims[d] = vi.dims[d] > 0 ? vi.dims[d] : d == 0 ? batch : 1;
        size_t b = nbytes(&in[i]);
        in[i].data = malloc(b ? b : 1);
        bd_tensor t = {.dtype = vi.dtype, .rank = 1, .dims = {0}, .data = in[i].data};
        size_t cnt = bd_dtype_size(vi.dtype) ? b / bd_dtype_size(vi.dtype) : 0;
        for (size_t j = 0; j < cnt; j++) {
            seed = seed * 1664525u + 1013904223u;
            double r = (double)(seed >> 8) / (double)(1u << 24) * 2.0 - 1.0;
            int64_t small = (int64_t)(seed >> 24) % 7 - 3;
            if (float_dtype(vi.dtype)) bd_set_f64(&t, (int64_t)j, r);
            else if (vi.dtype == BRAID_DTYPE_BOOL) ((uint8_t *)in[i].data)[j] = (uint8_t)(seed >> 31);
            else bd_set_f64(&t, (int64_t)j, (double)(signed_dtype(vi.dtype) ? small : small + 3));
        }
    }
    return n;
}

static inline int make_inputs(const braid_model *m, braid_tensor *in, unsigned seed)
{
    return make_inputs_batch(m, in, seed, 1);
}

static inline void expect_zero_live(const char *when)
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

/* Fresh device memory reads as NaN: on a GPU through BRAID_CUDA_POISON=1
 * (src/backend/cuda/cuda.c); the emulated device poisons by itself. */
static inline void poison_fresh_memory(void)
{
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    if (mod && !mod->emulated) setenv("BRAID_CUDA_POISON", "1", 1);
}

/* On the emulated device: the emulator reported nothing (races, host
 * touches of device memory, failed stand-ins) in this process. */
static inline void expect_no_reports(void)
{
    const bd_cuda_module *mod = bd_cuda_module_load(NULL, 0);
    if (!mod || !mod->emulated) return;
    char last[1024] = "";
    long r = mod->reports(last, sizeof last);
    if (r) fprintf(stderr, "FAIL: the emulator made %ld report(s); the last: %s\n", r, last);
    CHECK_EQ_INT(r, 0);
}

/* Whether the node's op draws random numbers without a seed: its outputs
 * differ from run to run by design, so only shapes and dtypes compare. */
static inline int unseeded_random(const braid_model *m)
{
    const bd_graph *g = bd_model_graph(m);
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *n = &g->nodes[i];
        if (bd_op_table[n->op].family != BD_FAM_random) continue;
        int seeded = 0;
        for (int a = 0; a < n->n_attrs; a++) seeded |= !strcmp(n->attrs[a].name, "seed");
        if (!seeded) return 1;
    }
    return 0;
}

#endif
