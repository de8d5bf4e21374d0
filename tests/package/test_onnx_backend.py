"""test_onnx_backend.py: onnx's own backend test runner (the one behind the
ONNX backend scoreboard) over braid.backend, on onnx's node tests.

Tests braid refuses (an op, dtype or attribute it does not run) are reported
as skipped with braid's reason. Excluded: the tests whose outputs are random
draws (braid check compares only their dtypes and shapes; onnx's runner
compares values), and one the runner itself cannot compare (below). conftest.py prints the passed/failed/skipped counts and,
with BRAID_MIN_NODE_PASS set, fails the session when fewer pass.
"""
import onnx.backend.test

import braid.backend

_runner = onnx.backend.test.BackendTest(braid.backend, __name__)
# Random-valued outputs: onnx's expected values are one draw of numpy's generator.
_runner.exclude(r"test_(bernoulli|random(normal|uniform)(_like)?)(_.*)?_(cpu|cuda)$")
# onnx's runner cannot compare a sequence whose elements are 0-d arrays (its
# assert_similar_outputs recurses into each element and takes len() of it);
# `braid check` compares this case element by element, and it passes there.
_runner.exclude(r"test_loop16_seq_none_(cpu|cuda)$")

_cases = _runner.test_cases
# Only the node tests: onnx's "real" and "simple" models download from the network.
OnnxBackendNodeModelTest = _cases["OnnxBackendNodeModelTest"]
