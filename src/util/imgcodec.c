/* imgcodec.c: the image decoders behind ImageDecoder (see imgcodec.h). Each
 * format's decoder reads the dims (rgb NULL) or the whole image as 8-bit
 * RGB; bd_img_decode then writes the requested pixel format. BMP and PNM
 * are parsed here; PNG, JPEG, TIFF, WebP and JPEG 2000 go through their
 * system libraries, opened with dlopen once (under a mutex) and called
 * through the few functions declared below from their public documentation
 * (libjpeg's structs come from jpeglib.h when the build found it). */
#include "util/imgcodec.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef BRAID_HAVE_JPEGLIB
#include <jerror.h>
#include <jpeglib.h>
#endif

#define BAD BRAID_ERR_INVALID_MODEL

/* One decoder: dims into *h, *w; with rgb, the pixels (bd_malloc'ed, h*w*3). */
typedef braid_status (*dec_fn)(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e);

static braid_status check_dims(const char *fmt, int64_t h, int64_t w, bd_err *e)
{
    if (h <= 0 || w <= 0) return BD_FAIL(e, BAD, "the %s image has %lldx%lld pixels", fmt, (long long)w, (long long)h);
    if (h > BD_IMG_MAX_PIXELS / w)
        return BD_FAIL(e, BRAID_ERR_LIMIT, "the %s image has %lldx%lld pixels, more than braid decodes (%lld)", fmt,
                       (long long)w, (long long)h, (long long)BD_IMG_MAX_PIXELS);
    return BRAID_OK;
}

static braid_status alloc_rgb(int64_t h, int64_t w, uint8_t **rgb, bd_err *e)
{
    *rgb = bd_malloc((size_t)(h * w * 3));
    if (!*rgb) return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for a %lldx%lld image", (long long)w, (long long)h);
    return BRAID_OK;
}

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) { return le16(p) | le16(p + 2) << 16; }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* ---- BMP: uncompressed 1/4/8-bit palette, 16/24/32-bit, BI_BITFIELDS ---- */

/* A channel under a bit mask, scaled to 0..255 with rounding. */
static uint8_t mask_chan(uint32_t v, uint32_t mask)
{
    if (!mask) return 0;
    int sh = 0;
    while (!(mask >> sh & 1u)) sh++;
    uint32_t m = mask >> sh;
    uint64_t x = (v >> sh) & m;
    if (m == 255) return (uint8_t)x;
    return (uint8_t)((x * 255 + m / 2) / m);
}

static braid_status dec_bmp(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    if (n < 26) return BD_FAIL(e, BAD, "the BMP data is truncated (%zu bytes, no complete header)", n);
    uint32_t off = le32(b + 10), hs = le32(b + 14), bpp, comp = 0, ncol = 0;
    int64_t ww, hh;
    int top_down = 0, pal_entry = 4;
    if (hs == 12) {
        ww = le16(b + 18), hh = le16(b + 20), bpp = le16(b + 24), pal_entry = 3;
    } else if (hs >= 40 && hs <= 124) {
        if (n < 14 + (size_t)hs) return BD_FAIL(e, BAD, "the BMP data is truncated (%zu bytes, header of %u)", n, hs);
        ww = (int32_t)le32(b + 18), hh = (int32_t)le32(b + 22), bpp = le16(b + 28), comp = le32(b + 30);
        ncol = le32(b + 46);
        if (hh < 0) top_down = 1, hh = -hh;
    } else {
        return BD_FAIL(e, BAD, "the BMP header has an unknown size (%u bytes)", hs);
    }
    BD_TRY_RET(check_dims("BMP", hh, ww, e));
    *h = hh, *w = ww;
    if (comp == 1 || comp == 2 || comp == 4 || comp == 5)
        return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "BMP compression %u (RLE, JPEG or PNG) is not supported", comp);
    if (comp != 0 && comp != 3 && comp != 6) return BD_FAIL(e, BAD, "the BMP compression %u is not valid", comp);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        return BD_FAIL(e, BAD, "BMP with %u bits per pixel", bpp);
    if ((comp == 3 || comp == 6) && bpp != 16 && bpp != 32)
        return BD_FAIL(e, BAD, "BMP bit fields with %u bits per pixel", bpp);
    int64_t stride = (ww * bpp + 31) / 32 * 4;
    if ((uint64_t)off > n || (uint64_t)stride * (uint64_t)hh > n - off)
        return BD_FAIL(e, BAD, "the BMP data is truncated: %lld rows of %lld bytes from offset %u, %zu bytes in all",
                       (long long)hh, (long long)stride, off, n);
    if (!rgb) return BRAID_OK;
    /* masks: 16-bit BI_RGB is 5-5-5; bit fields follow a 40-byte header or sit in a larger one */
    uint32_t mr = 0x7c00, mg = 0x03e0, mb = 0x001f;
    if (bpp == 32) mr = 0xff0000, mg = 0xff00, mb = 0xff;
    if (comp == 3 || comp == 6) {
        if (n < 66) return BD_FAIL(e, BAD, "the BMP bit fields are truncated");
        mr = le32(b + 54), mg = le32(b + 58), mb = le32(b + 62);
    }
    uint8_t pal[256][3];
    memset(pal, 0, sizeof pal);
    if (bpp <= 8) {
        size_t at = 14 + (size_t)hs + (comp == 3 && hs == 40 ? 12 : 0);
        uint32_t most = 1u << bpp;
        if (ncol == 0 || ncol > most) ncol = most;
        if (at > n || (size_t)ncol * (size_t)pal_entry > n - at) return BD_FAIL(e, BAD, "the BMP palette is truncated");
        for (uint32_t i = 0; i < ncol; i++) {
            const uint8_t *p = b + at + (size_t)i * (size_t)pal_entry;
            pal[i][0] = p[2], pal[i][1] = p[1], pal[i][2] = p[0];
        }
    }
    BD_TRY_RET(alloc_rgb(hh, ww, rgb, e));
    for (int64_t y = 0; y < hh; y++) {
        const uint8_t *row = b + off + (size_t)((top_down ? y : hh - 1 - y) * stride);
        uint8_t *o = *rgb + (size_t)(y * ww * 3);
        for (int64_t x = 0; x < ww; x++, o += 3) {
            if (bpp <= 8) {
                unsigned idx = bpp == 8 ? row[x]
                             : bpp == 4 ? (row[x / 2] >> (x % 2 ? 0 : 4)) & 15u
                                        : (row[x / 8] >> (7 - x % 8)) & 1u;
                memcpy(o, pal[idx], 3); /* an index past the palette reads as black */
            } else if (bpp == 24) {
                const uint8_t *p = row + x * 3;
                o[0] = p[2], o[1] = p[1], o[2] = p[0];
            } else {
                uint32_t v = bpp == 16 ? le16(row + x * 2) : le32(row + x * 4);
                o[0] = mask_chan(v, mr), o[1] = mask_chan(v, mg), o[2] = mask_chan(v, mb);
            }
        }
    }
    return BRAID_OK;
}

/* ---- PNM: P1..P6 (bitmap, graymap, pixmap; ASCII and binary) ---- */

typedef struct pnm_rd {
    const uint8_t *b;
    size_t n, at;
} pnm_rd;

static int pnm_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* The next unsigned decimal of the header or an ASCII raster; -1 when none.
 * With one_digit (P1's raster) a single digit is a number. */
static int64_t pnm_number(pnm_rd *r, int one_digit)
{
    for (;;) {
        while (r->at < r->n && pnm_space(r->b[r->at])) r->at++;
        if (r->at < r->n && r->b[r->at] == '#') {
            while (r->at < r->n && r->b[r->at] != '\n' && r->b[r->at] != '\r') r->at++;
            continue;
        }
        break;
    }
    if (r->at >= r->n || r->b[r->at] < '0' || r->b[r->at] > '9') return -1;
    int64_t v = 0;
    while (r->at < r->n && r->b[r->at] >= '0' && r->b[r->at] <= '9') {
        v = v * 10 + (r->b[r->at++] - '0');
        if (one_digit || v > INT32_MAX) break;
    }
    return v;
}

static braid_status dec_pnm(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    int kind = b[1] - '0';
    pnm_rd r = {b, n, 2};
    int64_t ww = pnm_number(&r, 0), hh = pnm_number(&r, 0), maxval = 1;
    if (ww < 0 || hh < 0) return BD_FAIL(e, BAD, "the PNM (P%d) header has no width and height", kind);
    if (kind != 1 && kind != 4) {
        maxval = pnm_number(&r, 0);
        if (maxval < 1 || maxval > 65535) return BD_FAIL(e, BAD, "the PNM (P%d) maximum value is not in 1..65535", kind);
    }
    BD_TRY_RET(check_dims("PNM", hh, ww, e));
    *h = hh, *w = ww;
    int ch = kind == 3 || kind == 6 ? 3 : 1, wide = maxval > 255;
    int64_t samples = hh * ww * ch;
    if (kind >= 4) {
        /* one whitespace byte ends the header; the raster follows */
        if (r.at >= n || !pnm_space(b[r.at])) return BD_FAIL(e, BAD, "the PNM (P%d) header does not end in whitespace", kind);
        r.at++;
        int64_t need = kind == 4 ? (ww + 7) / 8 * hh : samples * (wide ? 2 : 1);
        if ((uint64_t)need > n - r.at)
            return BD_FAIL(e, BAD, "the PNM (P%d) data is truncated: %lld raster bytes expected, %zu present", kind,
                           (long long)need, n - r.at);
    }
    if (!rgb) return BRAID_OK;
    BD_TRY_RET(alloc_rgb(hh, ww, rgb, e));
    uint8_t *o = *rgb;
    for (int64_t y = 0; y < hh; y++) {
        for (int64_t x = 0; x < ww; x++, o += 3) {
            for (int c = 0; c < ch; c++) {
                int64_t v;
                if (kind == 4) {
                    v = (b[r.at + (size_t)(y * ((ww + 7) / 8) + x / 8)] >> (7 - x % 8)) & 1;
                    v = !v; /* 1 is black */
                } else if (kind >= 5) {
                    v = wide ? (int64_t)b[r.at] << 8 | b[r.at + 1] : b[r.at];
                    r.at += wide ? 2 : 1;
                } else {
                    v = pnm_number(&r, kind == 1);
                    if (v < 0) {
                        bd_free(*rgb), *rgb = NULL;
                        return BD_FAIL(e, BAD, "the PNM (P%d) data is truncated or not a number at pixel (%lld, %lld)",
                                       kind, (long long)y, (long long)x);
                    }
                    if (kind == 1) v = !v;
                }
                if (v > maxval) v = maxval;
                o[c] = (uint8_t)(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
            }
            if (ch == 1) o[1] = o[2] = o[0];
        }
    }
    return BRAID_OK;
}

/* ---- libraries opened at first use ---- */

typedef struct codec_lib {
    const char *soname, *pkg;   /* the library, and the Debian package that has it */
    const char *const *names;   /* the functions, in the order of the fns struct */
    void *fns;                  /* a struct of function pointers, one per name */
    int n, tried, ok;
    char why[200];
    void (*init)(void);         /* run once when loaded (may be NULL) */
} codec_lib;

static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

/* Opens l once; fails with UNSUPPORTED naming the library when it cannot. */
static braid_status lib_ready(codec_lib *l, const char *fmt, bd_err *e)
{
    pthread_mutex_lock(&lib_mu);
    if (!l->tried) {
        l->tried = 1;
        void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(l->why, sizeof l->why, "%s is not installed (package %s)", l->soname, l->pkg);
        } else {
            int i;
            for (i = 0; i < l->n; i++) {
                void *s = dlsym(h, l->names[i]);
                if (!s) break;
                memcpy((char *)l->fns + (size_t)i * sizeof s, &s, sizeof s);
            }
            if (i < l->n) {
                snprintf(l->why, sizeof l->why, "%s lacks the function %s", l->soname, l->names[i]);
                dlclose(h);
            } else {
                l->ok = 1; /* kept open for the process's life */
                if (l->init) l->init();
            }
        }
    }
    int ok = l->ok;
    pthread_mutex_unlock(&lib_mu);
    if (!ok) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "decoding %s needs %s", fmt, l->why);
    return BRAID_OK;
}

/* ---- PNG: libpng16, errors caught with longjmp ----
 * Read as PIL reads it: no gamma or color-space conversion, 16-bit samples
 * cut to their high byte, palettes and gray expanded to RGB, alpha dropped. */

typedef void (*png_err_fn)(void *png, const char *msg);
static struct {
    void *(*create_read_struct)(const char *, void *, png_err_fn, png_err_fn);
    void *(*create_info_struct)(void *);
    void (*destroy_read_struct)(void **, void **, void **);
    void (*set_read_fn)(void *, void *, void (*)(void *, uint8_t *, size_t));
    void *(*get_io_ptr)(void *);
    void *(*get_error_ptr)(void *);
    void (*read_info)(void *, void *);
    uint32_t (*get_IHDR)(void *, void *, uint32_t *, uint32_t *, int *, int *, int *, int *, int *);
    void (*set_strip_16)(void *);
    void (*set_palette_to_rgb)(void *);
    void (*set_expand_gray_1_2_4_to_8)(void *);
    void (*set_gray_to_rgb)(void *);
    void (*set_strip_alpha)(void *);
    int (*set_interlace_handling)(void *);
    void (*read_update_info)(void *, void *);
    size_t (*get_rowbytes)(void *, void *);
    void (*read_image)(void *, uint8_t **);
} PNG;
static const char *const png_names[] = {
    "png_create_read_struct", "png_create_info_struct", "png_destroy_read_struct", "png_set_read_fn",
    "png_get_io_ptr", "png_get_error_ptr", "png_read_info", "png_get_IHDR", "png_set_strip_16",
    "png_set_palette_to_rgb", "png_set_expand_gray_1_2_4_to_8", "png_set_gray_to_rgb", "png_set_strip_alpha",
    "png_set_interlace_handling", "png_read_update_info", "png_get_rowbytes", "png_read_image"};
static codec_lib png_lib = {"libpng16.so.16", "libpng16-16", png_names, &PNG, 17, 0, 0, "", NULL};

typedef struct png_ctx {
    const uint8_t *b;
    size_t n, at;
    jmp_buf jb;
    char msg[200];
} png_ctx;

static void png_on_error(void *png, const char *msg)
{
    png_ctx *c = PNG.get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg ? msg : "libpng error");
    longjmp(c->jb, 1);
}
static void png_on_warning(void *png, const char *msg) { (void)png, (void)msg; }
static void png_on_read(void *png, uint8_t *dst, size_t k)
{
    png_ctx *c = PNG.get_io_ptr(png);
    if (k > c->n - c->at) png_on_error(png, "the data ends early (truncated)");
    memcpy(dst, c->b + c->at, k);
    c->at += k;
}

static braid_status dec_png(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    /* the signature, then IHDR: length, "IHDR", width, height (big-endian) */
    if (n < 33 || memcmp(b + 12, "IHDR", 4) != 0) return BD_FAIL(e, BAD, "the PNG data is truncated before its IHDR chunk");
    int64_t ww = be32(b + 16), hh = be32(b + 20);
    BD_TRY_RET(check_dims("PNG", hh, ww, e));
    *h = hh, *w = ww;
    BD_TRY_RET(lib_ready(&png_lib, "PNG", e)); /* refused when planned, not when run */
    if (!rgb) return BRAID_OK;
    png_ctx c;
    memset(&c, 0, sizeof c);
    c.b = b, c.n = n;
    void *volatile png = NULL, *volatile info = NULL;
    uint8_t *volatile buf = NULL;
    uint8_t **volatile rows = NULL;
    if (setjmp(c.jb)) {
        void *pp = png, *ip = info;
        if (pp) PNG.destroy_read_struct(&pp, ip ? &ip : NULL, NULL);
        bd_free(buf);
        bd_free(rows);
        return BD_FAIL(e, BAD, "the PNG data is not valid: %s", c.msg);
    }
    png = PNG.create_read_struct("1.6.0", &c, png_on_error, png_on_warning);
    if (png) info = PNG.create_info_struct(png);
    if (!png || !info) {
        void *pp = png;
        if (pp) PNG.destroy_read_struct(&pp, NULL, NULL);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the PNG decoder");
    }
    PNG.set_read_fn(png, &c, png_on_read);
    PNG.read_info(png, info);
    uint32_t pw = 0, ph = 0;
    int depth = 0, color = 0, interlace = 0, comp = 0, filter = 0;
    PNG.get_IHDR(png, info, &pw, &ph, &depth, &color, &interlace, &comp, &filter);
    if ((int64_t)pw != ww || (int64_t)ph != hh) png_on_error(png, "its IHDR disagrees with itself");
    if (depth == 16) PNG.set_strip_16(png);
    if (color == 3) PNG.set_palette_to_rgb(png);                /* PNG_COLOR_TYPE_PALETTE */
    if (!(color & 2) && depth < 8) PNG.set_expand_gray_1_2_4_to_8(png);
    if (!(color & 2)) PNG.set_gray_to_rgb(png);
    PNG.set_strip_alpha(png);
    PNG.set_interlace_handling(png);
    PNG.read_update_info(png, info);
    if (PNG.get_rowbytes(png, info) != (size_t)ww * 3) png_on_error(png, "libpng does not expand it to 8-bit RGB");
    buf = bd_malloc((size_t)(hh * ww * 3));
    rows = bd_malloc((size_t)hh * sizeof *rows);
    if (!buf || !rows) png_on_error(png, "out of memory");
    for (int64_t y = 0; y < hh; y++) rows[y] = buf + (size_t)(y * ww * 3);
    PNG.read_image(png, rows);
    void *pp = png, *ip = info;
    PNG.destroy_read_struct(&pp, &ip, NULL);
    bd_free(rows);
    *rgb = buf;
    return BRAID_OK;
}

/* ---- JPEG: libjpeg 6.2 (libjpeg-turbo), errors caught with longjmp ---- */

#ifdef BRAID_HAVE_JPEGLIB
static struct {
    struct jpeg_error_mgr *(*std_error)(struct jpeg_error_mgr *);
    void (*create)(j_decompress_ptr, int, size_t);
    void (*mem_src)(j_decompress_ptr, const unsigned char *, unsigned long);
    int (*read_header)(j_decompress_ptr, boolean);
    boolean (*start)(j_decompress_ptr);
    JDIMENSION (*read_scanlines)(j_decompress_ptr, JSAMPARRAY, JDIMENSION);
    boolean (*finish)(j_decompress_ptr);
    void (*destroy)(j_decompress_ptr);
} JPG;
static const char *const jpeg_names[] = {"jpeg_std_error", "jpeg_CreateDecompress", "jpeg_mem_src",
                                         "jpeg_read_header", "jpeg_start_decompress", "jpeg_read_scanlines",
                                         "jpeg_finish_decompress", "jpeg_destroy_decompress"};
static codec_lib jpeg_lib = {"libjpeg.so.62", "libjpeg62-turbo", jpeg_names, &JPG, 8, 0, 0, ""};

typedef struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpeg_err;

static void jpeg_on_error(j_common_ptr c)
{
    jpeg_err *je = (jpeg_err *)c->err;
    c->err->format_message(c, je->msg);
    longjmp(je->jb, 1);
}

/* Warnings are ignored but for data that ends early (libjpeg would fill the
 * rest with gray; PIL refuses such a file as truncated). */
static void jpeg_on_message(j_common_ptr c, int level)
{
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) jpeg_on_error(c);
}

static braid_status dec_jpeg(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    BD_TRY_RET(lib_ready(&jpeg_lib, "JPEG", e));
    struct jpeg_decompress_struct ci;
    jpeg_err je;
    uint8_t *volatile buf = NULL;
    volatile int created = 0;
    memset(&ci, 0, sizeof ci);
    ci.err = JPG.std_error(&je.pub);
    je.pub.error_exit = jpeg_on_error;
    je.pub.emit_message = jpeg_on_message;
    je.msg[0] = 0;
    if (setjmp(je.jb)) {
        if (created) JPG.destroy(&ci);
        bd_free(buf);
        return BD_FAIL(e, BAD, "the JPEG data is not valid: %s", je.msg);
    }
    JPG.create(&ci, JPEG_LIB_VERSION, sizeof ci);
    created = 1;
    JPG.mem_src(&ci, b, (unsigned long)n);
    JPG.read_header(&ci, TRUE);
    int64_t hh = ci.image_height, ww = ci.image_width;
    braid_status st = check_dims("JPEG", hh, ww, e);
    if (!st && ci.jpeg_color_space != JCS_GRAYSCALE && ci.jpeg_color_space != JCS_YCbCr && ci.jpeg_color_space != JCS_RGB)
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "JPEG in color space %d (CMYK or YCCK) is not supported",
                     (int)ci.jpeg_color_space);
    if (st || !rgb) {
        JPG.destroy(&ci);
        *h = hh, *w = ww;
        return st;
    }
    *h = hh, *w = ww;
    ci.out_color_space = JCS_RGB;
    JPG.start(&ci);
    if ((int64_t)ci.output_width != ww || (int64_t)ci.output_height != hh || ci.output_components != 3) {
        JPG.destroy(&ci);
        return BD_FAIL(e, BRAID_ERR_INTERNAL, "libjpeg decodes %ux%u with %d components", ci.output_width,
                       ci.output_height, ci.output_components);
    }
    buf = bd_malloc((size_t)(hh * ww * 3));
    if (!buf) {
        JPG.destroy(&ci);
        return BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for a %lldx%lld image", (long long)ww, (long long)hh);
    }
    while (ci.output_scanline < ci.output_height) {
        JSAMPROW row = buf + (size_t)ci.output_scanline * (size_t)ww * 3;
        JPG.read_scanlines(&ci, &row, 1);
    }
    JPG.finish(&ci);
    JPG.destroy(&ci);
    *rgb = buf;
    return BRAID_OK;
}
#else
static braid_status dec_jpeg(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    (void)b, (void)n, (void)h, (void)w, (void)rgb;
    return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "decoding JPEG needs libjpeg.so.62, and braid was built without jpeglib.h "
                                             "(package libjpeg62-turbo-dev)");
}
#endif

/* ---- TIFF: libtiff 4 (libtiff.so.6), read from memory as RGBA ---- */

typedef int64_t tiff_msize;
typedef uint64_t tiff_off;
typedef void (*tiff_handler)(const char *module, const char *fmt, va_list ap);

static struct {
    void *(*client_open)(const char *, const char *, void *, tiff_msize (*)(void *, void *, tiff_msize),
                         tiff_msize (*)(void *, void *, tiff_msize), tiff_off (*)(void *, tiff_off, int),
                         int (*)(void *), tiff_off (*)(void *), int (*)(void *, void **, tiff_off *),
                         void (*)(void *, void *, tiff_off));
    int (*get_field)(void *, uint32_t, ...);
    int (*read_rgba)(void *, uint32_t, uint32_t, uint32_t *, int, int);
    void (*close)(void *);
    tiff_handler (*set_error)(tiff_handler);
    tiff_handler (*set_warning)(tiff_handler);
} TIF;
static const char *const tiff_names[] = {"TIFFClientOpen", "TIFFGetField", "TIFFReadRGBAImageOriented",
                                         "TIFFClose", "TIFFSetErrorHandler", "TIFFSetWarningHandler"};

/* libtiff's messages go to the calling thread's last-message buffer, not
 * stderr (its handlers are process-wide: set once, when it is loaded). */
static __thread char tiff_msg[256];
static void tiff_on_error(const char *module, const char *fmt, va_list ap)
{
    (void)module;
    vsnprintf(tiff_msg, sizeof tiff_msg, fmt, ap);
}
static void tiff_on_warning(const char *module, const char *fmt, va_list ap) { (void)module, (void)fmt, (void)ap; }
static void tiff_init(void)
{
    TIF.set_error(tiff_on_error);
    TIF.set_warning(tiff_on_warning);
}
static codec_lib tiff_lib = {"libtiff.so.6", "libtiff6", tiff_names, &TIF, 6, 0, 0, "", tiff_init};

typedef struct mem_rd {
    const uint8_t *b;
    size_t n, at;
} mem_rd;

static tiff_msize tiff_read(void *h, void *buf, tiff_msize size)
{
    mem_rd *m = h;
    size_t k = size < 0 ? 0 : (size_t)size;
    if (k > m->n - m->at) k = m->n - m->at;
    memcpy(buf, m->b + m->at, k);
    m->at += k;
    return (tiff_msize)k;
}
static tiff_msize tiff_write(void *h, void *buf, tiff_msize size) { (void)h, (void)buf, (void)size; return -1; }
static tiff_off tiff_seek(void *h, tiff_off off, int whence)
{
    mem_rd *m = h;
    uint64_t base = whence == SEEK_CUR ? m->at : whence == SEEK_END ? m->n : 0;
    if (off > UINT64_MAX - base || base + off > m->n) return (tiff_off)-1;
    m->at = (size_t)(base + off);
    return m->at;
}
static int tiff_close(void *h) { (void)h; return 0; }
static tiff_off tiff_size(void *h) { return ((mem_rd *)h)->n; }
static int tiff_map(void *h, void **base, tiff_off *size) { (void)h, (void)base, (void)size; return 0; }
static void tiff_unmap(void *h, void *base, tiff_off size) { (void)h, (void)base, (void)size; }

static braid_status dec_tiff(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    BD_TRY_RET(lib_ready(&tiff_lib, "TIFF", e));
    mem_rd m = {b, n, 0};
    uint32_t ww = 0, hh = 0;
    braid_status st = BRAID_OK;
    uint32_t *px = NULL;
    tiff_msg[0] = 0;
    void *t = TIF.client_open("ImageDecoder input", "rm", &m, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                              tiff_map, tiff_unmap);
    if (!t) return BD_FAIL(e, BAD, "the TIFF data is not valid: %s", tiff_msg[0] ? tiff_msg : "libtiff cannot open it");
    if (!TIF.get_field(t, 256, &ww) || !TIF.get_field(t, 257, &hh)) { /* ImageWidth, ImageLength */
        st = BD_FAIL(e, BAD, "the TIFF data has no image width or length");
        goto fail;
    }
    BD_TRY(check_dims("TIFF", hh, ww, e));
    *h = hh, *w = ww;
    if (!rgb) goto fail;
    px = bd_malloc((size_t)ww * hh * 4);
    BD_CHECK_ALLOC(e, px);
    if (!TIF.read_rgba(t, ww, hh, px, 1 /* ORIENTATION_TOPLEFT */, 1)) {
        st = BD_FAIL(e, BAD, "the TIFF data is not valid: %s", tiff_msg[0] ? tiff_msg : "libtiff cannot read it");
        goto fail;
    }
    BD_TRY(alloc_rgb(hh, ww, rgb, e));
    for (size_t i = 0; i < (size_t)ww * hh; i++) { /* ABGR packed: R in the low byte */
        (*rgb)[i * 3] = (uint8_t)(px[i] & 0xff);
        (*rgb)[i * 3 + 1] = (uint8_t)(px[i] >> 8 & 0xff);
        (*rgb)[i * 3 + 2] = (uint8_t)(px[i] >> 16 & 0xff);
    }
fail:
    bd_free(px);
    TIF.close(t);
    return st;
}

/* ---- WebP: libwebp (libwebp.so.7) ---- */

static struct {
    int (*get_info)(const uint8_t *, size_t, int *, int *);
    uint8_t *(*decode_rgb_into)(const uint8_t *, size_t, uint8_t *, size_t, int);
} WEBP;
static const char *const webp_names[] = {"WebPGetInfo", "WebPDecodeRGBInto"};
static codec_lib webp_lib = {"libwebp.so.7", "libwebp7", webp_names, &WEBP, 2, 0, 0, ""};

static braid_status dec_webp(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    BD_TRY_RET(lib_ready(&webp_lib, "WebP", e));
    int ww = 0, hh = 0;
    if (!WEBP.get_info(b, n, &ww, &hh)) return BD_FAIL(e, BAD, "the WebP data is not valid (its header cannot be read)");
    BD_TRY_RET(check_dims("WebP", hh, ww, e));
    *h = hh, *w = ww;
    if (!rgb) return BRAID_OK;
    BD_TRY_RET(alloc_rgb(hh, ww, rgb, e));
    if (!WEBP.decode_rgb_into(b, n, *rgb, (size_t)hh * (size_t)ww * 3, ww * 3)) {
        bd_free(*rgb), *rgb = NULL;
        return BD_FAIL(e, BAD, "the WebP data is not valid or is truncated (libwebp cannot decode it)");
    }
    return BRAID_OK;
}

/* ---- JPEG 2000: OpenJPEG 2 (libopenjp2.so.7), JP2 files and J2K codestreams ---- */

typedef struct opj_comp {
    uint32_t dx, dy, w, h, x0, y0, prec, bpp, sgnd, resno_decoded, factor;
    int32_t *data;
    uint16_t alpha;
} opj_comp;
typedef struct opj_img {
    uint32_t x0, y0, x1, y1, numcomps;
    int color_space;
    opj_comp *comps;
    uint8_t *icc_profile_buf;
    uint32_t icc_profile_len;
} opj_img;
typedef void (*opj_msg_fn)(const char *msg, void *user);

static struct {
    void *(*create_decompress)(int);
    void (*set_default_params)(void *);
    int (*setup_decoder)(void *, void *);
    void *(*stream_default_create)(int);
    void (*stream_set_read)(void *, size_t (*)(void *, size_t, void *));
    void (*stream_set_skip)(void *, int64_t (*)(int64_t, void *));
    void (*stream_set_seek)(void *, int (*)(int64_t, void *));
    void (*stream_set_user_data)(void *, void *, void (*)(void *));
    void (*stream_set_user_data_length)(void *, uint64_t);
    int (*read_header)(void *, void *, opj_img **);
    int (*decode)(void *, void *, opj_img *);
    int (*end_decompress)(void *, void *);
    void (*stream_destroy)(void *);
    void (*destroy_codec)(void *);
    void (*image_destroy)(opj_img *);
    int (*set_error_handler)(void *, opj_msg_fn, void *);
    int (*set_warning_handler)(void *, opj_msg_fn, void *);
    int (*set_info_handler)(void *, opj_msg_fn, void *);
} OPJ;
static const char *const opj_names[] = {
    "opj_create_decompress", "opj_set_default_decoder_parameters", "opj_setup_decoder", "opj_stream_default_create",
    "opj_stream_set_read_function", "opj_stream_set_skip_function", "opj_stream_set_seek_function",
    "opj_stream_set_user_data", "opj_stream_set_user_data_length", "opj_read_header", "opj_decode",
    "opj_end_decompress", "opj_stream_destroy", "opj_destroy_codec", "opj_image_destroy", "opj_set_error_handler",
    "opj_set_warning_handler", "opj_set_info_handler"};
static codec_lib opj_lib = {"libopenjp2.so.7", "libopenjp2-7", opj_names, &OPJ, 18, 0, 0, ""};

static size_t opj_read(void *buf, size_t k, void *user)
{
    mem_rd *m = user;
    if (m->at >= m->n) return (size_t)-1;
    if (k > m->n - m->at) k = m->n - m->at;
    memcpy(buf, m->b + m->at, k);
    m->at += k;
    return k;
}
static int64_t opj_skip(int64_t k, void *user)
{
    mem_rd *m = user;
    if (k < 0 || (uint64_t)k > m->n - m->at) return -1;
    m->at += (size_t)k;
    return k;
}
static int opj_seek(int64_t k, void *user)
{
    mem_rd *m = user;
    if (k < 0 || (uint64_t)k > m->n) return 0;
    m->at = (size_t)k;
    return 1;
}
static void opj_on_error(const char *msg, void *user)
{
    char *dst = user;
    if (!dst[0]) snprintf(dst, 200, "%s", msg);
    size_t l = strlen(dst);
    if (l && dst[l - 1] == '\n') dst[l - 1] = 0;
}
static void opj_quiet(const char *msg, void *user) { (void)msg, (void)user; }

static braid_status dec_jp2(const uint8_t *b, size_t n, int64_t *h, int64_t *w, uint8_t **rgb, bd_err *e)
{
    BD_TRY_RET(lib_ready(&opj_lib, "JPEG 2000", e));
    int jp2 = n >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 12;
    mem_rd m = {b, n, 0};
    char msg[200] = "";
    opj_img *im = NULL;
    braid_status st = BRAID_OK;
    /* opj_dparameters_t is filled and read by the library only: room enough for it */
    union { max_align_t a; unsigned char bytes[32768]; } *params = bd_calloc(1, sizeof *params);
    void *codec = OPJ.create_decompress(jp2 ? 2 : 0); /* OPJ_CODEC_JP2 : OPJ_CODEC_J2K */
    void *stream = OPJ.stream_default_create(1);
    if (!params || !codec || !stream) {
        st = BD_FAIL(e, BRAID_ERR_OUT_OF_MEMORY, "out of memory for the JPEG 2000 decoder");
        goto fail;
    }
    OPJ.set_error_handler(codec, opj_on_error, msg);
    OPJ.set_warning_handler(codec, opj_quiet, NULL);
    OPJ.set_info_handler(codec, opj_quiet, NULL);
    OPJ.set_default_params(params->bytes);
    if (!OPJ.setup_decoder(codec, params->bytes)) {
        st = BD_FAIL(e, BRAID_ERR_INTERNAL, "OpenJPEG refuses its default decoder parameters: %s", msg);
        goto fail;
    }
    OPJ.stream_set_read(stream, opj_read);
    OPJ.stream_set_skip(stream, opj_skip);
    OPJ.stream_set_seek(stream, opj_seek);
    OPJ.stream_set_user_data(stream, &m, NULL);
    OPJ.stream_set_user_data_length(stream, n);
    if (!OPJ.read_header(stream, codec, &im) || !im) {
        st = BD_FAIL(e, BAD, "the JPEG 2000 data is not valid: %s", msg[0] ? msg : "its header cannot be read");
        goto fail;
    }
    int64_t hh = (int64_t)im->y1 - im->y0, ww = (int64_t)im->x1 - im->x0;
    BD_TRY(check_dims("JPEG 2000", hh, ww, e));
    *h = hh, *w = ww;
    if (im->numcomps != 1 && im->numcomps < 3) {
        st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "JPEG 2000 with %u components is not supported", im->numcomps);
        goto fail;
    }
    if (!rgb) goto fail;
    if (!OPJ.decode(codec, stream, im) || !OPJ.end_decompress(codec, stream)) {
        st = BD_FAIL(e, BAD, "the JPEG 2000 data is not valid: %s", msg[0] ? msg : "it cannot be decoded");
        goto fail;
    }
    int nc = im->numcomps >= 3 ? 3 : 1;
    for (int c = 0; c < nc; c++) {
        const opj_comp *k = &im->comps[c];
        if (k->w != (uint32_t)ww || k->h != (uint32_t)hh || !k->data || k->prec < 1 || k->prec > 31) {
            st = BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "JPEG 2000 with subsampled or %u-bit components is not supported",
                         k->prec);
            goto fail;
        }
    }
    BD_TRY(alloc_rgb(hh, ww, rgb, e));
    for (int c = 0; c < 3; c++) {
        const opj_comp *k = &im->comps[nc == 3 ? c : 0];
        int64_t lo = k->sgnd ? -((int64_t)1 << (k->prec - 1)) : 0, top = ((int64_t)1 << k->prec) - 1;
        for (int64_t i = 0; i < hh * ww; i++) {
            int64_t v = (int64_t)k->data[i] - lo;
            v = v < 0 ? 0 : v > top ? top : v;
            if (k->prec > 8) v >>= k->prec - 8;
            else if (k->prec < 8) v = (v * 255 + top / 2) / top;
            (*rgb)[i * 3 + c] = (uint8_t)v;
        }
    }
fail:
    if (im) OPJ.image_destroy(im);
    if (stream) OPJ.stream_destroy(stream);
    if (codec) OPJ.destroy_codec(codec);
    bd_free(params);
    return st;
}

/* ---- format detection and the entry points ---- */

typedef struct fmt_row {
    const char *name;
    dec_fn dec;
} fmt_row;

static const fmt_row *find_format(const uint8_t *b, size_t n)
{
    static const fmt_row bmp = {"BMP", dec_bmp}, pnm = {"PNM", dec_pnm}, png = {"PNG", dec_png},
                         jpeg = {"JPEG", dec_jpeg}, tiff = {"TIFF", dec_tiff}, webp = {"WebP", dec_webp},
                         jp2 = {"JPEG 2000", dec_jp2};
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return &bmp;
    if (n >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' && pnm_space(b[2])) return &pnm;
    if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0) return &png;
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return &jpeg;
    if (n >= 4 && (memcmp(b, "II*\0", 4) == 0 || memcmp(b, "MM\0*", 4) == 0)) return &tiff;
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0) return &webp;
    if ((n >= 12 && memcmp(b, "\0\0\0\x0cjP  \r\n\x87\n", 12) == 0) || (n >= 4 && memcmp(b, "\xff\x4f\xff\x51", 4) == 0))
        return &jp2;
    return NULL;
}

const char *bd_img_format_name(const uint8_t *b, size_t n)
{
    const fmt_row *f = b ? find_format(b, n) : NULL;
    return f ? f->name : NULL;
}

static braid_status pick(const uint8_t *b, size_t n, const fmt_row **f, bd_err *e)
{
    if (!b || n == 0) return BD_FAIL(e, BAD, "the encoded image is empty");
    *f = find_format(b, n);
    if (*f) return BRAID_OK;
    if (n >= 4 && memcmp(b, "GIF8", 4) == 0) return BD_FAIL(e, BRAID_ERR_UNSUPPORTED, "GIF images are not supported");
    return BD_FAIL(e, BAD, "the bytes are no image format braid knows (BMP, PNM, PNG, JPEG, TIFF, WebP, JPEG 2000); "
                           "they start %02x %02x %02x %02x",
                   b[0], n > 1 ? b[1] : 0, n > 2 ? b[2] : 0, n > 3 ? b[3] : 0);
}

braid_status bd_img_probe(const uint8_t *b, size_t n, int64_t *h, int64_t *w, bd_err *e)
{
    const fmt_row *f;
    BD_TRY_RET(pick(b, n, &f, e));
    return f->dec(b, n, h, w, NULL, e);
}

braid_status bd_img_decode(const uint8_t *b, size_t n, int fmt, int64_t h, int64_t w, uint8_t *out, bd_err *e)
{
    const fmt_row *f;
    uint8_t *rgb = NULL;
    int64_t hh = 0, ww = 0;
    BD_TRY_RET(pick(b, n, &f, e));
    BD_TRY_RET(f->dec(b, n, &hh, &ww, &rgb, e));
    if (hh != h || ww != w) {
        bd_free(rgb);
        return BD_FAIL(e, BRAID_ERR_SHAPE, "the %s image is %lldx%lld, not the %lldx%lld planned", f->name,
                       (long long)ww, (long long)hh, (long long)w, (long long)h);
    }
    size_t np = (size_t)(h * w);
    if (fmt == BD_IMG_RGB) {
        memcpy(out, rgb, np * 3);
    } else if (fmt == BD_IMG_BGR) {
        for (size_t i = 0; i < np; i++) out[i * 3] = rgb[i * 3 + 2], out[i * 3 + 1] = rgb[i * 3 + 1], out[i * 3 + 2] = rgb[i * 3];
    } else {
        for (size_t i = 0; i < np; i++)
            out[i] = (uint8_t)(((uint32_t)rgb[i * 3] * 19595u + (uint32_t)rgb[i * 3 + 1] * 38470u +
                                (uint32_t)rgb[i * 3 + 2] * 7471u + 32768u) >> 16);
    }
    bd_free(rgb);
    return BRAID_OK;
}
