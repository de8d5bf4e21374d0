/* shape.c: specializes a graph to one set of input shapes: checks the run's
 * inputs against the declarations (symbolic dims must agree across inputs),
 * infers every value's dtype and shape in topological order, and folds nodes
 * whose inputs are all known (and Shape and Size, which need only a shape). */
#include "graph/shape.h"

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

int bd_signature(const bd_graph *g, const bd_tensor *inputs, int64_t *sig, int max)
{
    int n = 0;
    for (int i = 0; i < g->n_inputs; i++) {
        const bd_tensor *t = &inputs[i];
        if (n < max) sig[n] = t->rank;
        n++;
        for (int d = 0; d < t->rank; d++, n++)
            if (n < max) sig[n] = t->dims[d];
        if (bd_input_is_plan_value(g, i, t)) {
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
    if (v->dtype && t->dtype != v->dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' has dtype %s but the model declares %s", v->name,
                       bd_dtype_name(t->dtype), bd_dtype_name(v->dtype));
    if (t->rank < 0 || t->rank > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has rank %d; braid supports 0 to %d", v->name, t->rank,
                       BD_MAX_RANK);
    int bad = v->rank >= 0 && t->rank != v->rank;
    for (int d = 0; !bad && v->rank >= 0 && d < v->rank; d++) bad = v->dims[d] >= 0 && v->dims[d] != t->dims[d];
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
    for (int v = 0; x->vals && x->owned && v < x->g->n_values; v++)
        if (x->owned[v]) bd_free(x->vals[v].data);
    bd_free(x->vals);
    bd_free(x->owned);
    bd_free(x->live);
    bd_free(x->cost);
    for (int i = 0; x->fused && i < x->n_fused; i++) { /* a fused copy owns only these */
        bd_free(x->fused[i].name);
        bd_free(x->fused[i].in);
        bd_free(x->fused[i].out);
        bd_free(x->fused[i].params);
    }
    bd_free(x->fused);
    bd_free((void *)x->node);
    memset(x, 0, sizeof *x);
}

/* Estimated seconds of a node: FLOPs at 20 GFLOP/s plus bytes at 10 GB/s. */
static double node_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    double bytes = 0;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].dtype && in[i].rank >= 0) bytes += (double)bd_numel(&in[i]) * (double)bd_dtype_size(in[i].dtype);
    for (int i = 0; i < n->n_out; i++)
        if (out[i].dtype && out[i].rank >= 0) bytes += (double)bd_numel(&out[i]) * (double)bd_dtype_size(out[i].dtype);
    return bd_op_cost(n, in, out) / 20e9 + bytes / 10e9;
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
    bd_kernel k = {.node = n, .in = in, .n_in = n->n_in, .out = out, .n_out = n->n_out, .threads = 1, .err = e};
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

braid_status bd_inst_build(const bd_graph *g, const bd_tensor *inputs, bd_inst *x, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_tensor *in = NULL, *out = NULL;
    int max_in = 1, max_out = 1;
    memset(x, 0, sizeof *x);
    x->g = g;
    x->vals = bd_calloc((size_t)g->n_values + 1, sizeof *x->vals);
    x->owned = bd_calloc((size_t)g->n_values + 1, 1);
    x->live = bd_calloc((size_t)g->n_nodes + 1, 1);
    x->cost = bd_calloc((size_t)g->n_nodes + 1, sizeof *x->cost);
    x->node = bd_malloc(((size_t)g->n_nodes + 1) * sizeof *x->node);
    BD_CHECK_ALLOC(e, x->vals && x->owned && x->live && x->cost && x->node);
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
        if (bd_input_is_plan_value(g, i, &inputs[i])) { /* a small input deciding shapes: known now */
            size_t nb = (size_t)bd_numel(&inputs[i]) * bd_dtype_size(inputs[i].dtype);
            t->data = bd_malloc(nb ? nb : 1);
            BD_CHECK_ALLOC(e, t->data);
            memcpy(t->data, inputs[i].data, nb);
            x->owned[g->inputs[i]] = 1;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        max_in = BD_MAX(max_in, bd_node_slots(&g->nodes[i]));
        max_out = BD_MAX(max_out, g->nodes[i].n_out);
    }
    in = bd_calloc((size_t)max_in, sizeof *in);
    out = bd_calloc((size_t)max_out, sizeof *out);
    BD_CHECK_ALLOC(e, in && out);
    for (int i = 0; i < g->n_nodes; i++) {
        const bd_node *n = &g->nodes[i];
        int all_const = 1;
        /* Slots past the node's inputs read as omitted inputs, never as the
         * last node's (families may look at an optional input's dtype). */
        for (int k = 0; k < max_in; k++) { memset(&in[k], 0, sizeof in[k]); in[k].rank = -1; }
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] < 0) continue;
            in[k] = x->vals[n->in[k]];
            if (!in[k].data) all_const = 0;
        }
        for (int k = 0; k < n->n_out; k++) { memset(&out[k], 0, sizeof out[k]); out[k].rank = -1; }
        st = bd_op_infer(n, in, out, e);
        if (st) { bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type); goto fail; }
        for (int k = 0; k < n->n_out; k++) {
            size_t nb;
            if (out[k].rank < 0 || out[k].rank > BD_MAX_RANK || !bd_dtype_size(out[k].dtype)) {
                st = BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' (%s): inference left output %d without a shape",
                             n->name, n->op_type, k);
                goto fail;
            }
            st = bd_tensor_nbytes(&out[k], &nb, e);
            if (st) { bd_err_prefix(e, "node '%s' (%s): output %d: ", n->name, n->op_type, k); goto fail; }
            out[k].data = NULL;
            if (n->out[k] >= 0) x->vals[n->out[k]] = out[k];
        }
        unsigned flags = bd_op_table[n->op].flags;
        if ((all_const && !(flags & BD_OPF_NO_FOLD)) || n->op == BD_OP_Shape || n->op == BD_OP_Size) {
            st = fold(x, n, in, out, e); /* a BD_OPF_DATA_SHAPE kernel sets its outputs' actual dims */
            if (st) { bd_err_prefix(e, "node '%s' (%s): ", n->name, n->op_type); goto fail; }
        } else if (flags & BD_OPF_DATA_SHAPE) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                         "node '%s' (%s): its output shape depends on input values known only when the "
                         "model runs, which braid does not plan for yet", n->name, n->op_type);
            goto fail;
        } else {
            x->live[i] = 1;
            x->cost[i] = node_cost(n, in, out);
        }
    }
fail:
    bd_free(in);
    bd_free(out);
    if (st) bd_inst_free(x);
    return st;
}
