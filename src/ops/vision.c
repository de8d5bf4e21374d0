/* vision.c: attribute parsing, shape inference and cost of the vision op
 * family: GridSample (opsets 16, 20, 22), AffineGrid, RoiAlign (10, 16, 22),
 * MaxRoiPool and NonMaxSuppression (whose output shape depends on the
 * values: BD_OPF_DATA_SHAPE). */
#include "vision.h"

#include <string.h>

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define PLAIN (FLOATS | DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64) | DT(UINT8) | DT(UINT16) | DT(UINT32) | \
               DT(UINT64) | DT(BOOL))

static int dtype_in(int dt, unsigned set) { return dt > 0 && dt < 32 && (set & (1u << dt)); }

/* Picks attribute `attr` (default def) among names[] (NULL-terminated); its index into *out. */
static braid_status pick(const bd_node *n, const char *attr, const char *def, const char *const *names, int *out,
                         bd_err *e)
{
    const char *s = NULL;
    braid_status st = bd_attr_string(n, attr, def, &s, e);
    if (st != BRAID_OK) return st;
    char opts[160] = "";
    for (int i = 0; names[i]; i++) {
        if (!strcmp(s, names[i])) {
            *out = i;
            return BRAID_OK;
        }
        strncat(opts, i ? ", " : "", sizeof opts - strlen(opts) - 1);
        strncat(opts, names[i], sizeof opts - strlen(opts) - 1);
    }
    return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is '%s'; %s-%d takes %s", attr, s, n->op_type,
                   n->opset, opts);
}

static braid_status flag(const bd_node *n, const char *name, int *out, bd_err *e)
{
    int64_t v = 0;
    braid_status st = bd_attr_int(n, name, 0, &v, e);
    if (st != BRAID_OK) return st;
    if (v != 0 && v != 1)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be 0 or 1, not %lld", name, (long long)v);
    *out = (int)v;
    return BRAID_OK;
}

braid_status bd_vision_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_vision_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->spatial_scale = 1.0f;
    switch (n->op) {
    case BD_OP_GridSample: {
        /* Modes in the order of bd_gs_mode; opset 20 renamed them. */
        static const char *const old_modes[] = {"nearest", "bilinear", "bicubic", NULL};
        static const char *const new_modes[] = {"nearest", "linear", "cubic", NULL};
        static const char *const pads[] = {"zeros", "border", "reflection", NULL};
        if (n->opset < 20) BD_TRY(pick(n, "mode", "bilinear", old_modes, &p->mode, e));
        else BD_TRY(pick(n, "mode", "linear", new_modes, &p->mode, e));
        BD_TRY(pick(n, "padding_mode", "zeros", pads, &p->padding, e));
        BD_TRY(flag(n, "align_corners", &p->align_corners, e));
        break;
    }
    case BD_OP_AffineGrid: BD_TRY(flag(n, "align_corners", &p->align_corners, e)); break;
    case BD_OP_RoiAlign: {
        static const char *const modes[] = {"avg", "max", NULL};
        static const char *const coords[] = {"output_half_pixel", "half_pixel", NULL};
        BD_TRY(pick(n, "mode", "avg", modes, &p->mode, e));
        BD_TRY(pick(n, "coordinate_transformation_mode", n->opset < 16 ? "output_half_pixel" : "half_pixel", coords,
                    &p->half_pixel, e));
        BD_TRY(bd_attr_int(n, "output_height", 1, &p->out_h, e));
        BD_TRY(bd_attr_int(n, "output_width", 1, &p->out_w, e));
        BD_TRY(bd_attr_int(n, "sampling_ratio", 0, &p->sampling_ratio, e));
        BD_TRY(bd_attr_float(n, "spatial_scale", 1.0f, &p->spatial_scale, e));
        if (p->out_h < 1 || p->out_w < 1 || p->sampling_ratio < 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "output_height (%lld) and output_width (%lld) must be 1 or more "
                         "and sampling_ratio (%lld) 0 or more", (long long)p->out_h, (long long)p->out_w,
                         (long long)p->sampling_ratio);
            goto fail;
        }
        break;
    }
    case BD_OP_MaxRoiPool: {
        int64_t ps[2];
        int count = 0;
        BD_TRY(bd_attr_ints(n, "pooled_shape", ps, 2, &count, e));
        if (count != 2 || ps[0] < 1 || ps[1] < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'pooled_shape' must be 2 values of 1 or more%s",
                         count ? "" : " (it is required)");
            goto fail;
        }
        p->out_h = ps[0], p->out_w = ps[1];
        BD_TRY(bd_attr_float(n, "spatial_scale", 1.0f, &p->spatial_scale, e));
        break;
    }
    case BD_OP_NonMaxSuppression: BD_TRY(flag(n, "center_point_box", &p->center_point_box, e)); break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

static braid_status need_float(const bd_tensor *t, const char *what, const char *op, bd_err *e)
{
    if (dtype_in(t->dtype, FLOATS)) return BRAID_OK;
    return BD_FAIL(e, t->dtype == BRAID_DTYPE_UNDEFINED ? BRAID_ERR_INVALID_MODEL : BRAID_ERR_DTYPE,
                   "input '%s' has dtype %s; %s takes float, double, float16 or bfloat16", what,
                   bd_dtype_name(t->dtype), op);
}

braid_status bd_gridsample_check(const bd_node *n, const bd_tensor *x, const bd_tensor *grid, bd_err *e)
{
    const bd_vision_params *p = n->params;
    int r = x->rank - 2;
    if (n->opset < 20 && x->rank != 4)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "GridSample-%d takes 4-D input (N, C, H, W), not rank %d", n->opset,
                       x->rank);
    if (r < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'X' must have rank 3 or more, not %d", x->rank);
    if (r > BD_GS_MAX_SPATIAL)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "GridSample over %d spatial dims is not supported (1 to %d are)", r,
                       BD_GS_MAX_SPATIAL);
    if (grid->rank != x->rank || grid->dims[0] != x->dims[0] || grid->dims[grid->rank - 1] != r)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "grid must be (N, %d output dims, %d) for X of rank %d with N = %lld", r, r,
                       x->rank, (long long)x->dims[0]);
    if (p->mode != BD_GS_NEAREST && !dtype_in(x->dtype, FLOATS))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "GridSample interpolates only float types; X has dtype %s (mode "
                       "'nearest' takes it)", bd_dtype_name(x->dtype));
    for (int d = 0; d < r; d++)
        if (x->dims[2 + d] == 0 && grid->dims[1 + d] > 0 && bd_numel(grid) > 0 && x->dims[1] > 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot sample an empty spatial dim %d", d);
    return BRAID_OK;
}

/* A scalar input that may be omitted (dtype UNDEFINED or no values). */
static braid_status opt_scalar(const bd_tensor *t, const char *what, int want_dt, bd_err *e)
{
    if (t->dtype == BRAID_DTYPE_UNDEFINED) return BRAID_OK;
    if (t->dtype != want_dt)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' must be %s, not %s", what, bd_dtype_name(want_dt),
                       bd_dtype_name(t->dtype));
    if (t->rank > 1 || bd_numel(t) > 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be a scalar, not %lld values", what,
                       (long long)bd_numel(t));
    return BRAID_OK;
}

braid_status bd_vision_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_vision_params *p = n->params;
    const bd_tensor *x = &in[0];
    braid_status st;
    switch (n->op) {
    case BD_OP_GridSample: {
        const bd_tensor *grid = &in[1];
        if (!dtype_in(x->dtype, PLAIN))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input 'X' has dtype %s, which braid's GridSample does not take",
                           bd_dtype_name(x->dtype));
        if ((st = need_float(grid, "grid", "GridSample", e))) return st;
        if ((st = bd_gridsample_check(n, x, grid, e))) return st;
        out[0].dtype = x->dtype;
        out[0].rank = x->rank;
        out[0].dims[0] = x->dims[0];
        out[0].dims[1] = x->dims[1];
        for (int d = 2; d < x->rank; d++) out[0].dims[d] = grid->dims[d - 1];
        return BRAID_OK;
    }
    case BD_OP_AffineGrid: {
        int64_t size[5];
        int count = 0;
        if ((st = need_float(x, "theta", "AffineGrid", e))) return st;
        if ((st = bd_const_ints(&in[1], "size", size, 5, &count, e))) return st;
        if (count != 4 && count != 5)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'size' must hold 4 (N, C, H, W) or 5 (N, C, D, H, W) values, "
                           "not %d", count);
        int r = count - 2;
        if (x->rank != 3 || x->dims[0] != size[0] || x->dims[1] != r || x->dims[2] != r + 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "theta must be (N, %d, %d) with N = %lld for a %d-D size", r, r + 1,
                           (long long)size[0], r);
        for (int i = 0; i < count; i++)
            if (size[i] < 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "size[%d] is negative (%lld)", i, (long long)size[i]);
        out[0].dtype = x->dtype;
        out[0].rank = r + 2;
        out[0].dims[0] = size[0];
        for (int i = 0; i < r; i++) out[0].dims[1 + i] = size[2 + i];
        out[0].dims[r + 1] = r;
        return BRAID_OK;
    }
    case BD_OP_RoiAlign:
    case BD_OP_MaxRoiPool: {
        const bd_tensor *rois = &in[1];
        const int cols = n->op == BD_OP_RoiAlign ? 4 : 5;
        if ((st = need_float(x, "X", n->op_type, e))) return st;
        if (x->rank != 4) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'X' must be (N, C, H, W), not rank %d", x->rank);
        if (rois->dtype != x->dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "rois has dtype %s but X %s; they must agree",
                           bd_dtype_name(rois->dtype), bd_dtype_name(x->dtype));
        if (rois->rank != 2 || rois->dims[1] != cols)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "rois must be (num_rois, %d), not rank %d", cols, rois->rank);
        if (n->op == BD_OP_RoiAlign) {
            const bd_tensor *bi = &in[2];
            if (bi->dtype != BRAID_DTYPE_INT64)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "batch_indices must be int64, not %s", bd_dtype_name(bi->dtype));
            if (bi->rank != 1 || bi->dims[0] != rois->dims[0])
                return BD_FAIL(e, BRAID_ERR_SHAPE, "batch_indices must be (num_rois) = (%lld)",
                               (long long)rois->dims[0]);
        }
        out[0].dtype = x->dtype;
        out[0].rank = 4;
        out[0].dims[0] = rois->dims[0];
        out[0].dims[1] = x->dims[1];
        out[0].dims[2] = p->out_h;
        out[0].dims[3] = p->out_w;
        return BRAID_OK;
    }
    case BD_OP_NonMaxSuppression: {
        const bd_tensor *boxes = &in[0], *scores = &in[1];
        if (boxes->dtype != BRAID_DTYPE_FLOAT || scores->dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "boxes (%s) and scores (%s) must be float32",
                           bd_dtype_name(boxes->dtype), bd_dtype_name(scores->dtype));
        if (boxes->rank != 3 || boxes->dims[2] != 4 || scores->rank != 3 || scores->dims[0] != boxes->dims[0] ||
            scores->dims[2] != boxes->dims[1])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "boxes must be (batches, boxes, 4) and scores (batches, classes, "
                           "boxes) with the same batches and boxes");
        if ((st = opt_scalar(&in[2], "max_output_boxes_per_class", BRAID_DTYPE_INT64, e)) ||
            (st = opt_scalar(&in[3], "iou_threshold", BRAID_DTYPE_FLOAT, e)) ||
            (st = opt_scalar(&in[4], "score_threshold", BRAID_DTYPE_FLOAT, e)))
            return st;
        int64_t per = boxes->dims[1];
        if (in[2].data && bd_numel(&in[2]) == 1) {
            int64_t m = *(const int64_t *)in[2].data;
            per = m < 0 ? 0 : m < per ? m : per;
        }
        out[0].dtype = BRAID_DTYPE_INT64;
        out[0].rank = 2;
        out[0].dims[0] = boxes->dims[0] * scores->dims[1] * per;
        out[0].dims[1] = 3;
        return BRAID_OK;
    }
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the vision family", n->op_type);
    }
}

double bd_vision_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_vision_params *p = n->params;
    switch (n->op) {
    case BD_OP_GridSample: {
        double taps = !p || p->mode == BD_GS_NEAREST ? 1 : p->mode == BD_GS_LINEAR ? 2 : 4;
        double per = 1;
        for (int d = 2; d < in[0].rank; d++) per *= taps;
        return (double)bd_numel(&out[0]) * per * 2;
    }
    case BD_OP_RoiAlign: return (double)bd_numel(&out[0]) * 4 * 8 * (p && p->sampling_ratio ? (double)(p->sampling_ratio * p->sampling_ratio) : 4);
    case BD_OP_MaxRoiPool: return (double)bd_numel(&out[0]) * 16;
    case BD_OP_NonMaxSuppression: {
        double nb = in[0].rank == 3 ? (double)in[0].dims[1] : 1;
        return (double)bd_numel(&in[1]) * (nb + 20);
    }
    default: return (double)bd_numel(&out[0]);
    }
}
