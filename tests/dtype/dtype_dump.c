/* dtype_dump.c: prints braid's narrow-float conversions (src/util/dtype.h)
 * (and float16) for tests/dtype/test_dtype.py to compare with ml_dtypes, onnx's reference:
 *   "D dtype code float_bits"  decoding of every code of every narrow type
 *   "E dtype float_bits code"  encoding of each float read from stdin (hex bits)
 *   "M mode sat float_bits code"  FLOAT8E8M0 encoding, per round mode and saturate */
#include <stdio.h>

#include "util/dtype.h"

int main(void)
{
    static const int types[] = {10, 16, 17, 18, 19, 20, 23, 24, 27, 28};
    for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
        int dt = types[t], n = dt <= 16 ? 65536 : 256;
        for (int c = 0; c < n; c++) {
            uint16_t h = (uint16_t)c;
            uint8_t b = (uint8_t)c;
            int ok = 1;
            bd_mf_format f = bd_minifloat_format(dt, &ok);
            if (ok && c >> (f.ebits + f.mbits + 1)) continue; /* codes beyond the type's bits */
            float v = dt == 10 ? bd_half_to_float_hd(h) : dt == 16 ? bd_bf16_to_float(h) : bd_narrow_to_float(dt, &b, 0);
            printf("D %d %d %08x\n", dt, c, bd_f32_bits(v));
        }
    }
    unsigned bits;
    while (scanf("%x", &bits) == 1) {
        float x = bd_bits_f32(bits);
        for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
            int dt = types[t];
            if (dt == 24) continue;
            uint16_t h = 0;
            uint8_t b = 0;
            if (dt == 10) h = bd_float_to_half(x);
            else if (dt == 16) h = bd_float_to_bf16(x);
            else bd_float_to_narrow(dt, &b, 0, x);
            printf("E %d %08x %d\n", dt, bits, dt <= 16 ? h : b);
        }
        for (int mode = 0; mode < 3; mode++)
            for (int sat = 0; sat < 2; sat++)
                printf("M %d %d %08x %d\n", mode, sat, bits, bd_float_to_e8m0(x, sat, (bd_round_mode)mode));
    }
    return 0;
}
