"""The Python function a lowered outside call runs on the host, once per call.

Built once per lowered call site, specialised on what is known then (the tap function's
calling convention, the argument's pytree, the transforms, where the device comes from),
so that each call does only the work legacy's callback did: hand the function owned NumPy
copies of the operands (the buffers belong to the runtime), call it, and for ``call`` check
and canonicalise what it returned.

Calling convention (``make_host``): ``host(*operands) -> tuple of results``, where the
operands are the runtime token when ``with_token`` (handed back first among the results),
then the device's index when ``device_operand``, then the arrays. JAX's
``emit_python_callback`` calls hosts without a token; the fast lowering may register one
with the token directly (see ``_runtime``), skipping JAX's checking wrapper, since the
checks are made here.
"""

from __future__ import annotations

import logging
import threading
import traceback

import numpy as np
from jax import tree_util

from . import _tokens

logger = logging.getLogger(__package__ + ".host_callback")

# How the user's function is called (legacy's conventions):
#   tap(arg, transforms) / tap(arg, transforms, device=d) / tap(arg) / tap(arg, device=d)
#   call: f(arg) / f(arg, device=d)
_ARG, _ARG_TRANSFORMS, _ARG_TRANSFORMS_DEVICE, _ARG_DEVICE = range(4)


class Failure:
    """Book-keeping of exceptions raised by host functions (for ``barrier_wait``)."""

    last = None  # (exception, formatted traceback)
    lock = threading.Lock()


def record_failure(callback, e) -> None:
    logger.error("Outside call %s threw exception %s.", callback, e)
    with Failure.lock:
        Failure.last = (e, traceback.format_exc())
    _tokens.note_failure()


def unpack_transforms(transforms) -> tuple:
    """``(("batch", dims), ("transpose",))`` -> legacy's ``(("batch", {"batch_dims": dims}),
    ("transpose", {}))``."""
    out = []
    for name, *params in transforms:
        out.append((name, dict(batch_dims=params[0]) if name == "batch" else {}))
    return tuple(out)


def _convention(callback) -> tuple:
    """(function, convention) of a ``host_callback._CallbackWrapper`` (or any callable
    taking ``(arg, device, transforms)``, called through itself)."""
    func = getattr(callback, "callback_func", None)
    if func is None:
        return callback, None
    with_device = callback.call_with_device
    if callback.identity and callback.pass_transforms:
        return func, _ARG_TRANSFORMS_DEVICE if with_device else _ARG_TRANSFORMS
    return func, _ARG_DEVICE if with_device else _ARG


class ResultAval:
    """Shape and dtype of one expected ``call`` result leaf (prints like legacy avals)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)

    def __eq__(self, other):
        return (
            isinstance(other, ResultAval)
            and self.shape == other.shape
            and self.dtype == other.dtype
        )

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}])"

    __str__ = __repr__


def _result_checker(callback, result_treedef, flat_results_aval, canonicalize):
    """``check(result) -> tuple of NumPy arrays`` matching the declared result exactly."""
    expected = tuple(flat_results_aval)
    flatten = tree_util.tree_flatten

    def check(res):
        actual_flat, actual_treedef = flatten(res)
        if actual_treedef != result_treedef:
            raise TypeError(
                f"Callback func {callback} should have returned a result "
                f"with pytree {result_treedef} but returned {actual_treedef}"
            )
        out = []
        for r, aval in zip(actual_flat, expected):
            r = np.asarray(r)
            if r.dtype != aval.dtype:
                dtype = canonicalize(r.dtype)
                if dtype == aval.dtype:
                    r = r.astype(dtype)
            if r.dtype != aval.dtype or r.shape != aval.shape:
                canonical = tuple(np.asarray(x) for x in actual_flat)
                actual_avals = tuple(ResultAval(x.shape, canonicalize(x.dtype)) for x in canonical)
                raise TypeError(
                    f"Callback func {callback} should have returned a result "
                    "with abstract values "
                    f"{result_treedef.unflatten(expected)} "
                    f"but returned {actual_treedef.unflatten(actual_avals)}"
                )
            out.append(r)
        return tuple(out)

    return check


def _legacy_array(operand):
    """A copy that owns its data, read-only as legacy's CPU arrays were; the host function may
    switch the flag on, as legacy's could (docs/callback_facts.json "writeable/")."""
    array = np.array(operand)
    array.flags.writeable = False
    return array


def make_host(
    callback,
    identity,
    arg_treedef,
    transforms,
    result_treedef,
    flat_results_aval,
    *,
    canonicalize,
    with_token=False,
    device_operand=False,
    device_of=None,
    device=None,
):
    """The host function of one lowered call (calling convention in the module docstring).

    ``device_of(index)`` maps the device operand to a ``jax.Device``; without a device
    operand every call gets ``device``.
    """
    func, convention = _convention(callback)
    transforms = unpack_transforms(transforms)
    single_leaf = arg_treedef.num_leaves == 1 and arg_treedef.num_nodes == 1
    unflatten = arg_treedef.unflatten
    check = (
        None
        if identity
        else _result_checker(callback, result_treedef, flat_results_aval, canonicalize)
    )
    first_array = int(with_token) + int(device_operand)

    def host(*operands):
        if device_operand:
            dev = device_of(int(operands[first_array - 1]))
        else:
            dev = device
        if single_leaf:
            arg = _legacy_array(operands[first_array])
        else:
            arg = unflatten([_legacy_array(a) for a in operands[first_array:]])
        try:
            if convention == _ARG_TRANSFORMS:
                res = func(arg, transforms)
            elif convention == _ARG:
                res = func(arg)
            elif convention == _ARG_TRANSFORMS_DEVICE:
                res = func(arg, transforms, device=dev)
            elif convention == _ARG_DEVICE:
                res = func(arg, device=dev)
            else:
                res = func(arg, dev, transforms)
            outs = () if check is None else check(res)
        except Exception as e:
            record_failure(callback, e)
            raise
        if with_token:
            return (operands[0], *outs)
        return outs

    return host
