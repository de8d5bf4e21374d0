/* test_image.c: the image family (ImageDecoder) on the CPU. Small images are
 * written byte by byte here (BMP 24/32-bit and 1/8-bit palette, bottom-up
 * and top-down; PNM P1..P6 with comments and a maxval below 255) and must
 * decode exactly; PNG, lossless WebP and JPEG are encoded at test time by
 * the same system libraries braid decodes with (nothing binary is
 * committed): PNG and WebP round-trip exactly, and PNGs written by hand
 * (16-bit, gAMA, gray+alpha, RGBA, a bad filter byte) decode as PIL reads
 * them; JPEG at quality 100 within 10 levels. Every pixel format (RGB, BGR, Grayscale as PIL's convert("L")).
 * Empty, truncated, corrupt and unknown bytes fail with exact codes and
 * never crash; a library that is missing fails with UNSUPPORTED naming it.
 * Every prefix of each image and a few hundred seeded byte flips decode or
 * fail cleanly (OK, INVALID_MODEL, UNSUPPORTED, or LIMIT for a flipped
 * size: never a crash, never another code), as do the node tests' files (a BMP, JPEG, JPEG 2000, PNG,
 * PNM, TIFF and WebP made by PIL), which must also decode exactly to their
 * expected pixels when BRAID_NODE_DATA holds them.
 * In a session, images of different sizes one run after another each get
 * their own dims (the bytes are read when the node is planned), and a
 * corrupt image fails its run without spoiling the next. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "mbuild.h"
#include "optest.h"
#include "util/imgcodec.h"

#if defined(__has_include)
#if __has_include(<jpeglib.h>)
#include <jpeglib.h>
#define HAVE_JPEGLIB 1
#endif
#endif

static uint8_t gray_of(const uint8_t *p)
{
    return (uint8_t)((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 32768u) >> 16);
}

/* Decodes bytes with pixel_format fmt ("RGB"...); *out is malloc'ed. */
static braid_status decode(const uint8_t *b, int64_t n, const char *fmt, bd_tensor *out, bd_err *e)
{
    bd_tensor in = {BRAID_DTYPE_UINT8, 1, {n}, (void *)b};
    bd_attr a = {.name = "pixel_format", .type = BD_ATTR_STRING, .s = (char *)fmt};
    bd_node nd = op_node(BD_OP_ImageDecoder, 20, 1, 1, &a, fmt ? 1 : 0);
    memset(out, 0, sizeof *out);
    braid_status st = run(&nd, &in, out, e);
    bd_free(nd.params);
    return st;
}

/* Decodes in all three formats and checks them against the RGB pixels
 * expected (h * w * 3). */
static void check_all(const uint8_t *b, int64_t n, int64_t h, int64_t w, const uint8_t *rgb, int tol)
{
    static const char *fmts[] = {"RGB", "BGR", "Grayscale", NULL};
    for (int f = 0; f < 4; f++) {
        bd_tensor out;
        bd_err e = {0};
        braid_status st = decode(b, n, fmts[f], &out, &e);
        CHECK_EQ_INT(st, BRAID_OK);
        if (st) { fprintf(stderr, "  %s\n", e.msg); free(out.data); continue; }
        int c = f == 2 ? 1 : 3;
        CHECK_EQ_INT(out.rank, 3);
        CHECK_EQ_INT(out.dims[0], h);
        CHECK_EQ_INT(out.dims[1], w);
        CHECK_EQ_INT(out.dims[2], c);
        int worst = 0;
        const uint8_t *o = out.data;
        for (int64_t i = 0; i < h * w; i++) {
            const uint8_t *p = rgb + i * 3;
            for (int k = 0; k < c; k++) {
                int want = f == 2 ? gray_of(p) : f == 1 ? p[2 - k] : p[k];
                int d = abs((int)o[i * c + k] - want);
                if (d > worst) worst = d;
            }
        }
        if (worst > tol) fprintf(stderr, "  format %s: worst error %d\n", fmts[f] ? fmts[f] : "(default)", worst);
        CHECK(worst <= tol);
        free(out.data);
    }
}

static void expect_fail(const uint8_t *b, int64_t n, braid_status want, const char *sub)
{
    bd_tensor out;
    bd_err e = {0};
    CHECK_EQ_INT(decode(b, n, "RGB", &out, &e), want);
    CHECK_CONTAINS(e.msg, sub);
    free(out.data);
}

/* Decodes every prefix (up to 300 of them, evenly spaced) and 300 copies
 * with one byte changed: each decodes or fails cleanly (a changed size byte
 * may claim more pixels than braid decodes: LIMIT). */
static void torture(const uint8_t *b, size_t n)
{
    uint8_t *c = malloc(n + 1);
    unsigned seed = 12345;
    int bad = 0;
    size_t step = n / 300 + 1;
    for (size_t len = 0; len <= n; len += step) {
        bd_tensor out;
        bd_err e = {0};
        memcpy(c, b, len);
        braid_status st = decode(c, (int64_t)len, "BGR", &out, &e);
        if (st != BRAID_OK && st != BRAID_ERR_INVALID_MODEL && st != BRAID_ERR_UNSUPPORTED && st != BRAID_ERR_LIMIT && !bad++)
            fprintf(stderr, "  status %d: %s\n", st, e.msg);
        free(out.data);
    }
    for (int i = 0; i < 300; i++) {
        bd_tensor out;
        bd_err e = {0};
        memcpy(c, b, n);
        seed = seed * 1103515245u + 12345u;
        size_t at = (seed >> 8) % n;
        c[at] = (uint8_t)(c[at] ^ (1u + (seed >> 24) % 255u));
        braid_status st = decode(c, (int64_t)n, "Grayscale", &out, &e);
        if (st != BRAID_OK && st != BRAID_ERR_INVALID_MODEL && st != BRAID_ERR_UNSUPPORTED && st != BRAID_ERR_LIMIT && !bad++)
            fprintf(stderr, "  status %d: %s\n", st, e.msg);
        free(out.data);
    }
    CHECK_EQ_INT(bad, 0);
    free(c);
}

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, v & 0xffff), put16(p + 2, v >> 16); }

/* A BMP with a 40-byte header; pal entries (BGRX) when ncol > 0. */
static size_t bmp_header(uint8_t *b, int32_t w, int32_t h, int bpp, int ncol, size_t raster)
{
    size_t off = 54 + (size_t)ncol * 4;
    memset(b, 0, off);
    b[0] = 'B', b[1] = 'M';
    put32(b + 2, (uint32_t)(off + raster));
    put32(b + 10, (uint32_t)off);
    put32(b + 14, 40);
    put32(b + 18, (uint32_t)w);
    put32(b + 22, (uint32_t)h);
    put16(b + 26, 1);
    put16(b + 28, (uint32_t)bpp);
    put32(b + 46, (uint32_t)ncol);
    return off;
}

static void test_bmp(void)
{
    /* 3 wide, 2 high: rows of 9 bytes padded to 12, stored bottom row first */
    const uint8_t rgb[6 * 3] = {255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30, 200, 100, 50, 7, 8, 9};
    uint8_t b[200];
    size_t off = bmp_header(b, 3, 2, 24, 0, 24);
    for (int y = 0; y < 2; y++) {
        uint8_t *row = b + off + (size_t)(1 - y) * 12;
        memset(row, 0xEE, 12); /* padding bytes are never read */
        for (int x = 0; x < 3; x++) {
            const uint8_t *p = rgb + (y * 3 + x) * 3;
            row[x * 3] = p[2], row[x * 3 + 1] = p[1], row[x * 3 + 2] = p[0];
        }
    }
    check_all(b, (int64_t)(off + 24), 2, 3, rgb, 0);
    torture(b, off + 24);
    /* the same image truncated by one byte, and with a header only */
    expect_fail(b, (int64_t)(off + 23), BRAID_ERR_INVALID_MODEL, "truncated");
    expect_fail(b, 20, BRAID_ERR_INVALID_MODEL, "truncated");
    /* RLE compression is refused, not misread */
    put32(b + 30, 1);
    expect_fail(b, (int64_t)(off + 24), BRAID_ERR_UNSUPPORTED, "RLE");
    put32(b + 30, 0);

    /* 32-bit top-down (negative height): BGRX */
    off = bmp_header(b, 3, -2, 32, 0, 24);
    for (int i = 0; i < 6; i++) {
        b[off + i * 4] = rgb[i * 3 + 2], b[off + i * 4 + 1] = rgb[i * 3 + 1], b[off + i * 4 + 2] = rgb[i * 3];
        b[off + i * 4 + 3] = 0x55;
    }
    check_all(b, (int64_t)(off + 24), 2, 3, rgb, 0);

    /* 8-bit palette of 3 colors, 3x2 bottom-up (rows of 3 padded to 4) */
    const uint8_t pal[3][3] = {{1, 2, 3}, {250, 128, 0}, {9, 99, 199}};
    const int idx[6] = {0, 1, 2, 2, 1, 0};
    uint8_t want[18];
    off = bmp_header(b, 3, 2, 8, 3, 8);
    for (int i = 0; i < 3; i++) b[54 + i * 4] = pal[i][2], b[55 + i * 4] = pal[i][1], b[56 + i * 4] = pal[i][0];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 3; x++) {
            b[off + (size_t)(1 - y) * 4 + (size_t)x] = (uint8_t)idx[y * 3 + x];
            memcpy(want + (y * 3 + x) * 3, pal[idx[y * 3 + x]], 3);
        }
    check_all(b, (int64_t)(off + 8), 2, 3, want, 0);
    torture(b, off + 8);
    /* cut inside the palette */
    expect_fail(b, 60, BRAID_ERR_INVALID_MODEL, "truncated");

    /* 1-bit, 10x1: black and white bits, one 4-byte row */
    off = bmp_header(b, 10, 1, 1, 2, 4);
    memset(b + 54, 0, 8);
    b[58] = b[59] = b[60] = 255;
    b[off] = 0xA5, b[off + 1] = 0x80, b[off + 2] = b[off + 3] = 0;
    uint8_t bits[30];
    for (int x = 0; x < 10; x++) memset(bits + x * 3, ((x < 8 ? 0xA5 >> (7 - x) : 0x80 >> (15 - x)) & 1) ? 255 : 0, 3);
    check_all(b, (int64_t)(off + 4), 1, 10, bits, 0);
}

static void test_pnm(void)
{
    const uint8_t rgb[4 * 3] = {0, 1, 2, 100, 150, 200, 255, 255, 255, 33, 66, 99};
    uint8_t b[256];
    /* P6 binary with a comment in the header */
    int n = sprintf((char *)b, "P6\n# made by hand\n2 2\n255\n");
    memcpy(b + n, rgb, 12);
    check_all(b, n + 12, 2, 2, rgb, 0);
    expect_fail(b, n + 11, BRAID_ERR_INVALID_MODEL, "truncated");
    /* P3 ASCII */
    n = sprintf((char *)b, "P3 2 2 255\n0 1 2 100 150 200\n255 255 255 # end of row\n 33 66 99\n");
    check_all(b, n, 2, 2, rgb, 0);
    torture(b, (size_t)n);
    expect_fail(b, n - 8, BRAID_ERR_INVALID_MODEL, "truncated");
    /* P5 binary gray and P2 ASCII gray with maxval 15 (scaled to 0..255 rounding) */
    const uint8_t g[4] = {0, 7, 8, 15}, gv[4] = {0, 119, 136, 255};
    uint8_t want[12];
    for (int i = 0; i < 4; i++) memset(want + i * 3, gv[i], 3);
    n = sprintf((char *)b, "P5 2 2 15 ");
    memcpy(b + n, g, 4);
    check_all(b, n + 4, 2, 2, want, 0);
    n = sprintf((char *)b, "P2\n2 2\n15\n0 7\n8 15\n");
    check_all(b, n, 2, 2, want, 0);
    /* P1 and P4 bitmaps: 1 is black */
    const uint8_t bw[4] = {0, 255, 255, 0};
    for (int i = 0; i < 4; i++) memset(want + i * 3, bw[i], 3);
    n = sprintf((char *)b, "P1 2 2 1001");
    check_all(b, n, 2, 2, want, 0);
    n = sprintf((char *)b, "P4 2 2\n");
    b[n] = 0x80, b[n + 1] = 0x40;
    check_all(b, n + 2, 2, 2, want, 0);
    /* a header without dims */
    n = sprintf((char *)b, "P6\n# nothing else\n");
    expect_fail(b, n, BRAID_ERR_INVALID_MODEL, "width and height");
}

static void test_errors(void)
{
    bd_err e = {0};
    bd_tensor out;
    uint8_t junk[32] = {1, 2, 3, 4, 5};
    /* empty, unknown and GIF bytes */
    expect_fail(junk, 0, BRAID_ERR_INVALID_MODEL, "empty");
    expect_fail(junk, 16, BRAID_ERR_INVALID_MODEL, "start 01 02 03 04");
    memcpy(junk, "GIF89a", 6);
    expect_fail(junk, 16, BRAID_ERR_UNSUPPORTED, "GIF");
    /* magic bytes and nothing more, for every format */
    static const char *heads[] = {"BM", "P6 ", "\x89PNG\r\n\x1a\n", "\xff\xd8\xff", "II*", "RIFF\0\0\0\0WEBP",
                                  "\0\0\0\x0cjP  \r\n\x87\n", "\xff\x4f\xff\x51"};
    static const int lens[] = {2, 3, 8, 3, 4, 12, 12, 4};
    for (int i = 0; i < 8; i++) {
        memset(&e, 0, sizeof e);
        braid_status st = decode((const uint8_t *)heads[i], lens[i], "RGB", &out, &e);
        CHECK(st == BRAID_ERR_INVALID_MODEL || st == BRAID_ERR_UNSUPPORTED);
        if (st == BRAID_ERR_UNSUPPORTED) CHECK_CONTAINS(e.msg, ".so.");
        free(out.data);
    }
    /* dtype, rank and attribute */
    uint8_t pnm[] = "P5 1 1 255 x";
    bd_tensor in = {BRAID_DTYPE_INT8, 1, {12}, pnm};
    bd_attr a = {.name = "pixel_format", .type = BD_ATTR_STRING, .s = "RGB"};
    bd_node nd = op_node(BD_OP_ImageDecoder, 20, 1, 1, &a, 1);
    memset(&out, 0, sizeof out);
    CHECK_EQ_INT(run(&nd, &in, &out, &e), BRAID_ERR_DTYPE);
    done(&nd, &out);
    in = (bd_tensor){BRAID_DTYPE_UINT8, 2, {1, 12}, pnm};
    CHECK_EQ_INT(run(&nd, &in, &out, &e), BRAID_ERR_SHAPE);
    done(&nd, &out);
    a.s = "RGBA";
    CHECK_EQ_INT(run(&nd, &in, &out, &e), BRAID_ERR_INVALID_MODEL);
    CHECK_CONTAINS(e.msg, "pixel_format");
    done(&nd, &out);
    /* no pixel_format: RGB */
    check_all(pnm, 12, 1, 1, (const uint8_t *)"xxx", 0);
    /* a header claiming 2^30 pixels is refused before anything is allocated */
    int n = sprintf((char *)junk, "P5 32768 32768 255 ");
    expect_fail(junk, n, BRAID_ERR_LIMIT, "more than braid decodes");
}

/* ---- formats encoded at test time by their libraries ---- */

/* A smooth 24x16 test image (JPEG keeps it well). */
static void test_pixels(uint8_t *rgb, int h, int w)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + (y * w + x) * 3;
            p[0] = (uint8_t)(x * 10), p[1] = (uint8_t)(y * 15), p[2] = (uint8_t)(128 + x * 2 - y * 3);
        }
}

typedef struct { void *opaque; uint32_t version, width, height, format, flags, colormap_entries, warning_or_error; char message[64]; } png_img;

static void test_png(void)
{
    enum { H = 16, W = 24 };
    uint8_t rgb[H * W * 3];
    test_pixels(rgb, H, W);
    void *lib = dlopen("libpng16.so.16", RTLD_NOW);
    int (*to_mem)(png_img *, void *, size_t *, int, const void *, int32_t, const void *) =
        lib ? (int (*)(png_img *, void *, size_t *, int, const void *, int32_t, const void *))dlsym(lib, "png_image_write_to_memory") : NULL;
    if (!to_mem) {
        printf("libpng16 is not installed: only the refusal is checked\n");
        uint8_t png[33] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1};
        expect_fail(png, 33, BRAID_ERR_UNSUPPORTED, "libpng16.so.16");
        return;
    }
    png_img im = {.version = 1, .width = W, .height = H, .format = 2};
    size_t n = 0;
    CHECK(to_mem(&im, NULL, &n, 0, rgb, W * 3, NULL));
    uint8_t *buf = malloc(n);
    CHECK(to_mem(&im, buf, &n, 0, rgb, W * 3, NULL));
    check_all(buf, (int64_t)n, H, W, rgb, 0);
    torture(buf, n);
    /* truncated in the image data, and a flipped byte (the IDAT CRC fails) */
    expect_fail(buf, (int64_t)n / 2, BRAID_ERR_INVALID_MODEL, "PNG");
    buf[n - 20] ^= 0x40;
    expect_fail(buf, (int64_t)n, BRAID_ERR_INVALID_MODEL, "PNG data is not valid");
    free(buf);
    dlclose(lib);
}

/* ---- PNG written by hand: stored (uncompressed) zlib, CRCs computed here ---- */

static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void be32put(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v; }

static size_t png_chunk(uint8_t *o, const char *type, const uint8_t *d, uint32_t len)
{
    be32put(o, len);
    memcpy(o + 4, type, 4);
    if (len) memcpy(o + 8, d, len);
    be32put(o + 8 + len, crc32_of(o + 4, len + 4));
    return 12 + len;
}

/* A PNG of w x h (depth, color type) from raw filtered rows, with a gAMA
 * chunk when gamma > 0. */
static size_t png_by_hand(uint8_t *o, int w, int h, int depth, int color, const uint8_t *raw, uint32_t nraw, uint32_t gamma)
{
    uint8_t ihdr[13] = {0}, z[600], g[4];
    be32put(ihdr, (uint32_t)w), be32put(ihdr + 4, (uint32_t)h);
    ihdr[8] = (uint8_t)depth, ihdr[9] = (uint8_t)color;
    uint32_t a = 1, b = 0;
    for (uint32_t i = 0; i < nraw; i++) a = (a + raw[i]) % 65521, b = (b + a) % 65521;
    z[0] = 0x78, z[1] = 0x01, z[2] = 1; /* zlib header, one final stored block */
    z[3] = (uint8_t)nraw, z[4] = (uint8_t)(nraw >> 8), z[5] = (uint8_t)~nraw, z[6] = (uint8_t)(~nraw >> 8);
    memcpy(z + 7, raw, nraw);
    be32put(z + 7 + nraw, b << 16 | a);
    size_t n = 8;
    memcpy(o, "\x89PNG\r\n\x1a\n", 8);
    n += png_chunk(o + n, "IHDR", ihdr, 13);
    if (gamma) {
        be32put(g, gamma);
        n += png_chunk(o + n, "gAMA", g, 4);
    }
    n += png_chunk(o + n, "IDAT", z, nraw + 11);
    n += png_chunk(o + n, "IEND", NULL, 0);
    return n;
}

/* As PIL reads PNG: 16-bit samples keep their high byte, a gAMA chunk
 * changes nothing, gray and palettes expand to RGB, alpha is dropped. */
static void test_png_by_hand(void)
{
    uint8_t png[800];
    void *lib = dlopen("libpng16.so.16", RTLD_NOW);
    if (!lib) return; /* test_png checks the refusal */
    dlclose(lib);
    /* 16-bit RGB, 2x1: 0x1234 0x8000 0xfedc | 0x00ff 0xff00 0x0001 */
    const uint8_t raw16[13] = {0, 0x12, 0x34, 0x80, 0x00, 0xfe, 0xdc, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01};
    const uint8_t want16[6] = {0x12, 0x80, 0xfe, 0x00, 0xff, 0x00};
    size_t n = png_by_hand(png, 2, 1, 16, 2, raw16, 13, 0);
    check_all(png, (int64_t)n, 1, 2, want16, 0);
    /* 8-bit RGB with gAMA 1.0 (a linear file): the samples as stored */
    const uint8_t raw8[7] = {0, 0, 64, 128, 255, 32, 200};
    n = png_by_hand(png, 2, 1, 8, 2, raw8, 7, 100000);
    check_all(png, (int64_t)n, 1, 2, raw8 + 1, 0);
    /* 8-bit gray + alpha, 2x1: gray 10 and 250 */
    const uint8_t rawga[5] = {0, 10, 0, 250, 255}, wantga[6] = {10, 10, 10, 250, 250, 250};
    n = png_by_hand(png, 2, 1, 8, 4, rawga, 5, 0);
    check_all(png, (int64_t)n, 1, 2, wantga, 0);
    /* RGBA with the filter byte of a row out of range */
    const uint8_t rawbad[9] = {9, 1, 2, 3, 4, 5, 6, 7, 8};
    n = png_by_hand(png, 2, 1, 8, 6, rawbad, 9, 0);
    expect_fail(png, (int64_t)n, BRAID_ERR_INVALID_MODEL, "PNG data is not valid");
    /* the same RGBA with a valid filter: alpha dropped */
    const uint8_t rawrgba[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, wantrgba[6] = {1, 2, 3, 5, 6, 7};
    n = png_by_hand(png, 2, 1, 8, 6, rawrgba, 9, 0);
    check_all(png, (int64_t)n, 1, 2, wantrgba, 0);
}

static void test_webp(void)
{
    enum { H = 16, W = 24 };
    uint8_t rgb[H * W * 3];
    test_pixels(rgb, H, W);
    void *lib = dlopen("libwebp.so.7", RTLD_NOW);
    size_t (*enc)(const uint8_t *, int, int, int, uint8_t **) =
        lib ? (size_t (*)(const uint8_t *, int, int, int, uint8_t **))dlsym(lib, "WebPEncodeLosslessRGB") : NULL;
    void (*wfree)(void *) = lib ? (void (*)(void *))dlsym(lib, "WebPFree") : NULL;
    if (!enc || !wfree) {
        printf("libwebp7 is not installed: only the refusal is checked\n");
        expect_fail((const uint8_t *)"RIFF\0\0\0\0WEBPVP8L", 16, BRAID_ERR_UNSUPPORTED, "libwebp.so.7");
        return;
    }
    uint8_t *out = NULL;
    size_t n = enc(rgb, W, H, W * 3, &out);
    CHECK(n > 0);
    check_all(out, (int64_t)n, H, W, rgb, 0);
    torture(out, n);
    expect_fail(out, (int64_t)n - 10, BRAID_ERR_INVALID_MODEL, "WebP");
    wfree(out);
    dlclose(lib);
}

#ifdef HAVE_JPEGLIB
static void test_jpeg(void)
{
    enum { H = 16, W = 24 };
    uint8_t rgb[H * W * 3];
    test_pixels(rgb, H, W);
    void *lib = dlopen("libjpeg.so.62", RTLD_NOW);
    if (!lib) {
        printf("libjpeg62 is not installed: only the refusal is checked\n");
        expect_fail((const uint8_t *)"\xff\xd8\xff\xe0", 4, BRAID_ERR_UNSUPPORTED, "libjpeg.so.62");
        return;
    }
    struct jpeg_error_mgr *(*std_error)(struct jpeg_error_mgr *) = (struct jpeg_error_mgr * (*)(struct jpeg_error_mgr *)) dlsym(lib, "jpeg_std_error");
    void (*create)(j_compress_ptr, int, size_t) = (void (*)(j_compress_ptr, int, size_t))dlsym(lib, "jpeg_CreateCompress");
    void (*mem_dest)(j_compress_ptr, unsigned char **, unsigned long *) = (void (*)(j_compress_ptr, unsigned char **, unsigned long *))dlsym(lib, "jpeg_mem_dest");
    void (*defaults)(j_compress_ptr) = (void (*)(j_compress_ptr))dlsym(lib, "jpeg_set_defaults");
    void (*quality)(j_compress_ptr, int, boolean) = (void (*)(j_compress_ptr, int, boolean))dlsym(lib, "jpeg_set_quality");
    void (*start)(j_compress_ptr, boolean) = (void (*)(j_compress_ptr, boolean))dlsym(lib, "jpeg_start_compress");
    JDIMENSION (*write)(j_compress_ptr, JSAMPARRAY, JDIMENSION) = (JDIMENSION (*)(j_compress_ptr, JSAMPARRAY, JDIMENSION))dlsym(lib, "jpeg_write_scanlines");
    void (*finish)(j_compress_ptr) = (void (*)(j_compress_ptr))dlsym(lib, "jpeg_finish_compress");
    void (*destroy)(j_compress_ptr) = (void (*)(j_compress_ptr))dlsym(lib, "jpeg_destroy_compress");
    CHECK(std_error && create && mem_dest && defaults && quality && start && write && finish && destroy);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr je;
    unsigned char *buf = NULL;
    unsigned long n = 0;
    c.err = std_error(&je);
    create(&c, JPEG_LIB_VERSION, sizeof c);
    mem_dest(&c, &buf, &n);
    c.image_width = W, c.image_height = H, c.input_components = 3, c.in_color_space = JCS_RGB;
    defaults(&c);
    quality(&c, 100, TRUE);
    start(&c, TRUE);
    for (int y = 0; y < H; y++) {
        JSAMPROW row = rgb + y * W * 3;
        write(&c, &row, 1);
    }
    finish(&c);
    destroy(&c);
    /* lossy (chroma subsampled 2x2): within 10 levels of the source at quality 100 */
    check_all(buf, (int64_t)n, H, W, rgb, 10);
    torture(buf, n);
    /* Grayscale is exactly PIL's L of the decoded RGB */
    bd_tensor o3, o1;
    bd_err e = {0};
    CHECK_EQ_INT(decode(buf, (int64_t)n, "RGB", &o3, &e), BRAID_OK);
    CHECK_EQ_INT(decode(buf, (int64_t)n, "Grayscale", &o1, &e), BRAID_OK);
    int same = 1;
    for (int i = 0; i < H * W; i++) same &= ((uint8_t *)o1.data)[i] == gray_of((uint8_t *)o3.data + i * 3);
    CHECK(same);
    free(o3.data);
    free(o1.data);
    /* truncated in the scan (libjpeg's premature-end warning is an error here),
     * cut inside the header, and a frame header of height 0 */
    expect_fail(buf, (int64_t)n * 2 / 3, BRAID_ERR_INVALID_MODEL, "JPEG data is not valid");
    expect_fail(buf, 40, BRAID_ERR_INVALID_MODEL, "JPEG data is not valid");
    unsigned long sof = 2;
    while (sof + 9 < n && !(buf[sof] == 0xff && buf[sof + 1] == 0xc0)) sof++;
    CHECK(sof + 9 < n);
    buf[sof + 5] = buf[sof + 6] = 0;
    expect_fail(buf, (int64_t)n, BRAID_ERR_INVALID_MODEL, "JPEG");
    free(buf);
    dlclose(lib);
}
#endif

/* The tensor of a node test's .pb file (raw uint8 data); NULL when absent. */
static uint8_t *read_pb(const char *dir, const char *name, size_t *n, int64_t *dims)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/test_data_set_0/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static uint8_t raw[1 << 16];
    size_t len = fread(raw, 1, sizeof raw, f);
    fclose(f);
    Onnx__TensorProto *t = onnx__tensor_proto__unpack(NULL, len, raw);
    if (!t) return NULL;
    uint8_t *out = NULL;
    if (t->has_raw_data && t->n_dims <= 3) {
        out = malloc(t->raw_data.len + 1);
        memcpy(out, t->raw_data.data, t->raw_data.len);
        *n = t->raw_data.len;
        for (size_t d = 0; d < t->n_dims; d++) dims[d] = t->dims[d];
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    return out;
}

static void test_node_files(void)
{
    const char *root = getenv("BRAID_NODE_DATA");
    static const char *names[] = {"bmp_rgb", "jpeg_rgb", "jpeg2k_rgb", "png_rgb", "pnm_rgb", "tiff_rgb", "webp_rgb"};
    int found = 0;
    for (int i = 0; root && i < 7; i++) {
        char dir[900];
        size_t n = 0, m = 0;
        int64_t di[3] = {0}, dout[3] = {0};
        snprintf(dir, sizeof dir, "%s/test_image_decoder_decode_%s", root, names[i]);
        uint8_t *in = read_pb(dir, "input_0.pb", &n, di), *want = read_pb(dir, "output_0.pb", &m, dout);
        if (in && want) {
            found++;
            bd_tensor out;
            bd_err e = {0};
            braid_status st = decode(in, (int64_t)n, "RGB", &out, &e);
            if (st == BRAID_ERR_UNSUPPORTED) {
                printf("%s: %s\n", names[i], e.msg); /* a codec library this machine lacks */
            } else {
                CHECK_EQ_INT(st, BRAID_OK);
                CHECK(!st && out.dims[0] == dout[0] && out.dims[1] == dout[1] && out.dims[2] == 3);
                CHECK(!st && m == (size_t)(dout[0] * dout[1] * 3) && memcmp(out.data, want, m) == 0);
            }
            free(out.data);
            torture(in, n);
        }
        free(in);
        free(want);
    }
    if (found < 7) printf("node test data: %d of 7 image files found (BRAID_NODE_DATA=%s)\n", found, root ? root : "");
}

/* img (uint8 [n]) -> ImageDecoder(BGR) -> pix, and Cast(pix) to float -> f. */
static void test_session(void)
{
    mb b = {0};
    mb_model mm;
    braid_model *m = NULL;
    Onnx__GraphProto *g = mb_graph(&b, "main");
    int64_t dn[] = {-1};
    mb_input(&b, g, "img", BRAID_DTYPE_UINT8, 1, dn);
    Onnx__NodeProto *nd = mb_node(&b, g, "ImageDecoder", "img", "pix", "dec");
    Onnx__AttributeProto *a = mb_attr(&b, nd, "pixel_format", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->s.data = (uint8_t *)mb_str(&b, "BGR");
    a->s.len = 3;
    a->has_s = 1;
    Onnx__NodeProto *c = mb_node(&b, g, "Cast", "pix", "f", "cast");
    mb_attr_i(&b, c, "to", BRAID_DTYPE_FLOAT);
    mb_output(&b, g, "pix", BRAID_DTYPE_UINT8, -1, NULL);
    mb_output(&b, g, "f", BRAID_DTYPE_FLOAT, -1, NULL);
    mb_model_init(&b, &mm, g, 20);
    CHECK_EQ_INT(mb_load(&b, &mm, &m), BRAID_OK);
    if (!m) fprintf(stderr, "  %s\n", braid_last_error());
    braid_options *opt = NULL;
    braid_session *s = NULL;
    braid_options_create(&opt);
    braid_options_set_backend(opt, BRAID_BACKEND_CPU);
    CHECK_EQ_INT(braid_session_create(m, opt, &s), BRAID_OK);
    /* a 2x3 P6, a 1x1 P6, a corrupt one, the 2x3 again */
    uint8_t big[64], small[32], bad[] = "P6 2 2 255 abc";
    int nb = sprintf((char *)big, "P6 3 2 255 "), ns = sprintf((char *)small, "P6 1 1 255 ");
    for (int i = 0; i < 18; i++) big[nb + i] = (uint8_t)(i * 13);
    memcpy(small + ns, "\x01\x02\x03", 3);
    struct { const uint8_t *p; int64_t n; braid_status want; int64_t h, w; } runs[] = {
        {big, nb + 18, BRAID_OK, 2, 3}, {small, ns + 3, BRAID_OK, 1, 1},
        {bad, (int64_t)strlen((char *)bad), BRAID_ERR_INVALID_MODEL, 0, 0}, {big, nb + 18, BRAID_OK, 2, 3}};
    for (int r = 0; r < 4 && s; r++) {
        braid_tensor in = {BRAID_DTYPE_UINT8, 1, {runs[r].n}, (void *)runs[r].p}, out[2];
        memset(out, 0, sizeof out);
        braid_status st = braid_session_run(s, 1, &in, 2, out);
        CHECK_EQ_INT(st, runs[r].want);
        if (st) {
            CHECK_CONTAINS(braid_session_error(s), "truncated");
            continue;
        }
        CHECK_EQ_INT(out[0].rank, 3);
        CHECK_EQ_INT(out[0].dims[0], runs[r].h);
        CHECK_EQ_INT(out[0].dims[1], runs[r].w);
        CHECK_EQ_INT(out[0].dims[2], 3);
        CHECK_EQ_INT(out[1].dims[0] * out[1].dims[1], runs[r].h * runs[r].w);
        const uint8_t *src = runs[r].p + (runs[r].n - runs[r].h * runs[r].w * 3);
        int same = 1;
        for (int64_t i = 0; i < runs[r].h * runs[r].w; i++)
            for (int k = 0; k < 3; k++) {
                same &= ((uint8_t *)out[0].data)[i * 3 + k] == src[i * 3 + 2 - k];
                same &= ((float *)out[1].data)[i * 3 + k] == (float)src[i * 3 + 2 - k];
            }
        CHECK(same);
    }
    braid_session_destroy(s);
    braid_options_destroy(opt);
    braid_model_destroy(m);
    mb_free(&b);
}

int main(void)
{
    test_node_files();
    test_session();
    test_bmp();
    test_pnm();
    test_errors();
    test_png();
    test_png_by_hand();
    test_webp();
#ifdef HAVE_JPEGLIB
    test_jpeg();
#endif
    return check_done();
}
