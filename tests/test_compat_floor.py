"""hcmigrate-compat on the oldest Python and JAX its distribution declares (issue 27).

The wheel (built as tests/test_compat_packaging.py builds it) says ``Requires-Python: >=3.9``
and ``jax>=0.4.26``: projects that still run Python 3.9 and old JAX must be able to install
it. This installs the wheel with pip into a fresh environment of Python 3.9 (the floor) that
has jax==jaxlib==0.4.26 (the floor, numpy 1.26.4 of its era) and nothing of hcmigrate, and
runs legacy programs there: id_tap under jit/vmap, id_print, call with result_shape, compared
with what real jax 0.4.30 did (the compat scenarios' recorded traces). On that JAX,
``hcmigrate_compat.host_callback`` is JAX's own legacy module (docs/compat.md).

The JAX environment is cached under ``$HCMIGRATE_CACHE_DIR`` (``~/.cache/hcmigrate``) by
``hcmigrate.legacy_env``, built on first use with pip (only the package registries are
needed). The Python 3.9 interpreter is found on this machine (``HCMIGRATE_FLOOR_PYTHON``, then
PATH and pyenv); where there is none (pip cannot install an interpreter), the oldest Python
found is used, and the floor JAX is still tested on it. docs/compat.md "Which JAX runs what"
lists what was measured by hand on Python 3.10/3.11 and JAX 0.4.34-0.6.2.
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from hcmigrate.facts import COMPAT_PACKAGE_JAX_FLOOR
from hcmigrate.legacy_env import jax_env_python
from test_compat_packaging import (
    LEGACY_PROGRAM,
    LEGACY_PROGRAM_OUTPUT,
    _metadata,
    empty_venv,
    installed_only_env,
    pip,
    site_packages_of,
)

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "fixtures" / "compat_runtime"))
import runner  # noqa: E402

FLOOR_PYTHON = (3, 9)  # keep in step with packaging/hcmigrate-compat/pyproject.toml
# (the codemod raises a project's floor to it where it points code at the package: one value)
FLOOR_JAX = ".".join(map(str, COMPAT_PACKAGE_JAX_FLOOR))
FLOOR_NUMPY = "1.22"
# id_print (every format), call (every result_shape form); LEGACY_PROGRAM taps under jit/vmap
SCENARIOS = ("id_print_formats", "call_shapes")


def _version_of(python: str) -> tuple | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.stdout.split()
    return tuple(int(p) for p in parts) if out.returncode == 0 and len(parts) == 2 else None


def floor_python() -> tuple[Path, tuple]:
    """An interpreter of the floor Python, or the oldest one at or above it on this machine
    (the running one at worst), and its version."""
    explicit = os.environ.get("HCMIGRATE_FLOOR_PYTHON")
    if explicit:
        return Path(explicit), _version_of(explicit)
    candidates = [sys.executable]
    for minor in range(FLOOR_PYTHON[1], sys.version_info.minor):
        name = f"python3.{minor}"
        candidates += [shutil.which(name) or name, f"/usr/bin/{name}", f"/usr/local/bin/{name}"]
        candidates += sorted(
            glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}*/bin/{name}"))
        )
    found = []
    for python in dict.fromkeys(candidates):
        version = _version_of(python)
        if version is not None and version >= FLOOR_PYTHON:
            found.append((version, python))
    version, python = min(found)
    return Path(python), version


@pytest.fixture(scope="module")
def floor_env(wheel, tmp_path_factory):
    """A fresh environment of the floor Python with the floor JAX and the installed wheel."""
    base, version = floor_python()
    jax_python = jax_env_python(FLOOR_JAX, "compat-floor", base_python=base)
    python = empty_venv(
        tmp_path_factory.mktemp("floor") / "env", site_packages_of(jax_python), base=base
    )
    installed = pip("install", str(wheel), python=python).stdout
    assert "Successfully installed hcmigrate-compat-" in installed, installed
    return python, version


def test_wheel_declares_the_tested_floors(wheel):
    metadata = _metadata(wheel).splitlines()
    (requires_python,) = [
        m.split(":", 1)[1].strip() for m in metadata if m.startswith("Requires-Python:")
    ]
    assert requires_python == ">=" + ".".join(map(str, FLOOR_PYTHON))
    requires = {
        r.name: r.specifier
        for r in (
            Requirement(m.split(":", 1)[1]) for m in metadata if m.startswith("Requires-Dist:")
        )
    }
    assert requires == {
        "jax": SpecifierSet(f">={FLOOR_JAX}"),
        "numpy": SpecifierSet(f">={FLOOR_NUMPY}"),
    }


def test_legacy_program_runs_on_the_floor_python_and_jax(floor_env, tmp_path):
    """JAX 0.4.26-0.4.33 warned at each use of host_callback, at the line of the program;
    there compat is JAX's own module and silences nothing."""
    python, version = floor_env
    assert version == FLOOR_PYTHON or not any(
        _version_of(f"python3.{m}") for m in range(FLOOR_PYTHON[1], version[1])
    ), f"tested on Python {version} though an older one is on PATH"
    env = dict(installed_only_env(), PYTHONWARNINGS="default")
    program = LEGACY_PROGRAM + "print(jax.__version__, hcmigrate_compat.uses_jax_legacy())\n"
    run = subprocess.run(
        [str(python), "-c", program], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == [*LEGACY_PROGRAM_OUTPUT, f"{FLOOR_JAX} True"]
    assert "DeprecationWarning: The host_callback APIs are deprecated" in run.stderr


# chex's dependency chain of value assertions binds `hcb.id_tap_dep_p`, which JAX's own module
# lost in 0.4.16: a library migrated onto hcmigrate_compat must find it on every JAX the
# wheel installs on, JAX's own module (0.4.26-0.4.33) included. Identity on its first operand
# under jit, grad and vmap (tests/test_compat_unit.py asserts the same of the compat runtime).
ID_TAP_DEP_PROGRAM = """
import jax, jax.numpy as jnp
from hcmigrate_compat import host_callback as hcb
dep = hcb.id_tap_dep_p.bind
print(float(jax.jit(dep)(jnp.float32(3), jnp.float32(4))))
print(float(jax.grad(lambda x: dep(x * 2, x))(1.0)))
print(jax.vmap(dep, in_axes=(None, 0))(jnp.float32(5), jnp.arange(2.0)).tolist())
"""


def test_id_tap_dep_p_is_there_on_the_floor_jax(floor_env, tmp_path):
    python, _ = floor_env
    run = subprocess.run(
        [str(python), "-c", ID_TAP_DEP_PROGRAM],
        capture_output=True,
        text=True,
        env=installed_only_env(),
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines() == ["3.0", "2.0", "[5.0, 5.0]"]


def test_legacy_scenarios_match_jax_0_4_30_on_the_floor(floor_env):
    python, _ = floor_env
    mismatched = []
    for name in SCENARIOS:  # unmodified legacy programs, through `python -m hcmigrate_compat`
        got = runner.run_scenario(str(python), name, use_compat=True, installed=True)
        if got["returncode"] != 0 or runner.comparable(got) != runner.expected_trace(name, 1):
            mismatched.append(f"{name} rc={got['returncode']}\n{got['stderr_tail'][-1500:]}")
    assert not mismatched, "\n\n".join(mismatched)


COMPAT_SOURCES = sorted(
    [*(REPO / "hcmigrate_compat").glob("*.py"), *(REPO / "compat").glob("*.py")]
)


@pytest.mark.parametrize("path", COMPAT_SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_compat_source_is_python_3_9(path):
    """The runtime's files run on Python 3.10 (JAX 0.4.35-0.6.2 there) and the package's on
    3.9: their syntax is 3.9's, annotations are never evaluated, and nothing newer is
    called (``zip(strict=)``, ``X | Y`` outside annotations)."""
    tree = ast.parse(path.read_text(), feature_version=FLOOR_PYTHON)
    future = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    assert any(a.name == "annotations" for n in future for a in n.names) or not any(
        isinstance(n, (ast.AnnAssign, ast.FunctionDef)) for n in ast.walk(tree)
    )
    annotations = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            annotations |= {id(a.annotation) for a in args if a.annotation is not None}
            if node.returns is not None:
                annotations.add(id(node.returns))
        elif isinstance(node, ast.AnnAssign):
            annotations.add(id(node.annotation))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "zip":
            if any(k.arg == "strict" for k in node.keywords):
                problems.append(f"{node.lineno}: zip(strict=)")
    inside = set()
    for node in ast.walk(tree):
        if id(node) in annotations:
            inside |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.BitOr)
            and id(node) not in inside
        ):
            if any(
                isinstance(s, (ast.Name, ast.Attribute, ast.Constant)) and _is_type_name(s)
                for s in (node.left, node.right)
            ):
                problems.append(f"{node.lineno}: X | Y at run time")
    assert not problems, problems


def _is_type_name(node) -> bool:
    name = getattr(node, "id", None) or getattr(node, "attr", None)
    return name in {
        "None",
        "int",
        "str",
        "float",
        "bool",
        "bytes",
        "list",
        "dict",
        "tuple",
        "type",
    } or (isinstance(node, ast.Constant) and node.value is None)
