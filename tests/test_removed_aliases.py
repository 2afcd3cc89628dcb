"""Removed keywords of a JAX function reached through a name (issue 36): `clip = jnp.clip`,
`from jax.numpy import clip as c`, a dict, a namespace, a class body, another module's name
for it, a parameter it is passed for. Each program's output on real jax 0.4.30 is its golden
output; after `hcmigrate` it prints the same on the current JAX (where the original raises
`clip() got an unexpected keyword argument 'a_min'`). Look-alikes (numpy's `clip` under the
same spellings, a name rebound) are left alone or reported, never rewritten."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hcmigrate import Options, migrate_source
from tests.cli_helpers import run

_BACKEND = textwrap.dedent(
    """\
    import types

    import jax.numpy as jnp
    import numpy as np
    from jax.numpy import clip as c

    clip = jnp.clip
    OPS = {"clip": jnp.clip, "host_clip": np.clip}
    ns = types.SimpleNamespace(clip=jnp.clip, np_clip=np.clip)
    np_clip = np.clip


    class JaxBackend:
        clip = staticmethod(jnp.clip)


    class NumpyBackend:
        clip = staticmethod(np.clip)


    xnp = JaxBackend()


    def local(x):
        lo = jnp.clip
        return lo(x, a_max=1.5)


    def here(x):
        return (
            c(x, a_min=0.5),
            clip(x, a_min=0.5, a_max=2),
            OPS["clip"](x, a_max=1),
            ns.clip(x, a_min=1),
            xnp.clip(x, a_max=2.5),
            JaxBackend.clip(x, 1, a_max=2),
            local(x),
            # look-alikes: numpy's clip under the same spellings
            OPS["host_clip"](np.asarray(x), a_min=1, a_max=2),
            ns.np_clip(np.asarray(x), a_min=2, a_max=3),
            np_clip(np.asarray(x), a_min=0, a_max=1),
            NumpyBackend.clip(np.asarray(x), a_min=1, a_max=3),
        )
    """
)

_MODEL = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp

    from pkg import backend as be
    from pkg.backend import JaxBackend, NumpyBackend
    from pkg.backend import clip as bclip
    from pkg.backend import xnp as backend_object
    from . import backend

    jb, nb = JaxBackend(), NumpyBackend()


    @jax.jit
    def there(x):
        return (
            be.clip(x, a_min=1),
            bclip(x, a_max=2),
            backend.ns.clip(x, a_min=0.5, a_max=1.5),
            jb.clip(x, a_min=2),
            backend_object.clip(x, a_max=1),
        )


    def main():
        x = jnp.arange(4.0)
        for value in [*be.here(x), *there(x), nb.clip(jax.device_get(x), a_min=1, a_max=2)]:
            kind = "jax" if isinstance(value, jax.Array) else type(value).__module__
            print(kind, [round(float(v), 2) for v in value])


    if __name__ == "__main__":
        main()
    """
)


def _project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "backend.py").write_text(_BACKEND)
    (root / "pkg" / "model.py").write_text(_MODEL)
    return root


def _printed(python: str, root: Path) -> subprocess.CompletedProcess:
    env = {"JAX_PLATFORMS": "cpu", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(
        [python, "-m", "pkg.model"], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )


def test_calls_through_names_print_what_legacy_printed(tmp_path, legacy_python):
    root = _project(tmp_path / "p")
    golden = _printed(str(legacy_python), root)
    assert golden.returncode == 0, golden.stderr
    assert golden.stdout.count("\n") == 17
    broken = _printed(sys.executable, root)  # (what the issue saw, before the migration)
    assert "unexpected keyword argument 'a_m" in broken.stderr

    result = run(["."], root)
    assert result.exit_code in (0, 1), result.output
    backend = (root / "pkg" / "backend.py").read_text()
    model = (root / "pkg" / "model.py").read_text()
    assert "a_min" not in model.replace("nb.clip(jax.device_get(x), a_min=1", "")
    # the look-alikes keep numpy's keywords
    for kept in (
        'OPS["host_clip"](np.asarray(x), a_min=1, a_max=2)',
        "ns.np_clip(np.asarray(x), a_min=2, a_max=3)",
        "np_clip(np.asarray(x), a_min=0, a_max=1)",
        "NumpyBackend.clip(np.asarray(x), a_min=1, a_max=3)",
    ):
        assert kept in backend
    assert "nb.clip(jax.device_get(x), a_min=1, a_max=2)" in model

    after = _printed(sys.executable, root)
    assert after.returncode == 0, after.stderr
    assert after.stdout == golden.stdout
    again = run(["--check", "."], root)  # idempotent
    assert again.exit_code == 0, again.output


def _report(text: str) -> list[str]:
    result = migrate_source(text, Options())
    return [d.brief() for d in result.diagnostics], result.code


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            # a parameter the module passes jnp.clip for: another caller may pass np.clip
            "import jax.numpy as jnp\n\n\ndef apply(fn, x):\n    return fn(x, a_min=0)\n\n\n"
            "y = apply(jnp.clip, 1.0)\n",
            "5:12 JAX102 [manual] `fn(x, a_min=0)`: `fn` may be `jax.numpy.clip` (bound or "
            "passed at line 8)",
        ),
        (
            # two bindings of the name: which one runs is not known
            "import jax.numpy as jnp\nimport numpy as np\n\nclip = jnp.clip\nif FAST:\n"
            "    clip = np.clip\ny = clip(1.0, a_max=0)\n",
            "7:5 JAX102 [manual] `clip(1.0, a_max=0)`: `clip` may be `jax.numpy.clip` (bound or "
            "passed at line 4)",
        ),
        (
            # a dict the module changes
            'import jax.numpy as jnp\nimport numpy as np\n\nOPS = {"clip": jnp.clip}\n'
            'OPS["clip"] = np.clip\ny = OPS["clip"](1.0, a_max=0)\n',
            '6:5 JAX102 [manual] `OPS["clip"](1.0, a_max=0)`: `OPS["clip"]` may be',
        ),
    ],
    ids=["parameter", "two-bindings", "mutated-dict"],
)
def test_ambiguous_bindings_are_reported_with_their_line_not_rewritten(text, expected):
    briefs, code = _report(text)
    assert code == text
    assert len(briefs) == 1 and briefs[0].startswith(expected), briefs


def test_numpy_functions_bound_to_names_are_no_sites():
    text = (
        "import jax.numpy as jnp\nimport numpy as np\nfrom numpy import clip as c\n\n"
        "clip = np.clip\nOPS = {'clip': np.clip}\n\n\ndef apply(fn, x):\n"
        "    return fn(x, a_min=0)\n\n\ny = (apply(np.clip, 1.0), c(2.0, a_min=1), clip(2.0, "
        "a_max=1), OPS['clip'](3.0, a_min=0), jnp.zeros(2))\n"
    )
    briefs, code = _report(text)
    assert (briefs, code) == ([], text)


def test_keywords_bound_by_functools_partial_are_renamed_or_reported():
    """`functools.partial(jnp.reshape, newshape=s)` binds the removed keyword where the call is
    made (jax 0.10.2: `reshape() got an unexpected keyword argument 'newshape'` when the
    partial is called): renamed where the project's JAX has the new keyword; where it may not,
    a manual finding (partial cannot pass it by position: the array comes later). numpy's
    functions and a partial of an own function are no sites (numpy 2.4 refuses its own
    `newshape=` too: not called here)."""
    text = (
        "import functools\nfrom functools import partial\n\nimport jax.numpy as jnp\n"
        "import numpy as np\n\n\ndef own(x, newshape=None):\n    return x\n\n\n"
        "rows = functools.partial(jnp.reshape, newshape=(2, -1))\n"
        "low = partial(jnp.clip, a_min=0.0)\n"
        "host = partial(np.reshape, newshape=(2, -1))\nmine = partial(own, newshape=3)\n"
        "print(rows(jnp.arange(6.0)), low(jnp.arange(-1.0, 2.0)), host, mine(1))\n"
    )
    result = migrate_source(text, Options(target_jax=(0, 4, 30)))
    assert "functools.partial(jnp.reshape, shape=(2, -1))" in result.code
    assert "partial(jnp.clip, min=0.0)" in result.code
    assert "partial(np.reshape, newshape=(2, -1))" in result.code
    assert "partial(own, newshape=3)" in result.code
    assert [(d.code, d.level.value) for d in result.diagnostics] == [("JAX102", "fixed")] * 2
    namespace: dict = {}
    exec(compile(result.code, "<migrated>", "exec"), namespace)  # (runs on the current JAX)
    old = migrate_source(text, Options(target_jax=(0, 4, 26)))
    assert old.code == text
    assert [(d.code, d.level.value) for d in old.diagnostics] == [("JAX102", "manual")] * 2


MODULE_BOUND_BY_ASSIGNMENT = """\
import jax

jnp = jax.numpy
lax = jax.lax


def f(x):
    ok = isinstance(x, jnp.DeviceArray)
    return ok, jnp.clip(x, a_min=0.5), lax.clamp(0.0, x, 1.0)
"""


def test_a_module_bound_by_assignment_is_followed_like_an_import():
    """(PennyLane 0.26: `jnp = jax.numpy`, then `jnp.DeviceArray`) A JAX module given to a
    name at the module's top level is that module for the removed-API rules, as `import
    jax.numpy as jnp` would be: its removed names are rewritten, and the result runs on current
    JAX. A name bound twice is left alone (which value it holds is not known)."""
    result = migrate_source(MODULE_BOUND_BY_ASSIGNMENT)
    assert "isinstance(x, jax.Array)" in result.code, result.code
    assert "jnp.clip(x, 0.5)" in result.code, result.code
    run_there = subprocess.run(
        [sys.executable, "-c", result.code + "\nprint(f(jax.numpy.arange(3.0))[0])\n"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert run_there.returncode == 0 and run_there.stdout == "True\n", run_there.stderr
    rebound = MODULE_BOUND_BY_ASSIGNMENT.replace("lax = jax.lax\n", "lax = jax.lax\njnp = None\n")
    assert migrate_source(rebound).code == rebound


def test_a_test_module_importing_jax_with_importorskip_keeps_skipping(tmp_path):
    """(PennyLane's tests: `jax = pytest.importorskip("jax")`, `jnp = jax.numpy`) The module
    `importorskip` returns is that module for the rules, and the rewrite's `jax.Array` uses
    that binding: no `import jax` is added above it (which would fail where jax is missing
    instead of skipping)."""
    source = (
        "import pytest\n\n"
        'jax = pytest.importorskip("jax")\n'
        "jnp = jax.numpy\n\n\n"
        "def test_ones():\n"
        "    assert isinstance(jnp.ones(2), jnp.DeviceArray)\n"
    )
    code = migrate_source(source).code
    assert code == source.replace("jnp.DeviceArray", "jax.Array"), code
    (tmp_path / "test_ones.py").write_text(code)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_ones.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert ran.returncode == 0 and "1 passed" in ran.stdout, ran.stdout + ran.stderr
