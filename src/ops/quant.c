/* quant.c: attribute parsing, dtype and shape checks and cost of the quant op
 * family: QuantizeLinear and DequantizeLinear (ai.onnx 10 to 28 and
 * com.microsoft: per tensor, per axis and blocked; integer, sub-byte and
 * narrow-float dtypes; saturate, output_dtype, precision) and
 * DynamicQuantizeLinear; and the checks the quantization families share. */
#include "quant.h"

#include <string.h>

#define DT(x) (1u << BRAID_DTYPE_##x)
#define QUANT_DTYPES                                                                               \
    (DT(UINT8) | DT(INT8) | DT(UINT16) | DT(INT16) | DT(UINT4) | DT(INT4) | DT(UINT2) | DT(INT2) |  \
     DT(FLOAT8E4M3FN) | DT(FLOAT8E4M3FNUZ) | DT(FLOAT8E5M2) | DT(FLOAT8E5M2FNUZ) | DT(FLOAT4E2M1) | \
     DT(FLOAT6E2M3) | DT(FLOAT6E3M2))
#define HALF_FLOATS (DT(FLOAT) | DT(FLOAT16) | DT(BFLOAT16))

static int in_set(int dt, unsigned set) { return dt > 0 && dt < 32 && (set >> dt & 1u); }

int bd_q_is_quant_dtype(int dtype) { return in_set(dtype, QUANT_DTYPES); }

braid_status bd_q_check_scale(const bd_tensor *scale, const char *name, bd_err *e)
{
    if (!scale->data || scale->dtype == BRAID_DTYPE_UNDEFINED) return BRAID_OK;
    int64_t n = bd_numel(scale);
    for (int64_t i = 0; i < n; i++) {
        float s = bd_q_scale_at(scale->dtype, scale->data, i);
        if (s == 0.0f || !isfinite(s))
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "scale '%s' is %g at index %lld; a quantization "
                           "scale must be finite and nonzero", name, (double)s, (long long)i);
    }
    return BRAID_OK;
}

braid_status bd_q_expect_scale(const bd_tensor *t, const char *name, int half, bd_err *e)
{
    if (t->dtype == BRAID_DTYPE_FLOAT || (half && in_set(t->dtype, HALF_FLOATS))) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_DTYPE, "scale '%s' has dtype %s; it must be float%s", name,
                   bd_dtype_name(t->dtype), half ? ", float16 or bfloat16" : "");
}

braid_status bd_q_expect_scalar(const bd_tensor *t, const char *name, bd_err *e)
{
    char s[160];
    if (t->dtype == BRAID_DTYPE_UNDEFINED || bd_q_is_scalar(t)) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has shape %s; it must hold one value (per-tensor "
                   "quantization)", name, bd_shape_str(t, s, sizeof s));
}

braid_status bd_qview_make(const bd_tensor *x, const bd_tensor *scale, const bd_tensor *zp, int64_t axis,
                           int64_t block_size, const char *sname, const char *zname, bd_qview *v, bd_err *e)
{
    char sx[160], ss[160], sz[160];
    memset(v, 0, sizeof *v);
    v->outer = v->d = v->inner = v->s = v->block = 1;
    if (zp && zp->dtype != BRAID_DTYPE_UNDEFINED && !(bd_q_is_scalar(zp) && bd_q_is_scalar(scale)) &&
        !bd_shape_equal(zp, scale))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "zero point '%s' has shape %s but scale '%s' has shape %s; they "
                       "must match", zname, bd_shape_str(zp, sz, sizeof sz), sname,
                       bd_shape_str(scale, ss, sizeof ss));
    if (block_size < 0)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'block_size' is %lld; it must be positive",
                       (long long)block_size);
    if (bd_q_is_scalar(scale)) return BRAID_OK; /* per tensor */
    int ax;
    braid_status st = bd_axis(axis, x->rank, &ax, e);
    if (st) {
        bd_err_prefix(e, "attribute 'axis' (scale '%s' has shape %s, input %s): ", sname,
                      bd_shape_str(scale, ss, sizeof ss), bd_shape_str(x, sx, sizeof sx));
        return st;
    }
    bd_axis_split(x, ax, &v->outer, &v->inner);
    v->d = x->dims[ax];
    if (!block_size) {
        if (scale->rank != 1 || scale->dims[0] != v->d)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "scale '%s' has shape %s; for input %s it must be a scalar "
                           "or 1-D with %lld values (axis %d)%s", sname, bd_shape_str(scale, ss, sizeof ss),
                           bd_shape_str(x, sx, sizeof sx), (long long)v->d, ax,
                           scale->rank > 1 ? ", or blocked with a block_size" : "");
        v->mode = BD_QV_AXIS;
        v->s = v->d;
        return BRAID_OK;
    }
    int ok = scale->rank == x->rank;
    int64_t want = BD_CEIL_DIV(v->d, block_size);
    for (int i = 0; ok && i < x->rank; i++) ok = scale->dims[i] == (i == ax ? want : x->dims[i]);
    if (!ok)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "scale '%s' has shape %s; blocked quantization of input %s with "
                       "block_size %lld on axis %d needs input's shape with %lld on that axis", sname,
                       bd_shape_str(scale, ss, sizeof ss), bd_shape_str(x, sx, sizeof sx),
                       (long long)block_size, ax, (long long)want);
    v->mode = BD_QV_BLOCKED;
    v->s = want;
    v->block = block_size;
    return BRAID_OK;
}

/* ---- parse ------------------------------------------------------------------------------ */

braid_status bd_quant_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_quant_params *p = bd_calloc(1, sizeof *p);
    int64_t sat = 1, odt = 0, prec = 0;
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_int(n, "axis", 1, &p->axis, e));
    BD_TRY(bd_attr_int(n, "block_size", 0, &p->block_size, e));
    BD_TRY(bd_attr_int(n, "saturate", 1, &sat, e));
    BD_TRY(bd_attr_int(n, "output_dtype", 0, &odt, e));
    BD_TRY(bd_attr_int(n, "precision", 0, &prec, e));
    if (p->block_size < 0) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'block_size' is %lld; it must be positive",
                     (long long)p->block_size);
        goto fail;
    }
    if (sat != 0 && sat != 1) {
        st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'saturate' must be 0 or 1, not %lld", (long long)sat);
        goto fail;
    }
    p->saturate = (int)sat;
    int q = n->op == BD_OP_QuantizeLinear || n->op == BD_OP_MS_QuantizeLinear;
    if (odt && !(q ? in_set((int)odt, QUANT_DTYPES) : in_set((int)odt, HALF_FLOATS))) {
        st = BD_FAIL(e, odt > 0 && odt <= BRAID_DTYPE_FLOAT6E3M2 ? BRAID_ERR_DTYPE : BRAID_ERR_INVALID_MODEL,
                     "attribute 'output_dtype' is %s (%lld), which %s does not output", bd_dtype_name((int)odt),
                     (long long)odt, n->op_type);
        goto fail;
    }
    p->output_dtype = (int)odt;
    if (prec && !in_set((int)prec, HALF_FLOATS)) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute 'precision' is %s (%lld); braid divides in float, "
                     "float16 or bfloat16", bd_dtype_name((int)prec), (long long)prec);
        goto fail;
    }
    p->precision = (int)prec;
fail:
    return bd_params_done(n, p, st);
}

/* ---- infer ------------------------------------------------------------------------------ */

static braid_status quantize_infer(const bd_node *n, const bd_quant_params *p, const bd_tensor *in, bd_tensor *out,
                                   bd_err *e)
{
    const bd_tensor *x = &in[0], *s = &in[1], *z = &in[2];
    braid_status st;
    if (!in_set(x->dtype, HALF_FLOATS | DT(INT32)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'x' has dtype %s; QuantizeLinear takes float, float16, "
                       "bfloat16 or int32", bd_dtype_name(x->dtype));
    if (!in_set(s->dtype, HALF_FLOATS | DT(FLOAT8E8M0)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "scale 'y_scale' has dtype %s; it must be float, float16, bfloat16 "
                       "or float8e8m0", bd_dtype_name(s->dtype));
    int odt = p->output_dtype ? p->output_dtype : BRAID_DTYPE_UINT8;
    if (z->dtype != BRAID_DTYPE_UNDEFINED) {
        if (!in_set(z->dtype, QUANT_DTYPES))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "zero point 'y_zero_point' has dtype %s, not a quantized type",
                           bd_dtype_name(z->dtype));
        if (p->output_dtype && p->output_dtype != z->dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "attribute 'output_dtype' is %s but zero point 'y_zero_point' "
                           "is %s; they must agree", bd_dtype_name(p->output_dtype), bd_dtype_name(z->dtype));
        odt = z->dtype;
    }
    bd_qview v;
    if ((st = bd_qview_make(x, s, z, p->axis, p->block_size, "y_scale", "y_zero_point", &v, e))) return st;
    if ((st = bd_q_check_scale(s, "y_scale", e))) return st;
    out[0] = *x;
    out[0].data = NULL;
    out[0].dtype = odt;
    return BRAID_OK;
}

static braid_status dequantize_infer(const bd_node *n, const bd_quant_params *p, const bd_tensor *in,
                                     bd_tensor *out, bd_err *e)
{
    const bd_tensor *x = &in[0], *s = &in[1], *z = &in[2];
    braid_status st;
    if (!in_set(x->dtype, QUANT_DTYPES | DT(INT32)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'x' has dtype %s, which DequantizeLinear does not take",
                       bd_dtype_name(x->dtype));
    if (!in_set(s->dtype, HALF_FLOATS | DT(FLOAT8E8M0)))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "scale 'x_scale' has dtype %s; it must be float, float16, bfloat16 "
                       "or float8e8m0", bd_dtype_name(s->dtype));
    if (z->dtype != BRAID_DTYPE_UNDEFINED && z->dtype != x->dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "zero point 'x_zero_point' is %s but input 'x' is %s; they must "
                       "match", bd_dtype_name(z->dtype), bd_dtype_name(x->dtype));
    int odt = p->output_dtype ? p->output_dtype : s->dtype;
    if (odt == BRAID_DTYPE_FLOAT8E8M0)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "scale 'x_scale' is float8e8m0, so attribute "
                       "'output_dtype' must say the output's dtype");
    bd_qview v;
    if ((st = bd_qview_make(x, s, z, p->axis, p->block_size, "x_scale", "x_zero_point", &v, e))) return st;
    if ((st = bd_q_check_scale(s, "x_scale", e))) return st;
    (void)n;
    out[0] = *x;
    out[0].data = NULL;
    out[0].dtype = odt;
    return BRAID_OK;
}

braid_status bd_quant_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_quant_params *p = n->params;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (n->op) {
    case BD_OP_QuantizeLinear: case BD_OP_MS_QuantizeLinear: return quantize_infer(n, p, in, out, e);
    case BD_OP_DequantizeLinear: case BD_OP_MS_DequantizeLinear: return dequantize_infer(n, p, in, out, e);
    case BD_OP_DynamicQuantizeLinear:
        if (in[0].dtype != BRAID_DTYPE_FLOAT)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'x' has dtype %s; DynamicQuantizeLinear takes float",
                           bd_dtype_name(in[0].dtype));
        out[0] = in[0];
        out[0].data = NULL;
        out[0].dtype = BRAID_DTYPE_UINT8;
        out[1] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 0};
        out[2] = (bd_tensor){.dtype = BRAID_DTYPE_UINT8, .rank = 0};
        return BRAID_OK;
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the quant family", n->op_type);
    }
}

double bd_quant_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)out;
    return (n->op == BD_OP_DynamicQuantizeLinear ? 4.0 : 3.0) * (double)bd_numel(&in[0]);
}
