/* layout.cu: CUDA kernels of the layout op family (Concat, Split, Slice,
 * Transpose, Gather, Expand, Tile, Pad, DepthToSpace, SpaceToDepth,
 * CenterCropPad), mirroring src/backend/cpu/ops/layout.c. Every op moves
 * whole elements of any fixed-size dtype by width (1, 2, 4 or 8 bytes).
 * Transpose, Slice, Expand, DepthToSpace and SpaceToDepth are one strided
 * gather; Concat and Split are 2-D copies; CenterCropPad is a Pad. */
#include <limits.h>

#include "common.cuh"

extern "C" {
#include "ops/layout.h"
}

/* ---- kernels ------------------------------------------------------------- */

/* dst (contiguous, dims g.dims) from src at strides g.st[0] (any sign, 0 to
 * broadcast); src already points at the first element read. */
template <class T>
__global__ void k_strided(const T *__restrict__ src, T *__restrict__ dst, int64_t n, bd_cu_nd g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t off[1];
        bd_cu_offsets<1>(g, i, off);
        dst[i] = src[off[0]];
    }
}

/* Tile: output index i_d reads input index i_d % in_dims[d]. */
struct tile_geom {
    int rank;
    int64_t out[BD_MAX_RANK], in[BD_MAX_RANK], st[BD_MAX_RANK];
};
template <class T>
__global__ void k_tile(const T *__restrict__ src, T *__restrict__ dst, int64_t n, tile_geom g)
{
    BD_CU_LOOP(i, n)
    {
        int64_t rem = i, off = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            off += ((rem - q * g.out[d]) % g.in[d]) * g.st[d];
            rem = q;
        }
        dst[i] = src[off];
    }
}

/* Gather over (outer, dim, inner) elements into (outer, n_idx, inner);
 * negative indices wrap. An index out of range (which the CPU reports when
 * it can see the indices) writes 0 rather than read outside the input. */
template <class T, class TI>
__global__ void k_gather(const T *__restrict__ src, const TI *__restrict__ idx, T *__restrict__ dst,
                         int64_t n, int64_t n_idx, int64_t dim, int64_t inner)
{
    BD_CU_LOOP(e, n)
    {
        int64_t t = e / inner, i = e - t * inner;
        int64_t o = t / n_idx, j = t - o * n_idx;
        int64_t v = (int64_t)idx[j];
        if (v < 0) v += dim;
        dst[e] = v >= 0 && v < dim ? src[(o * dim + v) * inner + i] : (T)0;
    }
}

struct pad_geom {
    int rank, mode;
    int64_t out[BD_MAX_RANK], in[BD_MAX_RANK], st[BD_MAX_RANK], before[BD_MAX_RANK];
};
/* The constant is *cvp when given on the device, else cv. */
template <class T>
__global__ void k_pad(const T *__restrict__ src, T *__restrict__ dst, int64_t n, pad_geom g,
                      const T *cvp, T cv)
{
    T c = cvp ? *cvp : cv;
    BD_CU_LOOP(i, n)
    {
        int64_t rem = i, off = 0;
        bool inside = true;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            /* An empty input dim has nothing to reflect, wrap or repeat. */
            int64_t s = g.in[d] > 0 ? bd_pad_source(rem - q * g.out[d] - g.before[d], g.in[d], g.mode) : -1;
            if (s < 0) inside = false;
            else off += s * g.st[d];
            rem = q;
        }
        dst[i] = inside ? src[off] : c;
    }
}

/* ---- launchers ----------------------------------------------------------- */

#define LAUNCH_FAIL_IF_NOT(ok, k, es)                                                              \
    do {                                                                                           \
        if (!(ok))                                                                                 \
            return BD_FAIL((k)->err, BRAID_ERR_UNSUPPORTED,                                        \
                           "op %s with elements of %zu bytes is not implemented on CUDA",          \
                           (k)->node->op_type, (size_t)(es));                                      \
    } while (0)

/* dst (contiguous, dims) from src with element strides st. */
static braid_status strided_copy(const bd_cuda_kernel *k, void *dst, const void *src, int rank,
                                 const int64_t *dims, int64_t *st, size_t es)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= dims[d];
    if (n <= 0) return BRAID_OK;
    bd_cu_nd g;
    int64_t sts[BD_CU_MAX_IN][BD_MAX_RANK];
    for (int d = 0; d < rank; d++) sts[0][d] = st[d];
    bd_cu_nd_make(&g, rank, dims, 1, sts);
    if (g.rank == 1 && g.st[0][0] == 1) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(dst, src, (size_t)n * es, cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_strided<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)src, (T *)dst, n, g);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the strided copy kernel");
    return BRAID_OK;
}

static braid_status run_concat_split(const bd_cuda_kernel *k)
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
        if (chunk && r.outer && part->data) {
            /* outer rows of chunk bytes: pitch row in the whole, chunk in the part */
            int cat = n->op == BD_OP_Concat;
            char *dst = cat ? (char *)whole->data + off : (char *)part->data;
            const char *src = cat ? (const char *)part->data : (const char *)whole->data + off;
            size_t dp = (size_t)(cat ? r.row : chunk), sp = (size_t)(cat ? chunk : r.row);
            if (r.outer == 1 || chunk == r.row) /* one contiguous block */
                BD_CU_CHECK_CALL(k, cudaMemcpyAsync(dst, src, (size_t)(r.outer * chunk), cudaMemcpyDefault,
                                                    k->stream));
            else if (r.row > INT_MAX) /* beyond the largest pitch of a 2-D copy: row by row */
                for (int64_t o = 0; o < r.outer; o++)
                    BD_CU_CHECK_CALL(k, cudaMemcpyAsync(dst + o * dp, src + o * sp, (size_t)chunk,
                                                        cudaMemcpyDefault, k->stream));
            else
                BD_CU_CHECK_CALL(k, cudaMemcpy2DAsync(dst, dp, src, sp, (size_t)chunk, (size_t)r.outer,
                                                      cudaMemcpyDefault, k->stream));
        }
        off += chunk;
    }
    return BRAID_OK;
}

static braid_status run_slice(const bd_cuda_kernel *k)
{
    int64_t offset, str[BD_MAX_RANK];
    const bd_tensor *x = &k->in[0];
    size_t es = bd_dtype_size(x->dtype);
    bd_tensor hv[5];
    bd_cu_host_view(k, hv, 5);
    braid_status st = bd_slice_view(k->node, hv, k->n_in < 5 ? k->n_in : 5, &k->out[0], &offset, str, k->err);
    if (st) return st;
    if (bd_numel(&k->out[0]) == 0) return BRAID_OK;
    return strided_copy(k, k->out[0].data, (const char *)x->data + offset * (int64_t)es, x->rank, k->out[0].dims,
                        str, es);
}

static braid_status run_transpose(const bd_cuda_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    int64_t str[BD_MAX_RANK], pst[BD_MAX_RANK];
    int perm[BD_MAX_RANK];
    if (bd_numel(x) == 0) return BRAID_OK;
    bd_transpose_perm((const bd_layout_params *)k->node->params, x->rank, perm);
    bd_cu_contig_strides(x->rank, x->dims, str);
    for (int i = 0; i < x->rank; i++) pst[i] = str[perm[i]];
    return strided_copy(k, k->out[0].data, x->data, x->rank, k->out[0].dims, pst,
                        bd_dtype_size(x->dtype));
}

static braid_status run_expand(const bd_cuda_kernel *k)
{
    int64_t str[BD_MAX_RANK];
    const bd_tensor *y = &k->out[0];
    if (bd_numel(y) == 0) return BRAID_OK;
    bd_cu_bcast_strides(&k->in[0], y->rank, y->dims, str);
    return strided_copy(k, y->data, k->in[0].data, y->rank, y->dims, str,
                        bd_dtype_size(k->in[0].dtype));
}

static braid_status run_gather(const bd_cuda_kernel *k)
{
    const bd_tensor *x = &k->in[0], *ix = &k->in[1];
    size_t es = bd_dtype_size(x->dtype);
    int a;
    braid_status st = bd_axis(((const bd_layout_params *)k->node->params)->axis, x->rank, &a, k->err);
    if (st) return st;
    int64_t outer = 1, inner = 1, n_idx = bd_numel(ix), dim = x->dims[a];
    for (int d = 0; d < a; d++) outer *= x->dims[d];
    for (int d = a + 1; d < x->rank; d++) inner *= x->dims[d];
    int64_t n = bd_numel(&k->out[0]);
    if (n == 0) return BRAID_OK;
    if (ix->dtype != BRAID_DTYPE_INT64 && ix->dtype != BRAID_DTYPE_INT32)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                       "op Gather with indices of dtype %s is not implemented on CUDA",
                       bd_dtype_name(ix->dtype));
    /* Indices known on the host are checked as the CPU checks them. */
    const void *hix = k->host_in ? k->host_in[1].data : NULL;
    for (int64_t j = 0; hix && j < n_idx; j++) {
        int64_t v = ix->dtype == BRAID_DTYPE_INT64 ? ((const int64_t *)hix)[j] : ((const int32_t *)hix)[j];
        if (v < -dim || v >= dim)
            return BD_FAIL(k->err, BRAID_ERR_INVALID_ARGUMENT,
                           "index %lld is out of range for axis %d of size %lld", (long long)v, a,
                           (long long)dim);
    }
    (void)outer;
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        if (ix->dtype == BRAID_DTYPE_INT64)
            k_gather<T, int64_t><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
                (const T *)x->data, (const int64_t *)ix->data, (T *)k->out[0].data, n, n_idx, dim, inner);
        else
            k_gather<T, int32_t><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(
                (const T *)x->data, (const int32_t *)ix->data, (T *)k->out[0].data, n, n_idx, dim, inner);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the Gather kernel");
    return BRAID_OK;
}

static braid_status run_tile(const bd_cuda_kernel *k)
{
    const bd_tensor *x = &k->in[0], *y = &k->out[0];
    size_t es = bd_dtype_size(x->dtype);
    int64_t n = bd_numel(y);
    if (n == 0) return BRAID_OK;
    if (x->rank == 0) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(y->data, x->data, es, cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    tile_geom g = {};
    g.rank = x->rank;
    bd_cu_contig_strides(x->rank, x->dims, g.st);
    for (int d = 0; d < x->rank; d++) g.out[d] = y->dims[d], g.in[d] = x->dims[d];
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        k_tile<T><<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, (T *)y->data, n, g);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the Tile kernel");
    return BRAID_OK;
}

static braid_status run_pad(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    const bd_layout_params *p = (const bd_layout_params *)n->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    int64_t pads[2 * BD_MAX_RANK];
    unsigned char cv[16] = {0};
    const void *cvp = NULL;
    size_t es = bd_dtype_size(x->dtype);
    int r = x->rank;
    bd_tensor hv[4];
    bd_cu_host_view(k, hv, 4);
    braid_status st = bd_layout_pads(n, hv, k->n_in < 4 ? k->n_in : 4, pads, k->err);
    if (st) return st;
    int64_t cnt = bd_numel(y);
    if (cnt == 0) return BRAID_OK;
    if (r == 0) {
        BD_CU_CHECK_CALL(k, cudaMemcpyAsync(y->data, x->data, es, cudaMemcpyDefault, k->stream));
        return BRAID_OK;
    }
    if (n->opset >= 11 && k->n_in > 2 && k->in[2].dtype && bd_numel(&k->in[2]) > 0)
        cvp = k->in[2].data; /* read on the device */
    else if (n->opset < 11)
        bd_pad_value_bytes(x->dtype, p->pad_value, cv); /* as the CPU makes them */
    pad_geom g = {};
    g.rank = r;
    g.mode = (int)p->pad_mode;
    bd_cu_contig_strides(r, x->dims, g.st);
    for (int d = 0; d < r; d++) g.out[d] = y->dims[d], g.in[d] = x->dims[d], g.before[d] = pads[d];
    bool ok = bd_cu_dispatch_size(es, [&](auto tag) {
        typedef decltype(tag) T;
        T c;
        memcpy(&c, cv, sizeof c);
        k_pad<T><<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>((const T *)x->data, (T *)y->data, cnt,
                                                                 g, (const T *)cvp, c);
    });
    LAUNCH_FAIL_IF_NOT(ok, k, es);
    BD_CU_CHECK_LAUNCH(k, "the Pad kernel");
    return BRAID_OK;
}

static braid_status run_space_depth(const bd_cuda_kernel *k)
{
    const bd_layout_params *p = (const bd_layout_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    int64_t dims[6], st[6];
    if (bd_numel(x) == 0) return BRAID_OK;
    bd_space_depth_view(k->node->op, p->blocksize, p->crd, x->dims, dims, st);
    return strided_copy(k, k->out[0].data, x->data, 6, dims, st, bd_dtype_size(x->dtype));
}

extern "C" braid_status bd_cuda_layout(const bd_cuda_kernel *k)
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

extern "C" void bd_cuda_layout_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
