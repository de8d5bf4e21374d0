/* verify.c: the plan checker, written apart from the planner. It simulates
 * the command lists, derives happens-before from what actually ran (sets of
 * launched nodes carried through program order and record -> wait), and
 * checks every data edge and every pair of buffers that share bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

#define NAME(i, buf) bd_sched_node_name(in, (i), (buf), sizeof(buf))

typedef struct vspan {
    size_t lo, hi;
    int b;
} vspan;

static int vspan_cmp(const void *x, const void *y)
{
    const vspan *a = x, *b = y;
    if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
    return a->b - b->b;
}

/* Checks the plan's arrays before the simulation reads them. */
static braid_status check_shape(const bd_sched_input *in, const bd_plan *p, int *n_records, bd_err *e)
{
    const int n = in->n_nodes, S = p->n_streams, E = p->n_events;
    char nb[32];
    if (S < 1 || !p->stream_start || !p->node_stream)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "plan has %d streams and no command lists", S);
    if (E < 0 || (E > 0 && !p->event_node))
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "plan has %d events and no event nodes", E);
    if (p->stream_start[0] != 0)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "commands of stream 0 start at %d, not 0", p->stream_start[0]);
    for (int s = 0; s < S; s++)
        if (p->stream_start[s + 1] < p->stream_start[s])
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "commands of stream %d end before they start", s);
    if (p->stream_start[S] > 0 && !p->cmds) return BD_FAIL(e, BRAID_ERR_INTERNAL, "plan has no commands array");
    for (int v = 0; v < n; v++)
        if (p->node_stream[v] < 0 || p->node_stream[v] >= S)
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' is assigned to stream %d of %d", NAME(v, nb), p->node_stream[v], S);
    for (int k = 0; k < E; k++)
        if (p->event_node[k] < 0 || p->event_node[k] >= n)
            return BD_FAIL(e, BRAID_ERR_INTERNAL, "event e%d follows node %d, not a node", k, p->event_node[k]);
    for (int s = 0; s < S; s++)
        for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++) {
            bd_cmd cmd = p->cmds[c];
            int lim = cmd.kind == BD_CMD_LAUNCH ? n : E;
            if (cmd.kind != BD_CMD_LAUNCH && cmd.kind != BD_CMD_RECORD && cmd.kind != BD_CMD_WAIT)
                return BD_FAIL(e, BRAID_ERR_INTERNAL, "stream %d has a command of unknown kind %d", s, (int)cmd.kind);
            if (cmd.arg < 0 || cmd.arg >= lim)
                return BD_FAIL(e, BRAID_ERR_INTERNAL, "stream %d: %s %d is out of range (%d %s)", s,
                               cmd.kind == BD_CMD_LAUNCH ? "launch of node" : "event", cmd.arg, lim,
                               cmd.kind == BD_CMD_LAUNCH ? "nodes" : "events");
            if (cmd.kind == BD_CMD_RECORD && ++n_records[cmd.arg] > 1)
                return BD_FAIL(e, BRAID_ERR_INTERNAL, "event e%d is recorded more than once", cmd.arg);
        }
    for (int s = 0; s < S; s++)
        for (int c = p->stream_start[s]; c < p->stream_start[s + 1]; c++)
            if (p->cmds[c].kind == BD_CMD_WAIT && n_records[p->cmds[c].arg] == 0)
                return BD_FAIL(e, BRAID_ERR_INTERNAL, "stream %d waits on event e%d, which is never recorded", s, p->cmds[c].arg);
    if (in->n_bufs > 0 && !p->buf_offset) return BD_FAIL(e, BRAID_ERR_INTERNAL, "plan has no buffer offsets");
    return BRAID_OK;
}

/* Every access of buffer a (its producer and readers) ran before node x. */
static int accesses_before(const bd_sched_input *in, const uint64_t *anc_x, int a)
{
    if (in->buf_keep && in->buf_keep[a]) return 0; /* read after the plan ends */
    if (!bd_bit_get(anc_x, in->buf_producer[a])) return 0;
    for (int k = in->use_start[a]; k < in->use_start[a + 1]; k++)
        if (!bd_bit_get(anc_x, in->use[k])) return 0;
    return 1;
}

/* The message for a read of u's output by v that nothing orders. */
static braid_status unordered_read(const bd_sched_input *in, const bd_plan *p, const uint64_t *evset, size_t W,
                                   int u, int v, bd_err *e)
{
    char n1[32], n2[32];
    int A = p->node_stream[u], B = p->node_stream[v], late = 0;
    if (A == B)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' reads the output of node '%s' but is launched before it on stream %d",
                       NAME(v, n1), NAME(u, n2), A);
    for (int c = p->stream_start[B]; c < p->stream_start[B + 1]; c++)
        if (p->cmds[c].kind == BD_CMD_WAIT && bd_bit_get(evset + (size_t)p->cmds[c].arg * W, u)) late = 1;
    return BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' reads the output of node '%s' on stream %d with no ordering (stream %d %s)",
                   NAME(v, n1), NAME(u, n2), A, B, late ? "waits for it only after that launch" : "never waits for it");
}

braid_status bd_plan_verify(const bd_sched_input *in, const bd_plan *p, bd_err *e)
{
    braid_status st = BRAID_OK;
    char n1[64], n2[64];
    int *n_records = NULL, *pc = NULL, *ran_on = NULL;
    unsigned char *recorded = NULL;
    uint64_t *anc = NULL, *sset = NULL, *evset = NULL;
    vspan *spans = NULL;
    if (!p) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan is NULL");
    BD_TRY(bd_sched_check_input(in, e));
    const int n = in->n_nodes, S = p->n_streams, E = p->n_events, B = in->n_bufs;
    n_records = bd_calloc((size_t)(E > 0 ? E : 0) + 1, sizeof *n_records);
    BD_CHECK_ALLOC(e, n_records);
    BD_TRY(check_shape(in, p, n_records, e));

    /* 1. Simulate: run each stream as far as it can go until none can. */
    const size_t W = BD_BITS_WORDS(n);
    pc = bd_malloc((size_t)S * sizeof *pc);
    ran_on = bd_malloc(((size_t)n + 1) * sizeof *ran_on);
    recorded = bd_calloc((size_t)E + 1, 1);
    anc = bd_calloc((size_t)n * W + 1, sizeof *anc);   /* nodes that ran before node v */
    sset = bd_calloc((size_t)S * W + 1, sizeof *sset); /* nodes that ran before stream s's current point */
    evset = bd_calloc((size_t)E * W + 1, sizeof *evset);
    BD_CHECK_ALLOC(e, pc);
    BD_CHECK_ALLOC(e, ran_on);
    BD_CHECK_ALLOC(e, recorded);
    BD_CHECK_ALLOC(e, anc);
    BD_CHECK_ALLOC(e, sset);
    BD_CHECK_ALLOC(e, evset);
    for (int v = 0; v < n; v++) ran_on[v] = -1;
    for (int s = 0; s < S; s++) pc[s] = p->stream_start[s];
    for (int progress = 1; progress;) {
        progress = 0;
        for (int s = 0; s < S; s++) {
            uint64_t *cur = sset + (size_t)s * W;
            for (; pc[s] < p->stream_start[s + 1]; pc[s]++, progress = 1) {
                bd_cmd c = p->cmds[pc[s]];
                if (c.kind == BD_CMD_WAIT) {
                    if (!recorded[c.arg]) break;
                    const uint64_t *ev = evset + (size_t)c.arg * W;
                    for (size_t w = 0; w < W; w++) cur[w] |= ev[w];
                } else if (c.kind == BD_CMD_RECORD) {
                    int v = p->event_node[c.arg];
                    if (ran_on[v] != s) {
                        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "event e%d of node '%s' is recorded on stream %d, which has not launched that node",
                                     c.arg, NAME(v, n1), s);
                        goto fail;
                    }
                    memcpy(evset + (size_t)c.arg * W, cur, W * sizeof *cur);
                    recorded[c.arg] = 1;
                } else {
                    int v = c.arg;
                    if (ran_on[v] >= 0) {
                        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' is launched twice (on streams %d and %d)", NAME(v, n1), ran_on[v], s);
                        goto fail;
                    }
                    if (p->node_stream[v] != s) {
                        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' is launched on stream %d but assigned to stream %d", NAME(v, n1), s, p->node_stream[v]);
                        goto fail;
                    }
                    memcpy(anc + (size_t)v * W, cur, W * sizeof *cur);
                    bd_bit_set(cur, v);
                    ran_on[v] = s;
                }
            }
        }
    }
    {
        char msg[512];
        size_t len = 0;
        int stuck = 0;
        for (int s = 0; s < S; s++) {
            if (pc[s] >= p->stream_start[s + 1]) continue;
            int ev = p->cmds[pc[s]].arg, v = p->event_node[ev];
            if (stuck++ < 4 && len < sizeof msg)
                len += (size_t)snprintf(msg + len, sizeof msg - len, "%sstream %d waits on e%d (of node '%s' on stream %d)",
                                        stuck > 1 ? ", " : "", s, ev, NAME(v, n1), p->node_stream[v]);
        }
        if (stuck) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "deadlock: no stream can go on: %s", msg);
            goto fail;
        }
    }
    for (int v = 0; v < n; v++)
        if (ran_on[v] < 0) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "node '%s' is never launched", NAME(v, n1));
            goto fail;
        }

    /* 2. Every read after its write: data edges, then buffer readers. */
    for (int v = 0; v < n; v++)
        for (int k = in->pred_start[v]; k < in->pred_start[v + 1]; k++)
            if (!bd_bit_get(anc + (size_t)v * W, in->pred[k])) {
                st = unordered_read(in, p, evset, W, in->pred[k], v, e);
                goto fail;
            }
    for (int b = 0; b < B; b++)
        for (int k = in->use_start[b]; k < in->use_start[b + 1]; k++)
            if (!bd_bit_get(anc + (size_t)in->use[k] * W, in->buf_producer[b])) {
                st = unordered_read(in, p, evset, W, in->buf_producer[b], in->use[k], e);
                goto fail;
            }

    /* 3. Buffers: in the arena, and bytes shared only between ordered lifetimes. */
    size_t sum = 0;
    spans = bd_malloc(((size_t)B + 1) * sizeof *spans);
    BD_CHECK_ALLOC(e, spans);
    int m = 0;
    for (int b = 0; b < B; b++) {
        size_t sz, off = p->buf_offset[b];
        BD_TRY(bd_sched_aligned_size(in, b, &sz, e));
        if (off % BD_PLAN_ALIGN) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "buffer '%s' is at offset %zu, not a multiple of %d",
                         bd_sched_buf_name(in, b, n1, sizeof n1), off, BD_PLAN_ALIGN);
            goto fail;
        }
        if (off > p->arena_size || sz > p->arena_size - off) {
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "buffer '%s' at offset %zu (%zu bytes) ends past the arena's %zu bytes",
                         bd_sched_buf_name(in, b, n1, sizeof n1), off, sz, p->arena_size);
            goto fail;
        }
        sum += sz;
        if (sz) spans[m++] = (vspan){off, off + sz, b};
    }
    if (sum != p->sum_bufs) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "plan says its buffers take %zu bytes but they add up to %zu", p->sum_bufs, sum);
        goto fail;
    }
    qsort(spans, (size_t)m, sizeof *spans, vspan_cmp);
    for (int i = 0; i < m; i++)
        for (int j = i + 1; j < m && spans[j].lo < spans[i].hi; j++) {
            int a = spans[i].b, b = spans[j].b;
            int pa = in->buf_producer[a], pb = in->buf_producer[b];
            if (accesses_before(in, anc + (size_t)pb * W, a) || accesses_before(in, anc + (size_t)pa * W, b)) continue;
            if (pb < pa || (pb == pa && b < a)) { int t = a; a = b; b = t; }
            size_t lo = spans[j].lo, hi = BD_MIN(spans[i].hi, spans[j].hi);
            const char *na = bd_sched_buf_name(in, a, n1, sizeof n1), *nb = bd_sched_buf_name(in, b, n2, sizeof n2);
            st = BD_FAIL(e, BRAID_ERR_INTERNAL, "buffers of '%s' and '%s' share bytes [%zu, %zu) but '%s' is written while '%s' may still be %s",
                         na, nb, lo, hi, nb, na, in->use_start[a + 1] > in->use_start[a] ? "read" : "written");
            goto fail;
        }
fail:
    bd_free(n_records);
    bd_free(pc);
    bd_free(ran_on);
    bd_free(recorded);
    bd_free(anc);
    bd_free(sset);
    bd_free(evset);
    bd_free(spans);
    return st;
}
