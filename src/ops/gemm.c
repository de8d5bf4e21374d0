/* gemm.c: attribute parsing, shape inference and cost of the gemm op family:
 * Gemm (alpha, beta, transA, transB, C broadcast to (M, N)) and MatMul
 * (numpy matmul: 1-D operands promoted, batch dims broadcast). */
#include "gemm.h"

#include <string.h>

/* The dtypes of Gemm and MatMul (opset 13): the float kinds and the 32/64-bit integers. */
#define BD_GEMM_DTYPES                                                                             \
    BRAID_DTYPE_FLOAT, BRAID_DTYPE_DOUBLE, BRAID_DTYPE_FLOAT16, BRAID_DTYPE_BFLOAT16, BRAID_DTYPE_INT32,  \
        BRAID_DTYPE_INT64, BRAID_DTYPE_UINT32, BRAID_DTYPE_UINT64

braid_status bd_gemm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_gemm_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->alpha = p->beta = 1.0f;
    if (n->op == BD_OP_Gemm) {
        int64_t ta = 0, tb = 0;
        BD_TRY(bd_attr_float(n, "alpha", 1.0f, &p->alpha, e));
        BD_TRY(bd_attr_float(n, "beta", 1.0f, &p->beta, e));
        BD_TRY(bd_attr_int(n, "transA", 0, &ta, e));
        BD_TRY(bd_attr_int(n, "transB", 0, &tb, e));
        p->trans_a = ta != 0;
        p->trans_b = tb != 0;
    }
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_matmul_geometry(const bd_tensor *a, const bd_tensor *b, bd_matmul_geom *g,
                                bd_tensor *out, bd_err *e)
{
    char sa[160], sb[160];
    memset(g, 0, sizeof *g);
    if (a->rank < 1 || b->rank < 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "MatMul needs operands of rank 1 or more, got A %s "
                       "and B %s", bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
    int ra = a->rank, rb = b->rank;
    g->m = ra >= 2 ? a->dims[ra - 2] : 1;
    g->k = a->dims[ra - 1];
    int64_t kb = rb >= 2 ? b->dims[rb - 2] : b->dims[0];
    g->n = rb >= 2 ? b->dims[rb - 1] : 1;
    if (g->k >= 0 && kb >= 0 && g->k != kb)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "MatMul of A %s and B %s: A has %lld columns but B "
                       "has %lld rows", bd_shape_str(a, sa, sizeof sa),
                       bd_shape_str(b, sb, sizeof sb), (long long)g->k, (long long)kb);
    g->a_batch.rank = BD_MAX(ra - 2, 0);
    g->b_batch.rank = BD_MAX(rb - 2, 0);
    memcpy(g->a_batch.dims, a->dims, (size_t)g->a_batch.rank * sizeof *a->dims);
    memcpy(g->b_batch.dims, b->dims, (size_t)g->b_batch.rank * sizeof *b->dims);
    bd_err sub = {0};
    if (bd_broadcast_shape(&g->a_batch, &g->b_batch, &g->batch, &sub))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "MatMul of A %s and B %s: the batch dims do not "
                       "broadcast", bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
    if (out) {
        int r = g->batch.rank;
        memcpy(out->dims, g->batch.dims, (size_t)r * sizeof *out->dims);
        if (ra >= 2) out->dims[r++] = g->m;
        if (rb >= 2) out->dims[r++] = g->n;
        out->rank = r;
        out->dtype = a->dtype;
    }
    return BRAID_OK;
}

static braid_status gemm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_gemm_params *p = n->params;
    const bd_tensor *a = &in[0], *b = &in[1], *c = n->n_in > 2 ? &in[2] : NULL;
    char sa[160], sb[160];
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    braid_status st = bd_expect_dtype(a, "input A", e, BD_GEMM_DTYPES, 0);
    if (st) return st;
    if (b->dtype != a->dtype || (c && c->dtype != BRAID_DTYPE_UNDEFINED && c->dtype != a->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input A is %s but B is %s%s%s; they must match",
                       bd_dtype_name(a->dtype), bd_dtype_name(b->dtype),
                       c && c->dtype ? " and C " : "", c && c->dtype ? bd_dtype_name(c->dtype) : "");
    if (a->rank != 2 || b->rank != 2)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "A and B must be 2-D, got A %s and B %s",
                       bd_shape_str(a, sa, sizeof sa), bd_shape_str(b, sb, sizeof sb));
    int64_t m = a->dims[p->trans_a ? 1 : 0], ka = a->dims[p->trans_a ? 0 : 1];
    int64_t kb = b->dims[p->trans_b ? 1 : 0], nn = b->dims[p->trans_b ? 0 : 1];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "A %s%s and B %s%s do not multiply: %lld columns "
                       "against %lld rows", bd_shape_str(a, sa, sizeof sa),
                       p->trans_a ? " (transposed)" : "", bd_shape_str(b, sb, sizeof sb),
                       p->trans_b ? " (transposed)" : "", (long long)ka, (long long)kb);
    if (c && c->dtype != BRAID_DTYPE_UNDEFINED) {
        int ok = c->rank <= 2;
        for (int i = 0; ok && i < c->rank; i++) {
            int64_t want = i == c->rank - 1 ? nn : m;
            ok = c->dims[i] == 1 || c->dims[i] == want || want < 0;
        }
        if (!ok)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "C has shape %s, which does not broadcast to "
                           "(%lld, %lld)", bd_shape_str(c, sa, sizeof sa), (long long)m,
                           (long long)nn);
    }
    out[0].dtype = a->dtype;
    out[0].rank = 2;
    out[0].dims[0] = m;
    out[0].dims[1] = nn;
    return BRAID_OK;
}

braid_status bd_gemm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    if (n->op == BD_OP_Gemm) return gemm_infer(n, in, out, e);
    if (n->op != BD_OP_MatMul)
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the gemm family", n->op_type);
    braid_status st = bd_expect_dtype(&in[0], "input A", e, BD_GEMM_DTYPES, 0);
    if (st) return st;
    if (in[0].dtype != in[1].dtype)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input A is %s but B is %s; they must match",
                       bd_dtype_name(in[0].dtype), bd_dtype_name(in[1].dtype));
    bd_matmul_geom g;
    return bd_matmul_geometry(&in[0], &in[1], &g, &out[0], e);
}

double bd_gemm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    /* Each output element is a dot product of length K. */
    int64_t k;
    if (n->op == BD_OP_Gemm) {
        const bd_gemm_params *p = n->params;
        if (!p || in[0].rank != 2) return 0;
        k = in[0].dims[p->trans_a ? 0 : 1];
    } else {
        if (in[0].rank < 1) return 0;
        k = in[0].dims[in[0].rank - 1];
    }
    return 2.0 * (double)bd_numel(&out[0]) * (double)k;
}
