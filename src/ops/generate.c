/* generate.c: attribute parsing, shape inference and cost of the generate op
 * family (Constant, ConstantOfShape, Range). */
#include "generate.h"

#include <math.h>
#include <string.h>

/* Allocates params holding a copy of t (shape, dtype and nbytes of data). */
static braid_status make_params(bd_node *n, const bd_tensor *t, size_t nbytes, bd_err *e)
{
    bd_generate_params *p = bd_calloc(1, sizeof *p + nbytes);
    if (!p) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    p->value = *t;
    p->value.data = p->bytes;
    p->nbytes = nbytes;
    if (nbytes) memcpy(p->bytes, t->data, nbytes);
    return bd_params_done(n, p, BRAID_OK);
}

static braid_status parse_constant(bd_node *n, bd_err *e)
{
    static const char *const names[] = {"value", "value_float", "value_floats", "value_int",
                                        "value_ints", "value_string", "value_strings",
                                        "sparse_value"};
    const bd_attr *a = NULL;
    int which = -1;
    braid_status st;
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++) {
        const bd_attr *b = bd_node_attr(n, names[i]);
        if (!b) continue;
        if (a)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes '%s' and '%s' are both set",
                           names[which], names[i]);
        a = b, which = i;
    }
    if (!a) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "a Constant needs a value attribute");
    bd_tensor t = {.rank = 0};
    size_t nbytes;
    switch (which) {
    case 0:
        if (a->type != BD_ATTR_TENSOR || !a->t)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'value' must be a tensor");
        if (bd_dtype_size(a->t->dtype) == 0)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a Constant of dtype %s is not supported",
                           bd_dtype_name(a->t->dtype));
        t = *a->t;
        break;
    case 1: t.dtype = BRAID_DTYPE_FLOAT, t.data = (void *)&a->f; break;
    case 2: t.dtype = BRAID_DTYPE_FLOAT, t.rank = 1, t.dims[0] = a->n, t.data = a->floats; break;
    case 3: t.dtype = BRAID_DTYPE_INT64, t.data = (void *)&a->i; break;
    case 4: t.dtype = BRAID_DTYPE_INT64, t.rank = 1, t.dims[0] = a->n, t.data = a->ints; break;
    default:
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute '%s' is not supported", names[which]);
    }
    if (which >= 1 && which <= 4 && a->type != (which == 1 ? BD_ATTR_FLOAT : which == 2 ? BD_ATTR_FLOATS
                                                : which == 3 ? BD_ATTR_INT : BD_ATTR_INTS))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has the wrong type", names[which]);
    if ((st = bd_tensor_nbytes(&t, &nbytes, e))) return st;
    if (nbytes && !t.data)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has no data", names[which]);
    return make_params(n, &t, nbytes, e);
}

static braid_status parse_constant_of_shape(bd_node *n, bd_err *e)
{
    const bd_attr *a = bd_node_attr(n, "value");
    float zero = 0;
    bd_tensor t = {.dtype = BRAID_DTYPE_FLOAT, .rank = 0, .data = &zero};
    if (a) {
        if (a->type != BD_ATTR_TENSOR || !a->t)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'value' must be a tensor");
        if (bd_numel(a->t) != 1 || !a->t->data)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                           "attribute 'value' must hold one element, not %lld",
                           (long long)bd_numel(a->t));
        if (bd_dtype_size(a->t->dtype) == 0)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a value of dtype %s is not supported",
                           bd_dtype_name(a->t->dtype));
        t = *a->t;
    }
    return make_params(n, &t, bd_dtype_size(t.dtype), e);
}

braid_status bd_generate_parse(bd_node *n, bd_err *e)
{
    switch (n->op) {
    case BD_OP_Constant: return parse_constant(n, e);
    case BD_OP_ConstantOfShape: return parse_constant_of_shape(n, e);
    default: return BRAID_OK;
    }
}

/* The number of values of Range(start, limit, delta): max(ceil((limit - start)
 * / delta), 0), computed in the inputs' type as numpy and onnxruntime do. */
static braid_status range_count(const bd_tensor *in, int64_t *count, bd_err *e)
{
    const int64_t cap = (int64_t)1 << 40;
    double q;
    if (in[0].dtype == BRAID_DTYPE_FLOAT || in[0].dtype == BRAID_DTYPE_DOUBLE) {
        double s, l, d;
        if (in[0].dtype == BRAID_DTYPE_FLOAT) {
            float sf = *(const float *)in[0].data, lf = *(const float *)in[1].data;
            float df = *(const float *)in[2].data;
            s = sf, l = lf, d = df;
            q = ceil((double)((lf - sf) / df));
        } else {
            s = *(const double *)in[0].data, l = *(const double *)in[1].data;
            d = *(const double *)in[2].data;
            q = ceil((l - s) / d);
        }
        if (d == 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "delta is 0");
        if (!isfinite(s) || !isfinite(l) || !isfinite(d) || isnan(q))
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "start, limit and delta must be finite");
        if (q > (double)cap)
            return BD_FAIL(e, BRAID_ERR_LIMIT, "Range would make %.0f values", q);
        *count = q > 0 ? (int64_t)q : 0;
        return BRAID_OK;
    }
    int64_t v[3], diff;
    for (int i = 0; i < 3; i++)
        v[i] = in[i].dtype == BRAID_DTYPE_INT64   ? *(const int64_t *)in[i].data
               : in[i].dtype == BRAID_DTYPE_INT32 ? *(const int32_t *)in[i].data
                                                  : *(const int16_t *)in[i].data;
    if (v[2] == 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "delta is 0");
    if (__builtin_sub_overflow(v[1], v[0], &diff))
        return BD_FAIL(e, BRAID_ERR_LIMIT, "limit - start overflows int64");
    int64_t c = diff / v[2], rem = diff % v[2];
    if (rem != 0 && (rem > 0) == (v[2] > 0)) c++;
    if (c > cap) return BD_FAIL(e, BRAID_ERR_LIMIT, "Range would make %lld values", (long long)c);
    *count = c > 0 ? c : 0;
    return BRAID_OK;
}

static braid_status infer_range(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    static const char *const what[] = {"start", "limit", "delta"};
    if (in[0].dtype == BRAID_DTYPE_FLOAT16)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "Range of float16 is not supported");
    braid_status st = bd_expect_dtype(&in[0], "input 'start'", e, BRAID_DTYPE_FLOAT,
                                      BRAID_DTYPE_DOUBLE, BRAID_DTYPE_INT16, BRAID_DTYPE_INT32,
                                      BRAID_DTYPE_INT64, 0);
    if (st) return st;
    for (int i = 0; i < 3; i++) {
        if (in[i].dtype != in[0].dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' is %s, 'start' is %s", what[i],
                           bd_dtype_name(in[i].dtype), bd_dtype_name(in[0].dtype));
        if (in[i].rank < 0 || bd_numel(&in[i]) != 1)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be a scalar", what[i]);
        if (!in[i].data)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                           "input '%s' must be known when the plan is made (a constant or computed "
                           "from shapes)", what[i]);
    }
    out->dtype = in[0].dtype;
    out->rank = 1;
    return range_count(in, &out->dims[0], e);
}

braid_status bd_generate_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_generate_params *p = n->params;
    switch (n->op) {
    case BD_OP_Constant:
        out->dtype = p->value.dtype;
        out->rank = p->value.rank;
        memcpy(out->dims, p->value.dims, sizeof out->dims);
        return BRAID_OK;
    case BD_OP_ConstantOfShape: {
        int64_t dims[BD_MAX_RANK];
        int cnt;
        braid_status st = bd_const_ints(&in[0], "input", dims, BD_MAX_RANK, &cnt, e);
        if (st) return st;
        out->dtype = p->value.dtype;
        out->rank = cnt;
        for (int i = 0; i < cnt; i++) {
            if (dims[i] < 0)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "the shape has a negative dim %lld",
                               (long long)dims[i]);
            out->dims[i] = dims[i];
        }
        return BRAID_OK;
    }
    case BD_OP_Range: return infer_range(n, in, out, e);
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the generate family", n->op_type);
    }
}

double bd_generate_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out) { return 0; }
