"""braid.backend: braid as an onnx.backend Backend, so that onnx's backend
test runner runs against it:

    import onnx.backend.test, braid.backend
    globals().update(onnx.backend.test.BackendTest(braid.backend, __name__).test_cases)

prepare() turns braid's refusals (status UNSUPPORTED: an op, opset, dtype or
attribute braid does not run) and inputs braid cannot take (maps) into
unittest.SkipTest with braid's message, so the runner reports
them as skipped; every other failure is an error. Module-level prepare,
run_model, run_node, supports_device and is_compatible are what the runner
calls.
"""
from __future__ import annotations

import unittest
from typing import Any, Dict, List, Sequence, Union

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from ._session import CPU, CUDA, BraidError, InferenceSession, SessionOptions, get_available_providers

_cuda_state: List[bool] = []


def _cuda_answers() -> bool:
    """Whether a CUDA session really runs on a GPU here (asked once, with a
    one-node model: braid falls back to the CPU with a warning otherwise)."""
    if not _cuda_state:
        import warnings
        from onnx import TensorProto, helper
        g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                s = InferenceSession(m.SerializeToString(), providers=[CUDA])
                _cuda_state.append(s.get_providers()[0] == CUDA)
                s.close()
        except BraidError:
            _cuda_state.append(False)
    return _cuda_state[0]


def _skip_unsupported(e: BraidError) -> None:
    if e.status == "UNSUPPORTED":
        raise unittest.SkipTest(f"braid: {e}") from None


class BraidBackendRep(BackendRep):
    """A prepared model: one braid InferenceSession."""

    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self._names = [i.name for i in session.get_inputs()]

    def run(self, inputs: Union[Dict[str, Any], Sequence[Any], Any], **kwargs: Any) -> List[np.ndarray]:
        """Runs on inputs given as {name: array}, as a list in the order of the
        model's inputs (initializers excluded), or as one array for a
        one-input model; returns the outputs in graph order."""
        if isinstance(inputs, dict):
            feed = inputs
        elif isinstance(inputs, (list, tuple)):
            for v in inputs:  # tensors, sequences (lists of arrays) and empty optionals (None)
                if isinstance(v, dict):
                    raise unittest.SkipTest("braid runs no map values")
            if len(inputs) != len(self._names):
                raise BraidError(1, f"{len(inputs)} inputs given, the model takes {len(self._names)}")
            feed = dict(zip(self._names, inputs))
        else:
            feed = {self._names[0]: inputs} if self._names else {}
        try:
            return self.session.run(None, feed)
        except BraidError as e:
            _skip_unsupported(e)
            raise


def _providers(device: str) -> List[str]:
    return [CUDA] if device.upper().startswith("CUDA") else [CPU]


class BraidBackend(Backend):
    """onnx's Backend interface over braid."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """"CPU" always; "CUDA" when this build carries braid's CUDA backend and
        a GPU answers (so that onnx's runner skips its _cuda cases rather than
        run them on the CPU fallback and count them as CUDA passes)."""
        d = device.upper()
        if d.startswith("CUDA"):
            return CUDA in get_available_providers() and _cuda_answers()
        return d == "CPU"

    @classmethod
    def prepare(cls, model: Union[onnx.ModelProto, bytes, str], device: str = "CPU",
                **kwargs: Any) -> BraidBackendRep:
        """A BraidBackendRep for the model (a ModelProto, its bytes or a path).
        SessionOptions attributes may be passed as keywords."""
        opts = SessionOptions()
        for k, v in kwargs.items():
            if k in SessionOptions.__slots__:
                setattr(opts, k, v)
        if isinstance(model, onnx.ModelProto):
            for inp in model.graph.input:
                if inp.type.WhichOneof("value") in ("map_type", "sparse_tensor_type"):
                    raise unittest.SkipTest(f"braid runs no maps or sparse tensors: input '{inp.name}' is a "
                                            f"{inp.type.WhichOneof('value')}")
            model = model.SerializeToString()
        try:
            return BraidBackendRep(InferenceSession(model, opts, providers=_providers(device)))
        except BraidError as e:
            _skip_unsupported(e)
            raise

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any) -> List[np.ndarray]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU", outputs_info: Any = None,
                 **kwargs: Any) -> List[np.ndarray]:
        """Not offered: braid runs models (onnx's runner builds one per node test)."""
        raise NotImplementedError("braid runs whole models: use prepare() or run_model()")


is_compatible = BraidBackend.is_compatible
prepare = BraidBackend.prepare
run_model = BraidBackend.run_model
run_node = BraidBackend.run_node
supports_device = BraidBackend.supports_device
