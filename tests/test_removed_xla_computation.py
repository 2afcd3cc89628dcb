"""JAX114: `jax.xla_computation(f)(*args)` (removed in JAX 0.4.34) ->
`jax.jit(f).lower(*args).compiler_ir("hlo")` (issue 36). The program's output on real jax
0.4.30 is its golden output; after `hcmigrate` it prints the same on the current JAX. What it
prints is what both spellings share (measured): the object's type and methods, the operations
and parameters of the HLO. The module's name and the result's 1-tuple differ, which the rule's
note says, and this test shows on jax 0.4.30 itself."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hcmigrate import Options, migrate_source
from tests.cli_helpers import run

_PROGRAM = textwrap.dedent(
    """\
    import re
    import warnings

    import jax
    import jax.numpy as jnp
    from jax import xla_computation as to_hlo

    warnings.simplefilter("ignore")


    def f(x, y):
        return jnp.sin(x) * y + 1


    class Tracer:  # a look-alike: a method of the project's own
        def xla_computation(self, fn):
            return lambda *args: ("own", fn(*args))


    def summary(comp):
        text = comp.as_hlo_text()
        # (the operations; less the 1-tuple xla_computation wrapped the result in: the note)
        ops = sorted(set(re.findall(r"= [^=]*? ([a-z-]+)\\(", text)) - {"tuple"})
        shape = comp.program_shape()
        return type(comp).__name__, ops, len(shape.parameter_shapes())


    def main():
        print(summary(jax.xla_computation(f)(1.0, jnp.ones(3))))
        print(summary(to_hlo(lambda v: v * 2)(2.0)))
        print(summary(jax.xla_computation(jax.grad(f))(1.0, 2.0)))
        print(Tracer().xla_computation(abs)(-3))


    main()
    """
)


def _printed(python: str, root: Path) -> subprocess.CompletedProcess:
    env = {"JAX_PLATFORMS": "cpu", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(
        [python, "prog.py"], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )


def test_direct_calls_print_what_legacy_printed(tmp_path, legacy_python):
    root = tmp_path / "p"
    root.mkdir()
    (root / "prog.py").write_text(_PROGRAM)
    golden = _printed(str(legacy_python), root)
    assert golden.returncode == 0, golden.stderr
    assert golden.stdout.count("\n") == 4 and "XlaComputation" in golden.stdout
    assert "xla_computation" in _printed(sys.executable, root).stderr

    result = run(["."], root)
    assert result.exit_code in (0, 1), result.output
    code = (root / "prog.py").read_text()
    assert "to_hlo" not in code and "jax.xla_computation" not in code
    assert "Tracer().xla_computation(abs)(-3)" in code
    after = _printed(sys.executable, root)
    assert after.returncode == 0, after.stderr
    assert after.stdout == golden.stdout
    assert _printed(str(legacy_python), root).stdout == golden.stdout  # (and on jax 0.4.30)
    assert run(["--check", "."], root).exit_code == 0


def test_what_differs_is_what_the_note_says(legacy_python):
    probe = textwrap.dedent(
        """\
        import warnings; warnings.simplefilter("ignore")
        import jax
        f = lambda x: x * 2
        old = jax.xla_computation(f)(1.0)
        new = jax.jit(f).lower(1.0).compiler_ir("hlo")
        print(old.as_hlo_text().split(",")[0], new.as_hlo_text().split(",")[0])
        print(old.program_shape().result_shape(), new.program_shape().result_shape())
        """
    )
    env = {"JAX_PLATFORMS": "cpu", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = subprocess.run(
        [str(legacy_python), "-c", probe], capture_output=True, text=True, env=env, timeout=300
    ).stdout.splitlines()
    assert out == ["HloModule xla_computation__lambda_ HloModule jit__lambda_", "(f32[]) f32[]"]


def test_other_forms_stay_reported():
    text = "import jax\n\ncomp = jax.xla_computation(f, static_argnums=1)\nhlo = comp(1.0, 2)\n"
    result = migrate_source(text, Options())
    assert result.code == text
    assert [d.brief() for d in result.diagnostics] == [
        "3:8 JAX114 [manual] `jax.xla_computation` was removed in JAX 0.4.34: "
        "jax.xla_computation(f)(*args) is jax.jit(f).lower(*args).compiler_ir('hlo')"
    ]
