/* im2col.c: attribute parsing, shape inference and cost of the im2col op
 * family: Col2Im (every numeric dtype and bool, any number of spatial dims)
 * and DeformConv (opsets 19 and 22, 1 to 3 spatial dims, float types). */
#include "im2col.h"

#include <string.h>

#define DT(x) (1u << BRAID_DTYPE_##x)
#define FLOATS (DT(FLOAT) | DT(DOUBLE) | DT(FLOAT16) | DT(BFLOAT16))
#define PLAIN (FLOATS | DT(INT8) | DT(INT16) | DT(INT32) | DT(INT64) | DT(UINT8) | DT(UINT16) | DT(UINT32) | \
               DT(UINT64) | DT(BOOL))

static int dtype_in(int dt, unsigned set) { return dt > 0 && dt < 32 && (set & (1u << dt)); }

static braid_status list(const bd_node *n, const char *name, int64_t *out, int *count, int64_t min, bd_err *e)
{
    braid_status st = bd_attr_ints(n, name, out, 2 * BD_IM2COL_MAX_SPATIAL, count, e);
    if (st != BRAID_OK) return st;
    for (int i = 0; i < *count; i++)
        if (out[i] < min)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute '%s' has value %lld, below %lld", name,
                           (long long)out[i], (long long)min);
    return BRAID_OK;
}

braid_status bd_im2col_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_im2col_params *p = bd_calloc(1, sizeof *p);
    int64_t tmp[2 * BD_IM2COL_MAX_SPATIAL];
    BD_CHECK_ALLOC(e, p);
    BD_TRY(list(n, "strides", tmp, &p->n_strides, 1, e));
    memcpy(p->strides, tmp, sizeof p->strides);
    BD_TRY(list(n, "dilations", tmp, &p->n_dilations, 1, e));
    memcpy(p->dilations, tmp, sizeof p->dilations);
    BD_TRY(list(n, "pads", p->pads, &p->n_pads, 0, e));
    if (n->op == BD_OP_DeformConv) {
        BD_TRY(list(n, "kernel_shape", tmp, &p->n_kernel, 1, e));
        memcpy(p->kernel, tmp, sizeof p->kernel);
        BD_TRY(bd_attr_int(n, "group", 1, &p->group, e));
        BD_TRY(bd_attr_int(n, "offset_group", 1, &p->offset_group, e));
        if (p->group < 1 || p->offset_group < 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "group (%lld) and offset_group (%lld) must be 1 or more",
                         (long long)p->group, (long long)p->offset_group);
            goto fail;
        }
    }
fail:
    return bd_params_done(n, p, st);
}

/* Strides, dilations and pads for nsp spatial dims (defaults where absent). */
static braid_status lists_for(const bd_node *n, int nsp, bd_im2col_geom *g, int64_t *pe, bd_err *e)
{
    const bd_im2col_params *p = n->params;
    if ((p->n_strides && p->n_strides != nsp) || (p->n_dilations && p->n_dilations != nsp) ||
        (p->n_pads && p->n_pads != 2 * nsp) || (p->n_kernel && p->n_kernel != nsp))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "strides, dilations and kernel_shape need %d values and pads %d "
                       "(one per spatial dim)", nsp, 2 * nsp);
    g->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        g->str[i] = p->n_strides ? p->strides[i] : 1;
        g->dil[i] = p->n_dilations ? p->dilations[i] : 1;
        g->pb[i] = p->n_pads ? p->pads[i] : 0;
        pe[i] = p->n_pads ? p->pads[nsp + i] : 0;
    }
    return BRAID_OK;
}

/* Blocks along dim i: (image + pads - extent) / stride + 1. */
static int64_t blocks(const bd_im2col_geom *g, int i, int64_t pe)
{
    int64_t span = g->img[i] + g->pb[i] + pe - g->dil[i] * (g->blk[i] - 1) - 1;
    return span < 0 ? 0 : span / g->str[i] + 1;
}

braid_status bd_col2im_geometry(const bd_node *n, const bd_tensor *in, bd_im2col_geom *g, bd_err *e)
{
    const bd_tensor *x = &in[0];
    int64_t img[BD_IM2COL_MAX_SPATIAL], blk[BD_IM2COL_MAX_SPATIAL], pe[BD_IM2COL_MAX_SPATIAL];
    int ni = 0, nb = 0;
    braid_status st;
    memset(g, 0, sizeof *g);
    if ((st = bd_const_ints(&in[1], "image_shape", img, BD_IM2COL_MAX_SPATIAL, &ni, e)) ||
        (st = bd_const_ints(&in[2], "block_shape", blk, BD_IM2COL_MAX_SPATIAL, &nb, e)))
        return st;
    if (ni != nb || ni < 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "image_shape (%d values) and block_shape (%d) must have one value per "
                       "spatial dim", ni, nb);
    if ((st = lists_for(n, ni, g, pe, e))) return st;
    g->K = g->L = g->P = 1;
    for (int i = 0; i < ni; i++) {
        if (img[i] < 0 || blk[i] < 1)
            return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "image_shape[%d] = %lld and block_shape[%d] = %lld are out of "
                           "range", i, (long long)img[i], i, (long long)blk[i]);
        g->img[i] = img[i], g->blk[i] = blk[i];
        g->nb[i] = blocks(g, i, pe[i]);
        g->K *= blk[i], g->L *= g->nb[i], g->P *= img[i];
    }
    if (x->rank != 3 || x->dims[1] % g->K != 0 || x->dims[2] != g->L)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input must be (N, C * %lld, %lld): the block has %lld points and the "
                       "image holds %lld blocks", (long long)g->K, (long long)g->L, (long long)g->K, (long long)g->L);
    return BRAID_OK;
}

braid_status bd_deform_geometry(const bd_node *n, const bd_tensor *in, int n_in, bd_im2col_geom *g, bd_err *e)
{
    const bd_im2col_params *p = n->params;
    const bd_tensor *x = &in[0], *w = &in[1], *off = &in[2];
    int64_t pe[BD_IM2COL_MAX_SPATIAL];
    const int nsp = x->rank - 2;
    braid_status st;
    memset(g, 0, sizeof *g);
    if (nsp < 1 || nsp > 3)
        return BD_FAIL(e, nsp < 1 ? BRAID_ERR_SHAPE : BRAID_ERR_UNSUPPORTED, "DeformConv over %d spatial dims is not "
                       "supported (1 to 3 are)", nsp);
    if ((st = lists_for(n, nsp, g, pe, e))) return st;
    const int64_t C = x->dims[1], OC = w->dims[0];
    if (w->rank != x->rank || C != w->dims[1] * p->group || OC % p->group || C % p->offset_group)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "W must be (M, C / group, kernel...) with M and C divisible by group "
                       "(%lld) and C by offset_group (%lld)", (long long)p->group, (long long)p->offset_group);
    g->K = g->L = g->P = 1;
    for (int i = 0; i < nsp; i++) {
        g->img[i] = x->dims[2 + i];
        g->blk[i] = w->dims[2 + i];
        if (p->n_kernel && p->kernel[i] != g->blk[i])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "kernel_shape[%d] is %lld but W has %lld", i, (long long)p->kernel[i],
                           (long long)g->blk[i]);
        g->nb[i] = blocks(g, i, pe[i]);
        g->K *= g->blk[i], g->L *= g->nb[i], g->P *= g->img[i];
    }
    if (off->rank != x->rank || off->dims[0] != x->dims[0] || off->dims[1] != p->offset_group * g->K * nsp)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "offset must be (N, offset_group * %lld kernel points * %d, output...)",
                       (long long)g->K, nsp);
    for (int i = 0; i < nsp; i++)
        if (off->dims[2 + i] != g->nb[i])
            return BD_FAIL(e, BRAID_ERR_SHAPE, "offset's spatial dim %d is %lld, but the convolution gives %lld", i,
                           (long long)off->dims[2 + i], (long long)g->nb[i]);
    if (n_in > 3 && in[3].dtype && (in[3].rank != 1 || in[3].dims[0] != OC))
        return BD_FAIL(e, BRAID_ERR_SHAPE, "B must be (%lld)", (long long)OC);
    if (n_in > 4 && in[4].dtype) {
        const bd_tensor *m = &in[4];
        int bad = m->rank != x->rank || m->dims[0] != x->dims[0] || m->dims[1] != p->offset_group * g->K;
        for (int i = 0; !bad && i < nsp; i++) bad = m->dims[2 + i] != g->nb[i];
        if (bad)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "mask must be (N, offset_group * %lld kernel points, output...)",
                           (long long)g->K);
    }
    return BRAID_OK;
}

braid_status bd_im2col_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    bd_im2col_geom g;
    braid_status st;
    const bd_tensor *x = &in[0];
    if (n->op == BD_OP_Col2Im) {
        if (!dtype_in(x->dtype, PLAIN))
            return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "input has dtype %s, which braid's Col2Im does not take",
                           bd_dtype_name(x->dtype));
        if ((st = bd_col2im_geometry(n, in, &g, e))) return st;
        out[0].dtype = x->dtype;
        out[0].rank = 2 + g.nsp;
        out[0].dims[0] = x->dims[0];
        out[0].dims[1] = x->dims[1] / g.K;
        for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.img[i];
        return BRAID_OK;
    }
    if (n->op != BD_OP_DeformConv) return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the im2col family", n->op_type);
    if (!dtype_in(x->dtype, FLOATS))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "X has dtype %s; DeformConv takes float, double, float16 or bfloat16",
                       bd_dtype_name(x->dtype));
    for (int i = 1; i < n->n_in; i++)
        if (in[i].dtype != BRAID_DTYPE_UNDEFINED && in[i].dtype != x->dtype)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d has dtype %s but X %s; they must agree", i,
                           bd_dtype_name(in[i].dtype), bd_dtype_name(x->dtype));
    if (in[1].rank < 1 || in[2].rank < 1) return BD_FAIL(e, BRAID_ERR_SHAPE, "W and offset must have a shape");
    if ((st = bd_deform_geometry(n, in, n->n_in, &g, e))) return st;
    out[0].dtype = x->dtype;
    out[0].rank = x->rank;
    out[0].dims[0] = x->dims[0];
    out[0].dims[1] = in[1].dims[0];
    for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.nb[i];
    return BRAID_OK;
}

double bd_im2col_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    if (n->op == BD_OP_DeformConv && in[1].rank > 1) {
        double k = 1;
        for (int i = 1; i < in[1].rank; i++) k *= (double)in[1].dims[i];
        return (double)bd_numel(&out[0]) * k * 2 + (double)bd_numel(&in[2]) * 8;
    }
    return (double)bd_numel(&in[0]);
}
