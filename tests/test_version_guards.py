"""Branches kept for old JAX (issue 36 item 6): host_callback code that only runs below a JAX
version the module tests itself is left as it is, imports included, and HCB014 says so (or
that it never runs under the project's floor, or fails where host_callback is a stub); a
look-alike test (another module's version, a branch for new JAX, Python's version) does not
keep a branch. fixtures/fidelity/c15_version_guarded_branch runs such a module on jax 0.4.30
and current JAX against its golden trace."""

from __future__ import annotations

import subprocess
import sys
import pytest

from hcmigrate.api import migrate_source
from hcmigrate.codemod.version_guards import legacy_branches
from hcmigrate.diagnostics import Level
from hcmigrate.options import Options

TAP = "hcb.id_tap(lambda v, _: print(v), x)"
MODERN = "io_callback(print, None, x)"


def _guarded(test: str, legacy_first: bool = True, header: str = "import jax\n") -> str:
    legacy = (
        f"    from jax.experimental import host_callback as hcb\n\n    def log(x):\n        {TAP}\n"
    )
    modern = f"    from jax.experimental import io_callback\n\n    def log(x):\n        {MODERN}\n"
    first, second = (legacy, modern) if legacy_first else (modern, legacy)
    return f"{header}\n{test}\n{first}else:\n{second}"


KEPT = {
    "a string below 0.4.26": (_guarded('if jax.__version__ < "0.4.26":'), Level.NOTE, "< 0.4.26"),
    "packaging, below 0.5": (
        _guarded(
            'if version.parse(jax.__version__) < version.parse("0.5"):',
            header="import jax\nfrom packaging import version\n",
        ),
        Level.MANUAL,
        "< 0.5",
    ),
    "the else of >=": (
        _guarded(
            'if Version(jax.__version__) >= Version("0.4.26"):',
            legacy_first=False,
            header="import jax\nfrom packaging.version import Version\n",
        ),
        Level.NOTE,
        "< 0.4.26",
    ),
    "a flag tested later": (
        _guarded(
            "if OLD_JAX:", header="import jax\n\nOLD_JAX = jax.__version_info__ < (0, 4, 30)\n"
        ),
        Level.NOTE,
        "< 0.4.30",
    ),
    "not a flag of new JAX": (
        _guarded("if not NEW_JAX:", header='import jax\n\nNEW_JAX = jax.__version__ >= "0.4.26"\n'),
        Level.NOTE,
        "< 0.4.26",
    ),
    "the version imported": (
        _guarded('if jv < "0.4.20":', header="from jax import __version__ as jv\n"),
        Level.NOTE,
        "< 0.4.20",
    ),
    "an alias, at or below": (
        _guarded('if jx.__version__ <= "0.4.33":', header="import jax as jx\n"),
        Level.NOTE,
        "<= 0.4.33",
    ),
    "a tuple of the parts": (
        _guarded(
            "if JAX_VERSION < (0, 4, 26):",
            header='import jax\n\nJAX_VERSION = tuple(map(int, jax.__version__.split(".")[:3]))\n',
        ),
        Level.NOTE,
        "< 0.4.26",
    ),
}


@pytest.mark.parametrize("source, level, bound", KEPT.values(), ids=KEPT)
def test_a_branch_for_old_jax_is_left_as_it_is(source, level, bound):
    result = migrate_source(source)
    assert result.code == source
    (kept,) = [d for d in result.diagnostics if d.code == "HCB014"]
    assert kept.level is level and f"JAX {bound}" in kept.message, kept.message
    guard = [n for n, line in enumerate(source.splitlines(), 1) if line.startswith("if ")]
    assert [kept.line] == guard
    assert [d.code for d in result.diagnostics] == ["HCB014"]


def test_a_branch_the_projects_floor_excludes_is_reported_dead():
    source = KEPT["a string below 0.4.26"][0]
    result = migrate_source(source, Options(target_jax=(0, 4, 30)))
    assert result.code == source
    (dead,) = [d for d in result.diagnostics if d.code == "HCB014"]
    assert dead.level is Level.MANUAL
    assert "the project's floor (0.4.30) excludes" in dead.message
    at_bound = migrate_source(source, Options(target_jax=(0, 4, 25)))
    assert [d.level for d in at_bound.diagnostics if d.code == "HCB014"] == [Level.NOTE]


LOOK_ALIKES = {
    "numpy's version": _guarded(
        'if np.__version__ < "2":', header="import jax\nimport numpy as np\n"
    ),
    "a branch for new JAX": _guarded('if jax.__version__ >= "0.4.26":'),
    "python's version": _guarded(
        "if sys.version_info < (3, 9):", header="import jax\nimport sys\n"
    ),
    "a comparison of numbers": _guarded("if x < 5:"),
}


@pytest.mark.parametrize("source", LOOK_ALIKES.values(), ids=LOOK_ALIKES)
def test_look_alike_tests_keep_no_branch(source):
    result = migrate_source(source)
    assert "HCB014" not in {d.code for d in result.diagnostics}
    assert TAP not in result.code  # (rewritten as any other tap)


def test_the_rest_of_the_module_is_migrated():
    """A tap outside the branch is rewritten; the branch keeps its own import; nothing is
    added at the top for the branch."""
    source = _guarded('if jax.__version__ < "0.4.26":') + (
        "\n\nfrom jax.experimental import host_callback as hcb2\n\n\n"
        "def other(x):\n    hcb2.id_tap(lambda v, _: print(v), x)\n"
    )
    code = migrate_source(source).code
    branch = source[source.index("if jax") : source.index("else:")]
    assert branch in code
    assert "hcb2" not in code and "def other(x):\n    jax.debug.callback(" in code
    assert migrate_source(code).code == code  # (idempotent)


def test_branch_spans():
    source = _guarded('if jax.__version__ < "0.4.26":')
    (branch,) = legacy_branches(source)
    assert (branch.test_line, branch.first_line, branch.last_line) == (3, 4, 7)
    assert branch.bound == (0, 4, 26) and not branch.inclusive


def test_code_behind_an_import_guard_is_still_rewritten():
    """`if hcb is not None:` holds on jax 0.4.35 to 0.7 too, which import the stub module
    (docs/compat.md): the code it guards runs there, and only a rewrite makes
    it work (fixtures/fidelity/c11_guarded_import on jax 0.6.2)."""
    source = """\
try:
    from jax.experimental import host_callback as hcb
except ImportError:
    hcb = None


def log(x):
    if hcb is not None:
        hcb.id_tap(lambda v, _: print(v), x)
    return x
"""
    result = migrate_source(source)
    assert "hcb.id_tap" not in result.code and "HCB014" not in {d.code for d in result.diagnostics}
    assert "HCB004" in {d.code for d in result.diagnostics}


def test_a_removed_api_in_a_branch_for_old_jax_is_left_as_it_is(legacy_python, tmp_path):
    """(BrainPy) `else: jnp.trapz` under `if jax.__version_info__ >= (0, 4, 26):` runs on JAX
    that still has trapz: the JAX1xx rules leave it (rewritten, the old branch broke), and the
    same name outside the branch is still rewritten. The program prints the same on jax 0.4.30
    and on current JAX."""
    from hcmigrate.api import migrate_source

    src = (
        "import jax\nimport jax.numpy as jnp\n\n"
        "if jax.__version_info__ >= (0, 4, 26):\n    integrate = jnp.trapezoid\n"
        "else:\n    integrate = jnp.trapz\n\n"
        "print(float(integrate(jnp.arange(4.0))), jax.tree_map(abs, [-1]))\n"
    )
    code = migrate_source(src).code
    assert "else:\n    integrate = jnp.trapz\n" in code
    assert "jax.tree_util.tree_map(abs, [-1])" in code  # (no floor stated)
    (tmp_path / "old.py").write_text(src)
    (tmp_path / "new.py").write_text(code)
    legacy = subprocess.run(
        [str(legacy_python), "old.py"], cwd=tmp_path, capture_output=True, text=True
    )
    current = subprocess.run(
        [sys.executable, "new.py"], cwd=tmp_path, capture_output=True, text=True
    )
    assert legacy.returncode == 0 and current.returncode == 0, legacy.stderr + current.stderr
    assert legacy.stdout == current.stdout == "4.5 [1]\n"


@pytest.mark.parametrize("bound, dead", [("0.3.17", True), ("0.3.18", False)])
def test_the_floor_a_branch_is_judged_on_is_the_one_the_run_ends_with(tmp_path, bound, dead):
    """A project at `jax>=0.3.16,<0.5` (netket@fae7c32): the run writes its code for 0.4.26
    but raises the floor only to what the written code needs (jax.debug.callback, 0.3.17).
    A branch kept for JAX < 0.3.17 never runs on that floor, and HCB014 says so with it (not
    with 0.4.26); a branch for JAX < 0.3.18 still runs there, and is only left as it is."""
    from cli_helpers import run

    (tmp_path / "p").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "p"\ndependencies = ["jax>=0.3.16,<0.5"]\n'
    )
    (tmp_path / "p/__init__.py").write_text("")
    (tmp_path / "p/guard.py").write_text(_guarded(f'if jax.__version__ < "{bound}":'))
    (tmp_path / "p/tap.py").write_text(
        "from jax.experimental import host_callback as hcb\n\n\n"
        f"def step(x):\n    {TAP}\n    return x\n"
    )
    res = run(["--no-cache", "."], tmp_path)
    assert "jax>=0.3.17,<0.5" in (tmp_path / "pyproject.toml").read_text(), res.output
    lines = [line for line in res.output.splitlines() if "HCB014" in line]
    kept = (
        f"p/guard.py:3:1: HCB014 [note] left as it is: this branch runs only on JAX < {bound}, "
        "which has host_callback"
    )
    never = (
        f"p/guard.py:3:1: HCB014 [manual] this branch runs only on JAX < {bound}, which the "
        "project's floor this run raises (0.3.17) excludes: its host_callback code never runs; "
        "remove the branch"
    )
    assert lines == ([kept, never] if dead else [kept]), res.output
    again = run(["--no-cache", "."], tmp_path)  # (on the raised floor, the module says it)
    assert [line for line in again.output.splitlines() if "HCB014" in line] == (
        [never.replace("floor this run raises", "floor")] if dead else [kept]
    ), again.output
