/* rnn.h: the parsed attributes of the rnn op family (LSTM, GRU, RNN and
 * com.microsoft DynamicQuantizeLSTM), and what the CPU kernels and the CUDA
 * gate kernels share: the activation functions, the gate formulas of one
 * hidden unit, the index of a (time, batch) entry in each tensor, and the
 * dynamic uint8 quantization of DynamicQuantizeLSTM.
 *
 * The recurrence of one direction, as both backends run it:
 *   P = X W^T + (Wb + Rb)            one GEMM over every time step
 *   for each step s: S = H R^T        one GEMM (GRU without
 *                                     linear_before_reset: two)
 *                    H, C = cell(P[t], S, H, C) for every active entry
 * where entry b is at time t = s (forward) or len_b - 1 - s (reverse) and is
 * active while s < len_b (len_b = sequence_lens[b], else seq_length). Y is 0
 * past each entry's length; Y_h and Y_c are the state after its last step
 * (0 for an entry of length 0, as onnxruntime gives). Gate inputs are
 * clipped to [-clip, clip] before their activation (onnxruntime's reading
 * of `clip`: the cell state is not clipped before h()). */
#ifndef BD_RNN_H
#define BD_RNN_H

#include <math.h>
#include <stdint.h>

#include "util/common.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { BD_RNN_LSTM = 0, BD_RNN_GRU = 1, BD_RNN_SIMPLE = 2 };
enum { BD_RNN_FORWARD = 0, BD_RNN_REVERSE = 1, BD_RNN_BIDIRECTIONAL = 2 };

/* Activation functions (the names of the `activations` attribute). */
enum {
    BD_RNN_RELU = 0, BD_RNN_TANH, BD_RNN_SIGMOID, BD_RNN_AFFINE, BD_RNN_LEAKYRELU, BD_RNN_THRESHOLDEDRELU,
    BD_RNN_SCALEDTANH, BD_RNN_HARDSIGMOID, BD_RNN_ELU, BD_RNN_SOFTSIGN, BD_RNN_SOFTPLUS, BD_RNN_N_ACTS
};

typedef struct bd_rnn_fn {
    int kind; /* BD_RNN_RELU... */
    float alpha, beta;
} bd_rnn_fn;

/* One direction's cell: what the gate formulas read. Passed by value to
 * CUDA kernels. */
typedef struct bd_rnn_cell {
    bd_rnn_fn f[3];          /* LSTM f, g, h; GRU f, g; RNN f */
    float clip;              /* > 0: gate inputs are clipped to [-clip, clip]; 0: no clip */
    int input_forget;        /* LSTM: f = 1 - i */
    int linear_before_reset; /* GRU */
} bd_rnn_cell;

/* An internal attribute the load-time split of a bidirectional node writes
 * (src/passes/rnn_rewrite.c): the node runs only that direction (0 forward,
 * 1 reverse) of the bidirectional node's weights, states and activations,
 * and its outputs have one direction. */
#define BD_RNN_PART_ATTR "braid.direction_part"
/* An internal attribute the same rewrite writes when it replaced a constant
 * R (dirs, G*H, H) by its transpose (dirs, H, G*H): the layout in which the
 * state times R is a GEMV over contiguous rows, made once at load. */
#define BD_RNN_RT_ATTR "braid.r_transposed"

typedef struct bd_rnn_params {
    int cell;        /* BD_RNN_LSTM, BD_RNN_GRU, BD_RNN_SIMPLE */
    int quantized;   /* DynamicQuantizeLSTM: W (dirs, input, 4H) and R (dirs, H, 4H) int8/uint8 */
    int gates;       /* 4, 3, 1 */
    int64_t hidden;  /* hidden_size; 0 when absent (taken from R) */
    int direction;   /* BD_RNN_FORWARD... */
    int dirs;        /* directions in the weights: 2 for bidirectional */
    int part;        /* -1: every direction; 0 or 1: only that one (BD_RNN_PART_ATTR) */
    int r_transposed;/* R is (dirs, H, G*H) (BD_RNN_RT_ATTR; DynamicQuantizeLSTM's always is) */
    /* Set by the load-time rewrite for a constant float-type R: R^T packed
     * as below, (dirs, panels, H, BD_RNN_PANEL) floats, owned by the graph;
     * valid only while the node's R input is pack_of's data. Else NULL. */
    const float *pack;
    const void *pack_of;
    int layout;      /* 0: X (seq, batch, input); 1: (batch, seq, input) */
    bd_rnn_cell dir[2];
} bd_rnn_params;

/* The directions a node computes: [*first, *first + *count). */
static inline void bd_rnn_dirs(const bd_rnn_params *p, int *first, int *count)
{
    *first = p->part >= 0 ? p->part : 0;
    *count = p->part >= 0 ? 1 : p->dirs;
}

/* The hidden size: the attribute, else R's dims. */
static inline int64_t bd_rnn_hidden(const bd_rnn_params *p, const bd_tensor *r)
{
    return p->hidden ? p->hidden : r->rank == 3 ? r->dims[p->r_transposed ? 1 : 2] : 0;
}

/* Whether weight direction d runs backwards in time. */
static inline BD_HOST_DEVICE int bd_rnn_reverse(int direction, int d)
{
    return direction == BD_RNN_REVERSE || (direction == BD_RNN_BIDIRECTIONAL && d == 1);
}

/* ---- where things are ------------------------------------------------------ */

/* The row of X (and of the projection P) that holds time t of batch entry b. */
static inline BD_HOST_DEVICE int64_t bd_rnn_xrow(int layout, int64_t t, int64_t b, int64_t seq, int64_t batch)
{
    return layout ? b * seq + t : t * batch + b;
}

/* The offset of Y[t, d, b, 0]: layout 0 (seq, dirs, batch, H), 1 (batch, seq, dirs, H). */
static inline BD_HOST_DEVICE int64_t bd_rnn_yoff(int layout, int64_t t, int64_t d, int64_t b, int64_t seq,
                                                 int64_t dirs, int64_t batch, int64_t H)
{
    return (layout ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * H;
}

/* The offset of state[d, b, 0] (Y_h, Y_c, initial_h, initial_c): layout 0
 * (dirs, batch, H), 1 (batch, dirs, H). */
static inline BD_HOST_DEVICE int64_t bd_rnn_hoff(int layout, int64_t d, int64_t b, int64_t dirs, int64_t batch,
                                                 int64_t H)
{
    return (layout ? b * dirs + d : d * batch + b) * H;
}

/* The time step entry b (of length len) is at, at step s of a pass; -1 when
 * the entry has ended. A reverse pass walks each entry from its own last step. */
static inline BD_HOST_DEVICE int64_t bd_rnn_time(int reverse, int64_t s, int64_t len)
{
    return s >= len ? -1 : reverse ? len - 1 - s : s;
}

/* ---- R packed for the CPU's step product ------------------------------------- */

/* R^T of one direction (H rows, G*H columns) as panels of BD_RNN_PANEL
 * columns, each H x BD_RNN_PANEL contiguous, the last padded with zeros: a
 * step's product then reads R once and in order (cpu/ops/panel.h). */
#define BD_RNN_PANEL 16
static inline int64_t bd_rnn_panels(int64_t GH) { return (GH + BD_RNN_PANEL - 1) / BD_RNN_PANEL; }

/* Packs one direction, R^T(k, n) = src[k * sk + n * sn]. */
static inline void bd_rnn_pack(const float *src, int64_t sk, int64_t sn, int64_t H, int64_t GH, float *out)
{
    for (int64_t p = 0; p < bd_rnn_panels(GH); p++)
        for (int64_t k = 0; k < H; k++)
            for (int64_t j = 0; j < BD_RNN_PANEL; j++) {
                int64_t n = p * BD_RNN_PANEL + j;
                out[(p * H + k) * BD_RNN_PANEL + j] = n < GH ? src[k * sk + n * sn] : 0.0f;
            }
}

/* ---- activations and gates, in float and in double --------------------------- */

/* Always inlined: in a loop with the activations known, the switch folds
 * away and the loop vectorizes. */
#if defined(__CUDACC__)
#define BD_RNN_INLINE static __forceinline__ __host__ __device__
#elif defined(__GNUC__)
#define BD_RNN_INLINE static inline __attribute__((always_inline))
#else
#define BD_RNN_INLINE static inline
#endif

#define BD_RNN_FORMULAS(T, S, EXP, TANH, LOG1P, FABS)                                                 \
    BD_RNN_INLINE T bd_rnn_act##S(bd_rnn_fn f, T x)                                  \
    {                                                                                                \
        T a = (T)f.alpha, b = (T)f.beta, y;                                                          \
        switch (f.kind) {                                                                            \
        case BD_RNN_RELU: return x > 0 ? x : (T)0;                                                   \
        case BD_RNN_TANH: return TANH(x);                                                            \
        case BD_RNN_SIGMOID: return (T)1 / ((T)1 + EXP(-x));                                         \
        case BD_RNN_AFFINE: return a * x + b;                                                        \
        case BD_RNN_LEAKYRELU: return x >= 0 ? x : a * x;                                            \
        case BD_RNN_THRESHOLDEDRELU: return x > a ? x : (T)0;                                        \
        case BD_RNN_SCALEDTANH: return a * TANH(b * x);                                              \
        case BD_RNN_HARDSIGMOID:                                                                     \
            y = a * x + b;                                                                           \
            return y < 0 ? (T)0 : y > 1 ? (T)1 : y;                                                  \
        case BD_RNN_ELU: return x >= 0 ? x : a * (EXP(x) - (T)1);                                    \
        case BD_RNN_SOFTSIGN: return x / ((T)1 + FABS(x));                                           \
        case BD_RNN_SOFTPLUS: return x > (T)30 ? x : LOG1P(EXP(x));                                  \
        default: return x;                                                                           \
        }                                                                                            \
    }                                                                                                \
    /* x clipped to [-clip, clip] (clip 0: unchanged; NaN stays NaN). */                             \
    BD_RNN_INLINE T bd_rnn_clip##S(float clip, T x)                                   \
    {                                                                                                \
        T c = (T)clip;                                                                               \
        return clip > 0 ? (x > c ? c : x < -c ? -c : x) : x;                                         \
    }                                                                                                \
    /* One LSTM unit: gi, go, gf, gc are the gate sums (X W^T + H R^T + Wb + Rb)                     \
     * of i, o, f, c; pi, po, pf the peepholes; cp the previous cell state. */                       \
    BD_RNN_INLINE void bd_lstm_unit##S(const bd_rnn_cell *k, T gi, T go, T gf, T gc,  \
                                                      T pi, T po, T pf, T cp, T *c, T *h)             \
    {                                                                                                \
        T i = bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, gi + pi * cp));                       \
        T f = k->input_forget ? (T)1 - i : bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, gf + pf * cp)); \
        T g = bd_rnn_act##S(k->f[1], bd_rnn_clip##S(k->clip, gc));                                   \
        T cn = f * cp + i * g;                                                                       \
        T o = bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, go + po * cn));                        \
        *c = cn;                                                                                     \
        *h = o * bd_rnn_act##S(k->f[2], cn);                                                         \
    }                                                                                                \
    /* GRU's reset gate r from its sum. */                                                           \
    BD_RNN_INLINE T bd_gru_reset##S(const bd_rnn_cell *k, T gr)                      \
    {                                                                                                \
        return bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, gr));                                  \
    }                                                                                                \
    /* GRU's new state from the update gate's sum gz, the candidate's sum gh                         \
     * (r already applied) and the previous state hp. */                                             \
    BD_RNN_INLINE T bd_gru_unit##S(const bd_rnn_cell *k, T gz, T gh, T hp)           \
    {                                                                                                \
        T z = bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, gz));                                   \
        T hh = bd_rnn_act##S(k->f[1], bd_rnn_clip##S(k->clip, gh));                                  \
        return ((T)1 - z) * hh + z * hp;                                                             \
    }                                                                                                \
    /* A plain RNN unit from its sum. */                                                             \
    BD_RNN_INLINE T bd_rnn_unit##S(const bd_rnn_cell *k, T g)                        \
    {                                                                                                \
        return bd_rnn_act##S(k->f[0], bd_rnn_clip##S(k->clip, g));                                   \
    }

/* The float exp and tanh of the formulas: libm's (CUDA's on the device)
 * unless the includer names others first (the CPU kernels use vmath.h's
 * vectorizable ones, within 4 ulp). */
#ifndef BD_RNN_EXPF
#define BD_RNN_EXPF expf
#endif
#ifndef BD_RNN_TANHF
#define BD_RNN_TANHF tanhf
#endif
BD_RNN_FORMULAS(float, f, BD_RNN_EXPF, BD_RNN_TANHF, log1pf, fabsf)
BD_RNN_FORMULAS(double, d, exp, tanh, log1p, fabs)
#undef BD_RNN_FORMULAS

/* ---- DynamicQuantizeLSTM: onnxruntime's dynamic uint8 quantization ------------ */

/* The scale and zero point of a value range: the range widened to hold 0,
 * scale (hi - lo) / 255 (1 when hi == lo), zero point -lo / scale clamped to
 * [0, 255] and rounded half to even. */
static inline BD_HOST_DEVICE void bd_rnn_qparams(float lo, float hi, float *scale, int *zp)
{
    lo = lo < 0 ? lo : 0;
    hi = hi > 0 ? hi : 0;
    float s = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float z = 0.0f - lo / s;
    z = z < 0 ? 0 : z > 255 ? 255 : z;
    *scale = s;
    *zp = (int)rintf(z);
}

/* x quantized: round half to even of x / scale, plus zp, saturated to [0, 255]. */
static inline BD_HOST_DEVICE int bd_rnn_quantize(float x, float scale, int zp)
{
    float q = rintf(x / scale) + (float)zp;
    return q < 0 ? 0 : q > 255 ? 255 : (int)q;
}

#ifdef __cplusplus
}
#endif
#endif /* BD_RNN_H */
