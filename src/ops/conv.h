/* conv.h: the conv family's parsed attributes and its geometry helper, shared
 * by shape inference (src/ops/conv.c) and the kernels (backend cpu/cuda). */
#ifndef BD_OPS_CONV_H
#define BD_OPS_CONV_H

#include "ops.h"
#include "ops/activation.h"

#define BD_CONV_MAX_SPATIAL 3 /* 1-D, 2-D and 3-D convolutions */

typedef enum bd_conv_pad {
    BD_PAD_NOTSET = 0,
    BD_PAD_SAME_UPPER = 1,
    BD_PAD_SAME_LOWER = 2,
    BD_PAD_VALID = 3
} bd_conv_pad;

/* An activation fused into a Conv by src/passes/fuse_conv.c (a Relu, LeakyRelu,
 * Clip, HardSigmoid, HardSwish or Sigmoid that was the Conv's only consumer,
 * or a Sigmoid and the Mul of the Conv's output by it), applied after the
 * bias, with the formulas of ops/activation.h. */
typedef enum bd_conv_act {
    BD_ACT_NONE = 0,
    BD_ACT_RELU = 1,
    BD_ACT_LEAKY = 2,    /* act_a: alpha */
    BD_ACT_CLIP = 3,     /* act_a: min, act_b: max */
    BD_ACT_HSIGMOID = 4, /* act_a: alpha, act_b: beta */
    BD_ACT_HSWISH = 5,
    BD_ACT_SIGMOID = 6,
    BD_ACT_SILU = 7      /* x sigmoid(x) */
} bd_conv_act;

static inline BD_HOST_DEVICE float bd_conv_act_apply(int act, float a, float b, float v)
{
    switch (act) {
    case BD_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case BD_ACT_LEAKY: return v >= 0.0f ? v : v * a;
    case BD_ACT_CLIP: return v < a ? a : (v > b ? b : v);
    case BD_ACT_HSIGMOID: return bd_act_hsig_f(v, a, b);
    case BD_ACT_HSWISH: return bd_act_hswish_f(v);
    case BD_ACT_SIGMOID: return bd_act_sigmoid_f(v);
    case BD_ACT_SILU: return v * bd_act_sigmoid_f(v);
    default: return v;
    }
}

/* Where an Add folded into a Conv (bd_inst_fuse_add in src/passes/fuse_conv.c)
 * adds its other input, the residual: a fused node has a 4th input. */
typedef enum bd_conv_res {
    BD_RES_NONE = 0,
    BD_RES_PRE = 1, /* y = act(conv + bias + z): Conv -> Add [-> activation] */
    BD_RES_POST = 2 /* y = act(conv + bias) + z: a Conv with a fused activation -> Add */
} bd_conv_res;

/* The Conv epilogue of one element: bias, residual and activation in the
 * order the fusion fixed. v is the convolution's sum, z the residual (read
 * only when res is set). Both backends use it. */
static inline BD_HOST_DEVICE float bd_conv_epilogue(int act, float a, float b, int res, float v, float bias,
                                                    float z)
{
    v += bias;
    if (res == BD_RES_PRE) v += z;
    v = bd_conv_act_apply(act, a, b, v);
    if (res == BD_RES_POST) v += z;
    return v;
}

/* Conv and ConvTranspose attributes as written in the model. A count of 0
 * means the attribute is absent (defaults apply once the rank is known). */
typedef struct bd_conv_params {
    int64_t group;
    bd_conv_pad auto_pad;
    int n_kernel, n_strides, n_dilations, n_pads, n_out_pad, n_out_shape;
    int64_t kernel[BD_MAX_RANK];
    int64_t strides[BD_MAX_RANK];
    int64_t dilations[BD_MAX_RANK];
    int64_t pads[2 * BD_MAX_RANK];      /* (begin_0, begin_1, ..., end_0, end_1, ...) */
    int64_t out_pad[BD_MAX_RANK];       /* ConvTranspose: output_padding */
    int64_t out_shape[BD_MAX_RANK + 2]; /* ConvTranspose: output_shape (spatial, or N, C, spatial) */
    int act;                            /* bd_conv_act, set by fusion (Conv only) */
    float act_a, act_b;
    int res;                            /* bd_conv_res, set by plan-time fusion: input 3 is added */
    /* Set by the NHWC pass (src/passes/nhwc.c), 2-D Conv only. NHWC: Y
     * and the residual are (N, H, W, M), W is (KH, KW, C/group, M) and X is
     * (N, H, W, C), or (N, C, H, W) when x_nchw is set. With w_panel (one
     * group only), W's values keep those dims but lie in panels of w_panel
     * output channels (the last one narrower): panel q holds channels
     * [q w_panel, q w_panel + pw) as (KH, KW, C, pw) rows, so a kernel's
     * block of channels reads W in one sequential run (bd_conv_panel_at). */
    int layout, x_nchw;
    int64_t w_panel;
    /* Set by the layout pass for a constant W of an NHWC Conv the Winograd
     * kernel may take (one group, 3x3, stride 1, dilation 1): W transformed
     * as bd_conv_wino_weights writes it, owned by the plan; valid only while
     * the node's W input is w_wino_of's data. Else NULL. */
    const float *w_wino;
    const void *w_wino_of;
} bd_conv_params;

/* The panel width the layout pass gives an NHWC Conv of M output channels
 * (one group): M cut into the fewest panels of at most 64 channels, each a
 * whole number of 16-channel vectors and as even as that allows (96: 48 +
 * 48, 160: 64 + 64 + 32); 0 (W stays (KH, KW, C, M)) when one panel holds M. */
static inline int64_t bd_conv_panel_width(int64_t m)
{
    int64_t v = (m + 15) / 16, np = (v + 3) / 4;
    return np <= 1 ? 0 : 16 * ((v + np - 1) / np);
}

/* Where W's value for output channel m at row r (r = (kh KW + kw) C + c, of
 * kk_c = KH KW C rows) lies in panels of width pw of M channels. */
static inline int64_t bd_conv_panel_at(int64_t pw, int64_t m_total, int64_t kk_c, int64_t r, int64_t m)
{
    int64_t q = m / pw, w = m_total - q * pw < pw ? m_total - q * pw : pw;
    return q * pw * kk_c + r * w + (m - q * pw);
}

/* Winograd F(2x2, 3x3) weights, as the NHWC kernel (backend/cpu/ops/
 * convwino.c) reads them: G g G^T (4x4) of each 3x3 kernel g, stored as
 * [16 positions][blocks of up to BD_WINO_NV vectors of 16 output channels
 * (bd_conv_wino_block)][C][block width], M padded with zeros to a multiple
 * of 16: bd_conv_wino_floats(C, M) floats. W is one group's (M, C, 3, 3)
 * (form 0), or (3, 3, C, M) (form 1), or that in panels of pw output
 * channels (form 1, pw > 0; bd_conv_panel_at). */
#define BD_WINO_NV 3
#define BD_WINO_MIN_C 8  /* input channels (per group) from which the products outweigh the transforms */
#define BD_WINO_MIN_M 16 /* output channels likewise (NHWC; NCHW takes 8, its GEMM tile) */
static inline int64_t bd_conv_wino_floats(int64_t c, int64_t m) { return 16 * c * ((m + 15) / 16 * 16); }
/* How many blocks bd_conv_wino_block cuts nmv vectors into. */
static inline int64_t bd_conv_wino_blocks(int64_t nmv) { return nmv > 0 ? (nmv + BD_WINO_NV - 1) / BD_WINO_NV : 1; }
/* Block mb of the nmv vectors of output channels: vectors [*v0, *v0 + nv)
 * with nv returned; the fewest blocks of at most BD_WINO_NV vectors, as
 * even as they can be (4 vectors: 2 + 2, not 3 + 1, whose one-vector block
 * ran at half the speed). */
static inline int64_t bd_conv_wino_block(int64_t nmv, int64_t mb, int64_t *v0)
{
    int64_t nb = bd_conv_wino_blocks(nmv), base = nmv / nb, extra = nmv % nb;
    *v0 = mb * base + (mb < extra ? mb : extra);
    return base + (mb < extra);
}
void bd_conv_wino_weights(const float *w, int form, int64_t pw, int64_t c, int64_t m, float *out);
/* u = G g G^T for one 3x3 kernel g (row-major), G's rows (1, 0, 0),
 * (1/2, 1/2, 1/2), (1/2, -1/2, 1/2), (0, 0, 1): the 16 values of its
 * Winograd F(2x2, 3x3) positions, row-major (both CPU layouts use it). */
static inline void bd_conv_wino_kernel(const float *g, float *u)
{
    float t[4][3];
    for (int q = 0; q < 3; q++) { /* G g */
        t[0][q] = g[q];
        t[1][q] = 0.5f * (g[q] + g[3 + q] + g[6 + q]);
        t[2][q] = 0.5f * (g[q] - g[3 + q] + g[6 + q]);
        t[3][q] = g[6 + q];
    }
    for (int i = 0; i < 4; i++) { /* (G g) G^T */
        u[i * 4 + 0] = t[i][0];
        u[i * 4 + 1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
        u[i * 4 + 2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
        u[i * 4 + 3] = t[i][2];
    }
}
/* Whether the Winograd kernel runs an NHWC Conv (3x3, stride 1, one group)
 * whose weights were transformed when the plan was made: C input and M
 * output channels, N OH OW outputs per channel. Measured on the Xeon
 * (2 threads, against the implicit GEMM): 48->64 on 28x28 0.56x the time,
 * 128->128 on 10x10 0.68x, 384->384 on 13x13 0.95x; 32->32 on 16x16
 * (2.4M multiply-adds) 1.4x, so small ones stay on the GEMM. */
static inline int bd_conv_wino_planned_pays(int64_t c, int64_t m, int64_t outputs)
{
    return c >= BD_WINO_MIN_C && m >= BD_WINO_MIN_M && outputs >= 64 && 9 * c * m * outputs >= ((int64_t)1 << 23);
}

/* The resolved geometry of one Conv or ConvTranspose call. Spatial arrays
 * have nsp entries. For Conv, x is the image and y the grid of kernel
 * positions; for ConvTranspose it is the other way round: y is the (padded)
 * image that the columns of x are scattered into. Either way, image position
 * = grid position * stride - pad_begin + tap * dilation. -1 marks a dim that
 * is not known yet. */
typedef struct bd_conv_geom {
    int nsp;
    int64_t n, c_in, c_out, group;
    int64_t x[BD_CONV_MAX_SPATIAL]; /* input spatial dims */
    int64_t y[BD_CONV_MAX_SPATIAL]; /* output spatial dims */
    int64_t k[BD_CONV_MAX_SPATIAL], s[BD_CONV_MAX_SPATIAL], d[BD_CONV_MAX_SPATIAL];
    int64_t pb[BD_CONV_MAX_SPATIAL], pe[BD_CONV_MAX_SPATIAL]; /* pads, begin and end */
} bd_conv_geom;

/* Checks X (N, C, D...), W and the optional B of node n against its
 * attributes and resolves the geometry (auto_pad, output_shape included).
 * Fails with DTYPE, SHAPE or UNSUPPORTED naming the numbers that disagree. */
braid_status bd_conv_geometry(const bd_node *n, const bd_tensor *x, const bd_tensor *w,
                              const bd_tensor *b, bd_conv_geom *g, bd_err *e);

#endif /* BD_OPS_CONV_H */
