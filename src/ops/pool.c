/* pool.c: attribute parsing, shape inference and cost of the pool op family
 * (MaxPool, AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool,
 * GlobalLpPool, MaxUnpool). */
#include "pool.h"

#include <math.h>
#include <string.h>

/* Reads an optional list attribute of exactly want values (or none: def). */
static braid_status read_list(const bd_node *n, const char *name, int want, int64_t def,
                              int64_t min, int64_t *out, bd_err *e)
{
    int64_t v[BD_MAX_RANK * 2];
    int count = 0;
    braid_status st = bd_attr_ints(n, name, v, BD_MAX_RANK * 2, &count, e);
    if (st != BRAID_OK) return st;
    if (count == 0) {
        for (int i = 0; i < want; i++) out[i] = def;
        return BRAID_OK;
    }
    if (count != want)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "attribute '%s' has %d values, expected %d (one per spatial dim%s)", name,
                       count, want, want > BD_POOL_MAX_SPATIAL ? ", begins then ends" : "");
    for (int i = 0; i < want; i++) {
        if (v[i] < min)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has value %lld, below %lld",
                           name, (long long)v[i], (long long)min);
        out[i] = v[i];
    }
    return BRAID_OK;
}

static braid_status read_flag(const bd_node *n, const char *name, int *out, bd_err *e)
{
    int64_t v = 0;
    braid_status st = bd_attr_int(n, name, 0, &v, e);
    if (st != BRAID_OK) return st;
    if (v != 0 && v != 1)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' must be 0 or 1, not %lld", name,
                       (long long)v);
    *out = (int)v;
    return BRAID_OK;
}

braid_status bd_pool_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_pool_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->p = 2.0;
    if (n->op == BD_OP_LpPool || n->op == BD_OP_GlobalLpPool) { /* p: a float before opset 2, then an int */
        const bd_attr *a = bd_node_attr(n, "p");
        if (a && a->type == BD_ATTR_FLOAT) p->p = a->f;
        else if (a) {
            int64_t v = 2;
            BD_TRY(bd_attr_int(n, "p", 2, &v, e));
            p->p = (double)v;
        }
        if (!(p->p > 0)) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'p' is %g; it must be positive", p->p);
            goto fail;
        }
    }
    if (n->op == BD_OP_MaxUnpool) {
        int64_t kernel[BD_MAX_RANK];
        int nk = 0;
        BD_TRY(bd_attr_ints(n, "kernel_shape", kernel, BD_MAX_RANK, &nk, e));
        if (nk < 1 || nk > BD_MAX_RANK - 2) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'kernel_shape' is required (one value per spatial dim)");
            goto fail;
        }
        if (nk > BD_POOL_MAX_SPATIAL) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a %d-D MaxUnpool is not supported (1-D, 2-D and 3-D are)", nk);
            goto fail;
        }
        p->nsp = nk;
        for (int i = 0; i < nk; i++) p->kernel[i] = kernel[i];
        BD_TRY(read_list(n, "strides", nk, 1, 1, p->strides, e));
        BD_TRY(read_list(n, "pads", 2 * nk, 0, 0, p->pads, e));
    }
    if (n->op == BD_OP_MaxPool || n->op == BD_OP_AveragePool || n->op == BD_OP_LpPool) {
        int64_t kernel[BD_MAX_RANK];
        int nk = 0;
        BD_TRY(bd_attr_ints(n, "kernel_shape", kernel, BD_MAX_RANK, &nk, e));
        if (nk == 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'kernel_shape' is required");
            goto fail;
        }
        if (nk > BD_POOL_MAX_SPATIAL) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                         "a %d-D window is not supported (1-D, 2-D and 3-D are)", nk);
            goto fail;
        }
        p->nsp = nk;
        for (int i = 0; i < nk; i++) {
            if (kernel[i] < 1) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                             "attribute 'kernel_shape' has value %lld, below 1",
                             (long long)kernel[i]);
                goto fail;
            }
            p->kernel[i] = kernel[i];
        }
        BD_TRY(read_list(n, "strides", nk, 1, 1, p->strides, e));
        BD_TRY(read_list(n, "dilations", nk, 1, 1, p->dilations, e));
        BD_TRY(read_list(n, "pads", 2 * nk, 0, 0, p->pads, e));
        const char *ap = NULL;
        BD_TRY(bd_attr_string(n, "auto_pad", "NOTSET", &ap, e));
        if (!strcmp(ap, "NOTSET") || !ap[0]) p->auto_pad = BD_AUTO_PAD_NOTSET;
        else if (!strcmp(ap, "SAME_UPPER")) p->auto_pad = BD_AUTO_PAD_SAME_UPPER;
        else if (!strcmp(ap, "SAME_LOWER")) p->auto_pad = BD_AUTO_PAD_SAME_LOWER;
        else if (!strcmp(ap, "VALID")) p->auto_pad = BD_AUTO_PAD_VALID;
        else {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attribute 'auto_pad' is '%s'; expected NOTSET, SAME_UPPER, SAME_LOWER "
                         "or VALID", ap);
            goto fail;
        }
        BD_TRY(read_flag(n, "ceil_mode", &p->ceil_mode, e));
        if (n->op == BD_OP_MaxPool) BD_TRY(read_flag(n, "storage_order", &p->storage_order, e));
        else if (n->op == BD_OP_AveragePool) BD_TRY(read_flag(n, "count_include_pad", &p->count_include_pad, e));
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_pool_geometry(const bd_node *n, const bd_tensor *x, bd_pool_geom *g, bd_err *e)
{
    const bd_pool_params *p = n->params;
    memset(g, 0, sizeof *g);
    g->nsp = p->nsp;
    if (x->rank != p->nsp + 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE,
                       "input has rank %d, but kernel_shape has %d dims (rank %d expected: N, C "
                       "and the spatial dims)", x->rank, p->nsp, p->nsp + 2);
    int sp0 = p->layout == BD_LAYOUT_NHWC ? 1 : 2; /* the first spatial dim */
    for (int i = 0; i < p->nsp; i++) {
        int64_t L = x->dims[sp0 + i], k = p->kernel[i], s = p->strides[i];
        int64_t ek = (k - 1) * p->dilations[i] + 1; /* the window's extent */
        int64_t pb = p->pads[i], pe = p->pads[p->nsp + i];
        g->in[i] = L;
        if (L < 0) { g->out[i] = -1; continue; } /* unknown until the run */
        if (p->auto_pad == BD_AUTO_PAD_VALID) {
            pb = pe = 0;
        } else if (p->auto_pad != BD_AUTO_PAD_NOTSET) {
            /* As onnxruntime: pad so that the output has ceil(L / s) positions;
             * the pads may come out negative (s > k), which moves the windows. */
            int64_t target = (L + s - 1) / s;
            int64_t need = (target - 1) * s + k - L;
            pb = p->auto_pad == BD_AUTO_PAD_SAME_UPPER ? need / 2 : (need + 1) / 2;
            pe = need - pb;
        }
        /* (L + pads - extent) / s + 1, truncated (as onnxruntime) or ceiled. */
        int64_t span = L + pb + pe - ek;
        int64_t out = p->ceil_mode ? (int64_t)ceil((double)span / (double)s) + 1 : span / s + 1;
        if (out < 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE,
                           "the window (extent %lld on spatial dim %d) is larger than the padded "
                           "input (%lld)", (long long)ek, i, (long long)(L + pb + pe));
        /* The last window must start inside the input or the left padding. */
        if (p->ceil_mode && out > 0 && (out - 1) * s >= L + pb) out--;
        g->out[i] = out;
        g->pad_begin[i] = pb;
        g->pad_end[i] = pe;
    }
    return BRAID_OK;
}

braid_status bd_unpool_dims(const bd_node *n, const bd_tensor *in, int n_in, int64_t *out_dims,
                            int64_t *unpooled, bd_err *e)
{
    const bd_pool_params *p = n->params;
    const bd_tensor *x = &in[0];
    if (x->rank != p->nsp + 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input has rank %d, but kernel_shape has %d dims", x->rank, p->nsp);
    unpooled[0] = out_dims[0] = x->dims[0];
    unpooled[1] = out_dims[1] = x->dims[1];
    for (int i = 0; i < p->nsp; i++) {
        unpooled[2 + i] = (x->dims[2 + i] - 1) * p->strides[i] - (p->pads[i] + p->pads[p->nsp + i]) + p->kernel[i];
        if (unpooled[2 + i] < 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "the pads leave spatial dim %d with %lld values", i,
                           (long long)unpooled[2 + i]);
        out_dims[2 + i] = unpooled[2 + i];
    }
    if (n_in > 2 && in[2].dtype != BRAID_DTYPE_UNDEFINED) {
        int64_t v[BD_MAX_RANK];
        int count = 0;
        braid_status st = bd_const_ints(&in[2], "output_shape", v, BD_MAX_RANK, &count, e);
        if (st != BRAID_OK) return st;
        if (count != x->rank || v[0] != x->dims[0] || v[1] != x->dims[1])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "output_shape must hold %d dims starting with N = %lld and C = %lld",
                           x->rank, (long long)x->dims[0], (long long)x->dims[1]);
        for (int i = 2; i < count; i++) {
            if (v[i] < unpooled[i])
                return BD_FAIL(e, BRAID_ERR_SHAPE, "output_shape[%d] = %lld is smaller than the unpooled size %lld",
                               i, (long long)v[i], (long long)unpooled[i]);
            out_dims[i] = v[i];
        }
    }
    return BRAID_OK;
}

braid_status bd_pool_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = n->op == BD_OP_MaxPool
                          ? bd_expect_dtype(&in[0], "input 'X'", e, BRAID_DTYPE_FLOAT, BRAID_DTYPE_DOUBLE,
                                            BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, BRAID_DTYPE_INT8,
                                            BRAID_DTYPE_UINT8, 0)
                          : bd_expect_dtype(&in[0], "input 'X'", e, BRAID_DTYPE_FLOAT, BRAID_DTYPE_DOUBLE,
                                            BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, 0);
    if (st != BRAID_OK) return st;
    const bd_tensor *x = &in[0];
    if (x->rank < 3)
        return BD_FAIL(e, BRAID_ERR_SHAPE,
                       "input has rank %d; pools need (N, C, spatial dims...), rank 3 or more",
                       x->rank);
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    out[0].dims[0] = x->dims[0];
    out[0].dims[1] = x->dims[1];
    const bd_pool_params *p = n->params;
    int nhwc = p && p->layout == BD_LAYOUT_NHWC; /* (N, H, W, C) in and out */
    if (nhwc && x->rank != 4)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "an NHWC %s must be 2-D", n->op_type);
    if (n->op == BD_OP_GlobalAveragePool || n->op == BD_OP_GlobalMaxPool || n->op == BD_OP_GlobalLpPool) {
        for (int i = 2; i < x->rank; i++) out[0].dims[i] = 1;
        if (nhwc) out[0].dims[1] = 1, out[0].dims[3] = x->dims[3];
        return BRAID_OK;
    }
    if (n->op == BD_OP_MaxUnpool) {
        int64_t unpooled[BD_MAX_RANK];
        if (in[1].dtype != BRAID_DTYPE_INT64 || !bd_shape_equal(&in[1], x))
            return BD_FAIL(e, in[1].dtype != BRAID_DTYPE_INT64 ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE,
                           "input 'I' must be int64 with X's shape (it is %s)", bd_dtype_name(in[1].dtype));
        return bd_unpool_dims(n, in, n->n_in, out[0].dims, unpooled, e);
    }
    bd_pool_geom g;
    st = bd_pool_geometry(n, x, &g, e);
    if (st != BRAID_OK) return st;
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.out[i];
    if (nhwc) out[0].dims[1] = g.out[0], out[0].dims[2] = g.out[1], out[0].dims[3] = x->dims[3];
    if (n->op == BD_OP_MaxPool && n->n_out > 1) { /* Indices: int64, Y's shape */
        out[1] = out[0];
        out[1].dtype = BRAID_DTYPE_INT64;
        out[1].data = NULL;
    }
    return BRAID_OK;
}

double bd_pool_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    if (n->op == BD_OP_GlobalAveragePool || n->op == BD_OP_GlobalMaxPool || n->op == BD_OP_GlobalLpPool ||
        n->op == BD_OP_MaxUnpool)
        return (double)bd_numel(&in[0]) * (n->op == BD_OP_GlobalLpPool ? 4 : 1);
    const bd_pool_params *p = n->params;
    double window = 1;
    for (int i = 0; p && i < p->nsp; i++) window *= (double)p->kernel[i];
    return (double)bd_numel(&out[0]) * window;
}
