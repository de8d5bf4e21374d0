/* rnn.c: attribute parsing, shape and dtype inference and cost of the rnn op
 * family: LSTM, GRU, RNN and com.microsoft DynamicQuantizeLSTM (an LSTM whose
 * W (dirs, input, 4H) and R (dirs, H, 4H) are int8 or uint8 with scales and
 * zero points, per direction or per output column). */
#include "rnn.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "ops.h"

/* Inputs by position. */
enum { IN_X, IN_W, IN_R, IN_B, IN_LENS, IN_H0, IN_C0, IN_P, IN_WS, IN_WZ, IN_RS, IN_RZ };

static const char *const act_names[BD_RNN_N_ACTS] = {
    "Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu",
    "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};

/* How many of alpha and beta each function takes, and their defaults (those
 * of the ONNX operators of the same name). */
static const int act_params[BD_RNN_N_ACTS] = {0, 0, 0, 2, 1, 1, 2, 2, 1, 0, 0};
static const float act_alpha[BD_RNN_N_ACTS] = {0, 0, 0, 1.0f, 0.01f, 1.0f, 1.0f, 0.2f, 1.0f, 0, 0};
static const float act_beta[BD_RNN_N_ACTS] = {0, 0, 0, 0.0f, 0, 0, 1.0f, 0.5f, 0, 0, 0};

static int act_lookup(const char *s)
{
    for (int k = 0; k < BD_RNN_N_ACTS; k++) {
        const char *a = act_names[k], *b = s;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return k;
    }
    return -1;
}

static int n_acts(int cell) { return cell == BD_RNN_LSTM ? 3 : cell == BD_RNN_GRU ? 2 : 1; }

/* activations, activation_alpha and activation_beta into p->dir[*].f. The
 * alphas and betas are consumed in the order of the functions, by the
 * functions that take them; a function left without one gets its default.
 * A bidirectional node given one direction's list uses it for both. */
static braid_status parse_acts(const bd_node *n, bd_rnn_params *p, bd_err *e)
{
    static const int defaults[3][3] = {
        {BD_RNN_SIGMOID, BD_RNN_TANH, BD_RNN_TANH}, {BD_RNN_SIGMOID, BD_RNN_TANH, 0}, {BD_RNN_TANH, 0, 0}};
    int per = n_acts(p->cell), want = per * p->dirs;
    const bd_attr *a = bd_node_attr(n, "activations");
    const bd_attr *al = bd_node_attr(n, "activation_alpha"), *be = bd_node_attr(n, "activation_beta");
    if (a && a->type != BD_ATTR_STRINGS)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'activations' must be a list of strings");
    if (al && al->type != BD_ATTR_FLOATS)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'activation_alpha' must be a list of floats");
    if (be && be->type != BD_ATTR_FLOATS)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'activation_beta' must be a list of floats");
    int count = a ? a->n : 0, shared = 0;
    if (count == 0) {
        for (int d = 0; d < p->dirs; d++)
            for (int j = 0; j < per; j++) {
                int k = defaults[p->cell][j];
                p->dir[d].f[j] = (bd_rnn_fn){k, act_alpha[k], act_beta[k]};
            }
        return BRAID_OK;
    }
    if (p->cell == BD_RNN_SIMPLE && p->dirs == 1 && count == 2) count = 1; /* the opset-1 default ["Tanh", "Tanh"] */
    if (p->dirs == 2 && count == per) shared = 1;
    else if (count != want)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'activations' has %d functions; a %s %s takes %d",
                       a->n, p->dirs == 2 ? "bidirectional" : "one-direction", n->op_type, want);
    int ia = 0, ib = 0;
    for (int j = 0; j < count; j++) {
        int k = act_lookup(a->strings[j] ? a->strings[j] : "");
        if (k < 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "activation '%s' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, "
                           "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                           a->strings[j] ? a->strings[j] : "");
        bd_rnn_fn f = {k, act_alpha[k], act_beta[k]};
        if (act_params[k] >= 1 && al && ia < al->n) f.alpha = al->floats[ia++];
        if (act_params[k] >= 2 && be && ib < be->n) f.beta = be->floats[ib++];
        p->dir[j / per].f[j % per] = f;
        if (shared) p->dir[1].f[j % per] = f;
    }
    return BRAID_OK;
}

braid_status bd_rnn_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_rnn_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    int lstm = n->op == BD_OP_LSTM || n->op == BD_OP_MS_DynamicQuantizeLSTM;
    p->cell = lstm ? BD_RNN_LSTM : n->op == BD_OP_GRU ? BD_RNN_GRU : BD_RNN_SIMPLE;
    p->quantized = n->op == BD_OP_MS_DynamicQuantizeLSTM;
    p->gates = lstm ? 4 : p->cell == BD_RNN_GRU ? 3 : 1;
    BD_TRY(bd_attr_int(n, "hidden_size", 0, &p->hidden, e));
    if (bd_node_attr(n, "hidden_size") && p->hidden <= 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'hidden_size' is %lld; it must be positive",
                     (long long)p->hidden);
        goto fail;
    }
    const char *dir;
    BD_TRY(bd_attr_string(n, "direction", "forward", &dir, e));
    if (!strcmp(dir, "forward")) p->direction = BD_RNN_FORWARD;
    else if (!strcmp(dir, "reverse")) p->direction = BD_RNN_REVERSE;
    else if (!strcmp(dir, "bidirectional")) p->direction = BD_RNN_BIDIRECTIONAL;
    else {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                     "attribute 'direction' is '%s'; it must be forward, reverse or bidirectional", dir);
        goto fail;
    }
    p->dirs = p->direction == BD_RNN_BIDIRECTIONAL ? 2 : 1;
    int64_t v;
    BD_TRY(bd_attr_int(n, BD_RNN_PART_ATTR, -1, &v, e));
    if (v != -1 && (p->dirs != 2 || (v != 0 && v != 1))) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' (%lld) needs a bidirectional node and 0 or 1",
                     BD_RNN_PART_ATTR, (long long)v);
        goto fail;
    }
    p->part = (int)v;
    BD_TRY(bd_attr_int(n, BD_RNN_RT_ATTR, 0, &v, e));
    p->r_transposed = p->quantized || v != 0;
    BD_TRY(bd_attr_int(n, "layout", 0, &v, e));
    if (v != 0 && v != 1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'layout' is %lld; it must be 0 or 1", (long long)v);
        goto fail;
    }
    p->layout = (int)v;
    float clip = 0;
    BD_TRY(bd_attr_float(n, "clip", 0, &clip, e));
    if (bd_node_attr(n, "clip") && !(clip > 0)) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'clip' is %g; it must be positive", (double)clip);
        goto fail;
    }
    int64_t forget = 0, lbr = 0;
    if (lstm) BD_TRY(bd_attr_int(n, "input_forget", 0, &forget, e));
    if (p->cell == BD_RNN_GRU) BD_TRY(bd_attr_int(n, "linear_before_reset", 0, &lbr, e));
    BD_TRY(parse_acts(n, p, e));
    for (int d = 0; d < 2; d++) {
        p->dir[d].clip = clip;
        p->dir[d].input_forget = forget != 0;
        p->dir[d].linear_before_reset = lbr != 0;
    }
fail:
    return bd_params_done(n, p, st);
}

static int given(const bd_tensor *in, int n_in, int i) { return i < n_in && in[i].dtype != BRAID_DTYPE_UNDEFINED; }

/* Fails with SHAPE unless t has the given rank and dims (-1: any). */
static braid_status expect_dims(const bd_tensor *t, const char *what, const char *why, int rank, int64_t d0,
                                int64_t d1, int64_t d2, bd_err *e)
{
    int64_t want[3] = {d0, d1, d2};
    int ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = want[d] < 0 || t->dims[d] == want[d];
    if (ok) return BRAID_OK;
    char got[160], exp[160] = "";
    bd_shape_str(t, got, sizeof got);
    for (int d = 0; d < rank; d++) {
        size_t l = strlen(exp);
        if (want[d] < 0) snprintf(exp + l, sizeof exp - l, "%s?", d ? "x" : "");
        else snprintf(exp + l, sizeof exp - l, "%s%lld", d ? "x" : "", (long long)want[d]);
    }
    return BD_FAIL(e, BRAID_ERR_SHAPE, "input %s has shape %s; %s needs %s", what, got, why, exp);
}

static braid_status expect_dtype(const bd_tensor *t, const char *what, int dtype, bd_err *e)
{
    if (t->dtype == dtype) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s has dtype %s; it must have X's dtype %s", what,
                   bd_dtype_name(t->dtype), bd_dtype_name(dtype));
}

braid_status bd_rnn_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_rnn_params *p = n->params;
    const bd_tensor *x = &in[IN_X], *w = &in[IN_W], *r = &in[IN_R];
    int dt = x->dtype, ni = bd_node_slots(n);
    if (p->quantized ? dt != BRAID_DTYPE_FLOAT
                     : dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && dt != BRAID_DTYPE_FLOAT16 &&
                           dt != BRAID_DTYPE_BFLOAT16)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X has dtype %s, which %s does not take", bd_dtype_name(dt),
                       n->op_type);
    if (x->rank != 3) return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has rank %d; it must have rank 3", x->rank);
    int64_t seq = x->dims[p->layout ? 1 : 0], batch = x->dims[p->layout ? 0 : 1], isz = x->dims[2];
    int64_t G = p->gates, D = p->dirs, H = p->hidden;
    if (r->rank != 3) return BD_FAIL(e, BRAID_ERR_SHAPE, "input R has rank %d; it must have rank 3", r->rank);
    if (!H) H = bd_rnn_hidden(p, r);
    char why[96];
    snprintf(why, sizeof why, "%s hidden_size %lld%s", p->dirs == 2 ? "a bidirectional" : "a one-direction",
             (long long)H, bd_node_attr(n, "hidden_size") ? "" : " (from R)");
    if (p->quantized) {
        int wt = w->dtype;
        if (wt != BRAID_DTYPE_INT8 && wt != BRAID_DTYPE_UINT8)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input W has dtype %s; it must be int8 or uint8", bd_dtype_name(wt));
        BD_TRY(expect_dims(w, "W", why, 3, D, isz, 4 * H, e));
        if (r->dtype != wt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input R has dtype %s; it must have W's dtype %s",
                           bd_dtype_name(r->dtype), bd_dtype_name(wt));
        BD_TRY(expect_dims(r, "R", why, 3, D, H, 4 * H, e));
        static const char *const qn[4] = {"W_scale", "W_zero_point", "R_scale", "R_zero_point"};
        for (int i = 0; i < 4; i++) {
            const bd_tensor *q = &in[IN_WS + i];
            if (!given(in, ni, IN_WS + i))
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input %s is required", qn[i]);
            int want = i & 1 ? wt : BRAID_DTYPE_FLOAT;
            if (q->dtype != want)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input %s has dtype %s; it must be %s", qn[i],
                               bd_dtype_name(q->dtype), bd_dtype_name(want));
            if (!((q->rank == 1 && q->dims[0] == D) || (q->rank == 2 && q->dims[0] == D && q->dims[1] == 4 * H)))
                BD_TRY(expect_dims(q, qn[i], "per-direction quantization", 1, D, -1, -1, e));
        }
    } else {
        BD_TRY(expect_dtype(w, "W", dt, e));
        BD_TRY(expect_dtype(r, "R", dt, e));
        BD_TRY(expect_dims(w, "W", why, 3, D, G * H, isz, e));
        if (p->r_transposed) BD_TRY(expect_dims(r, "R (transposed at load)", why, 3, D, H, G * H, e));
        else BD_TRY(expect_dims(r, "R", why, 3, D, G * H, H, e));
    }
    if (given(in, ni, IN_B)) {
        BD_TRY(expect_dtype(&in[IN_B], "B", dt, e));
        BD_TRY(expect_dims(&in[IN_B], "B", why, 2, D, 2 * G * H, -1, e));
    }
    if (given(in, ni, IN_LENS)) {
        const bd_tensor *l = &in[IN_LENS];
        if (l->dtype != BRAID_DTYPE_INT32)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input sequence_lens has dtype %s; it must be int32",
                           bd_dtype_name(l->dtype));
        BD_TRY(expect_dims(l, "sequence_lens", "the batch of X", 1, batch, -1, -1, e));
        for (int64_t b = 0; l->data && b < batch; b++) {
            int32_t v = ((const int32_t *)l->data)[b];
            if (v < 0 || v > seq)
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                               "sequence_lens[%lld] is %d, outside [0, %lld] (the sequence length of X)",
                               (long long)b, (int)v, (long long)seq);
        }
    }
    static const char *const sn[2] = {"initial_h", "initial_c"};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && p->cell != BD_RNN_LSTM) break;
        if (!given(in, ni, IN_H0 + i)) continue;
        BD_TRY(expect_dtype(&in[IN_H0 + i], sn[i], dt, e));
        if (p->layout) BD_TRY(expect_dims(&in[IN_H0 + i], sn[i], why, 3, batch, D, H, e));
        else BD_TRY(expect_dims(&in[IN_H0 + i], sn[i], why, 3, D, batch, H, e));
    }
    if (p->cell == BD_RNN_LSTM && given(in, ni, IN_P)) {
        BD_TRY(expect_dtype(&in[IN_P], "P", dt, e));
        BD_TRY(expect_dims(&in[IN_P], "P", why, 2, D, 3 * H, -1, e));
    }
    int64_t od = p->part >= 0 ? 1 : D;
    for (int k = 0; k < n->n_out; k++) {
        out[k] = (bd_tensor){.dtype = dt, .rank = k == 0 ? 4 : 3};
        int64_t *o = out[k].dims;
        if (k == 0) {
            if (p->layout) o[0] = batch, o[1] = seq, o[2] = od, o[3] = H;
            else o[0] = seq, o[1] = od, o[2] = batch, o[3] = H;
        } else if (p->layout) o[0] = batch, o[1] = od, o[2] = H;
        else o[0] = od, o[1] = batch, o[2] = H;
    }
fail:
    return st;
}

double bd_rnn_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)out;
    const bd_rnn_params *p = n->params;
    const bd_tensor *x = &in[IN_X];
    if (!p || x->rank != 3) return 0;
    double seq = (double)x->dims[p->layout ? 1 : 0], batch = (double)x->dims[p->layout ? 0 : 1];
    double isz = (double)x->dims[2], H = (double)bd_rnn_hidden(p, &in[IN_R]);
    double dirs = p->part >= 0 ? 1 : p->dirs, gh = (double)p->gates * H;
    /* The GEMMs, the gate math, and a latency per step: the steps run one
     * after the other (a GEMM and a gate update each), whatever their size;
     * 1e5 operations is about 5 microseconds at the planner's rate. */
    return dirs * (2.0 * seq * batch * (isz + H) * gh + 20.0 * seq * batch * gh + seq * 1e5);
}
