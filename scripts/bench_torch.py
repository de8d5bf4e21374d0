#!/usr/bin/env python3
"""bench_torch.py: the PyTorch eager baseline for braid's benchmarks. Runs an
ONNX model's graph with torch.nn.functional ops (cuDNN on CUDA), checks the
output against onnxruntime (CPU) on the same input, then times it.

The ONNX file is read with onnx; weights, biases and attributes come from its
initializers and nodes, and a small interpreter runs the nodes in order:
Conv, Add, Sub, Mul, Relu, Sigmoid, Tanh, Exp, Neg, Concat, MaxPool,
AveragePool, GlobalAveragePool, Resize (2-D, by scales, nearest or linear:
enough for models/gen's two_conv_add, inception, fpn, wide and race). Any
other op stops it with exit 3.

Settings that match braid's defaults: fp32 throughout, TF32 off
(torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 =
False; --tf32 turns it on), torch.backends.cudnn.benchmark = True.
The check: every output element within |torch - ort| <= atol + rtol |ort|
(default rtol 1e-3, atol 1e-4: cuDNN's fp32 algorithms, Winograd or FFT
among them, sum in another order than onnxruntime's MLAS), made with the
algorithms that the timing then uses.

Two timings, each the median (and min) over --iterations runs after --warmup,
on the same terms as `braid bench`'s two:
  device  the input already on the device, the outputs left there: CUDA events
          on the current stream around the run, as braid's device time is
          taken on its plan's stream 0 (wall clock on the CPU)
  host    wall clock, synchronized, from the input in ordinary (pageable) host
          memory to the outputs in host memory, as braid_session_run in its
          default (staged) I/O mode: the input is copied from pageable memory,
          each output is copied into a pinned host buffer made once (braid's
          plan owns one per output) and left there; neither reads the outputs
Machine-readable lines (one per timing, and one for the check):
  bench_torch: check PASS|FAIL max_abs=.. max_rel=.. rtol=.. atol=..
  bench_torch: result mode=device median_ms=.. min_ms=.. device=.. model=.. shape=.. iterations=..
Exit 0, 1 when the check fails (the timings are still printed), 2 on bad
usage, 3 when the model has an op the interpreter does not run.
Usage: bench_torch.py MODEL [--shape NAME=1024x16x32x32]... [--device cuda|cpu]
                      [--iterations N] [--warmup W] [--rtol R] [--atol A] [--tf32] [--no-check]
"""
import argparse
import statistics
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

try:
    import torch
    import torch.nn.functional as F
except ImportError as exc:  # the device has it; the development machine may not
    sys.exit(f"bench_torch.py: PyTorch is not installed here ({exc})")


class Unsupported(Exception):
    pass


def attrs_of(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _str(v):
    return v.decode() if isinstance(v, bytes) else v


def pad_amounts(a, x, kernel, strides, dilations):
    """ONNX pads [b1, b2, ..., e1, e2, ...] for the spatial dims, auto_pad applied."""
    nd = len(kernel)
    auto = _str(a.get("auto_pad", "NOTSET"))
    if auto in ("NOTSET", ""):
        pads = list(a.get("pads", [0] * (2 * nd)))
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size)
            small, big = total // 2, total - total // 2
            pads[i], pads[nd + i] = (small, big) if auto == "SAME_UPPER" else (big, small)
    else:
        raise Unsupported(f"auto_pad {auto}")
    return pads


def pad_input(x, pads, value):
    """Pads x explicitly (torch takes symmetric padding only); F.pad lists the last dim first."""
    nd = len(pads) // 2
    spec = []
    for i in reversed(range(nd)):
        spec += [pads[i], pads[nd + i]]
    return F.pad(x, spec, value=value)


def conv(x, w, b, a):
    nd = w.dim() - 2
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}.get(nd)
    if fn is None:
        raise Unsupported(f"Conv with {nd} spatial dims")
    kernel = list(a.get("kernel_shape", w.shape[2:]))
    strides = list(a.get("strides", [1] * nd))
    dil = list(a.get("dilations", [1] * nd))
    pads = pad_amounts(a, x, kernel, strides, dil)
    if pads[:nd] == pads[nd:]:
        return fn(x, w, b, stride=strides, padding=pads[:nd], dilation=dil, groups=a.get("group", 1))
    return fn(pad_input(x, pads, 0.0), w, b, stride=strides, padding=0, dilation=dil, groups=a.get("group", 1))


def pool(x, a, kind):
    kernel = list(a["kernel_shape"])
    nd = len(kernel)
    strides = list(a.get("strides", [1] * nd))
    dil = list(a.get("dilations", [1] * nd))
    pads = pad_amounts(a, x, kernel, strides, dil)
    ceil = bool(a.get("ceil_mode", 0))
    sym = pads[:nd] == pads[nd:] and all(p <= k // 2 for p, k in zip(pads[:nd], kernel))
    if kind == "max":
        fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}.get(nd)
        if fn is None:
            raise Unsupported(f"MaxPool with {nd} spatial dims")
        if sym:
            return fn(x, kernel, strides, pads[:nd], dil, ceil_mode=ceil)
        return fn(pad_input(x, pads, float("-inf")), kernel, strides, 0, dil, ceil_mode=ceil)
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}.get(nd)
    if fn is None or any(d != 1 for d in dil):
        raise Unsupported("AveragePool with dilations or more than 3 spatial dims")
    if not sym:
        raise Unsupported("AveragePool with asymmetric pads")
    return fn(x, kernel, strides, pads[:nd], ceil_mode=ceil, count_include_pad=bool(a.get("count_include_pad", 0)))


def resize(i, a):
    """ONNX Resize of the two spatial dims by constant scales (inputs X, roi, scales): nearest
    (half_pixel, round_prefer_floor, which equals torch's nearest at integer scales) or linear
    (half_pixel: torch's bilinear with align_corners=False)."""
    x, scales = i[0], i[2] if len(i) > 2 else None
    mode = _str(a.get("mode", "nearest"))
    ctm = _str(a.get("coordinate_transformation_mode", "half_pixel"))
    if x.dim() != 4 or scales is None or scales.numel() != 4 or len(i) > 3:
        raise Unsupported("Resize other than 2-D by scales")
    sc = [float(v) for v in scales.tolist()]
    if sc[0] != 1 or sc[1] != 1 or ctm != "half_pixel":
        raise Unsupported(f"Resize with scales {sc}, coordinate_transformation_mode {ctm}")
    if mode == "nearest" and all(v == int(v) for v in sc[2:]):
        return F.interpolate(x, scale_factor=sc[2:], mode="nearest")
    if mode == "linear":
        return F.interpolate(x, scale_factor=sc[2:], mode="bilinear", align_corners=False)
    raise Unsupported(f"Resize mode {mode} at scales {sc}")


OPS = {
    "Add": lambda i, a: i[0] + i[1],
    "Sub": lambda i, a: i[0] - i[1],
    "Mul": lambda i, a: i[0] * i[1],
    "Relu": lambda i, a: torch.relu(i[0]),
    "Sigmoid": lambda i, a: torch.sigmoid(i[0]),
    "Tanh": lambda i, a: torch.tanh(i[0]),
    "Exp": lambda i, a: torch.exp(i[0]),
    "Neg": lambda i, a: -i[0],
    "Concat": lambda i, a: torch.cat(i, dim=a["axis"]),
    "Conv": lambda i, a: conv(i[0], i[1], i[2] if len(i) > 2 else None, a),
    "MaxPool": lambda i, a: pool(i[0], a, "max"),
    "AveragePool": lambda i, a: pool(i[0], a, "avg"),
    "GlobalAveragePool": lambda i, a: i[0].mean(dim=tuple(range(2, i[0].dim())), keepdim=True),
    "Resize": lambda i, a: resize(i, a),
}


class TorchModel:
    """The model's nodes, run in their (topological) file order on one device."""

    def __init__(self, model, device):
        g = model.graph
        self.inputs = [i.name for i in g.input if i.name not in {t.name for t in g.initializer}]
        self.outputs = [o.name for o in g.output]
        self.consts = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).to(device) for t in g.initializer}
        self.nodes = []
        for n in g.node:
            if n.op_type not in OPS or (n.domain not in ("", "ai.onnx")):
                raise Unsupported(f"op {n.domain + '.' if n.domain else ''}{n.op_type} (node '{n.name}')")
            outs = [o for o in n.output if o]
            if len(outs) != 1:
                raise Unsupported(f"{n.op_type} with {len(outs)} outputs (node '{n.name}')")
            self.nodes.append((OPS[n.op_type], list(n.input), outs[0], attrs_of(n)))

    def __call__(self, feeds):
        env = dict(self.consts)
        env.update(feeds)
        for fn, ins, out, a in self.nodes:
            args = [env[i] if i else None for i in ins]  # an omitted input keeps its place
            while args and args[-1] is None:
                args.pop()
            env[out] = fn(args, a)
        return [env[o] for o in self.outputs]


TORCH_DTYPES = {1: np.float32, 11: np.float64, 7: np.int64, 6: np.int32}


def make_feeds(model, shapes, seed):
    inits = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        if tt.elem_type not in TORCH_DTYPES:
            raise Unsupported(f"input '{vi.name}' of ONNX dtype {tt.elem_type}")
        if vi.name in shapes:
            dims = shapes[vi.name]
        else:
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            if any(d < 0 for d in dims):
                raise ValueError(f"input '{vi.name}' has a symbolic dim: give its shape with --shape {vi.name}=...")
        dt = TORCH_DTYPES[tt.elem_type]
        feeds[vi.name] = (rng.random(dims, dtype=np.float32).astype(dt) if np.issubdtype(dt, np.floating)
                          else rng.integers(0, 10, dims).astype(dt))
    return feeds


def ort_reference(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, dev, iters, warmup, events=False):
    """Median and min ms of fn: wall clock, synchronized; with events (CUDA), the
    time between two events on the current stream around it instead."""
    for _ in range(warmup):
        fn()
    sync(dev)
    ms = []
    for _ in range(iters):
        sync(dev)
        if events:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
            continue
        t0 = time.perf_counter()
        fn()
        sync(dev)
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms), min(ms)


def parse_shapes(items):
    shapes = {}
    for s in items:
        name, eq, dims = s.partition("=")
        try:
            shapes[name] = [int(d) for d in dims.split("x")]
        except ValueError:
            eq = ""
        if not eq or not name:
            sys.exit(f"bench_torch.py: --shape {s}: write it as NAME=1x3x224x224")
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", default=[], help="NAME=1024x16x32x32 (symbolic dims need one)")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tf32", action="store_true", help="let cuDNN and cuBLAS use TF32 (braid's --tf32)")
    ap.add_argument("--no-check", action="store_true", help="skip the onnxruntime check")
    a = ap.parse_args()
    if a.iterations < 1 or a.warmup < 0:
        ap.error("--iterations must be >= 1 and --warmup >= 0")
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("bench_torch: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 1
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    model = onnx.load(a.model)
    try:
        tm = TorchModel(model, dev)
        feeds = make_feeds(model, parse_shapes(a.shape), a.seed)
    except Unsupported as exc:
        print(f"bench_torch: unsupported: {exc}", file=sys.stderr)
        return 3
    except ValueError as exc:
        print(f"bench_torch: {exc}", file=sys.stderr)
        return 2
    name = (torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu")
    shape = ",".join(f"{k}:{'x'.join(map(str, v.shape))}" for k, v in feeds.items())
    print(f"bench_torch: torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, device {name}, "
          f"tf32 {'on' if a.tf32 else 'off'}, model {a.model}, inputs {shape}")

    host = {k: torch.from_numpy(v) for k, v in feeds.items()}
    on_dev = {k: v.to(dev) for k, v in host.items()}
    rc = 0
    with torch.inference_mode():
        def run_device():
            return tm(on_dev)

        pinned = []  # braid's staged run copies each output into a pinned buffer its plan made once

        def run_host():
            outs = tm({k: v.to(dev) for k, v in host.items()})
            if dev.type != "cuda":
                return outs
            if not pinned:  # made in the first (warm-up) run
                pinned.extend(torch.empty_like(o, device="cpu").pin_memory() for o in outs)
            for p, o in zip(pinned, outs):
                p.copy_(o, non_blocking=True)
            return pinned

        try:
            run_device()  # picks the cuDNN algorithms (benchmark mode) before the check
            got = [o.cpu().numpy() for o in run_device()]
        except Unsupported as exc:
            print(f"bench_torch: unsupported: {exc}", file=sys.stderr)
            return 3
        if not a.no_check:
            want = ort_reference(model, feeds)
            ok, max_abs, max_rel = True, 0.0, 0.0
            for g, w in zip(got, want):
                if g.shape != w.shape:
                    print(f"bench_torch: output shape {g.shape}, onnxruntime {w.shape}", file=sys.stderr)
                    ok = False
                    continue
                d = np.abs(g.astype(np.float64) - w.astype(np.float64))
                max_abs = max(max_abs, float(d.max(initial=0.0)))
                max_rel = max(max_rel, float((d / np.maximum(np.abs(w), a.atol)).max(initial=0.0)))
                ok &= bool(np.all(d <= a.atol + a.rtol * np.abs(w)))
            print(f"bench_torch: check {'PASS' if ok else 'FAIL'} max_abs={max_abs:.3g} max_rel={max_rel:.3g} "
                  f"rtol={a.rtol:g} atol={a.atol:g} (against onnxruntime CPU)")
            rc = 0 if ok else 1
        for mode, fn in (("device", run_device), ("host", run_host)):
            med, lo = timed(fn, dev, a.iterations, a.warmup, events=mode == "device" and dev.type == "cuda")
            print(f"bench_torch: result mode={mode} median_ms={med:.3f} min_ms={lo:.3f} device={name.replace(' ', '_')} "
                  f"model={a.model} shape={shape} iterations={a.iterations} warmup={a.warmup}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
