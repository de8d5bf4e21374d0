/* algo.h: the choice of a cuDNN algorithm among the heuristic's candidates,
 * from timings a callback supplies, and the process-wide cache of those
 * choices. Part of the CUDA backend's host code that needs no GPU, compiled
 * into braid's core (and into libbraid_cuda.so, which links the core), so
 * that the CPU tests check it. No CUDA header here. */
#ifndef BD_CUDA_ALGO_H
#define BD_CUDA_ALGO_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

/* cudnnMathType_t's values. */
enum { BD_MATH_DEFAULT = 0, BD_MATH_TENSOR_OP = 1, BD_MATH_ALLOW_CONVERSION = 2, BD_MATH_FMA = 3 };

/* One candidate as cuDNN's heuristic lists it (best first): an algorithm,
 * the math type it was listed with, the workspace it needs. */
typedef struct bd_algo_cand {
    int algo;
    int math;
    size_t ws;
} bd_algo_cand;

/* Times candidate c as it would run (c->math is the math type to run it
 * with): 0 and *ms set, or nonzero when the library refuses it. */
typedef int (*bd_algo_timer)(void *ctx, const bd_algo_cand *c, double *ms);

#define BD_ALGO_MAX_TIMED 8 /* candidates timed at most, in the heuristic's order */

typedef struct bd_algo_pick {
    int algo, math;
    size_t ws;
    double ms;     /* its time (tuned only) */
    int tuned;     /* chosen by timing; 0: by the heuristic's order or the fallback */
    int eligible;  /* candidates that fit the budget and the math rule */
    int timed;     /* candidates timed */
    int refused;   /* candidates the timer refused */
    int fallback;  /* no candidate was eligible: the fallback algorithm */
} bd_algo_pick;

/* Picks the algorithm to run. A candidate is eligible when its workspace fits
 * budget and its math obeys tf32: ALLOW_CONVERSION (fp32 computed in fp16)
 * never; with tf32 off, only FMA and DEFAULT entries, both run with FMA math
 * (one candidate per algorithm); with tf32 on, each runs with its own math.
 * With a timer, up to BD_ALGO_MAX_TIMED eligible candidates are timed and the
 * fastest wins (ties: the heuristic's order); when the timer refuses them all,
 * or without a timer, the first eligible one wins. When none is eligible,
 * fallback_algo with no workspace (FMA math when tf32 is off, DEFAULT when on). */
void bd_algo_choose(const bd_algo_cand *cands, int n, size_t budget, int tf32, bd_algo_timer timer, void *ctx,
                    int fallback_algo, bd_algo_pick *out);

/* The process-wide cache of choices, keyed by everything that decides one
 * (direction, device, math rule, budget, the convolution's geometry): the
 * first run of a shape times, later plans and sessions reuse. Thread-safe,
 * fixed size (the oldest entry is replaced when full). */
#define BD_ALGO_KEY_LEN 48
typedef struct bd_algo_key {
    int64_t v[BD_ALGO_KEY_LEN];
} bd_algo_key;
int bd_algo_cache_get(const bd_algo_key *k, bd_algo_pick *out);
void bd_algo_cache_put(const bd_algo_key *k, const bd_algo_pick *p);
void bd_algo_cache_stats(long *hits, long *misses, int *entries);
void bd_algo_cache_clear(void);

#endif
