"""braid: a concurrent ONNX model executor, in onnxruntime's Python idiom.

    import braid
    sess = braid.InferenceSession("model.onnx", providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    outputs = sess.run(None, {"x": x})

InferenceSession, SessionOptions, get_available_providers() and run() behave
as onnxruntime's do; failures raise BraidError (a RuntimeError) with braid's
message and its status name. braid.backend is an onnx.backend Backend for
onnx's backend test runner.
"""
from ._lib import LIB_PATH as _LIB_PATH
from ._session import (BraidError, InferenceSession, NodeArg, SessionOptions, get_all_providers,
                       get_available_providers, get_version_string)

__version__ = get_version_string()


def get_device() -> str:
    """"GPU" when this build carries the CUDA backend, else "CPU" (onnxruntime's get_device)."""
    return "GPU" if "CUDAExecutionProvider" in get_available_providers() else "CPU"


def library_path() -> str:
    """The path of the libbraid this process loaded."""
    return _LIB_PATH


__all__ = ["BraidError", "InferenceSession", "NodeArg", "SessionOptions", "get_all_providers",
           "get_available_providers", "get_device", "get_version_string", "library_path", "__version__"]
