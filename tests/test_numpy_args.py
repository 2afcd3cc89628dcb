"""Host functions get numpy arguments as legacy gave them (issue 27): through a small helper
that makes read-only copies the host function may switch to writable, run here with real JAX;
and no wrapper where the host function cannot tell numpy from jax.Array."""

from __future__ import annotations

import builtins
import io
from contextlib import redirect_stdout

import jax
import numpy as np

from hcmigrate.api import migrate_source

LEGACY = "from jax.experimental import host_callback as hcb\n"
# A module with an ordered io_callback (a `call` with side effects whose value is used): its
# taps join that chain as io_callbacks with no result.
WITH_ORDERED_IO = """\
from jax.experimental import host_callback as hcb

import jax


def save(x):
    print("saved", x)
    return x


def started(arg, transforms):
    print("started")


def step(x):
    hcb.id_tap(started, None)
    hcb.id_tap(lambda a, t: print(type(a).__name__, a.flags.writeable), x)
    return hcb.call(save, x, result_shape=x)
"""


def _run(code: str, function: str, *args):
    """Execute the migrated module with real JAX; what `function(*args)` printed."""
    namespace: dict = {}
    exec(compile(code, "<migrated>", "exec"), namespace)
    out = io.StringIO()
    with redirect_stdout(out):
        jax.jit(namespace[function])(*args)
        jax.effects_barrier()
    return out.getvalue()


def test_the_helper_is_small_and_gives_read_only_copies_that_may_be_made_writable():
    code = migrate_source(
        LEGACY
        + "\n\ndef fill(x, transforms):\n"
        + "    print(type(x).__name__, x.flags.writeable, x.flags.owndata)\n"
        + "    x.flags.writeable = True\n"
        + "    x[0] = -1.0\n"
        + "    print(x)\n\n\n"
        + "def step(x):\n    hcb.id_tap(fill, x)\n    return x\n"
    ).code
    helper = code[code.index("def _with_numpy_args") : code.index("def fill")].strip()
    assert len(helper.splitlines()) <= 9, helper
    printed = _run(code, "step", np.arange(3.0, dtype=np.float32))
    assert printed == "ndarray False True\n[-1.  1.  2.]\n"


def test_no_wrapper_where_the_host_function_cannot_tell():
    """It gets no array (`None`), or it ignores its arguments: the function as it is. A Python
    number is still converted: the host function gets a jax.Array for it on current JAX."""
    code = migrate_source(
        LEGACY
        + "\n\ndef step(x, bar):\n"
        + "    hcb.id_tap(lambda a, t: bar.reset(a), None)\n"
        + "    hcb.id_tap(lambda *_: bar.update(1), x)\n"
        + "    hcb.id_tap(lambda a, t: bar.update(a), 1)\n"
        + "    return x\n"
    ).code
    assert "jax.debug.callback(lambda a: bar.reset(a), None, ordered=True)" in code
    assert "jax.debug.callback(lambda *_: bar.update(1), x, ordered=True)" in code
    assert "jax.debug.callback(_with_numpy_args(lambda a: bar.update(a)), 1, ordered=True)" in code


def test_a_tap_on_the_io_chain_that_returns_nothing_and_gets_none_is_not_wrapped():
    result = migrate_source(WITH_ORDERED_IO)
    code = result.code
    assert "io_callback(started, None, None, ordered=True)" in code
    # (a lambda's value would be the io_callback's result: it keeps the result-dropping helper)
    assert "io_callback(\n        _tap_with_numpy_args(lambda a: print(" in code
    printed = _run(code, "step", np.arange(2.0, dtype=np.float32))
    assert printed == "started\nndarray False\nsaved [0. 1.]\n"


AGNOSTIC_SAMPLES = [
    np.array(3, np.int32),
    np.array(True),
    np.array(-1.0, np.float16),
    np.array(2.5, np.float32),
    np.array(7, np.uint8),
    np.array(1 + 2j, np.complex64),
    np.array([1, 2, 3], np.int32),
    np.array([True, False]),
    np.array([[1.5]], np.float32),
]


def _outcome(operation, value):
    try:
        result = operation(value)
    except Exception as error:  # (the same exception type; its wording may differ)
        return type(error).__name__
    return type(result), repr(result)


def test_what_the_agnostic_builtins_and_methods_give():
    """The facts hcmigrate.facts.ARRAY_AGNOSTIC_BUILTINS / _METHODS rest on, measured on the
    jax.Array a callback really receives and the numpy copy the helper would give it."""
    from hcmigrate.facts import ARRAY_AGNOSTIC_BUILTINS, ARRAY_AGNOSTIC_METHODS

    operations = {
        name: getattr(builtins, name.removeprefix("builtins.")) for name in ARRAY_AGNOSTIC_BUILTINS
    }
    operations |= {m: (lambda m: lambda v: getattr(v, m)())(m) for m in ARRAY_AGNOSTIC_METHODS}
    received = []
    for sample in AGNOSTIC_SAMPLES:
        jax.debug.callback(received.append, jax.numpy.asarray(sample))
    jax.effects_barrier()
    assert len(received) == len(AGNOSTIC_SAMPLES)
    for array in received:
        copy = np.array(array)
        copy.flags.writeable = False
        for name, operation in operations.items():
            assert _outcome(operation, array) == _outcome(operation, copy), (name, array)
    # abs() and round() are not agnostic: they give (or refuse) another type
    assert _outcome(abs, received[0]) != _outcome(abs, np.array(received[0]))


def test_a_host_function_that_only_reads_items_is_not_wrapped():
    """diffrax's error check: the host function only calls `.item()` on what it gets; abs()
    gives a jax.Array for a jax.Array, so a function that prints it keeps the helper."""
    code = migrate_source(
        LEGACY
        + "\n\ndef raises(flag):\n"
        + "    if flag.item():\n"
        + "        raise RuntimeError('failed')\n\n\n"
        + "def listed(values):\n"
        + "    print(values.tolist(), len(values))\n\n\n"
        + "def step(x):\n"
        + "    hcb.call(raises, x[0] > 5)\n"
        + "    hcb.call(listed, x)\n"
        + "    hcb.id_tap(lambda v, t: print(abs(v)), x)\n"
        + "    return x\n"
    ).code
    assert "jax.debug.callback(raises, x[0] > 5)" in code  # (a check: unordered, HCB305)
    assert "jax.debug.callback(listed, x, ordered=True)" in code
    assert "_with_numpy_args(lambda v: print(abs(v)))" in code
    printed = _run(code, "step", np.arange(3.0, dtype=np.float32))
    assert printed == "[0.0, 1.0, 2.0] 3\n[0. 1. 2.]\n"
