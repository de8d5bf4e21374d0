"""_lib.py: finds and loads libbraid through ctypes and declares the C
signatures of include/braid.h once, at import.

The library is $BRAID_LIB when set, else the libbraid.so that sits in this
package (an installed wheel). ctypes.CDLL releases the GIL during every
foreign call, so braid runs while other Python threads go on.
"""
from __future__ import annotations

import ctypes
import os

MAX_RANK = 8
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class Tensor(ctypes.Structure):
    """braid_tensor."""
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("data", ctypes.c_void_p)]


class ValueInfo(ctypes.Structure):
    """braid_value_info."""
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("dim_names", ctypes.c_char_p * MAX_RANK)]


class GraphInfo(ctypes.Structure):
    """braid_graph_info."""
    _fields_ = [("requested", ctypes.c_int), ("captured", ctypes.c_int), ("failed", ctypes.c_int),
                ("replays", ctypes.c_long), ("uncaptured", ctypes.c_long), ("error", ctypes.c_char_p)]


def library_path() -> str:
    """The libbraid this process uses: $BRAID_LIB, else the package's own copy."""
    env = os.environ.get("BRAID_LIB")
    if env:
        return env
    for name in sorted(os.listdir(PACKAGE_DIR)):
        if name.startswith("libbraid.so"):
            return os.path.join(PACKAGE_DIR, name)
    raise ImportError(f"braid: no libbraid.so in {PACKAGE_DIR} and BRAID_LIB is not set: "
                      "install the package with `pip install .` from braid's repository, "
                      "or point BRAID_LIB at a built libbraid.so")


def cuda_module_present(lib_path: str) -> bool:
    """Whether this build carries the CUDA backend (libbraid_cuda.so where libbraid looks first; with
    BRAID_CUDA_EMULATOR=1, libbraid_cuda_emu.so, the backend on braid's emulated device)."""
    emulated = os.environ.get("BRAID_CUDA_EMULATOR") == "1"
    env = os.environ.get("BRAID_CUDA_EMULATOR_MODULE" if emulated else "BRAID_CUDA_MODULE")
    if env:
        return os.path.exists(env)
    name = "libbraid_cuda_emu.so" if emulated else "libbraid_cuda.so"
    return os.path.exists(os.path.join(os.path.dirname(os.path.abspath(lib_path)), name))


def _declare(lib: ctypes.CDLL) -> None:
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    pvp, i64 = ctypes.POINTER(ctypes.c_void_p), ctypes.c_int64
    pt = ctypes.POINTER(Tensor)
    for name, res, args in [
        ("braid_version", cp, []),
        ("braid_status_name", cp, [i]),
        ("braid_dtype_name", cp, [i]),
        ("braid_last_error", cp, []),
        ("braid_model_load_file", i, [cp, pvp]),
        ("braid_model_load_memory", i, [cp, ctypes.c_size_t, cp, pvp]),
        ("braid_model_destroy", None, [vp]),
        ("braid_model_input_count", i, [vp]),
        ("braid_model_output_count", i, [vp]),
        ("braid_model_input_info", i, [vp, i, ctypes.POINTER(ValueInfo)]),
        ("braid_model_output_info", i, [vp, i, ctypes.POINTER(ValueInfo)]),
        ("braid_options_create", i, [pvp]),
        ("braid_options_destroy", None, [vp]),
        ("braid_options_set_backend", i, [vp, i]),
        ("braid_options_set_device", i, [vp, i]),
        ("braid_options_set_max_streams", i, [vp, i]),
        ("braid_options_set_threads", i, [vp, i]),
        ("braid_options_set_cuda_graph", i, [vp, i]),
        ("braid_options_set_tf32", i, [vp, i]),
        ("braid_options_set_fold", i, [vp, i]),
        ("braid_options_set_layout", i, [vp, i]),
        ("braid_options_set_cuda_workspace", i, [vp, i64]),
        ("braid_options_set_loop_limit", i, [vp, i64]),
        ("braid_options_set_profile", i, [vp, cp]),
        ("braid_session_create", i, [vp, vp, pvp]),
        ("braid_session_destroy", None, [vp]),
        ("braid_session_backend", i, [vp]),
        ("braid_session_backend_note", cp, [vp]),
        ("braid_session_device_info", cp, [vp]),
        ("braid_session_note_count", i, [vp]),
        ("braid_session_note", cp, [vp, i]),
        ("braid_session_graph_info", i, [vp, ctypes.POINTER(GraphInfo)]),
        ("braid_session_run", i, [vp, i, pt, i, pt]),
        ("braid_session_run_into", i, [vp, i, pt, i, pt]),
        ("braid_session_error", cp, [vp]),
    ]:
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args


LIB_PATH = library_path()
lib = ctypes.CDLL(LIB_PATH)
_declare(lib)
HAS_CUDA_MODULE = cuda_module_present(LIB_PATH)

# braid_session_run for run()'s hot path, declared without argtypes: ctypes's
# per-argument conversion costs about 0.6 us a call (half the call), and
# run() always passes a c_void_p, two ints and two Tensor arrays, which
# ctypes passes as they are. Like every CDLL call it releases the GIL.
run_raw = ctypes.CDLL(LIB_PATH).braid_session_run
run_raw.restype = ctypes.c_int
run_into_raw = ctypes.CDLL(LIB_PATH).braid_session_run_into
run_into_raw.restype = ctypes.c_int
