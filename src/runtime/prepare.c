/* prepare.c: the backend-independent half of running a model: specialize
 * the graph to the input shapes (or, for a later stage, to the boundary
 * values of the stage before), choose the stream budget and the plan-time
 * fusions, hand the stage's live nodes, their dependencies, costs and
 * intermediate buffers to the plan compiler, and verify the plan. A value
 * that a later stage reads is a kept buffer (never reused); one made by an
 * earlier stage is read where that stage left it (p->ext). */
#include "runtime/runtime.h"

#include <string.h>

/* Frees what build_sched_input made. */
static void sched_input_free(bd_prepared *p)
{
    bd_free(p->live);
    bd_free((void *)p->sin.pred_start);
    bd_free((void *)p->sin.pred);
    bd_free((void *)p->sin.cost);
    bd_free((void *)p->sin.buf_size);
    bd_free((void *)p->sin.buf_producer);
    bd_free((void *)p->sin.use_start);
    bd_free((void *)p->sin.use);
    bd_free((void *)p->sin.node_name);
    bd_free((void *)p->sin.buf_keep);
    bd_free(p->val_buf);
    bd_free(p->val_out);
    bd_free(p->val_prod);
    p->live = NULL;
    p->val_buf = p->val_out = p->val_prod = NULL;
    memset(&p->sin, 0, sizeof p->sin);
}

void bd_prepared_free(bd_prepared *p)
{
    if (!p) return;
    bd_inst_free(&p->inst);
    bd_plan_free(&p->plan);
    bd_free(p->sig);
    sched_input_free(p);
    bd_free(p->vals);
    bd_free(p->out_data);
    bd_free(p->out_bytes);
    bd_free(p->trace);
    bd_free(p->bsig);
    bd_free(p->bvals);
    bd_free(p->ext);
    bd_free(p->ext_from);
    bd_free(p->actual);
    bd_free(p->nest);
    memset(p, 0, sizeof *p);
}


void bd_trace_add(bd_prepared *p, int stream, int node, int threads, double t0, double t1)
{
    if (p->n_trace == p->cap_trace) {
        int cap = p->cap_trace ? 2 * p->cap_trace : 1024;
        if (cap > 1 << 20) return; /* a bounded profile */
        bd_trace_event *t = bd_realloc(p->trace, (size_t)cap * sizeof *t);
        if (!t) return;
        p->trace = t;
        p->cap_trace = cap;
    }
    p->trace[p->n_trace++] = (bd_trace_event){stream, node, threads, t0, t1};
}

/* Builds bd_sched_input from the instance's live nodes. */
static braid_status build_sched_input(bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    int nv = g->n_values, nn = g->n_nodes;
    int *node_live_idx = bd_malloc(((size_t)nn + 1) * sizeof(int));
    int *prod = bd_malloc(((size_t)nv + 1) * sizeof(int)); /* per value: its live producer */
    int *pred_start = NULL, *pred = NULL, *buf_producer = NULL, *use_start = NULL, *use = NULL;
    double *cost = NULL;
    size_t *buf_size = NULL;
    unsigned char *keep = NULL;
    const char **names = NULL;
    BD_CHECK_ALLOC(e, node_live_idx && prod);
    p->live = bd_malloc(((size_t)nn + 1) * sizeof(int));
    p->val_buf = bd_malloc(((size_t)nv + 1) * sizeof(int));
    p->val_out = bd_malloc(((size_t)nv + 1) * sizeof(int));
    BD_CHECK_ALLOC(e, p->live && p->val_buf && p->val_out);
    p->n_live = 0;
    for (int i = 0; i < nn; i++) {
        node_live_idx[i] = -1;
        if (p->inst.live[i]) { node_live_idx[i] = p->n_live; p->live[p->n_live++] = i; }
    }
    for (int v = 0; v < nv; v++) p->val_buf[v] = p->val_out[v] = prod[v] = -1;
    for (int i = 0; i < p->n_live; i++) { /* a fused node makes what its last part made */
        const bd_node *n = p->inst.node[p->live[i]];
        for (int o = 0; o < n->n_out; o++)
            if (n->out[o] >= 0) prod[n->out[o]] = p->live[i];
    }
    /* Graph outputs this stage makes get output buffers; one whose size only
     * its kernel learns (ALLOC) lives where the kernel puts it. */
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o];
        if (p->val_out[v] < 0 && prod[v] >= 0 && !(p->inst.vflag[v] & BD_IV_ALLOC)) p->val_out[v] = o;
    }

    int L = p->n_live, n_pred = 0, n_bufs = 0, n_use = 0;
    for (int i = 0; i < L; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        n_pred += n->n_in;
        n_use += n->n_in;
        n_bufs += n->n_out;
    }
    pred_start = bd_malloc(((size_t)L + 1) * sizeof(int));
    pred = bd_malloc(((size_t)n_pred + 1) * sizeof(int));
    cost = bd_malloc(((size_t)L + 1) * sizeof(double));
    names = bd_malloc(((size_t)L + 1) * sizeof(char *));
    buf_size = bd_malloc(((size_t)n_bufs + 1) * sizeof(size_t));
    buf_producer = bd_malloc(((size_t)n_bufs + 1) * sizeof(int));
    use_start = bd_calloc((size_t)n_bufs + 2, sizeof(int));
    use = bd_malloc(((size_t)n_use + 1) * sizeof(int));
    keep = bd_calloc((size_t)n_bufs + 1, 1);
    BD_CHECK_ALLOC(e, pred_start && pred && cost && names && buf_size && buf_producer && use_start && use && keep);
    /* Buffers: outputs of live nodes that are not graph outputs. */
    int nb = 0;
    for (int i = 0; i < L; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        cost[i] = p->inst.cost[p->live[i]];
        names[i] = n->name;
        for (int o = 0; o < n->n_out; o++) {
            int v = n->out[o];
            if (v < 0) continue;
            prod[v] = p->live[i];
            if (p->val_out[v] >= 0 || (p->inst.vflag[v] & BD_IV_ALLOC)) continue;
            size_t bytes;
            BD_TRY(bd_tensor_nbytes(&p->inst.vals[v], &bytes, e));
            p->val_buf[v] = nb;
            keep[nb] = (p->inst.vflag[v] & BD_IV_EXPORT) != 0; /* a later stage reads it */
            buf_size[nb] = bytes ? bytes : 1;
            buf_producer[nb++] = i;
        }
    }
    /* Predecessors and buffer users (CSR). */
    int k = 0;
    for (int i = 0; i < L; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        pred_start[i] = k;
        for (int j = 0; j < n->n_in; j++) {
            int v = n->in[j];
            if (v < 0 || prod[v] < 0) continue;
            int pl = node_live_idx[prod[v]];
            if (pl >= 0) pred[k++] = pl;
            if (p->val_buf[v] >= 0) use_start[p->val_buf[v] + 1]++;
        }
    }
    pred_start[L] = k;
    for (int b = 0; b < nb; b++) use_start[b + 1] += use_start[b];
    int *fill = bd_calloc((size_t)nb + 1, sizeof(int));
    BD_CHECK_ALLOC(e, fill);
    for (int i = 0; i < L; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        for (int j = 0; j < n->n_in; j++) {
            int v = n->in[j];
            if (v < 0 || p->val_buf[v] < 0) continue;
            int b = p->val_buf[v];
            use[use_start[b] + fill[b]++] = i;
        }
    }
    bd_free(fill);
    p->sin = (bd_sched_input){.n_nodes = L, .pred_start = pred_start, .pred = pred, .cost = cost,
                              .sync_cost = 20e-6, .n_bufs = nb, .buf_size = buf_size,
                              .buf_producer = buf_producer, .use_start = use_start, .use = use,
                              .node_name = names, .buf_keep = keep};
    bd_free(node_live_idx);
    bd_free(p->val_prod);
    p->val_prod = prod;
    return BRAID_OK;
fail:
    bd_free(node_live_idx);
    bd_free(prod);
    bd_free(pred_start);
    bd_free(pred);
    bd_free(cost);
    bd_free(names);
    bd_free(buf_size);
    bd_free(buf_producer);
    bd_free(use_start);
    bd_free(use);
    bd_free(keep);
    return st;
}

/* The graph's parallelism: total estimated work over the work on its
 * critical path (1 for a chain, about N for N equal branches). */
static braid_status parallelism(const bd_sched_input *in, double *out, bd_err *e)
{
    double total = 0, crit = 0, *finish = bd_calloc((size_t)in->n_nodes + 1, sizeof *finish);
    if (!finish) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < in->n_nodes; i++) {
        double start = 0;
        for (int k = in->pred_start[i]; k < in->pred_start[i + 1]; k++) start = BD_MAX(start, finish[in->pred[k]]);
        finish[i] = start + in->cost[i];
        crit = BD_MAX(crit, finish[i]);
        total += in->cost[i];
    }
    bd_free(finish);
    *out = crit > 0 ? total / crit : 1;
    return BRAID_OK;
}

/* The plan of a built instance (p->inst): streams, fusions, commands,
 * memory, verification, and the per-value bindings the backends fill. */
static braid_status plan_inst(bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    int max_streams = p->opts.max_streams;
    BD_TRY(build_sched_input(p, e));
    /* Automatic (max_streams < 0 gives its cap): the width the DAG needs after
     * merging cheap chains. Streams share the cores, so a graph that is mostly
     * one chain (parallelism under the backend's minimum, else
     * BD_MIN_PARALLELISM) runs serially: its branches cannot win back the
     * threads they take from the critical path. */
    int cap = max_streams ? (max_streams < 0 ? -max_streams : max_streams) : BD_AUTO_MAX_STREAMS;
    if (max_streams <= 0) {
        double par = 1;
        BD_TRY(parallelism(&p->sin, &par, e));
        if (par < (p->opts.min_parallelism > 0 ? p->opts.min_parallelism : BD_MIN_PARALLELISM)) cap = 1;
    }
    int folded = 0;
    if (!p->opts.no_fold) BD_TRY(bd_inst_fuse_add(&p->inst, cap, p->opts.fill_cost, &folded, e));
    if (folded) { /* the DAG changed: describe it again */
        sched_input_free(p);
        BD_TRY(build_sched_input(p, e));
    }
    BD_TRY(bd_plan_build(&p->sin, cap, &p->plan, e));
    st = bd_plan_verify(&p->sin, &p->plan, e);
    if (st) { bd_err_prefix(e, "plan verification failed: "); goto fail; }
    p->vals = bd_malloc(((size_t)g->n_values + 1) * sizeof(bd_tensor));
    p->actual = bd_calloc((size_t)g->n_values + 1, sizeof(bd_tensor));
    p->out_data = bd_calloc((size_t)g->n_outputs + 1, sizeof(void *));
    p->out_bytes = bd_calloc((size_t)g->n_outputs + 1, sizeof(size_t));
    p->nest = bd_calloc((size_t)p->n_live + 1, sizeof *p->nest);
    BD_CHECK_ALLOC(e, p->vals && p->actual && p->out_data && p->out_bytes && p->nest);
    memcpy(p->vals, p->inst.vals, (size_t)g->n_values * sizeof(bd_tensor));
    for (int o = 0; o < g->n_outputs; o++)
        if (p->val_out[g->outputs[o]] >= 0)
            BD_TRY(bd_tensor_nbytes(&p->inst.vals[g->outputs[o]], &p->out_bytes[o], e));
    /* The values read when this stage ends. */
    for (int v = 0; v < g->n_values; v++) p->n_bvals += bd_inst_boundary(&p->inst, v);
    p->bvals = bd_malloc(((size_t)p->n_bvals + 1) * sizeof *p->bvals);
    BD_CHECK_ALLOC(e, p->bvals);
    for (int v = 0, k = 0; v < g->n_values; v++)
        if (bd_inst_boundary(&p->inst, v)) p->bvals[k++] = v;
fail:
    return st;
}

braid_status bd_prepare(const bd_graph *g, const bd_tensor *inputs, const unsigned char *known,
                        const bd_prepare_opts *o, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    memset(p, 0, sizeof *p);
    p->g = g;
    p->opts = *o;
    p->known = known;
    int len = bd_signature(g, inputs, known, NULL, 0);
    p->sig = bd_malloc(((size_t)len + 1) * sizeof(int64_t));
    BD_CHECK_ALLOC(e, p->sig);
    p->sig_len = bd_signature(g, inputs, known, p->sig, len);
    BD_TRY(bd_inst_build(g, inputs, known, &p->inst, e));
    if (o->layout && !known) BD_TRY(bd_inst_layout(&p->inst, inputs, e));
    p->g = p->inst.g; /* a flat graph where an If was replaced by its branch, or the layout pass ran */
    BD_TRY(plan_inst(p, e));
    return BRAID_OK;
fail:
    bd_prepared_free(p);
    return st;
}

braid_status bd_prepare_next(bd_prepared *prev, const bd_tensor *actual, bd_prepared *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = prev->g;
    memset(p, 0, sizeof *p);
    p->g = prev->g;
    p->opts = prev->opts;
    p->known = prev->known;
    p->prev = prev;
    BD_TRY(bd_inst_next(&prev->inst, actual, &p->inst, e));
    p->g = p->inst.g;
    BD_TRY(plan_inst(p, e));
    /* Values of earlier stages that this one reads, and the stage of each. */
    for (int v = 0; v < g->n_values; v++) p->n_ext += (p->inst.vflag[v] & BD_IV_EXTERNAL) != 0;
    p->ext = bd_malloc(((size_t)p->n_ext + 1) * sizeof *p->ext);
    p->ext_from = bd_malloc(((size_t)p->n_ext + 1) * sizeof *p->ext_from);
    BD_CHECK_ALLOC(e, p->ext && p->ext_from);
    p->n_ext = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (!(p->inst.vflag[v] & BD_IV_EXTERNAL)) continue;
        bd_prepared *q = prev;
        while (q && q->val_prod[v] < 0) q = q->prev;
        if (!q) continue; /* folded: a constant */
        p->ext[p->n_ext] = v;
        p->ext_from[p->n_ext++] = q;
    }
    return BRAID_OK;
fail:
    bd_prepared_free(p);
    return st;
}

double bd_plan_traffic_bytes(const bd_prepared *p)
{
    double total = 0;
    for (int i = 0; i < p->n_live; i++) {
        const bd_node *n = p->inst.node[p->live[i]];
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? n->n_out : n->n_in;
            const int *idx = pass ? n->out : n->in;
            for (int k = 0; k < cnt; k++) {
                size_t nb = 0;
                bd_err e = {0};
                if (idx[k] >= 0 && bd_tensor_nbytes(&p->inst.vals[idx[k]], &nb, &e) == BRAID_OK) total += (double)nb;
            }
        }
    }
    return total;
}
