"""Legacy ``jax.experimental.host_callback`` on current JAX.

A faithful re-implementation of the host_callback API as it behaved in JAX 0.4.30 (the
legacy, default implementation there), for code that cannot be rewritten yet::

    from hcmigrate_compat import host_callback as hcb   # or: from compat import ...
    hcb.id_tap(lambda arg, transforms: ..., x)

or, for unmodified programs, ``hcmigrate_compat.install()`` / ``python -m hcmigrate_compat
script.py`` (``compat`` is the same package under the name hcmigrate's codemod writes).

Imports only jax, numpy and the standard library.
"""

from __future__ import annotations

import enum
import functools
import threading
from typing import Any, Callable

import jax
import numpy as np
from jax import tree_util

from . import _pretty as pp
from ._tokens import drop_failed_tokens as _drop_failed_tokens
from ._host import Failure as _Failure, ResultAval as _ResultAval
from ._runtime import (
    canonicalize_dtype as _canonicalize_dtype,
    fast_path_available,
    outside_call_p,
    primitive_to_bind as _primitive_to_bind,
    using_fast_path,
)

__all__ = [
    "id_tap",
    "id_print",
    "call",
    "barrier_wait",
    "stop_outfeed_receiver",
    "CallbackException",
    "TapFunctionException",
    "CallbackFlavor",
    "outside_call_p",
    "id_tap_dep_p",
    "id_p",
    "fast_path_available",
    "using_fast_path",
]


class CallbackFlavor(enum.Enum):
    """Kept for signature compatibility (JAX 0.4.27 - 0.4.34).

    In legacy mode, the default in 0.4.30, the flavor had no effect; the same holds here:
    every flavor gets the legacy semantics.
    """

    IO_CALLBACK = 1
    PURE = 2
    DEBUG = 3


class CallbackException(Exception):
    """Signals that some callback function had exceptions.

    Raised by :func:`barrier_wait`.
    """


TapFunctionException = CallbackException  # For backwards compatibility

_UNSET = object()


class _CallbackWrapper:
    """The user's function and how legacy called it (``_host`` calls it so); hashable,
    it is a parameter of the primitive."""

    __slots__ = ("callback_func", "identity", "call_with_device", "pass_transforms", "__weakref__")

    def __init__(self, callback_func, identity, call_with_device, pass_transforms=True):
        self.callback_func = callback_func
        self.identity = identity
        self.call_with_device = call_with_device
        self.pass_transforms = pass_transforms

    def __hash__(self):
        return hash(
            (self.callback_func, self.identity, self.call_with_device, self.pass_transforms)
        )

    def __eq__(self, other):
        return (
            isinstance(other, _CallbackWrapper)
            and self.callback_func == other.callback_func
            and self.identity == other.identity
            and self.call_with_device == other.call_with_device
            and self.pass_transforms == other.pass_transforms
        )


def _check_callable(fun):
    if not callable(fun):
        raise TypeError(f"Expected a callable value, got {fun}")


def _check_arg(arg):
    if not (
        isinstance(arg, (jax.Array, np.ndarray, np.generic, bool, int, float, complex))
        or hasattr(arg, "__jax_array__")
    ):
        # Tracers are jax.Array instances.
        raise TypeError(f"Argument '{arg}' of type {type(arg)} is not a valid JAX type.")


def _call(
    callback_func: Callable,
    arg,
    *,
    result_shape=None,
    call_with_device=False,
    device_index=0,
    identity=False,
    pass_transforms=True,
):
    _check_callable(callback_func)
    flat_args, arg_treedef = tree_util.tree_flatten(arg)
    for a in flat_args:
        _check_arg(a)
    params: dict[str, Any] = dict(
        callback=_CallbackWrapper(callback_func, identity, call_with_device, pass_transforms),
        identity=identity,
        arg_treedef=arg_treedef,
        device_index=device_index,
    )
    if not identity:
        flat_results_shape, result_treedef = tree_util.tree_flatten(result_shape)
        try:
            flat_results_aval = tuple(_result_aval(r) for r in flat_results_shape)
        except Exception:
            raise ValueError(
                "result_shape should be a pytree of values with structure "
                "matching the expected result of the callback function. The "
                "values must be either numeric scalars, or must have 'shape' and "
                f"'dtype' attributes. Got {result_shape}"
            ) from None
        params["result_treedef"] = result_treedef
        params["flat_results_aval"] = flat_results_aval
    flat_results = _primitive_to_bind().bind(*flat_args, **params)
    if identity:
        return arg_treedef.unflatten(flat_results)
    return params["result_treedef"].unflatten(flat_results)


_NUMERIC_SCALARS = (bool, int, float, complex, np.generic)


def _result_aval(r) -> _ResultAval:
    if hasattr(r, "dtype") and hasattr(r, "shape"):
        shape, dtype = r.shape, r.dtype
    elif isinstance(r, _NUMERIC_SCALARS):
        arr = np.asarray(r)
        shape, dtype = arr.shape, arr.dtype
    else:
        raise TypeError(f"not a numeric scalar nor a shape/dtype object: {r!r}")
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufcV" and dtype.name not in ("bool",):
        raise TypeError(f"unsupported dtype {dtype}")
    return _ResultAval(tuple(shape), _canonicalize_dtype(dtype))


def id_tap(
    tap_func,
    arg=_UNSET,
    *,
    result=None,
    tap_with_device=False,
    device_index=0,
    callback_flavor=CallbackFlavor.IO_CALLBACK,
    tap_with_transform=None,
    **kwargs,
):
    """Host-callback tap primitive, like identity function with a call to ``tap_func``.

    ``tap_func(arg, transforms)`` (``tap_func(arg, transforms, device=dev)`` with
    ``tap_with_device=True``) is called on the host with ``arg`` as numpy arrays. Returns
    ``arg``, or ``result`` when given (``result`` is not sent to the host).

    ``tap_with_transform`` is the spelling used by some tutorials: ``True`` is the
    legacy behaviour, ``False`` calls ``tap_func(arg)`` without ``transforms``.
    """
    if kwargs:
        raise TypeError(
            "Support for **kwargs in ``id_tap`` has been removed. Instead, "
            "pre-apply keyword arguments, either by using a closure or by passing "
            "``functools.partial(tap_func, **kwargs)``."
        )
    if arg is _UNSET:
        raise TypeError("id_tap() missing 1 required positional argument: 'arg'")
    if result is not None:
        for r in tree_util.tree_leaves(result):
            _check_arg(r)
    call_res = _call(
        tap_func,
        arg,
        call_with_device=tap_with_device,
        result_shape=None,
        identity=True,
        device_index=device_index,
        pass_transforms=tap_with_transform is None or bool(tap_with_transform),
    )
    if result is not None:
        return result
    return call_res


def id_print(
    arg,
    *,
    result=None,
    tap_with_device=False,
    device_index=0,
    output_stream=None,
    threshold=None,
    callback_flavor=CallbackFlavor.IO_CALLBACK,
    **kwargs,
):
    """Like :func:`id_tap` with a printing tap function (output exactly as legacy)."""
    printer = functools.partial(
        _print_tap_func, output_stream=output_stream, threshold=threshold, **kwargs
    )
    return id_tap(
        printer,
        arg,
        result=result,
        tap_with_device=tap_with_device,
        device_index=device_index,
        callback_flavor=callback_flavor,
    )


def call(
    callback_func: Callable,
    arg,
    *,
    result_shape=_UNSET,
    call_with_device=False,
    device_index=0,
    callback_flavor=CallbackFlavor.IO_CALLBACK,
    result_shape_dtypes=_UNSET,
):
    """Make a call to the host, and expect a result shaped like ``result_shape``.

    ``callback_func(arg)`` (``callback_func(arg, device=dev)`` with
    ``call_with_device=True``) receives ``arg`` as numpy arrays and must return a pytree
    matching ``result_shape`` (numeric scalars, objects with ``shape``/``dtype``, pytrees of
    those, or ``None``/``()`` for no result). ``result_shape_dtypes`` is accepted as an
    alias of ``result_shape``.
    """
    if result_shape is not _UNSET and result_shape_dtypes is not _UNSET:
        raise TypeError("call() got both 'result_shape' and 'result_shape_dtypes'")
    if result_shape is _UNSET:
        result_shape = None if result_shape_dtypes is _UNSET else result_shape_dtypes
    return _call(
        callback_func,
        arg,
        result_shape=result_shape,
        call_with_device=call_with_device,
        identity=False,
        device_index=device_index,
    )


_print_tap_lock = threading.Lock()


def _print_tap_func(arg, transforms, *, device=None, output_stream=None, threshold=1024, **kwargs):
    """The consumer for id_print (same output as legacy)."""

    def emit_str(s: str):
        if output_stream is not None:
            output_stream.write(s + "\n")
        else:
            print(s)

    if transforms:
        kwargs["transforms"] = [(name, params) if params else name for name, params in transforms]
    if device is not None:
        # str(device), like legacy: the same text a tap or call gets from str(device)
        kwargs["device"] = device
    kv_pairs = " ".join([f"{k}: {v}" for k, v in sorted(kwargs.items())])

    def bracketed(opening, docs, closing) -> pp.Doc:
        return pp.group(
            pp.concat([pp.text(opening), pp.nest(2, pp.join(pp.brk(), docs)), pp.text(closing)])
        )

    def pp_val(arg) -> pp.Doc:
        if isinstance(arg, tuple):
            return bracketed("( ", [pp_val(e) for e in arg], " )")
        elif isinstance(arg, list):
            return bracketed("[ ", [pp_val(e) for e in arg], " ]")
        elif isinstance(arg, dict):
            items = [pp.text(f"{k}=") + pp_val(v) for k, v in sorted(arg.items())]
            return bracketed("{ ", items, " }")
        elif isinstance(arg, np.ndarray):
            return pp.text(np.array2string(arg, threshold=threshold))
        else:
            return pp.text(str(arg))

    with _print_tap_lock:
        if kv_pairs:
            emit_str(kv_pairs)
        emit_str(str(pp_val(arg)))


def barrier_wait(logging_name: str | None = None):
    """Blocks until all pending callbacks ran; raises CallbackException for pending errors.

    On CPU a callback's error fails its computation and reaches the user through that
    computation's outputs (at the call, or where the outputs are used), as in legacy
    0.4.30 on CPU, whose ``barrier_wait`` then returned normally; so does this one, and
    later calls work again (``_tokens``). An error ``jax.effects_barrier()`` reports
    for any other reason is raised here as ``CallbackException``.
    """
    del logging_name
    _drop_failed_tokens()
    try:
        jax.effects_barrier()
    except Exception as e:
        last = _Failure.last
        _Failure.last = None
        formatted = last[1] if last is not None else str(e)
        raise CallbackException(
            f"There were exceptions during callback processing. Last one was: {formatted}"
        ) from (last[0] if last is not None else e)
    _Failure.last = None


def stop_outfeed_receiver():
    """Waits for pending callbacks (there is no outfeed receiver to stop)."""
    _drop_failed_tokens()
    jax.effects_barrier()


# ----------------------------------------------------------------------------- internals
# ``id_p``: the identity primitive some projects reached into.
try:
    from jax.extend.core import Primitive as _Primitive
except ImportError:  # pragma: no cover
    from jax.core import Primitive as _Primitive  # type: ignore[no-redef]

from jax.interpreters import ad as _ad, batching as _batching, mlir as _mlir

id_p = _Primitive("id")
id_p.multiple_results = True
id_p.def_impl(lambda *args: args)
id_p.def_abstract_eval(lambda *args: args)
_mlir.register_lowering(id_p, lambda ctx, *args: list(args))
_ad.primitive_jvps[id_p] = lambda primals, tangents: (id_p.bind(*primals), list(tangents))
_batching.primitive_batchers[id_p] = lambda args, dims: (id_p.bind(*args), list(dims))

# ``id_tap_dep_p``: identity on its first operand; the second is a dependency only.
from ._id_tap_dep import id_tap_dep_p  # noqa: E402
