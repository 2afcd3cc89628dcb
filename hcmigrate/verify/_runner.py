"""Recorder for `hcmigrate verify`: run one Python script and write a trace of its host callbacks.

Executed BY FILE PATH in a fresh interpreter, which may be the legacy reference venv where
hcmigrate is not installed:

    python .../hcmigrate/verify/_runner.py --trace OUT.json [options] -- SCRIPT [ARGS...]

It needs only the standard library, numpy and jax, and imports nothing from hcmigrate.
sys.path[0] (this file's folder) is replaced by the script's folder, as for `python SCRIPT`.

What is recorded (see docs/verify.md for the format):
* every host invocation of a callback registered through
  - legacy / compat `host_callback.id_tap`, `id_print`, `call` (module patched on import),
  - `jax.experimental.io_callback`, `jax.pure_callback`, `jax.debug.callback`, `jax.debug.print`;
  with the callback's identity, the call site that registered it, whether the API keeps
  program order, its arguments as numpy values, its result, and what it printed;
* entry points: the script body (`<script>`) and each call of a top-level function named
  by `--entry` (default `main`). If the script defines `main` but never calls it (no
  `if __name__ == "__main__":` guard), the runner calls `main()` once, with no arguments,
  after the body. Return values are recorded as numpy values.
* stdout written outside callbacks, and the exit status.

With `--pytest`, SCRIPT is the root folder of the code under test and ARGS are pytest
arguments: pytest runs in that folder with `_pytest_plugin.py` (loaded by file path), which
records each test's outcome and attributes host calls to the running test (entry = nodeid).
"""

from __future__ import annotations

import argparse
import ast
import dis
import functools
import importlib.abc
import inspect
import json
import linecache
import os
import sys
import threading
import time
import traceback
import types

TRACE_VERSION = 1
MAX_ELEMENTS = 100_000  # larger arrays are recorded as a summary (sha256 + statistics)

HOST_CALLBACK_MODULES = (
    "jax.experimental.host_callback",
    "compat.host_callback",
    "hcmigrate_compat.host_callback",
)

_HERE = os.path.abspath(__file__)


class _State:
    def __init__(self):
        self.lock = threading.RLock()
        self.events: list[dict] = []
        self.registrations: list[dict] = []
        self.entries: list[dict] = []
        self.entry_stack: list[str] = ["<script>"]
        self.stdout_parts: list[str] = []
        self.error_at: str | None = None  # where the script raised (file:line)
        self.skip_dirs: tuple[str, ...] = ()
        self.entry_names: tuple[str, ...] = ("main",)
        self.entry_calls: dict[str, int] = {}
        self.patched: list[str] = []
        self.jax_version: str | None = None
        self.side = ""  # the side this process records: "reference", "candidate", ...


STATE = _State()
_tls = threading.local()


class _Stream:
    """The trace, written as the run goes: one JSON object per line, flushed at once, so what
    finished (every completed test) survives a crash or a kill. The parent process reads the
    lines back into one trace (hcmigrate/verify/stream.py)."""

    def __init__(self, path: str):
        self.lock = threading.Lock()
        self.fh = open(path, "a", encoding="utf-8")
        self.events_done = 0
        self.registrations_done = 0

    def write(self, record: dict) -> None:
        line = json.dumps(record, default=repr)
        with self.lock:
            if self.fh.closed:  # (a late record after `end`, e.g. from an atexit hook)
                return
            self.fh.write(line + "\n")
            self.fh.flush()

    def close(self) -> None:
        """After `end`: nothing is left open when the program exits (a suite run with
        ResourceWarnings as errors, or `python -X dev`, would report the file)."""
        with self.lock:
            self.fh.close()

    def take(self) -> tuple[list, list]:
        """The events and registrations recorded since the last take."""
        with STATE.lock:
            events = STATE.events[self.events_done :]
            registrations = STATE.registrations[self.registrations_done :]
            self.events_done = len(STATE.events)
            self.registrations_done = len(STATE.registrations)
        return events, registrations


STREAM: _Stream | None = None


def open_stream(path: str, side: str, **header) -> _Stream:
    global STREAM
    STATE.side = side
    STREAM = _Stream(path)
    STREAM.write(
        {
            "t": "start",
            "version": TRACE_VERSION,
            "side": side,
            "pid": os.getpid(),
            "python": sys.executable,
            **header,
        }
    )
    return STREAM


# ---------------------------------------------------------------------------------------
# stdout: one tee; writes made while a callback runs (on that thread) belong to the event.


class _Tee:
    def __init__(self, real):
        self._real = real

    def write(self, s):
        capture = getattr(_tls, "capture", None)
        if capture is not None:
            capture.append(s)
        else:
            with STATE.lock:
                STATE.stdout_parts.append(s)
        return self._real.write(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        return self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


# ---------------------------------------------------------------------------------------
# Values -> JSON-able records (numpy values; jax.Array is converted with np.asarray).


def _has(x, name: str) -> bool:
    """hasattr that no user object can break: a `__getattr__` that raises anything but
    AttributeError (EvoX's `State` raises KeyError) means "no", never an error in the program
    being recorded (the recorder must not change what the program does)."""
    try:
        getattr(x, name)
    except Exception:
        return False
    return True


def encode(x, depth: int = 0):
    """`x` as a JSON-able record. Never raises: a value that cannot be read is recorded as an
    object (its type and why), and the program goes on as it would without the recorder."""
    try:
        return _encode(x, depth)
    except Exception as e:
        return {"k": "object", "t": type(x).__qualname__, "repr": f"<{type(e).__name__}>"}


def _encode(x, depth: int = 0):
    np = sys.modules.get("numpy")  # a value can only be a numpy one if the program imported it

    if depth > 50:
        return {"k": "object", "t": type(x).__qualname__, "repr": "<too deep>"}
    if x is None:
        return {"k": "none"}
    if isinstance(x, bool):
        return {"k": "py", "t": "bool", "v": x}
    if isinstance(x, int):
        return {"k": "py", "t": "int", "v": x}
    if isinstance(x, float):
        return {"k": "py", "t": "float", "v": x}
    if isinstance(x, complex):
        return {"k": "py", "t": "complex", "v": [x.real, x.imag]}
    if isinstance(x, str):
        return {"k": "str", "v": x}
    if np is not None and (isinstance(x, (np.ndarray, np.generic)) or _is_jax_array(x)):
        return _encode_array(np.asarray(x))
    if isinstance(x, tuple) and hasattr(type(x), "_fields"):
        return {
            "k": "namedtuple",
            "t": type(x).__qualname__,
            "fields": list(type(x)._fields),
            "items": [encode(v, depth + 1) for v in x],
        }
    if isinstance(x, tuple):
        return {"k": "tuple", "items": [encode(v, depth + 1) for v in x]}
    if isinstance(x, list):
        return {"k": "list", "items": [encode(v, depth + 1) for v in x]}
    if isinstance(x, dict):
        try:
            keys = sorted(x)
        except TypeError:
            keys = sorted(x, key=repr)
        return {
            "k": "dict",
            "items": [
                [k if isinstance(k, str) else repr(k), encode(x[k], depth + 1)] for k in keys
            ],
        }
    tname = type(x).__module__ + "." + type(x).__qualname__
    if "Device" in type(x).__name__:
        return {"k": "device", "v": str(x)}
    try:
        jax = sys.modules["jax"]
        leaves, treedef = jax.tree_util.tree_flatten(x)
        if not (len(leaves) == 1 and leaves[0] is x):
            return {"k": "pytree", "t": tname, "items": [encode(v, depth + 1) for v in leaves]}
    except Exception:
        pass
    if np is not None and _has(x, "__array__") and _has(x, "shape") and _has(x, "dtype"):
        try:
            return _encode_array(np.asarray(x))
        except Exception:
            pass
    try:
        text = repr(x)
    except Exception:
        text = "<unrepresentable>"
    return {"k": "object", "t": tname, "repr": text[:300]}


def _is_jax_array(x) -> bool:
    mod = type(x).__module__ or ""
    return (
        (mod.startswith("jax") or mod.startswith("jaxlib"))
        and _has(x, "shape")
        and _has(x, "dtype")
    )


def _encode_array(a):
    import hashlib

    import numpy as np

    rec = {"k": "array", "dtype": str(a.dtype), "shape": list(a.shape)}
    kind = a.dtype.kind
    if kind not in "biufc":
        if a.dtype.kind in "V" or a.dtype.name in ("bfloat16",) or "float" in a.dtype.name:
            try:
                a = a.astype(np.float64)
                kind = "f"
            except Exception:
                pass
    if kind not in "biufc":
        rec["repr"] = np.array2string(a, threshold=50)[:2000]
        return rec
    if a.size > MAX_ELEMENTS:
        f = a.astype(np.complex128 if kind == "c" else np.float64)
        rec["summary"] = {
            "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
            "sum": [float(np.real(np.nansum(f))), float(np.imag(np.nansum(f)))],
            "min": float(np.nanmin(np.real(f))) if f.size else 0.0,
            "max": float(np.nanmax(np.real(f))) if f.size else 0.0,
            "nan": int(np.isnan(f).sum()),
        }
        return rec
    if kind == "c":
        rec["data"] = [np.real(a).tolist(), np.imag(a).tolist()]
    else:
        rec["data"] = a.tolist()
    return rec


def encode_spec(s, depth: int = 0):
    """A result-shape description (legacy result_shape / modern result_shape_dtypes). Never
    raises: what cannot be read is recorded as an object (its type and why)."""
    try:
        return _encode_spec(s, depth)
    except Exception as e:
        return {"k": "object", "t": type(s).__qualname__, "repr": f"<{type(e).__name__}>"}


def _encode_spec(s, depth: int = 0):
    import numpy as np

    if s is None:
        return {"k": "none"}
    if isinstance(s, (tuple, list)) and not hasattr(type(s), "_fields"):
        return {"k": "tuple", "items": [encode_spec(v, depth + 1) for v in s]}
    if isinstance(s, tuple):
        return {
            "k": "namedtuple",
            "t": type(s).__qualname__,
            "items": [encode_spec(v, depth + 1) for v in s],
        }
    if isinstance(s, dict):
        return {
            "k": "dict",
            "items": [[str(k), encode_spec(s[k], depth + 1)] for k in sorted(s, key=str)],
        }
    if _has(s, "shape") and _has(s, "dtype"):
        return {
            "k": "spec",
            "shape": [int(d) for d in s.shape],
            "dtype": _canonical(np.dtype(s.dtype)),
        }
    if isinstance(s, (bool, int, float, complex, np.generic)):
        return {"k": "spec", "shape": [], "dtype": _canonical(np.asarray(s).dtype)}
    try:
        import jax

        leaves, _ = jax.tree_util.tree_flatten(s)
        if not (len(leaves) == 1 and leaves[0] is s):
            return {"k": "tuple", "items": [encode_spec(v, depth + 1) for v in leaves]}
    except Exception:
        pass
    return {"k": "object", "t": type(s).__qualname__, "repr": repr(s)[:200]}


def _canonical(dt) -> str:
    try:
        import jax

        return str(jax.dtypes.canonicalize_dtype(dt))
    except Exception:
        return str(dt)


def _spec_is_empty(spec) -> bool:
    if spec["k"] == "none":
        return True
    if spec["k"] in ("tuple", "namedtuple"):
        return all(_spec_is_empty(i) for i in spec["items"])
    if spec["k"] == "dict":
        return all(_spec_is_empty(v) for _, v in spec["items"])
    return False


# ---------------------------------------------------------------------------------------
# Callback identity and call sites.


def _referenced_names(code, out: set, depth: int = 0) -> set:
    out.update(code.co_names)
    out.update(code.co_freevars)
    if depth < 5:
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                _referenced_names(c, out, depth + 1)
    return out


def _inline_numpy_wrapped(f):
    """The function an inline numpy wrapper calls
    (`lambda *args: fn(*jax.tree.map(np.asarray, args))`, as a hand migration writes it),
    else None."""
    code = getattr(f, "__code__", None)
    if (
        code is None
        or getattr(f, "__name__", None) != "<lambda>"
        or code.co_argcount
        or not code.co_flags & inspect.CO_VARARGS
        or not {"tree", "map", "asarray"} <= set(code.co_names)
    ):
        return None
    loads = [
        i
        for i in dis.get_instructions(code)
        if i.opname not in ("RESUME", "COPY_FREE_VARS", "PUSH_NULL", "NOP")
    ]
    if len(loads) < 2:
        return None
    first = loads[0]
    if first.opname == "LOAD_DEREF" and f.__closure__:  # (`fn` a local name: a closure cell)
        inner = f.__closure__[code.co_freevars.index(first.argval)].cell_contents
    elif first.opname == "LOAD_GLOBAL":
        inner = f.__globals__.get(first.argval)
    else:
        return None
    for instruction in loads[1:]:  # (`obj.method`: the method it reaches)
        if instruction.opname not in ("LOAD_ATTR", "LOAD_METHOD"):
            break
        inner = getattr(inner, instruction.argval, None)
    return inner if callable(inner) else None


def describe_callable(f) -> dict:
    wrapped_in = []
    seen = 0
    while seen < 10:
        seen += 1
        if isinstance(f, functools.partial):
            wrapped_in.append("partial")
            f = f.func
            continue
        # (`__wrapped__`: functools.wraps, e.g. the codemod's numpy-arguments helper)
        inner = (
            getattr(f, "_hcmigrate_callback", None)
            or getattr(f, "__wrapped__", None)
            or _inline_numpy_wrapped(f)
        )
        if inner is not None:
            f = inner
            continue
        break
    func = getattr(f, "__func__", f)  # bound method -> function
    code = getattr(func, "__code__", None)
    qualname = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    if qualname is None:  # a callable object
        qualname = type(f).__qualname__ + ".__call__"
        call = getattr(type(f), "__call__", None)
        code = getattr(call, "__code__", None)
    module = getattr(func, "__module__", None) or ""
    if not module and type(func).__name__ == "ufunc":
        module = "numpy"
    info = {
        "name": f"{module}.{qualname}" if module else qualname,
        "simple": (getattr(func, "__name__", None) or qualname.rsplit(".", 1)[-1]),
        "lambda": "<lambda>" in qualname,
    }
    if wrapped_in:
        info["wrapped"] = wrapped_in
    if code is not None:
        info["file"] = code.co_filename
        info["line"] = code.co_firstlineno
        if info["lambda"]:
            info["refs"] = sorted(_referenced_names(code, set()))
    return info


STACK_DEPTH = 6  # user frames kept per registration (the site and its callers)


def _is_user_file(filename: str) -> bool:
    return (
        filename != _HERE
        and not filename.startswith(STATE.skip_dirs)
        and not filename.startswith("<frozen")
    )


def raised_at(tb) -> str | None:
    """`file:line` of the innermost frame of the program's own code in a traceback (not JAX's,
    the standard library's, pytest's or the recorder's): where the program raised, for the
    report's first line."""
    where = None
    own = os.path.dirname(_HERE) + os.sep
    while tb is not None:
        fn = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if _is_user_file(fn) and not _is_library_file(fn) and not fn.startswith(own):
            where = f"{fn}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where


def _call_site() -> dict | None:
    """The innermost user frame that registered a callback, with the user frames around it
    (`stack`, innermost first): a wrapper or helper the codemod wrote is one of them, and the
    comparison maps them back to the legacy call site they came from."""
    frame = sys._getframe(2)
    site = None
    stack = []
    while frame is not None and len(stack) < STACK_DEPTH:
        fn = os.path.abspath(frame.f_code.co_filename)
        if _is_user_file(fn):
            line = frame.f_lineno
            if site is None:
                site = {"file": fn, "line": line, "code": linecache.getline(fn, line).strip()}
            stack.append([fn, line])
        frame = frame.f_back
    if site is not None and len(stack) > 1:
        site["stack"] = stack
    return site


# The user function a host call finally reaches. Legacy calls `tap_func(arg, transforms)`
# directly; a migration may reach the same function through a lambda, a factory call, a helper
# or a partial. While the callback runs, the user functions it enters (a few levels deep) are
# noted (`reached`), and among them those that receive the very objects the host passed in
# (`receivers`): that is where the call landed, whatever wrapped it.
# `host` is the user function the call finally reached, following the calls that pass the
# host's data on from the callback through the wrappers a migration writes (the codemod's
# numpy-arguments helpers, lambdas): a lambda that hands the data to another user function is
# a wrapper, the first named function (or a lambda that passes nothing on) is the host function.
# The wrappers earlier hcmigrate versions wrote around host functions (module helpers): they
# hand the host function numpy copies, so the call lands where they lead, never in them.
# (This file runs in other interpreters: it cannot import hcmigrate.)
_CODEMOD_HELPERS = frozenset(
    f"{helper}.<locals>.{inner}"
    for helper in ("_with_numpy_args", "_tap_with_numpy_args")
    for inner in ("call", "<lambda>", "numpy_copy", "numpy_array")
)


def _converts(code) -> bool:
    """Does the function hand on numpy copies of what it got, as the codemod writes it now
    (`lambda x: show(jax.tree.map(np.array, x))`, or a def `tap_show(x)` with that body)? Then
    what it passes on is the host's data, and the call lands where it leads."""
    names = code.co_names
    return "array" in names and ("tree_map" in names or ("tree" in names and "map" in names))


REACH_DEPTH = 4
REACH_COUNT = 8


def _data_ids(args, kwargs) -> set:
    """ids of the values the host passed (not singletons such as `()` or None, which any
    function may receive)."""
    out = set()
    for value in (*args, *kwargs.values()):
        if value is None or isinstance(value, (bool, int, float, str)):
            continue
        if isinstance(value, tuple) and not value:
            continue
        out.add(id(value))
    return out


def _arguments(frame) -> list:
    """The values of a frame's parameters (a `*args` tuple spread out)."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    values = []
    for name in code.co_varnames[:n]:
        value = frame.f_locals.get(name)
        values.extend(value if isinstance(value, tuple) else (value,))
    return values


def _receives(frame, data: set) -> bool:
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    local = frame.f_locals
    for name in code.co_varnames[:n]:
        value = local.get(name)
        if id(value) in data:
            return True
        if isinstance(value, tuple) and any(id(v) in data for v in value):
            return True
        if isinstance(value, dict) and any(id(v) in data for v in value.values()):
            return True
    return False


_library_dirs: tuple[str, ...] | None = None


def _is_library_file(filename: str) -> bool:
    """The standard library or an installed distribution: not the program's own code."""
    global _library_dirs
    if _library_dirs is None:
        import sysconfig

        dirs = {
            sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")
        }
        dirs |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
        _library_dirs = tuple(os.path.abspath(d) + os.sep for d in dirs if d)
    return filename.startswith(_library_dirs)


def _qualname(code) -> str:
    return getattr(code, "co_qualname", code.co_name)  # (co_qualname: Python 3.11+)


def _follow(frame, tip: list, root, data: set) -> None:
    """Follow the host's data one call further: into the callback's own frame (called from
    `root`), and from a codemod helper or a lambda into the user function it hands the data
    to. A named function is where the call landed: its own calls are not followed."""
    filename = os.path.abspath(frame.f_code.co_filename)
    if not _is_user_file(filename) or _is_library_file(filename):
        return
    current = tip[0]
    if current is None:
        if frame.f_back is root:
            tip[0] = frame
        return
    name = _qualname(current.f_code)
    if name in _CODEMOD_HELPERS or (
        ("<lambda>" in name or _converts(current.f_code)) and _receives(frame, data)
    ):
        tip[0] = frame


def _describe_frame(frame) -> dict:
    """The function running in `frame`, described as `describe_callable` describes one."""
    code = frame.f_code
    qualname = _qualname(code)
    module = frame.f_globals.get("__name__", "") or ""
    info = {
        "name": f"{module}.{qualname}" if module else qualname,
        "simple": code.co_name,
        "lambda": "<lambda>" in qualname,
        "file": os.path.abspath(code.co_filename),
        "line": code.co_firstlineno,
    }
    if info["lambda"]:
        info["refs"] = sorted(_referenced_names(code, set()))
    return info


def _call_noting_reach(fn, args, kwargs, ev: dict):
    """fn(*args, **kwargs), noting in `ev` the user functions it reaches. Chains to a trace
    function already set (a debugger, coverage)."""
    previous = sys.gettrace()
    root = sys._getframe()
    data = _data_ids(args, kwargs)
    reached: list[str] = []
    receivers: list[str] = []
    tip = [None]  # the frame the host's data has been followed to

    def tracer(frame, event, arg):
        if event == "call":
            caller = frame.f_back
            if caller is not None and (
                _qualname(caller.f_code) in _CODEMOD_HELPERS
                or (caller is tip[0] and _converts(caller.f_code))
            ):
                # what the wrapper hands on (numpy copies of the host's values) is the data now
                data.update(_data_ids(_arguments(frame), {}))
            if caller is root or caller is tip[0]:
                _follow(frame, tip, root, data)
        if event == "call" and len(reached) < REACH_COUNT:
            up, depth = frame.f_back, 1
            while up is not None and up is not root and depth <= REACH_DEPTH:
                up, depth = up.f_back, depth + 1
            code = frame.f_code
            filename = os.path.abspath(code.co_filename)
            if (
                up is root
                and code.co_qualname not in _CODEMOD_HELPERS
                and _is_user_file(filename)
                and not _is_library_file(filename)
            ):
                name = f"{frame.f_globals.get('__name__', '')}.{code.co_qualname}"
                reached.append(name)
                if "<lambda>" not in code.co_qualname and data and _receives(frame, data):
                    receivers.append(name)
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(tracer)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.settrace(previous)
        if reached:
            ev["reached"] = reached
        if receivers:
            ev["receivers"] = receivers
        host = tip[0]
        if host is not None and _qualname(host.f_code) not in _CODEMOD_HELPERS:
            ev["host"] = _describe_frame(host)


def _current_entry() -> str:
    with STATE.lock:
        return STATE.entry_stack[-1]


# ---------------------------------------------------------------------------------------
# Recording wrappers.


def _suppressed() -> bool:
    return getattr(_tls, "suppress", 0) > 0


class _Suppress:
    def __enter__(self):
        _tls.suppress = getattr(_tls, "suppress", 0) + 1

    def __exit__(self, *exc):
        _tls.suppress -= 1


def _register(api, cls, ordered, callback, spec, site) -> dict:
    reg = {
        "api": api,
        "class": cls,
        "ordered": ordered,
        "callback": describe_callable(callback) if callback is not None else None,
        "site": site,
        "entry": _current_entry(),
    }
    if spec is not None:
        reg["spec"] = spec
    with STATE.lock:
        reg["id"] = len(STATE.registrations)
        STATE.registrations.append(reg)
    return reg


def _make_recorder(fn, reg: dict, *, mode: str):
    """mode: 'tap' (legacy id_tap: fn(arg, transforms[, device=])), 'call' (legacy call:
    fn(arg[, device=])), 'args' (modern: fn(*args, **kwargs))."""

    def recorded(*args, **kwargs):
        ev = {
            "api": reg["api"],
            "class": reg["class"],
            "ordered": reg["ordered"],
            "callback": reg["callback"],
            "site": reg["site"],
            "reg": reg["id"],
            "entry": _current_entry(),
        }
        if "spec" in reg:
            ev["spec"] = reg["spec"]
        try:
            if mode in ("tap", "call"):
                ev["args"] = [encode(args[0])] if args else []
                if mode == "tap" and len(args) > 1:
                    ev["transforms"] = repr(args[1])
                if "device" in kwargs:
                    ev["device"] = str(kwargs["device"])
            else:
                ev["args"] = [encode(a) for a in args]
                if kwargs:
                    ev["kwargs"] = {k: encode(v) for k, v in sorted(kwargs.items())}
        except Exception as e:  # never let recording break the program
            ev["args"] = [{"k": "object", "t": "unrecordable", "repr": repr(e)}]
        with STATE.lock:
            ev["i"] = len(STATE.events)
            STATE.events.append(ev)
        captured: list[str] = []
        previous = getattr(_tls, "capture", None)
        _tls.capture = captured
        try:
            result = _call_noting_reach(fn, args, kwargs, ev)
        except BaseException as e:
            ev["raised"] = f"{type(e).__name__}: {e}"[:500]
            ev["raised_at"] = raised_at(e.__traceback__)
            raise
        finally:
            _tls.capture = previous
            ev["stdout"] = "".join(captured)
        if reg["class"] == "value":
            try:
                ev["result"] = encode(result)
            except Exception as e:
                ev["result"] = {"k": "object", "t": "unrecordable", "repr": repr(e)}
        return result

    recorded._hcmigrate_callback = fn
    return recorded


def _is_print_tap(tap_func) -> bool:
    f = tap_func
    while isinstance(f, functools.partial):
        f = f.func
    return getattr(f, "__name__", "") == "_print_tap_func"


def _print_header(tap_func) -> dict:
    kw = {}
    if isinstance(tap_func, functools.partial):
        kw = {k: v for k, v in tap_func.keywords.items() if k not in ("output_stream", "threshold")}
    return {k: repr(v) for k, v in sorted(kw.items())}


def patch_host_callback_module(mod, label: str) -> None:
    """Patch a legacy (jax 0.4.x) or compat host_callback module in place.

    Legacy 0.4.26+ serves `id_tap`, `id_print`, `call`, `barrier_wait` through a module
    `__getattr__` that warns (DeprecationWarning) and returns `_deprecated_*`: the recording
    wrappers go into that table and into the `_deprecated_*` globals, never in as public
    attributes, so every use still warns exactly as in a plain legacy run (a suite with
    `filterwarnings = error` fails the same way)."""
    if getattr(mod, "_hcmigrate_patched", False):
        return
    d = mod.__dict__
    deprecations = d.get("_deprecations") if isinstance(d.get("_deprecations"), dict) else None
    orig_tap = d.get("_deprecated_id_tap") or d.get("id_tap")
    orig_call = d.get("_deprecated_call") or d.get("call")
    prefix = "compat." if "compat" in label else ""

    def install(public: str, wrapper) -> None:
        private = "_deprecated_" + public
        if private in d:
            d[private] = wrapper
        if deprecations is not None and public in deprecations:
            message, _ = deprecations[public]
            deprecations[public] = (message, wrapper)
        elif public in d or private not in d:
            d[public] = wrapper

    if orig_tap is not None:

        def id_tap(tap_func, arg=None, *a, **kw):
            if _suppressed():
                return orig_tap(tap_func, arg, *a, **kw)
            is_print = _is_print_tap(tap_func)
            api = prefix + ("id_print" if is_print else "id_tap")
            reg = _register(
                api,
                "print" if is_print else "effect",
                True,
                None if is_print else tap_func,
                None,
                _call_site(),
            )
            if is_print:
                reg["header"] = _print_header(tap_func)
            with _Suppress():
                return orig_tap(_make_recorder(tap_func, reg, mode="tap"), arg, *a, **kw)

        id_tap.__wrapped__ = orig_tap
        install("id_tap", id_tap)  # legacy id_print calls the `_deprecated_id_tap` global

    if orig_call is not None:

        def call(callback_func, arg=None, *a, **kw):
            if _suppressed():
                return orig_call(callback_func, arg, *a, **kw)
            shape = kw.get("result_shape", kw.get("result_shape_dtypes"))
            spec = encode_spec(shape)
            cls = "effect" if _spec_is_empty(spec) else "value"
            reg = _register(prefix + "call", cls, True, callback_func, spec, _call_site())
            with _Suppress():
                return orig_call(_make_recorder(callback_func, reg, mode="call"), arg, *a, **kw)

        call.__wrapped__ = orig_call
        install("call", call)
    # barrier_wait taps an internal callback of its own: not a user event.
    orig_barrier = d.get("_deprecated_barrier_wait") or d.get("barrier_wait")
    if orig_barrier is not None:
        install("barrier_wait", _suppressing(orig_barrier))
    mod._hcmigrate_patched = True
    STATE.patched.append(label)


def _suppressing(fn):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        with _Suppress():
            return fn(*a, **kw)

    return wrapper


def patch_modern_jax() -> None:
    import jax
    import jax.debug
    import jax.experimental

    orig_io = getattr(jax.experimental, "io_callback", None)
    orig_pure = getattr(jax, "pure_callback", None)
    orig_dcb = getattr(jax.debug, "callback", None)
    orig_dprint = getattr(jax.debug, "print", None)

    if orig_io is not None:

        def io_callback(callback, result_shape_dtypes, *args, **kw):
            if _suppressed():
                return orig_io(callback, result_shape_dtypes, *args, **kw)
            spec = encode_spec(result_shape_dtypes)
            cls = "effect" if _spec_is_empty(spec) else "value"
            reg = _register(
                "io_callback", cls, bool(kw.get("ordered", False)), callback, spec, _call_site()
            )
            return orig_io(
                _make_recorder(callback, reg, mode="args"), result_shape_dtypes, *args, **kw
            )

        io_callback.__wrapped__ = orig_io
        jax.experimental.io_callback = io_callback

    if orig_pure is not None:

        def pure_callback(callback, result_shape_dtypes, *args, **kw):
            if _suppressed():
                return orig_pure(callback, result_shape_dtypes, *args, **kw)
            spec = encode_spec(result_shape_dtypes)
            cls = "effect" if _spec_is_empty(spec) else "value"
            reg = _register("pure_callback", cls, False, callback, spec, _call_site())
            return orig_pure(
                _make_recorder(callback, reg, mode="args"), result_shape_dtypes, *args, **kw
            )

        pure_callback.__wrapped__ = orig_pure
        jax.pure_callback = pure_callback

    if orig_dcb is not None:

        def debug_callback(callback=None, *args, **kw):
            if callback is None:  # two-call form: jax.debug.callback(ordered=True)(f, *args)
                options = dict(kw)
                return lambda f, *a, **k: debug_callback(f, *a, **options, **k)
            if _suppressed():
                return orig_dcb(callback, *args, **kw)
            reg = _register(
                "jax.debug.callback",
                "effect",
                bool(kw.get("ordered", False)),
                callback,
                None,
                _call_site(),
            )
            return orig_dcb(_make_recorder(callback, reg, mode="args"), *args, **kw)

        debug_callback.__wrapped__ = orig_dcb
        jax.debug.callback = debug_callback

    if orig_dprint is not None:
        _patch_debug_print(jax, orig_dprint)


class _TaggedFormat(str):
    """A format string carrying the id of its registration to the host-side print."""

    _hcmigrate_reg: int = -1


def _patch_debug_print(jax, orig_dprint) -> None:
    import inspect

    try:
        import jax._src.debugging as dbg
    except Exception:
        return
    orig_fmt = getattr(dbg, "_format_print_callback", None)
    if orig_fmt is None:
        return
    # Positional parameters before *args: (fmt,) on 0.4.30; (fmt, np_printoptions,
    # has_placeholders, logging_record) on 0.10.
    params = list(inspect.signature(orig_fmt).parameters.values())
    n_fixed = 0
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n_fixed += 1
        else:
            break

    def debug_print(fmt=None, *args, **kw):
        if fmt is None:
            options = dict(kw)
            return lambda f, *a, **k: debug_print(f, *a, **options, **k)
        if _suppressed() or not isinstance(fmt, str):
            return orig_dprint(fmt, *args, **kw)
        reg = _register(
            "jax.debug.print", "print", bool(kw.get("ordered", False)), None, None, _call_site()
        )
        reg["format"] = str(fmt)
        tagged = _TaggedFormat(fmt)
        tagged._hcmigrate_reg = reg["id"]
        return orig_dprint(tagged, *args, **kw)

    def format_print_callback(*a, **kw):
        fmt = a[0] if a else ""
        reg_id = getattr(fmt, "_hcmigrate_reg", -1)
        with STATE.lock:
            reg = STATE.registrations[reg_id] if 0 <= reg_id < len(STATE.registrations) else None
        if reg is None:
            reg = _register("jax.debug.print", "print", False, None, None, None)
            reg["format"] = str(fmt)
        recorder = _make_recorder(
            lambda *values, **kwvalues: orig_fmt(*a[:n_fixed], *values, **kwvalues),
            reg,
            mode="args",
        )
        return recorder(*a[n_fixed:], **kw)

    debug_print.__wrapped__ = orig_dprint
    jax.debug.print = debug_print
    dbg._format_print_callback = format_print_callback


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs an action right after a module is imported: jax (the modern callback APIs are
    patched and the compat runtime installed when asked) and the host_callback modules (legacy
    or compat). Nothing is imported before the program imports it itself, so a program that
    sets `JAX_ENABLE_X64` or `XLA_FLAGS` before its `import jax` runs as it does plainly."""

    def __init__(self, actions: dict):
        self.actions = actions

    def find_spec(self, name, path, target=None):
        action = self.actions.get(name)
        if action is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            loader = spec.loader
            if (
                loader is not None
                and hasattr(loader, "exec_module")
                and hasattr(loader, "__dict__")
            ):
                original_exec = loader.exec_module

                def exec_module(module, _exec=original_exec):
                    _exec(module)
                    action(module)

                loader.exec_module = exec_module  # this spec's own loader: nothing else changes
            return spec
        return None


def _on_jax_imported(jax, options) -> None:
    """The program imported jax: note it, install the compat runtime if asked, patch the
    modern callback APIs."""
    skip = [os.path.dirname(os.path.abspath(jax.__file__)) + os.sep]
    jaxlib = sys.modules.get("jaxlib")
    if jaxlib is not None and getattr(jaxlib, "__file__", None):
        skip.append(os.path.dirname(os.path.abspath(jaxlib.__file__)) + os.sep)
    skip.append(os.path.dirname(functools.__file__) + os.sep + "functools.py")
    STATE.skip_dirs = tuple(skip)
    STATE.jax_version = getattr(jax, "__version__", None)
    if options.compat_dir:
        _make_compat_importable(options.compat_dir, force=options.install_compat)
    if options.install_compat:
        import compat

        compat.install()
    import importlib.util

    for name in ("compat", "hcmigrate_compat"):
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            spec = None
        if spec is not None and spec.origin:
            STATE.skip_dirs += (os.path.dirname(os.path.abspath(spec.origin)) + os.sep,)
    patch_modern_jax()
    patch_already_imported()
    if STREAM is not None:
        STREAM.write({"t": "jax", "version": STATE.jax_version})


def install_import_hooks(options) -> None:
    actions = {
        name: (lambda m: patch_host_callback_module(m, m.__name__))
        for name in HOST_CALLBACK_MODULES
    }
    actions["jax"] = lambda m: _on_jax_imported(m, options)
    sys.meta_path.insert(0, _PatchOnImport(actions))
    if "jax" in sys.modules:  # imported at start-up (a .pth file, sitecustomize)
        _on_jax_imported(sys.modules["jax"], options)


def patch_already_imported() -> None:
    for name in HOST_CALLBACK_MODULES:
        mod = sys.modules.get(name)
        if mod is not None:
            patch_host_callback_module(mod, name)


# ---------------------------------------------------------------------------------------
# Entry points.


def _barrier(value=None) -> None:
    jax = sys.modules.get("jax")
    if jax is None:  # the program never imported jax: nothing can be pending
        return
    try:
        if value is not None:
            jax.block_until_ready(value)
        jax.effects_barrier()
    except Exception:
        pass


def _entry_wrapper(name, fn):
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        with STATE.lock:
            n = STATE.entry_calls.get(name, 0) + 1
            STATE.entry_calls[name] = n
            label = name if n == 1 else f"{name}#{n}"
            STATE.entry_stack.append(label)
        rec = {"name": label, "function": name}
        try:
            result = fn(*args, **kwargs)
            _barrier(result)
            rec["result"] = encode(result)
            return result
        except BaseException as e:
            _barrier()
            rec["raised"] = f"{type(e).__name__}: {e}"[:500]
            raise
        finally:
            with STATE.lock:
                STATE.entry_stack.pop()
                STATE.entries.append(rec)

    entry._hcmigrate_entry = True
    return entry


def _compile_script(path: str, source: str, entry_names):
    tree = ast.parse(source, filename=path)
    body = []
    for node in tree.body:
        body.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in entry_names:
            wrap = ast.parse(f"{node.name} = __hcmigrate_entry__({node.name!r}, {node.name})").body[
                0
            ]
            for n in ast.walk(wrap):
                ast.copy_location(n, node)
                if hasattr(n, "end_lineno"):
                    n.end_lineno = node.lineno
                    n.end_col_offset = node.col_offset
            body.append(wrap)
    tree.body = body
    return compile(tree, path, "exec")


def _exit_code(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def run_script(
    script: str, script_args: list[str], *, with_file: bool = True
) -> tuple[int, str | None]:
    """Run the script as __main__, as `python SCRIPT ARGS` does. Returns (exit status, error
    text or None)."""
    script = os.path.abspath(script)
    with open(script, "rb") as fh:
        source = fh.read().decode("utf-8")
    code = _compile_script(script, source, STATE.entry_names)
    module = types.ModuleType("__main__")
    if with_file:
        module.__file__ = script
    module.__builtins__ = __builtins__
    module.__spec__ = None
    module.__dict__["__hcmigrate_entry__"] = _entry_wrapper
    sys.modules["__main__"] = module
    sys.argv = [script, *script_args]
    status, error = 0, None
    try:
        exec(code, module.__dict__)
        for name in STATE.entry_names:
            fn = module.__dict__.get(name)
            if getattr(fn, "_hcmigrate_entry", False) and STATE.entry_calls.get(name, 0) == 0:
                fn()
    except SystemExit as e:
        status = _exit_code(e)
    except BaseException as e:  # noqa: BLE001 - report like the interpreter would
        traceback.print_exc()
        status = 1
        error = f"{type(e).__name__}: {e}"[:1000]
        STATE.error_at = raised_at(e.__traceback__)
    _barrier()
    return status, error


def _make_compat_importable(compat_dir: str, force: bool) -> None:
    """Make `import compat` load the project's compat runtime from compat_dir: always when the
    compat reference needs it (force), else only when nothing else provides a `compat` package."""
    import importlib.util

    init = os.path.join(compat_dir, "__init__.py")
    if not os.path.isfile(init):
        return
    if not force:
        try:
            spec = importlib.util.find_spec("compat")
        except Exception:
            spec = None
        if spec is not None and spec.origin not in (None, "namespace"):
            return
    spec = importlib.util.spec_from_file_location(
        "compat", init, submodule_search_locations=[compat_dir]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["compat"] = module
    spec.loader.exec_module(module)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="_runner.py")
    parser.add_argument("--trace", required=True, help="the trace stream (JSON lines) to append to")
    parser.add_argument(
        "--entry", action="append", default=None, help="entry function name (default: main)"
    )
    parser.add_argument(
        "--install-compat", action="store_true", help="compat.install() when jax is imported"
    )
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        help="extra sys.path entries (after the script folder)",
    )
    parser.add_argument("--side", default="")
    parser.add_argument(
        "--compat-dir",
        default=None,
        help="folder of the compat package (used when `import compat` fails)",
    )
    parser.add_argument(
        "--pytest", action="store_true", help="SCRIPT is a folder; run pytest there with ARGS"
    )
    parser.add_argument(
        "--append-path",
        action="append",
        default=[],
        help="sys.path entries added last (e.g. a shared pytest)",
    )
    parser.add_argument(
        "--no-file",
        action="store_true",
        help="run the script without __file__ (a notebook's cells)",
    )
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    if ns.args and ns.args[0] == "--":
        ns.args = ns.args[1:]
    started = time.time()
    STATE.entry_names = tuple(ns.entry or ["main"])
    sys.modules.setdefault(RUNNER_MODULE, sys.modules[__name__])  # the pytest plugin finds us
    stream = open_stream(ns.trace, ns.side, script=os.path.abspath(ns.script), argv=ns.args)

    if ns.pytest:
        script_dir = os.path.abspath(ns.script)
    elif ns.no_file:  # a notebook's cells: the kernel's folder comes first, as '' does there
        script_dir = os.getcwd()
    else:
        script_dir = os.path.dirname(os.path.abspath(ns.script))
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(_HERE):
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    for i, p in enumerate(ns.path):
        sys.path.insert(1 + i, p)
    sys.path.extend(ns.append_path)

    real_stdout = sys.stdout
    if ns.pytest:
        # pytest's own output is not the program's: the plugin tees sys.stdout per test phase.
        STATE.entry_stack = ["<session>"]
    else:
        sys.stdout = _Tee(real_stdout)
    install_import_hooks(ns)

    plugin = None
    pytest_version = None
    if ns.pytest:
        os.environ["HCMIGRATE_VERIFY_PARENT"] = str(os.getpid())  # for xdist workers we start
        try:
            plugin_mod = load_pytest_plugin()
            import pytest

            pytest_version = pytest.__version__
            status, error, plugin = plugin_mod.run_pytest(
                sys.modules[__name__], os.path.abspath(ns.script), ns.args
            )
        except BaseException as e:  # noqa: BLE001
            traceback.print_exc()
            status, error = 3, f"pytest could not run: {type(e).__name__}: {e}"
    else:
        status, error = run_script(ns.script, ns.args, with_file=not ns.no_file)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    sys.stdout = real_stdout
    events, registrations = stream.take()
    end = {
        "t": "end",
        "jax": STATE.jax_version,
        "host_callback": STATE.patched,
        "exit_status": status,
        "error": error,
        "error_at": STATE.error_at,
        "stdout": "".join(STATE.stdout_parts),
        "entries": STATE.entries,
        "events": events,
        "registrations": registrations,
        "seconds": round(time.time() - started, 3),
    }
    if ns.pytest:
        end["pytest"] = pytest_version
        end["collect_errors"] = plugin.collect_errors if plugin else []
    stream.write(end)
    stream.close()
    return status


RUNNER_MODULE = "_hcmigrate_verify_runner"


class _Options:
    def __init__(self, compat_dir=None, install_compat=False):
        self.compat_dir = compat_dir
        self.install_compat = install_compat


def start_worker(trace: str, worker: str, options: dict) -> None:
    """Record in a pytest-xdist worker (see _worker/_hcmigrate_verify_worker.py)."""
    open_stream(trace, options.get("side", ""), worker=worker)
    STATE.entry_stack = ["<session>"]
    install_import_hooks(_Options(options.get("compat_dir"), options.get("install_compat", False)))


def end_worker(plugin) -> None:
    if STREAM is None:
        return
    events, registrations = STREAM.take()
    STREAM.write(
        {
            "t": "end",
            "jax": STATE.jax_version,
            "host_callback": STATE.patched,
            "events": events,
            "registrations": registrations,
            "collect_errors": plugin.collect_errors if plugin else [],
        }
    )
    STREAM.close()


def load_pytest_plugin():
    """_pytest_plugin.py, loaded by file path (no folder of ours goes on sys.path)."""
    import importlib.util

    name = "_hcmigrate_verify_pytest_plugin"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(os.path.dirname(_HERE), "_pytest_plugin.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(main())
