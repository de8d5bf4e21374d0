"""test_cuda_emulated.py: the Python package on braid's CUDA backend, run on
the emulated device (BRAID_CUDA_EMULATOR=1, set by ctest): a session asked
for CUDAExecutionProvider gets it, runs a branchy model at automatic streams
and as a CUDA graph, and gives the CPU session's outputs; the buffers run()
hands back are host arrays (a device pointer would fault at once on the
emulated device). Skipped when this build has no CUDA backend."""
import os

import numpy as np
import pytest

import braid

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models", "gen")


def need_emulator():
    if "CUDAExecutionProvider" not in braid.get_available_providers():
        pytest.skip("this build has no CUDA backend")
    if os.environ.get("BRAID_CUDA_EMULATOR") != "1":
        pytest.skip("BRAID_CUDA_EMULATOR=1 is not set")


@pytest.mark.parametrize("graph", [False, True])
def test_inception_on_the_emulated_device(graph):
    need_emulator()
    path = os.path.join(MODELS, "inception", "model.onnx")
    opts = braid.SessionOptions()
    opts.enable_cuda_graph = graph
    cuda = braid.InferenceSession(path, opts, providers=["CUDAExecutionProvider"])
    cpu = braid.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert cuda.get_providers()[0] == "CUDAExecutionProvider"
    rng = np.random.default_rng(5)
    for _ in range(3):  # new data each run; with graph, runs 2 and 3 replay it
        x = rng.standard_normal((1, 64, 28, 28), dtype=np.float32)
        got = cuda.run(None, {"x": x})[0]
        want = cpu.run(None, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        assert np.isfinite(got).all()  # no poison: every output byte was written
