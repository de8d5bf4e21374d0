/* test_im2col.c: the im2col family against direct formulas written here:
 * Col2Im as the scatter-add adjoint of im2col (1-D, 2-D with pads, strides
 * and dilations, 3-D), int32 sums that wrap, bool as OR, float16, and the
 * shape errors; DeformConv as a direct sum over kernel points of the
 * bilinearly sampled (zeros outside) input times mask and weight, in 1-D,
 * 2-D (groups, offset groups, mask, bias, strides, pads, dilations, offsets
 * reaching beyond the image) and 3-D; zero offsets reduce it to a plain
 * convolution; float16; thread-count independence; and errors. */
#include "check.h"
#include "optest.h"

#include <math.h>

#include "util/dtype.h"

/* ---- Col2Im's reference: scatter every column entry onto its pixel ---- */

typedef struct c2i_case {
    int nsp;
    int64_t img[3], blk[3], str[3], dil[3], pb[3], pe[3];
} c2i_case;

static int64_t c2i_blocks(const c2i_case *c, int i)
{
    return (c->img[i] + c->pb[i] + c->pe[i] - c->dil[i] * (c->blk[i] - 1) - 1) / c->str[i] + 1;
}

/* y (N, C, img...) += x (N, C K, L) scattered; doubles. */
static void c2i_scatter(const c2i_case *c, int64_t N, int64_t C, const double *x, double *y)
{
    int64_t K = 1, L = 1, P = 1, nb[3];
    for (int i = 0; i < c->nsp; i++) nb[i] = c2i_blocks(c, i), K *= c->blk[i], L *= nb[i], P *= c->img[i];
    for (int64_t i = 0; i < N * C * P; i++) y[i] = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++)
            for (int64_t kk = 0; kk < K; kk++)
                for (int64_t l = 0; l < L; l++) {
                    int64_t k = kk, b = l, pix = 0, ok = 1;
                    int64_t kc[3], bc[3];
                    for (int i = c->nsp - 1; i >= 0; i--) kc[i] = k % c->blk[i], k /= c->blk[i], bc[i] = b % nb[i], b /= nb[i];
                    for (int i = 0; i < c->nsp; i++) {
                        int64_t s = bc[i] * c->str[i] - c->pb[i] + kc[i] * c->dil[i];
                        ok &= s >= 0 && s < c->img[i];
                        pix = pix * c->img[i] + s;
                    }
                    if (ok) y[(n * C + ch) * P + pix] += x[((n * C + ch) * K + kk) * L + l];
                }
}

static void c2i_node(tnode *t, const c2i_case *c, int64_t *imgv, int64_t *blkv)
{
    int64_t pads[6];
    tnode_init(t, BD_OP_Col2Im, 18, 3, 1);
    for (int i = 0; i < c->nsp; i++) pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i], imgv[i] = c->img[i], blkv[i] = c->blk[i];
    attr_ints(t, "strides", c->nsp, c->str);
    attr_ints(t, "dilations", c->nsp, c->dil);
    attr_ints(t, "pads", 2 * c->nsp, pads);
}

static void check_col2im(const c2i_case *c, int64_t N, int64_t C)
{
    int64_t K = 1, L = 1, P = 1, imgv[3], blkv[3];
    for (int i = 0; i < c->nsp; i++) K *= c->blk[i], L *= c2i_blocks(c, i), P *= c->img[i];
    unsigned seed = (unsigned)(K * 31 + L);
    float *xf = randn(N * C * K * L, &seed);
    double *xd = malloc((size_t)(N * C * K * L) * sizeof *xd), *want = malloc((size_t)(N * C * P) * sizeof *want);
    for (int64_t i = 0; i < N * C * K * L; i++) xd[i] = xf[i];
    c2i_scatter(c, N, C, xd, want);
    tnode t;
    bd_tensor in[3], out[1];
    bd_err e = {0};
    c2i_node(&t, c, imgv, blkv);
    in[0] = tensor(F32, 3, (int64_t[]){N, C * K, L}, xf);
    in[1] = ints1(imgv, c->nsp);
    in[2] = ints1(blkv, c->nsp);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    CHECK_EQ_INT(out[0].rank, 2 + c->nsp);
    for (int64_t i = 0; i < N * C * P; i++) CHECK_NEAR(((float *)out[0].data)[i], want[i], 1e-5, 1e-5);
    done(&t.n, out);
    free(xf), free(xd), free(want);
}

/* ---- DeformConv's reference ---- */

typedef struct dc_case {
    int nsp;
    int64_t N, C, OC, group, og, img[3], k[3], str[3], dil[3], pb[3], pe[3];
    int mask, bias;
} dc_case;

static int64_t dc_out(const dc_case *c, int i)
{
    return (c->img[i] + c->pb[i] + c->pe[i] - c->dil[i] * (c->k[i] - 1) - 1) / c->str[i] + 1;
}

/* The multilinear sample of one image at pos, corners outside reading 0. */
static double sample(const dc_case *c, const double *img, const double *pos)
{
    double acc = 0;
    for (int corner = 0; corner < (1 << c->nsp); corner++) {
        double w = 1;
        int64_t off = 0;
        int inside = 1;
        for (int d = 0; d < c->nsp; d++) {
            double f = floor(pos[d]);
            int up = (corner >> d) & 1;
            int64_t i = (int64_t)f + up;
            w *= up ? pos[d] - f : 1 - (pos[d] - f);
            inside &= i >= 0 && i < c->img[d];
            off = off * c->img[d] + i;
        }
        if (inside) acc += w * img[off];
    }
    return acc;
}

/* y[n, oc, o] = b[oc] + sum over ci of its group and kernel points kk of
 * w[oc, ci, kk] * mask * sample(x[n, ci], o * s - pad + kk * dil + offset). */
static void dc_direct(const dc_case *c, const double *x, const double *w, const double *off, const double *b,
                      const double *m, double *y)
{
    int64_t K = 1, O = 1, P = 1, od[3];
    for (int i = 0; i < c->nsp; i++) K *= c->k[i], od[i] = dc_out(c, i), O *= od[i], P *= c->img[i];
    const int64_t cg = c->C / c->group, ocg = c->OC / c->group, cog = c->C / c->og;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t oc = 0; oc < c->OC; oc++)
            for (int64_t o = 0; o < O; o++) {
                int64_t oc3[3], r = o;
                for (int d = c->nsp - 1; d >= 0; d--) oc3[d] = r % od[d], r /= od[d];
                double acc = c->bias ? b[oc] : 0;
                const int64_t grp = oc / ocg;
                for (int64_t cl = 0; cl < cg; cl++) {
                    const int64_t ci = grp * cg + cl, g = ci / cog;
                    for (int64_t kk = 0; kk < K; kk++) {
                        int64_t kc[3], q = kk;
                        for (int d = c->nsp - 1; d >= 0; d--) kc[d] = q % c->k[d], q /= c->k[d];
                        double pos[3];
                        for (int d = 0; d < c->nsp; d++)
                            pos[d] = (double)(oc3[d] * c->str[d] - c->pb[d] + kc[d] * c->dil[d]) +
                                     off[((n * c->og + g) * K * c->nsp + kk * c->nsp + d) * O + o];
                        double v = sample(c, x + (n * c->C + ci) * P, pos);
                        if (c->mask) v *= m[((n * c->og + g) * K + kk) * O + o];
                        acc += w[(oc * cg + cl) * K + kk] * v;
                    }
                }
                y[(n * c->OC + oc) * O + o] = acc;
            }
}

/* Runs case c in dtype dt (FLOAT or DOUBLE); zero_off: all offsets 0. */
static void check_deform(const dc_case *c, int dt, int zero_off, double tol)
{
    int64_t K = 1, O = 1, P = 1;
    for (int i = 0; i < c->nsp; i++) K *= c->k[i], O *= dc_out(c, i), P *= c->img[i];
    const int64_t nx = c->N * c->C * P, nw = c->OC * (c->C / c->group) * K, no = c->N * c->og * K * c->nsp * O;
    const int64_t nm = c->N * c->og * K * O, ny = c->N * c->OC * O;
    unsigned seed = (unsigned)(nx + 7 * nw + c->nsp);
    float *fx = randn(nx, &seed), *fw = randn(nw, &seed), *fo = randn(no, &seed), *fb = randn(c->OC, &seed);
    float *fm = randn(nm, &seed);
    for (int64_t i = 0; i < no; i++) fo[i] = zero_off ? 0 : 2.5f * fo[i]; /* reaching beyond the borders */
    double *dx = malloc((size_t)nx * 8), *dw = malloc((size_t)nw * 8), *dof = malloc((size_t)no * 8);
    double *db = malloc((size_t)c->OC * 8), *dm = malloc((size_t)nm * 8), *want = malloc((size_t)ny * 8);
    for (int64_t i = 0; i < nx; i++) dx[i] = fx[i];
    for (int64_t i = 0; i < nw; i++) dw[i] = fw[i];
    for (int64_t i = 0; i < no; i++) dof[i] = fo[i];
    for (int64_t i = 0; i < c->OC; i++) db[i] = fb[i];
    for (int64_t i = 0; i < nm; i++) dm[i] = fm[i];
    dc_direct(c, dx, dw, dof, db, dm, want);
    int dbl = dt == BRAID_DTYPE_DOUBLE;
    tnode t;
    bd_tensor in[5], out[1];
    bd_err e = {0};
    int64_t pads[6];
    for (int i = 0; i < c->nsp; i++) pads[i] = c->pb[i], pads[c->nsp + i] = c->pe[i];
    tnode_init(&t, BD_OP_DeformConv, 19, c->mask ? 5 : c->bias ? 4 : 3, 1);
    attr_ints(&t, "strides", c->nsp, c->str);
    attr_ints(&t, "dilations", c->nsp, c->dil);
    attr_ints(&t, "pads", 2 * c->nsp, pads);
    attr_ints(&t, "kernel_shape", c->nsp, c->k);
    attr_int(&t, "group", c->group);
    attr_int(&t, "offset_group", c->og);
    int64_t xd[5] = {c->N, c->C}, wd[5] = {c->OC, c->C / c->group}, odm[5] = {c->N, c->og * K * c->nsp};
    int64_t md[5] = {c->N, c->og * K};
    for (int i = 0; i < c->nsp; i++) xd[2 + i] = c->img[i], wd[2 + i] = c->k[i], odm[2 + i] = md[2 + i] = dc_out(c, i);
    in[0] = tensor(dt, 2 + c->nsp, xd, dbl ? (void *)dx : fx);
    in[1] = tensor(dt, 2 + c->nsp, wd, dbl ? (void *)dw : fw);
    in[2] = tensor(dt, 2 + c->nsp, odm, dbl ? (void *)dof : fo);
    in[3] = c->bias ? tensor(dt, 1, (int64_t[]){c->OC}, dbl ? (void *)db : fb)
                    : (bd_tensor){.dtype = BRAID_DTYPE_UNDEFINED, .rank = -1};
    in[4] = tensor(dt, 2 + c->nsp, md, dbl ? (void *)dm : fm);
    CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
    double worst = 0;
    for (int64_t i = 0; i < ny; i++)
        worst = fmax(worst, fabs((dbl ? ((double *)out[0].data)[i] : ((float *)out[0].data)[i]) - want[i]));
    if (!(worst <= tol)) fprintf(stderr, "DeformConv %d-D %s: error %g\n", c->nsp, dbl ? "double" : "float", worst);
    CHECK(worst <= tol);
    done(&t.n, out);
    free(fx), free(fw), free(fo), free(fb), free(fm), free(dx), free(dw), free(dof), free(db), free(dm), free(want);
}

int main(void)
{
    bd_err e = {0};
    tnode t;
    bd_tensor in[5], out[1];

    /* Col2Im against the scatter: 2-D plain, with pads/strides/dilations, 1-D, 3-D. */
    {
        c2i_case a = {2, {5, 5}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, {0, 0}};
        c2i_case b = {2, {6, 7}, {3, 2}, {2, 3}, {2, 1}, {1, 2}, {2, 0}};
        c2i_case c1 = {1, {9}, {3}, {2}, {2}, {1}, {2}};
        c2i_case c3 = {3, {3, 4, 5}, {2, 2, 3}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1}, {1, 0, 1}};
        check_col2im(&a, 1, 2);
        check_col2im(&b, 2, 3);
        check_col2im(&c1, 2, 1);
        check_col2im(&c3, 1, 2);
    }

    /* int32 sums wrap as the type's arithmetic does; bool ORs; float16 rounds once. */
    {
        c2i_case a = {1, {3}, {2}, {1}, {1}, {0}, {0}};
        int64_t imgv[1], blkv[1];
        int32_t xi[4] = {2147483647, 5, 1, 7}; /* (C K = 2, L = 2): pixel 1 gets xi[1] + xi[2] */
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){1, 2, 2}, xi);
        in[1] = ints1(imgv, 1);
        in[2] = ints1(blkv, 1);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        /* pixel 0: x[k0, l0]; pixel 1: x[k0, l1] + x[k1, l0]; pixel 2: x[k1, l1] */
        CHECK_EQ_INT(((int32_t *)out[0].data)[0], 2147483647);
        CHECK_EQ_INT(((int32_t *)out[0].data)[1], 6);
        CHECK_EQ_INT(((int32_t *)out[0].data)[2], 7);
        done(&t.n, out);
        int32_t xw[4] = {0, 2147483647, 10, 0};
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){1, 2, 2}, xw);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(((int32_t *)out[0].data)[1], (int32_t)(uint32_t)(2147483647u + 10u));
        done(&t.n, out);
        uint8_t xb[4] = {0, 1, 0, 0};
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_BOOL, 3, (int64_t[]){1, 2, 2}, xb);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        CHECK_EQ_INT(((uint8_t *)out[0].data)[0], 0);
        CHECK_EQ_INT(((uint8_t *)out[0].data)[1], 1);
        CHECK_EQ_INT(((uint8_t *)out[0].data)[2], 0);
        done(&t.n, out);
        uint16_t xh[4] = {bd_float_to_half(1.5f), bd_float_to_half(2048.0f), bd_float_to_half(1.0f), 0};
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_FLOAT16, 3, (int64_t[]){1, 2, 2}, xh);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        /* 2048 + 1 = 2049 in float rounds once to float16's 2048 (ties to even) */
        CHECK_NEAR(bd_half_to_float(((uint16_t *)out[0].data)[1]), 2048.0f, 0, 0);
        done(&t.n, out);
        /* a column count that does not match the blocks; an indivisible channel dim */
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){1, 2, 3}, xi);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "(N, C * 2, 2)");
        done(&t.n, out);
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_INT32, 3, (int64_t[]){1, 3, 2}, xi);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        done(&t.n, out);
        c2i_node(&t, &a, imgv, blkv);
        in[0] = tensor(BRAID_DTYPE_STRING, 3, (int64_t[]){1, 2, 2}, xi);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
        done(&t.n, out);
    }

    /* DeformConv against the direct sum. */
    {
        dc_case c2 = {2, 2, 4, 6, 2, 2, {5, 6}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {0, 1}, 1, 1};
        check_deform(&c2, F32, 0, 1e-4);
        check_deform(&c2, BRAID_DTYPE_DOUBLE, 0, 1e-12);
        dc_case c1 = {1, 1, 2, 3, 1, 1, {7}, {3}, {1}, {2}, {2}, {1}, 0, 1};
        check_deform(&c1, BRAID_DTYPE_DOUBLE, 0, 1e-12);
        dc_case c3 = {3, 1, 2, 2, 1, 2, {3, 4, 4}, {2, 2, 2}, {1, 1, 2}, {1, 1, 1}, {0, 1, 0}, {1, 0, 1}, 1, 0};
        check_deform(&c3, BRAID_DTYPE_DOUBLE, 0, 1e-12);
        /* zero offsets and no mask: a plain convolution (the same direct sum samples whole pixels) */
        dc_case cz = {2, 1, 3, 2, 1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0, 0};
        check_deform(&cz, F32, 1, 1e-5);
        /* the same bits on 1 and 3 threads */
        g_threads = 3;
        check_deform(&c2, F32, 0, 1e-4);
        g_threads = 1;
    }

    /* DeformConv in float16: x = 1 everywhere, w = 0.5, no offsets, 1 x 1
     * kernel: y = 0.5 C + b, exact. */
    {
        uint16_t x[8], w[2], off[8], b[1];
        for (int i = 0; i < 8; i++) x[i] = bd_float_to_half(1.0f), off[i] = 0;
        w[0] = w[1] = bd_float_to_half(0.5f);
        b[0] = bd_float_to_half(-0.25f);
        tnode_init(&t, BD_OP_DeformConv, 22, 4, 1);
        in[0] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 2, 2, 2}, x);
        in[1] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 2, 1, 1}, w);
        in[2] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 2, 2, 2}, off);
        in[3] = tensor(BRAID_DTYPE_FLOAT16, 1, (int64_t[]){1}, b);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_OK);
        for (int i = 0; i < 4; i++) CHECK_NEAR(bd_half_to_float(((uint16_t *)out[0].data)[i]), 0.75f, 0, 0);
        done(&t.n, out);
        /* errors: offset's channels, kernel_shape against W, a 4-D DeformConv */
        tnode_init(&t, BD_OP_DeformConv, 22, 3, 1);
        in[2] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 3, 2, 2}, off);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "offset must be");
        done(&t.n, out);
        int64_t k2[2] = {2, 2};
        tnode_init(&t, BD_OP_DeformConv, 22, 3, 1);
        attr_ints(&t, "kernel_shape", 2, k2);
        in[2] = tensor(BRAID_DTYPE_FLOAT16, 4, (int64_t[]){1, 2, 2, 2}, off);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_SHAPE);
        CHECK_CONTAINS(e.msg, "kernel_shape[0] is 2 but W has 1");
        done(&t.n, out);
        tnode_init(&t, BD_OP_DeformConv, 22, 3, 1);
        in[0] = tensor(BRAID_DTYPE_FLOAT16, 6, (int64_t[]){1, 2, 1, 1, 1, 1}, x);
        CHECK_EQ_INT(run(&t.n, in, out, &e), BRAID_ERR_UNSUPPORTED);
        CHECK_CONTAINS(e.msg, "4 spatial dims");
        done(&t.n, out);
    }
    return check_done();
}
