/* qlinear.c: attribute parsing, dtype and shape checks and cost of the
 * qlinear op family (com.microsoft): QLinearAdd, QLinearMul (broadcast),
 * QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool and
 * QLinearAveragePool (channels_last too; the window attributes through the
 * pool family's parser and geometry), QLinearConcat, QLinearSoftmax and
 * QLinearWhere, and QEmbedLayerNormalization (BERT's quantized embedding
 * and LayerNorm). Every scale and zero point here is per tensor. */
#include "qlinear.h"

#include <string.h>

static const char *const names_bin[] = {"A", "A_scale", "A_zero_point", "B", "B_scale", "B_zero_point",
                                        "C_scale", "C_zero_point"};
static const char *const names_un[] = {"X", "X_scale", "X_zero_point", "Y_scale", "Y_zero_point"};
static const char *const names_emb[] = {
    "input_ids", "segment_ids", "word_embedding_quant", "position_embedding_quant", "segment_embedding",
    "gamma_quant", "beta_quant", "mask", "word_embedding_scale", "position_embedding_scale",
    "segment_embedding_scale", "gamma_scale", "beta_scale", "word_embedding_zero_point",
    "position_embedding_zero_point", "segment_embedding_zero_point", "gamma_zero_point", "beta_zero_point"};
static const char *const names_where[] = {"condition", "X", "x_scale", "x_zero_point", "Y", "y_scale",
                                          "y_zero_point", "z_scale", "z_zero_point"};

const char *bd_qlinear_input_name(int op, int i)
{
    static const char *const triple[] = {"inputs", "input scale", "input zero point"};
    switch (op) {
    case BD_OP_MS_QLinearAdd: case BD_OP_MS_QLinearMul: return i >= 0 && i < 8 ? names_bin[i] : "?";
    case BD_OP_MS_QLinearWhere: return i >= 0 && i < 9 ? names_where[i] : "?";
    case BD_OP_MS_QEmbedLayerNormalization: return i >= 0 && i < 18 ? names_emb[i] : "?";
    case BD_OP_MS_QLinearConcat: return i == 0 ? "Y_scale" : i == 1 ? "Y_zero_point" : i > 1 ? triple[(i - 2) % 3] : "?";
    default: return i >= 0 && i < 5 ? names_un[i] : "?";
    }
}

braid_status bd_qlinear_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_qlinear_params *p = bd_calloc(1, sizeof *p);
    int64_t v = 0;
    BD_CHECK_ALLOC(e, p);
    switch (n->op) {
    case BD_OP_MS_QLinearLeakyRelu: BD_TRY(bd_attr_float(n, "alpha", 0.01f, &p->alpha, e)); break;
    case BD_OP_MS_QEmbedLayerNormalization: BD_TRY(bd_attr_float(n, "epsilon", 1e-12f, &p->epsilon, e)); break;
    case BD_OP_MS_QLinearConcat:
        if (!bd_node_attr(n, "axis")) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'axis' is required");
            goto fail;
        }
        BD_TRY(bd_attr_int(n, "axis", 0, &p->axis, e));
        break;
    case BD_OP_MS_QLinearSoftmax:
        BD_TRY(bd_attr_int(n, "opset", 13, &v, e));
        p->softmax_opset = (int)v;
        BD_TRY(bd_attr_int(n, "axis", v < 13 ? 1 : -1, &p->axis, e));
        break;
    case BD_OP_MS_QLinearAveragePool: case BD_OP_MS_QLinearGlobalAveragePool:
        BD_TRY(bd_attr_int(n, "channels_last", 0, &v, e));
        if (v != 0 && v != 1) {
            st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'channels_last' must be 0 or 1, not %lld", (long long)v);
            goto fail;
        }
        p->channels_last = (int)v;
        if (n->op == BD_OP_MS_QLinearAveragePool) { /* the pool family's parser, on a copy seen as AveragePool */
            bd_node c = *n;
            c.op = BD_OP_AveragePool;
            c.params = NULL;
            BD_TRY(bd_pool_parse(&c, e));
            p->pool = *(const bd_pool_params *)c.params;
            bd_free(c.params);
        }
        break;
    default: break;
    }
fail:
    return bd_params_done(n, p, st);
}

/* ---- infer ------------------------------------------------------------------------------------------ */

static int is_q8(int dt) { return dt == BRAID_DTYPE_UINT8 || dt == BRAID_DTYPE_INT8; }

#define NAME(i) bd_qlinear_input_name(n->op, (i))
#define HAS(i) ((i) >= 0 && (i) < n->n_in && in[(i)].dtype != BRAID_DTYPE_UNDEFINED)

/* A per-tensor scale (float, one value, nonzero when known) or zero point (dtype dt, one value). */
static braid_status check_param(const bd_node *n, const bd_tensor *in, int i, int scale, int dt, bd_err *e)
{
    braid_status st;
    if (!HAS(i)) {
        if (scale) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input '%s' is missing", NAME(i));
        return BRAID_OK;
    }
    if ((st = bd_q_expect_scalar(&in[i], NAME(i), e))) return st;
    if (scale) {
        if ((st = bd_q_expect_scale(&in[i], NAME(i), 0, e))) return st;
        return bd_q_check_scale(&in[i], NAME(i), e);
    }
    if (in[i].dtype != dt)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "zero point '%s' is %s but the data is %s; they must match", NAME(i),
                       bd_dtype_name(in[i].dtype), bd_dtype_name(dt));
    return BRAID_OK;
}

static braid_status check_data(const bd_node *n, const bd_tensor *in, int i, bd_err *e)
{
    if (is_q8(in[i].dtype)) return BRAID_OK;
    return BD_FAIL(e, in[i].dtype == BRAID_DTYPE_FLOAT || in[i].dtype == BRAID_DTYPE_UINT16 ? BRAID_ERR_UNSUPPORTED
                                                                                            : BRAID_ERR_DTYPE,
                   "input '%s' has dtype %s; braid runs %s on uint8 and int8", NAME(i), bd_dtype_name(in[i].dtype),
                   n->op_type);
}

static braid_status concat_infer(const bd_node *n, const bd_qlinear_params *p, const bd_tensor *in, bd_tensor *out,
                                 bd_err *e)
{
    char s1[160], s2[160];
    braid_status st;
    if (n->n_in < 5 || (n->n_in - 2) % 3)
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "QLinearConcat takes Y_scale, Y_zero_point, then (tensor, scale, "
                       "zero point) triples; it has %d inputs", n->n_in);
    int dt = in[1].dtype;
    if (!is_q8(dt)) return check_data(n, in, 1, e);
    if ((st = check_param(n, in, 0, 1, 0, e)) || (st = check_param(n, in, 1, 0, dt, e))) return st;
    const bd_tensor *x0 = &in[2];
    int ax;
    if ((st = bd_axis(p->axis, x0->rank, &ax, e))) return st;
    int64_t total = 0;
    for (int i = 2; i < n->n_in; i += 3) {
        const bd_tensor *x = &in[i];
        if ((st = check_data(n, in, i, e))) return st;
        if (x->dtype != dt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input %d is %s but Y_zero_point is %s; they must match", i,
                           bd_dtype_name(x->dtype), bd_dtype_name(dt));
        if ((st = check_param(n, in, i + 1, 1, 0, e)) || (st = check_param(n, in, i + 2, 0, dt, e))) return st;
        int ok = x->rank == x0->rank;
        for (int d = 0; ok && d < x->rank; d++) ok = d == ax || x->dims[d] == x0->dims[d];
        if (!ok)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input %d has shape %s, which does not concatenate with %s on axis %d", i,
                           bd_shape_str(x, s1, sizeof s1), bd_shape_str(x0, s2, sizeof s2), ax);
        total += x->dims[ax];
    }
    out[0] = *x0;
    out[0].data = NULL;
    out[0].dims[ax] = total;
    return BRAID_OK;
}

/* QEmbedLayerNormalization: ids (B, S) int32; tables (rows, H) of one 8-bit dtype. */
static braid_status embed_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    char s1[160], s2[160];
    braid_status st;
    const bd_tensor *ids = &in[BD_QEMB_IDS], *word = &in[BD_QEMB_WORD];
    int seg = HAS(BD_QEMB_SEG_IDS), dt = word->dtype;
    if (ids->dtype != BRAID_DTYPE_INT32 || ids->rank != 2)
        return BD_FAIL(e, ids->dtype != BRAID_DTYPE_INT32 ? BRAID_ERR_DTYPE : BRAID_ERR_SHAPE,
                       "input 'input_ids' is %s %s; it must be int32 (batch, sequence)", bd_dtype_name(ids->dtype),
                       bd_shape_str(ids, s1, sizeof s1));
    if (seg != HAS(BD_QEMB_SEG) || seg != HAS(BD_QEMB_SCALES + 2))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "segment_ids, segment_embedding and its scale come together");
    if ((st = check_data(n, in, BD_QEMB_WORD, e))) return st;
    int64_t h = word->rank == 2 ? word->dims[1] : -1;
    for (int t = BD_QEMB_WORD; t <= BD_QEMB_BETA; t++) {
        if (!HAS(t)) continue;
        if (in[t].dtype != dt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' is %s but '%s' is %s; they must match", NAME(t),
                           bd_dtype_name(in[t].dtype), NAME(BD_QEMB_WORD), bd_dtype_name(dt));
        int table = t <= BD_QEMB_SEG;
        if (table ? in[t].rank != 2 || in[t].dims[1] != h : in[t].rank != 1 || in[t].dims[0] != h)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has shape %s; with '%s' of shape %s it must be %s", NAME(t),
                           bd_shape_str(&in[t], s1, sizeof s1), NAME(BD_QEMB_WORD), bd_shape_str(word, s2, sizeof s2),
                           table ? "(rows, hidden)" : "(hidden)");
        if ((st = check_param(n, in, BD_QEMB_SCALES + t - BD_QEMB_WORD, 1, 0, e)) ||
            (st = check_param(n, in, BD_QEMB_ZPS + t - BD_QEMB_WORD, 0, dt, e)))
            return st;
    }
    for (int t = BD_QEMB_SEG_IDS; t <= BD_QEMB_MASK; t += BD_QEMB_MASK - BD_QEMB_SEG_IDS)
        if (HAS(t) && (in[t].dtype != BRAID_DTYPE_INT32 || !bd_shape_equal(&in[t], ids)))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' is %s %s; it must be int32 shaped as input_ids %s", NAME(t),
                           bd_dtype_name(in[t].dtype), bd_shape_str(&in[t], s1, sizeof s1), bd_shape_str(ids, s2, sizeof s2));
    out[0] = (bd_tensor){.dtype = BRAID_DTYPE_FLOAT, .rank = 3, .dims = {ids->dims[0], ids->dims[1], h}};
    if (n->n_out > 1) out[1] = (bd_tensor){.dtype = BRAID_DTYPE_INT32, .rank = 1, .dims = {ids->dims[0]}};
    return BRAID_OK;
}

braid_status bd_qlinear_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_qlinear_params *p = n->params;
    bd_qlinear_io io = bd_qlinear_io_of(n->op);
    braid_status st;
    char s1[160];
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (n->op == BD_OP_MS_QLinearConcat) return concat_infer(n, p, in, out, e);
    if (n->op == BD_OP_MS_QEmbedLayerNormalization) return embed_infer(n, in, out, e);
    const bd_tensor *x = &in[io.x];
    int dt = x->dtype;
    if ((st = check_data(n, in, io.x, e))) return st;
    if ((st = check_param(n, in, io.xs, 1, 0, e)) || (st = check_param(n, in, io.xzp, 0, dt, e)) ||
        (st = check_param(n, in, io.zs, 1, 0, e)) || (st = check_param(n, in, io.zzp, 0, dt, e)))
        return st;
    if (io.y >= 0) {
        if ((st = check_data(n, in, io.y, e))) return st;
        if (in[io.y].dtype != dt)
            return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' is %s but '%s' is %s; they must match", NAME(io.y),
                           bd_dtype_name(in[io.y].dtype), NAME(io.x), bd_dtype_name(dt));
        if ((st = check_param(n, in, io.ys, 1, 0, e)) || (st = check_param(n, in, io.yzp, 0, dt, e))) return st;
        if ((st = bd_broadcast_shape(x, &in[io.y], &out[0], e))) return st;
        if (n->op == BD_OP_MS_QLinearWhere) {
            bd_tensor xy = out[0];
            if (in[0].dtype != BRAID_DTYPE_BOOL)
                return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'condition' has dtype %s; it must be bool",
                               bd_dtype_name(in[0].dtype));
            if ((st = bd_broadcast_shape(&in[0], &xy, &out[0], e))) return st;
        }
        out[0].dtype = dt;
        out[0].data = NULL;
        return BRAID_OK;
    }
    out[0] = *x;
    out[0].data = NULL;
    switch (n->op) {
    case BD_OP_MS_QLinearGlobalAveragePool: case BD_OP_MS_QLinearAveragePool: {
        if (x->rank < 3)
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'X' has shape %s; pools need a batch, channels and at least "
                           "one spatial dim", bd_shape_str(x, s1, sizeof s1));
        int cl = p->channels_last, sp0 = cl ? 1 : 2; /* the first spatial dim */
        if (n->op == BD_OP_MS_QLinearGlobalAveragePool) {
            for (int d = sp0; d < sp0 + x->rank - 2; d++) out[0].dims[d] = 1;
            return BRAID_OK;
        }
        bd_tensor v = *x; /* X as (N, C, spatial...) for the geometry */
        if (cl) {
            v.dims[1] = x->dims[x->rank - 1];
            for (int d = 2; d < x->rank; d++) v.dims[d] = x->dims[d - 1];
        }
        bd_pool_geom g;
        bd_node c = *n;
        c.op = BD_OP_AveragePool;
        if ((st = bd_pool_geometry(&c, &v, &g, e))) return st;
        for (int i = 0; i < g.nsp; i++) out[0].dims[sp0 + i] = g.out[i];
        return BRAID_OK;
    }
    case BD_OP_MS_QLinearSoftmax: {
        int ax;
        if (!HAS(io.zzp)) return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input 'Y_zero_point' is missing");
        if ((st = bd_axis(p->axis, x->rank, &ax, e))) return st;
        return BRAID_OK;
    }
    default: return BRAID_OK;
    }
}

double bd_qlinear_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    const bd_qlinear_params *p = n->params;
    if (n->op == BD_OP_MS_QLinearAveragePool && p) {
        double window = 1;
        for (int i = 0; i < p->pool.nsp; i++) window *= (double)p->pool.kernel[i];
        return (double)bd_numel(&out[0]) * window;
    }
    if (n->op == BD_OP_MS_QLinearGlobalAveragePool) return (double)bd_numel(&in[0]);
    if (n->op == BD_OP_MS_QEmbedLayerNormalization) return 8.0 * (double)bd_numel(&out[0]);
    return (n->op == BD_OP_MS_QLinearSoftmax ? 6.0 : 3.0) * (double)bd_numel(&out[0]);
}
