/* generate.c: attribute parsing, shape inference and cost of the generate op
 * family (Constant, ConstantOfShape, Range). */
#include "generate.h"
#include "util/dtype.h"

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

static braid_status parse_range(bd_node *n, bd_err *e)
{
    int64_t stash = BRAID_DTYPE_DOUBLE; /* before opset 27 the reference computes in double */
    braid_status st;
    if (n->opset >= 27) {
        if ((st = bd_attr_int(n, "stash_type", BRAID_DTYPE_FLOAT, &stash, e))) return st;
        if (stash != BRAID_DTYPE_FLOAT && stash != BRAID_DTYPE_DOUBLE)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'stash_type' must be 1 (float) or 11 (double), not %lld",
                           (long long)stash);
    }
    bd_generate_params *p = bd_calloc(1, sizeof *p);
    if (!p) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    p->stash_type = stash;
    return bd_params_done(n, p, BRAID_OK);
}

braid_status bd_generate_parse(bd_node *n, bd_err *e)
{
    switch (n->op) {
    case BD_OP_Constant: return parse_constant(n, e);
    case BD_OP_ConstantOfShape: return parse_constant_of_shape(n, e);
    case BD_OP_Range: return parse_range(n, e);
    default: return BRAID_OK;
    }
}

/* Element 0 of a scalar float input of any floating dtype, as double. */
static double scalar_f64(const bd_tensor *t)
{
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: return *(const float *)t->data;
    case BRAID_DTYPE_DOUBLE: return *(const double *)t->data;
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float(*(const uint16_t *)t->data);
    default: return bd_bf16_to_float(*(const uint16_t *)t->data); /* BFLOAT16 */
    }
}

/* The number of values of Range(start, limit, delta): max(ceil((limit - start)
 * / delta), 0), computed in double from the inputs' values for the float
 * types (as numpy's arange counts in onnx's reference), exactly for the
 * integers. */
static braid_status range_count(const bd_tensor *in, int64_t *count, bd_err *e)
{
    const int64_t cap = (int64_t)1 << 40;
    int dt = in[0].dtype;
    if (dt == BRAID_DTYPE_FLOAT || dt == BRAID_DTYPE_DOUBLE || dt == BRAID_DTYPE_FLOAT16 ||
        dt == BRAID_DTYPE_BFLOAT16) {
        double s = scalar_f64(&in[0]), l = scalar_f64(&in[1]), d = scalar_f64(&in[2]);
        if (d == 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "delta is 0");
        double q = ceil((l - s) / d);
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
    braid_status st = bd_expect_dtype(&in[0], "input 'start'", e, BRAID_DTYPE_FLOAT, BRAID_DTYPE_DOUBLE,
                                      BRAID_DTYPE_INT16, BRAID_DTYPE_INT32, BRAID_DTYPE_INT64,
                                      BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, 0);
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
