/* algo.c: the choice of a cuDNN algorithm among the heuristic's candidates,
 * from timings a callback supplies, and the process-wide cache of those
 * choices (algo.h). Plain C, no CUDA: the CPU tests run it. */
#include "backend/cuda/common/algo.h"

#include <pthread.h>
#include <string.h>

static int eligible(const bd_algo_cand *c, size_t budget, int tf32)
{
    if (c->ws > budget || c->math == BD_MATH_ALLOW_CONVERSION) return 0;
    return tf32 || c->math == BD_MATH_FMA || c->math == BD_MATH_DEFAULT;
}

void bd_algo_choose(const bd_algo_cand *cands, int n, size_t budget, int tf32, bd_algo_timer timer, void *ctx,
                    int fallback_algo, bd_algo_pick *out)
{
    bd_algo_cand list[BD_ALGO_MAX_TIMED];
    int m = 0;
    memset(out, 0, sizeof *out);
    /* The eligible candidates in the heuristic's order; with TF32 off, one per
     * algorithm, run with FMA math (an FMA entry and a DEFAULT entry of one
     * algorithm are the same run then). */
    for (int i = 0; i < n; i++) {
        if (!eligible(&cands[i], budget, tf32)) continue;
        bd_algo_cand c = cands[i];
        if (!tf32) c.math = BD_MATH_FMA;
        int dup = 0;
        for (int j = 0; j < m && !dup; j++) dup = list[j].algo == c.algo && list[j].math == c.math;
        if (dup) continue;
        out->eligible++;
        if (m < BD_ALGO_MAX_TIMED) list[m++] = c;
    }
    if (m == 0) {
        out->algo = fallback_algo;
        out->math = tf32 ? BD_MATH_DEFAULT : BD_MATH_FMA;
        out->fallback = 1;
        return;
    }
    int best = -1;
    double best_ms = 0;
    for (int i = 0; timer && i < m; i++) {
        double ms = 0;
        out->timed++;
        if (timer(ctx, &list[i], &ms) != 0 || !(ms >= 0)) { out->refused++; continue; }
        if (best < 0 || ms < best_ms) best = i, best_ms = ms;
    }
    if (best >= 0) {
        out->tuned = 1;
        out->ms = best_ms;
    } else {
        best = 0;
    }
    out->algo = list[best].algo;
    out->math = list[best].math;
    out->ws = list[best].ws;
}

#define ALGO_CACHE 512
static struct {
    pthread_mutex_t mu;
    int n, next;
    long hits, misses;
    bd_algo_key key[ALGO_CACHE];
    bd_algo_pick pick[ALGO_CACHE];
} g_algo = {.mu = PTHREAD_MUTEX_INITIALIZER};

int bd_algo_cache_get(const bd_algo_key *k, bd_algo_pick *out)
{
    int found = 0;
    pthread_mutex_lock(&g_algo.mu);
    for (int i = 0; i < g_algo.n && !found; i++)
        if (!memcmp(&g_algo.key[i], k, sizeof *k)) {
            *out = g_algo.pick[i];
            found = 1;
        }
    if (found) g_algo.hits++;
    else g_algo.misses++;
    pthread_mutex_unlock(&g_algo.mu);
    return found;
}

void bd_algo_cache_put(const bd_algo_key *k, const bd_algo_pick *p)
{
    pthread_mutex_lock(&g_algo.mu);
    int slot = -1;
    for (int i = 0; i < g_algo.n && slot < 0; i++)
        if (!memcmp(&g_algo.key[i], k, sizeof *k)) slot = i;
    if (slot < 0) {
        if (g_algo.n < ALGO_CACHE) slot = g_algo.n++;
        else slot = g_algo.next, g_algo.next = (g_algo.next + 1) % ALGO_CACHE; /* full: replace the oldest */
    }
    g_algo.key[slot] = *k;
    g_algo.pick[slot] = *p;
    pthread_mutex_unlock(&g_algo.mu);
}

void bd_algo_cache_stats(long *hits, long *misses, int *entries)
{
    pthread_mutex_lock(&g_algo.mu);
    if (hits) *hits = g_algo.hits;
    if (misses) *misses = g_algo.misses;
    if (entries) *entries = g_algo.n;
    pthread_mutex_unlock(&g_algo.mu);
}

void bd_algo_cache_clear(void)
{
    pthread_mutex_lock(&g_algo.mu);
    g_algo.n = g_algo.next = 0;
    g_algo.hits = g_algo.misses = 0;
    pthread_mutex_unlock(&g_algo.mu);
}
