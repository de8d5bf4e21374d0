/* image.h: the image op family (ImageDecoder, opset 20): a 1-D uint8 tensor
 * of encoded bytes decoded into uint8 pixels (H, W, 3) in RGB or BGR order,
 * or (H, W, 1) grayscale. H and W come from the bytes: the input is a shape
 * input (SI(0) in ops.def), so its bytes are known when the node is planned
 * (a constant, or read back at the end of the stage that made it) and
 * inference reads the dims from the header. The decoders are shared by the
 * backends (src/util/imgcodec.h). */
#ifndef BD_OPS_IMAGE_H
#define BD_OPS_IMAGE_H

#include "ops.h"
#include "util/imgcodec.h"

typedef struct bd_image_params {
    int format; /* bd_img_format, from the attribute pixel_format */
} bd_image_params;

#endif /* BD_OPS_IMAGE_H */
