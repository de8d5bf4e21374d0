/* parallel.c: bd_parallel_for (grains of items claimed by the caller and by
 * helper threads of a process-wide pool, each thread from its own range
 * first when the call has the whole budget: bd_parallel_affine), parts,
 * claims, and the tiled, thread-count-independent bd_sgemm over OpenBLAS. */
#include "backend/cpu/parallel.h"

#include <cblas.h>
#include <pthread.h>

#include "backend/cpu/scratch.h"
#include "backend/cpu/sgemm.h"
#include "util/common.h"

#define MAX_THREADS 64

/* One call: its items are claimed grain by grain from `next` by the caller
 * and by every helper that took the call, so a helper that is slow to wake
 * (parked, or descheduled on a loaded machine) costs the caller nothing:
 * the caller runs what nobody claimed, takes back the offers nobody picked
 * up, and waits only for helpers that are running a grain. */
typedef struct call {
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t n, grain;
    int64_t next; /* atomic: the first item nobody claimed yet */
    int done;     /* atomic: helpers that took the call and have finished with it */
    int spin;     /* whether its helpers should spin for the next call: not when the
                   * caller's share is one thread (the other cores run other streams) */
    int parts;    /* bd_parallel_parts: item i goes first to the thread of slot i */
    uint64_t taken; /* parts: atomic, bit i set once item i is claimed (MAX_THREADS items at most) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} call;

static __thread bd_parallel_share tl_share;

bd_parallel_share bd_parallel_set_share(bd_parallel_share s)
{
    bd_parallel_share old = tl_share;
    tl_share = s;
    return old;
}

/* The threads this thread's share allows now, from 1 to cap. */
static int64_t share_now(int64_t cap)
{
    if (!tl_share.busy) return cap;
    int busy = __atomic_load_n(tl_share.busy, __ATOMIC_RELAXED);
    return BD_MAX((int64_t)1, BD_MIN(cap, (int64_t)(tl_share.budget / BD_MAX(busy, 1))));
}

/* Runs grains of c until none is left; parts: the item of this thread's
 * slot first (0 the caller, 1 + a helper's index in the pool), then any
 * other nobody has claimed. */
static void drain(call *c, int slot)
{
    if (c->parts) {
        if (slot < c->n && !(__atomic_fetch_or(&c->taken, (uint64_t)1 << slot, __ATOMIC_ACQ_REL) >> slot & 1))
            c->fn(c->ctx, slot, slot + 1);
        for (int64_t q = 0; q < c->n; q++)
            if (!(__atomic_fetch_or(&c->taken, (uint64_t)1 << q, __ATOMIC_ACQ_REL) >> q & 1)) c->fn(c->ctx, q, q + 1);
        return;
    }
    for (;;) {
        int64_t b = __atomic_fetch_add(&c->next, c->grain, __ATOMIC_RELAXED);
        if (b >= c->n) return;
        c->fn(c->ctx, b, BD_MIN(b + c->grain, c->n));
    }
}

/* The helper pool: threads started on demand (never more than MAX_THREADS - 1)
 * that park between calls, so that a kernel does not pay for starting and
 * ending threads on every call. Calls from several stream threads at once
 * each take the idle helpers they find: nobody waits for a helper. Static
 * storage: nothing here can fail to allocate. */
typedef struct helper {
    pthread_t tid;
    pthread_cond_t cv;
    call *job;    /* atomic. NULL: idle (in pool.idle); a call: offered by its caller; TAKEN: running it */
    int started;
    int sleeping; /* parked on cv: a caller must signal it (under pool.mu) */
} helper;

#define TAKEN ((call *)&pool) /* never a call's address */

/* How long an idle helper, and a caller waiting for its helpers, spin before
 * they sleep: kernels come in quick succession (a transformer layer is a
 * dozen of them within 100 us), and waking a parked thread costs tens of
 * microseconds, more on a loaded machine. */
#define SPIN_ROUNDS 4000 /* about 70 to 150 us: PAUSE takes 40 to 140 cycles */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static struct {
    pthread_mutex_t mu;
    helper h[MAX_THREADS];
    int idle[MAX_THREADS], n_idle, n_started;
    int quit;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *helper_main(void *arg)
{
    helper *h = arg;
    int spin = 1;
    for (;;) {
        call *c = NULL;
        for (int i = 0; spin && i < SPIN_ROUNDS; i++) { /* spin a while before parking */
            if ((c = __atomic_load_n(&h->job, __ATOMIC_ACQUIRE)) || __atomic_load_n(&pool.quit, __ATOMIC_RELAXED)) break;
            cpu_relax();
        }
        pthread_mutex_lock(&pool.mu);
        while (!(c = __atomic_load_n(&h->job, __ATOMIC_ACQUIRE)) && !pool.quit) {
            h->sleeping = 1;
            pthread_cond_wait(&h->cv, &pool.mu);
            h->sleeping = 0;
        }
        pthread_mutex_unlock(&pool.mu);
        if (!c) break; /* quitting, with nothing offered */
        /* Take the offer unless its caller has taken it back (then the
         * caller has put this helper back among the idle ones). */
        if (!__atomic_compare_exchange_n(&h->job, &c, TAKEN, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        drain(c, (int)(h - pool.h) + 1);
        spin = __atomic_load_n(&c->spin, __ATOMIC_RELAXED);
        /* Back among the idle helpers before the caller learns it is done:
         * else a caller's next call, coming at once, finds no idle helper
         * and starts another thread, and a pool of more helpers than cores
         * has idle ones spinning on the cores the working ones need. An
         * offer made from here on waits in h->job for the next round. */
        pthread_mutex_lock(&pool.mu);
        __atomic_store_n(&h->job, NULL, __ATOMIC_RELAXED);
        pool.idle[pool.n_idle++] = (int)(h - pool.h);
        pthread_mutex_unlock(&pool.mu);
        pthread_mutex_lock(&c->mu);
        __atomic_add_fetch(&c->done, 1, __ATOMIC_RELEASE);
        pthread_cond_signal(&c->cv);
        pthread_mutex_unlock(&c->mu); /* the last touch of c: its caller may return now */
    }
    return NULL;
}

/* Offers c to an idle helper (starting one if the pool may grow); the helper,
 * or NULL when none can take it. Called with pool.mu held. */
static helper *give(call *c)
{
    if (pool.quit) return NULL;
    if (!pool.n_idle && pool.n_started < MAX_THREADS - 1) {
        helper *h = &pool.h[pool.n_started];
        if (pthread_cond_init(&h->cv, NULL) != 0) return NULL;
        if (pthread_create(&h->tid, NULL, helper_main, h) != 0) {
            pthread_cond_destroy(&h->cv);
            return NULL;
        }
        h->started = 1;
        pool.idle[pool.n_idle++] = pool.n_started++;
    }
    if (!pool.n_idle) return NULL;
    helper *h = &pool.h[pool.idle[--pool.n_idle]];
    __atomic_store_n(&h->job, c, __ATOMIC_RELEASE);
    if (h->sleeping) pthread_cond_signal(&h->cv);
    return h;
}

/* Stops the helpers when the library is unloaded or the process ends, so no
 * thread is left running code that is gone. */
__attribute__((destructor)) static void pool_stop(void)
{
    pthread_mutex_lock(&pool.mu);
    __atomic_store_n(&pool.quit, 1, __ATOMIC_RELAXED);
    int n = pool.n_started;
    for (int i = 0; i < n; i++) pthread_cond_signal(&pool.h[i].cv);
    pthread_mutex_unlock(&pool.mu);
    for (int i = 0; i < n; i++) {
        pthread_join(pool.h[i].tid, NULL);
        pthread_cond_destroy(&pool.h[i].cv);
    }
}

int bd_parallel_helpers(void)
{
    pthread_mutex_lock(&pool.mu);
    int n = pool.n_started;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

/* Runs c (fn, ctx, n, and grain or parts set) on up to nt threads. */
static void run_call(call *c, int64_t nt)
{
    int64_t n = c->n;
    c->spin = 1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    helper *given[MAX_THREADS];
    int n_given = 0;
    int64_t allow = share_now(nt);
    if (allow > 1) {
        pthread_mutex_lock(&pool.mu);
        for (int64_t i = 1; i < allow; i++) {
            helper *h = give(c);
            if (!h) break;
            given[n_given++] = h;
        }
        pthread_mutex_unlock(&pool.mu);
    }
    /* The caller's grains; between them, more helpers when the share grew. */
    if (c->parts) drain(c, 0);
    for (; !c->parts;) {
        int64_t b = __atomic_fetch_add(&c->next, c->grain, __ATOMIC_RELAXED);
        if (b >= n) break;
        c->fn(c->ctx, b, BD_MIN(b + c->grain, n));
        if (tl_share.busy && b + c->grain >= n) __atomic_store_n(&c->spin, share_now(nt) > 1, __ATOMIC_RELAXED);
        if (tl_share.busy && n_given + 1 < nt && b + c->grain < n && (allow = share_now(nt)) > n_given + 1) {
            pthread_mutex_lock(&pool.mu);
            while (n_given + 1 < allow) {
                helper *h = give(c);
                if (!h) break;
                given[n_given++] = h;
            }
            pthread_mutex_unlock(&pool.mu);
        }
    }
    /* Every item is claimed: take back the offers nobody picked up. */
    int taken = 0, back = 0;
    for (int i = 0; i < n_given; i++) {
        call *want = c;
        if (__atomic_compare_exchange_n(&given[i]->job, &want, NULL, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            given[back++] = given[i];
        else taken++;
    }
    if (back) {
        pthread_mutex_lock(&pool.mu);
        for (int i = 0; i < back; i++) pool.idle[pool.n_idle++] = (int)(given[i] - pool.h);
        pthread_mutex_unlock(&pool.mu);
    }
    /* Spin first; then the lock also waits for the last helper to let go of
     * c->mu before c is destroyed. */
    for (int i = 0; i < SPIN_ROUNDS && __atomic_load_n(&c->done, __ATOMIC_ACQUIRE) < taken; i++) cpu_relax();
    pthread_mutex_lock(&c->mu);
    while (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) < taken) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

/* bd_parallel_affine: one range of items per part (thread slot), packed
 * as (begin, end) in 64 bits so that its owner, claiming from the front, and
 * a thief, claiming from the back, change it with one compare-and-swap. */
typedef struct affine_job {
    void (*fn)(void *, int64_t, int64_t, int64_t);
    void *ctx;
    int64_t grain;
    int parts;
    uint64_t range[MAX_THREADS]; /* atomic: begin in the low 32 bits, end in the high */
} affine_job;

/* Claims one grain of range r, from its front (own) or its back; 0 when it
 * is empty. Ranges begin at multiples of the grain, so every grain is
 * [k grain, (k + 1) grain) cut to n, as bd_parallel_for's always were. */
static int affine_take(uint64_t *r, int64_t grain, int front, int64_t *b, int64_t *e)
{
    uint64_t v = __atomic_load_n(r, __ATOMIC_RELAXED);
    for (;;) {
        int64_t lo = (int64_t)(v & 0xffffffffu), hi = (int64_t)(v >> 32);
        if (lo >= hi) return 0;
        int64_t nb = front ? lo : (hi - 1) / grain * grain, ne = front ? BD_MIN(lo + grain, hi) : hi;
        uint64_t w = front ? (uint64_t)ne | (uint64_t)hi << 32 : (uint64_t)lo | (uint64_t)nb << 32;
        if (__atomic_compare_exchange_n(r, &v, w, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            *b = nb;
            *e = ne;
            return 1;
        }
    }
}

static void affine_part(void *ctx, int64_t part, int64_t part_end)
{
    (void)part_end;
    affine_job *a = ctx;
    int64_t b, e;
    while (affine_take(&a->range[part], a->grain, 1, &b, &e)) a->fn(a->ctx, part, b, e);
    for (int q = 1; q < a->parts; q++) /* then the others' last grains */
        while (affine_take(&a->range[(part + q) % a->parts], a->grain, 0, &b, &e)) a->fn(a->ctx, part, b, e);
}

void bd_parallel_affine(int workers, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t, int64_t),
                        void *ctx)
{
    if (n <= 0) return;
    grain = BD_MAX(grain, (int64_t)1);
    workers = (int)BD_MAX((int64_t)1, BD_MIN((int64_t)BD_MIN(workers, MAX_THREADS), BD_CEIL_DIV(n, grain)));
    if (workers == 1 || n > 0xffffffffLL) {
        bd_parallel_claim(workers, n, grain, fn, ctx);
        return;
    }
    affine_job a = {.fn = fn, .ctx = ctx, .grain = grain, .parts = workers};
    for (int i = 0; i < workers; i++) { /* [n i / W, n (i + 1) / W), the ends rounded down to grains */
        int64_t lo = n * i / workers / grain * grain, hi = i + 1 < workers ? n * (i + 1) / workers / grain * grain : n;
        a.range[i] = (uint64_t)lo | (uint64_t)hi << 32;
    }
    bd_parallel_parts(workers, affine_part, &a);
}

/* bd_parallel_for over bd_parallel_affine */
typedef struct plain_job {
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
} plain_job;

static void plain_grain(void *ctx, int64_t worker, int64_t begin, int64_t end)
{
    (void)worker;
    const plain_job *p = ctx;
    p->fn(p->ctx, begin, end);
}

void bd_parallel_for(int threads, int64_t n, int64_t min_chunk, void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    if (n <= 0) return;
    int64_t nt = BD_MIN((int64_t)BD_MAX(threads, 1), (int64_t)MAX_THREADS);
    nt = BD_MIN(nt, n / BD_MAX(min_chunk, 1));
    if (nt <= 1) { fn(ctx, 0, n); return; }
    /* Grains of about an eighth of a thread's share (at least min_chunk):
     * late helpers leave little to wait for, and a grain's call costs little. */
    int64_t grain = BD_MAX(BD_MAX(min_chunk, (int64_t)1), n / (nt * 8));
    /* With the whole budget for this call (a serial plan's, or no plan's),
     * each thread starts on its own contiguous share, so that consecutive
     * kernels over the same data (elementwise ops on an NHWC map, the Conv
     * after them) run its same part on the same core; the grains are the
     * same. While other streams share the budget, one counter for all, so
     * that helpers join between grains as soon as the share grows. */
    if (share_now(nt) >= nt) {
        plain_job pj = {fn, ctx};
        bd_parallel_affine((int)nt, n, grain, plain_grain, &pj);
        return;
    }
    call cl = {.fn = fn, .ctx = ctx, .n = n, .grain = grain};
    run_call(&cl, nt);
}

void bd_parallel_parts(int parts, void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    if (parts <= 0) return;
    if (parts == 1) { fn(ctx, 0, 1); return; }
    call cl = {.fn = fn, .ctx = ctx, .n = BD_MIN(parts, MAX_THREADS), .grain = 1, .parts = 1};
    run_call(&cl, cl.n);
}

/* bd_parallel_claim: `workers` items of bd_parallel_for, each a worker that
 * claims grains from one counter until none is left. */
typedef struct claim_job {
    void (*fn)(void *, int64_t, int64_t, int64_t);
    void *ctx;
    int64_t n, grain, next; /* next: the first item no thread has claimed (atomic) */
} claim_job;

static void claim_chunk(void *ctx, int64_t begin, int64_t end)
{
    claim_job *c = ctx;
    for (int64_t wi = begin; wi < end; wi++)
        for (;;) {
            int64_t b = __atomic_fetch_add(&c->next, c->grain, __ATOMIC_RELAXED);
            if (b >= c->n) break;
            c->fn(c->ctx, wi, b, BD_MIN(b + c->grain, c->n));
        }
}

void bd_parallel_claim(int workers, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t, int64_t),
                       void *ctx)
{
    if (n <= 0) return;
    claim_job c = {fn, ctx, n, BD_MAX(grain, (int64_t)1), 0};
    workers = (int)BD_MAX((int64_t)1, BD_MIN((int64_t)workers, BD_CEIL_DIV(n, c.grain)));
    if (workers == 1) { fn(ctx, 0, 0, n); return; }
    bd_parallel_for(workers, workers, 1, claim_chunk, &c);
}

typedef struct gemm_job {
    int ta, tb, dot; /* dot: the tiles run bd_sgemm_dot with kernel dot */
    int64_t m, n, k, tm, tn, tiles_m;
    float alpha, beta;
    const float *a, *b;
    float *c;
    int64_t lda, ldb, ldc;
} gemm_job;

static void gemm_tiles(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        /* Column-major over the tiles: the tiles that follow one another
         * share B's columns, which then come from cache (a 1536 x 384 B is
         * larger than a core's L2). */
        int64_t m0 = (t % j->tiles_m) * j->tm, n0 = (t / j->tiles_m) * j->tn;
        int64_t mm = BD_MIN(j->tm, j->m - m0), nn = BD_MIN(j->tn, j->n - n0);
        const float *a = j->ta ? j->a + m0 : j->a + m0 * j->lda;
        const float *b = j->tb ? j->b + n0 * j->ldb : j->b + n0;
        if (j->dot)
            bd_sgemm_dot(j->dot, mm, nn, j->k, j->alpha, a, j->lda, b, j->ldb, j->beta, j->c + m0 * j->ldc + n0, j->ldc);
        else
            bd_sgemm_tile(j->ta, j->tb, mm, nn, j->k, j->alpha, a, j->lda, b, j->ldb, j->beta,
                          j->c + m0 * j->ldc + n0, j->ldc);
    }
}

void bd_gemm_tile_grid(int64_t m, int64_t n, int64_t k, int64_t *tm, int64_t *tn)
{
    int64_t a = BD_MIN((int64_t)BD_GEMM_TILE_M, m), b = BD_MIN((int64_t)BD_GEMM_TILE_N, n);
    /* Halve the larger side (in units of its minimum; rounded up to 8 rows or
     * 16 columns) while the grid has fewer than 16 tiles and a tile keeps at
     * least 2^20 multiply-adds. */
    while (BD_CEIL_DIV(m, a) * BD_CEIL_DIV(n, b) < 16) {
        int64_t a2 = (BD_CEIL_DIV(a, 2) + 7) / 8 * 8, b2 = (BD_CEIL_DIV(b, 2) + 15) / 16 * 16;
        int can_a = a2 >= BD_GEMM_TILE_MIN_M && a2 < a, can_b = b2 >= BD_GEMM_TILE_MIN_N && b2 < b;
        if (!can_a && !can_b) break;
        int cut_n = can_b && (!can_a || b / BD_GEMM_TILE_MIN_N >= a / BD_GEMM_TILE_MIN_M);
        if (cut_n) a2 = a;
        else b2 = b;
        if (a2 * b2 * BD_MAX(k, 1) < ((int64_t)1 << 20)) break;
        a = a2;
        b = b2;
    }
    *tm = BD_MAX(a, (int64_t)1);
    *tn = BD_MAX(b, (int64_t)1);
}

void bd_gemm_strip_grid(int64_t m, int64_t n, int64_t k, int64_t *tm, int64_t *tn)
{
    /* Rows in as few tiles of at most BD_GEMM_STRIP_M as hold them (a
     * multiple of 12: whole microkernel rows); columns halved (to a multiple
     * of 32) while the grid has fewer than 16 tiles, a strip keeps 32
     * columns and 2^20 multiply-adds. */
    int64_t rt = BD_CEIL_DIV(m, (int64_t)BD_GEMM_STRIP_M), a = BD_MIN(m, (BD_CEIL_DIV(m, rt) + 11) / 12 * 12);
    int64_t b = BD_MIN(n, (int64_t)BD_GEMM_TILE_N);
    while (rt * BD_CEIL_DIV(n, b) < 16) {
        int64_t b2 = (BD_CEIL_DIV(b, 2) + 31) / 32 * 32;
        if (b2 < 32 || b2 >= b || a * b2 * BD_MAX(k, 1) < ((int64_t)1 << 20)) break;
        b = b2;
    }
    *tm = BD_MAX(a, (int64_t)1);
    *tn = BD_MAX(b, (int64_t)1);
}

void bd_sgemm(int threads, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
              int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0) return;
    int64_t tm, tn;
    /* braid's kernels take whole column strips: each tile packs its strip of
     * B once for all of A's rows (a Xeon with AVX-512, one thread: 128 x 1536
     * x 384 in 1.09 ms against 1.46 ms in 32 x 96 tiles, 128 x 384 x 1536
     * 1.10 against 1.25). Their bits do not depend on the tiles; OpenBLAS's
     * do, so its grid stays the shape's alone (bd_gemm_tile_grid). */
    int dotk = !trans_a && trans_b && m <= BD_SGEMM_DOT_MAX_M && k > 0;
    if (!dotk && bd_sgemm_kernel() != BD_SGEMM_OPENBLAS) bd_gemm_strip_grid(m, n, k, &tm, &tn);
    else bd_gemm_tile_grid(m, n, k, &tm, &tn);
    gemm_job j = {trans_a, trans_b, 0, m, n, k, tm, tn, BD_CEIL_DIV(m, tm), alpha, beta, a, b, c, lda, ldb, ldc};
    /* A few rows against B^T (a fully connected layer): braid's dot-product
     * kernel whatever OpenBLAS runs; it read B once where OpenBLAS packs it
     * (1.1x at 64 rows, 3x at 4, 8x at 1 row, on Zen 4 against Cooperlake).
     * Decided by the whole product's shape, so every tile takes the same. */
    float *apad = NULL;
    if (dotk) {
        j.dot = bd_sgemm_cpu_kernel();
        int64_t lp;
        if (j.dot && (apad = bd_sgemm_dot_pad(m, k, a, lda, &lp))) j.a = apad, j.lda = lp; /* once, not per tile */
    }
    int64_t tiles = j.tiles_m * BD_CEIL_DIV(n, tn);
    /* A thread is worth its start-up only for some work: 2^21 multiply-adds. */
    int64_t per_tile = BD_MIN(m, tm) * BD_MIN(n, tn) * BD_MAX(k, 1);
    int64_t min_tiles = BD_MAX((int64_t)1, ((int64_t)1 << 21) / BD_MAX(per_tile, 1));
    bd_parallel_for(threads, tiles, min_tiles, gemm_tiles, &j);
    bd_scratch_free(apad);
}
