"""JAX115: `jnp.linalg.solve` with a batch of vectors changed meaning in JAX 0.5.0 (issue 36):
a note at each call, the spelling it gives measured to keep the legacy result."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from hcmigrate import Options, migrate_source

_SOLVE = textwrap.dedent(
    """\
    import jax.numpy as jnp
    import numpy as np
    a = jnp.eye(2) * 2 + jnp.arange(12.0).reshape(3, 2, 2) / 10
    b = jnp.arange(6.0).reshape(3, 2)
    x = jnp.linalg.solve(a, b[..., None])[..., 0] if NEW else jnp.linalg.solve(a, b)
    print(np.round(np.asarray(x), 5).tolist())
    """
)


def _run(python: str, new: bool) -> subprocess.CompletedProcess:
    env = {"JAX_PLATFORMS": "cpu", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    code = f"NEW = {new}\n" + _SOLVE
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_the_noted_spelling_keeps_legacy_s_batched_solve(legacy_python):
    legacy = _run(str(legacy_python), new=False)
    assert legacy.returncode == 0 and "batched 1D solves" in legacy.stderr  # (it warned)
    assert "Invalid shapes for solve" in _run(sys.executable, new=False).stderr
    assert _run(sys.executable, new=True).stdout == legacy.stdout
    assert _run(str(legacy_python), new=True).stdout == legacy.stdout


def test_each_call_of_jax_s_solve_gets_the_note_and_numpy_s_none():
    text = textwrap.dedent(
        """\
        import jax.numpy as jnp
        import numpy as np
        from jax.numpy import linalg as jla
        from jax.numpy.linalg import solve


        def step(a, b):
            return jnp.linalg.solve(a, b) + jla.solve(a, b) + np.linalg.solve(a, b) + solve(a, b)
        """
    )
    result = migrate_source(text, Options())
    assert result.code == text
    found = [(d.line, d.col, d.code, d.level.value) for d in result.diagnostics]
    assert found == [
        (8, 12, "JAX115", "manual"),
        (8, 37, "JAX115", "manual"),
        (8, 79, "JAX115", "manual"),
    ]
    assert "`jnp.linalg.solve(a, b[..., None])[..., 0]`" in result.diagnostics[0].message
