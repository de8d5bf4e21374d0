/* conv.c: attribute parsing, geometry (auto_pad, output_shape), shape
 * inference and cost of the conv op family: Conv and ConvTranspose. */
#include "conv.h"

#include <string.h>

static const char *const auto_pad_names[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};

/* Fails with INVALID_MODEL unless every value of attribute name is >= min. */
static braid_status check_min(const char *name, const int64_t *v, int n, int64_t min, bd_err *e)
{
    for (int i = 0; i < n; i++)
        if (v[i] < min)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has value %lld at %d; "
                           "values must be at least %lld", name, (long long)v[i], i,
                           (long long)min);
    return BRAID_OK;
}

braid_status bd_conv_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_conv_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    const char *ap = NULL;
    BD_TRY(bd_attr_int(n, "group", 1, &p->group, e));
    if (p->group < 1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'group' must be at least 1, not %lld",
                     (long long)p->group);
        goto fail;
    }
    BD_TRY(bd_attr_string(n, "auto_pad", "NOTSET", &ap, e));
    int found = 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(ap, auto_pad_names[i]) == 0) { p->auto_pad = (bd_conv_pad)i; found = 1; }
    if (!found) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'auto_pad' is '%s'; expected NOTSET, "
                     "SAME_UPPER, SAME_LOWER or VALID", ap);
        goto fail;
    }
    BD_TRY(bd_attr_ints(n, "kernel_shape", p->kernel, BD_MAX_RANK, &p->n_kernel, e));
    BD_TRY(bd_attr_ints(n, "strides", p->strides, BD_MAX_RANK, &p->n_strides, e));
    BD_TRY(bd_attr_ints(n, "dilations", p->dilations, BD_MAX_RANK, &p->n_dilations, e));
    BD_TRY(bd_attr_ints(n, "pads", p->pads, 2 * BD_MAX_RANK, &p->n_pads, e));
    BD_TRY(check_min("kernel_shape", p->kernel, p->n_kernel, 1, e));
    BD_TRY(check_min("strides", p->strides, p->n_strides, 1, e));
    BD_TRY(check_min("dilations", p->dilations, p->n_dilations, 1, e));
    if (p->n_pads % 2) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'pads' has %d values; it needs a "
                     "begin and an end per spatial dim", p->n_pads);
        goto fail;
    }
    if (n->op == BD_OP_ConvTranspose) {
        BD_TRY(bd_attr_ints(n, "output_padding", p->out_pad, BD_MAX_RANK, &p->n_out_pad, e));
        BD_TRY(bd_attr_ints(n, "output_shape", p->out_shape, BD_MAX_RANK + 2, &p->n_out_shape, e));
        BD_TRY(check_min("output_padding", p->out_pad, p->n_out_pad, 0, e));
        BD_TRY(check_min("output_shape", p->out_shape, p->n_out_shape, 1, e));
    } else {
        BD_TRY(check_min("pads", p->pads, p->n_pads, 0, e));
    }
fail:
    return bd_params_done(n, p, st);
}

/* Python-style floor division (total paddings of ConvTranspose may be negative). */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Fails with SHAPE when attribute name has count values where the input needs want. */
static braid_status check_count(const char *name, int count, int want, int nsp, bd_err *e)
{
    if (count && count != want)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "attribute '%s' has %d values but the input has %d "
                       "spatial dims (expected %d values)", name, count, nsp, want);
    return BRAID_OK;
}

braid_status bd_conv_geometry(const bd_node *n, const bd_tensor *x, const bd_tensor *w,
                              const bd_tensor *b, bd_conv_geom *g, bd_err *e)
{
    const bd_conv_params *p = n->params;
    int tr = n->op == BD_OP_ConvTranspose;
    char sx[160], sw[160];
    braid_status st;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    bd_tensor xl, wl;
    if (p->layout == BD_LAYOUT_NHWC) { /* read the logical (N, C, H, W) and (M, C/group, KH, KW) */
        if (tr || x->rank != 4 || w->rank != 4)
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "an NHWC %s must be a 2-D Conv", n->op_type);
        xl = *x, wl = *w;
        if (!p->x_nchw) xl.dims[1] = x->dims[3], xl.dims[2] = x->dims[1], xl.dims[3] = x->dims[2];
        wl.dims[0] = w->dims[3], wl.dims[1] = w->dims[2], wl.dims[2] = w->dims[0], wl.dims[3] = w->dims[1];
        x = &xl, w = &wl;
    }
    /* A dtype braid does not run is UNSUPPORTED; inputs that disagree are DTYPE. */
    if ((st = bd_expect_dtype(x, "input X", e, BRAID_DTYPE_FLOAT, BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, 0)))
        return st;
    if (w->dtype != x->dtype || (b && b->dtype != BRAID_DTYPE_UNDEFINED && b->dtype != x->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input X is %s but W is %s%s%s; they must match",
                       bd_dtype_name(x->dtype), bd_dtype_name(w->dtype),
                       b && b->dtype ? " and B " : "", b && b->dtype ? bd_dtype_name(b->dtype) : "");
    if (x->rank < 3)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input X must be (N, C, D1, ...) with at least one "
                       "spatial dim, not shape %s", bd_shape_str(x, sx, sizeof sx));
    int nsp = x->rank - 2;
    if (nsp > BD_CONV_MAX_SPATIAL)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%d spatial dims (input shape %s); braid runs "
                       "1-D, 2-D and 3-D convolutions", nsp, bd_shape_str(x, sx, sizeof sx));
    if (w->rank != x->rank)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "weight W has shape %s (rank %d) but input X has "
                       "shape %s (rank %d)", bd_shape_str(w, sw, sizeof sw), w->rank,
                       bd_shape_str(x, sx, sizeof sx), x->rank);
    if ((st = check_count("kernel_shape", p->n_kernel, nsp, nsp, e)) ||
        (st = check_count("strides", p->n_strides, nsp, nsp, e)) ||
        (st = check_count("dilations", p->n_dilations, nsp, nsp, e)) ||
        (st = check_count("pads", p->n_pads, 2 * nsp, nsp, e)) ||
        (st = check_count("output_padding", p->n_out_pad, nsp, nsp, e)))
        return st;
    if (p->n_out_shape && p->n_out_shape != nsp && p->n_out_shape != nsp + 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "attribute 'output_shape' has %d values but the "
                       "input has %d spatial dims", p->n_out_shape, nsp);

    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    g->group = p->group;
    g->n = x->dims[0];
    g->c_in = x->dims[1];
    if (!tr) {
        g->c_out = w->dims[0];
        if (g->c_in >= 0 && w->dims[1] * p->group != g->c_in)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "weight W has %lld input channels per group "
                           "(shape %s) but input X has %lld channels and group is %lld, which "
                           "needs %lld per group", (long long)w->dims[1],
                           bd_shape_str(w, sw, sizeof sw), (long long)g->c_in,
                           (long long)p->group, (long long)(g->c_in / p->group));
    } else {
        g->c_out = w->dims[1] * p->group;
        if (g->c_in >= 0 && w->dims[0] != g->c_in)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "weight W has %lld input channels (shape %s) but "
                           "input X has %lld channels", (long long)w->dims[0],
                           bd_shape_str(w, sw, sizeof sw), (long long)g->c_in);
        if (g->c_in >= 0 && g->c_in % p->group)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input X has %lld channels, not a multiple of "
                           "group %lld", (long long)g->c_in, (long long)p->group);
    }
    if (g->c_out % p->group)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "weight W gives %lld output channels, not a multiple "
                       "of group %lld", (long long)g->c_out, (long long)p->group);
    if (b && b->dtype != BRAID_DTYPE_UNDEFINED && (b->rank != 1 || b->dims[0] != g->c_out))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "bias B has shape %s; expected (%lld), one value per "
                       "output channel", bd_shape_str(b, sx, sizeof sx), (long long)g->c_out);

    int same = p->auto_pad == BD_PAD_SAME_UPPER || p->auto_pad == BD_PAD_SAME_LOWER;
    for (int i = 0; i < nsp; i++) {
        int64_t xi = x->dims[2 + i];
        g->x[i] = xi;
        g->k[i] = w->dims[2 + i];
        g->s[i] = p->n_strides ? p->strides[i] : 1;
        g->d[i] = p->n_dilations ? p->dilations[i] : 1;
        if (p->n_kernel && p->kernel[i] != g->k[i])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "attribute 'kernel_shape' says %lld at spatial "
                           "dim %d but weight W has shape %s", (long long)p->kernel[i], i,
                           bd_shape_str(w, sw, sizeof sw));
        if (g->k[i] < 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "weight W has an empty kernel (shape %s)",
                           bd_shape_str(w, sw, sizeof sw));
        int64_t ek = (g->k[i] - 1) * g->d[i] + 1; /* the dilated kernel's extent */
        int64_t pb = p->n_pads ? p->pads[i] : 0, pe = p->n_pads ? p->pads[nsp + i] : 0;
        if (p->auto_pad == BD_PAD_VALID) pb = pe = 0;
        if (xi < 0) { /* not known yet */
            g->pb[i] = pb, g->pe[i] = pe, g->y[i] = -1;
            continue;
        }
        int64_t yi;
        if (!tr) {
            if (same) {
                yi = BD_CEIL_DIV(xi, g->s[i]);
                int64_t need = BD_MAX(0, (yi - 1) * g->s[i] + ek - xi);
                pb = p->auto_pad == BD_PAD_SAME_LOWER ? (need + 1) / 2 : need / 2;
                pe = need - pb;
            } else {
                if (xi + pb + pe < ek)
                    return BD_FAIL(e, BRAID_ERR_SHAPE, "spatial dim %d of input X is %lld (padded "
                                   "%lld) but the dilated kernel spans %lld", i, (long long)xi,
                                   (long long)(xi + pb + pe), (long long)ek);
                yi = (xi + pb + pe - ek) / g->s[i] + 1;
            }
        } else {
            int64_t op = p->n_out_pad ? p->out_pad[i] : 0;
            int64_t full = g->s[i] * (xi - 1) + op + ek; /* the output before cropping pads */
            int64_t want = p->n_out_shape ? p->out_shape[p->n_out_shape - nsp + i] : -1;
            if (same && !p->n_pads) {
                if (want < 0) want = xi * g->s[i];
                int64_t total = full - want;
                if (p->auto_pad == BD_PAD_SAME_UPPER) pb = floor_div(total, 2), pe = total - pb;
                else pe = floor_div(total, 2), pb = total - pe;
            }
            yi = want >= 0 ? want : full - pb - pe;
        }
        if (yi < 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "spatial dim %d of the output would be %lld "
                           "(input X %s, weight W %s)", i, (long long)yi,
                           bd_shape_str(x, sx, sizeof sx), bd_shape_str(w, sw, sizeof sw));
        g->y[i] = yi, g->pb[i] = pb, g->pe[i] = pe;
    }
    return BRAID_OK;
}

braid_status bd_conv_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_conv_geom g;
    braid_status st = bd_conv_geometry(n, &in[0], &in[1], n->n_in > 2 ? &in[2] : NULL, &g, e);
    if (st) return st;
    out[0].dtype = in[0].dtype;
    out[0].rank = g.nsp + 2;
    out[0].dims[0] = g.n;
    out[0].dims[1] = g.c_out;
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.y[i];
    const bd_conv_params *p = n->params;
    if (p->layout == BD_LAYOUT_NHWC) /* (N, H, W, M) */
        out[0].dims[1] = g.y[0], out[0].dims[2] = g.y[1], out[0].dims[3] = g.c_out;
    return BRAID_OK;
}

void bd_conv_wino_weights(const float *w, int form, int64_t pw, int64_t c_in, int64_t m_out, float *out)
{
    int64_t C = c_in, M = m_out, Mp = (M + 15) / 16 * 16, nmv = Mp / 16;
    memset(out, 0, (size_t)bd_conv_wino_floats(C, M) * sizeof *out);
    for (int64_t m = 0, mb = 0, v0 = 0, nv = bd_conv_wino_block(nmv, 0, &v0); m < M; m++) {
        while (m / 16 >= v0 + nv) nv = bd_conv_wino_block(nmv, ++mb, &v0); /* m's block */
        for (int64_t c = 0; c < C; c++) {
            float g[9], u[16];
            for (int r = 0; r < 9; r++) {
                int64_t row = r * C + c; /* (kh, kw, c) in the (3, 3, C, M) forms */
                g[r] = form == 0 ? w[(m * C + c) * 9 + r] : w[pw ? bd_conv_panel_at(pw, M, 9 * C, row, m) : row * M + m];
            }
            bd_conv_wino_kernel(g, u);
            for (int p = 0; p < 16; p++) out[p * C * Mp + v0 * 16 * C + c * nv * 16 + (m - v0 * 16)] = u[p];
        }
    }
}

double bd_conv_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_conv_params *p = n->params;
    if (!p || in[1].rank < 3 || out[0].rank < 3) return 0;
    double taps = 1;
    if (p->layout == BD_LAYOUT_NHWC) /* W is (KH, KW, C/group, M) */
        return 2.0 * (double)bd_numel(&out[0]) * (double)in[1].dims[0] * (double)in[1].dims[1] *
               (double)in[1].dims[2];
    for (int i = 2; i < in[1].rank; i++) taps *= (double)in[1].dims[i];
    /* Each output (Conv) or input (ConvTranspose) element meets
     * channels-per-group x taps weights, one multiply and one add each. */
    if (n->op == BD_OP_ConvTranspose)
        return 2.0 * (double)bd_numel(&in[0]) * (double)in[1].dims[1] * taps;
    return 2.0 * (double)bd_numel(&out[0]) * (double)in[1].dims[1] * taps;
}
