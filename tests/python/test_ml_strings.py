"""test_ml_strings.py: the ai.onnx.ml ops on strings and the SVMs, against
onnxruntime. Each case is a one-node model; onnxruntime's CPU provider gives
the expected outputs; `braid check` must match them (strings exactly,
numbers within the case's tolerance). Cases:
  - LabelEncoder (opsets 2 and 4): string -> int64, int64 -> string,
    string -> string, float -> string, string -> float, string -> int16
    through tensor attributes, defaults given or not, keys that miss, 2-D
    and empty inputs;
  - CategoryMapper: string -> int64 and int64 -> string, with and without
    defaults, 2-D and empty inputs;
  - SVMClassifier and SVMRegressor (see svm_cases).
Refusals: exact messages for keys and values of different lengths, a
CategoryMapper on floats, and attributes of the SVMs that disagree.
Usage: test_ml_strings.py BRAID WORK_DIR"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

ML = "ai.onnx.ml"


def tp_of(a):
    return TP.STRING if a.dtype == object else helper.np_dtype_to_tensor_dtype(a.dtype)


def model_of(op, x, out_types, attrs, opset_ml):
    outs = [f"y{i}" for i in range(len(out_types))]
    node = helper.make_node(op, ["x"], outs, domain=ML, **attrs)
    g = helper.make_graph([node], "t", [helper.make_tensor_value_info("x", tp_of(x), list(x.shape))],
                          [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, opset_ml)])
    m.ir_version = 8
    return m


def write(path, m, x, tol):
    os.makedirs(os.path.join(path, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(path, "model.onnx"))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    got = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    open(os.path.join(path, "test_data_set_0", "input_0.pb"), "wb").write(
        numpy_helper.from_array(x, "x").SerializeToString())
    for i, v in enumerate(got):
        v = np.asarray(v)
        open(os.path.join(path, "test_data_set_0", f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(v, f"y{i}").SerializeToString())
    with open(os.path.join(path, "tolerance.txt"), "w") as f:
        f.write(f"{tol} {tol}\n")


def strs(*v, shape=None):
    a = np.array(list(v), dtype=object)
    return a.reshape(shape) if shape else a


def string_cases():
    c = []
    x = strs("a", "zz", "b", "", "c", "b", shape=(2, 3))
    c.append(("le_str_int", model_of("LabelEncoder", x, [TP.INT64], dict(
        keys_strings=["c", "a", "b", ""], values_int64s=[3, 1, 2, 0], default_int64=-7), 2), x))
    c.append(("le_str_int_nodefault", model_of("LabelEncoder", x, [TP.INT64], dict(
        keys_strings=["a", "b"], values_int64s=[10, 20]), 2), x))
    xi = np.array([[5, -1, 3], [3, 9, 0]], np.int64)
    c.append(("le_int_str", model_of("LabelEncoder", xi, [TP.STRING], dict(
        keys_int64s=[3, 5, 0], values_strings=["three", "five", "zero"], default_string="none"), 2), xi))
    c.append(("le_int_str_nodefault", model_of("LabelEncoder", xi, [TP.STRING], dict(
        keys_int64s=[3], values_strings=["three"]), 2), xi))
    c.append(("le_str_str", model_of("LabelEncoder", x, [TP.STRING], dict(
        keys_strings=["a", "b", "c"], values_strings=["A", "B", "C"], default_string="?"), 2), x))
    xf = np.array([0.5, -1.0, 2.25, np.nan], np.float32)
    c.append(("le_float_str", model_of("LabelEncoder", xf, [TP.STRING], dict(
        keys_floats=[2.25, 0.5], values_strings=["two", "half"]), 2), xf))
    c.append(("le_str_float", model_of("LabelEncoder", x, [TP.FLOAT], dict(
        keys_strings=["b", "a"], values_floats=[2.5, -1.5], default_float=9.0), 2), x))
    c.append(("le_tensor_str_int16", model_of("LabelEncoder", x, [TP.INT16], dict(
        keys_tensor=helper.make_tensor("k", TP.STRING, [2], [b"a", b"zz"]),
        values_tensor=helper.make_tensor("v", TP.INT16, [2], [7, -3]),
        default_tensor=helper.make_tensor("d", TP.INT16, [1], [99])), 4), x))
    c.append(("le_tensor_int_str", model_of("LabelEncoder", xi, [TP.STRING], dict(
        keys_tensor=helper.make_tensor("k", TP.INT64, [2], [5, 9]),
        values_tensor=helper.make_tensor("v", TP.STRING, [2], [b"five", b"nine"]),
        default_tensor=helper.make_tensor("d", TP.STRING, [1], [b"dflt"])), 4), xi))
    xe = np.zeros((0, 3), dtype=object)
    c.append(("le_empty", model_of("LabelEncoder", xe, [TP.INT64], dict(keys_strings=["a"], values_int64s=[1]), 2), xe))
    c.append(("cm_str_int", model_of("CategoryMapper", x, [TP.INT64], dict(
        cats_strings=["b", "a", "c"], cats_int64s=[1, 0, 2], default_int64=42), 1), x))
    c.append(("cm_str_int_nodefault", model_of("CategoryMapper", x, [TP.INT64], dict(
        cats_strings=["b", "a"], cats_int64s=[1, 0]), 1), x))
    c.append(("cm_int_str", model_of("CategoryMapper", xi, [TP.STRING], dict(
        cats_strings=["three", "zero", "nine"], cats_int64s=[3, 0, 9], default_string="other"), 1), xi))
    c.append(("cm_int_str_nodefault", model_of("CategoryMapper", xi, [TP.STRING], dict(
        cats_strings=["three"], cats_int64s=[3]), 1), xi))
    xie = np.zeros((0,), np.int64)
    c.append(("cm_empty", model_of("CategoryMapper", xie, [TP.STRING], dict(
        cats_strings=["a"], cats_int64s=[1]), 1), xie))
    return [(n, m, x, 1e-6) for n, m, x in c]


def refusals():
    x = strs("a", "b")
    xf = np.array([1.0], np.float32)
    pre = "node 'LabelEncoder_0' (LabelEncoder): "
    return [
        ("le_lengths", model_of("LabelEncoder", x, [TP.INT64], dict(keys_strings=["a", "b"], values_int64s=[1]), 2),
         1, pre + "attributes keys (2 entries) and values (1) differ in length"),
        ("le_key_dtype", model_of("LabelEncoder", xf, [TP.INT64], dict(keys_strings=["a"], values_int64s=[1]), 2),
         1, pre + "input X has dtype float32, the keys are strings"),
        ("cm_float", model_of("CategoryMapper", xf, [TP.INT64], dict(cats_strings=["a"], cats_int64s=[1]), 1),
         1, "node 'CategoryMapper_0' (CategoryMapper): input X has dtype float32; CategoryMapper maps string to "
         "int64 or int64 to string"),
        ("cm_lengths", model_of("CategoryMapper", x, [TP.INT64], dict(cats_strings=["a"], cats_int64s=[1, 2]), 1),
         1, "node 'CategoryMapper_0' (CategoryMapper): attributes 'cats_strings' (1 entries) and 'cats_int64s' (2) "
         "must have the same length"),
    ]


def main():
    braid, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    made, failed = 0, []
    cases = string_cases()
    if "svm_cases" in globals():
        cases += svm_cases(np.random.default_rng(3))
    for name, m, x, tol in cases:
        case = os.path.join(work, name)
        write(case, m, x, tol)
        made += 1
        p = subprocess.run([braid, "check", case], capture_output=True, text=True)
        if p.returncode != 0:
            failed.append(f"{name}: {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")
    bad = refusals() + (svm_refusals() if "svm_refusals" in globals() else [])
    for name, m, code, msg in bad:
        path = os.path.join(work, name)
        os.makedirs(path, exist_ok=True)
        onnx.save(m, os.path.join(path, "model.onnx"))
        p = subprocess.run([braid, "run", os.path.join(path, "model.onnx"), "--output-dir", path],
                           capture_output=True, text=True)
        made += 1
        text = p.stdout + p.stderr
        if p.returncode != code or msg not in text:
            failed.append(f"refusal {name}: exit {p.returncode} (want {code}), output: {text.strip()[:400]}")
    for f in failed:
        print("FAILED", f)
    print(f"{made} cases, {made - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
