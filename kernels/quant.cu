/* quant.cu: CUDA kernels of the quant op family, mirroring
 * src/backend/cpu/ops/quant.c with the formulas of ops/quant.h:
 * QuantizeLinear and DequantizeLinear (one thread per element, the scale
 * and zero point read through the per-tensor / per-axis / blocked view) and
 * DynamicQuantizeLinear (block partial min/max in the workspace, one block
 * that derives the scale and zero point on the device, then the quantize
 * pass reading them there: no host round trip). A scale that is zero at run
 * time is caught on the CPU only; on CUDA the plan-time check covers
 * constant scales. */
#include "common.cuh"

extern "C" {
#include "ops/quant.h"
}

struct qd_args {
    bd_qview v;
    const void *x, *s, *z; /* z NULL: zero point 0 */
    void *y;
    int xdt, sdt, zdt, ydt, prec, has_zp, sat;
    float lo, hi;
};

__device__ __forceinline__ float load_x(int dt, const void *p, int64_t i)
{
    switch (dt) {
    case BRAID_DTYPE_FLOAT: return ((const float *)p)[i];
    case BRAID_DTYPE_FLOAT16: return bd_half_to_float_hd(((const uint16_t *)p)[i]);
    default: return bd_bf16_to_float(((const uint16_t *)p)[i]);
    }
}

/* Stores q (x / scale, rounded to the precision) as the output dtype. */
__device__ __forceinline__ void store_q(const qd_args &a, int64_t i, float q, float z)
{
    float v = bd_q_to_int(q, z, a.lo, a.hi);
    switch (a.ydt) {
    case BRAID_DTYPE_UINT8: case BRAID_DTYPE_UINT4: case BRAID_DTYPE_UINT2:
        ((uint8_t *)a.y)[i] = (uint8_t)(int32_t)v;
        break;
    case BRAID_DTYPE_INT8: case BRAID_DTYPE_INT4: case BRAID_DTYPE_INT2: ((int8_t *)a.y)[i] = (int8_t)(int32_t)v; break;
    case BRAID_DTYPE_UINT16: ((uint16_t *)a.y)[i] = (uint16_t)(int32_t)v; break;
    case BRAID_DTYPE_INT16: ((int16_t *)a.y)[i] = (int16_t)(int32_t)v; break;
    default: {
        bd_mf_format f = bd_minifloat_format(a.ydt, NULL);
        ((uint8_t *)a.y)[i] = bd_q_to_minifloat(&f, q, z, a.has_zp, a.sat);
    }
    }
}

static __global__ void k_quantize(qd_args a, int64_t n)
{
    int half = a.prec == BRAID_DTYPE_FLOAT16 || a.prec == BRAID_DTYPE_BFLOAT16;
    BD_CU_LOOP(i, n)
    {
        int64_t idx = bd_qview_index(&a.v, i);
        float s = bd_q_scale_at(a.sdt, a.s, idx), z = a.z ? bd_q_value_at(a.zdt, a.z, idx) : 0.0f;
        if (a.xdt == BRAID_DTYPE_INT32) { /* int32 / float in double, as the CPU */
            double q = (double)((const int32_t *)a.x)[i] / (double)bd_q_round_to(a.prec, s);
            if (half) q = bd_q_round_to(a.prec, (float)q);
            if (a.ydt == BRAID_DTYPE_FLOAT || bd_dtype_is_narrow_float(a.ydt)) store_q(a, i, (float)q, z);
            else store_q(a, i, (float)bd_q_to_int_d(q, z, a.lo, a.hi), 0.0f);
            continue;
        }
        float x = load_x(a.xdt, a.x, i);
        float q = half ? bd_q_round_to(a.prec, bd_q_round_to(a.prec, x) / bd_q_round_to(a.prec, s)) : x / s;
        store_q(a, i, q, z);
    }
}

static __global__ void k_dequantize(qd_args a, int64_t n)
{
    BD_CU_LOOP(i, n)
    {
        int64_t idx = bd_qview_index(&a.v, i);
        float s = bd_q_scale_at(a.sdt, a.s, idx), z = a.z ? bd_q_value_at(a.zdt, a.z, idx) : 0.0f;
        float x = bd_q_value_at(a.xdt, a.x, i), y;
        if (a.xdt == BRAID_DTYPE_INT32) y = (float)(((double)x - (double)z) * (double)s);
        else y = __fmul_rn(__fsub_rn(x, z), s);
        if (a.ydt == BRAID_DTYPE_FLOAT) ((float *)a.y)[i] = y;
        else if (a.ydt == BRAID_DTYPE_FLOAT16) ((uint16_t *)a.y)[i] = bd_float_to_half(y);
        else ((uint16_t *)a.y)[i] = bd_float_to_bf16(y);
    }
}

static braid_status quant_dequant(const bd_cuda_kernel *k, int q)
{
    const bd_quant_params *p = (const bd_quant_params *)k->node->params;
    const bd_tensor *x = &k->in[0], *s = &k->in[1];
    const bd_tensor *z = k->n_in > 2 && k->in[2].dtype != BRAID_DTYPE_UNDEFINED ? &k->in[2] : NULL;
    qd_args a = {};
    braid_status st = bd_qview_make(x, s, z, p->axis, p->block_size, q ? "y_scale" : "x_scale",
                                    q ? "y_zero_point" : "x_zero_point", &a.v, k->err);
    if (st) return st;
    int64_t n = bd_numel(x);
    if (n <= 0) return BRAID_OK;
    a.x = x->data, a.s = s->data, a.z = z ? z->data : NULL, a.y = k->out[0].data;
    a.xdt = x->dtype, a.sdt = s->dtype, a.zdt = z ? z->dtype : 0, a.ydt = k->out[0].dtype;
    a.prec = p->precision ? p->precision : s->dtype;
    a.has_zp = z != NULL, a.sat = p->saturate;
    bd_q_int_range(a.ydt, &a.lo, &a.hi);
    if (q) k_quantize<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, n);
    else k_dequantize<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>(a, n);
    BD_CU_CHECK_LAUNCH(k, q ? "the QuantizeLinear kernel" : "the DequantizeLinear kernel");
    return BRAID_OK;
}

/* ---- DynamicQuantizeLinear ----------------------------------------------------------------- */

#define DQL_BLOCKS 256

/* part[2b], part[2b + 1]: block b's min and max (from 0; NaN skipped). */
static __global__ void k_dql_minmax(const float *__restrict__ x, int64_t n, float *__restrict__ part)
{
    __shared__ float sh[32];
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)blockDim.x * gridDim.x) {
        float v = x[i];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    mx = bd_cu_block_max(mx, 0.0f, sh);
    mn = -bd_cu_block_max(-mn, 0.0f, sh);
    if (threadIdx.x == 0) part[2 * blockIdx.x] = mn, part[2 * blockIdx.x + 1] = mx;
}

/* One thread: the scale and zero point, as on the CPU. */
static __global__ void k_dql_params(const float *__restrict__ part, int blocks, float *scale, uint8_t *zp_out,
                                    float *params)
{
    float mn = 0.0f, mx = 0.0f;
    for (int b = 0; b < blocks; b++) {
        mn = part[2 * b] < mn ? part[2 * b] : mn;
        mx = part[2 * b + 1] > mx ? part[2 * b + 1] : mx;
    }
    float s, zp;
    bd_q_dynamic_params(mn, mx, &s, &zp);
    params[0] = s, params[1] = zp;
    if (scale) *scale = s;
    if (zp_out) *zp_out = (uint8_t)zp;
}

static __global__ void k_dql_quantize(const float *__restrict__ x, uint8_t *__restrict__ y, int64_t n,
                                      const float *__restrict__ params)
{
    float s = params[0], z = params[1];
    BD_CU_LOOP(i, n) y[i] = (uint8_t)(int32_t)bd_q_to_int(__fdiv_rn(x[i], s), z, 0.0f, 255.0f);
}

static braid_status dynamic_quantize(const bd_cuda_kernel *k)
{
    int64_t n = bd_numel(&k->in[0]);
    int blocks = (int)BD_MIN((int64_t)DQL_BLOCKS, BD_MAX((int64_t)1, BD_CU_CEIL_DIV(n, (int64_t)BD_CU_BLOCK)));
    float *part = (float *)k->workspace, *params = part + 2 * DQL_BLOCKS;
    if (k->workspace_size < (2 * DQL_BLOCKS + 2) * sizeof(float))
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "the CUDA workspace is too small for DynamicQuantizeLinear");
    k_dql_minmax<<<blocks, BD_CU_BLOCK, 0, k->stream>>>((const float *)k->in[0].data, n, part);
    BD_CU_CHECK_LAUNCH(k, "DynamicQuantizeLinear's min/max");
    k_dql_params<<<1, 1, 0, k->stream>>>(part, blocks, k->n_out > 1 ? (float *)k->out[1].data : NULL,
                                         k->n_out > 2 ? (uint8_t *)k->out[2].data : NULL, params);
    BD_CU_CHECK_LAUNCH(k, "DynamicQuantizeLinear's parameters");
    if (n > 0) {
        k_dql_quantize<<<bd_cu_grid(n), BD_CU_BLOCK, 0, k->stream>>>((const float *)k->in[0].data,
                                                                     (uint8_t *)k->out[0].data, n, params);
        BD_CU_CHECK_LAUNCH(k, "DynamicQuantizeLinear's quantize pass");
    }
    return BRAID_OK;
}

extern "C" braid_status bd_cuda_quant(const bd_cuda_kernel *k)
{
    if (!k->node->params) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "attributes were not parsed");
    switch (k->node->op) {
    case BD_OP_QuantizeLinear: case BD_OP_MS_QuantizeLinear: return quant_dequant(k, 1);
    case BD_OP_DequantizeLinear: case BD_OP_MS_DequantizeLinear: return quant_dequant(k, 0);
    case BD_OP_DynamicQuantizeLinear: return dynamic_quantize(k);
    default: return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the quant family", k->node->op_type);
    }
}

extern "C" void bd_cuda_quant_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
