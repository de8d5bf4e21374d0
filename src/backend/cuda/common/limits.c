/* limits.c: cuDNN's size limits, checked before any cuDNN call, and the
 * workspace sizes of cuDNN and cuBLAS (limits.h). Plain C, no CUDA: the CPU
 * tests run it. */
#include "backend/cuda/common/limits.h"

#include <stdio.h>
#include <string.h>

#include "ops/conv.h"

static void dims_str(int rank, const int64_t *dims, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && o + 1 < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

braid_status bd_cudnn_check_tensor(const char *what, int rank, const int64_t *dims, bd_err *e)
{
    char ds[200];
    int64_t count = 1;
    int over = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] > BD_CUDNN_MAX_ELEMS) {
            dims_str(rank, dims, ds, sizeof ds);
            return BD_FAIL(e, BRAID_ERR_LIMIT, "%s (%s) has a dim of %lld, more than the %lld (2^31 - 1) cuDNN "
                           "takes", what, ds, (long long)dims[i], BD_CUDNN_MAX_ELEMS);
        }
        /* packed strides are products of inner dims: the count bounds them all */
        if (dims[i] > 0 && count > BD_CUDNN_MAX_ELEMS / dims[i]) over = 1;
        count = over ? count : count * dims[i];
    }
    if (over || count > BD_CUDNN_MAX_ELEMS) {
        dims_str(rank, dims, ds, sizeof ds);
        return BD_FAIL(e, BRAID_ERR_LIMIT, "%s (%s) has more than the %lld (2^31 - 1) elements cuDNN takes in one "
                       "tensor", what, ds, BD_CUDNN_MAX_ELEMS);
    }
    return BRAID_OK;
}

braid_status bd_cudnn_conv_limits(const bd_node *n, const bd_tensor *x, const bd_tensor *w, const bd_tensor *y,
                                  bd_err *e)
{
    braid_status st;
    bd_conv_geom g;
    int tr = n->op == BD_OP_ConvTranspose;
    if ((st = bd_conv_geometry(n, x, w, NULL, &g, e))) return st;
    int64_t xd[2 + BD_CONV_MAX_SPATIAL] = {g.n, g.c_in}, yd[2 + BD_CONV_MAX_SPATIAL] = {g.n, g.c_out};
    int sym = 1, r = 2 + g.nsp;
    for (int i = 0; i < g.nsp; i++) {
        sym &= g.pb[i] == g.pe[i];
        const int64_t v[5] = {g.k[i], g.s[i], g.d[i], g.pb[i] < 0 ? -g.pb[i] : g.pb[i], g.pe[i] < 0 ? -g.pe[i] : g.pe[i]};
        for (int j = 0; j < 5; j++)
            if (v[j] > BD_CUDNN_MAX_ELEMS)
                return BD_FAIL(e, BRAID_ERR_LIMIT, "spatial dim %d has a kernel, stride, dilation or pad of %lld, "
                               "more than the %lld (2^31 - 1) cuDNN takes", i, (long long)v[j], BD_CUDNN_MAX_ELEMS);
        xd[2 + i] = g.x[i];
        yd[2 + i] = g.y[i];
    }
    if ((st = bd_cudnn_check_tensor("the weights", w->rank, w->dims, e))) return st;
    if (!tr) {
        for (int i = 0; i < g.nsp && !sym; i++) xd[2 + i] = g.x[i] + g.pb[i] + g.pe[i];
        if ((st = bd_cudnn_check_tensor(sym ? "the input" : "the zero-padded input", r, xd, e))) return st;
        return bd_cudnn_check_tensor("the output", y ? y->rank : r, y ? y->dims : yd, e);
    }
    if ((st = bd_cudnn_check_tensor("the input", r, xd, e))) return st;
    if ((st = bd_cudnn_check_tensor("the output", y ? y->rank : r, y ? y->dims : yd, e))) return st;
    /* The uncropped output that asymmetric or negative pads, or an
     * output_padding cuDNN does not infer, make (the kernel's setup decides;
     * checked either way). */
    for (int i = 0; i < g.nsp; i++) yd[2 + i] = g.s[i] * (g.x[i] - 1) + (g.k[i] - 1) * g.d[i] + 1;
    return bd_cudnn_check_tensor("the uncropped output", r, yd, e);
}

size_t bd_cublas_workspace_bytes(int cc_major) { return (size_t)(cc_major >= 9 ? 32 : 4) << 20; }
