"""test_plans.py: the plans braid makes for the models in models/gen have the
shape the design promises, read from `braid plan` and `braid run --profile`.

- two_conv_add: the two convolutions run on different streams and the Add
  waits on an event (2 streams, 1 event).
- inception: four towers on four streams (given up to 8); the Concat's stream
  waits on the other three (no single-dependency limit).
- wide: eight branches on eight streams given 8, at most N with --streams N;
  automatic on the CPU uses the graph's width capped by the thread budget.
- any model with --streams 1: one stream, no events.
- outputs are bitwise identical for any --streams and --threads.
- fusion: a Conv whose only reader is a Relu, LeakyRelu or constant-bound
  Clip absorbs it ("conv+act" in the plan); a Conv read twice, or that is a
  graph output, does not; the numbers match onnxruntime either way. A
  float16 Conv keeps its activation apart (the reference rounds between).
- load-time affine folding: a BatchNormalization, or a Mul and/or Add by
  per-channel (or scalar) constants, right after a Conv folds into its
  weights ("conv+mul+add", "conv+bn"); a spatially varying constant or a
  Conv read twice does not; the numbers match onnxruntime (1e-5).
- plan-time Conv+Add fusion: with one stream the Add of two_conv_add folds
  into a conv ("conv+add", 2 launches); with two streams the convs stay
  apart. In residual, skips computed before the conv fold at any stream
  count, and the projection block folds into its main-path conv so the
  shortcut still runs beside it.
- layout (CPU, the default --layout auto): the convolutions of inception run
  NHWC, with conversions only at the graph's edges; two_conv_add (3x3
  convolutions only, its input converted) stays NCHW; the outputs are
  bitwise identical for any --streams and --threads (the checks above on
  streams, events and folds plan with --layout nchw).
- --profile writes Chrome trace JSON with one track per stream and one slice
  per node, naming its op and shapes.
Usage: test_plans.py BRAID MODELS_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAILED: {what}")


def plan(braid, model, *args):
    """The plan's streams and summary; NCHW unless args choose a layout (the
    checks on streams, events and folds are about the scheduler)."""
    layout = [] if "--layout" in args else ["--layout", "nchw"]
    p = subprocess.run([braid, "plan", model, *args, *layout], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"braid plan {model} failed: {p.stderr}")
    streams = {}
    for line in p.stdout.splitlines():
        m = re.match(r"stream (\d+): (launch|wait|record) (\S+)", line)
        if m:
            streams.setdefault(int(m.group(1)), []).append((m.group(2), m.group(3)))
    summary = re.search(r"streams (\d+), events (\d+), arena (\d+) bytes \(intermediates (\d+) bytes\)", p.stdout)
    return streams, [int(x) for x in summary.groups()]


def stream_of(streams, prefix):
    for s, cmds in streams.items():
        for kind, arg in cmds:
            if kind == "launch" and arg.startswith(prefix):
                return s
    return None


def waits_before(streams, node_prefix):
    s = stream_of(streams, node_prefix)
    waits = []
    for kind, arg in streams[s]:
        if kind == "launch" and arg.startswith(node_prefix):
            return waits
        waits = waits + [arg] if kind == "wait" else ([] if kind == "launch" else waits)
    return waits


def write_case(tmp, name, g, outs, xv):
    """Saves graph g as a test case tmp/name (input x = xv, outputs from
    onnxruntime) and returns its folder."""
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb").write(
        numpy_helper.from_array(xv, "x").SerializeToString())
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    for i, v in enumerate(sess.run(None, {"x": xv})):
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(v, outs[i]).SerializeToString())
    return d


def fusion_tests(braid):
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")
    lo = numpy_helper.from_array(np.array(0, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(0.5, np.float32), "hi")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1])
    cases = {
        "relu": ([conv, helper.make_node("Relu", ["c"], ["y"], name="act")], ["y"], 1),
        "leaky": ([conv, helper.make_node("LeakyRelu", ["c"], ["y"], name="act", alpha=0.2)], ["y"], 1),
        "clip": ([conv, helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="act")], ["y"], 1),
        "two_readers": ([conv, helper.make_node("Relu", ["c"], ["y"], name="act"),
                         helper.make_node("Sigmoid", ["c"], ["z"], name="sig")], ["y", "z"], 0),
        "conv_is_output": ([conv, helper.make_node("Relu", ["c"], ["y"], name="act")], ["c", "y"], 0),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (nodes, outs, fused) in cases.items():
            g = helper.make_graph(nodes, name, [x], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                     for o in outs], [w, b, lo, hi])
            d = write_case(tmp, name, g, outs, rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
            p = subprocess.run([braid, "plan", os.path.join(d, "model.onnx")], capture_output=True, text=True)
            launches = [l for l in p.stdout.splitlines() if ": launch " in l]
            check(any("conv+act" in l for l in launches) == bool(fused),
                  f"fusion {name}: {'fused' if fused else 'not fused'}, plan: {launches}")
            check(len(launches) == len(nodes) - fused, f"fusion {name}: {len(nodes) - fused} launches, got {len(launches)}")
            p = subprocess.run([braid, "check", d, "--rtol", "1e-5", "--atol", "1e-5"], capture_output=True, text=True)
            check(p.returncode == 0, f"fusion {name}: matches onnxruntime: {p.stdout.strip()}")

        # A float16 Conv keeps its LeakyRelu apart: onnx's reference rounds the
        # Conv's output to float16 before the activation, an epilogue would not.
        import onnx
        from onnx.reference import ReferenceEvaluator
        wh = numpy_helper.from_array(numpy_helper.to_array(w).astype(np.float16), "w")
        bh = numpy_helper.from_array(numpy_helper.to_array(b).astype(np.float16), "b")
        g = helper.make_graph([conv, helper.make_node("LeakyRelu", ["c"], ["y"], name="act", alpha=0.3)], "half",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [wh, bh])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        d = os.path.join(tmp, "half")
        os.makedirs(os.path.join(d, "test_data_set_0"))
        onnx.save(m, os.path.join(d, "model.onnx"))
        xv = rng.standard_normal((1, 3, 8, 8)).astype(np.float16)
        open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb").write(
            numpy_helper.from_array(xv, "x").SerializeToString())
        open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb").write(
            numpy_helper.from_array(ReferenceEvaluator(m).run(None, {"x": xv})[0], "y").SerializeToString())
        p = subprocess.run([braid, "plan", os.path.join(d, "model.onnx")], capture_output=True, text=True)
        launches = [l for l in p.stdout.splitlines() if ": launch " in l]
        check(len(launches) == 2 and not any("conv+act" in l for l in launches),
              f"fusion half: the float16 Conv and its LeakyRelu stay two launches, plan: {launches}")
        p = subprocess.run([braid, "check", d, "--rtol", "1e-3", "--atol", "1e-3"], capture_output=True, text=True)
        check(p.returncode == 0, f"fusion half: matches onnx's reference: {p.stdout.strip()}")


def affine_tests(braid):
    """A per-channel affine after a Conv folds into its weights at load."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    arr = lambda shape: rng.standard_normal(shape).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w", arr((4, 3, 3, 3))), ("b", arr(4)), ("s", arr((1, 4, 1, 1))), ("t", arr((4, 1, 1))),
        ("k", np.array([0.5], np.float32)), ("sp", arr((1, 1, 8, 8))), ("bs", np.abs(arr(4)) + 0.5),
        ("bb", arr(4)), ("bm", arr(4)), ("bv", np.abs(arr(4)) + 0.1)]]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    conv = lambda ins=("x", "w", "b"): helper.make_node("Conv", list(ins), ["c"], name="conv", pads=[1, 1, 1, 1])
    mul = lambda other="s", out="m": helper.make_node("Mul", ["c", other], [out], name="mul")
    cases = {  # name: (nodes, outputs, the expected launch names)
        "mul_add": ([conv(), mul(), helper.make_node("Add", ["t", "m"], ["y"], name="add")], ["y"], ["conv+mul+add"]),
        "scalar_mul_relu": ([conv(("x", "w")), mul("k"), helper.make_node("Relu", ["m"], ["y"], name="act")], ["y"],
                            ["conv+mul+act"]),
        "bn": ([conv(), helper.make_node("BatchNormalization", ["c", "bs", "bb", "bm", "bv"], ["y"], name="bn",
                                         epsilon=1e-3)], ["y"], ["conv+bn"]),
        "spatial_mul": ([conv(), mul("sp", "y")], ["y"], ["conv", "mul"]),
        "conv_read_twice": ([conv(), mul(out="y"), helper.make_node("Relu", ["c"], ["z"], name="act")], ["y", "z"],
                            ["act", "conv", "mul"]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (nodes, outs, want) in cases.items():
            g = helper.make_graph(nodes, name, [x], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                     for o in outs], inits)
            d = write_case(tmp, name, g, outs, arr((1, 3, 8, 8)))
            p = subprocess.run([braid, "plan", os.path.join(d, "model.onnx")], capture_output=True, text=True)
            launches = sorted(l.split(": launch ")[1] for l in p.stdout.splitlines() if ": launch " in l)
            check(launches == want, f"affine {name}: launches {want}, got {launches}")
            p = subprocess.run([braid, "check", d, "--rtol", "1e-5", "--atol", "1e-5"], capture_output=True, text=True)
            check(p.returncode == 0, f"affine {name}: matches onnxruntime: {p.stdout.strip()}")


def main():
    braid, models = sys.argv[1], sys.argv[2]
    m = lambda name: os.path.join(models, name, "model.onnx")

    s, (ns, ne, arena, total) = plan(braid, m("two_conv_add"), "--shape", "x=8x16x32x32")
    check(ns == 2 and ne == 1, f"two_conv_add: 2 streams and 1 event, got {ns} and {ne}")
    check(stream_of(s, "conv_a") != stream_of(s, "conv_b"), "two_conv_add: the convs are on different streams")
    check(len(waits_before(s, "add")) == 1, "two_conv_add: the Add waits on one event right before it")
    check(arena <= total, f"two_conv_add: arena {arena} <= intermediates {total}")

    s, (ns, ne, arena, total) = plan(braid, m("inception"), "--streams", "8")
    check(ns == 4, f"inception: 4 streams, got {ns}")
    towers = {stream_of(s, t) for t in ("t1_", "t2_", "t3_", "t4_")}
    check(len(towers) == 4, f"inception: each tower on its own stream, got {towers}")
    check(len(waits_before(s, "concat")) == 3, f"inception: the Concat waits on 3 events, got {waits_before(s, 'concat')}")

    s, (ns, ne, arena, total) = plan(braid, m("wide"), "--streams", "8")
    check(ns == 8, f"wide: 8 streams given 8, got {ns}")
    for threads in (1, 2, 3, 6):
        s, (ns, ne, arena, total) = plan(braid, m("wide"), "--backend", "cpu", "--threads", str(threads))
        check(ns == threads, f"wide: automatic on the CPU with {threads} threads gives {threads} streams, got {ns}")
    for cap in (2, 3):
        s, (ns, ne, arena, total) = plan(braid, m("wide"), "--streams", str(cap))
        check(ns <= cap, f"wide: at most {cap} streams with --streams {cap}, got {ns}")

    s, (ns, ne, arena, total) = plan(braid, m("two_conv_add"), "--shape", "x=8x16x32x32", "--streams", "1")
    launches = [a for c in s.values() for k, a in c if k == "launch"]
    check(len(launches) == 2 and any(re.fullmatch(r"conv_[ab]_\d+\+add_\d+", a) for a in launches),
          f"two_conv_add --streams 1: the Add folds into a conv (2 launches), got {launches}")
    s, (ns, ne, arena, total) = plan(braid, m("two_conv_add"), "--shape", "x=8x16x32x32", "--streams", "1", "--no-fold")
    launches = [a for c in s.values() for k, a in c if k == "launch"]
    check(sorted(launches) == ["add_7", "conv_a_3", "conv_b_6"], f"two_conv_add --no-fold: 3 launches, got {launches}")
    s, (ns, ne, arena, total) = plan(braid, m("residual"), "--shape", "x=2x16x32x32", "--streams", "2")
    launches = [a for c in s.values() for k, a in c if k == "launch"]
    check(sorted(launches) == ["b1_c1_3+b1_c1_relu_4", "b1_c2_7+b1_add_8+b1_relu_9", "b2_c1_12+b2_c1_relu_13",
                               "b2_c2_16+b2_add_20+b2_relu_21", "b2_proj_19", "b3_dw_23+b3_add_24+b3_leaky_25",
                               "b4_c1_28+b4_c1_relu_29+b4_add_30"], f"residual --streams 2: folds, got {launches}")
    check(ns == 2 and stream_of(s, "b2_proj") != stream_of(s, "b2_c2"),
          f"residual --streams 2: the shortcut runs beside the main path, got {ns} streams")

    for name in ("two_conv_add", "inception", "fpn", "wide", "race", "residual"):
        args = ["--shape", "x=8x16x32x32"] if name in ("two_conv_add", "residual") else []
        s, (ns, ne, arena, total) = plan(braid, m(name), "--streams", "1", *args)
        check(ns == 1 and ne == 0, f"{name}: --streams 1 gives 1 stream and no events, got {ns}, {ne}")
        check(arena <= total, f"{name}: arena {arena} <= intermediates {total}")

    p = subprocess.run([braid, "plan", m("inception"), "--backend", "cpu"], capture_output=True, text=True)
    launches = [l.split(": launch ")[1] for l in p.stdout.splitlines() if ": launch " in l]
    convs = [a for a in launches if a.startswith(("t1_", "t2_", "t3_", "t4_"))]
    check(len(convs) == 7 and all(a.endswith("(NHWC)") for a in convs), f"inception: the towers run NHWC, got {launches}")
    inner = sorted(a for a in launches if a.startswith("to_n"))
    check(inner == ["to_nchw(y)", "to_nhwc(x) (NHWC)"], f"inception: conversions only at the edges, got {inner}")
    p = subprocess.run([braid, "plan", m("two_conv_add"), "--backend", "cpu", "--shape", "x=8x16x32x32"],
                       capture_output=True, text=True)
    check(p.returncode == 0 and "NHWC" not in p.stdout and "to_n" not in p.stdout,
          f"two_conv_add: stays NCHW (3x3 convolutions behind a conversion), plan: {p.stdout}")

    # Outputs are bitwise identical for any number of streams and threads.
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in (("wide", []), ("two_conv_add", ["--shape", "x=4x16x32x32"]), ("fpn", []),
                           ("residual", ["--shape", "x=2x16x32x32"])):
            digests = set()
            for streams in ("1", "2", "4", "0"):
                for threads in ("1", "2", "3"):
                    # residual also without plan-time folds: a folded Add adds the same two sums
                    fold = ["--no-fold"] if name == "residual" and threads == "3" else []
                    out = os.path.join(tmp, f"{name}_{streams}_{threads}")
                    p = subprocess.run([braid, "run", m(name), *args, *fold, "--backend", "cpu", "--streams", streams,
                                        "--threads", threads, "--output-dir", out], capture_output=True, text=True)
                    check(p.returncode == 0, f"{name}: run with {streams} streams, {threads} threads: {p.stderr}")
                    digests.add(b"".join(open(os.path.join(out, f), "rb").read() for f in sorted(os.listdir(out))))
            check(len(digests) == 1, f"{name}: outputs bitwise identical for streams 1/2/4/auto x threads 1/2/3, "
                                     f"got {len(digests)} different results")

    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "trace.json")
        p = subprocess.run([braid, "run", m("inception"), "--backend", "cpu", "--streams", "8", "--profile", prof,
                            "--layout", "nchw"], capture_output=True, text=True)
        check(p.returncode == 0, f"run --profile exits 0: {p.stderr}")
        trace = json.load(open(prof))["traceEvents"]
        slices = [e for e in trace if e["ph"] == "X"]
        tracks = {e["tid"] for e in slices}
        names = [e for e in trace if e["ph"] == "M" and e["name"] == "thread_name"]
        check(len(tracks) == 4, f"profile: 4 stream tracks, got {sorted(tracks)}")
        check(len(names) == 4, f"profile: 4 named tracks, got {len(names)}")
        check(len(slices) == 8, f"profile: one slice per node (14 nodes, 6 Relus fused: 8), got {len(slices)}")
        check(all(e["args"]["op"] and e["args"]["outputs"] for e in slices), "profile: slices name their op and shapes")
        check(any(e["args"]["op"] == "Concat" and e["args"]["outputs"] == "1x160x28x28" for e in slices),
              "profile: the Concat slice shows its output shape 1x160x28x28")

    fusion_tests(braid)
    affine_tests(braid)

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
