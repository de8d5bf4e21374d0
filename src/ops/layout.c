/* layout.c: attribute parsing, shape inference and cost of the layout op
 * family (Concat, Split, Slice, Transpose, Gather, Expand, Tile, Pad,
 * DepthToSpace, SpaceToDepth, CenterCropPad). */
#include "layout.h"

#include <string.h>

#include "util/dtype.h"

static int has_input(const bd_node *n, const bd_tensor *in, int i)
{
    return i < n->n_in && in[i].dtype != BRAID_DTYPE_UNDEFINED;
}

static braid_status parse_pad(const bd_node *n, bd_layout_params *p, bd_err *e)
{
    const char *mode;
    braid_status st = bd_attr_string(n, "mode", "constant", &mode, e);
    if (st) return st;
    if (strcmp(mode, "constant") == 0) p->pad_mode = BD_PADMODE_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) p->pad_mode = BD_PADMODE_REFLECT;
    else if (strcmp(mode, "edge") == 0) p->pad_mode = BD_PADMODE_EDGE;
    else if (strcmp(mode, "wrap") == 0) p->pad_mode = BD_PADMODE_WRAP;
    else return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute 'mode' = '%s' is not supported", mode);
    if (n->opset >= 11) return BRAID_OK;
    const char *name = n->opset < 2 ? "paddings" : "pads";
    if (!bd_node_attr(n, name))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' is required before opset 11", name);
    if ((st = bd_attr_ints(n, name, p->pads, 2 * BD_MAX_RANK, &p->n_pads, e))) return st;
    return bd_attr_float(n, "value", 0.0f, &p->pad_value, e);
}

braid_status bd_layout_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    const bd_attr *split = n->op == BD_OP_Split && n->opset < 13 ? bd_node_attr(n, "split") : NULL;
    int n_split = split && split->type == BD_ATTR_INTS ? split->n : 0;
    bd_layout_params *p = bd_calloc(1, sizeof *p + (size_t)n_split * sizeof(int64_t));
    BD_CHECK_ALLOC(e, p);
    p->n_axes = -1;
    p->n_split = -1;
    switch (n->op) {
    case BD_OP_Concat:
        if (n->opset >= 4 && !bd_node_attr(n, "axis")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axis' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "axis", 1, &p->axis, e));
        break;
    case BD_OP_Split:
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e));
        BD_TRY(bd_attr_int(n, "num_outputs", 0, &p->num_outputs, e));
        if (split) BD_TRY(bd_attr_ints(n, "split", p->split, n_split, &p->n_split, e));
        if (p->num_outputs && p->num_outputs != n->n_out) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                         "attribute 'num_outputs' is %lld but the node has %d outputs",
                         (long long)p->num_outputs, n->n_out);
            goto fail;
        }
        break;
    case BD_OP_Slice:
        if (n->opset >= 10) break;
        if (!bd_node_attr(n, "starts") || !bd_node_attr(n, "ends")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attributes 'starts' and 'ends' are required");
            goto fail;
        }
        BD_TRY(bd_attr_ints(n, "starts", p->starts, BD_MAX_RANK, &p->n_starts, e));
        BD_TRY(bd_attr_ints(n, "ends", p->ends, BD_MAX_RANK, &p->n_ends, e));
        if (bd_node_attr(n, "axes")) BD_TRY(bd_attr_ints(n, "axes", p->axes, BD_MAX_RANK, &p->n_axes, e));
        break;
    case BD_OP_Transpose: {
        int seen[BD_MAX_RANK] = {0};
        BD_TRY(bd_attr_ints(n, "perm", p->perm, BD_MAX_RANK, &p->n_perm, e));
        for (int i = 0; i < p->n_perm; i++) {
            if (p->perm[i] < 0 || p->perm[i] >= p->n_perm || seen[p->perm[i]]) {
                st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                             "attribute 'perm' is not a permutation of 0..%d", p->n_perm - 1);
                goto fail;
            }
            seen[p->perm[i]] = 1;
        }
        break;
    }
    case BD_OP_Gather: BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e)); break;
    case BD_OP_Pad: BD_TRY(parse_pad(n, p, e)); break;
    case BD_OP_DepthToSpace:
    case BD_OP_SpaceToDepth: {
        const char *mode;
        int has_mode = n->op == BD_OP_DepthToSpace ? n->opset >= 11 : n->opset >= 28;
        if (!bd_node_attr(n, "blocksize")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'blocksize' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "blocksize", 0, &p->blocksize, e));
        if (p->blocksize < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'blocksize' must be positive, not %lld",
                         (long long)p->blocksize);
            goto fail;
        }
        BD_TRY(bd_attr_string(n, "mode", "DCR", &mode, e));
        if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'mode' must be DCR or CRD, not '%s'", mode);
            goto fail;
        }
        p->crd = has_mode && strcmp(mode, "CRD") == 0;
        break;
    }
    case BD_OP_CenterCropPad:
        p->n_crop_axes = -1;
        if (bd_node_attr(n, "axes")) BD_TRY(bd_attr_ints(n, "axes", p->crop_axes, BD_MAX_RANK, &p->n_crop_axes, e));
        break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

braid_status bd_slice_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *start,
                              int64_t *step, int64_t *len, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int64_t s[BD_MAX_RANK], t[BD_MAX_RANK], ax[BD_MAX_RANK], sp[BD_MAX_RANK];
    int ns, nt, na = -1, nsp = -1, r = in[0].rank, seen[BD_MAX_RANK] = {0};
    braid_status st;
    for (int d = 0; d < r; d++) start[d] = 0, step[d] = 1, len[d] = in[0].dims[d];
    if (n->opset < 10) {
        ns = p->n_starts, nt = p->n_ends, na = p->n_axes;
        memcpy(s, p->starts, sizeof s), memcpy(t, p->ends, sizeof t), memcpy(ax, p->axes, sizeof ax);
    } else {
        if ((st = bd_const_ints(&in[1], "starts", s, BD_MAX_RANK, &ns, e))) return st;
        if ((st = bd_const_ints(&in[2], "ends", t, BD_MAX_RANK, &nt, e))) return st;
        if (n_in > 3 && in[3].dtype && (st = bd_const_ints(&in[3], "axes", ax, BD_MAX_RANK, &na, e)))
            return st;
        if (n_in > 4 && in[4].dtype && (st = bd_const_ints(&in[4], "steps", sp, BD_MAX_RANK, &nsp, e)))
            return st;
    }
    if (nt != ns || (na >= 0 && na != ns) || (nsp >= 0 && nsp != ns))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL,
                       "starts (%d values), ends (%d), axes (%d) and steps (%d) must have the same "
                       "length", ns, nt, na, nsp);
    for (int i = 0; i < ns; i++) {
        int d;
        if ((st = bd_axis(na >= 0 ? ax[i] : i, r, &d, e))) return st;
        if (seen[d]) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %d is sliced twice", d);
        seen[d] = 1;
        int64_t k = nsp >= 0 ? sp[i] : 1, dim = in[0].dims[d];
        if (k == 0) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "step of axis %d is 0", d);
        int64_t b = s[i] < 0 ? s[i] + dim : s[i], en = t[i] < 0 ? t[i] + dim : t[i];
        if (k > 0) {
            b = clamp64(b, 0, dim), en = clamp64(en, 0, dim);
            len[d] = en > b ? (en - b - 1) / k + 1 : 0;
        } else {
            b = clamp64(b, 0, dim - 1), en = clamp64(en, -1, dim - 1);
            uint64_t mag = (uint64_t)(-(k + 1)) + 1; /* |k| without overflow at INT64_MIN */
            len[d] = b > en ? (int64_t)((uint64_t)(b - en - 1) / mag) + 1 : 0;
        }
        start[d] = len[d] ? b : 0;
        step[d] = k;
    }
    return BRAID_OK;
}

braid_status bd_slice_view(const bd_node *n, const bd_tensor *in, int n_in, const bd_tensor *out, int64_t *offset,
                           int64_t *strides, bd_err *e)
{
    int64_t start[BD_MAX_RANK], step[BD_MAX_RANK], len[BD_MAX_RANK], s = 1;
    braid_status st = bd_slice_resolve(n, in, n_in, start, step, len, e);
    if (st) return st;
    *offset = 0;
    for (int d = in[0].rank - 1; d >= 0; d--) {
        if (len[d] != out->dims[d])
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "Slice output dim %d is %lld, expected %lld", d,
                           (long long)out->dims[d], (long long)len[d]);
        *offset += start[d] * s;
        strides[d] = step[d] * s;
        s *= in[0].dims[d];
    }
    return BRAID_OK;
}

braid_status bd_concat_rows_of(const bd_node *n, const bd_tensor *whole, bd_concat_rows *r, bd_err *e)
{
    braid_status st = bd_axis(((const bd_layout_params *)n->params)->axis, whole->rank, &r->axis, e);
    if (st) return st;
    r->outer = 1;
    r->inner = (int64_t)bd_dtype_size(whole->dtype);
    for (int d = 0; d < r->axis; d++) r->outer *= whole->dims[d];
    for (int d = r->axis + 1; d < whole->rank; d++) r->inner *= whole->dims[d];
    r->row = whole->dims[r->axis] * r->inner;
    return BRAID_OK;
}

braid_status bd_pad_resolve(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads,
                            bd_err *e)
{
    const bd_layout_params *p = n->params;
    int64_t raw[2 * BD_MAX_RANK], ax[BD_MAX_RANK];
    int np, na = -1, r = in[0].rank, seen[BD_MAX_RANK] = {0};
    braid_status st;
    if (n->opset < 11) {
        np = p->n_pads;
        memcpy(raw, p->pads, sizeof raw);
    } else {
        if (n_in < 2 || !in[1].dtype)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "Pad from opset 11 needs its 'pads' input");
        if ((st = bd_const_ints(&in[1], "pads", raw, 2 * BD_MAX_RANK, &np, e))) return st;
        if (n->opset >= 18 && n_in > 3 && in[3].dtype &&
            (st = bd_const_ints(&in[3], "axes", ax, BD_MAX_RANK, &na, e)))
            return st;
    }
    if (na < 0) {
        na = r;
        for (int i = 0; i < r; i++) ax[i] = i;
    }
    if (np != 2 * na)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "pads has %d values, expected 2 x %d", np, na);
    for (int i = 0; i < 2 * r; i++) pads[i] = 0;
    for (int i = 0; i < na; i++) {
        int d;
        if ((st = bd_axis(ax[i], r, &d, e))) return st;
        if (seen[d]) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %d is padded twice", d);
        seen[d] = 1;
        pads[d] = raw[i];
        pads[r + d] = raw[na + i];
    }
    for (int d = 0; d < r; d++) {
        int64_t dim = in[0].dims[d], o = dim + pads[d] + pads[r + d];
        if (o < 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "pads %lld and %lld crop more than the %lld values of "
                           "axis %d", (long long)pads[d], (long long)pads[r + d], (long long)dim, d);
        if (dim == 0 && o > 0 && p->pad_mode != BD_PADMODE_CONSTANT)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "axis %d is empty: only constant padding can grow it", d);
    }
    return BRAID_OK;
}

void bd_pad_value_bytes(int dtype, float v, unsigned char *b)
{
    memset(b, 0, 16);
    switch (dtype) {
    case BRAID_DTYPE_FLOAT: memcpy(b, &v, 4); break;
    case BRAID_DTYPE_DOUBLE: { double d = v; memcpy(b, &d, 8); break; }
    case BRAID_DTYPE_FLOAT16: { uint16_t h = bd_float_to_half(v); memcpy(b, &h, 2); break; }
    case BRAID_DTYPE_BOOL: b[0] = v != 0; break;
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: { int8_t t = (int8_t)v; memcpy(b, &t, 1); break; }
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2: { uint8_t t = (uint8_t)v; memcpy(b, &t, 1); break; }
    case BRAID_DTYPE_INT16: { int16_t t = (int16_t)v; memcpy(b, &t, 2); break; }
    case BRAID_DTYPE_UINT16: { uint16_t t = (uint16_t)v; memcpy(b, &t, 2); break; }
    case BRAID_DTYPE_INT32: { int32_t t = (int32_t)v; memcpy(b, &t, 4); break; }
    case BRAID_DTYPE_UINT32: { uint32_t t = (uint32_t)v; memcpy(b, &t, 4); break; }
    case BRAID_DTYPE_INT64: { int64_t t = (int64_t)v; memcpy(b, &t, 8); break; }
    case BRAID_DTYPE_UINT64: { uint64_t t = (uint64_t)v; memcpy(b, &t, 8); break; }
    default:
        if (bd_dtype_is_narrow_float(dtype)) bd_float_to_narrow(dtype, b, 0, v);
        break;
    }
}

braid_status bd_center_crop_pads(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int64_t shp[BD_MAX_RANK];
    int cnt, r = in[0].rank, seen[BD_MAX_RANK] = {0};
    braid_status st;
    if (n_in < 2) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'shape' is missing");
    if ((st = bd_const_ints(&in[1], "shape", shp, BD_MAX_RANK, &cnt, e))) return st;
    int na = p->n_crop_axes >= 0 ? p->n_crop_axes : r;
    if (cnt != na)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'shape' has %d values for %d axes", cnt, na);
    for (int i = 0; i < 2 * r; i++) pads[i] = 0;
    for (int i = 0; i < na; i++) {
        int d;
        if ((st = bd_axis(p->n_crop_axes >= 0 ? p->crop_axes[i] : i, r, &d, e))) return st;
        if (seen[d]) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "axis %d appears twice in 'axes'", d);
        seen[d] = 1;
        if (shp[i] < 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'shape' has a negative size %lld", (long long)shp[i]);
        /* The window starts half the difference (rounded down) into the
         * larger side; the odd element goes after. */
        int64_t diff = shp[i] - in[0].dims[d], mag = diff < 0 ? -diff : diff, before = mag / 2;
        pads[d] = diff < 0 ? -before : before;
        pads[r + d] = diff < 0 ? -(mag - before) : mag - before;
    }
    return BRAID_OK;
}

braid_status bd_layout_pads(const bd_node *n, const bd_tensor *in, int n_in, int64_t *pads, bd_err *e)
{
    return n->op == BD_OP_CenterCropPad ? bd_center_crop_pads(n, in, n_in, pads, e)
                                        : bd_pad_resolve(n, in, n_in, pads, e);
}

braid_status bd_split_resolve(const bd_node *n, const bd_tensor *in, int n_in, int *axis,
                              int64_t *sizes, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int k = n->n_out, cnt;
    braid_status st = bd_axis(p->axis, in[0].rank, axis, e);
    if (st) return st;
    int64_t dim = in[0].dims[*axis], sum = 0;
    if ((n->opset >= 13 || n->opset < 2) && n_in > 1 && in[1].dtype) {
        if (in[1].data && bd_numel(&in[1]) != k)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'split' has %lld values for %d outputs",
                           (long long)bd_numel(&in[1]), k);
        if ((st = bd_const_ints(&in[1], "split", sizes, k, &cnt, e))) return st;
    } else if (n->opset < 13 && p->n_split >= 0) {
        if (p->n_split != k)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'split' has %d values for %d outputs",
                           p->n_split, k);
        memcpy(sizes, p->split, (size_t)k * sizeof *sizes);
    } else if (p->num_outputs > 0) {
        int64_t chunk = BD_CEIL_DIV(dim, k);
        for (int i = 0; i < k; i++) sizes[i] = i < k - 1 ? chunk : dim - chunk * (k - 1);
    } else {
        if (dim % k)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "axis %d of size %lld does not split into %d equal parts",
                           *axis, (long long)dim, k);
        for (int i = 0; i < k; i++) sizes[i] = dim / k;
    }
    for (int i = 0; i < k; i++) {
        if (sizes[i] < 0)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "split size %d is negative (%lld) for axis %d of size %lld",
                           i, (long long)sizes[i], *axis, (long long)dim);
        sum += sizes[i];
    }
    if (sum != dim)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "split sizes add up to %lld, axis %d has size %lld",
                       (long long)sum, *axis, (long long)dim);
    return BRAID_OK;
}

static void copy_shape(const bd_tensor *from, bd_tensor *to)
{
    to->rank = from->rank;
    memcpy(to->dims, from->dims, sizeof to->dims);
}

static braid_status infer_concat(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int a;
    char sa[160], sb[160];
    braid_status st = bd_axis(p->axis, in[0].rank, &a, e);
    if (st) return st;
    if (in[0].rank == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot concatenate scalars");
    copy_shape(&in[0], out);
    out->dims[a] = 0;
    for (int i = 0; i < n->n_in; i++) {
        int same = in[i].rank == in[0].rank;
        for (int d = 0; same && d < in[0].rank; d++) same = d == a || in[i].dims[d] == in[0].dims[d];
        if (in[i].dtype != in[0].dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d is %s, input 0 is %s", i,
                           bd_dtype_name(in[i].dtype), bd_dtype_name(in[0].dtype));
        if (!same)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d of shape %s does not fit input 0 of shape "
                           "%s along axis %d", i, bd_shape_str(&in[i], sa, sizeof sa),
                           bd_shape_str(&in[0], sb, sizeof sb), a);
        out->dims[a] += in[i].dims[a];
    }
    return BRAID_OK;
}

static braid_status infer_transpose(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int perm[BD_MAX_RANK];
    if (p->n_perm && p->n_perm != in[0].rank)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "attribute 'perm' has %d values for an input of rank %d",
                       p->n_perm, in[0].rank);
    bd_transpose_perm(p, in[0].rank, perm);
    out->rank = in[0].rank;
    for (int i = 0; i < out->rank; i++) out->dims[i] = in[0].dims[perm[i]];
    return BRAID_OK;
}

static braid_status infer_gather(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int a, r = in[0].rank, q = in[1].rank;
    braid_status st = bd_expect_dtype(&in[1], "input 'indices'", e, BRAID_DTYPE_INT64,
                                      BRAID_DTYPE_INT32, 0);
    if (st || (st = bd_axis(p->axis, r, &a, e))) return st;
    if (r == 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "cannot gather from a scalar");
    if (r - 1 + q > BD_MAX_RANK)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "the output would have rank %d, braid accepts at most %d",
                       r - 1 + q, BD_MAX_RANK);
    out->rank = r - 1 + q;
    for (int i = 0; i < a; i++) out->dims[i] = in[0].dims[i];
    for (int i = 0; i < q; i++) out->dims[a + i] = in[1].dims[i];
    for (int i = a + 1; i < r; i++) out->dims[q + i - 1] = in[0].dims[i];
    return BRAID_OK;
}

static braid_status infer_expand_tile(const bd_node *n, const bd_tensor *in, bd_tensor *out,
                                      bd_err *e)
{
    int64_t v[BD_MAX_RANK];
    int cnt;
    char sa[160];
    const char *what = n->op == BD_OP_Expand ? "shape" : "repeats";
    braid_status st = bd_const_ints(&in[1], what, v, BD_MAX_RANK, &cnt, e);
    if (st) return st;
    bd_tensor t = {.dtype = BRAID_DTYPE_INT64, .rank = cnt};
    for (int i = 0; i < cnt; i++) {
        if (v[i] < 0)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input '%s' has a negative value %lld", what,
                           (long long)v[i]);
        t.dims[i] = v[i];
    }
    if (n->op == BD_OP_Expand) return bd_broadcast_shape(&in[0], &t, out, e);
    if (cnt != in[0].rank)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'repeats' has %d values for an input of shape %s",
                       cnt, bd_shape_str(&in[0], sa, sizeof sa));
    out->rank = cnt;
    for (int i = 0; i < cnt; i++) out->dims[i] = in[0].dims[i] * v[i];
    return BRAID_OK;
}

static braid_status infer_pad(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    int64_t pads[2 * BD_MAX_RANK];
    int r = in[0].rank;
    braid_status st = bd_pad_resolve(n, in, n->n_in, pads, e);
    if (st) return st;
    if (has_input(n, in, 2) && bd_numel(&in[2]) > 0 && in[2].dtype != in[0].dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'constant_value' is %s, the data is %s",
                       bd_dtype_name(in[2].dtype), bd_dtype_name(in[0].dtype));
    float v = ((const bd_layout_params *)n->params)->pad_value;
    int dt = in[0].dtype;
    if (n->opset < 11 && dt != BRAID_DTYPE_FLOAT && dt != BRAID_DTYPE_DOUBLE && dt != BRAID_DTYPE_FLOAT16 &&
        !bd_dtype_is_narrow_float(dt) && !(v >= -9.2e18f && v <= 9.2e18f))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'value' %g has no %s value", v, bd_dtype_name(dt));
    out->rank = r;
    for (int d = 0; d < r; d++) out->dims[d] = in[0].dims[d] + pads[d] + pads[r + d];
    return BRAID_OK;
}

static braid_status infer_space_depth(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_layout_params *p = n->params;
    int64_t b = p->blocksize;
    char sa[160];
    if (in[0].rank != 4)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the input must have rank 4 (NCHW), not %d", in[0].rank);
    const int64_t *x = in[0].dims;
    if (n->op == BD_OP_DepthToSpace && x[1] % (b * b))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "%lld channels do not divide by blocksize^2 = %lld",
                       (long long)x[1], (long long)(b * b));
    if (n->op == BD_OP_SpaceToDepth && (x[2] % b || x[3] % b))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the spatial dims of %s do not divide by blocksize %lld",
                       bd_shape_str(&in[0], sa, sizeof sa), (long long)b);
    out->rank = 4;
    out->dims[0] = x[0];
    if (n->op == BD_OP_DepthToSpace) {
        out->dims[1] = x[1] / (b * b), out->dims[2] = x[2] * b, out->dims[3] = x[3] * b;
    } else {
        out->dims[1] = x[1] * b * b, out->dims[2] = x[2] / b, out->dims[3] = x[3] / b;
    }
    return BRAID_OK;
}

braid_status bd_layout_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    braid_status st = BRAID_OK;
    int64_t *sizes = NULL;
    if (in[0].rank < 0) return BD_FAIL(e, BRAID_ERR_SHAPE, "the input's rank is not known");
    if (bd_dtype_size(in[0].dtype) == 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "dtype %s is not supported", bd_dtype_name(in[0].dtype));
    for (int i = 0; i < n->n_out; i++) out[i].dtype = in[0].dtype;
    switch (n->op) {
    case BD_OP_Concat: return infer_concat(n, in, out, e);
    case BD_OP_Transpose: return infer_transpose(n, in, out, e);
    case BD_OP_Gather: return infer_gather(n, in, out, e);
    case BD_OP_Expand:
    case BD_OP_Tile: return infer_expand_tile(n, in, out, e);
    case BD_OP_Pad: return infer_pad(n, in, out, e);
    case BD_OP_DepthToSpace:
    case BD_OP_SpaceToDepth: return infer_space_depth(n, in, out, e);
    case BD_OP_CenterCropPad: {
        int64_t pads[2 * BD_MAX_RANK];
        int r = in[0].rank;
        braid_status cst = bd_center_crop_pads(n, in, n->n_in, pads, e);
        if (cst) return cst;
        out->rank = r;
        for (int d = 0; d < r; d++) out->dims[d] = in[0].dims[d] + pads[d] + pads[r + d];
        return BRAID_OK;
    }
    case BD_OP_Slice: {
        int64_t start[BD_MAX_RANK], step[BD_MAX_RANK];
        out->rank = in[0].rank;
        return bd_slice_resolve(n, in, n->n_in, start, step, out->dims, e);
    }
    case BD_OP_Split: {
        int a;
        sizes = bd_malloc((size_t)n->n_out * sizeof *sizes);
        BD_CHECK_ALLOC(e, sizes);
        BD_TRY(bd_split_resolve(n, in, n->n_in, &a, sizes, e));
        for (int i = 0; i < n->n_out; i++) {
            copy_shape(&in[0], &out[i]);
            out[i].dims[a] = sizes[i];
        }
        break;
    }
    default:
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the layout family", n->op_type);
    }
fail:
    bd_free(sizes);
    return st;
}

double bd_layout_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out) { return 0; }
