/* cumulative.h: the parsed attributes of the cumulative op family (CumSum,
 * CumProd) and the index walk both backends' kernels share. */
#ifndef BD_CUMULATIVE_H
#define BD_CUMULATIVE_H

#include "ops.h"

typedef struct bd_cum_params {
    int exclusive; /* element j takes the values before it, not up to it */
    int reverse;   /* the scan runs from the end of the axis */
    int prod;      /* CumProd */
} bd_cum_params;

/* The position along the axis (of n) of the s-th step of the scan. */
static inline BD_HOST_DEVICE int64_t bd_cum_pos(int64_t s, int64_t n, int reverse)
{
    return reverse ? n - 1 - s : s;
}

/* Reads the axis input (a scalar, or one value in a 1-D tensor; int32 or
 * int64, known when the plan is made) and normalizes it against rank. */
braid_status bd_cum_axis(const bd_tensor *axis, int rank, int *out, bd_err *e);

#endif /* BD_CUMULATIVE_H */
