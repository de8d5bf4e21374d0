"""test_onnx_backend.py: onnx's own backend test runner (the one behind the
ONNX backend scoreboard) over braid.backend, on onnx's node tests.

Tests braid refuses (an op, dtype or attribute it does not run) are reported
as skipped with braid's reason. Excluded: the tests whose outputs are random
draws (braid check compares only their dtypes and shapes; onnx's runner
compares values). conftest.py prints the passed/failed/skipped counts and,
with BRAID_MIN_NODE_PASS set, fails the session when fewer pass.
"""
import onnx.backend.test

import braid.backend

_runner = onnx.backend.test.BackendTest(braid.backend, __name__)
# Random-valued outputs: onnx's expected values are one draw of numpy's generator.
_runner.exclude(r"test_(bernoulli|random(normal|uniform)(_like)?)(_.*)?_(cpu|cuda)$")
# Known wrong in braid itself (`braid check` fails it too): float16 causal
# attention, expanded, off by one float16 ULP in 2 of 192 elements.

_cases = _runner.test_cases
# Only the node tests: onnx's "real" and "simple" models download from the network.
OnnxBackendNodeModelTest = _cases["OnnxBackendNodeModelTest"]
