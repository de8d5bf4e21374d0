/* streams.c: stream assignment. A minimum chain cover of the DAG (maximum
 * bipartite matching on its transitive closure, Dilworth / Nimble), then
 * chains too cheap to pay for their events merged into a neighbour, then at
 * most max_streams streams by a balanced greedy packing. */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

/* One augmenting-path search from the free left vertex u0 over the closure
 * (left u may be followed by any right v in desc[u]). Breadth first, so the
 * path found is a shortest one: it reroutes as few chains as possible. At
 * each left vertex a free right is taken at once, a direct successor first,
 * else the earliest. Each right is visited once per search. */
static int augment(const bd_dag *d, int u0, int *match_l, int *match_r, uint64_t *free_r,
                   uint64_t *visited, int *queue, int *from_l, int *via_r)
{
    const size_t W = d->words;
    memset(visited, 0, W * sizeof *visited);
    int head = 0, tail = 0;
    queue[tail++] = u0;
    while (head < tail) {
        const int x = queue[head++];
        const uint64_t *row = d->desc + (size_t)x * W;
        int v = -1;
        for (int k = d->succ_start[x]; k < d->succ_start[x + 1] && v < 0; k++)
            if (match_r[d->succ[k]] < 0) v = d->succ[k];
        for (size_t w = 0; w < W && v < 0; w++)
            if (row[w] & free_r[w]) v = (int)(w * 64 + (size_t)__builtin_ctzll(row[w] & free_r[w]));
        if (v >= 0) {
            free_r[v >> 6] &= ~(1ull << (v & 63));
            for (int y = x;; y = from_l[y]) {
                match_l[y] = v;
                match_r[v] = y;
                if (y == u0) break;
                v = via_r[y]; /* the right y gives up passes to from_l[y] */
            }
            return 1;
        }
        for (size_t w = 0; w < W; w++) {
            uint64_t m = row[w] & ~visited[w] & ~free_r[w];
            visited[w] |= m;
            while (m) {
                int r = (int)(w * 64 + (size_t)__builtin_ctzll(m)), y = match_r[r];
                m &= m - 1;
                from_l[y] = x;
                via_r[y] = r;
                queue[tail++] = y;
            }
        }
    }
    return 0;
}

/* Chains as union-find sets with member lists. */
typedef struct chains {
    int *parent, *head, *tail, *next; /* per chain; next: per node */
    double *cost;
    int *cnt, *touched, n_touched;    /* scratch of scan() */
} chains;

static int find(chains *c, int x)
{
    while (c->parent[x] != x) { c->parent[x] = c->parent[c->parent[x]]; x = c->parent[x]; }
    return x;
}

/* Counts the reduced edges between chain c and the other chains: the total,
 * and per neighbouring chain in cnt[] (listed in touched[]). */
static int scan(chains *ch, const bd_dag *d, const int *chain_of, int c)
{
    int total = 0;
    ch->n_touched = 0;
    for (int v = ch->head[c]; v >= 0; v = ch->next[v]) {
        for (int pass = 0; pass < 2; pass++) {
            const int *st = pass ? d->succ_start : d->pred_start, *adj = pass ? d->succ : d->pred;
            for (int k = st[v]; k < st[v + 1]; k++) {
                int o = find(ch, chain_of[adj[k]]);
                if (o == c) continue;
                total++;
                if (ch->cnt[o]++ == 0) ch->touched[ch->n_touched++] = o;
            }
        }
    }
    return total;
}

static void unscan(chains *ch)
{
    for (int i = 0; i < ch->n_touched; i++) ch->cnt[ch->touched[i]] = 0;
    ch->n_touched = 0;
}

static void merge(chains *ch, int from, int to)
{
    ch->parent[from] = to;
    ch->cost[to] += ch->cost[from];
    ch->next[ch->tail[to]] = ch->head[from];
    ch->tail[to] = ch->tail[from];
}

typedef struct keyed {
    double cost;
    int id;
} keyed;

static int by_cost_asc(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    return x->id - y->id;
}

static int by_cost_desc(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->id - y->id;
}

/* Fills order[] with the chains still alive, sorted by cost; returns how many. */
static int sorted_chains(chains *ch, int C, keyed *tmp, int *order, int descending)
{
    int m = 0;
    for (int c = 0; c < C; c++)
        if (find(ch, c) == c) { tmp[m].cost = ch->cost[c]; tmp[m].id = c; m++; }
    qsort(tmp, (size_t)m, sizeof *tmp, descending ? by_cost_desc : by_cost_asc);
    for (int i = 0; i < m; i++) order[i] = tmp[i].id;
    return m;
}

braid_status bd_streams_assign(const bd_sched_input *in, const bd_dag *d, int max_streams,
                               int *node_stream, int *n_streams, bd_err *e)
{
    braid_status st = BRAID_OK;
    const int n = d->n;
    int *match_l = NULL, *match_r = NULL, *queue = NULL, *from_l = NULL, *via_r = NULL, *chain_of = NULL, *order = NULL;
    int *bin_of = NULL, *label = NULL;
    keyed *tmp = NULL;
    uint64_t *visited = NULL, *free_r = NULL;
    double *load = NULL, *binedge = NULL;
    chains ch = {0};
    match_l = bd_malloc((size_t)n * sizeof *match_l);
    match_r = bd_malloc((size_t)n * sizeof *match_r);
    queue = bd_malloc(((size_t)n + 1) * sizeof *queue);
    from_l = bd_malloc(((size_t)n + 1) * sizeof *from_l);
    via_r = bd_malloc(((size_t)n + 1) * sizeof *via_r);
    visited = bd_malloc((d->words + 1) * sizeof *visited);
    free_r = bd_calloc(d->words + 1, sizeof *free_r);
    chain_of = bd_malloc((size_t)n * sizeof *chain_of);
    BD_CHECK_ALLOC(e, match_l);
    BD_CHECK_ALLOC(e, match_r);
    BD_CHECK_ALLOC(e, queue);
    BD_CHECK_ALLOC(e, from_l);
    BD_CHECK_ALLOC(e, via_r);
    BD_CHECK_ALLOC(e, visited);
    BD_CHECK_ALLOC(e, free_r);
    BD_CHECK_ALLOC(e, chain_of);

    /* 1. Maximum matching: greedy along reduced edges (preferring the
     * successor with the fewest predecessors), then augmenting paths. */
    for (int i = 0; i < n; i++) match_l[i] = match_r[i] = -1;
    for (int u = 0; u < n; u++) {
        int best = -1, best_in = 0;
        for (int k = d->succ_start[u]; k < d->succ_start[u + 1]; k++) {
            int s = d->succ[k], deg = d->pred_start[s + 1] - d->pred_start[s];
            if (match_r[s] < 0 && (best < 0 || deg < best_in)) { best = s; best_in = deg; }
        }
        if (best >= 0) { match_l[u] = best; match_r[best] = u; }
    }
    for (int v = 0; v < n; v++)
        if (match_r[v] < 0) bd_bit_set(free_r, v);
    for (int u = 0; u < n; u++)
        if (match_l[u] < 0 && d->succ_start[u + 1] > d->succ_start[u])
            augment(d, u, match_l, match_r, free_r, visited, queue, from_l, via_r);

    /* 2. Chains: follow the matching from every node nobody precedes. */
    int C = 0;
    for (int v = 0; v < n; v++)
        if (match_r[v] < 0) {
            for (int x = v; x >= 0; x = match_l[x]) chain_of[x] = C;
            C++;
        }
    ch.parent = bd_malloc((size_t)C * sizeof *ch.parent);
    ch.head = bd_malloc((size_t)C * sizeof *ch.head);
    ch.tail = bd_malloc((size_t)C * sizeof *ch.tail);
    ch.next = bd_malloc((size_t)n * sizeof *ch.next);
    ch.cost = bd_calloc((size_t)C, sizeof *ch.cost);
    ch.cnt = bd_calloc((size_t)C, sizeof *ch.cnt);
    ch.touched = bd_malloc((size_t)C * sizeof *ch.touched);
    order = bd_malloc((size_t)C * sizeof *order);
    tmp = bd_malloc((size_t)C * sizeof *tmp);
    BD_CHECK_ALLOC(e, tmp);
    BD_CHECK_ALLOC(e, ch.parent);
    BD_CHECK_ALLOC(e, ch.head);
    BD_CHECK_ALLOC(e, ch.tail);
    BD_CHECK_ALLOC(e, ch.next);
    BD_CHECK_ALLOC(e, ch.cost);
    BD_CHECK_ALLOC(e, ch.cnt);
    BD_CHECK_ALLOC(e, ch.touched);
    BD_CHECK_ALLOC(e, order);
    for (int c = 0; c < C; c++) { ch.parent[c] = c; ch.head[c] = ch.tail[c] = -1; }
    for (int v = 0; v < n; v++) {
        int c = chain_of[v];
        ch.next[v] = -1;
        if (ch.head[c] < 0) ch.head[c] = v;
        else ch.next[ch.tail[c]] = v;
        ch.tail[c] = v;
        ch.cost[c] += in->cost ? in->cost[v] : 1.0;
    }

    /* 3. Merge chains whose work is less than the events they would need
     * (one record+wait per edge to another chain; fork and join for an
     * island), cheapest first, into the neighbour they share most edges with
     * (an island into the lightest chain). Repeat until nothing changes. */
    int alive = C;
    sorted_chains(&ch, C, tmp, order, 0);
    for (int changed = 1, pass = 0; changed && alive > 1 && pass < 8; pass++) {
        changed = 0;
        for (int i = 0; i < C && alive > 1; i++) {
            int c = order[i];
            if (find(&ch, c) != c) continue;
            int total = scan(&ch, d, chain_of, c);
            double price = in->sync_cost * (total ? total : 2);
            int to = -1;
            if (ch.cost[c] < price) {
                for (int t = 0; t < ch.n_touched; t++) {
                    int o = ch.touched[t];
                    if (to < 0 || ch.cnt[o] > ch.cnt[to] || (ch.cnt[o] == ch.cnt[to] && ch.cost[o] < ch.cost[to])) to = o;
                }
                if (to < 0)
                    for (int o = 0; o < C; o++)
                        if (o != c && find(&ch, o) == o && (to < 0 || ch.cost[o] < ch.cost[to])) to = o;
            }
            unscan(&ch);
            if (to >= 0) { merge(&ch, c, to); alive--; changed = 1; }
        }
    }

    /* 4. Cap: the heaviest max_streams chains seed the streams; every other
     * chain, heaviest first, joins the stream with the least load, counting
     * each edge it shares with a stream as a saved event. */
    int m = sorted_chains(&ch, C, tmp, order, 1);
    bin_of = bd_malloc((size_t)C * sizeof *bin_of);
    BD_CHECK_ALLOC(e, bin_of);
    int S = m;
    if (max_streams > 0 && m > max_streams) {
        S = max_streams;
        load = bd_calloc((size_t)S, sizeof *load);
        binedge = bd_calloc((size_t)S, sizeof *binedge);
        BD_CHECK_ALLOC(e, load);
        BD_CHECK_ALLOC(e, binedge);
        for (int c = 0; c < C; c++) bin_of[c] = -1;
        for (int i = 0; i < m; i++) {
            int c = order[i], best = i < S ? i : -1;
            if (best < 0) {
                scan(&ch, d, chain_of, c);
                for (int t = 0; t < ch.n_touched; t++)
                    if (bin_of[ch.touched[t]] >= 0) binedge[bin_of[ch.touched[t]]] += ch.cnt[ch.touched[t]];
                unscan(&ch);
                double best_score = 0;
                for (int b = 0; b < S; b++) {
                    double score = load[b] - in->sync_cost * binedge[b];
                    if (best < 0 || score < best_score) { best = b; best_score = score; }
                    binedge[b] = 0;
                }
            }
            bin_of[c] = best;
            load[best] += ch.cost[c];
        }
    } else {
        for (int i = 0; i < m; i++) bin_of[order[i]] = i;
    }

    /* 5. Number the streams by their first node. */
    label = bd_malloc((size_t)S * sizeof *label);
    BD_CHECK_ALLOC(e, label);
    for (int b = 0; b < S; b++) label[b] = -1;
    int next_label = 0;
    for (int v = 0; v < n; v++) {
        int b = bin_of[find(&ch, chain_of[v])];
        if (label[b] < 0) label[b] = next_label++;
        node_stream[v] = label[b];
    }
    *n_streams = next_label > 0 ? next_label : 1;
fail:
    bd_free(match_l);
    bd_free(match_r);
    bd_free(queue);
    bd_free(from_l);
    bd_free(via_r);
    bd_free(visited);
    bd_free(free_r);
    bd_free(chain_of);
    bd_free(order);
    bd_free(tmp);
    bd_free(bin_of);
    bd_free(label);
    bd_free(load);
    bd_free(binedge);
    bd_free(ch.parent);
    bd_free(ch.head);
    bd_free(ch.tail);
    bd_free(ch.next);
    bd_free(ch.cost);
    bd_free(ch.cnt);
    bd_free(ch.touched);
    return st;
}
