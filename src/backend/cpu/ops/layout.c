/* layout.c: CPU kernels of the layout op family. Every op moves whole
 * elements of any fixed-size dtype: copies work on bytes (the element size),
 * never on the dtype's values. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
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
 * element (i, j) is at src + i * s0 + j * s1 bytes. Copied in tiles of 8 x 64
 * elements: the side whose larger stride (in src or dst) is the larger gets
 * the 8, and is the outer loop, so that a tile touches at most 8 lines that
 * are a power of two apart (no more than the cache's ways) and the inner loop
 * runs along a short stride on both sides. */
#define TILE_COPY(ES, OUTER, INNER, DOFF, SOFF)                                                    \
    for (int64_t OUTER = OUTER##0; OUTER < OUTER##1; OUTER++)                                      \
        for (int64_t INNER = INNER##0; INNER < INNER##1; INNER++)                                  \
            memcpy(dst + (DOFF) * (ES), src + (SOFF), ES);
static void transpose_plane(char *dst, const char *src, int64_t m, int64_t kk, int64_t s0, int64_t s1, size_t es)
{
    enum { SHORT = 8, LONG = 256 };
    int64_t a0 = s0 < 0 ? -s0 : s0, a1 = s1 < 0 ? -s1 : s1;
    int i_outer = BD_MAX(a0, kk * (int64_t)es) >= BD_MAX(a1, (int64_t)es);
    int64_t ti = i_outer ? SHORT : LONG, tj = i_outer ? LONG : SHORT;
    for (int64_t bi = 0; bi < m; bi += ti)
        for (int64_t bj = 0; bj < kk; bj += tj) {
            int64_t i0 = bi, i1 = BD_MIN(m, bi + ti), j0 = bj, j1 = BD_MIN(kk, bj + tj);
#define PLANE(ES)                                                                                  \
    if (i_outer) { TILE_COPY(ES, i, j, i * kk + j, i * s0 + j * s1) }                              \
    else { TILE_COPY(ES, j, i, i * kk + j, i * s0 + j * s1) }                                      \
    break;
            switch (es) {
            case 1: PLANE(1)
            case 2: PLANE(2)
            case 4: PLANE(4)
            case 8: PLANE(8)
            default: PLANE(es)
            }
#undef PLANE
        }
}
#undef TILE_COPY

/* A contiguous, row-major dst of the given dims whose element (i_0, ...,
 * i_r-1) comes from src + sum(i_d * st[d]) bytes (any strides: negative for
 * reversed slices, 0 for broadcast), with the dims merged where the strides
 * allow. Rows along the last dim are copied as runs; when the last dim does
 * not step by one element in src, the last two dims are copied as transposed
 * planes (tiled). Rows or planes split over the threads. */
typedef struct strided_job {
    char *dst;
    const char *src;
    int r, tiled, outer_r;
    int64_t dims[BD_MAX_RANK], st[BD_MAX_RANK];
    int64_t m, kk, unit; /* unit: bytes of dst per row or plane */
    size_t es;
} strided_job;

static void strided_rows(void *vj, int64_t begin, int64_t end)
{
    const strided_job *j = vj;
    int64_t idx[BD_MAX_RANK], off = 0, rem = begin;
    for (int d = j->outer_r - 1; d >= 0; d--) { /* the odometer at row `begin` */
        idx[d] = rem % j->dims[d];
        rem /= j->dims[d];
        off += idx[d] * j->st[d];
    }
    char *dst = j->dst + begin * j->unit;
    for (int64_t row = begin; row < end; row++, dst += j->unit) {
        if (!j->tiled) copy_elems(dst, (int64_t)j->es, j->src + off, j->st[j->r - 1], j->kk, j->es);
        else transpose_plane(dst, j->src + off, j->m, j->kk, j->st[j->r - 2], j->st[j->r - 1], j->es);
        for (int d = j->outer_r - 1; d >= 0; d--) {
            off += j->st[d];
            if (++idx[d] < j->dims[d]) break;
            off -= j->st[d] * j->dims[d];
            idx[d] = 0;
        }
    }
}

static void strided_copy(int threads, char *dst, const char *src, int rank, const int64_t *dims_in,
                         const int64_t *st_in, size_t es)
{
    strided_job j = {.dst = dst, .src = src, .es = es};
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims_in[d] == 0) return;
        if (dims_in[d] == 1) continue;
        if (r > 0 && j.st[r - 1] == st_in[d] * dims_in[d]) {
            j.dims[r - 1] *= dims_in[d];
            j.st[r - 1] = st_in[d];
        } else {
            j.dims[r] = dims_in[d], j.st[r] = st_in[d], r++;
        }
    }
    if (r == 0) { memcpy(dst, src, es); return; }
    j.r = r;
    j.tiled = r >= 2 && j.st[r - 1] != (int64_t)es && j.dims[r - 2] >= 8;
    j.outer_r = j.tiled ? r - 2 : r - 1;
    j.m = j.tiled ? j.dims[r - 2] : 1;
    j.kk = j.dims[r - 1];
    j.unit = j.m * j.kk * (int64_t)es;
    int64_t rows = 1;
    for (int d = 0; d < j.outer_r; d++) rows *= j.dims[d];
    bd_parallel_for(threads, rows, BD_MAX(1, (1 << 16) / BD_MAX(1, j.unit)), strided_rows, &j);
}

/* Concat and Split as rows: row o of the whole holds every part's chunk of
 * row o side by side. Rows split over the threads; with few rows, each
 * chunk's bytes do. */
typedef struct cat_job {
    const bd_kernel *k;
    bd_concat_rows r;
    int parts, cat;
    char *dst;       /* the byte-split copy */
    const char *src;
} cat_job;

static void cat_rows(void *vj, int64_t begin, int64_t end)
{
    const cat_job *j = vj;
    const bd_kernel *k = j->k;
    char *w = j->cat ? k->out[0].data : k->in[0].data;
    int64_t off = 0;
    for (int i = 0; i < j->parts; i++) {
        const bd_tensor *part = j->cat ? &k->in[i] : &k->out[i];
        int64_t chunk = bd_concat_chunk(&j->r, part);
        char *p = part->data;
        for (int64_t o = begin; chunk && p && o < end; o++) {
            if (j->cat) memcpy(w + o * j->r.row + off, p + o * chunk, (size_t)chunk);
            else memcpy(p + o * chunk, w + o * j->r.row + off, (size_t)chunk);
        }
        off += chunk;
    }
}

static void copy_bytes(void *vj, int64_t begin, int64_t end)
{
    const cat_job *j = vj;
    memcpy(j->dst + begin, j->src + begin, (size_t)(end - begin));
}

static braid_status run_concat_split(const bd_kernel *k)
{
    const bd_node *n = k->node;
    cat_job j = {.k = k, .cat = n->op == BD_OP_Concat, .parts = n->op == BD_OP_Concat ? k->n_in : k->n_out};
    braid_status st = bd_concat_rows_of(n, j.cat ? &k->out[0] : &k->in[0], &j.r, k->err);
    if (st) return st;
    if (j.r.outer >= 4 * k->threads || k->threads == 1) {
        bd_parallel_for(k->threads, j.r.outer, BD_MAX(1, (1 << 16) / BD_MAX(1, j.r.row)), cat_rows, &j);
        return BRAID_OK;
    }
    int64_t off = 0;
    for (int i = 0; i < j.parts; i++) {
        const bd_tensor *part = j.cat ? &k->in[i] : &k->out[i];
        int64_t chunk = bd_concat_chunk(&j.r, part);
        for (int64_t o = 0; chunk && part->data && o < j.r.outer; o++) {
            char *w = (char *)(j.cat ? k->out[0].data : k->in[0].data) + o * j.r.row + off, *p = (char *)part->data + o * chunk;
            j.dst = j.cat ? w : p;
            j.src = j.cat ? p : w;
            bd_parallel_for(k->threads, chunk, 1 << 20, copy_bytes, &j);
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
    strided_copy(k->threads, k->out[0].data, (const char *)x->data + offset * es, x->rank, k->out[0].dims, str, (size_t)es);
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
    strided_copy(k->threads, k->out[0].data, x->data, x->rank, k->out[0].dims, pst, es);
    return BRAID_OK;
}

static braid_status run_expand(const bd_kernel *k)
{
    int64_t str[BD_MAX_RANK];
    size_t es = bd_dtype_size(k->in[0].dtype);
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    bd_broadcast_strides(&k->in[0], &k->out[0], str);
    for (int d = 0; d < k->out[0].rank; d++) str[d] *= (int64_t)es;
    strided_copy(k->threads, k->out[0].data, k->in[0].data, k->out[0].rank, k->out[0].dims, str, es);
    return BRAID_OK;
}

typedef struct gather_job {
    const char *src;
    const void *idx;
    int is64;
    char *dst;
    int64_t n_idx, dim, inner; /* inner: bytes of one slice */
} gather_job;

/* Rows t = (o, j) of the output: the slice of index j of outer block o. */
static void gather_rows(void *vj, int64_t begin, int64_t end)
{
    const gather_job *g = vj;
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / g->n_idx, j = t - o * g->n_idx;
        int64_t v = g->is64 ? ((const int64_t *)g->idx)[j] : ((const int32_t *)g->idx)[j];
        if (v < 0) v += g->dim;
        memcpy(g->dst + t * g->inner, g->src + (o * g->dim + v) * g->inner, (size_t)g->inner);
    }
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
    gather_job g = {x->data, ix->data, ix->dtype == BRAID_DTYPE_INT64, k->out[0].data, n_idx, dim, inner};
    bd_parallel_for(k->threads, outer * n_idx, BD_MAX(1, (1 << 16) / inner), gather_rows, &g);
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

typedef struct pad_job {
    const bd_tensor *x, *y;
    const int64_t *pads;
    int64_t ist[BD_MAX_RANK];
    int mode;
    size_t es;
    const unsigned char *cv;
} pad_job;

/* Rows [begin, end) of the output's last dim: the part inside the data is
 * one copy, the rest element by element (the constant or a mirrored index). */
static void pad_rows(void *vj, int64_t begin, int64_t end)
{
    const pad_job *j = vj;
    const bd_tensor *x = j->x, *y = j->y;
    int r = x->rank;
    int64_t es = (int64_t)j->es, idx[BD_MAX_RANK] = {0}, rem = begin;
    int64_t nl = y->dims[r - 1], pb = j->pads[r - 1], inl = x->dims[r - 1];
    int64_t lo = BD_MAX(0, BD_MIN(pb, nl)), hi = BD_MAX(lo, BD_MIN(pb + inl, nl));
    for (int d = r - 2; d >= 0; d--) idx[d] = rem % y->dims[d], rem /= y->dims[d];
    char *dst = (char *)y->data + begin * nl * es;
    for (int64_t row = begin; row < end; row++, dst += nl * es) {
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < r - 1 && inside; d++) {
            int64_t i = bd_pad_source(idx[d] - j->pads[d], x->dims[d], j->mode);
            if (i < 0) inside = 0;
            else off += i * j->ist[d];
        }
        const char *srow = (const char *)x->data + off * es;
        for (int64_t c = 0; c < nl; c++) {
            if (inside && c == lo && hi > lo) {
                memcpy(dst + c * es, srow + (lo - pb) * es, (size_t)((hi - lo) * es));
                c = hi - 1;
                continue;
            }
            int64_t i = inside ? bd_pad_source(c - pb, inl, j->mode) : -1;
            memcpy(dst + c * es, i < 0 ? (const char *)j->cv : srow + i * es, (size_t)es);
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < y->dims[d]) break;
            idx[d] = 0;
        }
    }
}

static braid_status run_pad(const bd_kernel *k)
{
    const bd_node *n = k->node;
    const bd_layout_params *p = n->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    int64_t pads[2 * BD_MAX_RANK];
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
    pad_job j = {.x = x, .y = y, .pads = pads, .mode = p->pad_mode, .es = es, .cv = cv};
    contiguous_strides(x, j.ist);
    int64_t nl = y->dims[r - 1];
    bd_parallel_for(k->threads, bd_numel(y) / nl, BD_MAX(1, (1 << 16) / (nl * (int64_t)es)), pad_rows, &j);
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
    strided_copy(k->threads, k->out[0].data, x->data, 6, dims, st, es);
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
