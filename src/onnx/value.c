/* value.c: the .pb files of sequence and optional values (ONNX's
 * SequenceProto and OptionalProto, from onnx-data.proto, which Debian's
 * libonnx-dev does not install): read here from the wire format directly,
 * each element a TensorProto decoded by tensor.c. Test cases and
 * `braid run --input` use them. */
#include <string.h>

#include "onnx/onnx.h"

typedef struct wire {
    const uint8_t *p, *end;
} wire;

static int varint(wire *w, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && w->p < w->end; s += 7) {
        uint8_t b = *w->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return 0;
    }
    return -1;
}

/* The next field: its number, wire type, and for length-delimited ones the
 * bytes (for varints *v). -1 on a malformed message, 1 at the end. */
static int field(wire *w, int *num, int *type, uint64_t *v, const uint8_t **bytes, size_t *len)
{
    uint64_t key;
    if (w->p >= w->end) return 1;
    if (varint(w, &key) || key >> 3 > 1 << 29) return -1;
    *num = (int)(key >> 3);
    *type = (int)(key & 7);
    switch (*type) {
    case 0: return varint(w, v);
    case 1: if (w->end - w->p < 8) return -1; w->p += 8; return 0;
    case 5: if (w->end - w->p < 4) return -1; w->p += 4; return 0;
    case 2:
        if (varint(w, v) || *v > (uint64_t)(w->end - w->p)) return -1;
        *bytes = w->p;
        *len = (size_t)*v;
        w->p += *len;
        return 0;
    default: return -1;
    }
}

void bd_onnx_value_free(bd_tensor *t)
{
    if (!t) return;
    if ((t->dtype & BD_DT_SEQ) && t->data)
        for (int64_t i = 0; i < t->dims[0]; i++) bd_free(((bd_tensor *)t->data)[i].data);
    bd_free(t->data);
    t->data = NULL;
}

static braid_status parse_sequence(const void *bytes, size_t size, int dtype, bd_tensor *t, bd_err *e)
{
    wire w = {bytes, (const uint8_t *)bytes + size};
    int num, type, r, n = 0, cap = 0;
    uint64_t v;
    const uint8_t *b = NULL;
    size_t len = 0;
    bd_tensor *items = NULL;
    braid_status st = BRAID_OK;
    memset(t, 0, sizeof *t);
    while (!(r = field(&w, &num, &type, &v, &b, &len))) {
        if (num == 2 && type == 0 && v != 0 && v != 1) { /* elem_type: 1 tensor */
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a sequence of non-tensors (elem_type %llu)", (unsigned long long)v);
            goto fail;
        }
        if (num != 3 || type != 2) {
            if (num >= 4 && num <= 7 && type == 2) {
                st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "a sequence of sparse tensors, sequences, maps or optionals");
                goto fail;
            }
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            if (cap > 1 << 24) { st = BD_FAIL(e, BRAID_ERR_LIMIT, "a sequence of more than 2^24 tensors"); goto fail; }
            bd_tensor *q = bd_realloc(items, (size_t)cap * sizeof *q);
            if (!q) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
            items = q;
        }
        st = bd_onnx_parse_tensor(b, len, &items[n], NULL, e);
        if (st) { bd_err_prefix(e, "sequence element %d: ", n); goto fail; }
        n++;
        int want = bd_dt_elem(dtype);
        if (items[n - 1].dtype != items[0].dtype || (want && items[n - 1].dtype != want)) {
            st = BD_FAIL(e, BRAID_ERR_DTYPE, "sequence element %d is %s, not %s", n - 1,
                         bd_dtype_name(items[n - 1].dtype), bd_dtype_name(want ? want : items[0].dtype));
            goto fail;
        }
    }
    if (r < 0) { st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "a malformed SequenceProto"); goto fail; }
    if (!items && !(items = bd_malloc(sizeof *items))) { st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); goto fail; }
    t->dtype = BD_DT_SEQ | (bd_dt_elem(dtype) ? bd_dt_elem(dtype) : n ? items[0].dtype : BRAID_DTYPE_FLOAT);
    t->rank = 1;
    t->dims[0] = n;
    t->data = items;
    return BRAID_OK;
fail:
    for (int i = 0; i < n; i++) bd_free(items[i].data);
    bd_free(items);
    return st;
}

braid_status bd_onnx_parse_value(const void *bytes, size_t size, int dtype, bd_tensor *t, bd_err *e)
{
    if (!bd_dt_container(dtype)) return bd_onnx_parse_tensor(bytes, size, t, NULL, e);
    if (!(dtype & BD_DT_OPT)) return parse_sequence(bytes, size, dtype, t, e);
    wire w = {bytes, (const uint8_t *)bytes + size};
    int num, type, r;
    uint64_t v;
    const uint8_t *b = NULL, *held = NULL;
    size_t len = 0, held_len = 0;
    int held_kind = 0;
    memset(t, 0, sizeof *t);
    while (!(r = field(&w, &num, &type, &v, &b, &len)))
        if ((num == 3 || num == 5) && type == 2) { held = b; held_len = len; held_kind = num; }
        else if (num >= 4 && num <= 7 && type == 2)
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "an optional of a sparse tensor, map or optional");
    if (r < 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "a malformed OptionalProto");
    if (!held) { t->rank = -1; return BRAID_OK; } /* empty: dtype UNDEFINED */
    if ((held_kind == 5) != ((dtype & BD_DT_SEQ) != 0))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "the optional holds a %s, the model declares %s",
                       held_kind == 5 ? "sequence" : "tensor", bd_dtype_name(dtype));
    if (held_kind == 5) return parse_sequence(held, held_len, dtype & ~BD_DT_OPT, t, e);
    return bd_onnx_parse_tensor(held, held_len, t, NULL, e);
}

braid_status bd_onnx_read_value_file(const char *path, int dtype, bd_tensor *t, bd_err *e)
{
    void *bytes = NULL;
    size_t size = 0;
    braid_status st = bd_read_file(path, &bytes, &size, e);
    if (st) return st;
    st = bd_onnx_parse_value(bytes, size, dtype, t, e);
    if (st) bd_err_prefix(e, "%s: ", path);
    bd_free(bytes);
    return st;
}
