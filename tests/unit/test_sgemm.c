/* test_sgemm: braid's packed SGEMM kernels (AVX2, AVX-512, whichever this CPU
 * runs) and bd_sgemm's tiling, against a double-precision reference: odd
 * sizes that leave vector and panel tails, every transpose, alpha and beta
 * (beta 0 must ignore NaN in C), K of 0 and over one 256-block, empty dims;
 * bits that do not depend on the thread count or on how the product is
 * cut into tiles; and bd_sgemm's padded copy of A (rows a multiple of 1 KiB
 * apart) giving the bits of A at any other stride (test_dot_pad). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/parallel.h"
#include "backend/cpu/scratch.h"
#include "backend/cpu/sgemm.h"
#include "check.h"
#include "util/common.h"

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Largest |C - Cref| / (sum |a||b| |alpha| + |beta C0|) over C, the bound an
 * fp32 dot product of length K stays within (K ulps of the magnitudes). */
static double rel_err(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, const float *c0, const float *c, int64_t ldc)
{
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int64_t l = 0; l < k; l++) {
                double x = ta ? a[l * lda + i] : a[i * lda + l], y = tb ? b[j * ldb + l] : b[l * ldb + j];
                s += x * y;
                mag += fabs(x * y);
            }
            double ref = alpha * s + (beta == 0.0f ? 0.0 : beta * (double)c0[i * ldc + j]);
            double scale = fabs(alpha) * mag + (beta == 0.0f ? 0.0 : fabs(beta * (double)c0[i * ldc + j])) + 1e-30;
            double e = fabs((double)c[i * ldc + j] - ref) / scale;
            if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
        }
    return worst;
}

/* One product with kernel kern (direct call) and through bd_sgemm on 1 and 3
 * threads; all within the bound, the three bitwise equal for a braid kernel. */
static void one(int kern, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha, float beta, unsigned seed)
{
    int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
    float *a = malloc(sizeof(float) * (size_t)((ta ? k : m) * lda + 1));
    float *b = malloc(sizeof(float) * (size_t)((tb ? n : k) * ldb + 1));
    float *c0 = malloc(sizeof(float) * (size_t)(m * ldc + 1)), *c[3];
    for (int64_t i = 0; i < (ta ? k : m) * lda; i++) a[i] = frand(&seed);
    for (int64_t i = 0; i < (tb ? n : k) * ldb; i++) b[i] = frand(&seed);
    for (int64_t i = 0; i < m * ldc; i++) c0[i] = beta == 0.0f ? NAN : frand(&seed);
    for (int v = 0; v < 3; v++) {
        c[v] = malloc(sizeof(float) * (size_t)(m * ldc + 1));
        for (int64_t i = 0; i < m * ldc; i++) c[v][i] = c0[i];
    }
    int prev = bd_sgemm_force_kernel(kern);
    if (kern != BD_SGEMM_OPENBLAS) {
        CHECK_EQ_INT(bd_sgemm_braid(kern, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[0], ldc), 0);
    } else {
        bd_sgemm(1, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[0], ldc);
    }
    bd_sgemm(1, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[1], ldc);
    bd_sgemm(3, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c[2], ldc);
    (void)prev;
    /* fp32 sums of K terms: within K * 2^-24 of the magnitude sum, plus alpha/beta roundings. */
    double bound = (double)(k + 4) * 0x1p-24;
    for (int v = 0; v < 3; v++) {
        double e = rel_err(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, c[v], ldc);
        if (!(e <= bound))
            fprintf(stderr, "kernel %d variant %d ta %d tb %d %lldx%lldx%lld alpha %g beta %g: rel err %g > %g\n", kern,
                    v, ta, tb, (long long)m, (long long)n, (long long)k, alpha, beta, e, bound);
        CHECK(e <= bound);
    }
    /* Elements between the rows (ldc padding) are left alone. */
    for (int v = 0; v < 3; v++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = n; j < ldc && i * ldc + j < m * ldc; j++) {
                float x = c[v][i * ldc + j], y = c0[i * ldc + j];
                CHECK(memcmp(&x, &y, sizeof x) == 0);
            }
    if (kern != BD_SGEMM_OPENBLAS && !ta && tb) { /* the dot-product kernel: within the bound, rows independent */
        float *d = malloc(sizeof(float) * (size_t)(m * ldc + 1)), *d1 = malloc(sizeof(float) * (size_t)(ldc + 1));
        for (int64_t i = 0; i < m * ldc; i++) d[i] = c0[i];
        CHECK_EQ_INT(bd_sgemm_dot(kern, m, n, k, alpha, a, lda, b, ldb, beta, d, ldc), 0);
        double e = rel_err(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, d, ldc);
        if (!(e <= bound)) fprintf(stderr, "dot kernel %d %lldx%lldx%lld: rel err %g\n", kern, (long long)m, (long long)n, (long long)k, e);
        CHECK(e <= bound);
        int64_t i = m - 1; /* the last row alone, and its first column block alone */
        for (int64_t j = 0; j < n; j++) d1[j] = c0[i * ldc + j];
        bd_sgemm_dot(kern, 1, n, k, alpha, a + i * lda, lda, b, ldb, beta, d1, ldc);
        CHECK(memcmp(d1, d + i * ldc, sizeof(float) * (size_t)n) == 0);
        free(d);
        free(d1);
    }
    int dot = !ta && tb && m <= BD_SGEMM_DOT_MAX_M && bd_sgemm_cpu_kernel() != BD_SGEMM_OPENBLAS;
    if (kern != BD_SGEMM_OPENBLAS && !dot) { /* bd_sgemm ran kern's tiles: the same bits as one call */
        CHECK(memcmp(c[0], c[1], sizeof(float) * (size_t)(m * ldc)) == 0);
        CHECK(memcmp(c[1], c[2], sizeof(float) * (size_t)(m * ldc)) == 0);
    } else {
        CHECK(memcmp(c[1], c[2], sizeof(float) * (size_t)(m * ldc)) == 0);
    }
    bd_sgemm_force_kernel(-1);
    free(a);
    free(b);
    free(c0);
    for (int v = 0; v < 3; v++) free(c[v]);
}

static void test_kernels(void)
{
    static const int64_t dims[][3] = {{1, 1, 1},   {1, 33, 7},   {5, 17, 3},    {13, 31, 257}, {12, 32, 256},
                                      {25, 65, 300}, {7, 100, 1},  {64, 192, 768}, {37, 600, 40},  {300, 70, 520},
                                      {2, 48, 513}, {260, 515, 9},
                                      /* A read in place with every row remainder (m % 12 of 1 to 11:
                                       * the 4-, 8- and 12-row edge kernels), B in place (ldb <= 400)
                                       * and packed */
                                      {20, 40, 50}, {23, 450, 70}, {16, 33, 260}, {27, 64, 31}, {250, 130, 600},
                                      {14, 401, 17}, {21, 96, 40}, {30, 399, 300}, {19, 500, 12}};
    static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-2.0f, 0.25f}};
    int best = bd_sgemm_cpu_kernel();
    for (int kern = BD_SGEMM_OPENBLAS; kern <= best; kern++) {
        unsigned seed = 7;
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int t = 0; t < 4; t++) {
                const float *x = ab[(d + (size_t)t) % 3];
                one(kern, t & 1, t >> 1, dims[d][0], dims[d][1], dims[d][2], x[0], x[1], seed++);
            }
    }
    if (best == BD_SGEMM_OPENBLAS) fprintf(stderr, "no AVX2/AVX-512: only OpenBLAS tested\n");
}

/* The product with B read in place (M <= MR) equals, row by row, the packed
 * one of a taller A: a row's bits depend on that row alone. */
static void test_rows_independent(void)
{
    int kern = bd_sgemm_cpu_kernel();
    if (kern == BD_SGEMM_OPENBLAS) return;
    int64_t m = 40, n = 70, k = 600;
    unsigned seed = 3;
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n));
    float *c = malloc(sizeof(float) * (size_t)(m * n)), *r = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < m * k; i++) a[i] = frand(&seed);
    for (int64_t i = 0; i < k * n; i++) b[i] = frand(&seed);
    bd_sgemm_braid(kern, 0, 0, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
    int same = 1;
    for (int64_t i = 0; i < m; i++) {
        bd_sgemm_braid(kern, 0, 0, 1, n, k, 1.0f, a + i * k, k, b, n, 0.0f, r, n);
        same &= memcmp(r, c + i * n, sizeof(float) * (size_t)n) == 0;
    }
    CHECK(same);
    free(a);
    free(b);
    free(c);
    free(r);
}

static void test_empty_and_k0(void)
{
    float c[6] = {1, 2, 3, 4, 5, 6}, a[1] = {0}, b[1] = {0};
    bd_sgemm(2, 0, 0, 0, 3, 4, 1.0f, a, 4, b, 3, 0.0f, c, 3); /* M = 0: nothing written */
    bd_sgemm(2, 0, 0, 2, 0, 4, 1.0f, a, 4, b, 0, 0.0f, c, 3);
    CHECK(c[0] == 1 && c[5] == 6);
    /* K = 0, an empty sum, with every kernel the CPU runs: C = beta C (0 for
     * beta 0, whatever C held: a convolution with no input channels) */
    for (int kern = BD_SGEMM_OPENBLAS; kern <= bd_sgemm_cpu_kernel(); kern++) {
        CHECK_EQ_INT(bd_sgemm_force_kernel(kern), kern);
        float z[6] = {1, 2, 3, 4, 5, 6}, t[6] = {1, 2, 3, 4, 5, 6};
        bd_sgemm(2, 0, 0, 2, 3, 0, 1.0f, a, 1, b, 3, 0.0f, z, 3);
        bd_sgemm(1, 0, 1, 2, 3, 0, 1.0f, a, 1, b, 1, 2.0f, t, 3);
        for (int i = 0; i < 6; i++) { CHECK(z[i] == 0.0f); CHECK(t[i] == 2.0f * (float)(i + 1)); }
    }
    bd_sgemm_force_kernel(-1);
    /* The tile grid depends on the shape only, and feeds 2 cores for 128 x 384. */
    int64_t tm, tn;
    bd_gemm_tile_grid(128, 384, 384, &tm, &tn);
    CHECK(BD_CEIL_DIV(128, tm) * BD_CEIL_DIV(384, tn) >= 4);
    bd_gemm_tile_grid(1, 8, 8, &tm, &tn);
    CHECK_EQ_INT(tm, 1); /* a small product is one tile */
    CHECK_EQ_INT(tn, 8);
}

static void test_desc(void)
{
    const char *d = bd_sgemm_kernel_desc();
    CHECK(strstr(d, "openblas") != NULL);
    if (bd_sgemm_openblas_is_fallback()) CHECK(strstr(d, "braid ") == d);
    CHECK_EQ_INT(bd_sgemm_force_kernel(99), bd_sgemm_cpu_kernel());
    bd_sgemm_force_kernel(-1);
    printf("gemm: %s\n", d);
}

/* A's rows 1024 or 512 floats apart are copied to a padded stride first
 * by bd_sgemm (bd_sgemm_dot_pad): each dot kernel gives the same bits at
 * either stride, and bd_sgemm on 1 and 2 threads, which pads, gives the
 * bits of its kernel (the CPU's own) on the unpadded A; within the fp32
 * bound of the reference. */
static void test_dot_pad(void)
{
    int best = bd_sgemm_cpu_kernel();
    static const int64_t dims[][3] = {{20, 70, 1024}, {5, 33, 512}, {2, 9, 256}};
    for (int kern = BD_SGEMM_AVX2; kern <= best; kern++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
            int64_t m = dims[d][0], n = dims[d][1], k = dims[d][2], lo = k + 5, lp;
            unsigned seed = 11 + (unsigned)d;
            float *a = malloc(sizeof(float) * (size_t)(m * k)), *ao = malloc(sizeof(float) * (size_t)(m * lo));
            float *b = malloc(sizeof(float) * (size_t)(n * k)), *c0 = calloc((size_t)(m * n), sizeof(float));
            float *c[4];
            for (int64_t i = 0; i < m * k; i++) a[i] = frand(&seed);
            for (int64_t i = 0; i < m; i++) memcpy(ao + i * lo, a + i * k, sizeof(float) * (size_t)k);
            for (int64_t i = 0; i < n * k; i++) b[i] = frand(&seed);
            for (int v = 0; v < 4; v++) c[v] = calloc((size_t)(m * n), sizeof(float));
            float *ap = bd_sgemm_dot_pad(m, k, a, k, &lp); /* padded: rows k floats apart */
            CHECK(ap != NULL && lp % 256 != 0 && lp >= k);
            bd_scratch_free(ap);
            CHECK(bd_sgemm_dot_pad(m, k, ao, lo, &lp) == NULL); /* not a multiple of 1 KiB: left as it is */
            CHECK_EQ_INT(bd_sgemm_dot(kern, m, n, k, 1.0f, ao, lo, b, k, 0.0f, c[0], n), 0);
            CHECK_EQ_INT(bd_sgemm_dot(kern, m, n, k, 1.0f, a, k, b, k, 0.0f, c[1], n), 0);
            CHECK(memcmp(c[0], c[1], sizeof(float) * (size_t)(m * n)) == 0);
            if (kern == best) { /* bd_sgemm takes the CPU's own dot kernel, padding A once for its tiles */
                bd_sgemm(1, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c[2], n);
                bd_sgemm(2, 0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c[3], n);
                for (int v = 2; v < 4; v++) CHECK(memcmp(c[0], c[v], sizeof(float) * (size_t)(m * n)) == 0);
            }
            CHECK(rel_err(0, 1, m, n, k, 1.0f, a, k, b, k, 0.0f, c0, c[1], n) <= (double)(k + 4) * 0x1p-24);
            for (int v = 0; v < 4; v++) free(c[v]);
            free(a);
            free(ao);
            free(b);
            free(c0);
        }
}

int main(void)
{
    test_kernels();
    test_dot_pad();
    test_rows_independent();
    test_empty_and_k0();
    test_desc();
    return check_done();
}
