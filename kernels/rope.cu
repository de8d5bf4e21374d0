/* rope.cu: CUDA kernel of the rope family, one thread per output element
 * with the shared index formula (src/ops/rope.h), mirroring
 * src/backend/cpu/ops/rope.c. Position ids are on the device: one outside
 * the caches makes that token's rotated elements NaN (the CPU fails). */
#include "la.cuh"

extern "C" {
#include "ops/rope.h"
}

static __global__ void rope_k(bd_rope_geom g, int interleaved, int dt, const void *__restrict__ x,
                              const void *__restrict__ cs, const void *__restrict__ sn,
                              const int64_t *__restrict__ pos, void *__restrict__ y, int64_t total)
{
    int64_t half = g.rd / 2;
    BD_CU_LOOP(i, total)
    {
        int64_t b, s, row, p1, p2, col;
        int first;
        double v;
        if (!bd_rope_at(&g, interleaved, i, &b, &s, &row, &p1, &p2, &col, &first)) {
            v = bd_la_ld64(dt, x, i);
        } else {
            int64_t cr = g.pos_mode == BD_ROPE_CACHE_3D ? b * g.s + s
                         : g.pos_mode == BD_ROPE_IDS    ? pos[b * g.s + s] : pos[0] + s;
            if (cr < 0 || (g.pos_mode != BD_ROPE_CACHE_3D && cr >= g.max_pos)) {
                v = NAN;
            } else {
                double x1 = bd_la_ld64(dt, x, row + p1), x2 = bd_la_ld64(dt, x, row + p2);
                v = (float)bd_rope_value(first, x1, x2, bd_la_ld64(dt, cs, cr * half + col),
                                         bd_la_ld64(dt, sn, cr * half + col));
            }
        }
        bd_la_st(dt, y, i, v);
    }
}

extern "C" braid_status bd_cuda_rope(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    if (!n->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    const bd_rope_params *p = (const bd_rope_params *)n->params;
    int ms = n->op == BD_OP_MS_RotaryEmbedding;
    bd_rope_geom g;
    braid_status st = bd_rope_geometry(n, k->in, &g, k->err);
    if (st) return st;
    const bd_tensor *pos = ms ? &k->in[1] : (k->n_in > 3 && k->in[3].data ? &k->in[3] : NULL);
    int64_t total = bd_numel(&k->out[0]);
    if (total == 0) return BRAID_OK;
    rope_k<<<bd_cu_grid(total), BD_CU_BLOCK, 0, k->stream>>>(g, p->interleaved, k->in[0].dtype, k->in[0].data,
                                                             k->in[ms ? 2 : 1].data, k->in[ms ? 3 : 2].data,
                                                             pos ? (const int64_t *)pos->data : NULL, k->out[0].data,
                                                             total);
    BD_CU_CHECK_LAUNCH(k, "the rotary embedding kernel");
    return BRAID_OK;
}

extern "C" void bd_cuda_rope_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
