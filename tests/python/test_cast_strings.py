"""test_cast_strings.py: Cast and CastLike between strings and numbers.
Expected strings are numpy's astype(str) (what onnx's reference computes)
with NaN, INF and -INF written as the Cast spec and onnxruntime write them;
expected numbers are numpy's parse of the same text. `braid check` compares
strings exactly and numbers bitwise (tolerance 0).
Cases: float, double and float16 (random values over 29 decades, zeros of
both signs, NaN, infinities, the edges of numpy's positional range) to
strings and back; bfloat16 to strings that read back as the same bfloat16;
every integer width at its extremes and bool, both ways; text with spaces,
a plus sign, any case of INF/NaN, exponents, fractions into integers
(truncated), "True"/"False" into bool; an empty and a 2-D tensor; CastLike.
Refusals (exact messages): a string that is no number, a cast from string
to float8.
Usage: test_cast_strings.py BRAID WORK_DIR"""
import os
import shutil
import subprocess
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper


def tp_of(a):
    if a.dtype == object:
        return TP.STRING
    if a.dtype == ml_dtypes.bfloat16:
        return TP.BFLOAT16
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def model(x, to, like=None):
    ins = [helper.make_tensor_value_info("x", tp_of(x), list(x.shape))]
    if like is None:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        inits = []
    else:
        node = helper.make_node("CastLike", ["x", "t"], ["y"])
        inits = [numpy_helper.from_array(like, "t")]
    g = helper.make_graph([node], "t", ins, [helper.make_tensor_value_info("y", to, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 9
    return m


def write(d, m, x, want):
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb").write(numpy_helper.from_array(x, "x").SerializeToString())
    open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb").write(
        numpy_helper.from_array(want, "y").SerializeToString())
    with open(os.path.join(d, "tolerance.txt"), "w") as f:
        f.write("0 0\n")


def np_str(a):
    s = a.astype(np.str_).astype(object)
    f = a.astype(np.float64)
    s[np.isnan(f)] = "NaN"
    s[np.isposinf(f)] = "INF"
    s[np.isneginf(f)] = "-INF"
    return s


def cases():
    rng = np.random.default_rng(1)
    c = []
    edges = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-4, 9.99e-5, 1e3, 999.5, 1e6, 999999.0, 1e16, 0.1, 1.0, 65504, 2.5e-8]
    for dt, to in ((np.float32, TP.FLOAT), (np.float64, TP.DOUBLE), (np.float16, TP.FLOAT16)):
        with np.errstate(over="ignore"):
            v = np.concatenate([rng.standard_normal(300) * 10.0 ** rng.integers(-12, 17, 300), edges]).astype(dt)
        c.append((f"{dt.__name__}_to_string", model(v, TP.STRING), v, np_str(v)))
        c.append((f"string_to_{dt.__name__}", model(np_str(v), to), np_str(v), v))
    bf = (rng.standard_normal(100) * 10.0 ** rng.integers(-8, 8, 100)).astype(ml_dtypes.bfloat16)
    # braid's text for bfloat16 must read back as the same value: checked through a round trip model
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["s"], to=TP.STRING),
                           helper.make_node("Cast", ["s"], ["y"], to=TP.BFLOAT16)], "t",
                          [helper.make_tensor_value_info("x", TP.BFLOAT16, [100])],
                          [helper.make_tensor_value_info("y", TP.BFLOAT16, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 9
    c.append(("bfloat16_round_trip", m, bf, bf))
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        i = np.iinfo(dt)
        v = np.array([i.min, i.max, 0, 1, i.max // 3], dt)
        c.append((f"{dt.__name__}_to_string", model(v, TP.STRING), v, v.astype(np.str_).astype(object)))
        c.append((f"string_to_{dt.__name__}", model(v.astype(np.str_).astype(object), helper.np_dtype_to_tensor_dtype(np.dtype(dt))),
                  v.astype(np.str_).astype(object), v))
    b = np.array([True, False, True])
    c.append(("bool_to_string", model(b, TP.STRING), b, np.array(["True", "False", "True"], object)))
    sb = np.array(["True", "false", "1", "0", "2.5", " TRUE "], object)
    c.append(("string_to_bool", model(sb, TP.BOOL), sb, np.array([1, 0, 1, 0, 1, 1], bool)))
    st = np.array([" 1.5", "+INF", "-inf", "nan", "NaN", "Infinity", "1E8", "1e-5", "  -2.25  ", "+3"], object)
    want = np.array([1.5, np.inf, -np.inf, np.nan, np.nan, np.inf, 1e8, 1e-5, -2.25, 3], np.float32)
    c.append(("text_forms_to_float", model(st, TP.FLOAT), st, want))
    si = np.array(["3.9", "-2.5", "1e3", " 42 ", "-7"], object)
    c.append(("text_to_int32", model(si, TP.INT32), si, np.array([3, -2, 1000, 42, -7], np.int32)))
    e = np.zeros((0, 2), np.float32)
    c.append(("empty", model(e, TP.STRING), e, np.zeros((0, 2), object)))
    m2 = rng.standard_normal((2, 3)).astype(np.float32)
    c.append(("two_d_castlike", model(m2, TP.STRING, like=np.array(["a"], object)), m2, np_str(m2)))
    s2 = np_str(m2)
    c.append(("castlike_from_string", model(s2, TP.FLOAT, like=np.array([0.0], np.float32)), s2, m2))
    return c


def refusals():
    x = np.array(["1", "abc"], object)
    return [
        ("not_a_number", model(x, TP.FLOAT), x, 1, "input[1] is 'abc', which is not a number"),
        ("to_float8", model(x, TP.FLOAT8E4M3FN), x, 3,
         "cast from string to float8e4m3fn is not supported (strings convert to and from the floats float, double, "
         "float16 and bfloat16, the integers and bool)"),
    ]


def main():
    braid, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    made, failed = 0, []
    for name, m, x, want in cases():
        d = os.path.join(work, name)
        write(d, m, x, want)
        made += 1
        p = subprocess.run([braid, "check", d], capture_output=True, text=True)
        if p.returncode != 0:
            failed.append(f"{name}: {(p.stdout + p.stderr).strip().splitlines()[-1][:300]}")
    for name, m, x, code, msg in refusals():
        d = os.path.join(work, name)
        write(d, m, x, x)
        made += 1
        p = subprocess.run([braid, "check", d], capture_output=True, text=True)
        text = p.stdout + p.stderr
        if p.returncode != code or msg not in text:
            failed.append(f"refusal {name}: exit {p.returncode} (want {code}): {text.strip()[:400]}")
    for f in failed:
        print("FAILED", f)
    print(f"{made} cases, {made - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
