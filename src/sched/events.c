/* events.c: lays out the command lists of a plan once every node has a
 * stream: launches in node order, one record after a producer and one wait
 * before its consumer for each cross-stream edge that an earlier wait does
 * not already imply (tracked with a vector clock per stream). */
#include <string.h>

#include "sched_int.h"

/* Vector clocks take n x streams ints: at most 2^28 of them (1 GiB). */
#define BD_EVENTS_MAX_CLOCK ((size_t)1 << 28)

braid_status bd_events_build(const bd_sched_input *in, const bd_dag *d, bd_plan *p, int **pos_out,
                             int **clock_out, bd_err *e)
{
    braid_status st = BRAID_OK;
    const int n = in->n_nodes, S = p->n_streams;
    const int *ns = p->node_stream;
    int *pos = NULL, *clock = NULL, *vc = NULL, *cnt = NULL, *wait_start = NULL, *waits = NULL;
    int *event_of = NULL, *fill = NULL;
    *pos_out = *clock_out = NULL;
    if ((size_t)n * (size_t)S > BD_EVENTS_MAX_CLOCK || (size_t)S * (size_t)S > BD_EVENTS_MAX_CLOCK) {
        st = BD_FAIL(e, BRAID_ERR_LIMIT, "a plan of %d nodes on %d streams is beyond the planner's limit", n, S);
        goto fail;
    }
    pos = bd_malloc(((size_t)n + 1) * sizeof *pos);
    clock = bd_malloc(((size_t)n * S + 1) * sizeof *clock);
    vc = bd_calloc((size_t)S * S + 1, sizeof *vc);
    cnt = bd_calloc((size_t)S + 1, sizeof *cnt);
    wait_start = bd_malloc(((size_t)n + 1) * sizeof *wait_start);
    event_of = bd_malloc(((size_t)n + 1) * sizeof *event_of);
    int max_waits = (d && S > 1) ? d->pred_start[n] : 0;
    waits = bd_malloc(((size_t)max_waits + 1) * sizeof *waits);
    BD_CHECK_ALLOC(e, pos);
    BD_CHECK_ALLOC(e, clock);
    BD_CHECK_ALLOC(e, vc);
    BD_CHECK_ALLOC(e, cnt);
    BD_CHECK_ALLOC(e, wait_start);
    BD_CHECK_ALLOC(e, event_of);
    BD_CHECK_ALLOC(e, waits);
    for (int v = 0; v < n; v++) { pos[v] = ++cnt[ns[v]]; event_of[v] = -1; }

    /* Nodes in topological order. vc[B][A] is the last position of stream A
     * known to happen before the current end of stream B. Later producers
     * first: their clocks are the most likely to imply the earlier ones. */
    int nw = 0;
    for (int v = 0; v < n; v++) {
        const int B = ns[v];
        int *vcb = vc + (size_t)B * S;
        wait_start[v] = nw;
        if (max_waits > 0)
            for (int k = d->pred_start[v + 1] - 1; k >= d->pred_start[v]; k--) {
                const int u = d->pred[k], A = ns[u];
                if (A == B || vcb[A] >= pos[u]) continue;
                event_of[u] = 0;
                waits[nw++] = u;
                const int *cu = clock + (size_t)u * S;
                for (int t = 0; t < S; t++)
                    if (cu[t] > vcb[t]) vcb[t] = cu[t];
                if (pos[u] > vcb[A]) vcb[A] = pos[u];
            }
        memcpy(clock + (size_t)v * S, vcb, (size_t)S * sizeof *vcb);
        vcb[B] = pos[v];
    }
    wait_start[n] = nw;

    /* Events numbered in the order of their producers. */
    int E = 0;
    for (int v = 0; v < n; v++)
        if (event_of[v] == 0) event_of[v] = E++;
    p->n_events = E;
    p->event_node = bd_malloc(((size_t)E + 1) * sizeof *p->event_node);
    BD_CHECK_ALLOC(e, p->event_node);
    for (int v = 0; v < n; v++)
        if (event_of[v] >= 0) p->event_node[event_of[v]] = v;

    /* Commands: per node its waits, its launch, its record. */
    p->stream_start = bd_calloc((size_t)S + 1, sizeof *p->stream_start);
    BD_CHECK_ALLOC(e, p->stream_start);
    for (int v = 0; v < n; v++)
        p->stream_start[ns[v] + 1] += (wait_start[v + 1] - wait_start[v]) + 1 + (event_of[v] >= 0);
    for (int s = 0; s < S; s++) p->stream_start[s + 1] += p->stream_start[s];
    p->cmds = bd_malloc(((size_t)p->stream_start[S] + 1) * sizeof *p->cmds);
    fill = bd_malloc(((size_t)S + 1) * sizeof *fill);
    BD_CHECK_ALLOC(e, p->cmds);
    BD_CHECK_ALLOC(e, fill);
    for (int s = 0; s < S; s++) fill[s] = p->stream_start[s];
    for (int v = 0; v < n; v++) {
        bd_cmd *c = p->cmds + fill[ns[v]];
        int k = 0;
        for (int w = wait_start[v]; w < wait_start[v + 1]; w++)
            c[k++] = (bd_cmd){BD_CMD_WAIT, event_of[waits[w]]};
        c[k++] = (bd_cmd){BD_CMD_LAUNCH, v};
        if (event_of[v] >= 0) c[k++] = (bd_cmd){BD_CMD_RECORD, event_of[v]};
        fill[ns[v]] += k;
    }
    *pos_out = pos;
    *clock_out = clock;
    pos = clock = NULL;
fail:
    bd_free(pos);
    bd_free(clock);
    bd_free(vc);
    bd_free(cnt);
    bd_free(wait_start);
    bd_free(waits);
    bd_free(event_of);
    bd_free(fill);
    return st;
}
