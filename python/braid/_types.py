"""_types.py: braid's element types (ONNX TensorProto numbers) as numpy
dtypes and as onnxruntime's type strings ("tensor(float)").

The narrow floats and sub-byte integers map to ml_dtypes' types (one byte
per element, as braid holds them) when ml_dtypes is installed (onnx
depends on it); without it those types cannot be passed or returned.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

# braid_dtype -> the name onnxruntime gives it inside "tensor(...)".
TYPE_NAMES: Dict[int, str] = {
    0: "undefined", 1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
    7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64",
    14: "complex64", 15: "complex128", 16: "bfloat16", 17: "float8e4m3fn", 18: "float8e4m3fnuz",
    19: "float8e5m2", 20: "float8e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4e2m1",
    24: "float8e8m0", 25: "uint2", 26: "int2", 27: "float6e2m3", 28: "float6e3m2",
}

_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_ML = {16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
       20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn", 24: "float8_e8m0fnu",
       25: "uint2", 26: "int2", 27: "float6_e2m3fn", 28: "float6_e3m2fn"}

try:
    import ml_dtypes as _ml
except ImportError:  # pragma: no cover - onnx brings ml_dtypes
    _ml = None
if _ml is not None:
    for _code, _name in _ML.items():
        if hasattr(_ml, _name):
            _NUMPY[_code] = getattr(_ml, _name)

# braid_dtype -> numpy dtype, and back.
TO_NUMPY: Dict[int, np.dtype] = {k: np.dtype(v) for k, v in _NUMPY.items()}
FROM_NUMPY: Dict[np.dtype, int] = {v: k for k, v in TO_NUMPY.items()}


SEQUENCE = 0x100  # BRAID_DTYPE_SEQUENCE: a flag on the element dtype
OPTIONAL = 0x200  # BRAID_DTYPE_OPTIONAL


def type_string(dtype: int) -> str:
    """onnxruntime's name for a braid dtype: "tensor(float)", "seq(tensor(float))",
    "optional(tensor(float))", "optional(seq(tensor(float)))"."""
    s = f"tensor({TYPE_NAMES.get(dtype & 0xff, 'undefined')})"
    if dtype & SEQUENCE:
        s = f"seq({s})"
    if dtype & OPTIONAL:
        s = f"optional({s})"
    return s


def numpy_dtype(dtype: int) -> Optional[np.dtype]:
    """The numpy dtype of a braid dtype, or None when numpy has none."""
    return TO_NUMPY.get(dtype)
