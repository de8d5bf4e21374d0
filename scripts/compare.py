#!/usr/bin/env python3
"""compare.py: runs one ONNX model through braid (the shared library, via ctypes)
and through onnxruntime on the same inputs, and compares every output.

Usage:
  scripts/compare.py MODEL [--backend cpu|cuda] [--input NAME=FILE]... [--shape NAME=1x3x48x320]...
                     [--atol A] [--rtol R] [--streams N] [--threads N] [--all-tensors]
                     [--save-dir DIR] [--ort-opt none|basic|all] [--lib PATH]

Inputs come from --input files (.npy, or .pb TensorProto) or, for the others, are
random with a fixed seed (numpy default_rng(0); floats uniform in [0, 1), integers
in [0, 10), booleans fair coins), shaped by the model's static dims and --shape.
Per output it prints the shape, the max absolute error, the max relative error
(|a-b|/|b| over the elements where |b| > atol) and the cosine similarity, then PASS
or FAIL: PASS when every element satisfies |a-b| <= atol + rtol*|b| (b: onnxruntime;
NaN matches NaN, and infinities must match exactly). Exit 0 when every output
passes, 1 on FAIL, 2 on bad usage or when either runtime cannot run the model.

--all-tensors adds every intermediate tensor whose type is known (after onnx shape
inference) to a copy of the model as a graph output, runs both runtimes on it and
names the first node, in topological order, whose output diverges beyond tolerance
(for intermediates atol is scaled by max(1, max|reference|)), and the first whose
cosine similarity falls under 0.999 (a wrong op, rather than rounding). The PASS/FAIL
verdict is always that of the model's own outputs.
The library is --lib PATH, else $BRAID_LIB, else build/libbraid.so under the repo root.
"""
import argparse
import ctypes
import os
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_RANK = 8

# ONNX TensorProto.DataType numbers (braid_dtype uses the same) -> numpy.
DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
    7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64,
}
NP_TO_DTYPE = {np.dtype(v): k for k, v in DTYPES.items()}
GROSS_COSINE = 0.999  # below this an intermediate is wrong, not merely rounded
BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2}


class BraidTensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p)]


class BraidValueInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class BraidError(Exception):
    pass


class Braid:
    """The few functions of include/braid.h that a comparison needs."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        L = self.lib
        vp, cp, ip = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        for name, res, args in [
            ("braid_last_error", cp, []),
            ("braid_session_error", cp, [vp]),
            ("braid_status_name", cp, [ip]),
            ("braid_model_load_file", ip, [cp, ctypes.POINTER(vp)]),
            ("braid_model_destroy", None, [vp]),
            ("braid_model_input_count", ip, [vp]),
            ("braid_model_output_count", ip, [vp]),
            ("braid_model_input_info", ip, [vp, ip, ctypes.POINTER(BraidValueInfo)]),
            ("braid_model_output_info", ip, [vp, ip, ctypes.POINTER(BraidValueInfo)]),
            ("braid_options_create", ip, [ctypes.POINTER(vp)]),
            ("braid_options_destroy", None, [vp]),
            ("braid_options_set_backend", ip, [vp, ip]),
            ("braid_options_set_max_streams", ip, [vp, ip]),
            ("braid_options_set_threads", ip, [vp, ip]),
            ("braid_session_create", ip, [vp, vp, ctypes.POINTER(vp)]),
            ("braid_session_destroy", None, [vp]),
            ("braid_session_run", ip, [vp, ip, ctypes.POINTER(BraidTensor), ip, ctypes.POINTER(BraidTensor)]),
        ]:
            f = getattr(L, name)
            f.restype, f.argtypes = res, args

    def _check(self, status, what, session=None):
        if status != 0:
            msg = self.lib.braid_session_error(session) if session else self.lib.braid_last_error()
            name = self.lib.braid_status_name(status)
            raise BraidError(f"{what}: {(name or b'?').decode()}: {(msg or b'').decode()}")

    def _info(self, fn, model, i):
        vi = BraidValueInfo()
        self._check(fn(model, i, ctypes.byref(vi)), "value info")
        return vi.name.decode(), vi.dtype, vi.rank, [vi.dims[d] for d in range(max(vi.rank, 0))]

    def io_names(self, model_path):
        """(input names, output names) as braid orders them."""
        m = ctypes.c_void_p()
        self._check(self.lib.braid_model_load_file(model_path.encode(), ctypes.byref(m)), "load")
        try:
            ins = [self._info(self.lib.braid_model_input_info, m, i)[0]
                   for i in range(self.lib.braid_model_input_count(m))]
            outs = [self._info(self.lib.braid_model_output_info, m, i)[0]
                    for i in range(self.lib.braid_model_output_count(m))]
            return ins, outs
        finally:
            self.lib.braid_model_destroy(m)

    def run(self, model_path, feeds, backend="cpu", streams=0, threads=0):
        """Runs the model once; returns {output name: numpy array (a copy)}."""
        m, o, s = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        try:
            self._check(self.lib.braid_model_load_file(model_path.encode(), ctypes.byref(m)), "load")
            self._check(self.lib.braid_options_create(ctypes.byref(o)), "options")
            self._check(self.lib.braid_options_set_backend(o, BACKENDS[backend]), "backend")
            self._check(self.lib.braid_options_set_max_streams(o, streams), "streams")
            self._check(self.lib.braid_options_set_threads(o, threads), "threads")
            self._check(self.lib.braid_session_create(m, o, ctypes.byref(s)), "session")
            n_in = self.lib.braid_model_input_count(m)
            n_out = self.lib.braid_model_output_count(m)
            ins = (BraidTensor * max(n_in, 1))()
            keep = []
            for i in range(n_in):
                name = self._info(self.lib.braid_model_input_info, m, i)[0]
                if name not in feeds:
                    raise BraidError(f"no data for braid input '{name}'")
                a = np.asarray(feeds[name], order="C")  # ascontiguousarray would make a scalar 1-D
                if a.dtype not in NP_TO_DTYPE:
                    raise BraidError(f"input '{name}': dtype {a.dtype} has no braid equivalent")
                if a.ndim > MAX_RANK:
                    raise BraidError(f"input '{name}': rank {a.ndim} is over {MAX_RANK}")
                keep.append(a)
                ins[i].dtype, ins[i].rank = NP_TO_DTYPE[a.dtype], a.ndim
                for d, n in enumerate(a.shape):
                    ins[i].dims[d] = n
                ins[i].data = a.ctypes.data_as(ctypes.c_void_p)
            outs = (BraidTensor * max(n_out, 1))()
            self._check(self.lib.braid_session_run(s, n_in, ins, n_out, outs), "run", s)
            result = {}
            for i in range(n_out):
                name = self._info(self.lib.braid_model_output_info, m, i)[0]
                t = outs[i]
                if t.dtype not in DTYPES:
                    raise BraidError(f"output '{name}': braid dtype {t.dtype} has no numpy equivalent")
                shape = tuple(t.dims[d] for d in range(t.rank))
                dt = np.dtype(DTYPES[t.dtype])
                count = int(np.prod(shape, dtype=np.int64))
                if count == 0 or not t.data:
                    result[name] = np.zeros(shape, dt)
                else:
                    buf = (ctypes.c_char * (count * dt.itemsize)).from_address(t.data)
                    result[name] = np.frombuffer(bytes(buf), dt).reshape(shape)
            return result
        finally:
            self.lib.braid_session_destroy(s)
            self.lib.braid_options_destroy(o)
            self.lib.braid_model_destroy(m)


def find_lib(arg):
    path = arg or os.environ.get("BRAID_LIB") or os.path.join(REPO, "build", "libbraid.so")
    if not os.path.exists(path):
        raise SystemExit(f"compare: no braid library at {path}: build it, or give --lib PATH / BRAID_LIB")
    return path


def parse_pairs(items, what):
    out = {}
    for it in items or []:
        if "=" not in it:
            raise SystemExit(f"compare: {what} '{it}' should be NAME=VALUE")
        k, v = it.split("=", 1)
        out[k] = v
    return out


def load_array(path):
    if path.endswith(".npy"):
        return np.load(path)
    import onnx
    from onnx import numpy_helper
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def make_inputs(model, files, shapes):
    """Feeds for every real graph input (initializers excluded), in graph order."""
    from onnx import helper
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    names = [i.name for i in model.graph.input if i.name not in inits]
    for k in list(files) + list(shapes):
        if k not in names:
            raise SystemExit(f"compare: the model has no input '{k}' (inputs: {', '.join(names)})")
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        if vi.name in files:
            feeds[vi.name] = load_array(files[vi.name])
            continue
        tt = vi.type.tensor_type
        dt = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        if vi.name in shapes:
            try:
                shape = [int(x) for x in shapes[vi.name].lower().split("x")]
            except ValueError:
                raise SystemExit(f"compare: --shape {vi.name}={shapes[vi.name]}: write the dims as 1x3x224x224")
        else:
            shape = []
            for d in tt.shape.dim:
                if not d.HasField("dim_value") or d.dim_value <= 0:
                    raise SystemExit(f"compare: input '{vi.name}' has a dynamic dim: give --shape {vi.name}=...")
                shape.append(d.dim_value)
        if dt.kind == "f":
            feeds[vi.name] = rng.random(shape, dtype=np.float64).astype(dt)
        elif dt.kind == "b":
            feeds[vi.name] = rng.random(shape) < 0.5
        else:
            feeds[vi.name] = rng.integers(0, 10, shape).astype(dt)
    return feeds


def run_ort(path, feeds, output_names, opt):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[opt]
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    ins = {i.name for i in sess.get_inputs()}
    vals = sess.run(output_names, {k: v for k, v in feeds.items() if k in ins})
    return dict(zip(output_names, vals))


def compare(a, b, atol, rtol):
    """Returns (ok, max_abs, max_rel, cosine, n_bad, worst index, message, used), where
    used is the largest |a-b| / (atol + rtol*|b|): the share of the tolerance spent."""
    if a.shape != b.shape:
        return False, float("nan"), float("nan"), float("nan"), -1, None, f"shape {a.shape} != onnxruntime {b.shape}", float("inf")
    if a.dtype != b.dtype:
        return False, float("nan"), float("nan"), float("nan"), -1, None, f"dtype {a.dtype} != onnxruntime {b.dtype}", float("inf")
    if a.size == 0:
        return True, 0.0, 0.0, 1.0, 0, None, "", 0.0
    if a.dtype == np.bool_:
        bad = a != b
        n = int(bad.sum())
        return n == 0, float(n > 0), float(n > 0), 1.0 if n == 0 else 0.0, n, \
            (np.unravel_index(int(np.argmax(bad)), a.shape) if n else None), "", float("inf") if n else 0.0
    x, y = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    same_inf = np.isinf(x) & np.isinf(y) & (x == y)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(x - y)
        diff = np.where(both_nan | same_inf, 0.0, diff)
        diff = np.where(np.isnan(diff), np.inf, diff)
        bound = atol + rtol * np.abs(np.where(np.isfinite(y), y, 0.0))
        bad = ~(diff <= bound)
        bad &= ~(both_nan | same_inf)
        max_abs = float(diff.max())
        big = np.abs(y) > atol
        max_rel = float((diff[big] / np.abs(y[big])).max()) if big.any() else 0.0
        fx = np.where(np.isfinite(x), x, 0.0).ravel()
        fy = np.where(np.isfinite(y), y, 0.0).ravel()
        nx, ny = float(np.linalg.norm(fx)), float(np.linalg.norm(fy))
        cos = 1.0 if nx == 0 and ny == 0 else (float(fx @ fy) / (nx * ny) if nx and ny else 0.0)
        ratio = np.where(bound > 0, diff / np.where(bound > 0, bound, 1.0), np.where(diff > 0, np.inf, 0.0))
        used = float(ratio.max())
    n = int(bad.sum())
    worst = np.unravel_index(int(np.argmax(np.where(bad, diff, -1.0))), a.shape) if n else None
    return n == 0, max_abs, max_rel, cos, n, worst, "", used


def report_line(name, a, b, res):
    ok, max_abs, max_rel, cos, n_bad, worst, msg, used = res
    if msg:
        return f"  {name}: {msg}  FAIL"
    line = (f"  {name}: shape {list(a.shape)} {a.dtype}  max_abs {max_abs:.3g}  max_rel {max_rel:.3g}  "
            f"cosine {cos:.7f}  tolerance used {used:.1%}  {'PASS' if ok else 'FAIL'}")
    if not ok:
        line += (f"  ({n_bad} of {a.size} elements out of tolerance; worst at {tuple(int(i) for i in worst)}: "
                 f"braid {a[worst]!r} onnxruntime {b[worst]!r})")
    return line


def all_tensors_model(model):
    """A copy of model in which every node output with a known type is a graph output.
    Returns (copy, [(node index, node, [added output names])])."""
    import onnx
    from onnx import shape_inference
    try:
        inferred = shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception:
        inferred = model
    known = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            known[vi.name] = vi
    m = onnx.ModelProto()
    m.CopyFrom(model)
    present = {o.name for o in m.graph.output}
    order = []
    for idx, node in enumerate(m.graph.node):
        added = []
        if node.op_type == "Constant" or node.domain not in ("", "ai.onnx"):
            continue
        for out in node.output:
            if out and out in known:
                if out not in present:
                    vi = onnx.ValueInfoProto()
                    vi.name = out
                    vi.type.tensor_type.elem_type = known[out].type.tensor_type.elem_type
                    m.graph.output.append(vi)
                    present.add(out)
                added.append(out)
        if added:
            order.append((idx, node, added))
    return m, order


def main():
    ap = argparse.ArgumentParser(description="Compare braid against onnxruntime on one model.")
    ap.add_argument("model")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    ap.add_argument("--input", action="append", default=[], metavar="NAME=FILE")
    ap.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x48x320")
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--streams", type=int, default=0, help="braid max streams (0 = automatic, 1 = serial)")
    ap.add_argument("--threads", type=int, default=0, help="braid threads (0 = all cores)")
    ap.add_argument("--all-tensors", action="store_true",
                    help="compare every intermediate tensor and name the first diverging node")
    ap.add_argument("--ort-opt", default="basic", choices=["none", "basic", "all"],
                    help="onnxruntime graph optimization level (default basic: no fusions)")
    ap.add_argument("--save-dir", default=None,
                    help="write each model output as DIR/braid_<i>.npy and DIR/onnxruntime_<i>.npy")
    ap.add_argument("--lib", default=None, help="path to libbraid.so (else $BRAID_LIB, else build/libbraid.so)")
    a = ap.parse_args()

    import onnx
    lib = find_lib(a.lib)
    if not os.path.exists(a.model):
        print(f"compare: no model at {a.model}", file=sys.stderr)
        return 2
    model = onnx.load(a.model)
    feeds = make_inputs(model, parse_pairs(a.input, "--input"), parse_pairs(a.shape, "--shape"))
    braid = Braid(lib)
    print(f"model {a.model}  backend {a.backend}  streams {a.streams}  atol {a.atol:g}  rtol {a.rtol:g}")
    for k, v in feeds.items():
        print(f"  input {k}: shape {list(v.shape)} {v.dtype}")

    path, order = a.model, None
    tmp = None
    if a.all_tensors:
        m2, order = all_tensors_model(model)
        tmp = tempfile.TemporaryDirectory(prefix="braid-compare-")
        path = os.path.join(tmp.name, "all_tensors.onnx")
        onnx.save(m2, path)
    try:
        try:
            _, out_names = braid.io_names(path)
            got = braid.run(path, feeds, a.backend, a.streams, a.threads)
        except BraidError as e:
            print(f"braid failed: {e}")
            return 2
        try:
            ref = run_ort(path, feeds, out_names, a.ort_opt)
        except Exception as e:  # onnxruntime raises its own exception types
            print(f"onnxruntime failed: {e}")
            return 2
    finally:
        if tmp:
            tmp.cleanup()

    graph_outs = [o.name for o in model.graph.output]
    all_ok = True
    print("outputs:")
    for name in graph_outs:
        res = compare(got[name], ref[name], a.atol, a.rtol)
        all_ok &= res[0]
        print(report_line(name, got[name], ref[name], res))

    if order is not None:
        first, gross, checked = None, None, 0
        for idx, node, outs in order:
            for out in outs:
                if out not in got or out not in ref:
                    continue
                checked += 1
                # An intermediate's absolute tolerance scales with its magnitude: rounding
                # grows with the values a tensor holds, and float32 sums of thousands of
                # products are reassociated differently by every runtime.
                scale = max(1.0, float(np.max(np.abs(ref[out]), initial=0.0))) if ref[out].dtype.kind == "f" else 1.0
                res = compare(got[out], ref[out], a.atol * scale, a.rtol)
                if not res[0] and first is None:
                    first = (idx, node, out, res)
                if gross is None and (res[6] or res[3] < GROSS_COSINE):
                    gross = (idx, node, out, res)
        print(f"intermediate tensors: {checked} compared in topological order "
              f"(tolerance atol*max(1, max|onnxruntime|) + rtol*|onnxruntime|)")
        for label, hit in (("first divergence", first),
                           (f"first gross divergence (cosine < {GROSS_COSINE} or shape/dtype)", gross)):
            if not hit:
                print(f"{label}: none")
                continue
            if label != "first divergence" and first and hit[0] == first[0]:
                print(f"{label}: the same node")
                continue
            idx, node, out, res = hit
            ins = ", ".join(f"{i}{list(got[i].shape) if i in got else ''}" for i in node.input if i)
            print(f"{label}: node #{idx} '{node.name}' ({node.op_type}) output '{out}'")
            print(f"  inputs: {ins}")
            attrs = [onnx.helper.printable_attribute(at) for at in node.attribute]
            if attrs:
                print(f"  attributes: {', '.join(attrs)}")
            print(report_line(out, got[out], ref[out], res))
    if a.save_dir:
        os.makedirs(a.save_dir, exist_ok=True)
        for i, name in enumerate(graph_outs):
            np.save(os.path.join(a.save_dir, f"braid_{i}.npy"), got[name])
            np.save(os.path.join(a.save_dir, f"onnxruntime_{i}.npy"), ref[name])
    print("PASS" if all_ok else "FAIL")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
