"""test_data_dtypes.py: the data-movement ops (shape, layout, index, scatter,
generate) on every dtype braid holds: bfloat16, the float8 kinds, the sub-byte
types (one per byte in braid, packed in the .pb files) and the usual ones.
Each case is a one-node model whose expected output comes from onnx's
reference implementation; braid must match it bit for bit (`braid check`,
tolerance 0). Combinations the op's schema does not allow are not made.
The data-shape ops (NonZero, Compress, Unique) run with their inputs frozen
as initializers, so that braid folds them at plan time.
Usage: test_data_dtypes.py BRAID WORK_DIR"""
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

DTYPES = {
    TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.FLOAT16: np.float16, TP.BFLOAT16: ml_dtypes.bfloat16,
    TP.INT8: np.int8, TP.INT16: np.int16, TP.INT32: np.int32, TP.INT64: np.int64,
    TP.UINT8: np.uint8, TP.UINT16: np.uint16, TP.UINT32: np.uint32, TP.UINT64: np.uint64, TP.BOOL: np.bool_,
    TP.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn, TP.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TP.FLOAT8E5M2: ml_dtypes.float8_e5m2, TP.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
    TP.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu, TP.UINT4: ml_dtypes.uint4, TP.INT4: ml_dtypes.int4,
    TP.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
}
if hasattr(TP, "INT2"):
    DTYPES[TP.INT2] = ml_dtypes.int2
    DTYPES[TP.UINT2] = ml_dtypes.uint2


def values(dt, shape, rng):
    """Distinct-looking values representable in dt (no NaN: a NaN code may change in a copy)."""
    n = int(np.prod(shape))
    t = DTYPES[dt]
    if t == np.bool_:
        return (rng.integers(0, 2, n) == 1).reshape(shape)
    if dt in (TP.UINT4, TP.INT4, TP.UINT2, TP.INT2):
        info = ml_dtypes.iinfo(t)
        return rng.integers(int(info.min), int(info.max) + 1, n).astype(t).reshape(shape)
    if dt == TP.FLOAT8E8M0:
        return np.exp2(rng.integers(-5, 6, n)).astype(t).reshape(shape)
    if np.issubdtype(t, np.integer):
        return rng.integers(0 if np.issubdtype(t, np.unsignedinteger) else -100, 100, n).astype(t).reshape(shape)
    return (rng.integers(-12, 13, n) / 4).astype(np.float32).astype(t).reshape(shape)


def ints(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def cases(dt, rng):
    """(name, node, inputs {name: array}, initializers) for one dtype."""
    x = values(dt, (2, 3, 4), rng)
    x4 = values(dt, (1, 8, 2, 4), rng)
    n = helper.make_node
    yield "identity", n("Identity", ["x"], ["y"]), {"x": x}, []
    yield "reshape", n("Reshape", ["x", "s"], ["y"]), {"x": x}, [ints("s", [4, 0, -1])]
    yield "flatten", n("Flatten", ["x"], ["y"], axis=-1), {"x": x}, []
    yield "squeeze", n("Squeeze", ["x", "a"], ["y"]), {"x": x4}, [ints("a", [0])]
    yield "unsqueeze", n("Unsqueeze", ["x", "a"], ["y"]), {"x": x}, [ints("a", [-1, 1])]
    yield "transpose", n("Transpose", ["x"], ["y"], perm=[2, 0, 1]), {"x": x}, []
    yield "concat", n("Concat", ["x", "x2"], ["y"], axis=-2), {"x": x, "x2": values(dt, (2, 1, 4), rng)}, []
    yield "split", n("Split", ["x"], ["y", "y2"], axis=2, num_outputs=2), {"x": x}, []
    yield "slice", n("Slice", ["x", "st", "en", "ax", "sp"], ["y"]), {"x": x}, [
        ints("st", [-1, 0]), ints("en", [-100, 3]), ints("ax", [2, 1]), ints("sp", [-2, 2])]
    yield "gather", n("Gather", ["x", "i"], ["y"], axis=1), {"x": x}, [ints("i", [[2, -3], [0, 1]])]
    yield "expand", n("Expand", ["x", "s"], ["y"]), {"x": values(dt, (3, 1), rng)}, [ints("s", [2, 3, 4])]
    yield "tile", n("Tile", ["x", "r"], ["y"]), {"x": x}, [ints("r", [1, 2, 2])]
    yield "pad_reflect", n("Pad", ["x", "p"], ["y"], mode="reflect"), {"x": x}, [ints("p", [0, 1, 2, 1, 0, 3])]
    yield "pad_constant", n("Pad", ["x", "p", "c"], ["y"]), {"x": x, "c": values(dt, (), rng)}, [
        ints("p", [1, 0, 0, 0, 2, 1])]
    yield "depthtospace", n("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD"), {"x": x4}, []
    yield "spacetodepth", n("SpaceToDepth", ["x"], ["y"], blocksize=2), {"x": x4}, []
    yield "centercroppad", n("CenterCropPad", ["x", "s"], ["y"]), {"x": x}, [ints("s", [3, 2, 5])]
    yield "gatherelements", n("GatherElements", ["x", "i"], ["y"], axis=2), {"x": x}, [
        ints("i", rng.integers(-4, 4, (2, 3, 5)))]
    yield "gathernd", n("GatherND", ["x", "i"], ["y"], batch_dims=1), {"x": x}, [ints("i", [[[2, -1]], [[0, 0]]])]
    yield "scatterelements", n("ScatterElements", ["x", "i", "u"], ["y"], axis=1), {
        "x": x, "u": values(dt, (2, 2, 4), rng)}, [ints("i", [[[0, 1, 2, -1], [2, 2, 0, 1]], [[1, 1, 1, 1], [0, -3, 2, 0]]])]
    yield "scatternd", n("ScatterND", ["x", "i", "u"], ["y"]), {"x": x, "u": values(dt, (2, 4), rng)}, [
        ints("i", [[1, 2], [0, -1]])]
    yield "tensorscatter", n("TensorScatter", ["x", "u", "w"], ["y"], mode="circular"), {
        "x": x, "u": values(dt, (2, 2, 4), rng)}, [ints("w", [2, 1])]
    yield "trilu", n("Trilu", ["x", "k"], ["y"], upper=0), {"x": x}, [ints("k", 1)]
    yield "reversesequence", n("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1), {"x": x}, [
        ints("l", [3, 1])]
    yield "nonzero", n("NonZero", ["x"], ["y"]), {}, [numpy_helper.from_array(x, "x")]
    yield "compress", n("Compress", ["x", "c"], ["y"], axis=1), {}, [
        numpy_helper.from_array(x, "x"), numpy_helper.from_array(np.array([True, False, True]), "c")]
    yield "unique", n("Unique", ["x"], ["y", "i", "v", "c"], axis=2, sorted=1), {}, [numpy_helper.from_array(x, "x")]
    yield "constantofshape", n("ConstantOfShape", ["s"], ["y"], value=numpy_helper.from_array(values(dt, (1,), rng))), {}, [
        ints("s", [2, 3])]
    yield "size", n("Size", ["x"], ["y"]), {"x": x}, []
    yield "bitcast", n("BitCast", ["x"], ["y"], to=dt), {"x": x}, []


def write_case(path, node, feeds, inits):
    """Writes the case; True, or why it was not made."""
    ins = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(o) for o in node.output]
    g = helper.make_graph([node], "t", ins, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])  # every type the schemas take
    m.ir_version = 13
    try:
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:
        return str(e)  # the schema does not take this dtype
    try:
        got = ReferenceEvaluator(m).run(None, feeds)
    except Exception as e:
        return "the reference fails: " + str(e)
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(path, "model.onnx"))
    for i, (k, v) in enumerate(feeds.items()):
        t = numpy_helper.from_array(np.asarray(v), k)
        open(os.path.join(path, "test_data_set_0", f"input_{i}.pb"), "wb").write(t.SerializeToString())
    for i, v in enumerate(got):
        t = numpy_helper.from_array(np.asarray(v), node.output[i])
        open(os.path.join(path, "test_data_set_0", f"output_{i}.pb"), "wb").write(t.SerializeToString())
    with open(os.path.join(path, "tolerance.txt"), "w") as f:
        f.write("0 0\n")
    return True


def main():
    braid, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    rng = np.random.default_rng(11)
    made = passed = 0
    failed = []
    for dt in DTYPES:
        for name, node, feeds, inits in cases(dt, rng):
            case = os.path.join(work, f"{name}_{onnx.helper.tensor_dtype_to_string(dt)[12:].lower()}")
            refused = write_case(case, node, feeds, inits)
            if refused is not True:
                if os.environ.get("VERBOSE"):
                    print("not made", os.path.basename(case), refused.splitlines()[0][:200])
                continue
            made += 1
            p = subprocess.run([braid, "check", case], capture_output=True, text=True)
            if p.returncode == 0:
                passed += 1
            else:
                failed.append(f"{os.path.basename(case)}: {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")
    for f in failed:
        print("FAILED", f)
    print(f"{made} cases, {passed} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
