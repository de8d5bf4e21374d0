#!/usr/bin/env python3
"""bench_python.py: per-run overhead from Python, braid's package against
onnxruntime, on a one-node model (Add of two small float32 tensors). The two
runtimes' sessions run alternately in rounds inside one process, so load from
elsewhere falls on both alike; prints the median and minimum microseconds per
run() of each, with the machine.
Usage: bench_python.py [--n 8] [--rounds 200] [--per-round 50] [--threads 1]
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import cpu_name  # noqa: E402  (the machine line, as bench.py prints it)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8, help="elements per input")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--per-round", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    import braid
    import onnxruntime as ort

    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "add",
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [a.n]) for x in "ab"],
                          [helper.make_tensor_value_info("c", TensorProto.FLOAT, [a.n])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    tmp = tempfile.mkdtemp(prefix="bench-python-")
    path = os.path.join(tmp, "add.onnx")
    onnx.save(model, path)
    feeds = {"a": np.arange(a.n, dtype=np.float32), "b": np.ones(a.n, np.float32)}

    bo = braid.SessionOptions()
    bo.intra_op_num_threads = a.threads
    bs = braid.InferenceSession(path, bo, providers=["CPUExecutionProvider"])
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    os_ = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    want = feeds["a"] + feeds["b"]
    runners = {"braid run()": lambda: bs.run(None, feeds),
               "braid run_views()": lambda: bs.run_views(None, feeds),
               f"onnxruntime {ort.__version__} run()": lambda: os_.run(None, feeds)}
    for f in runners.values():
        np.testing.assert_array_equal(f()[0], want)
        for _ in range(200):
            f()
    times = {k: [] for k in runners}
    for _ in range(a.rounds):
        for k, f in runners.items():
            t = time.perf_counter()
            for _ in range(a.per_round):
                f()
            times[k].append((time.perf_counter() - t) / a.per_round * 1e6)
    print(f"Machine: {cpu_name()}, {os.cpu_count()} cores; Python {platform.python_version()}, numpy {np.__version__}; "
          f"Add of two float32[{a.n}], {a.threads} thread(s); {a.rounds} rounds of {a.per_round} runs, "
          "runtimes alternating per round.")
    print()
    print("| runner | median µs per run | min µs per run |")
    print("|---|---|---|")
    for k, v in times.items():
        print(f"| {k} | {statistics.median(v):.2f} | {min(v):.2f} |")


if __name__ == "__main__":
    main()
