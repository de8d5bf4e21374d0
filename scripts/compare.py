#!/usr/bin/env python3
"""compare.py: runs one ONNX model through braid (its Python package, python/braid)
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
import os
import sys
import tempfile
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROSS_COSINE = 0.999  # below this an intermediate is wrong, not merely rounded
def load_braid(lib):
    """The braid package of this repository (python/braid) over the library at lib."""
    os.environ["BRAID_LIB"] = lib
    sys.path.insert(0, os.path.join(REPO, "python"))
    import braid
    return braid


def run_braid(braid, model_path, feeds, backend="cpu", streams=0, threads=0):
    """Runs the model once through the package; returns (output names, {name: array})."""
    so = braid.SessionOptions()
    so.max_streams, so.intra_op_num_threads = streams, threads
    providers = {"cpu": ["CPUExecutionProvider"], "cuda": ["CUDAExecutionProvider"], "auto": None}[backend]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a CUDA fallback is refused below instead
        sess = braid.InferenceSession(model_path, so, providers=providers)
    if backend == "cuda" and sess.get_providers()[0] != "CUDAExecutionProvider":
        raise braid.BraidError(9, "the CUDA backend cannot run here")
    names = [o.name for o in sess.get_outputs()]
    ins = [i.name for i in sess.get_inputs()]
    missing = [n for n in ins if n not in feeds]
    if missing:
        raise braid.BraidError(1, f"no data for braid input '{missing[0]}'")
    with sess:
        return names, dict(zip(names, sess.run(None, {n: feeds[n] for n in ins})))


class Braid:
    """The package at lib as the tests call it: run(path, feeds, backend,
    streams, threads) -> {output name: array}; BraidError is the package's."""

    def __init__(self, lib):
        self.pkg = load_braid(lib)
        self.BraidError = self.pkg.BraidError

    def run(self, model_path, feeds, backend="cpu", streams=0, threads=0):
        """A failure's message starts with braid's status name ("shape error: ...")."""
        try:
            return run_braid(self.pkg, model_path, feeds, backend, streams, threads)[1]
        except self.pkg.BraidError as e:
            name = self.pkg._session.lib.braid_status_name(e.code)
            raise self.BraidError(e.code, f"{name.decode() if name else e.status}: {e}") from None


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
    braid = load_braid(lib)
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
            out_names, got = run_braid(braid, path, feeds, a.backend, a.streams, a.threads)
        except braid.BraidError as e:
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
