/* stage.c: staged plans, the run-time half.
 *
 * A model whose shapes all follow from its input shapes has one plan per
 * input signature. Where part of the graph cannot be planned before some
 * values exist (a NonZero's actual count, a Reshape whose shape is computed
 * from data, a Loop whose trip count only the run decides), bd_prepare makes
 * the first stage: a normal plan (streams, events, stream-aware memory plan,
 * verifier) of every node that can be planned now; the others wait
 * (src/passes/instance.c). When that stage has run, its boundary values are read:
 * the actual dims of values whose size only their kernel knew, and on the
 * host the data of values that decide later shapes (one synchronization on
 * CUDA: `braid plan` prints it). Their dtypes, dims and bytes are the key of
 * the next stage, which is found among the stage's cached successors or
 * planned now (bd_prepare_next) and cached: a tree of plans per signature,
 * each a normal, verified plan. Values that cross a boundary live in memory
 * the sequence owns: the producing stage's kept buffers (its memory plan never
 * reuses them) or the buffers a kernel allocated, and later stages read them
 * there (p->ext), rebound on every run.
 *
 * The same code runs the model's own plans (the API's runner: the session's
 * backend) and the nested plans of control-flow nodes (src/runtime/controlflow.c:
 * a runner that runs on the node's stream). */
#include <string.h>

#include "ops/ops.h"
#include "runtime/controlflow.h"
#include "runtime/runtime.h"

braid_status bd_stage_prepare(const bd_runner *r, bd_prepared *p, bd_err *e)
{
    p->runner = r;
    braid_status st = r->prepare(r->ctx, p, e);
    if (st) bd_prepared_free(p);
    return st;
}

void bd_stage_free(bd_prepared *p)
{
    if (!p) return;
    for (int c = 0; c < (int)(sizeof p->next / sizeof *p->next); c++) bd_stage_free(p->next[c]);
    for (int i = 0; p->nest && i < p->n_live; i++) bd_nest_free(p->nest[i]);
    if (p->runner) p->runner->release(p->runner->ctx, p);
    bd_prepared_free(p);
    bd_free(p);
}

/* Where value v of a stage's graph lives after it ran (backend memory). */
static void *data_of(const bd_prepared *q, int v)
{
    return (q->inst.vflag[v] & BD_IV_RUNTIME) ? q->actual[v].data : q->vals[v].data;
}

/* The stage of the sequence ending at p that made value v (NULL: none). */
static const bd_prepared *maker(const bd_prepared *p, int v)
{
    for (; p; p = p->prev)
        if (p->val_prod[v] >= 0) return p;
    return NULL;
}

/* Reads the boundary of stage p: actual shapes, and host data where a later
 * stage needs values. Appends the key to *sig. */
static braid_status read_boundary(bd_prepared *p, const bd_tensor *inputs, bd_tensor *actual, int64_t **sig, int *len,
                                  bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    const bd_runner *r = p->runner;
    int n = 0, cap = 16;
    int64_t *s = bd_malloc((size_t)cap * sizeof *s);
    BD_CHECK_ALLOC(e, s);
    for (int k = 0; k < p->n_bvals; k++) {
        int v = p->bvals[k];
        bd_tensor *a = &actual[v];
        *a = (p->inst.vflag[v] & BD_IV_RUNTIME) ? p->actual[v] : p->inst.vals[v];
        a->data = NULL;
        size_t nb = 0;
        if (p->inst.vflag[v] & BD_IV_READBACK) {
            const void *src = NULL;
            for (int i = 0; i < g->n_inputs; i++)
                if (g->inputs[i] == v) src = inputs[i].data;
            if (!src) src = maker(p, v) ? data_of(maker(p, v), v) : p->vals[v].data;
            BD_TRY(bd_tensor_nbytes(a, &nb, e));
            a->data = bd_malloc(nb ? nb : 1);
            BD_CHECK_ALLOC(e, a->data);
            if (nb) BD_TRY(r->read(r->ctx, a->data, src, nb, e));
        }
        int need = 2 + a->rank + (int)((nb + 7) / 8);
        if (n + need > cap) {
            cap = 2 * (n + need);
            int64_t *ns = bd_realloc(s, (size_t)cap * sizeof *s);
            BD_CHECK_ALLOC(e, ns);
            s = ns;
        }
        s[n++] = v;
        s[n++] = (int64_t)a->rank << 8 | (a->dtype & 0xff);
        for (int d = 0; d < a->rank; d++) s[n++] = a->dims[d];
        for (size_t b = 0; b < nb; b += 8) {
            int64_t w = 0;
            memcpy(&w, (const char *)a->data + b, BD_MIN(8, nb - b));
            s[n++] = w;
        }
    }
    *sig = s;
    *len = n;
    return BRAID_OK;
fail:
    bd_free(s);
    return st;
}

/* The stage after p for its boundary in actual (key sig, which it takes):
 * cached or made. */
static braid_status next_stage(bd_prepared *p, const bd_tensor *actual, int64_t *sig, int len, bd_prepared **out,
                               bd_err *e)
{
    braid_status st = BRAID_OK;
    const int C = (int)(sizeof p->next / sizeof *p->next);
    int c = 0;
    while (c < C && p->next[c] && !(p->next[c]->bsig_len == len && !memcmp(p->next[c]->bsig, sig, (size_t)len * sizeof *sig)))
        c++;
    if (c == C || !p->next[c]) {
        bd_prepared *q = bd_calloc(1, sizeof *q);
        if (!q) {
            bd_free(sig);
            return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        }
        st = bd_prepare_next(p, actual, q, e);
        if (!st) st = bd_stage_prepare(p->runner, q, e);
        if (st) {
            bd_free(q);
            bd_free(sig);
            return st;
        }
        q->bsig = sig;
        q->bsig_len = len;
        c = C - 1;
        bd_stage_free(p->next[c]);
        p->next[c] = q;
    } else {
        bd_free(sig);
    }
    bd_prepared *q = p->next[c];
    memmove(&p->next[1], &p->next[0], (size_t)c * sizeof *p->next);
    p->next[0] = q;
    *out = q;
    return BRAID_OK;
}

/* Where the host reads value v (now t) of stage q after its run: the
 * backend's memory itself when the host can read all of it (the CPU), else
 * the stage's host-visible copy of the graph output that v is (out_data,
 * which the run filled: on a device the value itself lives in device
 * memory), unless the kernel put v elsewhere (a size only it knew). NULL:
 * the caller copies it through the runner's read. */
static const void *host_view(const bd_runner *r, const bd_prepared *q, int v, const bd_tensor *t)
{
    if (r->host_mem) return t->data;
    if (!r->host_out || !q->out_data || q->val_out[v] < 0 || t->data != q->vals[v].data) return NULL;
    return q->out_data[q->val_out[v]];
}

braid_status bd_stages_run(bd_prepared *p, const bd_tensor *inputs, bd_run_out *outs, bd_prepared **last, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *g = p->g;
    const bd_runner *r = p->runner;
    bd_tensor *actual = NULL;
    for (;;) {
        for (int k = 0; k < p->n_ext; k++) { /* what earlier stages made, where it is this run */
            int v = p->ext[k];
            if (!p->inst.vals[v].data) p->vals[v].data = data_of(p->ext_from[k], v);
        }
        BD_TRY(r->run(r->ctx, p, inputs, e));
        if (!p->inst.n_later) break;
        int64_t *sig = NULL;
        int len = 0;
        actual = bd_calloc((size_t)g->n_values + 1, sizeof *actual);
        BD_CHECK_ALLOC(e, actual);
        BD_TRY(read_boundary(p, inputs, actual, &sig, &len, e));
        BD_TRY(next_stage(p, actual, sig, len, &p, e));
        for (int v = 0; v < g->n_values; v++) bd_free(actual[v].data);
        bd_free(actual);
        actual = NULL;
    }
    *last = p;
    /* The outputs: inputs, constants, or where the stage that made them put them. */
    for (int o = 0; o < g->n_outputs; o++) {
        int v = g->outputs[o], in = -1;
        bd_run_out *out = &outs[o];
        for (int i = 0; i < g->n_inputs; i++)
            if (g->inputs[i] == v) in = i;
        const bd_prepared *q = maker(p, v);
        if (in >= 0) {
            out->t = inputs[in];
            out->host = r->host_in ? inputs[in].data : NULL;
        } else if (p->inst.vals[v].data) {
            out->t = p->inst.vals[v];
            out->host = p->inst.vals[v].data;
            out->t.data = p->vals[v].data; /* the backend's copy */
        } else if (q) {
            out->t = (q->inst.vflag[v] & BD_IV_RUNTIME) ? q->actual[v] : q->vals[v];
            out->host = host_view(r, q, v, &out->t);
        } else {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "output '%s' was made by no stage", g->values[v].name);
            goto fail;
        }
    }
    return BRAID_OK;
fail:
    if (actual)
        for (int v = 0; v < g->n_values; v++) bd_free(actual[v].data);
    bd_free(actual);
    return st;
}

/* ---- printing ------------------------------------------------------------------- */

void bd_stages_print(FILE *f, const bd_prepared *p, int indent)
{
    for (; p; p = p->next[0]) {
        const bd_plan *pl = &p->plan;
        const bd_graph *g = p->g;
        if (p->prev || p->inst.n_later) fprintf(f, "%*sstage %d:\n", indent, "", p->inst.stage);
        for (int s = 0; s < pl->n_streams; s++)
            for (int c = pl->stream_start[s]; c < pl->stream_start[s + 1]; c++) {
                bd_cmd cmd = pl->cmds[c];
                if (cmd.kind != BD_CMD_LAUNCH) {
                    fprintf(f, "%*sstream %d: %s e%d\n", indent, "", s, cmd.kind == BD_CMD_WAIT ? "wait" : "record", cmd.arg);
                    continue;
                }
                const bd_node *n = p->inst.node[p->live[cmd.arg]];
                fprintf(f, "%*sstream %d: launch %s", indent, "", s, n->name);
                int cond = bd_node_formal_in(n) > 1 && n->in[1] >= 0, trips = bd_node_formal_in(n) > 0 && n->in[0] >= 0;
                if (n->op == BD_OP_If && p->inst.vals[n->in[0]].data)
                    fprintf(f, " (If: its condition was known when planned)");
                else if (n->op == BD_OP_If)
                    fprintf(f, " (If: its condition is read on the host, one synchronization on CUDA)");
                else if (n->op == BD_OP_Loop && (cond || trips))
                    fprintf(f, " (Loop: %s%s%s read on the host, %s on CUDA)", trips ? "M" : "", trips && cond ? " and " : "",
                            cond ? "its condition, then the body's after every iteration," : "",
                            cond ? "one synchronization each" : "one synchronization");
                if (p->inst.vlayout) { /* the layout pass ran: name the NHWC outputs */
                    int nh = 0;
                    for (int k = 0; k < n->n_out; k++)
                        if (n->out[k] >= 0 && p->inst.vlayout[n->out[k]] == BD_LAYOUT_NHWC) nh++;
                    if (nh) fprintf(f, " (NHWC)");
                }
                const char *note = p->runner && p->runner->node_note ? p->runner->node_note(n, &p->inst) : NULL;
                if (note) fprintf(f, " (%s)", note); /* what the backend does differently for this node */
                fprintf(f, "\n");
                if (p->nest && p->nest[cmd.arg]) bd_nest_print(f, p->nest[cmd.arg], indent + 4);
            }
        fprintf(f, "%*sstreams %d, events %d, arena %zu bytes (intermediates %zu bytes)\n", indent, "", pl->n_streams,
                pl->n_events, pl->arena_size, pl->sum_bufs);
        if (p->inst.vlayout) {
            int nh = 0;
            for (int v = 0; v < g->n_values; v++) nh += p->inst.vlayout[v] == BD_LAYOUT_NHWC;
            fprintf(f, "%*slayout: %d values NHWC (named name@nhwc, dims N, H, W, C), the rest NCHW; %d layout "
                    "conversion%s\n", indent, "", nh, p->inst.n_conversions, p->inst.n_conversions == 1 ? "" : "s");
        }
        if (p->n_bvals) {
            fprintf(f, "%*sstage %d ends: the host reads", indent, "", p->inst.stage);
            for (int k = 0; k < p->n_bvals; k++) {
                int v = p->bvals[k];
                fprintf(f, "%s %s of '%s'", k ? "," : "", (p->inst.vflag[v] & BD_IV_READBACK) ? "the values" : "the shape",
                        g->values[v].name);
            }
            fprintf(f, " (a synchronization on CUDA), then plans stage %d for them\n", p->inst.stage + 1);
        }
    }
}
