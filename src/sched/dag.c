/* dag.c: the planner's view of a graph: checks the caller's input, builds the
 * dependency DAG (data edges plus buffer producer -> reader edges, duplicates
 * removed), its transitive closure as bitsets and its transitive reduction. */
#include <stdio.h>
#include <string.h>

#include "sched_int.h"

/* The closure needs n^2 bits: 60000 nodes is 450 MB. */
#define BD_DAG_MAX_NODES 60000

const char *bd_sched_node_name(const bd_sched_input *in, int i, char *buf, size_t n)
{
    if (in && in->node_name && i >= 0 && i < in->n_nodes && in->node_name[i]) return in->node_name[i];
    snprintf(buf, n, "node%d", i);
    return buf;
}

const char *bd_sched_buf_name(const bd_sched_input *in, int b, char *buf, size_t n)
{
    if (in && in->buf_name && b >= 0 && b < in->n_bufs && in->buf_name[b]) return in->buf_name[b];
    if (in && in->buf_producer && b >= 0 && b < in->n_bufs)
        return bd_sched_node_name(in, in->buf_producer[b], buf, n);
    snprintf(buf, n, "buf%d", b);
    return buf;
}

braid_status bd_sched_aligned_size(const bd_sched_input *in, int b, size_t *out, bd_err *e)
{
    size_t s = in->buf_size[b];
    if (s > SIZE_MAX - BD_PLAN_ALIGN) {
        char nb[32];
        return BD_FAIL(e, BRAID_ERR_LIMIT, "buffer '%s' has %zu bytes, beyond what an arena can hold",
                       bd_sched_buf_name(in, b, nb, sizeof nb), s);
    }
    *out = (s + BD_PLAN_ALIGN - 1) / BD_PLAN_ALIGN * BD_PLAN_ALIGN;
    return BRAID_OK;
}

braid_status bd_sched_check_input(const bd_sched_input *in, bd_err *e)
{
    char nb[32], nb2[32];
    if (!in) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input is NULL");
    if (in->n_nodes < 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input has %d nodes", in->n_nodes);
    if (in->n_bufs < 0) return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input has %d buffers", in->n_bufs);
    if (in->n_nodes > 0 && !in->pred_start)
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input has no predecessor lists (pred_start is NULL)");
    if (in->sync_cost < 0 || in->sync_cost != in->sync_cost)
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input has sync cost %g", in->sync_cost);
    for (int i = 0; i < in->n_nodes; i++) {
        int a = in->pred_start[i], b = in->pred_start[i + 1];
        if (a > b || (b > a && !in->pred))
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "predecessor list of node '%s' is malformed (%d..%d)",
                           bd_sched_node_name(in, i, nb, sizeof nb), a, b);
        for (int k = a; k < b; k++) {
            int p = in->pred[k];
            if (p < 0 || p >= i)
                return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT,
                               "node '%s' has predecessor %d, which is not an earlier node (nodes must be numbered in a topological order)",
                               bd_sched_node_name(in, i, nb, sizeof nb), p);
        }
        if (in->cost && !(in->cost[i] >= 0))
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "node '%s' has cost %g",
                           bd_sched_node_name(in, i, nb, sizeof nb), in->cost[i]);
    }
    if (in->n_bufs > 0 && (!in->buf_size || !in->buf_producer || !in->use_start))
        return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "plan input has %d buffers but no sizes, producers or readers", in->n_bufs);
    for (int b = 0; b < in->n_bufs; b++) {
        int pr = in->buf_producer[b], a = in->use_start[b], z = in->use_start[b + 1];
        if (pr < 0 || pr >= in->n_nodes)
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "buffer %d has producer %d, not a node", b, pr);
        if (a > z || (z > a && !in->use))
            return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT, "reader list of buffer '%s' is malformed (%d..%d)",
                           bd_sched_buf_name(in, b, nb, sizeof nb), a, z);
        for (int k = a; k < z; k++) {
            int u = in->use[k];
            if (u <= pr || u >= in->n_nodes)
                return BD_FAIL(e, BRAID_ERR_INVALID_ARGUMENT,
                               "buffer '%s' written by node '%s' is read by %d, which is not a later node",
                               bd_sched_buf_name(in, b, nb, sizeof nb), bd_sched_node_name(in, pr, nb2, sizeof nb2), u);
        }
    }
    return BRAID_OK;
}

void bd_dag_free(bd_dag *d)
{
    if (!d) return;
    bd_free(d->pred_start);
    bd_free(d->pred);
    bd_free(d->succ_start);
    bd_free(d->succ);
    bd_free(d->desc);
    memset(d, 0, sizeof *d);
}

braid_status bd_dag_build(const bd_sched_input *in, bd_dag *d, bd_err *e)
{
    braid_status st = BRAID_OK;
    const int n = in->n_nodes;
    int *ap_start = NULL, *ap = NULL, *as_start = NULL, *as = NULL, *mark = NULL, *fill = NULL;
    unsigned char *keep = NULL;
    memset(d, 0, sizeof *d);
    d->n = n;
    if (n > BD_DAG_MAX_NODES) {
        st = BD_FAIL(e, BRAID_ERR_LIMIT, "graph of %d nodes is beyond the planner's limit of %d nodes (use one stream)",
                     n, BD_DAG_MAX_NODES);
        goto fail;
    }
    /* 1. All predecessors: data edges, then buffer producers of the readers. */
    ap_start = bd_calloc((size_t)n + 1, sizeof *ap_start);
    mark = bd_malloc(((size_t)n + 1) * sizeof *mark);
    fill = bd_malloc(((size_t)n + 1) * sizeof *fill);
    BD_CHECK_ALLOC(e, ap_start);
    BD_CHECK_ALLOC(e, mark);
    BD_CHECK_ALLOC(e, fill);
    for (int i = 0; i < n; i++) ap_start[i + 1] = in->pred_start[i + 1] - in->pred_start[i];
    for (int b = 0; b < in->n_bufs; b++)
        for (int k = in->use_start[b]; k < in->use_start[b + 1]; k++) ap_start[in->use[k] + 1]++;
    for (int i = 0; i < n; i++) ap_start[i + 1] += ap_start[i];
    ap = bd_malloc(((size_t)ap_start[n] + 1) * sizeof *ap);
    BD_CHECK_ALLOC(e, ap);
    for (int i = 0; i < n; i++) fill[i] = ap_start[i];
    for (int i = 0; i < n; i++)
        for (int k = in->pred_start[i]; k < in->pred_start[i + 1]; k++) ap[fill[i]++] = in->pred[k];
    for (int b = 0; b < in->n_bufs; b++)
        for (int k = in->use_start[b]; k < in->use_start[b + 1]; k++) ap[fill[in->use[k]]++] = in->buf_producer[b];
    /* 2. The successor lists, duplicates dropped; ascending because i is. */
    for (int i = 0; i < n; i++) mark[i] = -1;
    as_start = bd_calloc((size_t)n + 1, sizeof *as_start);
    BD_CHECK_ALLOC(e, as_start);
    for (int i = 0; i < n; i++)
        for (int k = ap_start[i]; k < ap_start[i + 1]; k++)
            if (mark[ap[k]] != i) { mark[ap[k]] = i; as_start[ap[k] + 1]++; }
    for (int i = 0; i < n; i++) as_start[i + 1] += as_start[i];
    as = bd_malloc(((size_t)as_start[n] + 1) * sizeof *as);
    keep = bd_calloc((size_t)as_start[n] + 1, 1);
    BD_CHECK_ALLOC(e, as);
    BD_CHECK_ALLOC(e, keep);
    for (int i = 0; i < n; i++) { mark[i] = -1; fill[i] = as_start[i]; }
    for (int i = 0; i < n; i++)
        for (int k = ap_start[i]; k < ap_start[i + 1]; k++)
            if (mark[ap[k]] != i) { mark[ap[k]] = i; as[fill[ap[k]]++] = i; }
    /* 3. Closure and reduction, last node first. A successor s of i is
     * redundant when an earlier successor already reaches it; successors in
     * ascending order means any such one has been seen. */
    d->words = BD_BITS_WORDS(n);
    d->desc = bd_calloc((size_t)n * d->words + 1, sizeof *d->desc);
    BD_CHECK_ALLOC(e, d->desc);
    int n_red = 0;
    for (int i = n - 1; i >= 0; i--) {
        uint64_t *row = d->desc + (size_t)i * d->words;
        for (int k = as_start[i]; k < as_start[i + 1]; k++) {
            int s = as[k];
            if (bd_bit_get(row, s)) continue;
            keep[k] = 1;
            n_red++;
            const uint64_t *rs = d->desc + (size_t)s * d->words;
            for (size_t w = (size_t)s >> 6; w < d->words; w++) row[w] |= rs[w];
            bd_bit_set(row, s);
        }
    }
    /* 4. Reduced successor and predecessor lists. */
    d->succ_start = bd_calloc((size_t)n + 1, sizeof *d->succ_start);
    d->pred_start = bd_calloc((size_t)n + 1, sizeof *d->pred_start);
    d->succ = bd_malloc(((size_t)n_red + 1) * sizeof *d->succ);
    d->pred = bd_malloc(((size_t)n_red + 1) * sizeof *d->pred);
    BD_CHECK_ALLOC(e, d->succ_start);
    BD_CHECK_ALLOC(e, d->pred_start);
    BD_CHECK_ALLOC(e, d->succ);
    BD_CHECK_ALLOC(e, d->pred);
    for (int i = 0, m = 0; i < n; i++) {
        for (int k = as_start[i]; k < as_start[i + 1]; k++)
            if (keep[k]) { d->succ[m++] = as[k]; d->pred_start[as[k] + 1]++; }
        d->succ_start[i + 1] = m;
    }
    for (int i = 0; i < n; i++) { d->pred_start[i + 1] += d->pred_start[i]; fill[i] = d->pred_start[i]; }
    for (int i = 0; i < n; i++)
        for (int k = d->succ_start[i]; k < d->succ_start[i + 1]; k++) d->pred[fill[d->succ[k]]++] = i;
fail:
    bd_free(ap_start);
    bd_free(ap);
    bd_free(as_start);
    bd_free(as);
    bd_free(mark);
    bd_free(fill);
    bd_free(keep);
    if (st != BRAID_OK) bd_dag_free(d);
    return st;
}
