/* signal.c: attribute parsing, shape inference and cost of the signal op
 * family: DFT (opsets 17 and 20), STFT, the Hann, Hamming and Blackman
 * windows and MelWeightMatrix. */
#include "signal.h"

#include <math.h>
#include <string.h>

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define INTS (DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64) | DT(UINT8) | DT(UINT16) | DT(UINT32) | DT(UINT64))

static int dtype_in(int dt, unsigned set) { return dt > 0 && dt < 32 && (set & (1u << dt)); }

static braid_status read_flag(const bd_node *n, const char *name, int def, int *out, bd_err *e)
{
    int64_t v = 0;
    braid_status st = bd_attr_int(n, name, def, &v, e);
    if (st != BRAID_OK) return st;
    if (v != 0 && v != 1)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be 0 or 1, not %lld", name, (long long)v);
    *out = (int)v;
    return BRAID_OK;
}

braid_status bd_signal_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_signal_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    int64_t v = 0;
    switch (n->op) {
    case BD_OP_DFT:
        BD_TRY(read_flag(n, "inverse", 0, &p->inverse, e));
        BD_TRY(read_flag(n, "onesided", 0, &p->onesided, e));
        if (n->opset < 20) {
            BD_TRY(bd_attr_int(n, "axis", 1, &p->axis, e));
            if (n->n_in > 2) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "DFT-%d takes at most 2 inputs (axis is an attribute "
                             "before opset 20), not %d", n->opset, n->n_in);
                goto fail;
            }
        } else if (bd_node_attr(n, "axis")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axis' is an input from DFT-20 on");
            goto fail;
        }
        break;
    case BD_OP_STFT: BD_TRY(read_flag(n, "onesided", 1, &p->onesided, e)); break;
    case BD_OP_HannWindow:
    case BD_OP_HammingWindow:
    case BD_OP_BlackmanWindow:
    case BD_OP_MelWeightMatrix: {
        if (n->op != BD_OP_MelWeightMatrix) BD_TRY(read_flag(n, "periodic", 1, &p->periodic, e));
        BD_TRY(bd_attr_int(n, "output_datatype", BRAID_DTYPE_FLOAT, &v, e));
        if (v != (int)v || !dtype_in((int)v, FLOATS | INTS)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'output_datatype' is %lld (%s), which %s does not produce", (long long)v,
                         bd_dtype_name((int)v), n->op_type);
            goto fail;
        }
        p->out_dtype = (int)v;
        break;
    }
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

/* A scalar (rank 0, or 1-D of one value) int32/int64 input known at plan
 * time; *have = 0 when it is omitted. */
static braid_status scalar_int(const bd_tensor *t, const char *what, int64_t *out, int *have, bd_err *e)
{
    *have = 0;
    if (t->dtype == BRAID_DTYPE_UNDEFINED) return BRAID_OK;
    if (t->rank > 1 || (t->rank >= 0 && bd_numel(t) != 1))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be a scalar, not %lld values of rank %d", what,
                       (long long)bd_numel(t), t->rank);
    int count = 0;
    braid_status st = bd_const_ints(t, what, out, 1, &count, e);
    if (st != BRAID_OK) return st;
    *have = 1;
    return BRAID_OK;
}

static braid_status float_input(const bd_tensor *t, const char *what, bd_err *e)
{
    if (dtype_in(t->dtype, FLOATS)) return BRAID_OK;
    return BD_FAIL(e, t->dtype == BRAID_DTYPE_UNDEFINED ? BRAID_ERR_INVALID_MODEL : BRAID_ERR_DTYPE,
                   "input '%s' has dtype %s; float, double, float16 or bfloat16 expected", what,
                   bd_dtype_name(t->dtype));
}

braid_status bd_dft_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_dft_geom *g, int64_t *out_dims,
                             int *out_rank, bd_err *e)
{
    const bd_signal_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    int have = 0;
    memset(g, 0, sizeof *g);
    if ((st = float_input(x, n->op == BD_OP_DFT ? "input" : "signal", e))) return st;
    const int r = x->rank;
    if (r < 2 || (x->dims[r - 1] != 1 && x->dims[r - 1] != 2))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input must end in a dim of 1 (real) or 2 (complex), not rank %d%s", r,
                       r >= 2 ? " with another last dim" : "");
    g->in_c = (int)x->dims[r - 1];
    g->inverse = n->op == BD_OP_DFT && p->inverse;
    const bd_tensor none = {.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1};
    if (n->op == BD_OP_DFT) {
        int64_t axis = p->axis, len = 0;
        if (n->opset >= 20) {
            axis = -2;
            int64_t a;
            if ((st = scalar_int(n_in > 2 ? &in[2] : &none, "axis", &a, &have, e))) return st;
            if (have) axis = a;
        }
        int64_t ax = axis < 0 ? axis + r : axis;
        if (ax < 0 || ax > r - 2)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is out of range for input of rank %d (the last "
                           "dim holds the real and imaginary parts)", (long long)axis, r);
        g->irfft = p->inverse && p->onesided;
        g->L = x->dims[ax];
        if ((st = scalar_int(n_in > 1 ? &in[1] : &none, "dft_length", &len, &have, e))) return st;
        if (!have) len = g->irfft ? 2 * (g->L - 1) : g->L;
        if (len < 1)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "dft_length is %lld; it must be 1 or more%s", (long long)len,
                           have ? "" : " (the default from the axis's length)");
        if (len > BD_DFT_MAX_LENGTH)
            return BD_FAIL(e, BRAID_ERR_LIMIT, "dft_length is %lld; braid transforms at most %lld points", (long long)len,
                           (long long)BD_DFT_MAX_LENGTH);
        g->n = len;
        g->n_out = p->onesided && !p->inverse ? len / 2 + 1 : len;
        g->len = BD_MIN(g->L, g->irfft ? len / 2 + 1 : len);
        g->out_c = g->irfft ? 1 : 2;
        g->inner = 1;
        int64_t outer = 1;
        for (int d = 0; d < r - 1; d++) {
            if (d < ax) outer *= x->dims[d];
            if (d > ax) g->inner *= x->dims[d];
        }
        g->lines = outer * g->inner;
        *out_rank = r;
        for (int d = 0; d < r; d++) out_dims[d] = x->dims[d];
        out_dims[ax] = g->n_out;
        out_dims[r - 1] = g->out_c;
        return BRAID_OK;
    }
    /* STFT: signal (batch, length, 1 | 2) */
    if (r != 3) return BD_FAIL(e, BRAID_ERR_SHAPE, "signal must have rank 3 (batch, length, 1 or 2), not %d", r);
    int64_t step = 0, fl = 0;
    if ((st = scalar_int(&in[1], "frame_step", &step, &have, e))) return st;
    if (!have) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'frame_step' is required");
    if (step < 1) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "frame_step is %lld; it must be 1 or more", (long long)step);
    const bd_tensor *w = n_in > 2 && in[2].dtype != BRAID_DTYPE_UNDEFINED ? &in[2] : NULL;
    if (w && w->dtype != x->dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "window has dtype %s but the signal %s; they must agree",
                       bd_dtype_name(w->dtype), bd_dtype_name(x->dtype));
    if (w && w->rank != 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "window must be 1-D, not rank %d", w->rank);
    if ((st = scalar_int(n_in > 3 ? &in[3] : &none, "frame_length", &fl, &have, e))) return st;
    if (have && w && w->dims[0] != fl)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "window has %lld values but frame_length is %lld; they must agree",
                       (long long)w->dims[0], (long long)fl);
    if (!have) fl = w ? w->dims[0] : x->dims[1];
    if (fl > BD_DFT_MAX_LENGTH)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "frame_length is %lld; braid transforms at most %lld points", (long long)fl,
                       (long long)BD_DFT_MAX_LENGTH);
    if (fl < 1 || fl > x->dims[1])
        return BD_FAIL(e, BRAID_ERR_SHAPE, "frame_length %lld does not fit the signal's length %lld",
                       (long long)fl, (long long)x->dims[1]);
    g->stft = 1;
    g->L = x->dims[1];
    g->step = step;
    g->frames = (g->L - fl) / step + 1;
    g->n = g->len = fl;
    g->n_out = p->onesided ? fl / 2 + 1 : fl;
    g->out_c = 2;
    g->lines = x->dims[0] * g->frames;
    *out_rank = 4;
    out_dims[0] = x->dims[0];
    out_dims[1] = g->frames;
    out_dims[2] = g->n_out;
    out_dims[3] = 2;
    return BRAID_OK;
}

braid_status bd_signal_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_signal_params *p = n->params;
    braid_status st;
    int64_t v = 0;
    int have = 0;
    switch (n->op) {
    case BD_OP_DFT:
    case BD_OP_STFT: {
        bd_dft_geom g;
        if ((st = bd_dft_geometry(n, in, n->n_in, &g, out[0].dims, &out[0].rank, e))) return st;
        out[0].dtype = in[0].dtype;
        return BRAID_OK;
    }
    case BD_OP_HannWindow:
    case BD_OP_HammingWindow:
    case BD_OP_BlackmanWindow:
        if ((st = scalar_int(&in[0], "size", &v, &have, e))) return st;
        if (!have) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'size' is required");
        if (v < 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "size is %lld; it must not be negative", (long long)v);
        out[0].dtype = p->out_dtype;
        out[0].rank = 1;
        out[0].dims[0] = v;
        return BRAID_OK;
    case BD_OP_MelWeightMatrix: {
        int64_t bins = 0, dft = 0;
        if ((st = scalar_int(&in[0], "num_mel_bins", &bins, &have, e))) return st;
        if ((st = scalar_int(&in[1], "dft_length", &dft, &have, e))) return st;
        if (bins < 1 || dft < 1)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "num_mel_bins (%lld) and dft_length (%lld) must be 1 or more",
                           (long long)bins, (long long)dft);
        if (in[2].dtype != BRAID_DTYPE_INT32 && in[2].dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'sample_rate' must be int32 or int64, not %s",
                           bd_dtype_name(in[2].dtype));
        if ((st = float_input(&in[3], "lower_edge_hertz", e)) || (st = float_input(&in[4], "upper_edge_hertz", e)))
            return st;
        if (in[3].dtype != in[4].dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "lower_edge_hertz (%s) and upper_edge_hertz (%s) must have one dtype",
                           bd_dtype_name(in[3].dtype), bd_dtype_name(in[4].dtype));
        for (int i = 2; i < 5; i++)
            if (in[i].rank >= 0 && bd_numel(&in[i]) != 1)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d of MelWeightMatrix must be a scalar, not %lld values", i,
                               (long long)bd_numel(&in[i]));
        out[0].dtype = p->out_dtype;
        out[0].rank = 2;
        out[0].dims[0] = dft / 2 + 1;
        out[0].dims[1] = bins;
        return BRAID_OK;
    }
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the signal family", n->op_type);
    }
}

double bd_signal_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    if (n->op == BD_OP_DFT || n->op == BD_OP_STFT) {
        bd_dft_geom g;
        bd_err e;
        int64_t dims[BD_MAX_RANK];
        int rank;
        if (bd_dft_geometry(n, in, n->n_in, &g, dims, &rank, &e)) return (double)bd_numel(&out[0]);
        double m = (double)bd_fft_length(g.n);
        return (double)g.lines * 5.0 * m * log2(m + 1.0) * (m != (double)g.n ? 3.0 : 1.0);
    }
    return 10.0 * (double)bd_numel(&out[0]);
}
