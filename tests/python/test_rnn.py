"""test_rnn.py: LSTM, GRU, RNN and com.microsoft DynamicQuantizeLSTM through braid's
shared library (ctypes, via scripts/compare.py), against three references:
  - a double-precision numpy implementation of the ONNX spec below (every attribute),
  - onnxruntime (float, layout 0: what its CPU kernels run; DynamicQuantizeLSTM),
  - onnx's reference implementation, onnx.reference.ReferenceEvaluator (it ignores
    sequence_lens, clip, activations and input_forget, so only cases without them).
Every case runs at --streams 1, 2 and 0 (automatic); the three must give the same bits.
Models come from onnx.helper with a mix of initializer and graph-input weights.

Tolerances (|braid - ref| <= atol + rtol * |ref|):
  float32: atol 2e-5, rtol 2e-5 against the double reference and onnxruntime;
  float64: 1e-10 against the double reference;
  float16 / bfloat16: braid computes in float32 and rounds each output once, so
    against the double reference rounded the same way: 1 (float16) or 2 (bfloat16)
    units in the last place of the output, at most 4e-3 / 3e-2 relative;
  DynamicQuantizeLSTM against onnxruntime (one intra-op thread): 2e-4 absolute, with
    uint8 weights and int8 weights within [-64, 63] (the integer sums are exact on both
    sides; the float rounding of the scales and gates differs). Beyond that range
    onnxruntime's AVX2 u8s8 kernel saturates pairs of products in int16 (CPUs without
    VNNI), so a model from its quantizer is checked against the float LSTM on the
    dequantized weights instead: 0.03 absolute (the quantization of X and the state).
Run: BRAID_LIB=build/libbraid.so .venv/bin/python tests/python/test_rnn.py
"""
import itertools
import os
import re
import subprocess
import sys
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
TMP = os.environ.get("BRAID_TEST_TMP", "/tmp")
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
N_ACTS = {"LSTM": 3, "GRU": 2, "RNN": 1}
DEFAULT_ACTS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"], "RNN": ["Tanh"]}
# alpha/beta each function takes, and their defaults (those of the ONNX ops)
ACT_PARAMS = {"Affine": (1.0, 0.0), "LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None),
              "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5), "Elu": (1.0, None)}
ALL_ACTS = ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
            "HardSigmoid", "Elu", "Softsign", "Softplus"]


# ---- the double-precision reference ---------------------------------------------------

def act(name, a, b, x):
    if name == "Relu": return np.maximum(x, 0)
    if name == "Tanh": return np.tanh(x)
    if name == "Sigmoid": return 1 / (1 + np.exp(-x))
    if name == "Affine": return a * x + b
    if name == "LeakyRelu": return np.where(x >= 0, x, a * x)
    if name == "ThresholdedRelu": return np.where(x > a, x, 0)
    if name == "ScaledTanh": return a * np.tanh(b * x)
    if name == "HardSigmoid": return np.clip(a * x + b, 0, 1)
    if name == "Elu": return np.where(x >= 0, x, a * (np.exp(x) - 1))
    if name == "Softsign": return x / (1 + np.abs(x))
    if name == "Softplus": return np.where(x > 30, x, np.log1p(np.exp(np.minimum(x, 30))))
    raise ValueError(name)


def resolve_acts(op, dirs, acts, alphas, betas):
    """[(name, alpha, beta)] per direction: alphas/betas consumed in order by the
    functions that take them, ONNX defaults after that."""
    per = N_ACTS[op]
    acts = acts or DEFAULT_ACTS[op] * dirs
    shared = dirs == 2 and len(acts) == per
    alphas, betas = list(alphas or []), list(betas or [])
    out = []
    for name in acts:
        da, db = ACT_PARAMS.get(name, (0.0, None))
        a = alphas.pop(0) if name in ACT_PARAMS and alphas else da
        b = betas.pop(0) if name in ACT_PARAMS and ACT_PARAMS[name][1] is not None and betas else (db or 0.0)
        out.append((name, float(np.float32(a)), float(np.float32(b))))
    if shared:
        out = out * 2
    return [out[d * per:(d + 1) * per] for d in range(dirs)]


def reference(op, attrs, feeds, quant=False):
    """Y, Y_h, Y_c (float64) of one LSTM/GRU/RNN node by the spec, step by step."""
    layout = attrs.get("layout", 0)
    direction = attrs.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    X = feeds["X"].astype(np.float64)
    if layout:
        X = X.transpose(1, 0, 2)
    seq, batch, _ = X.shape
    if quant:  # DynamicQuantizeLSTM: dequantized weights, back to LSTM's layout
        def deq(w, s, z):
            s = s.reshape(dirs, 1, -1)
            z = z.astype(np.float64).reshape(dirs, 1, -1)
            return ((w.astype(np.float64) - z) * s).transpose(0, 2, 1)
        W = deq(feeds["W"], feeds["W_scale"], feeds["W_zero_point"])
        R = deq(feeds["R"], feeds["R_scale"], feeds["R_zero_point"])
    else:
        W, R = feeds["W"].astype(np.float64), feeds["R"].astype(np.float64)
    H = R.shape[-1]
    G = GATES[op]
    B = feeds.get("B")
    B = np.zeros((dirs, 2 * G * H)) if B is None else B.astype(np.float64)
    lens = feeds.get("sequence_lens")
    lens = np.full(batch, seq) if lens is None else lens
    st = {}
    for name in ("initial_h", "initial_c"):
        v = feeds.get(name)
        v = np.zeros((dirs, batch, H)) if v is None else v.astype(np.float64)
        st[name] = v.transpose(1, 0, 2) if layout and feeds.get(name) is not None else v
    P = feeds.get("P")
    P = np.zeros((dirs, 3 * H)) if P is None else P.astype(np.float64)
    fns = resolve_acts(op, dirs, attrs.get("activations"), attrs.get("activation_alpha"), attrs.get("activation_beta"))
    clip = attrs.get("clip")
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    Y = np.zeros((seq, dirs, batch, H))
    Yh = np.zeros((dirs, batch, H))
    Yc = np.zeros((dirs, batch, H))
    for d in range(dirs):
        rev = direction == "reverse" or d == 1
        f = [lambda v, t=t: act(t[0], t[1], t[2], v) for t in fns[d]]
        Wb, Rb = B[d, :G * H], B[d, G * H:]
        for b in range(batch):
            h = st["initial_h"][d, b].copy()
            c = st["initial_c"][d, b].copy()
            n = int(lens[b])
            for s in range(n):
                t = n - 1 - s if rev else s
                x = X[t, b]
                if op == "LSTM":
                    g = W[d] @ x + R[d] @ h + Wb + Rb
                    gi, go, gf, gc = np.split(g, 4)
                    pi, po, pf = np.split(P[d], 3)
                    i = f[0](cl(gi + pi * c))
                    fg = 1 - i if attrs.get("input_forget") else f[0](cl(gf + pf * c))
                    c = fg * c + i * f[1](cl(gc))
                    o = f[0](cl(go + po * c))
                    h = o * f[2](c)
                elif op == "GRU":
                    xw = W[d] @ x
                    z = f[0](cl(xw[:H] + R[d][:H] @ h + Wb[:H] + Rb[:H]))
                    r = f[0](cl(xw[H:2 * H] + R[d][H:2 * H] @ h + Wb[H:2 * H] + Rb[H:2 * H]))
                    if attrs.get("linear_before_reset"):
                        hh = f[1](cl(xw[2 * H:] + r * (R[d][2 * H:] @ h + Rb[2 * H:]) + Wb[2 * H:]))
                    else:
                        hh = f[1](cl(xw[2 * H:] + R[d][2 * H:] @ (r * h) + Rb[2 * H:] + Wb[2 * H:]))
                    h = (1 - z) * hh + z * h
                else:
                    h = f[0](cl(W[d] @ x + R[d] @ h + Wb + Rb))
                Y[t, d, b] = h
            Yh[d, b] = h if n else 0
            Yc[d, b] = c if n else 0
    if layout:
        return Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    return Y, Yh, Yc


# ---- models --------------------------------------------------------------------------

NP = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16}


def make_case(op, dtype=TensorProto.FLOAT, seq=4, batch=3, isz=5, H=6, direction="forward", layout=0,
              bias=True, lens=None, init_h=False, init_c=False, peep=False, outputs=(1, 1, 1), const_weights=True,
              opset=22, seed=0, **attrs):
    """(model, feeds, attrs) of one node with the given attributes; weights as
    initializers (const_weights) or graph inputs."""
    rng = np.random.default_rng(seed)
    G, dirs = GATES[op], 2 if direction == "bidirectional" else 1
    npdt = NP.get(dtype, np.float32)
    xs = (batch, seq, isz) if layout else (seq, batch, isz)
    hs = (batch, dirs, H) if layout else (dirs, batch, H)
    feeds = {"X": rng.uniform(-1, 1, xs), "W": rng.uniform(-0.6, 0.6, (dirs, G * H, isz)),
             "R": rng.uniform(-0.6, 0.6, (dirs, G * H, H))}
    if bias: feeds["B"] = rng.uniform(-0.5, 0.5, (dirs, 2 * G * H))
    if lens is not None: feeds["sequence_lens"] = np.array(lens, np.int32)
    if init_h: feeds["initial_h"] = rng.uniform(-1, 1, hs)
    if init_c: feeds["initial_c"] = rng.uniform(-1, 1, hs)
    if peep: feeds["P"] = rng.uniform(-0.5, 0.5, (dirs, 3 * H))
    for k in feeds:
        if k != "sequence_lens": feeds[k] = feeds[k].astype(npdt)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"][:{"LSTM": 8}.get(op, 6)]
    names = [k if k in feeds else "" for k in order]
    while names and not names[-1]: names.pop()
    outs = [n if keep else "" for n, keep in zip(["Y", "Y_h", "Y_c"][:3 if op == "LSTM" else 2], outputs)]
    a = dict(attrs, hidden_size=H, layout=layout, direction=direction)
    if opset < 14: a.pop("layout")
    node = helper.make_node(op, names, outs, name="rnn", **a)
    ins, inits = [], []
    for k in names:
        if not k: continue
        t = dtype if k != "sequence_lens" else TensorProto.INT32
        if const_weights and k in ("W", "R", "B", "P"):
            inits.append(numpy_helper.from_array(feeds[k], k))
        else:
            ins.append(helper.make_tensor_value_info(k, t, list(feeds[k].shape)))
    g = helper.make_graph([node], "rnn", ins, [helper.make_tensor_value_info(o, dtype, None) for o in outs if o],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    a["layout"] = layout
    return m, feeds, a


class Runner:
    braid = None

    @classmethod
    def get(cls):
        if cls.braid is None:
            cls.braid = compare.Braid(LIB)
        return cls.braid


def save(m, name):
    path = os.path.join(TMP, f"test_rnn_{name}.onnx")
    onnx.save(m, path)
    return path


def run_braid(path, feeds, graph_inputs):
    """Outputs at --streams 1, 2, 0 (two intra-op threads in all); asserts the
    three are bitwise equal. With BRAID_TEST_CUDA=1, the CUDA backend too, within
    1e-4 of the CPU (float32 and float64) or 2e-3 (float16)."""
    b = Runner.get()
    f = {k: feeds[k] for k in graph_inputs}
    res = [b.run(path, f, "cpu", streams, 2) for streams in (1, 2, 0)]
    for other in res[1:]:
        for k in res[0]:
            np.testing.assert_array_equal(res[0][k].view(np.uint8), other[k].view(np.uint8),
                                          err_msg=f"{k}: streams differ")
    if os.environ.get("BRAID_TEST_CUDA") == "1":
        for streams in (1, 0):
            cu = b.run(path, f, "cuda", streams, 2)
            for k in res[0]:
                tol = 2e-3 if res[0][k].dtype == np.float16 else 1e-4
                np.testing.assert_allclose(cu[k].astype(np.float64), res[0][k].astype(np.float64), atol=tol,
                                           rtol=tol, err_msg=f"{k}: CUDA (streams {streams}) against the CPU")
    return res[0]


def close(tc, got, want, atol, rtol, what):
    got = got.astype(np.float64)
    tc.assertEqual(got.shape, want.shape, what)
    err = np.abs(got - want) - (atol + rtol * np.abs(want))
    tc.assertTrue(np.all(err <= 0), f"{what}: max excess {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}")


def graph_inputs(m):
    return [i.name for i in m.graph.input]


TOL = {TensorProto.FLOAT: (2e-5, 2e-5), TensorProto.DOUBLE: (1e-10, 1e-10)}


class RnnTest(unittest.TestCase):
    def check(self, op, name, ort_ok=True, onnx_ref_ok=False, dtype=TensorProto.FLOAT, **kw):
        m, feeds, attrs = make_case(op, dtype=dtype, **kw)
        path = save(m, name)
        got = run_braid(path, feeds, graph_inputs(m))
        ref = reference(op, attrs, feeds)
        outs = [o for o in m.graph.node[0].output]
        for i, o in enumerate(outs):
            if not o: continue
            want = ref[i]
            if dtype == TensorProto.FLOAT16:
                want16 = want.astype(np.float16).astype(np.float64)
                close(self, got[o], want16, 1e-3, 4e-3, f"{name} {o} vs reference")
            else:
                close(self, got[o], want, *TOL[dtype], f"{name} {o} vs reference")
        if ort_ok and dtype == TensorProto.FLOAT and kw.get("layout", 0) == 0:
            s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
            r = dict(zip([o.name for o in s.get_outputs()], s.run(None, {k: feeds[k] for k in graph_inputs(m)})))
            for o in outs:
                if o: close(self, got[o], r[o].astype(np.float64), 2e-5, 2e-5, f"{name} {o} vs onnxruntime")
        if onnx_ref_ok:
            r = ReferenceEvaluator(m).run(None, {k: feeds[k] for k in graph_inputs(m)})
            for o, v in zip([o for o in outs if o], r):
                tol = (2e-5, 2e-5) if dtype != TensorProto.FLOAT16 else (2e-2, 2e-2)
                close(self, got[o], v.astype(np.float64), *tol, f"{name} {o} vs onnx reference")
        return got

    def test_directions_layouts_states(self):
        for op, direction, layout, init in itertools.product(GATES, ["forward", "reverse", "bidirectional"], [0, 1],
                                                             [False, True]):
            with self.subTest(op=op, direction=direction, layout=layout, init=init):
                self.check(op, f"{op}_{direction}_{layout}_{init}", direction=direction, layout=layout,
                           init_h=init, init_c=init and op == "LSTM", peep=init and op == "LSTM",
                           const_weights=not init, onnx_ref_ok=True)

    def test_sequence_lens(self):
        for op, direction, layout in itertools.product(GATES, ["forward", "reverse", "bidirectional"], [0, 1]):
            for lens in ([4, 2, 0], [1, 4, 3], [4, 4, 4]):
                with self.subTest(op=op, direction=direction, layout=layout, lens=lens):
                    # (onnxruntime's RNN reads outside Y for Y_h of an entry of length 0)
                    self.check(op, f"{op}_lens_{direction}_{layout}", direction=direction, layout=layout, lens=lens,
                               init_h=True, init_c=op == "LSTM", ort_ok=not (op == "RNN" and 0 in lens))

    def test_activations_and_clip(self):
        rng = np.random.default_rng(5)
        for op in GATES:
            for trial in range(8):
                dirs = 1 + trial % 2
                acts = [ALL_ACTS[i] for i in rng.integers(0, len(ALL_ACTS), N_ACTS[op] * dirs)]
                need_a = sum(a in ACT_PARAMS for a in acts)
                alphas = [float(v) for v in rng.uniform(0.1, 0.9, need_a)]
                betas = [float(v) for v in rng.uniform(0.1, 0.9, need_a)]
                kw = dict(activations=acts)
                if alphas: kw.update(activation_alpha=alphas, activation_beta=betas)
                if trial % 3 == 0: kw["clip"] = 0.7
                with self.subTest(op=op, **kw):
                    # onnxruntime's RNN reads alpha and beta by direction, not in the order of the
                    # functions that take them: compare only where the two readings agree
                    betas_of = [ACT_PARAMS[a][1] is not None for a in acts if a in ACT_PARAMS]
                    ort_ok = op != "RNN" or (all(a in ACT_PARAMS for a in acts) and len(set(betas_of)) == 1)
                    self.check(op, f"{op}_acts_{trial}", direction="bidirectional" if dirs == 2 else "forward",
                               ort_ok=ort_ok, **kw)
        # a bidirectional node given one direction's list uses it for both
        self.check("GRU", "gru_shared_acts", direction="bidirectional", activations=["HardSigmoid", "Softsign"],
                   activation_alpha=[0.3], activation_beta=[0.4], ort_ok=False)

    def test_lstm_gru_options(self):
        for direction in ["forward", "bidirectional"]:
            self.check("LSTM", "lstm_input_forget", direction=direction, input_forget=1, peep=True, init_c=True)
            self.check("LSTM", "lstm_clip", direction=direction, clip=0.5, peep=True, lens=[3, 4, 1])
            for lbr in (0, 1):
                self.check("GRU", f"gru_lbr{lbr}", direction=direction, linear_before_reset=lbr, init_h=True,
                           onnx_ref_ok=True)
                self.check("GRU", f"gru_lbr{lbr}_b1", direction=direction, linear_before_reset=lbr, batch=1,
                           seq=7, H=20, isz=9, lens=[5])

    def test_optional_outputs(self):
        for op in GATES:
            n = 3 if op == "LSTM" else 2
            for keep in itertools.product([0, 1], repeat=n):
                if not any(keep): continue
                for direction in ("reverse", "bidirectional"):
                    with self.subTest(op=op, keep=keep, direction=direction):
                        self.check(op, f"{op}_out", outputs=keep, direction=direction, lens=[2, 4, 3],
                                   init_h=True)

    def test_dtypes(self):
        for op, dtype in itertools.product(GATES, [TensorProto.DOUBLE, TensorProto.FLOAT16]):
            for direction in ("forward", "bidirectional"):
                with self.subTest(op=op, dtype=dtype, direction=direction):
                    self.check(op, f"{op}_dt{dtype}", dtype=dtype, direction=direction, init_h=True,
                               init_c=op == "LSTM", peep=op == "LSTM", lens=[4, 3, 1], ort_ok=False)

    def test_opsets(self):
        for op, opset in itertools.product(GATES, [1, 3, 7, 14, 22, 28]):
            with self.subTest(op=op, opset=opset):  # (onnxruntime runs these ops from opset 7, to 26)
                self.check(op, f"{op}_opset{opset}", opset=opset, direction="bidirectional",
                           onnx_ref_ok=op != "RNN" or opset >= 7,  # (its RNN starts at 7)
                           ort_ok=7 <= opset <= 26)

    def test_larger(self):
        for op in GATES:
            self.check(op, f"{op}_large", seq=9, batch=17, isz=40, H=72, direction="bidirectional",
                       lens=list(range(1, 10)) + list(range(9, 1, -1)), init_h=True, init_c=op == "LSTM")
            # a batch over 64: the step product by OpenBLAS's SGEMM rather than R's panels
            self.check(op, f"{op}_batch70", seq=3, batch=70, isz=8, H=16, direction="bidirectional",
                       lens=[i % 4 for i in range(70)], init_h=True)
            # batch 1 with a state product big enough to be split over threads (the bits must not change)
            self.check(op, f"{op}_wide", seq=3, batch=1, isz=16, H=300 if op == "RNN" else 260,
                       direction="bidirectional", init_h=True)


# ---- DynamicQuantizeLSTM ---------------------------------------------------------------

def quant_case(direction="forward", wtype=np.int8, per_channel=False, lens=None, outputs=(1, 1, 1), seq=5, batch=3,
               isz=6, H=8, seed=0, peep=True):
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    feeds = {"X": rng.uniform(-1, 1, (seq, batch, isz)).astype(np.float32)}
    # int8 weights within [-64, 63]: onnxruntime's AVX2 u8s8 kernel saturates pairs of
    # products in int16 beyond that (its reduce_range); uint8 use the whole range.
    lo, hi = (-64, 64) if wtype == np.int8 else (0, 256)
    feeds["W"] = rng.integers(lo, hi, (dirs, isz, 4 * H)).astype(wtype)
    feeds["R"] = rng.integers(lo, hi, (dirs, H, 4 * H)).astype(wtype)
    feeds["B"] = rng.uniform(-0.5, 0.5, (dirs, 8 * H)).astype(np.float32)
    if lens is not None: feeds["sequence_lens"] = np.array(lens, np.int32)
    feeds["initial_h"] = rng.uniform(-1, 1, (dirs, batch, H)).astype(np.float32)
    feeds["initial_c"] = rng.uniform(-1, 1, (dirs, batch, H)).astype(np.float32)
    if peep: feeds["P"] = rng.uniform(-0.5, 0.5, (dirs, 3 * H)).astype(np.float32)
    qs = (dirs, 4 * H) if per_channel else (dirs,)
    feeds["W_scale"] = rng.uniform(0.002, 0.01, qs).astype(np.float32)
    feeds["R_scale"] = rng.uniform(0.002, 0.01, qs).astype(np.float32)
    if wtype == np.int8:
        feeds["W_zero_point"] = np.zeros(qs, np.int8)
        feeds["R_zero_point"] = np.zeros(qs, np.int8)
    elif per_channel:  # onnxruntime wants one zero point throughout
        zw, zr = np.full(dirs, rng.integers(100, 150)), np.full(dirs, rng.integers(100, 150))
    else:
        zw, zr = rng.integers(100, 150, dirs), rng.integers(100, 150, dirs)
    if wtype == np.uint8:
        feeds["W_zero_point"] = np.broadcast_to(zw.reshape((dirs,) + (1,) * (len(qs) - 1)), qs).astype(np.uint8)
        feeds["R_zero_point"] = np.broadcast_to(zr.reshape((dirs,) + (1,) * (len(qs) - 1)), qs).astype(np.uint8)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P", "W_scale", "W_zero_point", "R_scale",
             "R_zero_point"]
    names = [k if k in feeds else "" for k in order]
    outs = [n if keep else "" for n, keep in zip(["Y", "Y_h", "Y_c"], outputs)]
    node = helper.make_node("DynamicQuantizeLSTM", names, outs, name="qlstm", domain="com.microsoft",
                            hidden_size=H, direction=direction)
    inits = [numpy_helper.from_array(np.ascontiguousarray(feeds[k]), k)
             for k in ["W", "R", "B", "P", "W_scale", "W_zero_point", "R_scale", "R_zero_point"] if k in feeds]
    ins = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "sequence_lens" else TensorProto.FLOAT,
                                         list(feeds[k].shape))
           for k in ["X", "sequence_lens", "initial_h", "initial_c"] if k in feeds]
    g = helper.make_graph([node], "qlstm", ins,
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs if o], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m, feeds


class QuantTest(unittest.TestCase):
    def test_against_onnxruntime(self):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1  # its state quantization is per thread's batch rows otherwise
        cases = itertools.product(["forward", "reverse", "bidirectional"], [np.int8, np.uint8], [False, True],
                                  [None, [5, 2, 3], [1, 5, 0]])
        for direction, wtype, per_channel, lens in cases:
            for outputs in ((1, 1, 1), (0, 1, 1)):
                with self.subTest(direction=direction, wtype=wtype, per_channel=per_channel, lens=lens,
                                  outputs=outputs):
                    m, feeds = quant_case(direction, wtype, per_channel, lens, outputs)
                    path = save(m, "qlstm")
                    got = run_braid(path, feeds, graph_inputs(m))
                    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
                    r = dict(zip([o.name for o in s.get_outputs()],
                                 s.run(None, {k: feeds[k] for k in graph_inputs(m)})))
                    for o in r:
                        if lens is not None and 0 in lens and not outputs[0]:
                            # onnxruntime quantizes the state of an entry of length 0 from memory it
                            # never wrote when Y is not an output
                            continue
                        close(self, got[o], r[o].astype(np.float64), 2e-4, 0, f"{o} vs onnxruntime")
                    # and near the float LSTM on the dequantized weights
                    ref = reference("LSTM", {"direction": direction}, feeds, quant=True)
                    for i, o in enumerate(["Y", "Y_h", "Y_c"]):
                        if o in got: close(self, got[o], ref[i], 0.05, 0.05, f"{o} vs dequantized float LSTM")


    def test_quantizer_model(self):
        """A model as onnxruntime's quantize_dynamic writes it (int8 weights over the whole
        range, transposed, one scale per direction): braid within 0.03 of the float LSTM on
        the dequantized weights. (onnxruntime itself departs from it by up to 0.4 here: its
        AVX2 u8s8 kernel saturates pairs of products in int16 on CPUs without VNNI.)"""
        from onnxruntime.quantization import QuantType, quantize_dynamic
        for direction in ("forward", "bidirectional"):
            m, feeds, _ = make_case("LSTM", seq=20, batch=2, isz=32, H=48, direction=direction, opset=14)
            src, dst = save(m, "qsrc"), os.path.join(TMP, "test_rnn_qdst.onnx")
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
            q = onnx.load(dst)
            self.assertEqual([n.op_type for n in q.graph.node], ["DynamicQuantizeLSTM"])
            init = {i.name: numpy_helper.to_array(i) for i in q.graph.initializer}
            f = {k: init[k + ("_quantized" if k in ("W", "R") else "")]
                 for k in ("W", "R", "B", "W_scale", "W_zero_point", "R_scale", "R_zero_point")}
            f["X"] = feeds["X"]
            ref = reference("LSTM", {"direction": direction}, f, quant=True)
            got = run_braid(dst, feeds, ["X"])
            for i, o in enumerate(["Y", "Y_h", "Y_c"]):
                close(self, got[o], ref[i], 0.03, 0, f"{direction} {o} vs dequantized float LSTM")


# ---- the plan -------------------------------------------------------------------------------

class PlanTest(unittest.TestCase):
    def test_bidirectional_directions_on_two_streams(self):
        """`braid plan` puts the forward and reverse halves of a bidirectional node on
        two streams (two streams allowed, or automatic with two threads)."""
        braid = os.environ.get("BRAID_BIN") or os.path.join(REPO, "build", "braid")
        if not os.path.exists(braid):
            self.skipTest(f"no braid program at {braid}")
        for op in GATES:
            m, _, _ = make_case(op, seq=64, batch=1, isz=64, H=128, direction="bidirectional")
            path = save(m, f"plan_{op}")
            for streams in ("2", "0"):
                with self.subTest(op=op, streams=streams):
                    out = subprocess.run([braid, "plan", path, "--backend", "cpu", "--streams", streams, "--threads",
                                          "2"], capture_output=True, text=True, check=True).stdout
                    on = {name: int(st) for st, name in re.findall(r"stream (\d+): launch (\S+)", out)}
                    self.assertIn("rnn/forward", on, out)
                    self.assertIn("rnn/reverse", on, out)
                    self.assertNotEqual(on["rnn/forward"], on["rnn/reverse"], out)


# ---- errors ------------------------------------------------------------------------------

class ErrorTest(unittest.TestCase):
    def expect(self, m, feeds, status, *words):
        path = save(m, "err")
        with self.assertRaises(Runner.get().BraidError) as cm:
            Runner.get().run(path, {k: feeds[k] for k in graph_inputs(m)}, "cpu", 1, 1)
        msg = str(cm.exception)
        self.assertIn(status, msg)
        for w in words:
            self.assertIn(w, msg)

    def test_hidden_size_mismatch(self):
        m, feeds, _ = make_case("LSTM", H=6)
        next(a for a in m.graph.node[0].attribute if a.name == "hidden_size").i = 5
        self.expect(m, feeds, "shape error", "node 'rnn' (LSTM)", "input W has shape 1x24x5", "hidden_size 5", "1x20x5")

    def test_unknown_activation(self):
        m, feeds, _ = make_case("GRU", activations=["Sigmoid", "Swish"])
        self.expect(m, feeds, "invalid model", "node 'rnn' (GRU)", "activation 'Swish'")

    def test_sequence_lens_out_of_range(self):
        m, feeds, _ = make_case("RNN", lens=[4, 5, 1])
        self.expect(m, feeds, "invalid argument", "node 'rnn' (RNN)", "sequence_lens[1] is 5", "[0, 4]")
        m, feeds, _ = make_case("LSTM", lens=[-1, 2, 1], direction="bidirectional")
        self.expect(m, feeds, "invalid argument", "node 'rnn", "(LSTM)", "sequence_lens[0] is -1")


if __name__ == "__main__":
    unittest.main()
