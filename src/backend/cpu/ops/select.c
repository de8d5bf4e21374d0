/* select.c: CPU kernels of the select op family (NonZero, Compress, Unique).
 * Each writes its outputs' actual dims (BD_OPF_DATA_SHAPE): the buffers were
 * sized for the largest shape, and the result is laid out contiguously in
 * the actual one. The CUDA backend runs these same kernels on host copies. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <string.h>

#include "ops/select.h"

/* ---- NonZero -------------------------------------------------------------- */

enum { NZ_BLOCK = 1 << 16 }; /* a fixed split, so the work never depends on the thread count */

typedef struct nz_job {
    int dt, rank;
    const void *x;
    const int64_t *dims;
    int64_t n, nnz, *counts; /* counts: per block, then the block's first output column */
    int64_t *y;
} nz_job;

static void nz_count(void *vj, int64_t begin, int64_t end)
{
    nz_job *j = vj;
    for (int64_t b = begin; b < end; b++) {
        int64_t c = 0, hi = BD_MIN(j->n, (b + 1) * NZ_BLOCK);
        for (int64_t i = b * NZ_BLOCK; i < hi; i++) c += bd_nonzero_at(j->dt, j->x, i);
        j->counts[b] = c;
    }
}

static void nz_write(void *vj, int64_t begin, int64_t end)
{
    nz_job *j = vj;
    for (int64_t b = begin; b < end; b++) {
        int64_t col = j->counts[b], hi = BD_MIN(j->n, (b + 1) * NZ_BLOCK);
        for (int64_t i = b * NZ_BLOCK; i < hi; i++) {
            if (!bd_nonzero_at(j->dt, j->x, i)) continue;
            int64_t f = i;
            for (int d = j->rank - 1; d >= 0; d--) {
                int64_t q = f / j->dims[d];
                j->y[d * j->nnz + col] = f - q * j->dims[d];
                f = q;
            }
            col++;
        }
    }
}

static braid_status run_nonzero(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0];
    int64_t one = 1;
    nz_job j = {.dt = x->dtype, .rank = x->rank ? x->rank : 1, .x = x->data, .dims = x->rank ? x->dims : &one,
                .n = bd_numel(x), .y = k->out[0].data};
    int64_t blocks = BD_CEIL_DIV(j.n, NZ_BLOCK);
    j.counts = bd_malloc((size_t)(blocks ? blocks : 1) * sizeof *j.counts);
    if (!j.counts) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    bd_parallel_for(k->threads, blocks, 1, nz_count, &j);
    for (int64_t b = 0, sum = 0; b < blocks; b++) {
        int64_t c = j.counts[b];
        j.counts[b] = sum;
        sum += c;
        j.nnz = sum;
    }
    bd_parallel_for(k->threads, blocks, 1, nz_write, &j);
    bd_free(j.counts);
    k->out[0].dims[1] = j.nnz;
    return BRAID_OK;
}

/* ---- Compress ------------------------------------------------------------- */

static braid_status run_compress(const bd_kernel *k)
{
    const bd_tensor *x = &k->in[0], *c = &k->in[1];
    const bd_select_params *p = k->node->params;
    int64_t outer, dim, inner, len = c->dims[0];
    size_t es = bd_dtype_size(x->dtype);
    bd_select_view(k->node, x, &outer, &dim, &inner);
    if (len > dim)
        return BD_FAIL(k->err, BRAID_ERR_SHAPE, "the condition has %lld values for %lld slices", (long long)len,
                       (long long)dim);
    const uint8_t *cond = c->data;
    int64_t kept = bd_compress_count(cond, len);
    size_t blk = (size_t)inner * es;
    char *y = k->out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < len; i++)
            if (cond[i]) {
                memcpy(y, (const char *)x->data + (o * dim + i) * (int64_t)blk, blk);
                y += blk;
            }
    if (p->has_axis) {
        int a = (int)(p->axis < 0 ? p->axis + x->rank : p->axis);
        k->out[0].dims[a] = kept;
    } else {
        k->out[0].dims[0] = kept;
    }
    return BRAID_OK;
}

/* ---- Unique --------------------------------------------------------------- */

typedef struct uq_ctx {
    int dt;
    const void *x;
    int64_t outer, dim, inner;
} uq_ctx;

/* Slices a and b (positions along the axis) compared element by element in
 * row-major order of the other dims, as numpy compares them. */
static int slice_cmp(const uq_ctx *c, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < c->outer; o++)
        for (int64_t i = 0; i < c->inner; i++) {
            int r = bd_unique_cmp(c->dt, c->x, (o * c->dim + a) * c->inner + i, (o * c->dim + b) * c->inner + i);
            if (r) return r;
        }
    return 0;
}

/* Stable merge sort of v[0..n) by slice_cmp (tmp: n scratch entries). */
static void merge_sort(const uq_ctx *c, int64_t *v, int64_t *tmp, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = BD_MIN(lo + w, n), hi = BD_MIN(lo + 2 * w, n), i = lo, j = mid, t = lo;
            while (i < mid && j < hi) tmp[t++] = slice_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
            while (i < mid) tmp[t++] = v[i++];
            while (j < hi) tmp[t++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

static void index_sort(int64_t *v, int64_t *tmp, int64_t n) /* ascending int64 */
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = BD_MIN(lo + w, n), hi = BD_MIN(lo + 2 * w, n), i = lo, j = mid, t = lo;
            while (i < mid && j < hi) tmp[t++] = v[j] < v[i] ? v[j++] : v[i++];
            while (i < mid) tmp[t++] = v[i++];
            while (j < hi) tmp[t++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof *v);
    }
}

/* Y: the first occurrence of each distinct slice, sorted (sorted = 1) or in
 * order of first occurrence; indices: those first occurrences; inverse: the
 * output position of each input slice; counts: how many slices each has. */
static braid_status run_unique(const bd_kernel *k)
{
    const bd_select_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    uq_ctx c = {.dt = x->dtype, .x = x->data};
    bd_select_view(k->node, x, &c.outer, &c.dim, &c.inner);
    int64_t n = c.dim, u = 0;
    size_t es = bd_dtype_size(x->dtype);
    int64_t *perm = bd_malloc((size_t)(3 * n + 1) * sizeof *perm), *tmp = perm + n, *grp = tmp + n;
    if (!perm) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    merge_sort(&c, perm, tmp, n);
    /* groups in sorted order: first[g] (smallest index, the sort being
     * stable) into tmp, each slice's group into grp */
    for (int64_t s = 0; s < n; s++) {
        if (s == 0 || slice_cmp(&c, perm[s - 1], perm[s]) != 0) tmp[u++] = perm[s];
        grp[perm[s]] = u - 1;
    }
    int64_t *first = tmp, *pos = perm; /* pos[g]: the output position of sorted group g */
    if (p->sorted) {
        for (int64_t g = 0; g < u; g++) pos[g] = g;
    } else { /* order the groups by first occurrence; their firsts are distinct */
        int64_t *key = bd_malloc((size_t)(2 * u + 1) * sizeof *key);
        if (!key) { bd_free(perm); return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory"); }
        memcpy(key, first, (size_t)u * sizeof *key);
        index_sort(key, key + u, u);
        /* a group's position is the rank of its first index among the firsts */
        for (int64_t g = 0, lo; g < u; g++) {
            int64_t hi = u;
            lo = 0;
            while (lo < hi) { int64_t m = (lo + hi) / 2; if (key[m] < first[g]) lo = m + 1; else hi = m; }
            pos[g] = lo;
        }
        bd_free(key);
    }
    size_t blk = (size_t)c.inner * es;
    char *y = k->out[0].data;
    for (int64_t g = 0; g < u; g++) /* Y as (outer, u, inner) */
        for (int64_t o = 0; o < c.outer; o++)
            memcpy(y + (o * u + pos[g]) * (int64_t)blk, (const char *)x->data + (o * c.dim + first[g]) * (int64_t)blk, blk);
    if (k->n_out > 1 && k->out[1].data)
        for (int64_t g = 0; g < u; g++) ((int64_t *)k->out[1].data)[pos[g]] = first[g];
    if (k->n_out > 2 && k->out[2].data)
        for (int64_t i = 0; i < n; i++) ((int64_t *)k->out[2].data)[i] = pos[grp[i]];
    if (k->n_out > 3 && k->out[3].data) {
        int64_t *cnt = k->out[3].data;
        for (int64_t g = 0; g < u; g++) cnt[g] = 0;
        for (int64_t i = 0; i < n; i++) cnt[pos[grp[i]]]++;
    }
    bd_free(perm);
    if (p->has_axis) k->out[0].dims[(int)(p->axis < 0 ? p->axis + x->rank : p->axis)] = u;
    else k->out[0].dims[0] = u;
    if (k->n_out > 1) k->out[1].dims[0] = u;
    if (k->n_out > 3) k->out[3].dims[0] = u;
    return BRAID_OK;
}

braid_status bd_cpu_select(const bd_kernel *k)
{
    switch (k->node->op) {
    case BD_OP_NonZero: return run_nonzero(k);
    case BD_OP_Compress: return run_compress(k);
    case BD_OP_Unique: return run_unique(k);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the select family", k->node->op_type);
    }
}
