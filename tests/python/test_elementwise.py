"""test_elementwise.py: every elementwise op of braid's unary, activation, binary
and cast families, on every dtype its spec allows, against onnx's reference
implementation (onnxruntime for the com.microsoft ops): one-node models over
edge values (NaN, +-inf, +-0, the integer limits, values around the ops'
thresholds), broadcast and empty shapes, each attribute. Each case is written
as an ONNX test folder and run with `braid check` at a tolerance that fits
the dtype (float32: 1e-5 relative; float16 and bfloat16: one unit in the last
place of the result; integers and bool: exact).

Usage: test_elementwise.py BRAID [--backend cpu|cuda] [--keep DIR] [-k SUBSTRING]
Exits 1 when a case fails (braid's verdict FAIL or SKIP), printing each.
"""
import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import warnings

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

F32, F64, F16, BF16 = np.float32, np.float64, np.float16, ml_dtypes.bfloat16
SINTS = [np.int8, np.int16, np.int32, np.int64]
UINTS = [np.uint8, np.uint16, np.uint32, np.uint64]
FLOATS = [F32, F64, F16, BF16]
NUM = FLOATS + SINTS + UINTS
F8 = [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz]

SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 2.5, -2.5, 3.5, 1e-6, -1e-6, 0.999, 1.5,
           -3.0, 6.0, -6.0, 20.0, -20.0, 100.0, -100.0, 1e30, -1e30, 88.0, -88.0, 0.1, 0.7, 2.0]


def values(dt, n=48, seed=0, lo=-4.0, hi=4.0):
    """Edge values of dtype dt, then random ones, n in all."""
    rng = np.random.default_rng(seed)
    if dt == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        edge = [info.min, info.max, 0, 1, 2, 3, 7, info.max - 1]
        if info.min < 0:
            edge += [-1, -2, -7, info.min + 1]
        rnd = rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True)
        return np.concatenate([np.array(edge, dtype=dt), rnd.astype(dt)])[:n]
    rnd = rng.uniform(lo, hi, n)
    with np.errstate(over="ignore"):
        return np.array((SPECIAL + list(rnd))[:n], dtype=np.float64).astype(dt)


def onnx_type(dt):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def tolerance(dt):
    if dt == F32:
        return 1e-5, 1e-6
    if dt == F64:  # the reference computes some double ops in float32 (Erf, Gelu's constants)
        return 1e-7, 1e-12
    if dt == F16:
        return 2e-3, 1e-5
    if dt == BF16:
        return 1.6e-2, 1e-5
    if dt in F8:
        return 0.13, 1e-3
    return 0, 0


def model(op, inputs, n_out_dtype, attrs, opset, domain=""):
    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
    g = helper.make_graph(
        [node], "t", [helper.make_tensor_value_info(nm, onnx_type(a.dtype), a.shape) for nm, a in zip(names, inputs)],
        [helper.make_tensor_value_info("y", onnx_type(n_out_dtype), None)])
    imports = [helper.make_opsetid("", opset)]
    if domain:
        imports.append(helper.make_opsetid(domain, 1))
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 10
    return m


def reference(m, inputs, domain):
    if domain == "com.microsoft":
        import onnxruntime as ort
        s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return s.run(None, {f"x{i}": a for i, a in enumerate(inputs)})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(m).run(None, {f"x{i}": a for i, a in enumerate(inputs)})[0]


class Sweep:
    def __init__(self, braid, backend, root, only):
        self.braid, self.backend, self.root, self.only = braid, backend, root, only
        self.n, self.failed = 0, []

    def case(self, op, inputs, attrs=None, opset=22, domain="", out_dtype=None, tol=None, tag="", want=None):
        name = f"{op}_{tag}" if tag else op
        if self.only and self.only not in name:
            return
        attrs = attrs or {}
        try:
            probe = model(op, inputs, out_dtype or inputs[0].dtype, attrs, opset, domain)
            want = np.asarray(reference(probe, inputs, domain) if want is None else want)
        except Exception as e:  # the reference refuses: not a case
            print(f"no reference for {name}: {str(e).splitlines()[0][:100]}")
            return
        m = model(op, inputs, want.dtype, attrs, opset, domain)
        d = os.path.join(self.root, f"{self.n:04d}_{name}")
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(m, os.path.join(d, "model.onnx"))
        for i, a in enumerate(inputs):
            onnx.save_tensor(numpy_helper.from_array(a), os.path.join(d, "test_data_set_0", f"input_{i}.pb"))
        onnx.save_tensor(numpy_helper.from_array(want), os.path.join(d, "test_data_set_0", "output_0.pb"))
        rtol, atol = tol or tolerance(want.dtype.type)
        self.n += 1
        p = subprocess.run([self.braid, "check", d, "--backend", self.backend, "--rtol", str(rtol), "--atol", str(atol),
                            "--threads", "1"], capture_output=True, text=True)
        if p.returncode != 0:
            self.failed.append(f"{name}: {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")


def unary_cases(s):
    fl = ["Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Tanh", "Sin", "Cos", "Tan", "Asin", "Acos",
          "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"]
    for op, dt in itertools.product(fl, FLOATS):
        s.case(op, [values(dt)], tag=np.dtype(dt).name)
    for op, dts in (("Abs", NUM), ("Sign", NUM), ("Neg", FLOATS + SINTS), ("Erf", FLOATS), ("BitwiseNot", SINTS + UINTS),
                    ("IsNaN", FLOATS + F8)):
        for dt in dts:
            s.case(op, [values(dt)], opset=22 if op not in ("IsNaN",) else 20, tag=np.dtype(dt).name)
    for dt in FLOATS + F8:
        for neg, pos in ((1, 1), (0, 1), (1, 0), (0, 0)):
            s.case("IsInf", [values(dt)], {"detect_negative": neg, "detect_positive": pos}, opset=20,
                   tag=f"{np.dtype(dt).name}_{neg}{pos}")
    s.case("Not", [values(np.bool_)], opset=1)
    for dt in NUM:
        x = values(dt)
        lo, hi = np.array(x[10], dtype=dt), np.array(x[12], dtype=dt)
        if np.issubdtype(dt, np.floating) or dt == BF16:
            lo, hi = np.array(-1.5, dtype=dt), np.array(2.5, dtype=dt)
        s.case("Clip", [x, lo, hi], opset=13, tag=np.dtype(dt).name)
        s.case("Clip", [x, hi, lo], opset=13, tag=np.dtype(dt).name + "_inverted")
    s.case("Clip", [values(F32)], {"min": -1.0, "max": 2.0}, opset=6, tag="opset6")
    s.case("Clip", [values(F32)], {"min": -1.0}, opset=6, tag="opset6_min")


def activation_cases(s):
    plain = [("Sigmoid", {}, 13), ("HardSwish", {}, 22), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 22),
             ("LeakyRelu", {"alpha": 0.2}, 16), ("Elu", {"alpha": 0.7}, 22), ("Selu", {}, 22),
             ("Selu", {"alpha": 2.0, "gamma": 3.0}, 22), ("Celu", {"alpha": 2.0}, 12),
             ("ThresholdedRelu", {"alpha": 1.5}, 22), ("Gelu", {}, 20), ("Gelu", {"approximate": "tanh"}, 20),
             ("Mish", {}, 22), ("Softplus", {}, 22), ("Softsign", {}, 22), ("Swish", {"alpha": 0.6}, 24),
             ("Relu", {}, 14), ("Shrink", {"lambd": 1.5, "bias": 0.5}, 9)]
    for (op, attrs, opset), dt in itertools.product(plain, FLOATS):
        if op == "Celu" and dt != F32:
            opset = 28
        if op == "Shrink" and dt == BF16:
            continue
        x = values(dt, lo=-12, hi=12)
        want = None
        if op == "HardSwish" and dt == F64:  # the reference's alpha is float32(1/6)
            want = x * np.clip(x / 6 + 0.5, 0, 1)
        if op == "Gelu" and dt in (F16, BF16, F64):  # the reference's function body rounds every step
            v = x.astype(np.float64)
            if attrs:
                y = 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
            else:
                from math import erf
                y = 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))
            want = y.astype(dt)
        s.case(op, [x], attrs, opset, tag=f"{np.dtype(dt).name}_{len(attrs)}", want=want)
    for dt in SINTS:
        s.case("Relu", [values(dt)], opset=14, tag=np.dtype(dt).name)
    for dt in SINTS + UINTS:  # beyond 2^53 numpy's float result does not round-trip
        x = values(dt)
        x = x[np.abs(x.astype(np.float64)) < 2 ** 53]
        s.case("Shrink", [x], {"lambd": 2.0, "bias": 1.5}, 9, tag=np.dtype(dt).name)
    for dt in FLOATS:
        a, b = values(dt).reshape(6, 8), values(dt, seed=3).reshape(6, 8)
        s.case("SwiGLU", [a, b], {"alpha": 1.3}, 28, tag=np.dtype(dt).name)
    x, bias = values(F32).reshape(2, 3, 8), values(F32, n=8, seed=2)
    for op, ins in (("Gelu", [x]), ("FastGelu", [x]), ("FastGelu", [x, bias]), ("BiasGelu", [x, bias]),
                    ("QuickGelu", [x])):
        s.case(op, ins, {"alpha": 1.1} if op == "QuickGelu" else {}, 17, "com.microsoft", tag=f"ms{len(ins)}",
               tol=(1e-4, 1e-5))


def binary_cases(s):
    shapes = [((48,), (48,)), ((6, 8), (8,)), ((2, 3, 8), (3, 1)), ((4, 1, 3), (2, 1)), ((0, 3), (3,)), ((), (5,))]

    def pair(dt, sa, sb, seed=0):
        a = values(dt, n=max(1, int(np.prod(sa))), seed=seed)[: int(np.prod(sa))].reshape(sa)
        b = values(dt, n=max(1, int(np.prod(sb))), seed=seed + 7)[: int(np.prod(sb))].reshape(sb)
        return a, b
    arith = ["Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]
    for op, dt in itertools.product(arith, NUM):
        for k, (sa, sb) in enumerate(shapes):
            a, b = pair(dt, sa, sb)
            if op == "Div" and np.issubdtype(dt, np.integer):
                b = np.where(b == 0, 1, b).astype(dt)  # numpy's integer division by 0 is not the spec's
                if np.issubdtype(dt, np.signedinteger):
                    b = np.where(b == -1, 3, b).astype(dt)
            s.case(op, [a, b], opset=14 if op not in ("Max", "Min") else 13, tag=f"{np.dtype(dt).name}_{k}")
    for dt in NUM:
        for fm in (0, 1):
            if fm == 0 and dt in FLOATS:
                opset = 28
            else:
                opset = 13
            a, b = pair(dt, (6, 8), (8,))
            b = np.where(b == 0, 3, b).astype(dt)
            s.case("Mod", [a, b], {"fmod": fm}, opset, tag=f"{np.dtype(dt).name}_{fm}")
    for dt in SINTS + UINTS:
        for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
            s.case(op, list(pair(dt, (2, 3, 8), (3, 1))), opset=18, tag=np.dtype(dt).name)
        a = values(dt)
        bits = np.iinfo(dt).bits
        sh = np.array([0, 1, 3, bits - 1, bits, bits + 1, 2, 5] * 6, dtype=np.int64)[:48]
        if np.issubdtype(dt, np.signedinteger):
            sh[-1] = -1
        for d in ("LEFT", "RIGHT"):
            s.case("BitShift", [a, sh.astype(dt)], {"direction": d}, 28, tag=f"{np.dtype(dt).name}_{d}")
    for op in ("And", "Or", "Xor"):
        s.case(op, [values(np.bool_).reshape(6, 8), values(np.bool_, n=8, seed=4)], opset=7)
    s.case("Equal", [values(np.bool_).reshape(6, 8), values(np.bool_, n=8, seed=4)], opset=19, tag="bool")
    for dt in FLOATS + SINTS + UINTS:
        x, sl = pair(dt, (2, 3, 8), (3, 1))
        s.case("PRelu", [x, sl], opset=16, tag=np.dtype(dt).name)
    for dt in FLOATS + [np.int32, np.int64]:
        for et in FLOATS + SINTS + UINTS:
            a = values(dt, n=12).reshape(3, 4)
            e = np.array([0, 1, 2, 3, 2, 1, 0, 3, 1, 2, 0, 1], dtype=np.float64).reshape(3, 4).astype(et)
            if np.issubdtype(et, np.floating) or et == BF16:
                e = np.array([0.5, 2, -1, 3, 0, 1.5, 2, -2, 0.25, 3, 1, 2]).reshape(3, 4).astype(et)
                if np.issubdtype(dt, np.integer):
                    continue  # numpy gives float64 there and the spec leaves the rounding open
            if np.issubdtype(dt, np.integer) and et == np.uint64:
                continue  # numpy promotes int ** uint64 to float64
            s.case("Pow", [a, e], opset=15, tag=f"{np.dtype(dt).name}_{np.dtype(et).name}")
    for dt in FLOATS + SINTS + UINTS + F8 + [np.bool_]:
        c = values(np.bool_, n=8, seed=9).reshape(8)
        x, y = values(dt, n=48).reshape(6, 8), values(dt, n=1, seed=5).reshape(())
        s.case("Where", [c, x, y], opset=16, tag=np.dtype(dt).name)
    for op, dts in (("Max", NUM), ("Min", NUM), ("Sum", FLOATS), ("Mean", FLOATS)):
        for dt in dts:
            a = values(dt, n=24).reshape(2, 3, 4)
            b = values(dt, n=4, seed=1).reshape(4)
            c = values(dt, n=6, seed=2).reshape(2, 3, 1)
            s.case(op, [a], opset=13, tag=f"{np.dtype(dt).name}_1")
            s.case(op, [a, b, c], opset=13, tag=f"{np.dtype(dt).name}_3")
            s.case(op, [b, c, a, b], opset=13, tag=f"{np.dtype(dt).name}_4")
    x, bias, skip = values(F32, n=24).reshape(1, 3, 8), values(F32, n=8, seed=3), values(F32, n=24, seed=4).reshape(1, 3, 8)
    s.case("BiasAdd", [x, bias, skip], {}, 17, "com.microsoft", tol=(1e-6, 1e-6))
    x16 = [np.nan_to_num(t, posinf=1e4, neginf=-1e4).astype(F16) for t in (x, bias, skip)]
    s.case("BiasAdd", x16, {}, 17, "com.microsoft", tag="f16", tol=(2e-3, 1e-3))


def cast_cases(s):
    ints = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    narrow = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2, ml_dtypes.float4_e2m1fn,
              ml_dtypes.float8_e8m0fnu, ml_dtypes.float6_e2m3fn, ml_dtypes.float6_e3m2fn]
    all_types = FLOATS + ints + [np.bool_] + F8 + narrow
    for src, dst in itertools.product(all_types, all_types):
        if src == dst:
            continue
        x = values(src if src in FLOATS + ints + [np.bool_] else F32, n=40, lo=-9, hi=9)
        if src not in FLOATS + ints + [np.bool_]:
            x = x.astype(src)
        if src not in ints + narrow[:4] + [np.bool_] and dst in ints + narrow[:4]:
            x64 = x.astype(np.float64)  # out-of-range float to int is undefined
            x = x[np.isfinite(x64) & (np.abs(x64) < 2 ** 31) & ((x64 >= 0) | (dst not in UINTS))]
        if dst == ml_dtypes.float8_e8m0fnu:
            x = x[x.astype(np.float64) > 0] if len(x) else x  # negatives are undefined
        if dst in F8 and src in (F64,):
            pass
        for sat in ((1, 0) if dst in F8 else (None,)):
            attrs = {"to": onnx_type(dst)}
            if sat is not None:
                attrs["saturate"] = sat
            s.case("Cast", [x], attrs, 25, out_dtype=dst, tag=f"{np.dtype(src).name}_{np.dtype(dst).name}_{sat}",
                   tol=(0, 0) if dst not in FLOATS else tolerance(dst))
    x = np.array([0.1, 1, 3, 100, 1e-30, 2 ** 120, 7e37, 0.75, 1.5, 3.5], dtype=F32)
    for mode, sat in itertools.product(("up", "down", "nearest"), (0, 1)):
        s.case("Cast", [x], {"to": TensorProto.FLOAT8E8M0, "round_mode": mode, "saturate": sat}, 25,
               out_dtype=ml_dtypes.float8_e8m0fnu, tag=f"e8m0_{mode}_{sat}", tol=(0, 0))
    for dst in (F16, np.int32, ml_dtypes.float8_e4m3fn):
        x = values(F32)
        s.case("CastLike", [x[np.isfinite(x) & (np.abs(x) < 1e9)], np.zeros(0, dtype=dst)], {}, 21, out_dtype=dst,
               tag=np.dtype(dst).name,
               tol=(0, 0) if dst != F16 else tolerance(F16))


def main():
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser()
    ap.add_argument("braid")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--keep")
    ap.add_argument("-k", dest="only")
    a = ap.parse_args()
    root = a.keep or tempfile.mkdtemp(prefix="braid_elementwise_")
    os.makedirs(root, exist_ok=True)
    s = Sweep(a.braid, a.backend, root, a.only)
    for f in (unary_cases, activation_cases, binary_cases, cast_cases):
        f(s)
    for line in s.failed:
        print("FAILED", line)
    print(f"elementwise: {s.n} cases, {s.n - len(s.failed)} passed, {len(s.failed)} failed")
    if not a.keep:
        subprocess.run(["rm", "-rf", root])
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
