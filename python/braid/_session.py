"""_session.py: InferenceSession, SessionOptions, NodeArg and BraidError, the
onnxruntime idiom over braid's C API (include/braid.h). No logic of its own
beyond mapping Python values to braid's and back: braid checks shapes,
dtypes and the model.
"""
from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib
from ._lib import MAX_RANK, Tensor, ValueInfo, lib, run_into_raw, run_raw
from ._types import FROM_NUMPY, OPTIONAL, SEQUENCE, TO_NUMPY, type_string

_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof
CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
_BACKEND_AUTO, _BACKEND_CPU, _BACKEND_CUDA = 0, 1, 2
_STATUS = ["OK", "INVALID_ARGUMENT", "IO", "PARSE", "INVALID_MODEL", "UNSUPPORTED", "SHAPE",
           "DTYPE", "OUT_OF_MEMORY", "NO_DEVICE", "DEVICE", "LIMIT", "INTERNAL"]


# ml_dtypes keeps int4 and int2 in the low bits of a byte; braid wants them
# sign-extended to the whole byte.
_SIGNED_SUBBYTE = {22: 4, 26: 2}


def _sign_extend(a: np.ndarray, bits: int) -> np.ndarray:
    u = a.view(np.uint8) & ((1 << bits) - 1)
    sign = 1 << (bits - 1)
    return ((u ^ sign).astype(np.int16) - sign).astype(np.int8).view(a.dtype)


class BraidError(RuntimeError):
    """A failure reported by braid.

    str(e) is braid's own message. ``e.status`` is the status name as in
    braid.h without its prefix ("UNSUPPORTED", "SHAPE", "DTYPE", ...) and
    ``e.code`` its number (BRAID_ERR_*).
    """

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)
        self.status = _STATUS[code] if 0 <= code < len(_STATUS) else "UNKNOWN"


_c_char = ctypes.c_char
_STRING = 8  # BRAID_DTYPE_STRING: an element is a const char * (UTF-8, NUL-terminated)


def _strings_in(name: str, a: np.ndarray) -> Tuple[np.ndarray, Any]:
    """A str/bytes array as braid's string tensor: (the array, a ctypes array
    of char pointers that keeps the encoded bytes alive)."""
    flat = a.reshape(-1)
    enc = []
    for k, v in enumerate(flat):
        if isinstance(v, str):
            v = v.encode("utf-8", "surrogateescape")
        if not isinstance(v, (bytes, np.bytes_)):
            raise BraidError(7, f"input '{name}': element {k} is {type(v).__name__}, not str or bytes")
        if b"\0" in v:
            raise BraidError(7, f"input '{name}': element {k} holds a NUL byte, which braid's strings cannot")
        enc.append(bytes(v))
    arr = (ctypes.c_char_p * max(len(enc), 1))(*enc)
    return a, arr


def _strings_out(t: Any) -> np.ndarray:
    """A string output as a numpy object array of str (as onnxruntime gives)."""
    shape = tuple(t.dims[:t.rank])
    n = 1
    for d in shape:
        n *= d
    out = np.empty(n, dtype=object)
    if n and t.data:
        ptrs = (ctypes.c_char_p * n).from_address(t.data)
        for k in range(n):
            v = ptrs[k]
            out[k] = v.decode("utf-8", "surrogateescape") if v is not None else ""
    return out.reshape(shape)


def _text(p: Optional[bytes]) -> str:
    return p.decode("utf-8", "replace") if p else ""


def _check(code: int, session: Optional[ctypes.c_void_p] = None) -> None:
    if code:
        msg = lib.braid_session_error(session) if session else lib.braid_last_error()
        raise BraidError(code, _text(msg) or _text(lib.braid_status_name(code)))


def get_available_providers() -> List[str]:
    """The providers this build of braid offers, best first, as onnxruntime
    names them: "CUDAExecutionProvider" when the CUDA backend was built
    (libbraid_cuda.so is present; whether a GPU answers is known only when a
    session starts), and always "CPUExecutionProvider"."""
    return [CUDA, CPU] if _lib.HAS_CUDA_MODULE else [CPU]


def get_all_providers() -> List[str]:
    """Every provider name braid understands."""
    return [CUDA, CPU]


def get_version_string() -> str:
    """braid's version ("0.1.0")."""
    return _text(lib.braid_version())


class SessionOptions:
    """braid's session options (braid_options_* in braid.h).

    Attributes:
        intra_op_num_threads: CPU threads a run uses; 0 = all cores.
        max_streams: concurrent branches of the plan; 0 = automatic (the width
            of the graph), 1 = a serial plan.
        enable_cuda_graph: capture the plan as a CUDA graph and replay it.
        enable_tf32: let cuBLAS and cuDNN use TF32 for float32 (about 1e-3 relative error).
        enable_fold: fold an Add into the Conv that produces it where the planner's
            cost estimate says so (default True).
        enable_layout: let the CPU backend run convolutions and the ops around them
            on NHWC data where its plan finds that pays (default True; False keeps
            every value NCHW).
        cuda_workspace_mib: the most cuDNN workspace per stream, MiB (None = braid's 64).
        loop_limit: the most iterations one Loop node may run (0 = braid's default, 2^24).
        profile_path: write a Chrome trace-event JSON there when the session ends
            (None = no profile). ``enable_profiling`` with ``profile_file_prefix``
            (onnxruntime's names) sets it to "<prefix>.json".

    onnxruntime-only settings that braid has no use for (graph_optimization_level,
    execution_mode, inter_op_num_threads, log_severity_level, log_verbosity_level,
    logid) are accepted and ignored, so code written for onnxruntime runs unchanged.
    """

    __slots__ = ("intra_op_num_threads", "max_streams", "enable_cuda_graph", "enable_tf32",
                 "enable_fold", "enable_layout", "cuda_workspace_mib", "loop_limit", "profile_path",
                 "enable_profiling", "profile_file_prefix", "graph_optimization_level",
                 "execution_mode", "inter_op_num_threads", "log_severity_level",
                 "log_verbosity_level", "logid")

    def __init__(self) -> None:
        self.intra_op_num_threads: int = 0
        self.max_streams: int = 0
        self.enable_cuda_graph: bool = False
        self.enable_tf32: bool = False
        self.enable_fold: bool = True
        self.enable_layout: bool = True
        self.cuda_workspace_mib: Optional[int] = None
        self.loop_limit: int = 0
        self.profile_path: Optional[str] = None
        self.enable_profiling: bool = False
        self.profile_file_prefix: str = "braid_profile"
        self.graph_optimization_level: Any = None
        self.execution_mode: Any = None
        self.inter_op_num_threads: int = 0
        self.log_severity_level: int = 2
        self.log_verbosity_level: int = 0
        self.logid: str = ""

    def _profile(self) -> Optional[str]:
        if self.profile_path:
            return os.fspath(self.profile_path)
        if self.enable_profiling:
            return f"{self.profile_file_prefix}.json"
        return None

    def _build(self, backend: int, device: int) -> ctypes.c_void_p:
        o = ctypes.c_void_p()
        _check(lib.braid_options_create(ctypes.byref(o)))
        try:
            _check(lib.braid_options_set_backend(o, backend))
            _check(lib.braid_options_set_device(o, int(device)))
            _check(lib.braid_options_set_threads(o, int(self.intra_op_num_threads)))
            _check(lib.braid_options_set_max_streams(o, int(self.max_streams)))
            _check(lib.braid_options_set_cuda_graph(o, int(bool(self.enable_cuda_graph))))
            _check(lib.braid_options_set_tf32(o, int(bool(self.enable_tf32))))
            _check(lib.braid_options_set_fold(o, int(bool(self.enable_fold))))
            _check(lib.braid_options_set_layout(o, int(bool(self.enable_layout))))
            if self.cuda_workspace_mib is not None:
                _check(lib.braid_options_set_cuda_workspace(o, int(self.cuda_workspace_mib)))
            _check(lib.braid_options_set_loop_limit(o, int(self.loop_limit)))
            prof = self._profile()
            if prof:
                _check(lib.braid_options_set_profile(o, prof.encode()))
        except BaseException:
            lib.braid_options_destroy(o)
            raise
        return o


class NodeArg:
    """A graph input or output as the model declares it: ``name``, ``type``
    ("tensor(float)") and ``shape``, a list with an int per static dim, the
    dim's name (str) per symbolic dim and None per unknown dim ([] when the
    model gives no shape)."""

    __slots__ = ("name", "type", "shape", "_dtype")

    def __init__(self, name: str, type: str, shape: List[Union[int, str, None]], dtype: int) -> None:
        self.name = name
        self.type = type
        self.shape = shape
        self._dtype = dtype

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _node_arg(fn: Any, model: ctypes.c_void_p, i: int) -> NodeArg:
    vi = ValueInfo()
    _check(fn(model, i, ctypes.byref(vi)))
    shape: List[Union[int, str, None]] = []
    for d in range(max(vi.rank, 0)):
        if vi.dims[d] >= 0:
            shape.append(int(vi.dims[d]))
        else:
            shape.append(_text(vi.dim_names[d]) or None)
    return NodeArg(_text(vi.name), type_string(vi.dtype), shape, vi.dtype)


ProviderList = Optional[Sequence[Union[str, Tuple[str, Dict[str, Any]]]]]


def _parse_providers(providers: ProviderList,
                     provider_options: Optional[Sequence[Dict[str, Any]]]) -> List[Tuple[str, Dict[str, Any]]]:
    out: List[Tuple[str, Dict[str, Any]]] = []
    for k, p in enumerate(providers or []):
        opts: Dict[str, Any] = {}
        if isinstance(p, (tuple, list)):
            p, opts = p[0], dict(p[1])
        if provider_options is not None and k < len(provider_options):
            opts.update(provider_options[k])
        out.append((str(p), opts))
    return out


class InferenceSession:
    """Runs one ONNX model with braid, in onnxruntime's idiom.

    Args:
        path_or_bytes: the model: a path (external data is found beside it) or
            the serialized ModelProto as bytes (no external data).
        sess_options: a SessionOptions; None uses braid's defaults.
        providers: onnxruntime's provider names, best first:
            "CUDAExecutionProvider" runs on braid's CUDA backend (provider
            option "device_id" picks the GPU), "CPUExecutionProvider" on its
            CPU backend. None lets braid choose (CUDA when a GPU answers, else
            the CPU). As in onnxruntime, a provider that cannot run here
            (CUDA without a GPU or without the CUDA build, or an unknown name)
            is skipped with a warning and the session falls back to the next
            one, then to the CPU, even when only CUDA was asked for;
            get_providers() says what the session uses.
        provider_options: per-provider option dicts, onnxruntime's other form.

    Raises:
        BraidError: the model cannot be read, is invalid, or uses an op,
            opset or dtype braid does not run (status "UNSUPPORTED").

    Runs on one session are serialized (braid holds one arena per session);
    the GIL is released while braid runs, so Python threads with a session
    each run in parallel. Use ``with`` or close() to end the session at a
    known point (the profile is written then).
    """

    def __init__(self, path_or_bytes: Union[str, bytes, os.PathLike], sess_options: Optional[SessionOptions] = None,
                 providers: ProviderList = None, provider_options: Optional[Sequence[Dict[str, Any]]] = None,
                 **kwargs: Any) -> None:
        self._session = ctypes.c_void_p()
        self._model = ctypes.c_void_p()
        self._lock = threading.Lock()
        self._options = sess_options or SessionOptions()
        model = ctypes.c_void_p()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            data = bytes(path_or_bytes)
            _check(lib.braid_model_load_memory(data, len(data), None, ctypes.byref(model)))
            self._model_path: Optional[str] = None
        else:
            self._model_path = os.fspath(path_or_bytes)
            _check(lib.braid_model_load_file(self._model_path.encode(), ctypes.byref(model)))
        self._model = model
        self._inputs = [_node_arg(lib.braid_model_input_info, model, i)
                        for i in range(lib.braid_model_input_count(model))]
        self._outputs = [_node_arg(lib.braid_model_output_info, model, i)
                         for i in range(lib.braid_model_output_count(model))]
        self._create(_parse_providers(providers, provider_options))
        n_in, n_out = len(self._inputs), len(self._outputs)
        self._in_names = [a.name for a in self._inputs]
        self._in_index = {n: i for i, n in enumerate(self._in_names)}
        self._out_names = [a.name for a in self._outputs]
        self._out_index = {n: i for i, n in enumerate(self._out_names)}
        self._in = (Tensor * max(n_in, 1))()
        self._in_last: List[Any] = [None] * n_in  # per input: (dtype, shape) its braid_tensor holds now
        self._out = (Tensor * max(n_out, 1))()
        self._run_c = run_raw  # (no argtypes: see _lib.py)
        self._into_c = run_into_raw
        self._into = (Tensor * max(n_out, 1))()
        # per input signature (each input's (dtype, shape)): the outputs'
        # (numpy dtype, shape) of the last run with it, or None when they
        # may change from run to run (or are not plain arrays)
        self._out_shapes: Dict[Any, Any] = {}
        self._all_outputs = (list(range(n_out)), n_out)

    def _create(self, providers: List[Tuple[str, Dict[str, Any]]]) -> None:
        if not providers:
            self._session_create(_BACKEND_AUTO, 0, None)
            b = lib.braid_session_backend(self._session)
            self._providers = [CUDA, CPU] if b == _BACKEND_CUDA else [CPU]
            self._provider_options = {p: {} for p in self._providers}
            return
        tried: List[str] = []
        for name, opts in providers:
            if name == CPU:
                self._session_create(_BACKEND_CPU, 0, None)
                self._providers, self._provider_options = [CPU], {CPU: opts}
                break
            if name == CUDA:
                device = int(opts.get("device_id", 0))
                try:
                    self._session_create(_BACKEND_CUDA, device, None)
                except BraidError as e:
                    if e.status not in ("NO_DEVICE", "DEVICE", "UNSUPPORTED", "INVALID_ARGUMENT"):
                        raise
                    tried.append(f"{CUDA} cannot run here: {e}")
                    continue
                self._providers, self._provider_options = [CUDA, CPU], {CUDA: opts, CPU: {}}
                break
            tried.append(f"Specified provider '{name}' is not in available provider names. "
                         f"Available providers: {', '.join(repr(p) for p in get_available_providers())}")
        else:
            self._session_create(_BACKEND_CPU, 0, None)
            self._providers, self._provider_options = [CPU], {CPU: {}}
        for t in tried:
            warnings.warn(f"braid: {t}; falling back to {self._providers[0]}", RuntimeWarning, stacklevel=4)

    def _session_create(self, backend: int, device: int, _: Any) -> None:
        o = self._options._build(backend, device)
        try:
            s = ctypes.c_void_p()
            _check(lib.braid_session_create(self._model, o, ctypes.byref(s)))
            self._session = s
        finally:
            lib.braid_options_destroy(o)

    # ---- the model's interface ---------------------------------------------
    def get_inputs(self) -> List[NodeArg]:
        """The graph inputs a run takes (initializers excluded), in graph order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The graph outputs, in graph order."""
        return list(self._outputs)

    def get_overridable_initializers(self) -> List[NodeArg]:
        """Always empty: braid does not take initializers as run inputs."""
        return []

    def get_providers(self) -> List[str]:
        """The providers this session uses, as onnxruntime lists them:
        ["CUDAExecutionProvider", "CPUExecutionProvider"] on braid's CUDA
        backend, ["CPUExecutionProvider"] on its CPU backend."""
        return list(self._providers)

    def get_provider_options(self) -> Dict[str, Dict[str, Any]]:
        """The options given with each provider in use."""
        return {k: dict(v) for k, v in self._provider_options.items()}

    def get_session_options(self) -> SessionOptions:
        """The SessionOptions the session was made with."""
        return self._options

    @property
    def backend_note(self) -> str:
        """Why a session that let braid choose runs on the CPU ("" otherwise)."""
        return _text(lib.braid_session_backend_note(self._live()))

    @property
    def device_info(self) -> str:
        """The GPU and library versions a CUDA session uses ("" on the CPU)."""
        return _text(lib.braid_session_device_info(self._live()))

    @property
    def notes(self) -> List[str]:
        """What braid did other than what it was asked (a fallback, a CUDA graph
        not captured), one sentence each, oldest first."""
        s = self._live()
        return [_text(lib.braid_session_note(s, i)) for i in range(lib.braid_session_note_count(s))]

    # ---- runs ---------------------------------------------------------------
    def _live(self) -> ctypes.c_void_p:
        if not self._session:
            raise BraidError(1, "the session is closed")
        return self._session

    def _select(self, output_names: Optional[Sequence[str]]) -> Tuple[List[int], int]:
        if output_names is None:
            return self._all_outputs
        try:
            idx = [self._out_index[n] for n in output_names]
        except KeyError as e:
            raise BraidError(1, f"the model has no output '{e.args[0]}' "
                                f"(outputs: {', '.join(self._out_names)})") from None
        return idx, (max(idx) + 1 if idx else 0)

    def _feed(self, input_feed: Mapping[str, Any]) -> List[np.ndarray]:
        """Fills self._in from input_feed (under the lock); returns the arrays to keep alive."""
        names = self._in_names
        if len(input_feed) != len(names) or not all([k in input_feed for k in names]):
            for k in input_feed:
                if k not in self._in_index:
                    raise BraidError(1, f"the model has no input '{k}' (inputs: {', '.join(names)})")
            missing = [n for n in names if n not in input_feed]
            raise BraidError(1, f"input{'s' if len(missing) > 1 else ''} missing from the feed: "
                                f"{', '.join(missing)}")
        keep = []
        ins = self._in
        last = self._in_last
        for i, name in enumerate(names):
            a = input_feed[name]
            want = self._inputs[i]._dtype
            if want & (SEQUENCE | OPTIONAL):  # a sequence (a list of arrays) or an optional (None when empty)
                last[i] = None
                keep.append(self._feed_container(name, ins[i], a, want))
                continue
            if type(a) is not np.ndarray or not a.flags.c_contiguous:
                a = np.asarray(a, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
            seen = last[i]
            if seen is not None and seen[0] is a.dtype and seen[1] == a.shape:
                # the same dtype and shape as the last run: only the address changes
                try:
                    ins[i].data = _addressof(_from_buffer(a))
                except (TypeError, ValueError, BufferError):
                    ins[i].data = a.ctypes.data
                keep.append(a)
                continue
            last[i] = None
            kept = self._feed_tensor(name, ins[i], a, self._inputs[i]._dtype)
            keep.append(kept)  # one entry per input: len(keep) is the input count
            if kept is a:  # not converted (strings, signed sub-byte ints are): the next run may reuse it
                last[i] = (a.dtype, a.shape)
        return keep

    def _feed_container(self, name: str, t: Any, v: Any, want: int) -> Any:
        """Fills braid_tensor t with sequence or optional input v (declared
        type want); returns what must stay alive during the run."""
        if want & OPTIONAL:
            if v is None:  # empty
                t.dtype, t.rank, t.data = 0, 0, None
                return None
            want &= ~OPTIONAL
            if not want & SEQUENCE:
                return self._feed_tensor(name, t, v, want)
        if isinstance(v, np.ndarray) or not isinstance(v, (list, tuple)):
            raise BraidError(7, f"input '{name}': a {type_string(want)} is given as a list of arrays, "
                                f"not {type(v).__name__}")
        items = (Tensor * max(len(v), 1))()
        keep = [items]
        for k, a in enumerate(v):
            keep.append(self._feed_tensor(f"{name}[{k}]", items[k], a, want & 0xff))
        t.dtype, t.rank, t.data = want, 1, ctypes.addressof(items)
        t.dims[0] = len(v)
        return keep

    def _feed_tensor(self, name: str, t: Any, a: Any, want: int) -> Any:
        """Fills braid_tensor t with array a (an input, an element of a sequence
        or an optional's tensor); returns what keeps its data alive: a itself
        when braid reads it as it is."""
        a = np.asarray(a, order="C")
        code = FROM_NUMPY.get(a.dtype)
        if code is None and a.dtype.kind in "USO" and want == _STRING:
            a, ptrs = _strings_in(name, a)
            code = _STRING
        if code is None:
            raise BraidError(7, f"input '{name}': numpy dtype {a.dtype} has no braid equivalent "
                                f"(the model wants {type_string(want)})")
        if code in _SIGNED_SUBBYTE:
            a = _sign_extend(a, _SIGNED_SUBBYTE[code])
        if a.ndim > MAX_RANK:
            raise BraidError(11, f"input '{name}': rank {a.ndim} is over braid's {MAX_RANK}")
        t.dtype, t.rank = code, a.ndim
        t.dims[:a.ndim] = a.shape
        if code == _STRING:
            t.data = ctypes.addressof(ptrs)
            return (a, ptrs)
        try:  # the buffer protocol: several times cheaper than a.ctypes.data
            t.data = _addressof(_from_buffer(a))
        except (TypeError, ValueError, BufferError):  # read-only, or a dtype numpy cannot export
            t.data = a.ctypes.data
        return a

    def _out_value(self, i: int, view: bool) -> Any:
        """Output i of the last run as Python holds it: an array, a list of
        arrays (a sequence), or None (an empty optional)."""
        t = self._out[i]
        if t.dtype & SEQUENCE:
            n = t.dims[0]
            items = (Tensor * max(n, 1)).from_address(t.data) if n else []
            return [self._array_of(items[k], f"{self._out_names[i]}[{k}]", False) for k in range(n)]
        if t.dtype == 0 and self._outputs[i]._dtype & OPTIONAL:
            return None
        return self._out_array(i, view)

    def _out_array(self, i: int, view: bool) -> np.ndarray:
        """Output i of the last run: a new array, or (view) a read-only view of
        the session's buffer; string outputs are always a new object array."""
        return self._array_of(self._out[i], self._out_names[i], view)

    def _array_of(self, t: Any, name: str, view: bool) -> np.ndarray:
        code = t.dtype
        if code == _STRING:
            return _strings_out(t)
        dt = TO_NUMPY.get(code)
        if dt is None:
            raise BraidError(7, f"output '{name}': braid dtype "
                                f"{type_string(code)} has no numpy equivalent")
        r = t.rank
        shape = tuple(t.dims[:r]) if r else ()
        nbytes = dt.itemsize
        for d in shape:
            nbytes *= d
        p = t.data
        if nbytes == 0 or not p:
            a = np.empty(shape, dt)
            if view:
                a.flags.writeable = False
            return a
        buf = (_c_char * nbytes).from_address(p)
        if not view:
            a = np.frombuffer(buf, dt).copy()
            return a if r == 1 else a.reshape(shape)
        buf._owner = self  # type: ignore[attr-defined]  # the session outlives the view
        a = np.frombuffer(buf, dt).reshape(shape)
        a.flags.writeable = False
        return a

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
            run_options: Any = None) -> List[np.ndarray]:
        """Runs the model once.

        Args:
            output_names: the outputs wanted, by name, or None for all of them.
            input_feed: {input name: array} for every graph input (numpy arrays,
                or anything np.ascontiguousarray accepts). The dtypes must be
                the model's: braid does not convert.
            run_options: accepted for onnxruntime compatibility, unused.

        Returns:
            The outputs in the order asked, as new numpy arrays the caller owns.

        Raises:
            BraidError: a missing or unknown name, a dtype or shape that does
                not fit, or a failure while running; the session stays usable.
        """
        return self._run(output_names, input_feed, False)

    def run_views(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any]) -> List[np.ndarray]:
        """Like run(), without copying the outputs: the arrays returned are
        read-only views of the session's output buffers, valid until the next
        run on this session (which overwrites them) or until it is closed.
        For one thread that consumes each result before the next run; copy
        (np.array(v)) what must outlive it."""
        return self._run(output_names, input_feed, True)

    def _run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, Any],
             views: bool) -> List[np.ndarray]:
        idx, n = self._select(output_names)
        with self._lock:
            keep = self._feed(input_feed)
            s = self._live()
            sig = None if views or None in self._in_last else (tuple(self._in_last), n)
            shapes = self._out_shapes.get(sig) if sig is not None else None
            if shapes is not None:
                # outputs of known shape: braid writes them straight into new
                # arrays (braid_session_run_into binds them for the run)
                outs = [np.empty(shape, dt) for _, dt, shape in shapes]
                into = self._into
                for i, a in enumerate(outs):
                    t = into[i]
                    t.dtype, t.rank = shapes[i][0], a.ndim
                    t.dims[:a.ndim] = a.shape
                    t.data = a.ctypes.data
                st = self._into_c(s, len(keep), self._in, n, into)
                if not st:
                    return [outs[i] for i in idx]
                self._out_shapes[sig] = None  # not what the last run made: run as below from now on
            st = self._run_c(s, len(keep), self._in, n, self._out)
            if st:
                _check(st, s)
            if sig is not None and sig not in self._out_shapes:
                if len(self._out_shapes) >= 64:  # many input shapes: keep the table small
                    self._out_shapes.clear()
                self._out_shapes[sig] = self._plain_shapes(n)
            return [self._out_value(i, views) for i in idx]

    def _plain_shapes(self, n: int) -> Any:
        """Outputs 0 .. n - 1 of the last run as [(braid dtype, numpy dtype,
        shape)] when each is a plain numeric array, else None."""
        shapes = []
        for i in range(n):
            t = self._out[i]
            dt = TO_NUMPY.get(t.dtype)
            if t.dtype & SEQUENCE or t.dtype == _STRING or dt is None or dt.kind in "OUS":
                return None
            shapes.append((t.dtype, dt, tuple(t.dims[:t.rank])))
        return shapes

    def close(self) -> None:
        """Ends the session now (writes the profile if one was asked for).
        Later calls raise BraidError."""
        with self._lock:
            s, self._session = self._session, ctypes.c_void_p()
            lib.braid_session_destroy(s)
            m, self._model = self._model, ctypes.c_void_p()
            lib.braid_model_destroy(m)

    def end_profiling(self) -> str:
        """Ends the session, which writes the profile, and returns its path ("" when none)."""
        self.close()
        return self._options._profile() or ""

    def __enter__(self) -> "InferenceSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if self._session or self._model:
                lib.braid_session_destroy(self._session)
                lib.braid_model_destroy(self._model)
                self._session = self._model = ctypes.c_void_p()
        except (AttributeError, TypeError):  # half-built, or at interpreter exit
            pass

    def __repr__(self) -> str:
        what = self._model_path or "<bytes>"
        return f"<braid.InferenceSession {what} on {self._providers[0] if self._session else 'closed'}>"
