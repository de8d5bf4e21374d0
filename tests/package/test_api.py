"""test_api.py: braid's Python package in onnxruntime's idiom: sessions from a
path and from bytes, NodeArg names/shapes/types, run() against numpy and
onnxruntime, run_views(), providers, options, and every error case leaving
the session usable."""
import os
import sys
import threading
import time
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import braid


def make(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.fixture(scope="module")
def add_path(tmp_path_factory):
    m = make([helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Mul", ["c", "c"], ["d"])],
             [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 4]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [None, 4])],
             [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N", 4]),
              helper.make_tensor_value_info("d", TensorProto.FLOAT, None)])
    p = tmp_path_factory.mktemp("m") / "add.onnx"
    onnx.save(m, str(p))
    return str(p)


def feeds(n=3, seed=0):
    r = np.random.default_rng(seed)
    return {"a": r.random((n, 4), np.float32), "b": r.random((n, 4), np.float32)}


def test_io_and_run(add_path):
    s = braid.InferenceSession(add_path, providers=["CPUExecutionProvider"])
    ins, outs = s.get_inputs(), s.get_outputs()
    assert [(i.name, i.type, i.shape) for i in ins] == [("a", "tensor(float)", ["N", 4]),
                                                        ("b", "tensor(float)", [None, 4])]
    assert [(o.name, o.shape) for o in outs] == [("c", ["N", 4]), ("d", [])]
    assert s.get_providers() == ["CPUExecutionProvider"]
    f = feeds()
    c, d = s.run(None, f)
    np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)
    np.testing.assert_allclose(d, c * c, rtol=1e-6)
    (d2,) = s.run(["d"], f)
    np.testing.assert_array_equal(d2, d)
    d3, c3 = s.run(["d", "c"], f)
    np.testing.assert_array_equal(c3, c)
    assert c.flags.writeable and c.flags.owndata or c.base is not None
    # outputs are the caller's: a later run does not change them
    s.run(None, feeds(seed=5))
    np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)


def test_matches_onnxruntime(add_path):
    ort = pytest.importorskip("onnxruntime")
    f = feeds(7)
    want = ort.InferenceSession(add_path, providers=["CPUExecutionProvider"]).run(None, f)
    got = braid.InferenceSession(add_path).run(None, f)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_bytes_and_views(add_path):
    s = braid.InferenceSession(open(add_path, "rb").read())
    f = feeds()
    c, d = s.run_views(None, f)
    assert not c.flags.writeable
    np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)
    keep = np.array(c)
    s.run_views(None, feeds(seed=9))  # views now show the new run
    np.testing.assert_allclose(keep, f["a"] + f["b"], rtol=1e-6)


def test_outputs_written_in_place(add_path):
    # from the second run with a signature on, run() has braid write the
    # outputs straight into new arrays (braid_session_run_into): each run's
    # arrays are new, the caller's, and right
    s = braid.InferenceSession(add_path, providers=["CPUExecutionProvider"])
    got = []
    for seed in range(4):
        f = feeds(5, seed)
        c, d = s.run(None, f)
        np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)
        np.testing.assert_allclose(d, c * c, rtol=1e-6)
        assert c.flags.writeable and c.flags.c_contiguous and c.shape == (5, 4) and c.dtype == np.float32
        got.append((f, c, d))
    assert len({c.ctypes.data for _, c, _ in got[1:]}) == 3  # a new array every run
    for f, c, d in got:  # later runs changed none of them
        np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)
        np.testing.assert_allclose(d, c * c, rtol=1e-6)
    (d1,) = s.run(["d"], feeds(5, 7))
    (d2,) = s.run(["d"], feeds(5, 7))
    np.testing.assert_array_equal(d1, d2)
    c3, = s.run(["c"], feeds(2, 1))  # a new signature
    assert c3.shape == (2, 4)


def test_outputs_whose_shape_follows_the_data(tmp_path):
    # NonZero's output shape depends on the values: runs with one input
    # shape give outputs of different shapes, each right
    m = make([helper.make_node("NonZero", ["x"], ["y"])],
             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
             [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    p = tmp_path / "nz.onnx"
    onnx.save(m, str(p))
    s = braid.InferenceSession(str(p))
    for x in ([0, 1, 0, 2, 0, 3], [0, 1, 0, 2, 0, 3], [1, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0], [5, 0, 0, 0, 0, 1]):
        a = np.array(x, np.float32)
        (y,) = s.run(None, {"x": a})
        np.testing.assert_array_equal(y, np.array(np.nonzero(a)))


def test_every_dtype_has_a_type_string():
    from braid._types import TYPE_NAMES, type_string
    for code in range(1, 29):
        assert type_string(code) == f"tensor({TYPE_NAMES[code]})"
    assert type_string(1) == "tensor(float)" and type_string(11) == "tensor(double)"


@pytest.mark.parametrize("dt,code", [(np.int64, TensorProto.INT64), (np.bool_, TensorProto.BOOL),
                                     (np.float16, TensorProto.FLOAT16), (np.uint8, TensorProto.UINT8)])
def test_identity_dtypes(dt, code):
    m = make([helper.make_node("Identity", ["x"], ["y"])], [helper.make_tensor_value_info("x", code, [2, 3])],
             [helper.make_tensor_value_info("y", code, [2, 3])])
    s = braid.InferenceSession(m.SerializeToString())
    x = (np.arange(6).reshape(2, 3) % 2).astype(dt)
    (y,) = s.run(None, {"x": x})
    assert y.dtype == x.dtype and s.get_inputs()[0].type == braid._types.type_string(code)
    np.testing.assert_array_equal(y, x)
    # non-contiguous input is accepted (copied)
    (y,) = s.run(None, {"x": np.asfortranarray(x)})
    np.testing.assert_array_equal(y, x)


def test_string_tensors():
    """str (or bytes, or object) arrays in; object arrays of str out, as onnxruntime gives."""
    m = make([helper.make_node("StringConcat", ["a", "b"], ["y"])],
             [helper.make_tensor_value_info("a", TensorProto.STRING, [2, 2]),
              helper.make_tensor_value_info("b", TensorProto.STRING, [2])],
             [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])], opset=20)
    s = braid.InferenceSession(m.SerializeToString())
    a = np.array([["x", "é"], ["", "Σ"]])
    (y,) = s.run(None, {"a": a, "b": np.array([b"1", b"2"], dtype=object)})
    assert y.dtype == object and y.shape == (2, 2)
    assert y.tolist() == [["x1", "é2"], ["1", "Σ2"]]
    (v,) = s.run_views(None, {"a": a.astype(object), "b": np.array(["", "!"])})
    assert v.tolist() == [["x", "é!"], ["", "Σ!"]]
    with pytest.raises(braid.BraidError, match="element 1 is int"):
        s.run(None, {"a": np.array([["x", 3], ["y", "z"]], dtype=object), "b": np.array(["", ""])})
    (y,) = s.run(None, {"a": a, "b": np.array(["-", "-"])})  # usable after the error
    assert y[1, 1] == "Σ-"


def test_errors_leave_session_usable(add_path):
    s = braid.InferenceSession(add_path)
    f = feeds()
    bad = [({"a": f["a"]}, "INVALID_ARGUMENT", "missing"),
           ({**f, "z": f["a"]}, "INVALID_ARGUMENT", "no input 'z'"),
           ({"a": f["a"].astype(np.float64), "b": f["b"]}, "DTYPE", "float64"),
           ({"a": np.ones((3, 5), np.float32), "b": f["b"]}, "SHAPE", "3x5"),
           ({"a": np.ones((2, 4), np.float32), "b": f["b"]}, "SHAPE", None),
           ({"a": np.array(["x"]), "b": f["b"]}, "DTYPE", "no braid equivalent"),
           ({"a": np.ones([1] * 9, np.float32), "b": f["b"]}, "LIMIT", "rank 9"),
           ({"a": np.ones((3, 4), np.complex64), "b": f["b"]}, "DTYPE", None)]
    for feed, status, text in bad:
        with pytest.raises(braid.BraidError) as e:
            s.run(None, feed)
        assert isinstance(e.value, RuntimeError)
        assert e.value.status == status, (status, str(e.value))
        if text:
            assert text in str(e.value)
    with pytest.raises(braid.BraidError, match="no output 'q'"):
        s.run(["q"], f)
    c, _ = s.run(None, f)
    np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)


def test_load_errors(tmp_path):
    with pytest.raises(braid.BraidError) as e:
        braid.InferenceSession(str(tmp_path / "none.onnx"))
    assert e.value.status == "IO"
    with pytest.raises(braid.BraidError) as e:
        braid.InferenceSession(b"\x08\x07garbage\xff\xff")
    assert e.value.status in ("PARSE", "INVALID_MODEL")
    m = make([helper.make_node("Add", ["a", "b"], ["c"], domain="no.such.domain")],
             [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2]) for x in "ab"],
             [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])])
    m.opset_import.append(helper.make_opsetid("no.such.domain", 1))
    with pytest.raises(braid.BraidError) as e:
        braid.InferenceSession(m.SerializeToString())
    assert e.value.status == "UNSUPPORTED" and "Add" in str(e.value)


def test_providers_and_fallback(add_path):
    assert "CPUExecutionProvider" in braid.get_available_providers()
    s = braid.InferenceSession(add_path, providers=[("CPUExecutionProvider", {})])
    assert s.get_providers() == ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in braid.get_available_providers():
        pytest.skip("this build has the CUDA backend: the fallback is tested where it has not")
    # onnxruntime's behaviour: an unavailable provider is skipped with a warning, even alone.
    for providers in (["CUDAExecutionProvider"], ["CUDAExecutionProvider", "CPUExecutionProvider"],
                      ["NoSuchExecutionProvider"]):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s = braid.InferenceSession(add_path, providers=providers)
        assert s.get_providers() == ["CPUExecutionProvider"]
        assert any("falling back to CPUExecutionProvider" in str(x.message) for x in w), providers
        f = feeds()
        np.testing.assert_allclose(s.run(None, f)[0], f["a"] + f["b"], rtol=1e-6)


def test_session_options(add_path, tmp_path):
    o = braid.SessionOptions()
    o.intra_op_num_threads = 1
    o.max_streams = 1
    o.enable_fold = False
    o.loop_limit = 100
    o.graph_optimization_level = 99  # onnxruntime's, accepted and unused
    o.profile_path = str(tmp_path / "trace.json")
    with pytest.raises(AttributeError):
        o.no_such_option = 1
    s = braid.InferenceSession(add_path, o)
    assert s.get_session_options() is o
    f = feeds()
    s.run(None, f)
    assert s.end_profiling() == o.profile_path
    assert os.path.getsize(o.profile_path) > 0
    with pytest.raises(braid.BraidError, match="closed"):
        s.run(None, f)
    o2 = braid.SessionOptions()
    o2.intra_op_num_threads = -3
    with pytest.raises(braid.BraidError) as e:
        braid.InferenceSession(add_path, o2)
    assert e.value.status == "INVALID_ARGUMENT"


def test_help_reads_well():
    doc = braid.InferenceSession.__doc__
    assert "providers" in doc and "BraidError" in doc
    assert "output_names" in braid.InferenceSession.run.__doc__
    assert os.path.exists(os.path.join(os.path.dirname(braid.__file__), "py.typed"))


def test_threads_share_one_session(add_path):
    """Several Python threads run one session at once; every result is right."""
    s = braid.InferenceSession(add_path)
    errors = []

    def work(k):
        try:
            for j in range(200):
                f = feeds(n=1 + (k + j) % 5, seed=k * 1000 + j)
                c, d = s.run(None, f)
                np.testing.assert_allclose(c, f["a"] + f["b"], rtol=1e-6)
                np.testing.assert_allclose(d, c * c, rtol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_gil_released_during_run(tmp_path):
    """A long run lets another Python thread go on: the GIL is released."""
    n = 512

    def session(k):  # a chain of k n x n MatMuls, on one thread
        nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"y{i}", "w"], ["y" if i == k - 1 else f"y{i + 1}"])
                 for i in range(k)]
        m = make(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n]),
                         helper.make_tensor_value_info("w", TensorProto.FLOAT, [n, n])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])])
        o = braid.SessionOptions()
        o.intra_op_num_threads = 1
        return braid.InferenceSession(m.SerializeToString(), o)

    x = np.random.default_rng(0).random((n, n), np.float32) * (1.0 / n)
    k = 1
    for _ in range(12):  # as many MatMuls as make a run of 60 ms or more, whatever this CPU's speed
        s = session(k)
        s.run(None, {"x": x, "w": x})
        t0 = time.perf_counter()
        for _ in range(3):
            s.run(None, {"x": x, "w": x})
        one = (time.perf_counter() - t0) / 3
        if one >= 0.06:
            break
        k = min(4096, max(2 * k, int(k * 0.08 / max(one, 1e-4)) + 1))
    stamps = []
    stop = threading.Event()

    def tick():  # wakes every millisecond; it can only note the time while it holds the GIL
        while not stop.is_set():
            time.sleep(0.001)
            stamps.append(time.perf_counter())

    t = threading.Thread(target=tick)
    t.start()
    try:
        time.sleep(0.01)
        t1 = time.perf_counter()
        s.run(None, {"x": x, "w": x})
    finally:
        stop.set()
        t.join()
    assert one >= 0.06, f"a run takes {one * 1e3:.2f} ms even with {k} MatMuls: too short to tell"
    # the middle half of the run, well inside braid's C call
    inside = [u for u in stamps if t1 + 0.25 * one < u < t1 + 0.75 * one]
    assert len(inside) >= 3, f"the other thread woke {len(inside)} times in the middle of a {one * 1e3:.1f} ms run"


def test_no_device_loads_nothing_of_cuda(add_path):
    """On a machine without a GPU the default providers run on the CPU and
    load nothing of CUDA (not braid's CUDA backend, nor the CUDA runtime,
    cuDNN or cuBLAS): the driver alone is asked, then unloaded."""
    s = braid.InferenceSession(add_path)
    if s.get_providers()[0] != "CPUExecutionProvider":
        pytest.skip("a CUDA device answers here")
    s.run(None, feeds())
    with open("/proc/self/maps") as f:
        mapped = [line.split()[-1] for line in f if any(k in line for k in
                  ("libbraid_cuda", "libcudart", "libcudnn", "libcublas", "libcuda.so"))]
    assert mapped == []
