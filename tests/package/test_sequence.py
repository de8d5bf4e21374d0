"""test_sequence.py: sequence and optional values (the sequence op family)
end to end through braid's API, on the edge cases ONNX's node tests miss:
negative positions and axes, uneven and omitted splits, new_axis, empty
sequences and optionals, strings inside sequences, sequences carried by a
Loop and joined afterwards (shapes known only at run time), and the exact
errors for positions out of range, mixed dtypes and sequences fed to ops
that take tensors. Numbers are compared with onnxruntime's (exactly: these
ops only move data)."""
import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import braid

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8).SerializeToString()


def seq_info(name, elem=F):
    return helper.make_tensor_sequence_value_info(name, elem, None)


def tensor_info(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def both(m, feed):
    """braid's outputs and onnxruntime's for the same model and feed."""
    b = braid.InferenceSession(m).run(None, feed)
    o = ort.InferenceSession(m, providers=["CPUExecutionProvider"]).run(None, feed)
    return b, o


def same(b, o):
    if o is None:
        assert b is None
    elif isinstance(o, list):
        assert isinstance(b, list) and len(b) == len(o)
        for x, y in zip(b, o):
            same(x, y)
    else:
        assert b.dtype == o.dtype and b.shape == o.shape
        np.testing.assert_array_equal(b, o)


def i64(v):
    return helper.make_tensor("c" + str(v).replace("-", "m"), TensorProto.INT64, [], [v])


def test_split_uneven_negative_axis_and_positions():
    x = np.arange(2 * 7 * 3, dtype=np.float32).reshape(2, 7, 3)
    nodes = [helper.make_node("SplitToSequence", ["x", "s"], ["q"], axis=-2),  # pieces of 3, 3, 1
             helper.make_node("SequenceAt", ["q", "cm1"], ["last"]),
             helper.make_node("SequenceErase", ["q", "cm3"], ["e"]),   # erase the first (-3 of 3)
             helper.make_node("SequenceInsert", ["e", "last", "cm1"], ["ins"]),  # before the last
             helper.make_node("SequenceLength", ["ins"], ["n"]),
             helper.make_node("ConcatFromSequence", ["ins"], ["cat"], axis=1)]
    m = model(nodes, [tensor_info("x", F, [2, 7, 3])],
              [seq_info("q"), tensor_info("last"), tensor_info("n", TensorProto.INT64), tensor_info("cat")],
              [helper.make_tensor("s", TensorProto.INT64, [], [3]), i64(-1), i64(-3)])
    b, o = both(m, {"x": x})
    assert [a.shape for a in b[0]] == [(2, 3, 3), (2, 3, 3), (2, 1, 3)]
    assert int(b[2]) == 3
    for u, v in zip(b, o):
        same(u, v)


def test_split_default_keepdims_and_stack_new_axis():
    x = np.random.default_rng(1).random((4, 5), np.float32)
    nodes = [helper.make_node("SplitToSequence", ["x"], ["q"], axis=1, keepdims=0),  # 5 pieces of shape [4]
             helper.make_node("ConcatFromSequence", ["q"], ["st"], axis=-1, new_axis=1),  # stacked at the end: x
             helper.make_node("ConcatFromSequence", ["q"], ["st0"], axis=0, new_axis=1)]  # x.T
    m = model(nodes, [tensor_info("x", F, [4, 5])], [seq_info("q"), tensor_info("st"), tensor_info("st0")])
    b, o = both(m, {"x": x})
    assert len(b[0]) == 5 and b[0][0].shape == (4,)
    np.testing.assert_array_equal(b[1], x)
    np.testing.assert_array_equal(b[2], x.T)
    for u, v in zip(b, o):
        same(u, v)


def test_sequence_inputs_outputs_and_empty_ones():
    nodes = [helper.make_node("SequenceLength", ["q"], ["n"]), helper.make_node("Identity", ["q"], ["same"])]
    m = model(nodes, [seq_info("q")], [tensor_info("n", TensorProto.INT64), seq_info("same")])
    s = braid.InferenceSession(m)
    items = [np.ones((2, 3), np.float32), np.zeros((0, 4), np.float32), np.full((), 5, np.float32)]
    n, same_q = s.run(None, {"q": items})
    assert int(n) == 3 and len(same_q) == 3
    for a, b in zip(same_q, items):
        assert a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    n, same_q = s.run(None, {"q": []})
    assert int(n) == 0 and same_q == []
    assert s.get_inputs()[0].type == "seq(tensor(float))"


def test_strings_in_sequences():
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["q"]),
             helper.make_node("SequenceAt", ["q", "c1"], ["second"])]
    m = model(nodes, [tensor_info("a", TensorProto.STRING, [2]), tensor_info("b", TensorProto.STRING, [1])],
              [seq_info("q", TensorProto.STRING), tensor_info("second", TensorProto.STRING)], [i64(1)])
    q, second = braid.InferenceSession(m).run(None, {"a": np.array(["x", "yy"]), "b": np.array(["ünï"])})
    assert [list(t) for t in q] == [["x", "yy"], ["ünï"]]
    assert list(second) == ["ünï"]


def test_optionals():
    opt_t = helper.make_value_info("o", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    nodes = [helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Optional", ["x"], ["wrapped"]),
             helper.make_node("OptionalGetElement", ["wrapped"], ["back"]),
             helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(F, [2]))]
    out_none = helper.make_value_info("none", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))
    m = model(nodes, [opt_t, tensor_info("x", F, [3])], [tensor_info("has", TensorProto.BOOL), tensor_info("back"), out_none])
    s = braid.InferenceSession(m)
    x = np.array([1, 2, 3], np.float32)
    has, back, none = s.run(None, {"o": None, "x": x})
    assert not bool(has) and none is None
    np.testing.assert_array_equal(back, x)
    has, _, _ = s.run(None, {"o": np.array([4, 5], np.float32), "x": x})
    assert bool(has)


def test_loop_carries_a_sequence_joined_after():
    # body: append x[0:i+1] * 1 to the carried sequence; after the loop, the pieces joined on axis 0
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["i", "one"], ["end"]),
         helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
         helper.make_node("Slice", ["x", "zero", "end1"], ["piece"]),
         helper.make_node("SequenceInsert", ["q_in", "piece"], ["q_out"])],
        "body", [tensor_info("i", TensorProto.INT64, []), tensor_info("c_in", TensorProto.BOOL, []), seq_info("q_in")],
        [tensor_info("c_out", TensorProto.BOOL, []), seq_info("q_out")],
        [helper.make_tensor("one", TensorProto.INT64, [], [1]), helper.make_tensor("zero", TensorProto.INT64, [1], [0])])
    nodes = [helper.make_node("SequenceEmpty", [], ["q0"]),
             helper.make_node("Loop", ["m", "", "q0"], ["q"], body=body),
             helper.make_node("ConcatFromSequence", ["q"], ["cat"], axis=0)]
    m = model(nodes, [tensor_info("m", TensorProto.INT64, []), tensor_info("x", F, [6])],
              [seq_info("q"), tensor_info("cat")])
    x = np.arange(6, dtype=np.float32)
    b, o = both(m, {"m": np.array(4, np.int64), "x": x})
    assert [len(a) for a in b[0]] == [1, 2, 3, 4]
    np.testing.assert_array_equal(b[1], np.concatenate([x[:k] for k in range(1, 5)]))
    for u, v in zip(b, o):
        same(u, v)


def test_errors_name_what_and_where():
    m = model([helper.make_node("SequenceAt", ["q", "p"], ["y"])],
              [seq_info("q"), tensor_info("p", TensorProto.INT64, [])], [tensor_info("y")])
    s = braid.InferenceSession(m)
    with pytest.raises(braid.BraidError, match=r"node 'SequenceAt_0' \(SequenceAt\): position 3 is out of range \[-2, 1\]"):
        s.run(None, {"q": [np.ones(1, np.float32)] * 2, "p": np.array(3, np.int64)})
    with pytest.raises(braid.BraidError, match=r"SequenceAt of an empty sequence"):
        s.run(None, {"q": [], "p": np.array(0, np.int64)})
    with pytest.raises(braid.BraidError, match=r"input 'q\[1\]': numpy dtype int64 has no braid equivalent|"
                                               r"input 'q' \(element 1\) is int64 but the sequence holds float32"):
        s.run(None, {"q": [np.ones(1, np.float32), np.ones(1, np.int64)], "p": np.array(0, np.int64)})
    # the session stays usable
    (y,) = s.run(None, {"q": [np.ones(1, np.float32), np.full(2, 7, np.float32)], "p": np.array(-1, np.int64)})
    np.testing.assert_array_equal(y, [7, 7])

    m = model([helper.make_node("ConcatFromSequence", ["q"], ["y"], axis=0)], [seq_info("q")], [tensor_info("y")])
    with pytest.raises(braid.BraidError, match=r"element 1 has shape 2x3, element 0 2x2: they cannot be joined on axis 0|"
                                               r"element 1 has shape 2x3, element 0 2x2"):
        braid.InferenceSession(m).run(None, {"q": [np.ones((2, 2), np.float32), np.ones((2, 3), np.float32)]})

    m = model([helper.make_node("Add", ["q", "q"], ["y"])], [seq_info("q")], [tensor_info("y")])
    with pytest.raises(braid.BraidError, match=r"input 0 is a seq\(float32\); Add takes tensors"):
        braid.InferenceSession(m).run(None, {"q": [np.ones(1, np.float32)]})


def test_sequence_map_elements_of_different_shapes():
    # the body sees each element with its own shape: y = x * scale + rowsum(x), and the element's shape
    body = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["xs"]),
         helper.make_node("ReduceSum", ["x", "ax"], ["rs"], keepdims=1),
         helper.make_node("Add", ["xs", "rs"], ["y"]),
         helper.make_node("Shape", ["x"], ["shp"])],
        "body", [tensor_info("x", F, None), tensor_info("scale", F, [])],
        [tensor_info("y", F, None), tensor_info("shp", TensorProto.INT64, None)],
        [helper.make_tensor("ax", TensorProto.INT64, [1], [1])])
    nodes = [helper.make_node("SequenceMap", ["q", "s"], ["ys", "shapes"], body=body)]
    m = model(nodes, [seq_info("q"), tensor_info("s", F, [])],
              [seq_info("ys"), seq_info("shapes", TensorProto.INT64)])
    r = np.random.default_rng(3)
    q = [r.random((2, 3), np.float32), r.random((4, 1), np.float32), r.random((1, 5), np.float32)]
    b, o = both(m, {"q": q, "s": np.array(0.5, np.float32)})
    assert [a.shape for a in b[0]] == [(2, 3), (4, 1), (1, 5)]
    assert [list(a) for a in b[1]] == [[2, 3], [4, 1], [1, 5]]
    for u, v in zip(b, o):
        for x, y in zip(u, v):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)

    two = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body",
                            [tensor_info("a", F, None), tensor_info("b", F, None)], [tensor_info("c", F, None)])
    m = model([helper.make_node("SequenceMap", ["p", "q"], ["r"], body=two)], [seq_info("p"), seq_info("q")],
              [seq_info("r")])
    with pytest.raises(braid.BraidError, match=r"input 1 is a sequence of 1 tensors, input 0 of 2"):
        braid.InferenceSession(m).run(None, {"p": [np.ones(1, np.float32)] * 2, "q": [np.ones(1, np.float32)]})


def test_run_into_refuses_a_sequence_output():
    """braid_session_run_into copies into the caller's buffers; a sequence has
    none of a fixed size, so it is refused by name (the C API directly)."""
    import ctypes
    from braid._lib import Tensor, lib
    m = model([helper.make_node("SplitToSequence", ["x"], ["q"], axis=0)], [tensor_info("x", F, [2])], [seq_info("q")])
    s = braid.InferenceSession(m)
    x = np.ones(2, np.float32)
    t = Tensor()
    t.dtype, t.rank, t.data = 1, 1, x.ctypes.data
    t.dims[0] = 2
    out = Tensor()
    h = s._live()
    assert lib.braid_session_run_into(h, 1, ctypes.byref(t), 1, ctypes.byref(out)) == 1  # INVALID_ARGUMENT
    assert "output 'q' is a seq(float32): braid_session_run returns it" in lib.braid_session_error(h).decode()
    assert lib.braid_session_run(h, 1, ctypes.byref(t), 1, ctypes.byref(out)) == 0
    assert out.dtype == 0x100 | 1 and out.rank == 1 and out.dims[0] == 2


def test_if_gives_a_sequence_from_one_branch_and_an_optional_from_the_other():
    opt_seq = helper.make_optional_type_proto(helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None)))
    then = helper.make_graph([helper.make_node("Optional", [], ["o"], type=helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(F, None)))], "then", [], [helper.make_value_info("o", opt_seq)])
    other = helper.make_graph([helper.make_node("SplitToSequence", ["x"], ["q"], axis=0)], "else", [], [seq_info("q")])
    nodes = [helper.make_node("If", ["c"], ["r"], then_branch=then, else_branch=other),
             helper.make_node("OptionalHasElement", ["r"], ["has"])]
    m = model(nodes, [tensor_info("c", TensorProto.BOOL, []), tensor_info("x", F, [3])],
              [helper.make_value_info("r", opt_seq), tensor_info("has", TensorProto.BOOL)])
    s = braid.InferenceSession(m)
    x = np.array([1, 2, 3], np.float32)
    r, has = s.run(None, {"c": np.array(True), "x": x})
    assert r is None and not bool(has)
    r, has = s.run(None, {"c": np.array(False), "x": x})
    assert bool(has) and [list(a) for a in r] == [[1], [2], [3]]
