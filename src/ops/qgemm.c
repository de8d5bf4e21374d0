/* qgemm.c: attribute parsing, dtype and shape checks and cost of the qgemm
 * op family: MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv (both
 * domains), and com.microsoft's QGemm, DynamicQuantizeMatMul and
 * MatMulIntegerToFloat. Convolutions reuse the conv family's attribute
 * parser and geometry (a copy of the node seen as a float Conv). */
#include "qgemm.h"

#include "gemm.h"

#include <string.h>

static const char *const names_mmi[] = {"A", "B", "a_zero_point", "b_zero_point"};
static const char *const names_convi[] = {"x", "w", "x_zero_point", "w_zero_point"};
static const char *const names_qlmm[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                                         "y_scale", "y_zero_point"};
static const char *const names_qlconv[] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point",
                                           "y_scale", "y_zero_point", "B"};
static const char *const names_qgemm[] = {"A", "a_scale", "a_zero_point", "B", "b_scale", "b_zero_point",
                                          "C", "y_scale", "y_zero_point"};
static const char *const names_dqmm[] = {"A", "B", "b_scale", "b_zero_point", "bias"};
static const char *const names_mmitf[] = {"A", "B", "a_scale", "b_scale", "a_zero_point", "b_zero_point", "bias"};

const char *bd_qgemm_input_name(int op, int i)
{
    const char *const *t = NULL;
    int n = 0;
#define NAMES(arr) t = arr, n = (int)(sizeof arr / sizeof *arr)
    switch (op) {
    case BD_OP_MatMulInteger: NAMES(names_mmi); break;
    case BD_OP_ConvInteger: NAMES(names_convi); break;
    case BD_OP_QLinearMatMul: NAMES(names_qlmm); break;
    case BD_OP_QLinearConv: case BD_OP_MS_QLinearConv: NAMES(names_qlconv); break;
    case BD_OP_MS_QGemm: NAMES(names_qgemm); break;
    case BD_OP_MS_DynamicQuantizeMatMul: NAMES(names_dqmm); break;
    case BD_OP_MS_MatMulIntegerToFloat: NAMES(names_mmitf); break;
    default: break;
    }
#undef NAMES
    return t && i >= 0 && i < n ? t[i] : "?";
}

braid_status bd_qvec_make(const bd_tensor *z, const bd_tensor *x, int per_col, int trans, const char *name,
                          bd_qvec *v, bd_err *e)
{
    char sz[160], sx[160];
    memset(v, 0, sizeof *v);
    v->rank = 1;
    v->dims[0] = 1;
    if (z->dtype == BRAID_DTYPE_UNDEFINED || bd_q_is_scalar(z)) return BRAID_OK;
    int r = x->rank, nb = trans ? 0 : BD_MAX(r - 2, 0);
    int64_t len = trans ? x->dims[per_col ? 0 : 1]
                        : per_col ? (r >= 2 ? x->dims[r - 1] : 1) : (r >= 2 ? x->dims[r - 2] : 1);
    v->rank = nb + 1;
    memcpy(v->dims, x->dims, (size_t)nb * sizeof *x->dims);
    v->dims[nb] = len;
    if (z->rank == 1) {
        if (z->dims[0] != len) goto bad;
        v->st[nb] = 1;
        return BRAID_OK;
    }
    if (trans || z->rank < 2 || z->rank - 2 > nb) goto bad;
    {
        int zr = z->rank;
        int64_t zst[BD_MAX_RANK], s = 1;
        for (int d = zr - 1; d >= 0; d--) zst[d] = s, s *= z->dims[d];
        int lpos = per_col ? zr - 1 : zr - 2, kpos = per_col ? zr - 2 : zr - 1;
        if (z->dims[kpos] != 1 || (z->dims[lpos] != 1 && z->dims[lpos] != len)) goto bad;
        v->st[nb] = z->dims[lpos] == 1 ? 0 : zst[lpos];
        for (int d = 0; d < nb; d++) {
            int j = d - (nb - (zr - 2));
            if (j < 0) continue;
            if (z->dims[j] != 1 && z->dims[j] != x->dims[d]) goto bad;
            v->st[d] = z->dims[j] == 1 ? 0 : zst[j];
        }
    }
    return BRAID_OK;
bad:
    return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has shape %s, which does not fit operand %s: it must be a "
                   "scalar, 1-D with %lld values (one per %s) or broadcast to %s", name, bd_shape_str(z, sz, sizeof sz),
                   bd_shape_str(x, sx, sizeof sx), (long long)(per_col ? (x->rank >= 2 ? x->dims[x->rank - 1] : 1)
                                                                         : (x->rank >= 2 ? x->dims[x->rank - 2] : 1)),
                   per_col ? "column" : "row", per_col ? "(..., 1, N)" : "(..., M, 1)");
}

/* ---- parse ---------------------------------------------------------------------------------- */

braid_status bd_qgemm_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    bd_qgemm_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    p->alpha = 1.0f;
    if (bd_qgemm_io_of(n->op).conv) {
        int64_t cl = 0;
        BD_TRY(bd_attr_int(n, "channels_last", 0, &cl, e));
        if (cl) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "attribute 'channels_last' is %lld; braid runs QLinearConv "
                         "on NCHW data only", (long long)cl);
            goto fail;
        }
        bd_node c = *n; /* the conv family's parser, on a copy seen as a Conv */
        c.op = BD_OP_Conv;
        c.params = NULL;
        BD_TRY(bd_conv_parse(&c, e));
        p->conv = *(const bd_conv_params *)c.params;
        bd_free(c.params);
    } else if (n->op == BD_OP_MS_QGemm) {
        int64_t ta = 0, tb = 0;
        BD_TRY(bd_attr_float(n, "alpha", 1.0f, &p->alpha, e));
        BD_TRY(bd_attr_int(n, "transA", 0, &ta, e));
        BD_TRY(bd_attr_int(n, "transB", 0, &tb, e));
        p->trans_a = ta != 0, p->trans_b = tb != 0;
    }
fail:
    return bd_params_done(n, p, st);
}

/* ---- infer ---------------------------------------------------------------------------------- */

static int is_q8(int dt) { return dt == BRAID_DTYPE_UINT8 || dt == BRAID_DTYPE_INT8; }

#define NAME(i) bd_qgemm_input_name(n->op, (i))
#define HAS(i) ((i) >= 0 && in[(i)].dtype != BRAID_DTYPE_UNDEFINED)

/* A zero point's dtype must be its operand's. */
static braid_status check_zp(const bd_node *n, const bd_tensor *in, int zi, int xi, bd_err *e)
{
    if (!HAS(zi) || in[zi].dtype == in[xi].dtype) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_DTYPE, "zero point '%s' is %s but input '%s' is %s; they must match", NAME(zi),
                   bd_dtype_name(in[zi].dtype), NAME(xi), bd_dtype_name(in[xi].dtype));
}

/* A scale: float (or float16 / bfloat16 where half), finite and nonzero when known. */
static braid_status check_scale(const bd_node *n, const bd_tensor *in, int i, int half, bd_err *e)
{
    braid_status st;
    if (!HAS(i)) return BRAID_OK;
    if ((st = bd_q_expect_scale(&in[i], NAME(i), half, e))) return st;
    return bd_q_check_scale(&in[i], NAME(i), e);
}

/* A per-output-channel vector of a convolution: scalar or [M]. */
static braid_status check_channel_vec(const bd_node *n, const bd_tensor *in, int i, int64_t m, bd_err *e)
{
    char s[160];
    if (!HAS(i) || bd_q_is_scalar(&in[i]) || (in[i].rank == 1 && in[i].dims[0] == m)) return BRAID_OK;
    return BD_FAIL(e, BRAID_ERR_SHAPE, "input '%s' has shape %s; it must be a scalar or hold one value per output "
                   "channel (%lld)", NAME(i), bd_shape_str(&in[i], s, sizeof s), (long long)m);
}

braid_status bd_qgemm_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_qgemm_params *p = n->params;
    bd_qgemm_io io = bd_qgemm_io_of(n->op);
    const bd_tensor *a = &in[io.a], *b = &in[io.b];
    char s1[160], s2[160];
    braid_status st;
    if (!p) return BD_FAIL(e, BRAID_ERR_INTERNAL, "attributes were not parsed");
    if (bd_dtype_is_narrow_float(a->dtype) || bd_dtype_is_narrow_float(b->dtype))
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "%s of %s and %s: braid runs it on uint8 and int8 only", n->op_type,
                       bd_dtype_name(a->dtype), bd_dtype_name(b->dtype));
    if (io.dyn ? a->dtype != BRAID_DTYPE_FLOAT : !is_q8(a->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' has dtype %s; %s takes %s", NAME(io.a), bd_dtype_name(a->dtype),
                       n->op_type, io.dyn ? "float" : "uint8 or int8");
    if (!is_q8(b->dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input '%s' has dtype %s; %s takes uint8 or int8", NAME(io.b),
                       bd_dtype_name(b->dtype), n->op_type);
    if ((st = check_zp(n, in, io.azp, io.a, e)) || (st = check_zp(n, in, io.bzp, io.b, e))) return st;
    int half = n->op == BD_OP_QLinearMatMul || n->op == BD_OP_MS_MatMulIntegerToFloat;
    if ((st = check_scale(n, in, io.as, half, e)) || (st = check_scale(n, in, io.bs, half, e)) ||
        (st = check_scale(n, in, io.ys, half, e)))
        return st;
    if ((io.as >= 0 && (st = bd_q_expect_scalar(&in[io.as], NAME(io.as), e))) ||
        (io.ys >= 0 && (st = bd_q_expect_scalar(&in[io.ys], NAME(io.ys), e))) ||
        (io.yzp >= 0 && (st = bd_q_expect_scalar(&in[io.yzp], NAME(io.yzp), e))))
        return st;
    if (HAS(io.yzp) && !is_q8(in[io.yzp].dtype))
        return BD_FAIL(e, BRAID_ERR_DTYPE, "zero point '%s' has dtype %s; it must be uint8 or int8", NAME(io.yzp),
                       bd_dtype_name(in[io.yzp].dtype));
    if (io.ys >= 0 && n->op != BD_OP_MS_QGemm && (!HAS(io.ys) || !HAS(io.yzp)))
        return BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "input '%s' is missing", NAME(HAS(io.ys) ? io.yzp : io.ys));
    int64_t m, nn;
    if (io.conv) {
        bd_conv_geom g;
        bd_tensor xf = *a, wf = *b;
        xf.dtype = wf.dtype = BRAID_DTYPE_FLOAT;
        bd_node c = *n;
        c.op = BD_OP_Conv;
        if ((st = bd_conv_geometry(&c, &xf, &wf, NULL, &g, e))) return st;
        if ((st = bd_q_expect_scalar(&in[io.azp], NAME(io.azp), e)) ||
            (st = check_channel_vec(n, in, io.bzp, g.c_out, e)) || (st = check_channel_vec(n, in, io.bs, g.c_out, e)))
            return st;
        if (HAS(io.bias) && (in[io.bias].dtype != BRAID_DTYPE_INT32 || in[io.bias].rank != 1 ||
                             in[io.bias].dims[0] != g.c_out))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "bias 'B' is %s %s; it must be int32 with one value per output "
                           "channel (%lld)", bd_dtype_name(in[io.bias].dtype),
                           bd_shape_str(&in[io.bias], s1, sizeof s1), (long long)g.c_out);
        out[0].rank = g.nsp + 2;
        out[0].dims[0] = g.n;
        out[0].dims[1] = g.c_out;
        for (int i = 0; i < g.nsp; i++) out[0].dims[2 + i] = g.y[i];
        m = g.c_out, nn = 1;
    } else {
        bd_qvec v;
        int trans = n->op == BD_OP_MS_QGemm;
        if (trans) {
            if (a->rank != 2 || b->rank != 2)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "A and B must be 2-D, got A %s and B %s",
                               bd_shape_str(a, s1, sizeof s1), bd_shape_str(b, s2, sizeof s2));
            int64_t ka = a->dims[p->trans_a ? 0 : 1], kb = b->dims[p->trans_b ? 1 : 0];
            if (ka != kb)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "A %s%s and B %s%s do not multiply", bd_shape_str(a, s1, sizeof s1),
                               p->trans_a ? " (transposed)" : "", bd_shape_str(b, s2, sizeof s2),
                               p->trans_b ? " (transposed)" : "");
            out[0].rank = 2;
            m = out[0].dims[0] = a->dims[p->trans_a ? 1 : 0];
            nn = out[0].dims[1] = b->dims[p->trans_b ? 0 : 1];
        } else {
            bd_matmul_geom g;
            if ((st = bd_matmul_geometry(a, b, &g, &out[0], e))) return st;
            m = g.m, nn = g.n;
        }
        if ((io.azp >= 0 && (st = bd_qvec_make(&in[io.azp], a, 0, 0, NAME(io.azp), &v, e))) ||
            (io.bzp >= 0 && (st = bd_qvec_make(&in[io.bzp], b, 1, trans && p->trans_b, NAME(io.bzp), &v, e))) ||
            (io.bs >= 0 && (st = bd_qvec_make(&in[io.bs], b, 1, trans && p->trans_b, NAME(io.bs), &v, e))))
            return st;
        if (trans && HAS(io.azp) && !bd_q_is_scalar(&in[io.azp]))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "zero point 'a_zero_point' must hold one value");
        if (HAS(io.bias) && io.fbias &&
            (in[io.bias].rank != 1 || in[io.bias].dims[0] != nn))
            return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'bias' has shape %s; it must be 1-D with %lld values",
                           bd_shape_str(&in[io.bias], s1, sizeof s1), (long long)nn);
        if (HAS(io.bias) && !io.fbias) { /* QGemm's C: int32 broadcast to (M, N) */
            const bd_tensor *c = &in[io.bias];
            int ok = c->dtype == BRAID_DTYPE_INT32 && c->rank <= 2;
            for (int i = 0; ok && i < c->rank; i++) ok = c->dims[i] == 1 || c->dims[i] == (i == c->rank - 1 ? nn : m);
            if (!ok)
                return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'C' is %s %s; it must be int32 and broadcast to (%lld, %lld)",
                               bd_dtype_name(c->dtype), bd_shape_str(c, s1, sizeof s1), (long long)m, (long long)nn);
        }
    }
    int odt;
    switch (n->op) {
    case BD_OP_MatMulInteger: case BD_OP_ConvInteger: odt = BRAID_DTYPE_INT32; break;
    case BD_OP_MS_DynamicQuantizeMatMul: odt = BRAID_DTYPE_FLOAT; break;
    case BD_OP_MS_MatMulIntegerToFloat: odt = in[io.as].dtype; break;
    case BD_OP_MS_QGemm: odt = HAS(io.yzp) ? in[io.yzp].dtype : BRAID_DTYPE_FLOAT; break;
    default: odt = in[io.yzp].dtype; break;
    }
    if (io.fbias && HAS(io.bias) && in[io.bias].dtype != odt)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'bias' is %s but the output is %s; they must match",
                       bd_dtype_name(in[io.bias].dtype), bd_dtype_name(odt));
    out[0].dtype = odt;
    out[0].data = NULL;
    return BRAID_OK;
}

double bd_qgemm_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    bd_qgemm_io io = bd_qgemm_io_of(n->op);
    const bd_tensor *a = &in[io.a], *b = &in[io.b];
    if (io.conv) {
        if (b->rank < 3) return 0;
        double taps = 1;
        for (int i = 2; i < b->rank; i++) taps *= (double)b->dims[i];
        return 2.0 * (double)bd_numel(&out[0]) * (double)b->dims[1] * taps;
    }
    const bd_qgemm_params *p = n->params;
    if (a->rank < 1) return 0;
    int64_t k = n->op == BD_OP_MS_QGemm && p && p->trans_a ? a->dims[0] : a->dims[a->rank - 1];
    return 2.0 * (double)bd_numel(&out[0]) * (double)k;
}
