"""test_ml_strings.py: the ai.onnx.ml ops on strings and the SVMs, against
onnxruntime. Each case is a one-node model; onnxruntime's CPU provider gives
the expected outputs; `braid check` must match them (strings exactly,
numbers within the case's tolerance). Cases:
  - LabelEncoder opset 1 (classes_strings, both ways), and opsets 2 and 4:
    string -> int64, int64 -> string, a repeated key (the first wins),
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
    c.append(("le_v1_str_int", model_of("LabelEncoder", x, [TP.INT64], dict(
        classes_strings=["b", "zz", "a"], default_int64=-5), 1), x))
    xv = np.array([0, 2, 7, -1, 1], np.int64)
    c.append(("le_v1_int_str", model_of("LabelEncoder", xv, [TP.STRING], dict(
        classes_strings=["b", "zz", "a"], default_string="none"), 1), xv))
    c.append(("le_dup_keys", model_of("LabelEncoder", x, [TP.INT64], dict(
        keys_strings=["a", "b", "a"], values_int64s=[1, 2, 3]), 2), x))
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


def svm_cases(rng):
    """SVMClassifier: one-vs-one SVC with 3 classes under each kernel type,
    with and without probabilities (prob_a, prob_b); binary SVC with no post
    transform (-s, s), LOGISTIC, SOFTMAX (1 - s, s), all-positive weights and
    probabilities (a binary SVC under PROBIT is left out: onnxruntime leaves
    its second score column unwritten); liblinear mode
    with 3 and 2 classes under SOFTMAX and LOGISTIC; string labels; double,
    int64 and 1-D inputs; an empty batch. SVMRegressor: SVC under RBF and
    POLY, liblinear, one_class. Tolerance 1e-4 (braid sums in double,
    onnxruntime in float)."""
    c = []
    F = 4
    X = rng.standard_normal((7, F)).astype(np.float32)
    kp = {"LINEAR": [0.0, 0.0, 0.0], "POLY": [0.3, 0.5, 3.0], "RBF": [0.4, 0.0, 0.0], "SIGMOID": [0.2, 0.1, 0.0]}
    vpc = [2, 3, 2]
    V = sum(vpc)
    sv = rng.standard_normal(V * F).astype(np.float32)
    coef = rng.standard_normal(2 * V).astype(np.float32)
    rho = rng.standard_normal(3).astype(np.float32)
    for kt, params in kp.items():
        base = dict(classlabels_ints=[4, 7, 9], vectors_per_class=vpc, support_vectors=sv.tolist(),
                    coefficients=coef.tolist(), rho=rho.tolist(), kernel_type=kt, kernel_params=params)
        c.append((f"svc3_{kt.lower()}", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], base, 1), X))
        prob = dict(base, prob_a=(-rng.random(3) - 0.5).tolist(), prob_b=(rng.standard_normal(3) * 0.1).tolist())
        c.append((f"svc3_{kt.lower()}_proba", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], prob, 1), X))
    bin_ = dict(classlabels_ints=[0, 1], vectors_per_class=[2, 3], support_vectors=sv[:5 * F].tolist(),
                coefficients=coef[:5].tolist(), rho=rho[:1].tolist(), kernel_type="RBF", kernel_params=kp["RBF"])
    c.append(("svc2_none", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], bin_, 1), X))
    c.append(("svc2_logistic", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], dict(bin_, post_transform="LOGISTIC"),
                                         1), X))
    c.append(("svc2_softmax", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], dict(bin_, post_transform="SOFTMAX"),
                                        1), X))
    c.append(("svc2_allpos", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT],
                                       dict(bin_, coefficients=np.abs(coef[:5]).tolist()), 1), X))
    c.append(("svc2_proba", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT],
                                      dict(bin_, prob_a=[-1.3], prob_b=[0.05]), 1), X))
    lin3 = dict(classlabels_ints=[1, 2, 3], coefficients=rng.standard_normal(3 * F).tolist(), rho=[0.25],
                post_transform="SOFTMAX", kernel_params=[0.0, 0.0, 0.0])  # onnxruntime wants kernel_params
    c.append(("linear3_softmax", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], lin3, 1), X))
    lin2 = dict(classlabels_ints=[5, 6], coefficients=rng.standard_normal(2 * F).tolist(), rho=[-0.1],
                post_transform="LOGISTIC", kernel_params=[0.0, 0.0, 0.0])
    c.append(("linear2_logistic", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], lin2, 1), X))
    strs_ = dict(bin_, classlabels_strings=["neg", "pos"])
    del strs_["classlabels_ints"]
    c.append(("svc2_strings", model_of("SVMClassifier", X, [TP.STRING, TP.FLOAT], strs_, 1), X))
    s3 = dict(classlabels_strings=["a", "b", "c"], vectors_per_class=vpc, support_vectors=sv.tolist(),
              coefficients=coef.tolist(), rho=rho.tolist(), kernel_type="POLY", kernel_params=kp["POLY"])
    c.append(("svc3_strings", model_of("SVMClassifier", X, [TP.STRING, TP.FLOAT], s3, 1), X))
    i3 = {k: v for k, v in s3.items() if k != "classlabels_strings"}
    i3["classlabels_ints"] = [1, 2, 3]
    Xd = X.astype(np.float64)
    c.append(("svc3_double", model_of("SVMClassifier", Xd, [TP.INT64, TP.FLOAT], i3, 1), Xd))
    Xi = (X * 3).astype(np.int64)
    c.append(("linear3_int64", model_of("SVMClassifier", Xi, [TP.INT64, TP.FLOAT], lin3, 1), Xi))
    X1 = X[0]
    c.append(("svc3_rank1", model_of("SVMClassifier", X1, [TP.INT64, TP.FLOAT],
                                      i3, 1), X1))
    Xe = np.zeros((0, F), np.float32)
    c.append(("svc3_empty", model_of("SVMClassifier", Xe, [TP.INT64, TP.FLOAT],
                                      i3, 1), Xe))
    reg = dict(n_supports=V, support_vectors=sv.tolist(), coefficients=coef[:V].tolist(), rho=[0.3],
               kernel_type="RBF", kernel_params=kp["RBF"])
    c.append(("reg_rbf", model_of("SVMRegressor", X, [TP.FLOAT], reg, 1), X))
    c.append(("reg_poly", model_of("SVMRegressor", X, [TP.FLOAT], dict(reg, kernel_type="POLY",
                                                                        kernel_params=kp["POLY"]), 1), X))
    c.append(("reg_linear", model_of("SVMRegressor", X, [TP.FLOAT], dict(coefficients=coef[:F].tolist(), rho=[0.5],
                                                                                kernel_params=[0.0, 0.0, 0.0]),
                                     1), X))
    c.append(("reg_one_class", model_of("SVMRegressor", X, [TP.FLOAT], dict(reg, one_class=1), 1), X))
    return [(n, m, x, 1e-4) for n, m, x in c]


def svm_refusals():
    X = np.zeros((2, 4), np.float32)
    ok = dict(classlabels_ints=[1, 2, 3], vectors_per_class=[1, 1, 1], support_vectors=[0.0] * 12,
              coefficients=[1.0] * 6, rho=[0.0] * 3)
    pre = "node 'SVMClassifier_0' (SVMClassifier): "
    return [
        ("svm_vpc", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], dict(ok, vectors_per_class=[1, 2]), 1), 1,
         pre + "attribute 'vectors_per_class' has 2 entries for 3 classes"),
        ("svm_kernel", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], dict(ok, kernel_type="CUBIC"), 1), 1,
         pre + "attribute 'kernel_type' is 'CUBIC'; it must be LINEAR, POLY, RBF or SIGMOID"),
        ("svm_rho", model_of("SVMClassifier", X, [TP.INT64, TP.FLOAT], dict(ok, rho=[0.0]), 1), 1,
         pre + "attribute 'rho' has 1 values; 3 classes need 3"),
        ("svm_features", model_of("SVMClassifier", np.zeros((2, 5), np.float32), [TP.INT64, TP.FLOAT], ok, 1), 1,
         pre + "input X has 5 features (shape 2x5); the model has 4"),
    ]


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
