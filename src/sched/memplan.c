/* memplan.c: the stream-aware memory planner. Every buffer gets an offset in
 * one arena; two buffers share bytes only when every access of one (its
 * producer and all its readers) happens before the producer of the other in
 * the finished plan, so reuse is never a race between streams. A kept buffer
 * (read after the plan, by a later stage) is never followed in its bytes. */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

typedef struct by_size {
    size_t size;
    int producer, b;
} by_size;

static int by_size_cmp(const void *x, const void *y)
{
    const by_size *a = x, *b = y;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->producer != b->producer) return a->producer - b->producer;
    return a->b - b->b;
}

/* Accesses of each buffer as (stream, last position on it) pairs. */
typedef struct accesses {
    int *start, *stream, *last;
    int *last_node; /* per buffer: its highest-numbered access */
} accesses;

/* Every access of b1 happens before the producer of b2 launches. Streams run
 * in node order and events point forward, so that needs every access to be
 * numbered below the producer: a cheap test that settles most pairs. */
static int wholly_before(const accesses *a, const bd_sched_input *in, const int *clock, int S, int b1, int b2)
{
    if (in->buf_keep && in->buf_keep[b1]) return 0; /* read after the plan ends */
    if (a->last_node[b1] >= in->buf_producer[b2]) return 0;
    const int *cx = clock + (size_t)in->buf_producer[b2] * S;
    for (int k = a->start[b1]; k < a->start[b1 + 1]; k++)
        if (a->last[k] > cx[a->stream[k]]) return 0;
    return 1;
}

braid_status bd_memplan(const bd_sched_input *in, bd_plan *p, const int *pos, const int *clock, bd_err *e)
{
    braid_status st = BRAID_OK;
    const int B = in->n_bufs, S = p->n_streams;
    size_t *asz = NULL;
    by_size *order = NULL;
    int *placed = NULL, *slot = NULL, *seen = NULL;
    accesses a = {0};
    p->arena_size = p->sum_bufs = 0;
    p->buf_offset = bd_calloc((size_t)B + 1, sizeof *p->buf_offset);
    asz = bd_malloc(((size_t)B + 1) * sizeof *asz);
    order = bd_malloc(((size_t)B + 1) * sizeof *order);
    placed = bd_malloc(((size_t)B + 1) * sizeof *placed);
    a.start = bd_malloc(((size_t)B + 1) * sizeof *a.start);
    a.last_node = bd_malloc(((size_t)B + 1) * sizeof *a.last_node);
    slot = bd_malloc(((size_t)S + 1) * sizeof *slot);
    seen = bd_malloc(((size_t)S + 1) * sizeof *seen);
    BD_CHECK_ALLOC(e, p->buf_offset);
    BD_CHECK_ALLOC(e, asz);
    BD_CHECK_ALLOC(e, order);
    BD_CHECK_ALLOC(e, placed);
    BD_CHECK_ALLOC(e, a.start);
    BD_CHECK_ALLOC(e, a.last_node);
    BD_CHECK_ALLOC(e, slot);
    BD_CHECK_ALLOC(e, seen);
    for (int b = 0; b < B; b++) {
        BD_TRY(bd_sched_aligned_size(in, b, &asz[b], e));
        if (p->sum_bufs > SIZE_MAX - asz[b]) {
            st = BD_FAIL(e, BRAID_ERR_LIMIT, "the buffers of this graph add up to more bytes than an arena can hold");
            goto fail;
        }
        p->sum_bufs += asz[b];
    }

    /* Per buffer, per stream it touches, the last position it is touched at. */
    size_t n_acc = 0;
    for (int b = 0; b < B; b++) n_acc += 1 + (size_t)(in->use_start[b + 1] - in->use_start[b]);
    a.stream = bd_malloc((n_acc + 1) * sizeof *a.stream);
    a.last = bd_malloc((n_acc + 1) * sizeof *a.last);
    BD_CHECK_ALLOC(e, a.stream);
    BD_CHECK_ALLOC(e, a.last);
    for (int s = 0; s < S; s++) seen[s] = -1;
    int m = 0;
    for (int b = 0; b < B; b++) {
        a.start[b] = m;
        a.last_node[b] = in->buf_producer[b];
        for (int k = in->use_start[b] - 1; k < in->use_start[b + 1]; k++) {
            int v = k < in->use_start[b] ? in->buf_producer[b] : in->use[k], s = p->node_stream[v];
            if (v > a.last_node[b]) a.last_node[b] = v;
            if (seen[s] != b) { seen[s] = b; slot[s] = m; a.stream[m] = s; a.last[m] = pos[v]; m++; }
            else if (pos[v] > a.last[slot[s]]) a.last[slot[s]] = pos[v];
        }
    }
    a.start[B] = m;

    /* Largest first, each at the lowest offset clear of every placed buffer
     * whose lifetime is not ordered with its own. */
    for (int b = 0; b < B; b++) order[b] = (by_size){asz[b], in->buf_producer[b], b};
    qsort(order, (size_t)B, sizeof *order, by_size_cmp);
    /* placed[] is kept sorted by offset, so one sweep finds the lowest gap:
     * a placed buffer moves the candidate offset only if it overlaps the
     * candidate range and its lifetime is not ordered with b's. */
    int n_placed = 0;
    for (int i = 0; i < B; i++) {
        int b = order[i].b, at = n_placed;
        size_t off = 0, sz = asz[b];
        if (sz == 0) { p->buf_offset[b] = 0; continue; }
        for (int j = 0; j < n_placed; j++) {
            int q = placed[j];
            size_t lo = p->buf_offset[q], hi = lo + asz[q];
            if (lo >= off + sz) break;
            if (hi <= off) continue;
            if (wholly_before(&a, in, clock, S, b, q) || wholly_before(&a, in, clock, S, q, b)) continue;
            off = hi;
        }
        p->buf_offset[b] = off;
        if (off + sz > p->arena_size) p->arena_size = off + sz;
        while (at > 0 && p->buf_offset[placed[at - 1]] > off) at--;
        memmove(placed + at + 1, placed + at, (size_t)(n_placed - at) * sizeof *placed);
        placed[at] = b;
        n_placed++;
    }
fail:
    bd_free(asz);
    bd_free(order);
    bd_free(placed);
    bd_free(slot);
    bd_free(seen);
    bd_free(a.start);
    bd_free(a.stream);
    bd_free(a.last);
    bd_free(a.last_node);
    return st;
}
