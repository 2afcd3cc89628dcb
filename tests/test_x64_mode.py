"""Result dtypes where 64-bit mode is on whenever the code runs (issue 27,
hcmigrate.project_model.x64_mode): a package whose `__init__.py` turns x64 on at import gets
its modules' `result_shape` dtypes written as the user wrote them (no
`jax.dtypes.canonicalize_dtype`), and still runs as it did on legacy JAX; a package that does
not keeps the canonicalisation, and runs in 32-bit mode."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run as run_hcmigrate
from test_project_model import _run, _write

from hcmigrate.project_model.x64_mode import PackageSwitches, may_run_as_script, x64_switch

# module text -> the line of its switch (None: 64-bit mode is not known to be on)
SWITCHES = {
    'from jax import config\nconfig.update("jax_enable_x64", True)\n': 2,
    'import jax\njax.config.update("jax_enable_x64", 1)\n': 2,
    'from jax import config as c\nc.update(name="jax_enable_x64", val=True)\n': 2,
    # the legacy spelling (jax < 0.4.25), read from a package that was not migrated yet
    'from jax.config import config\nconfig.update("jax_enable_x64", True)\ndel config\n': 2,
    # behind an install hint: the try's body runs whenever the module does
    'try:\n    import jax\nexcept ImportError:\n    raise ImportError("pip install jax")\n'
    'jax.config.update("jax_enable_x64", True)\n': 5,
    'import jax\njax.config.update("jax_enable_x64", 0)\n': None,
    'import jax\njax.config.update("jax_enable_x64", FLAG)\n': None,
    'import jax\nif FLAG:\n    jax.config.update("jax_enable_x64", True)\n': None,
    'import jax\n\n\ndef setup():\n    jax.config.update("jax_enable_x64", True)\n': None,
    'import jax\njax.config.update("jax_enable_x64", True)\n'
    'if FLAG:\n    jax.config.update("jax_enable_x64", False)\n': None,
    # `config` is the project's own object, or not bound at all
    'from .utils import config\nconfig.update("jax_enable_x64", True)\n': None,
    'config.update("jax_enable_x64", True)\n': None,
    # jax reads the variable once, when first imported: `import jax; import pkg` runs in x32
    'import os\nos.environ["JAX_ENABLE_X64"] = "1"\nimport jax\n': None,
}


@pytest.mark.parametrize("text", SWITCHES, ids=range(len(SWITCHES)))
def test_the_switch_is_found_only_where_it_runs_whenever_the_module_runs(text):
    switch = x64_switch(ast.parse(text))
    assert (switch and switch.line) == SWITCHES[text]


def test_a_package_switch_counts_before_its_own_imports_and_for_modules_below_it(tmp_path):
    switch = 'from jax import config\n\nconfig.update("jax_enable_x64", True)\n'
    _write(
        tmp_path,
        {
            "outer/__init__.py": "# x64 for the whole package\n" + switch,
            "outer/inner/__init__.py": "",
            "outer/inner/mod.py": "",
            "late/__init__.py": "from . import mod\n" + switch,
            "late/mod.py": "",
            "absolute/__init__.py": "import absolute.mod\n" + switch,
            "absolute/mod.py": "",
            "loose.py": switch,
        },
    )
    switches = PackageSwitches()
    where = "line 4 of outer/__init__.py"
    assert switches.enabled_by(tmp_path / "outer/inner/mod.py") == where
    assert switches.enabled_by(tmp_path / "outer/inner/__init__.py") == where
    # (a package's own __init__ is the module itself: its switch is read from its own code)
    assert switches.enabled_by(tmp_path / "outer/__init__.py") is None
    # a module of the package imported above the switch runs before it
    assert switches.enabled_by(tmp_path / "late/mod.py") is None
    assert switches.enabled_by(tmp_path / "absolute/mod.py") is None
    assert switches.enabled_by(tmp_path / "loose.py") is None
    # each folder is read once a run: the answer stays what the first read found
    (tmp_path / "outer/__init__.py").write_text("")
    assert switches.enabled_by(tmp_path / "outer/inner/mod.py") == where
    assert PackageSwitches().enabled_by(tmp_path / "outer/inner/mod.py") is None


@pytest.mark.parametrize(
    ("program", "x64"),
    [
        ('import os\nos.environ["JAX_ENABLE_X64"] = "1"\nimport jax\n', True),
        ('import jax\nimport os\nos.environ["JAX_ENABLE_X64"] = "1"\nimport jax\n', False),
    ],
    ids=["before jax", "after jax"],
)
def test_jax_reads_the_environment_variable_only_when_first_imported(program, x64):
    """Why `os.environ["JAX_ENABLE_X64"]` in a package `__init__` is no switch: a program
    that imported jax before the package runs in 32-bit mode (current JAX)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    code = program + "print(jax.config.jax_enable_x64)"
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.stdout == f"{x64}\n", run.stderr[-2000:]


def test_a_module_with_a_main_block_may_run_as_a_script():
    assert may_run_as_script(ast.parse('if __name__ == "__main__":\n    main()\n'))
    assert not may_run_as_script(ast.parse("def main():\n    pass\n"))


OPS = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import host_callback as hcb


def _halves(x):
    return np.asarray(x) / 2


@jax.jit
def halves(x):
    return hcb.call(_halves, x, result_shape=jax.ShapeDtypeStruct(x.shape, jnp.float64))
"""
X64_INIT = """\
# 64-bit mode for the whole package, before any of its modules is imported.
from jax import config

config.update("jax_enable_x64", True)
del config
"""
SCRIPT_MAIN = """

if __name__ == "__main__":
    print("script", halves(jnp.arange(4.0)).dtype)
"""
# `narrow` runs before anything turns 64-bit mode on; importing `wide` turns it on.
MAIN = """\
import jax.numpy as jnp

import narrow.ops

result = narrow.ops.halves(jnp.arange(4.0))
print("narrow", result.dtype, result.tolist())

import wide.ops

result = wide.ops.halves(jnp.arange(4.0))
print("wide", result.dtype, result.tolist())
"""


def test_a_package_that_turns_x64_on_keeps_its_dtypes_and_runs_as_legacy_did(
    legacy_python: Path, tmp_path: Path
):
    original, migrated = tmp_path / "original", tmp_path / "migrated"
    _write(
        original,
        {
            "main.py": MAIN,
            "wide/__init__.py": X64_INIT,
            "wide/ops.py": OPS,
            "wide/script.py": OPS + SCRIPT_MAIN,
            "narrow/__init__.py": "",
            "narrow/ops.py": OPS,
        },
    )
    shutil.copytree(original, migrated)
    legacy = _run(legacy_python, original, "main.py")
    assert legacy.splitlines() == [
        "narrow float32 [0.0, 0.5, 1.0, 1.5]",
        "wide float64 [0.0, 0.5, 1.0, 1.5]",
    ]

    result = run_hcmigrate(["."], migrated)
    assert result.exit_code == 0, result.output
    wide = (migrated / "wide/ops.py").read_text()
    assert "jax.ShapeDtypeStruct(x.shape, jnp.float64)," in wide
    assert "canonicalize_dtype" not in wide
    assert "64-bit mode is turned on at line 4 of wide/__init__.py" in result.output
    # without the package's switch, or run as a script (no package __init__ runs first), the
    # dtype is canonicalised at run time, as legacy did
    for kept in ("narrow/ops.py", "wide/script.py"):
        assert "jax.dtypes.canonicalize_dtype(jnp.float64)" in (migrated / kept).read_text()

    assert _run(sys.executable, migrated, "main.py") == legacy
    script = _run(sys.executable, migrated, "wide/script.py")
    assert script == _run(legacy_python, original, "wide/script.py") == "script float32\n"
    # a second run changes nothing
    files = {p: p.read_bytes() for p in migrated.rglob("*.py")}
    assert run_hcmigrate(["."], migrated).exit_code == 0
    assert {p: p.read_bytes() for p in migrated.rglob("*.py")} == files
