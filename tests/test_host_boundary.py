"""What a host function does with its arrays at the host boundary (issue 36 item 4, issue 37
item 1's owned copies): `int()`/`float()`/`complex()` of a one-element array of one or more
dimensions (numpy 1.26, legacy's, took it; numpy 2 and jax.Array refuse it), numpy functions
that write into their argument or need its buffer, and a host function that switches the
WRITEABLE flag on before handing the buffer to C code. Each program runs on real jax 0.4.30
as written and on current JAX as migrated, and prints the same."""

from __future__ import annotations

import subprocess
import sys

import libcst as cst
import pytest

from hcmigrate.api import migrate_source as migrate_any_source


from hcmigrate.options import Options


def migrate_source(text, options=None, **kwargs):
    """The rewrite in a project that states a current JAX floor (the newest spellings,
    `jax.tree.map`; with no floor stated the portable `jax.tree_util.tree_map` is written)."""
    return migrate_any_source(text, options or Options(target_jax=(0, 10, 2)), **kwargs)


from hcmigrate.codemod.numpy_args import reads_array_flags

HEADER = """\
import ctypes

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb
"""

SCALARS = (
    HEADER
    + """

def counts(info, transforms):
    print("count", int(info["count"]), "loss", float(info["loss"]))
    print(complex(info["count"]))


def first(x):
    print("first", int(x[0]), "len", int(len(x)))


def rebinds(v, transforms):
    v = np.ravel(v)
    print("rebinds", int(v[0]))


def also_called_directly(v):
    print("direct", int(v))


@jax.jit
def step(x):
    hcb.id_tap(counts, {"count": x[:1] * 3, "loss": x.sum()})
    hcb.id_tap(lambda v, _: print("lambda", int(v), float(v)), x[:1] + 1)
    hcb.id_tap(lambda v, _: print("0-d", int(v)), x[2])
    hcb.call(first, x[1:2].reshape(1, 1))
    hcb.id_tap(rebinds, x[:1])
    hcb.call(also_called_directly, x[2])
    return x


step(jnp.arange(3.0, dtype=jnp.float32))
jax.effects_barrier()
also_called_directly(4)
"""
)

OWNED_COPY = (
    HEADER
    + """

def fill_from_c(x):
    x.flags.writeable = True
    buffer = (ctypes.c_float * x.size).from_buffer(x)
    buffer[0] = 7.0
    return x


def set_by_key(x, transforms):
    x.flags["WRITEABLE"] = True
    np.ctypeslib.as_ctypes(x)[1] = 5.0
    print("set by key", x.tolist())


@jax.jit
def step(x):
    hcb.id_tap(set_by_key, x * 2)
    return hcb.call(fill_from_c, x, result_shape=x)


print(step(jnp.arange(3.0, dtype=jnp.float32)).tolist())
jax.effects_barrier()
"""
)


def _run(python, code: str, tmp_path, name: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    run = subprocess.run(
        [str(python), "-W", "ignore", str(path)], capture_output=True, text=True, timeout=180
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_scalar_conversions_of_one_element_arrays_print_what_legacy_printed(
    legacy_python, tmp_path
):
    legacy = _run(legacy_python, SCALARS, tmp_path, "legacy")
    assert legacy == (
        "count 0 loss 3.0\n0j\nlambda 1 1.0\n0-d 2\nfirst 1 len 1\nrebinds 0\ndirect 2\ndirect 4\n"
    )
    migrated = migrate_source(SCALARS).code
    compile(migrated, "<migrated>", "exec")
    assert 'int(info["count"].item()), "loss", float(info["loss"].item())' in migrated
    assert 'print(complex(info["count"].item()))' in migrated
    assert 'print("lambda", int(v.item()), float(v.item()))' in migrated
    assert 'print("first", int(x[0].item()), "len", int(len(x)))' in migrated
    # look-alikes: a rebound parameter, a def also called with a Python int
    assert 'print("rebinds", int(v[0]))' in migrated
    assert 'print("direct", int(v))' in migrated
    assert migrate_source(migrated).code == migrated  # (idempotent)
    assert _run(sys.executable, migrated, tmp_path, "migrated") == legacy


def test_a_host_function_that_only_sets_writeable_gets_owned_copies_natively(
    legacy_python, tmp_path
):
    """Legacy's arrays owned their data: switching WRITEABLE on and writing through a C
    buffer worked, as on `np.array(x)`; no compat runtime."""
    legacy = _run(legacy_python, OWNED_COPY, tmp_path, "legacy")
    assert legacy == "set by key [0.0, 5.0, 4.0]\n[7.0, 1.0, 2.0]\n"
    result = migrate_source(OWNED_COPY)
    assert "hcmigrate_compat" not in result.code
    assert "fill_from_c(jax.tree.map(np.array, " in result.code
    assert "set_by_key(jax.tree.map(np.array, " in result.code
    assert _run(sys.executable, result.code, tmp_path, "migrated") == legacy


@pytest.mark.parametrize(
    "body, reads",
    [
        ("x.flags.writeable = True", False),
        ("x.flags['WRITEABLE'] = 1", False),
        ("x.setflags(write=True)", False),
        ("print(x.flags.writeable)", True),
        ("if not x.flags.owndata:\n    x = x.copy()", True),
        ("x.flags.writeable = not x.flags.writeable", True),
    ],
)
def test_which_host_functions_read_array_flags(body, reads):
    """Only a read of the flags tells legacy's read-only arrays from owned copies."""
    module = cst.parse_module(f"def f(x):\n    {body.replace(chr(10), chr(10) + '    ')}\n")
    assert reads_array_flags(module) is reads


def test_numpy_functions_that_write_into_their_argument_get_numpy_copies():
    """`np.copyto(x, ...)`, `np.put`, `out=x`, `np.ctypeslib.as_ctypes(x)` refuse a
    jax.Array (scripts/measure_host_boundary.py); `np.multiply(x, 2, out=y)` does not write
    into `x`, and `np.sum(x)` takes either."""
    code = migrate_source(
        HEADER
        + "\n\ndef step(x):\n"
        + "    hcb.call(lambda v: np.copyto(v, 0), x)\n"
        + "    hcb.call(lambda v: np.put(v, 0, 9), x)\n"
        + "    hcb.call(lambda v: np.add(v, 1, out=v), x)\n"
        + "    hcb.call(lambda v: np.ctypeslib.as_ctypes(v), x)\n"
        + "    hcb.call(lambda v: np.multiply(v, 2, out=OUT), x)\n"
        + "    hcb.call(lambda v: print(np.sum(v)), x)\n"
    ).code
    assert "np.copyto(jax.tree.map(np.array, v), 0)" in code
    assert "np.put(jax.tree.map(np.array, v), 0, 9)" in code
    assert "(lambda v: np.add(v, 1, out=v))(jax.tree.map(np.array, arg))" in code
    assert "np.ctypeslib.as_ctypes(jax.tree.map(np.array, v))" in code
    assert "lambda v: np.multiply(v, 2, out=OUT)," in code
    assert "lambda v: print(np.sum(v))," in code


@pytest.mark.parametrize(
    "body, converted",
    [
        ("print(isinstance(v, np.ndarray))", True),
        ("v += 1", True),
        ("v[0] = 1.0", True),
        ("print(len(v.tobytes()))", True),
        ("(ctypes.c_float * 3).from_buffer(v)", True),
        ("v.flags.writeable = True", True),
        ("np.copyto(v, 0)", True),
        ("print(np.sum(v))", False),
        ("print(int(v))", False),
        ("print(v.item(), v.tolist())", False),
    ],
)
def test_what_tells_a_jax_array_from_a_numpy_array(body, converted):
    """The judgement of hcmigrate.codemod.host_functions.converts_its_arguments: a host
    function that may tell them apart gets numpy copies; one that cannot is passed as it is."""
    code = migrate_source(
        HEADER + f"\n\ndef host(v):\n    {body}\n\n\ndef step(x):\n    hcb.call(host, x)\n"
    ).code
    assert ("host(jax.tree.map(np.array, " in code) is converted, code
