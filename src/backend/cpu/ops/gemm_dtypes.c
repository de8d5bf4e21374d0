/* gemm_dtypes.c: the gemm family's CPU kernels for the dtypes other than
 * float32 (gemm.c keeps float32 and the int32/int64 MatMul): MatMul and Gemm
 * on double (cblas_dgemm), float16 and bfloat16 (computed in float32 by
 * cblas_sgemm, rounded once), and Gemm on int32/int64 plus both on
 * uint32/uint64 (exact integer loops that wrap like the hardware). Integer
 * Gemm with alpha = beta = 1 (or beta = 0) stays exact; other alpha/beta
 * compute alpha * AB + beta * C in double and truncate, as onnx's reference
 * (numpy's float64 then astype) does. */
#include "la.h"

#include <math.h>

#include "ops/gemm.h"

/* ---- integer products ------------------------------------------------------------ */

/* y (M x N, int64 or uint64 wrapping) = op(a) op(b) for one matrix of a
 * 32- or 64-bit integer dtype; strides give transposition. */
static uint64_t int_at(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case BRAID_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i]; /* int64, uint64: same bits */
    }
}

static void int_store(int dt, void *p, int64_t i, uint64_t v)
{
    if (dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_UINT32) ((uint32_t *)p)[i] = (uint32_t)v;
    else ((uint64_t *)p)[i] = v;
}

static int is_signed(int dt) { return dt == BRAID_DTYPE_INT32 || dt == BRAID_DTYPE_INT64; }

typedef struct int_job {
    int dt;
    const void *a, *b;
    uint64_t *acc;   /* (M x N) per item */
    int64_t m, n, k, sam, sak, sbk, sbn;
} int_job;

/* acc = op(a) op(b) in wrapping 64-bit arithmetic (the low bits of the product
 * are the same for signed and unsigned operands). */
static void int_product(const int_job *j)
{
    for (int64_t i = 0; i < j->m; i++) {
        uint64_t *row = j->acc + i * j->n;
        for (int64_t c = 0; c < j->n; c++) row[c] = 0;
        for (int64_t l = 0; l < j->k; l++) {
            uint64_t av = int_at(j->dt, j->a, i * j->sam + l * j->sak);
            if (j->sbn == 1 && (j->dt == BRAID_DTYPE_INT64 || j->dt == BRAID_DTYPE_UINT64)) {
                const uint64_t *br = (const uint64_t *)j->b + l * j->sbk;
                for (int64_t c = 0; c < j->n; c++) row[c] += av * br[c];
            } else {
                for (int64_t c = 0; c < j->n; c++) row[c] += av * int_at(j->dt, j->b, l * j->sbk + c * j->sbn);
            }
        }
    }
}

/* ---- MatMul -------------------------------------------------------------------------- */

typedef struct mm_ctx {
    const bd_matmul_geom *g;
    int dt, cdt;             /* dtype; compute dtype (float or double; 0 for integers) */
    const char *a, *b;       /* operands (compute dtype for floats, the tensor's own for integers) */
    char *y;
    size_t es;
    int64_t sa[BD_MAX_RANK], sb[BD_MAX_RANK];
    int fail;
} mm_ctx;

static void mm_offsets(const mm_ctx *c, int64_t i, int64_t *oa, int64_t *ob)
{
    const bd_matmul_geom *g = c->g;
    int64_t rem = i;
    *oa = *ob = 0;
    for (int d = g->batch.rank - 1; d >= 0; d--) {
        int64_t idx = rem % g->batch.dims[d];
        rem /= g->batch.dims[d];
        *oa += idx * c->sa[d];
        *ob += idx * c->sb[d];
    }
}

static void mm_items(void *vc, int64_t begin, int64_t end)
{
    mm_ctx *c = vc;
    const bd_matmul_geom *g = c->g;
    int64_t m = g->m, n = g->n, kk = g->k;
    uint64_t *acc = NULL;
    if (!c->cdt && !(acc = bd_malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof *acc))) {
        c->fail = 1;
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        int64_t oa, ob;
        mm_offsets(c, i, &oa, &ob);
        const char *a = c->a + (size_t)(oa * m * kk) * c->es, *b = c->b + (size_t)(ob * kk * n) * c->es;
        char *y = c->y + (size_t)(i * m * n) * c->es;
        if (c->cdt == BRAID_DTYPE_DOUBLE)
            bd_la_dgemm1(0, 0, m, n, kk, 1.0, (const double *)a, kk, (const double *)b, n, 0.0, (double *)y, n);
        else if (c->cdt == BRAID_DTYPE_FLOAT)
            bd_la_sgemm1(0, 0, m, n, kk, 1.0f, (const float *)a, kk, (const float *)b, n, 0.0f, (float *)y, n);
        else {
            int_job j = {c->dt, a, b, acc, m, n, kk, kk, 1, n, 1};
            int_product(&j);
            for (int64_t t = 0; t < m * n; t++) int_store(c->dt, y, t, acc[t]);
        }
    }
    bd_free(acc);
}

static braid_status matmul(const bd_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_tensor *yt = &k->out[0];
    bd_matmul_geom g;
    float *fa = NULL, *fb = NULL, *fy = NULL;
    BD_TRY(bd_matmul_geometry(a, b, &g, NULL, k->err));
    BD_TRY(bd_la_check_dims(g.m, g.n, g.k, k->err));
    mm_ctx c = {.g = &g, .dt = a->dtype, .a = a->data, .b = b->data, .y = yt->data,
                .es = bd_dtype_size(a->dtype)};
    int64_t nb = bd_numel(&g.batch);
    if (a->dtype == BRAID_DTYPE_DOUBLE) c.cdt = BRAID_DTYPE_DOUBLE;
    else if (a->dtype == BRAID_DTYPE_FLOAT16 || a->dtype == BRAID_DTYPE_BFLOAT16) {
        int64_t na = bd_numel(a), nbn = bd_numel(b), ny = bd_numel(yt);
        fa = bd_malloc((size_t)(na ? na : 1) * sizeof *fa);
        fb = bd_malloc((size_t)(nbn ? nbn : 1) * sizeof *fb);
        fy = bd_malloc((size_t)(ny ? ny : 1) * sizeof *fy);
        BD_CHECK_ALLOC(k->err, fa && fb && fy);
        bd_la_to_f32(a->dtype, a->data, fa, na);
        bd_la_to_f32(b->dtype, b->data, fb, nbn);
        c.cdt = BRAID_DTYPE_FLOAT;
        c.a = (const char *)fa, c.b = (const char *)fb, c.y = (char *)fy;
        c.es = sizeof(float);
    }
    if (nb * g.m * g.n > 0) {
        bd_broadcast_strides(&g.a_batch, &g.batch, c.sa);
        bd_broadcast_strides(&g.b_batch, &g.batch, c.sb);
        if (c.cdt == BRAID_DTYPE_FLOAT && bd_numel(&g.b_batch) == 1 && bd_numel(&g.a_batch) == nb) {
            /* B shared by every batch: one product with M * batch rows on all threads */
            if (g.k > 0) bd_sgemm(k->threads, 0, 0, g.m * nb, g.n, g.k, 1.0f, fa, g.k, fb, g.n, 0.0f, fy, g.n);
            else memset(fy, 0, (size_t)(nb * g.m * g.n) * sizeof *fy);
        } else {
            int64_t work = g.m * g.n * (g.k ? g.k : 1);
            bd_parallel_for(k->threads, nb, work >= (1 << 18) ? 1 : (1 << 18) / work, mm_items, &c);
            if (c.fail) {
                st = BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
                goto fail;
            }
        }
    }
    if (fy) bd_la_from_f32(yt->dtype, fy, yt->data, bd_numel(yt));
fail:
    bd_free(fa);
    bd_free(fb);
    bd_free(fy);
    return st;
}

/* ---- Gemm ---------------------------------------------------------------------------- */

/* The value of C broadcast to (M, N) at (i, j), as double (C is absent: 0). */
static double c_at(const bd_tensor *c, const int64_t *str, int64_t i, int64_t j)
{
    return c ? bd_get_f64(c, i * str[0] + j * str[1]) : 0.0;
}

static braid_status gemm_float(const bd_kernel *k, const bd_gemm_params *p, const bd_tensor *c)
{
    braid_status st = BRAID_OK;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_tensor *y = &k->out[0];
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1], str[2] = {0, 0};
    int dbl = a->dtype == BRAID_DTYPE_DOUBLE;
    size_t es = dbl ? sizeof(double) : sizeof(float);
    int64_t na = bd_numel(a), nb = bd_numel(b);
    void *fa = NULL, *fb = NULL, *fy = NULL;
    BD_TRY(bd_la_check_dims(m, n, kk, k->err));
    if (m * n == 0) return BRAID_OK;
    fy = dbl ? y->data : bd_malloc((size_t)(m * n) * es);
    BD_CHECK_ALLOC(k->err, fy);
    if (dbl) fa = (void *)a->data, fb = (void *)b->data;
    else {
        fa = bd_malloc((size_t)(na ? na : 1) * es);
        fb = bd_malloc((size_t)(nb ? nb : 1) * es);
        BD_CHECK_ALLOC(k->err, fa && fb);
        bd_la_to_f32(a->dtype, a->data, fa, na);
        bd_la_to_f32(b->dtype, b->data, fb, nb);
    }
    double beta = 0.0;
    if (c && p->beta != 0.0f) {
        bd_broadcast_strides(c, y, str);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double v = c_at(c, str, i, j);
                if (dbl) ((double *)fy)[i * n + j] = v;
                else ((float *)fy)[i * n + j] = (float)v;
            }
        beta = p->beta;
    }
    bd_la_batch bt = {.dbl = dbl, .ta = p->trans_a, .tb = p->trans_b, .count = 1, .m = m, .n = n, .k = kk,
                      .alpha = p->alpha, .beta = beta, .a = fa, .b = fb, .c = fy,
                      .lda = p->trans_a ? m : kk, .ldb = p->trans_b ? kk : n, .ldc = n};
    if (!c || p->beta == 0.0f) memset(fy, 0, (size_t)(m * n) * es); /* K = 0 reads C as beta = 0 */
    BD_TRY(bd_la_batch_gemm(k->threads, &bt, k->err));
    if (!dbl) bd_la_from_f32(y->dtype, fy, y->data, m * n);
fail:
    if (!dbl) {
        bd_free(fa);
        bd_free(fb);
        bd_free(fy);
    }
    return st;
}

static braid_status gemm_int(const bd_kernel *k, const bd_gemm_params *p, const bd_tensor *c)
{
    braid_status st = BRAID_OK;
    const bd_tensor *a = &k->in[0], *b = &k->in[1];
    bd_tensor *y = &k->out[0];
    int dt = a->dtype;
    int64_t m = y->dims[0], n = y->dims[1], kk = a->dims[p->trans_a ? 0 : 1], str[2] = {0, 0};
    uint64_t *acc = bd_malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof *acc);
    BD_CHECK_ALLOC(k->err, acc);
    int_job j = {dt, a->data, b->data, acc, m, n, kk, p->trans_a ? 1 : kk, p->trans_a ? m : 1,
                 p->trans_b ? 1 : n, p->trans_b ? kk : 1};
    int_product(&j);
    int use_c = c && p->beta != 0.0f;
    if (use_c) bd_broadcast_strides(c, y, str);
    int exact = p->alpha == 1.0f && (!use_c || p->beta == 1.0f);
    for (int64_t i = 0; i < m; i++)
        for (int64_t jj = 0; jj < n; jj++) {
            uint64_t v = acc[i * n + jj];
            if (exact) {
                if (use_c) v += int_at(dt, c->data, i * str[0] + jj * str[1]);
            } else {
                double d = (is_signed(dt) ? (double)(int64_t)v : (double)v) * p->alpha;
                if (use_c) d += c_at(c, str, i, jj) * p->beta;
                d = trunc(d);
                v = is_signed(dt) ? (uint64_t)(int64_t)d : (d < 0 ? 0 : (uint64_t)d);
            }
            int_store(dt, y->data, i * n + jj, v);
        }
fail:
    bd_free(acc);
    return st;
}

braid_status bd_cpu_gemm_dtypes(const bd_kernel *k)
{
    int dt = k->in[0].dtype;
    if (k->node->op == BD_OP_MatMul) {
        if (dt == BRAID_DTYPE_FLOAT)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "float32 MatMul belongs to gemm.c");
        return matmul(k);
    }
    const bd_gemm_params *p = k->node->params;
    const bd_tensor *c = k->n_in > 2 && k->in[2].data ? &k->in[2] : NULL;
    if (bd_la_is_float(dt)) return gemm_float(k, p, c);
    return gemm_int(k, p, c);
}
