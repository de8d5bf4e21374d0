/* reduce.h: the parsed attributes of the reduce op family (n->params), the
 * resolution of the reduced axes, and the element formulas that the reduce
 * kernels of every backend share: what each op folds, how a folded value
 * becomes the output, and ArgMax/ArgMin's choice between two candidates. */
#ifndef BD_REDUCE_H
#define BD_REDUCE_H

#include <math.h>

#include "ops.h"

/* What an op of the family computes. */
typedef enum bd_red_kind {
    BD_RED_SUM,
    BD_RED_MEAN,
    BD_RED_PROD,
    BD_RED_MAX,
    BD_RED_MIN,
    BD_RED_L1,
    BD_RED_L2,
    BD_RED_LOGSUM,
    BD_RED_LOGSUMEXP,
    BD_RED_SUMSQ,
    BD_RED_ARGMAX,
    BD_RED_ARGMIN
} bd_red_kind;

/* How the values of one output are folded (the kernels' accumulation loops):
 * a sum of x, a product, a max, a min, a sum of |x|, of x*x, or of
 * exp(x - shift) with shift the output's own maximum (LogSumExp, so that
 * large values do not overflow). */
typedef enum bd_red_fold {
    BD_RF_SUM,
    BD_RF_PROD,
    BD_RF_MAX,
    BD_RF_MIN,
    BD_RF_ABS,
    BD_RF_SQ,
    BD_RF_EXP,
    BD_RF_COUNT
} bd_red_fold;

typedef struct bd_reduce_params {
    int kind;              /* bd_red_kind */
    int keepdims;          /* default 1 */
    int noop_empty_axes;   /* noop_with_empty_axes: empty axes leave the input as it is */
    int axes_input;        /* axes come from input 1 (ReduceSum opset >= 13, the rest >= 18) */
    int n_axes;            /* attribute axes (older opsets); ArgMax/ArgMin: 1 */
    int64_t axes[BD_MAX_RANK];
    int select_last_index; /* ArgMax/ArgMin: ties go to the last index */
} bd_reduce_params;

/* Which dims of the data input (rank in[0].rank) node n reduces: bit d of
 * *mask. *identity = 1 when nothing is reduced because the axes are empty and
 * noop_with_empty_axes is set (the output is then a copy of the input). The
 * axes input, when the node takes one, must have data. */
braid_status bd_reduce_axes(const bd_node *n, const bd_tensor *in, int n_in, unsigned *mask,
                            int *identity, bd_err *e);

static inline BD_HOST_DEVICE int bd_red_fold_of(int kind)
{
    switch (kind) {
    case BD_RED_PROD: return BD_RF_PROD;
    case BD_RED_MAX: return BD_RF_MAX;
    case BD_RED_MIN: return BD_RF_MIN;
    case BD_RED_L1: return BD_RF_ABS;
    case BD_RED_L2: case BD_RED_SUMSQ: return BD_RF_SQ;
    case BD_RED_LOGSUMEXP: return BD_RF_EXP;
    default: return BD_RF_SUM; /* Sum, Mean, LogSum */
    }
}

/* Max and min that keep a NaN once seen (numpy's maximum.reduce, onnx's
 * reference): a NaN anywhere in the reduced values is the answer. */
#define BD_RED_MAX2(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define BD_RED_MIN2(a, b) ((((b) < (a)) | ((b) != (b))) ? (b) : (a))

/* The shift of LogSumExp: the output's maximum, or 0 when that maximum is
 * not finite (all values -inf gives log(0) = -inf, a +inf gives +inf, and a
 * NaN stays NaN, where inf - inf would make NaN of the first two). */
static inline BD_HOST_DEVICE double bd_red_lse_shift(double mx) { return isfinite(mx) ? mx : 0.0; }

/* A floating-point output from its folded value acc (a double) over count
 * values; shift is LogSumExp's (bd_red_lse_shift). Mean of no values is NaN,
 * LogSum and LogSumExp of none are log(0) = -inf. */
static inline BD_HOST_DEVICE double bd_red_finish(int kind, double acc, double shift, int64_t count)
{
    switch (kind) {
    case BD_RED_MEAN: return acc / (double)count;
    case BD_RED_L2: return sqrt(acc);
    case BD_RED_LOGSUM: return log(acc);
    case BD_RED_LOGSUMEXP: return shift + log(acc);
    default: return acc;
    }
}

/* A double to an integer in [lo, hi]: NaN is 0, values past the ends the
 * ends (the integer L2, LogSum and LogSumExp, computed in double). */
static inline BD_HOST_DEVICE double bd_red_clamp_int(double v, double lo, double hi)
{
    return v != v ? 0.0 : v < lo ? lo : v > hi ? hi : v;
}

/* ArgMax (is_min 0) or ArgMin (1): whether candidate v at a later index
 * replaces the best so far. As numpy's argmax/argmin (onnx's reference), a
 * NaN wins over any number and the first NaN over later ones; with
 * select_last_index (last) ties and NaNs go to the later index. A macro, so
 * that it serves every element type. */
#define BD_ARG_TAKES(v, best, is_min, last)                                                        \
    ((last) ? ((v) != (v) || ((best) == (best) && ((is_min) ? (v) <= (best) : (v) >= (best))))      \
            : ((best) == (best) && ((v) != (v) || ((is_min) ? (v) < (best) : (v) > (best)))))

#endif /* BD_REDUCE_H */
