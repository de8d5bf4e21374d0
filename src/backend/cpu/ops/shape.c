/* shape.c: CPU kernels of the shape op family. All but Shape, Size and
 * BitCast copy the input's bytes unchanged (the shape lives in the tensor
 * descriptor); Shape writes dims, Size the element count, BitCast the bytes
 * (the sub-byte types, one per byte, re-extended to the target's sign). */
#include "backend/cpu/cpu_ops.h"
#include "ops/shape.h"

#include <string.h>

/* Copies in's bytes to out unless they already share them. */
static braid_status copy_data(const bd_kernel *k, const bd_tensor *in, bd_tensor *out)
{
    size_t nbytes;
    braid_status st = bd_tensor_nbytes(out, &nbytes, k->err);
    if (st) return st;
    if (nbytes == 0 || out->data == in->data) return BRAID_OK;
    if (!in->data || !out->data)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "a tensor of %zu bytes has no data", nbytes);
    memcpy(out->data, in->data, nbytes);
    return BRAID_OK;
}

/* Writes 1 (true) into every element of a Dropout mask of any dtype. */
static void fill_ones(bd_tensor *t)
{
    int64_t n = bd_numel(t);
    if (t->dtype == BRAID_DTYPE_BOOL || t->dtype == BRAID_DTYPE_UINT8 || t->dtype == BRAID_DTYPE_INT8) {
        memset(t->data, 1, (size_t)n);
    } else if (t->dtype == BRAID_DTYPE_FLOAT16) {
        for (int64_t i = 0; i < n; i++) ((uint16_t *)t->data)[i] = 0x3c00; /* 1.0 */
    } else {
        for (int64_t i = 0; i < n; i++) bd_set_f64(t, i, 1.0);
    }
}

braid_status bd_cpu_shape(const bd_kernel *k)
{
    const bd_node *n = k->node;
    braid_status st;
    switch (n->op) {
    case BD_OP_Shape: {
        int64_t start, len;
        bd_shape_slice(n->params, k->in[0].rank, &start, &len);
        if (k->out[0].dims[0] != len)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Shape output has %lld values, expected %lld",
                           (long long)k->out[0].dims[0], (long long)len);
        for (int64_t i = 0; i < len; i++) ((int64_t *)k->out[0].data)[i] = k->in[0].dims[start + i];
        return BRAID_OK;
    }
    case BD_OP_Size:
        *(int64_t *)k->out[0].data = bd_numel(&k->in[0]);
        return BRAID_OK;
    case BD_OP_BitCast: {
        int bits = bd_dtype_bits(k->in[0].dtype);
        if (bits >= 8) return copy_data(k, &k->in[0], &k->out[0]);
        int64_t cnt = bd_numel(&k->in[0]);
        const uint8_t *x = k->in[0].data;
        uint8_t *y = k->out[0].data;
        for (int64_t i = 0; i < cnt; i++) y[i] = bd_bitcast_subbyte(x[i], bits, k->out[0].dtype);
        return BRAID_OK;
    }
    case BD_OP_Dropout:
        if ((st = bd_dropout_check(n, k->in, k->n_in, k->err))) return st;
        if (k->n_out > 1 && k->out[1].data) fill_ones(&k->out[1]);
        return copy_data(k, &k->in[0], &k->out[0]);
    case BD_OP_Reshape:
    case BD_OP_Flatten:
    case BD_OP_Squeeze:
    case BD_OP_Unsqueeze:
    case BD_OP_Identity:
        if (bd_numel(&k->in[0]) != bd_numel(&k->out[0]))
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "input and output sizes differ");
        return copy_data(k, &k->in[0], &k->out[0]);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the shape family",
                       n->op_type);
    }
}
