/* sequence.c: CPU kernels of the sequence op family (src/ops/sequence.c):
 * sequence and optional values. Each value is one pointer (util/common.h);
 * the objects a kernel makes, and the data it copies into them, live in the
 * run's pool (k->strings: reset when a top-level run starts; the instance's
 * own pool when a node is folded at plan time). Elements are immutable, so a
 * new sequence shares the elements of the one it was made from. */
#include "backend/cpu/cpu_ops.h"

#include <string.h>

#include "ops/sequence.h"
#include "util/seqval.h"

/* out = t: copied into the planned buffer when out's shape was known, else
 * (its shape known only now) a copy in the pool that out points at. */
static braid_status give_tensor(const bd_kernel *k, const bd_tensor *t, bd_tensor *out)
{
    char a[160], b[160];
    if (out->data) {
        if (out->dtype != t->dtype || !bd_shape_equal(out, t))
            return BD_FAIL(k->err, BRAID_ERR_SHAPE, "the element is %s %s but was planned as %s %s",
                           bd_dtype_name(t->dtype), bd_shape_str(t, a, sizeof a), bd_dtype_name(out->dtype),
                           bd_shape_str(out, b, sizeof b));
        size_t nb;
        BD_TRY_RET(bd_tensor_nbytes(t, &nb, k->err));
        if (nb) memcpy(out->data, t->data, nb);
        return BRAID_OK;
    }
    return bd_tensor_clone(k->strings, t, out, k->err);
}

static const bd_seq *seq_in(const bd_kernel *k, int i)
{
    return bd_box_get(k->in[i].data);
}

static braid_status position(const bd_kernel *k, int i, int64_t def, int64_t lo, int64_t hi, int64_t *pos)
{
    if (i >= k->n_in || k->in[i].dtype == BRAID_DTYPE_UNDEFINED) { *pos = def; return BRAID_OK; }
    BD_TRY_RET(bd_sequence_position(&k->in[i], pos, k->err));
    if (*pos < lo || *pos > hi)
        return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT, "position %lld is out of range [%lld, %lld]", (long long)*pos,
                       (long long)lo, (long long)hi);
    return BRAID_OK;
}

/* The bytes of one element of dtype dt, and of the dims of x from `from` on. */
static size_t inner_bytes(const bd_tensor *x, int from)
{
    size_t b = bd_dtype_size(x->dtype);
    for (int d = from; d < x->rank; d++) b *= (size_t)x->dims[d];
    return b;
}

static braid_status split_to_sequence(const bd_kernel *k, bd_seq **out)
{
    const bd_sequence_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int a, squeeze;
    BD_TRY_RET(bd_axis(p->axis, x->rank, &a, k->err));
    int64_t dim = x->dims[a], n, cap = dim > 0 ? dim : 1;
    int64_t *len = bd_malloc((size_t)cap * sizeof *len);
    if (!len) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    braid_status st = bd_split_to_sequence_lengths(p, x, a, k->n_in > 1 ? &k->in[1] : NULL, len, cap, &n, &squeeze,
                                                   k->err);
    bd_seq *s = NULL;
    if (!st && n > 1 << 30) st = BD_FAIL(k->err, BRAID_ERR_LIMIT, "a sequence of %lld elements", (long long)n);
    if (!st && !(s = bd_seq_new(k->strings, x->dtype, (int)n, k->err))) st = k->err->status;
    size_t inner = inner_bytes(x, a + 1);
    int64_t outer = 1;
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int64_t i = 0, at = 0; !st && i < n; at += len[i], i++) {
        bd_tensor *t = &s->items[i];
        *t = *x;
        t->dims[a] = len[i];
        if (squeeze) {
            for (int d = a; d + 1 < x->rank; d++) t->dims[d] = t->dims[d + 1];
            t->rank--;
        }
        size_t piece = (size_t)len[i] * inner;
        t->data = bd_strpool_alloc(k->strings, (size_t)outer * piece > 0 ? (size_t)outer * piece : 1);
        if (!t->data) { st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); break; }
        for (int64_t o = 0; o < outer && piece; o++)
            memcpy((char *)t->data + o * piece, (const char *)x->data + ((size_t)o * (size_t)dim + (size_t)at) * inner,
                   piece);
    }
    bd_free(len);
    *out = s;
    return st;
}

static braid_status concat_from_sequence(const bd_kernel *k)
{
    const bd_sequence_params *p = k->node->params;
    const bd_seq *s = seq_in(k, 0);
    bd_tensor shape;
    BD_TRY_RET(bd_sequence_concat_shape(k->node, s, &shape, k->err));
    bd_tensor *o = &k->out[0];
    char a1[160], b1[160];
    size_t nb;
    BD_TRY_RET(bd_tensor_nbytes(&shape, &nb, k->err));
    if (o->data) {
        if (!bd_shape_equal(o, &shape))
            return BD_FAIL(k->err, BRAID_ERR_SHAPE, "the result has shape %s but was planned as %s",
                           bd_shape_str(&shape, a1, sizeof a1), bd_shape_str(o, b1, sizeof b1));
    } else {
        *o = shape;
        o->data = bd_strpool_alloc(k->strings, nb ? nb : 1);
        if (!o->data) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    }
    int a;
    BD_TRY_RET(bd_axis(p->axis, o->rank, &a, k->err));
    int64_t outer = 1;
    for (int d = 0; d < a; d++) outer *= o->dims[d];
    size_t row = inner_bytes(o, a), at = 0; /* row: one outer index's bytes of the result */
    for (int i = 0; i < s->n; i++) {
        const bd_tensor *t = &s->items[i];
        size_t piece = inner_bytes(t, a); /* one stacked element, or its slab of the joined axis */
        for (int64_t q = 0; q < outer && piece; q++)
            memcpy((char *)o->data + (size_t)q * row + at, (const char *)t->data + (size_t)q * piece, piece);
        at += piece;
    }
    return BRAID_OK;
}

braid_status bd_cpu_sequence(const bd_kernel *k)
{
    const bd_sequence_params *p = k->node->params;
    int present = k->n_in > 0 && k->in[0].dtype != BRAID_DTYPE_UNDEFINED;
    int in_dt = present ? k->in[0].dtype : 0;
    void *slot = k->out[0].data;
    bd_err *e = k->err;
    switch (k->node->op) {
    case BD_OP_OptionalHasElement:
        *(uint8_t *)slot = (uint8_t)(present && (!(in_dt & BD_DT_OPT) || bd_box_get(k->in[0].data) != NULL));
        return BRAID_OK;
    case BD_OP_OptionalGetElement: {
        if (!present) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
        if (!(in_dt & BD_DT_OPT)) {
            if (in_dt & BD_DT_SEQ) { bd_box_set(slot, seq_in(k, 0)); return BRAID_OK; }
            return give_tensor(k, &k->in[0], &k->out[0]);
        }
        const void *obj = bd_box_get(k->in[0].data);
        if (!obj) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "OptionalGetElement of an empty optional");
        if (in_dt & BD_DT_SEQ) { bd_box_set(slot, obj); return BRAID_OK; }
        return give_tensor(k, obj, &k->out[0]);
    }
    case BD_OP_Optional: {
        if (!present) { bd_box_set(slot, NULL); return BRAID_OK; }
        if (in_dt & BD_DT_SEQ) { bd_box_set(slot, seq_in(k, 0)); return BRAID_OK; }
        bd_tensor *t = bd_strpool_alloc(k->strings, sizeof *t);
        if (!t) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
        BD_TRY_RET(bd_tensor_clone(k->strings, &k->in[0], t, e));
        bd_box_set(slot, t);
        return BRAID_OK;
    }
    case BD_OP_SequenceEmpty: {
        bd_seq *s = bd_seq_new(k->strings, p->dtype, 0, e);
        if (!s) return e->status;
        bd_box_set(slot, s);
        return BRAID_OK;
    }
    case BD_OP_SequenceConstruct: {
        bd_seq *s = bd_seq_new(k->strings, k->in[0].dtype, k->n_in, e);
        if (!s) return e->status;
        for (int i = 0; i < k->n_in; i++) BD_TRY_RET(bd_tensor_clone(k->strings, &k->in[i], &s->items[i], e));
        bd_box_set(slot, s);
        return BRAID_OK;
    }
    case BD_OP_SequenceInsert: {
        const bd_seq *a = seq_in(k, 0);
        int64_t pos;
        BD_TRY_RET(position(k, 2, a->n, -a->n, a->n, &pos));
        if (pos < 0) pos += a->n;
        bd_seq *s = bd_seq_new(k->strings, a->elem, a->n + 1, e);
        if (!s) return e->status;
        for (int i = 0, j = 0; i <= a->n; i++)
            if (i != pos) s->items[i] = a->items[j++];
        BD_TRY_RET(bd_tensor_clone(k->strings, &k->in[1], &s->items[pos], e));
        bd_box_set(slot, s);
        return BRAID_OK;
    }
    case BD_OP_SequenceErase: {
        const bd_seq *a = seq_in(k, 0);
        int64_t pos;
        if (!a->n) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "SequenceErase of an empty sequence");
        BD_TRY_RET(position(k, 1, -1, -a->n, a->n - 1, &pos));
        if (pos < 0) pos += a->n;
        bd_seq *s = bd_seq_new(k->strings, a->elem, a->n - 1, e);
        if (!s) return e->status;
        for (int i = 0, j = 0; i < a->n; i++)
            if (i != pos) s->items[j++] = a->items[i];
        bd_box_set(slot, s);
        return BRAID_OK;
    }
    case BD_OP_SequenceAt: {
        const bd_seq *a = seq_in(k, 0);
        int64_t pos;
        if (!a->n) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "SequenceAt of an empty sequence");
        if (k->in[1].dtype == BRAID_DTYPE_UNDEFINED) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "SequenceAt needs a position");
        BD_TRY_RET(position(k, 1, 0, -a->n, a->n - 1, &pos));
        return give_tensor(k, &a->items[pos < 0 ? pos + a->n : pos], &k->out[0]);
    }
    case BD_OP_SequenceLength:
        *(int64_t *)slot = seq_in(k, 0)->n;
        return BRAID_OK;
    case BD_OP_SplitToSequence: {
        bd_seq *s = NULL;
        BD_TRY_RET(split_to_sequence(k, &s));
        bd_box_set(slot, s);
        return BRAID_OK;
    }
    case BD_OP_ConcatFromSequence: return concat_from_sequence(k);
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the sequence family", k->node->op_type);
    }
}
