"""bench_triton.py (run by scripts/bench-triton): requests per second and
p50/p99 latency of models served by tritonserver through braid's backend,
with and without dynamic batching, at client concurrency 1, 4 and 16, beside
braid and onnxruntime called directly in-process on the same model by the
same number of threads (braid: one session, as one Triton instance has; the
difference is what serving costs). Triton's own onnxruntime backend is not on
PyPI, so it cannot be installed here. Prints a Markdown table.

Each client thread owns an HTTP client and sends one-row requests in a closed
loop (the next request when the last one is answered) for --seconds after a
warm-up; latency is from send to answer as the client sees it. The three
runners take turns for --rounds rounds at each concurrency, so that load from
other tenants of a shared machine falls on each alike; a row pools its
rounds. The clients run in this process, on the same cores as the server.

Usage: bench-triton [--seconds 3] [--rounds 3] [--concurrency 1,4,16] [--models cls,inception]
"""
import argparse
import ctypes
import os
import sys
import tempfile
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "triton"))
import tritonrun  # noqa: E402


def batch_dynamic(src, dst):
    """A copy of src whose inputs' and outputs' first dim is symbolic 'N'."""
    import onnx
    m = onnx.load(src)
    for v in list(m.graph.input) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim[0]
        d.Clear()
        d.dim_param = "N"
    del m.graph.value_info[:]
    onnx.save(m, dst)
    return dst


MODELS = {
    # name: (source, input name, one row's shape, what it is)
    "cls": (os.path.join(ROOT, "models", "real", "ch_ppocr_mobile_v2.0_cls_infer.onnx"), "x", (3, 48, 192),
            "PP-OCR text direction classifier (a MobileNetV3 CNN), 1x3x48x192"),
    "inception": (os.path.join(ROOT, "models", "gen", "inception", "model.onnx"), "x", (64, 28, 28),
                  "models/gen/inception (four towers), 1x64x28x28, batch dim made dynamic"),
}


class BraidDirect:
    """braid in this process through ctypes (libbraid.so): one session, as
    one Triton instance has; threads calling run() share it (runs on one
    session take turns)."""

    class Tensor(ctypes.Structure):
        _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_int64 * 8),
                    ("data", ctypes.c_void_p)]

    def __init__(self, lib, model_path, x):
        self.lib = ctypes.CDLL(lib)
        vp = ctypes.c_void_p
        for name, args in [("braid_model_load_file", [ctypes.c_char_p, ctypes.POINTER(vp)]),
                           ("braid_session_create", [vp, vp, ctypes.POINTER(vp)]),
                           ("braid_session_run", [vp, ctypes.c_int, ctypes.POINTER(self.Tensor), ctypes.c_int,
                                                  ctypes.POINTER(self.Tensor)]),
                           ("braid_session_destroy", [vp]), ("braid_model_destroy", [vp])]:
            getattr(self.lib, name).argtypes = args
        self.m, self.s = vp(), vp()
        if self.lib.braid_model_load_file(model_path.encode(), ctypes.byref(self.m)) or \
                self.lib.braid_session_create(self.m, None, ctypes.byref(self.s)):
            raise RuntimeError(f"braid could not load {model_path}")
        self.x = x
        self.inp = self.Tensor(1, x.ndim, (ctypes.c_int64 * 8)(*x.shape), x.ctypes.data)

    def run(self):
        outs = (self.Tensor * 4)()
        if self.lib.braid_session_run(self.s, 1, ctypes.byref(self.inp), 1, outs):
            raise RuntimeError("braid_session_run failed")

    def close(self):
        self.lib.braid_session_destroy(self.s)
        self.lib.braid_model_destroy(self.m)


def closed_loop(make_call, conc, seconds, warmup):
    """conc threads calling make_call()() in a loop for warmup + seconds; returns
    the latencies (s) of the calls started after the warm-up."""
    lat, lock, stop = [], threading.Lock(), threading.Event()
    start_evt = threading.Barrier(conc + 1)
    t_measure = [0.0]

    def worker():
        call = make_call()
        mine = []
        start_evt.wait()
        while not stop.is_set():
            t0 = time.perf_counter()
            call()
            t1 = time.perf_counter()
            if t0 >= t_measure[0]:
                mine.append(t1 - t0)
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(conc)]
    for t in threads:
        t.start()
    t_measure[0] = time.perf_counter() + warmup
    start_evt.wait()
    time.sleep(warmup + seconds)
    stop.set()
    for t in threads:
        t.join(timeout=120)
    return lat


def summary(lat, seconds):
    """(requests/s, p50 ms, p99 ms) of latencies measured over `seconds`."""
    lat = sorted(lat)
    if not lat:
        return 0.0, float("nan"), float("nan")
    return len(lat) / seconds, 1e3 * lat[len(lat) // 2], 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0, help="measured per round and runner")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--models", default="cls,inception")
    ap.add_argument("--backends", default=os.path.join(ROOT, "build", "backends"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libbraid.so"))
    a = ap.parse_args()
    binary, why = tritonrun.find_server()
    if not binary:
        sys.exit(f"bench-triton: {why}")
    import onnxruntime as ort
    import tritonclient.http as th

    concs = [int(c) for c in a.concurrency.split(",")]
    tmp = tempfile.mkdtemp(prefix="bench-triton-")
    repo = os.path.join(tmp, "repo")
    models = [m for m in a.models.split(",") if os.path.exists(MODELS[m][0])]
    files = {}
    for m in models:
        files[m] = batch_dynamic(MODELS[m][0], os.path.join(tmp, f"{m}.onnx"))
        full = ('backend: "braid"\nmax_batch_size: 8\n'
                'input [ { name: "%s" data_type: TYPE_FP32 dims: [ %s ] } ]\n' %
                (MODELS[m][1], ", ".join(str(d) for d in MODELS[m][2])))
        tritonrun.write_model(repo, m, files[m], full)
        tritonrun.write_model(repo, m + "_db", files[m], full + "dynamic_batching { }\n")
    srv = tritonrun.Server(binary, repo, a.backends, os.path.join(tmp, "tritonserver.log"),
                           load=[n for m in models for n in (m, m + "_db")], grpc=False)
    rows = []
    try:
        srv.start()
        rng = np.random.default_rng(1)
        for m in models:
            name, shape = MODELS[m][1], (1,) + MODELS[m][2]
            x = rng.standard_normal(shape, dtype=np.float32)
            sess = ort.InferenceSession(files[m], providers=["CPUExecutionProvider"])

            def triton_call(served):
                def make():
                    c = th.InferenceServerClient(f"127.0.0.1:{srv.http_port}", network_timeout=120.0)
                    i = th.InferInput(name, list(shape), "FP32")
                    i.set_data_from_numpy(x)
                    return lambda: c.infer(served, [i])
                return make

            direct = BraidDirect(a.lib, files[m], x)
            runners = [("braid in Triton", triton_call(m)),
                       ("braid in Triton, dynamic batching", triton_call(m + "_db")),
                       ("braid, called directly", lambda: direct.run),
                       ("onnxruntime, called directly", lambda: (lambda: sess.run(None, {name: x})))]
            for conc in concs:
                # the runners take turns, round by round, so that the other
                # tenants' load falls on each alike
                lat = {label: [] for label, _ in runners}
                for _round in range(a.rounds):
                    for label, make in runners:
                        lat[label] += closed_loop(make, conc, a.seconds, a.warmup)
                for label, _ in runners:
                    rows.append((m, label, conc) + summary(lat[label], a.seconds * a.rounds))
                    print("  ".join(str(v) for v in rows[-1]), file=sys.stderr)
            direct.close()
    finally:
        srv.stop()
    print(f"| model | served by | clients | requests/s | p50 ms | p99 ms |")
    print(f"|---|---|---:|---:|---:|---:|")
    for m, label, conc, rps, p50, p99 in rows:
        print(f"| {m} | {label} | {conc} | {rps:.1f} | {p50:.2f} | {p99:.2f} |")
    for m in models:
        print(f"\n{m}: {MODELS[m][3]}")


if __name__ == "__main__":
    main()
