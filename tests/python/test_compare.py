"""test_compare.py: checks scripts/compare.py itself: its tolerance rule, its fixed
inputs, a whole run through the real shared library on small generated models, and
that --all-tensors names the node where a divergence starts.
Run: BRAID_LIB=build/libbraid.so .venv/bin/python -m unittest tests/python/test_compare.py
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import compare  # noqa: E402

LIB = os.environ.get("BRAID_LIB", os.path.join(REPO, "build", "libbraid.so"))


def two_branch_model(path):
    """x -> Conv(w1) -> Relu -> a;  x -> Conv(w2) -> Sigmoid -> b;  y = a + b."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["a"], name="relu_a"),
        helper.make_node("Conv", ["x", "w2"], ["c2"], name="conv_b"),
        helper.make_node("Sigmoid", ["c2"], ["b"], name="sigmoid_b"),
        helper.make_node("Add", ["a", "b"], ["y"], name="join"),
    ]
    g = helper.make_graph(nodes, "two_branch",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, path)


def run_main(argv):
    out = io.StringIO()
    old = sys.argv
    sys.argv = ["compare.py"] + argv
    try:
        with contextlib.redirect_stdout(out):
            rc = compare.main()
    finally:
        sys.argv = old
    return rc, out.getvalue()


class ToleranceRule(unittest.TestCase):
    def test_rule_is_atol_plus_rtol_times_reference(self):
        b = np.array([0.0, 1.0, 100.0], np.float32)
        # bounds: 1e-4, 1e-4 + 1e-3, 1e-4 + 0.1
        ok = compare.compare(b + np.array([0.9e-4, 1.0e-3, 0.1], np.float32), b, 1e-4, 1e-3)
        self.assertTrue(ok[0])
        bad = compare.compare(b + np.array([0.0, 0.0, 0.2], np.float32), b, 1e-4, 1e-3)
        self.assertFalse(bad[0])
        self.assertEqual(bad[4], 1)
        self.assertEqual(tuple(int(i) for i in bad[5]), (2,))
        self.assertAlmostEqual(bad[1], 0.2, places=4)

    def test_nan_matches_nan_and_infinities_must_match(self):
        b = np.array([np.nan, np.inf, 1.0], np.float32)
        self.assertTrue(compare.compare(b.copy(), b, 1e-4, 1e-3)[0])
        self.assertFalse(compare.compare(np.array([1.0, np.inf, 1.0], np.float32), b, 1e-4, 1e-3)[0])
        self.assertFalse(compare.compare(np.array([np.nan, -np.inf, 1.0], np.float32), b, 1e-4, 1e-3)[0])

    def test_shape_and_dtype_mismatch_fail(self):
        self.assertFalse(compare.compare(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32), 1, 1)[0])
        self.assertFalse(compare.compare(np.zeros(3, np.int64), np.zeros(3, np.int32), 1, 1)[0])

    def test_cosine_and_relative_error(self):
        b = np.array([1.0, 2.0, 0.0], np.float32)
        r = compare.compare(np.array([1.1, 2.0, 0.0], np.float32), b, 1e-4, 1e-3)
        self.assertAlmostEqual(r[2], 0.1, places=5)  # max_rel over |b| > atol
        self.assertLess(r[3], 1.0)
        self.assertGreater(r[3], 0.99)


class Inputs(unittest.TestCase):
    def test_random_inputs_are_fixed_seed_uniform(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.onnx")
            two_branch_model(p)
            m = onnx.load(p)
            a = compare.make_inputs(m, {}, {"x": "2x3x8x8"})["x"]
            b = compare.make_inputs(m, {}, {"x": "2x3x8x8"})["x"]
            self.assertEqual(a.shape, (2, 3, 8, 8))
            self.assertEqual(a.dtype, np.float32)
            np.testing.assert_array_equal(a, b)
            self.assertTrue((a >= 0).all() and (a < 1).all())
            np.testing.assert_array_equal(
                a, np.random.default_rng(0).random((2, 3, 8, 8), dtype=np.float64).astype(np.float32))


@unittest.skipUnless(os.path.exists(LIB), f"no braid library at {LIB}")
class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.model = os.path.join(self.tmp.name, "two_branch.onnx")
        two_branch_model(self.model)

    def tearDown(self):
        self.tmp.cleanup()

    def test_pass_with_npy_input_and_serial_plan(self):
        x = np.random.default_rng(5).standard_normal((1, 3, 8, 8)).astype(np.float32)
        npy = os.path.join(self.tmp.name, "x.npy")
        np.save(npy, x)
        for streams in ("0", "1"):
            rc, out = run_main([self.model, "--lib", LIB, "--input", f"x={npy}", "--streams", streams])
            self.assertEqual(rc, 0, out)
            self.assertIn("y: shape [1, 4, 8, 8] float32", out)
            self.assertTrue(out.rstrip().endswith("PASS"), out)

    def test_all_tensors_clean_run_reports_no_divergence(self):
        rc, out = run_main([self.model, "--lib", LIB, "--shape", "x=2x3x8x8", "--all-tensors"])
        self.assertEqual(rc, 0, out)
        self.assertIn("intermediate tensors: 5 compared", out)
        self.assertIn("first divergence: none", out)

    def test_all_tensors_names_the_first_diverging_node(self):
        real_run = compare.run_braid

        def broken(braid, path, feeds, *args):
            names, got = real_run(braid, path, feeds, *args)
            got["c2"] = got["c2"] + 0.5    # as if conv_b were wrong
            got["b"] = got["b"] + 0.1      # and everything after it
            got["y"] = got["y"] + 0.1
            return names, got

        compare.run_braid = broken
        try:
            rc, out = run_main([self.model, "--lib", LIB, "--shape", "x=1x3x8x8", "--all-tensors"])
        finally:
            compare.run_braid = real_run
        self.assertEqual(rc, 1, out)
        self.assertIn("first divergence: node #2 'conv_b' (Conv) output 'c2'", out)
        self.assertTrue(out.rstrip().endswith("FAIL"), out)

    def test_unknown_input_name_is_a_usage_error(self):
        with self.assertRaises(SystemExit) as cm:
            run_main([self.model, "--lib", LIB, "--shape", "nope=1x3x8x8"])
        self.assertIn("no input 'nope'", str(cm.exception))

    def test_braid_failure_exits_2_with_its_message(self):
        rc, out = run_main([self.model, "--lib", LIB, "--shape", "x=1x4x8x8"])
        self.assertEqual(rc, 2, out)
        self.assertIn("braid failed:", out)


if __name__ == "__main__":
    unittest.main()
