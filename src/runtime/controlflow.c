/* controlflow.c: the control-flow engine (see controlflow.h). Written once against the
 * backend's primitives, so the CPU and CUDA run one definition of If, Loop
 * and Scan.
 *
 * Nested plans. Each subgraph of a node keeps the first stages of its plans,
 * keyed by the signature of its inputs (formal ones and captures: shapes,
 * and the values of small inputs that decide shapes); captures whose values
 * are plan-time constants of the outer plan are constants of the nested one
 * (they fold there) and stay out of the key. A nested plan is an ordinary
 * plan: streams, events, memory plan, verifier, stages; its memory is its
 * own, held by this state, which the outer plan owns and frees, so nothing
 * of it outlives the node's plan.
 *
 * If: the condition is read on the host (a synchronization on CUDA), the
 * branch's plan runs with the captures, and its outputs are copied out.
 * Loop: M and the condition are read once; each iteration writes the
 * iteration number and condition, runs the body with the carried values
 * (the inputs first, then the engine's state buffers), copies the carried
 * outputs back into the state, appends the scan outputs, and reads the body's
 * condition when the loop has one (one synchronization per iteration on
 * CUDA). A loop stops at the session's iteration limit with LIMIT. Scan:
 * slices of the scan inputs along their axes (2-D copies, or the input
 * itself where a slice is contiguous), in either direction, feed the body;
 * scan outputs are written at their axes and directions; opset 8's batch
 * axis runs one scan per batch row. */
#include "runtime/controlflow.h"

#include <string.h>

#include "ops/control.h"
#include "util/seqval.h"

#define NEST_CACHE 16

typedef struct nest_sub {
    const bd_graph *g;
    const char *name;
    bd_prepared *plans[NEST_CACHE]; /* first stages, most recently used first */
    unsigned char *known;           /* per input: a capture whose value is a plan-time constant */
} nest_sub;

typedef struct bd_nest {
    bd_nest_ops ops;
    const bd_node *node;
    int n_sub;
    nest_sub sub[2];
    void *scalars; /* backend memory: the body's iteration number (int64) and condition (bool) */
    int n_buf;     /* slots: state [0, 2N) (two sets, written in turn), scan accumulators [2N, 2N+K),
                    * slices [2N+K, 2N+K+M), then the outputs the engine allocates */
    void **buf;
    size_t *cap;
    int64_t iters; /* of the last run, for prints */
} bd_nest;

void bd_nest_free(bd_nest *n)
{
    if (!n) return;
    for (int s = 0; s < n->n_sub; s++) {
        for (int c = 0; c < NEST_CACHE; c++) bd_stage_free(n->sub[s].plans[c]);
        bd_free(n->sub[s].known);
    }
    for (int i = 0; n->buf && i < n->n_buf; i++)
        if (n->buf[i]) n->ops.free(n->ops.runner.ctx, n->buf[i]);
    if (n->scalars) n->ops.free(n->ops.runner.ctx, n->scalars);
    bd_free(n->buf);
    bd_free(n->cap);
    bd_free(n);
}

static braid_status nest_make(bd_nest **slot, const bd_nest_ops *ops, const bd_nest_call *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    const bd_control_params *p = nd->params;
    bd_nest *n = bd_calloc(1, sizeof *n);
    if (!n) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    n->ops = *ops;
    n->node = nd;
    n->n_sub = p->n_branches;
    int base = bd_node_formal_in(nd);
    for (int s = 0; s < n->n_sub; s++) {
        const bd_graph *g = p->branch[s];
        int nf = bd_subgraph_formal_in(g);
        n->sub[s].g = g;
        n->sub[s].name = nd->op == BD_OP_If ? (s ? "else_branch" : "then_branch") : "body";
        n->sub[s].known = bd_calloc((size_t)g->n_inputs + 1, 1);
        BD_CHECK_ALLOC(e, n->sub[s].known);
        for (int j = 0; j < g->n_captures; j++) n->sub[s].known[nf + j] = c->host_in[base + j].data != NULL;
    }
    n->n_buf = 2 * p->n_state + p->n_scan_out + p->n_scan_in + nd->n_out;
    n->buf = bd_calloc((size_t)n->n_buf + 1, sizeof *n->buf);
    n->cap = bd_calloc((size_t)n->n_buf + 1, sizeof *n->cap);
    BD_CHECK_ALLOC(e, n->buf && n->cap);
    BD_TRY(ops->alloc(ops->runner.ctx, &n->scalars, 16, e));
    *slot = n;
    return BRAID_OK;
fail:
    bd_nest_free(n);
    return st;
}

/* Buffer slot i holds at least bytes; keep: its contents so far survive. */
static braid_status grow(bd_nest *n, int i, size_t bytes, size_t keep, bd_err *e)
{
    braid_status st = BRAID_OK;
    void *q = NULL, *ctx = n->ops.runner.ctx;
    if (n->cap[i] >= bytes && n->buf[i]) return BRAID_OK;
    size_t cap = BD_MAX(bytes, n->cap[i] + n->cap[i] / 2);
    BD_TRY(n->ops.alloc(ctx, &q, cap ? cap : 1, e));
    if (keep && n->buf[i]) BD_TRY(n->ops.copy2d(ctx, q, keep, n->buf[i], keep, keep, 1, e));
    if (n->buf[i]) n->ops.free(ctx, n->buf[i]);
    n->buf[i] = q;
    n->cap[i] = cap;
    return BRAID_OK;
fail:
    if (q) n->ops.free(ctx, q);
    return st;
}

static braid_status copy(bd_nest *n, void *dst, const void *src, size_t bytes, bd_err *e)
{
    if (!bytes || dst == src) return BRAID_OK;
    return n->ops.copy2d(n->ops.runner.ctx, dst, bytes, src, bytes, bytes, 1, e);
}

/* The first stage of subgraph s's plan for these inputs (shapes, and data in
 * backend memory): cached, or made now. Small inputs that decide shapes are
 * read to the host for the key. */
static braid_status sub_plan(bd_nest *n, int s, const bd_nest_call *c, const bd_tensor *in, bd_prepared **out,
                             bd_err *e)
{
    braid_status st = BRAID_OK;
    nest_sub *sb = &n->sub[s];
    const bd_graph *g = sb->g;
    int nf = bd_subgraph_formal_in(g), base = bd_node_formal_in(c->node);
    int64_t sig_buf[128], *sig = sig_buf;
    char small[64][BD_PLAN_VALUE_MAX * 8];
    bd_tensor *hv = bd_calloc((size_t)g->n_inputs + 1, sizeof *hv);
    bd_prepared *p = NULL;
    BD_CHECK_ALLOC(e, hv);
    for (int i = 0; i < g->n_inputs; i++) {
        hv[i] = in[i];
        hv[i].data = NULL;
        if (sb->known[i]) hv[i].data = c->host_in[base + i - nf].data;
        else if (i < 64 && g->input_shapes && g->input_shapes[i] && in[i].data) {
            bd_tensor t = in[i];
            t.data = small[i];
            if (bd_input_is_plan_value(g, i, &t)) {
                BD_TRY(n->ops.runner.read(n->ops.runner.ctx, small[i], in[i].data,
                                          (size_t)bd_numel(&t) * bd_dtype_size(t.dtype), e));
                hv[i].data = small[i];
            }
        }
    }
    int len = bd_signature(g, hv, sb->known, NULL, 0);
    if (len > 128) {
        sig = bd_malloc((size_t)len * sizeof *sig);
        BD_CHECK_ALLOC(e, sig);
    }
    bd_signature(g, hv, sb->known, sig, len);
    int k = 0;
    while (k < NEST_CACHE && sb->plans[k] &&
           !(sb->plans[k]->sig_len == len && !memcmp(sb->plans[k]->sig, sig, (size_t)len * sizeof *sig)))
        k++;
    if (k == NEST_CACHE || !sb->plans[k]) {
        p = bd_calloc(1, sizeof *p);
        BD_CHECK_ALLOC(e, p);
        st = bd_prepare(g, hv, sb->known, c->opts, p, e);
        if (!st) st = bd_stage_prepare(&n->ops.runner, p, e);
        if (st) {
            bd_free(p);
            p = NULL;
            bd_err_prefix(e, "subgraph '%s': ", sb->name);
            goto fail;
        }
        k = NEST_CACHE - 1;
        bd_stage_free(sb->plans[k]);
        sb->plans[k] = p;
        p = NULL;
    }
    bd_prepared *q = sb->plans[k];
    memmove(&sb->plans[1], &sb->plans[0], (size_t)k * sizeof *sb->plans);
    sb->plans[0] = q;
    *out = q;
fail:
    if (sig != sig_buf) bd_free(sig);
    bd_free(hv);
    return st;
}

/* Runs subgraph s on its formal inputs (then the node's captures). */
static braid_status run_sub(bd_nest *n, int s, const bd_nest_call *c, const bd_tensor *formal, bd_run_out *outs,
                            bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = n->sub[s].g;
    int nf = bd_subgraph_formal_in(g), base = bd_node_formal_in(c->node);
    bd_tensor *in = bd_calloc((size_t)g->n_inputs + 1, sizeof *in);
    bd_prepared *p = NULL, *last = NULL;
    BD_CHECK_ALLOC(e, in);
    for (int i = 0; i < g->n_inputs; i++) in[i] = i < nf ? formal[i] : c->in[base + i - nf];
    BD_TRY(sub_plan(n, s, c, in, &p, e));
    st = bd_stages_run(p, in, outs, &last, e);
    if (st) bd_err_prefix(e, "subgraph '%s': ", n->sub[s].name);
fail:
    bd_free(in);
    return st;
}

/* Output i of the node: shape t; its memory where the plan put it, or the
 * engine's when its size was not known (slot). */
static braid_status bind_out(bd_nest *n, const bd_nest_call *c, int i, const bd_tensor *t, bd_err *e)
{
    bd_tensor *o = &c->out[i];
    char a[160], b[160];
    if (c->node->out[i] < 0) return BRAID_OK;
    if (bd_shape_known(o) && o->data) {
        if (!bd_shape_equal(o, t) || !bd_dt_alike(o->dtype, t->dtype))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "output %d has shape %s %s but was planned as %s %s", i,
                           bd_dtype_name(t->dtype), bd_shape_str(t, a, sizeof a), bd_dtype_name(o->dtype),
                           bd_shape_str(o, b, sizeof b));
        return BRAID_OK;
    }
    size_t bytes;
    int slot = n->n_buf - c->node->n_out + i;
    BD_TRY_RET(bd_tensor_nbytes(t, &bytes, e));
    BD_TRY_RET(grow(n, slot, bytes, 0, e));
    *o = *t;
    o->data = n->buf[slot];
    return BRAID_OK;
}

static braid_status read_flag(bd_nest *n, const void *src, int *out, bd_err *e)
{
    unsigned char b = 0;
    BD_TRY_RET(n->ops.runner.read(n->ops.runner.ctx, &b, src, 1, e));
    *out = b != 0;
    return BRAID_OK;
}

/* ---- If ---------------------------------------------------------------------------- */

static braid_status run_if(bd_nest *n, const bd_nest_call *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    int cond = 0;
    bd_run_out *outs = bd_calloc((size_t)nd->n_out + 1, sizeof *outs);
    BD_CHECK_ALLOC(e, outs);
    if (c->host_in[0].data) cond = *(const unsigned char *)c->host_in[0].data != 0;
    else BD_TRY(read_flag(n, c->in[0].data, &cond, e));
    int s = cond ? 0 : 1;
    BD_TRY(run_sub(n, s, c, NULL, outs, e));
    for (int o = 0; o < nd->n_out; o++) {
        size_t bytes;
        BD_TRY(bind_out(n, c, o, &outs[o].t, e));
        BD_TRY(bd_tensor_nbytes(&outs[o].t, &bytes, e));
        if (nd->out[o] >= 0) BD_TRY(copy(n, c->out[o].data, outs[o].t.data, bytes, e));
    }
    n->iters = s; /* the branch taken, for prints */
fail:
    bd_free(outs);
    return st;
}

/* ---- Loop -------------------------------------------------------------------------- */

static braid_status run_loop(bd_nest *n, const bd_nest_call *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    const bd_control_params *p = nd->params;
    const bd_graph *body = p->branch[0];
    void *ctx = n->ops.runner.ctx;
    int N = p->n_state, K = p->n_scan_out, formal = bd_node_formal_in(nd), cond = 1;
    const bd_tensor *m_in = formal > 0 && nd->in[0] >= 0 ? &c->in[0] : NULL;
    const bd_tensor *c_in = formal > 1 && nd->in[1] >= 0 ? &c->in[1] : NULL;
    int64_t M = INT64_MAX, limit = c->opts->loop_limit > 0 ? c->opts->loop_limit : BD_LOOP_LIMIT_DEFAULT, it = 0;
    bd_tensor *bin = bd_calloc((size_t)N + 3, sizeof *bin), *cur = bd_calloc((size_t)N + 1, sizeof *cur);
    bd_tensor *per = bd_calloc((size_t)K + 1, sizeof *per); /* one iteration's scan outputs */
    bd_run_out *outs = bd_calloc((size_t)body->n_outputs + 1, sizeof *outs);
    size_t *per_bytes = bd_calloc((size_t)K + 1, sizeof *per_bytes);
    BD_CHECK_ALLOC(e, bin && cur && per && outs && per_bytes);
    if (m_in) {
        if (c->host_in[0].data) M = *(const int64_t *)c->host_in[0].data;
        else BD_TRY(n->ops.runner.read(ctx, &M, m_in->data, sizeof M, e));
    }
    if (c_in) {
        if (c->host_in[1].data) cond = *(const unsigned char *)c->host_in[1].data != 0;
        else BD_TRY(read_flag(n, c_in->data, &cond, e));
    }
    for (int j = 0; j < N; j++) cur[j] = c->in[2 + j];
    unsigned char *scal = n->scalars;
    for (; it < M && cond; it++) {
        if (it >= limit) {
            st = BD_FAIL(e, BRAID_ERR_LIMIT, "ran past the session's loop limit of %lld iterations "
                         "(braid_options_set_loop_limit, --loop-limit)", (long long)limit);
            goto fail;
        }
        unsigned char host[16] = {0};
        memcpy(host, &it, 8);
        host[8] = 1; /* the condition the body sees: true, or the loop would have stopped */
        BD_TRY(n->ops.write(ctx, scal, host, 9, e));
        bin[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 0, .data = scal};
        bin[1] = (bd_tensor){.dtype = BRAID_DTYPE_BOOL, .rank = 0, .data = scal + 8};
        for (int i = 0; i < 2; i++) bd_loop_formal_shape(n->sub[0].g, i, &bin[i]);
        for (int j = 0; j < N; j++) bin[2 + j] = cur[j];
        BD_TRY(run_sub(n, 0, c, bin, outs, e));
        /* Carried values into the other state set: an output may be any
         * input passed through (the body has finished reading them). */
        for (int j = 0; j < N; j++) {
            size_t bytes;
            const bd_tensor *t = &outs[1 + j].t;
            int slot = j + (int)(it & 1) * N;
            if (!bd_dt_alike(t->dtype, cur[j].dtype)) {
                st = BD_FAIL(e, BRAID_ERR_DTYPE, "loop-carried value %d enters the body as %s and leaves it as %s",
                             j, bd_dtype_name(cur[j].dtype), bd_dtype_name(t->dtype));
                goto fail;
            }
            BD_TRY(bd_tensor_nbytes(t, &bytes, e));
            BD_TRY(grow(n, slot, bytes, 0, e));
            BD_TRY(copy(n, n->buf[slot], t->data, bytes, e));
            cur[j] = *t;
            cur[j].data = n->buf[slot];
        }
        /* Scan outputs: straight into a planned output, else appended. */
        for (int k = 0; k < K; k++) {
            const bd_tensor *t = &outs[1 + N + k].t;
            int o = N + k;
            if (it == 0) {
                per[k] = *t;
                BD_TRY(bd_tensor_nbytes(t, &per_bytes[k], e));
            } else if (!bd_shape_equal(t, &per[k]) || t->dtype != per[k].dtype) {
                char a[160], b[160];
                st = BD_FAIL(e, BRAID_ERR_SHAPE, "scan output %d has shape %s in iteration %lld but %s before: the "
                             "iterations must agree", k, bd_shape_str(t, a, sizeof a), (long long)it,
                             bd_shape_str(&per[k], b, sizeof b));
                goto fail;
            }
            if (o >= nd->n_out || nd->out[o] < 0) continue;
            if (c->out[o].data && c->out[o].dims[0] >= 0) {
                if (it >= c->out[o].dims[0]) {
                    st = BD_FAIL(e, BRAID_ERR_INTERNAL, "scan output %d was planned for %lld iterations", k,
                                 (long long)c->out[o].dims[0]);
                    goto fail;
                }
                BD_TRY(copy(n, (char *)c->out[o].data + (size_t)it * per_bytes[k], t->data, per_bytes[k], e));
            } else {
                BD_TRY(grow(n, 2 * N + k, (size_t)(it + 1) * per_bytes[k], (size_t)it * per_bytes[k], e));
                BD_TRY(copy(n, (char *)n->buf[2 * N + k] + (size_t)it * per_bytes[k], t->data, per_bytes[k], e));
            }
        }
        if (c_in) BD_TRY(read_flag(n, outs[0].t.data, &cond, e));
    }
    n->iters = it;
    /* The loop's outputs: final carried values, then the scan outputs. */
    for (int j = 0; j < N && j < nd->n_out; j++) {
        size_t bytes;
        BD_TRY(bind_out(n, c, j, &cur[j], e));
        BD_TRY(bd_tensor_nbytes(&cur[j], &bytes, e));
        if (nd->out[j] >= 0) BD_TRY(copy(n, c->out[j].data, cur[j].data, bytes, e));
    }
    for (int k = 0; k < K && N + k < nd->n_out; k++) {
        int o = N + k;
        bd_tensor t = c->out[o];
        if (nd->out[o] < 0) continue;
        if (it > 0) {
            t = per[k];
            memmove(t.dims + 1, per[k].dims, sizeof t.dims - sizeof t.dims[0]);
            t.dims[0] = it;
            t.rank = per[k].rank + 1;
        } else { /* no iteration: the shape planned, unknown dims 0 */
            if (t.rank < 0) { t.rank = 1; }
            for (int d = 0; d < t.rank; d++)
                if (d == 0 || t.dims[d] < 0) t.dims[d] = 0;
        }
        int planned = c->out[o].data && c->out[o].dims[0] >= 0;
        BD_TRY(bind_out(n, c, o, &t, e));
        if (!planned && it > 0) BD_TRY(copy(n, c->out[o].data, n->buf[2 * N + k], (size_t)it * per_bytes[k], e));
    }
fail:
    bd_free(bin);
    bd_free(cur);
    bd_free(per);
    bd_free(outs);
    bd_free(per_bytes);
    return st;
}

/* ---- Scan -------------------------------------------------------------------------- */

/* One independent scan: batch row b of an opset-8 Scan, or the whole of a
 * later one (b = 0, B = 1). */
static braid_status scan_one(bd_nest *n, const bd_nest_call *c, int64_t b, int64_t L, bd_tensor *bin, bd_tensor *cur,
                             bd_run_out *outs, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    const bd_control_params *p = nd->params;
    int N = p->n_state, M = p->n_scan_in, K = p->n_scan_out, f = p->first, B = p->batch;
    void *ctx = n->ops.runner.ctx;
    for (int j = 0; j < N; j++) { /* this row's initial state */
        size_t bytes;
        cur[j] = c->in[f + j];
        if (B) {
            cur[j].rank--;
            memmove(cur[j].dims, cur[j].dims + 1, sizeof cur[j].dims - sizeof cur[j].dims[0]);
        }
        BD_TRY(bd_tensor_nbytes(&cur[j], &bytes, e));
        cur[j].data = (char *)c->in[f + j].data + (size_t)b * bytes;
    }
    for (int64_t t = 0; t < L; t++) {
        for (int m = 0; m < M; m++) {
            bd_tensor x = c->in[f + N + m], *s = &bin[N + m];
            size_t es = bd_dtype_size(x.dtype);
            if (B) {
                x.rank--;
                memmove(x.dims, x.dims + 1, sizeof x.dims - sizeof x.dims[0]);
            }
            int axis;
            BD_TRY(bd_axis(p->in_axis[m] - B, x.rank, &axis, e));
            bd_scan_view v = bd_scan_view_of(&x, axis);
            int64_t pos = p->in_dir[m] ? L - 1 - t : t;
            const char *src = (const char *)c->in[f + N + m].data + (size_t)(b * v.outer * v.len * v.inner) * es +
                              (size_t)(pos * v.inner) * es;
            *s = x;
            for (int d = axis; d + 1 < x.rank; d++) s->dims[d] = x.dims[d + 1];
            s->rank = x.rank - 1;
            if (v.outer == 1) s->data = (void *)src; /* contiguous: the input itself */
            else {
                int slot = 2 * N + K + m;
                size_t row = (size_t)v.inner * es;
                BD_TRY(grow(n, slot, row * (size_t)v.outer, 0, e));
                BD_TRY(n->ops.copy2d(ctx, n->buf[slot], row, src, row * (size_t)v.len, row, (size_t)v.outer, e));
                s->data = n->buf[slot];
            }
        }
        for (int j = 0; j < N; j++) bin[j] = cur[j];
        BD_TRY(run_sub(n, 0, c, bin, outs, e));
        for (int j = 0; j < N; j++) { /* into the other state set, as in a Loop */
            size_t bytes;
            const bd_tensor *y = &outs[j].t;
            int slot = j + (int)(t & 1) * N;
            if (!bd_dt_alike(y->dtype, cur[j].dtype)) {
                st = BD_FAIL(e, BRAID_ERR_DTYPE, "state variable %d enters the body as %s and leaves it as %s", j,
                             bd_dtype_name(cur[j].dtype), bd_dtype_name(y->dtype));
                goto fail;
            }
            BD_TRY(bd_tensor_nbytes(y, &bytes, e));
            BD_TRY(grow(n, slot, bytes, 0, e));
            BD_TRY(copy(n, n->buf[slot], y->data, bytes, e));
            cur[j] = *y;
            cur[j].data = n->buf[slot];
        }
        for (int k = 0; k < K && N + k < nd->n_out; k++) {
            int o = N + k;
            const bd_tensor *y = &outs[N + k].t;
            if (nd->out[o] < 0) continue;
            /* The output: y's shape with L at the output axis (after the batch). */
            bd_tensor full = *y;
            int axis;
            BD_TRY(bd_axis(p->out_axis[k] - B, y->rank + 1, &axis, e));
            for (int d = y->rank; d > axis; d--) full.dims[d] = y->dims[d - 1];
            full.dims[axis] = L;
            full.rank = y->rank + 1;
            if (B) {
                memmove(full.dims + 1, full.dims, sizeof full.dims - sizeof full.dims[0]);
                full.dims[0] = c->in[f].dims[0];
                full.rank++;
            }
            if (t == 0 && b == 0) BD_TRY(bind_out(n, c, o, &full, e));
            else if (!bd_shape_equal(&full, &c->out[o]) || full.dtype != c->out[o].dtype) {
                char a1[160], a2[160];
                st = BD_FAIL(e, BRAID_ERR_SHAPE, "scan output %d has shape %s in iteration %lld but %s before: the "
                             "iterations must agree", k, bd_shape_str(&full, a1, sizeof a1), (long long)t,
                             bd_shape_str(&c->out[o], a2, sizeof a2));
                goto fail;
            }
            size_t es = bd_dtype_size(y->dtype);
            bd_tensor row = full;
            if (B) {
                row.rank--;
                memmove(row.dims, row.dims + 1, sizeof row.dims - sizeof row.dims[0]);
            }
            bd_scan_view v = bd_scan_view_of(&row, axis);
            int64_t pos = p->out_dir[k] ? L - 1 - t : t;
            char *dst = (char *)c->out[o].data + (size_t)(b * v.outer * v.len * v.inner) * es + (size_t)(pos * v.inner) * es;
            size_t w = (size_t)v.inner * es;
            if (w) BD_TRY(n->ops.copy2d(ctx, dst, w * (size_t)v.len, y->data, w, w, (size_t)v.outer, e));
        }
    }
    for (int j = 0; j < N && j < nd->n_out; j++) { /* this row's final state */
        size_t bytes;
        if (nd->out[j] < 0) continue;
        bd_tensor full = cur[j];
        if (B) {
            memmove(full.dims + 1, cur[j].dims, sizeof full.dims - sizeof full.dims[0]);
            full.dims[0] = c->in[f + j].dims[0];
            full.rank++;
        }
        if (b == 0) BD_TRY(bind_out(n, c, j, &full, e));
        BD_TRY(bd_tensor_nbytes(&cur[j], &bytes, e));
        BD_TRY(copy(n, (char *)c->out[j].data + (size_t)b * bytes, cur[j].data, bytes, e));
    }
fail:
    return st;
}

static braid_status run_scan(bd_nest *n, const bd_nest_call *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    const bd_control_params *p = nd->params;
    const bd_graph *body = p->branch[0];
    int N = p->n_state, M = p->n_scan_in, K = p->n_scan_out, f = p->first, B = p->batch;
    bd_tensor *bin = bd_calloc((size_t)(N + M) + 1, sizeof *bin), *cur = bd_calloc((size_t)N + 1, sizeof *cur);
    bd_run_out *outs = bd_calloc((size_t)body->n_outputs + 1, sizeof *outs);
    BD_CHECK_ALLOC(e, bin && cur && outs);
    const bd_tensor *x0 = &c->in[f + N];
    int axis;
    BD_TRY(bd_axis(p->in_axis[0], x0->rank, &axis, e));
    int64_t L = x0->dims[axis], rows = B ? x0->dims[0] : 1;
    if (B && f > 0 && nd->in[0] >= 0) { /* sequence_lens: braid runs only full-length rows */
        const bd_tensor *sl = &c->in[0];
        int64_t cnt = bd_numel(sl);
        for (int64_t i = 0; i < cnt; i++) {
            int64_t len = 0;
            if (c->host_in[0].data) len = sl->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)c->host_in[0].data)[i]
                                                                          : ((const int32_t *)c->host_in[0].data)[i];
            else {
                char v[8] = {0};
                BD_TRY(n->ops.runner.read(n->ops.runner.ctx, v, (const char *)sl->data + (size_t)i * bd_dtype_size(sl->dtype),
                                          bd_dtype_size(sl->dtype), e));
                len = sl->dtype == BRAID_DTYPE_INT64 ? *(int64_t *)v : *(int32_t *)v;
            }
            if (len != L) {
                st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "sequence_lens[%lld] is %lld, shorter than the %lld steps of "
                             "the scan axis: braid runs full-length sequences only", (long long)i, (long long)len,
                             (long long)L);
                goto fail;
            }
        }
    }
    if (L == 0) { /* no iteration: the states pass through, scan outputs are empty */
        for (int j = 0; j < N && j < nd->n_out; j++) {
            size_t bytes;
            if (nd->out[j] < 0) continue;
            BD_TRY(bind_out(n, c, j, &c->in[f + j], e));
            BD_TRY(bd_tensor_nbytes(&c->in[f + j], &bytes, e));
            BD_TRY(copy(n, c->out[j].data, c->in[f + j].data, bytes, e));
        }
        for (int k = 0; k < K && N + k < nd->n_out; k++) {
            bd_tensor t = c->out[N + k];
            if (nd->out[N + k] < 0) continue;
            if (t.rank < 0) t.rank = 1 + B;
            for (int d = 0; d < t.rank; d++)
                if (t.dims[d] < 0) t.dims[d] = 0;
            BD_TRY(bind_out(n, c, N + k, &t, e));
        }
    }
    for (int64_t b = 0; L > 0 && b < rows; b++) BD_TRY(scan_one(n, c, b, L, bin, cur, outs, e));
    n->iters = L;
fail:
    bd_free(bin);
    bd_free(cur);
    bd_free(outs);
    return st;
}

/* ---- SequenceMap ----------------------------------------------------------------- */

/* The object that container value slot (backend memory) points at. */
static braid_status box_read(bd_nest *n, const void *slot, const void **obj, bd_err *e)
{
    void *p = NULL;
    if (n->ops.runner.host_mem) p = bd_box_get(slot);
    else BD_TRY_RET(n->ops.runner.read(n->ops.runner.ctx, &p, slot, sizeof p, e));
    *obj = p;
    return BRAID_OK;
}

/* The body once per element: element i of every sequence input (they must
 * be as long as the first), the tensor inputs whole; output k of each run
 * becomes element i of sequence output k (copied into the run's pool: the
 * body's memory is reused by its next run). What sequences hold is host
 * memory on every backend: where the backend's is not (CUDA), each element
 * is written to a buffer of the backend's before the body runs, and each
 * result read back into the run's pool. */
static braid_status run_sequence_map(bd_nest *n, const bd_nest_call *c, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_node *nd = c->node;
    int nf = bd_node_formal_in(nd), host = n->ops.runner.host_mem;
    if (!c->pool) return BD_FAIL(e, BRAID_ERR_INTERNAL, "SequenceMap was given no pool for its sequences");
    bd_tensor *bin = bd_calloc((size_t)nf + 1, sizeof *bin);
    bd_run_out *outs = bd_calloc((size_t)nd->n_out + 1, sizeof *outs);
    bd_seq **res = bd_calloc((size_t)nd->n_out + 1, sizeof *res);
    const bd_seq **seq = bd_calloc((size_t)nf + 1, sizeof *seq); /* per input: its sequence, NULL for a tensor */
    void **dev = bd_calloc((size_t)nf + 1, sizeof *dev);         /* per sequence input: the backend's buffer */
    BD_CHECK_ALLOC(e, bin && outs && res && seq && dev);
    int len = 0;
    for (int j = 0; j < nf; j++) {
        if (!(c->in[j].dtype & BD_DT_SEQ)) {
            bin[j] = c->in[j]; /* a tensor input: the same in every run of the body */
            continue;
        }
        const void *obj;
        BD_TRY(box_read(n, c->in[j].data, &obj, e));
        seq[j] = obj;
        if (!seq[j]) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "input %d holds no sequence", j);
            goto fail;
        }
        if (j == 0) len = seq[j]->n;
        if (seq[j]->n != len) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "input %d is a sequence of %d tensors, input 0 of %d", j,
                         seq[j]->n, len);
            goto fail;
        }
        if (!host) {
            size_t most = 1, nb;
            for (int i = 0; i < len; i++) {
                BD_TRY(bd_tensor_nbytes(&seq[j]->items[i], &nb, e));
                most = BD_MAX(most, nb);
            }
            BD_TRY(n->ops.alloc(n->ops.runner.ctx, &dev[j], most, e));
        }
    }
    for (int k = 0; k < nd->n_out; k++) {
        res[k] = bd_seq_new(c->pool, bd_dt_elem(c->out[k].dtype), len, e);
        if (!res[k]) { st = e->status; goto fail; }
    }
    for (int i = 0; i < len; i++) {
        for (int j = 0; j < nf; j++) {
            if (!seq[j]) continue;
            bin[j] = seq[j]->items[i];
            if (host) continue;
            size_t nb;
            BD_TRY(bd_tensor_nbytes(&bin[j], &nb, e));
            if (nb) BD_TRY(n->ops.write(n->ops.runner.ctx, dev[j], bin[j].data, nb, e));
            bin[j].data = dev[j];
        }
        BD_TRY(run_sub(n, 0, c, bin, outs, e));
        for (int k = 0; k < nd->n_out; k++) {
            if (outs[k].t.dtype != res[k]->elem) {
                st = BD_FAIL(e, BRAID_ERR_DTYPE, "the body's output %d is %s, declared %s", k,
                             bd_dtype_name(outs[k].t.dtype), bd_dtype_name(res[k]->elem));
                goto fail;
            }
            bd_tensor t = outs[k].t;
            if (outs[k].host) { /* the host reads it where it is (always so on the CPU) */
                t.data = (void *)outs[k].host;
                BD_TRY(bd_tensor_clone(c->pool, &t, &res[k]->items[i], e));
                continue;
            }
            size_t nb;
            BD_TRY(bd_tensor_nbytes(&t, &nb, e));
            void *h = bd_strpool_alloc(c->pool, nb ? nb : 1); /* strings: their pointers, into the run's pool */
            BD_CHECK_ALLOC(e, h);
            if (nb) BD_TRY(n->ops.runner.read(n->ops.runner.ctx, h, t.data, nb, e));
            t.data = h;
            res[k]->items[i] = t;
        }
    }
    for (int k = 0; k < nd->n_out; k++) {
        if (nd->out[k] < 0) continue;
        if (host) bd_box_set(c->out[k].data, res[k]);
        else BD_TRY(n->ops.write(n->ops.runner.ctx, c->out[k].data, &res[k], sizeof res[k], e));
    }
    n->iters = len;
fail:
    for (int j = 0; dev && j < nf; j++)
        if (dev[j]) n->ops.free(n->ops.runner.ctx, dev[j]);
    bd_free(bin);
    bd_free(outs);
    bd_free(res);
    bd_free(seq);
    bd_free(dev);
    return st;
}

braid_status bd_nest_run(bd_nest **slot, const bd_nest_ops *ops, const bd_nest_call *c, bd_err *e)
{
    if (!*slot) BD_TRY_RET(nest_make(slot, ops, c, e));
    switch (c->node->op) {
    case BD_OP_If: return run_if(*slot, c, e);
    case BD_OP_Loop: return run_loop(*slot, c, e);
    case BD_OP_Scan: return run_scan(*slot, c, e);
    case BD_OP_SequenceMap: return run_sequence_map(*slot, c, e);
    default: return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not a control-flow op", c->node->op_type);
    }
}

int bd_nest_plan_count(const bd_nest *n, int s)
{
    int c = 0;
    while (n && s < n->n_sub && c < NEST_CACHE && n->sub[s].plans[c]) c++;
    return c;
}

void bd_nest_print(FILE *f, const bd_nest *n, int indent)
{
    if (!n) return;
    for (int s = 0; s < n->n_sub; s++)
        for (int k = 0; k < NEST_CACHE && n->sub[s].plans[k]; k++) {
            const bd_prepared *p = n->sub[s].plans[k];
            fprintf(f, "%*s%s", indent, "", n->sub[s].name);
            if (n->node->op == BD_OP_Loop || n->node->op == BD_OP_Scan)
                fprintf(f, " (%lld iterations in the last run)", (long long)n->iters);
            else if (n->node->op == BD_OP_SequenceMap)
                fprintf(f, " (%lld elements in the last run)", (long long)n->iters);
            fprintf(f, ":\n");
            bd_stages_print(f, p, indent + 2);
        }
}
