/* image.cu: the image op family (ImageDecoder) on CUDA. Decoding compressed
 * images is serial host work (entropy decoding) done by the system codecs,
 * so the launcher copies the encoded bytes to the host (or uses their
 * plan-time copy), decodes them with the shared host decoder
 * (src/util/imgcodec.c, the CPU kernel's code) and copies the pixels to the
 * output: two synchronizations of the node's stream. Refused inside a CUDA
 * graph capture, which cannot synchronize. */
#include <stdlib.h>

#include "common.cuh"

extern "C" {
#include "ops/image.h"
}

extern "C" braid_status bd_cuda_image(const bd_cuda_kernel *k)
{
    braid_status st = BRAID_OK;
    const bd_image_params *p = (const bd_image_params *)k->node->params;
    const bd_tensor *x = &k->in[0];
    const bd_tensor *y = &k->out[0];
    const uint8_t *bytes = NULL;
    uint8_t *hin = NULL, *hout = NULL;
    size_t nin = x->rank == 1 && x->dims[0] > 0 ? (size_t)x->dims[0] : 0, nout = 0;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "image parameters were not parsed");
    if (k->node->op != BD_OP_ImageDecoder)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the image family", k->node->op_type);
    if (y->rank != 3 || y->dims[2] != bd_img_channels(p->format))
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ImageDecoder's output was not planned as (H, W, %d)",
                       bd_img_channels(p->format));
    if (cudaStreamIsCapturing(k->stream, &cap) == cudaSuccess && cap != cudaStreamCaptureStatusNone)
        return BD_FAIL(k->err, BRAID_ERR_UNSUPPORTED, "ImageDecoder decodes on the host: it cannot run in a CUDA graph");
    nout = (size_t)(y->dims[0] * y->dims[1] * y->dims[2]);
    if (k->host_in && k->host_in[0].data) {
        bytes = (const uint8_t *)k->host_in[0].data; /* known when the plan was made */
    } else if (nin) {
        hin = (uint8_t *)bd_malloc(nin);
        BD_CHECK_ALLOC(k->err, hin);
        BD_CUDA_TRY(k->err, cudaMemcpyAsync(hin, x->data, nin, cudaMemcpyDefault, k->stream));
        BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream));
        bytes = hin;
    }
    hout = (uint8_t *)bd_malloc(nout ? nout : 1);
    BD_CHECK_ALLOC(k->err, hout);
    BD_TRY(bd_img_decode(bytes, nin, p->format, y->dims[0], y->dims[1], hout, k->err));
    if (nout) {
        BD_CUDA_TRY(k->err, cudaMemcpyAsync(y->data, hout, nout, cudaMemcpyDefault, k->stream));
        BD_CUDA_TRY(k->err, cudaStreamSynchronize(k->stream)); /* before the host buffer goes */
    }
fail:
    bd_free(hin);
    bd_free(hout);
    return st;
}

extern "C" void bd_cuda_image_free(const bd_node *n, void *cache)
{
    (void)n, (void)cache;
}
