/* convnhwc.c: 2-D Conv on NHWC data (see convnhwc.h). */
#include "convnhwc.h"
#include "ops/conv.h"

braid_status bd_conv_nhwc(const bd_kernel *k, const bd_conv_geom *g)
{
    const bd_conv_params *p = k->node->params;
    const float *x = k->in[0].data, *w = k->in[1].data;
    const float *b = k->n_in > 2 && k->in[2].data ? k->in[2].data : NULL;
    const float *z = p->res && k->n_in > 3 ? k->in[3].data : NULL;
    float *y = k->out[0].data;
    int64_t C = g->c_in, M = g->c_out, H = g->x[0], W = g->x[1], OH = g->y[0], OW = g->y[1];
    int64_t cg = C / g->group, mg = M / g->group;
    /* element (n, c, h, w) of X */
    int64_t sc = p->x_nchw ? H * W : 1, sh = p->x_nchw ? W : W * C, sw = p->x_nchw ? 1 : C;
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t m = 0; m < M; m++) {
                    int64_t c0 = m / mg * cg;
                    float acc = 0.0f;
                    for (int64_t kh = 0; kh < g->k[0]; kh++) {
                        int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
                        if (ih < 0 || ih >= H) continue;
                        for (int64_t kw = 0; kw < g->k[1]; kw++) {
                            int64_t iw = ow * g->s[1] - g->pb[1] + kw * g->d[1];
                            if (iw < 0 || iw >= W) continue;
                            const float *xp = x + n * C * H * W + ih * sh + iw * sw;
                            const float *wp = w + ((kh * g->k[1] + kw) * cg) * M + m;
                            for (int64_t c = 0; c < cg; c++) acc += xp[(c0 + c) * sc] * wp[c * M];
                        }
                    }
                    int64_t o = ((n * OH + oh) * OW + ow) * M + m;
                    y[o] = bd_conv_epilogue(p->act, p->act_a, p->act_b, p->res, acc, b ? b[m] : 0.0f, z ? z[o] : 0.0f);
                }
    return BRAID_OK;
}
