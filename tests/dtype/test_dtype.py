"""test_dtype.py: braid's conversions between float32 and the narrow float
types (float16, bfloat16, the float8 kinds, float4e2m1, float6) against ml_dtypes,
the library onnx's reference implementation casts with, and FLOAT8E8M0
against onnx.numpy_helper.to_float8e8m0. Decoding is checked for every code;
encoding for the values around every code boundary, specials and 20000
random floats. Every result must be bit-exact (NaN matches any NaN code
only where the reference gives a NaN).
Usage: test_dtype.py DTYPE_DUMP"""
import subprocess
import sys

import ml_dtypes
import numpy as np
from onnx import numpy_helper

TYPES = {10: np.float16, 16: ml_dtypes.bfloat16, 17: ml_dtypes.float8_e4m3fn, 18: ml_dtypes.float8_e4m3fnuz,
         19: ml_dtypes.float8_e5m2, 20: ml_dtypes.float8_e5m2fnuz, 23: ml_dtypes.float4_e2m1fn,
         24: ml_dtypes.float8_e8m0fnu, 27: ml_dtypes.float6_e2m3fn, 28: ml_dtypes.float6_e3m2fn}
MODES = ["up", "down", "nearest"]


def probe_values():
    rng = np.random.default_rng(7)
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38]
    for dt, t in TYPES.items():  # every code's value, and the midpoints around it
        codes = np.arange(65536 if dt in (10, 16) else 256, dtype=np.uint16 if dt in (10, 16) else np.uint8)
        v = codes.view(t).astype(np.float32)
        v = v[np.isfinite(v)]
        for f in (v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(-np.inf))):
            vals.extend(f[:: 37 if dt in (10, 16) else 1].tolist())
        s = np.sort(np.unique(v))
        mids = (s[1:].astype(np.float64) + s[:-1]) / 2
        vals.extend(mids[:: 37 if dt in (10, 16) else 1].tolist())
    vals.extend((rng.standard_normal(10000) * rng.choice([1e-6, 1e-2, 1, 100, 1e5], 10000)).tolist())
    vals.extend(rng.uniform(-1000, 1000, 10000).tolist())
    return np.array(vals, dtype=np.float32)


def main():
    xs = probe_values()
    stdin = "\n".join("%08x" % b for b in xs.view(np.uint32))
    out = subprocess.run([sys.argv[1]], input=stdin, capture_output=True, text=True, check=True).stdout
    bad = checked = 0
    for line in out.splitlines():
        f = line.split()
        if f[0] == "D":
            dt, code, got = int(f[1]), int(f[2]), np.uint32(int(f[3], 16)).view(np.float32)
            raw = np.array([code], np.uint16 if dt in (10, 16) else np.uint8)
            want = raw.view(TYPES[dt]).astype(np.float32)[0]
            ok = (np.isnan(want) and np.isnan(got)) or got.view(np.uint32) == want.view(np.uint32)
        elif f[0] == "E":
            dt, x, got = int(f[1]), np.uint32(int(f[2], 16)).view(np.float32), int(f[3])
            want = int(np.array([x]).astype(TYPES[dt]).view(np.uint16 if dt in (10, 16) else np.uint8)[0])
            if dt in (10, 16) and np.isnan(x):  # any quiet NaN of the same sign
                ex, mant = (0x7c00, 0x3ff) if dt == 10 else (0x7f80, 0x7f)
                ok = (got & ex) == ex and got & mant and (got >> 15) == (want >> 15)
            else:
                ok = got == want
        else:
            mode, sat, x, got = int(f[1]), int(f[2]), np.uint32(int(f[3], 16)).view(np.float32), int(f[4])
            want = int(numpy_helper.to_float8e8m0(np.array([x]), bool(sat), MODES[mode]).view(np.uint8)[0])
            ok = got == want
        checked += 1
        if not ok:
            bad += 1
            if bad <= 20:
                print("MISMATCH", line, "want", want)
    print(f"test_dtype: {checked} conversions checked, {bad} wrong")
    return 1 if bad or checked < 100000 else 0


if __name__ == "__main__":
    sys.exit(main())
