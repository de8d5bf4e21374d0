/* image.c: attribute parsing, shape inference and cost of the image op
 * family (ImageDecoder). Inference reads the image's header from the
 * encoded bytes, which are known at plan time (see image.h). */
#include "image.h"

#include <string.h>

braid_status bd_image_parse(bd_node *n, bd_err *e)
{
    braid_status st = BRAID_OK;
    const char *fmt = NULL;
    bd_image_params *p = bd_calloc(1, sizeof *p);
    BD_CHECK_ALLOC(e, p);
    BD_TRY(bd_attr_string(n, "pixel_format", "RGB", &fmt, e));
    if (strcmp(fmt, "RGB") == 0) p->format = BD_IMG_RGB;
    else if (strcmp(fmt, "BGR") == 0) p->format = BD_IMG_BGR;
    else if (strcmp(fmt, "Grayscale") == 0) p->format = BD_IMG_GRAY;
    else st = BD_FAIL(e, BRAID_ERR_INVALID_MODEL, "attribute 'pixel_format' is '%s', not RGB, BGR or Grayscale", fmt);
fail:
    return bd_params_done(n, p, st);
}

braid_status bd_image_infer(const bd_node *n, const bd_tensor *in, bd_tensor *out, bd_err *e)
{
    const bd_image_params *p = n->params;
    int64_t h, w;
    if (n->op != BD_OP_ImageDecoder) return BD_FAIL(e, BRAID_ERR_INTERNAL, "op %s is not in the image family", n->op_type);
    if (in[0].dtype != BRAID_DTYPE_UINT8)
        return BD_FAIL(e, BRAID_ERR_DTYPE, "input 'encoded_stream' must be uint8, not %s", bd_dtype_name(in[0].dtype));
    if (in[0].rank != 1)
        return BD_FAIL(e, BRAID_ERR_SHAPE, "input 'encoded_stream' must be 1-D, not rank %d", in[0].rank);
    /* the caller waits for the bytes (a later stage) when this is refused */
    if (!in[0].data && in[0].dims[0] != 0)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "the decoded image's size is known only from the encoded bytes");
    BD_TRY_RET(bd_img_probe(in[0].data, (size_t)in[0].dims[0], &h, &w, e));
    out[0].dtype = BRAID_DTYPE_UINT8;
    out[0].rank = 3;
    out[0].dims[0] = h;
    out[0].dims[1] = w;
    out[0].dims[2] = bd_img_channels(p->format);
    return BRAID_OK;
}

double bd_image_cost(const bd_node *n, const bd_tensor *in, const bd_tensor *out)
{
    (void)n, (void)in;
    /* entropy decoding and color conversion: some tens of operations a pixel */
    return out[0].rank == 3 ? 30.0 * (double)out[0].dims[0] * (double)out[0].dims[1] : 0;
}
