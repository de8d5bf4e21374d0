/* layout.c: CPU kernels of the layout op family. Every op moves whole
 * elements of any fixed-size dtype: copies work on bytes (the element size),
 * never on the dtype's values. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"
#include "ops/layout.h"

#include <stdatomic.h>
#include <string.h>

#include <immintrin.h>

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
    if (es == 4 && dst_st == 4 && sst == 8) { /* a Slice with step 2 (YOLO's space-to-depth) */
        bd_gather2_f32((float *)dst, (const float *)src, n);
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

/* ---- fast 2-D transposes of 4-byte elements ------------------------------------ */

/* out (16 rows, ldo apart) = the transpose of in (16 rows, ldi apart), 16 x 16
 * floats in registers: pairs of rows interleaved, then pairs of pairs, then
 * 128-bit lanes. */
__attribute__((target("avx512f"))) static void tr16x16(float *out, int64_t ldo, const float *in, int64_t ldi)
{
    __m512 r[16], a[16];
    for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_ps(in + k * ldi);
    for (int k = 0; k < 8; k++) {
        a[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 4; k++) { /* r[4k + c], lane l: rows 4k..4k+3 at column 4l + c */
        __m512d x0 = _mm512_castps_pd(a[4 * k]), x1 = _mm512_castps_pd(a[4 * k + 1]);
        __m512d x2 = _mm512_castps_pd(a[4 * k + 2]), x3 = _mm512_castps_pd(a[4 * k + 3]);
        r[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(x0, x2));
        r[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x0, x2));
        r[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(x1, x3));
        r[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(x1, x3));
    }
    for (int c = 0; c < 4; c++) { /* output row 4l + c: lane l of r[c], r[4 + c], r[8 + c], r[12 + c] */
        __m512 u0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
        __m512 u1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
        __m512 u2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
        __m512 u3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
        _mm512_storeu_ps(out + c * ldo, _mm512_shuffle_f32x4(u0, u2, 0x88));
        _mm512_storeu_ps(out + (4 + c) * ldo, _mm512_shuffle_f32x4(u1, u3, 0x88));
        _mm512_storeu_ps(out + (8 + c) * ldo, _mm512_shuffle_f32x4(u0, u2, 0xdd));
        _mm512_storeu_ps(out + (12 + c) * ldo, _mm512_shuffle_f32x4(u1, u3, 0xdd));
    }
}

/* The same on 8 x 8 floats. */
__attribute__((target("avx2"))) static void tr8x8(float *out, int64_t ldo, const float *in, int64_t ldi)
{
    __m256 r[8], a[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(in + k * ldi);
    for (int k = 0; k < 4; k++) {
        a[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        a[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; k++) {
        __m256d x0 = _mm256_castps_pd(a[4 * k]), x1 = _mm256_castps_pd(a[4 * k + 1]);
        __m256d x2 = _mm256_castps_pd(a[4 * k + 2]), x3 = _mm256_castps_pd(a[4 * k + 3]);
        r[4 * k] = _mm256_castpd_ps(_mm256_unpacklo_pd(x0, x2));
        r[4 * k + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(x0, x2));
        r[4 * k + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(x1, x3));
        r[4 * k + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(x1, x3));
    }
    for (int c = 0; c < 4; c++) {
        _mm256_storeu_ps(out + c * ldo, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
        _mm256_storeu_ps(out + (4 + c) * ldo, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
    }
}

/* Three rows of 16 floats (ld apart) interleaved into 48 (C = 3 to NHWC), and
 * back (in: 48 floats; out: three rows of 16, ldo apart): two permutes per
 * vector of 16. Output lane l of vector k is element e = 16 k + l, input
 * row e % 3, lane e / 3 (and the other way round). */
static const int32_t il3_ab[3][16] = {{0, 16, 0, 1, 17, 0, 2, 18, 0, 3, 19, 0, 4, 20, 0, 5},
                                      {21, 0, 6, 22, 0, 7, 23, 0, 8, 24, 0, 9, 25, 0, 10, 26},
                                      {0, 11, 27, 0, 12, 28, 0, 13, 29, 0, 14, 30, 0, 15, 31, 0}};
static const int32_t il3_c[3][16] = {{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5},
                                     {5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 10},
                                     {10, 11, 11, 11, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15}};
static const __mmask16 il3_mc[3] = {0x4924, 0x2492, 0x9249}; /* the lanes c fills */
static const int32_t dl3_lo[3][16] = {{0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 0, 0, 0, 0, 0},
                                      {1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 0, 0, 0, 0, 0},
                                      {2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 0, 0, 0, 0, 0, 0}};
static const int32_t dl3_hi[3][16] = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4, 7, 10, 13},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 5, 8, 11, 14},
                                      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 6, 9, 12, 15}};
static const __mmask16 dl3_mh[3] = {0xf800, 0xf800, 0xfc00}; /* the lanes the third vector fills */

__attribute__((target("avx512f"))) static void interleave3(float *out, const float *in, int64_t ld)
{
    const __m512 a = _mm512_loadu_ps(in), b = _mm512_loadu_ps(in + ld), c = _mm512_loadu_ps(in + 2 * ld);
    for (int k = 0; k < 3; k++) {
        __m512 t = _mm512_permutex2var_ps(a, _mm512_loadu_si512(il3_ab[k]), b);
        _mm512_storeu_ps(out + 16 * k, _mm512_mask_permutexvar_ps(t, il3_mc[k], _mm512_loadu_si512(il3_c[k]), c));
    }
}

__attribute__((target("avx512f"))) static void deinterleave3(float *out, int64_t ldo, const float *in)
{
    const __m512 v0 = _mm512_loadu_ps(in), v1 = _mm512_loadu_ps(in + 16), v2 = _mm512_loadu_ps(in + 32);
    for (int r = 0; r < 3; r++) {
        __m512 t = _mm512_permutex2var_ps(v0, _mm512_loadu_si512(dl3_lo[r]), v1);
        _mm512_storeu_ps(out + r * ldo, _mm512_mask_permutexvar_ps(t, dl3_mh[r], _mm512_loadu_si512(dl3_hi[r]), v2));
    }
}

/* Planes of dst (m x kk, contiguous) with element (i, j) = src[j ld + i]
 * (4-byte elements; plane p's src from the odometer of the outer dims): cut
 * into tiles of ti x tj that fit the L1 cache, each tile by 16 x 16 (or
 * 8 x 8) register transposes and a scalar rim; tiles over the threads. */
typedef struct tr_job {
    const strided_job *s;
    int64_t m, kk, ld, ti, tj, nbi, nbj;
    int lvl;
} tr_job;

static void tr_tiles(void *vj, int64_t begin, int64_t end)
{
    const tr_job *t = vj;
    const strided_job *s = t->s;
    const int64_t m = t->m, kk = t->kk, ld = t->ld, per = t->nbi * t->nbj;
    const int vw = t->lvl == 2 ? 16 : t->lvl == 1 ? 8 : 0;
    for (int64_t it = begin; it < end; it++) {
        int64_t pl = it / per, b = it - pl * per, bi = b / t->nbj, bj = b - bi * t->nbj;
        int64_t off = 0, rem = pl;
        for (int d = s->outer_r - 1; d >= 0; d--) {
            off += rem % s->dims[d] * s->st[d];
            rem /= s->dims[d];
        }
        const float *src = (const float *)(s->src + off);
        float *dst = (float *)(s->dst + pl * s->unit);
        const int64_t i0 = bi * t->ti, i1 = BD_MIN(m, i0 + t->ti), j0 = bj * t->tj, j1 = BD_MIN(kk, j0 + t->tj);
        int64_t iv = i0, jv = j0; /* [i0, iv) x [j0, jv) by the register transposes */
        if (vw == 16 && kk == 3) { /* three channels to NHWC */
            iv = i0 + (i1 - i0) / 16 * 16, jv = j1;
            for (int64_t i = i0; i < iv; i += 16) interleave3(dst + i * 3, src + i, ld);
        } else if (vw == 16 && m == 3 && ld == 3) { /* and back */
            iv = i1, jv = j0 + (j1 - j0) / 16 * 16;
            for (int64_t j = j0; j < jv; j += 16) deinterleave3(dst + j, kk, src + j * 3);
        } else if (vw) {
            iv = i0 + (i1 - i0) / vw * vw, jv = j0 + (j1 - j0) / vw * vw;
            for (int64_t i = i0; i < iv; i += vw)
                for (int64_t j = j0; j < jv; j += vw) {
                    if (vw == 16) tr16x16(dst + i * kk + j, kk, src + j * ld + i, ld);
                    else tr8x8(dst + i * kk + j, kk, src + j * ld + i, ld);
                }
        }
        for (int64_t i = i0; i < i1; i++) { /* the rim: columns [jv, j1) of every row, all of rows [iv, i1) */
            float *d = dst + i * kk;
            for (int64_t j = i < iv ? jv : j0; j < j1; j++) d[j] = src[j * ld + i];
        }
    }
}

static void transpose_4(int threads, const strided_job *s)
{
    tr_job t = {.s = s, .m = s->m, .kk = s->kk, .ld = s->st[s->r - 1] / 4, .lvl = bd_cpu_vec_level()};
    /* tiles of about 4096 floats (16 KiB read, 16 KiB written) */
    t.tj = BD_MIN(t.kk, (int64_t)64);
    t.ti = BD_MIN(t.m, BD_MAX((int64_t)64, 4096 / t.tj));
    if (t.ti == t.m && t.tj < t.kk) t.tj = BD_MIN(t.kk, BD_MAX((int64_t)64, 4096 / t.ti));
    t.nbi = (t.m + t.ti - 1) / t.ti, t.nbj = (t.kk + t.tj - 1) / t.tj;
    int64_t planes = 1;
    for (int d = 0; d < s->outer_r; d++) planes *= s->dims[d];
    const int64_t tile = t.ti * t.tj;
    bd_parallel_for(threads, planes * t.nbi * t.nbj, BD_MAX((int64_t)1, (1 << 15) / tile), tr_tiles, &t);
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
    /* 4-byte elements whose last two dims are a 2-D transpose: transpose_4 */
    const int tr4 = r >= 2 && es == 4 && j.st[r - 2] == 4 && j.st[r - 1] > 4 && j.st[r - 1] % 4 == 0;
    /* a last axis read with a small step (a strided Slice) runs along rows;
     * a larger one (a transpose) in tiles */
    const int gather = j.st[r - 1] > 0 && j.st[r - 1] <= 4 * (int64_t)es;
    j.tiled = r >= 2 && j.st[r - 1] != (int64_t)es && (j.dims[r - 2] >= 8 || tr4) && !(gather && !tr4);
    j.outer_r = j.tiled ? r - 2 : r - 1;
    j.m = j.tiled ? j.dims[r - 2] : 1;
    j.kk = j.dims[r - 1];
    j.unit = j.m * j.kk * (int64_t)es;
    if (tr4) {
        transpose_4(threads, &j); /* a 2-D transpose of each plane */
        return;
    }
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
    int short_rows;  /* cat_rows512 applies */
    char *dst;       /* the byte-split copy */
    const char *src;
} cat_job;

/* Copies n >= 64 bytes in 64-byte vectors, the last one overlapping the one
 * before (short runs: no call into the C library per run). */
__attribute__((target("avx512f"))) static void copy_run512(char *dst, const char *src, int64_t n)
{
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) _mm512_storeu_si512(dst + i, _mm512_loadu_si512(src + i));
    if (i < n) _mm512_storeu_si512(dst + n - 64, _mm512_loadu_si512(src + n - 64));
}

/* Rows [begin, end) with every part's chunk in turn (the whole written in
 * order), for short rows whose chunks are all 64 bytes or more. */
__attribute__((target("avx512f"))) static void cat_rows512(const cat_job *j, int64_t begin, int64_t end)
{
    const bd_kernel *k = j->k;
    char *w = j->cat ? k->out[0].data : k->in[0].data;
    for (int64_t o = begin; o < end; o++) {
        int64_t off = 0;
        for (int i = 0; i < j->parts; i++) {
            const bd_tensor *part = j->cat ? &k->in[i] : &k->out[i];
            int64_t chunk = bd_concat_chunk(&j->r, part);
            char *p = part->data;
            if (j->cat) copy_run512(w + o * j->r.row + off, p + o * chunk, chunk);
            else copy_run512(p + o * chunk, w + o * j->r.row + off, chunk);
            off += chunk;
        }
    }
}

static void cat_rows(void *vj, int64_t begin, int64_t end)
{
    const cat_job *j = vj;
    const bd_kernel *k = j->k;
    char *w = j->cat ? k->out[0].data : k->in[0].data;
    if (j->short_rows) {
        cat_rows512(j, begin, end);
        return;
    }
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
        j.short_rows = j.r.row <= 8192 && bd_cpu_vec_level() == 2;
        for (int i = 0; i < j.parts && j.short_rows; i++) {
            const bd_tensor *part = j.cat ? &k->in[i] : &k->out[i];
            j.short_rows = bd_concat_chunk(&j.r, part) >= 64 && part->data;
        }
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
