/* test_parallel: bd_parallel_for's helper pool hands every chunk out exactly
 * once, whether its helpers are still spinning from the last call (calls back
 * to back), parked (calls after a pause longer than the spin), or taken by
 * another caller at the same time (two threads calling at once); one caller
 * asking for 2 threads call after call starts one helper, not more
 * (pool_size_test); parts go first to the same thread call after call
 * (parts_test); bd_parallel_affine runs each item once, on the worker
 * whose range holds it unless that worker stalls, when the others take its
 * range's back (affine_test); and a stream thread's share of the budget
 * caps its calls (share_test). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/parallel.h"
#include "check.h"

typedef struct marks {
    int n;
    int *hit; /* one counter per item, incremented atomically */
} marks;

static void mark(void *ctx, int64_t begin, int64_t end)
{
    marks *m = ctx;
    for (int64_t i = begin; i < end; i++) __atomic_add_fetch(&m->hit[i], 1, __ATOMIC_RELAXED);
}

/* One call over n items on `threads` threads; 1 when every item was done once. */
static int once(int threads, int n)
{
    marks m = {n, calloc((size_t)n + 1, sizeof(int))};
    bd_parallel_for(threads, n, 1, mark, &m);
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= m.hit[i] == 1;
    free(m.hit);
    return ok;
}

static void *caller(void *arg)
{
    int *ok = arg;
    for (int r = 0; r < 300; r++) *ok &= once(1 + r % 5, 1 + r % 97);
    return NULL;
}

/* Items that note whether the caller's thread ran them. */
typedef struct who {
    pthread_t caller;
    int n, *other; /* per item: 1 when a helper ran it */
} who;

static void note(void *ctx, int64_t begin, int64_t end)
{
    who *w = ctx;
    for (int64_t i = begin; i < end; i++) w->other[i] = !pthread_equal(pthread_self(), w->caller);
}

/* The share: with 2 busy streams on a budget of 2, a call asking for 4
 * threads runs on the caller alone, every item once; with the share unset
 * again, items are still each run once. */
static void share_test(void)
{
    int busy = 2;
    who w = {pthread_self(), 64, calloc(64, sizeof(int))};
    bd_parallel_share old = bd_parallel_set_share((bd_parallel_share){&busy, 2});
    for (int r = 0; r < 50; r++) {
        for (int i = 0; i < w.n; i++) w.other[i] = -1;
        bd_parallel_for(4, w.n, 1, note, &w);
        int helpers = 0, missed = 0;
        for (int i = 0; i < w.n; i++) helpers += w.other[i] == 1, missed += w.other[i] < 0;
        CHECK_EQ_INT(helpers, 0);
        CHECK_EQ_INT(missed, 0);
    }
    bd_parallel_set_share(old);
    CHECK(once(4, 64));
    free(w.other);
}

/* A caller asking for 2 threads, call after call with no pause: the helper
 * that served a call is back among the idle ones before the caller returns,
 * so the next call finds it and the pool stays at one helper (it once grew
 * to three on 2 cores, the spare ones spinning on the cores the working
 * threads needed). Items long enough that the helper takes part. */
static void spin_items(void *ctx, int64_t begin, int64_t end)
{
    (void)ctx;
    for (int64_t i = begin; i < end; i++) {
        volatile double x = 1.0; /* each item's own: no data shared between threads */
        for (int q = 0; q < 2000; q++) x = x * 1.0000001 + 1e-9;
    }
}

static void pool_size_test(void)
{
    CHECK_EQ_INT(bd_parallel_helpers(), 0);
    for (int r = 0; r < 3000; r++) bd_parallel_for(2, 8, 1, spin_items, NULL);
    CHECK_EQ_INT(bd_parallel_helpers(), 1);
}

/* bd_parallel_parts: every part once per call; over 300 calls of 2 parts
 * (after pool_size_test: one helper), part 1 runs on the caller or on that
 * one helper, never a third thread; 5 parts (more than the pool has
 * helpers) still each run once. */
typedef struct parts_log {
    pthread_t who[8];
    int runs[8];
} parts_log;

static void log_part(void *ctx, int64_t begin, int64_t end)
{
    parts_log *l = ctx;
    for (int64_t i = begin; i < end; i++) {
        l->who[i] = pthread_self();
        __atomic_add_fetch(&l->runs[i], 1, __ATOMIC_RELAXED);
    }
}

static void parts_test(void)
{
    pthread_t self = pthread_self(), other = self;
    int others = 0, bad = 0;
    for (int r = 0; r < 300; r++) {
        parts_log l = {0};
        bd_parallel_parts(2, log_part, &l);
        bad += l.runs[0] != 1 || l.runs[1] != 1;
        if (!pthread_equal(l.who[1], self)) {
            if (!others++) other = l.who[1];
            else bad += !pthread_equal(l.who[1], other);
        }
    }
    CHECK_EQ_INT(bad, 0);
    parts_log l = {0};
    bd_parallel_parts(5, log_part, &l);
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(l.runs[i], i < 5);
    bd_parallel_parts(0, log_part, &l); /* nothing to do */
}

/* bd_parallel_affine's items: which worker ran each, how often; worker 0
 * (the caller) sleeps in its first item when `stall` is set. */
typedef struct aff_log {
    int n, stall;
    int runs[256], by[256];
    int bad_worker;
} aff_log;

static void aff_item(void *ctx, int64_t worker, int64_t begin, int64_t end)
{
    aff_log *l = ctx;
    if (worker < 0 || worker >= 2) __atomic_add_fetch(&l->bad_worker, 1, __ATOMIC_RELAXED);
    for (int64_t i = begin; i < end; i++) {
        __atomic_add_fetch(&l->runs[i], 1, __ATOMIC_RELAXED);
        l->by[i] = (int)worker;
        if (l->stall && worker == 0 && i == 0) {
            struct timespec ts = {0, 20000000}; /* 20 ms: the helper runs out of its own items first */
            nanosleep(&ts, NULL);
        }
    }
}

static void affine_test(void)
{
    /* every item once, for any count and grain; worker indices in range */
    int bad = 0;
    for (int r = 0; r < 200; r++) {
        aff_log l = {.n = 1 + r % 200};
        bd_parallel_affine(2, l.n, 1 + r % 7, aff_item, &l);
        for (int i = 0; i < l.n; i++) bad += l.runs[i] != 1;
        bad += l.bad_worker;
    }
    CHECK_EQ_INT(bad, 0);
    /* the caller stalls in item 0: its range [0, 64) loses its back to the
     * helper, which has run all of [64, 128) by then; the caller keeps the
     * item it was in. Counted over 20 calls so that a helper the OS runs late
     * once does not fail the test: every call runs each item once, and in
     * most the helper took more than its own half. */
    int stolen_calls = 0;
    bad = 0;
    for (int r = 0; r < 20; r++) {
        aff_log l = {.n = 128, .stall = 1};
        bd_parallel_affine(2, l.n, 1, aff_item, &l);
        int helper_items = 0;
        for (int i = 0; i < l.n; i++) {
            bad += l.runs[i] != 1;
            helper_items += l.by[i] == 1;
        }
        bad += l.by[0] != 0;
        stolen_calls += helper_items > 64;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(stolen_calls >= 15);
    /* one worker: the caller runs everything in order */
    aff_log l = {.n = 10};
    bd_parallel_affine(1, l.n, 3, aff_item, &l);
    for (int i = 0; i < l.n; i++) CHECK(l.runs[i] == 1 && l.by[i] == 0);
    bd_parallel_affine(2, 0, 1, aff_item, &l); /* nothing to do */
}

int main(void)
{
    pool_size_test();
    parts_test();
    affine_test();
    share_test();
    int ok = 1;
    for (int r = 0; r < 500; r++) ok &= once(1 + r % 7, 1 + r % 50); /* back to back: helpers spinning */
    CHECK(ok);
    ok = 1;
    for (int r = 0; r < 5; r++) { /* after 2 ms idle: helpers parked */
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        ok &= once(4, 64);
    }
    CHECK(ok);
    int a = 1, b = 1;
    pthread_t t1, t2;
    pthread_create(&t1, NULL, caller, &a);
    pthread_create(&t2, NULL, caller, &b);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    CHECK(a && b);
    CHECK(once(8, 0)); /* nothing to do */
    return check_done();
}
