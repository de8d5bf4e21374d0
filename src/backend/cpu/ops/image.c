/* image.c: the CPU kernel of the image op family (ImageDecoder): the shared
 * host decoder (src/util/imgcodec.c) writes the pixels straight into the
 * output, whose dims inference read from the same bytes. */
#include "backend/cpu/cpu_ops.h"
#include "ops/image.h"

braid_status bd_cpu_image(const bd_kernel *k)
{
    const bd_image_params *p = k->node->params;
    const bd_tensor *x = &k->in[0];
    bd_tensor *y = &k->out[0];
    if (!p) return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "image parameters were not parsed");
    if (k->node->op != BD_OP_ImageDecoder)
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "op %s is not in the image family", k->node->op_type);
    if (y->rank != 3 || y->dims[2] != bd_img_channels(p->format))
        return BD_FAIL(k->err, BRAID_ERR_INTERNAL, "ImageDecoder's output was not planned as (H, W, %d)",
                       bd_img_channels(p->format));
    return bd_img_decode(x->data, (size_t)x->dims[0], p->format, y->dims[0], y->dims[1], y->data, k->err);
}
