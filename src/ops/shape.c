/* shape.c: attribute parsing, shape inference and cost of the shape op family
 * (Reshape, Flatten, Squeeze, Unsqueeze, Shape, Identity, Dropout, Size,
 * BitCast). */
#include "shape.h"

#include <stdio.h>
#include <string.h>

static int has_input(const bd_node *n, const bd_tensor *in, int i)
{
    return i < n->n_in && in[i].dtype != BRAID_DTYPE_UNDEFINED;
}

braid_status bd_shape_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_shape_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->n_axes = -1;
    switch (n->op) {
    case BD_OP_Reshape:
        BD_TRY(bd_attr_int(n, "allowzero", 0, &p->allowzero, e));
        if (p->allowzero != 0 && p->allowzero != 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'allowzero' must be 0 or 1, not %lld",
                         (long long)p->allowzero);
            goto fail;
        }
        break;
    case BD_OP_Flatten: BD_TRY(bd_attr_int(n, "axis", 1, &p->axis, e)); break;
    case BD_OP_Shape:
        BD_TRY(bd_attr_int(n, "start", 0, &p->start, e));
        BD_TRY(bd_attr_int(n, "end", INT64_MAX, &p->end, e));
        break;
    case BD_OP_BitCast:
        if (!bd_node_attr(n, "to")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'to' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "to", 0, &p->to, e));
        if (p->to == BRAID_DTYPE_STRING || p->to == BRAID_DTYPE_COMPLEX64 || p->to == BRAID_DTYPE_COMPLEX128) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "BitCast to %s is not supported", bd_dtype_name((int)p->to));
            goto fail;
        }
        if (bd_dtype_bits((int)p->to) == 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'to' = %lld is not a dtype", (long long)p->to);
            goto fail;
        }
        break;
    case BD_OP_Squeeze:
    case BD_OP_Unsqueeze:
        if (n->opset < 13 && bd_node_attr(n, "axes")) {
            BD_TRY(bd_attr_ints(n, "axes", p->axes, BD_MAX_RANK, &p->n_axes, e));
        } else if (n->opset < 13 && n->op == BD_OP_Unsqueeze) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axes' is required before opset 13");
            goto fail;
        }
        break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_dropout_check(const bd_node *n, const bd_tensor *in, int n_in, bd_err *e)
{
    if (n_in <= 2 || in[2].dtype == BRAID_DTYPE_UNDEFINED || !in[2].data) return BRAID_OK;
    if (in[2].dtype != BRAID_DTYPE_BOOL)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'training_mode' must be bool, not %s",
                       bd_dtype_name(in[2].dtype));
    if (bd_numel(&in[2]) < 1 || !((const uint8_t *)in[2].data)[0]) return BRAID_OK;
    int zero_ratio = 0;
    if (in[1].dtype != BRAID_DTYPE_UNDEFINED && in[1].data && bd_numel(&in[1]) >= 1) {
        if (in[1].dtype == BRAID_DTYPE_FLOAT) zero_ratio = ((const float *)in[1].data)[0] == 0;
        else if (in[1].dtype == BRAID_DTYPE_DOUBLE) zero_ratio = ((const double *)in[1].data)[0] == 0;
        else if (in[1].dtype == BRAID_DTYPE_FLOAT16)
            zero_ratio = (((const uint16_t *)in[1].data)[0] & 0x7fff) == 0;
    }
    if (zero_ratio) return BRAID_OK; /* training with ratio 0 drops nothing */
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                   "training_mode is true: braid runs Dropout for inference only");
}

/* The axes of Squeeze/Unsqueeze: from the attribute before opset 13, from
 * input 1 after. *count = -1 when there are none. */
static braid_status get_axes(const bd_node *n, const bd_tensor *in, int64_t *axes, int *count,
                             bd_err *e)
{
    const bd_shape_params *p = n->params;
    if (n->opset < 13) {
        *count = p->n_axes;
        if (p->n_axes > 0) memcpy(axes, p->axes, (size_t)p->n_axes * sizeof *axes);
        return BRAID_OK;
    }
    *count = -1;
    if (!has_input(n, in, 1)) return BRAID_OK;
    return bd_const_ints(&in[1], "axes", axes, BD_MAX_RANK, count, e);
}

static braid_status infer_reshape(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_shape_params *p = n->params;
    int64_t shp[BD_MAX_RANK];
    int cnt = 0, neg = -1;
    braid_status st = bd_const_ints(&in[1], "shape", shp, BD_MAX_RANK, &cnt, e);
    if (st) return st;
    int64_t total = bd_numel(&in[0]), known = 1;
    char want[200], sa[160];
    size_t off = 0;
    want[0] = 0;
    for (int i = 0; i < cnt; i++)
        off += (size_t)snprintf(want + off, sizeof want - off, "%s%lld", i ? ", " : "",
                                (long long)shp[i]);
    out->rank = cnt;
    for (int i = 0; i < cnt; i++) {
        int64_t d = shp[i];
        if (d == 0 && !p->allowzero) {
            if (i >= in[0].rank)
                return BD_FAIL(e, BRAID_ERR_SHAPE,
                               "shape [%s] copies dim %d (a 0) but the input %s has rank %d", want,
                               i, bd_shape_str(&in[0], sa, sizeof sa), in[0].rank);
            d = in[0].dims[i];
        } else if (d == -1) {
            if (neg >= 0)
                return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "shape [%s] has more than one -1", want);
            neg = i;
            continue;
        } else if (d < 0) {
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "shape [%s] has a negative dim %lld", want,
                           (long long)d);
        }
        out->dims[i] = d;
        if (__builtin_mul_overflow(known, d, &known))
            return BD_FAIL(e, BRAID_ERR_LIMIT, "shape [%s] has more elements than an int64 can count",
                           want);
    }
    if (neg >= 0) {
        if (p->allowzero && known == 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "shape [%s] has both a 0 and a -1 while allowzero is 1", want);
        if (known == 0 || total % known != 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE,
                           "cannot reshape a tensor of shape %s (%lld elements) into shape [%s]",
                           bd_shape_str(&in[0], sa, sizeof sa), (long long)total, want);
        out->dims[neg] = total / known;
        known = total;
    }
    if (known != total)
        return BD_FAIL(e, BRAID_ERR_SHAPE,
                       "cannot reshape a tensor of shape %s (%lld elements) into shape [%s] "
                       "(%lld elements)",
                       bd_shape_str(&in[0], sa, sizeof sa), (long long)total, want, (long long)known);
    return BRAID_OK;
}

static braid_status infer_squeeze(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    int64_t axes[BD_MAX_RANK];
    int cnt, drop[BD_MAX_RANK] = {0};
    char sa[160];
    braid_status st = get_axes(n, in, axes, &cnt, e);
    if (st) return st;
    for (int i = 0; i < cnt; i++) {
        int a;
        if ((st = bd_axis(axes[i], in[0].rank, &a, e))) return st;
        if (in[0].dims[a] != 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot squeeze axis %lld of shape %s: its size is not 1",
                           (long long)axes[i], bd_shape_str(&in[0], sa, sizeof sa));
        drop[a] = 1;
    }
    if (cnt <= 0) /* no axes (or an empty list, as onnxruntime reads it): every 1 goes */
        for (int i = 0; i < in[0].rank; i++) drop[i] = in[0].dims[i] == 1;
    out->rank = 0;
    for (int i = 0; i < in[0].rank; i++)
        if (!drop[i]) out->dims[out->rank++] = in[0].dims[i];
    return BRAID_OK;
}

static braid_status infer_unsqueeze(const bd_node *n, const bd_tensor *in, bd_tensor *out,
                                    bd_err *e)
{
    int64_t axes[BD_MAX_RANK];
    int cnt, ones[BD_MAX_RANK] = {0};
    braid_status st = get_axes(n, in, axes, &cnt, e);
    if (st) return st;
    if (cnt < 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'axes' is required");
    int r = in[0].rank + cnt;
    if (r > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "the output would have rank %d, braid accepts at most %d",
                       r, BD_MAX_RANK);
    for (int i = 0; i < cnt; i++) {
        int a;
        if ((st = bd_axis(axes[i], r, &a, e))) return st;
        if (ones[a])
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld appears twice in 'axes'",
                           (long long)axes[i]);
        ones[a] = 1;
    }
    out->rank = r;
    for (int i = 0, j = 0; i < r; i++) out->dims[i] = ones[i] ? 1 : in[0].dims[j++];
    return BRAID_OK;
}

braid_status bd_shape_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_shape_params *p = n->params;
    braid_status st;
    if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
    if (n->op != BD_OP_Shape && n->op != BD_OP_Size && bd_dtype_size(in[0].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "dtype %s is not supported",
                       bd_dtype_name(in[0].dtype));
    out[0].dtype = in[0].dtype;
    switch (n->op) {
    case BD_OP_Reshape: return infer_reshape(n, in, out, e);
    case BD_OP_Squeeze: return infer_squeeze(n, in, out, e);
    case BD_OP_Unsqueeze: return infer_unsqueeze(n, in, out, e);
    case BD_OP_Flatten: {
        int r = in[0].rank;
        int64_t a = p->axis < 0 ? p->axis + r : p->axis;
        if (a < 0 || a > r)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                           (long long)p->axis, r);
        out->rank = 2;
        out->dims[0] = out->dims[1] = 1;
        for (int i = 0; i < r; i++) out->dims[i < a ? 0 : 1] *= in[0].dims[i];
        return BRAID_OK;
    }
    case BD_OP_Shape: {
        int64_t start, len;
        bd_shape_slice(p, in[0].rank, &start, &len);
        out->dtype = BRAID_DTYPE_INT64;
        out->rank = 1;
        out->dims[0] = len;
        return BRAID_OK;
    }
    case BD_OP_Size:
        out->dtype = BRAID_DTYPE_INT64;
        out->rank = 0;
        return BRAID_OK;
    case BD_OP_BitCast: {
        int from = bd_dtype_bits(in[0].dtype), to = bd_dtype_bits((int)p->to);
        if (from != to)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "BitCast from %s (%d bits) to %s (%d bits): the widths must be equal",
                           bd_dtype_name(in[0].dtype), from, bd_dtype_name((int)p->to), to);
        out->dtype = (int)p->to;
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    }
    case BD_OP_Identity:
        out->rank = in[0].rank;
        memcpy(out->dims, in[0].dims, sizeof out->dims);
        return BRAID_OK;
    case BD_OP_Dropout:
        if ((st = bd_dropout_check(n, in, n->n_in, e))) return st;
        for (int i = 0; i < n->n_out && i < 2; i++) {
            out[i].rank = in[0].rank;
            memcpy(out[i].dims, in[0].dims, sizeof out[i].dims);
        }
        /* The mask is bool from opset 10, the input's type before. */
        if (n->n_out > 1) out[1].dtype = n->opset >= 10 ? BRAID_DTYPE_BOOL : in[0].dtype;
        return BRAID_OK;
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the shape family", n->op_type);
    }
}

double bd_shape_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out) { return 0; }
