/* topk.c: CPU kernel of the topk op family (TopK). The input is read as
 * (outer, n, inner) around the axis; every line's elements become (key,
 * index) pairs in ops/topk.h's order, and the first K are chosen by a heap of
 * K (K small against n) or a sort of them all, then sorted. Lines are split
 * over threads; each is chosen by one thread. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include <stdlib.h>
#include <string.h>

#include "ops/topk.h"

typedef struct pair {
    uint64_t key;
    int64_t idx;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    return bd_topk_before(x->key, x->idx, y->key, y->idx) ? -1 : bd_topk_before(y->key, y->idx, x->key, x->idx);
}

/* The heap of the K best so far, its worst (the last in output order) at h[0]. */
static void sift_down(pair *h, int64_t n, int64_t i)
{
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && bd_topk_before(h[w].key, h[w].idx, h[l].key, h[l].idx)) w = l;
        if (r < n && bd_topk_before(h[w].key, h[w].idx, h[r].key, h[r].idx)) w = r;
        if (w == i) return;
        pair t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

static void sift_up(pair *h, int64_t i)
{
    while (i > 0) {
        int64_t up = (i - 1) / 2;
        if (!bd_topk_before(h[up].key, h[up].idx, h[i].key, h[i].idx)) return;
        pair t = h[i];
        h[i] = h[up];
        h[up] = t;
        i = up;
    }
}

typedef struct topk_job {
    const bd_tensor *x;
    char *vals;
    int64_t *idx;
    int64_t n, inner, k;
    int largest;
    _Atomic int failed;
} topk_job;

static void topk_range(void *vj, int64_t begin, int64_t end)
{
    topk_job *j = vj;
    int64_t n = j->n, inner = j->inner, k = j->k;
    int heap = k * 4 < n;
    size_t es = bd_dtype_size(j->x->dtype);
    pair *p = bd_malloc((size_t)(heap ? k : n) * sizeof *p);
    if (!p) {
        j->failed = 1;
        return;
    }
    for (int64_t line = begin; line < end; line++) {
        int64_t b = line / inner, i = line - b * inner, base = b * n * inner + i, m = 0;
        for (int64_t e = 0; e < n; e++) {
            pair q = {bd_topk_key(j->x->dtype, j->x->data, base + e * inner, j->largest), e};
            if (!heap) {
                p[m++] = q;
            } else if (m < k) {
                p[m] = q;
                sift_up(p, m++);
            } else if (bd_topk_before(q.key, q.idx, p[0].key, p[0].idx)) {
                p[0] = q;
                sift_down(p, k, 0);
            }
        }
        qsort(p, (size_t)m, sizeof *p, pair_cmp);
        int64_t obase = b * k * inner + i;
        for (int64_t r = 0; r < k; r++) { /* an output the graph leaves out has no memory */
            if (j->vals)
                memcpy(j->vals + (size_t)(obase + r * inner) * es,
                       (const char *)j->x->data + (size_t)(base + p[r].idx * inner) * es, es);
            if (j->idx) j->idx[obase + r * inner] = p[r].idx;
        }
    }
    bd_free(p);
}

braid_status bd_cpu_topk(const bd_kernel *k)
{
    const bd_topk_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    int axis;
    int64_t kk, outer, inner;
    braid_status st;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "topk parameters were not parsed");
    if ((st = bd_axis(p->axis, x->rank, &axis, k->err))) return st;
    if ((st = bd_topk_k(k->node, k->in, x->dims[axis], &kk, k->err))) return st;
    bd_axis_split(x, axis, &outer, &inner);
    if (kk == 0 || outer * inner == 0) return BRAID_OK;
    topk_job j = {x, k->out[0].data, k->out[1].data, x->dims[axis], inner, kk, p->largest, 0};
    bd_parallel_for(k->threads, outer * inner, BD_MAX((int64_t)1, (1 << 14) / j.n), topk_range, &j);
    if (j.failed) return BD_FAIL(k->err, BRAID_ERR_OUT_OF_MEMORY, "out of memory");
    return BRAID_OK;
}
