/* optest.h: the single-op harness the family unit tests share: run a node
 * as the executor would (parse, infer, an output buffer filled with garbage
 * so that an element the kernel forgets shows up, then the CPU kernel). */
#ifndef BD_OPTEST_H
#define BD_OPTEST_H

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"

/* Intra-op threads the kernels may use. */
static int g_threads = 1;
/* When set, run() calls it between parse and infer (to set what the layout
 * pass would set in the node's parameters). */
static void (*g_after_parse)(bd_node *n) = NULL;

/* parse + infer + allocate every output (filled with 0xFF bytes, NaN as
 * floats: the kernel must write every element) + run. Outputs' data is
 * malloc'ed; done() frees it. */
static braid_status run(bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = bd_op_parse(n, e);
    if (st) return st;
    if (g_after_parse) g_after_parse(n);
    if ((st = bd_op_infer(n, in, out, e))) return st;
    for (int i = 0; i < n->n_out; i++) {
        size_t nb;
        if ((st = bd_tensor_nbytes(&out[i], &nb, e))) return st;
        out[i].data = malloc(nb + 1);
        memset(out[i].data, 0xFF, nb);
    }
    bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = g_threads,
                   .err = e};
    return bd_cpu_run(&k);
}

static void done(bd_node *n, bd_tensor *out)
{
    for (int i = 0; i < n->n_out; i++) {
        free(out[i].data);
        out[i].data = NULL;
    }
    bd_free(n->params);
    n->params = NULL;
}

/* ---- nodes built by hand --------------------------------------------------- */

/* A node by value; its attributes stay in the caller's array. */
static inline bd_node op_node(int op, int opset, int n_in, int n_out, bd_attr *attrs, int n_attrs)
{
    bd_node n = {.name = "t", .op_type = (char *)bd_op_table[op].name, .domain = "", .op = op,
                 .opset = opset, .n_in = n_in, .n_out = n_out, .n_attrs = n_attrs, .attrs = attrs};
    return n;
}

static inline bd_attr attr_i(const char *name, int64_t v)
{
    return (bd_attr){.name = (char *)name, .type = BD_ATTR_INT, .i = v};
}

static inline bd_attr attr_f(const char *name, float v)
{
    return (bd_attr){.name = (char *)name, .type = BD_ATTR_FLOAT, .f = v};
}

static inline bd_attr attr_is(const char *name, int64_t *v, int n)
{
    return (bd_attr){.name = (char *)name, .type = BD_ATTR_INTS, .ints = v, .n = n};
}

/* A node that holds its own inputs, outputs and attributes (attr_* add them;
 * INTS values are copied). Value indices: inputs 0.., outputs 5... */
enum { TNODE_ATTRS = 32, TNODE_INTS = 32 }; /* a tree ensemble takes 15+ attributes */
typedef struct tnode {
    bd_node n;
    int in[5], out[3];
    bd_attr attrs[TNODE_ATTRS];
    int64_t ints[TNODE_ATTRS][TNODE_INTS];
} tnode;

static inline void tnode_init(tnode *t, int op, int opset, int n_in, int n_out)
{
    memset(t, 0, sizeof *t);
    t->n = op_node(op, opset, n_in, n_out, t->attrs, 0);
    t->n.in = t->in;
    t->n.out = t->out;
    for (int i = 0; i < 5; i++) t->in[i] = i;
    for (int i = 0; i < 3; i++) t->out[i] = 5 + i;
}

static inline bd_attr *tnode_attr(tnode *t, const char *name, bd_attr_type type)
{
    if (t->n.n_attrs >= TNODE_ATTRS) { /* a test's own mistake: stop before writing past attrs */
        fprintf(stderr, "optest: more than %d attributes on one node\n", TNODE_ATTRS);
        exit(2);
    }
    bd_attr *a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = type;
    return a;
}

static inline void attr_int(tnode *t, const char *name, int64_t v) { tnode_attr(t, name, BD_ATTR_INT)->i = v; }
static inline void attr_float(tnode *t, const char *name, float v) { tnode_attr(t, name, BD_ATTR_FLOAT)->f = v; }
static inline void attr_str(tnode *t, const char *name, const char *s) { tnode_attr(t, name, BD_ATTR_STRING)->s = (char *)s; }

static inline void attr_ints(tnode *t, const char *name, int n, const int64_t *v)
{
    if (n > TNODE_INTS || t->n.n_attrs >= TNODE_ATTRS) {
        fprintf(stderr, "optest: attribute '%s' has %d ints, at most %d fit\n", name, n, TNODE_INTS);
        exit(2);
    }
    int64_t *dst = t->ints[t->n.n_attrs];
    if (n > 0) memcpy(dst, v, (size_t)n * sizeof *v);
    bd_attr *a = tnode_attr(t, name, BD_ATTR_INTS);
    a->n = n;
    a->ints = dst;
}

static inline bd_tensor tensor(int dtype, int rank, const int64_t *dims, void *data)
{
    bd_tensor x = {.dtype = dtype, .rank = rank, .data = data};
    if (rank > 0) memcpy(x.dims, dims, (size_t)rank * sizeof *dims);
    return x;
}

/* n pseudo-random floats in [-1, 1) from *seed (malloc'ed). */
static inline float *randn(int64_t n, unsigned *seed)
{
    float *p = malloc((size_t)(n ? n : 1) * sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        p[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

/* A 1-D int64 tensor over v. */
static inline bd_tensor ints1(int64_t *v, int n)
{
    return (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 1, .dims = {n}, .data = v};
}

#define F32 BRAID_DTYPE_FLOAT

#endif
