/* sequence.c: attribute parsing, shape inference and cost of the sequence op
 * family: sequence and optional values (SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceErase, SequenceAt, SequenceLength,
 * SplitToSequence, ConcatFromSequence, Optional, OptionalHasElement,
 * OptionalGetElement). A sequence or optional value is one pointer inside a
 * plan (util/common.h); what a sequence holds is known when its node runs,
 * so a tensor taken out of one (SequenceAt, ConcatFromSequence,
 * OptionalGetElement) gets its shape then (dims -1 here: the kernel
 * allocates it and the plan's next stage is made for it), unless the
 * container is a plan-time constant, when its shape is known now. */
#include "sequence.h"

#include <string.h>

#include "util/seqval.h"

braid_status bd_sequence_parse(bd_node *n, bd_err *e)
{
    bd_sequence_params *p = bd_calloc(1, sizeof *p);
    if (!p) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    n->params = p;
    int64_t v;
    BD_TRY_RET(bd_attr_int(n, "axis", 0, &p->axis, e));
    BD_TRY_RET(bd_attr_int(n, "keepdims", 1, &v, e));
    p->keepdims = v != 0;
    BD_TRY_RET(bd_attr_int(n, "new_axis", 0, &v, e));
    if (v != 0 && v != 1) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "new_axis must be 0 or 1, not %lld", (long long)v);
    p->new_axis = (int)v;
    if (n->op == BD_OP_ConcatFromSequence && !bd_node_attr(n, "axis"))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "ConcatFromSequence needs the attribute 'axis'");
    if (n->op == BD_OP_SequenceEmpty) {
        BD_TRY_RET(bd_attr_int(n, "dtype", BRAID_DTYPE_FLOAT, &v, e));
        if (v <= 0 || v >= 0x100 || !bd_dtype_size((int)v))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "SequenceEmpty of dtype %lld is not supported", (long long)v);
        p->dtype = (int)v;
    }
    if (n->op == BD_OP_Optional) {
        const bd_attr *a = bd_node_attr(n, "type");
        if (a && a->type != BD_ATTR_TYPE_PROTO)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'type' must be a TypeProto");
        p->dtype = a ? (int)a->i : 0;
        if (p->dtype & BD_DT_OPT)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "Optional's type cannot itself be an optional");
        if (!(n->n_in > 0 && n->in[0] >= 0) && !p->dtype)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "Optional with no input needs the attribute 'type'");
    }
    return BRAID_OK;
}

braid_status bd_sequence_position(const bd_tensor *t, int64_t *pos, bd_err *e)
{
    if (t->dtype != BRAID_DTYPE_INT64 && t->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "the position must be int32 or int64, not %s", bd_dtype_name(t->dtype));
    if (bd_numel(t) != 1 || t->rank > 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the position must be a scalar");
    *pos = t->dtype == BRAID_DTYPE_INT64 ? *(const int64_t *)t->data : *(const int32_t *)t->data;
    return BRAID_OK;
}

braid_status bd_split_to_sequence_lengths(const bd_sequence_params *p, const bd_tensor *x, int a,
                                          const bd_tensor *split, int64_t *len, int64_t cap, int64_t *n,
                                          int *squeeze, bd_err *e)
{
    int64_t dim = x->rank ? x->dims[a] : 1;
    *squeeze = 0;
    *n = 0;
    if (!split || split->dtype == BRAID_DTYPE_UNDEFINED) { /* pieces of 1 */
        *squeeze = !p->keepdims;
        if (dim > cap) return BD_FAIL(e, BRAID_ERR_LIMIT, "a split into %lld pieces is too many", (long long)dim);
        for (int64_t i = 0; i < dim; i++) len[i] = 1;
        *n = dim;
        return BRAID_OK;
    }
    if (split->dtype != BRAID_DTYPE_INT64 && split->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "split must be int32 or int64, not %s", bd_dtype_name(split->dtype));
    if (split->rank > 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "split must be a scalar or 1-D, not rank %d", split->rank);
#define SPLIT_AT(i) (split->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)split->data)[i] : ((const int32_t *)split->data)[i])
    if (split->rank == 0) { /* equal pieces of this length, the last one shorter */
        int64_t s = SPLIT_AT(0);
        if (s <= 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "split %lld must be positive", (long long)s);
        for (int64_t at = 0; at < dim; at += s) {
            if (*n >= cap) return BD_FAIL(e, BRAID_ERR_LIMIT, "a split into more than %lld pieces", (long long)cap);
            len[(*n)++] = BD_MIN(s, dim - at);
        }
        return BRAID_OK;
    }
    int64_t total = 0, cnt = split->dims[0];
    if (cnt > cap) return BD_FAIL(e, BRAID_ERR_LIMIT, "a split into %lld pieces is too many", (long long)cnt);
    for (int64_t i = 0; i < cnt; i++) {
        int64_t s = SPLIT_AT(i);
        if (s < 0 || s > dim - total)
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "split lengths do not add up to the axis's %lld", (long long)dim);
        len[i] = s;
        total += s;
    }
#undef SPLIT_AT
    if (total != dim)
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "split lengths add up to %lld, not the axis's %lld", (long long)total,
                       (long long)dim);
    *n = cnt;
    return BRAID_OK;
}

static braid_status need(const bd_tensor *t, int kind, const char *what, bd_err *e)
{
    if ((t->dtype & (BD_DT_SEQ | BD_DT_OPT)) != kind || !bd_dtype_size(t->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "%s must be a %s, not %s", what,
                       kind == BD_DT_SEQ ? "sequence" : kind == BD_DT_OPT ? "optional" : "tensor",
                       t->dtype ? bd_dtype_name(t->dtype) : "missing");
    return BRAID_OK;
}

static void container_out(bd_tensor *o, int dtype)
{
    memset(o, 0, sizeof *o);
    o->dtype = dtype;
    o->rank = 0;
}

/* A tensor whose shape only the run knows (the kernel allocates it). */
static void runtime_out(bd_tensor *o, int dtype)
{
    memset(o, 0, sizeof *o);
    o->dtype = dtype;
    o->rank = -1;
}

/* The shape ConcatFromSequence gives its elements; fails when they disagree. */
static braid_status concat_shape(const bd_sequence_params *p, const bd_seq *s, bd_tensor *o, bd_err *e)
{
    if (!s->n) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "ConcatFromSequence of an empty sequence");
    const bd_tensor *f = &s->items[0];
    int r = f->rank + p->new_axis, a;
    BD_TRY_RET(bd_axis(p->axis, r, &a, e));
    if (!p->new_axis && f->rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot concatenate scalars without new_axis");
    int64_t sum = 0;
    char sa[160], sb[160];
    for (int i = 0; i < s->n; i++) {
        const bd_tensor *t = &s->items[i];
        int ok = t->rank == f->rank;
        for (int d = 0; ok && d < f->rank; d++) ok = t->dims[d] == f->dims[d] || (!p->new_axis && d == a);
        if (!ok)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "element %d has shape %s, element 0 %s: they cannot be joined on axis %lld", i,
                           bd_shape_str(t, sa, sizeof sa), bd_shape_str(f, sb, sizeof sb), (long long)p->axis);
        sum += p->new_axis ? 1 : t->dims[a];
    }
    o->dtype = s->elem;
    o->rank = r;
    /* the element dims, with the new or joined axis at a */
    for (int d = 0, k = 0; d < r; d++) {
        if (d == a) { o->dims[d] = sum; if (!p->new_axis) k++; continue; }
        o->dims[d] = f->dims[k++];
    }
    return BRAID_OK;
}

braid_status bd_sequence_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_sequence_params *p = n->params;
    int present = n->n_in > 0 && in[0].dtype != BRAID_DTYPE_UNDEFINED;
    switch (n->op) {
    case BD_OP_OptionalHasElement:
        if (present && (in[0].dtype & BD_DT_OPT) && in[0].rank != 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "an optional value must have rank 0");
        memset(&out[0], 0, sizeof out[0]);
        out[0].dtype = BRAID_DTYPE_BOOL;
        out[0].rank = 0;
        return BRAID_OK;
    case BD_OP_OptionalGetElement:
        if (!present) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
        if (!(in[0].dtype & BD_DT_OPT)) { /* a tensor or sequence: itself */
            out[0] = in[0];
            out[0].data = NULL;
            return BRAID_OK;
        }
        if (in[0].dtype & BD_DT_SEQ) { container_out(&out[0], in[0].dtype & ~BD_DT_OPT); return BRAID_OK; }
        if (in[0].data) { /* a plan-time constant */
            const bd_tensor *t = bd_box_get(in[0].data);
            if (!t) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
            out[0] = *t;
            out[0].data = NULL;
            return BRAID_OK;
        }
        runtime_out(&out[0], bd_dt_elem(in[0].dtype));
        return BRAID_OK;
    case BD_OP_Optional:
        if (present) {
            if (in[0].dtype & BD_DT_OPT) return BD_FAIL(e, BRAID_ERR_DTYPE, "Optional of an optional");
            if (p->dtype && p->dtype != in[0].dtype)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "the input is %s but the attribute 'type' says %s",
                               bd_dtype_name(in[0].dtype), bd_dtype_name(p->dtype));
            container_out(&out[0], BD_DT_OPT | in[0].dtype);
        } else {
            container_out(&out[0], BD_DT_OPT | p->dtype);
        }
        if (!bd_dtype_size(out[0].dtype))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "an optional of %s is not supported", bd_dtype_name(bd_dt_elem(out[0].dtype)));
        return BRAID_OK;
    case BD_OP_SequenceEmpty: container_out(&out[0], BD_DT_SEQ | p->dtype); return BRAID_OK;
    case BD_OP_SequenceConstruct:
        for (int i = 0; i < n->n_in; i++) {
            if (bd_dt_container(in[i].dtype) || !bd_dtype_size(in[i].dtype))
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d must be a tensor, not %s", i,
                               in[i].dtype ? bd_dtype_name(in[i].dtype) : "missing");
            if (in[i].dtype != in[0].dtype)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d is %s but input 0 is %s: a sequence holds one dtype", i,
                               bd_dtype_name(in[i].dtype), bd_dtype_name(in[0].dtype));
        }
        container_out(&out[0], BD_DT_SEQ | in[0].dtype);
        return BRAID_OK;
    case BD_OP_SequenceInsert:
        BD_TRY_RET(need(&in[0], BD_DT_SEQ, "input 0", e));
        if (in[1].dtype != bd_dt_elem(in[0].dtype))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "the tensor is %s but the sequence holds %s",
                           in[1].dtype ? bd_dtype_name(in[1].dtype) : "missing", bd_dtype_name(bd_dt_elem(in[0].dtype)));
        container_out(&out[0], in[0].dtype);
        return BRAID_OK;
    case BD_OP_SequenceErase:
        BD_TRY_RET(need(&in[0], BD_DT_SEQ, "input 0", e));
        container_out(&out[0], in[0].dtype);
        return BRAID_OK;
    case BD_OP_SequenceLength:
        BD_TRY_RET(need(&in[0], BD_DT_SEQ, "input 0", e));
        memset(&out[0], 0, sizeof out[0]);
        out[0].dtype = BRAID_DTYPE_INT64;
        out[0].rank = 0;
        return BRAID_OK;
    case BD_OP_SequenceAt: {
        BD_TRY_RET(need(&in[0], BD_DT_SEQ, "input 0", e));
        const bd_seq *s = in[0].data ? bd_box_get(in[0].data) : NULL;
        if (s && in[1].data) { /* both plan-time constants: the shape is known */
            int64_t pos;
            BD_TRY_RET(bd_sequence_position(&in[1], &pos, e));
            if (pos < -s->n || pos >= s->n)
                return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "position %lld is out of range for a sequence of %d",
                               (long long)pos, s->n);
            out[0] = s->items[pos < 0 ? pos + s->n : pos];
            out[0].data = NULL;
            return BRAID_OK;
        }
        runtime_out(&out[0], bd_dt_elem(in[0].dtype));
        return BRAID_OK;
    }
    case BD_OP_SplitToSequence: {
        if (bd_dt_container(in[0].dtype) || !bd_dtype_size(in[0].dtype))
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input 0 must be a tensor, not %s", bd_dtype_name(in[0].dtype));
        if (in[0].rank < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "SplitToSequence of a scalar");
        int a;
        BD_TRY_RET(bd_axis(p->axis, in[0].rank, &a, e));
        container_out(&out[0], BD_DT_SEQ | in[0].dtype);
        return BRAID_OK;
    }
    case BD_OP_ConcatFromSequence: {
        BD_TRY_RET(need(&in[0], BD_DT_SEQ, "input 0", e));
        const bd_seq *s = in[0].data ? bd_box_get(in[0].data) : NULL;
        if (s) return concat_shape(p, s, &out[0], e);
        runtime_out(&out[0], bd_dt_elem(in[0].dtype));
        return BRAID_OK;
    }
    default: return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the sequence family", n->op_type);
    }
}

braid_status bd_sequence_concat_shape(const bd_node *n, const bd_seq *s, bd_tensor *o, bd_err *e)
{
    return concat_shape(n->params, s, o, e);
}

double bd_sequence_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in, (void)out;
    return 0;
}
