/* instance.c: specializes a graph to one set of input shapes: checks the run's
 * inputs against the declarations (symbolic dims must agree across inputs),
 * infers every value's dtype and shape in topological order, and folds nodes
 * whose inputs are all known (and Shape and Size, which need only a shape).
 *
 * Where a shape depends on values that exist only at run time, the instance
 * is one stage of a sequence (see shape.h): a node reading a value whose
 * shape is known only after its producer ran (BD_IV_RUNTIME), or made by a
 * waiting node, waits too; a node whose inference fails with UNSUPPORTED
 * while one of its shape inputs is a run-time value waits, and that value is
 * read back to the host when the stage ends (BD_IV_READBACK). Everything the
 * waiting nodes read from this stage is exported (BD_IV_EXPORT): the memory
 * planner keeps it to the end of the stage. bd_inst_next continues from the
 * boundary's actual shapes and values. */
#include "passes/instance.h"
#include "util/strpool.h"

#include <stdio.h>
#include <string.h>

#include "backend/cpu/cpu_ops.h"

int bd_input_is_plan_value(const bd_graph *g, int i, const bd_tensor *t)
{
    int dt = t->dtype;
    return g->input_shapes && g->input_shapes[i] && t->data && t->rank <= 1 && bd_numel(t) <= BD_PLAN_VALUE_MAX &&
           (dt == BRAID_DTYPE_INT64 || dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT16 || dt == BRAID_DTYPE_FLOAT ||
            dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16);
}

int bd_signature(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known, int64_t *sig, int max)
{
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        const bd_tensor *t = &inputs[i];
        if (n < max) sig[n] = (int64_t)t->rank << 8 | (int64_t)(t->dtype & 0xff);
        n++;
        for (int d = 0; d < t->rank; d++, n++)
            if (n < max) sig[n] = t->dims[d];
        if (!(known && known[i]) && bd_input_is_plan_value(g, i, t)) {
            size_t esz = bd_dtype_size(t->dtype);
            for (int64_t k = 0; k < bd_numel(t); k++, n++) /* the value's bits */
                if (n < max) {
                    sig[n] = 0;
                    memcpy(&sig[n], (const char *)t->data + (size_t)k * esz, esz);
                }
        }
    }
    return n;
}

braid_status bd_check_input(const bd_graph *g, int i, const bd_tensor *t, bd_err *e)
{
    const bd_value *v = &g->values[g->inputs[i]];
    char a[160], b[160];
    if (v->dtype && t->dtype != v->dtype && !(g->is_sub && bd_dt_alike(t->dtype, v->dtype)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' has dtype %s but the model declares %s", v->name,
                       bd_dtype_name(t->dtype), bd_dtype_name(v->dtype));
    if (t->rank < 0 || t->rank > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has rank %d; braid supports 0 to %d", v->name, t->rank,
                       BD_MAX_RANK);
    /* A subgraph's declared input shapes are hints, as onnxruntime takes
     * them: Paddle's Loop bodies declare a carried value [N, 501, 8] that
     * enters as a scalar placeholder. The values' own shapes are inferred. */
    int bad = !g->is_sub && v->rank >= 0 && t->rank != v->rank;
    for (int d = 0; !bad && !g->is_sub && v->rank >= 0 && d < v->rank; d++) bad = v->dims[d] >= 0 && v->dims[d] != t->dims[d];
    for (int d = 0; d < t->rank; d++) bad |= t->dims[d] < 0;
    if (bad) {
        size_t off = 0;
        a[0] = 0;
        for (int d = 0; d < v->rank && off < sizeof a; d++) {
            if (v->dims[d] >= 0) off += snprintf(a + off, sizeof a - off, "%s%lld", d ? "x" : "", (long long)v->dims[d]);
            else off += snprintf(a + off, sizeof a - off, "%s%s", d ? "x" : "", v->dim_param[d] ? v->dim_param[d] : "?");
        }
        if (v->rank == 0) snprintf(a, sizeof a, "scalar");
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has shape %s but the model declares %s", v->name,
                       bd_shape_str(t, b, sizeof b), a);
    }
    return BRAID_OK;
}

/* A dim name that stands for "unknown" rather than a shared symbol. */
static int anonymous(const char *name) { return !name || !name[0] || !strcmp(name, "?"); }

/* Symbolic dims with one name must take one value across all inputs. */
static braid_status check_symbols(const bd_graph *g, const bd_tensor *inputs, bd_err *e)
{
    if (g->is_sub) return BRAID_OK; /* declared shapes are hints there (bd_check_input) */
    for (int i = 0; i < g->n_inputs; i++) {
        const bd_value *v = &g->values[g->inputs[i]];
        for (int d = 0; d < v->rank; d++) {
            if (anonymous(v->dim_param[d])) continue;
            for (int j = 0; j <= i; j++) {
                const bd_value *w = &g->values[g->inputs[j]];
                for (int k = 0; k < w->rank; k++) {
                    if ((j == i && k >= d) || anonymous(w->dim_param[k]) || strcmp(w->dim_param[k], v->dim_param[d])) continue;
                    if (inputs[j].dims[k] != inputs[i].dims[d])
                        return BD_FAIL(e, BRAID_ERR_SHAPE,
                                       "dim '%s' is %lld in input '%s' but %lld in input '%s'", v->dim_param[d],
                                       (long long)inputs[j].dims[k], w->name, (long long)inputs[i].dims[d], v->name);
                }
            }
        }
    }
    return BRAID_OK;
}

void bd_inst_free(bd_inst *x)
{
    if (!x) return;
    if (x->strings) {
        bd_strpool_destroy(x->strings);
        bd_free(x->strings);
        x->strings = NULL;
    }
    for (int v = 0; x->vals && x->owned && v < x->g->n_values; v++)
        if (x->owned[v]) bd_free(x->vals[v].data);
    bd_free(x->vals);
    bd_free(x->owned);
    bd_free(x->vflag);
    bd_free(x->live);
    bd_free(x->later);
    bd_free(x->cost);
    for (int i = 0; x->fused && i < x->n_fused; i++) { /* a fused copy owns only these */
        bd_free(x->fused[i].name);
        bd_free(x->fused[i].in);
        bd_free(x->fused[i].out);
        bd_free(x->fused[i].params);
    }
    bd_free(x->fused);
    bd_free((void *)x->node);
    bd_flat_free(x->flat, x->flat_own);
    bd_free(x->vlayout);
    bd_lay_own_free(x->lay);
    memset(x, 0, sizeof *x);
}

/* Estimated seconds of a node: FLOPs at 20 GFLOP/s plus bytes at 10 GB/s
 * (an output whose size is known only at run time counts no bytes). */
static double node_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    double bytes = 0;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].dtype && in[i].rank >= 0) bytes += (double)bd_numel(&in[i]) * (double)bd_dtype_size(in[i].dtype);
    for (int i = 0; i < n->n_out; i++)
        if (out[i].dtype && out[i].rank >= 0 && bd_numel(&out[i]) > 0)
            bytes += (double)bd_numel(&out[i]) * (double)bd_dtype_size(out[i].dtype);
    double c = bd_op_cost(n, in, out) / 20e9 + bytes / 10e9;
    return c >= 0 ? c : 0;
}

static braid_status fold(bd_inst *x, const bd_node *n, bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = BRAID_OK;
    for (int o = 0; o < n->n_out; o++) {
        size_t nb;
        BD_TRY(bd_tensor_nbytes(&out[o], &nb, e));
        out[o].data = bd_malloc(nb);
        BD_CHECK_ALLOC(e, out[o].data);
    }
    if (!x->strings) {
        x->strings = bd_malloc(sizeof *x->strings);
        BD_CHECK_ALLOC(e, x->strings);
        bd_strpool_init(x->strings);
    }
    bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = 1, .err = e,
                   .strings = x->strings};
    BD_TRY(bd_cpu_run(&k));
    for (int o = 0; o < n->n_out; o++) {
        if (n->out[o] < 0) { bd_free(out[o].data); continue; }
        x->vals[n->out[o]] = out[o];
        x->owned[n->out[o]] = 1;
        out[o].data = NULL;
    }
    return BRAID_OK;
fail:
    for (int o = 0; o < n->n_out; o++) { bd_free(out[o].data); out[o].data = NULL; }
    return st;
}

/* A value made by a node of a later stage (internal to this file). */
#define BD_IV_LATER (1u << 7)

static braid_status inst_alloc(const bd_graph *g, bd_inst *x, bd_err *e)
{
    braid_status st = BRAID_OK;
    memset(x, 0, sizeof *x);
    x->g = g;
    x->vals = bd_calloc((size_t)g->n_values + 1, sizeof *x->vals);
    x->owned = bd_calloc((size_t)g->n_values + 1, 1);
    x->vflag = bd_calloc((size_t)g->n_values + 1, 1);
    x->live = bd_calloc((size_t)g->n_nodes + 1, 1);
    x->later = bd_calloc((size_t)g->n_nodes + 1, 1);
    x->cost = bd_calloc((size_t)g->n_nodes + 1, sizeof *x->cost);
    x->node = bd_malloc(((size_t)g->n_nodes + 1) * sizeof *x->node);
    BD_CHECK_ALLOC(e, x->vals && x->owned && x->vflag && x->live && x->later && x->cost && x->node);
fail:
    return st;
}

static void wait_later(bd_inst *x, int i, const bd_node *n)
{
    x->later[i] = 1;
    x->n_later++;
    for (int k = 0; k < n->n_out; k++)
        if (n->out[k] >= 0) x->vflag[n->out[k]] |= BD_IV_LATER;
}

/* Infers (and folds, or makes live) the pending nodes in topological order;
 * a node that needs a value of a later stage waits. */
/* Scratch input and output slots for every node of x->g. */
static braid_status slots(const bd_inst *x, bd_tensor **in, bd_tensor **out, int *max_in, int *max_out, bd_err *e)
{
    const bd_graph *g = x->g;
    *max_in = *max_out = 1;
    for (int i = 0; i < g->n_nodes; i++) {
        *max_in = BD_MAX(*max_in, bd_node_slots(x->node[i]));
        *max_out = BD_MAX(*max_out, x->node[i]->n_out);
    }
    bd_free(*in);
    bd_free(*out);
    *in = bd_calloc((size_t)*max_in, sizeof **in);
    *out = bd_calloc((size_t)*max_out, sizeof **out);
    return *in && *out ? BRAID_OK : BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
}

static braid_status infer_pending(bd_inst *x, const unsigned char *pending_in, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = x->g;
    bd_tensor *in = NULL, *out = NULL;
    int max_in = 1, max_out = 1;
    unsigned char *pending = bd_malloc((size_t)g->n_nodes + 1);
    BD_CHECK_ALLOC(e, pending);
    memcpy(pending, pending_in, (size_t)g->n_nodes);
    BD_TRY(slots(x, &in, &out, &max_in, &max_out, e));
    for (int i = 0; i < g->n_nodes; i++) {
        if (!pending[i]) continue;
        const bd_node *n = x->node[i];
        int all_const = 1, wait = 0;
        /* An If whose condition is known now is replaced by its branch (in
         * the first stage; later stages keep the graph they were given). */
        if (n->op == BD_OP_If && x->stage == 0 && n->in[0] >= 0 && x->vals[n->in[0]].data &&
            !(x->vflag[n->in[0]] & (BD_IV_LATER | BD_IV_RUNTIME))) {
            int b = *(const unsigned char *)x->vals[n->in[0]].data ? 0 : 1;
            st = bd_inst_inline_if(x, i, b, e);
            if (st) { bd_err_prefix(e, "node '%s' (If): ", n->name); goto fail; }
            g = x->g;
            bd_free(pending);
            pending = bd_malloc((size_t)g->n_nodes + 1);
            BD_CHECK_ALLOC(e, pending);
            memset(pending, 0, (size_t)i);
            memset(pending + i, 1, (size_t)(g->n_nodes - i) + 1);
            BD_TRY(slots(x, &in, &out, &max_in, &max_out, e));
            i--; /* the branch's first node takes the If's place */
            continue;
        }
        /* A node none of whose outputs anything names (`Mul(a, b) -> ""`,
         * or a function body's value the call leaves out) is dead: it is
         * neither planned nor run (its kernel would write to no memory). */
        int named = 0;
        for (int k = 0; k < n->n_out; k++) named |= n->out[k] >= 0;
        if (!named) continue;
        /* Slots past the node's inputs read as omitted inputs, never as the
         * last node's (families may look at an optional input's dtype). */
        for (int k = 0; k < max_in; k++) { memset(&in[k], 0, sizeof in[k]); in[k].rank = -1; }
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k];
            if (v < 0) continue;
            in[k] = x->vals[v];
            if (!in[k].data) all_const = 0;
            if (x->vflag[v] & (BD_IV_LATER | BD_IV_RUNTIME)) wait = 1;
        }
        if (wait) {
            /* Its shape inputs made by now are read at this stage's end too,
             * so that it need not wait a second time for their values. */
            for (int k = 0; k < n->n_in; k++) {
                int v = n->in[k];
                if (v >= 0 && !in[k].data && bd_op_shape_input(n->op, k) && !(x->vflag[v] & BD_IV_LATER))
                    x->vflag[v] |= BD_IV_READBACK;
            }
            wait_later(x, i, n);
            continue;
        }
        for (int k = 0; k < n->n_out; k++) { memset(&out[k], 0, sizeof out[k]); out[k].rank = -1; }
        st = bd_op_infer(n, in, out, e);
        if (st == BRAID_ERR_UNSUPPORTED) {
            /* A shape input computed at run time: wait for its values. */
            int need = 0;
            for (int k = 0; k < n->n_in; k++)
                if (n->in[k] >= 0 && !in[k].data && bd_op_shape_input(n->op, k)) need = 1;
            if (need) {
                for (int k = 0; k < n->n_in; k++) {
                    int v = n->in[k];
                    if (v < 0 || in[k].data || !bd_op_shape_input(n->op, k)) continue;
                    x->vflag[v] |= BD_IV_READBACK;
                }
                st = BRAID_OK;
                wait_later(x, i, n);
                continue;
            }
        }
        if (st) { bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type); goto fail; }
        int alloc = 0;
        for (int k = 0; k < n->n_out; k++) {
            size_t nb;
            int unknown = out[k].rank < 0;
            for (int d = 0; d < out[k].rank && d < BD_MAX_RANK; d++) unknown |= out[k].dims[d] < 0;
            if (out[k].rank > BD_MAX_RANK || !bd_dtype_size(out[k].dtype)) {
                st = BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' (%s): inference left output %d without a shape",
                             n->name, n->op_type, k);
                goto fail;
            }
            out[k].data = NULL;
            if (unknown) alloc = 1;
            else {
                st = bd_tensor_nbytes(&out[k], &nb, e);
                if (st) { bd_err_prefix(e, "node '%s' (%s): output %d: ", n->name, n->op_type, k); goto fail; }
            }
            if (n->out[k] >= 0) {
                x->vals[n->out[k]] = out[k];
                if (unknown) x->vflag[n->out[k]] |= BD_IV_RUNTIME | BD_IV_ALLOC;
            }
        }
        unsigned flags = bd_op_table[n->op].flags;
        if (!alloc && ((all_const && !(flags & BD_OPF_NO_FOLD)) || n->op == BD_OP_Shape || n->op == BD_OP_Size)) {
            st = fold(x, n, in, out, e); /* a BD_OPF_DATA_SHAPE kernel sets its outputs' actual dims */
            if (st) { bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type); goto fail; }
        } else {
            x->live[i] = 1;
            x->cost[i] = node_cost(n, in, out);
            if (flags & BD_OPF_DATA_SHAPE)
                for (int k = 0; k < n->n_out; k++)
                    if (n->out[k] >= 0) x->vflag[n->out[k]] |= BD_IV_RUNTIME;
        }
    }
    /* What the waiting nodes read from this stage outlives it. */
    for (int i = 0; i < g->n_nodes; i++) {
        if (!x->later[i]) continue;
        const bd_node *n = x->node[i];
        for (int k = 0; k < n->n_in; k++) {
            int v = n->in[k], pr = v >= 0 ? g->values[v].producer : -1;
            if (pr >= 0 && x->live[pr]) x->vflag[v] |= BD_IV_EXPORT;
        }
    }
fail:
    bd_free(in);
    bd_free(out);
    bd_free(pending);
    return st;
}

braid_status bd_inst_build(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known, bd_inst *x,
                           bd_err *e)
{
    braid_status st = BRAID_OK;
    unsigned char *pending = NULL;
    BD_TRY(inst_alloc(g, x, e));
    pending = bd_malloc((size_t)g->n_nodes + 1);
    BD_CHECK_ALLOC(e, pending);
    memset(pending, 1, (size_t)g->n_nodes + 1);
    for (int i = 0; i < g->n_nodes; i++) x->node[i] = &g->nodes[i];
    for (int i = 0; i < g->n_inputs; i++) BD_TRY(bd_check_input(g, i, &inputs[i], e));
    BD_TRY(check_symbols(g, inputs, e));
    for (int v = 0; v < g->n_values; v++) {
        const bd_value *val = &g->values[v];
        x->vals[v].rank = -1;
        if (val->flags & BD_VAL_CONST) {
            x->vals[v].dtype = val->dtype;
            x->vals[v].rank = val->rank;
            memcpy(x->vals[v].dims, val->dims, sizeof val->dims);
            x->vals[v].data = val->data;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        bd_tensor *t = &x->vals[g->inputs[i]];
        *t = inputs[i];
        t->data = NULL;
        if (known && known[i]) {
            t->data = inputs[i].data; /* the caller's constant */
        } else if (bd_input_is_plan_value(g, i, &inputs[i])) { /* a small input deciding shapes: known now */
            size_t nb = (size_t)bd_numel(&inputs[i]) * bd_dtype_size(inputs[i].dtype);
            t->data = bd_malloc(nb ? nb : 1);
            BD_CHECK_ALLOC(e, t->data);
            memcpy(t->data, inputs[i].data, nb);
            x->owned[g->inputs[i]] = 1;
        }
    }
    BD_TRY(infer_pending(x, pending, e));
fail:
    bd_free(pending);
    if (st) bd_inst_free(x);
    return st;
}

braid_status bd_inst_next(const bd_inst *prev, const bd_tensor *actual, bd_inst *x, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = prev->g;
    BD_TRY(inst_alloc(g, x, e));
    x->stage = prev->stage + 1;
    memcpy(x->vals, prev->vals, (size_t)g->n_values * sizeof *x->vals); /* constants shared with prev */
    memcpy((void *)x->node, prev->node, (size_t)g->n_nodes * sizeof *x->node);
    for (int v = 0; v < g->n_values; v++) {
        int pr = g->values[v].producer;
        unsigned f = prev->vflag[v];
        if ((f & BD_IV_EXTERNAL) || (pr >= 0 && prev->live[pr])) x->vflag[v] |= BD_IV_EXTERNAL;
        if (!bd_inst_boundary(prev, v)) {
            x->vflag[v] |= f & BD_IV_RUNTIME; /* never read after its stage */
            continue;
        }
        const bd_tensor *a = &actual[v];
        if (f & BD_IV_RUNTIME) {
            if (a->rank < 0 || a->rank > BD_MAX_RANK || a->dtype != prev->vals[v].dtype) {
                st = BD_FAIL(e, BRAID_ERR_INTERNAL, "value '%s' has no actual shape after its stage ran", g->values[v].name);
                goto fail;
            }
            x->vals[v].rank = a->rank;
            memcpy(x->vals[v].dims, a->dims, sizeof a->dims);
        }
        if ((f & BD_IV_READBACK) && !x->vals[v].data) {
            size_t nb;
            BD_TRY(bd_tensor_nbytes(&x->vals[v], &nb, e));
            if (!a->data && nb) {
                st = BD_FAIL(e, BRAID_ERR_INTERNAL, "value '%s' was not read back after its stage ran", g->values[v].name);
                goto fail;
            }
            x->vals[v].data = bd_malloc(nb ? nb : 1);
            BD_CHECK_ALLOC(e, x->vals[v].data);
            if (nb) memcpy(x->vals[v].data, a->data, nb);
            x->owned[v] = 1;
        }
    }
    BD_TRY(infer_pending(x, prev->later, e));
    return BRAID_OK;
fail:
    bd_inst_free(x);
    return st;
}
