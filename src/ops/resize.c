/* resize.c: attribute parsing, shape inference and cost of the resize op
 * family (Resize 10-19+, Upsample 1-10): output sizes from scales or sizes,
 * axes and keep_aspect_ratio_policy resolved in one shared helper. */
#include "resize.h"

#include <math.h>
#include <string.h>

typedef struct name_value {
    const char *name;
    int value;
} name_value;

static braid_status pick(const bd_node *n, const char *attr, const char *def, const name_value *tab,
                         int *out, bd_err *e)
{
    const char *s = NULL;
    braid_status st = bd_attr_string(n, attr, def, &s, e);
    if (st != BRAID_OK) return st;
    for (int i = 0; tab[i].name; i++)
        if (!strcmp(s, tab[i].name)) { *out = tab[i].value; return BRAID_OK; }
    char opts[256] = "";
    for (int i = 0; tab[i].name; i++) {
        if (i) strncat(opts, ", ", sizeof opts - strlen(opts) - 1);
        strncat(opts, tab[i].name, sizeof opts - strlen(opts) - 1);
    }
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s' is '%s'; supported: %s", attr, s, opts);
}

static const name_value modes[] = {{"nearest", BD_RESIZE_NEAREST}, {"linear", BD_RESIZE_LINEAR},
                                   {"bilinear", BD_RESIZE_LINEAR}, {"cubic", BD_RESIZE_CUBIC},
                                   {NULL, 0}};
static const name_value coords[] = {{"half_pixel", BD_COORD_HALF_PIXEL},
                                    {"pytorch_half_pixel", BD_COORD_PYTORCH_HALF_PIXEL},
                                    {"align_corners", BD_COORD_ALIGN_CORNERS},
                                    {"asymmetric", BD_COORD_ASYMMETRIC},
                                    {"tf_crop_and_resize", BD_COORD_TF_CROP_AND_RESIZE},
                                    {"half_pixel_symmetric", BD_COORD_HALF_PIXEL_SYMMETRIC},
                                    {NULL, 0}};
static const name_value nearests[] = {{"round_prefer_floor", BD_NEAREST_ROUND_PREFER_FLOOR},
                                      {"round_prefer_ceil", BD_NEAREST_ROUND_PREFER_CEIL},
                                      {"floor", BD_NEAREST_FLOOR},
                                      {"ceil", BD_NEAREST_CEIL},
                                      {NULL, 0}};
static const name_value aspects[] = {{"stretch", BD_ASPECT_STRETCH},
                                     {"not_larger", BD_ASPECT_NOT_LARGER},
                                     {"not_smaller", BD_ASPECT_NOT_SMALLER},
                                     {NULL, 0}};

braid_status bd_resize_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_resize_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->in_roi = p->in_scales = p->in_sizes = -1;
    p->cubic_a = -0.75f;
    BD_TRY(pick(n, "mode", "nearest", modes, &p->mode, e));
    int64_t v = 0;
    if (n->op == BD_OP_Upsample || n->opset < 11) {
        /* Upsample and Resize-10: asymmetric coordinates, nearest floors. */
        p->coord = BD_COORD_ASYMMETRIC;
        p->nearest = BD_NEAREST_SIMPLE;
        if (p->mode == BD_RESIZE_CUBIC) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "mode 'cubic' needs Resize opset 11 or later");
            goto fail;
        }
        if (n->op == BD_OP_Upsample && n->opset < 7) { /* Upsample-1: (N, C, H, W) by height_scale, width_scale */
            float hs = 0, ws = 0;
            BD_TRY(bd_attr_float(n, "height_scale", 0, &hs, e));
            BD_TRY(bd_attr_float(n, "width_scale", 0, &ws, e));
            if (!bd_node_attr(n, "height_scale") || !bd_node_attr(n, "width_scale")) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes 'height_scale' and 'width_scale' are required");
                goto fail;
            }
            p->n_attr_scales = 4;
            p->attr_scales[0] = p->attr_scales[1] = 1.0f;
            p->attr_scales[2] = hs, p->attr_scales[3] = ws;
        } else if (n->op == BD_OP_Upsample && n->opset < 9) {
            BD_TRY(bd_attr_floats(n, "scales", p->attr_scales, BD_MAX_RANK, &p->n_attr_scales, e));
            if (p->n_attr_scales == 0) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'scales' is required");
                goto fail;
            }
        } else {
            p->in_scales = 1;
        }
    } else {
        p->in_roi = 1;
        p->in_scales = 2;
        p->in_sizes = 3;
        BD_TRY(pick(n, "coordinate_transformation_mode", "half_pixel", coords, &p->coord, e));
        BD_TRY(pick(n, "nearest_mode", "round_prefer_floor", nearests, &p->nearest, e));
        BD_TRY(pick(n, "keep_aspect_ratio_policy", "stretch", aspects, &p->aspect, e));
        BD_TRY(bd_attr_float(n, "cubic_coeff_a", -0.75f, &p->cubic_a, e));
        BD_TRY(bd_attr_float(n, "extrapolation_value", 0.0f, &p->extrapolation, e));
        BD_TRY(bd_attr_int(n, "exclude_outside", 0, &v, e));
        p->exclude_outside = v != 0;
        BD_TRY(bd_attr_int(n, "antialias", 0, &v, e));
        p->antialias = v != 0;
        BD_TRY(bd_attr_ints(n, "axes", p->axes, BD_MAX_RANK, &p->n_axes, e));
    }
fail:
    return bd_params_done(n, p, st);
}

/* The input at position i, or NULL when the op version has none there, the
 * model omits it, or it is an empty tensor (which ONNX reads as omitted). */
static const bd_tensor *optional_input(const bd_tensor *in, int n_in, int i)
{
    if (i < 0 || i >= n_in || in[i].dtype == BRAID_DTYPE_UNDEFINED) return NULL;
    if (in[i].rank >= 0 && bd_numel(&in[i]) == 0) return NULL;
    return &in[i];
}

braid_status bd_resize_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_resize_geom *g,
                                bd_err *e)
{
    const bd_resize_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st = BRAID_OK;
    int r = x->rank;
    memset(g, 0, sizeof *g);
    if (r < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'X' must have rank 1 or more, not %d", r);
    g->rank = r;
    for (int d = 0; d < r; d++) {
        g->in[d] = g->out[d] = x->dims[d];
        g->scale[d] = 1.0;
        g->length[d] = (double)x->dims[d];
        g->roi_start[d] = 0.0;
        g->roi_end[d] = 1.0;
    }
    /* Which axes scales, sizes and roi describe. */
    int axes[BD_MAX_RANK], na = p->n_axes ? p->n_axes : r;
    for (int i = 0; i < na; i++) {
        if (!p->n_axes) { axes[i] = i; continue; }
        st = bd_axis(p->axes[i], r, &axes[i], e);
        if (st != BRAID_OK) return st;
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axes' repeats axis %d",
                               axes[i]);
    }
    /* scales (attribute or float input) or sizes (int input): exactly one. */
    double sc[BD_MAX_RANK];
    int64_t sizes[BD_MAX_RANK];
    int have_scales = 0, have_sizes = 0, count = 0;
    const bd_tensor *ts = optional_input(in, n_in, p->in_scales);
    const bd_tensor *tz = optional_input(in, n_in, p->in_sizes);
    if (p->n_attr_scales) {
        count = p->n_attr_scales;
        for (int i = 0; i < count; i++) sc[i] = p->attr_scales[i];
        have_scales = 1;
    } else if (ts) {
        if (ts->dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'scales' must be float32, not %s",
                           bd_dtype_name(ts->dtype));
        if (!ts->data)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                           "input 'scales' must be known when the plan is made (a constant)");
        if (ts->rank > 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'scales' must be 1-D, not rank %d", ts->rank);
        count = (int)BD_MIN(bd_numel(ts), BD_MAX_RANK + 1);
        for (int i = 0; i < count && i < BD_MAX_RANK; i++) sc[i] = ((const float *)ts->data)[i];
        have_scales = 1;
    }
    if (tz) {
        if (have_scales)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "both 'scales' and 'sizes' are given; only one may be");
        st = bd_const_ints(tz, "sizes", sizes, BD_MAX_RANK, &count, e);
        if (st != BRAID_OK) return st;
        have_sizes = 1;
    }
    if (!have_scales && !have_sizes)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "%s needs 'scales' or 'sizes' to size its output, and neither was given",
                       n->op_type);
    if (count != na)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "'%s' has %d values, expected %d (%s)",
                       have_scales ? "scales" : "sizes", count, na,
                       p->n_axes ? "one per entry of 'axes'" : "one per input dim");
    if (have_scales) {
        for (int i = 0; i < na; i++) {
            int d = axes[i];
            if (!(sc[i] > 0))
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                               "'scales' must be positive, but scale %d is %g", i, sc[i]);
            g->scale[d] = sc[i];
            g->length[d] = sc[i] * (double)g->in[d];
            g->out[d] = g->in[d] < 0 ? -1 : (int64_t)floor(g->length[d]);
        }
    } else {
        double keep = p->aspect == BD_ASPECT_NOT_LARGER ? HUGE_VAL : 0.0;
        for (int i = 0; i < na; i++) {
            int d = axes[i];
            if (sizes[i] < 0)
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "'sizes' has a negative value %lld",
                               (long long)sizes[i]);
            double s = g->in[d] > 0 ? (double)sizes[i] / (double)g->in[d] : 1.0;
            g->out[d] = sizes[i];
            g->scale[d] = s;
            g->length[d] = s * (double)g->in[d]; /* as the onnx reference: may be off by an ulp */
            if (p->aspect == BD_ASPECT_NOT_LARGER) keep = BD_MIN(keep, s);
            if (p->aspect == BD_ASPECT_NOT_SMALLER) keep = BD_MAX(keep, s);
        }
        if (p->aspect != BD_ASPECT_STRETCH)
            for (int i = 0; i < na; i++) {
                int d = axes[i];
                g->scale[d] = keep;
                g->length[d] = keep * (double)g->in[d];
                g->out[d] = g->in[d] < 0 ? -1 : (int64_t)floor(g->length[d] + 0.5);
            }
    }
    /* roi: only tf_crop_and_resize reads it; its data may come only at run time. */
    const bd_tensor *tr = optional_input(in, n_in, p->in_roi);
    if (tr && tr->data && p->coord == BD_COORD_TF_CROP_AND_RESIZE) {
        if (tr->dtype != BRAID_DTYPE_FLOAT && tr->dtype != BRAID_DTYPE_DOUBLE)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'roi' must be float32 or double, not %s",
                           bd_dtype_name(tr->dtype));
        if (bd_numel(tr) != 2 * na)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'roi' has %lld values, expected %d",
                           (long long)bd_numel(tr), 2 * na);
        for (int i = 0; i < na; i++) {
            int d = axes[i];
            if (tr->dtype == BRAID_DTYPE_FLOAT) {
                g->roi_start[d] = ((const float *)tr->data)[i];
                g->roi_end[d] = ((const float *)tr->data)[na + i];
            } else {
                g->roi_start[d] = ((const double *)tr->data)[i];
                g->roi_end[d] = ((const double *)tr->data)[na + i];
            }
        }
        g->has_roi = 1;
    }
    return BRAID_OK;
}

braid_status bd_resize_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_resize_params *p = n->params;
    const int dt = in[0].dtype;
    braid_status st = bd_expect_dtype(&in[0], "input 'X'", e, BRAID_DTYPE_FLOAT, BRAID_DTYPE_DOUBLE,
                                      BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, BRAID_DTYPE_INT8, BRAID_DTYPE_INT16,
                                      BRAID_DTYPE_INT32, BRAID_DTYPE_INT64, BRAID_DTYPE_UINT8, BRAID_DTYPE_UINT16,
                                      BRAID_DTYPE_UINT32, BRAID_DTYPE_UINT64, BRAID_DTYPE_BOOL, 0);
    if (st != BRAID_OK) return st;
    if (dt == BRAID_DTYPE_BOOL && p->mode != BD_RESIZE_NEAREST)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a bool input can only be resized with mode 'nearest'");
    bd_resize_geom g;
    st = bd_resize_geometry(n, in, n->n_in, &g, e);
    if (st != BRAID_OK) return st;
    out[0].dtype = dt;
    out[0].rank = g.rank;
    for (int d = 0; d < g.rank; d++) out[0].dims[d] = g.out[d];
    return BRAID_OK;
}

double bd_resize_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_resize_params *p = n->params;
    int taps = !p || p->mode == BD_RESIZE_NEAREST ? 1 : p->mode == BD_RESIZE_LINEAR ? 2 : 4;
    double per = 1;
    for (int d = 0; d < out[0].rank && d < in[0].rank; d++)
        if (out[0].dims[d] != in[0].dims[d]) per *= taps;
    return (double)bd_numel(&out[0]) * per;
}
