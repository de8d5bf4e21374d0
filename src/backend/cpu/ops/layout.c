/* layout.c: CPU kernels of the layout op family. Every op moves whole
 * elements of any fixed-size dtype: copies work on bytes (the element size),
 * never on the dtype's values. */
#include "backend/cpu/cpu_ops.h"
#include "ops/layout.h"

#include <string.h>

/* Row strides in elements of a contiguous tensor. */
static void contiguous_strides(const bd_tensor *t, int64_t *strides)
{
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) strides[d] = s, s *= t->dims[d];
}

/* Copies n elements of es bytes from src (stride sst bytes) to dst (stride
 * dst_st bytes). The fixed-size cases let the compiler use plain loads. */
#define COPY_ELEMS(ES)                                                                             \
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * dst_st, src + i * sst, ES);                  \
    break;
static void copy_elems(char *dst, int64_t dst_st, const char *src, int64_t sst, int64_t n, size_t es)
{
    if (sst == (int64_t)es && dst_st == (int64_t)es) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1: COPY_ELEMS(1)
    case 2: COPY_ELEMS(2)
    case 4: COPY_ELEMS(4)
    case 8: COPY_ELEMS(8)
    default: COPY_ELEMS(es)
    }
}
#undef COPY_ELEMS

/* One plane of a transpose: dst (m x kk, contiguous) from src, where
 * element (i, j) is at src + i * s0 + j * s1 bytes; copied in square tiles
 * so that both sides stay in cache. */
#define TILE_ROWS(ES)                                                                              \
    for (int64_t i = i0; i < i1; i++) {                                                            \
        char *d_ = dst + (i * kk + j0) * (ES);                                                     \
        const char *s_ = src + i * s0 + j0 * s1;                                                   \
        for (int64_t j = 0; j < j1 - j0; j++) memcpy(d_ + j * (ES), s_ + j * s1, ES);              \
    }                                                                                              \
    break;
static void transpose_plane(char *dst, const char *src, int64_t m, int64_t kk, int64_t s0,
                            int64_t s1, size_t es)
{
    enum { TILE = 32 };
    for (int64_t i0 = 0; i0 < m; i0 += TILE)
        for (int64_t j0 = 0; j0 < kk; j0 += TILE) {
            int64_t i1 = BD_MIN(m, i0 + TILE), j1 = BD_MIN(kk, j0 + TILE);
            switch (es) {
            case 1: TILE_ROWS(1)
            case 2: TILE_ROWS(2)
            case 4: TILE_ROWS(4)
            case 8: TILE_ROWS(8)
            default: TILE_ROWS(es)
            }
        }
}
#undef TILE_ROWS

/* Fills a contiguous, row-major dst of the given dims: the element at index
 * (i_0, ..., i_r-1) comes from src + sum(i_d * st[d]) bytes (any strides:
 * negative for reversed slices, 0 for broadcast). Dims are first merged where
 * the strides allow; a non-contiguous inner dim is copied in tiles so that a
 * transpose reads and writes cache lines, not single elements. */
static void strided_copy(char *dst, const char *src, int rank, const int64_t *dims_in,
                         const int64_t *st_in, size_t es)
{
    int64_t dims[BD_MAX_RANK], st[BD_MAX_RANK], idx[BD_MAX_RANK] = {0};
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims_in[d] == 0) return;
        if (dims_in[d] == 1) continue;
        if (r > 0 && st[r - 1] == st_in[d] * dims_in[d]) {
            dims[r - 1] *= dims_in[d];
            st[r - 1] = st_in[d];
        } else {
            dims[r] = dims_in[d], st[r] = st_in[d], r++;
        }
    }
    if (r == 0) { memcpy(dst, src, es); return; }
    int tiled = r >= 2 && st[r - 1] != (int64_t)es && dims[r - 2] >= 8 && dims[r - 1] >= 8;
    int outer_r = tiled ? r - 2 : r - 1;
    int64_t rows = 1, m = tiled ? dims[r - 2] : 1, kk = dims[r - 1];
    for (int d = 0; d < outer_r; d++) rows *= dims[d];
    int64_t off = 0; /* bytes from src of the current row */
    for (int64_t row = 0; row < rows; row++) {
        if (!tiled) {
            copy_elems(dst, (int64_t)es, src + off, st[r - 1], kk, es);
            dst += kk * (int64_t)es;
        } else {
            transpose_plane(dst, src + off, m, kk, st[r - 2], st[r - 1], es);
            dst += m * kk * (int64_t)es;
        }
        for (int d = outer_r - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < dims[d]) break;
            off -= st[d] * dims[d];
            idx[d] = 0;
        }
    }
}

static braid_status run_concat_split(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_tensor *whole = n->op == BD_OP_Concat ? &k->out[0] : &k->in[0];
    int parts = n->op == BD_OP_Concat ? k->n_in : k->n_out;
    bd_concat_rows r;
    braid_status st = bd_concat_rows_of(n, whole, &r, k->err);
    if (st) return st;
    int64_t off = 0;
    for (int i = 0; i < parts; i++) {
        const bd_tensor *part = n->op == BD_OP_Concat ? &k->in[i] : &k->out[i];
        int64_t chunk = bd_concat_chunk(&r, part);
        if (chunk && part->data) {
            char *w = whole->data;
            char *p = part->data;
            for (int64_t o = 0; o < r.outer; o++) {
                if (n->op == BD_OP_Concat) memcpy(w + o * r.row + off, p + o * chunk, (size_t)chunk);
                else memcpy(p + o * chunk, w + o * r.row + off, (size_t)chunk);
            }
        }
        off += chunk;
    }
    return BRAID_OK;
}

static braid_status run_slice(const bd_kernel *k)
{
    int64_t offset, str[BD_MAX_RANK];
    const bd_tensor *x = &k->in[0];
    int64_t es = (int64_t)bd_dtype_size(x->dtype);
    braid_status st = bd_slice_view(k->node, k->in, k->n_in, &k->out[0], &offset, str, k->err);
    if (st) return st;
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    for (int d = 0; d < x->rank; d++) str[d] *= es;
    strided_copy(k->out[0].data, (const char *)x->data + offset * es, x->rank, k->out[0].dims, str, (size_t)es);
    return BRAID_OK;
}

static braid_status run_transpose(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    int64_t str[BD_MAX_RANK], pst[BD_MAX_RANK];
    int perm[BD_MAX_RANK];
    size_t es = bd_dtype_size(x->dtype);
    if (bd_numel(x) == 0) return BRAID_OK;
    bd_transpose_perm(k->node->params, x->rank, perm);
    contiguous_strides(x, str);
    for (int i = 0; i < x->rank; i++) pst[i] = str[perm[i]] * (int64_t)es;
    strided_copy(k->out[0].data, x->data, x->rank, k->out[0].dims, pst, es);
    return BRAID_OK;
}

static braid_status run_expand(const bd_kernel *k)
{
    int64_t str[BD_MAX_RANK];
    size_t es = bd_dtype_size(k->in[0].dtype);
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    bd_broadcast_strides(&k->in[0], &k->out[0], str);
    for (int d = 0; d < k->out[0].rank; d++) str[d] *= (int64_t)es;
    strided_copy(k->out[0].data, k->in[0].data, k->out[0].rank, k->out[0].dims, str, es);
    return BRAID_OK;
}

static braid_status run_gather(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    size_t es = bd_dtype_size(x->dtype);
    int a;
    braid_status st = bd_axis(((const bd_layout_params *)k->node->params)->axis, x->rank, &a, k->err);
    if (st) return st;
    int64_t outer = 1, inner = (int64_t)es, n_idx = bd_numel(ix), dim = x->dims[a];
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int d = a + 1; d < x->rank; d++) inner *= x->dims[d];
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    for (int64_t j = 0; j < n_idx; j++) {
        int64_t v = ix->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)ix->data)[j]
                                                   : ((const int32_t *)ix->data)[j];
        if (v < -dim || v >= dim)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld is out of range for axis %d of size %lld", (long long)v, a,
                           (long long)dim);
    }
    char *dst = k->out[0].data;
    const char *src = x->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < n_idx; j++, dst += inner) {
            int64_t v = ix->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)ix->data)[j]
                                                       : ((const int32_t *)ix->data)[j];
            if (v < 0) v += dim;
            memcpy(dst, src + (o * dim + v) * inner, (size_t)inner);
        }
    return BRAID_OK;
}

/* Tile: fills the block of dim d (first repetition recursively, from src),
 * then copies that block repeats[d] - 1 times after itself. */
static void tile_block(int d, const bd_tensor *x, const int64_t *rep, const int64_t *ist,
                       const int64_t *ost, const char *src, char *dst, size_t es)
{
    int64_t n = x->dims[d];
    if (d == x->rank - 1) memcpy(dst, src, (size_t)n * es);
    else
        for (int64_t i = 0; i < n; i++)
            tile_block(d + 1, x, rep, ist, ost, src + i * ist[d], dst + i * ost[d], es);
    int64_t blk = n * ost[d];
    for (int64_t t = 1; t < rep[d]; t++) memcpy(dst + t * blk, dst, (size_t)blk);
}

static braid_status run_tile(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0], *y = &k->out[0];
    int64_t rep[BD_MAX_RANK], ist[BD_MAX_RANK], ost[BD_MAX_RANK];
    size_t es = bd_dtype_size(x->dtype);
    if (bd_numel(y) == 0) return BRAID_OK;
    if (x->rank == 0) { memcpy(y->data, x->data, es); return BRAID_OK; }
    contiguous_strides(x, ist);
    contiguous_strides(y, ost);
    for (int d = 0; d < x->rank; d++) {
        rep[d] = y->dims[d] / x->dims[d];
        ist[d] *= (int64_t)es, ost[d] *= (int64_t)es;
    }
    tile_block(0, x, rep, ist, ost, x->data, y->data, es);
    return BRAID_OK;
}

static braid_status run_pad(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_layout_params *p = n->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    int64_t pads[2 * BD_MAX_RANK], ist[BD_MAX_RANK], idx[BD_MAX_RANK] = {0};
    unsigned char cv[16] = {0};
    size_t es = bd_dtype_size(x->dtype);
    int r = x->rank;
    braid_status st = bd_layout_pads(n, k->in, k->n_in, pads, k->err);
    if (st) return st;
    if (bd_numel(y) == 0) return BRAID_OK;
    if (r == 0) { memcpy(y->data, x->data, es); return BRAID_OK; }
    if (n->opset >= 11 && k->n_in > 2 && k->in[2].dtype && bd_numel(&k->in[2]) > 0)
        memcpy(cv, k->in[2].data, es);
    else if (n->opset < 11)
        bd_pad_value_bytes(x->dtype, p->pad_value, cv);
    contiguous_strides(x, ist);
    int64_t nl = y->dims[r - 1], pb = pads[r - 1], inl = x->dims[r - 1], rows = bd_numel(y) / nl;
    int64_t lo = BD_MAX(0, BD_MIN(pb, nl)), hi = BD_MAX(lo, BD_MIN(pb + inl, nl));
    char *dst = y->data;
    for (int64_t row = 0; row < rows; row++, dst += nl * (int64_t)es) {
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < r - 1 && inside; d++) {
            int64_t i = bd_pad_source(idx[d] - pads[d], x->dims[d], p->pad_mode);
            if (i < 0) inside = 0;
            else off += i * ist[d];
        }
        const char *srow = (const char *)x->data + off * (int64_t)es;
        for (int64_t j = 0; j < nl; j++) {
            if (inside && j == lo && hi > lo) {
                memcpy(dst + j * (int64_t)es, srow + (lo - pb) * (int64_t)es, (size_t)(hi - lo) * es);
                j = hi - 1;
                continue;
            }
            int64_t i = inside ? bd_pad_source(j - pb, inl, p->pad_mode) : -1;
            memcpy(dst + j * (int64_t)es, i < 0 ? (const char *)cv : srow + i * (int64_t)es, es);
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < y->dims[d]) break;
            idx[d] = 0;
        }
    }
    return BRAID_OK;
}

static braid_status run_space_depth(const bd_kernel *k)
{
    const bd_layout_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int64_t dims[6], st[6];
    size_t es = bd_dtype_size(x->dtype);
    if (bd_numel(x) == 0) return BRAID_OK;
    bd_space_depth_view(k->node->op, p->blocksize, p->crd, x->dims, dims, st);
    for (int d = 0; d < 6; d++) st[d] *= (int64_t)es;
    strided_copy(k->out[0].data, x->data, 6, dims, st, es);
    return BRAID_OK;
}

braid_status bd_cpu_layout(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_Concat:
    case BD_OP_Split: return run_concat_split(k);
    case BD_OP_Slice: return run_slice(k);
    case BD_OP_Transpose: return run_transpose(k);
    case BD_OP_Gather: return run_gather(k);
    case BD_OP_Expand: return run_expand(k);
    case BD_OP_Tile: return run_tile(k);
    case BD_OP_Pad:
    case BD_OP_CenterCropPad: return run_pad(k);
    case BD_OP_DepthToSpace:
    case BD_OP_SpaceToDepth: return run_space_depth(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the layout family",
                       k->node->op_type);
    }
}
