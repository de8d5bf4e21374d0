/* index.c: attribute parsing, shape inference and cost of the index op family
 * (GatherElements, GatherND, OneHot, Trilu, EyeLike, ReverseSequence): data
 * movement addressed by index tensors or by position. */
#include "index.h"

#include <math.h>
#include <string.h>

#include "util/dtype.h"

braid_status bd_index_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_index_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_GatherElements: BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e)); break;
    case BD_OP_OneHot: BD_TRY(bd_attr_int(n, "axis", -1, &p->axis, e)); break;
    case BD_OP_GatherND:
        BD_TRY(bd_attr_int(n, "batch_dims", 0, &p->batch_dims, e));
        if (p->batch_dims < 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'batch_dims' must not be negative (%lld)",
                         (long long)p->batch_dims);
            goto fail;
        }
        break;
    case BD_OP_Trilu: BD_TRY(bd_attr_int(n, "upper", 1, &p->upper, e)); break;
    case BD_OP_EyeLike:
        BD_TRY(bd_attr_int(n, "k", 0, &p->k, e));
        BD_TRY(bd_attr_int(n, "dtype", 0, &p->dtype, e));
        break;
    case BD_OP_ReverseSequence:
        BD_TRY(bd_attr_int(n, "batch_axis", 1, &p->batch_axis, e));
        BD_TRY(bd_attr_int(n, "time_axis", 0, &p->time_axis, e));
        if ((p->batch_axis != 0 && p->batch_axis != 1) || (p->time_axis != 0 && p->time_axis != 1) ||
            p->batch_axis == p->time_axis) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attributes 'batch_axis' (%lld) and 'time_axis' (%lld) must be 0 and 1 in some order",
                         (long long)p->batch_axis, (long long)p->time_axis);
            goto fail;
        }
        break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

void bd_nd_geom_of(const bd_tensor *data, const bd_tensor *indices, int batch_dims, bd_nd_geom *g)
{
    int b = batch_dims, q = indices->rank, r = data->rank;
    int64_t st[BD_MAX_RANK], s = 1;
    for (int d = r - 1; d >= 0; d--) st[d] = s, s *= data->dims[d];
    g->k = q > 0 ? (int)indices->dims[q - 1] : 0;
    g->n_tuples = 1;
    for (int d = 0; d < q - 1; d++) g->n_tuples *= indices->dims[d];
    g->per_batch = 1;
    for (int d = b; d < q - 1; d++) g->per_batch *= indices->dims[d];
    g->batch_stride = b > 0 ? st[b - 1] : 0;
    g->slice = 1;
    for (int d = b + g->k; d < r; d++) g->slice *= data->dims[d];
    for (int j = 0; j < g->k; j++) g->dims[j] = data->dims[b + j], g->st[j] = st[b + j];
    if (g->per_batch == 0) g->per_batch = 1; /* no tuples at all: n_tuples is 0 */
}

void bd_gather_elems_of(const bd_tensor *data, const bd_tensor *indices, int axis, bd_gather_elems *g)
{
    int64_t s = 1;
    g->rank = data->rank;
    g->axis = axis;
    for (int d = data->rank - 1; d >= 0; d--) {
        g->dst[d] = s, s *= data->dims[d];
        g->idims[d] = indices->dims[d];
    }
    g->dim = data->dims[axis];
}

size_t bd_one_bytes(int dtype, unsigned char *bytes)
{
    size_t es = bd_dtype_size(dtype);
    memset(bytes, 0, 8);
    switch (dtype) {
    case BRAID_DTYPE_FLOAT: { float v = 1; memcpy(bytes, &v, 4); break; }
    case BRAID_DTYPE_DOUBLE: { double v = 1; memcpy(bytes, &v, 8); break; }
    case BRAID_DTYPE_FLOAT16: { uint16_t v = 0x3c00; memcpy(bytes, &v, 2); break; }
    case BRAID_DTYPE_BFLOAT16: { uint16_t v = 0x3f80; memcpy(bytes, &v, 2); break; }
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_UINT8: case BRAID_DTYPE_BOOL: case BRAID_DTYPE_INT16:
    case BRAID_DTYPE_UINT16: case BRAID_DTYPE_INT32: case BRAID_DTYPE_UINT32: case BRAID_DTYPE_INT64:
    case BRAID_DTYPE_UINT64:
        bytes[0] = 1; /* little-endian */
        break;
    default: return 0;
    }
    return es;
}

static braid_status expect_index(const bd_tensor *t, const char *what, bd_err *e)
{
    if (t->dtype != BRAID_DTYPE_INT64 && t->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' must be int32 or int64, not %s", what, bd_dtype_name(t->dtype));
    return BRAID_OK;
}

static braid_status infer_gather_elements(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_index_params *p = n->params;
    int a, r = in[0].rank;
    char sa[160], sb[160];
    braid_status st = expect_index(&in[1], "indices", e);
    if (st) return st;
    if (r < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'data' must have rank 1 or more");
    if ((st = bd_axis(p->axis, r, &a, e))) return st;
    if (in[1].rank != r)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "indices of rank %d for data of rank %d: the ranks must be equal",
                       in[1].rank, r);
    for (int d = 0; d < r; d++)
        if (d != a && in[1].dims[d] > in[0].dims[d])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "indices %s do not fit in data %s along axis %d",
                           bd_shape_str(&in[1], sa, sizeof sa), bd_shape_str(&in[0], sb, sizeof sb), d);
    if (in[0].dims[a] == 0 && bd_numel(&in[1]) > 0)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot gather from axis %d of size 0", a);
    out->rank = r;
    memcpy(out->dims, in[1].dims, sizeof out->dims);
    return BRAID_OK;
}

static braid_status infer_gather_nd(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_index_params *p = n->params;
    int r = in[0].rank, q = in[1].rank, b = (int)BD_MIN(p->batch_dims, 64);
    char sa[160], sb[160];
    braid_status st = expect_index(&in[1], "indices", e);
    if (st) return st;
    if (r < 1 || q < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "data and indices must have rank 1 or more");
    if (b >= r || b >= q)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "batch_dims %d must be below the ranks of data (%d) and indices (%d)",
                       b, r, q);
    for (int d = 0; d < b; d++)
        if (in[0].dims[d] != in[1].dims[d])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "batch dim %d differs: data %s, indices %s", d,
                           bd_shape_str(&in[0], sa, sizeof sa), bd_shape_str(&in[1], sb, sizeof sb));
    int64_t k = in[1].dims[q - 1];
    if (k < 1 || k > r - b)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the last dim of indices (%lld) must be between 1 and %d (data rank %d - "
                       "batch_dims %d)", (long long)k, r - b, r, b);
    int orank = q - 1 + r - b - (int)k;
    if (orank > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "the output would have rank %d, braid accepts at most %d", orank, BD_MAX_RANK);
    out->rank = 0;
    for (int d = 0; d < q - 1; d++) out->dims[out->rank++] = in[1].dims[d];
    for (int d = b + (int)k; d < r; d++) out->dims[out->rank++] = in[0].dims[d];
    return BRAID_OK;
}

/* Element 0 of a numeric scalar input, as double (OneHot's depth). */
static double scalar_value(const bd_tensor *t)
{
    const void *d = t->data;
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: return *(const float *)d;
    case BRAID_DTYPE_DOUBLE: return *(const double *)d;
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float(*(const uint16_t *)d);
    case BRAID_DTYPE_BFLOAT16: return bd_bf16_to_float(*(const uint16_t *)d);
    case BRAID_DTYPE_INT8: return *(const int8_t *)d;
    case BRAID_DTYPE_UINT8: return *(const uint8_t *)d;
    case BRAID_DTYPE_INT16: return *(const int16_t *)d;
    case BRAID_DTYPE_UINT16: return *(const uint16_t *)d;
    case BRAID_DTYPE_INT32: return *(const int32_t *)d;
    case BRAID_DTYPE_UINT32: return *(const uint32_t *)d;
    case BRAID_DTYPE_INT64: return (double)*(const int64_t *)d;
    case BRAID_DTYPE_UINT64: return (double)*(const uint64_t *)d;
    default: return NAN;
    }
}

static int numeric(int dt)
{
    return dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 || dt == BRAID_DTYPE_BFLOAT16 ||
           dt == BRAID_DTYPE_INT8 || dt == BRAID_DTYPE_UINT8 || dt == BRAID_DTYPE_INT16 || dt == BRAID_DTYPE_UINT16 ||
           dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_UINT32 || dt == BRAID_DTYPE_INT64 || dt == BRAID_DTYPE_UINT64;
}

static braid_status infer_one_hot(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_index_params *p = n->params;
    int r = in[0].rank, a;
    if (!numeric(in[0].dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'indices' must be numeric, not %s", bd_dtype_name(in[0].dtype));
    if (!numeric(in[1].dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'depth' must be numeric, not %s", bd_dtype_name(in[1].dtype));
    if (in[1].rank > 1 || bd_numel(&in[1]) != 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'depth' must hold one value");
    if (!in[1].data)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "input 'depth' must be known when the plan is made (a constant or computed from shapes)");
    if (in[2].rank != 1 || in[2].dims[0] != 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'values' must be 1-D with two values [off, on]");
    if (bd_dtype_size(in[2].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "values of dtype %s are not supported", bd_dtype_name(in[2].dtype));
    double dv = scalar_value(&in[1]);
    if (!(dv >= 0) || dv > (double)((int64_t)1 << 40))
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "depth %g must be a non-negative count", dv);
    if (r + 1 > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "the output would have rank %d, braid accepts at most %d", r + 1, BD_MAX_RANK);
    braid_status st = bd_axis(p->axis, r + 1, &a, e);
    if (st) return st;
    out->dtype = in[2].dtype;
    out->rank = r + 1;
    for (int d = 0, j = 0; d <= r; d++) out->dims[d] = d == a ? (int64_t)dv : in[0].dims[j++];
    return BRAID_OK;
}

static int eye_dtype(int dt)
{
    unsigned char b[8];
    return bd_one_bytes(dt, b) != 0;
}

braid_status bd_index_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_index_params *p = n->params;
    if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
    if (n->op != BD_OP_OneHot && n->op != BD_OP_EyeLike && bd_dtype_size(in[0].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "dtype %s is not supported", bd_dtype_name(in[0].dtype));
    out->dtype = in[0].dtype;
    switch (n->op) {
    case BD_OP_GatherElements: return infer_gather_elements(n, in, out, e);
    case BD_OP_GatherND: return infer_gather_nd(n, in, out, e);
    case BD_OP_OneHot: return infer_one_hot(n, in, out, e);
    case BD_OP_Trilu:
        if (in[0].rank < 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input must have rank 2 or more, not %d", in[0].rank);
        if (n->n_in > 1 && in[1].dtype) {
            if (in[1].dtype != BRAID_DTYPE_INT64)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'k' must be int64, not %s", bd_dtype_name(in[1].dtype));
            if (in[1].rank > 1 || bd_numel(&in[1]) != 1)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'k' must be a scalar");
        }
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    case BD_OP_EyeLike: {
        int dt = p->dtype ? (int)p->dtype : in[0].dtype;
        if (in[0].rank != 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input must have rank 2, not %d", in[0].rank);
        if (!eye_dtype(dt))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "EyeLike of dtype %s is not supported", bd_dtype_name(dt));
        out->dtype = dt;
        out->rank = 2;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    }
    case BD_OP_ReverseSequence: {
        if (in[0].rank < 2) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input must have rank 2 or more, not %d", in[0].rank);
        if (in[1].dtype != BRAID_DTYPE_INT64)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'sequence_lens' must be int64, not %s", bd_dtype_name(in[1].dtype));
        int64_t batch = in[0].dims[p->batch_axis];
        if (in[1].rank != 1 || in[1].dims[0] != batch)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'sequence_lens' must have shape [%lld] (the batch size)",
                           (long long)batch);
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    }
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the index family", n->op_type);
    }
}

double bd_index_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0; /* data movement: the planner counts the bytes */
}
