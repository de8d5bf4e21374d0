/* scatter.c: attribute parsing, shape inference and cost of the scatter op
 * family (Scatter, ScatterElements, ScatterND, TensorScatter): a copy of the
 * data with updates written (or combined) at indexed places. */
#include "scatter.h"

#include <string.h>

static braid_status parse_reduction(const bd_node *n, bd_scatter_params *p, bd_err *e)
{
    const char *r;
    braid_status st = bd_attr_string(n, "reduction", "none", &r, e);
    if (st) return st;
    if (!strcmp(r, "none")) p->red = BD_SCATTER_NONE;
    else if (!strcmp(r, "add")) p->red = BD_SCATTER_ADD;
    else if (!strcmp(r, "mul")) p->red = BD_SCATTER_MUL;
    else if (!strcmp(r, "max")) p->red = BD_SCATTER_MAX;
    else if (!strcmp(r, "min")) p->red = BD_SCATTER_MIN;
    else return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'reduction' = '%s' is not none, add, mul, max or min", r);
    return BRAID_OK;
}

braid_status bd_scatter_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_scatter_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_Scatter: BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e)); break;
    case BD_OP_ScatterElements:
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e));
        if (n->opset >= 16) BD_TRY(parse_reduction(n, p, e));
        break;
    case BD_OP_ScatterND:
        if (n->opset >= 16) BD_TRY(parse_reduction(n, p, e));
        break;
    case BD_OP_TensorScatter: {
        const char *mode;
        BD_TRY(bd_attr_int(n, "axis", -2, &p->axis, e));
        BD_TRY(bd_attr_string(n, "mode", "linear", &mode, e));
        if (strcmp(mode, "linear") != 0 && strcmp(mode, "circular") != 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'mode' = '%s' is not linear or circular", mode);
            goto fail;
        }
        p->circular = !strcmp(mode, "circular");
        break;
    }
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

void bd_scatter_lines_of(const bd_tensor *data, const bd_tensor *indices, int axis, bd_scatter_lines *g)
{
    int64_t s = 1, t = 1;
    g->rank = data->rank;
    g->axis = axis;
    for (int d = data->rank - 1; d >= 0; d--) {
        g->dst[d] = s, s *= data->dims[d];
        g->ist[d] = t, t *= indices->dims[d];
        g->idims[d] = indices->dims[d];
    }
    g->len = indices->dims[axis];
    g->n_lines = g->len ? t / g->len : 0;
    g->dim = data->dims[axis];
}

void bd_tscatter_geom_of(const bd_node *n, const bd_tensor *cache, const bd_tensor *update, bd_tscatter_geom *g)
{
    const bd_scatter_params *p = n->params;
    int r = cache->rank, a = (int)(p->axis < 0 ? p->axis + r : p->axis);
    g->prefix = 1, g->inner = 1;
    for (int d = 0; d < a; d++) g->prefix *= cache->dims[d];
    for (int d = a + 1; d < r; d++) g->inner *= cache->dims[d];
    g->per_batch = cache->dims[0] ? g->prefix / cache->dims[0] : 1;
    g->max_seq = cache->dims[a];
    g->seq = update->dims[a];
}

static braid_status check_data(const bd_node *n, const bd_tensor *data, const bd_tensor *upd, bd_err *e)
{
    const bd_scatter_params *p = n->params;
    if (upd->dtype != data->dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "updates are %s, the data is %s", bd_dtype_name(upd->dtype),
                       bd_dtype_name(data->dtype));
    if (p->red != BD_SCATTER_NONE && !bd_scatter_reducible(data->dtype))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a reduction over %s is not supported", bd_dtype_name(data->dtype));
    return BRAID_OK;
}

static braid_status infer_elements(const bd_node *n, const bd_tensor *in, bd_err *e)
{
    const bd_scatter_params *p = n->params;
    int a, r = in[0].rank;
    char sa[160], sb[160];
    braid_status st;
    if (in[1].dtype != BRAID_DTYPE_INT64 && in[1].dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'indices' must be int32 or int64, not %s", bd_dtype_name(in[1].dtype));
    if (r < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'data' must have rank 1 or more");
    if ((st = bd_axis(p->axis, r, &a, e))) return st;
    if (!bd_shape_equal(&in[1], &in[2]))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "indices %s and updates %s must have one shape",
                       bd_shape_str(&in[1], sa, sizeof sa), bd_shape_str(&in[2], sb, sizeof sb));
    if (in[1].rank != r)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "indices of rank %d for data of rank %d: the ranks must be equal", in[1].rank, r);
    for (int d = 0; d < r; d++)
        if (d != a && in[1].dims[d] > in[0].dims[d])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "indices %s do not fit in data %s along axis %d",
                           bd_shape_str(&in[1], sa, sizeof sa), bd_shape_str(&in[0], sb, sizeof sb), d);
    return BRAID_OK;
}

static braid_status infer_nd(const bd_tensor *in, bd_err *e)
{
    int r = in[0].rank, q = in[1].rank;
    char sa[160], sb[160], sc[160];
    if (in[1].dtype != BRAID_DTYPE_INT64 && in[1].dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'indices' must be int64, not %s", bd_dtype_name(in[1].dtype));
    if (r < 1 || q < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "data and indices must have rank 1 or more");
    int64_t k = in[1].dims[q - 1];
    if (k < 1 || k > r)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the last dim of indices (%lld) must be between 1 and the data's rank %d",
                       (long long)k, r);
    /* updates: indices.shape[:-1] + data.shape[k:] */
    int ok = in[2].rank == q - 1 + r - (int)k;
    for (int d = 0; ok && d < q - 1; d++) ok = in[2].dims[d] == in[1].dims[d];
    for (int d = (int)k; ok && d < r; d++) ok = in[2].dims[q - 1 + d - k] == in[0].dims[d];
    if (!ok)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "updates %s do not fit indices %s and data %s (expected indices' dims "
                       "but the last, then data's dims from %lld)", bd_shape_str(&in[2], sa, sizeof sa),
                       bd_shape_str(&in[1], sb, sizeof sb), bd_shape_str(&in[0], sc, sizeof sc), (long long)k);
    return BRAID_OK;
}

static braid_status infer_tensor_scatter(const bd_node *n, const bd_tensor *in, bd_err *e)
{
    const bd_scatter_params *p = n->params;
    int r = in[0].rank, a;
    char sa[160], sb[160];
    braid_status st;
    if (r < 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "past_cache must have rank 2 or more (batch, ..., sequence, ...)");
    if ((st = bd_axis(p->axis, r, &a, e))) return st;
    if (a == 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is the batch axis", (long long)p->axis);
    int ok = in[1].rank == r;
    for (int d = 0; ok && d < r; d++) ok = d == a ? in[1].dims[d] <= in[0].dims[d] : in[1].dims[d] == in[0].dims[d];
    if (!ok)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "update %s does not fit past_cache %s (equal dims, at most as long along axis %d)",
                       bd_shape_str(&in[1], sa, sizeof sa), bd_shape_str(&in[0], sb, sizeof sb), a);
    if (n->n_in > 2 && in[2].dtype) {
        if (in[2].dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'write_indices' must be int64, not %s", bd_dtype_name(in[2].dtype));
        if (in[2].rank != 1 || in[2].dims[0] != in[0].dims[0])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'write_indices' must have shape [%lld] (the batch size)",
                           (long long)in[0].dims[0]);
    }
    return BRAID_OK;
}

braid_status bd_scatter_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st;
    if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
    if (bd_dtype_size(in[0].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "dtype %s is not supported", bd_dtype_name(in[0].dtype));
    const bd_tensor *upd = n->op == BD_OP_TensorScatter ? &in[1] : &in[2];
    if ((st = check_data(n, &in[0], upd, e))) return st;
    switch (n->op) {
    case BD_OP_Scatter:
    case BD_OP_ScatterElements: st = infer_elements(n, in, e); break;
    case BD_OP_ScatterND: st = infer_nd(in, e); break;
    case BD_OP_TensorScatter: st = infer_tensor_scatter(n, in, e); break;
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the scatter family", n->op_type);
    }
    if (st) return st;
    out->dtype = in[0].dtype;
    out->rank = in[0].rank;
    memcpy(out->dims, in[0].dims, sizeof out->dims);
    return BRAID_OK;
}

double bd_scatter_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0; /* data movement: the planner counts the bytes */
}
