/* parallel.h: intra-op parallelism of the CPU kernels, and a GEMM whose
 * results do not depend on the thread count. OpenBLAS always runs
 * single-threaded inside braid: the stream threads and these loops share the
 * cores instead (the budget is --threads, shared by the plan's streams that have work). */
#ifndef BD_PARALLEL_H
#define BD_PARALLEL_H

#include <stdint.h>

/* Runs fn(ctx, begin, end) over [0, n) on up to `threads` threads (fewer
 * when n / min_chunk is smaller), in contiguous grains of at least min_chunk
 * items (about an eighth of a thread's share) that the caller and up to
 * threads - 1 helper threads of a process-wide pool claim one after another:
 * a helper that wakes late finds less to do, and the caller never waits for
 * one that has not started. With the whole budget for the call, each thread
 * starts on its own contiguous share of the grains (bd_parallel_affine), so
 * that kernels one after another over the same data run the same part on
 * the same core; while other streams share the budget, all claim from one
 * counter and helpers join between grains as the share grows. Every item is
 * run once; which thread runs it, and how the items are grouped, never
 * changes what it computes. */
void bd_parallel_for(int threads, int64_t n, int64_t min_chunk, void (*fn)(void *ctx, int64_t begin, int64_t end),
                     void *ctx);

/* Runs fn(ctx, i, i + 1) for each part i in [0, parts) (at most 64), on up
 * to `parts` threads: part 0 first on the caller, part i first on the pool's
 * helper i - 1 when it takes the call, any part nobody took by whoever is
 * free. The same helper thread serves the same part call after call (while
 * the pool's helpers serve one caller), so data a part reads again on the
 * next call is in that core's cache: the LSTM's recurrent weights, which
 * fit the cores' L2 caches together but not one's. */
void bd_parallel_parts(int parts, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* Helper threads the pool has started so far (they are never stopped
 * before the process ends): one caller asking for T threads call after call
 * needs T - 1 of them, never more. */
int bd_parallel_helpers(void);

/* The live share of the calling thread (a stream thread of a plan): while
 * busy is set, bd_parallel_for on this thread runs on at most
 * budget / *busy threads (read atomically when the call starts and again
 * after each grain the caller runs, so helpers join a call as soon as other
 * streams go idle), and never more than its `threads`. Returns the share
 * it replaces, for the caller to put back (nested plans). */
typedef struct bd_parallel_share {
    const int *busy; /* streams of the plan that have work now; NULL: no share, `threads` rules */
    int budget;
} bd_parallel_share;
bd_parallel_share bd_parallel_set_share(bd_parallel_share s);

/* Runs fn(ctx, worker, begin, end) over [0, n) in blocks of `grain` items
 * that up to `workers` threads claim one after another (an atomic counter),
 * so that a thread the OS runs late does less of the work instead of being
 * waited for. worker (in [0, workers)) names the scratch a call may use: no
 * two threads run with the same worker at once. Which thread runs a block
 * must not change what it computes: that keeps the bits independent of the
 * thread count and of timing. */
void bd_parallel_claim(int workers, int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t worker, int64_t begin, int64_t end), void *ctx);

/* Like bd_parallel_claim, with each worker's items kept in the same place
 * call after call: worker w (thread slot w, as in bd_parallel_parts: the
 * caller 0, the pool's helpers 1...) owns items [w n / W, (w + 1) n / W) and
 * claims them grain by grain from the front; one that has run out takes
 * grains from the back of the others' ranges, so a late or preempted thread
 * still costs little. Kernels whose items follow the data (rows of an image)
 * then find what the previous kernel wrote in their own core's cache: a
 * depthwise Conv and the 1x1 Conv after it, both cut by pixels. Its
 * threads are those the share allows when the call starts. The same rule
 * as bd_parallel_claim holds: which thread runs an item never changes what
 * it computes. */
void bd_parallel_affine(int workers, int64_t n, int64_t grain,
                        void (*fn)(void *ctx, int64_t worker, int64_t begin, int64_t end), void *ctx);

/* C = alpha op(A) op(B) + beta C, row-major, on up to `threads` threads. The
 * product is cut into a grid of tiles that depends on M, N and K only (at most
 * BD_GEMM_TILE_M x BD_GEMM_TILE_N, halved down to BD_GEMM_TILE_MIN_M x
 * BD_GEMM_TILE_MIN_N until there are 16 tiles, so that a 128 x 384 product
 * still feeds every core: bd_gemm_tile_grid), and each tile is one
 * single-threaded OpenBLAS call, whatever thread runs it: so the bits of C are
 * the same for any thread count and any number of plan streams (OpenBLAS's own
 * threading changes them). */
#define BD_GEMM_TILE_M 256
#define BD_GEMM_TILE_N 512
#define BD_GEMM_TILE_MIN_M 32
#define BD_GEMM_TILE_MIN_N 64
void bd_gemm_tile_grid(int64_t m, int64_t n, int64_t k, int64_t *tm, int64_t *tn);
/* The grid of braid's own kernels (whose bits do not depend on it): all rows
 * in one tile up to BD_GEMM_STRIP_M, the columns cut into strips of a
 * multiple of 32 until there are 16 tiles (bd_gemm_strip_grid). */
#define BD_GEMM_STRIP_M 240
void bd_gemm_strip_grid(int64_t m, int64_t n, int64_t k, int64_t *tm, int64_t *tn);
void bd_sgemm(int threads, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

#endif
