#!/usr/bin/env python3
"""bench.py: braid's serial plan, braid's concurrent plan and onnxruntime on
the same model and input, in one run, with the machine named. Prints a
Markdown table (and appends it to a file with --append FILE).

braid is timed with `braid bench`, which runs the serial plan and the
concurrent plan alternately (so load from elsewhere falls on both alike);
onnxruntime right after with the same counts, all graph optimizations on, in
both its sequential and its parallel execution mode.
Usage: bench.py MODEL [--shape NAME=1x3x224x224] [--threads N] [--iterations K] [--warmup W]
                [--braid build/braid] [--append docs/benchmarks.md] [--label TEXT]
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

DTYPES = {1: np.float32, 7: np.int64, 6: np.int32, 9: np.bool_, 11: np.float64}


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def braid_medians(braid, model, shapes, threads, iters, warmup, backend):
    """braid's serial and concurrent plans, timed alternately by `braid bench`."""
    cmd = [braid, "bench", model, "--threads", str(threads), "--iterations", str(iters), "--warmup", str(warmup),
           "--backend", backend]
    for s in shapes:
        cmd += ["--shape", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench.py: {' '.join(cmd)} failed: {p.stderr.strip()}")
    m = re.search(r"serial plan median ([\d.]+) ms \(min ([\d.]+)\), concurrent plan median ([\d.]+) ms \(min ([\d.]+)\)",
                  p.stdout)
    streams = subprocess.run([braid, "plan", model, "--threads", str(threads), "--backend", backend] +
                             [x for s in shapes for x in ("--shape", s)], capture_output=True, text=True).stdout
    n = re.search(r"streams (\d+), events (\d+)", streams)
    return [float(x) for x in m.groups()], (int(n.group(1)), int(n.group(2))) if n else (0, 0)


def ort_median(model, shapes, threads, iters, warmup, parallel):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = threads
    so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if parallel else ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    given = dict(s.split("=", 1) for s in shapes)
    feeds, rng = {}, np.random.default_rng(0)
    for i in sess.get_inputs():
        m = onnx.load(model, load_external_data=False)
        decl = next(v for v in m.graph.input if v.name == i.name)
        dt = DTYPES[decl.type.tensor_type.elem_type]
        dims = [int(d) for d in given[i.name].split("x")] if i.name in given else [int(d) for d in i.shape]
        feeds[i.name] = rng.random(dims).astype(dt)
    for _ in range(warmup):
        sess.run(None, feeds)
    ms = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        ms.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ms), min(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--braid", default=os.path.join(os.path.dirname(__file__), "..", "build", "braid"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--append")
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    (serial, serial_min, conc, conc_min), (ns, ne) = braid_medians(a.braid, a.model, a.shape, a.threads, a.iterations,
                                                                   a.warmup, a.backend)
    o_seq, o_seq_min = ort_median(a.model, a.shape, a.threads, a.iterations, a.warmup, False)
    o_par, o_par_min = ort_median(a.model, a.shape, a.threads, a.iterations, a.warmup, True)
    name = os.path.relpath(a.model)
    machine = f"{cpu_name()}, {os.cpu_count()} cores, {a.backend}, {a.threads} threads"
    rows = [
        f"| {name}{' ' + a.label if a.label else ''} | braid serial plan (--streams 1) | {serial:.3f} | {serial_min:.3f} | 1.00 |",
        f"| | braid concurrent plan (automatic: {ns} streams, {ne} events) | {conc:.3f} | {conc_min:.3f} | {serial / conc:.2f} |",
        f"| | onnxruntime {ort.__version__}, sequential | {o_seq:.3f} | {o_seq_min:.3f} | {serial / o_seq:.2f} |",
        f"| | onnxruntime {ort.__version__}, parallel execution | {o_par:.3f} | {o_par_min:.3f} | {serial / o_par:.2f} |",
    ]
    table = "\n".join([f"Machine: {machine}; {a.iterations} iterations after {a.warmup} warm-up; braid's two plans "
                        "run alternately, onnxruntime right after.", "",
                       "| model | runner | median ms | min ms | speed vs braid serial (medians) |",
                       "|---|---|---|---|---|"] + rows)
    print(table)
    if a.append:
        with open(a.append, "a") as f:
            f.write("\n" + table + "\n")


if __name__ == "__main__":
    main()
