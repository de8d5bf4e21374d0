"""test_errors.py: bad input gets a clear error, never a crash. Each case
builds a broken model or input, runs the braid command, and asserts the exit
code (1 failure, 2 usage, 3 unsupported) and the message naming what and
where. Also: the loader's successful paths that need files (external data,
symbolic dims resolved per run).
Usage: test_errors.py BRAID TMPDIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

passed = failed = 0


def expect(args, code, *needles, braid=None, env=None):
    global passed, failed
    p = subprocess.run([BRAID] + args, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **env) if env else None)
    text = p.stdout + p.stderr
    bad = []
    if p.returncode != code:
        bad.append(f"exit {p.returncode}, expected {code}")
    if p.returncode < 0 or "Sanitizer" in text:
        bad.append("crashed")
    for n in needles:
        if n not in text:
            bad.append(f"no '{n}' in output")
    if bad:
        failed += 1
        print(f"FAILED: braid {' '.join(args)}: {'; '.join(bad)}\n  output: {text.strip()[:500]}")
    else:
        passed += 1


def save(model, name):
    path = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path


def graph(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


F = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main():
    global BRAID, TMP
    BRAID, TMP = sys.argv[1], sys.argv[2]
    models = os.path.join(os.path.dirname(__file__), "..", "..", "models", "gen")
    os.makedirs(TMP, exist_ok=True)
    good = os.path.join(models, "fpn", "model.onnx")
    raw = open(good, "rb").read()

    # Files that are not models.
    trunc = os.path.join(TMP, "truncated.onnx")
    open(trunc, "wb").write(raw[: len(raw) // 2])
    expect(["run", trunc], 1, "truncated.onnx", "not a valid ONNX protobuf")
    rnd = os.path.join(TMP, "random.onnx")
    open(rnd, "wb").write(np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    expect(["run", rnd], 1, "random.onnx")
    empty = os.path.join(TMP, "empty.onnx")
    open(empty, "wb").write(b"")
    expect(["run", empty], 1, "the model is empty (0 bytes)")
    expect(["run", os.path.join(TMP, "missing.onnx")], 1, "cannot open", "missing.onnx")
    expect(["info", TMP], 1, "cannot read", "it is a directory, not a file")
    expect(["info", trunc], 1, "not a valid ONNX protobuf")

    # Inputs that do not fit.
    np.save(os.path.join(TMP, "x_shape.npy"), np.zeros((1, 3, 64, 63), np.float32))
    expect(["run", good, "--input", f"x={TMP}/x_shape.npy"], 1,
           "input 'x' has shape 1x3x64x63 but the model declares 1x3x64x64")
    np.save(os.path.join(TMP, "x_dtype.npy"), np.zeros((1, 3, 64, 64), np.float64))
    expect(["run", good, "--input", f"x={TMP}/x_dtype.npy"], 1, "input 'x' has dtype float64 but the model declares float32")
    expect(["run", good, "--input", f"x={TMP}/nope.npy"], 1, "input 'x'", "cannot open", "nope.npy")
    expect(["run", good, "--input", "y=whatever.npy"], 1, "the model has no input named 'y'")
    open(os.path.join(TMP, "bad.npy"), "wb").write(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
    expect(["run", good, "--input", f"x={TMP}/bad.npy"], 1, "input 'x'", "truncated .npy header")

    # Symbolic dims: resolved from --shape, refused without it.
    two = os.path.join(models, "two_conv_add", "model.onnx")
    expect(["run", two, "--shape", "x=3x16x32x32"], 0, "y: shape 3x32x32x32 dtype float32")
    expect(["run", two], 1, "input 'x' has a dynamic dim 'N': give its shape with --shape x=...")
    expect(["run", two, "--shape", "x=3x16x32"], 1, "input 'x' has shape 3x16x32 but the model declares Nx16x32x32")

    # Usage.
    expect(["run"], 2, "run needs a model")
    expect(["frobnicate", good], 2, "unknown command 'frobnicate'")
    expect(["run", good, "--streams", "x"], 2, "--streams must be an integer")
    expect(["run", good, "--backend", "tpu"], 2, "--backend must be cpu, cuda or auto")
    expect(["run", good, "--cuda-workspace", "-1"], 2, "--cuda-workspace must be a whole number of MB from 0 to 65536")
    expect(["run", good, "--cuda-workspace", "70000"], 2, "--cuda-workspace must be a whole number of MB")
    expect(["run", good, "--cuda-workspace", "0", "--backend", "cpu"], 0)  # a CUDA option the CPU ignores
    # The CUDA backend is a library of its own (libbraid_cuda.so beside braid),
    # loaded only where the driver reports a device or BRAID_CUDA_EMULATOR=1
    # asks for the emulated one (libbraid_cuda_emu.so): when it cannot be
    # loaded, auto runs on the CPU and says why, cuda fails; a module that is
    # not the one asked for is refused.
    here = os.path.dirname(os.path.abspath(BRAID))
    if os.path.exists(os.path.join(here, "libbraid_cuda_emu.so")):
        def emu(path):
            return {"BRAID_CUDA_EMULATOR": "1", "BRAID_CUDA_EMULATOR_MODULE": path}
        gone = emu(os.path.join(TMP, "missing", "libbraid_cuda_emu.so"))
        expect(["run", good], 0, "backend cpu (the emulated CUDA backend library could not be loaded:",
               "missing/libbraid_cuda_emu.so: cannot open shared object file", env=gone)
        expect(["run", good, "--backend", "cuda"], 1, "the CUDA backend was asked for but the emulated CUDA backend "
               "library could not be loaded", env=gone)
        save(graph([], [], []), "not_braid.so")
        expect(["run", good], 0, "backend cpu (the emulated CUDA backend library could not be loaded:",
               env=emu(os.path.join(TMP, "not_braid.so")))
        expect(["run", good, "--backend", "cuda"], 1, "is not the CUDA backend of this braid (a real device's "
               "backend, not the emulated one", env=emu(os.path.join(here, "libbraid_cuda.so")))

    # Validation errors of the loader: each names the node, the op and the problem.
    x, y = F("x", [2, 3]), F("y", [2, 3])
    m = graph([helper.make_node("FooBar", ["x"], ["y"], name="weird")], [x], [y])
    expect(["run", save(m, "unsupported.onnx")], 3, "node 'weird' (FooBar): unsupported op 'FooBar'")
    expect(["info", save(m, "unsupported.onnx")], 0, "unsupported ops: 1 FooBar")
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y], opset=99)
    expect(["run", save(m, "opset.onnx")], 3, "the model imports opset 99 of the default domain; braid supports 1 to 28")
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")], [x], [y])
    expect(["run", save(m, "domain.onnx")], 1, "node 'r' (Relu): the model imports no opset for domain 'com.example'")
    # Domains: one braid knows nothing of is named; a known op outside its opsets says which it runs.
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.example")], [x], [y])
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    expect(["run", save(m, "domain2.onnx")], 3,
           "node 'r' (Relu): unsupported op 'Relu' in domain 'com.example': braid runs no op of that domain")
    expect(["info", save(m, "domain2.onnx")], 0, "unsupported ops: 1 com.example.Relu")
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r", domain="com.microsoft")], [x], [y])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    expect(["run", save(m, "ms_relu.onnx")], 3, "node 'r' (Relu): unsupported op 'Relu' in domain 'com.microsoft'")
    m = graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="add1")], [x], [y])
    expect(["run", save(m, "missing_input.onnx")], 1,
           "node 'add1' (Add): input 'ghost' is not a graph input, an initializer or the output of any node")
    m = graph([helper.make_node("Relu", ["b"], ["a"], name="n1"), helper.make_node("Relu", ["a"], ["b"], name="n2"),
               helper.make_node("Add", ["x", "a"], ["y"], name="n3")], [x], [y])
    expect(["run", save(m, "cycle.onnx")], 1, "the graph has a cycle through this node")
    m = graph([helper.make_node("Relu", ["x", "x"], ["y"], name="r2")], [x], [y])
    expect(["run", save(m, "arity.onnx")], 1, "node 'r2' (Relu): has 2 inputs, Relu takes 1 to 1")
    m = graph([helper.make_node("LeakyRelu", ["x"], ["y"], name="lr", alpha="big")], [x], [y])
    expect(["run", save(m, "attr.onnx")], 1, "node 'lr' (LeakyRelu): attribute 'alpha' must be a float")
    c = numpy_helper.from_array(np.ones((2, 3), np.int64), "c")
    m = graph([helper.make_node("Add", ["x", "c"], ["y"], name="mixed")], [x], [y], [c])
    expect(["run", save(m, "dtype.onnx")], 1, "node 'mixed' (Add)", "int64")
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])
    m.graph.output[0].name = "nowhere"
    expect(["run", save(m, "output.onnx")], 1, "graph output 'nowhere' is not produced by any node")
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r"), helper.make_node("Relu", ["x"], ["y"], name="r_again")], [x], [y])
    expect(["run", save(m, "twice.onnx")], 1, "node 'r_again' (Relu): output 'y' is already produced elsewhere")

    # Subgraphs and control flow: a branch that reads a value no graph defines
    # is refused at load naming both nodes; a loop past the session's limit
    # fails naming the node; --loop-limit is checked; braid info counts the
    # ops inside subgraphs and braid plan prints nested plans under their node.
    then_g = helper.make_graph([helper.make_node("Add", ["x", "ghost"], ["t"], name="inner_add")], "then", [], [F("t", [2, 3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="inner_neg")], "else", [], [F("e", [2, 3])])
    cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    m = graph([helper.make_node("If", ["c"], ["y"], name="branchy", then_branch=then_g, else_branch=else_g)], [cond, x], [y])
    expect(["run", save(m, "if_ghost.onnx")], 1, "node 'branchy' (If): subgraph 'then_branch': node 'inner_add' (Add): "
           "input 'ghost' is not a graph input, an initializer or the output of any node, in its graph or an enclosing one")
    then_g = helper.make_graph([helper.make_node("Add", ["x", "x"], ["t"], name="inner_add")], "then", [], [F("t", [2, 3])])
    m = graph([helper.make_node("If", ["c"], ["y"], name="branchy", then_branch=then_g, else_branch=else_g)], [cond, x], [y])
    expect(["info", save(m, "if_ok.onnx")], 0, "nodes: 1 (3 with subgraphs and functions)", "Add", "Neg",
           "unsupported ops: 0")
    expect(["plan", save(m, "if_ok.onnx")], 0, "launch branchy (If: its condition is read on the host, one synchronization on CUDA)")
    loop = os.path.join(models, "loop", "model.onnx")
    expect(["run", loop, "--loop-limit", "2"], 1, "node 'loop' (Loop): ran past the session's loop limit of 2 "
           "iterations (braid_options_set_loop_limit, --loop-limit)")
    expect(["run", loop, "--loop-limit", "3"], 0, "neg_means: shape 3x1x16")
    expect(["run", loop, "--loop-limit", "0"], 2, "--loop-limit must be a positive integer")
    expect(["plan", loop], 0, "    body (3 iterations in the last run):", "stage 0 ends: the host reads the shape of 'means'")

    # A Pad (opset 11+) without its 'pads' input, after a node with more inputs:
    # inference must not read the previous node's inputs (found by fuzzing).
    m = graph([helper.make_node("Add", ["x", "x"], ["t"], name="add"), helper.make_node("Pad", ["t"], ["y"], name="pad")],
              [x], [y])
    expect(["run", save(m, "pad_no_pads.onnx")], 1, "node 'pad' (Pad): Pad from opset 11 needs its 'pads' input")
    # A Slice (opset 10+) with only its data input, alone in the graph: the
    # slots it reads past its inputs exist and read as omitted (found by
    # fuzzing: the slot array was sized by the graph's widest node).
    m = graph([helper.make_node("Slice", ["x"], ["y"], name="s")], [x], [y])
    expect(["run", save(m, "slice_alone.onnx")], 1, "node 's' (Slice): input 'starts' is missing")

    # Sizes: declared dims larger than anything, or than the bytes present.
    big = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 30, 1 << 30], raw_data=b"\0" * 16)
    m = graph([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [x], [y], [big])
    expect(["run", save(m, "huge.onnx")], 1, "tensor 'w': tensor of shape 1073741824x1073741824 is larger than 2^40 bytes")
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=b"\0" * 8)
    m = graph([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [x], [y], [short])
    expect(["run", save(m, "short.onnx")], 1, "tensor 'w' declares 6 elements (24 bytes) but holds 8 bytes")

    # External data: read relative to the model's folder; never outside it.
    ext_dir = os.path.join(TMP, "ext")
    os.makedirs(ext_dir, exist_ok=True)
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    open(os.path.join(ext_dir, "weights.bin"), "wb").write(b"\0" * 16 + w.tobytes())

    def ext_model(location, offset=16, length=24):
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        return graph([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [x], [y], [t])

    xin = os.path.join(TMP, "x23.npy")
    np.save(xin, np.ones((2, 3), np.float32))
    expect(["run", save(ext_model("weights.bin"), "ext/ok.onnx"), "--input", f"x={xin}"], 0,
           "y: shape 2x3 dtype float32 min 1 max 6 mean 3.5")
    expect(["run", save(ext_model("../x23.npy"), "ext/escape.onnx")], 1,
           "tensor 'w': external data path '../x23.npy' leaves the model's folder")
    expect(["run", save(ext_model("/etc/passwd"), "ext/absolute.onnx")], 1,
           "tensor 'w': external data path '/etc/passwd' leaves the model's folder")
    os.symlink("/etc", os.path.join(ext_dir, "etc_link")) if not os.path.exists(os.path.join(ext_dir, "etc_link")) else None
    expect(["run", save(ext_model("etc_link/passwd"), "ext/symlink.onnx")], 1, "leaves the model's folder")
    expect(["run", save(ext_model("weights.bin", offset=4096), "ext/past_end.onnx")], 1,
           "external data file 'weights.bin' is shorter than offset 4096 + 24 bytes")
    expect(["run", save(ext_model("absent.bin"), "ext/absent.onnx")], 1, "tensor 'w': cannot open external data")

    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
