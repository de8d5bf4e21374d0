/* shape.cu: CUDA kernels of the shape op family, mirroring
 * src/backend/cpu/ops/shape.c. All but Shape, Size and BitCast copy the
 * input's bytes unchanged (device to device, on the node's stream, unless in
 * and out share them); Shape writes the dims and Size the count, passed to a
 * kernel by value; BitCast of the sub-byte types re-extends each byte. */
#include "common.cuh"

extern "C" {
#include "ops/shape.h"
}

struct shape_dims {
    int64_t v[BD_MAX_RANK];
};

__global__ void k_shape(int64_t *o, int64_t len, shape_dims d)
{
    if (blockIdx.x == 0 && (int64_t)threadIdx.x < len) o[threadIdx.x] = d.v[threadIdx.x];
}

__global__ void k_bitcast_subbyte(const uint8_t *__restrict__ x, uint8_t *__restrict__ y, int64_t n, int bits, int to)
{
    BD_CU_LOOP(i, n) y[i] = bd_bitcast_subbyte(x[i], bits, to);
}

/* Copies in's bytes to out unless they already share them. */
static braid_status copy_data(const bd_cuda_kernel *k, const bd_tensor *in, bd_tensor *out)
{
    size_t nbytes;
    braid_status st = bd_tensor_nbytes(out, &nbytes, k->err);
    if (st) return st;
    if (nbytes == 0 || out->data == in->data) return BRAID_OK;
    if (!in->data || !out->data)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "a tensor of %zu bytes has no data", nbytes);
    BD_CU_CHECK_CALL(k, cudaMemcpyAsync(out->data, in->data, nbytes, cudaMemcpyDefault, k->stream));
    return BRAID_OK;
}

/* Writes 1 (true) into every element of a Dropout mask of any dtype. */
static braid_status fill_ones(const bd_cuda_kernel *k, bd_tensor *t)
{
    unsigned char one[8] = {0};
    size_t es = bd_dtype_size(t->dtype);
    switch (t->dtype) {
    case BRAID_DTYPE_FLOAT: { float v = 1.0f; memcpy(one, &v, 4); break; }
    case BRAID_DTYPE_DOUBLE: { double v = 1.0; memcpy(one, &v, 8); break; }
    case BRAID_DTYPE_FLOAT16: { uint16_t v = 0x3c00; memcpy(one, &v, 2); break; }
    default: { /* integers and bool: 1 in the low byte (little-endian) */
        uint64_t v = 1;
        memcpy(one, &v, 8);
        break;
    }
    }
    return bd_cu_fill(k, t->data, bd_numel(t), es, one);
}

extern "C" braid_status bd_cuda_shape(const bd_cuda_kernel *k)
{
    const bd_node *n = k->node;
    braid_status st;
    switch (n->op) {
    case BD_OP_Shape: {
        int64_t start, len;
        shape_dims d = {};
        bd_shape_slice((const bd_shape_params *)n->params, k->in[0].rank, &start, &len);
        if (k->out[0].dims[0] != len)
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "Shape output has %lld values, expected %lld",
                           (long long)k->out[0].dims[0], (long long)len);
        if (len == 0) return BRAID_OK;
        for (int64_t i = 0; i < len; i++) d.v[i] = k->in[0].dims[start + i];
        /* A kernel, not a copy from host memory: no staging, capturable in a graph. */
        k_shape<<<1, 32, 0, k->stream>>>((int64_t *)k->out[0].data, len, d);
        BD_CU_CHECK_LAUNCH(k, "the Shape kernel");
        return BRAID_OK;
    }
    case BD_OP_Size: {
        shape_dims d = {};
        d.v[0] = bd_numel(&k->in[0]);
        k_shape<<<1, 32, 0, k->stream>>>((int64_t *)k->out[0].data, 1, d);
        BD_CU_CHECK_LAUNCH(k, "the Size kernel");
        return BRAID_OK;
    }
    case BD_OP_BitCast: {
        int bits = bd_dtype_bits(k->in[0].dtype);
        int64_t cnt = bd_numel(&k->in[0]);
        if (bits >= 8) return copy_data(k, &k->in[0], &k->out[0]);
        if (cnt == 0) return BRAID_OK;
        k_bitcast_subbyte<<<bd_cu_grid(cnt), BD_CU_BLOCK, 0, k->stream>>>(
            (const uint8_t *)k->in[0].data, (uint8_t *)k->out[0].data, cnt, bits, k->out[0].dtype);
        BD_CU_CHECK_LAUNCH(k, "the BitCast kernel");
        return BRAID_OK;
    }
    case BD_OP_Dropout: {
        bd_tensor hv[3];
        bd_cu_host_view(k, hv, 3);
        /* The CPU reads training_mode at run time and refuses a true one; here
         * only a value known at plan time can be checked. */
        if (k->n_in > 2 && hv[2].dtype != BRAID_DTYPE_UNDEFINED && !hv[2].data && bd_numel(&hv[2]) > 0)
            return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED,
                           "op Dropout with a training_mode known only at run time is not implemented on CUDA");
        if ((st = bd_dropout_check(n, hv, k->n_in < 3 ? k->n_in : 3, k->err))) return st;
        if (k->n_out > 1 && k->out[1].data && (st = fill_ones(k, &k->out[1]))) return st;
        return copy_data(k, &k->in[0], &k->out[0]);
    }
    case BD_OP_Reshape:
    case BD_OP_Flatten:
    case BD_OP_Squeeze:
    case BD_OP_Unsqueeze:
    case BD_OP_Identity:
        if (bd_numel(&k->in[0]) != bd_numel(&k->out[0]))
            return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "input and output sizes differ");
        return copy_data(k, &k->in[0], &k->out[0]);
    default:
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the shape family", n->op_type);
    }
}

extern "C" void bd_cuda_shape_free(const bd_node *n, void *cache)
{
    (void)n;
    (void)cache;
}
