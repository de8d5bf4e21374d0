/* registry.c: the op table built from ops.def, op lookup, dispatch to the
 * families, and small helpers that families share (axes, constant ints). */
#include "ops.h"

#include <stdarg.h>
#include <string.h>

const bd_op_info bd_op_table[BD_OP_COUNT] = {
#define OP(name, fam, in, out, opsets, si, flags) {#name, BD_DOM_ONNX, BD_FAM_##fam, in, out, opsets, si, flags},
#define MSOP(name, fam, in, out, opsets, si, flags) {#name, BD_DOM_MS, BD_FAM_##fam, in, out, opsets, si, flags},
#define MLOP(name, fam, in, out, opsets, si, flags) {#name, BD_DOM_ML, BD_FAM_##fam, in, out, opsets, si, flags},
#define TROP(name, fam, in, out, opsets, si, flags) {#name, BD_DOM_TRAINING, BD_FAM_##fam, in, out, opsets, si, flags},
#define PVOP(name, fam, in, out, opsets, si, flags) {#name, BD_DOM_PREVIEW, BD_FAM_##fam, in, out, opsets, si, flags},
#include "ops.def"
#undef OP
#undef MSOP
#undef MLOP
#undef TROP
#undef PVOP
};

const char *const bd_domain_names[BD_DOM_COUNT] = {"", "com.microsoft", "ai.onnx.ml", "ai.onnx.preview.training",
                                                   "ai.onnx.preview"};

const char *const bd_family_names[BD_FAM_COUNT] = {
#define X(f) #f,
    BD_FAMILIES(X)
#undef X
};

int bd_domain_lookup(const char *domain)
{
    if (!domain || !domain[0] || !strcmp(domain, "ai.onnx")) return BD_DOM_ONNX;
    for (int d = 1; d < BD_DOM_COUNT; d++)
        if (!strcmp(domain, bd_domain_names[d])) return d;
    return -1;
}

static int last_of(const bd_op_info *r)
{
    return r->last_opset ? r->last_opset : r->domain == BD_DOM_ONNX ? BD_MAX_OPSET : 1 << 30;
}

int bd_op_lookup(const char *domain, const char *op_type, int64_t opset)
{
    int d = bd_domain_lookup(domain);
    if (d < 0 || !op_type) return -1;
    for (int i = 0; i < BD_OP_COUNT; i++) {
        const bd_op_info *r = &bd_op_table[i];
        if ((int)r->domain != d || strcmp(r->name, op_type) != 0) continue;
        if (opset < 0 || (opset >= r->first_opset && opset <= last_of(r))) return i;
    }
    return -1;
}

int bd_op_last_opset(const char *domain, const char *op_type, int *first)
{
    int d = bd_domain_lookup(domain), last = 0;
    if (first) *first = 0;
    for (int i = 0; d >= 0 && op_type && i < BD_OP_COUNT; i++) {
        const bd_op_info *r = &bd_op_table[i];
        if ((int)r->domain != d || strcmp(r->name, op_type) != 0) continue;
        if (first && (!*first || r->first_opset < *first)) *first = r->first_opset;
        if (last_of(r) > last) last = last_of(r);
    }
    return last;
}

typedef struct family_fns {
    braid_status (*parse)(bd_node *, bd_err *);
    braid_status (*infer)(const bd_node *, const bd_tensor *, bd_tensor *, bd_err *);
    double (*cost)(const bd_node *, const bd_tensor *, const bd_tensor *);
} family_fns;

static const family_fns families[BD_FAM_COUNT] = {
#define X(f) {bd_##f##_parse, bd_##f##_infer, bd_##f##_cost},
    BD_FAMILIES(X)
#undef X
};

braid_status bd_op_parse(bd_node *n, bd_err *e)
{
    return families[bd_op_table[n->op].family].parse(n, e);
}

braid_status bd_op_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    /* Sequences and optionals go only where an op takes them: the sequence
     * family, control flow (branch outputs, loop state) and Identity. */
    bd_family f = bd_op_table[n->op].family;
    if (f != BD_FAM_sequence && f != BD_FAM_control && n->op != BD_OP_Identity)
        for (int i = 0; i < n->n_in; i++)
            if (bd_dt_container(in[i].dtype)) /* omitted inputs are UNDEFINED */
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d is a %s; %s takes tensors", i, bd_dtype_name(in[i].dtype),
                               n->op_type);
    return families[f].infer(n, in, out, e);
}

double bd_op_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    return families[bd_op_table[n->op].family].cost(n, in, out);
}

braid_status bd_axis(int64_t axis, int rank, int *out, bd_err *e)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= (rank ? rank : 1))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %lld is out of range for rank %d",
                       (long long)axis, rank);
    *out = (int)a;
    return BRAID_OK;
}

braid_status bd_const_ints(const bd_tensor *t, const char *what, int64_t *out, int max, int *count,
                           bd_err *e)
{
    if (t->dtype == BRAID_DTYPE_UNDEFINED) /* omitted, or past the node's inputs */
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input '%s' is missing", what);
    if (!t->data)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED,
                       "input '%s' must be known when the plan is made (a constant or computed "
                       "from shapes)", what);
    if (t->dtype != BRAID_DTYPE_INT64 && t->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' must be int64 or int32, not %s", what,
                       bd_dtype_name(t->dtype));
    if (t->rank > 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' must be 1-D, not rank %d", what, t->rank);
    int64_t n = bd_numel(t);
    if (n > max)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "input '%s' has %lld values, at most %d are accepted",
                       what, (long long)n, max);
    for (int64_t i = 0; i < n; i++)
        out[i] = t->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)t->data)[i]
                                               : ((const int32_t *)t->data)[i];
    *count = (int)n;
    return BRAID_OK;
}

braid_status bd_expect_dtype(const bd_tensor *t, const char *what, bd_err *e, ...)
{
    va_list ap;
    va_start(ap, e);
    for (int dt = va_arg(ap, int); dt; dt = va_arg(ap, int))
        if (dt == t->dtype) { va_end(ap); return BRAID_OK; }
    va_end(ap);
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s has dtype %s, which braid does not support here", what,
                   bd_dtype_name(t->dtype));
}
