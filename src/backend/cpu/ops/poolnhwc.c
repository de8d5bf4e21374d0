/* poolnhwc.c: MaxPool, AveragePool and the global pools on NHWC data (see
 * convnhwc.h). */
#include <float.h>

#include "convnhwc.h"
#include "ops/pool.h"

braid_status bd_pool_nhwc(const bd_kernel *k)
{
    const bd_node *node = k->node;
    const bd_pool_params *p = node->params;
    const float *x = k->in[0].data;
    float *y = k->out[0].data;
    int64_t N = k->in[0].dims[0], H = k->in[0].dims[1], W = k->in[0].dims[2], C = k->in[0].dims[3];
    int max = node->op == BD_OP_MaxPool || node->op == BD_OP_GlobalMaxPool;
    if (node->op == BD_OP_GlobalAveragePool || node->op == BD_OP_GlobalMaxPool) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                float acc = max ? -FLT_MAX : 0.0f;
                for (int64_t i = 0; i < H * W; i++) {
                    float v = x[(n * H * W + i) * C + c];
                    acc = max ? (v > acc ? v : acc) : acc + v;
                }
                y[n * C + c] = max ? acc : acc / (float)(H * W);
            }
        return BRAID_OK;
    }
    bd_pool_geom g;
    braid_status st = bd_pool_geometry(node, &k->in[0], &g, k->err);
    if (st) return st;
    int64_t OH = g.out[0], OW = g.out[1];
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t c = 0; c < C; c++) {
                    float acc = max ? -FLT_MAX : 0.0f;
                    int64_t cnt = 0, any = 0;
                    for (int64_t kh = 0; kh < p->kernel[0]; kh++) {
                        int64_t ih = oh * p->strides[0] - g.pad_begin[0] + kh * p->dilations[0];
                        for (int64_t kw = 0; kw < p->kernel[1]; kw++) {
                            int64_t iw = ow * p->strides[1] - g.pad_begin[1] + kw * p->dilations[1];
                            int in_pad = ih >= -g.pad_begin[0] && ih < H + g.pad_end[0] && iw >= -g.pad_begin[1] &&
                                         iw < W + g.pad_end[1];
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                                cnt += in_pad && p->count_include_pad;
                                continue;
                            }
                            float v = x[((n * H + ih) * W + iw) * C + c];
                            if (max) acc = !any || v > acc ? v : acc;
                            else acc += v;
                            any = 1, cnt++;
                        }
                    }
                    y[((n * OH + oh) * OW + ow) * C + c] = max ? acc : acc / (float)(cnt ? cnt : 1);
                }
    return BRAID_OK;
}
