/* seqval.c: sequence and optional values (seqval.h). */
#include "seqval.h"

#include <string.h>

bd_seq *bd_seq_new(bd_strpool *pool, int elem, int n, bd_err *e)
{
    bd_seq *s = bd_strpool_alloc(pool, sizeof *s + (size_t)(n > 0 ? n : 1) * sizeof(bd_tensor));
    if (!s) {
        BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for a sequence of %d tensors", n);
        return NULL;
    }
    s->elem = elem;
    s->n = n;
    s->items = (bd_tensor *)(s + 1);
    memset(s->items, 0, (size_t)(n > 0 ? n : 1) * sizeof(bd_tensor));
    return s;
}

braid_status bd_tensor_clone(bd_strpool *pool, const bd_tensor *src, bd_tensor *dst, bd_err *e)
{
    size_t nb;
    BD_TRY_RET(bd_tensor_nbytes(src, &nb, e));
    bd_tensor t = *src;
    t.data = bd_strpool_alloc(pool, nb ? nb : 1);
    if (!t.data) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory copying a %zu-byte tensor", nb);
    if (nb && !src->data) return BD_FAIL(e, BRAID_ERR_INTERNAL, "a tensor of %zu bytes has no data", nb);
    if (src->dtype == BRAID_DTYPE_STRING) {
        const char *const *a = src->data;
        const char **b = t.data;
        for (int64_t i = 0, n = bd_numel(src); i < n; i++) {
            b[i] = bd_strpool_dup(pool, a[i] ? a[i] : "", a[i] ? strlen(a[i]) : 0);
            if (!b[i]) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory copying strings");
        }
    } else if (nb) {
        memcpy(t.data, src->data, nb);
    }
    *dst = t;
    return BRAID_OK;
}

braid_status bd_seq_clone(bd_strpool *pool, const bd_seq *s, bd_seq **out, bd_err *e)
{
    bd_seq *c = bd_seq_new(pool, s->elem, s->n, e);
    if (!c) return e->status;
    for (int i = 0; i < s->n; i++) BD_TRY_RET(bd_tensor_clone(pool, &s->items[i], &c->items[i], e));
    *out = c;
    return BRAID_OK;
}
