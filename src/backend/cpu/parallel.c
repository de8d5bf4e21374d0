/* parallel.c: bd_parallel_for (contiguous chunks on short-lived threads) and
 * the tiled, thread-count-independent bd_sgemm over OpenBLAS. */
#include "backend/cpu/parallel.h"

#include <cblas.h>
#include <pthread.h>

#include "util/common.h"

#define MAX_THREADS 64

typedef struct chunk {
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t begin, end;
} chunk;

static void *run_chunk(void *arg)
{
    chunk *c = arg;
    c->fn(c->ctx, c->begin, c->end);
    return NULL;
}

void bd_parallel_for(int threads, int64_t n, int64_t min_chunk, void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    if (n <= 0) return;
    int64_t nt = BD_MIN((int64_t)BD_MAX(threads, 1), (int64_t)MAX_THREADS);
    nt = BD_MIN(nt, n / BD_MAX(min_chunk, 1));
    if (nt <= 1) { fn(ctx, 0, n); return; }
    chunk jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    for (int64_t i = 0; i < nt; i++) {
        jobs[i] = (chunk){fn, ctx, n * i / nt, n * (i + 1) / nt};
        if (i > 0) started[i] = pthread_create(&tid[i], NULL, run_chunk, &jobs[i]) == 0;
    }
    run_chunk(&jobs[0]);
    for (int64_t i = 1; i < nt; i++) {
        if (started[i]) pthread_join(tid[i], NULL);
        else run_chunk(&jobs[i]);
    }
}

typedef struct gemm_job {
    int ta, tb;
    int64_t m, n, k, tiles_n;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t lda, ldb, ldc;
} gemm_job;

static void gemm_tiles(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t m0 = (t / j->tiles_n) * BD_GEMM_TILE_M, n0 = (t % j->tiles_n) * BD_GEMM_TILE_N;
        int64_t mm = BD_MIN((int64_t)BD_GEMM_TILE_M, j->m - m0), nn = BD_MIN((int64_t)BD_GEMM_TILE_N, j->n - n0);
        const float *a = j->ta ? j->a + m0 : j->a + m0 * j->lda;
        const float *b = j->tb ? j->b + n0 * j->ldb : j->b + n0;
        cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)mm,
                    (int)nn, (int)j->k, j->alpha, a, (int)j->lda, b, (int)j->ldb, j->beta, j->c + m0 * j->ldc + n0,
                    (int)j->ldc);
    }
}

void bd_sgemm(int threads, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    gemm_job j = {trans_a, trans_b, m, n, k, BD_CEIL_DIV(n, (int64_t)BD_GEMM_TILE_N), alpha, beta, a, b, c, lda, ldb, ldc};
    int64_t tiles = BD_CEIL_DIV(m, (int64_t)BD_GEMM_TILE_M) * j.tiles_n;
    /* A thread is worth its start-up only for some work: 2^21 multiply-adds. */
    int64_t per_tile = BD_MIN(m, (int64_t)BD_GEMM_TILE_M) * BD_MIN(n, (int64_t)BD_GEMM_TILE_N) * BD_MAX(k, 1);
    int64_t min_tiles = BD_MAX((int64_t)1, ((int64_t)1 << 21) / BD_MAX(per_tile, 1));
    bd_parallel_for(threads, tiles, min_tiles, gemm_tiles, &j);
}
