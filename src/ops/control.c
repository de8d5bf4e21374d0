/* control.c: attribute parsing, shape inference and cost of the control op
 * family: If, Loop and Scan, nodes that own subgraphs. Inference goes into
 * the subgraphs: each is specialized (src/passes/instance.c) to the shapes the
 * node hands it (formal inputs, and captures with their plan-time values),
 * and its output shapes become the node's. Where they are known only when
 * the node runs (two If branches of different shapes, a Loop whose trip
 * count is not known, a body whose own shapes depend on data), infer leaves
 * dims -1: the engine (src/runtime/controlflow.c) allocates such outputs, and the
 * values that read them wait for a later stage of the plan. */
#include "control.h"

#include <string.h>

#include "passes/instance.h"

static braid_status check_body(const bd_node *n, const char *attr, int n_in, int n_out, bd_err *e)
{
    const bd_graph *g = bd_node_subgraph(n, attr);
    if (!g) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' (a graph) is missing", attr);
    if (n_in >= 0 && bd_subgraph_formal_in(g) != n_in)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph '%s' has %d inputs, %d expected", attr,
                       bd_subgraph_formal_in(g), n_in);
    if (n_out >= 0 && g->n_outputs != n_out)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph '%s' has %d outputs, %d expected", attr, g->n_outputs,
                       n_out);
    return BRAID_OK;
}

static braid_status parse_scan(bd_node *n, bd_control_params *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t m = 0, v[BD_SCAN_MAX];
    int cnt = 0, formal = bd_node_formal_in(n);
    const bd_graph *body = bd_node_subgraph(n, "body");
    if (!body) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'body' (a graph) is missing");
    BD_TRY(bd_attr_int(n, "num_scan_inputs", -1, &m, e));
    p->batch = n->opset < 9;
    p->first = p->batch ? 1 : 0;
    if (m < 1 || m > BD_SCAN_MAX || m > formal - p->first)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'num_scan_inputs' is %lld; it must be 1 to %d and "
                       "at most the %d state and scan inputs", (long long)m, BD_SCAN_MAX, formal - p->first);
    p->n_scan_in = (int)m;
    p->n_state = formal - p->first - p->n_scan_in;
    p->n_scan_out = body->n_outputs - p->n_state;
    BD_TRY(check_body(n, "body", p->n_state + p->n_scan_in, -1, e));
    if (p->n_scan_out < 0 || p->n_scan_out > BD_SCAN_MAX)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph 'body' has %d outputs for %d state variables",
                       body->n_outputs, p->n_state);
    if (n->n_out > p->n_state + p->n_scan_out)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "has %d outputs; its body gives %d", n->n_out,
                       p->n_state + p->n_scan_out);
    const char *in_dir = p->batch ? "directions" : "scan_input_directions";
    BD_TRY(bd_attr_ints(n, in_dir, v, BD_SCAN_MAX, &cnt, e));
    if (cnt && cnt != p->n_scan_in)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has %d values for %d scan inputs", in_dir, cnt,
                       p->n_scan_in);
    for (int i = 0; i < cnt; i++) {
        if (v[i] != 0 && v[i] != 1)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has value %lld; each must be 0 or 1", in_dir,
                           (long long)v[i]);
        p->in_dir[i] = (signed char)v[i];
    }
    if (p->batch) {
        static const char *const later[] = {"scan_output_directions", "scan_input_axes", "scan_output_axes"};
        for (int i = 0; i < 3; i++)
            if (bd_node_attr(n, later[i]))
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is not defined before opset 9", later[i]);
        for (int i = 0; i < p->n_scan_in; i++) p->in_axis[i] = 1;
        for (int i = 0; i < p->n_scan_out; i++) p->out_axis[i] = 1;
        return BRAID_OK;
    }
    BD_TRY(bd_attr_ints(n, "scan_output_directions", v, BD_SCAN_MAX, &cnt, e));
    if (cnt && cnt != p->n_scan_out)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'scan_output_directions' has %d values for %d scan "
                       "outputs", cnt, p->n_scan_out);
    for (int i = 0; i < cnt; i++) {
        if (v[i] != 0 && v[i] != 1)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'scan_output_directions' has value %lld; each "
                           "must be 0 or 1", (long long)v[i]);
        p->out_dir[i] = (signed char)v[i];
    }
    BD_TRY(bd_attr_ints(n, "scan_input_axes", p->in_axis, BD_SCAN_MAX, &cnt, e));
    if (cnt && cnt != p->n_scan_in)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'scan_input_axes' has %d values for %d scan inputs",
                       cnt, p->n_scan_in);
    BD_TRY(bd_attr_ints(n, "scan_output_axes", p->out_axis, BD_SCAN_MAX, &cnt, e));
    if (cnt && cnt != p->n_scan_out)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'scan_output_axes' has %d values for %d scan "
                       "outputs", cnt, p->n_scan_out);
fail:
    return st;
}

braid_status bd_control_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_control_params *p = bd_calloc(1, sizeof *p);
    if (!p) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    int formal = bd_node_formal_in(n);
    switch (n->op) {
    case BD_OP_If:
        BD_TRY(check_body(n, "then_branch", 0, n->n_out, e));
        BD_TRY(check_body(n, "else_branch", 0, n->n_out, e));
        p->n_branches = 2;
        p->branch[0] = bd_node_subgraph(n, "then_branch");
        p->branch[1] = bd_node_subgraph(n, "else_branch");
        break;
    case BD_OP_Loop: {
        const bd_graph *body = bd_node_subgraph(n, "body");
        if (!body) { st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'body' (a graph) is missing"); goto fail; }
        p->n_branches = 1;
        p->branch[0] = body;
        p->first = 2;
        p->n_state = bd_subgraph_formal_in(body) - 2;
        p->n_scan_out = body->n_outputs - 1 - p->n_state;
        if (p->n_state < 0 || p->n_scan_out < 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "subgraph 'body' has %d inputs and %d outputs; a Loop body "
                         "takes the iteration number, the condition and N loop-carried values, and gives the "
                         "condition, N values and the scan outputs", bd_subgraph_formal_in(body), body->n_outputs);
            goto fail;
        }
        /* M and the condition may be left out (trailing empty names go at load). */
        if (formal != 2 + p->n_state && !(p->n_state == 0 && formal < 2)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "has %d inputs; its body carries %d values, so it takes %d",
                         formal, p->n_state, 2 + p->n_state);
            goto fail;
        }
        if (n->n_out > p->n_state + p->n_scan_out) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "has %d outputs; its body gives %d", n->n_out,
                         p->n_state + p->n_scan_out);
            goto fail;
        }
        break;
    }
    case BD_OP_Scan:
        p->n_branches = 1;
        p->branch[0] = bd_node_subgraph(n, "body");
        BD_TRY(parse_scan(n, p, e));
        break;
    case BD_OP_SequenceMap: /* the body runs once per element: element i of each sequence input, the tensors whole */
        BD_TRY(check_body(n, "body", formal, n->n_out, e));
        p->n_branches = 1;
        p->branch[0] = bd_node_subgraph(n, "body");
        break;
    default:
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
        goto fail;
    }
fail:
    return bd_params_done(n, p, st);
}

/* Output shapes of subgraph sg run on these inputs: formal ones, then the
 * node's captures (with their plan-time data where known). A shape the body
 * learns only when it runs comes back with dims -1 (rank -1 if unknown). */
static braid_status infer_body(const bd_node *n, const bd_graph *sg, const char *what, const bd_tensor *formal,
                               const bd_tensor *in, bd_tensor *outs, bd_err *e)
{
    braid_status st = BRAID_OK;
    int nf = bd_subgraph_formal_in(sg), base = bd_node_formal_in(n);
    bd_tensor *inputs = bd_calloc((size_t)sg->n_inputs + 1, sizeof *inputs);
    unsigned char *known = bd_calloc((size_t)sg->n_inputs + 1, 1);
    bd_inst x = {0};
    BD_CHECK_ALLOC(e, inputs && known);
    for (int i = 0; i < sg->n_inputs; i++) {
        inputs[i] = i < nf ? formal[i] : in[base + i - nf];
        known[i] = inputs[i].data != NULL;
        if (inputs[i].rank < 0) { /* an unknown outer value: never, the node would wait */
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "subgraph '%s': input %d has no shape", what, i);
            goto fail;
        }
    }
    st = bd_inst_build(sg, inputs, known, &x, e);
    if (st) { bd_err_prefix(e, "subgraph '%s': ", what); goto fail; }
    for (int o = 0; o < sg->n_outputs; o++) {
        int v = sg->outputs[o];
        bd_tensor t = x.vals[v];
        t.data = NULL;
        if (x.vflag[v] & BD_IV_RUNTIME)
            for (int d = 0; d < t.rank; d++) t.dims[d] = -1;
        if (!t.dtype) t.dtype = sg->values[v].dtype; /* made in a later stage of the body */
        if (!t.dtype || !bd_dtype_size(t.dtype)) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "subgraph '%s': the dtype of output '%s' is known only when it "
                         "runs", what, sg->values[v].name);
            goto fail;
        }
        outs[o] = t;
    }
fail:
    bd_inst_free(&x);
    bd_free(inputs);
    bd_free(known);
    return st;
}

/* a becomes what both a and b allow: dims that differ become -1, a rank
 * that differs -1 (both: known only when the node runs). */
static void shape_union(bd_tensor *a, const bd_tensor *b)
{
    if (a->rank != b->rank) { a->rank = -1; return; }
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) a->dims[d] = -1;
}

static braid_status scalar_of(const bd_tensor *t, int dtype, const char *what, bd_err *e)
{
    if (t->dtype != dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "%s has dtype %s, it must be %s", what, bd_dtype_name(t->dtype),
                       bd_dtype_name(dtype));
    if (t->rank >= 0 && bd_numel(t) != 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%s must hold one element, it has %lld", what, (long long)bd_numel(t));
    return BRAID_OK;
}

/* A status a branch gives when the inputs of this run do not suit it (the
 * shapes or dtypes it sees, a limit), rather than a failure of braid. */
static int branch_refusal(braid_status s)
{
    return s == BRAID_ERR_SHAPE || s == BRAID_ERR_DTYPE || s == BRAID_ERR_INVALID_ARGUMENT || s == BRAID_ERR_LIMIT;
}

static braid_status infer_if(const bd_node *n, const bd_control_params *p, const bd_tensor *in, bd_tensor *out,
                             bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_tensor *o2 = bd_calloc((size_t)n->n_out + 1, sizeof *o2);
    BD_CHECK_ALLOC(e, o2);
    BD_TRY(scalar_of(&in[0], BRAID_DTYPE_BOOL, "the condition", e));
    if (in[0].data) { /* known now: only the branch taken counts */
        int b = *(const unsigned char *)in[0].data ? 0 : 1;
        BD_TRY(infer_body(n, p->branch[b], b ? "else_branch" : "then_branch", NULL, in, out, e));
        goto fail;
    }
    /* Not known yet: both branches, whose shapes are joined. A branch that
     * cannot be planned for these inputs (a shape or dtype it refuses, as
     * silero VAD's 8 kHz branch does at 16 kHz) does not fail the node: the
     * other one gives the shapes, and should the bad branch be taken, its
     * nested plan fails then, with this same message (onnxruntime too fails
     * only on the branch it runs). */
    bd_err e1 = {0}, e2 = {0};
    braid_status s1 = infer_body(n, p->branch[0], "then_branch", NULL, in, out, &e1);
    braid_status s2 = infer_body(n, p->branch[1], "else_branch", NULL, in, o2, &e2);
    if (s1 || s2) {
        int input_bound1 = branch_refusal(s1), input_bound2 = branch_refusal(s2);
        if ((s1 && !input_bound1) || (s2 && !input_bound2) || (s1 && s2)) { /* report the first failure */
            *e = s1 ? e1 : e2;
            st = s1 ? s1 : s2;
            goto fail;
        }
        if (s1) memcpy(out, o2, (size_t)n->n_out * sizeof *out); /* the else branch's shapes */
        goto fail;                                                 /* (st is OK) */
    }
    for (int o = 0; o < n->n_out; o++) {
        if (!bd_dt_alike(out[o].dtype, o2[o].dtype)) {
            st = BD_FAIL(e, BRAID_ERR_DTYPE, "output %d is %s in then_branch but %s in else_branch", o,
                         bd_dtype_name(out[o].dtype), bd_dtype_name(o2[o].dtype));
            goto fail;
        }
        out[o].dtype |= o2[o].dtype & BD_DT_OPT; /* a sequence in one, an optional of it in the other */
        shape_union(&out[o], &o2[o]);
    }
fail:
    bd_free(o2);
    return st;
}

static braid_status infer_loop(const bd_node *n, const bd_control_params *p, const bd_tensor *in, bd_tensor *out,
                               bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *body = p->branch[0];
    int N = p->n_state, K = p->n_scan_out, formal = bd_node_formal_in(n);
    const bd_tensor *m = formal > 0 && in[0].dtype ? &in[0] : NULL, *c = formal > 1 && in[1].dtype ? &in[1] : NULL;
    bd_tensor *bin = bd_calloc((size_t)N + 3, sizeof *bin), *bout = bd_calloc((size_t)body->n_outputs + 1, sizeof *bout);
    BD_CHECK_ALLOC(e, bin && bout);
    if (m) BD_TRY(scalar_of(m, BRAID_DTYPE_INT64, "the trip count M", e));
    if (c) BD_TRY(scalar_of(c, BRAID_DTYPE_BOOL, "the condition", e));
    bin[0] = (bd_tensor){.dtype = BRAID_DTYPE_INT64, .rank = 0};
    bin[1] = (bd_tensor){.dtype = BRAID_DTYPE_BOOL, .rank = 0};
    for (int i = 0; i < 2; i++) bd_loop_formal_shape(body, i, &bin[i]);
    for (int j = 0; j < N; j++) {
        bin[2 + j] = in[2 + j];
        bin[2 + j].data = NULL; /* carried values change from one iteration to the next */
    }
    BD_TRY(infer_body(n, body, "body", bin, in, bout, e));
    BD_TRY(scalar_of(&bout[0], BRAID_DTYPE_BOOL, "the body's condition output", e));
    int stable = 1;
    for (int j = 0; j < N; j++) {
        if (!bd_dt_alike(bout[1 + j].dtype, in[2 + j].dtype)) {
            st = BD_FAIL(e, BRAID_ERR_DTYPE, "loop-carried value %d enters the body as %s and leaves it as %s", j,
                         bd_dtype_name(in[2 + j].dtype), bd_dtype_name(bout[1 + j].dtype));
            goto fail;
        }
        bd_tensor t = in[2 + j];
        t.data = NULL;
        shape_union(&t, &bout[1 + j]); /* a shape that changes is known only at the end */
        stable &= bd_shape_known(&t);
        if (j < n->n_out) out[j] = t;
    }
    /* The trip count is known now when M is and the condition is left out
     * (or known false: no iteration). */
    int64_t trips = -1;
    if (c && c->data && !*(const unsigned char *)c->data) trips = 0;
    else if (m && m->data && !c) trips = BD_MAX(*(const int64_t *)m->data, 0);
    for (int k = 0; k < K && N + k < n->n_out; k++) {
        const bd_tensor *s = &bout[1 + N + k];
        bd_tensor *t = &out[N + k];
        t->dtype = s->dtype;
        t->rank = s->rank < 0 || s->rank >= BD_MAX_RANK ? -1 : s->rank + 1;
        if (s->rank >= BD_MAX_RANK) {
            st = BD_FAIL(e, BRAID_ERR_LIMIT, "scan output %d has rank %d; braid supports up to %d", k, s->rank + 1,
                         BD_MAX_RANK);
            goto fail;
        }
        t->dims[0] = trips;
        for (int d = 0; d < s->rank; d++) t->dims[1 + d] = stable ? s->dims[d] : -1;
    }
fail:
    bd_free(bin);
    bd_free(bout);
    return st;
}

static braid_status infer_scan(const bd_node *n, const bd_control_params *p, const bd_tensor *in, bd_tensor *out,
                               bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_graph *body = p->branch[0];
    int N = p->n_state, M = p->n_scan_in, K = p->n_scan_out, f = p->first, B = p->batch;
    int64_t L = -1, batch = -1;
    bd_tensor *bin = bd_calloc((size_t)(N + M) + 1, sizeof *bin), *bout = bd_calloc((size_t)body->n_outputs + 1, sizeof *bout);
    BD_CHECK_ALLOC(e, bin && bout);
    if (B && f > 0 && in[0].dtype) {
        if (in[0].dtype != BRAID_DTYPE_INT32 && in[0].dtype != BRAID_DTYPE_INT64) {
            st = BD_FAIL(e, BRAID_ERR_DTYPE, "sequence_lens has dtype %s, it must be int32", bd_dtype_name(in[0].dtype));
            goto fail;
        }
    }
    for (int j = 0; j < N + M; j++) {
        const bd_tensor *t = &in[f + j];
        bin[j] = *t;
        bin[j].data = NULL;
        if (B) { /* drop the batch axis */
            if (t->rank < 1) {
                st = BD_FAIL(e, BRAID_ERR_SHAPE, "input %d must have a batch axis (opset %d)", f + j, n->opset);
                goto fail;
            }
            if (batch >= 0 && t->dims[0] != batch) {
                st = BD_FAIL(e, BRAID_ERR_SHAPE, "input %d has batch %lld, input %d has %lld", f + j,
                             (long long)t->dims[0], f, (long long)batch);
                goto fail;
            }
            batch = t->dims[0];
            bin[j].rank = t->rank - 1;
            memmove(bin[j].dims, t->dims + 1, sizeof t->dims - sizeof t->dims[0]);
        }
        if (j < N) continue;
        int axis;
        BD_TRY(bd_axis(p->in_axis[j - N] - (B ? 1 : 0), bin[j].rank, &axis, e));
        if (bin[j].rank < 1) {
            st = BD_FAIL(e, BRAID_ERR_SHAPE, "scan input %d is a scalar; it needs the axis to scan", j - N);
            goto fail;
        }
        if (L >= 0 && bin[j].dims[axis] != L) {
            st = BD_FAIL(e, BRAID_ERR_SHAPE, "scan input %d has %lld steps along its axis, scan input 0 has %lld",
                         j - N, (long long)bin[j].dims[axis], (long long)L);
            goto fail;
        }
        L = bin[j].dims[axis];
        for (int d = axis; d + 1 < bin[j].rank; d++) bin[j].dims[d] = bin[j].dims[d + 1];
        bin[j].rank--;
    }
    BD_TRY(infer_body(n, body, "body", bin, in, bout, e));
    int stable = 1;
    for (int j = 0; j < N; j++) {
        if (!bd_dt_alike(bout[j].dtype, bin[j].dtype)) {
            st = BD_FAIL(e, BRAID_ERR_DTYPE, "state variable %d enters the body as %s and leaves it as %s", j,
                         bd_dtype_name(bin[j].dtype), bd_dtype_name(bout[j].dtype));
            goto fail;
        }
        bd_tensor t = bin[j];
        shape_union(&t, &bout[j]);
        stable &= bd_shape_known(&t);
        if (j >= n->n_out) continue;
        out[j] = t;
        if (B && t.rank >= 0) { /* the batch axis again */
            memmove(out[j].dims + 1, t.dims, sizeof t.dims - sizeof t.dims[0]);
            out[j].dims[0] = batch;
            out[j].rank = t.rank + 1;
        }
    }
    for (int k = 0; k < K && N + k < n->n_out; k++) {
        const bd_tensor *s = &bout[N + k];
        bd_tensor *t = &out[N + k];
        t->dtype = s->dtype;
        if (s->rank < 0) { t->rank = -1; continue; }
        if (s->rank + 1 + B > BD_MAX_RANK) {
            st = BD_FAIL(e, BRAID_ERR_LIMIT, "scan output %d has rank %d; braid supports up to %d", k,
                         s->rank + 1 + B, BD_MAX_RANK);
            goto fail;
        }
        int axis;
        BD_TRY(bd_axis(p->out_axis[k] - B, s->rank + 1, &axis, e));
        t->rank = s->rank + 1 + B;
        if (B) t->dims[0] = batch;
        for (int d = 0, q = 0; d < s->rank + 1; d++)
            t->dims[B + d] = d == axis ? L : stable ? s->dims[q++] : (q++, -1);
    }
fail:
    bd_free(bin);
    bd_free(bout);
    return st;
}

/* SequenceMap: a sequence per body output, of the element dtype the body
 * declares (the elements' shapes are known only as each one is made). */
static braid_status infer_sequence_map(const bd_node *n, const bd_control_params *p, const bd_tensor *in,
                                       bd_tensor *out, bd_err *e)
{
    const bd_graph *body = p->branch[0];
    if (!(in[0].dtype & BD_DT_SEQ) || (in[0].dtype & BD_DT_OPT))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 0 must be a sequence, not %s",
                       in[0].dtype ? bd_dtype_name(in[0].dtype) : "missing");
    for (int j = 1; j < bd_node_formal_in(n); j++)
        if (in[j].dtype & BD_DT_OPT)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d must be a sequence or a tensor, not %s", j,
                           bd_dtype_name(in[j].dtype));
    for (int k = 0; k < n->n_out; k++) {
        int dt = body->values[body->outputs[k]].dtype;
        if (!dt || bd_dt_container(dt) || !bd_dtype_size(dt))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "the body's output %d must declare a tensor type (it is %s)", k,
                           dt ? bd_dtype_name(dt) : "undeclared");
        memset(&out[k], 0, sizeof out[k]);
        out[k].dtype = BD_DT_SEQ | dt;
        out[k].rank = 0;
    }
    return BRAID_OK;
}

braid_status bd_control_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_control_params *p = n->params;
    switch (n->op) {
    case BD_OP_If: return infer_if(n, p, in, out, e);
    case BD_OP_Loop: return infer_loop(n, p, in, out, e);
    case BD_OP_Scan: return infer_scan(n, p, in, out, e);
    case BD_OP_SequenceMap: return infer_sequence_map(n, p, in, out, e);
    default: return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "op %s is not implemented", n->op_type);
    }
}

/* The planner only weighs it against its neighbours: the bytes it moves,
 * ten times (a body does some work per element). */
double bd_control_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    double c = 0;
    for (int i = 0; i < n->n_in; i++)
        if (in[i].rank >= 0) c += 10.0 * (double)bd_numel(&in[i]);
    for (int i = 0; i < n->n_out; i++)
        if (bd_shape_known(&out[i])) c += 10.0 * (double)bd_numel(&out[i]);
    return c;
}
