/* imgcodec.h: decoding of encoded images (the bytes of a BMP, PNM, PNG,
 * JPEG, TIFF, WebP or JPEG 2000 file) into 8-bit pixels, for the
 * ImageDecoder op on every backend. BMP and PNM are decoded here; the other
 * formats by their system libraries, loaded with dlopen at first use so
 * that libbraid links none of them (a missing one is refused with
 * BRAID_ERR_UNSUPPORTED naming it). The format is read from the magic bytes.
 * Bad or truncated bytes fail with BRAID_ERR_INVALID_MODEL and what the
 * decoder said; nothing here exits or aborts. */
#ifndef BD_IMGCODEC_H
#define BD_IMGCODEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The pixel layouts ImageDecoder writes (its attribute pixel_format). */
typedef enum bd_img_format { BD_IMG_RGB = 0, BD_IMG_BGR = 1, BD_IMG_GRAY = 2 } bd_img_format;

/* The most pixels braid decodes from one image (BRAID_ERR_LIMIT beyond). */
#define BD_IMG_MAX_PIXELS ((int64_t)1 << 28)

/* Channels of each pixel for fmt: 3, or 1 for grayscale. */
static inline int bd_img_channels(int fmt) { return fmt == BD_IMG_GRAY ? 1 : 3; }

/* The image's height and width, from its header (libraries read only the
 * header). Fails on an unknown format, a header that is not valid, or a
 * codec library that is not installed. */
braid_status bd_img_probe(const uint8_t *bytes, size_t n, int64_t *h, int64_t *w, bd_err *e);

/* Decodes the whole image into out: h * w * bd_img_channels(fmt) bytes, row
 * by row; h and w must be what bd_img_probe said (else BRAID_ERR_SHAPE).
 * Grayscale is computed from RGB as PIL's convert("L") does:
 * (R*19595 + G*38470 + B*7471 + 32768) >> 16. */
braid_status bd_img_decode(const uint8_t *bytes, size_t n, int fmt, int64_t h, int64_t w, uint8_t *out,
                           bd_err *e);

/* The name of the format of these bytes ("PNG", "JPEG"...), or NULL when
 * they start like no format braid knows. */
const char *bd_img_format_name(const uint8_t *bytes, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* BD_IMGCODEC_H */
