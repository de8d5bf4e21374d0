"""test_quant.py: braid's quantization ops against references, through the real
shared library (scripts/compare.py's ctypes wrapper).

- Single ops on random data: QuantizeLinear/DequantizeLinear (every layout, the
  narrow dtypes through a Q -> DQ chain), MatMulInteger and ConvInteger against
  exact integer arithmetic in numpy (int32 accumulation), QLinearMatMul and
  QLinearConv against onnx's reference, and the com.microsoft ops against
  onnxruntime. Integer results must be equal; the exceptions are stated where
  they are made.
- Whole models: small float CNNs and MLPs quantized by onnxruntime.quantization
  (quantize_dynamic; quantize_static in the QDQ and QOperator formats), braid
  against onnxruntime on the same inputs, with the tolerances stated in each test.
- Thread counts: the integer products give the same bits for 1 and 4 threads.

onnxruntime's x86 kernels for uint8 x int8 products can saturate 16-bit
intermediate sums (its documented "reduce_range" caveat), so against it the
signed-weight cases use reduce_range=True or symmetric int8 activations; braid's
uint8 x int8 results are checked against numpy instead.

Run: BRAID_LIB=build/libbraid.so .venv/bin/python tests/python/test_quant.py [-v]
     .venv/bin/python tests/python/test_quant.py --bench   (timings, braid vs onnxruntime)
"""
import os
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import compare  # noqa: E402

LIB = os.environ.get("BRAID_LIB", os.path.join(REPO, "build", "libbraid.so"))
TMP = tempfile.mkdtemp(prefix="braid_quant_")
TP = {np.dtype(k): v for k, v in [(np.float32, 1), (np.uint8, 2), (np.int8, 3), (np.uint16, 4), (np.int16, 5),
                                  (np.int32, 6), (np.bool_, 9), (np.float16, 10), (np.float64, 11)]}
_braid = None


def braid():
    global _braid
    if _braid is None:
        _braid = compare.Braid(LIB)
    return _braid


def make_model(nodes, feeds, inits, outs, opset=21, ms=False):
    """A model of nodes; feeds: name -> array (graph inputs); outs: [(name, elem_type)]."""
    g = helper.make_graph(nodes, "q", [helper.make_tensor_value_info(k, TP[v.dtype], list(v.shape)) for k, v in feeds.items()],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = 8
    return m


def run_braid(model, feeds, threads=2):
    path = os.path.join(TMP, "m.onnx")
    onnx.save(model, path)
    return braid().run(path, feeds, threads=threads)


def run_ort(model, feeds, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL, path=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    src = path or model.SerializeToString()
    s = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


def rand_int(rng, dt, shape):
    i = np.iinfo(dt)
    return rng.integers(i.min, i.max + 1, size=shape).astype(dt)


def wrap32(v):
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


class QuantizeDequantize(unittest.TestCase):
    """Q and DQ (and the narrow dtypes via Q -> DQ) against onnx's reference: equal."""

    def check(self, x, scale, zp, attrs, opset=25):
        inits = {"s": scale} if zp is None else {"s": scale, "z": zp}
        ins = ["x", "s"] + ([] if zp is None else ["z"])
        nodes = [helper.make_node("QuantizeLinear", ins, ["q"], **attrs),
                 helper.make_node("DequantizeLinear", ["q", "s"] + ins[2:], ["y"],
                                  **{k: v for k, v in attrs.items() if k in ("axis", "block_size")})]
        m = make_model(nodes, {"x": x}, inits, [("y", TP[scale.dtype])], opset=opset)
        want = ReferenceEvaluator(m).run(None, {"x": x})[0]
        got = run_braid(m, {"x": x})["y"]
        np.testing.assert_array_equal(got, want, err_msg=str(attrs))

    def test_layouts_and_dtypes(self):
        rng = np.random.default_rng(1)
        x = (rng.standard_normal((3, 4, 6)) * 40).astype(np.float32)
        x.flat[:6] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5]  # ties
        for dt in [np.uint8, np.int8, np.uint16, np.int16]:
            for layout in ["tensor", "axis", "blocked"]:
                if layout == "tensor":
                    shape, attrs = [], {}
                elif layout == "axis":
                    shape, attrs = [4], {"axis": -2}
                else:
                    shape, attrs = [3, 4, 2], {"axis": 2, "block_size": 4}
                s = (rng.random(shape) * 0.5 + 0.1).astype(np.float32)
                z = rand_int(rng, dt, shape) // 4
                self.check(x, s, z.astype(dt), attrs)
                self.check(x, s, None, dict(attrs, output_dtype=TP[np.dtype(dt)]))
        for name in ["INT4", "UINT4", "INT2", "UINT2", "FLOAT8E4M3FN", "FLOAT8E5M2", "FLOAT8E4M3FNUZ", "FLOAT4E2M1"]:
            dt = getattr(TensorProto, name)
            for sat in ([0, 1] if "FLOAT8" in name else [1]):
                attrs = {"axis": 1, "output_dtype": dt}
                if "FLOAT8" in name:
                    attrs["saturate"] = sat
                self.check(x, (rng.random(4) * 0.5 + 0.05).astype(np.float32), None, attrs)

    def test_float16_scales(self):
        rng = np.random.default_rng(2)
        x = (rng.standard_normal((2, 5, 3)) * 10).astype(np.float16)
        self.check(x, np.array([0.1, 0.2, 0.05, 0.3, 0.07], np.float16), np.arange(5, dtype=np.uint8) * 20,
                   {"axis": 1})


class IntegerProducts(unittest.TestCase):
    """MatMulInteger and ConvInteger against exact int32 arithmetic in numpy."""

    def test_matmul_integer(self):
        rng = np.random.default_rng(3)
        for it in range(40):
            ab = [int(v) for v in rng.integers(1, 3, size=rng.integers(0, 3))]
            bb = [1 if rng.random() < 0.3 else d for d in ab[len(ab) - int(rng.integers(0, len(ab) + 1)):]]
            m, k, n = (int(v) for v in rng.integers(1, 33, size=3))
            if it % 10 == 0:
                k = 3000  # longer than one exact float chunk
            at, bt = (np.uint8, np.int8)[it % 2], (np.uint8, np.int8)[(it // 2) % 2]
            a, b = rand_int(rng, at, ab + [m, k]), rand_int(rng, bt, bb + [k, n])
            mode = it % 3
            az = rand_int(rng, at, [] if mode == 0 else [m] if mode == 1 else ab + [m, 1])
            bz = rand_int(rng, bt, [] if mode == 0 else [n] if mode == 1 else bb + [1, n])
            node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
            mdl = make_model([node], {"a": a, "b": b}, {"az": az, "bz": bz}, [("y", TensorProto.INT32)], opset=10)
            za = az.astype(np.int64).reshape(m, 1) if az.ndim == 1 else az.astype(np.int64)
            want = wrap32(np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - bz.astype(np.int64)))
            for threads in (1, 4):
                got = run_braid(mdl, {"a": a, "b": b}, threads=threads)["y"]
                np.testing.assert_array_equal(got, want, err_msg=f"{a.shape} {b.shape} {az.shape} threads {threads}")

    def test_conv_integer(self):
        rng = np.random.default_rng(4)
        for it in range(40):
            nsp = 1 + it % 3
            group = int(rng.choice([1, 2, 3]))
            cg, mg = (1, int(rng.integers(1, 3))) if it % 4 == 0 else (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
            ks = [int(v) for v in rng.integers(1, 4, size=nsp)]
            xs = [int(v) for v in rng.integers(4, 8, size=nsp)]
            attrs = {"group": group, "strides": [int(v) for v in rng.integers(1, 3, size=nsp)],
                     "dilations": [int(v) for v in rng.integers(1, 3, size=nsp)]}
            if it % 5 == 1:
                attrs["auto_pad"] = ["SAME_UPPER", "SAME_LOWER", "VALID"][it % 3]
            else:
                attrs["pads"] = [int(v) for v in rng.integers(0, 3, size=2 * nsp)]
            xt, wt = (np.uint8, np.int8)[it % 2], (np.uint8, np.int8)[(it // 2) % 2]
            x = rand_int(rng, xt, [2, cg * group] + xs)
            w = rand_int(rng, wt, [mg * group, cg] + ks)
            xz, wz = rand_int(rng, xt, []), rand_int(rng, wt, [mg * group] if it % 2 else [])
            # the reference: a float64 Conv of the shifted operands (exact for these sizes)
            wzb = wz.astype(np.float64).reshape([-1] + [1] * (nsp + 1)) if wz.ndim else wz.astype(np.float64)
            ref = make_model([helper.make_node("Conv", ["x", "w"], ["y"], **attrs)],
                             {"x": x.astype(np.float64) - xz}, {"w": w.astype(np.float64) - wzb},
                             [("y", TensorProto.DOUBLE)], opset=17)
            try:
                want = ReferenceEvaluator(ref).run(None, {"x": x.astype(np.float64) - xz})[0]
            except Exception:
                continue  # a kernel larger than the padded input
            node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)
            mdl = make_model([node], {"x": x}, {"w": w, "xz": xz, "wz": wz}, [("y", TensorProto.INT32)], opset=10)
            for threads in (1, 4):
                got = run_braid(mdl, {"x": x}, threads=threads)["y"]
                np.testing.assert_array_equal(got, want.astype(np.int32), err_msg=f"{attrs} {x.shape} {w.shape}")


class QLinearOnnx(unittest.TestCase):
    """QLinearMatMul and QLinearConv against onnx's reference: equal."""

    def test_qlinear_matmul(self):
        rng = np.random.default_rng(5)
        for it in range(20):
            dt = (np.uint8, np.int8)[it % 2]
            a, b = rand_int(rng, dt, [2, 5, 17]), rand_int(rng, dt, [17, 6])
            sdt = np.float16 if it % 4 >= 2 else np.float32
            inits = {"as": np.array([0.02], sdt), "az": rand_int(rng, dt, [1]) // 2, "b": b,
                     "bs": np.array([0.03], sdt), "bz": rand_int(rng, dt, [1]) // 2, "ys": np.array([0.7], sdt),
                     "yz": rand_int(rng, dt, [1]) // 2}
            node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
            m = make_model([node], {"a": a}, inits, [("y", TP[np.dtype(dt)])], opset=21)
            np.testing.assert_array_equal(run_braid(m, {"a": a})["y"], ReferenceEvaluator(m).run(None, {"a": a})[0])

    def test_qlinear_conv(self):
        rng = np.random.default_rng(6)
        for it in range(20):
            dt = (np.uint8, np.int8)[it % 2]
            group = 1 + it % 2
            x, w = rand_int(rng, dt, [1, 4, 7, 6]), rand_int(rng, np.int8 if dt == np.int8 else np.uint8, [6, 4 // group, 3, 3])
            inits = {"xs": np.array(0.05, np.float32), "xz": rand_int(rng, dt, []) // 2, "w": w,
                     "ws": (rng.random(6) * 0.02 + 0.005).astype(np.float32), "wz": np.zeros(6, w.dtype),
                     "ys": np.array(0.3, np.float32), "yz": rand_int(rng, dt, []) // 2,
                     "B": rng.integers(-500, 500, 6).astype(np.int32)}
            node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"], ["y"],
                                    pads=[1, 0, 1, 2], strides=[1, 2], group=group)
            m = make_model([node], {"x": x}, inits, [("y", TP[np.dtype(dt)])], opset=10)
            np.testing.assert_array_equal(run_braid(m, {"x": x})["y"], ReferenceEvaluator(m).run(None, {"x": x})[0])


class MicrosoftOps(unittest.TestCase):
    """com.microsoft ops against onnxruntime (its kernels, optimizations off): equal
    integers, floats within 1e-5 relative, except QLinearSigmoid where braid's expf
    and onnxruntime's approximation may round one code apart."""

    def compare(self, op, order, feeds, inits, out_type, tol=0, **attrs):
        node = helper.make_node(op, order, ["y"], domain="com.microsoft", **attrs)
        m = make_model([node], feeds, inits, [("y", out_type)], opset=17, ms=True)
        want = run_ort(m, feeds)["y"]
        got = run_braid(m, feeds)["y"]
        self.assertEqual(got.shape, want.shape, op)
        if want.dtype == np.float32:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max())),
                                       err_msg=f"{op} {attrs}")
        else:
            diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
            self.assertLessEqual(int(diff.max(initial=0)), tol, f"{op} {attrs}")

    def test_products(self):
        rng = np.random.default_rng(7)
        for it in range(12):
            m, k, n = (int(v) for v in rng.integers(1, 40, size=3))
            at = (np.uint8, np.int8)[it % 2]  # u8 x u8 and s8 x s8: no saturation in onnxruntime
            a = rand_int(rng, at, [2, m, k])
            b = rand_int(rng, at, [k, n])
            bz = rand_int(rng, at, [n]) if at == np.uint8 else np.zeros(n, at)
            inits = {"b": b, "as": np.array(0.03, np.float32), "bs": (rng.random(n) * 0.02 + 0.001).astype(np.float32),
                     "az": rand_int(rng, at, []), "bz": bz, "bias": rng.standard_normal(n).astype(np.float32)}
            self.compare("MatMulIntegerToFloat", ["a", "b", "as", "bs", "az", "bz", "bias"], {"a": a}, inits, 1)
            f = rng.standard_normal((3, m, k)).astype(np.float32)
            b8 = rand_int(rng, np.uint8, [k, n])
            self.compare("DynamicQuantizeMatMul", ["f", "b", "bs", "bz", "bias"], {"f": f},
                         {"b": b8, "bs": inits["bs"], "bz": rand_int(rng, np.uint8, [n]), "bias": inits["bias"]}, 1)
            ta, tb = it % 2, (it // 2) % 2
            a2 = rand_int(rng, at, [k, m] if ta else [m, k])
            b2 = rand_int(rng, at, [n, k] if tb else [k, n])
            qi = {"as": np.array(0.02, np.float32), "az": rand_int(rng, at, []), "b": b2,
                  "bs": np.array(0.01, np.float32), "bz": np.zeros([], at), "c": rng.integers(-999, 999, n).astype(np.int32)}
            order = ["a", "as", "az", "b", "bs", "bz", "c"]
            if it % 3:
                qi.update(ys=np.array(0.4, np.float32), yz=rand_int(rng, at, []) // 2)
                order += ["ys", "yz"]
            self.compare("QGemm", order, {"a": a2}, qi, TP[np.dtype(at)] if it % 3 else 1, transA=ta, transB=tb,
                         alpha=[1.0, 0.5][it % 2])

    def test_elementwise_and_pools(self):
        rng = np.random.default_rng(8)
        for dt in (np.uint8, np.int8):
            t = TP[np.dtype(dt)]
            z = lambda: (rand_int(rng, dt, []) // 2).astype(dt)  # noqa: E731
            s = lambda v: np.array(v, np.float32)  # noqa: E731
            a, b, x = rand_int(rng, dt, [2, 3, 4, 5]), rand_int(rng, dt, [3, 1, 5]), rand_int(rng, dt, [2, 3, 7, 6])
            for op in ("QLinearAdd", "QLinearMul"):
                self.compare(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], {"a": a, "b": b},
                             {"as": s(0.05), "az": z(), "bs": s(0.03), "bz": z(), "cs": s(0.07), "cz": z()}, t)
            un = {"xs": s(0.05), "xz": z(), "ys": s(0.04), "yz": z()}
            self.compare("QLinearLeakyRelu", ["x", "xs", "xz", "ys", "yz"], {"x": x}, un, t, alpha=0.1)
            self.compare("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], {"x": x},
                         dict(un, ys=s(1 / 256), yz=np.array(0 if dt == np.uint8 else -128, dt)), t, tol=1)
            for cl in (0, 1):
                self.compare("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], {"x": x}, un, t,
                             channels_last=cl)
            for attrs in [dict(kernel_shape=[3, 3]), dict(kernel_shape=[3, 2], strides=[2, 2], pads=[1, 1, 1, 0]),
                          dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
                          dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                          dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER"), dict(kernel_shape=[2, 2], channels_last=1)]:
                self.compare("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], {"x": x}, un, t, **attrs)
            x1, x2 = rand_int(rng, dt, [2, 3, 4]), rand_int(rng, dt, [2, 5, 4])
            self.compare("QLinearConcat", ["ys", "yz", "x1", "s1", "z1", "x2", "s2", "z2"], {"x1": x1, "x2": x2},
                         {"ys": s(0.05), "yz": z(), "s1": s(0.05), "z1": z(), "s2": s(0.08), "z2": z()}, t, axis=1)
            for axis in (-1, 1):
                self.compare("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], {"x": x},
                             dict(un, ys=s(1 / 256), yz=np.array(0 if dt == np.uint8 else -128, dt)), t, axis=axis,
                             opset=13)
            c = rng.random((3, 1, 5)) < 0.5
            self.compare("QLinearWhere", ["c", "a", "as", "az", "b", "bs", "bz", "cs", "cz"], {"c": c, "a": a, "b": b},
                         {"as": s(0.05), "az": z(), "bs": s(0.03), "bz": z(), "cs": s(0.07), "cz": z()}, t)


    def test_qembed_layer_norm(self):
        rng = np.random.default_rng(9)
        for dt, seg in ((np.uint8, True), (np.int8, False)):
            b, s, h, vocab = 2, 7, 24, 30
            ids = rng.integers(0, vocab, (b, s)).astype(np.int32)
            mask = (rng.random((b, s)) < 0.7).astype(np.int32)
            feeds = {"ids": ids, "mask": mask}
            inits = {"word": rand_int(rng, dt, [vocab, h]), "pos": rand_int(rng, dt, [16, h]),
                     "gamma": rand_int(rng, dt, [h]), "beta": rand_int(rng, dt, [h])}
            for i, n in enumerate(["word", "pos", "seg", "gamma", "beta"]):
                inits[n + "_s"] = np.array(0.01 * (i + 1), np.float32)
                inits[n + "_z"] = (rand_int(rng, dt, []) // 4).astype(dt)
            if seg:
                feeds["seg_ids"] = rng.integers(0, 2, (b, s)).astype(np.int32)
                inits["seg"] = rand_int(rng, dt, [2, h])
            order = ["ids", "seg_ids" if seg else "", "word", "pos", "seg" if seg else "", "gamma", "beta", "mask"]
            order += [n + "_s" if n != "seg" or seg else "" for n in ["word", "pos", "seg", "gamma", "beta"]]
            order += [n + "_z" if n != "seg" or seg else "" for n in ["word", "pos", "seg", "gamma", "beta"]]
            if not seg:
                del inits["seg_s"], inits["seg_z"]
            node = helper.make_node("QEmbedLayerNormalization", order, ["y", "mi"], domain="com.microsoft", epsilon=1e-5)
            m = make_model([node], feeds, inits, [("y", 1), ("mi", TensorProto.INT32)], opset=17, ms=True)
            want, got = run_ort(m, feeds), run_braid(m, feeds)
            np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(got["mi"], want["mi"])


# ---- whole models quantized by onnxruntime.quantization -----------------------------------------------

def weight(rng, name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def cnn_model(path, maxpool=True, batch=1, size=16, width=8):
    """Conv -> Relu -> depthwise Conv -> Relu -> (MaxPool | stride-2 Conv) -> two 1x1 Convs (SiLU
    and a residual Add) -> AveragePool -> GlobalAveragePool -> Gemm."""
    rng = np.random.default_rng(10)
    c = width
    ws = [weight(rng, "w1", c, 3, 3, 3), weight(rng, "b1", c), weight(rng, "w2", c, 1, 3, 3),
          weight(rng, "w3", 2 * c, c, 1, 1), weight(rng, "b3", 2 * c), weight(rng, "w4", 2 * c, c, 1, 1),
          weight(rng, "wd", c, c, 3, 3), weight(rng, "wf", 10, 2 * c), weight(rng, "bf", 10)]
    down = (helper.make_node("MaxPool", ["r2"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]) if maxpool else
            helper.make_node("Conv", ["r2", "wd"], ["p2"], pads=[1, 1, 1, 1], strides=[2, 2]))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=c),
             helper.make_node("Relu", ["c2"], ["r2"]), down,
             helper.make_node("Conv", ["p2", "w3", "b3"], ["c3"]),
             helper.make_node("Sigmoid", ["c3"], ["s3"]), helper.make_node("Mul", ["c3", "s3"], ["m3"]),
             helper.make_node("Conv", ["p2", "w4"], ["c4"]), helper.make_node("Add", ["m3", "c4"], ["a4"]),
             helper.make_node("AveragePool", ["a4"], ["ap"], kernel_shape=[2, 2]),
             helper.make_node("GlobalAveragePool", ["ap"], ["g"]), helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", 1, [batch, 3, size, size])],
                          [helper.make_tensor_value_info("y", 1, None)], ws)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def mlp_model(path, seq=8, dim=64, hidden=256):
    """A transformer-style feed-forward block: MatMul -> Add -> Relu -> MatMul -> Add, residual, MatMul."""
    rng = np.random.default_rng(11)
    ws = [weight(rng, "w1", dim, hidden), weight(rng, "b1", hidden), weight(rng, "w2", hidden, dim),
          weight(rng, "b2", dim), weight(rng, "w3", dim, 16)]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["o"]),
             helper.make_node("Add", ["o", "b2"], ["ob"]), helper.make_node("Add", ["ob", "x"], ["res"]),
             helper.make_node("MatMul", ["res", "w3"], ["y"])]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", 1, [1, seq, dim])],
                          [helper.make_tensor_value_info("y", 1, None)], ws)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


class Reader:
    def __init__(self, shape, n=8):
        rng = np.random.default_rng(12)
        self.data = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def quantized(kind, builder, shape, model=None, **opts):
    """Builds the float model (builder's keywords: model) and quantizes it: kind 'dynamic', 'qdq' or 'qop'."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static
    src = os.path.join(TMP, f"{builder.__name__}_{kind}_float.onnx")
    dst = os.path.join(TMP, f"{builder.__name__}_{kind}.onnx")
    builder(src, **(model or {}))
    if kind == "dynamic":
        quantize_dynamic(src, dst, weight_type=opts.pop("weight_type", QuantType.QUInt8), **opts)
    else:
        quantize_static(src, dst, Reader(shape), quant_format=QuantFormat.QDQ if kind == "qdq" else QuantFormat.QOperator,
                        **opts)
    return dst


class QuantizedModels(unittest.TestCase):
    """Models from onnxruntime.quantization, braid against onnxruntime."""

    def check(self, path, shape, atol_steps=0.0, rtol=1e-5, level=ort.GraphOptimizationLevel.ORT_DISABLE_ALL):
        rng = np.random.default_rng(13)
        x = rng.standard_normal(shape).astype(np.float32)
        want = run_ort(None, {"x": x}, level=level, path=path)["y"]
        got = run_braid(onnx.load(path), {"x": x})["y"]
        # atol in units of the model's last quantization step (its output DequantizeLinear's scale), if any
        atol = atol_steps * self.output_step(path) + 1e-5 * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=os.path.basename(path))
        return np.abs(got - want).max()

    def test_dynamic(self):
        from onnxruntime.quantization import QuantType
        # ConvInteger, MatMulInteger, DynamicQuantizeLinear: uint8 weights, and int8 weights in 7 bits
        for wt, rr in ((QuantType.QUInt8, False), (QuantType.QInt8, True)):
            self.check(quantized("dynamic", cnn_model, [1, 3, 16, 16], weight_type=wt, reduce_range=rr), [1, 3, 16, 16])
            self.check(quantized("dynamic", mlp_model, [1, 8, 64], weight_type=wt, reduce_range=rr), [1, 8, 64])
        # onnxruntime's own fusion of the same model (DynamicQuantizeMatMul, MatMulIntegerToFloat) at level 'all'
        path = quantized("dynamic", mlp_model, [1, 8, 64], weight_type=QuantType.QUInt8)
        fused = path.replace(".onnx", "_ortopt.onnx")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.optimized_model_filepath = fused
        ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        ops = {n.op_type for n in onnx.load(fused).graph.node}
        self.assertTrue(ops & {"DynamicQuantizeMatMul", "MatMulIntegerToFloat"}, ops)
        self.check(fused, [1, 8, 64])

    def test_static_qdq(self):
        # braid runs QDQ as written (float ops between exact Q/DQ roundings, the weights' DQ folded when the
        # plan is made): onnxruntime without its QDQ fusions agrees to float rounding. With them it runs
        # integer kernels (QLinearConv, QLinearSigmoid's approximation...) that round differently inside,
        # so there the bound is statistical: cosine >= 0.999 and at most 8 output steps anywhere.
        for builder, shape in ((cnn_model, [1, 3, 16, 16]), (mlp_model, [1, 8, 64])):
            path = quantized("qdq", builder, shape)
            self.check(path, shape, rtol=1e-4)
            x = np.random.default_rng(13).standard_normal(shape).astype(np.float32)
            fused = run_ort(None, {"x": x}, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL, path=path)["y"]
            got = run_braid(onnx.load(path), {"x": x})["y"].astype(np.float64).ravel()
            f = fused.astype(np.float64).ravel()
            self.assertGreaterEqual(got @ f / (np.linalg.norm(got) * np.linalg.norm(f)), 0.999)
            step = self.output_step(path)
            self.assertLessEqual(np.abs(got - f).max(), 8 * step + 1e-6)

    @staticmethod
    def output_step(path):
        """The scale of the DequantizeLinear that makes the model's output (0 when none does)."""
        m = onnx.load(path)
        inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
        for n in m.graph.node:
            if n.op_type == "DequantizeLinear" and n.output[0] == "y":
                return float(inits[n.input[1]])
        return 0.0

    def test_static_qoperator(self):
        # QLinearConv, QGemm, QLinearAdd/Mul/Sigmoid/(Global)AveragePool, QLinearMatMul; int8 activations
        # and weights (no uint8 x int8 saturation in onnxruntime): within one output step. (MaxPool on 8-bit
        # data is the pool family's, so the CNN downsamples with a strided Conv here.)
        self.check(quantized("qop", cnn_model, [1, 3, 16, 16], model={"maxpool": False}), [1, 3, 16, 16], atol_steps=1.0, rtol=0)
        self.check(quantized("qop", mlp_model, [1, 8, 64]), [1, 8, 64], atol_steps=1.0, rtol=0)


def bench():
    """Median latency of braid (braid bench, serial plan) and onnxruntime (all optimizations) on quantized
    models built here: a CNN (width 32, batch 4, 64x64) and a feed-forward block (seq 128, 256 -> 1024)."""
    from onnxruntime.quantization import QuantType
    cnn = {"batch": 4, "size": 64, "width": 32}
    mlp = {"seq": 128, "dim": 256, "hidden": 1024}
    cs, ms = [4, 3, 64, 64], [1, 128, 256]
    models = [("cnn dynamic u8", quantized("dynamic", cnn_model, cs, model=cnn, weight_type=QuantType.QUInt8), cs),
              ("cnn qop s8", quantized("qop", cnn_model, cs, model=dict(cnn, maxpool=False)), cs),
              ("cnn qdq s8", quantized("qdq", cnn_model, cs, model=cnn), cs),
              ("mlp dynamic u8", quantized("dynamic", mlp_model, ms, model=mlp, weight_type=QuantType.QUInt8), ms),
              ("mlp qop s8", quantized("qop", mlp_model, ms, model=mlp), ms),
              ("mlp qdq s8", quantized("qdq", mlp_model, ms, model=mlp), ms)]
    exe = os.path.join(os.path.dirname(LIB), "braid")
    for name, path, shape in models:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        for threads in (1, 2):
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            t = []
            for _ in range(40):
                t0 = time.perf_counter()
                s.run(None, {"x": x})
                t.append(time.perf_counter() - t0)
            out = os.popen(f"{exe} bench {path} --iterations 30 --warmup 5 --threads {threads} --streams 1 2>&1").read()
            got = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.split()[:1] in (["min"], ["median"])}
            print(f"{name:15s} threads {threads}: onnxruntime min {min(t[10:]) * 1e3:8.3f} median "
                  f"{np.median(t[10:]) * 1e3:8.3f} ms | braid min {got.get('min', '?'):>8s} median "
                  f"{got.get('median', '?'):>8s} ms")


if __name__ == "__main__":
    if "--bench" in sys.argv:
        bench()
    else:
        unittest.main()
