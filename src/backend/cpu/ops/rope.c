/* rope.c: CPU kernel of the rope family: each output element is its input or
 * the rotation of its pair by the token's cached angle (src/ops/rope.h),
 * computed in float and rounded once; tokens are split across threads.
 * Position ids outside the caches fail with INVALID_MODEL. */
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/parallel.h"

#include "ops/attention.h"
#include "ops/rope.h"

typedef struct rope_job {
    const bd_rope_geom *g;
    int interleaved, dt;
    const void *x, *cs, *sn;
    const int64_t *pos;
    void *y;
} rope_job;

static void rope_items(void *vj, int64_t begin, int64_t end)
{
    const rope_job *j = vj;
    const bd_rope_geom *g = j->g;
    int64_t half = g->rd / 2;
    for (int64_t i = begin; i < end; i++) {
        int64_t b, s, row, p1, p2, col;
        int first;
        double v;
        if (!bd_rope_at(g, j->interleaved, i, &b, &s, &row, &p1, &p2, &col, &first)) {
            v = bd_attn_load(j->dt, j->x, i);
        } else {
            int64_t cr = g->pos_mode == BD_ROPE_CACHE_3D ? b * g->s + s
                         : g->pos_mode == BD_ROPE_IDS    ? j->pos[b * g->s + s] : j->pos[0] + s;
            double x1 = bd_attn_load(j->dt, j->x, row + p1), x2 = bd_attn_load(j->dt, j->x, row + p2);
            float r = (float)bd_rope_value(first, x1, x2, bd_attn_load(j->dt, j->cs, cr * half + col),
                                           bd_attn_load(j->dt, j->sn, cr * half + col));
            v = r;
        }
        if (j->dt == BRAID_DTYPE_FLOAT) ((float *)j->y)[i] = (float)v;
        else if (j->dt == BRAID_DTYPE_FLOAT16) ((uint16_t *)j->y)[i] = bd_float_to_half((float)v);
        else ((uint16_t *)j->y)[i] = bd_float_to_bf16((float)v);
    }
}

braid_status bd_cpu_rope(const bd_kernel *k)
{
    const bd_node *n = k->node;
    if (!n->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    const bd_rope_params *p = n->params;
    int ms = n->op == BD_OP_MS_RotaryEmbedding;
    bd_rope_geom g;
    braid_status st = bd_rope_geometry(n, k->in, &g, k->err);
    if (st) return st;
    const bd_tensor *pos = ms ? &k->in[1] : (k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL);
    if (g.pos_mode != BD_ROPE_CACHE_3D) {
        int64_t np = g.pos_mode == BD_ROPE_OFFSET ? 1 : g.b * g.s;
        const int64_t *pv = pos->data;
        for (int64_t i = 0; i < np; i++) {
            int64_t lo = pv[i], hi = g.pos_mode == BD_ROPE_OFFSET ? pv[i] + g.s - 1 : pv[i];
            if (np && g.s && (lo < 0 || hi >= g.max_pos))
                return BD_FAIL(k->err, BRAID_ERR_INVALID_MODEL, "position_ids value %lld at index %lld is outside the "
                               "caches' %lld rows", (long long)(lo < 0 ? lo : hi), (long long)i, (long long)g.max_pos);
        }
    }
    rope_job j = {&g, p->interleaved, k->in[0].dtype, k->in[0].data, k->in[ms ? 2 : 1].data, k->in[ms ? 3 : 2].data,
                  pos ? pos->data : NULL, k->out[0].data};
    bd_parallel_for(k->threads, bd_numel(&k->out[0]), 1 << 15, rope_items, &j);
    return BRAID_OK;
}
